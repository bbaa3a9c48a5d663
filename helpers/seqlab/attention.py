"""Chapter 7's helpers: the course's attention seq2seq model (a reference for the chapter's own), the
script that trains its checkpoints, alignment heatmaps and the attention explorer.

The model is the one chapter 7 builds: a bidirectional GRU encoder that keeps its states for every
source position, and a GRU decoder that, at each step, scores those states against its *previous*
state with additive (Bahdanau) attention, takes their weighted mean (the context) and feeds it into
its recurrence and its output layer. Parameter names are the chapter's, so a checkpoint loads into
the learner's ``AttentionSeq2Seq`` unchanged::

    encoder_embed, encoder_rnn, encoder_bridge,
    decoder.embed, decoder.attn_query, decoder.attn_key, decoder.attn_v, decoder.cell, decoder.out

Decoding uses chapter 6's interface (``start``/``step``, see ``seqlab.seq2seq``). The state is a dict
``{"s": (B, H), "enc": (B, S, 2H), "keys": (B, S, A), "mask": (B, S), "alpha": (B, S)}``; ``alpha``
holds the attention weights of the step just taken (heatmaps read it).

Train and score the checkpoints (then write the course's comparison table as JSON)::

    python -m seqlab.attention --task dates --epochs 1 --train-pairs 20000
    python -m seqlab.attention --task numbers --epochs 3
    python -m seqlab.attention --comparison
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from seqlab.i18n import N_, _, figure_text

from seqlab.seq2seq import (BOS, EOS, PAD, TASKS, ComparisonRow, Vocab, accuracy_by_length, chars, count_parameters,
                            decode, encode_pairs, exact_match, task_data, task_vocabs, train)

__all__ = ["AttentionDecoder", "AttentionSeq2Seq", "masked_softmax", "load_checkpoint", "checkpoint_record",
           "alignment", "teacher_forced_weights", "plot_alignment", "attention_explorer", "comparison_rows", "time_epoch", "load_comparison", "COMPARISON"]

CHECKPOINTS = Path(__file__).with_name("checkpoints")
RESULTS = Path(__file__).with_name("results")
COMPARISON = RESULTS / "ch07_comparison.json"


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax over ``dim`` where ``mask`` is True; exactly 0 elsewhere; a row with nothing to attend to is all 0."""
    mask = mask.bool()
    weights = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=dim)
    return weights * mask


class AttentionDecoder(nn.Module):
    """One step: previous token, previous state s_{t-1}, the encoder's states -> logits, s_t, weights."""

    def __init__(self, n_tgt: int, embed_size: int, hidden_size: int, enc_size: int, attn_size: int):
        super().__init__()
        self.embed = nn.Embedding(n_tgt, embed_size, padding_idx=PAD)
        self.attn_query = nn.Linear(hidden_size, attn_size, bias=False)
        self.attn_key = nn.Linear(enc_size, attn_size, bias=False)
        self.attn_v = nn.Linear(attn_size, 1, bias=False)
        self.cell = nn.GRUCell(embed_size + enc_size, hidden_size)
        self.out = nn.Linear(hidden_size + enc_size, n_tgt)

    def forward(self, prev, state, enc, mask, keys=None):
        keys = self.attn_key(enc) if keys is None else keys  # (B, S, A)
        scores = self.attn_v(torch.tanh(keys + self.attn_query(state)[:, None, :]))[..., 0]  # (B, S): e_tj from s_{t-1}
        weights = masked_softmax(scores, mask, dim=-1)  # (B, S)
        context = torch.einsum("bs,bsd->bd", weights, enc)  # (B, 2H)
        new = self.cell(torch.cat([self.embed(prev), context], dim=1), state)  # (B, H)
        return self.out(torch.cat([new, context], dim=1)), new, weights


