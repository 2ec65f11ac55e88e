"""The optimisation ladder of the challenge: every step from the naive kernel
to register blocking and past it, timed side by side with cuBLAS on one GPU.

Run on a GPU machine: ``python -m tools.ladder [--n 4096 [2048 4000 ...]] [--json PATH]``.
The solutions are trusted course code, so they are loaded in this process;
variants are the same source with its constants changed. The rungs past the
stage 5 solution are kernels of tools/ladder_kernels.py (LADDER_KERNELS).
"""
import argparse
import json
import os
import statistics
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (label, solution file, constant replacements, launcher)
FAST_VARIANTS = [
    ("2D blocking 64x64, BK 8, 4x4/thread", dict(BM=64, BN=64, BK=8, TM=4, TN=4)),
    ("2D blocking 128x64, BK 8, 8x4/thread", dict(BM=128, BN=64, BK=8, TM=8, TN=4)),
    ("2D blocking 128x128, BK 8, 8x8/thread", dict(BM=128, BN=128, BK=8, TM=8, TN=8)),
    ("2D blocking 128x128, BK 16, 8x8/thread", dict(BM=128, BN=128, BK=16, TM=8, TN=8)),
    ("2D blocking 256x128, BK 8, 8x8/thread", dict(BM=256, BN=128, BK=8, TM=8, TN=8)),
    ("2D blocking 128x256, BK 8, 8x8/thread", dict(BM=128, BN=256, BK=8, TM=8, TN=8)),
    ("2D blocking 128x128, BK 8, 16x8/thread", dict(BM=128, BN=128, BK=8, TM=16, TN=8)),
]

# (label, launcher in tools/ladder_kernels.py, constant replacements): the rungs past the solution.
LADDER_KERNELS = [
    ("128-bit shared loads + warp tiling, BK 8", "matmul_vectorized", dict(BK=8)),
    ("128-bit shared loads + warp tiling, BK 16", "matmul_vectorized", dict(BK=16)),
    ("+ double buffering, BK 16, scalar shared loads (no alignment)", "matmul_fast", dict(ALIGN=None)),
    ("+ double buffering, BK 16, no register cap", "matmul_fast", dict(MAXREG=None)),
    ("double buffering without the GPU-only hints (scalar loads, no cap, no forceinline), BK 16",
     "matmul_fast", dict(ALIGN=None, MAXREG=None, FORCEINLINE=False)),
    ("double buffering without the GPU-only hints (scalar loads, no cap, no forceinline), BK 8",
     "matmul_fast", dict(BK=8, ALIGN=None, MAXREG=None, FORCEINLINE=False)),
    ("+ double buffering, BK 8, registers <= 128", "matmul_fast", dict(BK=8)),
    ("+ double buffering, 128x256 tile, BK 8", "matmul_fast",
     dict(BN=256, WM=64, WN=64, BK=8, MAXREG=None)),
    ("+ double buffering, 256x128 tile, BK 8", "matmul_fast",
     dict(BM=256, WM=64, WN=64, BK=8, MAXREG=None)),
    ("+ grouped block order (8 block rows)", "matmul_grouped", dict(GROUP=8)),
    ("+ double buffering, BK 16, registers <= 128: top rung", "matmul_fast", {}),
]


def check_tiling(m):
    """Raise unless a tools/ladder_kernels.py variant's constants tile: every thread loads whole groups of 4."""
    assert m.LR * m.LC == 32 and m.WM % (m.LR * m.TM) == 0 and m.WN % (m.LC * m.TN) == 0, "warp tile"
    assert m.BM % m.WM == 0 and m.BN % m.WN == 0 and m.BK % 4 == 0 and m.BK % 2 == 0, "block tile"
    assert m.A_GROUPS * m.THREADS * 4 == m.BM * m.BK and m.B_GROUPS * m.THREADS * 4 == m.BK * m.BN, "loads"


def load_variant(filename, name, constants=None, replace=()):
    """Load solutions/<filename> (or <filename> from the repository root, when it names a folder)
    as a fresh module, with module constants replaced (and each (old, new) of `replace`, which must occur)."""
    path = os.path.join(ROOT, filename if "/" in filename else os.path.join("solutions", filename))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for old, new in replace:
        if old not in text:
            raise KeyError(f"{filename} has no {old!r}")
        text = text.replace(old, new)
    for key, value in (constants or {}).items():
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.startswith(f"{key} = "):
                lines[i] = f"{key} = {value}"
                break
        else:
            raise KeyError(f"{filename} has no constant {key}")
        text = "\n".join(lines) + "\n"
    module = types.ModuleType(name)
    module.__file__ = path
    exec(compile(text, module.__file__, "exec"), module.__dict__)
    return module


