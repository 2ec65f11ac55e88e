"""The grammar's rules for functions: decorators and signatures, parameters, and the statements of kernel and
launcher bodies."""
import ast

from .expressions import Expressions
from .rules import DTYPES, EXCEPTIONS, JIT_OPTIONS, MAX_SIGNATURE, MAX_STRING, NOT_IN_A_MODULE, PATHS, STATE
from .reader import _bounded_tree
from .text import _construct, _short, is_dunder


class Functions(Expressions):
    """Functions of one module (a mixin of Grammar)."""

    def function_role(self, node):
        """kernel, device (a @cuda.jit(device=True) helper) or host (a launcher or its helper). numba reads `device`
        as true or false (``if device:``), so device=1 or device="yes" declares a device function as device=True
        does: a kernel calls it, a launcher never launches it."""
        if not node.decorator_list:
            return "host"
        dec = node.decorator_list[0]
        call = dec if isinstance(dec, ast.Call) else None
        for k in call.keywords if call else ():
            if k.arg == "device":
                try:
                    return "device" if ast.literal_eval(k.value) else "kernel"
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    return "device"  # not a literal, which check_decorators flags: never a kernel to launch
        return "kernel"

    def check_decorators(self, node):
        if len(node.decorator_list) > 1:
            self.flag(node.decorator_list[1], "a second decorator", "kernels take one decorator, @cuda.jit")
        for dec in node.decorator_list[:1]:
            func = dec.func if isinstance(dec, ast.Call) else dec
            if self.resolve(func) != "numba.cuda.jit":
                self.flag(dec, f"the decorator @{_short(dec)}", "the one decorator a kernel module uses is @cuda.jit")
                continue
            if not isinstance(dec, ast.Call):
                continue
            for arg in dec.args:
                self.signature(arg)
            for kw in dec.keywords:
                if kw.arg not in JIT_OPTIONS:
                    self.flag(dec, f"cuda.jit({kw.arg or '**'}=...)",
                              f"the options a kernel may set are {', '.join(sorted(JIT_OPTIONS))}")
                elif not all(isinstance(v, (ast.Constant, ast.Tuple)) for v in [kw.value]):
                    self.flag(dec, f"cuda.jit({kw.arg}=...)", "an option's value is a literal")
                else:
                    self.constant_value(kw.value, dec)

    def signature(self, node):
        """An explicit signature: a type expression, or a string holding one (numba evaluates such strings)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            quoted = repr(node.value[:40] + ("..." if len(node.value) > 40 else ""))
            if len(node.value) > MAX_STRING:
                return  # named as a string past MAX_STRING (_bounded_tree)
            if len(node.value) > MAX_SIGNATURE:
                self.flag(node, f"the signature {quoted}", f"a signature string of {len(node.value):,} characters; "
                          "a signature names the argument types only, as 'void(float32[:, ::1], float32[:, ::1], "
                          "float32[:, ::1])'")
                return
            try:
                parsed = ast.parse(node.value.strip(), mode="eval")
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                parsed = None
            if parsed is None or _bounded_tree(parsed, [])[0] is None:
                self.flag(node, f"the signature {quoted}", "not a type expression: write one as "
                                                           "'void(float32[:, ::1], float32[:, ::1], float32[:, ::1])'")
                return
            parsed = parsed.body
            names = {n: f"numba.types.{n}" for n in DTYPES | {"void"}}
            self.type_expr(parsed, lambda n: names.get(n.id) if isinstance(n, ast.Name) else None, node)
        else:
            self.type_expr(node, self.resolve, node)

    def type_expr(self, node, resolve, at):
        ok = True
        if isinstance(node, (ast.Name, ast.Attribute)):
            path = resolve(node)
            ok = isinstance(path, str) and path.rsplit(".", 1)[-1] in DTYPES | {"void"} and PATHS.get(path) == "any"
        elif isinstance(node, ast.Call):
            ok = not node.keywords
            self.type_expr(node.func, resolve, at)
            for a in node.args:
                self.type_expr(a, resolve, at)
        elif isinstance(node, ast.Subscript):
            self.type_expr(node.value, resolve, at)
            dims = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            ok = all(isinstance(d, ast.Slice) and all(p is None or (isinstance(p, ast.Constant) and
                                                                    isinstance(p.value, int))
                                                      for p in (d.lower, d.upper, d.step)) for d in dims)
        elif isinstance(node, ast.Tuple):
            for e in node.elts:
                self.type_expr(e, resolve, at)
        else:
            ok = False
        if not ok:
            self.flag(at, f"the signature part {_short(node)}",
                      "a signature names dtypes and array types only, as void(float32[:, ::1], ...)")

    def check_function(self, node):
        self.current = node.name
        role = self.m.functions.get(node.name)
        self.check_decorators(node)
        ctx = "host" if role == "host" else "kernel"
        args = node.args
        if args.vararg or args.kwarg:
            self.flag(node, f"*args or **kwargs in {node.name}", "list the parameters by name")
        params = [a for a in args.posonlyargs + args.args + args.kwonlyargs]
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.constant_value(default, default)
        for a in params:
            if a.annotation is not None:
                self.annotation(a.annotation)
        if node.returns is not None:
            self.annotation(node.returns)
        if getattr(node, "type_params", None):
            self.flag(node, "type parameters", NOT_IN_A_MODULE)
        local = {a.arg for a in params}
        for sub in ast.walk(node):
            if sub is not node and isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                local.add(sub.id)
        for name in sorted(local):
            if is_dunder(name):
                self.flag(node, f"the name {name}", "dunder names reach Python's internals")
            elif name in self.m.imports or name in self.m.functions:
                self.flag(node, f"the local name {name} in {node.name}",
                          f"it hides the module's {name}: choose another name")
        self.tuples = {}  # local name -> True while every assignment to it is a tuple literal or a .shape
        named = set()  # the Name nodes bound by a whole assignment (id of the node)
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                value = getattr(sub, "value", None)
                plain = isinstance(value, ast.Tuple) or (isinstance(value, ast.Attribute) and value.attr == "shape")
                for t in targets:
                    if isinstance(t, ast.Name):
                        named.add(id(t))
                        self.tuples[t.id] = self.tuples.get(t.id, True) and plain and not isinstance(sub, ast.For)
        for sub in ast.walk(node):  # bound by unpacking (X, Y = A, B), a loop's or a comprehension's target: anything
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and id(sub) not in named:
                self.tuples[sub.id] = False
        for a in params:
            self.tuples[a.arg] = False
        self.block(node.body, ctx, local)

    def annotation(self, node):
        """Type hints: names, dotted names, strings, None and X | Y, X[Y]; nothing that calls."""
        for sub in ast.walk(node):
            if not isinstance(sub, (ast.Name, ast.Attribute, ast.Constant, ast.BinOp, ast.BitOr, ast.Subscript,
                                    ast.Tuple, ast.Load)):
                self.flag(node, f"the type hint {_short(node)}", "type hints are names, as A: DeviceNDArray")
                return
            if isinstance(sub, ast.Name) and is_dunder(sub.id) or isinstance(sub, ast.Attribute):
                self.flag(node, f"the type hint {_short(node)}", "type hints are plain names, as A: DeviceNDArray")
                return

    def block(self, body, ctx, local):
        for stmt in body:
            self.statement(stmt, ctx, local)

    def statement(self, node, ctx, local):
        if isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return
            if not isinstance(node.value, ast.Call):
                self.flag(node, _short(node), "a statement that does nothing")
            self.expr(node.value, ctx, local)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                self.target(t, ctx, local)
            if isinstance(node, ast.AnnAssign):
                self.annotation(node.annotation)
            if node.value is not None:
                self.expr(node.value, ctx, local)
        elif isinstance(node, ast.For):
            self.target(node.target, ctx, local)
            if not (isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name)
                    and node.iter.func.id == "range" and "range" not in local):
                self.flag(node, f"for ... in {_short(node.iter)}", "loops run over range(...)")
            self.expr(node.iter, ctx, local)
            self.block(node.body + node.orelse, ctx, local)
        elif isinstance(node, (ast.While, ast.If)):
            self.expr(node.test, ctx, local)
            self.block(node.body + node.orelse, ctx, local)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expr(node.value, ctx, local)
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
            pass
        elif isinstance(node, ast.Assert):
            self.expr(node.test, ctx, local)
            if node.msg is not None:
                self.expr(node.msg, ctx, local)
        elif isinstance(node, ast.Raise):
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if node.cause is not None or not (isinstance(exc, ast.Name) and exc.id in EXCEPTIONS):
                self.flag(node, _short(node), f"raise one of {', '.join(sorted(EXCEPTIONS))}")
            if isinstance(node.exc, ast.Call):
                for a in node.exc.args:
                    self.expr(a, ctx, local)
                if node.exc.keywords:
                    self.flag(node, _short(node), "an exception takes its message only")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.flag(node, "an import inside a function", "imports go at the top of the module")
            names = {a.asname or a.name.split(".")[0] for a in node.names}
            if not names & self.m.defined():
                self.check_import(node)  # so that what it imports is judged where it is used
        else:
            self.flag(node, _construct(node), "a function body holds assignments, if, for ... in range, while, "
                                              "return and calls only")

    def target(self, node, ctx, local):
        if isinstance(node, ast.Name):
            return
        if isinstance(node, ast.Tuple):
            for e in node.elts:
                self.target(e, ctx, local)
        elif isinstance(node, ast.Subscript) and ctx == "kernel":
            if not (isinstance(node.value, ast.Name) and node.value.id in local):
                self.flag(node, f"assignment to {_short(node)}", "a kernel writes elements of its own arrays only")
            self.expr(node.value, ctx, local)
            self.expr(node.slice, ctx, local)
        elif isinstance(node, ast.Subscript):
            self.flag(node, f"assignment to {_short(node)}",
                      "a launcher writes no array elements: the product must come from your kernel")
        elif isinstance(node, ast.Attribute):
            self.flag(node, f"assignment to {_short(node)}", STATE)
        else:
            self.flag(node, f"assignment to {_short(node)}", "assign to plain names or array elements")
