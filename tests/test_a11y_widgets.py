"""Every widget and figure of the course has a text equivalent, named controls and colour-blind-safe colours (issue 47).

- Each widget shows its figure's numbers as HTML tables (``<caption>``, ``<th scope>``) beneath the figure, and
  those tables follow the controls: checked here against the widget's own pure computation after a control moves.
- Every control has a non-empty accessible name (its ``description``, which ipywidgets renders as the control's
  label) and is a core control that the keyboard operates (text boxes, drop-downs, sliders, check boxes, buttons).
- A figure displayed in a notebook's kernel reaches the front end as ``<img alt=...>`` with its text equivalent
  collapsed beneath (JupyterLab draws a bare PNG output as an ``<img>`` without ``alt``), rendered once for PNG
  and HTML alike, and not at all while grading; every chapter's learner run shows it for every figure (slow).
- Colours: the palette and the explicit colours of seqlab's figures stay apart under simulated deuteranopia and
  protanopia (Machado, Oliveira and Fernandes 2009, severity 1, on linear RGB): every two colours drawn together
  at least ``MIN_DELTA_E`` apart in CIELAB (CIE76). The matplotlib default tab10 has red and green 7.3 apart for
  a deuteranope, 4.6 for a protanope (green and orange): it fails. Every text drawn by seqlab's figures has a
  contrast ratio of at least 4.5:1 against white (WCAG 2.1, 1.4.3).
"""

from __future__ import annotations

import itertools
import re
from html.parser import HTMLParser

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_hex, to_rgb  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from course import learner_marks, learner_run, solution_notebooks  # noqa: E402
from seqlab import a11y, beamtree, gradflow, seq2seq, transformer  # noqa: E402
from seqlab.a11y import number  # noqa: E402
from seqlab.projector import embedding_projector, nearest, pca_2d  # noqa: E402
from seqlab.trellis import trellis_explorer, trellis_frame  # noqa: E402
from seqlab.widgets import next_word_explorer, top_next_words  # noqa: E402
from test_widget_legibility import RandomModel  # noqa: E402


# ---- reading the HTML a widget shows ----------------------------------------------------------------

class Tables(HTMLParser):
    """The tables of an HTML text: each a dict of caption, column headers (with their scope) and rows (cells' text)."""

    def __init__(self, text: str):
        super().__init__()
        self.tables: list[dict] = []
        self.paragraphs: list[str] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._in: str | None = None
        self.scopes: list[tuple[str, str | None]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"caption": "", "columns": [], "rows": []})
        elif tag in ("caption", "p"):
            self._in, self._cell = tag, []
        elif tag == "tr":
            self._row = []
        elif tag in ("th", "td"):
            self._cell = []
            self.scopes.append((tag, dict(attrs).get("scope")))

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("caption", "p") and self._cell is not None:
            text = "".join(self._cell)
            if tag == "caption":
                self.tables[-1]["caption"] = text
            else:
                self.paragraphs.append(text)
            self._cell, self._in = None, None
        elif tag in ("th", "td") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            table = self.tables[-1]
            if not table["columns"] and not table["rows"] and self.scopes and self.scopes[-1] == ("th", "col"):
                table["columns"] = self._row
            else:
                table["rows"].append(self._row)
            self._row = None


def text_of(box) -> widgets.HTML:
    """The widget's text equivalent: the HTML widget that holds its tables."""
    views = [w for w in all_widgets(box) if isinstance(w, widgets.HTML) and "seqlab-text-equivalent" in w.value]
    assert len(views) == 1, f"expected one text equivalent in the widget, found {len(views)}"
    return views[0]


def tables_of(box) -> Tables:
    parsed = Tables(text_of(box).value)
    assert parsed.tables, "the widget's text equivalent has no table"
    for table in parsed.tables:
        assert table["caption"].strip(), "a table without a caption"
        assert table["columns"] and all(table["columns"]), "a table without column headers"
    assert all(scope in ("col", "row") for tag, scope in parsed.scopes if tag == "th"), "a header without its scope"
    return parsed


def all_widgets(box) -> list[widgets.Widget]:
    found = [box]
    for child in getattr(box, "children", ()):
        found += all_widgets(child)
    return found


