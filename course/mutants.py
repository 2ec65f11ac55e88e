"""Known-bad variants of the solutions, as text mutations (the tests, the GPU verification and the class benchmark).

Each entry of KNOWN_BAD is the solution of one stage with a few exact text
replacements, the check that must fail and a phrase its message must hold.
Writing them as mutations keeps one source of truth for every kernel: a
change to a solution reaches every known-bad variant of it.
"""
import os
from dataclasses import dataclass

from autograder import stages

from . import ROOT

SOLUTIONS = os.path.join(ROOT, "solutions")


def solution_text(stage_name):
    with open(os.path.join(SOLUTIONS, stages.find(stage_name).filename), encoding="utf-8") as f:
        return f.read()


def mutate(stage_name, *replacements):
    """The solution of a stage with (old, new) text replacements; each old must occur."""
    text = solution_text(stage_name)
    for old, new in replacements:
        assert old in text, f"mutation target not found in {stage_name}: {old!r}"
        text = text.replace(old, new)
    return text


@dataclass(frozen=True)
class KnownBad:
    stage: str
    replacements: tuple   # ((old, new), ...) applied to the stage's solution
    check: str            # the points key of the check that must fail
    says: str             # a phrase its message must hold
    limits: tuple = ()    # (key, value) overrides of [limits] for this case

    @property
    def text(self):
        return mutate(self.stage, *self.replacements)


NAIVE_LAUNCH = "    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)"
TILED_LOOP_END = ("            acc += sA[ty, k] * sB[k, tx]\n        cuda.syncthreads()\n",
                  "            acc += sA[ty, k] * sB[k, tx]\n")
TRANSPOSED_LOOP_END = ("            acc += sA[ty, k] * sBT[tx, k]\n        cuda.syncthreads()\n",
                       "            acc += sA[ty, k] * sBT[tx, k]\n")

# stage 1 with two lanes per element of C, each taking half of the K loop and adding its half into C (zeroed by a
# launch of its own): right in the simulator, which runs one thread at a time; on a GPU one of the two updates is lost
SPLIT_K_LANES = (
    ("@cuda.jit\ndef matmul_naive_kernel(A, B, C):\n    col, row = cuda.grid(2)\n",
     "@cuda.jit\ndef zero_kernel(C):\n    col, row = cuda.grid(2)\n    if row < C.shape[0] and col < C.shape[1]:\n"
     "        C[row, col] = float32(0.0)\n\n\n"
     "@cuda.jit\ndef matmul_naive_kernel(A, B, C):\n    lane, row = cuda.grid(2)\n    col = lane // 2\n"),
    ("        for k in range(K):\n", "        for k in range(lane % 2, K, 2):\n"),
    (NAIVE_LAUNCH, "    zero_kernel[blocks, (BLOCK, BLOCK)](C)\n    lanes = (math.ceil(2 * N / BLOCK), math.ceil(M / BLOCK))\n"
                   "    matmul_naive_kernel[lanes, (BLOCK, BLOCK)](A, B, C)"))
LOST_UPDATE = ("        C[row, col] = acc\n", "        C[row, col] += acc\n")
SPLIT_K_ATOMIC = ("        C[row, col] = acc\n", "        cuda.atomic.add(C, (row, col), acc)\n")  # honest

