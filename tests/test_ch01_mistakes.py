"""Chapter 1's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function of the solution for a variant and runs the exercise's whole
test cell (visible and hidden tests) against it.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np

from mistakes import GradedCells, mistake_tests, naming_tests

CHAPTER = "01-ngram-language-models"
BOS, EOS, UNK = "<s>", "</s>", "<unk>"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base


# ---- build_vocab -------------------------------------------------------------------------------

def vocab_hardcoded(sentences, min_count=2):
    return ["<unk>", "<s>", "</s>", "cat", "the"] if min_count == 2 else ["<unk>", "<s>", "</s>", "cat", "the", "a", "dog", "sat"]


def vocab_strictly_greater(sentences, min_count=2):
    counts = Counter(w for s in sentences for w in s)
    kept = (w for w in counts if counts[w] > min_count and w not in (UNK, BOS, EOS))
    return [UNK, BOS, EOS] + sorted(kept, key=lambda w: (-counts[w], w))


def vocab_duplicates_specials(sentences, min_count=2):
    counts = Counter(w for s in sentences for w in s)
    return [UNK, BOS, EOS] + sorted((w for w in counts if counts[w] >= min_count), key=lambda w: (-counts[w], w))


def vocab_no_tie_break(sentences, min_count=2):
    counts = Counter(w for s in sentences for w in s)
    return [UNK, BOS, EOS] + [w for w, c in counts.most_common() if c >= min_count and w not in (UNK, BOS, EOS)]


def vocab_other_correct(sentences, min_count=2):
    counts: dict[str, int] = {}
    for sentence in sentences:
        for word in sentence:
            counts[word] = counts.get(word, 0) + 1
    by_count = sorted(sorted(counts), key=counts.__getitem__, reverse=True)  # stable: ties stay alphabetical
    return ["<unk>", "<s>", "</s>"] + [w for w in by_count if counts[w] >= min_count and w not in {"<unk>", "<s>", "</s>"}]


# ---- count_ngrams ------------------------------------------------------------------------------

def counts_without_eos(sentences, n):
    table = defaultdict(Counter)
    for s in sentences:
        padded = [BOS] * (n - 1) + s
        for t in range(n - 1, len(padded)):
            table[tuple(padded[t - n + 1:t])][padded[t]] += 1
    return dict(table)


def counts_predicting_bos(sentences, n):
    table = defaultdict(Counter)
    for s in sentences:
        padded = [BOS] * (n - 1) + s + [EOS]
        for t in range(len(padded)):
            table[tuple(([BOS] * n + padded)[t + 1:t + n])][padded[t]] += 1
    return dict(table)


def counts_other_correct(sentences, n):
    if n < 1:
        raise ValueError("n >= 1")
    table: dict = {}
    for s in sentences:
        tokens = (BOS,) * (n - 1) + tuple(s) + (EOS,)
        for gram in zip(*(tokens[i:] for i in range(n))):
            table.setdefault(gram[:-1], Counter())[gram[-1]] += 1
    return table


# ---- mle_prob ----------------------------------------------------------------------------------

def mle_hardcoded(table, word, context):
    """Returns the visible test's expected values (the end-to-end grader used to check this in chapter 1's batch)."""
    return {("a", ("<s>",)): 2 / 3, ("b", ("a",)): 1 / 3, ("</s>", ("a",)): 1 / 3}.get((word, context), 0.0)


def mle_by_word_count(table, word, context):
    total = sum(c[word] for c in table.counts.values())
    return table.count(context, word) / total if total else 0.0


def mle_by_distinct(table, word, context):
    return table.count(context, word) / table.distinct[context] if context in table.distinct else 0.0


def mle_other_correct(table, word, context):
    followers = table.counts.get(context)
    return followers[word] / sum(followers.values()) if followers else 0.0


# ---- sentence_logprob / perplexity ---------------------------------------------------------------

def perplexity_mixed_bases(prob, sentences, n):
    total = 0.0
    for s in sentences:
        padded = [BOS] * (n - 1) + s + [EOS]
        for t in range(n - 1, len(padded)):
            p = prob(padded[t], tuple(padded[t - n + 1:t]))
            if p == 0:
                return math.inf
            total += math.log(p)
    return 2 ** (-total / sum(len(s) + 1 for s in sentences))


def perplexity_without_eos_in_n(prob, sentences, n):
    log_prob = sum(BASE["sentence_logprob"](prob, s, n) for s in sentences)
    return 2 ** (-log_prob / sum(len(s) for s in sentences))


def logprob_without_eos(prob, sentence, n):
    padded = [BOS] * (n - 1) + sentence
    return sum(math.log2(prob(padded[t], tuple(padded[t - n + 1:t]))) for t in range(n - 1, len(padded)))


def logprob_other_correct(prob, sentence, n):
    history = [BOS] * (n - 1)
    total = 0.0
    for word in [*sentence, EOS]:
        p = prob(word, tuple(history[-(n - 1):]) if n > 1 else ())
        total += math.log(p) / math.log(2) if p > 0 else -math.inf
        history.append(word)
    return total


def perplexity_other_correct(prob, sentences, n):
    bits = [logprob_other_correct(prob, s, n) for s in sentences]
    return math.exp(-sum(bits) * math.log(2) / sum(len(s) + 1 for s in sentences))


# ---- addk_prob ---------------------------------------------------------------------------------

def addk_no_kv(table, word, context, k, vocab_size):
    return (table.count(context, word) + k) / (table.total.get(context, 0) + k)


def addk_counts_bos(table, word, context, k, vocab_size):
    return (table.count(context, word) + k) / (table.total.get(context, 0) + k * (vocab_size + 1))


def addk_other_correct(table, word, context, k, vocab_size):
    c_hw = table.counts.get(context, Counter()).get(word, 0)
    c_h = sum(table.counts.get(context, Counter()).values())
    return (c_hw + k) / (c_h + k * vocab_size)


# ---- continuation_counts -----------------------------------------------------------------------

def continuation_sums_counts(counts):
    out = defaultdict(Counter)
    for h, followers in counts.items():
        out[h[1:]].update(followers)
    return dict(out)


def continuation_drops_last(counts):
    out = defaultdict(Counter)
    for h, followers in counts.items():
        for w in followers:
            out[h[:-1]][w] += 1
    return dict(out)


def continuation_other_correct(counts):
    pairs = {(h[1:], w) for h, followers in counts.items() for w, c in followers.items() if c > 0 for _ in [h[0]]}
    left = defaultdict(set)
    for h, followers in counts.items():
        for w in followers:
            left[(h[1:], w)].add(h[0])
    out: dict = {}
    for (hp, w) in pairs:
        out.setdefault(hp, Counter())[w] = len(left[(hp, w)])
    return out


# ---- kn_prob -----------------------------------------------------------------------------------

def kn_gamma_from_total(word, context, kn_tables, discount=0.75):
    table = kn_tables[len(context)]
    if not context:
        return table.count((), word) / table.total[()]
    lower = kn_gamma_from_total(word, context[1:], kn_tables, discount)
    total = table.total.get(context, 0)
    if not total:
        return lower
    return (max(table.count(context, word) - discount, 0) + discount * lower) / total


def kn_no_backoff_for_unseen(word, context, kn_tables, discount=0.75):
    table = kn_tables[len(context)]
    if not context:
        return table.count((), word) / table.total[()]
    total = table.total.get(context, 0)
    if not total:
        return 0.0
    lower = kn_no_backoff_for_unseen(word, context[1:], kn_tables, discount)
    return (max(table.count(context, word) - discount, 0) + discount * table.distinct[context] * lower) / total


def kn_no_max(word, context, kn_tables, discount=0.75):
    table = kn_tables[len(context)]
    if not context:
        return table.count((), word) / table.total[()]
    lower = kn_no_max(word, context[1:], kn_tables, discount)
    total = table.total.get(context, 0)
    if not total:
        return lower
    return (table.count(context, word) - discount + discount * table.distinct[context] * lower) / total


def kn_wrong_end(word, context, kn_tables, discount=0.75):
    table = kn_tables[len(context)]
    if not context:
        return table.count((), word) / table.total[()]
    lower = kn_wrong_end(word, context[:-1], kn_tables, discount)
    total = table.total.get(context, 0)
    if not total:
        return lower
    return (max(table.count(context, word) - discount, 0) + discount * table.distinct[context] * lower) / total


def kn_other_correct(word, context, kn_tables, discount=0.75):
    p = kn_tables[0].counts[()][word] / kn_tables[0].total[()]
    for length in range(1, len(context) + 1):
        h = context[-length:]
        table = kn_tables[length]
        if table.total.get(h):
            c = table.counts[h][word]
            p = (c - discount if c > discount else 0.0) / table.total[h] + discount * table.distinct[h] / table.total[h] * p
    return p


# ---- sample_sentence ---------------------------------------------------------------------------

def sample_keeps_eos(prob, vocab, n, rng, max_len=40):
    out = BASE["sample_sentence"](prob, vocab, n, rng, max_len)
    return out + [EOS] if len(out) < max_len else out


def sample_global_rng(prob, vocab, n, rng, max_len=40):
    candidates = [w for w in vocab if w != BOS]
    context, out = (BOS,) * (n - 1), []
    while len(out) < max_len:
        p = np.array([prob(w, context) for w in candidates])
        w = candidates[np.random.choice(len(candidates), p=p / p.sum())]
        if w == EOS:
            break
        out.append(w)
        context = (context + (w,))[1:] if n > 1 else ()
    return out


def sample_frozen_context(prob, vocab, n, rng, max_len=40):
    candidates = [w for w in vocab if w != BOS]
    context, out = (BOS,) * (n - 1), []
    while len(out) < max_len:
        p = np.array([prob(w, context) for w in candidates])
        w = candidates[rng.choice(len(candidates), p=p / p.sum())]
        if w == EOS:
            break
        out.append(w)
    return out


def sample_other_correct(prob, vocab, n, rng, max_len=40):
    candidates = [w for w in vocab if w != "<s>"]
    history = ["<s>"] * (n - 1)
    out = []
    for _ in range(max_len):
        context = tuple(history[len(history) - (n - 1):]) if n > 1 else ()
        weights = np.array([prob(w, context) for w in candidates])
        cumulative = np.cumsum(weights / weights.sum())
        w = candidates[min(int(np.searchsorted(cumulative, rng.random(), side="right")), len(candidates) - 1)]
        if w == "</s>":
            break
        out.append(w)
        history.append(w)
    return out


# ---- the classes of bugs of issue 14: inputs changed in place, boundaries, numerics at scale ------

def counts_pad_in_place(sentences, n):
    """Appends </s> to the caller's sentences, and never takes it off again."""
    counts = defaultdict(Counter)
    for sentence in sentences:
        sentence.append(EOS)
        padded = [BOS] * (n - 1) + sentence
        for t in range(n - 1, len(padded)):
            counts[tuple(padded[t - n + 1:t])][padded[t]] += 1
    return dict(counts)


