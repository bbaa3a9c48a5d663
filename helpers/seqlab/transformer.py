"""Chapter 8's reference Transformer: what the chapter *uses* (its notebook teaches the same pieces).

* :class:`MultiHeadAttention` (parameters named like ``nn.MultiheadAttention``: ``in_proj_weight`` =
  [W_q; W_k; W_v], ``in_proj_bias``, ``out_proj``), :class:`EncoderBlock`, :class:`DecoderBlock` (pre-LN:
  ``x + sublayer(LayerNorm(x))``), :func:`sinusoidal`;
* :class:`Seq2SeqTransformer`: an encoder-decoder for chapter 6's tasks with the course's training and
  decoding interfaces (``model(src, src_lengths, tgt_in)``, ``start``, ``step`` with a key/value cache);
  its parameter names are the chapter-8 notebook's, so the notebook loads these checkpoints into its own
  model;
* :class:`TransformerLM`: a decoder-only language model of Brown on chapter 1's split and vocabulary,
  with the same rules as chapter 4's LSTM (:mod:`seqlab.wordlm`: each sentence scored on its own, an
  adaptive softmax over the whole vocabulary, a 6,000-word input vocabulary);
* the chapter's widgets: :func:`attention_explorer` (attention per layer and head) and
  :func:`positional_explorer` (the sinusoidal encoding, and the dot products of its vectors).

Committed checkpoints (float16 weights) and their records come from::

    python -m seqlab.transformer seq2seq --task dates --epochs 8 --lr 2e-3 --dropout 0 --threads 1
    python -m seqlab.transformer seq2seq --task numbers --epochs 8 --lr 2e-3 --dropout 0 --threads 1
    python -m seqlab.transformer lm --epochs 6 --threads 1 --time-limit 540      # repeat with --resume
                                                                                 # until it says "done"

Each takes ``--device`` (``cpu``, ``cuda``, ``cuda:N``; by default the GPU when torch sees one) and trains and
scores there; its record names the device, the CPU or GPU and torch's version (``seqlab.hardware.describe``).
The checkpoints hold CPU float16 weights: they load on any machine.

The language model's run is **resumable**: it stops after ``--time-limit`` seconds (mid-epoch if need be)
and saves its whole training state (weights, optimiser, schedule, the epoch's shuffling and position)
to ``--state``; ``--resume`` continues exactly where it stopped. Its record sums the time of every run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from seqlab.i18n import N_, _, choices, figure_text

# The attention maps' kinds (attention_maps' keys), named in the explorer's drop-down and the figures' titles
ATTENTION_KINDS = (N_("encoder"), N_("decoder"), N_("cross"))

__all__ = ["sinusoidal", "attention", "MultiHeadAttention", "EncoderBlock", "DecoderBlock", "Seq2SeqTransformer",
           "TransformerLM", "load_seq2seq", "seq2seq_record", "load_lm", "lm_record", "attention_maps",
           "attention_figure", "attention_explorer", "positional_figure", "positional_explorer", "causal_mask"]

CHECKPOINTS = Path(__file__).with_name("checkpoints")
RESULTS = Path(__file__).with_name("results")
LM_CHECKPOINT = CHECKPOINTS / "ch08_brown_transformer.pt"
LM_CONFIG = {"input_vocab": 6000, "d_model": 128, "heads": 4, "layers": 3, "d_ff": 512, "dropout": 0.1,
             "cutoffs": [2000, 10000]}


# ---- the pieces ------------------------------------------------------------------------------------

def sinusoidal(length: int, d_model: int) -> torch.Tensor:
    """PE (length, d_model): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    if length < 0 or d_model < 2 or d_model % 2:
        raise ValueError(f"need length >= 0 and an even d_model >= 2, got {length}, {d_model}")
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe


def causal_mask(length: int, device=None) -> torch.Tensor:
    """(length, length) bool, True where a query may look: key position <= query position."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None):
    """softmax(q k^T / sqrt(d_k)) v over the last two dims; mask True = may attend. Returns (output, weights)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


