"""The course's term policy: due dates, the late-penalty rule, per-student extensions, and when feedback shows the
hidden tests' verdicts. One small module that grade.py, feedback pages and the submission service read alike.

The policy is a TOML file, WORKSPACE/policy.toml or the file given to ``grade.py --policy``::

    timezone = "Europe/Berlin"          # how dates without an offset (and a zip file's times) are read; default UTC

    [late]
    percent_per_day = 10                # of the chapter's points, per started day after the due date
    cap_percent = 50                    # never more than this (default 100)
    grace_minutes = 15                  # submissions this late count as on time (default 0)
    last_accepted_days = 7              # after due + 7 days a submission scores 0 (default: always accepted)

    [chapters."01-ngram-language-models"]
    due = 2026-10-05T23:59:00           # a TOML date-time (with or without an offset) or a date (its end, 23:59:59)

    [extensions.alice_1234]             # the student id as grades.csv shows it
    "01-ngram-language-models" = 2026-10-08T23:59:00    # a new due date, or a number of days: = 3

    [visibility]
    hidden_verdicts = "after_due"       # "after_due" (default), "always" or "never"

Before a student's own due date (the chapter's, or their extension) their feedback shows the visible checks only;
after it, also the hidden tests' verdicts (never their code). A chapter the policy does not name has no due date: no
penalty, and its hidden verdicts are shown. The penalty is applied to the graded score when the reports are written,
never inside a grading job, so changing a due date and running grade.py again recomputes it without grading again.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import tomllib
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAY = dt.timedelta(days=1)
VISIBILITY = ("after_due", "always", "never")
LATE_KEYS = {"percent_per_day", "cap_percent", "grace_minutes", "last_accepted_days"}
TOP_KEYS = {"timezone", "late", "chapters", "extensions", "visibility"}


class PolicyError(ValueError):
    """A policy file that cannot be used, with the place and the reason in the message."""


@dataclasses.dataclass(frozen=True)
class Penalty:
    """What lateness costs one submission: the fraction of its score lost (1.0: not accepted) and why, in words."""

    days_late: int = 0
    fraction: float = 0.0
    reason: str = ""
    due: dt.datetime | None = None
    submitted: dt.datetime | None = None

    def applied_to(self, score: float) -> float:
        return round(score * (1.0 - self.fraction), 4)


@dataclasses.dataclass(frozen=True)
class Policy:
    timezone: dt.tzinfo = dt.timezone.utc
    due_dates: dict[str, dt.datetime] = dataclasses.field(default_factory=dict)
    extensions: dict[str, dict[str, dt.datetime]] = dataclasses.field(default_factory=dict)
    percent_per_day: float = 0.0
    cap_percent: float = 100.0
    grace: dt.timedelta = dt.timedelta(0)
    last_accepted: dt.timedelta | None = None
    hidden_verdicts: str = "after_due"
    source: str = "(no policy)"

    def due(self, chapter: str, student: str | None = None) -> dt.datetime | None:
        """The student's due date for the chapter: their extension where they have one, else the chapter's."""
        if student is not None and chapter in self.extensions.get(student, {}):
            return self.extensions[student][chapter]
        return self.due_dates.get(chapter)

    def extended(self, chapter: str, student: str) -> bool:
        return chapter in self.extensions.get(student, {})

    def local(self, naive: dt.datetime) -> dt.datetime:
        """A time without an offset (a zip member's, a TOML local date-time) read in the course's time zone, as UTC."""
        return naive.replace(tzinfo=self.timezone).astimezone(dt.timezone.utc) if naive.tzinfo is None \
            else naive.astimezone(dt.timezone.utc)

    def penalty(self, chapter: str, student: str, submitted: dt.datetime | None, flagged_late: bool = False) -> Penalty:
        """The penalty of one submission. ``submitted``: when it was handed in (None: unknown); ``flagged_late``: the LMS
        marked it late (Canvas's LATE) — used only where the time is unknown, and then charged as one started day."""
        due = self.due(chapter, student)
        whose = "your extended due date" if self.extended(chapter, student) else "the due date"
        if due is None:
            return Penalty(submitted=submitted)
        if submitted is None:
            if not flagged_late:
                return Penalty(due=due)
            days = 1
            late_by = "the LMS marked it late and the export gives no submission time; charged as 1 started day"
        else:
            submitted = self.local(submitted)
            over = submitted - due
            if over <= self.grace:
                return Penalty(due=due, submitted=submitted)
            if self.last_accepted is not None and over > self.last_accepted:
                return Penalty(math.ceil(over / DAY), 1.0,
                               f"submitted {stamp(submitted)}, after the last accepted time {stamp(due + self.last_accepted)} "
                               f"({whose} {stamp(due)} + {days_text(self.last_accepted)}): not accepted, 0 points",
                               due, submitted)
            days = math.ceil(over / DAY)
            late_by = f"submitted {stamp(submitted)}, {days} started day{'s' if days != 1 else ''} after {whose} {stamp(due)}"
        percent = min(self.cap_percent, days * self.percent_per_day)
        capped = " (the cap)" if percent == self.cap_percent and days * self.percent_per_day > self.cap_percent else ""
        return Penalty(days, percent / 100.0,
                       f"{late_by}: {percent:g}% off{capped} at {self.percent_per_day:g}% per day", due, submitted)

    def shows_hidden_verdicts(self, chapter: str, student: str, now: dt.datetime | None = None) -> bool:
        """Whether the student's feedback for the chapter may show the hidden tests' verdicts at ``now``."""
        if self.hidden_verdicts != "after_due":
            return self.hidden_verdicts == "always"
        due = self.due(chapter, student)
        return due is None or (now or utc_now()) > due

    def visibility_note(self, chapter: str, student: str) -> str:
        """What a student's feedback says in place of a hidden verdict it does not show yet."""
        due = self.due(chapter, student)
        if self.hidden_verdicts == "never" or due is None:
            return "the hidden tests' verdicts are not shown in feedback in this course"
        return f"the hidden tests' verdicts are shown after the due date ({stamp(due)})"


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def timestamp_text(moment: dt.datetime) -> str:
    """nbgrader's timestamp.txt for a moment (parse_time reads it back); grade.py writes one for a zip's notebooks,
    the submission service for each exported submission."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def days_text(span: dt.timedelta) -> str:
    days = span / DAY
    return f"{days:g} day{'s' if days != 1 else ''}"


def parse_time(text: str, timezone: dt.tzinfo = dt.timezone.utc) -> dt.datetime:
    """An ISO time (as --now, nbgrader's timestamp.txt "2026-10-05 12:00:00.000000 UTC", or TOML's) as UTC."""
    cleaned = text.strip().removesuffix(" UTC").removesuffix("Z")
    try:
        moment = dt.datetime.fromisoformat(cleaned)
    except ValueError:
        raise PolicyError(f"{text!r} is not a date and time (write it as 2026-10-05T23:59:00, with an optional "
                          "offset such as +02:00)") from None
    if text.strip().endswith(("Z", " UTC")) and moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.replace(tzinfo=timezone).astimezone(dt.timezone.utc) if moment.tzinfo is None \
        else moment.astimezone(dt.timezone.utc)


def _moment(value, where: str, timezone: dt.tzinfo) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=timezone).astimezone(dt.timezone.utc) if value.tzinfo is None \
            else value.astimezone(dt.timezone.utc)
    if isinstance(value, dt.date):  # a whole day: due at its end
        return dt.datetime.combine(value, dt.time(23, 59, 59), timezone).astimezone(dt.timezone.utc)
    if isinstance(value, str):
        try:
            return parse_time(value, timezone)
        except PolicyError as error:
            raise PolicyError(f"{where}: {error}") from None
    raise PolicyError(f"{where}: expected a date and time, got {value!r}")


def _number(value, where: str, low: float = 0.0, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise PolicyError(f"{where}: expected a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def _table(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise PolicyError(f"{where}: expected a table ([{where}]), got {value!r}")
    return value


def from_toml(text: str, source: str = "policy.toml", chapters: list[str] | None = None) -> Policy:
    """The policy in a TOML text; ``chapters``: the course's chapters, so that a misspelt chapter is an error."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PolicyError(f"{source} is not valid TOML: {error}") from None
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise PolicyError(f"{source}: unknown key(s) {unknown}; a policy has {sorted(TOP_KEYS)}")
    name = raw.get("timezone", "UTC")
    try:
        timezone = dt.timezone.utc if name == "UTC" else ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        raise PolicyError(f"{source}: timezone {name!r} is no IANA time zone (e.g. \"UTC\", \"Europe/Berlin\")") from None
    late = _table(raw.get("late", {}), "late")
    if set(late) - LATE_KEYS:
        raise PolicyError(f"{source}: unknown key(s) {sorted(set(late) - LATE_KEYS)} in [late]; it has {sorted(LATE_KEYS)}")

    def known(chapter: str, where: str) -> str:
        if chapters is not None and chapter not in chapters:
            raise PolicyError(f"{source}: {where} names the chapter {chapter!r}, which the course does not have "
                              f"(its chapters: {', '.join(chapters)})")
        return chapter

    due_dates = {}
    for chapter, entry in _table(raw.get("chapters", {}), "chapters").items():
        entry = _table(entry, f"chapters.\"{chapter}\"")
        if set(entry) != {"due"}:
            raise PolicyError(f"{source}: [chapters.\"{chapter}\"] must hold exactly one key, due")
        due_dates[known(chapter, "[chapters]")] = _moment(entry["due"], f"{source}: chapters.\"{chapter}\".due", timezone)
    extensions: dict[str, dict[str, dt.datetime]] = {}
    for student, entry in _table(raw.get("extensions", {}), "extensions").items():
        for chapter, value in _table(entry, f"extensions.{student}").items():
            where = f"{source}: extensions.{student}.\"{chapter}\""
            known(chapter, f"extensions.{student}")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if chapter not in due_dates:
                    raise PolicyError(f"{where}: an extension in days needs the chapter's due date in [chapters]")
                extensions.setdefault(student, {})[chapter] = due_dates[chapter] + _number(value, where, 0, 3650) * DAY
            else:
                extensions.setdefault(student, {})[chapter] = _moment(value, where, timezone)
    visibility = _table(raw.get("visibility", {}), "visibility")
    if set(visibility) - {"hidden_verdicts"}:
        raise PolicyError(f"{source}: [visibility] has one key, hidden_verdicts")
    hidden = visibility.get("hidden_verdicts", "after_due")
    if hidden not in VISIBILITY:
        raise PolicyError(f"{source}: visibility.hidden_verdicts is {hidden!r}; it must be one of {', '.join(VISIBILITY)}")
    last = late.get("last_accepted_days")
    return Policy(timezone=timezone, due_dates=due_dates, extensions=extensions,
                  percent_per_day=_number(late.get("percent_per_day", 0), f"{source}: late.percent_per_day", 0, 100),
                  cap_percent=_number(late.get("cap_percent", 100), f"{source}: late.cap_percent", 0, 100),
                  grace=dt.timedelta(minutes=_number(late.get("grace_minutes", 0), f"{source}: late.grace_minutes", 0)),
                  last_accepted=None if last is None else _number(last, f"{source}: late.last_accepted_days", 0) * DAY,
                  hidden_verdicts=hidden, source=source)


def load(path: Path, chapters: list[str] | None = None) -> Policy:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyError(f"cannot read the policy file {path}: {getattr(error, 'strerror', None) or error}") from None
    return from_toml(text, str(path), chapters)


def for_workspace(workspace: Path, explicit: Path | None = None, chapters: list[str] | None = None) -> Policy:
    """The policy in force: the file given, else WORKSPACE/policy.toml, else none (no due dates, everything shown)."""
    if explicit is not None:
        return load(explicit, chapters)
    default = workspace / "policy.toml"
    return load(default, chapters) if default.exists() else Policy()
