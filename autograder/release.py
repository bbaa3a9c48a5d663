"""Regenerate the student notebooks (notebooks/) from the sources (solutions/) with nbgrader.

    python autograder/release.py           # stamp the repository URL, then regenerate notebooks/
    python autograder/release.py --check   # exit 1 if notebooks/, the README or a setup cell is stale
                                           # (notebooks/zh/ too: the Chinese edition, autograder/i18n.py)
    python autograder/release.py --handout build/handout [--chapter 07-attention]
                                           # a zip per chapter of the released notebooks, for an LMS upload

The Chinese edition, notebooks/zh/<chapter>/, is the English release with every markdown cell from the chapter's
catalog i18n/zh/<chapter>.po (autograder/i18n.py); a chapter whose catalog is missing or incomplete is released in
English only, with a line that says why. The manifest and the rules below cover it as they cover the English one.

A learner's work is never lost: notebooks/.release-manifest.json records what the last release wrote, and a
release replaces or removes only those files. A learner's own notebooks and Jupyter's checkpoints stay; a
release notebook edited in place moves to work/ before the new one is written (and `--check` notes it, never
failing on it). Learners keep their work in work/ (`make work`), which no release touches.

Before nbgrader runs, the repository URL from pyproject.toml ([tool.seqlab]) is stamped
into every notebook's Colab setup cell (the cell tagged "colab-setup") and into the
README's chapter table with its "Open in Colab" badges. The Chinese edition has its own: README.zh.md's table
points at notebooks/zh/, and each Chinese notebook's setup cell (SETUP_CELL_ZH) says its commands in Chinese and,
in Colab, chooses Chinese check messages (Colab does not tell the kernel which notebook it runs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
NOTEBOOKS = REPO / "notebooks"
MANIFEST = NOTEBOOKS / ".release-manifest.json"  # what the last release wrote (committed)
WORK = REPO / "work"  # a learner's own copies (git ignores it; `make work`)
README = REPO / "README.md"
README_ZH = REPO / "README.zh.md"
SETUP_TAG = "colab-setup"
TABLE_START, TABLE_END = "<!-- chapters:start -->", "<!-- chapters:end -->"
BADGE = "https://colab.research.google.com/assets/colab-badge.svg"

SETUP_CELL = '''# Colab only: install the course helpers (seqlab). Anywhere else this cell does nothing.
# Your work: on your own machine `make lab` opens your copy of this notebook in work/, which no course update
# touches (README, "Where your work lives"); in Colab, File > Save a copy in Drive keeps yours.
import sys
if "google.colab" in sys.modules:
    %pip install -q "seqlab @ git+{repository}@{branch}"'''

# The Chinese edition's setup cell: the same install; `%env` because seqlab picks the language from the notebook's
# metadata through Jupyter Server, which Colab is not (seqlab.i18n). Only in Colab: elsewhere, and in the grader's
# kernels, the cell does nothing, so a Chinese submission is graded as the English one is.
SETUP_CELL_ZH = '''# 仅用于 Colab：安装课程的辅助包（seqlab），并让检查信息使用中文。在其他地方，这个单元格什么也不做。
# 你的作业：在自己的电脑上，`make lab EDITION=zh` 打开你在 work/zh/ 中的这份 notebook 副本，课程更新从不覆盖它
# （README.zh.md）；在 Colab 中，用“文件 > 在云端硬盘中保存一份副本”保存你的版本。
import sys
if "google.colab" in sys.modules:
    %pip install -q "seqlab @ git+{repository}@{branch}"
    %env SEQLAB_LANGUAGE=zh'''


PYPROJECT = REPO / "pyproject.toml"


def course_settings() -> dict[str, str]:
    with open(PYPROJECT, "rb") as f:
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


def chinese_title(source: Path, catalog) -> str:
    """The notebook's title in the Chinese edition: its first markdown cell's translation, first line."""
    import i18n

    nb = nbformat.read(source, as_version=4)
    first = next(cell for cell in nb.cells if cell.cell_type == "markdown")
    message = catalog.get(first.source, context=i18n.cell_context(first))
    return re.sub(r"^#+\s*(第 \d+ 章 · )?", "", message.string.strip().splitlines()[0])


def chinese_chapters() -> dict[str, object]:
    """The chapters released in Chinese (a complete catalog, autograder/i18n.py), each with its catalog."""
    sys.path.insert(0, str(REPO / "autograder"))
    import i18n

    complete = {}
    for chapter in chapters():
        catalog = i18n.read_catalog(chapter)
        if catalog is not None and i18n.problems(chapter, catalog=catalog) == []:
            complete[chapter] = catalog
    return complete


def chapter_table(settings: dict[str, str], edition: str = "en") -> str:
    """README's chapter table (``edition="zh"``: README.zh.md's, the Chinese notebooks of the chapters translated)."""
    repo_path = settings["repository"].removeprefix("https://github.com/")
    if edition == "zh":
        rows = ["| # | 章节 | 学生 notebook | 在 Colab 中打开 |", "|---|---|---|---|"]
        catalogs = chinese_chapters()
    else:
        rows = ["| # | chapter | student notebook | open in Colab |", "|---|---|---|---|"]
    for number, chapter in enumerate(chapters(), start=1):
        if edition == "zh" and chapter not in catalogs:
            continue
        for source in source_notebooks(chapter):
            folder = f"notebooks/zh/{chapter}" if edition == "zh" else f"notebooks/{chapter}"
            relative = f"{folder}/{source.name}"
            title = chinese_title(source, catalogs[chapter]) if edition == "zh" else chapter_title(source)
            colab = f"https://colab.research.google.com/github/{repo_path}/blob/{settings['branch']}/{relative}"
            rows.append(f"| {number} | {title} | [{source.name}]({relative}) | [![Open In Colab]({BADGE})]({colab}) |")
    return "\n".join([TABLE_START, *rows, TABLE_END])


def stamped_readme(settings: dict[str, str], edition: str = "en") -> str:
    readme = README_ZH if edition == "zh" else README
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(TABLE_START) + ".*?" + re.escape(TABLE_END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"release: {readme.name} has no {TABLE_START} ... {TABLE_END} block")
    return pattern.sub(lambda _: chapter_table(settings, edition), text)


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


def chinese_edition(released: dict[str, Path], out: Path) -> tuple[dict[str, Path], list[str]]:
    """notebooks/zh/<chapter>/: each English release notebook with its markdown from i18n/zh/<chapter>.po and the
    Chinese setup cell, for every chapter whose catalog is complete (autograder/i18n.py); a chapter without one, or
    with entries missing, fuzzy or changing a formula or number, is left out with a line that says which."""
    sys.path.insert(0, str(REPO / "autograder"))
    import i18n

    return i18n.write_edition(released, out, setup_cell=SETUP_CELL_ZH.format(**course_settings()))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest() -> dict[str, str]:
    """What the last release wrote: each file under notebooks/ (relative, POSIX) and the SHA-256 of its bytes."""
    try:
        return json.loads(MANIFEST.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except ValueError as error:
        raise SystemExit(f"release: {MANIFEST.relative_to(REPO)} is not JSON ({error}); restore it with git") from error


def files_under(folder: Path) -> dict[str, Path]:
    """Every file under ``folder`` by its relative POSIX path (the manifest itself left out)."""
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*"))
            if p.is_file() and p != MANIFEST} if folder.exists() else {}


def committed_as_is(path: Path) -> bool:
    """True if git has this file exactly as it is on disk (committed): then an edit of it is the course's, not a
    learner's. Outside a git checkout (a downloaded zip) nothing counts as committed."""
    done = subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", "HEAD", "--", str(path)],
                          capture_output=True)
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "--error-unmatch", "--", str(path)],
                            capture_output=True)
    return done.returncode == 0 and listed.returncode == 0


