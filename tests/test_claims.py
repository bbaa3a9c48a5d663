"""Every number the prose of a solution notebook quotes is one the notebook prints (issue 24).

A changed result must not leave a stale sentence behind: each number in a solution notebook's markdown must
appear in the same notebook's executed output (what it prints: text, tables, the records it loads and prints),
within the rounding the text uses. The test reads the chapter's shared learner run (``course.learner_run``,
the run tests/test_nbconvert.py checks), so it adds no notebook execution to the suite. The suite runs on a
CPU, so the prose quotes CPU figures and says so where a GPU's differ.

What is checked, and what is not:

* **Checked**: every number of the prose, table cells included (74.2%, 0.967, 24,344, 2.2×, 15 s, 239.9,
  −1.90, 2.0 M), and the value of an inline formula that only names a quantity: ``$H = 256$``,
  ``$V \\approx 25{,}000$``, ``$p \\approx 0.18$``.
* **Not checked, by rule** (definitions and references, not results):
  1. code (fenced blocks, `inline code`) and formulas: display math, and inline math that is more than
     ``symbol = number`` (``$0.95^{\\ell} = 0.01$``, ``$\\sigma(1) \\approx 0.73$`` are formulas, worked by hand);
  2. integers below 10 with no %, ×, unit or scale after them (list items, "3 heads", "5 epochs");
  3. years: a four-digit integer 1900-2039 without a thousands separator ("Cho et al., 2014");
  4. references: a number right after §, chapter, ch., Exercise, cell, eq./equation, section, Hint, Figure,
     Table, part, question, ISO; the first number of a heading, list item or table row ("## 12.", "| 3 |");
     a digit inside a word, name, date or version (``GPT-2``, ``float64``, ``WordSim-353``, ``1950-01-01``);
  5. the figures of a cited work: a sentence that cites one ("Mikolov et al. (2013) published ...",
     "(Pennington, Socher and Manning, 2014)") states that work's numbers, not this notebook's.
* Everything else that the notebook does not print is in ``ALLOWLIST``, one entry per number (or per
  definition used throughout a chapter) with its reason.

Matching (``matches``): a number with d decimals matches a printed number within half a unit of its last
digit: 74.2% matches 74.21 and 0.742; 0.96 matches 96.4%; 97% matches 0.967 (an integer percentage, ratio or
time is rounded to the unit). A count is exact, except after "about", "around", "roughly", "nearly", "almost",
"some", "~", "≈" or ``\\approx``, where it is rounded at its last nonzero digit (about 24,900 matches 24,873;
about 25,000 does not match 24,343). "2.0 M" is 2.0 million, "3k" 3,000. A range of a timing, percentage or
ratio (15-40 s, 2-8×) matches a printed number inside it, a range of anything else only when both ends are
printed. Signs are ignored ("falls by 0.3" of −0.3). A number may be printed anywhere in the notebook: the
test catches a number printed nowhere, not one that a coincidence prints elsewhere.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

import nbformat
import pytest

from course import REPO, learner_marks, learner_run, solution_notebooks

SOLUTIONS = solution_notebooks()

# (chapter, the number as the text writes it, a phrase of its sentence ("" = any sentence of the chapter),
# why the notebook need not print it). Reviewed: each is a definition (a setting, a constant of a method),
# an illustration or a worked example, a setting the reader is asked to try, or a fact about a data set.
ALLOWLIST: list[tuple[str, str, str, str]] = [
    ("01", "0.75", "", "the Kneser-Ney discount D: a setting of the method (discount=0.75 in the code)"),
    ("01", "100", "seen 100 times", "an illustration of what a fixed discount does to a large count"),
    ("01", "1.19", "test suite", "the test suite's figure (tests/test_ch01_ngram.py records it), as the sentence says"),
    ("01", "1000", "times faster", "the speed-up that tests/test_ch01_ngram.py asserts, as the cell says"),
    ("02", "0.90", "", "the casino's transition probability: the definition of the example HMM"),
    ("02", "0.0225", "best last state", "the Viterbi table worked by hand just above"),
    ("02", "50%", "not 50%", "the naive threshold the sentence argues against"),
    ("02", "3.6", "bits", "log2 of the 12 tags: what one tag can carry"),
    ("03", "14", "-poulos", "an illustration: a name of 10 or 14 letters"),
    ("03", "9-14", "-poulos", "an illustration: where the ending of a 14-letter name sits"),
    ("03", "180", "Each origin has", "the smallest origin's total, the sum of its three splits printed below"),
    ("03", "500", "Each origin has", "the largest origin's total, the sum of its three splits printed below"),
    ("03", "10,000", "say, 10,000", "an illustration: a word vocabulary's size"),
    ("03", "26", "26 letters", "the English alphabet"),
    ("03", "150", "Set the length", "a setting the question asks the reader to try"),
    ("03", "50", "step 50", "a position in the question's sequence, not a result"),
    ("03", "64", "", "the embedding size and the batch size, settings of the model and its training"),
    ("03", "15%", "one-cycle", "the share of warm-up steps, a setting of the schedule"),
    ("03", "6,700", "names are few", "the sum of the train column printed in §2 (6,744)"),
    ("03", "16", "one time in 16", "the chance of 5 wins of 5 in either direction, 2 / 2**5"),
    ("04", "100", "a factor of 100", "the factor the question sets"),
    ("04", "30", "for 30 words", "an illustration of a long dependency"),
    ("04", "600", "A GRU with", "a size the question sets, to compare parameter counts"),
    ("04", "25", "", "the adding task's definition: the first marker lies in the first half of T = 50 steps"),
    ("04", "200", "", "the length T the question asks the reader to try; the notebook does not run it, and says so"),
    ("04", "50", "first 50 test sentences", "grading mode's setting, stated for the grader's reader"),
    ("04", "64", "batches of 64", "a setting of the adding task's training"),
    ("04", "2,000", "fixed sequences", "the size of the adding task's test set, a setting"),
    ("04", "150", "lengthen the sequence to 150", "a setting the widget's reader is asked to try"),
    ("04", "40", "bias of 40", "the reset-gate bias that pins the gate open (sigmoid(40) rounds to 1): a setting of the test"),
    ("05", "0-10", "WordSim-353", "the scale of the data set's human scores"),
    ("05", "5-20", "for small corpora", "the number of negatives Mikolov et al. (2013) recommend, a setting"),
    ("05", "0.890903844289", "published", "the published reference value, set beside the printed one"),
    ("05", "0.274392462614", "published", "the published reference value, set beside the printed one"),
    ("05", "30,000", "", "the size of the GloVe subset the course ships, and of the analogy search: a setting"),
    ("05", "400,000", "", "the size of GloVe's own vocabulary, a fact of the cited vectors"),
    ("05", "203", "chosen words", "the length of the word list defined in the cell below"),
    ("05", "800", "underflows", "an illustration of a score too large for the sigmoid"),
    ("05", "4,096", "batch of 4,096", "the trainer's batch size, a setting"),
    ("05", "0.025", "", "word2vec's learning rate, a setting (lr=0.025 in the code)"),
    ("05", "64", "one layer of 64 units", "the LSTM's size, a setting"),
    ("05", "10", "the 10 million of word2vec.c", "word2vec.c's table size, a setting (10_000_000 in the trainer's code)"),
    ("05", "27", "a table of 36 slots", "the worked example of the unigram table, by hand (the visible test checks it)"),
    ("05", "36", "a table of 36 slots", "the worked example of the unigram table, by hand (the visible test checks it)"),
    ("06", "0 to 1.5", "Move from", "the range of the widget's slider for alpha, a setting"),
    ("06", "0.6-0.7", "is common", "the usual strength of length normalisation in the literature, a setting, not a result"),
    ("06", "90", "only 90 of them", "arithmetic: the two-digit numbers are 10 to 99"),
    ("07", "90", "90 two-digit numbers", "arithmetic: the two-digit numbers are 10 to 99"),
    ("08", "512", "512 the scores", "an illustration of a wide key (512 is the width of the paper's model)"),
    ("08", "32", "32 sources", "how many sources the timing decodes at once, a setting"),
    ("09", "6,000", "most frequent words", "chapter 4's input vocabulary, a setting that chapter 4 prints"),
    ("09", "4,000", "The paper raised", "the cited paper's warm-up (Vaswani et al., 2017)"),
    ("09", "0.1", "README's results table", "the dropout rate of a run the README reports, a setting; the sentence quotes none of its results"),
]

APPROX = re.compile(r"(?:about|around|roughly|nearly|almost|some|~|≈)\s*$", re.I)
REFERENCE = re.compile(r"(?:§\s*|\b(?:chapters?|ch\.|exercises?|cells?|eq\.|equations?|sections?|hints?|figures?|"
                       r"tables?|parts?|questions?|ISO)\s+(?:\d+\s*(?:,|and|or|-|–)\s*)*)$", re.I)
UNIT = re.compile(r"\s*(?:%|×|x\b|times\b|s\b|ms\b|seconds?\b|min\b|minutes?\b|hours?\b|points?\b)", re.I)
SCALE = re.compile(r"\s*(?:(?P<M>M\b|million\b)|(?P<k>k\b|thousand\b))")
NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# A number, or a range of two; not part of a word, a name, a date or a version (GPT-2, float64, 1e-3, 3/4, 1950-01-01).
TOKEN = re.compile(rf"(?<![\w.,/^_\\])(?<!\w-)(?P<a>{NUMBER})(?:\s*(?:-|–|to)\s*(?P<b>{NUMBER}))?(?![\w/-]|\.\d|,\d)")
# An inline formula that only names a value: $H = 256$, $\rho \approx 0.9$, $V \approx 25{,}000$.
MATH_VALUE = re.compile(rf"^\s*\\?[A-Za-z]+(?:_\{{?\w+\}}?)?\s*(?P<op>=|\\approx)\s*[-−]?(?P<n>{NUMBER})\s*(?:\\%)?\s*$")
HEADING = re.compile(r"(?:^|\n)#+[ \t]*$")
LINE_START = re.compile(r"(?:^|\n)[ \t]*(?:[*-][ \t]*|\|[ \t]*)?$")
ENUMERATOR_END = re.compile(r"[.)]\s|\s*\|")  # "1. ", "(2) ", "| 3 |"
CITATION = re.compile(r"et al\.|\b[A-Z][\w-]+(?:,? (?:and|&) [A-Z][\w-]+|(?:, [A-Z][\w-]+)+ and [A-Z][\w-]+)?,? \(?(?:19|20)\d\d\b|"
                      r"^\s*\((?:19|20)\d\d\)")
NOT_AN_END = re.compile(r"(?:\bal|\be\.g|\bi\.e|\beq|\bch|\bvs|\bcf|\bFig)$")


@dataclass(frozen=True)
class Quoted:
    """One number of the prose: the range it states (low = high for one number), the tolerance its rounding
    gives, whether it is a percentage and whether it carries a unit, and its sentence."""

    text: str
    low: float
    high: float
    tolerance: float
    percent: bool
    unit: bool
    sentence: str


def rounding(number: str, approximate: bool, measured: bool) -> float:
    """Half a unit of the last digit written. An integer count is exact; an integer percentage, ratio or time
    (``measured``) is rounded to the unit; an approximate integer is rounded at its last nonzero digit."""
    plain = number.replace(",", "")
    if "." in plain:
        return 0.5 * 10 ** -len(plain.split(".")[1]) * (1 + 1e-9)
    zeros = len(plain) - len(plain.rstrip("0")) if plain.rstrip("0") else 0
    return 0.5 * 10 ** zeros if approximate else 0.5 if measured else 1e-9


def prose(markdown: str) -> str:
    """The markdown without code, formulas and markup; an inline formula ``$name = number$`` keeps its number
    (``$name \\approx number$`` as "≈ number")."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)

    def inline(m: re.Match) -> str:
        value = MATH_VALUE.match(m.group(1).replace("{,}", ","))
        if not value:
            return " "
        return f" {'≈' if value.group('op') == chr(92) + 'approx' else '='} {value.group('n')} "

    text = re.sub(r"\$([^$\n]+)\$", inline, text)
    text = re.sub(r"<[^>\n]+>", " ", text)  # HTML tags (details, summary), not their text
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    return text