def control(box, description: str) -> widgets.ValueWidget:
    matches = [w for w in all_widgets(box) if getattr(w, "description", None) == description]
    assert len(matches) == 1, f"no single control named {description!r}"
    return matches[0]


def column(table: dict, index: int) -> list[str]:
    return [row[index] for row in table["rows"]]


def random_decoder() -> RandomModel:
    """A small bushy beam tree that ends within a few steps: 6 tokens, </s> likelier at each step."""
    return RandomModel(V=6, seed=3, eos_slope=0.6, eos_offset=-1.5)


# ---- each widget's text follows its controls ----------------------------------------------------------

def test_next_word_explorer_lists_the_bars_it_draws_and_follows_k():
    probabilities = {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1}
    models = {"m": {1: lambda w, c: probabilities[w], 2: lambda w, c: probabilities[w]}}
    box = next_word_explorer(models, list("abcd"), top_k=3)
    [table] = tables_of(box).tables
    expected = top_next_words(models["m"][2], ("<s>",), list("abcd"), 3)
    assert table["rows"] == [[w, number(p)] for w, p in expected]
    control(box, "top k").value = 4  # the slider's minimum is 3: four bars
    [table] = tables_of(box).tables
    assert [row[0] for row in table["rows"]] == ["a", "b", "c", "d"]


def test_gradient_flow_table_follows_the_length_and_the_radius():
    box = gradflow.gradient_flow_widget(length=10, scale=1.0)
    table = tables_of(box).tables[0]
    assert column(table, 0) == [str(t) for t in range(1, 11)]
    control(box, "length T").value = 12
    control(box, "radius |λ|").value = 0.8
    table = tables_of(box).tables[0]
    norms = gradflow.gradient_norms(12, 0.8, "tanh", "RNN")
    assert column(table, 0) == [str(t) for t in range(1, 13)]
    assert column(table, 1) == [number(float(v)) for v in norms], "the measured norms are not those of length 12, radius 0.8"
    assert column(table, 2) == [number(float(v)) for v in gradflow.eigenvalue_curve(12, 0.8)]


def test_cell_comparison_table_gains_the_lstm_without_forget_gate():
    box = gradflow.cell_comparison_widget(length=6)
    assert len(tables_of(box).tables[0]["columns"]) == 4  # t, RNN, GRU, LSTM
    control(box, "+ LSTM without forget gate").value = True
    table = tables_of(box).tables[0]
    assert table["columns"][-1] == "LSTM without forget gate (f = 1)"
    norms = gradflow.cell_comparison(6, 1.0, 0.0, no_forget_gate=True)[gradflow.NO_FORGET]
    assert column(table, 4) == [number(float(v)) for v in norms]


def test_trellis_table_follows_the_sentence_and_the_step():
    rng = np.random.default_rng(0)
    decoded = {}

    def decode(words):
        delta, back = rng.normal(size=(len(words), 3)), rng.integers(0, 3, size=(len(words), 3))
        decoded[" ".join(words)] = (delta, back)
        return delta, back

    box = trellis_explorer(decode, ["A", "B", "C"], initial_sentence="a b c")
    control(box, "sentence").value = "the old man the boats"
    delta, back = decoded["the old man the boats"]
    [table] = tables_of(box).tables
    assert table["columns"] == ["hidden state", "0 the", "1 old", "2 man", "3 the", "4 boats"]
    control(box, "step t").value = 2
    [table] = tables_of(box).tables
    frame = trellis_frame(delta, back, 2)
    assert table["columns"] == ["hidden state", "0 the", "1 old", "2 man"]
    assert [row[1] for row in table["rows"]] == [number(float(v)) for v in frame.scores[0]]
    assert all(row[3].startswith(number(float(frame.scores[2, j]))) for j, row in enumerate(table["rows"]))
    path = " ".join(f"{w}/{'ABC'[j]}" for w, j in zip(["the", "old", "man"], frame.best_path))
    assert any(path in p for p in tables_of(box).paragraphs), "the best path so far is not said"


