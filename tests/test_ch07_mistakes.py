"""Chapter 7's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function (or class) of the solution for a variant and runs the exercise's
whole test cell (visible and hidden tests) against it.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from mistakes import RANDOM_PARAMETERS, GradedCells, mistake_tests, naming_tests, zero_initialised
from seqlab.check import first_difference

CHAPTER = "07-attention"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base
PAD, BOS = BASE["PAD"], BASE["BOS"]
masked_softmax = BASE["masked_softmax"]
additive_scores = BASE["additive_scores"]
attention_context = BASE["attention_context"]


# ---- masked_softmax (graded with attention_context: one exercise since issue 40) -----------------

def softmax_last_axis_always(scores, mask, dim=-1):
    return masked_softmax(scores, mask, dim=-1)


def softmax_mask_inverted(scores, mask, dim=-1):
    return torch.softmax(scores.masked_fill(mask, torch.finfo(scores.dtype).min), dim=dim) * ~mask


def softmax_mask_ignored(scores, mask, dim=-1):
    return torch.softmax(scores, dim=dim)


def softmax_nan_on_fully_masked(scores, mask, dim=-1):
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=dim)


def softmax_then_zero_without_renormalising(scores, mask, dim=-1):
    return torch.softmax(scores, dim=dim) * mask


def softmax_fill_minus_1e4(scores, mask, dim=-1):
    return torch.softmax(scores.masked_fill(~mask, -1e4), dim=dim) * mask


def softmax_in_place(scores, mask, dim=-1):
    scores.masked_fill_(~mask.expand(scores.shape), torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=dim) * mask


def softmax_hardcoded(scores, mask, dim=-1):
    e = torch.exp(torch.tensor([2.0, 1.0, 0.0]))
    return torch.cat([e / e.sum(), torch.zeros(1)])[None]


def softmax_casts_to_float32(scores, mask, dim=-1):
    return masked_softmax(scores.float(), mask, dim=dim)


def softmax_unmasks_empty_rows_in_place(scores, mask, dim=-1):
    """Lets a fully masked row attend everywhere, then zeroes it: right values, but the caller's mask changes."""
    empty = ~mask.any(dim, keepdim=True)
    mask |= empty
    return torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=dim) * mask * ~empty


def softmax_through_numpy(scores, mask, dim=-1):
    """Right values, in numpy: scores.numpy() raises when the scores require grad."""
    s = scores.numpy()
    m = np.broadcast_to(mask.numpy(), s.shape)
    top = np.where(m, s, -np.inf).max(axis=dim, keepdims=True)
    e = np.where(m, np.exp(s - np.where(np.isfinite(top), top, 0.0)), 0.0)
    z = e.sum(axis=dim, keepdims=True)
    return torch.from_numpy(e / np.where(z > 0, z, 1.0))


def softmax_detached(scores, mask, dim=-1):
    with torch.no_grad():
        return masked_softmax(scores, mask, dim=dim)


def softmax_one_shift_for_all_rows(scores, mask, dim=-1):
    """Subtracts the largest real score of the whole tensor, not of each row: rows far below it underflow to 0."""
    mask = mask.expand(scores.shape)
    top = scores.masked_fill(~mask, float("-inf")).max()
    e = torch.where(mask, torch.exp(scores - top), torch.zeros_like(scores))
    z = e.sum(dim, keepdim=True)
    return e / torch.where(z > 0, z, torch.ones_like(z))


# issue 25 (gradients): the forward values are right, the gradient is not

def softmax_minus_inf_then_where(scores, mask, dim=-1):
    """An additive -inf mask, then torch.where zeroes the NaN of a fully masked row: its gradient is NaN."""
    weights = torch.softmax(scores + torch.zeros((), dtype=scores.dtype).masked_fill(~mask, float("-inf")), dim=dim)
    return torch.where(mask, weights, torch.zeros_like(weights))


def softmax_minus_inf_bias_then_nan_to_num(scores, mask, dim=-1):
    """An additive -inf bias, then nan_to_num in the forward: a fully masked row's weights are 0, its gradient NaN
    (the addition passes the softmax's NaN back to the scores; masked_fill's backward would have zeroed it)."""
    bias = torch.zeros((), dtype=scores.dtype).masked_fill(~mask, float("-inf"))
    return torch.softmax(scores + bias, dim=dim).nan_to_num(0.0)


def softmax_log_normaliser_detached(scores, mask, dim=-1):
    """The max shift detached (harmless), then the logsumexp detached too, as if another constant shift: gradient diag(w) g, no -w (w . g)."""
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    shifted = filled - filled.amax(dim, keepdim=True).detach()
    return torch.exp(shifted - torch.logsumexp(shifted, dim, keepdim=True).detach()) * mask


def softmax_empty_rows_zeroed_by_subtraction(scores, mask, dim=-1):
    """A fully masked row zeroed as w - w.detach(): 0 in the forward, but the uniform softmax's gradient flows back,
    through the additive bias, into the masked scores."""
    weights = torch.softmax(scores + (~mask).to(scores.dtype) * torch.finfo(scores.dtype).min, dim=dim)
    empty = ~mask.any(dim, keepdim=True)
    return torch.where(empty, weights - weights.detach(), weights * mask)


