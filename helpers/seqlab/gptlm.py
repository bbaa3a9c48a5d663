"""Chapter 9's GPT on Brown's byte-level BPE tokens: the given parts, and the committed comparison run.

Given to the notebook (no exercise is solved here):

* :func:`windows` -- random training windows ``(x, y)`` of a token stream, ``y`` the stream shifted by one.
* :func:`eval_windows` -- a split cut into consecutive windows so that every token after the first is
  predicted exactly once; :func:`stream_nll` sums a model's negative log-likelihood over them.
* :func:`word_perplexity` -- per-word perplexity from a split's summed NLL and its number of words.
* :func:`comparison_record` / :func:`load_gpt` -- the committed run's results and GPT weights.

The comparison run (``python -m seqlab.gptlm --train``) trains, on the same BPE token stream of Brown's training
split, with the same batches, schedule (AdamW, linear warm-up then cosine decay, clipping at 1) and the same
processor time on one thread (:data:`TRAIN_SETTINGS`: context 64, batch 16, lr 5e-3 for every model): the reference GPT (:class:`ReferenceGPT`, the parameter names of the notebook's
``GPT``), chapter 3's char-RNN (tanh RNN over embeddings) and fixed-window MLP, and chapter 4's LSTM. It also
trains the component ladder (embeddings only, one head, four heads, feed-forward and residuals, LayerNorm) for
two seeds, and records training *and* dev perplexity of each. The reference model lives here so that the
script can run without the notebook; the notebook's own ``GPT`` loads its weights.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from seqlab.hardware import add_device_argument

HERE = Path(__file__).resolve().parent
RECORD = HERE / "results" / "ch09_gpt.json"
SHORT_RECORD = HERE / "results" / "ch09_gpt_150s.json"  # the same comparison at 150 s a model (the earlier record)
SEED_RECORD = HERE / "results" / "ch09_gpt_seed1.json"  # the GPT and the LSTM again, at seed 1 (`--seed 1 --only gpt lstm`)
LONG_RECORDS = (HERE / "results" / "ch09_gpt_2400s.json",  # the GPT and the LSTM for twice the time, seeds 0 and 1
                HERE / "results" / "ch09_gpt_2400s_seed1.json")  # (`--seconds 2400 [--seed 1] --only gpt lstm`)
CHECKPOINT = HERE / "checkpoints" / "ch09_gpt.pt"
GPT_CONFIG = dict(context=64, d_model=128, heads=4, layers=2, d_ff=256, dropout=0.0)
# One setting shared by every compared model (same windows, batches and schedule). Context 64, batch 16, lr 5e-3
# suits all four at 150 s: the earlier context 128 / batch 32 / lr 3e-3 gave the GPT half the updates and
# understated the LSTM (issue 42, section 4: the lead's tuning runs). The record trains each for 1,200 s: at 150 s
# the LSTM led the GPT by 9% (SHORT_RECORD), at 600 s by 2% (a probe); at 1,200 s the GPT led from seed 0 and tied
# from seed 1 (SEED_RECORD); at 2,400 s it led from both seeds, by 1.0% on their mean (LONG_RECORDS).
TRAIN_SETTINGS = dict(batch_size=16, lr=5e-3)


# ---- data ----------------------------------------------------------------------------------------

def bpe_streams(splits=("train", "dev", "test"), vocab_size: int | None = None) -> dict[str, torch.Tensor]:
    """Brown's splits as BPE token ids (1-D int64), encoded with the committed Brown merges (seqlab.tokens).

    Each split's text is preceded by one newline, the sentence end, so that its first word is predicted too."""
    from seqlab.tokens import BROWN_VOCAB_SIZE, brown_merges, brown_text, merges_to_ranks, reference_encoding

    encoding = reference_encoding(merges_to_ranks(brown_merges(vocab_size or BROWN_VOCAB_SIZE)))
    return {s: torch.tensor(encoding.encode_ordinary("\n" + brown_text(s)), dtype=torch.long) for s in splits}


