"""Grade ONE submission of one chapter: the stateless job that grade.py runs in a process pool.

    python autograder/job.py SUBMISSION_DIR --chapter 01-ngram-language-models --student alice --out RESULT_DIR

Input: the submission folder (the chapter's notebooks, as in nbgrader's submitted/<student>/<chapter>/)
and the course version (the chapter's source notebooks in solutions/). Output, in RESULT_DIR:
result.json (scores per graded cell, the reasons a submission lost points other than a failed
test, hashes of the input and of the course version) and the executed notebooks. Nothing else
is read or written, so the same job runs unchanged on a Kubernetes Job or any batch engine;
merge.py then puts the result files into the nbgrader gradebook.

What it does, per source notebook:
1. read the student's notebook; a missing, renamed or invalid one gets zero and a reason;
2. rebuild it from the source (rebuild()): every graded test cell and every locked cell is
   the source's, by grade_id, with the source's metadata and points (edited tests restored,
   deleted ones put back, duplicates dropped, foreign "graded" cells made ungraded); the
   student's answer cells and own cells are kept;
3. execute it (executor.py) in grading mode: the student's cells in a fresh sandboxed runner,
   the course's test cells in a fresh trusted runner that reaches the student's code only
   through calls with data in and data out (autograder/CONVENTION.md);
4. score each graded cell with nbgrader's own determine_grade, after moving warnings to
   stdout (course_preprocessors.KeepWarningsVisible); a cell whose code raised or that was
   not run scores zero.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import hmac
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import ClearSolutions, ComputeChecksums, LimitOutput

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from course_preprocessors import KeepWarningsVisible  # noqa: E402
from safe_input import Refused, entries, is_real_dir, read_file, shown  # noqa: E402
from executor import Execution, Plan, run  # noqa: E402
from feedback import EDITION_KEY, EDITIONS, course_markdown, sanitize  # noqa: E402
from sandbox import Limits, Sandbox  # noqa: E402
from wire import json_problem  # noqa: E402 - on the path executor puts there

# Library notices that read like errors in an instructor's terminal and change no grade: nbformat asking for cell ids
# (notebooks in nbformat 4.4, as the course's, have none) and SQLAlchemy's autoflush notes inside nbgrader's gradebook.
# Set where the grader, its pool's workers and Dask's workers all import them.
warnings.filterwarnings("ignore", category=nbformat.validator.MissingIDFieldWarning)
warnings.filterwarnings("ignore", message=r"Object of type <\w+> not in session, add operation along")

REPO = HERE.parent
CODE_FILES = ["job.py", "executor.py", "sandbox.py", "inkernel/runner.py", "inkernel/wire.py", "inkernel/owntime.py",
              "inkernel/zygote.py", "course_preprocessors.py", "feedback.py", "mathml.py", "safe_input.py", "cgroups.py"]
RESULT_VERSION = 2
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
NOTEBOOK_DEPTH = 100  # how deeply a submitted notebook's JSON may nest (nbformat's own structure is about 6 levels)
# How many JSON values a submitted notebook may hold: json.loads builds one object per value in the grader's own
# process (16.7 million empty objects in a 50 MB file took 10 GiB and 76 s to read; now refused in 1.7 s and 96 MiB).
# 2 million leave room for a million lines of printed output (read in 0.3 s and 125 MiB); what the grader keeps of a
# notebook (no outputs) is far smaller, and nbformat reads and validates only that (at most KEPT_VALUES).
NOTEBOOK_VALUES = 2_000_000
KEPT_VALUES = 200_000
MAX_CELLS = 2_000  # a chapter has about 100; every cell is rebuilt, run and rendered into feedback


SECRET_FILE = "secret"  # WORKSPACE/secret: the course's secret behind every student's hidden-test inputs
HIDDEN_SEED_VAR = "SEQLAB_HIDDEN_SEED"  # seqlab.grading.hidden_seed reads it, in the test kernel only


def course_secret(workspace: Path) -> str:
    """The course's secret (WORKSPACE/secret), made on first use: 32 random bytes as hex, mode 0600, never in the
    repository. Every student's hidden-test inputs derive from it (student_seed); keep it for the whole term, as a
    regrade draws the same inputs only with the same secret (a new one regrades everything with new inputs)."""
    import secrets

    path = workspace / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
    text = read_file(path, 4096).decode("ascii", errors="replace").strip()
    if len(text) < 32:
        raise ValueError(f"{path} holds no usable secret (at least 32 characters expected); remove it to make a new one")
    return text


def student_seed(secret: str, chapter: str, student: str) -> str:
    """One student's seed for one chapter's hidden tests: HMAC-SHA256(course secret, chapter NUL student), as hex.
    Without the secret no one can tell another student's seed, and the seed alone gives nothing without the hidden
    tests' code; the same secret, chapter and student give the same seed, so a regrade draws the same inputs."""
    return hmac.new(secret.encode(), f"{chapter}\0{student}".encode(), hashlib.sha256).hexdigest()


