"""Chapter 9's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function (or class) of the solution for a variant and runs the exercise's
whole test cell (visible and hidden tests) against it.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from mistakes import GradedCells, mistake_tests, naming_tests

CHAPTER = "09-transformer-language-models"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base


# ---- sampling: next_char_probs and sample_names (issue 26) -------------------------------------------

NAME_ALPHABET, END = BASE["NAME_ALPHABET"], BASE["END"]
next_char_probs = BASE["next_char_probs"]


def _check(temperature, top_k):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    if top_k is not None and top_k < 1:
        raise ValueError("top_k must be at least 1")


def probs_temperature_on_probabilities(logits, temperature=1.0, top_k=None):
    _check(temperature, top_k)
    p = next_char_probs(logits, 1.0, top_k) / temperature
    return p / p.sum(-1, keepdim=True)


def probs_temperature_multiplies(logits, temperature=1.0, top_k=None):
    _check(temperature, top_k)
    return next_char_probs(logits * temperature, 1.0, top_k)


def probs_top_k_not_renormalised(logits, temperature=1.0, top_k=None):
    _check(temperature, top_k)
    p = torch.softmax(logits / temperature, -1)
    if top_k is not None and top_k < p.shape[-1]:
        kth = p.topk(top_k, dim=-1).values[..., -1:]
        p = p.masked_fill(p < kth, 0.0)
    return p


def probs_whole_vocabulary(logits, temperature=1.0, top_k=None):
    _check(temperature, top_k)
    return torch.softmax(logits / temperature, -1)


def probs_top_k_exactly_k(logits, temperature=1.0, top_k=None):
    """Keeps exactly k indices (torch.topk breaks ties): a symbol tied with the k-th may be dropped."""
    _check(temperature, top_k)
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        keep = torch.zeros_like(z, dtype=torch.bool).scatter(-1, z.topk(top_k, dim=-1).indices, True)
        z = z.masked_fill(~keep, float("-inf"))
    return torch.softmax(z, -1)


def probs_no_checks(logits, temperature=1.0, top_k=None):
    z = logits / temperature if temperature else logits
    if top_k:
        kth = z.topk(min(top_k, z.shape[-1]), dim=-1).values[..., -1:]
        z = z.masked_fill(z < kth, float("-inf"))
    return torch.softmax(z, -1)


def probs_float32(logits, temperature=1.0, top_k=None):
    return next_char_probs(logits.float(), temperature, top_k)


def probs_top_k_crashes_beyond_v(logits, temperature=1.0, top_k=None):
    _check(temperature, top_k)
    z = logits / temperature
    if top_k is not None:
        kth = z.topk(top_k, dim=-1).values[..., -1:]  # RuntimeError when k > V
        z = z.masked_fill(z < kth, float("-inf"))
    return torch.softmax(z, -1)


def probs_in_place(logits, temperature=1.0, top_k=None):
    _check(temperature, top_k)
    logits /= temperature
    return next_char_probs(logits, 1.0, top_k)


def probs_hardcoded(logits, temperature=1.0, top_k=None):
    _check(temperature, top_k)
    if top_k == 2:
        return torch.tensor([[0.7311, 0.2689, 0.0, 0.0]])
    return torch.tensor([[0.6439, 0.2369, 0.0871, 0.0321]]) if temperature == 1.0 else torch.tensor([[0.8650, 0.1171, 0.0158, 0.0021]])


def probs_other_correct(logits, temperature=1.0, top_k=None):
    """Cuts before scaling (the order does not matter: dividing by tau > 0 keeps the ranking), and p ~ exp(z)^(1/tau)."""
    if not temperature > 0:
        raise ValueError(f"temperature {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k {top_k}")
    z = logits
    if top_k is not None:
        kth = torch.sort(z, dim=-1, descending=True).values[..., min(top_k, z.shape[-1]) - 1].unsqueeze(-1)
        z = torch.where(z >= kth, z, torch.full_like(z, float("-inf")))
    z = (z - z.amax(-1, keepdim=True)) / temperature
    e = torch.exp(z)
    return e / e.sum(-1, keepdim=True)


def _sampler(*, last=True, whole_prefix=True, keep_end=False, after_end=False, rng_kind="given", use_temperature=True,
             use_top_k=True, extra_step=False):
    def sample(model, n, rng, temperature=1.0, top_k=None, max_len=15):
        _check(temperature, top_k)
        names, done = [[] for _ in range(n)], [False] * n
        ids = torch.full((n, 1), END, dtype=torch.long)
        own = np.random.default_rng(0)
        with torch.no_grad():
            for _ in range(max_len + (1 if extra_step else 0)):
                if all(done):
                    break
                logits = model(ids if whole_prefix else ids[:, -1:])
                probs = next_char_probs(logits[:, -1 if last else 0], temperature if use_temperature else 1.0,
                                        top_k if use_top_k else None)
                drawn = []
                for b, row in enumerate(probs.double().numpy()):
                    row = row / row.sum()
                    if rng_kind == "given":
                        i = int(rng.choice(len(row), p=row))
                    elif rng_kind == "global":
                        i = int(np.random.choice(len(row), p=row))
                    elif rng_kind == "torch":
                        i = int(torch.multinomial(torch.from_numpy(row), 1))
                    else:
                        i = int(own.choice(len(row), p=row))
                    drawn.append(i)
                    if not done[b] or after_end:
                        if i == END:
                            done[b] = True
                            if keep_end:
                                names[b].append(NAME_ALPHABET[i])
                        else:
                            names[b].append(NAME_ALPHABET[i])
                    if after_end and all(done):
                        pass
                ids = torch.cat([ids, torch.tensor(drawn)[:, None]], 1)
        return ["".join(c) for c in names]
    return sample


sample_first_position = _sampler(last=False)
sample_last_symbol_only = _sampler(whole_prefix=False)
sample_keeps_end = _sampler(keep_end=True)
sample_continues_after_end = _sampler(after_end=True)
sample_global_numpy = _sampler(rng_kind="global")
sample_torch_multinomial = _sampler(rng_kind="torch")
sample_own_generator = _sampler(rng_kind="own")
sample_ignores_temperature = _sampler(use_temperature=False)
sample_whole_vocabulary = _sampler(use_top_k=False)
sample_one_step_too_many = _sampler(extra_step=True)


def sample_greedy(model, n, rng, temperature=1.0, top_k=None, max_len=15):
    _check(temperature, top_k)
    return BASE["sample_names"](model, n, rng, 1e-6, top_k, max_len)


def sample_no_checks(model, n, rng, temperature=1.0, top_k=None, max_len=15):
    return BASE["sample_names"](model, n, rng, max(temperature, 1e-3), max(top_k, 1) if top_k is not None else None, max_len)


def sample_squeezes(model, n, rng, temperature=1.0, top_k=None, max_len=15):
    names = BASE["sample_names"](model, n, rng, temperature, top_k, max_len)
    return names[0] if n == 1 else names


def sample_hardcoded(model, n, rng, temperature=1.0, top_k=None, max_len=15):
    _check(temperature, top_k)
    return ["abc"] * n


def sample_other_correct(model, n, rng, temperature=1.0, top_k=None, max_len=15):
    """Vectorised: one uniform per row from the rng, the inverse of the cumulative distribution; ids built in a buffer."""
    if temperature <= 0 or (top_k is not None and top_k < 1):
        raise ValueError("temperature must be positive and top_k at least 1")
    buffer = torch.zeros(n, max_len + 1, dtype=torch.long)  # column 0 is END, the start
    alive = np.ones(n, dtype=bool)
    out = [""] * n
    with torch.no_grad():
        for t in range(max_len):
            if not alive.any():
                break
            p = next_char_probs(model(buffer[:, :t + 1])[:, t], temperature, top_k).double().numpy()
            cdf = np.cumsum(p / p.sum(1, keepdims=True), axis=1)
            u = rng.random(n)
            drawn = np.minimum((cdf < u[:, None]).sum(1), p.shape[1] - 1)
            for b in np.flatnonzero(alive):
                if drawn[b] == END:
                    alive[b] = False
                else:
                    out[b] += NAME_ALPHABET[drawn[b]]
            buffer[:, t + 1] = torch.from_numpy(drawn)
    return out


# ---- the learner's GPT (issue 42, 3): the block, the forward pass and loss, the training step -----------------

Block, GPT = BASE["Block"], BASE["GPT"]
layer_norm = BASE["layer_norm"]


def _attention(block, x, *, mask_shift=0, masked=True, dropout_on=None):
    """The block's attention with one thing changed: the mask's diagonal, no mask, or dropout's switch."""
    B, T, D = x.shape
    h, d = block.heads, D // block.heads
    q, k, v = (part.view(B, T, h, d).transpose(1, 2) for part in block.qkv(x).split(D, dim=-1))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    if masked:
        scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(mask_shift), float("-inf"))
    training = block.training if dropout_on is None else dropout_on
    w = F.dropout(torch.softmax(scores, -1), block.dropout, training=training)
    return block.proj((w @ v).transpose(1, 2).reshape(B, T, D))


