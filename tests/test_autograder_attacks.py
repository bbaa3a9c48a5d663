"""Issue 23's classes of attack on the grader, two variants each, in the three chapters whose tests lend the
student's code objects of their own (chapters 1, 3 and 6: reference functions, toy models, decoders' steps).

For each chapter an LMS export holds one submission per variant (tests/adversarial/generate.py, ``attacks``),
built on the release with answers that do nothing useful (chapter 3's lending attacks: on the solution, which
deserves every point and gets no more), and an honest solution graded after them on the same worker. The instructors' command grades it (autograder/grade.py, one job at a time); each test reads one
promise off the results:

- names: a student's answer to the test kernel's request binds no name it was not asked for, and never names
  one of the test kernel's own objects;
- leak: feedback shows no hidden test and no value a hidden test passed to the student's code;
- time: a student that claims it waited for a CPU while it spins is stopped at the cell's limit of its own time;
- frames: a JSON frame nested 200,000 levels deep on either socket is the student's error, with a reason;
- html: no script, event handler or active output of the student's reaches a feedback page;
- lent: what a test hands the student's code shows only what a course class defines: a library's methods on it
  (load_state_dict, register_forward_hook, ...), its private fields and dunders are refused, and it cannot be set;
- write_back: an argument changed in place comes back only as data: the student's function or object put into a
  test's list, dict or course object fails that test with the reason;
- limits: the submission's processes share one memory limit and one process limit, whatever they fork;
- browser (issue 39): outputs whose metadata, data and error fields, and cells whose metadata, attachments and markdown
  a page would write as HTML: no feedback page and no autograded notebook (as formgrader, nbconvert's classic and lab
  templates render it) runs anything in Chromium, or holds a javascript: or data: link;
- and every submission is graded, gets 0 (chapter 3's lending ones exactly full marks), and the honest student after them
  full marks; nothing outside the workspace changes.
"""

from __future__ import annotations

import csv
import html
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

from course import REPO, SOLUTIONS, check_grader_timings, hidden_test_lines, is_graded_test
from browser import chromium, chromium_path
from test_autograder_feedback import Active
from test_browser_feedback import pages_a_payload_reaches, what_runs
from test_autograder_safety import grade, graders_own_peak, tree_hash

sys.path.insert(0, str(REPO / "autograder"))
from adversarial.generate import ACTIVE_MARK, LENDS_IN_VISIBLE_TESTS, _zip, attacks, load  # noqa: E402
from adversarial.generate import ZERO_INIT_MODELS, zero_init_models  # noqa: E402
from sandbox import bubblewrap  # noqa: E402

CHAPTERS = ["01-ngram-language-models", "03-recurrent-neural-networks", "06-seq2seq-beam-search-bleu"]
LIMIT = 8  # seconds of its own time per cell (the honest solutions here take 7-18 s for all their cells in grading mode)
FULL_MARKS = {"lent"}  # kinds of attack built on the solution where a stub cannot reach what they try (LENDS_IN_...)
HONEST = "zz_honest_after"  # graded last (students are graded in name order), on the one worker the attacks used

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")]


@pytest.fixture(scope="module", params=[pytest.param(c, marks=pytest.mark.xdist_group(f"attacks-{c}")) for c in CHAPTERS])
def graded(request, tmp_path_factory):
    chapter = request.param
    root = tmp_path_factory.mktemp(f"attacks-{chapter[:2]}")
    export, workspace = root / "export", root / "workspace"
    export.mkdir()
    release, name = load("release", chapter)
    kinds, submitted = {}, {}
    for student, (kind, nb) in attacks(chapter).items():
        kinds[student], submitted[student] = kind, nbformat.writes(nb)
        (export / f"{student}_{name}").write_text(submitted[student])
    submitted[HONEST] = nbformat.writes(load("solution", chapter)[0])
    (export / f"{HONEST}.zip").write_bytes(_zip({f"{chapter}/{name}": submitted[HONEST].encode()}))
    watched = [SOLUTIONS / chapter, REPO / "notebooks" / chapter, REPO / "autograder", export]
    before = tree_hash(*watched)
    done = grade(workspace, "--submissions", str(export), "--chapter", chapter, "--jobs", "1",
                 "--cell-timeout", str(LIMIT), "--memory-gb", "1", "--no-progress")
    after = tree_hash(*watched)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    rows = {r["student"]: r for r in csv.DictReader(open(workspace / "grades.csv"))} if (workspace / "grades.csv").exists() else {}
    pages = {p.parent.parent.name: p.read_text() for p in (workspace / "feedback").rglob("*.html")}
    printed = {p.parent.parent.name: "".join(o.get("text", "") for c in nbformat.read(p, as_version=4).cells
                                             if c.cell_type == "code" for o in c.outputs if o.output_type == "stream")
               for p in (workspace / "autograded").glob(f"*/{chapter}/*.ipynb")}
    results = {p.parent.name: json.loads(p.read_text())
               for p in (workspace / "autograder-results" / chapter).glob("*/result.json")}
    return {"chapter": chapter, "done": done, "kinds": kinds, "rows": rows, "pages": pages, "results": results,
            "changed": changed, "notebook": name, "printed": printed, "submitted": submitted, "workspace": workspace}


