"""The Chinese edition from one source: message catalogs of the chapters' markdown (issue 46).

    python autograder/i18n.py extract 01-ngram-language-models   # create or update i18n/zh/<chapter>.po
    python autograder/i18n.py extract                            # update every catalog that exists
    python autograder/i18n.py check [CHAPTER ...]                # what keeps a chapter out of the Chinese release
    python autograder/i18n.py extract seqlab && python autograder/i18n.py compile   # what seqlab says (check messages)

solutions/ stays the only source. Each markdown cell of a chapter's solution notebooks is one message of the
chapter's catalog, ``i18n/zh/<chapter>.po`` (gettext, read and written with Babel): the msgid is the cell's English
text, the msgctxt the cell's nbgrader grade id where it has one, and the ``#:`` comment says where the cell is now
(informative only, so moving a cell orphans nothing). ``extract`` merges as msgmerge does: a new cell is an
untranslated entry, a changed cell keeps its old translation marked fuzzy (with the old English as
``#| msgid``), a removed cell's entry becomes obsolete (``#~``).

``autograder/release.py`` writes ``notebooks/zh/<chapter>/`` from the English student notebooks with every
markdown cell replaced by its translation, and only for a chapter whose catalog is complete: every cell
translated, nothing fuzzy, and every translation keeps its English cell's formulas, numbers, code spans, links and
HTML tags (``differences``), so that a figure quoted in Chinese is still the figure the notebook prints.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog, Message
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
CATALOGS = REPO / "i18n"
SEQLAB = REPO / "helpers" / "seqlab"
MESSAGES = "seqlab"  # the catalog of what seqlab says: its own messages and the visible checks' messages
# The chapters whose visible checks' messages are in the seqlab catalog (the others' stay English for now).
MESSAGE_CHAPTERS = ["01-ngram-language-models", "02-hidden-markov-models", "03-recurrent-neural-networks", "04-vanishing-gradients-gru-lstm", "05-word-embeddings", "06-seq2seq-beam-search-bleu", "07-attention", "08-transformers", "09-transformer-language-models", "10-beyond-the-2017-transformer"]
LANGUAGE = "zh"
EDITION_KEY = "language"  # the notebook metadata key that tells seqlab (and a reader) the edition: "zh"


@dataclass(frozen=True)
class Cell:
    """One markdown cell of a chapter: the notebook's file name, the cell's index there, its text and its key."""

    notebook: str
    index: int
    text: str
    context: str | None

    @property
    def where(self) -> str:
        first = self.text.strip().splitlines()[0] if self.text.strip() else ""
        place = f"{self.notebook} cell {self.index}" if self.notebook.endswith(".ipynb") else self.notebook
        return f"{place} «{first[:60]}»"


def chapters() -> list[str]:
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and not p.name.startswith("."))


def catalog_path(chapter: str, language: str = LANGUAGE) -> Path:
    return CATALOGS / language / f"{chapter}.po"


def cell_context(cell) -> str | None:
    """A markdown cell's key besides its text: its nbgrader grade id, where it has one (a manually graded answer)."""
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or None


def markdown_cells(chapter: str) -> list[Cell]:
    """Every markdown cell of the chapter's solution notebooks, in order."""
    notebooks = sorted((SOLUTIONS / chapter).glob("*.ipynb"))
    if not notebooks:
        raise SystemExit(f"i18n: no chapter {chapter!r}; the chapters: {', '.join(chapters())}")
    return [Cell(path.name, index, cell.source, cell_context(cell))
            for path in notebooks for index, cell in enumerate(nbformat.read(path, as_version=4).cells)
            if cell.cell_type == "markdown" and cell.source.strip()]


# Where seqlab.check takes the text a learner reads: (function, positions of those arguments, keywords).
CHECK_TEXT = {"expect": ((1, 2), ("message", "hint")), "expect_equal": ((2, 3), ("what", "hint")),
              "expect_close": ((2,), ("what", "hint")), "expect_raises": ((), ("what", "hint")),
              "expect_same": ((2, 3), ("what", "hint")), "call_named": ((0,), ("what", "hint")), "passed": ((0,), ())}
MARKERS = {"_", "N_", "_said", "_hint"}  # seqlab's own: a literal inside these is a message


def literals(node) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip()]


