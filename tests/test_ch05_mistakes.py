"""Chapter 5's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function (or class) of the solution for a variant and runs the exercise's
whole test cell (visible and hidden tests) against it.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from mistakes import RANDOM_PARAMETERS, GradedCells, mistake_tests, naming_tests, zero_initialised

CHAPTER = "05-word-embeddings"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base
cosine = BASE["cosine_similarity"]


# ---- embedding_lookup ----------------------------------------------------------------------------

def lookup_hardcoded(E, ids):
    key = tuple(np.ravel(ids).tolist())
    if any(i < 0 or i >= 3 for i in key):
        raise ValueError("out of range")
    rows = {0: [1.0, 2.0], 1: [3.0, 4.0], 2: [5.0, 6.0]}
    return np.array([rows[i] for i in key]).reshape(np.shape(ids) + (2,))


def lookup_negative_ids_wrap(E, ids):
    return np.asarray(E)[np.asarray(ids)]


def lookup_columns(E, ids):
    ids = np.asarray(ids)
    if ids.min() < 0:
        raise ValueError("negative")
    return np.asarray(E).T[ids]


def lookup_only_minus_one(E, ids):
    ids = np.asarray(ids)
    if np.any(ids == -1):
        raise ValueError("-1")
    return np.asarray(E)[ids]


def lookup_other_correct(E, ids):
    ids = np.array(ids, dtype=np.int64)
    V = len(E)
    if not ((0 <= ids) & (ids < V)).all():
        raise ValueError("id out of range")
    return np.take(E, ids.reshape(-1), axis=0).reshape(ids.shape + (E.shape[1],))


# ---- embedding_grad (graded with embedding_lookup: one exercise since issue 40) ------------------

def grad_last_write_wins(ids, grad_out, V):
    """dE[ids] += G: numpy's fancy-index assignment keeps one write per repeated id instead of adding them."""
    ids, grad_out = np.asarray(ids).reshape(-1), np.asarray(grad_out)
    dE = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    dE[ids] += grad_out.reshape(len(ids), -1)
    return dE


def grad_loop_over_first_axis(ids, grad_out, V):
    """A loop over the first axis: right for 1-D ids, a fancy-index write (last one wins) for each row of 2-D ids."""
    grad_out = np.asarray(grad_out)
    dE = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    for j, g in zip(np.atleast_1d(ids), np.reshape(grad_out, (-1,) + grad_out.shape[np.ndim(ids):])[:len(np.atleast_1d(ids))]):
        dE[j] += g
    return dE


def grad_hardcoded(ids, grad_out, V):
    if np.asarray(ids).tolist() == [2, 0, 2]:
        return np.array([[2.0, 0.0], [0.0, 0.0], [1.5, 0.0]])
    ids, grad_out = np.asarray(ids).reshape(-1), np.asarray(grad_out)
    return np.eye(V)[ids].T @ grad_out.reshape(len(ids), -1)


def grad_float64(ids, grad_out, V):
    """The one-hot product, left in float64 whatever the gradients' dtype."""
    ids, grad_out = np.asarray(ids).reshape(-1), np.asarray(grad_out)
    return np.eye(V)[ids].T @ grad_out.reshape(len(ids), -1).astype(np.float64)


def grad_empty_ids_crash(ids, grad_out, V):
    """Takes D from the gradients of the first position, which empty ids do not have."""
    ids, grad_out = np.asarray(ids).reshape(-1), np.asarray(grad_out)
    dE = np.zeros((V, len(grad_out.reshape(len(ids), -1)[0])), dtype=grad_out.dtype)
    np.add.at(dE, ids, grad_out.reshape(len(ids), -1))
    return dE


def grad_other_correct(ids, grad_out, V):
    ids, grad_out = np.asarray(ids).reshape(-1), np.asarray(grad_out)
    flat = grad_out.reshape(len(ids), grad_out.shape[-1])
    return np.stack([np.bincount(ids, weights=flat[:, d], minlength=V) for d in range(flat.shape[1])], axis=1).astype(grad_out.dtype)


def grad_torch_other_correct(ids, grad_out, V):
    ids, grad_out = torch.as_tensor(np.asarray(ids)).reshape(-1), torch.as_tensor(np.asarray(grad_out))
    flat = grad_out.reshape(len(ids), grad_out.shape[-1])
    return torch.zeros(V, flat.shape[1], dtype=flat.dtype).index_add_(0, ids, flat).numpy()


# ---- cosine_similarity ---------------------------------------------------------------------------

def cosine_hardcoded(M, v):
    M = np.asarray(M, dtype=float)
    known = {(4, 2): [1.0, 0.0, -1.0, 1 / np.sqrt(2)], (1, 2): [1.0], (2, 2): [1 / np.sqrt(2)] * 2}
    if not np.any(v):
        return np.zeros(len(M))
    if M.shape == (2, 2) and not M[0].any():
        return np.array([0.0, 1.0])
    if M.shape in known and M.shape != (1, 50):
        return np.array(known[M.shape])
    return np.asarray(M @ v / (np.linalg.norm(M, axis=1) * np.linalg.norm(v)), dtype=float)


def cosine_one_side(M, v):
    M = np.asarray(M, dtype=np.float64)
    norms = np.linalg.norm(M, axis=1)
    return np.divide(M @ v, norms, out=np.zeros(len(M)), where=norms > 0)


def cosine_nan_for_zero(M, v):
    M, v = np.asarray(M, dtype=np.float64), np.asarray(v, dtype=np.float64)
    return (M @ v) / (np.linalg.norm(M, axis=1) * np.linalg.norm(v))


def cosine_in_place(M, v):
    norms = np.linalg.norm(M, axis=1, keepdims=True)
    M /= np.where(norms > 0, norms, 1.0)  # normalises the caller's matrix
    vn = np.linalg.norm(v)
    return np.asarray(M @ v / vn if vn > 0 else np.zeros(len(M)), dtype=np.float64)


def cosine_float32(M, v):
    norms = np.linalg.norm(M, axis=1) * np.linalg.norm(v)
    return np.divide(M @ v, norms, out=np.zeros(len(M), dtype=np.asarray(M).dtype), where=norms > 0)


