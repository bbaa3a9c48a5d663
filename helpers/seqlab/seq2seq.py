"""Sequence-to-sequence plumbing shared by chapters 6, 7 and 8: vocabularies, padded batches, a
training loop, greedy and beam decoding, and the evaluation (exact match, accuracy by input
length, the comparison table). What the chapters *teach* (the encoder, the decoder step, the
loss, beam search, BLEU, attention) the learner writes in the notebook; these are the course's
reference versions of the same ideas, for the chapters that build on them.

Token ids: ``PAD = 0`` (never a real token), ``BOS = 1`` (``<s>``), ``EOS = 2`` (``</s>``), ``UNK = 3``.

**The decoding interface.** A model is decoded through two methods (any ``nn.Module`` can offer them)::

    state = model.start(src, src_lengths)       # src (B, S) long, src_lengths (B,) long
    log_probs, state = model.step(prev, state)  # prev (B,) long: the previous target token;
                                                # log_probs (B, V): log P(next token | prefix, source)

``state`` is a tensor, or a tuple/list/dict of tensors, with the batch (or the beam's hypotheses) on
dimension 0: beam search picks rows with ``state[index]``. Decoding functions that take a plain
``step(prev, state)`` callable (``greedy_search``, ``beam_search``) work with any such model through
``model.step``; ``decode`` wraps ``start`` and ``step`` for a whole list of sources.

**The training interface.** ``model(src, src_lengths, tgt_in) -> logits (B, T, V)`` with teacher
forcing (``tgt_in`` starts with ``<s>``); :func:`train` minimises the mean cross-entropy over the
real target tokens (padding ignored), with Adam and gradient clipping, a progress bar and a live
loss plot (``seqlab.train.fit``), on CUDA when there is one.

    >>> src_vocab = Vocab.build(chars(p.source) for p in train_pairs)
    >>> data = encode_pairs(train_pairs, src_vocab, tgt_vocab, chars, chars)
    >>> history = train(model, data, epochs=4, batch_size=64, lr=3e-3)
    >>> predictions = decode(model, [p.source for p in test_pairs], src_vocab, tgt_vocab, chars)
    >>> exact_match(predictions, [p.target for p in test_pairs])
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from pathlib import Path
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from seqlab.i18n import _

__all__ = ["PAD", "BOS", "EOS", "UNK", "SPECIALS", "Vocab", "Batch", "chars", "words", "make_batch", "encode_pairs",
           "batches", "masked_cross_entropy", "train", "select_state", "greedy_search", "beam_search", "Hypothesis",
           "decode", "sequence_log_prob", "exact_match", "accuracy_by_length", "GRUSeq2Seq", "to_chapter_names",
           "count_parameters", "cpu_threads", "TASKS", "task_data", "task_vocabs", "load_checkpoint", "checkpoint_record",
           "ComparisonRow", "comparison_table", "device"]

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")


@contextlib.contextmanager
def cpu_threads(n: int | None = 1):
    """Run the body with ``n`` CPU threads for torch (None: leave as is). Small recurrent models do many
    small matrix products, where extra threads cost more than they give, badly so on a busy machine."""
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def device() -> torch.device:
    """CUDA when there is a GPU, else the CPU (``seqlab.hardware.default_device``: a notebook's
    ``use_device("cpu")`` or ``$SEQLAB_DEVICE`` chooses otherwise)."""
    from seqlab.hardware import default_device

    return default_device()


def chars(text: str) -> list[str]:
    """A string as a list of characters (the dates task, and the digits of the numbers task)."""
    return list(text)


def words(text: str) -> list[str]:
    """A string split at spaces (the English words of the numbers task)."""
    return text.split()


class Vocab:
    """Tokens <-> ids, with the four special tokens first: ``<pad>`` 0, ``<s>`` 1, ``</s>`` 2, ``<unk>`` 3.

    >>> v = Vocab.build([["a", "b"], ["b"]])
    >>> v.encode(["b", "z"]), v.decode([5, 2, 4])
    ([4, 3], ['b', 'a'])  # 'b' is most frequent; decode stops at </s>
    """

    def __init__(self, tokens: Sequence[str]):
        tokens = list(tokens)
        if tuple(tokens[:4]) != SPECIALS:
            tokens = list(SPECIALS) + [t for t in tokens if t not in SPECIALS]
        if len(set(tokens)) != len(tokens):
            raise ValueError(_("the vocabulary lists a token twice"))
        self.tokens = tokens
        self.index = {t: i for i, t in enumerate(tokens)}

    @classmethod
    def build(cls, sequences: Iterable[Sequence[str]], min_count: int = 1) -> "Vocab":
        """Tokens seen at least ``min_count`` times, most frequent first (ties in code-point order)."""
        counts = Counter(t for seq in sequences for t in seq)
        kept = sorted((t for t, c in counts.items() if c >= min_count and t not in SPECIALS), key=lambda t: (-counts[t], t))
        return cls(list(SPECIALS) + kept)

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {self.tokens[4:14]}...)"

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Ids of the tokens, ``<unk>`` for unknown ones (no ``<s>``/``</s>`` added)."""
        return [self.index.get(t, UNK) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens of the ids, stopping at ``</s>``, skipping ``<s>`` and ``<pad>``."""
        out = []
        for i in ids:
            i = int(i)
            if i == EOS:
                break
            if i not in (PAD, BOS):
                out.append(self.tokens[i])
        return out


class Batch(NamedTuple):
    """A padded batch: ``src`` (B, S), ``src_lengths`` (B,), ``tgt_in`` = ``<s> y`` and ``tgt_out`` = ``y </s>``
    (B, T), ``tgt_lengths`` (B,) = len(y) + 1; padding is ``PAD`` everywhere."""

    src: torch.Tensor
    src_lengths: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    tgt_lengths: torch.Tensor

    def to(self, where) -> "Batch":
        return Batch(*(t.to(where) for t in self))


def make_batch(sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]) -> Batch:
    """Pad id sequences (without ``<s>``/``</s>``) into a :class:`Batch` (chapter 6 writes this itself)."""
    if len(sources) != len(targets) or not sources:
        raise ValueError(_("make_batch needs as many targets as sources, and at least one pair"))
    B, S, T = len(sources), max(len(s) for s in sources), max(len(t) for t in targets) + 1
    src = torch.full((B, S), PAD, dtype=torch.long)
    tgt_in = torch.full((B, T), PAD, dtype=torch.long)
    tgt_out = torch.full((B, T), PAD, dtype=torch.long)
    for b, (s, t) in enumerate(zip(sources, targets)):
        src[b, :len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        tgt_in[b, :len(t) + 1] = torch.as_tensor([BOS, *t], dtype=torch.long)
        tgt_out[b, :len(t) + 1] = torch.as_tensor([*t, EOS], dtype=torch.long)
    return Batch(src, torch.tensor([len(s) for s in sources]), tgt_in, tgt_out, torch.tensor([len(t) + 1 for t in targets]))


def encode_pairs(pairs, src_vocab: Vocab, tgt_vocab: Vocab, src_tokens: Callable[[str], list[str]],
                 tgt_tokens: Callable[[str], list[str]]) -> list[tuple[list[int], list[int]]]:
    """``(source ids, target ids)`` of each pair (objects with ``.source`` and ``.target`` strings)."""
    return [(src_vocab.encode(src_tokens(p.source)), tgt_vocab.encode(tgt_tokens(p.target))) for p in pairs]


def batches(data: Sequence[tuple[list[int], list[int]]], batch_size: int, generator: torch.Generator | None = None,
            make: Callable[[list, list], Batch] = make_batch) -> Iterator[Batch]:
    """One epoch of batches: pairs shuffled, sorted by source length within chunks of 50 batches (little
    padding), the batches in random order. Without a generator: the data's order, no shuffling."""
    n = len(data)
    if generator is None:
        order = list(range(n))
        groups = [order[i:i + batch_size] for i in range(0, n, batch_size)]
    else:
        order = torch.randperm(n, generator=generator).tolist()
        chunk = batch_size * 50
        groups = []
        for i in range(0, n, chunk):
            part = sorted(order[i:i + chunk], key=lambda j: len(data[j][0]))
            groups += [part[k:k + batch_size] for k in range(0, len(part), batch_size)]
        groups = [groups[j] for j in torch.randperm(len(groups), generator=generator).tolist()]
    for group in groups:
        yield make([data[j][0] for j in group], [data[j][1] for j in group])


def masked_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, pad_id: int = PAD) -> torch.Tensor:
    """Mean cross-entropy over the target positions that are not ``pad_id``: logits (B, T, V), targets (B, T)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=pad_id)


def train(model: nn.Module, data: Sequence[tuple[list[int], list[int]]], epochs: int, *, batch_size: int = 64,
          lr: float = 3e-3, clip: float = 1.0, seed: int = 0, loss_fn: Callable | None = None,
          make: Callable[[list, list], Batch] = make_batch, time_limit: float | None = None, plot: bool = True,
          progress: bool = True, title: str = "seq2seq: training loss (cross-entropy per target token)",
          schedule: bool = True, threads: int | None = 1) -> dict[str, Any]:
    """Train ``model(src, src_lengths, tgt_in) -> logits`` with teacher forcing, Adam and clipping.

    The learning rate follows a one-cycle schedule (warm-up over 10% of the steps, then down) when
    ``schedule`` is true and there are at least 20 steps. Runs on the device the model's parameters are on (with ``threads`` CPU threads). Returns ``seqlab.train.fit``'s
    history plus ``seconds_per_epoch``.
    """
    from seqlab.train import fit

    loss_fn = loss_fn or masked_cross_entropy
    where = next(model.parameters()).device
    shuffle = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    steps = epochs * math.ceil(len(data) / batch_size)
    scheduler = (torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.1)
                 if schedule and steps >= 20 else None)  # too few steps for a warm-up: a constant rate

    def step(batch: Batch) -> float:
        batch = batch.to(where)
        model.train()
        optimizer.zero_grad()
        loss = loss_fn(model(batch.src, batch.src_lengths, batch.tgt_in), batch.tgt_out)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        if scheduler is not None and scheduler.last_epoch < steps - 1:
            scheduler.step()
        return loss.item()

    with cpu_threads(threads if where.type == "cpu" else None):
        history = fit(step, lambda: batches(data, batch_size, shuffle, make), epochs, time_limit=time_limit,
                      plot=plot, progress=progress, title=title, threads=None)  # threads: set just above
    history["seconds_per_epoch"] = history["seconds"] / max(len(history["epoch_loss"]), 1)
    return history


def select_state(state: Any, index: torch.Tensor) -> Any:
    """Rows ``index`` (dimension 0) of a state: a tensor, or a tuple/list/dict of them (None stays None)."""
    if state is None:
        return None
    if torch.is_tensor(state):
        return state[index.to(state.device)]
    if isinstance(state, dict):
        return {k: select_state(v, index) for k, v in state.items()}
    if isinstance(state, (tuple, list)):
        return type(state)(select_state(v, index) for v in state)
    raise TypeError(_("a decoding state must be a tensor or a tuple/list/dict of tensors, got {kind}").format(
        kind=type(state).__name__))


def greedy_search(step: Callable, state: Any, batch_size: int, bos: int = BOS, eos: int = EOS,
                  max_len: int = 50) -> list[list[int]]:
    """Most likely next token at every step, for a batch; each sequence stops at its ``eos`` (not included)."""
    prev = torch.full((batch_size,), bos, dtype=torch.long)
    out: list[list[int]] = [[] for _ in range(batch_size)]
    done = torch.zeros(batch_size, dtype=torch.bool)
    for _ in range(max_len):
        log_probs, state = step(prev, state)
        prev = log_probs.argmax(dim=-1).cpu()
        for b in range(batch_size):
            if not done[b]:
                if int(prev[b]) == eos:
                    done[b] = True
                else:
                    out[b].append(int(prev[b]))
        if bool(done.all()):
            break
    return out


class Hypothesis(NamedTuple):
    """A finished beam-search output: the tokens (no ``<s>``/``</s>``), log P, and the length-normalised score."""

    tokens: list[int]
    log_prob: float
    score: float


def beam_search(step: Callable, state: Any, bos: int = BOS, eos: int = EOS, beam_width: int = 5, max_len: int = 50,
                alpha: float = 0.0) -> list[Hypothesis]:
    """Beam search for one source (``state`` has one row), chapter 6's rules.

    Each step expands every live hypothesis by every token and keeps the ``beam_width`` best expansions
    by log-probability; an expansion that ends in ``eos`` leaves the beam, finished. Search stops when no
    live hypothesis is left or after ``max_len`` tokens (live ones then finish as they are). Finished
    hypotheses are ranked by ``log P / T**alpha``, with T the number of tokens generated, ``eos`` included.
    """
    tokens: list[list[int]] = [[]]
    scores = torch.zeros(1, dtype=torch.float64)
    prev = torch.tensor([bos])
    finished: list[Hypothesis] = []
    for _ in range(max_len):
        log_probs, state = step(prev, state)
        log_probs = log_probs.detach().double().cpu()
        V = log_probs.shape[-1]
        total = (scores[:, None] + log_probs).reshape(-1)
        best = torch.topk(total, min(beam_width, total.numel())).indices
        parents, words_ = best // V, best % V
        keep, new_tokens, new_scores = [], [], []
        for i, (p, w) in enumerate(zip(parents.tolist(), words_.tolist())):
            if w == eos:
                T = len(tokens[p]) + 1
                finished.append(Hypothesis(tokens[p], float(total[best[i]]), float(total[best[i]]) / T ** alpha))
            else:
                keep.append(i)
                new_tokens.append(tokens[p] + [w])
                new_scores.append(float(total[best[i]]))
        if not keep:
            break
        index = parents[keep]
        tokens, scores = new_tokens, torch.tensor(new_scores, dtype=torch.float64)
        state, prev = select_state(state, index), words_[keep]
    else:
        for t, s in zip(tokens, scores.tolist()):
            finished.append(Hypothesis(t, s, s / max(len(t), 1) ** alpha))
    return sorted(finished, key=lambda h: -h.score)


def sequence_log_prob(step: Callable, state: Any, tokens: Sequence[int], bos: int = BOS, eos: int = EOS) -> float:
    """log P(tokens + eos | source) by teacher forcing through ``step`` (``state`` has one row)."""
    prev, total = torch.tensor([bos]), 0.0
    for token in [*tokens, eos]:
        log_probs, state = step(prev, state)
        total += float(log_probs[0, token])
        prev = torch.tensor([token])
    return total


def decode(model: nn.Module, sources: Sequence[str], src_vocab: Vocab, tgt_vocab: Vocab,
           src_tokens: Callable[[str], list[str]] = chars, *, method: str = "greedy", beam_width: int = 5,
           alpha: float = 0.0, max_len: int = 40, batch_size: int = 256, join: str = "") -> list[str]:
    """Translate source strings with ``model.start``/``model.step``: greedy in batches, or beam search one
    source at a time. Returns the output strings (tokens joined with ``join``)."""
    if method not in ("greedy", "beam"):
        raise ValueError(_("method must be 'greedy' or 'beam', got {method!r}").format(method=method))
    where = next(model.parameters()).device
    model.eval()
    out: list[str] = []
    with torch.no_grad(), cpu_threads(1 if where.type == "cpu" else None):
        step_ = (lambda prev, state: model.step(prev.to(where), state))
        size = batch_size if method == "greedy" else 1
        for i in range(0, len(sources), size):
            ids = [src_vocab.encode(src_tokens(s)) for s in sources[i:i + size]]
            src = torch.full((len(ids), max(map(len, ids))), PAD, dtype=torch.long)
            for b, row in enumerate(ids):
                src[b, :len(row)] = torch.tensor(row, dtype=torch.long)
            state = model.start(src.to(where), torch.tensor([len(r) for r in ids]).to(where))
            if method == "greedy":
                results = greedy_search(step_, state, len(ids), max_len=max_len)
            else:
                results = [beam_search(step_, state, beam_width=beam_width, max_len=max_len, alpha=alpha)[0].tokens]
            out += [join.join(tgt_vocab.decode(r)) for r in results]
    return out


def exact_match(predictions: Sequence[Any], references: Sequence[Any]) -> float:
    """The share of predictions equal to their reference."""
    if len(predictions) != len(references) or not references:
        raise ValueError(_("exact_match needs as many predictions as references, at least one"))
    return sum(p == r for p, r in zip(predictions, references)) / len(references)


def accuracy_by_length(predictions: Sequence[Any], references: Sequence[Any], lengths: Sequence[int]) -> dict[int, float]:
    """Exact match per input length: ``{length: accuracy}``, sorted by length."""
    groups: dict[int, list[bool]] = {}
    for p, r, n in zip(predictions, references, lengths):
        groups.setdefault(int(n), []).append(p == r)
    return {n: sum(g) / len(g) for n, g in sorted(groups.items())}


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


class GRUSeq2Seq(nn.Module):
    """Chapter 6's model, for the chapters that compare with it: a bidirectional GRU encoder whose two
    final states, joined and passed through ``tanh(Linear)``, start a GRU decoder (no attention).
    Offers ``forward`` (teacher forcing), ``start`` and ``step`` (see the module's interfaces).

    Its parameters are named ``encoder_embed``, ``encoder_rnn``, ``encoder_bridge``, ``decoder_embed``,
    ``decoder_cell``, ``decoder_out``: replace the first ``_`` of a name by ``.`` and you have the name in
    chapter 6's ``Seq2Seq(encoder, decoder)`` (:func:`to_chapter_names`).
    """

    def __init__(self, n_src: int, n_tgt: int, embed: int = 64, hidden: int = 256):
        super().__init__()
        self.config = {"n_src": n_src, "n_tgt": n_tgt, "embed": embed, "hidden": hidden}
        self.encoder_embed = nn.Embedding(n_src, embed, padding_idx=PAD)
        self.encoder_rnn = nn.GRU(embed, hidden, batch_first=True, bidirectional=True)
        self.encoder_bridge = nn.Linear(2 * hidden, hidden)
        self.decoder_embed = nn.Embedding(n_tgt, embed, padding_idx=PAD)
        self.decoder_cell = nn.GRUCell(embed, hidden)
        self.decoder_out = nn.Linear(hidden, n_tgt)

    def start(self, src: torch.Tensor, src_lengths: torch.Tensor) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(self.encoder_embed(src), src_lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        _, h_n = self.encoder_rnn(packed)  # (2, B, H): the last forward and the last backward state
        return torch.tanh(self.encoder_bridge(torch.cat([h_n[0], h_n[1]], dim=1)))  # (B, H)

    def step(self, prev: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state = self.decoder_cell(self.decoder_embed(prev), state)
        return torch.log_softmax(self.decoder_out(state), dim=-1), state

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        h = self.start(src, src_lengths)
        states = []
        for t in range(tgt_in.shape[1]):
            h = self.decoder_cell(self.decoder_embed(tgt_in[:, t]), h)
            states.append(h)
        return self.decoder_out(torch.stack(states, dim=1))  # (B, T, V)


def to_chapter_names(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``encoder_rnn.weight_ih_l0`` -> ``encoder.rnn.weight_ih_l0``: a GRUSeq2Seq state dict for chapter 6's model."""
    return {k.replace("_", ".", 1): v for k, v in state_dict.items()}


@dataclass
class ComparisonRow:
    """One model of the course's comparison table (chapters 6-8 add rows)."""

    model: str
    parameters: int
    seconds_per_epoch: float
    exact_match: float
    longest_accuracy: float | None = None  # accuracy on the longest inputs of the numbers task
    note: str = ""


def comparison_table(rows: Sequence[ComparisonRow]) -> str:
    """The rows as a fixed-width text table."""
    head = f"{'model':34s} {'parameters':>10s} {'s/epoch':>8s} {'exact match':>11s} {'longest':>8s}  note"
    lines = [head, "-" * len(head)]
    for r in rows:
        longest = "" if r.longest_accuracy is None else f"{r.longest_accuracy:.1%}"
        lines.append(f"{r.model:34s} {r.parameters:10,d} {r.seconds_per_epoch:8.1f} {r.exact_match:11.1%} {longest:>8s}  {r.note}")
    return "\n".join(lines)


# ---- the tasks and their checkpoints -----------------------------------------------------------

CHECKPOINTS = Path(__file__).with_name("checkpoints")
TASKS = {
    # task: (source tokens, target tokens, how outputs are joined)
    "dates": (chars, chars, ""),
    "numbers": (chars, words, " "),
}


def task_data(task: str, split: str):
    """The pairs of a task's split (``seqlab.dates``)."""
    from seqlab.dates import load_dates, load_numbers

    if task not in TASKS:
        raise ValueError(_("task must be one of {choices}, got {task!r}").format(choices=sorted(TASKS), task=task))
    return load_dates(split) if task == "dates" else load_numbers(split)


def task_vocabs(task: str) -> tuple[Vocab, Vocab]:
    """Source and target vocabularies built from the task's whole training split."""
    src_tokens, tgt_tokens, _ = TASKS[task]
    train_pairs = task_data(task, "train")
    return Vocab.build(src_tokens(p.source) for p in train_pairs), Vocab.build(tgt_tokens(p.target) for p in train_pairs)


def checkpoint_record(task: str) -> dict[str, Any]:
    """What ``python -m seqlab.seq2seq --task TASK`` wrote next to the checkpoint: command, seconds, scores."""
    return json.loads((CHECKPOINTS / f"ch06_{task}.json").read_text())


def load_checkpoint(task: str) -> tuple[GRUSeq2Seq, Vocab, Vocab]:
    """The committed chapter-6 model of a task (weights stored in float16, loaded as float32) and its vocabularies."""
    record = checkpoint_record(task)
    src_vocab, tgt_vocab = Vocab(record["src_vocab"]), Vocab(record["tgt_vocab"])
    model = GRUSeq2Seq(**record["config"])
    weights = torch.load(CHECKPOINTS / f"ch06_{task}.pt", map_location="cpu", weights_only=True)
    model.load_state_dict({k: v.float() for k, v in weights.items()})
    return model.eval(), src_vocab, tgt_vocab


def main(argv: list[str] | None = None) -> int:
    """Train chapter 6's model on a task and write ``checkpoints/ch06_TASK.pt`` and ``.json``."""
    import argparse

    from seqlab.hardware import add_device_argument, describe, resolve_device

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--task", choices=sorted(TASKS), required=True)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--embed", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads for a CPU run (default 1)")
    parser.add_argument("--train-pairs", type=int, default=0, help="only the first N training pairs (0: all; for tests)")
    parser.add_argument("--eval-pairs", type=int, default=0, help="score only the first N dev pairs (0: all; for tests)")
    parser.add_argument("--out-dir", type=Path, default=CHECKPOINTS, help="where ch06_TASK.pt and .json go")
    add_device_argument(parser)
    args = parser.parse_args(argv)
    where = resolve_device(args.device)
    src_tokens, tgt_tokens, join = TASKS[args.task]
    src_vocab, tgt_vocab = task_vocabs(args.task)
    pairs = task_data(args.task, "train")
    data = encode_pairs(pairs[:args.train_pairs or None], src_vocab, tgt_vocab, src_tokens, tgt_tokens)
    torch.manual_seed(args.seed)
    model = GRUSeq2Seq(len(src_vocab), len(tgt_vocab), args.embed, args.hidden).to(where)
    with cpu_threads(args.threads if where.type == "cpu" else None):
        history = train(model, data, args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed, plot=False,
                        threads=None)
        model.half().float()  # score exactly the weights that are stored
        dev = task_data(args.task, "dev")[:args.eval_pairs or None]
        dev_match = exact_match(decode(model, [p.source for p in dev], src_vocab, tgt_vocab, src_tokens, join=join),
                                [p.target for p in dev])  # on the model's device
    args.out_dir.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.detach().cpu().half() for k, v in model.state_dict().items()}, args.out_dir / f"ch06_{args.task}.pt")
    record = {
        "command": "python -m seqlab.seq2seq " + " ".join(sys.argv[1:] if argv is None else argv),
        "config": model.config, "epochs": args.epochs, "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed,
        "train_pairs": len(data), "seconds": round(history["seconds"], 1),
        "seconds_per_epoch": round(history["seconds_per_epoch"], 1), "epoch_loss": [round(x, 4) for x in history["epoch_loss"]],
        "dev_exact_match_greedy": round(dev_match, 4), **describe(where),
        "threads": args.threads if where.type == "cpu" else None,
        "src_vocab": src_vocab.tokens, "tgt_vocab": tgt_vocab.tokens,
    }
    (args.out_dir / f"ch06_{args.task}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out_dir / f'ch06_{args.task}.pt'}: dev exact match (greedy) {dev_match:.1%}, "
          f"{history['seconds']:.0f} s of training on {record['device']} ({record['hardware']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
