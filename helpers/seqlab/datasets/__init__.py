"""The course's data files and the scripts that build them (``python -m seqlab.datasets.build_*``)."""

from __future__ import annotations

import lzma
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
