"""formgrader's copy of a graded submission: COURSE/autograded/<student>/<assignment>/<stage module>.ipynb.

formgrader shows a stage's notebook from that path, and `nbgrader generate_feedback` turns every .ipynb there into a
page, looking up each nbgrader cell of it in the gradebook. A student's own file names ("s2_tiled-Copy1.ipynb"), a
notebook that breaks off part-way (not JSON) or cells the gradebook does not know made both fail. So each stage's
notebook is written under the name nbgrader expects, from the file the engine graded for that stage: its readable
cells, only the gradebook's cells marked as nbgrader cells, the stage's score cell always there, and a first cell
that names the file graded where it is not the released name or is damaged. The student's own files stay untouched
in submitted/<student>/<assignment>/.

formgrader renders this copy inside the Jupyter server where the TA is logged in, and `generate_feedback` renders
it into pages, so the copy holds no active content of the student's: outputs keep plain text and PNG or JPEG
images only (HTML, JavaScript, SVG, Markdown and LaTeX outputs, widgets and the like are left out, and a first cell
says how many), markdown cells the student wrote or changed and every raw cell are shown as text in a code block
(the course's own prose stays as released; nbconvert renders a raw cell as HTML), and every note about the
student's files is escaped.
"""
import base64
import binascii
import copy
import functools
import html
import os
import re

from . import fence
from .notebooks import _nbgrader, score_cell_id

KINDS = ("code", "markdown", "raw")
SAFE_DATA = ("text/plain", "image/png", "image/jpeg")     # output types shown; everything else can carry script
STREAMS = ("stdout", "stderr")


def _text(value):
    """An output field as nbformat has it (a string, or a list of strings); None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return "".join(value)
    return None


def _image(value):
    """Base64 image data that is only base64 (it lands in an <img src="data:..."> attribute), else None."""
    text = _text(value)
    if text is None:
        return None
    compact = re.sub(r"\s+", "", text)
    try:
        base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None
    return compact


def safe_outputs(outputs, dropped):
    """The outputs formgrader may show: streams, plain text, PNG and JPEG images and errors, rebuilt field by field;
    `dropped` (a Counter) counts the output types left out."""
    import nbformat
    kept = []
    for o in outputs if isinstance(outputs, list) else ():
        kind = o.get("output_type") if isinstance(o, dict) else None
        if kind == "stream" and _text(o.get("text")) is not None:
            name = o.get("name") if o.get("name") in STREAMS else "stdout"
            kept.append(nbformat.v4.new_output("stream", name=name, text=_text(o["text"])))
        elif kind in ("execute_result", "display_data") and isinstance(o.get("data"), dict):
            data = {}
            for mime, value in o["data"].items():
                safe = (_text(value) if mime == "text/plain" else _image(value)) if mime in SAFE_DATA else None
                if safe is None:
                    dropped[str(mime)[:40]] += 1
                else:
                    data[mime] = safe
            if data:
                extra = {"execution_count": None} if kind == "execute_result" else {}
                kept.append(nbformat.v4.new_output(kind, data=data, **extra))
        elif kind == "error":
            trace = o.get("traceback")
            lines = [x for x in trace if isinstance(x, str)] if isinstance(trace, list) else []
            kept.append(nbformat.v4.new_output("error", ename=str(o.get("ename", ""))[:200],
                                               evalue=str(o.get("evalue", ""))[:2000], traceback=lines))
        else:
            dropped[str(kind)[:40]] += 1
    return kept


@functools.lru_cache(maxsize=None)
def course_prose(module):
    """The markdown cells of the course's own notebook of a stage (notebooks/ and notebooks/prose/): shown as
    written. A markdown cell of any other text is the student's and is shown as text."""
    from autograder.stages import STAGES
    from .notebooks import build_notebook
    stage = next(s for s in STAGES if s.module == module)
    try:
        return frozenset(c.source for c in build_notebook(stage).cells if c.cell_type == "markdown")
    except Exception:  # a course without its notebook sources: every markdown cell is shown as text
        return frozenset()


def as_text(source):
    """A student's markdown as a fenced block of plain text: nothing in it is rendered (no HTML, no link, no math).
    The fence is longer than any run of backticks or tildes in the text, so the text cannot close it."""
    marks = fence(source, "~`", shortest=3)
    return f"{marks} text\n{source}\n{marks}"


def _clean_cell(cell, keep_ids, prose=frozenset(), dropped=None):
    """An nbformat v4 cell of a submitted cell (None for what is not a cell); nbgrader metadata kept only for
    `keep_ids` (cells the gradebook knows for this notebook); only safe outputs (counted into `dropped`), and a
    markdown cell that is not the course's own `prose` shown as text."""
    import collections
    dropped = collections.Counter() if dropped is None else dropped
    import nbformat
    from autograder.reading.notebooks import read_cell
    read = read_cell(cell, 0)  # the grader's one reading: fields of the wrong type absent, text Python can hold
    if read.kind not in KINDS:
        return None
    meta = {"tags": list(read.tags)} if read.tags else {}
    if read.grade_id is not None and read.grade_id in keep_ids:
        meta["nbgrader"] = copy.deepcopy(cell["metadata"]["nbgrader"])
        keep_ids.discard(read.grade_id)  # a cell copied twice is an nbgrader cell once
    source, kind = read.source, read.kind
    if kind == "markdown" and source not in prose:
        dropped["markdown shown as text"] += 1
        source = as_text(source)
    elif kind == "raw":  # nbconvert's pages print a raw cell as HTML: shown as text, as a student's markdown is
        dropped["raw shown as text"] += 1
        source, kind = as_text(source), "markdown"
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell,
            "raw": nbformat.v4.new_raw_cell}[kind]
    new = make(source, metadata=meta)
    if kind == "code":
        try:
            new.outputs = safe_outputs(cell.get("outputs"), dropped)
            nbformat.validate(nbformat.v4.new_notebook(cells=[new]))
        except Exception:  # outputs that do not validate are left out: the code is what was graded
            dropped["output that is not valid"] += 1
            new.outputs = []
    return new