class MultiHeadAttention(nn.Module):
    """Multi-head attention with ``nn.MultiheadAttention``'s parameter layout (batch first).

    ``forward(query, key, value, mask=None, cache=None)``: query (B, Lq, D), key/value (B, Lk, D); ``mask``
    True = may attend, broadcastable to (B, h, Lq, Lk). With ``cache`` (a dict), the new keys and values are
    appended to ``cache["k"]``/``cache["v"]`` (B, h, L, d) on the length axis (self-attention while decoding);
    with ``cache`` holding ``"k"`` and ``static=True`` they are reused as they are (cross-attention).
    Keeps the last weights (B, h, Lq, Lk) in ``self.weights`` when ``self.keep`` is true."""

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model ({d_model}) must be a multiple of heads ({heads})")
        self.d_model, self.heads, self.d_head = d_model, heads, d_model // heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d_model, d_model))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d_model))
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)
        self.keep, self.weights = False, None

    def split(self, x: torch.Tensor) -> torch.Tensor:  # (B, L, D) -> (B, h, L, d)
        return x.view(x.shape[0], x.shape[1], self.heads, self.d_head).transpose(1, 2)

    def forward(self, query, key, value, mask=None, cache: dict | None = None, static: bool = False):
        W, b = self.in_proj_weight.chunk(3), self.in_proj_bias.chunk(3)
        q = self.split(F.linear(query, W[0], b[0]))
        if cache is not None and static and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k, v = self.split(F.linear(key, W[1], b[1])), self.split(F.linear(value, W[2], b[2]))
            if cache is not None:
                if not static and "k" in cache:
                    k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, h, Lq, Lk)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if self.keep:
            self.weights = weights.detach()
        out = (self.dropout(weights) @ v).transpose(1, 2).reshape(query.shape[0], query.shape[1], self.d_model)
        return self.out_proj(out)


def feed_forward(d_model: int, d_ff: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))


class EncoderBlock(nn.Module):
    """Pre-LN: x + SelfAttn(LN(x)), then x + FFN(LN(x)). Names: self_attn, ff, norm1, norm2."""

    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads, dropout)
        self.ff = feed_forward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, src_mask=None):
        h = self.norm1(x)
        x = x + self.dropout(self.self_attn(h, h, h, src_mask))
        return x + self.dropout(self.ff(self.norm2(x)))


class DecoderBlock(nn.Module):
    """Pre-LN: masked self-attention, cross-attention to the memory, FFN, each ``x + sublayer(LN(x))``.
    Names: self_attn, cross_attn, ff, norm1, norm2, norm3."""

    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, heads, dropout)
        self.ff = feed_forward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache: dict | None = None):
        h = self.norm1(y)
        y = y + self.dropout(self.self_attn(h, h, h, tgt_mask, cache=None if cache is None else cache["self"]))
        h = self.norm2(y)
        y = y + self.dropout(self.cross_attn(h, memory, memory, memory_mask,
                                             cache=None if cache is None else cache["cross"], static=True))
        return y + self.dropout(self.ff(self.norm3(y)))


# ---- the encoder-decoder ---------------------------------------------------------------------------