def test_projector_table_lists_the_neighbours_the_slider_asks_for():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(20)]
    vectors = rng.normal(size=(20, 6))
    box = embedding_projector(words, vectors, {"PCA": pca_2d(vectors)}, word="w3", analogy="", k=3)
    [table] = tables_of(box).tables
    assert len(table["rows"]) == 3
    control(box, "neighbours").value = 7
    control(box, "word").value = "w5"
    [table] = tables_of(box).tables
    assert [(row[1], row[2]) for row in table["rows"]] == [(w, number(c)) for w, c in nearest("w5", words, vectors, 7)]
    control(box, "analogy").value = "w1 - w2 + w3"
    assert len(tables_of(box).tables) == 2, "the analogy's arrows are not listed"


def test_beam_tree_table_lists_every_hypothesis_at_each_width():
    model = random_decoder()
    labels = [str(i) for i in range(model.V)]
    box = beamtree.beam_tree_explorer({"x": lambda: (model.step, model.start())}, labels, max_len=5, beam_width=1)
    for width in (1, 3):
        control(box, "beam width").value = width
        tree = beamtree.beam_tree(model.step, model.start(), width, 0.0, max_len=5)
        [table] = tables_of(box).tables
        assert len(table["rows"]) == len(tree.nodes), f"width {width}: {len(table['rows'])} rows, {len(tree.nodes)} nodes"
        chosen = [row for row in table["rows"] if row[-1] == "yes"]
        assert len(chosen) == tree.nodes[tree.best].step + 1, "the chosen path is not marked node by node"
        statuses = sorted(row[4] for row in table["rows"])
        assert statuses == sorted({"kept": "kept", "finished": "finished", "pruned": "pruned", "root": "start"}[n.status]
                                  for n in tree.nodes)


def test_attention_explorer_tables_follow_the_head():
    weights = torch.softmax(torch.randn(1, 2, 3, 3, generator=torch.Generator().manual_seed(0)), -1)
    maps = {kind: [weights, weights] for kind in ("encoder", "decoder", "cross")}
    tokens = {kind: list("abc") for kind in maps}
    box = transformer.attention_explorer(maps, tokens, tokens)
    assert len(tables_of(box).tables) == 2  # head -1: both heads
    control(box, "head (-1 all)").value = 1
    [table] = tables_of(box).tables
    assert table["columns"] == ["query position", "a", "b", "c"]
    assert [row[1:] for row in table["rows"]] == [[number(float(v)) for v in row] for row in weights[0, 1]]


def test_positional_explorer_text_follows_the_position():
    box = transformer.positional_explorer(length=12)
    control(box, "position").value = 7
    parsed = tables_of(box)
    assert any("reference line at y = 7" in p for p in parsed.paragraphs)
    pe = transformer.sinusoidal(12, 64)
    dots = (pe @ pe[7]).numpy()
    [line] = [t for t in parsed.tables if t["columns"][0] == "offset from position 7"]
    assert column(line, 1) == [number(float(v)) for v in dots]


@pytest.mark.slow
def test_chapter_7_attention_explorer_text_follows_the_output_step():
    from seqlab.attention import alignment, attention_explorer, load_checkpoint

    model, src_vocab, tgt_vocab = load_checkpoint("numbers")
    box = attention_explorer(model, ["718"], src_vocab, tgt_vocab, join=" ")
    control(box, "output step").value = 2
    src, out, weights = alignment(model, "718", src_vocab, tgt_vocab)
    bars = [t for t in tables_of(box).tables if t["columns"][-1] == "weight"]
    assert len(bars) == 1 and [row[1] for row in bars[0]["rows"]] == [number(float(v)) for v in weights[2]]


# ---- controls: named, and operated by the keyboard -------------------------------------------------------

# Core ipywidgets that the keyboard operates: Tab reaches each, and arrows, typing, Space or Enter change it.
KEYBOARD_CONTROLS = (widgets.Text, widgets.Combobox, widgets.Dropdown, widgets.IntSlider, widgets.FloatSlider,
                     widgets.Checkbox, widgets.Button)


