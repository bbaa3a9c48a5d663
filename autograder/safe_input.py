"""Reading submissions without following anything: what an export holds is read, never followed.

A symbolic link, a hard link (a regular file with more than one name, which may be a file
outside the export), a device, FIFO or socket, or a path that leaves its folder is refused
with a reason in plain words; the grader never opens what such an entry points to.
"""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path, PurePosixPath

MAX_NOTEBOOK_BYTES = 50 * 2**20


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


def read_file(path: Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of a regular file with one name, opened without following a link."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise Refused(f"{path.name} could not be read ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{path.name} is {describe(info.st_mode)}; it was not read")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise Refused(f"{path.name} could not be opened without following a link ({error.strerror})") from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise Refused(f"{path.name} changed while it was read; it was not read")
        if opened.st_nlink > 1:
            raise Refused(f"{path.name} is a hard link (the file has {opened.st_nlink} names, one may lie outside "
                          "the submission); it was not read")
        if opened.st_size > limit:
            raise Refused(f"{path.name} is larger than {limit // 2**20} MB")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise Refused(f"{path.name} is larger than {limit // 2**20} MB")
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
    mode = member.external_attr >> 16
    if mode and stat.S_ISLNK(mode):
        return f"{member.filename} is a symbolic link inside the zip file; it was not read"
    if mode and stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return f"{member.filename} is {describe(mode)} inside the zip file; it was not read"
    parts = PurePosixPath(member.filename.replace("\\", "/")).parts
    if member.filename.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
        return f"{member.filename} points outside the zip file's folder; it was not read"
    return None
