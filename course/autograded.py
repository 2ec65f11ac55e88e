"""formgrader's copy of a graded submission: COURSE/autograded/<student>/<assignment>/<stage module>.ipynb.

formgrader shows a stage's notebook from that path, and `nbgrader generate_feedback` turns every .ipynb there into a
page, looking up each nbgrader cell of it in the gradebook. A student's own file names ("s2_tiled-Copy1.ipynb"), a
notebook that breaks off part-way (not JSON) or cells the gradebook does not know made both fail. So each stage's
notebook is written under the name nbgrader expects, from the file the engine graded for that stage: its readable
cells, only the gradebook's cells marked as nbgrader cells, the stage's score cell always there, and a first cell
that names the file graded where it is not the released name or is damaged. The student's own files stay untouched
in submitted/<student>/<assignment>/.
"""
import copy
import os

from .notebooks import _nbgrader, score_cell_id

KINDS = ("code", "markdown", "raw")


def _clean_cell(cell, keep_ids):
    """An nbformat v4 cell of a submitted cell (None for what is not a cell); nbgrader metadata kept only for
    `keep_ids` (cells the gradebook knows for this notebook)."""
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
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell,
            "raw": nbformat.v4.new_raw_cell}[kind]
    new = make(source, metadata=meta)
    if kind == "code":
        outputs = cell.get("outputs")
        if isinstance(outputs, list):
            try:
                new.outputs = [nbformat.from_dict(o) for o in outputs if isinstance(o, dict)]
                nbformat.validate(nbformat.v4.new_notebook(cells=[new]))
            except Exception:  # outputs that do not validate are left out: the code is what was graded
                new.outputs = []
    return new


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
    keep = set(solution_ids) | {score_cell_id(stage)}
    out = [c for c in (_clean_cell(c, keep) for c in cells) if c is not None]
    if score_cell_id(stage) in keep:  # the score cell was deleted, cut off or never there: it holds the points
        out.append(nbformat.v4.new_markdown_cell(
            f"### Points: stage {stage.number}\n\nThe score `make grade` recorded for this stage.",
            metadata=_nbgrader(score_cell_id(stage), task=True, points=points)))
    if note:
        out.insert(0, nbformat.v4.new_markdown_cell(f"**make grade:** {note}"))
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
