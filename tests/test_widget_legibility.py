"""The widgets are legible at the default notebook width (issue 27), measured on the figures themselves.

What a notebook shows: the PNG that the inline backend saves (``bbox_inches="tight"`` at the figure's
dpi), scaled down to the output area's width when it is wider. The output area of JupyterLab 4 in a
1280 px window is about 848 px wide (tests/test_browser_widgets.py measures it in Chromium). So a text's
height on screen is its size in points x dpi / 72 x that scale, and "legible" here means:

- no text smaller than 10 px on screen;
- no two labels of the embedding projector overlapping;
- the beam tree at beam width 5 no taller than a 700 px window;
- every slider or text box that redraws a figure reports on release (``continuous_update=False``).
"""

from __future__ import annotations

import io
import itertools

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.text import Annotation, Text  # noqa: E402
from PIL import Image  # noqa: E402

from seqlab import beamtree, embeddings, seq2seq  # noqa: E402
from seqlab.projector import draw_projector, embedding_projector, nearest, pca_2d  # noqa: E402

from seqlab.widgets import NOTEBOOK_COLUMN_PX as NOTEBOOK_WIDTH_PX  # noqa: E402 - the one column width (a 1280 px Lab)
WINDOW_HEIGHT_PX = 700
SMALLEST_TEXT_PX = 10


def shown_size(figure) -> tuple[int, int, float]:
    """(width, height) of the PNG a notebook gets for ``figure``, and the scale it is shown at."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight", dpi=figure.dpi)  # what the inline backend does
    width, height = Image.open(buffer).size
    return width, height, min(1.0, NOTEBOOK_WIDTH_PX / width)


def texts_of(figure) -> list[Text]:
    """Every visible, non-empty text of the figure (titles, labels, tick labels, annotations)."""
    return [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()
            and (t.axes is None or t.axes.get_visible())]


def smallest_text_px(figure) -> float:
    """The smallest font size among the figure's texts, in screen pixels as the notebook shows it."""
    *_, scale = shown_size(figure)
    return min(t.get_fontsize() for t in texts_of(figure)) * figure.dpi / 72 * scale


def overlapping(texts: list[Text], renderer) -> list[tuple[str, str]]:
    """The pairs of ``texts`` whose drawn boxes overlap (the text itself: an annotation's leader line may cross)."""
    for t in texts:
        if isinstance(t, Annotation):
            t.update_positions(renderer)  # where its text goes, as Annotation.get_window_extent does first
    boxes = [(t.get_text(), Text.get_window_extent(t, renderer)) for t in texts]
    return [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)]


# ---- chapter 5: the embedding projector -----------------------------------------------------------

@pytest.fixture(scope="module")
def projector_data():
    words, tsne = embeddings.load_projector_layout()
    glove_words, glove = embeddings.load_glove()
    index = {w: i for i, w in enumerate(glove_words)}
    vectors = glove[[index[w] for w in words]]
    return words, vectors, {"PCA": pca_2d(vectors), "t-SNE": tsne}


@pytest.mark.parametrize("layout", ["PCA", "t-SNE"])
@pytest.mark.parametrize("word, k, analogy", [("queen", 15, "king - man + woman"), ("paris", 15, "paris - france + italy"),
                                              ("walked", 8, "walked - walk + swim")])
def test_projector_labels_only_the_words_in_question_and_none_overlap(projector_data, layout, word, k, analogy):
    words, vectors, layouts = projector_data
    figure = draw_projector(words, vectors, layouts[layout], word, k, analogy)
    ax = figure.axes[0]
    labels = [t for t in ax.texts if t.get_text()]
    analogy_words = set(analogy.replace("-", " ").replace("+", " ").split())
    answer = ax.get_xlabel().rsplit("= ", 1)[-1].strip()
    neighbours = {w for w, _ in nearest(word, words, vectors, k)}
    assert {t.get_text() for t in labels} == {word} | neighbours | analogy_words | {answer}, \
        "label the query, its neighbours and the analogy's words, and nothing else"
    clashes = overlapping(labels, figure.canvas.get_renderer())
    assert not clashes, f"overlapping labels in the {layout} layout: {clashes}"
    width, _, scale = shown_size(figure)
    assert scale == 1.0, f"the figure is {width} px wide: a notebook would shrink it to {scale:.0%}"
    assert smallest_text_px(figure) >= SMALLEST_TEXT_PX
    plt.close(figure)


def test_projector_caption_wraps_instead_of_widening_the_figure(projector_data):
    words, vectors, layouts = projector_data
    short = draw_projector(words, vectors, layouts["PCA"], "queen", 1, "")
    long = draw_projector(words, vectors, layouts["PCA"], "queen", 15, "king - man + woman")
    assert long.axes[0].get_xlabel().count("\n") >= 1, "the 15 neighbours' caption should take several lines"
    assert shown_size(long)[0] <= shown_size(short)[0] + 2, "a long caption widened the figure"
    assert shown_size(long)[2] == 1.0
    plt.close(short)
    plt.close(long)


