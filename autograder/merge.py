"""Put job results (result.json + executed notebooks) into the nbgrader gradebook and workspace.

After merging, formgrader shows the grades and the executed notebooks (autograded/), manual
grading works as usual, and `nbgrader export` exports them. Merging a result twice gives the
same gradebook; a manual score already given is never overwritten (as nbgrader's SaveAutoGrades).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import SaveCells

from job import canonical, graded_notebooks


def register_chapter(db_url: str, source_dir: Path) -> None:
    """What `nbgrader generate_assignment` stores: the assignment, its notebooks, grade/solution/source cells."""
    chapter = source_dir.name
    with Gradebook(db_url) as gb:
        gb.update_or_create_assignment(chapter)
    for source in graded_notebooks(source_dir):
        resources = {"nbgrader": {"db_url": db_url, "assignment": chapter, "notebook": source.stem}}
        SaveCells().preprocess(canonical(source), resources)


def merge_result(db_url: str, workspace: Path, result_dir: Path) -> dict:
    result = json.loads((result_dir / "result.json").read_text())
    student, chapter = result["student"], result["chapter"]
    with Gradebook(db_url) as gb:
        gb.update_or_create_student(student)
        try:
            submission = gb.find_submission(chapter, student)
        except MissingEntry:
            submission = gb.add_submission(chapter, student)
        if result.get("timestamp"):
            try:
                submission.timestamp = utils.parse_utc(result["timestamp"])
            except Exception:  # noqa: BLE001 - an unreadable timestamp is simply not recorded
                pass
        for notebook, entry in result["notebooks"].items():
            for gid, cell in entry["cells"].items():
                try:
                    grade = gb.find_grade(gid, notebook, chapter, student)
                except MissingEntry:
                    continue
                grade.auto_score = cell["auto_score"]
                grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
                if cell.get("solution"):
                    comment = gb.find_comment(gid, notebook, chapter, student)
                    comment.auto_comment = "No response." if cell.get("no_response") else None
        gb.db.commit()
    target = workspace / "autograded" / student / chapter
    target.mkdir(parents=True, exist_ok=True)
    for notebook in result["notebooks"]:
        if (result_dir / f"{notebook}.ipynb").exists():
            shutil.copy(result_dir / f"{notebook}.ipynb", target / f"{notebook}.ipynb")
        html = result_dir / f"{notebook}.html"
        if html.exists():
            (workspace / "feedback" / student / chapter).mkdir(parents=True, exist_ok=True)
            shutil.copy(html, workspace / "feedback" / student / chapter / f"{notebook}.html")
    if result.get("timestamp"):
        (target / "timestamp.txt").write_text(result["timestamp"])
    return result


def problems_of(result: dict) -> list[str]:
    """Why a submission lost points other than by failing a test, in plain words."""
    found = [result["problem"]] if result.get("problem") else []
    for notebook, entry in result["notebooks"].items():
        found += [f"{notebook}: {p}" for p in entry.get("problems", [])]
    if not result.get("sandboxed", True):
        found.append("graded WITHOUT a sandbox (--allow-unsandboxed)")
    return found


def write_reports(db_url: str, results: list[dict], csv_path: Path, report_path: Path) -> None:
    """grades.csv (from the gradebook, so manual grades count) and the problem report.

    grades.csv has a row per student and chapter: the chapter's total, then a column per exercise (the graded cell's
    id, in the chapter's order; ``<chapter>:<id>`` where two chapters graded in one run share an id), empty where
    the row's chapter has no such exercise."""
    by_key = {(r["student"], r["chapter"]): r for r in results}
    rows, exercises = [], {}  # exercises: chapter -> its graded cells' ids, in notebook order
    with Gradebook(db_url) as gb:
        for assignment in sorted({r["chapter"] for r in results}):
            exercises[assignment] = [grade_cell.name for notebook in gb.find_assignment(assignment).notebooks
                                     for grade_cell in notebook.grade_cells]
            for submission in gb.assignment_submissions(assignment):
                result = by_key.get((submission.student.id, assignment))
                scores = {grade.name: round(grade.score, 4) for notebook in submission.notebooks for grade in notebook.grades}
                rows.append({"student": submission.student.id, "chapter": assignment,
                             "score": round(submission.score, 4), "max_score": submission.max_score,
                             "needs_manual_grade": submission.needs_manual_grade,
                             "problems": " | ".join(problems_of(result)) if result else "", "_scores": scores})
    seen = [name for names in exercises.values() for name in names]
    shared = {name for name in seen if seen.count(name) > 1}
    column = {(chapter, name): f"{chapter}:{name}" if name in shared else name
              for chapter, names in exercises.items() for name in names}
    for row in rows:
        scores = row.pop("_scores")
        row.update({column[(row["chapter"], name)]: scores.get(name, "") for name in exercises[row["chapter"]]})
    rows.sort(key=lambda r: (r["chapter"], r["student"]))
    fields = ["student", "chapter", "score", "max_score", "needs_manual_grade", "problems", *column.values()]
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
    lines = ["# Submissions that lost points for a reason other than a failed test", ""]
    for result in sorted(results, key=lambda r: (r["chapter"], r["student"])):
        problems = problems_of(result)
        repairs = [f"{n}: {p}" for n, e in result["notebooks"].items() for p in e.get("repairs", [])]
        if problems or repairs:
            lines.append(f"## {result['student']} / {result['chapter']}: {result['score']:g} of {result['max_score']:g}")
            lines += [f"- {p}" for p in problems]
            lines += [f"- (repaired, no points lost by it) {p}" for p in repairs]
            lines.append("")
    if len(lines) == 2:
        lines.append("None.")
    report_path.write_text("\n".join(lines) + "\n")
