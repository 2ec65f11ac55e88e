"""Instruments for Numba's CUDA simulator: shared-memory races, bank conflicts, data reuse.

The simulator (NUMBA_ENABLE_CUDASIM=1) runs one Python thread per CUDA thread,
one block at a time, and cannot see what a GPU would punish: a tiled kernel
without its second ``cuda.syncthreads()`` is a race whether or not this run's
thread scheduling happens to corrupt C (on a GPU it usually does not), an
unpadded transposed tile gives the right answer 32 times slower, and a
"tiled" kernel that never reads its shared tiles is just the naive kernel. ``run_instrumented`` replays the recorded launches with the
simulator patched so that every shared-memory access and every element load of
A and B is logged, and turns the logs into facts; the ``judge_*`` functions
turn the facts into verdicts with messages for students.

Two halves, two processes:

* ``run_instrumented`` runs in the grading child (autograder/child.py), which
  has set NUMBA_ENABLE_CUDASIM=1 before importing numba. It imports numba
  itself, only when called. All patches are made inside it with context
  managers and are undone when it returns or raises, so a later plain replay
  in the same process runs the unmodified simulator.
* ``judge_races``, ``judge_bank_conflicts`` and ``judge_data_reuse`` run in the
  parent. They are pure functions of the facts dict (plain JSON) and importing
  this module does not import numba or numpy.

How the instruments work
------------------------
* Shared memory: ``FakeCUDAShared.array`` is replaced by a version that
  allocates exactly as the simulator does (one array per declaring source line
  and launch, shared by all threads of the launch) but returns a thin proxy.
  The proxy's ``__getitem__``/``__setitem__`` perform the access on the real
  NumPy array, so values (and therefore C) are exactly what a plain replay
  computes, and append two items to a per-thread list: one int packing source
  line, array view, atomic and write flags, and the index object as given.
  Nothing else happens per access; addresses, epochs and warps are worked out
  with NumPy after the block. ``line`` is the line of the innermost frame whose
  ``co_filename`` is ``job["module_path"]`` (the student file; device
  functions in that file report their own lines). Accesses made by
  ``cuda.atomic.*`` are marked atomic and never count as races.
  Indexing that yields a sub-array (``sA[ty][k]``) returns a proxy of the view,
  so the element access is logged with its true address.
* Barriers: ``BlockThread.syncthreads`` records the position in the thread's
  log; the number of barriers a thread has passed before an access is that
  access's epoch. A block-wide barrier ends the same epoch in every thread, so
  two accesses by different threads can be unordered only when their epochs
  are equal.
* A and B: for the duration of the replay the grader's A and B objects have
  their class switched to a FakeCUDAArray subclass whose ``__getitem__``
  counts scalar element loads per source line (per-thread dicts, bounded
  memory); their identity, data and every other behaviour are unchanged.
* ``BlockManager.run`` is wrapped: after each block has finished, its logs are
  analysed with NumPy and dropped, so memory is bounded by one block's log
  (and each thread stops logging shared accesses after
  ``BLOCK_ACCESS_CAP / threads`` entries; epochs after the first truncation in
  a block are then ignored and ``truncated`` is set).

Races
-----
Within one block, one shared array, one byte address and one epoch: if at
least two different threads touch it and at least one of the accesses is a
(non-atomic) write, that (block, array, epoch, address) is one race. The
missing second barrier is caught this way: the next iteration's store to sA
falls in the same epoch as the other threads' reads of the previous tile
(so it needs a shape with at least two tiles along K).
For the report, one pair of accesses is picked per race (a writer and another
thread, preferring a reader) and its hazard kind is decided by assuming
threads run in lock-step between barriers, which is how a GPU runs them: the
access with the smaller position within its thread's epoch happened first
(write then read: read-after-write; read then write: write-after-read; two
writes: write-after-write). ``count`` stops at RACE_COUNT_CAP and at most
MAX_RACE_EXAMPLES examples are kept.

Bank conflicts
--------------
32 banks of 4-byte words. Lanes are linearised thread indices
(x + y*bx + z*bx*by) in groups of 32 (warps). The i-th access a thread makes
at one (source line, array, load/store) is one warp instruction together with
the i-th access of every other lane of its warp at that key. Its degree is the
largest number of distinct 4-byte words any one bank serves (lanes hitting
the same word are a broadcast and count once); for elements wider than 4
bytes the count is divided by words per element and rounded up, so
consecutive float64 loads count as 1. Reported per (array, line, load/store):
number of warp accesses, max and mean degree, and extra wavefronts
(sum of degree - 1).
Stores are measured and reported but ``judge_bank_conflicts`` judges loads
only: a tiled kernel loads each shared element TILE times for each store, so
loads are what a conflict costs; the stage-4 solution's padded
``sBT[tx, ty]`` store is conflict-free anyway (degree 1), and the unpadded
kernel fails on its 32-way ``sBT[tx, k]`` loads. The judge fails when any
shared-memory load line has mean degree >= 2.

Data reuse
----------
Every scalar element read of A or B inside a kernel is one global load. The
naive kernel loads 2K elements per output element, so
``reuse = 2 * K * M * N / (loads of A + loads of B)``: a TILE-tiled kernel
reaches TILE. Measure it on square sizes that are a multiple of the tile
(the grader uses e.g. 32 x 32 x 32 with TILE = 16): with partial tiles the
masked loads make the number harder to read. ``judge_data_reuse`` passes when
``reuse >= tile * reuse_fraction``.

Facts format (JSON-serialisable dict returned by ``run_instrumented``)
----------------------------------------------------------------------
::

    {
      "version": 1,
      "shape": {"M": int, "K": int, "N": int},
      "launches": [{"kernel": str, "grid": [x, y, z], "block": [x, y, z]}],
      "blocks": int,                      # blocks simulated, all launches
      "shared_accesses": int,             # shared accesses logged
      "truncated": bool,                  # some block hit the access cap
      "barriers": {"min": int, "max": int},  # per thread per block
      "shared_arrays": [{"id": int, "label": str, "name": str | None,
                         "line": int, "shape": [int], "dtype": str,
                         "itemsize": int, "row_words": int | None}],
      "races": {"count": int, "capped": bool,
                "per_array": {label: int},
                "kinds": {"read-after-write": int, ...},   # over examined races
                "examples": [{"array": label, "index": [int], "block": [x, y, z],
                              "epoch": int, "kind": str,
                              "first":  {"thread": [x, y, z], "access": "read"|"write",
                                         "line": int, "source": str},
                              "second": {...}}]},
      "bank_conflicts": [{"array": label, "line": int, "source": str,
                          "access": "load"|"store", "warp_accesses": int,
                          "max_degree": int, "mean_degree": float,
                          "extra_wavefronts": int}],
      "global_loads": {"A": int, "B": int, "outputs": int,
                       "loads_per_output": float | None,
                       "naive_loads_per_output": int,
                       "reuse": float | None, "reuse_A": float | None,
                       "reuse_B": float | None,
                       "per_line": [{"array": "A"|"B", "line": int, "loads": int,
                                     "per_output": float, "source": str}]},
      "seconds": float
    }
"""
import contextlib
import gc
import itertools
import linecache
import os
import re
import sys
import threading
import time

