"""Chapter 6's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function (or class) of the solution for a variant and runs the exercise's
whole test cell (visible and hidden tests) against it.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from functools import reduce

import numpy as np
import torch
from torch import nn

from mistakes import RANDOM_PARAMETERS, GradedCells, mistake_tests, naming_tests, zero_initialised

CHAPTER = "06-seq2seq-beam-search-bleu"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base
PAD, BOS, EOS = BASE["PAD"], BASE["BOS"], BASE["EOS"]


# ---- make_batch --------------------------------------------------------------------------------

def _batch(sources, targets, *, pad_out=PAD, in_has_eos=False, eos_in_length=True, mutate=False):
    B, S, T = len(sources), max(map(len, sources)), max(map(len, targets)) + 1
    out = {"src": torch.full((B, S), PAD), "tgt_in": torch.full((B, T), PAD), "tgt_out": torch.full((B, T), pad_out)}
    for b, (s, t) in enumerate(zip(sources, targets)):
        out["src"][b, :len(s)] = torch.tensor(s, dtype=torch.long)
        if mutate:
            t.append(EOS)
            out["tgt_out"][b, :len(t)] = torch.tensor(t)
            t.insert(0, BOS)
            out["tgt_in"][b, :len(t) - 1] = torch.tensor(t[:-1])
            continue
        row_in = [BOS] + t + ([EOS] if in_has_eos else [])
        out["tgt_in"][b, :min(len(row_in), T)] = torch.tensor(row_in[:T])
        out["tgt_out"][b, :len(t) + 1] = torch.tensor(t + [EOS])
    out["src_lengths"] = torch.tensor([len(s) for s in sources])
    out["tgt_lengths"] = torch.tensor([len(t) + (1 if eos_in_length else 0) for t in targets])
    if mutate:
        out["tgt_lengths"] = torch.tensor([len(t) - 1 for t in targets])
    return out


def batch_pads_with_eos(sources, targets):
    return _batch(sources, targets, pad_out=EOS)


def batch_eos_in_decoder_input(sources, targets):
    return _batch(sources, targets, in_has_eos=True)


def batch_lengths_without_eos(sources, targets):
    return _batch(sources, targets, eos_in_length=False)


def batch_changes_the_callers_lists(sources, targets):
    return _batch(sources, targets, mutate=True)


def batch_hardcoded(sources, targets):
    return {"src": torch.tensor([[5, 6, 7], [8, 0, 0]]), "src_lengths": torch.tensor([3, 1]),
            "tgt_in": torch.tensor([[1, 7, 9, 0], [1, 4, 4, 4]]), "tgt_out": torch.tensor([[7, 9, 2, 0], [4, 4, 4, 2]]),
            "tgt_lengths": torch.tensor([3, 4])}


def batch_other_correct(sources, targets):
    pad = lambda rows: nn.utils.rnn.pad_sequence([torch.tensor(r, dtype=torch.long) for r in rows], batch_first=True,  # noqa: E731
                                                  padding_value=PAD)
    return {"src": pad(sources), "src_lengths": torch.tensor([len(s) for s in sources], dtype=torch.long),
            "tgt_in": pad([[BOS, *t] for t in targets]), "tgt_out": pad([[*t, EOS] for t in targets]),
            "tgt_lengths": torch.tensor([len(t) + 1 for t in targets], dtype=torch.long)}


# ---- Encoder -----------------------------------------------------------------------------------

class _EncoderBase(nn.Module):
    def __init__(self, n_src, embed_size, hidden_size):
        super().__init__()
        self.embed = nn.Embedding(n_src, embed_size, padding_idx=PAD)
        self.rnn = nn.GRU(embed_size, hidden_size, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden_size, hidden_size)

    def final_states(self, src, src_lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(src), src_lengths.cpu(), batch_first=True, enforce_sorted=False)
        return self.rnn(packed)[1]


class EncoderReadsPadding(_EncoderBase):
    def forward(self, src, src_lengths):
        _, h_n = self.rnn(self.embed(src))  # no packing: the padding is read
        return torch.tanh(self.bridge(torch.cat([h_n[0], h_n[1]], dim=1)))


class EncoderForwardOnly(_EncoderBase):
    def forward(self, src, src_lengths):
        h_n = self.final_states(src, src_lengths)
        return torch.tanh(self.bridge(torch.cat([h_n[0], h_n[0]], dim=1)))


class EncoderNoTanh(_EncoderBase):
    def forward(self, src, src_lengths):
        h_n = self.final_states(src, src_lengths)
        return self.bridge(torch.cat([h_n[0], h_n[1]], dim=1))


class EncoderLastOutput(_EncoderBase):
    def forward(self, src, src_lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(src), src_lengths.cpu(), batch_first=True, enforce_sorted=False)
        output, _ = nn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0], batch_first=True)
        last = output[torch.arange(len(src)), src_lengths - 1]  # (B, 2H): the backward half has read one token
        return torch.tanh(self.bridge(last))


class EncoderHardcoded(_EncoderBase):
    def forward(self, src, src_lengths):
        return torch.zeros(len(src), self.bridge.out_features)


class EncoderOtherCorrect(_EncoderBase):
    """One source at a time, unpadded: slow but right."""

    def forward(self, src, src_lengths):
        states = []
        for row, n in zip(src, src_lengths.tolist()):
            _, h_n = self.rnn(self.embed(row[:n])[None])
            states.append(torch.cat([h_n[0, 0], h_n[1, 0]]))
        return torch.tanh(self.bridge(torch.stack(states)))


# ---- greedy_decode -----------------------------------------------------------------------------

def _greedy(step, state, batch_size, max_len, bos=BOS, eos=EOS, *, past_eos=False, keep_eos=False, stop_first=False):
    prev, out, done = torch.full((batch_size,), bos), [[] for _ in range(batch_size)], [False] * batch_size
    for _ in range(max_len):
        log_probs, state = step(prev, state)
        prev = log_probs.argmax(-1)
        for b in range(batch_size):
            token = int(prev[b])
            if done[b] and not past_eos:
                continue
            if token == eos:
                done[b] = True
                if keep_eos:
                    out[b].append(token)
            elif not done[b] or past_eos:
                out[b].append(token)
        if (stop_first and any(done)) or all(done):
            break
    return out


def greedy_runs_past_eos(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    return _greedy(step, state, batch_size, max_len, bos, eos, past_eos=True)


def greedy_keeps_eos(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    return _greedy(step, state, batch_size, max_len, bos, eos, keep_eos=True)


def greedy_stops_at_first_eos(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    return _greedy(step, state, batch_size, max_len, bos, eos, stop_first=True)


def greedy_hardcoded(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    return [[4, 4]] if batch_size == 1 else [[4], [4, 4]][:batch_size] + [[]] * max(batch_size - 2, 0)


def greedy_other_correct(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    prev = torch.full((batch_size,), bos, dtype=torch.long)
    alive = torch.ones(batch_size, dtype=torch.bool)
    columns = []
    while alive.any() and len(columns) < max_len:
        log_probs, state = step(prev, state)
        prev = log_probs.argmax(dim=-1)
        columns.append(torch.where(alive, prev, torch.full_like(prev, eos)))
        alive &= prev != eos
    rows = torch.stack(columns, dim=1).tolist() if columns else [[] for _ in range(batch_size)]
    return [row[:row.index(eos)] if eos in row else row for row in rows]


# ---- beam_search -------------------------------------------------------------------------------

def _beam(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS, *, probabilities=False, keep_finished=False,
          stop_when_best_ends=False, length_without_eos=False):
    hyps, scores = [[]], torch.zeros(1, dtype=torch.float64)
    if probabilities:
        scores = torch.ones(1, dtype=torch.float64)
    prev, finished, carried = torch.tensor([bos]), [], []
    for _ in range(max_len):
        log_probs, state = step(prev, state)
        V = log_probs.shape[-1]
        lp = log_probs.double()
        total = (scores[:, None] * lp.exp()) if probabilities else (scores[:, None] + lp)
        total = total.reshape(-1)
        entries = [(float(total[i]), i) for i in range(total.numel())]
        if keep_finished:  # finished hypotheses stay in the beam, taking a place
            entries += [(s, -1 - j) for j, (_, s) in enumerate(carried)]
        entries.sort(key=lambda e: -e[0])
        rows, new_hyps, new_scores, tokens = [], [], [], []
        carried_next = []
        for value, i in entries[:beam_width]:
            if i < 0:
                carried_next.append(carried[-1 - i])
                continue
            parent, token = divmod(i, V)
            log_p = math.log(value) if probabilities and value > 0 else (value if not probabilities else -math.inf)
            if token == eos:
                T = len(hyps[parent]) + (0 if length_without_eos else 1)
                finished.append((hyps[parent], log_p, log_p / max(T, 1) ** alpha))
                if keep_finished:
                    carried_next.append((hyps[parent], value))
            else:
                rows.append(parent)
                new_hyps.append(hyps[parent] + [token])
                new_scores.append(value)
                tokens.append(token)
        carried = carried_next
        if stop_when_best_ends and entries and entries[0][1] >= 0 and entries[0][1] % V == eos:
            break
        if not new_hyps:
            break
        hyps, scores = new_hyps, torch.tensor(new_scores, dtype=torch.float64)
        state, prev = state[torch.tensor(rows)], torch.tensor(tokens)
    else:
        for t, s in zip(hyps, scores.tolist()):
            log_p = math.log(s) if probabilities and s > 0 else (s if not probabilities else -math.inf)
            finished.append((t, log_p, log_p / max(len(t), 1) ** alpha))
    return sorted(finished, key=lambda h: -h[2])


def beam_multiplies_probabilities(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    return _beam(step, state, beam_width, max_len, alpha, bos, eos, probabilities=True)


def beam_keeps_finished_in_the_beam(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    return _beam(step, state, beam_width, max_len, alpha, bos, eos, keep_finished=True)


def beam_stops_when_best_ends(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    return _beam(step, state, beam_width, max_len, alpha, bos, eos, stop_when_best_ends=True)


def beam_length_without_eos(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    return _beam(step, state, beam_width, max_len, alpha, bos, eos, length_without_eos=True)


def beam_hardcoded(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    if alpha > 0:
        return [([4, 4], math.log(0.3), math.log(0.3) / 3), ([5], math.log(0.36), math.log(0.36) / 2)]
    return [([5], math.log(0.36), math.log(0.36)), ([4, 4], math.log(0.3), math.log(0.3))]


def beam_other_correct(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    """Candidates as tuples through heapq, the hypotheses' states kept as a list of rows."""
    live = [((), 0.0)]
    rows = state
    prev = torch.tensor([bos])
    done = []
    for _ in range(max_len):
        log_probs, rows = step(prev, rows)
        candidates = ((lp + float(log_probs[r, w]), r, w) for r, (_, lp) in enumerate(live) for w in range(log_probs.shape[1]))
        best = heapq.nlargest(beam_width, candidates, key=lambda c: c[0])
        keep = [(c, live[c[1]][0]) for c in best]
        done += [(list(toks), c[0], c[0] / (len(toks) + 1) ** alpha) for c, toks in keep if c[2] == eos]
        keep = [(c, toks) for c, toks in keep if c[2] != eos]
        if not keep:
            return sorted(done, key=lambda h: h[2], reverse=True)
        live = [(toks + (c[2],), c[0]) for c, toks in keep]
        rows = torch.stack([rows[c[1]] for c, _ in keep])
        prev = torch.tensor([c[2] for c, _ in keep])
    done += [(list(toks), lp, lp / max(len(toks), 1) ** alpha) for toks, lp in live]
    return sorted(done, key=lambda h: h[2], reverse=True)