def sentence_at(text: str, start: int, end: int) -> str:
    """The sentence (or table cell) around text[start:end], on one line."""
    ends = [m.start() for m in re.finditer(r"\.\s|\n\n|\|", text) if not NOT_AN_END.search(text[:m.start()])]
    left = max([e for e in ends if e < start], default=-1)
    right = min([e for e in ends if e >= end], default=len(text) - 1)
    return " ".join(text[left + 1:right + 1].split())


def quoted_numbers(markdown: str) -> list[Quoted]:
    """The numbers of a markdown cell that the rules check (see the module's notes)."""
    text = prose(markdown)
    found = []
    for m in TOKEN.finditer(text):
        a, b = m.group("a"), m.group("b")
        before, after = text[:m.start()], text[m.end():]
        unit, scale = UNIT.match(after), SCALE.match(after)
        enumerator = HEADING.search(before) or (LINE_START.search(before) and ENUMERATOR_END.match(after))
        if REFERENCE.search(before) or (b is None and not unit and enumerator):
            continue  # rule 4
        if b is None and not unit and not scale and (re.fullmatch(r"\d", a) or re.fullmatch(r"19\d\d|20[0-3]\d", a)):
            continue  # rules 2 and 3
        sentence = sentence_at(text, m.start(), m.end())
        if CITATION.search(sentence):
            continue  # rule 5
        approximate = bool(APPROX.search(before))
        factor = 1e6 if scale and scale.group("M") else 1e3 if scale and scale.group("k") else 1.0
        low, high = sorted(float(n.replace(",", "")) * factor for n in (a, b or a))
        tolerance = max(rounding(n, approximate, bool(unit)) for n in (a, b or a)) * factor
        percent = bool(re.match(r"\s*%", after))
        found.append(Quoted(m.group(0) + ("%" if percent else ""), low, high, tolerance, percent, bool(unit), sentence))
    return found


