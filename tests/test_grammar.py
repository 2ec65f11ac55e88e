"""autograder/grammar/, the allowlist of a kernel module.

Every legitimate module passes: the course's own (solutions, exercises, the demo class's notebooks) and the
corpus of ways students write kernels (tests/grammar/legit/). Every hostile module (tests/grammar/hostile/:
student Python that rewrites the grader from inside the child) is rejected for the construct it relies on,
before any child runs, in both tiers, and scores nothing. tests/grammar/README.md describes both corpora.
Text past the parent's bounds (grammar.MAX_*: size, nesting, strings, integers at every step of a constant) is a
finding that names its line, at once; the grade still completes with a results file.
"""
import glob
import json
import os
import re
import subprocess
import sys
import time

import pytest

from autograder import engine, sandbox, stages
from autograder.grammar import module_constants, violations
from autograder.submission import read_source
from conftest import ROOT, SOLUTIONS, by_key

LEGIT = sorted(glob.glob(os.path.join(ROOT, "tests", "grammar", "legit", "*.py")))
HOSTILE_DIR = os.path.join(ROOT, "tests", "grammar", "hostile")
COURSE = sorted(glob.glob(os.path.join(SOLUTIONS, "*.py")) + glob.glob(os.path.join(ROOT, "exercises", "*.py"))
                + glob.glob(os.path.join(ROOT, "demo_course", "submitted", "*", "matmul", "*.ipynb")))
# The demo stage the grammar zeroes on purpose: dee multiplies on the host.
COURSE_REJECTED = {"dee/matmul/s1_naive.ipynb": "copy_to_host"}

# Each hostile module and the construct it must be rejected for (one of its findings says this).
HOSTILE = {
    "always_equal_launcher_return.py": "a class",
    "builtins_import_gc_launches.py": "__builtins__",
    "comprehension_side_effect.py": "a comprehension",
    "config_sys_modules_replay.py": "imports numba.core.config",
    "ctypes_pythonapi_setattr.py": "numba.np.numpy_support.ctypes",
    "cuda_importlib_reference_kernel.py": "cuda.importlib",
    "cuda_sys_validate_smuggled_operand.py": "assignment to cuda.sys.modules",
    "decorator_host_kernel.py": "the decorator @kernel",
    "event_elapsed_shrink.py": "assignment to cuda.event: a kernel module may not change numba's",
    "fstring_expression.py": "a format string",
    "function_globals_code_swap.py": "__globals__",
    "generator_expression_side_effect.py": "a generator expression",
    "global_rebinds_other_module.py": "global:",
    "jit_cache_true.py": "cuda.jit(cache=...)",
    "jit_globals_builtins_import.py": "cuda.jit.__globals__",
    "jit_link_ptx.py": "cuda.jit(link=...)",
    "kernel_fn_assign_sim.py": "assignment to",
    "kernel_py_func_assign.py": "assignment to",
    "lambda_default_argument.py": "a call at module level ((lambda m",
    "main_guard_block.py": "if __name__",
    "module_level_call_harmless_name.py": "a call at module level",
    "mro_subclasses_wrap_close.py": ".__mro__",
    "number_subclass_carrier.py": "a class",
    "numpy_savez_via_numpy_support.py": "numba.np.numpy_support.np",
    "print_file_keyword.py": "print(file=...)",
    "proc_self_mem_nonce.py": "the name __builtins__",
    "project_patch_config_sys.py": "assignment to",
    "result_file_fd_write.py": "cuda.sys._getframe",
    "setprofile_hook.py": ".f_locals",
    "signature_string_eval.py": "the signature part",
    "str_format_traversal.py": ".format of",
    "synchronize_finishes_on_host.py": "assignment to cuda.synchronize",
    "thread_background_writer.py": "numba.core.utils.threading",
    "traceback_frame_locals.py": "try:",
    "type_dict_names_from_strings.py": ".__dict__",
    "unicode_escape_coding_cookie.py": "the coding declaration unicode_escape",
    "utf7_coding_cookie.py": "the coding declaration utf-7",
    "utils_sys_modules_wrap_replay.py": "numba.core.utils.sys.modules",
    "walrus_operator.py": "the := operator",
    "with_statement_suppress.py": "with:",
}
NO_GPU = "no NVIDIA GPU on this machine: GPU-tier grammar case, run by `make gpu-check` on the GPU machine"


def hostile(name):
    with open(os.path.join(HOSTILE_DIR, name), encoding="utf-8") as f:
        return f.read()


