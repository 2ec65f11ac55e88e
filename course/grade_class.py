"""Grade every submission of a course (``make grade``) with the grading engine.

For each ``COURSE/submitted/<student>/matmul/`` folder (nbgrader's layout) it
runs autograder.engine.grade (each check in its own process: nothing run in a
notebook kernel is trusted), then, per student and in this order:

1. writes the per-stage scores into nbgrader's gradebook and commits
   (course.gradebook), so ``nbgrader export`` and formgrader see them;
2. copies the submitted notebooks to ``COURSE/autograded/<student>/matmul/``
   (formgrader shows a submission from there; it lists the assignment only when
   ``COURSE/source/matmul/`` exists, so a course without one gets the stage notebooks);
3. writes ``COURSE/feedback/<student>/matmul/index.html`` (what passed, what
   failed and why, a figure);
4. writes ``results.json`` beside it (Gradescope format, atomically), which
   records a key made of the submission's content hash, the grading config and
   the device tier. A re-run skips every student whose key is unchanged, unless
   ``--force``; an interrupted run keeps every student finished before it.

After each student it rewrites ``COURSE/grades.csv``; at the end it prints the
class summary table and a histogram (also ``COURSE/grades-histogram.png``).

COURSE defaults to demo_course/. A file ``COURSE/autograder.toml`` may override
keys of the [limits] table of autograder/config.toml for that course.
"""
import argparse
import copy
import csv
import datetime
import hashlib
import io
import json
import os
import shutil
import sys
import tomllib

from . import ASSIGNMENT, DEMO_COURSE
from . import feedback
from . import gradebook as gb_mod

OVERRIDABLE = ("limits",)


class CourseError(ValueError):
    """The course folder or its settings cannot be used; the message says why."""


def load_config(course):
    """autograder/config.toml with COURSE/autograder.toml's overrides applied (only known [limits] keys)."""
    from autograder import config as config_mod
    cfg = config_mod.load()
    path = os.path.join(course, "autograder.toml")
    if not os.path.isfile(path):
        return cfg
    try:
        with open(path, "rb") as f:
            override = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CourseError(f"cannot read {path}: {exc}") from exc
    cfg = copy.deepcopy(cfg)
    for section, values in override.items():
        if section not in OVERRIDABLE or not isinstance(values, dict):
            raise CourseError(f"{path}: [{section}] cannot be overridden per course; only {list(OVERRIDABLE)}")
        for key, value in values.items():
            if key not in cfg[section]:
                raise CourseError(f"{path}: [{section}] has no key {key!r} in autograder/config.toml")
            if type(value) is not type(cfg[section][key]):
                raise CourseError(f"{path}: [{section}] {key} must be a {type(cfg[section][key]).__name__}")
            cfg[section][key] = value
    cfg["course_overrides"] = path
    return cfg


def submissions(coursedir, assignment):
    """[(student, folder)] of every submission of `assignment`, sorted by student."""
    root = os.path.join(coursedir.root, coursedir.submitted_directory)
    found = []
    if os.path.isdir(root):
        for student in sorted(os.listdir(root)):
            folder = os.path.join(root, student, assignment)
            if not student.startswith(".") and os.path.isdir(folder):
                found.append((student, folder))
    return found


def graded_files(folder):
    """The files the engine reads from a submission folder (as autograder.submission.collect lists them)."""
    return sorted(n for n in os.listdir(folder)
                  if n.endswith((".py", ".ipynb")) and not n.startswith(".") and os.path.isfile(os.path.join(folder, n)))


