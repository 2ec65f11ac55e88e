"""Untrusted side (grading child): one simulated block's access logs as columns, counted by conflicts.py.

Worked out with NumPy after each block (sim/__init__.py explains the rules).
"""
import itertools

from .common import LINE_SHIFT
from .conflicts import ConflictAnalysis


class BlockAnalysis(ConflictAnalysis):
    """The per-block half of _Recorder: one block's logs as columns (thread, epoch, address, ...), which
    ConflictAnalysis turns into races and bank-conflict counts."""

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
