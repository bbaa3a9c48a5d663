"""The course's markdown as HTML with its formulas as MathML, so that a feedback page shows them offline.

nbconvert's templates leave `$...$` for MathJax, loaded from a CDN: offline (a student's laptop on a train, a
grading server without internet) every formula stayed raw LaTeX. Here each formula of the course's own markdown
becomes MathML at grading time (latex2mathml), which browsers draw natively, with no script. A formula the
converter does not know is shown as its LaTeX, in code type. Only the course's markdown comes here: a student's
markdown is cleaned and never rendered as math (feedback.sanitize).
"""

from __future__ import annotations

import functools
import html
import re

# $$...$$ (display, may span lines) first, then $...$ on one line; \$ is a dollar sign, not math.
DISPLAY = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$", re.S)
INLINE = re.compile(r"(?<![\\$])\$(?!\$)([^$\n]+?)(?<!\\)\$")
CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)  # code spans and blocks keep their dollars
MATHJAX_SCRIPTS = re.compile(r"<!-- Load mathjax -->.*?</script>\s*<!-- MathJax configuration -->\s*"
                             r"<script type=\"text/x-mathjax-config\">.*?</script>", re.S)


def formula(tex: str, display: bool) -> str:
    from latex2mathml.converter import convert

    try:
        return convert(tex.strip(), display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - the converter raises many kinds; the formula is then shown as written
        return f"<code>{html.escape(tex)}</code>"


@functools.lru_cache(maxsize=4096)  # a chapter's markdown cells are the same in every student's notebook
def markdown_with_mathml(source: str) -> str:
    """``source`` (trusted markdown) with each formula replaced by its MathML, still markdown: the page's own
    markdown pass renders the rest (nbconvert cleans raw HTML cells with an allow-list that has no MathML)."""
    pieces = CODE.split(source)
    for i in range(0, len(pieces), 2):  # the even pieces are prose
        pieces[i] = DISPLAY.sub(lambda m: "\n\n" + formula(m.group(1), True) + "\n\n", pieces[i])
        pieces[i] = INLINE.sub(lambda m: formula(m.group(1), False), pieces[i])
    return "".join(pieces)


def without_mathjax(page: str) -> str:
    """A page without the template's MathJax loader (its formulas are MathML already)."""
    return MATHJAX_SCRIPTS.sub("", page)