def contenders():
    from autograder.runner import references
    naive_rows_src = '''
import math
from numba import cuda, float32
@cuda.jit
def kernel(A, B, C):
    row, col = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
def launch(A, B, C):
    kernel[(math.ceil(C.shape[0] / 16), math.ceil(C.shape[1] / 16)), (16, 16)](A, B, C)
'''
    rows = types.ModuleType("naive_rows")
    exec(naive_rows_src, rows.__dict__)
    out = [("naive, x along rows (uncoalesced)", rows.launch),
           ("naive, x along columns (coalesced)", references.naive_coalesced),
           ("tiled 16 (stage 2)", load_variant("s2_tiled.py", "t16").matmul_tiled),
           ("tiled 32", load_variant("s2_tiled.py", "t32", {"TILE": 32}).matmul_tiled),
           ("tiled 16, any size (stage 3)", load_variant("s3_tiled_general.py", "g16").matmul_tiled_general),
           ("B tile transposed, unpadded", references.transposed_unpadded),
           ("B tile transposed + padded (stage 4)",
            load_variant("s4_tiled_transposed.py", "tp").matmul_tiled_transposed)]
    for label, consts in FAST_VARIANTS:
        mod = load_variant("s5_fast.py", "fast_" + "_".join(map(str, consts.values())), consts)
        out.append((label, mod.matmul_fast))
    out.append(("stage 5 solution as shipped", load_variant("s5_fast.py", "fast").matmul_fast))
    for i, (label, launcher, consts) in enumerate(LADDER_KERNELS):
        consts = dict(consts)
        options = []  # the kernel module's options are literals (the grammar's rule): replaced as text
        if "MAXREG" in consts:
            maxreg = consts.pop("MAXREG")
            options.append(("@cuda.jit(max_registers=128)", f"@cuda.jit(max_registers={maxreg})" if maxreg else "@cuda.jit"))
        if "FORCEINLINE" in consts:
            options.append(("forceinline=True", f"forceinline={consts.pop('FORCEINLINE')}"))
        mod = load_variant("tools/ladder_kernels.py", f"ladder_kernels_{i}", consts, options)
        check_tiling(mod)
        out.append((label, getattr(mod, launcher)))
    return out


def measure(n, repeats):
    import numpy as np
    from numba import cuda
    from autograder.runner.references import fill_uniform, flush_l2
    A, B, C = (cuda.device_array((n, n), np.float32) for _ in range(3))
    fill_uniform(A, 1)
    fill_uniform(B, 2)
    ref = None
    flush = cuda.device_array(64 * 1024 * 1024, np.float32)
    start, end = cuda.event(), cuda.event()
    runs = contenders()
    try:
        import cupy
        cA, cB, cC = cupy.asarray(A), cupy.asarray(B), cupy.asarray(C)
        runs.append(("cuBLAS (CuPy)", lambda A_, B_, C_: cupy.matmul(cA, cB, out=cC)))
    except Exception as exc:
        print(f"cuBLAS not measured: {exc}", file=sys.stderr)
    rows = []
    for label, run in runs:
        run(A, B, C)
        cuda.synchronize()
        out = C.copy_to_host()
        if ref is None:
            ref = (A.copy_to_host().astype(np.float64) @ B.copy_to_host().astype(np.float64))
        err = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
        times = []
        reps = repeats if n < 4096 or "naive" not in label else max(3, repeats // 3)
        for r in range(reps):
            flush_l2(flush, float(r))
            start.record()
            run(A, B, C)
            end.record()
            end.synchronize()
            times.append(cuda.event_elapsed_time(start, end))
        med = statistics.median(times)
        rows.append({"kernel": label, "ms": med, "tflops": 2 * n ** 3 / (med * 1e-3) / 1e12,
                     "cv": statistics.pstdev(times) / statistics.mean(times), "rel_error": err})
    base = next(r["ms"] for r in rows if r["kernel"].startswith("naive, x along columns"))
    cublas = next((r["ms"] for r in rows if r["kernel"].startswith("cuBLAS")), None)
    for r in rows:
        r["vs_naive"] = base / r["ms"]
        r["pct_cublas"] = 100 * cublas / r["ms"] if cublas else None
    return rows


def table(rows, n):
    lines = [f"| kernel (N={n}) | ms | TFLOP/s | x naive | % cuBLAS | CV | rel. error |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        pct = f"{r['pct_cublas']:.1f}" if r["pct_cublas"] is not None else "-"
        lines.append(f"| {r['kernel']} | {r['ms']:.3f} | {r['tflops']:.2f} | {r['vs_naive']:.2f} | {pct} | "
                     f"{100 * r['cv']:.1f}% | {r['rel_error']:.1e} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[4096], help="one or more sizes (N x N x N)")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--json", help="the rows (one size) or {size: rows} (several)")
    args = p.parse_args(argv)
    results = {}
    for n in args.n:
        results[n] = measure(n, args.repeats)
        print(table(results[n], n) + "\n", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results[args.n[0]] if len(args.n) == 1 else {str(n): r for n, r in results.items()}, f, indent=2)


if __name__ == "__main__":
    main()