def course_widgets():
    """One of each of the course's widgets on small inputs (chapter 7's loads its small checkpoint)."""
    from seqlab.attention import attention_explorer, load_checkpoint

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(12)]
    vectors = rng.normal(size=(12, 5))
    model = random_decoder()
    rnn, src_vocab, tgt_vocab = load_checkpoint("numbers")
    weights = torch.full((1, 2, 3, 3), 1 / 3)
    maps = {kind: [weights, weights] for kind in ("encoder", "decoder", "cross")}
    tokens = {kind: list("abc") for kind in maps}
    return {
        "next-word explorer": next_word_explorer({"m": {1: lambda w, c: 0.25}}, list("abcd")),
        "trellis": trellis_explorer(lambda ws: (np.zeros((len(ws), 2)), np.zeros((len(ws), 2), int)), ["A", "B"],
                                    initial_sentence="a b"),
        "gradient flow": gradflow.gradient_flow_widget(length=5, forget_bias=True),
        "cell comparison": gradflow.cell_comparison_widget(length=5),
        "projector": embedding_projector(words, vectors, {"PCA": pca_2d(vectors)}, word="w0", analogy=""),
        "beam tree": beamtree.beam_tree_explorer({"x": lambda: (model.step, model.start())},
                                                 [str(i) for i in range(model.V)], max_len=4),
        "attention (chapter 7)": attention_explorer(rnn, ["7"], src_vocab, tgt_vocab, join=" "),
        "attention (chapter 8)": transformer.attention_explorer(maps, tokens, tokens),
        "positional encoding": transformer.positional_explorer(length=10),
    }


@pytest.mark.slow
def test_every_control_has_a_name_and_works_from_the_keyboard_and_every_widget_has_its_text():
    from seqlab import submit

    built = course_widgets()
    built["submit button"] = submit.button(server="http://localhost:1", token="t", notebook="x.ipynb")
    for name, box in built.items():
        controls = [w for w in all_widgets(box) if isinstance(w, (widgets.ValueWidget, widgets.Button))
                    and not isinstance(w, (widgets.HTML, widgets.Label, widgets.Output))]
        assert controls, f"{name}: no control found"
        for c in controls:
            assert isinstance(c.description, str) and c.description.strip(), f"{name}: a {type(c).__name__} without a name"
            assert not getattr(c, "description_allow_html", False), f"{name}: {c.description!r} is HTML (a screen reader may read tags)"
            assert isinstance(c, KEYBOARD_CONTROLS), f"{name}: {type(c).__name__} is not a keyboard-operable control"
            assert not c.disabled, f"{name}: {c.description!r} is disabled"
        if name != "submit button":
            tables_of(box)  # its figure as text, with captions and scoped headers
    plt.close("all")


# ---- figures in a notebook's kernel ---------------------------------------------------------------------

