"""grade.collect with the LMS's own names (issue 44, 1), without grading: Canvas's "Download Submissions" files and
Moodle's "Download all submissions" folders become one id per student, the identity and Canvas's late flags are
kept, a zip member's time becomes the submission time, and two Moodle students of one name are never merged.
(Grading such an export end to end, and the import CSVs: tests/test_autograder_term.py.)"""

from __future__ import annotations

import datetime as dt
import io
import sys
import zipfile

from course import REPO

sys.path.insert(0, str(REPO / "autograder"))
from grade import collect  # noqa: E402
from lms import canvas_file, moodle_folder  # noqa: E402
from policy import parse_time  # noqa: E402

CH6, CH7 = "06-seq2seq-beam-search-bleu", "07-attention"
NB = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}'


def test_canvas_and_moodle_names_are_read_as_their_documentation_gives_them():
    late = canvas_file("doejane_LATE_4711_998877_07-attention-2.ipynb")
    assert (late.login, late.user_id, late.submission_id, late.late, late.file) == \
        ("doejane", "4711", "998877", True, "07-attention.ipynb")
    assert canvas_file("doejane_4711_998877_work.zip").late is False
    assert canvas_file("07-attention.ipynb") is None and canvas_file("jane_07-attention.ipynb") is None
    assert moodle_folder("Jane Doe_1234_assignsubmission_file_") == ("Jane Doe", "1234")
    assert moodle_folder("Jane Doe") is None


def test_canvas_files_become_one_student_with_late_flags_and_zip_times(tmp_path):
    """Canvas downloads one assignment at a time: two exports, collected one after the other into one workspace."""
    export7, export6, submitted = tmp_path / "export7", tmp_path / "export6", tmp_path / "submitted"
    export7.mkdir()
    export6.mkdir()
    (export7 / f"doejane_LATE_4711_1_{CH7}-1.ipynb").write_bytes(NB)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo(f"work/{CH6}.ipynb", date_time=(2026, 10, 12, 23, 30, 0)), NB)
    (export6 / "doejane_4711_2_work.zip").write_bytes(buffer.getvalue())
    seen: dict = {}
    notes = collect(export7, submitted, [CH7], "canvas", dt.timezone(dt.timedelta(hours=2)), seen)
    notes += collect(export6, submitted, [CH6], "canvas", dt.timezone(dt.timedelta(hours=2)), seen)
    assert sorted(p.name for p in submitted.iterdir()) == ["doejane_4711"], notes
    assert (submitted / "doejane_4711" / CH7 / f"{CH7}.ipynb").read_bytes() == NB
    assert seen["identity"] == {"doejane_4711": {"lms": "canvas", "canvas_user_id": "4711", "login": "doejane"}}
    assert sorted(seen["late"]) == [("doejane_4711", CH6, False), ("doejane_4711", CH7, True)]
    stamp = (submitted / "doejane_4711" / CH6 / "timestamp.txt").read_text()
    assert parse_time(stamp) == dt.datetime(2026, 10, 12, 21, 30, tzinfo=dt.timezone.utc)  # read in UTC+2
    assert not (submitted / "doejane_4711" / CH7 / "timestamp.txt").exists()  # a loose file: no time


def test_moodle_folders_become_students_by_name_and_one_name_twice_is_refused(tmp_path):
    export, submitted = tmp_path / "export", tmp_path / "submitted"
    for folder in ("Jane Doe_11_assignsubmission_file_", "Max Mustermann_12_assignsubmission_file_",
                   "Max Mustermann_13_assignsubmission_file_"):
        (export / folder).mkdir(parents=True)
        (export / folder / f"{CH7}.ipynb").write_bytes(NB)
    seen: dict = {}
    notes = collect(export, submitted, [CH7], "moodle", dt.timezone.utc, seen)
    assert (submitted / "Jane_Doe" / CH7 / f"{CH7}.ipynb").read_bytes() == NB
    assert seen["identity"]["Jane_Doe"] == {"lms": "moodle", "moodle_name": "Jane Doe"}
    refused = (submitted / "Max_Mustermann" / CH7 / f"{CH7}.ipynb.refused").read_text()
    assert "2 entries of the export become the student id 'Max_Mustermann'" in refused, notes
    assert not (submitted / "Max_Mustermann" / CH7 / f"{CH7}.ipynb").exists()
