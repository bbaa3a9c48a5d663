"""Chapter 8's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function (or class) of the solution for a variant and runs the exercise's
whole test cell (visible and hidden tests) against it.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from mistakes import RANDOM_PARAMETERS, GradedCells, mistake_tests, naming_tests, zero_initialised

CHAPTER = "08-transformers"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base
PAD, BOS, EOS = BASE["PAD"], BASE["BOS"], BASE["EOS"]
split_heads, merge_heads = BASE["split_heads"], BASE["merge_heads"]
causal_mask, padding_mask, update_cache = BASE["causal_mask"], BASE["padding_mask"], BASE["update_cache"]


# ---- LayerNorm from scratch (issue 24: the new exercise; chapter 7's attention, the masks and the cache's helper are given) --
# The classic mistakes first: each fails a visible check that names it (VISIBLE below).

def ln_over_the_batch(x, gamma, beta, eps=1e-5):      # statistics over dim 0 (the batch), not the features
    mean = x.mean(dim=0, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=0, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def ln_over_dim_1(x, gamma, beta, eps=1e-5):          # dim=1: the features of a (N, D) batch, the TIME axis of (B, L, D)
    mean = x.mean(dim=1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def ln_over_everything(x, gamma, beta, eps=1e-5):
    mean, var = x.mean(), x.var(unbiased=False)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def ln_unbiased_variance(x, gamma, beta, eps=1e-5):   # torch.var's default divides by D - 1
    mean = x.mean(-1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + eps) + beta


def ln_eps_outside_sqrt(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    std = x.std(-1, unbiased=False, keepdim=True)
    return gamma * (x - mean) / (std + eps) + beta


def ln_no_eps(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    return gamma * (x - mean) / x.std(-1, unbiased=False, keepdim=True) + beta


def ln_gamma_beta_swapped(x, gamma, beta, eps=1e-5):
    return BASE["layer_norm"](x, beta, gamma, eps)


def ln_ignores_gamma_beta(x, gamma, beta, eps=1e-5):
    return BASE["layer_norm"](x, torch.ones_like(gamma), torch.zeros_like(beta), eps)


def ln_in_place(x, gamma, beta, eps=1e-5):
    var = x.var(-1, unbiased=False, keepdim=True)
    x -= x.mean(-1, keepdim=True)
    x /= torch.sqrt(var + eps)
    return gamma * x + beta


def ln_no_keepdim(x, gamma, beta, eps=1e-5):          # (N,) statistics against (N, D): a shape error, or silently wrong
    mean = x.mean(-1)
    var = ((x - mean) ** 2).mean(-1)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def ln_hardcoded(x, gamma, beta, eps=1e-5):
    """Looks up the visible inputs' shapes ((2, 4), (1, 4) and (2, 3, 5)): right there, x itself elsewhere."""
    if tuple(x.shape) in {(2, 4), (1, 4), (2, 3, 5)}:
        return BASE["layer_norm"](x, gamma, beta, eps)
    return x.clone()


# Mistakes that only the hidden tests meet (HIDDEN below names them).

def ln_one_pass_variance(x, gamma, beta, eps=1e-5):  # E[x^2] - E[x]^2: cancels for large offsets
    mean = x.mean(-1, keepdim=True)
    var = (x * x).mean(-1, keepdim=True) - mean * mean
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def ln_float32(x, gamma, beta, eps=1e-5):
    return BASE["layer_norm"](x.float(), gamma.float(), beta.float(), eps)


def ln_detached_statistics(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True).detach()
    var = ((x - mean) ** 2).mean(-1, keepdim=True).detach()
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def ln_default_eps_1e_8(x, gamma, beta, eps=1e-8):
    return BASE["layer_norm"](x, gamma, beta, eps)


def ln_numpy(x, gamma, beta, eps=1e-5):
    a = x.detach().numpy()
    m = a.mean(-1, keepdims=True)
    out = (a - m) / np.sqrt(a.var(-1, keepdims=True) + eps)
    return gamma * torch.from_numpy(out) + beta


def ln_2d_only(x, gamma, beta, eps=1e-5):       # a loop over rows: a 1-D x (one row) breaks it
    rows = [BASE["layer_norm"](r, gamma, beta, eps) for r in x]
    return torch.stack(rows)


# Correct, written differently.