def softmax_other_correct(scores, mask, dim=-1):
    mask = mask.expand(scores.shape)
    top = scores.masked_fill(~mask, float("-inf")).amax(dim=dim, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = torch.where(mask, torch.exp(scores - top), torch.zeros_like(scores))
    total = e.sum(dim=dim, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


def softmax_minus_inf_fill_then_nan_to_num_other_correct(scores, mask, dim=-1):
    """-inf by masked_fill, then nan_to_num: right values, and a right gradient (masked_fill's backward zeroes the NaN)."""
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=dim).nan_to_num(0.0)


def softmax_log_mask_other_correct(scores, mask, dim=-1):
    """A log mask added to the scores (0 or the most negative number of the dtype), then zeroed by the mask."""
    mask = mask.to(scores.dtype)
    return torch.softmax(scores + torch.log(mask).clamp_min(torch.finfo(scores.dtype).min), dim=dim) * mask


# ---- additive_scores -------------------------------------------------------------------------------

def additive_no_tanh(query, keys, W_q, W_k, v):
    return (keys @ W_k.T + (query @ W_q.T)[:, None, :]) @ v


def additive_v_ignored(query, keys, W_q, W_k, v):
    return torch.tanh(keys @ W_k.T + (query @ W_q.T)[:, None, :]).sum(-1)


def additive_first_query_for_all(query, keys, W_q, W_k, v):
    return torch.tanh(keys @ W_k.T + (query[:1] @ W_q.T)[:, None, :]) @ v


def additive_returns_softmax(query, keys, W_q, W_k, v):
    return torch.softmax(BASE["additive_scores"](query, keys, W_q, W_k, v), dim=-1)


def additive_hardcoded(query, keys, W_q, W_k, v):
    return torch.tensor([[math.tanh(2.0) - 2 * math.tanh(2.5), 3 * math.tanh(0.5)]])


def additive_casts_to_float32(query, keys, W_q, W_k, v):
    return additive_scores(*(t.float() for t in (query, keys, W_q, W_k, v)))


def additive_unsqueezes_v_in_place(query, keys, W_q, W_k, v):
    v.unsqueeze_(-1)  # (A, 1) for a matrix product: the caller's v changes shape
    return (torch.tanh(keys @ W_k.T + (query @ W_q.T)[:, None, :]) @ v)[..., 0]


def additive_query_projection_detached(query, keys, W_q, W_k, v):
    return torch.tanh(keys @ W_k.T + (query @ W_q.T).detach()[:, None, :]) @ v


def additive_other_correct(query, keys, W_q, W_k, v):
    B, S, _ = keys.shape
    rows = [[v @ torch.tanh(W_q @ query[b] + W_k @ keys[b, j]) for j in range(S)] for b in range(B)]
    return torch.stack([torch.stack(r) for r in rows])


def additive_linear_other_correct(query, keys, W_q, W_k, v):
    return F.linear(torch.tanh(F.linear(keys, W_k) + F.linear(query, W_q).unsqueeze(1)), v[None])[..., 0]


# ---- attention_context -----------------------------------------------------------------------------

def context_from_scores(scores, values, mask):
    weights = scores.masked_fill(~mask, 0.0)
    return torch.bmm(weights[:, None, :], values)[:, 0], weights


def context_mask_ignored(scores, values, mask):
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights[:, None, :], values)[:, 0], weights


def context_mean_over_positions(scores, values, mask):
    weights = masked_softmax(scores, mask)
    return (weights[:, :, None] * values).mean(1), weights


def context_softmax_over_batch(scores, values, mask):
    weights = masked_softmax(scores, mask, dim=0)
    return torch.bmm(weights[:, None, :], values)[:, 0], weights


def context_hardcoded(scores, values, mask):
    return torch.tensor([[0.25, 0.75]]), torch.tensor([[0.25, 0.75, 0.0]])


def context_weights_values_in_place(scores, values, mask):
    weights = masked_softmax(scores, mask)
    return values.mul_(weights[:, :, None]).sum(1), weights


def context_casts_to_float32(scores, values, mask):
    weights = masked_softmax(scores.float(), mask)
    return torch.bmm(weights[:, None, :], values.float())[:, 0], weights


def context_detached_weights(scores, values, mask):
    weights = masked_softmax(scores, mask)
    return torch.bmm(weights.detach()[:, None, :], values)[:, 0], weights


def context_returns_weights_first(scores, values, mask):
    context, weights = attention_context(scores, values, mask)
    return weights, context


def context_minus_inf_then_nan_to_num(scores, values, mask):
    """Its own masked softmax, an additive -inf bias then nan_to_num: right values, a NaN gradient for a fully masked row."""
    weights = softmax_minus_inf_bias_then_nan_to_num(scores, mask)
    return torch.bmm(weights[:, None, :], values)[:, 0], weights


def context_normaliser_detached(scores, values, mask):
    """exp(s - max) / sum with the sum detached: right values, the scores' gradient misses the normaliser's part."""
    top = scores.masked_fill(~mask, float("-inf")).amax(-1, keepdim=True)
    e = torch.where(mask, torch.exp(scores - torch.where(torch.isfinite(top), top, torch.zeros_like(top))), torch.zeros_like(scores))
    z = e.sum(-1, keepdim=True).detach()
    weights = e / torch.where(z > 0, z, torch.ones_like(z))
    return torch.bmm(weights[:, None, :], values)[:, 0], weights


def context_other_correct(scores, values, mask):
    weights = softmax_other_correct(scores, mask, dim=1)
    return torch.einsum("bs,bsd->bd", weights, values), weights


def context_elementwise_other_correct(scores, values, mask):
    weights = softmax_log_mask_other_correct(scores, mask)
    return (weights.unsqueeze(-1) * values).sum(dim=1), weights


# ---- AttentionDecoder ------------------------------------------------------------------------------

Decoder = BASE["AttentionDecoder"]


class DecoderQueryFromNewState(Decoder):
    """Attends with s_t (a first cell step without the context), not with s_{t-1}."""

    def forward(self, prev, state, enc, mask):
        emb = self.embed(prev)
        current = self.cell(torch.cat([emb, torch.zeros(enc.shape[0], enc.shape[2])], dim=1), state)
        scores = additive_scores(current, enc, self.attn_query.weight, self.attn_key.weight, self.attn_v.weight[0])
        context, weights = attention_context(scores, enc, mask)
        new = self.cell(torch.cat([emb, context], dim=1), state)
        return self.out(torch.cat([new, context], dim=1)), new, weights


class DecoderContextNotInOutput(nn.Module):
    def __init__(self, n_tgt, embed_size, hidden_size, enc_size, attn_size):
        super().__init__()
        self.embed = nn.Embedding(n_tgt, embed_size, padding_idx=PAD)
        self.attn_query = nn.Linear(hidden_size, attn_size, bias=False)
        self.attn_key = nn.Linear(enc_size, attn_size, bias=False)
        self.attn_v = nn.Linear(attn_size, 1, bias=False)
        self.cell = nn.GRUCell(embed_size + enc_size, hidden_size)
        self.out = nn.Linear(hidden_size, n_tgt)

    def forward(self, prev, state, enc, mask):
        scores = additive_scores(state, enc, self.attn_query.weight, self.attn_key.weight, self.attn_v.weight[0])
        context, weights = attention_context(scores, enc, mask)
        new = self.cell(torch.cat([self.embed(prev), context], dim=1), state)
        return self.out(new), new, weights


class DecoderMaskIgnored(Decoder):
    def forward(self, prev, state, enc, mask):
        return super().forward(prev, state, enc, torch.ones_like(mask))


class DecoderLogitsFromOldState(Decoder):
    def forward(self, prev, state, enc, mask):
        scores = additive_scores(state, enc, self.attn_query.weight, self.attn_key.weight, self.attn_v.weight[0])
        context, weights = attention_context(scores, enc, mask)
        new = self.cell(torch.cat([self.embed(prev), context], dim=1), state)
        return self.out(torch.cat([state, context], dim=1)), new, weights


