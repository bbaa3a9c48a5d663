"""Which of the surname classifier's tricks matter: a seeded ablation for chapter 3, §9.

Chapter 3's classifier reads ``^name$`` through a learned embedding, dropout and a plain RNN, and is
trained with label smoothing. This module trains that model (a reference with one switch per trick)
with the notebook's exact settings, and each variant with one trick removed, for several seeds:

    python -m seqlab.name_ablation --threads 1     # writes seqlab/results/ch03_ablation.json

Seed 0 is the notebook's own run (``torch.manual_seed(0)`` before the model, a batch shuffler seeded
0); seed ``s`` seeds both with ``s``. One run takes about 40 s on one CPU thread. The notebook
loads the committed file with :func:`load_results` and prints :func:`summary`.

``--device cuda`` trains and scores on a GPU (the default when torch sees one); the record names the device,
the CPU or GPU and torch's version. A GPU run's accuracies differ from a CPU run's in the last names: the
committed record, which the notebook's CPU run is checked against, is a CPU run.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from seqlab.names import Name, load_names, surname_origins

__all__ = ["ALPHABET", "SYMBOLS", "SETTINGS", "VARIANTS", "RESULTS", "ReferenceClassifier", "encode",
           "train_variant", "run_ablation", "load_results", "summary"]

ALPHABET = "abcdefghijklmnopqrstuvwxyz '-"  # the notebook's ALPHABET
SYMBOLS = ALPHABET + "^$"  # then the start and end symbols: V = 31
RESULTS = Path(__file__).with_name("results") / "ch03_ablation.json"
# The notebook's training settings (§9, "Training").
SETTINGS = {"embed_size": 64, "hidden_size": 256, "dropout": 0.3, "label_smoothing": 0.1, "epochs": 20,
            "batch_size": 64, "lr": 3e-3, "pct_start": 0.15, "max_norm": 1.0}
# One trick removed at a time: the switches of train_variant that differ from the full model. Without the
# embedding, dropout on the one-hot input deletes whole letters, a different regulariser; the second
# one-hot variant keeps dropout on the final state only. The third also multiplies the one-hot vectors
# by 8, about the length of an embedded vector at initialisation (nn.Embedding draws N(0, 1): sqrt(64)),
# to see how much of the embedding's gain is the scale of the RNN's input.
VARIANTS = {
    "full": {},
    "one-hot input": {"embedding": False},
    "one-hot input, dropout on the state only": {"embedding": False, "input_dropout": False},
    "one-hot input ×8, dropout on the state only": {"embedding": False, "input_dropout": False, "input_scale": 8.0},
    "no dropout": {"dropout": 0.0},
    "no label smoothing": {"label_smoothing": 0.0},
    "no ^ and $": {"boundaries": False},
}


class ReferenceClassifier(nn.Module):
    """The notebook's ``NameClassifier`` with switches: ``embedding=False`` feeds the one-hot
    vectors (V = ``n_symbols``), times ``input_scale``, straight into the RNN; ``input_dropout=False``
    keeps dropout off the RNN's input. By default dropout acts where it acts in the notebook, on the RNN's input vectors
    and on each name's last state (on a one-hot input it deletes whole letters)."""

    def __init__(self, n_symbols: int, embed_size: int, hidden_size: int, n_classes: int, dropout: float = 0.0,
                 embedding: bool = True, input_dropout: bool = True, input_scale: float = 1.0):
        super().__init__()
        if embedding and input_scale != 1.0:
            raise ValueError("input_scale applies to one-hot input only (embedding=False)")
        self.input_scale = input_scale
        self.n_symbols = n_symbols
        self.input_dropout = input_dropout
        self.embed = nn.Embedding(n_symbols, embed_size) if embedding else None
        self.rnn = nn.RNN(embed_size if embedding else n_symbols, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden_size, n_classes)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) if self.embed is not None else \
            self.input_scale * F.one_hot(ids, self.n_symbols).float()  # (B, T, D or V)
        x = self.dropout(x) if self.input_dropout else x
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, h_n = self.rnn(packed)  # (1, B, H): each name's state after its last real symbol
        return self.out(self.dropout(h_n[0]))  # (B, K)


