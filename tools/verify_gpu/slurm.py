"""The slurm part: a generated class graded through a one-node Slurm cluster on this host's GPUs against a local
run."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .common import ROOT


def part_slurm(students=6):
    """A generated class graded through a one-node Slurm cluster on this host's GPUs (tests/slurm/start-cluster.sh
    with the GPUs as GRES; a carried Slurm in .slurm/ is installed first where the host has none,
    tools/slurm_bundle.sh), and the same class graded locally on every GPU: the verdicts must be equal."""
    from course import class_benchmark
    lines = [f"### A class of {students} through Slurm on this host's GPUs", ""]
    if not shutil.which("slurmctld") and not os.path.exists("/usr/sbin/slurmctld"):
        bundle = os.path.join(ROOT, ".slurm")
        got = subprocess.run(["bash", os.path.join(ROOT, "tools", "slurm_bundle.sh"), "install", bundle],
                             capture_output=True, text=True)
        lines.append(f"Carried Slurm installed: status {got.returncode}: {(got.stdout + got.stderr).strip()[-600:]}")
        if got.returncode:
            return "\n".join(lines) + "\n"
    work = tempfile.mkdtemp(prefix="slurm-gpu-")
    cluster = os.path.join(work, "cluster")
    gpus = " ".join(sorted(glob.glob("/dev/nvidia[0-9]*")))
    started = time.perf_counter()
    up = subprocess.run(["bash", os.path.join(ROOT, "tests", "slurm", "start-cluster.sh"), cluster],
                        capture_output=True, text=True, env={**os.environ, "SLURM_GPU_FILES": gpus}, timeout=180)
    if up.returncode:
        lines.append(f"The cluster did not start ({time.perf_counter() - started:.0f} s): "
                     f"{(up.stderr or up.stdout).strip()[-800:]}")
        return "\n".join(lines) + "\n"
    env = {**os.environ, "SLURM_CONF": up.stdout.strip().splitlines()[-1]}
    lines.append(f"Cluster up in {time.perf_counter() - started:.1f} s: one node, GRES gpu = {gpus}.")
    try:
        results = {}
        for how in ("local", "slurm"):
            course = os.path.join(work, how)
            roster = class_benchmark.make_class(course, students)
            cmd = [sys.executable, "-m", "course.grade_class", course, "--device", "gpu", "--seed", "1"]
            cmd += ["--slurm", "--wait"] if how == "slurm" else []
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
            wall = time.perf_counter() - t0
            lines.append(f"- {how}: `{' '.join(cmd[1:])}`: status {proc.returncode}, {wall:.1f} s")
            if proc.returncode:
                lines.append("```\n" + (proc.stdout + proc.stderr)[-1500:] + "\n```")
                return "\n".join(lines) + "\n"
            results[how] = class_benchmark.verdicts(course, roster)
            if how == "slurm":
                acct = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True)
                lines.append(f"  Slurm output: {proc.stdout.strip().splitlines()[-1][:300] if proc.stdout.strip() else ''}"
                             f"; queue afterwards: {acct.stdout.strip() or 'empty'}")
        lines += ["", "| student | local score | Slurm score | Slurm task's GPU | same verdicts |", "|---|---|---|---|---|"]
        same = True
        for student in results["local"]:
            a, b = results["local"][student], results["slurm"][student]
            equal = (a["score"], a["checks"]) == (b["score"], b["checks"])
            same = same and equal
            lines.append(f"| {student} | {a['score']:g} | {b['score']:g} | {b['worker'].get('gpu')} | {equal} |")
        lines += ["", f"Verdicts identical: {same}."]
    finally:
        subprocess.run(["bash", os.path.join(ROOT, "tests", "slurm", "start-cluster.sh"), "--stop", cluster])
    return "\n".join(lines) + "\n"