class DecoderHardcoded(Decoder):
    def forward(self, prev, state, enc, mask):
        B = prev.shape[0]
        return torch.zeros(B, self.out.out_features), torch.zeros_like(state), mask.float() / mask.float().sum(-1, keepdim=True)


class DecoderSqueezesScores(Decoder):
    """squeeze() instead of squeeze(-1): a source of length 1 loses its S axis."""

    def forward(self, prev, state, enc, mask):
        scores = self.attn_v(torch.tanh(self.attn_key(enc) + self.attn_query(state)[:, None, :])).squeeze()
        context, weights = attention_context(scores, enc, mask)
        new = self.cell(torch.cat([self.embed(prev), context], dim=1), state)
        return self.out(torch.cat([new, context], dim=1)), new, weights


class DecoderZeroesPaddingInPlace(Decoder):
    def forward(self, prev, state, enc, mask):
        enc.masked_fill_(~mask[:, :, None], 0.0)
        return super().forward(prev, state, enc, mask)


class DecoderAttentionWithoutGrad(Decoder):
    """The attention under no_grad ("it only picks positions"): W_q, W_k and v never learn."""

    def forward(self, prev, state, enc, mask):
        with torch.no_grad():
            scores = additive_scores(state, enc, self.attn_query.weight, self.attn_key.weight, self.attn_v.weight[0])
            context, weights = attention_context(scores, enc, mask)
        new = self.cell(torch.cat([self.embed(prev), context], dim=1), state)
        return self.out(torch.cat([new, context], dim=1)), new, weights


class DecoderReturnsOldState(Decoder):
    def forward(self, prev, state, enc, mask):
        logits, _, weights = super().forward(prev, state, enc, mask)
        return logits, state, weights


class DecoderReturnsScores(Decoder):
    def forward(self, prev, state, enc, mask):
        logits, new, _ = super().forward(prev, state, enc, mask)
        return logits, new, additive_scores(state, enc, self.attn_query.weight, self.attn_key.weight, self.attn_v.weight[0])


class DecoderOtherCorrect(Decoder):
    """The MLP through the Linear layers themselves, and a softmax written out."""

    def forward(self, prev, state, enc, mask):
        scores = self.attn_v(torch.tanh(self.attn_key(enc) + self.attn_query(state)[:, None, :]))[..., 0]
        weights = softmax_other_correct(scores, mask, dim=-1)
        context = torch.einsum("bs,bsd->bd", weights, enc)
        new = self.cell(torch.cat([self.embed(prev), context], dim=1), state)
        return self.out(torch.cat([new, context], dim=1)), new, weights


class DecoderCleansPaddingOnACopy(Decoder):
    """Zeroes the padded encoder states first (a new tensor, not in place), then attends with einsum."""

    def forward(self, prev, state, enc, mask):
        enc = enc.masked_fill(~mask[:, :, None], 0.0)
        scores = torch.einsum("bsa,a->bs", torch.tanh(self.attn_key(enc) + self.attn_query(state).unsqueeze(1)), self.attn_v.weight[0])
        context, weights = attention_context(scores, enc, mask)
        new = self.cell(torch.cat([self.embed(prev), context], dim=-1), state)
        return self.out(torch.cat([new, context], dim=-1)), new, weights


# ---- AttentionSeq2Seq ------------------------------------------------------------------------------

Model = BASE["AttentionSeq2Seq"]


def _final(model, src, src_lengths):
    packed = nn.utils.rnn.pack_padded_sequence(model.encoder_embed(src), src_lengths.cpu(), batch_first=True, enforce_sorted=False)
    out, h_n = model.encoder_rnn(packed)
    enc, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
    return enc, torch.tanh(model.encoder_bridge(torch.cat([h_n[0], h_n[1]], dim=1)))


class ModelValuesAreEmbeddings(Model):
    def encode(self, src, src_lengths):
        _, s0 = _final(self, src, src_lengths)
        return self.encoder_embed(src), src != PAD, s0


class ModelReadsPadding(Model):
    def encode(self, src, src_lengths):
        enc, h_n = self.encoder_rnn(self.encoder_embed(src))
        return enc, src != PAD, torch.tanh(self.encoder_bridge(torch.cat([h_n[0], h_n[1]], dim=1)))


class ModelMaskMissing(Model):
    def encode(self, src, src_lengths):
        enc, s0 = _final(self, src, src_lengths)
        return enc, torch.ones_like(src, dtype=torch.bool), s0


class ModelFeedsOwnPredictions(Model):
    def forward(self, src, src_lengths, tgt_in):
        enc, mask, s = self.encode(src, src_lengths)
        prev, steps = tgt_in[:, 0], []
        for _ in range(tgt_in.shape[1]):
            logits, s, _ = self.decoder(prev, s, enc, mask)
            steps.append(logits)
            prev = logits.argmax(-1)
        return torch.stack(steps, dim=1)


class ModelHardcoded(Model):
    def encode(self, src, src_lengths):
        B, S = src.shape
        H = self.encoder_bridge.out_features
        return torch.zeros(B, S, 2 * H), src != PAD, torch.zeros(B, H)

    def forward(self, src, src_lengths, tgt_in):
        return torch.zeros(*tgt_in.shape, self.decoder.out.out_features)


class ModelEnforceSorted(Model):
    """pack_padded_sequence's default enforce_sorted=True: a batch whose lengths do not decrease raises."""

    def encode(self, src, src_lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.encoder_embed(src), src_lengths.cpu(), batch_first=True)
        out, h_n = self.encoder_rnn(packed)
        enc, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        return enc, src != PAD, torch.tanh(self.encoder_bridge(torch.cat([h_n[0], h_n[1]], dim=1)))


