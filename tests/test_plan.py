"""The GPU tier's kernels as data, without a GPU: the build child (autograder/builder/task.py), the parent's checks
of what it reports (autograder/sandbox/plan.py) and the PTX linking a runner does (autograder/runner/plan_launch.py).

The build child is the one GPU-tier child that imports student code; it needs no GPU, so it runs here for real,
in the sandbox. Everything it reports is untrusted: each hostile plan below (an extra array, a host array,
another stream, a missing kernel, a PTX without its entry, a huge PTX, ...) is refused with a message that says
what was wrong. tests/test_gpu_plan.py launches the plans on a GPU.
"""
import copy
import glob
import os

import numpy as np
import pytest

from autograder import protocol, ptx, sandbox, stages
from autograder.checks import compiles
from autograder.runner import plan_launch
from autograder.engine.stage import StageGrader
from autograder.sandbox import plan as P
from autograder.submission import StageSource
from conftest import ROOT, solution_text

LEGIT = sorted(glob.glob(os.path.join(ROOT, "tests", "grammar", "legit", "*.py")))


def stage_of(text):
    return next(s for s in stages.STAGES[::-1] if f"def {s.kernel}(" in text and f"def {s.launcher}(" in text)


def build(cfg, text, tmp_path, stage=None):
    """(grader, compile check's child result) of a real build child for `text`."""
    stage = stage or stage_of(text)
    g = StageGrader(StageSource(stage, stage.filename, text), "gpu", cfg, np.random.default_rng(0), str(tmp_path))
    return g, g.build_alone()


@pytest.mark.parametrize("stage", stages.STAGES, ids=lambda s: s.name)
def test_each_solution_builds_without_a_gpu_into_plans_the_parent_accepts(cfg, tmp_path, stage):
    g, result = build(cfg, solution_text(stage.name), tmp_path, stage)
    assert compiles.judge(g, result).status == "passed", result.problem or result.facts
    shapes = g.build_shapes()
    assert len(shapes) >= 4 and (cfg["speed"]["n"],) * 3 in map(tuple, shapes)
    for shape in shapes:
        plan = g.built["plans"][tuple(shape)]
        assert "launches" in plan, plan
        assert g.built["kernels"][plan["launches"][0]["kernel"]]["name"] == stage.kernel
    if stage.tiled:  # the structure checks' facts: the parent's own reading of the PTX it will load
        assert result.facts["barriers"] >= 2 and len(result.facts["shared_arrays"]) == 2
    job, why = g.runner_job("run", shapes[:2], count=2)
    assert why == "" and not {"module", "module_path", "launcher"} & set(job)  # a runner gets no student code
    assert job["plans"] == [g.built["plans"][tuple(s)] for s in shapes[:2]]
    for spec in g.built["kernels"]:  # a runner links it as numba does (nvJitLink: no GPU needed)
        assert plan_launch.link(spec, (9, 0)).code[:4] == b"\x7fELF"


@pytest.mark.parametrize("path", LEGIT, ids=os.path.basename)
def test_each_way_students_write_kernels_builds_and_links(cfg, tmp_path, path):
    """The grammar corpus's legitimate modules (extra number arguments, several kernels, device helpers, explicit
    signatures, split-K with atomics): every plan passes the parent's checks, with the PTX parameters of its
    argument types, and links."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    g, result = build(cfg, text, tmp_path)
    assert compiles.judge(g, result).status == "passed", result.problem or result.facts
    errors = {s: p["error"]["message"] for s, p in g.built["plans"].items() if "error" in p}
    # a module whose stage kernel covers only whole interior tiles launches only its edge kernel at shapes smaller
    # than a tile, which the grader's launch rule (launches.validate) refuses in both tiers alike
    assert all("never launched" in m and min(s) < 64 for s, m in errors.items()), errors
    n = cfg["speed"]["n"]
    assert "launches" in g.built["plans"][(n, n, n)]
    for spec in g.built["kernels"]:
        assert plan_launch.link(spec, (9, 0)).code[:4] == b"\x7fELF"


def test_a_launcher_that_fails_at_one_size_fails_there_only(cfg, tmp_path):
    """Each shape has its own plan: an error at the speed size is that size's, and the timing runner says so."""
    text = solution_text("tiled").replace("    N = C.shape[0]\n", "    N = C.shape[0]\n    if N > 300:\n"
                                          "        raise ValueError(N)\n", 1)
    assert text != solution_text("tiled")
    g, result = build(cfg, text, tmp_path, stages.find("tiled"))
    assert compiles.judge(g, result).status == "passed"
    n = cfg["speed"]["n"]
    assert "ValueError" in g.built["plans"][(n, n, n)]["error"]["message"]
    assert all("launches" in p for s, p in g.built["plans"].items() if s[0] <= 300)
    job, why = g.runner_job("speed", [(n, n, n)], leaderboard=None)
    assert job is None and f"the launcher failed at N={n}" in why and "ValueError" in why