def windows(ids: torch.Tensor, context: int, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of random windows of a 1-D token stream: x = ids[i : i + context], y = ids[i + 1 : i + context + 1].

    Returns (x, y), both (batch_size, context) int64."""
    if ids.dim() != 1 or len(ids) < context + 2:
        raise ValueError(f"need a 1-D stream longer than context + 1 = {context + 1} tokens, got shape {tuple(ids.shape)}")
    starts = torch.randint(0, len(ids) - context - 1, (batch_size,), generator=generator)
    offsets = torch.arange(context)
    return ids[starts[:, None] + offsets], ids[starts[:, None] + offsets + 1]


def eval_windows(ids: torch.Tensor, context: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Consecutive windows covering a stream: every token after the first is a target exactly once.

    Returns (x, y), (N, context) int64; the last window's missing targets are -100 (ignored by the loss)."""
    n_targets = len(ids) - 1
    n = math.ceil(n_targets / context)
    x = torch.zeros(n * context, dtype=torch.long)
    y = torch.full((n * context,), -100, dtype=torch.long)
    x[:n_targets], y[:n_targets] = ids[:-1], ids[1:]
    return x.view(n, context), y.view(n, context)


def stream_nll(model, ids: torch.Tensor, context: int, batch_size: int = 64, limit: int | None = None) -> tuple[float, int]:
    """Summed NLL (nats) of a stream's tokens and their number; model(x) -> logits (B, T, V), or (logits, loss).

    `limit`: score only the first `limit` windows (a quick estimate)."""
    x, y = eval_windows(ids, context)
    if limit is not None:
        x, y = x[:limit], y[:limit]
    first = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
    if first is not None:  # a model on a GPU (the script's --device cuda)
        x, y = x.to(first.device), y.to(first.device)
    was_training = getattr(model, "training", False)
    if hasattr(model, "eval"):
        model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(x), batch_size):
            out = model(x[i:i + batch_size])
            logits = out[0] if isinstance(out, tuple) else out
            target = y[i:i + batch_size]
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), target.reshape(-1),
                                     ignore_index=-100, reduction="sum").item()
            count += int((target != -100).sum())
    if was_training:
        model.train()
    return total, count


def word_perplexity(total_nll: float, words: int) -> float:
    """exp(summed NLL of every token of a split / the split's number of words and sentence ends)."""
    return math.exp(total_nll / words)


# ---- the reference GPT and its ladder ------------------------------------------------------------------

class ReferenceBlock(nn.Module):
    """Pre-LN decoder block: x + Drop(Attn(LN1 x)), then x + Drop(FFN(LN2 x)); switches for the ladder."""

    def __init__(self, d_model, heads, d_ff, dropout, feed_forward=True, residual=True, layer_norm=True):
        super().__init__()
        self.heads, self.feed_forward, self.residual, self.use_ln = heads, feed_forward, residual, layer_norm
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ff1, self.ff2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(dropout)

    def attend(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.drop.p if self.training else 0.0)
        return self.proj(out.transpose(1, 2).reshape(B, T, D))

    def forward(self, x):
        h = self.ln1(x) if self.use_ln else x
        a = self.drop(self.attend(h))
        x = x + a if self.residual else a
        if self.feed_forward:
            h = self.ln2(x) if self.use_ln else x
            f = self.drop(self.ff2(F.gelu(self.ff1(h))))
            x = x + f if self.residual else f
        return x


class ReferenceGPT(nn.Module):
    """tok_embed + pos_embed -> blocks -> ln_f -> head; model(ids) -> (logits (B, T, V), None)."""

    def __init__(self, vocab_size, context=128, d_model=128, heads=4, layers=3, d_ff=512, dropout=0.1,
                 attention=True, feed_forward=True, residual=True, layer_norm=True):
        super().__init__()
        self.context, self.attention, self.use_ln = context, attention, layer_norm
        self.tok_embed = nn.Embedding(vocab_size, d_model)
        self.pos_embed = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList(
            ReferenceBlock(d_model, heads, d_ff, dropout, feed_forward, residual, layer_norm) for _ in range(layers if attention else 0))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        self.drop = nn.Dropout(dropout)
        self.apply(_init)

    def forward(self, ids, targets=None):
        T = ids.shape[1]
        x = self.tok_embed(ids)
        if self.attention:
            x = self.drop(x + self.pos_embed(torch.arange(T, device=ids.device)))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x) if self.use_ln else x)
        loss = None if targets is None else F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)
        return logits, loss


