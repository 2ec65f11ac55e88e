"""The GPU input generator and its NumPy twin agree (checked in the simulator)."""
import os
import subprocess
import sys

import numpy as np

from autograder.protocol import fill_uniform_host
from conftest import ROOT

DRIVER = """
import numpy as np, sys
from numba import cuda
from autograder.runner.references import fill_uniform
X = cuda.to_device(np.zeros((5, 7), np.float32))
fill_uniform(X, 7)
np.save(sys.argv[1], X.copy_to_host())
"""


def test_device_fill_matches_host_fill(tmp_path):
    out = tmp_path / "x.npy"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    subprocess.run([sys.executable, "-c", DRIVER, str(out)], check=True, env=env, timeout=120)
    device = np.load(out)
    host = fill_uniform_host(5, 7, 7)
    assert np.array_equal(device, host)
    assert host.min() >= -1 and host.max() < 1 and host.std() > 0.4
