"""The course workflow on nbgrader: one module per verb.

- ``python -m course.notebooks``   notebooks/*.py from solutions/ + notebooks/prose/ (``make notebooks``)
- ``python -m course.release``     the nbgrader course folder and ``generate_assignment`` (``make release``)
- ``python -m course.demo``        the demo course's submissions, from the release notebooks
- ``python -m course.grade_class`` every submission through the grading engine (``make grade``)

Grades come only from the grading engine (autograder.engine), which runs the
student's code in separate processes; nothing run inside a notebook kernel is
trusted for a grade. nbgrader provides the course layout, the release (solution
stripping, locked cells) and the gradebook that ``nbgrader export`` and
formgrader read.
"""
import os

import autograder  # noqa: F401  (first: it sets the BLAS thread count before anything loads numpy)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSIGNMENT = "matmul"              # the one nbgrader assignment: one notebook per stage
BUILD_COURSE = os.path.join(ROOT, "build", "course")   # default course folder of `make release`
DEMO_COURSE = os.path.join(ROOT, "demo_course")        # default course folder of `make grade`


def use_venv_tools():
    """Put this interpreter's bin folder on PATH: nbgrader's Gradebook runs the `alembic` command by name."""
    import sys
    folder = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    if folder not in path.split(os.pathsep):
        os.environ["PATH"] = folder + (os.pathsep + path if path else "")


def printable(text, lines=True):
    """`text` as a terminal or a one-line table cell shows it as written: every control or format character (an
    escape sequence, a carriage return, a right-to-left override; a newline too where `lines` is False) is written
    as its Python escape. A student's folder and file names reach the class run's messages."""
    import unicodedata
    keep = "\n\t" if lines else ""
    return "".join(c if c in keep or not unicodedata.category(c).startswith("C") or c == " "
                   else ascii(c)[1:-1] for c in str(text))


def fence(text, chars="`", shortest=1):
    """A markdown fence `text` cannot close: one of chars[0] longer than the longest run of any of `chars` in it
    (at least `shortest`). A student's text shown as code (a gradebook comment's span, formgrader's copy of a cell)."""
    import re
    longest = max((len(m) for m in re.findall("|".join(f"{re.escape(c)}+" for c in chars), text)), default=0)
    return chars[0] * max(shortest, longest + 1)


def shown_path(path, start=None):
    """A path as a message prints it: relative to where the command runs when it lies below, else absolute
    (`../course/...` from inside the grader's clone sends the reader up and around)."""
    rel = os.path.relpath(path, start)
    return os.path.abspath(path) if rel.startswith("..") else rel
