"""The worker slots of a class run: the GPUs this run may use, and how many grading processes each one gets.

In the GPU tier a slot is one GPU shared by ``gpu_workers`` processes (their runners and GPU tools share it, each
timing has it alone: autograder/gpu/slot.py); in the simulator tier a slot is a share of the cores.
"""
import os
import shutil
import subprocess

from ..settings import CourseError


def visible_gpus():
    """The GPU ids this run may use: CUDA_VISIBLE_DEVICES when set, else every GPU nvidia-smi lists."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, line in enumerate(l for l in out.stdout.splitlines() if l.startswith("GPU "))]


def parse_gpus(value):
    """--gpus: a count ("2") or GPU ids ("0,3"); returns (count or None, ids or None)."""
    value = str(value).strip()
    if "," in value or not value.isdigit():
        ids = [v.strip() for v in value.split(",") if v.strip()]
        if not ids or not all(v.isdigit() for v in ids) or len(set(ids)) != len(ids):
            raise CourseError(f"--gpus {value!r}: give a number of GPUs (2) or distinct GPU ids (0,1)")
        return None, ids
    return int(value), None


def plan_slots(device, gpus, gpu_workers, workers, n_todo):
    """[(label, env)] of the worker slots for `n_todo` submissions, and the engine's jobs per worker (None:
    unchanged). gpus: "--gpus" (a count or ids); gpu_workers: processes per GPU; workers: the simulator tier's."""
    cores = os.cpu_count() or 1
    if device == "gpu":
        count, ids = parse_gpus(gpus)
        visible = visible_gpus()
        if ids is None:
            if count and count > len(visible):
                raise CourseError(f"{count} GPUs asked for; this machine shows {len(visible)} "
                                  f"({', '.join(visible) or 'none'})")
            ids = visible[:count] if count else visible
        if not ids:
            raise CourseError("no GPU to grade on: nvidia-smi lists none (or CUDA_VISIBLE_DEVICES is empty)")
        if workers:
            raise CourseError("--workers is the simulator tier's; in the GPU tier choose the GPUs with --gpus "
                              "and the grading processes per GPU with --gpu-workers")
        # a GPU's workers share it and take turns at it for timing (autograder/gpu/slot.py); every GPU's first worker
        # comes first, so a small class still spreads over the GPUs
        slots = [(f"GPU {g}" + (f"/{w + 1}" if gpu_workers > 1 else ""), {"CUDA_VISIBLE_DEVICES": g})
                 for w in range(gpu_workers) for g in ids][:max(1, n_todo)]
        return slots, max(1, cores // len(slots))
    workers = workers or max(1, cores // 2)
    workers = max(1, min(workers, n_todo))
    return [(f"worker {i + 1}", {}) for i in range(workers)], (max(1, cores // workers) if workers > 1 else None)
