"""Tests for the simulator's instruments (autograder/sim) and their judges (autograder/checks): races, bank
conflicts and data reuse.

Each kernel runs in a subprocess with NUMBA_ENABLE_CUDASIM=1 (the flag must be
set before numba is imported, and this test process may not have it). A small
driver loads the module by path, records its launches with
autograder.builder.launches.record_launches, runs autograder.sim.instrument.run_instrumented and
prints the facts plus the error of C against a float64 reference as JSON; the
tests then call the judge functions here, in a process without the simulator,
as the grader's parent does. The drivers run up front, two at a time, several
cases per process (which also checks that one instrumented run leaves the
simulator unpatched for the next).
"""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from autograder.checks import bank_conflicts, data_reuse, races
from course.mutants import KNOWN_BAD, mutate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOL = os.path.join(ROOT, "solutions")
KNOWN_BAD_CASES = {  # case name here: name in course/mutants.KNOWN_BAD
    "missing_second_barrier": "stage 2 without second barrier",
    "missing_first_barrier": "stage 2 without first barrier",
    "unpadded": "stage 4 unpadded",
    "fake_tiled": "fake tiling",
    "atomic_reads_no_second_barrier": "stage 3 atomic tile reads without second barrier",
    "slice_copies": "fake tiling through slices",
}
FIRST_BARRIER = ("        sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)\n        cuda.syncthreads()\n",
                 "        sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)\n")
ATOMIC_READS = ("acc += sA[ty, k] * sB[k, tx]",
                "acc += cuda.atomic.add(sA, (ty, k), float32(0.0)) * cuda.atomic.add(sB, (k, tx), float32(0.0))")
TEXTS = {  # more kernels of these tests, as mutations of the stage 3 solution
    # the tiles read through atomics, both barriers kept: no race
    "atomic_reads": lambda: mutate("tiled_general", ATOMIC_READS),
    # the tiles stored through cuda.atomic.exch, read plainly, no first barrier
    "atomic_stores_no_first_barrier": lambda: mutate(
        "tiled_general", ("sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)",
                          "cuda.atomic.exch(sA, (ty, tx), A[row, ka] if row < M and ka < K else float32(0.0))"),
        (FIRST_BARRIER[0], "        cuda.atomic.exch(sB, (ty, tx), B[kb, col] if kb < K and col < N else float32(0.0))\n")),
    # the tiles read in bulk (numpy copies the rows), no first barrier
    "bulk_tile_reads_no_first_barrier": lambda: mutate(
        "tiled_general", FIRST_BARRIER, ("        for k in range(TILE):\n            acc += sA[ty, k] * sB[k, tx]\n",
                                         "        a = cuda.local.array(TILE, float32)\n"
                                         "        b = cuda.local.array(TILE, float32)\n"
                                         "        a[:] = sA[ty, :]\n        b[:] = sB[:, tx]\n"
                                         "        for k in range(TILE):\n            acc += a[k] * b[k]\n")),
}

# name: (module path, launcher, (M, K, N)); the known-bad modules are written to a folder by `results`
CASES = {
    "s2": (os.path.join(SOL, "s2_tiled.py"), "matmul_tiled", (32, 32, 32)),
    "s3": (os.path.join(SOL, "s3_tiled_general.py"), "matmul_tiled_general", (32, 32, 32)),
    "s3_edges": (os.path.join(SOL, "s3_tiled_general.py"), "matmul_tiled_general", (17, 23, 19)),
    "s4": (os.path.join(SOL, "s4_tiled_transposed.py"), "matmul_tiled_transposed", (33, 17, 5)),
    "s5": (os.path.join(SOL, "s5_fast.py"), "matmul_fast", (33, 17, 5)),
    "missing_second_barrier": (None, "matmul_tiled", (32, 32, 32)),
    "missing_first_barrier": (None, "matmul_tiled", (32, 32, 32)),
    "unpadded": (None, "matmul_tiled_transposed", (33, 17, 5)),
    "fake_tiled": (None, "matmul_tiled", (32, 32, 32)),
    # one block, two tiles along K
    "atomic_reads_no_second_barrier": (None, "matmul_tiled_general", (16, 32, 16)),
    "atomic_reads": (None, "matmul_tiled_general", (16, 32, 16)),
    "atomic_stores_no_first_barrier": (None, "matmul_tiled_general", (16, 32, 16)),
    "bulk_tile_reads_no_first_barrier": (None, "matmul_tiled_general", (16, 32, 16)),
    "slice_copies": (None, "matmul_tiled", (16, 32, 16)),
}
# two driver processes of about equal work (the 1024-thread stage-4 blocks are the heavy ones)
GROUPS = [["s4", "s2", "missing_second_barrier", "fake_tiled", "s3_edges", "atomic_reads"],
          ["unpadded", "s5", "s3", "missing_first_barrier", "atomic_reads_no_second_barrier",
           "atomic_stores_no_first_barrier", "bulk_tile_reads_no_first_barrier", "slice_copies"]]