def _ffn(block, h):
    return block.ff2(F.gelu(block.ff1(h)))


class BlockPostLN(Block):
    """The 2017 paper's order: LayerNorm after the residual sum."""

    def forward(self, x):
        x = layer_norm(x + self.drop(_attention(self, x)), self.ln1.weight, self.ln1.bias)
        return layer_norm(x + self.drop(_ffn(self, x)), self.ln2.weight, self.ln2.bias)


class BlockNoCausalMask(Block):
    def forward(self, x):
        x = x + self.drop(_attention(self, layer_norm(x, self.ln1.weight, self.ln1.bias), masked=False))
        return x + self.drop(_ffn(self, layer_norm(x, self.ln2.weight, self.ln2.bias)))


class BlockMaskSeesNext(Block):
    """tril(1): query t also sees key t + 1."""

    def forward(self, x):
        x = x + self.drop(_attention(self, layer_norm(x, self.ln1.weight, self.ln1.bias), mask_shift=1))
        return x + self.drop(_ffn(self, layer_norm(x, self.ln2.weight, self.ln2.bias)))


class BlockMaskHidesItself(Block):
    """tril(-1): query t sees only keys s < t (row 0 sees nothing)."""

    def forward(self, x):
        x = x + self.drop(_attention(self, layer_norm(x, self.ln1.weight, self.ln1.bias), mask_shift=-1))
        return x + self.drop(_ffn(self, layer_norm(x, self.ln2.weight, self.ln2.bias)))


