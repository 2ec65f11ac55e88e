"""checks/compiles.py: the kernel is a CUDA kernel that compiles for the real GPU target."""
import os

import pytest

from autograder.checks import compiles
from checkkit import FakeGrader, assert_known_bad, child_result
from conftest import ROOT
from course.mutants import by_check

PTX_FACTS = {"defines_kernel": True, "defines_launcher": True, "is_cuda_kernel": True, "shared_arrays": [1024, 1024],
             "barriers": 2, "constants": {"TILE": 16}}


def test_compiled_kernel_passes_with_its_facts():
    c = compiles.judge(FakeGrader("tiled"), child_result(PTX_FACTS))
    assert c.status == "passed" and "2 shared arrays (2048 bytes), 2 barrier instructions in the compiled code" in c.output


@pytest.mark.parametrize("facts, says", [
    ({**PTX_FACTS, "defines_kernel": False}, "missing matmul_tiled_kernel"),
    ({**PTX_FACTS, "defines_launcher": False}, "missing matmul_tiled"),
    ({**PTX_FACTS, "is_cuda_kernel": False}, "decorate it with @cuda.jit"),
    ({**PTX_FACTS, "compile_error": "TypingError: shape must be constant"}, "TILE_PAD = TILE + 1"),
    ({"import_error": {"kind": "exception", "message": "NameError: name 'x' is not defined (line 3: x)"}}, "NameError"),
])
def test_compile_facts_that_fail(facts, says):
    c = compiles.judge(FakeGrader("tiled"), child_result(facts))
    assert c.status == "failed" and says in c.output, c.output


def test_a_child_that_did_not_report_fails():
    c = compiles.judge(FakeGrader("tiled"), child_result({}, problem="not gradable: the check was killed by signal SIGKILL"))
    assert c.status == "failed" and "SIGKILL" in c.output


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(by_check("compiles")))
def test_known_bad(grade_text, name):
    assert_known_bad(grade_text, name)


@pytest.mark.parametrize("name", ["naive_explicit_signature.py", "tiled_device_helpers.py",
                                  "tiled_general_device_loaders.py"])
def test_signatures_and_device_functions_compile_without_a_gpu(grade_text, name, monkeypatch):
    """An explicit signature compiled eagerly at import, and a device function asked the driver for the
    device's compute capability: both failed the PTX compile on a machine without a GPU."""
    from autograder.engine import stage as stage_mod
    with open(os.path.join(ROOT, "tests", "grammar", "legit", name), encoding="utf-8") as f:
        text = f.read()
    stage_name = name.split("_explicit")[0].split("_device")[0]
    monkeypatch.setattr(stage_mod.StageGrader, "start_checks", lambda self, pool, waiting=None: self.futures)
    r = grade_text(stage_name, text)
    compiled = [c for c in r.checks if c.key == "compiles"][0]
    assert compiled.status == "passed", compiled.output