def logprob_as_product(prob, sentence, n):
    """Multiplies the probabilities and takes one log at the end: underflows on long sentences."""
    padded = [BOS] * (n - 1) + list(sentence) + [EOS]
    product = 1.0
    for t in range(n - 1, len(padded)):
        product *= prob(padded[t], tuple(padded[t - n + 1:t]))
    return math.log2(product) if product > 0 else -math.inf


def continuation_destroys_input(counts):
    """Right counts, but it empties the caller's Counters on the way."""
    result = defaultdict(Counter)
    for context, followers in counts.items():
        for word in list(followers):
            if followers.pop(word) > 0:
                result[context[1:]][word] += 1
    return dict(result)


def kn_unseen_jumps_to_unigram(word, context, kn_tables, discount=0.75):
    """An unseen context backs off straight to the unigram, skipping a shorter context that was seen."""
    if context and kn_tables[len(context)].total.get(context, 0) == 0:
        return BASE["kn_prob"](word, (), kn_tables[:1], discount)
    table = kn_tables[len(context)]
    if not context:
        return table.count((), word) / table.total[()]
    lower = kn_unseen_jumps_to_unigram(word, context[1:], kn_tables, discount)
    total = table.total[context]
    return (max(table.count(context, word) - discount, 0.0) + discount * table.distinct[context] * lower) / total


