"""Trusted parent side: what a kernel's source says of its shared tiles, read from the grammar's parse and its
constant evaluator, never by importing the module, so the simulator and the GPU tier judge them from the same facts:
each shared array's shape, the stores that fill it from B (with which indices), whether the value stored into C is
computed from it, and the reads of it that add nothing to C (each with the reason).

Stage 4's lesson is reading B's tile from a padded array, transposed; the PTX shows only that such an array exists,
so a stage 3 kernel with one more array declared (and read where it adds nothing) would pass a check of sizes alone.

The kernel is walked in the order it runs (flow.py): a local holds the assignments that reach it, the helpers it
calls are walked with the tiles it passes them, and code under a condition the constant evaluator works out to
false never runs. A value follows the data it is computed from (values.py), not the conditions around it; a read
multiplied by a constant zero, or added and subtracted again in one expression, adds nothing. An index follows the
thread axes its value depends on (threadIdx.x, .y, .z, and tid // TILE apart from tid % TILE) and the loops whose
counters it reads.

What this reading cannot see, and leaves to the simulator's and ncu's counters (bank conflicts, data reuse): a read
under a condition that depends on the data or the launch (if K < 0:, if A[0, 0] == 12345.0:), which may never hold
when the kernel runs; a read cancelled across statements or through other locals (acc += s; acc -= s), or multiplied
by a value that is zero only at run time; helpers nested deeper than flow.DEVICE_DEPTH or calling themselves.
"""
import ast
from dataclasses import dataclass, field

from .flow import Flow, TooMuch
from .reader import _read
from .values import ARRAYS, Depends, arrays, sources
from .walker import Grammar

ATOMIC = "numba.cuda.atomic."       # cuda.atomic.add(C, (row, col), acc) stores into C
# stores into shared arrays read, each a walk of the kernel's values: a tile kernel has a few, and the cap keeps a
# module of MAX_NODES from costing the parent more than that many walks
MAX_TILE_STORES = 64
MAX_IDLE = 3  # reads that add nothing, named per tile


@dataclass
class Tile:
    """One shared array of the kernel. `stores`: (line, text, transposed) of each store whose value reads B;
    transposed: its first index follows what B's column index follows and its second B's row index. `idle`:
    (line, text, why) of reads that add nothing to C; why is "zero", "cancel", "unused" or ("dead", line, "if X:",
    whether the read is in its else branch)."""
    name: str
    line: int
    shape: tuple = None    # worked out by the constant evaluator; None where it cannot be
    stores: list = field(default_factory=list)
    in_product: bool = False  # the value stored into C is computed from it
    idle: list = field(default_factory=list)

    @property
    def from_b(self):
        return bool(self.stores)

    @property
    def transposed(self):
        return self.from_b and all(t for _, _, t in self.stores)


@dataclass
class KernelTiles:
    kernel: str
    b: str        # the kernel's B parameter (its second), as the student named it
    tiles: dict   # name -> Tile, in the order declared


def kernel_tiles(source, kernel):
    """The KernelTiles of the kernel named `kernel` (the stage's, stages.py) in `source`, or None where the module
    does not parse within the grammar's bounds or defines no such kernel of three or more parameters. Never raises."""
    tree = _read(source)[0]
    if tree is None:
        return None
    try:
        grammar = Grammar(tree)
        grammar.check()  # binds the imports and works the constants out; its findings are the grammar check's
        fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args] if fn is not None else []
        if len(params) < 3:
            return None
        return _Reading(grammar, fn, source).facts(kernel, params[1], params[2])
    except (RecursionError, MemoryError, TooMuch):
        return None


def _index(node):
    """[index expressions] of a[i, j] or a[i][j]."""
    index = []
    while isinstance(node, ast.Subscript):
        index[:0] = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        node = node.value
    return index


def _note(tile, read):
    """Add an idle read (line, text, why) to `tile`, once, up to MAX_IDLE."""
    if read not in tile.idle and len(tile.idle) < MAX_IDLE:
        tile.idle.append(read)


def _base(node):
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


