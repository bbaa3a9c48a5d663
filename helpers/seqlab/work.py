"""Your own copies of the course's notebooks, in a folder that no course update touches.

    python -m seqlab.work notebooks work      # what `make work` (and `make lab`) runs

The course's student notebooks (``notebooks/<chapter>/``) are regenerated whenever the course changes, so a
learner's work does not live there: this copies each chapter's notebooks into ``work/<chapter>/`` the first time,
and never overwrites a copy afterwards. When the course's copy of a notebook has changed since yours was made,
it says so and leaves yours alone: the new one is still in ``notebooks/``, to open beside yours.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

RECORD = ".copied-from-release.json"  # in the work folder: what each copy was made from


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def release_notebooks(release: Path) -> list[Path]:
    """The course's notebooks, relative to ``release``: ``<chapter>/<name>.ipynb`` (Jupyter's checkpoints left out)."""
    return sorted(p.relative_to(release) for p in release.glob("*/*.ipynb") if not p.parent.name.startswith("."))


def update(release: Path, work: Path) -> list[str]:
    """Copy the notebooks that ``work`` does not have yet; return one line per notebook for the learner."""
    if not release.is_dir():
        raise SystemExit(f"work: {release} is not a folder of chapter notebooks")
    if work.exists() and not work.is_dir():
        raise SystemExit(f"work: {work} exists and is not a folder; move it away first")
    record_path = work / RECORD
    try:
        record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.exists() else {}
    except (OSError, ValueError):
        record = {}  # a damaged record only costs the "changed since" notices
    lines = []
    for relative in release_notebooks(release):
        source, copy, key = release / relative, work / relative, relative.as_posix()
        if not copy.exists():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy)
            record[key] = sha256(source)
            lines.append(f"copied   {copy}")
        elif key in record and record[key] != sha256(source):
            lines.append(f"kept     {copy} (yours); the course's notebook changed since you copied it: "
                         f"the new one is {source}, open it beside yours")
        else:
            lines.append(f"kept     {copy} (yours)")
    work.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("release", type=Path, help="the course's student notebooks (notebooks/)")
    parser.add_argument("work", type=Path, help="your folder (work/): created if missing, copies never overwritten")
    args = parser.parse_args(argv)
    lines = update(args.release, args.work)
    copied = sum(line.startswith("copied") for line in lines)
    print("\n".join(lines))
    print(f"work: {copied} notebook(s) copied into {args.work}/; your work lives there (`make release` and "
          f"`git pull` never touch it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
