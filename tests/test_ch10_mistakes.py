"""Chapter 10's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function of the solution for a variant and runs the exercise's whole test cell (visible and
hidden tests) against it; VISIBLE lists the mistakes that the visible checks alone must name (what a self-learner
sees), HIDDEN those that only the hidden tests meet.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from mistakes import GradedCells, mistake_tests, naming_tests

CHAPTER = "10-beyond-the-2017-transformer"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base
plain_attention = BASE["plain_attention"]


# ---- Exercise 1: tiled attention with an online softmax ---------------------------------------------------

def _tiled(q, k, v, block_size, causal=False, key_lengths=None, *, rescale_sum=True, rescale_out=True, scale=True,
           mask_value=-math.inf, use_causal=True, use_lengths=True, key_blocks=True, scale_in_place=False):
    """The solution's algorithm with one step switched off (each keyword is a classic mistake)."""
    B, T, d = q.shape
    S, e = k.shape[1], v.shape[-1]
    out = torch.empty(B, T, e)
    k_step = block_size if key_blocks else S
    for i0 in range(0, T, block_size):
        qb = q[:, i0:i0 + block_size]
        if scale and scale_in_place:
            qb /= math.sqrt(d)
        elif scale:
            qb = qb / math.sqrt(d)
        bq = qb.shape[1]
        q_pos = torch.arange(i0, i0 + bq)
        m = torch.full((B, bq, 1), -math.inf)
        l, o = torch.zeros(B, bq, 1), torch.zeros(B, bq, e)
        for j0 in range(0, S, k_step):
            kb, vb = k[:, j0:j0 + k_step], v[:, j0:j0 + k_step]
            k_pos = torch.arange(j0, j0 + kb.shape[1])
            s = qb @ kb.transpose(1, 2)
            keep = torch.ones(1, bq, kb.shape[1], dtype=torch.bool)
            if causal and use_causal:
                keep = keep & (k_pos[None, None, :] <= q_pos[None, :, None])
            if key_lengths is not None and use_lengths:
                keep = keep & (k_pos[None, None, :] < key_lengths[:, None, None])
            s = s.masked_fill(~keep, mask_value)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            m_safe = m_new.masked_fill(m_new == -math.inf, 0.0)
            p = torch.exp(s - m_safe)
            factor = torch.exp(m - m_safe)
            l = (factor * l if rescale_sum else l) + p.sum(-1, keepdim=True)
            o = (factor * o if rescale_out else o) + p @ vb
            m = m_new
        out[:, i0:i0 + bq] = o / l
    return out


def tiled_forgets_to_rescale_the_sum(q, k, v, block_size, causal=False, key_lengths=None):
    return _tiled(q, k, v, block_size, causal, key_lengths, rescale_sum=False)


def tiled_rescales_nothing(q, k, v, block_size, causal=False, key_lengths=None):
    return _tiled(q, k, v, block_size, causal, key_lengths, rescale_sum=False, rescale_out=False)


def tiled_unscaled_scores(q, k, v, block_size, causal=False, key_lengths=None):
    return _tiled(q, k, v, block_size, causal, key_lengths, scale=False)


def tiled_masks_with_zero(q, k, v, block_size, causal=False, key_lengths=None):
    return _tiled(q, k, v, block_size, causal, key_lengths, mask_value=0.0)


def tiled_ignores_causal(q, k, v, block_size, causal=False, key_lengths=None):
    return _tiled(q, k, v, block_size, causal, key_lengths, use_causal=False)


def tiled_ignores_key_lengths(q, k, v, block_size, causal=False, key_lengths=None):
    return _tiled(q, k, v, block_size, causal, key_lengths, use_lengths=False)


def tiled_query_blocks_only(q, k, v, block_size, causal=False, key_lengths=None):
    """Blocks of queries against all keys at once: a (B, block, S) score tensor."""
    return _tiled(q, k, v, block_size, causal, key_lengths, key_blocks=False)