@pytest.fixture
def shell():
    """An IPython shell with the inline backend's PNG figures, as a notebook's kernel has them, and seqlab's hook."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.pylabtools import select_figure_formats

    shell = InteractiveShell.instance()
    select_figure_formats(shell, {"png"})
    with matplotlib.rc_context():  # install() sets the colour cycle: not for the worker's later tests
        assert a11y.install(shell)
        yield shell
    shell.display_formatter.mimebundle_formatter.pop("matplotlib.figure.Figure", None)
    InteractiveShell.clear_instance()


def test_a_displayed_figure_carries_alt_text_and_its_numbers_rendered_once(shell, monkeypatch):
    from IPython.core import pylabtools

    calls = []
    draw = pylabtools.print_figure
    monkeypatch.setattr(pylabtools, "print_figure", lambda *a, **k: calls.append(1) or draw(*a, **k))
    from IPython.core.pylabtools import select_figure_formats

    select_figure_formats(shell, {"png"})  # again, now through the counting print_figure
    figure, ax = plt.subplots()
    ax.bar(range(3), [0.5, 0.3, 0.2])
    ax.set_xticks(range(3), ["cat", "dog", "eel"])
    ax.set(title="P(word)", ylabel="probability")
    data, _ = shell.display_formatter.format(figure)
    assert "image/png" in data and "text/html" in data
    assert len(calls) == 1, f"the PNG was rendered {len(calls)} times for one display"
    img = re.search(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]+)"', data["text/html"])
    assert img and img.group(1) == data["image/png"], "the HTML shows another PNG than the output's"
    assert "P(word)" in img.group(2) and "bars" in img.group(2)
    parsed = Tables(data["text/html"])
    assert "<details" in data["text/html"] and parsed.tables[0]["rows"] == [["cat", "0.5"], ["dog", "0.3"], ["eel", "0.2"]]
    plt.close(figure)


def test_an_explorer_shown_in_a_notebook_names_its_slider_handles(shell, monkeypatch):
    """ipywidgets leaves a slider's handle (role="slider") unnamed; the explorer sends the script that names it."""
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.display import display

    from seqlab.widgets import SLIDER_NAMES_JS

    shell.display_pub = CapturingDisplayPublisher()
    box = gradflow.gradient_flow_widget(length=5)
    display(box)
    widget_view, script = shell.display_pub.outputs
    assert widget_view["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] == box.model_id
    assert script["data"]["application/javascript"].strip() == SLIDER_NAMES_JS.strip()
    assert "aria-label" in SLIDER_NAMES_JS and "'.widget-slider'" in SLIDER_NAMES_JS and '[role="slider"]' in SLIDER_NAMES_JS
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # grading mode too: the browser tests run the notebooks in it
    shell.display_pub.clear_output()
    display(box)
    assert [list(o["data"]) for o in shell.display_pub.outputs] == [list(widget_view["data"]), list(script["data"])]


def test_no_html_and_no_png_while_grading(shell):
    from IPython.core.pylabtools import select_figure_formats

    select_figure_formats(shell, set())  # what the grader's kernel does (autograder/inkernel/runner.py)
    figure, ax = plt.subplots()
    ax.plot([1, 2])
    data, _ = shell.display_formatter.format(figure)
    assert "text/html" not in data and "image/png" not in data
    plt.close(figure)


def test_the_palette_is_matplotlibs_colour_cycle_once_installed(shell):
    assert [c.upper() for c in plt.rcParams["axes.prop_cycle"].by_key()["color"]] == list(a11y.PALETTE)


def test_every_chapter_imports_seqlab_before_its_first_figure():
    """The hook is installed when seqlab is imported: a figure shown before would have no alt text."""
    drawing = re.compile(r"plt\.show\(\)|_widget\(|_explorer\(|embedding_projector\(|draw_\w+\(")
    for path in solution_notebooks():
        nb = nbformat.read(path, as_version=4)
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        first_figure = next((i for i, s in enumerate(code) if drawing.search(s)), None)
        if first_figure is None:
            continue
        first_seqlab = next((i for i, s in enumerate(code) if re.search(r"^\s*(from seqlab|import seqlab)", s, re.M)), None)
        assert first_seqlab is not None and first_seqlab <= first_figure, f"{path.name}: a figure before seqlab is imported"


def figures_of(nb) -> list[tuple[int, dict]]:
    """(cell index, output) of every figure a run notebook shows, in its cells and inside its widgets."""
    found = [(i, o) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
             for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    for model in state.values():
        if model.get("model_name") == "OutputModel":
            found += [(-1, o) for o in model.get("state", {}).get("outputs", []) if "image/png" in o.get("data", {})]
    return found


def chapter_params():
    """Each chapter's main notebook, marked to run on the worker that runs its learner run (once)."""
    return [pytest.param(p, marks=learner_marks(p.parent.name), id=p.stem) for p in solution_notebooks()
            if p.stem == p.parent.name]


@pytest.mark.parametrize("path", chapter_params())
def test_every_figure_of_the_learner_run_has_alt_text_and_a_text_equivalent(path):
    nb = learner_run(path).notebook
    assert nb is not None, f"{path.name} did not run"
    figures = figures_of(nb)
    assert figures, f"{path.name} shows no figure"
    for cell, output in figures:
        shown = output["data"].get("text/html", "")
        shown = "".join(shown) if isinstance(shown, list) else shown
        alt = re.search(r'<img src="data:image/png;base64,[^"]+" alt="([^"]*)"', shown)
        assert alt and alt.group(1).strip(), f"{path.name}, cell {cell}: a figure without alt text"
        if cell >= 0:  # a widget's figure has its text in the widget's table, beneath it
            assert "seqlab-text-equivalent" in shown, f"{path.name}, cell {cell}: a figure without its text equivalent"


# ---- colours ---------------------------------------------------------------------------------------------

# Machado, Oliveira and Fernandes (2009), "A physiologically-based model for simulation of color vision
# deficiency", severity 1.0, applied to linear RGB.
DEUTERANOPIA = np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]])
PROTANOPIA = np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]])
# CIE76 distance in CIELAB below which two colours drawn side by side read as one: about 2.3 is the smallest
# difference seen at all; 15 asks for colours told apart at a glance in thin lines and small markers.
MIN_DELTA_E = 15.0


