"""What a student reads says what is wrong in the student's own terms: a `while` loop that never ends is named with
its variable and line (not numba's "liveness info missing"), a machine without the CUDA compiler is told the install
line. Each through the real path: the class run, the CLI, the notebook self-check."""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from coursekit import released_course  # noqa: F401 (fixture)

DEMO = os.path.join(ROOT, "demo_course")


def solution(module):
    with open(os.path.join(ROOT, "solutions", module + ".py"), encoding="utf-8") as f:
        return f.read()


def never_ending_loop():
    """Stage 2's solution with its inner loop a `while` that never increments k, and the line of that `while`."""
    text = solution("s2_tiled").replace(
        "        for k in range(TILE):\n            acc += sA[ty, k] * sB[k, tx]\n",
        "        k = 0\n        while k < TILE:\n            acc += sA[ty, k] * sB[k, tx]\n")
    assert "while k < TILE:" in text
    return text, text.splitlines().index("        while k < TILE:") + 1


@pytest.mark.slow
def test_a_while_loop_that_never_changes_its_variable_is_named_with_its_line(tmp_path):
    """numba rejects it with "liveness info missing for vars: {'k'}" and the message went on to causes that do not
    apply; the class table's note for the student was empty."""
    from course import grade_class
    text, line = never_ending_loop()
    course = tmp_path / "course"
    folder = course / "submitted" / "kim" / "matmul"
    folder.mkdir(parents=True)
    (folder / "s2_tiled.py").write_text(text, encoding="utf-8")
    for name in ("nbgrader_config.py", "autograder.toml"):
        shutil.copy(os.path.join(DEMO, name), course)
    grade_class.ClassGrader(str(course), device="sim", out=open(os.devnull, "w"), workers=1).run()
    results = json.loads((course / "feedback" / "kim" / "matmul" / "results.json").read_text())
    (compiled,) = [t for t in results["tests"] if t["tags"][:2] == ["tiled", "compiles"]]
    said = compiled["output"]
    assert compiled["score"] == 0, said
    assert "liveness" not in said and "Common causes" not in said, said
    assert "a `while` loop whose condition never changes" in said, said
    assert f"line {line}: `while k < TILE:`" in said and "k += 1" in said, said
    with open(course / "grades.csv", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert "tiled: does not compile" in row["note"], row


SELFCHECK = r'''
import json, sys, linecache
from autograder import config, selfcheck
load = config.load
def load_with_a_short_start():
    """The kernel never ends: the simulator run the self-check goes on to is stopped at its limit (start-up plus the
    shapes' work), 3 s of start-up here, not the grader's 20 (it is the compile check's message that is checked)."""
    cfg = load()
    cfg["limits"]["sim_start_s"] = 3.0
    return cfg
config.load = load_with_a_short_start
text = sys.stdin.read()
linecache.cache["<cell 3>"] = (len(text), None, text.splitlines(True), "<cell 3>")   # as IPython keeps a cell's lines
ns = {"__name__": "__main__"}
exec(compile(text, "<cell 3>", "exec"), ns)
print(json.dumps(selfcheck.check("tiled", ns, plot=False).results))
'''


def test_the_self_check_names_the_never_ending_loop_by_its_cells_line():
    """The self-check compiles a module rebuilt from the notebook's functions: the line it names is the cell's."""
    text, line = never_ending_loop()
    p = subprocess.run([sys.executable, "-c", SELFCHECK], input=text, cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert p.returncode == 0, p.stderr[-2000:]
    results = json.loads(p.stdout.strip().splitlines()[-1])
    (said,) = [m for name, ok, m in results if "compiles" in name and not ok]
    assert "liveness" not in said and "a `while` loop whose condition never changes" in said, said
    assert f"line {line} of the cell defining matmul_tiled_kernel: `while k < TILE:`" in said, said


CLI_WITHOUT_COMPILER = r"""
import json, sys
from autograder.sandbox import box
hidden = json.loads(sys.argv[1])
view = box.view
box.view = lambda *a, **k: view(*a, **k) + [("tmpfs", 1 << 20, folder) for folder in hidden]
from autograder.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_the_cli_without_the_cuda_compiler_gives_the_install_line(tmp_path):
    """`python -m autograder grade` where numba-cuda came without its [ptx] extra (no NVVM, libdevice or CUDA
    runtime library): it said "grade again", which changes nothing. It now gives the install line the notebook's
    self-check gives, from the same one text."""
    import glob
    from autograder.selfcheck import TOOLKIT_INSTALL
    from test_selfcheck_toolkit import toolkit_folders
    hidden = toolkit_folders()
    if [d for d in hidden if glob.glob(os.path.join(d, "libc.so*"))]:
        pytest.skip("the CUDA libraries are in a system library folder this test cannot hide")
    p = subprocess.run([sys.executable, "-c", CLI_WITHOUT_COMPILER, json.dumps(hidden), "grade",
                        os.path.join(ROOT, "solutions", "s2_tiled.py"), "--device", "sim", "--results",
                        str(tmp_path / "r.json")], capture_output=True, text=True, cwd=str(tmp_path),
                       env={**os.environ, "PYTHONPATH": ROOT}, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    if "RE-GRADE" not in p.stdout:
        pytest.skip(f"the children found the CUDA compiler outside the folders hidden from them: {hidden}")
    (regrade,) = [line for line in p.stdout.splitlines() if "RE-GRADE" in line]
    assert TOOLKIT_INSTALL in regrade, regrade
    results = json.loads((tmp_path / "r.json").read_text())
    (compiled,) = [t for t in results["tests"] if t["tags"][1] == "compiles"]
    assert TOOLKIT_INSTALL in compiled["output"], compiled


def _run_notebook(path, cwd, env):
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(str(path), as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute(env=env)
    return nb


def _said(nb, suffix):
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith(suffix))
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


@pytest.mark.slow
@pytest.mark.parametrize("out_of_order", [False, True], ids=["in-order", "numba-first"])
def test_the_setup_cell_and_the_self_check_header_name_the_same_mode(tmp_path, out_of_order):
    """A notebook whose kernel cell ran before the setup cell: the setup cell said "the CUDA simulator" and the
    self-check's header "on the GPU" (neither true on a machine without a GPU). Both now say what Numba loaded, by
    one test, executed in a real Jupyter kernel with no NUMBA_ENABLE_CUDASIM set beforehand."""
    import nbformat
    from autograder.selfcheck.mode import NEITHER, SIMULATOR
    from autograder.stages import find
    from course import notebooks
    if shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0:
        pytest.skip("this machine has a GPU: kernels run on it in either order")
    nb = notebooks.read_ipynb(find("naive"))
    if out_of_order:  # the imports a kernel cell runs, run before the setup cell
        nb.cells.insert(1, nbformat.v4.new_code_cell("from numba import cuda, float32"))
    path = tmp_path / "s1_naive.ipynb"
    nbformat.write(nb, str(path))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = ROOT
    ran = _run_notebook(path, tmp_path, env)
    setup, header = _said(ran, "-setup"), _said(ran, "-selfcheck").splitlines()[0]
    where = NEITHER if out_of_order else SIMULATOR
    assert f"Kernels run on {where}." in setup, setup
    assert f"kernels run on {where}" in header, header
    if out_of_order:
        assert "run the cells from the top" in setup, setup


def test_the_released_notebooks_send_students_to_nothing_they_do_not_get(released_course):
    """Students get the five notebooks alone: a released notebook named `python -m tools.ladder`, BENCHMARKS.md and
    "the README's student contract", none of which they have. Each fact is now said where it is needed, or points to
    stage 1's notebook."""
    import re
    import nbformat
    from autograder.stages import STAGES
    elsewhere = re.compile(r"tools[./]|BENCHMARKS|README|student contract|docs/")
    found = []
    for stage in STAGES:
        nb = nbformat.read(str(released_course / "release" / "matmul" / f"{stage.module}.ipynb"), as_version=4)
        for cell in nb.cells:
            found += [f"{stage.module}: {line.strip()}" for line in cell.source.splitlines() if elsewhere.search(line)]
    assert found == [], "\n".join(found)


@pytest.mark.slow
def test_the_missing_stages_note_is_shown_once_on_the_feedback_page(tmp_path):
    """A student who handed in stage 1 alone: the page's top said "not submitted: ... 0 of N points" twice, in the
    run's summary and again as a note."""
    from course import grade_class
    course = tmp_path / "course"
    folder = course / "submitted" / "lee" / "matmul"
    folder.mkdir(parents=True)
    (folder / "s1_naive.py").write_text(solution("s1_naive"), encoding="utf-8")
    for name in ("nbgrader_config.py", "autograder.toml"):
        shutil.copy(os.path.join(DEMO, name), course)
    grade_class.ClassGrader(str(course), device="sim", out=open(os.devnull, "w"), workers=1).run()
    page = (course / "feedback" / "lee" / "matmul" / "index.html").read_text(encoding="utf-8")
    assert page.count("not submitted: s2_tiled.ipynb") == 1, page[:3000]
    assert "those stages count 0 of" in page
