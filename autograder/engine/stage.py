"""Trusted parent side: the checks of one stage of one submission. ``StageGrader(src, device, ...)`` is the tier's own
grader (engine/tiers.py), made of four halves, each in its own room: what is run (plan.py), the children that run it
(children.py), the build and its plans (plans.py), and the verdicts (judge.py).

Nothing here imports student code. Each check's untrusted work runs in its own sandboxed child (autograder/sandbox);
a crash, exit, hang or CUDA error there fails that check alone. The judging itself is in autograder/checks/.
"""
import os
import threading

from .. import sandbox  # noqa: F401 (the children's sandbox, as tests replace its run_child)
from ..checks import shortcuts
from ..grammar import module_constants
from .children import Children
from .judge import Judging
from .plan import Planning
from .plans import Plans

TIERS = {}  # device -> the tier's grader class (engine/tiers.py fills it)


class StageGrader(Planning, Children, Plans, Judging):
    """`start_compile` and then `start_checks` start the children, `judge` scores their facts. The tiers differ in
    their children (simulator runs; GPU runners) and in the checks only a GPU can run."""

    def __new__(cls, src=None, device="sim", *args, **kwargs):
        if cls is StageGrader:
            cls = TIERS["gpu" if device == "gpu" else "sim"]
        return super().__new__(cls)

    def __init__(self, src, device, cfg, rng, workdir, grader_kernels=None):
        self.src, self.stage, self.device, self.cfg, self.rng = src, src.stage, device, cfg, rng
        # The grader's compiled kernels (runner/kernel_cache.py), which timing children only read: a callable that
        # waits for that folder (or None).
        self.grader_kernels = grader_kernels
        self.points = cfg["stages"][self.stage.name]["points"]
        self.tol = cfg["grading"]["relative_error"]
        # The tile the grader sizes its shapes and time limits and judges the tiling by: the module's TILE where the
        # course allows it (config [structure] tiles), else, in a tiled stage, the course's own first size; the
        # shared-memory check then fails saying so (tile_note), the other checks are judged as for any kernel.
        tiles = cfg["structure"]["tiles"]
        tile = module_constants(src.source).get("TILE", (None, 0))[0]
        allowed = type(tile) is int and tile in tiles
        self.tile = tile if allowed else (tiles[0] if self.stage.tiled else None)
        findings = shortcuts.tile_findings(self.stage, src.source, tiles)
        self.tile_note = (" ".join(findings) + f"; the grader judged the tiling by the course's TILE = {self.tile} "
                          "instead") if findings else ""
        if self.stage.tiled and tile is None and not findings:
            self.tile_note = f"define the tile size as a module constant, e.g. TILE = {tiles[0]}"
        # the instrumented run's shape, drawn now from the grade's secret generator (the compile check records the
        # launcher there too)
        self._instrument_shape = None
        self.sampled_shape = self.sample = None
        if rng is not None and self.instrument_keys():
            self.instrument_shape()
            # the sampled run: the timed size's grid, of which a few blocks of each launch run (run_structure)
            self.sampled_shape = self.stage.sampled_shape(self.tile or 16, rng, cfg["speed"]["n"])
            self.sample = rng.random(5)  # where in each launch's grid (engine/sampling.py)
        self.module_path = os.path.join(workdir, self.stage.filename)
        with open(self.module_path, "w", encoding="utf-8") as f:
            f.write(src.source)
        limits = dict(cfg["limits"])
        self.gpu_limits = limits
        self.sim_limits = {**limits, "address_space_bytes": limits["sim_address_space_bytes"]}
        self.children = []   # wall and work seconds of every child, for the report's time breakdown
        # Fail fast: a child that runs out of time stops the stage's other children (cancel) and its later
        # GPU checks (gate_reason).
        self.timed_out = ""
        self.timeout_at = None
        self.futures = {}
        self.built = None  # the build child's checked kernels and plans (build_child)
        self._gate = None
        self._gate_lock = threading.Lock()
        self._timeout_lock = threading.Lock()
