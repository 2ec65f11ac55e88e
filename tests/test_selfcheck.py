"""The notebooks' self-check and the grader agree on every instrumented check.

Both draw the instrumented shape from the stage registry (Stage.instrument_shape),
so a kernel cannot pass the notebook's race check and fail the grade's. Each
known-bad kernel (and each solution) runs through both: the grader's
instrumented child (sandboxed, judged in this process) and the self-check's
instruments in a simulator process, as a notebook runs them.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from autograder import engine, stages
from autograder.submission import StageSource
from autograder.stages import INSTRUMENT_CHECKS
from conftest import ROOT, solution_text
from course.mutants import KNOWN_BAD

CASES = {  # name: (stage, source): the known-bad kernels of the instrumented checks, and two solutions
    name: (case.stage, case.text) for name, case in KNOWN_BAD.items() if case.check in INSTRUMENT_CHECKS}
CASES["stage 2 solution"] = ("tiled", solution_text("tiled"))
# one seed for both sides: both draw the instrumented shape first from it, then A and B (Stage.instrument_shape);
# seed 1 draws stage 2's cheaper shape (2 x 2 tiles, not 3 x 3) and partial tiles in stages 3 and 4
SEED = 1
CASES["stage 4 solution"] = ("tiled_transposed", solution_text("tiled_transposed"))

SELFCHECK_DRIVER = r"""
import contextlib, importlib.util, io, json, os, sys, tempfile
from autograder import selfcheck
from autograder.stages import find
out = {}
folder = tempfile.mkdtemp(prefix="cells-")
for name, (stage_name, text) in json.loads(sys.stdin.read()).items():
    path = os.path.join(folder, "notebook_" + str(len(out)) + ".py")  # a file: the self-check reads the cells' source
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location("notebook_" + str(len(out)), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace = vars(module)
    with contextlib.redirect_stdout(io.StringIO()):
        run = selfcheck._Run(find(stage_name), namespace, seed=int(sys.argv[1]))
        run.compile_checks()  # what no GPU compiles runs in neither: compared below are the instruments alone
        run.report.results.clear()
        run.instruments()
    out[name] = [[n, ok] for n, ok, _ in run.report.results]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def selfcheck_verdicts():
    p = subprocess.run([sys.executable, "-c", SELFCHECK_DRIVER, str(SEED)], input=json.dumps(CASES), cwd=ROOT, text=True,
                       capture_output=True, timeout=900, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_selfcheck_and_grader_agree(name, selfcheck_verdicts, cfg, tmp_path):
    stage_name, text = CASES[name]
    stage = stages.find(stage_name)
    g = engine.StageGrader(StageSource(stage, stage.filename, text), "sim", cfg, np.random.default_rng(SEED), str(tmp_path))
    graded = {c.name: c.status == "passed" for c in g.judge_instruments(g.instruments_alone())}
    notebook = dict(map(tuple, selfcheck_verdicts[name]))
    assert graded and graded == notebook, f"grader {graded} vs self-check {notebook}"
    expect_all_pass = "solution" in name
    assert all(graded.values()) == expect_all_pass, graded
