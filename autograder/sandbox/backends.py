"""Trusted parent side: which sandbox backend children run under, probed once per process."""
import shutil
import subprocess
import sys
import threading

from .box import Box, child_env, is_root
from .paths import BOX_GRADER, BOX_TMP, PACKAGE


_probe_lock = threading.Lock()
_probed = {}
_warned = []


def precompile():
    """Write the bytecode of the grader's own modules (children run with PYTHONDONTWRITEBYTECODE and see the package
    read-only, so without it every child compiles every module it imports again). Nothing to do when it is up to
    date; a read-only installation is left as it is."""
    import compileall
    try:
        return compileall.compile_dir(PACKAGE, quiet=2)
    except OSError:
        return False


def backend(choice="auto"):
    """(name, why): the backend children will run under for this sandbox setting, and what is missing."""
    with _probe_lock:
        if choice not in _probed:
            if not _probed:
                precompile()
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
    tools = {"bwrap": ["bwrap", "setpriv"] if is_root() else ["bwrap"],
             "unshare": ["unshare", "setpriv", "chroot", "mount", "env"]}[name]
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        return False, f"{' and '.join(missing)} not installed"
    if name == "unshare" and not is_root():
        return False, "the unshare fallback needs root"
    code = f"import sys; sys.path.insert(0, {BOX_GRADER!r}); import autograder; print('sandbox-ok')"
    try:
        with Box(name, {"sandbox": name}, "sim", {}) as box:
            out = subprocess.run(box.command([sys.executable, "-I", "-c", code]), capture_output=True, text=True,
                                 timeout=60, env=child_env("sim", BOX_TMP), cwd="/")
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{name} failed to start: {exc}"
    if "sandbox-ok" not in out.stdout:
        return False, f"{name} cannot make a sandbox here: {(out.stderr.strip() or out.stdout.strip())[-300:]}"
    return True, ""