def _init(module):
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


# ---- chapter 3's and 4's models on the same stream ---------------------------------------------------

class RecurrentLM(nn.Module):
    """Chapter 3's char-RNN (tanh) or chapter 4's LSTM over token embeddings: ids (B, T) -> logits (B, T, V)."""

    def __init__(self, vocab_size, cell="lstm", embed=64, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        self.rnn = (nn.LSTM if cell == "lstm" else nn.RNN)(embed, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, ids):
        return self.out(self.rnn(self.embed(ids))[0])


class WindowLM(nn.Module):
    """Chapter 3's fixed-window MLP: the last `window` tokens' embeddings, concatenated -> tanh layer -> scores."""

    def __init__(self, vocab_size, window=8, embed=32, hidden=512):
        super().__init__()
        self.window, self.pad = window, vocab_size  # an extra embedding row before the window's start
        self.embed = nn.Embedding(vocab_size + 1, embed)
        self.hidden = nn.Linear(window * embed, hidden)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, ids):
        B, T = ids.shape
        padded = torch.cat([torch.full((B, self.window - 1), self.pad, dtype=ids.dtype, device=ids.device), ids], 1)
        ctx = padded.unfold(1, self.window, 1)                 # (B, T, window): tokens t-window+1 .. t
        return self.out(torch.tanh(self.hidden(self.embed(ctx).flatten(2))))


# ---- training for a fixed processor time --------------------------------------------------------------

