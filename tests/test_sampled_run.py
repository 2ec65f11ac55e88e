"""The sampled simulator run (a few blocks of each launch at the timed size's grid, engine/sampling.py) judges what
a GPU runs, whatever the kernel's style: every honest style earns every point, and a kernel that tells the sampled
run from the graded one loses what it did not earn. The kernels are in tests/sampled/, each saying what it does."""
import os

import pytest

from autograder.engine import sampling
from conftest import ROOT, failed, passed

HONEST = ["split_k_atomic.py", "persistent.py", "double_buffer.py", "two_rows.py", "split_k_flat_zero.py"]
U = [0.3, 0.8, 0.6, 0.1, 0.5]  # the grade's secret draws


def test_blocks_are_drawn_from_each_launchs_own_grid_every_z_included():
    """A 1 x 1 decoy launch pinned the sample of every launch to block (0, 0, 0), and z was always 0."""
    decoy, real = {"grid": [1, 1, 1]}, {"grid": [128, 130, 1]}
    blocks, _ = sampling.draw([decoy, real], (2080, 64, 2048), 16, U)
    assert blocks[0] == [[0, 0, 0]]
    assert blocks[1] == [[37, 100, 0]], blocks   # one point: the decoy's one block is costed as the whole product
    blocks, _ = sampling.draw([real], (2080, 64, 2048), 16, U)
    assert blocks[0] == [[37, 100, 0], [74, 12, 0]], blocks   # away from the last row and column
    zero, split = {"grid": [128, 130, 1]}, {"grid": [128, 130, 4]}
    blocks, _ = sampling.draw([zero, split], (2080, 48, 2048), 16, U)
    assert blocks[1] == [[37, 100, z] for z in range(4)] + [[74, 12, z] for z in range(4)], blocks
    assert {tuple(b[:2]) for b in blocks[0]} == {tuple(b[:2]) for b in blocks[1]}  # the same part of C


def test_every_launch_runs_the_block_that_holds_the_same_point_of_c():
    """C zeroed by 32 x 32 blocks, then added into by 16 x 16 ones: the zeroed block holds the one that adds."""
    for u in ([0.3, 0.8, 0.6, 0.1, 0.5], [0.99, 0.0, 0.5, 0.999, 0.2], [0.0, 0.999, 0.7, 0.7, 0.9]):
        blocks, _ = sampling.draw([{"grid": [64, 65, 1]}, {"grid": [128, 130, 2]}], (2080, 32, 2048), 16, u)
        for (x, y, _), (x2, y2, _) in zip(blocks[0], blocks[1][::2]):
            assert 32 * x <= 16 * x2 < 16 * x2 + 16 <= 32 * x + 32 and 32 * y <= 16 * y2 < 16 * y2 + 16 <= 32 * y + 32
            assert x2 < 127 and y2 < 129   # whole tiles


