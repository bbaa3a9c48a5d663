"""An embedding projector (chapter 5): words as points in 2-D, neighbours and analogy arrows.

The computation is in pure functions that tests call without a front end:

- :func:`pca_2d` -- the first two principal components of a set of vectors;
- :func:`tsne_2d` -- a small, exact t-SNE in numpy (van der Maaten and Hinton, 2008), deterministic
  from a PCA start; the course ships its result for the projector's words (computed once, cached);
- :func:`nearest` -- the ``k`` nearest words by cosine similarity;
- :func:`projector_view` -- everything one picture needs: the points, the highlighted word and
  its neighbours, and the arrows of an analogy ``a - b + c``.

:func:`embedding_projector` wraps them in core ipywidgets (a text box, a drop-down, sliders) and
a matplotlib figure, so it runs in JupyterLab, Notebook 7, VS Code and Colab alike.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from seqlab.i18n import N_, _, figure_join, figure_text, read_aloud, read_aloud_as

__all__ = ["pca_2d", "tsne_2d", "nearest", "parse_analogy", "ProjectorView", "projector_view",
           "place_labels", "draw_projector", "embedding_projector"]


def pca_2d(vectors: np.ndarray) -> np.ndarray:
    """The coordinates of ``vectors`` (n, d) on their first two principal components, (n, 2).

    The sign of each component is fixed (its largest loading is positive) so that the picture
    does not flip between runs or machines.
    """
    X = np.asarray(vectors, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"pca_2d needs an (n, d) array with n >= 2, got shape {X.shape}")
    X = X - X.mean(axis=0)
    _, _, vt = np.linalg.svd(X, full_matrices=False)
    components = vt[:2]  # (2, d)
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    coords = X @ (components * signs[:, None]).T
    if coords.shape[1] < 2:  # one-dimensional data
        coords = np.hstack([coords, np.zeros((len(X), 1))])
    return coords


def _conditional_p(distances: np.ndarray, perplexity: float, tol: float = 1e-5, steps: int = 60) -> np.ndarray:
    """Row-normalised Gaussian affinities, each row's bandwidth found by bisection on the perplexity."""
    n = len(distances)
    target = np.log(perplexity)
    P = np.zeros((n, n))
    for i in range(n):
        d = np.delete(distances[i], i)
        lo, hi, beta = 0.0, np.inf, 1.0
        for _ in range(steps):
            w = np.exp(-(d - d.min()) * beta)
            total = w.sum()
            p = w / total
            entropy = -np.sum(p * np.log(np.maximum(p, 1e-300)))
            if abs(entropy - target) < tol:
                break
            if entropy > target:  # too flat: narrow the Gaussian
                lo = beta
                beta = beta * 2 if hi == np.inf else (beta + hi) / 2
            else:
                hi = beta
                beta = (beta + lo) / 2
        P[i, np.arange(n) != i] = p
    return P


def tsne_2d(vectors: np.ndarray, *, perplexity: float = 15.0, iterations: int = 750, init: str = "pca",
            seed: int = 0, learning_rate: float | None = None) -> np.ndarray:
    """Exact t-SNE of ``vectors`` (n, d) into 2-D, (n, 2); O(n^2), meant for a few hundred points.

    Gaussian affinities in the input with a per-point bandwidth for the given perplexity,
    Student-t affinities in the map, gradient descent on KL(P || Q) with momentum, per-coordinate
    gains and early exaggeration, as in the paper. Cosine geometry: the rows are normalised first.

    The map starts from the first two principal components scaled to a standard deviation of 1e-4
    (``init="pca"``, Kobak and Linderman, 2021; ``init="random"`` draws it from ``seed``); the step is
    scikit-learn's max(n / (4 x exaggeration), 50), with the floor lowered to n / 2 for fewer than 100
    points, and the second phase starts at rest (momentum and gains reset, as scikit-learn does).
    Without these, a step of 100 for 40 points and the exaggerated phase's speed carried over flung
    single points hundreds of units away: in 60 pairs of well-separated clusters, 7-9 maps (varying
    with the CPU's floating-point kernels) left a point nearest the other cluster; with them, none.
    """
    X = np.asarray(vectors, dtype=np.float64)
    n = len(X)
    if X.ndim != 2 or n < 4:
        raise ValueError(f"tsne_2d needs an (n, d) array with n >= 4, got shape {X.shape}")
    if not 1 <= perplexity < n - 1:
        raise ValueError(f"perplexity must be in [1, n - 1), got {perplexity} for n = {n}")
    if init not in ("pca", "random"):
        raise ValueError(f"init must be 'pca' or 'random', got {init!r}")
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    squared = np.maximum((X ** 2).sum(1)[:, None] + (X ** 2).sum(1)[None, :] - 2 * X @ X.T, 0.0)
    P = _conditional_p(squared, perplexity)
    P = (P + P.T) / (2 * n)
    P = np.maximum(P, 1e-12)
    early_exaggeration = 12.0
    if learning_rate is None:  # scikit-learn's n / (4 x exaggeration) with its floor of 50 lowered for small n
        learning_rate = max(n / early_exaggeration / 4, min(50.0, n / 2))
    if init == "pca":
        Y = pca_2d(X)
        Y = Y / max(float(Y[:, 0].std()), 1e-12) * 1e-4
    else:
        Y = np.random.default_rng(seed).normal(scale=1e-4, size=(n, 2))
    velocity = np.zeros_like(Y)
    gains = np.ones_like(Y)
    for it in range(iterations):
        exaggeration = early_exaggeration if it < 250 else 1.0
        momentum = 0.5 if it < 250 else 0.8
        if it == 250:  # the exaggerated forces' speed and gains would fling points apart: start the second phase at rest
            velocity, gains = np.zeros_like(Y), np.ones_like(Y)
        sq = (Y ** 2).sum(1)
        num = 1.0 / (1.0 + sq[:, None] + sq[None, :] - 2 * Y @ Y.T)  # Student-t kernel
        np.fill_diagonal(num, 0.0)
        Q = np.maximum(num / num.sum(), 1e-12)
        W = (exaggeration * P - Q) * num  # (n, n)
        grad = 4.0 * ((np.diag(W.sum(1)) - W) @ Y)
        turned = velocity * grad < 0  # the gradient now points against the way the point moves
        gains = np.where(turned, gains + 0.2, gains * 0.8).clip(0.01)
        velocity = momentum * velocity - learning_rate * gains * grad
        Y = Y + velocity
        Y = Y - Y.mean(axis=0)
    return Y


