"""Grade a batch of submissions, one chapter or all, in parallel sandboxes; grades land in nbgrader's gradebook.

    python autograder/grade.py WORKSPACE [--submissions DIR] [--chapter CH ...] [--jobs N]
                               [--scheduler tcp://host:8786 | --cluster local:N]

WORKSPACE is a grading workspace (autograder/workspace.py; created if missing). Submissions
come from WORKSPACE/submitted/<student>/<chapter>/ (nbgrader's layout, e.g. after
`nbgrader collect`), or from --submissions DIR, which may hold that layout too, or what an
LMS exports: one <student>.zip per student (the chapter notebooks anywhere inside), or
notebooks named <student>.ipynb / <student>_<notebook>.ipynb, or <student>/<notebook>.ipynb;
those are collected into WORKSPACE/submitted/ first.

Output: the gradebook (WORKSPACE/gradebook.db, or --db-url), WORKSPACE/autograded/ (executed
notebooks, for formgrader), WORKSPACE/feedback/ (HTML without hidden tests),
WORKSPACE/grades.csv and WORKSPACE/grading-report.md (every submission that lost points for
a reason other than a failed test, and why). Results of each job are kept in
WORKSPACE/autograder-results/; running again (after Ctrl-C, a crash, new submissions) grades
only what is missing or changed.

The jobs run in a process pool of --jobs sandboxes on this machine, or on a Dask distributed cluster
(--scheduler ADDRESS, or --cluster local:N for N local worker processes; --jobs is then the job slots of
each worker): the same job (job.py), the same results; merging into the gradebook stays here
(autograder/dask_grading.py).
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import csv
import dataclasses
import datetime as dt
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import unicodedata
from pathlib import Path, PurePosixPath

import nbformat

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dask_grading import peak_mib  # noqa: E402 - the pool's workers report it as the cluster's do; Dask itself is imported only for --cluster/--scheduler
from job import SECRET_FILE, course_secret, course_version, failed_result, graded_notebooks, inputs_fingerprint, \
    run_job, student_seed, submission_hash  # noqa: E402
from lms import MAPPING_FILE, LmsError, Mapping, canvas_file, moodle_folder  # noqa: E402
from policy import Policy, PolicyError, for_workspace, parse_time, stamp, timestamp_text, utc_now  # noqa: E402
from safe_input import Refused, describe, entries, is_real_dir, open_zip, read_file, shown, utf8_text, \
    zip_member_problem  # noqa: E402
from sandbox import Limits, Sandbox, bubblewrap, unsandboxed_refusal  # noqa: E402
from workspace import make_workspace  # noqa: E402

REPO = HERE.parent
SOLUTIONS = REPO / "solutions"
MAX_ZIP_BYTES = 50 * 2**20
# Notebooks of other names than the chapter's kept per chapter folder: job.py names them where the chapter's own is
# missing ("a notebook must keep its name"); a zip of hundreds of notebooks keeps the chapter's and these.
MAX_STRAY_NOTEBOOKS = 20
STUDENT_ID = re.compile(r"[^A-Za-z0-9._@+-]+")


def chapters() -> list[str]:
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and not p.name.startswith(".") and any(p.glob("*.ipynb")))


def notebook_names(chapter: str) -> list[str]:
    return [p.name for p in graded_notebooks(SOLUTIONS / chapter)]


# -- collecting LMS exports ---------------------------------------------------------------------

def clean_id(name: str) -> str:
    return STUDENT_ID.sub("_", name).strip("._") or "unknown"


@dataclasses.dataclass
class Claim:
    """An entry of an export (a folder, a zip file, a loose notebook) and the student it belongs to."""

    entry: os.DirEntry
    spelling: str  # the student's name as the entry spells it
    student: str  # the id it becomes
    notebook: str | None = None  # a loose notebook: which one it is; a folder or a zip file: None (a chapter or more)


def colliding(claims: list[Claim]) -> dict[str, list[Claim]]:
    """Student ids that more than one entry claims, where one entry would replace another.

    Loose notebooks of one spelling of a name, each a different notebook, are one student's files
    (<student>_<notebook>.ipynb). Anything else that becomes one id (`name_`, `name.` and `name`; a zip file
    beside a folder; two spellings of one notebook) is two entries, maybe two students, and neither may win."""
    by_student: dict[str, list[Claim]] = {}
    for claim in claims:
        by_student.setdefault(claim.student, []).append(claim)
    clashes = {}
    for student, group in by_student.items():
        notebooks = [claim.notebook for claim in group]
        one_students_files = len({claim.spelling for claim in group}) == 1 and None not in notebooks \
            and len(set(notebooks)) == len(notebooks)
        if len(group) > 1 and not one_students_files:
            clashes[student] = group
    return clashes


def clash_reason(student: str, group: list[Claim]) -> str:
    """Why a student id was not graded, naming the entries (the report keeps the first 500 characters)."""
    names = ", ".join(repr(claim.entry.name[:80]) for claim in group[:4])
    more = f" and {len(group) - 4} more" if len(group) > 4 else ""
    return (f"{len(group)} entries of the export become the student id {student!r}: {names}{more}; none of them was "
            "graded, so that no one's work replaces another's (rename them apart and grade again)")


def stored_name(name: str) -> str:
    """The file name under which a notebook of another name is kept in submitted/ (job.py names it where the chapter's
    own notebook is missing): bytes that are not UTF-8 and control characters as U+FFFD, as a file manager shows
    them, no backslash (a tar of the folder for the Dask path refuses one), at most 200 bytes, still ending in .ipynb."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = name.encode("utf-8", "replace")
    text = "".join("\ufffd" if unicodedata.category(c)[0] == "C" else "_" if c == "\\" else c
                   for c in raw.decode("utf-8", "replace"))
    full, limit = text, 100
    while len(text) > 100 or len(text.encode()) > 200:  # ends: at 50 characters even 4-byte ones fit
        text = full[: limit // 2] + "\u2026" + full[-(limit - limit // 2 - 1):]
        limit -= 10
    return text if text.endswith(".ipynb") else text + ".ipynb"


def collect(source: Path, submitted: Path, wanted: list[str], lms: str | None = None,
            timezone: dt.tzinfo = dt.timezone.utc, seen: dict | None = None) -> list[str]:
    """Copy an export folder into submitted/<student>/<chapter>/; return the notes on what was odd.

    ``lms``: "canvas" reads Canvas's submission file names (``<login>[_LATE]_<user id>_<submission id>_<file>``: the
    student id is ``<login>_<user id>``, the same in every chapter), "moodle" its submission folders (``<Full
    Name>_<participant id>_assignsubmission_file_``: the id is the full name's); what the names said of each student
    (their LMS identity, Canvas's late flag per chapter) is added to ``seen`` ({"identity": {...}, "late": [...]}),
    which grade.py keeps in WORKSPACE/lms-students.json (lms.py). A notebook read from a zip file gets the member's
    time as its submission time (timestamp.txt, read in ``timezone``) where the export carries no timestamp.txt.

    Nothing in the export is followed: a symbolic link, a hard link, a device file or a zip member
    that leaves its folder is refused, and the refusal becomes that notebook's reason (safe_input.py).
    Entries that become one student id (colliding()) are all refused, with a reason that names them.
    Nothing a student hands in stops the collection: a zip file that cannot be read (encrypted, truncated, a broken
    stream), a name in any bytes, an entry that fails in any other way ends as a reason for that student's missing
    notebook (the chapter's ``.refused`` file), and the other entries are collected.
    """
    notes: list[str] = []
    owners = {name: ch for ch in wanted for name in notebook_names(ch)}
    # the workspace's own submitted/ folder: its folders are in place, and their names are the ids the jobs use
    in_place = is_real_dir(submitted) and os.path.samefile(source, submitted)
    # what was handed in but not collected, per student and chapter (None: any chapter being graded); finish() makes
    # it the reason of each of the student's chapter notebooks that is missing
    pending: dict[tuple[str, str | None], list[str]] = {}
    strays: dict[tuple[str, str], int] = {}  # notebooks of other names kept per chapter folder
    zip_times: dict[tuple[str, str], dt.datetime] = {}  # (student, chapter) -> the latest zip member time of its notebook
    seen = seen if seen is not None else {}
    seen.setdefault("identity", {})
    seen.setdefault("late", [])

    def chapter_of(name: str, chapter: str | None = None) -> str | None:
        return chapter or owners.get(name) or (wanted[0] if len(wanted) == 1 else None)

    def folder_for(student: str, chapter: str) -> Path | None:
        """submitted/<student>/<chapter>/, made if missing; None where either is a link (never written through)."""
        folder = submitted / student / chapter
        folder.mkdir(parents=True, exist_ok=True)
        return folder if is_real_dir(submitted / student) and is_real_dir(folder) else None

    def place(student: str, name: str, data: bytes, chapter: str | None = None) -> None:
        chapter = chapter_of(name, chapter)
        if chapter is None:
            refuse(student, name, f"{shown(name)} belongs to no chapter being graded (it is no chapter's notebook, and "
                                  "no chapter's folder holds it); it was not graded")
            return
        folder = folder_for(student, chapter)
        if folder is None:
            notes.append(f"{student}: submitted/{student}/{chapter} is a link; nothing was written into it")
            return
        if name not in notebook_names(chapter) and name != "timestamp.txt":
            name = stored_name(name)
            if not os.path.lexists(folder / name):
                kept = strays.get((student, chapter), 0)
                if kept >= MAX_STRAY_NOTEBOOKS:
                    notes.append(f"{student}: {name} and any further notebooks of other names than the chapter's were "
                                 f"not collected (at most {MAX_STRAY_NOTEBOOKS} are kept per chapter)")
                    return
                strays[(student, chapter)] = kept + 1
        (folder / f"{name}.refused").unlink(missing_ok=True)
        (folder / name).unlink(missing_ok=True)  # never write through a link left in the workspace
        (folder / name).write_bytes(data)

    def mark_refused(student: str, chapter: str, notebook: str, reason: str) -> None:
        """The notebook's grade is 0 and its reason this (job.py reads the .refused file)."""
        folder = folder_for(student, chapter)
        if folder is None:  # job.py refuses a linked folder with its own reason
            return
        (folder / notebook).unlink(missing_ok=True)  # a notebook left from an earlier run would be graded instead
        (folder / f"{notebook}.refused").write_bytes(shown(reason, 2000).encode())

    def refuse(student: str, name: str, reason: str, chapter: str | None = None) -> None:
        """The chapter's own notebook refused: its reason. Anything else (another notebook, a zip file, a folder):
        the reason of the student's chapter notebooks that end up missing (finish())."""
        notes.append(f"{student}: {reason}")
        chapter = chapter_of(name, chapter) if name.endswith(".ipynb") else chapter
        if chapter is not None and name in notebook_names(chapter):
            mark_refused(student, chapter, name, reason)
        else:
            pending.setdefault((student, chapter), []).append(reason)

    def finish() -> None:
        for student in sorted({student for student, _ in pending}):
            for chapter in wanted:
                reasons = pending.get((student, chapter), []) + pending.get((student, None), [])
                if not reasons:
                    continue
                said = "; ".join(reasons[:3]) + (f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else "")
                for notebook in notebook_names(chapter):
                    folder = submitted / student / chapter
                    if not (os.path.lexists(folder / notebook) or os.path.lexists(folder / f"{notebook}.refused")):
                        mark_refused(student, chapter, notebook, said)

    def refuse_clash(student: str, group: list[Claim]) -> None:
        reason = clash_reason(student, group)
        notes.append(f"{student}: {reason}")
        chapters: set[str] = set()
        for claim in group:  # a folder or a zip file may hold every chapter being graded; a loose notebook, its own
            chapters.update(wanted if claim.notebook is None else [c for c in [chapter_of(claim.notebook)] if c])
        for chapter in sorted(chapters):
            for notebook in notebook_names(chapter):
                mark_refused(student, chapter, notebook, reason)

    def owner_of(stem: str) -> tuple[str, str]:
        """<student>_<notebook>.ipynb or <student>.ipynb: the student's name as spelled, and the notebook's name."""
        match = next((n for n in owners if stem.endswith("_" + n[:-6]) or stem.endswith("-" + n[:-6])), None)
        if match:
            return stem[: -len(match[:-6]) - 1], match
        return stem, notebook_names(wanted[0])[0] if len(wanted) == 1 else stem + ".ipynb"

    def lms_claim(entry: os.DirEntry) -> Claim | None:
        """An entry named as the LMS names submissions: whose it is, and what the name says (kept in ``seen``)."""
        is_dir = entry.is_dir(follow_symlinks=False)
        canvas = canvas_file(entry.name) if lms == "canvas" and not is_dir else None
        if canvas is not None and canvas.file.endswith((".ipynb", ".zip")):
            spelling = f"{canvas.login}_{canvas.user_id}"
            student = clean_id(spelling)
            seen["identity"][student] = {"lms": "canvas", "canvas_user_id": canvas.user_id, "login": canvas.login}
            if canvas.file.endswith(".zip"):
                seen["late"].append((student, None, canvas.late))
                return Claim(entry, spelling, student)
            notebook = canvas.file if canvas.file in owners or len(wanted) != 1 else notebook_names(wanted[0])[0]
            seen["late"].append((student, chapter_of(notebook), canvas.late))
            return Claim(entry, spelling, student, notebook)
        moodle = moodle_folder(entry.name) if lms == "moodle" and is_dir else None
        if moodle is not None:
            student = clean_id(moodle[0])
            seen["identity"][student] = {"lms": "moodle", "moodle_name": moodle[0]}
            return Claim(entry, moodle[0], student)
        return None

    def claim_of(entry: os.DirEntry) -> Claim | None:
        """Whose entry this is (in the order the loop below reads entries); None for a stray file."""
        if lms and not entry.is_symlink():
            claimed = lms_claim(entry)
            if claimed is not None:
                return claimed
        stem = Path(entry.name).stem
        if entry.name.endswith(".ipynb") and (entry.is_symlink() or not entry.is_dir(follow_symlinks=False)):
            spelling, notebook = owner_of(stem)
            return Claim(entry, spelling, clean_id(spelling), notebook)
        if entry.is_symlink():
            spelling = stem if entry.name.endswith(".zip") else entry.name
            return Claim(entry, spelling, clean_id(spelling))
        if entry.is_dir(follow_symlinks=False):
            return Claim(entry, entry.name, entry.name if in_place else clean_id(entry.name))
        if entry.name.endswith(".zip"):
            return Claim(entry, stem, clean_id(stem))
        return None

    def read_into(student: str, path: Path, name: str, chapter: str | None = None) -> None:
        try:
            place(student, name, read_file(path), chapter)
        except Refused as why:
            refuse(student, name, str(why), chapter)

    def read_zip(student: str, entry: os.DirEntry) -> None:
        try:
            data = read_file(Path(entry.path), MAX_ZIP_BYTES)
            archive = open_zip(data)
        except Refused as why:
            refuse(student, entry.name, str(why))
            return
        except Exception as error:  # noqa: BLE001 - BadZipFile, and what a broken directory raises (struct.error, ...)
            refuse(student, entry.name, f"{shown(entry.name)} is not a zip file that can be read ({problem_of(error)})")
            return
        with archive:
            members = [m for m in archive.infolist() if m.filename.endswith(".ipynb")
                       and "__MACOSX" not in m.filename and not m.is_dir()]
            if sum(m.file_size for m in members) > MAX_ZIP_BYTES:
                refuse(student, entry.name, f"the notebooks inside {shown(entry.name)} are larger than "
                                            f"{MAX_ZIP_BYTES // 2**20} MB together; none was read")
                return
            for member in members:
                parts = PurePosixPath(member.filename.replace("\\", "/")).parts
                chapter = next((p for p in parts if p in wanted), None)
                name = parts[-1] if parts else "notebook.ipynb"
                problem = zip_member_problem(member)
                if problem:
                    refuse(student, name, problem, chapter)
                    continue
                try:
                    data = archive.read(member)
                except Exception as error:  # noqa: BLE001 - a broken or truncated stream (zlib.error, a bad CRC, ...)
                    refuse(student, name, f"{shown(member.filename)} in {shown(entry.name)} could not be unpacked "
                                          f"({problem_of(error)}); it was not read", chapter)
                    continue
                place(student, name, data, chapter)
                owner = chapter_of(name, chapter)
                if owner is not None and name in notebook_names(owner):
                    try:
                        moment = dt.datetime(*member.date_time).replace(tzinfo=timezone).astimezone(dt.timezone.utc)
                    except ValueError:  # a zip's date field out of range: no time from it
                        continue
                    zip_times[(student, owner)] = max(moment, zip_times.get((student, owner), moment))
            if not members:
                notes.append(f"{shown(entry.name)}: the zip file holds no notebook")

    def take(entry: os.DirEntry, claim: Claim | None) -> None:
        path = Path(entry.path)
        if entry.is_symlink():
            refuse(claim.student, claim.notebook or entry.name,
                   f"{shown(entry.name)} is a symbolic link; it was not followed")
            return
        if entry.is_dir(follow_symlinks=False):
            student = claim.student
            inner = entries(path)
            subdirs = [d for d in inner if d.name in wanted]
            if subdirs:  # nbgrader layout: <student>/<chapter>/
                for d in subdirs:
                    if not d.is_dir(follow_symlinks=False):
                        refuse(student, d.name, f"{shown(entry.name)}/{d.name} is not a plain folder (a link?); it was "
                                                "not followed", d.name)
                        continue
                    target = submitted / student / d.name
                    if is_real_dir(target) and os.path.samefile(d.path, target):
                        continue  # grading from the workspace's own submitted/ folder
                    shutil.rmtree(target, ignore_errors=True)
                    target.mkdir(parents=True, exist_ok=True)
                    for nb in entries(Path(d.path)):
                        if nb.name.endswith(".ipynb") or nb.name == "timestamp.txt":
                            read_into(student, Path(nb.path), nb.name, d.name)
            else:
                notebooks = [nb for nb in inner if nb.name.endswith(".ipynb")]
                for nb in notebooks:
                    read_into(student, Path(nb.path), nb.name)
                if not notebooks:
                    for chapter in wanted:
                        (submitted / student / chapter).mkdir(parents=True, exist_ok=True)
                    notes.append(f"{shown(entry.name)}: the folder holds no notebook")
        elif entry.name.endswith(".zip"):
            read_zip(claim.student, entry)
            for chapter in wanted:
                (submitted / claim.student / chapter).mkdir(parents=True, exist_ok=True)
        elif entry.name.endswith(".ipynb"):
            read_into(claim.student, path, claim.notebook)
        elif not entry.is_file(follow_symlinks=False):
            notes.append(f"{shown(entry.name)}: {describe(entry.stat(follow_symlinks=False).st_mode)}; ignored")

    found = entries(source)
    claims = {entry.name: claim_of(entry) for entry in found}
    clashes = colliding([claim for claim in claims.values() if claim is not None])
    for student, group in sorted(clashes.items()):
        refuse_clash(student, group)
    for entry in found:
        claim = claims[entry.name]
        if claim is not None and claim.student in clashes:
            continue
        try:
            take(entry, claim)
        except Exception as error:  # noqa: BLE001 - one entry never stops the others (a folder that cannot be listed, ...)
            reason = f"{shown(entry.name)} could not be collected ({problem_of(error)})"
            if claim is None:
                notes.append(reason)
            else:
                refuse(claim.student, entry.name, reason)
    finish()
    for (student, chapter), moment in zip_times.items():
        folder = folder_for(student, chapter)
        if folder is not None:  # a zip carries no timestamp.txt of its own (only notebooks are read from it)
            (folder / "timestamp.txt").unlink(missing_ok=True)  # never write through a link left in the workspace
            (folder / "timestamp.txt").write_text(timestamp_text(moment))
    for index, (student, chapter, late) in enumerate(seen["late"]):  # a zip file's flag: every chapter it held
        if chapter is None:
            seen["late"][index:index + 1] = [(student, c, late) for c in wanted if (submitted / student / c).is_dir()]
    return notes


def problem_of(error: BaseException) -> str:
    """An error raised by reading a student's input, in a reason: its type and the start of its message."""
    return f"{type(error).__name__}: {shown(str(error), 200)}" if str(error) else type(error).__name__


# -- the pool -------------------------------------------------------------------------------------

_sandbox: Sandbox | None = None


def _worker_start(root: str, limits: Limits, sandboxed: bool) -> None:
    global _sandbox
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    _sandbox = Sandbox(Path(tempfile.mkdtemp(prefix="worker-", dir=root)), limits, sandboxed=sandboxed)
    _sandbox.start()


def _worker_job(submission: str, chapter: str, student: str, out: str, hidden_seed: str | None = None) -> dict:
    assert _sandbox is not None
    started = time.perf_counter()
    result = run_job(Path(submission), SOLUTIONS / chapter, student, Path(out), _sandbox, hidden_seed=hidden_seed)
    return {"student": student, "chapter": chapter, "score": result["score"], "max_score": result["max_score"],
            "seconds": time.perf_counter() - started, "peak_mib": peak_mib()}


def printable(value):
    """A result with every string as UTF-8 can hold it: a name in a reason that came from the file system as bytes
    (a file in a submitted folder) is shown, not written into grades.csv or the report as a lone surrogate."""
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable(v) for v in value]
    return value


