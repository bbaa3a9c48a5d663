"""autograder/policy.py: the term's policy file (due dates, late penalty, extensions, visibility), read alone.

The end-to-end run (grade.py on an LMS export with this policy) is tests/test_autograder_term.py."""

from __future__ import annotations

import datetime as dt
import sys

import pytest

from course import REPO

sys.path.insert(0, str(REPO / "autograder"))
from policy import Policy, PolicyError, for_workspace, from_toml, parse_time  # noqa: E402

CH1, CH2 = "01-ngram-language-models", "02-hidden-markov-models"
CHAPTERS = [CH1, CH2, "03-recurrent-neural-networks"]
UTC = dt.timezone.utc
POLICY = f"""
timezone = "Europe/Berlin"
[late]
percent_per_day = 10
cap_percent = 30
grace_minutes = 15
last_accepted_days = 7
[chapters."{CH1}"]
due = 2026-10-05T23:59:00
[chapters."{CH2}"]
due = 2026-10-12
[extensions.alice]
"{CH1}" = 3
[extensions.bob]
"{CH2}" = 2026-10-20T12:00:00Z
"""


def at(text: str) -> dt.datetime:
    return parse_time(text)


@pytest.fixture(scope="module")
def policy() -> Policy:
    return from_toml(POLICY, "policy.toml", CHAPTERS)


def test_due_dates_are_read_in_the_course_time_zone_and_a_date_is_due_at_its_end(policy):
    assert policy.due(CH1, "carol") == dt.datetime(2026, 10, 5, 21, 59, tzinfo=UTC)  # Berlin is UTC+2 in October
    assert policy.due(CH2, "carol") == dt.datetime(2026, 10, 12, 21, 59, 59, tzinfo=UTC)
    assert policy.due("03-recurrent-neural-networks", "carol") is None


def test_extensions_in_days_or_as_a_date_replace_the_students_own_due_date_only(policy):
    assert policy.due(CH1, "alice") == policy.due(CH1, "carol") + dt.timedelta(days=3)
    assert policy.due(CH2, "bob") == dt.datetime(2026, 10, 20, 12, tzinfo=UTC)
    assert policy.due(CH2, "alice") == policy.due(CH2, "carol")


def test_on_time_within_grace_and_unknown_times_cost_nothing(policy):
    due = policy.due(CH1, "carol")
    for moment in (due, due + dt.timedelta(minutes=15)):
        assert policy.penalty(CH1, "carol", moment).fraction == 0.0
    assert policy.penalty(CH1, "carol", None).fraction == 0.0
    assert policy.penalty("03-recurrent-neural-networks", "carol", at("2030-01-01T00:00Z")).fraction == 0.0


def test_each_started_day_costs_the_rate_up_to_the_cap(policy):
    due = policy.due(CH1, "carol")
    one = policy.penalty(CH1, "carol", due + dt.timedelta(minutes=16))
    assert (one.days_late, one.fraction) == (1, 0.10)
    assert "1 started day after the due date 2026-10-05 21:59 UTC: 10% off at 10% per day" in one.reason
    two = policy.penalty(CH1, "carol", due + dt.timedelta(days=1, seconds=1))
    assert (two.days_late, two.fraction) == (2, 0.20)
    five = policy.penalty(CH1, "carol", due + dt.timedelta(days=4, hours=1))
    assert (five.days_late, five.fraction) == (5, 0.30) and "30% off (the cap)" in five.reason
    assert five.applied_to(20.0) == 14.0


def test_after_the_last_accepted_time_a_submission_scores_zero(policy):
    due = policy.due(CH1, "carol")
    gone = policy.penalty(CH1, "carol", due + dt.timedelta(days=7, minutes=1))
    assert gone.fraction == 1.0 and gone.applied_to(20.0) == 0.0 and "not accepted" in gone.reason


def test_an_extended_student_is_late_only_after_the_extension(policy):
    due = policy.due(CH1, "carol")
    assert policy.penalty(CH1, "alice", due + dt.timedelta(days=2)).fraction == 0.0
    late = policy.penalty(CH1, "alice", due + dt.timedelta(days=3, hours=1))
    assert late.fraction == 0.10 and "your extended due date" in late.reason


