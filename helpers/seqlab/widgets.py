"""Interactive figures from core ipywidgets and matplotlib.

They work wherever ipywidgets does, Colab's 7.7 included: controls drive a function that
draws a matplotlib figure into an ``Output``. Each widget's computation is a pure function
(``top_next_words``, ``context_from_text``) that tests call without a front end.
"""

from __future__ import annotations

import heapq
from typing import Callable, Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display
from matplotlib.figure import Figure

__all__ = ["figure_widget", "top_next_words", "context_from_text", "next_word_explorer"]

ProbFn = Callable[[str, tuple], float]


def figure_widget(draw: Callable[..., Figure], controls: Mapping[str, widgets.ValueWidget]) -> widgets.VBox:
    """Controls on top, a figure below; ``draw(**values)`` makes a new figure on every change."""
    if not controls:
        raise ValueError("figure_widget needs at least one control")
    output = widgets.Output()

    def redraw(_change=None) -> None:
        values = {name: control.value for name, control in controls.items()}
        with output:
            output.clear_output(wait=True)
            figure = draw(**values)
            display(figure)
            plt.close(figure)

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox(list(controls.values())), output])


def context_from_text(text: str, n: int, vocab: Sequence[str], *, bos: str = "<s>", unk: str = "<unk>") -> tuple[str, ...]:
    """The last ``n - 1`` words of ``text`` (lower-cased, unknown words as ``unk``), padded with ``bos``."""
    if n < 1:
        raise ValueError(f"the order n must be at least 1, got {n}")
    known = set(vocab)
    words = [w if w in known else unk for w in text.lower().split()]
    padded = [bos] * (n - 1) + words
    return tuple(padded[len(padded) - (n - 1):]) if n > 1 else ()


def top_next_words(prob: ProbFn, context: tuple[str, ...], candidates: Sequence[str], k: int) -> list[tuple[str, float]]:
    """The ``k`` candidates with the highest ``prob(word, context)``, best first, ties by word."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not isinstance(context, tuple):
        raise TypeError(f"context must be a tuple of tokens, got {type(context).__name__}")
    scored = ((prob(w, context), w) for w in candidates)
    best = heapq.nsmallest(k, scored, key=lambda pw: (-pw[0], pw[1]))
    return [(w, p) for p, w in best]


def next_word_explorer(
    models: Mapping[str, Mapping[int, ProbFn]],
    vocab: Sequence[str],
    *,
    initial_context: str = "",
    initial_order: int | None = None,
    top_k: int = 10,
    bos: str = "<s>",
    unk: str = "<unk>",
) -> widgets.VBox:
    """Type a context, see the ``top_k`` next tokens under each model (one panel a model).

    ``models`` maps a model's name to ``{n: prob}``, with ``prob(word, context)`` the
    model of order ``n``; every model must offer the same orders.
    """
    if not models:
        raise ValueError("next_word_explorer needs at least one model")
    orders = sorted(next(iter(models.values())))
    for name, by_order in models.items():
        if sorted(by_order) != orders:
            raise ValueError(f"model {name!r} has orders {sorted(by_order)}, the first model has {orders}")
    candidates = [w for w in vocab if w != bos]
    if not candidates:
        raise ValueError("the vocabulary has no token to predict")

    def draw(text: str, n: int, k: int) -> Figure:
        context = context_from_text(text, n, vocab, bos=bos, unk=unk)
        figure, axes = plt.subplots(1, len(models), figsize=(3.6 * len(models), 0.3 * k + 1.6), squeeze=False)
        for ax, (name, by_order) in zip(axes[0], models.items()):
            best = [(w, p) for w, p in top_next_words(by_order[n], context, candidates, k) if p > 0]
            if best:
                words, probs = zip(*reversed(best))
                bars = ax.barh(range(len(words)), probs)
                ax.bar_label(bars, fmt="%.2g", fontsize=8, padding=2)
                ax.set_yticks(range(len(words)), words)
                ax.set_xlim(0, max(probs) * 1.3)
            else:
                ax.text(0.5, 0.5, "no prediction:\ncontext never seen", ha="center", va="center", transform=ax.transAxes)
                ax.set_yticks([])
            ax.set(title=name, xlabel="P(word | context)")
        figure.suptitle(f"n = {n}, context = ({' '.join(context)})")
        figure.tight_layout()
        return figure

    controls = {
        "text": widgets.Text(value=initial_context, description="context", continuous_update=False),
        "n": widgets.Dropdown(options=orders, value=initial_order if initial_order in orders else orders[-1], description="n"),
        "k": widgets.IntSlider(value=top_k, min=3, max=25, description="top k", continuous_update=False),
    }
    return figure_widget(draw, controls)
