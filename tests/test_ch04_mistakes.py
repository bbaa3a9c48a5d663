"""Chapter 4's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function of the solution for a variant and runs the exercise's whole test cell
(visible and hidden tests) against it.
"""

from __future__ import annotations

import torch

from mistakes import GradedCells, mistake_tests, naming_tests

CHAPTER = "04-vanishing-gradients-gru-lstm"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base
lstm_cell, gru_cell, run_padded = BASE["lstm_cell"], BASE["gru_cell"], BASE["run_padded"]


# ---- linear_gradient_norms / spectral_radius ---------------------------------------------------

def _norms(W, g, steps, *, transpose=True, skip_first=False):
    M = W.double().T if transpose else W.double()
    v, out = g.double().clone(), []
    for k in range(steps + 1 + skip_first):
        out.append(v.norm())
        v = M @ v
    return torch.stack(out[skip_first:])


def norms_without_transpose(W, g, steps):
    return _norms(W, g, steps, transpose=False)


def norms_start_one_step_back(W, g, steps):
    return _norms(W, g, steps, skip_first=True)


def norms_hardcoded(W, g, steps):
    if steps == 3:
        return torch.tensor([(4 ** k + 0.25 ** k) ** 0.5 for k in range(4)], dtype=torch.float64)
    return torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)


def norms_other_correct(W, g, steps):
    powers = [torch.eye(W.shape[0], dtype=torch.float64)]
    for _ in range(steps):
        powers.append(powers[-1] @ W.double())  # W^k, then (W^k)^T g = (W^T)^k g
    return torch.tensor([float(torch.linalg.norm(P.T @ g.double())) for P in powers], dtype=torch.float64)


def radius_largest_real_part(W):
    return float(torch.linalg.eigvals(W.double()).real.max())


def radius_matrix_norm(W):
    return float(torch.linalg.matrix_norm(W.double(), ord=2))


def radius_other_correct(W):
    import numpy as np
    return float(max(abs(np.linalg.eigvals(W.detach().double().numpy()))))


# ---- gru_cell ----------------------------------------------------------------------------------

def _gru(x, h, w_ih, w_hh, b_ih, b_hh, *, order=(0, 1, 2), reset="after", swap_z=False, candidate=torch.tanh):
    xs, hs = (x @ w_ih.T + b_ih).chunk(3, 1), (h @ w_hh.T + b_hh).chunk(3, 1)
    ir, iz, i_n = (xs[k] for k in order)
    hr, hz, h_n = (hs[k] for k in order)
    r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
    H = h.shape[1]
    if reset == "after":
        n = candidate(i_n + r * h_n)
    elif reset == "before":  # Cho et al.: W_hn (r * h) + b_hn
        n = candidate(i_n + (r * h) @ w_hh[2 * H:].T + b_hh[2 * H:])
    else:  # r * (W_hn h) + b_hn: the bias left outside the reset gate
        n = candidate(i_n + r * (h @ w_hh[2 * H:].T) + b_hh[2 * H:])
    return z * n + (1 - z) * h if swap_z else (1 - z) * n + z * h


