"""Trusted parent side. Start one grading child in a sandbox and collect what it reports, whatever it does.

Student code is hostile until proven otherwise. Every check runs in a fresh
interpreter (``python -I``: no user site, no PYTHONPATH, no script folder on
sys.path) inside a sandbox, with a wall-clock limit; the only thing read back
is one result file, loaded without pickle and checked against a nonce the
parent drew for this run. docs/SANDBOX.md has the same facts for instructors.

Backends (``[limits] sandbox`` in config.toml picks; "auto" takes the first that works)
  bwrap    bubblewrap (Debian package ``bubblewrap``): new mount, PID, network,
           IPC and UTS namespaces. Run as root, bwrap keeps only CAP_SETUID and
           CAP_SETGID, and ``setpriv`` then drops the child to its own uid.
  unshare  the fallback, root only: ``unshare`` makes the same namespaces and a
           short shell script builds the same view with ``mount`` and ``chroot``
           before ``setpriv`` drops to the child's uid.
  none     no sandbox at all (not root and no bubblewrap): rlimits only.
A warning goes to stderr once per process whenever children run without
bubblewrap, saying what is missing. ``sandbox = "bwrap"`` makes bubblewrap
mandatory: without it every check is reported "not gradable".

What a child sees (bwrap and unshare: a fresh root file system, read-only)
  /usr, /bin, /lib*, a few files of /etc (ld.so.cache, passwd, ...), /sys;
  the Python installation and virtual environment at their own paths;
  /grader/autograder: the grader package, nothing else of the repository (no
  solutions, tests, gradebook or other submissions);
  /job/<module>.py (the student's file) and /job/inputs.npz, read-only;
  /job/result.npz: the one writable file outside /tmp, owned by the child;
  /tmp (also HOME, TMPDIR, cwd): an empty tmpfs of ``scratch_bytes``;
  /proc of its own PID namespace; /dev with null, zero, random, urandom, tty;
  on the GPU tier also the driver's control files and its own GPU's
  /dev/nvidiaN, no other GPU's (devices.py); for a tool wrapper (compute-sanitizer,
  ncu) the tool's installation and, at the log path the grader chose, a
  file of the child's own that is copied back afterwards. The tool runs as
  the child's uid (compute-sanitizer and ncu lose a target of another uid).
  No network: the network namespace has only a loopback device that is down.

Who it runs as
  As root, each running child gets a uid of its own (UID_BASE + a slot locked
  with flock, so concurrent graders never share one): RLIMIT_NPROC then counts
  only that child's processes and threads, it cannot signal or ptrace the
  grader or another child, and no_new_privs is set. Any process left with
  that uid after the check is killed before the uid is used again.

Limits (setrlimit, config.toml [limits]): CPU seconds (cpu_s), file size
(file_bytes: caps the output log too), processes and threads (processes),
memory (data_bytes: RLIMIT_DATA, which CUDA tolerates), no core dumps, and
for simulator children an address-space limit. GPU children get no RLIMIT_AS:
CUDA initialisation fails under 8 GiB or less.

What comes back: stdout and stderr go to a log file outside the sandbox (the
tail is kept for the report); the result is /job/result.npz. A result that is
missing, unreadable, too large, of the wrong types or without the nonce makes
the check "not gradable: <why>"; so do a timeout, a signal and a sandbox
that could not start.
"""
from .backends import backend
from .run import ChildResult, child_env, run_child

__all__ = ["ChildResult", "backend", "child_env", "run_child"]