def cosine_other_correct(M, v):
    M = np.array(M, dtype=np.float64)
    v = np.array(v, dtype=np.float64)
    row = np.sqrt(np.einsum("nd,nd->n", M, M))
    row[row == 0] = 1.0  # the dot product is 0 there anyway
    vn = np.sqrt(v @ v) or 1.0
    return np.einsum("nd,d->n", M / row[:, None], v / vn)


# ---- nearest_neighbours --------------------------------------------------------------------------

def neighbours_include_self(word, words, E, k=10):
    i = words.index(word)
    s = cosine(E, E[i])
    return [(words[j], float(s[j])) for j in np.argsort(-s, kind="stable")[:k]]


def neighbours_ascending(word, words, E, k=10):
    i = words.index(word)
    s = cosine(E, E[i])
    s[i] = np.inf
    return [(words[j], float(s[j])) for j in np.argsort(s, kind="stable")[:k]]


def neighbours_ties_reversed(word, words, E, k=10):
    if word not in words:
        raise KeyError(word)
    i = words.index(word)
    s = cosine(E, E[i])
    order = sorted((j for j in range(len(words)) if j != i), key=lambda j: (-round(s[j], 12), -j))
    return [(words[j], float(s[j])) for j in order[:k]]


def neighbours_hardcoded(word, words, E, k=10):
    if word not in words:
        raise KeyError(word)
    if word == "cat":
        return [("kitten", float(cosine(E[[3]], E[0])[0])), ("dog", float(cosine(E[[1]], E[0])[0]))][:k]
    return [(w, 0.0) for w in words if w != word][:k]


def neighbours_other_correct(word, words, E, k=10):
    try:
        q = words.index(word)
    except ValueError:
        raise KeyError(word) from None
    s = cosine(E, E[q])
    candidates = [(-s[j], j) for j in range(len(words)) if j != q]
    candidates.sort()
    return [(words[j], float(-neg)) for neg, j in candidates[:k]]


# ---- solve_analogy -------------------------------------------------------------------------------

def _unit(E):
    E = np.asarray(E, dtype=np.float64)
    n = np.linalg.norm(E, axis=1, keepdims=True)
    return np.divide(E, n, out=np.zeros_like(E), where=n > 0)


def analogy_keeps_inputs(a, b, c, words, E):
    idx = {w: i for i, w in enumerate(words)}
    U = _unit(E)
    return words[int(np.argmax(cosine(U, U[idx[b]] - U[idx[a]] + U[idx[c]])))]


def analogy_unnormalised(a, b, c, words, E):
    idx = {w: i for i, w in enumerate(words)}
    E = np.asarray(E, dtype=np.float64)
    s = cosine(E, E[idx[b]] - E[idx[a]] + E[idx[c]])
    s[[idx[a], idx[b], idx[c]]] = -np.inf
    return words[int(np.argmax(s))]


def analogy_wrong_direction(a, b, c, words, E):
    return BASE["solve_analogy"](b, a, c, words, E)


def analogy_hardcoded(a, b, c, words, E):
    if any(w not in words for w in (a, b, c)):
        raise KeyError(a)
    return {("man", "woman", "king"): "queen", ("woman", "man", "queen"): "king", ("a", "b", "c"): "d",
            ("italy", "italian", "spain"): "spanish", ("man", "woman", "boy"): "girl",
            ("small", "smaller", "large"): "larger"}.get((a, b, c), words[0])


def analogy_other_correct(a, b, c, words, E):
    for w in (a, b, c):
        if w not in words:
            raise KeyError(w)
    U = _unit(E)
    ia, ib, ic = words.index(a), words.index(b), words.index(c)
    t = U[ib] - U[ia] + U[ic]
    scores = U @ t  # the norm of t is the same for every candidate: the argmax of the dot product is the same
    best, best_score = None, -np.inf
    for i, s in enumerate(scores):
        if i not in (ia, ib, ic) and s > best_score:
            best, best_score = i, s
    return words[best]


# ---- skipgram_pairs ------------------------------------------------------------------------------

def pairs_cross_sentences(sentences, window):
    stream = [w for s in sentences for w in s]
    return BASE["skipgram_pairs"]([stream], window)


def pairs_window_off_by_one(sentences, window):
    out = []
    for s in sentences:
        s = list(s)
        for i in range(len(s)):
            for j in range(max(0, i - window), min(len(s), i + window)):
                if j != i:
                    out.append((s[i], s[j]))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def pairs_with_self(sentences, window):
    out = []
    for s in sentences:
        s = list(s)
        for i in range(len(s)):
            for j in range(max(0, i - window), min(len(s), i + window + 1)):
                out.append((s[i], s[j]))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def pairs_hardcoded(sentences, window):
    table = {1: [(5, 6), (6, 5), (6, 7), (7, 6), (8, 9), (9, 8)],
             2: [(5, 6), (6, 5), (6, 7), (7, 6), (8, 9), (9, 8), (5, 7), (7, 5)]}
    if [list(s) for s in sentences] == [[5, 6, 7], [8, 9]]:
        return np.array(table[window], dtype=np.int64)
    if [list(s) for s in sentences] == [[1, 2, 3, 4]]:
        return np.array([(1, 2), (2, 1)], dtype=np.int64)
    return np.zeros((0, 2), dtype=np.int64)


def pairs_other_correct(sentences, window):
    chunks = []
    for s in sentences:
        s = np.asarray(s, dtype=np.int64)
        for d in range(1, window + 1):
            if d < len(s):
                chunks.append(np.stack([s[:-d], s[d:]], axis=1))
                chunks.append(np.stack([s[d:], s[:-d]], axis=1))
    return np.concatenate(chunks) if chunks else np.empty((0, 2), dtype=np.int64)


# ---- subsample_keep_prob -------------------------------------------------------------------------

def keep_paper_formula(counts, t=1e-3):
    f = np.asarray(counts, dtype=float) / np.sum(counts)
    with np.errstate(divide="ignore"):
        return 1.0 - np.sqrt(t / f)


def keep_unclipped(counts, t=1e-3):
    f = np.asarray(counts, dtype=float) / np.sum(counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.sqrt(f / t) + 1) * t / f