def printed_numbers(text: str) -> list[float]:
    """Every number in a notebook's printed output (3.2e-05, 24,344 and 1.52x included), without its sign."""
    return [float(m.group(1).replace(",", ""))
            for m in re.finditer(r"(?<![\w.])[-−]?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.?\d+(?:[eE][-+]?\d+)?)", text)]


def matches(quoted: Quoted, printed: Iterable[float]) -> bool:
    """Whether a printed number is the quoted one within the text's rounding (see the module's notes)."""
    low, high, tolerance = quoted.low, quoted.high, quoted.tolerance
    ends_found = set()
    for p in printed:
        candidates = [p, 100 * p] if quoted.percent else [p, p / 100] if high < 1 else [p]
        for c in candidates:
            if abs(c - low) <= tolerance and abs(c - high) <= tolerance:
                return True
            if quoted.unit and low - tolerance <= c <= high + tolerance:
                return True
            ends_found.update(end for end in (low, high) if abs(c - end) <= tolerance)
    return ends_found == {low, high}


def outputs_text(nb: Any) -> str:
    """What a notebook printed: streams and the text forms of results and displays (HTML without its tags)."""
    parts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                parts.append(output.text)
            elif output.output_type in ("execute_result", "display_data"):
                data = output.get("data", {})
                parts.extend(re.sub(r"<[^>]+>", " ", data[kind]) for kind in ("text/plain", "text/markdown", "text/html")
                             if kind in data)
    return "\n".join(parts)