def set_aside(path: Path, relative: str) -> Path:
    """Move a learner's edited copy of a generated notebook to work/, never over anything there."""
    target = WORK / relative
    if target.exists():
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = target.with_name(f"{target.stem}.edited-{stamp}{target.suffix}")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(path, target)
    return target


def write_release(released: dict[str, Path], manifest: dict[str, str]) -> None:
    """Put the new release in notebooks/ without losing a file it did not make.

    A file counts as the release's own when the manifest lists it with the bytes it has now; those are replaced
    or, when the new release has no such file, removed. Anything else under notebooks/ is somebody's work (a
    learner's notebook, a saved edit of a release notebook, Jupyter's checkpoints): it stays where it is, or, when a
    new release notebook must take its place, it moves to work/ first and this says where."""
    fresh = {relative: sha256(source) for relative, source in released.items()}
    for relative, path in files_under(NOTEBOOKS).items():
        now = sha256(path)
        ours = manifest.get(relative) == now
        if relative in released:
            if not ours and now != fresh[relative]:
                print(f"release: notebooks/{relative} was edited since the last release; "
                      f"your version is now {set_aside(path, relative).relative_to(REPO)}")
        elif ours:
            path.unlink()
            print(f"removed notebooks/{relative} (no longer released)")
    for relative, source in released.items():
        target = NOTEBOOKS / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    for folder in sorted((p for p in NOTEBOOKS.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()) and folder.relative_to(NOTEBOOKS).as_posix().split("/")[0] not in chapters():
            folder.rmdir()  # an emptied chapter that has no source any more
    MANIFEST.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"released {len(released)} file(s) into notebooks/")


