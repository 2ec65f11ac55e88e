"""Trusted parent side: data reuse, from the simulator's count of global loads of A and B per output, or on a GPU
from ncu's count of the warps' global load requests, at the size the speed check times."""
from . import missing_facts

SLACK = 0.01  # rounding of the counters' ratios
# ncu's requests from the warps to global memory, summed over every kernel the plan launched: loads (generic loads
# that reach global memory included) and atomics, which read global memory too. One request is one warp's load
# instruction, the loads of its 32 threads (every warp is full at the timed size). The naive kernel makes 2K loads
# per output element. (The thread-level SASS counters, smsp__sass_thread_inst_executed_op_global_ld, read n/a on the
# H100 machines: BENCHMARKS.md, 2026-11-25.)
LOAD_METRICS = ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum")
WARP = 32


def tiled_reuse(M, N, tile):
    """(reuse, reuse of A, reuse of B) of a kernel tiled by `tile` (blocks of tile x tile outputs) at M x K x N.

    Each of the ceil(N / tile) columns of blocks loads all of A once, each of the ceil(M / tile) rows of blocks all
    of B once; partial tiles at the edges load only the elements inside A and B. So every loaded element of A is
    used N / ceil(N / tile) times, of B M / ceil(M / tile) times: tile, on sizes that are multiples of it."""
    bx, by = -(-N // tile), -(-M // tile)
    return 2 * M * N / (M * bx + N * by), N / bx, M / by


def footprint_reuse(facts):
    """The most reuse a correct product can have given which block wrote which element of C, or None unknown.

    A block that writes elements of C in R rows and S columns must read those R rows of A and S columns of B
    whole, K elements each, at least once (blocks share no shared memory): K (R + S) loads. A block computing
    2 TILE x 2 TILE outputs (2 x 2 per thread) reaches 2 TILE, twice a TILE x TILE block."""
    rc = ((facts.get("c_writes") or {}).get("footprint") or {}).get("rows_plus_cols")
    g = facts.get("global_loads") or {}
    if not rc or not g.get("outputs") or not g.get("naive_loads_per_output"):
        return None
    return 2 * g["outputs"] / rc


def judge_sim(facts, tile, reuse_fraction=0.5, tile_known=True):
    """(passed, message): the reuse 2K / (global loads per output) must reach `reuse_fraction` of what a kernel
    tiled by `tile` reaches at the run's shape (tiled_reuse). More than a correct product can reach fails too
    (loads were skipped): more than the blocks' footprint in C allows (footprint_reuse) and more than `tile`
    allows where it is the module's own TILE (`tile_known` False: one the course does not allow, a kernel tiled by
    32 that the grader cannot read as such). Several outputs per thread (register blocking) reach more than TILE
    honestly: their blocks cover more of C."""
    missing, msg = missing_facts(facts, "global_loads")
    if missing:
        return False, msg
    g = facts["global_loads"]
    naive = g["naive_loads_per_output"]
    shape = facts.get("shape") or {}
    M, K, N = shape.get("M"), shape.get("K", naive // 2), shape.get("N")
    if not g.get("A", 0) + g.get("B", 0):
        return False, ("no element of A or B was read inside the kernel: a kernel that reads neither cannot have "
                       "computed the product, so there is no reuse to credit")
    if facts.get("sampled"):  # blocks away from the last row and column of the grid: whole tiles
        ideal = ideal_A = ideal_B = float(tile)
    elif isinstance(M, int) and isinstance(N, int) and M > 0 and N > 0:
        ideal, ideal_A, ideal_B = tiled_reuse(M, N, tile)
    else:
        ideal = ideal_A = ideal_B = float(tile)
    ideal_ab = {"A": ideal_A, "B": ideal_B}
    need = ideal * reuse_fraction
    reuse = g["reuse"]
    edges = " (partial tiles at the edges load fewer elements)" if (M or 0) % tile or (N or 0) % tile else ""
    if facts.get("sampled"):
        n = sum(len(b) for b in facts["sampled"]["blocks"])
        edges = f", in {n} block{'s' if n != 1 else ''} of whole tiles"
    head = (f"each output element costs {g['loads_per_output']:g} loads of A and B from global memory (the naive "
            f"kernel loads 2K = {naive}, a kernel tiled by {tile} loads {naive / ideal:.4g} at M x K x N = {M} x {K} x "
            f"{N}{edges}): every loaded element is used {reuse:g} time{'' if reuse == 1 else 's'}")
    most = footprint_reuse(facts)
    bounds = [b for b in (ideal if tile_known else None, most) if b is not None]
    if bounds and reuse > max(bounds) * (1 + SLACK):
        fp = facts["c_writes"]["footprint"] if most is not None else None
        limit = (f"the {most:.4g} its blocks can reach here (they wrote C in {fp['blocks']} block"
                 f"{'s' if fp['blocks'] != 1 else ''} spanning {fp['rows_plus_cols']} rows and columns in all, each "
                 f"of which needs a whole row of A or column of B)" if fp else "")
        if tile_known:
            limit = f"the {ideal:.4g} a kernel tiled by {tile} can reach here" + (f" and {limit}" if limit else "")
        return False, (f"{head}, more than {limit}: loads were skipped. A complete product reads every element of A "
                       "and B once per tile step; look for a loop over the tiles that stops early "
                       "(range(K // TILE - 1) drops the last tile) or a tile larger than TILE")
    if reuse >= need:
        more = (f"; more than TILE allows, as blocks that each compute more than TILE x TILE outputs reach (at most "
                f"{most:.4g} here)" if tile_known and reuse > ideal * (1 + SLACK) else "")
        return True, (f"data reuse OK: {head}, at least {need:.4g} needed ({reuse_fraction:g} of the {ideal:.4g} a "
                      f"kernel tiled by {tile} reaches here){more}")
    low = [name for name in ("A", "B")
           if g.get(f"reuse_{name}") is not None and g[f"reuse_{name}"] < ideal_ab[name] * reuse_fraction]
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
    msg = (f"too little data reuse: {head}, but at least {need:.4g} is needed ({reuse_fraction:g} of the "
           f"{ideal:.4g} a kernel tiled by {tile} reaches here). ")
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
        per = " and ".join(f"each element of {n} loaded from global memory is used only {g[f'reuse_{n}']:g} times, "
                           f"where a kernel tiled by {tile} uses it {ideal_ab[n]:.4g} times here"
                           for n in low if g.get(f"reuse_{n}") is not None)
        msg += f"{per[:1].upper()}{per[1:]}"
        msg += f" ({where}). " if where else ". "
        msg += ("Check that each block loads every tile of A and B exactly once (one element per thread) and "
                "that the inner product loop reads the whole shared tile.")
    return False, msg


def judge_ncu(facts, tile, reuse_fraction=0.5):
    """(passed, message): on a GPU, 2K over the global loads per output element (32 per warp request) must reach
    `reuse_fraction` of what a kernel tiled by `tile` reaches at the run's shape (tiled_reuse). Facts
    (gpu/tools.ncu_facts): the metrics of LOAD_METRICS summed over the plan's kernels, and the (M, K, N) `shape`,
    the size the speed check times, so a kernel that tiles only small matrices is judged where it is timed. No upper
    bound: an instruction may load more than one element, and a product that skips loads is wrong at this very size
    (the speed check verifies every timed C)."""
    M, K, N = facts.get("shape") or (0, 0, 0)
    at = f"at M x K x N = {M} x {K} x {N}, the size the speed check times"
    if facts.get("problem"):
        return False, f"ncu did not report the kernel {at}: {facts['problem']}"
    loads = sum(facts.get(m, 0) for m in LOAD_METRICS)
    if not loads:
        return False, (f"no global load was executed {at}: a kernel that reads neither A nor B cannot have computed "
                       "the product, so there is no reuse to credit")
    per_output = WARP * loads / (M * N)
    reuse = 2 * K / per_output
    ideal = tiled_reuse(M, N, tile)[0]
    need = ideal * reuse_fraction
    head = (f"each output element costs {per_output:.4g} global loads {at} (the naive kernel executes "
            f"2K = {2 * K}, a kernel tiled by {tile} {2 * K / ideal:.4g}): every loaded element is used {reuse:.4g} "
            f"time{'' if round(reuse, 4) == 1 else 's'}")
    if reuse >= need:
        return True, (f"data reuse OK: {head}, at least {need:.4g} needed ({reuse_fraction:g} of the {ideal:.4g} a "
                      f"kernel tiled by {tile} reaches)")
    cause = ("The kernel reads operands from global memory instead of the shared tiles: about once per multiply-add "
             "at this size, as a naive kernel does" if reuse < 2 else "Each element loaded from global memory serves too few multiply-adds")
    return False, (f"too little data reuse: {head}, but at least {need:.4g} is needed ({reuse_fraction:g} of the "
                   f"{ideal:.4g} a kernel tiled by {tile} reaches). {cause}. Load each tile of A and B into shared "
                   "memory once per step along K (one element of each per thread), cuda.syncthreads(), and take the "
                   "inner product from the shared tiles, at every size: a kernel that tiles only small matrices (or "
                   "only some blocks) is judged here, at the size it is timed at.")