def encode(names: list[Name], classes: list[str], boundaries: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Symbol indices (B, T) of ``^name$`` (or ``name``) padded with 0, lengths (B,), class ids (B,)."""
    texts = [("^" + n.text.lower() + "$") if boundaries else n.text.lower() for n in names]
    unknown = sorted({ch for text in texts for ch in text} - set(SYMBOLS))
    if unknown:
        raise ValueError(f"symbols outside SYMBOLS: {unknown}")
    lengths = torch.tensor([len(t) for t in texts])
    ids = torch.zeros(len(texts), int(lengths.max()), dtype=torch.long)
    for b, text in enumerate(texts):
        ids[b, :len(text)] = torch.tensor([SYMBOLS.index(ch) for ch in text])
    return ids, lengths, torch.tensor([classes.index(n.label) for n in names])


def _clip(parameters: list[torch.Tensor], max_norm: float) -> None:
    """Clipping by global norm, computed as chapter 3 computes it (in float64)."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = math.sqrt(sum(float((g.detach().double() ** 2).sum()) for g in grads))
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / total)


def train_variant(seed: int = 0, *, embedding: bool = True, input_dropout: bool = True, input_scale: float = 1.0,
                  dropout: float = SETTINGS["dropout"],
                  label_smoothing: float = SETTINGS["label_smoothing"], boundaries: bool = True,
                  epochs: int = SETTINGS["epochs"], n_train: int | None = None, threads: int | None = 1,
                  device: str | torch.device | None = None) -> dict:
    """Train one classifier as the notebook does (or with a trick switched off); return its accuracies.

    ``n_train`` keeps only the first names of the notebook's shuffled training list (for quick tests).
    ``device``: where it trains and is scored (None: ``seqlab.hardware.default_device``); ``threads`` applies
    to the CPU.
    Returns ``{"dev_accuracy", "test_accuracy", "final_loss", "parameters", "seconds", "cpu_seconds"}``.
    """
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be at least 1 (or None), got {threads}")
    from seqlab.hardware import resolve_device

    where = resolve_device(device)
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _train(seed, embedding, input_dropout, input_scale, dropout, label_smoothing, boundaries, epochs, n_train,
                      where)
    finally:
        torch.set_num_threads(before)


def _train(seed, embedding, input_dropout, input_scale, dropout, label_smoothing, boundaries, epochs, n_train,
           where=torch.device("cpu")) -> dict:
    classes = surname_origins()
    train = load_names("surnames", "train")
    train = [train[i] for i in np.random.default_rng(0).permutation(len(train))][:n_train]  # the notebook's order
    ids, lengths, labels = encode(train, classes, boundaries)
    dev, test = (encode(load_names("surnames", split), classes, boundaries) for split in ("dev", "test"))
    batch_size = SETTINGS["batch_size"]
    shuffle = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = ReferenceClassifier(len(SYMBOLS), SETTINGS["embed_size"], SETTINGS["hidden_size"], len(classes),
                                dropout=dropout, embedding=embedding, input_dropout=input_dropout,
                                input_scale=input_scale).to(where)  # initialised on the CPU: the same weights anywhere
    optimizer = torch.optim.Adam(model.parameters(), lr=SETTINGS["lr"])
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=SETTINGS["lr"], pct_start=SETTINGS["pct_start"],
                                                   total_steps=epochs * math.ceil(len(labels) / batch_size))
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(epochs):
        order = torch.randperm(len(labels), generator=shuffle)
        order = order[torch.argsort(lengths[order], stable=True)]  # by length, ties in random order
        batches = list(order.split(batch_size))
        total = 0.0
        for j in torch.randperm(len(batches), generator=shuffle).tolist():
            idx = batches[j]
            model.train()
            optimizer.zero_grad()
            loss = F.cross_entropy(model(ids[idx, :int(lengths[idx].max())].to(where), lengths[idx]),
                                   labels[idx].to(where), label_smoothing=label_smoothing)
            loss.backward()
            _clip(list(model.parameters()), SETTINGS["max_norm"])
            optimizer.step()
            schedule.step()
            total += loss.item()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    model.eval()
    with torch.no_grad():
        accuracy = {name: float((model(x.to(where), n).argmax(dim=1).cpu() == y).float().mean()) for name, (x, n, y) in
                    (("dev_accuracy", dev), ("test_accuracy", test))}
    return {**accuracy, "final_loss": total / len(batches), "parameters": sum(p.numel() for p in model.parameters()),
            "seconds": seconds, "cpu_seconds": cpu_seconds}


