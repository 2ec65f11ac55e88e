"""Trusted parent side: read a submission without running it (find its stages, extract notebook code).

The parent process never imports student code; everything here works on text
and syntax trees, and every file is read through the bounded reader (autograder/reading). The static scan of the
source is autograder/scan.py.
"""
import ast
import os
import re
from dataclasses import dataclass

from .reading import files as reader
from .reading import notebooks as nb_reader
from .reading.notebooks import broken_off  # noqa: F401 (part of this module's interface)
from .reading.source import lines as source_lines
from .stages import STAGES


class SubmissionError(ValueError):
    """The submission cannot be graded as given; the message says why."""


class Unreadable(SubmissionError):
    """A file that cannot be read as a kernel module or a notebook: `why` says why (without the path)."""

    def __init__(self, path, why):
        super().__init__(f"{path}: {why}")
        self.path, self.why = path, why


@dataclass
class StageSource:
    stage: object
    path: str        # the student's file (.py or .ipynb)
    source: str      # Python source that will be graded
    note: str = ""   # other files of the same stage that were not graded, and why
    cells: tuple = ()  # a notebook's graded cells: (first line in `source`, line count, cell number, names defined)
    file: str = ""     # `path` as the student names it: relative to the submission folder
    unreadable: str = ""  # why the stage's only file could not be read (then `source` is empty): the stage fails

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
    the notebook, markdown included, as a student counts them. A notebook that breaks off part-way is Unreadable
    here (collect grades the stages of its intact cells)."""
    cells, cut = load_notebook(path)
    if cut is not None:
        raise Unreadable(path, broken_off(cut))
    return cells_script(cells)


def cells_script(cells):
    """notebook_script of a notebook's list of cells (JSON cells, or the reader's Cells). Lines are counted as
    Python counts them (autograder/reading/source.py), so a cell holding U+2028 keeps its line numbers."""
    parts, spans, first = [], [], 1
    for number, cell in enumerate(cells, 1):
        cell = cell if isinstance(cell, nb_reader.Cell) else nb_reader.read_cell(cell, number)
        if cell.kind != "code" or cell.grade or "not-graded" in cell.tags:
            continue
        text = cell.source
        lines = ["" if ln.lstrip().startswith(("%", "!")) else ln for ln in source_lines(text)]
        parts.append("\n".join(lines))
        names = tuple(re.findall(r"^(?:def\s+(\w+)|class\s+(\w+))", text, re.M))
        spans.append((first, max(len(lines), 1), number, tuple(a or b for a, b in names)))
        first += max(len(lines), 1) + 1  # cells are joined with one blank line
    return "\n\n".join(parts) + "\n", tuple(spans)


def read_text(path, follow=False):
    """A submitted file's text (UTF-8, a byte-order mark dropped), read by the bounded reader: Unreadable, saying
    why, for a folder, a link, a FIFO or device, a file too large, one the grader cannot open or one not UTF-8."""
    try:
        return reader.read_text(path, follow=follow)
    except reader.NotRead as exc:
        raise Unreadable(path, exc.why) from exc


def load_notebook(path, follow=False):
    """(a notebook's cells, where it breaks off): autograder/reading/notebooks.py's load_notebook, raising
    Unreadable."""
    try:
        return nb_reader.load_notebook(path, follow=follow)
    except reader.NotRead as exc:
        raise Unreadable(path, exc.why) from exc


def lost_to_break(path, source, cut):
    """The stages a notebook that breaks off (load_notebook's `cut`) cannot be graded for: a stage with a function
    defined in the cell it breaks off in, a stage of which the whole cells define the kernel or the launcher but not
    both, and the stage its file is named for where the whole cells do not define it."""
    number, rest = cut
    if number is None:
        return []
    names, in_cut, named = function_names(source), set(re.findall(r"\bdef\s+(\w+)", rest)), stage_named(path)
    lost = []
    for s in STAGES:
        has = (s.kernel in names, s.launcher in names)
        if s.kernel in in_cut or s.launcher in in_cut or has[0] != has[1] or (s is named and not all(has)):
            lost.append(s)
    return lost


def stage_named(path):
    """The stage a file's name points to: s3_tiled_general.ipynb, s3_tiled_general-Copy1.ipynb, an LMS's
    jdoe_12345_s3_tiled_general.ipynb (None for any other name)."""
    base = os.path.splitext(os.path.basename(path))[0].lower()
    return next((s for s in STAGES if s.module in base), None)


def notebook_cell_ids(path):
    """The nbgrader grade_ids of a notebook's cells that have one of text (empty for a file that is not a readable
    notebook)."""
    try:
        cells = load_notebook(path)[0]
    except SubmissionError:
        return []
    return [c.grade_id for c in nb_reader.read_cells(cells) if c.grade_id is not None]


def missing_graded_cells(stage, path, names):
    """The released graded cells (grade_id "<module>-<name>") of `names` that a notebook no longer has, where its
    other cells show it was released with them (the notebook keeps the cell that introduces each)."""
    if not names or not path.endswith(".ipynb"):
        return []
    ids = set(notebook_cell_ids(path))
    return [f"{stage.module}-{n}" for n in names
            if f"{stage.module}-{n}" not in ids and f"{stage.module}-md-{n}" in ids]


def read_source(path):
    """The Python source a file holds (a notebook's graded cells); Unreadable (a SubmissionError) says why not."""
    if path.endswith(".ipynb"):
        return notebook_source(path)
    return read_text(path)


def _read(path, follow=False):
    """(source, notebook cells, where it breaks off, notes on fields read as absent) of one file of a submission;
    raises Unreadable."""
    if not path.endswith(".ipynb"):
        return read_text(path, follow), (), None, []
    cells, cut = load_notebook(path, follow)
    cells = nb_reader.read_cells(cells)
    return (*cells_script(cells), cut, [n for c in cells for n in c.notes])


def defined_names(source):
    """Top-level function names, or None when the source does not parse (nesting too deep for Python's parser
    included: the grammar names it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
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


RESUBMIT = ("Submit the stage's file again, whole: a notebook as Jupyter saves it (File > Save), a .py file saved "
            "as UTF-8 text")


class Collected(list):
    """collect's StageSources, with `notes`: the files of the submission read for no stage, and why."""
    notes = ()


def collect(submission, stage=None):
    """The stages a submission (file or folder) holds, each with its source (a Collected list).

    A file that cannot be read (an empty or damaged notebook, a folder named like a file, text that is not UTF-8)
    touches no other file's stage: where another file holds the stage its name points to, that one is graded and
    the note names the unread file; where it was the stage's only file, that stage fails saying why (unreadable);
    a file named for no stage is named in `notes`. A notebook that breaks off part-way is graded for the stages its
    whole cells define; those it breaks fail, saying so."""
    if os.path.isdir(submission):
        paths = sorted(os.path.join(submission, n) for n in os.listdir(submission)
                       if n.endswith((".py", ".ipynb")) and not n.startswith("."))
        follow = False  # a link, a FIFO or a device in the folder is named in a note, never read
        extra, paths = paths[reader.MAX_FILES:], paths[:reader.MAX_FILES]
    elif os.path.exists(submission) and not os.path.isdir(submission):
        if not submission.endswith((".py", ".ipynb")):
            raise SubmissionError(f"{submission}: expected a .py file, a .ipynb notebook or a folder of them")
        paths, follow = [submission], True  # the file the command names: a link to it is the user's own choice
    else:
        raise SubmissionError(f"{submission}: no such file or folder")
    root = submission if os.path.isdir(submission) else os.path.dirname(submission)
    rel = lambda p: os.path.relpath(p, root)  # noqa: E731
    sources, spans, by_stage, unread, notes = {}, {}, {}, {}, []
    if os.path.isdir(submission) and extra:
        notes.append(f"{len(extra)} more .py and .ipynb files ({rel(extra[0])} ...) not read: the grader reads the "
                     f"first {reader.MAX_FILES} of a folder, by name")
    for path in paths:
        try:
            source, cells, cut, absent = _read(path, follow)
        except Unreadable as exc:
            named = stage if stage and len(paths) == 1 else stage_named(path)
            if named is None or (stage and named is not stage):
                if len(paths) == 1:
                    raise
                notes.append(f"{rel(path)}: skipped, not read ({exc.why}); it is named for no stage, so no "
                             "stage's points depend on it")
            else:
                unread.setdefault(named.number, (named, []))[1].append((path, exc.why))
            continue
        sources[path], spans[path] = source, cells
        if absent:
            notes.append(f"{rel(path)}: {'; '.join(absent[:5])}" + (f"; {len(absent) - 5} more" if len(absent) > 5
                                                                   else ""))
        found = stages_in(source, path)
        if cut is not None:
            lost = [s for s in lost_to_break(path, source, cut) if not stage or s is stage]
            for s in lost:
                unread.setdefault(s.number, (s, []))[1].append((path, broken_off(cut)))
            found = [s for s in found if s not in lost]
            if stage and stage in lost:
                continue
            if found or (stage and len(paths) == 1):
                notes.append(f"{rel(path)}: {broken_off(cut)}; graded from its whole cells, before the break")
            elif not lost:
                notes.append(f"{rel(path)}: {broken_off(cut)}; its whole cells define no stage")
        matches = [stage] if stage else found
        if stage and len(paths) > 1 and stage not in found:
            continue
        if len(matches) > 1:
            if len(paths) == 1:
                raise SubmissionError(f"{rel(path)} defines several stages ({', '.join(s.name for s in matches)}): "
                                      "grade it with --stage NAME")
            named = stage_named(path)
            if named in matches:  # the released name says which stage the file is handed in for
                notes.append(f"{rel(path)} also defines {', '.join(s.name for s in matches if s is not named)}: "
                             f"graded for stage {named.name} only, the stage its name is released for")
                matches = [named]
            else:  # a scratch copy of several stages: a file of the folder, graded for none of them
                notes.append(f"{rel(path)}: not graded, it defines several stages "
                             f"({', '.join(s.name for s in matches)}); each stage is graded from its own file")
                continue
        for s in matches:
            by_stage.setdefault(s.number, (s, []))[1].append(path)
    if not by_stage and not unread:
        want = stage.launcher if stage else " or ".join(s.launcher for s in STAGES)
        raise SubmissionError(f"{submission}: found no file defining {want}" + "".join(f"; {n}" for n in notes))
    picked = Collected()
    picked.notes = notes
    for number in sorted(set(by_stage) | set(unread)):
        s, bad = unread.get(number, (None, []))
        if number not in by_stage:
            path, why = bad[0]
            others = "".join(f"; {rel(p)}, also named for it, was not read either ({w})" for p, w in bad[1:])
            picked.append(StageSource(s, path, "", f"{rel(path)} could not be read: stage {s.name} scores 0 ({why})",
                                      (), rel(path),
                                      unreadable=f"{rel(path)} could not be read, so stage {s.name} was not graded: "
                                                 f"{why}{others}. {RESUBMIT}"))
            continue
        s, candidates = by_stage[number]
        chosen, written = choose(s, candidates, sources.get)
        note = skipped_note(s, chosen, written, root) if written else ""
        note += "".join(f"{'; ' if note or i else ''}{rel(p)} was not read for stage {s.name} ({why}); the file "
                        f"graded is {rel(chosen)}" for i, (p, why) in enumerate(bad))
        picked.append(StageSource(s, chosen, sources[chosen], note, spans[chosen], rel(chosen)))
    return picked
