"""Trusted parent side: shared-memory tiles of the right shape and two barriers, read from the compiled PTX."""
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
    if g.stage.padded_b and tile * (tile + 1) * 4 not in sizes:
        problems.append(f"no shared array of TILE x (TILE + 1) = {tile}x{tile + 1} float32 "
                        f"({tile * (tile + 1) * 4} bytes): pad the transposed B tile with one column "
                        "(TILE_PAD = TILE + 1) so a warp's reads fall into 32 different banks")
    if f["barriers"] < 2:
        problems.append(f"found {f['barriers']} barrier(s); a tiled loop needs two cuda.syncthreads(): "
                        "one after loading the tiles, one after using them")
    if problems:
        return check.verdict(False, "\n".join(problems))
    return check.verdict(True, f"shared arrays {sizes} bytes with TILE = {tile}; {f['barriers']} barriers")
