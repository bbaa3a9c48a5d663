"""Does every chapter's solution get full marks whatever inputs a student's hidden tests draw? (issue 44, part 3)

    python autograder/seeds_check.py [--chapter CH ...] [--seeds 50] [--jobs 2] [--secret TEXT] [--json FILE]

The grader gives each student's test kernel a seed of their own (job.student_seed: HMAC-SHA256 of the course's
secret, the chapter and the student id), and the hidden tests draw their random inputs from it
(seqlab.grading.hidden_seed / hidden_generator). This runs each chapter's graded test cells against its solution
the way tests/mistakes.py does, in one process per chapter, in grading mode (NBGRADER_EXECUTION=autograde): the
`definitions` cells and the answer cells once, every test cell once with the fixed inputs, then every test cell
with hidden tests again under each of ``--seeds`` students' seeds (students ``student-01`` ...; the secret is
``--secret``, a fixed text by default so that a run can be repeated). A cell passes as nbgrader scores it: no error
and nothing on stderr. Exit status 1 if any cell failed under any seed; every failure is listed with the student,
the cell and the check's message.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import contextlib
import copy
import io
import json
import os
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SOLUTIONS = REPO / "solutions"
sys.path.insert(0, str(HERE))

from job import HIDDEN_SEED_VAR, student_seed  # noqa: E402

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
DEFAULT_SECRET = "seeds-check: not a course secret, a fixed one so that a run can be repeated"


def chapters() -> list[str]:
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and (p / f"{p.name}.ipynb").exists())


def student_name(index: int) -> str:
    return f"student-{index:02d}"


class ChapterCells:
    """A chapter's solution in this process: its definitions and answers run once, its graded test cells runnable
    one by one, each in a fresh copy of what the earlier test cells left (toy data), as in one kernel."""

    def __init__(self, chapter: str):
        import nbformat

        path = SOLUTIONS / chapter / f"{chapter}.ipynb"
        nb = nbformat.read(path, as_version=4)
        self.chapter = chapter
        self.base: dict = {"__name__": f"chapter_{chapter.replace('-', '_')}"}
        self.tests: dict[str, str] = {}
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                self.tests[meta["grade_id"]] = cell.source
            elif "definitions" in cell.metadata.get("tags", []) or meta.get("solution"):
                with quiet():
                    exec(compile(cell.source, f"{path.name}[{index}]", "exec"), self.base)
        self.hidden = [gid for gid, source in self.tests.items() if HIDDEN_BEGIN in source]
        self.earlier: dict[str, dict] = {}

    def first_pass(self) -> dict[str, str]:
        """Every test cell once, in order, with the notebook's fixed inputs; what each failed with (none: passed)."""
        namespace, failures = dict(self.base), {}
        for gid, source in self.tests.items():
            self.earlier[gid] = {k: v for k, v in namespace.items() if k not in self.base and not k.startswith("_")}
            problem = run_cell(source, gid, namespace)
            if problem:
                failures[gid] = problem
        return failures

    def run(self, gid: str) -> str | None:
        namespace = {**self.base, **fresh(self.earlier.get(gid, {}))}
        return run_cell(self.tests[gid], gid, namespace)


def fresh(values: dict) -> dict:
    copied = {}
    for name, value in values.items():
        try:
            copied[name] = copy.deepcopy(value)
        except Exception:  # noqa: BLE001 - what cannot be copied (a module, a generator) is shared
            copied[name] = value
    return copied