DRIVER = r"""
import importlib.util, json, os, sys
assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
sys.path.insert(0, sys.argv[1])
import numpy as np
from numba import cuda
from numba.cuda.simulator import kernel as sk, kernelapi as ka
from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
from autograder.builder import launches as L
from autograder.sim.instrument import run_instrumented

def hooks():
    return (ka.FakeCUDAShared.__dict__.get("array"), sk.BlockThread.__dict__.get("__init__"),
            sk.BlockThread.__dict__.get("run"), sk.BlockThread.__dict__.get("syncthreads"),
            sk.BlockManager.__dict__.get("run"))

out = {}
for case in json.loads(sys.argv[2]):
    name, path, launcher, (M, K, N) = case
    spec = importlib.util.spec_from_file_location("student_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(7)
    Ah = rng.standard_normal((M, K)).astype(np.float32)
    Bh = rng.standard_normal((K, N)).astype(np.float32)
    A, B = cuda.to_device(Ah), cuda.to_device(Bh)
    C = cuda.to_device(np.full((M, N), np.nan, np.float32))
    recorded = L.record_launches(mod, launcher, A, B, C)
    before = hooks()
    facts = run_instrumented(recorded, A, B, C, {"module_path": path, "instrument": True})
    ref = Ah.astype(np.float64) @ Bh.astype(np.float64)
    err = np.linalg.norm(C.copy_to_host().astype(np.float64) - ref) / np.linalg.norm(ref)
    out[name] = {"facts": json.loads(json.dumps(facts)), "rel_err": None if np.isnan(err) else float(err),
                 "restored": hooks() == before and type(A) is FakeCUDAArray and type(B) is FakeCUDAArray}
print("@@" + json.dumps(out))
"""


def _run_group(names, folder):
    cases = []
    for n in names:
        path, launcher, shape = CASES[n]
        if path is None:
            path = os.path.join(folder, n + ".py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(KNOWN_BAD[KNOWN_BAD_CASES[n]].text if n in KNOWN_BAD_CASES else TEXTS[n]())
        cases.append([n, path, launcher, list(shape)])
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, "-c", DRIVER, ROOT, json.dumps(cases)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("@@")), None)
    assert proc.returncode == 0 and line, f"driver failed for {names}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return json.loads(line[2:])


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("known_bad"))
    with ThreadPoolExecutor(max_workers=len(GROUPS)) as pool:
        out = {}
        for part in pool.map(lambda names: _run_group(names, folder), GROUPS):
            out.update(part)
    return out


def facts_of(results, name):
    r = results[name]
    assert r["restored"], f"{name}: run_instrumented left the simulator patched"
    return r["facts"]


# -- known-good solutions ---------------------------------------------------

@pytest.mark.parametrize("name", ["s2", "s3", "s3_edges", "s4", "s5"])
def test_solutions_pass_and_output_is_right(results, name):
    facts = facts_of(results, name)
    assert results[name]["rel_err"] is not None and results[name]["rel_err"] < 1e-5
    ok, msg = races.judge_sim(facts)
    assert ok, msg
    assert facts["races"]["count"] == 0
    ok, msg = bank_conflicts.judge_sim(facts)
    assert ok, msg
    assert facts["shared_accesses"] > 0 and not facts["truncated"]
    assert facts["barriers"]["min"] == facts["barriers"]["max"] > 0


@pytest.mark.parametrize("name", ["s2", "s3"])
def test_tiled_solutions_reuse_data(results, name):
    facts = facts_of(results, name)
    assert facts["global_loads"]["reuse"] == pytest.approx(16.0)   # TILE = 16 at 32 x 32 x 32
    ok, msg = data_reuse.judge_sim(facts, 16, 0.5)
    assert ok, msg


def test_padded_transposed_tile_is_conflict_free(results):
    facts = facts_of(results, "s4")
    rows = [r for r in facts["bank_conflicts"] if r["array"].startswith("sBT")]
    assert {r["access"] for r in rows} == {"load", "store"}
    assert all(r["max_degree"] == 1 and r["extra_wavefronts"] == 0 for r in rows), rows
    assert facts["shared_arrays"][1]["shape"] == [32, 33]


# -- known-bad kernels ------------------------------------------------------

def test_missing_second_barrier_is_a_race(results):
    facts = facts_of(results, "missing_second_barrier")
    ok, msg = races.judge_sim(facts)
    assert not ok
    assert facts["races"]["count"] > 0
    ex = facts["races"]["examples"][0]
    assert ex["kind"] == "write-after-read"
    assert ex["first"]["thread"] != ex["second"]["thread"]
    assert ex["first"]["access"] == "read" and ex["second"]["access"] == "write"
    assert "sA" in msg and "write-after-read" in msg
    assert "missing cuda.syncthreads() after the inner product loop" in msg
    assert f"line {ex['second']['line']}" in msg and "sA[ty, tx] = A[row, t * TILE + tx]" in msg
    # everything else about it is fine
    assert bank_conflicts.judge_sim(facts)[0]
    assert data_reuse.judge_sim(facts, 16, 0.5)[0]


