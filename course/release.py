"""Release the assignment to students (``make release``): nbgrader ``generate_assignment``.

1. Writes every stage's notebook as ``.ipynb`` into ``COURSE/source/matmul/``, from the
   stored notebooks in ``notebooks/`` (jupytext percent files, see course.notebooks).
2. Copies course/nbgrader_config.py into COURSE when it has no nbgrader_config.py.
3. Runs ``nbgrader generate_assignment matmul --force`` in COURSE: nbgrader replaces each
   solution region with the course's stub, locks the read-only cells, records the
   assignment in COURSE/gradebook.db and writes ``COURSE/release/matmul/``.
4. Checks the release: no solution marker and no line of a solution region may survive,
   and every solution cell must hold the stub. Any finding is an error (exit 1).

COURSE is build/course/ unless given.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

from . import ASSIGNMENT, BUILD_COURSE, ROOT, use_venv_tools
from . import notebooks

CONFIG_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nbgrader_config.py")
STUB = 'raise NotImplementedError("not implemented yet")'


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


def release(course=BUILD_COURSE, quiet=False):
    """Build COURSE/source, run nbgrader generate_assignment, check the release; return the release folder."""
    course = os.path.abspath(course)
    source = os.path.join(course, "source", ASSIGNMENT)
    os.makedirs(source, exist_ok=True)
    notebooks.write_ipynbs(source)
    if not os.path.exists(os.path.join(course, "nbgrader_config.py")):
        shutil.copyfile(CONFIG_TEMPLATE, os.path.join(course, "nbgrader_config.py"))
    use_venv_tools()
    cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--force"]
    proc = subprocess.run(cmd, cwd=course, capture_output=True, text=True)
    if not quiet or proc.returncode:
        sys.stdout.write(proc.stdout)
        sys.stdout.write(proc.stderr)
    if proc.returncode:
        raise ReleaseError(f"nbgrader generate_assignment failed (exit {proc.returncode})")
    release_dir = os.path.join(course, "release", ASSIGNMENT)
    findings = release_findings(release_dir)
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
    print(f"released {len(names)} notebooks to {os.path.relpath(release_dir, os.getcwd())}: no solution survived, "
          "every solution cell holds the stub")
    return 0


if __name__ == "__main__":
    sys.exit(main())