def allowed(chapter: str, quoted: Quoted) -> bool:
    return any(c == chapter and number == quoted.text and phrase in quoted.sentence for c, number, phrase, _ in ALLOWLIST)


def unbacked(source: Any, executed: Any, chapter: str) -> list[str]:
    """One line per quoted number that the executed notebook does not print: chapter, cell, number, sentence."""
    printed = printed_numbers(outputs_text(executed))
    return [f"chapter {chapter}, cell {i}: {quoted.text!r} is not printed, in «{quoted.sentence}»"
            for i, cell in enumerate(source.cells) if cell.cell_type == "markdown"
            for quoted in quoted_numbers(cell.source)
            if not allowed(chapter, quoted) and not matches(quoted, printed)]


@pytest.mark.parametrize("path", [pytest.param(p, marks=learner_marks(p.parent.name)) for p in SOLUTIONS],
                         ids=[p.stem for p in SOLUTIONS])
def test_every_quoted_number_is_printed(path):
    run = learner_run(path)  # the chapter's shared run: tests/test_nbconvert.py checks it ran clean
    assert run.notebook is not None, f"{path.name}: nbconvert wrote no notebook (exit {run.returncode})"
    source = nbformat.read(path, as_version=4)
    problems = unbacked(source, run.notebook, path.parent.name[:2])
    assert not problems, f"{len(problems)} number(s) in the prose that the notebook does not print:\n" + "\n".join(problems)


