"""Trusted parent side: correct results. Compare a kernel's output with a float64 reference and explain a failure.

Runs on plain float32 arrays returned by a child; the parent drew the inputs.
"""
import numpy as np

from . import child_problem
from .titles import title


def reference(A, B):
    return A.astype(np.float64) @ B.astype(np.float64)


def relative_error(C, ref):
    norm = np.linalg.norm(ref)
    diff = np.linalg.norm(C.astype(np.float64) - ref)
    return diff / norm if norm else diff


def _close(C, candidate, tol):
    return C.shape == candidate.shape and np.all(np.isfinite(C)) and relative_error(C, candidate) <= tol


def _span(idx):
    idx = np.unique(idx)
    return f"{idx[0]}" if len(idx) == 1 else f"{idx[0]}..{idx[-1]}" + ("" if idx[-1] - idx[0] + 1 == len(idx) else f" ({len(idx)} of them)")


def check_output(C, A, B, tol, tile=None):
    """Return (passed, message) for one output of shape M x N."""
    M, K = A.shape
    N = B.shape[1]
    ref = reference(A, B)
    finite = np.isfinite(C)
    err = relative_error(np.where(finite, C, 0), ref)
    if finite.all() and err <= tol:
        return True, f"{M}x{K} @ {K}x{N}: relative error {err:.1e}"
    scale = np.abs(ref).max() or 1.0
    wrong = ~finite | (np.abs(C - ref) > max(tol * 10, 1e-4) * scale)
    if not wrong.any():  # small errors everywhere
        wrong = np.abs(C - ref) > 0
    rows, cols = np.nonzero(wrong)
    r, c = rows[0], cols[0]
    lines = [f"{M}x{K} @ {K}x{N}: relative error {err:.2e} (limit {tol:.0e}); "
             f"{wrong.sum()} of {M * N} elements wrong.",
             f"First wrong element C[{r}, {c}]: expected {ref[r, c]:.6g}, got "
             f"{_describe_value(C, r, c)}.",
             f"Wrong elements lie in rows {_span(rows)} and columns {_span(cols)}."]
    lines.append("Likely cause: " + _likely_cause(C, A, B, ref, wrong, tile, tol))
    return False, "\n".join(lines)


NEVER_WRITTEN_BITS = 0x7FC00000  # the canonical NaN C is poisoned with; computed NaNs differ from it


def never_written(C):
    """Elements of C that still hold the poison NaN bit pattern."""
    return np.ascontiguousarray(C, np.float32).view(np.uint32) == NEVER_WRITTEN_BITS


def _describe_value(C, r, c):
    got = C[r, c]
    if not np.isnan(got):
        return f"{got:.6g}"
    return "NaN (never written)" if never_written(C[r:r + 1, c:c + 1])[0, 0] else "NaN (computed by the kernel)"


SAMPLE_ROWS = 64


def _sample_rows(M, wrong_rows):
    """Up to SAMPLE_ROWS rows of C, spread over it, the first wrong row among them (every row of a small C)."""
    if M <= SAMPLE_ROWS:
        return np.arange(M)
    spread = np.linspace(0, M - 1, SAMPLE_ROWS - 1).astype(int)
    return np.unique(np.concatenate([spread, wrong_rows[:1]]))


