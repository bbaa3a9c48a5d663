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


def test_value_and_grad_of_a_scalar_and_of_a_weighted_output():
    import pytest
    import torch

    from seqlab.grading import value_and_grad

    x = torch.tensor([[1.0, -2.0], [0.5, 3.0]])
    value, grad = value_and_grad(lambda t: (t ** 2).sum(), x)
    assert value.item() == 14.25 and torch.equal(grad, 2 * x)
    weights = torch.tensor([[1.0, 0.0], [-1.0, 2.0]])
    value, grad = value_and_grad(lambda t, s: (t * s, t.sum()), x, 3.0, weights=weights, output=0)
    assert value.item() == (3 * x * weights).sum().item() and torch.equal(grad, 3 * weights)
    assert torch.equal(x, torch.tensor([[1.0, -2.0], [0.5, 3.0]])), "the caller's tensor is left alone"
    with pytest.raises(ValueError, match="weights of shape"):
        value_and_grad(lambda t: t * 2, x, weights=torch.ones(3))
    with pytest.raises(ValueError, match="output=2"):
        value_and_grad(lambda t: (t, t), x, weights=weights, output=2)
    with pytest.raises(ValueError, match="scalar tensor"):
        value_and_grad(lambda t: t * 2, x)
