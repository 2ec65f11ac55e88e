"""Grade a class on a Slurm cluster (``make grade CLUSTER=slurm``, ``python -m course.grade_class --slurm``).

One command does everything, and running it again is how an interrupted or partly
failed class is finished:

1. it collects what earlier array tasks graded (``COURSE/.grading/<assignment>/graded/``)
   into the gradebook, ``grades.csv`` and the feedback pages, exactly as a local run;
2. it asks Slurm (``squeue``, and ``sacct`` where the cluster keeps accounting) about the
   tasks it submitted before (``COURSE/.grading/<assignment>/slurm/jobs.json``): students
   whose task is still pending or running are left alone; failed, cancelled, timed-out
   or lost tasks are listed, and their students are submitted again. A query that fails
   (squeue missing, or an error such as a controller that does not answer) is asked again;
   if it still fails, the state is unknown, not ended: those students are left alone
   too, and the run says so (run it again later);
3. it submits the students still to grade as one job array (``sbatch --array``): one task
   per ``batch`` submissions, each task on one GPU (``--gres=gpu:1``) in the GPU tier or
   on ``cpus_per_task`` cores in the simulator tier. A task grades into the course folder
   (which must be on a file system the nodes share) and writes nothing else: the
   gradebook has one writer;
4. it submits the collecting step as a job that depends on the array
   (``--dependency=afterany``), or with ``--wait`` waits for the array and collects here.

A task stages a student's result with one atomic rename at the very end, so a task
killed at any point (``scancel``, a node that dies, the time limit) leaves either a
whole result or nothing, and that student is graded again by the next run. A task skips
a student whose current submission already has a result, so nothing is graded twice.

Settings: the [slurm] table of ``COURSE/autograder.toml`` (SCHEMA below).
"""
import json
import os
import shlex
import subprocess
import sys
import time
import traceback

from . import ROOT, printable, shown_path
from autograder.config import Key
from .settings import GRADING_DIR, CourseError, course_settings

SCHEMA = {  # COURSE/autograder.toml's [slurm] table
    "partition": Key(str, "", "sbatch --partition (empty: the cluster's default)"),
    "account": Key(str, "", "sbatch --account (empty: none)"),
    "time_limit": Key(str, "01:00:00", "sbatch --time of one array task"),
    "batch": Key(int, 1, "submissions per array task (more: fewer, longer tasks)", minimum=1),
    "max_parallel": Key(int, 0, "array tasks running at once (sbatch --array=...%N; 0 = no limit)"),
    "cpus_per_task": Key(int, 4, "sbatch --cpus-per-task; the engine runs this many grading children at once",
                         minimum=1),
    "mem": Key(str, "", "sbatch --mem of one task (empty: the partition's default)"),
    "sbatch_options": Key("strs", [], "more sbatch options, e.g. [\"--qos=teaching\", \"--constraint=h100\"]"),
    "python": Key(str, "", "the Python of the course's virtualenv on the nodes (empty: this one)"),
}
# squeue's reasons for a pending task that the cluster can never start as asked.
NEVER_STARTS = {"PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints", "InvalidAccount",
                "InvalidQOS"}
# Slurm job states of a task that may still grade its students.
IN_FLIGHT = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
             "RESIZING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "SPECIAL_EXIT"}
# Not a Slurm state: squeue failed on the task's job, so it may still be queued or running.
NO_ANSWER = "NO_ANSWER"