def test_the_corpora_are_large_and_complete():
    assert len(LEGIT) >= 30, LEGIT
    on_disk = {os.path.basename(p) for p in glob.glob(os.path.join(HOSTILE_DIR, "*.py"))}
    assert on_disk == set(HOSTILE) and len(HOSTILE) >= 15, on_disk ^ set(HOSTILE)


@pytest.mark.parametrize("path", LEGIT, ids=os.path.basename)
def test_a_legitimate_module_passes(path):
    with open(path, encoding="utf-8") as f:
        assert violations(f.read()) == []


@pytest.mark.parametrize("path", COURSE, ids=lambda p: os.path.relpath(p, ROOT))
def test_the_course_passes(path):
    """Solutions, exercise stubs and the demo class's notebooks (the graded code of each) pass, except the
    demo stage that cheats on purpose."""
    findings = violations(read_source(path))
    rejected = [why for key, why in COURSE_REJECTED.items() if path.endswith(key)]
    if rejected:
        assert any(rejected[0] in f for f in findings), findings
    else:
        assert findings == [], findings


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_module_is_rejected_for_what_it_does(name):
    findings = violations(hostile(name))
    assert any(HOSTILE[name] in f for f in findings), "\n".join(findings)
    assert all(f.startswith("line ") for f in findings)


