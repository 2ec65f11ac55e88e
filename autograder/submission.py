"""Trusted parent side: read a submission without running it (find its stages, extract notebook code).

The parent process never imports student code; everything here works on text
and syntax trees. The static scan of the source is autograder/scan.py.
"""
import ast
import json
import os
import re
from dataclasses import dataclass

from .stages import STAGES


class SubmissionError(ValueError):
    """The submission cannot be graded as given; the message says why."""


@dataclass
class StageSource:
    stage: object
    path: str        # the student's file (.py or .ipynb)
    source: str      # Python source that will be graded
    note: str = ""   # other files of the same stage that were not graded, and why
    cells: tuple = ()  # a notebook's graded cells: (first line in `source`, line count, cell number, names defined)

    def cite(self, text):
        """`text` with the graded script's line numbers said as the notebook's: "line 12 of the cell defining
        matmul_tiled_kernel (cell 7)", the line the student sees in that cell (the self-check says the same)."""
        if not self.cells or not text:
            return text
        own = self.stage.module + ".py"  # the file the grader writes the script to

        def where(m):
            file, number = m.group(1), int(m.group(2))
            if file and os.path.basename(file) != own:
                return m.group(0)
            for first, count, cell, names in self.cells:
                if first <= number < first + count:
                    if names:
                        return f"line {number - first + 1} of the cell defining {', '.join(names)} (cell {cell})"
                    return f"line {number - first + 1} of cell {cell}"
            return m.group(0)
        return CITED_LINE.sub(where, text)


def choose(stage, paths, source_of):
    """(the file graded for `stage`, the other files of it that are written) among files that each define it:
    a file whose functions are written (not stubs) first; among those the one under the name the assignment
    released (s1_naive.ipynb or s1_naive.py: nbgrader grades its released notebook and skips a Jupyter "Make a
    Copy"), then the given order. The one rule of `make grade` and of classroom/grade.py."""
    from .scan import unimplemented
    released = {stage.module + ".py", stage.module + ".ipynb"}

    def stub(path):
        source = source_of(path)
        return source is None or bool(unimplemented(source, (stage.kernel, stage.launcher)))
    ordered = sorted(paths, key=lambda p: (stub(p), os.path.basename(p) not in released))
    return ordered[0], [p for p in ordered[1:] if not stub(p)]


def skipped_note(stage, chosen, others, root):
    rel = lambda p: os.path.relpath(p, root)  # noqa: E731
    return (f"{', '.join(rel(p) for p in others)} also define{'s' if len(others) == 1 else ''} stage {stage.name}: "
            f"not graded; the file graded is {rel(chosen)} (written work first, then the name the assignment released)")


CITED_LINE = re.compile(r'(?:File )?(?:"?([^\s"(]+\.py)"?, )?\bline (\d+)\b(?! of (?:the )?cell)')


def notebook_source(path):
    """The graded code of a notebook: its code cells, minus nbgrader test cells,
    cells tagged ``not-graded`` (self-checks, plots) and IPython magics."""
    return notebook_script(path)[0]


def notebook_script(path):
    """(the graded script of a notebook, its cells: (first line, line count, cell number, names defined) each).

    Magic lines become blank lines, so a line keeps its number within its cell; cells are numbered from the top of
    the notebook, markdown included, as a student counts them."""
    try:
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SubmissionError(f"{path}: not a readable notebook ({exc})") from exc
    parts, spans, first = [], [], 1
    if not isinstance(cells, list):
        raise SubmissionError(f"{path}: not a readable notebook (its cells are not a list)")
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        nbgrader = meta.get("nbgrader") if isinstance(meta.get("nbgrader"), dict) else {}
        tags = meta.get("tags") if isinstance(meta.get("tags"), list) else []
        if nbgrader.get("grade") or "not-graded" in tags:
            continue
        text = cell.get("source") or ""
        text = "".join(t for t in text if isinstance(t, str)) if isinstance(text, list) else str(text)
        lines = ["" if ln.lstrip().startswith(("%", "!")) else ln for ln in text.splitlines()]
        parts.append("\n".join(lines))
        names = tuple(re.findall(r"^(?:def\s+(\w+)|class\s+(\w+))", text, re.M))
        spans.append((first, max(len(lines), 1), number, tuple(a or b for a, b in names)))
        first += max(len(lines), 1) + 1  # cells are joined with one blank line
    return "\n\n".join(parts) + "\n", tuple(spans)


def notebook_cell_ids(path):
    """The nbgrader grade_ids of a notebook's cells (empty for a file that is not a readable notebook)."""
    try:
        with open(path, encoding="utf-8") as f:
            cells = json.load(f)["cells"]
        return [((c.get("metadata") or {}).get("nbgrader") or {}).get("grade_id") for c in cells if isinstance(c, dict)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def missing_graded_cells(stage, path, names):
    """The released graded cells (grade_id "<module>-<name>") of `names` that a notebook no longer has, where its
    other cells show it was released with them (the notebook keeps the cell that introduces each)."""
    if not names or not path.endswith(".ipynb"):
        return []
    ids = set(notebook_cell_ids(path))
    return [f"{stage.module}-{n}" for n in names
            if f"{stage.module}-{n}" not in ids and f"{stage.module}-md-{n}" in ids]


def read_source(path):
    if path.endswith(".ipynb"):
        return notebook_source(path)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"{path}: cannot read ({exc})") from exc


def defined_names(source):
    """Top-level function names, or None when the source does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def function_names(source):
    """Top-level function names; where the source does not parse, the definitions found textually (so a syntax
    error is reported per stage)."""
    names = defined_names(source)
    return names if names is not None else set(re.findall(r"^def\s+(\w+)", source, re.M))


def stages_in(source, path):
    names = function_names(source)
    return [s for s in STAGES if s.launcher in names or s.kernel in names]


def collect(submission, stage=None):
    """The stages a submission (file or folder) holds, each with its source."""
    if os.path.isdir(submission):
        paths = sorted(os.path.join(submission, n) for n in os.listdir(submission)
                       if n.endswith((".py", ".ipynb")) and not n.startswith("."))
    elif os.path.isfile(submission):
        if not submission.endswith((".py", ".ipynb")):
            raise SubmissionError(f"{submission}: expected a .py file, a .ipynb notebook or a folder of them")
        paths = [submission]
    else:
        raise SubmissionError(f"{submission}: no such file or folder")
    sources, by_stage = {}, {}
    for path in paths:
        source = sources[path] = read_source(path)
        matches = [stage] if stage else stages_in(source, path)
        if stage and len(paths) > 1 and stage not in stages_in(source, path):
            continue
        if len(matches) > 1:
            raise SubmissionError(f"{path} defines several stages ({', '.join(s.name for s in matches)}): "
                                  "grade it with --stage NAME")
        for s in matches:
            by_stage.setdefault(s.number, (s, []))[1].append(path)
    if not by_stage:
        want = stage.launcher if stage else " or ".join(s.launcher for s in STAGES)
        raise SubmissionError(f"{submission}: found no file defining {want}")
    picked = []
    root = submission if os.path.isdir(submission) else os.path.dirname(submission)
    for number in sorted(by_stage):
        s, candidates = by_stage[number]
        chosen, others = choose(s, candidates, sources.get)
        cells = notebook_script(chosen)[1] if chosen.endswith(".ipynb") else ()
        picked.append(StageSource(s, chosen, sources[chosen], skipped_note(s, chosen, others, root) if others else "",
                                  cells))
    return picked