def quoted(markdown: str) -> list[str]:
    return [q.text for q in quoted_numbers(markdown)]


def backed(markdown: str, output: str) -> list[bool]:
    printed = printed_numbers(output)
    return [matches(q, printed) for q in quoted_numbers(markdown)]


def test_which_numbers_are_checked():
    """The rules of the module's notes, on sentences of the course (no notebook is run)."""
    assert quoted("It is 96% sure, with 0.967 and 24,344 tokens, 2.2× faster, in 15 s.") == ["96%", "0.967", "24,344", "2.2", "15"]
    assert quoted("a bidirectional GRU encoder, $H = 256$, no attention") == ["256"]
    assert quoted("multiplies them by $V \\approx 25{,}000$.") == ["25,000"]
    assert quoted("(Solve $0.95^{\\ell} = 0.01$.) and $\\sigma(1) \\approx 0.73$; `batch_size=64`") == []
    assert quoted("```\nH = 256\n```\n$$\\log 0.15 = -1.90$$") == []
    assert quoted("Exercise 10, §12, chapter 7 and cells 47-50, eq. 7, ISO 8601, GPT-2, float64, 1950-01-01") == []
    assert quoted("## 12. Results\n\n1. first\n| 14 | results |") == []
    assert quoted("3 heads, 5 epochs, in 2014 (Cho et al., 2014)") == []
    assert quoted("Mikolov et al. (2013) published 19,544 questions in 14 categories.") == []
    assert quoted("(Pennington, Socher and Manning, 2014), trained on 6 billion words: 400,000 of them") == []
    assert quoted("on 2 CPU cores this takes about 15-40 seconds; 2.0 M parameters") == ["15-40", "2.0"]


def test_matching_within_the_text_rounding():
    assert backed("74.2% and 0.742 and 74%", "accuracy 0.74213") == [True, True, True]
    assert backed("The model is 97% sure", "('Polish', 0.967)") == [True]
    assert backed("The model is 96% sure", "('Polish', 0.967)") == [False]  # issue 24, chapter 3 cell 77
    assert backed("a probability of 0.96", "Polish 96.4%") == [True]
    assert backed("about 24,900 words", "24,873 tokens") == [True]
    assert backed("about 25,000 words", "24,343 tokens") == [False]
    assert backed("$V \\approx 25{,}000$", "n=1: 24,343 distinct n-grams") == [False]  # chapter 1 cell 63
    assert backed("24,343 tokens", "24343") == [True]
    assert backed("the 24,344 outputs", "24,343 tokens") == [False]  # counts are exact
    assert backed("2.0 M against 3.3 M", "1,995,200 and 3,336,832 parameters") == [True, True]
    assert backed("log 0.15 is −1.90", "-1.897") == [False, True]  # signs are ignored
    assert backed("a speed-up of 2-8×", "speed-up 3.1x") == [True]  # a measured range: a value inside
    assert backed("from 180 to 500 names", "Czech 180, Spanish 420") == [False]  # a range of counts: both ends
    assert backed("from 180 to 500 names", "Czech 180, Spanish 500") == [True]
    assert backed("takes 15-40 seconds", "in 55.2 s") == [False]


