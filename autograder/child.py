"""Grading child: runs one check's untrusted work and reports raw facts.

Started by the parent (autograder.sandbox) inside the sandbox as ``python -I
child.py SCRATCH`` with the job as JSON on stdin. It loads the submission by
file path (its folder is never put on sys.path, so a shipped numpy.py or
sitecustomize.py is not imported), runs the task and writes the job's
``result_path``: raw output arrays plus a JSON ``facts`` record that carries
the parent's nonce.
It never scores anything: the parent compares, judges and scores.
"""
import json
import os
import sys
import time
import traceback

SCRATCH = sys.argv[1] if __name__ == "__main__" else None


def load_student_module(path, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


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


def task_compile(job, module):
    """Facts about the kernel compiled for the real GPU target (PTX for job['cc'])."""
    import re
    from numba import cuda, float32
    from autograder.launches import is_cuda_kernel
    kernel = getattr(module, job["kernel"], None)
    facts = {"defines_kernel": kernel is not None, "is_cuda_kernel": is_cuda_kernel(kernel),
             "defines_launcher": callable(getattr(module, job["launcher"], None)),
             "constants": {k: getattr(module, k) for k in ("TILE", "TILE_PAD")
                           if isinstance(getattr(module, k, None), int)}}
    if not facts["is_cuda_kernel"]:
        return facts, {}
    sig = (float32[:, ::1], float32[:, ::1], float32[:, ::1])
    try:
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=tuple(job["cc"]))
    except Exception as exc:  # the GPU compiler rejected the kernel
        facts["compile_error"] = f"{type(exc).__name__}: {str(exc)[:1500]}"
        return facts, {}
    facts["shared_arrays"] = [int(n) for n in re.findall(r"^\s*(?:\.visible\s+)?\.shared\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\];", ptx, re.M)]
    facts["barriers"] = len(re.findall(r"\b(?:bar|barrier)\.sync\b", ptx))
    if job["device"] == "gpu":  # the kernel as the driver loads it on this GPU
        from numba import void
        signature = void(*sig)
        kernel.compile(signature)
        facts["registers"] = kernel.get_regs_per_thread(signature)
        facts["shared_bytes"] = kernel.get_shared_mem_per_block(signature)
        facts["local_bytes"] = kernel.get_local_mem_per_thread(signature)
    return facts, {}


def _device_output(cuda, np, M, N):
    """C as a view at the start of a NaN-filled buffer; the tail catches stores past C's end."""
    guard = 64 * N + 1024
    buf = cuda.to_device(np.full(M * N + guard, np.nan, np.float32))
    return buf, buf[: M * N].reshape(M, N), guard


def task_run(job, module, inputs):
    """Run the launcher on each input pair; return every C and what happened."""
    import numpy as np
    from numba import cuda
    from autograder import launches as L
    facts, arrays = {"shapes": []}, {}
    for i in range(job["count"]):
        A_host, B_host = inputs[f"A{i}"], inputs[f"B{i}"]
        M, N = A_host.shape[0], B_host.shape[1]
        A, B = cuda.to_device(A_host), cuda.to_device(B_host)
        buf, C, guard = _device_output(cuda, np, M, N)
        shape_facts = {}
        facts["shapes"].append(shape_facts)
        try:
            recorded = L.record_launches(module, job["launcher"], A, B, C)
            L.validate(recorded, job["kernel"], A, B, C)
            buf.copy_to_device(np.full(M * N + guard, np.nan, np.float32))
            if job.get("instrument"):
                from autograder import siminstruments
                shape_facts["instruments"] = siminstruments.run_instrumented(recorded, A, B, C, job)
            else:
                L.replay(recorded)
            cuda.synchronize()
        except L.LaunchError as exc:
            shape_facts["error"] = {"kind": "launch", "message": str(exc)}
            break
        except Exception as exc:
            shape_facts["error"] = describe_error(exc, job["module_path"])
            if shape_facts["error"]["kind"] == "cuda_error":
                break  # a sticky CUDA error poisons the context: stop this child
            continue
        out = buf.copy_to_host()
        arrays[f"C{i}"] = out[: M * N].reshape(M, N)
        tail = out[M * N:]
        shape_facts["writes_past_end"] = int(np.count_nonzero(~np.isnan(tail)))
        shape_facts["launches"] = len(recorded)
    return facts, arrays


def main():
    job = json.loads(sys.stdin.read())
    nonce = job.pop("nonce")
    sys.path.insert(0, job["grader_root"])
    import warnings
    warnings.simplefilter("ignore")  # Numba performance warnings are not the student's failure
    if job["device"] == "sim":
        import threading
        threading.stack_size(1 << 20)  # one Python thread per CUDA thread: 1024 default 8 MiB stacks overrun RLIMIT_AS
    import numpy as np
    inputs = np.load(job["inputs_path"], allow_pickle=False) if job["task"] == "run" else {}
    facts, arrays = {}, {}
    started = time.perf_counter()
    try:
        module = load_student_module(job["module_path"], job["module"])
    except Exception as exc:
        facts["import_error"] = describe_error(exc, job["module_path"])
    else:
        task = {"compile": task_compile, "run": task_run}.get(job["task"])
        if task is None:
            from autograder import gpucheck
            task = getattr(gpucheck, "task_" + job["task"])
        try:
            facts, arrays = (task(job, module, inputs) if job["task"] == "run" else task(job, module))
        except Exception as exc:
            facts["task_error"] = describe_error(exc, job["module_path"])
    facts["nonce"] = nonce
    facts["seconds"] = time.perf_counter() - started
    with open(job["result_path"], "wb") as f:  # the one file the sandbox lets the child write
        np.savez(f, facts=np.array(json.dumps(facts)), **arrays)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: student atexit hooks and finalizers do not run


if __name__ == "__main__":
    main()