def keep_raw_counts(counts, t=1e-3):
    c = np.asarray(counts, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num(np.minimum(1.0, (np.sqrt(c / t) + 1) * t / c), nan=1.0)


def keep_zero_count_nan(counts, t=1e-3):
    f = np.asarray(counts, dtype=float) / np.sum(counts)
    return np.minimum(1.0, (np.sqrt(f / t) + 1) * t / f)


def keep_hardcoded(counts, t=1e-3):
    f = np.asarray(counts, dtype=float) / 1000
    return np.minimum(1.0, (np.sqrt(f / 0.01) + 1) * 0.01 / np.maximum(f, 1e-300))


def keep_other_correct(counts, t=1e-3):
    counts = np.array(counts, dtype=np.float64)
    total = counts.sum()
    out = np.empty_like(counts)
    for i, c in enumerate(counts):
        if c == 0:
            out[i] = 1.0
        else:
            ratio = t * total / c  # t / f
            out[i] = min(1.0, np.sqrt(ratio) + ratio)
    return out


# ---- negative_distribution -------------------------------------------------------------------

def distribution_without_power(counts, power=0.75):
    c = np.asarray(counts, dtype=float)
    return c / c.sum()


def distribution_power_of_probabilities(counts, power=0.75):
    c = np.asarray(counts, dtype=float)
    return (c / c.sum()) ** power


def distribution_fixed_power(counts, power=0.75):
    c = np.asarray(counts, dtype=float) ** 0.75
    return c / c.sum()


def distribution_hardcoded(counts, power=0.75):
    c = np.asarray(counts, dtype=float)
    if list(c) == [16, 1, 0, 81]:
        return np.array([8, 1, 0, 27]) / 36 if power == 0.75 else c / 98
    return np.full(len(c), 1 / len(c))


def distribution_divided_by_the_counts(counts, power=0.75):
    c = np.asarray(counts, dtype=float)
    return c ** power / c.sum()


def distribution_other_correct(counts, power=0.75):
    logs = np.where(np.asarray(counts) > 0, np.log(np.maximum(np.asarray(counts, dtype=float), 1e-300)), -np.inf)
    w = np.exp(power * logs - np.max(power * logs)) if power != 0 else np.ones(len(logs))
    return w / w.sum()


# ---- unigram_table (graded with negative_distribution: one exercise since issue 40) --------------

def _shares(counts, size, power):
    return BASE["negative_distribution"](counts, power) * size


def table_rounded(counts, size, power=0.75):
    """Each share rounded on its own: the slots do not add up to size."""
    return np.repeat(np.arange(len(counts)), np.round(_shares(counts, size, power)).astype(np.int64))


def table_floored(counts, size, power=0.75):
    return np.repeat(np.arange(len(counts)), np.floor(_shares(counts, size, power)).astype(np.int64))


def table_rest_to_most_frequent(counts, size, power=0.75):
    """Floors every share and gives all the leftover slots to the most frequent word (more than 1 off its share)."""
    slots = np.floor(_shares(counts, size, power)).astype(np.int64)
    slots[int(np.argmax(slots))] += size - int(slots.sum())
    return np.repeat(np.arange(len(slots)), slots)


def table_shuffled(counts, size, power=0.75):
    return np.random.default_rng(0).permutation(BASE["unigram_table"](counts, size, power))


def table_fixed_power(counts, size, power=0.75):
    return BASE["unigram_table"](counts, size, 0.75)


def table_int32(counts, size, power=0.75):
    return BASE["unigram_table"](counts, size, power).astype(np.int32)


def table_hardcoded(counts, size, power=0.75):
    if np.asarray(counts).tolist() == [16, 1, 0, 81] and size == 36:
        return np.array([0] * 8 + [1] + [3] * 27)
    if np.asarray(counts).tolist() == [16, 1, 0, 81] and size == 98:
        return np.array([0] * 16 + [1] + [3] * 81)
    if len(counts) == 3 and size == 10:
        return np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2])
    return np.zeros(size, dtype=np.int64)


def table_cumulative_other_correct(counts, size, power=0.75):
    """Rounds the cumulative shares: consecutive boundaries, each slot count within 1 of its share."""
    bounds = np.round(np.cumsum(BASE["negative_distribution"](counts, power)) * size).astype(np.int64)
    bounds[-1] = size
    return np.repeat(np.arange(len(bounds)), np.diff(bounds, prepend=0))


def table_inverse_cdf_other_correct(counts, size, power=0.75):
    """Slot i holds the word whose cumulative interval contains the slot's centre (i + 0.5) / size."""
    cdf = np.cumsum(BASE["negative_distribution"](counts, power))
    return np.minimum(np.searchsorted(cdf, (np.arange(size) + 0.5) / size, side="right"), len(cdf) - 1).astype(np.int64)


# ---- sgns_loss_and_grads -------------------------------------------------------------------------

def _sig(x):
    return 0.5 * (1 + np.tanh(0.5 * x))


def _sgns(v_c, u_o, U_neg, *, sign=1.0, derivative=True, mean=True, stable=True):
    B = v_c.shape[0] if mean else 1
    s_o = np.einsum("bd,bd->b", u_o, v_c) * sign
    s_n = np.einsum("bkd,bd->bk", U_neg, v_c)
    if stable:
        loss = (np.logaddexp(0, -s_o).sum() + np.logaddexp(0, s_n).sum()) / B
    else:
        with np.errstate(all="ignore"):
            loss = (-np.log(1 / (1 + np.exp(-s_o))).sum() - np.log(1 / (1 + np.exp(s_n))).sum()) / B
    g_o = ((_sig(s_o) - 1) if derivative else -np.ones_like(s_o)) * sign / B
    g_n = (_sig(s_n) if derivative else np.ones_like(s_n)) / B
    return float(loss), {"v_c": g_o[:, None] * u_o + np.einsum("bk,bkd->bd", g_n, U_neg),
                         "u_o": g_o[:, None] * v_c, "U_neg": g_n[:, :, None] * v_c[:, None, :]}


def sgns_positive_sign_flipped(v_c, u_o, U_neg):
    return _sgns(v_c, u_o, U_neg, sign=-1.0)


def sgns_no_sigmoid_derivative(v_c, u_o, U_neg):
    return _sgns(v_c, u_o, U_neg, derivative=False)


