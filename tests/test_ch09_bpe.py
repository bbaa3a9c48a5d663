"""Chapter 9's byte-level BPE: the solution's encoder against tiktoken, round trips, the committed merges, seqlab.tokens.

The reference is tiktoken itself (its Rust byte-pair merge and its regex engine), built offline from the ranks that
``seqlab.datasets.build_gpt2_ranks`` extracted: with GPT-2's ranks it is tiktoken's ``gpt2`` encoding.
"""

from __future__ import annotations

import random
import re
import shutil

import pytest

from course import SOLUTIONS, learner_run, load_definitions, printed_text, reads_learner_run, record
from seqlab import tokens
from seqlab.tokens import (brown_merges, brown_text, brown_word_count, gpt2_ranks, merges_to_ranks, pretokenize,
                           reference_encoding)

CHAPTER = "09-transformer-language-models"
NOTEBOOK = SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb"

# Blocks assigned since early Unicode versions, so tiktoken's regex engine and the `regex` package class them alike.
BLOCKS = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x5D0, 0x5EA), (0x600, 0x6FF),
          (0x900, 0x97F), (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1F64F)]
PIECES = ["the", " of", "'s", "'ll", "'ve", " ", "  ", "\n", "\n\n", "\t", "12", " 2026", "!!", " ...", "naïve", "你好",
          "🙂", "👍🏽", "e\u0301", "\u00a0", "Ünïcödé", "Привет", "مرحبا", "नमस्ते", "カタカナ", "한국어", "''", "``"]


@pytest.fixture(scope="module")
def solution():
    return load_definitions(CHAPTER)


def random_texts(seed: int, count: int) -> list[str]:
    """Strings outside Brown as much as inside it: English pieces, contractions, white-space runs, other scripts, emoji."""
    rng = random.Random(seed)
    texts = []
    for k in range(count):
        if k % 3 == 0:
            texts.append("".join(chr(rng.randint(*rng.choice(BLOCKS))) for _ in range(rng.randint(0, 30))))
        else:
            texts.append("".join(rng.choice(PIECES) for _ in range(rng.randint(0, 15))))
    return texts


def test_solution_encodes_exactly_as_tiktoken_gpt2_on_many_strings(solution):
    ranks, reference = gpt2_ranks(), reference_encoding()
    encode, decode = solution["bpe_encode"], solution["bpe_decode"]
    texts = random_texts(1, 2000) + [brown_text("dev", sentences=200)]
    mismatches = [t for t in texts if encode(t, ranks) != reference.encode(t)]
    assert not mismatches, f"{len(mismatches)} of {len(texts)} differ from tiktoken's gpt2, e.g. {mismatches[:3]!r}"
    assert [decode(reference.encode(t), ranks) for t in texts] == texts
    record("ch09_bpe_tiktoken", strings=len(texts), identical=len(texts) - len(mismatches))


def test_solution_encodes_as_tiktoken_with_brown_ranks_and_round_trips(solution):
    ranks = merges_to_ranks(brown_merges(1024))
    reference = reference_encoding(ranks)
    encode, decode = solution["bpe_encode"], solution["bpe_decode"]
    for text in random_texts(2, 600):
        ids = encode(text, ranks)
        assert ids == reference.encode(text), repr(text)
        assert decode(ids, ranks) == text, repr(text)


def test_solution_decodes_any_ids_as_tiktoken(solution):
    rng, ranks, reference = random.Random(3), gpt2_ranks(), reference_encoding()
    for _ in range(500):  # arbitrary ids: partial characters become U+FFFD as in tiktoken's decode
        ids = [rng.randrange(len(ranks)) for _ in range(rng.randint(0, 10))]
        assert solution["bpe_decode"](ids, ranks) == reference.decode(ids), ids


def test_solution_trainer_equals_the_build_scripts_reference_trainer(solution):
    """The notebook's plain trainer and the build script's incremental one learn the same merges (issue 42, 2)."""
    from seqlab.datasets.build_gpt2_ranks import train_merges

    for text, vocab in [(brown_text("train", sentences=3000), 420), ("".join(random_texts(4, 300)), 400),
                        ("aaaa aaa aa a", 300), ("", 260)]:
        assert solution["bpe_train"](text, vocab) == train_merges(text, vocab - 256)