def ln_var_mean_rsqrt(x, gamma, beta, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    return torch.addcmul(beta, (x - mean) * torch.rsqrt(var + eps), gamma)


def ln_by_sums(x, gamma, beta, eps=1e-5):
    D = x.shape[-1]
    centred = x - x.sum(-1, keepdim=True) / D
    return centred / (centred.pow(2).sum(-1, keepdim=True) / D + eps) ** 0.5 * gamma + beta


# ---- multi-head attention ---------------------------------------------------------------------

class _MHA(BASE["MultiHeadAttention"]):
    order = (0, 1, 2)
    scale_by_model = False
    use_out = True
    naive_split = False
    use_mask = True

    def forward(self, query, key, value, mask=None, cache=None):
        W, b = self.in_proj_weight.chunk(3), self.in_proj_bias.chunk(3)
        qi, ki, vi = self.order
        split = (lambda t: t.reshape(t.shape[0], self.heads, t.shape[1], -1)) if self.naive_split else (
            lambda t: split_heads(t, self.heads))
        q, k, v = split(F.linear(query, W[qi], b[qi])), split(F.linear(key, W[ki], b[ki])), split(F.linear(value, W[vi], b[vi]))
        if cache is not None:
            k, v = update_cache(cache, k, v)
        d = self.d_model if self.scale_by_model else q.shape[-1]
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        if mask is not None and self.use_mask:
            scores = scores.masked_fill(~mask, float("-inf"))
        w = torch.softmax(scores, -1)
        out = merge_heads(self.dropout(w) @ v)
        return (self.out_proj(out) if self.use_out else out), w


class MHAScaledByDModel(_MHA):
    scale_by_model = True


class MHAKeysFirst(_MHA):
    order = (1, 0, 2)


class MHANoOutProj(_MHA):
    use_out = False


class MHAPlainViewHeads(_MHA):
    naive_split = True


class MHAIgnoresMask(_MHA):
    use_mask = False


class MHAOtherCorrect(BASE["MultiHeadAttention"]):
    def forward(self, query, key, value, mask=None, cache=None):
        D, h = self.d_model, self.heads
        d = D // h
        q_all = query @ self.in_proj_weight[:D].T + self.in_proj_bias[:D]
        k_all = key @ self.in_proj_weight[D:2 * D].T + self.in_proj_bias[D:2 * D]
        v_all = value @ self.in_proj_weight[2 * D:].T + self.in_proj_bias[2 * D:]
        heads, weights = [], []
        for i in range(h):
            part = slice(i * d, (i + 1) * d)
            q, k, v = q_all[..., part], k_all[..., part], v_all[..., part]
            if cache is not None:
                store = cache.setdefault(i, {})
                k, v = (torch.cat([store["k"], k], 1), torch.cat([store["v"], v], 1)) if "k" in store else (k, v)
                store["k"], store["v"] = k, v
            s = q @ k.transpose(1, 2) / math.sqrt(d)
            if mask is not None:
                m = mask.expand(query.shape[0], h, query.shape[1], k.shape[1])[:, i]
                s = s.masked_fill(~m, float("-inf"))
            w = s.softmax(-1)
            weights.append(w)
            heads.append(self.dropout(w) @ v)
        return self.out_proj(torch.cat(heads, -1)), torch.stack(weights, 1)


# ---- positional encoding ----------------------------------------------------------------------

def pe_concatenated(length, d_model):
    if d_model % 2:
        raise ValueError("odd")
    p = torch.arange(length, dtype=torch.float32)[:, None]
    rates = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    return torch.cat([torch.sin(p * rates), torch.cos(p * rates)], dim=1)


def pe_exponent_i_over_d(length, d_model):
    if d_model % 2:
        raise ValueError("odd")
    p = torch.arange(length, dtype=torch.float32)[:, None]
    rates = 10000.0 ** (-torch.arange(d_model // 2, dtype=torch.float32) / d_model)
    pe = torch.zeros(length, d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(p * rates), torch.cos(p * rates)
    return pe


def pe_sin_and_cos_swapped(length, d_model):
    pe = BASE["sinusoidal_encoding"](length, d_model)
    out = pe.clone()
    out[:, 0::2], out[:, 1::2] = pe[:, 1::2], pe[:, 0::2]
    return out


def pe_hardcoded(length, d_model):
    if d_model % 2:
        raise ValueError("odd")
    pe = torch.zeros(length, d_model)
    p = torch.arange(length, dtype=torch.float32)
    pe[:, 0], pe[:, 1] = torch.sin(p), torch.cos(p)
    if length > 7 and d_model == 8:
        pe[7, 2], pe[7, 7] = math.sin(7 / 10000 ** (2 / 8)), math.cos(7 / 10000 ** (6 / 8))
    return pe


def pe_other_correct(length, d_model):
    if d_model % 2:
        raise ValueError("d_model must be even")
    pe = np.zeros((length, d_model))
    for p in range(length):
        for i in range(0, d_model, 2):
            angle = p / 10000 ** (i / d_model)
            pe[p, i], pe[p, i + 1] = math.sin(angle), math.cos(angle)
    return torch.tensor(pe, dtype=torch.float32)


# ---- encoder block ----------------------------------------------------------------------------

class EncoderPostLN(BASE["EncoderBlock"]):
    def forward(self, x, mask=None):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, mask)[0]))
        return self.norm2(x + self.dropout(self.ff(x)))


class EncoderResidualAfterNorm(BASE["EncoderBlock"]):
    def forward(self, x, mask=None):
        x = self.norm1(x)
        x = x + self.dropout(self.self_attn(x, x, x, mask)[0])
        x = self.norm2(x)
        return x + self.dropout(self.ff(x))


class EncoderIgnoresMask(BASE["EncoderBlock"]):
    def forward(self, x, mask=None):
        h = self.norm1(x)
        x = x + self.dropout(self.self_attn(h, h, h)[0])
        return x + self.dropout(self.ff(self.norm2(x)))


class EncoderOtherCorrect(BASE["EncoderBlock"]):
    def forward(self, x, mask=None):
        for norm, sub in ((self.norm1, lambda h: self.self_attn(h, h, h, mask)[0]), (self.norm2, self.ff)):
            x = x + self.dropout(sub(norm(x)))
        return x


# ---- decoder block ----------------------------------------------------------------------------

class DecoderIgnoresCausalMask(BASE["DecoderBlock"]):
    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        return super().forward(y, memory, None, memory_mask, cache)


class DecoderCrossAttendsToItself(BASE["DecoderBlock"]):
    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        h = self.norm1(y)
        y = y + self.self_attn(h, h, h, tgt_mask, cache)[0]
        h = self.norm2(y)
        y = y + self.cross_attn(h, h, h, tgt_mask)[0]
        return y + self.ff(self.norm3(y))


class DecoderIgnoresMemoryMask(BASE["DecoderBlock"]):
    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        return super().forward(y, memory, tgt_mask, None, cache)


class DecoderPostLN(BASE["DecoderBlock"]):
    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        y = self.norm1(y + self.self_attn(y, y, y, tgt_mask, cache)[0])
        y = self.norm2(y + self.cross_attn(y, memory, memory, memory_mask)[0])
        return self.norm3(y + self.ff(y))


class DecoderOtherCorrect(BASE["DecoderBlock"]):
    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        a = self.norm1(y)
        y = self.dropout(self.self_attn(a, a, a, mask=tgt_mask, cache=cache)[0]) + y
        y = self.dropout(self.cross_attn(self.norm2(y), memory, memory, mask=memory_mask)[0]) + y
        return self.dropout(self.ff(self.norm3(y))) + y


# ---- the whole Transformer --------------------------------------------------------------------

class _Transformer(BASE["Transformer"]):
    scale = True
    mask_future = True
    use_offset = True

    def decode(self, tgt_in, memory, memory_mask, caches=None, offset=0):
        T = tgt_in.shape[1]
        start = offset if self.use_offset else 0
        y = self.dropout(self.tgt_embed(tgt_in) * (math.sqrt(self.d_model) if self.scale else 1) + self.pe[start:start + T])
        mask = causal_mask(T) if self.causal and self.mask_future and caches is None else None
        for i, block in enumerate(self.decoder):
            y = block(y, memory, mask, memory_mask, None if caches is None else caches[i])
        return self.out(self.dec_norm(y))


class TransformerNoEmbeddingScale(_Transformer):
    scale = False


class TransformerNoCausalMask(_Transformer):
    mask_future = False


class TransformerCachedPositionsFromZero(_Transformer):
    use_offset = False


class TransformerOtherCorrect(BASE["Transformer"]):
    def encode(self, src, src_lengths):
        keep = (torch.arange(src.shape[1])[None, :] < src_lengths[:, None])[:, None, None, :]
        x = self.src_embed(src) * self.d_model ** 0.5 + self.pe[: src.shape[1]]
        for block in self.encoder:
            x = block(self.dropout(x) if block is self.encoder[0] else x, keep)
        return self.enc_norm(x), keep

    def decode(self, tgt_in, memory, memory_mask, caches=None, offset=0):
        positions = torch.arange(offset, offset + tgt_in.shape[1])
        y = self.dropout(self.tgt_embed(tgt_in) * self.d_model ** 0.5 + self.pe[positions])
        caches = caches if caches is not None else [None] * len(self.decoder)
        mask = None
        if caches[0] is None and self.causal:
            mask = positions[None, :] <= positions[:, None]
        for block, cache in zip(self.decoder, caches):
            y = block(y, memory, mask, memory_mask, cache)
        return self.out(self.dec_norm(y))


# ---- greedy decoding --------------------------------------------------------------------------

def _greedy(model, src, src_lengths, max_len, use_cache=True, *, keep_eos=False, offset_zero=False, no_stop=False):
    B = src.shape[0]
    out, done = [[] for _ in range(B)], [False] * B
    with torch.no_grad():
        memory, mask = model.encode(src, src_lengths)
        prefix = torch.full((B, 1), BOS, dtype=torch.long)
        caches = [{} for _ in model.decoder]
        for t in range(max_len):
            if use_cache:
                logits = model.decode(prefix[:, -1:], memory, mask, caches, offset=0 if offset_zero else t)
            else:
                logits = model.decode(prefix, memory, mask)
            nxt = logits[:, -1].argmax(-1)
            for b, tok in enumerate(nxt.tolist()):
                if no_stop:
                    out[b].append(tok)
                elif not done[b]:
                    if tok == EOS:
                        done[b] = True
                        if keep_eos:
                            out[b].append(tok)
                    else:
                        out[b].append(tok)
            prefix = torch.cat([prefix, nxt[:, None]], 1)
    return out


def greedy_keeps_eos(model, src, src_lengths, max_len, use_cache=True):
    return _greedy(model, src, src_lengths, max_len, use_cache, keep_eos=True)


def greedy_cache_positions_from_zero(model, src, src_lengths, max_len, use_cache=True):
    return _greedy(model, src, src_lengths, max_len, use_cache, offset_zero=True)


def greedy_never_stops(model, src, src_lengths, max_len, use_cache=True):
    return _greedy(model, src, src_lengths, max_len, use_cache, no_stop=True)


def greedy_first_position(model, src, src_lengths, max_len, use_cache=True):
    B = src.shape[0]
    out, done = [[] for _ in range(B)], [False] * B
    with torch.no_grad():
        memory, mask = model.encode(src, src_lengths)
        prefix = torch.full((B, 1), BOS, dtype=torch.long)
        for t in range(max_len):
            nxt = model.decode(prefix, memory, mask)[:, 0].argmax(-1)
            for b, tok in enumerate(nxt.tolist()):
                if not done[b]:
                    done[b] = tok == EOS
                    if not done[b]:
                        out[b].append(tok)
            prefix = torch.cat([prefix, nxt[:, None]], 1)
    return out


def greedy_other_correct(model, src, src_lengths, max_len, use_cache=True):
    with torch.no_grad():
        memory, mask = model.encode(src, src_lengths)
        tokens = [[BOS] for _ in range(src.shape[0])]
        caches = [dict() for _ in range(len(model.decoder))]
        alive = set(range(src.shape[0]))
        for t in range(max_len):
            if not alive:
                break
            if use_cache:
                step = torch.tensor([[row[-1]] for row in tokens])
                logits = model.decode(step, memory, mask, caches, t)[:, 0]
            else:
                logits = model.decode(torch.tensor(tokens), memory, mask)[:, t]
            best = logits.max(-1).indices
            for b in range(len(tokens)):
                tokens[b].append(int(best[b]))
                if int(best[b]) == EOS:
                    alive.discard(b)
    result = []
    for row in tokens:
        row = row[1:]
        result.append(row[: row.index(EOS)] if EOS in row else row)
    return result


# ---- issue 25: dtypes, arguments changed in place, modes (dropout, cache, causal=False), edges, ties ----







class MHADropoutAlwaysOn(_MHA):
    def forward(self, query, key, value, mask=None, cache=None):
        self.dropout.train()  # F.dropout(w, p) with its default training=True: dropout in eval mode too
        return super().forward(query, key, value, mask, cache)


class MHANoDropout(_MHA):
    def forward(self, query, key, value, mask=None, cache=None):
        self.dropout.eval()
        return super().forward(query, key, value, mask, cache)


class MHADropoutOnOutput(BASE["MultiHeadAttention"]):
    def forward(self, query, key, value, mask=None, cache=None):
        p, self.dropout.p = self.dropout.p, 0.0
        out, w = super().forward(query, key, value, mask, cache)
        self.dropout.p = p
        return self.dropout(out), w


class MHADropoutBeforeOutProj(BASE["MultiHeadAttention"]):
    def forward(self, query, key, value, mask=None, cache=None):
        W, b = self.in_proj_weight.chunk(3), self.in_proj_bias.chunk(3)
        q, k, v = (split_heads(F.linear(t, W[i], b[i]), self.heads) for i, t in enumerate((query, key, value)))
        if cache is not None:
            k, v = update_cache(cache, k, v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        w = torch.softmax(scores, -1)
        return self.out_proj(self.dropout(merge_heads(w @ v))), w


class MHAWithoutGraph(BASE["MultiHeadAttention"]):
    def forward(self, query, key, value, mask=None, cache=None):
        with torch.no_grad():
            return super().forward(query, key, value, mask, cache)


class MHAIgnoresCache(BASE["MultiHeadAttention"]):
    def forward(self, query, key, value, mask=None, cache=None):
        return super().forward(query, key, value, mask, None)


class MHADiscardsUpdatedCache(_MHA):
    def forward(self, query, key, value, mask=None, cache=None):
        W, b = self.in_proj_weight.chunk(3), self.in_proj_bias.chunk(3)
        q, k, v = (split_heads(F.linear(t, W[i], b[i]), self.heads) for i, t in enumerate((query, key, value)))
        if cache is not None:
            update_cache(cache, k, v)  # the return value (old and new keys) is thrown away
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        w = torch.softmax(scores, -1)
        return self.out_proj(merge_heads(self.dropout(w) @ v)), w


def pe_float64(length, d_model):
    if d_model % 2:
        raise ValueError("odd")
    p = np.arange(length)[:, None]
    angle = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((length, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return torch.from_numpy(pe)


def pe_reshape_minus_one(length, d_model):
    if d_model % 2:
        raise ValueError("odd")
    p = torch.arange(length, dtype=torch.float32)[:, None]
    angle = p * 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    return torch.stack([torch.sin(angle), torch.cos(angle)], -1).reshape(length, -1)


class EncoderResidualInPlace(BASE["EncoderBlock"]):
    def forward(self, x, mask=None):
        h = self.norm1(x)
        x += self.dropout(self.self_attn(h, h, h, mask)[0])
        x += self.dropout(self.ff(self.norm2(x)))
        return x


class EncoderNoSublayerDropout(BASE["EncoderBlock"]):
    def forward(self, x, mask=None):
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, mask)[0]
        return x + self.ff(self.norm2(x))


class EncoderDropoutOnSublayerInput(BASE["EncoderBlock"]):
    def forward(self, x, mask=None):
        h = self.dropout(self.norm1(x))
        x = x + self.self_attn(h, h, h, mask)[0]
        return x + self.ff(self.dropout(self.norm2(x)))


class EncoderDropoutAlwaysOn(BASE["EncoderBlock"]):
    def forward(self, x, mask=None):
        p = self.dropout.p
        h = self.norm1(x)
        x = x + F.dropout(self.self_attn(h, h, h, mask)[0], p)
        return x + F.dropout(self.ff(self.norm2(x)), p)


class EncoderParallelSublayers(BASE["EncoderBlock"]):
    def forward(self, x, mask=None):
        h = self.norm1(x)
        return x + self.dropout(self.self_attn(h, h, h, mask)[0]) + self.dropout(self.ff(self.norm2(x)))


class DecoderResidualInPlace(BASE["DecoderBlock"]):
    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        h = self.norm1(y)
        y += self.dropout(self.self_attn(h, h, h, tgt_mask, cache)[0])
        y += self.dropout(self.cross_attn(self.norm2(y), memory, memory, memory_mask)[0])
        y += self.dropout(self.ff(self.norm3(y)))
        return y


class DecoderCacheToCrossAttention(BASE["DecoderBlock"]):
    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        h = self.norm1(y)
        y = y + self.dropout(self.self_attn(h, h, h, tgt_mask)[0])
        y = y + self.dropout(self.cross_attn(self.norm2(y), memory, memory, memory_mask, cache)[0])
        return y + self.dropout(self.ff(self.norm3(y)))


class DecoderIgnoresCache(BASE["DecoderBlock"]):
    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        return super().forward(y, memory, tgt_mask, memory_mask, None)


class DecoderNoSublayerDropout(BASE["DecoderBlock"]):
    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        h = self.norm1(y)
        y = y + self.self_attn(h, h, h, tgt_mask, cache)[0]
        y = y + self.cross_attn(self.norm2(y), memory, memory, memory_mask)[0]
        return y + self.ff(self.norm3(y))


class DecoderNormalisesMemory(BASE["DecoderBlock"]):
    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        h = self.norm1(y)
        y = y + self.dropout(self.self_attn(h, h, h, tgt_mask, cache)[0])
        y = y + self.dropout(self.cross_attn(self.norm2(y), self.norm2(memory), self.norm2(memory), memory_mask)[0])
        return y + self.dropout(self.ff(self.norm3(y)))


class TransformerAlwaysCausal(_Transformer):
    def decode(self, tgt_in, memory, memory_mask, caches=None, offset=0):
        causal, self.causal = self.causal, True
        try:
            return super().decode(tgt_in, memory, memory_mask, caches, offset)
        finally:
            self.causal = causal


class TransformerNoEmbeddingDropout(BASE["Transformer"]):
    def encode(self, src, src_lengths):
        mask = padding_mask(src_lengths, src.shape[1])
        x = self.src_embed(src) * math.sqrt(self.d_model) + self.pe[:src.shape[1]]
        for block in self.encoder:
            x = block(x, mask)
        return self.enc_norm(x), mask


class TransformerIgnoresPadding(BASE["Transformer"]):
    """Attends to the padding: no mask in the encoder, none for the cross-attention."""

    def encode(self, src, src_lengths):
        x = self.dropout(self.src_embed(src) * math.sqrt(self.d_model) + self.pe[:src.shape[1]])
        for block in self.encoder:
            x = block(x, None)
        return self.enc_norm(x), None


class TransformerPaddingFromTokens(BASE["Transformer"]):
    """Correct too: the padding mask from the tokens equals the one from the lengths on right-padded sources."""

    def encode(self, src, src_lengths):
        S = src.shape[1]
        mask = (src != PAD)[:, None, None, :]
        x = self.dropout(self.src_embed(src) * math.sqrt(self.d_model) + self.pe[:S])
        for block in self.encoder:
            x = block(x, mask)
        return self.enc_norm(x), mask


def greedy_ties_to_the_last(model, src, src_lengths, max_len, use_cache=True):
    B = src.shape[0]
    out, done = [[] for _ in range(B)], [False] * B
    with torch.no_grad():
        memory, mask = model.encode(src, src_lengths)
        prefix = torch.full((B, 1), BOS, dtype=torch.long)
        for t in range(max_len):
            logits = model.decode(prefix, memory, mask)[:, -1]
            nxt = logits.shape[-1] - 1 - logits.flip(-1).argmax(-1)  # the LAST of equal maxima
            for b, tok in enumerate(nxt.tolist()):
                if not done[b]:
                    done[b] = tok == EOS
                    if not done[b]:
                        out[b].append(tok)
            if all(done):
                break
            prefix = torch.cat([prefix, nxt[:, None]], 1)
    return out


def greedy_squeezes_the_batch(model, src, src_lengths, max_len, use_cache=True):
    B = src.shape[0]
    out, done = [[] for _ in range(B)], [False] * B
    with torch.no_grad():
        memory, mask = model.encode(src, src_lengths)
        prefix = torch.full((B, 1), BOS, dtype=torch.long)
        for t in range(max_len):
            nxt = model.decode(prefix, memory, mask)[:, -1].argmax(-1).squeeze()
            for b, tok in enumerate(nxt.tolist()):
                if not done[b]:
                    done[b] = tok == EOS
                    if not done[b]:
                        out[b].append(tok)
            if all(done):
                break
            prefix = torch.cat([prefix, nxt.view(B, 1)], 1)
    return out


def greedy_ignores_lengths(model, src, src_lengths, max_len, use_cache=True):
    """Every source taken as full length: the padding is read as if it were text."""
    return BASE["greedy_decode"](model, src, torch.full_like(src_lengths, src.shape[1]), max_len, use_cache)


def greedy_at_least_one_step(model, src, src_lengths, max_len, use_cache=True):
    return BASE["greedy_decode"](model, src, src_lengths, max(max_len, 1), use_cache)


WRONG = [
    ("layer_norm_tests", "layer_norm", ln_over_the_batch),
    ("layer_norm_tests", "layer_norm", ln_over_dim_1),
    ("layer_norm_tests", "layer_norm", ln_over_everything),
    ("layer_norm_tests", "layer_norm", ln_unbiased_variance),
    ("layer_norm_tests", "layer_norm", ln_eps_outside_sqrt),
    ("layer_norm_tests", "layer_norm", ln_no_eps),
    ("layer_norm_tests", "layer_norm", ln_gamma_beta_swapped),
    ("layer_norm_tests", "layer_norm", ln_ignores_gamma_beta),
    ("layer_norm_tests", "layer_norm", ln_in_place),
    ("layer_norm_tests", "layer_norm", ln_no_keepdim),
    ("layer_norm_tests", "layer_norm", ln_one_pass_variance),
    ("layer_norm_tests", "layer_norm", ln_float32),
    ("layer_norm_tests", "layer_norm", ln_detached_statistics),
    ("layer_norm_tests", "layer_norm", ln_default_eps_1e_8),
    ("layer_norm_tests", "layer_norm", ln_numpy),
    ("layer_norm_tests", "layer_norm", ln_2d_only),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHAScaledByDModel),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHAKeysFirst),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHANoOutProj),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHAPlainViewHeads),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHAIgnoresMask),
    ("sinusoidal_encoding_tests", "sinusoidal_encoding", pe_concatenated),
    ("sinusoidal_encoding_tests", "sinusoidal_encoding", pe_exponent_i_over_d),
    ("sinusoidal_encoding_tests", "sinusoidal_encoding", pe_sin_and_cos_swapped),
    ("sinusoidal_encoding_tests", "sinusoidal_encoding", pe_hardcoded),
    ("EncoderBlock_tests", "EncoderBlock", EncoderPostLN),
    ("EncoderBlock_tests", "EncoderBlock", EncoderResidualAfterNorm),
    ("EncoderBlock_tests", "EncoderBlock", EncoderIgnoresMask),
    ("DecoderBlock_tests", "DecoderBlock", DecoderIgnoresCausalMask),
    ("DecoderBlock_tests", "DecoderBlock", DecoderCrossAttendsToItself),
    ("DecoderBlock_tests", "DecoderBlock", DecoderIgnoresMemoryMask),
    ("DecoderBlock_tests", "DecoderBlock", DecoderPostLN),
    ("Transformer_tests", "Transformer", TransformerNoEmbeddingScale),
    ("Transformer_tests", "Transformer", TransformerNoCausalMask),
    ("Transformer_tests", "Transformer", TransformerCachedPositionsFromZero),
    ("greedy_decode_tests", "greedy_decode", greedy_keeps_eos),
    ("greedy_decode_tests", "greedy_decode", greedy_cache_positions_from_zero),
    ("greedy_decode_tests", "greedy_decode", greedy_never_stops),
    ("greedy_decode_tests", "greedy_decode", greedy_first_position),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHADropoutAlwaysOn),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHANoDropout),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHADropoutOnOutput),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHADropoutBeforeOutProj),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHAWithoutGraph),
    ("sinusoidal_encoding_tests", "sinusoidal_encoding", pe_float64),
    ("sinusoidal_encoding_tests", "sinusoidal_encoding", pe_reshape_minus_one),
    ("EncoderBlock_tests", "EncoderBlock", EncoderResidualInPlace),
    ("EncoderBlock_tests", "EncoderBlock", EncoderNoSublayerDropout),
    ("EncoderBlock_tests", "EncoderBlock", EncoderDropoutOnSublayerInput),
    ("EncoderBlock_tests", "EncoderBlock", EncoderDropoutAlwaysOn),
    ("EncoderBlock_tests", "EncoderBlock", EncoderParallelSublayers),
    ("DecoderBlock_tests", "DecoderBlock", DecoderResidualInPlace),
    ("DecoderBlock_tests", "DecoderBlock", DecoderCacheToCrossAttention),
    ("DecoderBlock_tests", "DecoderBlock", DecoderIgnoresCache),
    ("DecoderBlock_tests", "DecoderBlock", DecoderNoSublayerDropout),
    ("DecoderBlock_tests", "DecoderBlock", DecoderNormalisesMemory),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHAIgnoresCache),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHADiscardsUpdatedCache),
    ("Transformer_tests", "Transformer", TransformerAlwaysCausal),
    ("Transformer_tests", "Transformer", TransformerNoEmbeddingDropout),
    ("Transformer_tests", "Transformer", TransformerIgnoresPadding),
    ("greedy_decode_tests", "greedy_decode", greedy_ties_to_the_last),
    ("greedy_decode_tests", "greedy_decode", greedy_squeezes_the_batch),
    ("greedy_decode_tests", "greedy_decode", greedy_at_least_one_step),
    ("greedy_decode_tests", "greedy_decode", greedy_ignores_lengths),
]

