"""Interactive figures from core ipywidgets and matplotlib.

They work wherever ipywidgets does, Colab's 7.7 included: controls drive a function that
draws a matplotlib figure into an ``Output`` (with :func:`show_figure`, never ``with output:
display(...)``: see there). Each widget's computation is a pure function (``top_next_words``,
``context_from_text``) that tests call without a front end.
"""

from __future__ import annotations

import heapq
import sys
import textwrap
from typing import Callable, Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from seqlab.i18n import N_, _, figure_text

__all__ = ["NOTEBOOK_COLUMN_PX", "FIGURE_WIDTH", "SLIDER_WIDTH", "SLIDER_NAMES_JS", "Explorer", "show_figure", "show_error",
           "text_view", "show_text", "figure_widget",
           "control_row", "wrap_caption", "top_next_words", "context_from_text", "next_word_explorer"]

ProbFn = Callable[[str, tuple], float]

# The width of JupyterLab 4's output area in a 1280 px window with the file browser open, in CSS
# pixels (tests/test_browser_widgets.py measures it there): a wider PNG is scaled down to fit, and
# its text with it. Figures are drawn at matplotlib's 100 dpi (the inline backend keeps it).
NOTEBOOK_COLUMN_PX = 840
# The widest figure that a notebook shows at its own size, in inches: the column less a margin for
# the saved PNG's padding (tests/test_figures.py checks every course figure against the column).
FIGURE_WIDTH = 8.2


def show_figure(output: widgets.Output, figure: Figure) -> None:
    """Make ``output`` show ``figure`` and nothing else, by setting the widget's ``outputs``.

    Not ``with output: display(figure)``: that has the front end capture the figure, and a
    headless client (nbclient, so ``jupyter nbconvert --execute``, papermill and the course's
    tests) imitates the front end by sending a message to the kernel on the shell channel for
    each captured output, while it waits on that same channel for the cell's reply. With
    pyzmq's asyncio sockets that reply's wake-up is sometimes lost, and the run stalls for
    the whole cell timeout after the widget's cell (for ever without a timeout; issue 14).
    Setting the state goes out on IOPub like any other widget update, and a live front end
    redraws the figure in place, as before.

    The PNG goes out as an ``<img>`` with alt text as well (seqlab.a11y): the widget's own table,
    beneath, carries the numbers, so the image here has no text block of its own.
    """
    from IPython import get_ipython

    from seqlab.a11y import image_html

    shell = get_ipython()
    if shell is not None:
        data, metadata = shell.display_formatter.format(figure, exclude={"text/html"})  # the PNG display(figure) sends
        if "image/png" in data:
            data["text/html"] = image_html(figure, data["image/png"])
    else:  # plain Python (tests): nothing renders it
        data, metadata = {"text/plain": repr(figure)}, {}
    output.outputs = ({"output_type": "display_data", "data": data, "metadata": metadata},)


# ipywidgets 8 draws a slider with noUiSlider, whose handle (role="slider", the part that takes the keyboard) has no
# accessible name: the description's <label> points at no input, and ipywidgets passes noUiSlider no handle
# attributes (leongersen/noUiSlider#1019; axe's aria-input-field-name, serious). So a course widget, when a notebook
# shows it, also sends this script: it names every slider handle after its description, now and whenever the front
# end draws one again (a slider whose range changes is drawn anew). JupyterLab, Notebook 7 and Colab run it; where a
# front end runs no scripts, the handles stay unnamed and the widget works as before.
SLIDER_NAMES_JS = """
(() => {
  if (window.seqlabNameSliders) { window.seqlabNameSliders(); return; }
  const nameSliders = () => {
    for (const slider of document.querySelectorAll('.widget-slider')) {
      const label = slider.querySelector(':scope > .widget-label');
      const name = label ? label.textContent.trim() : '';
      if (!name) continue;
      for (const handle of slider.querySelectorAll('[role="slider"]')) {
        if (handle.getAttribute('aria-label') !== name) handle.setAttribute('aria-label', name);
      }
    }
  };
  let queued = false;
  new MutationObserver(() => {
    if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; nameSliders(); }); }
  }).observe(document.body, {childList: true, subtree: true});
  window.seqlabNameSliders = nameSliders;
  nameSliders();
})();
"""


