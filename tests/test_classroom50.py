"""Classroom 50 (classroom/c50.py, classroom/classroom50/autograder.py): result.json and the runner's invocation.

The end-to-end tests run autograder.py the way Classroom 50's runner does (the wiki's "Advanced
Autograding" page, Contract): ``python autograder.py`` from the assignment's bundle, the student's
checkout as working directory, the runner's environment (CLASSROOM, ASSIGNMENT, SUBMISSION_TAG,
PAGES_BASE_URL, USERNAME/OWNER, ASSIGNMENT_TYPE, COMMIT_URL, RELEASE_URL, REVIEW_URL,
CLASSROOM50_BUNDLE_DIR and GITHUB_*), then check ./result.json against the documented contract.
"""
import copy
import json
import os
import shutil
import subprocess
import sys

import pytest

from classroom import c50
from conftest import ROOT

CLASSROOM, ASSIGNMENT = "gpu101", "matmul"


def check(stage, key, status, score, max_score, output=""):
    return {"name": f"stage {stage}: {key} check", "score": score, "max_score": max_score,
            "status": "passed" if status == "skipped" else status, "output": output, "tags": [stage, key, status]}


def results_of(*checks, device="sim", error=None):
    extra = {"device": device, "provisional": device != "gpu", "stages": []}
    if error:
        extra["error"] = error
    return {"score": sum(c["score"] for c in checks), "max_score": sum(c["max_score"] for c in checks),
            "tests": list(checks), "execution_time": 1.0, "extra_data": extra}


def runner_env(owner, bundle_dir, output):
    """The environment Classroom 50's runner gives autograder.py for repository ORG/gpu101-matmul-OWNER."""
    repo = f"https://github.com/course-org/{CLASSROOM}-{ASSIGNMENT}-{owner}"
    tag = "submit/2026-11-20T10-00-00Z-a1b2c3d"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "MATMUL_"))}
    env.update(CLASSROOM=CLASSROOM, ASSIGNMENT=ASSIGNMENT, SUBMISSION_TAG=tag,
               PAGES_BASE_URL="https://course-org.github.io/classroom50", USERNAME=owner, OWNER=owner,
               ASSIGNMENT_TYPE="individual", COMMIT_URL=f"{repo}/commit/a1b2c3d4e5",
               RELEASE_URL=f"{repo}/releases/tag/submit%2F2026-11-20T10-00-00Z-a1b2c3d",
               REVIEW_URL=f"{repo}/compare/0f0f0f0...a1b2c3d4e5", CLASSROOM50_BUNDLE_DIR=str(bundle_dir),
               GITHUB_REPOSITORY=f"course-org/{CLASSROOM}-{ASSIGNMENT}-{owner}", GITHUB_SHA="a1b2c3d4e5",
               GITHUB_SERVER_URL="https://github.com", GITHUB_ACTOR=owner, GITHUB_ACTIONS="true",
               GITHUB_OUTPUT=str(output), GRADER_PYTHON=sys.executable)
    return env


# ----------------------------------------------------------------------------
# result.json and the contract


def test_result_has_the_contract_fields_and_whole_points_per_check():
    results = results_of(check("naive", "compiles", "passed", 2, 2), check("naive", "correct", "failed", 0, 6, "x" * 3000),
                         check("naive", "speed", "skipped", 0, 0, "NOT RUN"))
    env = {"CLASSROOM": CLASSROOM, "ASSIGNMENT": ASSIGNMENT, "SUBMISSION_TAG": "submit/2026-11-20T10-00-00Z-a1b2c3d",
           "OWNER": "ada", "COMMIT_URL": "https://github.com/o/r/commit/1", "RELEASE_URL": "https://github.com/o/r/r"}
    result = c50.to_result(results, env, {"naive": "exercises/s1_naive.py"})
    assert c50.validate(result, CLASSROOM, ASSIGNMENT, "ada", "individual") == []
    assert result["score"] == 2 and result["max-score"] == 8 and result["review"] == env["COMMIT_URL"]
    rows = {t["test-name"]: t for t in result["tests"]}
    assert rows["tier: simulator (provisional)"]["max-score"] == 0
    assert rows["stage naive: compiles check"] == {**rows["stage naive: compiles check"], "passed": True, "score": 2,
                                                   "max-score": 2, "file": "exercises/s1_naive.py"}
    assert rows["stage naive: correct check"]["passed"] is False and len(rows["stage naive: correct check"]["message"]) < 2100
    assert rows["(not run) stage naive: speed check"]["passed"] is True
    assert c50.status_and_summary(result) == ("failure", "matmul: 2/8 (3/4 checks passed; simulator tier, PROVISIONAL)")
    # Fractional points become whole numbers, the exact ones kept in the row.
    half = c50.to_result(results_of(check("tiled", "correct", "failed", 1.5, 6)), env)
    assert half["score"] == 1 and half["tests"][1]["points"] == [1.5, 6]
    assert c50.validate(half) == []


