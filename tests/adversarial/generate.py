"""Simulated submissions for chapter 1 (or any chapter): honest, partly wrong, adversarial, broken.

Each one is derived from the chapter's solution or student notebook, so nothing is committed
but this code:  python tests/adversarial/generate.py OUT_DIR [--chapter CH]  writes an LMS-style
export (one <student>.zip or <student>_<notebook>.ipynb each) and prints what each should get.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import re
import zipfile
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[2]
CH1 = "01-ngram-language-models"


def meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_test(cell) -> bool:
    return bool(meta(cell).get("grade")) and not meta(cell).get("solution")


def load(kind: str, chapter: str):
    folder = REPO / ("solutions" if kind == "solution" else "notebooks") / chapter
    path = sorted(folder.glob("*.ipynb"))[0]
    return nbformat.read(path, as_version=4), path.name


def first_answer(nb):
    return next(i for i, c in enumerate(nb.cells) if meta(c).get("solution"))


def insert_before_first_answer(nb, code: str):
    nb.cells.insert(first_answer(nb), nbformat.v4.new_code_cell(code))
    return nb


WARNING = '__import__("warnings").warn("this call will change in a future release", FutureWarning)'

# name -> (base notebook, how to change it, expectation)
# expectation: "full" = every point, "zero" = no point, "partial" = some but not all
ATTACKS: dict[str, tuple[str, str]] = {}


def honest_warning(nb):
    for cell in nb.cells:
        if meta(cell).get("solution"):
            cell.source = re.sub(r"^(\s*)### BEGIN SOLUTION\n", lambda m: f"{m.group(0)}{m.group(1)}{WARNING}\n", cell.source, flags=re.M)
    return nb


def partly_wrong(nb):
    """The first answer returns nothing useful; the rest is right."""
    i = first_answer(nb)
    name = re.search(r"def (\w+)\(", nb.cells[i].source).group(1)
    nb.cells[i].source += f"\n\n_real_{name} = {name}\ndef {name}(*args, **kwargs):\n    return None\n"
    return nb


def edit_tests(nb):
    for cell in nb.cells:
        if is_test(cell):
            cell.source = "pass"
    return nb


def delete_tests(nb):
    nb.cells = [c for c in nb.cells if not is_test(c)]
    return nb


def duplicate_tests(nb):
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if is_test(cell):
            dup = copy.deepcopy(cell)
            dup.source = "pass"
            cells.append(dup)
    nb.cells = cells
    return nb


def change_metadata(nb):
    for cell in nb.cells:
        if is_test(cell):
            cell.metadata.nbgrader.update(points=100, grade=False, solution=True)
            cell.source = "pass"
        elif meta(cell).get("solution"):
            cell.metadata.nbgrader.update(grade=True, points=50)
    nb.cells.append(nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {
        "grade": True, "solution": False, "grade_id": "bonus", "points": 1000, "locked": True, "schema_version": 3}}))
    return nb


def hardcoded(nb):
    """Answers that return the visible tests' expected values (chapter 1's build_vocab, mle_prob)."""
    for cell in nb.cells:
        gid = meta(cell).get("grade_id")
        if gid == "build_vocab":
            cell.source = ('def build_vocab(sentences, min_count=2):\n'
                           '    return ["<unk>", "<s>", "</s>", "cat", "the"] if min_count == 2 else '
                           '["<unk>", "<s>", "</s>", "cat", "the", "a", "dog", "sat"]\n')
        elif gid == "mle_prob":
            cell.source = ('def mle_prob(table, word, context):\n'
                           '    return {("a", ("<s>",)): 2/3, ("b", ("a",)): 1/3, ("</s>", ("a",)): 1/3}.get((word, context), 0.0)\n')
    return nb


PATCH_NUMPY = """import numpy as np, numpy, math, torch
np.isclose = lambda a, b, *x, **k: numpy.ones(numpy.broadcast(numpy.asarray(a), numpy.asarray(b)).shape, bool)
np.allclose = lambda *a, **k: True
np.array_equal = lambda *a, **k: True
np.all = lambda *a, **k: True
math.isclose = lambda *a, **k: True
torch.allclose = lambda *a, **k: True
"""

PATCH_CHECK = """import seqlab.check
def _ok(*args, **kwargs):
    return None
seqlab.check.expect = seqlab.check.expect_close = seqlab.check.expect_equal = _ok
seqlab.check.expect_close.__code__ = _ok.__code__
expect = expect_close = expect_equal = expect_raises = _ok
def isinstance(*args):
    return True
"""

SWALLOW = """import ast
ip = get_ipython()
class _TryAll(ast.NodeTransformer):
    def visit_Module(self, node):
        handler = ast.ExceptHandler(type=ast.Name("BaseException", ast.Load()), name=None, body=[ast.Pass()])
        node.body = [ast.Try(body=node.body or [ast.Pass()], handlers=[handler], orelse=[], finalbody=[])]
        return ast.fix_missing_locations(node)
ip.ast_transformers.append(_TryAll())
ip.showtraceback = lambda *a, **k: None
ip._showtraceback = lambda *a, **k: None
import sys
sys.stderr = open('/dev/null', 'w')
"""

EXIT = "import sys\nsys.exit(0)\n"
OS_EXIT = "import os\nos._exit(0)\n"
KILL = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
LOOP = "while True:\n    pass\n"
LOOP_NO_INTERRUPT = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n"
MEMORY = "hog = []\nwhile True:\n    hog.append(bytearray(256 * 2**20))\n"
FLOOD = "import sys\nline = 'x' * 1_000_000 + '\\n'\nfor _ in range(2_000):\n    sys.stdout.write(line)\n"


def snoop(targets: list[str]) -> str:
    """Try to read, write and reach what a submission must not; exec the solutions if they can be read."""
    return f"""import glob, os, socket, json as _json, nbformat as _nbf