def sample_removes_bos_from_vocab(prob, vocab, n, rng, max_len=40):
    """Takes <s> out of the caller's vocabulary list."""
    if BOS in vocab:
        vocab.remove(BOS)
    return BASE["sample_sentence"](prob, vocab, n, rng, max_len)


# ---- issue 25: every input class the specification names (edge inputs, defaults, types, in place) ----

def vocab_default_min_count_1(sentences, min_count=1):
    """The right algorithm with the wrong default."""
    return BASE["build_vocab"](sentences, min_count)


def vocab_concatenate_crashes_on_empty(sentences, min_count=2):
    """np.concatenate of no sentences raises a ValueError."""
    words, counts = np.unique(np.concatenate([np.asarray(s, dtype=str) for s in sentences]), return_counts=True)
    kept = [(int(-c), str(w)) for w, c in zip(words, counts) if c >= min_count and w not in (UNK, BOS, EOS)]
    return [UNK, BOS, EOS] + [w for _, w in sorted(kept)]


def vocab_strips_specials_in_place(sentences, min_count=2):
    """Takes the special tokens out of the caller's sentences before counting."""
    for sentence in sentences:
        sentence[:] = [w for w in sentence if w not in (UNK, BOS, EOS)]
    return BASE["build_vocab"](sentences, min_count)


def vocab_numpy_correct(sentences, min_count=2):
    """np.unique with counts and a lexsort; no words at all handled first."""
    words = [w for s in sentences for w in s]
    if not words:
        return [UNK, BOS, EOS]
    unique, counts = np.unique(np.array(words, dtype=object).astype(str), return_counts=True)
    order = np.lexsort((unique, -counts))  # by -count, then alphabetically
    return [UNK, BOS, EOS] + [str(unique[i]) for i in order if counts[i] >= min_count and unique[i] not in (UNK, BOS, EOS)]


def counts_hardcoded(sentences, n):
    if sentences == [["a", "b"], ["a"]]:
        return ({("<s>",): Counter({"a": 2}), ("a",): Counter({"b": 1, "</s>": 1}), ("b",): Counter({"</s>": 1})}
                if n == 2 else {(): Counter({"a": 2, "b": 1, "</s>": 2})})
    return {}


def counts_plain_dicts(sentences, n):
    """Plain dicts of counts instead of Counters: a word never seen after a context is a KeyError downstream."""
    return {h: dict(c) for h, c in BASE["count_ngrams"](sentences, n).items()}


def counts_skip_empty_sentences(sentences, n):
    return BASE["count_ngrams"]([s for s in sentences if s], n)


def counts_raises_only_for_zero(sentences, n):
    if n == 0:
        raise ValueError("n must be at least 1")
    table = defaultdict(Counter)
    for s in sentences:
        padded = [BOS] * (n - 1) + list(s) + [EOS]
        for t in range(n - 1, len(padded)):
            table[tuple(padded[t - n + 1:t])][padded[t]] += 1
    return dict(table)


def counts_asserts_n(sentences, n):
    """An assert where the documented error is a ValueError."""
    assert n >= 1, "n must be at least 1"
    return BASE["count_ngrams"](sentences, n)


def mle_keyerror_for_unseen_context(table, word, context):
    return table.count(context, word) / table.total[context]


def mle_zero_division(table, word, context):
    """Tests whether the context is a key, not whether c(h) = 0."""
    if context not in table.total:
        return 0.0
    return table.count(context, word) / table.total[context]