class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder Transformer (pre-LN, sinusoidal positions, embeddings scaled by sqrt(d_model)).

    Training: ``model(src, src_lengths, tgt_in) -> logits (B, T, V)``. Decoding: ``start`` encodes and
    returns a state ``{"memory", "mask", "pos", "cache"}``; ``step(prev, state)`` runs one position using
    the key/value cache (``cached=False``: recompute the whole prefix each step, for comparison).
    ``causal=False`` removes the decoder's causal mask (the chapter's leak demonstration)."""

    def __init__(self, n_src: int, n_tgt: int, d_model: int = 64, heads: int = 4, layers: int = 2, d_ff: int = 256,
                 dropout: float = 0.1, causal: bool = True, max_len: int = 256):
        super().__init__()
        self.config = {"n_src": n_src, "n_tgt": n_tgt, "d_model": d_model, "heads": heads, "layers": layers,
                       "d_ff": d_ff, "dropout": dropout}
        self.d_model, self.causal, self.cached = d_model, causal, True
        self.src_embed = nn.Embedding(n_src, d_model, padding_idx=0)
        self.tgt_embed = nn.Embedding(n_tgt, d_model, padding_idx=0)
        self.register_buffer("pe", sinusoidal(max_len, d_model), persistent=False)
        self.encoder = nn.ModuleList(EncoderBlock(d_model, heads, d_ff, dropout) for _ in range(layers))
        self.decoder = nn.ModuleList(DecoderBlock(d_model, heads, d_ff, dropout) for _ in range(layers))
        self.enc_norm, self.dec_norm = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, n_tgt)
        self.dropout = nn.Dropout(dropout)
        for table in (self.src_embed, self.tgt_embed):  # std 1/sqrt(D): times sqrt(D), on a par with the PE
            nn.init.normal_(table.weight, std=d_model ** -0.5)
            with torch.no_grad():
                table.weight[0].zero_()

    def embed(self, table: nn.Embedding, ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        return self.dropout(table(ids) * math.sqrt(self.d_model) + self.pe[offset:offset + ids.shape[1]])

    def encode(self, src, src_lengths):
        keep = torch.arange(src.shape[1], device=src.device)[None, :] < src_lengths.to(src.device)[:, None]
        mask = keep[:, None, None, :]  # (B, 1, 1, S): broadcast over heads and queries
        x = self.embed(self.src_embed, src)
        for block in self.encoder:
            x = block(x, mask)
        return self.enc_norm(x), mask

    def decode_all(self, tgt_in, memory, mask):
        T = tgt_in.shape[1]
        tgt_mask = causal_mask(T, tgt_in.device) if self.causal else None
        y = self.embed(self.tgt_embed, tgt_in)
        for block in self.decoder:
            y = block(y, memory, tgt_mask, mask)
        return self.out(self.dec_norm(y))

    def forward(self, src, src_lengths, tgt_in):
        memory, mask = self.encode(src, src_lengths)
        return self.decode_all(tgt_in, memory, mask)

    def start(self, src, src_lengths) -> dict:
        memory, mask = self.encode(src, src_lengths)
        cache = [{"self": {}, "cross": {}} for _ in self.decoder]
        return {"memory": memory, "mask": mask, "prefix": src.new_zeros(src.shape[0], 0), "cache": cache}

    def step(self, prev, state):
        prefix = torch.cat([state["prefix"], prev[:, None]], dim=1)
        if not self.cached:
            logits = self.decode_all(prefix, state["memory"], state["mask"])[:, -1]
            return torch.log_softmax(logits, dim=-1), {**state, "prefix": prefix}
        y = self.embed(self.tgt_embed, prev[:, None], offset=prefix.shape[1] - 1)
        for block, cache in zip(self.decoder, state["cache"]):
            y = block(y, state["memory"], None, state["mask"], cache=cache)
        logits = self.out(self.dec_norm(y))[:, -1]
        return torch.log_softmax(logits, dim=-1), {**state, "prefix": prefix}


# ---- the language model ----------------------------------------------------------------------------

class TransformerLM(nn.Module):
    """Decoder-only Transformer LM (pre-LN, causal) with :class:`seqlab.wordlm.WordLSTM`'s interface:
    ``model(inputs, targets, lengths) -> (summed NLL in nats, number of tokens)``."""

    def __init__(self, vocab_size: int, input_vocab: int = 6000, d_model: int = 128, heads: int = 4, layers: int = 3,
                 d_ff: int = 512, dropout: float = 0.1, cutoffs: Sequence[int] = (2000, 10000), max_len: int = 512):
        super().__init__()
        self.vocab_size, self.input_vocab, self.d_model = vocab_size, min(input_vocab, vocab_size), d_model
        self.embed = nn.Embedding(self.input_vocab, d_model)
        self.register_buffer("pe", sinusoidal(max_len, d_model), persistent=False)
        self.blocks = nn.ModuleList(EncoderBlock(d_model, heads, d_ff, dropout) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)
        # a vocabulary within the first cutoff (a tiny test run): one head and a one-token tail cluster
        cutoffs = [c for c in cutoffs if c < vocab_size] or [max(1, vocab_size - 1)]
        self.softmax = nn.AdaptiveLogSoftmaxWithLoss(d_model, vocab_size, cutoffs=cutoffs, div_value=4.0)

    def hidden_states(self, inputs: torch.Tensor) -> torch.Tensor:
        inputs = torch.where(inputs < self.input_vocab, inputs, torch.zeros_like(inputs))
        T = inputs.shape[1]
        if T > self.pe.shape[0]:
            raise ValueError(f"sequences of at most {self.pe.shape[0]} tokens, got {T}")
        x = self.drop(self.embed(inputs) * math.sqrt(self.d_model) + self.pe[:T])
        mask = causal_mask(T, inputs.device)  # right padding: real positions never see the padding after them
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)

    def forward(self, inputs, targets, lengths):
        out = self.hidden_states(inputs)
        mask = torch.arange(inputs.shape[1], device=inputs.device)[None, :] < lengths.to(inputs.device)[:, None]
        result = self.softmax(out[mask], targets[mask])
        return -result.output.sum(), int(mask.sum())


# ---- checkpoints -----------------------------------------------------------------------------------

def _half(model: nn.Module) -> dict:
    return {k: v.detach().cpu().half() for k, v in model.state_dict().items()}


def seq2seq_record(task: str) -> dict:
    """The record of ``python -m seqlab.transformer seq2seq --task TASK`` (command, seconds, scores)."""
    path = CHECKPOINTS / f"ch08_{task}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `python -m seqlab.transformer seq2seq --task {task}`")
    return json.loads(path.read_text())


def load_seq2seq(task: str) -> tuple[dict, Any, Any, dict]:
    """(float32 state dict, source vocab, target vocab, record) of the committed chapter-8 model of a task."""
    from seqlab.seq2seq import Vocab

    record = seq2seq_record(task)
    weights = torch.load(CHECKPOINTS / f"ch08_{task}.pt", map_location="cpu", weights_only=True)
    return ({k: v.float() for k, v in weights.items()}, Vocab(record["src_vocab"]), Vocab(record["tgt_vocab"]), record)


def lm_record() -> dict:
    """The record of the committed Brown Transformer LM (command, seconds over all runs, perplexities)."""
    return json.loads(LM_CHECKPOINT.with_suffix(".json").read_text())


def load_lm(vocab_size: int, path: Path = LM_CHECKPOINT) -> TransformerLM:
    """The committed Brown Transformer LM, in float32 and evaluation mode."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: retrain with `python -m seqlab.transformer lm`")
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if saved["vocab_size"] != vocab_size:
        raise ValueError(f"the checkpoint has {saved['vocab_size']} tokens, the vocabulary {vocab_size}")
    model = TransformerLM(vocab_size, **saved["config"])
    model.load_state_dict({k: v.float() for k, v in saved["state_dict"].items()})
    return model.eval()