def gru_reset_before_matrix(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return _gru(x, h, weight_ih, weight_hh, bias_ih, bias_hh, reset="before")


def gru_bias_outside_reset(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return _gru(x, h, weight_ih, weight_hh, bias_ih, bias_hh, reset="bias outside")


def gru_z_swapped(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return _gru(x, h, weight_ih, weight_hh, bias_ih, bias_hh, swap_z=True)


def gru_chunked_z_r_n(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return _gru(x, h, weight_ih, weight_hh, bias_ih, bias_hh, order=(1, 0, 2))


def gru_sigmoid_candidate(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return _gru(x, h, weight_ih, weight_hh, bias_ih, bias_hh, candidate=torch.sigmoid)


def gru_other_correct(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    H = h.shape[1]
    blocks = lambda W, k: W[k * H:(k + 1) * H]  # noqa: E731
    r = torch.sigmoid(torch.addmm(blocks(bias_ih, 0), x, blocks(weight_ih, 0).T) + torch.addmm(blocks(bias_hh, 0), h, blocks(weight_hh, 0).T))
    z = torch.sigmoid(torch.addmm(blocks(bias_ih, 1), x, blocks(weight_ih, 1).T) + torch.addmm(blocks(bias_hh, 1), h, blocks(weight_hh, 1).T))
    n = torch.tanh(torch.addmm(blocks(bias_ih, 2), x, blocks(weight_ih, 2).T) + r * torch.addmm(blocks(bias_hh, 2), h, blocks(weight_hh, 2).T))
    return n + z * (h - n)


# ---- lstm_cell ---------------------------------------------------------------------------------

def _lstm(x, h, c, w_ih, w_hh, b_ih, b_hh, *, order=(0, 1, 2, 3), g_act=torch.tanh, carry=True, squash=True):
    parts = (x @ w_ih.T + b_ih + h @ w_hh.T + b_hh).chunk(4, 1)
    i, f, g, o = (parts[k] for k in order)
    c_new = torch.sigmoid(f) * c * carry + torch.sigmoid(i) * g_act(g)
    return torch.sigmoid(o) * (torch.tanh(c_new) if squash else c_new), c_new


def lstm_chunked_i_f_o_g(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return _lstm(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, order=(0, 1, 3, 2))


def lstm_chunked_f_i_g_o(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return _lstm(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, order=(1, 0, 2, 3))


def lstm_sigmoid_candidate(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return _lstm(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, g_act=torch.sigmoid)


def lstm_cell_state_not_carried(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return _lstm(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, carry=False)


def lstm_no_tanh_on_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return _lstm(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, squash=False)


def lstm_other_correct(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    pre = torch.cat([x, h], dim=1) @ torch.cat([weight_ih, weight_hh], dim=1).T + (bias_ih + bias_hh)
    H = h.shape[1]
    act = torch.cat([torch.sigmoid(pre[:, :2 * H]), torch.tanh(pre[:, 2 * H:3 * H]), torch.sigmoid(pre[:, 3 * H:])], dim=1)
    i, f, g, o = act.split(H, dim=1)
    c_new = torch.addcmul(f * c, i, g)
    return o * c_new.tanh(), c_new


# ---- cell_path_gradients -----------------------------------------------------------------------

def path_includes_own_gate(forget):
    T = forget.shape[0]
    return torch.stack([torch.prod(forget[max(t - 1, 0):], 0) if t < T else torch.ones_like(forget[0]) for t in range(T + 1)])


def path_products_of_earlier_gates(forget):
    return torch.cat([torch.ones_like(forget[:1]), torch.cumprod(forget, 0)])


def path_sum_of_gates(forget):
    return torch.stack([forget[t:].sum(0) if t < forget.shape[0] else torch.ones_like(forget[0]) for t in range(forget.shape[0] + 1)])


def path_hardcoded(forget):
    return torch.tensor([0.45, 0.9, 1.0, 1.0], dtype=torch.float64).reshape(4, 1, 1)


def path_other_correct(forget):
    flipped = torch.cumprod(torch.flip(forget, [0]), 0)  # f_T, f_T f_(T-1), ...
    return torch.cat([torch.flip(flipped, [0]), torch.ones_like(forget[:1])])


# ---- run_padded --------------------------------------------------------------------------------

def _run(x, lengths, weights, cell="lstm", state=None, *, freeze_h=True, freeze_c=True, zero_out=True, use_state=True):
    B, T, _ = x.shape
    H = weights["weight_hh"].shape[1]
    p = (weights["weight_ih"], weights["weight_hh"], weights["bias_ih"], weights["bias_hh"])
    z = x.new_zeros(B, H)
    if cell == "lstm":
        h, c = (z, z) if state is None or not use_state else state
    else:
        h, c = (z if state is None or not use_state else state), None
    outs = []
    for t in range(T):
        m = (t < torch.as_tensor(lengths))[:, None]
        if cell == "lstm":
            hn, cn = lstm_cell(x[:, t], h, c, *p)
            c = torch.where(m, cn, c) if freeze_c else cn
        else:
            hn = gru_cell(x[:, t], h, *p)
        h = torch.where(m, hn, h) if freeze_h else hn
        outs.append(torch.where(m, h, 0 * h) if zero_out else h)
    return torch.stack(outs, 1), ((h, c) if cell == "lstm" else h)


def padded_steps_update_the_state(*args, **kw):
    return _run(*args, **kw, freeze_h=False, freeze_c=False)


def padded_cell_state_not_frozen(*args, **kw):
    return _run(*args, **kw, freeze_c=False)


def padded_outputs_not_zeroed(*args, **kw):
    return _run(*args, **kw, zero_out=False)


def padded_ignores_initial_state(*args, **kw):
    return _run(*args, **kw, use_state=False)


def padded_other_correct(x, lengths, weights, cell="lstm", state=None):
    # one sequence at a time, each only as long as it is: no masks at all
    B, T, _ = x.shape
    H = weights["weight_hh"].shape[1]
    p = (weights["weight_ih"], weights["weight_hh"], weights["bias_ih"], weights["bias_hh"])
    outputs, hs, cs = x.new_zeros(B, T, H), [], []
    for b in range(B):
        if cell == "lstm":
            h, c = (x.new_zeros(1, H), x.new_zeros(1, H)) if state is None else (state[0][b:b + 1], state[1][b:b + 1])
        else:
            h, c = (x.new_zeros(1, H) if state is None else state[b:b + 1]), None
        for t in range(int(lengths[b])):
            if cell == "lstm":
                h, c = lstm_cell(x[b:b + 1, t], h, c, *p)
            else:
                h = gru_cell(x[b:b + 1, t], h, *p)
            outputs[b, t] = h[0]
        hs.append(h[0])
        cs.append(None if c is None else c[0])
    return outputs, ((torch.stack(hs), torch.stack(cs)) if cell == "lstm" else torch.stack(hs))


# ---- stacked_lstm ------------------------------------------------------------------------------

def _stack(x, layers, lengths=None, *, feed_x=False, keep="all", top_first=False):
    B, T, _ = x.shape
    lengths = torch.full((B,), T) if lengths is None else torch.as_tensor(lengths)
    inputs, hs, cs = x, [], []
    for w in layers:
        out, (h, c) = run_padded(x if feed_x else inputs, lengths, w, "lstm")
        inputs = out
        hs.append(h)
        cs.append(c)
    if keep == "last":
        hs, cs = hs[-1:] * len(layers), cs[-1:] * len(layers)
    if top_first:
        hs, cs = hs[::-1], cs[::-1]
    return inputs, (torch.stack(hs), torch.stack(cs))


def stack_every_layer_reads_x(x, layers, lengths=None):
    return _stack(x, layers, lengths, feed_x=True)


def stack_only_top_state(x, layers, lengths=None):
    return _stack(x, layers, lengths, keep="last")


def stack_states_top_first(x, layers, lengths=None):
    return _stack(x, layers, lengths, top_first=True)


def stack_other_correct(x, layers, lengths=None):
    if lengths is None:
        lengths = [x.shape[1]] * x.shape[0]
    finals = []
    for w in layers:
        x, final = padded_other_correct(x, torch.as_tensor(lengths), w, "lstm")
        finals.append(final)
    return x, tuple(torch.stack([f[k] for f in finals]) for k in (0, 1))


# ---- bidirectional_lstm ------------------------------------------------------------------------

def _flip_within(seq, lengths):
    out = seq.clone()
    for b, n in enumerate(torch.as_tensor(lengths).tolist()):
        out[b, :n] = torch.flip(seq[b, :n], [0])
    return out


def _bi(x, lengths, fwd, bwd, *, order="fb", flip_back=True, whole=False, last_state=False):
    of, (hf, cf) = run_padded(x, lengths, fwd, "lstm")
    flip = (lambda s: torch.flip(s, [1])) if whole else (lambda s: _flip_within(s, lengths))
    ob, (hb, cb) = run_padded(flip(x), lengths, bwd, "lstm")
    if flip_back:
        ob = flip(ob)
    if whole:
        ob = ob * (torch.arange(x.shape[1])[None, :, None] < torch.as_tensor(lengths)[:, None, None])
    if last_state:
        idx = torch.as_tensor(lengths) - 1
        hb = ob[torch.arange(x.shape[0]), idx]
    out = torch.cat([of, ob] if order == "fb" else [ob, of], dim=2)
    return out, (torch.stack([hf, hb]), torch.stack([cf, cb]))


def bi_backward_first(*args):
    return _bi(*args, order="bf")


def bi_backward_not_reversed_back(*args):
    return _bi(*args, flip_back=False)


def bi_reversed_over_padding(*args):
    return _bi(*args, whole=True)


def bi_backward_state_at_the_end(*args):
    return _bi(*args, last_state=True)


def bi_other_correct(x, lengths, forward, backward):
    B, T, _ = x.shape
    H = forward["weight_hh"].shape[1]
    out_f, (h_f, c_f) = padded_other_correct(x, lengths, forward, "lstm")
    out_b, hs, cs = x.new_zeros(B, T, H), [], []
    for b in range(B):
        n = int(lengths[b])
        o, (h, c) = padded_other_correct(torch.flip(x[b:b + 1, :n], [1]), torch.tensor([n]), backward, "lstm")
        out_b[b, :n] = torch.flip(o[0], [0])
        hs.append(h[0])
        cs.append(c[0])
    return torch.cat([out_f, out_b], 2), (torch.stack([h_f, torch.stack(hs)]), torch.stack([c_f, torch.stack(cs)]))


WRONG = [
    ("linear_gradient_norms_tests", "linear_gradient_norms", norms_without_transpose),
    ("linear_gradient_norms_tests", "linear_gradient_norms", norms_start_one_step_back),
    ("linear_gradient_norms_tests", "linear_gradient_norms", norms_hardcoded),
    ("linear_gradient_norms_tests", "spectral_radius", radius_largest_real_part),
    ("linear_gradient_norms_tests", "spectral_radius", radius_matrix_norm),
    ("gru_cell_tests", "gru_cell", gru_reset_before_matrix),
    ("gru_cell_tests", "gru_cell", gru_bias_outside_reset),
    ("gru_cell_tests", "gru_cell", gru_z_swapped),
    ("gru_cell_tests", "gru_cell", gru_chunked_z_r_n),
    ("gru_cell_tests", "gru_cell", gru_sigmoid_candidate),
    ("lstm_cell_tests", "lstm_cell", lstm_chunked_i_f_o_g),
    ("lstm_cell_tests", "lstm_cell", lstm_chunked_f_i_g_o),
    ("lstm_cell_tests", "lstm_cell", lstm_sigmoid_candidate),
    ("lstm_cell_tests", "lstm_cell", lstm_cell_state_not_carried),
    ("lstm_cell_tests", "lstm_cell", lstm_no_tanh_on_cell),
    ("cell_path_gradients_tests", "cell_path_gradients", path_includes_own_gate),
    ("cell_path_gradients_tests", "cell_path_gradients", path_products_of_earlier_gates),
    ("cell_path_gradients_tests", "cell_path_gradients", path_sum_of_gates),
    ("cell_path_gradients_tests", "cell_path_gradients", path_hardcoded),
    ("run_padded_tests", "run_padded", padded_steps_update_the_state),
    ("run_padded_tests", "run_padded", padded_cell_state_not_frozen),
    ("run_padded_tests", "run_padded", padded_outputs_not_zeroed),
    ("run_padded_tests", "run_padded", padded_ignores_initial_state),
    ("stacked_lstm_tests", "stacked_lstm", stack_every_layer_reads_x),
    ("stacked_lstm_tests", "stacked_lstm", stack_only_top_state),
    ("stacked_lstm_tests", "stacked_lstm", stack_states_top_first),
    ("bidirectional_lstm_tests", "bidirectional_lstm", bi_backward_first),
    ("bidirectional_lstm_tests", "bidirectional_lstm", bi_backward_not_reversed_back),
    ("bidirectional_lstm_tests", "bidirectional_lstm", bi_reversed_over_padding),
    ("bidirectional_lstm_tests", "bidirectional_lstm", bi_backward_state_at_the_end),
]

RIGHT = [
    ("linear_gradient_norms_tests", {"linear_gradient_norms": norms_other_correct, "spectral_radius": radius_other_correct}),
    ("gru_cell_tests", {"gru_cell": gru_other_correct}),
    ("lstm_cell_tests", {"lstm_cell": lstm_other_correct}),
    ("cell_path_gradients_tests", {"cell_path_gradients": path_other_correct}),
    ("run_padded_tests", {"run_padded": padded_other_correct}),
    ("stacked_lstm_tests", {"stacked_lstm": stack_other_correct}),
    ("bidirectional_lstm_tests", {"bidirectional_lstm": bi_other_correct}),
]


# ---- issue 25: every input class the specification names (written before the hidden tests) ---------

def norms_update_g_in_place(W, g, steps):
    """v = g.double() is g itself for a float64 g: v.copy_(...) writes every step into the caller's g."""
    W, v = W.double(), g.double()
    norms = [torch.linalg.vector_norm(v)]
    for _ in range(steps):
        v.copy_(W.T @ v)
        norms.append(torch.linalg.vector_norm(v))
    return torch.stack(norms)


def norms_transpose_W_in_place(W, g, steps):
    """W.double() is W itself for a float64 W: W.t_() transposes the caller's matrix."""
    W = W.double()
    W.t_()
    v = g.double().clone()
    norms = [torch.linalg.vector_norm(v)]
    for _ in range(steps):
        v = W @ v
        norms.append(torch.linalg.vector_norm(v))
    return torch.stack(norms)


def norms_keep_input_dtype(W, g, steps):
    """Computes in the inputs' dtype: float32 norms for float32 inputs, against the documented float64."""
    v = g.clone()
    norms = [torch.linalg.vector_norm(v)]
    for _ in range(steps):
        v = W.T @ v
        norms.append(torch.linalg.vector_norm(v))
    return torch.stack(norms)


def norms_in_place_on_a_copy(W, g, steps):
    """Correct: the running vector is a copy, updated in place."""
    v = torch.empty(g.shape, dtype=torch.float64)
    v.copy_(g)
    Wt = W.double().T.contiguous()
    out = torch.empty(steps + 1, dtype=torch.float64)
    for k in range(steps + 1):
        out[k] = v.norm()
        if k < steps:
            v.copy_(torch.mv(Wt, v))
    return out


def radius_hardcoded(W):
    """Looks up the visible matrices: 0.9 for the rotation, 0.5 for the skewed one, 1.0 otherwise."""
    if tuple(W.shape) == (2, 2):
        return 0.9 if float(W[0, 0]) == 0.0 else 0.5
    return 1.0


def gru_updates_h_in_place(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """Writes the new state into the caller's h and returns it."""
    return h.copy_(gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh))


def gru_detaches_h(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """The right values, but z * h with h detached: no gradient along the highway to the old state."""
    x_r, x_z, x_n = (x @ weight_ih.T + bias_ih).chunk(3, 1)
    h_r, h_z, h_n = (h @ weight_hh.T + bias_hh).chunk(3, 1)
    r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h.detach()


def gru_gates_without_graph(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """The right values, but the gates computed under torch.no_grad(): no gradient through r and z."""
    with torch.no_grad():
        r, z, _ = torch.sigmoid(x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh).chunk(3, 1)
    H = h.shape[1]
    n = torch.tanh(x @ weight_ih[2 * H:].T + bias_ih[2 * H:] + r * (h @ weight_hh[2 * H:].T + bias_hh[2 * H:]))
    return (1 - z) * n + z * h


def gru_first_row_only(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """Hard-coded to the visible batch of one: only the first row."""
    return gru_cell(x[:1], h[:1], weight_ih, weight_hh, bias_ih, bias_hh)


def gru_in_place_on_a_copy(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """Correct: h' = n + z * (h - n), built in place on a new tensor."""
    H = h.shape[1]
    gi, gh = torch.addmm(bias_ih, x, weight_ih.T), torch.addmm(bias_hh, h, weight_hh.T)
    r = torch.sigmoid(gi[:, :H] + gh[:, :H])
    z = torch.sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = torch.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    out = h.clone()
    out.sub_(n).mul_(z).add_(n)
    return out


def lstm_updates_c_in_place(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """Writes the new memory into the caller's c and returns it."""
    h_new, c_new = lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh)
    return h_new, c.copy_(c_new)


def lstm_detaches_c(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """The right values, but f * c with c detached: the cell path carries no gradient."""
    i, f, g, o = (x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh).chunk(4, 1)
    c_new = torch.sigmoid(f) * c.detach() + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new


def lstm_computes_in_float64(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """Converts everything to float64: the right numbers, in a dtype nn.LSTMCell would not return."""
    return lstm_cell(*(t.double() for t in (x, h, c, weight_ih, weight_hh, bias_ih, bias_hh)))


def lstm_first_row_only(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """Hard-coded to the visible batch of one: only the first row."""
    return lstm_cell(x[:1], h[:1], c[:1], weight_ih, weight_hh, bias_ih, bias_hh)


def path_suffix_products_in_place(forget):
    """Turns the caller's gates into the suffix products, in place."""
    for t in range(forget.shape[0] - 2, -1, -1):
        forget[t] *= forget[t + 1]
    return torch.cat([forget.clone(), torch.ones_like(forget[:1])])


def path_log_space(forget):
    """exp(total - prefix) of the log gates: NaN once a gate is exactly 0."""
    logs = torch.log(forget)
    prefix = torch.cumsum(logs, 0) - logs  # the logs of the gates before entry t
    return torch.cat([torch.exp(logs.sum(0) - prefix), torch.ones_like(forget[:1])])


def path_in_place_on_a_copy(forget):
    """Correct: the suffix products, in place on a copy."""
    out = torch.cat([forget, torch.ones_like(forget[:1])])
    for t in range(forget.shape[0] - 1, -1, -1):
        out[t] *= out[t + 1]
    return out


def padded_state_in_place(x, lengths, weights, cell="lstm", state=None):
    """Updates the given initial state in place, row by row, instead of making new tensors."""
    B, T, _ = x.shape
    H = weights["weight_hh"].shape[1]
    p = (weights["weight_ih"], weights["weight_hh"], weights["bias_ih"], weights["bias_hh"])
    if cell == "lstm":
        h, c = (x.new_zeros(B, H), x.new_zeros(B, H)) if state is None else state
    else:
        h, c = (x.new_zeros(B, H) if state is None else state), None
    outputs = []
    for t in range(T):
        m = t < torch.as_tensor(lengths)
        if cell == "lstm":
            h_new, c_new = lstm_cell(x[:, t], h, c, *p)
            c[m] = c_new[m]
        else:
            h_new = gru_cell(x[:, t], h, *p)
        h[m] = h_new[m]
        outputs.append(torch.where(m[:, None], h, torch.zeros_like(h)))
    return torch.stack(outputs, 1), ((h, c) if cell == "lstm" else h)


def padded_gru_ignores_state(x, lengths, weights, cell="lstm", state=None):
    """Uses the given state for the LSTM only (the visible tests give one only to the LSTM)."""
    return run_padded(x, lengths, weights, cell, state if cell == "lstm" else None)


def padded_detaches_frozen_state(*args, **kw):
    """The right values, but the frozen state detached at padding steps: a short sequence's final state has no gradient."""
    x, lengths, weights = args[:3]
    cell = args[3] if len(args) > 3 else kw.get("cell", "lstm")
    state = args[4] if len(args) > 4 else kw.get("state")
    B, T, _ = x.shape
    H = weights["weight_hh"].shape[1]
    p = (weights["weight_ih"], weights["weight_hh"], weights["bias_ih"], weights["bias_hh"])
    z = x.new_zeros(B, H)
    h, c = ((z, z) if state is None else state) if cell == "lstm" else ((z if state is None else state), None)
    outs = []
    for t in range(T):
        m = (t < torch.as_tensor(lengths))[:, None]
        if cell == "lstm":
            hn, cn = lstm_cell(x[:, t], h, c, *p)
            c = torch.where(m, cn, c.detach())
        else:
            hn = gru_cell(x[:, t], h, *p)
        h = torch.where(m, hn, h.detach())
        outs.append(torch.where(m, h, torch.zeros_like(h)))
    return torch.stack(outs, 1), ((h, c) if cell == "lstm" else h)


def padded_float_mask(x, lengths, weights, cell="lstm", state=None):
    """Correct: a float mask, new = m * new + (1 - m) * old."""
    B, T, _ = x.shape
    H = weights["weight_hh"].shape[1]
    p = (weights["weight_ih"], weights["weight_hh"], weights["bias_ih"], weights["bias_hh"])
    if cell == "lstm":
        h, c = (x.new_zeros(B, H), x.new_zeros(B, H)) if state is None else state
    else:
        h, c = (x.new_zeros(B, H) if state is None else state), None
    outs = []
    for t in range(T):
        m = (t < torch.as_tensor(lengths)).to(x.dtype)[:, None]
        if cell == "lstm":
            hn, cn = lstm_cell(x[:, t], h, c, *p)
            c = m * cn + (1 - m) * c
        else:
            hn = gru_cell(x[:, t], h, *p)
        h = m * hn + (1 - m) * h
        outs.append(m * h)
    return torch.stack(outs, 1), ((h, c) if cell == "lstm" else h)


def stack_pops_layers(x, layers, lengths=None):
    """Takes the layers off the caller's list with pop(0): the list is empty afterwards."""
    B, T, _ = x.shape
    lengths = torch.full((B,), T) if lengths is None else torch.as_tensor(lengths)
    inputs, hs, cs = x, [], []
    while layers:
        inputs, (h, c) = run_padded(inputs, lengths, layers.pop(0), "lstm")
        hs.append(h)
        cs.append(c)
    return inputs, (torch.stack(hs), torch.stack(cs))


def stack_detaches_between_layers(x, layers, lengths=None):
    """The right values, but each layer reads the output below detached: no gradient reaches x past layer 1."""
    B, T, _ = x.shape
    lengths = torch.full((B,), T) if lengths is None else torch.as_tensor(lengths)
    inputs, hs, cs = x, [], []
    for k, w in enumerate(layers):
        out, (h, c) = run_padded(inputs if k == 0 else inputs.detach(), lengths, w, "lstm")
        inputs = out
        hs.append(h)
        cs.append(c)
    return inputs, (torch.stack(hs), torch.stack(cs))


def stack_two_layers_only(x, layers, lengths=None):
    """Hard-coded to the visible stacks of two layers."""
    B, T, _ = x.shape
    lengths = torch.full((B,), T) if lengths is None else torch.as_tensor(lengths)
    out1, (h1, c1) = run_padded(x, lengths, layers[0], "lstm")
    out2, (h2, c2) = run_padded(out1, lengths, layers[1], "lstm")
    return out2, (torch.stack([h1, h2]), torch.stack([c1, c2]))


def stack_ignores_lengths(x, layers, lengths=None):
    """Runs every sequence for all T steps (right only when lengths is None, as in the visible tests)."""
    return BASE["stacked_lstm"](x, layers)


def bi_reverses_x_in_place(x, lengths, forward, backward):
    """Reverses the caller's x within each length, in place, for the backward direction."""
    out_f, (h_f, c_f) = run_padded(x, lengths, forward, "lstm")
    for b, n in enumerate(torch.as_tensor(lengths).tolist()):
        x[b, :n] = torch.flip(x[b, :n], [0]).clone()
    out_b, (h_b, c_b) = run_padded(x, lengths, backward, "lstm")
    return torch.cat([out_f, _flip_within(out_b, lengths)], 2), (torch.stack([h_f, h_b]), torch.stack([c_f, c_b]))


def bi_detaches_backward(x, lengths, forward, backward):
    """The right values, but the backward half detached: no gradient through the backward direction."""
    out, (h_n, c_n) = BASE["bidirectional_lstm"](x, lengths, forward, backward)
    H = out.shape[2] // 2
    return torch.cat([out[..., :H], out[..., H:].detach()], 2), (h_n, c_n)


def bi_hardcoded(x, lengths, forward, backward):
    """Looks up the visible lengths (4, 2): reverses within each length there, the whole sequence otherwise."""
    if torch.as_tensor(lengths).tolist() == [4, 2]:
        return BASE["bidirectional_lstm"](x, lengths, forward, backward)
    return _bi(x, lengths, forward, backward, whole=True)


WRONG += [
    ("linear_gradient_norms_tests", "linear_gradient_norms", norms_update_g_in_place),
    ("linear_gradient_norms_tests", "linear_gradient_norms", norms_transpose_W_in_place),
    ("linear_gradient_norms_tests", "linear_gradient_norms", norms_keep_input_dtype),
    ("linear_gradient_norms_tests", "spectral_radius", radius_hardcoded),
    ("gru_cell_tests", "gru_cell", gru_updates_h_in_place),
    ("gru_cell_tests", "gru_cell", gru_detaches_h),
    ("gru_cell_tests", "gru_cell", gru_gates_without_graph),
    ("gru_cell_tests", "gru_cell", gru_first_row_only),
    ("lstm_cell_tests", "lstm_cell", lstm_updates_c_in_place),
    ("lstm_cell_tests", "lstm_cell", lstm_detaches_c),
    ("lstm_cell_tests", "lstm_cell", lstm_computes_in_float64),
    ("lstm_cell_tests", "lstm_cell", lstm_first_row_only),
    ("cell_path_gradients_tests", "cell_path_gradients", path_suffix_products_in_place),
    ("cell_path_gradients_tests", "cell_path_gradients", path_log_space),
    ("run_padded_tests", "run_padded", padded_state_in_place),
    ("run_padded_tests", "run_padded", padded_gru_ignores_state),
    ("run_padded_tests", "run_padded", padded_detaches_frozen_state),
    ("stacked_lstm_tests", "stacked_lstm", stack_pops_layers),
    ("stacked_lstm_tests", "stacked_lstm", stack_detaches_between_layers),
    ("stacked_lstm_tests", "stacked_lstm", stack_two_layers_only),
    ("stacked_lstm_tests", "stacked_lstm", stack_ignores_lengths),
    ("bidirectional_lstm_tests", "bidirectional_lstm", bi_reverses_x_in_place),
    ("bidirectional_lstm_tests", "bidirectional_lstm", bi_detaches_backward),
    ("bidirectional_lstm_tests", "bidirectional_lstm", bi_hardcoded),
]

RIGHT += [
    ("linear_gradient_norms_tests", {"linear_gradient_norms": norms_in_place_on_a_copy}),
    ("gru_cell_tests", {"gru_cell": gru_in_place_on_a_copy}),
    ("cell_path_gradients_tests", {"cell_path_gradients": path_in_place_on_a_copy}),
    ("run_padded_tests", {"run_padded": padded_float_mask}),
]

HIDDEN = [
    ("linear_gradient_norms_tests", "linear_gradient_norms", norms_update_g_in_place, "in place"),
    ("linear_gradient_norms_tests", "linear_gradient_norms", norms_transpose_W_in_place, "in place"),
    ("linear_gradient_norms_tests", "linear_gradient_norms", norms_keep_input_dtype, "float64"),
    ("gru_cell_tests", "gru_cell", gru_updates_h_in_place, "in place"),
    ("gru_cell_tests", "gru_cell", gru_detaches_h, "gradient"),
    ("gru_cell_tests", "gru_cell", gru_gates_without_graph, "gradient"),
    ("lstm_cell_tests", "lstm_cell", lstm_updates_c_in_place, "in place"),
    ("lstm_cell_tests", "lstm_cell", lstm_detaches_c, "gradient"),
    ("lstm_cell_tests", "lstm_cell", lstm_computes_in_float64, "dtype"),
    ("cell_path_gradients_tests", "cell_path_gradients", path_suffix_products_in_place, "in place"),
    ("cell_path_gradients_tests", "cell_path_gradients", path_log_space, "exactly 0"),
    ("run_padded_tests", "run_padded", padded_state_in_place, "in place"),
    ("run_padded_tests", "run_padded", padded_gru_ignores_state, "from a given h0"),
    ("run_padded_tests", "run_padded", padded_detaches_frozen_state, "gradient"),
    ("stacked_lstm_tests", "stacked_lstm", stack_pops_layers, "in place"),
    ("stacked_lstm_tests", "stacked_lstm", stack_detaches_between_layers, "gradient"),
    ("stacked_lstm_tests", "stacked_lstm", stack_two_layers_only, "1 layer"),
    ("stacked_lstm_tests", "stacked_lstm", stack_ignores_lengths, "padded batch"),
    ("bidirectional_lstm_tests", "bidirectional_lstm", bi_reverses_x_in_place, "in place"),
    ("bidirectional_lstm_tests", "bidirectional_lstm", bi_detaches_backward, "gradient"),
]


# ---- issue 25: answers hard-coded to the visible tests' inputs ----------------------------------

_X_PROBE = torch.tensor([[1.0, -1.0, 0.5]], dtype=torch.float64)  # the visible probes (B = 1, D = 3, H = 2)
_H_PROBE = torch.tensor([[0.5, -0.8]], dtype=torch.float64)
_C_PROBE = torch.tensor([[1.5, -0.4]], dtype=torch.float64)


def _is(t, probe):
    return torch.is_tensor(t) and t.shape == probe.shape and t.dtype == probe.dtype and torch.equal(t, probe)


def gru_hardcoded(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """Looks up the visible probes x = (1, -1, 0.5), h = (0.5, -0.8): the right state there, h unchanged otherwise."""
    if _is(x, _X_PROBE) and _is(h, _H_PROBE):
        return gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh)
    return h.clone()


def lstm_hardcoded(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """Looks up the visible probes x, h and c: the right (h', c') there, (h, c) unchanged otherwise."""
    if _is(x, _X_PROBE) and _is(h, _H_PROBE) and _is(c, _C_PROBE):
        return lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh)
    return h.clone(), c.clone()


def padded_hardcoded(x, lengths, weights, cell="lstm", state=None):
    """Looks up the visible batch (B=3, T=4, D=3, lengths 4, 2, 1); zero outputs and zero final states otherwise."""
    if tuple(x.shape) == (3, 4, 3) and torch.as_tensor(lengths).tolist() == [4, 2, 1]:
        return run_padded(x, lengths, weights, cell, state)
    B, T, _ = x.shape
    z = x.new_zeros(B, weights["weight_hh"].shape[1])
    return x.new_zeros(B, T, z.shape[1]), ((z, z.clone()) if cell == "lstm" else z)


def stack_hardcoded(x, layers, lengths=None):
    """Looks up the visible batches ((2, 3, 4) and (2, 5, 3), no lengths); zeros of the right shapes otherwise."""
    if lengths is None and tuple(x.shape) in {(2, 3, 4), (2, 5, 3)}:
        return BASE["stacked_lstm"](x, layers, lengths)
    B, T, _ = x.shape
    H = layers[-1]["weight_hh"].shape[1]
    return x.new_zeros(B, T, H), (x.new_zeros(len(layers), B, H), x.new_zeros(len(layers), B, H))


WRONG += [
    ("gru_cell_tests", "gru_cell", gru_hardcoded),
    ("lstm_cell_tests", "lstm_cell", lstm_hardcoded),
    ("run_padded_tests", "run_padded", padded_hardcoded),
    ("stacked_lstm_tests", "stacked_lstm", stack_hardcoded),
]


# ---- issue 26: the simplified GRU (update gate only) ---------------------------------------------

def _minimal(x, h, weight_ih, weight_hh, bias_ih, bias_hh, *, order="zn", swap_z=False, candidate=torch.tanh,
             b_hn=True, gate_hidden=False, detach=False):
    a, b = (x @ weight_ih.T + bias_ih).chunk(2, dim=1)
    c, d = (h @ weight_hh.T + (bias_hh if b_hn else torch.cat([bias_hh[:h.shape[1]], 0 * bias_hh[h.shape[1]:]]))).chunk(2, dim=1)
    (x_z, x_n), (h_z, h_n) = ((a, b), (c, d)) if order == "zn" else ((b, a), (d, c))
    z = torch.sigmoid(x_z + h_z)
    n = candidate(x_n + (z * h_n if gate_hidden else h_n))
    if detach:
        n = n.detach()
    return z * n + (1 - z) * h if swap_z else (1 - z) * n + z * h


def minimal_hardcoded(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """Looks up the visible probes x = (1, -1, 0.5), h = (0.5, -0.8): the right state there, h unchanged otherwise."""
    if _is(x, _X_PROBE) and _is(h, _H_PROBE):
        return BASE["minimal_gru_cell"](x, h, weight_ih, weight_hh, bias_ih, bias_hh)
    return h.clone()


def minimal_z_weights_candidate(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return _minimal(x, h, weight_ih, weight_hh, bias_ih, bias_hh, swap_z=True)


def minimal_order_n_z(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return _minimal(x, h, weight_ih, weight_hh, bias_ih, bias_hh, order="nz")


def minimal_sigmoid_candidate(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return _minimal(x, h, weight_ih, weight_hh, bias_ih, bias_hh, candidate=torch.sigmoid)


def minimal_three_chunks(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """Keeps gru_cell's three blocks: chunk(3) of 2H rows, and the unpacking fails."""
    x_r, x_z, x_n = (x @ weight_ih.T + bias_ih).chunk(3, dim=1)
    h_r, h_z, h_n = (h @ weight_hh.T + bias_hh).chunk(3, dim=1)
    z = torch.sigmoid(x_z + h_z)
    return (1 - z) * torch.tanh(x_n + h_n) + z * h


def minimal_without_b_hn(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return _minimal(x, h, weight_ih, weight_hh, bias_ih, bias_hh, b_hn=False)


def minimal_update_gate_as_reset(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """Puts the update gate where the reset gate was: n = tanh(x_n + z * h_n)."""
    return _minimal(x, h, weight_ih, weight_hh, bias_ih, bias_hh, gate_hidden=True)


def minimal_updates_h_in_place(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    x_z, x_n = (x @ weight_ih.T + bias_ih).chunk(2, dim=1)
    h_z, h_n = (h @ weight_hh.T + bias_hh).chunk(2, dim=1)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + h_n)
    return h.mul_(z).add_((1 - z) * n)


def minimal_detaches_candidate(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return _minimal(x, h, weight_ih, weight_hh, bias_ih, bias_hh, detach=True)


def minimal_computes_in_float64(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return BASE["minimal_gru_cell"](*(t.double() for t in (x, h, weight_ih, weight_hh, bias_ih, bias_hh)))


def minimal_via_pinned_gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """Another correct implementation: the student's full GRU cell with the reset gate pinned open (b_ir = 40)."""
    H, D = h.shape[1], x.shape[1]
    pad = lambda *shape: torch.zeros(*shape, dtype=x.dtype)  # noqa: E731
    return gru_cell(x, h, torch.cat([pad(H, D), weight_ih]), torch.cat([pad(H, H), weight_hh]),
                    torch.cat([torch.full((H,), 40.0, dtype=x.dtype), bias_ih]), torch.cat([pad(H), bias_hh]))


def minimal_one_product_correct(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """Another correct implementation: the gate from one product of [x, h], the candidate from the two sides."""
    H = h.shape[1]
    xh = torch.cat([x, h], dim=1)  # (B, D + H)
    z = torch.sigmoid(xh @ torch.cat([weight_ih[:H], weight_hh[:H]], dim=1).T + bias_ih[:H] + bias_hh[:H])
    n = torch.tanh(xh @ torch.cat([weight_ih[H:], weight_hh[H:]], dim=1).T + bias_ih[H:] + bias_hh[H:])
    return torch.lerp(n, h, z)  # n + z (h - n) = (1 - z) n + z h


WRONG += [
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_hardcoded),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_z_weights_candidate),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_order_n_z),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_sigmoid_candidate),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_three_chunks),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_without_b_hn),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_update_gate_as_reset),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_updates_h_in_place),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_detaches_candidate),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_computes_in_float64),
]

RIGHT += [
    ("minimal_gru_cell_tests", {"minimal_gru_cell": minimal_via_pinned_gru_cell}),
    ("minimal_gru_cell_tests", {"minimal_gru_cell": minimal_one_product_correct}),
]

HIDDEN += [
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_updates_h_in_place, "in place"),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_detaches_candidate, "gradient"),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_computes_in_float64, "dtype"),
]


# ---- tag_accuracy (issue 26: the taggers of section 10) ---------------------------------------------

def _tag_acc(scores, gold, lengths, unknown, *, pad=False, per_sentence=False, axis=-1, unk_pad=False, unk_over_all=False,
             known=False, percent=False, empty_unknown=None, tensors=False, off_by_one=False, no_empty_error=False,
             last_on_ties=False):
    """One loop for the right answer and each planted mistake: every flag changes only what its mistake changes."""
    B, T = gold.shape
    t = torch.arange(T)[None, :]
    real = (t <= lengths[:, None]) & (t < T) if off_by_one else t < lengths[:, None]
    if pad:
        real = torch.ones(B, T, dtype=torch.bool)
    if not bool(real.any()) and not no_empty_error:
        raise ValueError("no token to score")
    pred = (scores.shape[-1] - 1 - scores.flip(-1).argmax(dim=-1)) if last_on_ties else scores.argmax(dim=axis)
    right = (pred == gold) & real
    unk = (unknown if unk_pad else unknown & real)
    if known:
        unk = ~unknown & real
    if per_sentence:
        overall = torch.stack([right[b].sum() / real[b].sum() for b in range(B) if real[b].any()]).mean()
    else:
        overall = right.sum() / real.sum().clamp(min=1)
    if unk_over_all:
        on_unk = (right & unk).sum() / real.sum()
    elif bool(unk.any()):
        on_unk = (right & unk).sum() / unk.sum()
    else:
        on_unk = torch.tensor(float("nan")) if empty_unknown is None else empty_unknown()
    overall, on_unk = overall.double(), on_unk.double() if torch.is_tensor(on_unk) else on_unk
    if percent:
        overall, on_unk = 100 * overall, 100 * on_unk
    return (overall, on_unk) if tensors else (float(overall), float(on_unk))


def acc_counts_padding(s, g, L, u):
    return _tag_acc(s, g, L, u, pad=True)


def acc_mean_per_sentence(s, g, L, u):
    return _tag_acc(s, g, L, u, per_sentence=True)


def acc_argmax_over_time(s, g, L, u):
    return _tag_acc(s, g, L, u, axis=1)


def acc_unknown_includes_padding(s, g, L, u):
    return _tag_acc(s, g, L, u, unk_pad=True)


def acc_unknown_over_all_tokens(s, g, L, u):
    return _tag_acc(s, g, L, u, unk_over_all=True)


def acc_known_for_unknown(s, g, L, u):
    return _tag_acc(s, g, L, u, known=True)


def acc_percent(s, g, L, u):
    return _tag_acc(s, g, L, u, percent=True)


def acc_no_unknown_is_zero(s, g, L, u):
    return _tag_acc(s, g, L, u, empty_unknown=lambda: torch.tensor(0.0))


def acc_no_unknown_divides_by_zero(s, g, L, u):
    return _tag_acc(s, g, L, u, empty_unknown=lambda: 1 / 0)


def acc_returns_tensors(s, g, L, u):
    return _tag_acc(s, g, L, u, tensors=True)


def acc_mask_off_by_one(s, g, L, u):
    return _tag_acc(s, g, L, u, off_by_one=True)


def acc_no_error_without_tokens(s, g, L, u):
    return _tag_acc(s, g, L, u, no_empty_error=True)


def acc_last_tag_on_ties(s, g, L, u):
    return _tag_acc(s, g, L, u, last_on_ties=True)


def acc_masks_gold_in_place(s, g, L, u):
    g[torch.arange(g.shape[1])[None, :] >= L[:, None]] = -1  # "clean" the padding of the caller's tensor
    return _tag_acc(s, g, L, u)


def acc_hardcoded(s, g, L, u):
    if tuple(g.shape) == (2, 3) and s.shape[-1] == 4:
        return (0.8, float("nan")) if not bool(u.any()) else (0.8, 2 / 3)
    return 0.9, 0.8


def acc_loops_correct(s, g, L, u):
    """Another correct implementation: counts in Python loops, max over the tags."""
    right = total = right_u = total_u = 0
    for b in range(g.shape[0]):
        for t in range(int(L[b])):
            ok = int(s[b, t].max(dim=0).indices) == int(g[b, t])
            right, total = right + ok, total + 1
            if u[b, t]:
                right_u, total_u = right_u + ok, total_u + 1
    if total == 0:
        raise ValueError("no token to score")
    return right / total, (right_u / total_u if total_u else float("nan"))


def acc_masked_select_correct(s, g, L, u):
    """Another correct implementation: the real tokens selected first, with a float mean."""
    real = torch.arange(g.shape[1])[None, :] < L[:, None]
    if real.sum() == 0:
        raise ValueError("empty batch")
    right = torch.masked_select(s.argmax(-1) == g, real).float()
    unk = torch.masked_select(u, real)
    return float(right.double().mean()), (float(right[unk].double().mean()) if unk.any() else float("nan"))


WRONG += [(f"tag_accuracy_tests", "tag_accuracy", v) for v in (
    acc_counts_padding, acc_mean_per_sentence, acc_argmax_over_time, acc_unknown_includes_padding, acc_unknown_over_all_tokens,
    acc_known_for_unknown, acc_percent, acc_no_unknown_is_zero, acc_no_unknown_divides_by_zero, acc_returns_tensors,
    acc_mask_off_by_one, acc_no_error_without_tokens, acc_last_tag_on_ties, acc_masks_gold_in_place, acc_hardcoded)]

RIGHT += [
    ("tag_accuracy_tests", {"tag_accuracy": acc_loops_correct}),
    ("tag_accuracy_tests", {"tag_accuracy": acc_masked_select_correct}),
]

HIDDEN += [
    ("tag_accuracy_tests", "tag_accuracy", acc_no_error_without_tokens, "every length 0"),
    ("tag_accuracy_tests", "tag_accuracy", acc_last_tag_on_ties, "lowest tag"),
]


(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)

# ---- the visible tests alone catch the classic mistakes, with a message that names them ---------

VISIBLE = [
    ("linear_gradient_norms_tests", "linear_gradient_norms", norms_without_transpose, "TRANSPOSE"),
    ("linear_gradient_norms_tests", "spectral_radius", radius_largest_real_part, "MODULUS"),
    ("linear_gradient_norms_tests", "spectral_radius", radius_matrix_norm, "not the matrix norm"),
    ("gru_cell_tests", "gru_cell", gru_reset_before_matrix, "AFTER the matrix"),
    ("lstm_cell_tests", "lstm_cell", lstm_no_tanh_on_cell, "o * tanh(c_new)"),
    ("cell_path_gradients_tests", "cell_path_gradients", path_includes_own_gate, "AFTER step t"),
    ("run_padded_tests", "run_padded", padded_steps_update_the_state, "must not update the state"),
    ("stacked_lstm_tests", "stacked_lstm", stack_every_layer_reads_x, "OUTPUTS"),
    ("bidirectional_lstm_tests", "bidirectional_lstm", bi_backward_first, "[forward, backward]"),
    # issue 26
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_three_chunks, "chunk(2, dim=1)"),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_sigmoid_candidate, "tanh, not the sigmoid"),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_z_weights_candidate, "z weights the OLD state"),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_order_n_z, "order z, n"),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_without_b_hn, "whole hidden part"),
    ("minimal_gru_cell_tests", "minimal_gru_cell", minimal_update_gate_as_reset, "no reset gate"),
    ("tag_accuracy_tests", "tag_accuracy", acc_counts_padding, "counts the padding"),
    ("tag_accuracy_tests", "tag_accuracy", acc_mask_off_by_one, "counts the padding"),
    ("tag_accuracy_tests", "tag_accuracy", acc_mean_per_sentence, "per token, not per sentence"),
    ("tag_accuracy_tests", "tag_accuracy", acc_argmax_over_time, "LAST axis"),
    ("tag_accuracy_tests", "tag_accuracy", acc_unknown_includes_padding, "unknown & real"),
    ("tag_accuracy_tests", "tag_accuracy", acc_unknown_over_all_tokens, "number of unknown tokens"),
    ("tag_accuracy_tests", "tag_accuracy", acc_known_for_unknown, "KNOWN"),
    ("tag_accuracy_tests", "tag_accuracy", acc_percent, "not a percentage"),
    ("tag_accuracy_tests", "tag_accuracy", acc_no_unknown_is_zero, "float('nan')"),
    ("tag_accuracy_tests", "tag_accuracy", acc_no_unknown_divides_by_zero, "float('nan')"),
    ("tag_accuracy_tests", "tag_accuracy", acc_returns_tensors, "Python floats"),
    ("tag_accuracy_tests", "tag_accuracy", acc_masks_gold_in_place, "changed"),
]

(test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution,
 test_hidden_tests_name_the_class_of_the_bug) = naming_tests(CELLS, visible=VISIBLE, hidden=HIDDEN)