def plain(text):
    """Text (a student's file name in a note) that markdown shows as written: no tag, no link, no autolink."""
    return html.escape(text, quote=False).replace("[", "&#91;").replace("]", "&#93;")


def left_out_note(dropped):
    """The copy's note on what of the student's notebook it does not show as handed in ("" when nothing)."""
    shown, raw = dropped.pop("markdown shown as text", 0), dropped.pop("raw shown as text", 0)
    parts = []
    if dropped:
        kinds = ", ".join(sorted(dropped))
        n = sum(dropped.values())
        parts.append(f"outputs not shown: {n} output{'s' if n != 1 else ''} with HTML, script or another active type "
                     f"({kinds}); the student's notebook in submitted/ has them")
    if shown:
        parts.append(f"{shown} markdown cell{'s' if shown != 1 else ''} written by the student shown as text")
    if raw:
        parts.append(f"{raw} raw cell{'s' if raw != 1 else ''} shown as text")
    return plain("; ".join(parts) + ".") if parts else ""


def stage_notebook(stage, folder, graded, solution_ids, points, student, assignment):
    """(the nbformat notebook formgrader and Generate Feedback show for `stage`, a note on the file or "")."""
    import nbformat
    from autograder.submission import SubmissionError, broken_off, load_notebook, read_text
    canonical = f"{stage.module}.ipynb"
    where = f"submitted/{student}/{assignment}/"
    cells, note = [], ""
    if graded is None and os.path.isfile(os.path.join(folder, canonical)):
        graded = canonical  # a notebook that defines no function of the stage: shown as handed in
    if graded is None:
        note = f"No file of this stage was found in {where}: nothing of it was graded."
    else:
        path = os.path.join(folder, graded)
        try:
            if graded.endswith(".ipynb"):
                cells, cut = load_notebook(path)
                if cut is not None:
                    note = (f"The file graded, {where}{graded}, is damaged: {broken_off(cut)}. Shown here are the "
                            f"{len(cells)} whole cells before the break, which are what was graded.")
            else:
                cells = [{"cell_type": "code", "source": read_text(path), "metadata": {}}]
        except SubmissionError as exc:
            note = f"The file graded, {where}{graded}, could not be shown: {exc}."
        if not note and graded != canonical:
            note = (f"The file graded for this stage is {where}{graded} (shown here under the released name, "
                    f"{canonical}, as formgrader and nbgrader's feedback look for it).")
    import collections
    keep = set(solution_ids) | {score_cell_id(stage)}
    dropped = collections.Counter()
    out = [c for c in (_clean_cell(c, keep, course_prose(stage.module), dropped) for c in cells) if c is not None]
    if score_cell_id(stage) in keep:  # the score cell was deleted, cut off or never there: it holds the points
        out.append(nbformat.v4.new_markdown_cell(
            f"### Points: stage {stage.number}\n\nThe score `make grade` recorded for this stage.",
            metadata=_nbgrader(score_cell_id(stage), task=True, points=points)))
    safe_note = " ".join(x for x in (plain(note), left_out_note(dropped)) if x)
    if safe_note:
        out.insert(0, nbformat.v4.new_markdown_cell(f"**make grade:** {safe_note}"))
    nb = nbformat.v4.new_notebook(cells=out)
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                   "language_info": {"name": "python"}}
    return nb, note


def write(dest, folder, files, known_cells, maxima, student, assignment):
    """Write formgrader's copy of every stage into `dest` (removing the notebooks an earlier run put there), with the
    submission's timestamp.txt. files: {stage name: file graded, relative to `folder`}; known_cells: {module: the
    gradebook's solution cell names}; maxima: {stage name: points}."""
    import nbformat
    from autograder.stages import STAGES
    os.makedirs(dest, exist_ok=True)
    for name in os.listdir(dest):
        if name.endswith(".ipynb"):
            os.remove(os.path.join(dest, name))
    notes = {}
    for stage in STAGES:
        nb, note = stage_notebook(stage, folder, files.get(stage.name), known_cells.get(stage.module, ()),
                                  maxima[stage.name], student, assignment)
        nbformat.write(nb, os.path.join(dest, f"{stage.module}.ipynb"))
        if note:
            notes[stage.name] = note
    from autograder.reading.files import copy_regular
    copy_regular(os.path.join(folder, "timestamp.txt"), os.path.join(dest, "timestamp.txt"))  # never a link's target
    return notes
