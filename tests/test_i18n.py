"""The Chinese edition comes from the one source and cannot drift silently (issue 46).

solutions/ is the only source; each chapter's markdown is translated in a gettext catalog, i18n/zh/<chapter>.po
(autograder/i18n.py), and `make release` writes notebooks/zh/<chapter>/ from the English student notebook with its
markdown from the catalog. What is checked:

* a translated chapter's catalog is complete: an English markdown cell that changed since it was translated
  (fuzzy), or that has no entry, fails here, naming the cell;
* a translation keeps its cell's formulas, numbers, code, links and HTML tags (so a figure quoted in Chinese is
  the figure the English text quotes, which tests/test_claims.py finds printed);
* a Chinese notebook differs from the English one in its markdown text and its edition mark only;
* the catalog tools merge as msgmerge does (changed -> fuzzy, new -> untranslated, removed -> obsolete, moved ->
  still translated), and the release keeps a learner's edited Chinese notebook as it keeps an English one;
* the grader gives a Chinese submission the scores it gives the same code in the English notebook.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import sys

import nbformat
import pytest

from course import CHAPTERS, NOTEBOOKS, REPO, SOLUTIONS, nbgrader_meta

sys.path.insert(0, str(REPO / "autograder"))
import i18n  # noqa: E402
import release  # noqa: E402

# The chapters read in Chinese: those with a catalog. A catalog in the repository must be complete (a chapter on its
# way stays out of git until it is); test_every_chapter_has_a_chinese_edition says which are left (every chapter
# has one since chapter 10's catalog: a new chapter fails it until it is translated).
TRANSLATED = [c for c in CHAPTERS if i18n.catalog_path(c).exists()]
MANIFEST = json.loads((NOTEBOOKS / ".release-manifest.json").read_text())
CHINESE = sorted(relative for relative in MANIFEST if relative.startswith("zh/"))


def test_chapters_1_and_2_are_translated():
    assert {"01-ngram-language-models", "02-hidden-markov-models"} <= set(TRANSLATED)


@pytest.mark.parametrize("chapter", TRANSLATED)
def test_a_translated_chapters_catalog_is_complete_and_keeps_every_figure(chapter):
    problems = i18n.problems(chapter)
    assert problems is not None, f"{i18n.catalog_path(chapter).relative_to(REPO)} is missing"
    assert not problems, (f"{chapter}: the Chinese edition is behind the English (update i18n/zh/{chapter}.po: "
                          f"`python autograder/i18n.py extract {chapter}`, then translate the entries named):\n"
                          + "\n".join(problems))


def test_the_release_holds_a_chinese_notebook_for_each_translated_chapter_and_no_other():
    wanted = sorted(f"zh/{relative}" for relative in MANIFEST
                    if not relative.startswith("zh/") and relative.split("/")[0] in TRANSLATED)
    assert CHINESE == wanted, "run `make release` (notebooks/zh/ is written from the catalogs)"


def test_every_chapter_has_a_chinese_edition():
    left = [c for c in CHAPTERS if c not in TRANSLATED]
    assert not left, f"{len(TRANSLATED)} of {len(CHAPTERS)} chapters in Chinese; not yet: {', '.join(left)}"


def without_markdown_text(nb) -> dict:
    """The notebook as JSON with each markdown cell's text and the Colab setup cell's left out and the edition mark
    dropped: what must be equal."""
    plain = copy.deepcopy(json.loads(nbformat.writes(nb)))
    plain["metadata"].pop(i18n.EDITION_KEY, None)
    for cell in plain["cells"]:
        if cell["cell_type"] == "markdown" or i18n.SETUP_TAG in cell["metadata"].get("tags", []):
            cell["source"] = ""
    return plain


ZH_SETUP_CELL = release.SETUP_CELL_ZH.format(**release.course_settings())


@pytest.mark.parametrize("relative", CHINESE)
def test_a_chinese_notebook_differs_from_the_english_only_in_markdown_text(relative):
    chinese_path, english_path = NOTEBOOKS / relative, NOTEBOOKS / relative.removeprefix("zh/")
    chinese, english = nbformat.read(chinese_path, as_version=4), nbformat.read(english_path, as_version=4)
    assert chinese.metadata.get(i18n.EDITION_KEY) == "zh", "the notebook's metadata must say its edition"
    assert chinese.metadata.kernelspec == english.metadata.kernelspec, "the kernel (and its language) stays Python"
    assert without_markdown_text(chinese) == without_markdown_text(english), \
        "code cells, cell metadata (grade ids) and tests must be the English release's"
    assert chinese.cells[0].source == ZH_SETUP_CELL, "the Colab setup cell is the Chinese edition's (run `make release`)"
    catalog = i18n.read_catalog(relative.split("/")[1])
    for index, (zh, en) in enumerate(zip(chinese.cells, english.cells)):
        if en.cell_type == "markdown" and en.source.strip():
            message = catalog.get(en.source, context=i18n.cell_context(en))
            assert message is not None and zh.source == message.string, \
                f"cell {index}: not the catalog's translation of the English cell (run `make release`)"


def test_the_zh_notebook_is_what_the_catalog_makes_of_the_english_release_byte_for_byte(tmp_path):
    for relative in CHINESE:
        english = relative.removeprefix("zh/")
        written, lines = i18n.write_edition({english: NOTEBOOKS / english}, tmp_path, setup_cell=ZH_SETUP_CELL)
        assert relative in written, f"{relative} is released but its catalog no longer makes it:\n" + "\n".join(lines)
        assert written[relative].read_bytes() == (NOTEBOOKS / relative).read_bytes(), relative


# ---- Colab: README.zh.md's badges and the Chinese setup cell ------------------------------------------------

def test_readme_zh_badges_open_every_chinese_notebook_and_only_those():
    settings = release.course_settings()
    repo_path = settings["repository"].removeprefix("https://github.com/")
    readme = (REPO / "README.zh.md").read_text(encoding="utf-8")
    table = readme.split(release.TABLE_START)[1].split(release.TABLE_END)[0]
    badges = re.findall(r"\]\(https://colab\.research\.google\.com/github/([^)]+)\)", table)
    assert badges == [f"{repo_path}/blob/{settings['branch']}/notebooks/{relative}" for relative in CHINESE], \
        "README.zh.md's Colab badges are not the Chinese notebooks (run `make release`)"
    links = re.findall(r"\| \[[^]]+\]\((notebooks/[^)]+)\) \|", table)
    assert links == [f"notebooks/{relative}" for relative in CHINESE]


def run_setup_cell(source: str, in_colab: bool, monkeypatch) -> list[tuple[str, str]]:
    """Run a setup cell as IPython would, in Colab or not, its line magics recorded instead of run."""
    from IPython.core.inputtransformer2 import TransformerManager

    magics: list[tuple[str, str]] = []

    class Shell:
        def run_line_magic(self, name, line, _stack_depth=1):
            magics.append((name, line))

    with monkeypatch.context() as patch:
        if in_colab:
            patch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
        else:
            patch.delitem(sys.modules, "google.colab", raising=False)
        exec(compile(TransformerManager().transform_cell(source), "<setup cell>", "exec"), {"get_ipython": Shell})
    return magics


def test_the_chinese_setup_cell_installs_the_course_and_chooses_chinese_only_in_colab(monkeypatch):
    settings = release.course_settings()
    english = release.SETUP_CELL.format(**settings)
    install = ("pip", f'install -q "seqlab @ git+{settings["repository"]}@{settings["branch"]}"')
    assert run_setup_cell(english, True, monkeypatch) == [install]
    assert run_setup_cell(ZH_SETUP_CELL, True, monkeypatch) == [install, ("env", "SEQLAB_LANGUAGE=zh")]
    assert run_setup_cell(ZH_SETUP_CELL, False, monkeypatch) == [], "outside Colab (the grader's kernels) it does nothing"
    assert "make lab EDITION=zh" in ZH_SETUP_CELL and "work/zh/" in ZH_SETUP_CELL


# ---- what a translation must keep ----------------------------------------------------------------------------

ENGLISH = ("With $k = 0.01$ and $V \\approx 24{,}000$ the pseudo-counts add 243 to every context "
           "(71% of them, see [the README](../README.md)); `addk_prob(table, 0.01)`.\n\n"
           "<details><summary>Hint 1</summary>\n\n```python\nreturn (count + k) / (total + k * V)\n```\n</details>")
CHINESE_OK = ("取 $k = 0.01$、$V \\approx 24{,}000$，伪计数给每个上下文加上 243（其中 71%，见 [README](../README.md)）；"
              "`addk_prob(table, 0.01)`。\n\n<details><summary>提示 1</summary>\n\n```python\n"
              "return (count + k) / (total + k * V)\n```\n</details>")


def test_bold_beside_chinese_punctuation_must_still_render():
    english = "**Absolute discounting.** Subtract a fixed $D$."
    assert i18n.differences(english, "**绝对折扣。** 从每个计数中减去固定的 $D$。") == []
    assert i18n.differences(english, "**绝对折扣。**从每个计数中减去固定的 $D$。")[0].startswith(
        "emphasis: the English renders {'strong': 1}, the translation {}")
    assert i18n.differences(english, "**绝对折扣**。从每个计数中减去固定的 $D$。") == []


def test_a_bold_span_that_ends_in_code_or_a_formula_counts_as_bold():
    """nbconvert renders **only when `training`** bold; the check once replaced code by a space before rendering, so
    the closing ** followed a space and the span counted as not bold (catalogs added a space after it to match)."""
    english = "Dropout acts **only when `training`** is true, **the offset $m - n$** matters."
    assert i18n.emphasis(english) == {"strong": 2}
    assert i18n.differences(english, "丢弃法**只在 `training`** 为真时起作用，**偏移 $m - n$** 才重要。") == []
    found = i18n.differences(english, "丢弃法**只在 `training`**为真时起作用，**偏移 $m - n$** 才重要。")
    assert found and found[0].startswith("emphasis: the English renders {'strong': 2}, the translation {'strong': 1}"), \
        "a ** after a code span and before a Chinese character is not a delimiter: it shows as stars"
    assert i18n.emphasis("**x $a*b$ y** and `*not em*`") == {"strong": 1}, "nothing inside a formula or code counts"


def test_a_code_span_that_wraps_a_line_is_one_span():
    english = "Call `build_vocab(sentences,\nmin_count=2)` first, then `replace_rare`."
    assert i18n.kept_parts(english)["code"] == {"`build_vocab(sentences, min_count=2)`": 1, "`replace_rare`": 1}
    assert i18n.differences(english, "先调用 `build_vocab(sentences, min_count=2)`，再调用 `replace_rare`。") == []
    assert i18n.kept_parts("`a` one\n\ntwo `b`")["code"] == {"`a`": 1, "`b`": 1}, "a blank line ends a span"
    assert "code: missing '`replace_rare`'" in " ".join(
        i18n.differences(english, "先调用 `build_vocab(sentences, min_count=2)`，再调用 replace_rare。"))


def test_a_faithful_translation_keeps_everything_it_must():
    assert i18n.differences(ENGLISH, CHINESE_OK) == []
    assert i18n.differences(ENGLISH, CHINESE_OK.replace("243（其中 71%", "71%（其中 243")) == [], \
        "a sentence may order the numbers differently"


@pytest.mark.parametrize("planted, named", [
    (("243", "244"), "number: missing '243'; added '244'"),
    (("71%", "七成"), "number: missing '71'"),
    (("$k = 0.01$", "$k=0.1$"), "formula: missing '$k = 0.01$'; added '$k=0.1$'"),
    (("、$V \\approx 24{,}000$", ""), "formula: missing '$V \\\\approx 24{,}000$'"),
    (("`addk_prob(table, 0.01)`", "`addk_prob(表, 0.01)`"), "code: missing '`addk_prob(table, 0.01)`'"),
    (("(total + k * V)", "(total + k)"), "code block: missing"),
    (("(../README.md)", "(README.md)"), "link: missing '../README.md'; added 'README.md'"),
    (("</details>", ""), "tag: missing '</details'"),
])
def test_a_translation_that_changes_a_figure_formula_or_code_is_named(planted, named):
    found = i18n.differences(ENGLISH, CHINESE_OK.replace(*planted))
    assert any(line.startswith(named) for line in found), found


# ---- the catalog tools: msgmerge's semantics, on a chapter of our own -----------------------------------------

def chapter_with(folder, texts: list[str], name: str = "01-toy") -> None:
    nb = nbformat.v4.new_notebook(nbformat_minor=4)  # the course's notebooks: nbformat 4.4, no cell ids
    nb.cells = [nbformat.v4.new_code_cell("x = 1")] + [nbformat.v4.new_markdown_cell(t) for t in texts]
    for cell in nb.cells:
        cell.pop("id", None)
    (folder / name).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name / f"{name}.ipynb")


@pytest.fixture
def toy(tmp_path, monkeypatch):
    monkeypatch.setattr(i18n, "SOLUTIONS", tmp_path / "solutions")
    monkeypatch.setattr(i18n, "CATALOGS", tmp_path / "i18n")
    monkeypatch.setattr(i18n, "REPO", tmp_path)
    return tmp_path


def translate_all(chapter: str, prefix: str = "译：") -> None:
    catalog = i18n.read_catalog(chapter)
    for message in catalog:
        if message.id and not message.string:
            message.string = prefix + message.id
        message.flags.discard("fuzzy")
    i18n.catalog_path(chapter).write_bytes(i18n.po_text(catalog))


A = "## 1. Counting\n\nCount every word of every sentence, 3 times."
B = "## 2. Smoothing\n\nAdd $k$ to every count of the context, and $kV$ to its total."
C = "## 3. Results\n\nThe perplexity on the test split."


def test_extract_marks_changed_cells_fuzzy_new_ones_untranslated_and_removed_ones_obsolete(toy):
    chapter_with(toy / "solutions", [A, B, C])
    i18n.extract("01-toy")
    translate_all("01-toy")
    assert i18n.problems("01-toy") == []

    changed = B.replace("every count", "each count")
    chapter_with(toy / "solutions", [C, changed, "## 4. New\n\nA new section."])  # A removed, C moved, B changed
    assert [line.split(": ", 1)[1][:8] for line in i18n.problems("01-toy")] == ["no entry", "no entry"], \
        "before extract, the changed and the new cell have no entry"
    path, states = i18n.extract("01-toy")
    assert (states["translated"], states["fuzzy"], states["untranslated"], states["obsolete"]) == (1, 1, 1, 1)
    catalog = i18n.read_catalog("01-toy")
    assert catalog.get(C).string == "译：" + C, "a moved cell keeps its translation"
    assert catalog.get(changed).fuzzy and catalog.get(changed).string == "译：" + B, "a changed cell keeps its old translation, fuzzy"
    # The old English is written beside the fuzzy entry for the translator (Babel 2.18 does not read it back, so a
    # second extract drops it; the fuzzy flag stays until a translator clears it).
    text = path.read_text()
    assert any(line.startswith("#| msgid") and "every count" in line for line in text.splitlines()), \
        "the old English is written beside the fuzzy entry"
    assert "#~ msgid" in text and "#~ \"Count every word" in text, "the removed cell's entry is kept, obsolete"
    problems = i18n.problems("01-toy")
    assert len(problems) == 2 and "fuzzy (the English changed" in problems[0] and "untranslated" in problems[1], problems
    assert "cell 2 «## 2. Smoothing»" in problems[0] and "cell 3 «## 4. New»" in problems[1], "the cell is named"
    i18n.extract("01-toy")  # again: the old English was shown once; it must not stay behind as a comment
    assert not any(line.startswith(("#|", "# |")) for line in path.read_text().splitlines()), path.read_text()
    assert i18n.read_catalog("01-toy").get(changed).fuzzy, "the fuzzy flag stays until a translator clears it"


def test_extract_twice_changes_nothing_and_a_bad_catalog_is_a_clear_error(toy):
    chapter_with(toy / "solutions", [A, B])
    path, _ = i18n.extract("01-toy")
    first = path.read_bytes()
    i18n.extract("01-toy")
    assert path.read_bytes() == first
    path.write_text("not a catalog at all\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="is not a valid catalog"):
        i18n.read_catalog("01-toy")


def test_the_command_line_names_a_chapter_that_does_not_exist(toy, capsys):
    chapter_with(toy / "solutions", [A])
    with pytest.raises(SystemExit) as stop:
        i18n.main(["extract", "02-nope"])
    assert stop.value.code == 2 and "no chapter 02-nope; the chapters: 01-toy" in capsys.readouterr().err


def test_an_incomplete_catalog_keeps_its_chapter_out_of_the_release_and_says_which_entries(toy):
    chapter_with(toy / "solutions", [A, B])
    chapter_with(toy / "solutions", [C], name="02-toy")
    i18n.extract("01-toy")
    translate_all("01-toy")
    release_dir = toy / "release"
    for chapter in ("01-toy", "02-toy"):
        (release_dir / chapter).mkdir(parents=True)
        shutil.copy(toy / "solutions" / chapter / f"{chapter}.ipynb", release_dir / chapter)
    released = {f"{c}/{c}.ipynb": release_dir / c / f"{c}.ipynb" for c in ("01-toy", "02-toy")}

    written, lines = i18n.write_edition(released, toy / "out")
    assert list(written) == ["zh/01-toy/01-toy.ipynb"] and lines == ["zh: no catalog yet (English only): 02-toy"]
    nb = nbformat.read(written["zh/01-toy/01-toy.ipynb"], as_version=4)
    assert [c.source for c in nb.cells[1:]] == ["译：" + A, "译：" + B] and nb.metadata["language"] == "zh"

    chapter_with(toy / "solutions", [A, B.replace("$kV$", "$k V$")])  # the English changes; the catalog does not
    shutil.copy(toy / "solutions" / "01-toy" / "01-toy.ipynb", release_dir / "01-toy")
    i18n.extract("01-toy")
    written, lines = i18n.write_edition(released, toy / "out2")
    assert written == {}, "a chapter with a fuzzy entry is not released in Chinese"
    assert lines[0].startswith("zh: 01-toy not released in zh: 1 entry of i18n/zh/01-toy.po to fix:")
    assert "01-toy.ipynb cell 2 «## 2. Smoothing»: fuzzy" in lines[0]

    catalog = i18n.read_catalog("01-toy")
    for message in catalog:
        message.flags.discard("fuzzy")
        message.string = "译：" + message.id
    catalog.get(A).string = "## 1. 计数\n\n数一数每个句子里的每个词，4 次。"  # a translation that changed a number
    i18n.catalog_path("01-toy").write_bytes(i18n.po_text(catalog))
    written, lines = i18n.write_edition(released, toy / "out3")
    assert written == {} and "the translation changed the number: missing '3'; added '4'" in lines[0], lines


def test_the_release_writes_the_chinese_notebook_and_keeps_a_learners_edited_copy(tmp_path, monkeypatch, capsys):
    """release.py's Chinese edition goes through the manifest's rule: a release notebook edited in place moves to
    work/ before the new one is written."""
    notebooks, work = tmp_path / "notebooks", tmp_path / "work"
    for name, value in (("REPO", tmp_path), ("NOTEBOOKS", notebooks), ("MANIFEST", notebooks / ".release-manifest.json"),
                        ("WORK", work)):
        monkeypatch.setattr(release, name, value)
    english = f"{GRADED_CHAPTER}/{GRADED_CHAPTER}.ipynb"
    released = {english: NOTEBOOKS / english}
    chinese, lines = release.chinese_edition(released, tmp_path / "out")
    relative = f"zh/{english}"
    assert list(chinese) == [relative] and not any(GRADED_CHAPTER in line for line in lines)
    release.write_release({**released, **chinese}, {})
    assert (notebooks / relative).read_bytes() == (NOTEBOOKS / relative).read_bytes()
    assert sorted(release.read_manifest()) == [english, relative]

    edited = (notebooks / relative).read_text(encoding="utf-8").replace("raise NotImplementedError()", "return None  # 我的答案", 1)
    (notebooks / relative).write_text(edited, encoding="utf-8")  # the learner's edit
    release.write_release({**released, **chinese}, release.read_manifest())
    assert (work / relative).read_text(encoding="utf-8") == edited, "the learner's edited Chinese notebook was lost"
    assert (notebooks / relative).read_bytes() == (NOTEBOOKS / relative).read_bytes()
    assert f"your version is now work/{relative}" in capsys.readouterr().out


# ---- grading is language-blind --------------------------------------------------------------------------------

GRADED_CHAPTER = "01-ngram-language-models"


def partly_wrong(path, out) -> None:
    """The solution with build_vocab forgetting its tie-break: exactly its test cell must lose its points."""
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if nbgrader_meta(c).get("solution") and "def build_vocab" in c.source)
    assert "kept.sort(key=lambda w: (-counts[w], w))" in cell.source
    cell.source = cell.source.replace("kept.sort(key=lambda w: (-counts[w], w))", "kept.sort(key=lambda w: -counts[w])")
    nbformat.write(nb, out)


@pytest.mark.slow
@pytest.mark.xdist_group("i18n-grading")
def test_the_grader_gives_a_chinese_submission_the_scores_of_the_same_code_in_english(tmp_path):
    from sandbox import Limits, Sandbox, bubblewrap

    if bubblewrap() is None:
        pytest.skip("bubblewrap is not installed")
    import job

    catalog = i18n.read_catalog(GRADED_CHAPTER)
    name = f"{GRADED_CHAPTER}.ipynb"
    solution = SOLUTIONS / GRADED_CHAPTER / name
    partly_wrong(solution, tmp_path / "partly-wrong-en.ipynb")
    submissions = {
        "en-partly-wrong": tmp_path / "partly-wrong-en.ipynb",
        "zh-partly-wrong": i18n.translated_notebook(tmp_path / "partly-wrong-en.ipynb", catalog),
        "zh-solution": i18n.translated_notebook(solution, catalog),
    }
    worker = Sandbox(tmp_path / "worker", Limits())
    scores = {}
    try:
        for student, notebook in submissions.items():
            folder = tmp_path / "submitted" / student
            folder.mkdir(parents=True)
            if isinstance(notebook, nbformat.NotebookNode):
                assert notebook.metadata["language"] == "zh"
                nbformat.write(notebook, folder / name)
            else:
                shutil.copy(notebook, folder / name)
            result = job.run_job(folder, SOLUTIONS / GRADED_CHAPTER, student, tmp_path / "out" / student, worker)
            cells = {gid: cell["auto_score"] for entry in result["notebooks"].values()
                     for gid, cell in entry["cells"].items() if cell["test"]}
            scores[student] = (result["score"], result["max_score"], cells,
                               [p for entry in result["notebooks"].values() for p in entry.get("problems", [])])
    finally:
        worker.close()
    score, max_score, cells, problems = scores["zh-solution"]
    assert score == max_score > 0 and not problems, f"the Chinese solution lost points: {cells} {problems}"
    assert scores["zh-partly-wrong"] == scores["en-partly-wrong"], scores
    lost = {gid for gid, points in scores["en-partly-wrong"][2].items() if points < cells[gid]}
    assert lost == {gid for gid in cells if "vocab" in gid}, f"the planted mistake should cost build_vocab's points only: {lost}"
    # The job's feedback page for the Chinese submission is in Chinese (feedback.py), the English one's in English.
    stem = GRADED_CHAPTER
    chinese_page = (tmp_path / "out" / "zh-partly-wrong" / f"{stem}.html").read_text(encoding="utf-8")
    english_page = (tmp_path / "out" / "en-partly-wrong" / f"{stem}.html").read_text(encoding="utf-8")
    assert '<html lang="zh-Hans">' in chinese_page and "得分：" in chinese_page and "测试单元格" in chinese_page, \
        "the job's feedback page for the Chinese submission is not in Chinese"
    assert "Score:" not in chinese_page and "Test cell</a>" not in chinese_page
    assert "(Score: " in english_page and "得分" not in english_page


# ---- what seqlab says: the check messages in the notebook's language ------------------------------------------

sys.path.insert(0, str(REPO / "helpers"))
from seqlab import check as seqlab_check  # noqa: E402
from seqlab import i18n as seqlab_i18n  # noqa: E402


def test_the_seqlab_catalog_has_every_message_translated_and_compiled():
    problems = i18n.problems(i18n.MESSAGES)
    assert problems == [], ("what seqlab says changed without its Chinese entry (`python autograder/i18n.py extract seqlab`, "
                            "translate, then `compile`):\n" + "\n".join(problems))
    assert i18n.mo_path().read_bytes() == i18n.mo_bytes(), "seqlab's .mo is older than i18n/zh/seqlab.po: run `compile`"
    assert i18n.MESSAGE_CHAPTERS == CHAPTERS, "every chapter's visible checks speak the notebook's language"
    for chapter in CHAPTERS:
        messages = {text for text, where in i18n.seqlab_messages() if where.startswith(f"{chapter}.ipynb:")}
        assert len(messages) >= 60, f"{chapter}'s visible checks' messages are in the catalog ({len(messages)})"


def test_a_changed_check_message_is_named_until_translated(monkeypatch):
    original = i18n.seqlab_messages()
    monkeypatch.setattr(i18n, "seqlab_messages", lambda: original + [("sort by count, lowest first", "x.ipynb:3")])
    assert i18n.problems(i18n.MESSAGES) == [
        "x.ipynb cell 3 «sort by count, lowest first»: no entry (a new or changed cell: run "
        "`python autograder/i18n.py extract seqlab`)"]


def passed_line(monkeypatch, capsys, **environment) -> str:
    for name in ("SEQLAB_LANGUAGE", "JPY_SESSION_NAME", "LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    seqlab_check.passed("build_vocab: a toy corpus with min_count=2 and 1, the special tokens first, frequency order")
    return capsys.readouterr().out


ENGLISH_LINE = ("\u2713 build_vocab: a toy corpus with min_count=2 and 1, the special tokens first, frequency order "
                "(visible checks passed; hidden tests run at grading)\n")
CHINESE_LINE = "\u2713 build_vocab：一个玩具语料，min_count=2 和 1，特殊词元在前，按频率排序 (可见检查已通过；隐藏测试在评分时运行)\n"


def test_messages_follow_the_edition_of_the_running_notebook_not_the_machines_locale(monkeypatch, capsys):
    chinese = str(NOTEBOOKS / "zh" / GRADED_CHAPTER / f"{GRADED_CHAPTER}.ipynb")
    english = str(NOTEBOOKS / GRADED_CHAPTER / f"{GRADED_CHAPTER}.ipynb")
    assert passed_line(monkeypatch, capsys, JPY_SESSION_NAME=chinese) == CHINESE_LINE
    assert passed_line(monkeypatch, capsys, JPY_SESSION_NAME=english) == ENGLISH_LINE
    assert passed_line(monkeypatch, capsys, JPY_SESSION_NAME=english, LANG="zh_CN.UTF-8", LC_ALL="zh_CN.UTF-8",
                       LANGUAGE="zh") == ENGLISH_LINE, "the machine's locale alone does not make a notebook Chinese"
    assert passed_line(monkeypatch, capsys, SEQLAB_LANGUAGE="zh") == CHINESE_LINE, "SEQLAB_LANGUAGE (Colab) chooses"
    assert passed_line(monkeypatch, capsys, SEQLAB_LANGUAGE="en", JPY_SESSION_NAME=chinese) == ENGLISH_LINE
    assert passed_line(monkeypatch, capsys) == ENGLISH_LINE, "a script, or the grader's kernels, speak English"
    assert passed_line(monkeypatch, capsys, JPY_SESSION_NAME=str(NOTEBOOKS / "no-such.ipynb")) == ENGLISH_LINE


def failure(check, *args, **kwargs) -> str:
    with pytest.raises(seqlab_check.CheckFailed) as caught:
        check(*args, **kwargs)
    return str(caught.value)


def test_a_planted_mistake_of_a_later_chapter_reads_in_chinese_in_the_zh_edition(monkeypatch):
    """Chapter 7's masked softmax that zeroes the padding after the softmax instead of filling it before (its
    mistakes file plants it), run by the visible checks of the chapter's graded notebook: the kernel of the Chinese
    notebook says every part in Chinese, the numbers as they are; the English notebook's says it in English."""
    from test_ch07_mistakes import CELLS, softmax_then_zero_without_renormalising

    def failure_in(edition_path) -> str:
        monkeypatch.setenv("JPY_SESSION_NAME", str(edition_path))
        with pytest.raises(seqlab_check.CheckFailed) as caught:
            CELLS.run_visible("attention_context_tests", masked_softmax=softmax_then_zero_without_renormalising)
        return str(caught.value)

    monkeypatch.delenv("SEQLAB_LANGUAGE", raising=False)
    chapter = "07-attention"
    assert failure_in(NOTEBOOKS / "zh" / chapter / f"{chapter}.ipynb") == (
        "每一行的权重在其真实位置上的和应当为 1：应为 1，实际为 0.06962952763\n"
        "提示： 在 softmax 之前填充被掩掉的分数；只在之后乘以掩码会让和小于 1")
    assert failure_in(NOTEBOOKS / chapter / f"{chapter}.ipynb") == (
        "the weights of a row should sum to 1 over its real positions: expected 1, got 0.06962952763\n"
        "Hint: fill the masked scores BEFORE the softmax; multiplying by the mask afterwards alone leaves a sum below 1")