# ---- figures and widgets ---------------------------------------------------------------------------

def attention_maps(model: nn.Module, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> dict:
    """Weights of every attention layer for one teacher-forced batch: ``{"encoder": [(B,h,S,S)...],
    "decoder": [(B,h,T,T)...], "cross": [(B,h,T,S)...]}`` (on the CPU). Works with any model whose blocks
    are in ``model.encoder`` / ``model.decoder`` with ``self_attn`` / ``cross_attn`` modules that return
    ``(output, weights)`` (the notebook's) or keep ``weights`` when ``keep`` is set (this module's)."""
    groups = {"encoder": [b.self_attn for b in model.encoder], "decoder": [b.self_attn for b in model.decoder],
              "cross": [b.cross_attn for b in model.decoder]}
    found: dict = {}

    def hook(module, _inputs, output):
        found[id(module)] = (output[1] if isinstance(output, tuple) else module.weights).detach().cpu()

    handles = [m.register_forward_hook(hook) for mods in groups.values() for m in mods]
    for mods in groups.values():
        for m in mods:
            m.keep = True
    try:
        model.eval()
        with torch.no_grad():
            model(src, src_lengths, tgt_in)
        return {name: [found[id(m)] for m in mods] for name, mods in groups.items()}
    finally:
        for h in handles:
            h.remove()
        for mods in groups.values():
            for m in mods:
                m.keep = False


# The tallest figure of all heads at once, in inches at 100 dpi: with the explorer's two lines of controls it
# stays under an 800 px window (chapter 8's encoder view of a 23-character date, 8 pt labels at 17 px a row,
# was 1,000 px tall).
ALL_HEADS_HEIGHT = 6.4
ROW_PITCH = 0.13  # inches a row of a heatmap needs for its 8 pt label (11.1 px), with room between rows


def attention_figure(maps: dict, kind: str, layer: int, head: int | None, rows: Sequence[str], cols: Sequence[str],
                     index: int = 0):
    """Heatmap of one head (or all heads, two a row, when ``head`` is None) of one layer.

    Two heatmaps a row, not all side by side: four heads in one row made a figure 14 inches wide,
    which a notebook scales down to about 60%, and its labels to 6 px. Two a row stay within
    ``seqlab.widgets.FIGURE_WIDTH``, with labels of 8 pt (11 px at 100 dpi). All heads share their axes
    (labels on the left column and the bottom row only) and fit ALL_HEADS_HEIGHT: a long sequence gets
    labels of 8 pt (11 px, the smallest text the course draws: issue 47) on every row while they fit, then on every
    other row (or every third...), rather than a figure taller than the window.
    """
    import matplotlib.pyplot as plt

    from seqlab.widgets import FIGURE_WIDTH

    if kind not in maps:
        raise ValueError(_("kind must be one of {kinds}, got {kind!r}").format(kinds=sorted(maps), kind=kind))
    if not 0 <= layer < len(maps[kind]):
        raise ValueError(_("layer must be in 0..{last}, got {layer}").format(last=len(maps[kind]) - 1, layer=layer))
    w = maps[kind][layer][index][:, :len(rows), :len(cols)].numpy()  # (h, rows, cols)
    heads = list(range(w.shape[0])) if head is None else [head]
    columns = min(len(heads), 2)
    grid_rows = math.ceil(len(heads) / columns)
    figure_extra, panel_extra = (0.75, 0.3) if len(heads) > 1 else (0.6, 0.3)  # inches: labels, titles
    axes_height = max(1.0, ROW_PITCH * len(rows))
    if grid_rows > 1:
        axes_height = min(axes_height, (ALL_HEADS_HEIGHT - figure_extra) / grid_rows - panel_extra)
    fig, axes = plt.subplots(grid_rows, columns, figsize=(FIGURE_WIDTH if columns > 1 else 5.0,
                                                          (axes_height + panel_extra) * grid_rows + figure_extra),
                             squeeze=False, sharex=True, sharey=True)
    for ax in axes.flat[len(heads):]:  # an odd number of heads leaves one panel empty
        ax.set_visible(False)
    for ax, h in zip(axes.flat, heads):
        ax.imshow(w[h], cmap="Blues", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(cols)), [c if c != " " else "␣" for c in cols], fontsize=8)
        ax.set_title(figure_text(N_("head {head}"), head=h) if len(heads) > 1 else
                     figure_text(N_("{kind} layer {layer}, head {head}"), kind=figure_text(kind), layer=layer, head=h),
                     fontsize=9)
        ax.tick_params(labelbottom=h + columns >= len(heads), labelleft=h % columns == 0)
    if len(heads) > 1:  # one title and one label for each axis, not one a panel
        fig.suptitle(figure_text(N_("{kind} attention, layer {layer}, all {count} heads"), kind=figure_text(kind),
                                 layer=layer, count=len(heads)), fontsize=10)
        fig.supxlabel(figure_text(N_("key (attended) position")), fontsize=9)
        fig.supylabel(figure_text(N_("query position")), fontsize=9)
    else:
        axes[0, 0].set(xlabel=figure_text(N_("key (attended) position")), ylabel=figure_text(N_("query position")))
        axes[0, 0].xaxis.label.set_fontsize(9)
        axes[0, 0].yaxis.label.set_fontsize(9)
    fig.tight_layout()
    # Row labels of 8 pt on as many rows as leave them apart: all of them, or every other one, ...
    pitch_pt = axes.flat[0].get_window_extent().height / max(len(rows), 1) * 72 / fig.dpi
    every = max(1, math.ceil(8.0 * 1.02 / pitch_pt))  # a label is as tall as its size in points
    shown = [r if r != " " else "␣" for r in rows]
    for ax in axes.flat[:len(heads)]:
        ax.set_yticks(range(0, len(rows), every), shown[::every], fontsize=8.0)
    fig.tight_layout()
    return fig