def submission_hash(folder):
    h = hashlib.sha256()
    for name in graded_files(folder):
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def grading_key(sub_hash, cfg, device):
    """What a stored result depends on: the submission, the grading config and the device tier."""
    settings = {k: v for k, v in cfg.items() if k not in ("path", "course_overrides")}
    blob = json.dumps({"submission": sub_hash, "config": settings, "device": device}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def read_results(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        data["extra_data"]["course"]["grading_key"]
        return data
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_timestamp(folder):
    try:
        with open(os.path.join(folder, "timestamp.txt"), encoding="utf-8") as f:
            return f.read().strip() or None
    except OSError:
        return None


def write_text_atomic(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class ClassGrader:
    def __init__(self, course, assignment=ASSIGNMENT, device="auto", seed=None, force=False, out=sys.stdout):
        from autograder import engine
        self.course = os.path.abspath(course)
        if not os.path.isdir(self.course):
            raise CourseError(f"{course}: no such course folder")
        self.coursedir = gb_mod.course_directory(self.course)
        self.assignment, self.seed, self.force, self.out = assignment, seed, force, out
        self.cfg = load_config(self.course)
        self.device = ("gpu" if engine.gpu_available() else "sim") if device == "auto" else device
        self.stage_max = {name: float(sum(s["points"].values())) for name, s in self.cfg["stages"].items()}

    def results_path(self, student):
        return os.path.join(self.course, self.coursedir.feedback_directory, student, self.assignment, "results.json")

    def say(self, text):
        print(text, file=self.out, flush=True)

    # -- one student ------------------------------------------------------
    def grade_one(self, student, folder, key, sub_hash, progress=None):
        """The results dict of one submission (engine report + the course record)."""
        from autograder import engine
        from autograder.engine import report as results
        from autograder.submission import SubmissionError
        problems = []
        try:
            report = engine.grade(folder, device=self.device, seed=self.seed, cfg=self.cfg, progress=progress)
        except SubmissionError as exc:
            report = engine.Report(folder, self.device, self.seed or 0)
            problems.append(str(exc))
        out = results.to_gradescope(report)
        stage_scores = {}
        for c in report.checks:
            stage_scores[c.stage] = stage_scores.get(c.stage, 0.0) + c.score
        out["extra_data"]["course"] = {
            "student": student, "assignment": self.assignment, "submission_sha256": sub_hash,
            "grading_key": key, "stage_scores": stage_scores, "gradebook_max": self.stage_max,
            "gradebook_total": sum(self.stage_max.values()), "problems": problems + list(report.problems),
            "timestamp": read_timestamp(folder), "seed": report.seed,
            "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        return out

    def store(self, gb, student, folder, data):
        """Gradebook (committed), formgrader copy, feedback page, then results.json: the 'done' mark."""
        course = data["extra_data"]["course"]
        gb_mod.record(gb, student, course["stage_scores"], course["timestamp"], self.assignment)
        autograded = os.path.join(self.course, self.coursedir.autograded_directory, student, self.assignment)
        os.makedirs(autograded, exist_ok=True)
        for name in os.listdir(folder):
            if name.endswith(".ipynb") or name == "timestamp.txt":
                shutil.copy2(os.path.join(folder, name), os.path.join(autograded, name))
        path = self.results_path(student)
        write_text_atomic(os.path.join(os.path.dirname(path), "index.html"),
                          feedback.page(student, self.assignment, data))
        from autograder.engine.report import write_json_atomic
        write_json_atomic(path, data)

    # -- the class --------------------------------------------------------
    def rows(self):
        rows = []
        for student, _ in submissions(self.coursedir, self.assignment):
            data = read_results(self.results_path(student))
            if data is None:
                continue
            course = data["extra_data"]["course"]
            note = "; ".join(course["problems"])[:60] or ("provisional" if data["extra_data"]["provisional"] else "")
            rows.append({"student": student, "stages": course["stage_scores"], "score": data["score"],
                         "max_score": data["max_score"], "gradebook_total": course["gradebook_total"],
                         "device": data["extra_data"]["device"], "provisional": data["extra_data"]["provisional"],
                         "seconds": data["execution_time"], "graded_at": course["graded_at"], "note": note})
        return rows

    def write_csv(self, rows):
        from autograder.stages import STAGES
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        names = [s.name for s in STAGES]
        w.writerow(["student", "assignment", "score", "max_score", "gradebook_max_score", "provisional", "device"]
                   + names + ["seconds", "graded_at", "note"])
        for r in rows:
            w.writerow([r["student"], self.assignment, f"{r['score']:g}", f"{r['max_score']:g}",
                        f"{r['gradebook_total']:g}", r["provisional"], r["device"]]
                       + [f"{r['stages'].get(n, 0):g}" for n in names] + [r["seconds"], r["graded_at"], r["note"]])
        write_text_atomic(os.path.join(self.course, "grades.csv"), buf.getvalue())

    def run(self, students=None):
        from tqdm import tqdm
        todo, found = [], submissions(self.coursedir, self.assignment)
        if students:
            unknown = set(students) - {s for s, _ in found}
            if unknown:
                raise CourseError(f"no submission of {self.assignment} by {', '.join(sorted(unknown))}")
            found = [(s, f) for s, f in found if s in students]
        for student, folder in found:
            sub_hash = submission_hash(folder)
            key = grading_key(sub_hash, self.cfg, self.device)
            old = read_results(self.results_path(student))
            if self.force or old is None or old["extra_data"]["course"]["grading_key"] != key:
                todo.append((student, folder, key, sub_hash))
        self.say(f"{self.course}: {len(found)} submissions of {self.assignment}; grading {len(todo)} on the "
                 f"{'GPU' if self.device == 'gpu' else 'CUDA simulator'}"
                 + (f", {len(found) - len(todo)} unchanged since their last grading" if len(found) > len(todo) else ""))
        source = os.path.join(self.course, self.coursedir.source_directory, self.assignment)
        if not os.path.isdir(source):  # formgrader lists an assignment only when its source folder exists
            from .notebooks import write_ipynbs
            write_ipynbs(source)
            self.say(f"wrote the assignment's source notebooks to {os.path.relpath(source)} (formgrader needs them)")
        done = 0
        with gb_mod.open_gradebook(self.coursedir) as gb:
            gb_mod.sync_assignment(gb, self.cfg, self.assignment)
            bar = tqdm(total=len(todo), unit="student", file=sys.stderr, dynamic_ncols=True, leave=True)
            try:
                for student, folder, key, sub_hash in todo:
                    bar.set_postfix_str(student)

                    def progress(stage, checks, student=student):
                        bar.set_postfix_str(f"{student}: stage {stage.name} graded")
                    data = self.grade_one(student, folder, key, sub_hash, progress)
                    self.store(gb, student, folder, data)
                    self.write_csv(self.rows())
                    done += 1
                    bar.update(1)
            except KeyboardInterrupt:
                bar.close()
                self.say(f"interrupted: {done} of {len(todo)} graded in this run are saved; run again to grade "
                         "the rest")
                self.finish()
                raise
            bar.close()
        self.finish()
        return done

    def finish(self):
        rows = self.rows()
        self.write_csv(rows)
        if not rows:
            self.say("no graded submissions yet")
            return
        max_score = max(r["max_score"] for r in rows)
        self.say("\n" + feedback.summary_table(rows))
        self.say(f"\nHistogram of totals (of {max_score:g} points graded on "
                 f"{'the GPU' if rows[0]['device'] == 'gpu' else 'the simulator'}; "
                 f"{rows[0]['gradebook_total']:g} in the GPU tier):")
        self.say(feedback.histogram_text([r["score"] for r in rows], max_score))
        png = os.path.join(self.course, "grades-histogram.png")
        feedback.histogram_png(png, [r["score"] for r in rows], max_score)
        if any(r["provisional"] for r in rows):
            self.say("Provisional: speed and GPU-tool checks need a GPU and counted neither way.")
        rel = os.path.relpath(self.course)
        self.say(f"Wrote {rel}/grades.csv, {rel}/grades-histogram.png, {rel}/{self.coursedir.feedback_directory}/"
                 f"<student>/{self.assignment}/index.html and results.json; scores are in the gradebook "
                 f"(cd {rel} && nbgrader export: gradebook-export.csv).")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m course.grade_class", description=__doc__.splitlines()[0])
    p.add_argument("course", nargs="?", default=DEMO_COURSE, help="course folder (default: demo_course)")
    p.add_argument("--assignment", default=ASSIGNMENT, help="assignment name (default: %(default)s)")
    p.add_argument("--force", action="store_true", help="grade every submission again, changed or not")
    p.add_argument("--device", choices=["auto", "gpu", "sim"], default="auto",
                   help="gpu: real timing and GPU tools; sim: Numba's simulator; auto: gpu when one is present")
    p.add_argument("--seed", type=int, help="input seed for every submission (default: a secret random one each)")
    p.add_argument("--student", action="append", help="grade only this student (repeatable)")
    args = p.parse_args(argv)
    from autograder.config import ConfigError
    try:
        grader = ClassGrader(args.course, args.assignment, args.device, args.seed, args.force)
        grader.run(args.student)
    except (CourseError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
