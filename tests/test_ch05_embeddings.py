"""Chapter 5 (word embeddings): the solutions against references, and the measured targets.

The comparison with gensim trains both on the whole Brown training split with the same settings
(skip-gram, negative sampling, window, dimension, min_count, subsampling, epochs, one worker, a
fixed seed) and compares WordSim-353 Spearman correlation, nearest-neighbour overlap and time.
gensim is a test dependency only.
"""

import json
import re
import time
from collections import Counter

import numpy as np
import pytest
import torch

from course import LEARNER_BUDGET_S, SOLUTIONS, errors_of, execute, load_definitions, printed_text, reads_learner_run, record
from seqlab.data import load_brown
from seqlab.embeddings import (analogy_accuracy, huffman_tree, load_analogies, load_glove, load_similarity,
                               similarity_spearman)

CHAPTER = "05-word-embeddings"
NOTEBOOK = SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb"
SETTINGS = dict(dim=50, window=5, negative=5, sample=1e-3, epochs=5, min_count=5)


@pytest.fixture(scope="module")
def ch():
    return load_definitions(CHAPTER)


def test_glove_analogies_by_category_and_similarity(ch):
    words, vectors = load_glove()
    questions = load_analogies()
    by_category = {c: analogy_accuracy(words[:30_000], vectors[:30_000], q) for c, q in questions.items()}
    correct = sum(r.correct for r in by_category.values())
    asked = sum(r.total for r in by_category.values())
    semantic = [c for c in by_category if not c.startswith("gram")]
    sem = sum(by_category[c].correct for c in semantic) / sum(by_category[c].total for c in semantic)
    syn = (correct - sum(by_category[c].correct for c in semantic)) / (asked - sum(by_category[c].total for c in semantic))
    rho_ws, _ = similarity_spearman(words, vectors, load_similarity("wordsim353"))
    rho_sl, _ = similarity_spearman(words, vectors, load_similarity("simlex999"))
    record("ch05-glove", analogy_accuracy=round(correct / asked, 4), questions=asked, semantic=round(sem, 4),
           syntactic=round(syn, 4), by_category={c: round(r.accuracy, 4) for c, r in by_category.items()},
           wordsim353=round(rho_ws, 4), simlex999=round(rho_sl, 4))
    assert 0.45 < correct / asked < 0.55 and asked == 14_877
    assert by_category["gram6-nationality-adjective"].accuracy > 0.9 and by_category["currency"].accuracy < 0.25
    assert 0.45 < rho_ws < 0.56 and 0.22 < rho_sl < 0.31
    # the learner's 3CosAdd gives the same answers as the vectorised evaluator
    sample = [q for qs in questions.values() for q in qs[::400]]
    top = words[:30_000]
    index = set(top)
    for a, b, c, d in sample:
        if {a, b, c, d} <= index:
            assert (ch["solve_analogy"](a, b, c, top, vectors[:30_000]) == d) == bool(
                analogy_accuracy(top, vectors[:30_000], [(a, b, c, d)]).correct)


@pytest.mark.numerics
def test_embedding_lookup_equals_nn_embedding_at_scale(ch):
    E = np.random.default_rng(0).normal(size=(5000, 16)).astype(np.float32)
    ids = np.random.default_rng(1).integers(0, 5000, size=(32, 20))
    layer = torch.nn.Embedding.from_pretrained(torch.from_numpy(E))
    np.testing.assert_array_equal(ch["embedding_lookup"](E, ids), layer(torch.from_numpy(ids)).numpy())


def brown_corpus():
    sentences = [list(s.words) for s in load_brown("train", lower=True)]
    counts = Counter(w for s in sentences for w in s)
    vocab = [w for w, c in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0])) if c >= SETTINGS["min_count"]]
    return sentences, counts, vocab


def neighbour_overlap(words_a, vectors_a, words_b, vectors_b, probes, k=10):
    """Mean share of common words among the k nearest neighbours of each probe word."""
    def top(words, vectors, w):
        index = {x: i for i, x in enumerate(words)}
        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        s = unit @ unit[index[w]]
        s[index[w]] = -np.inf
        return {words[i] for i in np.argsort(-s)[:k]}
    return float(np.mean([len(top(words_a, vectors_a, w) & top(words_b, vectors_b, w)) / k for w in probes]))


