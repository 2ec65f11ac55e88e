"""Command line: ``python -m autograder grade SUBMISSION [...]``."""
import argparse
import sys

from . import config as config_mod
from .engine import report as results
from .stages import STAGES, find
from .submission import SubmissionError


def build_parser():
    p = argparse.ArgumentParser(prog="python -m autograder", description="Grade matmul course submissions.")
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade one submission (a .py, a .ipynb or a folder of them)")
    g.add_argument("submission")
    g.add_argument("--stage", choices=[s.name for s in STAGES], help="grade only this stage")
    g.add_argument("--device", choices=["auto", "gpu", "sim"], default="auto",
                   help="gpu: real timing and GPU tools; sim: Numba's simulator; auto: gpu when one is present")
    g.add_argument("--results", default="results.json", help="where to write Gradescope results (default: %(default)s)")
    g.add_argument("--seed", type=int, help="input seed (default: a secret random one)")
    g.add_argument("--config", help="config file (default: autograder/config.toml)")
    g.add_argument("--partial", action="store_true", help="count only the stages the folder holds (a CI job that "
                   "grades some stages); by default a stage a folder lacks counts 0, as in make grade")
    return p


NO_GPU = ("not gradable: --device gpu, but no GPU answers nvidia-smi on this machine (no GPU, or no working "
          "driver): nothing was graded. Grade on a GPU machine, or use --device sim for the simulator tier")


def writable(path):
    """Why the results file cannot be written ("" when it can): found before the grade, not after it."""
    import os
    existed = os.path.exists(path)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        return f"--results {path}: cannot write it ({exc.strerror or exc}): nothing was graded"
    if not existed:
        os.remove(path)
    return ""


def main(argv=None):
    import os
    args = build_parser().parse_args(argv)
    from .engine import gpu_available, grade
    from .engine.missing import add_missing_stages
    problem = writable(args.results)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.device == "gpu" and not gpu_available():
        print(f"error: {NO_GPU}", file=sys.stderr)
        return 3
    try:
        cfg = config_mod.load(args.config)
        report = grade(args.submission, stage=find(args.stage) if args.stage else None, device=args.device,
                       seed=args.seed, cfg=cfg)
    except (SubmissionError, config_mod.ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if os.path.isdir(args.submission) and not args.stage and not args.partial:  # a stage the folder lacks counts 0, as in make grade
        add_missing_stages(report, cfg, os.path.basename(os.path.abspath(args.submission)) + "/")
    results.write_json_atomic(args.results, results.to_gradescope(report))
    print(results.summary(report))
    print(f"results written to {args.results}")
    return 0
