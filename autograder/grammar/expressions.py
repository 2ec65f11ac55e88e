"""The grammar's rules for expressions, in kernels, launchers and constants alike: names, attributes, the allowed
names of math, NumPy and numba by where they are used (rules.PATHS), calls and launches."""
import ast

from .rules import (BUILTIN_KEYWORDS, CALL_EXPLAIN, EXCEPTIONS, EXPLAIN, HOST_BUILTINS, KERNEL_BUILTINS, PATHS,
                    VALUE_ATTRS)
from .text import _construct, _not_allowed, _path, _short, is_dunder


class Expressions:
    """Expressions of one module (a mixin of Grammar: `m` is what the module binds, `flag` records a finding)."""

    def resolve(self, node):
        """The canonical path of a module name ("numba.cuda.shared.array"), the name of a builtin, or None."""
        path = _path(node)
        if path is None:
            return None
        root, _, rest = path.partition(".")
        if root in self.m.imports:
            return self.m.imports[root] + ("." + rest if rest else "")
        return path if not rest else None

    def expr(self, node, ctx, local):
        if isinstance(node, ast.Call):
            self.call(node, ctx, local)
        elif isinstance(node, ast.Name):
            self.name(node, ctx, local)
        elif isinstance(node, ast.Attribute):
            self.attribute(node, ctx, local)
        elif isinstance(node, ast.Subscript):
            if ctx == "host" and not self.host_indexable(node.value):
                self.flag(node, _short(node), "a launcher reads only .shape and .size of the arrays: indexing them "
                                              "on the host copies data off the GPU")
            self.expr(node.value, ctx, local)
            self.expr(node.slice, ctx, local)
        elif isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult):
                self.flag(node, f"the @ operator ({_short(node)})", "a host-side matrix product")
            self.expr(node.left, ctx, local)
            self.expr(node.right, ctx, local)
        elif isinstance(node, ast.Constant):
            pass
        elif isinstance(node, (ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple, ast.Slice)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child, ctx, local)
        else:
            self.flag(node, _construct(node), "not part of a kernel module's grammar")

    def host_indexable(self, node):
        """What a launcher may index: an array's .shape, a module constant, or a local tuple built in the launcher
        (every assignment to it a tuple literal or a .shape): never an array, whose elements live on the GPU."""
        if isinstance(node, ast.Attribute):
            return node.attr == "shape"
        if not isinstance(node, ast.Name):
            return False
        if node.id in self.m.constants and node.id not in self.tuples:
            return True
        return node.id in self.tuples and self.tuples[node.id]

    def name(self, node, ctx, local):
        n = node.id
        if is_dunder(n):
            self.flag(node, f"the name {n}", "dunder names reach Python's internals")
        elif n in local or n in self.m.constants:
            return
        elif n in self.m.imports:
            self.use_path(node, self.m.imports[n], ctx)
        elif n in self.m.functions:
            self.flag(node, f"{n} used as a value", "call a function or launch a kernel by its name; do not pass "
                                                    "functions around")
        elif n in HOST_BUILTINS | KERNEL_BUILTINS | EXCEPTIONS:
            self.flag(node, f"{n} used as a value", f"call {n}(...) directly; do not pass it around")
        elif n in CALL_EXPLAIN:
            self.flag(node, f"the name {n}", "reaches Python's machinery, which a kernel module does not need")
        else:
            self.flag(node, f"the name {n}", "not defined in this module (a kernel module may use its own names, "
                                             "its imports and range, min, max, abs, int, float, len, print)")

    def attribute(self, node, ctx, local):
        path = self.resolve(node)
        if path is not None and _path(node).split(".")[0] in self.m.imports:  # a name of an imported module
            self.use_path(node, path, ctx)
            return
        if is_dunder(node.attr) or node.attr not in VALUE_ATTRS:
            why = EXPLAIN.get(node.attr, "dunder names reach Python's internals" if is_dunder(node.attr) else
                              f"the attributes a kernel module reads are {', '.join(sorted(VALUE_ATTRS))} "
                              "and names of math, numpy dtypes and numba.cuda")
            self.flag(node, f".{node.attr} of {_short(node.value)}", why)
        self.expr(node.value, ctx, local)

    def use_path(self, node, path, ctx, called=False):
        role = PATHS.get(path)
        short = _short(node)
        if role is None:
            self.flag(node, short, _not_allowed(path))
        elif role == "namespace":
            self.flag(node, f"{short} on its own", "use the module's names (cuda.grid, math.ceil), not the module")
        elif role == "jit":
            self.flag(node, short, "cuda.jit is used as a decorator only")
        elif role == "kernel" and ctx == "host":
            self.flag(node, short, "part of the CUDA kernel API: it runs inside a kernel, not in a launcher"
                                   + (f" (is {self.current} a kernel? decorate it with @cuda.jit)"
                                      if self.current else ""))
        elif role == "host" and ctx != "host":
            self.flag(node, short, f"a NumPy function, which runs on the host: in a kernel write "
                                   f"math.{path.rsplit('.', 1)[-1]}(...)")
        elif role == "sync" and ctx != "host":
            self.flag(node, short, "a host function: in a kernel, cuda.syncthreads() waits for the block's threads")
        elif role == "sync" and not called:
            self.flag(node, short, "a launcher calls it as cuda.synchronize(), with no arguments, or leaves it out "
                                   "(the grader synchronises after your launches)")

    def call(self, node, ctx, local):
        func = node.func
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.flag(a, "a starred argument", "pass arguments by position or name")
                self.expr(a.value, ctx, local)
            else:
                self.expr(a, ctx, local)
        for kw in node.keywords:
            if kw.arg is None:
                self.flag(node, "a **keyword argument", "pass arguments by position or name")
            elif is_dunder(kw.arg):
                self.flag(node, f"the keyword {kw.arg}", "dunder names reach Python's internals")
            self.expr(kw.value, ctx, local)
        if isinstance(func, ast.Subscript):  # kernel[grid, block](...)
            kernel = func.value
            if ctx == "host" and isinstance(kernel, ast.Name) and self.m.functions.get(kernel.id) == "kernel" \
                    and kernel.id not in local:
                config = func.slice.elts if isinstance(func.slice, ast.Tuple) else [func.slice]
                if not 2 <= len(config) <= 4:
                    self.flag(node, _short(func), "a launch is kernel[blocks, threads](A, B, C)")
                for c in config:
                    self.expr(c, ctx, local)
                return
            device = isinstance(kernel, ast.Name) and self.m.functions.get(kernel.id) == "device"
            self.flag(node, f"the launch {_short(func)}",
                      f"{kernel.id} is a device function (@cuda.jit(device=...)): no GPU launches one; call it from "
                      "a kernel" if device else
                      "a launcher launches the module's kernels by name, as kernel[blocks, threads](A, B, C)"
                      if ctx == "host" else "kernels are launched from a launcher, not from a kernel")
            return
        if isinstance(func, ast.Name) and func.id not in local and func.id not in self.m.imports \
                and func.id not in self.m.constants:
            n = func.id
            role = self.m.functions.get(n)
            if role is not None:
                want = "host" if ctx == "host" else "device"
                if role != want:
                    self.flag(node, f"the call {n}(...)",
                              {"kernel": f"{n} is a kernel: launch it from a launcher as {n}[blocks, threads](A, B, C)",
                               "device": f"{n} is a device function: call it from a kernel",
                               "host": f"{n} is a plain Python function: a kernel may call only @cuda.jit(device=True)"
                                       " functions"}[role])
                return
            allowed = KERNEL_BUILTINS if ctx == "kernel" else HOST_BUILTINS
            if n in allowed:
                keywords = BUILTIN_KEYWORDS.get(n, set())
                for kw in node.keywords:
                    if kw.arg not in keywords:
                        self.flag(node, f"{n}({kw.arg}=...)", f"{n} takes no such keyword in a kernel module")
                return
            self.flag(node, f"calls {n}()", CALL_EXPLAIN.get(n, "not a function a kernel module may call"))
            return
        path = self.resolve(func)
        if path is not None and _path(func).split(".")[0] in self.m.imports:
            self.use_path(func, path, ctx, called=not node.args and not node.keywords)
            return
        if isinstance(func, ast.Attribute) and func.attr not in VALUE_ATTRS:
            self.expr(func, ctx, local)  # the attribute itself is what is not allowed: one finding
            return
        self.flag(node, f"the call {_short(node)}", "a kernel module calls its own functions, range, min, max, abs, "
                                                    "int, float, len, math, dtypes and the CUDA kernel API only")
