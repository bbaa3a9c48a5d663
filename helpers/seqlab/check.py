"""Readable checks for the exercises' test cells.

A failed check raises :class:`CheckFailed`, an ``AssertionError`` that says *what* is
wrong and, where it can, a hint *why*. In Jupyter it prints as two short lines
instead of a traceback, so a learner sees the message, and nbgrader still sees an
error and gives the cell no points.

    expect(len(vocab) == 5, "the vocabulary has the wrong size",
           hint="did you forget to add <unk>, <s> and </s>?")
    expect_close(p, 0.25, "P(cat | the)", hint="normalise by the count of the context")
    expect_same(tags, expected, "the tags")        # names the first position that differs
    result = call_unchanged(f, xs)                   # fails if f changed xs in place
    params = load_random_parameters(model, seed=3)   # a model test's reference is computed from these
    passed("build_vocab: the toy corpus, min_count=2")  # the last line of a visible test cell

A visible test cell ends with :func:`passed`, so that a learner sees that its checks ran:
without it, a correct answer's cell would pass in silence.
"""

from __future__ import annotations

import copy
import reprlib
import types
from typing import Any, Callable

import numpy as np

from .i18n import N_, _

__all__ = ["CheckFailed", "expect", "expect_equal", "expect_close", "expect_raises", "expect_same", "first_difference", "call_named",
           "call_unchanged", "load_random_parameters", "passed", "PASSED_NOTE"]

_short = reprlib.Repr()
_short.maxstring = 80
_short.maxother = 80
_short.maxlist = _short.maxtuple = _short.maxdict = _short.maxset = 8


