"""Chapter 9 (Transformer language models): the notebook's language models and their measured targets."""


from course import LEARNER_BUDGET_S, SOLUTIONS, errors_of, execute, printed_results, reads_learner_run, record

CHAPTER = "09-transformer-language-models"
NOTEBOOK = SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb"


@reads_learner_run(CHAPTER)
def test_learner_mode_reaches_the_targets():
    nb, seconds = execute(NOTEBOOK, grading=False)
    problems = [(i, e) for i, c in enumerate(nb.cells) for e in errors_of(c)]
    assert not problems, problems
    r = printed_results(nb)
    record("ch09", **r)
    record("ch09_timing", notebook_cpu_seconds=round(seconds.cpu, 1), notebook_wall_seconds=round(seconds.wall, 1))
    assert seconds.cpu < LEARNER_BUDGET_S, f"the notebook took {seconds}"
    # The LM: the checkpoint scored in the notebook reproduces its record.
    assert abs(r["lm_test_perplexity_here"] - r["lm_record_test_perplexity"]) < 1.0, r
    # Issue 26: a small GPT on chapter 3's first names, one component at a time (dev perplexity, seed 0; measured on
    # the 2-core CPU, torch 2.13: bigram 11.16, embeddings 11.31, one head 9.56, 4 heads 9.11, + FFN/residuals 7.83,
    # + LayerNorm 8.33, label smoothing 8.54, no warm-up 8.19; test: the GPT 8.28).
    n = r["names"]
    dev, test = n["dev"], n["test"]
    assert abs(n["bigram_test"] - 11.14) < 0.01, n  # chapter 3's add-k bigram on the same split: the tables join
    assert abs(dev["embeddings"] - n["bigram_dev"]) < 0.6, n  # the embeddings alone are a (neural) bigram
    assert dev["one_head"] < dev["embeddings"] - 1.0 and dev["heads"] < dev["one_head"] - 0.15, n
    assert dev["ffn_residual"] < dev["heads"] - 0.5, n
    assert 7.3 < dev["gpt"] < 8.9 and dev["gpt"] < n["bigram_dev"] - 2.0, n
    # What the prose says: LayerNorm and label smoothing raised this 2-block model's dev perplexity; warm-up is noise.
    assert dev["gpt"] > dev["ffn_residual"] and dev["gpt_label_smoothing"] > dev["gpt"], n
    assert abs(dev["gpt_no_warmup"] - dev["gpt"]) < 0.4, n
    # Where it lands: not ahead of chapter 3's 5-character window (7.82), next to its char-RNN (8.18).
    assert test["gpt"] > 7.82 and abs(test["gpt"] - 8.18) < 0.6, n
    # A colder sampler copies more of the training names; the whole ladder trains in about a minute of CPU.
    assert n["copied"]["0.5"] > n["copied"]["1.0"], n
    assert n["cpu_seconds"] < 90, n
