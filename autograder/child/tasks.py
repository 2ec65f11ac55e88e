"""Grading children: the run task. C for each input pair, from the parent's checked launch plan of that shape: run in
Numba's simulator (kernels looked up by name in the module) or, in a GPU runner, loaded from the build's PTX."""
import traceback


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


# NaN patterns: C's never-written poison is the canonical NaN; the guards around A and B hold another one, so a
# NaN in C that is not the poison was computed (from a guard value read past an edge of A or B).
GUARD_NAN_BITS = 0x7FC0BAD0


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


class _SimPlanLaunches:
    """The simulator's launches: the parent's checked plan of each shape (recorded by the build child, which alone
    ever calls the launcher), with each kernel looked up by its name in the module. What the simulator runs is what
    the build compiled: the same kernels, grids, blocks and arguments."""

    def __init__(self, job, module):
        from autograder.child.launches import is_cuda_kernel, is_device_function
        self.plans, self.kernels = job["plans"], []
        for name in job["kernels"]:
            kernel = getattr(module, name, None)
            if not is_cuda_kernel(kernel) or is_device_function(kernel):
                raise RuntimeError(f"{name} is not a kernel of the module")
            self.kernels.append((name, kernel))

    def prepare(self, i, A, B, C):
        import numpy as np
        from autograder.child import launches as L
        plan = self.plans[i]
        if "error" in plan:  # the launcher failed at this shape in the build child (or its plan was refused)
            raise L.LaunchError(plan["error"]["message"])
        operands = {"A": A, "B": B, "C": C}
        recorded = []
        for item in plan["launches"]:
            name, kernel = self.kernels[item["kernel"]]
            args = tuple(operands[a] if isinstance(a, str) else
                         (bool(a["value"]) if a["type"] == "bool" else getattr(np, a["type"])(a["value"]))
                         for a in item["args"])
            recorded.append((name, kernel, (tuple(item["grid"]), tuple(item["block"]), 0, item["shared"]), args))
        return (lambda: L.replay(recorded)), len(recorded), recorded


class _PlanLaunches:
    """A GPU runner's launches: the parent's checked plan of each shape, from the build child's PTX."""

    def __init__(self, job):
        from autograder.child.plan_launch import Loaded
        self.plans, self.loaded = job["plans"], Loaded(job["kernels"])

    def prepare(self, i, A, B, C):
        from autograder.child import launches as L
        from autograder.child.plan_launch import launcher
        plan = self.plans[i]
        if "error" in plan:  # the launcher failed at this shape in the build child (or its plan was refused)
            raise L.LaunchError(plan["error"]["message"])
        return launcher(self.loaded, plan["launches"], A, B, C), len(plan["launches"]), None


def task_run(job, module, inputs, tell=lambda word: None):
    """Run the planned launches of each input pair (a GPU runner from PTX, otherwise in the simulator); return every
    C and what happened. `tell(b"b")` as each shape begins, `tell(b"s")` once its kernels are loaded, right before
    they run (entry.tell)."""
    import numpy as np
    from numba import cuda
    import time
    from autograder.child import launches as L
    facts, arrays = {"shapes": []}, {}
    began = time.perf_counter()
    if job["device"] == "gpu":
        cuda.current_context()
    facts["cuda_init_s"] = time.perf_counter() - began
    if module is None:
        source = _PlanLaunches(job)
        facts["kernel"] = source.loaded.attributes(0)  # the stage kernel as the driver loaded it
    else:
        source = _SimPlanLaunches(job, module)
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
            if job.get("instrument"):
                from autograder.sim.instrument import run_instrumented
                shape_facts["instruments"] = run_instrumented(recorded, A, B, C, job)
            else:
                from autograder.sim.writes import run_tracked
                run_tracked(run, C, job, shape_facts)  # the simulator: stores to C by two threads (lost updates)
            cuda.synchronize()
            shape_facts["replay_s"] = time.perf_counter() - began
        except L.LaunchError as exc:
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
