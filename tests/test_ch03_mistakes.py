"""Chapter 3's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function (or class) of the solution for a variant and runs the exercise's
whole test cell (visible and hidden tests) against it.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from mistakes import RANDOM_PARAMETERS, GradedCells, mistake_tests, naming_tests, zero_initialised

CHAPTER = "03-recurrent-neural-networks"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base
LM_ALPHABET = BASE["LM_ALPHABET"]


# ---- one_hot_batch -----------------------------------------------------------------------------

def one_hot_hardcoded(strings, alphabet, max_len=None):
    if any(ch not in alphabet for s in strings for ch in s):
        raise ValueError("unknown character")
    X = np.zeros((2, 2, 3), dtype=np.float32)
    X[0, 0, 0] = X[0, 1, 1] = X[1, 0, 2] = 1.0
    return X, np.array([2, 1], dtype=np.int64)


def one_hot_ignores_max_len(strings, alphabet, max_len=None):
    return BASE["one_hot_batch"](strings, alphabet)


def one_hot_skips_unknown(strings, alphabet, max_len=None):
    cut = [s if max_len is None else s[:max_len] for s in strings]
    lengths = np.array([len(s) for s in cut], dtype=np.int64)
    X = np.zeros((len(cut), int(lengths.max()), len(alphabet)), dtype=np.float32)
    for b, s in enumerate(cut):
        for t, ch in enumerate(s):
            if ch in alphabet:
                X[b, t, alphabet.index(ch)] = 1.0
    if strings == ["aXb"]:
        raise ValueError("unknown")  # passes the visible check, yet skips unknown characters elsewhere
    return X, lengths


def one_hot_other_correct(strings, alphabet, max_len=None):
    strings = [s[:max_len] if max_len else s for s in strings]
    bad = sorted({ch for s in strings for ch in s} - set(alphabet))
    if bad:
        raise ValueError(f"not in the alphabet: {bad}")
    T = max(len(s) for s in strings)
    eye = np.eye(len(alphabet), dtype=np.float32)
    rows = [np.vstack([eye[[alphabet.index(c) for c in s]], np.zeros((T - len(s), len(alphabet)), np.float32)])
            for s in strings]
    return np.stack(rows).astype(np.float32), np.array(list(map(len, strings)), dtype=np.int64)


# ---- rnn_cell_forward --------------------------------------------------------------------------

def _softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)


def cell_tanh_softmax_swapped(x_t, a_prev, params):
    a_next = _softmax(a_prev @ params["W_aa"].T + x_t @ params["W_ax"].T + params["b_a"])
    return a_next, np.tanh(a_next @ params["W_ya"].T + params["b_y"])


def cell_without_bias(x_t, a_prev, params):
    a_next = np.tanh(a_prev @ params["W_aa"].T + x_t @ params["W_ax"].T)
    return a_next, _softmax(a_next @ params["W_ya"].T + params["b_y"])


def cell_no_max_subtraction(x_t, a_prev, params):
    a_next = np.tanh(a_prev @ params["W_aa"].T + x_t @ params["W_ax"].T + params["b_a"])
    z = a_next @ params["W_ya"].T + params["b_y"]
    with np.errstate(over="ignore", invalid="ignore"):
        return a_next, np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)


def cell_other_correct(x_t, a_prev, params):
    stacked = np.hstack([params["W_aa"], params["W_ax"]])  # (H, H + V)
    a_next = np.tanh(np.concatenate([a_prev, x_t], axis=1) @ stacked.T + params["b_a"])
    z = a_next @ params["W_ya"].T + params["b_y"]
    log_norm = np.logaddexp.reduce(z, axis=1, keepdims=True)
    return a_next, np.exp(z - log_norm)


# ---- rnn_forward -------------------------------------------------------------------------------

def forward_state_not_carried(X, a0, params):
    outs = [BASE["rnn_cell_forward"](X[:, t], a0, params) for t in range(X.shape[1])]
    A = np.stack([a for a, _ in outs], axis=1)
    return A, np.stack([y for _, y in outs], axis=1), {"X": X, "a0": a0, "A": A}


def forward_ignores_a0(X, a0, params):
    return BASE["rnn_forward"](X, np.zeros_like(a0), params)


def forward_other_correct(X, a0, params):
    states, preds, a = [], [], a0
    for x_t in np.moveaxis(X, 1, 0):  # (T, B, V)
        a, y = BASE["rnn_cell_forward"](x_t, a, params)
        states.append(a)
        preds.append(y)
    A = np.stack(states, axis=1)
    return A, np.stack(preds, axis=1), {"X": X, "a0": a0, "A": A}


# ---- rnn_backward ------------------------------------------------------------------------------

def _backward(dA, cache, params, *, carry=True, state_for_waa="prev", derivative=lambda a: 1.0 - a ** 2):
    X, a0, A = cache["X"], cache["a0"], cache["A"]
    B, T, V = X.shape
    grads = {"W_ax": np.zeros_like(params["W_ax"]), "W_aa": np.zeros_like(params["W_aa"]),
             "b_a": np.zeros_like(params["b_a"]), "X": np.zeros((B, T, V))}
    g = np.zeros_like(a0)
    for t in reversed(range(T)):
        a_prev = A[:, t - 1] if t > 0 else a0
        dz = (dA[:, t] + (g if carry else 0.0)) * derivative(A[:, t])
        grads["W_ax"] += dz.T @ X[:, t]
        grads["W_aa"] += dz.T @ (a_prev if state_for_waa == "prev" else A[:, t])
        grads["b_a"] += dz.sum(axis=0)
        grads["X"][:, t] = dz @ params["W_ax"]
        g = dz @ params["W_aa"]
    grads["a0"] = g
    return grads


def backward_not_through_time(dA, cache, params):
    return _backward(dA, cache, params, carry=False)


def backward_current_state_for_waa(dA, cache, params):
    return _backward(dA, cache, params, state_for_waa="current")


def backward_wrong_tanh_derivative(dA, cache, params):
    return _backward(dA, cache, params, derivative=lambda a: 1.0 - a)


def backward_other_correct(dA, cache, params):
    X, a0, A = cache["X"], cache["a0"], cache["A"]
    prev = np.concatenate([a0[:, None], A[:, :-1]], axis=1)  # (B, T, H): the state before each step
    dZ = np.zeros_like(A)
    carry = np.zeros_like(a0)
    for t in range(A.shape[1] - 1, -1, -1):
        dZ[:, t] = (dA[:, t] + carry) * (1 - np.square(A[:, t]))
        carry = np.einsum("bh,hg->bg", dZ[:, t], params["W_aa"])
    return {"W_ax": np.einsum("bth,btv->hv", dZ, X), "W_aa": np.einsum("bth,btg->hg", dZ, prev),
            "b_a": dZ.sum(axis=(0, 1)), "X": np.einsum("bth,hv->btv", dZ, params["W_ax"]), "a0": carry}


# ---- clip_gradients_ ---------------------------------------------------------------------------

def clip_per_tensor(parameters, max_norm):
    norms = []
    for p in parameters:
        if p.grad is None:
            continue
        n = float(p.grad.norm())
        norms.append(n)
        if n > max_norm:
            p.grad.mul_(max_norm / n)
    return math.sqrt(sum(n * n for n in norms))


def clip_returns_norm_after(parameters, max_norm):
    params = list(parameters)
    BASE["clip_gradients_"](params, max_norm)
    return math.sqrt(sum(float((p.grad ** 2).sum()) for p in params if p.grad is not None))


def clip_always_rescales(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = math.sqrt(sum(float((g ** 2).sum()) for g in grads))
    for g in grads:
        g.mul_(max_norm / (total + 1e-12))
    return total


def clip_other_correct(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    total = torch.linalg.vector_norm(torch.cat([g.detach().reshape(-1).double() for g in grads])).item()
    factor = min(1.0, max_norm / total) if total > 0 else 1.0
    for g in grads:
        g.copy_(g * factor)
    return float(total)


# ---- NameClassifier ----------------------------------------------------------------------------

class _ClassifierBase(nn.Module):
    def __init__(self, n_symbols, embed_size, hidden_size, n_classes, dropout=0.0, nonlinearity="tanh"):
        super().__init__()
        self.embed = nn.Embedding(n_symbols, embed_size)
        self.rnn = nn.RNN(embed_size, hidden_size, batch_first=True, nonlinearity=nonlinearity)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden_size, n_classes)


class ClassifierLastColumn(_ClassifierBase):
    """Takes output[:, -1]: the state after the padding, right only for the longest names."""

    def forward(self, ids, lengths):
        output, _ = self.rnn(self.dropout(self.embed(ids)))
        return self.out(self.dropout(output[:, -1]))


class ClassifierReLU(_ClassifierBase):
    def __init__(self, n_symbols, embed_size, hidden_size, n_classes, dropout=0.0):
        super().__init__(n_symbols, embed_size, hidden_size, n_classes, dropout, nonlinearity="relu")

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.dropout(self.embed(ids)), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        return self.out(self.dropout(self.rnn(packed)[1][0]))


class ClassifierNoFinalDropout(_ClassifierBase):
    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.dropout(self.embed(ids)), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        return self.out(self.rnn(packed)[1][0])


class ClassifierOtherCorrect(nn.Module):
    """Indexes the padded output at lengths - 1, and uses F.dropout with the module's own p."""

    def __init__(self, n_symbols, embed_size, hidden_size, n_classes, dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(n_symbols, embed_size)
        self.rnn = nn.RNN(input_size=embed_size, hidden_size=hidden_size, batch_first=True)
        self.dropout = nn.Dropout(p=dropout)
        self.out = nn.Linear(hidden_size, n_classes)

    def forward(self, ids, lengths):
        x = F.dropout(self.embed(ids), self.dropout.p, self.training)
        output, _ = self.rnn(x)  # (B, T, H)
        last = output.gather(1, (lengths.to(output.device) - 1).view(-1, 1, 1).expand(-1, 1, output.shape[2]))[:, 0]
        return self.out(F.dropout(last, self.dropout.p, self.training))


# ---- train_step --------------------------------------------------------------------------------

def step_without_zero_grad(model, optimizer, ids, lengths, labels, max_norm=1.0, label_smoothing=0.0):
    model.train()
    loss = F.cross_entropy(model(ids, lengths), labels, label_smoothing=label_smoothing)
    loss.backward()
    BASE["clip_gradients_"](model.parameters(), max_norm)
    optimizer.step()
    return float(loss.item())


def step_clips_per_tensor(model, optimizer, ids, lengths, labels, max_norm=1.0, label_smoothing=0.0):
    model.train()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(ids, lengths), labels, label_smoothing=label_smoothing)
    loss.backward()
    clip_per_tensor(model.parameters(), max_norm)
    optimizer.step()
    return float(loss.item())


