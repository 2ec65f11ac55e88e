"""Trusted parent side: ncu's counts per machine instruction, so a bank conflict is judged where it happens.

ncu prints an instanced metric's value per instruction address with `--print-metric-instances details`:
``"39,976,960 (0x7fca937ac900: 131,072; 0x7fca937ac910: 4,194,304; ...)"``. Of each instruction it gives the
shared-memory wavefronts it took and the fewest it could have taken (ideal), and what it accessed: `memory_type` 16
is shared memory, `memory_access_type` 2 a load, 4 a store (read off ncu's source page, which names them, on an
H100 with the CUDA 13.0 ncu, 2026-11-27; tests/ncu/ holds those logs). Totals over a kernel can be diluted by
conflict-free loads added beside a conflicted one; one instruction's own counts cannot."""
import csv
import re

METRICS = ("memory_l1_wavefronts_shared", "memory_l1_wavefronts_shared_ideal", "memory_access_type", "memory_type")
SUMMED = METRICS[:2]
SHARED, LOAD = 16, 2
_PAIR = re.compile(r"(0x[0-9a-fA-F]+):\s*([0-9][0-9,.]*)")


def instances(value):
    """{address: value} of one instanced metric's cell; {} where it has none."""
    inner = value[value.find("(") + 1:value.rfind(")")] if "(" in value else ""
    return {int(pc, 16): float(v.replace(",", "")) for pc, v in _PAIR.findall(inner)}


def shared_loads(text):
    """[{kernel, index, of, wavefronts, ideal}] of every shared-memory load instruction in ncu's log `text` (its
    --csv rows: the kernel's name fifth, the metric's name in a column of its own, its value last), summed over the
    launches of each kernel: the `index`-th of the kernel's `of` shared-memory loads, in the order of its code."""
    per = {}
    for row in csv.reader(line for line in (text or "").splitlines() if line.startswith('"')):
        metric = next((m for m in METRICS if m in row), None)
        if metric is None or len(row) < 6:
            continue
        slot = per.setdefault(_kernel(row[4]), {})
        for pc, v in instances(row[-1]).items():
            counts = slot.setdefault(pc, {})
            counts[metric] = counts.get(metric, 0.0) + v if metric in SUMMED else v  # a kernel launched again adds
    loads = []
    for name, by_pc in per.items():
        mine = [(pc, m) for pc, m in sorted(by_pc.items())
                if m.get("memory_type") == SHARED and m.get("memory_access_type") == LOAD and m.get(METRICS[1])]
        loads += [{"kernel": name, "index": i + 1, "of": len(mine), "wavefronts": m.get(METRICS[0], 0.0),
                   "ideal": m[METRICS[1]]} for i, (pc, m) in enumerate(mine)]
    return loads


def _kernel(name):
    """A kernel's name as the student wrote it: ncu's `kern[v1,...](Array<...>)` without numba's suffixes."""
    return re.split(r"[\[(]", name.split("::")[-1], 1)[0] or name