def test_a_failed_check_reads_in_chinese_with_the_values_and_an_untranslated_name_kept(monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    hint = "divide by c(h), how often the context occurred, not by how often the word occurred"
    monkeypatch.setenv("SEQLAB_LANGUAGE", "en")
    assert failure(seqlab_check.expect_close, 0.3, 0.25, "P(b | a)", hint=hint) == f"P(b | a): expected 0.25, got 0.3\nHint: {hint}"
    assert failure(seqlab_check.call_named, "my call", lambda x: x.append(1), [1]) == \
        ("my call: the call changed its argument 1 in place (at (length): it was 1, now 2)\n"
         "Hint: work on a copy (list(x), x.copy(), x + y instead of x += y); never modify the inputs")
    monkeypatch.setenv("SEQLAB_LANGUAGE", "zh")
    assert failure(seqlab_check.expect_close, 0.3, 0.25, "P(b | a)", hint=hint) == \
        "P(b | a)：应为 0.25，实际为 0.3\n提示： 除以 c(h)，即上下文出现的次数，而不是词出现的次数"
    assert failure(seqlab_check.expect_close, None, 1.0, "a name with no entry") == \
        "a name with no entry：得到的是 None\n提示： 函数是不是忘了 `return` 结果？"
    assert failure(seqlab_check.expect_raises, ValueError, lambda: 1, what="count_ngrams(toy, 0)") == \
        "count_ngrams(toy, 0)：应当抛出 ValueError，但没有抛出任何异常"


# ---- seqlab's explorers and figures in the edition's language ---------------------------------------------------

CJK = re.compile(r"[\u4e00-\u9fff]")

# What each explorer's controls are called in English (the tests of tests/test_a11y_widgets.py find them by these
# names): the Chinese edition must not change them there. "n", "alpha", "W_aa", "d_model" are symbols, not words.
ENGLISH_CONTROLS = {
    "next-word explorer": ["context", "n", "top k"],
    "trellis": ["sentence", "step t"],
    "gradient flow": ["length T", "radius |λ|", "nonlinearity", "cell", "W_aa", "forget bias"],
    "cell comparison": ["length T", "radius |λ|", "forget bias", "+ LSTM without forget gate"],
    "projector": ["word", "neighbours", "analogy", "layout"],
    "beam tree": ["source", "beam width", "alpha"],
    "attention (chapter 7)": ["source", "output step"],
    "attention (chapter 8)": ["attention", "layer", "head (-1 all)"],
    "positional encoding": ["d_model", "position"],
}
SYMBOLS = {"n", "alpha", "W_aa", "d_model"}


def explorers_in(monkeypatch, language: str) -> dict:
    from test_a11y_widgets import course_widgets

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv("SEQLAB_LANGUAGE", language)
    monkeypatch.setattr(seqlab_i18n, "cjk_font", lambda: None, raising=False)  # as on Colab or a bare Debian: no CJK font
    return course_widgets()


def controls_of(box) -> list:
    import ipywidgets

    from test_a11y_widgets import all_widgets

    return [w for w in all_widgets(box) if getattr(w, "description", "") and not isinstance(w, ipywidgets.Button)]


def equivalent_of(box) -> str:
    from test_a11y_widgets import text_of

    return text_of(box).value


def test_every_explorer_is_english_in_the_english_edition(monkeypatch):
    for name, box in explorers_in(monkeypatch, "en").items():
        assert [w.description for w in controls_of(box)] == ENGLISH_CONTROLS[name], name
        text = equivalent_of(box)
        assert not CJK.search(text), f"{name}: Chinese in the English edition's text equivalent"
        assert "<summary>The figure as text (follows the controls)</summary>" in text, name


def test_every_explorer_speaks_chinese_in_the_zh_edition_even_without_a_chinese_font(monkeypatch):
    """One explorer of each kind, on a machine without a Chinese font (its figures draw English): its control labels
    and its text equivalent (summary, each table's caption or headers) are Chinese; a translated drop-down still
    gives the code its English value."""
    from test_a11y_widgets import Tables

    for name, box in explorers_in(monkeypatch, "zh").items():
        controls = controls_of(box)
        assert len(controls) == len(ENGLISH_CONTROLS[name]), name
        for english, control in zip(ENGLISH_CONTROLS[name], controls):
            if english in SYMBOLS:
                assert control.description == english, f"{name}: the symbol {english!r} is kept as it is"
            else:
                assert CJK.search(control.description), f"{name}: the control {english!r} is not in Chinese"
        text = equivalent_of(box)
        summary = re.search(r"<summary>(.*?)</summary>", text)
        assert summary and CJK.search(summary.group(1)), f"{name}: the text equivalent's summary is not Chinese"
        tables = Tables(text).tables
        assert tables, name
        for table in tables:
            assert CJK.search(table["caption"] + " ".join(table["columns"])), \
                f"{name}: the table {table['caption']!r} {table['columns']} has neither a Chinese caption nor header"
    [matrix] = [w for w in controls_of(explorers_in(monkeypatch, "zh")["gradient flow"]) if w.description == "W_aa"]
    assert matrix.value == "normal" and CJK.search(matrix.label), "a translated drop-down gives the code its value"


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font", "ignore:findfont")  # the font is pretended
def test_a_figure_draws_chinese_only_with_a_chinese_font_and_reads_aloud_in_chinese_either_way(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from seqlab import a11y, gradflow

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setitem(matplotlib.rcParams, "font.family", list(matplotlib.rcParams["font.family"]))
    english_title = "gradient of a loss at step T=8; recurrent matrices of radius 0.90"
    chinese_title = seqlab_i18n.translations("zh").gettext(
        "gradient of a loss at step T={length}; recurrent matrices of radius {scale}").format(length=8, scale="0.90")
    assert CJK.search(chinese_title)

    def figure_in(language: str, font: str | None):
        monkeypatch.setenv("SEQLAB_LANGUAGE", language)
        monkeypatch.setattr(seqlab_i18n, "cjk_font", lambda: font, raising=False)
        figure = gradflow.draw_cell_comparison(length=8, scale=0.9)
        drawn, alt = figure.axes[0].get_title(), a11y.alt_text(figure)
        plt.close(figure)
        return drawn, alt

    drawn, alt = figure_in("en", "Noto Sans CJK SC")
    assert drawn == english_title and not CJK.search(alt), "English stays English, font or none"
    drawn, alt = figure_in("zh", None)
    assert drawn == english_title, "without a Chinese font the figure draws English (no empty boxes)"
    assert chinese_title in alt and "time step t" not in alt, f"the alt text is Chinese all the same: {alt}"
    drawn, alt = figure_in("zh", "Noto Sans CJK SC")
    assert drawn == chinese_title and chinese_title in alt
    assert "Noto Sans CJK SC" in matplotlib.rcParams["font.family"], "the Chinese glyphs come from the font found"


def test_the_chinese_font_is_the_first_that_matplotlib_knows(monkeypatch):
    from matplotlib import font_manager

    monkeypatch.setattr(seqlab_i18n, "_LOOKED_FOR_NEW_FONTS", True, raising=False)  # the machine's own fonts stay out

    def knows(*names):
        monkeypatch.setattr(font_manager.fontManager, "ttflist",
                            [font_manager.FontEntry(fname=f"/fonts/{n}.ttf", name=n) for n in names])
        return seqlab_i18n.cjk_font()

    assert knows("DejaVu Sans", "Liberation Serif") is None
    assert knows("DejaVu Sans", "WenQuanYi Zen Hei") == "WenQuanYi Zen Hei"
    assert knows("SimHei", "Noto Sans CJK SC") == "Noto Sans CJK SC", "in the order of CJK_FONTS, not the machine's"


def test_a_chinese_font_installed_after_matplotlibs_font_cache_was_built_is_found_once(monkeypatch):
    """matplotlib lists the fonts once, in its cache: a font installed later (apt-get in Colab, or after the cache was
    built) is added from the system's font files that it does not list, once per process, and only when no Chinese
    font is known."""
    from matplotlib import font_manager

    listed = [font_manager.FontEntry(fname="/fonts/DejaVuSans.ttf", name="DejaVu Sans")]
    added = []

    def add(path):
        added.append(path)
        listed.append(font_manager.FontEntry(fname=path, name="WenQuanYi Micro Hei"))

    monkeypatch.setattr(font_manager.fontManager, "ttflist", listed)
    monkeypatch.setattr(font_manager.fontManager, "addfont", add)
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda: ["/fonts/DejaVuSans.ttf", "/fonts/wqy-microhei.ttc"])
    monkeypatch.setattr(seqlab_i18n, "_LOOKED_FOR_NEW_FONTS", False, raising=False)
    assert seqlab_i18n.cjk_font() == "WenQuanYi Micro Hei" and added == ["/fonts/wqy-microhei.ttc"]
    listed.pop()
    assert seqlab_i18n.cjk_font() is None and added == ["/fonts/wqy-microhei.ttc"], "the files are looked at once"


def test_the_submit_button_and_its_verdict_table_speak_the_editions_language(monkeypatch):
    from seqlab import submit

    reply = {"status": "graded", "id": 7, "chapter": "01-ngram-language-models", "score": 1, "max_score": 2,
             "exercises": [{"exercise": "count_ngrams", "points": 1, "max_points": 2, "visible": "passed",
                            "hidden": "failed"}]}
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv("SEQLAB_LANGUAGE", "en")
    box = submit.button(server="http://localhost:1", token="t", notebook="x.ipynb")
    assert box.submit_button.description == "Submit" and "press Submit" in box.verdicts.value
    assert "<caption>Verdicts per exercise</caption>" in submit.report_html(reply)
    monkeypatch.setenv("SEQLAB_LANGUAGE", "zh")
    box = submit.button(server="http://localhost:1", token="t", notebook="x.ipynb")
    assert box.submit_button.description == "提交" and CJK.search(box.submit_button.tooltip)
    assert "提交" in box.verdicts.value and "press Submit" not in box.verdicts.value
    table = submit.report_html(reply)
    assert "<caption>各练习的评分结果</caption>" in table and '<th scope="col">隐藏测试</th>' in table
    assert '<th scope="col">分数</th>' in table, "the score column (once 'points', which the plots' catalog entry made 点)"


# ---- the beam tree's ranking, seqlab.submit, the data and training modules' errors; a Chinese font ----------------

def toy_beam_tree():
    """A beam search over the tokens a, b (ids 3, 4) that finishes 3 hypotheses: a ranking of 2 ends in '1 more'."""
    import torch

    from seqlab import beamtree

    def step(previous, state):
        logits = torch.tensor([[0.1, 0.0, 0.0, 1.0, 0.9]] * len(previous)) + state
        return torch.log_softmax(logits, -1), state

    return beamtree.beam_tree(step, torch.zeros(1, 1), beam_width=3, max_len=4), ["<pad>", "<s>", "</s>", "a", "b"]


def test_the_beam_trees_ranking_reads_in_chinese_in_the_zh_edition(monkeypatch):
    from seqlab import beamtree

    tree, labels = toy_beam_tree()
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv("SEQLAB_LANGUAGE", "en")
    assert beamtree.finished_lines(tree, labels, shown=2) == [
        "chosen aaaa   log P -4.46   score -4.46", "       aaab   log P -4.56   score -4.56", "       ... and 1 more"]
    monkeypatch.setenv("SEQLAB_LANGUAGE", "zh")
    monkeypatch.setattr(seqlab_i18n, "cjk_font", lambda: "WenQuanYi Micro Hei")
    import matplotlib

    monkeypatch.setitem(matplotlib.rcParams, "font.family", list(matplotlib.rcParams["font.family"]))
    chinese = ["选中  aaaa   log P -4.46   分数 -4.46", "     aaab   log P -4.56   分数 -4.56", "     …… 另有 1 个"]
    assert beamtree.finished_lines(tree, labels, shown=2) == chinese, "drawn in Chinese where a Chinese font is found"
    monkeypatch.setattr(seqlab_i18n, "cjk_font", lambda: None)
    drawn = beamtree.finished_lines(tree, labels, shown=2)
    assert not CJK.search("".join(drawn)), "without a Chinese font the figure draws English (no empty boxes)"
    assert [seqlab_i18n.read_aloud(line) for line in drawn] == chinese, "and the text equivalent reads it in Chinese"


def test_the_submit_command_speaks_the_edition_of_the_notebook_it_submits(tmp_path, monkeypatch, capsys):
    """`python -m seqlab.submit` runs in a terminal, where no notebook tells seqlab its edition: the notebook submitted
    does (SEQLAB_LANGUAGE still chooses first), and the language it chose does not outlast the command."""
    from seqlab import submit

    def said(notebook, **environment) -> str:
        for name in ("SEQLAB_LANGUAGE", "JPY_SESSION_NAME"):
            monkeypatch.delenv(name, raising=False)
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        # no chapter in the name: refused before anything is sent
        assert submit.main([str(notebook), "--server", "http://127.0.0.1:9", "--token", "t"]) == 1
        assert os.environ.get("SEQLAB_LANGUAGE") == environment.get("SEQLAB_LANGUAGE"), "the environment is restored"
        return capsys.readouterr().err

    chinese, english = tmp_path / "zh" / "mine.ipynb", tmp_path / "mine.ipynb"
    chinese.parent.mkdir()
    chinese.write_text(json.dumps({"cells": [], "metadata": {"language": "zh"}, "nbformat": 4, "nbformat_minor": 4}))
    english.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}))
    english_error = ("seqlab.submit: cannot tell the chapter from mine.ipynb: keep the notebook's own name "
                     "(e.g. 07-attention.ipynb) or pass --chapter\n")
    assert said(english) == english_error
    assert said(chinese) == ("seqlab.submit: 无法从 mine.ipynb 判断章节：请保留笔记本原来的文件名（例如 07-attention.ipynb），"
                             "或传入 --chapter\n")
    assert said(chinese, SEQLAB_LANGUAGE="en") == english_error, "SEQLAB_LANGUAGE chooses first"
    assert CJK.search(said(english, SEQLAB_LANGUAGE="zh"))
    assert said(tmp_path / "none.ipynb", SEQLAB_LANGUAGE="zh").startswith(f"seqlab.submit: 无法读取 {tmp_path / 'none.ipynb'}：")


