"""`make gpu-check`: the course on a CUDA machine (issue 28). Needs a GPU; on a machine without one it says so
and exits 1 before doing anything.

1. ``pytest -m gpu``: the course's cells and attention against torch on CUDA, every training script's short run
   on CUDA, a committed checkpoint decoded there (tests/test_gpu.py).
2. Every solution notebook run top to bottom as a learner runs it (a fresh kernel, learner mode), on the GPU;
   a last cell, added in memory only, reports the notebook's ``device`` and its kernel's peak GPU memory
   (``torch.cuda.max_memory_allocated``).
3. The same notebooks on the CPU of the same machine (CUDA hidden: ``CUDA_VISIBLE_DEVICES=`` and
   ``SEQLAB_DEVICE=cpu``), unless a CPU record from an earlier run exists (``--cpu-record``; ``--fresh-cpu``
   runs them again): the CPU record the GPU figures are compared with.
4. A table: notebook, device, seconds (GPU and CPU), peak GPU memory, and how many of the figures the notebook
   prints (its ``RESULTS`` line) are the CPU's, with the largest change; then every figure that differs.

The records go to build/gpu-check/ (gpu.json, cpu.json). Exit status: 0 when the gpu tests passed and every
notebook ran without an error on both devices, else 1.

    python tests/gpu_check.py                      # everything
    python tests/gpu_check.py --skip-pytest 07     # only notebooks whose name contains 07, no pytest
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "gpu-check"

PROBE = '''
import json as _gc_json, sys as _gc_sys
_gc_torch = _gc_sys.modules.get("torch")
_gc_device = globals().get("device")
_gc_cuda = bool(_gc_torch is not None and _gc_torch.cuda.is_available())
print("GPU_CHECK " + _gc_json.dumps({
    "device": None if _gc_device is None else str(_gc_device),
    "torch_imported": _gc_torch is not None,
    "cuda_available": _gc_cuda,
    "peak_bytes": int(_gc_torch.cuda.max_memory_allocated()) if _gc_cuda and _gc_torch.cuda.is_initialized() else 0,
}))
'''


def needs_a_gpu() -> str | None:
    """None when torch sees a CUDA GPU, else the reason it does not."""
    try:
        import torch
    except ImportError:
        return "torch is not installed in this environment"
    if not torch.cuda.is_available():
        build = "a build without CUDA" if not torch.version.cuda else f"CUDA {torch.version.cuda}, but no GPU visible"
        return f"torch {torch.__version__} ({build}) sees no CUDA GPU"
    return None


def run_pytest() -> int:
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "-rs"]
    print("== " + " ".join(command[1:]), flush=True)
    return subprocess.run(command, cwd=REPO).returncode


def run_notebook(path: Path, *, cpu: bool, timeout: int) -> dict[str, Any]:
    """Execute a solution notebook in a fresh kernel, in learner mode, with the probe cell appended (in memory)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    from course import environment, learner_environment, printed_results

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    env = learner_environment()
    hide = {"CUDA_VISIBLE_DEVICES": "", "SEQLAB_DEVICE": "cpu"} if cpu else {"SEQLAB_DEVICE": None}
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    error = None
    changed = {key: env.get(key) for key in ("PATH", "OMP_WAIT_POLICY", "NBGRADER_EXECUTION", "MPLBACKEND")}
    start = time.perf_counter()
    try:
        with environment(**changed, **hide):
            client.execute()
    except (CellExecutionError, CellTimeoutError, RuntimeError) as failure:
        error = str(failure).strip().splitlines()[-1][:300] if str(failure).strip() else type(failure).__name__
    seconds = time.perf_counter() - start
    probe: dict[str, Any] = {}
    for output in nb.cells[-1].get("outputs", []):
        if output.get("output_type") == "stream" and "GPU_CHECK " in output.get("text", ""):
            probe = json.loads(output["text"].split("GPU_CHECK ", 1)[1].splitlines()[0])
    try:
        results = printed_results(nb)
    except (AssertionError, ValueError):
        results = {}
    return {"seconds": round(seconds, 1), "error": error, **probe, "results": results}


def flatten(value: Any, prefix: str = "") -> dict[str, float]:
    """The numbers of a RESULTS dict, nested keys joined with dots (booleans and strings left out)."""
    out: dict[str, float] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{i}]"))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[prefix] = float(value)
    return out


def compare(gpu: dict, cpu: dict | None) -> tuple[int, int, list[tuple[str, float, float | None]]]:
    """(figures equal, figures compared, every figure that differs or is missing on the CPU)."""
    ours = flatten(gpu.get("results", {}))
    theirs = flatten(cpu.get("results", {})) if cpu else {}
    same, differ = 0, []
    for key, value in ours.items():
        other = theirs.get(key)
        if other is not None and math.isclose(value, other, rel_tol=1e-9, abs_tol=1e-12):
            same += 1
        else:
            differ.append((key, value, other))
    return same, len(ours), differ


