"""Chapter 8 (Transformers): the solutions against PyTorch and seqlab's reference, and the measured targets."""

import re

import nbformat
import numpy as np
import pytest
import torch
from torch import nn

from course import SOLUTIONS, learner_results, load_definitions, reads_learner_run, record, record_timing
from test_release import STRING, exercise_texts

CHAPTER = "08-transformers"
NOTEBOOK = SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb"


@pytest.fixture(scope="module")
def ch():
    return load_definitions(CHAPTER)


@pytest.mark.numerics
@pytest.mark.parametrize("seed", range(6))
def test_multi_head_attention_equals_torch(ch, seed):
    gen = torch.Generator().manual_seed(seed)
    heads = [1, 2, 4, 8][seed % 4]
    D = heads * (2 + seed)
    ours = ch["MultiHeadAttention"](D, heads).eval()
    theirs = nn.MultiheadAttention(D, heads, batch_first=True).eval()
    state = {k: torch.randn(v.shape, generator=gen) for k, v in ours.state_dict().items()}
    ours.load_state_dict(state)
    theirs.load_state_dict(state)
    B, Lq, Lk = 3, 5 + seed, 7
    q, k, v = (torch.randn(B, n, D, generator=gen) for n in (Lq, Lk, Lk))
    keep = torch.arange(Lk)[None, :] < torch.tensor([7, 3, 1])[:, None]
    with torch.no_grad():
        out, w = ours(q, k, v, keep[:, None, None, :])
        ref_out, ref_w = theirs(q, k, v, key_padding_mask=~keep, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(w, ref_w, atol=1e-5, rtol=1e-4)


@pytest.mark.numerics
@pytest.mark.parametrize("D", [1, 3, 16, 64])
def test_layer_norm_equals_torch_with_its_gradients(ch, D):
    """The chapter's layer_norm (issue 24's new exercise) is nn.LayerNorm: values and the gradients of x, gamma, beta."""
    gen = torch.Generator().manual_seed(D)
    module = nn.LayerNorm(D).double()
    with torch.no_grad():
        module.weight.add_(torch.randn(D, generator=gen, dtype=torch.float64))
        module.bias.add_(torch.randn(D, generator=gen, dtype=torch.float64))
    x = (3 * torch.randn(2, 5, D, generator=gen, dtype=torch.float64) + 7).requires_grad_()
    gamma, beta = module.weight.detach().clone().requires_grad_(), module.bias.detach().clone().requires_grad_()
    w = torch.randn(2, 5, D, generator=gen, dtype=torch.float64)
    ours = ch["layer_norm"](x, gamma, beta)
    theirs = module(x)
    torch.testing.assert_close(ours, theirs, atol=1e-12, rtol=1e-12)
    ours_grads = torch.autograd.grad((ours * w).sum(), (x, gamma, beta))
    theirs_grads = torch.autograd.grad((theirs * w).sum(), (x, module.weight, module.bias))
    for a, b in zip(ours_grads, theirs_grads):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


def test_positional_encoding_equals_seqlab_and_offsets_are_rotations(ch):
    from seqlab.transformer import sinusoidal

    pe = ch["sinusoidal_encoding"](200, 32)
    torch.testing.assert_close(pe, sinusoidal(200, 32), atol=1e-5, rtol=1e-5)
    # PE[p + k] is a fixed linear map of PE[p] for each offset k: a rotation of each (sin, cos) pair by w_i k.
    pe = pe.double()
    k = 5
    w = 10000.0 ** (-torch.arange(0, 32, 2, dtype=torch.float64) / 32)
    sin, cos = pe[:, 0::2], pe[:, 1::2]
    torch.testing.assert_close(sin[k:], sin[:-k] * torch.cos(w * k) + cos[:-k] * torch.sin(w * k), atol=1e-4, rtol=0)
    torch.testing.assert_close(cos[k:], cos[:-k] * torch.cos(w * k) - sin[:-k] * torch.sin(w * k), atol=1e-4, rtol=0)


@pytest.mark.numerics
def test_notebook_model_holds_the_checkpoint_and_decodes_like_seqlab(ch):
    from seqlab.seq2seq import greedy_search, task_data
    from seqlab.transformer import Seq2SeqTransformer, load_seq2seq

    state, src_vocab, tgt_vocab, record_ = load_seq2seq("dates")
    model = ch["Transformer"](**record_["config"]).eval()
    model.load_state_dict(state)
    reference = Seq2SeqTransformer(**record_["config"]).eval()
    reference.load_state_dict(state)
    pairs = task_data("dates", "test")[:64]
    ids = [src_vocab.encode(list(p.source)) for p in pairs]
    src = torch.zeros(len(ids), max(map(len, ids)), dtype=torch.long)
    for b, row in enumerate(ids):
        src[b, :len(row)] = torch.tensor(row)
    lengths = torch.tensor([len(r) for r in ids])
    ours = ch["greedy_decode"](model, src, lengths, 12, use_cache=True)
    with torch.no_grad():
        theirs = greedy_search(reference.step, reference.start(src, lengths), len(ids), max_len=12)
    assert [list(map(int, r)) for r in ours] == theirs
    assert ch["greedy_decode"](model, src, lengths, 12, use_cache=False) == ours
    assert np.mean(["".join(tgt_vocab.decode(r)) == p.target for r, p in zip(ours, pairs)]) > 0.9


@reads_learner_run(CHAPTER)
def test_learner_mode_reaches_the_targets():
    r, seconds = learner_results(NOTEBOOK)
    record("ch08", **r)
    record_timing("ch08", seconds)
    # At least 99% exact match on the unambiguous test dates, and at least chapter 7's GRU with attention.
    assert r["dates_exact_match"] >= 0.99, r
    assert r["attention_rnn_exact_match"] is None or r["dates_exact_match"] >= r["attention_rnn_exact_match"], r
    # Faster per epoch than chapter 7's model: processor time of both, measured at the same moment on the same batches.
    seconds = r["seconds_per_epoch"]
    assert 0 < seconds["transformer_now"] < seconds["attention_rnn_now"], seconds
    # The numbers: accuracy does not fall with length (8-9 digits within 5 points of 3-4 digits).
    by = {int(d): v[1] for d, v in r["numbers_by_digits"].items()}
    assert np.mean([by[d] for d in (8, 9)]) >= np.mean([by[d] for d in (3, 4)]) - 0.05, by
    # The leak: a much lower training loss without the causal mask, and generation that fails.
    leak_on, leak_off = r["leak"]["True"], r["leak"]["False"]
    assert leak_off["loss"] < 0.5 * leak_on["loss"] and leak_off["generated"] < 0.2, r["leak"]
    # The cache gives the same tokens and is faster at the longest length.
    T, plain, cached, same = r["cache"][-1]
    assert all(row[3] for row in r["cache"]) and plain > 1.5 * cached, r["cache"]


# Issue 40, 5: a student must know from the exercise's text (heading, hints, docstring) every input class its hidden
# tests try. tests/test_release.py checks the classes of every chapter (empty inputs, settings of 0, arguments left
# unchanged); these are the modes, dtypes and boundaries chapter 8's hidden tests try, each found by what the hidden
# block's labels and messages say, and the words its exercise's text must then use.
INPUT_CLASSES = [  # (the class, what a hidden block says when it tries it, how the exercise's text names it)
    ("float64 inputs", r"\bfloat64 inputs?\b|\bin float64\b", r"float64"),
    ("a float32 result or input", r"\bfloat32\b", r"float32"),
    ("training mode (dropout active)", r"\btraining mode\b", r"training mode"),
    ("eval mode with dropout set", r"\beval mode\b", r"eval mode"),
    ("gradients through the function", r"\bautograd graph\b", r"autograd graph|gradients must reach"),
    ("a batch of one", r"\bB = 1\b", r"\bB = 1\b"),
    ("ties", r"\btie\b", r"\btie\b"),
    ("no leading dimensions", r"\(none too\)|\bno leading dim", r"none included"),
    ("a width of 1", r"\bD = 1\b", r"D \\ge 1"),
    ("values far from 0", r"\b1e4\b", r"10\^4"),
    ("causal = False", r"\bcausal = False\b", r"self\.causal"),
]


def unnamed_input_classes(text: str, hidden: str) -> list[str]:
    said = " ".join(STRING.findall(hidden))
    return [what for what, tried, named in INPUT_CLASSES if re.search(tried, said) and not re.search(named, text)]


def test_hidden_tests_try_only_input_classes_the_exercise_names():
    problems = [f"{grade_id}: the hidden tests try {what}, which the exercise's text does not name"
                for grade_id, _, text, hidden in exercise_texts(nbformat.read(NOTEBOOK, as_version=4))
                for what in unnamed_input_classes(text, hidden)]
    assert not problems, "\n".join(problems)


def test_an_unnamed_input_class_is_found():
    hidden = 'expect_equal(f(x), want, "greedy decoding with a tie (B = 1)", hint="keep the batch dimension")'
    assert unnamed_input_classes("Return a list of B lists.", hidden) == ["a batch of one", "ties"]
    assert unnamed_input_classes("A tie goes to the lower id; `B = 1` included.", hidden) == []