# ---- chapter 6: the beam tree -------------------------------------------------------------------

class RandomModel:
    """A decoder whose next-token distribution is a seeded function of the prefix: bushier trees than the dates
    model's, for the worst case. Its tokens are one character each, like the dates'."""

    def __init__(self, V: int = 14, seed: int = 0, eos_slope: float = 0.4, eos_offset: float = -2.0):
        self.V, self.seed = V, seed
        self.eos_slope, self.eos_offset = eos_slope, eos_offset  # </s> likelier with each step: trees end

    def start(self):
        return torch.zeros(1, 13)  # column 0: length, then the prefix

    def step(self, prev, state):
        state = state.clone()
        rows = []
        for b in range(len(prev)):
            n = int(state[b, 0])
            state[b, 1 + n], state[b, 0] = float(prev[b]), n + 1
            logits = np.random.default_rng([self.seed, n, *state[b, 1:2 + n].long().tolist()]).normal(size=self.V)
            logits[seq2seq.EOS] += self.eos_slope * n + self.eos_offset
            rows.append(logits - np.logaddexp.reduce(logits))
        return torch.tensor(np.stack(rows)), state


def date_model_start(source: str):
    model, src_vocab, _ = seq2seq.load_checkpoint("dates")
    ids = src_vocab.encode(seq2seq.chars(source))
    with torch.no_grad():
        return model.step, model.start(torch.tensor([ids]), torch.tensor([len(ids)]))


def date_labels() -> list[str]:
    _, _, tgt_vocab = seq2seq.load_checkpoint("dates")
    return [t if len(t) == 1 else {"</s>": "</s>", "<unk>": "?"}.get(t, t) for t in tgt_vocab.tokens]


@pytest.mark.parametrize("case", ["11 January 1977", "Thursday, February 16, 1967", "random model"])
def test_beam_tree_at_width_5_fits_the_window_with_10_px_labels(case):
    if case == "random model":
        model = RandomModel()
        step, state, labels = model.step, model.start(), list("<>/abcdefghijklmnop"[:model.V])
    else:
        (step, state), labels = date_model_start(case), date_labels()
    with torch.no_grad():
        tree = beamtree.beam_tree(step, state, 5, 0.5, max_len=12)
    figure = beamtree.draw_beam_tree(tree, labels, title=f"{case!r} (beam width 5)")
    width, height, scale = shown_size(figure)
    assert scale == 1.0, f"{width} px wide: a notebook would shrink it to {scale:.0%}"
    assert height <= WINDOW_HEIGHT_PX, f"{height} px high at beam width 5, more than a {WINDOW_HEIGHT_PX} px window"
    assert smallest_text_px(figure) >= SMALLEST_TEXT_PX
    renderer = figure.canvas.get_renderer()
    boxes = [t for t in figure.axes[0].texts]
    assert not overlapping(boxes, renderer), "two boxes of the tree overlap"
    plt.close(figure)


def test_beam_tree_columns_keep_edges_from_crossing():
    model = RandomModel(seed=3)
    tree = beamtree.beam_tree(model.step, model.start(), 4, 0.0, max_len=10)
    rows = beamtree.column_rows(tree)
    for step in range(1, max(n.step for n in tree.nodes) + 1):
        column = sorted((n for n in tree.nodes if n.step == step), key=lambda n: rows[n.id])
        assert [rows[n.id] for n in column] == list(range(len(column)))
        parents = [rows[n.parent] for n in column]
        assert parents == sorted(parents), "children must follow their parents' order, or edges cross"


def test_beam_tree_says_when_the_output_is_wrong():
    assert beamtree.reference_note("2026-01-11", "2026-01-11") == "  (right)"
    assert beamtree.reference_note("2026-10-11", "2026-01-11") == "  WRONG: the reference is '2026-01-11'"
    assert beamtree.reference_note("2026-10-11", None) == ""


def test_beam_tree_explorer_opens_on_a_source_where_beam_search_beats_greedy():
    labels = date_labels()
    references = {"1989/08/20": "1989-08-20", "11 January 1977": "1977-01-11", "30-06-1994": "1994-06-30"}
    starts = {source: (lambda source=source: date_model_start(source)) for source in references}
    greedy = {s: "".join(labels[t] for t in seq2seq.greedy_search(*starts[s](), 1)[0]) for s in references}
    beam2 = {s: "".join(labels[t] for t in seq2seq.beam_search(*starts[s](), beam_width=2, max_len=12)[0].tokens)
             for s in references}
    showcases = [s for s in references if greedy[s] != references[s] and beam2[s] == references[s]]
    assert showcases, f"none of these sources shows beam search fixing greedy: {greedy}, {beam2}"
    box = beamtree.beam_tree_explorer(starts, labels, max_len=12, references=references)
    assert box.children[0].children[0].value == showcases[0]
    assert beamtree.beam_tree_explorer(starts, labels, max_len=12).children[0].children[0].value == "1989/08/20"


