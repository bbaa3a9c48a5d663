"""A Chinese submission's feedback page is in Chinese (issue 46, 4).

autograder/feedback.py writes a page in the language of the student's notebook edition (its metadata's
"language", which sanitize keeps when it names an edition): nbgrader's headings and score words, the verdicts the
grader writes (a hidden test failed, output left out), the grader's notes, and the term policy's lines (the late
penalty and its reason, the note on hidden verdicts before the due date). The chapter's Chinese markdown counts as
the course's own, so it is rendered with its formulas as MathML as the English is. An English submission's page
is unchanged. The pages here are made from the Chinese solution (hidden tests in, as autograde leaves a notebook) by
feedback_html, the function the grading job
and grade.py's term pages call; tests/test_i18n.py's grading test checks the page job.run_job writes for a graded
Chinese submission.
"""

from __future__ import annotations

import datetime as dt
import html
import re
import sys

import nbformat
import pytest

from course import REPO, SOLUTIONS, nbgrader_meta

sys.path.insert(0, str(REPO / "autograder"))
import feedback  # noqa: E402
import i18n  # noqa: E402
import policy  # noqa: E402

CHAPTER = "01-ngram-language-models"
NAME = f"{CHAPTER}.ipynb"
ENGLISH_TEMPLATE_WORDS = ["Score:", "Test cell", "Student's answer", "(Top)", "Late submission", "The grader noted",
                          "a hidden test failed", "visible checks passed", "hidden tests' verdicts", "Grade cell:"]


def graded(edition: str):
    """The solution as nbgrader's autograde leaves it (hidden tests in), in the edition's language, as the job hands
    it to feedback_html: sanitized, with the course's markdown known."""
    source = SOLUTIONS / CHAPTER / NAME
    nb = nbformat.read(source, as_version=4) if edition == "en" else i18n.translated_notebook(source, i18n.read_catalog(CHAPTER))
    return feedback.sanitize(nb, feedback.course_markdown(str(source)))


def entry_for(nb) -> dict:
    """Scores for every test cell: the first one failed in its hidden part, the others full marks."""
    cells = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution"):
            points = meta.get("points", 1)
            cells[meta["grade_id"]] = {"auto_score": 0.0 if not cells else points, "max_score": points, "test": True,
                                       "hidden_failure": not cells}
    return {"cells": cells, "problems": [], "repairs": []}


POLICY = """
[chapters."01-ngram-language-models"]
due = 2026-11-20T23:59:00Z

[late]
percent_per_day = 10
cap_percent = 30
"""


@pytest.fixture(scope="module")
def pages():
    made = {}
    term_policy = policy.from_toml(POLICY)
    submitted = dt.datetime(2026, 11, 24, 8, 0, tzinfo=dt.timezone.utc)
    penalty = term_policy.penalty(CHAPTER, "ada", submitted)
    for edition in ("en", "zh"):
        nb = graded(edition)
        made[edition] = feedback.feedback_html(nb, entry_for(nb), "ada", CHAPTER, CHAPTER)
        before_due = feedback.TermView(hidden_verdicts=False, note=term_policy.visibility_note(CHAPTER, "ada"),
                                       late_penalty=1.5, penalty_reason=penalty.reason)
        made[f"{edition}-term"] = feedback.feedback_html(nb, entry_for(nb), "ada", CHAPTER, CHAPTER, before_due)
        made[f"{edition}-plain"] = feedback.plain_feedback(entry_for(nb), "ada", CHAPTER, CHAPTER, before_due,
                                                           feedback.edition_of(nb))
    return made