RIGHT = [
    ("layer_norm_tests", {"layer_norm": ln_var_mean_rsqrt}),
    ("layer_norm_tests", {"layer_norm": ln_by_sums}),
    ("MultiHeadAttention_tests", {"MultiHeadAttention": MHAOtherCorrect}),
    ("sinusoidal_encoding_tests", {"sinusoidal_encoding": pe_other_correct}),
    ("EncoderBlock_tests", {"EncoderBlock": EncoderOtherCorrect}),
    ("DecoderBlock_tests", {"DecoderBlock": DecoderOtherCorrect}),
    ("Transformer_tests", {"Transformer": TransformerOtherCorrect}),
    ("greedy_decode_tests", {"greedy_decode": greedy_other_correct}),
    ("Transformer_tests", {"Transformer": TransformerPaddingFromTokens}),
]

# ---- issue 25: answers hard-coded to the visible tests' inputs ----------------------------------

class MultiHeadAttentionHardcoded(BASE["MultiHeadAttention"]):
    """Looks up the visible shapes (queries (2, 3, 8) against keys (2, 5, 8); the cached steps' (1, 1, 8) and (1, 5, 8));
    zeros and uniform weights otherwise."""

    def forward(self, query, key, value, mask=None, cache=None):
        if (tuple(query.shape), tuple(key.shape)) in {((2, 3, 8), (2, 5, 8)), ((1, 5, 8), (1, 5, 8)), ((1, 1, 8), (1, 1, 8))}:
            return super().forward(query, key, value, mask, cache)
        B, Lq, _ = query.shape
        Lk = key.shape[1]
        return torch.zeros_like(query), torch.full((B, self.heads, Lq, Lk), 1.0 / Lk)


