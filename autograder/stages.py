"""The one registry of course stages: the CLI, the grader, the tests, the
exercise generator and the README table all read it."""
from dataclasses import dataclass

# The checks judged from the simulator's instruments (autograder/sim).
INSTRUMENT_CHECKS = ("races", "bank_conflicts", "data_reuse")
# (M, K, N) shapes. Simulated sizes stay small: the simulator runs one Python
# thread per CUDA thread (a 16-tiled 64 x 64 product takes about 10 s).
DEGENERATE = [(1, 1, 1), (7, 1, 5)]
EDGES = [(17, 23, 23), (33, 9, 31)]  # K = N in the first: a transposed B index shows
RECTANGLES = [(40, 3, 6), (5, 37, 41)]
SAMPLED_K = 256  # the sampled run's K at most (Stage.sampled_shape): its blocks' cost in the simulator grows with K
INSTRUMENT_SIDE = 32  # the instrumented run's M and N at most: 1024 outputs, one thread each (Stage.instrument_shape)


@dataclass(frozen=True)
class Stage:
    number: int
    name: str          # short id used on the command line: --stage tiled
    module: str        # student module name
    kernel: str        # kernel the launcher must launch
    launcher: str      # f(A, B, C) -> None
    title: str
    concept: str       # one line for the README table
    tiled: bool        # declares shared tiles, barriers, reuses data
    padded_b: bool     # B tile transposed and padded (TILE x (TILE + 1))
    square_tiles_only: bool  # only square N with N % TILE == 0
    challenge: bool = False

    @property
    def filename(self):
        return f"{self.module}.py"

    def sim_shape_groups(self, tile):
        """Named groups of (M, K, N) shapes checked in the simulator."""
        if self.square_tiles_only:
            return {"one tile": [(tile, tile, tile)], "2 x 2 tiles": [(2 * tile,) * 3]}
        return {"1x1 and K=1": DEGENERATE, "sizes that are not multiples of the tile": EDGES,
                "tall and wide rectangles": RECTANGLES}

    def instrument_shape(self, tile, rng):
        """(M, K, N) of the simulator's instrumented run (races, bank conflicts, data reuse), drawn from `rng`: the
        grader draws it from the grade's secret generator, the notebook self-check from its own, both here.

        A kernel cannot tell this run from another, so it cannot tile there alone. K spans two tiles, the second
        partial (tile + 1 .. 2 * tile - 1), so a missing second barrier shows. M and N lie in
        INSTRUMENT_SIDE / 2 + 1 .. INSTRUMENT_SIDE - 1 (a larger tile: tile / 2 + 1 .. tile - 1): 2 x 2 blocks at
        TILE 16, one block at TILE 32, 1024 threads either way, which keeps the simulator's cost that of a 2 x 2-tile
        product at TILE 16 (a 1024-thread block costs seconds there). No size is a multiple of the tile: the run's C
        is checked (judge_instruments), and a kernel that masks a partial tile wrongly is wrong here in every grade,
        not in one of 16. A stage of square multiples of the tile (stage 2) gets N = 2 or 3 tiles."""
        if self.square_tiles_only:
            n = tile * int(rng.integers(2, 4))
            return (n, n, n)
        side = max(tile, INSTRUMENT_SIDE)
        M, N = (int(v) for v in rng.integers(side // 2 + 1, side, size=2))
        return (M, int(rng.integers(tile + 1, 2 * tile)), N)

    def sampled_shape(self, tile, rng, n):
        """(M, K, N) of the simulator's sampled run, drawn from `rng`: the grid of the timed size `n` (M and N within
        four tiles of it, each a multiple of the tile or not, as a coin decides), of which the simulator runs a few
        blocks of each launch that the grader draws (engine/sampling.py). A kernel cannot tell it from the timed
        shape by the tile multiples. K spans 2 to SAMPLED_K // tile tiles, whole or with a partial last tile: a
        block's cost in the simulator grows with K (1.5 s at K = 256 in the bare simulator, 11 s at the timed 2048),
        so a longer K runs one block of each launch instead of two. A stage of square multiples of the tile
        (stage 2) gets N = 6 to 24 tiles, its K with it."""
        if self.square_tiles_only:
            side = tile * int(rng.integers(6, 25))
            return (side, side, side)
        M, N = (int(v) for v in rng.integers(n - 4 * tile, n + 4 * tile, size=2))
        whole = rng.random(3) < 0.5
        M, N = ((v // tile) * tile if w else v + 1 if v % tile == 0 else v for v, w in zip((M, N), whole[:2]))
        K = tile * int(rng.integers(2, max(2, SAMPLED_K // tile) + 1))
        return (M, K if whole[2] else K + int(rng.integers(1, tile)), N)

    def gpu_shape_groups(self, tile):
        """Named groups of (M, K, N) shapes checked on the GPU."""
        if self.square_tiles_only:
            return {"one tile": [(tile, tile, tile)], "N = 512 and 2048": [(512,) * 3, (2048,) * 3]}
        return {"1x1 and K=1": DEGENERATE + [(1000, 1, 999)],
                "sizes that are not multiples of the tile": EDGES + [(1023, 1025, 1021)],
                "tall and wide rectangles": RECTANGLES + [(4001, 67, 129), (65, 2049, 3001)]}


STAGES = [
    Stage(1, "naive", "s1_naive", "matmul_naive_kernel", "matmul_naive",
          "Naive", "one thread per output, everything from global memory",
          tiled=False, padded_b=False, square_tiles_only=False),
    Stage(2, "tiled", "s2_tiled", "matmul_tiled_kernel", "matmul_tiled",
          "Shared-memory tiled", "tiles in shared memory, two barriers, data reuse",
          tiled=True, padded_b=False, square_tiles_only=True),
    Stage(3, "tiled_general", "s3_tiled_general", "matmul_tiled_general_kernel", "matmul_tiled_general",
          "Tiled, any size", "masking partial tiles: any M, K, N, rectangles",
          tiled=True, padded_b=False, square_tiles_only=False),
    Stage(4, "tiled_transposed", "s4_tiled_transposed", "matmul_tiled_transposed_kernel",
          "matmul_tiled_transposed", "Transposed B tile, padded",
          "shared-memory banks: transposed B tile plus one padding column",
          tiled=True, padded_b=True, square_tiles_only=False),
    Stage(5, "fast", "s5_fast", "matmul_fast_kernel", "matmul_fast",
          "Challenge: fastest kernel", "register blocking and anything else that is fast",
          tiled=False, padded_b=False, square_tiles_only=False, challenge=True),
]
BY_NAME = {s.name: s for s in STAGES}
BY_MODULE = {s.module: s for s in STAGES}


def find(name):
    """Look a stage up by name, module or number; raise ValueError naming the choices."""
    for s in STAGES:
        if name in (s.name, s.module, str(s.number)):
            return s
    raise ValueError(f"unknown stage {name!r}; choose one of: {', '.join(s.name for s in STAGES)}")
