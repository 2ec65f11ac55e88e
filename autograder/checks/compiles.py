"""Trusted parent side: the kernel is a CUDA kernel that compiles for the real GPU target (PTX facts from a child)."""
from . import child_problem
from .titles import title


def judge(g, result):
    check = g.check("compiles", title(g, "compiles"))
    try:
        compile(g.src.source, g.module_path, "exec")  # the graded code, notebook cells joined
    except SyntaxError as exc:
        return check.verdict(False, f"syntax error at line {exc.lineno}: {exc.msg}\n  {(exc.text or '').strip()}")
    problem = child_problem(result)
    if problem:
        return check.verdict(False, problem)
    f = result.facts
    if not f["defines_kernel"] or not f["defines_launcher"]:
        missing = [n for n, ok in ((g.stage.kernel, f["defines_kernel"]), (g.stage.launcher, f["defines_launcher"]))
                   if not ok]
        return check.verdict(False, f"missing {', '.join(missing)}: keep the names the exercise gives")
    if not f["is_cuda_kernel"]:
        return check.verdict(False, f"{g.stage.kernel} is not a Numba CUDA kernel: decorate it with @cuda.jit")
    if "compile_error" in f:
        return check.verdict(False, "the GPU compiler rejected the kernel (the simulator may still run it):\n"
                                    + f["compile_error"] + "\nShared-array shapes must be compile-time constants: "
                                    "use module-level names such as TILE_PAD = TILE + 1.")
    extra = f", {f['registers']} registers/thread" if "registers" in f else ""
    return check.verdict(True, f"compiled: {len(f['shared_arrays'])} shared arrays "
                               f"({sum(f['shared_arrays'])} bytes), {f['barriers']} barriers{extra}")