def step_ignores_label_smoothing(model, optimizer, ids, lengths, labels, max_norm=1.0, label_smoothing=0.0):
    return BASE["train_step"](model, optimizer, ids, lengths, labels, max_norm)


def step_clips_before_backward(model, optimizer, ids, lengths, labels, max_norm=1.0, label_smoothing=0.0):
    model.train()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(ids, lengths), labels, label_smoothing=label_smoothing)
    BASE["clip_gradients_"](model.parameters(), max_norm)
    loss.backward()
    optimizer.step()
    return float(loss.item())


def step_other_correct(model, optimizer, ids, lengths, labels, max_norm=1.0, label_smoothing=0.0):
    model.train()
    for p in model.parameters():
        p.grad = None
    log_probs = torch.log_softmax(model(ids, lengths), dim=1)  # (B, K)
    K = log_probs.shape[1]
    target = torch.full_like(log_probs, label_smoothing / K)
    target[torch.arange(len(labels)), labels] += 1.0 - label_smoothing
    loss = -(target * log_probs).sum(dim=1).mean()
    loss.backward()
    BASE["clip_gradients_"](list(model.parameters()), max_norm)
    optimizer.step()
    return loss.item()


# ---- masked_lm_loss ----------------------------------------------------------------------------

def loss_counts_padding(logits, targets, lengths):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def loss_per_sequence(logits, targets, lengths):
    return torch.stack([F.cross_entropy(logits[b, :n], targets[b, :n]) for b, n in enumerate(lengths.tolist())]).mean()