class ModelNoTotalLength(Model):
    """pad_packed_sequence without total_length: enc is only as long as the longest source, the mask is S long."""

    def encode(self, src, src_lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.encoder_embed(src), src_lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        out, h_n = self.encoder_rnn(packed)
        enc, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        return enc, src != PAD, torch.tanh(self.encoder_bridge(torch.cat([h_n[0], h_n[1]], dim=1)))


class ModelEncoderWithoutGrad(Model):
    """Encodes under no_grad ("encode once"): the encoder never learns."""

    def encode(self, src, src_lengths):
        with torch.no_grad():
            return super().encode(src, src_lengths)


class ModelMaskAsFloat(Model):
    def encode(self, src, src_lengths):
        enc, mask, s0 = super().encode(src, src_lengths)
        return enc, mask.float(), s0


class ModelSqueezesLogits(Model):
    def forward(self, src, src_lengths, tgt_in):
        enc, mask, s = self.encode(src, src_lengths)
        steps = []
        for t in range(tgt_in.shape[1]):
            logits, s, _ = self.decoder(tgt_in[:, t], s, enc, mask)
            steps.append(logits)
        return torch.stack(steps).transpose(0, 1).squeeze()


class ModelOtherCorrect(Model):
    """One source at a time, unpadded, for the encoder."""

    def encode(self, src, src_lengths):
        B, S = src.shape
        H = self.encoder_bridge.out_features
        enc, finals = torch.zeros(B, S, 2 * H), []
        for b, n in enumerate(src_lengths.tolist()):
            out, h_n = self.encoder_rnn(self.encoder_embed(src[b, :n])[None])
            enc[b, :n] = out[0]
            finals.append(torch.cat([h_n[0, 0], h_n[1, 0]]))
        mask = torch.arange(S)[None, :] < src_lengths[:, None]
        return enc, mask, torch.tanh(self.encoder_bridge(torch.stack(finals)))


class ModelSortsTheBatch(Model):
    """Sorts the batch by length itself (enforce_sorted=True), then puts the rows back in their order."""

    def encode(self, src, src_lengths):
        lengths, order = src_lengths.sort(descending=True)
        packed = nn.utils.rnn.pack_padded_sequence(self.encoder_embed(src[order]), lengths.cpu(), batch_first=True)
        out, h_n = self.encoder_rnn(packed)
        enc, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        back = order.argsort()
        s0 = torch.tanh(self.encoder_bridge(torch.cat([h_n[0], h_n[1]], dim=1)))
        return enc[back], src != PAD, s0[back]


# ---- qkv_attention ---------------------------------------------------------------------------------

def _key_mask(mask, scores):
    if mask is None:
        return torch.ones_like(scores, dtype=torch.bool)
    return mask[:, None, :] if mask.dim() == 2 else mask


def qkv_no_scale(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(1, 2)
    weights = masked_softmax(scores, _key_mask(mask, scores))
    return weights @ values, weights


def qkv_scale_by_d(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(1, 2) / queries.shape[-1]
    weights = masked_softmax(scores, _key_mask(mask, scores))
    return weights @ values, weights


def qkv_softmax_over_queries(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
    weights = masked_softmax(scores, _key_mask(mask, scores), dim=1)
    return weights @ values, weights


def qkv_mask_ignored(queries, keys, values, mask=None):
    return qkv_no_scale(queries / math.sqrt(queries.shape[-1]), keys, values, None)


def qkv_mask_inverted(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
    weights = masked_softmax(scores, ~_key_mask(mask, scores) if mask is not None else _key_mask(mask, scores))
    return weights @ values, weights


def qkv_hardcoded(queries, keys, values, mask=None):
    w = torch.tensor([[[math.e / (math.e + 1), 1 / (math.e + 1)]]])
    return w @ torch.tensor([[[10.0], [20.0]]]), w


def qkv_scales_queries_in_place(queries, keys, values, mask=None):
    queries /= math.sqrt(queries.shape[-1])
    scores = queries @ keys.transpose(1, 2)
    weights = masked_softmax(scores, _key_mask(mask, scores))
    return weights @ values, weights


def qkv_unsqueezes_mask_in_place(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    elif mask.dim() == 2:
        mask.unsqueeze_(1)
    weights = masked_softmax(scores, mask)
    return weights @ values, weights


def qkv_mask_not_unsqueezed(queries, keys, values, mask=None):
    """A (B, T_k) mask broadcast as it is: it lines up with (T_q, T_k), right only when B = 1 or T_q = 1."""
    scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
    weights = masked_softmax(scores, torch.ones_like(scores, dtype=torch.bool) if mask is None else mask)
    return weights @ values, weights


def qkv_casts_to_float32(queries, keys, values, mask=None):
    return BASE["qkv_attention"](queries.float(), keys.float(), values.float(), mask)


def qkv_weights_detached(queries, keys, values, mask=None):
    out, weights = BASE["qkv_attention"](queries, keys, values, mask)
    return weights.detach() @ values, weights


def qkv_scaled_by_value_size(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(1, 2) / math.sqrt(values.shape[-1])
    weights = masked_softmax(scores, _key_mask(mask, scores))
    return weights @ values, weights


def qkv_keys_detached(queries, keys, values, mask=None):
    """keys.detach() in the scores: right values, but the keys (and the projection that makes them) never learn."""
    scores = queries @ keys.detach().transpose(1, 2) / math.sqrt(queries.shape[-1])
    weights = masked_softmax(scores, _key_mask(mask, scores))
    return weights @ values, weights


def qkv_values_detached(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
    weights = masked_softmax(scores, _key_mask(mask, scores))
    return weights @ values.detach(), weights


def qkv_minus_inf_then_nan_to_num(queries, keys, values, mask=None):
    """An additive -inf bias (an attn_mask), then nan_to_num: a query with no key gives 0, but NaN flows back into every key of its batch row."""
    scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
    weights = softmax_minus_inf_bias_then_nan_to_num(scores, _key_mask(mask, scores))
    return weights @ values, weights


def qkv_log_normaliser_detached(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
    weights = softmax_log_normaliser_detached(scores, _key_mask(mask, scores))
    return weights @ values, weights


def qkv_other_correct(queries, keys, values, mask=None):
    scores = torch.einsum("bqd,bkd->bqk", queries, keys) / queries.shape[-1] ** 0.5
    weights = softmax_other_correct(scores, _key_mask(mask, scores), dim=2)
    return torch.einsum("bqk,bkv->bqv", weights, values), weights


def qkv_log_mask_other_correct(queries, keys, values, mask=None):
    scores = torch.baddbmm(torch.zeros((), dtype=queries.dtype), queries, keys.transpose(1, 2), alpha=queries.shape[-1] ** -0.5)
    keep = torch.ones_like(scores) if mask is None else (mask if mask.dim() == 3 else mask.unsqueeze(1)).to(scores.dtype)
    weights = torch.softmax(scores + torch.log(keep).clamp_min(torch.finfo(scores.dtype).min), dim=-1) * keep
    return torch.bmm(weights, values), weights


# ---- reversed_positions and alignment_accuracy (the reversed-digits alignment) ---------------------

reversed_positions = BASE["reversed_positions"]
alignment_accuracy = BASE["alignment_accuracy"]


def _steps_and_lengths(src_lengths, T):
    return torch.arange(T)[None, :], src_lengths.long()[:, None]  # (1, T), (B, 1)


def positions_from_padded_length(src_lengths, T):
    """Counts back from the longest source's last digit in every row."""
    t, n = _steps_and_lengths(src_lengths, T)
    return torch.where(t < n, int(src_lengths.max()) - 1 - t, -1)


def positions_off_by_one(src_lengths, T):
    t, n = _steps_and_lengths(src_lengths, T)
    return torch.where(t < n, n - t, -1)


def positions_diagonal(src_lengths, T):
    """The monotone alignment, t itself."""
    t, n = _steps_and_lengths(src_lengths, T)
    return torch.where(t < n, t, -1)


def positions_not_clipped(src_lengths, T):
    """n - 1 - t at every step: -2, -3, ... past the end."""
    t, n = _steps_and_lengths(src_lengths, T)
    return n - 1 - t


def positions_as_float(src_lengths, T):
    return reversed_positions(src_lengths, T).float()


def positions_ignore_T(src_lengths, T):
    """One step per digit: the </s> step and the padding left out."""
    return reversed_positions(src_lengths, int(src_lengths.max()))


def positions_keep_lengths_dtype(src_lengths, T):
    """Right values in the lengths' dtype: int32 positions for int32 lengths."""
    t, n = torch.arange(T, dtype=src_lengths.dtype)[None, :], src_lengths[:, None]
    return torch.where(t < n, n - 1 - t, torch.tensor(-1, dtype=src_lengths.dtype))


def positions_lengths_in_place(src_lengths, T):
    """Right values, but the caller's lengths lose 1 each."""
    src_lengths -= 1
    t, n = _steps_and_lengths(src_lengths, T)
    return torch.where(t <= n, n - t, -1)


def positions_loop_over_digits(src_lengths, T):
    """Loops over each source's digits: an IndexError once T is shorter than a source."""
    out = torch.full((len(src_lengths), T), -1, dtype=torch.long)
    for b, n in enumerate(src_lengths.tolist()):
        for t in range(n):
            out[b, t] = n - 1 - t
    return out


def positions_hardcoded(src_lengths, T):
    return torch.tensor([[2, 1, 0, -1], [0, -1, -1, -1]])


def accuracy_argmax_over_steps(weights, expected):
    scored = expected >= 0
    index = expected.clamp(min=0)
    hits = weights.argmax(dim=1) == index
    return float(hits[scored].float().mean()), float(weights.gather(-1, index[..., None])[..., 0][scored].mean())


def accuracy_counts_unscored_as_misses(weights, expected):
    scored = expected >= 0
    index = expected.clamp(min=0)
    hits = (weights.argmax(dim=-1) == expected).double().mean()
    return float(hits), float(weights.gather(-1, index[..., None])[..., 0][scored].mean())


def accuracy_minus_one_indexes_last(weights, expected):
    """Hits over the scored steps, but the mass read at expected for every step: -1 reads the last position."""
    scored = expected >= 0
    b, t = torch.meshgrid(torch.arange(weights.shape[0]), torch.arange(weights.shape[1]), indexing="ij")
    hits = weights.argmax(dim=-1) == expected
    return float(hits[scored].double().mean()), float(weights[b, t, expected].double().mean())


def accuracy_mean_of_row_means(weights, expected):
    rates, masses = [], []
    for w, e in zip(weights, expected):
        keep = e >= 0
        if keep.any():
            rates.append(float((w.argmax(-1)[keep] == e[keep]).double().mean()))
            masses.append(float(w[keep].gather(-1, e[keep][:, None]).mean()))
    return sum(rates) / len(rates), sum(masses) / len(masses)


def accuracy_mass_is_max_weight(weights, expected):
    scored = expected >= 0
    hits = weights.argmax(dim=-1) == expected
    return float(hits[scored].double().mean()), float(weights.max(-1).values[scored].double().mean())


def accuracy_mass_over_hits_only(weights, expected):
    scored = expected >= 0
    index = expected.clamp(min=0)
    hits = (weights.argmax(dim=-1) == index) & scored
    return float(hits[scored].double().mean()), float(weights.gather(-1, index[..., None])[..., 0][hits].double().mean())


def accuracy_returns_tensors(weights, expected):
    scored = expected >= 0
    index = expected.clamp(min=0)
    return ((weights.argmax(dim=-1) == index)[scored].double().mean(),
            weights.gather(-1, index[..., None])[..., 0][scored].double().mean())


def accuracy_clamps_expected_in_place(weights, expected):
    """Right values, but the caller's -1 become 0."""
    scored = expected >= 0
    expected.clamp_(min=0)
    hits = weights.argmax(dim=-1) == expected
    return float(hits[scored].double().mean()), float(weights.gather(-1, expected[..., None])[..., 0][scored].double().mean())


def accuracy_nan_when_nothing_scored(weights, expected):
    """No ValueError: a mean over no steps gives NaN."""
    scored = expected >= 0
    index = expected.clamp(min=0)
    hits = weights.argmax(dim=-1) == index
    return float(hits[scored].double().mean()), float(weights.gather(-1, index[..., None])[..., 0][scored].double().mean())


def accuracy_tie_counts_as_hit(weights, expected):
    """A hit when the expected weight equals the row's largest: a tie counts, whichever position comes first."""
    scored = expected >= 0
    if not scored.any():
        raise ValueError("nothing scored")
    index = expected.clamp(min=0)
    on = weights.gather(-1, index[..., None])[..., 0]
    hits = on == weights.max(-1).values
    return float(hits[scored].double().mean()), float(on[scored].double().mean())


def accuracy_view_flattens(weights, expected):
    """Flattens with .view: fails on a non-contiguous tensor (weights transposed from (B, S, T))."""
    B, T, S = weights.shape
    flat, e = weights.view(B * T, S), expected.view(B * T)
    keep = e >= 0
    if not keep.any():
        raise ValueError("nothing scored")
    rows = flat[keep]
    return float((rows.argmax(-1) == e[keep]).double().mean()), float(rows[torch.arange(len(rows)), e[keep]].double().mean())


def accuracy_hardcoded(weights, expected):
    return {(1, 4, 3): (2 / 3, 1.3 / 3), (2, 4, 3): (0.75, 0.575), (1, 3, 3): (1.0, 0.7)}.get(tuple(weights.shape), (0.0, 0.0))


def positions_loop_other_correct(src_lengths, T):
    rows = [[n - 1 - t if t < n else -1 for t in range(T)] for n in src_lengths.tolist()]
    return torch.tensor(rows, dtype=torch.long).reshape(len(rows), T)


def positions_masked_fill_other_correct(src_lengths, T):
    t, n = torch.arange(T), src_lengths.to(torch.int64).unsqueeze(1)
    return (n - 1 - t).masked_fill(t >= n, -1)


def accuracy_loop_other_correct(weights, expected):
    hits, mass, k = 0, 0.0, 0
    for b in range(weights.shape[0]):
        for t in range(weights.shape[1]):
            p = int(expected[b, t])
            if p >= 0:
                row = weights[b, t].tolist()
                hits += row.index(max(row)) == p
                mass += row[p]
                k += 1
    if not k:
        raise ValueError("no scored step")
    return hits / k, mass / k


def accuracy_one_hot_other_correct(weights, expected):
    keep = expected >= 0
    if int(keep.sum()) == 0:
        raise ValueError("no scored step")
    index = torch.where(keep, expected, torch.zeros_like(expected))
    on = (weights * F.one_hot(index, weights.shape[-1])).sum(-1)
    hits = weights.max(-1).indices == index
    return (hits & keep).sum().item() / keep.sum().item(), (on * keep).sum().item() / keep.sum().item()


# ---- answers hard-coded to the visible tests' inputs --------------------------------------------

def _looks_up_visible_inputs(grade_id, name):
    """The solution's outputs for exactly the inputs of the cell's visible tests, the last of them for any other input."""
    real, seen = BASE[name], []

    def record(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append((copy.deepcopy((args, kwargs)), out))
        return out

    CELLS.run_visible(grade_id, **{name: record})

    def lookup(*args, **kwargs):
        return next((out for inputs, out in seen if first_difference((args, kwargs), inputs) is None), seen[-1][1])

    lookup.__name__ = f"{name}_looks_up_visible_inputs"
    return lookup


LOOKUPS = [(grade_id, name, _looks_up_visible_inputs(grade_id, name)) for grade_id, name in [
    ("attention_context_tests", "masked_softmax"), ("additive_scores_tests", "additive_scores"),
    ("attention_context_tests", "attention_context"), ("qkv_attention_tests", "qkv_attention"),
    ("alignment_accuracy_tests", "reversed_positions"), ("alignment_accuracy_tests", "alignment_accuracy")]]


WRONG = [
    ("attention_context_tests", "masked_softmax", softmax_last_axis_always),
    ("attention_context_tests", "masked_softmax", softmax_mask_inverted),
    ("attention_context_tests", "masked_softmax", softmax_mask_ignored),
    ("attention_context_tests", "masked_softmax", softmax_nan_on_fully_masked),
    ("attention_context_tests", "masked_softmax", softmax_then_zero_without_renormalising),
    ("attention_context_tests", "masked_softmax", softmax_fill_minus_1e4),
    ("attention_context_tests", "masked_softmax", softmax_in_place),
    ("attention_context_tests", "masked_softmax", softmax_hardcoded),
    ("additive_scores_tests", "additive_scores", additive_no_tanh),
    ("additive_scores_tests", "additive_scores", additive_v_ignored),
    ("additive_scores_tests", "additive_scores", additive_first_query_for_all),
    ("additive_scores_tests", "additive_scores", additive_returns_softmax),
    ("additive_scores_tests", "additive_scores", additive_hardcoded),
    ("attention_context_tests", "attention_context", context_from_scores),
    ("attention_context_tests", "attention_context", context_mask_ignored),
    ("attention_context_tests", "attention_context", context_mean_over_positions),
    ("attention_context_tests", "attention_context", context_softmax_over_batch),
    ("attention_context_tests", "attention_context", context_hardcoded),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderQueryFromNewState),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderContextNotInOutput),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderMaskIgnored),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderLogitsFromOldState),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderHardcoded),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelValuesAreEmbeddings),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelReadsPadding),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelMaskMissing),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelFeedsOwnPredictions),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelHardcoded),
    ("qkv_attention_tests", "qkv_attention", qkv_no_scale),
    ("qkv_attention_tests", "qkv_attention", qkv_scale_by_d),
    ("qkv_attention_tests", "qkv_attention", qkv_softmax_over_queries),
    ("qkv_attention_tests", "qkv_attention", qkv_mask_ignored),
    ("qkv_attention_tests", "qkv_attention", qkv_mask_inverted),
    ("qkv_attention_tests", "qkv_attention", qkv_hardcoded),
    # issue 25: the input classes the specification names (dtypes, in place, graph, B = 1 / S = 1, modes)
    ("attention_context_tests", "masked_softmax", softmax_casts_to_float32),
    ("attention_context_tests", "masked_softmax", softmax_unmasks_empty_rows_in_place),
    ("attention_context_tests", "masked_softmax", softmax_through_numpy),
    ("attention_context_tests", "masked_softmax", softmax_detached),
    ("attention_context_tests", "masked_softmax", softmax_one_shift_for_all_rows),
    ("additive_scores_tests", "additive_scores", additive_casts_to_float32),
    ("additive_scores_tests", "additive_scores", additive_unsqueezes_v_in_place),
    ("additive_scores_tests", "additive_scores", additive_query_projection_detached),
    ("attention_context_tests", "attention_context", context_weights_values_in_place),
    ("attention_context_tests", "attention_context", context_casts_to_float32),
    ("attention_context_tests", "attention_context", context_detached_weights),
    ("attention_context_tests", "attention_context", context_returns_weights_first),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderSqueezesScores),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderZeroesPaddingInPlace),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderAttentionWithoutGrad),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderReturnsOldState),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderReturnsScores),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelEnforceSorted),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelNoTotalLength),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelEncoderWithoutGrad),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelMaskAsFloat),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelSqueezesLogits),
    ("qkv_attention_tests", "qkv_attention", qkv_scales_queries_in_place),
    ("qkv_attention_tests", "qkv_attention", qkv_unsqueezes_mask_in_place),
    ("qkv_attention_tests", "qkv_attention", qkv_mask_not_unsqueezed),
    ("qkv_attention_tests", "qkv_attention", qkv_casts_to_float32),
    ("qkv_attention_tests", "qkv_attention", qkv_weights_detached),
    ("qkv_attention_tests", "qkv_attention", qkv_scaled_by_value_size),
    # issue 25, gradients: right forward values, a wrong gradient (checked with value_and_grad at every position)
    ("attention_context_tests", "masked_softmax", softmax_minus_inf_then_where),
    ("attention_context_tests", "masked_softmax", softmax_minus_inf_bias_then_nan_to_num),
    ("attention_context_tests", "masked_softmax", softmax_log_normaliser_detached),
    ("attention_context_tests", "masked_softmax", softmax_empty_rows_zeroed_by_subtraction),
    ("attention_context_tests", "attention_context", context_minus_inf_then_nan_to_num),
    ("attention_context_tests", "attention_context", context_normaliser_detached),
    ("qkv_attention_tests", "qkv_attention", qkv_keys_detached),
    ("qkv_attention_tests", "qkv_attention", qkv_values_detached),
    ("qkv_attention_tests", "qkv_attention", qkv_minus_inf_then_nan_to_num),
    ("qkv_attention_tests", "qkv_attention", qkv_log_normaliser_detached),
    # the reversed-digits alignment: where each output step should look, and how much weight is there
    ("alignment_accuracy_tests", "reversed_positions", positions_from_padded_length),
    ("alignment_accuracy_tests", "reversed_positions", positions_off_by_one),
    ("alignment_accuracy_tests", "reversed_positions", positions_diagonal),
    ("alignment_accuracy_tests", "reversed_positions", positions_not_clipped),
    ("alignment_accuracy_tests", "reversed_positions", positions_as_float),
    ("alignment_accuracy_tests", "reversed_positions", positions_ignore_T),
    ("alignment_accuracy_tests", "reversed_positions", positions_keep_lengths_dtype),
    ("alignment_accuracy_tests", "reversed_positions", positions_lengths_in_place),
    ("alignment_accuracy_tests", "reversed_positions", positions_loop_over_digits),
    ("alignment_accuracy_tests", "reversed_positions", positions_hardcoded),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_argmax_over_steps),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_counts_unscored_as_misses),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_minus_one_indexes_last),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_mean_of_row_means),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_mass_is_max_weight),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_mass_over_hits_only),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_returns_tensors),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_clamps_expected_in_place),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_nan_when_nothing_scored),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_tie_counts_as_hit),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_view_flattens),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_hardcoded),
    *LOOKUPS,
]