@pytest.mark.slow
def test_own_sgns_against_gensim_on_brown(ch):
    gensim_models = pytest.importorskip("gensim.models")
    sentences, counts, vocab = brown_corpus()
    index = {w: i for i, w in enumerate(vocab)}
    ids = [np.array([index[w] for w in s if w in index], dtype=np.int64) for s in sentences]
    freq = np.array([counts[w] for w in vocab], dtype=np.int64)
    pairs = load_similarity("wordsim353")

    def run_gensim(seed):  # timed in processor time (gensim's worker thread and ours alike), not wall time
        start = time.process_time()
        model = gensim_models.Word2Vec(sentences=sentences, sg=1, hs=0, negative=SETTINGS["negative"],
                                       vector_size=SETTINGS["dim"], window=SETTINGS["window"],
                                       min_count=SETTINGS["min_count"], sample=SETTINGS["sample"],
                                       epochs=SETTINGS["epochs"], workers=1, seed=seed)
        return model, time.process_time() - start

    gensim_model, gensim_seconds = run_gensim(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the notebook does; gensim runs with workers=1
    try:
        start = time.process_time()
        ours = ch["train_sgns"](ids, freq, dim=SETTINGS["dim"], window=SETTINGS["window"], negative=SETTINGS["negative"],
                                sample=SETTINGS["sample"], epochs=SETTINGS["epochs"], seed=0, progress=False)
        our_seconds = time.process_time() - start
    finally:
        torch.set_num_threads(threads)
    gensim_other_seed, _ = run_gensim(1)

    g_words = list(gensim_model.wv.index_to_key)
    assert set(g_words) == set(vocab), "the same vocabulary (min_count) on both sides"
    g_rho, g_used = similarity_spearman(g_words, gensim_model.wv.vectors, pairs)
    g1_rho, _ = similarity_spearman(list(gensim_other_seed.wv.index_to_key), gensim_other_seed.wv.vectors, pairs)
    our_rho, our_used = similarity_spearman(vocab, ours, pairs)
    probes = [w for w in vocab[:400] if w.isalpha() and len(w) > 3][:100]  # frequent content-ish words
    overlap = neighbour_overlap(vocab, ours, g_words, gensim_model.wv.vectors, probes)
    overlap_gensim_seeds = neighbour_overlap(g_words, gensim_model.wv.vectors, list(gensim_other_seed.wv.index_to_key),
                                             gensim_other_seed.wv.vectors, probes)
    record("ch05-sgns-vs-gensim", settings=SETTINGS, tokens=int(sum(map(len, ids))), vocabulary=len(vocab),
           wordsim_pairs=our_used, our_spearman=round(our_rho, 4), gensim_spearman=round(g_rho, 4),
           gensim_seed1_spearman=round(g1_rho, 4), spearman_ratio=round(our_rho / g_rho, 3),
           our_seconds=round(our_seconds, 1), gensim_seconds=round(gensim_seconds, 1),
           time_ratio=round(our_seconds / gensim_seconds, 2), neighbour_overlap_at_10=round(overlap, 3),
           gensim_two_seeds_overlap_at_10=round(overlap_gensim_seeds, 3), torch_threads=1)
    assert our_used == g_used
    assert our_rho >= 0.9 * g_rho, f"Spearman {our_rho:.3f} < 90% of gensim's {g_rho:.3f}"
    assert our_seconds <= 3 * gensim_seconds, f"{our_seconds:.0f} s > 3 x gensim's {gensim_seconds:.0f} s"
    assert overlap > 0.5 * overlap_gensim_seeds


def test_huffman_tree_is_a_prefix_code_of_least_weighted_depth():
    """The paths of seqlab's Huffman tree: a complete prefix code (Kraft sum 1, no code a prefix of another), node
    ids that agree with the codes, and the least count-weighted depth (the sum of all merges' counts)."""
    import heapq

    tree = huffman_tree([5, 1, 1, 2])
    assert [c.tolist() for c in tree.codes] == [[1], [0, 1, 0], [0, 1, 1], [0, 0]] and tree.n_inner == 3
    for seed in range(5):
        counts = np.random.default_rng(seed).zipf(1.6, size=int(np.random.default_rng(seed).integers(2, 300)))
        tree = huffman_tree(counts)
        words = [tuple(c.tolist()) for c in tree.codes]
        assert sum(2.0 ** -len(c) for c in words) == pytest.approx(1.0, abs=1e-12)
        assert not any(a != b and b[:len(a)] == a for a in words for b in words)
        child = {}
        for n, c in zip(tree.nodes, tree.codes):
            assert n[0] == tree.n_inner - 1 and len(n) == len(c)  # every path starts at the root
            for j in range(1, len(n)):
                assert child.setdefault((int(n[j - 1]), int(c[j - 1])), int(n[j])) == n[j]  # one child per branch
        heap, merged = [int(c) for c in counts], 0
        heapq.heapify(heap)
        while len(heap) > 1:
            pair = heapq.heappop(heap) + heapq.heappop(heap)
            merged += pair
            heapq.heappush(heap, pair)
        assert sum(int(c) * len(w) for c, w in zip(counts, words)) == merged
    with pytest.raises(ValueError):
        huffman_tree([3])


@reads_learner_run(CHAPTER)
def test_notebook_results():
    nb, seconds = execute(NOTEBOOK, grading=False)
    assert not [errors_of(c) for c in nb.cells if c.cell_type == "code" and errors_of(c)]
    text = printed_text(nb)
    results = json.loads(re.search(r"^RESULTS (.*)$", text, re.M).group(1))
    record("ch05-notebook", cpu_seconds=round(seconds.cpu, 1), wall_seconds=round(seconds.wall, 1), **results)
    assert seconds.cpu <= LEARNER_BUDGET_S, f"the notebook took {seconds}"
    assert 0.45 < results["glove_analogy_accuracy"] < 0.55
    assert results["sgns_wordsim353"] > 0.12  # two epochs on a budget
    assert results["genre_avg_test"] > results["genre_majority"] + 0.1
    assert results["genre_lstm_test"] > results["genre_majority"] + 0.1
    assert results["negation_probe_avg"] <= 0.5  # the same average for both sentences of a pair
    assert results["negation_probe_lstm"] >= 0.75
    # hierarchical softmax: the V leaf probabilities sum to 1; per token the Huffman tree needs fewer decisions than a
    # balanced tree; it is faster than the full softmax, by less in time than in dot products (the text's claims)
    assert all(abs(s - 1) < 1e-9 for s in results["hs_sums"]), results["hs_sums"]
    assert results["hs_depth_per_token"] < np.log2(results["hs_vocab"]) < results["hs_depth_mean"] + 1
    timing = results["hs_timing"]
    assert 3 < timing["speedup_low"] <= timing["speedup_high"] < results["hs_dot_ratio"], (timing, results["hs_dot_ratio"])
