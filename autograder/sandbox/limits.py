"""Trusted parent side: resource limits for a child, applied by a small exec wrapper.

``subprocess.Popen(preexec_fn=...)`` is unsafe when threads run (the grader
starts children from a thread pool), so the limits are set by a short Python
program that calls setrlimit and then execs the real command: the child's
process tree inherits them, exactly as from a preexec_fn.
"""
import json
import sys

_WRAPPER = """\
import json, os, resource, sys
for name, value in json.loads(sys.argv[1]):
    resource.setrlimit(getattr(resource, name), tuple(value))
os.execvp(sys.argv[2], sys.argv[2:])
"""


def rlimits(limits, nproc):
    """[(RLIMIT name, (soft, hard))] for one child, from the [limits] table of config.toml."""
    out = [("RLIMIT_CPU", (limits["cpu_s"], limits["cpu_s"] + 5)),
           ("RLIMIT_FSIZE", (limits["file_bytes"],) * 2),
           ("RLIMIT_CORE", (0, 0))]
    if nproc:
        out.append(("RLIMIT_NPROC", (nproc, nproc)))
    if limits.get("address_space_bytes"):
        out.append(("RLIMIT_AS", (limits["address_space_bytes"],) * 2))
    if limits.get("data_bytes"):  # heap and private memory; CUDA's address-space reservations are not counted
        out.append(("RLIMIT_DATA", (limits["data_bytes"],) * 2))
    return out


def limited(cmd, limits, nproc):
    """`cmd` prefixed with the wrapper that sets this child's limits and execs it."""
    return [sys.executable, "-I", "-S", "-c", _WRAPPER, json.dumps(rlimits(limits, nproc)), *cmd]