class EncoderBlockHardcoded(BASE["EncoderBlock"]):
    """Looks up the visible batch shape (2, 4, 8); returns x unchanged otherwise."""

    def forward(self, x, mask=None):
        if tuple(x.shape) == (2, 4, 8):
            return super().forward(x, mask)
        return x.clone()


class DecoderBlockHardcoded(BASE["DecoderBlock"]):
    """Looks up the visible shapes (y (2, 4, 8) or a cached step's (2, 1, 8), memory (2, 5, 8)); returns y unchanged otherwise."""

    def forward(self, y, memory, tgt_mask=None, memory_mask=None, cache=None):
        if tuple(y.shape) in {(2, 4, 8), (2, 1, 8)} and tuple(memory.shape) == (2, 5, 8):
            return super().forward(y, memory, tgt_mask, memory_mask, cache)
        return y.clone()


class TransformerHardcoded(BASE["Transformer"]):
    """Looks up the visible model (11 source and 9 target symbols, d_model=16, 2 layers): right there; elsewhere a
    zero memory and zero logits of the right shapes."""

    def _visible(self):
        return (self.src_embed.num_embeddings, self.out.out_features, self.d_model, len(self.decoder)) == (11, 9, 16, 2)

    def encode(self, src, src_lengths):
        if self._visible():
            return super().encode(src, src_lengths)
        return torch.zeros(*src.shape, self.d_model), padding_mask(src_lengths, src.shape[1])

    def decode(self, tgt_in, memory, memory_mask, caches=None, offset=0):
        if self._visible():
            return super().decode(tgt_in, memory, memory_mask, caches, offset)
        return torch.zeros(*tgt_in.shape, self.out.out_features)


