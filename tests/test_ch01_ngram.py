"""Chapter 1's measured targets: agreement with nltk.lm, speed against it, held-out perplexities."""

from __future__ import annotations

import math
import re
import time

import nltk.lm as nltk_lm
import pytest

from course import SOLUTIONS, execute, load_definitions, printed_text, reads_learner_run, record
from seqlab.data import load_brown

CHAPTER = "01-ngram-language-models"


@pytest.fixture(scope="module")
def ch():
    return load_definitions(CHAPTER)


@pytest.fixture(scope="module")
def corpus(ch):
    train = [list(s.words) for s in load_brown("train", lower=True)]
    vocab = ch["build_vocab"](train, min_count=2)
    return {
        "vocab": vocab,
        "train": ch["replace_rare"](train, vocab),
        "dev": ch["replace_rare"]([list(s.words) for s in load_brown("dev", lower=True)], vocab),
        "test": ch["replace_rare"]([list(s.words) for s in load_brown("test", lower=True)], vocab),
    }


def nltk_ngrams(sentences, n, bos="<s>", eos="</s>"):
    """The n-grams of every order that end at a predicted token: what the chapter's models count."""
    for s in sentences:
        padded = [bos] * (n - 1) + s + [eos]
        yield [tuple(padded[i - k + 1:i + 1]) for i in range(n - 1, len(padded)) for k in range(1, n + 1)]


def nltk_vocabulary(vocab):
    # nltk adds its unk label to every Vocabulary itself: pass the other tokens.
    return nltk_lm.Vocabulary([w for w in vocab if w != "<unk>"], unk_label="<unk>")


@pytest.fixture(scope="module")
def nltk_trigram_counts(corpus):
    """nltk's counts of the training corpus's 1-, 2- and 3-grams: counted once (about half a minute) for both nltk
    models below, which take them as their ``counter``, as nltk.lm's fit would have filled it."""
    from nltk.lm.counter import NgramCounter

    return NgramCounter(nltk_ngrams(corpus["train"], 3))


# The two tests that compare with nltk's full-size trigram models share one worker, so its counts are made once.
@pytest.mark.slow
@pytest.mark.xdist_group("ch01-nltk-trigrams")
def test_kneser_ney_equals_nltk_and_is_over_1000x_faster(ch, corpus, nltk_trigram_counts):
    n = 3
    kn_tables = ch["build_kn_tables"](corpus["train"], n)
    reference = nltk_lm.KneserNeyInterpolated(n, discount=0.75, vocabulary=nltk_vocabulary(corpus["vocab"]),
                                              counter=nltk_trigram_counts)
    pairs = list(ch["predictions"](corpus["test"][:400], n))  # (word, context) in test order

    sample = pairs[:60]
    # processor time, not wall time: both sides single-threaded Python, so a busy machine slows neither's count
    start = time.process_time()
    theirs = [reference.score(w, list(h)) for w, h in sample]
    nltk_seconds = (time.process_time() - start) / len(sample)
    ours = [ch["kn_prob"](w, h, kn_tables) for w, h in sample]
    assert max(abs(a - b) for a, b in zip(ours, theirs)) <= 1e-9

    start = time.process_time()
    for w, h in pairs:
        ch["kn_prob"](w, h, kn_tables)
    our_seconds = (time.process_time() - start) / len(pairs)
    speedup = nltk_seconds / our_seconds
    record("ch01-speed", nltk_ms_per_trigram=round(nltk_seconds * 1e3, 1),
           ours_us_per_trigram=round(our_seconds * 1e6, 2), speedup=round(speedup), trigrams_timed=len(pairs))
    assert speedup >= 1000, f"kn_prob is only {speedup:.0f} times faster than nltk.lm"


@pytest.mark.slow
def test_kneser_ney_equals_nltk_on_many_contexts_of_a_smaller_model(ch, corpus):
    for n in (2, 3, 4):
        train = corpus["train"][:3000]
        kn_tables = ch["build_kn_tables"](train, n)
        reference = nltk_lm.KneserNeyInterpolated(n, discount=0.75, vocabulary=nltk_vocabulary(corpus["vocab"]))
        reference.fit(nltk_ngrams(train, n))
        pairs = list(ch["predictions"](corpus["dev"][:12], n))  # about 300 contexts for each n
        worst = max(abs(ch["kn_prob"](w, h, kn_tables) - reference.score(w, list(h))) for w, h in pairs)
        assert worst <= 1e-9, f"n={n}: kn_prob differs from nltk by {worst:.2e}"


