"""Chapter 6 (seq2seq, beam search, BLEU): the solutions against references, and the measured targets."""

import random

import numpy as np
import pytest
import torch

from course import SOLUTIONS, learner_results, load_definitions, reads_learner_run, record, record_timing

CHAPTER = "06-seq2seq-beam-search-bleu"
NOTEBOOK = SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb"


@pytest.fixture(scope="module")
def ch():
    return load_definitions(CHAPTER)


def _sacrebleu(candidates, references):
    sacrebleu = pytest.importorskip("sacrebleu")  # a test extra: `pip install -e .[test]`
    streams = max(len(r) for r in references)
    refs = [[" ".join(r[min(k, len(r) - 1)]) for r in references] for k in range(streams)]
    return sacrebleu.corpus_bleu([" ".join(c) for c in candidates], refs, tokenize="none", smooth_method="none").score


@pytest.mark.parametrize("seed", range(20))
def test_corpus_bleu_equals_sacrebleu_on_random_corpora(ch, seed):
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(rng.choice([3, 6, 12]))]
    references, candidates = [], []
    for _ in range(rng.randint(1, 30)):
        refs = [[rng.choice(vocab) for _ in range(rng.randint(1, 15))] for _ in range(rng.randint(1, 3))]
        cand = refs[0][: rng.randint(0, len(refs[0]))] + [rng.choice(vocab) for _ in range(rng.randint(0, 5))]
        references.append(refs)
        candidates.append(cand)
    ours = ch["corpus_bleu"](candidates, references)
    assert abs(ours - _sacrebleu(candidates, references)) < 1e-6


def test_corpus_bleu_equals_sacrebleu_on_real_sentences(ch):
    from seqlab.dates import load_numbers

    pairs = load_numbers("test")
    rng = random.Random(0)
    references = [[p.target.split()] for p in pairs]
    candidates = []
    for p in pairs:  # a noisy "system": drop, swap or replace a word now and then
        words = p.target.split()
        if rng.random() < 0.3 and len(words) > 1:
            words.pop(rng.randrange(len(words)))
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] = rng.choice(["one", "hundred", "thousand", "seven"])
        candidates.append(words)
    ours = ch["corpus_bleu"](candidates, references)
    theirs = _sacrebleu(candidates, references)
    record("ch06_bleu", ours=round(ours, 6), sacrebleu=round(theirs, 6), difference=abs(ours - theirs), sentences=len(pairs))
    assert 30 < ours < 100 and abs(ours - theirs) < 1e-6


@pytest.mark.numerics
def test_beam_search_equals_seqlab_reference_and_width_one_is_greedy(ch):
    from seqlab.seq2seq import beam_search, greedy_search

    for seed in range(10):
        for width, alpha in [(1, 0.0), (3, 0.6), (5, 1.0)]:
            mine = ch["beam_search"](ch["PrefixModel"](8, seed=seed).step, ch["PrefixModel"](8).start(1), width, 12, alpha)
            ref = beam_search(ch["PrefixModel"](8, seed=seed).step, ch["PrefixModel"](8).start(1), beam_width=width,
                              max_len=12, alpha=alpha)
            assert [h[0] for h in mine] == [h.tokens for h in ref]
            np.testing.assert_allclose([h[2] for h in mine], [h.score for h in ref], rtol=1e-12)
        greedy = ch["greedy_decode"](ch["PrefixModel"](8, seed=seed).step, ch["PrefixModel"](8).start(1), 1, 12)[0]
        assert ch["beam_search"](ch["PrefixModel"](8, seed=seed).step, ch["PrefixModel"](8).start(1), 1, 12)[0][0] == greedy
        assert greedy_search(ch["PrefixModel"](8, seed=seed).step, ch["PrefixModel"](8).start(1), 1, max_len=12)[0] == greedy


@pytest.mark.numerics
def test_chapter_model_holds_the_checkpoint_and_decodes_like_seqlab(ch):
    """The committed weights load into the learner's Encoder/Decoder and give the same log-probabilities."""
    from seqlab.seq2seq import decode, load_checkpoint, to_chapter_names

    reference, src_vocab, tgt_vocab = load_checkpoint("dates")
    cfg = reference.config
    model = torch.nn.Module()
    model.encoder = ch["Encoder"](cfg["n_src"], cfg["embed"], cfg["hidden"])
    model.decoder = ch["Decoder"](cfg["n_tgt"], cfg["embed"], cfg["hidden"])
    model.load_state_dict(to_chapter_names(reference.state_dict()))
    batch = ch["make_batch"]([src_vocab.encode(list("4 July 1976")), src_vocab.encode(list("12/31/18"))], [[5], [6, 7]])
    with torch.no_grad():
        logits = ch["seq2seq_logits"](model.encoder, model.decoder, batch["src"], batch["src_lengths"], batch["tgt_in"])
        torch.testing.assert_close(torch.log_softmax(logits, -1),
                                   torch.log_softmax(reference(batch["src"], batch["src_lengths"], batch["tgt_in"]), -1))
    assert decode(reference, ["4 July 1976"], src_vocab, tgt_vocab)[0].count("-") == 2


