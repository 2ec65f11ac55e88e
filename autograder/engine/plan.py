"""Trusted parent side: what one stage's grade runs, as data: its checks' rows, the children's jobs, the shapes
drawn from the grade's secret generator and the time limits derived from the work. Nothing here starts a child."""
import math

import numpy as np

from ..stages import INSTRUMENT_CHECKS
from .report import Check

class Planning:
    """The planning half of a StageGrader (engine/stage.py)."""

    def check(self, key, name, share=1.0):
        return Check(self.stage.name, key, name, self.points.get(key, 0) * share)

    def job(self, task, device, **extra):
        return {"task": task, "device": device, "module": self.stage.module, "module_path": self.module_path,
                "kernel": self.stage.kernel, "launcher": self.stage.launcher, **extra}

    def work_timeout(self, flops):
        """Seconds a GPU child may run: start-up plus work_factor times what the naive reference kernel needs for
        `flops` at reference_tflops; never more than check_timeout_s."""
        lim = self.cfg["limits"]
        return min(lim["check_timeout_s"],
                   lim["gpu_start_s"] + lim["work_factor"] * flops / (lim["reference_tflops"] * 1e12))

    def sim_timeout(self, shapes, launches_of=None):
        """Seconds a simulator child may run (sim_seconds); `launches_of`: the build's launches at each shape."""
        return sim_seconds(self.cfg, self.tile, shapes, launches_of)

    def draw(self, shapes):
        """Fresh random inputs {A0, B0, A1, ...} for (M, K, N) shapes, from this grade's secret generator."""
        inputs = {}
        for i, (M, K, N) in enumerate(shapes):
            inputs[f"A{i}"] = self.rng.standard_normal((M, K), dtype=np.float32)
            inputs[f"B{i}"] = self.rng.standard_normal((K, N), dtype=np.float32)
        return inputs

    def instrument_shape(self):
        """(M, K, N) of this grade's instrumented simulator run, drawn once from the grade's secret generator as the
        self-check draws its own (Stage.instrument_shape): a kernel cannot tell it from any other shape."""
        if getattr(self, "_instrument_shape", None) is None:
            rng = self.rng if self.rng is not None else np.random.default_rng()
            self._instrument_shape = self.stage.instrument_shape(self.tile or self.cfg["structure"]["tiles"][0], rng)
        return self._instrument_shape

    def instrument_keys(self):
        """The checks judged from the simulator's instruments in this tier."""
        return [k for k in INSTRUMENT_CHECKS if k in self.points]

    def tool_count(self):
        """How many GPU tools (racecheck, ncu) this stage runs (the longest children of a grade)."""
        return 0

    def start_rank(self):
        """Where this stage's children start in the grade's queue (lowest first). In the simulator the later stages'
        children are the longest (1024-thread blocks, the challenge's register tiles): they start first."""
        return -self.stage.number


def sim_seconds(cfg, tile, shapes, launches_of=None):
    """Seconds a simulator child may run: start-up plus sim_work_factor times the simulated block-steps (one
    TILE x TILE block through one tile of K) at sim_block_step_s each, scaled by the block's threads. `launches_of`
    (the recorded launches at each shape, where known): every block launched beyond one per tile of C costs a step of
    its own (split-K over 128 slices starts 128 blocks per tile, most of them with little to add). The notebook
    self-check gives its own launches the same limit."""
    lim = cfg["limits"]
    t = tile or 16
    steps = sum(math.ceil(M / t) * math.ceil(N / t) * (1 + math.ceil(K / t)) for M, K, N in shapes)
    for (M, _, N), launches in zip(shapes, launches_of or ()):
        steps += max(0, launched_blocks(launches, t) - math.ceil(M / t) * math.ceil(N / t))
    work = steps * lim["sim_block_step_s"] * max(1.0, (t / 16) ** 2)
    return min(lim["check_timeout_s"], lim["sim_start_s"] + lim["sim_work_factor"] * work)


def launched_blocks(launches, tile):
    """Blocks the recorded `launches` start, counted in TILE x TILE-thread blocks (a larger block as several)."""
    return sum(math.prod(int(v) for v in item["grid"]) * max(1, math.prod(int(v) for v in item["block"]) // tile ** 2)
               for item in launches)
