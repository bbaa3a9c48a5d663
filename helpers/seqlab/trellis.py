"""The Viterbi trellis explorer: states x time, the best path and the competing back-pointers.

The computation is the pure function :func:`trellis_frame` (what to draw at step ``t``);
:func:`draw_trellis` turns a frame into a matplotlib figure, and :func:`trellis_explorer`
wires a text box and a time slider to it with core ipywidgets. Decoding itself (Viterbi)
is the learner's code: the explorer receives it as a function ``decode(words)`` that
returns the Viterbi scores ``delta`` (T, N) and back-pointers ``back`` (T, N).
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from seqlab.a11y import attach
from seqlab.i18n import N_, _, figure_text
from seqlab.widgets import FIGURE_WIDTH, Explorer, control_row, show_error, show_figure, show_text, text_view

__all__ = ["TrellisFrame", "trellis_frame", "draw_trellis", "trellis_text", "trellis_explorer"]

Decoder = Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]]


class TrellisFrame(NamedTuple):
    """What the trellis shows after step ``t`` (0-based) of Viterbi."""

    t: int
    scores: np.ndarray  # (T, N) delta[s, j] - max_j delta[s, j] for s <= t (0 = best at s), NaN for s > t
    edges: np.ndarray  # (t * N, 3) rows (s, i, j): the best way into state j at time s comes from i at s-1
    best_path: np.ndarray  # (t + 1,) the best path that ends at time t, traced back through `back`
    best_state: int  # argmax_j delta[t, j]


def trellis_frame(delta: np.ndarray, back: np.ndarray, t: int) -> TrellisFrame:
    """The trellis after step ``t``: relative scores, every back-pointer so far, and the best partial path.

    ``delta[s, j]`` is the log-probability of the best path that ends in state ``j`` at time ``s``;
    ``back[s, j]`` (for ``s >= 1``) is the state at ``s - 1`` on that path.
    """
    delta = np.asarray(delta, dtype=float)
    back = np.asarray(back)
    if delta.ndim != 2 or delta.shape != back.shape:
        raise ValueError(_("delta and back must be (T, N) arrays of one shape, got {delta} and {back}").format(
            delta=delta.shape, back=back.shape))
    T, N = delta.shape
    if not 0 <= t < T:
        raise ValueError(_("t must be in [0, {last}], got {t}").format(last=T - 1, t=t))
    scores = np.full((T, N), np.nan)
    with np.errstate(invalid="ignore"):
        scores[: t + 1] = delta[: t + 1] - delta[: t + 1].max(axis=1, keepdims=True)
    edges = np.array([(s, int(back[s, j]), j) for s in range(1, t + 1) for j in range(N)], dtype=int).reshape(-1, 3)
    best_state = int(np.argmax(delta[t]))
    path = np.empty(t + 1, dtype=int)
    path[t] = best_state
    for s in range(t, 0, -1):
        path[s - 1] = back[s, path[s]]
    return TrellisFrame(t, scores, edges, path, best_state)


def draw_trellis(
    frame: TrellisFrame,
    states: Sequence[str],
    words: Sequence[str],
    *,
    floor: float = -15.0,
    title: str | None = None,
) -> Figure:
    """A states x time figure of one frame: nodes coloured by relative score, grey back-pointers,
    the best partial path in red."""
    T, N = frame.scores.shape
    if len(states) != N or len(words) != T:
        raise ValueError(_("need {N} state names and {T} words, got {states} and {words}").format(
            N=N, T=T, states=len(states), words=len(words)))
    # At most the notebook's width (a wider PNG is shrunk, its text with it): a long sentence gets narrower
    # columns, and its words stand upright so that they keep apart.
    upright = T > 8
    figure, ax = plt.subplots(figsize=(min(FIGURE_WIDTH, max(5.0, 0.85 * T + 2.2)),
                                       0.36 * N + (2.6 if upright else 1.9)))
    for s, i, j in frame.edges:
        ax.plot([s - 1, s], [i, j], color="0.75", linewidth=0.8, zorder=1)
    ax.plot(np.arange(frame.t + 1), frame.best_path, color="#D55E00", linewidth=2.5, zorder=2)  # Okabe-Ito vermillion
    shown = np.clip(frame.scores[: frame.t + 1], floor, 0.0)
    xs, ys = np.meshgrid(np.arange(frame.t + 1), np.arange(N), indexing="ij")
    dots = ax.scatter(xs.ravel(), ys.ravel(), c=shown.ravel(), cmap="viridis", vmin=floor, vmax=0.0,
                      s=70, edgecolors="k", linewidths=0.4, zorder=3)
    colorbar = figure.colorbar(dots, ax=ax, pad=0.01)
    colorbar.set_label(r"$\delta_t(j) - \max_k \delta_t(k)$ (log)")
    if upright:
        ax.set_xticks(range(T), [f"{s} {w}" for s, w in enumerate(words)], fontsize=9, rotation=90)
    else:
        ax.set_xticks(range(T), [f"{w}\n{s}" for s, w in enumerate(words)], fontsize=9)
    ax.set_yticks(range(N), states)
    ax.set_xlim(-0.5, T - 0.5)
    ax.set_ylim(N - 0.5, -0.5)
    ax.set_xlabel(figure_text(N_("time t (word)")))
    ax.set_ylabel(figure_text(N_("hidden state")))
    ax.set_title(title or figure_text(N_("Viterbi after step t = {t}: best state '{state}'; "
                                         "red = best path so far, grey = back-pointers"),
                                      t=frame.t, state=states[frame.best_state]), fontsize=10)
    figure.tight_layout()
    return attach(figure, *trellis_text(frame, states, words))


def trellis_text(frame: TrellisFrame, states: Sequence[str], words: Sequence[str]) -> tuple[str, list[str], list]:
    """The trellis of ``frame`` as text (seqlab.a11y): a sentence, the best path so far, and a table of every
    state's score relative to the best at each step so far (0 = best), with the state it came from."""
    from seqlab.a11y import TextTable, number

    path = " ".join(f"{words[s]}/{states[j]}" for s, j in enumerate(frame.best_path))
    alt = _("Viterbi trellis after step t = {t} of {count} words; the best path so far: {path}.").format(
        t=frame.t, count=len(words), path=path)
    came_from = {(s, j): i for s, i, j in frame.edges}
    rows = []
    for j, state in enumerate(states):
        cells = []
        for s in range(frame.t + 1):
            score = number(float(frame.scores[s, j]))
            cells.append(score if s == 0 else f"{score} ({_('from')} {states[came_from[(s, j)]]})")
        rows.append([state] + cells)
    table = TextTable(_("Score of each hidden state relative to the best at each step (log; 0 = best), and the state "
                        "its best path came from"), [_("hidden state")] + [f"{s} {words[s]}" for s in range(frame.t + 1)],
                      rows)
    return alt, [_("The best path so far: {path}.").format(path=path)], [table]