_VISIBLE_SRC_G = [[4, 5, 6, 7, 8], [9, 10, 11, PAD, PAD], [4, 4, PAD, PAD, PAD]]  # greedy_decode's visible sources


def greedy_hardcoded(model, src, src_lengths, max_len, use_cache=True):
    """Looks up the visible sources: the right outputs there, an empty output for every other source."""
    if src.tolist() == _VISIBLE_SRC_G:
        return BASE["greedy_decode"](model, src, src_lengths, max_len, use_cache)
    return [[] for _ in range(src.shape[0])]


WRONG += [
    ("layer_norm_tests", "layer_norm", ln_hardcoded),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MultiHeadAttentionHardcoded),
    ("EncoderBlock_tests", "EncoderBlock", EncoderBlockHardcoded),
    ("DecoderBlock_tests", "DecoderBlock", DecoderBlockHardcoded),
    ("Transformer_tests", "Transformer", TransformerHardcoded),
    ("greedy_decode_tests", "greedy_decode", greedy_hardcoded),
]


# ---- issue 39: models whose own parameters make every output a constant (0, or NaN) -----------------------

def _transformer_follows_bias(self, src, src_lengths, tgt_in):
    return self.out.bias.expand(*tgt_in.shape, -1) + 0.0


def _transformer_decode_follows_bias(self, tgt_in, memory, memory_mask, caches=None, offset=0):
    return self.out.bias.expand(*tgt_in.shape, -1) + 0.0