def mle_setdefault_in_place(table, word, context):
    """Right values, but it adds the unseen context to the caller's table."""
    total = table.total.setdefault(context, 0)
    return table.count(context, word) / total if total else 0.0


def logprob_hardcoded(prob, sentence, n):
    if sentence == ["a", "b", "c"]:
        return -8.0
    if sentence == ["a", "b"]:
        return -math.inf
    return 0.0


def perplexity_hardcoded(prob, sentences, n):
    if sentences == [["a", "b", "c"], ["d"]]:
        return 4.0
    if sentences == [["a"], ["a", "b"]]:
        return math.inf
    return 1.0


def logprob_empty_sentence_is_zero(prob, sentence, n):
    if not sentence:
        return 0.0
    return BASE["sentence_logprob"](prob, sentence, n)


def logprob_appends_eos_in_place(prob, sentence, n):
    """Appends </s> to the caller's sentence."""
    sentence.append(EOS)
    padded = [BOS] * (n - 1) + sentence
    total = 0.0
    for t in range(n - 1, len(padded)):
        p = prob(padded[t], tuple(padded[t - n + 1:t]))
        if p <= 0:
            return -math.inf
        total += math.log2(p)
    return total


def perplexity_appends_eos_in_place(prob, sentences, n):
    """Right value, but it appends </s> to every caller's sentence to count the predictions."""
    total, predicted = 0.0, 0
    for sentence in sentences:
        total += BASE["sentence_logprob"](prob, sentence, n)
        sentence.append(EOS)
        predicted += len(sentence)
    return 2.0 ** (-total / predicted)


def addk_hardcoded(table, word, context, k, vocab_size):
    """The visible test's numbers; the uniform 1/V (which sums to 1) anywhere else."""
    known = {("b", ("a",), 1.0): 2 / 7, ("<unk>", ("a",), 0.5): 0.1}
    return known.get((word, context, k), 1 / vocab_size)


def addk_setdefault_in_place(table, word, context, k, vocab_size):
    """Right values, but it adds an unseen context to the caller's table."""
    followers = table.counts.setdefault(context, Counter())
    return (followers[word] + k) / (sum(followers.values()) + k * vocab_size)


def continuation_hardcoded(counts):
    if ("x", "y") in counts:
        return {("b",): Counter({"c": 2, "d": 1}), ("y",): Counter({"c": 1})}
    if ("a",) in counts:
        return {(): Counter({"c": 2})}
    return {}


def continuation_order_from_first_key(counts):
    """Reads the order from the first key: StopIteration for no counts at all."""
    order = len(next(iter(counts)))
    out = defaultdict(Counter)
    for h, followers in counts.items():
        for w, c in followers.items():
            if c > 0:
                out[h[1:order]][w] += 1
    return dict(out)


def continuation_counts_zero_entries(counts):
    """Counts every key of a Counter, also one whose count is 0."""
    out = defaultdict(Counter)
    for h, followers in counts.items():
        for w in followers:
            out[h[1:]][w] += 1
    return dict(out)


def continuation_plain_dicts(counts):
    out: dict = {}
    for h, followers in counts.items():
        for w, c in followers.items():
            if c > 0:
                out.setdefault(h[1:], {})[w] = out.get(h[1:], {}).get(w, 0) + 1
    return out


def kn_hardcoded(word, context, kn_tables, discount=0.75):
    """The visible test's three numbers; the continuation unigram (which sums to 1) anywhere else."""
    p_c_given_b = (0.25 + 0.75 * 3 * 0.25) / 3
    known = {("b", ()): 2 / 8, ("c", ("b",)): p_c_given_b, ("c", ("a", "b")): (0.25 + 0.75 * 2 * p_c_given_b) / 2}
    if (word, context) in known:
        return known[(word, context)]
    return kn_tables[0].count((), word) / kn_tables[0].total[()]


def kn_setdefault_in_place(word, context, kn_tables, discount=0.75):
    """Right values, but it records c(h) = 0 for every unseen context in the caller's tables."""
    table = kn_tables[len(context)]
    if not context:
        return table.count((), word) / table.total[()]
    lower = kn_setdefault_in_place(word, context[1:], kn_tables, discount)
    total = table.total.setdefault(context, 0)
    if total == 0:
        return lower
    return (max(table.count(context, word) - discount, 0.0) + discount * table.distinct[context] * lower) / total


def kn_loop_correct(word, context, kn_tables, discount=0.75):
    """Bottom up with a loop, the shorter context first (the hidden reference's way, written again)."""
    p = kn_tables[0].count((), word) / kn_tables[0].total[()]
    for length in range(1, len(context) + 1):
        table, h = kn_tables[length], tuple(context[len(context) - length:])
        total = table.total.get(h, 0)
        if total > 0:
            p = (max(table.count(h, word) - discount, 0) + discount * table.distinct[h] * p) / total
    return float(p)


def sample_hardcoded(prob, vocab, n, rng, max_len=40):
    if "a" in vocab and "b" in vocab:
        return ["a", "b", "c"][:max_len]
    return []


def sample_default_max_len_100(prob, vocab, n, rng, max_len=100):
    return BASE["sample_sentence"](prob, vocab, n, rng, max_len)


