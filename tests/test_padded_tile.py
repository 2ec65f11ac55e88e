"""Stage 4 credits the padded tile only where the product reads B through it, transposed (checks/shared_memory.py,
from the kernel's source: grammar/tiles.py). A stage 3 kernel with a TILE x (TILE + 1) array declared beside its
tiles scored 15/15 on the GPU: the PTX shows only that the array exists. Each known-bad kernel below keeps the padded
array in the PTX (an array nothing reads is dropped by the compiler, and the size check caught that already) and
computes the right product, so only the new reading can catch it; each is graded whole by the real grader.

FORGED: stage 3 kernels (B's tile read untransposed, from a padded array or one a helper loads) that add a read of a
transposed sBT to their product where it adds nothing; each scored 15/15 before the kernel was walked in the order
it runs (grammar/flow.py, values.py), except "never used", which the old reading also refused (for another reason).
padded_tile/honest_*.py: stage 4 as students write it (helpers, a flat block, aliases); all but honest_swapped_load
lost the 2 points before."""
import glob
import os

import pytest

from autograder.checks.shared_memory import padded_tile_problems
from autograder.grammar import module_constants, violations
from autograder.grammar.tiles import kernel_tiles
from conftest import failed, mutate, passed
from test_unearned_points import TIERS

KERNEL = "matmul_tiled_transposed_kernel"
DECL = "    sBT = cuda.shared.array((TILE, TILE_PAD), float32)\n"
LOAD = "        sBT[tx, ty] = B[kb, col] if kb < K and col < N else float32(0.0)\n"
PRODUCT = "            acc += sA[ty, k] * sBT[tx, k]\n"
STORE_C = "    if row < M and col < N:\n"
# the stage 3 tile, read as stage 3 reads it
STAGE3_DECL = (DECL, DECL + "    sB = cuda.shared.array((TILE, TILE), float32)\n")
STAGE3_LOAD = "        sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)\n"
STAGE3_PRODUCT = (PRODUCT, "            acc += sA[ty, k] * sB[k, tx]\n")
# a read of sBT outside the product (in the guard of C's store), which keeps the array in the PTX
GUARD_READ = (STORE_C, "    if row < M and col < N and sBT[tx, ty] < float32(1e30):\n")

KNOWN_BAD = {
    # a stage 3 kernel that declares the padded array (zeroed, read in a guard) and never reads it in the product
    "declared, never read": (
        (STAGE3_DECL, (LOAD, "        sBT[tx, ty] = float32(0.0)\n" + STAGE3_LOAD), STAGE3_PRODUCT, GUARD_READ),
        ("the padded tile sBT is declared but the product never reads it: read B's tile from it, transposed: "
         "sBT[tx, k]", "nothing from B is stored in sBT")),
    # read in the product, but B stored untransposed (the product reads it down a column, as stage 3 does)
    "stored untransposed": (
        ((LOAD, "        sBT[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)\n"),
         (PRODUCT, "            acc += sA[ty, k] * sBT[k, tx]\n")),
        ("sBT holds B's tile untransposed (line 43: sBT[ty, tx] = B[kb, col]",)),
    # stored transposed, but the product reads the unpadded stage 3 tile
    "stored, product from another array": (
        (STAGE3_DECL, (LOAD, LOAD + STAGE3_LOAD), STAGE3_PRODUCT, GUARD_READ),
        ("the padded tile sBT is declared but the product never reads it: read B's tile from it, transposed: "
         "sBT[tx, k] (it reads B's tile from sB, as a stage 3 kernel does)",)),
}

# the stage 3 tile, padded but read untransposed (a padded array that is not the transposed tile)
PADDED_STAGE3 = (DECL, DECL + "    sB = cuda.shared.array((TILE, TILE_PAD), float32)\n")
STAGE3_PRODUCT_LINE = "            acc += sA[ty, k] * sB[k, tx]"
# the stage 3 tile loaded by a helper (the check read no helper before)
HELPER = ("@cuda.jit\n", "@cuda.jit(device=True)\ndef load_b(tile, B, kb, col, K, N):\n"
          "    tile[cuda.threadIdx.y, cuda.threadIdx.x] = B[kb, col] if kb < K and col < N else float32(0.0)\n\n\n"
          "@cuda.jit\n")
HELPER_LOAD = (LOAD, LOAD + "        load_b(sB, B, kb, col, K, N)\n")
ACC = "    acc = float32(0.0)\n"


