"""Chapter 3 (recurrent neural networks): the solutions against references, and the measured targets."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from course import LEARNER_BUDGET_S, SOLUTIONS, errors_of, execute, load_definitions, printed_results, record

CHAPTER = "03-recurrent-neural-networks"
NOTEBOOK = SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb"
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


def test_masked_loss_ignores_padding(ch):
    logits = torch.randn(2, 5, 27, generator=torch.Generator().manual_seed(0))
    inputs, targets, lengths = ch["lm_batch"](["ab", "abcd"])
    assert targets.shape == (2, 5) and lengths.tolist() == [3, 5]
    loss = ch["masked_lm_loss"](logits, targets, lengths)
    changed = logits.clone()
    changed[0, 3:] = 100.0
    assert torch.allclose(loss, ch["masked_lm_loss"](changed, targets, lengths))


@pytest.mark.slow
@pytest.mark.slow
def test_learner_mode_reaches_the_targets():
    nb, seconds = execute(NOTEBOOK, grading=False)
    problems = [(i, e) for i, c in enumerate(nb.cells) for e in errors_of(c) if not e.startswith("stderr")]
    assert not problems, problems
    results = printed_results(nb)
    # deterministic figures (the same on every run) apart from the times, which depend on the machine
    record("ch03", **{k: results[k] for k in ("accuracy", "baseline", "dev_accuracy", "dev_baseline", "baseline_k",
                                                "perplexity", "bigram_perplexity")})
    record("ch03_timing", train_seconds=results["train_seconds"], lm_train_seconds=results["lm_train_seconds"],
           notebook_seconds=round(seconds, 1))
    assert seconds < LEARNER_S, f"the notebook took {seconds:.0f} s"
    assert results["train_seconds"] <= 60 and results["lm_train_seconds"] <= 60
    # The RNN beats the naive Bayes baseline on both held-out splits (measured: +2.3 points on test,
    # +1.6 on dev); the margins asserted leave room for last-digit differences between machines.
    assert results["accuracy"] >= results["baseline"] + 0.01, results
    assert results["dev_accuracy"] >= results["dev_baseline"] + 0.005, results
    assert results["accuracy"] > 0.6, results
    assert results["perplexity"] < results["bigram_perplexity"] - 0.3, results
    assert 3.0 < results["perplexity"] < 12.0, results
    # issue 14: the paired test, macro-F1 and the fixed-window models are reported, not asserted to favour the RNN
    record("ch03_paired", **{k: results[k] for k in ("mcnemar_p", "rnn_only_right", "nb_only_right", "macro_f1",
                                                       "baseline_macro_f1", "window3_perplexity", "window5_perplexity")})
    assert 0.0 <= results["mcnemar_p"] <= 1.0, results
    assert results["window3_perplexity"] < results["bigram_perplexity"], results
