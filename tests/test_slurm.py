"""Grading the demo course through a real one-node Slurm cluster (tests/slurm/start-cluster.sh).

The cluster is CPU only, so the class is graded in the simulator tier: array tasks ask for
CPUs, not GPUs. The node advertises a stand-in "gpu" GRES, and the GPU-tier job script
(--gres=gpu:1) is checked against it with `sbatch --test-only`. Skipped, with the reason,
where the cluster cannot start (not root, slurm-wlm or munge not installed).
"""
import csv
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from course import ASSIGNMENT, DEMO_COURSE, demo, grade_class, slurm
from coursekit import ROOT, copy_course, copy_demo_course, graded_demo_course  # noqa: F401 (fixture)

START = os.path.join(ROOT, "tests", "slurm", "start-cluster.sh")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """SLURM_CONF of a running one-node cluster, stopped after the module."""
    if os.geteuid() != 0:
        pytest.skip("Slurm test cluster: needs root to start slurmd and munged")
    folder = tmp_path_factory.mktemp("slurm-cluster")
    started = time.perf_counter()
    run = subprocess.run(["bash", START, str(folder)], capture_output=True, text=True, timeout=180)
    if run.returncode != 0:
        pytest.skip(f"Slurm test cluster could not start: {(run.stderr or run.stdout).strip()[-400:]}")
    print(f"Slurm cluster started in {time.perf_counter() - started:.1f} s")
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = run.stdout.strip().splitlines()[-1]
    yield os.environ["SLURM_CONF"]
    subprocess.run(["bash", START, "--stop", str(folder)], timeout=60)
    if old is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = old


