"""A simulated block's threads as greenlets (autograder/sim/green.py) give what threads give, several times faster.

Each case runs in a subprocess with NUMBA_ENABLE_CUDASIM=1 (the flag must be set before numba is imported), once
with greenlets and once with greenlet hidden (the counting barrier of sim/barrier.py that a student's environment
without greenlet falls back to)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = r'''
import json, sys, time
if sys.argv[1] == "threads":
    sys.modules["greenlet"] = None          # as where greenlet is not installed
import numpy as np
from numba import cuda, float32
from autograder.sim.green import install
from autograder.sim.warp import install as install_warp
mode = install()
install_warp()
sys.path.insert(0, "solutions")
from s4_tiled_transposed import matmul_tiled_transposed


@cuda.jit
def early_exit(C):                  # the threads of the last warp end before the barrier: it opens for the others
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    if t >= 32:
        return
    s[t] = float32(t)
    cuda.syncthreads()
    C[0, t] = s[31 - t]


@cuda.jit
def who(C):                          # threading.current_thread() is the running CUDA thread
    C[cuda.threadIdx.y, cuda.threadIdx.x] = float32(cuda.threadIdx.y * 100 + cuda.threadIdx.x)
    cuda.syncthreads()
    C[cuda.threadIdx.y, cuda.threadIdx.x] += float32(cuda.blockIdx.x)


@cuda.jit
def fails_in_one(C):
    t = cuda.threadIdx.x
    cuda.syncthreads()
    if t == 5:
        C[99, 99] = float32(1.0)    # out of range: this thread raises, the block aborts
    cuda.syncthreads()
    C[0, t] = float32(1.0)


@cuda.jit
def shuffle(C):
    t = cuda.threadIdx.x
    C[0, t] = cuda.shfl_down_sync(0xFFFFFFFF, float32(t), 1)


out = {"mode": mode}
rng = np.random.default_rng(0)
A = rng.standard_normal((40, 40), dtype=np.float32)
B = rng.standard_normal((40, 40), dtype=np.float32)
C = np.zeros((40, 40), np.float32)
import threading
seen, done = set(), threading.Event()
def elsewhere():                     # another OS thread (a notebook's kernel has several) keeps its own thread
    while not done.is_set():
        seen.add(type(threading.current_thread()).__name__)
        time.sleep(0.001)
watcher = threading.Thread(target=elsewhere)
watcher.start()
started = time.perf_counter()
matmul_tiled_transposed(A, B, C)
out["tiled_s"] = time.perf_counter() - started
done.set()
watcher.join()
out["seen_elsewhere"] = sorted(seen)
out["tiled_err"] = float(np.abs(C - A.astype(np.float64) @ B.astype(np.float64)).max())
C = np.zeros((1, 64), np.float32)
early_exit[1, 64](C)
out["early_exit"] = C[0, :32].tolist()
C = np.zeros((4, 8), np.float32)
who[3, (8, 4)](C)
out["who"] = C.tolist()
C = np.zeros((2, 64), np.float32)
try:
    fails_in_one[1, 64](C)
    out["fails"] = None
except Exception as exc:
    out["fails"] = str(exc)
C = np.zeros((1, 32), np.float32)
shuffle[1, 32](C)          # the next launch runs as if nothing had failed
out["shuffle"] = C[0].tolist()
print(json.dumps(out))
'''


def simulate(mode):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs():
    return {mode: simulate(mode) for mode in ("green", "threads")}


@pytest.mark.parametrize("mode", ["green", "threads"])
def test_a_block_computes_the_same_in_both_modes(runs, mode):
    out = runs[mode]
    assert out["mode"] == mode
    assert out["tiled_err"] < 1e-4
    assert out["early_exit"] == [float(31 - t) for t in range(32)]
    assert out["who"] == [[y * 100 + x + 2 for x in range(8)] for y in range(4)]   # the last block's writes remain
    assert out["fails"] and "tid=[5, 0, 0]" in out["fails"], out["fails"]
    assert out["shuffle"] == [float(t + 1) for t in range(31)] + [31.0]
    assert out["seen_elsewhere"] == ["Thread"], "another OS thread saw a simulated thread as its own"


def test_greenlets_are_faster_than_threads(runs):
    """Stage 4's 1024-thread blocks: 0.23 s a block with greenlets, 1.2 s with threads (2-core machine)."""
    assert runs["green"]["tiled_s"] * 2 < runs["threads"]["tiled_s"], runs