class AttentionSeq2Seq(nn.Module):
    """Bidirectional GRU encoder (all states kept) + attention decoder; chapter 6's interfaces."""

    def __init__(self, n_src: int, n_tgt: int, embed_size: int = 32, hidden_size: int = 128, attn_size: int = 64):
        super().__init__()
        self.config = {"n_src": n_src, "n_tgt": n_tgt, "embed_size": embed_size, "hidden_size": hidden_size,
                       "attn_size": attn_size}
        self.encoder_embed = nn.Embedding(n_src, embed_size, padding_idx=PAD)
        self.encoder_rnn = nn.GRU(embed_size, hidden_size, batch_first=True, bidirectional=True)
        self.encoder_bridge = nn.Linear(2 * hidden_size, hidden_size)
        self.decoder = AttentionDecoder(n_tgt, embed_size, hidden_size, 2 * hidden_size, attn_size)

    def encode(self, src, src_lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.encoder_embed(src), src_lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        out, h_n = self.encoder_rnn(packed)
        enc, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])  # (B, S, 2H)
        mask = src != PAD  # (B, S)
        s0 = torch.tanh(self.encoder_bridge(torch.cat([h_n[0], h_n[1]], dim=1)))  # (B, H)
        return enc, mask, s0

    def forward(self, src, src_lengths, tgt_in):
        enc, mask, s = self.encode(src, src_lengths)
        keys = self.decoder.attn_key(enc)
        steps = []
        for t in range(tgt_in.shape[1]):
            logits, s, _ = self.decoder(tgt_in[:, t], s, enc, mask, keys)
            steps.append(logits)
        return torch.stack(steps, dim=1)  # (B, T, V)

    def start(self, src, src_lengths):
        enc, mask, s0 = self.encode(src, src_lengths)
        return {"s": s0, "enc": enc, "keys": self.decoder.attn_key(enc), "mask": mask,
                "alpha": torch.zeros(mask.shape, device=enc.device)}

    def step(self, prev, state):
        logits, s, alpha = self.decoder(prev, state["s"], state["enc"], state["mask"], state["keys"])
        return torch.log_softmax(logits, dim=-1), {**state, "s": s, "alpha": alpha}


# ---- checkpoints ---------------------------------------------------------------------------------

def checkpoint_record(task: str) -> dict[str, Any]:
    """What ``python -m seqlab.attention --task TASK`` wrote next to the checkpoint."""
    if task not in TASKS:
        raise ValueError(_("task must be one of {tasks}, got {task!r}").format(tasks=sorted(TASKS), task=task))
    return json.loads((CHECKPOINTS / f"ch07_{task}.json").read_text())


def load_checkpoint(task: str) -> tuple[AttentionSeq2Seq, Vocab, Vocab]:
    """The committed chapter-7 model of a task (stored in float16, loaded as float32) and its vocabularies."""
    record = checkpoint_record(task)
    model = AttentionSeq2Seq(**record["config"])
    weights = torch.load(CHECKPOINTS / f"ch07_{task}.pt", map_location="cpu", weights_only=True)
    model.load_state_dict({k: v.float() for k, v in weights.items()})
    return model.eval(), Vocab(record["src_vocab"]), Vocab(record["tgt_vocab"])


# ---- alignments ------------------------------------------------------------------------------------

def alignment(model: nn.Module, source: str, src_vocab: Vocab, tgt_vocab: Vocab,
              src_tokens: Callable[[str], list[str]] = chars, max_len: int = 40) -> tuple[list[str], list[str], np.ndarray]:
    """Greedy-decode one source with ``model.start``/``model.step`` (whose state carries ``"alpha"``).

    Returns the source tokens, the output tokens (``</s>`` last, when it came) and the weights, an array
    (number of outputs, number of source tokens): row t is where output t looked.
    """
    tokens = src_tokens(source)
    if not tokens:
        raise ValueError(_("the source is empty"))
    where = next(model.parameters()).device
    model.eval()
    rows, out = [], []
    with torch.no_grad():
        ids = torch.tensor([src_vocab.encode(tokens)], device=where)
        state = model.start(ids, torch.tensor([len(tokens)], device=where))
        prev = torch.tensor([BOS], device=where)
        for _step in range(max_len):
            log_probs, state = model.step(prev, state)
            rows.append(state["alpha"][0].float().cpu().numpy())
            prev = log_probs.argmax(dim=-1)
            token = int(prev[0])
            out.append("</s>" if token == EOS else tgt_vocab.tokens[token])
            if token == EOS:
                break
    return tokens, out, np.stack(rows)