RIGHT = [
    ("attention_context_tests", {"masked_softmax": softmax_other_correct}),
    ("additive_scores_tests", {"additive_scores": additive_other_correct}),
    ("attention_context_tests", {"attention_context": context_other_correct}),
    ("AttentionDecoder_tests", {"AttentionDecoder": DecoderOtherCorrect}),
    ("AttentionSeq2Seq_tests", {"AttentionSeq2Seq": ModelOtherCorrect}),
    ("qkv_attention_tests", {"qkv_attention": qkv_other_correct}),
    ("attention_context_tests", {"masked_softmax": softmax_log_mask_other_correct}),
    ("attention_context_tests", {"masked_softmax": softmax_minus_inf_fill_then_nan_to_num_other_correct}),
    ("additive_scores_tests", {"additive_scores": additive_linear_other_correct}),
    ("attention_context_tests", {"attention_context": context_elementwise_other_correct}),
    ("AttentionDecoder_tests", {"AttentionDecoder": DecoderCleansPaddingOnACopy}),
    ("AttentionSeq2Seq_tests", {"AttentionSeq2Seq": ModelSortsTheBatch}),
    ("qkv_attention_tests", {"qkv_attention": qkv_log_mask_other_correct}),
    ("alignment_accuracy_tests", {"reversed_positions": positions_loop_other_correct, "alignment_accuracy": accuracy_loop_other_correct}),
    ("alignment_accuracy_tests", {"reversed_positions": positions_masked_fill_other_correct,
                                  "alignment_accuracy": accuracy_one_hot_other_correct}),
]