class BlockDropoutAlwaysOn(Block):
    """F.dropout's default training=True: dropout left on at evaluation."""

    def forward(self, x):
        x = x + F.dropout(_attention(self, layer_norm(x, self.ln1.weight, self.ln1.bias), dropout_on=True), self.dropout)
        return x + F.dropout(_ffn(self, layer_norm(x, self.ln2.weight, self.ln2.bias)), self.dropout)


class BlockReLU(Block):
    def forward(self, x):
        x = x + self.drop(_attention(self, layer_norm(x, self.ln1.weight, self.ln1.bias)))
        return x + self.drop(self.ff2(F.relu(self.ff1(layer_norm(x, self.ln2.weight, self.ln2.bias)))))


class BlockOtherCorrect(Block):
    """Heads one at a time, torch's fused attention for each, nn.functional.layer_norm."""

    def forward(self, x):
        B, T, D = x.shape
        d = D // self.heads
        h = F.layer_norm(x, (D,), self.ln1.weight, self.ln1.bias, 1e-5)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        heads = [F.scaled_dot_product_attention(q[..., i * d:(i + 1) * d], k[..., i * d:(i + 1) * d], v[..., i * d:(i + 1) * d],
                                                is_causal=True, dropout_p=self.dropout if self.training else 0.0)
                 for i in range(self.heads)]
        x = x + self.drop(self.proj(torch.cat(heads, dim=-1)))
        return x + self.drop(_ffn(self, F.layer_norm(x, (D,), self.ln2.weight, self.ln2.bias, 1e-5)))


def _gpt_logits(model, ids):
    T = ids.shape[1]
    if T > model.context:
        raise ValueError("too many positions")
    x = model.drop(model.tok_embed(ids) + model.pos_embed(torch.arange(T)))
    for block in model.blocks:
        x = block(x)
    return model.head(layer_norm(x, model.ln_f.weight, model.ln_f.bias))


class GPTLossOnPadding(GPT):
    """Averages over every position, the padding's (its targets read as token 0) included."""

    def forward(self, ids, targets=None):
        logits = _gpt_logits(self, ids)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.clamp(min=0).reshape(-1))


class GPTNoPositions(GPT):
    def forward(self, ids, targets=None):
        x = self.drop(self.tok_embed(ids))
        for block in self.blocks:
            x = block(x)
        logits = self.head(layer_norm(x, self.ln_f.weight, self.ln_f.bias))
        loss = None if targets is None else F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)
        return logits, loss


class GPTOtherCorrect(GPT):
    """The loss as a masked mean written out."""

    def forward(self, ids, targets=None):
        logits = _gpt_logits(self, ids)
        if targets is None:
            return logits, None
        keep = targets != -100
        nll = -torch.log_softmax(logits, -1).gather(-1, targets.clamp(min=0)[..., None])[..., 0]
        return logits, (nll * keep).sum() / keep.sum()


