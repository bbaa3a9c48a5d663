"""An instructor's term end to end (issue 44): a Canvas export of two chapters graded by grade.py with a policy file,
through the process pool and through a local Dask cluster; grades back into Canvas and Moodle; late penalties
recomputed when the due date changes, without grading again (nbgrader#723); feedback that shows the hidden tests'
verdicts only after the student's own due date; the similarity page.

The class (Canvas's "Download Submissions" names, ``<login>[_LATE]_<user id>_<submission id>_<file>``):
ada (on time, a zip), bob (loose notebooks Canvas marked LATE), carol (a zip whose notebook is 2 days 1 hour late),
dave (2 days late, with a 3-day extension), erin (ada's chapter 7 with renamed variables and reordered functions),
finn (chapter 7's additive_scores in float32: the visible checks pass, a hidden one fails; chapter 6 partly wrong),
and ghost (a file not named by Canvas: graded, but no Canvas id, so never exported).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from course import REPO

sys.path.insert(0, str(REPO / "autograder"))
sys.path.insert(0, str(REPO / "tests"))
from adversarial.generate import load, partly_wrong  # noqa: E402
from sandbox import bubblewrap  # noqa: E402
from test_autograder_safety import CELL_LIMIT, grade  # noqa: E402

CH6, CH7 = "06-seq2seq-beam-search-bleu", "07-attention"
DUE = dt.datetime(2026, 10, 5, 22, 0, tzinfo=dt.timezone.utc)  # chapter 7's; chapter 6 is due a week later
NOW = DUE + dt.timedelta(days=1)  # after chapter 7's due date, before dave's extension ends and before chapter 6's
ISO = "%Y-%m-%dT%H:%M:%SZ"
POLICY = """[late]
percent_per_day = 10
cap_percent = 50
[chapters."{ch7}"]
due = {due7}
[chapters."{ch6}"]
due = {due6}
[extensions.dijkstradave_104]
"{ch7}" = 3
"""
FAST = ["--cell-timeout", str(CELL_LIMIT), "--memory-gb", "1", "--no-progress", "--chapter", CH6, "--chapter", CH7,
        "--lms", "canvas", "--now", NOW.strftime(ISO)]
HIDDEN_FAILED = "a hidden test failed"
PENDING = "visible checks passed; the hidden tests"  # then "' verdicts are shown after the due date (...)", escaped
ROSTER = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "07-attention (9001)"],
          ["    Points Possible", "", "", "", "", "21.00"],
          ["Lovelace, Ada", "101", "S101", "ada@uni.example", "Section A", ""],
          ["Babbage, Bob", "102", "S102", "bob@uni.example", "Section A", ""],
          ["Carol \"CJ\" Jones", "103", "S103", "carol@uni.example", "Section B", ""],
          ["Dijkstra, Dave", "104", "S104", "dave@uni.example", "Section B", ""],
          ["Erin", "105", "S105", "erin@uni.example", "Section B", ""],
          ["Finn", "106", "S106", "finn@uni.example", "Section B", ""]]


def policy_text(due7: dt.datetime) -> str:
    return POLICY.format(ch6=CH6, ch7=CH7, due7=due7.strftime(ISO), due6=(DUE + dt.timedelta(days=7)).strftime(ISO))


def answer(nb, grade_id: str, source: str):
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            cell.source = source
    return nb


def renamed_and_reordered(nb):
    """ada's chapter 7 as a copier would hand it in: names changed, a helper added, functions in another order."""
    renames = {"projected": "proj", "weights": "alpha", "scores": "energies", "context": "ctx", "queries": "qs"}
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            for old, new in renames.items():
                cell.source = re.sub(rf"\b{old}\b", new, cell.source)
    return answer(nb, "additive_scores", (
        "def _energy(proj, v):\n    return torch.tanh(proj) @ v\n\n\n"
        "def additive_scores(query, keys, W_q, W_k, v):\n"
        "    proj = keys @ W_k.T + (query @ W_q.T)[:, None, :]\n    return _energy(proj, v)\n"))


