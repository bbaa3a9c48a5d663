"""Word-level recurrent language models of the Brown corpus (LSTM, and a plain tanh RNN), on chapter 1's
split and vocabulary.

Chapter 4 sets them beside chapter 1's n-gram models. Everything that makes the comparison
fair lives here, in one place:

* the vocabulary is chapter 1's (:func:`brown_vocab`): lower-cased training words seen at least
  twice, most frequent first, after ``<unk>``, ``<s>``, ``</s>``; every other word is ``<unk>``;
* each sentence is scored on its own, like the n-gram models (which restart at ``<s>``): the
  model reads ``<s> w_1 ... w_n`` and predicts ``w_1 ... w_n </s>``, so exactly the tokens chapter 1
  scores, ``len(sentence) + 1`` per sentence;
* the output is a full distribution over that vocabulary, through an adaptive softmax
  (``nn.AdaptiveLogSoftmaxWithLoss``: the 2,000 most frequent tokens in the head, rarer ones in
  two cheaper clusters). Only the *input* embedding is smaller: words outside the
  ``input_vocab`` most frequent are read as ``<unk>`` (what the model reads is its business; what
  it is scored on is not changed).

The two models differ only in the recurrent layer (``nn.LSTM`` or ``nn.RNN`` with tanh, same width),
so the comparison measures the cell and nothing else. The committed checkpoints
``seqlab/checkpoints/ch04_brown_{lstm,rnn}.pt`` (weights in float16, under 8 MB) and their records
``ch04_brown_{lstm,rnn}.json`` (command, seconds, seed, perplexities) come from::

    python -m seqlab.wordlm --cell lstm --epochs 2 --seed 0 --threads 1
    python -m seqlab.wordlm --cell rnn --epochs 2 --seed 0 --threads 1

(the record's ``command`` names the epochs actually run; each epoch rewrites the checkpoint, when the
dev perplexity improved, and the record). ``--device cuda`` trains and scores on a GPU, the default when
torch sees one; the record names the device, the CPU or GPU and torch's version, and the checkpoint holds
CPU float16 weights that load anywhere.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Iterator, Sequence

import torch
from torch import nn

from seqlab.i18n import _

__all__ = ["UNK", "BOS", "EOS", "CHECKPOINT", "brown_vocab", "brown_splits", "encode", "WordRNN",
           "batches", "evaluate", "train_epoch", "load_checkpoint", "checkpoint_record"]

UNK, BOS, EOS = "<unk>", "<s>", "</s>"
CELLS = ("lstm", "rnn")
CHECKPOINTS = {cell: Path(__file__).with_name("checkpoints") / f"ch04_brown_{cell}.pt" for cell in CELLS}
CHECKPOINT = CHECKPOINTS["lstm"]
CONFIG = {"input_vocab": 6000, "embed": 256, "hidden": 256, "cutoffs": [2000, 10000], "dropout": 0.3}


def brown_vocab(train_sentences: Sequence[Sequence[str]], min_count: int = 2) -> list[str]:
    """Chapter 1's vocabulary: ``<unk>``, ``<s>``, ``</s>``, then words seen ``min_count`` times or more,
    most frequent first (ties alphabetically)."""
    counts = Counter(w for s in train_sentences for w in s)
    kept = [w for w, c in counts.items() if c >= min_count and w not in (UNK, BOS, EOS)]
    kept.sort(key=lambda w: (-counts[w], w))
    return [UNK, BOS, EOS] + kept


def brown_splits(limit: dict[str, int | None] | None = None) -> dict[str, list[list[str]]]:
    """The lower-cased Brown sentences of each split, as chapter 1 reads them (optionally the first few)."""
    from seqlab.data import load_brown

    limit = limit or {}
    return {split: [list(s.words) for s in load_brown(split, lower=True)][: limit.get(split)]
            for split in ("train", "dev", "test")}


def encode(sentences: Sequence[Sequence[str]], vocab: Sequence[str]) -> list[torch.Tensor]:
    """Each sentence as the ids of ``<s> w_1 ... w_n </s>`` (unknown words -> ``<unk>``)."""
    index = {w: i for i, w in enumerate(vocab)}
    bos, eos, unk = index[BOS], index[EOS], index[UNK]
    return [torch.tensor([bos] + [index.get(w, unk) for w in s] + [eos], dtype=torch.long) for s in sentences]


class WordRNN(nn.Module):
    """Embedding -> dropout -> one recurrent layer (LSTM or tanh RNN) -> dropout -> adaptive softmax over
    the whole vocabulary."""

    def __init__(self, vocab_size: int, input_vocab: int = 6000, embed: int = 256, hidden: int = 256,
                 cutoffs: Sequence[int] = (2000, 10000), dropout: float = 0.3, cell: str = "lstm"):
        super().__init__()
        _check_cell(cell)
        self.vocab_size, self.input_vocab, self.cell = vocab_size, min(input_vocab, vocab_size), cell
        self.embed = nn.Embedding(self.input_vocab, embed)
        recurrent = nn.LSTM if cell == "lstm" else nn.RNN  # nn.RNN's default nonlinearity is tanh
        self.recurrent = recurrent(embed, hidden, batch_first=True)
        self.drop = nn.Dropout(dropout)
        # a vocabulary within the first cutoff (a tiny test run): one head and a one-token tail cluster
        cutoffs = [c for c in cutoffs if c < vocab_size] or [max(1, vocab_size - 1)]
        self.softmax = nn.AdaptiveLogSoftmaxWithLoss(hidden, vocab_size, cutoffs=cutoffs, div_value=4.0)

    def hidden_states(self, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """inputs (B, T) ids -> recurrent outputs (B, T, H); ids beyond the input vocabulary are read as <unk> (0)."""
        inputs = torch.where(inputs < self.input_vocab, inputs, torch.zeros_like(inputs))
        x = self.drop(self.embed(inputs))
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.recurrent(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=inputs.shape[1])
        return self.drop(out)

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, int]:
        """The summed negative log-likelihood (nats) of the real targets, and how many there are."""
        out = self.hidden_states(inputs, lengths)
        mask = torch.arange(inputs.shape[1], device=inputs.device)[None, :] < lengths.to(inputs.device)[:, None]
        result = self.softmax(out[mask], targets[mask])
        return -result.output.sum(), int(mask.sum())


def batches(encoded: Sequence[torch.Tensor], batch_size: int, *, generator: torch.Generator | None = None,
            max_len: int | None = None) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """(inputs, targets, lengths) of sentences of similar length; shuffled when a generator is given.

    ``max_len`` cuts long sentences into pieces for training (each piece starts a new state);
    evaluation never cuts."""
    pieces = []
    for ids in encoded:
        if max_len is None or len(ids) - 1 <= max_len:
            pieces.append(ids)
        else:
            pieces += [ids[i:i + max_len + 1] for i in range(0, len(ids) - 1, max_len)]
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))
    groups = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if generator is not None:
        groups = [groups[i] for i in torch.randperm(len(groups), generator=generator).tolist()]
    for group in groups:
        seqs = [pieces[i] for i in group]
        lengths = torch.tensor([len(s) - 1 for s in seqs])
        inputs = torch.zeros(len(seqs), int(lengths.max()), dtype=torch.long)
        targets = torch.zeros_like(inputs)
        for b, s in enumerate(seqs):
            inputs[b, : len(s) - 1], targets[b, : len(s) - 1] = s[:-1], s[1:]
        yield inputs, targets, lengths


def evaluate(model: WordRNN, encoded: Sequence[torch.Tensor], batch_size: int = 256,
             device: torch.device | str = "cpu", progress: bool = False) -> tuple[float, int]:
    """Perplexity over every predicted token (each word and each </s>), and the number of tokens;
    ``progress`` shows a bar over the batches (scoring Brown's test split takes seconds)."""
    from tqdm.auto import tqdm

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for inputs, targets, lengths in tqdm(batches(encoded, batch_size), total=math.ceil(len(encoded) / batch_size),
                                             desc="scoring batches", disable=not progress):
            nll, n = model(inputs.to(device), targets.to(device), lengths)
            total, count = total + float(nll), count + n
    return math.exp(total / count), count


def train_epoch(model: WordRNN, optimizer: torch.optim.Optimizer, encoded: Sequence[torch.Tensor], *,
                generator: torch.Generator, batch_size: int = 32, max_len: int = 60, clip: float = 1.0,
                device: torch.device | str = "cpu", on_step=None) -> float:
    """One pass over the training sentences; the mean loss per token (nats)."""
    model.train()
    total, count = 0.0, 0
    for inputs, targets, lengths in batches(encoded, batch_size, generator=generator, max_len=max_len):
        optimizer.zero_grad()
        nll, n = model(inputs.to(device), targets.to(device), lengths)
        (nll / n).backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        total, count = total + nll.item(), count + n
        if on_step is not None:
            on_step(nll.item() / n)
    return total / count


def checkpoint_record(cell: str = "lstm") -> dict:
    """What the committed checkpoint's training run recorded (command, seconds, seed, perplexities)."""
    return json.loads(_checkpoint(cell).with_suffix(".json").read_text())


def _checkpoint(cell: str) -> Path:
    _check_cell(cell)
    return CHECKPOINTS[cell]


def _check_cell(cell: str) -> None:
    if cell not in CELLS:
        raise ValueError(_("cell must be one of {choices}, not {cell!r}").format(choices=CELLS, cell=cell))


def load_checkpoint(vocab_size: int, cell: str = "lstm", path: Path | None = None) -> WordRNN:
    """The committed model of that cell (or the one at ``path``), in float32 and evaluation mode."""
    path = path or _checkpoint(cell)
    if not path.is_file():
        raise FileNotFoundError(_("{path} is missing: reinstall seqlab, or retrain with `python -m seqlab.wordlm --cell {cell}`")
                                .format(path=path, cell=cell))
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if saved["vocab_size"] != vocab_size:
        raise ValueError(_("the checkpoint has {count} tokens, the vocabulary {vocab_size}").format(
            count=saved["vocab_size"], vocab_size=vocab_size))
    model = WordRNN(vocab_size, **saved["config"])
    model.load_state_dict({k: v.float() for k, v in saved["state_dict"].items()})
    return model.eval()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cell", choices=CELLS, default="lstm")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads for a CPU run")
    parser.add_argument("--out", type=Path, default=None, help="default: the committed checkpoint of --cell")
    parser.add_argument("--max-sentences", type=int, default=0, help="only the first N sentences of each split (for tests)")
    from seqlab.hardware import add_device_argument, resolve_device

    add_device_argument(parser)
    args = parser.parse_args(argv)
    args.out = args.out or CHECKPOINTS[args.cell]
    config = {**CONFIG, "cell": args.cell}
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    torch.manual_seed(args.seed)
    data = brown_splits({split: args.max_sentences for split in ("train", "dev", "test")} if args.max_sentences else None)
    vocab = brown_vocab(data["train"])
    encoded = {split: encode(s, vocab) for split, s in data.items()}
    model = WordRNN(len(vocab), **config).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    schedule = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.6)
    generator = torch.Generator().manual_seed(args.seed)
    start, best, history = time.perf_counter(), math.inf, []
    for epoch in range(1, args.epochs + 1):
        loss = train_epoch(model, optimizer, encoded["train"], generator=generator, device=device)
        dev_ppl, _ = evaluate(model, encoded["dev"], device=device)
        history.append({"epoch": epoch, "train_loss": round(loss, 4), "dev_perplexity": round(dev_ppl, 2),
                        "seconds": round(time.perf_counter() - start, 1)})
        print(json.dumps(history[-1]), flush=True)
        if dev_ppl < best:
            best = dev_ppl
            state = {k: v.detach().cpu().half() for k, v in model.state_dict().items()}
            args.out.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"vocab_size": len(vocab), "config": config, "state_dict": state}, args.out)
        # The record is rewritten after every epoch, so that it always describes the checkpoint on disk;
        # the schedule does not depend on --epochs, so `--epochs k` reproduces the first k epochs exactly.
        write_record(args, config, epoch, vocab, encoded, history, time.perf_counter() - start, device)
        schedule.step()


