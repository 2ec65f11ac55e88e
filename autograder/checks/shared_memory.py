"""Trusted parent side: shared-memory tiles of the right shape and two barriers, read from the compiled PTX; in
stage 4 also that the product reads B's tile from the padded array, transposed, read from the kernel's source
(grammar/tiles.py): the PTX shows only that the array exists."""
from ..grammar.tiles import kernel_tiles
from . import child_problem, depends_on, grader_fault
from .titles import title


def judge(g, result):
    tile = g.tile
    check = g.check("shared_memory", title(g, "shared_memory"))
    f = result.facts
    if grader_fault(result):
        return check.verdict(False, depends_on("the compile check", grader_fault(result)))
    if child_problem(result) or "shared_arrays" not in f:
        return check.verdict(False, "not checked: the kernel did not compile (see the compile check)")
    if not tile:
        return check.verdict(False, "define the tile size as a module constant, e.g. TILE = 16")
    if getattr(g, "tile_note", ""):  # no TILE, or one the course does not allow (StageGrader.tile)
        return check.verdict(False, g.tile_note)
    sizes, tile_bytes = f["shared_arrays"], tile * tile * 4
    problems = []
    if sum(1 for s in sizes if s >= tile_bytes) < 2:
        problems.append(f"expected two shared arrays of at least TILE x TILE = {tile}x{tile} float32 "
                        f"({tile_bytes} bytes) each; found {sizes or 'none'}")
    if g.stage.padded_b and tile * (tile + 1) * 4 in sizes:
        problems += padded_tile_problems(g.src.source, g.stage.kernel, tile)
    elif g.stage.padded_b:
        problems.append(f"no shared array of TILE x (TILE + 1) = {tile}x{tile + 1} float32 "
                        f"({tile * (tile + 1) * 4} bytes): pad the transposed B tile with one column "
                        "(TILE_PAD = TILE + 1) so a warp's reads fall into 32 different banks")
    if f["barriers"] < 2:
        problems.append(f"found {f['barriers']} barrier(s); a tiled loop needs two cuda.syncthreads(): "
                        "one after loading the tiles, one after using them")
    if problems:
        return check.verdict(False, "\n".join(problems))
    return check.verdict(True, f"shared arrays {sizes} bytes with TILE = {tile}; {f['barriers']} barriers")


def padded_tile_problems(source, kernel, tile):
    """Why the kernel's padded tile (TILE x TILE_PAD) does not hold B's tile transposed for the product, or []."""
    facts = kernel_tiles(source, kernel)
    if facts is None:
        return [f"the grader could not read {kernel}(A, B, C) in the module to see which array the product reads B "
                "from: keep the kernel's name and its three parameters"]
    b, tiles = facts.b, list(facts.tiles.values())
    padded = [t for t in tiles if t.shape == (tile, tile + 1)]
    good = [t for t in padded if t.transposed and t.in_product]
    other_b = [t for t in tiles if t.in_product and t.from_b and t not in good]
    if good and not other_b:
        return []
    load = f"[tx, ty] = {b}[k0 + ty, col] (col built from threadIdx.x)"
    if not padded:
        return [f"no shared array in {kernel} is declared cuda.shared.array((TILE, TILE_PAD), float32) with "
                f"TILE_PAD = TILE + 1 = {tile + 1}: declare the transposed B tile with that shape"]
    if good:
        q = other_b[0]
        return [f"the product reads B's tile from {q.name} (declared line {q.line}), not only from the padded tile "
                f"{good[0].name}: read B's tile from {good[0].name} alone, transposed: {good[0].name}[tx, k]"]
    t = max(padded, key=lambda t: (t.in_product, t.transposed, t.from_b))
    problems = []
    if not t.in_product:
        instead = f" (it reads B's tile from {other_b[0].name}, as a stage 3 kernel does)" if other_b else ""
        problems.append(f"the padded tile {t.name} is declared but the product never reads it: read B's tile from "
                        f"it, transposed: {t.name}[tx, k]{instead}" + (f". {_idle(t)}" if t.idle else ""))
    if not t.from_b:
        problems.append(f"nothing from {b} is stored in {t.name} (declared line {t.line}): store B's tile in it, "
                        f"transposed: {t.name}{load}")
    elif not t.transposed:
        line, text, _ = next(s for s in t.stores if not s[2])
        problems.append(f"{t.name} holds B's tile untransposed (line {line}: {text}): its first index must follow "
                        f"what {b}'s column index follows, its second {b}'s row index: {t.name}{load}, then read "
                        f"{t.name}[tx, k] in the product")
    problems += [f"{_idle(u)}: read B's tile from {u.name} in the product itself, transposed: acc += sA[ty, k] * "
                 f"{u.name}[tx, k]" for u in padded if u is not t and u.idle and not u.in_product]
    return problems


# why a read of a tile adds nothing to C (grammar/tiles.py), most telling first
WHY = {"zero": "it is multiplied by zero", "cancel": "the same read is subtracted and added back in that sum",
       "unused": "its value never reaches what the kernel stores in C (it only decides a condition, or goes into a "
                 "local that is overwritten or never used)"}


def _idle(t):
    """What the reads of `t` that add nothing to C are: the most telling one, by line, with the reason."""
    line, text, why = min(t.idle, key=lambda r: (r[2] == "unused", isinstance(r[2], tuple), r[0]))
    if why in WHY:
        reason = WHY[why]
    elif why[3]:
        reason = f"it is in the else branch of `{why[2]}` (line {why[1]}), a condition that always holds, so it " \
                 "never runs"
    else:
        reason = f"it is under `{why[2]}` (line {why[1]}), a condition that never holds, so it never runs"
    more = f" ({len(t.idle) - 1} more such read{'s' if len(t.idle) > 2 else ''})" if len(t.idle) > 1 else ""
    return (f"{t.name} is read on line {line} ({text}), but that read adds nothing to C: {reason}{more}; only a "
            "read whose value the product sums counts")
