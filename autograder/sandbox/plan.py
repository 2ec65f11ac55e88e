"""Trusted parent side: the build child's kernels and launch plans, checked before any runner loads them.

The build child ran student code (builder/task.py), so everything it reports is data from an untrusted process.
A runner (runner/plan_launch.py) loads only what passes here:

- kernels: at most MAX_KERNELS, each PTX a module for a 64-bit target that declares the named entry, with
  parameters of exactly the kernel's argument types; no PTX above MAX_PTX_BYTES; no grid-wide synchronisation
  (cooperative launch) and nothing to link beside the PTX;
- launches: only A, B, C and typed numbers in range, one argument per parameter, grid and block within the
  GPU's limits, dynamic shared memory within an SM's, at most MAX_LAUNCHES per shape, and the stage's kernel
  among them. There is no stream to name: a runner launches on the default stream.

Barrier and shared-array facts for the structure checks come from the parent's reading of the PTX
(autograder/ptx.py), not from the child's word.
"""
import math
import re

from ..protocol import ARRAY_TYPES, NUMBER_TYPES, OPERANDS
from ..ptx import entries

MAX_KERNELS = 8
MAX_LAUNCHES = 64
MAX_PTX_BYTES = 4 << 20
MAX_SHARED_BYTES = 227 * 1024   # dynamic shared memory one block may ask for on sm_90
MAX_GRID = (2 ** 31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)

# PTX parameter types of each argument type (numba flattens an array into 9 parameters, as
# _Kernel._prepare_args packs it: meminfo, parent, size, itemsize, data, 2 shape, 2 strides)
PARAMS = {**{t: ["u64"] for t in ARRAY_TYPES}, "int8": ["u8", "s8"], "uint8": ["u8"], "int16": ["u16", "s16"],
          "uint16": ["u16"], "int32": ["u32", "s32"], "uint32": ["u32"], "int64": ["u64", "s64"], "uint64": ["u64"],
          "float32": ["f32"], "float64": ["f64"], "bool": ["u8"]}
RANGES = {"int8": (-2 ** 7, 2 ** 7 - 1), "int16": (-2 ** 15, 2 ** 15 - 1), "int32": (-2 ** 31, 2 ** 31 - 1),
          "int64": (-2 ** 63, 2 ** 63 - 1), "uint8": (0, 2 ** 8 - 1), "uint16": (0, 2 ** 16 - 1),
          "uint32": (0, 2 ** 32 - 1), "uint64": (0, 2 ** 64 - 1)}
KEYS = {"kernel", "grid", "block", "shared", "args"}
SPEC_KEYS = {"name", "entry", "ptx", "argtypes", "max_registers", "carveout", "cooperative", "links", "debug"}


class Refused(ValueError):
    """The plan or its PTX is not one a runner may load; the message says what and why."""


def _int(value, low, high):
    return type(value) is int and low <= value <= high


def check_kernel(spec, index, compiled=True):
    """Raise Refused unless `spec` is a loadable kernel (without `compiled`: a kernel the simulator may look up by
    name and launch with arguments of these types; the build had no compiler, so there is no PTX)."""
    where = f"kernel {index}"
    if not isinstance(spec, dict) or set(spec) != SPEC_KEYS:
        raise Refused(f"{where} is not a kernel record")
    name, entry, texts, argtypes = spec["name"], spec["entry"], spec["ptx"], spec["argtypes"]
    if not (isinstance(name, str) and name.isidentifier()):
        raise Refused(f"{where} has no kernel name")
    where = f"kernel {name}"
    if not compiled:
        if not (isinstance(argtypes, list) and all(t in PARAMS for t in argtypes)):
            raise Refused(f"{where} takes arguments of types the grader cannot pass ({str(argtypes)[:120]})")
        return
    if not (isinstance(texts, list) and 1 <= len(texts) <= 4 and all(isinstance(t, str) for t in texts)):
        raise Refused(f"{where} has no PTX")
    size = sum(len(t.encode("utf-8", "replace")) for t in texts)
    if size > MAX_PTX_BYTES:
        raise Refused(f"{where}'s PTX is {size / 2 ** 20:.1f} MiB, more than the {MAX_PTX_BYTES >> 20} MiB any "
                      "kernel of this course compiles to")
    for text in texts:
        if not (re.search(r"^\s*\.version\s+\d+\.\d+", text, re.M) and re.search(r"^\s*\.target\s+sm_\d+", text, re.M)
                and re.search(r"^\s*\.address_size\s+64\b", text, re.M)):
            raise Refused(f"{where}'s PTX is not a PTX module (.version, .target sm_XX, .address_size 64)")
    found = {}
    for text in texts:
        found.update(entries(text))
    if entry not in found:
        raise Refused(f"{where}'s PTX has no entry {str(entry)[:80]!r} (it has "
                      f"{', '.join(n[:60] for n in found) or 'none'})")
    if f"{len(name)}{name}" not in entry:
        raise Refused(f"{where}'s entry {entry[:80]!r} is not the compiled {name}")
    if not (isinstance(argtypes, list) and all(t in PARAMS for t in argtypes)):
        raise Refused(f"{where} takes arguments of types the grader cannot pass ({str(argtypes)[:120]}): kernels "
                      f"take the A, B, C arrays ({ARRAY_TYPES[0]}) and numbers ({', '.join(NUMBER_TYPES)})")
    params = found[entry]
    expected = []
    for t in argtypes:
        expected += [["u64"]] * 9 if t in ARRAY_TYPES else [PARAMS[t]]
    if len(params) != len(expected) or any(p not in ok for p, ok in zip(params, expected)):
        raise Refused(f"{where}'s PTX entry takes {len(params)} parameters ({' '.join(params[:12])}...), not "
                      f"those of its argument types {', '.join(argtypes)}")
    if spec["max_registers"] is not None and not _int(spec["max_registers"], 1, 255):
        raise Refused(f"{where} asks for max_registers={spec['max_registers']!r}")
    if spec["carveout"] is not None and not _int(spec["carveout"], -1, 100):
        raise Refused(f"{where} asks for a shared-memory carveout of {spec['carveout']!r}")
    if spec["cooperative"] is not False:
        raise Refused(f"{where} uses grid-wide synchronisation (a cooperative launch), which the grader does not "
                      "launch: synchronise blocks by ending the kernel and launching another")
    if spec["links"] != 0:
        raise Refused(f"{where} needs other code linked beside its PTX (the device runtime or a linked file), "
                      "which the grader does not link")
    if type(spec["debug"]) is not bool:
        raise Refused(f"{where} has no debug flag")


