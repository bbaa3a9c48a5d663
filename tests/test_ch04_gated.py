"""Chapter 4 (vanishing gradients, GRU, LSTM): the solutions against torch, its seqlab helpers, and the measured targets."""

import math
import time

import matplotlib
import numpy as np
import pytest
import torch
from torch import nn

matplotlib.use("Agg")

from course import SOLUTIONS, learner_results, load_definitions, reads_learner_run, record, record_timing
from seqlab import adding, tagger, wordlm
from seqlab.gradflow import NO_FORGET, cell_comparison, cell_comparison_widget, draw_cell_comparison

CHAPTER = "04-vanishing-gradients-gru-lstm"
NOTEBOOK = SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb"
KN_TRIGRAM_TEST_PERPLEXITY = 239.9  # chapter 1's result (tests/test_ch01_ngram.py, README)
HMM_ACCURACY, HMM_UNKNOWN = 0.9615, 0.815  # chapter 2's bigram HMM on the same test split (README)


@pytest.fixture(scope="module")
def ch():
    return load_definitions(CHAPTER)


def weights_of(module, suffix=""):
    return {k: getattr(module, k + suffix).detach() for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}


# ---- the solutions, against torch on larger inputs than the notebook's tests --------------------

@pytest.mark.numerics
@pytest.mark.parametrize("seed", range(3))
def test_cells_equal_torch_cells(ch, seed):
    torch.manual_seed(seed)
    B, D, H = 16, 24, 48
    x, h, c = torch.randn(B, D), torch.randn(B, H), torch.randn(B, H)
    gru, lstm = nn.GRUCell(D, H), nn.LSTMCell(D, H)
    torch.testing.assert_close(ch["gru_cell"](x, h, **weights_of(gru)), gru(x, h), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ch["lstm_cell"](x, h, c, **weights_of(lstm)), lstm(x, (h, c)), rtol=1e-5, atol=1e-6)


@pytest.mark.numerics
def test_wrappers_equal_torch_layers_on_a_packed_batch(ch):
    torch.manual_seed(3)
    B, T, D, H = 6, 11, 5, 7
    x = torch.randn(B, T, D)
    lengths = torch.tensor([11, 3, 1, 7, 11, 2])

    def packed(module):
        out, final = module(nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        return nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)[0], final

    stack = nn.LSTM(D, H, num_layers=2, batch_first=True)
    want, (h_n, c_n) = packed(stack)
    got, (gh, gc) = ch["stacked_lstm"](x, [weights_of(stack, "_l0"), weights_of(stack, "_l1")], lengths)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close((gh, gc), (h_n, c_n), rtol=1e-5, atol=1e-6)
    bi = nn.LSTM(D, H, bidirectional=True, batch_first=True)
    want, (h_n, c_n) = packed(bi)
    got, (gh, gc) = ch["bidirectional_lstm"](x, lengths, weights_of(bi, "_l0"), weights_of(bi, "_l0_reverse"))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close((gh, gc), (h_n, c_n), rtol=1e-5, atol=1e-6)


def test_forget_bias_init_is_what_the_experiment_uses(ch):
    torch.manual_seed(4)
    ours, theirs = nn.LSTM(3, 5), nn.LSTM(3, 5)
    theirs.load_state_dict(ours.state_dict())
    adding.set_forget_bias(theirs, 1.0)
    new_ih, new_hh = ch["forget_bias_init"](ours.bias_ih_l0, ours.bias_hh_l0, 1.0)
    torch.testing.assert_close(new_ih, theirs.bias_ih_l0.detach())
    torch.testing.assert_close(new_hh, theirs.bias_hh_l0.detach())


@pytest.mark.numerics
def test_spectral_radius_predicts_the_linear_gradient(ch):
    W = torch.randn(20, 20, generator=torch.Generator().manual_seed(5), dtype=torch.float64) / math.sqrt(20)
    rho = ch["spectral_radius"](W)
    norms = ch["linear_gradient_norms"](W, torch.ones(20, dtype=torch.float64), 400)
    assert abs(float(norms[-1] / norms[-2]) - rho) < 0.02 * rho  # the growth rate tends to rho


