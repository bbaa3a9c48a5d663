"""Build ``dates.tsv.xz``: the course's translation tasks for chapters 6-8, offline and seeded.

Two tasks, one file::

    python -m seqlab.datasets.build_dates            # rewrite the committed file
    python -m seqlab.datasets.build_dates --check    # exit 1 if the committed file is stale

**dates**: a date written by a person, in one of 5 locales and about 27 ways, to its ISO 8601
form ("Mon 4 Sept 2017" -> "2017-09-04"). Every date lies in 1950-01-01 .. 2049-12-31, a fixed
range, so the data never changes with the day it is built. Dates are rendered with
``babel.dates.format_date`` (Babel pinned below, for its CLDR tables) with the locale's own
short/medium/long/full formats and with explicit CLDR patterns; the year is always ``y`` or
``yy`` (calendar year), never ``Y`` (the week-based year, which writes 2018-12-31 as 2019).
English rows also get ordinal days ("the 4th of September 2017", "September 4th, 2017"), which
Babel does not make. Two-digit years are unambiguous in this range (50-99 -> 19xx, 00-49 -> 20xx).
Every Unicode space (Babel and CLDR use no-break and narrow no-break spaces) becomes a plain
space; accented letters (``févr.``, ``März``) are kept, on purpose.

The split is **by date**, by an MD5 hash of the ISO date: about 80% of the days are train,
10% dev, 10% test, so no dev or test date is ever seen in training, in any form. Each train day
is written once or twice, each dev or test day once, in a (locale, pattern) drawn with a seeded
generator. A row whose day and month are both written as numbers with the day at most 12
("03/04/2017") can be read two ways (the data holds both day-first and month-first patterns);
such dev and test rows go to the splits ``dev_ambiguous`` and ``test_ambiguous`` (reported
apart), while the train split keeps them, as real data would.

**numbers**: a whole number written in digits to English words, US style, without "and"
("40512" -> "forty thousand five hundred twelve"), 1 to 9 digits. The number of digits is drawn
uniformly, then the number; the split is by an MD5 hash of the number. The output grows with
the input (up to 14 words): the task that shows the encoder's bottleneck.

Columns, tab-separated: ``task split locale pattern source target`` (``locale`` and ``pattern`` are
``-`` and ``digits`` for numbers). Babel is BSD-licensed; its CLDR data is under the Unicode
licence; see ``LICENSE-dates.txt``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import random
import re
import sys
import unicodedata
from pathlib import Path

from seqlab.datasets import write_or_check

BABEL_VERSION = "2.18.0"
OUTPUT = Path(__file__).with_name("dates.tsv.xz")
SEED = 6
FIRST, LAST = datetime.date(1950, 1, 1), datetime.date(2049, 12, 31)
LOCALES = ("en_US", "en_GB", "fr_FR", "de_DE", "es_ES")
NAMED = ("short", "medium", "long", "full")  # the locale's own formats
PATTERNS = (
    "d MMMM y", "d MMM y", "dd MMM y", "MMMM d, y", "MMM d, y", "EEEE d MMMM y", "EEEE, MMMM d, y",
    "EEE d MMM y", "EEE, MMM d, y", "d MMMM, y", "MMM dd y", "dd MMMM yy", "d MMM yy", "y MMMM d",
    "dd.MM.y", "dd/MM/y", "d/M/y", "M/d/y", "MM/dd/y", "y/MM/dd", "dd-MM-y", "y-MM-dd",
)
ORDINAL_PATTERNS = ("'the' {o} 'of' MMMM y", "MMMM {o}, y", "EEEE, MMMM {o}, y", "{o} MMM y")  # English only
TRAIN_COPIES = (1, 2)  # each train day is written 1 or 2 times
NUMBER_SPLIT_SIZES = {"train": 30_000, "dev": 1_800, "test": 3_600}
MAX_DIGITS = 9

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen").split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def check_versions() -> None:
    from importlib.metadata import version

    try:
        got = version("Babel")
    except Exception:  # noqa: BLE001 - not installed
        sys.exit(f"build_dates: Babel is not installed; pip install Babel=={BABEL_VERSION}")
    if got != BABEL_VERSION:
        sys.exit(f"build_dates: needs Babel=={BABEL_VERSION}, found {got}; pip install Babel=={BABEL_VERSION}")


def split_of(key: str) -> str:
    bucket = int(hashlib.md5(key.encode("utf-8")).hexdigest(), 16) % 10
    return {8: "dev", 9: "test"}.get(bucket, "train")


def plain_spaces(text: str) -> str:
    """NFC, every Unicode space separator (no-break, narrow no-break, ...) as one ASCII space."""
    text = unicodedata.normalize("NFC", text)
    return " ".join("".join(" " if unicodedata.category(c) == "Zs" else c for c in text).split())


def ordinal(day: int) -> str:
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def numeric_day_and_month(pattern: str) -> bool:
    """Both the day and the month are written as numbers (d or dd, and M or MM but not MMM), the year
    not first (year-first numeric dates are year-month-day in every locale here)."""
    bare = re.sub(r"'[^']*'", "", pattern).strip()
    return not bare.startswith("y") and "d" in bare and re.search(r"(?<!M)M{1,2}(?!M)", bare) is not None


def render(date: datetime.date, locale: str, pattern: str) -> tuple[str, str]:
    """The source text and the CLDR pattern actually used."""
    from babel.dates import format_date, get_date_format

    if pattern in NAMED:
        pattern = get_date_format(pattern, locale=locale).pattern
    if "{o}" in pattern:
        head, tail = pattern.split("{o}")
        parts = [format_date(date, p, locale=locale) if p.strip() else p for p in (head, tail)]
        text = parts[0] + ordinal(date.day) + parts[1]
    else:
        text = format_date(date, pattern, locale=locale)
    return plain_spaces(text), pattern


def choices_for(locale: str) -> list[str]:
    return list(NAMED) + list(PATTERNS) + (list(ORDINAL_PATTERNS) if locale.startswith("en") else [])


def date_rows() -> list[tuple[str, ...]]:
    rng = random.Random(SEED)
    rows = []
    day = FIRST
    while day <= LAST:
        iso = day.isoformat()
        split = split_of(iso)
        copies = rng.choice(TRAIN_COPIES) if split == "train" else 1
        for _ in range(copies):
            locale = rng.choice(LOCALES)
            text, pattern = render(day, locale, rng.choice(choices_for(locale)))
            ambiguous = numeric_day_and_month(pattern) and day.day <= 12 and day.day != day.month
            rows.append(("dates", split + ("_ambiguous" if ambiguous and split != "train" else ""), locale, pattern, text, iso))
        day += datetime.timedelta(days=1)
    return rows


def number_words(n: int) -> str:
    """English words for 0 <= n < 10**9, US style without "and": 40512 -> forty thousand five hundred twelve."""
    if not 0 <= n < 10 ** 9:
        raise ValueError(f"n must be in [0, 10**9), got {n}")
    if n == 0:
        return "zero"

    def below_thousand(k: int) -> list[str]:
        words = []
        if k >= 100:
            words += [ONES[k // 100], "hundred"]
            k %= 100
        if k >= 20:
            words.append(TENS[k // 10])
            k %= 10
        if k:
            words.append(ONES[k])
        return words

    words = []
    for scale, name in ((10 ** 6, "million"), (10 ** 3, "thousand"), (1, "")):
        if n >= scale:
            words += below_thousand(n // scale) + ([name] if name else [])
            n %= scale
    return " ".join(words)


def number_rows() -> list[tuple[str, ...]]:
    rng = random.Random(SEED)
    per_length = {split: -(-size // MAX_DIGITS) for split, size in NUMBER_SPLIT_SIZES.items()}
    taken: dict[str, dict[int, list[int]]] = {s: {k: [] for k in range(1, MAX_DIGITS + 1)} for s in NUMBER_SPLIT_SIZES}
    for digits in range(1, MAX_DIGITS + 1):
        low, high = (0 if digits == 1 else 10 ** (digits - 1)), 10 ** digits - 1
        if high - low < 100_000:  # few numbers of this length: take them all, in order
            pool = range(low, high + 1)
        else:
            pool = (rng.randint(low, high) for _ in range(1_000_000))
        seen = set()
        for n in pool:
            split = split_of(str(n))
            bucket = taken[split][digits]
            if n in seen or len(bucket) >= per_length[split]:
                if all(len(taken[s][digits]) >= per_length[s] for s in taken):
                    break
                continue
            seen.add(n)
            bucket.append(n)
    return [("numbers", split, "-", "digits", str(n), number_words(n))
            for split in NUMBER_SPLIT_SIZES for digits in range(1, MAX_DIGITS + 1) for n in taken[split][digits]]


def build_table() -> str:
    rows = date_rows() + number_rows()
    for row in rows:
        if any("\t" in field or "\n" in field for field in row):
            raise ValueError(f"a field holds a tab or a newline: {row}")
    return "".join("\t".join(row) + "\n" for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    args = parser.parse_args(argv)
    check_versions()
    return write_or_check(OUTPUT, build_table(), check=args.check, script="build_dates", unit="pairs")


if __name__ == "__main__":
    sys.exit(main())
