#!/usr/bin/env bash
# Prepare an offline GPU machine for `make gpu-check`: install the wheels carried in .whl/ into the
# machine's own Python (grading children start it with a clean environment, so PYTHONPATH would not
# reach them). A wheel is installed only when its distribution is missing, except numpy, which is
# always replaced: numpy 2.5 breaks numba-cuda 0.30.4 (requirements.txt pins numpy<2.5).
# A bubblewrap .deb in .whl/ is unpacked where the machine has no bwrap (the grading sandbox).
# Make the folder on a machine with network access (and `apt-get download bubblewrap`):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
#       -d .whl "numpy==2.4.6" nbgrader==0.9.6 jupytext tqdm ...
set -u
PY=${PY:-python3}
# which carried wheels are missing, asked once; then one pip call for all of them (ninety calls took 160 s)
missing=$("$PY" - <<'PY'
import glob, os, re
from importlib import metadata
have = {re.sub(r"[-_.]+", "_", (d.metadata["Name"] or "").lower()) for d in metadata.distributions()}
for wheel in sorted(glob.glob(".whl/*.whl")):
    name = re.sub(r"[-_.]+", "_", os.path.basename(wheel).split("-")[0].lower())
    if name != "numpy" and name not in have:
        print(wheel)
PY
)
# numpy with its bytecode: every grading child imports it and cannot write bytecode of its own
for wheel in .whl/numpy-*.whl; do
  [ -e "$wheel" ] && { "$PY" -m pip install -q --no-index --no-deps --compile "$wheel" || echo "device_setup: could not install $wheel"; }
done
if [ -n "$missing" ]; then
  # with their bytecode, as pip installs them anywhere: a class run's parent imports nbgrader, 3.7 s without it
  # shellcheck disable=SC2086
  "$PY" -m pip install -q --no-index --no-deps --compile $missing || echo "device_setup: could not install the carried wheels"
fi
if ! command -v bwrap >/dev/null; then
  for deb in .whl/bubblewrap_*.deb; do [ -e "$deb" ] && dpkg -x "$deb" /; done
fi
command -v bwrap >/dev/null && echo "bwrap $(bwrap --version)" || echo "device_setup: no bubblewrap: the unshare fallback sandbox will run"
"$PY" -c "import numpy, numba, numba_cuda; print('numpy', numpy.__version__, 'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__)"