# -- the term's policy, applied after grading (never inside a job: a new due date needs no grading again) -----------

TERM_COLUMNS = ["submitted_at", "due", "late_days", "late_penalty_percent", "final_score", "penalty_reason"]


def submission_time(submission: Path, result: dict | None, policy: Policy) -> tuple[dt.datetime | None, str]:
    """When the chapter was handed in: the submitted folder's timestamp.txt as it is now (nbgrader's, or the zip
    member's time that collect() wrote), else the one the job read; (None, why) where neither can be read."""
    text = None
    try:
        text = read_file(submission / "timestamp.txt", 4096).decode(errors="replace").strip()
    except (OSError, Refused):
        text = (result or {}).get("timestamp")
    if not text:
        return None, ""
    try:
        return parse_time(text[:64], policy.timezone), ""
    except PolicyError:
        return None, f"the submission time {shown(text, 64)!r} could not be read; no late penalty was charged"


def apply_term(workspace: Path, policy: Policy, results: list[dict], mapping: Mapping | None, now: dt.datetime,
               jobs: int = 1) -> list[str]:
    """The late penalties into grades.csv (columns before ``problems``) and grading-report.md, and each feedback page
    as the policy has it now: with the penalty and its reason, the hidden verdicts shown or held back until the
    student's due date. Returns the report's lines on late submissions."""
    csv_path = workspace / "grades.csv"
    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = list(reader.fieldnames or []), list(reader)
    by_key = {(r["student"], r["chapter"]): r for r in results}
    penalties, lines = {}, []
    for row in rows:
        student, chapter = row["student"], row["chapter"]
        submitted, problem = submission_time(workspace / "submitted" / student / chapter, by_key.get((student, chapter)), policy)
        flagged = bool(mapping and mapping.late.get(student, {}).get(chapter))
        penalty = policy.penalty(chapter, student, submitted, flagged)
        penalties[(student, chapter)] = penalty
        problem = problem if penalty.due is not None else ""  # an unreadable time matters only where a date is due
        score = float(row["score"] or 0)
        row.update({"submitted_at": stamp(submitted) if submitted else "", "due": stamp(penalty.due) if penalty.due else "",
                    "late_days": penalty.days_late if penalty.fraction else 0,
                    "late_penalty_percent": f"{penalty.fraction * 100:g}", "final_score": f"{penalty.applied_to(score):g}",
                    "penalty_reason": penalty.reason or problem})
        if penalty.fraction or problem:
            lines.append(f"- {student} / {chapter}: {row['score']} -> {row['final_score']} of {row['max_score']}: "
                         f"{penalty.reason or problem}")
    at = fields.index("problems") if "problems" in fields else len(fields)
    fields = [f for f in fields[:at] if f not in TERM_COLUMNS] + TERM_COLUMNS + [f for f in fields[at:] if f not in TERM_COLUMNS]
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
    report = workspace / "grading-report.md"
    if policy.due_dates or lines:
        report.write_text(report.read_text() + "\n# Late submissions (policy: " + policy.source + ")\n\n"
                          + ("\n".join(lines) if lines else "None.") + "\n")
    pages = []
    for result in results:
        if result.get("failed"):
            continue
        student, chapter = result["student"], result["chapter"]
        penalty = penalties.get((student, chapter))
        for stem, entry in result["notebooks"].items():
            notebook_score = sum(c["auto_score"] or 0 for c in entry.get("cells", {}).values())
            term = {"hidden_verdicts": policy.shows_hidden_verdicts(chapter, student, now),
                    "note": policy.visibility_note(chapter, student),
                    "late_penalty": round(notebook_score * penalty.fraction, 4) if penalty else 0.0,
                    "penalty_reason": penalty.reason if penalty and penalty.fraction else ""}
            pages.append((str(workspace / "autograder-results" / chapter / student), stem, entry, student, chapter,
                          term, str(workspace / "feedback" / student / chapter / f"{stem}.html")))
    todo = [page for page in pages if page[5]["hidden_verdicts"] and not page[5]["late_penalty"]]
    for out, stem, *_, target in todo:  # the job's own page is the right one: put it back (a term page may be there)
        if (Path(out) / f"{stem}.html").exists():
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(Path(out) / f"{stem}.html", target)
    remade = [page for page in pages if page not in todo]
    if remade:
        with futures.ProcessPoolExecutor(max_workers=max(1, min(jobs, len(remade)))) as pool:
            for problem in pool.map(term_page, *zip(*remade)):
                if problem:
                    print(f"grade: {problem}", file=sys.stderr)
    return lines


