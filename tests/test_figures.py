"""No two text labels of a course figure overlap, and no figure is wider than the notebook column (issue 41).

A figure reaches the notebook as the PNG that the inline backend saves (``bbox_inches="tight"`` at the figure's
dpi, matplotlib's 100); JupyterLab 4 shows it in an output area of seqlab.widgets.NOTEBOOK_COLUMN_PX CSS pixels
in a 1280 px window with the file browser open (tests/test_browser_widgets.py measures that column in Chromium),
and shrinks a wider PNG to fit, its text with it. Two labels overlap when the boxes of their drawn text do
(matplotlib's Text.get_window_extent with the figure's renderer; a rotated label's box is the upright box around
it). Only the texts that are drawn count: tick labels of an axis turned off are not.

Checked here: the figures that seqlab draws, called directly on small inputs (a few seconds), and the drawn
diagrams of the chapters' notebooks (the cells that draw from nothing but matplotlib, run on their own). The
figures of a whole notebook run (data, training curves) are not checked: running the notebooks costs minutes.
"""

from __future__ import annotations

import io
import itertools
from unittest import mock

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.text import Annotation, Text  # noqa: E402
from PIL import Image  # noqa: E402

from course import SOLUTIONS  # noqa: E402
from seqlab.widgets import NOTEBOOK_COLUMN_PX  # noqa: E402


def png_size(figure) -> tuple[int, int]:
    """(width, height) in pixels of the PNG a notebook gets for ``figure`` (what the inline backend saves)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight", dpi=figure.dpi)
    return Image.open(buffer).size


def png_width(figure) -> int:
    return png_size(figure)[0]


# An explorer's figure under its controls (two lines of them, about 80 px) stays inside an 800 px window.
EXPLORER_FIGURE_HEIGHT_PX = 700


def drawn_texts(figure) -> list[Text]:
    """Every non-empty text that drawing ``figure`` draws (titles, labels, tick labels, annotations, legends)."""
    drawn: list[Text] = []
    draw = Text.draw

    def record(text, renderer):
        if text.get_visible() and text.get_text().strip():
            drawn.append(text)
        return draw(text, renderer)

    with mock.patch.object(Text, "draw", record):
        figure.canvas.draw()
    return list(dict.fromkeys(drawn))  # an annotation draws its text through Text.draw once more


def overlapping_labels(figure) -> list[tuple[str, str]]:
    """The pairs of drawn texts whose boxes overlap (an annotation's text, not its leader line)."""
    texts = drawn_texts(figure)
    renderer = figure.canvas.get_renderer()
    boxes = []
    for text in texts:
        if isinstance(text, Annotation):
            text.update_positions(renderer)
        boxes.append((text.get_text(), Text.get_window_extent(text, renderer)))
    return [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)]


def assert_fits_and_legible(figure, name: str) -> None:
    width = png_width(figure)
    assert width <= NOTEBOOK_COLUMN_PX, (
        f"{name}: {width} px wide, more than the {NOTEBOOK_COLUMN_PX} px notebook column: shown at "
        f"{NOTEBOOK_COLUMN_PX / width:.0%}, its text with it")
    clashes = overlapping_labels(figure)
    assert not clashes, f"{name}: overlapping labels {clashes[:6]}"


# ---- the figures seqlab draws ---------------------------------------------------------------------------------------

def _attention_maps(kinds=("encoder", "decoder", "cross"), heads: int = 4, size: int = 23):
    weights = torch.softmax(torch.randn(1, heads, size, size, generator=torch.Generator().manual_seed(0)), -1)
    return {kind: [weights, weights] for kind in kinds}


def _beam_tree():
    from seqlab import beamtree
    from test_widget_legibility import RandomModel

    model = RandomModel()
    with torch.no_grad():
        tree = beamtree.beam_tree(model.step, model.start(), 5, 0.5, max_len=12)
    return beamtree.draw_beam_tree(tree, list("<>/abcdefghijklmnop"[:model.V]), title="random model (beam width 5)")


def _trellis(words: int):
    from seqlab.trellis import draw_trellis, trellis_frame

    rng = np.random.default_rng(0)
    sentence = ("the old man the boats and the young woman sails them home before the storm comes ."
                .split())[:words]
    tags = ["ADJ", "ADP", "ADV", "CONJ", "DET", "NOUN", "NUM", "PRON", "PRT", "VERB", ".", "X"]
    delta = rng.normal(size=(words, len(tags))).cumsum(0) * 3 - 20
    back = rng.integers(0, len(tags), size=(words, len(tags)))
    return draw_trellis(trellis_frame(delta, back, words - 1), tags, sentence)