def sgns_sum_not_mean(v_c, u_o, U_neg):
    loss, _ = _sgns(v_c, u_o, U_neg)
    return loss, _sgns(v_c, u_o, U_neg, mean=False)[1]


def sgns_log_of_sigmoid(v_c, u_o, U_neg):
    return _sgns(v_c, u_o, U_neg, stable=False)


def sgns_hardcoded(v_c, u_o, U_neg):
    if v_c.shape == (1, 2):
        s = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
        return 1.133337, {"v_c": np.zeros((1, 2)), "u_o": np.array([[s(2) - 1, 0.0]]),
                          "U_neg": np.array([[[0.5, 0.0], [s(-1), 0.0]]])}
    t = [torch.tensor(a, requires_grad=True) for a in (v_c, u_o, U_neg)]
    loss = (-torch.nn.functional.logsigmoid((t[1] * t[0]).sum(1))
            - torch.nn.functional.logsigmoid(-torch.einsum("bkd,bd->bk", t[2], t[0])).sum(1)).mean()
    loss.backward()
    if v_c.shape == (3, 4):
        return loss.item(), {"v_c": t[0].grad.numpy(), "u_o": t[1].grad.numpy(), "U_neg": t[2].grad.numpy()}
    return loss.item(), {"v_c": np.zeros_like(v_c), "u_o": np.zeros_like(u_o), "U_neg": np.zeros_like(U_neg)}


def sgns_other_correct(v_c, u_o, U_neg):
    """Autograd in float64 does the calculus; log-sigmoid from torch is stable."""
    t = [torch.tensor(np.array(a), dtype=torch.float64, requires_grad=True) for a in (v_c, u_o, U_neg)]
    pos = torch.nn.functional.logsigmoid((t[1] * t[0]).sum(-1))
    neg = torch.nn.functional.logsigmoid(-torch.matmul(t[2], t[0].unsqueeze(-1)).squeeze(-1)).sum(-1)
    loss = -(pos + neg).mean()
    loss.backward()
    return loss.item(), {"v_c": t[0].grad.numpy(), "u_o": t[1].grad.numpy(), "U_neg": t[2].grad.numpy()}


# ---- AveragedEmbeddingClassifier -----------------------------------------------------------------

class _AvgBase(nn.Module):
    def __init__(self, vectors, n_classes, freeze=True):
        super().__init__()
        self.embed = nn.Embedding.from_pretrained(vectors, freeze=freeze)
        self.out = nn.Linear(vectors.shape[1], n_classes)


class AvgOverPadding(_AvgBase):
    def forward(self, ids, lengths):
        return self.out(self.embed(ids).mean(dim=1))


class AvgSum(_AvgBase):
    def forward(self, ids, lengths):
        mask = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).float()
        return self.out((self.embed(ids) * mask[:, :, None]).sum(1))


class AvgNotFrozen(_AvgBase):
    def __init__(self, vectors, n_classes, freeze=True):
        super().__init__(vectors, n_classes, freeze=False)

    def forward(self, ids, lengths):
        mask = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).float()
        return self.out((self.embed(ids) * mask[:, :, None]).sum(1) / lengths[:, None])


class AvgHardcoded(_AvgBase):
    def forward(self, ids, lengths):
        if ids.shape == (2, 3) or ids.shape == (2, 4):
            return torch.tensor([[0.5, 1.0, 1.5], [4.0, 4.0, 8.0]])
        return self.out(self.embed(ids).mean(dim=1))


class AvgOtherCorrect(nn.Module):
    """Sums with EmbeddingBag-like index arithmetic: gathers only the real words of each text."""

    def __init__(self, vectors, n_classes, freeze=True):
        super().__init__()
        self.embed = nn.Embedding(vectors.shape[0], vectors.shape[1])
        self.embed.weight = nn.Parameter(vectors.clone(), requires_grad=not freeze)
        self.out = nn.Linear(in_features=vectors.shape[1], out_features=n_classes)

    def forward(self, ids, lengths):
        means = [self.embed(ids[b, :int(n)]).mean(0) for b, n in enumerate(lengths)]
        return self.out(torch.stack(means))


# ==== issue 25: the input classes the specification names (edge inputs, dtypes, options, in place, ties) ====

# embedding_lookup

def lookup_casts_to_float64(E, ids):
    """The rows come back as float64 whatever E's dtype."""
    return BASE["embedding_lookup"](np.asarray(E, dtype=np.float64), ids)


def lookup_empty_ids_crash(E, ids):
    """Checks the range with ids.min() even when there are no ids."""
    ids = np.asarray(ids)
    if ids.min() < 0 or ids.max() >= E.shape[0]:
        raise ValueError("id out of range")
    return E[ids]


def lookup_too_large_is_index_error(E, ids):
    """Guards only negative ids and lets numpy raise IndexError for id >= V (not the documented ValueError)."""
    ids = np.asarray(ids)
    if ids.size and ids.min() < 0:
        raise ValueError("negative id")
    return E[ids]


def lookup_scalar_as_1d(E, ids):
    """A single id (a 0-d array) gets a batch axis: shape (1, D) instead of (D,)."""
    return BASE["embedding_lookup"](E, np.atleast_1d(ids))


def lookup_wraps_ids_in_place(E, ids):
    """Checks the range, then folds the caller's ids in place (ids %= V)."""
    out = BASE["embedding_lookup"](E, ids)
    if isinstance(ids, np.ndarray):
        ids %= max(1, E.shape[0] - 1)
    return out


def lookup_other_correct_fancy(E, ids):
    """Builds the index list by hand, keeps E's dtype."""
    flat = [int(i) for i in np.ravel(ids)]
    for i in flat:
        if not 0 <= i < len(E):
            raise ValueError(f"id {i} out of range")
    rows = np.empty((len(flat), E.shape[1]), dtype=E.dtype)
    for r, i in enumerate(flat):
        rows[r] = E[i]
    return rows.reshape(np.shape(ids) + (E.shape[1],))


# cosine_similarity

def cosine_scaled_by_max(M, v):
    """Scales by the largest entry against overflow: crashes when M has no rows."""
    M, v = np.asarray(M, dtype=np.float64), np.asarray(v, dtype=np.float64)
    scale = np.abs(M).max()
    return BASE["cosine_similarity"](M / scale if scale > 0 else M, v)