def attention_explorer(maps: dict, rows_by_kind: dict, cols_by_kind: dict, index: int = 0):
    """Pick the attention (encoder self / decoder self / cross), the layer and the head (-1: all heads)."""
    import ipywidgets as widgets

    from seqlab.widgets import figure_widget

    n_layers, n_heads = len(maps["encoder"]), maps["encoder"][0].shape[1]
    controls = {
        "kind": widgets.Dropdown(options=choices(maps), value="cross", description=_("attention")),
        "layer": widgets.IntSlider(value=n_layers - 1, min=0, max=n_layers - 1, description=_("layer"),
                                   continuous_update=False),
        "head": widgets.IntSlider(value=-1, min=-1, max=n_heads - 1, description=_("head (-1 all)"),
                                  continuous_update=False),
    }

    def draw(kind, layer, head):
        return attention_figure(maps, kind, layer, None if head < 0 else head, rows_by_kind[kind], cols_by_kind[kind],
                                index)

    return figure_widget(draw, controls)


def positional_figure(d_model: int = 64, position: int = 20, length: int = 100):
    """Left: PE (length x d_model) as an image. Right: PE[position] . PE[p] for every p, against p - position."""
    import matplotlib.pyplot as plt

    if not 0 <= position < length:
        raise ValueError(_("position must be in 0..{last}, got {position}").format(last=length - 1, position=position))
    from seqlab.widgets import FIGURE_WIDTH

    pe = sinusoidal(length, d_model)
    fig, (a, b) = plt.subplots(1, 2, figsize=(FIGURE_WIDTH, 3.6))  # wider, and a notebook would shrink it
    im = a.imshow(pe.numpy(), aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
    a.axhline(position, color="k", lw=0.8)
    a.set_xlabel(figure_text(N_("dimension (even: sin, odd: cos)")))
    a.set_ylabel(figure_text(N_("position")))
    a.set_title(figure_text(N_("sinusoidal PE, d_model = {d_model}"), d_model=d_model))
    fig.colorbar(im, ax=a)
    dots = (pe @ pe[position]).numpy()
    b.plot(range(-position, length - position), dots, marker=".", ms=3)
    b.axvline(0, color="k", lw=0.6)
    b.set_xlabel(figure_text(N_("offset from position {position}"), position=position))
    b.set_ylabel(figure_text(N_("PE[position] · PE[position + offset]")))
    b.set_title(figure_text(N_("similarity falls off with distance,\nthe same on both sides")))
    fig.tight_layout()
    return fig


def positional_explorer(length: int = 100):
    """Sliders for d_model and the position of the positional-encoding figure."""
    import ipywidgets as widgets

    from seqlab.widgets import figure_widget

    controls = {"d_model": widgets.IntSlider(value=64, min=4, max=256, step=4, description="d_model",
                                             continuous_update=False),
                "position": widgets.IntSlider(value=20, min=0, max=length - 1, description=_("position"),
                                              continuous_update=False)}
    return figure_widget(lambda d_model, position: positional_figure(d_model, position, length), controls)


# ---- training scripts ------------------------------------------------------------------------------

def train_seq2seq(args) -> int:
    from seqlab.seq2seq import TASKS, decode, encode_pairs, exact_match, task_data, task_vocabs, train

    from seqlab.hardware import describe, resolve_device

    where = resolve_device(args.device)
    src_tokens, tgt_tokens, join = TASKS[args.task]
    src_vocab, tgt_vocab = task_vocabs(args.task)
    pairs = task_data(args.task, "train")[:args.train_pairs or None]
    data = encode_pairs(pairs, src_vocab, tgt_vocab, src_tokens, tgt_tokens)
    torch.manual_seed(args.seed)
    model = Seq2SeqTransformer(len(src_vocab), len(tgt_vocab), args.d_model, args.heads, args.layers, args.d_ff,
                               args.dropout).to(where)
    cpu_start = time.process_time()
    history = train(model, data, args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed, plot=False,
                    threads=args.threads)  # on the model's device
    cpu_seconds = time.process_time() - cpu_start  # processor time: less sensitive to a shared machine's load
    model.load_state_dict({k: v.float() for k, v in _half(model).items()})  # score the weights that are stored
    dev = task_data(args.task, "dev")[:args.eval_pairs or None]
    dev_match = exact_match(decode(model, [p.source for p in dev], src_vocab, tgt_vocab, src_tokens, join=join),
                            [p.target for p in dev])  # on the model's device
    args.out_dir.mkdir(parents=True, exist_ok=True)
    torch.save(_half(model), args.out_dir / f"ch08_{args.task}.pt")
    record = {
        "command": "python -m seqlab.transformer " + " ".join(sys.argv[1:] if args.argv is None else args.argv),
        "config": model.config, "epochs": args.epochs, "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed,
        "threads": torch.get_num_threads(), "train_pairs": len(data), "seconds": round(history["seconds"], 1),
        "seconds_per_epoch": round(history["seconds_per_epoch"], 1),
        "cpu_seconds_per_epoch": round(cpu_seconds / len(history["epoch_loss"]), 1),
        "load_average": [round(x, 2) for x in __import__("os").getloadavg()],
        "epoch_loss": [round(x, 4) for x in history["epoch_loss"]], "dev_exact_match_greedy": round(dev_match, 4),
        **describe(where), "src_vocab": src_vocab.tokens, "tgt_vocab": tgt_vocab.tokens,
    }
    (args.out_dir / f"ch08_{args.task}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"dev exact match {dev_match:.2%}, {history['seconds']:.0f} s on {record['device']} ({record['hardware']})",
          flush=True)
    return 0


def train_lm(args) -> int:
    from seqlab.wordlm import batches, brown_splits, brown_vocab, encode, evaluate

    from seqlab.hardware import resolve_device

    where = resolve_device(args.device)
    data = brown_splits({split: args.max_sentences for split in ("train", "dev", "test")} if args.max_sentences else None)
    vocab = brown_vocab(data["train"])
    encoded = {split: encode(s, vocab) for split, s in data.items()}
    n_steps = len(list(batches(encoded["train"], args.batch_size, max_len=args.max_len)))
    total = n_steps * args.epochs
    torch.manual_seed(args.seed)
    model = TransformerLM(len(vocab), **LM_CONFIG).to(where)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    def rate(step: int) -> float:  # linear warm-up, then cosine down to 10%
        if step < args.warmup:
            return (step + 1) / args.warmup
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - args.warmup) / max(1, total - args.warmup))))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    generator = torch.Generator().manual_seed(args.seed)
    state = {"epoch": 1, "step_in_epoch": 0, "epoch_generator": generator.get_state(), "seconds": 0.0,
             "history": [], "best": math.inf, "runs": 0, "epoch_loss": [0.0, 0]}
    if args.resume:
        saved = torch.load(args.state, map_location="cpu", weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        schedule.load_state_dict(saved["schedule"])
        state = saved["state"]
    if state["epoch"] > args.epochs:
        print("done: nothing left to train", flush=True)
        return 0
    state["runs"] += 1
    state.setdefault("devices", []).append(str(where))  # one a run (a state saved before this field: none)
    start = time.perf_counter()
    while state["epoch"] <= args.epochs:
        generator.set_state(state["epoch_generator"])
        model.train()
        stopped = False
        for i, (inputs, targets, lengths) in enumerate(batches(encoded["train"], args.batch_size, generator=generator,
                                                               max_len=args.max_len)):
            if i < state["step_in_epoch"]:
                continue
            if time.perf_counter() - start > args.time_limit:
                stopped = True
                break
            optimizer.zero_grad()
            nll, n = model(inputs.to(where), targets.to(where), lengths)
            (nll / n).backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            state["step_in_epoch"] = i + 1
            state["epoch_loss"] = [state["epoch_loss"][0] + nll.item(), state["epoch_loss"][1] + n]
            if (i + 1) % 200 == 0:
                print(f"epoch {state['epoch']} step {i + 1}/{n_steps} loss {state['epoch_loss'][0] / state['epoch_loss'][1]:.3f} "
                      f"{time.perf_counter() - start:.0f} s", flush=True)
        if stopped:
            break
        dev_ppl, _ = evaluate(model, encoded["dev"], device=where)  # scored where it trains
        seconds = state["seconds"] + time.perf_counter() - start
        state["history"].append({"epoch": state["epoch"], "train_loss": round(state["epoch_loss"][0] / state["epoch_loss"][1], 4),
                                 "dev_perplexity": round(dev_ppl, 2), "seconds": round(seconds, 1)})
        print(json.dumps(state["history"][-1]), flush=True)
        if dev_ppl < state["best"]:
            state["best"] = dev_ppl
            torch.save({"vocab_size": len(vocab), "config": LM_CONFIG, "state_dict": _half(model)}, args.out)
        state.update(epoch=state["epoch"] + 1, step_in_epoch=0, epoch_generator=generator.get_state(), epoch_loss=[0.0, 0])
    state["seconds"] += time.perf_counter() - start
    args.state.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
                "state": state}, args.state)
    if state["history"]:
        write_lm_record(args, state, vocab, encoded, where)
    print("done" if state["epoch"] > args.epochs else f"stopped at epoch {state['epoch']} step {state['step_in_epoch']}: "
          "run again with --resume", flush=True)
    return 0


