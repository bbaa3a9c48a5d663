"""Which students' answers are alike: a class's answer cells compared with copydetect (winnowed fingerprints of the
tokenised code, names replaced, so renamed variables and reordered functions still match), pairs above a threshold
in one HTML page with the cells side by side.

    python autograder/grade.py WORKSPACE --similarity [--similarity-threshold 0.6]
    python autograder/similarity.py WORKSPACE --chapter CH [--threshold 0.6]

Only answer cells are compared (the cells the chapter's source marks as solutions, found in the student's notebook by
their grade id), each with the same cell of the other student, and every k-gram of the student edition's code (given
cells, and the answer cells' signatures, docstrings and "# YOUR CODE HERE") is boilerplate: code that all received is
no evidence. A pair's similarity is the larger of the two shares
of each student's answer tokens found in the other's (copydetect's measure). A listed pair is a reason to look, never
a verdict: short exercises written the obvious way can meet in the middle.
"""

from __future__ import annotations

import argparse
import html
import io
import itertools
import sys
from pathlib import Path

import nbformat
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from job import graded_notebooks  # noqa: E402
from safe_input import Refused, read_file  # noqa: E402

REPO = HERE.parent
NOISE, GUARANTEE = 25, 30  # copydetect's defaults: k-grams of 25 characters of filtered code, every 30 matched
MAX_NOTEBOOK = 50 * 2**20


def answer_ids(chapter: str) -> dict[str, list[str]]:
    """Per graded notebook (its file name): the grade ids of its answer cells, in order."""
    return {source.name: [c.metadata.nbgrader["grade_id"] for c in nbformat.read(source, as_version=4).cells
                          if c.metadata.get("nbgrader", {}).get("solution")]
            for source in graded_notebooks(REPO / "solutions" / chapter)}


def release_code(chapter: str, notebook: str) -> str:
    """What every student was given: the student edition's code cells (the answer cells' signatures included)."""
    path = REPO / "notebooks" / chapter / notebook
    if not path.exists():
        return ""
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


def student_answers(path: Path, ids: list[str]) -> dict[str, str] | None:
    """The student's answer cells by grade id; None where the notebook is missing or unreadable."""
    try:
        nb = nbformat.reads(read_file(path, MAX_NOTEBOOK).decode("utf-8", "replace"), as_version=4)
    except (OSError, Refused, ValueError, AttributeError, KeyError, TypeError):
        return None
    found = {}
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell.get("metadata"), dict) else {}
        gid = meta.get("grade_id") if isinstance(meta, dict) else None
        if gid in ids and gid not in found and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            found[gid] = source if isinstance(source, str) else "".join(source)
    return found


def fingerprint(code: str, boilerplate, window: int = GUARANTEE - NOISE + 1):
    from copydetect import CodeFingerprint

    return CodeFingerprint("answer.py", NOISE, window, boilerplate, fp=io.StringIO(code))


def given_prints(chapter: str, notebook: str) -> np.ndarray:
    """Every k-gram of the student edition's code (a window of 1: all of them, not a winnowed sample, so that no given
    line of a student's cell is left over as if it were theirs)."""
    return np.array(sorted(fingerprint(release_code(chapter, notebook), [], window=1).hashes), dtype=np.int64)


def compare_chapter(workspace: Path, chapter: str, threshold: float) -> list[dict]:
    """The pairs of one chapter above the threshold, most alike first, each with its cells side by side.

    Each answer cell is fingerprinted on its own (k-grams never span two cells, so cells left as given add nothing);
    a student's share is the tokens of all their cells found in the other's same cell over all their own tokens."""
    from copydetect import compare_files

    pairs = []
    students = sorted(d.name for d in (workspace / "submitted").iterdir() if (d / chapter).is_dir()) \
        if (workspace / "submitted").is_dir() else []
    for notebook, ids in answer_ids(chapter).items():
        given = given_prints(chapter, notebook)
        answers = {}
        for student in students:
            cells = student_answers(workspace / "submitted" / student / chapter / notebook, ids)
            if cells:
                prints = {gid: fingerprint(source, given) for gid, source in cells.items()}
                if sum(f.token_coverage for f in prints.values()) > 0:  # nothing beyond what was given: nothing to compare
                    answers[student] = (cells, prints)
        for first, second in itertools.combinations(sorted(answers), 2):
            (cells1, prints1), (cells2, prints2) = answers[first], answers[second]
            overlap1 = overlap2 = 0.0
            sides = []
            for gid in ids:
                left, right = cells1.get(gid, ""), cells2.get(gid, "")
                a, b = prints1.get(gid), prints2.get(gid)
                if a is None or b is None or a.token_coverage == 0 or b.token_coverage == 0:
                    sides.append((gid, html.escape(left), html.escape(right), 0.0))
                    continue
                _, (share_a, share_b), slices = compare_files(a, b)
                overlap1 += share_a * a.token_coverage
                overlap2 += share_b * b.token_coverage
                sides.append((gid, *highlighted(left, right, slices), float(max(share_a, share_b))))
            share1 = overlap1 / max(1, sum(f.token_coverage for f in prints1.values()))
            share2 = overlap2 / max(1, sum(f.token_coverage for f in prints2.values()))
            score = float(max(share1, share2))
            if score >= threshold:
                pairs.append({"chapter": chapter, "notebook": notebook, "students": (first, second), "similarity": score,
                              "shares": (float(share1), float(share2)), "cells": sides})
    return sorted(pairs, key=lambda p: -p["similarity"])