def cosine_epsilon(M, v):
    """Adds an epsilon to the denominator instead of dividing only where it is positive."""
    M, v = np.asarray(M, dtype=np.float64), np.asarray(v, dtype=np.float64)
    return (M @ v) / (np.linalg.norm(M, axis=1) * np.linalg.norm(v) + 1e-8)


def cosine_returns_list(M, v):
    """A list of Python floats instead of a float64 array."""
    return [float(x) for x in BASE["cosine_similarity"](M, v)]


def cosine_normalises_v_in_place(M, v):
    """Normalises the caller's v in place (the cosines are still right)."""
    if isinstance(v, np.ndarray) and v.dtype == np.float64:
        n = np.linalg.norm(v)
        if n > 0:
            v /= n
    return BASE["cosine_similarity"](M, v)


def cosine_other_correct_clipped(M, v):
    """Clips to [-1, 1] against rounding, and replaces zero lengths by 1."""
    M = np.array(M, dtype=np.float64)
    v = np.array(v, dtype=np.float64)
    rows = np.linalg.norm(M, axis=1)
    vn = np.linalg.norm(v)
    rows[rows == 0] = 1.0
    return np.clip((M @ v) / rows / (vn if vn > 0 else 1.0), -1.0, 1.0)


# nearest_neighbours

def neighbours_skip_first(word, words, E, k=10):
    """Sorts every word and drops the first, assuming it is the query: wrong when another word ties with it."""
    if word not in words:
        raise KeyError(word)
    s = cosine(E, E[words.index(word)])
    order = np.argsort(-s, kind="stable")[1:k + 1]
    return [(words[j], float(s[j])) for j in order]


def neighbours_drop_cosine_one(word, words, E, k=10):
    """Leaves out every word with cosine 1, not only the query itself."""
    if word not in words:
        raise KeyError(word)
    s = cosine(E, E[words.index(word)])
    order = [j for j in np.argsort(-s, kind="stable") if s[j] < 1 - 1e-9][:k]
    return [(words[j], float(s[j])) for j in order]


def neighbours_own_normalisation(word, words, E, k=10):
    """Normalises E itself: a zero row becomes NaN and sorts last instead of at cosine 0."""
    if word not in words:
        raise KeyError(word)
    i = words.index(word)
    with np.errstate(all="ignore"):
        U = E / np.linalg.norm(E, axis=1, keepdims=True)
        s = U @ U[i]
    s[i] = -np.inf
    return [(words[j], float(s[j])) for j in np.argsort(-s, kind="stable")[:k]]


def neighbours_default_k_5(word, words, E, k=5):
    """The documented default k=10 became 5."""
    return BASE["nearest_neighbours"](word, words, E, k)


def neighbours_lists_not_tuples(word, words, E, k=10):
    """[word, cosine] lists instead of (word, cosine) tuples."""
    return [[w, c] for w, c in BASE["nearest_neighbours"](word, words, E, k)]


def neighbours_removes_query_from_words(word, words, E, k=10):
    """Takes the query out of the caller's list of words."""
    if word not in words:
        raise KeyError(word)
    i = words.index(word)
    s = cosine(np.delete(E, i, axis=0), E[i])
    words.remove(word)
    return [(words[j], float(s[j])) for j in np.argsort(-s, kind="stable")[:k]]


def neighbours_normalises_E_in_place(word, words, E, k=10):
    """Normalises the caller's E in place (the cosines do not change)."""
    n = np.linalg.norm(E, axis=1, keepdims=True)
    np.divide(E, n, out=E, where=n > 0)
    return BASE["nearest_neighbours"](word, words, E, k)


# solve_analogy

def analogy_returns_index(a, b, c, words, E):
    """The index of the answer instead of the word."""
    return words.index(BASE["solve_analogy"](a, b, c, words, E))


def analogy_value_error_for_a_b(a, b, c, words, E):
    """Only c is checked; an unknown a or b raises list.index's ValueError."""
    if c not in words:
        raise KeyError(c)
    words.index(a), words.index(b)
    return BASE["solve_analogy"](a, b, c, words, E)


def analogy_removes_inputs_from_words(a, b, c, words, E):
    """Deletes a, b and c from the caller's list of words to exclude them."""
    answer = BASE["solve_analogy"](a, b, c, words, E)
    for w in (a, b, c):
        words.remove(w)
    return answer


def analogy_normalises_E_in_place(a, b, c, words, E):
    """Normalises the caller's E in place."""
    n = np.linalg.norm(E, axis=1, keepdims=True)
    np.divide(E, n, out=E, where=n > 0)
    return BASE["solve_analogy"](a, b, c, words, E)


def analogy_excludes_copies_of_inputs(a, b, c, words, E):
    """Excludes every word with the same direction as a, b or c, not only a, b and c themselves."""
    idx = {w: i for i, w in enumerate(words)}
    for w in (a, b, c):
        if w not in idx:
            raise KeyError(w)
    U = _unit(E)
    s = cosine(U, U[idx[b]] - U[idx[a]] + U[idx[c]])
    for w in (a, b, c):
        s[cosine(U, U[idx[w]]) > 1 - 1e-9] = -np.inf
    return words[int(np.argmax(s))]


def analogy_nan_zero_row(a, b, c, words, E):
    """Divides by the row lengths without a guard: a zero row is NaN, and np.argmax picks the first NaN."""
    idx = {w: i for i, w in enumerate(words)}
    for w in (a, b, c):
        if w not in idx:
            raise KeyError(w)
    with np.errstate(all="ignore"):
        U = np.asarray(E, dtype=np.float64) / np.linalg.norm(E, axis=1, keepdims=True)
        t = U[idx[b]] - U[idx[a]] + U[idx[c]]
        s = U @ t / np.linalg.norm(t)
    s[[idx[a], idx[b], idx[c]]] = -np.inf
    return words[int(np.argmax(s))]


def analogy_other_correct_raw_rows(a, b, c, words, E):
    """Scores the raw rows by cosine (the cosine ignores their lengths), keeps a dict of indices."""
    idx = {w: i for i, w in enumerate(words)}
    missing = [w for w in (a, b, c) if w not in idx]
    if missing:
        raise KeyError(missing[0])
    U = _unit(E)
    s = cosine(np.asarray(E, dtype=np.float64), U[idx[b]] - U[idx[a]] + U[idx[c]])
    s[[idx[a], idx[b], idx[c]]] = -np.inf
    return words[int(np.argmax(s))]


