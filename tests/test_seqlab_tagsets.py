"""seqlab.tagsets (Brown -> universal tags) and seqlab.trellis (the Viterbi trellis explorer)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from seqlab.data import SPLITS, load_brown
from seqlab.tagsets import BROWN_BASE_TO_UNIVERSAL, UNIVERSAL_TAGS, brown_to_universal, universal_tags
from seqlab.trellis import draw_trellis, trellis_explorer, trellis_frame


@pytest.mark.parametrize("tag, expected", [
    ("nn", "NOUN"), ("nn-tl", "NOUN"), ("nn-tl-hl", "NOUN"), ("np$", "NOUN"), ("nns$-tl", "NOUN"),
    ("vbd-hl", "VERB"), ("md*", "VERB"), ("bez*", "VERB"), ("do*-hl", "VERB"), ("ber-n", "VERB"),
    ("ppss+bem", "PRON"), ("pp$", "PRON"), ("pp$$", "PRON"), ("wps+bez-nc", "PRON"),
    ("vb+ppo", "VERB"), ("to+vb", "PRT"), ("in+ppo", "ADP"), ("ex+bez", "DET"),
    ("*", "ADV"), ("*-hl", "ADV"), ("ql", "ADV"), ("wrb", "ADV"),
    ("--", "."), ("---hl", "."), (".-hl", "."), ("``", "."), ("''", "."), ("(", "."), (":-tl", "."),
    ("fw-nn", "X"), ("fw-in+at-tl", "X"), ("fw-*", "X"), ("uh", "X"), ("nil", "X"),
    ("at", "DET"), ("abn", "DET"), ("wdt+bez", "DET"), ("cd-tl", "NUM"), ("od", "ADJ"), ("jjt", "ADJ"),
    ("cc", "CONJ"), ("cs", "ADP"), ("in-tl", "ADP"), ("rp", "PRT"), ("to", "PRT"), ("NN-TL", "NOUN"),
])
def test_brown_to_universal(tag, expected):
    assert brown_to_universal(tag) == expected


def test_every_base_tag_maps_into_the_universal_tagset():
    assert len(UNIVERSAL_TAGS) == 12 == len(set(UNIVERSAL_TAGS))
    assert set(BROWN_BASE_TO_UNIVERSAL.values()) == set(UNIVERSAL_TAGS)


@pytest.mark.parametrize("bad", ["", "zz", "xyz-tl", "$", "+nn"])
def test_unknown_tags_raise(bad):
    with pytest.raises(ValueError):
        brown_to_universal(bad)


def test_non_string_raises():
    with pytest.raises(TypeError):
        brown_to_universal(3)


def test_whole_corpus_maps():
    counts = {}
    for split in SPLITS:
        for sentence in load_brown(split):
            for tag in universal_tags(sentence.tags):
                counts[tag] = counts.get(tag, 0) + 1
    assert set(counts) == set(UNIVERSAL_TAGS)
    total = sum(counts.values())
    assert counts["NOUN"] / total > 0.2 and counts["X"] / total < 0.01


# --- trellis --------------------------------------------------------------------------

def _toy_trellis():
    delta = np.array([[-1.0, -2.0, -5.0], [-3.0, -2.5, -4.0], [-4.0, -6.0, -3.5]])
    back = np.array([[-1, -1, -1], [0, 0, 1], [1, 2, 1]])
    return delta, back


def test_trellis_frame_path_and_edges():
    delta, back = _toy_trellis()
    frame = trellis_frame(delta, back, 2)
    assert frame.best_state == 2
    assert frame.best_path.tolist() == [0, 1, 2]  # 2 at t=2 <- back[2, 2] = 1 <- back[1, 1] = 0
    assert frame.edges.shape == (6, 3)
    assert [tuple(e) for e in frame.edges[:3]] == [(1, 0, 0), (1, 0, 1), (1, 1, 2)]
    np.testing.assert_allclose(frame.scores[1], [-0.5, 0.0, -1.5])
    assert np.nanmax(frame.scores, axis=1).tolist() == [0.0, 0.0, 0.0]


def test_trellis_frame_partial():
    delta, back = _toy_trellis()
    frame = trellis_frame(delta, back, 1)
    assert frame.best_path.tolist() == [0, 1]
    assert np.isnan(frame.scores[2]).all() and not np.isnan(frame.scores[:2]).any()
    assert len(frame.edges) == 3
    start = trellis_frame(delta, back, 0)
    assert start.best_path.tolist() == [0] and start.edges.shape == (0, 3)


def test_trellis_frame_handles_minus_infinity():
    delta = np.array([[0.0, -np.inf], [-1.0, -np.inf]])
    back = np.array([[-1, -1], [0, 0]])
    frame = trellis_frame(delta, back, 1)
    assert frame.best_path.tolist() == [0, 0]
    assert frame.scores[1, 1] == -np.inf


@pytest.mark.parametrize("t", [-1, 3])
def test_trellis_frame_rejects_bad_steps(t):
    delta, back = _toy_trellis()
    with pytest.raises(ValueError):
        trellis_frame(delta, back, t)


def test_trellis_frame_rejects_bad_shapes():
    with pytest.raises(ValueError):
        trellis_frame(np.zeros((3, 2)), np.zeros((3, 3), dtype=int), 0)


def test_draw_and_explorer():
    delta, back = _toy_trellis()
    figure = draw_trellis(trellis_frame(delta, back, 2), ["A", "B", "C"], ["x", "y", "z"])
    assert figure.axes[0].get_ylabel() == "hidden state"
    with pytest.raises(ValueError):
        draw_trellis(trellis_frame(delta, back, 2), ["A", "B"], ["x", "y", "z"])
    calls = []

    def decode(words):
        calls.append(list(words))
        n = len(words)
        return np.tile([-1.0, -2.0, -3.0], (n, 1)), np.vstack([[-1, -1, -1]] + [[0, 0, 0]] * (n - 1))

    box = trellis_explorer(decode, ["A", "B", "C"], initial_sentence="a b c d")
    text, step = box.children[0].children
    assert step.max == 3 and step.value == 3 and calls == [["a", "b", "c", "d"]]
    step.value = 1  # no new decoding for a new step
    assert len(calls) == 1
    text.value = "one two"
    assert step.max == 1 and calls[-1] == ["one", "two"]