def _next_word_panels():
    from seqlab.widgets import next_word_explorer

    vocab = "the of and to a in that is was he for it with as his on be at by i had not are but from or have".split()

    def model(word, context):
        return (vocab.index(word) + 1) / 210

    drawn = {}
    with mock.patch("seqlab.widgets.figure_widget", lambda draw, controls: drawn.setdefault("draw", draw)):
        next_word_explorer({"MLE": {1: model, 2: model, 3: model}, "add-0.01": {1: model, 2: model, 3: model},
                            "Kneser-Ney": {1: model, 2: model, 3: model}}, vocab,
                           notes={"Kneser-Ney": lambda context, n: "back-off mass 0.42 to the shorter context"})
    return drawn["draw"]("the man in", 3, 25)  # the explorer's figure, drawn without its widget


def _projector(word: str, k: int, analogy: str, layout: str):
    from seqlab import embeddings
    from seqlab.projector import draw_projector, pca_2d

    words, tsne = embeddings.load_projector_layout()
    glove_words, glove = embeddings.load_glove()
    index = {w: i for i, w in enumerate(glove_words)}
    vectors = glove[[index[w] for w in words]]
    return draw_projector(words, vectors, pca_2d(vectors) if layout == "PCA" else tsne, word, k, analogy)


def seqlab_figures():
    """(name, a function that draws the figure), for each figure seqlab draws, at its largest usual settings."""
    from seqlab import diagrams, gradflow, train, transformer

    source, target = list("the 21st of August 1969"), ["<s>"] + list("1969-08-21")
    return [
        ("RNN cell (ch. 3)", diagrams.draw_rnn_cell),
        ("unrolled RNN (ch. 3)", lambda: diagrams.draw_unrolled_rnn(4)),
        ("sequence shapes (ch. 3)", diagrams.draw_sequence_shapes),
        ("gradient flow, RNN (ch. 3)", lambda: gradflow.draw_gradient_flow(200, 1.5, "tanh", "RNN", matrix="non-normal")),
        ("gradient flow, LSTM (ch. 3)", lambda: gradflow.draw_gradient_flow(200, 0.5, "tanh", "LSTM")),
        ("cell comparison (ch. 4)", lambda: gradflow.draw_cell_comparison(60, 1.0, 0.0)),
        ("cell comparison at the floor (ch. 4)", lambda: gradflow.draw_cell_comparison(150, 0.5, -3.0, True)),
        ("encoder attention, all heads (ch. 8)",
         lambda: transformer.attention_figure(_attention_maps(), "encoder", 1, None, source, source)),
        ("cross attention, all heads (ch. 8)",
         lambda: transformer.attention_figure(_attention_maps(), "cross", 1, None, target, source)),
        ("encoder attention, one head (ch. 8)",
         lambda: transformer.attention_figure(_attention_maps(), "encoder", 0, 2, source, source)),
        ("positional encoding (ch. 8)", lambda: transformer.positional_figure(256, 99, 100)),
        ("beam tree, width 5 (ch. 6)", _beam_tree),
        ("Viterbi trellis, 6 words (ch. 2)", lambda: _trellis(6)),
        ("Viterbi trellis, 16 words (ch. 2)", lambda: _trellis(16)),
        ("next-word explorer, 3 models (ch. 1)", _next_word_panels),  # 25 words, the slider's largest
        ("training loss", lambda: train.plot_losses(list(np.linspace(3, 1, 400)), title="a training run")),
        ("projector, t-SNE (ch. 5)", lambda: _projector("queen", 15, "king - man + woman", "t-SNE")),
    ]


SEQLAB_FIGURES = seqlab_figures()


# The figures that an explorer redraws under its controls (the rest stand alone in the notebook).
EXPLORER_FIGURES = {"gradient flow, RNN (ch. 3)", "cell comparison at the floor (ch. 4)",
                    "encoder attention, all heads (ch. 8)", "positional encoding (ch. 8)", "beam tree, width 5 (ch. 6)",
                    "Viterbi trellis, 16 words (ch. 2)", "next-word explorer, 3 models (ch. 1)", "projector, t-SNE (ch. 5)"}


@pytest.mark.parametrize("name, draw", SEQLAB_FIGURES, ids=[name for name, _ in SEQLAB_FIGURES])
def test_seqlab_figure_fits_the_column_with_its_labels_apart(name, draw):
    figure = draw()
    try:
        assert_fits_and_legible(figure, name)
        if name in EXPLORER_FIGURES:
            height = png_size(figure)[1]
            assert height <= EXPLORER_FIGURE_HEIGHT_PX, (
                f"{name}: {height} px tall; with its controls the explorer would not fit an 800 px window")
    finally:
        plt.close("all")