BANKS = 32
BANK_BYTES = 4
WARP = 32
BLOCK_ACCESS_CAP = 2_000_000      # shared accesses logged per block, all threads together (~300 MB)
RACE_COUNT_CAP = 1_000_000        # races counted before counting stops
MAX_RACE_EXAMPLES = 8             # race examples kept in the facts
EXAMINED_RACES_PER_BLOCK = 64     # racy addresses per block whose access pair is classified
LINE_SHIFT = 24                   # log code = location << LINE_SHIFT | view << 2 | atomic << 1 | write
LASTI_BITS = 20                   # location = code id << LASTI_BITS | f_lasti  (or a line, code id 0)
CODE_BITS = 18

RAW, WAR, WAW = "read-after-write", "write-after-read", "write-after-write"

_KERNELAPI_SUFFIX = ("kernelapi.py",)


# ---------------------------------------------------------------------------
# Recording side (grading child only)
# ---------------------------------------------------------------------------

@contextlib.contextmanager
def _patched(obj, attr, value):
    """Set obj.attr = value for the duration of the block."""
    had = attr in vars(obj)
    old = vars(obj).get(attr)
    setattr(obj, attr, value)
    try:
        yield
    finally:
        if had:
            setattr(obj, attr, old)
        else:
            delattr(obj, attr)


@contextlib.contextmanager
def _class_swapped(objs, cls_by_obj):
    """Switch the class of each object (FakeCUDAArray -> counting subclass) and back."""
    old = [(o, o.__class__) for o in objs]
    try:
        for o in objs:
            o.__class__ = cls_by_obj[id(o)]
        yield
    finally:
        for o, c in old:
            o.__class__ = c


class _Sink:
    """Stands in for a thread's log once it is full."""
    __slots__ = ()

    def append(self, item):
        pass

    def extend(self, items):
        pass

    def __len__(self):
        return 0