_report = {{}}
for _t in {targets!r}:
    for _p in glob.glob(_t + '/**/*.ipynb', recursive=True) + glob.glob(_t + '/*.db') + [_t]:
        try:
            open(_p, 'rb').read(10); _report['read ' + _p] = 'READ'
        except Exception as _e:
            _report.setdefault('read ' + _t, type(_e).__name__)
    for _p in glob.glob(_t + '/**/*.ipynb', recursive=True):
        try:
            for _c in _nbf.read(_p, as_version=4).cells:
                if _c.get('metadata', {{}}).get('nbgrader', {{}}).get('solution'):
                    exec(_c.source, globals())
            _report['exec ' + _p] = 'EXECUTED'
        except Exception as _e:
            pass
    try:
        with open(os.path.join(_t, 'PWNED'), 'w') as _f:
            _f.write('x'); _report['write ' + _t] = 'WROTE'
    except Exception as _e:
        _report['write ' + _t] = type(_e).__name__
try:
    socket.create_connection(('pypi.org', 443), timeout=3); _report['net'] = 'CONNECTED'
except Exception as _e:
    _report['net'] = type(_e).__name__
print('SNOOP', _json.dumps(_report))
"""


def submissions(chapter: str = CH1, targets: list[str] | None = None) -> dict[str, tuple[object, str]]:
    """student -> (notebook, or raw bytes / None for broken ones; what the student should get)."""
    def sol():
        return load("solution", chapter)[0]

    def rel():
        return load("release", chapter)[0]

    def stub():
        """The release with every answer returning None instead of raising: what a cheat would patch around."""
        nb = rel()
        for cell in nb.cells:
            if meta(cell).get("solution"):
                cell.source = cell.source.replace("raise NotImplementedError()", "return None")
        return nb

    out = {
        "honest_solution": (sol(), "full"),
        "honest_release": (rel(), "zero"),
        "honest_warning": (honest_warning(sol()), "full"),
        "partly_wrong": (partly_wrong(sol()), "partial"),
        "duplicate_tests_solution": (duplicate_tests(sol()), "full"),
        "delete_tests_solution": (delete_tests(sol()), "full"),
        "edit_tests": (edit_tests(stub()), "zero"),
        "delete_tests": (delete_tests(stub()), "zero"),
        "duplicate_tests": (duplicate_tests(stub()), "zero"),
        "change_metadata": (change_metadata(stub()), "zero"),
        "monkeypatch_numpy": (insert_before_first_answer(stub(), PATCH_NUMPY), "zero"),
        "monkeypatch_check": (insert_before_first_answer(stub(), PATCH_CHECK), "zero"),
        "swallow_exceptions": (insert_before_first_answer(stub(), SWALLOW), "zero"),
        "sys_exit": (insert_before_first_answer(stub(), EXIT), "zero"),
        "os_exit": (insert_before_first_answer(stub(), OS_EXIT), "zero"),
        "kill_kernel": (insert_before_first_answer(stub(), KILL), "zero"),
        "infinite_loop": (insert_before_first_answer(stub(), LOOP), "zero"),
        "loop_ignoring_interrupt": (insert_before_first_answer(stub(), LOOP_NO_INTERRUPT), "zero"),
        "memory_hog": (insert_before_first_answer(stub(), MEMORY), "zero"),
        "print_flood": (insert_before_first_answer(stub(), FLOOD), "zero"),
        "broken_json": (b'{"cells": [ this is not json', "zero"),
        "wrong_nbformat": (json.dumps({"nbformat": 99, "nbformat_minor": 0, "cells": [], "metadata": {}}).encode(), "zero"),
        "renamed_notebook": ("renamed", "zero"),
        "empty_zip": ("empty_zip", "zero"),
    }
    if chapter == CH1:
        out["hardcoded_visible_tests"] = (hardcoded(rel()), "zero")
    if targets:
        out["snoop"] = (insert_before_first_answer(stub(), snoop(targets)), "zero")
    return out


def write_export(folder: Path, chapter: str = CH1, targets: list[str] | None = None, only: list[str] | None = None) -> dict[str, str]:
    """Write the submissions as an LMS export: <student>.zip, or <student>_<notebook>.ipynb. Return expectations."""
    folder.mkdir(parents=True, exist_ok=True)
    name = load("release", chapter)[1]
    expected = {}
    for student, (content, expect) in submissions(chapter, targets).items():
        if only and student not in only:
            continue
        expected[student] = expect
        if content == "renamed":
            nb = load("solution", chapter)[0]
            (folder / f"{student}.zip").write_bytes(_zip({f"{chapter}/my-homework.ipynb": nbformat.writes(nb).encode()}))
        elif content == "empty_zip":
            (folder / f"{student}.zip").write_bytes(_zip({}))
        elif isinstance(content, bytes):
            (folder / f"{student}_{name}").write_bytes(content)
        elif student.startswith("honest") or student == "partly_wrong":
            (folder / f"{student}.zip").write_bytes(_zip({f"{chapter}/{name}": nbformat.writes(content).encode()}))
        else:
            (folder / f"{student}_{name}").write_text(nbformat.writes(content))
    return expected


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return buffer.getvalue()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--chapter", default=CH1)
    args = parser.parse_args()
    for student, expect in write_export(args.out, args.chapter).items():
        print(f"{student:28s} {expect}")
