"""Unit tests of seqlab.diagrams: chapter 3's drawn RNN cell and unrolled network."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from seqlab.diagrams import draw_rnn_cell, draw_unrolled_rnn  # noqa: E402


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
