"""Reading submissions without following anything: what an export holds is read, never followed.

A symbolic link, a hard link (a regular file with more than one name, which may be a file
outside the export), a device, FIFO or socket, or a path that leaves its folder is refused
with a reason in plain words; the grader never opens what such an entry points to.

Names come from students (file names in any bytes, zip member names in any encoding): shown() is how one
appears in a reason, a note or a file the grader writes, always printable UTF-8; open_zip() reads a zip
whose member names claim to be UTF-8 and are not.
"""

from __future__ import annotations

import io
import os
import stat
import struct
import unicodedata
import zipfile
from pathlib import Path, PurePosixPath

MAX_NOTEBOOK_BYTES = 50 * 2**20
SHOWN_CHARACTERS = 120  # of a name, in a reason: the report keeps reasons short


class Refused(Exception):
    """An input entry the grader will not read; str() is the reason."""


def describe(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def shown(name: str, limit: int = SHOWN_CHARACTERS) -> str:
    """A name as a reason or a stored file name may hold it: bytes that are not UTF-8 (which os.scandir hands over
    as lone surrogates, and which no UTF-8 file, CSV or database takes) as \\xNN, control and format characters
    escaped, at most ``limit`` characters (an ellipsis in the middle keeps both ends)."""
    text = "".join(c if unicodedata.category(c)[0] != "C" else ascii(c)[1:-1] for c in utf8_text(name))
    if len(text) > limit:
        text = text[: limit // 2] + "\u2026" + text[-(limit - limit // 2 - 1):]
    return text


def utf8_text(text: str) -> str:
    """The text with what UTF-8 cannot encode (bytes of a name that were not UTF-8, as lone surrogates) as \\xNN."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
        raw = text.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


def read_file(path: Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of a regular file with one name, opened without following a link."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise Refused(f"{shown(path.name)} could not be read ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{shown(path.name)} is {describe(info.st_mode)}; it was not read")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise Refused(f"{shown(path.name)} could not be opened without following a link ({error.strerror})") from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise Refused(f"{shown(path.name)} changed while it was read; it was not read")
        if opened.st_nlink > 1:
            raise Refused(f"{shown(path.name)} is a hard link (the file has {opened.st_nlink} names, one may lie "
                          "outside the submission); it was not read")
        if opened.st_size > limit:
            raise Refused(f"{shown(path.name)} is larger than {limit // 2**20} MB")
        chunks, size = [], 0
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError as error:  # EIO, EISDIR on odd file systems: the file's problem, not the grader's
                raise Refused(f"{shown(path.name)} could not be read ({error.strerror})") from None
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise Refused(f"{shown(path.name)} is larger than {limit // 2**20} MB")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def entries(folder: Path) -> list[os.DirEntry]:
    """A folder's entries, sorted by name, without following links."""
    with os.scandir(folder) as found:
        return sorted(found, key=lambda e: e.name)


def is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def zip_member_problem(member: zipfile.ZipInfo) -> str | None:
    """Why a member of a zip file is not read, or None."""
    name = shown(member.filename)
    mode = member.external_attr >> 16
    if mode and stat.S_ISLNK(mode):
        return f"{name} is a symbolic link inside the zip file; it was not read"
    if mode and stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return f"{name} is {describe(mode)} inside the zip file; it was not read"
    parts = PurePosixPath(member.filename.replace("\\", "/")).parts
    if member.filename.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
        return f"{name} points outside the zip file's folder; it was not read"
    if member.flag_bits & 0x1:
        return f"{name} is encrypted (a zip file made with a password, as `zip -e` makes); it was not read"
    return None


def open_zip(data: bytes) -> zipfile.ZipFile:
    """A zip file from its bytes. A member whose name is flagged as UTF-8 (general purpose bit 11) but is not
    makes zipfile refuse the whole archive; those names are read as zipfile reads unflagged ones (code page 437)
    instead, so that the other members, the student's notebook among them, can still be read. Raises what zipfile
    raises for anything else (zipfile.BadZipFile for what is not a zip file)."""
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except UnicodeDecodeError:
        return zipfile.ZipFile(io.BytesIO(without_false_utf8_flags(data)))


def without_false_utf8_flags(data: bytes) -> bytes:
    """The zip's bytes with bit 11 cleared in the central and local headers of every member whose name is not UTF-8.

    The central directory is found as zipfile finds it (the end record, then the directory right before it, which
    also places the local headers of a zip with data prepended); a zip64 directory is left as it is."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 0xFFFF))
    if end < 0 or end + 22 > len(data):
        return data
    size, offset = struct.unpack_from("<II", data, end + 12)
    start = end - size
    shift = start - offset  # bytes before the archive (a self-extracting stub): local header offsets move by it
    if offset == 0xFFFFFFFF or start < 0 or shift < 0:
        return data
    fixed = bytearray(data)
    at = start
    while at + 46 <= end and fixed[at:at + 4] == b"PK\x01\x02":
        flags, = struct.unpack_from("<H", fixed, at + 8)
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", fixed, at + 28)
        local, = struct.unpack_from("<I", fixed, at + 42)
        name = bytes(fixed[at + 46: at + 46 + name_len])
        if flags & 0x800:
            try:
                name.decode("utf-8")
            except UnicodeDecodeError:
                struct.pack_into("<H", fixed, at + 8, flags & ~0x800)
                here = local + shift
                if here + 30 <= len(fixed) and fixed[here:here + 4] == b"PK\x03\x04":
                    local_flags, = struct.unpack_from("<H", fixed, here + 6)
                    struct.pack_into("<H", fixed, here + 6, local_flags & ~0x800)
        at += 46 + name_len + extra_len + comment_len
    return bytes(fixed)
