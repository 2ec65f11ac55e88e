"""Trusted parent side: the kernel is a CUDA kernel that compiles for the real GPU target (PTX facts from a child).

In both tiers the compile child records the launcher at the stage's shapes and compiles every kernel it launches,
for the arguments it launches it with, and every device function those kernels call (builder/task.py). One that the
GPU compiler rejects fails this check, naming it; and since the simulator runs only the plan the build compiled, no
check judged from running the module (correctness, the simulator's instruments) runs for it either."""
import ast
import re

from . import child_problem
from .titles import title

_LIVENESS = re.compile(r"liveness info missing for vars: \{([^}]*)\}")

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
                               f"({sum(f['shared_arrays'])} bytes), {f['barriers']} barrier instructions in the compiled code "
                               f"(the compiler may copy a loop's barriers: more than your code writes is normal)"
                               f"{extra}{also}")


def _rejected(g, facts):
    error = facts["compile_error"]
    stuck = _LIVENESS.search(error)
    if stuck:  # numba's words for a loop it proved never ends: say which loop, in the student's terms
        names = re.findall(r"'([A-Za-z_]\w*)'", stuck.group(1))
        return never_ending_loop(g.src.source, facts.get("rejected") or g.stage.kernel, names)
    if not error.startswith("the GPU compiler rejected"):
        error = "the GPU compiler rejected the kernel:\n" + error
    return (error + "\nThe simulator runs kernels as Python and could run this, but no GPU can: until every kernel "
            f"{g.stage.launcher} launches and every device function they call compiles, none of them runs in either "
            "tier. Common causes: a shared or local array whose shape is not a compile-time constant "
            "(use module-level names such as TILE_PAD = TILE + 1), Python objects or NumPy calls inside a kernel "
            "(kernels use numbers, arrays and the cuda, math and dtype functions only), a variable that holds "
            "values of different types.")


def never_ending_loop(source, function, names):
    """The compile message for a `while` loop whose condition nothing in its body changes (numba rejects it as
    "liveness info missing for vars"): the loop's line and variable where the source shows them."""
    found = _unchanged_while(source, function, names)
    if found is None:
        var = names[0] if names else "k"
        return (f"the GPU compiler rejected {function}: a `while` loop whose condition never changes"
                f"{' (' + ', '.join(names) + ')' if names else ''}, so it never ends. Make its body change the "
                f"loop's variable (for example `{var} += 1` at the end of the body), or write it as "
                f"`for {var} in range(...)`.")
    line, test, var = found
    return (f"the GPU compiler rejected {function}: a `while` loop whose condition never changes, line {line}: "
            f"`while {test}:`. Nothing in its body changes {var}, so `{test}` stays true and the loop never ends: "
            f"add `{var} += 1` at the end of its body (or write the loop as `for {var} in range(...)`).")


def _unchanged_while(source, function, names):
    """(line, the condition's text, variable) of the first `while` in `function` whose condition reads one of
    `names` (any name, when none is given) that its body never assigns and never leaves by break or return."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for func in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function):
        for loop in (n for n in ast.walk(func) if isinstance(n, ast.While)):
            read = [n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name) and (not names or n.id in names)]
            body = [n for stmt in loop.body for n in ast.walk(stmt)]
            if any(isinstance(n, (ast.Break, ast.Return)) for n in body):
                continue
            written = {n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            for var in read:
                if var not in written:
                    return loop.lineno, ast.get_source_segment(source, loop.test) or var, var
    return None


def rejected(result):
    """The function the GPU compiler rejected (a kernel the launcher launches, or a device function one calls), or
    "" (it compiled, or the compile child did not say: the compile check says why)."""
    name = result.facts.get("rejected") if result is not None and not result.problem else None
    return name if isinstance(name, str) and name else ""


def not_run_rejected(name):
    """Why nothing runs for a module whose `name` the GPU compiler rejects (the grader's runs and the self-check's)."""
    return (f"the GPU compiler rejects {name} (see the compile check): what no GPU can run is not run in the "
            "simulator either; make it compile first")
