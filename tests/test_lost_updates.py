"""Lost updates to C (autograder/sim/writes.py, judged by autograder/checks/correct.py) and the data-reuse bar of
kernels with several outputs per thread (autograder/checks/data_reuse.py).

Two threads of one launch that store to, or add into, the same element of C without an atomic lose an update on
a GPU; the simulator runs one thread at a time and shows none. The store tracker runs in a subprocess with
NUMBA_ENABLE_CUDASIM=1 (the flag must be set before numba is imported); the grade-level tests use the real
simulator-tier grader."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from autograder.checks import correct, data_reuse
from checkkit import FakeGrader, child_result
from conftest import ROOT, failed, mutate, passed
from course.mutants import KNOWN_BAD, SPLIT_K_ATOMIC, SPLIT_K_LANES

KERNELS = '''
import math
from numba import cuda, float32


@cuda.jit
def overwrite(C):                      # every thread of the block stores its own id into C[0, 0]
    tx = cuda.threadIdx.x
    C[0, 0] = float32(tx)


@cuda.jit
def add_in_two_lanes(C):               # lanes 2j and 2j + 1 add into C[0, j]
    j = cuda.threadIdx.x // 2
    C[0, j] += float32(1.0)


@cuda.jit
def one_store_each(C):
    j = cuda.threadIdx.x
    C[0, j] = float32(j)


@cuda.jit
def add_once_each(C):
    j = cuda.threadIdx.x
    C[0, j] += float32(1.0)


@cuda.jit
def atomics_only(C):
    cuda.atomic.add(C, (0, 0), float32(1.0))


@cuda.jit
def zero_then_atomics(C):              # a plain store and other threads' atomics in one launch
    if cuda.threadIdx.x == 0:
        C[0, 0] = float32(0.0)
    else:
        cuda.atomic.add(C, (0, 0), float32(1.0))


@cuda.jit
def through_a_row_view(C):             # C[0][j]: a view of the row, then its element
    j = cuda.threadIdx.x // 2
    C[0][j] = float32(cuda.threadIdx.x)


@cuda.jit
def same_thread_twice(C):
    j = cuda.threadIdx.x
    C[0, j] = float32(0.0)
    C[0, j] += float32(2.0)


@cuda.jit
def other_blocks(C):                   # block b stores C[0, 0] too: two blocks, one element
    C[0, cuda.threadIdx.x] = float32(cuda.blockIdx.x)


@cuda.jit
def read_the_neighbours(C):            # thread j stores C[0, j], then reads C[0, j + 1], which thread j + 1 stores
    j = cuda.threadIdx.x
    C[0, j] = float32(j)
    C[1, j] = C[0, (j + 1) % 8]


@cuda.jit
def read_the_last_launch(C):           # reads what an earlier launch wrote, stores its own element
    j = cuda.threadIdx.x
    C[1, j] = C[0, j] + float32(1.0)


@cuda.jit
def nanmax_then_add(C):                # thread 0 takes a nanmax into C[0, 0], the others add into it
    if cuda.threadIdx.x == 0:
        cuda.atomic.nanmax(C, (0, 0), float32(5.0))
    else:
        cuda.atomic.add(C, (0, 0), float32(1.0))


@cuda.jit
def zero_the_counter(C):
    C[1, 7] = float32(0.0)


@cuda.jit
def take_a_ticket(C):                  # a ticket from a counter in C, which nothing zeroed
    j = cuda.threadIdx.x
    ticket = cuda.atomic.add(C, (1, 7), float32(1.0))
    C[0, j] = ticket
'''

CASES = {  # name: (launches as (kernel, grid, block), C's shape)
    "overwrite": ([("overwrite", 1, 4)], (2, 8)),
    "add_in_two_lanes": ([("one_store_each", 1, 8), ("add_in_two_lanes", 1, 8)], (2, 8)),
    "two_launches": ([("one_store_each", 1, 8), ("add_once_each", 1, 8)], (2, 8)),
    "atomics_only": ([("one_store_each", 1, 8), ("atomics_only", 2, 8)], (2, 8)),
    "zero_then_atomics": ([("zero_then_atomics", 1, 8)], (2, 8)),
    "through_a_row_view": ([("through_a_row_view", 1, 8)], (2, 8)),
    "same_thread_twice": ([("same_thread_twice", 1, 8)], (2, 8)),
    "other_blocks": ([("other_blocks", 3, 2)], (2, 8)),
    "read_the_neighbours": ([("read_the_neighbours", 1, 8)], (2, 8)),
    "read_the_last_launch": ([("one_store_each", 1, 8), ("read_the_last_launch", 1, 8)], (2, 8)),
    "nanmax_then_add": ([("one_store_each", 1, 8), ("nanmax_then_add", 1, 8)], (2, 8)),
    # sampled runs (a few blocks of each launch simulated): reading what no simulated thread wrote
    "sampled: a ticket": ([("take_a_ticket", 1, 4)], (2, 8), "sampled"),
    "tickets": ([("zero_the_counter", 1, 1), ("take_a_ticket", 1, 4)], (2, 8)),
    "sampled: a ticket from a zeroed counter": ([("zero_the_counter", 1, 1), ("take_a_ticket", 1, 4)], (2, 8),
                                                "sampled"),
    "sampled: read the last launch": ([("one_store_each", 1, 8), ("read_the_last_launch", 1, 8)], (2, 8), "sampled"),
    "sampled: atomics into zeroed C": ([("one_store_each", 1, 8), ("atomics_only", 2, 8)], (2, 8), "sampled"),
}

DRIVER = r"""
import importlib.util, json, os, sys
assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
sys.path.insert(0, sys.argv[1])
import numpy as np
from numba import cuda
from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
from autograder.sim.writes import tracked
path, cases, sol = sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
spec = importlib.util.spec_from_file_location("kernels", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
out = {}
for name, (launches, shape, *sampled) in cases.items():
    C = cuda.to_device(np.zeros(shape, np.float32))
    with tracked(C, path, sampled=bool(sampled)) as log:
        for kernel, grid, block in launches:
            getattr(mod, kernel)[grid, block](C)
    out[name] = {"facts": log.facts(), "restored": type(C) is FakeCUDAArray}
spec = importlib.util.spec_from_file_location("s3", sol)
s3 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(s3)
A = cuda.to_device(np.ones((20, 7), np.float32))
B = cuda.to_device(np.ones((7, 19), np.float32))
C = cuda.to_device(np.zeros((20, 19), np.float32))
with tracked(C, sol) as log:
    s3.matmul_tiled_general(A, B, C)
out["s3"] = {"facts": log.facts(), "restored": type(C) is FakeCUDAArray, "right": bool((C.copy_to_host() == 7).all())}
print("@@" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    path = tmp_path_factory.mktemp("writes") / "kernels.py"
    path.write_text(KERNELS, encoding="utf-8")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, "-c", DRIVER, ROOT, str(path), json.dumps(CASES),
                           os.path.join(ROOT, "solutions", "s3_tiled_general.py")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("@@")), None)
    assert proc.returncode == 0 and line, f"driver failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    out = json.loads(line[2:])
    assert all(r["restored"] for r in out.values()), "C's class was not restored"
    return {name: r["facts"] for name, r in out.items()} | {"s3_right": out["s3"]["right"]}


