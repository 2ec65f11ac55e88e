"""Trusted parent side: the device files a GPU child sees are those of the one GPU it grades on.

A child given every /dev/nvidiaN of the host could reach every GPU of it, and its CUDA initialisation walks all of
them. CUDA uses only the GPUs whose device files it can open (a container given one GPU works this way), so a GPU
child sees the driver's control files (nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset, nvidia-caps/) and
the one /dev/nvidiaN of its GPU, which it then has as CUDA device 0, named to it by UUID (CUDA_VISIBLE_DEVICES).

The GPU is the one CUDA device 0 is in the grader's environment (the first entry of CUDA_VISIBLE_DEVICES, else GPU
0; an index is nvidia-smi's, as gpu/exclusive.py reads it) and its device file is found by UUID in
/proc/driver/nvidia/gpus/*/information. Where that cannot be said for certain (no nvidia-smi, no /proc/driver/nvidia,
a MIG instance, a UUID found twice or never), the child sees every device file and CUDA_VISIBLE_DEVICES picks.
"""
import glob
import os
import shutil
import subprocess

CONTROL_FILES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia-caps")
PROC_NVIDIA = "/proc/driver/nvidia"
_FOUND = {}
_LISTED = []


class ChildGpu:
    """The GPU a child grades on: its UUID and the number of its device file."""

    def __init__(self, uuid, minor, dev="/dev"):
        self.uuid, self.minor, self.dev = uuid, minor, dev

    def device_files(self):
        """What the child sees of /dev/nvidia*: the driver's control files and this GPU's file."""
        files = [os.path.join(self.dev, name) for name in CONTROL_FILES]
        return [p for p in files if os.path.exists(p)] + [os.path.join(self.dev, f"nvidia{self.minor}")]


def gpu_minors(proc=PROC_NVIDIA):
    """{GPU UUID: the number of its /dev/nvidiaN} from the driver's /proc entries; a UUID listed twice is left out."""
    found, twice = {}, set()
    for path in sorted(glob.glob(os.path.join(proc, "gpus", "*", "information"))):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        uuid, minor = fields.get("GPU UUID", "").strip(), fields.get("Device Minor", "").strip()
        if uuid.startswith("GPU-") and minor.isdigit():
            twice |= {uuid} if uuid in found else set()
            found[uuid] = int(minor)
    return {u: m for u, m in found.items() if u not in twice}


def listed_gpus():
    """[(index, UUID, compute capability)] of every GPU as nvidia-smi lists it, asked once per process ([] where it
    cannot say): which GPU an index names, here and for the build's compile target (gpu/tools.py)."""
    if not _LISTED:
        smi, out = shutil.which("nvidia-smi"), ""
        if smi:
            try:
                out = subprocess.run([smi, "--query-gpu=index,uuid,compute_cap", "--format=csv,noheader"],
                                     capture_output=True, text=True, timeout=20).stdout
            except (OSError, subprocess.SubprocessError):
                out = ""
        _LISTED.append([tuple(f.strip() for f in line.split(",")) for line in out.splitlines() if line.count(",") == 2])
    return _LISTED[0]


def listed_uuid(selector):
    """The UUID of the GPU that a CUDA_VISIBLE_DEVICES entry names (an nvidia-smi index, or a UUID or a unique
    prefix of one), as nvidia-smi lists it; None where the listing cannot say."""
    uuids = [uuid for index, uuid, _ in listed_gpus()
             if selector == index or (selector.startswith("GPU-") and uuid.startswith(selector))]
    return uuids[0] if len(uuids) == 1 else None


def child_gpu(environ=None, minors=None, uuids=None):
    """The ChildGpu of CUDA device 0 in `environ` (default this process's), or None where it is not certain."""
    environ = os.environ if environ is None else environ
    default = minors is None and uuids is None
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    selector = visible.split(",")[0].strip() if visible and visible.strip() else "0"
    if default and selector in _FOUND:
        return _FOUND[selector]
    minors = gpu_minors() if minors is None else minors
    if not minors:
        uuid = None
    elif selector.isdigit():
        uuids = {index: uuid for index, uuid, _ in listed_gpus()} if uuids is None else uuids
        uuid = uuids.get(selector)
    else:  # CUDA takes any unique prefix of a UUID
        matches = [u for u in minors if selector.startswith("GPU-") and u.startswith(selector)]
        uuid = matches[0] if len(matches) == 1 else None
    gpu = ChildGpu(uuid, minors[uuid]) if uuid in minors else None
    if default:
        _FOUND[selector] = gpu
    return gpu
