"""Chapter 9's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function (or class) of the solution for a variant and runs the exercise's
whole test cell (visible and hidden tests) against it.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

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

(test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution,
 test_hidden_tests_name_the_class_of_the_bug) = naming_tests(CELLS, visible=VISIBLE, hidden=HIDDEN)
