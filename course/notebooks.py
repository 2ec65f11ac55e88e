"""Generate the stage notebooks from the single source (``make notebooks``).

Each stage's notebook is built from two files and nothing else:

- ``solutions/<module>.py``: the code. The module is split at its top-level
  functions: a header cell (docstring, imports, constants), then one cell per
  function. A function holding ``### BEGIN SOLUTION`` markers becomes an nbgrader
  solution cell, markers kept: nbgrader's ClearSolutions replaces each marked
  region with the course's stub when it releases the assignment.
- ``notebooks/prose/<module>.md``: the teaching text, in named sections
  (``<!-- section: NAME -->`` on a line of its own). ``title`` opens the notebook,
  ``intro`` follows the setup cell, a section named ``header`` or after a function
  of the module (``matmul_tiled_kernel``) goes right before that code cell,
  ``check`` before the self-check cell and ``closing`` after it.

The generator adds the locked setup cell (the simulator when there is no GPU,
Numba's warnings silenced), the locked self-check cell (autograder.selfcheck)
and a locked nbgrader task cell whose points are the stage's total in
autograder/config.toml; ``make grade`` writes the grading engine's score there.

The notebooks are stored as jupytext "percent" files (``notebooks/<module>.py``):
no outputs, readable in a diff. ``make release`` turns them into the ``.ipynb``
files nbgrader reads; a test fails when a stored notebook is stale.
"""
import argparse
import ast
import os
import re
import sys

from autograder.config import stage_max

from . import ROOT

PROSE_DIR = os.path.join(ROOT, "notebooks", "prose")
NOTEBOOK_DIR = os.path.join(ROOT, "notebooks")
SECTION = re.compile(r"^<!-- section: ([A-Za-z_][\w-]*) -->[ \t]*$", re.M)
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
JUPYTEXT = {"notebook_metadata_filter": "-all", "cell_metadata_filter": "nbgrader,tags,-all"}
GENERATED = ("<!-- Generated from solutions/{module}.py and notebooks/prose/{module}.md by `make notebooks`:"
             " edit those, not this notebook. -->\n")

SETUP_CODE = '''\
# Setup: run this cell first. Without a GPU, Numba's CUDA simulator stands in (it
# must be chosen before Numba is imported); Numba's warnings are silenced.
import os, shutil, subprocess, sys
from pathlib import Path


def _gpu_present():
    smi = shutil.which("nvidia-smi")
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20) if smi else None
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(out) and out.returncode == 0 and "GPU" in out.stdout


if "NUMBA_ENABLE_CUDASIM" not in os.environ and not _gpu_present():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
# The self-check comes from the course's autograder package: importable already, or in a folder above this one.
for _folder in [Path.cwd(), *Path.cwd().parents]:
    if (_folder / "autograder" / "selfcheck" / "__init__.py").is_file():
        sys.path.insert(0, str(_folder))
        break
try:
    from autograder.selfcheck import check, quiet_numba_warnings, say_where_kernels_run
except ImportError:  # a copy without the course's harness (the Classroom template): grading still works
    import warnings

    def quiet_numba_warnings():
        warnings.filterwarnings("ignore", module="numba")

    def say_where_kernels_run():
        print("Kernels run on", "the CUDA simulator (no GPU)." if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
              else "the GPU.")

    def check(stage):
        print(f"Self-check for stage {stage!r} not available here: it needs the course's autograder package. "
              "Install it where this notebook runs (no GPU needed): "
              '`pip install "matmul_gpu_course-<version>-py3-none-any.whl[ptx,plot]"` (the file your course gives; '
              "[ptx] adds the CUDA compiler, [plot] the plots; `make selfcheck-package` builds it from the course "
              "repository), then "
              "restart the kernel and run the notebook again.")

quiet_numba_warnings()
say_where_kernels_run()  # as the self-check's header says it, from the same test'''

