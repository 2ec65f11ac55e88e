"""Trusted parent side: what a sandboxed child can see, as bubblewrap or unshare arguments."""
import glob
import os
import shlex
import shutil
import sys

from .paths import BOX_GRADER, BOX_JOB, BOX_TMP, PACKAGE

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf",
             "alternatives")
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
TOOL_DIRS = ("/opt/nvidia",)  # Nsight Compute: the toolkit's `ncu` is a script that looks for it there
DEFAULT_SCRATCH_BYTES = 256 * 2**20


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


def view(files, device, wrapper=(), scratch_bytes=DEFAULT_SCRATCH_BYTES, outputs=(), dirs=(), gpu=None):
    """The sandbox's file system as a list of (op, source, destination).

    files: {name: host path} shown as /job/<name> (result.npz writable); outputs: (host file, path
    inside) pairs the child may write, such as a tool's log; dirs: (host folder, path inside, writable);
    gpu: the child's GPU (devices.ChildGpu), whose device files alone it sees, else it sees every GPU's."""
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
        nodes = gpu.device_files() if gpu is not None else sorted(glob.glob("/dev/nvidia*"))
        entries += [("dev", p, p) for p in nodes]
    if wrapper:
        ro(os.path.dirname(os.path.realpath(wrapper[0])))   # the tool's own installation
        for path in TOOL_DIRS:
            if os.path.isdir(path):
                ro(path)
    entries += [("rw", host, dest) for host, dest in outputs]
    entries += [("rw" if writable else "ro", host, dest) for host, dest, writable in dirs]
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
