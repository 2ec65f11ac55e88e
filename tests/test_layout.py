"""The rooms of autograder/ keep the trust boundary: what imports student code, what never does, what judges in
the parent. Read from the source (every import, also those inside functions), so a lazy import cannot cross it.

- builder/ (the build child, beside student code) and runner/ (GPU children that never import student code) import
  only the contract (protocol.py, numba_objects.py) and their own room; sim/ adds the builder's replay.
- The trusted parent's rooms import no child side, except sim/common.py's constants (the race facts' names).
- No import circle between two files; no file over 400 lines and no class over 250.
"""
import ast
import functools
import glob
import os

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "autograder")
CONTRACT = {"autograder.protocol", "autograder.numba_objects"}
CHILD_SIDES = ("builder", "runner", "sim", "child", "selfcheck")
PARENT_MAY_READ = {"autograder.sim.common"}  # constants, no numba, no numpy


def module_of(path):
    rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def imports(path):
    """Every autograder module `path` names in an import, wherever the import stands."""
    module = module_of(path)
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        found |= {n for n in names if n == "autograder" or n.startswith("autograder.")}
    return found


@functools.lru_cache(maxsize=None)
def files():
    return tuple(sorted(glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True)))


@functools.lru_cache(maxsize=None)
def modules():
    return frozenset(module_of(p) for p in files())


def known(names):
    """The names that are modules or packages of autograder (not a function imported from one)."""
    return {n for n in names if n in modules()}


def room(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_build_and_runner_sides_import_only_the_contract_and_their_own_room():
    bad = []
    for path in files():
        module = module_of(path)
        side = room(module)
        allowed = {"builder": set(), "runner": set(), "sim": {"builder"}}.get(side)
        if allowed is None:
            continue
        for name in known(imports(path)):
            if name in CONTRACT or name == "autograder" or room(name) in allowed | {side}:
                continue
            bad.append(f"{module} imports {name}")
    assert not bad, "\n".join(bad)


def test_the_parent_imports_no_child_side():
    bad = []
    for path in files():
        module = module_of(path)
        if room(module) in CHILD_SIDES:
            continue
        for name in known(imports(path)):
            if room(name) in CHILD_SIDES and name not in PARENT_MAY_READ:
                bad.append(f"{module} imports {name}")
    assert not bad, "\n".join(bad)


def circles(graph):
    """Every import circle of `graph` ({module: modules it imports}) found by a depth-first walk, as "a -> b -> a"
    (a package's __init__ naming its own modules is not a circle of files)."""
    state, found = {}, []

    def visit(m, trail):
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                found.append(trail[trail.index(n):] + [n])
            elif n not in state:
                visit(n, trail + [n])
        state[m] = "done"
    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return [" -> ".join(c) for c in found
            if not any(a.startswith(b + ".") or b.startswith(a + ".") for a, b in zip(c, c[1:]))]


def test_no_import_circle():
    graph = {module_of(p): known(imports(p)) - {module_of(p)} for p in files()}
    graph = {m: {n for n in targets if n in graph} for m, targets in graph.items()}
    found = circles(graph)
    assert not found, "\n".join(found)
    # the walk finds a circle of three files, and none where a package names its own module
    assert circles({"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}}) == ["a.x -> a.y -> a.z -> a.x"]
    assert circles({"a": {"a.x"}, "a.x": {"a"}}) == []


def test_no_file_over_400_lines_and_no_class_over_250():
    long = []
    for path in files():
        text = open(path, encoding="utf-8").read()
        if text.count("\n") > 400:
            long.append(f"{module_of(path)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > 250:
                long.append(f"{module_of(path)}.{node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert not long, "\n".join(long)
