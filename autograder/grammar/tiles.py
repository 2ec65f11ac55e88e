"""Trusted parent side: what a kernel's source says of its shared tiles, read from the grammar's parse and its
constant evaluator, never by importing the module, so the simulator and the GPU tier judge them from the same facts:
each shared array's shape, the stores that fill it from B (with which indices) and whether the product reads it.

Stage 4's lesson is reading B's tile from a padded array, transposed; the PTX shows only that such an array exists,
so a stage 3 kernel with one more array declared would pass a check of sizes alone.

The reading is flow-insensitive: a local stands for everything ever assigned to it (tx = cuda.threadIdx.x,
col = cuda.blockIdx.x * TILE + tx), and an index follows the thread axes (threadIdx.x, .y, .z) its value depends on.
"""
import ast
from dataclasses import dataclass, field

from .reader import _read
from .walker import Grammar

AXES = {"numba.cuda.threadIdx.x": "x", "numba.cuda.threadIdx.y": "y", "numba.cuda.threadIdx.z": "z"}
GRID = "numba.cuda.grid"            # col, row = cuda.grid(2): x, then y
SHARED = "numba.cuda.shared.array"
ATOMIC = "numba.cuda.atomic."       # cuda.atomic.add(C, (row, col), acc) stores into C
# stores into shared arrays read, each a walk of the kernel: a tile kernel has a few, and the cap keeps a module of
# MAX_NODES from costing the parent more than that many walks
MAX_TILE_STORES = 64


@dataclass
class Tile:
    """One shared array of the kernel. `stores`: (line, text, transposed) of each store whose value reads B;
    transposed: its first index follows what B's column index follows and its second B's row index."""
    name: str
    line: int
    shape: tuple = None    # worked out by the constant evaluator; None where it cannot be
    stores: list = field(default_factory=list)
    in_product: bool = False  # the value stored into C depends on it

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
    except (RecursionError, MemoryError):
        return None


def _subscript(node):
    """(array name, [index expressions]) of a[i, j] or a[i][j]; (None, []) for anything else."""
    index = []
    while isinstance(node, ast.Subscript):
        s = node.slice
        index[:0] = list(s.elts) if isinstance(s, ast.Tuple) else [s]
        node = node.value
    return (node.id, index) if isinstance(node, ast.Name) else (None, [])


class _Reading:
    """One kernel's assignments: `defs` (local -> the expressions ever assigned to it, or a frozenset of sources
    where an unpacking gives it one axis), `stores` ((array, indices, value, node) of every element stored)."""

    def __init__(self, grammar, fn, source):
        self.g, self.source, self.defs, self.stores, self.shared = grammar, source, {}, [], {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    self.bind(t, node.value, node)
                call = node.value
                if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and isinstance(call, ast.Call) \
                        and self.g.resolve(call.func) == SHARED:
                    self.shared.setdefault(node.targets[0].id, (node, call))
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                self.bind(node.target, node.value, node)
            elif isinstance(node, ast.For):
                self.bind(node.target, node.iter, node)
                if isinstance(node.target, ast.Name):
                    self.defs[node.target.id].append(frozenset({"loop " + node.target.id}))
            elif isinstance(node, ast.Call) and (self.g.resolve(node.func) or "").startswith(ATOMIC) \
                    and len(node.args) >= 3 and isinstance(node.args[0], ast.Name):
                index = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                self.stores.append((node.args[0].id, list(index), node.args[2], node))

    def bind(self, target, value, node):
        if isinstance(target, ast.Name):
            self.defs.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Tuple):
            grid = isinstance(value, ast.Call) and self.g.resolve(value.func) == GRID
            paired = isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts)
            for i, t in enumerate(target.elts):
                if grid and isinstance(t, ast.Name):
                    self.defs.setdefault(t.id, []).append(frozenset("xyz"[i:i + 1]))
                else:
                    self.bind(t, value.elts[i] if paired else value, node)
        elif isinstance(target, ast.Subscript):
            name, index = _subscript(target)
            if name is not None:
                self.stores.append((name, index, value, node))

    def reach(self, roots):
        """(the sources: thread axes and "loop k" markers, the local names read) of `roots` and every assignment to
        a local they read, transitively."""
        sources, names, stack = set(), set(), list(roots)
        while stack:
            item = stack.pop()
            if isinstance(item, frozenset):
                sources |= item
                continue
            for sub in ast.walk(item):
                if isinstance(sub, ast.Attribute):
                    axis = AXES.get(self.g.resolve(sub) or "")
                    if axis:
                        sources.add(axis)
                elif isinstance(sub, ast.Call) and self.g.resolve(sub.func) == GRID:
                    sources |= {"x", "y"}
                elif isinstance(sub, ast.Name) and sub.id not in names:
                    names.add(sub.id)
                    stack.extend(self.defs.get(sub.id, ()))
        return sources, names

    def follows(self, index, b_index):
        """Does `index` follow what `b_index` follows: the same thread axes, and loop counters only of its own?"""
        a, b = self.reach([index])[0], self.reach([b_index])[0]
        axes = {"x", "y", "z"}
        return a & axes == b & axes and (a - axes) <= (b - axes)

    def b_reads(self, value, b):
        """[(row index, column index)] of every 2-d read of B (or a local alias of it) that `value` depends on."""
        names = self.reach([value])[1]
        aliases = {b} | {n for n in names if any(isinstance(d, ast.Name) and d.id == b for d in self.defs.get(n, ()))}
        roots = [value] + [d for n in names for d in self.defs.get(n, ()) if not isinstance(d, frozenset)]
        reads = []
        for root in roots:
            for sub in ast.walk(root):
                if isinstance(sub, ast.Subscript):
                    name, index = _subscript(sub)
                    if name in aliases and len(index) == 2:
                        reads.append(tuple(index))
        return reads

    def facts(self, kernel, b, c):
        tiles = {}
        for name, (node, call) in self.shared.items():
            shape = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "shape"), None)
            try:
                value = self.g.constants.value(shape) if shape is not None else None
            except Exception:  # noqa: BLE001 (the evaluator raises what Python would; a shape it cannot work out)
                value = None
            tiles[name] = Tile(name, node.lineno, value if type(value) is tuple else None)
        c_values, read = [], 0
        for name, index, value, node in self.stores:
            if name == c:
                c_values.append(value)
            elif name in tiles and len(index) == 2 and read < MAX_TILE_STORES:
                read += 1
                reads = self.b_reads(value, b)
                if reads:
                    i0, i1 = index
                    transposed = all(self.follows(i0, col) and self.follows(i1, row)
                                     and not (self.follows(i0, row) and self.follows(i1, col)) for row, col in reads)
                    tiles[name].stores.append((node.lineno, self.text(node), transposed))
        product = self.reach(c_values)[1]
        for tile in tiles.values():
            tile.in_product = tile.name in product
        return KernelTiles(kernel, b, tiles)

    def text(self, node):
        text = " ".join((ast.get_source_segment(self.source, node) or "").split())
        return text if len(text) <= 70 else text[:67] + "..."