def test_two_threads_storing_one_element_is_a_conflict_naming_both(tracked):
    f = tracked["overwrite"]
    assert f["count"] == 3 and f["elements"] == 1 and f["launches"] == 1, f
    ex = f["examples"][0]
    assert ex["index"] == [0, 0] and not ex["update"]
    assert ex["first"]["block"] == ex["second"]["block"] == [0, 0, 0]
    assert ex["first"]["thread"] != ex["second"]["thread"]
    assert ex["second"]["source"] == "C[0, 0] = float32(tx)" and ex["second"]["line"] == 9


def test_two_lanes_adding_into_one_element_is_an_update_conflict(tracked):
    f = tracked["add_in_two_lanes"]
    assert f["count"] == 4 and f["elements"] == 4 and f["launches"] == 2, f
    ex = f["examples"][0]
    assert ex["update"] and ex["second"]["source"] == "C[0, j] += float32(1.0)"
    lanes = sorted([ex["first"]["thread"][0], ex["second"]["thread"][0]])
    assert lanes[0] // 2 == lanes[1] // 2 == ex["index"][1] and lanes[0] != lanes[1]
    msg = correct.lost_update_message(f)
    assert f"two threads update C[0, {ex['index'][1]}] without cuda.atomic.add; on a GPU one update is lost" in msg
    assert "block (0, 0, 0) thread (" in msg and "line 15 (`C[0, j] += float32(1.0)`)" in msg, msg