def linear_rgb(colour) -> np.ndarray:
    c = np.asarray(to_rgb(colour))
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab(linear: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ np.clip(linear, 0, 1)
    f = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(f > 216 / 24389, np.cbrt(f), (24389 / 27 * f + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def closest_pair(colours, vision: np.ndarray | None) -> tuple[float, str, str]:
    seen = {c: lab(linear_rgb(c) if vision is None else vision @ linear_rgb(c)) for c in colours}
    return min((float(np.linalg.norm(seen[a] - seen[b])), a, b) for a, b in itertools.combinations(colours, 2))


def contrast(colour, background="white") -> float:
    def luminance(c):
        return float(np.array([0.2126, 0.7152, 0.0722]) @ linear_rgb(c))
    light, dark = sorted((luminance(colour), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


COLOUR_SETS = {
    "the colour cycle (C0-C6)": a11y.PALETTE,
    "beam tree: kept, finished, pruned, chosen path": tuple(beamtree.STATUS_COLOURS[s] for s in ("kept", "finished", "pruned"))
    + (beamtree.PATH_COLOUR,),
}


def projector_colours():
    from seqlab import projector

    return ("0.75", projector.FOCUS[0], projector.NEIGHBOUR[0]) + tuple(c for c, _ in projector.ARROWS)


@pytest.mark.parametrize("vision", [None, DEUTERANOPIA, PROTANOPIA], ids=["typical", "deuteranopia", "protanopia"])
@pytest.mark.parametrize("name", [*COLOUR_SETS, "projector: points, focus, neighbours, arrows"])
def test_colours_drawn_together_stay_apart_for_colour_blind_readers(name, vision):
    colours = COLOUR_SETS.get(name) or projector_colours()
    distance, a, b = closest_pair(colours, vision)
    assert distance >= MIN_DELTA_E, f"{name}: {a} and {b} are {distance:.1f} apart (CIE76), under {MIN_DELTA_E}"


def test_the_check_rejects_red_against_green():
    tab10 = matplotlib.colormaps["tab10"].colors[:7]
    assert closest_pair(tab10, None)[0] >= MIN_DELTA_E  # apart for typical vision...
    assert closest_pair(tab10, DEUTERANOPIA)[0] < MIN_DELTA_E and closest_pair(tab10, PROTANOPIA)[0] < MIN_DELTA_E


def seqlab_figures():
    from seqlab.projector import draw_projector
    from seqlab.trellis import draw_trellis

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(12)]
    vectors = rng.normal(size=(12, 5))
    model = random_decoder()
    tree = beamtree.beam_tree(model.step, model.start(), 3, max_len=5)
    delta, back = rng.normal(size=(4, 3)), rng.integers(0, 3, size=(4, 3))
    yield "projector", draw_projector(words, vectors, pca_2d(vectors), "w0", 4, "w1 - w2 + w3", title="t")
    yield "beam tree", beamtree.draw_beam_tree(tree, [str(i) for i in range(model.V)], title="t")
    yield "trellis", draw_trellis(trellis_frame(delta, back, 3), ["A", "B", "C"], list("abcd"))
    yield "gradient flow", gradflow.draw_gradient_flow(10)
    yield "cell comparison", gradflow.draw_cell_comparison(10, no_forget_gate=True)
    yield "positional", transformer.positional_figure(16, 3, 12)


SMALLEST_TEXT_PX = 11  # issue 47: text at least 11 px high at 1280 px (JupyterLab's column there: NOTEBOOK_COLUMN_PX)
MIN_CONTRAST = 4.5  # WCAG 2.1 AA, 1.4.3, for text under 18 pt


def texts_on_their_background(figure) -> list[tuple[Text, float, tuple]]:
    """(text, its height on screen in px, the colour behind it) for every text the figure draws. The colour behind
    is the median of the pixels in the text's box with every text hidden: a label on a white axis, a number on a
    heatmap's cell, a symbol on a coloured node alike."""
    import test_figures

    width, _ = test_figures.png_size(figure)  # draws the figure, so each text knows its box
    scale = min(1.0, test_figures.NOTEBOOK_COLUMN_PX / width)
    drawn = test_figures.drawn_texts(figure)
    renderer = figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in drawn]
    visible = [t.get_visible() for t in drawn]
    for t in drawn:
        t.set_visible(False)
    figure.canvas.draw()
    pixels = np.asarray(figure.canvas.buffer_rgba())[..., :3] / 255.0
    for t, shown in zip(drawn, visible):
        t.set_visible(shown)
    height = pixels.shape[0]
    found = []
    for t, box in zip(drawn, boxes):
        x0, x1 = int(max(box.x0, 0)), int(min(box.x1, pixels.shape[1]))
        y0, y1 = int(max(height - box.y1, 0)), int(min(height - box.y0, height))
        patch = pixels[y0:y1, x0:x1].reshape(-1, 3)
        behind = tuple(np.median(patch, axis=0)) if len(patch) else (1.0, 1.0, 1.0)
        found.append((t, t.get_fontsize() * figure.dpi / 72 * scale, behind))
    return found


def too_small_or_faint(figure) -> list[str]:
    return [f"{t.get_text()[:30]!r}: {px:.1f} px, {contrast(t.get_color(), behind):.2f}:1 on {to_hex(behind)}"
            for t, px, behind in texts_on_their_background(figure)
            if px < SMALLEST_TEXT_PX - 0.05 or contrast(t.get_color(), behind) < MIN_CONTRAST]


def every_course_figure():
    """seqlab's figures at their largest usual settings and the diagrams the notebooks draw (tests/test_figures.py),
    in the colours a notebook draws them (seqlab.a11y.install's colour cycle)."""
    import test_figures
    from cycler import cycler

    with matplotlib.rc_context({"axes.prop_cycle": cycler(color=list(a11y.PALETTE))}):
        for name, draw in test_figures.SEQLAB_FIGURES:
            yield name, draw()
        for chapter in sorted({chapter for chapter, _, _ in test_figures.NOTEBOOK_DIAGRAMS}):
            yield from ((f"{chapter}: {name}", figure) for name, figure in test_figures.notebook_diagrams(chapter))


def test_every_text_of_the_course_figures_is_11_px_with_contrast_of_4_5(capsys):
    failures = {}
    for name, figure in every_course_figure():
        bad = too_small_or_faint(figure)
        if bad:
            failures[name] = bad[:3] + ([f"... {len(bad) - 3} more"] if len(bad) > 3 else [])
        plt.close("all")
    assert not failures, f"texts under {SMALLEST_TEXT_PX} px or {MIN_CONTRAST}:1: {failures}"


def test_the_text_check_finds_small_faint_and_hidden_text():
    figure, ax = plt.subplots(figsize=(4, 3))
    ax.imshow(np.full((2, 2), 0.95), cmap="viridis", vmin=0, vmax=1)  # a bright yellow cell under the next text
    ax.text(0.5, 0.5, "white on yellow", color="w", fontsize=10)
    ax.text(1, 1, "tiny", fontsize=6)
    ax.set_title("grey", color="#999999")
    found = " ".join(too_small_or_faint(figure))
    assert "'white on yellow'" in found and "'tiny'" in found and "'grey'" in found
    plt.close(figure)


def test_seqlabs_figures_have_alt_text_and_their_numbers_as_text():
    for name, figure in seqlab_figures():
        equivalent = a11y.text_equivalent(figure)
        assert equivalent.alt.strip() and (equivalent.tables or equivalent.sentences), f"{name}: no text equivalent"
        plt.close(figure)