def test_an_unfinished_grading_is_a_failed_row_worth_zero():
    result = c50.to_result(results_of(error="both files define stage naive"),
                           {"SUBMISSION_TAG": "submit/x", "CLASSROOM": "c", "ASSIGNMENT": "a", "OWNER": "o",
                            "COMMIT_URL": "https://x/c", "RELEASE_URL": "https://x/r"})
    assert result["score"] == result["max-score"] == 0 and c50.validate(result) == []
    assert result["tests"][-1]["test-name"] == "grading finished" and result["tests"][-1]["passed"] is False
    assert c50.status_and_summary(result)[0] == "failure"


GOOD = {"schema": "classroom50/result/v1", "classroom": CLASSROOM, "assignment": ASSIGNMENT,
        "assignment_type": "individual", "owner": "ada", "submission": "submit/2026-06-01T14-32-05Z-a1b2c3d",
        "commit": "https://github.com/o/r/commit/s", "release": "https://github.com/o/r/releases/tag/t",
        "review": "https://github.com/o/r/compare/a...b", "datetime": "2026-06-01T14:32:01Z",
        "graded_at": "2026-06-01T14:33:11Z", "score": 4, "max-score": 5,
        "tests": [{"test-name": "compiles", "passed": True, "score": 4, "max-score": 4},
                  {"test-name": "outputs_correct", "passed": False, "score": 0, "max-score": 1}],
        "submitted_by": {"username": "ada", "id": None}}


@pytest.mark.parametrize("change, wanted", [
    ({"schema": "classroom50/result/v2"}, "schema"),
    ({"classroom": "other"}, "'classroom' is 'other'"),
    ({"owner": "eve"}, "'owner' is 'eve'"),
    ({"assignment_type": "pair"}, "assignment_type"),
    ({"submission": "v1.0"}, "submit/*"),
    ({"review": ""}, "'review' must be a URL"),
    ({"datetime": "2026-06-01 14:32"}, "'datetime'"),
    ({"score": 4.0}, "non-negative integers"),
    ({"score": 5}, "not the sums"),
    ({"max-score": 3, "score": 4}, "score 4 > max-score 3"),
    ({"tests": [{"test-name": "t", "passed": "yes", "score": 4, "max-score": 5}]}, "passed must be true or false"),
    ({"tests": [{"test-name": "", "passed": True, "score": 4, "max-score": 5}]}, "test-name"),
    ({"tests": [{"test-name": "t", "passed": True, "score": 6, "max-score": 5}]}, "score 6 > max-score 5"),
    ({"submitted_by": {"id": 3}}, "submitted_by"),
])
def test_validate_catches_every_broken_field(change, wanted):
    assert c50.validate(GOOD, CLASSROOM, ASSIGNMENT, "ada", "individual") == []
    bad = copy.deepcopy(GOOD)
    bad.update(change)
    problems = c50.validate(bad, CLASSROOM, ASSIGNMENT, "ada", "individual")
    assert any(wanted in p for p in problems), problems


