"""Where the grader lives on the host and inside a sandbox (both sides read these names)."""
import os

GRADER_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(GRADER_ROOT, "autograder")
CHILD = os.path.join(PACKAGE, "child", "entry.py")

BOX_GRADER = "/grader"  # inside the sandbox: holds the autograder package only
BOX_JOB = "/job"        # the student's module, inputs.npz and result.npz
BOX_TMP = "/tmp"        # size-limited tmpfs: HOME, TMPDIR, cwd
BOX_KERNELS = "/kernels"  # compiled-kernel caches the parent names (autograder/runner/kernel_cache.py)
