"""Trusted parent side: data reuse, from the simulator's count of global loads of A and B per output."""
from . import missing_facts

SLACK = 0.01  # rounding of the counters' ratios


def judge_sim(facts, tile, reuse_fraction=0.5):
    """(passed, message): reuse = 2K / (global loads per output) must reach tile * reuse_fraction.

    Meaningful on square sizes that are a multiple of the tile (see autograder/sim/__init__.py)."""
    missing, msg = missing_facts(facts, "global_loads")
    if missing:
        return False, msg
    g = facts["global_loads"]
    need = tile * reuse_fraction
    K = facts.get("shape", {}).get("K", g["naive_loads_per_output"] // 2)
    if not g.get("A", 0) + g.get("B", 0):
        return False, ("no element of A or B was read inside the kernel: a kernel that reads neither cannot have "
                       "computed the product, so there is no reuse to credit")
    reuse = g["reuse"]
    naive = g["naive_loads_per_output"]
    ideal = naive / tile
    head = (f"each output element costs {g['loads_per_output']:g} loads of A and B from global memory "
            f"(the naive kernel loads 2K = {naive}, a kernel tiled by {tile} loads 2K/TILE = {ideal:g}): "
            f"every loaded element is used {reuse:g} time{'' if reuse == 1 else 's'}")
    if reuse > tile * (1 + SLACK):
        return False, (f"{head}, more than the {tile} a kernel tiled by {tile} can reach: loads were skipped. A "
                       "complete product reads every element of A and B once per tile step; look for a loop over "
                       "the tiles that stops early (range(K // TILE - 1) drops the last tile) or a tile larger "
                       "than TILE")
    if reuse >= need:
        return True, f"data reuse OK: {head}, at least {need:g} needed"
    low = [name for name in ("A", "B") if g.get(f"reuse_{name}") is not None and g[f"reuse_{name}"] < need]
    low = low or ["A", "B"]
    from_global = [name for name in low if g.get(f"reuse_{name}") is not None and g[f"reuse_{name}"] < 2]
    by_line = {}
    for p in g.get("per_line", []):
        if p["array"] in low:
            by_line.setdefault((p["line"], p.get("source", "")), []).append(p)
    parts = []
    for (line, src), ps in list(by_line.items())[:3]:
        loads = " and ".join(f"{p['array']} {p['per_output']:g}" for p in ps)
        parts.append(f"line {line}{(' (`' + src + '`)') if src else ''} loads {loads} times per output element")
    where = "; ".join(parts)
    msg = f"too little data reuse: {head}, but at least {need:g} is needed. "
    if from_global:
        which = " and ".join(from_global)
        msg += (f"The kernel reads operands from global memory instead of the shared tiles: {which} "
                f"{'are' if len(from_global) > 1 else 'is'} loaded from global memory about once per "
                f"multiply-add, i.e. inside the inner product loop")
        msg += f" ({where}). " if where else ". "
        msg += ("Load each tile into shared memory once per step along K (one element of A and one of B per "
                "thread), cuda.syncthreads(), then take the inner product from the shared arrays "
                "(sA[ty, k] * sB[k, tx]), not from A and B.")
    else:
        per = " and ".join(f"each element of {n} loaded from global memory is used only {g[f'reuse_{n}']:g} times"
                           for n in low if g.get(f"reuse_{n}") is not None)
        msg += f"{per[:1].upper()}{per[1:]}, where a tile of {tile} should use it {tile} times"
        msg += f" ({where}). " if where else ". "
        msg += ("Check that each block loads every tile of A and B exactly once (one element per thread) and "
                "that the inner product loop reads the whole shared tile.")
    M, N = facts.get("shape", {}).get("M"), facts.get("shape", {}).get("N")
    if K < tile or any(isinstance(v, int) and v % tile for v in (M, K, N)):
        msg += (f" (Measured at M x K x N = {M} x {K} x {N}; with sizes that are not multiples of {tile} "
                "this figure is lower even for a well-tiled kernel.)")
    return False, msg