def inputs_fingerprint(hidden_seed: str | None) -> str:
    """What result.json records of the seed a job's hidden tests drew from (not the seed): a job is redone when it
    changes (a new secret), and "fixed" is the notebooks' own inputs (no seed)."""
    if not hidden_seed:
        return "fixed"
    return hashlib.sha256(f"hidden-inputs\0{hidden_seed}".encode()).hexdigest()[:16]


def digest(paths: list[Path]) -> str:
    """A hash of the files' names and bytes. A name is hashed as the bytes the file system holds (os.fsencode: a
    submitted file's name need not be UTF-8); a file that cannot be read is hashed as the reason."""
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(os.fsencode(path.name))
        try:
            h.update(read_file(path))
        except (OSError, Refused) as why:
            h.update(f"<{why}>".encode("utf-8", "backslashreplace"))
    return h.hexdigest()[:16]


def graded_notebooks(source_dir: Path) -> list[Path]:
    """A chapter's notebooks that hold graded cells, in name order. A chapter folder may also hold an optional
    notebook with none (chapter 3's ablation): it is released with the chapter and never graded, so no student
    is told it is missing."""
    return [p for p in sorted(source_dir.glob("*.ipynb"))
            if any(c.get("metadata", {}).get("nbgrader", {}).get("grade") for c in nbformat.read(p, as_version=4).cells)]


def course_version(source_dir: Path) -> str:
    """Changes when the chapter's sources or the grader's code change: then everything regrades."""
    return digest(sorted(source_dir.glob("*.ipynb")) + [HERE / f for f in CODE_FILES])


def submission_hash(submission_dir: Path) -> str:
    if not is_real_dir(submission_dir):
        return "missing"
    try:
        found = entries(submission_dir)
    except OSError as error:  # a folder that cannot be listed: hashed as the reason, graded as what job.py reads
        return f"unreadable ({error.strerror})"
    return digest([Path(e.path) for e in found if e.name.endswith((".ipynb", ".refused"))])


def canonical(source: Path) -> NotebookNode:
    """The source as nbgrader stores it in the gradebook: answer stubs, full tests, checksums."""
    nb = nbformat.read(source, as_version=4)
    nb, _ = ClearSolutions().preprocess(nb, {})
    nb, _ = ComputeChecksums().preprocess(nb, {})
    return nb


def python_of(cell_source: str) -> ast.Module | None:
    """A cell's code as Python (IPython magics turned into calls), or None if it does not parse."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return ast.parse(TransformerManager().transform_cell(cell_source))
    except SyntaxError:
        return None


def top_level_names(tree: ast.Module | None, classes_only: bool = False) -> list[str]:
    names: list[str] = []
    for node in tree.body if tree is not None else []:
        if isinstance(node, ast.ClassDef):
            names.append(node.name)
        elif classes_only:
            continue
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return names


def plan_for(source: Path, nb: NotebookNode, hidden_seed: str | None = None) -> Plan:
    """What the trusted runner needs from the source: its definitions, the answer names, the hidden lines."""
    src = nbformat.read(source, as_version=4)
    answers, classes, pending, by_test, classes_in = [], [], [], {}, {}
    for cell in src.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        if "definitions" in cell.metadata.get("tags", []) and not meta.get("grade"):
            pending.append(cell.source)
            defined = top_level_names(python_of(cell.source), classes_only=True)
            classes += defined
            if defined:
                classes_in[cell.source] = defined
        elif meta.get("solution"):
            answers += top_level_names(python_of(cell.source))
        elif meta.get("grade"):
            by_test[meta["grade_id"]] = pending
            pending = []
    tests, course, hidden_from = set(), {}, {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell):
            gid = cell.metadata.nbgrader["grade_id"]
            tests.add(index)
            course[index] = by_test.get(gid, [])
            lines = cell.source.splitlines()
            begin = next((n for n, line in enumerate(lines, 1) if line.strip() == HIDDEN_BEGIN), None)
            if begin is not None:
                hidden_from[index] = begin
    return Plan(tests=tests, course=course, answer_names=sorted(set(answers)), classes=sorted(set(classes)),
                hidden_from=hidden_from, classes_in=classes_in,
                test_environment={HIDDEN_SEED_VAR: hidden_seed} if hidden_seed else {})


def without_outputs(data: dict) -> dict:
    """The notebook's JSON without what the grader never reads: outputs and attachments (nbformat 4 or 3)."""
    sheets = data.get("worksheets") if data.get("nbformat") == 3 else [data]
    for sheet in sheets if isinstance(sheets, list) else []:
        cells = sheet.get("cells") if isinstance(sheet, dict) else None
        for cell in cells if isinstance(cells, list) else []:
            if isinstance(cell, dict):
                cell.pop("attachments", None)
                if "outputs" in cell:
                    cell["outputs"] = []
    return data