def tiled_scales_q_in_place(q, k, v, block_size, causal=False, key_lengths=None):
    return _tiled(q, k, v, block_size, causal, key_lengths, scale_in_place=True)


def tiled_is_plain_attention(q, k, v, block_size, causal=False, key_lengths=None):
    return plain_attention(q, k, v, causal, key_lengths)


def tiled_hardcoded(q, k, v, block_size, causal=False, key_lengths=None):
    """Right on the visible tests' shapes ((2, 7, 4), (1, 1, 1) and (1, 96, 8)), zeros elsewhere."""
    if tuple(q.shape) in {(2, 7, 4), (1, 1, 1), (1, 96, 8)}:
        return BASE["tiled_attention"](q, k, v, block_size, causal, key_lengths)
    return torch.zeros(q.shape[0], q.shape[1], v.shape[-1])


def tiled_normalised_as_it_goes(q, k, v, block_size, causal=False, key_lengths=None):
    """Correct, written differently: the output kept normalised after every block, masks by torch.where, the
    causal skip left out (a fully masked block adds exp(-inf) = 0)."""
    B, T, d = q.shape
    S = k.shape[1]
    out = []
    for i0 in range(0, T, block_size):
        qb = q[:, i0:i0 + block_size] * d ** -0.5
        rows = torch.arange(i0, i0 + qb.shape[1])[:, None]
        m = torch.full(qb.shape[:2] + (1,), -math.inf)
        l = torch.zeros_like(m)
        o = torch.zeros(qb.shape[0], qb.shape[1], v.shape[-1])
        for j0 in range(0, S, block_size):
            cols = torch.arange(j0, min(j0 + block_size, S))[None, :]
            s = torch.einsum("bqd,bkd->bqk", qb, k[:, j0:j0 + block_size])
            ok = torch.ones_like(s, dtype=torch.bool)
            if causal:
                ok = ok & (cols <= rows)
            if key_lengths is not None:
                ok = ok & (cols[None] < key_lengths.view(-1, 1, 1))
            s = torch.where(ok, s, torch.tensor(-math.inf))
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - shift)
            l_new = torch.exp(m - shift) * l + p.sum(-1, keepdim=True)
            o = torch.where(l_new > 0, (torch.exp(m - shift) * l * o + p @ v[:, j0:j0 + block_size]) / l_new.clamp_min(1e-30), o)
            m, l = m_new, l_new
        out.append(o)
    return torch.cat(out, 1)


# ---- Exercise 2: grouped-query attention with a cache -----------------------------------------------------

