"""Trusted parent side: what a value of a kernel depends on, read from the walk of flow.py (its Defs: an expression,
what reaches each name it reads, and the helper calls walked). Three questions, each a walk over those Defs:

- `constant`: the value where it is a constant (literals, module constants, dtype casts, locals every reaching
  assignment gives the same constant), for conditions that never hold and factors of zero;
- `Depends`: the arrays whose elements a value is computed from (data, not the conditions around it or the indices
  it reads at), less a read multiplied by a constant zero or added and subtracted again in one expression
  (x - s[i] + s[i]): those are `lost`, with the reason;
- `sources`: the thread axes an index follows (threadIdx.x, .y, .z; tid // TILE and tid % TILE as two axes of
  their own) and the loops whose counters it follows.
"""
import ast
import operator

import numpy as np

from .constants import COMPARE, NUMBERS, OPS, UNARY, _checked
from .rules import DTYPES

AXES = {"numba.cuda.threadIdx.x": "x", "numba.cuda.threadIdx.y": "y", "numba.cuda.threadIdx.z": "z"}
GRID = "numba.cuda.grid"  # col, row = cuda.grid(2): x, then y
ARRAYS = {"numba.cuda.shared.array": "shared", "numba.cuda.local.array": "local"}
CASTS = {"int": int, "float": float, "abs": abs, "min": min, "max": max}
MAX_CHAIN = 64  # assignments followed for one constant (a = b, b = c, ...)
MAX_TAG = 3     # // and % applied to one thread index that are told apart


class Unknown(Exception):
    """Not a constant the parent can work out."""


def constant(flow, node, ctx, depth=0):
    """The value of `node` read in `ctx` (a Def), where it is a number the parent can work out; else Unknown."""
    flow.tick()
    if depth > MAX_CHAIN:
        raise Unknown
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)):
        return node.value
    if isinstance(node, ast.Name):
        return _named(flow, node.id, ctx, depth)
    with np.errstate(all="ignore"):
        try:
            if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
                return _number(UNARY[type(node.op)](constant(flow, node.operand, ctx, depth + 1)))
            if isinstance(node, ast.BinOp) and type(node.op) in OPS:
                a, b = (constant(flow, n, ctx, depth + 1) for n in (node.left, node.right))
                return _number(OPS[type(node.op)](a, b))
            if isinstance(node, ast.Compare) and all(type(op) in COMPARE for op in node.ops):
                values = [constant(flow, n, ctx, depth + 1) for n in [node.left] + node.comparators]
                return all(COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, values, values[1:]))
            if isinstance(node, ast.BoolOp):
                values = [bool(constant(flow, n, ctx, depth + 1)) for n in node.values]
                return all(values) if isinstance(node.op, ast.And) else any(values)
            if isinstance(node, ast.Call) and node.args and not node.keywords:
                path = flow.g.resolve(node.func) or ""
                values = [constant(flow, n, ctx, depth + 1) for n in node.args]
                if path.rsplit(".", 1)[-1] in DTYPES and len(values) == 1:
                    return values[0]
                if path in CASTS:
                    return _number(CASTS[path](*values))
        except Unknown:
            raise
        except Exception:  # noqa: BLE001 (what Python would raise working it out: not a constant here)
            raise Unknown from None
    raise Unknown


def _number(v):
    if not isinstance(v, NUMBERS):
        raise Unknown
    return _checked(v)


def _named(flow, name, ctx, depth):
    """A local: the one constant every assignment reaching it gives; else a module constant the grammar accepted."""
    if name in ctx.env:
        values = set()
        for d in ctx.env[name]:
            if d.expr is None or d.marks or d.elem is not None:
                raise Unknown
            values.add(constant(flow, d.expr, d, depth + 1))
        if len(values) == 1:
            return values.pop()
        raise Unknown
    if name in flow.local.get(ctx.scope, ()):
        raise Unknown  # a local with no assignment reaching here
    value = flow.g.constants.found.get(name, (None,))[0]
    if value is None or not isinstance(value, NUMBERS):
        raise Unknown
    return value


