"""Untrusted side (grading child): races and bank conflicts of one simulated block, from its accesses as columns.

analysis.py (BlockAnalysis) builds the columns from the block's logs; this part judges nothing, it only counts.
"""
from .common import BANK_BYTES, BANKS, EXAMINED_RACES_PER_BLOCK, MAX_RACE_EXAMPLES, RACE_COUNT_CAP, WARP, RAW, WAR, WAW


class ConflictAnalysis:
    """Races and bank-conflict counts of one block's access columns, accumulated on the recorder."""

    def _races(self, c, grid_point, threads):
        np = self.np
        if c["tid"].size == 0:
            return
        # sort by (array, epoch, address, thread): a group of equal (array, epoch, address) is one candidate. It
        # races when two different threads touch it, not both atomically, and one of the two writes: a plain
        # write against anything another thread does there, or an atomic update (cuda.atomic.*, which writes)
        # against another thread's plain read. Two atomics never race with each other.
        key = _mix(np, c["base"], c["epoch"], c["addr"])
        order = np.argsort(_mix(np, key, c["tid"]), kind="stable")
        ks, ts, kind = key[order], c["tid"][order], c["kind"][order]
        newk = np.ones(ks.size, dtype=bool)
        newk[1:] = ks[1:] != ks[:-1]
        newp = newk.copy()
        newp[1:] |= ts[1:] != ts[:-1]
        starts = np.flatnonzero(newk)
        ends = np.append(starts[1:], ks.size)
        nthreads = np.add.reduceat(newp.astype(np.int64), starts)
        plain_writes = np.add.reduceat((kind == 1).astype(np.int64), starts)
        atomic_writes = np.add.reduceat((kind == 3).astype(np.int64), starts)
        plain = np.add.reduceat((kind < 2).astype(np.int64), starts)
        racy = (nthreads >= 2) & (plain_writes > 0)
        maybe = ~racy & (atomic_writes > 0) & (plain > 0)
        if maybe.any():   # distinct threads among the atomic writes and plain reads of those groups
            group = np.cumsum(newk) - 1
            rows = np.flatnonzero(maybe[group] & (kind != 2))
            first = np.ones(rows.size, dtype=bool)
            first[1:] = (ks[rows][1:] != ks[rows][:-1]) | (ts[rows][1:] != ts[rows][:-1])
            pair = np.bincount(group[rows], weights=first, minlength=starts.size)
            racy |= maybe & (pair >= 2)
        racy = np.flatnonzero(racy)
        if racy.size == 0:
            return
        self.race_count = min(RACE_COUNT_CAP, self.race_count + int(racy.size))
        for b, n in zip(*np.unique(c["base"][order[starts[racy]]], return_counts=True)):
            label = self.bases[int(b)]["label"]
            self.race_per_base[label] = min(RACE_COUNT_CAP, self.race_per_base.get(label, 0) + int(n))
        # classify a few races and keep examples (one per array, kind and pair of lines)
        by_tid = {t.thread_id: t for t in threads}
        for g in racy[:EXAMINED_RACES_PER_BLOCK]:
            lo, hi = int(starts[g]), int(ends[g])
            acc = [{"tid": int(c["tid"][i]), "write": bool(c["kind"][i] & 1), "atomic": bool(c["kind"][i] & 2),
                    "ord": int(c["ord"][i]), "line": int(c["line"][i])} for i in order[lo:hi]]
            lo = int(order[lo])
            a, b = _race_pair(acc)
            if b["write"]:
                kind, first, second = WAW, a, b
            elif a["ord"] <= b["ord"]:
                kind, first, second = RAW, a, b
            else:
                kind, first, second = WAR, b, a
            self.race_kinds[kind] = self.race_kinds.get(kind, 0) + 1
            bid = int(c["base"][lo])
            ex_key = (bid, kind, first["line"], second["line"])
            if len(self.race_examples) >= MAX_RACE_EXAMPLES or ex_key in self.example_keys:
                continue
            self.example_keys.add(ex_key)
            info = self.bases[bid]
            byte = int(c["addr"][lo])
            if info["name"] is None and info["label"].startswith("dynamic"):
                index = [byte]
            else:
                index = [int(i) for i in np.unravel_index(byte // info["itemsize"], info["shape"])]

            def side(x):
                t = by_tid[x["tid"]]
                return {"thread": [int(v) for v in t.threadIdx], "access": "write" if x["write"] else "read",
                        "atomic": x["atomic"], "line": x["line"], "source": self.source(x["line"])}
            self.race_examples.append({"array": info["label"], "index": index,
                                       "block": [int(v) for v in grid_point] + [0] * (3 - len(grid_point)),
                                       "epoch": int(c["epoch"][lo]), "kind": kind,
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


def _race_pair(acc):
    """(a, b): two accesses of one racy (array, epoch, address) group by different threads, not both atomic, `a` a
    write: a plain write and, by preference, another thread's read; else an atomic update and another thread's plain
    read."""
    writes = [x for x in acc if x["write"] and not x["atomic"]]
    if writes:
        a = writes[0]
        others = [x for x in acc if x["tid"] != a["tid"]]
        return a, next((x for x in others if not x["write"]), others[0])
    atomics = [x for x in acc if x["write"] and x["atomic"]]
    reads = [x for x in acc if not x["atomic"]]
    a = next((x for x in atomics if x["tid"] != reads[0]["tid"]), None)
    if a is not None:
        return a, reads[0]
    return atomics[0], next(x for x in reads if x["tid"] != atomics[0]["tid"])


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