def visible_text(page: str) -> str:
    """The page's text as a reader sees it (the markdown's characters are written as references: &#31532;)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S)))


def test_the_chinese_page_has_chinese_headings_verdicts_and_markdown(pages):
    page = pages["zh"]
    assert '<html lang="zh-Hans">' in page
    for said in ("得分：", "测试单元格", "学生的答案", "评分单元格：", "（回到顶部）", feedback.PAGE_WORDS["zh"][feedback.HIDDEN_FAILED]):
        assert said in page, f"the Chinese page lacks {said!r}"
    text = visible_text(page)
    left = [w for w in ENGLISH_TEMPLATE_WORDS if w in text]
    assert not left, f"English words on the Chinese page: {left}"
    assert "第 1 章 · n 元语法语言模型" in text and page.count("<math") >= 10, \
        "the Chinese markdown is the course's own: rendered, its formulas as MathML"


def test_the_english_page_is_as_it_was(pages):
    text = visible_text(pages["en"])
    for said in ("Score:", "Test cell", "Student's answer", feedback.HIDDEN_FAILED):
        assert said in text, said
    assert "得分" not in text and 'lang="zh' not in pages["en"]


def test_the_term_policy_s_lines_are_chinese_on_a_chinese_page(pages):
    text = visible_text(pages["zh-term"])
    assert "迟交：提交于 2026-11-24 08:00 UTC，在截止日期 2026-11-20 23:59 UTC 之后的第 4 天内" in text, text[:2000]
    assert "扣 30%（已达上限），每天 10%（本 notebook 扣 1.5 分）" in text
    assert "截止日期之前，本页只显示可见检查的结果：隐藏测试的结果在截止日期（2026-11-20 23:59 UTC）之后显示" in text
    assert "可见检查已通过；隐藏测试的结果在截止日期（2026-11-20 23:59 UTC）之后显示" in text
    assert not [w for w in ENGLISH_TEMPLATE_WORDS if w in text]
    english = visible_text(pages["en-term"])
    assert "Late submission: submitted 2026-11-24 08:00 UTC, 4 started days after the due date" in english
    plain = visible_text(pages["zh-plain"])
    assert "学生 ada" in plain and "迟交：" in plain and "隐藏测试的结果在截止日期" in plain


def sentences_of_the_policy() -> list[str]:
    """Every form of sentence autograder/policy.py writes: penalties (late, capped, extended, refused, LMS-flagged)
    and the two visibility notes."""
    base = ('[chapters."01-ngram-language-models"]\ndue = 2026-11-20T23:59:00Z\n'
            '[extensions.bo]\n"01-ngram-language-models" = 2\n')
    capped = policy.from_toml(base + "[late]\npercent_per_day = 10\ncap_percent = 20\nlast_accepted_days = 7\n")
    per_day = policy.from_toml(base + "[late]\npercent_per_day = 5\n")
    never = policy.from_toml(base + '[visibility]\nhidden_verdicts = "never"\n')
    at = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
    return [capped.penalty(CHAPTER, "ada", at).reason,                      # 1 started day
            capped.penalty(CHAPTER, "ada", at + dt.timedelta(days=3)).reason,  # the cap
            per_day.penalty(CHAPTER, "bo", at + dt.timedelta(days=2)).reason,  # an extended due date
            capped.penalty(CHAPTER, "ada", at + dt.timedelta(days=9)).reason,  # after the last accepted time
            per_day.penalty(CHAPTER, "ada", None, flagged_late=True).reason,   # the LMS says late, no time
            capped.visibility_note(CHAPTER, "ada"), never.visibility_note(CHAPTER, "ada")]


def test_every_sentence_the_policy_writes_reads_in_chinese():
    sentences = sentences_of_the_policy()
    assert len(set(sentences)) == 7 and all(sentences), sentences
    for sentence in sentences:
        chinese = feedback.policy_in(sentence, "zh")
        assert chinese != sentence and not re.search(r"[A-Za-z]{3,}", chinese.replace("UTC", "").replace("LMS", "")), \
            f"autograder/policy.py's sentence has no Chinese pattern in feedback.POLICY_SENTENCES:\n{sentence}\n{chinese}"
        assert re.findall(r"\d+(?:\.\d+)?", sentence) == re.findall(r"\d+(?:\.\d+)?", chinese) or \
            sorted(re.findall(r"\d+(?:\.\d+)?", sentence)) == sorted(re.findall(r"\d+(?:\.\d+)?", chinese)), \
            f"a number changed: {sentence} -> {chinese}"
    assert feedback.policy_in("a sentence the policy never wrote", "zh") == "a sentence the policy never wrote"


def test_sanitize_keeps_an_editions_name_and_nothing_else_in_its_place():
    for value, kept in (("zh", "zh"), ("en", None), ("<script>alert(1)</script>", None), (["zh"], None), ({"a": 1}, None)):
        nb = nbformat.v4.new_notebook(metadata={"language": value})
        assert feedback.sanitize(nb).metadata.get("language") == kept, value
        assert feedback.edition_of(nb) == (kept or "en")
