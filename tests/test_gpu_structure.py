"""On a GPU the structure is judged at the size that is graded: data reuse and bank conflicts from one ncu run at the
size the speed check times, racecheck at a size drawn per grade (M and N at least 256, not multiples of the tile).

A kernel that tiles, pads or synchronises only at small sizes kept every structure point before: racecheck ran at
N = 64, ncu at N = 256 and data reuse came from the simulator's small run. The judges are tested here on plain facts
(CI); the known-bad kernels are graded whole on a GPU (skipped, saying why, without one)."""
import copy
import os

import time

import numpy as np
import pytest

from autograder import engine, stages
from autograder.checks import bank_conflicts, data_reuse, races
from autograder.checks.titles import title as tools_title
from autograder.gpu import ncu_together, slot, tools
from checkkit import child_result
from conftest import failed, mutate, passed

N = 2048  # config [speed] n
LOADS, ATOMS = data_reuse.LOAD_METRICS


def ncu_log(rows):
    """ncu's --csv log: one row per (kernel id, metric, value)."""
    head = '"ID","Process ID","Process Name","Host Name","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
    return head + "".join(f'"{k}","1","python3","h","kern","{m}","","{v:,}"\n' for k, m, v in rows)


# -- the judges, on facts ------------------------------------------------------------------------------------------
def test_data_reuse_from_the_load_count_at_the_timed_size():
    tiled = {LOADS: 2 * N // 16 * N * N // 32, "shape": (N, N, N)}    # 2K / 16 loads per output, 32 a request
    ok, msg = data_reuse.judge_ncu(tiled, 16)
    assert ok and "256 global loads" in msg and "2048 x 2048 x 2048" in msg, msg
    naive = {LOADS: 2 * N * N * N // 32, "shape": (N, N, N)}           # 2K per output
    ok, msg = data_reuse.judge_ncu(naive, 16)
    assert not ok and "4096 global loads" in msg and "global memory instead of the shared tiles" in msg, msg
    assert "at least 8 is needed" in msg and "the size the speed check times" in msg, msg


def test_data_reuse_counts_atomics_too():
    """A kernel that reads A and B through atomics (cuda.atomic.add(A, i, 0) returns A[i]) is not credited with the
    loads it hid."""
    hidden = {LOADS: 2 * N // 16 * N * N // 32, ATOMS: 2 * N * N * N // 32, "shape": (N, N, N)}
    assert not data_reuse.judge_ncu(hidden, 16)[0]


def test_data_reuse_has_no_upper_bound_on_a_gpu():
    """2 x 2 outputs per thread, or a tile of 32 where TILE is 16, reuse more than TILE: not 'loads were skipped'
    (a product that skips loads is wrong at this size, and the speed check verifies it)."""
    assert data_reuse.judge_ncu({LOADS: 2 * N // 64 * N * N // 32, "shape": (N, N, N)}, 16)[0]


def test_data_reuse_without_loads_or_report_fails():
    assert "no global load" in data_reuse.judge_ncu({LOADS: 0, "shape": (N, N, N)}, 16)[1]
    ok, msg = data_reuse.judge_ncu({"problem": "the runner crashed", "shape": (N, N, N)}, 16)
    assert not ok and "ncu did not report" in msg and "the runner crashed" in msg


def test_bank_conflicts_at_the_timed_size():
    conflicts, wavefronts = bank_conflicts.NCU_METRICS
    ok, msg = bank_conflicts.judge_ncu({conflicts: 0, wavefronts: 4456448, "shape": (N, N, N)})
    assert ok and "2048 x 2048 x 2048" in msg
    ok, msg = bank_conflicts.judge_ncu({conflicts: 3670016, wavefronts: 4456448, "shape": (N, N, N)})
    assert not ok and "3,670,016 bank conflicts" in msg and "TILE_PAD" in msg and "at every size" in msg


def test_bank_conflicts_are_not_diluted_by_ballast_loads():
    """A tile read 8-way conflicted once per step of the product (7 extra wavefronts a warp and step) beside a
    hundred times as many conflict-free loads: 0.1% of the wavefronts, but still 7 per step."""
    conflicts, wavefronts = bank_conflicts.NCU_METRICS
    steps = N ** 3 // 32
    ok, msg = bank_conflicts.judge_ncu({conflicts: 7 * steps, wavefronts: 800 * steps, "shape": (N, N, N)})
    assert not ok and "7.00 per warp and step" in msg and "(0.9%)" in msg
    # a 4 x 4 register-blocked kernel whose tile reads are 2-way conflicted: 1 extra a read, 2 reads in 8 steps
    assert bank_conflicts.judge_ncu({conflicts: steps // 4, wavefronts: 20 * steps, "shape": (N, N, N)})[0]


def ncu_fixture(name):
    """A real ncu log (tests/ncu/README.md): a 32 x 32 transposed-tile kernel at N = 512."""
    with open(os.path.join(os.path.dirname(__file__), "ncu", f"transposed_tile_{name}.csv")) as f:
        return f.read()


def test_bank_conflicts_are_judged_per_load_instruction():
    """ncu's counts per instruction: the unpadded tile's reads (LDS.128) take 8 times the wavefronts they need, the
    padded ones exactly what they need; the unpadded tile's 32-way conflicted store is not a load and is not judged.
    A kernel whose totals pass (a register-blocked kernel reads its tiles rarely: 0.25 extra a step, 1% of the
    wavefronts) still fails where one of its loads is conflicted."""
    unpadded = tools.ncu_facts(child_result({}), ncu_fixture("unpadded"))
    assert len(unpadded["shared_loads"]) == 16 and unpadded["kernels"] == 1
    assert max(r["wavefronts"] / r["ideal"] for r in unpadded["shared_loads"]) == 8.0
    assert not any(r["ideal"] == 131072 for r in unpadded["shared_loads"])  # the store (131,072 ideal) is left out
    ok, msg = bank_conflicts.judge_ncu({**unpadded, "shape": (512, 512, 512)})
    assert not ok and "takes 8.0 times the memory wavefronts it needs" in msg and "kern" in msg, msg
    assert "of its 16 shared-memory load instructions" in msg and "TILE_PAD" in msg, msg
    padded = tools.ncu_facts(child_result({}), ncu_fixture("padded"))
    ok, msg = bank_conflicts.judge_ncu({**padded, "shape": (512, 512, 512)})
    assert ok and len(padded["shared_loads"]) == 40 and "per instruction" not in msg, msg
    conflicts, wavefronts = bank_conflicts.NCU_METRICS
    steps = N ** 3 // 32
    blocked = {**unpadded, conflicts: steps // 4, wavefronts: 25 * steps, "shape": (N, N, N)}
    assert bank_conflicts.judge_ncu({**blocked, "shared_loads": None})[0]   # the totals alone let it pass
    ok, msg = bank_conflicts.judge_ncu(blocked)
    assert not ok and "0.25 per warp and step" in msg, msg


def test_conflict_free_ballast_does_not_hide_a_conflicted_load():
    """Eight conflict-free reads beside each 32-way conflicted one: that one instruction still takes 32 times the
    wavefronts it needs."""
    facts = tools.ncu_facts(child_result({}), ncu_fixture("ballast"))
    ok, msg = bank_conflicts.judge_ncu({**facts, "shape": (512, 512, 512)})
    assert not ok and "takes 32.0 times" in msg, msg


def test_an_ncu_run_split_between_stages_keeps_its_counts_per_instruction():
    """The grade's one ncu run is dealt out to the stages by launch (split_ncu): each stage's rows, the instanced
    ones included, go with it."""
    text = ncu_fixture("unpadded")
    lines = [ln for ln in text.splitlines() if ln.startswith('"0"')]
    shifted = "\n".join([ln.replace('"0"', '"1"', 1) for ln in lines])
    facts = {"shapes": [{"launches": 1}, {"launches": 1}]}
    parts = ncu_together.split_ncu(child_result(facts), text + "\n" + shifted, [True, True])
    for part in parts:
        mine = tools.ncu_facts(part[0], part[1])
        assert len(mine["shared_loads"]) == 16 and mine["kernels"] == 1, mine


def test_racecheck_verdict_names_the_drawn_size():
    ok, msg = races.judge_racecheck({"hazards": 0, "errors": 0, "warnings": 0, "shape": (300, 70, 290)})
    assert ok and "300 x 70 x 290" in msg
    ok, msg = races.judge_racecheck({"hazards": 9, "errors": 9, "warnings": 0, "lines": ["WAR hazard"],
                                     "shape": (300, 70, 290)})
    assert not ok and "9 hazards" in msg and "only some sizes" in msg and "WAR hazard" in msg
    assert "did not complete" in races.judge_racecheck({"problem": "killed", "shape": (300, 70, 290)})[1]


def test_tool_logs_read_into_facts():
    """Every kernel ncu profiled counts (a helper kernel's loads too); a log without rows or summary is a problem."""
    log = ncu_log([(0, LOADS, 100), (0, bank_conflicts.NCU_METRICS[0], 5), (1, LOADS, 50), (1, ATOMS, 7)])
    facts = tools.ncu_facts(child_result({}), log)
    assert facts[LOADS] == 150 and facts[ATOMS] == 7 and facts[bank_conflicts.NCU_METRICS[0]] == 5
    assert facts["kernels"] == 2
    assert "problem" in tools.ncu_facts(child_result({}), "==PROF== no kernels were profiled")
    assert "problem" in tools.ncu_facts(child_result({}, problem="exit code 1"), log)
    racy = ("========= Error: Potential WAR hazard detected at __shared__ 0x0 in block (0,0,0) :\n"
            "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n")
    facts = tools.racecheck_facts(child_result({}), racy)
    assert (facts["hazards"], facts["errors"], facts["warnings"]) == (2, 2, 0) and "WAR hazard" in facts["lines"][0]
    assert "problem" in tools.racecheck_facts(child_result({}), "the program crashed")


def test_one_ncu_run_is_dealt_out_by_each_stages_launches():
    """One ncu run for the grade's stages: ncu numbers the kernels in launch order and the runner says how many
    launches each stage's plan made, so each stage is judged on its own kernels alone. Where the count does not
    hold, no stage gets a part (each is profiled again on its own)."""
    log = ncu_log([(0, LOADS, 100), (1, LOADS, 10), (1, bank_conflicts.NCU_METRICS[0], 3), (2, LOADS, 20)])
    ran = child_result({"shapes": [{"launches": 1}, {"launches": 2}]})
    (first, first_log), (second, second_log) = ncu_together.split_ncu(ran, log, [True, True])
    one, two = tools.ncu_facts(first, first_log), tools.ncu_facts(second, second_log)
    assert (one[LOADS], one["kernels"], one[bank_conflicts.NCU_METRICS[0]]) == (100, 1, 0)
    assert (two[LOADS], two["kernels"], two[bank_conflicts.NCU_METRICS[0]]) == (30, 2, 3)
    assert first.facts["shapes"] == [{"launches": 1}] and second.facts["shapes"] == [{"launches": 2}]
    for facts, problem, text in (({"shapes": [{"launches": 1}, {"launches": 1}]}, "", log),   # 3 kernels, 2 launches
                                 ({"shapes": [{"launches": 1}]}, "", log),                    # a shape not reached
                                 ({"shapes": [{"launches": 1}, {"error": {"kind": "launch"}}]}, "", log),
                                 ({"shapes": [{"launches": 1}, {"launches": 2}]}, "killed", log),
                                 ({"shapes": [{"launches": 1}, {"launches": 2}]}, "", "")):
        assert ncu_together.split_ncu(child_result(facts, problem=problem), text, [True, True]) == [None, None]
    # the runner's warm-up kernel (launched before any plan existed) is the log's first row: left out by position,
    # never by name (a student's kernel may bear any name)
    warm = ncu_log([(0, LOADS, 9999), (1, LOADS, 100), (2, LOADS, 10), (3, LOADS, 20)])
    (first, first_log), (second, second_log) = ncu_together.split_ncu(ran, warm, [True, True], skip=1)
    assert tools.ncu_facts(first, first_log)[LOADS] == 100 and tools.ncu_facts(second, second_log)[LOADS] == 30
    assert ncu_together.split_ncu(ran, warm, [True, True]) == [None, None], "an unaccounted kernel voids the split"
    # a stage whose build failed took part with no launches: the others' parts still hold
    ran = child_result({"shapes": [{"launches": 0}, {"launches": 3}]})
    none, (third, third_log) = ncu_together.split_ncu(ran, log, [False, True])
    assert none is None and tools.ncu_facts(third, third_log)[LOADS] == 130
    assert ncu_together.split_ncu(ran, log, [True, True]) == [None, None]


def test_a_stage_of_a_failed_ncu_run_together_is_profiled_on_its_own(monkeypatch):
    """The run together failed (here: its runner crashed): each stage's ncu run is made again on its own, and a
    stage whose build failed is not run at all. The run is `ended` only once those are done too: the grade times
    (holding its GPU alone) only after every ncu process of its own ended."""
    import threading
    import types
    alone, given = [], {}
    monkeypatch.setattr(tools, "find_tool", lambda name: "/usr/bin/ncu")
    monkeypatch.setattr(tools, "_tool_run", lambda g, *a: alone.append(g.stage.name) or ("own", "log", ""))

    class Started:
        def __call__(self, seconds):
            return True

        def give_inputs(self, arrays):
            given["inputs"] = arrays

    def run(job, inputs, **kw):
        given.update(kw["turn"](Started()))
        assert inputs is None, "inputs and plans come with the go"
        return child_result({}, problem="the runner crashed")

    def grader(name, why=""):
        shape = {"launches": [{"kernel": 0, "args": ["A", "B", "C"], "grid": [1, 1, 1], "block": [1, 1, 1]}]}
        return types.SimpleNamespace(
            stage=types.SimpleNamespace(name=name, kernel="k"),
            cfg={"limits": {"tool_timeout_s": 30, "gpu_start_s": 40}, "speed": {"n": 8}},
            not_run=lambda why: child_result({}, problem="not run: " + why),
            runner_job=lambda task, shapes, count: (None, why) if why else (
                {"task": task, "device": "gpu", "kernel": "k", "kernels": [{"name": "k"}], "plans": [shape],
                 "count": count}, ""),
            run=run)
    together = ncu_together.NcuTogether()
    futures = [together.join(grader(name, why), np.random.default_rng(i)) for i, (name, why) in
               enumerate((("tiled", ""), ("tiled_general", ""), ("tiled_transposed", "the kernels were not built")))]
    thread = threading.Thread(target=together._run)
    thread.start()
    assert together.ended.wait(10), "the run together and the stages profiled again ended"
    assert alone == ["tiled", "tiled_general"], "ended only once the stages profiled on their own are done"
    thread.join(10)
    assert [f.result()[0] for f in futures[:2]] == ["own", "own"] and alone == ["tiled", "tiled_general"]
    assert "not run: the kernels were not built" in futures[2].result()[0].problem
    assert given["inputs"]["A0"].shape == (8, 8) and not np.array_equal(given["inputs"]["A0"], given["inputs"]["A1"])


@pytest.mark.parametrize("name, tile", [("tiled", 16), ("tiled", 32), ("tiled_general", 16),
                                        ("tiled_transposed", 32)])
def test_racecheck_size_is_drawn_per_grade(name, tile):
    """M and N at least 256; not multiples of the tile where the stage takes any size (stage 2 takes only square
    multiples of it); K crosses 2 to 4 tiles, the last one partial; different grades draw different sizes."""
    stage = stages.find(name)
    drawn = {tools.racecheck_shape(stage, tile, np.random.default_rng(seed)) for seed in range(20)}
    assert len(drawn) > 1, drawn
    for M, K, N in drawn:
        assert M >= 256 and N >= 256
        if stage.square_tiles_only:
            assert M == K == N and N % tile == 0
        else:
            assert M % tile and N % tile and tile < K < 4 * tile and K % tile


@pytest.mark.parametrize("tile", [16, 32])
def test_racecheck_also_runs_at_tile_multiples(tile):
    """Beside the drawn size that is never a multiple of the tile, a stage that takes any size is race-checked at
    tile multiples with K of many tiles, as the timed size is: a barrier dropped only at multiples races there."""
    stage = stages.find("tiled_general")
    for seed in range(10):
        first, multiple = tools.racecheck_shapes(stage, tile, np.random.default_rng(seed))
        assert first == tools.racecheck_shape(stage, tile, np.random.default_rng(seed))
        M, K, N = multiple
        assert M % tile == K % tile == N % tile == 0 and 6 * tile <= K <= 10 * tile and 2 * tile <= M <= 3 * tile
    assert tools.racecheck_shapes(stages.find("tiled"), tile, np.random.default_rng(0)) == \
        [tools.racecheck_shape(stages.find("tiled"), tile, np.random.default_rng(0))]


def test_gpu_tool_inputs_are_drawn_as_the_timed_ones(cfg, tmp_path):
    """ncu and racecheck get inputs the way the timed runs get theirs: the grader's uniform fill in [-1, 1) from
    secret seeds, one pair per shape."""
    import types
    from course.mutants import solution_text
    from autograder.protocol import fill_uniform_host
    src = types.SimpleNamespace(stage=stages.find("tiled_general"), source=solution_text("tiled_general"))
    g = engine.StageGrader(src, "gpu", cfg, np.random.default_rng(5), str(tmp_path))
    inputs = tools._inputs(g, g.racecheck_shapes, np.random.default_rng(3))
    assert sorted(inputs) == ["A0", "A1", "B0", "B1"]
    assert tools._shapes(inputs) == g.racecheck_shapes
    for x in inputs.values():
        assert x.dtype == np.float32 and -1 <= x.min() and x.max() < 1
    rng = np.random.default_rng(3)
    seed_a, _ = (int(s) for s in rng.integers(0, 2 ** 32, 2))
    M, K, _ = g.racecheck_shapes[0]
    assert np.array_equal(inputs["A0"], fill_uniform_host(M, K, seed_a))


def test_the_gpu_tier_builds_plans_at_the_sizes_its_tools_run(cfg, tmp_path):
    """The build child records the plan of racecheck's drawn size and of the timed size, where ncu runs; the
    simulator's instrumented run is not part of the GPU tier any more."""
    import types
    from course.mutants import solution_text
    src = types.SimpleNamespace(stage=stages.find("tiled_general"), source=solution_text("tiled_general"))
    g = engine.StageGrader(src, "gpu", cfg, np.random.default_rng(5), str(tmp_path))
    shapes = [tuple(s) for s in g.build_shapes()]
    assert g.racecheck_shape in shapes and (N, N, N) in shapes and min(g.racecheck_shape[::2]) >= 256
    assert all(s in shapes for s in g.racecheck_shapes) and len(g.racecheck_shapes) == 2
    assert g.instrument_keys() == [] and g.tool_count() == 2
    rows = g.tier_rows(lambda key: g.check(key, tools_title(g, key)))
    assert [c.key for c in rows] == ["races", "data_reuse", "speed"] and "ncu, N=2048" in rows[1].name


# -- the known-bad kernels, graded whole on a GPU ------------------------------------------------------------------
TILED_LOOP = "    acc = float32(0.0)\n    for t in range((K + TILE - 1) // TILE):\n"
TILED_ONLY_UP_TO_64 = ("    acc = float32(0.0)\n    if M > 64 or N > 64:  # naive above 64 x 64\n"
                       "        if row < M and col < N:\n            for k in range(K):\n"
                       "                acc += A[row, k] * B[k, col]\n            C[row, col] = acc\n        return\n"
                       "    for t in range((K + TILE - 1) // TILE):\n")
SECOND_BARRIER = "            acc += sA[ty, k] * sB[k, tx]\n        cuda.syncthreads()\n"
# The second barrier while N <= 64, and at the sizes the correctness and speed checks use (512, 2048), where the race
# could corrupt C and be caught by correctness alone: racecheck must find the race at a size of its own.
SECOND_BARRIER_SMALL = ("            acc += sA[ty, k] * sB[k, tx]\n"
                        "        if C.shape[0] <= 64 or C.shape[0] % 512 == 0:\n            cuda.syncthreads()\n")
UNPADDED_ABOVE_256 = (
    ("    sBT = cuda.shared.array((TILE, TILE_PAD), float32)\n",
     "    sBT = cuda.shared.array((TILE, TILE_PAD), float32)\n    sBU = cuda.shared.array((TILE, TILE), float32)\n"),
    ("        sBT[tx, ty] = B[kb, col] if kb < K and col < N else float32(0.0)\n        cuda.syncthreads()\n"
     "        for k in range(TILE):\n            acc += sA[ty, k] * sBT[tx, k]\n",
     "        if N > 256:  # the unpadded tile above 256\n"
     "            sBU[tx, ty] = B[kb, col] if kb < K and col < N else float32(0.0)\n"
     "        else:\n            sBT[tx, ty] = B[kb, col] if kb < K and col < N else float32(0.0)\n"
     "        cuda.syncthreads()\n        if N > 256:\n            for k in range(TILE):\n"
     "                acc += sA[ty, k] * sBU[tx, k]\n        else:\n            for k in range(TILE):\n"
     "                acc += sA[ty, k] * sBT[tx, k]\n"))

@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason="no NVIDIA GPU on this machine")
@pytest.mark.parametrize("tile", [16, 32])
def test_stage3_tiled_only_up_to_64_loses_data_reuse(grade_text, tile):
    text = mutate("tiled_general", (TILED_LOOP, TILED_ONLY_UP_TO_64), ("TILE = 16", f"TILE = {tile}"))
    r = grade_text("tiled_general", text, device="gpu")
    passed(r, "correct")
    passed(r, "races")  # racecheck at 256 or more runs the naive branch: no shared memory touched
    out = failed(r, "data_reuse")
    assert "4096 global loads" in out and "2048 x 2048 x 2048" in out, out


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason="no NVIDIA GPU on this machine")
def test_stage2_second_barrier_only_at_small_sizes_loses_races(grade_text):
    r = grade_text("tiled", mutate("tiled", (SECOND_BARRIER, SECOND_BARRIER_SMALL)), device="gpu")
    passed(r, "correct")
    passed(r, "data_reuse")
    out = failed(r, "races")
    assert "racecheck found" in out and "a size drawn for this grade" in out, out


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason="no NVIDIA GPU on this machine")
def test_stage4_unpadded_above_256_loses_bank_conflicts(grade_text):
    r = grade_text("tiled_transposed", mutate("tiled_transposed", *UNPADDED_ABOVE_256), device="gpu")
    passed(r, "correct")
    passed(r, "data_reuse")
    out = failed(r, "bank_conflicts")
    assert "bank conflicts" in out and "2048 x 2048 x 2048" in out, out


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason="no NVIDIA GPU on this machine")
def test_honest_solutions_keep_every_structure_point(cfg):
    """The five solutions, with the seconds each GPU tool took (BENCHMARKS.md)."""
    import os
    from conftest import ROOT
    c = copy.deepcopy(cfg)
    r = engine.grade(os.path.join(ROOT, "solutions"), device="gpu", seed=3, cfg=c)
    bad = [f"{ch.stage}: {ch.key}: {ch.output}" for ch in r.checks if ch.status != "passed"]
    assert not bad and r.score == r.max_score, "\n".join(bad)
    for ch in r.checks:
        if ch.key in ("races", "bank_conflicts", "data_reuse"):
            print(f"  {ch.stage:16s} {ch.key:14s} {ch.output.splitlines()[0]}")
    for child in r.children:
        if child["task"] == "gpu tool":
            print(f"  {child['stage']:16s} {child['what']}: {child['wall_s']:.1f} s")


def test_ncu_runs_profile_one_at_a_time_once_started(tmp_path, monkeypatch):
    """Two ncu runs profiling on one GPU at once left the later one without counters: a run takes the GPU's ncu lock
    once its runner started and its plans are given (its start-up overlaps another's profiling), and holds it until
    it ends; a refused turn takes nothing; racecheck runs are not held back."""
    import threading
    import time
    monkeypatch.setattr(tools.tempfile, "gettempdir", lambda: str(tmp_path))
    inside, overlap, order = [], [], []

    def run(tool, answer):
        def given(ready):
            order.append("started")
            time.sleep(0.2)  # the runner's start-up: overlaps the other run's profiling
            return answer
        with tools.ToolTurn(tool) as shared:
            if shared.after(given)(None) != answer:
                raise AssertionError("the turn's answer changed")
            if isinstance(answer, dict):
                if inside:
                    overlap.append(tool)
                inside.append(tool)
                order.append("profiling")
                time.sleep(0.3)
                inside.remove(tool)
    threads = [threading.Thread(target=run, args=("ncu", {"plans": []})) for _ in range(3)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlap == []
    assert order[:3] == ["started"] * 3  # every start-up before the first profiling ended
    assert time.monotonic() - began < 0.2 + 3 * 0.3 + 0.25  # start-ups side by side, not 3 x 0.5 s
    refused = threading.Thread(target=run, args=("ncu", "not run: no plan"))
    refused.start()
    refused.join()
    with tools.ToolTurn("ncu") as shared:  # nothing held by the refused one
        shared.after(lambda ready: {"plans": []})(None)
        assert shared.lock is not None
    threads = [threading.Thread(target=run, args=("compute-sanitizer", {"plans": []})) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlap == ["compute-sanitizer"]


def test_ncu_runs_of_a_gpu_share_ncu_lock_folder(tmp_path, monkeypatch):
    """ncu's own lock file (TMPDIR/nsight-compute-lock) is shared by the GPU's ncu runs (one folder a GPU), writable by
    every sandbox uid: not sticky (fs.protected_regular refuses another uid's file in a sticky folder), mode 666.
    compute-sanitizer keeps the sandbox's own /tmp. The child's TMPDIR is the folder."""
    import stat
    from autograder.sandbox import run as sandbox_run
    monkeypatch.setattr(tools.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-fake-a")
    monkeypatch.setattr(slot, "_UUIDS", {})
    monkeypatch.setattr(slot, "listed_uuid", lambda selector: selector)
    job = tools.ToolTurn("ncu").job({"task": "run", "device": "gpu"})
    folder = job["tool_tmp"]
    assert os.path.basename(folder) == "autograder-ncu-tmp-GPU-fake-a"
    mode = os.stat(folder).st_mode
    assert stat.S_IMODE(mode) == 0o777 and not mode & stat.S_ISVTX
    assert stat.S_IMODE(os.stat(os.path.join(folder, "nsight-compute-lock")).st_mode) == 0o666
    assert tools.ToolTurn("compute-sanitizer").job({"task": "run"}) == {"task": "run"}
    box = type("Box", (), {"dir_inside": lambda self, name: {"tool_tmp": folder}[name], "env": lambda self, env: env})()
    assert sandbox_run._env(job, "/tmp", box)["TMPDIR"] == folder
    assert sandbox_run._env({"device": "gpu"}, "/tmp", box)["TMPDIR"] == "/tmp"
