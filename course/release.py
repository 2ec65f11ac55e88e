"""Release the assignment to students (``make release``): nbgrader ``generate_assignment``.

1. Writes every stage's notebook as ``.ipynb`` into ``COURSE/source/matmul/``, from the
   stored notebooks in ``notebooks/`` (jupytext percent files, see course.notebooks).
2. Copies course/nbgrader_config.py into COURSE when it has no nbgrader_config.py, else brings its
   course hooks (everything from the "# ---- course hooks" line on) up to this version's.
3. Runs ``nbgrader generate_assignment matmul --force`` in COURSE: nbgrader replaces each
   solution region with the course's stub, locks the read-only cells, records the
   assignment in COURSE/gradebook.db and writes ``COURSE/release/matmul/``.
4. Checks the release: no solution marker and no line of a solution region may survive,
   every solution cell must hold the stub, each stage's score cell is a task cell alone, and the
   gradebook's assignment is worth the config's total (each score cell recorded once). Any finding
   is an error (exit 1).

A gradebook released before the score cells were task cells alone holds each of them twice (a grade
cell too); the release removes the copies first (course.gradebook.drop_duplicate_score_cells).

COURSE is build/course/ unless given.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

from . import ASSIGNMENT, BUILD_COURSE, ROOT, shown_path, use_venv_tools
from . import notebooks
from .notebooks import score_cell_id

CONFIG_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nbgrader_config.py")
STUB = 'raise NotImplementedError("not implemented yet")'
HOOKS = "# ---- course hooks"  # where the part of nbgrader_config.py that is the same in every course folder begins


class ReleaseError(RuntimeError):
    """generate_assignment failed or its output still holds a solution."""


def solution_lines(text):
    """The code lines inside the solution regions of a text (comments and short lines left out)."""
    lines, inside = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == notebooks.BEGIN:
            inside = True
        elif stripped == notebooks.END:
            inside = False
        elif inside and stripped and not stripped.startswith("#") and len(stripped) > 12:
            lines.append(stripped)
    return lines


def _cells(path):
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    for cell in nb["cells"]:
        source = cell.get("source", "")
        yield cell, "".join(source) if isinstance(source, list) else source


def release_findings(release_dir):
    """Problems with a release folder: surviving solutions, missing stubs, missing notebooks."""
    from autograder.stages import STAGES
    findings = []
    for stage in STAGES:
        path = os.path.join(release_dir, f"{stage.module}.ipynb")
        if not os.path.isfile(path):
            findings.append(f"{stage.module}.ipynb is missing from the release")
            continue
        with open(os.path.join(ROOT, "solutions", stage.filename), encoding="utf-8") as f:
            hidden = set(solution_lines(f.read()))
        stubs = 0
        for cell, text in _cells(path):
            if "BEGIN SOLUTION" in text or "END SOLUTION" in text:
                findings.append(f"{stage.module}.ipynb: a solution marker survived")
            lines = {ln.strip() for ln in text.splitlines()}
            leaked = sorted(hidden & lines)
            if leaked:
                findings.append(f"{stage.module}.ipynb: solution lines survived: {leaked[:3]}")
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade_id") == score_cell_id(stage) and (meta.get("grade") or not meta.get("task")):
                findings.append(f"{stage.module}.ipynb: the score cell must be a task cell alone (nbgrader records "
                                "a cell marked grade and task twice)")
            if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
                stubs += STUB in text
                if not cell["metadata"]["nbgrader"].get("checksum"):
                    findings.append(f"{stage.module}.ipynb: solution cell without nbgrader's checksum")
        if stubs == 0:
            findings.append(f"{stage.module}.ipynb: no solution cell holds the stub {STUB!r}")
    for dirpath, _, files in os.walk(release_dir):
        for name in files:
            if not name.endswith(".ipynb"):
                findings.append(f"unexpected file in the release: {os.path.relpath(os.path.join(dirpath, name), release_dir)}")
    return findings


def update_hooks(path):
    """Replace the course hooks of a course's nbgrader_config.py (from HOOKS on) with the template's; the settings
    above that line stay the instructor's. Returns True when the file changed."""
    with open(CONFIG_TEMPLATE, encoding="utf-8") as f:
        template = f.read()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if HOOKS not in text:  # a configuration of the instructor's own: left as it is
        return False
    updated = text[: text.index(HOOKS)] + template[template.index(HOOKS):]
    if updated == text:
        return False
    with open(path, "w", encoding="utf-8") as f:
        f.write(updated)
    return True


def _repair_gradebook(course):
    """Remove the second copy of each score cell from a gradebook released before they were task cells alone:
    generate_assignment refuses to change a notebook's cells once it has submissions."""
    from . import gradebook
    with gradebook.open_gradebook(gradebook.course_directory(course)) as gb:
        gradebook.drop_duplicate_score_cells(gb)


def gradebook_findings(course):
    """Problems with the released assignment in the gradebook: points other than the config's total."""
    from autograder.config import load, stage_max
    from . import gradebook
    with gradebook.open_gradebook(gradebook.course_directory(course)) as gb:
        got = gb.find_assignment(ASSIGNMENT).max_score
    want = sum(stage_max(load()).values())
    if abs(got - want) > 1e-9:
        return [f"the gradebook's {ASSIGNMENT} is worth {got:g} points, not the config's {want:g} (a score cell "
                "recorded twice, or a cell with points that is not a stage's score cell)"]
    return []


def release(course=BUILD_COURSE, quiet=False):
    """Build COURSE/source, run nbgrader generate_assignment, check the release; return the release folder."""
    course = os.path.abspath(course)
    source = os.path.join(course, "source", ASSIGNMENT)
    os.makedirs(source, exist_ok=True)
    notebooks.write_ipynbs(source)
    if not os.path.exists(os.path.join(course, "nbgrader_config.py")):
        shutil.copyfile(CONFIG_TEMPLATE, os.path.join(course, "nbgrader_config.py"))
    else:
        update_hooks(os.path.join(course, "nbgrader_config.py"))
    use_venv_tools()
    if os.path.exists(os.path.join(course, "gradebook.db")):
        _repair_gradebook(course)
    cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--force"]
    proc = subprocess.run(cmd, cwd=course, capture_output=True, text=True)
    if not quiet or proc.returncode:
        sys.stdout.write(proc.stdout)
        sys.stdout.write(proc.stderr)
    if proc.returncode:
        raise ReleaseError(f"nbgrader generate_assignment failed (exit {proc.returncode})")
    release_dir = os.path.join(course, "release", ASSIGNMENT)
    findings = release_findings(release_dir) + gradebook_findings(course)
    if findings:
        raise ReleaseError("the release is not fit for students:\n  " + "\n  ".join(findings))
    return release_dir


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m course.release", description=__doc__.splitlines()[0])
    p.add_argument("course", nargs="?", default=BUILD_COURSE, help="course folder (default: build/course)")
    args = p.parse_args(argv)
    stale = notebooks.stale_notebooks()
    if stale:
        print("error: stale notebooks (run `make notebooks`): " + ", ".join(stale), file=sys.stderr)
        return 1
    try:
        release_dir = release(args.course)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    names = sorted(n for n in os.listdir(release_dir) if n.endswith(".ipynb"))
    print(f"released {len(names)} notebooks to {shown_path(release_dir)}: no solution survived, "
          "every solution cell holds the stub")
    return 0


if __name__ == "__main__":
    sys.exit(main())
