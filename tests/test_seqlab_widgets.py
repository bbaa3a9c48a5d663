"""seqlab.widgets: the pure computations, and the widgets built and redrawn without a front end."""

import time

import ipywidgets as widgets
import matplotlib
import pytest

matplotlib.use("Agg")

from seqlab.widgets import context_from_text, figure_widget, next_word_explorer, top_next_words  # noqa: E402

VOCAB = ["<unk>", "<s>", "</s>", "the", "cat", "sat"]


def bigram(word, context):
    table = {"the": {"cat": 0.7, "sat": 0.2, "</s>": 0.1}, "cat": {"sat": 1.0}}
    return table.get(context[-1], {"the": 0.5, "</s>": 0.5}).get(word, 0.0)


def test_context_from_text_pads_truncates_and_maps_unknown_words():
    assert context_from_text("The CAT", 3, VOCAB) == ("the", "cat")
    assert context_from_text("cat", 3, VOCAB) == ("<s>", "cat")
    assert context_from_text("a dog the", 3, VOCAB) == ("<unk>", "the")
    assert context_from_text("anything", 1, VOCAB) == ()
    with pytest.raises(ValueError, match="at least 1"):
        context_from_text("x", 0, VOCAB)


def test_top_next_words_sorted_best_first():
    assert top_next_words(bigram, ("the",), VOCAB, 2) == [("cat", 0.7), ("sat", 0.2)]
    assert [w for w, _ in top_next_words(bigram, ("<s>",), VOCAB, 2)] == ["</s>", "the"], "ties by word"
    with pytest.raises(TypeError, match="tuple"):
        top_next_words(bigram, ["the"], VOCAB, 2)
    with pytest.raises(ValueError, match="k must be"):
        top_next_words(bigram, ("the",), VOCAB, 0)


def test_figure_widget_redraws_when_a_control_changes():
    calls = []

    def draw(x):
        calls.append(x)
        import matplotlib.pyplot as plt
        figure, ax = plt.subplots()
        ax.plot([0, x])
        return figure

    slider = widgets.IntSlider(value=1, min=0, max=5)
    box = figure_widget(draw, {"x": slider})
    slider.value = 3
    assert calls == [1, 3] and isinstance(box, widgets.VBox)
    with pytest.raises(ValueError, match="at least one control"):
        figure_widget(draw, {})


def test_next_word_explorer_builds_and_answers_quickly():
    box = next_word_explorer({"toy": {2: bigram}, "same": {2: bigram}}, VOCAB, initial_context="the")
    text = box.children[0].children[0]
    start = time.process_time()
    text.value = "cat"
    assert time.process_time() - start < 1.0


def test_next_word_explorer_rejects_bad_models():
    with pytest.raises(ValueError, match="at least one model"):
        next_word_explorer({}, VOCAB)
    with pytest.raises(ValueError, match="orders"):
        next_word_explorer({"a": {2: bigram}, "b": {3: bigram}}, VOCAB)


def test_next_word_explorer_shows_each_models_note():
    seen = []

    def note(context, n):
        seen.append((context, n))
        return f"back-off mass {0.25:.2f}"

    box = next_word_explorer({"toy": {2: bigram}, "same": {2: bigram}}, VOCAB, initial_context="the", notes={"toy": note})
    box.children[0].children[0].value = "cat"
    assert seen == [(("the",), 2), (("cat",), 2)], "one note per redraw, for the model named, with the context"