def forged(product, *more, decl=PADDED_STAGE3, load=(LOAD, LOAD + STAGE3_LOAD)):
    """A stage 3 product beside a transposed, padded sBT that `product` reads where it adds nothing."""
    return (decl, load, (PRODUCT, STAGE3_PRODUCT_LINE + product)) + more


ZERO, UNUSED = "it is multiplied by zero", "its value never reaches what the kernel stores in C"
# name: (replacements, the line of the read that adds nothing, why the message gives)
FORGED = {
    "times zero": (forged(" + sBT[tx, k] * 0\n"), 48, ZERO),
    "zero times": (forged(" + float32(0.0) * sBT[tx, k]\n"), 48, ZERO),
    "local zero": (forged(" + sBT[tx, k] * nothing\n", (ACC, ACC + "    nothing = float32(0.0)\n")), 49, ZERO),
    "cancelled": (forged(" - sBT[tx, k] + sBT[tx, k]\n"), 48, "the same read is subtracted and added back"),
    "overwritten": (forged("\n", ("            acc += sA[ty, k] * sB[k, tx]\n",
                                  "            tmp = sBT[tx, k]\n            tmp = sA[ty, k] * sB[k, tx]\n"
                                  "            acc += tmp\n"), GUARD_READ), 48, UNUSED),
    "never used": (forged("\n            unused = sBT[tx, k]\n", GUARD_READ), 49, UNUSED),
    "if False": (forged("\n            if False:\n                acc += sBT[tx, k]\n", GUARD_READ), 50,
                 "it is under `if False:` (line 49), a condition that never holds"),
    "constant condition": (forged("\n            if TILE > 1000:\n                acc += sA[ty, k] * sBT[tx, k]\n",
                                  GUARD_READ), 50, "it is under `if TILE > 1000:` (line 49)"),
    "helper-loaded stage 3 tile": (forged(" + sBT[tx, k] * 0\n", HELPER, decl=STAGE3_DECL, load=HELPER_LOAD), 53,
                                   ZERO),
}
VARIANTS = os.path.join(os.path.dirname(__file__), "padded_tile")
HONEST = sorted(os.path.basename(p) for p in glob.glob(os.path.join(VARIANTS, "honest_*.py")))

# stage 4 written another way: other names, aliases, cuda.grid, a temporary, a[i][k] reads, A, B, C renamed
HONEST_VARIANT = '''"""Stage 4, written my way."""
import math

from numba import cuda, float32

TILE = 16
PAD = TILE + 1


@cuda.jit
def matmul_tiled_transposed_kernel(X, Y, Z):
    a_tile = cuda.shared.array((TILE, TILE), float32)
    bt_tile = cuda.shared.array(shape=(TILE, PAD), dtype=float32)
    j = cuda.threadIdx.x
    i = cuda.threadIdx.y
    c, r = cuda.grid(2)
    rows, inner = X.shape
    cols = Y.shape[1]
    total = float32(0.0)
    for tile in range((inner + TILE - 1) // TILE):
        base = tile * TILE
        a_tile[i, j] = X[r, base + j] if r < rows and base + j < inner else float32(0.0)
        y_row = base + i
        value = float32(0.0)
        if y_row < inner and c < cols:
            value = Y[y_row, c]
        bt_tile[j, i] = value
        cuda.syncthreads()
        for k in range(TILE):
            prod = a_tile[i][k] * bt_tile[j][k]
            total += prod
        cuda.syncthreads()
    if r < rows and c < cols:
        Z[r, c] = total


def matmul_tiled_transposed(X, Y, Z):
    blocks = (math.ceil(Z.shape[1] / TILE), math.ceil(Z.shape[0] / TILE))
    matmul_tiled_transposed_kernel[blocks, (TILE, TILE)](X, Y, Z)
'''


def known_bad(name):
    return mutate("tiled_transposed", *KNOWN_BAD[name][0])


def honest(name):
    with open(os.path.join(VARIANTS, name), encoding="utf-8") as f:
        return f.read()


def forged_text(name):
    return mutate("tiled_transposed", *FORGED[name][0])


def test_the_solution_and_an_honest_variant_read_b_through_the_padded_tile():
    assert violations(HONEST_VARIANT) == []
    assert padded_tile_problems(mutate("tiled_transposed"), KERNEL, 32) == []
    assert padded_tile_problems(HONEST_VARIANT, KERNEL, 16) == []
    tiles = kernel_tiles(HONEST_VARIANT, KERNEL)
    assert tiles.b == "Y" and tiles.tiles["bt_tile"].shape == (16, 17) and tiles.tiles["bt_tile"].transposed