@pytest.mark.parametrize("name", ["two_launches", "atomics_only", "same_thread_twice"])
def test_ordered_or_atomic_updates_are_no_conflict(tracked, name):
    """Launches run in order; atomics from many threads (and blocks) are indivisible; one thread owns its stores."""
    assert tracked[name]["count"] == 0 and tracked[name]["footprint"]["written"] > 0, tracked[name]


def test_a_plain_store_and_atomics_in_one_launch_conflict(tracked):
    """An atomic orders nothing against a plain store: zeroing C in the same launch as the atomics loses updates."""
    f = tracked["zero_then_atomics"]
    assert f["count"] > 0, f
    ex = f["examples"][0]
    assert ex["first"]["atomic"] != ex["second"]["atomic"]
    assert "an atomic orders nothing against a plain store" in correct.lost_update_message(f)


def test_stores_through_a_view_and_across_blocks_are_seen(tracked):
    assert tracked["through_a_row_view"]["count"] == 4, tracked["through_a_row_view"]
    f = tracked["other_blocks"]
    assert f["count"] == 4 and f["elements"] == 2, f
    assert {tuple(f["examples"][0][s]["block"]) for s in ("first", "second")} == {(0, 0, 0), (1, 0, 0)}


def test_a_read_of_what_another_thread_of_the_launch_writes_is_a_conflict(tracked):
    """Thread j reads C[0, j + 1], which thread j + 1 stores in the same launch: the simulator's fixed thread order
    decides what it reads, a GPU's does not. Reading what an earlier launch wrote is ordered."""
    f = tracked["read_the_neighbours"]
    assert f["count"] == 8 and f["elements"] == 8, f
    ex = f["examples"][0]
    assert ex["kind"] == "read" and ex["first"]["thread"] != ex["second"]["thread"], ex
    msg = correct.lost_update_message(f)
    assert "read by one thread of a launch and written by another" in msg, msg
    assert "thread (0, 0, 0) reads it at line" in msg and "(`C[1, j] = C[0, (j + 1) % 8]`)" in msg, msg
    assert "thread (1, 0, 0) writes it at line" in msg and "(`C[0, j] = float32(j)`)" in msg, msg
    assert tracked["read_the_last_launch"]["count"] == 0, tracked["read_the_last_launch"]


def test_two_different_atomics_on_one_element_are_a_conflict(tracked):
    """nanmax then add is not add then nanmax: two atomics of different kinds do not commute."""
    f = tracked["nanmax_then_add"]
    assert f["count"] >= 1 and f["elements"] == 1, f
    ex = f["examples"][0]
    assert ex["kind"] == "atomics" and ex["index"] == [0, 0], ex
    assert {ex["first"]["op"], ex["second"]["op"]} == {"nanmax", "add"}, ex
    msg = correct.lost_update_message(f)
    assert "through cuda.atomic.nanmax" in msg and "through cuda.atomic.add" in msg and "do not commute" in msg, msg


def test_a_sampled_block_reading_what_no_simulated_block_wrote_is_a_conflict(tracked):
    """In a sampled run the blocks not drawn do not run: a ticket from a counter in C (or a read of C elsewhere) is
    flagged, naming the reader; atomics into elements an earlier launch zeroed are not."""
    f = tracked["sampled: a ticket"]
    assert f["count"] >= 1, f
    ex = f["examples"][0]
    assert ex["kind"] == "unsimulated" and ex["index"] == [1, 7] and ex["first"] is None, ex
    msg = correct.lost_update_message(f)
    assert "C[1, 7]: block (0, 0, 0) thread (0, 0, 0) reads it through cuda.atomic.add at line" in msg, msg
    assert tracked["sampled: read the last launch"]["count"] == 0, tracked["sampled: read the last launch"]
    assert tracked["sampled: atomics into zeroed C"]["count"] == 0, tracked["sampled: atomics into zeroed C"]


