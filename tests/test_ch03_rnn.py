"""Chapter 3 (recurrent neural networks): the solutions against references, and the measured targets."""

import json
import math
import re
import subprocess
import sys

import nbformat
import numpy as np
import pytest
import torch
from torch import nn

from course import (LEARNER_BUDGET_S, SOLUTIONS, errors_of, execute, load_definitions, printed_results, printed_text,
                    reads_learner_run, record)
from seqlab import name_ablation
from seqlab.hardware import default_device
from seqlab.names import Name

CHAPTER = "03-recurrent-neural-networks"
NOTEBOOK = SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb"
ABLATION_NOTEBOOK = SOLUTIONS / CHAPTER / "appendix-ablation.ipynb"  # optional, ungraded: the ablation of §9's tricks
LEARNER_S = min(LEARNER_BUDGET_S, 150)  # this chapter's own, tighter budget: training must fit in 60 s


@pytest.fixture(scope="module")
def ch():
    return load_definitions(CHAPTER)


def copy_into_nn_rnn(p):
    V, H = p["W_ax"].shape[1], p["W_ax"].shape[0]
    rnn = nn.RNN(V, H, batch_first=True).double()
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.from_numpy(p["W_ax"]))
        rnn.weight_hh_l0.copy_(torch.from_numpy(p["W_aa"]))
        rnn.bias_ih_l0.copy_(torch.from_numpy(p["b_a"]))
        rnn.bias_hh_l0.zero_()
    return rnn