def test_the_time_limit_follows_the_work_of_a_block():
    """A persistent kernel of 528 blocks at 2048 x 128 x 2048 does 31 tiles of C per block, each 1 + 128 / 16
    block-steps: it was given the time of one tile and stopped as a kernel that never ends on a busy machine."""
    shape = (2048, 128, 2048)
    _, one_tile = sampling.draw([{"grid": [128, 128, 1]}], shape, 16, U)
    blocks, persistent = sampling.draw([{"grid": [528, 1, 1]}], shape, 16, U)
    assert one_tile == 2 * 9 and len(blocks[0]) == 1 and persistent >= 31 * 9, (one_tile, persistent)
    _, split = sampling.draw([{"grid": [128, 128, 4]}], shape, 16, U)
    assert one_tile <= split <= one_tile + 2 * 4   # four slices of K, each a quarter of the work (rounded up)
    # 1024 threads through 32 of K per tile: 8 block-steps a tile
    assert sampling.block_steps(shape, (64, 64, 1), 32) == 8 * (1 + 128 // 32)


def test_every_slice_of_a_drawn_point_runs_however_many():
    """128 slices of K: 64 of them were drawn, so the sums were partial and a slice left out could hide anything.
    Every slice runs; the work is that of 128 blocks (one point where two would cost too much)."""
    shape, split = (2048, 240, 2048), {"grid": [128, 128, 128]}
    blocks, work = sampling.draw([split], shape, 16, U)
    assert blocks[0] == [[37, 99, z] for z in range(128)], blocks
    assert work == 128 * sampling.block_steps(shape, (128, 128, 128), 16)


def test_the_parts_of_c_are_the_tiled_launches_shares():
    """A flat 1-D launch stands for no part of C (its share is a band of rows); the product's 16 x 16 block does."""
    shape = (2032, 240, 2000)
    flat, product = {"grid": [(2032 * 2000 + 255) // 256]}, {"grid": [125, 127, 2]}
    blocks, _ = sampling.draw([flat, product], shape, 16, U)
    (x, y, _), = {tuple(b[:2]) + (0,) for b in blocks[1]}
    assert sampling.parts([flat, product], shape, blocks) == [[16 * y, 16 * y + 16, 16 * x, 16 * x + 16]]
    steps = sampling.cover_steps([flat, product], shape, 16, [[0, 16, 0, 16]])
    assert steps[0] >= 2 * 32 and steps[0] > steps[1] > 0   # a flat launch's blocks each cost little, but as many
    assert sampling.cover_steps([flat, product], shape, 16, []) == [0, 0]


def test_the_time_limit_follows_the_blocks_launched(cfg):
    """Split-K over 128 slices starts 128 blocks per tile of C, most with nothing to add: at the shapes of the
    correctness check the simulator needed minutes, and the limit (from the shape alone) stopped it at 29 s. A
    kernel of one block per tile keeps its limit."""
    from autograder.engine.plan import sim_seconds
    cfg = {**cfg, "limits": {**cfg["limits"], "check_timeout_s": 10 ** 4}}   # the outer bound, out of the way
    shapes = [(17, 23, 23), (33, 9, 31)]
    one = [[{"grid": [2, 2, 1], "block": [16, 16, 1]}], [{"grid": [2, 3, 1], "block": [16, 16, 1]}]]
    split = [[{"grid": [2, 2, 128], "block": [16, 16, 1]}], [{"grid": [2, 3, 128], "block": [16, 16, 1]}]]
    assert sim_seconds(cfg, 16, shapes, one) == sim_seconds(cfg, 16, shapes)
    # 127 blocks more for each of the 10 tiles of C, at sim_block_step_s (0.1) times sim_work_factor (2)
    assert sim_seconds(cfg, 16, shapes, split) == pytest.approx(sim_seconds(cfg, 16, shapes) + 2 * 0.1 * 127 * 10)


def test_a_zeroing_layout_the_sampled_run_cannot_follow_is_said():
    """A read of C no simulated block wrote, after a cheap launch whose blocks the sampled run could not find, says
    which launch, why and what to change."""
    from autograder.checks import correct
    facts = {"c_writes": {"count": 1, "elements": 1, "examples": [{
        "index": [5, 7], "kind": "unsimulated", "update": True, "first": None,
        "second": {"block": [0, 0, 0], "thread": [0, 0, 0], "line": 9, "source": "cuda.atomic.add(C, (r, c), a)",
                   "atomic": True, "op": "add", "access": "read"}}]},
        "sampled": {"cover": [{"launch": 0, "kernel": "zero_kernel", "blocks": 3, "why": "the reason"}]}}
    out = correct.sampled_product(None, None, None, 1e-5, facts=facts)
    assert "launch 1 (`zero_kernel`): the reason" in out and "one thread per element of C" in out, out
    facts["sampled"]["cover"][0]["why"] = ""
    assert "zero_kernel" not in correct.sampled_product(None, None, None, 1e-5, facts=facts)


def kernel(name):
    with open(os.path.join(ROOT, "tests", "sampled", name), encoding="utf-8") as f:
        return f.read()


@pytest.mark.slow
@pytest.mark.parametrize("name", HONEST)
def test_honest_styles_earn_every_point(grade_text, name):
    """Split-K with atomics over gridDim.z (9/13 before: z = 1 never ran), a persistent grid-stride kernel (stopped as
    a kernel that never ends on a busy machine before), double buffering with one barrier, two rows per thread,
    split-K after a flat 1-D zeroing launch (9/13 before: the blocks that add read elements no simulated block
    zeroed)."""
    r = grade_text("tiled_general", kernel(name))
    assert r.score == r.max_score, [(c.name, c.output) for c in r.checks if c.status == "failed"]
    for key in ("races", "data_reuse"):
        assert "At the graded size too" in passed(r, key)


@pytest.mark.slow
def test_split_k_after_a_zeroing_launch_of_larger_blocks_earns_every_point(grade_text):
    """C zeroed by 32 x 32 blocks, the slices of K added by 16 x 16 ones: the sampled run zeroes what it adds into."""
    text = kernel("split_k_atomic.py").replace("    zero_kernel[blocks, (TILE, TILE)](C)\n",
                                                "    zero_kernel[(math.ceil(N / 32), math.ceil(M / 32)), (32, 32)](C)\n")
    r = grade_text("tiled_general", text)
    assert r.score == r.max_score, [(c.name, c.output) for c in r.checks if c.status == "failed"]


@pytest.mark.slow
def test_a_decoy_launch_does_not_pick_the_blocks_sampled(grade_text):
    """A 1 x 1 launch first pinned the sample to block (0, 0, 0) of every launch: 13/13 for a kernel tiled there alone."""
    r = grade_text("tiled_general", kernel("decoy_launch.py"))
    passed(r, "correct")
    out = failed(r, "data_reuse")
    assert "the timed size's grid" in out and "reads operands from global memory instead of the shared tiles" in out, out


@pytest.mark.slow
def test_a_block_that_reads_what_another_block_writes_fails_correctness(grade_text):
    """Each block reads C[0, 0], which block (0, 0) writes: the simulator's fixed block order decides what it reads, a
    GPU's does not (13/13 before)."""
    r = grade_text("tiled_general", kernel("reads_c_elsewhere.py"))
    out = failed(r, "correct")
    assert "read by one thread of a launch and written by another. C[0, 0]: block (0, 0, 0) thread (0, 0, 0)" in out, out
    assert "writes it at line" in out and "reads it at line" in out and "`C[row, col] = acc`" in out, out
    for key in ("races", "data_reuse"):
        assert "depend on each other through C" in failed(r, key)


@pytest.mark.slow
def test_a_block_that_reads_c_only_at_the_graded_size_loses_the_structure_points(grade_text):
    """The same, reading C[0, 0] only past the small sizes: in the sampled run no other block ran, so the fill told it
    that it ran alone and it tiled (13/13 before). Reading a part of C that no simulated block wrote fails."""
    text = kernel("reads_c_elsewhere.py").replace("alone = math.isnan(C[0, 0]) or", "alone = M <= 64 or math.isnan(C[0, 0]) or")
    r = grade_text("tiled_general", text)
    passed(r, "correct")
    for key in ("races", "data_reuse"):
        out = failed(r, key)
        assert "the timed size's grid" in out and "no block the sampled run simulated wrote it first" in out, out
        assert "C[0, 0]: block (" in out and "reads it at line" in out and "math.isnan(C[0, 0])" in out, out


@pytest.mark.slow
def test_a_ticket_from_a_counter_in_c_loses_the_structure_points(grade_text):
    """Past the small sizes each thread takes a ticket from a counter in C (zeroed by a launch of one block) and tiles
    only when it came early, as in the sampled run, where the blocks not drawn take none (13/13 before)."""
    r = grade_text("tiled_general", kernel("ticket_counter.py"))
    passed(r, "correct")
    for key in ("races", "data_reuse"):
        out = failed(r, key)
        assert "the timed size's grid" in out and "C[0, 0]" in out and "returned old value a thread then used" in out
        assert "reads it through cuda.atomic.add at line" in out and "ticket = cuda.atomic.add(C, (0, 0)" in out, out


NANMAX_THEN_ADD = ("        cuda.atomic.add(C, (row, col), acc)\n",
                   "        if cuda.blockIdx.z == 0:  # C starts as NaN: the first slice takes it over by a nanmax\n"
                   "            cuda.atomic.nanmax(C, (row, col), acc)\n"
                   "        else:\n            cuda.atomic.add(C, (row, col), acc)\n")


@pytest.mark.slow
def test_split_k_mixing_two_atomics_on_one_element_fails_correctness(grade_text):
    """Slice 0 takes C's NaN over by cuda.atomic.nanmax, slice 1 adds: right in the simulator, which runs z = 0 first;
    on a GPU an add before the nanmax leaves NaN + x, which the nanmax then replaces (13/13 before)."""
    text = kernel("split_k_atomic.py").replace(*NANMAX_THEN_ADD).replace("    zero_kernel[blocks, (TILE, TILE)](C)\n", "")
    r = grade_text("tiled_general", text)
    out = failed(r, "correct")
    assert "Mixed atomics" in out and "through cuda.atomic.nanmax at line" in out, out
    assert "through cuda.atomic.add at line" in out and "do not commute" in out, out


FLAT = ("    i = cuda.grid(1)\n    if i < C.size:\n        C[i // C.shape[1], i % C.shape[1]] = float32(0.0)\n",
        "    zero_kernel[(M * N + 255) // 256, 256](C)\n")
LAYOUTS = {   # the zeroing kernel's body and its launch
    "column-major": ("    i = cuda.grid(1)\n    if i < C.size:\n"
                     "        C[i % C.shape[0], i // C.shape[0]] = float32(0.0)\n", FLAT[1]),
    "grid-stride": ("    for i in range(cuda.grid(1), C.size, cuda.gridsize(1)):\n"
                    "        C[i // C.shape[1], i % C.shape[1]] = float32(0.0)\n",
                    "    zero_kernel[min(512, (M * N + 255) // 256), 256](C)\n"),
    "transposed 2-D": ("    row, col = cuda.grid(2)\n    if row < C.shape[0] and col < C.shape[1]:\n"
                       "        C[row, col] = float32(0.0)\n",
                       "    zero_kernel[(math.ceil(M / 8), math.ceil(N / 32)), (8, 32)](C)\n"),
}


def zeroed(layout):
    """split_k_flat_zero.py with its zeroing launch laid over C as `layout` says."""
    text = kernel("split_k_flat_zero.py")
    assert FLAT[0] in text and FLAT[1] in text
    return text.replace(FLAT[0], LAYOUTS[layout][0]).replace(FLAT[1], LAYOUTS[layout][1])


@pytest.mark.slow
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_split_k_after_a_zeroing_launch_of_any_layout_earns_every_point(grade_text, layout):
    """C zeroed column by column, by at most 512 blocks striding over it (31 elements a thread at the timed size), or
    by a 2-D grid with x along the rows: the sampled
    run finds the zeroing blocks that write the part of C it judges from what block 0 and its neighbours wrote
    (9/13 before: the blocks that add read elements no simulated block zeroed)."""
    r = grade_text("tiled_general", zeroed(layout))
    assert r.score == r.max_score, [(c.name, c.output) for c in r.checks if c.status == "failed"]
    for key in ("races", "data_reuse"):
        assert "At the graded size too" in passed(r, key)


@pytest.mark.slow
def test_a_zeroing_launch_that_computes_the_product_is_no_cheap_launch(grade_text):
    """A flat launch laid out like an honest zeroing one computes the product naively past the small sizes, and the
    tiled kernel after it adds nothing there: its loads count, and it loses data reuse alone."""
    r = grade_text("tiled_general", kernel("zero_does_product.py"))
    assert [c.key for c in r.checks if c.status == "failed"] == ["data_reuse"], [
        (c.name, c.output) for c in r.checks if c.status == "failed"]
    out = failed(r, "data_reuse")
    assert "the timed size's grid" in out and "(`acc += A[row, k] * B[k, col]`) loads A 240 and B 240 times" in out, out


@pytest.mark.slow
def test_split_k_over_128_slices_earns_every_point(grade_text):
    """gridDim.z = 128: the sampled run drew 64 of its slices (partial sums: wrong elements), and the correctness
    check's limit (from the shape alone) stopped its 128 blocks per tile (3/13 before). Its blocks cost the
    simulator minutes: the limits follow them."""
    r = grade_text("tiled_general", kernel("split_k_128.py"))
    assert r.score == r.max_score, [(c.name, c.output) for c in r.checks if c.status == "failed"]
    for key in ("races", "data_reuse"):
        assert "At the graded size too" in passed(r, key)


@pytest.mark.slow
def test_a_naive_product_in_the_slices_past_64_loses_data_reuse(grade_text):
    """Slices 64-127 read A and B straight past the small sizes: every slice of a drawn (x, y) runs, and the kernel
    loses data reuse alone (9/13 before, for wrong elements in a sample of 64 slices)."""
    r = grade_text("tiled_general", kernel("hidden_slices.py"))
    assert [c.key for c in r.checks if c.status == "failed"] == ["data_reuse"], [
        (c.name, c.output) for c in r.checks if c.status == "failed"]
    out = failed(r, "data_reuse")
    assert "the timed size's grid" in out and "acc += A[row, k] * B[k, col]" in out, out
    assert "At the graded size too" in passed(r, "races")
