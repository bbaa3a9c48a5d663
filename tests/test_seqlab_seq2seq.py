"""seqlab's dates/numbers data, seq2seq plumbing and beam-tree explorer (shared by chapters 6-8)."""

from __future__ import annotations

import datetime
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from course import REPO
from seqlab import beamtree, seq2seq
from seqlab.dates import DATE_SPLITS, LOCALES, load_dates, load_numbers, locale_counts, number_words


def test_dates_cover_the_range_locales_and_patterns():
    rows = [p for split in DATE_SPLITS for p in load_dates(split)]
    days = {p.target for p in rows}
    assert min(days) == "1950-01-01" and max(days) == "2049-12-31" and len(days) == 36525
    assert {p.locale for p in rows} == set(LOCALES)
    patterns = {p.pattern for p in rows}
    assert len(patterns) >= 20
    assert not any("Y" in re.sub(r"'[^']*'", "", pattern) for pattern in patterns), "the week-based year Y must never be used"
    assert all(datetime.date.fromisoformat(p.target) for p in rows[::97])
    assert any(ord(ch) > 127 for p in rows for ch in p.source), "accented letters are kept"
    assert not any(ch in p.source for p in rows for ch in "\u00a0\u202f\t"), "Unicode spaces become plain spaces"
    assert all(count > 500 for count in locale_counts("test").values())


def test_dates_are_split_by_date_and_ambiguous_numeric_dates_kept_apart():
    days = {split: {p.target for p in load_dates(split)} for split in DATE_SPLITS}
    held_out = days["dev"] | days["dev_ambiguous"] | days["test"] | days["test_ambiguous"]
    assert not days["train"] & held_out
    assert not (days["dev"] | days["dev_ambiguous"]) & (days["test"] | days["test_ambiguous"])
    for p in load_dates("test_ambiguous"):
        day, month = int(p.target[8:]), int(p.target[5:7])
        assert day <= 12 and day != month
    numeric = re.compile(r"^\d{1,2}[./-]\d{1,2}[./-]\d{2,4}$")
    for p in load_dates("test"):
        if numeric.match(p.source):
            assert int(p.target[8:]) > 12 or int(p.target[8:]) == int(p.target[5:7]), p


def test_numbers_task():
    assert number_words(0) == "zero"
    assert number_words(40512) == "forty thousand five hundred twelve"
    assert number_words(100_000_001) == "one hundred million one"
    assert len(number_words(999_999_999).split()) == 14  # the longest output
    splits = {s: load_numbers(s) for s in ("train", "dev", "test")}
    assert not {p.source for p in splits["train"]} & {p.source for p in splits["test"]}
    assert {len(p.source) for p in splits["test"]} >= set(range(2, 10))  # 0-9: too few to fill every split
    assert all(number_words(int(p.source)) == p.target for p in splits["dev"])


@pytest.mark.slow
def test_dates_file_rebuilds_byte_for_byte():
    pytest.importorskip("babel")
    done = subprocess.run([sys.executable, "-m", "seqlab.datasets.build_dates", "--check"], capture_output=True, text=True,
                          cwd=REPO / "helpers")
    assert done.returncode == 0, done.stdout + done.stderr


def test_vocab_and_batches():
    v = seq2seq.Vocab.build([["b", "a", "b"], ["c"]])
    assert v.tokens[:4] == list(seq2seq.SPECIALS) and v.tokens[4] == "b"
    assert v.encode(["a", "z"]) == [v.index["a"], seq2seq.UNK]
    assert v.decode([seq2seq.BOS, 4, 5, seq2seq.EOS, 6]) == ["b", v.tokens[5]]
    batch = seq2seq.make_batch([[4, 5], [6]], [[7], []])
    assert batch.tgt_in.tolist() == [[1, 7], [1, 0]] and batch.tgt_out.tolist() == [[7, 2], [2, 0]]
    data = [([4] * (i % 5 + 1), [5] * (i % 3)) for i in range(50)]
    seen = [b for b in seq2seq.batches(data, 8, torch.Generator().manual_seed(0))]
    assert sum(len(b.src) for b in seen) == 50