def test_a_ticket_from_an_atomic_on_c_is_an_order_between_threads(tracked):
    """The old value an atomic on C returns, used (a ticket from a counter that an earlier launch zeroed), depends on
    the order of the threads: in a whole run once another thread updated it, in a sampled run always (the blocks
    that did not run take tickets too)."""
    f = tracked["tickets"]
    assert f["count"] == 3 and f["elements"] == 1, f
    ex = f["examples"][0]
    assert ex["kind"] == "ticket" and ex["index"] == [1, 7] and ex["first"]["thread"] == [0, 0, 0], ex
    assert ex["second"]["thread"] == [1, 0, 0] and ex["second"]["source"].startswith("ticket = cuda.atomic.add"), ex
    msg = correct.lost_update_message(f)
    assert "C[1, 7]" in msg and "returned" in msg and "thread (1, 0, 0) reads it through cuda.atomic.add" in msg, msg
    f = tracked["sampled: a ticket from a zeroed counter"]
    assert f["count"] == 4 and f["examples"][0]["kind"] == "ticket" and f["examples"][0]["first"] is None, f
    assert tracked["sampled: atomics into zeroed C"]["count"] == 0   # split-K's adds: their value unused


def test_footprint_of_a_tiled_kernel(tracked):
    """Stage 3 at 20 x 19, TILE 16: blocks of 16x16, 16x3, 4x16 and 4x3 outputs: 78 rows and columns in all."""
    f = tracked["s3"]
    assert tracked["s3_right"] and f["count"] == 0
    assert f["footprint"] == {"rows_plus_cols": 32 + 19 + 20 + 7, "blocks": 4, "written": 380}


# -- judged: correctness ------------------------------------------------------------------------------------------

def conflict_facts(update=True, count=12):
    side = {"block": [0, 0, 0], "line": 27, "source": "C[row, col] += acc", "atomic": False}
    return {"count": count, "elements": count, "launches": 2, "footprint": {"rows_plus_cols": 1, "blocks": 1, "written": 1},
            "examples": [{"index": [3, 5], "update": update, "first": {**side, "thread": [10, 3, 0]},
                          "second": {**side, "thread": [11, 3, 0]}}]}


def test_a_right_c_with_a_lost_update_fails_its_shape_group():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((8, 3)).astype(np.float32)
    B = rng.standard_normal((3, 6)).astype(np.float32)
    C = (A.astype(np.float64) @ B).astype(np.float32)
    inputs = {"A0": A, "B0": B, "A1": A, "B1": B}
    clean = child_result({"shapes": [{"c_writes": conflict_facts(count=0)}] * 2}, arrays={"C0": C, "C1": C})
    assert correct.judge(FakeGrader("naive"), "group", clean, inputs, 1).status == "passed"
    lost = child_result({"shapes": [{"c_writes": conflict_facts()}, {"c_writes": conflict_facts()}]},
                        arrays={"C0": C, "C1": C})
    c = correct.judge(FakeGrader("naive"), "group", lost, inputs, 1)
    assert c.status == "failed" and c.score == 0
    assert ("C[3, 5]: block (0, 0, 0) thread (10, 3, 0) at line 27 (`C[row, col] += acc`), then block (0, 0, 0) "
            "thread (11, 3, 0)") in c.output
    assert c.output.count("two threads update C[3, 5] without cuda.atomic.add; on a GPU one update is lost") == 1
    assert "12 elements of C were written by more than one thread" in c.output
    store = correct.lost_update_message(conflict_facts(update=False))
    assert "two threads store to C[3, 5] in the same launch" in store