def term_page(out: str, stem: str, entry: dict, student: str, chapter: str, term: dict, target: str) -> str | None:
    """Write the feedback page the policy asks for now, made from the autograded notebook the job wrote (the page it
    made itself came from the same notebook); kept beside it and made again only when the policy's view changes."""
    from feedback import TermView, feedback_html, plain_feedback

    out_dir, target_path = Path(out), Path(target)
    key = json.dumps({"term": term, "result": (out_dir / "result.json").stat().st_mtime_ns}, sort_keys=True)
    cached, cached_key = out_dir / f"{stem}.term.html", out_dir / f"{stem}.term.json"
    if not (cached.exists() and cached_key.exists() and cached_key.read_text() == key):
        view = TermView(**term)
        try:
            page = feedback_html(nbformat.read(out_dir / f"{stem}.ipynb", as_version=4), dict(entry), student, chapter,
                                 stem, view)
        except Exception as error:  # noqa: BLE001 - the plain page still follows the policy
            page = plain_feedback(entry, student, chapter, stem, view)
            problem = f"{student}/{chapter}: the feedback page under the term's policy fell back to a plain one " \
                      f"({type(error).__name__})"
        else:
            problem = None
        cached.write_text(page)
        cached_key.write_text(key)
    else:
        problem = None
    target_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(cached, target_path)
    return problem