class Table:
    """P(next | prefix) from a seeded hash of the prefix; state (B, 1 + 20) as in chapter 6's PrefixModel."""

    def __init__(self, V=7, seed=0):
        self.V, self.seed = V, seed

    def start(self):
        return torch.zeros(1, 21, dtype=torch.float64)

    def step(self, prev, state):
        state = state.clone()
        rows = []
        for b in range(len(prev)):
            n = int(state[b, 0])
            if int(prev[b]) != seq2seq.BOS:
                state[b, 1 + n], state[b, 0] = float(prev[b]), n + 1
                n += 1
            logits = 2 * np.random.default_rng([self.seed, n, *state[b, 1:1 + n].long().tolist()]).normal(size=self.V)
            logits[seq2seq.EOS] += 0.5 * n - 1
            logits[:2] = -1e4
            rows.append(logits - np.logaddexp.reduce(logits))
        return torch.tensor(np.stack(rows)), state


@pytest.mark.parametrize("seed", range(5))
def test_beam_tree_agrees_with_beam_search(seed):
    for width, alpha in [(1, 0.0), (3, 0.0), (3, 1.0)]:
        model = Table(seed=seed)
        tree = beamtree.beam_tree(model.step, model.start(), width, alpha, max_len=10)
        hyps = seq2seq.beam_search(model.step, model.start(), beam_width=width, max_len=10, alpha=alpha)
        finished = sorted((list(n.tokens), round(n.score, 9)) for n in tree.nodes if n.status == "finished")
        assert finished == sorted((h.tokens, round(h.score, 9)) for h in hyps)
        assert list(tree.nodes[tree.best].tokens) == hyps[0].tokens
        if width == 1:
            kept = [n for n in tree.nodes if n.status in ("kept", "finished")]
            assert len(kept) == max(n.step for n in tree.nodes), "width 1 keeps one node a step"


def test_alpha_changes_the_choice_not_the_tree():
    model = Table(seed=3)
    a = beamtree.beam_tree(model.step, model.start(), 3, 0.0, max_len=10)
    b = beamtree.beam_tree(model.step, model.start(), 3, 1.5, max_len=10)
    assert [(n.tokens, n.status) for n in a.nodes] == [(n.tokens, n.status) for n in b.nodes]


def test_beam_tree_figure_and_widget_build():
    import matplotlib

    matplotlib.use("Agg")
    model = Table(seed=1)
    tree = beamtree.beam_tree(model.step, model.start(), 2, 0.5, max_len=6)
    figure = beamtree.draw_beam_tree(tree, [str(i) for i in range(7)], title="t")
    assert figure.axes
    box = beamtree.beam_tree_explorer({"x": lambda: (model.step, model.start())}, [str(i) for i in range(7)], max_len=6)
    assert len(box.children) == 3  # the controls, the figure, the figure as text (issue 47)
    with pytest.raises(ValueError):
        beamtree.beam_tree(model.step, model.start(), 0)


def test_select_state_and_decode_helpers():
    state = (torch.arange(6).reshape(3, 2), {"h": torch.arange(3)}, None)
    picked = seq2seq.select_state(state, torch.tensor([2, 0]))
    assert picked[0].tolist() == [[4, 5], [0, 1]] and picked[1]["h"].tolist() == [2, 0] and picked[2] is None
    assert seq2seq.exact_match(["a", "b"], ["a", "c"]) == 0.5
    assert seq2seq.accuracy_by_length(["a", "bb", "cc"], ["a", "bb", "xx"], [1, 2, 2]) == {1: 1.0, 2: 0.5}
    table = seq2seq.comparison_table([seq2seq.ComparisonRow("GRU seq2seq", 1234, 10.0, 0.5, 0.25)])
    assert "GRU seq2seq" in table and "50.0%" in table
