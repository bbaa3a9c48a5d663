"""Chapter 9 (Transformer language models): the learner's GPT against the reference, the committed run, and the
notebook's measured targets."""

import math
import sys

import pytest
import torch
import torch.nn.functional as F

from course import SOLUTIONS, learner_results, load_definitions, reads_learner_run, record, record_timing

CHAPTER = "09-transformer-language-models"
NOTEBOOK = SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb"


@pytest.fixture(scope="module")
def ch():
    return load_definitions(CHAPTER)


def copied(ours, reference, seed):
    gen = torch.Generator().manual_seed(seed)
    state = {k: torch.randn(v.shape, generator=gen) * 0.3 for k, v in reference.state_dict().items()}
    reference.load_state_dict(state)
    ours.load_state_dict(state)
    return ours.eval(), reference.eval()


@pytest.mark.numerics
@pytest.mark.parametrize("seed", range(4))
def test_block_equals_the_reference_and_torch_attention(ch, seed):
    from seqlab.gptlm import ReferenceBlock

    D, heads, T = [(8, 2, 5), (12, 3, 9), (16, 4, 1), (6, 1, 7)][seed]
    ours, ref = copied(ch["Block"](D, heads, 2 * D, 0.1), ReferenceBlock(D, heads, 2 * D, 0.1), seed)
    x = torch.randn(3, T, D, generator=torch.Generator().manual_seed(100 + seed))
    with torch.no_grad():
        torch.testing.assert_close(ours(x), ref(x), atol=1e-5, rtol=1e-4)
        # its attention is torch's causal multi-head attention with the same projections
        q, k, v = ref.qkv(x).view(3, T, 3, heads, D // heads).permute(2, 0, 3, 1, 4)
        torch_attn = ref.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(3, T, D))
        torch.testing.assert_close(ch["causal_self_attention"](x, ours.qkv, ours.proj, heads), torch_attn, atol=1e-5, rtol=1e-4)


@pytest.mark.numerics
def test_gpt_equals_the_reference_and_its_loss_skips_padding(ch):
    from seqlab.gptlm import ReferenceGPT

    ours, ref = copied(ch["GPT"](13, 10, 8, 2, 2, 16, 0.0), ReferenceGPT(13, 10, 8, 2, 2, 16, 0.0), 7)
    gen = torch.Generator().manual_seed(1)
    ids, targets = torch.randint(0, 13, (4, 10), generator=gen), torch.randint(0, 13, (4, 10), generator=gen)
    targets[1, 6:] = -100
    with torch.no_grad():
        logits, loss = ours(ids, targets)
        ref_logits, _ = ref(ids)
    torch.testing.assert_close(logits, ref_logits, atol=1e-5, rtol=1e-4)
    keep = targets != -100
    torch.testing.assert_close(loss, F.cross_entropy(ref_logits[keep], targets[keep]), atol=1e-6, rtol=1e-5)


def test_committed_gpt_loads_into_the_learners_model_and_scores_as_recorded(ch):
    from seqlab.gptlm import GPT_CONFIG, bpe_streams, comparison_record, load_gpt, stream_nll
    from seqlab.tokens import BROWN_VOCAB_SIZE

    record_ = comparison_record()
    ours = load_gpt(ch["GPT"](BROWN_VOCAB_SIZE, **GPT_CONFIG))
    dev = bpe_streams(("dev",))["dev"]
    nll, n = stream_nll(ours, dev, GPT_CONFIG["context"])
    assert n == record_["tokens"]["dev"]
    # float16 weights on disk: the recorded perplexity (float32 weights) within a few hundredths
    assert abs(math.exp(nll / n) - record_["comparison"]["gpt"]["dev_token_perplexity"]) < 0.1


def test_lr_schedule_rises_then_falls_to_a_tenth(ch):
    lrs = [ch["lr_at"](s, 50, 1.0, 5) for s in range(50)]
    assert lrs[:5] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    assert lrs[5] == pytest.approx(1.0) and lrs[-1] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(lrs[5:], lrs[6:]))


