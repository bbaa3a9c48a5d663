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