def _gqa(q, k, v, cache=None, *, interleaved=False, scale=True, use_cache=True, top_left_mask=False, return_new=False):
    B, h, T, d = q.shape
    g = k.shape[1]
    if h % g:
        raise ValueError("g must divide h")
    k_new, v_new = k, v
    if cache is not None and use_cache:
        k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
    S = k.shape[2]
    rep = (lambda t: t.repeat(1, h // g, 1, 1)) if interleaved else (lambda t: t.repeat_interleave(h // g, dim=1))
    scores = q @ rep(k).transpose(-2, -1) / (math.sqrt(d) if scale else 1.0)
    keep = torch.ones(T, S, dtype=torch.bool).tril() if top_left_mask else \
        torch.arange(S)[None, :] <= torch.arange(S - T, S)[:, None]
    out = torch.softmax(scores.masked_fill(~keep, -math.inf), -1) @ rep(v)
    return out, ((k_new, v_new) if return_new else (k, v))


def gqa_heads_interleaved(q, k, v, cache=None):
    return _gqa(q, k, v, cache, interleaved=True)


def gqa_unscaled(q, k, v, cache=None):
    return _gqa(q, k, v, cache, scale=False)


def gqa_ignores_the_cache(q, k, v, cache=None):
    return _gqa(q, k, v, cache, use_cache=False)


def gqa_mask_from_the_top_left(q, k, v, cache=None):
    """tril(T, S): with a cache, the new queries see only the first cached keys."""
    return _gqa(q, k, v, cache, top_left_mask=True)


def gqa_returns_only_the_new_keys(q, k, v, cache=None):
    return _gqa(q, k, v, cache, return_new=True)


def gqa_not_causal(q, k, v, cache=None):
    B, h, T, d = q.shape
    g = k.shape[1]
    if h % g:
        raise ValueError("g must divide h")
    if cache is not None:
        k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
    return F.scaled_dot_product_attention(q, k.repeat_interleave(h // g, 1), v.repeat_interleave(h // g, 1)), (k, v)


def gqa_hardcoded(q, k, v, cache=None):
    """Right when h = 4 and d = 8 (the visible tests), interleaved groups elsewhere."""
    if q.shape[1] == 4 and q.shape[-1] == 8:
        return BASE["gqa_attention"](q, k, v, cache)
    return _gqa(q, k, v, cache, interleaved=True)


def gqa_by_sdpa_and_repeat(q, k, v, cache=None):
    """Correct, written differently: repeated heads and PyTorch's attention with a boolean mask."""
    h, g = q.shape[1], k.shape[1]
    if h % g:
        raise ValueError(f"h = {h} is not a multiple of g = {g}")
    k_all = k if cache is None else torch.cat((cache[0], k), dim=-2)
    v_all = v if cache is None else torch.cat((cache[1], v), dim=-2)
    T, S = q.shape[2], k_all.shape[2]
    mask = torch.ones(T, S, dtype=torch.bool).tril(diagonal=S - T)
    out = F.scaled_dot_product_attention(q, k_all.repeat_interleave(h // g, 1), v_all.repeat_interleave(h // g, 1), attn_mask=mask)
    return out, (k_all, v_all)


# ---- Exercise 3: rotary position embeddings -----------------------------------------------------------

def _rope(x, positions, base=10000.0, *, halves=False, angle_dtype=torch.float64, exponent=2.0, sign=1.0, use_positions=True):
    d = x.shape[-1]
    if d % 2:
        raise ValueError("odd width")
    theta = base ** (-exponent * torch.arange(d // 2, dtype=angle_dtype) / d)
    pos = positions if use_positions else torch.arange(x.shape[-2])
    angles = pos.to(angle_dtype)[:, None] * theta
    cos, sin = angles.cos().float(), sign * angles.sin().float()
    if halves:
        first, second = x[..., :d // 2], x[..., d // 2:]
        return torch.cat([first * cos - second * sin, first * sin + second * cos], -1)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)


def rope_rotates_the_halves(x, positions, base=10000.0):
    """The other convention's pairs (i, i + d/2): rotating the wrong pairs for this exercise."""
    return _rope(x, positions, base, halves=True)


def rope_float32_angles(x, positions, base=10000.0):
    return _rope(x, positions, base, angle_dtype=torch.float32)


def rope_wrong_frequencies(x, positions, base=10000.0):
    return _rope(x, positions, base, exponent=1.0)


def rope_turns_the_other_way(x, positions, base=10000.0):
    return _rope(x, positions, base, sign=-1.0)


def rope_ignores_the_positions(x, positions, base=10000.0):
    return _rope(x, positions, base, use_positions=False)


def rope_adds_an_absolute_angle(x, positions, base=10000.0):
    """An absolute encoding added to x instead of a rotation: scores then depend on the positions themselves."""
    angles = positions.double()[:, None] * base ** (-torch.arange(0, x.shape[-1], 2, dtype=torch.float64) / x.shape[-1])
    if x.shape[-1] % 2:
        raise ValueError("odd width")
    return x + torch.stack([angles.sin(), angles.cos()], -1).flatten(-2).float()


def rope_in_place(x, positions, base=10000.0):
    rotated = _rope(x, positions, base)
    x.copy_(rotated)
    return x


def rope_hardcoded(x, positions, base=10000.0):
    """Right on 2-D inputs of width 4 or 8 (the visible tests), x unchanged elsewhere."""
    if x.dim() == 2 and x.shape[-1] in (4, 8):
        return BASE["apply_rope"](x, positions, base)
    if x.shape[-1] % 2:
        raise ValueError("odd width")
    return x.clone()


def rope_complex(x, positions, base=10000.0):
    """Correct, written differently: pairs as complex numbers times e^{i p theta}."""
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"d = {d} is odd")
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).double().contiguous())
    theta = torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float64) / d)
    turned = z * torch.exp(1j * positions.double()[:, None] * theta)
    return torch.view_as_real(turned).reshape(x.shape).to(x.dtype)


def rope_scores_turns_only_the_keys(q, k, q_positions, k_positions, base=10000.0):
    """Keys rotated by their absolute angle, queries left as they are: the score depends on the key's position."""
    return q @ BASE["apply_rope"](k, k_positions, base).transpose(-2, -1) / math.sqrt(q.shape[-1])


def rope_scores_turns_only_the_queries(q, k, q_positions, k_positions, base=10000.0):
    return BASE["apply_rope"](q, q_positions, base) @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def rope_scores_unscaled(q, k, q_positions, k_positions, base=10000.0):
    return BASE["apply_rope"](q, q_positions, base) @ BASE["apply_rope"](k, k_positions, base).transpose(-2, -1)


def rope_scores_keys_at_the_query_positions(q, k, q_positions, k_positions, base=10000.0):
    """Both sides turned by positions counted from 0 (arange), the given positions ignored: wrong after a cache."""
    T, S = q.shape[-2], k.shape[-2]
    return rope_scores_right(q, k, torch.arange(T), torch.arange(S), base)


def rope_scores_hardcoded(q, k, q_positions, k_positions, base=10000.0):
    """Right at width 8 (the visible tests), only the keys turned elsewhere."""
    if q.shape[-1] == 8:
        return BASE["rope_scores"](q, k, q_positions, k_positions, base)
    return rope_scores_turns_only_the_keys(q, k, q_positions, k_positions, base)


def rope_scores_right(q, k, q_positions, k_positions, base=10000.0):
    """Correct, written differently: the rotations as complex numbers, the product by einsum."""
    return torch.einsum("...td,...sd->...ts", rope_complex(q, q_positions, base), rope_complex(k, k_positions, base)) \
        * q.shape[-1] ** -0.5


# ---- Exercise 4: the selective scan as a loop -------------------------------------------------------------

def _selective(x, delta_raw, A, B, C, h0=None, *, positive=F.softplus, use_h0=True, read_before=False):
    b, L, D = x.shape
    delta = positive(delta_raw)
    decay = torch.exp(delta[..., None] * A)
    drive = delta[..., None] * B[:, :, None, :] * x[..., None]
    h = h0 if (h0 is not None and use_h0) else torch.zeros(b, D, A.shape[1])
    ys = []
    for t in range(L):
        if read_before:
            ys.append((h * C[:, t, None, :]).sum(-1))
        h = decay[:, t] * h + drive[:, t]
        if not read_before:
            ys.append((h * C[:, t, None, :]).sum(-1))
    return torch.stack(ys, 1), h


def selective_delta_not_positive(x, delta_raw, A, B, C, h0=None):
    return _selective(x, delta_raw, A, B, C, h0, positive=lambda z: z)


def selective_delta_by_relu(x, delta_raw, A, B, C, h0=None):
    return _selective(x, delta_raw, A, B, C, h0, positive=torch.relu)


def selective_delta_by_exp(x, delta_raw, A, B, C, h0=None):
    return _selective(x, delta_raw, A, B, C, h0, positive=torch.exp)


def selective_drops_h0(x, delta_raw, A, B, C, h0=None):
    return _selective(x, delta_raw, A, B, C, h0, use_h0=False)


def selective_reads_the_previous_state(x, delta_raw, A, B, C, h0=None):
    return _selective(x, delta_raw, A, B, C, h0, read_before=True)


def selective_hardcoded(x, delta_raw, A, B, C, h0=None):
    """Right when L <= 5 and D <= 3 (the visible tests), a zero state elsewhere."""
    if x.shape[1] <= 5 and x.shape[2] <= 3:
        return BASE["selective_scan"](x, delta_raw, A, B, C, h0)
    return torch.zeros_like(x), torch.zeros(x.shape[0], x.shape[2], A.shape[1])


def selective_by_einsum(x, delta_raw, A, B, C, h0=None):
    """Correct, written differently: the step computed inside the loop with einsum."""
    delta = torch.log1p(torch.exp(-delta_raw.abs())) + delta_raw.clamp_min(0)   # a stable softplus
    h = torch.zeros(x.shape[0], x.shape[2], A.shape[1]) if h0 is None else h0.clone()
    ys = []
    for t in range(x.shape[1]):
        h = torch.exp(torch.einsum("bd,dn->bdn", delta[:, t], A)) * h + torch.einsum("bd,bn,bd->bdn", delta[:, t], B[:, t], x[:, t])
        ys.append(torch.einsum("bdn,bn->bd", h, C[:, t]))
    return torch.stack(ys, 1), h


# ---- Exercise 5: the associative combine and the parallel scan ------------------------------------------

def combine_keeps_only_the_last_a(first, second):
    """(a2, a2 b1 + b2): right when folded left to right, not associative, so wrong in a scan."""
    (a1, b1), (a2, b2) = first, second
    return a2, a2 * b1 + b2


def combine_in_the_wrong_order(first, second):
    (a1, b1), (a2, b2) = first, second
    return a1 * a2, a1 * b2 + b1


def combine_hardcoded(first, second):
    """Right on the worked pair and on shape (3,) (the visible tests), a sum elsewhere."""
    (a1, b1), (a2, b2) = first, second
    if torch.as_tensor(a1).dim() == 0 or tuple(torch.as_tensor(a1).shape) == (3,):
        return a1 * a2, a2 * b1 + b2
    return a1 + a2, b1 + b2


def scan_drops_h0(a, b, h0):
    return BASE["parallel_scan"](a, b, torch.zeros_like(h0))


def scan_by_a_loop(a, b, h0):
    h, rows = h0, []
    for t in range(a.shape[0]):
        h = a[t] * h + b[t]
        rows.append(h)
    return torch.stack(rows)


def scan_in_place(a, b, h0):
    b[0] = a[0] * h0 + b[0]
    return BASE["parallel_scan"](a, b, torch.zeros_like(h0))


def scan_round_without_the_prefix(a, b, h0):
    """Each round drops the first `shift` elements instead of keeping them."""
    L = a.shape[0]
    b = torch.cat([(a[0] * h0 + b[0])[None], b[1:]])
    shift = 1
    while shift < L:
        new_a, new_b = a[:-shift] * a[shift:], a[shift:] * b[:-shift] + b[shift:]
        a, b = torch.cat([torch.ones_like(a[:shift]), new_a]), torch.cat([torch.zeros_like(b[:shift]), new_b])
        shift *= 2
    return b


def scan_hardcoded(a, b, h0):
    """Right for L <= 13 (the visible tests' short sequences and the long one's operation count), zeros elsewhere."""
    if a.shape[0] <= 13 or a.shape[0] == 1024:
        return BASE["parallel_scan"](a, b, h0)
    return torch.zeros_like(b)


def scan_with_identity_padding(a, b, h0):
    """Correct, written differently: pad with the identity map (1, 0) instead of keeping the prefix apart."""
    b = b.clone()
    b[0] = a[0] * h0 + b[0]
    L, shift = a.shape[0], 1
    while shift < L:
        a_prev = torch.cat([torch.ones_like(a[:shift]), a[:-shift]])
        b_prev = torch.cat([torch.zeros_like(b[:shift]), b[:-shift]])
        a, b = BASE["scan_combine"]((a_prev, b_prev), (a, b))
        shift *= 2
    return b


def combine_unpacked(first, second):
    """Correct, written differently."""
    return first[0] * second[0], torch.addcmul(second[1], second[0], first[1])


# ---- Exercise 6: chapter 2's forward as a scan ---------------------------------------------------------------

def _hmm(pi, A, B, obs, *, reversed_order=False, with_pi=True, emission_of_the_source=False):
    T = obs.shape[0]
    emit = B[:, obs].T
    M = A[None] * (emit[:, :, None] if emission_of_the_source else emit[:, None, :])
    first = pi * B[:, obs[0]] if with_pi else B[:, obs[0]]
    E = torch.cat([torch.diag(first)[None], M[1:]])
    shift = 1
    while shift < T:
        E = torch.cat([E[:shift], (E[shift:] @ E[:-shift]) if reversed_order else (E[:-shift] @ E[shift:])])
        shift *= 2
    return E.sum(1)


def hmm_products_in_the_wrong_order(pi, A, B, obs):
    return _hmm(pi, A, B, obs, reversed_order=True)


def hmm_drops_pi(pi, A, B, obs):
    return _hmm(pi, A, B, obs, with_pi=False)


def hmm_emission_of_the_source_state(pi, A, B, obs):
    return _hmm(pi, A, B, obs, emission_of_the_source=True)


def hmm_by_a_loop(pi, A, B, obs):
    return BASE["forward_loop"](pi, A, B, obs)


def hmm_hardcoded(pi, A, B, obs):
    """Right with two states (the visible tests), uniform elsewhere."""
    if pi.shape[0] == 2:
        return BASE["hmm_forward_scan"](pi, A, B, obs)
    return torch.full((obs.shape[0], pi.shape[0]), 1.0 / pi.shape[0], dtype=torch.float64)


def hmm_prefix_products_then_alpha0(pi, A, B, obs):
    """Correct, written differently: prefix products of M_1..M_t from the identity, then alpha_0 times each."""
    T, N = obs.shape[0], pi.shape[0]
    M = A[None] * B[:, obs].T[:, None, :]
    P = torch.cat([torch.eye(N, dtype=A.dtype)[None], M[1:]])
    shift = 1
    while shift < T:
        P = torch.cat([P[:shift], torch.einsum("tij,tjk->tik", P[:-shift], P[shift:])])
        shift *= 2
    return torch.einsum("i,tij->tj", pi * B[:, obs[0]], P)


WRONG = [
    ("tiled_attention_tests", "tiled_attention", tiled_forgets_to_rescale_the_sum),
    ("tiled_attention_tests", "tiled_attention", tiled_rescales_nothing),
    ("tiled_attention_tests", "tiled_attention", tiled_unscaled_scores),
    ("tiled_attention_tests", "tiled_attention", tiled_masks_with_zero),
    ("tiled_attention_tests", "tiled_attention", tiled_ignores_causal),
    ("tiled_attention_tests", "tiled_attention", tiled_ignores_key_lengths),
    ("tiled_attention_tests", "tiled_attention", tiled_query_blocks_only),
    ("tiled_attention_tests", "tiled_attention", tiled_scales_q_in_place),
    ("tiled_attention_tests", "tiled_attention", tiled_is_plain_attention),
    ("tiled_attention_tests", "tiled_attention", tiled_hardcoded),
    ("gqa_attention_tests", "gqa_attention", gqa_heads_interleaved),
    ("gqa_attention_tests", "gqa_attention", gqa_unscaled),
    ("gqa_attention_tests", "gqa_attention", gqa_ignores_the_cache),
    ("gqa_attention_tests", "gqa_attention", gqa_mask_from_the_top_left),
    ("gqa_attention_tests", "gqa_attention", gqa_returns_only_the_new_keys),
    ("gqa_attention_tests", "gqa_attention", gqa_not_causal),
    ("gqa_attention_tests", "gqa_attention", gqa_hardcoded),
    ("apply_rope_tests", "apply_rope", rope_rotates_the_halves),
    ("apply_rope_tests", "apply_rope", rope_float32_angles),
    ("apply_rope_tests", "apply_rope", rope_wrong_frequencies),
    ("apply_rope_tests", "apply_rope", rope_turns_the_other_way),
    ("apply_rope_tests", "apply_rope", rope_ignores_the_positions),
    ("apply_rope_tests", "apply_rope", rope_adds_an_absolute_angle),
    ("apply_rope_tests", "apply_rope", rope_in_place),
    ("apply_rope_tests", "apply_rope", rope_hardcoded),
    ("apply_rope_tests", "rope_scores", rope_scores_turns_only_the_keys),
    ("apply_rope_tests", "rope_scores", rope_scores_turns_only_the_queries),
    ("apply_rope_tests", "rope_scores", rope_scores_unscaled),
    ("apply_rope_tests", "rope_scores", rope_scores_keys_at_the_query_positions),
    ("apply_rope_tests", "rope_scores", rope_scores_hardcoded),
    ("selective_scan_tests", "selective_scan", selective_delta_not_positive),
    ("selective_scan_tests", "selective_scan", selective_delta_by_relu),
    ("selective_scan_tests", "selective_scan", selective_delta_by_exp),
    ("selective_scan_tests", "selective_scan", selective_drops_h0),
    ("selective_scan_tests", "selective_scan", selective_reads_the_previous_state),
    ("selective_scan_tests", "selective_scan", selective_hardcoded),
    ("parallel_scan_tests", "scan_combine", combine_keeps_only_the_last_a),
    ("parallel_scan_tests", "scan_combine", combine_in_the_wrong_order),
    ("parallel_scan_tests", "scan_combine", combine_hardcoded),
    ("parallel_scan_tests", "parallel_scan", scan_drops_h0),
    ("parallel_scan_tests", "parallel_scan", scan_by_a_loop),
    ("parallel_scan_tests", "parallel_scan", scan_in_place),
    ("parallel_scan_tests", "parallel_scan", scan_round_without_the_prefix),
    ("parallel_scan_tests", "parallel_scan", scan_hardcoded),
    ("hmm_forward_scan_tests", "hmm_forward_scan", hmm_products_in_the_wrong_order),
    ("hmm_forward_scan_tests", "hmm_forward_scan", hmm_drops_pi),
    ("hmm_forward_scan_tests", "hmm_forward_scan", hmm_emission_of_the_source_state),
    ("hmm_forward_scan_tests", "hmm_forward_scan", hmm_by_a_loop),
    ("hmm_forward_scan_tests", "hmm_forward_scan", hmm_hardcoded),
]

RIGHT = [
    ("tiled_attention_tests", {"tiled_attention": tiled_normalised_as_it_goes}),
    ("gqa_attention_tests", {"gqa_attention": gqa_by_sdpa_and_repeat}),
    ("apply_rope_tests", {"apply_rope": rope_complex}),
    ("apply_rope_tests", {"rope_scores": rope_scores_right}),
    ("selective_scan_tests", {"selective_scan": selective_by_einsum}),
    ("parallel_scan_tests", {"parallel_scan": scan_with_identity_padding}),
    ("parallel_scan_tests", {"scan_combine": combine_unpacked}),
    ("hmm_forward_scan_tests", {"hmm_forward_scan": hmm_prefix_products_then_alpha0}),
]

(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)

# The visible checks alone name each classic mistake (what a self-learner sees).
VISIBLE = [
    ("tiled_attention_tests", "tiled_attention", tiled_forgets_to_rescale_the_sum, "rescale the running sum l"),
    ("tiled_attention_tests", "tiled_attention", tiled_rescales_nothing, "rescale the running sum l"),
    ("tiled_attention_tests", "tiled_attention", tiled_unscaled_scores, "sqrt(d)"),
    ("tiled_attention_tests", "tiled_attention", tiled_ignores_causal, "causal=True"),
    ("tiled_attention_tests", "tiled_attention", tiled_ignores_key_lengths, "key_lengths"),
    ("tiled_attention_tests", "tiled_attention", tiled_query_blocks_only, "(1, 16, 96)"),
    ("tiled_attention_tests", "tiled_attention", tiled_is_plain_attention, "(T, S) scores or mask must never exist"),
    ("tiled_attention_tests", "tiled_attention", tiled_scales_q_in_place, "changed q in place"),
    ("gqa_attention_tests", "gqa_attention", gqa_heads_interleaved, "grouped on the wrong axis"),
    ("gqa_attention_tests", "gqa_attention", gqa_ignores_the_cache, "return the cache extended"),
    ("gqa_attention_tests", "gqa_attention", gqa_mask_from_the_top_left, "position P + t"),
    ("gqa_attention_tests", "gqa_attention", gqa_returns_only_the_new_keys, "return the cache extended"),
    ("apply_rope_tests", "apply_rope", rope_rotates_the_halves, "ADJACENT"),
    ("apply_rope_tests", "apply_rope", rope_wrong_frequencies, "base ** (-2i / d)"),
    ("apply_rope_tests", "apply_rope", rope_ignores_the_positions, "positions given"),
    ("apply_rope_tests", "apply_rope", rope_adds_an_absolute_angle, "e_0 turns within the pair"),
    ("apply_rope_tests", "apply_rope", rope_in_place, "changed x in place"),
    ("apply_rope_tests", "rope_scores", rope_scores_turns_only_the_keys, "keys turned by their absolute angle"),
    ("apply_rope_tests", "rope_scores", rope_scores_turns_only_the_queries, "keys turned by their absolute angle"),
    ("apply_rope_tests", "rope_scores", rope_scores_unscaled, "1/sqrt(d)"),
    ("apply_rope_tests", "rope_scores", rope_scores_keys_at_the_query_positions, "queries turn by q_positions"),
    ("selective_scan_tests", "selective_scan", selective_delta_not_positive, "not made positive"),
    ("selective_scan_tests", "selective_scan", selective_delta_by_relu, "not made positive"),
    ("selective_scan_tests", "selective_scan", selective_drops_h0, "initial state was dropped"),
    ("parallel_scan_tests", "scan_combine", combine_keeps_only_the_last_a, "not associative"),
    ("parallel_scan_tests", "parallel_scan", scan_drops_h0, "initial state was dropped"),
    ("parallel_scan_tests", "parallel_scan", scan_by_a_loop, "torch operations"),
    ("parallel_scan_tests", "parallel_scan", scan_in_place, "in place"),
    ("hmm_forward_scan_tests", "hmm_forward_scan", hmm_products_in_the_wrong_order, "do not commute"),
    ("hmm_forward_scan_tests", "hmm_forward_scan", hmm_drops_pi, "initial state was dropped"),
    ("hmm_forward_scan_tests", "hmm_forward_scan", hmm_emission_of_the_source_state, "B[:, obs]"),
    ("hmm_forward_scan_tests", "hmm_forward_scan", hmm_by_a_loop, "torch operations"),
]

# Mistakes that only the hidden tests meet.
HIDDEN = [
    ("apply_rope_tests", "apply_rope", rope_float32_angles, "float64"),
    ("apply_rope_tests", "rope_scores", rope_scores_hardcoded, "rope_scores(q "),
    ("tiled_attention_tests", "tiled_attention", tiled_hardcoded, "tiled_attention with B="),
    ("selective_scan_tests", "selective_scan", selective_hardcoded, "selective_scan with b="),
]

(test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution,
 test_hidden_tests_name_the_class_of_the_bug) = naming_tests(CELLS, visible=VISIBLE, hidden=HIDDEN)