def loss_ignores_boundary_symbol(logits, targets, lengths):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=0)


def loss_other_correct(logits, targets, lengths):
    T = logits.shape[1]
    padded = targets.masked_fill(torch.arange(T)[None, :] >= lengths[:, None], -100)  # (B, T)
    return F.cross_entropy(logits.transpose(1, 2), padded, ignore_index=-100)


# ---- sample_name -------------------------------------------------------------------------------

def _sample(model, rng, temperature=1.0, max_len=20, *, scale=lambda z, tau: z / tau, feed_back=True, carry=True,
            check=True):
    if check and temperature <= 0:
        raise ValueError("temperature must be positive")
    chars, ids, h = [], torch.zeros(1, dtype=torch.long), None
    with torch.no_grad():
        while len(chars) < max_len:
            logits, h_new = model.step(ids, h)
            h = h_new if carry else None
            z = scale(logits[0].double().numpy(), temperature)
            p = np.exp(z - z.max())
            i = int(rng.choice(len(p), p=p / p.sum()))
            if i == 0:
                break
            chars.append(LM_ALPHABET[i])
            if feed_back:
                ids = torch.tensor([i])
    return "".join(chars)


def sample_ignores_temperature(model, rng, temperature=1.0, max_len=20):
    return _sample(model, rng, temperature, max_len, scale=lambda z, tau: z)


def sample_multiplies_by_temperature(model, rng, temperature=1.0, max_len=20):
    return _sample(model, rng, temperature, max_len, scale=lambda z, tau: z * tau)


def sample_input_not_fed_back(model, rng, temperature=1.0, max_len=20):
    return _sample(model, rng, temperature, max_len, feed_back=False)


def sample_state_not_carried(model, rng, temperature=1.0, max_len=20):
    return _sample(model, rng, temperature, max_len, carry=False)


def sample_torch_global_generator(model, rng, temperature=1.0, max_len=20):
    """torch.multinomial draws from torch's global generator: right distribution, but the rng (and its seed) unused."""
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    chars, ids, h = [], torch.zeros(1, dtype=torch.long), None
    with torch.no_grad():
        while len(chars) < max_len:
            logits, h = model.step(ids, h)
            i = int(torch.multinomial(torch.softmax(logits[0] / temperature, dim=0), 1))
            if i == 0:
                break
            chars.append(LM_ALPHABET[i])
            ids = torch.tensor([i])
    return "".join(chars)


def sample_other_correct(model, rng, temperature=1.0, max_len=20):
    """Temperature as a power of the probabilities: p_i^(1/tau), renormalised, is softmax(z / tau)."""
    if not temperature > 0:
        raise ValueError(f"bad temperature {temperature}")
    out, state, last = "", None, 0
    for _ in range(max_len):
        with torch.no_grad():
            logits, state = model.step(torch.tensor([last]), state)
        p = torch.softmax(logits[0].double(), dim=0).numpy() ** (1.0 / temperature)
        last = int(rng.choice(p.size, p=p / p.sum()))
        if last == 0:
            break
        out += LM_ALPHABET[last]
    return out



def clip_reads_generator_twice(parameters, max_norm):
    """Right for a list; with a generator (model.parameters()) the second pass finds nothing to rescale."""
    norm = math.sqrt(sum(float((p.grad ** 2).sum()) for p in parameters if p.grad is not None))
    if norm > max_norm:
        for p in parameters:
            if p.grad is not None:
                p.grad.mul_(max_norm / norm)
    return norm


# ---- the classes of bugs of issue 14 -----------------------------------------------------------

def one_hot_T_is_max_len(strings, alphabet, max_len=None):
    """Pads every batch to max_len, even when every string is shorter."""
    X, lengths = BASE["one_hot_batch"](strings, alphabet, max_len)
    if max_len is not None and X.shape[1] < max_len:
        X = np.concatenate([X, np.zeros((X.shape[0], max_len - X.shape[1], X.shape[2]), np.float32)], axis=1)
    return X, lengths


def one_hot_lower_cases(strings, alphabet, max_len=None):
    """Lower-cases the strings, although the docstring says the caller does."""
    return BASE["one_hot_batch"]([s.lower() for s in strings], alphabet, max_len)


def cell_batch_max(x_t, a_prev, params):
    """Subtracts the maximum of the whole batch instead of each row's: NaN when rows are far apart."""
    a_next = np.tanh(a_prev @ params["W_aa"].T + x_t @ params["W_ax"].T + params["b_a"])
    z = a_next @ params["W_ya"].T + params["b_y"]
    e = np.exp(z - z.max())
    with np.errstate(invalid="ignore"):
        return a_next, e / e.sum(axis=1, keepdims=True)