# ---- chapter 8: the attention explorer with four heads -------------------------------------------

def test_attention_with_four_heads_keeps_10_px_labels_apart():
    from seqlab.transformer import attention_figure

    source, target = list("the 21st of August 1969"), ["<s>"] + list("1969-08-21")
    weights = torch.softmax(torch.randn(1, 4, len(target), len(source), generator=torch.Generator().manual_seed(0)), -1)
    maps = {"cross": [weights, weights]}
    figure = attention_figure(maps, "cross", 1, None, target, source)
    width, height, scale = shown_size(figure)
    assert scale == 1.0, f"{width} px wide: a notebook would shrink it to {scale:.0%}"
    assert height <= WINDOW_HEIGHT_PX
    assert smallest_text_px(figure) >= SMALLEST_TEXT_PX
    renderer = figure.canvas.get_renderer()
    for ax in figure.axes:
        for ticks in (ax.get_xticklabels(), ax.get_yticklabels()):
            assert not overlapping(list(ticks), renderer), f"tick labels overlap in {ax.get_title()!r}"
    plt.close(figure)


def test_positional_encoding_figure_is_shown_at_full_size():
    from seqlab.transformer import positional_figure

    figure = positional_figure(64, 20, 100)
    width, _, scale = shown_size(figure)
    assert scale == 1.0, f"{width} px wide: a notebook would shrink it to {scale:.0%}"
    assert smallest_text_px(figure) >= SMALLEST_TEXT_PX
    plt.close(figure)


# ---- every slider that redraws a figure -----------------------------------------------------------

def controls_of(box) -> list[widgets.Widget]:
    """Every widget inside ``box``."""
    found = []
    for child in getattr(box, "children", ()):
        found.append(child)
        found += controls_of(child)
    return found


def course_widgets():
    """One of each of the course's widgets, built on small inputs."""
    from seqlab import gradflow, transformer, widgets as seqlab_widgets
    from seqlab.attention import attention_explorer as attention_rnn_explorer
    from seqlab.attention import load_checkpoint as load_attention_checkpoint
    from seqlab.trellis import trellis_explorer

    def uniform(word, context):
        return 0.25

    yield "next-word explorer", seqlab_widgets.next_word_explorer({"m": {1: uniform, 2: uniform}}, list("abcd"))
    yield "Viterbi trellis", trellis_explorer(lambda words: (np.zeros((len(words), 2)), np.zeros((len(words), 2), int)),
                                              ["A", "B"], initial_sentence="a b")
    yield "gradient flow", gradflow.gradient_flow_widget(length=5)
    yield "cell comparison", gradflow.cell_comparison_widget(length=5)
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(12)]
    vectors = rng.normal(size=(12, 5))
    yield "projector", embedding_projector(words, vectors, {"PCA": pca_2d(vectors)}, word="w0", analogy="")
    model = RandomModel()
    yield "beam tree", beamtree.beam_tree_explorer({"x": lambda: (model.step, model.start())},
                                                   [str(i) for i in range(model.V)], max_len=4)
    rnn, src_vocab, tgt_vocab = load_attention_checkpoint("numbers")
    yield "attention (chapter 7)", attention_rnn_explorer(rnn, ["7"], src_vocab, tgt_vocab, join=" ")
    weights = torch.full((1, 2, 3, 3), 1 / 3)
    maps = {kind: [weights, weights] for kind in ("encoder", "decoder", "cross")}
    tokens = {kind: list("abc") for kind in maps}
    yield "attention (chapter 8)", transformer.attention_explorer(maps, tokens, tokens)
    yield "positional encoding", transformer.positional_explorer(length=10)


def test_every_control_that_redraws_a_figure_reports_on_release():
    for name, box in course_widgets():
        continuous = [c.description for c in controls_of(box) if c.has_trait("continuous_update") and c.continuous_update]
        assert not continuous, f"{name}: {continuous} redraw on every value while dragged (continuous_update=True)"
        plt.close("all")


def test_figure_widget_turns_continuous_updates_off():
    from seqlab.widgets import figure_widget

    slider = widgets.IntSlider(value=1, min=0, max=3)
    assert slider.continuous_update  # ipywidgets' default
    figure_widget(lambda x: plt.figure(), {"x": slider})
    assert slider.continuous_update is False
    plt.close("all")
