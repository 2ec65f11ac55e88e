"""Trusted parent side: is the GPU the speed check times on used by anyone else?

Another process on the same GPU distorts timings unevenly: time-slicing favours
short kernels, so a 0.6 ms kernel against a 12 ms reference reads about twice
as fast as it is. The speed check therefore asks ``nvidia-smi`` which compute
processes hold the GPU before the timing child starts, every ``interval``
seconds while it runs, and after it ended, and reads the GPU's name, SM clock
and temperature before and after. Processes of the grader itself (this
process and its descendants: the timing child under the sandbox) are not
"others", also for a moment after they ended: the driver lists a process
until its CUDA context is torn down, after it left /proc. A listed pid that
has left /proc counts at the edges only if it is still listed `settle_s` later.

The GPU is the one CUDA device 0 is in the grader's environment: the first
entry of CUDA_VISIBLE_DEVICES (an index or a GPU-... UUID; nvidia-smi accepts
both with ``-i``), else GPU 0. With CUDA_DEVICE_ORDER unset CUDA numbers GPUs
fastest first, nvidia-smi by PCI bus: on a host of identical GPUs they agree;
pin workers by UUID to be certain.
"""
import os
import shutil
import subprocess
import threading
import time

from .. import procstat

GPU_FIELDS = ("name", "uuid", "clocks.sm", "clocks.max.sm", "temperature.gpu", "utilization.gpu")
APP_FIELDS = ("pid", "process_name", "used_memory")


def device_selector(environ=None):
    """The nvidia-smi -i argument for the GPU that CUDA device 0 is, from CUDA_VISIBLE_DEVICES."""
    environ = os.environ if environ is None else environ
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None or not visible.strip():
        return "0"
    first = visible.split(",")[0].strip()
    return first


