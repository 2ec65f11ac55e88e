"""Untrusted side (grading child): the state of one instrumented simulator run and the facts it yields.

See autograder/sim/__init__.py for how the instruments work and the facts format.
"""
import linecache
import os
import re
import threading

from .analysis import BlockAnalysis
from .green import local
from .common import BANK_BYTES, BLOCK_ACCESS_CAP, CODE_BITS, LASTI_BITS, RACE_COUNT_CAP, _is_atomic

class _Recorder(BlockAnalysis):
    """State of one instrumented run: logs, shared-array registry, accumulated facts."""

    def __init__(self, path, code_files=()):
        import numpy as np
        self.np = np
        # the student's file as its code objects name it (the job may give another spelling)
        self.real = os.path.realpath(path)
        self.path = next((f for f in code_files if os.path.realpath(f) == self.real), path)
        self.same_file = {self.path: True}
        self.code_ids = {}           # code object -> id (0: not the student's file)
        self.code_list = []
        self.line_tables = {}
        self.tls = local()            # per simulated thread: its log and its global-load counts
        self.lock = threading.Lock()
        self.threads = []            # BlockThreads of the block being run
        self.thread_cap = BLOCK_ACCESS_CAP
        # shared arrays: bases keyed by declaration site; views index into bases
        self.base_keys = {}          # (filename, line) or ("dynamic",) -> base id
        self.bases = []              # dicts: label, name, line, shape, dtype, itemsize
        self.view_keys = {}          # (base, offset, shape, strides) -> view id
        self.views = []              # (base, offset_bytes, shape, strides_bytes)
        # accumulated facts
        self.blocks = 0
        self.accesses = 0
        self.truncated = False
        self.bar_min = None
        self.bar_max = 0
        self.race_count = 0
        self.race_per_base = {}
        self.race_kinds = {}
        self.race_examples = []
        self.example_keys = set()
        self.bank = {}               # (base, line, write) -> [warp accesses, sum degree, max degree, extra]
        self.gloads = {}             # code -> loads; code = line * 2 + (0 for A, 1 for B)

    # -- source lines ---------------------------------------------------
    # Reading f_lineno costs a scan of the code's line table on every access,
    # so the hot paths record (code id, f_lasti) instead and the lines are
    # looked up per block. Code id 0 means "the field holds a line already".
    def locate(self, frame):
        """Packed location of `frame` (slow path; registers student code objects)."""
        co = frame.f_code
        cid = self.code_ids.get(co)
        if cid is None:
            with self.lock:
                cid = self.code_ids.get(co)
                if cid is None:
                    cid = 0
                    if self.where_file(co.co_filename) and len(self.code_list) < (1 << CODE_BITS) - 1:
                        self.code_list.append(co)
                        cid = len(self.code_list)
                    self.code_ids[co] = cid
        if cid:
            return (cid << LASTI_BITS) | frame.f_lasti
        line, _ = self.where(frame)
        return max(line, 0)

    def lines_of(self, locs):
        """Source lines (int64 array, -1 unknown) of packed locations."""
        np = self.np
        locs = np.asarray(locs, dtype=np.int64)
        cid = locs >> LASTI_BITS
        low = locs & ((1 << LASTI_BITS) - 1)
        lines = np.where(low > 0, low, -1)
        for c in np.unique(cid[cid > 0]).tolist():
            starts, tlines = self.line_table(c)
            sel = cid == c
            i = np.searchsorted(starts, low[sel], side="right") - 1
            lines[sel] = np.where(i >= 0, tlines[np.maximum(i, 0)], -1)
        return lines

    def line_table(self, cid):
        table = self.line_tables.get(cid)
        if table is None:
            np = self.np
            spans = sorted((start, -1 if line is None else line) for start, _, line in self.code_list[cid - 1].co_lines())
            table = (np.array([a for a, _ in spans], dtype=np.int64), np.array([b for _, b in spans], dtype=np.int64))
            self.line_tables[cid] = table
        return table

    def where(self, frame):
        """(line, atomic) for an access whose nearest caller frame is `frame` (slow path)."""
        atomic = _is_atomic(frame)
        f = frame
        while f is not None:
            if self.where_file(f.f_code.co_filename):
                return f.f_lineno, atomic
            f = f.f_back
        return -1, atomic

    def source(self, line):
        return linecache.getline(self.path, line).strip() if line > 0 else ""

    def where_file(self, name):
        same = self.same_file.get(name)
        if same is None:
            same = self.same_file[name] = os.path.realpath(name) == self.real
        return same

    # -- shared arrays --------------------------------------------------
    def base_for(self, key, line, shape, dtype):
        bid = self.base_keys.get(key)
        if bid is None:
            bid = len(self.bases)
            self.base_keys[key] = bid
            name = None
            if key[0] == "dynamic":
                label = f"dynamic shared memory (shared array #{bid + 1})"
            else:
                m = re.match(r"\s*([A-Za-z_]\w*)\s*=", linecache.getline(key[0], line))
                name = m.group(1) if m else None
                where = f"line {line}" if self.where_file(key[0]) else f"{key[0]}, line {line}"
                label = f"shared array #{bid + 1}, {where}"
                label = f"{name} ({label})" if name else label
            shape = [int(s) for s in shape]
            itemsize = int(dtype.itemsize)
            row_words = (shape[-1] * itemsize) // BANK_BYTES if len(shape) >= 2 else None
            self.bases.append({"id": bid + 1, "label": label, "name": name, "line": line,
                               "shape": shape, "dtype": str(dtype), "itemsize": itemsize,
                               "row_words": row_words})
        return bid

    def view_for(self, base, offset, arr):
        key = (base, int(offset), arr.shape, arr.strides, arr.dtype.str)
        vid = self.view_keys.get(key)
        if vid is None:
            with self.lock:
                vid = self.view_keys.get(key)
                if vid is None:
                    vid = len(self.views)
                    self.views.append((base, int(offset), tuple(arr.shape), tuple(arr.strides), arr.itemsize))
                    self.view_keys[key] = vid
        return vid

    # -- facts ------------------------------------------------------------
    def facts(self, M, K, N, launches, seconds, outputs=None):
        """The run's facts; `outputs`: the elements of C the run wrote, where it ran a sample of the blocks."""
        bank = []
        for (b, line, w), (n, total, mx, extra) in sorted(self.bank.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
            bank.append({"array": self.bases[b]["label"], "line": line, "source": self.source(line),
                         "access": "store" if w else "load", "warp_accesses": n, "max_degree": mx,
                         "mean_degree": round(total / n, 3), "extra_wavefronts": extra})
        outputs = M * N if outputs is None else outputs
        per = {}
        if self.gloads:
            keys = list(self.gloads)
            for key, line in zip(keys, self.lines_of([k >> 1 for k in keys]).tolist()):
                code = line * 2 + (key & 1)
                per[code] = per.get(code, 0) + self.gloads[key]
        self.gloads = per
        nA = sum(v for k, v in self.gloads.items() if k % 2 == 0)
        nB = sum(v for k, v in self.gloads.items() if k % 2 == 1)
        naive = 2 * K

        def ratio(num, den):
            return round(num / den, 4) if den else None
        per_line = [{"array": "AB"[code % 2], "line": code // 2, "loads": n,
                     "per_output": ratio(n, outputs), "source": self.source(code // 2)}
                    for code, n in sorted(self.gloads.items(), key=lambda kv: -kv[1])]
        return {
            "version": 1,
            "shape": {"M": M, "K": K, "N": N},
            "launches": launches,
            "blocks": self.blocks,
            "shared_accesses": self.accesses,
            "truncated": self.truncated,
            "barriers": {"min": self.bar_min or 0, "max": self.bar_max},
            "shared_arrays": self.bases,
            "races": {"count": self.race_count, "capped": self.race_count >= RACE_COUNT_CAP,
                      "per_array": self.race_per_base, "kinds": self.race_kinds,
                      "examples": self.race_examples},
            "bank_conflicts": bank,
            "global_loads": {"A": nA, "B": nB, "outputs": outputs,
                             "loads_per_output": ratio(nA + nB, outputs),
                             "naive_loads_per_output": naive,
                             "reuse": ratio(naive * outputs, nA + nB),
                             "reuse_A": ratio(K * outputs, nA), "reuse_B": ratio(K * outputs, nB),
                             "per_line": per_line},
            "seconds": round(seconds, 3),
        }