def test_a_kernel_the_gpu_compiler_rejects_fails_the_compile_check_and_no_runner_starts(cfg, tmp_path):
    text = solution_text("tiled").replace("cuda.shared.array((TILE, TILE), float32)",
                                          "cuda.shared.array((A.shape[0], TILE), float32)", 1)
    g, result = build(cfg, text, tmp_path, stages.find("tiled"))
    verdict = compiles.judge(g, result)
    assert verdict.status == "failed" and "the GPU compiler rejected matmul_tiled_kernel" in verdict.output
    assert g.runner_job("run", [(16, 16, 16)], count=1)[1].startswith("the GPU compiler rejects matmul_tiled_kernel")


def test_a_launcher_that_asks_cuda_for_more_than_launches_is_told_what_a_launcher_may_do(cfg, tmp_path):
    """The build child has no GPU: a stream or an allocation in the launcher is an error that says why, with its line
    (a stream of its own was refused before, for the timing's sake: launches.validate)."""
    text = solution_text("naive").replace("](A, B, C)", ", cuda.stream()](A, B, C)", 1)
    g, result = build(cfg, text, tmp_path, stages.find("naive"))
    messages = {p["error"]["message"] for p in g.built["plans"].values()}
    assert len(messages) == 1
    message = messages.pop()
    assert "asks CUDA for more than kernel launches (line 40" in message and "no streams" in message, message


# -- hostile reports: what the parent refuses ---------------------------------------------

@pytest.fixture(scope="module")
def reported(cfg, tmp_path_factory):
    """(the raw facts a build child reported for the stage 2 solution, its shapes)."""
    stage = stages.find("tiled")
    d = tmp_path_factory.mktemp("build")
    g = StageGrader(StageSource(stage, stage.filename, solution_text("tiled")), "gpu", cfg, np.random.default_rng(0),
                    str(d))
    shapes = g.build_shapes()
    result = g.run(g.job("build", "ptx", cc=[9, 0], shapes=shapes), None, (), 60, "the build")
    assert not result.problem, result.problem
    return result.facts, shapes


def _int_kernel(facts):
    """The stage kernel as if it took a fourth argument, an int32 (its PTX changed to match)."""
    spec = copy.deepcopy(facts["kernels"][0])
    spec["argtypes"].append("int32")
    spec["ptx"] = [t.replace("_param_26\n", "_param_26,\n\t.param .u32 extra\n") for t in spec["ptx"]]
    return spec


def _launch(facts):
    return facts["plans"][0]["launches"][0]


