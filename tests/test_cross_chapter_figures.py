"""A quantity the course states in more than one place is one figure, computed or read from one record (issue 40, 1).

The fourth edition's read found the same quantity typed twice with two values: the spread of unscaled dot products
of width 512 was "±45" in chapter 7 and "±22" in chapter 8 (its standard deviation is sqrt(512) ≈ 23); chapter 5
called Brown "a thousandth" of GloVe's 6 billion words (it is about 1/6,900); chapter 6's GRU had three seconds per
epoch in three chapters. ``tests/test_claims.py`` checks that each number is printed by its own notebook, which
cannot see two notebooks printing two measurements of one quantity. Two checks close the class, on the solutions'
markdown (no notebook is run):

1. **Named quantities against their record.** A quantity that chapters share has one source here (``SHARED``): a
   record that seqlab ships (the seconds per epoch of ``helpers/seqlab/results/ch07_comparison.json``), the corpus
   itself (Brown's training tokens from ``seqlab.data``), or the formula (sqrt(512)). Every statement of it, in any
   cell of any chapter, formulas included, must be that value within the rounding it is written with (5% for an
   approximate one).
2. **Any figure with a unit typed in two chapters.** A number with a unit (%, ×, s, ...) that the markdown of two
   chapters states in sentences about the same thing (sharing a content word) is one quantity typed twice; it fails
   unless ``REPEATS`` says why each chapter may state it (a setting that each data set has, or a count that each
   chapter makes and prints from the same split).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable

import nbformat
import pytest

from course import REPO, solution_notebooks
from test_claims import quoted_numbers

SOLUTIONS = solution_notebooks()
COMPARISON_RECORD = REPO / "helpers" / "seqlab" / "results" / "ch07_comparison.json"
GLOVE_TOKENS = 6_000_000_000  # the 6B vectors (Pennington, Socher and Manning, 2014)

NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
WORD_RATIOS = {"a hundredth": 100.0, "a thousandth": 1_000.0, "a millionth": 1_000_000.0}


@cache
def brown_training_tokens() -> int:
    """Chapter 5's training text: the tokens of Brown's training split whose word occurs at least 5 times."""
    from seqlab.data import load_brown

    counts = Counter(w for s in load_brown("train", lower=True) for w in s.words)
    return sum(n for n in counts.values() if n >= 5)


def recorded_epoch_seconds() -> list[float]:
    return [row["seconds_per_epoch"] for row in json.loads(COMPARISON_RECORD.read_text())]


@dataclass(frozen=True)
class Shared:
    """A quantity several cells or chapters state: where a statement of it is (a sentence of the markdown, formulas
    kept), the value it states, and its one source."""

    name: str
    subject: re.Pattern  # a sentence that states it
    values: Callable[[str], list[str]]  # the values the sentence states, as written
    truth: Callable[[], list[float]]  # the record's value (or values: one per model)
    source: str


def _numbers_after(pattern: str) -> Callable[[str], list[str]]:
    compiled = re.compile(pattern + rf"\s*(?P<n>{NUMBER})", re.I)
    return lambda sentence: [m.group("n") for m in compiled.finditer(sentence)]


def _ratio_values(sentence: str) -> list[str]:
    found = [m.group(1) for m in re.finditer(rf"(?<![\w.,])({NUMBER})\s+times\s+(?:less|fewer|smaller)", sentence)]
    found += [m.group(1) for m in re.finditer(rf"\b1\s*/\s*({NUMBER})", sentence)]
    found += [f"{WORD_RATIOS[w.lower()]:.0f}" for w in re.findall("|".join(WORD_RATIOS), sentence, flags=re.I)]
    return found


def _epoch_seconds(sentence: str) -> list[str]:
    return [m.group("n") for m in re.finditer(rf"(?<![\w.,])(?P<n>{NUMBER})\s*(?:s|seconds?)\b(?:\s+of\s+(?:processor|wall|CPU)"
                                              rf"\s+time)?\s*(?:/|per|an|a|each)\s*epoch", sentence, re.I)]


SHARED = [
    Shared("the spread of unscaled dot products of width 512 (chapters 7 and 8)",
           re.compile(r"512.*(?:±|\\pm|standard deviation|spread)|(?:±|\\pm|standard deviation|spread).*512", re.I | re.S),
           _numbers_after(r"(?:±|\\pm|\\sqrt\{512\}\s*(?:\\approx|≈|=)|standard deviation of(?: about)?)"),
           lambda: [math.sqrt(512)], "the formula: the standard deviation of a sum of 512 products of unit normals"),
    Shared("Brown's training text against GloVe's 6 billion tokens (chapter 5)",
           re.compile(r"GloVe", re.I), _ratio_values, lambda: [GLOVE_TOKENS / brown_training_tokens()],
           "seqlab.data's Brown training split, words seen at least 5 times (chapter 5's training text)"),
    Shared("a model's seconds per epoch (chapters 6-8)",
           re.compile(r"epoch", re.I),
           _epoch_seconds,
           recorded_epoch_seconds, "helpers/seqlab/results/ch07_comparison.json, which every chapter's table reads"),
]


def sentences(markdown: str) -> list[str]:
    """The markdown's sentences with their formulas (code removed): a formula can state a value (``$\\pm 45$``)."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"<[^>\n]+>", " ", text)
    return [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*(])|\n\s*\n|\n[*-] ", text) if s.strip()]


def tolerance(written: str, approximate: bool) -> float:
    plain = written.replace(",", "")
    if "." in plain:
        return 0.5 * 10 ** -len(plain.split(".")[1])
    zeros = len(plain) - len(plain.rstrip("0")) if plain.rstrip("0") else 0
    return 0.5 * 10 ** zeros if approximate else 0.5