def change(value: float, other: float | None) -> str:
    if other is None:
        return "no CPU figure"
    if other == 0:
        return f"{value - other:+.4g}"
    return f"{(value - other) / abs(other):+.2%}"


def seconds_like(key: str) -> bool:
    return "second" in key or key.endswith("_s")


def table(gpu: dict[str, dict], cpu: dict[str, dict] | None, machine: dict) -> str:
    lines = [f"GPU check on {machine['hardware']} (torch {machine['torch']}, CUDA {machine.get('cuda')}); "
             f"CPU figures: {'this machine, CUDA hidden' if cpu else 'none'}", "",
             "| notebook | device | seconds (GPU) | seconds (CPU) | peak GPU memory | figures as on the CPU | largest change (not timings) |",
             "|---|---|---:|---:|---:|---:|---|"]
    details = []
    for name, run in gpu.items():
        other = (cpu or {}).get(name)
        same, total, differ = compare(run, other)
        figures = [d for d in differ if not seconds_like(d[0]) and d[2] is not None]
        largest = max(figures, key=lambda d: abs(d[1] - d[2]) / max(abs(d[2]), 1e-12), default=None)
        device = run.get("device") or ("no torch" if not run.get("torch_imported") else "?")
        if run.get("error"):
            device += f" ERROR: {run['error']}"
        peak = f"{run.get('peak_bytes', 0) / 2 ** 20:,.0f} MiB" if run.get("peak_bytes") else "-"
        lines.append(f"| {name} | {device} | {run['seconds']:.0f} | {other['seconds']:.0f} | {peak} | "
                     f"{same}/{total} | {f'{largest[0]} {change(largest[1], largest[2])}' if largest else '-'} |"
                     if other else
                     f"| {name} | {device} | {run['seconds']:.0f} | - | {peak} | {same}/{total} | - |")
        for key, value, other_value in differ:
            details.append(f"  {name}: {key} = {value:g} on the GPU, "
                           f"{'-' if other_value is None else f'{other_value:g}'} on the CPU ({change(value, other_value)})")
    if details:
        lines += ["", "Figures that differ from the CPU's (timings included):" if cpu else
                  "Figures the notebooks printed (no CPU record to compare with):", *details]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("only", nargs="*", help="run only the notebooks whose file name contains one of these")
    parser.add_argument("--skip-pytest", action="store_true", help="leave out pytest -m gpu")
    parser.add_argument("--cpu-record", type=Path, default=BUILD / "cpu.json",
                        help="the CPU runs to compare with: read if it exists, else made (default build/gpu-check/cpu.json)")
    parser.add_argument("--fresh-cpu", action="store_true", help="run the notebooks on the CPU again")
    parser.add_argument("--no-cpu", action="store_true", help="no CPU runs, no comparison")
    parser.add_argument("--timeout", type=int, default=900, help="seconds a cell may take (default 900)")
    args = parser.parse_args(argv)
    reason = needs_a_gpu()
    if reason:
        print(f"make gpu-check needs a CUDA GPU: {reason}. Run it on a machine with one (Colab's GPU runtime, or "
              "your own) with a CUDA build of torch in .venv; `make test` is the CPU suite.", flush=True)
        return 1

    from course import solution_notebooks
    from seqlab.hardware import describe

    machine = describe("cuda")
    print(f"== {machine['hardware']}, torch {machine['torch']}, CUDA {machine.get('cuda')}", flush=True)
    status = 0
    if not args.skip_pytest:
        status |= run_pytest() != 0
    notebooks = [p for p in solution_notebooks() if not args.only or any(s in p.name for s in args.only)]
    BUILD.mkdir(parents=True, exist_ok=True)
    gpu: dict[str, dict] = {}
    for path in notebooks:
        print(f"== {path.name} on the GPU", flush=True)
        gpu[path.stem] = run_notebook(path, cpu=False, timeout=args.timeout)
        status |= gpu[path.stem]["error"] is not None
    (BUILD / "gpu.json").write_text(json.dumps({"machine": machine, "notebooks": gpu}, indent=1) + "\n")
    cpu: dict[str, dict] | None = None
    if not args.no_cpu:
        saved = json.loads(args.cpu_record.read_text()) if args.cpu_record.is_file() and not args.fresh_cpu else {}
        cpu = dict(saved.get("notebooks", {}))
        for path in notebooks:
            if path.stem not in cpu:
                print(f"== {path.name} on the CPU (CUDA hidden)", flush=True)
                cpu[path.stem] = run_notebook(path, cpu=True, timeout=args.timeout)
        status |= any(cpu[p.stem]["error"] is not None for p in notebooks)
        args.cpu_record.parent.mkdir(parents=True, exist_ok=True)
        args.cpu_record.write_text(json.dumps({"machine": describe("cpu"), "notebooks": cpu}, indent=1) + "\n")
    print()
    print(table(gpu, cpu, machine))
    print(f"\nrecords: {BUILD / 'gpu.json'}" + ("" if cpu is None else f", {args.cpu_record}"))
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