def of_kind(graded, kind: str) -> list[str]:
    students = [s for s, k in graded["kinds"].items() if k == kind]
    assert len(students) == 2, (kind, students)
    return students


def problems(graded, student: str) -> str:
    return graded["rows"][student]["problems"] + " ".join(
        p for entry in graded["results"][student]["notebooks"].values() for p in entry.get("problems", []))


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_every_attack_is_graded_with_zero_and_the_honest_student_after_them_keeps_full_marks(graded):
    done = graded["done"]
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(graded["rows"]) == set(graded["kinds"]) | {HONEST}, set(graded["rows"]) ^ (set(graded["kinds"]) | {HONEST})
    scores = {s: float(r["score"]) for s, r in graded["rows"].items()}
    honest = graded["rows"][HONEST]
    assert float(honest["score"]) == float(honest["max_score"]) > 0 and not honest["problems"], honest
    on_solution = graded["chapter"] not in LENDS_IN_VISIBLE_TESTS
    deserved = {s: float(honest["max_score"]) if k in FULL_MARKS and on_solution else 0.0
                for s, k in graded["kinds"].items()}
    assert all(scores[s] == deserved[s] for s in deserved), {s: (scores[s], deserved[s]) for s in deserved
                                                              if scores[s] != deserved[s]}
    check_grader_timings([entry.get("timings", {}) for entry in graded["results"][HONEST]["notebooks"].values()])
    assert max(graders_own_peak(done.stderr)) < 1024, "the grader's own memory (deep frames are decoded there)"
    assert not graded["changed"], f"files outside the workspace changed: {graded['changed'][:10]}"
    assert set(graded["pages"]) >= set(graded["rows"]), "a student without a feedback page"


def test_names_a_student_answers_with_are_refused(graded):
    extra, trusted = of_kind(graded, "names")
    assert "not asked for" in problems(graded, extra), problems(graded, extra)
    assert "name of the test kernel" in text_of(graded["pages"][trusted]), graded["rows"][trusted]


def test_hidden_tests_and_their_inputs_never_reach_feedback(graded):
    from feedback import STUDENT_ERROR

    source = nbformat.read(SOLUTIONS / graded["chapter"] / graded["notebook"], as_version=4)
    tests = [c for c in source.cells if is_graded_test(c)]
    secrets = hidden_test_lines(graded["chapter"])
    assert secrets, "the chapter has hidden tests"
    for student, page in graded["pages"].items():
        text = text_of(page)
        # a line the submission holds itself is no leak (a solution's answer may read as a hidden reference does)
        own = "\n".join(c.source for c in nbformat.reads(graded["submitted"][student], as_version=4).cells)
        leaked = [s for s in secrets if s in text and s not in own]
        assert not leaked, (student, leaked[:3])
    errors, display = of_kind(graded, "leak")
    before_hidden = next(i for i, c in enumerate(tests) if "BEGIN HIDDEN TESTS" in c.source) + 1
    text = text_of(graded["pages"][errors])
    assert 0 < text.count("ValueError: LEAK ") <= before_hidden and STUDENT_ERROR in text, text.count("ValueError: LEAK ")
    assert "LEAKED " not in text_of(graded["pages"][display]), "what the student's code shows during a test call is dropped"


def test_a_claimed_wait_buys_no_time(graded):
    for student in of_kind(graded, "time"):
        found = problems(graded, student)
        assert f"longer than {LIMIT} s of its own time" in found or "did not answer its interrupt" in found, found
        assert "backstop" not in found and "of wall time" not in found, found


def test_a_deep_frame_on_either_socket_is_the_students_error_with_a_reason(graded):
    for student in of_kind(graded, "frames"):
        assert "nested more than 400 levels deep" in problems(graded, student) + text_of(graded["pages"][student]), \
            problems(graded, student)


def test_no_active_html_of_the_students_reaches_feedback(graded):
    for student, page in graded["pages"].items():
        parser = Active()
        parser.feed(page)
        assert not [item for item in parser.found if ACTIVE_MARK in item], (student, parser.found[:5])
    for student in of_kind(graded, "html"):  # (what was shown is still there, as text)
        assert ACTIVE_MARK in graded["pages"][student], student


def test_a_lent_object_shows_only_what_the_course_lends(graded):
    """Each object a test handed the student's code, tried once: every try refused, and the honest work goes on."""
    for student in of_kind(graded, "lent"):
        found = re.search(r"LENT-LOG (\d+) (\[.*\])", graded["printed"][student])
        assert found, (student, graded["printed"][student][-500:])
        assert int(found.group(1)) >= 8, f"{student}: the tests lent the student's code nothing to try"
        assert found.group(2) == "[]", f"{student}: what a lent object let through: {found.group(2)}"