def float32_scores(nb):
    return answer(nb, "additive_scores", (
        "def additive_scores(query, keys, W_q, W_k, v):\n"
        "    projected = keys @ W_k.T + (query @ W_q.T)[:, None, :]\n"
        "    return (torch.tanh(projected) @ v).float()\n"))


def zip_with_time(files: dict[str, bytes], moment: dt.datetime) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(zipfile.ZipInfo(path, date_time=moment.timetuple()[:6]), data)
    return buffer.getvalue()


def write_export(export: Path) -> None:
    export.mkdir(parents=True)
    sol7, name7 = load("solution", CH7)
    sol6, name6 = load("solution", CH6)
    text7, text6 = nbformat.writes(sol7), nbformat.writes(sol6)
    on_time = DUE - dt.timedelta(hours=2)
    (export / "adaada_101_9001_work.zip").write_bytes(
        zip_with_time({f"{CH7}/{name7}": text7.encode(), f"{CH6}/{name6}": text6.encode()}, on_time))
    (export / f"bobbob_LATE_102_9002_{name7}").write_text(text7)
    (export / f"bobbob_102_9012_{name6}").write_text(text6)
    (export / "caroljones_103_9003_hw7.zip").write_bytes(
        zip_with_time({name7: text7.encode()}, DUE + dt.timedelta(days=2, hours=1)))
    (export / "dijkstradave_104_9004_hw7.zip").write_bytes(
        zip_with_time({name7: text7.encode()}, DUE + dt.timedelta(days=2)))
    (export / f"erin_105_9005_{name7.replace('.ipynb', '-1.ipynb')}").write_text(
        nbformat.writes(renamed_and_reordered(load("solution", CH7)[0])))
    (export / f"finn_106_9006_{name7}").write_text(nbformat.writes(float32_scores(load("solution", CH7)[0])))
    (export / f"finn_106_9016_{name6}").write_text(nbformat.writes(partly_wrong(load("solution", CH6)[0])))
    (export / f"ghost_{name7}").write_text(text7)


# one group: under `make test`'s xdist the batch is graded once, on one worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("term"),
              pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")]


def rows(workspace: Path) -> dict[tuple[str, str], dict]:
    return {(r["student"], r["chapter"]): r for r in csv.DictReader(open(workspace / "grades.csv"))}


def page(workspace: Path, student: str, chapter: str) -> str:
    return (workspace / "feedback" / student / chapter / f"{chapter}.html").read_text()


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    root = tmp_path_factory.mktemp("term")
    write_export(root / "export")
    runs = {}
    for name, where in (("pool", ["--jobs", "2"]), ("dask", ["--cluster", "local:2", "--jobs", "1"])):
        workspace = root / name
        workspace.mkdir()
        (workspace / "policy.toml").write_text(policy_text(DUE))
        done = grade(workspace, "--submissions", str(root / "export"), "--similarity", *where, *FAST, timeout=3600)
        assert done.returncode == 0, done.stderr[-3000:]
        runs[name] = {"workspace": workspace, "stderr": done.stderr, "rows": rows(workspace),
                      "pages": {(s, c): page(workspace, s, c) for s, c in rows(workspace)}}
    return {"root": root, **runs}


RUNS = ["pool", "dask"]


def test_canvas_names_become_one_id_per_student_across_chapters(term):
    for run in RUNS:
        students = {s for s, _ in term[run]["rows"]}
        assert students == {"adaada_101", "bobbob_102", "caroljones_103", "dijkstradave_104", "erin_105", "finn_106",
                            "ghost"}, students
        mapping = json.loads((term[run]["workspace"] / "lms-students.json").read_text())
        assert mapping["students"]["finn_106"] == {"lms": "canvas", "canvas_user_id": "106", "login": "finn"}
        assert mapping["late"]["bobbob_102"] == {CH7: True, CH6: False}
        assert "ghost" not in mapping["students"]


