"""Drawn diagrams of chapter 3: the RNN cell and the unrolled network (matplotlib, no data).

    draw_rnn_cell()          # one step: a<t-1>, x<t> -> tanh -> a<t> -> softmax -> y<t>
    draw_unrolled_rnn(4)     # the same cell at 4 steps, the state handed from step to step
    draw_sequence_shapes()   # many-to-many, many-to-one, one-to-many, encoder-decoder side by side
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from seqlab.i18n import N_, _, figure_text
from seqlab.widgets import FIGURE_WIDTH

__all__ = ["SHAPES", "draw_rnn_cell", "draw_unrolled_rnn", "draw_sequence_shapes"]

_CELL = {"boxstyle": "round,pad=0.02,rounding_size=0.08", "facecolor": "#dbe9f6", "edgecolor": "#2b6aa6", "lw": 1.5}
_ENC = {"boxstyle": "round,pad=0.02,rounding_size=0.08", "facecolor": "#e4f1dc", "edgecolor": "#3d8b37", "lw": 1.5}
_OUT = {"boxstyle": "round,pad=0.02,rounding_size=0.08", "facecolor": "#fde7d3", "edgecolor": "#c2621a", "lw": 1.5}


def _box(ax, x: float, y: float, w: float, h: float, text: str, style: dict, size: int = 11) -> None:
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, **style))
    ax.text(x, y, text, ha="center", va="center", fontsize=size)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], label: str = "", *, offset=(0.0, 0.0),
           color: str = "0.2", style: str = "-", curve: float = 0.0) -> None:
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "-|>", "lw": 1.4, "color": color, "linestyle": style,
                                                     "connectionstyle": f"arc3,rad={curve}"})
    if label:
        ax.text((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1], label,
                ha="center", va="center", fontsize=10)


def draw_rnn_cell() -> Figure:
    """One step of the RNN of §4, with the parameters on the arrows that use them."""
    figure, ax = plt.subplots(figsize=(7.0, 3.6))
    _box(ax, 0.0, 0.0, 2.6, 0.9, r"$a^{\langle t \rangle} = \tanh(W_{aa} a^{\langle t-1 \rangle} + W_{ax} x^{\langle t \rangle} + b_a)$",
         _CELL, size=10)
    _box(ax, 0.0, 1.7, 2.2, 0.7, r"$\hat y^{\langle t \rangle} = \mathrm{softmax}(W_{ya} a^{\langle t \rangle} + b_y)$", _OUT, size=10)
    ax.text(-3.0, 0.0, r"$a^{\langle t-1 \rangle}$" + "\n(H,)", ha="center", va="center", fontsize=11)
    ax.text(3.0, 0.0, r"$a^{\langle t \rangle}$" + "\n(H,)", ha="center", va="center", fontsize=11)
    ax.text(0.0, -1.75, r"$x^{\langle t \rangle}$  (V,)", ha="center", va="center", fontsize=11)
    ax.text(0.0, 2.55, r"$\hat y^{\langle t \rangle}$  (K,)", ha="center", va="center", fontsize=11)
    _arrow(ax, (-2.55, 0.0), (-1.35, 0.0), r"$W_{aa}$", offset=(0.0, 0.22))
    _arrow(ax, (0.0, -1.5), (0.0, -0.5), r"$W_{ax}$", offset=(0.35, 0.0))
    _arrow(ax, (1.35, 0.0), (2.6, 0.0), figure_text(N_("to the next step")), offset=(0.0, 0.22))
    _arrow(ax, (0.0, 0.5), (0.0, 1.3), r"$W_{ya}$", offset=(0.35, 0.0))
    _arrow(ax, (0.0, 2.1), (0.0, 2.35))
    ax.set(xlim=(-3.6, 3.6), ylim=(-2.1, 2.9), title=figure_text(N_("one step of the RNN cell (the same weights at every step)")))
    ax.axis("off")
    figure.tight_layout()
    return figure


def draw_unrolled_rnn(steps: int = 4) -> Figure:
    """The cell applied at ``steps`` time steps: one layer per step, all sharing their weights."""
    if steps < 1:
        raise ValueError(_("steps must be at least 1, got {steps}").format(steps=steps))
    figure, ax = plt.subplots(figsize=(min(FIGURE_WIDTH, 1.9 * steps + 1.8), 3.4))  # wider, a notebook shrinks it
    ax.text(-1.25, 0.0, r"$a^{\langle 0 \rangle}$", ha="center", va="center", fontsize=12)
    for t in range(1, steps + 1):
        x = 1.9 * (t - 1)
        _box(ax, x, 0.0, 1.0, 0.75, figure_text(N_("cell")), _CELL)
        _box(ax, x, 1.45, 0.8, 0.55, "softmax", _OUT, size=9)
        ax.text(x, -1.45, rf"$x^{{\langle {t} \rangle}}$", ha="center", va="center", fontsize=12)
        ax.text(x, 2.3, rf"$\hat y^{{\langle {t} \rangle}}$", ha="center", va="center", fontsize=12)
        _arrow(ax, (x, -1.2), (x, -0.4))
        _arrow(ax, (x, 0.4), (x, 1.15))
        _arrow(ax, (x, 1.75), (x, 2.05))
        start = -0.95 if t == 1 else x - 1.4
        _arrow(ax, (start, 0.0), (x - 0.52, 0.0), rf"$a^{{\langle {t - 1} \rangle}}$" if t > 1 else "", offset=(0.0, 0.25))
    ax.set(xlim=(-1.7, 1.9 * (steps - 1) + 0.9), ylim=(-1.8, 2.6),
           title=figure_text(N_("the RNN unrolled over {steps} steps: every cell shares $W_{{aa}}, W_{{ax}}, b_a$"), steps=steps))
    ax.axis("off")
    figure.tight_layout()
    return figure


# The four shapes of §6: for each, the steps that take an input, the steps that give an output, the
# steps of the encoder (green; the rest decode), and whether each output is fed back as the next input.
SHAPES = {
    N_("many-to-many"): {"steps": 3, "inputs": [0, 1, 2], "outputs": [0, 1, 2], "encoder": 0, "feedback": False,
                     "example": N_("tag each word;\npredict the next character")},
    N_("many-to-one"): {"steps": 3, "inputs": [0, 1, 2], "outputs": [2], "encoder": 0, "feedback": False,
                    "example": N_("the origin of a surname")},
    N_("one-to-many"): {"steps": 3, "inputs": [0], "outputs": [0, 1, 2], "encoder": 0, "feedback": True,
                    "example": N_("generate a name")},
    N_("encoder-decoder"): {"steps": 5, "inputs": [0, 1, 2], "outputs": [3, 4], "encoder": 3, "feedback": True,
                        "example": N_("translate; a date to ISO form")},
}


def draw_sequence_shapes() -> Figure:
    """The four shapes of sequence problems (§6), one panel each: where inputs go in (below), where
    outputs come out (above), the state passed along (right), and outputs fed back as inputs (dashed)."""
    # Two by two, on one scale: four in a row made a figure 13 inches wide, which a notebook shrank to 65%.
    figure, axes = plt.subplots(2, 2, figsize=(FIGURE_WIDTH, 6.0))
    widest = max(shape["steps"] for shape in SHAPES.values())
    for ax, (name, shape) in zip(axes.flat, SHAPES.items()):
        inputs, outputs, n_enc = shape["inputs"], shape["outputs"], shape["encoder"]
        for t in range(shape["steps"]):
            x = 1.3 * t
            _box(ax, x, 0.0, 0.8, 0.6, "", _ENC if t < n_enc else _CELL)
            if t > 0:
                _arrow(ax, (x - 0.88, 0.0), (x - 0.42, 0.0))
            if t in inputs:
                ax.text(x, -1.3, rf"$x^{{\langle {inputs.index(t) + 1} \rangle}}$" if len(inputs) > 1 else figure_text(N_("$x$\n(or nothing)")),
                        ha="center", va="center", fontsize=11)
                _arrow(ax, (x, -1.0), (x, -0.32))
            if t in outputs:
                ax.text(x, 1.3, rf"$\hat y^{{\langle {outputs.index(t) + 1} \rangle}}$" if len(outputs) > 1 else r"$\hat y$",
                        ha="center", va="center", fontsize=11)
                _arrow(ax, (x, 0.32), (x, 1.0))
                if shape["feedback"] and t + 1 < shape["steps"]:  # this output is the next step's input
                    _arrow(ax, (x + 0.2, 1.1), (x + 1.1, -0.35), color="#c2621a", style="--", curve=-0.25)
        if n_enc:
            ax.text(1.3 * (n_enc - 1) / 2, 0.62, figure_text(N_("encoder")), ha="center", va="center", fontsize=9,
                    color="#2f6e2a")  # the encoder boxes' green, darker: 4.5:1 against white for text (issue 47)
            ax.text(1.3 * (n_enc + shape["steps"] - 1) / 2, -0.62, figure_text(N_("decoder")), ha="center", va="center", fontsize=9,
                    color="#2b6aa6")
        margin = 0.8 + 1.3 * (widest - shape["steps"]) / 2  # every panel as wide as the widest, centred
        ax.set(xlim=(-margin, 1.3 * (shape["steps"] - 1) + margin), ylim=(-2.3, 1.8))
        ax.set_title(figure_text(name), fontsize=12)
        ax.text(0.5, 0.02, figure_text(shape["example"]), transform=ax.transAxes, ha="center", va="bottom", fontsize=9, color="0.3")
        ax.axis("off")
    figure.suptitle(figure_text(N_("shapes of sequence problems: the same cell, inputs and outputs in different places")),
                    fontsize=12)
    figure.text(0.5, 0.01, figure_text(N_("→ the state passed to the next step     ⇢ (dashed) an output fed back as the next input")),
                ha="center", va="bottom", fontsize=9, color="0.3")
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    return figure
