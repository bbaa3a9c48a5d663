"""Small nbgrader preprocessors this course adds to nbgrader's pipelines (see nbgrader_config.py)."""

from __future__ import annotations

import re

from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

# What Python's warnings module writes: "path:line: SomeWarning: message", then the source line, indented.
WARNING_LINE = re.compile(r"^\S.*:\d+: \w*Warning: ")


def is_only_warnings(text: str) -> bool:
    """True if every line of a stderr chunk belongs to a Python warning."""
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and WARNING_LINE.match(lines[0]) is not None and all(
        WARNING_LINE.match(line) or line.startswith((" ", "\t")) for line in lines
    )


class KeepWarningsVisible(NbGraderPreprocessor):
    """Turn stderr chunks that hold only Python warnings into stdout, so they cost no points.

    Anything else written to stderr stays there (and still fails the cell).
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.output_type == "stream" and output.name == "stderr" and is_only_warnings(output.text):
                    output.name = "stdout"
        return cell, resources


class RedactTracebacks(NbGraderPreprocessor):
    """In graded test cells, keep an error's type and message but drop its traceback.

    A traceback quotes the failing line, and that line may be a hidden test.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and utils.is_grade(cell):
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