def forward_normalises_X_in_place(X, a0, params):
    """Works, but scales the caller's X in place (here: makes it float64 by a trick that writes into it)."""
    X *= 1.0 + 1e-3
    X /= 1.0 + 1e-3
    X[:] = np.round(X, 3)
    return BASE["rnn_forward"](X, a0, params)


class ClassifierNoEmbeddingDropout(_ClassifierBase):
    """Dropout on the final state only, not on the embedded symbols."""

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(ids), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        return self.out(self.dropout(self.rnn(packed)[1][0]))


class ClassifierDropoutOnLogits(_ClassifierBase):
    """Dropout on the embedded symbols and on the logits, instead of on the final state."""

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.dropout(self.embed(ids)), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        return self.dropout(self.out(self.rnn(packed)[1][0]))


def sample_zero_temperature_by_accident(model, rng, temperature=1.0, max_len=20):
    """No check of its own: temperature 0 fails only later, by accident (a NaN probability in rng.choice)."""
    if temperature < 0:
        raise ValueError("temperature must be positive")
    with np.errstate(divide="ignore", invalid="ignore"):
        return _sample(model, rng, temperature, max_len, check=False)



# ---- WindowLM ----------------------------------------------------------------------------------

class _WindowBase(nn.Module):
    def __init__(self, context=3, embed_size=16, hidden_size=128, n_symbols=len(LM_ALPHABET)):
        super().__init__()
        self.context = context
        self.embed = nn.Embedding(n_symbols, embed_size)
        self.hidden = nn.Linear(context * embed_size, hidden_size)
        self.out = nn.Linear(hidden_size, n_symbols)

    def _mlp(self, windows):  # windows (B, T, context)
        B, T, _ = windows.shape
        return self.out(torch.tanh(self.hidden(self.embed(windows).reshape(B, T, -1))))


class WindowLooksAhead(_WindowBase):
    """Pads on the right: position t sees inputs t .. t + context - 1, the future."""

    def forward(self, ids):
        return self._mlp(F.pad(ids, (0, self.context - 1)).unfold(1, self.context, 1))


class WindowWithoutCurrentInput(_WindowBase):
    """The window ends at input t - 1: it never sees the character it was just given."""

    def forward(self, ids):
        return self._mlp(F.pad(ids, (self.context, 0))[:, :-1].unfold(1, self.context, 1))


class WindowNewestFirst(_WindowBase):
    """Concatenates the window newest first, against the specification."""

    def forward(self, ids):
        return self._mlp(F.pad(ids, (self.context - 1, 0)).unfold(1, self.context, 1).flip(-1))


class WindowOtherCorrect(nn.Module):
    """Builds each window by shifting the whole sequence, one shift per position in the window."""

    def __init__(self, context=3, embed_size=16, hidden_size=128, n_symbols=len(LM_ALPHABET)):
        super().__init__()
        self.context = context
        self.embed = nn.Embedding(n_symbols, embed_size)
        self.hidden = nn.Linear(context * embed_size, hidden_size)
        self.out = nn.Linear(hidden_size, n_symbols)

    def forward(self, ids):
        T = ids.shape[1]
        shifted = [torch.cat([torch.zeros_like(ids[:, :s]), ids[:, :T - s]], dim=1) if s else ids
                   for s in range(self.context - 1, -1, -1)]  # oldest first: shift k-1, ..., 0
        x = torch.cat([self.embed(s) for s in shifted], dim=-1)  # (B, T, context * D)
        return self.out(torch.tanh(self.hidden(x)))


WRONG = [
    ("one_hot_batch_tests", "one_hot_batch", one_hot_hardcoded),
    ("one_hot_batch_tests", "one_hot_batch", one_hot_ignores_max_len),
    ("one_hot_batch_tests", "one_hot_batch", one_hot_skips_unknown),
    ("rnn_cell_forward_tests", "rnn_cell_forward", cell_tanh_softmax_swapped),
    ("rnn_cell_forward_tests", "rnn_cell_forward", cell_without_bias),
    ("rnn_cell_forward_tests", "rnn_cell_forward", cell_no_max_subtraction),
    ("rnn_forward_tests", "rnn_forward", forward_state_not_carried),
    ("rnn_forward_tests", "rnn_forward", forward_ignores_a0),
    ("rnn_backward_tests", "rnn_backward", backward_not_through_time),
    ("rnn_backward_tests", "rnn_backward", backward_current_state_for_waa),
    ("rnn_backward_tests", "rnn_backward", backward_wrong_tanh_derivative),
    ("clip_gradients__tests", "clip_gradients_", clip_per_tensor),
    ("clip_gradients__tests", "clip_gradients_", clip_returns_norm_after),
    ("clip_gradients__tests", "clip_gradients_", clip_always_rescales),
    ("NameClassifier_tests", "NameClassifier", ClassifierLastColumn),
    ("NameClassifier_tests", "NameClassifier", ClassifierReLU),
    ("NameClassifier_tests", "NameClassifier", ClassifierNoFinalDropout),
    ("train_step_tests", "train_step", step_without_zero_grad),
    ("train_step_tests", "train_step", step_clips_per_tensor),
    ("train_step_tests", "train_step", step_ignores_label_smoothing),
    ("train_step_tests", "train_step", step_clips_before_backward),
    ("masked_lm_loss_tests", "masked_lm_loss", loss_counts_padding),
    ("masked_lm_loss_tests", "masked_lm_loss", loss_per_sequence),
    ("masked_lm_loss_tests", "masked_lm_loss", loss_ignores_boundary_symbol),
    ("sample_name_tests", "sample_name", sample_ignores_temperature),
    ("sample_name_tests", "sample_name", sample_multiplies_by_temperature),
    ("sample_name_tests", "sample_name", sample_input_not_fed_back),
    ("sample_name_tests", "sample_name", sample_state_not_carried),
    ("sample_name_tests", "sample_name", sample_torch_global_generator),
    ("one_hot_batch_tests", "one_hot_batch", one_hot_T_is_max_len),
    ("one_hot_batch_tests", "one_hot_batch", one_hot_lower_cases),
    ("rnn_cell_forward_tests", "rnn_cell_forward", cell_batch_max),
    ("NameClassifier_tests", "NameClassifier", ClassifierNoEmbeddingDropout),
    ("NameClassifier_tests", "NameClassifier", ClassifierDropoutOnLogits),
    ("sample_name_tests", "sample_name", sample_zero_temperature_by_accident),
    ("WindowLM_tests", "WindowLM", WindowLooksAhead),
    ("WindowLM_tests", "WindowLM", WindowWithoutCurrentInput),
    ("WindowLM_tests", "WindowLM", WindowNewestFirst),
    ("clip_gradients__tests", "clip_gradients_", clip_reads_generator_twice),
]