def test_a_time_without_offset_is_read_in_the_course_time_zone(policy):
    # a zip member's time: 23:59 in Berlin is on time, 00:30 the next day (22:30 UTC) is late
    assert policy.penalty(CH1, "carol", dt.datetime(2026, 10, 5, 23, 59)).fraction == 0.0
    assert policy.penalty(CH1, "carol", dt.datetime(2026, 10, 6, 0, 30)).fraction == 0.10


def test_an_lms_late_flag_without_a_time_is_charged_one_day(policy):
    flagged = policy.penalty(CH1, "carol", None, flagged_late=True)
    assert flagged.fraction == 0.10 and "marked it late" in flagged.reason
    assert policy.penalty("03-recurrent-neural-networks", "carol", None, flagged_late=True).fraction == 0.0


def test_hidden_verdicts_are_shown_after_the_students_own_due_date(policy):
    due = policy.due(CH1, "carol")
    assert not policy.shows_hidden_verdicts(CH1, "carol", due - dt.timedelta(minutes=1))
    assert policy.shows_hidden_verdicts(CH1, "carol", due + dt.timedelta(minutes=1))
    assert not policy.shows_hidden_verdicts(CH1, "alice", due + dt.timedelta(days=1))
    assert policy.shows_hidden_verdicts("03-recurrent-neural-networks", "carol", due)
    assert "2026-10-05 21:59 UTC" in policy.visibility_note(CH1, "carol")
    never = from_toml('[visibility]\nhidden_verdicts = "never"')
    assert not never.shows_hidden_verdicts(CH1, "carol", at("2099-01-01T00:00Z"))
    assert from_toml('[visibility]\nhidden_verdicts = "always"').shows_hidden_verdicts(CH1, "carol", at("2000-01-01T00:00Z"))


def test_no_policy_file_means_no_due_dates_and_everything_shown(tmp_path):
    policy = for_workspace(tmp_path)
    assert policy.due(CH1, "carol") is None and policy.penalty(CH1, "carol", at("2099-01-01T00:00Z")).fraction == 0
    assert policy.shows_hidden_verdicts(CH1, "carol")
    (tmp_path / "policy.toml").write_text(POLICY)
    assert for_workspace(tmp_path).due(CH1, "carol") is not None


def test_nbgraders_timestamp_and_iso_times_parse():
    assert parse_time("2026-10-05 21:00:00.000000 UTC") == dt.datetime(2026, 10, 5, 21, tzinfo=UTC)
    assert parse_time("2026-10-05T23:00:00+02:00") == dt.datetime(2026, 10, 5, 21, tzinfo=UTC)


@pytest.mark.parametrize("text, words", [
    ("due = 3", "unknown key(s) ['due']"),
    ("[late]\npercent_per_day = 150", "late.percent_per_day: expected a number from 0 to 100"),
    ("[late]\nper_day = 10", "unknown key(s) ['per_day'] in [late]"),
    ('timezone = "Mars/Olympus"', "no IANA time zone"),
    ('[chapters."99-nope"]\ndue = 2026-10-05', "which the course does not have"),
    (f'[chapters."{CH1}"]\ndue = "next week"', "is not a date and time"),
    (f'[extensions.alice]\n"{CH2}" = 3', "needs the chapter's due date"),
    ('[visibility]\nhidden_verdicts = "sometimes"', "must be one of after_due, always, never"),
    ("[late\n", "is not valid TOML"),
])
def test_a_bad_policy_is_a_clear_error(text, words):
    with pytest.raises(PolicyError) as error:
        from_toml(text, "policy.toml", CHAPTERS)
    assert words in str(error.value), str(error.value)


def run(script: str, *args: str):
    import subprocess

    return subprocess.run([sys.executable, str(REPO / "autograder" / script), *args], capture_output=True, text=True,
                          timeout=300)


def test_grade_py_and_lms_py_refuse_bad_input_with_the_reason_and_no_traceback(tmp_path):
    bad = tmp_path / "policy.toml"
    bad.write_text('[chapters."99-nope"]\ndue = 2026-10-05\n')
    refused = {"which the course does not have": run("grade.py", str(tmp_path / "ws"), "--policy", str(bad),
                                                     "--allow-unsandboxed", "--no-progress"),
               "'tomorrow' is not a date and time": run("grade.py", str(tmp_path / "ws"), "--now", "tomorrow",
                                                        "--allow-unsandboxed", "--no-progress"),
               "cannot read the grades file": run("lms.py", "export", "canvas", str(tmp_path / "ws"))}
    for words, done in refused.items():
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "ws").exists()  # refused before the workspace is made
