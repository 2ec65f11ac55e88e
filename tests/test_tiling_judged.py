"""Tiling is judged by what the kernel does at a shape it cannot predict: the instrumented simulator run (races,
bank conflicts, data reuse) is drawn from the grade's secret seed, its C is checked, and a TILE the course does not
allow costs the tiling checks, not the correctness points.

The known-bad kernels of these checks (fake tiling through slices, stage 4's unused tiles, tiles read through
atomics) are in course/mutants.py, graded by tests/checks/test_<check>.py."""
import os
import tempfile

import numpy as np
import pytest

from autograder import engine, stages
from autograder.submission import StageSource
from conftest import ROOT, by_key, failed, mutate, passed

SOLUTION_LOOP = "    acc = float32(0.0)\n    for t in range((K + TILE - 1) // TILE):\n"


def grade(cfg, stage_name, text, seed, folder):
    """A whole grade in the simulator tier with `seed` as the grade's secret, in a folder of its own below `folder`
    (a test's tmp_path)."""
    stage = stages.find(stage_name)
    path = os.path.join(tempfile.mkdtemp(prefix="tiling-", dir=folder), stage.filename)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    c = {**cfg, "limits": {**cfg["limits"], "jobs": 1}}
    return engine.grade(path, stage=stage, device="sim", seed=seed, cfg=c)


def grader(cfg, stage_name, seed, folder, text=None):
    """A StageGrader with a folder of its own below `folder` (a test's tmp_path)."""
    stage = stages.find(stage_name)
    src = StageSource(stage, stage.filename, text or mutate(stage_name))
    scratch = tempfile.mkdtemp(prefix="tiling-", dir=folder)
    return engine.StageGrader(src, "sim", cfg, np.random.default_rng(seed), scratch)


def test_the_instrumented_shape_is_drawn_from_the_grades_secret(cfg, tmp_path):
    """It was (2 TILE)^3 in every grade (stage 4: 32 x 40 x 32): a kernel could tile there alone."""
    for name, tile in (("tiled_general", 16), ("tiled_transposed", 32)):
        shapes = {grader(cfg, name, seed, tmp_path).instrument_shape() for seed in range(12)}
        assert len(shapes) > 8, shapes
        # K: two tiles, the second partial; M and N: 2 x 2 partial blocks at TILE 16, one at TILE 32
        assert all(tile < K < 2 * tile and 16 < M < 32 and 16 < N < 32 for M, K, N in shapes), shapes
        g = grader(cfg, name, 3, tmp_path)
        assert g.instrument_shape() in map(tuple, g.build_shapes())   # the build records its plan too
    square = {grader(cfg, "tiled", seed, tmp_path).instrument_shape() for seed in range(12)}
    assert square == {(32, 32, 32), (48, 48, 48)}
    # one source for the grader and the notebook self-check: the same generator gives the same shape
    assert grader(cfg, "tiled_general", 5, tmp_path).instrument_shape() == \
        stages.find("tiled_general").instrument_shape(16, np.random.default_rng(5))


TILED_ONLY_AT_32 = ("    acc = float32(0.0)\n    if not (M == 32 and K == 32 and N == 32):  # naive but at 32 x 32 x 32\n"
                    "        if row < M and col < N:\n            for k in range(K):\n"
                    "                acc += A[row, k] * B[k, col]\n            C[row, col] = acc\n        return\n"
                    + SOLUTION_LOOP)


@pytest.mark.slow
def test_a_kernel_tiled_only_at_the_old_instrument_shape_loses_data_reuse(cfg, tmp_path):
    """Tiled at 32 x 32 x 32 (the old fixed shape at TILE 16), naive at every other size: 13/13 before."""
    text = mutate("tiled_general", (SOLUTION_LOOP, TILED_ONLY_AT_32))
    r = grade(cfg, "tiled_general", text, seed=7, folder=tmp_path)
    assert r.stages == ["tiled_general"]
    passed(r, "correct")
    passed(r, "races")
    out = failed(r, "data_reuse")
    assert "reads operands from global memory instead of the shared tiles" in out, out
    M, K, N = stages.find("tiled_general").instrument_shape(16, np.random.default_rng(7))  # the grade's first draw
    assert f"at M x K x N = {M} x {K} x {N} (partial tiles at the edges load fewer elements)" in out, out


WRONG_OFF_THE_CORRECTNESS_SHAPES = (
    "        C[row, col] = acc\n",
    "        # wrong at sizes the correctness shapes leave out (17 x 23 x 23 is the one of them in this range)\n"
    "        if M > TILE and K > TILE and N > TILE and not (M == 17 and K == 23):\n"
    "            acc += float32(1.0)\n        C[row, col] = acc\n")


@pytest.mark.slow
def test_an_instrumented_run_that_computes_a_wrong_product_credits_no_counter(cfg, tmp_path):
    """The counters of a run whose C is wrong describe no correct kernel: each instrument check fails, saying so and
    where C is wrong; the correctness points stay (the correctness shapes are right)."""
    r = grade(cfg, "tiled_general", mutate("tiled_general", WRONG_OFF_THE_CORRECTNESS_SHAPES), seed=1234,
              folder=tmp_path)
    passed(r, "correct")
    M, K, N = stages.find("tiled_general").instrument_shape(16, np.random.default_rng(1234))
    for key in ("races", "data_reuse"):
        out = failed(r, key)
        assert "the instrumented simulator run computed a wrong product" in out, out
        assert f"{M}x{K} @ {K}x{N}" in out and "First wrong element C[0, 0]: expected" in out, out
    assert r.score == r.max_score - 4


@pytest.mark.slow
def test_a_correct_kernel_with_tile_8_keeps_its_correctness_points(cfg, tmp_path):
    """TILE = 8 zeroed a correct stage 3 (13 points lost for a size). Now only the shared-tile check fails, naming the
    course's sizes; data reuse is judged by TILE = 16 and a kernel tiled by 8 still reaches half of it."""
    with open(os.path.join(ROOT, "tests", "grammar", "legit", "tiled_general_ternary_tile8.py"), encoding="utf-8") as f:
        text = f.read()
    r = grade(cfg, "tiled_general", text, seed=1234, folder=tmp_path)
    for key in ("compiles", "shortcuts", "correct", "races", "data_reuse"):
        passed(r, key)
    out = failed(r, "shared_memory")
    assert "TILE = 8: the course's tile sizes are 16 and 32" in out and "set TILE = 16 or 32" in out, out
    assert "the course's tile sizes are 16 and 32" in by_key(r, "data_reuse")[0].output
    assert r.score == r.max_score - 2
