"""What one call of the student's code from a test costs on the wire, by kind of call.

    python autograder/wire_benchmark.py [--calls 2000]

Each case is a notebook of two cells graded by the executor in a sandbox: an answer cell that defines ``f``
and a test cell that calls it ``--calls`` times. Printed per case: the milliseconds a call takes from the test's
side, less the time the student's code itself ran (what two kernels cost: encoding, the socket, decoding,
the fingerprints of arguments, the global random states). Each case runs twice; the second is the figure.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "inkernel"))

import nbformat  # noqa: E402

from executor import Plan, run  # noqa: E402
from sandbox import Limits, Sandbox, bubblewrap  # noqa: E402

CASES = {
    "small arguments": ("def f(word, context):\n    return 0.25",
                        "for _ in range({n}):\n    f('the', ('of', 'a'))"),
    "a table of 5,000 entries, unchanged": ("def f(word, context, table):\n    return table.get(word, 0.0)",
                                           "T = {{str(i): float(i) for i in range(5000)}}\n"
                                           "for _ in range({n}):\n    f('the', ('of', 'a'), T)"),
    "a draw from np.random": ("import numpy as np\ndef f(word, context):\n    return float(np.random.rand())",
                              "for _ in range({n}):\n    f('the', ('of', 'a'))"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="seqlab-wire-") as work:
        sandbox = Sandbox(Path(work), Limits(cell_timeout=120), sandboxed=bubblewrap() is not None)
        sandbox.start()
        try:
            for name, (answer, test) in CASES.items():
                nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(answer),
                                                     nbformat.v4.new_code_cell(test.format(n=args.calls))])
                plan = Plan(tests={1}, course={}, answer_names=["f"], classes=[], hidden_from={})
                for _ in range(2):
                    sandbox.reset_scratch()
                    execution = run(nb, sandbox, plan)
                    sandbox.after_submission()
                if execution.replies != {0: "ok", 1: "ok"}:
                    raise SystemExit(f"{name}: the notebook failed: {execution.problems}")
                timing = execution.cell_time[1]
                wire_ms = (timing["call_s"] - timing["remote_s"]) / timing["calls"] * 1e3
                print(f"{name:40s} {timing['calls']:6,d} calls  {wire_ms:.3f} ms a call on the wire")
        finally:
            sandbox.close()


if __name__ == "__main__":
    main()
