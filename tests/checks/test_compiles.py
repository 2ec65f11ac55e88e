"""checks/compiles.py: the kernel is a CUDA kernel that compiles for the real GPU target."""
import pytest

from autograder.checks import compiles
from checkkit import FakeGrader, assert_known_bad, child_result
from tools.mutants import by_check

PTX_FACTS = {"defines_kernel": True, "defines_launcher": True, "is_cuda_kernel": True, "shared_arrays": [1024, 1024],
             "barriers": 2, "constants": {"TILE": 16}}


def test_compiled_kernel_passes_with_its_facts():
    c = compiles.judge(FakeGrader("tiled"), child_result(PTX_FACTS))
    assert c.status == "passed" and "2 shared arrays (2048 bytes), 2 barriers" in c.output


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