def is_zero(flow, node, ctx):
    """Is `node` zero whatever it reads: a constant 0, a product with a factor of zero, a sum that cancels?"""
    try:
        return constant(flow, node, ctx) == 0
    except Unknown:
        pass
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return is_zero(flow, node.left, ctx) or is_zero(flow, node.right, ctx)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return is_zero(flow, node.operand, ctx)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        kept, _ = terms(flow, node, ctx)
        return not kept
    return False


def terms(flow, node, ctx):
    """(the terms of the sum `node` that count, the terms that do not: zero, or cancelled by the same term with the
    other sign in this sum). A term that calls a helper is never cancelled (two calls may differ)."""
    signed, stack = [], [(node, 1)]
    while stack:
        n, sign = stack.pop()
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)):
            stack += [(n.left, sign), (n.right, sign if isinstance(n.op, ast.Add) else -sign)]
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            stack.append((n.operand, -sign))
        else:
            signed.append((n, sign))
    kept, lost, open_ = [], [], {}
    for n, sign in reversed(signed):
        if is_zero(flow, n, ctx):
            lost.append(n)
            continue
        key = None if any(isinstance(s, ast.Call) and getattr(s.func, "id", None) in flow.device
                          for s in ast.walk(n)) else _canonical(n)
        other = open_.get((key, -sign)) if key is not None else None
        if other:
            lost += [other.pop(), n]
        else:
            open_.setdefault((key, sign), []).append(n)
            kept.append(n)
    gone = {id(n) for n in lost}
    return [n for n in kept if id(n) not in gone], lost


def _canonical(node):
    """The text of a term with its factors in order, so that a * s[i] and s[i] * a are one term."""
    factors, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            stack += [n.left, n.right]
        else:
            factors.append(ast.dump(n))
    return tuple(sorted(factors))


def arrays(flow, node, ctx, depth=0):
    """The arrays `node` (a name) may be: ("param", name) for a kernel parameter, ("shared" or "local", id of the
    call that declares it)."""
    found = set()
    if depth > MAX_CHAIN:
        return found
    if isinstance(node, ast.Name):
        for d in ctx.env.get(node.id, ()):
            found |= {m for m in d.marks if m[0] == "param"}
            expr = d.expr
            if d.elem is not None and isinstance(expr, ast.Tuple) and d.elem < len(expr.elts):
                expr = expr.elts[d.elem]
            kind = ARRAYS.get(flow.g.resolve(expr.func) or "") if isinstance(expr, ast.Call) else None
            if kind:
                found.add((kind, id(expr)))
            elif expr is not None:
                found |= arrays(flow, expr, d, depth + 1)
    elif isinstance(node, ast.IfExp):
        found = arrays(flow, node.body, ctx, depth + 1) | arrays(flow, node.orelse, ctx, depth + 1)
    return found


