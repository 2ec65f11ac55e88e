"""Trusted parent side: the kernel is a CUDA kernel that compiles for the real GPU target (PTX facts from a child).

In both tiers the compile child records the launcher at the stage's shapes and compiles every kernel it launches,
for the arguments it launches it with, and every device function those kernels call (child/build.py). One that the
GPU compiler rejects fails this check, naming it; and since the simulator runs as Python what no GPU can run, no
check judged from running the module (correctness, the simulator's instruments) counts for it either
(`not_counted`)."""
from . import child_problem
from .titles import title

# the checks judged from running the module's kernels: none counts for kernels the GPU compiler rejects
RUN_CHECKS = ("correct", "races", "bank_conflicts", "data_reuse")


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
    if "compile_error" in f and "defines_kernel" not in f:  # a kernel with an explicit signature, compiled at import
        return check.verdict(False, _rejected(g, f))
    if not f["defines_kernel"] or not f["defines_launcher"]:
        missing = [n for n, ok in ((g.stage.kernel, f["defines_kernel"]), (g.stage.launcher, f["defines_launcher"]))
                   if not ok]
        return check.verdict(False, f"missing {', '.join(missing)}: keep the names the exercise gives")
    if not f["is_cuda_kernel"]:
        return check.verdict(False, f"{g.stage.kernel} is not a Numba CUDA kernel: decorate it with @cuda.jit")
    if "compile_error" in f:
        return check.verdict(False, _rejected(g, f))
    extra = f", {f['registers']} registers/thread" if "registers" in f else ""
    others = [k for k in f.get("compiled", []) if k != g.stage.kernel]
    also = f"; compiled with it: {', '.join(others)}, which {g.stage.launcher} launches too" if others else ""
    return check.verdict(True, f"compiled: {len(f['shared_arrays'])} shared arrays "
                               f"({sum(f['shared_arrays'])} bytes), {f['barriers']} barriers{extra}{also}")


def _rejected(g, facts):
    error = facts["compile_error"]
    if not error.startswith("the GPU compiler rejected"):
        error = "the GPU compiler rejected the kernel:\n" + error
    return (error + "\nThe simulator runs kernels as Python and may still run this, but no GPU can: until every "
            f"kernel {g.stage.launcher} launches and every device function they call compiles, no result of "
            "running them counts. Common causes: a shared or local array whose shape is not a compile-time constant "
            "(use module-level names such as TILE_PAD = TILE + 1), Python objects or NumPy calls inside a kernel "
            "(kernels use numbers, arrays and the cuda, math and dtype functions only), a variable that holds "
            "values of different types.")


def rejected(result):
    """The function the GPU compiler rejected (a kernel the launcher launches, or a device function one calls), or
    "" (it compiled, or the compile child did not say: the compile check says why)."""
    name = result.facts.get("rejected") if result is not None and not result.problem else None
    return name if isinstance(name, str) and name else ""


def not_counted(check, name):
    """`check` (judged from running the module's kernels) when `name` does not compile for the GPU: it counts for
    nothing, and says why. A check skipped for the grader's own trouble stays skipped."""
    if check.key not in RUN_CHECKS or check.status == "skipped" or check.output.startswith("not run"):
        return check
    why = (f"not counted: the GPU compiler rejects {name} (see the compile check). The simulator ran it as Python, "
           "which no GPU can run, so what it computed here does not count; make it compile first.")
    if check.status == "passed":
        return check.verdict(False, why)
    check.output = why + "\n" + check.output
    return check
