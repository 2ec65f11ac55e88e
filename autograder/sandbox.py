"""Start one grading child in a sandbox and collect what it reports, whatever it does.

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
  on the GPU tier also /dev/nvidia*; for a tool wrapper (compute-sanitizer,
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
import fcntl
import glob
import json
import os
import resource
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import numpy as np

GRADER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(GRADER_ROOT, "autograder")
CHILD = os.path.join(PACKAGE, "child.py")

BOX_GRADER = "/grader"  # inside the sandbox: holds the autograder package only
BOX_JOB = "/job"        # the student's module, inputs.npz and result.npz
BOX_TMP = "/tmp"        # size-limited tmpfs: HOME, TMPDIR, cwd

UID_BASE = 1_800_000_000  # as root, children run as UID_BASE + slot (no passwd entry needed)
UID_SLOTS = 4096
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf",
             "alternatives")
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
TOOL_DIRS = ("/opt/nvidia",)  # Nsight Compute: the toolkit's `ncu` is a script that looks for it there
DEFAULTS = {"sandbox": "auto", "processes": 2048, "scratch_bytes": 256 * 2**20}
START_ERRORS = ("bwrap:", "unshare:", "mount:", "chroot:", "setpriv:", "env:", "sandbox:")


@dataclass
class ChildResult:
    facts: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict)
    problem: str = ""       # why no trustworthy result came back ("" when one did); starts "not gradable: "
    log: str = ""           # the capped tail of the child's stdout and stderr
    seconds: float = 0.0
    sandbox: str = ""       # the backend that ran it: bwrap, unshare or none
    uid: int = None         # the uid it ran as, when the grader could give it one of its own


def _limit(limits, key):
    return limits.get(key, DEFAULTS.get(key))


# -- the view: what a child can see ------------------------------------------------
# Entries are (op, source, destination): ro/rw/dev bind a host path, tmpfs/proc/devfs
# mount a fresh file system, symlink makes a link, in this order.

def _under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _host_paths():
    """Python installation, venv and the driver/toolkit folders the child's environment names."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]
    for key, value in os.environ.items():
        if key.startswith(("CUDA_", "NVIDIA_", "LD_LIBRARY_PATH", "NUMBA_CUDA_")):
            paths += [p for p in value.split(":") if p.startswith("/") and os.path.exists(p)]
    return paths


def view(files, device, wrapper=(), scratch_bytes=DEFAULTS["scratch_bytes"], outputs=()):
    """The sandbox's file system as a list of (op, source, destination).

    files: {name: host path} shown as /job/<name> (result.npz writable); outputs: (host file, path
    inside) pairs the child may write, such as a tool's log."""
    entries, bound = [], []

    def ro(path):
        for dest in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):
            if not _under(dest, bound) and dest != "/":
                entries.append(("ro", os.path.realpath(path), dest))
                bound.append(dest)

    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            entries.append(("symlink", os.readlink(d), d))
        elif os.path.isdir(d):
            ro(d)
    for name in ETC_FILES:
        path = "/etc/" + name
        if os.path.islink(path):
            entries.append(("symlink", os.readlink(path), path))
        elif os.path.exists(path):
            ro(path)
    ro("/sys")
    entries += [("proc", None, "/proc"), ("devfs", None, "/dev"), ("tmpfs", int(scratch_bytes), BOX_TMP)]
    for path in _host_paths():
        ro(path)
    entries.append(("ro", PACKAGE, BOX_GRADER + "/autograder"))
    for name, path in files.items():
        entries.append(("rw" if name == "result.npz" else "ro", path, f"{BOX_JOB}/{name}"))
    if device == "gpu":
        entries += [("dev", p, p) for p in sorted(glob.glob("/dev/nvidia*"))]
    if wrapper:
        ro(os.path.dirname(os.path.realpath(wrapper[0])))   # the tool's own installation
        for path in TOOL_DIRS:
            if os.path.isdir(path):
                ro(path)
    entries += [("rw", host, dest) for host, dest in outputs]
    return entries