CHECK_NAMES = {"compiles": "compiles for the GPU (PTX)", "shared_memory": "shared-memory tiles and barriers",
               "correct": "correct results on fresh random inputs", "races": "no shared-memory races",
               "bank_conflicts": "no shared-memory bank conflicts", "data_reuse": "data reuse",
               "speed": "speed against a reference kernel (GPU only)"}


def split_module(text, name="module"):
    """[(cell name, code)]: 'header' (everything before the first function), then one per top-level function."""
    tree = ast.parse(text, name)
    lines = text.splitlines()
    starts = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            starts.append((node.name, first - 1))
        elif starts:
            raise ValueError(f"{name}: line {node.lineno}: only functions may follow the first function "
                             "(each becomes its own notebook cell)")
    cells, bounds = [], [("header", 0)] + starts + [(None, len(lines))]
    for (cell, start), (_, stop) in zip(bounds, bounds[1:]):
        code = "\n".join(lines[start:stop]).strip("\n")
        if code:
            cells.append((cell, code))
    return cells


def parse_prose(text, name="prose"):
    """{section: markdown} from a prose file; text before the first section marker must be blank."""
    parts = SECTION.split(text)
    if parts[0].strip():
        raise ValueError(f"{name}: text before the first '<!-- section: NAME -->' line")
    sections = {}
    for section, body in zip(parts[1::2], parts[2::2]):
        if section in sections:
            raise ValueError(f"{name}: section {section!r} appears twice")
        if "BEGIN SOLUTION" in body or "END SOLUTION" in body:
            raise ValueError(f"{name}: section {section!r} names a solution marker; nbgrader would clear the cell")
        sections[section] = body.strip("\n")
    return sections