def run_ablation(seeds: int = 3, *, epochs: int = SETTINGS["epochs"], n_train: int | None = None,
                 variants: list[str] | None = None, threads: int = 1, command: str = "", log=None,
                 device: str | torch.device | None = None) -> dict:
    """Every variant (default: all of ``VARIANTS``) with seeds 0..seeds-1, on ``device``; the record that ``main``
    writes."""
    from seqlab.hardware import describe, resolve_device

    where = resolve_device(device)
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}")
    chosen = list(VARIANTS) if variants is None else variants
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    runs = []
    for variant in chosen:
        for seed in range(seeds):
            result = train_variant(seed, epochs=epochs, n_train=n_train, threads=threads, device=where,
                                   **VARIANTS[variant])
            runs.append({"variant": variant, "seed": seed, "dev_accuracy": round(result["dev_accuracy"], 4),
                         "test_accuracy": round(result["test_accuracy"], 4), "parameters": result["parameters"],
                         "seconds": round(result["seconds"], 1), "cpu_seconds": round(result["cpu_seconds"], 1)})
            if log is not None:
                print(json.dumps(runs[-1]), file=log, flush=True)
    return {"command": command, "settings": {**SETTINGS, "epochs": epochs, "n_train": n_train},
            "variants": {v: VARIANTS[v] for v in chosen}, "seeds": list(range(seeds)), "threads": threads,
            **describe(where), "runs": runs}


def load_results(path: Path = RESULTS) -> dict:
    """The committed record of ``python -m seqlab.name_ablation``."""
    return json.loads(Path(path).read_text())


def summary(record: dict) -> dict[str, dict[str, float]]:
    """Per variant, in the record's order: the number of seeds, the mean seconds of one run, and for
    ``dev`` and ``test``: the mean, min and max accuracy over the seeds (``dev_mean``, ...); then, against
    the full model with the same seed (the same initial weights and batches), the mean gap
    ``full - variant`` (``dev_gap``) and the number of seeds where the full model is ahead (``dev_wins``)."""
    by_variant = {v: {r["seed"]: r for r in record["runs"] if r["variant"] == v} for v in record["variants"]}
    full = by_variant.get("full", {})
    out: dict[str, dict[str, float]] = {}
    for variant, runs in by_variant.items():
        if not runs:
            continue
        row: dict[str, float] = {"seeds": len(runs), "seconds": round(statistics.mean(r["seconds"] for r in runs.values()), 1)}
        for split in ("dev", "test"):
            values = [r[f"{split}_accuracy"] for r in runs.values()]
            row.update({f"{split}_mean": statistics.mean(values), f"{split}_min": min(values), f"{split}_max": max(values)})
            paired = [(full[s][f"{split}_accuracy"], r[f"{split}_accuracy"]) for s, r in runs.items() if s in full]
            if variant != "full" and paired:
                row[f"{split}_gap"] = statistics.mean(f - v for f, v in paired)
                row[f"{split}_wins"] = sum(f > v for f, v in paired)
        out[variant] = row
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Chapter 3's surname classifier with one trick removed at a time.")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 for every variant (default 3)")
    parser.add_argument("--epochs", type=int, default=SETTINGS["epochs"])
    parser.add_argument("--n-train", type=int, default=None, help="only the first N training names (for tests)")
    parser.add_argument("--variants", nargs="+", default=None, choices=list(VARIANTS), metavar="VARIANT")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    from seqlab.hardware import add_device_argument

    add_device_argument(parser)
    args = parser.parse_args(argv)
    command = "python -m seqlab.name_ablation " + " ".join(argv if argv is not None else sys.argv[1:])
    record = run_ablation(args.seeds, epochs=args.epochs, n_train=args.n_train, variants=args.variants,
                          threads=args.threads, command=command.strip(), log=sys.stdout, device=args.device)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    for variant, row in summary(record).items():
        print(f"{variant:44s} dev {row['dev_mean']:.1%} [{row['dev_min']:.1%}, {row['dev_max']:.1%}]  "
              f"test {row['test_mean']:.1%} [{row['test_min']:.1%}, {row['test_max']:.1%}]  {row['seconds']:.0f} s per run")

if __name__ == "__main__":
    main()