def check_messages(source: str) -> list[str]:
    """The literal texts that a test cell's source hands to seqlab.check (an f-string is made at run time: left out)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CHECK_TEXT:
            positions, keywords = CHECK_TEXT[node.func.id]
            chosen = [node.args[i] for i in positions if i < len(node.args)]
            chosen += [k.value for k in node.keywords if k.arg in keywords]
            found += [a.value for a in chosen if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.strip()]
    return found


def seqlab_messages() -> list[tuple[str, str]]:
    """(message, where) for every message seqlab shows: its own (marked with _, N_, _said or _hint in its modules)
    and those of the visible checks of MESSAGE_CHAPTERS, in order."""
    found = []
    for path in sorted(SEQLAB.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS and node.args \
                    and not isinstance(node.args[0], ast.Subscript):  # _(values["what"]) translates a value, not a key
                found += [(text, f"seqlab/{path.name}") for text in literals(node.args[0])]
    for chapter in MESSAGE_CHAPTERS:
        for path in sorted((SOLUTIONS / chapter).glob("*.ipynb")):
            for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
                if cell.cell_type == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
                    visible = cell.source.split("### BEGIN HIDDEN TESTS")[0]
                    found += [(text, f"{path.name}:{index}") for text in check_messages(visible)]
    return found


def template(chapter: str, language: str = LANGUAGE) -> Catalog:
    """The chapter's messages as solutions/ has them now, untranslated (``seqlab``: what seqlab says)."""
    if chapter == MESSAGES:
        catalog = Catalog(locale=language, project="seqlab", fuzzy=False, version="",
                          header_comment=f"# The {language} edition of what seqlab says: its own messages and the visible checks' "
                                         f"messages of {', '.join(MESSAGE_CHAPTERS)}.\n"
                                         "# Written by `python autograder/i18n.py extract seqlab`; `compile` makes seqlab's .mo.",
                          last_translator="seqlab course", language_team=f"seqlab course ({language})")
        for text, where in seqlab_messages():
            existing = catalog.get(text)
            if existing is None:
                catalog.add(text, locations=[(where, 0)])
            elif (where, 0) not in existing.locations:
                existing.locations.append((where, 0))
        return catalog
    catalog = Catalog(locale=language, project=f"seqlab {chapter}", fuzzy=False, version="",
                      header_comment=f"# The {language} edition of {chapter}: one entry per markdown cell of solutions/{chapter}/.\n"
                                     f"# Written by `python autograder/i18n.py extract {chapter}`; translate the msgstr, keep formulas,\n"
                                     f"# numbers and code as they are (autograder/i18n.py, differences).",
                      last_translator="seqlab course", language_team=f"seqlab course ({language})")
    for cell in markdown_cells(chapter):
        existing = catalog.get(cell.text, context=cell.context)
        if existing is not None:  # the same text twice: one message, both places
            existing.locations.append((cell.notebook, cell.index))
        else:
            catalog.add(cell.text, locations=[(cell.notebook, cell.index)], context=cell.context)
    return catalog


def without_format_flags(catalog: Catalog) -> Catalog:
    """Babel flags a msgid as python-format when it meets "45% of"; markdown is no format string."""
    for message in catalog:
        message.flags.discard("python-format")
    return catalog


def read_catalog(chapter: str, language: str = LANGUAGE) -> Catalog | None:
    path = catalog_path(chapter, language)
    if not path.exists():
        return None
    try:
        with path.open("rb") as f:
            catalog = read_po(f, locale=language, abort_invalid=True)
    except Exception as error:  # babel raises its own PoFileError, or ValueError on a bad header
        raise SystemExit(f"i18n: {path.relative_to(REPO)} is not a valid catalog ({error})") from error
    # Babel 2.18 writes a fuzzy entry's old English as "#| msgid" but reads it back as a translator comment, which
    # the next write wrapped into loose "# " lines and kept for good: drop it on reading, so that it is shown once.
    for message in (*catalog, *catalog.obsolete.values()):
        message.user_comments = [c for c in message.user_comments if not c.startswith("|")]
    return catalog