class Explorer(widgets.VBox):
    """A course widget: a VBox that, shown in a notebook, also names its sliders for screen readers
    (:data:`SLIDER_NAMES_JS`, a display of its own after the widget's; in grading mode too, which the course's
    browser tests run in a front end, and where the grader keeps it as an output of under 1 kB)."""

    def _ipython_display_(self, **kwargs) -> None:
        from IPython.display import Javascript, display

        display(self._repr_mimebundle_(**kwargs), raw=True)
        display(Javascript(SLIDER_NAMES_JS))


def text_view() -> widgets.HTML:
    """Where a widget's text equivalent goes: a collapsed block with the numbers of its figure (seqlab.a11y)."""
    return widgets.HTML(value="", layout=widgets.Layout(width="auto"))  # "100%" plus its margin overflowed the column by 2 px


def show_text(view: widgets.HTML, figure: Figure | None) -> None:
    """Make ``view`` say in words and tables what ``figure`` shows (nothing when there is no figure)."""
    from seqlab.a11y import equivalent_html, text_equivalent
    from seqlab.i18n import _

    view.value = "" if figure is None else equivalent_html(text_equivalent(figure),
                                                           summary=_("The figure as text (follows the controls)"))


def show_error(output: widgets.Output) -> None:
    """Make ``output`` show the exception being handled, as ``with output:`` did for an error."""
    import traceback

    from IPython import get_ipython

    kind, error, tb = sys.exc_info()
    shell = get_ipython()
    lines = (shell.InteractiveTB.structured_traceback(kind, error, tb) if shell is not None
             else traceback.format_exception(kind, error, tb))
    output.outputs = ({"output_type": "error", "ename": kind.__name__, "evalue": str(error), "traceback": lines},)


def figure_widget(draw: Callable[..., Figure], controls: Mapping[str, widgets.ValueWidget]) -> Explorer:
    """Controls on top, a figure below, and below that the figure as text (a collapsed block of sentences and
    tables, seqlab.a11y); ``draw(**values)`` makes a new figure on every change, and the text follows it.

    Sliders and text boxes report their value when released (``continuous_update=False``): while
    a slider is dragged, every value in between would be drawn, and under load the figure would
    trail behind the control.
    """
    if not controls:
        raise ValueError("figure_widget needs at least one control")
    for control in controls.values():
        if control.has_trait("continuous_update"):
            control.continuous_update = False
    output = widgets.Output()
    text = text_view()

    def redraw(_change=None) -> None:
        values = {name: control.value for name, control in controls.items()}
        try:
            figure = draw(**values)
        except Exception:  # noqa: BLE001 - shown in the widget, where the learner looks
            show_error(output)
            show_text(text, None)
            return
        show_figure(output, figure)
        show_text(text, figure)
        plt.close(figure)

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return Explorer([control_row(list(controls.values())), output, text])


# A slider this wide keeps a track of about 200 px beside its 80 px description and its read-out: a drag
# then moves the value in proportion (at ipywidgets' 300 px default the track was 130 px, and a row of
# four controls in a 850 px column squeezed it to nothing). Text boxes and drop-downs keep their input
# readable. Controls that do not fit beside each other go to the next line instead of shrinking.
SLIDER_WIDTH = "360px"
CONTROL_MIN_WIDTH = "240px"
SLIDERS = (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider, widgets.IntRangeSlider,
           widgets.FloatRangeSlider, widgets.SelectionSlider, widgets.SelectionRangeSlider)


def control_row(controls: Sequence[widgets.Widget]) -> widgets.HBox:
    """``controls`` side by side, wrapping onto further lines in a narrow notebook; no control shrinks."""
    for control in controls:
        if isinstance(control, SLIDERS) and not control.layout.width:
            control.layout.width = SLIDER_WIDTH
        control.layout.min_width = control.layout.width or CONTROL_MIN_WIDTH
        control.layout.flex = "0 0 auto"
    return widgets.HBox(list(controls), layout=widgets.Layout(flex_flow="row wrap", width="100%"))


def wrap_caption(text: str, width: float = FIGURE_WIDTH, fontsize: float = 9.0) -> str:
    """``text`` broken into lines that fit ``width`` inches at ``fontsize`` points.

    A caption longer than its figure widens the saved PNG (the inline backend crops to what is
    drawn), and the notebook then shrinks the whole figure to fit: wrapping keeps it at full size.
    An average character of DejaVu Sans is about 0.6 em wide; 0.62 leaves a margin.
    """
    characters = max(20, int(width * 72 / (0.62 * fontsize)))
    return "\n".join(textwrap.fill(line, characters) for line in text.split("\n"))