# ---- seqlab.gradflow: the widget's pure computation ---------------------------------------------

def test_cell_comparison_is_deterministic_and_the_forget_bias_acts_on_the_lstm_only():
    a = cell_comparison(40, 1.0, 0.0)
    assert set(a) == {"RNN", "GRU", "LSTM"} and all(v.shape == (40,) for v in a.values())
    b = cell_comparison(40, 1.0, 3.0)
    np.testing.assert_allclose(a["RNN"], b["RNN"])
    np.testing.assert_allclose(a["GRU"], b["GRU"])
    firsts = [cell_comparison(40, 1.0, fb)["LSTM"][0] for fb in (-2.0, 0.0, 1.0, 3.0)]
    assert all(x < y for x, y in zip(firsts, firsts[1:])), firsts
    assert b["LSTM"][0] > 1e3 * a["RNN"][0]  # a large forget bias carries the gradient where tanh RNN loses it


def test_cell_comparison_without_forget_gate_adds_the_original_lstm_and_leaves_the_others():
    plain = cell_comparison(40, 1.0, 3.0)
    both = cell_comparison(40, 1.0, 3.0, no_forget_gate=True)
    assert list(both) == ["RNN", "GRU", "LSTM", NO_FORGET]
    for name in plain:
        np.testing.assert_allclose(both[name], plain[name])
    # the forget bias acts on the gated LSTM only: the LSTM without forget gate has none
    np.testing.assert_allclose(cell_comparison(40, 1.0, -2.0, no_forget_gate=True)[NO_FORGET], both[NO_FORGET])
    assert both[NO_FORGET][0] > 1e6 * cell_comparison(40, 1.0, 0.0)["LSTM"][0]


def test_cell_comparison_widget_has_a_forget_bias_slider_and_redraws_fast():
    figure = draw_cell_comparison(30, 1.0, 1.0)
    assert figure.axes[0].get_yscale() == "log" and len(figure.axes[0].get_lines()) == 3
    matplotlib.pyplot.close(figure)
    figure = draw_cell_comparison(30, 1.0, 1.0, no_forget_gate=True)
    labels = [line.get_label() for line in figure.axes[0].get_lines()]
    assert len(labels) == 4 and "without forget gate" in labels[-1]
    matplotlib.pyplot.close(figure)
    widget = cell_comparison_widget()
    controls = widget.children[0].children
    assert [c.description for c in controls] == ["length T", "radius |λ|", "forget bias", "+ LSTM without forget gate"]
    start = time.process_time()  # processor time: the shared test machine's load inflates wall time
    for value, control in zip([90, 1.2, 2.0, True], controls):
        control.value = value
    per_change = (time.process_time() - start) / 4
    assert per_change < 1.0, f"a redraw took {per_change:.2f} s of processor time"


# ---- seqlab.adding -------------------------------------------------------------------------------

def test_adding_batches_have_one_marker_per_half_and_the_sum_as_target():
    x, y = adding.adding_batch(500, 50, torch.Generator().manual_seed(0))
    markers = x[:, :, 1]
    assert torch.equal(markers[:, :25].sum(1), torch.ones(500)) and torch.equal(markers[:, 25:].sum(1), torch.ones(500))
    torch.testing.assert_close(y, (x[:, :, 0] * markers).sum(1))
    assert abs(float(((y - 1) ** 2).mean()) - adding.BASELINE_MSE) < 0.02