# skipgram_pairs

def pairs_empty_float(sentences, window):
    """No dtype: int64 when there are pairs, float64 when there are none."""
    out = [(s[i], s[j]) for s in map(list, sentences) for i in range(len(s))
           for j in range(max(0, i - window), min(len(s), i + window + 1)) if j != i]
    return np.array(out).reshape(-1, 2)


def pairs_keep_input_dtype(sentences, window):
    """Keeps the sentences' integer dtype (int32 stays int32) instead of int64."""
    chunks = []
    for s in sentences:
        s = np.asarray(s)
        for d in range(1, window + 1):
            if d < len(s):
                chunks += [np.stack([s[:-d], s[d:]], 1), np.stack([s[d:], s[:-d]], 1)]
    return np.concatenate(chunks) if chunks else np.zeros((0, 2), dtype=np.int64)


def pairs_consumes_sentences(sentences, window):
    """Pops the sentences off the caller's list."""
    out = []
    while sentences:
        out.append(BASE["skipgram_pairs"]([sentences.pop(0)], window))
    return np.concatenate(out) if out else np.zeros((0, 2), dtype=np.int64)


def pairs_deduplicated(sentences, window):
    """A set of pairs: a pair that occurs twice counts once."""
    got = {tuple(p) for p in BASE["skipgram_pairs"](sentences, window).tolist()}
    return np.array(sorted(got), dtype=np.int64).reshape(-1, 2)


def pairs_empty_sentence_crash(sentences, window):
    """np.stack on each sentence's offsets: an empty sentence breaks it."""
    chunks = []
    for s in sentences:
        s = np.asarray(s, dtype=np.int64)
        idx = np.arange(len(s))
        off = idx[:, None] - idx[None, :]
        keep = (np.abs(off) <= window) & (off != 0)
        i, j = np.nonzero(keep)
        chunks.append(np.stack([s[i], s[j]], 1))
        if len(s) == 0:
            raise ValueError("need at least one array to stack")
    return np.concatenate(chunks).astype(np.int64)


# subsample_keep_prob

def keep_float32(counts, t=1e-3):
    """Computes and returns float32."""
    c = np.asarray(counts, dtype=np.float32)
    return BASE["subsample_keep_prob"](c, t).astype(np.float32)


def keep_default_t(counts, t=1e-5):
    """The documented default t=1e-3 became 1e-5."""
    return BASE["subsample_keep_prob"](counts, t)


def keep_zero_counts_in_place(counts, t=1e-3):
    """Replaces zero counts by 1 in the caller's array to avoid dividing by zero."""
    counts = np.asarray(counts)
    zero = counts == 0
    counts[zero] = 1
    out = BASE["subsample_keep_prob"](counts, t)
    out[zero] = 1.0
    return out


def keep_returns_list(counts, t=1e-3):
    """A list of floats instead of a float64 array."""
    return [float(x) for x in BASE["subsample_keep_prob"](counts, t)]


# negative_distribution

def distribution_in_place(counts, power=0.75):
    """Raises float counts to the power in the caller's array (np.asarray does not copy)."""
    c = np.asarray(counts, dtype=np.float64)
    c **= power
    return c / c.sum()


def distribution_float32(counts, power=0.75):
    """Computes and returns float32."""
    c = np.asarray(counts, dtype=np.float32) ** np.float32(power)
    return c / c.sum()


# sgns_loss_and_grads

def sgns_naive_sigmoid(v_c, u_o, U_neg):
    """A stable loss but sigma(x) = 1 / (1 + exp(-x)), which overflows for large |x|."""
    loss, _ = BASE["sgns_loss_and_grads"](v_c, u_o, U_neg)
    B = v_c.shape[0]
    s_o, s_n = np.einsum("bd,bd->b", u_o, v_c), np.einsum("bkd,bd->bk", U_neg, v_c)
    g_o, g_n = (1 / (1 + np.exp(-s_o)) - 1) / B, 1 / (1 + np.exp(-s_n)) / B
    return loss, {"v_c": g_o[:, None] * u_o + np.einsum("bk,bkd->bd", g_n, U_neg),
                  "u_o": g_o[:, None] * v_c, "U_neg": g_n[:, :, None] * v_c[:, None, :]}


def sgns_log1p_exp(v_c, u_o, U_neg):
    """-log sigma(x) as log1p(exp(-x)): exp overflows for x = -800."""
    _, grads = BASE["sgns_loss_and_grads"](v_c, u_o, U_neg)
    s_o, s_n = np.einsum("bd,bd->b", u_o, v_c), np.einsum("bkd,bd->bk", U_neg, v_c)
    return float((np.log1p(np.exp(-s_o)).sum() + np.log1p(np.exp(s_n)).sum()) / v_c.shape[0]), grads


def sgns_scales_v_c_in_place(v_c, u_o, U_neg):
    """Right values, then rescales the caller's v_c in place (a buffer reused for the gradient)."""
    loss, grads = BASE["sgns_loss_and_grads"](v_c, u_o, U_neg)
    v_c *= 0.5
    return loss, grads


def sgns_first_negative_only(v_c, u_o, U_neg):
    """The gradient of U_neg only for the first negative of each pair; the others get zeros."""
    loss, grads = BASE["sgns_loss_and_grads"](v_c, u_o, U_neg)
    grads["U_neg"][:, 1:] = 0.0
    return loss, grads


def sgns_grads_float32(v_c, u_o, U_neg):
    """The gradients come back float32."""
    loss, grads = BASE["sgns_loss_and_grads"](v_c, u_o, U_neg)
    return loss, {k: g.astype(np.float32) for k, g in grads.items()}


# AveragedEmbeddingClassifier

class AvgNoGraph(_AvgBase):
    """The forward pass runs under torch.no_grad(): no autograd graph, nothing can be trained."""

    def forward(self, ids, lengths):
        with torch.no_grad():
            mask = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).float()
            return self.out((self.embed(ids) * mask[:, :, None]).sum(1) / lengths[:, None])