def _ancestors(path):
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bwrap_argv(entries, inner, as_root):
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "grading"]
    if as_root:  # no user namespace: setpriv needs these two to drop to the child's uid, then has none
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user", "--disable-userns"]
    made, mounted = set(), []
    for op, src, dest in entries:
        for parent in _ancestors(dest):  # bwrap makes missing parents 0700; the child must traverse them
            if parent not in made and not _under(parent, mounted):
                argv += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        if op == "tmpfs":
            argv += ["--perms", "1777", "--size", str(src), "--tmpfs", dest]
        elif op == "proc":
            argv += ["--proc", dest]
        elif op == "devfs":
            argv += ["--dev", dest]
        elif op == "symlink":
            argv += ["--symlink", src, dest]
        else:
            argv += [{"ro": "--ro-bind", "rw": "--bind", "dev": "--dev-bind"}[op], src, dest]
        made.add(dest)
        if op in ("ro", "rw", "symlink"):
            mounted.append(dest)
    return argv + ["--chdir", BOX_TMP, "--", *inner]


def unshare_argv(entries, inner, root_dir):
    """The fallback: unshare's namespaces, a view built by mount in root_dir, then chroot."""
    q = shlex.quote
    R = root_dir
    lines = ["set -e", f"mount -t tmpfs -o mode=0755,size=16m,nosuid,nodev sandbox {q(R)}"]
    for op, src, dest in entries:
        d = q(R + dest)
        if op in ("ro", "rw", "dev"):
            make = f"mkdir -p {d}" if os.path.isdir(src) else f"mkdir -p {q(os.path.dirname(R + dest))}; : > {d}"
            flags = "nosuid" + ("" if op == "dev" else ",nodev") + (",ro" if op == "ro" else "")
            lines += [make, f"mount --rbind {q(src)} {d}", f"mount -o remount,bind,{flags} {d}"]
        elif op == "tmpfs":
            lines += [f"mkdir -p {d}", f"mount -t tmpfs -o mode=1777,size={int(src)},nosuid,nodev tmp {d}"]
        elif op == "proc":
            lines += [f"mkdir -p {d}", f"mount -t proc -o nosuid,nodev,noexec proc {d}"]
        elif op == "devfs":
            lines += [f"mkdir -p {d}/pts {d}/shm", f"ln -s /proc/self/fd {d}/fd"]
            for i, name in enumerate(("stdin", "stdout", "stderr")):
                lines.append(f"ln -s /proc/self/fd/{i} {d}/{name}")
            for node in DEV_NODES:
                lines += [f": > {d}/{node}", f"mount --bind /dev/{node} {d}/{node}"]
        elif op == "symlink":
            lines += [f"mkdir -p {q(os.path.dirname(R + dest))}", f"ln -s {q(src)} {d}"]
    # not exec: this shell stays PID 1, so the child can be killed by its own signals; like bwrap's
    # init it then exits 128 + the signal's number
    lines += [f"mount -o remount,bind,ro {q(R)}", f"chroot {q(R)} env -C {BOX_TMP} " + " ".join(map(q, inner))]
    return [shutil.which("unshare") or "unshare", "--mount", "--net", "--ipc", "--uts", "--pid", "--fork",
            "--kill-child", "--propagation", "private", "--", "/bin/sh", "-c", "\n".join(lines), "sandbox"]


# -- backends, probed once per process ---------------------------------------------

_probe_lock = threading.Lock()
_probed = {}
_warned = []


