"""Grade a student's repository the way the GitHub Classroom workflow does (classroom/grade.sh runs this).

    python -m classroom.grade STUDENT_DIR --out DIR [--device gpu|sim|auto] [--stages "naive tiled"]
                              [--results PATH] [--student NAME] [--seed N]

1. For each stage, picks the file to grade (``pick_files``, autograder/repository.py): ``exercises/<module>.py``
   when its TODOs are filled in, else ``notebooks/<module>.ipynb`` when that one's are,
   else the unchanged stub (0 points, "not implemented yet"). A top-level
   ``<module>.py`` / ``.ipynb`` (a Gradescope upload) or any other file of the
   student's that defines that stage alone counts too.
2. Copies the picked files into a scratch folder and runs the grading engine's own
   command line in a child process: ``python -m autograder grade FOLDER --device D
   --results OUT/results.json``.
3. Writes into OUT: results.json (Gradescope format), classroom.json (GitHub
   Classroom's runner result), summary.md (the job summary) and feedback.html.
4. Under GitHub Actions it also appends ``result=<base64 of classroom.json>`` to
   ``$GITHUB_OUTPUT`` (the reporter step reads it) and summary.md to
   ``$GITHUB_STEP_SUMMARY``.

Exit status 0 whenever results.json was written, whatever the score: a grading
engine that did not finish is written as an error result worth 0 points. 2 when
the arguments are wrong; 3 when the GPU tier was asked for on a machine where no
GPU answers (results.json then says "not gradable" and asks for a re-grade).
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

from autograder.repository import pick_files

from . import ROOT
from . import report

ASSIGNMENT = "matmul"


def _hash(paths):
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def error_results(message, stages, device, cfg):
    """A results.json for a run that did not finish: 0 of the stages' points in this tier."""
    total = 0.0
    for stage in stages:
        points = cfg["stages"][stage.name]["points"]
        total += sum(v for k, v in points.items() if device == "gpu" or k != "speed")
    return {"score": 0, "max_score": total, "output": f"Grading did not finish: {message}", "tests": [],
            "execution_time": 0, "visibility": "visible", "stdout_visibility": "hidden",
            "extra_data": {"device": device, "provisional": device != "gpu", "stages": [s.name for s in stages],
                           "error": message}}


def run_engine(folder, device, results_path, seed=None, partial=False):
    """``python -m autograder grade FOLDER ...`` in a child process; returns (exit status, stderr)."""
    cmd = [sys.executable, "-m", "autograder", "grade", folder, "--device", device, "--results", results_path]
    cmd += ["--partial"] if partial else []
    if seed is not None:
        cmd += ["--seed", str(seed)]
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    sys.stdout.flush()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(proc.stderr)
    return proc.returncode, proc.stderr


def _append(path, text):
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def out_folder(student_dir, out_dir):
    """OUT_DIR, made; refused (ValueError) where the student's files would steer the grader's writes: a part of it
    inside the checkout that is a link or not a folder (a committed `grading -> ../elsewhere` sends results.json,
    summary.md and feedback.html wherever it points)."""
    student_dir, out_dir = os.path.abspath(student_dir), os.path.abspath(out_dir)
    if os.path.commonpath([student_dir, out_dir]) == student_dir and out_dir != student_dir:
        part = student_dir
        for name in os.path.relpath(out_dir, student_dir).split(os.sep):
            part = os.path.join(part, name)
            if os.path.islink(part) or (os.path.lexists(part) and not os.path.isdir(part)):
                rel = os.path.relpath(part, student_dir)
                raise ValueError(f"{rel} in the repository is {'a symbolic link' if os.path.islink(part) else 'a file'}"
                                 f": the grader writes its results into {os.path.relpath(out_dir, student_dir)}/ and "
                                 f"follows no link there; delete {rel} from the repository")
    os.makedirs(out_dir, exist_ok=True)
    return out_dir