def slurm(*args, check=True):
    """Run a Slurm command; a missing command or a failure is a CourseError that says which and why."""
    try:
        proc = subprocess.run(list(args), capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise CourseError(f"{args[0]} not found: run this on a machine of the Slurm cluster (docs/CLUSTER.md)")
    except subprocess.TimeoutExpired:
        raise CourseError(f"{args[0]} did not answer within 120 s")
    if check and proc.returncode != 0:
        raise CourseError(f"{' '.join(args[:2])} ... failed: {(proc.stderr or proc.stdout).strip()}")
    return proc


def batch_script(opts, cmd):
    """The text of an sbatch script: its #SBATCH options `opts`, then `cmd` run from the repository's root."""
    lines = ["#!/bin/bash"] + [f"#SBATCH {o}" for o in opts]
    lines += ["set -e", f"cd {shlex.quote(ROOT)}", "export PYTHONUNBUFFERED=1",
              "echo \"$(date -u +%FT%TZ) task ${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}_${SLURM_ARRAY_TASK_ID:-} "
              "on $(hostname) GPU ${CUDA_VISIBLE_DEVICES:-none}\"",
              "exec " + " ".join(shlex.quote(c) for c in cmd), ""]
    return "\n".join(lines)


class SlurmRun:
    def __init__(self, grader):
        self.g = grader
        self.s = course_settings(grader.course, "slurm", SCHEMA)
        self.dir = os.path.join(grader.course, GRADING_DIR, grader.assignment, "slurm")
        self.jobs_file = os.path.join(self.dir, "jobs.json")
        self.python = self.s["python"] or sys.executable
        self.squeue_tries, self.squeue_retry_s = 3, 10.0  # a failed squeue is asked again this often, this far apart
        self.squeue_patience_s = 600.0  # --wait: how long squeue may keep failing before the run gives up waiting
        self.squeue_trouble = ""        # why squeue last failed

    # -- what was submitted before -----------------------------------------
    def load_jobs(self):
        try:
            with open(self.jobs_file, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise CourseError(f"cannot read {self.jobs_file}: {exc}")

    def save_jobs(self, jobs):
        from autograder.engine.report import write_json_atomic
        write_json_atomic(self.jobs_file, jobs)

    def squeue(self, job, *args):
        """squeue's lines of one job: [] where Slurm no longer knows the job (it ended and was purged), None where
        squeue failed (missing, or an error: the job's tasks may still run); self.squeue_trouble says why."""
        try:
            q = slurm("squeue", "-h", "-r", "-j", job, *args, check=False)
        except CourseError as exc:  # squeue missing, or no answer within its time
            self.squeue_trouble = str(exc)
            return None
        if q.returncode != 0:
            said = (q.stderr or q.stdout).strip()
            if "Invalid job id" in said:
                return []
            self.squeue_trouble = f"squeue -j {job} failed (exit status {q.returncode}): {said[:300] or 'no message'}"
            return None
        return q.stdout.splitlines()

    def task_states(self, job_ids):
        """{"<job>_<index>": state} from squeue (live) and sacct (finished, where accounting is kept). A task of a job
        squeue did not answer for (after squeue_tries) that sacct does not know either is NO_ANSWER: unknown."""
        states = {}
        if not job_ids:
            return states
        try:
            acct = slurm("sacct", "-n", "-P", "-X", "-j", ",".join(job_ids), "-o", "JobID,State", check=False)
        except CourseError:  # no accounting here: squeue alone
            acct = None
        if acct is not None and acct.returncode == 0:
            for line in acct.stdout.splitlines():
                task, _, state = line.partition("|")
                if "_" in task and "[" not in task:
                    states[task.strip()] = state.split()[0] if state.strip() else "UNKNOWN"
        for job in job_ids:  # one at a time: squeue refuses a list with a purged id in it
            for attempt in range(self.squeue_tries):
                lines = self.squeue(job, "-t", "all", "-o", "%i|%T")
                if lines is not None:
                    break
                if attempt + 1 < self.squeue_tries:
                    self.g.say(f"{self.squeue_trouble}; asking again in {self.squeue_retry_s:g} s")
                    time.sleep(self.squeue_retry_s)
            if lines is None:
                states[job] = NO_ANSWER
                continue
            for line in lines:
                task, _, state = line.partition("|")
                if state.strip():
                    states[task.strip()] = state.strip()
        return states

    def last_tasks(self, jobs):
        """{student: (task id, state)} of the latest task that had each student."""
        states = self.task_states([j["job_id"] for j in jobs])
        last = {}
        for job in jobs:
            for index, students in enumerate(job["tasks"]):
                task = f"{job['job_id']}_{index}"
                for student in students:
                    last[student] = (task, states.get(task, states.get(job["job_id"], "UNKNOWN")))
        return last

    # -- submitting ----------------------------------------------------------
    def common_options(self):
        opts = []
        if self.s["partition"]:
            opts.append(f"--partition={self.s['partition']}")
        if self.s["account"]:
            opts.append(f"--account={self.s['account']}")
        return opts

    def task_script(self, list_file, n_tasks):
        g = self.g
        array = f"0-{n_tasks - 1}" + (f"%{self.s['max_parallel']}" if self.s["max_parallel"] else "")
        opts = [f"--job-name=grade-{g.assignment}", f"--array={array}",
                f"--output={os.path.join(self.dir, 'logs', '%A_%a.out')}", "--open-mode=append",
                f"--time={self.s['time_limit']}", f"--cpus-per-task={self.s['cpus_per_task']}", "--requeue"]
        if g.device == "gpu":
            opts.append("--gres=gpu:1")  # Slurm sets CUDA_VISIBLE_DEVICES to the task's GPU
        if self.s["mem"]:
            opts.append(f"--mem={self.s['mem']}")
        opts += self.common_options() + list(self.s["sbatch_options"])
        cmd = [self.python, "-m", "course.grade_class", g.course, "--assignment", g.assignment,
               "--device", g.device, "--slurm-task", list_file]
        if g.seed is not None:
            cmd += ["--seed", str(g.seed)]
        if g.force:
            cmd.append("--force")
        return batch_script(opts, cmd)

    def collect_script(self, after):
        g = self.g
        opts = [f"--job-name=grade-{g.assignment}-collect", f"--dependency=afterany:{':'.join(after)}",
                f"--output={os.path.join(self.dir, 'logs', 'collect-%j.out')}", "--open-mode=append",
                f"--time={self.s['time_limit']}", "--cpus-per-task=1"] + self.common_options()
        opts += [o for o in self.s["sbatch_options"] if not o.startswith(("--gres", "--gpus"))]
        cmd = [self.python, "-m", "course.grade_class", g.course, "--assignment", g.assignment,
               "--device", g.device, "--collect"]
        return batch_script(opts, cmd)

    def sbatch(self, text, name):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        out = slurm("sbatch", "--parsable", path).stdout.strip()
        return out.split(";")[0]

    def submit(self, todo):
        """One array of the (student, folder) pairs; returns the job id and the tasks' student lists."""
        os.makedirs(os.path.join(self.dir, "logs"), exist_ok=True)
        b = self.s["batch"]
        tasks = [[s for s, _ in todo[i:i + b]] for i in range(0, len(todo), b)]
        stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
        list_file = os.path.join(self.dir, f"tasks-{stamp}.json")
        with open(list_file, "w", encoding="utf-8") as f:
            json.dump(tasks, f)
        job_id = self.sbatch(self.task_script(list_file, len(tasks)), f"grade-{stamp}.sh")
        return job_id, tasks

    # -- the command -----------------------------------------------------------
    def run(self, students=None, wait=False, poll_s=5.0):
        g = self.g
        found = g.select(students)
        with g.collecting() as gb:
            collected = g.collect_staged(gb, found)
        todo = g.todo(found)
        jobs = self.load_jobs()
        last = self.last_tasks(jobs) if todo else {}
        running = [(s, f) for s, f in todo if last.get(s, ("", ""))[1] in IN_FLIGHT]
        unknown = [(s, last[s][0]) for s, _ in todo if last.get(s, ("", ""))[1] == NO_ANSWER]
        ended = [(s, *last[s]) for s, _ in todo if s in last and last[s][1] not in IN_FLIGHT | {NO_ANSWER}]
        submit = [(s, f) for s, f in todo if s not in dict(running) and s not in dict(unknown)]
        g.say(f"{g.course}: {len(found)} submissions of {g.assignment} on the "
              f"{'GPU' if g.device == 'gpu' else 'CUDA simulator'} through Slurm: {len(found) - len(todo)} graded"
              + (f" ({collected} collected now)" if collected else "")
              + f", {len(running)} in tasks still queued or running"
              + (f", {len(unknown)} in tasks of unknown state" if unknown else "") + f", {len(submit)} to submit")
        g.say_layout(students)
        if unknown:
            jobs_unknown = sorted({task.split("_")[0] for _, task in unknown})
            g.say(f"squeue did not answer for job {', '.join(jobs_unknown)} ({self.squeue_trouble}): the tasks of "
                  f"{len(unknown)} students ({', '.join(s for s, _ in unknown)}) may still be queued or running, so "
                  "they are not submitted again. Run this command again once squeue answers.")
        if ended:
            g.say("Tasks that ended without a result (their students are submitted again):")
            for student, task, state in ended:
                log = os.path.join(self.dir, "logs", f"{task}.out")
                g.say(f"  {student}: task {task} {state}" + (f" (log {shown_path(log)})" if os.path.exists(log) else ""))
        waiting = sorted({last[s][0].split("_")[0] for s, _ in running})
        if submit:
            job_id, tasks = self.submit(submit)
            jobs.append({"job_id": job_id, "tasks": tasks, "device": g.device,
                         "submitted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
            self.save_jobs(jobs)
            waiting.append(job_id)
            g.say(f"submitted job array {job_id}: {len(tasks)} tasks of up to {self.s['batch']} submissions "
                  f"(logs in {shown_path(os.path.join(self.dir, 'logs'))})")
        if not waiting:
            g.finish()
            return 1 if unknown else 0
        if not wait:
            collector = self.sbatch(self.collect_script(waiting), f"collect-{time.strftime('%Y%m%d-%H%M%S')}.sh")
            g.say(f"submitted the collecting job {collector}: it writes the gradebook, grades.csv and feedback "
                  f"when job {', '.join(waiting)} has ended (squeue -j {','.join(waiting + [collector])}). "
                  "Run the same command again to see the state, list failed tasks and submit them again.")
            return 0
        self.wait(waiting, poll_s)
        with g.collecting() as gb:
            g.collect_staged(gb, found)
        left = [s for s, _ in g.todo(found)]
        if left:
            last = self.last_tasks(self.load_jobs())
            g.say(f"{len(left)} submissions have no result; run the same command again to submit them again:")
            for s in left:
                g.say(f"  {s}: task {' '.join(last.get(s, ('-', 'not submitted')))}")
        g.finish()
        return 1 if left else 0

    def wait(self, job_ids, poll_s):
        """Until no task of these jobs is queued or running. A task the cluster can never start (it asks for more
        than any node of the partition has) is an error that says which setting to change, not an endless wait."""
        shown, failing_since = None, None
        while True:
            states, reasons, failed = {}, {}, False
            for job in job_ids:
                lines = self.squeue(job, "-o", "%i|%T|%r")
                if lines is None:  # unknown, not ended: wait and ask again
                    failed = True
                    break
                for line in lines:
                    task, _, rest = line.partition("|")
                    state, _, reason = rest.partition("|")
                    if state:
                        states[task.strip()], reasons[task.strip()] = state.strip(), reason.strip()
            if failed:  # said once per spell of failures; given up after squeue_patience_s of them
                if failing_since is None:
                    failing_since = time.monotonic()
                    self.g.say(f"{self.squeue_trouble}; still waiting for job {', '.join(job_ids)}: asking again "
                               f"every {poll_s:g} s")
                elif time.monotonic() - failing_since > self.squeue_patience_s:
                    raise CourseError(f"{self.squeue_trouble}; squeue has failed for {self.squeue_patience_s:g} s, so "
                                      f"the tasks of job {', '.join(job_ids)} may still be running: run this command "
                                      "again later (it collects what they graded and submits only what is missing)")
                time.sleep(poll_s)
                continue
            failing_since = None
            never = sorted({r for t, r in reasons.items() if states[t] == "PENDING" and r in NEVER_STARTS})
            if never:
                raise CourseError(
                    f"Slurm cannot start the grading tasks of job {', '.join(job_ids)} (pending: {', '.join(never)}): "
                    f"they ask for more than the partition's nodes have; lower [slurm] cpus_per_task "
                    f"({self.s['cpus_per_task']}), mem or time_limit in the course's autograder.toml, or pick "
                    f"another partition, then scancel {' '.join(job_ids)} and run this again")
            live = sum(1 for s in states.values() if s in IN_FLIGHT)
            if not live:
                return
            if live != shown:
                self.g.say(f"waiting for {live} tasks of job {', '.join(job_ids)} ...")
                shown = live
            time.sleep(poll_s)


def task_main(args, grader_class):
    """One array task: grade its line of the task list (SLURM_ARRAY_TASK_ID) and stage each result with a
    `grader_class` (course.grade_class.ClassGrader, which starts this module: no import back)."""
    index = int(os.environ.get("SLURM_ARRAY_TASK_ID", "0"))
    with open(args.slurm_task, encoding="utf-8") as f:
        students = json.load(f)[index]
    grader = grader_class(args.course, args.assignment, args.device, args.seed)
    grader.set_jobs(os.environ.get("SLURM_CPUS_PER_TASK"))
    folders = dict(grader.select())
    bad = 0
    for student in students:
        if student not in folders:
            print(printable(f"skipped {student}: the submission is gone"), flush=True)
            continue
        print(printable(f"grading {student}"), flush=True)
        try:
            status, _ = grader.grade_and_stage(student, folders[student], force=args.force)
        except Exception:
            traceback.print_exc()
            print(printable(f"failed {student}"), flush=True)
            bad += 1
            continue
        print(printable({"graded": f"graded {student}", "done": f"already graded {student}",
                         "staged": f"already graded {student} (waiting for collection)"}[status]), flush=True)
    return 1 if bad else 0