def _setpriv(uid):
    return [shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--no-new-privs"]


def _is_root():
    return os.geteuid() == 0


def backend(choice="auto"):
    """(name, why): the backend children will run under for this sandbox setting, and what is missing."""
    with _probe_lock:
        if choice not in _probed:
            _probed[choice] = _choose(choice)
        name, why = _probed[choice]
        if name in ("unshare", "none") and not _warned:
            _warned.append(True)
            what = ("children run WITHOUT ANY SANDBOX (rlimits only): student code can read every file this "
                    "user can, use the network and signal the grader" if name == "none" else
                    "children run in the unshare fallback: no network and a uid of their own, but "
                    "bubblewrap is the tested sandbox")
            print(f"autograder: WARNING: bubblewrap is not in use ({why}); {what}. Install the Debian package "
                  "'bubblewrap' (apt-get install -y bubblewrap).", file=sys.stderr, flush=True)
        return name, why


def _choose(choice):
    """Probe the backends this setting allows, best first; only "auto" may end with no sandbox."""
    if choice == "none":
        return "none", "sandbox = \"none\" in config.toml"
    if choice not in ("auto", "bwrap", "unshare"):
        return "unavailable", f"unknown sandbox setting {choice!r}: auto, bwrap, unshare or none"
    reasons = []
    for name in ("bwrap", "unshare"):
        if choice in ("auto", name):
            ok, why = _probe(name)
            if ok:
                return name, "; ".join(reasons) or ("" if name == "bwrap" else "sandbox = \"unshare\" in config.toml")
            reasons.append(why)
    return ("none" if choice == "auto" else "unavailable"), "; ".join(reasons)


def _probe(name):
    """Start `python -I -c 'import autograder'` the way a child would start; (worked, why not)."""
    tools = {"bwrap": ["bwrap", "setpriv"] if _is_root() else ["bwrap"],
             "unshare": ["unshare", "setpriv", "chroot", "mount", "env"]}[name]
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        return False, f"{' and '.join(missing)} not installed"
    if name == "unshare" and not _is_root():
        return False, "the unshare fallback needs root"
    code = f"import sys; sys.path.insert(0, {BOX_GRADER!r}); import autograder; print('sandbox-ok')"
    try:
        with _Box(name, {"sandbox": name}, "sim", {}) as box:
            out = subprocess.run(box.command([sys.executable, "-I", "-c", code]), capture_output=True, text=True,
                                 timeout=60, env=child_env("sim", BOX_TMP), cwd="/")
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{name} failed to start: {exc}"
    if "sandbox-ok" not in out.stdout:
        return False, f"{name} cannot make a sandbox here: {(out.stderr.strip() or out.stdout.strip())[-300:]}"
    return True, ""


class _Box:
    """One child's sandbox: a private folder for its files, a uid slot, the command that starts it."""

    def __init__(self, name, limits, device, files, wrapper=()):
        self.name, self.device, self.wrapper = name, device, tuple(wrapper)
        self.scratch_bytes = _limit(limits, "scratch_bytes")
        self.files = files
        self.outputs = []  # (file in this box, the wrapper's path for it)
        self.uid = None
        self.slot_file = None

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="grade-")   # 0700, the parent's: the child never sees it by name
        if self.name != "none" and _is_root():
            self.uid, self.slot_file = _take_uid()
        return self

    def path(self, name):
        return os.path.join(self.dir, name)

    def place(self, name, source=None, data=None):
        """Put a file the child gets as /job/<name>; the result file is the child's to write."""
        path = self.path(name)
        if source is not None:
            shutil.copyfile(source, path)
        elif data is not None:
            np.savez(path, **data)
        else:
            open(path, "wb").close()
        os.chmod(path, 0o600 if name == "result.npz" else 0o644)
        if name == "result.npz" and self.uid is not None:
            os.chown(path, self.uid, self.uid)
        self.files[name] = path
        return f"{BOX_JOB}/{name}" if self.name != "none" else path

    def tool_outputs(self):
        """A tool's log (a wrapper argument naming a file in a folder of the grader's) becomes a file of the
        child's own, bound at that path and copied back by deliver(): the grader's folder stays unseen."""
        for i, arg in enumerate(self.wrapper[1:]):
            folder = os.path.dirname(arg)
            if (arg.startswith("/") and os.path.isdir(folder) and not os.path.isdir(arg) and folder != "/"
                    and not _under(folder, SYSTEM_DIRS + ("/etc", "/proc", "/sys", "/dev") + TOOL_DIRS)):
                own = self.path(f"tool-output-{i}")
                open(own, "wb").close()
                os.chmod(own, 0o600)
                if self.uid is not None:
                    os.chown(own, self.uid, self.uid)
                self.outputs.append((own, arg))

    def deliver(self):
        for own, path in self.outputs:
            if os.path.getsize(own):
                shutil.copyfile(own, path)

    def command(self, inner):
        if self.name == "none":
            return list(self.wrapper) + list(inner)
        # the tool runs as the child's uid too: compute-sanitizer and ncu lose a target of another uid
        inner = (_setpriv(self.uid) if self.uid is not None else []) + list(self.wrapper) + list(inner)
        self.tool_outputs()
        entries = view(self.files, self.device, self.wrapper, self.scratch_bytes, self.outputs)
        if self.name == "bwrap":
            return bwrap_argv(entries, inner, _is_root())
        os.mkdir(self.path("root"), 0o700)
        return unshare_argv(entries, inner, self.path("root"))

    def __exit__(self, *exc):
        try:
            if self.uid is not None:
                _kill_uid(self.uid)
        finally:
            if self.slot_file is not None:
                self.slot_file.close()  # releases the flock: the uid may be used again
            shutil.rmtree(self.dir, ignore_errors=True)


