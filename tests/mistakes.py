"""The harness behind tests/test_chNN_mistakes.py.

A chapter's graded tests must reject hard-coded answers and the classic mistakes of each
exercise, and accept a correct implementation written another way. Each case swaps one
function (or class) of the solution for a variant and runs the exercise's whole test cell,
visible and hidden tests, against it.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import os
from typing import Any, Callable

import nbformat
import pytest

from course import SOLUTIONS, environment, load_definitions, nbgrader_meta
from seqlab.check import CheckFailed
from seqlab.grading import HIDDEN_SEED_VAR

Wrong = list[tuple[str, str, Any]]  # (grade_id, name swapped, variant)
Right = list[tuple[str, dict[str, Any]]]  # (grade_id, {name: correct variant})
Named = list[tuple[str, str, Any, str]]  # (grade_id, name swapped, variant, words its check message must contain)

# What a model test says when a model's output does not follow parameters the test loaded (issue 39)
RANDOM_PARAMETERS = "random parameters"

# The grader gives each student's hidden tests inputs of their own (issue 44: job.student_seed). The cases below run
# as a student would be graded, under a student's seed, never the notebook's fixed inputs (GradedCells' first pass
# and the notebook runs have those): a mistake must be rejected whatever inputs the hidden tests draw.
# SEQLAB_MISTAKES_STUDENT names another student (autograder/seeds_check.py's README row runs the suites under several).
SUITE_SECRET = "tests/mistakes.py: the suite's own course secret"


def suite_seed(chapter: str) -> str:
    """The seed of the suite's student for this chapter, derived as job.student_seed derives a student's."""
    student = os.environ.get("SEQLAB_MISTAKES_STUDENT", "mistakes-suite")
    return hmac.new(SUITE_SECRET.encode(), f"{chapter}\0{student}".encode(), hashlib.sha256).hexdigest()


class GradedCells:
    """A chapter's graded test cells, runnable one by one in the namespace of its solution."""

    def __init__(self, chapter: str):
        path = SOLUTIONS / chapter / f"{chapter}.ipynb"  # the chapter's own, graded notebook (not an optional one beside it)
        self.seed = suite_seed(chapter)
        self.sources = {nbgrader_meta(c)["grade_id"]: c.source for c in nbformat.read(path, as_version=4).cells
                        if nbgrader_meta(c).get("grade")}
        self.base = load_definitions(chapter)
        # A test cell may use a name an earlier test cell defined (toy data), as the notebook's kernel allows:
        # run them all once, in order, with the solution, and remember what each cell found before it.
        namespace: dict[str, Any] = dict(self.base)
        self.earlier: dict[str, dict[str, Any]] = {}
        for grade_id, source in self.sources.items():
            self.earlier[grade_id] = {k: v for k, v in namespace.items() if k not in self.base and not k.startswith("_")}
            exec(compile(source, grade_id, "exec"), namespace)

    def fresh_earlier(self, grade_id: str) -> dict[str, Any]:
        """What earlier test cells left (toy data), copied: a planted mistake that changes an argument in place must
        not change it for the cases after it."""
        fresh = {}
        for name, value in self.earlier[grade_id].items():
            try:
                fresh[name] = copy.deepcopy(value)
            except Exception:  # noqa: BLE001 - what cannot be copied (a module, a generator) is shared as before
                fresh[name] = value
        return fresh

    def run(self, grade_id: str, **replacements: Any) -> None:
        """The whole test cell, its hidden tests drawing the suite's student's inputs."""
        namespace = {**self.base, **self.fresh_earlier(grade_id), **replacements}
        with environment(**{HIDDEN_SEED_VAR: self.seed}):
            exec(compile(self.sources[grade_id], grade_id, "exec"), namespace)

    def run_visible(self, grade_id: str, **replacements: Any) -> None:
        """Only the visible part of a test cell: what a self-learner sees (fixed inputs, whatever the seed)."""
        visible = self.sources[grade_id].split("### BEGIN HIDDEN TESTS")[0]
        namespace = {**self.base, **self.fresh_earlier(grade_id), **replacements}
        with environment(**{HIDDEN_SEED_VAR: self.seed}):
            exec(compile(visible, grade_id + " (visible)", "exec"), namespace)


