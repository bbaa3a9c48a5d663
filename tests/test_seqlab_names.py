"""Unit tests of seqlab.names (the surnames and first names) and of its build script."""

import subprocess
import sys
from collections import Counter

import pytest

import seqlab.data as data_module
import seqlab.names as names_module
from seqlab.names import SPLITS, Name, class_sizes, load_names, names_path, surname_origins
from course import REPO


def test_origins_are_many_and_big_enough():
    origins = surname_origins()
    assert len(origins) >= 10
    sizes = class_sizes("surnames")
    assert set(sizes) == set(origins)
    for origin, by_split in sizes.items():
        assert sum(by_split.values()) >= 150, origin
        assert by_split["train"] > by_split["dev"] > 0 and by_split["test"] > 0, origin


def test_records_and_order():
    train = load_names("surnames", "train")
    assert isinstance(train[0], Name) and train[0].text and train[0].label
    assert load_names("surnames", "train") == train  # deterministic
    assert load_names("surnames", "train") is not load_names("surnames", "train")  # a new list each time
    assert all(n.text.isascii() for n in train)


def test_splits_are_disjoint_and_shared_names_are_apart():
    seen = {}
    for split in SPLITS:
        for n in load_names("surnames", split):
            key = n.text.lower()
            assert key not in seen, f"{n.text} in {split} and {seen[key]}"
            seen[key] = split
    shared = load_names("surnames", "shared")
    assert shared and all("|" in n.label for n in shared)


def test_male_and_female_forms_share_a_split():
    split_of = {n.text: s for s in ("train", "dev", "test") for n in load_names("surnames", s)}
    pairs = [(m, m + "a") for m in split_of if m.endswith("ov") and m + "a" in split_of]
    assert len(pairs) > 20
    assert all(split_of[m] == split_of[f] for m, f in pairs)


def test_first_names():
    first = load_names("first", "train")
    assert len(first) > 4000
    assert all(n.text.isalpha() and n.text.islower() for n in first)
    assert set(Counter(n.label for n in first)) == {"female", "male", "both"}
    assert sum(len(load_names("first", s)) for s in ("dev", "test")) > 800


@pytest.mark.parametrize("args, message", [
    (("surname", "train"), "kind must be one of"),
    (("surnames", "validation"), "split must be one of"),
    (("first", "shared"), "only for surnames"),
])
def test_bad_arguments_raise_clear_errors(args, message):
    with pytest.raises(ValueError, match=message):
        load_names(*args)


def test_a_missing_file_says_how_to_rebuild(tmp_path, monkeypatch):
    monkeypatch.setattr(data_module, "DATASETS", tmp_path)
    names_module._table.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="build_names"):
            load_names("surnames", "train")
    finally:
        monkeypatch.undo()
        names_module._table.cache_clear()
    assert names_path().is_file()


@pytest.mark.slow
def test_build_script_check_mode_agrees_with_the_committed_file():
    done = subprocess.run([sys.executable, "-m", "seqlab.datasets.build_names", "--check"],
                          cwd=REPO / "helpers", capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "up to date" in done.stdout
