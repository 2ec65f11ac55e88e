"""Autograder for the Numba CUDA matrix-multiplication course."""
import os
import sys

# One BLAS thread per process unless the environment says otherwise. The grader's own products are small (float64
# references, C @ X checks), and OpenBLAS's default, one thread per core that busy-waits after each product and at
# start-up, made every grading process spin all of a host's cores: about 160 CPU s per grade on a 32-core GPU host
# (BENCHMARKS.md). Set here because it must precede numpy's import; children get it in sandbox/box.py.
_USER_SET = "OPENBLAS_NUM_THREADS" in os.environ
for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")


def _one_blas_thread():
    """Tell an OpenBLAS that numpy already loaded (a script that imported numpy before the grader) to use one
    thread: its spinning threads took the CPU of the grade's children, 1-2 s more a GPU grade on an H100
    (BENCHMARKS.md). Returns the number of libraries told."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.rsplit("/", 1)[-1]}
    except OSError:
        return 0
    told = 0
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                       "openblas_set_num_threads64_", "openblas_set_num_threads"):
            setter = getattr(lib, symbol, None)
            if setter is not None:
                setter(ctypes.c_int(1))
                told += 1
                break
    return told


if "numpy" in sys.modules and not _USER_SET:
    _one_blas_thread()