def read_student(path: Path) -> tuple[NotebookNode | None, str | None]:
    """The student's notebook, or None and the reason in plain words."""
    try:
        raw = read_file(path)
    except Refused as why:
        return None, str(why)
    except OSError as error:
        return None, f"{path.name} could not be read ({error.strerror})"
    if not raw.strip():
        return None, f"{path.name} is empty"
    # json.loads and nbformat recurse once per level and build an object per value, in the grader's own process
    problem = json_problem(raw, NOTEBOOK_DEPTH, NOTEBOOK_VALUES)
    if problem:
        return None, f"{path.name} is not a valid notebook: its JSON is {problem}"
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as error:
        return None, f"{path.name} is not a valid notebook: broken JSON at line {error.lineno}, column {error.colno}"
    del raw
    if not isinstance(data, dict) or "nbformat" not in data:
        return None, f"{path.name} is not a notebook (no nbformat version)"
    if data.get("nbformat") not in (3, 4):
        return None, f"{path.name} has nbformat version {data.get('nbformat')!r}; version 4 is expected"
    kept = json.dumps(without_outputs(data)).encode()  # the grader runs the cells again: their outputs are not read
    problem = json_problem(kept, NOTEBOOK_DEPTH, KEPT_VALUES)
    if problem:
        return None, f"{path.name} is not a valid notebook: without its outputs, its JSON is still {problem}"
    cells = data.get("cells") if data.get("nbformat") == 4 else None
    if isinstance(cells, list) and len(cells) > MAX_CELLS:
        return None, f"{path.name} has {len(cells):,d} cells; a notebook of more than {MAX_CELLS:,d} is not graded"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(kept.decode(), as_version=4)
            nbformat.validate(nb, relax_add_props=True)
    except Exception as error:  # noqa: BLE001 - nbformat raises many kinds
        message = str(error).splitlines()[0][:200]
        # an invalid but readable notebook is still graded when its cells are usable
        try:
            nb = nbformat.from_dict(data) if data.get("nbformat") == 4 else None
            assert nb is not None and isinstance(nb.get("cells"), list)
            for cell in nb.cells:
                assert cell["cell_type"] in ("code", "markdown", "raw")
                cell.setdefault("metadata", {})
                if isinstance(cell.get("source"), list):
                    cell["source"] = "".join(cell["source"])
                assert isinstance(cell.get("source", ""), str)
        except Exception:  # noqa: BLE001
            return None, f"{path.name} is not a valid notebook: {message}"
    return nb, None


def _visible(source: str) -> str:
    """A test cell's source as the student sees it: without the hidden tests."""
    return re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", source, flags=re.S).strip()


