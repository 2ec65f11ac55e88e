"""Trusted parent side: a kernel's statements walked in the order they run, for tiles.py. Each local holds the
assignments that reach it at that point (a later assignment replaces an earlier one; after an if, either branch's;
a loop is walked until what reaches its head stops growing); each @cuda.jit(device=True) helper the kernel calls
is walked at that call with its parameters bound to the call's arguments, so a tile passed to a helper is the
kernel's tile there. A branch whose condition the constant evaluator works out never runs (if False:, if TILE > 64:
with TILE = 32) and is not walked; a condition that depends on the data or the launch is walked both ways.

Only the syntax tree is read, never the module run; the walk is bounded (MAX_STEPS, DEVICE_DEPTH) and raises
TooMuch past the bounds."""
import ast

from .rules import MAX_NODES
from .values import Unknown, constant

MAX_STEPS = 8 * MAX_NODES  # statements and expressions walked, loops' rounds and helpers' calls included
MAX_ROUNDS = 20            # walks of one loop's body per visit (what reaches its head grows a few times at most)
DEVICE_DEPTH = 8           # helpers calling helpers; deeper calls are not walked (their value: their arguments)


class TooMuch(Exception):
    """The walk went past MAX_STEPS: a module no kernel of the course needs (loops nested deeper than any tile)."""


class Def:
    """One value a local may hold: `expr` read with `env` (name -> the Defs reaching it there) in `scope` (the path
    of helper calls it was walked in). `elem`: the element an unpacking takes; `marks`: what a loop counter or a
    kernel parameter stands for, beside its expression."""
    __slots__ = ("expr", "env", "scope", "elem", "marks")

    def __init__(self, expr, env, scope, elem=None, marks=frozenset()):
        self.expr, self.env, self.scope, self.elem, self.marks = expr, env, scope, elem, marks


class Store(Def):
    """An element stored: `target` (a[i, j], or the array of cuda.atomic.add) with its indices `index`, the value
    `expr`, at statement `stmt`."""
    __slots__ = ("target", "index", "stmt")


def _join(a, b):
    """What reaches a point from two ways in (None: a way that never gets there)."""
    if a is None or b is None:
        return a if b is None else b
    out = dict(a)
    for name, defs in b.items():
        out[name] = out.get(name, frozenset()) | defs
    return out