@pytest.mark.numerics
def test_early_stop_returns_the_full_searchs_best_in_fewer_calls(ch):
    """The solution's beam_search_early_stop against seqlab's beam_search (alpha = 0) on random toy models."""
    from seqlab.seq2seq import beam_search

    fewer = 0
    for seed in range(12):
        for width in (1, 2, 4, 9):
            model = ch["PrefixModel"](8, seed=seed, eos_rise=0.5)
            tokens, log_p = ch["beam_search_early_stop"](model.step, model.start(1), width, 14)
            full_model = ch["PrefixModel"](8, seed=seed, eos_rise=0.5)
            full = beam_search(full_model.step, full_model.start(1), beam_width=width, max_len=14)[0]
            assert tokens == full.tokens and abs(log_p - full.log_prob) < 1e-12, (seed, width)
            assert model.calls <= full_model.calls
            fewer += model.calls < full_model.calls
    assert fewer >= 10, fewer


def test_masked_loss_ignores_padding_and_weighs_tokens_equally(ch):
    logits = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0))
    batch = ch["make_batch"]([[4], [5, 6], [7]], [[4, 5, 6, 4], [5], []])
    loss = ch["masked_cross_entropy"](logits, batch["tgt_out"])
    changed = logits.clone()
    changed[1, 2:] = 50.0
    changed[2, 1:] = -50.0
    assert torch.allclose(loss, ch["masked_cross_entropy"](changed, batch["tgt_out"]))
    keep = batch["tgt_out"] != 0
    assert int(keep.sum()) == int(batch["tgt_lengths"].sum()) == 8


@reads_learner_run(CHAPTER)
def test_learner_mode_reaches_the_targets():
    results, seconds = learner_results(NOTEBOOK)
    by_digits = {int(d): v for d, v in results["numbers_by_digits"].items()}
    record("ch06", **{k: results[k] for k in ("dates_test_all_greedy", "dates_sample", "dates_greedy", "dates_beam",
                                                "beam_changed", "errors_search", "errors_model", "numbers_exact",
                                                "numbers_bleu", "bleu_vs_sacrebleu", "parameters")},
           numbers_by_digits=by_digits)
    record_timing("ch06", seconds, short_run_seconds=results["short_run_seconds"],
                  checkpoint_seconds=results["checkpoint_seconds"])
    # Beam search (width 5) beats greedy decoding on the same model and the same 1,000 test dates.
    assert results["dates_beam"] >= results["dates_greedy"] + 0.01, results
    # Error attribution covers every beam error.
    assert results["errors_search"] + results["errors_model"] == round(results["dates_sample"] * (1 - results["dates_beam"])), results
    # The bottleneck: exact match and BLEU fall from short to long numbers.
    short = np.mean([by_digits[d][0] for d in (3, 4)])
    long = np.mean([by_digits[d][0] for d in (8, 9)])
    assert short >= long + 0.15, by_digits
    assert np.mean([by_digits[d][1] for d in (3, 4)]) > np.mean([by_digits[d][1] for d in (8, 9)]) + 5, by_digits
    # Our BLEU is sacrebleu's.
    assert results["bleu_vs_sacrebleu"] is not None and results["bleu_vs_sacrebleu"] < 1e-6
    # Choosing the beam width (the text's claims, §9). Dates: greedy decoding's search errors, most gone at k = 2, none
    # from some width on, and past it the counts do not move (no drop at large k); the calls hardly grow with k.
    dates = {int(k): row for k, row in results["date_widths"].items()}
    record("ch06_beam_width", dates=results["dates_sample"], numbers=results["width_numbers"],
           date_widths=dates, number_widths=results["number_widths"], early_stop=results["early_stop"], n_best=results["n_best"])
    widths = sorted(dates)
    assert all(row["correct"] + row["search"] + row["model"] == results["dates_sample"] for row in dates.values()), dates
    assert dates[2]["search"] < dates[1]["search"] / 2, dates
    wide_enough = min(k for k in widths if dates[k]["search"] == 0)
    assert wide_enough < widths[-1] and len({(dates[k]["correct"], dates[k]["model"]) for k in widths if k >= wide_enough}) == 1, dates
    assert dates[widths[-1]]["calls"] < 1.1 * dates[1]["calls"], dates
    # Numbers: the calls grow with k (the stopping rule keeps wide beams alive), quality barely moves, no drop at large
    # k, alpha > 0 is not better, and the widest beam's outputs are not more often too short than greedy's.
    numbers = {int(k): row for k, row in results["number_widths"].items()}
    assert numbers[widths[-1]]["calls"] > 3 * numbers[1]["calls"], numbers
    exact = {k: row["exact"] for k, row in numbers.items()}
    assert exact[2]["0.0"] > exact[1]["0.0"] and exact[widths[-1]]["0.0"] >= exact[2]["0.0"], exact
    assert all(row[a] <= row["0.0"] for row in exact.values() for a in ("0.6", "1.0")), exact
    assert all(row["shorter"][a] <= numbers[1]["shorter"][a] for row in numbers.values() for a in row["shorter"]), numbers
    # The learner's early stop returns the full search's best output on every number, in about greedy's calls.
    early = {int(k): row for k, row in results["early_stop"].items()}
    assert all(row["same"] == results["width_numbers"] for row in early.values()), early
    assert all(row["calls"] < 1.05 * numbers[1]["calls"] for row in early.values()), early
    # The n-best list's two best outputs are the ambiguous date's two readings.
    best_two = sorted(results["n_best"]["outputs"][:2])
    assert best_two[0][:4] == best_two[1][:4] and best_two[0][5:7] == best_two[1][8:10] and best_two[0][8:10] == best_two[1][5:7], best_two
    assert results["n_best"]["p"] == sorted(results["n_best"]["p"], reverse=True)