def up_to_date(out: Path, submission: Path, version: str, hidden_seed: str | None = None) -> bool:
    try:
        result = json.loads((out / "result.json").read_text())
    except (OSError, ValueError):
        return False
    return (not result.get("failed") and result.get("course_version") == version
            and result.get("submission_hash") == submission_hash(submission)
            and result.get("hidden_inputs", "fixed") == inputs_fingerprint(hidden_seed))


def workspace_secret(workspace: Path) -> str:
    """The course's secret (job.course_secret), with a warning where others than its owner may read it."""
    secret = course_secret(workspace)
    mode = os.stat(workspace / SECRET_FILE, follow_symlinks=False).st_mode
    if mode & 0o077:
        print(f"grade: WARNING: {workspace / SECRET_FILE} can be read by others than its owner (mode "
              f"{mode & 0o777:o}); whoever reads it can compute every student's hidden-test inputs: chmod 600 it",
              file=sys.stderr)
    return secret


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--submissions", type=Path, help="an export folder to collect first (default: WORKSPACE/submitted)")
    parser.add_argument("--chapter", action="append", help="a chapter to grade (repeatable; default: every chapter)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel sandboxes (default: every core)")
    parser.add_argument("--db-url", help="SQLAlchemy URL of the gradebook (default: sqlite in the workspace)")
    parser.add_argument("--memory-gb", type=float, default=4.0, help="memory limit per kernel (default 4)")
    parser.add_argument("--cell-timeout", type=int, default=60,
                        help="seconds per cell of the kernel's own time: waiting for a CPU is not counted (default 60)")
    parser.add_argument("--backstop", type=float, default=3.0,
                        help="wall time beyond BACKSTOP x the cell timeout always stops a cell (default 3)")
    parser.add_argument("--notebook-timeout", type=int, default=600)
    parser.add_argument("--figures", action="store_true",
                        help="draw matplotlib figures into the autograded notebooks and feedback, as nbgrader does (no "
                             "test reads them; drawing and laying them out cost a notebook 0.6-2.7 s)")
    parser.add_argument("--regrade", action="store_true", help="grade everything again, even unchanged submissions")
    parser.add_argument("--allow-unsandboxed", action="store_true",
                        help="grade even without bubblewrap: submitted code then runs with YOUR permissions")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--policy", type=Path, help="the term's policy (due dates, late penalty, extensions, when "
                        "feedback shows hidden verdicts; autograder/policy.py); default WORKSPACE/policy.toml if present")
    parser.add_argument("--now", help="the time the policy is applied at (default: now), e.g. 2026-10-06T12:00:00Z")
    parser.add_argument("--lms", choices=["canvas", "moodle"],
                        help="the export's file names are the LMS's: keep each student's LMS identity and Canvas's late "
                             "flags (WORKSPACE/lms-students.json) for `lms.py export`")
    parser.add_argument("--similarity", action="store_true",
                        help="write WORKSPACE/similarity.html: pairs of students whose answer cells are alike (copydetect)")
    parser.add_argument("--similarity-threshold", type=float, default=0.6,
                        help="the share of one student's answer tokens found in the other's above which a pair is listed "
                             "(default 0.6)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="grade on the Dask cluster of this scheduler (tcp://host:8786); its workers run the course "
                            "at this version (autograder/README.md, Beyond one machine)")
    where.add_argument("--cluster", metavar="local:N", help="grade on a local Dask cluster of N worker processes")
    args = parser.parse_args(argv)
    on_dask = bool(args.scheduler or args.cluster)
    if args.cluster:
        from dask_grading import parse_cluster

        try:
            local_workers = parse_cluster(args.cluster)
        except ValueError as error:
            parser.error(str(error))
    if on_dask:
        try:
            import distributed  # noqa: F401
        except ImportError:
            print("grade: --scheduler and --cluster need Dask's `distributed` (pip install -e '.[cluster]')",
                  file=sys.stderr)
            return 2
    # nbgrader's gradebook runs `alembic` from this Python's scripts folder
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])

    sandboxed = bubblewrap() is not None
    if args.scheduler:  # the workers run the submissions; each checks its own sandbox (dask_grading.check_worker)
        sandboxed = True
    if not sandboxed:
        if not args.allow_unsandboxed:
            print(unsandboxed_refusal("grade"), file=sys.stderr)
            return 2
        print("grade: WARNING: grading WITHOUT a sandbox (--allow-unsandboxed)", file=sys.stderr)

    from cgroups import Cgroup

    probe, why = Cgroup.create(f"seqlab-probe-{os.getpid()}")
    if probe is None:
        print(f"grade: NOTE: {why}; memory, CPU time and file size are limited per process only, and the number of "
              "processes not at all. Under Docker give the container --memory, --pids-limit, --cpus and "
              "--tmpfs /tmp:size=256m (autograder/README.md).", file=sys.stderr)
    else:
        probe.remove()
    sys.path.insert(0, str(HERE / "inkernel"))
    from owntime import available as own_time_available

    own_time, why = own_time_available()
    if not own_time:
        print(f"grade: NOTE: {why}; cell time limits count wall time here, so time spent waiting for a CPU that "
              "other processes hold counts against a student (autograder/README.md, Limits).", file=sys.stderr)
    workspace = args.workspace.expanduser().resolve()
    try:
        policy = for_workspace(workspace, args.policy, chapters())
        now = parse_time(args.now) if args.now else utc_now()
        mapping = Mapping(workspace / MAPPING_FILE)
    except (PolicyError, LmsError) as error:
        print(f"grade: {error}", file=sys.stderr)
        return 2
    if not (workspace / "nbgrader_config.py").exists():
        make_workspace(workspace, args.db_url)
    try:
        secret = workspace_secret(workspace)
    except (OSError, ValueError, Refused) as error:
        print(f"grade: the course's secret, which every student's hidden-test inputs derive from: {error}",
              file=sys.stderr)
        return 2
    db_url = args.db_url or f"sqlite:///{workspace / 'gradebook.db'}"
    wanted = args.chapter or chapters()
    unknown = [c for c in wanted if c not in chapters()]
    if unknown:
        print(f"grade: unknown chapter(s) {unknown}; the course has {chapters()}", file=sys.stderr)
        return 2
    submitted = workspace / "submitted"
    submitted.mkdir(parents=True, exist_ok=True)
    try:
        seen: dict = {}
        notes = collect(args.submissions.resolve(), submitted, wanted, args.lms, policy.timezone, seen) \
            if args.submissions else []
    except OSError as error:  # the export folder itself (each entry in it is the student's and never stops this)
        print(f"grade: cannot read the export folder {args.submissions}: {error.strerror or error}", file=sys.stderr)
        return 2
    for student, identity in sorted(seen.get("identity", {}).items()) if args.submissions else []:
        clash = mapping.see(student, identity)
        if clash:
            notes.append(clash)
    for student, chapter, late in seen.get("late", []) if args.submissions else []:
        mapping.flag_late(student, chapter, late)
    if args.submissions and args.lms:
        mapping.save()
    for note in notes:
        print(f"collect: {note}", file=sys.stderr)

    from merge import merge_result, register_chapter, write_reports

    results_root = workspace / "autograder-results"
    jobs, results_dirs, versions = [], [], {}
    for chapter in wanted:
        register_chapter(db_url, SOLUTIONS / chapter)
        version = versions[chapter] = course_version(SOLUTIONS / chapter)
        for student_dir in sorted(d for d in submitted.iterdir() if d.is_dir()):
            if student_dir.name != utf8_text(student_dir.name):  # bytes that are not UTF-8: no gradebook takes the id
                print(f"grade: submitted/{shown(student_dir.name)} is not graded: its name is no usable student id "
                      "(rename the folder)", file=sys.stderr)
                continue
            submission = student_dir / chapter
            if not submission.is_dir():
                continue
            out = results_root / chapter / student_dir.name
            results_dirs.append(out)
            seed = student_seed(secret, chapter, student_dir.name)
            if args.regrade or not up_to_date(out, submission, version, seed):
                jobs.append((str(submission), chapter, student_dir.name, str(out), seed))
    limits = Limits(cell_timeout=args.cell_timeout, backstop=max(1.0, args.backstop), notebook_timeout=args.notebook_timeout,
                    memory_bytes=int(args.memory_gb * 2**30), figures=args.figures)
    if not on_dask:
        print(f"grade: {len(results_dirs)} submissions, {len(jobs)} to grade, {args.jobs} parallel sandbox(es)"
              f"{'' if sandboxed else ' (UNSANDBOXED)'}", file=sys.stderr)

    from tqdm import tqdm

    started = time.perf_counter()
    work_root = tempfile.mkdtemp(prefix="seqlab-grading-")
    interrupted = stopped = False
    merged: set[str] = set()
    worker_peak = 0.0  # MiB: the grader's own processes hold decoded frames and notebooks (issue 23: bounded)
    try:
        if on_dask and not jobs:
            print(f"grade: {len(results_dirs)} submissions, 0 to grade", file=sys.stderr)
        if jobs:
            if on_dask:
                from dask_grading import DaskPool, JobLost, NoWorker, SchedulerGone

                no_retry: tuple = (JobLost,)
                stops: tuple = (SchedulerGone, NoWorker)
                try:
                    pool = DaskPool(scheduler=args.scheduler, local_workers=local_workers if args.cluster else None,
                                    jobs=max(1, args.jobs), limits=limits, allow_unsandboxed=args.allow_unsandboxed,
                                    versions=versions, log=lambda line: print(line, file=sys.stderr))
                except (NoWorker, OSError, TimeoutError) as error:
                    print(f"grade: cannot grade on {args.scheduler or args.cluster}: {type(error).__name__}: {error}",
                          file=sys.stderr)
                    return 1
                print(f"grade: {len(results_dirs)} submissions, {len(jobs)} to grade, on {pool.describe()}",
                      file=sys.stderr)
            else:
                no_retry, stops = (), ()
                pool = futures.ProcessPoolExecutor(max_workers=max(1, min(args.jobs, len(jobs))), initializer=_worker_start,
                                                   initargs=(work_root, limits, sandboxed))
            with pool:
                pending = {pool.submit(_worker_job, *job): job for job in jobs}
                failures: dict[tuple, list[str]] = {}
                bar = tqdm(total=len(jobs), unit="submission", disable=args.no_progress, file=sys.stderr)
                try:
                    while pending:
                        future = next(futures.as_completed(pending))
                        job = pending.pop(future)
                        submission, chapter, student, out, _ = job
                        try:
                            done = future.result()
                            worker_peak = max(worker_peak, done.get("peak_mib") or 0.0)
                            bar.set_postfix_str(f"{student}/{chapter[:2]} {done['score']:g}/{done['max_score']:g}")
                        except stops:  # the Dask scheduler is gone, or no worker may grade: stop here
                            raise
                        except Exception as error:  # noqa: BLE001 - one broken job never stops the others
                            reason = f"{type(error).__name__}: {str(error)[:300]}"
                            failures.setdefault(job, []).append(reason)
                            if len(failures[job]) < 2 and not isinstance(error, no_retry):
                                print(f"grade: {student}/{chapter}: the job failed ({reason}); trying once more",
                                      file=sys.stderr)
                                try:
                                    pending[pool.submit(_worker_job, *job)] = job
                                    continue
                                except futures.process.BrokenProcessPool as broken:  # a worker died: no second try here
                                    failures[job].append(f"BrokenProcessPool: {broken}")
                            print(f"grade: {student}/{chapter}: the job failed again ({reason}); recorded as 0 with "
                                  "the reason, and graded again on the next run", file=sys.stderr)
                            try:
                                failed_result(Path(submission), SOLUTIONS / chapter, student, Path(out), failures[job])
                            except Exception as error:  # noqa: BLE001 - left ungraded, named at the end; the rest go on
                                print(f"grade: {student}/{chapter}: could not record the failure either "
                                      f"({type(error).__name__}: {str(error)[:300]})", file=sys.stderr)
                        if (Path(out) / "result.json").exists():
                            merge_result(db_url, workspace, Path(out))
                            merged.add(out)
                        bar.update(1)
                except KeyboardInterrupt:
                    interrupted = True
                    for future in pending:
                        future.cancel()
                    for process in list((getattr(pool, "_processes", None) or {}).values()):
                        process.terminate()
                    if hasattr(pool, "stop_workers"):
                        pool.stop_workers()
                    raise
                finally:
                    bar.close()
    except KeyboardInterrupt:
        print("\ngrade: interrupted; finished results are in the gradebook. Run the same command again to "
              "grade the rest.", file=sys.stderr)
    except Exception as error:
        if not on_dask or type(error).__name__ not in ("SchedulerGone", "NoWorker"):
            raise
        stopped = True
        print(f"grade: the Dask cluster stopped grading ({type(error).__name__}: {str(error)[:500]}); finished results "
              "are in the gradebook. Run the same command again (on a working cluster, or without --scheduler) to grade "
              "the rest.", file=sys.stderr)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)

    results = []
    for out in results_dirs:
        if (out / "result.json").exists():
            if str(out) not in merged:
                merge_result(db_url, workspace, out)
            results.append(printable(json.loads((out / "result.json").read_text())))
    write_reports(db_url, results, workspace / "grades.csv", workspace / "grading-report.md")
    if results:
        late = apply_term(workspace, policy, results, mapping, now, args.jobs)
        if late:
            print(f"grade: {len(late)} late submission(s) under {policy.source}; grades.csv's final_score has the "
                  "penalty", file=sys.stderr)
    if args.similarity and results:
        from similarity import similarity_report

        try:
            page, pairs = similarity_report(workspace, sorted({r["chapter"] for r in results}), args.similarity_threshold)
        except ImportError:
            print("grade: --similarity needs copydetect (pip install -e '.[test]' or pip install copydetect)", file=sys.stderr)
            return 2
        print(f"grade: {pairs} pair(s) of students above {args.similarity_threshold:g} similarity in {page}",
              file=sys.stderr)
    flagged = sum(1 for r in results if r.get("problem") or any(e.get("problems") for e in r["notebooks"].values()))
    print(f"grade: {len(results)} of {len(results_dirs)} submissions graded in the gradebook "
          f"({time.perf_counter() - started:.1f} s this run); {flagged} with problems listed in "
          f"{workspace / 'grading-report.md'}; grades in {workspace / 'grades.csv'}", file=sys.stderr)
    if peak_mib() is not None:
        print(f"grade: memory of the grader's own processes at its peak: {peak_mib():.0f} MiB here, {worker_peak:.0f} MiB "
              "in a grading worker (the kernels have limits of their own)", file=sys.stderr)
    if interrupted:
        return 130
    if stopped:
        return 1
    ungraded = [out.name for out in results_dirs if not (out / "result.json").exists()]
    failed = [r["student"] for r in results if r.get("failed")]
    if ungraded or failed:
        print(f"grade: NOT all graded: the grader failed on {', '.join(sorted(failed + ungraded))} (recorded as 0 with "
              "the reason where it failed twice); run the same command again once the cause is fixed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