@reads_learner_run(CHAPTER)
def test_learner_run_learns_the_committed_merges_and_matches_tiktoken():
    run = learner_run(NOTEBOOK)
    assert run.notebook is not None, run.stderr[-2000:]
    text = printed_text(run.notebook)
    assert f"equal to seqlab.tokens.brown_merges({tokens.BROWN_VOCAB_SIZE}): True" in text
    assert "your ids equal tiktoken's with your ranks: True" in text
    assert "every split decodes back to its text exactly: True" in text
    seconds = float(re.search(r"(\d+) merges in ([\d.]+) s of processor time", text).group(2))
    table = re.findall(r"^(Brown|GPT-2 \(web text\))\s+([\d,]+)\s+([\d,]+)\s+([\d.]+)\s+([\d.]+)$", text, re.M)
    bytes_per_token = {int(v.replace(",", "")): float(b) for _, v, _, b, _ in table}
    record("ch09_bpe", train_merges_cpu_seconds=seconds, bytes_per_token=bytes_per_token)
    assert seconds < 40, seconds  # the learner's plain trainer: ~16 s of CPU here
    sizes = sorted(bytes_per_token)
    assert sizes[0] == 256 and bytes_per_token[256] == 1.0 and sizes[-1] == 50257
    assert all(bytes_per_token[a] < bytes_per_token[b] for a, b in zip(sizes, sizes[1:])), bytes_per_token


def test_pretokenize_keeps_every_character_and_cuts_as_gpt2():
    for text in random_texts(5, 300):
        assert "".join(pretokenize(text)) == text
    assert pretokenize("the dog's 2 bones!!  ok\n") == ["the", " dog", "'s", " 2", " bones", "!!", " ", " ok", "\n"]
    with pytest.raises(TypeError, match="str"):
        pretokenize(b"bytes")


def test_gpt2_ranks_are_gpt2s():
    ranks = gpt2_ranks()
    assert len(ranks) == 50256 and sorted(ranks.values()) == list(range(50256))
    assert all(bytes([b]) in ranks for b in range(256))
    encoding = reference_encoding()
    assert encoding.encode("Hello world") == [15496, 995]  # GPT-2's published ids
    assert encoding.decode(encoding.encode("naïve 你好 🙂")) == "naïve 你好 🙂"


def test_brown_text_and_word_count():
    first = brown_text("test", sentences=3)
    assert first.count("\n") == 3 and first == first.lower() and first.endswith("\n")
    assert brown_word_count("test", sentences=3) == len(first.split()) + 3
    assert brown_text("dev", sentences=0) == "" and brown_word_count("dev", sentences=0) == 0
    for bad in [dict(split="valid"), dict(split="test", sentences=-1), dict(split="test", sentences=2.5)]:
        with pytest.raises(ValueError):
            brown_text(**bad)
        with pytest.raises(ValueError):
            brown_word_count(**bad)


def test_brown_merges_and_merges_to_ranks():
    merges = brown_merges()
    assert len(merges) == tokens.BROWN_VOCAB_SIZE - 256 and brown_merges(4096)[: len(merges)] == merges
    ranks = merges_to_ranks(merges)
    assert len(ranks) == tokens.BROWN_VOCAB_SIZE and ranks[b"a"] == 97 and ranks[merges[0][0] + merges[0][1]] == 256
    for bad in [255, 4097, "512", True]:
        with pytest.raises(ValueError, match="vocab_size"):
            brown_merges(bad)
    with pytest.raises(ValueError, match="already has rank"):
        merges_to_ranks([(b"a", b"b"), (b"a", b"b")])
    with pytest.raises(ValueError, match="no earlier merge"):
        merges_to_ranks([(b"ab", b"c")])
    with pytest.raises(ValueError, match="pair of non-empty bytes"):
        merges_to_ranks([("a", "b")])
    with pytest.raises(ValueError, match="256 single bytes"):
        reference_encoding({b"a": 0})


def test_missing_rank_file_is_a_clear_error(monkeypatch, tmp_path):
    from seqlab import data

    monkeypatch.setattr(data, "DATASETS", tmp_path)
    tokens._gpt2_table.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="build_gpt2_ranks"):
            gpt2_ranks()
    finally:
        tokens._gpt2_table.cache_clear()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed (apt-get install npm)")
def test_committed_ranks_and_merges_equal_what_the_build_script_makes():
    from seqlab.datasets import build_gpt2_ranks

    assert build_gpt2_ranks.main(["--check"]) == 0
