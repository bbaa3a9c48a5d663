"""The notebooks' markdown against the accessibility checklist (issue 47, part 3; the Notebooks for All checklist).

A screen reader's user moves through a notebook by its headings and its links, hears an image's alt text instead of
the image, and hears an acronym as letters: so every notebook of solutions/ (the English source) and of
notebooks/zh/ (the Chinese edition, made from i18n/zh's catalogs) has

- exactly one H1 (the chapter's title), and headings that never skip a level (an H2 is followed by an H3 at most);
- links whose text says where they go: not "here", "link", "this" or a bare URL;
- alt text on every image, markdown ``![alt](src)`` or HTML ``<img alt="...">``;
- every acronym of ACRONYMS written out at its first use: its expansion appears in the same markdown cell or an
  earlier one of the notebook (each notebook on its own: a learner may open chapter 8 first).

The markdown is parsed as nbconvert does (mistune, with tables, GFM autolinks and math), so a ``#`` inside a code
block or a ``$...$`` formula is not taken for a heading or an acronym. Static and fast: no kernel, no browser.
The same rules checked on planted markdown below show each one fails what it should.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import mistune
import nbformat
import pytest

from course import NOTEBOOKS, SOLUTIONS

PARSE = mistune.create_markdown(renderer=None, plugins=["table", "url", "strikethrough", "math"])

# The course's acronyms and what each stands for, in English and in the Chinese edition's words (a regular
# expression, matched ignoring case). A new acronym in the text is added here with its expansion.
ACRONYMS = {
    "HMM": r"hidden Markov model|隐马尔可夫模型",
    "RNN": r"recurrent (neural )?net|循环(神经)?网络|递归神经网络",
    "GRU": r"gated recurrent unit|门控循环单元",
    "LSTM": r"long short-term memory|长短期记忆",
    "BPTT": r"backpropagation through time|back-propagation through time|随时间反向传播",
    "BPE": r"byte[- ]pair encoding|字节对编码",
    "BLEU": r"bilingual evaluation understudy|双语评估替补",
    "GPT": r"generative pre-?trained transformer|生成式预训练",
    "KV": r"key[- ]value|键值",
    "RoPE": r"rotary position|旋转位置",
    "SSM": r"state[- ]space model|状态空间模型",
    "MLE": r"maximum[- ]likelihood estimat|最大似然估计",
    "MLP": r"multi-?layer perceptron|多层感知机",
    "EM": r"expectation[- ]maximi[sz]ation|期望最大化",
    "PCA": r"principal component analysis|主成分分析",
    "t-SNE": r"t-distributed stochastic neighbou?r embedding|t 分布随机邻域嵌入",
    "POS": r"part[- ]of[- ]speech|词性",
    "GQA": r"grouped[- ]query attention|分组查询注意力",
    "MQA": r"multi-?query attention|多查询注意力",
    "LN": r"layer norm|层归一化",
    "LM": r"language model|语言模型",
    "MT": r"machine translation|机器翻译",
    "KN": r"Kneser[- ]Ney",
    "PE": r"positional encoding|位置编码",
    "CNN": r"convolutional (neural )?net|卷积(神经)?网络",
    "GELU": r"Gaussian error linear unit|高斯误差线性单元",
    "ReLU": r"rectified linear unit|修正线性单元|线性整流",
}

# Link text that says nothing out of context (a screen reader lists a page's links by their text alone).
VAGUE_LINK_TEXT = {"here", "click here", "link", "this link", "this", "this page", "more", "read more", "see here",
                   "这里", "此处", "点击这里", "链接"}
BARE_URL = re.compile(r"^(https?://|www\.)\S+$", re.IGNORECASE)


def checked_notebooks() -> list[Path]:
    english = sorted(SOLUTIONS.glob("*/*.ipynb"))
    chinese = sorted((NOTEBOOKS / "zh").glob("*/*.ipynb"))
    return english + chinese


def notebook_id(path: Path) -> str:
    return str(path.relative_to(path.parents[2] if path.parents[1].name == "zh" else path.parents[1]))


# ---- the rules, on the markdown cells of one notebook (a list of sources) ---------------------------------------------

@dataclass(frozen=True)
class Finding:
    cell: int  # the markdown cell's index in the notebook
    what: str

    def __str__(self) -> str:
        return f"cell {self.cell}: {self.what}"


def tokens(tree: list[dict]) -> Iterator[dict]:
    for token in tree:
        yield token
        yield from tokens(token.get("children") or [])


def plain_text(token: dict) -> str:
    return "".join(t.get("raw", "") for t in tokens(token.get("children") or [])
                   if t["type"] in ("text", "codespan", "inline_math"))


def html_parts(source: str) -> Iterator[str]:
    """The cell's text outside code (fenced blocks and code spans), where its HTML tags are: an inline tag such as
    ``<a href=...>text</a>`` is three tokens to mistune, so tags are matched in the text itself."""
    yield re.sub(r"`[^`\n]*`", " ", re.sub(r"^(```|~~~).*?^\1", " ", source, flags=re.M | re.S))


def heading_findings(cells: list[tuple[int, str]]) -> list[Finding]:
    headings = []  # (cell, level, text)
    for index, source in cells:
        tree = PARSE(source)
        headings += [(index, t["attrs"]["level"], plain_text(t)) for t in tokens(tree) if t["type"] == "heading"]
        headings += [(index, int(m.group(1)), re.sub(r"<[^>]+>", "", m.group(2)).strip())
                     for html in html_parts(source) for m in re.finditer(r"<h([1-6])\b[^>]*>(.*?)</h\1>", html, re.I | re.S)]
    findings = []
    titles = [(cell, text) for cell, level, text in headings if level == 1]
    if len(titles) != 1:
        findings.append(Finding(titles[1][0] if len(titles) > 1 else 0,
                                f"{len(titles)} level-1 headings, one expected (the chapter's title): {[t for _, t in titles]}"))
    previous = 0
    for cell, level, text in headings:
        if level > previous + 1:
            findings.append(Finding(cell, f"heading {text!r} is level {level} after level {previous}: a level skipped"))
        previous = level
    return findings


def link_findings(cells: list[tuple[int, str]]) -> list[Finding]:
    findings = []
    for index, source in cells:
        tree = PARSE(source)
        links = [(plain_text(t).strip(), t["attrs"]["url"]) for t in tokens(tree) if t["type"] == "link"]
        links += [(re.sub(r"<[^>]+>", "", m.group(2)).strip(), m.group(1))
                  for html in html_parts(source) for m in re.finditer(r"<a\b[^>]*?href=\"([^\"]*)\"[^>]*>(.*?)</a>", html, re.I | re.S)]
        for text, url in links:
            if not text:
                findings.append(Finding(index, f"a link to {url} with no text"))
            elif text.lower().rstrip(".") in VAGUE_LINK_TEXT:
                findings.append(Finding(index, f"link text {text!r} (to {url}) does not say where it goes"))
            elif BARE_URL.match(text):
                findings.append(Finding(index, f"a bare URL as link text: {text} (name what it links to)"))
    return findings


def image_findings(cells: list[tuple[int, str]]) -> list[Finding]:
    findings = []
    for index, source in cells:
        tree = PARSE(source)
        for token in tokens(tree):
            if token["type"] == "image" and not plain_text(token).strip():
                findings.append(Finding(index, f"image {token['attrs']['url'][:80]} has no alt text"))
        for html in html_parts(source):
            for image in re.findall(r"<img\b[^>]*>", html, re.I):
                if not re.search(r"\balt\s*=\s*(\"[^\"]*\S[^\"]*\"|'[^']*\S[^']*')", image, re.I):
                    findings.append(Finding(index, f"HTML image {image[:80]} has no alt text"))
    return findings


def prose(tree: list[dict]) -> str:
    """What a cell says in words: no code, no formulas, no link targets, no HTML tags."""
    parts = []
    for token in tree:
        if token["type"] in ("codespan", "block_code", "inline_math", "block_math"):
            continue
        if token["type"] in ("text", "block_html", "inline_html"):
            parts.append(re.sub(r"<[^>]+>", " ", token.get("raw", "")))
        parts.append(prose(token.get("children") or []))
    return " ".join(parts)


def acronym_pattern(acronym: str) -> re.Pattern:
    # Not part of a longer word (RNN in RNNLM, or in a code-like name) but a plural (RNNs) counts; Chinese text puts
    # acronyms right beside characters, so the boundary is "no Latin letter or digit", not \b.
    return re.compile(r"(?<![A-Za-z0-9-])" + re.escape(acronym) + r"s?(?![A-Za-z0-9])")


def acronym_findings(cells: list[tuple[int, str]]) -> list[Finding]:
    findings, so_far, pending = [], "", dict(ACRONYMS)
    for index, source in cells:
        text = prose(PARSE(source))
        so_far += "\n" + text
        for acronym, expansion in list(pending.items()):
            if acronym_pattern(acronym).search(text):
                del pending[acronym]  # only its first use is checked
                if not re.search(expansion, so_far, re.IGNORECASE):
                    findings.append(Finding(index, f"{acronym} used before it is written out "
                                                   f"(in this cell or an earlier one: {expansion.split('|')[0]!r})"))
    return findings


def markdown_cells(path: Path) -> list[tuple[int, str]]:
    notebook = nbformat.read(path, as_version=4)
    return [(index, cell.source) for index, cell in enumerate(notebook.cells) if cell.cell_type == "markdown"]


def report(path: Path, findings: list[Finding]) -> str:
    return f"{notebook_id(path)}:\n  " + "\n  ".join(map(str, findings))


# ---- the notebooks ------------------------------------------------------------------------------------------------

NOTEBOOK_PATHS = checked_notebooks()
IDS = [notebook_id(p) for p in NOTEBOOK_PATHS]


def test_every_chapter_and_its_chinese_edition_is_checked():
    chapters = {p.parent.name for p in SOLUTIONS.glob("*/*.ipynb")}
    assert len(chapters) >= 10 and {p.parent.name for p in NOTEBOOK_PATHS if p.parents[1].name == "zh"} == chapters


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=IDS)
def test_one_h1_and_headings_in_order(path):
    findings = heading_findings(markdown_cells(path))
    assert not findings, report(path, findings)


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=IDS)
def test_link_text_says_where_it_goes(path):
    findings = link_findings(markdown_cells(path))
    assert not findings, report(path, findings)


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=IDS)
def test_images_have_alt_text(path):
    findings = image_findings(markdown_cells(path))
    assert not findings, report(path, findings)


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=IDS)
def test_acronyms_are_written_out_at_first_use(path):
    findings = acronym_findings(markdown_cells(path))
    assert not findings, report(path, findings)


# ---- each rule on planted markdown: it fails what it should and passes the rest ---------------------------------

def cells_of(*sources: str) -> list[tuple[int, str]]:
    return list(enumerate(sources))


@pytest.mark.parametrize("sources, expected", [
    (("# Title\n\n## A\n\n### B", "## C"), []),
    (("# Title", "# Another title"), ["2 level-1 headings"]),
    (("## No title",), ["0 level-1 headings", "level 2 after level 0"]),
    (("# Title\n\n### Skipped",), ["level 3 after level 1"]),
    (("# Title\n\n```python\n# a comment, not a heading\n```",), []),
    (("# Title\n\n<h3>HTML heading</h3>",), ["level 3 after level 1"]),
])
def test_heading_rule(sources, expected):
    found = [f.what for f in heading_findings(cells_of(*sources))]
    assert len(found) == len(expected) and all(e in f for e, f in zip(expected, found)), found


@pytest.mark.parametrize("source, bad", [
    ("See [the Brown corpus manual](https://example.org/brown).", False),
    ("The manual is [here](https://example.org/brown).", True),
    ("[Link](https://example.org/brown)", True),
    ("Read <https://example.org/brown>.", True),
    ("Read https://example.org/brown for more.", True),
    ("[https://example.org/brown](https://example.org/brown)", True),
    ('<a href="https://example.org/brown">click here</a>', True),
    ('<a href="https://example.org/brown">the Brown corpus manual</a>', False),
])
def test_link_rule(source, bad):
    assert bool(link_findings(cells_of(source))) == bad


@pytest.mark.parametrize("source, bad", [
    ("![a heatmap of attention weights](fig.png)", False),
    ("![](fig.png)", True),
    ('<img src="fig.png">', True),
    ('<img src="fig.png" alt="">', True),
    ('<img src="fig.png" alt="the trellis of the Viterbi algorithm">', False),
])
def test_image_rule(source, bad):
    assert bool(image_findings(cells_of(source))) == bad


@pytest.mark.parametrize("sources, undefined", [
    (("A hidden Markov model (HMM) tags words.", "The HMM again."), []),
    (("The HMM tags words.",), ["HMM"]),
    (("An RNN reads.", "A recurrent neural network (RNN)."), ["RNN"]),  # written out only after its first use
    (("Two RNNs read.",), ["RNN"]),  # a plural is a use
    (("`GRU` is a class; $LSTM$ a formula.",), []),  # code and formulas are not prose
    (("隐马尔可夫模型（HMM）为词标注。",), []),
    (("用GRU读入。",), ["GRU"]),  # beside Chinese characters, without spaces
    (("The RNNLM class.",), []),  # part of a longer name
])
def test_acronym_rule(sources, undefined):
    found = [f.what.split()[0] for f in acronym_findings(cells_of(*sources))]
    assert found == undefined, found
