"""The simulator tier accepts the options that only tune GPU code (autograder/sim/gpu_options.py).

numba-cuda's simulator raises for `cuda.shared.array(shape, dtype, alignment)`, `cuda.local.array(..., alignment)`,
`@cuda.jit(max_registers=...)` and `forceinline=True`; a kernel tuned for the GPU then failed every check of the
simulator tier. With them accepted, each shared array must still be its own (the simulator tells them apart by the
line that asks for one): two aligned tiles that alias would give wrong products, not full marks.
"""
import os
import subprocess
import sys

import pytest

from conftest import ROOT, solution_text

TUNED = [("@cuda.jit\ndef matmul_tiled_kernel", "@cuda.jit(max_registers=64, lineinfo=True)\ndef matmul_tiled_kernel"),
         ("cuda.shared.array((TILE, TILE), float32)", "cuda.shared.array((TILE, TILE), float32, 16)")]


def tuned_stage_2():
    text = solution_text("tiled")
    for old, new in TUNED:
        assert old in text, old
        text = text.replace(old, new)
    return text


@pytest.mark.slow
def test_a_stage_2_kernel_tuned_for_the_gpu_gets_full_marks_in_the_simulator_tier(grade_text):
    """Correctness runs, the instrumented run (races, data reuse) and the PTX compile all take the hints."""
    r = grade_text("tiled", tuned_stage_2())
    assert r.score == r.max_score == 13, [(c.name, c.output[:300]) for c in r.checks]


ALIASING = r"""
import numpy as np
from numba import cuda, float32
from autograder.sim.gpu_options import accept_gpu_options
accept_gpu_options()

@cuda.jit(device=True, forceinline=True)
def twice(x):
    return 2 * x

@cuda.jit(max_registers=32)
def kernel(out):
    a = cuda.shared.array(4, float32, 16)
    b = cuda.shared.array(4, float32, 16)
    loc = cuda.local.array(2, float32, 8)
    i = cuda.threadIdx.x
    a[i] = i
    b[i] = 10 + i
    loc[0] = twice(a[i])
    cuda.syncthreads()
    out[i] = loc[0] + b[i]

out = cuda.to_device(np.zeros(4, np.float32))
kernel[1, 4](out)
print(out.copy_to_host().tolist())
"""


def test_aligned_shared_arrays_stay_apart_in_the_simulator():
    """The patched shared.array keys each array by the kernel's line, not by the patch's own frame."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", ALIASING], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().splitlines()[-1] == str([10.0 + 3 * i for i in range(4)]), p.stdout
