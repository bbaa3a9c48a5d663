"""Which device torch computes on, and what hardware that is: one place for every script and notebook.

    python -m seqlab.wordlm --device cuda      # every training script takes --device (add_device_argument)
    device = use_device()                      # a notebook's first code cell: picks and prints the device once

The default is the GPU when torch sees one (``cuda``), else the CPU. A learner forces the CPU with
``use_device("cpu")`` in a notebook, or for everything, scripts included, with the environment variable
``SEQLAB_DEVICE=cpu``. Asking for ``cuda`` on a machine without one is a clear error, never a silent
fall-back: a figure recorded as a GPU run must have come from one.

:func:`describe` is what a training record says of the machine: the device, torch's version and the
name of the CPU or GPU. Figures differ in their last digits between a CPU and a GPU (other kernels,
another order of summation), so a record without them could not say which figures a run should match.
"""

from __future__ import annotations

import argparse
import os
import platform
from functools import lru_cache
from typing import Any

import torch

__all__ = ["ENVIRONMENT", "default_device", "resolve_device", "add_device_argument", "describe", "hardware_name",
           "cpu_name", "use_device"]

ENVIRONMENT = "SEQLAB_DEVICE"  # the environment variable that overrides the default (e.g. SEQLAB_DEVICE=cpu)
_chosen: torch.device | None = None  # set by use_device(): the device this process (a notebook's kernel) uses


def default_device() -> torch.device:
    """The device used when none is named: the one :func:`use_device` chose in this process, else
    ``$SEQLAB_DEVICE``, else ``cuda`` when torch sees a GPU, else the CPU."""
    if _chosen is not None:
        return _chosen
    named = os.environ.get(ENVIRONMENT, "").strip()
    if named:
        return resolve_device(named)
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


def resolve_device(name: str | torch.device | None = None) -> torch.device:
    """``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (None: :func:`default_device`) as a ``torch.device`` with its index.

    Raises ValueError, with what to do instead, for another kind of device, or a GPU this machine lacks."""
    if name is None:
        return default_device()
    try:
        where = torch.device(name)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"unknown device {str(name)!r}: use 'cpu', 'cuda' or 'cuda:N'") from None
    if where.type == "cpu":
        return torch.device("cpu")
    if where.type != "cuda":
        raise ValueError(f"device {str(name)!r} is not supported here: use 'cpu', 'cuda' or 'cuda:N'")
    if not torch.cuda.is_available():
        build = f"torch {torch.__version__}" + ("" if torch.version.cuda else ", a build without CUDA")
        raise ValueError(f"device {str(name)!r} asked for, but torch sees no CUDA GPU on this machine ({build}); "
                         f"use --device cpu (or leave --device out: the GPU when there is one, else the CPU)")
    index = torch.cuda.current_device() if where.index is None else where.index
    if index >= torch.cuda.device_count():
        raise ValueError(f"device {str(name)!r} asked for, but this machine has {torch.cuda.device_count()} "
                         f"CUDA GPU(s): cuda:0..cuda:{torch.cuda.device_count() - 1}")
    return torch.device("cuda", index)


def _device_type(value: str) -> torch.device:
    try:
        return resolve_device(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_device_argument(parser: argparse.ArgumentParser, default: str | None = None, help: str | None = None) -> None:
    """Add ``--device`` to a training script's parser: its value is a resolved ``torch.device``; a device
    this machine lacks ends the script with argparse's usage error (exit 2), not a traceback.

    ``default="cpu"`` for a script whose committed record is processor time on the CPU (gptlm, ssmlm)."""
    parser.add_argument("--device", type=_device_type, default=default, metavar="DEVICE",
                        help=help or "cpu, cuda or cuda:N (default: the GPU when torch sees one, else the CPU; "
                                     f"${ENVIRONMENT} overrides the default). --threads applies to CPU runs")


def cpu_name() -> str:
    """The processor's model name (Linux: /proc/cpuinfo's "model name"), else what ``platform`` knows."""
    return _cpu_name()


@lru_cache(maxsize=1)
def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.lower().startswith(("model name", "hardware", "cpu model")) and ":" in line:
                    name = line.split(":", 1)[1].strip()
                    if name:
                        return " ".join(name.split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def hardware_name(where: str | torch.device | None = None) -> str:
    """The GPU's name (``torch.cuda.get_device_name``) for a CUDA device, the CPU's model name otherwise."""
    where = resolve_device(where)
    return torch.cuda.get_device_name(where) if where.type == "cuda" else cpu_name()


def describe(where: str | torch.device | None = None) -> dict[str, Any]:
    """What a training record says of the machine: ``{"device": "cuda:0", "hardware": "NVIDIA H200",
    "torch": "2.11.0", "cuda": "12.8"}`` (on the CPU: ``"cpu"``, the CPU's model name and torch's version).
    A record keeps its own ``threads``: the scripts set that for CPU runs."""
    where = resolve_device(where)
    out: dict[str, Any] = {"device": str(where), "hardware": hardware_name(where), "torch": torch.__version__}
    if where.type == "cuda":
        out["cuda"] = torch.version.cuda
    return out


def use_device(name: str | torch.device | None = None, *, quiet: bool = False) -> torch.device:
    """For a notebook's first code cell: choose the device once, print it, and return it.

    ``use_device()`` takes the GPU when torch sees one (or ``$SEQLAB_DEVICE``); ``use_device("cpu")``
    forces the CPU, for this notebook and for every seqlab helper it calls without a device. Prints one
    line on stdout (never stderr: nbgrader zeroes a cell that writes there)."""
    global _chosen
    where = resolve_device(name) if name is not None else (_chosen or default_device())
    _chosen = where
    if not quiet:
        facts = describe(where)
        other = ('; to force the CPU: device = use_device("cpu")' if where.type == "cuda" else
                 '; a GPU is present: device = use_device("cuda")' if torch.cuda.is_available() else "")
        print(f"device: {facts['device']} ({facts['hardware']}, torch {facts['torch']}){other}")
    return where
