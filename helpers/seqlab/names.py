"""Surnames by origin and English first names, offline, from a file shipped inside ``seqlab``.

``seqlab/datasets/names.tsv.xz`` is built by ``seqlab/datasets/build_names.py`` from the
name lists of the PyPI package Faker (MIT; see ``seqlab/datasets/LICENSE-names.txt``),
transliterated to ASCII. Surnames have 19 origins with 180 to 500 names each, split about
80/10/10 into train, dev and test so that the male and female forms of a name stay in one
split. A surname found in several origins is kept apart in the split ``"shared"``.

    >>> train = load_names("surnames", "train")
    >>> train[0]
    Name(text='Abada', label='Arabic')
"""

from __future__ import annotations

import lzma
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from seqlab.data import check_split, dataset_file
from seqlab.i18n import _

__all__ = ["KINDS", "SPLITS", "Name", "names_path", "load_names", "surname_origins", "class_sizes"]

KINDS = ("surnames", "first")
SPLITS = ("train", "dev", "test", "shared")
_KIND_IN_FILE = {"surnames": "surname", "first": "first"}


class Name(NamedTuple):
    """One name and its label: the origin of a surname ("Greek"), or "female"/"male"/"both"
    for a first name. A shared surname's label lists its origins joined by "|"."""

    text: str
    label: str


def names_path() -> Path:
    """Where the compressed name table lies; a clear error if it is missing."""
    return dataset_file("names.tsv.xz", "`python -m seqlab.datasets.build_names` (needs Faker and Unidecode, see that script)")


@lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str], tuple[Name, ...]]:
    table: dict[tuple[str, str], list[Name]] = {}
    for line in lzma.decompress(names_path().read_bytes()).decode("utf-8").splitlines():
        kind, split, label, text = line.split("\t")
        table.setdefault((kind, split), []).append(Name(text, label))
    return {key: tuple(rows) for key, rows in table.items()}


def load_names(kind: str = "surnames", split: str = "train") -> list[Name]:
    """The names of one kind and split, in a fixed order (by label, then name).

    Args:
        kind: ``"surnames"`` (labelled by origin) or ``"first"`` (English first names).
        split: ``"train"``, ``"dev"``, ``"test"``, or ``"shared"`` (surnames of several origins).
    """
    if kind not in KINDS:
        raise ValueError(_("kind must be one of {choices}, got {kind!r}").format(choices=KINDS, kind=kind))
    check_split(split, SPLITS)
    if kind == "first" and split == "shared":
        raise ValueError(_("the split 'shared' exists only for surnames"))
    return list(_table().get((_KIND_IN_FILE[kind], split), ()))


def surname_origins() -> list[str]:
    """The origins of the surnames, sorted: the classes of the classifier."""
    return sorted({n.label for n in load_names("surnames", "train")})


def class_sizes(kind: str = "surnames") -> dict[str, dict[str, int]]:
    """``{label: {"train": n, "dev": n, "test": n}}`` for one kind of name."""
    sizes: dict[str, dict[str, int]] = {}
    for split in ("train", "dev", "test"):
        for label, count in Counter(n.label for n in load_names(kind, split)).items():
            sizes.setdefault(label, {"train": 0, "dev": 0, "test": 0})[split] = count
    return dict(sorted(sizes.items()))