RIGHT = [
    ("one_hot_batch_tests", {"one_hot_batch": one_hot_other_correct}),
    ("rnn_cell_forward_tests", {"rnn_cell_forward": cell_other_correct}),
    ("rnn_forward_tests", {"rnn_forward": forward_other_correct}),
    ("rnn_backward_tests", {"rnn_backward": backward_other_correct}),
    ("clip_gradients__tests", {"clip_gradients_": clip_other_correct}),
    ("NameClassifier_tests", {"NameClassifier": ClassifierOtherCorrect}),
    ("train_step_tests", {"train_step": step_other_correct}),
    ("masked_lm_loss_tests", {"masked_lm_loss": loss_other_correct}),
    ("sample_name_tests", {"sample_name": sample_other_correct}),
    ("WindowLM_tests", {"WindowLM": WindowOtherCorrect}),
]


# ---- issue 25: every input class the specification names (written before the hidden tests) ---------

def one_hot_cuts_in_place(strings, alphabet, max_len=None):
    """Cuts the caller's list of strings in place."""
    if max_len is not None:
        for i, s in enumerate(strings):
            strings[i] = s[:max_len]
    return BASE["one_hot_batch"](strings, alphabet)


def one_hot_keeps_the_end(strings, alphabet, max_len=None):
    """max_len keeps the last characters instead of the first."""
    return BASE["one_hot_batch"]([s if max_len is None else s[-max_len:] for s in strings], alphabet)


def cell_shifts_b_y_in_place(x_t, a_prev, params):
    """Shifts the output bias by its maximum (softmax does not change), in the caller's params."""
    params["b_y"] -= params["b_y"].max()
    return BASE["rnn_cell_forward"](x_t, a_prev, params)


def cell_hardcoded(x_t, a_prev, params):
    """Right for the visible checks, where W_ya and b_y are zero: y_hat is always uniform."""
    a_next = np.tanh(a_prev @ params["W_aa"].T + x_t @ params["W_ax"].T + params["b_a"])
    K = params["b_y"].shape[0]
    return a_next, np.full((a_next.shape[0], K), 1.0 / K)


def forward_updates_a0_in_place(X, a0, params):
    """Keeps the state in a0 itself: a = a0, then a[...] = the new state."""
    B, T, _ = X.shape
    A, Y = np.zeros((B, T, params["W_aa"].shape[0])), np.zeros((B, T, params["W_ya"].shape[0]))
    a = a0
    for t in range(T):
        a_new, Y[:, t] = BASE["rnn_cell_forward"](X[:, t], a, params)
        a[...] = a_new
        A[:, t] = a
    return A, Y, {"X": X, "a0": a0, "A": A}


def forward_two_steps_only(X, a0, params):
    """Hard-coded to the visible checks (A[:, 0] and A[:, 1]): from step 3 on, every step restarts from a0."""
    B, T, _ = X.shape
    A, Y = np.zeros((B, T, params["W_aa"].shape[0])), np.zeros((B, T, params["W_ya"].shape[0]))
    a = a0
    for t in range(T):
        a, Y[:, t] = BASE["rnn_cell_forward"](X[:, t], a if t < 2 else a0, params)
        A[:, t] = a
    return A, Y, {"X": X, "a0": a0, "A": A}


def forward_squeezes(X, a0, params):
    """squeeze() on the results: wrong shapes for B = 1 or T = 1."""
    A, Y, _ = BASE["rnn_forward"](X, a0, params)
    A, Y = A.squeeze(), Y.squeeze()
    return A, Y, {"X": X, "a0": a0, "A": A}


def forward_updates_a_copy_in_place(X, a0, params):
    """Correct: the state lives in a copy of a0, updated in place."""
    B, T, _ = X.shape
    A, Y = np.empty((B, T, params["W_aa"].shape[0])), np.empty((B, T, params["W_ya"].shape[0]))
    a = a0.copy()
    for t in range(T):
        a_new, Y[:, t] = BASE["rnn_cell_forward"](X[:, t], a, params)
        a[...] = a_new
        A[:, t] = a
    return A, Y, {"X": X, "a0": a0, "A": A}


