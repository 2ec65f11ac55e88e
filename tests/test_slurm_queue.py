"""The Slurm run's reading of the queue (course/slurm.py) with stand-in squeue and sbatch commands on PATH: a squeue
that fails or is missing means the tasks' state is unknown, never that they ended, so no student is submitted twice.
The real cluster's tests are tests/test_slurm.py."""
import io
import json
import os
import stat
import sys

import pytest

from course import grade_class, slurm
from test_course import small_course


def command(folder, name, script):
    """An executable `name` in `folder` running the shell `script` (it counts its calls in folder/<name>.calls). PATH
    holds only `folder` and Python's: the script uses the shell's builtins alone."""
    path = folder / name
    path.write_text(f"#!/bin/sh\necho \"$@\" >> '{folder / (name + '.calls')}'\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def calls(folder, name):
    path = folder / (name + ".calls")
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def queue(tmp_path, monkeypatch):
    """(course of students a, b, c with job 77 holding a and b and job 78 holding c; the folder of the stand-in
    commands, first on PATH; a SlurmRun; its output). Job 78 has ended and been purged: a squeue with PURGED says
    "Invalid job id" for it. sbatch answers job 99; sacct has no accounting to tell."""
    course = small_course(str(tmp_path / "course"), ["a", "b", "c"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command(bin_dir, "sbatch", "echo 99")
    command(bin_dir, "sacct", 'echo "sacct: error: Slurm accounting storage is disabled" >&2; exit 1')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.path.dirname(sys.executable)}")
    out = io.StringIO()
    run = slurm.SlurmRun(grade_class.ClassGrader(course, device="sim", out=out))
    run.squeue_retry_s = 0.0
    os.makedirs(run.dir, exist_ok=True)
    run.save_jobs([{"job_id": "77", "tasks": [["a"], ["b"]], "device": "sim"},
                   {"job_id": "78", "tasks": [["c"]], "device": "sim"}])
    return course, bin_dir, run, out


PURGED = 'case "$*" in *"-j 78"*) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1;; esac\n'


def test_a_failed_squeue_submits_no_student_again(queue):
    """squeue fails for job 77 (the controller does not answer): a and b may still be graded by it, so only c (whose
    job Slurm no longer knows) is submitted; the run says why, after asking again."""
    course, bin_dir, run, out = queue
    command(bin_dir, "squeue", PURGED + 'echo "slurm_load_jobs error: Unable to contact slurm controller '
                                        '(connect failure)" >&2; exit 1')
    assert run.run() == 0  # c was submitted: the collecting job waits for it
    text = out.getvalue()
    assert len(calls(bin_dir, "sbatch")) == 2, calls(bin_dir, "sbatch")  # c's array, then the collecting job
    with open(run.jobs_file, encoding="utf-8") as f:
        assert json.load(f)[-1]["tasks"] == [["c"]]
    assert "2 in tasks of unknown state, 1 to submit" in text, text
    assert "squeue did not answer for job 77 (squeue -j 77 failed (exit status 1): slurm_load_jobs error: Unable to " \
           "contact slurm controller (connect failure))" in text, text
    assert "the tasks of 2 students (a, b) may still be queued or running, so they are not submitted again" in text
    assert len([c for c in calls(bin_dir, "squeue") if "-j 77" in c]) == run.squeue_tries  # asked again


def test_a_missing_squeue_submits_nothing_and_says_so(queue):
    """No squeue (nor sacct) on this machine: every task's state is unknown, so nothing is submitted again."""
    course, bin_dir, run, out = queue
    os.remove(bin_dir / "sacct")
    assert run.run() == 1
    assert calls(bin_dir, "sbatch") == []
    text = out.getvalue()
    assert "squeue not found: run this on a machine of the Slurm cluster" in text, text
    assert "(a, b, c) may still be queued or running, so they are not submitted again" in text


def test_wait_asks_a_failing_squeue_again_and_gives_up_saying_so(queue):
    """--wait: a squeue failure is not 'every task ended': it waits and asks again (saying so once), until squeue
    answers; one that keeps failing past squeue_patience_s is an error saying the tasks may still run."""
    course, bin_dir, run, out = queue
    count = bin_dir / "squeue.calls"
    command(bin_dir, "squeue", f'n=0; while read -r line; do n=$((n + 1)); done < "{count}"\n'
                               'if [ "$n" -le 2 ]; then echo "slurm_load_jobs error: Socket timed out" >&2; exit 1\n'
                               'fi\n'
                               'if [ "$n" -eq 3 ]; then echo "77_0|RUNNING|None"; fi\nexit 0')
    run.wait(["77"], poll_s=0.01)
    assert len(calls(bin_dir, "squeue")) == 4
    text = out.getvalue()
    assert text.count("Socket timed out; still waiting for job 77") == 1 and "waiting for 1 tasks of job 77" in text
    command(bin_dir, "squeue", "echo 'slurm_load_jobs error: Socket timed out' >&2; exit 1")
    run.squeue_patience_s = 0.05
    with pytest.raises(slurm.CourseError, match="squeue has failed for 0.05 s, so the tasks of job 77 may still be "
                                                 "running: run this command again later"):
        run.wait(["77"], poll_s=0.01)
