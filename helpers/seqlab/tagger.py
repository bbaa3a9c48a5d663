"""LSTM part-of-speech taggers of the Brown corpus (one-way and bidirectional), on chapter 2's split and tags.

Chapter 4 sets them beside chapter 2's bigram HMM. What makes the comparison fair lives here:

* the data is chapter 2's: :func:`seqlab.data.load_brown` (train and test splits, by document) with the
  Brown tags mapped by :func:`seqlab.tagsets.universal_tags` to the 12 universal tags;
* a test token is *unknown* when its lower-cased word never occurs in the training split, as in chapter 2;
* every test token is scored, one sentence at a time (no state crosses a sentence boundary).

The model reads three features per word and tags each position from its recurrent state::

    word (lower-cased, seen twice in training, else <unk>) ─ embedding 48 ┐
    last three letters (seen twice, else <unk>)            ─ embedding 16 ├─► LSTM 96 (one way or both) ─► linear ─► 12 tags
    shape (lower, Capitalised, UPPER, digit, hyphen, other) ─ embedding 4 ┘

The suffix and the shape are what an unknown word still shows (chapter 2's unknown-word classes use
the same clues). The recurrent layer is ``nn.LSTM`` for training; :meth:`Tagger.directions` hands its
weights out in torch's layout, so that a chapter's own ``run_padded`` / ``bidirectional_lstm`` can run it
(:func:`tag_sentences` takes that recurrent function as an argument). The committed checkpoints
``seqlab/checkpoints/ch04_brown_tagger_{uni,bi}.pt`` (float16 weights) and their records (``.json``: the
command, seconds, device, accuracies) come from::

    python -m seqlab.tagger --direction uni --epochs 5 --seed 0 --threads 1 --time-limit 400
    python -m seqlab.tagger --direction bi --epochs 5 --seed 0 --threads 1 --time-limit 400

(the record's ``command`` names what actually ran; ``--time-limit`` stops an epoch early and says so in
the record). ``--device cuda`` trains on a GPU (the default when torch sees one).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from seqlab.data import load_brown
from seqlab.i18n import _
from seqlab.tagsets import UNIVERSAL_TAGS, universal_tags

__all__ = ["TAGS", "SHAPES", "DIRECTIONS", "CHECKPOINTS", "Vocabulary", "Tagger", "tagging_splits", "training_vocabulary", "word_shape",
           "pad_batch", "pad_sequences", "batches", "encode_split", "tag_sentences", "accuracy", "checkpoint_record", "load_checkpoint",
           "unknown_word_class", "BigramHMM", "main"]

TAGS = tuple(UNIVERSAL_TAGS)
TAG_INDEX = {tag: i for i, tag in enumerate(TAGS)}
SHAPES = ("lower", "capitalised", "upper", "digit", "hyphen", "other")
DIRECTIONS = ("uni", "bi")
CHECKPOINTS = {d: Path(__file__).with_name("checkpoints") / f"ch04_brown_tagger_{d}.pt" for d in DIRECTIONS}
CONFIG = {"embed": 48, "suffix_embed": 16, "shape_embed": 4, "hidden": 96, "dropout": 0.3, "min_count": 2}


def tagging_splits(limit: int | None = None) -> dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]]:
    """Chapter 2's data: ``(words, universal tags)`` per sentence of the train, dev and test splits (the first
    ``limit`` of each, or all)."""
    return {split: [(s.words, universal_tags(s.tags)) for s in load_brown(split)[:limit]] for split in ("train", "dev", "test")}


def word_shape(word: str) -> int:
    """The index in SHAPES of a word's spelling class (digits first, then hyphen, then capitals)."""
    if any(c.isdigit() for c in word):
        return 3
    if "-" in word:
        return 4
    if word.isalpha():
        return 0 if word.islower() else 2 if word.isupper() and len(word) > 1 else 1 if word[0].isupper() else 5
    return 5


