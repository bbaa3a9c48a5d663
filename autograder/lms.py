"""Grades back into the LMS: a Canvas gradebook-import CSV or a Moodle grade-import CSV, from the workspace's grades.

    python autograder/lms.py export canvas WORKSPACE [--roster ROSTER.csv] [--exercises] [--out FILE]
    python autograder/lms.py export moodle WORKSPACE  --roster ROSTER.csv  [--exercises] [--out FILE]

One row per student, one column per chapter (the score after any late penalty, grades.csv's ``final_score``) and,
with --exercises, one per exercise. Student ids are never guessed: a student of grades.csv is exported only where the
collector saw their LMS identity (``grade.py --lms canvas|moodle`` keeps it in WORKSPACE/lms-students.json) or the
roster names them; every other student is an error line (stderr, WORKSPACE/lms-export-report.md, exit status 1).

Canvas (Grades > Import): the header ``Student,ID,SIS User ID,SIS Login ID,Section,<assignments>``, then the
``Points Possible`` row, then the students; Canvas matches students by ID (its user id, from the submission file names
``<login>[_LATE]_<user id>_<submission id>_<file>`` of its "Download Submissions" zip) or by the SIS ids. The roster,
optional, is Canvas's own gradebook export (its Student, SIS and Section columns are copied for the matched ID).

Moodle (Grades > Import > CSV file): a header of identity columns and one column per grade item, no points row;
map "Email address" (or ID number, Username) to the user and each chapter column to its grade item. The roster is
Moodle's grades export (Grades > Export > Plain text file) or any CSV with First name, Last name and Email address;
a student is matched by the full name the collector read from Moodle's submission folders
(``<Full Name>_<participant id>_assignsubmission_file_``), or by a ``student`` column holding the grades.csv id.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import json
import re
import sys
from pathlib import Path

MAPPING_FILE = "lms-students.json"
REPORT_FILE = "lms-export-report.md"
CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS = "    Points Possible"  # as Canvas's own export writes it, four spaces first
MOODLE_IDENTITY = ["First name", "Last name", "ID number", "Username", "Email address"]
MOODLE_KEYS = ["Email address", "ID number", "Username"]
CANVAS_NAME = re.compile(r"^(?P<login>[^_]+)_(?:(?P<late>LATE)_)?(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
MOODLE_FOLDER = re.compile(r"^(?P<name>.+?)_(?P<participant>\d+)_assignsubmission_[a-z]+_?$")
RESUBMITTED = re.compile(r"-\d+(?=\.(ipynb|zip)$)")  # Canvas names a second upload of notebook.ipynb notebook-1.ipynb


class LmsError(ValueError):
    """A roster or grades file that cannot be used, with the reason."""


@dataclasses.dataclass(frozen=True)
class CanvasFile:
    login: str
    user_id: str
    submission_id: str
    late: bool
    file: str  # the name the student uploaded (a resubmission's "-1" removed)


def canvas_file(name: str) -> CanvasFile | None:
    """A file name of Canvas's "Download Submissions" zip, or None where it is not one."""
    match = CANVAS_NAME.match(name)
    if not match:
        return None
    return CanvasFile(match["login"], match["user"], match["submission"], bool(match["late"]),
                      RESUBMITTED.sub("", match["file"]))


def moodle_folder(name: str) -> tuple[str, str] | None:
    """A folder of Moodle's "Download all submissions" zip: (the student's full name, participant id), or None."""
    match = MOODLE_FOLDER.match(name)
    return (match["name"], match["participant"]) if match else None


class Mapping:
    """What the collector saw of each student's LMS identity, kept in WORKSPACE/lms-students.json across the term's
    collections: students[id] = {"lms": ..., "canvas_user_id"/"login" or "moodle_name"}, late[id] = {chapter: bool}."""

    def __init__(self, path: Path):
        self.path = path
        try:
            data = json.loads(path.read_text()) if path.exists() else {}
        except (OSError, ValueError) as error:
            raise LmsError(f"{path} cannot be read ({error}); remove it and collect the exports again") from None
        self.students: dict[str, dict] = data.get("students", {})
        self.late: dict[str, dict[str, bool]] = data.get("late", {})

    def see(self, student: str, identity: dict) -> str | None:
        """Record a student's identity; a note where the same id now names another LMS identity (never replaced)."""
        known = self.students.get(student)
        if known is not None and known != identity:
            return (f"{student}: the export names this id with {identity}, but an earlier collection saw {known}; "
                    f"the earlier one is kept (fix {self.path.name} by hand if the LMS changed it)")
        self.students[student] = identity
        return None

    def flag_late(self, student: str, chapter: str, late: bool) -> None:
        self.late.setdefault(student, {})[chapter] = late

    def save(self) -> None:
        self.path.write_text(json.dumps({"students": self.students, "late": self.late}, indent=1, sort_keys=True))


