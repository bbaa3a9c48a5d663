"""seqlab.train.fit: the training loop the chapters share (issue 14: torch threads while training)."""

from __future__ import annotations

import pytest
import torch

from seqlab.train import fit, torch_threads


def threads_seen_by_step(**options) -> list[int]:
    seen: list[int] = []

    def step(batch) -> float:
        seen.append(torch.get_num_threads())
        return float(batch)

    history = fit(step, lambda: [1.0, 2.0], epochs=2, plot=False, progress=False, **options)
    assert history["losses"] == [1.0, 2.0, 1.0, 2.0]
    return seen


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_fit_trains_on_one_thread_and_restores_the_count(two_threads):
    assert threads_seen_by_step() == [1] * 4
    assert torch.get_num_threads() == 2


def test_fit_threads_option(two_threads):
    assert threads_seen_by_step(threads=None) == [2] * 4  # left as it is
    torch.set_num_threads(1)
    assert threads_seen_by_step(threads=2) == [2] * 4
    assert torch.get_num_threads() == 1


def test_fit_restores_the_count_when_a_step_fails(two_threads):
    def failing(batch):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fit(failing, lambda: [0], epochs=1, plot=False, progress=False)
    assert torch.get_num_threads() == 2


def test_torch_threads_refuses_zero():
    with pytest.raises(ValueError, match="at least 1"):
        with torch_threads(0):
            pass