class Vocabulary:
    """Word and suffix ids from the training sentences: index 0 is ``<unk>``, then every lower-cased word (or
    last three letters) seen at least ``min_count`` times, sorted."""

    def __init__(self, train_words: Sequence[Sequence[str]], min_count: int = 2):
        words = Counter(w.lower() for sentence in train_words for w in sentence)
        suffixes: Counter = Counter()
        for word, count in words.items():  # the suffixes' counts, from the words' (one pass over the corpus)
            suffixes[word[-3:]] += count
        self.seen = frozenset(words)  # every training word, lower-cased: what "unknown" is measured against
        self.words = ["<unk>"] + sorted(w for w, c in words.items() if c >= min_count)
        self.suffixes = ["<unk>"] + sorted(s for s, c in suffixes.items() if c >= min_count)
        self._word_id = {w: i for i, w in enumerate(self.words)}
        self._suffix_id = {s: i for i, s in enumerate(self.suffixes)}

    def encode(self, words: Sequence[str]) -> torch.Tensor:
        """(3, n) ids: word, suffix, shape of each word."""
        return torch.tensor([[self._word_id.get(w.lower(), 0) for w in words],
                             [self._suffix_id.get(w.lower()[-3:], 0) for w in words],
                             [word_shape(w) for w in words]], dtype=torch.long).reshape(3, len(words))

    def unknown(self, words: Sequence[str]) -> torch.Tensor:
        """(n,) bool: which words never occur in the training split (lower-cased), chapter 2's definition."""
        return torch.tensor([w.lower() not in self.seen for w in words], dtype=torch.bool)