class Depends:
    """The reads of array elements the values of `roots` (Defs) are computed from: `reads` [(subscript, ctx,
    arrays)] that count, `lost` [(subscript, ctx, arrays, why)] that add nothing ("zero", "cancel"). A read of a
    local array stands for every value stored into it."""

    def __init__(self, flow, roots, stores_of):
        self.flow, self.stores_of, self.reads, self.lost, self.seen = flow, stores_of, [], [], set()
        self.work = [(r.expr, r, r.elem, None) for r in roots if r.expr is not None]
        while self.work:
            node, ctx, elem, why = self.work.pop()
            self.visit(node, ctx, elem, why)

    def follow(self, d, elem, why):
        key = (id(d), elem if d.elem is None else d.elem, why)
        if key not in self.seen and d.expr is not None:
            self.seen.add(key)
            self.work.append((d.expr, d, key[1], why))

    def visit(self, node, ctx, elem=None, why=None):
        flow = self.flow
        flow.tick()
        if elem is not None and isinstance(node, ast.Tuple) and elem < len(node.elts):
            return self.visit(node.elts[elem], ctx, None, why)
        if isinstance(node, ast.Name):
            for d in ctx.env.get(node.id, ()):
                self.follow(d, elem, why)
        elif isinstance(node, ast.Subscript):
            base = node
            while isinstance(base, ast.Subscript):
                base = base.value
            ids = arrays(flow, base, ctx)
            (self.reads if why is None else self.lost).append((node, ctx, ids) + ((why,) if why else ()))
            for st in (s for i in ids if i[0] == "local" for s in self.stores_of.get(i, ())):
                self.follow(st, None, why)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and why is None \
                and is_zero(flow, node, ctx):
            self.visit(node, ctx, None, "zero")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and why is None:
            kept, lost = terms(flow, node, ctx)
            for n in kept:
                self.visit(n, ctx)
            for n in lost:
                self.visit(n, ctx, None, "zero" if is_zero(flow, n, ctx) else "cancel")
        elif isinstance(node, ast.IfExp):  # the condition decides which, it is not part of the value
            truth = _truth(flow, node.test, ctx)
            for branch in ([node.body] if truth is not False else []) + ([node.orelse] if truth is not True else []):
                self.visit(branch, ctx, elem, why)
        elif isinstance(node, ast.Call) and (ctx.scope, id(node)) in flow.calls:
            for r in flow.returns.get(flow.calls[ctx.scope, id(node)], {}).values():
                self.follow(r, elem, why)
        elif not isinstance(node, ast.Attribute):  # A.shape is not A's data
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr) and not (isinstance(node, ast.Call) and child is node.func):
                    self.visit(child, ctx, None, why)


def _truth(flow, test, ctx):
    try:
        return bool(constant(flow, test, ctx))
    except Unknown:
        return None


def sources(flow, node, ctx):
    """The thread axes ("x", "y", "z", "x//16", "x%16") and loop counters (("loop", ...)) `node` follows."""
    found, seen, work = set(), set(), [(node, ctx, None, ())]
    while work:
        n, c, elem, tag = work.pop()
        flow.tick()
        if isinstance(n, ast.Attribute) and flow.g.resolve(n) in AXES:
            found.add(AXES[flow.g.resolve(n)] + "".join(tag))
        elif isinstance(n, ast.Call) and flow.g.resolve(n.func) == GRID:
            found |= {a + "".join(tag) for a in ("xy" if elem is None else "xyz"[elem:elem + 1])}
        elif isinstance(n, ast.Name) or isinstance(n, ast.Call) and (c.scope, id(n)) in flow.calls:
            defs = c.env.get(n.id, ()) if isinstance(n, ast.Name) else \
                flow.returns.get(flow.calls[c.scope, id(n)], {}).values()
            for d in defs:
                e = elem if d.elem is None else d.elem
                if (id(d), e, tag) not in seen:
                    seen.add((id(d), e, tag))
                    found |= {m for m in d.marks if m[0] == "loop"}
                    if d.expr is not None:
                        work.append((d.expr, d, e, tag))
        elif elem is not None and isinstance(n, ast.Tuple) and elem < len(n.elts):
            work.append((n.elts[elem], c, None, tag))
        elif isinstance(n, ast.BinOp) and isinstance(n.op, (ast.FloorDiv, ast.Mod)) and len(tag) < MAX_TAG \
                and _divisor(flow, n.right, c) is not None:
            op = "//" if isinstance(n.op, ast.FloorDiv) else "%"
            work.append((n.left, c, None, tag + (f"{op}{_divisor(flow, n.right, c)}",)))
        else:
            work += [(child, c, None, tag) for child in ast.iter_child_nodes(n) if isinstance(child, ast.expr)]
    return found


def _divisor(flow, node, ctx):
    try:
        return operator.index(constant(flow, node, ctx))
    except (Unknown, TypeError):
        return None