def test_every_explorer_figure_is_checked():
    assert EXPLORER_FIGURES <= {name for name, _ in SEQLAB_FIGURES}


def test_attention_explorer_figure_fits_a_long_source():
    from seqlab.attention import alignment, attention_explorer, chars, load_checkpoint

    model, src_vocab, tgt_vocab = load_checkpoint("dates")
    drawn = {}
    with mock.patch("seqlab.widgets.figure_widget", lambda draw, controls: drawn.setdefault("draw", draw)):
        attention_explorer(model, ["Mittwoch, 3. März 2049"], src_vocab, tgt_vocab)
    source = "Wednesday, the 31st of December 1999"  # 36 characters, the longest the course offers
    assert len(alignment(model, source, src_vocab, tgt_vocab, chars)[0]) >= 30
    figure = drawn["draw"](source, 3)
    try:
        assert_fits_and_legible(figure, "attention explorer (ch. 7)")
    finally:
        plt.close("all")


def test_cell_comparison_says_where_its_floor_is():
    from seqlab.gradflow import GRADIENT_FLOOR, draw_cell_comparison

    figure = draw_cell_comparison(150, 0.5, -3.0)
    ax = figure.axes[0]
    try:
        assert ax.get_ylim()[0] < GRADIENT_FLOOR, "the floor must be inside the axes, where the curves meet it"
        assert "floor" in ax.get_ylabel() and "10^{-20}" in ax.get_ylabel(), "the axis label names the floor"
        assert "below the floor" in ax.get_xlabel() and "RNN for t ≤" in ax.get_xlabel(), \
            "the figure says which curves reach the floor"
        lowest = min(float(np.min(line.get_ydata())) for line in ax.get_lines())
        assert lowest == GRADIENT_FLOOR
    finally:
        plt.close(figure)
    figure = draw_cell_comparison(20, 1.0, 0.0)
    try:
        assert "below the floor" not in figure.axes[0].get_xlabel(), "no note when no curve reaches the floor"
    finally:
        plt.close(figure)


# ---- the diagrams the notebooks draw ---------------------------------------------------------------------------------

# (notebook, text that only that cell holds): cells that draw a figure from matplotlib alone, in the order they run
# (a later one may use the helpers an earlier one defines).
NOTEBOOK_DIAGRAMS = [
    ("04-vanishing-gradients-gru-lstm", "def draw_gru(ax):", "GRU and LSTM cells"),
    ("04-vanishing-gradients-gru-lstm", 'titles = ["plain: y = F(x)"', "plain, residual and highway connections"),
    ("05-word-embeddings", 'features = ["gender (female +)"', "featurised words and their dot products"),
    ("05-word-embeddings", "leaves = [", "hierarchical softmax"),
]


def notebook_diagrams(chapter: str):
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    namespace = {"np": np, "plt": plt, "FancyArrowPatch": FancyArrowPatch, "FancyBboxPatch": FancyBboxPatch}
    path = (SOLUTIONS / chapter / f"{chapter}.ipynb")
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    for notebook, marker, name in NOTEBOOK_DIAGRAMS:
        if notebook != chapter:
            continue
        found = [source for source in cells if marker in source]
        assert len(found) == 1, f"{path.name}: {len(found)} cells hold {marker!r} (update NOTEBOOK_DIAGRAMS)"
        plt.close("all")
        with mock.patch.object(plt, "show"):
            exec(compile(found[0], f"{path.name}: {name}", "exec"), namespace)  # noqa: S102 - the course's own cell
        yield name, plt.gcf()


@pytest.mark.parametrize("chapter", sorted({chapter for chapter, _, _ in NOTEBOOK_DIAGRAMS}))
def test_notebook_diagrams_fit_the_column_with_their_labels_apart(chapter, capsys):
    for name, figure in notebook_diagrams(chapter):
        assert_fits_and_legible(figure, f"{chapter}: {name}")
    plt.close("all")


# ---- the check itself -------------------------------------------------------------------------------------------------

def test_the_check_finds_overlapping_labels_and_a_wide_figure():
    figure, ax = plt.subplots(figsize=(12, 3))
    ax.set_xticks(range(5), ["gender (female +)", "royal", "age", "food", "fruit"], rotation=45)
    assert png_width(figure) > NOTEBOOK_COLUMN_PX
    plt.close(figure)
    figure, ax = plt.subplots(figsize=(2.5, 2.5))
    ax.set_xticks(range(5), ["gender (female +)", "royal", "age", "food", "fruit"], rotation=45)
    assert ("gender (female +)", "royal") in overlapping_labels(figure)
    ax.axis("off")  # tick labels not drawn: no overlap
    assert overlapping_labels(figure) == []
    plt.close(figure)