def test_the_submit_reports_statuses_and_notes_read_in_chinese_in_the_zh_edition(monkeypatch):
    from seqlab import submit

    reply = {"status": "graded", "id": 7, "chapter": "01-ngram-language-models", "score": None, "max_score": 3,
             "problems": ["late"],
             "exercises": [{"exercise": "count_ngrams", "points": 1, "max_points": 2, "visible": "passed",
                            "hidden": "failed", "hidden_message": "wrong count", "attempts_left": 2},
                           {"exercise": "mle", "points": None, "max_points": 1, "visible": "failed",
                            "visible_messages": ["m1"], "hidden": "withheld", "next_allowed": "14:00"}]}
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv("SEQLAB_LANGUAGE", "en")
    assert submit.report_lines(reply) == [
        "submission 7 of 01-ngram-language-models: score withheld", "  note: late",
        "✗ count_ngrams  1/2  visible checks: passed; hidden tests: failed", "    hidden check: wrong count",
        "    attempts left now: 2", "… mle  ?/1  visible checks: failed; hidden tests: withheld", "    m1",
        "    next check of the hidden tests allowed at 14:00"]
    assert submit.report_lines({"status": "failed", "id": 8, "chapter": "x"}) == ["submission 8 of x: failed"]
    monkeypatch.setenv("SEQLAB_LANGUAGE", "zh")
    assert submit.report_lines(reply) == [
        "提交 7（01-ngram-language-models）：得分暂不公布", "  注意：late",
        "✗ count_ngrams  1/2  可见检查：通过；隐藏测试：未通过", "    隐藏检查：wrong count",
        "    目前剩余尝试次数：2", "… mle  ?/1  可见检查：未通过；隐藏测试：暂不公布", "    m1",
        "    下一次检查隐藏测试的时间：14:00 之后"]
    assert submit.report_lines({"status": "failed", "id": 8, "chapter": "x"}) == ["提交 8（x）：评分失败"], \
        "a submission that could not be graded is not a check that failed"
    assert submit.report_lines({"status": "queued", "id": 9, "chapter": "x"}) == ["提交 9（x）：排队中"]
    assert "<td>暂不公布</td>" in submit.report_html(reply) and "<td>passed</td>" not in submit.report_html(reply)
    with pytest.raises(submit.SubmitError, match="没有服务器地址"):
        submit.settings(None, None)