class CheckFailed(AssertionError):
    """A test of an exercise failed; ``str()`` is the message followed by the hint."""

    def __init__(self, message: str, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n{_('Hint:')} {hint}")

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of printing a traceback.
        lines = [f"\x1b[1;31m{_('Check failed:')}\x1b[0m {self.message}"]
        if self.hint:
            lines.append(f"\x1b[1;34m{_('Hint:')}\x1b[0m {self.hint}")
        return lines


def _said(template: str, **values: Any) -> str:
    """A message from a template of this module, in the notebook's language (seqlab.i18n); ``what`` is translated too."""
    if "what" in values:
        values["what"] = _(values["what"])
    return _(template).format(**values)


def _hint(hint: str | None) -> str | None:
    return _(hint) if hint else hint


def expect(condition: Any, message: str, hint: str | None = None) -> None:
    """Fail with ``message`` (and ``hint``) unless ``condition`` is true."""
    if not condition:
        raise CheckFailed(_(message), _hint(hint))


def expect_equal(actual: Any, expected: Any, what: str, hint: str | None = None) -> None:
    """Fail unless ``actual == expected``; the message shows both values."""
    if not _equal(actual, expected):
        raise CheckFailed(_said("{what}: expected {expected}, got {actual}", what=what, expected=_short.repr(expected),
                                actual=_short.repr(actual)), _hint(hint))


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
        raise CheckFailed(_said("{what}: got None", what=what), _hint(hint or "did the function forget to `return` its result?"))
    try:
        got = np.asarray(actual, dtype=float)
    except (TypeError, ValueError):
        raise CheckFailed(_said("{what}: expected a number or an array of numbers, got {actual}", what=what,
                                actual=_short.repr(actual)), _hint(hint))
    want = np.asarray(expected, dtype=float)
    if got.shape != want.shape:
        raise CheckFailed(_said("{what}: expected shape {expected}, got shape {actual}", what=what, expected=want.shape,
                                actual=got.shape), _hint(hint))
    if np.isnan(got).any() and not np.isnan(want).any():
        raise CheckFailed(_said("{what}: the result contains NaN", what=what), _hint(hint))
    close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return
    if got.ndim == 0:
        raise CheckFailed(_said("{what}: expected {expected}, got {actual}", what=what, expected=f"{float(want):.10g}",
                                actual=f"{float(got):.10g}"), _hint(hint))
    where = tuple(int(i) for i in np.argwhere(~close)[0])
    raise CheckFailed(_said("{what}: {wrong} of {size} entries differ; at index {where} expected {expected}, got {actual}",
                            what=what, wrong=int((~close).sum()), size=close.size, where=where,
                            expected=f"{want[where]:.10g}", actual=f"{got[where]:.10g}"), _hint(hint))


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
        raise CheckFailed(_said("{what}: expected {expected}, but it raised {error}: {text}", what=what,
                                expected=_names(error), error=type(other).__name__, text=other), _hint(hint))
    raise CheckFailed(_said("{what}: expected {expected}, but nothing was raised", what=what, expected=_names(error)),
                      _hint(hint))


def first_difference(actual: Any, expected: Any, where: str = "") -> tuple[str, Any, Any] | None:
    """Where two nested values (lists, tuples, dicts, arrays, tensors, objects) first differ:
    ``(path, actual part, expected part)``, or ``None`` when they are equal. For readable messages."""
    if hasattr(actual, "detach"):  # a torch tensor
        actual = actual.detach().cpu().numpy()
    if hasattr(expected, "detach"):
        expected = expected.detach().cpu().numpy()
    if isinstance(actual, np.ndarray) or isinstance(expected, np.ndarray):
        a, e = np.asarray(actual), np.asarray(expected)
        if a.shape != e.shape:
            return f"{where} (shape)", a.shape, e.shape
        same = (a == e) | ((a != a) & (e != e)) if a.dtype.kind in "fc" and e.dtype.kind in "fc" else (a == e)
        bad = np.argwhere(~np.asarray(same, dtype=bool).reshape(a.shape))
        if not len(bad):
            return None
        index = tuple(int(i) for i in bad[0])
        return f"{where}[{', '.join(map(str, index))}]" if index else where, a[index].tolist(), e[index].tolist()
    if isinstance(actual, dict) and isinstance(expected, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            if key not in actual or key not in expected:
                return f"{where}[{key!r}]", actual.get(key, "(missing)"), expected.get(key, "(missing)")
            found = first_difference(actual[key], expected[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        for i, (a, e) in enumerate(zip(actual, expected)):
            found = first_difference(a, e, f"{where}[{i}]")
            if found:
                return found
        return None if len(actual) == len(expected) else (f"{where} (length)", len(actual), len(expected))
    if type(actual) is type(expected) and hasattr(actual, "__dict__") and not isinstance(actual, (type, types.FunctionType)):
        return first_difference(vars(actual), vars(expected), where)
    try:
        return None if bool(actual == expected) else (where or "the value", actual, expected)
    except Exception:  # noqa: BLE001 - values that cannot be compared differ
        return where or "the value", actual, expected


def expect_same(actual: Any, expected: Any, what: str, hint: str | None = None) -> None:
    """Like :func:`expect_equal`, but for long or nested values the message names the first position that differs."""
    found = first_difference(actual, expected)
    if found:
        where, got, want = found
        raise CheckFailed(_said("{what}: first difference at {where}: expected {expected}, got {actual}", what=what,
                                where=where or _("the top level"), expected=f"{want!r:.80}", actual=f"{got!r:.80}"),
                          _hint(hint))


def call_unchanged(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``function`` and check that it changed none of its arguments in place; return its result.
    A ``np.random.Generator`` argument may change (drawing from it should)."""
    before = copy.deepcopy((args, kwargs))
    result = function(*args, **kwargs)
    for name, old, new in [(f"argument {i + 1}", a, b) for i, (a, b) in enumerate(zip(before[0], args))] + \
                          [(f"argument {k}=", before[1][k], kwargs[k]) for k in kwargs]:
        if isinstance(new, np.random.Generator):  # drawing from a generator changes it, as it should
            continue
        found = first_difference(new, old)
        if found is not None:
            raise CheckFailed(_said("the call changed its {name} in place (at {where}: it was {before}, now {after})",
                                    name=name, where=found[0].strip() or _("the top level"), before=f"{found[2]!r:.60}",
                                    after=f"{found[1]!r:.60}"),
                              _("work on a copy (list(x), x.copy(), x + y instead of x += y); never modify the inputs"))
    return result


def call_named(what: str, function: Callable[..., Any], *args: Any, hint: str | None = None, unchanged: bool = True,
               **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` for a test, named ``what`` in any failure: its arguments must come back
    unchanged (``call_unchanged``; ``unchanged=False`` skips that), and an error raised inside it fails the test
    with the call's name and the error's type and message (200 characters at most), never as a traceback from
    inside the student's code."""
    try:
        return call_unchanged(function, *args, **kwargs) if unchanged else function(*args, **kwargs)
    except CheckFailed as failed:
        raise CheckFailed(f"{_(what)}: {failed.message}", failed.hint) from None
    except Exception as error:  # noqa: BLE001 - the student's code failed: say where, not a traceback
        raise CheckFailed(_said("{what}: raised {error}: {text}", what=what, error=type(error).__name__,
                                text=str(error)[:200]), _hint(hint)) from None


def load_random_parameters(model: Any, seed: int, *, shapes: dict[str, tuple[int, ...]] | None = None,
                           scale: float = 0.5) -> dict[str, Any]:
    """Load seeded random values into every floating-point entry of ``model``'s state dict; return them.

    A model test computes its reference from the returned dict, never from the model's own initial parameters or by
    calling the model's layers: a model whose every parameter is 0 returns constants, and a reference computed from
    those parameters agrees with them. ``shapes`` (name -> shape, what the exercise specifies) is checked first, so
    that a wrong layer fails with a message naming it rather than inside the reference. Works the same on a handle
    to a student's model (``state_dict()`` and ``load_state_dict()`` are data in, data out)."""
    import torch

    state = model.state_dict()
    expect(isinstance(state, dict) and all(isinstance(k, str) and torch.is_tensor(v) for k, v in state.items()),
           f"state_dict() should map names to tensors, got {_short.repr(state)}")
    if shapes is not None:
        expect_same({k: tuple(v.shape) for k, v in state.items()}, {k: tuple(v) for k, v in shapes.items()},
                    "the parameters' names and shapes", hint="build exactly the layers the exercise names, of those sizes")
    generator = torch.Generator().manual_seed(seed)
    chosen = {k: scale * torch.randn(v.shape, generator=generator, dtype=v.dtype) if v.is_floating_point() else v.clone()
              for k, v in state.items()}
    try:
        model.load_state_dict(chosen)
    except Exception as error:  # noqa: BLE001 - the student's model refused them: say so, not a traceback
        raise CheckFailed(f"load_state_dict(random parameters) raised {type(error).__name__}: {str(error)[:200]}") from None
    return chosen


PASSED_NOTE = N_("visible checks passed; hidden tests run at grading")


def passed(what: str) -> None:
    """Print the one line that closes a visible test cell: what its checks tried, and that they passed.

    The line says that these were the visible checks: the hidden tests, which run when the notebook
    is graded, may still find a mistake. Plain text on stdout, never stderr (nbgrader zeroes a cell
    that writes to stderr)."""
    print(f"\u2713 {_(what)} ({_(PASSED_NOTE)})")


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
