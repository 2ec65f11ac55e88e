"""The timing loop of the speed check, run directly in this process (no sandbox, no parent), one variant per call.

    for v in pre-dev lazy-dev pre-host lazy-host pre-none; do python3 -m tools.timing_variants $v 1; done

Variants: kernels compiled before the first call ("pre") or at it ("lazy"); the product check's
projection on the GPU ("dev"), on the host ("host") or none. Prints the stage 2 solution's and the
reference's median times at N=2048, to tell a distortion of the loop from one of its surroundings
(BENCHMARKS.md, 2026-11-23).
"""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main():
    from numba import cuda
    from autograder.runner import timing, references as R, launches as L
    from autograder.child.entry import load_student_module
    from autograder.stages import find
    variant = sys.argv[1]
    st = find("tiled")
    module = load_student_module(os.path.join(ROOT, "solutions", st.filename), st.module)
    n = 2048
    ops = timing._Operands(cuda, np, n, 2)
    recorded = L.record_launches(module, st.launcher, ops.A, ops.B, ops.C)
    flush = cuda.device_array(64 * 1024 * 1024, np.float32)
    if "pre" in variant:
        timing._prepare_kernels([(k, a) for _, k, _, a in recorded]
                                + timing._grader_kernels(ops, flush, [R.naive_coalesced]))
    if "host" in variant:
        def project(o, X):
            out = o.Cbuf.copy_to_host()
            return out[:o.rows].reshape(o.C.shape).astype(np.float64) @ X
        R.project = project
    elif "none" in variant:
        R.project = lambda o, X: np.zeros((o.C.shape[0], X.shape[1]))
    rng = np.random.default_rng(int(sys.argv[2]))
    seeds = [[int(a), int(b)] for a, b in rng.integers(0, 2**32, (15, 2))]
    X = rng.standard_normal((n, 2))
    contenders = {"student": lambda: L.replay(recorded), "reference": lambda: R.naive_coalesced(ops.A, ops.B, ops.C)}
    stats, proj, _ = timing._time_contenders(cuda, np, contenders, ops, X, seeds, 3, flush)
    print(f"{variant:10s} student {stats['student']['median_ms']:.2f} ms  reference {stats['reference']['median_ms']:.2f} ms"
          f"  student runs {' '.join(f'{t:.1f}' for t in stats['student']['times_ms'])}", flush=True)


if __name__ == "__main__":
    main()
