"""The CI graders never import from the student's checkout (classroom/grade.sh for GitHub Actions and GitLab CI,
Classroom 50's autograder.py, Gradescope's run_autograder).

They used to run ``python -m ...`` with the checkout as the working directory, which puts it first on sys.path,
before the standard library: an ``argparse.py`` in the repository ran in the grading process and wrote a result
of full marks. Now each runs from the grader's folder with ``-P`` and the checkout as an argument.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

FORGER = '''import json, os, sys
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "RAN-AS-GRADER"), "w").write("pwned")
for name in ("result.json", "grading/results.json"):
    try:
        os.makedirs(os.path.dirname(name) or ".", exist_ok=True)
        json.dump({"score": 67, "max_score": 67, "max-score": 67, "tests": []}, open(name, "w"))
    except OSError:
        pass
sys.exit(0)
'''


def hostile_checkout(base):
    """A checkout with the stage 1 solution and an argparse.py (and a json.py) that, imported, forge full marks."""
    ws = base / "checkout"
    shutil.copytree(os.path.join(ROOT, "exercises"), ws / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(os.path.join(ROOT, "solutions", "s1_naive.py"), ws / "exercises" / "s1_naive.py")
    for name in ("argparse.py", "json.py", "runpy.py"):
        (ws / name).write_text(FORGER, encoding="utf-8")
    return ws


@pytest.mark.slow
def test_grade_sh_never_imports_the_checkouts_modules(tmp_path):
    ws = hostile_checkout(tmp_path)
    env = dict(os.environ, GRADER_PYTHON=sys.executable, STAGES="naive")
    env.pop("GITHUB_OUTPUT", None)
    env.pop("GITHUB_STEP_SUMMARY", None)
    p = subprocess.run([os.path.join(ROOT, "classroom", "grade.sh"), "checkout", "grading", "sim"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert not (tmp_path / "RAN-AS-GRADER").exists()
    results = json.loads((tmp_path / "grading" / "results.json").read_text())
    assert results["score"] == 8 and results["max_score"] == 8, results["score"]    # stage 1, simulator tier


@pytest.mark.slow
def test_classroom50_autograder_never_imports_the_checkouts_modules(tmp_path):
    from classroom import c50
    from test_classroom50 import ASSIGNMENT, CLASSROOM, run_like_the_runner, runner_env
    bundle = c50.write_bundle(str(tmp_path / "config"), CLASSROOM, ASSIGNMENT)
    ws = hostile_checkout(tmp_path)
    env = runner_env("ann", bundle, tmp_path / "github_output")
    env["MATMUL_STAGES"] = "naive"
    p = run_like_the_runner(bundle, ws, env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert not (tmp_path / "RAN-AS-GRADER").exists()
    result = json.loads((ws / "result.json").read_text())
    assert result["score"] == 8 and result["max-score"] == 8
    assert c50.validate(result, CLASSROOM, ASSIGNMENT, "ann", "individual") == []