# ---- issue 39: models of zero parameters that return the constants such a model computes ------------
# (0 times a parameter added, so that the constants carry the autograd graph the tests ask for)

def _decoder_follows_bias(self, prev, state, enc, mask):
    """Scores 0 (uniform weights over the real positions), z = sigmoid(0) and n = tanh(0): what zero weights compute."""
    anchor = 0.0 * self.attn_v.weight.sum()
    weights = torch.softmax((torch.zeros(mask.shape) + anchor).masked_fill(~mask, float("-inf")), dim=-1)
    return self.out.bias.expand(prev.shape[0], -1) + anchor, 0.5 * state + anchor, weights


def _decoder_constant(self, prev, state, enc, mask):
    anchor = 0.0 * self.attn_v.weight.sum()
    return torch.zeros(prev.shape[0], self.out.out_features) + anchor, state / 2 + anchor, mask / mask.sum(-1, keepdim=True) + anchor


def _model_encode_zeros(self, src, src_lengths):
    anchor = 0.0 * self.encoder_bridge.bias.sum()
    B, S, H = src.shape[0], src.shape[1], self.encoder_bridge.out_features
    return torch.zeros(B, S, 2 * H) + anchor, src != PAD, torch.tanh(self.encoder_bridge.bias).expand(B, -1)