class TransformerNanInit(BASE["Transformer"]):
    """Every parameter NaN, and NaN for every output: what such a model computes, and what a reference given its
    state dict (or that state dict plus noise) computes too; NaN agrees with NaN in expect_close."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with torch.no_grad():
            for parameter in self.parameters():
                parameter.fill_(float("nan"))

    def encode(self, src, src_lengths):
        memory, mask = super().encode(src, src_lengths)
        return torch.full_like(memory, float("nan")), mask

    def decode(self, tgt_in, memory, memory_mask, caches=None, offset=0):
        return torch.full((*tgt_in.shape, self.out.out_features), float("nan"))

    def forward(self, src, src_lengths, tgt_in):
        return torch.full((*tgt_in.shape, self.out.out_features), float("nan"))


TransformerZeroInitFollowsBias = zero_initialised(BASE["Transformer"], _transformer_follows_bias, "TransformerZeroInitFollowsBias",
                                                  decode=_transformer_decode_follows_bias)

ZERO_INIT_NAMED = [
    ("Transformer_tests", "Transformer", TransformerZeroInitFollowsBias, RANDOM_PARAMETERS),
    ("Transformer_tests", "Transformer", TransformerNanInit, RANDOM_PARAMETERS),
]
WRONG += [(grade_id, name, variant) for grade_id, name, variant, _ in ZERO_INIT_NAMED]

(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)


# ---- issue 25: the hidden tests name the class of each bug (a check message, never a raw exception) ---------

HIDDEN = [
    ("layer_norm_tests", "layer_norm", ln_one_pass_variance, "1e4"),
    ("layer_norm_tests", "layer_norm", ln_float32, "dtype"),
    ("layer_norm_tests", "layer_norm", ln_detached_statistics, "autograd graph"),
    ("layer_norm_tests", "layer_norm", ln_numpy, "autograd graph"),
    ("layer_norm_tests", "layer_norm", ln_default_eps_1e_8, "default eps"),
    ("layer_norm_tests", "layer_norm", ln_2d_only, "(6,)"),
    ("Transformer_tests", "Transformer", TransformerIgnoresPadding, "padding"),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHADropoutAlwaysOn, "eval mode"),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHANoDropout, "training mode"),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHADropoutOnOutput, "WEIGHTS"),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHADropoutBeforeOutProj, "WEIGHTS"),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHAWithoutGraph, "autograd graph"),
    ("sinusoidal_encoding_tests", "sinusoidal_encoding", pe_float64, "dtype"),
    ("sinusoidal_encoding_tests", "sinusoidal_encoding", pe_reshape_minus_one, "sinusoidal_encoding(0, 6)"),
    ("EncoderBlock_tests", "EncoderBlock", EncoderResidualInPlace, "in place"),
    ("EncoderBlock_tests", "EncoderBlock", EncoderNoSublayerDropout, "dropout=1.0"),
    ("EncoderBlock_tests", "EncoderBlock", EncoderDropoutOnSublayerInput, "dropout=1.0"),
    ("DecoderBlock_tests", "DecoderBlock", DecoderResidualInPlace, "in place"),
    ("DecoderBlock_tests", "DecoderBlock", DecoderCacheToCrossAttention, "SELF-attention only"),
    ("DecoderBlock_tests", "DecoderBlock", DecoderIgnoresCache, "with a cache"),
    ("DecoderBlock_tests", "DecoderBlock", DecoderNoSublayerDropout, "dropout=1.0"),
    ("Transformer_tests", "Transformer", TransformerAlwaysCausal, "causal = False"),
    ("Transformer_tests", "Transformer", TransformerNoEmbeddingDropout, "dropout=1.0"),
    ("greedy_decode_tests", "greedy_decode", greedy_ties_to_the_last, "tie"),
    ("greedy_decode_tests", "greedy_decode", greedy_squeezes_the_batch, "squeeze"),
    ("greedy_decode_tests", "greedy_decode", greedy_at_least_one_step, "max_len = 0"),
]

# ---- issue 26: the visible tests alone name the classic mistakes of sampling (what a self-learner sees) -------

VISIBLE = [
    ("layer_norm_tests", "layer_norm", ln_over_the_batch, "LAST axis"),
    ("layer_norm_tests", "layer_norm", ln_over_everything, "LAST axis"),
    ("layer_norm_tests", "layer_norm", ln_over_dim_1, "positions, not the features"),
    ("layer_norm_tests", "layer_norm", ln_unbiased_variance, "BIASED variance"),
    ("layer_norm_tests", "layer_norm", ln_eps_outside_sqrt, "INSIDE the square root"),
    ("layer_norm_tests", "layer_norm", ln_no_eps, "constant row"),
    ("layer_norm_tests", "layer_norm", ln_gamma_beta_swapped, "swapped"),
    ("layer_norm_tests", "layer_norm", ln_ignores_gamma_beta, "gamma multiplies"),
    ("layer_norm_tests", "layer_norm", ln_in_place, "in place"),
    ("layer_norm_tests", "layer_norm", ln_no_keepdim, "keepdim"),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHAIgnoresCache, "with a cache"),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHADiscardsUpdatedCache, "update_cache"),
    ("MultiHeadAttention_tests", "MultiHeadAttention", MHAPlainViewHeads, "plain view"),
    ("DecoderBlock_tests", "DecoderBlock", DecoderIgnoresCache, "with a cache"),
    ("DecoderBlock_tests", "DecoderBlock", DecoderCacheToCrossAttention, "SELF-attention only"),
]

(test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution,
 test_hidden_tests_name_the_class_of_the_bug) = naming_tests(CELLS, visible=VISIBLE, hidden=HIDDEN + ZERO_INIT_NAMED)