@contextlib.contextmanager
def quiet():
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def run_cell(source: str, gid: str, namespace: dict) -> str | None:
    """None if the cell passes as nbgrader scores it (no error, nothing on stderr), else why not."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            exec(compile(source, gid, "exec"), namespace)
    except BaseException as error:  # noqa: BLE001 - a failed check, or any error the cell raised
        if isinstance(error, KeyboardInterrupt):
            raise
        return f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300] if str(error).strip() else ''}"
    if err.getvalue().strip():
        return f"wrote to stderr (nbgrader zeroes the cell): {err.getvalue().strip().splitlines()[-1][:300]}"
    return None


def check_chapter(chapter: str, seeds: int, secret: str) -> dict:
    """One chapter under the fixed inputs and ``seeds`` students' seeds (run in a process of its own)."""
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    os.environ.pop(HIDDEN_SEED_VAR, None)
    os.chdir(SOLUTIONS / chapter)
    import torch

    torch.set_num_threads(1)  # the course's thread setting, as the grader's runners
    started = time.process_time()
    try:
        cells = ChapterCells(chapter)
        fixed = cells.first_pass()
    except Exception:  # noqa: BLE001 - reported as this chapter's failure
        return {"chapter": chapter, "error": traceback.format_exc(limit=3)[-1500:]}
    setup_s = time.process_time() - started
    failures = [{"student": "(fixed inputs)", "cell": gid, "message": why} for gid, why in fixed.items()]
    per_seed = []
    for index in range(1, seeds + 1):
        os.environ[HIDDEN_SEED_VAR] = student_seed(secret, chapter, student_name(index))
        began = time.process_time()
        for gid in cells.hidden:
            why = cells.run(gid)
            if why:
                failures.append({"student": student_name(index), "cell": gid, "message": why})
        per_seed.append(time.process_time() - began)
    os.environ.pop(HIDDEN_SEED_VAR, None)
    return {"chapter": chapter, "test_cells": len(cells.tests), "hidden_cells": len(cells.hidden), "seeds": seeds,
            "failures": failures, "setup_cpu_s": round(setup_s, 2), "cpu_s_per_seed": round(sum(per_seed) / max(1, seeds), 3),
            "cpu_s": round(time.process_time() - started, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", action="append", help="a chapter (repeatable; default: every chapter)")
    parser.add_argument("--seeds", type=int, default=50, help="how many students' seeds (default 50)")
    parser.add_argument("--jobs", type=int, default=1, help="chapters checked at once, one process each (default 1)")
    parser.add_argument("--secret", default=DEFAULT_SECRET, help="the course secret the students' seeds derive from")
    parser.add_argument("--json", type=Path, help="write the figures and failures here")
    args = parser.parse_args(argv)
    wanted = args.chapter or chapters()
    unknown = sorted(set(wanted) - set(chapters()))
    if unknown:
        print(f"seeds_check: unknown chapter(s) {unknown}; the course has {chapters()}", file=sys.stderr)
        return 2
    if args.seeds < 1:
        print("seeds_check: --seeds must be at least 1", file=sys.stderr)
        return 2
    started = time.perf_counter()
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # a fresh interpreter per chapter: no chapter's state in another's
    results = []
    with futures.ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=context, max_tasks_per_child=1) as pool:
        for result in pool.map(check_chapter, wanted, [args.seeds] * len(wanted), [args.secret] * len(wanted)):
            results.append(result)
            if "error" in result:
                print(f"{result['chapter']}: could not run: {result['error']}", flush=True)
                continue
            print(f"{result['chapter']}: {result['hidden_cells']} of {result['test_cells']} test cells have hidden tests; "
                  f"{args.seeds} seeds: {len(result['failures'])} failure(s); {result['cpu_s_per_seed']:.2f} s of CPU a "
                  f"seed, {result['cpu_s']:.1f} s in all", flush=True)
            for failure in result["failures"]:
                print(f"  {failure['student']} {failure['cell']}: {failure['message']}", flush=True)
    wall = time.perf_counter() - started
    failed = [r for r in results if "error" in r or r["failures"]]
    print(f"seeds_check: {len(results)} chapter(s) x {args.seeds} seeds in {wall:.1f} s of wall time: "
          + ("every solution passed every test cell under every seed" if not failed else
             f"FAILED in {', '.join(r['chapter'] for r in failed)}"))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"seeds": args.seeds, "wall_s": round(wall, 1), "chapters": results}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