def write_lm_record(args, state: dict, vocab: list, encoded: dict, where: torch.device | str = "cpu") -> None:
    """The record of the checkpoint at ``args.out``: the stored (float16) weights, scored on ``where``, the
    device the run trained on; ``device`` names every device that trained it when runs were resumed elsewhere."""
    from seqlab.hardware import describe
    from seqlab.wordlm import evaluate

    model = load_lm(len(vocab), args.out).to(where)
    test_ppl, n_test = evaluate(model, encoded["test"], device=where)
    dev_ppl, _ = evaluate(model, encoded["dev"], device=where)
    machine = describe(where)
    devices = list(dict.fromkeys(state.get("devices") or [machine["device"]]))
    machine["device"] = " + ".join(devices)
    record = {
        "command": f"python -m seqlab.transformer lm --epochs {args.epochs} --seed {args.seed} --lr {args.lr} "
                   f"--threads {args.threads} --time-limit {args.time_limit:g} --device {where}"
                   + (f" --max-sentences {args.max_sentences}" if args.max_sentences else "")
                   + "  (then again with --resume until done)",
        "runs": state["runs"], "epochs_done": len(state["history"]), "seconds": round(state["seconds"], 1),
        **machine, "threads": torch.get_num_threads(),
        "config": LM_CONFIG, "batch_size": args.batch_size, "max_len": args.max_len, "warmup": args.warmup,
        "parameters": sum(p.numel() for p in model.parameters()), "vocab_size": len(vocab),
        "dev_perplexity": round(dev_ppl, 2), "test_perplexity": round(test_ppl, 2), "test_tokens": n_test,
        "history": state["history"], "bytes": args.out.stat().st_size,
    }
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: record[k] for k in ("epochs_done", "seconds", "dev_perplexity", "test_perplexity")}), flush=True)


