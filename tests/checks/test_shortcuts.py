"""checks/shortcuts.py, autograder/grammar.py and autograder/scan.py: what a kernel module may not hold zeroes
the stage; stubs are found. The grammar's corpus of legitimate and hostile modules is tests/test_grammar.py."""
import pytest

from autograder.grammar import violations
from autograder.scan import unimplemented
from checkkit import assert_known_bad
from tools.mutants import KNOWN_BAD, by_check


@pytest.mark.parametrize("source, says", [
    ("import numpy as np\ndef f(A, B, C):\n    np.dot(A, B)\n", "np.dot"),
    ("def f(A, B, C):\n    C.copy_to_device(A.copy_to_host() @ B.copy_to_host())\n", "@ operator"),
    ("import cupy\n", "imports cupy"),
    ("import ctypes\n", "imports ctypes"),
    ("def f():\n    exec('x = 1')\n", "calls exec()"),
    ("from numpy import linalg\n", "numpy may only name dtypes"),
])
def test_scan_flags(source, says):
    assert any(says in line for line in violations(source)), violations(source)


def test_scan_passes_a_kernel_module():
    source = "import math\nfrom numba import cuda, float32\nimport numpy as np\nX = np.float32\n"
    assert violations(source) == []


def test_stubs_are_found():
    source = "def k(A, B, C):\n    raise NotImplementedError('TODO')\ndef f(A, B, C):\n    pass\n"
    assert unimplemented(source, ("k", "f")) == ["k"]


@pytest.mark.parametrize("name", sorted(by_check("shortcuts")))
def test_known_bad(grade_text, name):
    assert_known_bad(grade_text, name)


@pytest.mark.parametrize("device", ["sim", "gpu"])
def test_stage_zeroed_by_the_grammar_runs_no_child_and_shows_every_check_failed(grade_text, monkeypatch, device):
    """A zeroed stage spends no time in children (a closure's constant array once compiled for 275 s on a GPU),
    and no check reads PASS 0/N: each says it was not run, and why."""
    from autograder import sandbox

    def no_child(*args, **kwargs):
        raise AssertionError("a child was started for a stage the kernel-module grammar zeroed")
    monkeypatch.setattr(sandbox, "run_child", no_child)
    r = grade_text("naive", KNOWN_BAD["host product in the launcher"].text, device=device)
    assert r.score == 0 and r.max_score > 0
    shortcut = [c for c in r.checks if c.key == "shortcuts"][0]
    assert shortcut.status == "failed" and "copy_to_host" in shortcut.output and "@ operator" in shortcut.output
    others = [c for c in r.checks if c.key != "shortcuts" and c.status != "skipped"]
    assert {c.key for c in others} >= {"compiles", "correct"}
    for c in others:
        assert c.status == "failed" and "holds what a kernel module may not" in c.output, (c.name, c.output)