def learner_errors():
    """Bad input a student can give the data and training modules (each refused before any data is read)."""
    import torch

    from seqlab import data, dates, embeddings, names, seq2seq, tagger, tokens, wordlm

    return {
        "load_brown split": lambda: data.load_brown("tests"),
        "load_hkcancor split": lambda: data.load_hkcancor("dev"),
        "missing data file": lambda: data.dataset_file("no-such.tsv.xz", "`python -m seqlab.datasets.build_brown`"),
        "brown_text sentences": lambda: tokens.brown_text("train", -1),
        "brown_merges vocab_size": lambda: tokens.brown_merges(3),
        "load_names kind": lambda: names.load_names("middle"),
        "load_names shared": lambda: names.load_names("first", "shared"),
        "load_dates split": lambda: dates.load_dates("x"),
        "reversed_digits": lambda: dates.reversed_digits(-1),
        "tagger direction": lambda: tagger.load_checkpoint("sideways"),
        "tagger missing checkpoint": lambda: tagger.load_checkpoint("bi", path=REPO / "no-such.pt"),
        "WordRNN cell": lambda: wordlm.WordRNN(10, cell="gru"),
        "wordlm missing checkpoint": lambda: wordlm.load_checkpoint(10, path=REPO / "no-such.pt"),
        "Vocab twice": lambda: seq2seq.Vocab(["a", "a"]),
        "select_state": lambda: seq2seq.select_state(3, torch.tensor([0])),
        "task_data task": lambda: seq2seq.task_data("x", "train"),
        "load_similarity name": lambda: embeddings.load_similarity("x"),
        "spearman": lambda: embeddings.spearman([1], [1]),
        "huffman_tree": lambda: embeddings.huffman_tree([3]),
    }


