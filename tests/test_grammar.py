"""autograder/grammar.py, the allowlist of a kernel module.

Every legitimate module passes: the course's own (solutions, exercises, the demo class's notebooks) and the
corpus of ways students write kernels (tests/grammar/legit/). Every hostile module (tests/grammar/hostile/:
student Python that rewrites the grader from inside the child) is rejected for the construct it relies on,
before any child runs, in both tiers, and scores nothing. tests/grammar/README.md describes both corpora.
"""
import glob
import json
import os
import subprocess
import sys
import time

import pytest

from autograder import engine, sandbox, stages
from autograder.grammar import violations
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
    ("from numba import cuda\ndef f(A, B, C):\n    cuda.synchronize()\n", "synchronises and times the launches"),
    ("from numba import cuda\ndef f(A, B, C):\n    X = cuda.to_device(A)\n", "the kernels get A, B and C only"),
    ("def f(A, B, C):\n    return A[0, 0]\n", "indexing them on the host copies data off the GPU"),
    ("def f(A, B, C):\n    C[0, 0] = 1.0\n", "the product must come from your kernel"),
    ("def f(A, B, C):\n    pass\nf(1, 2, 3)\n", "a kernel module runs nothing when it is imported"),
    ("def f(A, B, C):\n    pass\nif __name__ == '__main__':\n    f(1, 2, 3)\n", "test your kernel in the notebook"),
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
    bad = good.replace("    matmul_naive_kernel[blocks", "    cuda.synchronize()\n    matmul_naive_kernel[blocks")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", SELFCHECK], input=json.dumps({"good": good, "bad": bad}),
                         capture_output=True, text=True, env=env, timeout=120, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert not any(name == "only what a kernel module may contain" for name, _, _ in results["good"]), results
    bad_rows = [m for name, ok, m in results["bad"] if name == "only what a kernel module may contain" and not ok]
    # the line as the notebook's cell numbers it (here the file's: the launcher's cell is the whole file)
    line = next(i for i, text in enumerate(bad.splitlines(), 1) if "cuda.synchronize()" in text)
    assert bad_rows and f"line {line} of the cell defining matmul_naive: cuda.synchronize" in bad_rows[0], results


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason=NO_GPU)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_on_a_gpu_a_hostile_module_scores_nothing(grade_text, name):
    """The GPU tier for real (no stand-in for the children): the module is rejected before any child starts."""
    r = grade_text("naive", hostile(name), device="gpu")
    assert r.score == 0 and HOSTILE[name] in by_key(r, "shortcuts")[0].output