def grade(course, *args, timeout=900):
    return subprocess.run([sys.executable, "-m", "course.grade_class", course, "--slurm", "--device", "sim", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def squeue(*args):
    return subprocess.run(["squeue", "-h", "-r", *args], capture_output=True, text=True, timeout=60).stdout


def wait_until(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}; queue: {squeue('-t', 'all', '-o', '%i %T %j')}")


def logs_of(course):
    text = {}
    for path in sorted(glob.glob(os.path.join(course, ".grading", ASSIGNMENT, "slurm", "logs", "*.out"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            text[os.path.basename(path)] = f.read()
    return text


def csv_rows(course):
    """grades.csv without the columns that differ between any two runs (time taken, time graded)."""
    with open(os.path.join(course, "grades.csv"), encoding="utf-8") as f:
        return [{k: v for k, v in r.items() if k not in ("seconds", "graded_at")} for r in csv.DictReader(f)]


def gradebook(course):
    """{(student, notebook): (auto_score, max_score)} and the submission timestamps, from nbgrader's gradebook."""
    from nbgrader.api import Gradebook
    from course import use_venv_tools
    use_venv_tools()
    cells, stamps = {}, {}
    with Gradebook(f"sqlite:///{course}/gradebook.db") as gb:
        for sub in gb.find_assignment(ASSIGNMENT).submissions:
            stamps[sub.student.id] = str(sub.timestamp)
            for nb in sub.notebooks:
                for g in nb.grades:
                    cells[(sub.student.id, nb.name, g.name)] = (g.auto_score, g.max_score)
    return cells, stamps


def test_gpu_tier_job_script_asks_for_one_gpu_and_the_cluster_accepts_it(cluster, tmp_path):
    course = str(tmp_path / "course")
    copy_course(DEMO_COURSE, course)
    with open(os.path.join(course, "autograder.toml"), "a", encoding="utf-8") as f:
        f.write('\n[slurm]\ntime_limit = "00:20:00"\ncpus_per_task = 2\nsbatch_options = ["--comment=matmul"]\n')
    run = slurm.SlurmRun(grade_class.ClassGrader(course, device="gpu", out=open(os.devnull, "w")))
    script = run.task_script("/dev/null", 3)
    assert "#SBATCH --gres=gpu:1" in script and "#SBATCH --array=0-2" in script
    assert "#SBATCH --time=00:20:00" in script and "#SBATCH --comment=matmul" in script
    assert "--device gpu --slurm-task" in script
    path = tmp_path / "job.sh"
    path.write_text(script)
    test = subprocess.run(["sbatch", "--test-only", str(path)], capture_output=True, text=True, timeout=60)
    assert test.returncode == 0 and "to start at" in test.stderr, test.stderr
    # the same script asking for more GPUs than any node has is refused by the cluster
    path.write_text(script.replace("--gres=gpu:1", "--gres=gpu:3"))
    assert subprocess.run(["sbatch", "--test-only", str(path)], capture_output=True, timeout=60).returncode != 0


def test_a_task_the_cluster_can_never_start_is_an_error_not_an_endless_wait(cluster, tmp_path):
    """Asking for more cores than the node has: `--wait` names the setting to change instead of waiting forever."""
    course = str(tmp_path / "course")
    copy_course(DEMO_COURSE, course)
    with open(os.path.join(course, "autograder.toml"), "a", encoding="utf-8") as f:
        f.write(f"\n[slurm]\ncpus_per_task = {4 * os.cpu_count()}\n")
    run = grade(course, "--wait", "--student", "ada", timeout=120)
    out = run.stdout + run.stderr
    try:
        assert run.returncode != 0 and "cannot start" in out and "cpus_per_task" in out, out
    finally:
        job = re.search(r"submitted job array (\d+)", out)
        if job:
            subprocess.run(["scancel", job.group(1)], timeout=60)


# The demo students graded through Slurm: full marks in every stage (ada), a stage zeroed for a host-side product
# (dee), and eve, whose task is cancelled while it grades and submitted again. Each is compared with the same
# student of the local run of the whole demo class (tests/test_course.py checks every student's grade there). Three
# tasks on two cores still leave eve's pending until another ends.
THROUGH_SLURM = ["ada", "dee", "eve"]


def test_demo_course_through_slurm_equals_a_local_run_and_survives_a_cancelled_task(cluster, graded_demo_course,
                                                                                     tmp_path):
    local, local_run, _ = graded_demo_course
    assert local_run.returncode == 0, local_run.stdout + local_run.stderr
    course = str(tmp_path / "course")
    copy_demo_course(course)  # the local run's settings
    for student in os.listdir(os.path.join(course, "submitted")):
        if student not in THROUGH_SLURM:
            shutil.rmtree(os.path.join(course, "submitted", student))
    students = [s for s in demo.STUDENTS if s.name in THROUGH_SLURM]
    assert [s.name for s in students] == THROUGH_SLURM
    with open(os.path.join(course, "autograder.toml"), "a", encoding="utf-8") as f:
        f.write("\n[slurm]\ncpus_per_task = 1\n")  # two tasks at once on the 2-core test node

    # 1. submit the class; cancel eve's task while it grades (as a dying node would end it). eve's is the last task
    # to start (pending until ada's or dee's ends) and the longest (her kernel never ends for K = 1, which holds the
    # task for the course's 25 s check limit): cancelled, it no longer keeps the array running alone on one core
    first = grade(course, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    job = re.search(rf"submitted job array (\d+): {len(students)} tasks", first.stdout).group(1)
    assert "submitted the collecting job" in first.stdout
    slurm_dir = os.path.join(course, ".grading", ASSIGNMENT, "slurm")
    with open(glob.glob(os.path.join(slurm_dir, "tasks-*.json"))[0], encoding="utf-8") as f:
        index = json.load(f).index(["eve"])
    log = os.path.join(slurm_dir, "logs", f"{job}_{index}.out")
    wait_until(lambda: os.path.exists(log) and "grading eve" in open(log).read(), 300, f"task {index} to start grading")
    time.sleep(3)  # well inside the grading of eve (about 30 s: the never-ending check runs to its limit)
    subprocess.run(["scancel", f"{job}_{index}"], check=True, timeout=60)
    wait_until(lambda: not squeue("-t", "PD,R,CG,CF"), 900, "the array and the collecting job to end")
    assert "graded eve" not in open(log).read()
    # the dependent collecting job stored everyone but eve
    assert sorted(r["student"] for r in csv_rows(course)) == ["ada", "dee"]
    assert not os.path.exists(os.path.join(course, "feedback", "eve", ASSIGNMENT, "results.json"))

    # 2. the same command again: lists the cancelled task, submits eve alone (on both cores: [slurm]
    # settings are not part of the grading key), waits and collects here
    toml = os.path.join(course, "autograder.toml")
    with open(toml, encoding="utf-8") as f:
        text = f.read()
    with open(toml, "w", encoding="utf-8") as f:
        f.write(text.replace("cpus_per_task = 1", "cpus_per_task = 2"))
    second = grade(course, "--wait")
    assert second.returncode == 0, second.stdout + second.stderr
    assert re.search(rf"eve: task {job}_{index} CANCELLED", second.stdout), second.stdout
    assert "2 graded" in second.stdout and "1 to submit" in second.stdout and "1 tasks" in second.stdout

    # every student graded exactly once over all tasks; none lost
    logs = "\n".join(logs_of(course).values())
    for student in students:
        assert len(re.findall(rf"^graded {student.name}$", logs, re.M)) == 1, (student.name, logs)
    assert not os.listdir(grade_class.staging_dir(course, ASSIGNMENT))

    # grades, grades.csv and the gradebook equal those of the local run (its rows of these students)
    for student in students:
        for folder in (local, course):
            with open(os.path.join(folder, "feedback", student.name, ASSIGNMENT, "results.json")) as f:
                data = json.load(f)
            assert data["score"] == student.expected_total, (folder, student.name)
            assert {k: round(v, 4) for k, v in data["extra_data"]["course"]["stage_scores"].items()} == \
                student.expected
        assert os.path.isfile(os.path.join(course, "feedback", student.name, ASSIGNMENT, "index.html"))
    assert csv_rows(course) == [r for r in csv_rows(local) if r["student"] in THROUGH_SLURM]
    cells, stamps = gradebook(local)
    assert gradebook(course) == ({k: v for k, v in cells.items() if k[0] in THROUGH_SLURM},
                                 {k: v for k, v in stamps.items() if k in THROUGH_SLURM})
    assert os.path.getsize(os.path.join(course, "grades-histogram.png")) > 1000

    # 3. nothing left: a third run submits nothing
    third = grade(course, "--wait", timeout=300)
    assert third.returncode == 0 and "0 to submit" in third.stdout and "submitted job" not in third.stdout, \
        third.stdout + third.stderr
    shutil.rmtree(os.path.join(course, ".grading", ASSIGNMENT, "slurm", "logs"), ignore_errors=True)


def test_the_slurm_module_does_not_import_the_class_run_back():
    """course.grade_class starts course.slurm; slurm gets its settings from course.settings and the grader class
    as an argument, so there is no import circle between the two."""
    import ast
    from conftest import ROOT
    tree = ast.parse(open(os.path.join(ROOT, "course", "slurm.py"), encoding="utf-8").read())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m and "grade_class" in m for m in imported), imported


def test_slurm_settings_follow_the_config_rule(tmp_path):
    from course import settings, slurm
    (tmp_path / "autograder.toml").write_text("[slurm]\ncpus_per_tsk = 4\n")
    with pytest.raises(settings.CourseError, match="no key 'cpus_per_tsk' \\(did you mean 'cpus_per_task'"):
        settings.course_settings(str(tmp_path), "slurm", slurm.SCHEMA)
    (tmp_path / "autograder.toml").write_text("[slurm]\nsbatch_options = [\"--qos=x\", 3]\n")
    with pytest.raises(settings.CourseError, match="must be a list of strings"):
        settings.course_settings(str(tmp_path), "slurm", slurm.SCHEMA)
    (tmp_path / "autograder.toml").write_text("[slurm]\nsbatch_options = [\"--qos=x\"]\n")
    assert settings.course_settings(str(tmp_path), "slurm", slurm.SCHEMA)["sbatch_options"] == ["--qos=x"]