class Tagger(nn.Module):
    """Embeddings of word, suffix and shape -> an LSTM layer (one way or both) -> a linear layer to the tags."""

    def __init__(self, n_words: int, n_suffixes: int, bidirectional: bool, embed: int = 48, suffix_embed: int = 16,
                 shape_embed: int = 4, hidden: int = 96, dropout: float = 0.3, min_count: int = 2):
        super().__init__()
        self.bidirectional = bool(bidirectional)
        self.word = nn.Embedding(n_words, embed)
        self.suffix = nn.Embedding(n_suffixes, suffix_embed)
        self.shape = nn.Embedding(len(SHAPES), shape_embed)
        self.lstm = nn.LSTM(embed + suffix_embed + shape_embed, hidden, batch_first=True, bidirectional=self.bidirectional)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(hidden * (2 if self.bidirectional else 1), len(TAGS))

    def features(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, 3, T) -> the LSTM's input (B, T, D): the three embeddings side by side."""
        return self.drop(torch.cat([self.word(ids[:, 0]), self.suffix(ids[:, 1]), self.shape(ids[:, 2])], dim=2))

    def classify(self, states: torch.Tensor) -> torch.Tensor:
        """The recurrent outputs (B, T, H or 2H) -> tag scores (B, T, 12)."""
        return self.out(self.drop(states))

    def recurrent(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """torch's LSTM over the packed batch: (B, T, D) -> (B, T, H or 2H), zeros at padding."""
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        return nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.classify(self.recurrent(self.features(ids), lengths))

    def directions(self) -> list[dict[str, torch.Tensor]]:
        """The LSTM's weights in torch's layout, one dict per direction (forward first): what run_padded reads."""
        suffixes = ["_l0", "_l0_reverse"] if self.bidirectional else ["_l0"]
        return [{name: getattr(self.lstm, name + s).detach() for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
                for s in suffixes]


def pad_batch(encoded: Sequence[torch.Tensor], tags: Sequence[torch.Tensor] | None = None):
    """Sentences' (3, n) ids -> ids (B, 3, T), lengths (B,), and the tags (B, T) padded with -100 (or None)."""
    lengths = torch.tensor([e.shape[1] for e in encoded])
    ids = torch.zeros(len(encoded), 3, int(lengths.max()), dtype=torch.long)
    gold = torch.full((len(encoded), int(lengths.max())), -100, dtype=torch.long) if tags is not None else None
    for b, e in enumerate(encoded):
        ids[b, :, : e.shape[1]] = e
        if tags is not None:
            gold[b, : e.shape[1]] = tags[b]
    return ids, lengths, gold


def batches(encoded: Sequence[torch.Tensor], tags: Sequence[torch.Tensor], batch_size: int, *,
            generator: torch.Generator | None = None):
    """Batches of sentences of similar length (sorted, cut in batches, the batches shuffled when a generator is given)."""
    order = sorted(range(len(encoded)), key=lambda i: encoded[i].shape[1])
    groups = [order[i: i + batch_size] for i in range(0, len(order), batch_size)]
    if generator is not None:
        groups = [groups[i] for i in torch.randperm(len(groups), generator=generator).tolist()]
    for group in groups:
        yield pad_batch([encoded[i] for i in group], [tags[i] for i in group])


def encode_split(sentences, vocab: Vocabulary):
    """(word ids per sentence, tag ids per sentence, unknown flags per sentence)."""
    return ([vocab.encode(words) for words, _ in sentences], [torch.tensor([TAG_INDEX[t] for t in tags]) for _, tags in sentences],
            [vocab.unknown(words) for words, _ in sentences])


def tag_sentences(model: Tagger, encoded: Sequence[torch.Tensor], recurrent: Callable | None = None, batch_size: int = 256,
                  device: torch.device | str = "cpu") -> list[torch.Tensor]:
    """The tag scores (n, 12) of each sentence; ``recurrent(x (B, T, D), lengths (B,)) -> (B, T, H')`` runs the LSTM
    layer (default: the model's own ``nn.LSTM``), so that a chapter's own wrappers can stand in for it."""
    model.eval()
    recurrent = recurrent or model.recurrent
    scores: list[torch.Tensor | None] = [None] * len(encoded)
    order = sorted(range(len(encoded)), key=lambda i: encoded[i].shape[1])
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            group = order[start: start + batch_size]
            ids, lengths, _ = pad_batch([encoded[i] for i in group])
            x = model.features(ids.to(device))  # (B, T, D)
            states = recurrent(x, lengths.to(device))  # (B, T, H or 2H)
            logits = model.classify(states).cpu()  # (B, T, 12)
            for b, i in enumerate(group):
                scores[i] = logits[b, : int(lengths[b])]
    return scores


def pad_sequences(sequences: Sequence[torch.Tensor], fill) -> torch.Tensor:
    """Per-sentence tensors (n_i, ...) -> one tensor (N, max n_i, ...), ``fill`` after each sentence's end."""
    longest = max(s.shape[0] for s in sequences)
    out = torch.full((len(sequences), longest, *sequences[0].shape[1:]), fill, dtype=sequences[0].dtype)
    for i, s in enumerate(sequences):
        out[i, : s.shape[0]] = s
    return out


def accuracy(scores: Sequence[torch.Tensor], tags: Sequence[torch.Tensor], unknown: Sequence[torch.Tensor]) -> dict:
    """Token accuracy overall and on unknown words, with the counts."""
    right = torch.cat([s.argmax(-1) == t for s, t in zip(scores, tags)])
    unk = torch.cat(list(unknown))
    return {"accuracy": float(right.float().mean()), "unknown_accuracy": float(right[unk].float().mean()),
            "tokens": int(right.numel()), "unknown_tokens": int(unk.sum())}


UNKNOWN_CLASSES = ("<unk-num>", "<unk-hyphen>", "<unk-cap>", "<unk-ing>", "<unk-ed>", "<unk-ly>",
                   "<unk-noun>", "<unk-adj>", "<unk-s>", "<unk>")


def unknown_word_class(word: str) -> str:
    """Chapter 2's class of an unknown word, from its spelling (digits, hyphen, capital, suffix), tried in order."""
    lower = word.lower()
    if any(c.isdigit() for c in word):
        return "<unk-num>"
    if "-" in word:
        return "<unk-hyphen>"
    if word[:1].isupper():
        return "<unk-cap>"
    for suffixes, name in ((("ing",), "<unk-ing>"), (("ed",), "<unk-ed>"), (("ly",), "<unk-ly>"),
                           (("tion", "ment", "ness", "ity", "ism", "er", "ist"), "<unk-noun>"),
                           (("able", "ible", "al", "ous", "ive", "ful", "less", "ic", "ish"), "<unk-adj>"),
                           (("s",), "<unk-s>")):
        if lower.endswith(suffixes):
            return name
    return "<unk>"


class BigramHMM:
    """Chapter 2's supervised bigram HMM tagger, rebuilt so that chapter 4 can compare taggers token by token:
    lower-cased words seen at least ``min_count`` times, every other word replaced by its spelling class (in
    training too), pi and A smoothed with ``alpha``, B with ``beta``, Viterbi in log space. Tags are indices
    into :data:`TAGS`."""

    def __init__(self, sentences, alpha: float = 1.0, beta: float = 0.01, min_count: int = 2):
        counts = Counter(w.lower() for words, _ in sentences for w in words)
        known = sorted(w for w, c in counts.items() if c >= min_count)
        self.index = {symbol: k for k, symbol in enumerate(list(UNKNOWN_CLASSES) + known)}
        N, M = len(TAGS), len(self.index)
        first, transitions, emissions = np.zeros(N), np.zeros((N, N)), np.zeros((N, M))
        for words, tags in sentences:
            if not words:
                continue
            t, o = np.array([TAG_INDEX[tag] for tag in tags]), self.encode(words)
            first[t[0]] += 1
            np.add.at(transitions, (t[:-1], t[1:]), 1)
            np.add.at(emissions, (t, o), 1)
        self.log_pi = np.log((first + alpha) / (first.sum() + N * alpha))
        self.log_A = np.log((transitions + alpha) / (transitions.sum(1, keepdims=True) + N * alpha))
        self.log_B = np.log((emissions + beta) / (emissions.sum(1, keepdims=True) + M * beta))

    def encode(self, words) -> np.ndarray:
        return np.array([self.index.get(w.lower(), self.index.get(unknown_word_class(w), 0)) for w in words], dtype=int)

    def tag(self, words) -> torch.Tensor:
        """The most likely tag sequence of one sentence, (n,) long."""
        obs = self.encode(words)
        if len(obs) == 0:
            return torch.zeros(0, dtype=torch.long)
        delta, back = self.log_pi + self.log_B[:, obs[0]], []
        for o in obs[1:]:
            scores = delta[:, None] + self.log_A  # (from, to)
            back.append(scores.argmax(0))
            delta = scores.max(0) + self.log_B[:, o]
        path = [int(delta.argmax())]
        for pointers in reversed(back):
            path.append(int(pointers[path[-1]]))
        return torch.tensor(path[::-1], dtype=torch.long)


def checkpoint_record(direction: str = "bi") -> dict:
    """What the committed checkpoint's training run recorded (command, seconds, device, accuracies)."""
    return json.loads(_checkpoint(direction).with_suffix(".json").read_text())


def _checkpoint(direction: str) -> Path:
    if direction not in CHECKPOINTS:
        raise ValueError(_("direction must be one of {choices}, not {direction!r}").format(choices=DIRECTIONS, direction=direction))
    return CHECKPOINTS[direction]


@lru_cache(maxsize=2)
def training_vocabulary(min_count: int = CONFIG["min_count"]) -> Vocabulary:
    """The vocabulary of the whole training split (built once, then cached): what the committed taggers read."""
    return Vocabulary([s.words for s in load_brown("train")], min_count)


def load_checkpoint(direction: str = "bi", path: Path | None = None) -> tuple[Tagger, Vocabulary]:
    """The committed tagger (or the one at ``path``) in float32 and evaluation mode, with its vocabulary
    (rebuilt from the training split, checked against the checkpoint's sizes)."""
    path = path or _checkpoint(direction)
    if not path.is_file():
        raise FileNotFoundError(_("{path} is missing: reinstall seqlab, or retrain with `python -m seqlab.tagger --direction {direction}`")
                                .format(path=path, direction=direction))
    saved = torch.load(path, map_location="cpu", weights_only=True)
    vocab = saved.get("vocab") or training_vocabulary(saved["config"]["min_count"])
    if isinstance(vocab, dict):  # a checkpoint of a --max-sentences run carries its own small vocabulary
        vocab = Vocabulary([s.words for s in load_brown("train")[: vocab["max_sentences"]]], saved["config"]["min_count"])
    if (len(vocab.words), len(vocab.suffixes)) != (saved["n_words"], saved["n_suffixes"]):
        raise ValueError(_("the checkpoint has {words} words and {suffixes} suffixes, the training split gives {split_words} "
                           "and {split_suffixes}").format(words=saved["n_words"], suffixes=saved["n_suffixes"],
                                                          split_words=len(vocab.words), split_suffixes=len(vocab.suffixes)))
    model = Tagger(saved["n_words"], saved["n_suffixes"], saved["bidirectional"], **saved["config"])
    model.load_state_dict({k: v.float() for k, v in saved["state_dict"].items()})
    return model.eval(), vocab


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--direction", choices=DIRECTIONS, default="bi")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads for a CPU run")
    parser.add_argument("--time-limit", type=float, default=None, help="stop training after this many seconds")
    parser.add_argument("--out", type=Path, default=None, help="default: the committed checkpoint of --direction")
    parser.add_argument("--max-sentences", type=int, default=0, help="only the first N sentences of each split (for tests)")
    from seqlab.hardware import add_device_argument, describe, resolve_device

    add_device_argument(parser)
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    out = args.out or CHECKPOINTS[args.direction]
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    torch.manual_seed(args.seed)
    data = tagging_splits(args.max_sentences or None)
    vocab = Vocabulary([words for words, _ in data["train"]], CONFIG["min_count"])
    encoded = {split: encode_split(sentences, vocab) for split, sentences in data.items()}
    model = Tagger(len(vocab.words), len(vocab.suffixes), args.direction == "bi", **CONFIG).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(args.seed)
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
    start, history, stopped = time.perf_counter(), [], False
    for epoch in range(1, args.epochs + 1):
        model.train()
        total, steps = 0.0, 0
        for ids, lengths, gold in batches(*encoded["train"][:2], args.batch_size, generator=generator):
            optimizer.zero_grad()
            loss = loss_fn(model(ids.to(device), lengths).flatten(0, 1), gold.to(device).flatten())
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            total, steps = total + loss.item(), steps + 1
            if args.time_limit and time.perf_counter() - start > args.time_limit:
                stopped = True
                break
        dev = accuracy(tag_sentences(model, encoded["dev"][0], device=device), *encoded["dev"][1:])
        history.append({"epoch": epoch, "steps": steps, "train_loss": round(total / max(steps, 1), 4),
                        "dev_accuracy": round(dev["accuracy"], 5), "seconds": round(time.perf_counter() - start, 1)})
        print(json.dumps(history[-1]), flush=True)
        if stopped:
            break
    seconds = time.perf_counter() - start
    state = {k: v.detach().cpu().half() for k, v in model.state_dict().items()}
    saved = {"n_words": len(vocab.words), "n_suffixes": len(vocab.suffixes), "bidirectional": args.direction == "bi",
             "config": CONFIG, "state_dict": state}
    if args.max_sentences:
        saved["vocab"] = {"max_sentences": args.max_sentences}
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(saved, out)
    # the record scores what is shipped: the float16 weights, on the CPU
    shipped, _ = load_checkpoint(path=out)
    test = accuracy(tag_sentences(shipped, encoded["test"][0]), *encoded["test"][1:])
    dev = accuracy(tag_sentences(shipped, encoded["dev"][0]), *encoded["dev"][1:])
    command = (f"python -m seqlab.tagger --direction {args.direction} --epochs {args.epochs} --seed {args.seed} --lr {args.lr}"
               + (f" --threads {args.threads}" if args.threads else "") + (f" --time-limit {args.time_limit:g}" if args.time_limit else "")
               + (f" --device {device}" if args.device is not None else "")
               + (f" --max-sentences {args.max_sentences}" if args.max_sentences else ""))
    record = {"command": command, "seed": args.seed, "epochs_run": len(history), "stopped_by_time_limit": stopped,
              "seconds": round(seconds, 1), **describe(device), "threads": torch.get_num_threads(),
              "config": {**CONFIG, "direction": args.direction}, "parameters": sum(p.numel() for p in model.parameters()),
              "words": len(vocab.words), "suffixes": len(vocab.suffixes),
              "dev_accuracy": round(dev["accuracy"], 5), "test_accuracy": round(test["accuracy"], 5),
              "test_unknown_accuracy": round(test["unknown_accuracy"], 5), "test_tokens": test["tokens"],
              "test_unknown_tokens": test["unknown_tokens"], "history": history, "bytes": out.stat().st_size}
    out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: record[k] for k in ("seconds", "dev_accuracy", "test_accuracy", "test_unknown_accuracy", "bytes")}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
