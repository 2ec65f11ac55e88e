"""Parts that grade solutions/ whole: one grade with every child on a timeline (profile), and repeated full
grades (regrade)."""
import json
import os
import statistics
import time

from autograder import engine
from autograder import stages

from .common import ROOT


def part_profile(cfg):
    """One five-stage grade of solutions/, every child on a timeline (tools/profile_grade.py)."""
    from .. import profile_grade
    report = engine.grade(os.path.join(ROOT, "solutions"), device="gpu", seed=500, cfg=cfg)
    return (f"### Where one grade's seconds go\n\n{report.score:g}/{report.max_score:g} in {report.seconds:.1f} s; "
            f"breakdown {json.dumps(report.timing)}\n\n" + profile_grade.timeline(report) + "\n")


def part_regrade(cfg, runs=10):
    """`runs` full GPU grades of solutions/: score, wall time, speedup of every stage and its CV."""
    lines = [f"### Re-grades of solutions/ ({runs} full GPU grades)", "",
             "| grade | score | seconds | " + " | ".join(s.name for s in stages.STAGES) + " | leaderboard | GPU shared | SM clock before/after (stage 5) |",
             "|---" * (6 + len(stages.STAGES)) + "|"]
    speedups = {s.name: [] for s in stages.STAGES}
    scores, walls = [], []
    for r in range(runs):
        started = time.perf_counter()
        report = engine.grade(os.path.join(ROOT, "solutions"), device="gpu", seed=1000 + r, cfg=cfg)
        wall = time.perf_counter() - started
        scores.append((report.score, report.max_score))
        walls.append(wall)
        cells = []
        for s in stages.STAGES:
            facts = report.speed.get(s.name)
            speedups[s.name].append(facts["speedup"] if facts else float("nan"))
            cells.append(f"{facts['speedup']:.2f}x" if facts else "-")
        board = report.leaderboard[0] if report.leaderboard else {}
        gpu = report.gpu.get("fast", {})
        clocks = f"{gpu.get('before', {}).get('sm_clock_mhz')}/{gpu.get('after', {}).get('sm_clock_mhz')} MHz"
        lines.append(f"| {r + 1} | {report.score:g}/{report.max_score:g} | {wall:.1f} | " + " | ".join(cells) +
                     f" | {board.get('tflops', float('nan')):.1f} TFLOP/s, {board.get('status', '-')} | "
                     f"{any(g.get('shared') for g in report.gpu.values())} | {clocks} |")
        bad = [f"{c.stage}: {c.name}: {c.output.splitlines()[0] if c.output else ''}" for c in report.checks
               if c.status != "passed"]
        if bad:
            lines.append("|  | not passed: " + "; ".join(bad)[:600] + " |")
        print(lines[-1], flush=True)
    full = sum(1 for s, m in scores if s == m)
    lines += ["", f"Full marks in {full} of {runs} grades; wall time median {statistics.median(walls):.1f} s "
                  f"(min {min(walls):.1f}, max {max(walls):.1f}).", "",
              "| stage | speedup median | min | max | CV |", "|---|---|---|---|---|"]
    for name, values in speedups.items():
        v = [x for x in values if x == x]
        if v:
            cv = statistics.pstdev(v) / statistics.mean(v)
            lines.append(f"| {name} | {statistics.median(v):.2f}x | {min(v):.2f}x | {max(v):.2f}x | {100 * cv:.2f}% |")
    return "\n".join(lines) + "\n"