def rebuild(canon: NotebookNode, student: NotebookNode) -> tuple[NotebookNode, list[str]]:
    """The notebook to execute: the source's graded and locked cells, the student's answers and own cells."""
    notes: list[str] = []
    by_id = {c.metadata.nbgrader["grade_id"]: c for c in canon.cells if "grade_id" in c.metadata.get("nbgrader", {})}
    order = list(by_id)
    taken: dict[str, NotebookNode] = {}
    extras: dict[str | None, list[NotebookNode]] = {None: []}
    anchor: str | None = None
    for cell in student.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {}) or {}
        gid = meta.get("grade_id") if isinstance(meta, dict) else None
        if gid in by_id:
            if gid in taken:
                notes.append(f"a duplicate of cell '{gid}' was removed")
                continue
            source = by_id[gid]
            if utils.is_solution(source) and cell.get("cell_type") == source.cell_type:
                kept = nbformat.from_dict({**source, "source": cell.get("source", "")})
            else:
                kept = nbformat.from_dict(dict(source))
                if utils.is_grade(source) and _visible(cell.get("source", "")) != _visible(source.source):
                    notes.append(f"the test cell '{gid}' was edited; the original was restored")
            kept.metadata = nbformat.from_dict(json.loads(json.dumps(source.metadata)))
            taken[gid] = kept
            anchor = gid
            continue
        if gid is not None or meta:
            if isinstance(meta, dict) and (meta.get("grade") or meta.get("solution") or meta.get("locked")):
                notes.append(f"a cell marked as graded with an unknown id {gid!r} was made ungraded")
            cell = nbformat.from_dict(dict(cell))
            cell.metadata.pop("nbgrader", None)
        if cell.get("cell_type") == "code":
            cell = nbformat.from_dict({"cell_type": "code", "metadata": dict(cell.get("metadata", {})),
                                       "source": cell.get("source", ""), "outputs": [], "execution_count": None})
        extras.setdefault(anchor, []).append(cell)
    cells = list(extras[None])
    for gid in order:
        if gid not in taken:
            if utils.is_grade(by_id[gid]) or utils.is_locked(by_id[gid]):
                notes.append(f"the cell '{gid}' was deleted; the original was put back")
            taken[gid] = nbformat.from_dict(json.loads(json.dumps(by_id[gid])))
        cells.append(taken[gid])
        cells += extras.get(gid, [])
    nb = nbformat.v4.new_notebook(cells=cells, metadata=json.loads(json.dumps(canon.metadata)))
    edition = student.get("metadata", {}).get(EDITION_KEY) if isinstance(student.get("metadata"), dict) else None
    if isinstance(edition, str) and edition in EDITIONS:  # the edition the student worked in: the feedback's language
        nb.metadata[EDITION_KEY] = edition
    for cell in nb.cells:
        cell.pop("id", None)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.nbformat, nb.nbformat_minor = 4, 4
    return nb, notes


def score_cells(nb: NotebookNode, execution=None, reason: str | None = None) -> dict[str, dict]:
    """Per graded cell: auto score (nbgrader's determine_grade), max score, and why it is zero if it is."""
    cells = {}
    for index, cell in enumerate(nb.cells):
        if not utils.is_grade(cell):
            continue
        gid = cell.metadata.nbgrader["grade_id"]
        auto, max_score = utils.determine_grade(cell)
        why = None
        if execution is None:
            auto, why = 0.0, reason
        elif cell.cell_type == "code" and not utils.is_solution(cell):
            if index in execution.not_run:
                auto, why = 0.0, "not run: " + (execution.problems[-1] if execution.problems else "the notebook stopped")
            elif execution.replies.get(index) == "error" and auto:
                auto, why = 0.0, "the cell raised an error (its error output was hidden)"
            elif index in execution.timed_out:
                auto, why = 0.0, "timed out"
        cells[gid] = {"auto_score": auto, "max_score": max_score, "solution": utils.is_solution(cell),
                      "test": not utils.is_solution(cell), "reason": why,
                      # the feedback's visibility schedule holds back such a cell's score before the due date (policy.py)
                      "hidden": cell.cell_type == "code" and "BEGIN HIDDEN TESTS" in cell.source,
                      "hidden_failure": bool(execution is not None and index in execution.hidden_failures),
                      "student_error": bool(execution is not None and index in execution.student_errors),
                      "no_response": bool(utils.is_solution(cell) and cell.metadata.nbgrader.get("checksum") == utils.compute_checksum(cell))}
    return cells