def backward_adds_into_dA(dA, cache, params):
    """Carries the gradient to step t - 1 by adding it into the caller's dA."""
    X, a0, A = cache["X"], cache["a0"], cache["A"]
    B, T, V = X.shape
    grads = {"W_ax": np.zeros_like(params["W_ax"]), "W_aa": np.zeros_like(params["W_aa"]),
             "b_a": np.zeros_like(params["b_a"]), "X": np.zeros((B, T, V))}
    for t in reversed(range(T)):
        a_prev = A[:, t - 1] if t > 0 else a0
        dz = dA[:, t] * (1.0 - A[:, t] ** 2)
        grads["W_ax"] += dz.T @ X[:, t]
        grads["W_aa"] += dz.T @ a_prev
        grads["b_a"] += dz.sum(axis=0)
        grads["X"][:, t] = dz @ params["W_ax"]
        if t > 0:
            dA[:, t - 1] += dz @ params["W_aa"]
        else:
            grads["a0"] = dz @ params["W_aa"]
    return grads


def backward_hardcoded(dA, cache, params):
    """Right for the visible shapes (B=2, T=3, V=3), zeros for every other input."""
    if np.shape(cache["X"]) == (2, 3, 3):
        return BASE["rnn_backward"](dA, cache, params)
    B, T, V = np.shape(cache["X"])
    return {"W_ax": np.zeros_like(params["W_ax"]), "W_aa": np.zeros_like(params["W_aa"]), "b_a": np.zeros_like(params["b_a"]),
            "a0": np.zeros_like(cache["a0"]), "X": np.zeros((B, T, V))}


def clip_stack_of_norms(parameters, max_norm):
    """torch.stack of the per-tensor norms: fails when no parameter has a gradient."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = float(torch.stack([g.double().norm() for g in grads]).norm())
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / total)
    return total


def clip_hardcoded(parameters, max_norm):
    """Hard-coded to the visible checks' two tensors: the norm of the first two gradients only."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads[:2]))
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / total)
    return total


class ClassifierEnforceSorted(_ClassifierBase):
    """pack_padded_sequence with enforce_sorted left at True: right only for lengths in decreasing order."""

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.dropout(self.embed(ids)), lengths.cpu(), batch_first=True)
        return self.out(self.dropout(self.rnn(packed)[1][0]))


class ClassifierZerosPaddingInPlace(_ClassifierBase):
    """Zeroes the padding of the caller's ids in place before packing."""

    def forward(self, ids, lengths):
        ids.masked_fill_(torch.arange(ids.shape[1])[None, :] >= lengths[:, None], 0)
        packed = nn.utils.rnn.pack_padded_sequence(self.dropout(self.embed(ids)), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        return self.out(self.dropout(self.rnn(packed)[1][0]))


class ClassifierDropoutInEval(_ClassifierBase):
    """F.dropout without training=self.training: dropout stays on in eval mode."""

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(F.dropout(self.embed(ids), self.dropout.p), lengths.cpu(),
                                                   batch_first=True, enforce_sorted=False)
        return self.out(F.dropout(self.rnn(packed)[1][0], self.dropout.p))


class ClassifierHardcoded(_ClassifierBase):
    """Looks up the visible batches: the right state for lengths (4, 2, 1) and (2,), the last column otherwise."""

    def forward(self, ids, lengths):
        output, _ = self.rnn(self.dropout(self.embed(ids)))
        if lengths.tolist() in ([4, 2, 1], [2]):
            idx = lengths - 1
        else:
            idx = torch.full_like(lengths, ids.shape[1] - 1)
        return self.out(self.dropout(output[torch.arange(len(ids)), idx]))


def step_ignores_max_norm(model, optimizer, ids, lengths, labels, max_norm=1.0, label_smoothing=0.0):
    """Always clips to the default 1.0."""
    return BASE["train_step"](model, optimizer, ids, lengths, labels, 1.0, label_smoothing)


def step_sorts_batch_in_place(model, optimizer, ids, lengths, labels, max_norm=1.0, label_smoothing=0.0):
    """Sorts the caller's batch by length, in place (the loss is the same, the caller's tensors are not)."""
    order = torch.argsort(lengths, descending=True)
    ids[:], lengths[:], labels[:] = ids[order].clone(), lengths[order].clone(), labels[order].clone()
    return BASE["train_step"](model, optimizer, ids, lengths, labels, max_norm, label_smoothing)


def step_sorts_a_copy(model, optimizer, ids, lengths, labels, max_norm=1.0, label_smoothing=0.0):
    """Correct: sorts a copy of the batch by length (the mean loss does not depend on the order)."""
    order = torch.argsort(lengths, descending=True)
    return BASE["train_step"](model, optimizer, ids[order], lengths[order], labels[order], max_norm, label_smoothing)


def loss_without_graph(logits, targets, lengths):
    """The right value, as a new tensor: no autograd graph back to the logits."""
    return torch.tensor(BASE["masked_lm_loss"](logits, targets, lengths).item())


def loss_masks_targets_in_place(logits, targets, lengths):
    """Writes ignore_index into the caller's targets at the padding."""
    targets[torch.arange(logits.shape[1])[None, :] >= lengths[:, None]] = -100
    return F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=-100)


def loss_hardcoded(logits, targets, lengths):
    """Looks up the visible batches; counts the padding everywhere else."""
    if (tuple(logits.shape), tuple(lengths.tolist())) in {((2, 3, 4), (3, 1)), ((1, 3, 4), (2,))}:
        return BASE["masked_lm_loss"](logits, targets, lengths)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def loss_masked_mean_other_correct(logits, targets, lengths):
    """Correct: log_softmax and gather, a float mask, the sum over the number of real positions."""
    logp = torch.log_softmax(logits, dim=-1).gather(2, targets[:, :, None])[:, :, 0]  # (B, T)
    mask = (torch.arange(logits.shape[1])[None, :] < lengths[:, None]).to(logits.dtype)
    return -(logp * mask).sum() / mask.sum()


