"""Trusted parent side: shared-memory bank conflicts, from the simulator's bank counter or ncu's metrics."""
from . import missing_facts

NCU_METRICS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
MAX_CONFLICT_RATIO = 0.02   # unpadded stage 4: 82% of shared-load wavefronts are conflicts; padded: 0
# Extra wavefronts per warp and step of the product (M * N * K / 32 steps): what other loads cannot dilute. A tile
# read 8-way conflicted once per step costs 7, a 2-way one 1; a padded tile 0. A kernel that computes several
# outputs per thread reads its tiles fewer times per step, so it pays less for the same conflict.
MAX_CONFLICTS_PER_STEP = 0.5
# Per instruction, as the simulator judges per line: a shared-memory load that takes twice the wavefronts it needs
# (a mean 2-way conflict) fails, however many conflict-free loads sit beside it. Stores are not judged: each stored
# element is read many times (a TILE 16 tile padded to 17 stores 2-way conflicted, once a tile, and reads clean).
MAX_LOAD_DEGREE = 2.0
ADVICE = ("The warp's reads of the transposed B tile fall into the same bank: declare it TILE x TILE_PAD with "
          "TILE_PAD = TILE + 1, and use that tile at every size. The simulator tier (the self-check) names the line.")


def judge_ncu(facts):
    """(passed, message) from ncu's counts over every kernel the plan launched (gpu/tools.ncu_facts): the metrics of
    NCU_METRICS, `shared_loads` (each shared-memory load instruction's wavefronts and the fewest it needs, or None
    where ncu gave none), and the (M, K, N) `shape` it ran (the size the speed check times). Each load instruction
    is judged on its own (MAX_LOAD_DEGREE), and the totals against the product's size as well as against the
    shared-load wavefronts: conflict-free loads added beside a conflicted tile read lower the last, never the others."""
    M, K, N = facts.get("shape") or ("?", "?", "?")
    at = f"at M x K x N = {M} x {K} x {N}, the size the speed check times"
    if facts.get("problem"):
        return False, f"ncu did not report the kernel {at}: {facts['problem']}"
    conflicts, wavefronts = facts[NCU_METRICS[0]], facts[NCU_METRICS[1]]
    ratio = conflicts / wavefronts if wavefronts else 0.0
    steps = M * N * K / 32 if all(isinstance(v, int) and v > 0 for v in (M, K, N)) else 0
    per_step = conflicts / steps if steps else 0.0
    detail = (f"{conflicts:,.0f} bank conflicts in {wavefronts:,.0f} shared-load wavefronts ({100 * ratio:.1f}%), "
              f"{per_step:.2f} per warp and step of the product, {at}")
    worst = _worst_load(facts.get("shared_loads"))
    if worst is not None and worst["wavefronts"] >= MAX_LOAD_DEGREE * worst["ideal"]:
        return False, (f"a shared-memory load of {worst['kernel']} (the {_nth(worst['index'])} of its "
                       f"{worst['of']} shared-memory load instructions) takes {worst['wavefronts'] / worst['ideal']:.1f}"
                       f" times the memory wavefronts it needs ({worst['wavefronts']:,.0f} for {worst['ideal']:,.0f}) "
                       f"{at}: the 32 threads of a warp read different words in the same bank. In all, {detail}. "
                       + ADVICE)
    if ratio > MAX_CONFLICT_RATIO or per_step > MAX_CONFLICTS_PER_STEP:
        return False, detail + ". " + ADVICE
    if facts.get("shared_loads") is None:
        detail += " (this ncu gave no counts per instruction: judged on the totals)"
    return True, detail


def _worst_load(loads):
    """The shared-memory load instruction with the most wavefronts for those it needs (gpu/ncu_instances.py)."""
    return max(loads, key=lambda r: r["wavefronts"] / r["ideal"]) if loads else None


def _nth(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def judge_sim(facts):
    """(passed, message): fail when a shared-memory load line has mean conflict degree >= 2.

    Stores are reported but not judged (see autograder/sim/__init__.py)."""
    missing, msg = missing_facts(facts, "bank_conflicts")
    if missing:
        return False, msg
    rows = facts["bank_conflicts"]
    loads = [r for r in rows if r["access"] == "load"]
    stores = [r for r in rows if r["access"] == "store" and r["mean_degree"] >= 2]
    bad = sorted((r for r in loads if r["mean_degree"] >= 2), key=lambda r: -r["extra_wavefronts"])
    if not bad:
        if not loads:
            return True, "no shared-memory loads were made, so there are no bank conflicts to report"
        worst = max(loads, key=lambda r: r["mean_degree"])
        msg = (f"no bank conflicts on shared-memory loads: worst line {worst['line']} on {worst['array']} "
               f"averages {worst['mean_degree']:g}-way (1 = conflict-free)")
        if stores:
            s = stores[0]
            msg += (f"; note: the stores at line {s['line']} into {s['array']} are {s['max_degree']}-way "
                    "conflicted (not graded: each stored element is loaded many times)")
        return True, msg
    r = bad[0]
    src = f" (`{r['source']}`)" if r.get("source") else ""
    msg = (f"shared-memory bank conflicts: the loads from {r['array']} at line {r['line']}{src} are "
           f"{r['max_degree']}-way conflicted (mean {r['mean_degree']:g}-way over {r['warp_accesses']} warp "
           f"loads, {r['extra_wavefronts']} extra memory wavefronts): the 32 threads of a warp read "
           f"different words in the same bank, so each of these loads takes {r['mean_degree']:g} times as long. ")
    arr = next((a for a in facts.get("shared_arrays", []) if a["label"] == r["array"]), None)
    if arr and arr.get("row_words") and arr["row_words"] % 32 == 0:
        name = arr.get("name") or "the array"
        shape = arr["shape"]
        msg += (f"Each row of {name} (shape {tuple(shape)}) is {arr['row_words']} words long, a multiple of the "
                f"32 banks, so the threads of a warp reading down a column ({name}[tx, k] for tx = 0..31) all "
                f"hit the same bank. Add one padding column: define TILE_PAD = TILE + 1 at module level and "
                f"declare {name} = cuda.shared.array((TILE, TILE_PAD), float32); the indexing stays the same.")
    else:
        msg += ("Make neighbouring threads (consecutive threadIdx.x, the lanes of a warp) read consecutive "
                "words of shared memory, or the same word (a broadcast), e.g. by padding rows by one element.")
    if len(bad) > 1:
        msg += " Other conflicted load lines: " + ", ".join(
            f"line {b['line']} ({b['array']}, mean {b['mean_degree']:g}-way)" for b in bad[1:4]) + "."
    return False, msg
