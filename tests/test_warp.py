"""The warp functions in the simulator tier (autograder/sim/warp.py): each one the kernel-module grammar allows runs
in Numba's simulator as on a GPU, checked here against a NumPy model of what the GPU computes; what a GPU leaves
undefined (a lane outside the warp, lanes that wait for each other) is an error that says why, never a hang; a
stage 5 kernel built on warp shuffles gets full marks in the simulator tier; cuda.activemask(), which the simulator
cannot model, is refused by the grammar with the reason.

The kernels run in a subprocess with NUMBA_ENABLE_CUDASIM=1 (the flag must be set before numba is imported). On a
GPU machine the same driver also runs on the GPU, and the simulator must agree with it.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from autograder import engine
from autograder.grammar import violations
from conftest import ROOT

FULL = 0xFFFFFFFF
THREADS = 64  # two warps
SHUFFLE_STAGE_5 = os.path.join(ROOT, "tests", "grammar", "legit", "fast_warp_shuffle_broadcast.py")

# The driver: every supported warp, bit and math function on inputs drawn here, results as JSON (lists).
DRIVER = r"""
import json, os, sys
import numpy as np
from numba import cuda, float32
if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    from autograder.sim.warp import install
    install()
FULL = 0xFFFFFFFF
T = 64


@cuda.jit
def warp_kernel(x, n, d, of, oi, od, ob, stored, grid2):
    i = cuda.threadIdx.x
    lane = i % 32
    v = x[i]
    k = n[i]
    w = d[i]
    of[0, i] = cuda.shfl_sync(FULL, v, (lane * 7 + 3) % 32)
    of[1, i] = cuda.shfl_up_sync(FULL, v, 3)
    of[2, i] = cuda.shfl_down_sync(FULL, v, 5)
    of[3, i] = cuda.shfl_down_sync(FULL, v, 33)
    oi[0, i] = cuda.shfl_xor_sync(FULL, k, 6)
    od[0, i] = cuda.shfl_sync(FULL, w, 31 - lane)
    od[1, i] = cuda.shfl_xor_sync(FULL, w, 17)
    if lane < 16:
        of[4, i] = cuda.shfl_xor_sync(0x0000FFFF, v, 1)
    else:
        of[4, i] = cuda.shfl_xor_sync(0xFFFF0000, v, 3)
    ob[0, i] = cuda.all_sync(FULL, v > -1.5)
    ob[1, i] = cuda.any_sync(FULL, v > 1.5)
    ob[2, i] = cuda.eq_sync(FULL, k < 64)
    oi[1, i] = cuda.ballot_sync(FULL, k % 3 == 0)
    oi[2, i] = cuda.match_any_sync(FULL, k % 4)
    m, p = cuda.match_all_sync(FULL, k // 64)
    oi[3, i] = m
    ob[3, i] = p
    oi[4, i] = cuda.lanemask_lt()
    oi[5, i] = cuda.laneid
    s = cuda.shared.array(T, float32)
    s[i] = v
    cuda.syncwarp()
    of[5, i] = s[i ^ 1]
    cuda.syncwarp(FULL)
    t = v
    off = 16
    while off > 0:
        t += cuda.shfl_down_sync(FULL, t, off)
        off //= 2
    of[6, i] = cuda.shfl_sync(FULL, t, 0)
    of[7, i] = cuda.ldca(x, (i + 1) % T)
    of[8, i] = cuda.ldcg(x, (i + 2) % T)
    of[9, i] = cuda.ldcs(x, (i + 3) % T)
    of[10, i] = cuda.ldlu(x, (i + 4) % T)
    of[11, i] = cuda.ldcv(grid2, (i % 8, i // 8))
    cuda.stcg(stored, i, v)
    cuda.stcs(stored, T + i, v + float32(1.0))
    cuda.stwb(stored, 2 * T + i, v + float32(2.0))
    cuda.stwt(stored, 3 * T + i, v + float32(3.0))


@cuda.jit
def early_exit_kernel(x, out):
    i = cuda.threadIdx.x
    if i % 32 >= 16:
        return
    out[i] = cuda.shfl_xor_sync(FULL, x[i], 1)


@cuda.jit
def bits_kernel(a32, a64, u32, u64, f32, f64, o32, o64, ou32, ou64, of32, of64):
    i = cuda.threadIdx.x
    o32[0, i] = cuda.popc(a32[i])
    o32[1, i] = cuda.clz(a32[i])
    o64[0, i] = cuda.popc(a64[i])
    o64[1, i] = cuda.clz(a64[i])
    ou32[0, i] = cuda.ffs(a32[i])
    ou32[1, i] = cuda.ffs(a64[i])
    ou32[2, i] = cuda.popc(u32[i])
    ou32[3, i] = cuda.clz(u32[i])
    ou32[4, i] = cuda.brev(u32[i])
    ou64[0, i] = cuda.brev(u64[i])
    ou64[1, i] = cuda.popc(u64[i])
    ou64[2, i] = cuda.clz(u64[i])
    of32[0, i] = cuda.cbrt(f32[i])
    of32[1, i] = cuda.fma(f32[i], f32[(i + 1) % T], f32[(i + 2) % T])
    of32[2, i] = cuda.selp(f32[i] > 0, f32[i], float32(-1.0))
    of64[0, i] = cuda.cbrt(f64[i])
    of64[1, i] = cuda.fma(f64[i], f64[(i + 1) % T], f64[(i + 2) % T])


@cuda.jit
def atomic_kernel(v, ints, uints, floats, flag):
    i = cuda.threadIdx.x
    cuda.atomic.add(ints, 0, v[i])
    cuda.atomic.sub(ints, 1, v[i])
    cuda.atomic.max(ints, 2, v[i])
    cuda.atomic.min(ints, 3, v[i])
    cuda.atomic.and_(ints, 4, v[i])
    cuda.atomic.or_(ints, 5, v[i])
    cuda.atomic.xor(ints, 6, v[i])
    cuda.atomic.exch(ints, 7, v[i])
    old = ints[8]
    while cuda.atomic.cas(ints, 8, old, old + 1) != old:
        old = ints[8]
    cuda.atomic.inc(uints, 0, 9)
    cuda.atomic.dec(uints, 1, 9)
    cuda.atomic.add(floats, 0, float32(v[i]) * float32(0.5))
    cuda.atomic.max(floats, 1, float32(v[i]))
    cuda.atomic.nanmax(floats, 2, float32(v[i]))
    cuda.atomic.nanmin(floats, 3, float32(v[i]))
    cuda.atomic.compare_and_swap(flag, 0, i + 1)


inputs = {k: np.array(v, dtype=t) for k, (v, t) in json.loads(sys.stdin.read()).items()}
out = {}
shapes = {"of": (12, T, "float32"), "oi": (6, T, "int32"), "od": (2, T, "float64"), "ob": (4, T, "int32"),
          "stored": (1, 4 * T, "float32")}
arrays = {k: np.zeros(s[:2], s[2]) for k, s in shapes.items()}
arrays["stored"] = arrays["stored"][0]
dev = {k: cuda.to_device(a) for k, a in arrays.items()}
warp_kernel[1, T](cuda.to_device(inputs["x"]), cuda.to_device(inputs["n"]), cuda.to_device(inputs["d"]), dev["of"],
                  dev["oi"], dev["od"], dev["ob"], dev["stored"], cuda.to_device(inputs["grid2"]))
out.update({k: a.copy_to_host().tolist() for k, a in dev.items()})
out["stored"] = np.reshape(out["stored"], (4, T)).tolist()
early = cuda.to_device(np.full(T, -7.0, np.float32))
early_exit_kernel[1, T](cuda.to_device(inputs["x"]), early)
out["early"] = early.copy_to_host().tolist()
shapes = {"o32": (2, "int32"), "o64": (2, "int64"), "ou32": (5, "uint32"), "ou64": (3, "uint64"),
          "of32": (3, "float32"), "of64": (2, "float64")}
dev = {k: cuda.to_device(np.zeros((r, T), t)) for k, (r, t) in shapes.items()}
bits_kernel[1, T](*(cuda.to_device(inputs[k]) for k in ("a32", "a64", "u32", "u64", "f32", "f64")), dev["o32"],
                  dev["o64"], dev["ou32"], dev["ou64"], dev["of32"], dev["of64"])
out.update({k: [[int(v) if "f" not in k else float(v) for v in row] for row in a.copy_to_host()]
            for k, a in dev.items()})
ints = cuda.to_device(np.array([0, 0, -100, 100, -1, 0, 0, 0, 5], np.int32))
uints = cuda.to_device(np.zeros(2, np.uint32))
floats = cuda.to_device(np.array([0.0, -1e9, np.nan, np.nan], np.float32))
flag = cuda.to_device(np.zeros(1, np.int32))
atomic_kernel[1, T](cuda.to_device(inputs["v"]), ints, uints, floats, flag)
out["ints"], out["uints"] = ints.copy_to_host().tolist(), uints.copy_to_host().tolist()
out["flag"] = flag.copy_to_host().tolist()
out["floats"] = floats.copy_to_host().tolist()
print("RESULTS=" + json.dumps(out))
"""

# Kernels a GPU leaves undefined or hangs on: each is an error naming what went wrong (simulator only).
UNDEFINED = r"""
import numpy as np
from numba import cuda, float32
from autograder.sim.warp import install
install()
FULL = 0xFFFFFFFF


@cuda.jit
def partial_warp(out):
    i = cuda.threadIdx.x
    out[i] = cuda.shfl_down_sync(FULL, float32(i), 16)


@cuda.jit
def barrier_in_a_branch(out):
    i = cuda.threadIdx.x
    if i < 16:
        out[i] = cuda.shfl_sync(FULL, float32(i), 0)
    cuda.syncthreads()


@cuda.jit
def lane_not_in_its_mask(out):
    i = cuda.threadIdx.x
    out[i] = cuda.shfl_sync(0x1, float32(i), 0)


@cuda.jit
def two_functions_one_mask(out):
    i = cuda.threadIdx.x
    if i % 2 == 0:
        out[i] = cuda.shfl_sync(FULL, float32(i), 0)
    else:
        out[i] = cuda.ballot_sync(FULL, True)


for kernel, threads in ((partial_warp, 48), (barrier_in_a_branch, 32), (lane_not_in_its_mask, 32),
                        (two_functions_one_mask, 32)):
    try:
        kernel[1, threads](cuda.to_device(np.zeros(threads, np.float32)))
        print(kernel.__name__, "=> ran")
    except Exception as exc:
        print(kernel.__name__, "=>", type(exc).__name__, str(exc).replace(chr(10), " "))
"""


def draw_inputs():
    rng = np.random.default_rng(5)
    n = np.concatenate([rng.integers(0, 64, 32), rng.integers(0, 256, 32)]).astype(np.int32)
    big = rng.integers(-2 ** 62, 2 ** 62, THREADS, dtype=np.int64)
    a32 = rng.integers(-2 ** 31, 2 ** 31, THREADS, dtype=np.int64).astype(np.int32)
    a32[:3] = (0, -1, 1 << 30)
    big[:3] = (0, -1, 1 << 40)
    u32 = rng.integers(0, 2 ** 32, THREADS, dtype=np.uint64).astype(np.uint32)
    u64 = rng.integers(0, 2 ** 63, THREADS, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    f32 = (rng.standard_normal(THREADS) * 10).astype(np.float32)
    f32[:2] = (-27.0, 8.0)
    return {"x": rng.standard_normal(THREADS).astype(np.float32), "n": n, "d": rng.standard_normal(THREADS),
            "grid2": rng.standard_normal((8, 8)).astype(np.float32), "a32": a32, "a64": big, "u32": u32, "u64": u64,
            "f32": f32, "f64": rng.standard_normal(THREADS) * 1e3, "v": rng.integers(-50, 50, THREADS).astype(np.int32)}


def run_driver(inputs, sim):
    env = {**os.environ, "PYTHONPATH": ROOT}
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    payload = json.dumps({k: (v.tolist(), str(v.dtype)) for k, v in inputs.items()})
    p = subprocess.run([sys.executable, "-c", DRIVER], input=payload, capture_output=True, text=True, env=env,
                       timeout=300, cwd=ROOT)
    assert p.returncode == 0 and "RESULTS=" in p.stdout, p.stdout[-2000:] + p.stderr[-4000:]
    return json.loads(p.stdout.split("RESULTS=", 1)[1])


@pytest.fixture(scope="module")
def inputs():
    return draw_inputs()


@pytest.fixture(scope="module")
def simulated(inputs):
    return run_driver(inputs, sim=True)


# -- the NumPy model of each function -----------------------------------------------------------------------------
def lanes():
    i = np.arange(THREADS)
    return i, i % 32, i - i % 32


def shuffled(values, source):
    """values[j] of each thread's source lane j in its own warp (source already resolved per thread)."""
    i, lane, base = lanes()
    return np.asarray(values)[base + source]


def bits(value, width):
    return int(value) & ((1 << width) - 1)


def model(name, inp):
    i, lane, base = lanes()
    x, n, d = inp["x"], inp["n"].astype(np.int64), inp["d"]
    per_warp = lambda f: np.repeat([f(w) for w in (slice(0, 32), slice(32, 64))], 32)  # noqa: E731
    if name == "shfl_sync":
        return ("of", 0), shuffled(x, (lane * 7 + 3) % 32)
    if name == "shfl_up_sync":
        return ("of", 1), shuffled(x, np.where(lane >= 3, lane - 3, lane))
    if name == "shfl_down_sync":
        return ("of", 2), shuffled(x, np.where(lane + 5 < 32, lane + 5, lane))
    if name == "shfl_down_sync, delta 33 (its low 5 bits)":
        return ("of", 3), shuffled(x, np.where(lane + 1 < 32, lane + 1, lane))
    if name == "shfl_xor_sync, int32":
        return ("oi", 0), shuffled(n, lane ^ 6)
    if name == "shfl_sync, float64":
        return ("od", 0), shuffled(d, 31 - lane)
    if name == "shfl_xor_sync, float64":
        return ("od", 1), shuffled(d, lane ^ 17)
    if name == "shfl_xor_sync, half-warp masks":
        return ("of", 4), shuffled(x, np.where(lane < 16, lane ^ 1, lane ^ 3))
    if name == "all_sync":
        return ("ob", 0), per_warp(lambda w: (x[w] > -1.5).all())
    if name == "any_sync":
        return ("ob", 1), per_warp(lambda w: (x[w] > 1.5).any())
    if name == "eq_sync":
        return ("ob", 2), per_warp(lambda w: len(set(n[w] < 64)) == 1)
    as_int32 = lambda lanes: np.uint32(sum(1 << b for b in lanes)).view(np.int32)  # noqa: E731
    if name == "ballot_sync":
        return ("oi", 1), per_warp(lambda w: as_int32(b for b in range(32) if n[w][b] % 3 == 0))
    if name == "match_any_sync":
        return ("oi", 2), [as_int32(b for b in range(32) if n[t - t % 32 + b] % 4 == n[t] % 4) for t in i]
    if name == "match_all_sync":
        return ("oi", 3), per_warp(lambda w: np.uint32(FULL).view(np.int32) if len(set(n[w] // 64)) == 1 else 0)
    if name == "match_all_sync, predicate":
        return ("ob", 3), per_warp(lambda w: len(set(n[w] // 64)) == 1)
    if name == "lanemask_lt":
        return ("oi", 4), (1 << lane) - 1
    if name == "laneid":
        return ("oi", 5), lane
    if name == "syncwarp":
        return ("of", 5), x[i ^ 1]
    if name == "shfl_down_sync reduction, shfl_sync broadcast":
        return ("of", 6), per_warp(lambda w: x[w].astype(np.float64).sum())
    if name in ("ldca", "ldcg", "ldcs", "ldlu"):
        shift = ("ldca", "ldcg", "ldcs", "ldlu").index(name) + 1
        return ("of", 6 + shift), x[(i + shift) % THREADS]
    if name == "ldcv, 2D index":
        return ("of", 11), inp["grid2"][i % 8, i // 8]
    if name in ("stcg", "stcs", "stwb", "stwt"):
        row = ("stcg", "stcs", "stwb", "stwt").index(name)
        return ("stored", row), x + np.float32(row)
    if name == "early-exited lanes are not waited for":
        return ("early", None), np.where(lane < 16, x[i ^ 1], -7.0)
    a32, a64, u32, u64 = (inp[k] for k in ("a32", "a64", "u32", "u64"))
    count = lambda v, w: bin(bits(v, w)).count("1")  # noqa: E731
    lead = lambda v, w: w - bits(v, w).bit_length()  # noqa: E731
    first = lambda v, w: (bits(v, w) & -bits(v, w)).bit_length()  # noqa: E731
    rev = lambda v, w: int(format(bits(v, w), f"0{w}b")[::-1], 2)  # noqa: E731
    table = {"popc, int32": (("o32", 0), [count(v, 32) for v in a32]),
             "clz, int32": (("o32", 1), [lead(v, 32) for v in a32]),
             "popc, int64": (("o64", 0), [count(v, 64) for v in a64]),
             "clz, int64": (("o64", 1), [lead(v, 64) for v in a64]),
             "ffs, int32": (("ou32", 0), [first(v, 32) for v in a32]),
             "ffs, int64": (("ou32", 1), [first(v, 64) for v in a64]),
             "popc, uint32": (("ou32", 2), [count(v, 32) for v in u32]),
             "clz, uint32": (("ou32", 3), [lead(v, 32) for v in u32]),
             "brev, uint32": (("ou32", 4), [rev(v, 32) for v in u32]),
             "brev, uint64": (("ou64", 0), [rev(v, 64) for v in u64]),
             "popc, uint64": (("ou64", 1), [count(v, 64) for v in u64]),
             "clz, uint64": (("ou64", 2), [lead(v, 64) for v in u64])}
    if name in table:
        return table[name]
    f32, f64 = inp["f32"], inp["f64"]
    if name == "cbrt, float32":
        return ("of32", 0), np.cbrt(f32)
    if name == "fma, float32":  # the float32 product is exact in float64: one rounding, as the GPU's fma
        return ("of32", 1), (f32.astype(np.float64) * np.roll(f32, -1) + np.roll(f32, -2)).astype(np.float32)
    if name == "selp":
        return ("of32", 2), np.where(f32 > 0, f32, np.float32(-1.0))
    if name == "cbrt, float64":
        return ("of64", 0), np.cbrt(f64)
    if name == "fma, float64":
        return ("of64", 1), f64 * np.roll(f64, -1) + np.roll(f64, -2)
    raise KeyError(name)


WARP_FUNCTIONS = ["shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_down_sync, delta 33 (its low 5 bits)",
                  "shfl_xor_sync, int32", "shfl_sync, float64", "shfl_xor_sync, float64",
                  "shfl_xor_sync, half-warp masks",
                  "all_sync", "any_sync", "eq_sync", "ballot_sync", "match_any_sync", "match_all_sync",
                  "match_all_sync, predicate", "lanemask_lt", "laneid", "syncwarp",
                  "shfl_down_sync reduction, shfl_sync broadcast", "ldca", "ldcg", "ldcs", "ldlu", "ldcv, 2D index",
                  "stcg", "stcs", "stwb", "stwt", "early-exited lanes are not waited for"]
BIT_AND_MATH = ["popc, int32", "clz, int32", "popc, int64", "clz, int64", "ffs, int32", "ffs, int64", "popc, uint32",
                "clz, uint32", "brev, uint32", "brev, uint64", "popc, uint64", "clz, uint64", "cbrt, float32",
                "fma, float32", "selp", "cbrt, float64", "fma, float64"]


def got(results, where):
    array, row = where
    return np.asarray(results[array] if row is None else results[array][row])


@pytest.mark.parametrize("name", WARP_FUNCTIONS + BIT_AND_MATH)
def test_each_function_matches_its_numpy_model_in_the_simulator(simulated, inputs, name):
    where, want = model(name, inputs)
    have = got(simulated, where)
    if name.startswith(("cbrt", "shfl_down_sync reduction")):
        assert np.allclose(have, np.asarray(want, np.float64), rtol=1e-6, atol=1e-5), (have, want)
    elif where[0] in ("ou64", "o64"):
        assert [int(v) for v in have] == [int(v) for v in want], name
    else:
        assert np.array_equal(have, np.asarray(want)), (name, have, want)


def test_atomics_match_their_numpy_model_in_the_simulator(simulated, inputs):
    v = inputs["v"].astype(np.int64)
    ints = simulated["ints"]
    assert ints[:7] == [v.sum(), -v.sum(), max(-100, v.max()), min(100, v.min()),
                        int(np.bitwise_and.reduce(v) & -1), int(np.bitwise_or.reduce(v)), int(np.bitwise_xor.reduce(v))]
    assert ints[7] in v.tolist() and ints[8] == 5 + THREADS
    assert simulated["uints"] == [THREADS % 10, (-THREADS) % 10]  # inc wraps past 9 to 0, dec from 0 to 9
    assert np.isclose(simulated["floats"][0], 0.5 * v.sum()) and simulated["floats"][1:] == [v.max(), v.max(), v.min()]
    assert 1 <= simulated["flag"][0] <= THREADS  # one thread's compare_and_swap found the 0


def test_what_a_gpu_leaves_undefined_is_an_error_that_says_why():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", UNDEFINED], capture_output=True, text=True, env=env, timeout=120,
                       cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    said = dict(line.split(" => ", 1) for line in p.stdout.splitlines() if " => " in line)
    assert re.search(r"lane \d+ of warp 1 reads lane \d+ in cuda.shfl_down_sync, and that lane does not exist",
                     said["partial_warp"]), said
    assert "wait at cuda.syncthreads(), which cannot open while lanes of their warp wait" in \
        said["barrier_in_a_branch"], said
    assert "which does not name the lane itself" in said["lane_not_in_its_mask"], said
    assert re.search(r"called cuda.(ballot|shfl)_sync with mask 0xffffffff where lanes [\w, ]+ called "
                     r"cuda.(shfl|ballot)_sync with that mask: every lane a mask names must call the same warp "
                     r"function", said["two_functions_one_mask"]), said


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason="no NVIDIA GPU on this machine")
def test_the_simulator_agrees_with_the_gpu(simulated, inputs):
    """The same driver on a GPU: every result the simulator gave, the GPU gives (atomics: their final values)."""
    gpu = run_driver(inputs, sim=False)
    for name in WARP_FUNCTIONS + BIT_AND_MATH:
        where, _ = model(name, inputs)
        a, b = got(simulated, where), got(gpu, where)
        close = np.allclose(a, b, rtol=1e-6, atol=1e-5) if a.dtype.kind == "f" else np.array_equal(a, b)
        assert close, (name, a, b)
    assert simulated["ints"][:7] == gpu["ints"][:7] and simulated["ints"][8] == gpu["ints"][8]
    assert simulated["uints"] == gpu["uints"] and simulated["floats"][1:] == gpu["floats"][1:]
    assert np.isclose(simulated["floats"][0], gpu["floats"][0]) and 1 <= gpu["flag"][0] <= THREADS


def test_a_warp_shuffle_stage_5_kernel_gets_full_marks_in_the_simulator_tier(grade_text):
    with open(SHUFFLE_STAGE_5, encoding="utf-8") as f:
        r = grade_text("fast", f.read())
    assert r.score == r.max_score == 7, [(c.name, c.output[:300]) for c in r.checks]


def test_activemask_is_refused_with_the_reason():
    text = ("from numba import cuda\n\n\n@cuda.jit\ndef matmul_fast_kernel(A, B, C):\n"
            "    C[0, 0] = cuda.shfl_sync(cuda.activemask(), A[0, 0], 0)\n")
    findings = violations(text)
    assert len(findings) == 1 and "line 6: cuda.activemask" in findings[0], findings
    assert "the simulator tier cannot know" in findings[0] and "0xFFFFFFFF for a whole warp" in findings[0]