def trellis_explorer(
    decode: Decoder,
    states: Sequence[str],
    *,
    initial_sentence: str = "the old man the boats .",
    max_words: int = 16,
) -> Explorer:
    """Type a sentence, step through Viterbi with a slider.

    ``decode(words)`` must return ``(delta, back)``, each of shape ``(len(words), len(states))``.
    Sentences are split on spaces and cut to ``max_words`` words.
    """
    text = widgets.Text(value=initial_sentence, description=_("sentence"), continuous_update=False,
                        layout=widgets.Layout(width="420px"))  # beside the slider in an 850 px column
    step = widgets.IntSlider(value=0, min=0, max=0, description=_("step t"), continuous_update=False)
    output = widgets.Output()
    table = text_view()
    cache: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}

    def decoded(sentence: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        if sentence not in cache:
            words = sentence.split()[:max_words] or ["."]
            delta, back = decode(words)
            cache.clear()
            cache[sentence] = (words, np.asarray(delta), np.asarray(back))
        return cache[sentence]

    def redraw(_change=None) -> None:
        words, delta, back = decoded(text.value)
        try:
            figure = draw_trellis(trellis_frame(delta, back, min(step.value, len(words) - 1)), states, words)
        except Exception:  # noqa: BLE001 - shown in the widget, where the learner looks
            show_error(output)
            show_text(table, None)
            return
        show_figure(output, figure)  # not `with output: display(...)`: see seqlab.widgets.show_figure
        show_text(table, figure)
        plt.close(figure)

    def new_sentence(_change=None) -> None:
        words, _, _ = decoded(text.value)
        before = step.value
        with step.hold_trait_notifications():
            step.max = len(words) - 1
            step.value = len(words) - 1
        if step.value == before:  # the slider did not move, so it did not redraw
            redraw()

    text.observe(new_sentence, names="value")
    step.observe(redraw, names="value")
    new_sentence()
    return Explorer([control_row([text, step]), output, table])
