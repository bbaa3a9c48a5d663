"""How the gradient of a loss at the last step flows back through a recurrent network.

``gradient_norms`` runs a cell (a plain RNN with a chosen nonlinearity, or torch's GRU and
LSTM cells) for ``length`` steps on random inputs, puts a loss on the last hidden state
only, and returns ||dL/dh_t|| for every step t. ``eigenvalue_curve`` is the linear theory:
with h_t = W h_{t-1} + ..., dL/dh_t = (W^T)^(T-t) dL/dh_T, so the norm scales like
|lambda|^(T-t) for the eigenvalues lambda of W. ``gradient_flow_widget`` shows both.

The recurrent matrix is a random orthogonal matrix times ``scale``: every eigenvalue has
modulus ``scale`` (the spectral radius), so for a linear RNN the norms follow
``scale ** (T - t)`` exactly. Used in chapter 3 (plain RNN) and chapter 4 (GRU, LSTM, and the
original LSTM of 1997 without a forget gate: ``forget_gate=False``, c_t = c_{t-1} + i_t g_t).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from seqlab.i18n import N_, _, choices, figure_join, figure_text

__all__ = ["CELLS", "NONLINEARITIES", "recurrent_matrix", "gradient_norms", "tanh_derivatives", "eigenvalue_curve",
           "cell_comparison", "MATRICES", "NO_FORGET", "GRADIENT_FLOOR",
           "draw_cell_comparison", "cell_comparison_widget",
           "draw_gradient_flow", "gradient_flow_widget"]

CELLS = ("RNN", "GRU", "LSTM")
NONLINEARITIES = ("tanh", "relu", N_("linear"))
_ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu, "linear": lambda z: z}


def recurrent_matrix(hidden: int, scale: float, seed: int = 0, *, normal: bool = True) -> torch.Tensor:
    """A (hidden, hidden) matrix of spectral radius ``scale``.

    ``normal=True``: a random orthogonal matrix times ``scale`` (normal: every singular value is
    ``scale`` too). ``normal=False``: Q (D + N) Q^T with Q that orthogonal matrix, D = diag(+-scale)
    and N strictly upper triangular: the same eigenvalues, a larger largest singular value.
    """
    if hidden < 1:
        raise ValueError(f"hidden must be at least 1, got {hidden}")
    generator = torch.Generator().manual_seed(seed)
    q, r = torch.linalg.qr(torch.randn(hidden, hidden, generator=generator, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))  # a uniformly random orthogonal matrix
    if normal:
        return scale * q
    signs = torch.where(torch.rand(hidden, generator=generator, dtype=torch.float64) < 0.5, -1.0, 1.0)
    upper = torch.triu(torch.randn(hidden, hidden, generator=generator, dtype=torch.float64), diagonal=1)
    return q @ (torch.diag(scale * signs) + upper / hidden ** 0.5) @ q.T


def gradient_norms(
    length: int = 50,
    scale: float = 1.0,
    nonlinearity: str = "tanh",
    cell: str = "RNN",
    *,
    hidden: int = 32,
    input_size: int = 8,
    forget_bias: float | None = None,
    seed: int = 0,
    normal: bool = True,
    forget_gate: bool = True,
) -> np.ndarray:
    """||dL/dh_t|| for t = 1..length, with L = u . h_T a loss on the last hidden state only.

    Args:
        length: the number of steps T (at least 1).
        scale: the spectral radius of each recurrent matrix (orthogonal times ``scale``).
        nonlinearity: ``"tanh"``, ``"relu"`` or ``"linear"``; used by the plain RNN only.
        cell: ``"RNN"``, ``"GRU"`` or ``"LSTM"`` (the last two are torch's cells).
        forget_bias: for the LSTM, the bias of the forget gate (None: torch's default init).
        seed: fixes the weights, the inputs and u.
        normal: for the plain RNN, False gives a non-normal recurrent matrix of the same spectral radius.
        forget_gate: for the LSTM, False gives the original LSTM without a forget gate (f = 1):
            c_t = c_{t-1} + i_t * g_t, with the same weights otherwise (the forget block is not used).

    Returns:
        A float64 array of shape (length,); entry t-1 belongs to h_t.
    """
    if length < 1:
        raise ValueError(f"length must be at least 1, got {length}")
    if cell not in CELLS:
        raise ValueError(f"cell must be one of {CELLS}, got {cell!r}")
    if nonlinearity not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {NONLINEARITIES}, got {nonlinearity!r}")
    if not forget_gate and cell != "LSTM":
        raise ValueError(f"forget_gate=False needs the LSTM, got cell {cell!r}")
    if not forget_gate and forget_bias is not None:
        raise ValueError("a forget bias needs a forget gate: pass forget_bias=None with forget_gate=False")
    generator = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(length, 1, input_size, generator=generator, dtype=torch.float64)
    u = torch.randn(1, hidden, generator=generator, dtype=torch.float64)
    u = u / u.norm()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if cell == "RNN":
            w_ax = torch.randn(input_size, hidden, generator=generator, dtype=torch.float64) / input_size ** 0.5
            w_aa = recurrent_matrix(hidden, scale, seed, normal=normal)
            act = _ACTIVATIONS[nonlinearity]
            step = lambda x_t, state: (act(state[0] @ w_aa.T + x_t @ w_ax),)  # noqa: E731
            state = (torch.zeros(1, hidden, dtype=torch.float64),)
        else:
            module = (nn.GRUCell if cell == "GRU" else nn.LSTMCell)(input_size, hidden).double()
            gates = 3 if cell == "GRU" else 4
            with torch.no_grad():
                module.weight_hh.copy_(torch.cat([recurrent_matrix(hidden, scale, seed + g) for g in range(gates)]))
                if cell == "LSTM" and forget_bias is not None:
                    module.bias_ih[hidden:2 * hidden] = forget_bias  # torch's gate order: i, f, g, o
                    module.bias_hh[hidden:2 * hidden] = 0.0
            zeros = torch.zeros(1, hidden, dtype=torch.float64)
            if cell == "GRU":
                step = lambda x_t, state: (module(x_t, state[0]),)  # noqa: E731
                state = (zeros,)
            elif not forget_gate:
                step = lambda x_t, state: _lstm_without_forget_gate(module, x_t, state)  # noqa: E731
                state = (zeros, zeros.clone())
            else:
                step = lambda x_t, state: module(x_t, state)  # noqa: E731
                state = (zeros, zeros.clone())
        state = tuple(s.requires_grad_(True) for s in state)  # so every h_t joins the graph
        hs = []
        for t in range(length):
            state = step(x[t], state)
            state[0].retain_grad()
            hs.append(state[0])
        (hs[-1] * u).sum().backward()
    return np.array([h.grad.norm().item() for h in hs])


def _lstm_without_forget_gate(cell: nn.LSTMCell, x: torch.Tensor,
                              state: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """One step of the original LSTM (Hochreiter and Schmidhuber, 1997): torch's LSTMCell with f = 1,
    c' = c + i * g and h' = o * tanh(c'); the forget block of the weights is not used."""
    h, c = state
    i, _, g, o = (x @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T + cell.bias_hh).chunk(4, dim=1)
    c = c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def tanh_derivatives(length: int = 50, scale: float = 1.0, *, hidden: int = 32, input_size: int = 8,
                     seed: int = 0, normal: bool = True) -> np.ndarray:
    """tanh'(z_t) = 1 - h_t**2 at every step and unit of the tanh RNN that ``gradient_norms`` runs
    (same seed, same weights, same inputs): the diagonal factors of the Jacobians. Shape (length, hidden)."""
    if length < 1:
        raise ValueError(f"length must be at least 1, got {length}")
    generator = torch.Generator().manual_seed(seed + 1)  # the draws of gradient_norms, in its order
    x = torch.randn(length, 1, input_size, generator=generator, dtype=torch.float64)
    torch.randn(1, hidden, generator=generator, dtype=torch.float64)  # u, not needed here
    w_ax = torch.randn(input_size, hidden, generator=generator, dtype=torch.float64) / input_size ** 0.5
    w_aa = recurrent_matrix(hidden, scale, seed, normal=normal)
    h = torch.zeros(1, hidden, dtype=torch.float64)
    factors = []
    for t in range(length):
        h = torch.tanh(h @ w_aa.T + x[t] @ w_ax)
        factors.append(1.0 - h[0] ** 2)
    return torch.stack(factors).numpy()


def eigenvalue_curve(length: int, scale: float) -> np.ndarray:
    """|lambda|^(T - t) for t = 1..T: the linear theory for a spectral radius ``scale``."""
    if length < 1:
        raise ValueError(f"length must be at least 1, got {length}")
    return float(scale) ** np.arange(length - 1, -1, -1, dtype=float)


MATRICES = (N_("normal"), N_("non-normal"))


def draw_gradient_flow(length: int = 50, scale: float = 1.0, nonlinearity: str = "tanh", cell: str = "RNN",
                       forget_bias: float | None = None, matrix: str = "normal"):
    """The widget's figure, on one axis: the measured norms ||dL/da<t>|| and, for the plain RNN, the
    eigenvalue view |lambda|^(T-t) and the singular-value bound ||W||_2^(T-t) (|tanh'| <= 1)."""
    import matplotlib.pyplot as plt

    if matrix not in MATRICES:
        raise ValueError(_("matrix must be one of {choices}, got {matrix!r}").format(choices=MATRICES, matrix=matrix))
    normal = matrix == "normal"
    norms = gradient_norms(length, scale, nonlinearity, cell, forget_bias=forget_bias, normal=normal)
    t = np.arange(1, length + 1)
    figure, ax = plt.subplots(figsize=(7.5, 3.8))
    label = cell if cell != "RNN" else figure_text(N_("RNN ({nonlinearity}), measured"), nonlinearity=nonlinearity)
    ax.semilogy(t, np.maximum(norms, 1e-300), marker=".", label=label)
    title = figure_text(N_("gradient of a loss at step T={length}"), length=length)
    if cell == "RNN":
        sigma = float(torch.linalg.matrix_norm(recurrent_matrix(32, scale, 0, normal=normal), ord=2))
        ax.semilogy(t, eigenvalue_curve(length, scale), ls="--", color="C1",
                    label=figure_text(N_(r"eigenvalue view $|\lambda|^{{T-t}}$, $|\lambda|$ = {scale}"), scale=f"{scale:.2f}"))
        ax.semilogy(t, np.minimum(eigenvalue_curve(length, sigma), 1e300), ls=":", color="C2",
                    label=figure_text(N_(r"bound $\|W_{{aa}}\|_2^{{T-t}}$, $\|W_{{aa}}\|_2$ = {sigma}"), sigma=f"{sigma:.2f}"))
        if nonlinearity == "tanh":
            mean = float(tanh_derivatives(length, scale, normal=normal).mean())
            title = figure_join([title, figure_text(N_("; mean tanh' = {mean}, radius x mean = {product}"),
                                                    mean=f"{mean:.2f}", product=f"{scale * mean:.2f}")], separator="")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set(xlabel=figure_text(N_("time step t")),
           ylabel=figure_text(N_(r"$\|\partial L / \partial a^{\langle t \rangle}\|$ (log scale)")), title=title)
    ax.title.set_fontsize(9)
    ax.legend(loc="best", fontsize=8)
    figure.tight_layout()
    return figure


def gradient_flow_widget(length: int = 50, scale: float = 1.0, nonlinearity: str = "tanh", cell: str = "RNN",
                         *, cells: tuple[str, ...] = CELLS, forget_bias: bool = False):
    """Sliders for length and spectral radius, drop-downs for nonlinearity, cell type and a normal or
    non-normal recurrent matrix; with ``forget_bias=True`` also a slider for the LSTM's forget-gate bias."""
    import ipywidgets as widgets

    from seqlab.widgets import figure_widget

    controls = {
        "length": widgets.IntSlider(value=length, min=2, max=200, step=1, description=_("length T"),
                                    continuous_update=False),
        "scale": widgets.FloatSlider(value=scale, min=0.5, max=1.5, step=0.01, description=_("radius |λ|"),
                                     continuous_update=False),
        "nonlinearity": widgets.Dropdown(options=choices(NONLINEARITIES), value=nonlinearity, description=_("nonlinearity")),
        "cell": widgets.Dropdown(options=list(cells), value=cell, description=_("cell")),
        "matrix": widgets.Dropdown(options=choices(MATRICES), value="normal", description="W_aa"),
    }
    if forget_bias:
        controls["forget_bias"] = widgets.FloatSlider(value=0.0, min=-3.0, max=5.0, step=0.5,
                                                      description=_("forget bias"), continuous_update=False)
    return figure_widget(draw_gradient_flow, controls)


# ---- chapter 4: the three cells side by side ---------------------------------------------------

NO_FORGET = "LSTM, no forget gate"  # the key of the original LSTM (f = 1) in cell_comparison's result


def cell_comparison(length: int = 60, scale: float = 1.0, forget_bias: float = 0.0, *, hidden: int = 32,
                    seed: int = 0, no_forget_gate: bool = False) -> dict[str, np.ndarray]:
    """||dL/dh_t|| for a tanh RNN, a GRU and an LSTM with the same length, radius and seed.

    ``forget_bias`` is the LSTM's forget-gate total bias (``bias_ih`` = value, ``bias_hh`` = 0 in the
    forget block). Returns ``{"RNN": norms, "GRU": norms, "LSTM": norms}``, each of shape (length,);
    with ``no_forget_gate=True`` also ``NO_FORGET``: the same LSTM without its forget gate (f = 1, the
    original LSTM of 1997), which the forget bias does not touch.
    """
    norms = {
        "RNN": gradient_norms(length, scale, "tanh", "RNN", hidden=hidden, seed=seed),
        "GRU": gradient_norms(length, scale, "tanh", "GRU", hidden=hidden, seed=seed),
        "LSTM": gradient_norms(length, scale, "tanh", "LSTM", hidden=hidden, forget_bias=forget_bias, seed=seed),
    }
    if no_forget_gate:
        norms[NO_FORGET] = gradient_norms(length, scale, "tanh", "LSTM", hidden=hidden, seed=seed, forget_gate=False)
    return norms


# The cell comparison's y axis starts here, whatever the sliders say, so that two settings compare at a glance;
# a norm below it is drawn on it, and the figure says so.
GRADIENT_FLOOR = 1e-20


def draw_cell_comparison(length: int = 60, scale: float = 1.0, forget_bias: float = 0.0, no_forget_gate: bool = False):
    """The chapter-4 widget's figure: the cells' gradient norms over t, on one log scale from GRADIENT_FLOOR up
    (four curves with ``no_forget_gate``: the LSTM without a forget gate as well). Norms below the floor are drawn
    on it, above a grey band, and the axis label says which curves reach it and where."""
    import matplotlib.pyplot as plt

    norms = cell_comparison(length, scale, forget_bias, no_forget_gate=no_forget_gate)
    t = np.arange(1, length + 1)
    figure, ax = plt.subplots(figsize=(8, 3.8))
    floored = []
    for (name, values), style in zip(norms.items(), ("-", "--", "-", ":")):
        label = figure_text(N_("LSTM (forget bias {bias})"), bias=f"{forget_bias:+.1f}") if name == "LSTM" else name
        if name == NO_FORGET:
            label = figure_text(N_("LSTM without forget gate (f = 1)"))
        below = values < GRADIENT_FLOOR
        if below.any():
            floored.append(figure_text(N_("{name} for t ≤ {last}"), name=name, last=int(t[below].max())))
        ax.semilogy(t, np.maximum(values, GRADIENT_FLOOR), style, marker=".", markersize=3, label=label)
    top = max(10.0, 2 * max(float(np.max(v)) for v in norms.values()))  # the LSTM without forget gate can pass 1
    ax.axhspan(GRADIENT_FLOOR / 10, GRADIENT_FLOOR, color="0.9", zorder=0)  # under the floor: nothing is drawn
    xlabel = (figure_text(N_("time step t\n(norms below the floor of $10^{{-20}}$ are drawn on it: {curves})"),
                          curves=floored)
              if floored else figure_text(N_("time step t")))
    ax.set(xlabel=xlabel,
           ylabel=figure_text(N_(r"$\|\partial L / \partial h_t\|$ (log scale, floor $10^{-20}$)")),
           ylim=(GRADIENT_FLOOR / 10, top),
           title=figure_text(N_("gradient of a loss at step T={length}; recurrent matrices of radius {scale}"),
                             length=length, scale=f"{scale:.2f}"))
    ax.legend(loc="upper left", fontsize=9)  # the curves rise to the right: the upper left is free
    figure.tight_layout()
    return figure


def cell_comparison_widget(length: int = 60, scale: float = 1.0, forget_bias: float = 0.0, no_forget_gate: bool = False):
    """Sliders for the length, the recurrent radius and the LSTM's forget-gate bias, and a check box that adds the
    LSTM without a forget gate; RNN, GRU, LSTM side by side."""
    import ipywidgets as widgets

    from seqlab.widgets import figure_widget

    controls = {
        "length": widgets.IntSlider(value=length, min=2, max=150, step=1, description=_("length T"),
                                    continuous_update=False),
        "scale": widgets.FloatSlider(value=scale, min=0.5, max=1.5, step=0.05, description=_("radius |λ|"),
                                     continuous_update=False),
        "forget_bias": widgets.FloatSlider(value=forget_bias, min=-3.0, max=5.0, step=0.5, description=_("forget bias"),
                                           continuous_update=False),
        "no_forget_gate": widgets.Checkbox(value=no_forget_gate, description=_("+ LSTM without forget gate")),
    }
    return figure_widget(draw_cell_comparison, controls)
