"""Untrusted side (the GPU tier's build child): the one GPU-tier child that imports student code. It turns the
kernel module into data: PTX and a launch plan. It runs without a GPU.

For every shape the stage will run (the correctness shapes, the GPU tools' sizes, the speed and leaderboard
sizes), the launcher is called on stand-in device arrays of that shape with the kernels swapped for recorders
(builder/launches.py); each recorded launch then goes through numba's own dispatcher, which picks or compiles
the kernel's specialisation for those arguments exactly as it would on the GPU, and hands it to a launch that
records instead of running. What comes back, as plain data:

- per specialisation: its kernel's name, the PTX for the grading GPU, the entry name and argument types;
- per shape: the launches in order (specialisation, grid, block, dynamic shared memory, and for each argument
  "A", "B", "C" or a typed number), or the error that stopped the launcher.

The parent checks all of it (sandbox/plan.py) before any runner loads the PTX (runner/plan_launch.py). Nothing
here measures anything: a module that lies in its plan can only hand the runners another kernel, which they
check like any other.
"""
import types

from autograder.protocol import ARRAY_TYPES, NUMBER_TYPES, OPERANDS  # noqa: F401 (the plan's shapes)

COMPILER_ERRORS = ("TypingError", "LoweringError", "NvvmError", "NvvmSupportError", "UnsupportedError",
                   "CompilerError", "NumbaError")
# compiler errors that say the compiler itself is missing (the grader's machine), not that it rejected the code
MISSING_COMPILER = ("NvvmSupportError", "DynamicLibNotFoundError")
_FAILED = []  # the functions whose compile raised, innermost first (stand_in records them)


def compiler_error(exc):
    """True for an error of numba's compiler (any subclass of its NumbaError, NVVM's) or of a missing compiler."""
    return any(c.__name__ in COMPILER_ERRORS + MISSING_COMPILER for c in type(exc).__mro__)


def stand_in(cc):
    """Compile for compute capability `cc` as numba would on that GPU (the same PTX: arch `sm_XYa` from 9.0 on),
    with no GPU and no driver: kernels compile (explicit signatures at import, as on a GPU) but never load."""
    from numba.cuda import codegen, dispatcher
    target = (cc[0], cc[1], "a" if tuple(cc) >= (9, 0) else "")
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=tuple(cc))
    codegen.CUDACodeLibrary._ensure_cc = lambda self, wanted: wanted if wanted is not None else target
    dispatcher._Kernel.bind = lambda self: None  # loading needs a context; the runners load
    for attr in ("compile", "compile_device"):  # which function the compiler rejected: a kernel or a device function
        setattr(dispatcher.CUDADispatcher, attr, _naming_failures(getattr(dispatcher.CUDADispatcher, attr)))


def _naming_failures(compile_method):
    def compile_naming_failures(self, *args, **kwargs):
        try:
            return compile_method(self, *args, **kwargs)
        except Exception:
            _FAILED.append(getattr(self.py_func, "__name__", "?"))
            raise
    return compile_naming_failures


class Rejected(Exception):
    """The GPU compiler rejected a function a launched kernel needs: `function` (the kernel, or the device function
    it calls that failed), `kernel` (the launched kernel), the compiler's own error."""

    def __init__(self, kernel, error, failed=()):
        function = failed[0] if failed else kernel
        self.kernel, self.function, self.error = kernel, function, error
        what = f"{function} (a device function that {kernel} calls)" if function != kernel else kernel
        super().__init__(f"the GPU compiler rejected {what}: {type(error).__name__}: {str(error)[:1500]}")

    @property
    def compiler_missing(self):
        return type(self.error).__name__ in MISSING_COMPILER


def compile_error_facts(exc):
    """The compile facts of a compiler error (`exc`: Rejected, or a compiler error raised at import by a kernel or
    device function with an explicit signature, which numba compiles there): compile_error, and the rejected
    function's name unless the compiler itself is missing."""
    if not isinstance(exc, Rejected):
        exc = Rejected(_FAILED[0] if _FAILED else "a function with an explicit signature", exc, _FAILED[:1])
    if exc.compiler_missing:  # the machine's, not the module's
        missing = f"{type(exc.error).__name__}: {str(exc.error)[:1500]}"
        return {"compile_error": "the CUDA compiler is not installed here: " + missing, "compiler_missing": missing}
    facts = {"compile_error": str(exc)}
    if compiler_error(exc.error):
        facts["rejected"] = exc.function
    return facts


class _Capture:
    """Stands in for _Kernel.launch while the recorded launches go through their dispatchers."""

    def __init__(self):
        self.launches = []

    def __call__(self, kernel, args, griddim, blockdim, stream=0, sharedmem=0):
        self.launches.append((kernel, args, griddim, blockdim, sharedmem))