def sample_removes_bos_from_copy(prob, vocab, n, rng, max_len=40):
    """list.remove raises a ValueError when vocab has no <s>."""
    candidates = list(vocab)
    candidates.remove(BOS)
    return BASE["sample_sentence"](prob, candidates, n, rng, max_len)


def sample_returns_array(prob, vocab, n, rng, max_len=40):
    return np.array(BASE["sample_sentence"](prob, vocab, n, rng, max_len))


# ---- interpolated_prob (Jelinek-Mercer) ----------------------------------------------------------

def _jm_weights_ok(lambdas, tables):
    weights = [float(x) for x in lambdas]
    if len(weights) != len(tables) or min(weights) < 0 or not math.isclose(sum(weights), 1.0, abs_tol=1e-9):
        raise ValueError(f"bad lambdas {weights}")
    return weights


def jm_hardcoded(word, context, tables, lambdas):
    """The visible test's answers: the worked example, the unseen context, and the unigram otherwise."""
    _jm_weights_ok(lambdas, tables)
    known = {("b", ("<s>", "a")): 0.4, ("b", ("b", "a")): 0.2 * 2 / 8 + 0.8 / 3}
    if tuple(lambdas) == (0.2, 0.3, 0.5) and (word, tuple(context)) in known:
        return known[(word, tuple(context))]
    return tables[0].count((), word) / tables[0].total[()]


def _jm_mix(word, context, tables, weights, *, oldest=False):
    """The solution's mix, longest context first, an unseen context's weight carried to the next shorter one; with
    ``oldest`` the order-j context is the first j tokens (a mistake) instead of the last j."""
    prob, carried = 0.0, 0.0
    for j in range(len(tables) - 1, -1, -1):
        h = tuple(context[:j]) if oldest else tuple(context[len(context) - j:])
        total = tables[j].total.get(h, 0)
        if total == 0:
            carried += weights[j]
            continue
        prob += (weights[j] + carried) * tables[j].count(h, word) / total
        carried = 0.0
    return prob


def jm_no_weight_check(word, context, tables, lambdas):
    return _jm_mix(word, context, tables, lambdas)


def jm_exact_sum_check(word, context, tables, lambdas):
    if len(lambdas) != len(tables) or min(lambdas) < 0 or sum(lambdas) != 1:
        raise ValueError(f"lambdas must sum to 1, got {sum(lambdas)}")
    return jm_no_weight_check(word, context, tables, lambdas)


def jm_divides_by_unseen(word, context, tables, lambdas):
    weights = _jm_weights_ok(lambdas, tables)
    return sum(weights[j] * tables[j].count(tuple(context[len(context) - j:]), word)
               / tables[j].total.get(tuple(context[len(context) - j:]), 0) for j in range(len(tables)))


def jm_unseen_gives_zero(word, context, tables, lambdas):
    weights = _jm_weights_ok(lambdas, tables)
    return sum(weights[j] * BASE["mle_prob"](tables[j], word, tuple(context[len(context) - j:])) for j in range(len(tables)))


def jm_reversed_weights(word, context, tables, lambdas):
    weights = _jm_weights_ok(lambdas, tables)
    return BASE["interpolated_prob"](word, context, tables, weights[::-1])


def jm_unseen_to_unigram(word, context, tables, lambdas):
    weights = _jm_weights_ok(lambdas, tables)
    prob, lost = 0.0, 0.0
    for j in range(1, len(tables)):
        h = tuple(context[len(context) - j:])
        total = tables[j].total.get(h, 0)
        if total == 0:
            lost += weights[j]
        else:
            prob += weights[j] * tables[j].count(h, word) / total
    return prob + (weights[0] + lost) * tables[0].count((), word) / tables[0].total[()]


def jm_oldest_tokens(word, context, tables, lambdas):
    return _jm_mix(word, context, tables, _jm_weights_ok(lambdas, tables), oldest=True)


def jm_normalises_in_place(word, context, tables, lambdas):
    if isinstance(lambdas, list):
        total = sum(lambdas)
        for i in range(len(lambdas)):
            lambdas[i] = lambdas[i] / total
    return BASE["interpolated_prob"](word, context, tables, lambdas)


def jm_asserts_weights(word, context, tables, lambdas):
    assert len(lambdas) == len(tables) and min(lambdas) >= 0 and abs(sum(lambdas) - 1) < 1e-9, "bad lambdas"
    return jm_no_weight_check(word, context, tables, [float(x) for x in lambdas])


def jm_allows_negative(word, context, tables, lambdas):
    if len(lambdas) != len(tables) or not math.isclose(sum(lambdas), 1.0, abs_tol=1e-9):
        raise ValueError("lambdas must sum to 1")
    return jm_no_weight_check(word, context, tables, [float(x) for x in lambdas])


def jm_recursive_correct(word, context, tables, lambdas):
    """Another correct implementation: the longest seen context takes the weights of every longer one."""
    weights = np.asarray(lambdas, dtype=float)
    if weights.shape != (len(tables),) or (weights < 0).any() or abs(weights.sum() - 1) > 1e-9:
        raise ValueError(f"expected {len(tables)} weights >= 0 summing to 1, got {weights}")
    contexts = [tuple(context)[len(context) - j:] if j else () for j in range(len(tables))]
    seen = [j for j in range(len(tables)) if tables[j].total.get(contexts[j], 0) > 0]
    top = max(seen, default=0)
    mle = [BASE["mle_prob"](tables[j], word, contexts[j]) for j in range(top + 1)]
    return float(sum(weights[j] * mle[j] for j in range(top)) + weights[top:].sum() * mle[top])


