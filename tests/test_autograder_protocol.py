"""The grader's protocol between its processes, against a student's kernel that answers what it likes.

Three classes of attack, each at the depth where it is stopped:

1. names: the trusted runner binds of the student kernel's answer to "bind" only the names it asked for,
   never over what it holds itself or a builtin, and a handle only for an answer's name; a reference that
   comes from the student's kernel resolves only to what the trusted side handed out (runner.py, wire.py);
2. frames: a frame nested too deeply or too large is the sender's error, never a RecursionError or a crash
   in the reader (wire.parse_json; executor.py, job.py);
3. LMS exports: entries that become one student id are refused with a reason that names them (grade.py).

The unit tests (a fuzzer of the trusted side's reply handling among them) need no sandbox; the rest run
small notebooks through the executor with its two runners, as tests/test_autograder_timeouts.py does.
"""

from __future__ import annotations

import base64
import builtins
import dataclasses
import csv
import json
import os
import random
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest

from course import REPO, SOLUTIONS

sys.path.insert(0, str(REPO / "autograder"))
sys.path.insert(0, str(REPO / "autograder" / "inkernel"))
sys.path.insert(0, str(REPO / "tests"))
from adversarial.generate import DEEP_ON_CONTROL, _zip, bind_extra_names  # noqa: E402
from adversarial.generate import DEEP_ON_PEER as DEEP_ON_PEER_CALL  # noqa: E402
from executor import Plan, run  # noqa: E402
from runner import Runner, screen_bound  # noqa: E402
from sandbox import Limits, Sandbox, bubblewrap  # noqa: E402
import wire  # noqa: E402
from wire import MAX_DEPTH, MAX_JSON_DEPTH, Channel, Codec, Remote, WireError, json_shape, parse_json  # noqa: E402

CH1 = "01-ngram-language-models"
NB1 = f"{CH1}.ipynb"


# -- helpers -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    worker = Sandbox(tmp_path_factory.mktemp("worker"), Limits(cell_timeout=20), sandboxed=bubblewrap() is not None)
    worker.start()
    yield worker
    worker.close()


