"""Given code for chapter 10 (beyond the 2017 Transformer): what a function computes with, and the figures.

``measure`` runs a function under a torch dispatch mode and reports the largest tensor that any torch operation
inside it produced (its number of elements and shape) and how many torch operations it ran: the checks that a
tiled attention never holds a T x T matrix and that a parallel scan takes about log2(T) steps, not T. It counts
what torch operations return, views included (a view of an input is no larger than the input), so it reads the
code's shapes, not the allocator; on CPU that is what the memory figure needs.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from seqlab.i18n import N_, figure_text


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.numel = 0
        self.shape: tuple[int, ...] = ()
        self.operations = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.operations += 1
        for value in tree_flatten(out)[0]:
            if isinstance(value, torch.Tensor) and value.numel() > self.numel:
                self.numel, self.shape = value.numel(), tuple(value.shape)
        return out


def measure(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, int, tuple[int, ...], int]:
    """``(fn(*args, **kwargs), n, shape, operations)``: n is the number of elements of the largest tensor that a
    torch operation inside ``fn`` produced, ``shape`` its shape, ``operations`` how many torch operations ran.

    Under the instructors' grader ``fn`` is a handle to a student's function in the other kernel; the handle's
    ``_remote_measure`` measures it there, where the function runs."""
    remote = getattr(type(fn), "_remote_measure", None)
    if remote is not None:
        return remote(fn, args, kwargs)
    with _Recorder() as mode:
        result = fn(*args, **kwargs)
    return result, mode.numel, mode.shape, mode.operations


def plain_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    key_lengths: torch.Tensor | None = None) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v with the whole (B, T, S) score matrix: the reference the chapter measures against."""
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (B, T, S)
    T, S = scores.shape[-2:]
    keep = torch.ones(T, S, dtype=torch.bool)
    if causal:
        keep = keep.tril()
    keep = keep.expand(scores.shape)
    if key_lengths is not None:
        keep = keep & (torch.arange(S)[None, None, :] < key_lengths[:, None, None])
    return torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1) @ v


def memory_figure(lengths: list[int], plain: list[int], tiled: list[int], block: int):
    """Log-log plot of the largest tensor (in float32 bytes) against T for plain and tiled attention."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.loglog(lengths, [4 * n for n in plain], "o-", label=figure_text(N_("plain attention: the (T, T) scores")))
    ax.loglog(lengths, [4 * n for n in tiled], "s--", label=figure_text(N_("tiled, blocks of {block}"), block=block))
    ax.set_xlabel(figure_text(N_("sequence length T")))
    ax.set_ylabel(figure_text(N_("largest tensor (bytes, float32)")))
    ax.set_title(figure_text(N_("Peak memory of one attention, one head, d = 16")))
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def sinusoidal_table(length: int, d_model: int) -> torch.Tensor:
    """Chapter 8's sinusoidal positional encoding, (length, d_model): sines in even, cosines in odd columns."""
    positions = torch.arange(length, dtype=torch.float64)[:, None]
    rates = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(positions * rates), torch.cos(positions * rates)
    return table.float()


# ---- the committed comparison: RoPE vs added sinusoids, trained at context 64, scored at 64 and 128 -------------

RESULTS = Path(__file__).resolve().parent / "results" / "ch10_rope_vs_sinusoidal.json"
ROPE_CONFIG = dict(d_model=64, heads=4, layers=2, d_ff=256)


def rope_rotate(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """The course's reference RoPE for the comparison: x (B, h, T, d), adjacent pairs, positions 0..T-1."""
    T, d = x.shape[-2:]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.arange(T, dtype=torch.float64)[:, None] * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)


class PositionGPT(nn.Module):
    """A small pre-LN GPT whose positions are either sinusoids added to the embeddings (chapter 8's) or RoPE on
    every attention's queries and keys; neither has a learned table, so both run at any length."""

    def __init__(self, vocab_size: int, positions: str, d_model=64, heads=4, layers=2, d_ff=256):
        super().__init__()
        if positions not in ("rope", "sinusoidal"):
            raise ValueError(f"positions must be 'rope' or 'sinusoidal', got {positions!r}")
        self.positions, self.heads = positions, heads
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(nn.ModuleDict({"ln1": nn.LayerNorm(d_model), "qkv": nn.Linear(d_model, 3 * d_model),
                                                   "proj": nn.Linear(d_model, d_model), "ln2": nn.LayerNorm(d_model),
                                                   "ff": nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))})
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        B, T = ids.shape
        x = self.embed(ids)
        if self.positions == "sinusoidal":
            x = x + sinusoidal_table(T, x.shape[-1])
        for block in self.blocks:
            q, k, v = block["qkv"](block["ln1"](x)).view(B, T, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            if self.positions == "rope":
                q, k = rope_rotate(q), rope_rotate(k)
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + block["proj"](attended.transpose(1, 2).reshape(B, T, -1))
            x = x + block["ff"](block["ln2"](x))
        return self.head(self.ln_f(x))


def run_rope_comparison(steps: int = 1500, seed: int = 0, eval_windows_limit: int = 300, log=print) -> dict:
    """Train both position schemes with the same batches and steps at context 64 on chapter 9's Brown BPE stream
    (one thread); score dev NLL per token with windows of 64 and of 128 (the second never seen in training)."""
    from seqlab.gptlm import bpe_streams, stream_nll, windows

    torch.set_num_threads(1)
    streams = bpe_streams(("train", "dev"))
    vocab = int(max(int(s.max()) for s in streams.values())) + 1
    record = {"config": {**ROPE_CONFIG, "train_context": 64, "steps": steps, "batch_size": 32, "lr": 3e-3, "seed": seed,
                         "eval_windows": eval_windows_limit, "vocab": vocab}, "models": {}}
    for positions in ("sinusoidal", "rope"):
        torch.manual_seed(seed)
        model = PositionGPT(vocab, positions, **ROPE_CONFIG)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
        generator = torch.Generator().manual_seed(seed)
        start = time.process_time()
        for step in range(steps):
            for group in optimizer.param_groups:
                group["lr"] = 3e-3 * min(1.0, (step + 1) / 100) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
            x, y = windows(streams["train"], 64, 32, generator)
            loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            if (step + 1) % 250 == 0:
                log(f"  {positions}: step {step + 1}, training loss {loss.item():.3f}")
        seconds = time.process_time() - start
        # the same dev tokens scored at both lengths: the first 64 * eval_windows_limit + 1 tokens
        dev = streams["dev"][:64 * eval_windows_limit + 1]
        scores = {}
        for context in (64, 128):
            total, count = stream_nll(model, dev, context)
            scores[context] = total / count
        record["models"][positions] = {"dev_nll_64": round(scores[64], 4), "dev_nll_128": round(scores[128], 4),
                                       "parameters": sum(p.numel() for p in model.parameters()), "cpu_seconds": round(seconds, 1)}
        log(f"{positions}: dev NLL per token at context 64 {scores[64]:.4f}, at 128 {scores[128]:.4f} ({seconds:.0f} s of CPU)")
    return record


def rope_comparison_record() -> dict | None:
    """The committed comparison's record (``python -m seqlab.modern``), or None before it was run."""
    return json.loads(RESULTS.read_text()) if RESULTS.is_file() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Chapter 10's comparison: RoPE vs sinusoidal positions, trained at 64, scored at 128")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    record = run_rope_comparison(args.steps, args.seed)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