@pytest.mark.numerics
def test_lstm_gates_reproduce_the_layer():
    torch.manual_seed(6)
    lstm = nn.LSTM(2, 4, batch_first=True)
    x = torch.randn(9, 2)
    gates = adding.lstm_gates(lstm, x)
    out, _ = lstm(x[None])
    torch.testing.assert_close(gates["hidden"], out[0].detach(), rtol=1e-5, atol=1e-6)
    assert all(0 < float(gates[k].min()) and float(gates[k].max()) < 1 for k in ("input", "forget", "output"))


def test_committed_adding_figures_meet_the_targets():
    """LSTM and GRU below 0.01 on every seed; the RNN no better than the constant guess; each run within 40 s of CPU."""
    results = adding.load_results()
    assert results["settings"]["length"] >= 50 and results["settings"]["steps"] == 1500
    by_model = {}
    for run in results["runs"]:
        by_model.setdefault(run["model"], []).append(run)
    assert set(by_model) == set(adding.MODELS) and all(len(runs) >= 3 for runs in by_model.values())
    for name in ("GRU", "GRU, update gate only", "LSTM", "LSTM, forget bias 1"):
        assert max(r["test_mse"] for r in by_model[name]) < 0.01, by_model[name]
    # "no better than the baseline": within 2% of the constant guess's 1/6, or worse
    assert min(r["test_mse"] for r in by_model["RNN"]) > 0.98 * adding.BASELINE_MSE, by_model["RNN"]
    # processor time of one single-threaded run (wall time on the shared machine is inflated by other jobs)
    assert max(r["cpu_seconds"] for r in results["runs"]) < 40
    record("ch04_adding", **{name: [r["test_mse"] for r in runs] for name, runs in by_model.items()},
           cpu_seconds_max={name: max(r["cpu_seconds"] for r in runs) for name, runs in by_model.items()})


