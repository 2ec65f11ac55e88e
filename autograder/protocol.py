"""The contract between the trusted parent and its children, as data: the launch plan's shapes (what a plan may
name), the shape of every child's report (checked before anything is judged), the guard pattern around the
operands, how an error under student code is reported, and the fill that makes the timed inputs from their seeds
(rebuilt here, with NumPy, by the parent). It imports nothing of the grader: the build side, the runner side, the
simulator and the parent all read it, and none of them needs another to read it.

A child's result file is data written by a process that ran student code. The parent reads it without pickle
and checks its nonce (sandbox/run.py); here it checks that every fact has the type the judges expect (finite
numbers, counts, strings, the known keys and nothing else), that there are no more shapes than the parent sent,
and that every array has the shape the task gives it. A report that fails is "not gradable: the child's report
was malformed (...)": nothing in it is judged, and the grade goes on.
"""
import math
import traceback


import numpy as np

NUM, COUNT, STR, BOOL, JSON, PTX = "num", "count", "str", "bool", "json", "ptx"
ERROR = {"kind": STR, "message": STR}
COMMON = {"nonce": STR, "seconds": NUM, "cpu_s": NUM, "phases": ("map", NUM), "import_error": ERROR,
          "task_error": ERROR}
COMPILE = {"defines_kernel": BOOL, "is_cuda_kernel": BOOL, "defines_launcher": BOOL, "compile_error": STR,
           "rejected": STR, "compiler_missing": STR, "compiled": ("list", STR), "shared_arrays": ("list", COUNT),
           "barriers": COUNT}
KERNEL_ATTRS = {"registers": COUNT, "shared_bytes": COUNT, "local_bytes": COUNT}
# The build child's kernels and plans: here only their shape; sandbox/plan.py checks what they say
KERNEL = {"name": STR, "entry": STR, "ptx": ("list", PTX), "argtypes": ("list", STR), "max_registers": JSON,
          "carveout": JSON, "cooperative": JSON, "links": JSON, "debug": JSON}
LAUNCH = {"kernel": JSON, "grid": JSON, "block": JSON, "shared": JSON, "args": ("list", JSON)}
SHAPE = {"error": ERROR, "instruments": JSON, "replay_s": NUM, "writes_past_end": COUNT, "launches": COUNT,
         "c_writes": JSON}
STATS = {"median_ms": NUM, "times_ms": ("list", NUM), "past_end": ("list", COUNT), "cv": NUM}
BOARD = {"n": COUNT, "tflops": NUM, "timings": ("map", STATS), "cublas_tflops": NUM, "percent_of_cublas": NUM,
         "cublas_problem": STR}
TASKS = {
    "build": {**COMPILE, "kernels": ("list", KERNEL), "plans": ("list", {"launches": ("list", LAUNCH), "error": ERROR})},
    "run": {"shapes": ("list", SHAPE), "cuda_init_s": NUM, "kernel": KERNEL_ATTRS, "stage_kernels": ("list", KERNEL_ATTRS),
            "clock_s": ("map", NUM)},
    "speed": {"n": COUNT, "timings": ("map", STATS), "l2_reset": STR, "kernels_loaded": COUNT,
              "kernels_compiled": COUNT, "leaderboard": BOARD, "clock_s": ("map", NUM)},
    "warm": {"kernels_loaded": COUNT, "kernels_compiled": COUNT},
    "speed_parts": {"parts": ("list", {"n": COUNT, "timings": ("map", STATS), "l2_reset": STR, "leaderboard": BOARD}),
                    "kernels_loaded": COUNT, "kernels_compiled": COUNT, "clock_s": ("map", NUM)},
}
MAX_TEXT = 20_000   # characters of one string: an error message is cut at 1,500 by the child
MAX_PTX = 4 << 20   # characters of one PTX module (sandbox/plan.py says more)
MAX_DEPTH = 16  # facts.shapes[0].instruments.races.examples[0].first.thread[0] is 10 deep


class Malformed(ValueError):
    pass


