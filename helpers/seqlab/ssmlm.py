"""Chapter 10's selective state-space language model against chapter 9's GPT, at equal parameters and processor time.

``python -m seqlab.ssmlm --train`` reads chapter 9's committed GPT record (``results/ch09_gpt.json``, written by
``python -m seqlab.gptlm --train``), builds a small Mamba-like language model whose parameter count is within 5% of
that GPT's, trains it with :func:`seqlab.gptlm.train_for` on the same Brown BPE stream with the same windows,
batches, schedule and processor seconds (one thread), and writes ``results/ch10_ssm.json``: dev and test perplexity
per token and per word, steps, tokens seen, parameters, the command and torch's version. The notebook prints the
record beside the GPT's, whichever wins.

The model: token embeddings -> ``layers`` blocks -> LayerNorm -> a linear head. A block is pre-norm and residual,
``x + out_proj(ssm(u) * silu(z))`` with ``(u, z) = in_proj(LN(x))``; the selective state-space layer is chapter 10's
(``Delta = softplus(dt_proj(...))``, ``B_t`` and ``C_t`` computed from the input, ``h_t = exp(Delta_t A) h_{t-1} +
Delta_t B_t u_t``, ``y_t = C_t . h_t``), preceded, as in Mamba, by a causal depthwise convolution of width 4 over
``u`` and followed by a skip ``+ D u``. The recurrence runs as a loop over the window's positions or as the
chapter's Hillis-Steele scan (``--scan``); the loop is the default because on one CPU thread, with the backward
pass, it was the faster of the two here (``--benchmark`` measures both).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from seqlab.hardware import add_device_argument

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "ch10_ssm.json"
# N, the state per channel: Mamba's default is 16; on one CPU thread a training step of this model took 0.19 s
# with 16 and 0.10 s with 8 (median of 5, 2 blocks x 128, inner 304, batch 16 x 64), so 8 gets twice the updates.
STATE_SIZE = 8
CONV_WIDTH = 4    # Mamba's causal depthwise convolution


def scan_loop(decay: torch.Tensor, drive: torch.Tensor) -> torch.Tensor:
    """Every h_t = decay_t * h_{t-1} + drive_t from h_0 = 0, one position at a time; decay, drive (B, T, ...)."""
    # unbind, not decay[:, t]: the backward of each slice would write a zero tensor of the whole (B, T, ...) size
    h, states = torch.zeros_like(drive[:, 0]), []
    for decay_t, drive_t in zip(decay.unbind(1), drive.unbind(1)):
        h = decay_t * h + drive_t
        states.append(h)
    return torch.stack(states, 1)


def scan_parallel(decay: torch.Tensor, drive: torch.Tensor) -> torch.Tensor:
    """The same states by Hillis-Steele rounds over the time axis (dim 1): ceil(log2 T) rounds of whole slices."""
    a, b, shift, T = decay, drive, 1, drive.shape[1]
    while shift < T:
        a, b = (torch.cat([a[:, :shift], a[:, :-shift] * a[:, shift:]], 1),
                torch.cat([b[:, :shift], a[:, shift:] * b[:, :-shift] + b[:, shift:]], 1))
        shift *= 2
    return b


SCANS = {"loop": scan_loop, "parallel": scan_parallel}


def selective_ssm(u: torch.Tensor, delta_raw: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                  scan: str = "loop") -> torch.Tensor:
    """Chapter 10's selective_scan from a zero state, y only: u and delta_raw (b, L, D), A (D, N) negative, B and C
    (b, L, N) -> y (b, L, D), with Delta = softplus(delta_raw), h_t = exp(Delta_t A) h_{t-1} + Delta_t B_t u_t."""
    delta = F.softplus(delta_raw)                                             # (b, L, D), positive
    decay = torch.exp(delta[..., None] * A)                                   # (b, L, D, N)
    drive = delta[..., None] * B[:, :, None, :] * u[..., None]                # (b, L, D, N)
    return torch.einsum("bldn,bln->bld", SCANS[scan](decay, drive), C)


class SelectiveSSM(nn.Module):
    """Mamba's mixer without its fused kernel: (B, T, d_model) -> (B, T, d_model)."""

    def __init__(self, d_model: int, inner: int, state: int = STATE_SIZE, scan: str = "loop"):
        super().__init__()
        if scan not in SCANS:
            raise ValueError(f"scan must be one of {sorted(SCANS)}, got {scan!r}")
        self.inner, self.state, self.rank, self.scan = inner, state, math.ceil(d_model / 16), scan
        self.in_proj = nn.Linear(d_model, 2 * inner, bias=False)
        self.conv = nn.Conv1d(inner, inner, CONV_WIDTH, groups=inner, padding=CONV_WIDTH - 1)
        self.x_proj = nn.Linear(inner, self.rank + 2 * state, bias=False)
        self.dt_proj = nn.Linear(self.rank, inner)
        # Mamba's initialisation: A = -(1, 2, ..., N) per channel, steps softplus(bias) spread over [1e-3, 0.1]
        self.A_log = nn.Parameter(torch.log(torch.arange(1, state + 1, dtype=torch.float32)).repeat(inner, 1))
        self.D = nn.Parameter(torch.ones(inner))
        step = torch.exp(torch.rand(inner) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        with torch.no_grad():
            self.dt_proj.bias.copy_(step + torch.log(-torch.expm1(-step)))   # the inverse of softplus
        self.out_proj = nn.Linear(inner, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T = x.shape[1]
        u, z = self.in_proj(x).chunk(2, dim=-1)                                   # (B, T, E) each
        u = F.silu(self.conv(u.transpose(1, 2))[..., :T].transpose(1, 2))         # causal: the first T outputs
        low_rank, B, C = self.x_proj(u).split([self.rank, self.state, self.state], dim=-1)
        y = selective_ssm(u, self.dt_proj(low_rank), -torch.exp(self.A_log), B, C, self.scan) + u * self.D
        return self.out_proj(y * F.silu(z))


class SSMBlock(nn.Module):
    def __init__(self, d_model: int, inner: int, scan: str = "loop"):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.mixer = SelectiveSSM(d_model, inner, scan=scan)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mixer(self.norm(x))


class SSMLM(nn.Module):
    """ids (B, T) -> logits (B, T, V): embeddings, selective-SSM blocks, LayerNorm, head. No positions: the
    recurrence knows the order."""

    def __init__(self, vocab_size: int, d_model: int = 128, layers: int = 2, inner: int = 256, scan: str = "loop"):
        super().__init__()
        self.config = dict(d_model=d_model, layers=layers, inner=inner, state=STATE_SIZE, conv_width=CONV_WIDTH)
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(SSMBlock(d_model, inner, scan) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        for name, p in self.named_parameters():
            if name.endswith(("in_proj.weight", "x_proj.weight", "out_proj.weight", "embed.weight", "head.weight")):
                nn.init.normal_(p, std=0.02)
        nn.init.zeros_(self.head.bias)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def matched_inner(vocab_size: int, target: int, d_model: int, layers: int) -> int:
    """The inner width (a multiple of 8) whose SSMLM has the parameter count closest to ``target``: the count is
    linear in the inner width, so two sizes give the line."""
    first, second = (parameters(SSMLM(vocab_size, d_model, layers, inner)) for inner in (8, 16))
    per_channel = (second - first) / 8
    guess = max(1, round((8 + (target - first) / per_channel) / 8))
    sizes = {8 * m: parameters(SSMLM(vocab_size, d_model, layers, 8 * m)) for m in {max(1, guess - 1), guess, guess + 1}}
    return min(sizes, key=lambda inner: abs(sizes[inner] - target))


def benchmark(vocab_size: int, d_model: int, layers: int, inner: int, context: int, batch_size: int, steps: int = 5) -> dict:
    """Median processor seconds of one training step (forward, backward) with each scan, one thread."""
    out = {}
    ids = torch.randint(0, vocab_size, (batch_size, context + 1))
    for scan in SCANS:
        torch.manual_seed(0)
        model = SSMLM(vocab_size, d_model, layers, inner, scan)
        times = []
        for _ in range(steps):
            start = time.process_time()
            loss = F.cross_entropy(model(ids[:, :-1]).reshape(-1, vocab_size), ids[:, 1:].reshape(-1))
            loss.backward()
            times.append(time.process_time() - start)
        out[scan] = round(sorted(times)[len(times) // 2], 4)
    return out


def run(args) -> dict:
    from seqlab.gptlm import bpe_streams, comparison_record, stream_nll, train_for, word_perplexity

    torch.set_num_threads(1)
    gpt_record = comparison_record()
    gpt = gpt_record["comparison"]["gpt"]
    config = gpt_record["config"]
    V, context = gpt_record["vocab_size"], gpt_record["context"]
    seconds = args.seconds if args.seconds is not None else gpt_record["seconds_each"]
    d_model, layers = config["d_model"], config["layers"]
    inner = matched_inner(V, gpt["parameters"], d_model, layers)
    device = args.device
    torch.manual_seed(0)
    model = SSMLM(V, d_model, layers, inner, args.scan).to(device)
    size = parameters(model)
    print(f"selective-SSM LM: {layers} blocks of width {d_model}, inner width {inner}, state {STATE_SIZE}: "
          f"{size:,d} parameters (the GPT: {gpt['parameters']:,d}); {seconds:g} s of processor time", flush=True)
    streams = bpe_streams()
    if device.type != "cpu":
        streams = {split: ids.to(device) for split, ids in streams.items()}
    figures = train_for(model, streams["train"], seconds, context=context, batch_size=gpt_record["batch_size"],
                        lr=gpt_record["lr"])
    # scored on the CPU whatever trained it: seqlab.gptlm.stream_nll builds its windows there
    model.cpu()
    streams = {split: ids.cpu() for split, ids in streams.items()}
    record = {"command": "python -m seqlab.ssmlm --train" + (f" --scan {args.scan}" if args.scan != "loop" else "")
              + (f" --seconds {args.seconds:g}" if args.seconds is not None else "")
              + (f" --device {device}" if device.type != "cpu" else ""),
              "torch": torch.__version__, "threads": torch.get_num_threads(), "device": str(device), "scan": args.scan,
              "label": f"selective SSM, {layers} Mamba-like blocks x {d_model} (ch. 10)",
              "config": model.config, "vocab_size": V, "context": context, "batch_size": gpt_record["batch_size"],
              "lr": gpt_record["lr"], "parameters": size, "gpt_parameters": gpt["parameters"],
              "gpt_record_seconds": gpt_record["seconds_each"], **figures}
    for split in ("dev", "test"):
        nll, n = stream_nll(model, streams[split], context)
        record[f"{split}_token_perplexity"] = round(math.exp(nll / n), 3)
        record[f"{split}_word_perplexity"] = round(word_perplexity(nll, gpt_record["words"][split]), 2)
    print({k: v for k, v in record.items() if k != "config"}, flush=True)
    return record


def ssm_record() -> dict | None:
    """The committed run's record (``python -m seqlab.ssmlm --train``), or None before it was run."""
    return json.loads(RESULTS.read_text()) if RESULTS.is_file() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", action="store_true", help="train the model for the GPT record's seconds; write the record")
    parser.add_argument("--benchmark", action="store_true", help="time one training step with each scan, and stop")
    parser.add_argument("--scan", choices=sorted(SCANS), default="loop", help="how the recurrence runs (default: loop)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="processor seconds of training (default: the GPT record's seconds_each)")
    add_device_argument(parser, default="cpu", help="cpu (default, the committed run), cuda or cuda:N")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"where to write the record (default {RESULTS})")
    args = parser.parse_args(argv)
    if args.seconds is not None and args.seconds <= 0:
        parser.error("--seconds must be positive")
    if args.benchmark:
        from seqlab.gptlm import comparison_record

        torch.set_num_threads(1)
        gpt_record = comparison_record()
        config, V = gpt_record["config"], gpt_record["vocab_size"]
        inner = matched_inner(V, gpt_record["comparison"]["gpt"]["parameters"], config["d_model"], config["layers"])
        print(benchmark(V, config["d_model"], config["layers"], inner, gpt_record["context"], gpt_record["batch_size"]))
        return 0
    if not args.train:
        parser.error("nothing to do: pass --train (or --benchmark)")
    record = run(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
