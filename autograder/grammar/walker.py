"""The grammar's walk of a module's top level: imports, constants and functions, each held to the allowlist; every
constant it accepts is worked out by the one constant evaluator (constants.py), which the parent reads too."""
import ast

from .body import Functions
from .constants import Constants
from .rules import (EXCEPTIONS, HOST_BUILTINS, KERNEL_BUILTINS, MODULES, NOT_IN_A_MODULE, PATHS, PURE_CALLS, STATE)
from .text import _construct, _is_main_guard, _not_allowed, _short, _why_import, is_dunder


class _Module:
    """What the module's top level binds: imports (name -> canonical path), constants and functions by role."""

    def __init__(self):
        self.imports, self.constants, self.functions = {}, set(), {}  # functions: name -> kernel/device/host

    def defined(self):
        return set(self.imports) | self.constants | set(self.functions)


class Grammar(Functions):
    """One module's check; `findings` holds "line N: construct: rule" strings."""

    def __init__(self, tree, predefined=None):
        self.tree, self.findings, self.m, self.current, self.tuples = tree, [], _Module(), None, {}
        for name, role in (predefined or {}).items():  # names the self-check finds in a notebook's namespace
            if role in ("kernel", "device", "host"):
                self.m.functions[name] = role
            elif role == "constant":
                self.m.constants.add(name)
            else:
                self.m.imports[name] = role
        # the one evaluator of constants; a notebook's own constants have values it does not know
        self.constants = Constants(self.resolve, unknown=self.m.constants)

    def flag(self, node, construct, rule):
        self.findings.append((getattr(node, "lineno", 0), f"line {getattr(node, 'lineno', '?')}: {construct}: {rule}"))

    # -- the top level --------------------------------------------------------------------
    def check(self):
        body = self.tree.body
        for node in body:  # every function is known before any body is read: they may call each other
            if isinstance(node, ast.FunctionDef):
                self.bind(node, node.name, self.function_role(node))
        for node in body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                continue  # a docstring or a comment written as a string
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.check_import(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                self.check_constant(node)
            elif isinstance(node, ast.FunctionDef):
                self.check_function(node)
            elif isinstance(node, ast.If) and _is_main_guard(node.test):
                # A student's own test: never run where the grader imports the module (a grading child names it
                # after its stage, and nothing in a module that passes can rebind __name__), so it is not read;
                # nothing it defines is defined for the rest of the module. An else branch would run: not allowed.
                if node.orelse:
                    self.flag(node.orelse[0], "an else branch of if __name__ == \"__main__\"",
                              "it runs when the grader imports the module: delete it (the test under the if may "
                              "stay)")
            elif isinstance(node, ast.If) and any(isinstance(n, ast.Name) and n.id == "__name__"
                                                  for n in ast.walk(node.test)):
                self.flag(node, f"if {_short(node.test)}",
                          "only the exact test if __name__ == \"__main__\": keeps a test from running when the "
                          "grader imports the module: write that, or move the test to the notebook")
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                self.flag(node, f"a call at module level ({_short(node.value)})",
                          "a kernel module runs nothing when it is imported: call your launcher from the self-check "
                          "or a file of its own")
            else:
                self.flag(node, _construct(node), NOT_IN_A_MODULE)
        return sorted(set(self.findings))

    def bind(self, node, name, role):
        if is_dunder(name):
            self.flag(node, f"the name {name}", "dunder names reach Python's internals")
        elif name in self.m.defined():
            self.flag(node, f"{name} defined twice", "each module-level name is defined once")
        elif name in HOST_BUILTINS | KERNEL_BUILTINS | EXCEPTIONS:
            self.flag(node, f"the name {name}", f"it would hide Python's {name}: choose another name")
        elif role == "constant":
            self.m.constants.add(name)
        elif role in ("kernel", "device", "host"):
            self.m.functions[name] = role
        else:
            self.m.imports[name] = role

    def check_import(self, node):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module == "__future__" and not node.level and all(a.name == "annotations" for a in node.names):
                return
            if node.level or module not in MODULES:
                self.flag(node, f"imports from {'.' * node.level}{module}", _why_import(module))
                return
            for alias in node.names:
                path = f"{module}.{alias.name}"
                if alias.name == "*":
                    self.flag(node, f"from {module} import *", "import the names you use, one by one")
                elif path in MODULES or path in PATHS:
                    self.bind(node, alias.asname or alias.name, path)
                else:
                    self.flag(node, f"imports {path}", _not_allowed(path))
            return
        for alias in node.names:
            if alias.name not in MODULES:
                self.flag(node, f"imports {alias.name}", _why_import(alias.name))
            elif alias.asname:
                self.bind(node, alias.asname, alias.name)
            else:
                root = alias.name.split(".")[0]
                if self.m.imports.get(root) != root:
                    self.bind(node, root, root)

    def check_constant(self, node):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if isinstance(node, ast.AnnAssign):
            self.annotation(node.annotation)
            if node.value is None:
                self.flag(node, "a declaration without a value", "give the constant its value")
        if node.value is not None:
            before = len(self.findings)
            self.constant_expr(node.value)
            plain = all(isinstance(t, ast.Name) or isinstance(t, ast.Tuple) and
                        all(isinstance(e, ast.Name) for e in t.elts) for t in targets)
            if len(self.findings) == before and plain:  # accepted: worked out as the parent will read it
                finding = self.constants.assign(node)
                if finding is not None:
                    self.findings.append(finding)
            else:
                self.constants.forget(node)
        else:
            self.constants.forget(node)
        for target in targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            for t in names:
                if isinstance(t, ast.Name):
                    self.bind(t, t.id, "constant")
                elif isinstance(t, (ast.Attribute, ast.Subscript)):
                    self.flag(t, f"assignment to {_short(t)}", STATE)
                else:
                    self.flag(t, f"assignment to {_short(t)}", "module constants are plain names")

    def constant_value(self, node, at):
        """A default or a @cuda.jit option: held to constant_expr, then worked out (Python does so on import)."""
        before = len(self.findings)
        self.constant_expr(node)
        if len(self.findings) == before:
            finding = self.constants.check(node, at)
            if finding is not None:
                self.findings.append(finding)

    def constant_expr(self, node):
        """Literals, arithmetic, tuples, other constants, dtypes and pure calls (math, min, max, int, dtypes)."""
        if isinstance(node, ast.Call):
            func = self.resolve(node.func)
            if not (func in PURE_CALLS or (isinstance(func, str) and PATHS.get(func) in ("any", "host"))) \
                    or node.keywords:
                self.flag(node, f"a call at module level ({_short(node)})",
                          "module constants are made of literals, arithmetic, tuples, math, dtypes and other constants "
                          "(TILE = 32, BLOCKS = math.ceil(1000 / TILE))")
                return
            for a in node.args:
                self.constant_expr(a)
        elif isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                self.flag(node, f"the @ operator ({_short(node)})", "a host-side matrix product")
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.constant_expr(child)
        else:
            self.expr(node, "host", set())