def _check(value, spec, where, depth=0):
    if depth > MAX_DEPTH:
        raise Malformed(f"{where} is nested too deeply")
    if spec == NUM:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    elif spec == COUNT:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    elif spec == BOOL:
        ok = isinstance(value, bool)
    elif spec == STR:
        ok = isinstance(value, str) and len(value) <= MAX_TEXT
    elif spec == PTX:
        ok = isinstance(value, str) and len(value) <= MAX_PTX
    elif spec == JSON:  # the simulator's instrument counters: any JSON, with finite numbers and bounded text
        if isinstance(value, dict):
            for k, v in value.items():
                _check(v, JSON, f"{where}.{k}", depth + 1)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                _check(v, JSON, f"{where}[{i}]", depth + 1)
        ok = value is None or isinstance(value, (dict, list, bool)) or _is(value, NUM) or _is(value, STR)
    elif isinstance(spec, dict):
        ok = isinstance(value, dict)
        if ok:
            for k, v in value.items():
                if k not in spec:
                    raise Malformed(f"{where} has an unknown fact {str(k)[:40]!r}")
                _check(v, spec[k], f"{where}.{k}", depth + 1)
    elif spec[0] == "list":
        ok = isinstance(value, list)
        if ok:
            for i, v in enumerate(value):
                _check(v, spec[1], f"{where}[{i}]", depth + 1)
    else:  # ("map", spec): string keys
        ok = isinstance(value, dict)
        if ok:
            for k, v in value.items():
                _check(v, spec[1], f"{where}.{str(k)[:40]}", depth + 1)
    if not ok:
        raise Malformed(f"{where} is {type(value).__name__} {str(value)[:40]!r}, not {_describe(spec)}")


def _is(value, spec):
    try:
        _check(value, spec, "")
        return True
    except Malformed:
        return False


def _describe(spec):
    if isinstance(spec, str):
        return {"num": "a finite number", "count": "a count", "str": "text", "bool": "true or false",
                "json": "plain data", "ptx": "PTX text"}[spec]
    return "a record" if isinstance(spec, dict) else f"a {spec[0]}"


def _timed(job):
    """The kernels a timing child times: the student's, and the reference unless the grade timed it at this size
    already (the parent says so with its "go": engine/timing.py)."""
    return ("student", "reference") if job.get("time_reference", True) else ("student",)


def renumbered(plan, offset):
    """A plan whose launches name kernels `offset` places later: one runner that loads several stages' kernels in one
    list (the grade's one correctness runner, its one ncu run)."""
    if "launches" not in plan:
        return plan
    return {**plan, "launches": [{**item, "kernel": item["kernel"] + offset} for item in plan["launches"]]}


def part_job(job, k):
    """Part k of the grade's one timing child (task speed_parts) as the job of a timing child of its own."""
    return {**job["parts"][k], "task": "speed", "time_reference": job["time_reference"][k]}


def _arrays(job, inputs):
    """The arrays a task may return, name -> shape."""
    task = job["task"]
    if task == "speed_parts":
        return {f"P{k}_{name[2:]}": shape for k in range(len(job["parts"]))
                for name, shape in _arrays(part_job(job, k), inputs).items()}
    if task == "run":
        return {f"C{i}": (inputs[f"A{i}"].shape[0], inputs[f"B{i}"].shape[1]) for i in range(job["count"])}
    if task == "speed":
        columns = job.get("projection_columns", 2)
        want = {f"P_{name}": (len(job["seeds"]), job["n"], columns) for name in _timed(job)}
        board = job.get("leaderboard")
        if board:
            want.update({f"P_board_{name}": (len(board["seeds"]), board["n"], columns)
                         for name in ("student", "cublas")})
        return want
    return {}


def _check_speed(job, facts):
    """A timing child's timings (one part's, in the grade's one timing child) against its job."""
    runs = len(job["seeds"])
    timed = _timed(job)
    for name, stats in facts.get("timings", {}).items():
        if name not in timed or len(stats["times_ms"]) != runs:
            raise Malformed(f"timings of {str(name)[:40]!r} are not {runs} runs of " + " or ".join(timed))
    if set(facts.get("timings", {})) != set(timed):
        raise Malformed("the timings of " + " and ".join(timed) + " are not all there")
    if job.get("leaderboard"):
        board = facts.get("leaderboard")
        if board is None or "student" not in board.get("timings", {}):
            raise Malformed("the leaderboard's runs are missing")
        for name, stats in board["timings"].items():
            if name not in ("student", "cublas") or len(stats["times_ms"]) != len(job["leaderboard"]["seeds"]):
                raise Malformed(f"leaderboard timings of {str(name)[:40]!r} are not the runs it was given")