KNOWN_BAD = {
    # compiles
    "syntax error": KnownBad("naive", (("def matmul_naive_kernel(A, B, C):", "def matmul_naive_kernel(A, B, C)"),),
                             "compiles", "syntax error at line"),
    "no @cuda.jit": KnownBad("naive", (("@cuda.jit\ndef matmul_naive_kernel", "def matmul_naive_kernel"),),
                             "shortcuts", "is matmul_naive_kernel a kernel? decorate it with @cuda.jit"),
    "renamed kernel": KnownBad("naive", (("matmul_naive_kernel", "naive_kernel"),),
                               "compiles", "missing matmul_naive_kernel: keep the names the exercise gives"),
    "renamed launcher": KnownBad("naive", (("def matmul_naive(A, B, C):", "def naive(A, B, C):"),),
                                 "compiles", "missing matmul_naive: keep the names the exercise gives"),
    "shared shape not a constant": KnownBad(
        "tiled_transposed", (("cuda.shared.array((TILE, TILE_PAD), float32)", "cuda.shared.array((TILE, TILE + 1), float32)"),),
        "compiles", "the GPU compiler rejected matmul_tiled_transposed_kernel"),
    # shared_memory
    "missing TILE": KnownBad("tiled", (("TILE", "T"),),
                             "shared_memory", "define the tile size as a module constant"),
    "one shared array": KnownBad("tiled", (("    sB = cuda.shared.array((TILE, TILE), float32)\n", ""),
                                           ("sB[ty, tx] = B[t * TILE + ty, col]", "pass"),
                                           ("sA[ty, k] * sB[k, tx]", "sA[ty, k] * B[t * TILE + k, col]")),
                                 "shared_memory", "expected two shared arrays"),
    "no barriers": KnownBad("tiled", (("        cuda.syncthreads()\n", ""),), "shared_memory", "barrier"),
    "unpadded B tile": KnownBad("tiled_transposed", (("TILE_PAD = TILE + 1", "TILE_PAD = TILE"),),
                                "shared_memory", "TILE x (TILE + 1)"),
    # correct
    "row guard compares with N": KnownBad("naive", (("if row < M and col < N:", "if row < N and col < N:"),),
                                          "correct", "compares the row with the column count"),
    "B indexed transposed": KnownBad("naive", (("B[k, col]", "B[col, k]"),), "correct", "B is indexed transposed"),
    "partial K tile dropped": KnownBad("tiled_general", (("range((K + TILE - 1) // TILE)", "range(K // TILE)"),),
                                       "correct", "last partial tile along K is ignored"),
    "unguarded store": KnownBad("tiled_general", (("    if row < M and col < N:\n        C[row, col] = acc",
                                                   "    C[row, col] = acc"),), "correct", "outside an array"),
    "store one past the edge": KnownBad("naive", (("    if row < M and col < N:\n        acc = float32(0.0)\n"
                                                    "        for k in range(K):\n            acc += A[row, k] * B[k, col]\n",
                                                    "    if row <= M and col <= N:\n        acc = float32(0.0)\n"
                                                    "        for k in range(K):\n            if row < M and col < N:\n"
                                                    "                acc += A[row, k] * B[k, col]\n"),),
                                        "correct", "outside an array"),
    "two lanes add into one element": KnownBad("naive", SPLIT_K_LANES + (LOST_UPDATE,), "correct",
                                               "without cuda.atomic.add; on a GPU one update is lost"),
    "store far past C": KnownBad("naive", (("        C[row, col] = acc\n",
                                            "        C[row, col] = acc\n        if row == 0 and col == 0:\n"
                                            "            C[row + 1000000, col] = acc\n"),), "correct", "outside an array"),
    "launcher skips the kernel": KnownBad("naive", ((NAIVE_LAUNCH, "    pass"),), "correct",
                                          "never launched matmul_naive_kernel"),
    "launch on a stream of its own": KnownBad(
        "naive", ((NAIVE_LAUNCH, "    stream = cuda.stream()\n    matmul_naive_kernel[blocks, (BLOCK, BLOCK), stream](A, B, C)"),),
        "shortcuts", "makes a stream of its own: launch on the default stream"),
    "exits at import": KnownBad("naive", (("BLOCK = 16\n", "BLOCK = 16\nraise SystemExit(0)\n"),), "shortcuts",
                                "raise: a kernel module holds only imports, constants, kernels and launchers"),
    "kernel never ends": KnownBad("naive", (("        C[row, col] = acc\n",
                                             "        while acc == acc:\n            acc += float32(1.0)\n"
                                             "        C[row, col] = acc\n"),), "correct", "did not finish within",
                                  # stopped at 10 s (the build child, 2 s idle, has as long); the groups run
                                  # again after it have 3 s of grace
                                  limits=(("check_timeout_s", 10), ("sibling_grace_s", 3))),
    # races
    "stage 2 without second barrier": KnownBad("tiled", (TILED_LOOP_END,), "races", "write-after-read"),
    "stage 2 without first barrier": KnownBad(
        "tiled", (("        sB[ty, tx] = B[t * TILE + ty, col]\n        cuda.syncthreads()\n",
                   "        sB[ty, tx] = B[t * TILE + ty, col]\n"),), "races", "read-after-write"),
    "stage 3 without second barrier": KnownBad("tiled_general", (TILED_LOOP_END,), "races", "write-after-read"),
    "stage 4 without second barrier": KnownBad("tiled_transposed", (TRANSPOSED_LOOP_END,), "races", "write-after-read"),
    # the tiles read through atomics: an atomic orders nothing against the next iteration's plain stores
    "stage 3 atomic tile reads without second barrier": KnownBad(
        "tiled_general", (TILED_LOOP_END, ("acc += sA[ty, k] * sB[k, tx]",
                                           "acc += cuda.atomic.add(sA, (ty, k), float32(0.0)) * "
                                           "cuda.atomic.add(sB, (k, tx), float32(0.0))")),
        "races", "orders nothing"),
    # bank_conflicts
    "stage 4 unpadded": KnownBad("tiled_transposed", (("TILE_PAD = TILE + 1", "TILE_PAD = TILE"),),
                                 "bank_conflicts", "32-way"),
    # data_reuse
    "fake tiling": KnownBad("tiled", (("            acc += sA[ty, k] * sB[k, tx]",
                                       "            acc += A[row, t * TILE + k] * B[t * TILE + k, col]"),),
                            "data_reuse", "global memory instead of the shared tiles"),
    # the same, the operands read through slices copied to local arrays (numpy copies them in bulk in the simulator)
    "fake tiling through slices": KnownBad("tiled", (("        for k in range(TILE):\n            acc += sA[ty, k] * sB[k, tx]\n",
                                                      "        a = cuda.local.array(TILE, float32)\n"
                                                      "        b = cuda.local.array(TILE, float32)\n"
                                                      "        a[:] = A[row, t * TILE:(t + 1) * TILE]\n"
                                                      "        b[:] = B[t * TILE:(t + 1) * TILE, col]\n"
                                                      "        for k in range(TILE):\n            acc += a[k] * b[k]\n"),),
                                           # no GPU compiles a slice copy into a local array: nothing runs for it
                                           "data_reuse", "the GPU compiler rejects matmul_tiled_kernel"),
    # stage 4's tiles loaded and never read: a naive kernel in disguise (only data reuse and speed see it)
    "stage 4 fake tiling": KnownBad("tiled_transposed", (("            acc += sA[ty, k] * sBT[tx, k]\n",
                                                          "            if row < M and col < N and t * TILE + k < K:\n"
                                                          "                acc += A[row, t * TILE + k] * B[t * TILE + k, col]\n"),),
                                    "data_reuse", "global memory instead of the shared tiles"),
    # shortcuts
    "host product in the launcher": KnownBad(
        "naive", ((NAIVE_LAUNCH, "    C.copy_to_device(A.copy_to_host() @ B.copy_to_host())\n" + NAIVE_LAUNCH),),
        "shortcuts", "copy_to_host"),
    "numpy product in the launcher": KnownBad(
        "naive", ((NAIVE_LAUNCH, "    import numpy as np\n    np.matmul(1, 2)\n" + NAIVE_LAUNCH),), "shortcuts",
        "np.matmul"),
}


def by_check(check):
    """{name: KnownBad} of the cases whose failing check is `check`."""
    return {name: case for name, case in KNOWN_BAD.items() if case.check == check}