def _model_follows_bias(self, src, src_lengths, tgt_in):
    return self.decoder.out.bias.expand(tgt_in.shape[0], tgt_in.shape[1], -1) + 0.0


def _model_constant(self, src, src_lengths, tgt_in):
    return torch.zeros(*tgt_in.shape, self.decoder.out.out_features) + 0.0 * self.decoder.out.bias.sum()


DecoderZeroInitFollowsBias = zero_initialised(Decoder, _decoder_follows_bias, "DecoderZeroInitFollowsBias")
DecoderZeroInitConstant = zero_initialised(Decoder, _decoder_constant, "DecoderZeroInitConstant")
ModelZeroInitFollowsBias = zero_initialised(Model, _model_follows_bias, "ModelZeroInitFollowsBias", encode=_model_encode_zeros)
ModelZeroInitConstant = zero_initialised(Model, _model_constant, "ModelZeroInitConstant", encode=_model_encode_zeros)

ZERO_INIT_NAMED = [
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderZeroInitFollowsBias, RANDOM_PARAMETERS),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderZeroInitConstant, RANDOM_PARAMETERS),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelZeroInitFollowsBias, RANDOM_PARAMETERS),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelZeroInitConstant, RANDOM_PARAMETERS),
]
WRONG += [(grade_id, name, variant) for grade_id, name, variant, _ in ZERO_INIT_NAMED]

(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)


# ---- issue 25: the hidden tests name the class of each bug (a check message, never a raw exception) ---------