def test_a_lost_update_in_the_instrumented_run_credits_no_counter():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((8, 3)).astype(np.float32)
    B = rng.standard_normal((3, 6)).astype(np.float32)
    C = (A.astype(np.float64) @ B).astype(np.float32)
    assert correct.instrumented_product(C, A, B, 1e-5, 16, 0, {"c_writes": conflict_facts(count=0)}) == ""
    why = correct.instrumented_product(C, A, B, 1e-5, 16, 0, {"c_writes": conflict_facts()})
    assert why.startswith("not credited") and "C[3, 5]" in why
    # the sampled run at the graded size too
    assert correct.sampled_product(C, A, B, 1e-5, 0, {"c_writes": conflict_facts(count=0)}) == ""
    why = correct.sampled_product(C, A, B, 1e-5, 0, {"c_writes": conflict_facts()})
    assert why.startswith("not credited") and "two threads update C[3, 5]" in why


@pytest.mark.slow
def test_two_lanes_adding_into_one_element_lose_their_correctness_points(grade_text):
    """Stage 1 with two lanes per element of C, each adding half of the K loop into it: 8/8 before."""
    r = grade_text("naive", KNOWN_BAD["two lanes add into one element"].text)
    out = failed(r, "correct")
    assert len([c for c in r.checks if c.key == "correct" and c.status == "failed"]) == 3, out
    line = KNOWN_BAD["two lanes add into one element"].text.splitlines().index("        C[row, col] += acc") + 1
    assert f"at line {line} (`C[row, col] += acc`), then block (" in out, out
    assert "two threads update C[0, 0] without cuda.atomic.add; on a GPU one update is lost" in out, out
    assert "C[0, 0]: block (0, 0, 0) thread (0, 0, 0) at" in out and "then block (0, 0, 0) thread (1, 0, 0) at" in out


@pytest.mark.slow
def test_split_k_through_atomics_keeps_every_point(grade_text):
    r = grade_text("naive", mutate("naive", *SPLIT_K_LANES, SPLIT_K_ATOMIC))
    passed(r, "correct")
    assert r.score == r.max_score, [c.output for c in r.checks if c.status == "failed"]


# -- judged: data reuse with several outputs per thread -----------------------------------------------------------

REGISTER_BLOCKED = '''"""Stage 3 with register blocking: each thread computes 2 x 2 outputs (rows ty and ty + TILE, columns tx and
tx + TILE), so a block of TILE x TILE threads covers 2 TILE x 2 TILE of C from TILE-wide shared tiles."""
import math

from numba import cuda, float32

TILE = 16  # the course allows 16 or 32
TILE2 = 2 * TILE


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array((TILE2, TILE), float32)
    sB = cuda.shared.array((TILE, TILE2), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE2 + ty
    col = cuda.blockIdx.x * TILE2 + tx
    M, K = A.shape
    N = B.shape[1]
    c00 = float32(0.0)
    c01 = float32(0.0)
    c10 = float32(0.0)
    c11 = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        ka = t * TILE + tx
        kb = t * TILE + ty
        sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
        sA[ty + TILE, tx] = A[row + TILE, ka] if row + TILE < M and ka < K else float32(0.0)
        sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)
        sB[ty, tx + TILE] = B[kb, col + TILE] if kb < K and col + TILE < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            a0 = sA[ty, k]
            a1 = sA[ty + TILE, k]
            b0 = sB[k, tx]
            b1 = sB[k, tx + TILE]
            c00 += a0 * b0
            c01 += a0 * b1
            c10 += a1 * b0
            c11 += a1 * b1
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = c00
    if row < M and col + TILE < N:
        C[row, col + TILE] = c01
    if row + TILE < M and col < N:
        C[row + TILE, col] = c10
    if row + TILE < M and col + TILE < N:
        C[row + TILE, col + TILE] = c11


def matmul_tiled_general(A, B, C):
    """Launch matmul_tiled_general_kernel: each block covers 2 TILE x 2 TILE outputs."""
    M, N = C.shape
    blocks = (math.ceil(N / TILE2), math.ceil(M / TILE2))
    matmul_tiled_general_kernel[blocks, (TILE, TILE)](A, B, C)
'''
# the same 2 x 2 outputs per thread, the products taken from A and B in global memory: no tiling
UNTILED_INNER = ("            a0 = sA[ty, k]\n            a1 = sA[ty + TILE, k]\n            b0 = sB[k, tx]\n"
                 "            b1 = sB[k, tx + TILE]\n",
                 "            kk = t * TILE + k\n"
                 "            a0 = A[row, kk] if row < M and kk < K else float32(0.0)\n"
                 "            a1 = A[row + TILE, kk] if row + TILE < M and kk < K else float32(0.0)\n"
                 "            b0 = B[kk, col] if kk < K and col < N else float32(0.0)\n"
                 "            b1 = B[kk, col + TILE] if kk < K and col + TILE < N else float32(0.0)\n")