def _smi(args, timeout=10):
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, "nvidia-smi is not on PATH"
    try:
        proc = subprocess.Popen([smi, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        return None, f"nvidia-smi failed: {type(exc).__name__}"
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()  # not waited for without end: an nvidia-smi stuck in the driver must not stop the grade
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        return None, f"nvidia-smi did not answer within {timeout} s"
    if proc.returncode != 0:
        return None, f"nvidia-smi exited {proc.returncode}: {(stderr or stdout).strip()[:200]}"
    return stdout, ""


def _number(text):
    try:
        return float(text)
    except ValueError:
        return None


def gpu_state(selector):
    """{name, uuid, sm_clock_mhz, max_sm_clock_mhz, temperature_c, utilization_percent} or {"problem": why}."""
    out, why = _smi(["--query-gpu=" + ",".join(GPU_FIELDS), "--format=csv,noheader,nounits", "-i", selector])
    if out is None:
        return {"problem": why}
    line = next((ln for ln in out.splitlines() if ln.strip()), "")
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(GPU_FIELDS):
        return {"problem": f"unexpected nvidia-smi output: {line[:200]!r}"}
    return {"name": parts[0], "uuid": parts[1], "sm_clock_mhz": _number(parts[2]), "max_sm_clock_mhz": _number(parts[3]),
            "temperature_c": _number(parts[4]), "utilization_percent": _number(parts[5])}


def compute_apps(selector):
    """([{pid, name, used_memory_mib}], problem): the compute processes on the GPU."""
    out, why = _smi(["--query-compute-apps=" + ",".join(APP_FIELDS), "--format=csv,noheader,nounits", "-i", selector])
    if out is None:
        return [], why
    apps = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        apps.append({"pid": int(parts[0]), "name": ",".join(parts[1:-1]), "used_memory_mib": _number(parts[-1])})
    return apps, ""


def descendants(root=None, proc="/proc"):
    """Pids of `root` (default: this process) and every process below it, read from /proc."""
    root = os.getpid() if root is None else root
    children = {}
    try:
        entries = os.listdir(proc)
    except OSError:
        return {root}
    for entry in entries:
        stat = procstat.read(os.path.join(proc, entry, "stat")) if entry.isdigit() else None
        if stat:
            children.setdefault(int(stat[1][1]), []).append(int(entry))
    ours, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in ours:
            ours.add(pid)
            todo.extend(children.get(pid, []))
    return ours


_OURS = set()  # pids listed on a GPU while they were this process's descendants (still ours once they ended)


class Watch:
    """Snapshots before, during (a thread polling every `interval` s) and after the timed child.

    Use: ``w = Watch(selector).start()``; run the child; ``facts = w.stop()``. `facts` holds the GPU states
    before and after, the processes of others seen at any point (``others``), ``shared`` and ``problem``
    (why exclusivity could not be checked, "" when it was)."""

    def __init__(self, selector=None, interval=1.0, proc="/proc", settle_s=2.0):
        self.selector = device_selector() if selector is None else selector
        self.interval, self.proc, self.settle_s = interval, proc, settle_s
        self.others, self.unresolved, self.problem, self.samples = {}, {}, "", 0
        self.edge_others, self.after, self.stopped_at = {}, {}, -1e9
        self._stop = threading.Event()
        self._thread = None

    def _sample(self, edge=False):
        """One listing. A pid that is not ours counts as another process. A pid this process cannot see in /proc
        is one of ours that ended if it was ours when listed before; else, while the child runs (not at the
        edges), it is only noted: in a container nvidia-smi may show host pids, our own child's among them. At
        the edges it counts if it is still listed after `settle_s` (a process that just ended, ours or not, is
        gone from the listing by then; a host pid stays). Returns the pids listed last."""
        apps, why = compute_apps(self.selector)
        if why:
            self.problem = why
            return set()
        self.samples += 1
        if not apps:
            return set()
        ours = descendants(proc=self.proc)
        gone = {}
        for app in apps:
            pid = app["pid"]
            if pid in ours:
                _OURS.add(pid)
            elif os.path.exists(os.path.join(self.proc, str(pid))):
                self.others.setdefault(pid, app)  # alive and not ours (also a pid of ours reused by another)
            elif pid in _OURS:
                continue  # ours, ended: listed until its context is torn down
            elif edge:
                gone[pid] = app
            else:
                self.unresolved.setdefault(pid, app)
        deadline = time.monotonic() + self.settle_s
        while gone and time.monotonic() < deadline:
            time.sleep(0.1)
            apps, why = compute_apps(self.selector)
            if why:
                break
            listed = {a["pid"] for a in apps}
            gone = {pid: app for pid, app in gone.items() if pid in listed}
        for pid, app in gone.items():
            self.others.setdefault(pid, app)
        return {a["pid"] for a in apps}

    def _edge(self):
        """The GPU's state and one listing of its processes, asked of nvidia-smi at once (each call takes about
        0.1 s, four per timed stage)."""
        state = {}
        asking = threading.Thread(target=lambda: state.update(gpu_state(self.selector)), daemon=True)
        asking.start()
        listed = self._sample(edge=True)
        asking.join()
        # the others this edge saw: the next watch may start from them (start's `after`)
        self.edge_others = {pid: app for pid, app in self.others.items() if pid in listed}
        return state

    def start(self, after=None, fresh_s=0.5):
        """Take the before edge, or, where `after` (the watch of the timing just before, on this GPU) stopped less
        than `fresh_s` ago, start from its after edge: nothing ran on the GPU since but the grader's own
        bookkeeping, and a process that appears from then on is listed by the polls or the stop edge, as within
        one timing (two nvidia-smi calls fewer between two timed stages)."""
        if (after is not None and after.selector == self.selector and not after.problem
                and time.monotonic() - after.stopped_at < fresh_s):
            self.before = dict(after.after)
            self.others.update(after.edge_others)
            self.samples += 1
        else:
            self.before = self._edge()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def _poll(self):
        while not self._stop.wait(self.interval):
            self._sample()

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join()
        after = self._edge()
        self.after, self.stopped_at = after, time.monotonic()
        return {"gpu": self.selector, "before": self.before, "after": after, "samples": self.samples,
                "others": sorted(self.others.values(), key=lambda a: a["pid"]), "shared": bool(self.others),
                "unresolved": sorted(self.unresolved.values(), key=lambda a: a["pid"]),
                "problem": self.problem or self.before.get("problem", "") or after.get("problem", "")}


def describe_others(others):
    """'pid 123 (python3), pid 456 (unknown)' for a message."""
    return ", ".join(f"pid {a['pid']} ({a['name'] or 'unknown'})" for a in others)