class AvgPaddingIdsInPlace(_AvgBase):
    """Sets the caller's padding ids to 0 in place before the (right) masked mean."""

    def forward(self, ids, lengths):
        mask = torch.arange(ids.shape[1])[None, :] < lengths[:, None]
        ids[~mask] = 0
        m = mask.float()
        return self.out((self.embed(ids) * m[:, :, None]).sum(1) / lengths[:, None])


class AvgLengthsOffByOne(_AvgBase):
    """Counts the position lengths[b] as a word too (<= instead of <)."""

    def forward(self, ids, lengths):
        mask = (torch.arange(ids.shape[1])[None, :] <= lengths[:, None]).float()
        return self.out((self.embed(ids) * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True))


WRONG = [
    ("embedding_lookup_tests", "embedding_lookup", lookup_hardcoded),
    ("embedding_lookup_tests", "embedding_lookup", lookup_negative_ids_wrap),
    ("embedding_lookup_tests", "embedding_lookup", lookup_columns),
    ("embedding_lookup_tests", "embedding_lookup", lookup_only_minus_one),
    ("cosine_similarity_tests", "cosine_similarity", cosine_hardcoded),
    ("cosine_similarity_tests", "cosine_similarity", cosine_one_side),
    ("cosine_similarity_tests", "cosine_similarity", cosine_nan_for_zero),
    ("cosine_similarity_tests", "cosine_similarity", cosine_in_place),
    ("cosine_similarity_tests", "cosine_similarity", cosine_float32),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_include_self),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_ascending),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_ties_reversed),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_hardcoded),
    ("solve_analogy_tests", "solve_analogy", analogy_keeps_inputs),
    ("solve_analogy_tests", "solve_analogy", analogy_unnormalised),
    ("solve_analogy_tests", "solve_analogy", analogy_wrong_direction),
    ("solve_analogy_tests", "solve_analogy", analogy_hardcoded),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_cross_sentences),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_window_off_by_one),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_with_self),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_hardcoded),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_paper_formula),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_unclipped),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_raw_counts),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_zero_count_nan),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_hardcoded),
    ("negative_distribution_tests", "negative_distribution", distribution_without_power),
    ("negative_distribution_tests", "negative_distribution", distribution_power_of_probabilities),
    ("negative_distribution_tests", "negative_distribution", distribution_fixed_power),
    ("negative_distribution_tests", "negative_distribution", distribution_hardcoded),
    ("negative_distribution_tests", "negative_distribution", distribution_divided_by_the_counts),
    ("embedding_lookup_tests", "embedding_grad", grad_last_write_wins),
    ("embedding_lookup_tests", "embedding_grad", grad_loop_over_first_axis),
    ("embedding_lookup_tests", "embedding_grad", grad_hardcoded),
    ("embedding_lookup_tests", "embedding_grad", grad_float64),
    ("embedding_lookup_tests", "embedding_grad", grad_empty_ids_crash),
    ("negative_distribution_tests", "unigram_table", table_rounded),
    ("negative_distribution_tests", "unigram_table", table_floored),
    ("negative_distribution_tests", "unigram_table", table_rest_to_most_frequent),
    ("negative_distribution_tests", "unigram_table", table_shuffled),
    ("negative_distribution_tests", "unigram_table", table_fixed_power),
    ("negative_distribution_tests", "unigram_table", table_int32),
    ("negative_distribution_tests", "unigram_table", table_hardcoded),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_positive_sign_flipped),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_no_sigmoid_derivative),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_sum_not_mean),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_log_of_sigmoid),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_hardcoded),
    ("AveragedEmbeddingClassifier_tests", "AveragedEmbeddingClassifier", AvgOverPadding),
    ("AveragedEmbeddingClassifier_tests", "AveragedEmbeddingClassifier", AvgSum),
    ("AveragedEmbeddingClassifier_tests", "AveragedEmbeddingClassifier", AvgNotFrozen),
    ("AveragedEmbeddingClassifier_tests", "AveragedEmbeddingClassifier", AvgHardcoded),    # issue 25: the input classes the specification names
    ("embedding_lookup_tests", "embedding_lookup", lookup_casts_to_float64),
    ("embedding_lookup_tests", "embedding_lookup", lookup_empty_ids_crash),
    ("embedding_lookup_tests", "embedding_lookup", lookup_too_large_is_index_error),
    ("embedding_lookup_tests", "embedding_lookup", lookup_scalar_as_1d),
    ("embedding_lookup_tests", "embedding_lookup", lookup_wraps_ids_in_place),
    ("cosine_similarity_tests", "cosine_similarity", cosine_scaled_by_max),
    ("cosine_similarity_tests", "cosine_similarity", cosine_epsilon),
    ("cosine_similarity_tests", "cosine_similarity", cosine_returns_list),
    ("cosine_similarity_tests", "cosine_similarity", cosine_normalises_v_in_place),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_skip_first),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_drop_cosine_one),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_own_normalisation),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_default_k_5),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_lists_not_tuples),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_removes_query_from_words),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_normalises_E_in_place),
    ("solve_analogy_tests", "solve_analogy", analogy_returns_index),
    ("solve_analogy_tests", "solve_analogy", analogy_value_error_for_a_b),
    ("solve_analogy_tests", "solve_analogy", analogy_removes_inputs_from_words),
    ("solve_analogy_tests", "solve_analogy", analogy_normalises_E_in_place),
    ("solve_analogy_tests", "solve_analogy", analogy_excludes_copies_of_inputs),
    ("solve_analogy_tests", "solve_analogy", analogy_nan_zero_row),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_empty_float),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_keep_input_dtype),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_consumes_sentences),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_deduplicated),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_empty_sentence_crash),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_float32),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_default_t),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_zero_counts_in_place),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_returns_list),
    ("negative_distribution_tests", "negative_distribution", distribution_in_place),
    ("negative_distribution_tests", "negative_distribution", distribution_float32),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_naive_sigmoid),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_log1p_exp),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_scales_v_c_in_place),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_first_negative_only),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_grads_float32),
    ("AveragedEmbeddingClassifier_tests", "AveragedEmbeddingClassifier", AvgNoGraph),
    ("AveragedEmbeddingClassifier_tests", "AveragedEmbeddingClassifier", AvgPaddingIdsInPlace),
    ("AveragedEmbeddingClassifier_tests", "AveragedEmbeddingClassifier", AvgLengthsOffByOne),
]