def nearest(word: str, words: Sequence[str], vectors: np.ndarray, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` words most cosine-similar to ``word`` (itself left out), best first, with their cosines."""
    if k < 1:
        raise ValueError(_("k must be at least 1, got {k}").format(k=k))
    index = {w: i for i, w in enumerate(words)}
    if word not in index:
        raise KeyError(_("{word!r} is not among the {count} words").format(word=word, count=len(words)))
    V = np.asarray(vectors, dtype=np.float64)
    unit = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)
    cos = unit @ unit[index[word]]
    cos[index[word]] = -np.inf
    best = np.argsort(-cos, kind="stable")[:k]
    return [(words[i], float(cos[i])) for i in best]


def parse_analogy(text: str) -> tuple[str, str, str] | None:
    """``"king - man + woman"`` -> ``("king", "man", "woman")``; None for an empty or unfinished text."""
    parts = text.lower().replace("+", " + ").replace("-", " - ").split()
    if len(parts) != 5 or parts[1] != "-" or parts[3] != "+":
        return None
    return parts[0], parts[2], parts[4]


class ProjectorView(NamedTuple):
    """What one picture of the projector shows."""

    coords: np.ndarray  # (n, 2) the points
    focus: int | None  # the index of the highlighted word, if any
    neighbours: list[int]  # indices of its nearest words
    arrows: list[tuple[int, int]]  # (from, to) pairs of indices: b -> a and c -> answer
    answer: str | None  # the analogy's answer (best word that is not a, b or c)
    message: str  # a line for the learner (unknown word, the analogy's result)


def projector_view(words: Sequence[str], vectors: np.ndarray, coords: np.ndarray, word: str = "", k: int = 5,
                   analogy: str = "") -> ProjectorView:
    """Points, the highlighted ``word`` with its ``k`` nearest neighbours (in the full vectors, not in
    2-D), and the arrows of ``analogy`` (``"a - b + c"``): b -> a and c -> the answer, which should
    be parallel when the analogy holds."""
    index = {w: i for i, w in enumerate(words)}
    messages = []
    focus, neighbours = None, []
    word = word.strip().lower()
    if word:
        if word in index:
            focus = index[word]
            found = nearest(word, words, vectors, k)
            neighbours = [index[w] for w, _ in found]
            messages.append(figure_text(N_("nearest to {word!r}: {found}"), word=word,
                                        found=", ".join(f"{w} ({c:.2f})" for w, c in found)))
        else:
            messages.append(figure_text(N_("{word!r} is not among the {count} words shown"), word=word, count=len(words)))
    arrows, answer = [], None
    if analogy.strip():
        parsed = parse_analogy(analogy)
        if parsed is None:
            messages.append(figure_text(N_("write an analogy as: a - b + c")))
        elif any(w not in index for w in parsed):
            messages.append(figure_text(N_("not shown: {words}"), words=", ".join(w for w in parsed if w not in index)))
        else:
            a, b, c = (index[w] for w in parsed)
            V = np.asarray(vectors, dtype=np.float64)
            unit = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)
            target = unit[a] - unit[b] + unit[c]
            scores = unit @ target
            scores[[a, b, c]] = -np.inf
            best = int(np.argmax(scores))
            answer = words[best]
            arrows = [(b, a), (c, best)]
            messages.append(f"{parsed[0]} - {parsed[1]} + {parsed[2]} = {answer}")
    return ProjectorView(np.asarray(coords, dtype=float), focus, neighbours, arrows, answer, figure_join(messages))


# Where a label may go around its point, in points (x, y): beside it first, then farther out.
_LABEL_OFFSETS = [(dx * r, dy * r) for r in (5, 14, 26, 40, 58)
                  for dx, dy in ((1, 0.3), (1, -1), (-1, 0.3), (-1, -1), (0, 1), (0, -1.4), (1, 1), (-1, 1))]


def _overlaps(box, boxes, pad: float = 1.0) -> bool:
    """Whether the display-space box (x0, y0, x1, y1) comes within ``pad`` pixels of any of ``boxes``."""
    x0, y0, x1, y1 = box
    return any(x0 < b[2] + pad and b[0] < x1 + pad and y0 < b[3] + pad and b[1] < y1 + pad for b in boxes)


def place_labels(ax, labels: Sequence[tuple[int, str, dict]], xy: np.ndarray) -> None:
    """Write each ``(index, text, style)`` beside its point ``xy[index]``, in the given order (most important
    first), each where it overlaps neither an earlier label nor a highlighted point, nor leaves the axes.

    A greedy search over a few offsets, far enough for the 20 labels the projector shows at most; a
    label moved away from its point gets a thin line back to it. The axes' limits and position must be
    final: the search works in pixels.
    """
    figure = ax.figure
    renderer = figure.canvas.get_renderer()
    to_pixels = figure.dpi / 72
    inside = ax.get_window_extent(renderer)
    points = ax.transData.transform(xy[[i for i, _, _ in labels]])
    taken = [(x - 4, y - 4, x + 4, y + 4) for x, y in points]  # the highlighted markers
    for (index, text, style), (px, py) in zip(labels, points):
        probe = ax.text(0, 0, text, **style)
        extent = probe.get_window_extent(renderer)
        width, height = extent.width, extent.height
        probe.remove()
        for dx, dy in _LABEL_OFFSETS:
            x = px + dx * to_pixels + (0 if dx > 0 else -width if dx < 0 else -width / 2)
            y = py + dy * to_pixels + (0 if dy > 0 else -height if dy < 0 else -height / 2)
            box = (x, y, x + width, y + height)
            fits = inside.x0 <= x and x + width <= inside.x1 and inside.y0 <= y and y + height <= inside.y1
            if fits and not _overlaps(box, taken):
                break
        taken.append(box)
        far = abs(dx) + abs(dy) > 12
        ax.annotate(text, xy[index], xytext=(x - px + (width if dx < 0 else width / 2 if dx == 0 else 0),
                                              y - py + (height if dy < 0 else height / 2 if dy == 0 else 0)),
                    textcoords="offset pixels", ha="left" if dx > 0 else "right" if dx < 0 else "center",
                    va="bottom" if dy > 0 else "top" if dy < 0 else "center", zorder=6,
                    arrowprops=dict(arrowstyle="-", color="0.6", lw=0.6, shrinkA=0, shrinkB=3) if far else None,
                    **style)


# (drawn colour, text colour) from the Okabe-Ito palette (seqlab.a11y.PALETTE): apart for colour-blind readers; each
# label in a darker shade of its colour, at least 4.5:1 against white.
FOCUS = ("#D55E00", "#B34700")  # vermillion
NEIGHBOUR = ("#E69F00", "#8F5B00")  # orange
ARROWS = (("#0072B2", "#0072B2"), ("#009E73", "#00785A"))  # blue, bluish green


def draw_projector(words: Sequence[str], vectors: np.ndarray, coords: np.ndarray, word: str = "", k: int = 5,
                   analogy: str = "", title: str = ""):
    """The projector's figure: every word a grey point; the focus word vermillion with its neighbours orange,
    the analogy's words with arrows in blue and bluish green (:data:`FOCUS`, :data:`NEIGHBOUR`, :data:`ARROWS`).
    Only these are named, each label where it overlaps no other (the rest would cover each other); the caption
    wraps below the picture. Its text equivalent (seqlab.a11y) lists the neighbours and the arrows."""
    import matplotlib.pyplot as plt

    from seqlab.a11y import attach
    from seqlab.widgets import FIGURE_WIDTH, wrap_caption

    view = projector_view(words, vectors, coords, word, k, analogy)
    xy = view.coords
    caption = read_aloud_as(wrap_caption(view.message, FIGURE_WIDTH - 0.4, fontsize=9), view.message)
    lines = caption.count("\n") + 1 if caption else 0
    figure, ax = plt.subplots(figsize=(FIGURE_WIDTH, 6.0 + 0.17 * lines))
    # A fixed layout, not tight_layout: the labels are placed in pixels, and must not move afterwards.
    figure.subplots_adjust(left=0.02, right=0.98, top=1 - 0.4 / figure.get_figheight(),
                           bottom=(0.15 + 0.17 * lines) / figure.get_figheight())
    ax.scatter(xy[:, 0], xy[:, 1], s=8, color="0.75")
    margin = 0.04 * (xy.max(axis=0) - xy.min(axis=0))
    ax.set(xlim=(xy[:, 0].min() - margin[0], xy[:, 0].max() + margin[0]),
           ylim=(xy[:, 1].min() - margin[1], xy[:, 1].max() + margin[1]), xticks=[], yticks=[])
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(caption, fontsize=9)
    labels: list[tuple[int, str, dict]] = []
    if view.focus is not None:
        ax.scatter(*xy[view.focus], s=70, color=FOCUS[0], zorder=4)
        ax.scatter(xy[view.neighbours, 0], xy[view.neighbours, 1], s=40, color=NEIGHBOUR[0], zorder=3)
        labels.append((view.focus, words[view.focus], dict(fontsize=12, weight="bold", color=FOCUS[1])))
    for (start, end), (color, text_color) in zip(view.arrows, ARROWS):
        ax.annotate("", xy=xy[end], xytext=xy[start], zorder=5, arrowprops=dict(arrowstyle="->", color=color, lw=2))
        labels += [(i, words[i], dict(fontsize=11, weight="bold", color=text_color)) for i in (start, end)]
    labels += [(i, words[i], dict(fontsize=10, color=NEIGHBOUR[1])) for i in view.neighbours]
    once = {}
    for index, text, style in labels:  # a word both neighbour and analogy word: its first (stronger) style
        once.setdefault(index, (index, text, style))
    place_labels(ax, list(once.values()), xy)
    attach(figure, (f"{read_aloud(title)}: " if title else "")
           + _("{count} words as points in 2-D").format(count=len(words))
           + (_(", {word!r} and its {count} nearest neighbours marked").format(word=words[view.focus], count=len(view.neighbours))
              if view.focus is not None else "")
           + (_(", the analogy's arrows drawn (answer {answer!r})").format(answer=view.answer) if view.arrows else "") + ".",
           sentences=[read_aloud(view.message)] if view.message else [], tables=projector_tables(words, vectors, view))
    return figure


def projector_tables(words: Sequence[str], vectors: np.ndarray, view: ProjectorView) -> list:
    """The projector's numbers as tables: the focus word's neighbours with their cosine similarity (in the full
    vectors, as the figure ranks them), and the analogy's arrows with where each end lies in the 2-D layout."""
    from seqlab.a11y import TextTable, number

    tables = []
    if view.focus is not None:
        found = nearest(words[view.focus], words, vectors, len(view.neighbours))
        tables.append(TextTable(_("Nearest neighbours of {word!r}").format(word=words[view.focus]),
                                [_("rank"), _("word"), _("cosine similarity")],
                                [[rank + 1, w, number(c)] for rank, (w, c) in enumerate(found)]))
    if view.arrows:
        tables.append(TextTable(_("The analogy's arrows in the 2-D layout"), [_("arrow"), _("from"), _("to")],
                                [[i + 1, f"{words[a]} ({number(view.coords[a, 0])}, {number(view.coords[a, 1])})",
                                  f"{words[b]} ({number(view.coords[b, 0])}, {number(view.coords[b, 1])})"]
                                 for i, (a, b) in enumerate(view.arrows)]))
    return tables


def embedding_projector(words: Sequence[str], vectors: np.ndarray, layouts: dict[str, np.ndarray], *,
                        word: str = "king", analogy: str = "king - man + woman", k: int = 5):
    """A text box for a word, a slider for its number of neighbours, a box for an analogy and a
    drop-down for the 2-D layout (``layouts`` maps a name such as ``"PCA"`` to (n, 2) coordinates)."""
    import ipywidgets as widgets

    from seqlab.widgets import figure_widget

    def draw(word, k, analogy, layout):
        return draw_projector(words, vectors, layouts[layout], word, k, analogy,
                              title=figure_text(N_("{count} words, {layout}"), count=len(words), layout=layout))

    controls = {
        "word": widgets.Text(value=word, description=_("word"), continuous_update=False),
        "k": widgets.IntSlider(value=k, min=1, max=15, description=_("neighbours"), continuous_update=False),
        "analogy": widgets.Text(value=analogy, description=_("analogy"), continuous_update=False),
        "layout": widgets.Dropdown(options=list(layouts), value=next(iter(layouts)), description=_("layout")),
    }
    return figure_widget(draw, controls)