def highlighted(left: str, right: str, slices) -> tuple[str, str]:
    """Both cells as HTML, the code they share marked."""
    from copydetect.utils import highlight_overlap

    slices_a, slices_b = slices
    if len(slices_a) == 0 or slices_a.shape[-1] == 0:
        return html.escape(left), html.escape(right)
    marked_a, _ = highlight_overlap(left, slices_a, "<mark>", "</mark>", escape_html=True)
    marked_b, _ = highlight_overlap(right, slices_b, "<mark>", "</mark>", escape_html=True)
    return marked_a, marked_b


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Answer similarity</title>
<style>body{{font-family:sans-serif;margin:2em}} table.cells{{width:100%;table-layout:fixed;border-collapse:collapse}}
table.cells td{{vertical-align:top;border:1px solid #ccc;padding:.4em}} pre{{white-space:pre-wrap;margin:0}}
mark{{background:#ffd54f}} th{{text-align:left}}</style></head><body>
<h1>Answer similarity</h1>
<p>Pairs of students whose answer cells share at least {threshold:.0%} of one student's answer tokens (copydetect;
names are replaced before comparing, and the student edition's code is left out). A pair is a reason to look, not a
verdict.</p>
{body}
</body></html>
"""


def page(pairs: list[dict], chapters: list[str], threshold: float) -> str:
    parts = []
    for chapter in chapters:
        found = [p for p in pairs if p["chapter"] == chapter]
        parts.append(f"<h2>{html.escape(chapter)}: {len(found)} pair{'s' if len(found) != 1 else ''}</h2>")
        if not found:
            parts.append("<p>None above the threshold.</p>")
        for pair in found:
            first, second = (html.escape(s) for s in pair["students"])
            rows = "".join(f"<tr><th colspan='2'>{html.escape(gid)} ({score:.0%})</th></tr>"
                           f"<tr><td><pre>{left}</pre></td><td><pre>{right}</pre></td></tr>"
                           for gid, left, right, score in pair["cells"])
            parts.append(f"<h3 class='pair'>{first} and {second}: {pair['similarity']:.0%} "
                         f"({pair['shares'][0]:.0%} of {first}'s answers, {pair['shares'][1]:.0%} of {second}'s)</h3>"
                         f"<table class='cells'><tr><th>{first}</th><th>{second}</th></tr>{rows}</table>")
    return PAGE.format(threshold=threshold, body="\n".join(parts))


def similarity_report(workspace: Path, chapters: list[str], threshold: float = 0.6) -> tuple[Path, int]:
    """Write WORKSPACE/similarity.html; return its path and the number of pairs listed."""
    import copydetect  # noqa: F401 - an ImportError here tells the caller to install it

    pairs = [pair for chapter in chapters for pair in compare_chapter(workspace, chapter, threshold)]
    out = workspace / "similarity.html"
    out.write_text(page(pairs, chapters, threshold))
    return out, len(pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--chapter", action="append", required=True)
    parser.add_argument("--threshold", type=float, default=0.6)
    args = parser.parse_args(argv)
    unknown = [c for c in args.chapter if not (REPO / "solutions" / c).is_dir()]
    if unknown:
        print(f"similarity: unknown chapter(s) {unknown}", file=sys.stderr)
        return 2
    out, count = similarity_report(args.workspace.expanduser().resolve(), args.chapter, args.threshold)
    print(f"similarity: {count} pair(s) in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
