"""Trusted parent side: shared-memory races, from the simulator's race detector or compute-sanitizer racecheck."""

from . import missing_facts
from ..sim.common import RAW, WAR  # the hazard names the race detector reports (pure constants)



def judge_racecheck(facts):
    """(passed, message) from compute-sanitizer racecheck's summary (gpu/tools.racecheck_facts): `hazards`, `errors`,
    `warnings`, a few hazard `lines`, and the (M, K, N) `shapes` it ran, drawn per grade (gpu/tools.racecheck_shapes)."""
    shapes = facts.get("shapes") or [facts.get("shape") or ("?", "?", "?")]
    sizes = " and ".join(f"{M} x {K} x {N}" for M, K, N in shapes)
    at = f"at M x K x N = {sizes}, {'sizes' if len(shapes) > 1 else 'a size'} drawn for this grade"
    if facts.get("problem"):
        return False, f"racecheck did not complete {at}: {facts['problem']}"
    hazards, errors, warnings = facts["hazards"], facts["errors"], facts["warnings"]
    if errors or warnings:
        found = (f"racecheck found hazards on shared memory {at} and was stopped at its first {hazards} reports "
                 f"({errors} errors, {warnings} warnings)" if facts.get("stopped_early") else
                 f"racecheck found {hazards} hazards ({errors} errors, {warnings} warnings) on shared memory {at}")
        return False, (f"{found}. Likely cause: a missing cuda.syncthreads() (one after loading the tiles and one after "
                       "the inner loop, before the next load), or a barrier that only some sizes or some threads "
                       "reach: every thread must pass both barriers on every tile, whatever M, K and N are.\n"
                       + "\n".join(facts.get("lines", [])[:4]))
    return True, f"racecheck: 0 hazards {at}"


def _thread(t):
    return "(" + ", ".join(str(v) for v in t) + ")"


def _at(side):
    src = f" (`{side['source']}`)" if side.get("source") else ""
    return f"line {side['line']}{src}"


def _verb(side):
    if side.get("atomic"):
        return "updates (cuda.atomic.*)" if side["access"] == "write" else "reads (cuda.atomic.*)"
    return {"read": "reads", "write": "writes"}[side["access"]]


def _nth(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _epoch_words(e):
    if e == 0:
        return "both before the first cuda.syncthreads()"
    return f"both after each thread's {_nth(e)} cuda.syncthreads() and before its next one"


def judge_sim(facts):
    """(passed, message): fail when two threads of a block touch one shared element unordered."""
    missing, msg = missing_facts(facts, "races")
    if missing:
        return False, msg
    races = facts["races"]
    if races["count"] == 0:
        n = len(facts.get("shared_arrays", []))
        if not facts.get("shared_accesses"):
            return True, "no shared-memory races: the kernel made no shared-memory accesses"
        note = " (the access log hit its cap, so later barrier intervals were not checked)" if facts.get("truncated") else ""
        return True, (f"no shared-memory races: {facts.get('shared_accesses', 0)} accesses to {n} shared "
                      f"array(s) checked, every element touched by two threads is separated by a "
                      f"cuda.syncthreads(){note}")
    ex = races["examples"][0]
    first, second = ex["first"], ex["second"]
    kind = ex["kind"]
    more = "+" if races.get("capped") else ""
    n = races["count"]
    msg = (f"shared-memory race ({kind}) on {ex['array']}, element {ex['index']} in block "
           f"{_thread(ex['block'])}: thread {_thread(first['thread'])} {_verb(first)} it at "
           f"{_at(first)} and thread {_thread(second['thread'])} {_verb(second)} it at "
           f"{_at(second)}, {_epoch_words(ex['epoch'])}, so nothing orders the two accesses. "
           f"{n}{more} shared element{'' if n == 1 else 's'} raced on in all, counted once per block and "
           f"barrier interval")
    per = races.get("per_array") or {}
    if len(per) > 1:
        msg += " (" + ", ".join(f"{k}: {v}" for k, v in per.items()) + ")"
    msg += ". "
    if kind == WAR:
        msg += ("Likely cause: missing cuda.syncthreads() after the inner product loop: without it a fast "
                "thread starts the next iteration and overwrites the tile while other threads are still "
                "reading the current one. Put a cuda.syncthreads() at the end of the loop over tiles, after "
                "the inner product loop.")
    elif kind == RAW:
        msg += ("Likely cause: missing cuda.syncthreads() between storing the tile into shared memory and "
                "reading it in the inner product loop (or a barrier that some threads skip, e.g. inside an "
                "`if`): a thread reads an element before the thread that loads it has stored it.")
    else:
        msg += ("Likely cause: two threads store to the same shared element: make the store index depend "
                "on both threadIdx.x and threadIdx.y so that every thread writes its own element, or "
                "separate the stores with cuda.syncthreads().")
    if first.get("atomic") or second.get("atomic"):
        msg += (" An atomic (cuda.atomic.*) makes its own update indivisible but orders nothing: another thread's "
                "plain access to the same element still needs a cuda.syncthreads() between the two, as it would "
                "without the atomic.")
    others = [e for e in races["examples"][1:] if (e["array"], e["kind"]) != (ex["array"], kind)]
    if others:
        o = others[0]
        msg += (f" Also: {o['kind']} on {o['array']} between {_at(o['first'])} and {_at(o['second'])}"
                f" (threads {_thread(o['first']['thread'])} and {_thread(o['second']['thread'])}).")
    return False, msg