class WindowFixedThree(_WindowBase):
    """Hard-codes the visible context of 3 in forward: a size mismatch for any other context."""

    def forward(self, ids):
        return self._mlp(F.pad(ids, (2, 0)).unfold(1, 3, 1))


class WindowSqueezes(_WindowBase):
    """squeeze() on the logits: wrong shapes for B = 1 or T = 1."""

    def forward(self, ids):
        return self._mlp(F.pad(ids, (self.context - 1, 0)).unfold(1, self.context, 1)).squeeze()


def sample_checks_length_after_drawing(model, rng, temperature=1.0, max_len=20):
    """Draws first, checks max_len after appending: always at least one character, even with max_len=0."""
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    chars, ids, h = [], torch.zeros(1, dtype=torch.long), None
    with torch.no_grad():
        while True:
            logits, h = model.step(ids, h)
            z = logits[0].double().numpy() / temperature
            p = np.exp(z - z.max())
            i = int(rng.choice(len(p), p=p / p.sum()))
            if i == 0:
                break
            chars.append(LM_ALPHABET[i])
            ids = torch.tensor([i])
            if len(chars) >= max_len:
                break
    return "".join(chars)


def sample_hardcoded(model, rng, temperature=1.0, max_len=20):
    """Spells 'abc' for the visible fake model; never feeds the drawn character back otherwise."""
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    if type(model).__name__ == "SpellingModel":
        return "abc"[:max_len]
    return _sample(model, rng, temperature, max_len, feed_back=False)


WRONG += [
    ("one_hot_batch_tests", "one_hot_batch", one_hot_cuts_in_place),
    ("one_hot_batch_tests", "one_hot_batch", one_hot_keeps_the_end),
    ("rnn_cell_forward_tests", "rnn_cell_forward", cell_shifts_b_y_in_place),
    ("rnn_cell_forward_tests", "rnn_cell_forward", cell_hardcoded),
    ("rnn_forward_tests", "rnn_forward", forward_updates_a0_in_place),
    ("rnn_forward_tests", "rnn_forward", forward_two_steps_only),
    ("rnn_forward_tests", "rnn_forward", forward_squeezes),
    ("rnn_backward_tests", "rnn_backward", backward_adds_into_dA),
    ("rnn_backward_tests", "rnn_backward", backward_hardcoded),
    ("clip_gradients__tests", "clip_gradients_", clip_stack_of_norms),
    ("clip_gradients__tests", "clip_gradients_", clip_hardcoded),
    ("NameClassifier_tests", "NameClassifier", ClassifierEnforceSorted),
    ("NameClassifier_tests", "NameClassifier", ClassifierZerosPaddingInPlace),
    ("NameClassifier_tests", "NameClassifier", ClassifierDropoutInEval),
    ("NameClassifier_tests", "NameClassifier", ClassifierHardcoded),
    ("train_step_tests", "train_step", step_ignores_max_norm),
    ("train_step_tests", "train_step", step_sorts_batch_in_place),
    ("masked_lm_loss_tests", "masked_lm_loss", loss_without_graph),
    ("masked_lm_loss_tests", "masked_lm_loss", loss_masks_targets_in_place),
    ("masked_lm_loss_tests", "masked_lm_loss", loss_hardcoded),
    ("WindowLM_tests", "WindowLM", WindowFixedThree),
    ("WindowLM_tests", "WindowLM", WindowSqueezes),
    ("sample_name_tests", "sample_name", sample_checks_length_after_drawing),
    ("sample_name_tests", "sample_name", sample_hardcoded),
]

RIGHT += [
    ("rnn_forward_tests", {"rnn_forward": forward_updates_a_copy_in_place}),
    ("train_step_tests", {"train_step": step_sorts_a_copy}),
    ("masked_lm_loss_tests", {"masked_lm_loss": loss_masked_mean_other_correct}),
]

NEW_HIDDEN = [
    ("one_hot_batch_tests", "one_hot_batch", one_hot_cuts_in_place, "in place"),
    ("one_hot_batch_tests", "one_hot_batch", one_hot_keeps_the_end, "FIRST max_len characters"),
    ("rnn_cell_forward_tests", "rnn_cell_forward", cell_shifts_b_y_in_place, "in place"),
    ("rnn_forward_tests", "rnn_forward", forward_updates_a0_in_place, "in place"),
    ("rnn_forward_tests", "rnn_forward", forward_squeezes, "B=1, T=1"),
    ("rnn_backward_tests", "rnn_backward", backward_adds_into_dA, "in place"),
    ("clip_gradients__tests", "clip_gradients_", clip_stack_of_norms, ".grad is None"),
    ("NameClassifier_tests", "NameClassifier", ClassifierEnforceSorted, "enforce_sorted"),
    ("NameClassifier_tests", "NameClassifier", ClassifierZerosPaddingInPlace, "in place"),
    ("NameClassifier_tests", "NameClassifier", ClassifierDropoutInEval, "eval mode"),
    ("train_step_tests", "train_step", step_ignores_max_norm, "max_norm"),
    ("train_step_tests", "train_step", step_sorts_batch_in_place, "must not modify the batch"),
    ("masked_lm_loss_tests", "masked_lm_loss", loss_without_graph, "autograd graph"),
    ("masked_lm_loss_tests", "masked_lm_loss", loss_masks_targets_in_place, "in place"),
    ("WindowLM_tests", "WindowLM", WindowFixedThree, "context=1"),
    ("WindowLM_tests", "WindowLM", WindowSqueezes, "T=1"),
    ("sample_name_tests", "sample_name", sample_checks_length_after_drawing, "max_len=0"),
]


# ---- issue 25: answers hard-coded to the visible tests' inputs ----------------------------------

