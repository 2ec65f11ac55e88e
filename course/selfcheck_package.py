"""The self-check as a package students install (``make selfcheck-package``): a wheel of the `autograder` package.

A student with only the released notebooks (from nbgrader, an LMS or a template) installs it next to Jupyter,
``pip install "matmul_gpu_course-0.1.0-py3-none-any.whl[ptx,plot]"`` (``[ptx]``: numba-cuda's cu13 extra, the CUDA
compiler for the PTX compile; ``[plot]``: matplotlib), and
the notebook's setup cell imports the self-check from it: no course folder, no GPU. The same wheel gives
``python -m autograder grade FOLDER``. It is built from a copy of the package, so the repository gets no build
debris.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

from . import ROOT, shown_path

DIST = os.path.join(ROOT, "build", "dist")


def build_wheel(dest=DIST):
    """Build the wheel into `dest`; return its path."""
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="selfcheck-package-") as scratch:
        shutil.copy(os.path.join(ROOT, "pyproject.toml"), scratch)
        shutil.copytree(os.path.join(ROOT, "autograder"), os.path.join(scratch, "autograder"),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        before = set(glob.glob(os.path.join(dest, "*.whl")))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", os.path.abspath(dest), scratch], check=True, cwd=scratch)
    wheels = sorted(glob.glob(os.path.join(dest, "matmul_gpu_course-*.whl")), key=os.path.getmtime)
    if not wheels:
        raise RuntimeError(f"pip wheel wrote no wheel into {dest} (had {sorted(before)})")
    return wheels[-1]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m course.selfcheck_package", description=__doc__.splitlines()[0])
    p.add_argument("--dest", default=DIST, help="folder for the wheel (default: build/dist)")
    args = p.parse_args(argv)
    wheel = build_wheel(args.dest)
    print(f"wrote {shown_path(wheel)}: students run `pip install \"{os.path.basename(wheel)}[ptx,plot]\"` in "
          "their own environment (README: For students), then open the notebooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
