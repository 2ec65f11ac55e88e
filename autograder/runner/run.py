"""Runner side (never imports student code): the run task's loop. C for each input pair from the parent's checked
launch plan of that shape, on guarded operands; a GPU runner loads the build's PTX (PlanLaunches), and the simulator
child passes its own source and execution (sim/plans.py)."""
from autograder.protocol import GUARD_NAN_BITS, LaunchError, describe_error  # noqa: F401 (GUARD: the guards' pattern)


def wait_without_spinning():
    """Make this process's CUDA context wait for the GPU asleep (CU_CTX_SCHED_BLOCKING_SYNC) instead of spinning a
    core, before anything makes the context: a correctness runner or a GPU tool's child waits for kernels that take
    seconds under racecheck or ncu, and on a busy host every spinning core slows the CPU work of the others. The
    timing child keeps CUDA's default: its events time the GPU, but nothing of its launches may change. Returns
    "" or why the flag could not be set (the context then spins, as before)."""
    try:
        from cuda.bindings import driver
        err, = driver.cuInit(0)
        if err == driver.CUresult.CUDA_SUCCESS:
            err, dev = driver.cuDeviceGet(0)
        if err == driver.CUresult.CUDA_SUCCESS:
            err, = driver.cuDevicePrimaryCtxSetFlags(dev, driver.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC)
        return "" if err == driver.CUresult.CUDA_SUCCESS else getattr(err, "name", str(err))
    except Exception as exc:  # an older binding: the default scheduling
        return type(exc).__name__


def device_output(cuda, np, M, N):
    """C as a view at the start of a NaN-filled buffer; the tail catches stores past C's end."""
    guard = 64 * N + 1024
    buf = cuda.to_device(np.full(M * N + guard, np.nan, np.float32))
    return buf, buf[: M * N].reshape(M, N), guard


def guard_elements(rows, cols):
    """Guard length before and after an operand: 64 rows' worth plus 1024, rounded to 64 floats (256 B)."""
    return -(-(64 * max(cols, 1) + 1024) // 64) * 64


def guarded_input(cuda, np, host):
    """A device copy of an input matrix as a view inside a buffer with NaN guards before and after it, so a
    read past any edge of the matrix (past the last row, before the first) yields NaN and poisons C.
    Returns (buffer, view, guard)."""
    rows, cols = host.shape
    guard = guard_elements(rows, cols)
    filled = np.full(guard + rows * cols + guard, GUARD_NAN_BITS, np.uint32).view(np.float32)
    filled[guard: guard + rows * cols] = host.ravel()
    buf = cuda.to_device(filled)
    return buf, buf[guard: guard + rows * cols].reshape(rows, cols), guard


class PlanLaunches:
    """A GPU runner's launches: the parent's checked plan of each shape, from the build child's PTX."""

    def __init__(self, job):
        from autograder.runner.plan_launch import Loaded
        self.plans, self.loaded = job["plans"], Loaded(job["kernels"])

    def prepare(self, i, A, B, C):
        from autograder.runner.plan_launch import launcher
        plan = self.plans[i]
        if "error" in plan:  # the launcher failed at this shape in the build child (or its plan was refused)
            raise LaunchError(plan["error"]["message"])
        return launcher(self.loaded, plan["launches"], A, B, C), len(plan["launches"]), None


def task_run(job, source, inputs, tell=lambda word: None, execute=None):
    """Run the planned launches of each input pair from `source` (PlanLaunches: a GPU runner from PTX; the simulator's
    sim/plans.SimPlanLaunches); return every C and what happened. `execute(run, recorded, A, B, C, shape_facts, i)` runs
    one shape's launches (default: run them; the simulator's watches C's stores, or instruments the run).
    `tell(b"b")` as each shape begins, `tell(b"s")` once its kernels are loaded, right before they run (entry.tell)."""
    import numpy as np
    from numba import cuda
    import time
    facts, arrays = {"shapes": []}, {}
    began = time.perf_counter()
    if job["device"] == "gpu":
        cuda.current_context()
    facts["cuda_init_s"] = time.perf_counter() - began
    if isinstance(source, PlanLaunches):
        facts["kernel"] = source.loaded.attributes(0)  # the stage kernel as the driver loaded it
        if job.get("stage_kernels"):  # the grade's one runner (engine/together.py): each stage's kernel
            facts["stage_kernels"] = [source.loaded.attributes(i) for i in job["stage_kernels"]]
    for i in range(job["count"]):
        tell(b"b")
        A_host, B_host = inputs[f"A{i}"], inputs[f"B{i}"]
        M, N = A_host.shape[0], B_host.shape[1]
        _, A, _ = guarded_input(cuda, np, A_host)
        _, B, _ = guarded_input(cuda, np, B_host)
        buf, C, guard = device_output(cuda, np, M, N)
        shape_facts = {}
        facts["shapes"].append(shape_facts)
        try:
            run, count, recorded = source.prepare(i, A, B, C)
            buf.copy_to_device(np.full(M * N + guard, np.nan, np.float32))
            tell(b"s")
            began = time.perf_counter()
            if execute is None:
                run()
            else:
                execute(run, recorded, A, B, C, shape_facts, i)
            cuda.synchronize()
            shape_facts["replay_s"] = time.perf_counter() - began
        except LaunchError as exc:
            shape_facts["error"] = {"kind": "launch", "message": str(exc)}
            continue  # a plan's error is that shape's alone
        except Exception as exc:
            shape_facts["error"] = describe_error(exc, job.get("module_path"))
            if shape_facts["error"]["kind"] == "cuda_error":
                break  # a sticky CUDA error poisons the context: stop this child
            continue
        out = buf.copy_to_host()
        arrays[f"C{i}"] = out[: M * N].reshape(M, N)
        tail = out[M * N:]
        shape_facts["writes_past_end"] = int(np.count_nonzero(~np.isnan(tail)))
        shape_facts["launches"] = count
    return facts, arrays
