"""Issue 28 on a CUDA GPU: the course's cells against torch on CUDA (the CPU versions are the chapters' tests),
a short training run of every script there, and decoding a committed checkpoint there.

Every test here is marked ``gpu`` and skipped without CUDA: `make test` skips them on a CPU machine, and
`make gpu-check` (tests/gpu_check.py) runs ``pytest -m gpu`` on a GPU one. Tolerances are the CPU tests'
where the arithmetic is the same, looser (1e-4) where CUDA sums in another order.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course import load_definitions
from trainings import BY_NAME, TRAININGS, run_in_process

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

CUDA = torch.device("cuda")


@pytest.fixture(scope="module")
def chapters():
    return {}


def chapter(chapters, name):
    if name not in chapters:
        chapters[name] = load_definitions(name)
    return chapters[name]


def on_cuda(*tensors):
    for t in tensors:
        assert t.device.type == "cuda", f"a result came back on {t.device}: the code moved its work off the GPU"


# ---- chapter 3: the RNN forward pass (NumPy) against nn.RNN on CUDA; clipping of CUDA gradients ---------------

@pytest.mark.parametrize("seed", range(3))
def test_ch03_from_scratch_forward_equals_nn_rnn_on_cuda(chapters, seed):
    ch = chapter(chapters, "03-recurrent-neural-networks")
    rng = np.random.default_rng(seed)
    B, T, V, H, K = (int(v) for v in rng.integers(2, 9, size=5))
    p = ch["init_rnn_params"](V, H, K, seed=seed)
    X, a0 = rng.normal(size=(B, T, V)), rng.normal(size=(B, H))
    A, _, _ = ch["rnn_forward"](X, a0, p)
    rnn = nn.RNN(V, H, batch_first=True).double().to(CUDA)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.from_numpy(p["W_ax"]))
        rnn.weight_hh_l0.copy_(torch.from_numpy(p["W_aa"]))
        rnn.bias_ih_l0.copy_(torch.from_numpy(p["b_a"]))
        rnn.bias_hh_l0.zero_()
        out, _ = rnn(torch.from_numpy(X).to(CUDA), torch.from_numpy(a0)[None].to(CUDA))
    np.testing.assert_allclose(A, out.cpu().numpy(), rtol=1e-9, atol=1e-11)


def test_ch03_clipping_of_cuda_gradients_matches_torch(chapters):
    ch = chapter(chapters, "03-recurrent-neural-networks")
    torch.manual_seed(0)
    model, twin = nn.Linear(7, 5).to(CUDA), nn.Linear(7, 5).to(CUDA)
    twin.load_state_dict(model.state_dict())
    for m in (model, twin):
        (m(torch.ones(3, 7, device=CUDA)) ** 2).sum().backward()
    norm = ch["clip_gradients_"](model.parameters(), 0.5)
    assert math.isclose(float(norm), float(torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.5)), rel_tol=1e-5)
    for a, b in zip(model.parameters(), twin.parameters()):
        on_cuda(a.grad)
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-7)


# ---- chapter 4: GRU and LSTM cells and their wrappers on CUDA ------------------------------------------------

def weights_of(module, suffix=""):
    return {k: getattr(module, k + suffix).detach() for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}


@pytest.mark.parametrize("seed", range(3))
def test_ch04_cells_equal_torch_cells_on_cuda(chapters, seed):
    ch = chapter(chapters, "04-vanishing-gradients-gru-lstm")
    torch.manual_seed(seed)
    B, D, H = 16, 24, 48
    x, h, c = (torch.randn(B, n, device=CUDA) for n in (D, H, H))
    gru, lstm = nn.GRUCell(D, H).to(CUDA), nn.LSTMCell(D, H).to(CUDA)
    with torch.no_grad():
        ours_h = ch["gru_cell"](x, h, **weights_of(gru))
        ours_lstm = ch["lstm_cell"](x, h, c, **weights_of(lstm))
        on_cuda(ours_h, *ours_lstm)
        torch.testing.assert_close(ours_h, gru(x, h), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(ours_lstm, lstm(x, (h, c)), rtol=1e-4, atol=1e-5)


def test_ch04_wrappers_equal_torch_layers_on_a_packed_cuda_batch(chapters):
    ch = chapter(chapters, "04-vanishing-gradients-gru-lstm")
    torch.manual_seed(3)
    B, T, D, H = 6, 11, 5, 7
    x = torch.randn(B, T, D, device=CUDA)
    lengths = torch.tensor([11, 3, 1, 7, 11, 2])  # on the CPU, as pack_padded_sequence wants them

    def packed(module):
        out, final = module(nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        return nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)[0], final

    with torch.no_grad():
        stack = nn.LSTM(D, H, num_layers=2, batch_first=True).to(CUDA)
        want, (h_n, c_n) = packed(stack)
        got, (gh, gc) = ch["stacked_lstm"](x, [weights_of(stack, "_l0"), weights_of(stack, "_l1")], lengths)
        on_cuda(got, gh, gc)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close((gh, gc), (h_n, c_n), rtol=1e-4, atol=1e-5)
        bi = nn.LSTM(D, H, bidirectional=True, batch_first=True).to(CUDA)
        want, (h_n, c_n) = packed(bi)
        got, (gh, gc) = ch["bidirectional_lstm"](x, lengths, weights_of(bi, "_l0"), weights_of(bi, "_l0_reverse"))
        on_cuda(got, gh, gc)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close((gh, gc), (h_n, c_n), rtol=1e-4, atol=1e-5)


# ---- chapters 7 and 8: attention on CUDA ---------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(10))
def test_ch07_qkv_attention_equals_torch_on_cuda(chapters, seed):
    ch = chapter(chapters, "07-attention")
    gen = torch.Generator().manual_seed(seed)
    B, Tq, Tk, d, dv = (int(v) for v in torch.randint(1, 9, (5,), generator=gen))
    q, k, v = (torch.randn(B, n, m, generator=gen).to(CUDA) for n, m in ((Tq, d), (Tk, d), (Tk, dv)))
    lengths = torch.randint(1, Tk + 1, (B,), generator=gen)
    key_mask = (torch.arange(Tk)[None, :] < lengths[:, None]).to(CUDA)
    ours, weights = ch["qkv_attention"](q, k, v, key_mask)
    on_cuda(ours, weights)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask[:, None, :])
    torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, Tq, device=CUDA))
    if Tq <= Tk:
        causal = torch.ones(Tq, Tk, dtype=torch.bool, device=CUDA).tril()[None].expand(B, Tq, Tk)
        torch.testing.assert_close(ch["qkv_attention"](q, k, v, causal)[0],
                                   F.scaled_dot_product_attention(q, k, v, attn_mask=causal), rtol=1e-4, atol=1e-5)


def test_ch07_masked_softmax_equals_seqlab_and_torch_on_cuda(chapters):
    from seqlab.attention import masked_softmax

    ch = chapter(chapters, "07-attention")
    gen = torch.Generator().manual_seed(0)
    scores = (5 * torch.randn(4, 6, 7, generator=gen)).to(CUDA)
    mask = (torch.rand(4, 1, 7, generator=gen) < 0.6).to(CUDA)
    for dim in (-1, 0, 1):
        ours = ch["masked_softmax"](scores, mask, dim)
        on_cuda(ours)
        torch.testing.assert_close(ours, masked_softmax(scores, mask, dim))
    torch.testing.assert_close(ch["masked_softmax"](scores, torch.ones(1, dtype=torch.bool, device=CUDA), -1),
                               torch.softmax(scores, -1))


@pytest.mark.parametrize("seed", range(6))
def test_ch08_multi_head_attention_equals_torch_on_cuda(chapters, seed):
    ch = chapter(chapters, "08-transformers")
    gen = torch.Generator().manual_seed(seed)
    heads = [1, 2, 4, 8][seed % 4]
    D = heads * (2 + seed)
    ours = ch["MultiHeadAttention"](D, heads).eval()
    theirs = nn.MultiheadAttention(D, heads, batch_first=True).eval()
    state = {k: torch.randn(v.shape, generator=gen) for k, v in ours.state_dict().items()}
    ours.load_state_dict(state)
    theirs.load_state_dict(state)
    ours.to(CUDA), theirs.to(CUDA)
    B, Lq, Lk = 3, 5 + seed, 7
    q, k, v = (torch.randn(B, n, D, generator=gen).to(CUDA) for n in (Lq, Lk, Lk))
    keep = (torch.arange(Lk)[None, :] < torch.tensor([7, 3, 1])[:, None]).to(CUDA)
    with torch.no_grad():
        out, w = ours(q, k, v, keep[:, None, None, :])
        ref_out, ref_w = theirs(q, k, v, key_padding_mask=~keep, average_attn_weights=False)
    on_cuda(out, w)
    torch.testing.assert_close(out, ref_out, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(w, ref_w, atol=1e-5, rtol=1e-4)


# ---- seqlab on CUDA: the committed checkpoints decode there, and every script trains there --------------------

def test_committed_seq2seq_checkpoint_decodes_on_cuda_as_on_the_cpu():
    from seqlab.seq2seq import decode, load_checkpoint, task_data

    model, src_vocab, tgt_vocab = load_checkpoint("dates")
    sources = [p.source for p in task_data("dates", "dev")[:200]]
    on_cpu = decode(model, sources, src_vocab, tgt_vocab)
    on_gpu = decode(model.to(CUDA), sources, src_vocab, tgt_vocab)
    assert next(model.parameters()).device.type == CUDA.type
    assert sum(a != b for a, b in zip(on_cpu, on_gpu)) <= 2, "CUDA's last digits may flip a near tie, not more"


def test_use_device_picks_and_names_the_gpu(monkeypatch, capsys):
    from seqlab import hardware

    monkeypatch.setattr(hardware, "_chosen", None)
    monkeypatch.delenv(hardware.ENVIRONMENT, raising=False)
    assert hardware.use_device().type == "cuda"
    out = capsys.readouterr().out
    assert torch.cuda.get_device_name() in out and 'use_device("cpu")' in out, out
    assert hardware.use_device("cpu") == torch.device("cpu") and hardware.default_device() == torch.device("cpu")


def test_adding_trains_on_cuda_and_matches_the_cpu_run():
    from seqlab.adding import train_adding

    gpu = train_adding("LSTM", 0, steps=5, length=10, test_size=64, device="cuda")
    cpu = train_adding("LSTM", 0, steps=5, length=10, test_size=64, device="cpu")
    assert next(gpu["model"].parameters()).device.type == "cuda"
    assert abs(gpu["test_mse"] - cpu["test_mse"]) < 1e-3, (gpu["test_mse"], cpu["test_mse"])


@pytest.mark.parametrize("name", [t.name for t in TRAININGS])
def test_script_trains_on_cuda_and_records_the_gpu(name, tmp_path):
    training = BY_NAME[name]
    record = run_in_process(training, tmp_path, "cuda")
    assert record["device"] == f"cuda:{torch.cuda.current_device()}", record["device"]
    assert record["hardware"] == torch.cuda.get_device_name() and record["cuda"] == torch.version.cuda
    assert record["torch"] == torch.__version__
    checkpoint = training.checkpoint(tmp_path)
    if checkpoint is not None:  # saved from CPU copies: loads on a machine without CUDA, no map_location needed
        saved = torch.load(checkpoint, weights_only=True)
        weights = saved.get("state_dict", saved)
        assert weights and all(t.device.type == "cpu" for t in weights.values())