def execute(sandbox, cells: list[str], tests=(), answer_names=(), definitions: str | None = None):
    """Run code cells through the grader's executor: ``tests`` in the trusted runner (after ``definitions``)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    course = {min(tests): [definitions]} if definitions and tests else {}
    plan = Plan(tests=set(tests), course=course, answer_names=list(answer_names), classes=[], hidden_from={})
    sandbox.reset_scratch()
    execution = run(nb, sandbox, plan)
    sandbox.after_submission()
    return execution, nb


def texts(nb, index: int) -> str:
    return "".join(str(o.get("text", "")) + str(o.get("ename", "")) + ": " + str(o.get("evalue", ""))
                   for o in nb.cells[index].outputs)


def contains_remote(value, depth: int = 0) -> bool:
    """An independent look for a handle anywhere inside a decoded value (the test's own, not wire.only_data)."""
    assert depth < 400
    if isinstance(value, Remote):
        return True
    if isinstance(value, dict):
        return any(contains_remote(k, depth + 1) or contains_remote(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(contains_remote(x, depth + 1) for x in value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return any(contains_remote(x, depth + 1) for x in value.flat)
    if isinstance(value, slice):
        return any(contains_remote(x, depth + 1) for x in (value.start, value.stop, value.step))
    if isinstance(value, Box):
        return any(contains_remote(x, depth + 1) for x in vars(value).values())
    return False


# -- 1. names: what the trusted runner takes of the student kernel's answer ------------------------------------

class Box:
    """A course class (as if from a `definitions` cell): it travels by its fields."""


class ScriptedPeer:
    """The student's kernel, reduced to its answer to "bind": a prepared node, decoded as Peer.request decodes it."""

    def __init__(self, codec: Codec):
        self.codec, self.broken, self.node, self.asked = codec, None, None, None

    def request(self, op: str, **fields):
        assert op == "bind"
        self.asked = set(fields["names"])
        return self.codec.decode(self.node)


def trusted_runner(user_ns: dict, answer_names: list[str]) -> Runner:
    """A trusted Runner without a shell, sockets or sandbox: its real bind_names, may_bind and
    resolve_name, with the student's kernel replaced by a ScriptedPeer."""
    runner = Runner.__new__(Runner)
    runner.side, runner.config, runner.answer_names, runner.bound = "t", {"classes": []}, list(answer_names), {}
    runner.shell = type("Shell", (), {"user_ns": user_ns, "transform_cell": staticmethod(lambda code: code)})()
    runner.codec = Codec("t", {"course:Box": Box})
    runner.codec.names = runner.resolve_name
    runner.peer = ScriptedPeer(runner.codec)
    runner.codec.peer = runner.peer
    return runner


def expect_same(got, want):
    assert got == want


def check(value):
    assert value


TRUSTED = {"expect_same": expect_same, "check": check, "np": np, "expected": 42, "secret_table": {"a": 1},
           "__builtins__": builtins}
ANSWERS = ["answer", "Model", "rate"]
GIVEN = ["data", "threshold", "words"]  # a given cell's names: the student's kernel holds them, nobody asks for them


def handle(name: str = "answer") -> dict:
    return {"$": "name", "side": "s", "v": name}


def test_the_trusted_runner_binds_only_names_it_asked_for():
    runner = trusted_runner(dict(TRUSTED), ANSWERS)
    before = dict(runner.shell.user_ns)
    # an honest answer: handles for the answers (or data, for an answer that is a value)
    runner.peer.node = {"$": "dict", "v": [["answer", handle()], ["Model", handle("Model")], ["rate", 0.5]]}
    assert runner.bind_names() == []
    assert runner.peer.asked == set(ANSWERS), "only the answers are asked for, never a given cell's data"
    assert isinstance(runner.shell.user_ns["answer"], Remote) and runner.shell.user_ns["rate"] == 0.5
    assert all(runner.shell.user_ns[k] is v for k, v in before.items())
    # names nobody asked for, over the course's helpers: the whole answer is refused, nothing is bound
    runner.peer.node = {"$": "dict", "v": [["answer", handle()], ["expect_same", handle("_yes")], ["np", handle()]]}
    problems = runner.bind_names()
    assert problems and "not asked for" in problems[0] and "'expect_same'" in problems[0] and "'np'" in problems[0]
    assert runner.shell.user_ns["expect_same"] is expect_same and runner.shell.user_ns["np"] is np
    # a given cell's names, as data or as handles: not asked for either, so the whole answer is refused
    for value in (handle("data"), {"$": "list", "v": [1, 2]}):
        runner = trusted_runner(dict(TRUSTED), ANSWERS)
        runner.peer.node = {"$": "dict", "v": [["answer", handle()], ["data", value]]}
        problems = runner.bind_names()
        assert problems and "not asked for" in problems[0] and "'data'" in problems[0], problems
        assert "data" not in runner.shell.user_ns and "answer" not in runner.shell.user_ns
    assert not screen_bound({"len": 1}, {"len"}, runner.may_bind, runner.may_be_handle)[0]


def test_an_answer_that_is_not_a_dict_of_names_is_the_students_error():
    runner = trusted_runner(dict(TRUSTED), ANSWERS)
    for node, words in [({"$": "list", "v": [1]}, "not a dict"), ("answer", "not a dict"), (None, "not a dict"),
                        (handle(), "not a dict"), ({"$": "dict", "v": [[1, 2]]}, "not names"),
                        ({"$": "dict", "v": [["a b", 2]]}, "not names"),
                        ({"$": "dict", "v": [[{"$": "tuple", "v": ["answer"]}, 2]]}, "not names"),
                        ({"$": "bogus"}, "could not be used"), ({"$": "dict", "v": "x"}, "could not be used")]:
        runner.peer.node = node
        problems = runner.bind_names()
        assert problems and words in problems[0], (node, problems)
    assert runner.shell.user_ns == TRUSTED


def test_a_reference_to_a_trusted_global_by_name_is_refused():
    """The trusted side hands out no names: a {"$": "name", "side": "t"} from the student names one of the test's
    globals (an expected value), and must never decode to it, in an answer to "bind" or anywhere else."""
    runner = trusted_runner(dict(TRUSTED), ANSWERS)
    for name in ("expected", "secret_table", "expect_same", "np", "__builtins__"):
        with pytest.raises(WireError, match="name of the test kernel"):
            runner.codec.decode({"$": "name", "side": "t", "v": name})
        with pytest.raises(WireError):
            runner.codec.decode({"$": "list", "v": [1, {"$": "name", "side": "t", "v": name}]})
        runner.peer.node = {"$": "dict", "v": [["rate", {"$": "name", "side": "t", "v": name}]]}
        problems = runner.bind_names()
        assert problems and "name of the test kernel" in problems[0]
    with pytest.raises(WireError, match="does not exist"):  # a trusted object it was never handed
        runner.codec.decode({"$": "ref", "side": "t", "id": 1})
    handed = runner.codec.keep(expect_same)
    assert runner.codec.decode(handed) is expect_same  # what the trusted side handed out does come back
    assert runner.shell.user_ns == TRUSTED


def test_an_answer_bound_to_the_test_kernels_own_object_is_refused():
    """A handle the test kernel lent the student's code (its own function or model, passed in an earlier call) comes
    back as {"$": "ref", "side": "t"} and decodes to the test's object itself: bound to an answer name, a test would
    call the test's own code in the student's name. Answers are the student's handles or data (issue 39)."""
    runner = trusted_runner(dict(TRUSTED), ANSWERS)
    lent = runner.codec.keep(expect_same)  # what a test handed the student's code earlier
    box = {"$": "obj", "cls": "course:Box", "v": [["f", lent]]}
    for value in (lent, {"$": "list", "v": [handle(), lent]}, {"$": "dict", "v": [["f", lent]]}, box,
                  {"$": "tuple", "v": [1, {"$": "list", "v": [lent]}]}):
        runner.peer.node = {"$": "dict", "v": [["answer", value], ["rate", 0.5]]}
        problems = runner.bind_names()
        assert problems and "test kernel's own objects" in problems[0] and "'answer'" in problems[0], (value, problems)
        assert "answer" not in runner.shell.user_ns and "rate" not in runner.shell.user_ns
    # the student's own handles, alone or in data, and data are still answers
    runner.peer.node = {"$": "dict", "v": [["answer", {"$": "list", "v": [handle(), 1.5]}], ["Model", handle("Model")],
                                           ["rate", {"$": "obj", "cls": "course:Box", "v": [["x", 2]]}]]}
    assert runner.bind_names() == []
    assert isinstance(runner.shell.user_ns["answer"][0], Remote) and isinstance(runner.shell.user_ns["Model"], Remote)


def holds(value, obj, depth: int = 0) -> bool:
    """Whether ``obj`` itself lies anywhere inside a decoded value."""
    if value is obj:
        return True
    if depth > 400:
        return False
    if isinstance(value, dict):
        return any(holds(k, obj, depth + 1) or holds(v, obj, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(holds(x, obj, depth + 1) for x in value)
    if isinstance(value, Box):
        return any(holds(x, obj, depth + 1) for x in vars(value).values())
    return False


# What a fuzzed answer is made of
KEYS_ASKED = list(ANSWERS)
KEYS_TRUSTED = ["expect_same", "check", "np", "expected", "secret_table", "__builtins__"]
KEYS_BUILTIN = ["print", "len", "open", "eval", "__import__", "isinstance", "True", "__build_class__"]
KEYS_ODD = ["", "a b", "1x", "x" * 5000, "ä", "__class__", "answer\n", "import"]


def random_leaf(rng: random.Random):
    if rng.random() < 0.08:  # what no honest kernel sends: each an error when decoded
        return rng.choice([{"$": "nd", "dtype": "<f8", "shape": [3], "v": "AAAA"},
                           {"$": "nd", "dtype": "O", "shape": [1], "v": ""},
                           {"$": "ref", "side": "t", "id": rng.randint(0, 9)}, {"$": "mirror", "id": 3},
                           {"$": "name", "side": "t", "v": rng.choice(KEYS_TRUSTED + KEYS_ASKED)},
                           {"$": "bogus"}, {"$": 7}, ["raw", "list"], {"no": "tag"}, {"$": "bytes", "v": "!"}])
    return rng.choice([None, True, 0, -1, 2**70, 1.5, float("nan"), "s", "x" * rng.randint(0, 3000),
                       {"$": "bytes", "v": base64.b64encode(b"\0\1").decode()}, {"$": "complex", "v": [1, 2]},
                       {"$": "nd", "dtype": "<f8", "shape": [2], "v": base64.b64encode(np.ones(2).tobytes()).decode()},
                       {"$": "npdtype", "v": "<i4"}, {"$": "range", "v": [0, 3, 1]}, {"$": "str", "v": "t"},
                       handle(), handle(rng.choice(KEYS_ASKED)), {"$": "ref", "side": "s", "id": rng.randint(0, 9)}])


def random_value(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth > 4 or roll < 0.45:
        return random_leaf(rng)
    items = [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if roll < 0.6:
        return {"$": rng.choice(["list", "tuple", "iter", "set"]), "v": items}
    if roll < 0.7:
        return {"$": "ndobj", "shape": [len(items)], "v": items}
    if roll < 0.8:
        return {"$": "slice", "v": (items + [None, None, None])[:3]}
    if roll < 0.9:
        return {"$": "obj", "cls": "course:Box" if rng.random() < 0.9 else "course:Nope",
                "v": [[f"f{i}", x] for i, x in enumerate(items)]}
    return {"$": "dict", "kind": rng.choice([None, "Counter", "defaultdict", "OrderedDict"]), "factory": "list",
            "v": [[random_leaf(rng), x] for x in items]}


def deep(levels: int) -> dict:
    node: object = 1
    for _ in range(levels):
        node = {"$": "list", "v": [node]}
    return node


def random_answer(rng: random.Random) -> tuple[object, bool]:
    """A node for the student kernel's answer to "bind", and whether it holds a key that must not be taken."""
    shape = rng.random()
    if shape < 0.08:  # not a dict at all, or a malformed one
        return rng.choice([{"$": "list", "v": [random_value(rng)]}, random_leaf(rng), {"$": "dict", "v": [[1]]},
                           {"$": "dict", "v": {"a": 1}}, {"$": "dict"}, deep(rng.choice([MAX_DEPTH + 5, 500])), [],
                           "dict"]), True
    if shape < 0.10:  # huge: many names asked for and not
        names = [f"n{i}" for i in range(rng.choice([1000, 20_000]))] + KEYS_ASKED
        return {"$": "dict", "v": [[n, 1] for n in names]}, True
    pairs = []
    for _ in range(rng.randint(0, 6)):
        key = rng.choice(KEYS_ASKED)
        if key in ANSWERS and rng.random() < 0.4:
            value = handle(key)  # what an honest kernel sends for an answer
        else:
            value = deep(rng.choice([3, MAX_DEPTH + 3])) if rng.random() < 0.03 else random_value(rng)
        pairs.append([key, value])
    bad = rng.random() < 0.3
    if bad:  # a key it was not asked for: the test's own names, builtins, odd text, keys that are no text
        key = rng.choice(KEYS_TRUSTED + KEYS_BUILTIN + KEYS_ODD + GIVEN) if rng.random() < 0.7 else rng.choice(
            [1, None, 2.5, {"$": "tuple", "v": ["answer"]}, {"$": "bytes", "v": ""}, {"$": "frozenset", "v": []}])
        pairs.insert(rng.randint(0, len(pairs)), [key, rng.choice([handle("_yes"), random_value(rng)])])
    return {"$": "dict", "kind": rng.choice([None, None, "Counter", "OrderedDict"]), "v": pairs}, bad


def test_fuzz_the_trusted_runners_answer_handling():
    """Thousands of random and adversarial answers to "bind": the trusted side never raises, never binds a name
    it did not ask for, a builtin, or over what it holds, and never takes a handle for a name that is no answer."""
    rng = random.Random(20240611)
    counts = {"answers": 0, "refused": 0, "bound": 0, "handles": 0}
    began = time.perf_counter()
    runner = None
    for round_ in range(3000):
        if round_ % 40 == 0:  # a fresh test kernel now and then; in between, earlier bindings stay (may_bind)
            runner = trusted_runner(dict(TRUSTED), ANSWERS)
            runner.codec.keep(check)  # lent to the student's code: {"$": "ref", "side": "t", "id": 1} decodes to it
        before = dict(runner.shell.user_ns)
        runner.peer.node, bad = random_answer(rng)
        problems = runner.bind_names()  # never raises
        counts["answers"] += 1
        assert isinstance(problems, list) and all(isinstance(p, str) and len(p) < 1000 for p in problems)
        after = runner.shell.user_ns
        changed = {k for k in after if k not in before or after[k] is not before[k]}
        assert not set(before) - set(after), "a name was removed"
        assert changed <= runner.peer.asked, changed - runner.peer.asked
        assert changed <= set(KEYS_ASKED)
        assert all(after[k] is v for k, v in TRUSTED.items()), "a trusted global was replaced"
        assert not changed & set(dir(builtins))
        for name in changed - set(ANSWERS):
            assert not contains_remote(after[name]), f"a handle was bound for {name!r}, which is no answer"
        for name in changed:
            assert not holds(after[name], check), f"{name!r} was bound to the test kernel's own object"
        counts["handles"] += sum(isinstance(after[n], Remote) for n in changed)
        if bad:
            assert problems and not changed, (runner.peer.node if len(str(runner.peer.node)) < 2000 else "", problems)
        counts["refused"] += bool(problems)
        counts["bound"] += len(changed)
    seconds = time.perf_counter() - began
    assert counts["refused"] > 1000 and counts["bound"] > 500 and counts["handles"] > 200, counts
    print(f"fuzz: {counts} in {seconds:.1f} s")


# the student's kernel, patched from inside: what a submission can do to its own runner
FORGE_EXTRA_NAMES = bind_extra_names(("expect_same", "np"))  # the course's helper and numpy, replaced by a yes

FORGE_TRUSTED_NAME = """import gc
_codec = next(o for o in gc.get_objects() if type(o).__name__ == 'Codec')
class _Expected:
    pass
def _encode(value, depth=0, *, as_argument=False, _original=_codec.encode):
    if isinstance(value, _Expected):  # "the test's own expected value", by name
        return {'$': 'name', 'side': 't', 'v': 'expected'}
    return _original(value, depth, as_argument=as_argument)
_codec.encode = _encode
def answer():
    return _Expected()
"""

DEFINITIONS = ("import numpy as np\nexpected = 42\n"
               "def expect_same(got, want):\n    assert np.array_equal(got, want), f'{got} != {want}'")


@pytest.mark.slow  # (a sandbox of its own: two fork servers)
def test_names_a_forged_answer_adds_never_replace_the_courses_helpers(sandbox):
    honest, _ = execute(sandbox, ["def answer():\n    return 42", "expect_same(answer(), expected)"], tests={1},
                        answer_names=["answer"], definitions=DEFINITIONS)
    assert honest.replies == {0: "ok", 1: "ok"} and not honest.problems, honest.problems
    wrong = ["def answer():\n    return 41", "expect_same(answer(), 42)"]
    execution, nb = execute(sandbox, [FORGE_EXTRA_NAMES] + wrong, tests={2}, answer_names=["answer"],
                            definitions=DEFINITIONS)
    assert execution.replies[0] == "ok" and execution.replies[2] == "error", texts(nb, 2)
    # (the definitions cell itself is refused first: the forged answer to its request names `expect_same` too)
    assert "not asked for" in texts(nb, 2) and "'np'" in texts(nb, 2), texts(nb, 2)
    assert [p for p in execution.problems if "not asked for" in p and "'expect_same'" in p], execution.problems
    assert any("test in cell #2 was not run" in p for p in execution.problems), execution.problems
    assert not [p for p in execution.problems if "definitions before cell #2 failed" in p], "the course is not to blame"


@pytest.mark.slow
def test_a_student_value_that_names_a_trusted_global_never_becomes_it(sandbox):
    # returned by an answer: the test's `expected` must not come back as the student's result
    execution, nb = execute(sandbox, [FORGE_TRUSTED_NAME, "assert answer() == expected"], tests={1},
                            answer_names=["answer"], definitions=DEFINITIONS)
    assert execution.replies == {0: "ok", 1: "error"}, texts(nb, 1)
    assert "name of the test kernel" in texts(nb, 1)
    # bound by name before the test: the answer to "bind" is refused and the test is not run
    forged = FORGE_TRUSTED_NAME + "rate = _Expected()"
    execution, nb = execute(sandbox, [forged, "assert rate == expected"], tests={1}, answer_names=["answer", "rate"],
                            definitions=DEFINITIONS)
    assert execution.replies == {0: "ok", 1: "error"}, texts(nb, 1)
    assert "name of the test kernel" in texts(nb, 1) and "was not run" in texts(nb, 1)
    assert any("cell #1 was not run" in p for p in execution.problems), execution.problems


@pytest.mark.slow
def test_a_given_cells_names_never_reach_a_test(sandbox):
    """Only answers come from the student's kernel: a given cell's function or data (which the student may have
    changed) is never fetched, so a test that leans on it fails with a NameError (the course's fault, which the
    course's own tests find) instead of taking the expected value from the student."""
    cells = ["def reference():\n    return 41", "def answer():\n    return 41", "assert answer() == reference()",
             "words = ['a', 'b']", "assert answer() == 41 and words == ['a', 'b']", "assert answer() == 41"]
    execution, nb = execute(sandbox, cells, tests={2, 4, 5}, answer_names=["answer"])
    assert execution.replies[2] == "error" and "NameError" in texts(nb, 2) and "reference" in texts(nb, 2)
    assert execution.replies[4] == "error" and "NameError" in texts(nb, 4) and "words" in texts(nb, 4)
    assert execution.replies[5] == "ok", texts(nb, 5)
    assert not execution.problems, execution.problems


@pytest.mark.slow
def test_the_test_kernel_reports_an_error_the_students_code_raised(sandbox):
    """Feedback shows such an error's type only once hidden tests have run (its message may carry their inputs):
    the test kernel says which failures came from the student's code, also when a test wrapped the error."""
    answer = "def answer(x):\n    raise ValueError(f'I saw {x!r}')"
    tests = {
        "the student's error itself": "answer(7)",
        "wrapped by the test (raise ... from)": "try:\n    answer(7)\nexcept ValueError as e:\n    raise AssertionError('answer failed') from e",
        "raised while handling it": "try:\n    answer(7)\nexcept ValueError:\n    assert False, 'answer failed'",
    }
    for why, test in tests.items():
        execution, nb = execute(sandbox, [answer, test], tests={1}, answer_names=["answer"], definitions=DEFINITIONS)
        assert execution.replies[1] == "error" and execution.student_errors == {1}, (why, texts(nb, 1))
    for test in ("assert answer.__name__ == 'other'", "expect_same(len('abc'), 4)"):  # the test's own failures
        execution, nb = execute(sandbox, [answer, test], tests={1}, answer_names=["answer"], definitions=DEFINITIONS)
        assert execution.replies[1] == "error" and not execution.student_errors, (test, texts(nb, 1))


LENT_DEFINITIONS = """import torch
class Reference(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 1)
        self.scale = 3
    def forward(self, x):
        return self.linear(x)
    def score(self, x):
        return self.scale * x
reference = Reference()
before = {k: v.clone() for k, v in reference.state_dict().items()}
"""
USE_LENT = """import torch
def use(ref, how):
    if how == "course":
        return ref.score(2) + ref.scale + float(ref(torch.ones(2)).shape[0])
    if how == "load_state_dict":
        return ref.load_state_dict({"linear.weight": torch.zeros(1, 2), "linear.bias": torch.zeros(1)})
    if how == "register_forward_hook":
        return ref.register_forward_hook(lambda module, inputs, output: output * 0)
    if how == "train":
        return ref.train(False)
    if how == "submodule":
        ref.linear.weight.data.zero_()
    if how == "method_by_getattr":
        method = getattr(ref, "zero_grad")
        return method()
"""
LENT_ATTACKS = ["load_state_dict", "register_forward_hook", "train", "submodule", "method_by_getattr"]


@pytest.mark.slow
def test_a_tests_object_lends_only_what_the_course_defines(sandbox):
    """A test passes its own model to the student's code: the course's methods and attributes work, a library's
    methods on it (through which the student could change what the test compares with) are refused."""
    cells = [USE_LENT, "assert use(reference, 'course') == 10.0"]
    cells += [f"use(reference, {attack!r})" for attack in LENT_ATTACKS]
    cells.append("assert all(torch.equal(v, before[k]) for k, v in reference.state_dict().items())\n"
                 "assert reference.training and not reference._forward_hooks")
    tests = set(range(1, len(cells)))
    execution, nb = execute(sandbox, cells, tests=tests, answer_names=["use"], definitions=LENT_DEFINITIONS)
    assert execution.replies[1] == "ok", texts(nb, 1)
    for index, attack in enumerate(LENT_ATTACKS, start=2):
        assert execution.replies[index] == "error" and "PermissionError" in texts(nb, index), (attack, texts(nb, index))
        assert "only what the course defines" in texts(nb, index), (attack, texts(nb, index))
    assert execution.replies[len(cells) - 1] == "ok", texts(nb, len(cells) - 1)


@pytest.mark.slow
def test_a_gradient_of_a_weighted_output_is_taken_in_the_students_kernel(sandbox):
    """value_and_grad(fn, ..., weights=, output=) under the grader: the vector-Jacobian product of one output of a
    student's function, computed where its autograd graph is, equal to the same call in one process; the NaN that
    an additive mask leaves in the gradient of a fully masked row (its forward pass has none) comes back, so a
    test can see it."""
    student = ("import torch\n"
               "def scaled(x, mask):\n"
               "    scores = x + torch.where(mask, 0.0, float('-inf'))  # an additive mask: a fully masked row\n"
               "    weights = torch.softmax(scores, dim=-1)\n"
               "    return x * 3.0, torch.where(mask, weights, torch.zeros_like(weights))  # no NaN forward\n")
    test = ("import torch\nfrom seqlab.grading import value_and_grad\n"
            "x = torch.tensor([[1.0, 2.0], [0.5, -1.0]])\nw = torch.tensor([[1.0, -1.0], [2.0, 0.5]])\n"
            "mask = torch.tensor([[True, True], [False, False]])\n"
            "value, grad = value_and_grad(scaled, x, mask, weights=w, output=0)\n"
            "assert abs(value.item() - (3 * x * w).sum().item()) < 1e-6 and torch.equal(grad, 3 * w), (value, grad)\n"
            "value, grad = value_and_grad(scaled, x, mask, weights=w, output=1)\n"
            "assert not torch.isnan(value) and torch.isnan(grad[1]).all() and not torch.isnan(grad[0]).any(), grad\n"
            "assert torch.equal(x, torch.tensor([[1.0, 2.0], [0.5, -1.0]]))")
    execution, nb = execute(sandbox, [student, test], tests={1}, answer_names=["scaled"])
    assert execution.replies[1] == "ok", texts(nb, 1)


@pytest.mark.slow
def test_an_argument_changed_in_place_comes_back_only_as_data(sandbox):
    """The student's function changes the test's own list or dict in place: data comes back into it; a handle to
    the student's code (which a later comparison would call) fails the test and leaves the test's object alone."""
    cells = ["def change(box, how):\n    if how == 'data':\n        box.append(3)\n"
             "    elif how == 'function in a list':\n        box.append(lambda: 1)\n"
             "    elif how == 'object in a dict':\n        box['f'] = object()\n",
             "items = [1, 2]\nchange(items, 'data')\nassert items == [1, 2, 3]",
             "items = [1]\ntry:\n    change(items, 'function in a list')\nfinally:\n    assert items == [1]",
             "table = {}\ntry:\n    change(table, 'object in a dict')\nfinally:\n    assert table == {}"]
    execution, nb = execute(sandbox, cells, tests={1, 2, 3}, answer_names=["change"])
    assert execution.replies[1] == "ok", texts(nb, 1)
    for index in (2, 3):
        assert execution.replies[index] == "error" and "must hold data" in texts(nb, index), texts(nb, index)


def test_a_course_object_written_back_keeps_its_own_fields():
    from wire import write_back

    class Counts:
        def __init__(self, seen):
            self.seen = seen

    mine, theirs = Counts({"a": 1}), Counts({"a": 2})
    theirs.extra = print  # a field the test's object does not have: never added
    write_back(mine, theirs)
    assert vars(mine) == {"seen": {"a": 2}}
    del theirs.seen  # a field the other side dropped: the test's object keeps it
    write_back(mine, theirs)
    assert vars(mine) == {"seen": {"a": 2}}


def arrays_and_tensors() -> list:
    import torch

    grid = np.arange(12, dtype=np.int32).reshape(3, 4)
    return [np.array(2), np.array(2.5, dtype=np.float32), np.array(True), np.zeros((0, 3)), np.zeros((2, 0, 1)),
            grid.T, grid[:, ::2], np.float64(1.5) * np.ones((1, 1, 1)), torch.tensor(3.0), torch.tensor([[1, 2]]).T,
            torch.zeros(0, 4, dtype=torch.float64), torch.tensor(1.0, dtype=torch.bfloat16)]


@pytest.mark.parametrize("value", arrays_and_tensors(), ids=lambda v: f"{type(v).__name__}{tuple(v.shape)}-{v.dtype}")
def test_an_array_or_tensor_arrives_with_its_own_shape_dtype_and_values(value):
    """What a test passes the student's code arrives as it was: a 0-d array once arrived as shape (1,), and a
    correct embedding_lookup(E, np.array(2)) returned (1, D) instead of (D,)."""
    import torch
    from wire import Codec

    sent = Codec("s").decode(json.loads(json.dumps(Codec("t").encode(value))))
    assert type(sent) is type(value) and sent.dtype == value.dtype and tuple(sent.shape) == tuple(value.shape)
    if isinstance(value, torch.Tensor):
        assert torch.equal(sent, value)
    else:
        assert np.array_equal(sent, value)


# -- 2. frames: depth and size limits, in every reader -----------------------------------------------------

def test_json_too_deep_or_too_large_is_a_wire_error_never_a_recursion_error():
    for levels in (MAX_JSON_DEPTH + 1, 5_000, 1_000_000):
        for text in (b"[" * levels + b"]" * levels, b'{"a":' * levels + b"1" + b"}" * levels, b"[" * levels):
            with pytest.raises(WireError, match="nested more than"):
                parse_json(text)
    assert parse_json(b'{"a":' * MAX_JSON_DEPTH + b"1" + b"}" * MAX_JSON_DEPTH) is not None
    # brackets inside strings, escaped quotes and backslashes are not structure
    tricky = json.dumps({"k": "[" * 5000, "q": '\\"[[[' * 300, "u": "\u00e9{" * 500}).encode()
    assert json_shape(tricky)[0] == 1 and parse_json(tricky)["k"] == "[" * 5000
    with pytest.raises(WireError, match="values"):
        parse_json(b"[" + b",".join([b"0"] * 3000) + b"]", max_values=2000)
    assert len(parse_json(b"[" + b",".join([b"0"] * 1000) + b"]", max_values=2000)) == 1000
    with pytest.raises(WireError, match="not UTF-8"):  # json.loads would guess UTF-16, where the scan is blind
        parse_json('["\\"[[["]'.encode("utf-16"))
    rng = random.Random(7)
    for _ in range(2000):  # random bytes: a WireError or a value, nothing else
        data = bytes(rng.choice(b'[]{}",:\\01a ') for _ in range(rng.randint(0, 600)))
        try:
            parse_json(data, max_depth=50, max_values=200)
        except WireError:
            pass


def test_a_deep_or_huge_frame_on_a_socket_is_refused_by_the_channel():
    ours, theirs = socket.socketpair()
    try:
        channel = Channel(ours, max_frame=2**20, max_values=10_000)
        for frame in (b"[" * 50_000 + b"]" * 50_000, b"[" + b"0," * 20_000 + b"0]"):  # (within a socket's buffer)
            theirs.sendall(struct.pack(">Q", len(frame)) + frame)
            with pytest.raises(WireError):
                channel.recv(time.monotonic() + 5)
        theirs.sendall(struct.pack(">Q", 2**40))
        with pytest.raises(WireError, match="larger than the limit"):
            channel.recv(time.monotonic() + 5)
    finally:
        ours.close()
        theirs.close()


def test_a_deeply_nested_notebook_file_is_invalid_not_a_crash(tmp_path):
    import job

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    deep_metadata = '"metadata": {"deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    text = nbformat.writes(nb).replace('"metadata": {}', deep_metadata, 1)
    (tmp_path / NB1).write_text(text)
    notebook, reason = job.read_student(tmp_path / NB1)
    assert notebook is None and "nested more than" in reason, reason
    (tmp_path / NB1).write_text(nbformat.writes(nb))
    assert job.read_student(tmp_path / NB1)[0] is not None


def shape_by_hand(data: bytes) -> tuple[int, int]:
    """json_shape's answer, one character at a time (the test's own reading of JSON strings and escapes)."""
    depth = deepest = values = 0
    inside = escaped = False
    for byte in data:
        char = chr(byte)
        if inside:
            inside, escaped = (escaped or char != '"'), (not escaped and char == "\\")
            continue
        if char == '"':
            inside = True
        elif char in "[{":
            depth, values = depth + 1, values + 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
        elif char == ",":
            values += 1
    return deepest, values


def test_the_json_scan_agrees_with_a_reading_by_hand_across_its_chunks(monkeypatch):
    monkeypatch.setattr(wire, "_SCAN_CHUNK", 7)  # strings, escapes and brackets fall across chunk boundaries
    rng = random.Random(11)
    for _ in range(3000):
        value = random_json(rng, 4)
        data = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode()
        assert json_shape(data) == shape_by_hand(data), data


def random_json(rng: random.Random, depth: int):
    pick = rng.randint(0, 5 if depth else 2)
    if pick == 0:
        return "".join(rng.choice('[]{},:"\\ aé\n') for _ in range(rng.randint(0, 12)))
    if pick in (1, 2):
        return rng.choice([0, -1.5, True, None, "x"])
    if pick in (3, 4):
        return [random_json(rng, depth - 1) for _ in range(rng.randint(0, 4))]
    return {random_json(rng, 0) if rng.random() < 0.3 else "k": random_json(rng, depth - 1) for _ in range(rng.randint(0, 3))}


READ_NOTEBOOK = """import json, resource, sys, time
sys.path[:0] = [sys.argv[1] + '/autograder', sys.argv[1] + '/autograder/inkernel']
import job
from pathlib import Path
before = int(open('/proc/self/statm').read().split()[1]) * resource.getpagesize() / 1024  # resident now, KiB
began = time.process_time()
nb, why = job.read_student(Path(sys.argv[2]))
# VmHWM is this process's own peak since exec; ru_maxrss would also count the forking pytest worker's size
peak = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:'))  # KiB
print(json.dumps({'why': why, 'cells': nb and len(nb.cells), 'seconds': time.process_time() - began,
                  'extra_mib': (peak - before) / 1024}))
"""


def bloated(kind: str) -> str:
    """A notebook of one cell, made large by the student in the way ``kind`` names."""
    nb = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]))
    if kind == "16 million empty objects":  # 50 MB; the grader once took 10 GiB and 76 s to read it
        return nb.replace('"metadata": {}', '"metadata": {"junk": [' + "{}," * 16_000_000 + "0]}", 1)
    if kind == "12 million numbers in an output":
        return nb.replace('"outputs": []', '"outputs": [{"output_type": "stream", "name": "stdout", "text": ['
                          + "0," * 12_000_000 + "0]}]", 1)
    if kind == "500 thousand objects in metadata":
        return nb.replace('"metadata": {}', '"metadata": {"junk": [' + "{}," * 500_000 + "0]}", 1)
    if kind == "20 thousand cells":
        return nb.replace('"cells": [', '"cells": [' + '{"cell_type": "raw", "metadata": {}, "source": ""},' * 20_000, 1)
    if kind == "a million printed lines":  # what a chatty training loop leaves: it is graded
        return nb.replace('"outputs": []', '"outputs": [{"output_type": "stream", "name": "stdout", "text": ['
                          + '"epoch 1 loss 0.5\\n",' * 1_000_000 + '"done"]}]', 1)
    raise ValueError(kind)


@pytest.mark.parametrize("kind, refused", [("16 million empty objects", "more than 2,000,000 values"),
                                           ("12 million numbers in an output", "more than 2,000,000 values"),
                                           ("500 thousand objects in metadata", "without its outputs"),
                                           ("20 thousand cells", "20,001 cells"),
                                           ("a million printed lines", None)])
def test_a_notebook_is_read_in_bounded_memory_and_time(tmp_path, kind, refused):
    """Decoding a submission happens in the grader's own process, outside every sandbox: within 50 MB a notebook
    can hold millions of tiny JSON values. They are counted before they are built, outputs are dropped before
    nbformat reads the rest, and a notebook beyond the limits is refused with the reason."""
    path = tmp_path / "big.ipynb"
    path.write_text(bloated(kind))
    done = subprocess.run([sys.executable, "-c", READ_NOTEBOOK, str(REPO), str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    read = json.loads(done.stdout.splitlines()[-1])
    if refused:
        assert read["cells"] is None and refused in read["why"], read
    else:
        assert read["why"] is None and read["cells"] == 1, read
    assert read["extra_mib"] < 400 and read["seconds"] < 10, read  # measured here: at most 126 MiB and 1.7 s


DEEP_ON_PEER = DEEP_ON_PEER_CALL + "answer = _deep_reply\n"


@pytest.mark.slow
def test_a_deep_frame_on_the_control_socket_stops_the_notebook_with_a_reason(sandbox):
    execution, nb = execute(sandbox, ["def answer():\n    return 42", DEEP_ON_CONTROL, "assert answer() == 42"],
                            tests={2}, answer_names=["answer"])
    assert execution.replies == {0: "ok"} and execution.not_run == [1, 2], execution.problems
    assert execution.problems and "nested more than 400 levels deep" in execution.problems[0]
    assert "student's kernel sent the grader a message" in execution.problems[0] and "cell #1" in execution.problems[0]


@pytest.mark.slow
def test_a_deep_frame_on_the_peer_socket_fails_the_test_with_a_reason(sandbox):
    execution, nb = execute(sandbox, [DEEP_ON_PEER, "assert answer() == 42", "print('after')"], tests={1},
                            answer_names=["answer"])
    assert execution.replies[0] == "ok" and execution.replies[1] == "error", texts(nb, 1)
    assert execution.not_run == [2], execution.problems
    assert "nested more than 400 levels deep" in texts(nb, 1)
    assert any("cell #1 called the student's code" in p and "nested more than" in p for p in execution.problems), \
        execution.problems


# -- 3. LMS exports: entries that become one student id ----------------------------------------------------

def solution(chapter: str = CH1) -> bytes:
    return (SOLUTIONS / chapter / f"{chapter}.ipynb").read_bytes()


def write_entry(export: Path, name: str, data: bytes) -> None:
    """A zip file, a loose notebook, or (a name ending in /) a folder holding the notebook."""
    if name.endswith("/"):
        (export / name).mkdir()
        (export / name / NB1).write_bytes(data)
    elif name.endswith(".zip"):
        (export / name).write_bytes(_zip({f"{CH1}/{NB1}": data}))
    else:
        (export / name).write_bytes(data)


@pytest.mark.parametrize("first, second, student", [("name_.zip", "name.zip", "name"),
                                                    (f"name._{NB1}", f"name_{NB1}", "name"),
                                                    ("name_/", "name/", "name"), ("name.zip", "name./", "name"),
                                                    (f"ann_{NB1}", f"ann-{NB1}", "ann")])
def test_entries_that_become_one_student_id_are_refused_naming_both(tmp_path, first, second, student):
    import grade

    export, submitted = tmp_path / "export", tmp_path / "submitted"
    export.mkdir()
    write_entry(export, first, solution())
    write_entry(export, second, b'{"the other": "student"}')
    write_entry(export, "other.zip", solution())
    notes = grade.collect(export, submitted, [CH1])
    folder = submitted / student / CH1
    assert not (folder / NB1).exists(), "one entry silently replaced the other"
    reason = (folder / f"{NB1}.refused").read_text()
    assert first.rstrip("/") in reason and second.rstrip("/") in reason and len(reason) < 500, reason
    assert any(student in n and first.rstrip("/") in n for n in notes), notes
    assert (submitted / "other" / CH1 / NB1).read_bytes() == solution(), "the other students are collected as usual"
    assert sorted(p.name for p in submitted.iterdir()) == sorted({student, "other"})


def test_one_students_files_are_not_a_collision_and_a_rerun_replaces_nothing(tmp_path):
    import grade

    chapters = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))[:2]
    names = [next((SOLUTIONS / c).glob("*.ipynb")).name for c in chapters]
    export, submitted = tmp_path / "export", tmp_path / "submitted"
    export.mkdir()
    for chapter, name in zip(chapters, names):  # <student>_<notebook>.ipynb, one a chapter: one student's files
        (export / f"bob_{name}").write_bytes(solution(chapter))
    assert not [n for n in grade.collect(export, submitted, chapters) if "entries" in n]
    for chapter, name in zip(chapters, names):
        assert (submitted / "bob" / chapter / name).read_bytes() == solution(chapter)
    # later, a second entry that becomes `bob`: what was collected before is not graded in its place
    (export / "bob_.zip").write_bytes(_zip({f"{chapters[0]}/{names[0]}": b"{}"}))
    grade.collect(export, submitted, chapters)
    for chapter, name in zip(chapters, names):
        assert not (submitted / "bob" / chapter / name).exists()
        assert "'bob_.zip'" in (submitted / "bob" / chapter / f"{name}.refused").read_text()


class NoSandbox:
    """Enough of a Sandbox for a job whose notebooks are all refused: nothing is run."""

    sandboxed = True
    limits = Limits()

    def reset_scratch(self) -> None:
        pass

    def after_submission(self) -> None:
        pass


def test_a_collision_is_reported_in_the_csv_and_the_report(tmp_path, monkeypatch):
    import grade
    import job
    from merge import merge_result, register_chapter, write_reports

    export, workspace = tmp_path / "export", tmp_path / "workspace"
    export.mkdir()
    write_entry(export, "name_.zip", solution())
    write_entry(export, "name.zip", solution())
    grade.collect(export, workspace / "submitted", [CH1])
    db_url = f"sqlite:///{workspace / 'gradebook.db'}"
    # nbgrader's gradebook runs `alembic` from this Python's scripts folder (as grade.py arranges)
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    register_chapter(db_url, SOLUTIONS / CH1)
    out = workspace / "autograder-results" / CH1 / "name"
    result = job.run_job(workspace / "submitted" / "name" / CH1, SOLUTIONS / CH1, "name", out, NoSandbox(),
                         feedback=False)
    assert result["score"] == 0 < result["max_score"]
    merge_result(db_url, workspace, out)
    write_reports(db_url, [result], workspace / "grades.csv", workspace / "grading-report.md")
    reader = csv.DictReader(open(workspace / "grades.csv"))
    row = next(reader)
    assert row["student"] == "name" and float(row["score"]) == 0
    # a column per exercise after the chapter's total, in the chapter's order (issue 41)
    graded = [c.metadata["nbgrader"]["grade_id"] for c in nbformat.read(next((SOLUTIONS / CH1).glob("*.ipynb")), as_version=4).cells
              if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")]
    assert reader.fieldnames[reader.fieldnames.index("problems") + 1:] == graded, reader.fieldnames
    assert sum(float(row[g]) for g in graded) == float(row["score"])
    assert "'name_.zip'" in row["problems"] and "'name.zip'" in row["problems"], row["problems"]
    report = (workspace / "grading-report.md").read_text()
    assert "## name /" in report and "'name_.zip'" in report and "'name.zip'" in report, report



# -- the fork servers' warm-up --------------------------------------------------------------------------------

STATE_PROBE = """
import hashlib, random, numpy as np, torch
def _digest(value):
    return hashlib.sha256(repr(value).encode()).hexdigest()[:16]
print("torch", _digest(torch.get_rng_state().tolist()), torch.initial_seed())
print("numpy", _digest(np.random.get_state()[1].tolist()), np.random.get_state()[2:])
print("random", _digest(random.getstate()))
print("grad", torch.is_grad_enabled(), "threads", torch.get_num_threads())
"""


def test_warming_torch_leaves_the_random_states_grad_mode_and_threads_as_they_were():
    # in a process set up as the sandbox sets up its fork servers (one thread for OpenMP and MKL)
    script = (f"import sys\nsys.path.insert(0, {str(REPO / 'autograder' / 'inkernel')!r})\nimport zygote\n"
              f"{STATE_PROBE}\nprint('threads before', zygote.threads())\nprint('warmed', zygote.warm_torch())\n"
              f"{STATE_PROBE}\nprint('threads after', zygote.threads())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[5] == "warmed True", lines
    assert lines[:4] == lines[6:10], "the warm-up changed what a runner would start with"
    assert lines[4].replace("before", "after") == lines[10], "the warm-up left a thread alive"
    import zygote
    import torch  # and with a pool of threads it does nothing (a thread alive at fork() is missing in the runner)

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert zygote.warm_torch() is False
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_every_runner_starts_from_the_same_state_though_its_fork_server_warmed_torch(sandbox):
    # The fork servers train a tiny model once (zygote.warm_torch), so that no runner pays torch's one-time set-up.
    # A thread left alive by it would be missing in every forked runner (a lock it held, never released):
    assert sandbox.student.threads == 1 and sandbox.trusted.threads == 1, (sandbox.student.threads,
                                                                            sandbox.trusted.threads)
    assert "warm_torch" in sandbox.student.preload_seconds, sandbox.student.preload_seconds
    # Every runner that one fork server forks starts with the same global random states of torch and NumPy, grad
    # mode on and one thread (`random` is reseeded in every forked child by Python itself: tests seed what they
    # draw). A fork server that had to be replaced between the two (the machine's load) starts from other seeds:
    # then the pair is run again.
    for _ in range(3):
        sandbox.ensure_started()
        server = sandbox.student.process
        nb_first = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(STATE_PROBE) for _ in range(2)])
        nb_second = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(STATE_PROBE)])
        plan = Plan(tests={1}, course={}, answer_names=[], classes=[], hidden_from={})
        first = run(nb_first, sandbox, plan)
        sandbox.after_submission()  # as the grader does between notebooks: a fork server that does not answer goes
        second = run(nb_second, sandbox, dataclasses.replace(plan, tests=set()))
        same_server = sandbox.student.process is server
        sandbox.after_submission()
        if same_server:
            break
    assert same_server, "the fork server was replaced three times in a row"
    assert first.replies == {0: "ok", 1: "ok"} and second.replies == {0: "ok"}, (texts(nb_first, 0), texts(nb_first, 1))
    seeded = [[line for line in texts(nb, 0).splitlines() if not line.startswith("random")] for nb in (nb_first, nb_second)]
    assert seeded[0] == seeded[1], seeded
    assert "grad True threads 1" in texts(nb_first, 0) and "grad True threads 1" in texts(nb_first, 1)


RANDOM_DRAWS = """
import random
import numpy as np
import torch

def draw(n):
    return [float(np.random.standard_normal()) for _ in range(n)] + [random.random(), float(torch.rand(1))]

def steer():
    # what a submission does to choose a hidden test's random inputs: its own seeds, an all-zero MT19937
    np.random.seed(0); random.seed(0); torch.manual_seed(0)
    np.random.set_state(("MT19937", np.zeros(624, dtype=np.uint32), 624, 0, 0.0))

def call_back(f):
    return [f(), f()]
"""

RANDOM_TEST = """
import random
import numpy as np
import torch

def seed_all(k):
    np.random.seed(k); random.seed(k); torch.manual_seed(k)

def state():
    _, keys, pos, has_gauss, gauss = np.random.get_state()
    return keys.tobytes(), pos, has_gauss, gauss, random.getstate(), torch.get_rng_state().numpy().tobytes()

def draw_here(n):
    return [float(np.random.standard_normal()) for _ in range(n)] + [random.random(), float(torch.rand(1))]

seed_all(3)
before = state()
a = draw(3)                                  # an odd number of normals: the student's generator keeps a Gaussian
assert state() == before, "the student's draws moved the test's generators"
seed_all(3)
assert a == draw_here(3), "the student's code draws where the test's seeds put it"
seed_all(3)
assert draw(3) == a, "the same seeds again (the states sent last): the same draws"
c = draw(3)                                  # the test did nothing: the student's code goes on from its own, kept
seed_all(3); draw_here(3)                    # Gaussian included
assert c == draw_here(3), "two calls in a row draw on, as in one kernel"
seed_all(9)
np.random.standard_normal(); random.random(); torch.rand(1)  # the test draws: it keeps the pair's second Gaussian
e = draw(2)
seed_all(9); np.random.standard_normal(); random.random(); torch.rand(1)
assert e == draw_here(2), "after the test's own draws the student's code starts where they left off"
seed_all(7)
steer()                                      # the student's code sets its generators: the test's stay its own
hidden = draw_here(4)
seed_all(7)
assert hidden == draw_here(4), "a hidden test's random inputs moved by the student's code"
seed_all(11)
before = state()
drawn = call_back(lambda: float(torch.rand(1)))   # the test's code, called back by the student's: it draws from
assert state() == before and drawn[0] != drawn[1]  # the student's generators, and the test's are undone after
print("own draws")
"""


@pytest.mark.slow
def test_the_test_kernel_keeps_its_own_global_random_states(sandbox):
    """The student's code draws from the global generators of NumPy (a kept Gaussian too), random and torch where the
    test's seeds put it, and on from its own between the test's seeds and draws, as in one kernel; but what it does to
    its generators (draws, seeds, an all-zero state) never reaches the test kernel's: a hidden test that draws its
    inputs from them gets what the course chose (issue 39)."""
    execution, nb = execute(sandbox, [RANDOM_DRAWS, RANDOM_TEST], tests={1}, answer_names=["draw", "steer", "call_back"])
    assert execution.replies == {0: "ok", 1: "ok"}, texts(nb, 1)
    assert "own draws" in texts(nb, 1)


def test_emptying_a_shared_folder_keeps_the_binds_inside_it_and_removes_all_else(tmp_path):
    # A course cloned under /tmp is bound read-only at the same path inside the sandbox's empty /tmp; the fork server
    # empties /tmp after every runner and used to end (and be started anew, 3-8 s) because that bind could not go.
    import zygote

    shared = tmp_path / "tmp"
    course = shared / "clone" / "main" / ".venv"
    (course / "lib").mkdir(parents=True)
    (course / "lib" / "site.py").write_text("kept")
    (shared / "clone" / "main" / "planted.txt").write_text("on the way to the bind: removed")
    (shared / "clone" / "sibling").mkdir()
    (shared / "clone" / "sibling" / "x").write_text("removed")
    (shared / "deep" / "a" / "b").mkdir(parents=True)
    (shared / "deep" / "a").chmod(0o000)  # a folder the runner made unreadable
    (shared / "link").symlink_to(course / "lib" / "site.py")
    left = zygote.empty_folder(str(shared), frozenset({str(course)}))
    assert left == []
    assert (course / "lib" / "site.py").read_text() == "kept"
    assert sorted(p.relative_to(shared).as_posix() for p in shared.rglob("*") if course not in p.parents) == \
        ["clone", "clone/main", "clone/main/.venv"]
    # without the bind named, what cannot go is reported (here: nothing stops removal, so all goes)
    assert zygote.empty_folder(str(shared), frozenset()) == [] and list(shared.iterdir()) == []


FIGURE_CELLS = ["""
import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 2)
axes[0].plot([0, 1], [1, 0]); axes[0].set_title("a title as long as the figure is wide, to be laid out")
fig.tight_layout()
print("left margin", round(fig.subplotpars.left, 3))
""", "%matplotlib inline\nfig"]


@pytest.mark.slow
def test_figures_are_drawn_only_when_asked_and_otherwise_said_to_be_left_out(sandbox, tmp_path):
    # Limits.figures off (grade.py's default): no PNG, a line that names the figure instead, also after the cell's own
    # `%matplotlib inline`; tight_layout (which draws the text to measure it) does nothing
    execution, nb = execute(sandbox, FIGURE_CELLS)
    assert execution.replies == {0: "ok", 1: "ok"}, texts(nb, 0)
    outputs = [o for cell in nb.cells for o in cell.outputs]
    assert not any("image/png" in o.get("data", {}) for o in outputs), outputs
    shown = [o["data"]["text/plain"] for o in outputs if "text/plain" in o.get("data", {})]
    assert shown.count("[a figure with 2 axes: not drawn while grading]") == 2, shown  # at the cell's end, and `fig`
    assert "left margin 0.125" in texts(nb, 0)  # matplotlib's default: not laid out
    # --figures: drawn and laid out as in nbgrader's kernel
    drawing = Sandbox(tmp_path / "drawing", dataclasses.replace(sandbox.limits, figures=True), sandboxed=sandbox.sandboxed)
    drawing.start()
    try:
        execution, nb = execute(drawing, FIGURE_CELLS)
    finally:
        drawing.close()
    assert execution.replies == {0: "ok", 1: "ok"}, texts(nb, 0)
    assert sum("image/png" in o.get("data", {}) for cell in nb.cells for o in cell.outputs) == 2
    assert "left margin 0.125" not in texts(nb, 0), texts(nb, 0)
