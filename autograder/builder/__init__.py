"""Untrusted side: the build child's code, the one GPU-tier child beside student code. It imports the kernel module,
records the launcher's plan at every shape (launches.py) and compiles each launched kernel to PTX (task.py)."""