def test_a_handle_written_back_into_a_tests_object_fails_that_test(graded):
    for student in of_kind(graded, "write_back"):
        assert "an argument changed in place must hold data" in text_of(graded["pages"][student]), \
            graded["rows"][student]


def test_limits_hold_for_all_of_a_submissions_processes(graded):
    memory, processes = of_kind(graded, "limits")
    assert "memory limit" in problems(graded, memory), problems(graded, memory)
    assert "processes" in problems(graded, processes), problems(graded, processes)


# ---- issue 39: model classes that build the specified layers, set every parameter to 0 and return what such a model
# computes (tests/adversarial/generate.py, ZERO_INIT_MODELS). Before the model tests loaded seeded random parameters
# they got 14 points (chapter 3: 3, chapter 6: 5, chapter 7: 6, measured with these submissions on 225e2ad's tests).

def check_zero_init_models_get_nothing(graded) -> None:
    """Every model cell of every zero-initialised submission scores 0; where the visible part of the test catches it
    (it always does in chapters 6 and 7), the feedback says that the output did not follow random parameters."""
    for student in of_kind(graded, "zero_init"):
        cells = next(iter(graded["results"][student]["notebooks"].values()))["cells"]
        models = [f"{answer}_tests" for answer in ZERO_INIT_MODELS[graded["chapter"]][student]]
        assert {m: cells[m]["auto_score"] for m in models} == {m: 0 for m in models}, (student, cells)
        caught_in_sight = [m for m in models if not cells[m]["hidden_failure"]]
        if caught_in_sight:
            assert "random parameters" in text_of(graded["pages"][student]), (student, caught_in_sight)


def test_a_model_of_zero_parameters_gets_nothing_for_its_constants(graded):
    if graded["chapter"] not in ZERO_INIT_MODELS:
        pytest.skip("no model exercise in this chapter")
    check_zero_init_models_get_nothing(graded)


@pytest.fixture(scope="module")
def graded_zero_init_attention(tmp_path_factory):
    """Chapter 7 is not in the attack batch: its two zero-initialised submissions alone, graded the same way."""
    chapter = "07-attention"
    root = tmp_path_factory.mktemp("zero-init-07")
    export, workspace = root / "export", root / "workspace"
    export.mkdir()
    name = load("release", chapter)[1]
    made = zero_init_models(chapter)
    for student, nb in made.items():
        (export / f"{student}_{name}").write_text(nbformat.writes(nb))
    done = grade(workspace, "--submissions", str(export), "--chapter", chapter, "--jobs", "1",
                 "--cell-timeout", str(LIMIT), "--memory-gb", "1", "--no-progress")
    assert done.returncode == 0, done.stderr[-3000:]
    return {"chapter": chapter, "kinds": {student: "zero_init" for student in made},
            "rows": {r["student"]: r for r in csv.DictReader(open(workspace / "grades.csv"))},
            "pages": {p.parent.parent.name: p.read_text() for p in (workspace / "feedback").rglob("*.html")},
            "results": {p.parent.name: json.loads(p.read_text())
                        for p in (workspace / "autograder-results" / chapter).glob("*/result.json")}}


@pytest.mark.xdist_group("attacks-07-zero-init")
def test_a_model_of_zero_parameters_gets_nothing_in_chapter_7(graded_zero_init_attention):
    check_zero_init_models_get_nothing(graded_zero_init_attention)
    assert all(float(r["score"]) == 0 for r in graded_zero_init_attention["rows"].values()), graded_zero_init_attention["rows"]


@pytest.fixture(scope="module")
def browser():
    if chromium_path() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    with chromium() as opened:
        yield opened


def test_no_page_of_the_batch_runs_anything_in_a_browser(graded, browser):
    """Every page a payload reaches (feedback pages, autograded notebooks as formgrader renders them; the hostile
    submissions' notebooks as nbconvert's classic and lab exports render them too), and the honest student's, opened
    in Chromium."""
    hostile = {s for s, kind in graded["kinds"].items() if kind in ("browser", "html")}
    autograded = list((graded["workspace"] / "autograded").glob(f"*/{graded['chapter']}/*.ipynb"))
    pages = pages_a_payload_reaches(graded["pages"], autograded, hostile, control=HONEST)
    assert len(hostile) == 4 and len(pages) >= 4 * len(hostile) + 2, sorted(pages)
    ran = what_runs(browser, pages)
    assert not ran, {name: found[:3] for name, found in list(ran.items())[:5]}
    outputs, cells = of_kind(graded, "browser")
    assert ACTIVE_MARK in graded["pages"][outputs] and ACTIVE_MARK in graded["pages"][cells], "shown, as text"
    assert "was made ungraded" in text_of(graded["pages"][cells]), "the grader's note quoting the cell's id"