def teacher_forced_weights(model: nn.Module, src: torch.Tensor, src_lengths: torch.Tensor,
                           tgt_in: torch.Tensor) -> torch.Tensor:
    """The attention weights of a batch under teacher forcing, through ``model.start``/``model.step``.

    ``src`` (B, S), ``src_lengths`` (B,), ``tgt_in`` (B, T) (``<s>`` then the target, padded): returns (B, T, S),
    row t the weights the decoder used to write output t when it had been fed the true outputs before it.
    Rows of the target's padding are computed too (the caller decides which steps count).
    """
    where = next(model.parameters()).device
    model.eval()
    rows = []
    with torch.no_grad():
        state = model.start(src.to(where), src_lengths.to(where))
        for t in range(tgt_in.shape[1]):
            _, state = model.step(tgt_in[:, t].to(where), state)
            rows.append(state["alpha"].float().cpu())
    return torch.stack(rows, dim=1) if rows else torch.zeros(src.shape[0], 0, src.shape[1])


def _shown(token: str) -> str:
    return "␣" if token == " " else token


def plot_alignment(ax, weights: np.ndarray, src: Sequence[str], out: Sequence[str], title: str = "",
                   highlight: int | None = None):
    """A heatmap of attention weights: outputs down, source tokens across; ``highlight`` frames one output row."""
    weights = np.asarray(weights)
    ax.imshow(weights, cmap="Greys", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(src)), [_shown(t) for t in src], fontsize=8)
    ax.set_yticks(range(len(out)), [_shown(t) for t in out], fontsize=8)
    ax.set_xlabel(figure_text(N_("source position t'")))
    ax.set_ylabel(figure_text(N_("output step t")))
    if highlight is not None:
        ax.add_patch(__import__("matplotlib.patches", fromlist=["Rectangle"]).Rectangle(
            (-0.5, highlight - 0.5), len(src), 1, fill=False, edgecolor="tab:red", linewidth=2))
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def attention_explorer(model: nn.Module, sources: Sequence[str], src_vocab: Vocab, tgt_vocab: Vocab,
                       src_tokens: Callable[[str], list[str]] = chars, join: str = ""):
    """Pick or type a source; see the output and the heatmap. The slider picks an output step, whose
    attended source characters are drawn darker and marked with their weights."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from seqlab.widgets import FIGURE_WIDTH, figure_widget

    if not sources:
        raise ValueError(_("attention_explorer needs at least one source to offer"))

    def draw(source: str, step: int):
        src, out, weights = alignment(model, source, src_vocab, tgt_vocab, src_tokens)
        step = min(step, len(out) - 1)
        figure, (top, bottom) = plt.subplots(2, 1, figsize=(min(FIGURE_WIDTH, max(5.0, 0.32 * len(src) + 1.5)), 5.2),
                                             gridspec_kw={"height_ratios": [4, 1]})
        text = join.join(t for t in out if t != "</s>")
        plot_alignment(top, weights, src, out, title=f"{source!r} -> {text!r}", highlight=step)
        row = weights[step]
        bottom.bar(range(len(src)), row, color=plt.cm.Reds(0.25 + 0.75 * row / max(row.max(), 1e-9)))
        bottom.set_xticks(range(len(src)), [_shown(t) for t in src], fontsize=8)
        bottom.set(ylim=(0, 1), xlim=(-0.5, len(src) - 0.5), ylabel=figure_text(N_("weight")),
                   title=figure_text(N_("output step {step}: {token!r} attends to ..."), step=step, token=_shown(out[step])))
        bottom.title.set_fontsize(9)
        figure.tight_layout()
        return figure

    def steps_of(text: str) -> int:
        try:
            return len(alignment(model, text, src_vocab, tgt_vocab, src_tokens)[1])
        except ValueError:  # an empty source: the figure shows the error
            return 1

    source = widgets.Combobox(value=sources[0], options=list(sources), description=_("source"), ensure_option=False,
                              continuous_update=False, layout=widgets.Layout(width="24em"))
    step = widgets.IntSlider(value=0, min=0, max=max(steps_of(sources[0]) - 1, 1), description=_("output step"),
                             continuous_update=False)
    box = figure_widget(draw, {"source": source, "step": step})
    source.observe(lambda change: setattr(step, "max", max(steps_of(change["new"]) - 1, 1)), names="value")
    return box


# ---- the comparison table --------------------------------------------------------------------------

def load_comparison(path: Path = COMPARISON) -> list[ComparisonRow]:
    """The course's comparison table as written by ``python -m seqlab.attention --comparison``."""
    return [ComparisonRow(**row) for row in json.loads(Path(path).read_text())]