def test_the_listed_slips_fail_and_their_fixes_pass():
    """Sentences of issue 24 before and after, against what the notebooks printed."""
    h128 = "numbers model: trained by `python -m seqlab.seq2seq --task numbers --epochs 6 --hidden 128 --embed 32`"
    assert backed("(a bidirectional GRU encoder, $H = 256$, no attention)", h128) == [False]  # chapter 6 cell 61
    assert backed("(a bidirectional GRU encoder, $H = 128$: the `--hidden 128` of the command)", h128) == [True]
    issue_run = "dev accuracy: 7.0% at initialisation, best 74.2% after 20 epochs, 74.2% after 20"
    assert backed("The dev accuracy peaks two epochs before the end (74.4% against 74.0%).", issue_run) == [False, False]
    assert backed("the 2,000 most frequent words", "head 2,000 words x 256") == [True]
    assert backed("the gates are worth another 20 points", "221.7 against 200.1") == [False]


def test_a_failure_names_chapter_cell_sentence_and_number():
    source = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title"),
                                             nbformat.v4.new_markdown_cell("Our model: $H = 256$. It is good.")])
    executed = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "print(1)", outputs=[nbformat.v4.new_output("stream", name="stdout", text="--hidden 128\n")])])
    assert unbacked(source, executed, "06") == ["chapter 06, cell 1: '256' is not printed, in «Our model: = 256 .»"]
    executed.cells[0].outputs[0].text = "--hidden 256\n"
    assert unbacked(source, executed, "06") == []


# A cell's last expression is displayed: a test cell whose last call returns the exception it expected shows
# "ValueError(...)", a cell ending on a model shows its repr (issue 40: chapter 4 cell 69, chapter 3 cell 106).
STRAY_DISPLAY = re.compile(r"^(?:<?[A-Z]\w*(?:Error|Exception|Warning)\b|[A-Z]\w*\(\n\s+\(\w+\): )")


def stray_displays(executed: Any) -> list[str]:
    """One line per cell whose displayed result is an exception or a torch module: a value shown by accident."""
    return [f"cell {i}: displays {output['data']['text/plain'].splitlines()[0][:80]!r}"
            for i, cell in enumerate(executed.cells) if cell.cell_type == "code"
            for output in cell.get("outputs", []) if output.output_type == "execute_result"
            and STRAY_DISPLAY.match(output.get("data", {}).get("text/plain", ""))]


@pytest.mark.parametrize("path", [pytest.param(p, marks=learner_marks(p.parent.name)) for p in SOLUTIONS],
                         ids=[p.stem for p in SOLUTIONS])
def test_no_cell_displays_an_exception_or_a_model_by_accident(path):
    run = learner_run(path)
    assert run.notebook is not None, f"{path.name}: nbconvert wrote no notebook (exit {run.returncode})"
    problems = stray_displays(run.notebook)
    assert not problems, "end the cell with an assignment or a print:\n" + "\n".join(problems)


def test_a_stray_display_is_found():
    def shown(text):
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
            "execute_result", data={"text/plain": text}, execution_count=1)])])
    assert stray_displays(shown("ValueError('no token to score: every length is 0')")) == \
        ["cell 0: displays \"ValueError('no token to score: every length is 0')\""]
    assert stray_displays(shown("CharLM(\n  (embed): Embedding(30, 16)\n)")) == ["cell 0: displays 'CharLM('"]
    assert stray_displays(shown("(0.8, 0.5)")) == [] and stray_displays(shown("Counter({'a': 2})")) == []


# Wordings that state the result of a run the notebook does not make (issue 40, 2): "analogies (not shown) are
# almost never right", "changed it by about as much as another seed might" after one seed. A result is printed,
# or the sentence says it is a prediction and where it comes from.
UNRUN_CLAIM = re.compile(r"\(not shown\)|\babout as much as another\b|\bas (?:much|little) as another seed\b|"
                         r"\banother seed (?:might|would|could|can)\b(?! undo)", re.I)


def unrun_claims(nb: Any, chapter: str) -> list[str]:
    return [f"chapter {chapter}, cell {i}: «{sentence_at(cell.source, m.start(), m.end())}»"
            for i, cell in enumerate(nb.cells) if cell.cell_type == "markdown" for m in UNRUN_CLAIM.finditer(cell.source)]


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_no_sentence_claims_a_run_the_notebook_does_not_make(path):
    problems = unrun_claims(nbformat.read(path, as_version=4), path.parent.name[:2])
    assert not problems, "print the result, or say it is a prediction and give its source:\n" + "\n".join(problems)