def check(job, inputs, facts, arrays, said=0):
    """"" when the report has the shape of `job`'s task, else why not."""
    try:
        spec = {**COMMON, **TASKS.get(job["task"], {})}
        _check(facts, spec, "facts")
        failed = "import_error" in facts or "task_error" in facts
        if job["task"] == "run":
            if said > job["count"] or len(facts.get("shapes", [])) > job["count"]:
                raise Malformed(f"it reported more shapes than the {job['count']} it was given")
        if job["task"] == "speed_parts" and not failed:
            if len(facts.get("parts", [])) != len(job["parts"]):
                raise Malformed(f"it reported {len(facts.get('parts', []))} timed parts, not the {len(job['parts'])} "
                                "it was given")
            for k, part in enumerate(facts["parts"]):
                _check_speed(part_job(job, k), part)
        if job["task"] == "speed" and not failed:
            _check_speed(job, facts)
        want = _arrays(job, inputs or {})
        for name, array in arrays.items():
            if name not in want:
                raise Malformed(f"it returned an array {str(name)[:40]!r} that its task has no place for")
            if array.shape != want[name] or array.dtype != np.float32:
                raise Malformed(f"array {name} is {array.dtype} {array.shape}, not float32 {want[name]}")
    except Malformed as exc:
        return str(exc)
    return ""


# numba types a plan may name, and how a value of each is written in JSON
NUMBER_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
                "bool")
# the grader's arrays, as a kernel compiled for them (C) or declared for any layout ("float32[:, :]": A) takes them
ARRAY_TYPES = ("array(float32, 2d, C)", "array(float32, 2d, A)")
OPERANDS = ("A", "B", "C")

# NaN patterns: C's never-written poison is the canonical NaN; the guards around A and B hold another one, so a
# NaN in C that is not the poison was computed (from a guard value read past an edge of A or B).
GUARD_NAN_BITS = 0x7FC0BAD0


class LaunchError(Exception):
    """The launcher broke the contract: wrong kernel, wrong arguments, no launch."""


def describe_error(exc, student_path):
    """One readable paragraph for an exception raised in or under student code."""
    if isinstance(exc, NotImplementedError):
        return {"kind": "not_implemented", "message": f"not implemented yet: {exc}".rstrip(": ")}
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == student_path]
    where = f" (line {frames[-1].lineno}: {frames[-1].line})" if frames else ""
    kind = "cuda_error" if "Cuda" in type(exc).__name__ or "CUDA_ERROR" in str(exc) else "exception"
    if isinstance(exc, IndexError):
        kind = "index_error"
    return {"kind": kind, "message": f"{type(exc).__name__}: {str(exc)[:800]}{where}"}


MASK32 = 0xFFFFFFFF


def _uniform_bits(h, seed, first, scratch):
    """fill_uniform's 24 random bits of elements first, first + 1, ... in place on uint32 `h`, which holds each
    element's offset from `first` times 2654435761 (mod 2**32); `scratch` is a uint32 array of h's size."""
    h += np.uint32((first * 2654435761 + int(seed) * 97531) & MASK32)
    np.right_shift(h, np.uint32(15), out=scratch)
    h ^= scratch
    h *= np.uint32(2246822519)
    np.right_shift(h, np.uint32(13), out=scratch)
    h ^= scratch
    h >>= np.uint32(8)
    return h


def fill_uniform_host(rows, cols, seed, first_row=0):
    """The same numbers as runner/references.fill_uniform makes on the GPU, computed with NumPy: the timed inputs are
    part of the contract, rebuilt from their seeds by the parent (checks/speed.py) without numba. `first_row`: rows
    first_row .. first_row + rows - 1 of a matrix `cols` wide.

    32-bit unsigned arithmetic wraps exactly as the kernel's masked 64-bit steps do, for any seed in
    [0, 2**63): the product seed * 97531 is reduced modulo 2**32 first, as the kernel's mask does.
    """
    h = np.arange(rows * cols, dtype=np.uint32)
    h *= np.uint32(2654435761)
    _uniform_bits(h, seed, first_row * cols, np.empty_like(h))
    out = h.astype(np.float32)
    out *= np.float32(1.0 / 8388608.0)
    out -= np.float32(1.0)
    return out.reshape(rows, cols)


def uniform_times(n, seed, right, block=128):
    """fill_uniform_host(n, n, seed) @ `right` in float64, `block` rows at a time (each block stays in cache; the
    matrix is never whole). A fill value is bits * 2**-23 - 1 exactly (24 bits), so a block's product is
    (bits @ right) * 2**-23 - the column sums of right: no float32 pass, and one array of each kind reused."""
    step = np.arange(block * n, dtype=np.uint32)
    step *= np.uint32(2654435761)
    bits, scratch, values = np.empty_like(step), np.empty_like(step), np.empty(block * n)
    out, shift = np.empty((n, right.shape[1])), right.sum(axis=0)
    for r in range(0, n, block):
        m = min(block, n - r) * n
        np.copyto(bits[:m], step[:m])
        _uniform_bits(bits[:m], seed, r * n, scratch[:m])
        values[:m] = bits[:m]
        out[r:r + m // n] = values[:m].reshape(m // n, n) @ right
    out *= 1.0 / 8388608.0
    out -= shift
    return out