def grade(student_dir, out_dir, device="sim", stages=None, results_path=None, student=None, seed=None):
    """Grade one student's repository; write every output; return the results dict. Every output replaces what
    was there (a committed file or link of that name is replaced, never written through)."""
    from autograder import config as config_mod
    from autograder import engine
    from autograder.engine.report import read_results, write_json_atomic, write_text_atomic
    from autograder.stages import STAGES

    student_dir, out_dir = os.path.abspath(student_dir), out_folder(student_dir, out_dir)
    results_path = os.path.abspath(results_path or os.path.join(out_dir, "results.json"))
    stages = stages or STAGES
    if device == "auto":
        device = "gpu" if engine.gpu_available() else "sim"
    cfg = config_mod.load()
    no_gpu = device == "gpu" and not engine.gpu_available()
    student = student or os.environ.get("GITHUB_REPOSITORY", "").rsplit("/", 1)[-1] or os.path.basename(student_dir)

    picked = pick_files(student_dir, stages)
    files = {stage.name: rel for stage, _, rel, _ in picked if rel}
    graded = {stage.name: " ".join(x for x in (rel, f"({note})" if note else "") if x)
              for stage, _, rel, note in picked}
    for stage in stages:
        print(f"stage {stage.name}: grading {graded[stage.name]}")
    for name in ("classroom.json", "summary.md", "feedback.html", results_path):
        if os.path.lexists(os.path.join(out_dir, name)):
            os.remove(os.path.join(out_dir, name))
    with tempfile.TemporaryDirectory(prefix="classroom-grade-") as scratch:
        folder = os.path.join(scratch, "submission")
        os.makedirs(folder)
        for stage, path, _, _ in picked:
            shutil.copyfile(path, os.path.join(folder, stage.module + os.path.splitext(path)[1]))
        status, stderr = (3, "") if no_gpu else run_engine(folder, device, results_path, seed,
                                                                   partial=len(stages) < len(STAGES))
    results = read_results(results_path) if status == 0 else None
    if no_gpu:  # the grader's trouble: no grade at all, flagged for a re-grade, never a partial GPU-tier score
        from autograder.cli import NO_GPU
        results = error_results(NO_GPU, stages, device, cfg)
        results["extra_data"]["regrade"] = True
        write_json_atomic(results_path, results)
    if results is None:
        why = (stderr.strip().splitlines() or [f"the grading engine exited with status {status}"])[-1]
        results = error_results(why, stages, device, cfg)
        write_json_atomic(results_path, results)

    payload = report.to_classroom(results, files)
    write_json_atomic(os.path.join(out_dir, "classroom.json"), payload)
    summary = report.job_summary(results, graded)
    write_text_atomic(os.path.join(out_dir, "summary.md"), summary)
    try:
        page = report.feedback_page(results, student, ASSIGNMENT, cfg, _hash([p for _, p, _, _ in picked]))
    except Exception as exc:  # the page is a convenience: never lose the grade over it
        print(f"warning: the course's feedback page failed ({exc!r}); writing a plain one", file=sys.stderr)
        page = report.plain_page(results, student, ASSIGNMENT, f"plain page: the course's page failed: {exc!r}")
    write_text_atomic(os.path.join(out_dir, "feedback.html"), page)
    _append(os.environ.get("GITHUB_OUTPUT"), f"result={report.encode(payload)}\n"
                                             f"points={results['score']:g}/{results['max_score']:g}\n")
    _append(os.environ.get("GITHUB_STEP_SUMMARY"), summary)
    print(f"{student}: {results['score']:g} / {results['max_score']:g} points "
          f"({'GPU tier' if device == 'gpu' else 'simulator tier, provisional'}); wrote "
          f"{os.path.relpath(results_path)}, and classroom.json, summary.md, feedback.html in {os.path.relpath(out_dir)}")
    return results


def parse_stages(text):
    from autograder.stages import find
    names = text.replace(",", " ").split()
    return [find(n) for n in names] if names else None


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m classroom.grade", description=__doc__.splitlines()[0])
    p.add_argument("student_dir", help="the student's repository: the template plus their work")
    p.add_argument("--out", required=True, help="folder for results.json, classroom.json, summary.md, feedback.html")
    p.add_argument("--device", choices=["auto", "gpu", "sim"], default="sim",
                   help="gpu: the GPU tier; sim: the simulator tier (provisional); default: %(default)s")
    p.add_argument("--stages", default="", help="grade only these stages (names, space or comma separated)")
    p.add_argument("--results", help="where results.json goes (default: OUT/results.json)")
    p.add_argument("--student", help="name on the feedback page (default: the repository's name)")
    p.add_argument("--seed", type=int, help="input seed (default: a secret random one)")
    args = p.parse_args(argv)
    if not os.path.isdir(args.student_dir):
        print(f"error: {args.student_dir}: no such folder", file=sys.stderr)
        return 2
    try:
        stages = parse_stages(args.stages)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        out_folder(args.student_dir, args.out)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results = grade(args.student_dir, args.out, args.device, stages, args.results, args.student, args.seed)
    if results.get("extra_data", {}).get("regrade") and results.get("extra_data", {}).get("error"):
        print(f"::error::{results['extra_data']['error']}", file=sys.stderr)
        return 3  # the job fails visibly: no grade was made (results.json says so)
    return 0


if __name__ == "__main__":
    sys.exit(main())
