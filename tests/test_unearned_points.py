"""Every point earned by the kernel that earned it, in both tiers: a kernel tiled only at one shape, a naive kernel
behind unused shared tiles, a launcher that also launches a kernel no GPU compiles, a device function declared
with device=1 that no GPU compiles, a launcher that launches other kernels on the simulator's arrays than on the
build's, and builds that fail (at import, for a float64 signature, in the launcher). Each is graded whole by the real
grader and loses what it did not earn.

The GPU tier's cases are skipped, saying why, on a machine without an NVIDIA GPU (CI); `make gpu-check PARTS=tests`
runs them."""
import os

import pytest

from autograder import engine
from conftest import ROOT, by_key, failed, mutate, passed
from test_tiling_judged import SOLUTION_LOOP, TILED_ONLY_AT_32
from course.mutants import KNOWN_BAD


def _adversarial(name):
    with open(os.path.join(ROOT, "tests", "adversarial", name), encoding="utf-8") as f:
        return f.read()


# name: (stage, module text, the checks it must fail, the checks it keeps (it computes the right product))
UNEARNED = {
    "tiled only at 32 x 32 x 32": ("tiled_general", lambda: mutate("tiled_general", (SOLUTION_LOOP, TILED_ONLY_AT_32)),
                                   ("data_reuse",), ("correct",)),
    "naive behind unused tiles (stage 4)": ("tiled_transposed", lambda: KNOWN_BAD["stage 4 fake tiling"].text,
                                            ("data_reuse",), ("correct",)),
    "a second kernel with numpy": ("naive", lambda: _adversarial("second_kernel_numpy.py"), ("compiles", "correct"),
                                   ()),
    "a device=1 helper no GPU compiles": ("naive", lambda: _adversarial("device_one_helper.py"),
                                          ("compiles", "correct"), ()),
    # one program in every tier: the simulator runs the plan the build recorded and compiled, nothing else
    "a launcher that tells stand-ins from arrays": ("naive", lambda: _adversarial("stand_in_detector.py"),
                                                    ("correct",), ("compiles",)),
    "a build that fails at import": ("naive", lambda: _adversarial("build_fails_signature.py"),
                                     ("compiles", "correct"), ()),
    "an explicit float64 signature": ("naive", lambda: _adversarial("float64_signature.py"), ("compiles", "correct"),
                                      ()),
    "a launcher that fails in the build alone": ("naive", lambda: _adversarial("launch_fails_in_build.py"),
                                                 ("correct",), ("compiles",)),
}
TIERS = ["sim", pytest.param("gpu", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not engine.gpu_available(), reason="no NVIDIA GPU on this machine")])]


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("name", sorted(UNEARNED))
def test_points_not_earned_are_lost(grade_text, name, tier):
    stage, text, loses, keeps = UNEARNED[name]
    r = grade_text(stage, text(), device=tier)
    for key in loses:
        failed(r, key)
    for key in keeps:
        passed(r, key)
    if tier == "gpu" and "speed" in {c.key for c in r.checks} and "correct" in keeps:  # a naive kernel is not fast either
        failed(r, "speed")
    if not keeps:  # what no GPU compiles (or no build records) earns nothing
        assert r.score == 0, [(c.name, c.status, c.output[:200]) for c in r.checks]
    assert r.score < r.max_score and not by_key(r, "shortcuts")[0].status == "failed"
