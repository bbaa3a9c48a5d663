"""Is nbgrader grading this notebook right now?

nbgrader sets ``NBGRADER_EXECUTION`` (to ``"autograde"`` or ``"validate"``) in the
kernel's environment while it runs a notebook. Training and other long cells ask
:func:`budget` for their size, so that a whole chapter grades in seconds while a
learner still gets the full-sized run.
"""

from __future__ import annotations

import os
from typing import TypeVar

T = TypeVar("T")

ENV_VAR = "NBGRADER_EXECUTION"


def grading_mode() -> str | None:
    """``"autograde"`` or ``"validate"`` while nbgrader runs the notebook, else ``None``."""
    return os.environ.get(ENV_VAR) or None


def is_grading() -> bool:
    """True while nbgrader runs the notebook."""
    return grading_mode() is not None


def budget(full: T, grading: T) -> T:
    """``full`` for a learner, ``grading`` while nbgrader grades.

    >>> n_sentences = budget(full=40_000, grading=2_000)
    """
    return grading if is_grading() else full


def optimizer_for(model, name: str = "SGD", **options):
    """``torch.optim.<name>(model.parameters(), **options)``, built where the model lives.

    Test cells use this instead of constructing an optimizer themselves: under the
    instructors' grader a test cell runs in a trusted kernel and ``model`` is a handle to a
    student's module in the sandboxed kernel, so the optimizer must be made there too
    (the handle offers ``_remote_optimizer``). In a learner's notebook it is the plain call.

    >>> opt = optimizer_for(model, "Adam", lr=1e-3)
    """
    remote = getattr(type(model), "_remote_optimizer", None)
    if remote is not None:
        return remote(model, name, options)
    import torch

    if not hasattr(torch.optim, name) or name.startswith("_"):
        raise ValueError(f"torch.optim has no optimizer called {name!r}")
    return getattr(torch.optim, name)(model.parameters(), **options)


def type_names(obj) -> list[str]:
    """The names of the classes of ``obj``, most specific first (``["Embedding", "Module", "object"]``).

    Test cells use this instead of ``isinstance(obj, nn.Embedding)``: under the instructors'
    grader ``obj`` may be a handle to an object in the student's kernel.
    """
    remote = getattr(type(obj), "_remote_type_names", None)
    if remote is not None:
        return remote(obj)
    return [klass.__name__ for klass in type(obj).__mro__]


def value_and_grad(fn, *args, wrt: int = 0, weights=None, output: int | None = None):
    """``fn(*args)`` (a scalar tensor, detached) and its gradient with respect to ``args[wrt]``.

    Test cells use this instead of calling ``.backward()`` on what a student's function
    returned: under the instructors' grader the function runs in the student's kernel and
    the autograd graph stays there, so the gradient is taken there too.

    For a function that returns a tensor (or a tuple: ``output`` picks one of it), pass ``weights``
    of that tensor's shape: the value is then ``(fn(*args)[output] * weights).sum()``, whose gradient
    is the vector-Jacobian product with ``weights``. Random weights check the gradient at every
    position at once (a NaN in a masked row, a position left out), not only that the graph exists.
    """
    remote = getattr(type(fn), "_remote_value_and_grad", None)
    if remote is not None:
        return remote(fn, args, wrt, weights, output)
    import torch

    args = list(args)
    args[wrt] = torch.as_tensor(args[wrt]).detach().clone().requires_grad_(True)
    value = fn(*args)
    if output is not None:
        if not isinstance(value, (tuple, list)) or not 0 <= output < len(value):
            raise ValueError(f"value_and_grad: output={output} of a function that returned {type(value).__name__}")
        value = value[output]
    if weights is not None:
        weights = torch.as_tensor(weights)
        if not torch.is_tensor(value) or value.shape != weights.shape:
            shape = tuple(value.shape) if torch.is_tensor(value) else type(value).__name__
            raise ValueError(f"value_and_grad: weights of shape {tuple(weights.shape)} for an output of shape {shape}")
        value = (value * weights.to(value.dtype)).sum()
    if not torch.is_tensor(value) or value.dim() != 0:
        raise ValueError(f"value_and_grad needs a function that returns a scalar tensor, got {type(value).__name__}")
    if not value.requires_grad:
        return value.detach(), torch.zeros_like(args[wrt])
    value.backward()
    grad = args[wrt].grad
    return value.detach(), torch.zeros_like(args[wrt]) if grad is None else grad
