"""The README's "For students" path, walked end to end as a student without a GPU walks it.

Released notebooks in a folder of the student's own, outside the course and this repository; the self-check
package built from this repository (`make selfcheck-package`) and installed apart from it; the notebooks filled in
and run top to bottom in a real Jupyter kernel; then `python -m autograder grade FOLDER` from the same package.
The self-check and the grader must name the same line of the same cell.
"""
import json
import os
import re
import subprocess
import sys

import nbformat
import pytest

from course import ASSIGNMENT, demo
from coursekit import execute, released_course, text_of  # noqa: F401 (fixture)

# stage 3 with the load of A masked on the row only: a thread past K's edge reads A[row, K] (IndexError in the
# simulator, a read past the row on a GPU)
ROW_ONLY_MASK = ("sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)",
                 "sA[ty, tx] = A[row, ka] if row < M else float32(0.0)")


def _selfcheck_output(nb):
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-selfcheck"))
    return "".join(text_of(o) for o in cell.outputs)


@pytest.mark.slow
def test_a_student_self_checks_and_grades_outside_the_course(released_course, tmp_path):
    from course.selfcheck_package import build_wheel
    wheel = build_wheel(str(tmp_path / "dist"))
    site = tmp_path / "site"   # the student's environment: the course's package and nothing of this repository
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), wheel],
                   check=True, timeout=300)
    assert (site / "autograder" / "selfcheck" / "__init__.py").is_file()
    assert (site / "autograder" / "config.toml").is_file()

    work = tmp_path / "my_matmul"  # the student's own folder: released notebooks, filled in
    work.mkdir()
    release = released_course / "release" / ASSIGNMENT
    edits = {"s1_naive": [demo.SOLVE], "s3_tiled_general": [demo.SOLVE, ROW_ONLY_MASK]}
    for module, module_edits in edits.items():
        nb = nbformat.read(str(release / f"{module}.ipynb"), as_version=4)
        demo.apply_edits(nb, module, module_edits)
        nb.cells.append(nbformat.v4.new_code_cell("import autograder; print('self-check from', autograder.__file__)",
                                                  metadata={"tags": ["not-graded"]}))  # the grader skips it
        nbformat.write(nb, str(work / f"{module}.ipynb"))

    ran = {m: execute(work / f"{m}.ipynb", work, pythonpath=str(site)) for m in edits}
    for module, nb in ran.items():
        where = "".join(text_of(o) for o in nb.cells[-1].outputs)
        assert f"self-check from {site}" in where, where
        nbformat.write(nb, str(work / f"{module}.ipynb"))  # saved as the student would, outputs and all

    naive = _selfcheck_output(ran["s1_naive"])
    assert "FAIL" not in naive and re.search(r"(\d+) of \1 self-checks passed", naive), naive
    assert "PASS  matmul_naive_kernel is a CUDA kernel that compiles for the GPU" in naive, naive
    assert "python -m autograder grade FOLDER" in naive, naive  # the command that grades it, not the class's
    general = _selfcheck_output(ran["s3_tiled_general"])
    cited = re.search(r"IndexError: .*?\(line (\d+) of the cell defining matmul_tiled_general_kernel: "
                      r"sA\[ty, tx\] = A\[row, ka\] if row < M else float32\(0\.0\)\)", general)
    assert cited, general

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_ENABLE_CUDASIM")}
    env["PYTHONPATH"] = str(site)
    out = subprocess.run([sys.executable, "-m", "autograder", "grade", str(work), "--device", "sim",
                          "--results", str(tmp_path / "results.json")],
                         cwd=str(work), env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode in (0, 1), out.stdout[-3000:] + out.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    scores = {}
    for t in results["tests"]:
        scores[t["tags"][0]] = scores.get(t["tags"][0], 0) + t["score"]
    assert scores["naive"] == demo.FULL["naive"], results["tests"]
    failed = [t["output"] for t in results["tests"] if t["tags"][0] == "tiled_general" and t["status"] == "failed"]
    # the grader names the line the self-check named, in the same words, and which cell it is
    want = f"line {cited.group(1)} of the cell defining matmul_tiled_general_kernel (cell "
    assert failed and any(want in text for text in failed), failed