def _nbgrader(grade_id, locked=True, solution=False, grade=False, task=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": task}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def score_cell_id(stage):
    """The nbgrader cell that holds a stage's points (a task cell), shared by the notebooks and the gradebook."""
    return f"{stage.module}-score"


def score_text(stage, cfg):
    points = cfg["stages"][stage.name]["points"]
    total = sum(points.values())
    sim = total - points.get("speed", 0)
    lines = [f"### Points: stage {stage.number} is worth {total:g}",
             "",
             "| check | points |", "|---|---|"]
    lines += [f"| {CHECK_NAMES[key]} | {value:g} |" for key, value in points.items()]
    lines += ["",
              "`make grade` grades this notebook's code cells (not the setup and self-check cells) with the "
              "course's grading engine, each check in a separate process on fresh random inputs, and records the "
              "score against this cell in the course gradebook. Nothing that runs in your notebook counts toward "
              "the grade: the self-check above is a preview."]
    if "speed" in points:
        lines += ["", f"Without a GPU the speed check cannot run: the simulator tier scores {sim:g} of the "
                      f"{total:g} points and marks the grade provisional."]
    return "\n".join(lines)


def build_notebook(stage, cfg=None, solutions_dir=None, prose_dir=None):
    """The nbformat notebook of one stage, from its solution module and its prose file."""
    import nbformat
    from autograder import config
    cfg = cfg or config.load()
    v4 = nbformat.v4
    solutions_dir = solutions_dir or os.path.join(ROOT, "solutions")
    prose_path = os.path.join(prose_dir or PROSE_DIR, f"{stage.module}.md")
    with open(os.path.join(solutions_dir, stage.filename), encoding="utf-8") as f:
        code_cells = split_module(f.read(), stage.filename)
    with open(prose_path, encoding="utf-8") as f:
        prose = parse_prose(f.read(), prose_path)
    names = {name for name, _ in code_cells}
    allowed = {"title", "intro", "check", "closing"} | names
    unknown = set(prose) - allowed
    if unknown:
        raise ValueError(f"{prose_path}: unknown sections {sorted(unknown)}; known: {sorted(allowed)}")
    missing = {"title", "intro", "check"} - set(prose)
    if missing:
        raise ValueError(f"{prose_path}: missing sections {sorted(missing)}")

    def markdown(section, text=None):
        return v4.new_markdown_cell(text if text is not None else prose[section],
                                    metadata=_nbgrader(f"{stage.module}-md-{section}"))

    m = stage.module
    cells = [markdown("title", GENERATED.format(module=m) + prose["title"]),
             v4.new_code_cell(SETUP_CODE, metadata={"tags": ["not-graded"], **_nbgrader(f"{m}-setup")}),
             markdown("intro")]
    for name, code in code_cells:
        if name in prose:
            cells.append(markdown(name))
        if BEGIN in code:
            if END not in code:
                raise ValueError(f"{stage.filename}: {name} has {BEGIN} without {END}")
            cells.append(v4.new_code_cell(code, metadata=_nbgrader(f"{m}-{name}", locked=False, solution=True)))
        else:
            cells.append(v4.new_code_cell(code))
    cells.append(markdown("check"))
    cells.append(v4.new_code_cell(f'check("{stage.name}")',
                                  metadata={"tags": ["not-graded"], **_nbgrader(f"{m}-selfcheck")}))
    if "closing" in prose:
        cells.append(markdown("closing"))
    total = stage_max(cfg)[stage.name]
    total = int(total) if total.is_integer() else total  # nbgrader's points as the config writes them
    # a task cell only (nbgrader's "manually graded task"): a cell marked grade as well is recorded twice, as a grade
    # cell and a task cell, which doubles the assignment's points and leaves a score that needs manual grading
    cells.append(v4.new_markdown_cell(score_text(stage, cfg), metadata=_nbgrader(
        score_cell_id(stage), task=True, points=total)))
    nb = v4.new_notebook(cells=cells)
    nb.metadata["jupytext"] = dict(JUPYTEXT)
    return nb


def notebook_text(stage, **kwargs):
    """The stored form of a stage's notebook: jupytext percent text."""
    import jupytext
    return jupytext.writes(build_notebook(stage, **kwargs), fmt="py:percent")


def notebook_path(stage):
    return os.path.join(NOTEBOOK_DIR, stage.filename)


def write_notebooks():
    from autograder.stages import STAGES
    written = []
    for stage in STAGES:
        with open(notebook_path(stage), "w", encoding="utf-8") as f:
            f.write(notebook_text(stage))
        written.append(notebook_path(stage))
    return written


def stale_notebooks():
    """Stored notebooks that differ from what the generator makes now."""
    from autograder.stages import STAGES
    stale = []
    for stage in STAGES:
        try:
            with open(notebook_path(stage), encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = None
        if current != notebook_text(stage):
            stale.append(os.path.relpath(notebook_path(stage), ROOT))
    return stale


def read_ipynb(stage):
    """The stored notebook of a stage as an nbformat notebook ready for Jupyter and nbgrader."""
    import jupytext
    nb = jupytext.read(notebook_path(stage), fmt="py:percent")
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    for i, cell in enumerate(nb.cells):  # stable ids (nbformat draws random ones): releases are reproducible
        cell.id = cell.metadata.get("nbgrader", {}).get("grade_id") or f"{stage.module}-cell-{i}"
    return nb


def write_ipynbs(folder):
    """Write every stage's .ipynb into `folder` (nbgrader's source/<assignment>/); return the paths."""
    import nbformat
    from autograder.stages import STAGES
    os.makedirs(folder, exist_ok=True)
    paths = []
    for stage in STAGES:
        path = os.path.join(folder, f"{stage.module}.ipynb")
        nbformat.write(read_ipynb(stage), path)
        paths.append(path)
    return paths


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m course.notebooks", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only report stale notebooks (exit 1 when any is stale)")
    args = p.parse_args(argv)
    if args.check:
        stale = stale_notebooks()
        for path in stale:
            print(f"stale: {path} (run `make notebooks`)")
        return 1 if stale else 0
    for path in write_notebooks():
        print("wrote", os.path.relpath(path, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