def test_pinned_reset_gate_makes_the_simplified_gru_and_stays_pinned_in_training(ch):
    """The adding problem's "GRU, update gate only": an nn.GRU whose reset gate pin_reset_open fixes at r = 1 equals
    the chapter's minimal_gru_cell on the z and n rows, and a training step leaves the pinned rows as they were."""
    torch.manual_seed(8)
    model = adding.AddingModel("minimal GRU", hidden=5)
    gru, H = model.rnn, 5
    x = torch.randn(3, 7, 2)
    h = torch.zeros(3, H)
    zn = [getattr(gru, k + "_l0").detach()[H:] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    for t in range(7):
        h = ch["minimal_gru_cell"](x[:, t], h, *zn)
    torch.testing.assert_close(h, gru(x)[0][:, -1].detach(), rtol=1e-5, atol=1e-6)
    pinned = [p.detach()[:H].clone() for p in gru.parameters()]
    candidate = gru.weight_hh_l0.detach()[H:].clone()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    nn.functional.mse_loss(model(x), torch.ones(3)).backward()
    optimizer.step()
    assert all(torch.equal(p.detach()[:H], q) for p, q in zip(gru.parameters(), pinned))
    assert not torch.equal(gru.weight_hh_l0.detach()[H:], candidate)  # the update gate and the candidate do train


# ---- seqlab.wordlm ---------------------------------------------------------------------------------

def test_brown_vocabulary_is_chapter_ones():
    ch1 = load_definitions("01-ngram-language-models")
    data = wordlm.brown_splits({"train": 3000})
    assert wordlm.brown_vocab(data["train"]) == ch1["build_vocab"](data["train"], min_count=2)


@pytest.mark.numerics
@pytest.mark.parametrize("cell", wordlm.CELLS)
def test_the_lm_scores_every_word_and_every_end_of_sentence(cell):
    torch.manual_seed(7)
    vocab = ["<unk>", "<s>", "</s>", "a", "b", "c"]
    model = wordlm.WordRNN(len(vocab), input_vocab=4, embed=8, hidden=8, cutoffs=[3], cell=cell)
    sentences = [["a", "b"], ["c"], ["zebra", "a", "a", "b"]]
    ppl, count = wordlm.evaluate(model, wordlm.encode(sentences, vocab), batch_size=2)
    assert count == sum(len(s) + 1 for s in sentences)
    # the same by hand: the model's full log-distribution, one sentence at a time
    total = 0.0
    with torch.no_grad():
        for ids in wordlm.encode(sentences, vocab):
            out = model.hidden_states(ids[None, :-1], torch.tensor([len(ids) - 1]))[0]
            log_p = model.softmax.log_prob(out)
            assert torch.allclose(log_p.exp().sum(1), torch.ones(len(ids) - 1), atol=1e-5)  # a distribution over the vocabulary
            total -= float(log_p[torch.arange(len(ids) - 1), ids[1:]].sum())
    assert math.isclose(ppl, math.exp(total / count), rel_tol=1e-5)


@pytest.mark.parametrize("cell", wordlm.CELLS)
def test_committed_checkpoint_is_small_and_recorded(cell):
    rec, path = wordlm.checkpoint_record(cell), wordlm.CHECKPOINTS[cell]
    assert path.stat().st_size < 8_000_000 and rec["bytes"] == path.stat().st_size
    assert rec["command"].startswith(f"python -m seqlab.wordlm --cell {cell}") and "seed" in rec and rec["seconds"] > 0
    assert rec["config"]["cell"] == cell and rec["test_tokens"] == 124_266  # every test word and every </s>
    assert len(rec["history"]) == rec["epochs"]


def test_the_lstm_beats_kneser_ney_and_the_plain_rnn():
    lstm, rnn = wordlm.checkpoint_record("lstm"), wordlm.checkpoint_record("rnn")
    assert lstm["test_perplexity"] < KN_TRIGRAM_TEST_PERPLEXITY - 10, lstm["test_perplexity"]
    assert lstm["test_perplexity"] < rnn["test_perplexity"] - 5, (lstm["test_perplexity"], rnn["test_perplexity"])


def test_a_wrong_cell_is_refused_clearly():
    with pytest.raises(ValueError, match="cell must be one of"):
        wordlm.WordRNN(10, cell="gru")
    with pytest.raises(ValueError, match="cell must be one of"):
        wordlm.checkpoint_record("transformer")


# ---- the taggers of section 10 (issue 26) -----------------------------------------------------------

@pytest.mark.parametrize("direction", tagger.DIRECTIONS)
def test_committed_tagger_is_small_and_recorded(direction):
    rec, path = tagger.checkpoint_record(direction), tagger.CHECKPOINTS[direction]
    assert path.stat().st_size < 4_000_000 and rec["bytes"] == path.stat().st_size
    assert rec["command"].startswith(f"python -m seqlab.tagger --direction {direction}") and rec["seconds"] > 0
    assert rec["config"]["direction"] == direction and not rec["stopped_by_time_limit"] and len(rec["history"]) == rec["epochs_run"]
    # chapter 2's test split: every token, and its unknown words (lower-cased, never in training)
    assert rec["test_tokens"] == 118_420 and rec["test_unknown_tokens"] == 4_716


def test_the_tagger_data_is_chapter_two_s():
    splits = tagger.tagging_splits(50)
    from seqlab.data import load_brown
    from seqlab.tagsets import UNIVERSAL_TAGS, universal_tags

    first = load_brown("test")[0]
    assert splits["test"][0] == (first.words, universal_tags(first.tags))
    assert tagger.TAGS == tuple(UNIVERSAL_TAGS)
    vocab = tagger.Vocabulary([["The", "cat", "the", "cats"], ["Cat", "dog"]])
    assert vocab.words == ["<unk>", "cat", "the"] and vocab.suffixes == ["<unk>", "cat", "the"]
    assert vocab.encode(["THE", "Cats", "1960", "well-known"]).tolist() == [[2, 0, 0, 0], [2, 0, 0, 0], [2, 1, 3, 4]]
    assert vocab.unknown(["Dog", "bird"]).tolist() == [False, True]


def test_the_tagger_wrapper_equals_the_packed_lstm(ch):
    """tag_sentences with a chapter's own bidirectional_lstm gives the scores of the model's nn.LSTM."""
    torch.manual_seed(0)
    vocab = tagger.Vocabulary([["a", "b", "a", "b", "c"]], min_count=1)
    model = tagger.Tagger(len(vocab.words), len(vocab.suffixes), bidirectional=True, hidden=5).eval()
    encoded = [vocab.encode(s) for s in (["a", "b"], ["c", "a", "zz", "b"], ["b"])]
    ours = tagger.tag_sentences(model, encoded, recurrent=lambda x, L: ch["bidirectional_lstm"](x, L, *model.directions())[0])
    theirs = tagger.tag_sentences(model, encoded)
    assert [o.shape for o in ours] == [(2, 12), (4, 12), (1, 12)]
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_tagger_script_trains_and_records(tmp_path):
    out = tmp_path / "tiny.pt"
    tagger.main(["--direction", "uni", "--epochs", "1", "--max-sentences", "60", "--threads", "1", "--device", "cpu", "--out", str(out)])
    import json

    rec = json.loads(out.with_suffix(".json").read_text())
    assert rec["command"].endswith("--max-sentences 60") and rec["epochs_run"] == 1 and 0 <= rec["test_accuracy"] <= 1
    model, vocab = tagger.load_checkpoint(path=out)
    assert not model.bidirectional and len(vocab.words) == rec["words"]
    with pytest.raises(ValueError, match="direction must be one of"):
        tagger.checkpoint_record("both")


# ---- the notebook in learner mode ------------------------------------------------------------------

@reads_learner_run(CHAPTER)
def test_learner_mode_reaches_the_targets():
    results, seconds = learner_results(NOTEBOOK)
    record("ch04", adding_seed0=results["adding_seed0"], lm_test_perplexity=results["lm_test_perplexity"],
           lm_tokens=results["lm_tokens"])
    record_timing("ch04", seconds, adding_seconds=results["adding_seconds"],
                  brief_seconds=results["brief_seconds"], brief_tagger_seconds=results["brief_tagger_seconds"],
                  tagging_cpu_seconds=results["tagging_cpu_seconds"], char_lm_seconds=results["char_lm_seconds"])
    mse = results["adding_seed0"]  # the two models the notebook trains itself
    assert mse["LSTM, forget bias 1"] < 0.01 and mse["RNN"] > 0.98 * adding.BASELINE_MSE, mse
    # The same recipe as the committed script's seed 0, but not its last digits: the RNN fails to learn, so its
    # test MSE is the noise of a model that only guesses. Observed for seed 0 (record 0.1797, torch 2.13 on the
    # machine that made it): 0.2011 on an Intel Xeon with torch 2.11 (0.1881 with ATEN_CPU_CAPABILITY=default),
    # 0.1915 on AMD EPYC with default; the record's seeds 0-2 span 0.165-0.195. What it means is asserted: the
    # RNN stays at the constant guess (within 2% below it, and not diverging: below 1.5x), and the LSTM learns
    # (below 0.01, as on every recorded seed) -- the figures the chapter's text reads.
    record_seed0 = results["adding_record_seed0"]
    assert 0.98 * adding.BASELINE_MSE < record_seed0["RNN"] and mse["RNN"] < 1.5 * adding.BASELINE_MSE, mse
    assert record_seed0["LSTM, forget bias 1"] < 0.01, record_seed0
    assert max(results["adding_worst"][name] for name in ("GRU", "LSTM", "LSTM, forget bias 1")) < 0.01
    assert results["lm_tokens"] == 124_266
    assert results["lm_test_perplexity"] < KN_TRIGRAM_TEST_PERPLEXITY - 10, results
    # Both committed checkpoints, scored on the test split by the notebook itself, reproduce their records.
    for cell in wordlm.CELLS:
        rec = wordlm.checkpoint_record(cell)
        ppl = results["lm_test_perplexity" if cell == "lstm" else f"{cell}_lm_test_perplexity"]
        record(f"ch04_lm_{cell}", test_perplexity=ppl, kn_trigram=KN_TRIGRAM_TEST_PERPLEXITY, tokens=results["lm_tokens"],
               train_seconds=rec["seconds"], epochs=rec["epochs"], parameters=rec["parameters"], bytes=rec["bytes"])
        assert results["lm_tokens"] == rec["test_tokens"] and abs(ppl - rec["test_perplexity"]) < 0.05, (cell, results, rec)
    assert results["gradient_lstm_fb3"] > 1e-3
    # the LSTM of 1997, without a forget gate: its gradient at step 1 does not fade (issue 26)
    assert results["gradient_lstm_no_forget"] > 0.1 and results["gradient_lstm_no_forget"] > 1e6 * results["gradient_lstm_fb0"]
    # both GRUs, the full one and the update gate only, learn the task within the notebook's short run (issue 26)
    short = results["adding_gru_short"]
    assert set(short) == {"GRU", "GRU, update gate only"} and max(short.values()) < 0.1 * adding.BASELINE_MSE, short
    # Section 10 (issue 26): the committed taggers run by the learner's run_padded / bidirectional_lstm and scored by
    # tag_accuracy on chapter 2's whole test split. The weights are fixed, so the learner's wrappers must give nn.LSTM's
    # figures and the record's (float rounding moves a handful of tokens at most: 2e-4 is 24 of 118,420).
    tag, torch_tag = results["tagger"], results["tagger_torch"]
    assert results["tagger_tokens"] == 118_420 and results["tagger_unknown_tokens"] == 4_716, results
    for direction in tagger.DIRECTIONS:
        rec = tagger.checkpoint_record(direction)
        assert abs(tag[direction][0] - torch_tag[direction][0]) < 2e-4 and abs(tag[direction][1] - torch_tag[direction][1]) < 1e-3
        assert abs(tag[direction][0] - rec["test_accuracy"]) < 2e-4 and abs(tag[direction][1] - rec["test_unknown_accuracy"]) < 1e-3
        record(f"ch04_tagger_{direction}", accuracy=tag[direction][0], unknown_accuracy=tag[direction][1], train_seconds=rec["seconds"],
               epochs=rec["epochs_run"], parameters=rec["parameters"])
    # what the text says: the bidirectional tagger is best, by more than a point over the HMM and the one-way LSTM, and
    # better on unknown words than both; the one-way LSTM lands barely above the HMM; both beat the HMM on unknown words
    # ("more than a point and a half" over the one-way tagger, "more still on unknown words", "less than a fifth of a point")
    assert tag["bi"][0] > HMM_ACCURACY + 0.01 and tag["bi"][0] > tag["uni"][0] + 0.015, tag
    assert tag["bi"][1] - tag["uni"][1] > tag["bi"][0] - tag["uni"][0] and min(tag["uni"][1], tag["bi"][1]) > HMM_UNKNOWN + 0.02, tag
    assert HMM_ACCURACY < tag["uni"][0] < HMM_ACCURACY + 0.002, tag
    first, last = results["brief_tagger_loss"]
    assert last < 0.5 * first, results["brief_tagger_loss"]
    # Section 11: the bidirectional LM "predicts" the next character with perplexity near 1, on unseen names too, while
    # the one-way one cannot; sampled left to right, its names are short and unlikely under the one-way model.
    ppl, samples = results["char_lm_perplexity"], results["char_lm_samples"]
    assert ppl["bidirectional"]["train"] < 1.05 and ppl["bidirectional"]["dev"] < 1.05 and ppl["one-way"]["dev"] > 5, ppl
    real = results["char_lm_real_length"]
    assert samples["bidirectional"]["mean_length"] < 0.5 * real < 0.5 * 1.3 * samples["one-way"]["mean_length"], samples
    assert samples["bidirectional"]["judge_perplexity"] > 5 * samples["one-way"]["judge_perplexity"], samples
    assert samples["bidirectional"]["empty_or_one"] > 0.2 > samples["one-way"]["empty_or_one"], samples
    p_end = results["char_lm_p_end_after_one"]
    assert p_end["bidirectional"] > 0.1 and p_end["bidirectional"] > 100 * p_end["one-way"], p_end
    # Issue 40, 6: the one-way tagger's lead over the HMM, tested as chapter 3 tests its classifier (McNemar, exact)
    # against chapter 2's HMM rebuilt token by token (it must reproduce chapter 2's 96.15%). The text: "less than one
    # time in a hundred" (measured: 2,533 against 2,339 tokens, p = 0.0057); the bidirectional lead beyond doubt.
    assert round(results["hmm_rebuilt_accuracy"], 4) == HMM_ACCURACY, results["hmm_rebuilt_accuracy"]
    mcnemar = results["tagger_mcnemar"]
    assert mcnemar["uni"]["only_lstm"] > mcnemar["uni"]["only_hmm"] and mcnemar["uni"]["p"] < 0.01, mcnemar
    assert mcnemar["bi"]["p"] < 1e-10, mcnemar
    # both taggers were still improving on dev at their last epoch (the records' history, printed)
    for direction in tagger.DIRECTIONS:
        dev = [h["dev_accuracy"] for h in tagger.checkpoint_record(direction)["history"]]
        assert len(dev) == 5 and dev[-1] > dev[-2], (direction, dev)
    # Section 12 (issue 40, 6), truncated BPTT at equal numbers of updates, every model scored both ways (measured,
    # seeds 1 and 2: scored carried, carrying beats resetting by 0.35-0.47 at k = 4 and 0.54-0.57 at 16, within 0.25
    # at 64; the carrying model scored with resets 11.9-12.1 against the reset model's 10.8 at k = 4; k = 64 at
    # 7.3-7.5 against 9.8-10.3 at k = 4).
    tbptt = {int(k): v for k, v in results["tbptt"].items()}
    record("ch04_tbptt", **{f"k{k}_{how}": v[how] for k, v in tbptt.items() for how in v})
    assert tbptt[4]["carry_carried"] < tbptt[4]["reset_carried"] - 0.15, tbptt
    assert tbptt[16]["carry_carried"] < tbptt[16]["reset_carried"] - 0.15, tbptt
    assert abs(tbptt[64]["carry_carried"] - tbptt[64]["reset_carried"]) < 0.5, tbptt
    assert tbptt[4]["carry_reset"] > tbptt[4]["reset_reset"] + 0.5, tbptt
    assert max(tbptt[64]["carry_carried"], tbptt[64]["reset_carried"]) < min(tbptt[4]["carry_carried"], tbptt[4]["reset_carried"]) - 1.5, tbptt


def test_the_rebuilt_hmm_tags_a_toy_corpus_by_its_transitions():
    """seqlab.tagger.BigramHMM (chapter 2's HMM, for chapter 4's paired test): known words by their emissions, an
    ambiguous word by the tag before it, an unseen word through its spelling class."""
    det, noun, verb = "DET", "NOUN", "VERB"
    corpus = [(("the", "dog", "runs"), (det, noun, verb)), (("the", "run", "ends"), (det, noun, verb)),
              (("dogs", "run"), (noun, verb))] * 3
    hmm = tagger.BigramHMM(corpus)
    tags = lambda words: [tagger.TAGS[i] for i in hmm.tag(words).tolist()]  # noqa: E731
    assert tags(("the", "run", "ends")) == [det, noun, verb] and tags(("dogs", "run")) == [noun, verb]
    assert hmm.encode(("Zanzibar",)).tolist() == [hmm.index["<unk-cap>"]] and hmm.tag(()).numel() == 0
