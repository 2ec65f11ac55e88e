"""Trusted parent side: which blocks of each launch the sampled simulator run simulates (run_structure), and the work
they cost. Pure: the recorded launches, the shape and the grade's secret draws in, blocks and block-steps out.

Blocks are drawn for each launch from its own grid, so a decoy launch or a second launch in another mode is sampled in
its own right. The grade draws points of C; each launch runs the block whose share of C (its grid laid over C) holds
the point, so a launch that zeroes C and a launch that adds into it touch the same elements, even with blocks of other
sizes (32 x 32 blocks hold 16 x 16 ones). Every z of a drawn (x, y) runs, however many (split-K over gridDim.z sums
all its slices, and a slice the sample left out would hide what it does); the time limit follows their work.

A cheap launch laid over C otherwise (zeroed by a flat 1-D grid, a transposed or a grid-stride one) holds the points
in other blocks: the parts of C the drawn blocks stand for (parts) are written by the blocks of such a launch that the
child finds from what its blocks write (sim/cover.py), within cover_steps of work."""
import math

SAMPLE_STEPS = 24     # block-steps (a 16 x 16 block through 16 of K) the sample may cost before it draws one position
UNIT = 16 ** 3        # multiply-adds of one block-step
EDGE = 64             # the points of C lie this far from its last row and column: a block of up to 64 x 64 outputs
                      # that holds one is whole (the last row and column of blocks may be partial tiles)
COVER_PER_LINE = 2    # block-steps a cheap launch's cover may cost per row and per column of the parts (a flat 1-D
                      # grid of 256 threads needs one or two blocks per row of a part, a column-major one per column)
COVER_BLOCKS = 6      # and blocks of its own: block 0 and one along each axis (its layout), one or two per point


def block_steps(shape, grid, tile):
    """Block-steps one block of a launch of `grid` does where its blocks share the product M x K x N evenly (plus one
    step of loading per tile of outputs): a 16 x 16 block over K costs 1 + K / 16 steps (a 32 x 32 block 8 (1 + K / 32):
    4 times the threads, each twice as deep a tile), a persistent block that covers many tiles as many times more, a
    split-K block 1 / gridDim.z of it, and at least one step (a block of little work still starts its threads)."""
    M, K, N = shape
    t = tile or 16
    return max(1, math.ceil(M * N * (K + t) / (math.prod(grid) * UNIT)))


def _grid(item):
    return tuple(int(v) for v in (list(item["grid"]) + [1, 1, 1])[:3])


def draw(launches, shape, tile, fractions):
    """([blocks of launch 0, blocks of launch 1, ...], block-steps in all) for the recorded `launches` (dicts with
    "grid") at `shape`; `fractions`: the grade's secret draws in [0, 1), at least 4. The points of C avoid each grid's
    last row and column of blocks (whole tiles there); one point where two would cost more than SAMPLE_STEPS (a large
    K, a persistent block covering many tiles, a launch of one block, many slices of K)."""
    M, _, N = shape
    u = [float(f) for f in fractions]
    pairs = [(u[0], u[1]), (u[2], u[3])]

    def block(frac, size, blocks):   # the block of `blocks` across `size` that holds the drawn point
        share = -(-size // blocks)
        return min(max(0, blocks - 2), int(frac * max(0, size - EDGE) // share))
    grids = [_grid(item) for item in launches]
    work = [block_steps(shape, g, tile) * g[2] for g in grids]
    count = 2 if 2 * sum(work) <= SAMPLE_STEPS else 1   # the same points in every launch
    blocks_of, total = [], 0
    for (gx, gy, gz), per in zip(grids, work):
        spots = dict.fromkeys((block(a, N, gx), block(b, M, gy)) for a, b in pairs[:count])
        blocks_of.append([[x, y, z] for x, y in spots for z in range(gz)])
        total += per * len(spots)
    return blocks_of, total


def parts(launches, shape, blocks_of):
    """The parts of C the drawn points stand for, as [row0, row1, col0, col1] rectangles: the share of C of each drawn
    block of every launch laid over C in blocks of at most EDGE x EDGE outputs (a launch that adds into C there reads
    them). A 1-D or persistent grid's share is a whole band of C and stands for no part."""
    M, _, N = shape
    rects = []
    for item, blocks in zip(launches, blocks_of):
        gx, gy, _ = _grid(item)
        sx, sy = -(-N // gx), -(-M // gy)
        if sx > EDGE or sy > EDGE:
            continue
        for x, y in dict.fromkeys((b[0], b[1]) for b in blocks):
            rect = [y * sy, min(M, (y + 1) * sy), x * sx, min(N, (x + 1) * sx)]
            if rect[0] < rect[1] and rect[2] < rect[3] and rect not in rects:
                rects.append(rect)
    return rects


def cover_steps(launches, shape, tile, rects):
    """Block-steps the blocks each launch runs, where it is a cheap one, to write the parts `rects` may cost
    (sim/cover.py stops there): COVER_BLOCKS of its blocks, each costed as the draw costs it (a few blocks of a
    grid-stride launch do much), plus COVER_PER_LINE per row and column of the parts (a flat grid needs a block
    or two per row)."""
    if not rects:
        return [0] * len(launches)
    lines = sum((r1 - r0) + (c1 - c0) for r0, r1, c0, c1 in rects)
    return [COVER_BLOCKS * block_steps(shape, _grid(item), tile) + COVER_PER_LINE * lines for item in launches]