def grade_notebook(source: Path, student_path: Path, sandbox: Sandbox | None,
                   hidden_seed: str | None = None) -> tuple[dict, NotebookNode]:
    canon = canonical(source)
    if os.path.lexists(student_path.parent) and not is_real_dir(student_path.parent):
        reason = f"the folder {student_path.parent.name} is a link; it was not followed"
        return {"status": "refused", "problems": [reason], "cells": score_cells(canon, None, reason)}, canon
    refused = student_path.with_name(student_path.name + ".refused")
    if not os.path.lexists(student_path) and refused.is_file() and not refused.is_symlink():
        reason = refused.read_text(errors="replace")[:500]
        return {"status": "refused", "problems": [reason], "cells": score_cells(canon, None, reason)}, canon
    if not os.path.lexists(student_path):
        found = sorted(p.name for p in student_path.parent.glob("*.ipynb")) if student_path.parent.is_dir() else []
        others = [name for name in found if name != source.name]
        reason = f"{source.name} is missing" + (f" (found {', '.join(others)}: a notebook must keep its name)" if others else "")
        return {"status": "missing", "problems": [reason], "cells": score_cells(canon, None, reason)}, canon
    student, reason = read_student(student_path)
    if student is None:
        return {"status": "invalid", "problems": [reason], "cells": score_cells(canon, None, reason)}, canon
    nb, notes = rebuild(canon, student)
    plan = plan_for(source, nb, hidden_seed)
    execution = run(nb, sandbox, plan)
    for cell in nb.cells:
        KeepWarningsVisible().preprocess_cell(cell, {}, 0)
    nb, _ = LimitOutput().preprocess(nb, {})
    problems = list(execution.problems)
    limits = sandbox.limits
    for index in execution.timed_out:
        if index in execution.backstopped:
            problems.append(f"cell #{index} ran longer than {limits.backstop:g} × {limits.cell_timeout} s of wall time "
                            "(the backstop: the machine was very busy, or the code kept the runner from keeping "
                            "time) and was interrupted")
        elif execution.own_time is False:
            problems.append(f"cell #{index} ran longer than {limits.cell_timeout} s of wall time and was interrupted "
                            "(this machine gives no scheduler statistics, so waiting for a CPU counted)")
        else:
            problems.append(f"cell #{index} ran longer than {limits.cell_timeout} s of its own time (waiting for a "
                            "CPU that other processes held not counted) and was interrupted")
    memory = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and any(
        o.get("ename") == "MemoryError" or "MemoryError" in str(o.get("text", "")) for o in c.outputs)]
    for index in memory:
        problems.append(f"cell #{index} reached the memory limit ({sandbox.limits.memory_bytes / 2**30:.1f} GiB)")
    if execution.output_dropped_bytes:
        problems.append(f"the notebook printed too much; {execution.output_dropped_bytes:,d} bytes of output were dropped")
    cells = score_cells(nb, execution)
    return {"status": "graded", "problems": problems, "repairs": notes, "cells": cells,
            "timings": timings(execution, plan)}, nb


def timings(execution: Execution, plan: Plan) -> dict:
    """Where a notebook's time went, and what the second kernel added (benchmark.py sums these up): forking both
    runners, the course's definitions run again for the test kernel, and the test cells' calls to the student's
    code less the time that code itself ran (encoding, the socket, decoding)."""
    tests = [execution.cell_time.get(i, {}) for i in plan.tests]
    calls_s = sum(t.get("call_s", 0.0) for t in tests)
    student_s = sum(t.get("remote_s", 0.0) for t in tests)
    return {"kernel_ready_s": round(execution.kernel_ready_s, 3), "run_s": round(execution.seconds, 3),
            "test_cells_s": round(sum(t.get("wall_s", 0.0) for t in tests), 3),
            "calls": int(sum(t.get("calls", 0) for t in tests)), "calls_s": round(calls_s, 3),
            "student_code_s": round(student_s, 3), "wire_s": round(calls_s - student_s, 3),
            "course_rerun_s": round(execution.course_rerun_s, 3)}


def failed_result(submission: Path, source_dir: Path, student: str, out: Path, reasons: list[str]) -> dict:
    """Record a submission on which the grading job itself failed twice: 0 points, the reasons, ``failed``.

    grade.py grades it again on its next run (a failed result is never up to date) and exits non-zero meanwhile.
    It runs in grade.py's own failure handler, so nothing of the submission may stop it: the reasons are made
    printable UTF-8, and a submission folder that cannot be hashed is recorded as such (the hash only decides what
    the next run grades, and a failed result is graded again anyway)."""
    said = "; then ".join(shown(reason, 600) for reason in reasons)
    problem = (f"the grader failed on this submission twice ({said}); it is recorded as 0 until a "
               "run grades it (the grader's error, not the student's: fix the cause, then run grade.py again)")
    try:
        hashed = submission_hash(submission)
    except Exception as error:  # noqa: BLE001 - the failure being recorded may be this very one
        hashed = f"not hashed ({type(error).__name__})"
    result = {"version": RESULT_VERSION, "student": student, "chapter": source_dir.name,
              "course_version": course_version(source_dir), "submission_hash": hashed,
              "timestamp": None, "notebooks": {}, "sandboxed": None, "failed": True, "problem": problem}
    for source in graded_notebooks(source_dir):
        result["notebooks"][source.stem] = {"status": "failed", "problems": [],
                                            "cells": score_cells(canonical(source), None, "the grader failed")}
    result["score"] = 0
    result["max_score"] = sum(c["max_score"] for n in result["notebooks"].values() for c in n["cells"].values())
    write_result(out, result)
    return result