class _Reading:
    """One kernel walked (flow.Flow), its stores grouped by the array they store into."""

    def __init__(self, grammar, fn, source):
        self.g, self.fn, self.source = grammar, fn, source
        self.flow = Flow(grammar, fn, ATOMIC)
        self.stores_of = {}
        for st in self.flow.stores.values():
            for ident in arrays(self.flow, st.target, st):
                self.stores_of.setdefault(ident, []).append(st)

    def declared(self):
        """{("shared", id of the call): Tile} of every shared array declared where the walk went."""
        tiles = {}
        for fn in [self.fn] + list(self.flow.device.values()):
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign) and id(node) in self.flow.live and len(node.targets) == 1 \
                        and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call) \
                        and ARRAYS.get(self.g.resolve(node.value.func) or "") == "shared":
                    tiles.setdefault(("shared", id(node.value)), self.tile(node.targets[0].id, node))
        return tiles

    def tile(self, name, node):
        call = node.value
        shape = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "shape"), None)
        try:
            value = self.g.constants.value(shape) if shape is not None else None
        except Exception:  # noqa: BLE001 (the evaluator raises what Python would; a shape it cannot work out)
            value = None
        return Tile(name, node.lineno, value if type(value) is tuple else None)

    def facts(self, kernel, b, c):
        tiles = self.declared()
        product = Depends(self.flow, self.stores_of.get(("param", c), []), self.stores_of)
        counted = {id(node) for node, _, _ in product.reads}
        for ident, tile in tiles.items():
            tile.in_product = any(ident in ids for _, _, ids in product.reads)
            for st in self.stores_of.get(ident, [])[:MAX_TILE_STORES]:
                self.tile_store(tile, st, b)
        lost = {id(node): why for node, _, _, why in product.lost}
        for node, ctx, stmt in self.flow.reads.values():
            for ident in arrays(self.flow, _base(node), ctx) & set(tiles):
                if id(node) not in counted:
                    _note(tiles[ident], (stmt.lineno, self.text(stmt), lost.get(id(node), "unused")))
        self.dead_reads({t.name: t for t in tiles.values()})
        return KernelTiles(kernel, b, {t.name: t for t in sorted(tiles.values(), key=lambda t: t.line)})

    def tile_store(self, tile, st, b):
        """Note `st` (a store into `tile`) where its value reads B: transposed or not."""
        if len(st.index) != 2:
            return
        reads = [(node, ctx) for node, ctx, ids in Depends(self.flow, [st], self.stores_of).reads
                 if ("param", b) in ids and len(_index(node)) == 2]
        if reads:
            i0, i1 = st.index
            transposed = all(self.follows(i0, st, col, ctx) and self.follows(i1, st, row, ctx)
                             and not (self.follows(i0, st, row, ctx) and self.follows(i1, st, col, ctx))
                             for node, ctx in reads for row, col in [_index(node)])
            tile.stores.append((st.stmt.lineno, self.text(st.stmt), transposed))

    def follows(self, index, ictx, b_index, bctx):
        """Does `index` follow what `b_index` follows: the same thread axes, and loop counters only of its own?"""
        a, b = sources(self.flow, index, ictx), sources(self.flow, b_index, bctx)
        axes_a, axes_b = {s for s in a if type(s) is str}, {s for s in b if type(s) is str}
        return axes_a == axes_b and (a - axes_a) <= (b - axes_b)

    def dead_reads(self, by_name):
        """Reads of a tile (by its name) in code that never runs: ("dead", the condition's line, "if X:" or
        "while X:", whether the branch is its else)."""
        for cond, body in self.flow.skipped:
            head = f"{'while' if isinstance(cond, ast.While) else 'if'} {self.text(cond.test)}:"
            why = ("dead", cond.lineno, head, body is cond.orelse)
            for stmt in (s for top in body for s in ast.walk(top) if isinstance(s, ast.stmt)):
                if id(stmt) in self.flow.live:
                    continue
                for child in (c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.expr)):
                    for sub in ast.walk(child):
                        tile = by_name.get(getattr(_base(sub), "id", None)) \
                            if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Load) else None
                        if tile is not None:
                            _note(tile, (stmt.lineno, self.text(stmt), why))

    def text(self, node):
        text = " ".join((ast.get_source_segment(self.source, node) or "").split())
        return text if len(text) <= 70 else text[:67] + "..."