@reads_learner_run(CHAPTER)
def test_learner_mode_reaches_the_targets():
    r, seconds = learner_results(NOTEBOOK)
    record("ch09", **r)
    record_timing("ch09", seconds)
    # The word-level LM of §5: the checkpoint scored in the notebook reproduces its record.
    assert abs(r["lm_test_perplexity_here"] - r["lm_record_test_perplexity"]) < 1.0, r
    g = r["gpt"]
    # The learner's GPT with the committed weights scores the learner's dev ids as the run recorded.
    assert abs(g["committed_dev_perplexity_here"] - g["committed_dev_perplexity_record"]) < 0.1, g
    assert abs(g["word_perplexity_here"] - g["word_perplexity_record"]) < 1.0, g
    # The notebook's short training learns (far below the uniform 512) and stays within its share of the budget.
    assert g["notebook_dev_perplexity"] < 200 and g["notebook_cpu_seconds"] < 60, g
    # The ladder (committed run, 15 s each, two seeds, the comparison's settings): what the prose says. Every version
    # under-fitted (training perplexity a little below the dev one); attention without residuals worse than the
    # bigram; residuals and feed-forward below attention alone; LayerNorm does NOT help in so short a run: both GPT
    # seeds end above the version without it (issue 42 section 4's re-run; context 128 / lr 3e-3 showed the reverse).
    ladder = g["ladder"]
    for rung in ladder.values():
        assert all(t < d < 1.1 * t for t, d in zip(rung["train"], rung["dev"])), ladder
    assert min(ladder["one_head"]["train"]) > max(ladder["embeddings"]["train"]), ladder
    assert max(ladder["ffn_residual"]["train"]) < min(ladder["heads"]["train"] + ladder["one_head"]["train"]), ladder
    assert min(ladder["gpt"]["train"]) > max(ladder["ffn_residual"]["train"]), ladder
    # The comparison, as the prose reads it. At 1,200 s (the main record, all four models) the GPT wins from seed 0 by
    # under two percent, with fewer updates than the LSTM and the tanh RNN; from seed 1 (SEED_RECORD, the GPT and the
    # LSTM only) the two end level. At twice the time (LONG_RECORDS, seeds 0 and 1) the GPT is lower than the LSTM on
    # dev and test from both seeds, by about one percent on the seeds' mean, more than the seed moved either model.
    # At 150 s (SHORT_RECORD) the LSTM was ahead. By position, in every run from 1,200 s, the GPT is behind at 0, level
    # over 4-15 and ahead from 16 on; every model's dev loss levels off after sixteen positions.
    ppl = g["test_token_perplexity"]
    assert ppl["gpt"] < min(ppl["lstm"], ppl["rnn"], ppl["window"]), ppl
    assert 0 < 1 - ppl["gpt"] / ppl["lstm"] < 0.02, ppl
    from seqlab.gptlm import LONG_RECORDS, SEED_RECORD, SHORT_RECORD, comparison_record

    main = comparison_record()
    rows = main["comparison"]
    assert rows["lstm"]["steps"] > rows["gpt"]["steps"] and rows["rnn"]["steps"] > rows["gpt"]["steps"], rows
    short = comparison_record(SHORT_RECORD)
    assert short["seconds_each"] < main["seconds_each"], short["seconds_each"]
    assert short["comparison"]["lstm"]["test_token_perplexity"] < short["comparison"]["gpt"]["test_token_perplexity"]
    seeded, long_runs = comparison_record(SEED_RECORD), [comparison_record(path) for path in LONG_RECORDS]
    assert "seed" not in main and seeded["seed"] == 1, (main.get("seed"), seeded.get("seed"))
    assert [run.get("seed", 0) for run in long_runs] == [0, 1], [run.get("seed") for run in long_runs]
    assert [run["seconds_each"] for run in long_runs] == [2 * main["seconds_each"]] * 2, long_runs[0]["seconds_each"]
    for run in (seeded, *long_runs):
        assert all(run[k] == main[k] for k in ("context", "batch_size", "lr", "config", "tokens")), run
    assert seeded["seconds_each"] == main["seconds_each"], seeded["seconds_each"]

    def gap(comparison, split):
        return comparison["gpt"][f"{split}_token_perplexity"] / comparison["lstm"][f"{split}_token_perplexity"] - 1

    assert all(abs(gap(seeded["comparison"], split)) < 0.01 for split in ("dev", "test")), seeded["comparison"]
    longer = [run["comparison"] for run in long_runs]
    assert all(-0.03 < gap(c, split) < 0 for c in longer for split in ("dev", "test")), longer
    mean = {k: sum(c[k]["test_token_perplexity"] for c in longer) / 2 for k in ("gpt", "lstm")}
    moved = {k: abs(longer[0][k]["test_token_perplexity"] - longer[1][k]["test_token_perplexity"]) / mean[k] for k in mean}
    assert max(moved.values()) < 1 - mean["gpt"] / mean["lstm"] < 0.02, (mean, moved)

    def range_means(comparison, key):
        loss = comparison[key]["dev_loss_by_position"]
        return [sum(loss[a:b]) / (b - a) for a, b in [(0, 1), (1, 4), (4, 16), (16, 32), (32, len(loss))]]

    for comparison in (rows, seeded["comparison"], *longer):
        lead = [lstm - gpt for lstm, gpt in zip(range_means(comparison, "lstm"), range_means(comparison, "gpt"))]
        assert lead[0] < 0 and abs(lead[2]) < 0.01 and lead[3] > 0 and lead[4] > 0, lead
    for key in rows:
        means = range_means(rows, key)
        assert abs(means[3] - means[4]) < 0.02 and means[2] - means[3] < 0.05, (key, means)


@pytest.mark.parametrize("arguments, message", [([], "nothing to do"), (["--train", "--seconds", "0"], "must be positive"),
                                                (["--train", "--device", "tpu"], "use 'cpu', 'cuda' or 'cuda:N'"),
                                                (["--train", "--only", "transformer"], "invalid choice"),
                                                (["--train", "--seed", "1"], "writes a record of its own")])
def test_the_gpt_script_refuses_bad_arguments_clearly(arguments, message):
    import subprocess

    done = subprocess.run([sys.executable, "-m", "seqlab.gptlm", *arguments], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr
