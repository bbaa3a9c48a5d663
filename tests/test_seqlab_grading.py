"""seqlab.grading follows nbgrader's NBGRADER_EXECUTION variable."""

from seqlab.grading import budget, grading_mode, is_grading


def test_learner_mode(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert grading_mode() is None and not is_grading() and budget(full=1000, grading=10) == 1000


def test_grading_modes(monkeypatch):
    for mode in ("autograde", "validate"):
        monkeypatch.setenv("NBGRADER_EXECUTION", mode)
        assert grading_mode() == mode and is_grading() and budget(full=1000, grading=10) == 10


def test_empty_variable_is_learner_mode(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "")
    assert not is_grading()
