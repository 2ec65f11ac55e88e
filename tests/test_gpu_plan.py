"""On a GPU: a kernel launched from its plan is the kernel numba launches, and student Python never reaches a number.

- Every solution's plan launch (autograder/runner/plan_launch.py, numba-cuda internals pinned at 0.30.4) gives C
  bit for bit equal to numba's own launch of the same launcher, at every shape the stage grades below 2048.
- With the kernel-module grammar switched off (a test-only stand-in for shortcuts.judge), every hostile module of
  the grammar corpus gains nothing: the runners that check and time never import it.
- Kernels that scribble over their own inputs or read far outside them gain nothing either: what the checks
  compare with is the parent's, rebuilt from its own seeds.

Skipped, with the reason, on machines without an NVIDIA GPU (CI); run by `make gpu-check` on the GPU machine.
"""
import ast
import os

import numpy as np
import pytest

from autograder import engine, stages
from autograder.checks import shortcuts
from autograder.checks.titles import title
from autograder.engine.stage import StageGrader
from autograder.submission import StageSource
from conftest import ROOT, by_key, solution_text

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not engine.gpu_available(), reason="no NVIDIA GPU on this machine")]
HOSTILE_DIR = os.path.join(ROOT, "tests", "grammar", "hostile")


@pytest.mark.parametrize("stage", stages.STAGES, ids=lambda s: s.name)
def test_a_plan_launch_is_numbas_launch_bit_for_bit(cfg, tmp_path, stage):
    from numba import cuda
    from autograder.child.entry import load_student_module
    from autograder.runner.plan_launch import Loaded, launcher
    text = solution_text(stage.name)
    g = StageGrader(StageSource(stage, stage.filename, text), "gpu", cfg, np.random.default_rng(0), str(tmp_path))
    assert not g.build_alone().problem
    path = tmp_path / f"probe_{stage.module}.py"
    path.write_text(text, encoding="utf-8")
    module = load_student_module(str(path), f"probe_{stage.module}")
    loaded = Loaded(g.built["kernels"])
    rng = np.random.default_rng(7)
    shapes = [s for s in g.build_shapes() if max(s) < 2048]
    for M, K, N in shapes:
        A = cuda.to_device(rng.standard_normal((M, K)).astype(np.float32))
        B = cuda.to_device(rng.standard_normal((K, N)).astype(np.float32))
        ours, numbas = (cuda.to_device(np.full((M, N), np.nan, np.float32)) for _ in range(2))
        getattr(module, stage.launcher)(A, B, numbas)
        launcher(loaded, g.built["plans"][(M, K, N)]["launches"], A, B, ours)()
        cuda.synchronize()
        got, want = ours.copy_to_host(), numbas.copy_to_host()
        assert np.array_equal(got, want, equal_nan=True), (stage.name, (M, K, N), np.nanmax(np.abs(got - want)))
    numba_kernel = next(iter(getattr(module, stage.kernel).overloads.values()))
    theirs = numba_kernel._codelibrary.get_cufunc().attrs  # the same machine code: the same resources
    assert loaded.functions[0].attrs[:3] == theirs[:3], (loaded.functions[0].attrs, theirs)


def _kernel_does_nothing(text):
    tree = ast.parse(text)
    kernel = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.endswith("kernel"))
    body = [b for b in kernel.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    return all(isinstance(b, ast.Pass) for b in body)


@pytest.mark.parametrize("name", sorted(os.listdir(HOSTILE_DIR)))
def test_with_the_grammar_off_a_hostile_module_still_gains_nothing(grade_text, monkeypatch, name):
    """The grammar is the simulator tier's defence; on a GPU the runners never run student Python, so switching it
    off (only here) must not let a module forge a result: a kernel that computes nothing gets no correctness point,
    and no module gets a speedup beyond what a naive kernel measures (0.97x against the naive reference)."""
    def grammar_off(g):
        return g.check("shortcuts", title(g, "shortcuts")).verdict(True, "grammar off (test)"), []
    monkeypatch.setattr(shortcuts, "judge", grammar_off)
    with open(os.path.join(HOSTILE_DIR, name), encoding="utf-8") as f:
        text = f.read()
    r = grade_text("naive", text, device="gpu")
    correct = by_key(r, "correct")
    if _kernel_does_nothing(text):
        assert not any(c.status == "passed" for c in correct), [c.output[:200] for c in correct]
    speed = r.speed.get("naive")
    assert speed is None or speed["speedup"] < 1.2, speed
    print(f"grammar off: {name}: {r.score:g}/{r.max_score:g}", flush=True)


SCRIBBLER = '''"""Computes C, then overwrites A and B in a second kernel: the next check would see other inputs."""
import math

from numba import cuda, float32

BLOCK = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


@cuda.jit
def wipe_kernel(A, B, C):
    row, col = cuda.grid(2)
    if row < A.shape[0] and col < A.shape[1]:
        A[row, col] = 0.0
    if row < B.shape[0] and col < B.shape[1]:
        B[row, col] = 0.0


def matmul_naive(A, B, C):
    M, N = C.shape
    size = max(M, N, A.shape[1], B.shape[0])
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
    wipe_kernel[(math.ceil(size / BLOCK), math.ceil(size / BLOCK)), (BLOCK, BLOCK)](A, B, C)
'''

SCANNER = """Reads far past the end of C and keeps any finite value it finds there: a search of device memory for a
result the grader left on the GPU."""
SCANNER = '''"""Searches device memory past C for a result to copy."""
from numba import cuda


@cuda.jit
def matmul_naive_kernel(A, B, C):
    row, col = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        for step in range(1, 64):
            v = C[row + step * 4096, col]
            if v == v:
                C[row, col] = v


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[((N + 15) // 16, (M + 15) // 16), (16, 16)](A, B, C)
'''


@pytest.mark.parametrize("text, computes", [(SCRIBBLER, True), (SCANNER, False)], ids=["scribbler", "scanner"])
def test_a_kernel_that_writes_or_reads_past_its_operands_gains_nothing(grade_text, text, computes):
    """The expected results are the parent's (rebuilt from its seeds), never on the device: overwriting the inputs
    changes nothing the checks compare with, and no buffer holds a result to find."""
    r = grade_text("naive", text, device="gpu")
    correct = by_key(r, "correct")
    assert all(c.status == ("passed" if computes else "failed") for c in correct), [c.output[:300] for c in correct]
    speed = r.speed.get("naive")
    assert speed is None or speed["speedup"] < 1.2, speed
    print(f"{'scribbler' if computes else 'scanner'}: {r.score:g}/{r.max_score:g}", flush=True)