def _lock_dir():
    base = "/run" if os.access("/run", os.W_OK) else tempfile.gettempdir()
    path = os.path.join(base, "autograder-sandbox-uids")
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077 or not os.path.isdir(path):
        raise RuntimeError(f"{path} is not a private folder of this user")
    return path


def _take_uid():
    """A uid no other running child (of any grader on this machine) has: flock on a per-uid file."""
    folder = _lock_dir()
    start = secrets.randbelow(UID_SLOTS)
    for i in range(UID_SLOTS):
        slot = (start + i) % UID_SLOTS
        f = open(os.path.join(folder, str(slot)), "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        uid = UID_BASE + slot
        _kill_uid(uid)  # nothing may survive from an earlier child
        return uid, f
    raise RuntimeError("all sandbox uids are in use")


def _uid_pids(uid):
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as f:
                    for line in f:
                        if line.startswith("Uid:"):
                            if str(uid) in line.split()[1:]:
                                pids.append(int(entry))
                            break
            except OSError:
                pass
    return pids


def _kill_uid(uid, seconds=5.0):
    """SIGKILL every process running as `uid` until none is left."""
    deadline = time.monotonic() + seconds
    while True:
        pids = _uid_pids(uid)
        if not pids or time.monotonic() > deadline:
            return not pids
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)


# -- running one child -----------------------------------------------------------------