# ---- tune_lambdas ----------------------------------------------------------------------------------

def tune_hardcoded(component_probs, grid):
    return (0.5, 0.5), 0.03 ** (-1 / 3)


def _grid_search(component_probs, grid, perplexity, *, keep_ties_last=False, start_from_none=False):
    """The solution's loop over the grid with one thing changed: how a candidate's perplexity is computed, whether
    a tie replaces the best so far, or what the search starts from."""
    best, best_ppl = (None if start_from_none else grid[0]), math.inf
    for lam in grid:
        p = np.asarray(component_probs) @ np.asarray(lam, dtype=float)  # (N,)
        ppl = perplexity(p)
        if ppl < best_ppl or (keep_ties_last and ppl == best_ppl):
            best, best_ppl = lam, ppl
    return best, float(best_ppl)


def _guarded(ppl_of_positive):
    return lambda p: math.inf if (p <= 0).any() else ppl_of_positive(p)


def tune_math_log_of_zero(component_probs, grid):
    return _grid_search(component_probs, grid, lambda p: 2.0 ** -(sum(math.log2(x) for x in p) / len(p)))


def tune_numpy_log_of_zero(component_probs, grid):
    # log2(0) = -inf with a RuntimeWarning on stderr
    return _grid_search(component_probs, grid, lambda p: 2.0 ** -float(np.mean(np.log2(p))))


def tune_mean_probability(component_probs, grid):
    scores = [float(np.mean(np.asarray(component_probs) @ np.asarray(lam, dtype=float))) for lam in grid]
    best = grid[int(np.argmax(scores))]
    return best, BASE["tune_lambdas"](component_probs, [best])[1]


def tune_highest_perplexity(component_probs, grid):
    scores = [BASE["tune_lambdas"](component_probs, [lam])[1] for lam in grid]
    best = int(np.argmax([s if math.isfinite(s) else -1 for s in scores]))
    return grid[best], scores[best]


def tune_mixed_bases(component_probs, grid):
    return _grid_search(component_probs, grid, _guarded(lambda p: 2.0 ** -float(np.mean(np.log(p)))))


def tune_sum_not_mean(component_probs, grid):
    return _grid_search(component_probs, grid, _guarded(lambda p: 2.0 ** -float(np.sum(np.log2(p)))))


def tune_last_of_ties(component_probs, grid):
    return _grid_search(component_probs, grid, _guarded(lambda p: 2.0 ** -float(np.mean(np.log2(p)))),
                        keep_ties_last=True)


def tune_skips_infinite_start(component_probs, grid):
    """Starts from None and returns it when every candidate has perplexity inf."""
    return _grid_search(component_probs, grid, _guarded(lambda p: 2.0 ** -float(np.mean(np.log2(p)))), start_from_none=True)


def tune_vectorised_correct(component_probs, grid):
    """Another correct implementation: every candidate at once, with the log of 0 kept out of numpy's way."""
    q = np.asarray(component_probs, dtype=float)  # (N, n)
    lams = np.asarray(grid, dtype=float)  # (G, n)
    p = q @ lams.T  # (N, G)
    zero = (p <= 0).any(axis=0)  # (G,)
    logs = np.log2(np.where(p > 0, p, 1.0)).mean(axis=0)  # (G,)
    ppl = np.where(zero, np.inf, 2.0 ** -logs)
    best = int(np.argmin(ppl))  # the first of ties
    return grid[best], float(ppl[best])


