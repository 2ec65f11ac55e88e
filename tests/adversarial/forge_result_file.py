"""Adversarial: writes its own result.npz (perfect-looking facts, a guessed
nonce) wherever the grader might read it, then exits before the grader can.
Expected: "not gradable: ... not written by the grader (forged ...)"."""
import glob
import json
import os

import numpy as np

facts = {"nonce": "0" * 32, "shapes": [{"launches": 1, "writes_past_end": 0}], "seconds": 0.1}
targets = ["/job/result.npz", "result.npz", os.path.join(os.environ.get("TMPDIR", "/tmp"), "result.npz")]
targets += glob.glob("/tmp/grade-*/result.npz")
for path in targets:
    try:
        with open(path, "wb") as f:
            np.savez(f, facts=np.array(json.dumps(facts)), C0=np.ones((3, 3), np.float32))
        print("wrote", path)
    except OSError as exc:
        print("cannot write", path, exc)
os._exit(0)


from numba import cuda  # noqa: E402  (never reached)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
