"""Adversarial: fills result.npz with more bytes than any real result.
Expected: "not gradable: the check's result was larger than any real result"."""
import os

with open("/job/result.npz" if os.path.exists("/job") else "result.npz", "wb") as f:
    f.write(b"PK" + b"\0" * (3 * 2**20))
os._exit(0)