def read_csv(path: Path, what: str) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8-sig")  # Excel and Canvas write a byte-order mark
    except (OSError, UnicodeDecodeError) as error:
        raise LmsError(f"cannot read the {what} {path}: {getattr(error, 'strerror', None) or error}") from None
    return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in csv.DictReader(io.StringIO(text))]


@dataclasses.dataclass
class Grades:
    students: list[str]
    chapters: list[str]
    scores: dict[tuple[str, str], str]  # (student, chapter) -> the score after penalty, as written
    max_scores: dict[str, str]
    exercises: dict[str, list[tuple[str, str]]]  # chapter -> [(grades.csv column, exercise id)]
    exercise_scores: dict[tuple[str, str], str]  # (student, column) -> score
    exercise_max: dict[tuple[str, str], float]


def read_grades(workspace: Path) -> Grades:
    rows = read_csv(workspace / "grades.csv", "grades file (run grade.py first)")
    if not rows:
        raise LmsError(f"{workspace / 'grades.csv'} holds no grades")
    fixed = {"student", "chapter", "score", "max_score", "needs_manual_grade", "problems", "submitted_at", "due",
             "late_days", "late_penalty_percent", "final_score", "penalty_reason"}
    exercise_columns = [c for c in rows[0] if c not in fixed]
    grades = Grades(sorted({r["student"] for r in rows}), sorted({r["chapter"] for r in rows}), {}, {}, {}, {}, {})
    for row in rows:
        chapter = row["chapter"]
        grades.scores[(row["student"], chapter)] = row.get("final_score") or row["score"]
        grades.max_scores[chapter] = row["max_score"]
        for column in exercise_columns:
            if row[column] != "":
                grades.exercise_scores[(row["student"], column)] = row[column]
                if column not in [c for c, _ in grades.exercises.get(chapter, [])]:
                    grades.exercises.setdefault(chapter, []).append((column, column.split(":")[-1]))
    return grades


def exercise_points(workspace: Path, grades: Grades) -> dict[str, float]:
    """Each exercise's points, from the results (grades.csv holds scores only)."""
    points: dict[str, float] = {}
    for result in (workspace / "autograder-results").glob("*/*/result.json"):
        data = json.loads(result.read_text())
        for entry in data.get("notebooks", {}).values():
            for gid, cell in entry.get("cells", {}).items():
                points.setdefault(f"{data['chapter']}:{gid}", cell["max_score"])
                points.setdefault(gid, cell["max_score"])
    return points


def number(text: str) -> str:
    """A score as Canvas and Moodle read it: at most two decimals, no trailing zeros."""
    try:
        value = float(text)
    except ValueError:
        return ""
    return f"{round(value, 2):g}"


def canvas_rows(workspace: Path, grades: Grades, mapping: Mapping, roster: list[dict] | None,
                exercises: bool) -> tuple[list[list[str]], list[str]]:
    by_id = {}
    for row in roster or []:
        if "ID" not in row:
            raise LmsError("the Canvas roster has no ID column: pass Canvas's own gradebook export (Grades > Export)")
        by_id[row["ID"]] = row
    columns, points = chapter_columns(workspace, grades, exercises)
    table = [CANVAS_FIXED + [title for title, _, _ in columns],
             [CANVAS_POINTS, "", "", "", ""] + [max_points for _, _, max_points in columns]]
    errors = []
    for student in grades.students:
        seen = mapping.students.get(student, {})
        user_id = seen.get("canvas_user_id") or next((r["ID"] for r in roster or [] if r.get("student") == student), None)
        if not user_id:
            errors.append(f"{student}: no Canvas user id (the export's file names did not give one, and the roster "
                          "has no row with this student); not exported")
            continue
        if roster is not None and user_id not in by_id:
            errors.append(f"{student}: Canvas user id {user_id} is not in the roster; not exported")
            continue
        known = by_id.get(user_id, {})
        table.append([known.get("Student") or seen.get("login", student), user_id, known.get("SIS User ID", ""),
                      known.get("SIS Login ID", ""), known.get("Section", "")]
                     + [value(student) for _, value, _ in columns])
    return table, errors