def test_the_data_and_training_modules_errors_read_in_chinese_in_the_zh_edition(monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)

    def errors(language: str) -> dict:
        monkeypatch.setenv("SEQLAB_LANGUAGE", language)
        said = {}
        for name, call in learner_errors().items():
            with pytest.raises((ValueError, TypeError, FileNotFoundError)) as caught:
                call()
            said[name] = (type(caught.value), str(caught.value))
        return said

    english, chinese = errors("en"), errors("zh")
    assert english["load_brown split"][1] == "split must be one of ('train', 'dev', 'test'), got 'tests'"
    assert chinese["load_brown split"][1] == "split 必须是 ('train', 'dev', 'test') 之一，实际为 'tests'"
    for name in english:
        assert english[name][0] is chinese[name][0], f"{name}: the same kind of error in either edition"
        assert not CJK.search(english[name][1]), f"{name}: Chinese in the English edition: {english[name][1]}"
        assert CJK.search(chinese[name][1]), f"{name}: still English in the Chinese edition: {chinese[name][1]}"
        assert NUMBER_OR_NAME.findall(english[name][1]) == NUMBER_OR_NAME.findall(chinese[name][1]), \
            f"{name}: the values quoted are those of the English message: {chinese[name][1]}"


NUMBER_OR_NAME = re.compile(r"'[^']*'|-?\d+")


