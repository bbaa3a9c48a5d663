"""The language of the messages a learner sees: the edition of the notebook that runs, not the machine's locale.

    from seqlab.i18n import _
    print(_("visible checks passed; hidden tests run at grading"))   # Chinese in a notebook of notebooks/zh/

The Chinese edition's notebooks carry ``"language": "zh"`` in their metadata (autograder/release.py writes it).
The kernel learns which notebook it runs from Jupyter Server, which starts it with ``JPY_SESSION_NAME`` set to the
notebook's path (VS Code sets ``__vsc_ipynb_file__``); ``SEQLAB_LANGUAGE=zh`` (or ``en``) overrides both, e.g. in
Colab. Anything else, a script or the grader's kernels, speaks English. The messages are translated with the
standard library's gettext from ``seqlab/locale/<language>/LC_MESSAGES/seqlab.mo``, compiled from
``i18n/zh/seqlab.po`` (``python autograder/i18n.py compile``); a message without a translation stays English.
"""

from __future__ import annotations

import functools
import gettext
import json
import os
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "seqlab"
ENGLISH = "en"


@functools.lru_cache(maxsize=32)
def _edition_of(path: str, modified: float) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            language = json.load(f).get("metadata", {}).get("language", ENGLISH)
    except (OSError, ValueError, AttributeError):
        return ENGLISH
    return language if isinstance(language, str) and language else ENGLISH


def _notebook_path() -> str | None:
    path = os.environ.get("JPY_SESSION_NAME")
    if not path:
        try:
            from IPython import get_ipython

            shell = get_ipython()
            path = shell.user_ns.get("__vsc_ipynb_file__") if shell is not None else None
        except ImportError:
            path = None
    return path if isinstance(path, str) and path.endswith(".ipynb") else None


def language() -> str:
    """The language of this notebook's edition: ``SEQLAB_LANGUAGE``, else the running notebook's metadata, else English."""
    chosen = os.environ.get("SEQLAB_LANGUAGE", "").strip()
    if chosen:
        return chosen.replace("-", "_").split("_")[0].lower()
    path = _notebook_path()
    if path is None:
        return ENGLISH
    try:
        modified = os.stat(path).st_mtime
    except OSError:
        return ENGLISH
    return _edition_of(path, modified)


@functools.lru_cache(maxsize=8)
def translations(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[language], fallback=True)


def N_(message: str) -> str:
    """Marks a constant as a message for the catalog (gettext's ``gettext_noop``); translate it where it is shown."""
    return message


def _(message: str) -> str:
    """``message`` in the language of this notebook's edition (unchanged in English, or without a translation)."""
    if not message:
        return message
    chosen = language()
    return message if chosen == ENGLISH else translations(chosen).gettext(message)