@pytest.mark.parametrize("name", HONEST)
def test_honest_variants_read_b_through_the_padded_tile(name):
    """Helpers that take the tiles as arguments, a flat block split with // and %, tuple unpacking, a reused
    temporary, a product step under a condition on K: the reading follows each to B's tile in the padded array."""
    text = honest(name)
    assert violations(text) == []
    assert padded_tile_problems(text, KERNEL, module_constants(text)["TILE"][0]) == []


@pytest.mark.parametrize("name", sorted(FORGED))
def test_a_read_that_adds_nothing_to_c_does_not_count(name):
    text = forged_text(name)
    assert violations(text) == []
    problems = "\n".join(padded_tile_problems(text, KERNEL, 32))
    _, line, why = FORGED[name]
    assert f"sBT is read on line {line} (" in problems and f"but that read adds nothing to C: {why}" in problems, \
        problems
    assert "transposed: " in problems  # what to write instead


def test_the_reading_follows_helpers_and_split_thread_indices():
    tiles = kernel_tiles(honest("honest_flat_helpers.py"), KERNEL).tiles
    assert tiles["shared_bt"].transposed and tiles["shared_bt"].in_product and tiles["shared_bt"].stores[0][0] == 16
    assert not tiles["shared_a"].from_b and tiles["shared_a"].in_product


@pytest.mark.parametrize("name", sorted(KNOWN_BAD))
def test_the_source_reading_names_what_is_missing(name):
    problems = "\n".join(padded_tile_problems(known_bad(name), KERNEL, 32))
    for says in KNOWN_BAD[name][1]:
        assert says in problems, problems


def test_a_padded_array_the_kernel_never_declares_is_named():
    """An array of the right size declared with its sides swapped is not the lesson's shape."""
    text = mutate("tiled_transposed", ("cuda.shared.array((TILE, TILE_PAD), float32)",
                                       "cuda.shared.array((TILE_PAD, TILE), float32)"))
    assert "is declared cuda.shared.array((TILE, TILE_PAD), float32)" in padded_tile_problems(text, KERNEL, 32)[0]


@pytest.mark.slow
@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("name", sorted(KNOWN_BAD))
def test_known_bad_padded_tiles_lose_the_shared_memory_points(grade_text, name, tier):
    r = grade_text("tiled_transposed", known_bad(name), device=tier)
    out = failed(r, "shared_memory")
    for says in KNOWN_BAD[name][1]:
        assert says in out, out
    passed(r, "correct")
    assert r.score < r.max_score


@pytest.mark.slow
@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("name", sorted(FORGED))
def test_forged_padded_tiles_lose_exactly_the_shared_memory_points(grade_text, name, tier):
    """The shared-memory points, and on the GPU the speed points where the timed run measured it: a kernel that
    reads B's tile untransposed is a stage 3 kernel, 1.0-1.1x the unpadded transposed reference on an H200 where
    2.5x is needed (2026-11-27)."""
    r = grade_text("tiled_transposed", forged_text(name), device=tier)
    out = failed(r, "shared_memory")
    assert f"sBT is read on line {FORGED[name][1]} (" in out and FORGED[name][2] in out, out
    lost = {c.key: c.max_score - c.score for c in r.checks if c.score < c.max_score}
    timed = {"speed"} if tier == "gpu" else set()
    assert lost.get("shared_memory") == sum(c.max_score for c in r.checks if c.key == "shared_memory") and \
        set(lost) <= {"shared_memory"} | timed, [(c.name, c.status, c.output[:300]) for c in r.checks
                                                   if c.status != "passed"]
    if "speed" in lost:
        assert "needs" in failed(r, "speed")   # measured too slow, not refused


@pytest.mark.slow
@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("name", ["solution", "variant"] + HONEST)
def test_honest_padded_tiles_keep_full_marks(grade_text, name, tier):
    text = {"solution": mutate("tiled_transposed"), "variant": HONEST_VARIANT}.get(name) or honest(name)
    r = grade_text("tiled_transposed", text, device=tier)
    assert r.score == r.max_score, [(c.name, c.status, c.output[:300]) for c in r.checks if c.status != "passed"]
