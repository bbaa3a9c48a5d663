"""nbgrader configuration for this course.

Instructors never run nbgrader inside the repository: `python autograder/workspace.py DIR`
makes a grading workspace whose own nbgrader_config.py loads this file. nbgrader then reads
the source notebooks from solutions/ and writes the student release to notebooks/, while
submitted/, autograded/, feedback/ and gradebook.db stay in the workspace.
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "autograder"))

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    Execute,
    GetGrades,
    IgnorePattern,
    LimitOutput,
    SaveAutoGrades,
)

from course_preprocessors import KeepWarningsVisible, RedactTracebacks  # noqa: E402

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

c.CourseDirectory.course_id = "sequence-models"
c.CourseDirectory.source_directory = str(REPO / "solutions")
c.CourseDirectory.release_directory = str(REPO / "notebooks")

# Grading mode: seqlab.grading.budget() shrinks every long cell, so no cell of a correct
# notebook needs more than a few seconds; a minute means an endless loop.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True

# nbgrader zeroes a test cell with any stderr output. A correct answer that triggers a
# library warning must keep its points, so warnings move to stdout before the grades are saved.
c.Autograde.autograde_preprocessors = [
    Execute,
    KeepWarningsVisible,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]

# Feedback shows the student's work and the visible tests, never the hidden ones:
# neither their source nor their code in a traceback.
c.GenerateFeedback.preprocessors = [
    GetGrades,
    ClearHiddenTests,
    RedactTracebacks,
    CSSHTMLHeaderPreprocessor,
]