def write_record(args, config: dict, epochs: int, vocab: list[str], encoded: dict, history: list, seconds: float, device) -> None:
    """The record of the checkpoint on disk, scored on ``device``, the device it trained on."""
    from seqlab.hardware import describe

    # what is shipped: float16 weights, best dev epoch so far
    model = load_checkpoint(len(vocab), path=args.out).to(device)
    test_ppl, n_test = evaluate(model, encoded["test"], device=device)
    dev_ppl, _ = evaluate(model, encoded["dev"], device=device)
    record = {
        "command": f"python -m seqlab.wordlm --cell {args.cell} --epochs {epochs} --seed {args.seed} --lr {args.lr}"
                   + (f" --threads {args.threads}" if args.threads else "")
                   + (f" --device {device}" if getattr(args, "device", None) is not None else "")
                   + (f" --max-sentences {args.max_sentences}" if getattr(args, "max_sentences", 0) else ""),
        "seed": args.seed, "epochs": epochs, "seconds": round(seconds, 1), **describe(device),
        "threads": torch.get_num_threads(), "config": config,
        "parameters": sum(p.numel() for p in model.parameters()), "vocab_size": len(vocab),
        "dev_perplexity": round(dev_ppl, 2), "test_perplexity": round(test_ppl, 2), "test_tokens": n_test,
        "history": history, "bytes": args.out.stat().st_size,
    }
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: record[k] for k in ("epochs", "seconds", "dev_perplexity", "test_perplexity", "bytes")}), flush=True)


if __name__ == "__main__":
    main()
