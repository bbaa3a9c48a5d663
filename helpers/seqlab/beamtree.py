"""The beam-search tree explorer (chapter 6): every hypothesis beam search looked at, kept or pruned.

:func:`beam_tree` is the pure computation (tests call it): the same search as
``seqlab.seq2seq.beam_search``, recording for every step each live hypothesis's ``top`` best
expansions and whether each one was kept in the beam, pruned, or finished with ``</s>``.
:func:`draw_beam_tree` draws it; :func:`beam_tree_explorer` puts sliders for the beam width and
the length-penalty exponent alpha (and a drop-down of sources) on top.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch

from seqlab.seq2seq import BOS, EOS, select_state
from seqlab.i18n import CJK_FONTS, N_, _, figure_text, read_aloud

__all__ = ["Node", "BeamTree", "beam_tree", "column_rows", "finished_lines", "box_text", "tree_table", "draw_beam_tree",
           "reference_note", "showcase_source", "beam_tree_explorer"]

# Okabe-Ito (seqlab.a11y.PALETTE): blue, bluish green and vermillion stay apart for colour-blind readers, and the
# chosen path is bold and thick as well; WRONG_TEXT is a darker vermillion, 5.5:1 against white, for a title.
STATUS_COLOURS = {"kept": "#0072B2", "finished": "#009E73", "pruned": "0.7", "root": "black"}
PATH_COLOUR = "#D55E00"
WRONG_TEXT = "#B34700"


@dataclass
class Node:
    """One expansion: ``tokens`` is the whole prefix (without ``<s>``); ``status`` is ``"kept"``,
    ``"pruned"``, ``"finished"`` (ended with ``</s>`` inside the beam) or ``"root"``."""

    id: int
    parent: int | None
    step: int
    token: int | None
    tokens: tuple[int, ...]
    log_prob: float
    score: float
    status: str


@dataclass
class BeamTree:
    nodes: list[Node] = field(default_factory=list)
    best: int | None = None  # id of the chosen output (highest normalised score among finished)

    def children(self, node_id: int) -> list[Node]:
        return [n for n in self.nodes if n.parent == node_id]


def beam_tree(step: Callable, state: Any, beam_width: int, alpha: float = 0.0, max_len: int = 12, top: int = 3,
              bos: int = BOS, eos: int = EOS) -> BeamTree:
    """Run beam search for one source, recording each live hypothesis's ``top`` best expansions.

    Kept and finished expansions are exactly those of ``seqlab.seq2seq.beam_search``; expansions
    outside each parent's ``top`` are not recorded (there are V of them). Live hypotheses still
    open after ``max_len`` steps finish as they are.
    """
    if beam_width < 1:
        raise ValueError(_("beam_width must be at least 1, got {beam_width}").format(beam_width=beam_width))
    tree = BeamTree([Node(0, None, 0, None, (), 0.0, 0.0, "root")])
    live = [0]
    prev = torch.tensor([bos])
    for t in range(1, max_len + 1):
        log_probs, state = step(prev, state)
        log_probs = log_probs.detach().double().cpu()
        V = log_probs.shape[-1]
        base = torch.tensor([tree.nodes[i].log_prob for i in live], dtype=torch.float64)
        total = (base[:, None] + log_probs).reshape(-1)
        chosen = torch.topk(total, min(beam_width, total.numel())).indices.tolist()
        shown = set(chosen)
        for r in range(len(live)):
            shown |= set((r * V + torch.topk(log_probs[r], min(top, V)).indices).tolist())
        next_live, rows, tokens = [], [], []
        for flat in sorted(shown, key=lambda f: -float(total[f])):
            r, w = divmod(flat, V)
            parent = tree.nodes[live[r]]
            lp = float(total[flat])
            length = len(parent.tokens) + 1
            status = ("finished" if w == eos else "kept") if flat in chosen else "pruned"
            node = Node(len(tree.nodes), parent.id, t, w, parent.tokens + ((w,) if w != eos else ()), lp,
                        lp / length ** alpha, status)
            tree.nodes.append(node)
            if status == "kept":
                next_live.append(node.id)
                rows.append(r)
                tokens.append(w)
        if not next_live:
            break
        state = select_state(state, torch.tensor(rows))
        prev = torch.tensor(tokens)
        live = next_live
    else:
        for i in live:
            node = tree.nodes[i]
            node.status = "finished"
            node.score = node.log_prob / max(len(node.tokens), 1) ** alpha
    finished = [n for n in tree.nodes if n.status == "finished"]
    if finished:
        tree.best = max(finished, key=lambda n: n.score).id
    return tree


def column_rows(tree: BeamTree) -> dict[int, int]:
    """Each node's row in its step's column: the children of the parent drawn highest first, each
    parent's children best first. In this order no two edges between neighbouring columns cross, and
    the figure is as tall as the most crowded step, not as the tree's number of leaves (about 100 at
    beam width 5: far taller than a window)."""
    rows = {0: 0}
    for step in range(1, max(n.step for n in tree.nodes) + 1):
        column = [n for n in tree.nodes if n.step == step]
        column.sort(key=lambda n: (rows[n.parent], -n.log_prob))
        rows.update({n.id: row for row, n in enumerate(column)})
    return rows


def finished_lines(tree: BeamTree, labels: Sequence[str], shown: int = 5) -> list[str]:
    """The finished hypotheses, best score first, one line each (the first ``shown``; then how many more)."""
    finished = sorted((n for n in tree.nodes if n.status == "finished"), key=lambda n: -n.score)
    lines = [figure_text(N_("chosen {output}   log P {log_p:.2f}   score {score:.2f}") if n.id == tree.best else
                         N_("       {output}   log P {log_p:.2f}   score {score:.2f}"),
                         output="".join(labels[t] for t in n.tokens) or figure_text(N_("(empty)")),
                         log_p=n.log_prob, score=n.score) for n in finished[:shown]]
    if len(finished) > shown:
        lines.append(figure_text(N_("       ... and {count} more"), count=len(finished) - shown))
    return lines


def _text_width(figure, text: str, fontsize: float) -> float:
    """How wide ``text`` is drawn in bold at ``fontsize`` points, in inches."""
    probe = figure.text(0, 0, text, fontsize=fontsize, weight="bold")
    width = probe.get_window_extent(figure.canvas.get_renderer()).width / figure.dpi
    probe.remove()
    return width


def box_text(node: Node, labels: Sequence[str], eos: int = EOS) -> str:
    """What a node's box says: its token and the prefix's log P, short enough for 13 columns to fit a
    notebook. A finished node (its token is ``</s>``) shows only the log P, in a green box; below -10
    one decimal is enough (such a prefix is far out of the race)."""
    if node.token is None:
        return "<s>"
    log_p = f"{node.log_prob:.2f}" if node.log_prob > -10 else f"{node.log_prob:.1f}"
    return log_p if node.token == eos else f"{labels[node.token]} {log_p}"


def tree_table(tree: BeamTree, labels: Sequence[str], eos: int = EOS):
    """Every node of the tree as a row of a table, step by step, in the order the figure draws each column: the
    prefix, its log P and normalised score, what beam search did with it, and whether the chosen output passes
    through it. The text equivalent of :func:`draw_beam_tree` (seqlab.a11y), from the same nodes."""
    from seqlab.a11y import TextTable, number

    on_path = _path(tree)
    rows = column_rows(tree)
    status = {"kept": _("kept"), "finished": _("finished"), "pruned": _("pruned"), "root": _("start")}
    table = []
    for n in sorted(tree.nodes, key=lambda n: (n.step, rows[n.id])):
        prefix = "".join(labels[t] for t in n.tokens if t != eos) or "<s>"
        table.append([n.step, prefix + (" </s>" if n.token == eos else ""), number(n.log_prob), number(n.score),
                      status[n.status], _("yes") if n.id in on_path else ""])
    return TextTable(_("Every hypothesis of the beam search, step by step"),
                     [_("step"), _("prefix"), "log P", _("score"), _("what happened"), _("on the chosen output")], table)


def _path(tree: BeamTree) -> set[int]:
    """The ids of the nodes from the root to the chosen output."""
    on_path: set[int] = set()
    node = tree.best
    while node is not None:
        on_path.add(node)
        node = tree.nodes[node].parent
    return on_path


def draw_beam_tree(tree: BeamTree, labels: Sequence[str], title: str = "", fontsize: float = 8.0, eos: int = EOS):
    """The search left to right, one column a step: kept (blue), finished (green: ``</s>``), pruned (grey),
    the chosen output's path in bold vermillion (Okabe-Ito colours, :data:`STATUS_COLOURS`); below, the finished hypotheses ranked by their normalised score.
    ``labels[i]`` names token ``i``.

    Sized to be read in a notebook: labels of ``fontsize`` points (8 pt at 100 dpi: 11 px high), the
    figure as tall as the most crowded step (not the whole tree), and with one-character tokens no
    wider than ``FIGURE_WIDTH``, so that the notebook shows it at full size.
    """
    import matplotlib.pyplot as plt

    from seqlab.widgets import FIGURE_WIDTH

    steps = max(n.step for n in tree.nodes)
    rows = column_rows(tree)
    on_path = _path(tree)
    texts = {n.id: box_text(n, labels, eos) for n in tree.nodes}
    ranking = finished_lines(tree, labels)
    caption = [figure_text(N_("each box: a token and the log P of the prefix it ends; no token: </s> (green: finished)")),
               figure_text(N_("finished hypotheses, best (normalised) score first:"))] + ranking
    pitch = 1.6 * fontsize / 72  # inches from one row to the next
    n_rows = max(rows.values()) + 1
    height = n_rows * pitch + (len(caption) + 2) * 1.45 * fontsize / 72 + 0.6
    figure = plt.figure(figsize=(FIGURE_WIDTH, height))
    # Each column as wide as its widest box and a gap (x is in inches): with one-character tokens (the
    # dates), 13 columns fit FIGURE_WIDTH; longer tokens make the figure wider, and the notebook shows it smaller.
    widths = [max(_text_width(figure, texts[n.id], fontsize) for n in tree.nodes if n.step == step) + 0.1
              for step in range(steps + 1)]
    edges = [sum(widths[:step]) for step in range(steps + 2)]
    centres = [(left + right) / 2 for left, right in zip(edges, edges[1:])]
    figure.set_size_inches(edges[-1] / 0.98 + 0.05, height)
    # Fixed margins (in inches, turned into fractions): the caption below, the title above.
    bottom = ((len(caption) + 1) * 1.45 * fontsize / 72 + 0.15) / height
    ax = figure.add_axes((0.01, bottom, 0.98, 1 - bottom - 0.45 / height))
    colours = STATUS_COLOURS
    for n in tree.nodes:
        x, y = centres[n.step], -rows[n.id]
        if n.parent is not None:
            p = tree.nodes[n.parent]
            bold = n.id in on_path
            ax.plot([centres[p.step], x], [-rows[p.id], y], color=PATH_COLOUR if bold else colours[n.status],
                    lw=2.4 if bold else 0.9, zorder=1)
        ax.text(x, y, texts[n.id], fontsize=fontsize, va="center", ha="center", zorder=2,
                color="0.45" if n.status == "pruned" else "black", weight="bold" if n.id in on_path else "normal",
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec=colours[n.status], lw=0.8))
    ax.set_xlim(0, edges[-1])
    ax.set_ylim(-n_rows + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(title, fontsize=fontsize + 1)
    # monospace keeps the ranking's columns aligned; a Chinese font found for the figure's text draws what it lacks
    figure.text(0.01, bottom - 0.1 / height, "\n".join(caption), fontsize=fontsize, va="top", ha="left",
                family=["monospace"] + [font for font in plt.rcParams["font.family"] if font in CJK_FONTS],
                linespacing=1.3)
    from seqlab.a11y import attach

    chosen = "".join(labels[t] for t in tree.nodes[tree.best].tokens if t != eos) if tree.best is not None else None
    attach(figure, (f"{read_aloud(title).splitlines()[0]}. " if title else "")
           + _("A beam-search tree of {count} hypotheses over {steps} steps; ").format(count=len(tree.nodes), steps=steps)
           + (_("the chosen output is {chosen!r}.").format(chosen=chosen) if chosen is not None else _("no hypothesis finished.")),
           sentences=[read_aloud(line) for line in caption[1:]], tables=[tree_table(tree, labels, eos)])
    return figure


def reference_note(output: str, reference: str | None) -> str:
    """What the title says about the output: right, or wrong with the reference beside it."""
    if reference is None:
        return ""
    return figure_text(N_("  (right)")) if output == reference else \
        figure_text(N_("  WRONG: the reference is {reference!r}"), reference=reference)


def showcase_source(starts: Mapping[str, Callable[[], tuple[Callable, Any]]], labels: Sequence[str],
                    references: Mapping[str, str], beam_width: int, max_len: int = 12) -> str:
    """The first source that shows what beam search is for: greedy decoding (width 1) gets it wrong and
    ``beam_width`` gets it right; else the first whose greedy output is wrong; else the first source."""
    def output(source: str, width: int) -> str:
        step, state = starts[source]()
        with torch.no_grad():
            tree = beam_tree(step, state, width, max_len=max_len, top=1)
        return "".join(labels[t] for t in tree.nodes[tree.best].tokens) if tree.best is not None else ""

    checked = [source for source in starts if source in references]
    greedy_wrong = [source for source in checked if output(source, 1) != references[source]]
    for source in greedy_wrong:
        if output(source, beam_width) == references[source]:
            return source
    return (greedy_wrong or list(starts))[0]


def beam_tree_explorer(starts: Mapping[str, Callable[[], tuple[Callable, Any]]], labels: Sequence[str],
                       max_len: int = 12, top: int = 3, references: Mapping[str, str] | None = None,
                       beam_width: int = 2):
    """A drop-down of sources, sliders for the beam width and alpha; the tree redraws on every change.

    ``starts[name]()`` returns ``(step, state)`` for that source (a fresh state each time).
    ``references`` maps a source to its correct output: the title then says whether the chosen
    output is right, and the widget opens on a source where greedy decoding is wrong and beam search
    of width ``beam_width`` is right (see :func:`showcase_source`).
    """
    import ipywidgets as widgets

    from seqlab.widgets import figure_widget

    names = list(starts)
    if not names:
        raise ValueError(_("beam_tree_explorer needs at least one source"))
    references = dict(references or {})
    first = showcase_source(starts, labels, references, beam_width, max_len) if references else names[0]

    def draw(source: str, beam_width: int, alpha: float):
        step, state = starts[source]()
        with torch.no_grad():
            tree = beam_tree(step, state, beam_width, alpha, max_len=max_len, top=top)
        best = tree.nodes[tree.best] if tree.best is not None else None
        out = "".join(labels[t] for t in best.tokens) if best else figure_text(N_("(none)"))
        note = reference_note(out, references.get(source))
        figure = draw_beam_tree(tree, labels, title=figure_text(
            N_("{source!r} -> {output!r}{note}\n(beam width {width}, alpha {alpha})"), source=source, output=out,
            note=note, width=beam_width, alpha=f"{alpha:.2f}"))
        if source in references and out != references[source]:
            figure.axes[0].title.set_color(WRONG_TEXT)
        return figure

    controls = {
        "source": widgets.Dropdown(options=names, value=first, description=_("source")),
        "beam_width": widgets.IntSlider(value=beam_width, min=1, max=5, description=_("beam width"), continuous_update=False),
        "alpha": widgets.FloatSlider(value=0.0, min=0.0, max=1.5, step=0.25, description="alpha", continuous_update=False),
    }
    return figure_widget(draw, controls)