def _names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class Flow:
    """The walk of `kernel` (a FunctionDef of the module `grammar` checked). `stores` and `reads` (subscripts read,
    as (node, context)) hold what runs, `calls` the helper calls walked ((scope, id) -> the callee's scope, whose
    `returns` are Defs), `skipped` the (if node, statements) that never run, `live` the ids of statements walked."""

    def __init__(self, grammar, kernel, atomic):
        self.g, self.atomic, self.steps, self.loops, self.stack = grammar, atomic, 0, [], []
        self.device = {n.name: n for n in grammar.tree.body if isinstance(n, ast.FunctionDef)
                       and grammar.m.functions.get(n.name) == "device"}
        self.defs, self.stores, self.reads, self.calls, self.returns = {}, {}, {}, {}, {}
        self.skipped, self.live, self.augmented, self.stmt = [], set(), {}, None
        self.local, self.fn_locals = {}, {}  # scope -> the local names of its function; function name -> those
        params = [a.arg for a in kernel.args.posonlyargs + kernel.args.args]
        self.params = {p: Def(None, {}, (), marks=frozenset({("param", p)})) for p in params}
        self.walk_function(kernel, (), {p: frozenset({d}) for p, d in self.params.items()})

    def tick(self, n=1):
        self.steps += n
        if self.steps > MAX_STEPS:
            raise TooMuch

    def walk_function(self, fn, scope, env):
        local = self.fn_locals.get(fn.name)
        if local is None:
            self.tick(len(fn.body))
            args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
            local = self.fn_locals[fn.name] = {a.arg for a in args} | {
                n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.local[scope] = local
        self.returns.setdefault(scope, {})
        self.block(fn.body, env, scope)

    def define(self, key, expr, env, scope, elem=None, marks=frozenset(), kind=Def, also=None):
        """The Def of `key` (one per statement, target and helper call: stable over a loop's rounds), its env grown
        by what reaches the names it (and `also`) reads this time."""
        names = set() if expr is None else _names(expr)
        names |= set() if also is None else _names(also)
        seen = {n: env[n] for n in names if n in env}
        d = self.defs.get(key)
        if d is None:
            d = self.defs[key] = kind(expr, seen, scope, elem, marks)
        else:
            for n, defs in seen.items():
                d.env[n] = d.env.get(n, frozenset()) | defs
        return d

    # -- statements ----------------------------------------------------------------------------
    def block(self, body, env, scope):
        for stmt in body:
            if env is None:
                return None  # after a return, break or continue: never runs
            env = self.statement(stmt, env, scope)
        return env

    def statement(self, s, env, scope):
        self.tick()
        self.live.add(id(s))
        self.stmt = s
        if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return self.assignment(s, env, scope)
        if isinstance(s, ast.If):
            return self.branch(s, env, scope)
        if isinstance(s, (ast.For, ast.While)):
            return self.loop(s, env, scope)
        for child in ast.iter_child_nodes(s):
            if isinstance(child, ast.expr):
                self.expression(child, env, scope)
        if isinstance(s, ast.Return):
            if s.value is not None:
                self.returns[scope][id(s)] = self.define((scope, id(s)), s.value, env, scope)
            return None
        if isinstance(s, (ast.Break, ast.Continue)) and self.loops:
            frame = self.loops[-1]
            frame[isinstance(s, ast.Break)] = _join(frame[isinstance(s, ast.Break)], env)
            return None
        return None if isinstance(s, ast.Raise) else env

    def assignment(self, s, env, scope):
        if s.value is None:
            return env
        self.expression(s.value, env, scope)
        if isinstance(s, ast.AugAssign):  # x += v reads x: its value is x + v
            value = self.augmented.get(id(s))
            if value is None:
                load = ast.Subscript(s.target.value, s.target.slice, ast.Load()) \
                    if isinstance(s.target, ast.Subscript) else ast.Name(getattr(s.target, "id", "_"), ast.Load())
                value = self.augmented[id(s)] = ast.copy_location(ast.BinOp(load, s.op, s.value), s)
                ast.copy_location(load, s.target)
            self.expression(value.left, env, scope)
        else:
            value = s.value
        out = env
        for target in (s.targets if isinstance(s, ast.Assign) else [s.target]):
            out = self.bind(target, value, s, env, out, scope)
        return out

    def bind(self, target, value, s, venv, env, scope, elem=None):
        """`env` with `target` bound to `value` (element `elem` of it) read with `venv`."""
        if isinstance(target, ast.Name):
            return {**env, target.id: frozenset({self.define((scope, id(s), id(target)), value, venv, scope, elem)})}
        if isinstance(target, ast.Tuple):
            paired = elem is None and isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts)
            for i, t in enumerate(target.elts):
                env = self.bind(t, value.elts[i] if paired else value, s, venv, env, scope,
                                None if paired else (i if elem is None else elem))
            return env
        if isinstance(target, ast.Subscript):
            self.expression(target.slice, venv, scope)
            self.store(target, target, value, venv, scope, elem)
        return env

    def store(self, key, target, value, env, scope, elem=None):
        """Note the store of `value` into `target` (a[i, j]); `key` is the node that stands for it over the rounds."""
        node, index = target, []
        while isinstance(node, ast.Subscript):
            index[:0] = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            node = node.value
        st = self.define((scope, "store", id(key)), value, env, scope, elem, kind=Store, also=target)
        st.target, st.index, st.stmt = node, index, self.stmt
        self.stores[scope, id(key)] = st

    def branch(self, s, env, scope):
        self.expression(s.test, env, scope)
        truth = self.truth(s.test, env, scope)
        if truth is None:
            return _join(self.block(s.body, env, scope), self.block(s.orelse, env, scope))
        self.skipped.append((s, s.orelse if truth else s.body))
        return self.block(s.body if truth else s.orelse, env, scope)

    def loop(self, s, env, scope):
        """Walk the body until what reaches the loop's head stops growing; then the else branch and the breaks."""
        test = getattr(s, "test", None)
        if test is not None:
            self.expression(test, env, scope)
            if self.truth(test, env, scope) is False:
                self.skipped.append((s, s.body))
                return self.block(s.orelse, env, scope)
        else:
            self.expression(s.iter, env, scope)
        frame, head = [None, None], env
        self.loops.append(frame)
        for _ in range(MAX_ROUNDS):
            self.stmt = s
            if test is not None:
                self.expression(test, head, scope)
            inside = head if test is not None else self.bind_counter(s, head, scope)
            grown = _join(head, _join(self.block(s.body, inside, scope), frame[0]))
            if grown == head:
                break
            head = grown
        self.loops.pop()
        forever = test is not None and self.truth(test, head, scope) is True
        return _join(None if forever else self.block(s.orelse, head, scope), frame[1])

    def bind_counter(self, s, env, scope):
        """for t in range(...): t stands for its range and for the loop itself (a counter of its own)."""
        mark = frozenset({("loop", scope, id(s))})
        for i, t in enumerate(s.target.elts if isinstance(s.target, ast.Tuple) else [s.target]):
            if isinstance(t, ast.Name):
                d = self.define((scope, id(s), i), s.iter, env, scope, marks=mark)
                env = {**env, t.id: frozenset({d})}
        return env

    # -- expressions ---------------------------------------------------------------------------
    def expression(self, node, env, scope):
        """Note the subscripts `node` reads and the stores of cuda.atomic calls; walk the helpers it calls."""
        for sub in ast.walk(node):
            self.tick()
            if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Load):
                key = (scope, id(sub))
                self.reads[key] = (sub, self.define(("read",) + key, sub, env, scope), self.stmt)
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in self.device:
                self.call(sub, env, scope)
            elif isinstance(sub, ast.Call) and (self.g.resolve(sub.func) or "").startswith(self.atomic) \
                    and len(sub.args) >= 3:  # cuda.atomic.add(C, (row, col), v) stores into C
                self.store(sub, ast.Subscript(sub.args[0], sub.args[1], ast.Load()), sub.args[2], env, scope)

    def call(self, call, env, scope):
        """Walk the helper `call` calls, its parameters bound to the arguments (read in the caller's scope)."""
        fn = self.device[call.func.id]
        if fn.name in self.stack or len(scope) >= DEVICE_DEPTH:
            return  # not walked: its value stands for its arguments (values.py)
        inner = scope + (id(call),)
        args = fn.args.posonlyargs + fn.args.args
        defaults = dict(zip([a.arg for a in args][len(args) - len(fn.args.defaults):], fn.args.defaults))
        given = dict(zip([a.arg for a in args], call.args))
        given.update({k.arg: k.value for k in call.keywords if k.arg})
        penv = {}
        for a in args:
            if a.arg in given:
                d = self.define((inner, "param", a.arg), given[a.arg], env, scope)
            elif a.arg in defaults:  # a default is a module constant, read in no caller's scope
                d = self.define((inner, "param", a.arg), defaults[a.arg], {}, ())
            else:
                continue
            penv[a.arg] = frozenset({d})
        self.calls[(scope, id(call))] = inner
        self.stack.append(fn.name)
        outer = self.stmt
        try:
            self.walk_function(fn, inner, penv)
        finally:
            self.stack.pop()
            self.stmt = outer

    def truth(self, test, env, scope):
        """True or False where the constant evaluator works the condition out, else None."""
        try:
            return bool(constant(self, test, Def(test, env, scope)))
        except Unknown:
            return None
