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


# -- per-student hidden-test inputs (issue 44, part 3) ----------------------------------------------------------------

HIDDEN_SEED_VAR = "SEQLAB_HIDDEN_SEED"


def hidden_seed(salt: int) -> int:
    """The seed a hidden test draws its random inputs from: ``salt`` itself, unless a grader set a student's seed.

    The instructors' grader puts each student's seed (derived from the course's secret, the chapter and the student
    id) into ``SEQLAB_HIDDEN_SEED`` of the test kernel only, so that every student's hidden tests draw other inputs
    (an answer hard-coded from another student's feedback fails) while a regrade draws the same. Without it (a
    learner's run, nbconvert, CI, plain nbgrader) the seed is ``salt``: the inputs are those the notebook always had.

    >>> rng = np.random.default_rng(hidden_seed(14))
    """
    student = os.environ.get(HIDDEN_SEED_VAR)
    if not student:
        return int(salt)
    import hashlib

    digest = hashlib.sha256(f"{student}\0{int(salt)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # below 2**63: torch.manual_seed and NumPy take it alike


def hidden_generator(salt: int, kind: str = "numpy"):
    """A fresh random generator seeded with :func:`hidden_seed` ``(salt)``: NumPy's ``default_rng`` (``kind="numpy"``)
    or a ``torch.Generator`` (``kind="torch"``). A hidden test draws its random inputs from it.

    >>> _rng = hidden_generator(14)                 # was np.random.default_rng(14)
    >>> _gen = hidden_generator(72, kind="torch")   # was torch.Generator().manual_seed(72)
    """
    seed = hidden_seed(salt)
    if kind == "numpy":
        import numpy as np

        return np.random.default_rng(seed)
    if kind == "torch":
        import torch

        return torch.Generator().manual_seed(seed)
    raise ValueError(f"hidden_generator: kind must be 'numpy' or 'torch', not {kind!r}")