@pytest.mark.parametrize("device", ["sim", "gpu"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_module_gains_nothing_and_no_child_runs(grade_text, monkeypatch, name, device):
    """Both tiers: the parent rejects the module before any child could run it, and every check scores 0."""
    def no_child(*args, **kwargs):
        raise AssertionError("a child was started for a module the grammar rejects")
    monkeypatch.setattr(sandbox, "run_child", no_child)
    r = grade_text("naive", hostile(name), device=device)
    assert r.score == 0 and r.max_score > 0
    assert HOSTILE[name] in by_key(r, "shortcuts")[0].output
    assert not any(c.status == "passed" and c.score > 0 for c in r.checks)


def test_a_notebook_cell_is_held_to_the_grammar(tmp_path, cfg, monkeypatch):
    """The code a notebook contributes is what the grammar reads: a cell added to a full-marks notebook that
    patches the grader's timer zeroes the stage."""
    with open(os.path.join(ROOT, "demo_course", "submitted", "ada", "matmul", "s1_naive.ipynb"), encoding="utf-8") as f:
        nb = json.load(f)
    nb["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                        "source": ["cuda.event = cuda.event\n"]})
    path = tmp_path / "s1_naive.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    monkeypatch.setattr(sandbox, "run_child", lambda *a, **k: (_ for _ in ()).throw(AssertionError("child ran")))
    r = engine.grade(str(path), stage=stages.find("naive"), device="sim", seed=3, cfg=cfg)
    assert r.score == 0 and "assignment to cuda.event" in by_key(r, "shortcuts")[0].output


@pytest.mark.parametrize("source, says", [
    ("import numpy as np\ndef f(A, B, C):\n    C[:, :] = np.matmul(A, B)\n", "np.matmul: numpy.matmul multiplies matrices"),
    ("from numba import cuda\ndef k(A, B, C):\n    i, j = cuda.grid(2)\n", "is k a kernel? decorate it with @cuda.jit"),
    ("from numba import cuda\ndef f(A, B, C):\n    cuda.synchronize(0)\n", "cuda.synchronize(), with no arguments"),
    ("from numba import cuda\ndef f(A, B, C):\n    w = cuda.synchronize\n", "cuda.synchronize(), with no arguments"),
    ("from numba import cuda\n@cuda.jit\ndef k(A):\n    cuda.synchronize()\n", "in a kernel, cuda.syncthreads()"),
    ("import numpy as np\nfrom numba import cuda\n@cuda.jit\ndef k(A):\n    A[0, 0] = np.ceil(A[0, 1])\n",
     "in a kernel write math.ceil(...)"),
    ("import numpy as np\ndef f(A, B, C):\n    T = np.zeros(C.shape, dtype=A.dtype)\n",
     "np.zeros: numpy.zeros allocates an array of its own: the kernels get A, B and C only"),
    ("import numpy as np\ndef f(A, B, C):\n    n = np.ceil(C.shape[0] / 16).astype(int)\n", "write int(x)"),
    ("from numba import cuda\ndef f(A, B, C):\n    X = cuda.to_device(A)\n", "the kernels get A, B and C only"),
    ("def f(A, B, C):\n    return A[0, 0]\n", "indexing them on the host copies data off the GPU"),
    # a local that shadows a module constant through unpacking is no constant: P is A here
    ("P = 0\ndef f(A, B, C):\n    P, Q = A, B\n    return P[0, 0]\n", "indexing them on the host copies data off the GPU"),
    ("P = 0\ndef f(A, B, C):\n    (P, Q), R = (A, B), C\n    return P[1, 0:3]\n",
     "indexing them on the host copies data off the GPU"),
    ("def f(A, B, C):\n    C[0, 0] = 1.0\n", "the product must come from your kernel"),
    ("def f(A, B, C):\n    pass\nf(1, 2, 3)\n", "a kernel module runs nothing when it is imported"),
    ("def f(A, B, C):\n    pass\nif __name__ != '__main__':\n    f(1, 2, 3)\n",
     "if __name__ != '__main__': only the exact test if __name__ == \"__main__\""),
    ("def f(A, B, C):\n    pass\nif __name__ == '__main__' or True:\n    f(1, 2, 3)\n",
     "or move the test to the notebook"),
    ("def f(A, B, C):\n    pass\nif __name__ == '__main__':\n    pass\nelse:\n    f(1, 2, 3)\n",
     "an else branch of if __name__ == \"__main__\": it runs when the grader imports the module: delete it"),
    ("if __name__ == '__main__':\n    TILE = 16\ndef f(A, B, C):\n    return TILE\n", "the name TILE: not defined"),
    ("from numba import cuda\n@cuda.jit\ndef k(A):\n    print(f'{A[0]}')\n", "a format string"),
    ("from numba import cuda\n@cuda.jit\ndef k(A):\n    s = cuda.local.array([4], A.dtype)\n", "a list (use a tuple)"),
    ("import os\n", "imports os: a kernel module may import only math"),
    ("from numba import cuda\n@cuda.jit\ndef k(A):\n    cuda.syncthreads\n", "a statement that does nothing"),
    ("def range(n):\n    return n\n", "it would hide Python's range"),
    ("from numba import cuda\n@cuda.jit\ndef k(A):\n    cuda = 1\n", "it hides the module's cuda"),
    ("from numba import cuda\ncuda.event = None\n", "assignment to cuda.event: a kernel module may not change numba's"),
])
def test_an_honest_mistake_gets_a_message_that_says_what_to_do(source, says):
    findings = violations(source)
    assert any(says in f for f in findings), findings


@pytest.mark.parametrize("source", [
    "from numba import cuda\n@cuda.jit('void(float32[:, ::1], float32[:, ::1], float32[:, ::1])')\ndef k(A, B, C):\n    pass\n",
    "from numba import cuda, void, float32\n@cuda.jit(void(float32[:, ::1], float32[:, ::1], float32[:, ::1]))\ndef k(A, B, C):\n    pass\n",
    "from numba import cuda\n@cuda.jit('float32(float32, float32)', device=True, inline=True)\ndef h(a, b):\n    return a * b\n",
    "# -*- coding: utf-8 -*-\nfrom __future__ import annotations\nimport math\n",
])
def test_signatures_and_declarations_students_use_pass(source):
    assert violations(source) == []


LAUNCHER = ("import math\nimport numpy as np\nfrom numba import cuda\nTILE = 16\n@cuda.jit\ndef k(A, B, C):\n"
            "    pass\ndef launch(A, B, C):\n    M, N = C.shape\n")


@pytest.mark.parametrize("lines", [
    "    blocks = int(np.ceil(N / TILE)), int(np.floor((M + TILE - 1) / TILE))\n    k[blocks, (TILE, TILE)](A, B, C)\n",
    "    assert A.dtype == np.float32 and B.dtype == C.dtype\n    k[(N // TILE, M // TILE), (TILE, TILE)](A, B, C)\n",
    "    if A.dtype != np.float32:\n        raise TypeError('float32 only')\n    k[(1, 1), (TILE, TILE)](A, B, C)\n",
    "    k[(math.ceil(N / TILE), math.ceil(M / TILE)), (TILE, TILE)](A, B, C)\n    cuda.synchronize()\n",
    "    K = A.shape[-1]\n    N = B.shape[-1]\n    k[(math.ceil(N / TILE), K), (TILE, TILE)](A, B, C)\n",
    "    k[(1, 1), (TILE, TILE)](A, B, C)\n\n\nif __name__ == \"__main__\":\n    import os\n    X = cuda.to_device("
    "np.ones((4, 4), np.float32))\n    launch(X, X, X)\n    print(f'{X.copy_to_host() @ X.copy_to_host()}')\n"
    "    os._exit(0)\n",
], ids=["np_ceil_floor", "dtype_assert", "dtype_raise", "synchronize", "shape_minus_1", "main_guard_test"])
def test_what_a_tutorial_launcher_does_passes(lines):
    """np.ceil for a grid, a dtype check, cuda.synchronize() after the launch, B.shape[-1], and a quick test of the
    student's own under if __name__ == "__main__" (not read: it never runs where the grader imports the module)."""
    assert violations(LAUNCHER + lines) == []


RECORD = r"""
import types
from numba import cuda
from autograder.builder import launches as L
def real():  # as in the GPU tier's build child, where no GPU answers
    raise RuntimeError("CUDA driver library cannot be found")
cuda.synchronize = real
module = types.ModuleType("s1_naive")
exec('''
from numba import cuda
from numba.cuda import synchronize
@cuda.jit
def k(A, B, C):
    pass
def launch(A, B, C):
    k[1, 1](A, B, C)
    cuda.synchronize()
    synchronize()
''', module.__dict__)
A = cuda.to_device(__import__("numpy").zeros((2, 2), "float32"))
recorded = L.record_launches(module, "launch", A, A, A)
assert len(recorded) == 1 and cuda.synchronize is real and module.synchronize is real
print("ok")
"""


def test_a_launchers_synchronize_waits_for_nothing_while_launches_are_recorded():
    """cuda.synchronize() in a launcher is a no-op while the grader records its launches (the GPU tier's build child
    has no GPU to ask), however it is imported; numba's own is back afterwards (the self-check records in the
    notebook's process)."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", RECORD], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_np_ceil_may_size_a_module_constant():
    assert violations("import numpy as np\nBLOCKS = int(np.ceil(1000 / 16))\n") == []
    # read by the parent as the module computes it on import (it was left out: the parent read no constant built
    # with np.ceil)
    assert module_constants("import numpy as np\nTILE = 16\nBLOCKS = int(np.ceil(1000 / TILE))\n") == \
        {"TILE": (16, 2), "BLOCKS": (63, 3)}


def test_a_tutorial_launcher_and_its_own_test_grade_full_marks(grade_text, monkeypatch):
    """Graded for real in the simulator tier: full marks. Its test under if __name__ == "__main__" ends the process
    if it runs: no grading child runs it (each imports the module under its stage's name)."""
    with open(os.path.join(ROOT, "tests", "grammar", "legit", "naive_tutorial_launcher.py"), encoding="utf-8") as f:
        text = f.read() + "    import os\n    os._exit(3)\n"
    r = grade_text("naive", text)
    assert r.score == r.max_score > 0, [(c.name, c.output) for c in r.checks if c.status != "passed"]


# -- bounds: the trusted parent reads any text in bounded time and memory, and says what was past a bound ------------
def _naive_with(constants):
    """The stage 1 solution with `constants` added after its own (BLOCK = 16, line 19): theirs start at line 20."""
    with open(os.path.join(SOLUTIONS, "s1_naive.py"), encoding="utf-8") as f:
        text = f.read()
    assert text.splitlines()[18] == "BLOCK = 16"
    return text.replace("BLOCK = 16\n", "BLOCK = 16\n" + constants, 1)


def _tiled_with(tile):
    with open(os.path.join(SOLUTIONS, "s2_tiled.py"), encoding="utf-8") as f:
        text = f.read()
    assert re.search(r"^TILE = 16\b", text, re.M)
    return re.sub(r"^TILE = 16\b.*$", f"TILE = {tile}", text, count=1, flags=re.M)


def _signature(text):
    return _naive_with("").replace("@cuda.jit\ndef matmul_naive_kernel",
                                   f"@cuda.jit({text!r})\ndef matmul_naive_kernel")


# name: (stage, module text, what its finding says)
PAST_THE_BOUNDS = {
    "power_tower": ("naive", _naive_with("P = 3 ** 64\nP2 = P ** 64\nP3 = P2 ** 64\nP4 = P3 ** 64\nP5 = P4 ** 64\n"),
                    "line 21: P2 = P ** 64: its value needs more than 128 bits"),
    "sum_of_2000_ones": ("naive", _naive_with("X = " + " + ".join(["1"] * 2000) + "\n"),
                         "line 20: X = 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1...: nested more than 100"),
    "int_of_1e309": ("naive", _naive_with("Y = int(1e309)\n"),
                     "line 20: Y = int(1e309): Python cannot work this out (OverflowError: cannot convert float "
                     "infinity to integer)"),
    "nesting_past_the_parser": ("naive", _naive_with("Z = " + "-" * 100_000 + "1\n"),
                                "line 20: Z = -----------------------------------------------------...: nested too "
                                "deeply for Python to read the module"),
    "signature_of_megabytes": ("naive", _signature("void(" + "float32[:, ::1], " * 120_000 + ")"),
                               "line 1: the file: 2,041,"),
    "signature_past_the_string_bound": ("naive", _signature("void(" + "float32[:, ::1], " * 10_000 + ")"),
                                        "@cuda.jit('void(float32[:, ::1], float32[:, ::1], float32...: a string of "
                                        "170,006 characters"),
    "signature_of_kilobytes": ("naive", _signature("void(" + "float32[:, ::1], " * 100 + ")"),
                               "the signature 'void(float32[:, ::1], float32[:, ::1], f...': a signature string of "
                               "1,706 characters"),
    "tile_of_5000_digits": ("tiled", _tiled_with("9" * 5000),
                            "TILE = 99999999999999999999999999999999999999999999999999...: an integer of more than "
                            "4,300 digits"),
    "tile_of_4000_digits": ("tiled", _tiled_with("9" * 4000), ": an integer of 13,288 bits"),
    "tile_in_hex": ("tiled", _tiled_with("0x" + "f" * 5000), "TILE = 0xffff"),
    "tile_power": ("tiled", _tiled_with("((10 ** 64) ** 64) ** 64"),
                   "TILE = ((10 ** 64) ** 64) ** 64: its value needs more than 128 bits"),
}


@pytest.mark.parametrize("name", sorted(PAST_THE_BOUNDS))
def test_past_a_bound_the_grammar_names_the_line_at_once(name):
    stage, text, says = PAST_THE_BOUNDS[name]
    began = time.perf_counter()
    findings = violations(text)
    constants = module_constants(text)
    assert time.perf_counter() - began < 2.0
    assert any(says in f for f in findings), findings
    assert all(f.startswith("line ") and len(f) < 400 for f in findings), findings  # the student's text, shortened
    assert all(type(v) in (int, float) and abs(v) < 2 ** 128 for v, _ in constants.values()), constants
    assert "TILE" not in constants and "P2" not in constants and "Y" not in constants


@pytest.mark.parametrize("name", sorted(PAST_THE_BOUNDS))
def test_past_a_bound_the_grade_completes_with_the_finding(tmp_path, name):
    """The real command, on the text alone: it exits 0 with a results file whose grammar check names the line;
    the stage scores 0. (Before the bounds these hung the grader, or ended it with a traceback and no results.)"""
    stage, text, says = PAST_THE_BOUNDS[name]
    path = tmp_path / stages.find(stage).filename
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "results.json"
    # the stage named, and (past the parser's nesting) found by its function names as a folder's files are
    args = ["--stage", stage] if name != "nesting_past_the_parser" else []
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(path), *args, "--device", "sim",
                        "--results", str(out), "--seed", "3"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    grammar = [t for t in data["tests"] if (t.get("tags") or [None, None])[1] == "shortcuts"]
    assert data["score"] == 0 and data["max_score"] > 0 and grammar, data
    assert says in grammar[0]["output"] and len(grammar[0]["output"]) < 2000, grammar[0]["output"]


@pytest.mark.parametrize("text, says", [
    ("X = min(5)\n", "X = min(5): Python cannot work this out (TypeError"),
    ("X = 1 / 0\n", "X = 1 / 0: Python cannot work this out (ZeroDivisionError"),
    ("X = 1 << 10 ** 30\n", "its value needs more than 128 bits (a shift by"),
    ("X = 3 ** (2 ** 127)\n", "its value needs more than 128 bits (an exponent of"),
    ("X = 2.0 ** 100000\n", "Python cannot work this out (OverflowError"),
    ("A = 2 ** 100\nB = A * A\n", "line 2: B = A * A: its value needs 201 bits"),
    ("'''" + "a" * 200_000 + "'''\n", "a string of 200,000 characters"),
    ("X = (" + "1, " * 110_000 + ")\n", "more than 100,000 pieces of syntax"),
    ("X = " + "abs(" * 120 + "1" + ")" * 120 + "\n", "X = abs(abs(abs("),
    ("def f(A, B, C):\n" + "".join("    " * (i + 1) + "if A:\n" for i in range(30)) + "    " * 31 + "x = 1\n"
     + "    " * 31 + "x = " + " + ".join(["A"] * 90) + "\n",
     "line 33: x = A + A + A + A + A + A + A + A + A + A + A + A + A + A...: nested more than 100 levels deep"),
], ids=["min_of_one", "division_by_zero", "huge_shift", "huge_exponent", "float_overflow", "product_past_128_bits",
        "long_docstring", "110000_element_tuple", "120_nested_calls", "sum_in_30_nested_ifs"])
def test_a_constant_python_cannot_work_out_or_text_past_a_bound_is_one_finding(text, says):
    findings = violations(text)
    assert any(says in f for f in findings), findings
    assert len(findings) == 1, findings
    module_constants(text)  # never raises


def test_a_kernel_unrolled_by_hand_is_within_the_bounds():
    """A 64-term sum in a loop in an if (each + nests one level) is far from MAX_DEPTH."""
    text = ("from numba import cuda, float32\n@cuda.jit\ndef k(A, B, C):\n    i, j = cuda.grid(2)\n"
            "    if i < C.shape[0] and j < C.shape[1]:\n        acc = float32(0.0)\n"
            "        for t in range(0, A.shape[1], 64):\n            if t < A.shape[1]:\n                acc += "
            + " + ".join(f"A[i, t + {q}] * B[t + {q}, j]" for q in range(64)) + "\n        C[i, j] = acc\n")
    assert violations(text) == []


def test_constants_within_the_bounds_are_worked_out():
    text = "TILE = 16\nPAD = TILE + 1\nMASK = (1 << 64) - 1\nP = 3 ** 64\nN = int(1e18)\nH = -(2 ** -(2 ** 127))\n"
    assert violations(text) == []
    assert {k: v for k, (v, _) in module_constants(text).items()} == {
        "TILE": 16, "PAD": 17, "MASK": 2 ** 64 - 1, "P": 3 ** 64, "N": 10 ** 18, "H": -0.0}


def test_the_grammar_costs_under_50_ms_a_module():
    texts = [read_source(p) for p in LEGIT + COURSE] + [hostile(n) for n in HOSTILE]
    worst = 0.0
    for text in texts:
        began = time.perf_counter()
        violations(text)
        worst = max(worst, time.perf_counter() - began)
    assert worst < 0.05, f"the slowest module took {worst * 1000:.1f} ms"


SELFCHECK = r"""
import json, sys
from autograder import selfcheck
from autograder.stages import find
out = {}
for label, text in json.loads(sys.stdin.read()).items():
    namespace = {"__name__": "notebook"}
    with open(label + ".py", "w") as f:  # a cell's source, where inspect finds it (IPython keeps cells so)
        f.write(text)
    exec(compile(text, label + ".py", "exec"), namespace)
    run = selfcheck._Run(find("naive"), namespace, seed=1)
    run.ready()
    out[label] = [[n, ok, m] for n, ok, m in run.report.results]
print(json.dumps(out))
"""


def test_the_self_check_applies_the_grammar_to_a_notebooks_functions(tmp_path):
    """The self-check reads the stage's functions alone; the notebook's namespace says what their names are."""
    with open(os.path.join(SOLUTIONS, "s1_naive.py"), encoding="utf-8") as f:
        good = f.read()
    bad = good.replace("    matmul_naive_kernel[blocks", "    A.copy_to_host()\n    matmul_naive_kernel[blocks")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", SELFCHECK], input=json.dumps({"good": good, "bad": bad}),
                         capture_output=True, text=True, env=env, timeout=120, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert not any(name == "only what a kernel module may contain" for name, _, _ in results["good"]), results
    bad_rows = [m for name, ok, m in results["bad"] if name == "only what a kernel module may contain" and not ok]
    # the line as the notebook's cell numbers it (here the file's: the launcher's cell is the whole file)
    line = next(i for i, text in enumerate(bad.splitlines(), 1) if "A.copy_to_host()" in text)
    assert bad_rows and f"line {line} of the cell defining matmul_naive: .copy_to_host of A" in bad_rows[0], results


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason=NO_GPU)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_on_a_gpu_a_hostile_module_scores_nothing(grade_text, name):
    """The GPU tier for real (no stand-in for the children): the module is rejected before any child starts."""
    r = grade_text("naive", hostile(name), device="gpu")
    assert r.score == 0 and HOSTILE[name] in by_key(r, "shortcuts")[0].output