def stand_in_array(rows, cols):
    """A float32 C-contiguous device array of this shape that owns no memory (typed, shaped, never read)."""
    import numpy as np
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return DeviceNDArray((rows, cols), (4 * cols, 4), np.float32, gpu_data=object())


def _number(value, numba_type):
    """A launch's number argument as plan data, or raise LaunchError."""
    import math
    from autograder.builder.launches import LaunchError
    name = str(numba_type)
    if name == "boolean":
        name = "bool"
    if name not in NUMBER_TYPES:
        raise LaunchError(f"a kernel argument of type {name} cannot be graded: pass the A, B, C arrays and "
                          f"integers or floats ({', '.join(NUMBER_TYPES)})")
    plain = bool(value) if name == "bool" else (float(value) if name.startswith("float") else int(value))
    if isinstance(plain, float) and not math.isfinite(plain):
        raise LaunchError(f"a kernel argument is {plain}: kernels may receive finite numbers only")
    return {"type": name, "value": plain}


def _dims(value):
    return [int(v) for v in value]


def plan_shape(module, job, shape, specs, kernels_of, compile=True):
    """The launches of the launcher at (M, K, N), as plan data; compiles each new specialisation into `specs`.
    Without `compile` (a machine with no CUDA compiler: the simulator tier still runs the plan) the specialisations
    are typed as numba would type them, with no PTX."""
    from numba.cuda import dispatcher
    from autograder.builder import launches as L
    M, K, N = shape
    A, B, C = stand_in_array(M, K), stand_in_array(K, N), stand_in_array(M, N)
    recorded = L.record_launches(module, job["launcher"], A, B, C)
    L.validate(recorded, job["kernel"], A, B, C)
    if not compile:
        return _typed_plan(recorded, (A, B, C), specs, kernels_of)
    capture = _Capture()
    real = dispatcher._Kernel.launch
    dispatcher._Kernel.launch = lambda self, *a, **k: capture(self, *a, **k)
    try:
        for name, kernel, config, args in recorded:  # numba picks (and compiles) the specialisation and
            del _FAILED[:]                             # "launches" it: recorded here
            try:
                kernel[config](*args)
            except Exception as exc:
                if compiler_error(exc):
                    raise Rejected(name, exc, _FAILED) from exc
                raise
    finally:
        dispatcher._Kernel.launch = real
    if len(capture.launches) != len(recorded):
        raise L.LaunchError("a launch did not reach its kernel")
    plan = []
    for (name, *_), (kernel, args, griddim, blockdim, sharedmem) in zip(recorded, capture.launches):
        if id(kernel) not in kernels_of:
            try:
                spec = describe(name, kernel)  # NVVM turns the kernel into PTX here
            except Exception as exc:
                if compiler_error(exc):
                    raise Rejected(name, exc) from exc
                raise
            kernels_of[id(kernel)] = len(specs)
            specs.append(spec)
        plan.append({"kernel": kernels_of[id(kernel)], "grid": _dims(griddim), "block": _dims(blockdim),
                     "shared": int(sharedmem or 0), "args": _pack(name, args, kernel.argument_types, (A, B, C))})
    return plan


def _pack(name, args, numba_types, operands):
    """A launch's arguments as plan data: "A", "B", "C" for the grader's arrays, typed numbers otherwise."""
    from autograder.builder.launches import LaunchError
    packed = []
    for arg, numba_type in zip(args, numba_types):
        operand = next((o for o, x in zip(OPERANDS, operands) if arg is x), None)
        if operand is not None:
            if str(numba_type) not in ARRAY_TYPES:
                raise LaunchError(f"{name} takes {operand} as {numba_type}; the grader's arrays are "
                                  f"{ARRAY_TYPES[0]} (float32, two dimensions, row-major)")
            packed.append(operand)
        else:
            packed.append(_number(arg, numba_type))
    return packed


def _typed_plan(recorded, operands, specs, kernels_of):
    """The plan of recorded launches where no CUDA compiler is installed: each argument typed as numba's dispatcher
    types it, the launch configuration normalised as numba normalises it; specialisations without PTX."""
    from numba.cuda.errors import normalize_kernel_dimensions
    plan = []
    for name, kernel, config, args in recorded:
        config = config if isinstance(config, tuple) else (config,)
        if len(config) < 2:
            raise TypeError(f"{name} was launched as {name}[{config!r}]: give it blocks and threads")
        griddim, blockdim = normalize_kernel_dimensions(config[0], config[1])
        numba_types = [kernel.typeof_pyval(a) for a in args]
        key = (name, tuple(str(t) for t in numba_types))
        if key not in kernels_of:
            kernels_of[key] = len(specs)
            specs.append({"name": name, "entry": "", "ptx": [], "argtypes": list(key[1]), "max_registers": None,
                          "carveout": None, "cooperative": False, "links": 0, "debug": False})
        plan.append({"kernel": kernels_of[key], "grid": _dims(griddim), "block": _dims(blockdim),
                     "shared": int((config[3] if len(config) > 3 else 0) or 0),
                     "args": _pack(name, args, numba_types, operands)})
    return plan