def lr_factor(fraction: float, warmup: float = 0.05, floor: float = 0.1) -> float:
    """Linear warm-up over the first `warmup` share of the budget, then a cosine down to `floor`."""
    if fraction < warmup:
        return (fraction + 1e-3) / warmup
    progress = min(1.0, (fraction - warmup) / (1 - warmup))
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def train_for(model, train_ids, seconds, *, lr=3e-3, batch_size=32, context=128, seed=0, clip=1.0,
              weight_decay=0.01, log=print) -> dict:
    """Train on random windows for `seconds` of processor time (this process, one thread); returns its figures."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    generator = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    model.train()
    start, steps, recent = time.process_time(), 0, []
    while (used := time.process_time() - start) < seconds:
        for group in optimizer.param_groups:
            group["lr"] = lr * lr_factor(used / seconds)
        x, y = (t.to(device) for t in windows(train_ids, context, batch_size, generator))
        out = model(x)
        logits = out[0] if isinstance(out, tuple) else out
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        steps += 1
        recent = (recent + [loss.item()])[-50:]
        if steps % 200 == 0:
            log(f"    step {steps}, {used:.0f} s, training loss (last 50) {sum(recent) / len(recent):.3f}")
    return {"steps": steps, "cpu_seconds": round(time.process_time() - start, 1), "tokens_seen": steps * batch_size * context}


def _perplexities(model, streams, context, limit):
    out = {}
    for split in ("train", "dev"):
        nll, n = stream_nll(model, streams[split], context, limit=limit)
        out[split] = round(math.exp(nll / n), 3)
    return out


LADDER = [  # (key, label, ReferenceGPT switches)
    ("embeddings", "embeddings only (a neural bigram)", dict(attention=False, layer_norm=False)),
    ("one_head", "+ positions, one head of attention", dict(heads=1, layers=1, feed_forward=False, residual=False, layer_norm=False)),
    ("heads", "4 heads instead of one", dict(heads=4, layers=1, feed_forward=False, residual=False, layer_norm=False)),
    ("ffn_residual", "+ feed-forward, residuals, 2 blocks", dict(layer_norm=False)),
    ("gpt", "+ LayerNorm (pre-LN): the GPT", dict()),
]


MODELS = {  # key: (label, constructor given the vocabulary size)
    "gpt": ("GPT, 2 pre-LN blocks x 128 (ch. 9)", lambda V: ReferenceGPT(V, **GPT_CONFIG)),
    "lstm": ("LSTM 256 over embeddings (ch. 4)", lambda V: RecurrentLM(V, "lstm")),
    "rnn": ("tanh RNN 256 over embeddings (ch. 3's char-RNN)", lambda V: RecurrentLM(V, "rnn")),
    "window": ("8-token window MLP (ch. 3)", lambda V: WindowLM(V)),
}
PARTS = (*MODELS, "ladder")


def _dev_loss_by_position(model, ids, context, device) -> list[float]:
    """Mean dev loss (nats) at each position of the window: what the context buys a model."""
    x, y = eval_windows(ids, context)
    x, y = x[:-1].to(device), y[:-1].to(device)  # the last window is partly padding: left out
    by_position = torch.zeros(context, device=device)
    model.eval()
    with torch.no_grad():
        for i in range(0, len(x), 64):
            out = model(x[i:i + 64])
            logits = out[0] if isinstance(out, tuple) else out
            by_position += F.cross_entropy(logits.transpose(1, 2).float(), y[i:i + 64], reduction="none").sum(0)
    return [round(v, 4) for v in (by_position / len(x)).tolist()]


def _train_compared(key, V, streams, words, args) -> dict:
    label, make = MODELS[key]
    torch.manual_seed(args.seed)
    model = make(V).to(args.device)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"{label}: {parameters:,d} parameters", flush=True)
    figures = train_for(model, streams["train"], args.seconds, context=GPT_CONFIG["context"], seed=args.seed,
                        **TRAIN_SETTINGS)
    row = {"label": label, "parameters": parameters, **figures}
    for split in ("dev", "test"):
        nll, n = stream_nll(model, streams[split], GPT_CONFIG["context"])
        row[f"{split}_token_perplexity"] = round(math.exp(nll / n), 3)
        row[f"{split}_word_perplexity"] = round(word_perplexity(nll, words[split]), 2)
    row["dev_loss_by_position"] = _dev_loss_by_position(model, streams["dev"], GPT_CONFIG["context"], args.device)
    print(f"  {row}", flush=True)
    if key == "gpt" and args.record == RECORD:  # the notebook loads the main record's GPT only
        CHECKPOINT.parent.mkdir(exist_ok=True)
        torch.save({k: v.detach().cpu().half() for k, v in model.state_dict().items()}, CHECKPOINT)
        row["checkpoint_bytes"] = CHECKPOINT.stat().st_size
    return row


def _train_ladder(V, streams, args) -> dict:
    ladder = {}
    for key, label, switches in LADDER:
        rows = []
        for seed in (0, 1):
            torch.manual_seed(seed)
            model = ReferenceGPT(V, **{**GPT_CONFIG, **switches, "dropout": 0.0}).to(args.device)
            figures = train_for(model, streams["train"], args.ladder_seconds, context=GPT_CONFIG["context"], seed=seed,
                                log=lambda *a: None, **TRAIN_SETTINGS)
            rows.append({"seed": seed, **figures, **_perplexities(model, streams, GPT_CONFIG["context"], args.ladder_eval)})
        ladder[key] = {"label": label, "parameters": sum(p.numel() for p in model.parameters()), "runs": rows}
        print(f"{label}: {rows}", flush=True)
    return ladder


def run_comparison(args) -> int:
    """Train the parts asked for (`--only`, default all) and merge them into the record under a file lock, so that
    several processes (one per model) can share the work; a record made with other settings is started afresh."""
    import fcntl

    torch.set_num_threads(1)
    from seqlab.tokens import BROWN_VOCAB_SIZE, brown_word_count

    V = BROWN_VOCAB_SIZE
    streams = bpe_streams()  # on the CPU; batches move to the model's device
    words = {s: brown_word_count(s) for s in ("dev", "test")}
    settings = {"command": "python -m seqlab.gptlm --train" + (f" --seconds {args.seconds:g}" if args.seconds != 1200 else "")
                + (f" --ladder-seconds {args.ladder_seconds:g}" if args.ladder_seconds != 15 else "")
                + (f" --record {args.record}" if args.record != RECORD else "")
                + (f" --seed {args.seed}" if args.seed else ""),
                "torch": torch.__version__, "device": str(args.device), "threads": 1, "vocab_size": V,
                "context": GPT_CONFIG["context"], **TRAIN_SETTINGS,
                "tokens": {s: len(t) - 1 for s, t in streams.items()}, "words": words, "config": GPT_CONFIG,
                "seconds_each": args.seconds, "ladder_seconds_each": args.ladder_seconds, "eval_windows_ladder": args.ladder_eval,
                **({"seed": args.seed} if args.seed else {})}  # seed 0's records carry no seed (they predate --seed)
    record_path = args.record
    results = {}
    for part in args.only or PARTS:
        results[part] = _train_ladder(V, streams, args) if part == "ladder" else _train_compared(part, V, streams, words, args)
    record_path.parent.mkdir(parents=True, exist_ok=True)
    with open(Path(tempfile.gettempdir()) / f"seqlab-{record_path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = json.loads(record_path.read_text()) if record_path.is_file() else {}
        if any(record.get(k) != v for k, v in settings.items() if k != "command"):
            record = {}  # other settings: the old rows would not be comparable
        record = {**settings, "comparison": record.get("comparison", {}), "ladder": record.get("ladder", {})}
        for part, result in results.items():
            if part == "ladder":
                record["ladder"] = result
            else:
                record["comparison"][part] = result
        record_path.write_text(json.dumps(record, indent=1) + "\n")
    missing = [p for p in PARTS if p not in record["comparison"] and not (p == "ladder" and record["ladder"])]
    print(f"wrote {record_path}" + (f"; still missing: {', '.join(missing)}" if missing else ""))
    return 0


def comparison_record(path: Path = RECORD) -> dict:
    """The committed run's figures (`python -m seqlab.gptlm --train` writes them; SHORT_RECORD: the 150 s run)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path} is missing: `python -m seqlab.gptlm --train` writes it")
    return json.loads(Path(path).read_text())