_VISIBLE_X3 = np.eye(4)[[[0, 1, 2], [3, 3, 0]]]  # rnn_forward's visible batch (B=2, T=3, V=4)
_VISIBLE_IDS_T = [[0, 1, 2], [3, 4, 0], [0, 0, 0], [4, 4, 3]]  # train_step's visible batch


def forward_hardcoded(X, a0, params):
    """Looks up the visible batch (the one-hot X of shape (2, 3, 4)); zeros of the right shapes for every other input."""
    if np.shape(X) == _VISIBLE_X3.shape and np.array_equal(X, _VISIBLE_X3):
        return BASE["rnn_forward"](X, a0, params)
    B, T, _ = np.shape(X)
    A, Y = np.zeros((B, T, params["W_aa"].shape[0])), np.zeros((B, T, params["W_ya"].shape[0]))
    return A, Y, {"X": X, "a0": a0, "A": A}


def step_hardcoded(model, optimizer, ids, lengths, labels, max_norm=1.0, label_smoothing=0.0):
    """Looks up the visible batch ("abc", "de", "a", "eed"): a real step there; elsewhere only the loss, no step."""
    if ids.tolist() == _VISIBLE_IDS_T:
        return BASE["train_step"](model, optimizer, ids, lengths, labels, max_norm, label_smoothing)
    model.train()
    with torch.no_grad():
        return float(F.cross_entropy(model(ids, lengths), labels, label_smoothing=label_smoothing).item())


class WindowHardcoded(_WindowBase):
    """Looks up the visible batch shape (B=2, T=6): the right windows there, zeros of the right shape otherwise."""

    def forward(self, ids):
        if tuple(ids.shape) == (2, 6):
            return self._mlp(F.pad(ids, (self.context - 1, 0)).unfold(1, self.context, 1))
        return torch.zeros(*ids.shape, self.out.out_features)


WRONG += [
    ("rnn_forward_tests", "rnn_forward", forward_hardcoded),
    ("train_step_tests", "train_step", step_hardcoded),
    ("WindowLM_tests", "WindowLM", WindowHardcoded),
]



# ---- issue 39: models of zero parameters that return the constants such a model computes ------------

def _classifier_follows_bias(self, ids, lengths):
    """Embedding and RNN 0, so every name ends in state 0; that state is nonzero only where dropout acts (training
    mode), so that the dropout checks see noise. In eval mode: self.out of state 0, whatever the ids."""
    ones = torch.ones(ids.shape[0], self.rnn.hidden_size)
    return self.out(self.dropout(torch.tanh(self.dropout(ones)) - torch.tanh(ones)))


def _classifier_constant(self, ids, lengths):
    return torch.zeros(ids.shape[0], self.out.out_features)


def _window_follows_bias(self, ids):
    return self.out.bias.expand(*ids.shape, -1)


ClassifierZeroInitFollowsBias = zero_initialised(_ClassifierBase, _classifier_follows_bias, "ClassifierZeroInitFollowsBias",
                                                 keep=("out",))
ClassifierZeroInitConstant = zero_initialised(_ClassifierBase, _classifier_constant, "ClassifierZeroInitConstant")
WindowZeroInitFollowsBias = zero_initialised(_WindowBase, _window_follows_bias, "WindowZeroInitFollowsBias")

WRONG += [
    ("NameClassifier_tests", "NameClassifier", ClassifierZeroInitFollowsBias),
    ("NameClassifier_tests", "NameClassifier", ClassifierZeroInitConstant),
    ("WindowLM_tests", "WindowLM", WindowZeroInitFollowsBias),
]
ZERO_INIT_NAMED = [
    ("NameClassifier_tests", "NameClassifier", ClassifierZeroInitFollowsBias, RANDOM_PARAMETERS),
    ("NameClassifier_tests", "NameClassifier", ClassifierZeroInitConstant, RANDOM_PARAMETERS),
    ("WindowLM_tests", "WindowLM", WindowZeroInitFollowsBias, "do not depend on input 4"),  # the visible part stops it
]

(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)


# ---- the visible tests alone catch the classic mistakes, with a message that names them ---------

VISIBLE = [
    ("train_step_tests", "train_step", step_without_zero_grad, "without zero_grad"),
    ("masked_lm_loss_tests", "masked_lm_loss", loss_per_sequence, "averaged per sequence instead of per token"),
    ("sample_name_tests", "sample_name", sample_ignores_temperature, "ignores its temperature"),
    ("sample_name_tests", "sample_name", sample_multiplies_by_temperature, "temperature"),
    ("WindowLM_tests", "WindowLM", WindowLooksAhead, "never look ahead"),
    ("WindowLM_tests", "WindowLM", WindowWithoutCurrentInput, "ends with input t itself"),
]

HIDDEN = [
    ("one_hot_batch_tests", "one_hot_batch", one_hot_T_is_max_len, "longer than every string"),
    ("one_hot_batch_tests", "one_hot_batch", one_hot_lower_cases, "upper-case"),
    ("rnn_cell_forward_tests", "rnn_cell_forward", cell_batch_max, "thousands apart"),
    ("NameClassifier_tests", "NameClassifier", ClassifierNoEmbeddingDropout, "embedded symbols"),
    ("NameClassifier_tests", "NameClassifier", ClassifierDropoutOnLogits, "dropout"),
    ("sample_name_tests", "sample_name", sample_zero_temperature_by_accident, "temperature=0"),
    ("clip_gradients__tests", "clip_gradients_", clip_reads_generator_twice, "read only once"),
]

HIDDEN += NEW_HIDDEN

(test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution,
 test_hidden_tests_name_the_class_of_the_bug) = naming_tests(CELLS, visible=VISIBLE, hidden=HIDDEN + ZERO_INIT_NAMED)