@pytest.mark.numerics
@pytest.mark.parametrize("seed", range(3))
def test_from_scratch_forward_equals_nn_rnn(ch, seed):
    rng = np.random.default_rng(seed)
    B, T, V, H, K = (int(v) for v in rng.integers(2, 9, size=5))
    p = ch["init_rnn_params"](V, H, K, seed=seed)
    X = rng.normal(size=(B, T, V))
    a0 = rng.normal(size=(B, H))
    A, Y, _ = ch["rnn_forward"](X, a0, p)
    out, _ = copy_into_nn_rnn(p)(torch.from_numpy(X), torch.from_numpy(a0)[None])
    np.testing.assert_allclose(A, out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(Y.sum(-1), 1.0)


@pytest.mark.numerics
def test_bptt_equals_autograd_for_a_softmax_loss(ch):
    """The full chain: softmax output layer by hand, hidden part by rnn_backward, against autograd."""
    rng = np.random.default_rng(5)
    B, T, V, H, K = 3, 6, 4, 5, 3
    p = ch["init_rnn_params"](V, H, K, seed=5)
    X = np.eye(V)[rng.integers(0, V, size=(B, T))]
    labels = rng.integers(0, K, size=(B, T))
    A, Y, cache = ch["rnn_forward"](X, np.zeros((B, H)), p)
    dZ = Y.copy()
    dZ[np.arange(B)[:, None], np.arange(T)[None, :], labels] -= 1.0  # d(sum CE)/dlogits
    grads = ch["rnn_backward"](dZ @ p["W_ya"], cache, p)
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    rnn = copy_into_nn_rnn(p)
    rnn.weight_ih_l0, rnn.weight_hh_l0 = nn.Parameter(tp["W_ax"]), nn.Parameter(tp["W_aa"])
    out, _ = rnn(torch.from_numpy(X))
    logits = out @ rnn.weight_ih_l0.new_tensor(p["W_ya"]).T + torch.from_numpy(p["b_y"])
    torch.nn.functional.cross_entropy(logits.reshape(-1, K), torch.from_numpy(labels).reshape(-1), reduction="sum").backward()
    np.testing.assert_allclose(grads["W_ax"], rnn.weight_ih_l0.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(grads["W_aa"], rnn.weight_hh_l0.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(grads["b_a"], rnn.bias_ih_l0.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.numerics
def test_clipping_matches_torch(ch):
    torch.manual_seed(0)
    model = nn.Linear(7, 5)
    twin = nn.Linear(7, 5)
    twin.load_state_dict(model.state_dict())
    for m in (model, twin):
        (m(torch.ones(3, 7)) ** 2).sum().backward()
    norm = ch["clip_gradients_"](model.parameters(), 0.5)
    assert math.isclose(norm, float(torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.5)), rel_tol=1e-5)
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-7)


@pytest.mark.numerics
def test_classifier_is_padding_invariant_and_learns_a_toy_task(ch):
    torch.manual_seed(0)
    model = ch["NameClassifier"](3, 8, 16, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    words = ["ab" * k for k in range(1, 5)] + ["ba" * k + "c" for k in range(1, 5)]  # class: last letter
    X, L = ch["one_hot_batch"](words, "abc")
    ids, L = torch.from_numpy(X.argmax(axis=2)), torch.from_numpy(L)
    y = torch.tensor([0] * 4 + [1] * 4)
    losses = [ch["train_step"](model, opt, ids, L, y) for _ in range(60)]
    assert losses[-1] < 0.1 < losses[0]
    model.eval()
    padded = torch.cat([ids, torch.randint(0, 3, (8, 5))], dim=1)  # any symbols after the end are ignored
    torch.testing.assert_close(model(padded, L), model(ids, L))


@pytest.mark.numerics
def test_label_smoothing_is_the_softened_cross_entropy(ch):
    torch.manual_seed(1)
    model = ch["NameClassifier"](4, 3, 5, 3)
    twin = ch["NameClassifier"](4, 3, 5, 3)
    twin.load_state_dict(model.state_dict())
    ids, L, y = torch.tensor([[0, 1, 2], [3, 0, 0]]), torch.tensor([3, 1]), torch.tensor([2, 0])
    loss = ch["train_step"](model, torch.optim.SGD(model.parameters(), lr=0.0), ids, L, y, label_smoothing=0.3)
    with torch.no_grad():
        log_p = torch.log_softmax(twin(ids, L), dim=1)
    q = torch.full_like(log_p, 0.1)
    q[torch.arange(2), y] += 0.7
    assert math.isclose(loss, float(-(q * log_p).sum(1).mean()), rel_tol=1e-5)


def test_sampling_from_a_trained_free_model_is_deterministic_per_seed(ch):
    torch.manual_seed(0)
    lm = ch["CharLM"](hidden_size=16)
    a = [ch["sample_name"](lm, np.random.default_rng(3), 1.0) for _ in range(3)]
    b = [ch["sample_name"](lm, np.random.default_rng(3), 1.0) for _ in range(3)]
    assert a == b and all(set(s) <= set(ch["LM_ALPHABET"][1:]) for s in a)


def test_the_rnn_language_model_reads_the_window_models_embedding(ch):
    """Issue 40, 6: a comparison of the RNN with WindowLM (an embedding) was unfair while the RNN read one-hot input."""
    rnn, window = ch["CharLM"](), ch["WindowLM"]()
    assert isinstance(rnn.embed, nn.Embedding) and rnn.embed.embedding_dim == window.embed.embedding_dim
    assert rnn.embed.num_embeddings == window.embed.num_embeddings == len(ch["LM_ALPHABET"])
    assert rnn.rnn.input_size == rnn.embed.embedding_dim


def test_masked_loss_ignores_padding(ch):
    logits = torch.randn(2, 5, 27, generator=torch.Generator().manual_seed(0))
    inputs, targets, lengths = ch["lm_batch"](["ab", "abcd"])
    assert targets.shape == (2, 5) and lengths.tolist() == [3, 5]
    loss = ch["masked_lm_loss"](logits, targets, lengths)
    changed = logits.clone()
    changed[0, 3:] = 100.0
    assert torch.allclose(loss, ch["masked_lm_loss"](changed, targets, lengths))


@reads_learner_run(CHAPTER)
def test_learner_mode_reaches_the_targets():
    nb, seconds = execute(NOTEBOOK, grading=False)
    problems = [(i, e) for i, c in enumerate(nb.cells) for e in errors_of(c) if not e.startswith("stderr")]
    assert not problems, problems
    results = printed_results(nb)
    # deterministic figures (the same on every run) apart from the times, which depend on the machine
    record("ch03", **{k: results[k] for k in ("accuracy", "baseline", "dev_accuracy", "dev_baseline", "baseline_k",
                                                "perplexity", "bigram_perplexity")})
    record("ch03_timing", train_seconds=results["train_seconds"], lm_train_seconds=results["lm_train_seconds"],
           notebook_cpu_seconds=round(seconds.cpu, 1), notebook_wall_seconds=round(seconds.wall, 1))
    assert seconds.cpu < LEARNER_S, f"the notebook took {seconds}"
    # The notebook promises each training within a minute; it prints wall time, which a busy machine stretches
    # (83 s beside other jobs), so the promise is checked on the notebook's own share of the CPU: its wall time
    # scaled by processor time over wall time of the whole run.
    share = min(1.0, seconds.cpu / seconds.wall) if seconds.wall else 1.0
    assert results["train_seconds"] * share <= 60 and results["lm_train_seconds"] * share <= 60, (results, seconds)
    # The RNN beats the naive Bayes baseline on both held-out splits (measured: +2.3 points on test,
    # +1.6 on dev); the margins asserted leave room for last-digit differences between machines.
    assert results["accuracy"] >= results["baseline"] + 0.01, results
    assert results["dev_accuracy"] >= results["dev_baseline"] + 0.005, results
    assert results["accuracy"] > 0.6, results
    assert results["perplexity"] < results["bigram_perplexity"] - 0.3, results
    runs = name_ablation.load_results()["runs"]
    # On a CPU the notebook's classifier is the ablation's seed 0 of the full model (§9): the same recipe, weights
    # and batches. Not to the last digit on every machine: torch picks its CPU kernels by instruction set
    # (ATEN_CPU_CAPABILITY=default instead of avx2 moved seed 0's test accuracy by one name of 827), and on
    # the CI machine of 23d3cb6 dev came out one name of 855 above the record. Four names are tolerated;
    # seeds 0-4 of the same recipe spread over about a point.
    # Under another torch version the kernels themselves may change: then the margin is the spread between the
    # record's seeds of the full model (about a point), which still catches a changed recipe.
    if not torch.cuda.is_available():
        seed0 = next(r for r in runs if r["variant"] == "full" and r["seed"] == 0)
        margin = {"dev": 0.005, "test": 0.005}
        if not same_release(name_ablation.load_results()["torch"], torch.__version__):
            full = [r for r in runs if r["variant"] == "full"]
            margin = {split: 0.005 + max(r[f"{split}_accuracy"] for r in full) - min(r[f"{split}_accuracy"] for r in full)
                      for split in margin}
        assert abs(results["dev_accuracy"] - seed0["dev_accuracy"]) <= margin["dev"], (results, seed0, margin)
        assert abs(results["accuracy"] - seed0["test_accuracy"]) <= margin["test"], (results, seed0, margin)
    # the appendix: "the classifier falls below naive Bayes, on every seed" (one-hot input)
    one_hot = [r for r in runs if r["variant"] == "one-hot input"]
    assert max(r["dev_accuracy"] for r in one_hot) < results["dev_baseline"], results
    assert max(r["test_accuracy"] for r in one_hot) < results["baseline"], results
    assert 3.0 < results["perplexity"] < 12.0, results
    # issue 14: the paired test, macro-F1 and the fixed-window models are reported, not asserted to favour the RNN
    record("ch03_paired", **{k: results[k] for k in ("mcnemar_p", "rnn_only_right", "nb_only_right", "macro_f1",
                                                       "baseline_macro_f1", "window3_perplexity", "window5_perplexity")})
    assert 0.0 <= results["mcnemar_p"] <= 1.0, results
    assert results["window3_perplexity"] < results["bigram_perplexity"], results
    # Issue 40, 6: the RNN and the window MLPs read the same embedding, so they differ in their context only; so
    # compared, "the RNN wins, narrowly" (measured: 7.57 against 7.82 with k = 5 and 8.10 with k = 3; fed one-hot
    # letters, the old RNN's 8.18 was behind both windows).
    assert results["perplexity"] < results["window5_perplexity"] < results["window3_perplexity"], results


def same_release(recorded: str, running: str) -> bool:
    """'2.13.0+cpu' and '2.13.0' are one release: the local build tag names the wheel, not the arithmetic."""
    return recorded.split("+")[0] == running.split("+")[0]


# ---- the ablation of the appendix (seqlab.name_ablation and its committed results) ---------------------------

def ablation_cells() -> list[str]:
    """The markdown cells of the ablation notebook that show a measured effect as a table whose header starts with
    'ablation row'."""
    nb = nbformat.read(ABLATION_NOTEBOOK, as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "markdown" and "| ablation row |" in c.source]


def table_rows(markdown: str) -> list[list[str]]:
    """The body rows of the markdown table that starts with '| ablation row |', as lists of cell texts."""
    lines = [line.strip() for line in markdown.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("| ablation row |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def percent(text: str) -> float:
    return float(re.fullmatch(r"([+-−]?\d+\.\d)%?", text.replace("−", "-")).group(1))


def test_ablation_results_are_complete_and_well_formed():
    record = name_ablation.load_results()
    assert record["command"].startswith("python -m seqlab.name_ablation") and "--threads 1" in record["command"]
    # the record says which torch made it (a release like 2.13.0+cpu); any supported torch may read it
    assert record["threads"] == 1 and re.fullmatch(r"\d+\.\d+\.\d+(\+\w+)?", record["torch"]), record["torch"]
    assert record["settings"] == {**name_ablation.SETTINGS, "n_train": None}, "the notebook's exact training settings"
    assert record["variants"] == name_ablation.VARIANTS
    assert len(record["seeds"]) >= 3 and record["seeds"] == list(range(len(record["seeds"])))
    pairs = [(r["variant"], r["seed"]) for r in record["runs"]]
    assert sorted(pairs) == sorted((v, s) for v in record["variants"] for s in record["seeds"]), "one run per variant and seed"
    for run in record["runs"]:
        assert set(run) == {"variant", "seed", "dev_accuracy", "test_accuracy", "parameters", "seconds", "cpu_seconds"}
        assert 0.0 <= run["dev_accuracy"] <= 1.0 and 0.0 <= run["test_accuracy"] <= 1.0 and run["seconds"] > 0
    full = {r["seed"]: r for r in record["runs"] if r["variant"] == "full"}
    assert full[0]["parameters"] == 89_299, "the notebook's model prints 89,299 parameters"


@pytest.mark.numerics
def test_ablation_script_writes_the_same_record_with_a_tiny_setting(tmp_path):
    out = tmp_path / "tiny.json"
    done = subprocess.run([sys.executable, "-m", "seqlab.name_ablation", "--seeds", "2", "--epochs", "1", "--n-train", "96",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    tiny, committed = json.loads(out.read_text()), name_ablation.load_results()
    # issue 28: a record names its device and hardware (seqlab.hardware.describe); the committed one predates that
    machine = {"device", "hardware", "cuda"}
    assert set(tiny) - machine == set(committed) - machine and set(tiny["settings"]) == set(committed["settings"])
    assert tiny["device"] == str(default_device()) and tiny["hardware"], tiny
    assert tiny["variants"] == committed["variants"] and tiny["seeds"] == [0, 1]
    assert tiny["command"] == "python -m seqlab.name_ablation --seeds 2 --epochs 1 --n-train 96 --out " + str(out)
    assert {tuple(sorted(r)) for r in tiny["runs"]} == {tuple(sorted(r)) for r in committed["runs"]}
    assert len(tiny["runs"]) == 2 * len(name_ablation.VARIANTS)
    again = name_ablation.train_variant(1, epochs=1, n_train=96)  # seeded: the same numbers again
    run = next(r for r in tiny["runs"] if r["variant"] == "full" and r["seed"] == 1)
    assert round(again["dev_accuracy"], 4) == run["dev_accuracy"] and round(again["test_accuracy"], 4) == run["test_accuracy"]


def test_reference_model_switches():
    ids, lengths = torch.tensor([[1, 2, 3], [4, 5, 0]]), torch.tensor([3, 2])
    torch.manual_seed(0)
    one_hot = name_ablation.ReferenceClassifier(6, 4, 5, 3, embedding=False)
    assert one_hot.embed is None and one_hot.rnn.input_size == 6 and one_hot(ids, lengths).shape == (2, 3)
    with pytest.raises(ValueError, match="one-hot"):
        name_ablation.ReferenceClassifier(6, 4, 5, 3, input_scale=8.0)
    with_bounds, without = (name_ablation.encode([Name("Li", "Chinese")], ["Chinese"], b)[0] for b in (True, False))
    assert with_bounds.tolist() == [[29, 11, 8, 30]] and without.tolist() == [[11, 8]]
    with pytest.raises(ValueError, match="outside"):
        name_ablation.encode([Name("Ñu", "Spanish")], ["Spanish"])


# What the appendix's prose says of each trick (the bold verdict in the cell that measures it), and what that
# verdict requires of the committed numbers (full minus variant, per split, over the seeds):
#   "helps"                 every seed of the full model beats every seed of the variant, on dev and test
#   "a small gain"          the full model's mean is higher on both splits and it is ahead on at least all but
#                           one seed of each split (a difference smaller than the spread between seeds)
#   "no measurable effect"  on both splits the two ranges over the seeds overlap
VERDICTS = {"one-hot input": "helps", "no dropout": "a small gain", "no label smoothing": "no measurable effect",
            "no ^ and $": "no measurable effect"}


def test_notebook_prose_agrees_with_the_ablation():
    rows = name_ablation.summary(name_ablation.load_results())
    cells = ablation_cells()
    assert len(cells) >= 4, "one cell per trick, each with its measured effect"
    seen = set()
    for cell in cells:
        table = table_rows(cell)
        for name, dev, test, *rest in table:
            variant = "full" if name == "full model" else name.strip("*")
            assert variant in rows, f"the table names an unknown variant {name!r}"
            row = rows[variant]
            assert percent(dev) == round(100 * row["dev_mean"], 1), (variant, dev, row["dev_mean"])
            assert percent(test) == round(100 * row["test_mean"], 1), (variant, test, row["test_mean"])
            if variant != "full":
                gap_dev, gap_test = (percent(g.strip()) for g in rest[0].split("/"))
                wins_dev, wins_test = (int(w.strip()) for w in rest[1].split("/"))
                assert abs(gap_dev - 100 * row["dev_gap"]) <= 0.051 and abs(gap_test - 100 * row["test_gap"]) <= 0.051, variant
                assert (wins_dev, wins_test) == (row["dev_wins"], row["test_wins"]), variant
        variant = next(r[0].strip("*") for r in table if r[0] != "full model")  # the trick the cell is about
        verdict = re.search(r"\*\*Verdict: ([^.*]+)", cell)
        assert verdict, f"the cell about {variant!r} states no verdict"
        expected = VERDICTS[variant]
        assert verdict.group(1).lower().startswith(expected), (variant, verdict.group(1), expected)
        full, row, n = rows["full"], rows[variant], rows[variant]["seeds"]
        for split in ("dev", "test"):
            if expected == "helps":
                assert full[f"{split}_min"] > row[f"{split}_max"], (variant, split)
            elif expected == "a small gain":
                assert row[f"{split}_gap"] > 0 and row[f"{split}_wins"] >= n - 1, (variant, split)
                assert full[f"{split}_min"] <= row[f"{split}_max"], f"{variant}: the ranges do not overlap: more than small"
            else:
                assert full[f"{split}_min"] <= row[f"{split}_max"] and row[f"{split}_min"] <= full[f"{split}_max"], (variant, split)
        seen.add(variant)
    assert seen == set(VERDICTS), f"tricks without a measured verdict: {set(VERDICTS) - seen}"


def test_what_the_embedding_cell_says_of_its_other_rows():
    """'with dropout on the final state only, the gap shrinks'; 'one-hot vectors times 8 close most of the rest
    (...less than the spread between seeds)' (the appendix, the cell about the embedding)."""
    rows = name_ablation.summary(name_ablation.load_results())
    one_hot, state_only = rows["one-hot input"], rows["one-hot input, dropout on the state only"]
    scaled, full = rows["one-hot input ×8, dropout on the state only"], rows["full"]
    for split in ("dev", "test"):
        assert 0 < state_only[f"{split}_gap"] < one_hot[f"{split}_gap"], split
        assert scaled[f"{split}_gap"] < state_only[f"{split}_gap"] / 2, f"{split}: ×8 closes most of the rest"
    assert abs(scaled["test_gap"]) < full["test_max"] - full["test_min"], "on test, less than the spread between seeds"


def test_the_optional_notebook_is_released_but_never_graded(tmp_path):
    """The ablation notebook beside chapter 3's own is released with the chapter and graded by nobody: the grader
    lists the chapter's graded notebooks only, so a student who hands in chapter 3 is not told a notebook is missing."""
    sys.path.insert(0, str(SOLUTIONS.parent / "autograder"))
    import grade
    import job
    from course import NOTEBOOKS

    assert ABLATION_NOTEBOOK.exists() and (NOTEBOOKS / CHAPTER / ABLATION_NOTEBOOK.name).exists()
    assert job.graded_notebooks(SOLUTIONS / CHAPTER) == [NOTEBOOK]
    assert grade.notebook_names(CHAPTER) == [NOTEBOOK.name]
    assert not any(c.metadata.get("nbgrader") for c in nbformat.read(ABLATION_NOTEBOOK, as_version=4).cells)
    optional = tmp_path / "chapter"  # a chapter of two graded notebooks keeps both
    optional.mkdir()
    for name in ("a.ipynb", "b.ipynb"):
        (optional / name).write_bytes(NOTEBOOK.read_bytes())
    (optional / "c.ipynb").write_bytes(ABLATION_NOTEBOOK.read_bytes())
    assert [p.name for p in job.graded_notebooks(optional)] == ["a.ipynb", "b.ipynb"]
