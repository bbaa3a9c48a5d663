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

from mistakes import GradedCells, mistake_tests, naming_tests

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

(test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution,
 test_hidden_tests_name_the_class_of_the_bug) = naming_tests(CELLS, visible=VISIBLE, hidden=HIDDEN)