def po_text(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_po(out, without_format_flags(catalog), width=0, include_previous=True, omit_header=False)
    return out.getvalue()


def extract(chapter: str, language: str = LANGUAGE) -> tuple[Path, Counter]:
    """Create or update the chapter's catalog from solutions/; return its path and how many entries are in each state."""
    fresh = template(chapter, language)
    catalog = read_catalog(chapter, language)
    if catalog is None:
        catalog = fresh
    else:
        catalog.update(fresh, no_fuzzy_matching=False, update_creation_date=False)
    path = catalog_path(chapter, language)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(po_text(catalog))
    states = Counter(state(message) for message in catalog if message.id)
    states["obsolete"] = len(catalog.obsolete)
    return path, states


def state(message: Message) -> str:
    return "fuzzy" if message.fuzzy else "translated" if message.string else "untranslated"


# What a translation must keep of its English cell: it changes the words, never what the notebook computes or
# prints. Code (fenced and inline), formulas (display and inline), link targets and HTML tags are kept as written;
# the numbers of the prose are kept as a multiset (a Chinese sentence may order them differently).
FENCE = re.compile(r"```.*?```", re.S)
# A code span may wrap a line (CommonMark joins it with a space), never a paragraph: a blank line ends the search.
INLINE_CODE = re.compile(r"`(?:[^`\n]|\n(?![ \t]*\n))+`")
DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
INLINE_MATH = re.compile(r"\$[^$\n]+\$")
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
HTML_TAG = re.compile(r"</?(?:details|summary)\b[^>]*>")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
PLACEHOLDER = re.compile(r"\{\w*\}")  # a message template's fields ("{what}: expected {expected}")


def kept_parts(text: str) -> dict[str, Counter]:
    """The parts of a markdown cell that a translation must leave as they are, each as a multiset."""
    parts = {}
    rest = text
    for name, pattern in (("code block", FENCE), ("formula", DISPLAY_MATH), ("code", INLINE_CODE),
                          ("formula", INLINE_MATH)):
        found = pattern.findall(rest)
        parts[name] = parts.get(name, Counter()) + Counter(" ".join(f.split()) for f in found)
        rest = pattern.sub(" ", rest)
    parts["link"] = Counter(LINK_TARGET.findall(rest))
    parts["tag"] = Counter(t.split()[0].rstrip(">") for t in HTML_TAG.findall(rest))
    parts["placeholder"] = Counter(PLACEHOLDER.findall(rest))
    parts["number"] = Counter(n.replace(",", "") for n in NUMBER.findall(LINK_TARGET.sub("]", rest)))
    return parts


def emphasis(text: str) -> Counter:
    """The bold and italic spans a markdown cell renders, rendered by nbconvert's own markdown filter (its code spans
    and formulas are tokens, so nothing inside them counts, and a span that ends in one, ``**only when `training`**``,
    is bold as a reader sees it): a translation keeps them. A ``**`` between Chinese punctuation and a character
    (``**绝对折扣。**从``) is not a delimiter in CommonMark, so it shows as two stars."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return Counter(re.findall(r"<(strong|em)>", markdown2html_mistune(text)))


def differences(english: str, translated: str) -> list[str]:
    """What the translation changed that it must keep: one line per part, naming what is missing or added."""
    problems = []
    if emphasis(english) != emphasis(translated):
        problems.append(f"emphasis: the English renders {dict(emphasis(english))}, the translation {dict(emphasis(translated))} "
                        "(a ** or * beside Chinese punctuation is not rendered: put the punctuation outside it or a space after it)")
    mine, theirs = kept_parts(english), kept_parts(translated)
    for name in mine:
        missing, added = mine[name] - theirs[name], theirs[name] - mine[name]
        if missing or added:
            said = []
            if missing:
                said.append("missing " + ", ".join(repr(p) for p in sorted(missing.elements())))
            if added:
                said.append("added " + ", ".join(repr(p) for p in sorted(added.elements())))
            problems.append(f"{name}: {'; '.join(said)}")
    return problems


def problems(chapter: str, language: str = LANGUAGE, catalog: Catalog | None = None) -> list[str] | None:
    """Why the chapter cannot be released in this language, one line per entry; None when it has no catalog."""
    catalog = catalog if catalog is not None else read_catalog(chapter, language)
    if catalog is None:
        return None
    found = []
    texts = ([Cell(where.partition(":")[0], int(where.partition(":")[2] or 0), text, None) for text, where in seqlab_messages()]
             if chapter == MESSAGES else markdown_cells(chapter))
    for cell in texts:
        message = catalog.get(cell.text, context=cell.context)
        if message is None:
            found.append(f"{cell.where}: no entry (a new or changed cell: run `python autograder/i18n.py extract {chapter}`)")
        elif message.fuzzy:
            found.append(f"{cell.where}: fuzzy (the English changed since it was translated)")
        elif not message.string:
            found.append(f"{cell.where}: untranslated")
        else:
            found += [f"{cell.where}: the translation changed the {what}" for what in differences(cell.text, message.string)]
    return found


SETUP_TAG = "colab-setup"  # the first cell of every notebook: installs seqlab in Colab (autograder/release.py)


def translated_notebook(english: Path, catalog: Catalog, language: str = LANGUAGE, setup_cell: str | None = None):
    """The released English notebook with each markdown cell in the catalog's language and, given ``setup_cell``,
    that text in its Colab setup cell; everything else as it is, and the notebook's metadata says the edition (the
    kernel's language stays as it is)."""
    nb = nbformat.read(english, as_version=4)
    for index, cell in enumerate(nb.cells):
        if setup_cell is not None and SETUP_TAG in cell.get("metadata", {}).get("tags", []):
            cell.source = setup_cell
        if cell.cell_type != "markdown" or not cell.source.strip():
            continue
        message = catalog.get(cell.source, context=cell_context(cell))
        if message is None or message.fuzzy or not message.string:
            raise ValueError(f"{english.name} cell {index} has no {language} translation")
        cell.source = message.string
    nb.metadata[EDITION_KEY] = language
    return nb


def write_edition(released: dict[str, Path], out: Path, language: str = LANGUAGE,
                  setup_cell: str | None = None) -> tuple[dict[str, Path], list[str]]:
    """Write the translated edition of each released chapter that has a complete catalog into ``out/<language>/``
    (``setup_cell``: the edition's Colab setup cell, release.py's SETUP_CELL_ZH).

    ``released`` maps each English release file (``<chapter>/<name>.ipynb``) to where it lies. Returns the files
    written (relative to the release, ``zh/<chapter>/<name>.ipynb``) and one line per chapter left out, and why."""
    written, lines = {}, []
    by_chapter: dict[str, list[str]] = {}
    for relative in released:
        by_chapter.setdefault(relative.split("/")[0], []).append(relative)
    untranslated = []
    for chapter in sorted(by_chapter):
        catalog = read_catalog(chapter, language)
        if catalog is None:
            untranslated.append(chapter)
            continue
        found = problems(chapter, language, catalog)
        if found:
            lines.append(f"{language}: {chapter} not released in {language}: {len(found)} entr{'y' if len(found) == 1 else 'ies'} "
                         f"of {catalog_path(chapter, language).relative_to(REPO)} to fix:\n    " + "\n    ".join(found))
            continue
        for relative in sorted(by_chapter[chapter]):
            if not relative.endswith(".ipynb"):
                continue
            target = out / language / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(translated_notebook(released[relative], catalog, language, setup_cell), target)
            written[f"{language}/{relative}"] = target
    if untranslated:
        lines.append(f"{language}: no catalog yet (English only): {', '.join(untranslated)}")
    return written, lines


def mo_path(language: str = LANGUAGE) -> Path:
    return SEQLAB / "locale" / language / "LC_MESSAGES" / f"{MESSAGES}.mo"


def mo_bytes(language: str = LANGUAGE) -> bytes:
    """seqlab's compiled catalog: the translated, not fuzzy entries of i18n/<language>/seqlab.po (gettext's .mo)."""
    catalog = read_catalog(MESSAGES, language)
    if catalog is None:
        raise SystemExit(f"i18n: no {catalog_path(MESSAGES, language).relative_to(REPO)}; "
                         f"`python autograder/i18n.py extract {MESSAGES}` starts it")
    out = io.BytesIO()
    write_mo(out, catalog, use_fuzzy=False)
    return out.getvalue()


def compile_messages(language: str = LANGUAGE) -> Path:
    path = mo_path(language)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(mo_bytes(language))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    extracting = commands.add_parser("extract", help="create or update i18n/zh/<chapter>.po from solutions/")
    extracting.add_argument("chapter", nargs="*", help="chapters (default: every chapter that has a catalog)")
    checking = commands.add_parser("check", help="list what keeps each chapter with a catalog out of the Chinese release")
    checking.add_argument("chapter", nargs="*", help="chapters (default: every chapter that has a catalog)")
    commands.add_parser("compile", help=f"compile i18n/{LANGUAGE}/{MESSAGES}.po into seqlab's .mo (seqlab.i18n reads it)")
    args = parser.parse_args(argv)
    if args.command == "compile":
        print(f"wrote {compile_messages().relative_to(REPO)}")
        return 0
    unknown = sorted(set(args.chapter) - set(chapters()) - {MESSAGES})
    if unknown:
        parser.error(f"no chapter {', '.join(unknown)}; the chapters: {', '.join(chapters())} (and {MESSAGES}, its messages)")
    with_catalog = [c for c in chapters() + [MESSAGES] if catalog_path(c).exists()]
    wanted = args.chapter or with_catalog
    if args.command == "extract":
        for chapter in wanted:
            path, states = extract(chapter)
            print(f"{path.relative_to(REPO)}: " + ", ".join(f"{states[s]} {s}" for s in
                                                             ("translated", "fuzzy", "untranslated", "obsolete")))
        return 0
    failed = False
    for chapter in wanted:
        found = problems(chapter)
        if found is None:
            print(f"{chapter}: no catalog ({catalog_path(chapter).relative_to(REPO)}); "
                  f"`python autograder/i18n.py extract {chapter}` starts one")
            failed = True
        elif found:
            print(f"{chapter}: {len(found)} to fix\n  " + "\n  ".join(found))
            failed = True
        else:
            print(f"{chapter}: complete, released in {LANGUAGE}")
    untranslated = [c for c in chapters() if c not in with_catalog]
    if MESSAGES in wanted and catalog_path(MESSAGES).exists() and mo_path().exists() and mo_path().read_bytes() != mo_bytes():
        print(f"{MESSAGES}: {mo_path().relative_to(REPO)} is older than the catalog: `python autograder/i18n.py compile`")
        failed = True
    if not args.chapter and untranslated:
        print(f"no catalog yet: {', '.join(untranslated)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