def mistake_tests(cells: GradedCells, wrong: Wrong, right: Right) -> tuple[Callable, ...]:
    """The four tests of a chapter's mistakes file, for the module to bind to test_* names."""

    def test_every_graded_cell_is_covered():
        assert {cell for cell, _, _ in wrong} == set(cells.sources) == {cell for cell, _ in right}
        for cell in cells.sources:
            assert sum(c == cell for c, _, _ in wrong) >= 2, f"{cell}: at least two classic mistakes"
            # issue 25: an answer that looks up the visible tests' inputs fails the cell's own hidden tests
            assert any(c == cell and "hardcoded" in v.__name__.lower() for c, _, v in wrong), \
                f"{cell}: no answer hard-coded to the visible tests' inputs (a variant named *hardcoded*)"

    @pytest.mark.parametrize("grade_id, name, variant", wrong, ids=[v.__name__ for _, _, v in wrong])
    def test_graded_tests_reject_the_mistake(grade_id, name, variant):
        # by a check of seqlab.check, whose message names what failed: never a traceback from inside the student's
        # code or numpy/torch (issue 25), nor a bare assert
        with pytest.raises(CheckFailed):
            cells.run(grade_id, **{name: variant})

    @pytest.mark.parametrize("grade_id, replacements", right, ids=[c for c, _ in right])
    def test_graded_tests_accept_another_correct_implementation(grade_id, replacements):
        cells.run(grade_id, **replacements)

    @pytest.mark.parametrize("grade_id", sorted(cells.sources))
    def test_solution_passes_its_own_tests(grade_id):
        cells.run(grade_id)

    return (test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
            test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests)


def naming_tests(cells: GradedCells, visible: Named = (), hidden: Named = ()) -> tuple[Callable, ...]:
    """Tests that a check message names the mistake: the visible part alone (what a self-learner sees)
    for ``visible``, the whole cell for ``hidden``; and that the solution passes the visible part alone."""

    def named(run: Callable, grade_id: str, name: str, variant: Any, words: str) -> None:
        with pytest.raises(CheckFailed) as failure:
            run(grade_id, **{name: variant})
        assert words in str(failure.value), str(failure.value)

    @pytest.mark.parametrize("grade_id, name, variant, words", visible, ids=[v.__name__ for _, _, v, _ in visible])
    def test_visible_tests_name_the_classic_mistake(grade_id, name, variant, words):
        named(cells.run_visible, grade_id, name, variant, words)

    @pytest.mark.parametrize("grade_id", sorted({g for g, _, _, _ in visible}))
    def test_visible_tests_pass_the_solution(grade_id):
        cells.run_visible(grade_id)

    @pytest.mark.parametrize("grade_id, name, variant, words", hidden, ids=[v.__name__ for _, _, v, _ in hidden])
    def test_hidden_tests_name_the_class_of_the_bug(grade_id, name, variant, words):
        named(cells.run, grade_id, name, variant, words)

    return test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution, test_hidden_tests_name_the_class_of_the_bug


def zero_initialised(layers: type, forward: Callable, name: str, *, keep: tuple[str, ...] = (), **methods: Callable) -> type:
    """Issue 39's mistake for a model exercise: ``layers`` (a class that builds the layers the exercise names) with
    every parameter set to 0, except those of the submodules named in ``keep``, and ``forward(self, ...)`` returning
    what such a model computes whatever its input (``methods``: others that do the same). A test whose reference comes from the model's own initial state
    dict, or that calls the model's own layers to make it, accepts it; one that loads seeded random parameters first
    (seqlab.check.load_random_parameters) and computes its reference from them does not."""
    import torch

    def __init__(self, *args, **kwargs):
        layers.__init__(self, *args, **kwargs)
        with torch.no_grad():
            for module_name, module in self.named_children():
                if module_name not in keep:
                    for parameter in module.parameters():
                        parameter.zero_()

    return type(name, (layers,), {"__init__": __init__, "forward": forward, **methods})
