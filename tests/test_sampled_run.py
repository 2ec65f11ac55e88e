"""The sampled simulator run (a few blocks of each launch at the timed size's grid, engine/sampling.py) judges what
a GPU runs, whatever the kernel's style: every honest style earns every point, and a kernel that tells the sampled
run from the graded one loses what it did not earn. The kernels are in tests/sampled/, each saying what it does."""
import os

import pytest

from autograder.engine import sampling
from conftest import ROOT, failed, passed

HONEST = ["split_k_atomic.py", "persistent.py", "double_buffer.py", "two_rows.py"]
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


def kernel(name):
    with open(os.path.join(ROOT, "tests", "sampled", name), encoding="utf-8") as f:
        return f.read()


@pytest.mark.slow
@pytest.mark.parametrize("name", HONEST)
def test_honest_styles_earn_every_point(grade_text, name):
    """Split-K with atomics over gridDim.z (9/13 before: z = 1 never ran), a persistent grid-stride kernel (stopped as
    a kernel that never ends on a busy machine before), double buffering with one barrier, two rows per thread."""
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