def test_an_unrun_claim_is_found():
    def cells(text):
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
    assert len(unrun_claims(cells("The Spearman is low, and analogies (not shown) are almost never right."), "05")) == 1
    assert len(unrun_claims(cells("Removing the warm-up changed it by about as much as another seed might."), "08")) == 1
    assert unrun_claims(cells("This notebook trains one seed, so it cannot say how much another seed would undo."), "08") == []


# Figures of runs the notebook does not make (issue 40, 2). Chapter 8 said "with 0.1 the dates model reached the same
# 100% on dev" and "drawing the random masks took about a third of each training step": the README's figures, of runs
# the notebook never made; 100% happened to be printed elsewhere in it, so the check of printed numbers passed them.
# Two rules, on the source alone:
# 1. a result of a run under other settings ("with 0.1 the model reached ...") or a share of a step's time in words
#    ("a third of each step") says where it comes from: this notebook's output ("printed", "prints") or another
#    source (the README, the test suite, a run made outside the notebook);
# 2. a sentence that credits another source quotes none of that run's figures: each number in it is a setting or a
#    reference, allowlisted above with its reason (word fractions count as figures here too).
ELSEWHERE = re.compile(r"\bREADME\b|\btest suite\b|\btests/|\bruns? (?:made|done|trained) outside\b|\boutside (?:this|the) notebook\b|"
                       r"\b(?:not|never) (?:run|trained|measured) (?:here|in this notebook)\b", re.I)
PRINTED_HERE = re.compile(r"\bprint(?:s|ed)\b", re.I)
OTHER_SETTINGS = re.compile(r"\bwith (?:[^.;()]|\.(?=\d)){1,40}? (?:the|this|our|a|its) [\w -]{0,30}?"
                            r"(?:model|run|network|tagger|classifier|LSTM|RNN|GRU|Transformer)s? "
                            r"(?:reached|reaches|got|gets|scored|scores|gained|gains|lost|loses|fell|falls|rose|rises|matched|matches)\b", re.I)
SHARE_OF_A_STEP = re.compile(r"\b(?:an?|one) (?:half|third|quarter|fifth|tenth)s? of (?:each|every|the|a|its) (?:training |decoding )?"
                             r"(?:steps?|epochs?|runs?|time)\b", re.I)
WORD_FIGURE = re.compile(r"\b(?:an?|one) (?:half|third|quarter|fifth|tenth|hundredth|thousandth)\b|\bhalf (?:of|as)\b|\btwice as\b|"
                         r"\b(?:two|three|four|five|ten|a hundred|a thousand) times (?:as|more|less|fewer|faster|slower)\b", re.I)


def figures_of_unrun_runs(nb: Any, chapter: str) -> list[str]:
    """One line per figure of a run the notebook does not make (the two rules above)."""
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        text = prose(cell.source)
        for pattern in (OTHER_SETTINGS, SHARE_OF_A_STEP):
            for m in pattern.finditer(text):
                sentence = sentence_at(text, m.start(), m.end())
                if not ELSEWHERE.search(sentence) and not PRINTED_HERE.search(sentence):
                    problems.append(f"chapter {chapter}, cell {i}: {m.group(0)!r}, a run this notebook does not make, in «{sentence}»")
        for quoted in quoted_numbers(cell.source):
            if ELSEWHERE.search(quoted.sentence) and not allowed(chapter, quoted):
                problems.append(f"chapter {chapter}, cell {i}: {quoted.text!r} from another source's run, in «{quoted.sentence}»")
        for m in WORD_FIGURE.finditer(text):
            sentence = sentence_at(text, m.start(), m.end())
            if ELSEWHERE.search(sentence):
                problems.append(f"chapter {chapter}, cell {i}: {m.group(0)!r} from another source's run, in «{sentence}»")
    return problems


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_no_figure_of_a_run_the_notebook_does_not_make(path):
    problems = figures_of_unrun_runs(nbformat.read(path, as_version=4), path.parent.name[:2])
    assert not problems, ("make the run and print its figure, or name the other source and leave its figures out (a setting "
                          "or a reference goes in ALLOWLIST with its reason):\n" + "\n".join(problems))