def load_gpt(model: nn.Module) -> nn.Module:
    """Load the committed run's GPT weights (float16 on disk) into `model`, a GPT with ReferenceGPT's names."""
    state = torch.load(CHECKPOINT, map_location="cpu", weights_only=True)
    model.load_state_dict({k: v.float() for k, v in state.items()})
    return model.eval()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", action="store_true", help="train the comparison and the ladder; write the record")
    parser.add_argument("--seconds", type=float, default=1200, help="processor seconds of training for each compared model")
    parser.add_argument("--record", type=Path, default=RECORD, help=f"where the record goes (default {RECORD}; another "
                        "path, e.g. the 150 s run's, leaves the notebook's GPT checkpoint alone)")
    parser.add_argument("--ladder-seconds", type=float, default=15, help="processor seconds for each ladder run (0: none)")
    parser.add_argument("--ladder-eval", type=int, default=400, help="windows scored for the ladder's train/dev perplexity")
    parser.add_argument("--only", nargs="*", choices=PARTS, help="train only these parts (gpt lstm rnn window ladder) and "
                        "merge them into the record: run one process per part to share the work")
    parser.add_argument("--seed", type=int, default=0, help="the models' initialisation and the order of their "
                        "training windows (default 0, the committed record's); another seed needs its own --record")
    add_device_argument(parser, default="cpu", help="cpu (default; the record's times are processor time on one thread), "
                        "cuda or cuda:N (times are then wall time of the GPU run, not comparable with the CPU record)")
    args = parser.parse_args(argv)
    if not args.train:
        parser.error("nothing to do: pass --train")
    if args.seconds <= 0 or args.ladder_seconds < 0 or args.ladder_eval < 1:
        parser.error("--seconds must be positive, --ladder-seconds at least 0, --ladder-eval at least 1")
    if args.seed and args.record == RECORD:
        parser.error("--seed other than 0 writes a record of its own: pass --record PATH (the committed record is seed 0's)")
    return run_comparison(args)


if __name__ == "__main__":
    raise SystemExit(main())