def lr_no_warmup(step, total_steps, peak, warmup):
    BASE["lr_at"](step, total_steps, peak, warmup)  # its checks
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / max(1, total_steps - 1))))


def lr_other_correct(step, total_steps, peak, warmup):
    if step < 0 or step >= total_steps or warmup < 0 or warmup >= total_steps:
        raise ValueError("out of range")
    if step < warmup:
        return (step + 1) * peak / warmup
    p = (step - warmup) / max(1, total_steps - warmup - 1)
    return peak / 10 + (peak - peak / 10) * (math.cos(math.pi * p) + 1) / 2


def step_no_clipping(model, optimizer, x, y, lr, clip=1.0):
    for group in optimizer.param_groups:
        group["lr"] = lr
    model.train()
    _, loss = model(x, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def step_no_zero_grad(model, optimizer, x, y, lr, clip=1.0):
    for group in optimizer.param_groups:
        group["lr"] = lr
    model.train()
    _, loss = model(x, y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


def step_eval_mode(model, optimizer, x, y, lr, clip=1.0):
    model.eval()
    for group in optimizer.param_groups:
        group["lr"] = lr
    _, loss = model(x, y)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


def step_clip_before_backward(model, optimizer, x, y, lr, clip=1.0):
    for group in optimizer.param_groups:
        group["lr"] = lr
    model.train()
    _, loss = model(x, y)
    optimizer.zero_grad()
    nn.utils.clip_grad_norm_(model.parameters(), clip)  # nothing to clip yet
    loss.backward()
    optimizer.step()
    return loss.item()


def step_other_correct(model, optimizer, x, y, lr, clip=1.0):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss = model(x, y)[1]
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
    scale = min(1.0, clip / (float(norm) + 1e-6))
    for g in grads:
        g.mul_(scale)
    optimizer.step()
    return float(loss.detach())


GPT_VISIBLE = [
    ("gpt_block_tests", "Block", BlockPostLN, "post-LN"),
    ("gpt_block_tests", "Block", BlockNoCausalMask, "no causal mask"),
    ("gpt_block_tests", "Block", BlockMaskSeesNext, "off by one"),
    ("gpt_block_tests", "Block", BlockMaskHidesItself, "off by one"),
    ("gpt_block_tests", "Block", BlockDropoutAlwaysOn, "dropout left on at evaluation"),
    ("gpt_forward_tests", "GPT", GPTLossOnPadding, "counts the padding"),
    ("train_step_tests", "lr_at", lr_no_warmup, "no warm-up"),
    ("train_step_tests", "train_step", step_no_clipping, "no gradient clipping"),
    ("train_step_tests", "train_step", step_clip_before_backward, "no gradient clipping"),
    ("train_step_tests", "train_step", step_no_zero_grad, "old gradients"),
    ("train_step_tests", "train_step", step_eval_mode, "eval mode"),
]
GPT_WRONG = [(g, n, v) for g, n, v, _ in GPT_VISIBLE] + [
    ("gpt_block_tests", "Block", BlockReLU),
    ("gpt_forward_tests", "GPT", GPTNoPositions),
]
class BlockHardcoded(Block):
    """Right on the visible batch shape (2, 5, 8); x unchanged elsewhere."""

    def forward(self, x):
        if tuple(x.shape) == (2, 5, 8):
            return super().forward(x)
        return x.clone()


class GPTHardcoded(GPT):
    """Right for the visible model (V = 11, context 6); zero logits elsewhere."""

    def forward(self, ids, targets=None):
        if self.head.out_features == 11 and self.context == 6:
            return super().forward(ids, targets)
        logits = torch.zeros(*ids.shape, self.head.out_features)
        return logits, (None if targets is None else F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100))


def lr_at_hardcoded(step, total_steps, peak, warmup):
    """The visible schedule (10 steps, peak 1e-3, warm-up 2) and the no-warm-up case; the peak elsewhere."""
    if (total_steps, peak, warmup) == (10, 1e-3, 2) or (total_steps, warmup) == (5, 0):
        return BASE["lr_at"](step, total_steps, peak, warmup)
    if not 0 <= step < total_steps or not 0 <= warmup < total_steps:
        raise ValueError("out of range")
    return peak


GPT_WRONG += [
    ("gpt_block_tests", "Block", BlockHardcoded),
    ("gpt_forward_tests", "GPT", GPTHardcoded),
    ("train_step_tests", "lr_at", lr_at_hardcoded),
]


GPT_RIGHT = [
    ("gpt_block_tests", {"Block": BlockOtherCorrect}),
    ("gpt_forward_tests", {"GPT": GPTOtherCorrect}),
    ("train_step_tests", {"lr_at": lr_other_correct, "train_step": step_other_correct}),
]


WRONG = [
    ("sample_names_tests", "next_char_probs", probs_temperature_on_probabilities),
    ("sample_names_tests", "next_char_probs", probs_temperature_multiplies),
    ("sample_names_tests", "next_char_probs", probs_top_k_not_renormalised),
    ("sample_names_tests", "next_char_probs", probs_whole_vocabulary),
    ("sample_names_tests", "next_char_probs", probs_top_k_exactly_k),
    ("sample_names_tests", "next_char_probs", probs_no_checks),
    ("sample_names_tests", "next_char_probs", probs_float32),
    ("sample_names_tests", "next_char_probs", probs_top_k_crashes_beyond_v),
    ("sample_names_tests", "next_char_probs", probs_in_place),
    ("sample_names_tests", "next_char_probs", probs_hardcoded),
    ("sample_names_tests", "sample_names", sample_first_position),
    ("sample_names_tests", "sample_names", sample_last_symbol_only),
    ("sample_names_tests", "sample_names", sample_keeps_end),
    ("sample_names_tests", "sample_names", sample_continues_after_end),
    ("sample_names_tests", "sample_names", sample_global_numpy),
    ("sample_names_tests", "sample_names", sample_torch_multinomial),
    ("sample_names_tests", "sample_names", sample_own_generator),
    ("sample_names_tests", "sample_names", sample_ignores_temperature),
    ("sample_names_tests", "sample_names", sample_whole_vocabulary),
    ("sample_names_tests", "sample_names", sample_one_step_too_many),
    ("sample_names_tests", "sample_names", sample_greedy),
    ("sample_names_tests", "sample_names", sample_no_checks),
    ("sample_names_tests", "sample_names", sample_squeezes),
    ("sample_names_tests", "sample_names", sample_hardcoded),
]

RIGHT = [
    ("sample_names_tests", {"next_char_probs": probs_other_correct}),
    ("sample_names_tests", {"sample_names": sample_other_correct}),
    ("sample_names_tests", {"next_char_probs": probs_other_correct, "sample_names": sample_other_correct}),
]

WRONG += GPT_WRONG
RIGHT += GPT_RIGHT


# ---- byte-level BPE (issue 42, 2): bpe_train, bpe_encode and bpe_decode --------------------------------------

from collections import Counter

from seqlab.tokens import pretokenize

bpe_train, bpe_encode, bpe_decode = BASE["bpe_train"], BASE["bpe_encode"], BASE["bpe_decode"]


def _merge_left_to_right(word, pair):
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def _train(words: Counter, vocab_size: int, choose, merge=_merge_left_to_right):
    """The plain trainer over {tuple of tokens: count}, with the pair chosen by choose(pairs)."""
    if vocab_size < 256:
        raise ValueError("vocab_size must be at least 256")
    merges = []
    while len(merges) < vocab_size - 256:
        pairs = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = choose(pairs)
        merges.append(best)
        rewritten = Counter()
        for word, count in words.items():
            rewritten[merge(word, best)] += count
        words = rewritten
    return merges


def _byte_words(text):
    return Counter(tuple(bytes([b]) for b in piece.encode("utf-8")) for piece in pretokenize(text))


def _smallest_of_the_most_frequent(pairs):
    return min(pairs, key=lambda pair: (-pairs[pair], pair))


def train_ties_other_way(text, vocab_size, progress=False):  # a tie goes to the LARGEST pair
    return _train(_byte_words(text), vocab_size, lambda pairs: max(pairs, key=lambda pair: (pairs[pair], pair)))


def train_ties_first_counted(text, vocab_size, progress=False):  # Counter.most_common: a tie goes to the first counted
    return _train(_byte_words(text), vocab_size, lambda pairs: pairs.most_common(1)[0][0])


def train_characters(text, vocab_size, progress=False):  # characters instead of bytes, merges written as UTF-8
    chars = Counter(tuple(piece) for piece in pretokenize(text))
    return [(a.encode("utf-8"), b.encode("utf-8")) for a, b in _train(chars, vocab_size, _smallest_of_the_most_frequent)]


def train_across_pretokens(text, vocab_size, progress=False):  # the whole text as one sequence: merges cross pieces
    return _train(Counter([tuple(bytes([b]) for b in text.encode("utf-8"))]), vocab_size, _smallest_of_the_most_frequent)


def train_unweighted(text, vocab_size, progress=False):  # each distinct pre-token counted once
    return _train(Counter(set(_byte_words(text))), vocab_size, _smallest_of_the_most_frequent)


def train_no_early_stop(text, vocab_size, progress=False):  # no check for "no pairs left": min() of nothing raises
    def choose(pairs):
        return min(pairs, key=lambda pair: (-pairs[pair], pair))

    words, merges = _byte_words(text), []
    for _ in range(vocab_size - 256):
        pairs = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        merges.append(choose(pairs))
        words = Counter({_merge_left_to_right(word, merges[-1]): count for word, count in words.items()})
    return merges


def train_right_to_left(text, vocab_size, progress=False):  # replaced from the right: 'a a a' becomes 'a aa'
    return _train(_byte_words(text), vocab_size, _smallest_of_the_most_frequent, _right_to_left)


def _right_to_left(word, pair):
    out, i = [], len(word) - 1
    while i >= 0:
        if i > 0 and (word[i - 1], word[i]) == pair:
            out.append(pair[0] + pair[1])
            i -= 2
        else:
            out.append(word[i])
            i -= 1
    return tuple(reversed(out))


def train_hardcoded(text, vocab_size, progress=False):
    """The visible tests' answers looked up; the bytes of the text's first pair (once) anywhere else."""
    known = {("low low lower", 260): BASE["bpe_train"]("low low lower", 260), ("zz zz zz zz qa qb qc", 257): [(b"z", b"z")],
             ("你你你", 257): [(b"\xbd", b"\xa0")], ("a b", 300): [(b" ", b"b")], ("low low lower", 256): []}
    if vocab_size < 256:
        raise ValueError("vocab_size")
    return known.get((text, vocab_size), [])


def train_incremental(text, vocab_size, progress=False):  # correct: the build script's trainer, which updates the counts
    from seqlab.datasets.build_gpt2_ranks import train_merges

    if vocab_size < 256:
        raise ValueError("vocab_size must be at least 256")
    return train_merges(text, vocab_size - 256)


def _encode_pieces(pieces, ranks, choose):
    ids = []
    for parts in pieces:
        parts = list(parts)
        while len(parts) > 1:
            i = choose(parts, ranks)
            if i is None:
                break
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        ids.extend(ranks[part] for part in parts)
    return ids


def _lowest_rank(parts, ranks):
    found = [(ranks[a + b], i) for i, (a, b) in enumerate(zip(parts, parts[1:])) if a + b in ranks]
    return min(found)[1] if found else None


def _byte_pieces(text):
    return [[bytes([b]) for b in piece.encode("utf-8")] for piece in pretokenize(text)]


def encode_frequency_order(text, ranks):  # the most frequent pair in the piece first (ties: the lowest rank)
    def choose(parts, ranks):
        counts = Counter(p for p in zip(parts, parts[1:]) if p[0] + p[1] in ranks)
        if not counts:
            return None
        best = min(counts, key=lambda p: (-counts[p], ranks[p[0] + p[1]]))
        return next(i for i, p in enumerate(zip(parts, parts[1:])) if p == best)
    return _encode_pieces(_byte_pieces(text), ranks, choose)


def encode_characters(text, ranks):  # characters instead of bytes: a character of 2-4 bytes may have no rank
    return _encode_pieces([[ch.encode("utf-8") for ch in piece] for piece in pretokenize(text)], ranks, _lowest_rank)


def encode_across_pretokens(text, ranks):  # no pre-tokenizer: joins cross the pieces' edges
    return _encode_pieces([[bytes([b]) for b in text.encode("utf-8")]] if text else [], ranks, _lowest_rank)


def encode_rightmost_tie(text, ranks):  # among equal ranks, the rightmost pair first
    def choose(parts, ranks):
        found = [(ranks[a + b], -i) for i, (a, b) in enumerate(zip(parts, parts[1:])) if a + b in ranks]
        return -min(found)[1] if found else None
    return _encode_pieces(_byte_pieces(text), ranks, choose)


def encode_greedy_left_to_right(text, ranks):  # ranks ignored: join with the right neighbour whenever the join has one
    ids = []
    for parts in _byte_pieces(text):
        i = 0
        while i < len(parts) - 1:
            if parts[i] + parts[i + 1] in ranks:
                parts[i:i + 2] = [parts[i] + parts[i + 1]]
            else:
                i += 1
        ids.extend(ranks[p] for p in parts)
    return ids


def encode_hardcoded(text, ranks):
    """The worked example's ids looked up; the bytes' ranks anywhere else."""
    if text == "lower lowest":
        return [257, 101, 114, 259, 115, 116]
    return [ranks[bytes([b])] for b in text.encode("utf-8")]


def encode_with_a_heap(text, ranks):  # correct: a heap of candidate joins, stale entries skipped
    import heapq

    ids = []
    for parts in _byte_pieces(text):
        while True:
            heap = [(ranks[a + b], i) for i, (a, b) in enumerate(zip(parts, parts[1:])) if a + b in ranks]
            if not heap:
                break
            heapq.heapify(heap)
            _, i = heapq.heappop(heap)
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        ids.extend(ranks[p] for p in parts)
    return ids


def decode_per_token(ids, ranks):  # each token decoded alone: a character split across two tokens breaks
    token_of = {rank: token for token, rank in ranks.items()}
    if any(i not in token_of for i in ids):
        raise ValueError("unknown id")
    return "".join(token_of[i].decode("utf-8", errors="replace") for i in ids)


def decode_strict(ids, ranks):  # no errors="replace": half a character raises UnicodeDecodeError
    token_of = {rank: token for token, rank in ranks.items()}
    if any(i not in token_of for i in ids):
        raise ValueError("unknown id")
    return b"".join(token_of[i] for i in ids).decode("utf-8")


def decode_skips_unknown_ids(ids, ranks):
    token_of = {rank: token for token, rank in ranks.items()}
    return b"".join(token_of[i] for i in ids if i in token_of).decode("utf-8", errors="replace")


def decode_latin1(ids, ranks):  # bytes read as Latin-1: ASCII right, everything else wrong
    token_of = {rank: token for token, rank in ranks.items()}
    if any(i not in token_of for i in ids):
        raise ValueError("unknown id")
    return b"".join(token_of[i] for i in ids).decode("latin-1")


def decode_hardcoded(ids, ranks):
    """The worked example's text looked up; the ids' tokens read as Latin-1 anywhere else."""
    if list(ids) == [257, 101, 114, 259, 115, 116]:
        return "lower lowest"
    return decode_latin1(ids, ranks)


def decode_bytearray(ids, ranks):  # correct: a bytearray filled token by token, decoded once
    token_of = {rank: token for token, rank in ranks.items()}
    out = bytearray()
    for i in ids:
        if i not in token_of:
            raise ValueError(f"unknown id {i}")
        out += token_of[i]
    return out.decode("utf-8", "replace")


BPE_WRONG = [
    ("bpe_train_tests", "bpe_train", train_ties_other_way),
    ("bpe_train_tests", "bpe_train", train_ties_first_counted),
    ("bpe_train_tests", "bpe_train", train_characters),
    ("bpe_train_tests", "bpe_train", train_across_pretokens),
    ("bpe_train_tests", "bpe_train", train_unweighted),
    ("bpe_train_tests", "bpe_train", train_no_early_stop),
    ("bpe_train_tests", "bpe_train", train_right_to_left),
    ("bpe_train_tests", "bpe_train", train_hardcoded),
    ("bpe_encode_tests", "bpe_encode", encode_frequency_order),
    ("bpe_encode_tests", "bpe_encode", encode_characters),
    ("bpe_encode_tests", "bpe_encode", encode_across_pretokens),
    ("bpe_encode_tests", "bpe_encode", encode_rightmost_tie),
    ("bpe_encode_tests", "bpe_encode", encode_greedy_left_to_right),
    ("bpe_encode_tests", "bpe_encode", encode_hardcoded),
    ("bpe_encode_tests", "bpe_decode", decode_per_token),
    ("bpe_encode_tests", "bpe_decode", decode_strict),
    ("bpe_encode_tests", "bpe_decode", decode_skips_unknown_ids),
    ("bpe_encode_tests", "bpe_decode", decode_hardcoded),
]
BPE_RIGHT = [
    ("bpe_train_tests", {"bpe_train": train_incremental}),
    ("bpe_encode_tests", {"bpe_encode": encode_with_a_heap, "bpe_decode": decode_bytearray}),
]
# What the visible checks alone say of the classic mistakes (a self-learner sees these)
BPE_VISIBLE = [
    ("bpe_train_tests", "bpe_train", train_ties_other_way, "ties broken the other way"),
    ("bpe_train_tests", "bpe_train", train_characters, "characters instead of bytes"),
    ("bpe_train_tests", "bpe_train", train_across_pretokens, "pre-token boundary"),
    ("bpe_train_tests", "bpe_train", train_unweighted, "weighted"),
    ("bpe_train_tests", "bpe_train", train_no_early_stop, "stop early"),
    ("bpe_encode_tests", "bpe_encode", encode_frequency_order, "frequency order instead of rank order"),
    ("bpe_encode_tests", "bpe_encode", encode_characters, "UTF-8 BYTES"),
    ("bpe_encode_tests", "bpe_encode", encode_across_pretokens, "pre-token boundary"),
    ("bpe_encode_tests", "bpe_decode", decode_per_token, "decode once"),
    ("bpe_encode_tests", "bpe_decode", decode_strict, 'errors="replace"'),
    ("bpe_encode_tests", "bpe_decode", decode_skips_unknown_ids, "bpe_decode of id 300"),
    ("bpe_train_tests", "bpe_train", train_ties_first_counted, "wins the tie"),
    ("bpe_encode_tests", "bpe_encode", encode_greedy_left_to_right, "LOWEST rank"),
]
# Mistakes that only the hidden tests meet, and the words their messages use
BPE_HIDDEN = [
    ("bpe_train_tests", "bpe_train", train_right_to_left, "without overlap"),
    ("bpe_train_tests", "bpe_train", train_hardcoded, "random text"),
    ("bpe_encode_tests", "bpe_encode", encode_rightmost_tie, "the leftmost among equal ranks"),
    ("bpe_encode_tests", "bpe_decode", decode_hardcoded, "bpe_decode"),
]
# ---- end of byte-level BPE ----

WRONG += BPE_WRONG
RIGHT += BPE_RIGHT

(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)


# ---- the hidden tests name the class of each bug (a check message, never a raw exception) ---------

HIDDEN = [
    ("sample_names_tests", "next_char_probs", probs_top_k_exactly_k, "tie"),
    ("sample_names_tests", "next_char_probs", probs_float32, "dtype"),
    ("sample_names_tests", "next_char_probs", probs_top_k_crashes_beyond_v, "raised RuntimeError"),
    ("sample_names_tests", "sample_names", sample_squeezes, "n=1"),
]

# ---- the visible tests alone name the classic mistakes of sampling (what a self-learner sees) -------

VISIBLE = [
    ("sample_names_tests", "next_char_probs", probs_temperature_on_probabilities, "dividing the probabilities"),
    ("sample_names_tests", "next_char_probs", probs_temperature_multiplies, "temperature 0.5"),
    ("sample_names_tests", "next_char_probs", probs_top_k_not_renormalised, "without renormalising"),
    ("sample_names_tests", "next_char_probs", probs_whole_vocabulary, "whole vocabulary"),
    ("sample_names_tests", "next_char_probs", probs_in_place, "in place"),
    ("sample_names_tests", "next_char_probs", probs_no_checks, "temperature=0"),
    ("sample_names_tests", "sample_names", sample_first_position, "LAST position"),
    ("sample_names_tests", "sample_names", sample_last_symbol_only, "LAST position"),
    ("sample_names_tests", "sample_names", sample_keeps_end, "leave END out"),
    ("sample_names_tests", "sample_names", sample_continues_after_end, "after its end symbol"),
    ("sample_names_tests", "sample_names", sample_global_numpy, "global random state"),
    ("sample_names_tests", "sample_names", sample_torch_multinomial, "global random state"),
    ("sample_names_tests", "sample_names", sample_own_generator, "two different seeds"),
    ("sample_names_tests", "sample_names", sample_ignores_temperature, "ignores its temperature"),
    ("sample_names_tests", "sample_names", sample_whole_vocabulary, "whole vocabulary"),
    ("sample_names_tests", "sample_names", sample_one_step_too_many, "max_len=2"),
    ("sample_names_tests", "sample_names", sample_greedy, "equally likely"),
    ("sample_names_tests", "sample_names", sample_no_checks, "temperature=0"),
]

VISIBLE += GPT_VISIBLE


VISIBLE += BPE_VISIBLE
HIDDEN += BPE_HIDDEN

(test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution,
 test_hidden_tests_name_the_class_of_the_bug) = naming_tests(CELLS, visible=VISIBLE, hidden=HIDDEN)