@pytest.mark.slow
def test_two_by_two_outputs_per_thread_keep_every_point(grade_text):
    """A register-blocked stage 3 kernel reuses each load up to 2 TILE times: it failed data reuse as "loads were
    skipped" (more than TILE can reach)."""
    r = grade_text("tiled_general", REGISTER_BLOCKED)
    passed(r, "data_reuse")
    assert r.score == r.max_score, [c.output for c in r.checks if c.status == "failed"]


@pytest.mark.slow
def test_two_by_two_outputs_per_thread_from_global_memory_still_fail_data_reuse(grade_text):
    assert UNTILED_INNER[0] in REGISTER_BLOCKED
    r = grade_text("tiled_general", REGISTER_BLOCKED.replace(*UNTILED_INNER))
    passed(r, "correct")
    assert "too little data reuse" in failed(r, "data_reuse")


def reuse_facts(M, K, N, loads, rows_plus_cols, blocks):
    return {"shape": {"M": M, "K": K, "N": N},
            "c_writes": {"count": 0, "footprint": {"rows_plus_cols": rows_plus_cols, "blocks": blocks,
                                                   "written": M * N}},
            "global_loads": {"A": loads / 2, "B": loads / 2, "outputs": M * N, "loads_per_output": loads / (M * N),
                             "naive_loads_per_output": 2 * K, "reuse": 2 * K * M * N / loads,
                             "reuse_A": K * M * N / (loads / 2), "reuse_B": K * M * N / (loads / 2), "per_line": []}}


def test_the_skipped_loads_bar_follows_the_blocks_footprint():
    """64 x 64 x 64 in four blocks of 32 x 32 outputs (2 x 2 per thread at TILE 16): each block needs 32 rows of A and
    32 columns of B, 64 elements each: reuse 32, twice what TILE 16 reaches. Fewer loads than that were skipped."""
    M = K = N = 64
    need = K * 4 * (32 + 32)
    ok, msg = data_reuse.judge_sim(reuse_facts(M, K, N, need, 4 * 64, 4), 16, 0.5)
    assert ok and "more than TILE allows" in msg, msg
    ok, msg = data_reuse.judge_sim(reuse_facts(M, K, N, need * 3 // 4, 4 * 64, 4), 16, 0.5)
    assert not ok and "loads were skipped" in msg and "4 blocks spanning 256 rows and columns" in msg, msg
    # blocks of 16 x 16 outputs (16 of them) cannot reach 32: the TILE bar and the footprint agree
    ok, msg = data_reuse.judge_sim(reuse_facts(M, K, N, need, 16 * 32, 16), 16, 0.5)
    assert not ok and "loads were skipped" in msg, msg
    # a TILE the grader cannot read: the footprint still bounds the loads
    assert not data_reuse.judge_sim(reuse_facts(M, K, N, need, 16 * 32, 16), 16, 0.5, tile_known=False)[0]
    assert data_reuse.judge_sim(reuse_facts(M, K, N, need, 4 * 64, 4), 16, 0.5, tile_known=False)[0]
    # the sampled run at the graded size: two interior blocks of 32 x 32 outputs each, whole tiles
    sampled = reuse_facts(M, K, N, K * 2 * 64, 2 * 64, 2)
    sampled["global_loads"]["outputs"] = 2 * 1024
    sampled["global_loads"]["reuse"] = 2 * K * 2048 / (K * 2 * 64)
    sampled["sampled"] = {"blocks": [[[0, 0, 0], [1, 0, 0]]], "outputs": 2048}
    ok, msg = data_reuse.judge_sim(sampled, 16, 0.5)
    assert ok, msg
    sampled["global_loads"]["reuse"] *= 1.5
    assert not data_reuse.judge_sim(sampled, 16, 0.5)[0]