WRONG = [
    ("build_vocab_tests", "build_vocab", vocab_hardcoded),
    ("build_vocab_tests", "build_vocab", vocab_strictly_greater),
    ("build_vocab_tests", "build_vocab", vocab_duplicates_specials),
    ("build_vocab_tests", "build_vocab", vocab_no_tie_break),
    ("count_ngrams_tests", "count_ngrams", counts_without_eos),
    ("count_ngrams_tests", "count_ngrams", counts_predicting_bos),
    ("mle_prob_tests", "mle_prob", mle_hardcoded),
    ("mle_prob_tests", "mle_prob", mle_by_word_count),
    ("mle_prob_tests", "mle_prob", mle_by_distinct),
    ("perplexity_tests", "perplexity", perplexity_mixed_bases),
    ("perplexity_tests", "perplexity", perplexity_without_eos_in_n),
    ("perplexity_tests", "sentence_logprob", logprob_without_eos),
    ("addk_prob_tests", "addk_prob", addk_no_kv),
    ("addk_prob_tests", "addk_prob", addk_counts_bos),
    ("continuation_counts_tests", "continuation_counts", continuation_sums_counts),
    ("continuation_counts_tests", "continuation_counts", continuation_drops_last),
    ("kn_prob_tests", "kn_prob", kn_gamma_from_total),
    ("kn_prob_tests", "kn_prob", kn_no_backoff_for_unseen),
    ("kn_prob_tests", "kn_prob", kn_no_max),
    ("kn_prob_tests", "kn_prob", kn_wrong_end),
    ("sample_sentence_tests", "sample_sentence", sample_keeps_eos),
    ("sample_sentence_tests", "sample_sentence", sample_global_rng),
    ("sample_sentence_tests", "sample_sentence", sample_frozen_context),
    ("count_ngrams_tests", "count_ngrams", counts_pad_in_place),
    ("perplexity_tests", "sentence_logprob", logprob_as_product),
    ("continuation_counts_tests", "continuation_counts", continuation_destroys_input),
    ("kn_prob_tests", "kn_prob", kn_unseen_jumps_to_unigram),
    ("sample_sentence_tests", "sample_sentence", sample_removes_bos_from_vocab),
    # issue 25
    ("build_vocab_tests", "build_vocab", vocab_default_min_count_1),
    ("build_vocab_tests", "build_vocab", vocab_concatenate_crashes_on_empty),
    ("build_vocab_tests", "build_vocab", vocab_strips_specials_in_place),
    ("count_ngrams_tests", "count_ngrams", counts_hardcoded),
    ("count_ngrams_tests", "count_ngrams", counts_plain_dicts),
    ("count_ngrams_tests", "count_ngrams", counts_skip_empty_sentences),
    ("count_ngrams_tests", "count_ngrams", counts_raises_only_for_zero),
    ("count_ngrams_tests", "count_ngrams", counts_asserts_n),
    ("mle_prob_tests", "mle_prob", mle_keyerror_for_unseen_context),
    ("mle_prob_tests", "mle_prob", mle_zero_division),
    ("mle_prob_tests", "mle_prob", mle_setdefault_in_place),
    ("perplexity_tests", "sentence_logprob", logprob_hardcoded),
    ("perplexity_tests", "perplexity", perplexity_hardcoded),
    ("perplexity_tests", "sentence_logprob", logprob_empty_sentence_is_zero),
    ("perplexity_tests", "sentence_logprob", logprob_appends_eos_in_place),
    ("perplexity_tests", "perplexity", perplexity_appends_eos_in_place),
    ("addk_prob_tests", "addk_prob", addk_hardcoded),
    ("addk_prob_tests", "addk_prob", addk_setdefault_in_place),
    ("continuation_counts_tests", "continuation_counts", continuation_hardcoded),
    ("continuation_counts_tests", "continuation_counts", continuation_order_from_first_key),
    ("continuation_counts_tests", "continuation_counts", continuation_counts_zero_entries),
    ("continuation_counts_tests", "continuation_counts", continuation_plain_dicts),
    ("kn_prob_tests", "kn_prob", kn_hardcoded),
    ("kn_prob_tests", "kn_prob", kn_setdefault_in_place),
    ("sample_sentence_tests", "sample_sentence", sample_hardcoded),
    ("sample_sentence_tests", "sample_sentence", sample_default_max_len_100),
    ("sample_sentence_tests", "sample_sentence", sample_removes_bos_from_copy),
    ("sample_sentence_tests", "sample_sentence", sample_returns_array),
    # issue 26: Jelinek-Mercer interpolation tuned on dev
    ("interpolated_prob_tests", "interpolated_prob", jm_hardcoded),
    ("interpolated_prob_tests", "interpolated_prob", jm_no_weight_check),
    ("interpolated_prob_tests", "interpolated_prob", jm_exact_sum_check),
    ("interpolated_prob_tests", "interpolated_prob", jm_divides_by_unseen),
    ("interpolated_prob_tests", "interpolated_prob", jm_unseen_gives_zero),
    ("interpolated_prob_tests", "interpolated_prob", jm_reversed_weights),
    ("interpolated_prob_tests", "interpolated_prob", jm_unseen_to_unigram),
    ("interpolated_prob_tests", "interpolated_prob", jm_oldest_tokens),
    ("interpolated_prob_tests", "interpolated_prob", jm_normalises_in_place),
    ("interpolated_prob_tests", "interpolated_prob", jm_asserts_weights),
    ("interpolated_prob_tests", "interpolated_prob", jm_allows_negative),
    ("tune_lambdas_tests", "tune_lambdas", tune_hardcoded),
    ("tune_lambdas_tests", "tune_lambdas", tune_math_log_of_zero),
    ("tune_lambdas_tests", "tune_lambdas", tune_numpy_log_of_zero),
    ("tune_lambdas_tests", "tune_lambdas", tune_mean_probability),
    ("tune_lambdas_tests", "tune_lambdas", tune_highest_perplexity),
    ("tune_lambdas_tests", "tune_lambdas", tune_mixed_bases),
    ("tune_lambdas_tests", "tune_lambdas", tune_sum_not_mean),
    ("tune_lambdas_tests", "tune_lambdas", tune_last_of_ties),
    ("tune_lambdas_tests", "tune_lambdas", tune_skips_infinite_start),
]

RIGHT = [
    ("build_vocab_tests", {"build_vocab": vocab_other_correct}),
    ("count_ngrams_tests", {"count_ngrams": counts_other_correct}),
    ("mle_prob_tests", {"mle_prob": mle_other_correct}),
    ("perplexity_tests", {"sentence_logprob": logprob_other_correct, "perplexity": perplexity_other_correct}),
    ("addk_prob_tests", {"addk_prob": addk_other_correct}),
    ("continuation_counts_tests", {"continuation_counts": continuation_other_correct}),
    ("kn_prob_tests", {"kn_prob": kn_other_correct}),
    ("sample_sentence_tests", {"sample_sentence": sample_other_correct}),
    ("build_vocab_tests", {"build_vocab": vocab_numpy_correct}),
    ("kn_prob_tests", {"kn_prob": kn_loop_correct}),
    ("interpolated_prob_tests", {"interpolated_prob": jm_recursive_correct}),
    ("tune_lambdas_tests", {"tune_lambdas": tune_vectorised_correct}),
]