class _Recorder:
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
        self.tls = threading.local()
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

    # -- per-block analysis ---------------------------------------------
    def finish_block(self, grid_point):
        np = self.np
        threads = self.threads
        self.blocks += 1
        for t in threads:
            for code, n in t._si_gl.items():
                self.gloads[code] = self.gloads.get(code, 0) + n
        for t in threads:
            nb = len(t._si_bar)
            self.bar_min = nb if self.bar_min is None else min(self.bar_min, nb)
            self.bar_max = max(self.bar_max, nb)
        logs = [t._si_log for t in threads]
        lens = np.array([len(l) >> 1 for l in logs], dtype=np.int64)
        total = int(lens.sum())
        if total == 0:
            return
        self.accesses += total
        limit = min((t._si_trunc for t in threads if t._si_trunc is not None), default=None)
        if limit is not None:
            self.truncated = True

        nthr = len(threads)
        tindex = np.repeat(np.arange(nthr, dtype=np.int64), lens)
        tid = np.array([t.thread_id for t in threads], dtype=np.int64)[tindex]
        starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
        seq = np.arange(total, dtype=np.int64) - starts[tindex]
        # epoch of an access = barriers its thread passed before it; estart = its position at the last one
        nbars = np.array([len(t._si_bar) for t in threads], dtype=np.int64)
        barpos = np.array([p for t in threads for p in t._si_bar], dtype=np.int64)
        span = int(lens.max()) + 2
        bkey = np.repeat(np.arange(nthr, dtype=np.int64), nbars) * span + barpos
        pos = np.searchsorted(bkey, tindex * span + seq, side="right")
        before = np.concatenate(([0], np.cumsum(nbars)[:-1]))[tindex]
        epoch = pos - before
        estart = np.where(epoch > 0, barpos[np.maximum(pos - 1, 0)] if barpos.size else 0, 0)
        flat = list(itertools.chain.from_iterable(logs))
        codes = np.fromiter(flat[0::2], np.int64, total)
        idxs = flat[1::2]
        del flat
        lines = self.lines_of(codes >> LINE_SHIFT)
        vids = (codes & ((1 << LINE_SHIFT) - 1)) >> 2
        kinds = codes & 3
        vid_set = set(np.flatnonzero(np.bincount(vids)).tolist())

        # byte address of every access; odd indices (slices, partial indices) expand to extra rows
        addr = np.empty(total, dtype=np.int64)
        fast = np.ones(total, dtype=bool)
        extra_rows, extra_addrs = [], []
        uniform = self._uniform_addresses(vid_set, vids, idxs)
        if uniform is not None:
            addr, vid_set = uniform, ()
        for vid in sorted(vid_set):
            sel = np.arange(total) if len(vid_set) == 1 else np.flatnonzero(vids == vid)
            r, a = self._addresses(int(vid), sel, idxs)
            if r is sel:
                addr[sel] = a
            else:
                fast[sel] = False
                extra_rows.append(r)
                extra_addrs.append(a)
        cols = {"tid": tid, "seq": seq, "epoch": epoch, "ord": seq - estart, "kind": kinds, "line": lines,
                "addr": addr, "vid": vids, "tindex": tindex}
        if extra_rows or limit is not None:
            row = np.concatenate([np.flatnonzero(fast)] + extra_rows)
            cols["addr"] = np.concatenate([addr[fast]] + extra_addrs)
            if limit is not None:
                keep = epoch[row] < limit
                row, cols["addr"] = row[keep], cols["addr"][keep]
            if row.size == 0:
                return
            order = np.argsort(row, kind="stable")   # back in per-thread log order
            row, cols["addr"] = row[order], cols["addr"][order]
            for k in cols:
                if k != "addr":
                    cols[k] = cols[k][row]
        cols["base"] = np.array([v[0] for v in self.views], dtype=np.int64)[cols["vid"]]
        self._races(cols, grid_point, threads)
        self._banks(cols)

    def _uniform_addresses(self, vid_set, vids, idxs):
        """All byte addresses at once when every view has one ndim and every index is plain ints."""
        np = self.np
        ndims = {len(self.views[v][2]) for v in vid_set}
        if len(ndims) != 1:
            return None
        ndim = ndims.pop()
        n = len(idxs)
        try:
            if ndim == 1:
                ix = np.fromiter(idxs, np.int64, n)[:, None]
            else:
                if set(map(len, idxs)) != {ndim}:
                    return None
                ix = np.fromiter(itertools.chain.from_iterable(idxs), np.int64, n * ndim).reshape(n, ndim)
        except (TypeError, ValueError, OverflowError):
            return None
        nv = len(self.views)
        shape = np.ones((nv, ndim), np.int64)
        strides = np.zeros((nv, ndim), np.int64)
        offset = np.zeros(nv, np.int64)
        for v in vid_set:
            _, offset[v], shape[v], strides[v], _ = self.views[v]
        return offset[vids] + ((ix % shape[vids]) * strides[vids]).sum(axis=1)

    def _addresses(self, vid, sel, idxs):
        """Byte addresses (relative to the base array) of the accesses `sel` through view `vid`."""
        np = self.np
        _, offset, shape, strides, _ = self.views[vid]
        ndim = len(shape)
        lst = idxs if sel.size == len(idxs) else [idxs[i] for i in sel]
        n = len(lst)
        try:   # fast path: every index is an int (1-D) or a tuple of ndim ints
            if ndim == 1:
                ix = np.fromiter(lst, np.int64, n)[:, None]
            else:
                if set(map(len, lst)) != {ndim}:
                    raise ValueError
                ix = np.fromiter(itertools.chain.from_iterable(lst), np.int64, n * ndim).reshape(n, ndim)
        except (TypeError, ValueError, OverflowError):
            table = offset + sum(np.indices(shape, dtype=np.int64)[d] * strides[d] for d in range(ndim)) \
                if ndim else np.array(offset)
            rows, addrs = [], []
            for i, idx in zip(sel, lst):
                try:
                    a = np.asarray(table[idx]).ravel()
                except Exception:
                    continue
                rows.append(np.full(a.size, i, dtype=np.int64))
                addrs.append(a.astype(np.int64))
            if not rows:
                return np.empty(0, np.int64), np.empty(0, np.int64)
            return np.concatenate(rows), np.concatenate(addrs)
        ix %= np.array(shape, dtype=np.int64)   # numpy already rejected out-of-range; this wraps negatives
        return sel, offset + ix @ np.array(strides, dtype=np.int64)

    def _races(self, c, grid_point, threads):
        np = self.np
        ok = (c["kind"] & 2) == 0                 # atomics never race
        if not ok.any():
            return
        sub = c if ok.all() else {k: v[ok] for k, v in c.items()}
        # sort by (array, epoch, address, thread): a group of equal (array, epoch, address) is one
        # candidate; it races when it holds a write and at least two distinct threads
        key = _mix(np, sub["base"], sub["epoch"], sub["addr"])
        order = np.argsort(_mix(np, key, sub["tid"]), kind="stable")
        ks, ts = key[order], sub["tid"][order]
        newk = np.ones(ks.size, dtype=bool)
        newk[1:] = ks[1:] != ks[:-1]
        newp = newk.copy()
        newp[1:] |= ts[1:] != ts[:-1]
        starts = np.flatnonzero(newk)
        ends = np.append(starts[1:], ks.size)
        nthreads = np.add.reduceat(newp.astype(np.int64), starts)
        nwrites = np.add.reduceat(sub["kind"][order] & 1, starts)
        racy = np.flatnonzero((nwrites > 0) & (nthreads >= 2))
        if racy.size == 0:
            return
        self.race_count = min(RACE_COUNT_CAP, self.race_count + int(racy.size))
        for b, n in zip(*np.unique(sub["base"][order[starts[racy]]], return_counts=True)):
            label = self.bases[int(b)]["label"]
            self.race_per_base[label] = min(RACE_COUNT_CAP, self.race_per_base.get(label, 0) + int(n))
        # classify a few races and keep examples (one per array, kind and pair of lines)
        by_tid = {t.thread_id: t for t in threads}
        for g in racy[:EXAMINED_RACES_PER_BLOCK]:
            lo, hi = int(starts[g]), int(ends[g])
            acc = [{"tid": int(sub["tid"][i]), "write": bool(sub["kind"][i] & 1), "ord": int(sub["ord"][i]),
                    "line": int(sub["line"][i])} for i in order[lo:hi]]
            lo = int(order[lo])
            a = next(x for x in acc if x["write"])
            others = [x for x in acc if x["tid"] != a["tid"]]
            b = next((x for x in others if not x["write"]), others[0])
            if b["write"]:
                kind, first, second = WAW, a, b
            elif a["ord"] <= b["ord"]:
                kind, first, second = RAW, a, b
            else:
                kind, first, second = WAR, b, a
            self.race_kinds[kind] = self.race_kinds.get(kind, 0) + 1
            bid = int(sub["base"][lo])
            ex_key = (bid, kind, first["line"], second["line"])
            if len(self.race_examples) >= MAX_RACE_EXAMPLES or ex_key in self.example_keys:
                continue
            self.example_keys.add(ex_key)
            info = self.bases[bid]
            byte = int(sub["addr"][lo])
            if info["name"] is None and info["label"].startswith("dynamic"):
                index = [byte]
            else:
                index = [int(i) for i in np.unravel_index(byte // info["itemsize"], info["shape"])]

            def side(x):
                t = by_tid[x["tid"]]
                return {"thread": [int(v) for v in t.threadIdx], "access": "write" if x["write"] else "read",
                        "line": x["line"], "source": self.source(x["line"])}
            self.race_examples.append({"array": info["label"], "index": index,
                                       "block": [int(v) for v in grid_point] + [0] * (3 - len(grid_point)),
                                       "epoch": int(sub["epoch"][lo]), "kind": kind,
                                       "first": side(first), "second": side(second)})

    def _banks(self, c):
        np = self.np
        write = c["kind"] & 1
        code = _compact(np, c["line"], c["base"], write)
        ncode = int(code.max()) + 1
        code_line = np.zeros(ncode, np.int64)
        code_base = np.zeros(ncode, np.int64)
        code_write = np.zeros(ncode, np.int64)
        code_line[code], code_base[code], code_write[code] = c["line"], c["base"], write
        tid = c["tid"]
        # ordinal of each access among its thread's accesses with the same code
        # (columns are in per-thread log order, so a stable sort by (thread, code) keeps program order)
        order = np.argsort(c["tindex"] * ncode + code, kind="stable")
        st, sc = tid[order], code[order]
        new = np.ones(order.size, dtype=bool)
        new[1:] = (st[1:] != st[:-1]) | (sc[1:] != sc[:-1])
        gstart = np.maximum.accumulate(np.where(new, np.arange(order.size), 0))
        ordinal = np.empty(order.size, np.int64)
        ordinal[order] = np.arange(order.size) - gstart
        group = _compact(np, code, tid // WARP, ordinal)
        ngroup = int(group.max()) + 1
        # words touched: wide elements touch several 4-byte words
        itemsize = np.array([v[4] for v in self.views], np.int64)[c["vid"]]
        nwords = np.maximum(1, itemsize // BANK_BYTES)
        word = c["addr"] // BANK_BYTES
        g_rep, w_rep = group, word
        if (nwords > 1).any():
            reps = nwords
            g_rep = np.repeat(group, reps)
            w_rep = np.repeat(word, reps) + (np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps))
        uniq = _sorted_unique(np, g_rep * (1 << 32) + w_rep)
        ug = uniq >> 32
        bank = (uniq & 0xFFFFFFFF) % BANKS
        per_bank = np.bincount(ug * BANKS + bank, minlength=ngroup * BANKS).reshape(ngroup, BANKS)
        raw = per_bank.max(axis=1)
        g_words = np.ones(ngroup, np.int64)
        g_words[group] = nwords
        degree = -(-raw // g_words)
        g_code = np.zeros(ngroup, np.int64)
        g_code[group] = code
        n = np.bincount(g_code, minlength=ncode)
        total = np.bincount(g_code, weights=degree, minlength=ncode)
        mx = np.zeros(ncode, np.int64)
        np.maximum.at(mx, g_code, degree)
        for k in range(ncode):
            if n[k] == 0:
                continue
            key = (int(code_base[k]), int(code_line[k]), int(code_write[k]))
            acc = self.bank.setdefault(key, [0, 0.0, 0, 0])
            acc[0] += int(n[k])
            acc[1] += float(total[k])
            acc[2] = max(acc[2], int(mx[k]))
            acc[3] += int(round(total[k])) - int(n[k])

    # -- facts ------------------------------------------------------------
    def facts(self, M, K, N, launches, seconds):
        bank = []
        for (b, line, w), (n, total, mx, extra) in sorted(self.bank.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
            bank.append({"array": self.bases[b]["label"], "line": line, "source": self.source(line),
                         "access": "store" if w else "load", "warp_accesses": n, "max_degree": mx,
                         "mean_degree": round(total / n, 3), "extra_wavefronts": extra})
        outputs = M * N
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


_ATOMIC_NAMES = frozenset({"add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min",
                           "nanmax", "nanmin", "compare_and_swap", "cas"})


def _mix(np, *cols):
    """One int64 per row that sorts like the rows of the given integer columns (lexicographic)."""
    key, kspan = None, 1
    for c in cols:
        c = np.asarray(c, dtype=np.int64)
        lo = int(c.min()) if c.size else 0
        span = (int(c.max()) - lo + 1) if c.size else 1
        if key is None:
            key, kspan = c - lo, span
            continue
        if kspan * span >= 1 << 62:   # too wide: replace the key so far by its rank
            key = np.unique(key, return_inverse=True)[1].ravel().astype(np.int64)
            kspan = int(key.max()) + 1 if key.size else 1
        key = key * span + (c - lo)
        kspan *= span
    return key


def _sorted_unique(np, a):
    a = np.sort(a)
    if a.size:
        a = a[np.concatenate(([True], a[1:] != a[:-1]))]
    return a


def _compact(np, *cols):
    """Dense ids 0..n-1 for the distinct rows of the given integer columns."""
    return np.unique(_mix(np, *cols), return_inverse=True)[1].ravel().astype(np.int64)


def _is_atomic(frame):
    """True when the access is made by the simulator's cuda.atomic implementation."""
    return frame.f_code.co_filename.endswith(_KERNELAPI_SUFFIX) and frame.f_code.co_name in _ATOMIC_NAMES


def _make_shared_proxy(rec):
    """The proxy class returned by the patched cuda.shared.array."""
    import numpy as np
    getframe = sys._getframe
    tls = rec.tls
    code_ids = rec.code_ids
    locate = rec.locate
    atomic = _is_atomic
    ndarray = np.ndarray

    def full(log):
        t = threading.current_thread()
        t._si_trunc = len(t._si_bar)
        tls.log = _Sink()

    class SharedArray:
        """A shared array as a kernel sees it; logs each element access."""
        __slots__ = ("_a", "_code", "_base", "_ptr", "_vc")

        def __init__(self, a, vid, base, ptr):
            self._a, self._code, self._base, self._ptr, self._vc = a, vid << 2, base, ptr, {}

        def _view(self, idx, r):
            """Proxy for a sub-array (sA[ty] in sA[ty][k]); cached per index, the memory never moves."""
            try:
                return self._vc[idx]
            except (KeyError, TypeError):
                pass
            off = r.__array_interface__["data"][0] - self._ptr
            v = SharedArray(r, rec.view_for(self._base, off, r), self._base, self._ptr)
            try:
                self._vc[idx] = v
            except TypeError:   # unhashable index (a slice): no caching
                pass
            return v

        # The log of a thread is flat: code, index, code, index, ... with
        # code = line << LINE_SHIFT | view << 2 | atomic << 1 | write.
        def __getitem__(self, idx):
            r = self._a[idx]
            if type(r) is ndarray:
                return self._view(idx, r)
            f = getframe(1)
            cid = code_ids.get(f.f_code)
            if cid:
                code = (((cid << LASTI_BITS) | f.f_lasti) << LINE_SHIFT) + self._code
            else:
                code = (locate(f) << LINE_SHIFT) + self._code + (2 if atomic(f) else 0)
            log = tls.log
            log.append(code)
            log.append(idx)
            if len(log) >= rec.thread_cap:
                full(log)
            return r

        def __setitem__(self, idx, val):
            f = getframe(1)
            cid = code_ids.get(f.f_code)
            if cid:
                code = (((cid << LASTI_BITS) | f.f_lasti) << LINE_SHIFT) + self._code + 1
            else:
                code = (locate(f) << LINE_SHIFT) + self._code + (3 if atomic(f) else 1)
            self._a[idx] = val
            log = tls.log
            log.append(code)
            log.append(idx)
            if len(log) >= rec.thread_cap:
                full(log)

        def __len__(self):
            return len(self._a)

        def __iter__(self):
            for i in range(len(self._a)):
                yield self[i]

        def __array__(self, dtype=None, copy=None):
            return self._a if dtype is None else self._a.astype(dtype)

        def __getattr__(self, name):
            return getattr(self._a, name)

        def __repr__(self):
            return f"SharedArray({self._a!r})"

    return SharedArray


def _make_counting_array(base_cls, code, rec):
    """FakeCUDAArray subclass that counts scalar element loads per source line."""
    import numpy as np
    getframe = sys._getframe
    tls = rec.tls
    code_ids = rec.code_ids
    locate = rec.locate
    ndarray = np.ndarray

    class CountingArray(base_cls):
        def __getitem__(self, idx):
            ret = self._ary[idx]
            if type(ret) is ndarray:             # a view: count its element loads later
                return CountingArray(ret, stream=self.stream)
            if type(ret) is np.void:
                return ret
            f = getframe(2)     # 1: FakeWithinKernelCUDAArray.__getitem__, 2: the kernel
            cid = code_ids.get(f.f_code)
            key = ((((cid << LASTI_BITS) | f.f_lasti) if cid else locate(getframe(1))) << 1) + code
            gl = tls.gl
            gl[key] = gl.get(key, 0) + 1
            return ret

    CountingArray.__name__ = base_cls.__name__
    CountingArray.__qualname__ = base_cls.__qualname__
    return CountingArray


def run_instrumented(launches, A, B, C, job) -> dict:
    """Replay `launches` in the simulator with instruments on; return JSON-serialisable facts.

    `launches` are the recorded (name, kernel, config, args) tuples of
    autograder.launches; each runs as ``kernel[config](*args)`` exactly as
    ``replay`` would, so C ends up as a plain replay leaves it. A and B are
    the grader's device arrays (their element loads are counted), C the
    output. ``job["module_path"]`` is the student's file; access lines are
    reported from frames in that file. For the data-reuse figure use square
    sizes that are a multiple of the tile (e.g. 32 x 32 x 32 with TILE 16).
    """
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi as sim_api
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    from numba.core import types as nb_types
    from numba.np import numpy_support
    import numpy as np

    for name, kern, _, _ in launches:
        if not isinstance(kern, sim_kernel.FakeCUDAKernel):
            raise RuntimeError(f"run_instrumented needs Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 set before "
                               f"numba is imported); {name} is a {type(kern).__name__}")
    started = time.perf_counter()
    code_files = [getattr(getattr(getattr(k, "py_func", None), "__code__", None), "co_filename", "")
                  for _, k, _, _ in launches]
    rec = _Recorder(job["module_path"], code_files)
    SharedArray = _make_shared_proxy(rec)
    BlockThread, BlockManager = sim_kernel.BlockThread, sim_kernel.BlockManager
    orig_init, orig_run = BlockThread.__init__, BlockThread.run
    orig_sync, orig_block = BlockThread.syncthreads, BlockManager.run
    alloc_lock = threading.Lock()

    def shared_array(self, shape, dtype):
        if isinstance(dtype, nb_types.Type):
            dtype = numpy_support.as_dtype(dtype)
        dtype = np.dtype(dtype)
        caller = sys._getframe(1)
        with alloc_lock:
            proxies = self.__dict__.setdefault("_si_proxies", {})
            if shape == 0:   # dynamic shared memory: every such array aliases one buffer
                key = ("dynamic", dtype.str)
                proxy = proxies.get(key)
                if proxy is None:
                    count = self._dynshared_size // dtype.itemsize
                    arr = np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
                    bid = rec.base_for(("dynamic",), caller.f_lineno, (self._dynshared_size,), np.dtype(np.uint8))
                    ptr = self._dynshared.__array_interface__["data"][0]
                    proxy = SharedArray(arr, rec.view_for(bid, 0, arr), bid, ptr)
                    proxies[key] = proxy
                return proxy
            key = (caller.f_code.co_filename, caller.f_lineno)
            proxy = proxies.get(key)
            if proxy is None:
                arr = self._allocations.get(key)
                if arr is None:
                    arr = np.empty(shape, dtype)
                    self._allocations[key] = arr
                bid = rec.base_for(key, caller.f_lineno, arr.shape, arr.dtype)
                proxy = SharedArray(arr, rec.view_for(bid, 0, arr), bid, arr.__array_interface__["data"][0])
                proxies[key] = proxy
            return proxy

    def thread_init(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        self._si_log, self._si_bar, self._si_gl, self._si_trunc = [], [], {}, None
        rec.threads.append(self)

    def thread_run(self):
        rec.tls.log, rec.tls.gl = self._si_log, self._si_gl
        orig_run(self)

    def syncthreads(self):
        self._si_bar.append(len(self._si_log) >> 1)
        return orig_sync(self)

    def block_run(self, grid_point, *args):
        rec.threads = []
        nthreads = int(np.prod(self._block_dim))
        rec.thread_cap = 2 * max(1, BLOCK_ACCESS_CAP // max(1, nthreads))   # two log items per access
        try:
            result = orig_block(self, grid_point, *args)
            rec.finish_block(grid_point)
            return result
        finally:
            rec.threads = []
            if gc_was_enabled:
                gc.collect(1)   # the block's cyclic garbage (threads), without a full collection

    counting = {}
    for obj, code in ((A, 0), (B, 1)):
        if isinstance(obj, FakeCUDAArray) and id(obj) not in counting:
            counting[id(obj)] = _make_counting_array(type(obj), code, rec)
    swapped = [o for o in (A, B) if id(o) in counting]
    if len(swapped) == 2 and swapped[0] is swapped[1]:
        swapped = swapped[:1]

    run_launches = []
    # The logs hold hundreds of thousands of small tuples; with the collector on, its full
    # collections walk them again and again (measured: +25% run time). It is off during the
    # replay and collects the young generations after each block instead.
    gc_was_enabled = gc.isenabled()
    with contextlib.ExitStack() as stack:
        if gc_was_enabled:
            gc.disable()
            stack.callback(gc.enable)
        stack.enter_context(_patched(sim_api.FakeCUDAShared, "array", shared_array))
        stack.enter_context(_patched(BlockThread, "__init__", thread_init))
        stack.enter_context(_patched(BlockThread, "run", thread_run))
        stack.enter_context(_patched(BlockThread, "syncthreads", syncthreads))
        stack.enter_context(_patched(BlockManager, "run", block_run))
        stack.enter_context(_class_swapped(swapped, counting))
        for name, kern, config, args in launches:
            configured = kern[config]
            run_launches.append({"kernel": name,
                                 "grid": [int(v) for v in getattr(configured, "grid_dim", None) or ()],
                                 "block": [int(v) for v in getattr(configured, "block_dim", None) or ()]})
            configured(*args)
    M, K = (int(v) for v in A.shape)
    N = int(B.shape[1])
    return rec.facts(M, K, N, run_launches, time.perf_counter() - started)


# ---------------------------------------------------------------------------
# Judging side (parent process: pure functions of the facts, no numba)
# ---------------------------------------------------------------------------

def _missing(facts, key):
    if not isinstance(facts, dict) or key not in facts:
        return True, "the instrumented run produced no facts (the kernel did not run to the end)"
    return False, ""


def _thread(t):
    return "(" + ", ".join(str(v) for v in t) + ")"


def _at(side):
    src = f" (`{side['source']}`)" if side.get("source") else ""
    return f"line {side['line']}{src}"


def _nth(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _epoch_words(e):
    if e == 0:
        return "both before the first cuda.syncthreads()"
    return f"both after each thread's {_nth(e)} cuda.syncthreads() and before its next one"


def judge_races(facts):
    """(passed, message): fail when two threads of a block touch one shared element unordered."""
    missing, msg = _missing(facts, "races")
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
    verb = {"read": "reads", "write": "writes"}
    more = "+" if races.get("capped") else ""
    n = races["count"]
    msg = (f"shared-memory race ({kind}) on {ex['array']}, element {ex['index']} in block "
           f"{_thread(ex['block'])}: thread {_thread(first['thread'])} {verb[first['access']]} it at "
           f"{_at(first)} and thread {_thread(second['thread'])} {verb[second['access']]} it at "
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
    others = [e for e in races["examples"][1:] if (e["array"], e["kind"]) != (ex["array"], kind)]
    if others:
        o = others[0]
        msg += (f" Also: {o['kind']} on {o['array']} between {_at(o['first'])} and {_at(o['second'])}"
                f" (threads {_thread(o['first']['thread'])} and {_thread(o['second']['thread'])}).")
    return False, msg


def judge_bank_conflicts(facts):
    """(passed, message): fail when a shared-memory load line has mean conflict degree >= 2.

    Stores are reported but not judged (see the module docstring)."""
    missing, msg = _missing(facts, "bank_conflicts")
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


def judge_data_reuse(facts, tile, reuse_fraction=0.5):
    """(passed, message): reuse = 2K / (global loads per output) must reach tile * reuse_fraction.

    Meaningful on square sizes that are a multiple of the tile (see module docstring)."""
    missing, msg = _missing(facts, "global_loads")
    if missing:
        return False, msg
    g = facts["global_loads"]
    need = tile * reuse_fraction
    K = facts.get("shape", {}).get("K", g["naive_loads_per_output"] // 2)
    if not g.get("A", 0) + g.get("B", 0):
        return True, "no element of A or B was read inside the kernel, so there is no global-memory traffic to reuse"
    reuse = g["reuse"]
    naive = g["naive_loads_per_output"]
    ideal = naive / tile
    head = (f"each output element costs {g['loads_per_output']:g} loads of A and B from global memory "
            f"(the naive kernel loads 2K = {naive}, a kernel tiled by {tile} loads 2K/TILE = {ideal:g}): "
            f"every loaded element is used {reuse:g} time{'' if reuse == 1 else 's'}")
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
