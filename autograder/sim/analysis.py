"""Untrusted side (grading child): turn one simulated block's access logs into races and bank conflicts.

Worked out with NumPy after each block (sim/__init__.py explains the rules).
"""
import itertools

from .common import BANK_BYTES, BANKS, EXAMINED_RACES_PER_BLOCK, MAX_RACE_EXAMPLES, RACE_COUNT_CAP, WARP, RAW, WAR, WAW, LINE_SHIFT


class BlockAnalysis:
    """The per-block half of _Recorder: accumulates races and bank-conflict counts."""

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