def test_missing_first_barrier_is_a_race(results):
    facts = facts_of(results, "missing_first_barrier")
    ok, msg = races.judge_sim(facts)
    assert not ok
    assert facts["races"]["examples"][0]["kind"] == "read-after-write"
    assert "read-after-write" in msg and "between storing the tile" in msg


def test_unpadded_transposed_tile_has_32_way_conflicts(results):
    facts = facts_of(results, "unpadded")
    assert results["unpadded"]["rel_err"] < 1e-5          # right answer, just slow
    assert races.judge_sim(facts)[0]
    loads = [r for r in facts["bank_conflicts"] if r["array"].startswith("sBT") and r["access"] == "load"]
    assert len(loads) == 1 and loads[0]["max_degree"] == 32 and loads[0]["mean_degree"] == 32
    ok, msg = bank_conflicts.judge_sim(facts)
    assert not ok
    assert "sBT" in msg and "32-way" in msg and "TILE_PAD = TILE + 1" in msg
    assert f"line {loads[0]['line']}" in msg


def test_fake_tiled_kernel_fails_data_reuse(results):
    facts = facts_of(results, "fake_tiled")
    assert results["fake_tiled"]["rel_err"] < 1e-5
    assert races.judge_sim(facts)[0] and bank_conflicts.judge_sim(facts)[0]
    assert facts["global_loads"]["reuse"] < 1.0            # 2K + 2K/TILE loads per output
    ok, msg = data_reuse.judge_sim(facts, 16, 0.5)
    assert not ok
    assert "reads operands from global memory instead of the shared tiles" in msg
    assert "A[row, t * TILE + k] * B[t * TILE + k, col]" in msg


# -- judges alone -----------------------------------------------------------

def test_judges_do_not_import_numba():
    code = ("import sys; import autograder.checks.races, autograder.checks.bank_conflicts, autograder.checks.data_reuse; "
            "assert 'numba' not in sys.modules and 'numpy' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_judges_handle_missing_facts():
    for judge in (races.judge_sim, bank_conflicts.judge_sim):
        ok, msg = judge({})
        assert not ok and "no facts" in msg
    ok, msg = data_reuse.judge_sim({}, 16, 0.5)
    assert not ok


# -- atomics and reads in bulk ------------------------------------------------

def test_tiles_read_through_atomics_still_race_without_the_second_barrier(results):
    """Atomic accesses were left out of the race detector: a tile read through cuda.atomic.add(sA, (ty, k), 0) with a
    barrier missing passed. An atomic and another thread's plain access race; two atomics do not."""
    facts = facts_of(results, "atomic_reads_no_second_barrier")
    ok, msg = races.judge_sim(facts)
    assert not ok and facts["races"]["count"] > 0
    ex = facts["races"]["examples"][0]
    assert ex["kind"] == "write-after-read" and ex["first"]["atomic"] and not ex["second"]["atomic"], ex
    assert "reads (cuda.atomic.*) it at" in msg and "An atomic (cuda.atomic.*) makes its own update indivisible" in msg
    assert "missing cuda.syncthreads() after the inner product loop" in msg
    # with both barriers the same atomic reads are race-free, and right
    facts = facts_of(results, "atomic_reads")
    assert results["atomic_reads"]["rel_err"] < 1e-5
    ok, msg = races.judge_sim(facts)
    assert ok and facts["races"]["count"] == 0, msg


def test_tiles_stored_through_atomics_race_with_plain_reads_without_the_first_barrier(results):
    facts = facts_of(results, "atomic_stores_no_first_barrier")
    ok, msg = races.judge_sim(facts)
    assert not ok
    ex = facts["races"]["examples"][0]
    assert ex["kind"] == "read-after-write" and ex["first"]["atomic"] and ex["first"]["access"] == "write", ex
    assert "updates (cuda.atomic.*) it at" in msg and "between storing the tile" in msg


def test_tiles_read_in_bulk_are_logged(results):
    """a[:] = sA[ty, :] read the whole row through numpy without a logged access: no race could be seen."""
    facts = facts_of(results, "bulk_tile_reads_no_first_barrier")
    ok, msg = races.judge_sim(facts)
    assert not ok and facts["races"]["kinds"].get("read-after-write"), facts["races"]
    assert "a[:] = sA[ty, :]" in msg or "b[:] = sB[:, tx]" in msg, msg


def test_loads_through_slice_copies_count(results):
    """a[:] = A[row, k0:k1] copied the slice through numpy and counted no load: a naive kernel that also fills its
    tiles looked tiled (every load used 16 times at TILE 16)."""
    facts = facts_of(results, "slice_copies")
    g = facts["global_loads"]
    assert g["reuse"] < 1.0, g                       # 2K + 2K/TILE loads per output
    assert any(p["source"] == "a[:] = A[row, t * TILE:(t + 1) * TILE]" for p in g["per_line"]), g["per_line"]
    ok, msg = data_reuse.judge_sim(facts, 16, 0.5)
    assert not ok and "reads operands from global memory instead of the shared tiles" in msg, msg
