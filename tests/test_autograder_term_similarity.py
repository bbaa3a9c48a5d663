"""autograder/similarity.py on answers written apart and on planted copies (issue 44, 4), without grading: the
report reads the submitted notebooks only. Three students answer chapter 1's build_vocab and count_ngrams each in
their own way; a fourth copies the second with every name changed and the functions in another order; a fifth hands
in the student edition untouched. (The graded batch, with the similarity page made by grade.py --similarity through
the pool and a Dask cluster, is tests/test_autograder_term.py.)"""

from __future__ import annotations

import re
import sys

import nbformat
import pytest

from course import REPO

sys.path.insert(0, str(REPO / "autograder"))
from similarity import compare_chapter, similarity_report  # noqa: E402

pytest.importorskip("copydetect")

CHAPTER = "01-ngram-language-models"
HEAD = {"build_vocab": "def build_vocab(sentences: list[list[str]], min_count: int = 2) -> list[str]:\n",
        "count_ngrams": "def count_ngrams(sentences: list[list[str]], n: int) -> dict[tuple[str, ...], Counter]:\n"}
COUNTERS = {  # the course's own solution, as a student would write it
    "build_vocab": """    counts = Counter(word for sentence in sentences for word in sentence)
    specials = [UNK, BOS, EOS]
    kept = [w for w, c in counts.items() if c >= min_count and w not in specials]
    kept.sort(key=lambda w: (-counts[w], w))
    return specials + kept
""",
    "count_ngrams": """    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    counts = defaultdict(Counter)
    for sentence in sentences:
        padded = [BOS] * (n - 1) + list(sentence) + [EOS]
        for t in range(n - 1, len(padded)):
            counts[tuple(padded[t - n + 1:t])][padded[t]] += 1
    return dict(counts)
"""}
LOOPS = {  # by hand, with a helper
    "build_vocab": """    freq = _tally(sentences)
    words = sorted((w for w in freq if freq[w] >= min_count and w not in (UNK, BOS, EOS)),
                   key=lambda w: (-freq[w], w))
    return [UNK, BOS, EOS] + words


def _tally(sentences):
    freq = {}
    for s in sentences:
        for w in s:
            freq[w] = freq.get(w, 0) + 1
    return freq
""",
    "count_ngrams": """    if n < 1:
        raise ValueError("n must be positive")
    table = {}
    for s in sentences:
        toks = [BOS] * (n - 1) + s + [EOS]
        i = n - 1
        while i < len(toks):
            ctx = tuple(toks[i - n + 1:i])
            table.setdefault(ctx, Counter())
            table[ctx][toks[i]] += 1
            i += 1
    return table
"""}
ITERTOOLS = {  # chained iterators and zipped shifts
    "build_vocab": """    import itertools
    c = Counter(itertools.chain.from_iterable(sentences))
    for special in (UNK, BOS, EOS):
        c.pop(special, None)
    ranked = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))
    return [UNK, BOS, EOS] + [w for w, k in ranked if k >= min_count]
""",
    "count_ngrams": """    if n <= 0:
        raise ValueError(n)
    out = defaultdict(Counter)
    for sent in sentences:
        seq = (BOS,) * (n - 1) + tuple(sent) + (EOS,)
        for gram in zip(*(seq[j:] for j in range(n))):
            out[gram[:-1]][gram[-1]] += 1
    return dict(out)
"""}


def copied_from_loops() -> dict[str, str]:
    """LOOPS with every name changed and the helper moved above the function that calls it."""
    names = {"freq": "histogram", "words": "vocab_words", "_tally": "_count_all", "table": "result", "toks": "tokens",
             "ctx": "history", "s": "sent", "w": "token", "i": "pos"}
    renamed = {}
    for gid, body in LOOPS.items():
        for old, new in names.items():
            body = re.sub(rf"\b{old}\b", new, body)
        renamed[gid] = body
    answer, helper = renamed["build_vocab"].split("\n\n\n")
    return {"build_vocab": helper.strip() + "\n\n\n" + HEAD["build_vocab"] + answer.rstrip() + "\n",
            "count_ngrams": HEAD["count_ngrams"] + renamed["count_ngrams"]}


def write(workspace, student: str, bodies: dict[str, str] | None, whole: bool = False) -> None:
    release = REPO / "notebooks" / CHAPTER / f"{CHAPTER}.ipynb"
    nb = nbformat.read(release, as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if bodies and gid in bodies:
            cell.source = bodies[gid] if whole else HEAD[gid] + bodies[gid]
    folder = workspace / "submitted" / student / CHAPTER
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / release.name)


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("similarity")
    write(workspace, "counters", COUNTERS)
    write(workspace, "loops", LOOPS)
    write(workspace, "iterators", ITERTOOLS)
    write(workspace, "copier", copied_from_loops(), whole=True)
    write(workspace, "untouched", None)
    found = compare_chapter(workspace, CHAPTER, 0.0)
    return workspace, {tuple(p["students"]): p for p in found}


def test_a_renamed_reordered_copy_is_found(pairs):
    _, found = pairs
    copy = found[("copier", "loops")]
    assert copy["similarity"] >= 0.9, copy["similarity"]


def test_answers_written_apart_stay_below_the_threshold(pairs):
    _, found = pairs
    honest = {("counters", "loops"), ("counters", "iterators"), ("iterators", "loops"), ("copier", "counters"),
              ("copier", "iterators")}
    scores = {pair: round(found[pair]["similarity"], 2) if pair in found else 0.0 for pair in honest}
    assert max(scores.values()) < 0.6, scores
    assert min(found[("copier", "loops")]["similarity"], 1.0) > max(scores.values()) + 0.3


def test_the_student_edition_itself_is_no_evidence(pairs):
    _, found = pairs
    assert not any("untouched" in pair for pair in found)  # every line of it is given code


def test_the_page_lists_pairs_above_the_threshold_with_cells_side_by_side(pairs):
    workspace, _ = pairs
    page, count = similarity_report(workspace, [CHAPTER], 0.6)
    text = page.read_text()
    assert count == 1 and "<h3 class='pair'>copier and loops:" in text
    assert "histogram" in text and "freq" in text and "<mark>" in text
    assert "counters" not in text and "<script" not in text.lower()