def _scores(model, task: str, src_vocab: Vocab, tgt_vocab: Vocab, limit: int = 0) -> dict[str, Any]:
    """Greedy test scores, on the model's device (``limit``: the first pairs only, for tests)."""
    src_tokens, _, join = TASKS[task]
    test = task_data(task, "test")[:limit or None]
    out = decode(model, [p.source for p in test], src_vocab, tgt_vocab, src_tokens, join=join)
    refs = [p.target for p in test]
    scores: dict[str, Any] = {"test_exact_match_greedy": round(exact_match(out, refs), 4), "test_pairs": len(test)}
    if task == "numbers":
        by = accuracy_by_length(out, refs, [len(p.source) for p in test])
        scores["test_by_digits"] = {str(k): round(v, 4) for k, v in by.items()}
        scores["test_longest"] = round(by[max(by)], 4)
    return scores


def time_epoch(model: nn.Module, task: str, seed: int = 0) -> float:
    """Processor seconds for one epoch of ``seqlab.seq2seq.train`` over the task's whole training split, on one
    thread. Processor time, not wall time: on a shared machine the wall time of the same epoch varies threefold
    with the other jobs, the processor time of one thread far less."""
    src_tokens, tgt_tokens, _ = TASKS[task]
    src_vocab, tgt_vocab = task_vocabs(task)
    data = encode_pairs(task_data(task, "train"), src_vocab, tgt_vocab, src_tokens, tgt_tokens)
    torch.manual_seed(seed)
    start = time.process_time()
    train(model, data, 1, seed=seed, plot=False, progress=False, threads=1)
    return time.process_time() - start


