"""The student notebooks are what nbgrader makes of the sources, and every source follows the course's rules."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib

import nbformat
import pytest

from course import (NOTEBOOKS, REPO, SOLUTIONS, is_graded_test, main_notebooks, nbgrader_meta, solution_notebooks,
                    student_notebook)

SOURCES = solution_notebooks()
IDS = [p.stem for p in SOURCES]
GRADED = main_notebooks()  # the exercises' rules hold for these; an optional notebook beside one has no exercises
GRADED_IDS = [p.stem for p in GRADED]
# The release's notebooks are those its manifest lists: a learner's own notebooks or checkpoints under notebooks/
# are no course file (tests/test_learner_work.py).
RELEASED = sorted(NOTEBOOKS / name for name in json.loads((NOTEBOOKS / ".release-manifest.json").read_text()))
COMMITTED = sorted(SOLUTIONS.glob("*/*.ipynb")) + RELEASED
SETTINGS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["seqlab"]


def test_notebooks_equal_what_nbgrader_generates_from_solutions():
    done = subprocess.run([sys.executable, str(REPO / "autograder" / "release.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, f"notebooks/ drifted from solutions/ (run `make release`):\n{done.stdout}{done.stderr}"


@pytest.mark.parametrize("path", COMMITTED, ids=[f"{p.parent.parent.name}/{p.stem}" for p in COMMITTED])
def test_committed_notebooks_carry_no_outputs_or_execution_counts(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path.relative_to(REPO)}: cells {dirty} have outputs or execution counts"


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_source_starts_with_the_stamped_colab_setup_cell(path):
    first = nbformat.read(path, as_version=4).cells[0]
    assert "colab-setup" in first.metadata.get("tags", []), "the first cell must be the Colab setup cell"
    assert f"git+{SETTINGS['repository']}@{SETTINGS['branch']}" in first.source
    assert 'if "google.colab" in sys.modules:' in first.source, "the install must run only inside Colab"


def test_readme_badges_point_at_the_repository_and_every_student_notebook():
    readme = (REPO / "README.md").read_text()
    repo_path = SETTINGS["repository"].removeprefix("https://github.com/")
    for path in SOURCES:
        relative = f"notebooks/{path.parent.name}/{path.name}"
        assert f"colab.research.google.com/github/{repo_path}/blob/{SETTINGS['branch']}/{relative}" in readme


@pytest.mark.parametrize("path", GRADED, ids=GRADED_IDS)
def test_every_exercise_has_a_solution_region_and_hidden_tests(path):
    nb = nbformat.read(path, as_version=4)
    answers = [c for c in nb.cells if nbgrader_meta(c).get("solution")]
    tests = [c for c in nb.cells if is_graded_test(c)]
    assert len(answers) >= 6 and len(tests) >= 6, "a chapter has at least 6 graded exercises"
    for cell in answers:
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source, nbgrader_meta(cell)["grade_id"]
    for cell in tests:
        meta = nbgrader_meta(cell)
        assert meta.get("points", 0) > 0, f"{meta['grade_id']} gives no points"
        assert "### BEGIN HIDDEN TESTS" in cell.source, f"{meta['grade_id']} has no hidden tests"
        hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1]
        # Each student's own inputs (issue 44): drawn from seqlab.grading's generators, not a fixed default_rng(k).
        assert re.search(r"_hidden_generator\(|_hidden_seed\(", hidden), \
            f"{meta['grade_id']}: hidden tests draw no inputs from the student's seed (seqlab.grading.hidden_generator)"
    ids = [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c)]
    assert len(ids) == len(set(ids)), "grade ids must be unique"


PASSED_CALL = re.compile(r"\bpassed\(")


@pytest.mark.parametrize("path", GRADED, ids=GRADED_IDS)
def test_every_visible_test_cell_ends_with_one_pass_line(path):
    """Issue 27: a correct answer's visible test must not pass in silence. Each graded test cell calls
    seqlab.check.passed("<function>: <what was checked>") exactly once, as the last statement of its visible
    part (after every visible check, before the hidden tests), so that it is the student's release's last line."""
    nb = nbformat.read(path, as_version=4)
    definitions = "\n".join(c.source for c in nb.cells if "definitions" in c.metadata.get("tags", []))
    assert re.search(r"^from seqlab\.check import [^\n]*\bpassed\b", definitions, re.M), \
        "import passed from seqlab.check in a definitions cell (the grader's trusted kernel runs those)"
    for cell in (c for c in nb.cells if is_graded_test(c)):
        grade_id = nbgrader_meta(cell)["grade_id"]
        assert len(PASSED_CALL.findall(cell.source)) == 1, f"{grade_id}: call passed(...) exactly once"
        visible, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        assert not PASSED_CALL.search(hidden), f"{grade_id}: passed(...) belongs to the visible checks, not the hidden tests"
        last = ast.parse(visible).body[-1]
        assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and \
            getattr(last.value.func, "id", None) == "passed", f"{grade_id}: the visible part must end with passed(...)"
        assert last.end_lineno == len(visible.rstrip().splitlines()), f"{grade_id}: nothing may follow passed(...)"
        args = last.value.args
        assert len(args) == 1 and not last.value.keywords and isinstance(args[0], ast.Constant) \
            and isinstance(args[0].value, str), f"{grade_id}: passed takes one literal string (what was checked)"
        what = args[0].value
        assert re.match(r"^\w[\w, ]*: \S", what) and len(what) <= 110, \
            f"{grade_id}: {what!r} should read '<function>: <what was checked>' on one short line (at most 110 characters)"
    released = [c for c in nbformat.read(student_notebook(path), as_version=4).cells if is_graded_test(c)]
    for cell in released:
        assert PASSED_CALL.match(cell.source.rstrip().splitlines()[-1]), \
            f"{nbgrader_meta(cell)['grade_id']}: the student's test cell must end with its pass line"


@pytest.mark.parametrize("path", GRADED, ids=GRADED_IDS)
def test_chapter_closes_with_a_bilingual_glossary(path):
    last = nbformat.read(path, as_version=4).cells[-1]
    assert last.cell_type == "markdown" and "Glossary" in last.source and "中文" in last.source
    assert last.source.count("\n|") >= 10, "the glossary should have at least 10 terms"


@pytest.mark.parametrize("path", COMMITTED, ids=[f"{p.parent.parent.name}/{p.stem}" for p in COMMITTED])
def test_every_notebook_is_valid_nbformat(path):
    """Issue 40: tools that validate a notebook (Colab's import among them) may refuse an invalid one; cell ids in an
    nbformat 4.4 notebook were the case met (chapter 3)."""
    raw = json.loads(path.read_text())
    try:
        nbformat.validate(raw, version=raw["nbformat"], version_minor=raw["nbformat_minor"])
        problem = None
    except nbformat.ValidationError as error:
        problem = f"{path.relative_to(REPO)} (nbformat {raw['nbformat']}.{raw['nbformat_minor']}): {error.message}"
    assert problem is None, problem


EXERCISE_HEADING = re.compile(r"^#+ .*\bExercise\b", re.M)
SOLUTION_REGION = re.compile(r"### BEGIN SOLUTION.*?### END SOLUTION", re.S)
STRING = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")
CODE_NAMES = re.compile(r"\w+\.empty(?:_like)?\(|\bempty_like\b")
# The edge cases a hidden test names in its call labels and messages, and how an exercise's text names them.
EMPTY_INPUT = re.compile(r"\bempty\b|\bno (?:sentences?|words|ids|tokens|pairs|names|parameters)\b|\bevery length 0\b", re.I)
ZERO_SETTING = re.compile(r"\b(T|max_len|n_steps|steps)\s*=\s*0\b")
# seqlab.check.call_named checks that a call leaves its arguments as they were, unless told unchanged=False.
ARGUMENTS_CHECKED = re.compile(r"\b_call\((?![^\n]*unchanged=False)|\bcall_unchanged\(")
LEAVES_ARGUMENTS = re.compile(r"leaves its arguments as they were|leave (?:the|its) arguments unchanged|"
                              r"change neither|do not change|unchanged", re.I)


def exercise_texts(nb) -> list[tuple[str, str, str, str]]:
    """(grade id, the chapter's introduction, the exercise's own text, its hidden tests) for each graded test cell.
    The introduction states the rules for every exercise ("How to work"); the exercise's text is the markdown from
    its heading on, and its answer cells without their solutions (signatures, docstrings)."""
    found, text = [], []
    introduction = nb.cells[1].source  # the chapter's rules for every exercise ("How to work")
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            text = [cell.source] if EXERCISE_HEADING.search(cell.source) else text + [cell.source]
        elif nbgrader_meta(cell).get("solution"):
            text.append(SOLUTION_REGION.sub("", cell.source))
        elif is_graded_test(cell):
            hidden = cell.source.partition("### BEGIN HIDDEN TESTS")[2]
            found.append((nbgrader_meta(cell)["grade_id"], introduction, "\n".join(text), hidden))
    return found


def unnamed_edge_cases(text: str, hidden: str, rules: str = "") -> list[str]:
    """The edge cases the hidden tests try (as their labels and messages name them) that the exercise's text does
    not name: empty inputs must be called empty (or "no sentences", ...), a setting of 0 written as `name = 0`, and
    a call that checks its arguments come back unchanged needs that rule said (``rules``: the chapter's introduction
    may say it once for every exercise)."""
    said = " ".join(STRING.findall(hidden))
    text = CODE_NAMES.sub(" ", text)
    missing = []
    if ARGUMENTS_CHECKED.search(hidden) and not LEAVES_ARGUMENTS.search(text + "\n" + rules):
        missing.append("that the arguments come back unchanged")
    if EMPTY_INPUT.search(said) and not EMPTY_INPUT.search(text):
        missing.append(f"empty input ({EMPTY_INPUT.search(said).group(0)!r})")
    for name in sorted(set(ZERO_SETTING.findall(said))):
        if not re.search(rf"`?\b{name}\b`?\s*=\s*0\b", text.replace("$", "")):
            missing.append(f"{name} = 0")
    return missing


@pytest.mark.parametrize("path", GRADED, ids=GRADED_IDS)
def test_hidden_tests_try_only_edge_cases_the_exercise_names(path):
    """Issue 40, 5: a student must know from the text everything the hidden tests try. A correct estimate_hmm written
    with np.bincount over concatenated sentences lost its 3 points to a hidden call with no sentences, a case the
    exercise never named. Checked mechanically: empty inputs, settings of 0 (T = 0, max_len = 0), and arguments that
    must come back unchanged."""
    problems = [f"{grade_id}: the hidden tests try {case}, which the exercise's text (from its heading to its "
                f"docstring) does not name" for grade_id, rules, text, hidden in exercise_texts(nbformat.read(path, as_version=4))
                for case in unnamed_edge_cases(text, hidden, rules)]
    assert not problems, "\n".join(problems)


def test_an_unnamed_edge_case_is_found():
    hidden = ('_call("estimate_hmm([], [], 3, 4) (no sentences)", estimate_hmm, [], [], 3, 4, unchanged=False)\n'
              '_call("with T=0", f, 0, unchanged=False)')
    assert unnamed_edge_cases("Return `(pi, A, B)` smoothed as above.", hidden) == ["empty input ('no sentences')", "T = 0"]
    assert unnamed_edge_cases("The lists may be empty; `T = 0` gives two empty arrays.", hidden) == []
    assert unnamed_edge_cases("states = np.empty(T, dtype=int)", '_call("with no sentences", f, [], unchanged=False)') == \
        ["empty input ('no sentences')"]
    assert unnamed_edge_cases("Return P.", '_call("mle_prob of a random corpus", mle_prob, table, "a", ())') == \
        ["that the arguments come back unchanged"]
    assert unnamed_edge_cases("Return P.", '_call("mle_prob", mle_prob, t, "a", ())', "A function leaves its arguments as they were.") == []
    assert unnamed_edge_cases("Return P.", '_call("with no sentences", f, [], unchanged=False)', "Lists may be empty.") == \
        ["empty input ('no sentences')"]  # the introduction's rules name no edge case of an exercise
