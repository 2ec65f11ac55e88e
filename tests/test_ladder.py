"""The optimisation ladder (tools/ladder.py, part of `make gpu-check`): every contender runs and is correct.

The GPU machine runs the ladder at N = 4096; here each contender runs once in
Numba's simulator at N = 32, so a kernel source that no longer compiles or a
launcher that crashes is caught on CPU.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DRIVER = r"""
import json, sys
import numpy as np
from numba import cuda
from autograder.sim.gpu_options import accept_gpu_options
from autograder.sim.green import install
install()  # a block's threads as greenlets, as in the grading children
accept_gpu_options()  # the rungs past the solution tune for the GPU, as a stage 5 submission may
from tools import ladder
rng = np.random.default_rng(3)
M = K = N = 32  # the tiled-only contenders need multiples of their tile, as at N = 4096
A = rng.standard_normal((M, K)).astype(np.float32)
B = rng.standard_normal((K, N)).astype(np.float32)
ref = A.astype(np.float64) @ B.astype(np.float64)
errors = {}
for label, launch in ladder.contenders():
    C = cuda.to_device(np.full((M, N), np.nan, np.float32))
    try:
        launch(cuda.to_device(A), cuda.to_device(B), C)
        errors[label] = float(np.linalg.norm(C.copy_to_host() - ref) / np.linalg.norm(ref))
    except Exception as exc:
        errors[label] = f"{type(exc).__name__}: {exc}"
print(json.dumps(errors))
"""


@pytest.mark.slow
def test_every_ladder_contender_runs_and_is_correct_in_the_simulator():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    p = subprocess.run([sys.executable, "-c", DRIVER], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    errors = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(errors) >= 10, errors
    bad = {label: e for label, e in errors.items() if not (isinstance(e, float) and e < 1e-5)}
    assert not bad, bad


@pytest.mark.slow
def test_the_top_rung_is_a_stage_5_submission_with_full_marks_in_the_simulator_tier(grade_text):
    """tools/ladder_kernels.py, graded as a student's stage 5 module: its GPU-only hints (16-byte-aligned shared
    arrays, max_registers, forceinline) are accepted by the simulator tier (sim/gpu_options.py), and it is correct
    at every simulated shape."""
    with open(os.path.join(ROOT, "tools", "ladder_kernels.py"), encoding="utf-8") as f:
        text = f.read()
    assert "float32, ALIGN)" in text and "max_registers=128" in text and "forceinline=True" in text
    r = grade_text("fast", text)
    assert r.score == r.max_score == 7, [(c.name, c.output[:300]) for c in r.checks]