def comparison_rows(retime: bool = True) -> list[ComparisonRow]:
    """Chapter 6's two models and chapter 7's, scored on the test splits (greedy). With ``retime``, the seconds per
    epoch are measured here (:func:`time_epoch`: processor time on one thread, fresh models of the checkpoints'
    sizes), one model after the other, so that they compare; without, they are the checkpoints' wall-time records."""
    from seqlab.seq2seq import GRUSeq2Seq
    from seqlab.seq2seq import checkpoint_record as ch06_record
    from seqlab.seq2seq import load_checkpoint as ch06_checkpoint

    rows = []
    for task in ("dates", "numbers"):
        model, sv, tv = ch06_checkpoint(task)
        record, scores = ch06_record(task), _scores(model, task, sv, tv)
        seconds = time_epoch(GRUSeq2Seq(**record["config"]), task) if retime else record["seconds_per_epoch"]
        rows.append(ComparisonRow(f"ch6 GRU, no attention: {task}", count_parameters(model), round(seconds, 1),
                                  scores["test_exact_match_greedy"], scores.get("test_longest"),
                                  note=f"{record['epochs']} epoch(s), greedy, test split"))
        record = checkpoint_record(task)
        seconds = time_epoch(AttentionSeq2Seq(**record["config"]), task) if retime else record["seconds_per_epoch"]
        rows.append(ComparisonRow(f"ch7 GRU + attention: {task}", record["parameters"], round(seconds, 1),
                                  record["test_exact_match_greedy"], record.get("test_longest"),
                                  note=f"{record['epochs']} epoch(s), greedy, test split"))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Train chapter 7's attention model on a task and write ``checkpoints/ch07_TASK.pt`` and ``.json``."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--task", choices=sorted(TASKS))
    parser.add_argument("--comparison", action="store_true", help="write results/ch07_comparison.json and stop")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--train-pairs", type=int, default=0, help="0: the whole training split")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--embed", type=int, default=32)
    parser.add_argument("--attn", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads for a CPU run (default 1)")
    parser.add_argument("--eval-pairs", type=int, default=0, help="score only the first N dev (and test) pairs (0: all; for tests)")
    parser.add_argument("--out-dir", type=Path, default=CHECKPOINTS, help="where ch07_TASK.pt and .json go")
    from seqlab.hardware import add_device_argument, describe, resolve_device

    add_device_argument(parser)  # --comparison ignores it: its seconds are processor time on one CPU thread
    args = parser.parse_args(argv)
    where = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    if args.comparison:
        load = os.getloadavg()[0]
        rows = comparison_rows()
        for row in rows:
            row.note += f"; s/epoch: processor time, 1 thread (load average {load:.1f}-{os.getloadavg()[0]:.1f})"
        RESULTS.mkdir(exist_ok=True)
        COMPARISON.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
        from seqlab.seq2seq import comparison_table
        print(comparison_table(rows))
        print(f"wrote {COMPARISON}")
        return 0
    if args.task is None:
        parser.error("give --task or --comparison")
    src_tokens, tgt_tokens, join = TASKS[args.task]
    src_vocab, tgt_vocab = task_vocabs(args.task)
    pairs = task_data(args.task, "train")
    if args.train_pairs:
        chosen = np.random.default_rng(args.seed).permutation(len(pairs))[:args.train_pairs]
        pairs = [pairs[i] for i in sorted(chosen)]
    data = encode_pairs(pairs, src_vocab, tgt_vocab, src_tokens, tgt_tokens)
    torch.manual_seed(args.seed)
    model = AttentionSeq2Seq(len(src_vocab), len(tgt_vocab), args.embed, args.hidden, args.attn).to(where)
    load = os.getloadavg()[0]
    history = train(model, data, args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed, plot=False,
                    threads=args.threads)  # on the model's device
    model.half().float()  # score exactly the weights that are stored
    dev = task_data(args.task, "dev")[:args.eval_pairs or None]
    dev_match = exact_match(decode(model, [p.source for p in dev], src_vocab, tgt_vocab, src_tokens, join=join),
                            [p.target for p in dev])  # decode and _scores run on the model's device
    scores = _scores(model, args.task, src_vocab, tgt_vocab, limit=args.eval_pairs)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.detach().cpu().half() for k, v in model.state_dict().items()}, args.out_dir / f"ch07_{args.task}.pt")
    record = {
        "command": "python -m seqlab.attention " + " ".join(sys.argv[1:] if argv is None else argv),
        "config": model.config, "parameters": count_parameters(model), "epochs": args.epochs,
        "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed, "threads": args.threads,
        "train_pairs": len(data), "seconds": round(history["seconds"], 1),
        "seconds_per_epoch": round(history["seconds_per_epoch"], 1), "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
        "epoch_loss": [round(x, 4) for x in history["epoch_loss"]],
        "dev_exact_match_greedy": round(dev_match, 4), **scores, **describe(where),
        "src_vocab": src_vocab.tokens, "tgt_vocab": tgt_vocab.tokens,
    }
    (args.out_dir / f"ch07_{args.task}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out_dir / f'ch07_{args.task}.pt'}: dev {dev_match:.1%}, test {scores['test_exact_match_greedy']:.1%} "
          f"exact match (greedy), {history['seconds']:.0f} s of training on {record['device']} ({record['hardware']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
