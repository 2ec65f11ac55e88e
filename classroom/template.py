"""The student template repository of the GitHub Classroom assignment (``make template``).

    python -m classroom.template [--release DIR | --course DIR] [--out DIR]

``build(release_dir, dest)`` writes, from the release and nothing else of the grader:

    README.md                    classroom/template/README.md, its stage table filled in
    exercises/<module>.py        the exercises (exercises/: stubs only), less the generator's header line
    notebooks/<module>.ipynb     the release's notebooks (nbgrader generate_assignment's output)
    .github/workflows/classroom.yml   the grading workflow (classroom/template/.github/)
    .github/actionlint.yaml      declares the self-hosted runner label ``gpu`` for actionlint
    .gitignore

then checks it (``findings``): no solution marker, no line of a solution region, no
grader, tests, solutions or config, every exercise still the stub. Any finding is
an error (exit 1).

With ``--release DIR`` it uses a release that ``make release`` already wrote
(build/course/release/matmul); otherwise it first runs course.release (what
``make release`` runs) into ``--course`` (default build/course). ``--out``
defaults to build/template.
"""
import argparse
import json
import os
import shutil
import sys

from . import BUILD_TEMPLATE, ROOT, TEMPLATE_SOURCE

TABLE_MARK = "<!-- stage-table -->"
GRADING_MARK = "<!-- grading -->"
GRADING_SECTION = {"github-classroom": "grading-github.md", "classroom50": "grading-classroom50.md"}
GENERATED = "# Generated from solutions/"  # first line of every exercise (autograder/generate.py)
WORKFLOW = os.path.join(".github", "workflows", "classroom.yml")
FORBIDDEN_DIRS = {"autograder", "classroom", "course", "solutions", "tests", "demo_course"}
FORBIDDEN_FILES = {"config.toml", "autograder.toml", "gradebook.db", "nbgrader_config.py"}
STATIC = {  # template file -> source under classroom/template/ (a file named .gitignore there would apply to it)
    WORKFLOW: WORKFLOW,
    os.path.join(".github", "actionlint.yaml"): os.path.join(".github", "actionlint.yaml"),
    ".gitignore": "gitignore",
}
# Classroom 50 writes its own .github/workflows/autograde.yaml into each student's repository on
# accept (the name is reserved): its template carries no workflow.
FLAVORS = {"github-classroom": tuple(STATIC), "classroom50": (".gitignore",)}
RESERVED_CLASSROOM50 = os.path.join(".github", "workflows", "autograde.yaml")


class TemplateError(RuntimeError):
    """The template could not be built, or what was built is not fit for students."""


def stage_table(cfg):
    """The README's Markdown table: one row per stage, its files and points in both tiers."""
    from autograder.stages import STAGES
    rows = ["| stage | exercise | notebook | what it teaches | points (GPU tier) | counted in the simulator |",
            "|---|---|---|---|---|---|"]
    for s in STAGES:
        points = cfg["stages"][s.name]["points"]
        total = sum(points.values())
        rows.append(f"| {s.number}. {s.title} | `exercises/{s.filename}` | `notebooks/{s.module}.ipynb` | "
                    f"{s.concept} | {total:g} | {total - points.get('speed', 0):g} |")
    return "\n".join(rows)


def readme(cfg, flavor="github-classroom"):
    """The student README: its stage table filled in, and the flavor's section on grading."""
    with open(os.path.join(TEMPLATE_SOURCE, "README.md"), encoding="utf-8") as f:
        text = f.read()
    with open(os.path.join(TEMPLATE_SOURCE, GRADING_SECTION[flavor]), encoding="utf-8") as f:
        grading = f.read()
    for mark in (TABLE_MARK, GRADING_MARK):
        if mark not in text:
            raise TemplateError(f"classroom/template/README.md lacks the line {mark}")
    return text.replace(TABLE_MARK, stage_table(cfg)).replace(GRADING_MARK, grading.rstrip("\n"))


def _prepare(dest):
    """An empty dest: removes an earlier template there, refuses to empty any other folder."""
    if os.path.isdir(dest) and os.listdir(dest):
        if not (os.path.isfile(os.path.join(dest, "README.md")) and os.path.isdir(os.path.join(dest, "exercises"))):
            raise TemplateError(f"{dest} is not empty and holds no template: refusing to overwrite it")
        shutil.rmtree(dest)
    os.makedirs(dest, exist_ok=True)


