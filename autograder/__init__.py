"""Autograder for the Numba CUDA matrix-multiplication course."""
import os

# One BLAS thread per process unless the environment says otherwise. The grader's own products are small (float64
# references, C @ X checks), and OpenBLAS's default, one thread per core that busy-waits after each product and at
# start-up, made every grading process spin all of a host's cores: about 160 CPU s per grade on a 32-core GPU host
# (BENCHMARKS.md). Set here because it must precede numpy's import; children get it in sandbox/box.py.
for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