def test_validate_command_line(tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(dict(GOOD, score=3)))
    p = subprocess.run([sys.executable, "-m", "classroom.c50", "validate", str(path)], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 1 and "not the sums" in p.stdout


def test_device_follows_the_runner():
    assert c50.device_from_env({"RUNNER_ENVIRONMENT": "self-hosted"}) == "gpu"
    assert c50.device_from_env({"RUNNER_ENVIRONMENT": "github-hosted"}) == "sim"
    assert c50.device_from_env({"RUNNER_ENVIRONMENT": "self-hosted", "MATMUL_DEVICE": "sim"}) == "sim"
    with pytest.raises(ValueError):
        c50.device_from_env({"MATMUL_DEVICE": "tpu"})


# ----------------------------------------------------------------------------
# The runner's invocation


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """The per-assignment bundle as `make release` writes it (CLASSROOM/autograders/ASSIGNMENT/), unpacked."""
    config = tmp_path_factory.mktemp("classroom50") / "config"
    path = c50.write_bundle(str(config), CLASSROOM, ASSIGNMENT)
    assert c50.bundle_size(path) < c50.BUNDLE_LIMIT
    return path


def checkout(tmp_path, student):
    """A student's repository as the runner checks it out: the template's exercises and the demo student's notebooks."""
    ws = tmp_path / f"{CLASSROOM}-{ASSIGNMENT}-{student}"
    shutil.copytree(os.path.join(ROOT, "exercises"), ws / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(ROOT, "demo_course", "submitted", student, "matmul"), ws / "notebooks",
                    ignore=shutil.ignore_patterns("timestamp.txt"))
    (ws / ".classroom50.yaml").write_text(f"classroom: {CLASSROOM}\nassignment: {ASSIGNMENT}\n")
    return ws


def run_like_the_runner(bundle_dir, ws, env):
    entrypoint = os.path.join(bundle_dir, "autograder.py")
    return subprocess.run([sys.executable, entrypoint], cwd=str(ws), env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("student, stages", [("ada", "naive"), ("dee", "naive tiled")])
def test_autograder_on_demo_students_as_the_runner_runs_it(bundle, tmp_path, student, stages):
    from course.demo import BY_NAME
    ws = checkout(tmp_path, student)
    env = runner_env(student, bundle, tmp_path / "github_output")
    env["MATMUL_STAGES"] = stages
    p = run_like_the_runner(bundle, ws, env)
    assert p.returncode == 0, p.stdout + p.stderr
    result = json.loads((ws / "result.json").read_text())
    assert c50.validate(result, CLASSROOM, ASSIGNMENT, student, "individual") == []
    expected = {s: BY_NAME[student].expected[s] for s in stages.split()}
    assert result["score"] == sum(expected.values())
    assert result["max-score"] == {"naive": 8, "naive tiled": 21}[stages]      # simulator tier: speed counts 0
    for stage, points in expected.items():
        assert sum(t["score"] for t in result["tests"] if t.get("stage") == stage) == points
        assert {t["file"] for t in result["tests"] if t.get("stage") == stage} == {f"notebooks/{stage_module(stage)}.ipynb"}
    assert result["submission"] == env["SUBMISSION_TAG"] and result["review"] == env["REVIEW_URL"]
    assert result["tests"][0]["test-name"] == "tier: simulator (provisional)"
    outputs = dict(line.split("=", 1) for line in (tmp_path / "github_output").read_text().splitlines())
    all_passed = all(t["passed"] for t in result["tests"])
    assert outputs["status"] == ("success" if all_passed else "failure")
    assert outputs["summary"].startswith(f"matmul: {result['score']}/{result['max-score']}")
    body = (ws / "release-body.md").read_text()
    assert "PROVISIONAL" in body and f"Status: {outputs['summary']}" in body
    if student == "dee":
        assert not all_passed and "host" in body.lower()
    assert (ws / "grading" / "feedback.html").is_file()


def stage_module(name):
    from autograder.stages import find
    return find(name).module


def test_autograder_without_a_grader_is_an_infrastructure_error(tmp_path):
    lone = tmp_path / "bundle"
    lone.mkdir()
    shutil.copyfile(os.path.join(c50.FILES, "autograder.py"), lone / "autograder.py")
    ws = tmp_path / "ws"
    ws.mkdir()
    env = runner_env("ada", lone, tmp_path / "out")
    env["MATMUL_GRADER"] = str(tmp_path / "nowhere")
    p = run_like_the_runner(str(lone), ws, env)
    assert p.returncode == 1 and "::error::" in p.stdout and "no grader" in p.stdout
    assert not (ws / "result.json").exists()


def test_grade_outside_the_runner_names_the_missing_variables(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in c50.IDENTITY}
    p = subprocess.run([sys.executable, "-m", "classroom.c50", "grade"], cwd=tmp_path, capture_output=True, text=True,
                       env=dict(env, PYTHONPATH=ROOT))
    assert p.returncode == 1 and "CLASSROOM, ASSIGNMENT, SUBMISSION_TAG" in p.stderr


def test_a_gpu_runner_without_a_gpu_records_no_grade(bundle, tmp_path):
    """A self-hosted runner that cannot see its GPU is an infrastructure error, never a 0-point result."""
    ws = checkout(tmp_path, "ada")
    env = runner_env("ada", bundle, tmp_path / "out")
    env.update(RUNNER_ENVIRONMENT="self-hosted", PATH=os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin")
    if shutil.which("nvidia-smi", path=env["PATH"]):
        pytest.skip("this machine has nvidia-smi")
    p = run_like_the_runner(bundle, ws, env)
    assert p.returncode == 1 and "no GPU" in p.stderr
    assert not (ws / "result.json").exists()


def test_autograder_makes_the_graders_venv_on_a_hosted_runner(tmp_path):
    """Without GRADER_PYTHON and without GRADER/.venv, autograder.py makes a venv in $RUNNER_TEMP from the grader's
    requirements.txt and grades with it (here a stand-in grader whose requirements are empty)."""
    grader = tmp_path / "grader"
    (grader / "autograder").mkdir(parents=True)
    (grader / "classroom").mkdir()
    (grader / "classroom" / "__init__.py").write_text("")
    (grader / "classroom" / "c50.py").write_text(
        "import os, sys\nif __name__ == '__main__':\n"
        "    open(os.path.join(sys.argv[sys.argv.index('--checkout') + 1], 'which-python'), 'w').write(sys.prefix)\n")
    (grader / "requirements.txt").write_text("# nothing to install\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    env = runner_env("ada", tmp_path, tmp_path / "out")
    del env["GRADER_PYTHON"]
    env.update(MATMUL_GRADER=str(grader), RUNNER_TEMP=str(tmp_path / "runner-temp"))
    p = run_like_the_runner(os.path.join(c50.FILES), ws, env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (ws / "which-python").read_text() == str(tmp_path / "runner-temp" / "matmul-grader-venv")


def test_the_release_text_says_which_file_of_a_stage_was_not_graded(tmp_path, monkeypatch):
    """Classroom 50's release text names the file graded and the copy beside it that was not, as summary.md does."""
    from classroom import grade as grade_mod
    ws = checkout(tmp_path, "ada")
    shutil.copyfile(ws / "notebooks" / "s1_naive.ipynb", ws / "notebooks" / "s1_naive-Copy1.ipynb")
    monkeypatch.setattr(grade_mod, "grade", lambda *args, **kwargs: results_of(check("naive", "compiles", "passed", 2, 2)))
    env = runner_env("ada", tmp_path, tmp_path / "github_output")
    env["MATMUL_STAGES"] = "naive"
    monkeypatch.chdir(ws)
    c50.grade_checkout(str(ws), env)
    body = (ws / "release-body.md").read_text()
    assert "notebooks/s1_naive.ipynb" in body and "s1_naive-Copy1.ipynb also defines stage naive: not graded" in body, body


def test_a_committed_result_json_link_is_replaced_never_written_through(tmp_path, monkeypatch):
    """result.json -> ../victim.json and release-body.md -> ../victim.md in the checkout: Classroom 50's files are
    written in their place, and nothing outside the checkout changes."""
    from classroom import grade as grade_mod
    ws = checkout(tmp_path, "ada")
    for name in ("result.json", "release-body.md"):
        os.symlink(f"../victim-{name}", ws / name)
    monkeypatch.setattr(grade_mod, "grade", lambda *args, **kwargs: results_of(check("naive", "compiles", "passed", 2, 2)))
    env = runner_env("ada", tmp_path, tmp_path / "github_output")
    env["MATMUL_STAGES"] = "naive"
    monkeypatch.chdir(ws)
    c50.grade_checkout(str(ws), env)
    assert not any(p.name.startswith("victim-") for p in tmp_path.iterdir())
    assert json.loads((ws / "result.json").read_text())["tests"] and not (ws / "result.json").is_symlink()
    assert not (ws / "release-body.md").is_symlink()