HOSTILE = {
    "an extra array": (lambda f: _launch(f)["args"].append("A"), "passes 4 arguments to a kernel of 3"),
    "a host array": (lambda f: _launch(f)["args"].__setitem__(0, {"type": "array", "value": [1.0, 2.0]}),
                     "kernels may receive only the A, B, C arrays"),
    "an array of its own": (lambda f: _launch(f)["args"].__setitem__(2, "D"), "passes 'D' as argument 2"),
    "another stream": (lambda f: _launch(f).__setitem__("stream", 7), "not a launch of the default stream (it names stream)"),
    "a missing kernel": (lambda f: _launch(f).__setitem__("kernel", 3), "names kernel 3, which the build did not compile"),
    "a PTX without the entry": (lambda f: f["kernels"][0].__setitem__("entry", "_Z5otherv"), "has no entry '_Z5otherv'"),
    "an entry of another kernel": (lambda f: f["kernels"][0].__setitem__(
        "ptx", [t.replace(f["kernels"][0]["entry"], "_Z5otherv") for t in f["kernels"][0]["ptx"]]), "has no entry"),
    "a huge PTX": (lambda f: f["kernels"][0]["ptx"].append(".version 8.0\n.target sm_90\n.address_size 64\n//"
                                                           + "x" * (4 << 20)), "MiB, more than the 4 MiB"),
    "text that is not PTX": (lambda f: f["kernels"][0].__setitem__("ptx", ["print('hello')"]), "is not a PTX module"),
    "parameters of other types": (lambda f: f["kernels"][0]["argtypes"].__setitem__(2, "float64"),
                                  "PTX entry takes 27 parameters"),
    "an argument type the grader cannot pass": (lambda f: f["kernels"][0]["argtypes"].__setitem__(2, "complex64"),
                                                "types the grader cannot pass"),
    "a number out of range": (lambda f: (f["kernels"].__setitem__(0, _int_kernel(f)),
                                         _launch(f)["args"].append({"type": "int32", "value": 2 ** 40})),
                              "passes 1099511627776 as argument 3, not a int32"),
    "a number of another type": (lambda f: (f["kernels"].__setitem__(0, _int_kernel(f)),
                                            _launch(f)["args"].append({"type": "float64", "value": 1.0})),
                                 "which the kernel takes as int32"),
    "a block too large": (lambda f: _launch(f).__setitem__("block", [1024, 2, 1]), "2048 threads in a block"),
    "an empty grid": (lambda f: _launch(f).__setitem__("grid", [0, 1, 1]), "has grid [0, 1, 1]"),
    "a grid of text": (lambda f: _launch(f).__setitem__("grid", ["4", 1, 1]), "has grid ['4', 1, 1]"),
    "too much shared memory": (lambda f: _launch(f).__setitem__("shared", 10 ** 6), "bytes of dynamic shared memory"),
    "too many launches": (lambda f: f["plans"][0].__setitem__("launches", [_launch(f)] * 65), "shape may take 1 to 64"),
    "no launches": (lambda f: f["plans"][0].__setitem__("launches", []), "made 0 launches"),
    "a cooperative launch": (lambda f: f["kernels"][0].__setitem__("cooperative", True), "grid-wide synchronisation"),
    "code to link": (lambda f: f["kernels"][0].__setitem__("links", 1), "needs other code linked"),
    "registers out of range": (lambda f: f["kernels"][0].__setitem__("max_registers", 100000), "max_registers=100000"),
    "too many kernels": (lambda f: f.__setitem__("kernels", f["kernels"] * 9), "more than 8 kernels"),
    "another kernel first": (lambda f: f["kernels"][0].__setitem__("name", "matmul_naive_kernel"),
                             "is not the compiled matmul_naive_kernel"),
    "a plan fewer": (lambda f: f["plans"].pop(), "plans for"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_report_is_refused_with_a_clear_message(reported, case):
    facts, shapes = copy.deepcopy(reported[0]), reported[1]
    plans, problem = P.check_build(facts, shapes, "matmul_tiled_kernel")
    assert problem == "" and all("launches" in p for p in plans)  # the honest report passes
    mutate, says = HOSTILE[case]
    mutate(facts)
    plans, problem = P.check_build(facts, shapes, "matmul_tiled_kernel")
    messages = [problem] + [p["error"]["message"] for p in plans if "error" in p]
    assert any(says in m for m in messages), messages
    if not problem:  # a refused plan is that shape's error; where only its launch changed, the others keep theirs
        assert "the launch plan was refused" in plans[0]["error"]["message"]
        if facts["kernels"] == reported[0]["kernels"]:
            assert all("launches" in p for p in plans[1:])


def test_a_stage_kernel_never_launched_is_refused(reported):
    facts = copy.deepcopy(reported[0])
    helper = copy.deepcopy(facts["kernels"][0])
    helper["name"] = "matmul_tiled_kernel"  # a second specialisation of the same kernel: fine
    facts["kernels"].append(helper)
    assert P.check_build(facts, reported[1], "matmul_tiled_kernel")[1] == ""
    plans, _ = P.check_build(facts, reported[1], "matmul_naive_kernel")
    assert plans == [] or all("never launched matmul_naive_kernel" in p["error"]["message"] for p in plans)


def test_a_report_with_an_oversized_ptx_is_malformed_before_it_is_read(reported):
    facts = copy.deepcopy(reported[0])
    facts["kernels"][0]["ptx"] = ["x" * ((4 << 20) + 1)]
    job = {"task": "build", "shapes": reported[1]}
    assert "facts.kernels[0].ptx[0] is str" in protocol.check(job, None, facts, {})


def test_ptx_facts_are_read_from_the_ptx(reported):
    facts = ptx.facts(reported[0]["kernels"][0]["ptx"])
    assert facts == {"shared_arrays": [1024, 1024], "barriers": 2}
    entries = ptx.entries(reported[0]["kernels"][0]["ptx"][0])
    assert list(entries.values()) == [["u64"] * 27]