def test_zh_figures_are_drawn_with_chinese_glyphs_where_a_chinese_font_is_installed(monkeypatch, caplog):
    """With a Chinese font on the machine (tests/system-packages.sh installs fonts-wqy-microhei) the zh edition's
    figures draw their text in Chinese, every glyph found: the gradient-flow figure's title and labels (made by
    plt.subplots before the first text is translated), the beam tree's caption and its monospace ranking."""
    import io
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from seqlab import beamtree, gradflow

    # look at the machine's fonts, whatever ran before in this process
    monkeypatch.setattr(seqlab_i18n, "_LOOKED_FOR_NEW_FONTS", False, raising=False)
    if seqlab_i18n.cjk_font() is None:
        pytest.skip("no Chinese font matplotlib can use here (tests/system-packages.sh installs fonts-wqy-microhei)")
    # as in a fresh kernel: no Chinese font among the families yet
    monkeypatch.setitem(matplotlib.rcParams, "font.family",
                        [family for family in matplotlib.rcParams["font.family"] if family not in seqlab_i18n.CJK_FONTS])
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv("SEQLAB_LANGUAGE", "zh")
    tree, labels = toy_beam_tree()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gradients = gradflow.draw_gradient_flow(length=8, scale=0.9)
        gradients.savefig(io.BytesIO(), format="png")
        title = seqlab_i18n.figure_text(
            seqlab_i18n.N_("{source!r} -> {output!r}{note}\n(beam width {width}, alpha {alpha})"),
            source="ab", output="aaaa", note="", width=3, alpha=0.0)
        figure = beamtree.draw_beam_tree(tree, labels, title=title)
        figure.savefig(io.BytesIO(), format="png")
    plt.close(gradients)
    plt.close(figure)
    missing = sorted({str(w.message) for w in caught if "missing from font" in str(w.message)}
                     | {r.getMessage() for r in caplog.records if "does not have a glyph" in r.getMessage()})
    assert not missing, "glyphs drawn as empty boxes (a label with a $formula$ is drawn by mathtext, which has no " \
                        "Chinese):\n" + "\n".join(missing)
    assert CJK.search(gradients.axes[0].get_title()) and CJK.search(gradients.axes[0].get_xlabel())
    assert any("$" in text.get_text() for text in gradients.axes[0].get_legend().get_texts()), "a formula is drawn"
    assert CJK.search(figure.axes[0].get_title()), "the title is drawn in Chinese"
    [caption] = [text.get_text() for text in figure.texts if "log P" in text.get_text()]
    assert "选中  aaaa" in caption and "分数" in caption and "已完成的假设" in caption, caption
