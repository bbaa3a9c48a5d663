"""Unit tests of seqlab.diagrams: chapter 3's drawn RNN cell, unrolled network and shapes of sequence problems."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from matplotlib.patches import FancyBboxPatch  # noqa: E402

from seqlab.diagrams import SHAPES, draw_rnn_cell, draw_sequence_shapes, draw_unrolled_rnn  # noqa: E402


def test_cell_diagram_names_every_parameter():
    figure = draw_rnn_cell()
    text = " ".join(t.get_text() for t in figure.axes[0].texts)
    for name in ("W_{aa}", "W_{ax}", "W_{ya}", "tanh", "softmax"):
        assert name in text, name
    plt.close(figure)


@pytest.mark.parametrize("steps", [1, 4])
def test_unrolled_diagram_has_one_cell_per_step(steps):
    figure = draw_unrolled_rnn(steps)
    cells = [t for t in figure.axes[0].texts if t.get_text() == "cell"]
    assert len(cells) == steps
    plt.close(figure)
    with pytest.raises(ValueError):
        draw_unrolled_rnn(0)


def test_sequence_shapes_draw_each_shape_with_its_inputs_outputs_and_feedback():
    figure = draw_sequence_shapes()
    assert [ax.get_title() for ax in figure.axes] == ["many-to-many", "many-to-one", "one-to-many", "encoder-decoder"]
    for ax, (name, shape) in zip(figure.axes, SHAPES.items()):
        cells = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
        assert len(cells) == shape["steps"], name
        labels = [t.get_text() for t in ax.texts]
        assert sum(t.startswith("$x") for t in labels) == len(shape["inputs"]), (name, labels)
        assert sum(t.startswith(r"$\hat y") for t in labels) == len(shape["outputs"]), (name, labels)
        arrows = [a for a in ax.texts if type(a).__name__ == "Annotation" and a.arrow_patch is not None]
        dashed = [a for a in arrows if a.arrow_patch.get_linestyle() not in ("-", "solid")]
        # state arrows between cells, one arrow per input and per output, one dashed arrow per fed-back output
        fed_back = len([t for t in shape["outputs"] if t + 1 < shape["steps"]]) if shape["feedback"] else 0
        assert len(dashed) == fed_back, name
        assert len(arrows) == shape["steps"] - 1 + len(shape["inputs"]) + len(shape["outputs"]) + fed_back, name
    assert "encoder" in [t.get_text() for t in figure.axes[3].texts]
    plt.close(figure)