def check_release(released: dict[str, Path], manifest: dict[str, str]) -> tuple[list[str], list[str]]:
    """(stale, notes): what `make release` would change in the course's files, and what it would keep of a learner's.

    Stale: a released file that the manifest or the committed notebooks/ does not have as nbgrader makes it now.
    A learner's work under notebooks/ (own notebooks, checkpoints, uncommitted edits of a release notebook) is
    never stale: `make release` keeps it, so it is only noted."""
    stale, notes = [], []
    on_disk = files_under(NOTEBOOKS)
    for relative, source in released.items():
        fresh = sha256(source)
        if manifest.get(relative) != fresh:
            stale.append(f"notebooks/{relative}: not what nbgrader makes of solutions/ now")
        elif relative not in on_disk:
            stale.append(f"notebooks/{relative}: missing")
        elif sha256(on_disk[relative]) != fresh:
            if committed_as_is(on_disk[relative]):
                stale.append(f"notebooks/{relative}: committed with edits that solutions/ does not make")
            else:
                notes.append(f"notebooks/{relative}: edited here since the release (`make release` moves it to work/)")
    stale += [f"notebooks/{relative}: released last time, no source now" for relative in manifest if relative not in released]
    notes += [f"notebooks/{relative}: not the release's (kept)" for relative in on_disk
              if relative not in released and relative not in manifest]
    return stale, notes


def handout(out: Path, only: list[str]) -> list[Path]:
    """A zip per chapter of what the release wrote (the manifest's files, as it wrote them): what students download
    from an LMS. A learner's files under notebooks/ are never in it, and a release file edited since is refused."""
    manifest = read_manifest()
    wanted = only or chapters()
    unknown = sorted(set(wanted) - set(chapters()))
    if unknown:
        raise SystemExit(f"release: no chapter {', '.join(unknown)}; the chapters: {', '.join(chapters())}")
    out.mkdir(parents=True, exist_ok=True)
    zips = []
    for chapter in wanted:
        members = sorted(r for r in manifest if r.split("/")[0] == chapter)
        if not members:
            raise SystemExit(f"release: notebooks/{chapter} was never released; run `make release` first")
        for relative in members:
            path = NOTEBOOKS / relative
            if not path.is_file() or sha256(path) != manifest[relative]:
                raise SystemExit(f"release: notebooks/{relative} is not as the release wrote it; run `make release`")
        target = out / f"{chapter}.zip"
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
            for relative in members:
                bundle.write(NOTEBOOKS / relative, relative)
        zips.append(target)
        print(f"handout {target}: {', '.join(members)}")
    return zips


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale files instead of writing them")
    parser.add_argument("--handout", type=Path, metavar="DIR",
                        help="write a zip per chapter of the released notebooks into DIR (nothing is regenerated)")
    parser.add_argument("--chapter", action="append", default=[], help="with --handout: only this chapter (repeatable)")
    args = parser.parse_args(argv)
    if args.chapter and not args.handout:
        parser.error("--chapter goes with --handout (a release regenerates every chapter)")
    if args.handout:
        handout(args.handout, args.chapter)
        return 0
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

    for edition, path in (("en", README), ("zh", README_ZH)):
        readme = stamped_readme(settings, edition)
        if readme != path.read_text(encoding="utf-8"):
            if args.check:
                stale.append(f"{path.name}: the chapter table")
            else:
                path.write_text(readme, encoding="utf-8")
                print(f"stamped {path.name}")

    manifest = read_manifest()
    with tempfile.TemporaryDirectory(prefix="seqlab-release-out-") as out:
        for chapter in chapters():
            generate(chapter, Path(out))
        released = files_under(Path(out))
        chinese, lines = chinese_edition(released, Path(out))
        released.update(chinese)
        if lines:
            print("\n".join(lines))
        if args.check:
            more, notes = check_release(released, manifest)
            stale += more
            if notes:
                print("kept as a learner's work, not checked:\n  " + "\n  ".join(notes))
        else:
            write_release(released, manifest)

    if stale:
        print("stale, run `make release`:\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1
    if args.check:
        print("notebooks/, README.md and the setup cells are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