def test_a_figure_of_another_run_is_found():
    def found(text, chapter="08"):
        return [p.split(": ", 1)[1].split(",")[0] for p in figures_of_unrun_runs(
            nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)]), chapter)]
    # chapter 8 before issue 40 (cell 66)
    assert found("Dropout: none in the dates models, whose pairs leave little to overfit (with 0.1 the dates model reached "
                 "the same 100% on dev), and where drawing the random masks took about a third of each training step.") == \
        ["'with 0.1 the dates model reached'", "'a third of each training step'"]
    assert found("With dropout 0.1 (README, Results) the dates model reached the same 100% on dev.") == ["'0.1' from another source's run",
                                                                                                        "'100%' from another source's run"]
    assert found("The README reports that drawing the masks takes a third of each step.") == ["'a third' from another source's run"]
    assert found("With dropout the dates model reached 99.1% on dev (printed above).") == []
    assert found("This notebook trains it for 20 epochs and prints 97.5% on dev.") == []
    assert found("nltk's distributions sum to 1.19 (the test suite records it).", "01") == []  # allowlisted: the test suite's figure


# One model's cost is one figure across chapters (issue 40, 1): chapter 6's GRU took 143.7 s an epoch in chapter 6's
# table (the wall time of its committed run), 34.6 in chapter 7's (processor time, one thread) and 44.7 in chapter 8's.
# The comparison tables of chapters 6-8 (seqlab.seq2seq.comparison_table) print the seconds per epoch of the shared
# record, helpers/seqlab/results/ch07_comparison.json, for every model the record holds; a model is known by its
# number of parameters, which its name in each chapter's table does not change.
TABLE_ROW = re.compile(r"^(?P<model>.{34}) +(?P<parameters>\d{1,3}(?:,\d{3})*) +(?P<seconds>\d+\.\d) +\d+\.\d%", re.M)
TIMING_RECORD = REPO / "helpers" / "seqlab" / "results" / "ch07_comparison.json"


def costs_off_the_record(printed: str, record: list[dict]) -> list[str]:
    """One line per printed table row whose model the record holds, with other seconds per epoch than the record's."""
    recorded = {row["parameters"]: row for row in record}
    problems = []
    for m in TABLE_ROW.finditer(printed):
        row = recorded.get(int(m.group("parameters").replace(",", "")))
        if row is not None and float(m.group("seconds")) != round(row["seconds_per_epoch"], 1):
            problems.append(f"{m.group('model').strip()}: {m.group('seconds')} s/epoch printed, "
                            f"{row['seconds_per_epoch']} in the record ({row['model']})")
    return problems


COMPARING = [p for p in SOLUTIONS if "comparison_table(" in p.read_text()]


@pytest.mark.parametrize("path", [pytest.param(p, marks=learner_marks(p.parent.name)) for p in COMPARING],
                         ids=[p.stem for p in COMPARING])
def test_a_models_epoch_cost_is_the_records_in_every_chapter(path):
    run = learner_run(path)
    assert run.notebook is not None, f"{path.name}: nbconvert wrote no notebook (exit {run.returncode})"
    problems = costs_off_the_record(outputs_text(run.notebook), json.loads(TIMING_RECORD.read_text()))
    assert not problems, (f"{path.parent.name[:2]}: read seconds per epoch from {TIMING_RECORD.name}, as the other "
                          "chapters do:\n" + "\n".join(problems))


def test_a_cost_off_the_record_is_found():
    record = [{"model": "ch6 GRU, no attention: dates", "parameters": 223759, "seconds_per_epoch": 34.6}]
    table = ("GRU seq2seq, no attention: dates      223,759    143.7       47.4%            1 epoch\n"
             "ch8 Transformer: dates                239,000     17.5      100.0%            8 epochs\n")
    assert costs_off_the_record(table, record) == \
        ["GRU seq2seq, no attention: dates: 143.7 s/epoch printed, 34.6 in the record (ch6 GRU, no attention: dates)"]
    assert costs_off_the_record(table.replace("143.7", " 34.6"), record) == []
