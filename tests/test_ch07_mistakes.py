"""Chapter 7's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function (or class) of the solution for a variant and runs the exercise's
whole test cell (visible and hidden tests) against it.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from mistakes import GradedCells, mistake_tests

CHAPTER = "07-attention"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base
PAD, BOS = BASE["PAD"], BASE["BOS"]
masked_softmax = BASE["masked_softmax"]
additive_scores = BASE["additive_scores"]
attention_context = BASE["attention_context"]


# ---- masked_softmax --------------------------------------------------------------------------------

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


def softmax_other_correct(scores, mask, dim=-1):
    mask = mask.expand(scores.shape)
    top = scores.masked_fill(~mask, float("-inf")).amax(dim=dim, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = torch.where(mask, torch.exp(scores - top), torch.zeros_like(scores))
    total = e.sum(dim=dim, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


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


def additive_other_correct(query, keys, W_q, W_k, v):
    B, S, _ = keys.shape
    rows = [[v @ torch.tanh(W_q @ query[b] + W_k @ keys[b, j]) for j in range(S)] for b in range(B)]
    return torch.stack([torch.stack(r) for r in rows])


# ---- dot_scores / general_scores -------------------------------------------------------------------

def dot_scaled(query, keys):
    return torch.einsum("bd,bsd->bs", query, keys) / math.sqrt(query.shape[-1])


def general_transposed(query, keys, W):
    return torch.einsum("bd,bsd->bs", query, keys @ W)  # k^T W q: the two sides swapped


def general_query_only_on_left(query, keys, W):
    return torch.einsum("bd,bsd->bs", query @ W, keys) if W.shape[0] != W.shape[1] else torch.einsum("bd,bsd->bs", query @ W.T, keys)


def dot_hardcoded(query, keys):
    return torch.tensor([[3.0, 3.0]])


def dot_other_correct(query, keys):
    return torch.bmm(keys, query[:, :, None])[:, :, 0]


def general_other_correct(query, keys, W):
    return torch.bmm(keys @ W.T, query[:, :, None])[:, :, 0]


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


def context_other_correct(scores, values, mask):
    weights = softmax_other_correct(scores, mask, dim=1)
    return torch.einsum("bs,bsd->bd", weights, values), weights


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


class DecoderOtherCorrect(Decoder):
    """The MLP through the Linear layers themselves, and a softmax written out."""

    def forward(self, prev, state, enc, mask):
        scores = self.attn_v(torch.tanh(self.attn_key(enc) + self.attn_query(state)[:, None, :]))[..., 0]
        weights = softmax_other_correct(scores, mask, dim=-1)
        context = torch.einsum("bs,bsd->bd", weights, enc)
        new = self.cell(torch.cat([self.embed(prev), context], dim=1), state)
        return self.out(torch.cat([new, context], dim=1)), new, weights


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


def qkv_other_correct(queries, keys, values, mask=None):
    scores = torch.einsum("bqd,bkd->bqk", queries, keys) / queries.shape[-1] ** 0.5
    weights = softmax_other_correct(scores, _key_mask(mask, scores), dim=2)
    return torch.einsum("bqk,bkv->bqv", weights, values), weights


WRONG = [
    ("masked_softmax_tests", "masked_softmax", softmax_last_axis_always),
    ("masked_softmax_tests", "masked_softmax", softmax_mask_inverted),
    ("masked_softmax_tests", "masked_softmax", softmax_mask_ignored),
    ("masked_softmax_tests", "masked_softmax", softmax_nan_on_fully_masked),
    ("masked_softmax_tests", "masked_softmax", softmax_then_zero_without_renormalising),
    ("masked_softmax_tests", "masked_softmax", softmax_fill_minus_1e4),
    ("masked_softmax_tests", "masked_softmax", softmax_in_place),
    ("masked_softmax_tests", "masked_softmax", softmax_hardcoded),
    ("additive_scores_tests", "additive_scores", additive_no_tanh),
    ("additive_scores_tests", "additive_scores", additive_v_ignored),
    ("additive_scores_tests", "additive_scores", additive_first_query_for_all),
    ("additive_scores_tests", "additive_scores", additive_returns_softmax),
    ("additive_scores_tests", "additive_scores", additive_hardcoded),
    ("multiplicative_scores_tests", "dot_scores", dot_scaled),
    ("multiplicative_scores_tests", "general_scores", general_transposed),
    ("multiplicative_scores_tests", "general_scores", general_query_only_on_left),
    ("multiplicative_scores_tests", "dot_scores", dot_hardcoded),
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
]

RIGHT = [
    ("masked_softmax_tests", {"masked_softmax": softmax_other_correct}),
    ("additive_scores_tests", {"additive_scores": additive_other_correct}),
    ("multiplicative_scores_tests", {"dot_scores": dot_other_correct, "general_scores": general_other_correct}),
    ("attention_context_tests", {"attention_context": context_other_correct}),
    ("AttentionDecoder_tests", {"AttentionDecoder": DecoderOtherCorrect}),
    ("AttentionSeq2Seq_tests", {"AttentionSeq2Seq": ModelOtherCorrect}),
    ("qkv_attention_tests", {"qkv_attention": qkv_other_correct}),
]

(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)


def test_visible_checks_alone_catch_the_classic_mistakes():
    """A self-learner never sees the hidden tests: the visible part must already reject the classic mistakes."""
    classic = {softmax_last_axis_always, softmax_mask_inverted, softmax_mask_ignored, softmax_nan_on_fully_masked,
               softmax_then_zero_without_renormalising, softmax_in_place, additive_no_tanh, additive_first_query_for_all,
               dot_scaled, general_transposed, context_from_scores, context_mask_ignored, context_mean_over_positions,
               DecoderQueryFromNewState, DecoderContextNotInOutput, DecoderMaskIgnored, ModelValuesAreEmbeddings,
               ModelReadsPadding, ModelMaskMissing, ModelFeedsOwnPredictions, qkv_no_scale, qkv_softmax_over_queries,
               qkv_mask_ignored}
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
