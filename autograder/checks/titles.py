"""Trusted parent side: the one title of every check, for every report (graded, stub, zeroed or not run).

Gradescope and Classroom 50 match tests by name across submissions, so a check is named the same whether it
ran, failed or was never started: each judge and StageGrader.failed_all ask here.
"""
SIM = {"races": "no shared-memory races (simulator race detector)",
       "bank_conflicts": "no shared-memory bank conflicts (simulator bank counter)"}
DATA_REUSE = "each global load of A and B reused at least half as often as in a TILE-tiled kernel (simulator load counter)"


def title(g, key, group=None):
    """The title of check `key` of StageGrader `g` (`group`: a correctness group's name)."""
    if key == "compiles":
        cc = ".".join(map(str, g.cfg["grading"]["compute_capability"]))
        return f"{g.stage.kernel} is a CUDA kernel that compiles for the GPU (PTX, compute capability {cc})"
    if key == "shortcuts":
        return "Kernel module grammar: no host-side shortcuts"
    if key == "shared_memory":
        want = "a TILE x (TILE + 1) transposed B tile" if g.stage.padded_b else "two TILE x TILE tiles"
        return f"shared-memory tiles ({want}) and barriers"
    if key == "correct":
        return f"correct results: {group}"
    # On a GPU the structure is judged at the size that is graded: racecheck at a size drawn per grade (M and N at
    # least 256), ncu at the size the speed check times. A title names no drawn size: it stays the same in every grade.
    n = g.cfg["speed"]["n"]
    if key == "races":
        return SIM[key] if g.device == "sim" else "no shared-memory races (compute-sanitizer racecheck, M and N >= 256)"
    if key == "bank_conflicts":
        return SIM[key] if g.device == "sim" else f"no shared-memory bank conflicts (ncu, N={n})"
    if key == "data_reuse":
        return DATA_REUSE if g.device == "sim" else DATA_REUSE.replace("simulator load counter", f"ncu, N={n}")
    if key == "speed":
        rule = g.cfg["stages"][g.stage.name]["speed"]
        return f"speed: at least {rule['min_speedup']}x {rule['reference']} at N={g.cfg['speed']['n']}"
    raise KeyError(key)
