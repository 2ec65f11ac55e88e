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
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    from .engine import grade
    try:
        cfg = config_mod.load(args.config)
        report = grade(args.submission, stage=find(args.stage) if args.stage else None, device=args.device,
                       seed=args.seed, cfg=cfg)
    except (SubmissionError, config_mod.ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results.write_json_atomic(args.results, results.to_gradescope(report))
    print(results.summary(report))
    print(f"results written to {args.results}")
    return 0
