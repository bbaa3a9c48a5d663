"""Unit tests of seqlab.gradflow: the pure computation behind the gradient-flow widget."""

import time

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")

from seqlab.gradflow import (CELLS, draw_gradient_flow, eigenvalue_curve, gradient_flow_widget, gradient_norms,
                             recurrent_matrix, tanh_derivatives)

pytestmark = pytest.mark.numerics  # every test here measures gradients through random networks


@pytest.mark.parametrize("scale", [0.8, 1.0, 1.25])
def test_linear_rnn_with_scaled_orthogonal_weights_follows_r_to_the_t(scale):
    norms = gradient_norms(length=25, scale=scale, nonlinearity="linear")
    steps_back = np.arange(24, -1, -1)
    np.testing.assert_allclose(norms, scale ** steps_back * norms[-1], rtol=1e-9)
    np.testing.assert_allclose(norms[-1], 1.0, rtol=1e-12)  # L = u . h_T with |u| = 1
    np.testing.assert_allclose(norms / norms[-1], eigenvalue_curve(25, scale), rtol=1e-9)


def test_recurrent_matrix_has_the_requested_spectral_radius():
    w = recurrent_matrix(16, 0.7, seed=3)
    moduli = np.abs(np.linalg.eigvals(w.numpy()))
    np.testing.assert_allclose(moduli, 0.7, rtol=1e-9)
    assert torch.allclose(w, recurrent_matrix(16, 0.7, seed=3))
    assert not torch.allclose(w, recurrent_matrix(16, 0.7, seed=4))


def test_tanh_never_exceeds_the_linear_bound():
    for scale in (0.9, 1.2):
        norms = gradient_norms(40, scale, "tanh")
        assert np.all(norms <= eigenvalue_curve(40, scale) * (1 + 1e-9))
    assert gradient_norms(40, 1.0, "tanh")[0] < 1e-3  # it vanishes at radius 1


def test_tanh_derivatives_are_the_jacobian_factors_of_the_same_network():
    # with one step back, dL/dh_{T-1} = W^T diag(tanh'_T) u: its norm is bounded by radius * max tanh'
    for scale in (1.0, 1.5):
        d = tanh_derivatives(60, scale)
        assert d.shape == (60, 32) and np.all((d > 0) & (d <= 1))
        norms = gradient_norms(60, scale, "tanh")
        assert norms[-2] <= scale * d[-1].max() * norms[-1] * (1 + 1e-9)
    # a larger radius saturates the units: smaller tanh' on average, yet a larger product radius * mean
    assert tanh_derivatives(60, 1.5).mean() < tanh_derivatives(60, 1.0).mean()
    assert 1.5 * tanh_derivatives(60, 1.5).mean() > 1.0 * tanh_derivatives(60, 1.0).mean()
    with pytest.raises(ValueError):
        tanh_derivatives(0, 1.0)


@pytest.mark.parametrize("cell", CELLS)
def test_every_cell_gives_finite_positive_norms_of_the_right_shape(cell):
    norms = gradient_norms(30, 1.0, "tanh", cell, seed=2)
    assert norms.shape == (30,) and norms.dtype == np.float64
    assert np.all(np.isfinite(norms)) and np.all(norms[-5:] > 0)
    np.testing.assert_allclose(norms, gradient_norms(30, 1.0, "tanh", cell, seed=2))  # deterministic


def test_a_large_lstm_forget_bias_keeps_the_gradient_alive():
    low = gradient_norms(60, 1.0, cell="LSTM", forget_bias=-2.0)[0]
    high = gradient_norms(60, 1.0, cell="LSTM", forget_bias=5.0)[0]
    assert high > 1e3 * low


def test_the_lstm_without_forget_gate_is_the_lstm_with_its_forget_gate_pinned_at_one():
    # f = 1 written out (c' = c + i g) against torch's LSTMCell whose forget gate a bias of 40 pins at sigmoid(40) = 1
    without = gradient_norms(40, 1.0, cell="LSTM", forget_gate=False, seed=3)
    pinned = gradient_norms(40, 1.0, cell="LSTM", forget_bias=40.0, seed=3)
    np.testing.assert_allclose(without, pinned, rtol=1e-9)
    # no forget gate, no decay along the cell path: the gradient 60 steps back stays of order 1, where the LSTM whose
    # forget gates start near 0.5 has lost it
    far = gradient_norms(60, 1.0, cell="LSTM", forget_gate=False)[0]
    assert far > 0.1 and far > 1e6 * gradient_norms(60, 1.0, cell="LSTM", forget_bias=0.0)[0]
    with pytest.raises(ValueError, match="needs the LSTM"):
        gradient_norms(10, cell="GRU", forget_gate=False)
    with pytest.raises(ValueError, match="a forget bias needs a forget gate"):
        gradient_norms(10, cell="LSTM", forget_gate=False, forget_bias=1.0)


def test_does_not_touch_the_global_random_state():
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    gradient_norms(10, 1.0, cell="GRU")
    assert torch.equal(torch.rand(1), expected)


@pytest.mark.parametrize("kwargs, message", [
    ({"length": 0}, "length must be at least 1"),
    ({"cell": "TRANSFORMER"}, "cell must be one of"),
    ({"nonlinearity": "sigmoid"}, "nonlinearity must be one of"),
])
def test_errors_say_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gradient_norms(**kwargs)
    with pytest.raises(ValueError, match="length must be at least 1"):
        eigenvalue_curve(0, 1.0)
    with pytest.raises(ValueError, match="hidden must be at least 1"):
        recurrent_matrix(0, 1.0)


def test_figure_shows_measurement_and_theory_on_one_labelled_log_axis():
    figure = draw_gradient_flow(30, 1.1, "tanh", "RNN")
    (ax,) = figure.axes
    assert ax.get_xlabel() and "a^{\\langle t \\rangle}" in ax.get_ylabel() and ax.get_yscale() == "log"
    assert len(ax.get_lines()) == 4  # measured, eigenvalue view, singular-value bound, the line at 1
    assert "mean tanh'" in ax.get_title()
    matplotlib.pyplot.close(figure)
    with pytest.raises(ValueError, match="matrix must be one of"):
        draw_gradient_flow(10, 1.0, matrix="symmetric")


def test_non_normal_matrix_keeps_the_radius_and_has_a_larger_norm():
    w = recurrent_matrix(16, 0.9, seed=2, normal=False).numpy()
    np.testing.assert_allclose(np.abs(np.linalg.eigvals(w)), 0.9, rtol=0.01)  # repeated eigenvalues: computed to ~1e-3
    assert np.linalg.norm(w, 2) > 1.2
    # the linear RNN with this matrix: the gradient first grows, although every |lambda| < 1
    norms = gradient_norms(40, 0.9, "linear", normal=False)
    assert norms[:-1].max() > norms[-1]
    figure = draw_gradient_flow(20, 0.9, "linear", "RNN", matrix="non-normal")
    matplotlib.pyplot.close(figure)


def test_widget_builds_and_redraws_fast():
    widget = gradient_flow_widget()
    controls = widget.children[0].children
    assert [c.description for c in controls] == ["length T", "radius |λ|", "nonlinearity", "cell", "W_aa"]
    start = time.process_time()  # this process's CPU time: a busy machine stretched wall time to 1.3 s a redraw
    for value, control in zip([120, 1.2, "relu", "LSTM", "non-normal"], controls):
        control.value = value
    per_change = (time.process_time() - start) / 5
    assert per_change < 0.8, f"a redraw took {per_change:.2f} s"
    assert len(gradient_flow_widget(forget_bias=True).children[0].children) == 6