def check_launches(launches, specs, stage_kernel):
    """Raise Refused unless `launches` is a plan a runner may launch on A, B and C."""
    if not isinstance(launches, list) or not 1 <= len(launches) <= MAX_LAUNCHES:
        raise Refused(f"the launcher made {len(launches) if isinstance(launches, list) else 'no'} launches; a "
                      f"shape may take 1 to {MAX_LAUNCHES}")
    for i, item in enumerate(launches):
        where = f"launch {i + 1}"
        if not isinstance(item, dict) or set(item) != KEYS:
            extra = sorted(set(item) - KEYS) if isinstance(item, dict) else []
            raise Refused(f"{where} is not a launch of the default stream"
                          + (f" (it names {', '.join(str(k)[:20] for k in extra)})" if extra else ""))
        if not _int(item["kernel"], 0, len(specs) - 1):
            raise Refused(f"{where} names kernel {str(item['kernel'])[:20]}, which the build did not compile")
        spec = specs[item["kernel"]]
        where = f"launch {i + 1} ({spec['name']})"
        for key, limits in (("grid", MAX_GRID), ("block", MAX_BLOCK)):
            dims = item[key]
            if not (isinstance(dims, list) and len(dims) == 3 and all(_int(d, 1, m) for d, m in zip(dims, limits))):
                raise Refused(f"{where} has {key} {str(dims)[:60]}: each dimension from 1 to {limits}")
        if math.prod(item["block"]) > 1024:
            raise Refused(f"{where} has {math.prod(item['block'])} threads in a block; a block holds at most 1024")
        if not _int(item["shared"], 0, MAX_SHARED_BYTES):
            raise Refused(f"{where} asks for {str(item['shared'])[:20]} bytes of dynamic shared memory")
        args = item["args"]
        if not isinstance(args, list) or len(args) != len(spec["argtypes"]):
            raise Refused(f"{where} passes {len(args) if isinstance(args, list) else 'no'} arguments to a kernel "
                          f"of {len(spec['argtypes'])}")
        for pos, (arg, kind) in enumerate(zip(args, spec["argtypes"])):
            if kind in ARRAY_TYPES:
                if arg not in OPERANDS:
                    raise Refused(f"{where} passes {str(arg)[:40]!r} as argument {pos}: kernels may receive only the "
                                  "A, B, C arrays the grader passed and plain numbers")
                continue
            if not (isinstance(arg, dict) and set(arg) == {"type", "value"} and arg["type"] == kind):
                raise Refused(f"{where} passes {str(arg)[:60]} as argument {pos}, which the kernel takes as {kind}")
            value = arg["value"]
            if kind == "bool":
                ok = type(value) is bool
            elif kind.startswith("float"):
                ok = type(value) in (int, float) and math.isfinite(value)
            else:
                ok = _int(value, *RANGES[kind])
            if not ok:
                raise Refused(f"{where} passes {str(value)[:40]} as argument {pos}, not a {kind}")
    if not any(specs[item["kernel"]]["name"] == stage_kernel for item in launches):
        raise Refused(f"the launcher never launched {stage_kernel}; call it as {stage_kernel}[blocks, threads](A, B, C)")


def check_build(facts, shapes, stage_kernel, compiled=True):
    """(plans, problem): the build child's plan of each shape, each ({"launches": [...]} or {"error": ...}) checked
    here (a refused plan becomes that shape's error); problem is "" or why none of its kernels may be loaded.
    `compiled`: the kernels come with PTX (False: the simulator's plans from a build with no CUDA compiler)."""
    specs, plans = facts.get("kernels", []), facts.get("plans", [])
    try:
        if not isinstance(specs, list) or len(specs) > MAX_KERNELS:
            raise Refused(f"the module compiled more than {MAX_KERNELS} kernels")
        for i, spec in enumerate(specs):
            check_kernel(spec, i, compiled)
        if compiled and specs and specs[0]["name"] != stage_kernel:
            raise Refused(f"the first kernel is {specs[0]['name']}, not the stage's {stage_kernel}")
    except Refused as exc:
        return [], f"the compiled kernels were refused: {exc}"
    if not isinstance(plans, list) or len(plans) != len(shapes):
        return [], f"the build reported {len(plans) if isinstance(plans, list) else 'no'} plans for {len(shapes)} shapes"
    checked = []
    for plan in plans:
        if isinstance(plan, dict) and "error" in plan:
            checked.append({"error": plan["error"]})
            continue
        try:
            if not isinstance(plan, dict) or set(plan) != {"launches"}:
                raise Refused("the plan is not a list of launches")
            check_launches(plan["launches"], specs, stage_kernel)
            checked.append({"launches": plan["launches"]})
        except Refused as exc:
            checked.append({"error": {"kind": "launch", "message": f"the launch plan was refused: {exc}"}})
    return checked, ""
