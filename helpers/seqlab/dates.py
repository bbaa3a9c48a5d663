"""The course's translation tasks (chapters 6-8), offline, from a file shipped inside ``seqlab``.

``seqlab/datasets/dates.tsv.xz`` is built by ``seqlab/datasets/build_dates.py`` (Babel's CLDR
date formats; see that script and ``LICENSE-dates.txt``). Two tasks:

* **dates**: a date as people write it, in 5 locales and about 30 ways, to ISO 8601::

      >>> load_dates("train")[0]
      Pair(source='...', target='1950-01-01', locale='...', pattern='...')

  Splits ``train``, ``dev``, ``test`` are split **by date** (no dev or test day occurs in
  training in any form). Dev and test rows whose day and month are both numbers with the day
  at most 12 ("03/04/2017") can be read two ways; they are kept apart in ``dev_ambiguous`` and
  ``test_ambiguous``. Dates lie in 1950-2049.
* **numbers**: digits to English words, 1 to 9 digits, ``"40512"`` -> ``"forty thousand five
  hundred twelve"``; splits ``train``, ``dev``, ``test``, about as many numbers of each length
  as there are (few of 1 or 2 digits).

A third task is generated, not stored (chapter 7's non-monotone alignment): **reversed digits**,
``reversed_digits(n, seed=...)``, ``"38271"`` -> ``"17283"``, lengths drawn uniformly.
"""

from __future__ import annotations

import lzma
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from seqlab.data import check_split, dataset_file
from seqlab.i18n import _

__all__ = ["DATE_SPLITS", "NUMBER_SPLITS", "LOCALES", "Pair", "dates_path", "load_dates", "load_numbers",
           "number_words", "locale_counts", "reversed_digits"]

DATE_SPLITS = ("train", "dev", "test", "dev_ambiguous", "test_ambiguous")
NUMBER_SPLITS = ("train", "dev", "test")
LOCALES = ("en_US", "en_GB", "fr_FR", "de_DE", "es_ES")


class Pair(NamedTuple):
    """One source/target pair; ``locale`` and ``pattern`` say how a date was written (CLDR pattern;
    ``{o}`` marks an English ordinal day). For numbers they are ``"-"`` and ``"digits"``."""

    source: str
    target: str
    locale: str
    pattern: str


def dates_path() -> Path:
    """Where the compressed table lies; a clear error if it is missing."""
    return dataset_file("dates.tsv.xz", "`python -m seqlab.datasets.build_dates` (needs Babel, see that script)")


@lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str], tuple[Pair, ...]]:
    table: dict[tuple[str, str], list[Pair]] = {}
    for line in lzma.decompress(dates_path().read_bytes()).decode("utf-8").splitlines():
        task, split, locale, pattern, source, target = line.split("\t")
        table.setdefault((task, split), []).append(Pair(source, target, locale, pattern))
    return {key: tuple(rows) for key, rows in table.items()}


def load_dates(split: str = "train") -> list[Pair]:
    """The date pairs of one split, in date order (a train day written twice gives two rows)."""
    check_split(split, DATE_SPLITS)
    return list(_table()[("dates", split)])


def load_numbers(split: str = "train") -> list[Pair]:
    """The digits -> English words pairs of one split, by number of digits, then as drawn."""
    check_split(split, NUMBER_SPLITS)
    return list(_table()[("numbers", split)])


def locale_counts(split: str = "train") -> dict[str, int]:
    """How many date pairs of a split are written in each locale."""
    return dict(sorted(Counter(p.locale for p in load_dates(split)).items()))


def number_words(n: int) -> str:
    """English words for 0 <= n < 10**9 as the data writes them (US style, no "and")."""
    from seqlab.datasets.build_dates import number_words as words

    return words(n)


def reversed_digits(n: int, min_digits: int = 3, max_digits: int = 10, seed: int = 0) -> list[Pair]:
    """``n`` random digit strings and the same digits backwards (``"38271"`` -> ``"17283"``): output t reads
    source position ``len - 1 - t``. Lengths uniform in ``[min_digits, max_digits]``; the same seed, the same
    pairs. ``locale`` is ``"-"``, ``pattern`` ``"reversed"``."""
    if n < 0 or not 1 <= min_digits <= max_digits:
        raise ValueError(_("need n >= 0 and 1 <= min_digits <= max_digits, got {n}, {min_digits}, {max_digits}").format(
            n=n, min_digits=min_digits, max_digits=max_digits))
    import random

    rng = random.Random(seed)
    pairs = []
    for _pair in range(n):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(min_digits, max_digits)))
        pairs.append(Pair(digits, digits[::-1], "-", "reversed"))
    return pairs
