"""Build ``names.tsv.xz`` (surnames by origin, first names) from the PyPI package Faker.

Run from the repository root with Faker and Unidecode installed at the versions pinned
below (no network is needed: the names are read from Faker's installed provider modules)::

    python -m seqlab.datasets.build_names            # rewrite the committed file
    python -m seqlab.datasets.build_names --check    # exit 1 if the committed file is stale

The output is a tab-separated text file compressed with xz, one name a line::

    kind  split  label  name

* ``kind`` is ``surname`` or ``first``.
* ``label`` is the origin (``German``, ``Greek``, ...) of a surname, or ``female``, ``male``
  or ``both`` for an English first name.
* ``split`` is ``train``, ``dev`` or ``test`` (about 80/10/10), or ``shared`` for a surname
  that occurs in two or more origins after transliteration ("Martin" is English, French and
  German). A shared surname has no single right answer, so it is kept out of the three
  splits; its label lists every origin, joined by ``|``.

How a name is cleaned: ``unidecode`` transliterates it to ASCII; Chinese syllables are
joined ("Ou Yang" -> "Ouyang"); only letters, spaces, apostrophes and hyphens are kept;
names are compared case-insensitively, the first spelling wins.

How the split is made: by an MD5 hash of a *family key*, the lower-cased name without a
final "a", "i" or "y" and then without a final "ov", "ev" or "in". Male and female forms that some locales list separately
(Ivanov/Ivanova, Novak/Novakova, Kowalski/Kowalska) then fall into the same split, so the
test set never holds the other form of a training name. Each origin keeps at most
``MAX_PER_CLASS`` names, whole families chosen in hash order.

Faker is MIT-licensed; see ``LICENSE-names.txt``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import re
import sys
from collections import defaultdict
from pathlib import Path

from seqlab.datasets import write_or_check

FAKER_VERSION = "40.54.0"
UNIDECODE_VERSION = "1.4.0"

OUTPUT = Path(__file__).with_name("names.tsv.xz")
MAX_PER_CLASS = 500
MIN_PER_CLASS = 150

# origin -> (Faker locale, attribute holding surnames), read in this order
SURNAME_SOURCES: dict[str, list[tuple[str, str]]] = {
    "Arabic": [("fr_DZ", "last_names")],  # Algerian surnames, already in Latin script
    "Armenian": [("hy_AM", "last_names")],
    "Chinese": [("zh_CN", "last_romanized_names"), ("zh_CN", "last_names"), ("zh_TW", "last_names")],
    "Croatian": [("hr_HR", "last_names")],
    "Czech": [("cs_CZ", "last_names_male"), ("cs_CZ", "last_names_female")],
    "Dutch": [("nl_NL", "last_names"), ("nl_BE", "last_names")],
    "English": [("en_US", "last_names"), ("en_GB", "last_names")],
    "Finnish": [("fi_FI", "last_names")],
    "French": [("fr_FR", "last_names"), ("fr_CA", "last_names")],
    "Georgian": [("ka_GE", "last_names")],
    "German": [("de_DE", "last_names"), ("de_AT", "last_names"), ("de_CH", "last_names")],
    "Greek": [("el_GR", "last_names_male"), ("el_GR", "last_names_female")],
    "Indian": [("en_IN", "last_names")],
    "Irish": [("ga_IE", "last_names")],
    "Italian": [("it_IT", "last_names")],
    "Polish": [("pl_PL", "male_last_names"), ("pl_PL", "unisex_last_names")],
    "Russian": [("ru_RU", "last_names_male"), ("ru_RU", "last_names_female")],
    "Spanish": [("es_ES", "last_names"), ("es_MX", "last_names")],
    "Swedish": [("sv_SE", "last_names")],
}
FIRST_NAME_LOCALE = "en"  # US first names, listed by sex

ALLOWED = re.compile(r"^[A-Za-z][A-Za-z' -]*[A-Za-z]$")


def check_versions() -> None:
    from importlib.metadata import version

    for package, wanted in [("Faker", FAKER_VERSION), ("Unidecode", UNIDECODE_VERSION)]:
        try:
            got = version(package)
        except Exception:  # noqa: BLE001 - not installed
            sys.exit(f"build_names: {package} is not installed; pip install {package}=={wanted}")
        if got != wanted:
            sys.exit(f"build_names: needs {package}=={wanted}, found {got}; pip install {package}=={wanted}")


def provider_names(locale: str, attribute: str) -> list[str]:
    """The names of one Faker provider list (a tuple, or a dict of name -> weight)."""
    provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
    return list(getattr(provider, attribute))


def clean(raw: str, *, join_syllables: bool = False) -> str | None:
    """ASCII form of a name, or None if it is not a plain name after transliteration."""
    from unidecode import unidecode

    text = " ".join(unidecode(raw).replace("`", "").split())
    if join_syllables:
        text = text.replace(" ", "").capitalize()
    elif text.islower():
        text = text.capitalize()
    return text if ALLOWED.match(text) else None


def family_key(name: str) -> str:
    """Ivanov/Ivanova -> "ivan", Novak/Novakova -> "novak", Kowalski/Kowalska -> "kowalsk"."""
    key = re.sub(r"[ '-]", "", name.lower())
    key = re.sub(r"[aiy]$", "", key)
    return re.sub(r"(ov|ev|in)$", "", key)


def split_of(key: str) -> str:
    bucket = int(hashlib.md5(key.encode("utf-8")).hexdigest(), 16) % 10
    return {8: "dev", 9: "test"}.get(bucket, "train")


def _rank(key: str) -> str:
    return hashlib.md5(("rank:" + key).encode("utf-8")).hexdigest()


def surname_rows() -> list[tuple[str, str, str, str]]:
    by_origin: dict[str, dict[str, str]] = {}
    for origin, sources in SURNAME_SOURCES.items():
        names: dict[str, str] = {}
        for locale, attribute in sources:
            for raw in provider_names(locale, attribute):
                name = clean(raw, join_syllables=locale.startswith("zh"))
                if name is not None:
                    names.setdefault(name.lower(), name)
        by_origin[origin] = names
    origins_of: dict[str, list[str]] = defaultdict(list)
    for origin, names in by_origin.items():
        for lower in names:
            origins_of[lower].append(origin)
    rows = []
    shared_done = set()
    for origin, names in by_origin.items():
        families: dict[str, list[str]] = defaultdict(list)
        for lower, name in names.items():
            if len(origins_of[lower]) > 1:
                if lower not in shared_done:
                    shared_done.add(lower)
                    rows.append(("surname", "shared", "|".join(origins_of[lower]), name))
                continue
            families[family_key(name)].append(name)
        kept = 0
        for key in sorted(families, key=_rank):
            if kept >= MAX_PER_CLASS:
                break
            for name in sorted(families[key]):
                rows.append(("surname", split_of(key), origin, name))
                kept += 1
        if kept < MIN_PER_CLASS:
            sys.exit(f"build_names: only {kept} surnames for {origin}, need {MIN_PER_CLASS}")
    return rows


def first_name_rows() -> list[tuple[str, str, str, str]]:
    female = {n.lower() for n in map(clean, provider_names(FIRST_NAME_LOCALE, "first_names_female")) if n}
    male = {n.lower() for n in map(clean, provider_names(FIRST_NAME_LOCALE, "first_names_male")) if n}
    rows = []
    for name in sorted(female | male):
        if not name.isalpha():
            continue
        label = "both" if name in female and name in male else ("female" if name in female else "male")
        rows.append(("first", split_of(name), label, name))
    return rows


def build_table() -> str:
    rows = sorted(surname_rows(), key=lambda r: (r[1] == "shared", r[2], r[3])) + first_name_rows()
    return "".join("\t".join(row) + "\n" for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    args = parser.parse_args(argv)
    check_versions()
    return write_or_check(OUTPUT, build_table(), check=args.check, script="build_names", unit="names")

if __name__ == "__main__":
    sys.exit(main())