def describe(name, kernel):
    """One specialisation as plan data: what a runner needs to load and launch it. Where numba links with
    link-time optimisation (its default wherever nvJitLink is installed), the PTX is the one LTO produces, which
    numba's own link turns into the same machine code; without it, NVVM's PTX as numba links it."""
    lib = kernel.library
    ptx = [lib.get_lto_ptx()] if lib._lto else lib.get_asm_strs()
    return {"name": name, "entry": kernel.entry_name, "ptx": ptx,
            "argtypes": [str(t) for t in kernel.argument_types], "max_registers": lib._max_registers,
            "carveout": kernel.shared_memory_carveout, "cooperative": bool(kernel.cooperative),
            "links": len(lib._linking_files) + bool(lib.needs_cudadevrt), "debug": bool(kernel.debug)}


def task_build(job, module):
    """Facts about the module, and the plan of every shape in job["shapes"]. The first kernel is the stage
    kernel (the structure checks read its PTX): as first launched, or, where the launcher never launched it,
    compiled for the grader's arrays alone."""
    from numba import float32
    from autograder.builder.launches import LaunchError
    from autograder.numba_objects import is_cuda_kernel
    kernel = getattr(module, job["kernel"], None)
    facts = {"defines_kernel": kernel is not None, "is_cuda_kernel": is_cuda_kernel(kernel),
             "defines_launcher": callable(getattr(module, job["launcher"], None))}
    specs, kernels_of, plans = [], {}, []
    facts["kernels"], facts["plans"] = specs, plans
    if not facts["is_cuda_kernel"]:
        return facts, {}
    shapes = list(job.get("shapes", ()))  # none: the stage kernel alone, for the grader's arrays (below)
    compiling = True
    while len(plans) < len(shapes):
        shape = shapes[len(plans)]
        try:
            plans.append({"launches": plan_shape(module, job, shape, specs, kernels_of, compiling)})
        except LaunchError as exc:
            plans.append({"error": {"kind": "launch", "message": str(exc)}})
        except Rejected as exc:  # a launched kernel (or a device function it calls) does not compile
            facts.update(compile_error_facts(exc))
            if exc.compiler_missing:  # the grader's machine has no compiler: plans typed without PTX, from the start
                compiling = False
                specs.clear(), kernels_of.clear(), plans.clear()
                continue
            plans += [{"error": {"kind": "compile", "message": str(exc)}}] * (len(shapes) - len(plans))
            break
        except Exception as exc:
            plans.append({"error": _launcher_error(exc, job)})
            if compiler_error(exc):  # it will not compile at any other size either
                plans += [plans[-1]] * (len(shapes) - len(plans))
                break
    if not compiling:
        return facts, {}
    stage = next((i for i, spec in enumerate(specs) if spec["name"] == job["kernel"]), None)
    if "compile_error" in facts:  # a launched kernel does not compile: nothing is built
        specs.clear()
    elif stage is None:  # never launched: the stage kernel for the grader's arrays alone, for the compile check
        try:
            del _FAILED[:]
            specs.insert(0, describe(job["kernel"], kernel.compile((float32[:, ::1],) * 3)))
        except Exception as exc:  # the GPU compiler rejected the kernel (or it takes more than A, B, C)
            facts.update(compile_error_facts(Rejected(job["kernel"], exc, _FAILED)))
            if plans and all("error" in p for p in plans) and "Signature mismatch" in str(exc):
                facts["compile_error"] = (f"{job['kernel']} takes more than A, B and C, and the launcher failed at "
                                          f"every size ({plans[0]['error']['message'][:300]}), so the grader cannot "
                                          "tell what to compile it for")
        for plan in plans:
            for item in plan.get("launches", ()):
                item["kernel"] += 1
    elif stage:  # the stage kernel first: the structure checks read its PTX
        specs.insert(0, specs.pop(stage))
        order = {stage: 0, **{i: i + 1 for i in range(stage)}}
        for plan in plans:
            for item in plan.get("launches", ()):
                item["kernel"] = order.get(item["kernel"], item["kernel"])
    if specs:
        facts["compiled"] = list(dict.fromkeys(spec["name"] for spec in specs))
    return facts, {}


def _launcher_error(exc, job):
    from autograder.protocol import describe_error
    error = describe_error(exc, job["module_path"])
    if type(exc).__name__ == "CudaSupportError":  # the launcher itself asked the (absent) driver for something
        where = error["message"].rsplit(" (line ", 1)
        error = {"kind": "launch", "message": (
            "the launcher asks CUDA for more than kernel launches" + (f" (line {where[1]}" if len(where) > 1 else "")
            + ": the grader records a launcher's launches without a GPU, so a launcher may only launch kernels, "
            "on the default stream, with A, B, C and numbers (no streams, copies or allocations)")}
    return error
