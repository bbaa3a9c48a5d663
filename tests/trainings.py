"""Every seqlab script that trains a checkpoint or a record, with its smallest options (a few seconds on a
CPU): tests/test_seqlab_device.py runs them with ``--device cpu``, tests/test_gpu.py with ``--device cuda``."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch


@dataclass(frozen=True)
class Training:
    name: str
    module: str  # python -m seqlab.<module>
    argv: Callable[[Path], list[str]]  # the tiny run's arguments (without --device), writing under a folder
    record: Callable[[Path], Path]  # the JSON record it writes there
    checkpoint: Callable[[Path], Path | None] = lambda out: None  # the weights it writes there, if any


TRAININGS = [
    Training("seq2seq", "seq2seq",
             lambda out: ["--task", "dates", "--epochs", "1", "--hidden", "16", "--embed", "8", "--train-pairs", "128",
                          "--eval-pairs", "32", "--out-dir", str(out)],
             lambda out: out / "ch06_dates.json", lambda out: out / "ch06_dates.pt"),
    Training("attention", "attention",
             lambda out: ["--task", "numbers", "--epochs", "1", "--hidden", "16", "--embed", "8", "--attn", "8",
                          "--train-pairs", "128", "--eval-pairs", "32", "--out-dir", str(out)],
             lambda out: out / "ch07_numbers.json", lambda out: out / "ch07_numbers.pt"),
    Training("transformer-seq2seq", "transformer",
             lambda out: ["seq2seq", "--task", "dates", "--epochs", "1", "--d-model", "16", "--heads", "2", "--layers", "1",
                          "--d-ff", "32", "--train-pairs", "128", "--eval-pairs", "32", "--out-dir", str(out)],
             lambda out: out / "ch08_dates.json", lambda out: out / "ch08_dates.pt"),
    Training("transformer-lm", "transformer",
             lambda out: ["lm", "--epochs", "1", "--max-sentences", "48", "--out", str(out / "lm.pt"),
                          "--state", str(out / "lm.state.pt")],
             lambda out: out / "lm.json", lambda out: out / "lm.pt"),
    Training("wordlm", "wordlm",
             lambda out: ["--cell", "rnn", "--epochs", "1", "--max-sentences", "48", "--threads", "1",
                          "--out", str(out / "w.pt")],
             lambda out: out / "w.json", lambda out: out / "w.pt"),
    Training("tagger", "tagger",
             lambda out: ["--direction", "bi", "--epochs", "1", "--max-sentences", "48", "--threads", "1",
                          "--out", str(out / "t.pt")],
             lambda out: out / "t.json", lambda out: out / "t.pt"),
    Training("adding", "adding",
             lambda out: ["--seeds", "1", "--steps", "3", "--length", "8", "--out", str(out / "adding.json")],
             lambda out: out / "adding.json"),
    Training("name_ablation", "name_ablation",
             lambda out: ["--seeds", "1", "--epochs", "1", "--n-train", "64", "--variants", "full",
                          "--out", str(out / "ablation.json")],
             lambda out: out / "ablation.json"),
]
BY_NAME = {t.name: t for t in TRAININGS}


def run_in_process(training: Training, out: Path, device: str) -> dict:
    """``python -m seqlab.<module> <tiny argv> --device DEVICE`` in this process (the datasets stay loaded
    between runs); torch's thread count is restored after it. Returns the record it wrote."""
    module = importlib.import_module(f"seqlab.{training.module}")
    threads = torch.get_num_threads()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            module.main([*training.argv(out), "--device", device])
    finally:
        torch.set_num_threads(threads)
    return json.loads(training.record(out).read_text())