# ---- attribute_error ---------------------------------------------------------------------------

def _score(step, state, tokens, alpha, bos, eos, *, with_eos=True, normalise=True):
    s, prev, total = state, torch.tensor([bos]), 0.0
    for token in list(tokens) + ([eos] if with_eos else []):
        log_probs, s = step(prev, s)
        total += float(log_probs[0, token])
        prev = torch.tensor([token])
    n = len(tokens) + (1 if with_eos else 0)
    return total / max(n, 1) ** alpha if normalise else total


def attribution_without_eos(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    if list(reference) == list(prediction):
        return "correct"
    a, b = (_score(step, state, y, alpha, bos, eos, with_eos=False) for y in (reference, prediction))
    return "search" if a > b else "model"


def attribution_ignores_alpha(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    if list(reference) == list(prediction):
        return "correct"
    a, b = (_score(step, state, y, alpha, bos, eos, normalise=False) for y in (reference, prediction))
    return "search" if a > b else "model"


def attribution_inverted(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    if list(reference) == list(prediction):
        return "correct"
    a, b = (_score(step, state, y, alpha, bos, eos) for y in (reference, prediction))
    return "model" if a > b else "search"


def attribution_hardcoded(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    if list(reference) == list(prediction):
        return "correct"
    return "search" if reference == [5] or alpha > 0 else "model"


def attribution_other_correct(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    def log_p(tokens):
        fed = [bos, *tokens]
        wanted = [*tokens, eos]
        s, total = state, 0.0
        for x, y in zip(fed, wanted):
            out, s = step(torch.tensor([x]), s)
            total = total + out[0, y].item()
        return total / len(wanted) ** alpha

    if tuple(reference) == tuple(prediction):
        return "correct"
    return {True: "search", False: "model"}[log_p(reference) > log_p(prediction)]


# ---- beam_search_early_stop -------------------------------------------------------------------

def _early(step, state, beam_width, max_len, bos=BOS, eos=EOS, *, rule="exact", cut_live=True, as_tensor=False):
    """The exercise's search with one rule changed: 'exact', 'first_finished', 'worst_live', 'best_extension', 'never'."""
    hyps, scores, prev, finished = [[]], torch.zeros(1, dtype=torch.float64), torch.tensor([bos]), []
    for _ in range(max_len):
        log_probs, state = step(prev, state)
        V = log_probs.shape[-1]
        total = (scores[:, None] + log_probs.double()).reshape(-1)
        top = torch.topk(total, min(beam_width, total.numel())).indices.tolist()
        live = []
        for index in top:
            parent, token = divmod(index, V)
            if token == eos:
                finished.append((hyps[parent], float(total[index])))
            else:
                live.append((parent, token, float(total[index])))
        best = max((lp for _, lp in finished), default=None)
        if not live:
            break
        if best is not None and (
                (rule == "exact" and best >= max(lp for *_, lp in live))
                or (rule == "first_finished")
                or (rule == "worst_live" and best >= min(lp for *_, lp in live))
                or (rule == "best_extension" and top[0] % V == eos)):
            break
        hyps = [hyps[p] + [t] for p, t, _ in live]
        scores = torch.tensor([lp for *_, lp in live], dtype=torch.float64)
        state = state[torch.tensor([p for p, _, _ in live])]
        prev = torch.tensor([t for _, t, _ in live])
    else:
        if cut_live:
            finished += list(zip(hyps, scores.tolist()))
    tokens, log_p = max(finished, key=lambda h: h[1])
    return (torch.tensor(tokens), torch.tensor(log_p, dtype=torch.float64)) if as_tensor else (tokens, log_p)


def early_stops_at_first_finished(step, state, beam_width, max_len, bos=BOS, eos=EOS):
    return _early(step, state, beam_width, max_len, bos, eos, rule="first_finished")


def early_compares_with_worst_live(step, state, beam_width, max_len, bos=BOS, eos=EOS):
    return _early(step, state, beam_width, max_len, bos, eos, rule="worst_live")


def early_never_stops(step, state, beam_width, max_len, bos=BOS, eos=EOS):
    return _early(step, state, beam_width, max_len, bos, eos, rule="never")


def early_hardcoded(step, state, beam_width, max_len, bos=BOS, eos=EOS):
    step(torch.tensor([bos]), state)
    step(torch.tensor([bos]), state)
    return [5], math.log(0.36)


def early_stops_when_best_extension_ends(step, state, beam_width, max_len, bos=BOS, eos=EOS):
    """The right answer always, but it waits for a step whose best extension ends: too many calls."""
    return _early(step, state, beam_width, max_len, bos, eos, rule="best_extension")


def early_drops_cut_hypotheses(step, state, beam_width, max_len, bos=BOS, eos=EOS):
    """At max_len the live hypotheses are dropped instead of finished as they are."""
    try:
        return _early(step, state, beam_width, max_len, bos, eos, cut_live=False)
    except ValueError:  # max() of nothing finished
        return [], float("-inf")


def early_tensors_not_lists(step, state, beam_width, max_len, bos=BOS, eos=EOS):
    return _early(step, state, beam_width, max_len, bos, eos, as_tensor=True)


def early_ignores_eos_argument(step, state, beam_width, max_len, bos=BOS, eos=EOS):
    return _early(step, state, beam_width, max_len, bos, EOS)


def early_ignores_bos_argument(step, state, beam_width, max_len, bos=BOS, eos=EOS):
    return _early(step, state, beam_width, max_len, BOS, eos)


def early_other_correct(step, state, beam_width, max_len, bos=BOS, eos=EOS):
    """Tensor bookkeeping and a running best instead of a finished list."""
    tokens, log_p, prev, best = [[]], torch.zeros(1, dtype=torch.float64), torch.tensor([bos]), None
    for _ in range(max_len):
        step_log_probs, state = step(prev, state)
        total = log_p[:, None] + step_log_probs.double()
        V = total.shape[1]
        values, index = total.reshape(-1).topk(min(beam_width, total.numel()))
        ends = index % V == eos
        for value, i in zip(values[ends].tolist(), index[ends].tolist()):
            if best is None or value > best[0]:
                best = (value, tokens[i // V])
        go_on = ~ends
        if not bool(go_on.any()) or (best is not None and best[0] >= float(values[go_on].max())):
            break
        parents, words = (index[go_on] // V), (index[go_on] % V)
        tokens = [tokens[p] + [w] for p, w in zip(parents.tolist(), words.tolist())]
        log_p, state, prev = values[go_on], state[parents], words
    else:
        for t, value in zip(tokens, log_p.tolist()):
            if best is None or value > best[0]:
                best = (value, t)
    return best[1], float(best[0])


# ---- clipped_precision -------------------------------------------------------------------------

def _grams(tokens, n, *, off_by_one=False):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + (0 if off_by_one else 1)))


def precision_not_clipped(candidate, references, n):
    counts = _grams(candidate, n)
    seen = set().union(*(_grams(r, n) for r in references))
    return sum(c for g, c in counts.items() if g in seen), sum(counts.values())


def precision_clipped_by_sum_of_references(candidate, references, n):
    counts, total = _grams(candidate, n), Counter()
    for r in references:
        total.update(_grams(r, n))
    return sum(min(c, total[g]) for g, c in counts.items()), sum(counts.values())


def precision_one_ngram_short(candidate, references, n):
    counts = _grams(candidate, n, off_by_one=True)
    most = reduce(lambda a, b: a | b, (_grams(r, n, off_by_one=True) for r in references), Counter())
    return sum((counts & most).values()), sum(counts.values())


def precision_hardcoded(candidate, references, n):
    return {(7, 1): (2, 7), (7, 2): (3, 6), (4, 1): (2, 4)}.get((len(candidate), n), (5, 7) if n == 1 else (0, 0))


def precision_other_correct(candidate, references, n):
    counts = _grams(candidate, n)
    most = reduce(lambda a, b: a | b, (_grams(r, n) for r in references), Counter())  # | keeps the maximum
    return sum((counts & most).values()), sum(counts.values())


# ---- corpus_bleu -------------------------------------------------------------------------------

def _stats(candidates, references, max_n, *, clip=True):
    m, t = [0] * max_n, [0] * max_n
    for cand, refs in zip(candidates, references):
        for n in range(1, max_n + 1):
            a, b = (BASE["clipped_precision"] if clip else precision_not_clipped)(cand, refs, n)
            m[n - 1] += a
            t[n - 1] += b
    c = sum(len(x) for x in candidates)
    r = sum(min((abs(len(x) - len(cand)), len(x)) for x in refs)[1] for cand, refs in zip(candidates, references))
    return m, t, c, r


def _bleu(candidates, references, max_n=4, *, bp=lambda c, r: 1.0 if c > r else math.exp(1 - r / c), clip=True,
          combine=lambda ps: math.exp(sum(math.log(p) for p in ps) / len(ps))):
    m, t, c, r = _stats(candidates, references, max_n, clip=clip)
    if c == 0 or min(m) == 0:
        return 0.0
    return 100 * bp(c, r) * combine([a / b for a, b in zip(m, t)])


def bleu_brevity_inverted(candidates, references, max_n=4):
    return _bleu(candidates, references, max_n, bp=lambda c, r: 1.0 if c > r else math.exp(1 - c / r))


def bleu_brevity_when_longer(candidates, references, max_n=4):
    return _bleu(candidates, references, max_n, bp=lambda c, r: math.exp(1 - r / c))


def bleu_arithmetic_mean(candidates, references, max_n=4):
    return _bleu(candidates, references, max_n, combine=lambda ps: sum(ps) / len(ps))


def bleu_weights_not_one_over_n(candidates, references, max_n=4):
    return _bleu(candidates, references, max_n, combine=lambda ps: math.exp(sum(math.log(p) for p in ps) / 4))


def bleu_mean_of_sentences(candidates, references, max_n=4):
    return sum(_bleu([c], [r], max_n) for c, r in zip(candidates, references)) / len(candidates)


def bleu_not_clipped(candidates, references, max_n=4):
    return _bleu(candidates, references, max_n, clip=False)


def bleu_hardcoded(candidates, references, max_n=4):
    if candidates and candidates[0] == references[0][0]:
        return 100.0
    return 0.0


def bleu_other_correct(candidates, references, max_n=4):
    log_sum, c, r = 0.0, 0, 0
    for n in range(1, max_n + 1):
        matched = total = 0
        for cand, refs in zip(candidates, references):
            a, b = precision_other_correct(cand, refs, n)
            matched, total = matched + a, total + b
        if matched == 0:
            return 0.0
        log_sum += math.log(matched) - math.log(total)
    for cand, refs in zip(candidates, references):
        c += len(cand)
        r += sorted(refs, key=lambda x: (abs(len(x) - len(cand)), len(x)))[0].__len__()
    if c == 0:
        return 0.0
    return 100.0 * min(1.0, math.exp(1 - r / c)) * math.exp(log_sum / max_n)


# ==== issue 25: the input classes the specification names (edge inputs, dtypes, options, in place, ties) ====

# make_batch

def batch_lengths_as_lists(sources, targets):
    """The lengths come back as Python lists, not tensors."""
    out = BASE["make_batch"](sources, targets)
    return {**out, "src_lengths": out["src_lengths"].tolist(), "tgt_lengths": out["tgt_lengths"].tolist()}


def batch_pads_sources_in_place(sources, targets):
    """Pads the caller's source lists with PAD in place (then builds the right tensors from them)."""
    S = max(map(len, sources))
    lengths = [len(s) for s in sources]
    for s in sources:
        s.extend([PAD] * (S - len(s)))
    out = BASE["make_batch"]([s[:n] for s, n in zip(sources, lengths)], targets)
    return out


def batch_pad_sequence_float_when_empty(sources, targets):
    """Builds the target rows with pad_sequence of torch.tensor(t): a batch of empty targets is float32."""
    pad = lambda rows: nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=PAD)  # noqa: E731
    tgt = [torch.tensor(t) for t in targets]  # an empty list gives a float32 tensor
    out = BASE["make_batch"](sources, targets)
    if all(len(t) == 0 for t in targets):
        out["tgt_in"] = pad([torch.cat([torch.tensor([float(BOS)]), t]) for t in tgt])
        out["tgt_out"] = pad([torch.cat([t, torch.tensor([float(EOS)])]) for t in tgt])
    return out


def batch_width_from_first_source(sources, targets):
    """S = len(sources[0]): right when the first source is the longest (the visible example)."""
    S = len(sources[0])
    out = BASE["make_batch"](sources, targets)
    out["src"] = torch.stack([torch.tensor((list(s) + [PAD] * S)[:S], dtype=torch.long) for s in sources])
    return out


# Encoder

class EncoderNoGraph(_EncoderBase):
    """The forward pass runs under torch.no_grad(): s_0 carries no autograd graph, nothing can be trained."""

    def forward(self, src, src_lengths):
        with torch.no_grad():
            h_n = self.final_states(src, src_lengths)
            return torch.tanh(self.bridge(torch.cat([h_n[0], h_n[1]], dim=1)))


class EncoderSqueeze(_EncoderBase):
    """.squeeze() at the end: a batch of one source gives shape (H,) instead of (1, H)."""

    def forward(self, src, src_lengths):
        h_n = self.final_states(src, src_lengths)
        return torch.tanh(self.bridge(torch.cat([h_n[0], h_n[1]], dim=1))).squeeze()


class EncoderSortedNotRestored(_EncoderBase):
    """Sorts the batch by length for enforce_sorted=True and forgets to put the rows back in order."""

    def forward(self, src, src_lengths):
        lengths, order = src_lengths.sort(descending=True)
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(src[order]), lengths.cpu(), batch_first=True)
        h_n = self.rnn(packed)[1]
        return torch.tanh(self.bridge(torch.cat([h_n[0], h_n[1]], dim=1)))


class EncoderReversesSrcInPlace(_EncoderBase):
    """Reverses each source's real tokens in the caller's src (a 'Sutskever trick'), reads the right states."""

    def forward(self, src, src_lengths):
        h_n = self.final_states(src, src_lengths)
        for b, n in enumerate(src_lengths.tolist()):
            src[b, :n] = src[b, :n].flip(0)
        return torch.tanh(self.bridge(torch.cat([h_n[0], h_n[1]], dim=1)))


# greedy_decode

def greedy_ints_as_tensors(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    """The tokens are 0-d tensors (prev[b]) instead of ints."""
    prev, out, done = torch.full((batch_size,), bos), [[] for _ in range(batch_size)], [False] * batch_size
    for _ in range(max_len):
        log_probs, state = step(prev, state)
        prev = log_probs.argmax(-1)
        for b in range(batch_size):
            if not done[b]:
                if int(prev[b]) == eos:
                    done[b] = True
                else:
                    out[b].append(prev[b])
        if all(done):
            break
    return out


def greedy_calls_before_checking(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    """A do-while loop: step is called once even when max_len = 0."""
    return BASE["greedy_decode"](step, state, batch_size, max(max_len, 1), bos, eos)


def greedy_ignores_eos_argument(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    """Stops at the constant EOS, not at the eos it was given."""
    return BASE["greedy_decode"](step, state, batch_size, max_len, bos, EOS)


def greedy_ignores_bos_argument(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    """Starts from the constant BOS, not from the bos it was given."""
    return BASE["greedy_decode"](step, state, batch_size, max_len, BOS, eos)


def greedy_float_prev(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    """prev = torch.ones(B) * bos: a float32 tensor, which an nn.Embedding refuses."""
    prev, out, done = torch.ones(batch_size) * bos, [[] for _ in range(batch_size)], [False] * batch_size
    for _ in range(max_len):
        log_probs, state = step(prev, state)
        prev = log_probs.argmax(-1)
        for b in range(batch_size):
            if not done[b]:
                if int(prev[b]) == eos:
                    done[b] = True
                else:
                    out[b].append(int(prev[b]))
        if all(done):
            break
    return out


def greedy_updates_state_in_place(step, state, batch_size, max_len, bos=BOS, eos=EOS):
    """Copies each new state into the caller's state tensor."""
    def stepper(prev, s):
        log_probs, new = step(prev, s)
        state.copy_(new)
        return log_probs, new
    return BASE["greedy_decode"](stepper, state, batch_size, max_len, bos, eos)


# beam_search

def beam_tensors_not_lists(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    """Tokens as a tensor and scores as 0-d tensors, not a list of ints and floats."""
    return [(torch.tensor(t, dtype=torch.long), torch.tensor(lp, dtype=torch.float64), torch.tensor(s, dtype=torch.float64))
            for t, lp, s in BASE["beam_search"](step, state, beam_width, max_len, alpha, bos, eos)]


def beam_width_above_vocabulary(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    """torch.topk(total, beam_width) without min(beam_width, total.numel()): a wide beam crashes at the first step."""
    probe, _ = step(torch.tensor([bos]), state)
    if beam_width > probe.numel():
        torch.topk(probe.reshape(-1), beam_width)
    return BASE["beam_search"](step, state, beam_width, max_len, alpha, bos, eos)


def beam_ignores_eos_argument(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    """Finishes hypotheses at the constant EOS, not at the eos it was given."""
    return BASE["beam_search"](step, state, beam_width, max_len, alpha, bos, EOS)


def beam_ignores_bos_argument(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    """Starts from the constant BOS."""
    return BASE["beam_search"](step, state, beam_width, max_len, alpha, BOS, eos)


def beam_updates_state_in_place(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    """Writes the first step's new state into the caller's state."""
    first = [True]

    def stepper(prev, s):
        log_probs, new = step(prev, s)
        if first[0] and int(prev[0]) != bos:
            state.copy_(new[:1])
            first[0] = False
        return log_probs, new
    return BASE["beam_search"](stepper, state, beam_width, max_len, alpha, bos, eos)


def beam_state_not_reordered(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    """Repeats the first row's state for every live hypothesis instead of taking state[parents]."""
    def stepper(prev, s):
        log_probs, new = step(prev, s)
        return log_probs, new[:1].expand(len(prev) * beam_width, *new.shape[1:]).clone()
    return BASE["beam_search"](stepper, state, beam_width, max_len, alpha, bos, eos)


def beam_other_correct_per_hypothesis(step, state, beam_width, max_len, alpha=0.0, bos=BOS, eos=EOS):
    """Calls step once per live hypothesis (slower, same result), candidates sorted by a Python key."""
    live, done = [([], 0.0, state)], []
    for _ in range(max_len):
        cands = []
        for toks, lp, s in live:
            out, new = step(torch.tensor([toks[-1] if toks else bos], dtype=torch.long), s)
            row = out[0].double().tolist()
            cands += [(lp + v, toks, w, new) for w, v in enumerate(row)]
        cands.sort(key=lambda c: -c[0])
        live = []
        for lp, toks, w, new in cands[:beam_width]:
            if w == eos:
                done.append((list(toks), float(lp), float(lp) / (len(toks) + 1) ** alpha))
            else:
                live.append((toks + [w], lp, new))
        if not live:
            break
    else:
        done += [(list(t), float(lp), float(lp) / max(len(t), 1) ** alpha) for t, lp, _ in live]
    return sorted(done, key=lambda h: -h[2])


# attribute_error

def attribution_ties_to_search(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    """'search' when the scores are equal (>= instead of >)."""
    if list(reference) == list(prediction):
        return "correct"
    a, b = (_score(step, state, y, alpha, bos, eos) for y in (reference, prediction))
    return "search" if a >= b else "model"


def attribution_appends_eos_in_place(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    """Appends eos to the caller's lists to score them, and leaves it there."""
    if list(reference) == list(prediction):
        return "correct"
    reference.append(eos)
    prediction.append(eos)
    a, b = (_score(step, state, y[:-1], alpha, bos, eos) for y in (reference, prediction))
    return "search" if a > b else "model"


def attribution_compares_without_list(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    """reference == prediction without list(): a tuple never equals a list, so a right answer is scored."""
    if reference == prediction:
        return "correct"
    a, b = (_score(step, state, y, alpha, bos, eos) for y in (reference, prediction))
    return "search" if a > b else "model"


def attribution_ignores_eos_argument(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    """Scores the end with the constant EOS."""
    return BASE["attribute_error"](step, state, reference, prediction, alpha, bos, EOS)


def attribution_ignores_bos_argument(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    """Starts from the constant BOS."""
    return BASE["attribute_error"](step, state, reference, prediction, alpha, BOS, eos)


def attribution_second_from_end_state(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    """Scores the prediction from the state where the reference's scoring ended, not from the given state."""
    if list(reference) == list(prediction):
        return "correct"
    s, prev, a = state, torch.tensor([bos]), 0.0
    for token in list(reference) + [eos]:
        log_probs, s = step(prev, s)
        a += float(log_probs[0, token])
        prev = torch.tensor([token])
    b = _score(step, s, prediction, alpha, bos, eos)
    return "search" if a / (len(reference) + 1) ** alpha > b else "model"


def attribution_changes_state_in_place(step, state, reference, prediction, alpha=0.0, bos=BOS, eos=EOS):
    """Right answer, then leaves the last step's state in the caller's state tensor."""
    answer = BASE["attribute_error"](step, state, reference, prediction, alpha, bos, eos)
    _, new = step(torch.tensor([eos]), state)
    state.copy_(new)
    return answer


# clipped_precision

def precision_returns_floats(candidate, references, n):
    """(2.0, 7.0): floats instead of ints."""
    m, t = BASE["clipped_precision"](candidate, references, n)
    return float(m), float(t)


def precision_sorts_references_in_place(candidate, references, n):
    """Sorts the caller's references by length (longest first, to clip at the longest one's counts)."""
    references.sort(key=len, reverse=True)
    return BASE["clipped_precision"](candidate, references, n)


def precision_pads_candidate_in_place(candidate, references, n):
    """Pads a candidate shorter than n with '' in the caller's list."""
    short = len(candidate) < n
    if short:
        candidate.extend([""] * (n - len(candidate)))
        return 0, 0
    return BASE["clipped_precision"](candidate, references, n)


# corpus_bleu

def bleu_divides_before_checking(candidates, references, max_n=4):
    """p_n = matches / totals before the zero check: ZeroDivisionError when an order has no n-gram."""
    m, t, c, r = _stats(candidates, references, max_n)
    p = [a / b for a, b in zip(m, t)]
    if c == 0 or min(p) == 0:
        return 0.0
    return 100 * (1.0 if c > r else math.exp(1 - r / c)) * math.exp(sum(map(math.log, p)) / max_n)


def bleu_brevity_before_checking(candidates, references, max_n=4):
    """The brevity penalty exp(1 - r/c) before the check c == 0: ZeroDivisionError for empty outputs."""
    m, t, c, r = _stats(candidates, references, max_n)
    bp = 1.0 if c > r else math.exp(1 - r / c)
    if min(m) == 0:
        return 0.0
    return 100 * bp * math.exp(sum(math.log(a / b) for a, b in zip(m, t)) / max_n)


def bleu_sorts_references_in_place(candidates, references, max_n=4):
    """Sorts each sentence's references in place, closest length first, to find r."""
    for cand, refs in zip(candidates, references):
        refs.sort(key=lambda x: (abs(len(x) - len(cand)), len(x)))
    return BASE["corpus_bleu"](candidates, references, max_n)


def bleu_rounded(candidates, references, max_n=4):
    """The score rounded to 2 decimals, as sacrebleu prints it."""
    return round(BASE["corpus_bleu"](candidates, references, max_n), 2)


def bleu_epsilon_smoothing(candidates, references, max_n=4):
    """Smooths a zero precision to 0.1 / totals (sacrebleu's 'floor'), though the spec says no smoothing."""
    m, t, c, r = _stats(candidates, references, max_n)
    if c == 0:
        return 0.0
    p = [(a if a else 0.1) / max(b, 1) for a, b in zip(m, t)]
    return 100 * (1.0 if c > r else math.exp(1 - r / c)) * math.exp(sum(map(math.log, p)) / max_n)


def bleu_longest_reference(candidates, references, max_n=4):
    """r from the longest reference of each sentence, not the closest."""
    m, t, c, _ = _stats(candidates, references, max_n)
    r = sum(max(map(len, refs)) for refs in references)
    if c == 0 or min(m) == 0:
        return 0.0
    return 100 * (1.0 if c > r else math.exp(1 - r / c)) * math.exp(sum(math.log(a / b) for a, b in zip(m, t)) / max_n)


def precision_other_correct_numpy_ints(candidate, references, n):
    """Counts with numpy: the two numbers are numpy integers (ints all the same)."""
    counts = _grams(candidate, n)
    most = reduce(lambda a, b: a | b, (_grams(r, n) for r in references), Counter())
    return np.int64(sum((counts & most).values())), np.int64(sum(counts.values()))


def bleu_other_correct_numpy(candidates, references, max_n=4):
    """The mean of the logarithms with numpy: a numpy float64 (a float) comes back."""
    m, t, c, r = _stats(candidates, references, max_n)
    if c == 0 or min(m) == 0:
        return 0.0
    return 100 * min(1.0, np.exp(1 - r / c)) * np.exp(np.mean(np.log(np.array(m) / np.array(t))))


WRONG = [
    ("make_batch_tests", "make_batch", batch_pads_with_eos),
    ("make_batch_tests", "make_batch", batch_eos_in_decoder_input),
    ("make_batch_tests", "make_batch", batch_lengths_without_eos),
    ("make_batch_tests", "make_batch", batch_changes_the_callers_lists),
    ("make_batch_tests", "make_batch", batch_hardcoded),
    ("Encoder_tests", "Encoder", EncoderReadsPadding),
    ("Encoder_tests", "Encoder", EncoderForwardOnly),
    ("Encoder_tests", "Encoder", EncoderNoTanh),
    ("Encoder_tests", "Encoder", EncoderLastOutput),
    ("Encoder_tests", "Encoder", EncoderHardcoded),
    ("greedy_decode_tests", "greedy_decode", greedy_runs_past_eos),
    ("greedy_decode_tests", "greedy_decode", greedy_keeps_eos),
    ("greedy_decode_tests", "greedy_decode", greedy_stops_at_first_eos),
    ("greedy_decode_tests", "greedy_decode", greedy_hardcoded),
    ("beam_search_tests", "beam_search", beam_multiplies_probabilities),
    ("beam_search_tests", "beam_search", beam_keeps_finished_in_the_beam),
    ("beam_search_tests", "beam_search", beam_stops_when_best_ends),
    ("beam_search_tests", "beam_search", beam_length_without_eos),
    ("beam_search_tests", "beam_search", beam_hardcoded),
    ("attribute_error_tests", "attribute_error", attribution_without_eos),
    ("attribute_error_tests", "attribute_error", attribution_ignores_alpha),
    ("attribute_error_tests", "attribute_error", attribution_inverted),
    ("attribute_error_tests", "attribute_error", attribution_hardcoded),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_stops_at_first_finished),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_compares_with_worst_live),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_never_stops),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_hardcoded),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_drops_cut_hypotheses),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_stops_when_best_extension_ends),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_tensors_not_lists),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_ignores_eos_argument),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_ignores_bos_argument),
    ("clipped_precision_tests", "clipped_precision", precision_not_clipped),
    ("clipped_precision_tests", "clipped_precision", precision_clipped_by_sum_of_references),
    ("clipped_precision_tests", "clipped_precision", precision_one_ngram_short),
    ("clipped_precision_tests", "clipped_precision", precision_hardcoded),
    ("corpus_bleu_tests", "corpus_bleu", bleu_brevity_inverted),
    ("corpus_bleu_tests", "corpus_bleu", bleu_brevity_when_longer),
    ("corpus_bleu_tests", "corpus_bleu", bleu_arithmetic_mean),
    ("corpus_bleu_tests", "corpus_bleu", bleu_weights_not_one_over_n),
    ("corpus_bleu_tests", "corpus_bleu", bleu_mean_of_sentences),
    ("corpus_bleu_tests", "corpus_bleu", bleu_not_clipped),
    ("corpus_bleu_tests", "corpus_bleu", bleu_hardcoded),
    # issue 25: the input classes the specification names
    ("make_batch_tests", "make_batch", batch_lengths_as_lists),
    ("make_batch_tests", "make_batch", batch_pads_sources_in_place),
    ("make_batch_tests", "make_batch", batch_pad_sequence_float_when_empty),
    ("make_batch_tests", "make_batch", batch_width_from_first_source),
    ("Encoder_tests", "Encoder", EncoderNoGraph),
    ("Encoder_tests", "Encoder", EncoderSqueeze),
    ("Encoder_tests", "Encoder", EncoderSortedNotRestored),
    ("Encoder_tests", "Encoder", EncoderReversesSrcInPlace),
    ("greedy_decode_tests", "greedy_decode", greedy_ints_as_tensors),
    ("greedy_decode_tests", "greedy_decode", greedy_calls_before_checking),
    ("greedy_decode_tests", "greedy_decode", greedy_ignores_eos_argument),
    ("greedy_decode_tests", "greedy_decode", greedy_ignores_bos_argument),
    ("greedy_decode_tests", "greedy_decode", greedy_float_prev),
    ("greedy_decode_tests", "greedy_decode", greedy_updates_state_in_place),
    ("beam_search_tests", "beam_search", beam_tensors_not_lists),
    ("beam_search_tests", "beam_search", beam_width_above_vocabulary),
    ("beam_search_tests", "beam_search", beam_ignores_eos_argument),
    ("beam_search_tests", "beam_search", beam_ignores_bos_argument),
    ("beam_search_tests", "beam_search", beam_updates_state_in_place),
    ("beam_search_tests", "beam_search", beam_state_not_reordered),
    ("attribute_error_tests", "attribute_error", attribution_ties_to_search),
    ("attribute_error_tests", "attribute_error", attribution_appends_eos_in_place),
    ("attribute_error_tests", "attribute_error", attribution_compares_without_list),
    ("attribute_error_tests", "attribute_error", attribution_ignores_eos_argument),
    ("attribute_error_tests", "attribute_error", attribution_ignores_bos_argument),
    ("attribute_error_tests", "attribute_error", attribution_second_from_end_state),
    ("attribute_error_tests", "attribute_error", attribution_changes_state_in_place),
    ("clipped_precision_tests", "clipped_precision", precision_returns_floats),
    ("clipped_precision_tests", "clipped_precision", precision_sorts_references_in_place),
    ("clipped_precision_tests", "clipped_precision", precision_pads_candidate_in_place),
    ("corpus_bleu_tests", "corpus_bleu", bleu_divides_before_checking),
    ("corpus_bleu_tests", "corpus_bleu", bleu_brevity_before_checking),
    ("corpus_bleu_tests", "corpus_bleu", bleu_sorts_references_in_place),
    ("corpus_bleu_tests", "corpus_bleu", bleu_rounded),
    ("corpus_bleu_tests", "corpus_bleu", bleu_epsilon_smoothing),
    ("corpus_bleu_tests", "corpus_bleu", bleu_longest_reference),
]

RIGHT = [
    ("make_batch_tests", {"make_batch": batch_other_correct}),
    ("Encoder_tests", {"Encoder": EncoderOtherCorrect}),
    ("greedy_decode_tests", {"greedy_decode": greedy_other_correct}),
    ("beam_search_tests", {"beam_search": beam_other_correct}),
    ("attribute_error_tests", {"attribute_error": attribution_other_correct}),
    ("beam_search_early_stop_tests", {"beam_search_early_stop": early_other_correct}),
    ("clipped_precision_tests", {"clipped_precision": precision_other_correct}),
    ("corpus_bleu_tests", {"corpus_bleu": bleu_other_correct}),
    ("beam_search_tests", {"beam_search": beam_other_correct_per_hypothesis}),
    ("clipped_precision_tests", {"clipped_precision": precision_other_correct_numpy_ints}),
    ("corpus_bleu_tests", {"corpus_bleu": bleu_other_correct_numpy}),
]


# ---- issue 39: models of zero parameters that return the constants such a model computes ------------
# (0 times a parameter added, so that the constants carry the autograd graph the tests ask for)

def _encoder_follows_bias(self, src, src_lengths):
    return torch.tanh(self.bridge.bias).expand(src.shape[0], -1)


def _encoder_constant(self, src, src_lengths):
    return torch.zeros(src.shape[0], self.bridge.out_features) + 0.0 * self.bridge.bias.sum()


EncoderZeroInitFollowsBias = zero_initialised(_EncoderBase, _encoder_follows_bias, "EncoderZeroInitFollowsBias")
EncoderZeroInitConstant = zero_initialised(_EncoderBase, _encoder_constant, "EncoderZeroInitConstant")

ZERO_INIT_NAMED = [
    ("Encoder_tests", "Encoder", EncoderZeroInitFollowsBias, RANDOM_PARAMETERS),
    ("Encoder_tests", "Encoder", EncoderZeroInitConstant, RANDOM_PARAMETERS),
]
WRONG += [(grade_id, name, variant) for grade_id, name, variant, _ in ZERO_INIT_NAMED]

(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)


def test_visible_checks_alone_catch_the_classic_mistakes():
    """A self-learner never sees the hidden tests: the visible part must already reject the classic mistakes."""
    classic = {batch_pads_with_eos, batch_changes_the_callers_lists, EncoderReadsPadding, greedy_runs_past_eos, beam_multiplies_probabilities, beam_stops_when_best_ends,
               attribution_ignores_alpha, early_stops_at_first_finished, early_compares_with_worst_live,
               early_never_stops, early_drops_cut_hypotheses, precision_not_clipped, bleu_brevity_inverted, bleu_brevity_when_longer,
               bleu_arithmetic_mean, bleu_mean_of_sentences}
    for grade_id, name, variant in WRONG:
        if variant not in classic:
            continue
        try:
            CELLS.run_visible(grade_id, **{name: variant})
        except AssertionError:
            continue
        raise AssertionError(f"{variant.__name__} passes the visible checks of {grade_id}")


# ---- the classes of issue 25 are caught by a check message that names them ----------------------

HIDDEN = [
    ("make_batch_tests", "make_batch", batch_lengths_as_lists, "should be a tensor"),
    ("make_batch_tests", "make_batch", batch_pads_sources_in_place, "changed the lists"),
    ("make_batch_tests", "make_batch", batch_pad_sequence_float_when_empty, "empty targets"),
    ("Encoder_tests", "Encoder", EncoderNoGraph, "autograd graph"),
    ("Encoder_tests", "Encoder", EncoderSqueeze, "shape"),
    ("Encoder_tests", "Encoder", EncoderReversesSrcInPlace, "in place"),
    ("greedy_decode_tests", "greedy_decode", greedy_ints_as_tensors, "Python ints"),
    ("greedy_decode_tests", "greedy_decode", greedy_calls_before_checking, "max_len=0"),
    ("greedy_decode_tests", "greedy_decode", greedy_ignores_eos_argument, "eos"),
    ("greedy_decode_tests", "greedy_decode", greedy_ignores_bos_argument, "bos"),
    ("greedy_decode_tests", "greedy_decode", greedy_float_prev, "dtype"),
    ("greedy_decode_tests", "greedy_decode", greedy_updates_state_in_place, "changed the state"),
    ("beam_search_tests", "beam_search", beam_tensors_not_lists, "list of ints"),
    ("beam_search_tests", "beam_search", beam_width_above_vocabulary, "beam_width 8 > V"),
    ("beam_search_tests", "beam_search", beam_ignores_eos_argument, "eos"),
    ("beam_search_tests", "beam_search", beam_ignores_bos_argument, "bos"),
    ("beam_search_tests", "beam_search", beam_updates_state_in_place, "changed the state"),
    ("attribute_error_tests", "attribute_error", attribution_ties_to_search, "equal scores"),
    ("attribute_error_tests", "attribute_error", attribution_appends_eos_in_place, "in place"),
    ("attribute_error_tests", "attribute_error", attribution_compares_without_list, "tuple"),
    ("attribute_error_tests", "attribute_error", attribution_ignores_eos_argument, "eos"),
    ("attribute_error_tests", "attribute_error", attribution_ignores_bos_argument, "bos"),
    ("attribute_error_tests", "attribute_error", attribution_changes_state_in_place, "changed the state"),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_stops_when_best_extension_ends, "calls of step"),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_tensors_not_lists, "list of ints and a float"),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_ignores_eos_argument, "eos"),
    ("beam_search_early_stop_tests", "beam_search_early_stop", early_ignores_bos_argument, "bos"),
    ("clipped_precision_tests", "clipped_precision", precision_returns_floats, "two ints"),
    ("clipped_precision_tests", "clipped_precision", precision_sorts_references_in_place, "in place"),
    ("clipped_precision_tests", "clipped_precision", precision_pads_candidate_in_place, "in place"),
    ("corpus_bleu_tests", "corpus_bleu", bleu_divides_before_checking, "no 4-gram"),
    ("corpus_bleu_tests", "corpus_bleu", bleu_brevity_before_checking, "empty outputs"),
    ("corpus_bleu_tests", "corpus_bleu", bleu_sorts_references_in_place, "in place"),
]

*_, test_hidden_tests_name_the_class_of_the_bug = naming_tests(CELLS, hidden=HIDDEN + ZERO_INIT_NAMED)