def _likely_cause(C, A, B, ref, wrong, tile, tol):
    M, K = A.shape
    N = B.shape[1]
    unwritten = never_written(C)
    computed_nan = np.isnan(C) & ~unwritten
    if computed_nan.any() and np.isfinite(A).all() and np.isfinite(B).all():
        rows, cols = np.nonzero(computed_nan)
        return (f"C[{rows[0]}, {cols[0]}] and {computed_nan.sum() - 1} more elements (rows {_span(rows)}, columns "
                f"{_span(cols)}) are NaN that the kernel computed from finite inputs: it read outside A or B. The "
                "grader surrounds A and B with NaN, so any value read past an edge poisons the sums it enters, even "
                "when it is multiplied by a zero-masked tile. Guard every load with all the bounds it needs: "
                "A[row, k] needs row < M and k < K; B[k, col] needs k < K and col < N.")
    # The candidate products are compared on a few rows of C (every row up to SAMPLE_ROWS): at N = 2048 each full
    # float64 product takes seconds on one core, and the tile search below tries one per tile along K.
    rows = _sample_rows(M, np.nonzero(wrong.any(axis=1))[0])
    A64, Cs = A[rows].astype(np.float64), C[rows]
    if tile:  # whole tiles along K skipped: the product stops short at a multiple of the tile
        full = -(-K // tile)
        partial = np.zeros((len(rows), N))
        # j tiles done; the partial last tile skipped is the next check, except where it is the only tile (K < TILE)
        for j in range(full - 1 if K % tile and K > tile else full):
            k = j * tile
            if k:
                partial += A64[:, k - tile:k] @ B[k - tile:k].astype(np.float64)
            if _close(Cs, partial, 1e-4):
                short = full - j
                what = (f"C is all zeros: no tile along K was summed (K = {K} is smaller than TILE = {tile}, so its "
                        "one tile is a partial one, and range(K // TILE) is empty)" if K < tile else
                        f"C holds the product of only the first {k} of K = {K} columns of A (rows of B)")
                return (f"{what}: the loop over tiles stops {short} tile{'s' if short > 1 else ''} short (the last "
                        f"tile along K is missing). Loop over all ceil(K / TILE) = {full} tiles, e.g. for t in "
                        "range((K + TILE - 1) // TILE), and load zeros past the edge.")
    if tile and K % tile and K > tile and _close(Cs, reference(A[rows, :K - K % tile], B[:K - K % tile]), 1e-4):
        return (f"the last partial tile along K is ignored (K = {K} is not a multiple of TILE = {tile}): "
                "loop over ceil(K / TILE) tiles and load zeros past the edge.")
    if K == N and _close(Cs, reference(A[rows], B.T), 1e-4):
        return "B is indexed transposed (B[col, k] instead of B[k, col])."
    if M == K and _close(Cs, reference(A.T[rows], B), 1e-4):
        return "A is indexed transposed (A[k, row] instead of A[row, k])."
    if unwritten.all():
        return "nothing was written to C: check that the kernel stores its result and that the grid is not empty."
    if unwritten.any():
        rows_missing = np.unique(np.nonzero(unwritten.all(axis=1))[0])
        cols_missing = np.unique(np.nonzero(unwritten.all(axis=0))[0])
        if len(rows_missing) and rows_missing[0] == min(N, M) and M != N:
            return (f"rows {rows_missing[0]}.. are never written: the bounds guard compares the row with the "
                    f"column count N = {N} instead of M = {M}.")
        if len(cols_missing) and cols_missing[0] == min(N, M) and M != N:
            return (f"columns {cols_missing[0]}.. are never written: the bounds guard compares the column with "
                    f"the row count M = {M} instead of N = {N}.")
        if len(rows_missing) or len(cols_missing):
            return ("the edge blocks never store: the grid is too small (use ceil(M / block) and ceil(N / block)"
                    " blocks) or the guard is off by one.")
        return "some threads never store their element: check the guard and the grid size."
    if wrong.all():
        return "every element is wrong: check the indexing of A and B and the accumulation."
    return ("some elements are wrong and the pattern is irregular: a race between threads (a missing barrier) "
            "or a store from a thread outside C are the usual causes.")



def explain_error(error):
    """A child's error record as a sentence for students, with what to look at."""
    kind, message = error["kind"], error["message"]
    if kind == "index_error":
        return (message + "\nA thread indexed outside an array: guard loads and stores with the right bounds "
                "(row < M, col < N, k < K).")
    if kind == "cuda_error":
        return message + "\nThe GPU reported an error (often an out-of-bounds access); later checks run in new processes."
    return message


def judge(g, group, result, inputs, n_groups):
    """The 'correct results: <group>' check of StageGrader `g`: every output of one child against its inputs."""
    check = g.check("correct", title(g, "correct", group), 1.0 / n_groups)
    problem = child_problem(result)
    if problem:
        return check.verdict(False, problem)
    lines, ok, told = [], True, False
    for i, facts in enumerate(result.facts["shapes"]):
        A, B = inputs[f"A{i}"], inputs[f"B{i}"]
        shape = f"{A.shape[0]}x{A.shape[1]} @ {B.shape[0]}x{B.shape[1]}"
        if "error" in facts:
            ok = False
            lines.append(f"{shape}: {explain_error(facts['error'])}")
            if facts["error"]["kind"] in ("launch", "not_implemented", "cuda_error"):
                break
            continue
        C = result.arrays.get(f"C{i}")
        if C is None or C.shape != (A.shape[0], B.shape[1]):
            ok = False
            lines.append(f"{shape}: no output came back")
            continue
        passed, message = check_output(C, A, B, g.tol, g.tile)
        if facts.get("writes_past_end"):
            passed = False
            message += past_end_message(facts["writes_past_end"])
        lost = lost_update_message(facts.get("c_writes"), brief=told)
        told = told or bool(lost)
        if lost:
            passed, message = False, message + "\n" + lost
        ok &= passed
        lines.append(message)
    missing = len(inputs) // 2 - len(result.facts["shapes"])
    if missing > 0:
        lines.append(f"{missing} more shape(s) not run after the error above")
    return check.verdict(ok and missing <= 0, "\n".join(lines))


def past_end_message(count):
    return (f"\n{count} values were written past the end of C: threads outside C store anyway. "
            "Guard the store with `if row < M and col < N`.")


def sampled_product(C, A, B, tol, past_end=0, facts=None):
    """'' when every element of C that the sampled run's blocks wrote (the others keep the NaN poison) is right and
    some were written, else why none of its counters can be credited, naming the first wrong element."""
    import numpy as np
    lost = lost_update_message((facts or {}).get("c_writes"))
    if lost:
        return ("not credited: in the sampled simulator run at the graded size, threads of one launch depend on each "
                "other through C, which a GPU does not compute reliably.\n" + lost + cover_message(facts))
    if ((facts or {}).get("races") or {}).get("count"):
        return ""  # the race check fails for it; the counters still describe the kernel
    M, K = A.shape
    N = B.shape[1]
    head = ("not credited: the sampled simulator run at the graded size (a few blocks of its grid) ")
    if C is None or C.shape != (M, N):
        return head + "gave no output"
    written = ~np.isnan(C)
    if past_end:
        return head + "wrote past the end of C" + past_end_message(past_end)
    if not written.any():
        return head + ("wrote no element of C: the blocks it ran computed nothing. A kernel must compute the "
                       "elements of its block at every size (look for a branch on M, N, K or the grid)")
    rows, cols = np.nonzero(written)
    want = A[rows].astype(np.float64) @ B.astype(np.float64)
    want = want[np.arange(len(rows)), cols]
    got = C[rows, cols].astype(np.float64)
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    if err <= tol:
        return ""
    i = int(np.argmax(np.abs(got - want)))
    return head + (f"computed wrong elements: relative error {err:.2e} over the {len(rows)} it wrote (limit {tol:g}); "
                   f"C[{rows[i]}, {cols[i]}]: expected {want[i]:.6g}, got {got[i]:.6g}. A kernel right on the "
                   "small shapes and wrong at this size treats sizes differently (a branch on M, N, K or the grid)")


def cover_message(facts):
    """Where a read of C that no simulated block wrote may come from an earlier cheap launch (C zeroed in a layout of
    its own) whose blocks the sampled run could not add (sim/cover.py): which launch, why, and what to change."""
    notes = [n for n in ((facts or {}).get("sampled") or {}).get("cover") or () if n.get("why")]
    examples = ((facts or {}).get("c_writes") or {}).get("examples") or ()
    if not notes or not any(e.get("kind") == "unsimulated" for e in examples):
        return ""
    said = "; ".join(f"launch {n['launch'] + 1} (`{n['kernel']}`): {n['why']}" for n in notes)
    return ("\nThe sampled run adds to a launch that only sets C (zeroes it, say) the blocks that write the part of C "
            f"it judges, and could not here. {said}. If that launch zeroes C, give it one thread per element of C in "
            "a 1-D or 2-D grid (cuda.grid), every block writing the same pattern shifted by its index, with no loads "
            "of A or B and no shared memory; or launch it over C in blocks laid out as the product kernel's.")


def _thread(side, verb=False):
    """Who and where; `verb`: say whether it read or wrote the element, and through which atomic."""
    where = f"line {side['line']} (`{side['source']}`)" if side.get("line", -1) > 0 else "a line outside the kernel file"
    how = " through cuda.atomic" if side.get("atomic") else ""
    if verb:
        how = (" reads it" if side.get("access") == "read" else " writes it") + (
            f" through cuda.atomic.{side['op']}" if side.get("op") else how)
    return f"block {tuple(side['block'])} thread {tuple(side['thread'])}{how} at {where}"


FIX = ("Give each element of C to exactly one thread (accumulate in a local variable and store once), or add into it "
       "with cuda.atomic.add(C, (row, col), value).")


def lost_update_message(c_writes, brief=False):
    """'' when no two threads of one launch stored to the same element of C (sim/writes.py), nor one read what another
    writes, nor two updated it through different atomics, nor (a sampled run) one read an element no simulated thread
    wrote; else which element, which threads and lines, the likely cause and the fix (`brief`: said once already)."""
    if not c_writes or not c_writes.get("count"):
        return ""
    examples = c_writes.get("examples") or []
    count = c_writes.get("elements") or c_writes["count"]
    many = f"{count} element{'s' if count != 1 else ''} of C"
    written = f"{many} {'were' if count != 1 else 'was'} written"
    if not examples:
        return (f"Lost updates: {written} by two threads of one launch, at least one of them with a plain store; on a "
                "GPU one of the updates is lost. " + FIX)
    ex = examples[0]
    i, j = ex["index"][:2]
    first, second = ex["first"], ex["second"]
    kind = ex.get("kind", "store")
    if kind == "unsimulated":
        head = (f"Order between blocks: {many} read where no simulated block had written. C[{i}, {j}]: "
                f"{_thread(second, True)}, and no block the sampled run simulated wrote it first.")
        cause = ("a block that reads C elsewhere (or takes a ticket from a counter in C) depends on other blocks of the "
                 "grid; on a GPU blocks run in any order and at once, so what it reads is not defined. A block may "
                 "read only the elements of C that it wrote itself or that an earlier launch wrote")
        fix = "Compute each element from A and B alone; zero C, where it must be, in a launch of its own."
    elif kind == "read":
        head = (f"Order between threads: {many} read by one thread of a launch and written by another. C[{i}, {j}]: "
                f"{_thread(first, True)}, then {_thread(second, True)}.")
        cause = (f"the simulator runs one thread, and one block, after another, so the read saw one fixed order; a GPU "
                 f"runs them together, so C[{i}, {j}] is read before or after the store, as it happens. Read only "
                 "the elements of C that the same thread wrote, or that an earlier launch wrote")
        fix = "Keep partial results in local variables (or shared memory within a block, with cuda.syncthreads())."
    elif kind == "ticket":
        op = second.get("op") or "add"
        after = f", after {_thread(first, True)}" if first else ""
        head = (f"Order between threads: {many} updated through cuda.atomic.{op}, whose returned old value a thread "
                f"then used. C[{i}, {j}]: {_thread(second, True)}{after}.")
        cause = ("the old value an atomic returns depends on which threads of the launch reached the element first; a "
                 "GPU runs them in any order (the simulator, and its sampled run of a few blocks, in one fixed order), "
                 "so a ticket or counter in C tells a block nothing it may rely on")
        fix = "Compute each element from A and B alone; add into C through an atomic without using what it returns."
    elif kind == "atomics":
        head = (f"Mixed atomics: {many} updated by two threads of one launch through different atomic operations. "
                f"C[{i}, {j}]: {_thread(first, True)}, then {_thread(second, True)}.")
        cause = ("each atomic is indivisible, but two different ones do not commute (nanmax then add is not add then "
                 "nanmax); the simulator ran them in one fixed order, a GPU runs them in any")
        fix = "Update an element through one kind of atomic in a launch, or split the two into launches of their own."
    else:
        head = (f"Lost update: {written} by more than one thread of the same launch. C[{i}, {j}]: "
                f"{_thread(first)}, then {_thread(second)}.")
        fix = FIX
        if first.get("atomic") or second.get("atomic"):
            cause = (f"one thread stores to C[{i}, {j}] plainly while another updates it through cuda.atomic in the "
                     "same launch; an atomic orders nothing against a plain store, so on a GPU one update is lost (set "
                     "C in a launch of its own, before the atomics)")
        elif ex.get("update"):
            cause = f"two threads update C[{i}, {j}] without cuda.atomic.add; on a GPU one update is lost"
        else:
            cause = (f"two threads store to C[{i}, {j}] in the same launch; on a GPU either store may land last, so "
                     "one result is lost")
        if brief:
            return head + " (see above)"
        return (f"{head} The simulator runs one thread at a time, so C came out right here; a GPU runs them together. "
                f"Likely cause: {cause}. {fix}")
    if brief:
        return head + " (see above)"
    return f"{head} Likely cause: {cause}. {fix}"


def instrumented_product(C, A, B, tol, tile=None, past_end=0, facts=None):
    """'' when the C of the simulator's instrumented run (races, bank conflicts, data reuse) is the product of A and B,
    else why none of its counters can be credited, with where C is wrong. A wrong C that a race the run found explains
    (the simulator runs a block's threads one after another, so a missing barrier corrupts C there) voids nothing:
    the race check fails for it, and the loads and bank counts still describe the kernel."""
    lost = lost_update_message((facts or {}).get("c_writes"))
    if lost:
        return ("not credited: in the instrumented simulator run, threads of one launch depend on each other "
                "through C, which a GPU does not compute reliably.\n" + lost)
    if ((facts or {}).get("races") or {}).get("count"):
        return ""
    M, K = A.shape
    N = B.shape[1]
    if C is None or C.shape != (M, N):
        passed, message = False, f"{M}x{K} @ {K}x{N}: no output came back"
    else:
        passed, message = check_output(C, A, B, tol, tile)
    if past_end:
        passed, message = False, message + past_end_message(past_end)
    if passed:
        return ""
    return ("not credited: the instrumented simulator run computed a wrong product, so its counters describe no "
            "correct kernel. Make the product right first (the likely cause is below). Its shape is drawn at random "
            "for each grade: a kernel right on the correctness shapes and wrong here treats some sizes differently "
            "(a branch on M, N or K).\n" + message)