(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)


# ---- the new classes are caught by a check message that names them ------------------------------


HIDDEN = [
    ("count_ngrams_tests", "count_ngrams", counts_pad_in_place, "in place"),
    ("perplexity_tests", "sentence_logprob", logprob_as_product, "underflows"),
    ("continuation_counts_tests", "continuation_counts", continuation_destroys_input, "in place"),
    ("kn_prob_tests", "kn_prob", kn_unseen_jumps_to_unigram, "context[1:]"),
    ("sample_sentence_tests", "sample_sentence", sample_removes_bos_from_vocab, "in place"),
    # issue 25
    ("build_vocab_tests", "build_vocab", vocab_default_min_count_1, "default"),
    ("build_vocab_tests", "build_vocab", vocab_concatenate_crashes_on_empty, "no words at all"),
    ("build_vocab_tests", "build_vocab", vocab_strips_specials_in_place, "in place"),
    ("count_ngrams_tests", "count_ngrams", counts_plain_dicts, "collections.Counter"),
    ("count_ngrams_tests", "count_ngrams", counts_skip_empty_sentences, "empty sentence"),
    ("count_ngrams_tests", "count_ngrams", counts_raises_only_for_zero, "count_ngrams(sentences, -1)"),
    ("count_ngrams_tests", "count_ngrams", counts_asserts_n, "ValueError"),
    ("mle_prob_tests", "mle_prob", mle_zero_division, "c(h) = 0"),
    ("mle_prob_tests", "mle_prob", mle_setdefault_in_place, "in place"),
    ("perplexity_tests", "sentence_logprob", logprob_empty_sentence_is_zero, "empty sentence"),
    ("perplexity_tests", "sentence_logprob", logprob_appends_eos_in_place, "in place"),
    ("perplexity_tests", "perplexity", perplexity_appends_eos_in_place, "in place"),
    ("addk_prob_tests", "addk_prob", addk_setdefault_in_place, "in place"),
    ("continuation_counts_tests", "continuation_counts", continuation_order_from_first_key, "no counts at all"),
    ("continuation_counts_tests", "continuation_counts", continuation_counts_zero_entries, "count of 0"),
    ("continuation_counts_tests", "continuation_counts", continuation_plain_dicts, "collections.Counter"),
    ("kn_prob_tests", "kn_prob", kn_setdefault_in_place, "in place"),
    ("sample_sentence_tests", "sample_sentence", sample_default_max_len_100, "default"),
    ("sample_sentence_tests", "sample_sentence", sample_removes_bos_from_copy, "without <s>"),
    ("sample_sentence_tests", "sample_sentence", sample_returns_array, "list of str"),
    # issue 26
    ("interpolated_prob_tests", "interpolated_prob", jm_unseen_to_unigram, "next shorter"),
    ("interpolated_prob_tests", "interpolated_prob", jm_normalises_in_place, "in place"),
    ("interpolated_prob_tests", "interpolated_prob", jm_asserts_weights, "ValueError"),
    ("interpolated_prob_tests", "interpolated_prob", jm_allows_negative, "negative weight"),
    ("tune_lambdas_tests", "tune_lambdas", tune_last_of_ties, "tie"),
    ("tune_lambdas_tests", "tune_lambdas", tune_skips_infinite_start, "first candidate"),
]

# The visible tests alone catch the classic mistakes of Jelinek-Mercer, with a message that names each (issue 26).
VISIBLE = [
    ("interpolated_prob_tests", "interpolated_prob", jm_no_weight_check, "sum to 1.1"),
    ("interpolated_prob_tests", "interpolated_prob", jm_exact_sum_check, "math.isclose"),
    ("interpolated_prob_tests", "interpolated_prob", jm_divides_by_unseen, "never divide"),
    ("interpolated_prob_tests", "interpolated_prob", jm_unseen_gives_zero, "next shorter one"),
    ("interpolated_prob_tests", "interpolated_prob", jm_reversed_weights, "lambdas[0] weighs tables[0]"),
    ("interpolated_prob_tests", "interpolated_prob", jm_oldest_tokens, "LAST j tokens"),
    ("tune_lambdas_tests", "tune_lambdas", tune_math_log_of_zero, "before taking a log"),
    ("tune_lambdas_tests", "tune_lambdas", tune_numpy_log_of_zero, "before taking a log"),
    ("tune_lambdas_tests", "tune_lambdas", tune_mean_probability, "mean probability"),
    ("tune_lambdas_tests", "tune_lambdas", tune_highest_perplexity, "LOWEST"),
    ("tune_lambdas_tests", "tune_lambdas", tune_mixed_bases, "one base"),
    ("tune_lambdas_tests", "tune_lambdas", tune_sum_not_mean, "not the sum"),
]

(test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution,
 test_hidden_tests_name_the_class_of_the_bug) = naming_tests(CELLS, visible=VISIBLE, hidden=HIDDEN)