def chapter_columns(workspace: Path, grades: Grades, exercises: bool):
    """(title, the student's value, points possible) per column: each chapter, then its exercises if asked."""
    columns = []
    points = exercise_points(workspace, grades) if exercises else {}
    for chapter in grades.chapters:
        columns.append((chapter, lambda s, c=chapter: number(grades.scores.get((s, c), "")), number(grades.max_scores[chapter])))
        if exercises:
            for column, gid in grades.exercises.get(chapter, []):
                columns.append((f"{chapter}: {gid}", lambda s, c=column: number(grades.exercise_scores.get((s, c), "")),
                                number(str(points.get(column, points.get(gid, ""))))))
    return columns, points


def moodle_rows(workspace: Path, grades: Grades, mapping: Mapping, roster: list[dict],
                exercises: bool) -> tuple[list[list[str]], list[str]]:
    if not roster:
        raise LmsError("a Moodle export needs --roster: Moodle's grades export (Grades > Export > Plain text file) or a "
                       "CSV with First name, Last name and Email address")
    identity = [c for c in MOODLE_IDENTITY if c in roster[0]]
    if not any(key in identity for key in MOODLE_KEYS):
        raise LmsError(f"the Moodle roster has none of {', '.join(MOODLE_KEYS)}: Moodle cannot match a row to a user")
    by_name: dict[str, list[dict]] = {}
    for row in roster:
        by_name.setdefault(f"{row.get('First name', '')} {row.get('Last name', '')}".strip(), []).append(row)
    columns, _ = chapter_columns(workspace, grades, exercises)
    table = [identity + [title for title, _, _ in columns]]
    errors = []
    for student in grades.students:
        named = [r for r in roster if r.get("student") == student]
        if not named:
            full_name = mapping.students.get(student, {}).get("moodle_name")
            named = by_name.get(full_name, []) if full_name else []
            if len(named) > 1:
                errors.append(f"{student}: {len(named)} roster rows are named {full_name!r}; add a student column to the "
                              "roster to say which is whose; not exported")
                continue
        if not named:
            errors.append(f"{student}: no roster row (no student column with this id, and the collector saw no Moodle "
                          "name matching a roster row's First name and Last name); not exported")
            continue
        table.append([named[0].get(c, "") for c in identity] + [value(student) for _, value, _ in columns])
    return table, errors


def write_csv(table: list[list[str]], out: Path) -> None:
    with open(out, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n").writerows(table)


def export(lms: str, workspace: Path, out: Path | None = None, roster_path: Path | None = None,
           exercises: bool = False) -> tuple[Path, list[str]]:
    """Write the import CSV; return its path and the error lines (students not exported, and why)."""
    grades = read_grades(workspace)
    mapping = Mapping(workspace / MAPPING_FILE)
    roster = read_csv(roster_path, "roster") if roster_path else None
    if lms == "canvas":
        table, errors = canvas_rows(workspace, grades, mapping, roster, exercises)
    elif lms == "moodle":
        table, errors = moodle_rows(workspace, grades, mapping, roster or [], exercises)
    else:
        raise LmsError(f"unknown LMS {lms!r}: canvas or moodle")
    out = out or workspace / f"{lms}-grades.csv"
    write_csv(table, out)
    lines = [f"# {lms.capitalize()} grade import: {out}", "", f"{len(table) - (2 if lms == 'canvas' else 1)} students "
             f"exported, {len(errors)} not:", ""] + [f"- ERROR {e}" for e in errors]
    (workspace / REPORT_FILE).write_text("\n".join(lines) + "\n")
    return out, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("export", help="write the LMS's grade-import CSV from WORKSPACE/grades.csv")
    command.add_argument("lms", choices=["canvas", "moodle"])
    command.add_argument("workspace", type=Path)
    command.add_argument("--roster", type=Path, help="the LMS's gradebook export (Canvas: optional; Moodle: needed)")
    command.add_argument("--exercises", action="store_true", help="a column per exercise too")
    command.add_argument("--out", type=Path, help="where to write the CSV (default: WORKSPACE/<lms>-grades.csv)")
    args = parser.parse_args(argv)
    try:
        out, errors = export(args.lms, args.workspace.expanduser().resolve(), args.out, args.roster, args.exercises)
    except LmsError as error:
        print(f"lms: {error}", file=sys.stderr)
        return 2
    for line in errors:
        print(f"lms: ERROR {line}", file=sys.stderr)
    print(f"lms: wrote {out}; {len(errors)} student(s) not exported (listed in {args.workspace / REPORT_FILE})",
          file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
