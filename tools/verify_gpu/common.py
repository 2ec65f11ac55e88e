"""What the parts share: the repository root, one speed check on its own, processes that keep CPUs busy."""
import os
import subprocess
import sys
import tempfile

import numpy as np

from autograder import engine
from autograder.engine import timing
from autograder.submission import collect

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _speed_once(path, stage, cfg, seed):
    src = collect(path, stage)[0]
    with tempfile.TemporaryDirectory() as d:
        g = engine.StageGrader(src, "gpu", cfg, np.random.default_rng(seed), d)
        g.build_alone()
        check = timing.judge(g)
    return check, getattr(g, "speed", None)


def _spinning(n):
    """n processes that keep one CPU each busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