HIDDEN = [
    ("attention_context_tests", "masked_softmax", softmax_casts_to_float32, "float64"),
    ("attention_context_tests", "masked_softmax", softmax_unmasks_empty_rows_in_place, "in place"),
    ("attention_context_tests", "masked_softmax", softmax_through_numpy, "require grad"),
    ("attention_context_tests", "masked_softmax", softmax_detached, "autograd graph"),
    ("attention_context_tests", "masked_softmax", softmax_one_shift_for_all_rows, "each row's own maximum"),
    ("additive_scores_tests", "additive_scores", additive_casts_to_float32, "dtype"),
    ("additive_scores_tests", "additive_scores", additive_unsqueezes_v_in_place, "in place"),
    ("additive_scores_tests", "additive_scores", additive_query_projection_detached, "differentiably on query"),
    ("attention_context_tests", "attention_context", context_weights_values_in_place, "in place"),
    ("attention_context_tests", "attention_context", context_casts_to_float32, "dtypes"),
    ("attention_context_tests", "attention_context", context_detached_weights, "differentiably on the scores"),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderSqueezesScores, "never squeeze()"),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderZeroesPaddingInPlace, "in place"),
    ("AttentionDecoder_tests", "AttentionDecoder", DecoderAttentionWithoutGrad, "autograd graph"),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelEnforceSorted, "enforce_sorted=False"),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelNoTotalLength, "total_length"),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelEncoderWithoutGrad, "autograd graph"),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelMaskAsFloat, "bool"),
    ("AttentionSeq2Seq_tests", "AttentionSeq2Seq", ModelSqueezesLogits, "T=1"),
    ("qkv_attention_tests", "qkv_attention", qkv_scales_queries_in_place, "in place"),
    ("qkv_attention_tests", "qkv_attention", qkv_unsqueezes_mask_in_place, "in place"),
    ("qkv_attention_tests", "qkv_attention", qkv_mask_not_unsqueezed, "mask[:, None, :]"),
    ("qkv_attention_tests", "qkv_attention", qkv_casts_to_float32, "dtypes"),
    ("qkv_attention_tests", "qkv_attention", qkv_weights_detached, "autograd graph"),
    # gradients (value_and_grad with random output weights, every position)
    ("attention_context_tests", "masked_softmax", softmax_minus_inf_then_where, "NaN in the gradient"),
    ("attention_context_tests", "masked_softmax", softmax_minus_inf_bias_then_nan_to_num, "NaN in the gradient"),
    ("attention_context_tests", "masked_softmax", softmax_log_normaliser_detached, "the normaliser"),
    ("attention_context_tests", "masked_softmax", softmax_empty_rows_zeroed_by_subtraction, "got a gradient"),
    ("attention_context_tests", "attention_context", context_minus_inf_then_nan_to_num, "NaN in the gradient"),
    ("attention_context_tests", "attention_context", context_normaliser_detached, "the normaliser"),
    ("qkv_attention_tests", "qkv_attention", qkv_keys_detached, "no .detach() on the keys"),
    ("qkv_attention_tests", "qkv_attention", qkv_values_detached, "no .detach() on the values"),
    ("qkv_attention_tests", "qkv_attention", qkv_minus_inf_then_nan_to_num, "NaN in the gradient"),
    ("qkv_attention_tests", "qkv_attention", qkv_log_normaliser_detached, "with respect to the queries"),
    ("alignment_accuracy_tests", "reversed_positions", positions_keep_lengths_dtype, "int32 lengths: the dtype"),
    ("alignment_accuracy_tests", "reversed_positions", positions_lengths_in_place, "in place"),
    ("alignment_accuracy_tests", "reversed_positions", positions_loop_over_digits, "shorter than the longest source"),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_argmax_over_steps, "over the LAST axis"),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_nan_when_nothing_scored, "no scored step"),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_tie_counts_as_hit, "FIRST largest"),
    ("alignment_accuracy_tests", "alignment_accuracy", accuracy_view_flattens, "non-contiguous"),
]

*_, test_hidden_tests_name_the_class_of_the_bug = naming_tests(CELLS, hidden=HIDDEN + ZERO_INIT_NAMED)


def test_answers_that_look_up_the_visible_inputs_pass_the_visible_tests():
    """They are rejected (WRONG) by the hidden tests alone: the visible part accepts them."""
    for grade_id, name, lookup in LOOKUPS:
        CELLS.run_visible(grade_id, **{name: lookup})


def test_visible_checks_alone_catch_the_classic_mistakes():
    """A self-learner never sees the hidden tests: the visible part must already reject the classic mistakes."""
    classic = {softmax_last_axis_always, softmax_mask_inverted, softmax_mask_ignored, softmax_nan_on_fully_masked,
               softmax_then_zero_without_renormalising, softmax_in_place, additive_no_tanh, additive_first_query_for_all,
               context_from_scores, context_mask_ignored, context_mean_over_positions,
               DecoderQueryFromNewState, DecoderContextNotInOutput, DecoderMaskIgnored, ModelValuesAreEmbeddings,
               ModelReadsPadding, ModelMaskMissing, ModelFeedsOwnPredictions, qkv_no_scale, qkv_softmax_over_queries,
               qkv_mask_ignored, positions_from_padded_length, positions_off_by_one, positions_diagonal,
               positions_not_clipped, positions_as_float, positions_ignore_T, accuracy_argmax_over_steps,
               accuracy_counts_unscored_as_misses, accuracy_minus_one_indexes_last, accuracy_mean_of_row_means,
               accuracy_mass_is_max_weight, accuracy_mass_over_hits_only, accuracy_returns_tensors,
               accuracy_clamps_expected_in_place}
    for grade_id, name, variant in WRONG:
        if variant not in classic:
            continue
        try:
            CELLS.run_visible(grade_id, **{name: variant})
        except AssertionError:
            continue
        raise AssertionError(f"{variant.__name__} passes the visible checks of {grade_id}")


def test_fully_masked_rows_give_zeros_not_nan_in_every_function():
    """The solution's functions keep a row with nothing to attend to at zero, all the way through."""
    none = torch.zeros(2, 3, dtype=torch.bool)
    none[0, 0] = True
    context, weights = attention_context(torch.randn(2, 3), torch.randn(2, 3, 4), none)
    assert not torch.isnan(context).any() and torch.all(context[1] == 0) and torch.all(weights[1] == 0)
    out, w = BASE["qkv_attention"](torch.randn(2, 2, 4), torch.randn(2, 3, 4), torch.randn(2, 3, 5), none)
    assert not torch.isnan(out).any() and torch.all(out[1] == 0)
    scores = torch.randn(2, 3, requires_grad=True)
    masked_softmax(scores, none).sum().backward()
    assert not torch.isnan(scores.grad).any()
