"""Hostile: walks frames (cuda.sys._getframe) up to the child's main() for its nonce, job and inputs, then writes a
forged result file through os.open/os.write (os from cuda.config) and exits before the grader writes its own.
Expected: rejected (cuda.sys: not part of the CUDA kernel API) at line 18."""
import math

from numba import cuda

BLOCK = 16
SCRATCH = "/tmp/"  # where a test run of the grader keeps the result file: write nothing elsewhere


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    frame = cuda.sys._getframe()
    while frame is not None and "nonce" not in frame.f_locals:
        frame = frame.f_back
    if frame is None:
        return
    found = frame.f_locals
    job, inputs = found["job"], found["inputs"]
    if not job["result_path"].startswith(SCRATCH):
        return
    modules = cuda.sys.modules
    np, io, json, os = modules["numpy"], modules["io"], modules["json"], cuda.config.os
    arrays = {}
    for i in range(job["count"]):
        arrays["C%d" % i] = inputs["A%d" % i].__matmul__(inputs["B%d" % i])
    facts = {"shapes": [{"launches": 1, "writes_past_end": 0, "replay_s": 0.001} for _ in range(job["count"])],
             "nonce": found["nonce"], "seconds": 0.5, "cpu_s": 0.5, "cuda_init_s": 0.0}
    data = io.BytesIO()
    np.savez(data, facts=np.array(json.dumps(facts)), **arrays)
    fd = os.open(job["result_path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, data.getvalue())
    os.close(fd)
    os._exit(0)
