"""Drawn diagrams of chapter 3: the RNN cell and the unrolled network (matplotlib, no data).

    draw_rnn_cell()          # one step: a<t-1>, x<t> -> tanh -> a<t> -> softmax -> y<t>
    draw_unrolled_rnn(4)     # the same cell at 4 steps, the state handed from step to step
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

__all__ = ["draw_rnn_cell", "draw_unrolled_rnn"]

_CELL = {"boxstyle": "round,pad=0.02,rounding_size=0.08", "facecolor": "#dbe9f6", "edgecolor": "#2b6aa6", "lw": 1.5}
_OUT = {"boxstyle": "round,pad=0.02,rounding_size=0.08", "facecolor": "#fde7d3", "edgecolor": "#c2621a", "lw": 1.5}


def _box(ax, x: float, y: float, w: float, h: float, text: str, style: dict, size: int = 11) -> None:
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, **style))
    ax.text(x, y, text, ha="center", va="center", fontsize=size)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], label: str = "", *, offset=(0.0, 0.0)) -> None:
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "-|>", "lw": 1.4, "color": "0.2"})
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
    _arrow(ax, (1.35, 0.0), (2.6, 0.0), "to the next step", offset=(0.0, 0.22))
    _arrow(ax, (0.0, 0.5), (0.0, 1.3), r"$W_{ya}$", offset=(0.35, 0.0))
    _arrow(ax, (0.0, 2.1), (0.0, 2.35))
    ax.set(xlim=(-3.6, 3.6), ylim=(-2.1, 2.9), title="one step of the RNN cell (the same weights at every step)")
    ax.axis("off")
    figure.tight_layout()
    return figure


def draw_unrolled_rnn(steps: int = 4) -> Figure:
    """The cell applied at ``steps`` time steps: one layer per step, all sharing their weights."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    figure, ax = plt.subplots(figsize=(1.9 * steps + 1.8, 3.4))
    ax.text(-1.25, 0.0, r"$a^{\langle 0 \rangle}$", ha="center", va="center", fontsize=12)
    for t in range(1, steps + 1):
        x = 1.9 * (t - 1)
        _box(ax, x, 0.0, 1.0, 0.75, "cell", _CELL)
        _box(ax, x, 1.45, 0.8, 0.55, "softmax", _OUT, size=9)
        ax.text(x, -1.45, rf"$x^{{\langle {t} \rangle}}$", ha="center", va="center", fontsize=12)
        ax.text(x, 2.3, rf"$\hat y^{{\langle {t} \rangle}}$", ha="center", va="center", fontsize=12)
        _arrow(ax, (x, -1.2), (x, -0.4))
        _arrow(ax, (x, 0.4), (x, 1.15))
        _arrow(ax, (x, 1.75), (x, 2.05))
        start = -0.95 if t == 1 else x - 1.4
        _arrow(ax, (start, 0.0), (x - 0.52, 0.0), rf"$a^{{\langle {t - 1} \rangle}}$" if t > 1 else "", offset=(0.0, 0.25))
    ax.set(xlim=(-1.7, 1.9 * (steps - 1) + 0.9), ylim=(-1.8, 2.6),
           title=f"the RNN unrolled over {steps} steps: every cell shares " + r"$W_{aa}, W_{ax}, b_a$")
    ax.axis("off")
    figure.tight_layout()
    return figure
