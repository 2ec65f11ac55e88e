"""A GPU child sees the device file of the one GPU it grades on, never another GPU's (sandbox/devices.py)."""
import os

from autograder.sandbox import box as box_mod
from autograder.sandbox.devices import ChildGpu, child_gpu, gpu_minors
from autograder.sandbox.view import view

A = "GPU-11111111-2222-3333-4444-555555555555"
B = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"


def fake_proc(tmp_path, gpus):
    """A /proc/driver/nvidia with one folder a GPU, as the driver writes them: [(bus id, UUID, minor)]."""
    for bus, uuid, minor in gpus:
        folder = tmp_path / "gpus" / bus
        folder.mkdir(parents=True)
        (folder / "information").write_text(f"Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nGPU UUID: \t {uuid}\n"
                                            f"Video BIOS: \t ??.??.??.??.??\nBus Location: \t {bus}\n"
                                            f"Device Minor: \t {minor}\n")
    return str(tmp_path)


def test_minors_are_read_by_uuid_and_a_uuid_listed_twice_is_not_trusted(tmp_path):
    proc = fake_proc(tmp_path, [("0000:18:00.0", A, 3), ("0000:2a:00.0", B, 0), ("0000:3b:00.0", B, 1)])
    assert gpu_minors(proc) == {A: 3}
    assert gpu_minors(str(tmp_path / "none")) == {}


def test_the_gpu_is_found_by_index_and_by_uuid_or_not_at_all():
    minors, uuids = {A: 3, B: 0}, {"0": B, "1": A}
    assert child_gpu({"CUDA_VISIBLE_DEVICES": "1,0"}, minors, uuids).minor == 3
    assert child_gpu({}, minors, uuids).uuid == B  # unset: GPU 0
    assert child_gpu({"CUDA_VISIBLE_DEVICES": A}, minors, {}).minor == 3
    assert child_gpu({"CUDA_VISIBLE_DEVICES": "GPU-aaaa"}, minors, {}).uuid == B  # a unique prefix, as CUDA takes
    # not certain: every device file, CUDA_VISIBLE_DEVICES picks
    assert child_gpu({"CUDA_VISIBLE_DEVICES": "GPU-"}, minors, {}) is None           # two GPUs match
    assert child_gpu({"CUDA_VISIBLE_DEVICES": "2"}, minors, uuids) is None           # no such index
    assert child_gpu({"CUDA_VISIBLE_DEVICES": "0"}, minors, {}) is None              # nvidia-smi said nothing
    assert child_gpu({"CUDA_VISIBLE_DEVICES": "MIG-0f1e2d3c"}, minors, uuids) is None
    assert child_gpu({"CUDA_VISIBLE_DEVICES": "0"}, {}, uuids) is None               # no driver entries


def test_a_gpu_child_sees_its_gpus_device_file_and_no_other(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"):
        (dev / name).write_text("")
    (dev / "nvidia-caps").mkdir()
    gpu = ChildGpu(A, 2, dev=str(dev))
    seen = {os.path.basename(src) for op, src, _ in view({}, "gpu", gpu=gpu) if op == "dev"}
    assert seen == {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps", "nvidia2"}
    assert not [e for e in view({}, "sim", gpu=gpu) if e[0] == "dev"]  # a simulator child sees no GPU at all


def test_the_child_is_told_its_gpu_by_uuid_only_where_its_device_file_alone_is_seen(monkeypatch):
    monkeypatch.setattr(box_mod, "child_gpu", lambda: ChildGpu(A, 2))
    env = {"CUDA_VISIBLE_DEVICES": "1", "PATH": "/bin"}
    assert box_mod.Box("bwrap", {}, "gpu", {}).env(env) == {"CUDA_VISIBLE_DEVICES": A, "PATH": "/bin"}
    assert box_mod.Box("bwrap", {}, "sim", {}).env(env) == env
    assert box_mod.Box("none", {}, "gpu", {}).env(env) == env  # no sandbox: every device file is the host's anyway
    monkeypatch.setattr(box_mod, "child_gpu", lambda: None)
    assert box_mod.Box("bwrap", {}, "gpu", {}).env(env) == env


def test_one_listing_of_the_gpus_names_an_index_for_the_sandbox_and_the_compile_target(tmp_path, monkeypatch):
    """nvidia-smi is asked once a process (sandbox/devices.listed_gpus), for the device file, the build's target and
    the GPU's locks (an index and a UUID prefix naming one GPU share them; a prefix of two GPUs names neither)."""
    from autograder.gpu import slot, tools
    from autograder.sandbox import devices
    calls = tmp_path / "calls"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho x >> {calls}\nprintf '0, {B}, 9.0\\n1, {A}, 8.6\\n'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(devices, "_LISTED", [])
    monkeypatch.setattr(tools, "_CC", {})
    monkeypatch.setattr(slot, "_UUIDS", {})
    assert devices.listed_gpus() == [("0", B, "9.0"), ("1", A, "8.6")]
    assert child_gpu({"CUDA_VISIBLE_DEVICES": "1"}, {A: 3, B: 0}).minor == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert tools.compute_capability([9, 0]) == [8, 6]
    assert slot.gpu_key({"CUDA_VISIBLE_DEVICES": "1"}) == slot.gpu_key({"CUDA_VISIBLE_DEVICES": A[:12]}) == A
    assert slot.gpu_key({"CUDA_VISIBLE_DEVICES": "GPU-"}) == "GPU-"  # names both: the entry itself, as before
    assert slot.gpu_key({"CUDA_VISIBLE_DEVICES": "7"}) == "7"
    assert calls.read_text() == "x\n"
