"""Trusted parent side: grade one submission. Plan each stage's checks, run them in sandboxed children,
judge the raw facts here and write the report.

    parent (engine) -> sandbox -> child (beside student code) -> facts -> checks (parent) -> report
"""
import contextlib
import os
import secrets
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import config as config_mod
from .. import sandbox
from ..gpu.ncu_together import NcuTogether, join_ncu
from ..gpu.slot import hold_alone, hold_gpu
from ..gpu.tools import gpu_available
from ..submission import collect
from .judge import Later
from .kernels import grader_folder
from .report import Check, Report, time_breakdown
from .stage import StageGrader
from .timing_together import TimingTogether
from .together import CorrectTogether
from . import tiers  # noqa: F401 (the tiers' graders: StageGrader(src, device) is one of them)
from . import timing

__all__ = ["Check", "Report", "StageGrader", "gpu_available", "grade"]


def grade(submission, stage=None, device="auto", seed=None, cfg=None, progress=None):
    """Grade a submission file or folder; return a Report. Raises SubmissionError/ConfigError for bad arguments."""
    cfg = cfg or config_mod.load()
    started = time.perf_counter()
    if device == "auto":
        device = "gpu" if gpu_available() else "sim"
    seed = secrets.randbits(63) if seed is None else seed
    report = Report(submission, device, seed)
    report.sandbox = sandbox.backend(cfg["limits"]["sandbox"])[0]
    sources = collect(submission, stage)
    report.notes = [src.note for src in sources if src.note] + list(sources.notes)
    report.files = {src.stage.name: src.file for src in sources}
    rng = np.random.default_rng(seed)
    jobs = cfg["limits"]["jobs"] or os.cpu_count() or 1
    waited = []  # seconds this grade waited for its GPU (another grading process held it)
    # the GPU phase, from the first CUDA child to the last timing, holds the GPU (gpu/slot.py): shared with other
    # grades' runners and tools, alone for the timing; it ends once every child has ended (the pools below shut
    # down first)
    with contextlib.ExitStack() as gpu_phase, tempfile.TemporaryDirectory(prefix="submission-") as workdir, \
            ThreadPoolExecutor(jobs) as pool, ThreadPoolExecutor(4 * len(sources) + 1) as waiting:
        graders = []
        grader_kernels = grader_folder(cfg) if device == "gpu" else None
        shared_gpu = timing.SharedGpu(alone=device != "gpu")
        ncu = NcuTogether() if device == "gpu" else None
        correct = CorrectTogether() if device == "gpu" else None  # one correctness runner for the grade
        timed = TimingTogether(shared_gpu) if device == "gpu" else None  # and one timing child
        for src in sources:
            os.makedirs(os.path.join(workdir, src.stage.module), exist_ok=True)
            g = StageGrader(src, device, cfg, rng, os.path.join(workdir, src.stage.module), grader_kernels)
            g.shared_gpu = shared_gpu  # a GPU found shared by one speed check is not timed on again (engine/timing.py)
            g.correct_together, g.timing_together = correct, timed
            graders.append(g)
        # Every build first; then the other children, the longest first (start_rank), so that none starts last.
        ordered = sorted(graders, key=lambda g: g.start_rank())
        for g in ordered:
            g.start_compile(pool)  # the builds make no CUDA context: they run before the GPU is this grade's
        if device == "gpu":
            gpu_phase.enter_context(hold_gpu(waited=waited))
        if ncu is not None:  # the grade's one ncu runner first: ncu's start and its first kernel take seconds
            for g in ordered:
                join_ncu(g, ncu)
            ncu.start(waiting)
        futures_of = {}
        for g in ordered:
            futures_of[id(g)] = g.start_checks(pool, waiting)
        if correct is not None:
            correct.start(waiting)
            timed.start(waiting)
        planned = [(g, futures_of[id(g)]) for g in graders]
        def quiet():
            """Speed is timed while judging, one stage at a time, on the GPU this grade then holds alone: every other
            child of the grade must have ended first (the ncu run and any stage it profiles again on its own too:
            a context still alive would be another grade's "other process"). Only then does the timing child make
            its context; the first judge waits until it is prepared (none may compile or load while another times)."""
            for _, futures in planned:
                for f in futures.values():
                    (f[0] if isinstance(f, tuple) else f).exception()
            if ncu is not None:
                ncu.ended.wait()
            hold_alone(waited=waited)  # also waits for this process's grader-kernel compile (engine/kernels.py)
            shared_gpu.alone.set()
            for g in graders:
                if getattr(g, "speed_turn", None):
                    g.speed_turn.prepared.wait()
        try:
            _judge_all(planned, report, progress, quiet if device == "gpu" else None)
        finally:
            for g in graders:
                if getattr(g, "speed_turn", None):
                    g.speed_turn.refuse("not run: the grade stopped before this stage's speed check")
            shared_gpu.alone.set()  # a timing child still waiting for it hears of the refusal
    report.seconds = time.perf_counter() - started
    report.children = [c for g in graders for c in g.children]
    report.timing = time_breakdown(report.children, report.seconds)
    if waited:  # for the GPU phase, shared, then for the GPU alone
        report.timing["gpu_wait_s"] = round(sum(waited), 3)
    return report


def _judge_all(planned, report, progress, quiet=None):
    """Judge every stage in report order: first what can be judged while the GPU tools still run (the
    correctness products are compared here, not between two timed stages), then, once `quiet` returned, the
    GPU tools' verdicts and the speed checks, which time now, one after another."""
    judged = [(g, g.judge_now(futures)) for g, futures in planned]
    if quiet is not None:
        quiet()
    for g, checks in judged:
        report.stages.append(g.stage.name)
        checks = Later.resolve(checks)
        for c in checks:  # a notebook's lines as its cells number them
            c.output = g.src.cite(c.output)
        report.checks.extend(checks)
        if getattr(g, "gpu", None):
            report.gpu[g.stage.name] = g.gpu
        if getattr(g, "speed", None):
            report.speed[g.stage.name] = g.speed
        board = getattr(g, "leaderboard", None)
        if board:
            report.leaderboard.append(board)
        if progress:
            progress(g.stage, checks)
