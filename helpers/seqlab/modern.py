"""Given code for chapter 10 (beyond the 2017 Transformer): what a function computes with, and the figures.

``measure`` runs a function under a torch dispatch mode and reports the largest tensor that any torch operation
inside it produced (its number of elements and shape) and how many torch operations it ran: the checks that a
tiled attention never holds a T x T matrix and that a parallel scan takes about log2(T) steps, not T. It counts
what torch operations return, views included (a view of an input is no larger than the input), so it reads the
code's shapes, not the allocator; on CPU that is what the memory figure needs.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


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
    ax.loglog(lengths, [4 * n for n in plain], "o-", label="plain attention: the (T, T) scores")
    ax.loglog(lengths, [4 * n for n in tiled], "s--", label=f"tiled, blocks of {block}")
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("largest tensor (bytes, float32)")
    ax.set_title("Peak memory of one attention, one head, d = 16")
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
