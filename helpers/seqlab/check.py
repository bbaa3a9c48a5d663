"""Readable checks for the exercises' test cells.

A failed check raises :class:`CheckFailed`, an ``AssertionError`` that says *what* is
wrong and, where it can, a hint *why*. In Jupyter it prints as two short lines
instead of a traceback, so a learner sees the message, and nbgrader still sees an
error and gives the cell no points.

    expect(len(vocab) == 5, "the vocabulary has the wrong size",
           hint="did you forget to add <unk>, <s> and </s>?")
    expect_close(p, 0.25, "P(cat | the)", hint="normalise by the count of the context")
"""

from __future__ import annotations

import reprlib
from typing import Any, Callable

import numpy as np

__all__ = ["CheckFailed", "expect", "expect_equal", "expect_close", "expect_raises"]

_short = reprlib.Repr()
_short.maxstring = 80
_short.maxother = 80
_short.maxlist = _short.maxtuple = _short.maxdict = _short.maxset = 8


class CheckFailed(AssertionError):
    """A test of an exercise failed; ``str()`` is the message followed by the hint."""

    def __init__(self, message: str, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\nHint: {hint}")

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of printing a traceback.
        lines = [f"\x1b[1;31mCheck failed:\x1b[0m {self.message}"]
        if self.hint:
            lines.append(f"\x1b[1;34mHint:\x1b[0m {self.hint}")
        return lines


def expect(condition: Any, message: str, hint: str | None = None) -> None:
    """Fail with ``message`` (and ``hint``) unless ``condition`` is true."""
    if not condition:
        raise CheckFailed(message, hint)


def expect_equal(actual: Any, expected: Any, what: str, hint: str | None = None) -> None:
    """Fail unless ``actual == expected``; the message shows both values."""
    if not _equal(actual, expected):
        raise CheckFailed(f"{what}: expected {_short.repr(expected)}, got {_short.repr(actual)}", hint)


def expect_close(
    actual: Any,
    expected: Any,
    what: str,
    *,
    rtol: float = 1e-7,
    atol: float = 1e-9,
    hint: str | None = None,
) -> None:
    """Fail unless ``actual`` and ``expected`` are numbers or arrays of one shape that agree
    within ``atol + rtol * |expected|`` everywhere (infinities must match exactly)."""
    if actual is None:
        raise CheckFailed(f"{what}: got None", hint or "did the function forget to `return` its result?")
    try:
        got = np.asarray(actual, dtype=float)
    except (TypeError, ValueError):
        raise CheckFailed(f"{what}: expected a number or an array of numbers, got {_short.repr(actual)}", hint)
    want = np.asarray(expected, dtype=float)
    if got.shape != want.shape:
        raise CheckFailed(f"{what}: expected shape {want.shape}, got shape {got.shape}", hint)
    if np.isnan(got).any() and not np.isnan(want).any():
        raise CheckFailed(f"{what}: the result contains NaN", hint)
    close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return
    if got.ndim == 0:
        raise CheckFailed(f"{what}: expected {float(want):.10g}, got {float(got):.10g}", hint)
    where = tuple(int(i) for i in np.argwhere(~close)[0])
    raise CheckFailed(
        f"{what}: {int((~close).sum())} of {close.size} entries differ; "
        f"at index {where} expected {want[where]:.10g}, got {got[where]:.10g}",
        hint,
    )


def expect_raises(
    error: type[BaseException] | tuple[type[BaseException], ...],
    function: Callable[..., Any],
    *args: Any,
    what: str,
    hint: str | None = None,
    **kwargs: Any,
) -> BaseException:
    """Fail unless ``function(*args, **kwargs)`` raises ``error``; return the exception."""
    try:
        function(*args, **kwargs)
    except error as caught:
        return caught
    except Exception as other:  # noqa: BLE001 - the wrong exception is the finding
        raise CheckFailed(f"{what}: expected {_names(error)}, but it raised {type(other).__name__}: {other}", hint)
    raise CheckFailed(f"{what}: expected {_names(error)}, but nothing was raised", hint)


def _names(error: type[BaseException] | tuple[type[BaseException], ...]) -> str:
    errors = error if isinstance(error, tuple) else (error,)
    return " or ".join(e.__name__ for e in errors)


def _equal(actual: Any, expected: Any) -> bool:
    if isinstance(actual, np.ndarray) or isinstance(expected, np.ndarray):
        return np.shape(actual) == np.shape(expected) and bool(np.all(np.asarray(actual) == np.asarray(expected)))
    try:
        return bool(actual == expected)
    except Exception:  # noqa: BLE001 - an object that cannot be compared is not equal
        return False
