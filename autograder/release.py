"""Regenerate the student notebooks (notebooks/) from the sources (solutions/) with nbgrader.

    python autograder/release.py           # stamp the repository URL, then regenerate notebooks/
    python autograder/release.py --check   # exit 1 if notebooks/, the README or a setup cell is stale

Before nbgrader runs, the repository URL from pyproject.toml ([tool.seqlab]) is stamped
into every notebook's Colab setup cell (the cell tagged "colab-setup") and into the
README's chapter table with its "Open in Colab" badges.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
NOTEBOOKS = REPO / "notebooks"
README = REPO / "README.md"
SETUP_TAG = "colab-setup"
TABLE_START, TABLE_END = "<!-- chapters:start -->", "<!-- chapters:end -->"
BADGE = "https://colab.research.google.com/assets/colab-badge.svg"

SETUP_CELL = '''# Colab only: install the course helpers (seqlab). Anywhere else this cell does nothing.
import sys
if "google.colab" in sys.modules:
    %pip install -q "seqlab @ git+{repository}@{branch}"'''


def course_settings() -> dict[str, str]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["seqlab"]


def chapters() -> list[str]:
    """Chapter ids (one nbgrader assignment each), in course order."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and not p.name.startswith("."))


def source_notebooks(chapter: str) -> list[Path]:
    return sorted((SOLUTIONS / chapter).glob("*.ipynb"))


def stamp_setup_cell(path: Path, settings: dict[str, str]) -> bool:
    """Rewrite the Colab setup cell of one source notebook; True if it changed."""
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if SETUP_TAG in c.metadata.get("tags", [])]
    if len(cells) != 1 or nb.cells[0] is not cells[0]:
        raise SystemExit(f"release: {path} must start with exactly one code cell tagged {SETUP_TAG!r}")
    wanted = SETUP_CELL.format(**settings)
    if cells[0].source == wanted:
        return False
    cells[0].source = wanted
    nbformat.write(nb, path)
    return True


def chapter_title(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            first = cell.source.strip().splitlines()[0]
            return re.sub(r"^#+\s*(Chapter \d+ · )?", "", first)
    raise SystemExit(f"release: {path} has no markdown title")


def chapter_table(settings: dict[str, str]) -> str:
    repo_path = settings["repository"].removeprefix("https://github.com/")
    rows = ["| # | chapter | student notebook | open in Colab |", "|---|---|---|---|"]
    for number, chapter in enumerate(chapters(), start=1):
        for source in source_notebooks(chapter):
            relative = f"notebooks/{chapter}/{source.name}"
            colab = f"https://colab.research.google.com/github/{repo_path}/blob/{settings['branch']}/{relative}"
            rows.append(f"| {number} | {chapter_title(source)} | [{source.name}]({relative}) | [![Open In Colab]({BADGE})]({colab}) |")
    return "\n".join([TABLE_START, *rows, TABLE_END])


def stamped_readme(settings: dict[str, str]) -> str:
    text = README.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(TABLE_START) + ".*?" + re.escape(TABLE_END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"release: README.md has no {TABLE_START} ... {TABLE_END} block")
    return pattern.sub(lambda _: chapter_table(settings), text)


def tool_environment() -> dict[str, str]:
    """This Python's scripts folder first on PATH: nbgrader runs `alembic` from there."""
    scripts = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": os.pathsep.join([scripts, os.environ.get("PATH", "")]), "PYTHONWARNINGS": "ignore"}


def generate(chapter: str, release_dir: Path) -> Path:
    """Run `nbgrader generate_assignment` in a throw-away workspace; return the chapter's release folder."""
    sys.path.insert(0, str(REPO / "autograder"))
    from workspace import make_workspace

    with tempfile.TemporaryDirectory(prefix="seqlab-release-") as tmp:
        workspace = make_workspace(Path(tmp) / "workspace", db_url=f"sqlite:///{tmp}/gradebook.db")
        done = subprocess.run(
            [sys.executable, "-m", "nbgrader", "generate_assignment", chapter, "--force",
             f"--CourseDirectory.release_directory={release_dir}"],
            cwd=workspace, capture_output=True, text=True, env=tool_environment(),
        )
    if done.returncode != 0:
        raise SystemExit(f"release: nbgrader generate_assignment {chapter} failed:\n{done.stdout}\n{done.stderr}")
    return release_dir / chapter


def same_tree(a: Path, b: Path) -> list[str]:
    """Paths (relative) that differ between two folders."""
    compare = filecmp.dircmp(a, b)
    differ = [*compare.left_only, *compare.right_only, *compare.diff_files, *compare.funny_files]
    for sub in compare.common_dirs:
        differ += [f"{sub}/{p}" for p in same_tree(a / sub, b / sub)]
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale files instead of writing them")
    args = parser.parse_args(argv)
    settings = course_settings()
    stale: list[str] = []

    for chapter in chapters():
        for source in source_notebooks(chapter):
            if args.check:
                nb = nbformat.read(source, as_version=4)
                if nb.cells[0].source != SETUP_CELL.format(**settings):
                    stale.append(f"{source.relative_to(REPO)}: the Colab setup cell")
            elif stamp_setup_cell(source, settings):
                print(f"stamped {source.relative_to(REPO)}")

    readme = stamped_readme(settings)
    if readme != README.read_text(encoding="utf-8"):
        if args.check:
            stale.append("README.md: the chapter table")
        else:
            README.write_text(readme, encoding="utf-8")
            print("stamped README.md")

    with tempfile.TemporaryDirectory(prefix="seqlab-release-out-") as out:
        for chapter in chapters():
            released = generate(chapter, Path(out))
            target = NOTEBOOKS / chapter
            if args.check:
                differ = same_tree(released, target) if target.exists() else ["(missing)"]
                stale += [f"notebooks/{chapter}/{p}" for p in differ]
            else:
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(released, target)
                print(f"released notebooks/{chapter}")
        orphans = sorted({p.name for p in NOTEBOOKS.iterdir() if p.is_dir()} - set(chapters()))
        for orphan in orphans:
            if args.check:
                stale.append(f"notebooks/{orphan}: no source in solutions/")
            else:
                shutil.rmtree(NOTEBOOKS / orphan)
                print(f"removed notebooks/{orphan} (no source in solutions/)")

    if stale:
        print("stale, run `make release`:\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1
    if args.check:
        print("notebooks/, README.md and the setup cells are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