def write_result(out: Path, result: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "result.json.tmp"
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, out / "result.json")  # atomic: a result file exists only when complete


def run_job(submission: Path, source_dir: Path, student: str, out: Path, sandbox: Sandbox, feedback: bool = True,
            hidden_seed: str | None = None) -> dict:
    """Grade one submission folder against one chapter's sources; write out/result.json; return it.

    ``hidden_seed`` (student_seed()) reaches the test kernel only, as SEQLAB_HIDDEN_SEED: the hidden tests draw the
    student's own random inputs from it (seqlab.grading.hidden_seed). None: the notebooks' fixed inputs."""
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    result = {"version": RESULT_VERSION, "student": student, "chapter": source_dir.name,
              "course_version": course_version(source_dir), "submission_hash": submission_hash(submission),
              "hidden_inputs": inputs_fingerprint(hidden_seed),
              "timestamp": None, "notebooks": {}, "sandboxed": sandbox.sandboxed}
    try:
        result["timestamp"] = read_file(submission / "timestamp.txt", 4096).decode(errors="replace").strip()[:64]
    except (OSError, Refused):
        pass
    if not is_real_dir(submission):
        result["problem"] = "the submission folder is missing or is a link (not followed)"
    elif not any(e.name.endswith((".ipynb", ".refused")) for e in entries(submission)):
        result["problem"] = "no notebook was submitted for this chapter"
    for source in graded_notebooks(source_dir):
        sandbox.reset_scratch()
        entry, nb = grade_notebook(source, submission / source.name, sandbox, hidden_seed)
        nbformat.write(sanitize(nb, course_markdown(str(source))), out / source.name)
        result["notebooks"][source.stem] = entry
        if feedback:
            from feedback import feedback_html, plain_feedback

            try:
                page = feedback_html(nb, entry, student, source_dir.name, source.stem)
            except Exception as error:  # noqa: BLE001 - the grade stands; the feedback falls back to a plain page
                entry.setdefault("problems", []).append(
                    f"the feedback page could not be made from the notebook ({type(error).__name__}); a plain one was written")
                page = plain_feedback(entry, student, source_dir.name, source.stem)
            (out / f"{source.stem}.html").write_text(page)
    sandbox.after_submission()
    scores = [c for n in result["notebooks"].values() for c in n["cells"].values()]
    result["score"] = sum(c["auto_score"] or 0 for c in scores)
    result["max_score"] = sum(c["max_score"] for c in scores)
    result["seconds"] = round(time.perf_counter() - started, 3)  # the whole job, feedback included (benchmark.py)
    write_result(out, result)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Grade one submission (the stateless job).")
    parser.add_argument("submission", type=Path, help="folder with the student's notebooks for this chapter")
    parser.add_argument("--chapter", required=True)
    parser.add_argument("--student", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--source", type=Path, default=REPO / "solutions", help="the course's source folder")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder of the sandbox (default: a temp folder)")
    parser.add_argument("--allow-unsandboxed", action="store_true")
    parser.add_argument("--secret", type=Path, default=None,
                        help="the course's secret file (a grading workspace's `secret`): the hidden tests draw this "
                             "student's own inputs, as grade.py's do; without it, the notebooks' fixed inputs")
    args = parser.parse_args(argv)
    import tempfile

    from sandbox import bubblewrap, unsandboxed_refusal

    hidden_seed = None
    if args.secret is not None:
        try:
            secret = read_file(args.secret, 4096).decode("ascii", errors="replace").strip()
        except (OSError, Refused) as error:
            print(f"job: cannot read the secret file {args.secret}: {error}", file=sys.stderr)
            return 2
        if len(secret) < 32:
            print(f"job: {args.secret} holds no usable secret (at least 32 characters expected)", file=sys.stderr)
            return 2
        hidden_seed = student_seed(secret, args.chapter, args.student)
    sandboxed = bubblewrap() is not None
    if not sandboxed and not args.allow_unsandboxed:
        print(unsandboxed_refusal("job"), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="seqlab-job-", dir=args.work) as work:
        sandbox = Sandbox(Path(work), Limits(), sandboxed=sandboxed)
        try:
            result = run_job(args.submission, args.source / args.chapter, args.student, args.out, sandbox,
                             hidden_seed=hidden_seed)
        finally:
            sandbox.close()
    print(json.dumps({"student": args.student, "score": result["score"], "max_score": result["max_score"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
