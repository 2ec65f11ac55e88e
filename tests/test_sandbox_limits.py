"""sandbox/limits.py: a child's resource limits are set by an exec wrapper (thread-safe, unlike preexec_fn)."""
import subprocess
import sys

from autograder.sandbox.limits import limited

SHOW = ("import resource as r; print([r.getrlimit(getattr(r, n)) for n in "
        "('RLIMIT_CPU', 'RLIMIT_FSIZE', 'RLIMIT_CORE', 'RLIMIT_NPROC', 'RLIMIT_AS', 'RLIMIT_DATA')])")


def test_wrapper_sets_every_limit_then_runs_the_command():
    limits = {"cpu_s": 7, "file_bytes": 10**6, "address_space_bytes": 2**33, "data_bytes": 2**32}
    p = subprocess.run(limited([sys.executable, "-c", SHOW], limits, nproc=4000), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str([(7, 12), (10**6, 10**6), (0, 0), (4000, 4000), (2**33, 2**33), (2**32, 2**32)])


def test_wrapper_leaves_unset_limits_alone():
    inherited = eval(subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True, timeout=60).stdout)
    p = subprocess.run(limited([sys.executable, "-c", SHOW], {"cpu_s": 5, "file_bytes": 10**6}, nproc=0),
                       capture_output=True, text=True, timeout=60)
    rows = eval(p.stdout)
    assert rows[0] == (5, 10) and rows[3:] == inherited[3:]


def test_gpu_children_get_one_hardware_queue_and_the_environment_may_override_it(monkeypatch):
    from autograder.sandbox.box import child_env
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_MAX_COPY_CONNECTIONS", raising=False)
    gpu = child_env("gpu", "/tmp/x")
    assert gpu["CUDA_DEVICE_MAX_CONNECTIONS"] == "1" and gpu["CUDA_DEVICE_MAX_COPY_CONNECTIONS"] == "1"
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in child_env("sim", "/tmp/x")  # the simulator has no queues
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4")
    assert child_env("gpu", "/tmp/x")["CUDA_DEVICE_MAX_CONNECTIONS"] == "4"


SPIN = ("import os, time, sys; sys.path.insert(0, os.getcwd()); {first}import numpy as np; a = np.ones((200, 200)); "
        "t = time.process_time()\nfor _ in range(20):\n    a @ a; time.sleep(0.03)\nprint(time.process_time() - t)")


def test_grading_processes_run_blas_on_one_thread_that_does_not_spin(monkeypatch):
    """OpenBLAS starts one thread per core, and each busy-waits after every product: the grader's small float64
    products then kept a 32-core host's cores spinning (about 160 CPU s a grade). Importing the grader (or the course
    package) first sets one thread; children get it in their environment."""
    import os
    from autograder.sandbox.box import child_env
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cpu = {}
    for label, first in (("plain numpy", ""), ("after the course package", "import course; ")):
        p = subprocess.run([sys.executable, "-c", SPIN.format(first=first)], cwd=root, capture_output=True, text=True,
                           timeout=120, env=dict(os.environ))
        assert p.returncode == 0, p.stderr
        cpu[label] = float(p.stdout)
    assert cpu["after the course package"] < 0.25, cpu
    if (os.cpu_count() or 1) > 1:  # the spinning this prevents is real here too: one spare core spins
        assert cpu["plain numpy"] > 2 * cpu["after the course package"], cpu
    assert child_env("gpu", "/tmp/x")["OPENBLAS_NUM_THREADS"] == child_env("sim", "/tmp/x")["MKL_NUM_THREADS"] == "1"


def test_the_grader_writes_its_own_bytecode_for_the_children():
    """Children cannot write bytecode (PYTHONDONTWRITEBYTECODE, a read-only package): the parent writes it first, so
    no child compiles the grader's modules again."""
    import importlib.util
    import os
    from autograder.sandbox import backends
    from autograder.sandbox.paths import PACKAGE
    source = os.path.join(PACKAGE, "sim", "recorder.py")
    cached = importlib.util.cache_from_source(source)
    if os.path.exists(cached):
        os.remove(cached)
    assert backends.precompile()
    assert os.path.exists(cached) and os.path.getmtime(cached) >= os.path.getmtime(source)
