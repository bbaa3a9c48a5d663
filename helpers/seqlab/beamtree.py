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

__all__ = ["Node", "BeamTree", "beam_tree", "draw_beam_tree", "beam_tree_explorer"]


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
        raise ValueError(f"beam_width must be at least 1, got {beam_width}")
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


def draw_beam_tree(tree: BeamTree, labels: Sequence[str], title: str = ""):
    """The tree left to right, one column a step: kept (blue), finished (green), pruned (grey),
    the chosen output's path in bold red. ``labels[i]`` names token ``i``."""
    import matplotlib.pyplot as plt

    steps = max(n.step for n in tree.nodes)
    rows: dict[int, float] = {}
    # leaves first, depth-first, so that each subtree occupies consecutive rows
    order: list[int] = []

    def visit(node_id: int) -> None:
        kids = sorted(tree.children(node_id), key=lambda n: -n.log_prob)
        if not kids:
            rows[node_id] = float(len(order))
            order.append(node_id)
            return
        for kid in kids:
            visit(kid.id)
        rows[node_id] = sum(rows[k.id] for k in kids) / len(kids)

    visit(0)
    on_path: set[int] = set()
    node = tree.best
    while node is not None:
        on_path.add(node)
        node = tree.nodes[node].parent
    colours = {"kept": "tab:blue", "finished": "tab:green", "pruned": "0.7", "root": "black"}
    height = max(3.0, 0.24 * len(order) + 1.0)
    figure, ax = plt.subplots(figsize=(1.25 * steps + 2.5, height))
    for n in tree.nodes:
        x, y = n.step, -rows[n.id]
        if n.parent is not None:
            p = tree.nodes[n.parent]
            bold = n.id in on_path
            ax.plot([p.step, x], [-rows[p.id], y], color="tab:red" if bold else colours[n.status],
                    lw=2.4 if bold else 0.9, zorder=1)
        label = "<s>" if n.token is None else labels[n.token]
        text = f"{label}  {n.log_prob:.2f}" if n.parent is not None else label
        if n.status == "finished":
            text += f" ({n.score:.2f})"
        ax.text(x, y, text, fontsize=7.5, va="center", ha="left", zorder=2,
                color="0.55" if n.status == "pruned" else "black",
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec=colours[n.status], lw=0.8))
    ax.set_xlim(-0.2, steps + 1.1)
    ax.set_ylim(-len(order) + 0.3, 0.7)
    ax.set_xticks(range(steps + 1))
    ax.set_xlabel("step (each box: token and log P of the prefix; finished: (normalised score))")
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(title, fontsize=10)
    figure.tight_layout()
    return figure


def beam_tree_explorer(starts: Mapping[str, Callable[[], tuple[Callable, Any]]], labels: Sequence[str],
                       max_len: int = 12, top: int = 3):
    """A drop-down of sources, sliders for the beam width and alpha; the tree redraws on every change.

    ``starts[name]()`` returns ``(step, state)`` for that source (a fresh state each time).
    """
    import ipywidgets as widgets

    from seqlab.widgets import figure_widget

    names = list(starts)
    if not names:
        raise ValueError("beam_tree_explorer needs at least one source")

    def draw(source: str, beam_width: int, alpha: float):
        step, state = starts[source]()
        with torch.no_grad():
            tree = beam_tree(step, state, beam_width, alpha, max_len=max_len, top=top)
        best = tree.nodes[tree.best] if tree.best is not None else None
        out = "".join(labels[t] for t in best.tokens) if best else "(none)"
        return draw_beam_tree(tree, labels, title=f"{source!r} -> {out!r}   (beam width {beam_width}, alpha {alpha:.2f})")

    controls = {
        "source": widgets.Dropdown(options=names, value=names[0], description="source"),
        "beam_width": widgets.IntSlider(value=2, min=1, max=5, description="beam width", continuous_update=False),
        "alpha": widgets.FloatSlider(value=0.0, min=0.0, max=1.5, step=0.25, description="alpha", continuous_update=False),
    }
    return figure_widget(draw, controls)