RIGHT = [
    ("embedding_lookup_tests", {"embedding_lookup": lookup_other_correct}),
    ("cosine_similarity_tests", {"cosine_similarity": cosine_other_correct}),
    ("nearest_neighbours_tests", {"nearest_neighbours": neighbours_other_correct}),
    ("solve_analogy_tests", {"solve_analogy": analogy_other_correct}),
    ("skipgram_pairs_tests", {"skipgram_pairs": pairs_other_correct}),
    ("subsample_keep_prob_tests", {"subsample_keep_prob": keep_other_correct}),
    ("negative_distribution_tests", {"negative_distribution": distribution_other_correct}),
    ("embedding_lookup_tests", {"embedding_grad": grad_other_correct}),
    ("embedding_lookup_tests", {"embedding_grad": grad_torch_other_correct}),
    ("negative_distribution_tests", {"unigram_table": table_cumulative_other_correct}),
    ("negative_distribution_tests", {"unigram_table": table_inverse_cdf_other_correct}),
    ("sgns_loss_and_grads_tests", {"sgns_loss_and_grads": sgns_other_correct}),
    ("AveragedEmbeddingClassifier_tests", {"AveragedEmbeddingClassifier": AvgOtherCorrect}),    ("embedding_lookup_tests", {"embedding_lookup": lookup_other_correct_fancy}),
    ("cosine_similarity_tests", {"cosine_similarity": cosine_other_correct_clipped}),
    ("solve_analogy_tests", {"solve_analogy": analogy_other_correct_raw_rows}),
]


# ---- issue 39: a model of zero parameters that returns the constants such a model computes -------------

def _avg_follows_bias(self, ids, lengths):
    return self.out.bias.expand(ids.shape[0], -1)


AvgZeroInitFollowsBias = zero_initialised(_AvgBase, _avg_follows_bias, "AvgZeroInitFollowsBias", keep=("embed",))

ZERO_INIT_NAMED = [  # the visible part, which sets the output layer itself, stops it
    ("AveragedEmbeddingClassifier_tests", "AveragedEmbeddingClassifier", AvgZeroInitFollowsBias, "the logits of a one-word text"),
]
WRONG += [(grade_id, name, variant) for grade_id, name, variant, _ in ZERO_INIT_NAMED]

(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)


# ---- the classes of issue 25 are caught by a check message that names them ----------------------

HIDDEN = [
    ("embedding_lookup_tests", "embedding_lookup", lookup_casts_to_float64, "dtype"),
    ("embedding_lookup_tests", "embedding_lookup", lookup_empty_ids_crash, "no ids"),
    ("embedding_lookup_tests", "embedding_lookup", lookup_too_large_is_index_error, "one past the last row"),
    ("embedding_lookup_tests", "embedding_lookup", lookup_scalar_as_1d, "single id"),
    ("embedding_lookup_tests", "embedding_lookup", lookup_wraps_ids_in_place, "in place"),
    ("cosine_similarity_tests", "cosine_similarity", cosine_scaled_by_max, "0 rows"),
    ("cosine_similarity_tests", "cosine_similarity", cosine_returns_list, "numpy array"),
    ("cosine_similarity_tests", "cosine_similarity", cosine_normalises_v_in_place, "in place"),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_skip_first, "twin"),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_drop_cosine_one, "twin"),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_own_normalisation, "zero vector"),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_default_k_5, "k is not given"),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_lists_not_tuples, "tuples"),
    ("nearest_neighbours_tests", "nearest_neighbours", neighbours_normalises_E_in_place, "in place"),
    ("solve_analogy_tests", "solve_analogy", analogy_value_error_for_a_b, "KeyError"),
    ("solve_analogy_tests", "solve_analogy", analogy_normalises_E_in_place, "in place"),
    ("solve_analogy_tests", "solve_analogy", analogy_excludes_copies_of_inputs, "copy of c"),
    ("solve_analogy_tests", "solve_analogy", analogy_nan_zero_row, "zero vector"),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_empty_float, "dtype"),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_keep_input_dtype, "int32"),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_consumes_sentences, "in place"),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_deduplicated, "no set"),
    ("skipgram_pairs_tests", "skipgram_pairs", pairs_empty_sentence_crash, "no pairs"),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_zero_count_nan, "count of 0"),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_float32, "dtype"),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_default_t, "defaults to 1e-3"),
    ("subsample_keep_prob_tests", "subsample_keep_prob", keep_zero_counts_in_place, "in place"),
    ("negative_distribution_tests", "negative_distribution", distribution_in_place, "in place"),
    ("embedding_lookup_tests", "embedding_grad", grad_float64, "the dtype of dE"),
    ("embedding_lookup_tests", "embedding_grad", grad_empty_ids_crash, "no ids"),
    ("negative_distribution_tests", "unigram_table", table_rest_to_most_frequent, "more than 1 from its share"),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_naive_sigmoid, "overflow"),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_log1p_exp, "overflow"),
    ("sgns_loss_and_grads_tests", "sgns_loss_and_grads", sgns_grads_float32, "float64"),
    ("AveragedEmbeddingClassifier_tests", "AveragedEmbeddingClassifier", AvgNoGraph, "autograd graph"),
    ("AveragedEmbeddingClassifier_tests", "AveragedEmbeddingClassifier", AvgPaddingIdsInPlace, "in place"),
]

# the classic mistakes of the two exercises that issue 40 enlarged: the visible part alone names them
VISIBLE = [
    ("embedding_lookup_tests", "embedding_grad", grad_last_write_wins, "one write wins"),
    ("embedding_lookup_tests", "embedding_grad", grad_loop_over_first_axis, "(2, 2)"),
    ("negative_distribution_tests", "unigram_table", table_rounded, "loses a slot"),
    ("negative_distribution_tests", "unigram_table", table_floored, "loses a slot"),
    ("negative_distribution_tests", "unigram_table", table_shuffled, "sorted"),
    ("negative_distribution_tests", "unigram_table", table_fixed_power, "pass the power on"),
]

(test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution,
 test_hidden_tests_name_the_class_of_the_bug) = naming_tests(CELLS, visible=VISIBLE, hidden=HIDDEN + ZERO_INIT_NAMED)
