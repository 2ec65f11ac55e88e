"""The command line: exit 0 whenever grading finished, 2 with a reason when the arguments are wrong."""
import json
import os
import subprocess
import sys

from conftest import ROOT
from course.mutants import KNOWN_BAD


def cli(*args):
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_missing_submission_is_a_usage_error(tmp_path):
    p = cli("grade", str(tmp_path / "nothing.py"), "--results", str(tmp_path / "r.json"))
    assert p.returncode == 2 and "no such file" in p.stderr
    assert not (tmp_path / "r.json").exists()


def test_unknown_stage_is_a_usage_error(tmp_path):
    p = cli("grade", "solutions", "--stage", "nope")
    assert p.returncode == 2 and "invalid choice" in p.stderr


def test_failing_submission_still_exits_zero_and_writes_results(tmp_path):
    out = tmp_path / "r.json"
    bad = tmp_path / "s1_naive.py"
    bad.write_text(KNOWN_BAD["syntax error"].text, encoding="utf-8")
    p = cli("grade", str(bad), "--device", "sim", "--results", str(out), "--seed", "3")
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert data["score"] == 0 and data["max_score"] > 0
    assert "syntax error" in p.stdout


def test_a_jupyter_copy_of_a_notebook_is_skipped_with_a_note(tmp_path):
    """"Make a Copy" leaves s1_naive-Copy1.ipynb beside the released notebook: the released name is graded, the
    copy is named in a note (it used to zero every stage: "both ... define stage naive")."""
    import shutil
    from autograder.submission import collect
    from autograder.repository import pick_files
    from autograder.stages import STAGES
    demo = os.path.join(ROOT, "demo_course", "submitted", "ada", "matmul")
    for name in os.listdir(demo):
        shutil.copy(os.path.join(demo, name), tmp_path / name)
    shutil.copy(os.path.join(demo, "s1_naive.ipynb"), tmp_path / "s1_naive-Copy1.ipynb")
    sources = collect(str(tmp_path))
    assert [s.stage.name for s in sources] == [s.name for s in STAGES]
    first = sources[0]
    assert os.path.basename(first.path) == "s1_naive.ipynb"
    assert "s1_naive-Copy1.ipynb also defines stage naive: not graded" in first.note
    assert not any(s.note for s in sources[1:])
    picked = {stage.name: (rel, note) for stage, _, rel, note in pick_files(str(tmp_path), STAGES)}
    assert picked["naive"][0] == "s1_naive.ipynb" and "s1_naive-Copy1.ipynb also defines" in picked["naive"][1]


def test_a_notebook_with_null_fields_is_read_not_crashed_on(tmp_path):
    """Valid JSON with "nbgrader": null or "source": null in a cell raised AttributeError."""
    from autograder.submission import notebook_source
    with open(os.path.join(ROOT, "demo_course", "submitted", "ada", "matmul", "s1_naive.ipynb"), encoding="utf-8") as f:
        nb = json.load(f)
    nb["cells"][0]["metadata"]["nbgrader"] = None
    nb["cells"].append({"cell_type": "code", "metadata": {"nbgrader": None, "tags": None}, "source": None,
                        "outputs": [], "execution_count": None})
    path = tmp_path / "s1_naive.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert "def matmul_naive(" in notebook_source(str(path))
    out = cli("grade", str(path), "--device", "sim", "--results", str(tmp_path / "r.json"))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
