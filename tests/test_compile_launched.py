"""Every kernel a launcher launches compiles for the GPU, in both tiers, or the stage keeps no points for it.

The simulator runs kernels as Python, so it ran what no GPU compiler accepts: a second kernel that uses NumPy
objects, a device helper declared with device=1 (which the grammar took for a kernel). The compile child now
records the launcher at the stage's shapes and compiles every launched kernel with the device functions it calls
(builder/task.py, the GPU tier's build); one that the compiler rejects fails the compile check, named, and no check
judged from running the module runs: the simulator runs only the plan the build compiled. The GPU tier's build child, which needs no
GPU, is checked here too; on a GPU machine the whole GPU tier.
"""
import os

import numpy as np
import pytest

from autograder import engine, stages
from autograder.checks import compiles, shortcuts
from autograder.checks.titles import title
from autograder.engine.stage import StageGrader
from autograder.grammar import violations
from autograder.submission import StageSource
from conftest import ROOT, by_key, failed, passed

NAIVE = stages.find("naive")
HONEST = os.path.join(ROOT, "tests", "grammar", "legit", "naive_second_kernel_device_helpers.py")
# module: (the function the GPU compiler rejects, how the compile check names it)
REJECTED = {"second_kernel_numpy.py": ("finish_kernel", "the GPU compiler rejected finish_kernel: TypingError"),
            "device_one_helper.py": ("dot", "the GPU compiler rejected dot (a device function that "
                                            "matmul_naive_kernel calls): TypingError")}


def text_of(name):
    path = name if os.path.isabs(name) else os.path.join(ROOT, "tests", "adversarial", name)
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_a_launched_kernel_the_gpu_cannot_compile_costs_the_stage_in_the_simulator_tier(grade_text, name):
    function, says = REJECTED[name]
    r = grade_text("naive", text_of(name))
    passed(r, "shortcuts")  # a module the grammar allows: device=1 declares a device function, as numba reads it
    assert says in failed(r, "compiles")
    for check in by_key(r, "correct"):  # the simulator computed the right product: it must not count
        assert check.status == "failed" and check.output.startswith(f"not run: the GPU compiler rejects {function}")
    assert r.score == 0


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_the_gpu_tiers_build_child_names_the_function_too(cfg, tmp_path, name):
    """The build child runs without a GPU: its compile check fails the same way, and no runner gets a plan."""
    g = StageGrader(StageSource(NAIVE, NAIVE.filename, text_of(name)), "gpu", cfg, np.random.default_rng(0),
                    str(tmp_path))
    result = g.build_alone()
    verdict = compiles.judge(g, result)
    assert verdict.status == "failed" and REJECTED[name][1] in verdict.output, verdict.output
    assert compiles.rejected(result) == REJECTED[name][0]
    assert g.runner_job("run", [(16, 16, 16)], count=1)[1].startswith(f"the GPU compiler rejects {REJECTED[name][0]}")


def test_an_honest_second_kernel_and_device_helpers_keep_full_marks(grade_text):
    """device=True and device=1 helpers, a second kernel launched with C alone: all compile, full marks."""
    r = grade_text("naive", text_of(HONEST))
    assert r.score == r.max_score == 8, [(c.name, c.output[:300]) for c in r.checks]
    assert "compiled with it: clear_kernel" in passed(r, "compiles")


def test_a_device_function_launched_as_a_kernel_is_refused(grade_text, monkeypatch):
    """A device=1 function launched from the launcher ran once as host Python in the simulator and got 8/8. The
    grammar refuses the launch; past the grammar (switched off here only), every child refuses it too."""
    text = text_of("device_one_launched.py")
    findings = violations(text)
    assert findings == ["line 34: the launch fill[1, 1]: fill is a device function (@cuda.jit(device=...)): no GPU "
                        "launches one; call it from a kernel"], findings
    assert grade_text("naive", text).score == 0

    def grammar_off(g):
        return g.check("shortcuts", title(g, "shortcuts")).verdict(True, "grammar off (test)"), []
    monkeypatch.setattr(shortcuts, "judge", grammar_off)
    r = grade_text("naive", text)
    assert "fill is a device function (@cuda.jit(device=...)), and the launcher launches it as a kernel" in \
        failed(r, "correct")
    assert r.score == 2  # the stage kernel compiles (it computes nothing)


@pytest.mark.parametrize("value, role", [("True", "device"), ("1", "device"), ("'yes'", "device"), ("(0,)", "device"),
                                         ("False", "kernel"), ("0", "kernel"), ("None", "kernel"), ("''", "kernel")])
def test_the_grammar_reads_device_as_numba_does(value, role):
    """numba's `if device:`: any true value declares a device function, which a kernel calls and no launcher
    launches; a false one declares a kernel."""
    text = (f"from numba import cuda\n\n\n@cuda.jit(device={value})\ndef helper(A, B, C):\n    return A[0, 0]\n\n\n"
            "@cuda.jit\ndef matmul_naive_kernel(A, B, C):\n    C[0, 0] = helper(A, B, C)\n\n\n"
            "def matmul_naive(A, B, C):\n    helper[1, 1](A, B, C)\n")
    findings = violations(text)
    if role == "device":
        assert findings == ["line 15: the launch helper[1, 1]: helper is a device function (@cuda.jit(device=...)): "
                            "no GPU launches one; call it from a kernel"], findings
    else:
        assert findings == ["line 11: the call helper(...): helper is a kernel: launch it from a launcher as "
                            "helper[blocks, threads](A, B, C)"], findings


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason="no NVIDIA GPU on this machine")
def test_the_gpu_tier_agrees(grade_text):
    for name, (function, says) in REJECTED.items():
        r = grade_text("naive", text_of(name), device="gpu")
        assert says in failed(r, "compiles") and r.score == 0, name
        failed(r, "correct")
    r = grade_text("naive", text_of(HONEST), device="gpu")
    assert r.score == r.max_score, [(c.name, c.output[:300]) for c in r.checks]
