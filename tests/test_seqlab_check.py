"""seqlab.check: failures say what is wrong, with a hint, and still count as failures."""

import numpy as np
import pytest

from seqlab.check import CheckFailed, expect, expect_close, expect_equal, expect_raises


def test_expect_passes_and_fails_with_message_and_hint():
    expect(True, "never shown")
    with pytest.raises(CheckFailed) as caught:
        expect(False, "the vocabulary has the wrong size", hint="add <unk>")
    assert str(caught.value) == "the vocabulary has the wrong size\nHint: add <unk>"
    assert isinstance(caught.value, AssertionError), "nbgrader and pytest must see a failed assertion"


def test_jupyter_shows_two_short_lines_instead_of_a_traceback():
    error = CheckFailed("P(b | a) is wrong", hint="divide by c(h)")
    lines = error._render_traceback_()
    assert len(lines) == 2 and "P(b | a) is wrong" in lines[0] and "divide by c(h)" in lines[1]
    assert CheckFailed("only a message")._render_traceback_()[-1].endswith("only a message")


def test_expect_equal_shows_both_values():
    expect_equal([1, 2], [1, 2], "same")
    with pytest.raises(CheckFailed, match=r"counts: expected \{'a': 2\}, got \{'a': 1\}"):
        expect_equal({"a": 1}, {"a": 2}, "counts")
    with pytest.raises(CheckFailed, match="expected"):
        expect_equal(np.zeros(3), np.zeros(2), "arrays of different shapes")


def test_expect_close_scalars_arrays_shapes_none_and_nan():
    expect_close(0.1 + 0.2, 0.3, "sum")
    expect_close([1.0, np.inf], [1.0 + 1e-12, np.inf], "with infinity")
    with pytest.raises(CheckFailed, match="expected 0.5, got 0.25"):
        expect_close(0.25, 0.5, "P")
    with pytest.raises(CheckFailed, match=r"expected shape \(3,\), got shape \(2,\)"):
        expect_close(np.zeros(2), np.zeros(3), "x")
    with pytest.raises(CheckFailed, match="return"):
        expect_close(None, 1.0, "forgot return")
    with pytest.raises(CheckFailed, match="NaN"):
        expect_close([np.nan, 1.0], [0.0, 1.0], "nan")
    with pytest.raises(CheckFailed, match=r"1 of 3 entries differ; at index \(1,\)"):
        expect_close([0.0, 1.0, 2.0], [0.0, 1.5, 2.0], "vector")
    with pytest.raises(CheckFailed, match="expected a number"):
        expect_close("abc", 1.0, "text")


def test_expect_raises():
    error = expect_raises(ValueError, int, "x", what="int('x')")
    assert isinstance(error, ValueError)
    with pytest.raises(CheckFailed, match="nothing was raised"):
        expect_raises(ValueError, int, "3", what="int('3')")
    with pytest.raises(CheckFailed, match="raised KeyError"):
        expect_raises(ValueError, {}.__getitem__, "k", what="lookup")


def test_expect_same_names_the_first_difference_in_nested_values():
    from seqlab.check import expect_same, first_difference

    expect_same([("a", 1), {"k": np.arange(3)}], [("a", 1), {"k": np.arange(3)}], "equal nested values")
    with pytest.raises(CheckFailed, match=r"tags: first difference at \[1\]\[0\]: expected 'DET', got 'NOUN'") as caught:
        expect_same([["DET"], ["NOUN"]], [["DET"], ["DET"]], "tags", hint="back-track")
    assert caught.value.hint == "back-track"
    with pytest.raises(CheckFailed, match=r"at \[2\]: expected 5, got 4"):
        expect_same(np.array([1, 2, 4]), np.array([1, 2, 5]), "array")
    with pytest.raises(CheckFailed, match=r"at  \(length\): expected 3, got 2"):
        expect_same([1, 2], [1, 2, 3], "list")
    with pytest.raises(CheckFailed, match=r"at \['b'\]: expected 2, got '\(missing\)'"):
        expect_same({"a": 1}, {"a": 1, "b": 2}, "dict")
    assert first_difference(np.array([np.nan, 1.0]), np.array([np.nan, 1.0])) is None, "NaN equals NaN here"
    assert first_difference(np.zeros((2, 2)), np.zeros(4)) == (" (shape)", (2, 2), (4,))
    torch = pytest.importorskip("torch")
    assert first_difference(torch.tensor([1.0, 2.0]), np.array([1.0, 3.0])) == ("[1]", 2.0, 3.0)


def test_call_unchanged_returns_the_result_and_catches_changes_in_place():
    from seqlab.check import call_unchanged

    assert call_unchanged(sorted, [3, 1, 2]) == [1, 2, 3]
    with pytest.raises(CheckFailed, match=r"changed its argument 1 in place \(at \[0\]: it was 3, now 1\)"):
        call_unchanged(list.sort, [3, 1, 2])
    with pytest.raises(CheckFailed, match=r"argument scale= in place"):
        call_unchanged(lambda x, scale: scale.__imul__(2), 1, scale=np.ones(2))
    rng = np.random.default_rng(0)
    call_unchanged(lambda g: g.random(), rng)  # drawing from a generator changes it, as it should


def test_passed_prints_one_plain_line_to_stdout_that_says_these_were_the_visible_checks(capsys):
    from seqlab.check import passed

    assert passed("build_vocab: the toy corpus, min_count=2") is None
    out, err = capsys.readouterr()
    assert err == "", "a test cell must never write to stderr (nbgrader zeroes the cell)"
    assert out == "✓ build_vocab: the toy corpus, min_count=2 (visible checks passed; hidden tests run at grading)\n"
    assert "\x1b" not in out and "<" not in out, "plain text: no colour codes, no HTML"


def test_call_named_names_the_call_in_every_failure():
    from seqlab.check import call_named

    assert call_named("len of a list", len, [1, 2]) == 2
    with pytest.raises(CheckFailed, match=r"^mean of \[\]: raised ZeroDivisionError: division by zero") as failed:
        call_named("mean of []", lambda xs: sum(xs) / len(xs), [], hint="an empty list has no mean")
    assert failed.value.hint == "an empty list has no mean" and failed.value.__cause__ is None

    def append_in_place(xs):
        xs.append(0)
        return xs

    with pytest.raises(CheckFailed, match=r"^append to \[1\]: the call changed its argument 1 in place"):
        call_named("append to [1]", append_in_place, [1])
    assert call_named("append to [1]", append_in_place, [1], unchanged=False) == [1, 0]


def test_load_random_parameters_loads_seeded_values_of_the_models_shapes_and_names_a_wrong_layer():
    import torch
    from torch import nn

    from seqlab.check import load_random_parameters

    model = nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    chosen = load_random_parameters(model, seed=5, shapes={"weight": (2, 3), "bias": (2,)})
    assert torch.equal(model.weight, chosen["weight"]) and torch.equal(model.bias, chosen["bias"])
    assert chosen["weight"].abs().min() > 0, "every parameter random, none left at 0"
    again = load_random_parameters(nn.Linear(3, 2), seed=5)
    assert all(torch.equal(again[k], chosen[k]) for k in chosen), "the same seed, the same values"
    with pytest.raises(CheckFailed, match="names and shapes"):
        load_random_parameters(nn.Linear(3, 4), seed=5, shapes={"weight": (2, 3), "bias": (2,)})
