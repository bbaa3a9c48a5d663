"""The adding problem (Hochreiter & Schmidhuber, 1997): a long-range task for recurrent cells.

Each input is a sequence of ``length`` pairs ``(value, marker)``: the values are drawn from
U(0, 1), and exactly two markers are 1, one in each half of the sequence. The target is the sum
of the two marked values. A model that ignores the input and always answers the mean, 1, has
a mean squared error of Var(u_1 + u_2) = 2/12 = 1/6 (about 0.167): the *constant baseline*.
To beat it, a model must notice the first marker and keep its value for about ``length / 2``
steps or more.

``train_adding`` trains one model (torch's ``nn.RNN``, ``nn.GRU`` or ``nn.LSTM`` with a linear
read-out of the last state) with a fixed seed and a fixed number of steps, and reports its test
MSE. ``"minimal GRU"`` is the simplified GRU with an update gate only: an ``nn.GRU`` whose reset
gate is pinned open (r = 1, see ``pin_reset_open``), which leaves h' = (1 - z) n + z h with
n = tanh(W_in x + b_in + W_hn h + b_hn). Chapter 4 runs one seed in the notebook; the figures for
all seeds come from::

    python -m seqlab.adding          # writes seqlab/results/ch04_adding.json
    python -m seqlab.adding --models "GRU, update gate only"   # reruns one model, keeps the others' runs

A model trains on ``device`` (by default the GPU when torch sees one, see ``seqlab.hardware``); its batches
are drawn on the CPU from the seeded generator either way, so a GPU run sees the same data.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import torch
from torch import nn

__all__ = ["BASELINE_MSE", "RESULTS", "MODELS", "RESET_OPEN", "adding_batch", "AddingModel", "pin_reset_open",
           "set_forget_bias", "train_adding", "lstm_gates", "load_results"]

BASELINE_MSE = 1 / 6  # always answering 1: the variance of the sum of two U(0, 1) numbers
RESULTS = Path(__file__).with_name("results") / "ch04_adding.json"
MODELS = {"RNN": ("RNN", None), "GRU": ("GRU", None), "GRU, update gate only": ("minimal GRU", None),
          "LSTM": ("LSTM", None), "LSTM, forget bias 1": ("LSTM", 1.0)}
RESET_OPEN = 40.0  # a reset gate's bias that pins it open: sigmoid(40) rounds to exactly 1 in float32 and float64


def adding_batch(batch: int, length: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """x (batch, length, 2): values and markers; y (batch,): the sum of the two marked values."""
    if length < 2:
        raise ValueError(f"length must be at least 2, got {length}")
    values = torch.rand(batch, length, generator=generator)
    half = length // 2
    first = torch.randint(0, half, (batch,), generator=generator)
    second = torch.randint(half, length, (batch,), generator=generator)
    markers = torch.zeros(batch, length)
    rows = torch.arange(batch)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    return torch.stack([values, markers], dim=2), (values * markers).sum(dim=1)


def pin_reset_open(gru: nn.GRU | nn.GRUCell) -> None:
    """Turn a GRU into the simplified GRU with an update gate only: every reset gate pinned open, r = 1.

    The reset block (rows 0..H, torch's gate order r, z, n) of every weight becomes 0, of ``bias_ih``
    ``RESET_OPEN`` and of ``bias_hh`` 0, so r = sigmoid(40) = 1 exactly; a gradient hook zeroes those rows'
    gradients, so an optimiser without weight decay (Adam, SGD) leaves them there."""
    hidden = gru.hidden_size
    with torch.no_grad():
        for name, param in gru.named_parameters():
            param[:hidden] = RESET_OPEN if name.startswith("bias_ih") else 0.0

    def keep_reset_rows(grad: torch.Tensor) -> torch.Tensor:
        grad = grad.clone()
        grad[:hidden] = 0.0
        return grad

    for param in gru.parameters():
        param.register_hook(keep_reset_rows)


class AddingModel(nn.Module):
    """A recurrent layer (``"RNN"`` with tanh, ``"GRU"``, ``"minimal GRU"`` (update gate only) or ``"LSTM"``) and a
    linear read-out of its last state."""

    def __init__(self, cell: str, hidden: int = 32):
        super().__init__()
        layers = {"RNN": nn.RNN, "GRU": nn.GRU, "minimal GRU": nn.GRU, "LSTM": nn.LSTM}
        if cell not in layers:
            raise ValueError(f"cell must be one of {sorted(layers)}, got {cell!r}")
        self.cell = cell
        self.rnn = layers[cell](2, hidden, batch_first=True)
        if cell == "minimal GRU":
            pin_reset_open(self.rnn)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output, _ = self.rnn(x)  # (B, T, H)
        return self.out(output[:, -1]).squeeze(1)  # (B,)


def set_forget_bias(lstm: nn.LSTM | nn.LSTMCell, value: float) -> None:
    """Start every forget gate's total bias at ``value``: ``bias_ih`` gets ``value`` in the forget block
    (rows H..2H, torch's gate order i, f, g, o) and ``bias_hh`` gets 0 there, in every layer; the
    other gates' biases are left alone."""
    with torch.no_grad():
        for name, param in lstm.named_parameters():
            if name.startswith("bias_"):
                hidden = param.shape[0] // 4
                param[hidden:2 * hidden] = value if name.startswith("bias_ih") else 0.0


def train_adding(cell: str, seed: int = 0, *, forget_bias: float | None = None, length: int = 50, hidden: int = 32,
                 steps: int = 1500, batch: int = 64, lr: float = 1e-2, clip: float = 1.0, test_size: int = 2000,
                 progress: bool = False, device: str | torch.device | None = None) -> dict:
    """Train one model on fresh batches with Adam and clipping; return its test MSE and more.

    Returns ``{"test_mse", "seconds", "cpu_seconds", "losses" (one per step), "model"}``: the wall time,
    and the processor time of this process, which a busy machine inflates far less. The test set is fixed
    (its own seed), the same for every model and seed. Runs on ``device`` (None: ``seqlab.hardware.default_device``,
    the GPU when there is one); on the CPU, on one thread: for matrices this small, more threads only wait for
    each other (and on a busy machine, much longer). The returned model stays on that device.
    """
    from seqlab.hardware import resolve_device

    where = resolve_device(device)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train_adding(cell, seed, forget_bias, length, hidden, steps, batch, lr, clip, test_size, progress,
                             where)
    finally:
        torch.set_num_threads(threads)


def _train_adding(cell, seed, forget_bias, length, hidden, steps, batch, lr, clip, test_size, progress, where) -> dict:
    torch.manual_seed(seed)
    model = AddingModel(cell, hidden)
    if forget_bias is not None:
        if cell != "LSTM":
            raise ValueError("a forget-gate bias needs an LSTM")
        set_forget_bias(model.rnn, forget_bias)
    model.to(where)  # initialised on the CPU, as before: the same weights on every device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(1000 + seed)
    losses = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=cell if forget_bias is None else f"{cell} (forget bias {forget_bias:g})",
                   file=sys.stdout, leave=True)
    start, cpu_start = time.perf_counter(), time.process_time()
    model.train()
    for _ in range(steps):
        x, y = adding_batch(batch, length, generator)
        loss = nn.functional.mse_loss(model(x.to(where)), y.to(where))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        losses.append(loss.item())
        if bar is not None:
            bar.update(1)
            if len(losses) % 50 == 0:
                bar.set_postfix(mse=f"{sum(losses[-50:]) / 50:.4f}")
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    if bar is not None:
        bar.close()
    model.eval()
    x_test, y_test = adding_batch(test_size, length, torch.Generator().manual_seed(12345))
    with torch.no_grad():
        test_mse = nn.functional.mse_loss(model(x_test.to(where)), y_test.to(where)).item()
    return {"test_mse": test_mse, "seconds": seconds, "cpu_seconds": cpu_seconds, "losses": losses, "model": model}


def lstm_gates(lstm: nn.LSTM, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The gates of a one-layer ``nn.LSTM`` over one sequence x (T, D), step by step: each (T, H)."""
    W_ih, W_hh = lstm.weight_ih_l0.detach(), lstm.weight_hh_l0.detach()
    b = (lstm.bias_ih_l0 + lstm.bias_hh_l0).detach()
    H = W_hh.shape[1]
    h, c = torch.zeros(H), torch.zeros(H)
    out = {k: [] for k in ("input", "forget", "candidate", "output", "cell", "hidden")}
    for x_t in x:
        i, f, g, o = (W_ih @ x_t + W_hh @ h + b).chunk(4)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g
        h = o * torch.tanh(c)
        for k, v in zip(out, (i, f, g, o, c, h)):
            out[k].append(v)
    return {k: torch.stack(v) for k, v in out.items()}


def load_results() -> dict:
    """The committed figures of ``python -m seqlab.adding`` (every model, every seed)."""
    return json.loads(RESULTS.read_text())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The adding problem: RNN vs GRU vs LSTM over several seeds.")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS),
                        help="train only these models; the runs of the others are kept from --out")
    from seqlab.hardware import add_device_argument, describe, resolve_device

    add_device_argument(parser)  # a CPU run uses one thread
    args = parser.parse_args(argv)
    where = resolve_device(args.device)
    settings = {"length": args.length, "steps": args.steps}
    partial = set(args.models) != set(MODELS)  # some models anew, the others' runs kept from --out
    this_command = "python -m seqlab.adding " + shlex.join(argv if argv is not None else sys.argv[1:])
    if partial and args.out.exists():
        kept_settings = json.loads(args.out.read_text())["settings"]
        if (kept_settings["length"], kept_settings["steps"]) != (args.length, args.steps):
            parser.error(f"--models keeps the other runs of {args.out}: train with their --length "
                         f"{kept_settings['length']} and --steps {kept_settings['steps']}")
    runs = []
    for name, (cell, forget_bias) in MODELS.items():
        if name not in args.models:
            if args.out.exists():
                runs += [r for r in json.loads(args.out.read_text())["runs"] if r["model"] == name]
            continue
        for seed in range(args.seeds):
            result = train_adding(cell, seed, forget_bias=forget_bias, device=where, **settings)
            runs.append({"model": name, "seed": seed, "test_mse": round(result["test_mse"], 5),
                         "seconds": round(result["seconds"], 1),
                         "cpu_seconds": round(result["cpu_seconds"], 1)})
            if partial:
                runs[-1]["command"] = this_command.strip()
            print(json.dumps(runs[-1]), flush=True)
    command = this_command
    if partial:  # the record's command stays the one that makes every run anew; each added run names its own
        kept = json.loads(args.out.read_text()) if args.out.exists() else {}
        command = kept.get("command", "python -m seqlab.adding")
    record = {"command": command,
              "settings": {**settings, "hidden": 32, "batch": 64, "lr": 1e-2, "clip": 1.0, "test_size": 2000},
              "threads": 1, **describe(where), "baseline_mse": BASELINE_MSE,
              "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