def _limits(cfg, nproc):
    def apply():
        resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_s"], cfg["cpu_s"] + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_bytes"], cfg["file_bytes"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if nproc:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if cfg.get("address_space_bytes"):
            resource.setrlimit(resource.RLIMIT_AS, (cfg["address_space_bytes"],) * 2)
        if cfg.get("data_bytes"):  # heap and private memory; CUDA's address-space reservations are not counted
            resource.setrlimit(resource.RLIMIT_DATA, (cfg["data_bytes"],) * 2)
    return apply


def child_env(device, scratch):
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": scratch, "TMPDIR": scratch,
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "NUMBA_CACHE_DIR": scratch,
           "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "4"}  # glibc's default, 8 arenas of 64 MiB per core, lets
    # the simulator's thousand threads overrun the address-space limit on a many-core machine
    for key, value in os.environ.items():  # the GPU driver and toolkit location, nothing else
        if key.startswith(("CUDA_", "NVIDIA_", "LD_LIBRARY_PATH", "NUMBA_CUDA_")):
            env[key] = value
    if device == "sim":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return env


def run_child(job, limits, inputs=None, wrapper=(), timeout=None):
    """Run ``job`` in a fresh sandboxed child; never raises for anything the child does."""
    started = time.perf_counter()
    name, why = backend(_limit(limits, "sandbox"))
    if name == "unavailable":
        return ChildResult(problem=f"not gradable: the grading sandbox is not available ({why}); "
                                   "an instructor must install bubblewrap or change [limits] sandbox")
    nonce = secrets.token_hex(16)
    timeout = timeout or limits["check_timeout_s"]
    try:
        box = _Box(name, limits, job["device"], {}, wrapper).__enter__()
    except (OSError, RuntimeError) as exc:
        return ChildResult(problem=f"not gradable: the grading sandbox could not be prepared ({exc})", sandbox=name)
    try:
        inside = {"module_path": box.place(os.path.basename(job["module_path"]), source=job["module_path"]),
                  "result_path": box.place("result.npz")}
        if inputs:
            inside["inputs_path"] = box.place("inputs.npz", data=inputs)
        scratch = BOX_TMP if name != "none" else box.path("tmp")
        os.makedirs(box.path("tmp"), exist_ok=True)
        grader_root = BOX_GRADER if name != "none" else GRADER_ROOT
        child = os.path.join(grader_root, "autograder", "child.py")
        payload = json.dumps({**job, **inside, "nonce": nonce, "grader_root": grader_root}).encode()
        cmd = box.command([sys.executable, "-I", child, scratch])
        nproc = _limit(limits, "processes") if (box.uid is not None or not _is_root()) else 0
        log_path = box.path("output.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=box.path("tmp"), env=child_env(job["device"], scratch),
                                    start_new_session=True, preexec_fn=_limits(limits, nproc))
            try:
                proc.stdin.write(payload)
                proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                proc.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            _kill_group(proc)
        box.deliver()
        result = ChildResult(log=_tail(log_path, limits["log_bytes"]), seconds=time.perf_counter() - started,
                             sandbox=name, uid=box.uid)
        if timed_out:
            result.problem = (f"not gradable: the check did not finish within {timeout:.0f} s and was stopped: look "
                              "for a loop that never ends (a while loop whose condition never changes, or a barrier "
                              "not all threads reach)")
            return result
        code = proc.returncode
        if name != "none" and code > 128 and code - 128 in signal.valid_signals():
            code = 128 - code  # the sandbox's init reports a child killed by signal N as status 128 + N
        result.facts, result.arrays, result.problem = _read_result(box.path("result.npz"), nonce, code, limits,
                                                                   result.log)
        return result
    except OSError as exc:
        return ChildResult(problem=f"not gradable: the grader could not start the check ({exc})", sandbox=name,
                           seconds=time.perf_counter() - started)
    finally:
        box.__exit__(None, None, None)


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _tail(path, limit):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            text = f.read().decode("utf-8", "replace")
        return ("[... output cut ...]\n" if size > limit else "") + text
    except OSError:
        return ""


SIGNALS = {"SIGXCPU": "it used more CPU time than a check may (cpu_s)",
           "SIGXFSZ": "it wrote more output, or a larger file, than a check may (file_bytes)",
           "SIGKILL": "usually for using too much memory",
           "SIGSEGV": "a crash: memory the process must not touch",
           "SIGABRT": "the process aborted"}


def _read_result(path, nonce, returncode, limits, log=""):
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    if not size:
        first = log.lstrip().split("\n", 1)[0]
        if returncode and first.startswith(START_ERRORS):
            return {}, {}, f"not gradable: the sandbox could not start the check ({first.strip()[:300]})"
        if returncode and returncode < 0:
            sig = signal.Signals(-returncode).name
            return {}, {}, f"not gradable: the check was killed by signal {sig} ({SIGNALS.get(sig, 'a crash')})"
        return {}, {}, (f"not gradable: the code exited (status {returncode}) before the check finished: do not call"
                        " sys.exit, os._exit or kill processes")
    if size > limits["result_bytes"]:
        return {}, {}, "not gradable: the check's result was larger than any real result"
    try:
        with np.load(path, allow_pickle=False) as data:
            facts = json.loads(str(data["facts"]))
            arrays = {k: np.array(data[k]) for k in data.files if k != "facts"}
    except Exception as exc:
        return {}, {}, f"not gradable: the check's result could not be read ({type(exc).__name__})"
    if not isinstance(facts, dict) or facts.get("nonce") != nonce:
        return {}, {}, "not gradable: the check's result was not written by the grader (forged or tampered output)"
    if any(a.dtype != np.float32 for a in arrays.values()):
        return {}, {}, "not gradable: the check's result holds arrays of the wrong type (forged output)"
    return facts, arrays, ""