def test_nltk_own_pipeline_gives_distributions_that_do_not_sum_to_one(ch):
    from nltk.lm.preprocessing import padded_everygram_pipeline

    toy = [["a", "b", "c"], ["a", "c"], ["b", "a", "b"]]
    train, vocab = padded_everygram_pipeline(3, toy)
    reference = nltk_lm.KneserNeyInterpolated(3, discount=0.75)
    reference.fit(train, vocab)
    theirs = sum(reference.score(w, ["<s>", "<s>"]) for w in reference.vocab)
    kn_tables = ch["build_kn_tables"](toy, 3)
    ours = sum(ch["kn_prob"](w, ("<s>", "<s>"), kn_tables) for w in ["</s>", "a", "b", "c"])
    record("ch01-nltk-pipeline-sum", nltk_sum=round(theirs, 4), ours=round(ours, 12))
    assert abs(theirs - 1) > 0.1, "nltk's pipeline was expected to break normalisation here"
    assert abs(ours - 1) < 1e-12


@pytest.mark.slow
@pytest.mark.xdist_group("ch01-nltk-trigrams")
def test_addk_equals_nltk_lidstone_once_nltk_stops_predicting_bos(ch, corpus, nltk_trigram_counts):
    n, k = 3, 0.01
    table = ch["NgramTable"](ch["count_ngrams"](corpus["train"], n))
    reference = nltk_lm.Lidstone(k, n, vocabulary=nltk_vocabulary(corpus["vocab"]), counter=nltk_trigram_counts)
    V = len(corpus["vocab"]) - 1
    for w, h in list(ch["predictions"](corpus["test"][:30], n)):
        p_bos = reference.score("<s>", list(h))
        assert p_bos > 0, "nltk gives <s> (never a next token) some probability"
        renormalised = reference.score(w, list(h)) / (1 - p_bos)
        assert abs(ch["addk_prob"](table, w, h, k, V) - renormalised) <= 1e-9


# The notebook computes these very figures (add-k with k chosen on dev, Kneser-Ney n = 1-4, on test); the test reads
# them from the chapter's learner run, which the suite makes once anyway (computing them again here took 65 s).
@reads_learner_run(CHAPTER)
def test_held_out_perplexities():
    nb, _ = execute(SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb", grading=False)
    printed = printed_text(nb)
    figures = {}
    for model, n, k, value in re.findall(r"(add-k|Kneser-Ney), n=(\d)(?: \(k=([\d.]+)\))?\s+test perplexity\s+([\d.]+|inf)",
                                         printed):
        figures[f"{'addk' if model == 'add-k' else 'kn'}{n}"] = float(value)
        if k:
            figures[f"addk{n}_k"] = float(k)
    # Jelinek-Mercer's trigram with the weights tuned on dev (issue 26), on the same test text
    for lambdas, value in re.findall(r"Jelinek-Mercer, n=3 \(lambdas \(([\d., ]+)\)\)\s+test perplexity\s+([\d.]+|inf)", printed):
        figures["jm3"], figures["jm3_lambdas"] = float(value), lambdas
    assert {"kn1", "kn2", "kn3", "kn4", "addk1", "addk2", "addk3", "jm3"} <= set(figures), \
        f"the notebook no longer prints its test perplexities as this test reads them: {sorted(figures)}"
    record("ch01-perplexity", **{k: round(v, 1) if isinstance(v, float) and v > 1 else v for k, v in figures.items()})
    assert figures["kn3"] < figures["kn2"] < figures["kn1"], "Kneser-Ney should improve from n=1 to n=3"
    assert figures["kn3"] < 0.6 * figures["addk3"] and figures["kn2"] < figures["addk2"]
    assert 180 < figures["kn3"] < 320 and math.isfinite(figures["kn4"])
    # interpolation alone takes the trigram below every add-k model; Kneser-Ney's discount and continuation counts
    # take it further
    assert figures["kn3"] < figures["jm3"] < min(figures["addk1"], figures["addk2"], figures["addk3"])
