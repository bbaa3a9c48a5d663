"""What a student can hand in never stops grading (issue 39, 1): every input ends graded, or refused with its reason.

An LMS export is what students made: a zip file protected with a password (`zip -e`), a zip whose member name is
flagged as UTF-8 and is not, a zip whose deflate stream is cut short, a folder holding a file whose name is not UTF-8,
a file name in Latin-1, a zip of hundreds of notebooks, a student id of 250 characters. ``write_malformed`` writes one
of each as an export (tests/test_autograder_dask.py grades them for real, through the pool and through a Dask cluster,
beside honest students); here the input side runs in-process, fast: collect() (grade.py), the submission hash and
failed_result() (job.py), the job's reading and refusing (run_job with nothing to run), the gradebook's CSV and
report (merge.py). A seeded fuzz then builds exports of zip and folder layouts, names in any bytes, sizes and
encodings, and checks that nothing raises and every student's notebook ends either collected or with a reason.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import struct
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from course import REPO, SOLUTIONS

sys.path.insert(0, str(REPO / "autograder"))

BATCH = "07-attention"  # the cheapest chapter to grade (tests/test_autograder_safety.py)
NB = f"{BATCH}.ipynb"
LONG_ID = "s" * 250  # a student id of 250 characters: an export entry's name may be 255 bytes
STRAY_SIZE = 45 * 2**20  # five notebooks of another name this large: 225 MiB beside the chapter's own


def honest(chapter: str = BATCH) -> bytes:
    return (SOLUTIONS / chapter / f"{chapter}.ipynb").read_bytes()


# -- zip files as the tools that make them write them ------------------------------------------------------------

def zip_of(files: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def zipcrypto(data: bytes, password: bytes, check: int, seed: int = 0) -> bytes:
    """PKWARE's traditional encryption (what `zip -e` writes): a 12-byte header whose last byte checks the password,
    then the data, each byte xored with a key stream the plain bytes update."""
    keys = [0x12345678, 0x23456789, 0x34567890]

    def update(byte: int) -> None:
        keys[0] = CRC_TABLE[(keys[0] ^ byte) & 0xFF] ^ (keys[0] >> 8)
        keys[1] = ((keys[1] + (keys[0] & 0xFF)) * 134775813 + 1) & 0xFFFFFFFF
        keys[2] = CRC_TABLE[(keys[2] ^ (keys[1] >> 24)) & 0xFF] ^ (keys[2] >> 8)

    for byte in password:
        update(byte)
    out = bytearray()
    for byte in random.Random(seed).randbytes(11) + bytes([check]) + data:
        t = (keys[2] | 2) & 0xFFFF
        out.append(byte ^ (((t * (t ^ 1)) >> 8) & 0xFF))
        update(byte)
    return bytes(out)


def encrypted_zip(files: dict[str, bytes], password: bytes = b"secret") -> bytes:
    """A zip file as `zip -e -P secret` writes it (stored members, ZipCrypto); `unzip -P secret` and Python's zipfile
    with pwd= read it back."""
    out, central = bytearray(), bytearray()
    for name, data in files.items():
        raw, crc = name.encode(), zlib.crc32(data)
        payload = zipcrypto(data, password, crc >> 24)
        offset = len(out)
        out += struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0x1, 0, 0, 0x21, crc, len(payload), len(data), len(raw), 0)
        out += raw + payload
        central += struct.pack("<4s6H3I5HII", b"PK\x01\x02", 20, 20, 0x1, 0, 0, 0x21, crc, len(payload), len(data),
                               len(raw), 0, 0, 0, 0, 0o100644 << 16, offset) + raw
    start = len(out)
    out += central + struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, len(files), len(files), len(central), start, 0)
    return bytes(out)


def mislabelled_zip(files: dict[str, bytes], placeholder: str, name: bytes) -> bytes:
    """A zip whose member ``placeholder`` is named ``name`` (bytes that are not UTF-8) with the UTF-8 flag set, as
    some archivers write a name they took from a file system in another encoding."""
    assert len(placeholder.encode()) == len(name)
    data = bytearray(zip_of(files))
    local = data.find(placeholder.encode())
    central = data.find(placeholder.encode(), local + 1)
    assert data.count(placeholder.encode()) == 2 and local > 0 and central > local  # the local and the central header
    for at, flags in ((local, local - 30 + 6), (central, central - 46 + 8)):  # the name follows each header
        data[at:at + len(name)] = name
        data[flags:flags + 2] = struct.pack("<H", struct.unpack_from("<H", data, flags)[0] | 0x800)
    return bytes(data)


def broken_stream_zip(files: dict[str, bytes], broken: str) -> bytes:
    """A zip whose member ``broken`` has its deflate stream cut in the middle (the rest of its bytes are garbage), as
    an upload that stopped and was padded leaves it: the directory is intact, inflating the member fails."""
    data = bytearray(zip_of(files))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo(broken)
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    for cut in range(info.compress_size // 2, info.compress_size):  # the first cut that zlib itself rejects
        stream = bytes(data[start:start + cut]) + b"\xff" * (info.compress_size - cut)
        try:
            zlib.decompressobj(-15).decompress(stream)
        except zlib.error:
            data[start:start + info.compress_size] = stream
            return bytes(data)
    raise AssertionError("no cut of the stream makes zlib fail")


def bytes_path(folder: Path, name: bytes) -> bytes:
    return os.path.join(os.fsencode(folder), name)


# -- one of each malformed input, as an LMS export ------------------------------------------------------------------

def write_malformed(export: Path, outside: Path, chapter: str = BATCH) -> dict[str, tuple[str, str | None]]:
    """One student per malformed input, written into the export folder; returns student id -> (what they get: "full"
    or "zero", a fragment of the reason grades.csv gives, or None). ``outside`` is a folder beside the export (what
    a linked chapter folder points to)."""
    export.mkdir(parents=True, exist_ok=True)
    notebook, good = f"{chapter}.ipynb", honest(chapter)
    expected: dict[str, tuple[str, str | None]] = {}

    (export / "encrypted.zip").write_bytes(encrypted_zip({f"{chapter}/{notebook}": good}))
    expected["encrypted"] = ("zero", "encrypted")

    (export / "mislabelled.zip").write_bytes(mislabelled_zip(
        {f"{chapter}/{notebook}": good, f"{chapter}/XX-notes.ipynb": b"{}"}, f"{chapter}/XX-notes.ipynb",
        f"{chapter}/\xff\xfe-notes.ipynb".encode("latin-1")))
    expected["mislabelled"] = ("full", None)

    (export / "truncated.zip").write_bytes(broken_stream_zip({f"{chapter}/{notebook}": good}, f"{chapter}/{notebook}"))
    expected["truncated"] = ("zero", "could not be unpacked")

    (export / "not_a_zip.zip").write_bytes(b"PK\x03\x04" + random.Random(3).randbytes(4000))
    expected["not_a_zip"] = ("zero", "not a zip file that can be read")

    (export / "too_large.zip").write_bytes(zip_of({f"{chapter}/{notebook}": good,
                                                   f"{chapter}/data.ipynb": b" " * (51 * 2**20)}))
    expected["too_large"] = ("zero", "larger than 50 MB")

    (export / "bytes_name").mkdir()
    (export / "bytes_name" / notebook).write_bytes(good)
    with open(bytes_path(export / "bytes_name", b"notes-\xff.ipynb"), "wb") as f:
        f.write(b"{}")
    expected["bytes_name"] = ("full", None)

    (export / "bytes_only").mkdir()
    with open(bytes_path(export / "bytes_only", b"\xe9t\xe9-\xff.ipynb"), "wb") as f:
        f.write(good)
    expected["bytes_only"] = ("zero", "found \ufffdt\ufffd-\ufffd.ipynb: a notebook must keep its name")

    with open(bytes_path(export, b"j\xf6rg_" + notebook.encode()), "wb") as f:  # an LMS that writes names in Latin-1
        f.write(good)
    expected["j_rg"] = ("full", None)

    (export / f"{LONG_ID}.zip").write_bytes(zip_of({f"{chapter}/{notebook}": good}))
    expected[LONG_ID] = ("full", None)

    many = {f"{chapter}/{notebook}": good, **{f"{chapter}/drafts/copy-{i:03d}.ipynb": b"{}" for i in range(250)}}
    (export / "many_notebooks.zip").write_bytes(zip_of(many))
    expected["many_notebooks"] = ("full", None)

    (export / "big_folder").mkdir()
    (export / "big_folder" / notebook).write_bytes(good)
    for i in range(5):  # sparse: 225 MiB that take no disk in the export (the collected copies do)
        with open(export / "big_folder" / f"draft-{i}.ipynb", "wb") as f:
            f.truncate(STRAY_SIZE)
    expected["big_folder"] = ("full", None)

    (outside / chapter).mkdir(parents=True, exist_ok=True)
    (outside / chapter / notebook).write_bytes(good)
    (export / "linked_chapter").mkdir()
    (export / "linked_chapter" / chapter).symlink_to(outside / chapter, target_is_directory=True)
    expected["linked_chapter"] = ("zero", "link")

    # the input side's attacks (tests/test_autograder_safety.py): links to what lies outside the export
    (export / f"linked_file_{notebook}").symlink_to(outside / chapter / notebook)
    expected["linked_file"] = ("zero", "symbolic link")
    os.link(outside / chapter / notebook, export / f"hard_link_{notebook}")
    expected["hard_link"] = ("zero", "hard link")
    link = zipfile.ZipInfo(f"{chapter}/{notebook}")
    link.external_attr = 0o120777 << 16  # a symbolic link inside a zip file, as `zip -y` stores it
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(link, str(outside / chapter / notebook))
        archive.writestr(f"../../{notebook}", good)
    (export / "zip_link.zip").write_bytes(buffer.getvalue())
    expected["zip_link"] = ("zero", "zip file")
    return expected


# -- in-process: collect, hash, refuse, record, report ----------------------------------------------------------------

class NoSandbox:
    """Enough of a Sandbox for a job whose notebooks are all refused, missing or invalid: nothing is run."""

    sandboxed = True

    def __init__(self):
        from sandbox import Limits

        self.limits = Limits()

    def reset_scratch(self) -> None:
        pass

    def after_submission(self) -> None:
        pass


def plain_text(name: str) -> bool:
    """UTF-8 can write it (no lone surrogate for a byte that was not UTF-8) and it holds no control character."""
    import unicodedata

    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not any(unicodedata.category(c)[0] == "C" for c in name)


def runs_nothing(folder: Path) -> bool:
    """Whether the job grades this folder without running anything: its notebook is refused, missing or invalid."""
    import job

    path = folder / NB
    return not os.path.lexists(path) or job.read_student(path)[0] is None


@pytest.fixture(autouse=True)
def gradebook_tools(monkeypatch):
    # nbgrader's gradebook runs `alembic` from this Python's scripts folder (as grade.py arranges)
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def report_of(workspace: Path, results: list[dict]) -> tuple[dict[str, dict], str]:
    from merge import merge_result, register_chapter, write_reports

    db_url = f"sqlite:///{workspace / 'gradebook.db'}"
    register_chapter(db_url, SOLUTIONS / BATCH)
    for result in results:
        merge_result(db_url, workspace, workspace / "autograder-results" / BATCH / result["student"])
    write_reports(db_url, results, workspace / "grades.csv", workspace / "grading-report.md")
    rows = {r["student"]: r for r in csv.DictReader(open(workspace / "grades.csv", encoding="utf-8"))}
    return rows, (workspace / "grading-report.md").read_text(encoding="utf-8")


def test_each_malformed_input_is_collected_or_refused_with_its_reason(tmp_path):
    """Today's collect() stops with a traceback at the encrypted zip (RuntimeError), the mislabelled one
    (UnicodeDecodeError) and the broken stream (zlib.error); the hash of a folder holding a non-UTF-8 name raises
    UnicodeEncodeError; a zip that is no zip file loses its reason ("no notebook was submitted")."""
    import grade
    import job

    export, workspace = tmp_path / "export", tmp_path / "workspace"
    expected = write_malformed(export, tmp_path / "outside")
    submitted = workspace / "submitted"
    notes = grade.collect(export, submitted, [BATCH])
    assert sorted(p.name for p in submitted.iterdir()) == sorted(expected)
    results = []
    for student, (grade_, reason) in expected.items():
        folder = submitted / student / BATCH
        assert job.submission_hash(folder) not in ("missing", "")
        for path in folder.iterdir():
            assert plain_text(path.name), path.name
        if grade_ == "full":
            assert (folder / NB).read_bytes() == honest(), f"{student}: the chapter's notebook is collected as it was"
            continue
        assert runs_nothing(folder), student
        out = workspace / "autograder-results" / BATCH / student
        results.append(job.run_job(folder, SOLUTIONS / BATCH, student, out, NoSandbox(), feedback=False))
    rows, report = report_of(workspace, results)
    for student, (grade_, reason) in expected.items():
        if grade_ == "zero":
            assert float(rows[student]["score"]) == 0 < float(rows[student]["max_score"]), student
            assert reason in rows[student]["problems"], (student, rows[student]["problems"])
            assert f"## {student} / {BATCH}" in report and reason in report
    assert any("encrypted" in note for note in notes)
    # the mislabelled zip's other member is kept under a printable name, as a notebook of another name (and the zip
    # member's time as the submission time, issue 44)
    assert sorted(p.name for p in (submitted / "mislabelled" / BATCH).iterdir()) == \
        [NB, "timestamp.txt", "\u00a0\u25a0-notes.ipynb"]
    assert sorted(p.name for p in (submitted / "bytes_name" / BATCH).iterdir()) == [NB, "notes-\ufffd.ipynb"]
    # a zip of 251 notebooks keeps the chapter's and 20 of the others; five notebooks of 45 MiB are kept as they are
    assert len([p for p in (submitted / "many_notebooks" / BATCH).iterdir() if p.name != "timestamp.txt"]) == \
        1 + grade.MAX_STRAY_NOTEBOOKS
    assert (submitted / "big_folder" / BATCH / "draft-0.ipynb").stat().st_size == STRAY_SIZE


def test_the_graders_failure_record_never_fails_itself(tmp_path):
    """failed_result() runs in grade.py's own failure handler: a folder holding a non-UTF-8 name, or a reason holding
    one, must still give a result, a CSV row and a report (today: UnicodeEncodeError inside the handler, so grade.py
    stops with a traceback and nobody gets a grade)."""
    import job

    workspace = tmp_path / "workspace"
    folder = workspace / "submitted" / "bytes_in_folder" / BATCH
    folder.mkdir(parents=True)
    (folder / NB).write_bytes(honest())
    with open(bytes_path(folder, b"\xff.ipynb"), "wb") as f:
        f.write(b"{}")
    out = workspace / "autograder-results" / BATCH / "bytes_in_folder"
    reasons = [f"OSError: cannot open {os.fsdecode(b'x-' + bytes([255]))}", "BrokenProcessPool: a worker died"]
    result = job.failed_result(folder, SOLUTIONS / BATCH, "bytes_in_folder", out, reasons)
    assert result["failed"] and result["score"] == 0 and "x-\\xff" in result["problem"]
    assert json.loads((out / "result.json").read_text())["submission_hash"] == result["submission_hash"] \
        == job.submission_hash(folder) != job.submission_hash(folder.parent)
    rows, report = report_of(workspace, [result])
    assert float(rows["bytes_in_folder"]["score"]) == 0 and "the grader failed" in rows["bytes_in_folder"]["problems"]
    assert "x-\\xff" in report


def test_a_zip_name_flagged_utf8_that_is_not_loses_only_that_member():
    from safe_input import open_zip

    good = honest()
    data = mislabelled_zip({"a/XX.ipynb": b"{}", f"{BATCH}/{NB}": good}, "a/XX.ipynb", b"a/\xc3\x28.ipynb")
    with pytest.raises(UnicodeDecodeError):
        zipfile.ZipFile(io.BytesIO(data))
    with open_zip(data) as archive:
        assert archive.read(f"{BATCH}/{NB}") == good
        assert [m.filename for m in archive.infolist()] == ["a/\u251c(.ipynb", f"{BATCH}/{NB}"]  # as code page 437
        assert archive.testzip() is None


# -- fuzz ------------------------------------------------------------------------------------------------------------

NAME_BYTES = [b"07-attention", b"\xff", b"\xc3\x28", b"\xe9", "\u00e9".encode(), b"\n", b"\x01", b" ", b"\\", b"..",
              b".", b"-", b"_", "\u202e".encode(), b"\xed\xa0\x80", b"ipynb", b"__MACOSX", b"a" * 120]


def fuzz_name(rng: random.Random, suffix: bytes = b".ipynb") -> bytes:
    name = b"".join(rng.choice(NAME_BYTES) for _ in range(rng.randint(0, 4)))
    if rng.random() < 0.3:
        return NB.encode() if rng.random() < 0.5 else name + b"_" + NB.encode()
    return (name or b"x")[:200] + suffix


def fuzz_content(rng: random.Random, good: bytes) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return good
    if kind == 1:
        return good[: rng.randrange(len(good))]  # cut short: invalid JSON
    if kind == 2:
        return rng.randbytes(rng.randrange(0, 3000))
    if kind == 3:
        return b""
    if kind == 4:
        return json.dumps({"nbformat": rng.choice([4, 3, 5, "4", None]), "cells": [{}] * rng.randrange(3)}).encode()
    return good.decode().encode(rng.choice(["utf-16", "utf-8-sig", "latin-1"]), errors="replace")


def fuzz_zip(rng: random.Random, good: bytes) -> bytes:
    members: dict[str, bytes] = {}
    for _ in range(rng.randint(0, 6)):
        folder = rng.choice(["", f"{BATCH}/", "sub/dir/", "__MACOSX/", "../", "/abs/", "C:\\x\\"])
        members[folder + fuzz_name(rng).decode("utf-8", "replace")] = fuzz_content(rng, good)
    if not members:
        return zip_of({})
    first = next(iter(members))
    how = rng.randrange(6)
    if how == 0:
        return encrypted_zip(members)
    if how == 1:
        return broken_stream_zip({first: good}, first)
    if how == 2 and first.isascii() and sum(first in name for name in members) == 1:
        return mislabelled_zip(members, first, rng.choice([b"\xff", b"\xc3"]) * len(first))
    data = zip_of(members, rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
    if how == 3:  # cut anywhere, or bytes flipped anywhere
        return data[: rng.randrange(len(data))]
    if how == 4:
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        return bytes(flipped)
    return data


def fuzz_export(export: Path, rng: random.Random, good: bytes) -> None:
    export.mkdir()
    root = os.fsencode(export)
    for index in range(rng.randint(1, 6)):
        kind = rng.randrange(5)
        prefix = b"s%d" % index
        if kind == 0:
            with open(os.path.join(root, prefix + fuzz_name(rng, b".zip")), "wb") as f:
                f.write(fuzz_zip(rng, good))
        elif kind == 1:
            with open(os.path.join(root, prefix + b"_" + fuzz_name(rng)), "wb") as f:
                f.write(fuzz_content(rng, good))
        else:  # a folder: notebooks, an nbgrader chapter folder, links, a pipe
            folder = os.path.join(root, prefix + fuzz_name(rng, b""))
            os.makedirs(folder, exist_ok=True)
            inner = os.path.join(folder, BATCH.encode()) if kind == 2 else folder
            os.makedirs(inner, exist_ok=True)
            for _ in range(rng.randint(0, 4)):
                path = os.path.join(inner, fuzz_name(rng))
                what = rng.randrange(8)
                if os.path.lexists(path):
                    continue
                if what == 0:
                    os.symlink(b"/etc/passwd", path)
                elif what == 1:
                    os.mkfifo(path)
                elif what == 2:
                    os.mkdir(path)
                else:
                    with open(path, "wb") as f:
                        f.write(fuzz_content(rng, good))


def test_fuzzed_exports_never_stop_collecting_and_every_student_ends_collected_or_with_a_reason(tmp_path):
    """Seeded: 120 exports of up to 6 entries each. Nothing raises; every file written into submitted/ has a
    printable UTF-8 name; a student's chapter folder holds the chapter's notebook, its reason (.refused), or nothing
    (job.py then says it is missing); the hash never raises; the job's reading (for one student in three whose
    notebook it would not run) and the failure record give a reason that UTF-8 can write; and the gradebook's CSV
    and report take a sample of them."""
    import grade
    import job
    from merge import problems_of

    good, workspace = honest(), tmp_path / "workspace"
    results, seen = [], 0
    for case in range(120):
        rng = random.Random(case)
        export = tmp_path / f"export-{case}"
        fuzz_export(export, rng, good)
        submitted = workspace / f"submitted-{case}"
        try:
            grade.collect(export, submitted, [BATCH])
        except Exception as error:  # noqa: BLE001 - the seed is what reproduces it
            raise AssertionError(f"case {case}: collect raised {type(error).__name__}: {error}") from error
        for student_dir in sorted(submitted.iterdir()) if submitted.exists() else []:
            seen += 1
            assert student_dir.name == grade.clean_id(student_dir.name), (case, student_dir.name)
            folder = student_dir / BATCH
            assert folder.is_dir(), (case, student_dir.name)
            for path in folder.iterdir():
                assert plain_text(path.name), (case, path.name)
            refused = folder / f"{NB}.refused"
            if refused.exists():
                assert not (folder / NB).exists() and plain_text(refused.read_text(encoding="utf-8").strip()), case
            job.submission_hash(folder)
            if seen % 3:
                continue
            student = f"{case}-{student_dir.name}"[:200]
            out = workspace / "autograder-results" / BATCH / student
            if runs_nothing(folder):
                result = job.run_job(folder, SOLUTIONS / BATCH, student, out, NoSandbox(), feedback=False)
                assert result["score"] == 0 and problems_of(result), (case, result)
            else:
                result = job.failed_result(folder, SOLUTIONS / BATCH, student, out, ["RuntimeError: fuzz"])
            assert all(plain_text(problem) for problem in problems_of(result)), result
            results.append(result)
    assert seen > 250 and len(results) > 80, (seen, len(results))
    rows, report = report_of(workspace, results[::4])
    assert len(rows) == len(results[::4]) and all(row["problems"] for row in rows.values())