def build(release_dir, dest=BUILD_TEMPLATE, exercises_dir=None, flavor="github-classroom"):
    """Write the student template into dest from a release folder; check it; return dest.

    ``flavor`` "github-classroom" (legacy) includes the grading workflow; "classroom50" has none."""
    from autograder import config as config_mod
    from autograder.stages import STAGES
    exercises_dir = exercises_dir or os.path.join(ROOT, "exercises")
    dest = os.path.abspath(dest)
    missing = [s.module + ".ipynb" for s in STAGES if not os.path.isfile(os.path.join(release_dir, s.module + ".ipynb"))]
    if missing:
        raise TemplateError(f"{release_dir}: the release lacks {', '.join(missing)} (run `make release`)")
    _prepare(dest)
    for target in FLAVORS[flavor]:
        source = STATIC[target]
        os.makedirs(os.path.dirname(os.path.join(dest, target)) or dest, exist_ok=True)
        shutil.copyfile(os.path.join(TEMPLATE_SOURCE, source), os.path.join(dest, target))
    with open(os.path.join(dest, "README.md"), "w", encoding="utf-8") as f:
        f.write(readme(config_mod.load(), flavor))
    for folder in ("exercises", "notebooks"):
        os.makedirs(os.path.join(dest, folder))
    for s in STAGES:
        with open(os.path.join(exercises_dir, s.filename), encoding="utf-8") as f:
            text = f.read()
        if text.startswith(GENERATED):  # the instructors' note "edit the solution, not this file"
            text = text.split("\n", 1)[1]
        with open(os.path.join(dest, "exercises", s.filename), "w", encoding="utf-8") as f:
            f.write(text)
        shutil.copyfile(os.path.join(release_dir, s.module + ".ipynb"),
                        os.path.join(dest, "notebooks", s.module + ".ipynb"))
    problems = findings(dest, flavor)
    if problems:
        raise TemplateError("the template is not fit for students:\n  " + "\n  ".join(problems))
    return dest


def _texts(path):
    """The text to search in a file: a notebook's cell sources, else the file itself (None if binary)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    if path.endswith(".ipynb"):
        try:
            cells = json.loads(text)["cells"]
        except (ValueError, KeyError, TypeError):
            return text
        return "\n".join("".join(c["source"]) if isinstance(c.get("source"), list) else c.get("source", "")
                         for c in cells)
    return text


def findings(dest, flavor="github-classroom"):
    """What makes a template unfit for students; empty when it is fine."""
    from autograder.stages import STAGES
    from autograder.scan import unimplemented
    from course.release import solution_lines
    hidden = set()
    for s in STAGES:
        with open(os.path.join(ROOT, "solutions", s.filename), encoding="utf-8") as f:
            hidden |= set(solution_lines(f.read()))
    problems = []
    if flavor == "classroom50" and os.path.exists(os.path.join(dest, RESERVED_CLASSROOM50)):
        problems.append(f"{RESERVED_CLASSROOM50} must not be in a Classroom 50 template (Classroom 50 writes it on accept)")
    for path in ([WORKFLOW] if flavor == "github-classroom" else []) + ["README.md"] + [os.path.join("exercises", s.filename) for s in STAGES] \
            + [os.path.join("notebooks", s.module + ".ipynb") for s in STAGES]:
        if not os.path.isfile(os.path.join(dest, path)):
            problems.append(f"{path} is missing")
    for dirpath, dirnames, filenames in os.walk(dest):
        rel = os.path.relpath(dirpath, dest)
        for d in dirnames:
            if d in FORBIDDEN_DIRS:
                problems.append(f"{os.path.join(rel, d)}/ must not be in the template")
        for name in filenames:
            path = os.path.join(dirpath, name)
            relpath = os.path.normpath(os.path.join(rel, name))
            if name in FORBIDDEN_FILES or (name.startswith("test_") and name.endswith(".py")):
                problems.append(f"{relpath} must not be in the template (grader files and checks stay with the instructor)")
            text = _texts(path)
            if text is None:
                continue
            if "BEGIN SOLUTION" in text or "END SOLUTION" in text:
                problems.append(f"{relpath}: a solution marker survived")
            leaked = sorted(hidden & {ln.strip() for ln in text.splitlines()})
            if leaked:
                problems.append(f"{relpath}: solution lines survived: {leaked[:3]}")
    for s in STAGES:
        path = os.path.join(dest, "exercises", s.filename)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                if not unimplemented(f.read(), [s.kernel, s.launcher]):
                    problems.append(f"exercises/{s.filename} is not the stub")
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m classroom.template", description=__doc__.splitlines()[0])
    p.add_argument("--release", help="an existing release folder (build/course/release/matmul after `make release`)")
    p.add_argument("--course", help="run course.release into this course folder first (default: build/course)")
    p.add_argument("--out", default=BUILD_TEMPLATE, help="where the template goes (default: build/template)")
    args = p.parse_args(argv)
    if args.release and args.course:
        p.error("give --release or --course, not both")
    try:
        if args.release:
            release_dir = args.release
        else:
            from course import BUILD_COURSE
            from course.release import ReleaseError, release
            try:
                release_dir = release(args.course or BUILD_COURSE, quiet=True)
            except ReleaseError as exc:
                raise TemplateError(str(exc)) from exc
        dest = build(release_dir, args.out)
    except TemplateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote the student template to {os.path.relpath(dest)}: README, exercises/, notebooks/, "
          f"{WORKFLOW}; no solution, no grader, no hidden check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