def test_late_penalties_follow_the_policy_in_grades_csv_and_the_report(term):
    for run in RUNS:
        got = term[run]["rows"]
        full = float(got[("adaada_101", CH7)]["max_score"])
        assert float(got[("adaada_101", CH7)]["score"]) == full
        expected = {"adaada_101": 0, "bobbob_102": 10, "caroljones_103": 30, "dijkstradave_104": 0, "erin_105": 0,
                    "ghost": 0}
        for student, percent in expected.items():
            row = got[(student, CH7)]
            assert float(row["late_penalty_percent"]) == percent, (run, student, row)
            assert float(row["final_score"]) == pytest.approx(float(row["score"]) * (1 - percent / 100)), row
        carol = got[("caroljones_103", CH7)]
        assert carol["late_days"] == "3" and carol["submitted_at"] == "2026-10-07 23:00 UTC"
        assert "3 started days after the due date 2026-10-05 22:00 UTC: 30% off at 10% per day" in carol["penalty_reason"]
        assert "marked it late" in got[("bobbob_102", CH7)]["penalty_reason"]
        assert got[("dijkstradave_104", CH7)]["due"] == "2026-10-08 22:00 UTC"
        header = list(got[("adaada_101", CH7)])
        assert header.index("final_score") < header.index("problems"), header
        report = (term[run]["workspace"] / "grading-report.md").read_text()
        assert "# Late submissions" in report and "caroljones_103 / 07-attention" in report


def test_the_feedback_page_shows_the_penalty_and_its_reason(term):
    carol = term["pool"]["pages"][("caroljones_103", CH7)]
    assert "Late submission penalty (Score: -6.3)" in carol or "Late submission penalty (Score: -" in carol
    assert "30% off at 10% per day" in carol
    assert "Late submission" not in term["pool"]["pages"][("adaada_101", CH7)]


def test_hidden_verdicts_show_only_after_the_students_own_due_date(term):
    for run in RUNS:
        pages = term[run]["pages"]
        assert HIDDEN_FAILED in pages[("finn_106", CH7)]  # chapter 7 is past its due date
        for before in (("dijkstradave_104", CH7), ("adaada_101", CH6), ("finn_106", CH6)):  # extension / not yet due
            assert PENDING in pages[before], (run, before)
            assert HIDDEN_FAILED not in pages[before], (run, before)
        assert PENDING not in pages[("adaada_101", CH7)]


def test_a_new_now_and_a_new_due_date_change_pages_and_penalties_without_grading_again(term, tmp_path):
    workspace = term["pool"]["workspace"]
    finn_score = term["pool"]["rows"][("finn_106", CH7)]["score"]
    before_due = (DUE - dt.timedelta(hours=1)).strftime(ISO)
    done = grade(workspace, "--jobs", "2", *[a if a != NOW.strftime(ISO) else before_due for a in FAST])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "0 to grade" in done.stderr, done.stderr[-2000:]
    finn = page(workspace, "finn_106", CH7)
    assert HIDDEN_FAILED not in finn and PENDING in finn
    (workspace / "policy.toml").write_text(policy_text(DUE + dt.timedelta(days=3)))  # nbgrader#723: a later due date
    done = grade(workspace, "--jobs", "2", *FAST)
    assert done.returncode == 0 and "0 to grade" in done.stderr, done.stderr[-2000:]
    got = rows(workspace)
    assert got[("caroljones_103", CH7)]["late_penalty_percent"] == "0"
    assert float(got[("caroljones_103", CH7)]["final_score"]) == float(got[("caroljones_103", CH7)]["score"])
    assert got[("finn_106", CH7)]["score"] == finn_score
    assert "Late submission" not in page(workspace, "caroljones_103", CH7)
    (workspace / "policy.toml").write_text(policy_text(DUE))
    done = grade(workspace, "--jobs", "2", *FAST)
    assert done.returncode == 0 and rows(workspace)[("caroljones_103", CH7)]["late_penalty_percent"] == "30"


def test_the_pool_and_the_cluster_agree(term):
    keep = ["score", "final_score", "late_penalty_percent", "penalty_reason"]
    pool = {k: [r[f] for f in keep] for k, r in term["pool"]["rows"].items()}
    dask = {k: [r[f] for f in keep] for k, r in term["dask"]["rows"].items()}
    assert pool == dask