def agrees(written: str, truth: float, sentence: str) -> bool:
    """The written value is the record's within its rounding, or within 5% where the sentence says it is approximate."""
    value = float(written.replace(",", ""))
    approximate = bool(re.search(r"about|around|roughly|nearly|almost|some|~|≈|\\approx|or so", sentence, re.I))
    return abs(value - truth) <= max(tolerance(written, approximate), 0.05 * truth if approximate else 0.0)


def off_the_record(nb: Any, chapter: str) -> list[str]:
    """One line per statement of a SHARED quantity that is not its source's value."""
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for sentence in sentences(cell.source):
            for shared in SHARED:
                if not shared.subject.search(sentence):
                    continue
                for written in shared.values(sentence):
                    truths = shared.truth()
                    if not any(agrees(written, t, sentence) for t in truths):
                        problems.append(f"chapter {chapter}, cell {i}: {written} for {shared.name}; its source ({shared.source}) "
                                        f"says {', '.join(f'{t:,.1f}' for t in truths)}, in «{sentence[:200]}»")
    return problems


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_a_shared_quantity_is_its_records_value(path):
    problems = off_the_record(nbformat.read(path, as_version=4), path.parent.name[:2])
    assert not problems, "compute it or read it from its record, and write that value:\n" + "\n".join(problems)


# ---- 2. one figure typed in two chapters ---------------------------------------------------------------------------

# (the number as written, a word its sentences share, why each chapter may state it)
REPEATS: list[tuple[str, str, str]] = [
    ("80%", "split", "the training share of each data set's split (Brown, surnames, dates): a setting of each data set"),
    ("10%", "split", "the dev and test shares of each data set's split: a setting of each data set"),
    ("4.0%", "unknown", "the share of Brown's test tokens unseen in training: chapters 2 and 4 each count it on the same "
                        "split (seqlab.data) and print it (tests/test_claims.py checks both)"),
]
STOP = set("about which their these those there where while other every under after before would could should being "
           "between through against without within since still than then".split())


def content_words(sentence: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z]{5,}", sentence)} - STOP


def repeated_figures(notebooks: dict[str, Any]) -> list[str]:
    """One line per number with a unit that two chapters' markdown state about a shared subject, unless REPEATS says why."""
    stated = {}
    for chapter, nb in notebooks.items():
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                for quoted in quoted_numbers(cell.source):
                    if quoted.unit:
                        stated.setdefault(quoted.text, []).append((chapter, i, quoted.sentence))
    problems = []
    for number, places in stated.items():
        for (ch_a, cell_a, a), (ch_b, cell_b, b) in itertools.combinations(places, 2):
            shared = content_words(a) & content_words(b)
            if ch_a == ch_b or not shared:
                continue
            if any(n == number and word in shared for n, word, _ in REPEATS):
                continue
            problems.append(f"{number} in chapter {ch_a} (cell {cell_a}) and chapter {ch_b} (cell {cell_b}), both about "
                            f"{', '.join(sorted(shared))}: «{a[:120]}» / «{b[:120]}»")
    return problems


def test_no_figure_is_typed_in_two_chapters():
    problems = repeated_figures({p.parent.name[:2]: nbformat.read(p, as_version=4) for p in SOLUTIONS})
    assert not problems, ("one quantity, two typed copies: print it in each chapter from one record (and say so), or add it to "
                          "REPEATS with the reason each chapter may state it:\n" + "\n".join(problems))


# ---- the checks themselves, on the sentences the issue found ----------------------------------------------------

def notebook(*markdown: str) -> Any:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(m) for m in markdown])


def test_the_slips_of_issue_40_are_found_and_their_fixes_pass():
    ch7_old = "variance $d$. With $d = 512$, scores spread over $\\pm 45$ or so and the softmax puts almost all the weight on one."
    ch8_old = "With $d_k = 512$ the scores are spread over about $\\pm 22$: the softmax of such scores puts nearly all its weight."
    ch7_new = "With $d = 512$ the scores have a standard deviation of $\\sqrt{512} \\approx 23$, and the softmax puts almost all."
    assert len(off_the_record(notebook(ch7_old), "07")) == 1
    assert off_the_record(notebook(ch8_old), "08") == []  # 22 is sqrt(512) = 22.6 within 5%
    assert off_the_record(notebook(ch7_new), "07") == []
    ch5_old = "One million words is a thousandth of what GloVe saw, and it shows: some neighbours are good."
    ch5_new = "Brown is about 7,000 times less text than GloVe saw (the cell prints the ratio), and it shows."
    assert [p.split(": ")[1].split(" for")[0] for p in off_the_record(notebook(ch5_old), "05")] == ["1000"]
    assert off_the_record(notebook(ch5_new), "05") == []
    epochs = recorded_epoch_seconds()
    assert len(off_the_record(notebook("Chapter 6's GRU took 143.7 s per epoch (wall time)."), "07")) == 1
    assert off_the_record(notebook(f"Chapter 6's GRU took {epochs[0]} s of processor time per epoch."), "07") == []


def test_a_figure_typed_in_two_chapters_is_found():
    found = repeated_figures({"02": notebook("Unknown words are a 4.0% share of the test tokens."),
                              "04": notebook("The bigram HMM tags 81.5% of the unknown tokens, the 4.0% of test tokens unseen.")})
    assert found == []  # allowlisted in REPEATS: each chapter counts it on the same split
    found = repeated_figures({"06": notebook("An epoch of the GRU took 44.7 s of processor time."),
                              "08": notebook("Chapter 6's GRU: 44.7 s of processor time an epoch.")})
    assert len(found) == 1 and "44.7" in found[0]
    assert repeated_figures({"01": notebook("It reaches 44.7% of the words."), "08": notebook("An epoch took 44.7% longer.")}) == []
