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
   records a key made of the submission's content hash, the grading config,
   the device tier and the grader's version (a hash of autograder/'s code). A
   re-run skips every student whose key is unchanged, unless ``--force``; an
   interrupted run keeps every student finished before it.

After each student it rewrites ``COURSE/grades.csv`` and ``COURSE/lms_upload.csv``; at the end it prints the
class summary table, the median time per submission (the engine's breakdown:
children, compile, start-up, checks) and a histogram (also ``COURSE/grades-histogram.png``).

Submissions are graded in parallel by worker processes: in the GPU tier two per
GPU (``[class] gpu_workers``), each pinned to its GPU with ``CUDA_VISIBLE_DEVICES``;
a GPU's workers share it for their runners and GPU tools and take turns at it for
timing (autograder/gpu/slot.py: nothing else is on the GPU while a kernel is
timed), and each reads, checks and builds its next student meanwhile. In the simulator tier they are
spread over the cores. A worker writes the student's result to
``COURSE/.grading/<assignment>/graded/<student>.json``; only this (the parent)
process writes the gradebook, feedback and CSV, collecting those files as they
come in. A Slurm job array (course.slurm, ``--slurm``) grades into the same
folder and the same collection step stores its results.

What is stored per student and read back (gradebook, autograded/, feedback, results.json, the class table's rows)
is course/records.py's ClassRecords, which ClassGrader extends; the course's settings are course/settings.py's.
The worker slots and the pool that feeds them are course/schedule/'s (slots.py, pool.py); the progress bar is
course/progress.py's and the summary printed at the end course/summary.py's.

COURSE defaults to demo_course/. A file ``COURSE/autograder.toml`` may override
keys of the [limits] table of autograder/config.toml for that course, and holds
the [class] (gpus, gpu_workers, workers) and [slurm] settings of the class run (see
course/settings.py and course.slurm.SCHEMA).
"""
import argparse
import copy
import os
import signal
import socket
import sys
import time

from . import ASSIGNMENT, DEMO_COURSE, printable
from . import feedback
from . import gradebook as gb_mod
from . import slurm
from . import summary
from .lifetime import stacks_on_usr1 as _stacks_on_usr1
from .progress import progress_bar
from .records import (GRADER_FAILED, RETRY, ClassRecords, add_missing_stages, grader_version,  # noqa: F401
                      layout_notes, linked_folder_note, misplaced_files, misplaced_note, no_folder_note,
                      read_results, read_timestamp, staging_dir, submission_hash, submissions)
from .schedule import pool
from .schedule.slots import parse_gpus, plan_slots
from .settings import CLASS_SCHEMA, GRADING_DIR, CourseError, course_settings, load_config  # noqa: F401 (re-exported)


class ClassGrader(ClassRecords):
    """The class run: which submissions to grade, on which workers (local GPUs or cores, or a Slurm array), and the
    summary. What is stored per student, and read back, is ClassRecords' (course/records.py)."""

    def __init__(self, course, assignment=ASSIGNMENT, device="auto", seed=None, force=False, out=sys.stdout,
                 workers=None, gpus=None, gpu_workers=None, coursedir=None):
        """workers: submissions graded at once in the simulator tier; gpus: a count or "0,1" in the GPU tier;
        gpu_workers: grading processes per GPU (None: the course's [class] settings, then every GPU / one worker per
        two cores / two per GPU); coursedir: the course's folders as the run's parent read them
        (gradebook.plain_course_directory; None: read here, with nbgrader)."""
        from autograder import engine
        self.course = os.path.abspath(course)
        if not os.path.isdir(self.course):
            raise CourseError(f"{course}: no such course folder")
        self.coursedir = coursedir if coursedir is not None else gb_mod.course_directory(self.course)
        submitted = os.path.join(self.course, self.coursedir.submitted_directory)
        if not os.path.isdir(submitted) and not os.path.isfile(os.path.join(self.course, "nbgrader_config.py")):
            raise CourseError(f"{course}: not a course folder: it has neither {self.coursedir.submitted_directory}/ "
                              f"(submissions are looked for in {submitted}/<student>/{assignment}/) nor an "
                              "nbgrader_config.py; nothing was written")
        self.assignment, self.seed, self.force, self.out = assignment, seed, force, out
        self.cfg = load_config(self.course)
        self.grade_cfg = self.cfg  # what the engine gets; a worker's copy may set limits.jobs (not in the key)
        self.settings = course_settings(self.course, "class", CLASS_SCHEMA)
        if workers is not None and (not isinstance(workers, int) or workers < 0):
            raise CourseError(f"workers must be a whole number, 0 or more (got {workers!r})")
        self.workers = self.settings["workers"] if workers is None else workers
        self.gpus = str(self.settings["gpus"]) if gpus is None else str(gpus)
        if gpu_workers is not None and (not isinstance(gpu_workers, int) or gpu_workers < 1):
            raise CourseError(f"gpu_workers must be a whole number, 1 or more (got {gpu_workers!r})")
        self.gpu_workers = self.settings["gpu_workers"] if gpu_workers is None else gpu_workers
        parse_gpus(self.gpus)  # a clear error now rather than after the first student
        self.device = ("gpu" if engine.gpu_available() else "sim") if device == "auto" else device
        self.started, self.phases = None, {}  # when run() began; its seconds by phase, for the summary

    def set_jobs(self, jobs):
        """Grading children the engine runs at once for this process (not part of the grading key)."""
        if jobs:
            self.grade_cfg = copy.deepcopy(self.cfg)
            self.grade_cfg["limits"]["jobs"] = int(jobs)

    def say(self, text):
        print(printable(text), file=self.out, flush=True)  # a student's names and notes: no terminal control

    # -- one student ------------------------------------------------------
    def grade_one(self, student, folder, key, sub_hash, progress=None):
        """The results dict of one submission (engine report + the course record)."""
        from autograder import engine
        from autograder.engine import report as results
        from autograder.submission import SubmissionError
        problems = []
        started, began_at = time.perf_counter(), time.time()
        try:
            linked = linked_folder_note(folder)
            if linked:
                raise SubmissionError(linked)
            if not os.path.isdir(folder):  # notebooks elsewhere in submitted/<student>/: a row of 0 that says so
                raise SubmissionError(no_folder_note(student, self.assignment, misplaced_files(
                    os.path.dirname(folder), self.assignment)))
            report = engine.grade(folder, device=self.device, seed=self.seed, cfg=self.grade_cfg, progress=progress)
        except SubmissionError as exc:
            report = engine.Report(folder, self.device, self.seed or 0)
            problems.append(str(exc))
        except Exception as exc:  # the grader's own failure: this student gets a row that says so, the class goes on
            report = engine.Report(folder, self.device, self.seed or 0)
            problems.append(f"{GRADER_FAILED} ({type(exc).__name__}: {str(exc)[:300]}); it is graded again on the "
                            "next run: tell the instructor")
            key = RETRY + key  # never equal to a submission's key: the next run grades it again
        if not key.startswith(RETRY):  # a stage the submission lacks counts 0 (not when the grader itself failed)
            add_missing_stages(report, self.cfg, student, self.assignment, note=not problems)
        out = results.to_gradescope(report)
        timestamp, stamp_note = read_timestamp(folder)
        misplaced = os.path.isdir(folder) and misplaced_files(os.path.dirname(folder), self.assignment)
        out["extra_data"]["notes"] += [n for n in (stamp_note, misplaced and misplaced_note(
            student, self.assignment, misplaced)) if n]
        stage_scores = {}
        for c in report.checks:
            stage_scores[c.stage] = stage_scores.get(c.stage, 0.0) + c.score
        out["extra_data"]["course"] = feedback.course_record(
            student, self.assignment, self.cfg, stage_scores, sub_hash, problems + list(report.problems),
            grading_key=key, timestamp=timestamp, seed=report.seed,
            worker={"host": socket.gethostname(), "pid": os.getpid(), "wall_s": round(time.perf_counter() - started, 2),
                    "began_at": round(began_at, 3),
                    "gpu": os.environ.get("CUDA_VISIBLE_DEVICES") if self.device == "gpu" else None,
                    "slurm_job": os.environ.get("SLURM_JOB_ID")})
        return out

    def grade_and_stage(self, student, folder, force=False, progress=None):
        """Grade one student unless a result for the current submission exists; stage it for collection.

        Returns ("graded" | "done" | "staged", staged file or None). Used by local workers and Slurm tasks."""
        from autograder.engine.report import write_json_atomic
        key, sub_hash = self.key_of(folder)
        if not force:
            if self.stored(student, key):
                return "done", None
            staged = read_results(self.staged_path(student))
            if staged is not None and staged["extra_data"]["course"]["grading_key"] == key:
                return "staged", self.staged_path(student)
        data = self.grade_one(student, folder, key, sub_hash, progress)
        write_json_atomic(self.staged_path(student), data)
        return "graded", self.staged_path(student)

    # -- the class --------------------------------------------------------
    def select(self, students=None):
        """[(student, folder)] of the class, or of the named students (unknown names are an error)."""
        found = submissions(self.coursedir, self.assignment)
        if students:
            unknown = set(students) - {s for s, _ in found}
            if unknown:
                raise CourseError(f"no submission of {self.assignment} by {', '.join(sorted(unknown))}" + "".join(
                    f"; {s}: {note}" for s, note in layout_notes(self.coursedir, self.assignment, unknown)))
            found = [(s, f) for s, f in found if s in students]
        return found

    def todo(self, found):
        """The (student, folder) pairs whose stored result is missing, for another submission or config, or whose
        formgrader copy (autograded/<student>) is gone."""
        todo = []
        for student, folder in found:
            if self.force or not self.stored(student, self.key_of(folder)[0]):
                todo.append((student, folder))
        return todo

    def plan(self, n_todo):
        """[(label, env)] of the worker slots, and the engine's jobs per worker (None: unchanged):
        course/schedule/slots.py's plan for this run's tier, --gpus, --gpu-workers and --workers."""
        return plan_slots(self.device, self.gpus, self.gpu_workers, self.workers, n_todo)

    def run(self, students=None):
        """Grade what is not graded yet; returns the number of students graded (or collected) in this run."""
        self.started = started = time.perf_counter()
        found = self.select(students)
        # Workers start before the gradebook opens: they import the grader and warm up meanwhile. (Results staged
        # by an earlier run, collected below, can only shorten the list they were planned for.)
        planned = self.todo(found)
        slots, jobs = self.plan(len(planned)) if planned else ([], None)
        pools = self.start_workers(slots, jobs) if slots and (len(slots) > 1 or self.device == "gpu") else []
        done, failed, clean = 0, [], False
        try:
            with self.collecting() as gb:
                collected = self.collect_staged(gb, found)
                todo = self.todo(planned)
                self.say(f"{self.course}: {len(found)} submissions of {self.assignment}; grading {len(todo)} on the "
                         f"{'GPU' if self.device == 'gpu' else 'CUDA simulator'}"
                         + (f", {len(found) - len(todo)} unchanged since their last grading"
                            if len(found) > len(todo) else "")
                         + (f"; {collected} graded earlier collected" if collected else "")
                         + (f"; {len(slots)} workers ({', '.join(label for label, _ in slots)})"
                            if todo and pools else ""))
                self.say_layout(students)
                self.phases = {"set-up": time.perf_counter() - started}
                from autograder import sandbox
                sandbox.backend(self.cfg["limits"]["sandbox"])  # its warning, if any, on a line of its own
                bar = progress_bar(len(todo))
                try:
                    if pools and todo:
                        done, failed = pool.run_pool(self, gb, todo, slots, jobs, pools, bar)
                    else:
                        for student, folder in todo:
                            bar.set_postfix_str(student)

                            def progress(stage, checks, student=student):
                                bar.set_postfix_str(f"{student}: stage {stage.name} graded")
                            try:
                                _, staged = self.grade_and_stage(student, folder, force=self.force,
                                                                 progress=progress)
                                if staged:
                                    self.collect_one(gb, student, folder, staged)
                                    self.write_csv(self.rows())
                                done += 1
                            except Exception as exc:  # one student's failure does not stop the class
                                failed.append((student, f"{type(exc).__name__}: {exc}"))
                            bar.update(1)
                except KeyboardInterrupt:
                    bar.close()
                    self.say(f"interrupted: {done} of {len(todo)} graded in this run are saved; run again to grade "
                             "the rest")
                    self.graded_now = done
                    self.finish()
                    raise
                bar.close()
                self.phases["grading"] = time.perf_counter() - started - self.phases["set-up"]
            clean = True
        finally:
            for p in pools:  # an interrupted run does not wait for a worker that is still grading
                if not clean:  # it stops it: the worker cleans up its grade in progress (course/lifetime.py)
                    for proc in list((getattr(p, "_processes", None) or {}).values()):
                        try:
                            proc.terminate()
                        except (OSError, ValueError):
                            pass
                p.shutdown(wait=clean, cancel_futures=True)
        if failed:
            self.say(f"{len(failed)} submissions could not be graded in this run (run again to retry):")
            for student, why in failed:
                self.say(f"  {student}: {why}")
        self.graded_now = done
        self.finish()
        return done + collected

    def say_layout(self, students=None):
        """Name the notebooks this run does not grade for where they are (course/records.py's layout_notes)."""
        notes = layout_notes(self.coursedir, self.assignment, students)
        if notes:
            self.say(f"{len(notes)} students have files outside submitted/<student>/{self.assignment}/:")
            for student, note in notes:
                self.say(f"  {student}: {note}")

    def start_workers(self, slots, jobs=None):
        """One spawned worker process per slot, started now (course/schedule/pool.py); each makes its grader at once,
        and a GPU worker warms up."""
        return pool.start_workers(slots, self.cfg if self.device == "gpu" else None,
                                  (type(self), self.course, self.assignment, self.device, self.seed, jobs,
                                   gb_mod.plain_course_directory(self.coursedir)))

    def finish(self):
        """Rewrite grades.csv and lms_upload.csv from the stored results, then print the summary (course/summary.py)."""
        rows = self.rows()
        self.write_csv(rows)
        summary.say_summary(self, rows)

    def collect(self, students=None):
        """Store every staged result (the collecting step of a Slurm run); returns how many."""
        found = self.select(students)
        with self.collecting() as gb:
            collected = self.collect_staged(gb, found)
        missing = [s for s, _ in self.todo(found)]
        self.say_layout(students)
        self.say(f"{self.course}: collected {collected} graded submissions; "
                 + (f"{len(missing)} not graded yet: {', '.join(missing)}" if missing else "every submission is graded"))
        self.finish()
        return collected


def main(argv=None):
    _stacks_on_usr1()
    p = argparse.ArgumentParser(prog="python -m course.grade_class", description=__doc__.splitlines()[0])
    p.add_argument("course", nargs="?", default=DEMO_COURSE, help="course folder (default: demo_course)")
    p.add_argument("--assignment", default=ASSIGNMENT, help="assignment name (default: %(default)s)")
    p.add_argument("--force", action="store_true", help="grade every submission again, changed or not")
    p.add_argument("--device", choices=["auto", "gpu", "sim"], default="auto",
                   help="gpu: real timing and GPU tools; sim: Numba's simulator; auto: gpu when one is present "
                        "(with --slurm: gpu)")
    p.add_argument("--seed", type=int, help="input seed for every submission (default: a secret random one each)")
    p.add_argument("--student", action="append", help="grade only this student (repeatable)")
    p.add_argument("--gpus", help="GPU tier: how many GPUs (2) or which (0,1) "
                                  "(default: [class] gpus of COURSE/autograder.toml, else every GPU)")
    p.add_argument("--gpu-workers", type=int, help="GPU tier: grading processes per GPU; they share it and take "
                                                   "turns at it for timing (default: [class] gpu_workers, else 2)")
    p.add_argument("--workers", type=int, help="simulator tier: submissions graded at once "
                                               "(default: [class] workers, else one per two cores)")
    p.add_argument("--slurm", action="store_true", help="grade as a Slurm job array (docs/CLUSTER.md)")
    p.add_argument("--wait", action="store_true", help="with --slurm: wait for the array, then collect here "
                                                       "(instead of a dependent collecting job)")
    p.add_argument("--collect", action="store_true", help="only collect results graded by Slurm tasks or "
                                                          "workers into the gradebook, CSV and feedback")
    p.add_argument("--slurm-task", metavar="LIST", help=argparse.SUPPRESS)  # one array task (course.slurm)
    args = p.parse_args(argv)
    from autograder.config import ConfigError

    def interrupted(signum, frame):  # SIGTERM (a scheduler, `kill`) stops the run as Ctrl-C does: results saved
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    try:
        if args.slurm_task:
            return slurm.task_main(args, ClassGrader)
        if args.slurm and args.device == "auto":
            args.device = "gpu"  # the cluster's nodes have the GPUs; --device sim for a CPU-only cluster
        grader = ClassGrader(args.course, args.assignment, args.device, args.seed, args.force,
                             workers=args.workers, gpus=args.gpus, gpu_workers=args.gpu_workers)
        if args.slurm:
            return slurm.SlurmRun(grader).run(args.student, wait=args.wait)
        if args.collect:
            grader.collect(args.student)
        else:
            grader.run(args.student)
    except (CourseError, ConfigError) as exc:
        print(printable(f"error: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
