"""Trusted parent side: which blocks of each launch the sampled simulator run simulates (run_structure), and the work
they cost. Pure: the recorded launches, the shape and the grade's secret draws in, blocks and block-steps out.

Blocks are drawn for each launch from its own grid, so a decoy launch or a second launch in another mode is sampled in
its own right. The grade draws points of C; each launch runs the block whose share of C (its grid laid over C) holds
the point, so a launch that zeroes C and a launch that adds into it touch the same elements, even with blocks of other
sizes (32 x 32 blocks hold 16 x 16 ones). Every z of a drawn (x, y) runs (split-K over gridDim.z sums all its
slices), up to MAX_Z of them."""
import math

import numpy as np

MAX_Z = 64            # z slices simulated per drawn (x, y); more are drawn from
SAMPLE_STEPS = 24     # block-steps (a 16 x 16 block through 16 of K) the sample may cost before it draws one position
UNIT = 16 ** 3        # multiply-adds of one block-step
EDGE = 64             # the points of C lie this far from its last row and column: a block of up to 64 x 64 outputs
                      # that holds one is whole (the last row and column of blocks may be partial tiles)


def block_steps(shape, grid, tile):
    """Block-steps one block of a launch of `grid` does where its blocks share the product M x K x N evenly (plus one
    step of loading per tile of outputs): a 16 x 16 block over K costs 1 + K / 16 steps (a 32 x 32 block 8 (1 + K / 32):
    4 times the threads, each twice as deep a tile), a persistent block that covers many tiles as many times more, a
    split-K block 1 / gridDim.z of it."""
    M, K, N = shape
    t = tile or 16
    return max(1, math.ceil(M * N * (K + t) / (math.prod(grid) * UNIT)))


def draw(launches, shape, tile, fractions):
    """([blocks of launch 0, blocks of launch 1, ...], block-steps in all) for the recorded `launches` (dicts with
    "grid") at `shape`; `fractions`: the grade's secret draws in [0, 1), at least 5. The points of C avoid each grid's
    last row and column of blocks (whole tiles there); one point where two would cost more than SAMPLE_STEPS (a large
    K, a persistent block covering many tiles, a launch of one block)."""
    M, _, N = shape
    u = [float(f) for f in fractions]
    pairs = [(u[0], u[1]), (u[2], u[3])]

    def block(frac, size, blocks):   # the block of `blocks` across `size` that holds the drawn point
        share = -(-size // blocks)
        return min(max(0, blocks - 2), int(frac * max(0, size - EDGE) // share))
    pick = np.random.default_rng(int(u[4] * 2 ** 53))
    grids, work = [], []
    for item in launches:
        gx, gy, gz = (int(v) for v in (list(item["grid"]) + [1, 1, 1])[:3])
        zs = list(range(gz)) if gz <= MAX_Z else sorted(int(z) for z in pick.choice(gz, MAX_Z, replace=False))
        grids.append((gx, gy, zs))
        work.append(block_steps(shape, (gx, gy, gz), tile) * len(zs))
    count = 2 if 2 * sum(work) <= SAMPLE_STEPS else 1   # the same points in every launch
    blocks_of, total = [], 0
    for (gx, gy, zs), per in zip(grids, work):
        spots = dict.fromkeys((block(a, N, gx), block(b, M, gy)) for a, b in pairs[:count])
        blocks_of.append([[x, y, z] for x, y in spots for z in zs])
        total += per * len(spots)
    return blocks_of, total
