"""Wall time of autograder/grade.py against plain serial `nbgrader autograde`, on the same simulated batch.

    python autograder/benchmark.py [--students 50] [--out build/results/autograder-benchmark.json]
    python autograder/benchmark.py --students 10 --chapter 06-seq2seq --chapter 07-attention --skip-nbgrader \
        --cluster local:2 --jobs 1   # the Dask path against the local pool (issue 30)

The batch: N students x every chapter that exists, mixed as honest (solution; solution whose
answers warn), partly wrong, untouched, and adversarial (edited/duplicated tests,
monkeypatching, swallowed exceptions, sys.exit, hard-coded answers) from
tests/adversarial/generate.py. Submissions that would endanger the machine under plain
nbgrader (memory bombs, floods, endless loops) or stop its whole batch (duplicated test cells,
sys.exit) are left out of BOTH runs, so the figure compares like with like. nbgrader runs in its own workspace with this course's configuration
(the same 60 s cell timeout); this tool runs with --jobs = every core. Reported: both wall
times, the speed-up, whether the honest submissions got identical scores, per chapter both times (nbgrader's
from its own run of the chapter; this tool's as the chapter's jobs' seconds over the job slots, so its start-up,
paid once per run, is in no chapter) and what the
second kernel costs a notebook (medians over the honest ones): both runners forked and ready
(kernel_ready_s), the course's definitions run again in the test kernel (course_rerun_s), and the
wire (wire_s: the test cells' `calls` to the student's code, less the time that code ran).

With --cluster local:N (or --scheduler ADDRESS), the same batch is graded a second time on that Dask cluster
(grade.py --cluster / --scheduler, --jobs slots per worker), into a fresh workspace: reported are its wall time
(cluster start included), whether every score is identical to the pool's, and the overhead per notebook,
(Dask wall time - pool wall time) / notebooks, with the pool given the same number of job slots (N x --jobs).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))

# Kinds that stop plain `nbgrader autograde` for the whole batch (a duplicated graded cell, nbgrader
# #1083; a kernel that exits) are left out of BOTH runs, like the memory bombs, so that nbgrader grades
# every submission of the batch and the two times compare like with like.
MIX = ["honest_solution", "honest_warning", "partly_wrong", "honest_release", "edit_tests",
       "monkeypatch_numpy", "monkeypatch_check", "swallow_exceptions", "forge_shell", "unusual_but_correct"]
HONEST = {"honest_solution", "honest_warning", "partly_wrong", "honest_release", "unusual_but_correct"}


def build_batch(root: Path, students: int, chapters: list[str]) -> dict[str, str]:
    """submitted/<student>/<chapter>/ for nbgrader and for this tool; returns student -> kind."""
    import nbformat

    from adversarial.generate import submissions

    kinds = {f"s{i:03d}_{MIX[i % len(MIX)]}": MIX[i % len(MIX)] for i in range(students)}
    for chapter in chapters:
        made = submissions(chapter)
        names = sorted(p.name for p in (REPO / "solutions" / chapter).glob("*.ipynb"))
        for student, kind in kinds.items():
            folder = root / "submitted" / student / chapter
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(made[kind][0], folder / names[0])
    return kinds


def second_kernel(results: list[dict], kinds: dict[str, str]) -> dict[str, dict]:
    """Per chapter, medians over the honest notebooks of what the second kernel costs (job.py's timings):
    forking both runners, the course's definitions run again in the test kernel, and the wire (the test
    cells' calls to the student's code, less the time that code itself ran)."""
    from statistics import median

    by_chapter: dict[str, list[dict]] = {}
    for result in results:
        if kinds.get(result["student"]) in HONEST:
            by_chapter.setdefault(result["chapter"], []).extend(
                e["timings"] for e in result["notebooks"].values() if "wire_s" in e.get("timings", {}))
    summary = {}
    for chapter, rows in sorted(by_chapter.items()):
        med = {key: median(row[key] for row in rows) for key in
               ("run_s", "kernel_ready_s", "test_cells_s", "calls", "wire_s", "course_rerun_s")}
        extra = med["wire_s"] + med["course_rerun_s"]
        summary[chapter] = {"notebooks": len(rows), **{k: round(v, 3) for k, v in med.items()},
                            "extra_s": round(extra, 3), "extra_share": round(extra / med["run_s"], 3) if med["run_s"] else None,
                            "wire_ms_per_call": round(1000 * med["wire_s"] / med["calls"], 2) if med["calls"] else None}
    return summary


def env() -> dict[str, str]:
    return {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=REPO / "build" / "results" / "autograder-benchmark.json")
    parser.add_argument("--skip-nbgrader", action="store_true", help="time only this tool")
    parser.add_argument("--chapter", action="append", help="a chapter to include (repeatable; default: every chapter)")
    parser.add_argument("--cluster", help="also grade on a local Dask cluster (local:N) and compare with the pool")
    parser.add_argument("--scheduler", help="also grade on the Dask cluster of this scheduler and compare with the pool")
    parser.add_argument("--figures", action="store_true", help="this tool draws the figures too (grade.py --figures), "
                                                                 "as nbgrader's kernels do")
    parser.add_argument("--pool-jobs", type=int, help="the pool's sandboxes when comparing with Dask (default: N x --jobs "
                                                      "for --cluster local:N, else --jobs)")
    args = parser.parse_args(argv)
    from grade import chapters as all_chapters
    from workspace import make_workspace

    def chapters() -> list[str]:
        return args.chapter or all_chapters()

    with tempfile.TemporaryDirectory(prefix="seqlab-bench-") as tmp:
        tmp = Path(tmp)
        kinds = build_batch(tmp / "batch", args.students, chapters())
        notebooks = len(kinds) * len(chapters())
        figures: dict = {"students": len(kinds), "chapters": chapters(), "notebooks": notebooks, "cores": os.cpu_count(),
                         "figures_drawn": args.figures}

        dask = ["--cluster", args.cluster] if args.cluster else ["--scheduler", args.scheduler] if args.scheduler else []
        pool_jobs = args.pool_jobs or (args.jobs * int(args.cluster.split(":")[1]) if args.cluster else args.jobs)
        slots = pool_jobs if dask else args.jobs  # the pool's job slots in this tool's timed run
        ours = make_workspace(tmp / "ours")
        shutil.copytree(tmp / "batch" / "submitted", ours / "submitted")
        start = time.perf_counter()
        done = subprocess.run([sys.executable, str(HERE / "grade.py"), str(ours), "--jobs", str(slots),
                               "--no-progress", *[f"--chapter={c}" for c in chapters()], *(["--figures"] if args.figures else [])],
                              env=env(), capture_output=True, text=True)
        figures["this_tool_s"] = round(time.perf_counter() - start, 1)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        our_scores = {(r["student"], r["chapter"]): float(r["score"]) for r in csv.DictReader(open(ours / "grades.csv"))}
        results = [json.loads(p.read_text()) for p in (ours / "autograder-results").glob("*/*/result.json")]
        ready = sorted(e["timings"]["kernel_ready_s"] for r in results for e in r["notebooks"].values() if e.get("timings"))
        figures["kernel_ready_s_median"] = round(ready[len(ready) // 2], 3) if ready else None  # both runners forked
        figures["second_kernel"] = second_kernel(results, kinds)
        per_chapter: dict[str, dict] = {}
        for result in results:  # a chapter's share of this tool's wall time: its jobs' seconds over the job slots
            entry = per_chapter.setdefault(result["chapter"], {"notebooks": 0, "this_tool_s": 0.0})
            entry["notebooks"] += len(result["notebooks"])
            entry["this_tool_s"] += result.get("seconds", 0.0) / slots
        figures["per_chapter"] = {c: {**e, "this_tool_s": round(e["this_tool_s"], 1)} for c, e in sorted(per_chapter.items())}

        if dask:
            on_dask = make_workspace(tmp / "dask")
            shutil.copytree(tmp / "batch" / "submitted", on_dask / "submitted")
            start = time.perf_counter()
            done = subprocess.run([sys.executable, str(HERE / "grade.py"), str(on_dask), "--jobs", str(args.jobs), *dask,
                                   "--no-progress", *[f"--chapter={c}" for c in chapters()]],
                                  env=env(), capture_output=True, text=True)
            figures["dask"] = {"how": " ".join(dask), "jobs_per_worker": args.jobs, "pool_jobs": pool_jobs,
                               "pool_s": figures["this_tool_s"], "dask_s": round(time.perf_counter() - start, 1)}
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                return 1
            dask_scores = {(r["student"], r["chapter"]): float(r["score"]) for r in csv.DictReader(open(on_dask / "grades.csv"))}
            figures["dask"]["identical_scores"] = dask_scores == our_scores
            figures["dask"]["overhead_per_notebook_s"] = round((figures["dask"]["dask_s"] - figures["this_tool_s"]) / notebooks, 2)
            figures["dask"]["results"] = len(list((on_dask / "autograder-results").glob("*/*/result.json")))

        if not args.skip_nbgrader:
            theirs = make_workspace(tmp / "nbgrader")
            shutil.copytree(tmp / "batch" / "submitted", theirs / "submitted")
            start = time.perf_counter()
            for chapter in chapters():
                began = time.perf_counter()
                subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", chapter, "--force",
                                f"--CourseDirectory.release_directory={tmp / 'release'}"], cwd=theirs, env=env(),
                               capture_output=True, text=True)
                subprocess.run([sys.executable, "-m", "nbgrader", "autograde", chapter], cwd=theirs, env=env(),
                               capture_output=True, text=True)
                if chapter in figures["per_chapter"]:
                    row = figures["per_chapter"][chapter]
                    row["nbgrader_serial_s"] = round(time.perf_counter() - began, 1)
                    row["speedup"] = round(row["nbgrader_serial_s"] / row["this_tool_s"], 2) if row["this_tool_s"] else None
            figures["nbgrader_serial_s"] = round(time.perf_counter() - start, 1)
            from nbgrader.api import Gradebook

            theirs_scores = {}
            with Gradebook(f"sqlite:///{theirs / 'gradebook.db'}") as gb:
                for chapter in chapters():
                    for sub in gb.assignment_submissions(chapter):
                        theirs_scores[(sub.student.id, chapter)] = sub.score
            missing = [k for k in our_scores if k not in theirs_scores]
            figures["nbgrader_missing"] = len(missing)
            if missing:
                print(f"plain nbgrader left {len(missing)} submissions ungraded, e.g. {missing[:3]}", file=sys.stderr)
            honest = [k for k in our_scores if kinds.get(k[0]) in HONEST]
            differ = [k for k in honest if abs(our_scores[k] - theirs_scores.get(k, -1)) > 1e-9]
            figures["honest_identical"] = not differ
            figures["honest_differ"] = differ[:10]
            figures["speedup"] = round(figures["nbgrader_serial_s"] / figures["this_tool_s"], 2)
        figures["per_notebook_s"] = round(figures["this_tool_s"] * args.jobs / notebooks, 2)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