def main(argv: list[str] | None = None) -> int:
    from seqlab.hardware import add_device_argument

    parser = argparse.ArgumentParser(description="Train chapter 8's Transformers and write their checkpoints.")
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("seq2seq", help="the encoder-decoder on a chapter-6 task")
    s.add_argument("--task", choices=["dates", "numbers"], required=True)
    s.add_argument("--epochs", type=int, default=2)
    s.add_argument("--d-model", type=int, default=64)
    s.add_argument("--heads", type=int, default=4)
    s.add_argument("--layers", type=int, default=2)
    s.add_argument("--d-ff", type=int, default=256)
    # No dropout by default: on these generated tasks it did not raise dev accuracy (dates 100% with and
    # without), and on a CPU its random masks cost about a third of each training step.
    s.add_argument("--dropout", type=float, default=0.0)
    s.add_argument("--batch-size", type=int, default=64)
    s.add_argument("--lr", type=float, default=1e-3)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--threads", type=int, default=1, help="torch CPU threads for a CPU run (default 1)")
    s.add_argument("--train-pairs", type=int, default=0, help="only the first N training pairs (0: all; for tests)")
    s.add_argument("--eval-pairs", type=int, default=0, help="score only the first N dev pairs (0: all; for tests)")
    s.add_argument("--out-dir", type=Path, default=CHECKPOINTS, help="where ch08_TASK.pt and .json go")
    add_device_argument(s)
    m = sub.add_parser("lm", help="the decoder-only language model of Brown")
    m.add_argument("--epochs", type=int, default=4)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--lr", type=float, default=1e-3)
    m.add_argument("--batch-size", type=int, default=32)
    m.add_argument("--max-len", type=int, default=60)
    m.add_argument("--warmup", type=int, default=400)
    m.add_argument("--threads", type=int, default=1, help="torch CPU threads for a CPU run (default 1)")
    m.add_argument("--max-sentences", type=int, default=0, help="only the first N sentences of each split (for tests)")
    add_device_argument(m)
    m.add_argument("--time-limit", type=float, default=math.inf, help="stop (resumably) after this many seconds")
    m.add_argument("--resume", action="store_true")
    m.add_argument("--state", type=Path, default=Path.home() / ".cache" / "seqlab" / "ch08_brown_transformer.state.pt")
    m.add_argument("--out", type=Path, default=LM_CHECKPOINT)
    args = parser.parse_args(argv)
    args.argv = argv
    torch.set_num_threads(args.threads)
    return train_seq2seq(args) if args.what == "seq2seq" else train_lm(args)


if __name__ == "__main__":
    sys.exit(main())