def context_from_text(text: str, n: int, vocab: Sequence[str], *, bos: str = "<s>", unk: str = "<unk>") -> tuple[str, ...]:
    """The last ``n - 1`` words of ``text`` (lower-cased, unknown words as ``unk``), padded with ``bos``."""
    if n < 1:
        raise ValueError(_("the order n must be at least 1, got {n}").format(n=n))
    known = set(vocab)
    words = [w if w in known else unk for w in text.lower().split()]
    padded = [bos] * (n - 1) + words
    return tuple(padded[len(padded) - (n - 1):]) if n > 1 else ()


def top_next_words(prob: ProbFn, context: tuple[str, ...], candidates: Sequence[str], k: int) -> list[tuple[str, float]]:
    """The ``k`` candidates with the highest ``prob(word, context)``, best first, ties by word."""
    if k < 1:
        raise ValueError(_("k must be at least 1, got {k}").format(k=k))
    if not isinstance(context, tuple):
        raise TypeError(_("context must be a tuple of tokens, got {kind}").format(kind=type(context).__name__))
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
    notes: Mapping[str, Callable[[tuple[str, ...], int], str]] | None = None,
) -> widgets.VBox:
    """Type a context, see the ``top_k`` next tokens under each model (one panel a model, one
    probability axis shared by all panels).

    ``models`` maps a model's name to ``{n: prob}``, with ``prob(word, context)`` the
    model of order ``n``; every model must offer the same orders. ``notes`` maps a model's name
    to ``note(context, n)``, a line of text shown in its panel (for example Kneser-Ney's back-off mass).
    """
    if not models:
        raise ValueError(_("next_word_explorer needs at least one model"))
    orders = sorted(next(iter(models.values())))
    for name, by_order in models.items():
        if sorted(by_order) != orders:
            raise ValueError(_("model {name!r} has orders {orders}, the first model has {first}").format(
                name=name, orders=sorted(by_order), first=orders))
    candidates = [w for w in vocab if w != bos]
    if not candidates:
        raise ValueError(_("the vocabulary has no token to predict"))

    def draw(text: str, n: int, k: int) -> Figure:
        context = context_from_text(text, n, vocab, bos=bos, unk=unk)
        # The notebook's width and, with the controls, a laptop's window: at most 6.4 inches tall (25 words at 18 px)
        size = (min(3.6 * len(models), FIGURE_WIDTH), min(0.3 * k + 1.8, 6.4))
        figure, axes = plt.subplots(1, len(models), figsize=size, squeeze=False, sharex=True)
        largest = 0.0
        for ax, (name, by_order) in zip(axes[0], models.items()):
            best = [(w, p) for w, p in top_next_words(by_order[n], context, candidates, k) if p > 0]
            if best:
                words, probs = zip(*reversed(best))
                bars = ax.barh(range(len(words)), probs)
                ax.bar_label(bars, fmt="%.2g", fontsize=8, padding=2)
                ax.set_yticks(range(len(words)), words)
                largest = max(largest, max(probs))
            else:
                ax.text(0.5, 0.5, figure_text(N_("no prediction:\ncontext never seen")), ha="center", va="center", transform=ax.transAxes)
                ax.set_yticks([])
            if notes and name in notes:
                ax.text(0.98, 0.02, notes[name](context, n), ha="right", va="bottom", fontsize=8, transform=ax.transAxes,
                        bbox={"facecolor": "white", "edgecolor": "0.8", "alpha": 0.9})
            ax.set(title=name, xlabel=figure_text(N_("P(word | context)")))
        axes[0][0].set_xlim(0, max(largest, 1e-3) * 1.3)  # one scale for all panels: the bars compare across models
        figure.suptitle(figure_text(N_("n = {n}, context = ({context})"), n=n, context=" ".join(context)))
        figure.tight_layout()
        return figure

    controls = {
        "text": widgets.Text(value=initial_context, description=_("context"), continuous_update=False),
        "n": widgets.Dropdown(options=orders, value=initial_order if initial_order in orders else orders[-1], description="n"),
        "k": widgets.IntSlider(value=top_k, min=3, max=25, description=_("top k"), continuous_update=False),
    }
    return figure_widget(draw, controls)