def canvas_export(workspace: Path, *args: str):
    import subprocess

    return subprocess.run([sys.executable, str(REPO / "autograder" / "lms.py"), "export", *args, str(workspace)],
                          capture_output=True, text=True, timeout=120)


def test_canvas_import_csv_has_canvas_header_points_row_and_quoting(term, tmp_path):
    workspace = term["dask"]["workspace"]
    roster = tmp_path / "canvas-gradebook.csv"
    with open(roster, "w", newline="") as f:
        csv.writer(f).writerows(ROSTER)
    out = tmp_path / "canvas.csv"
    done = canvas_export(workspace, "canvas", "--roster", str(roster), "--out", str(out))
    assert done.returncode == 1, done.stderr  # ghost has no Canvas id
    assert "ERROR ghost: no Canvas user id" in done.stderr
    assert "ERROR ghost" in (workspace / "lms-export-report.md").read_text()
    lines = out.read_bytes().decode().split("\r\n")
    got = rows(workspace)
    max6, max7 = (f"{float(got[('adaada_101', c)]['max_score']):g}" for c in (CH6, CH7))
    assert lines[0] == f"Student,ID,SIS User ID,SIS Login ID,Section,{CH6},{CH7}"
    assert lines[1] == f"    Points Possible,,,,,{max6},{max7}"
    carol = f"{float(got[('caroljones_103', CH7)]['final_score']):g}"
    assert f'"Carol ""CJ"" Jones",103,S103,carol@uni.example,Section B,0,{carol}' in lines  # her zip held no ch. 6
    assert f'"Lovelace, Ada",101,S101,ada@uni.example,Section A,{max6},{max7}' in lines
    assert len([line for line in lines if line]) == 2 + 6
    parsed = list(csv.reader(io.StringIO(out.read_text())))
    assert {r[1] for r in parsed[2:]} == {"101", "102", "103", "104", "105", "106"}
    # without a roster: the ids the collector saw, the login as the name; per-exercise columns
    done = canvas_export(workspace, "canvas", "--exercises", "--out", str(out))
    header, points = list(csv.reader(io.StringIO(out.read_text())))[:2]
    assert f"{CH7}: additive_scores_tests" in header and points[header.index(f"{CH7}: additive_scores_tests")] not in ("", "0")
    finn = next(r for r in csv.reader(io.StringIO(out.read_text())) if r[1] == "106")
    assert finn[0] == "finn" and float(finn[header.index(f"{CH7}: additive_scores_tests")]) == 0


def test_moodle_import_csv_maps_students_by_the_roster_only(term, tmp_path):
    workspace = term["dask"]["workspace"]  # the pool's workspace is graded again under other policies above
    roster = tmp_path / "moodle-roster.csv"
    with open(roster, "w", newline="") as f:
        csv.writer(f).writerows([["First name", "Last name", "Email address", "student"],
                                 ["Ada", "Lovelace", "ada@uni.example", "adaada_101"],
                                 ["Carol", "Jones, Jr.", "carol@uni.example", "caroljones_103"]])
    out = tmp_path / "moodle.csv"
    done = canvas_export(workspace, "moodle", "--roster", str(roster), "--out", str(out))
    assert done.returncode == 1 and done.stderr.count("ERROR") == 5, done.stderr
    lines = out.read_bytes().decode().split("\r\n")
    got = rows(workspace)
    assert lines[0] == f"First name,Last name,Email address,{CH6},{CH7}"
    carol = f"{float(got[('caroljones_103', CH7)]['final_score']):g}"
    assert f'Carol,"Jones, Jr.",carol@uni.example,0,{carol}' in lines
    done = canvas_export(workspace, "moodle", "--out", str(out))
    assert done.returncode == 2 and "needs --roster" in done.stderr


def test_the_similarity_page_lists_the_copied_pair_with_cells_side_by_side(term):
    for run in RUNS:
        similarity = (term[run]["workspace"] / "similarity.html").read_text()
        assert "<script" not in similarity.lower()
        pair = re.search(r"<h3 class='pair'>adaada_101 and erin_105: (\d+)%", similarity)
        assert pair and int(pair.group(1)) >= 60, similarity[:3000]
        assert "<mark>" in similarity and "_energy" in similarity
