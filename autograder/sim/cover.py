"""Untrusted side (grading child): in a sampled run, the blocks of a cheap launch that write the parts of C the drawn
points stand for (engine/sampling.parts), where its drawn blocks did not.

A split-K kernel zeroes C in a launch of its own, then adds into it. The grader draws points of C and runs, in every
launch, the block whose share of C holds them; a zeroing launch laid over C otherwise (a flat 1-D grid, a transposed
or a grid-stride one) holds them in other blocks, and the blocks that add would read elements no simulated block
zeroed. Running such a launch whole is out of reach (four million simulated threads at the timed size), so its
blocks are found from what they write: block 0 and one block along each axis of the grid run first, and where each
writes the pattern of block 0 shifted (in C's row-major or column-major order), the blocks whose shifted pattern
holds a needed element run too.

Only a cheap launch is covered, judged from what the run measured and never from anything the kernel declares: its
drawn blocks, and every block run for it, read no element of A or B and no shared memory; and the blocks found cost
at most the job's cover steps (a block of 256 threads one step, plus one per 1024 elements it writes). A product
launch is never covered: it is judged on its drawn blocks as before. What the cover blocks left in C is not judged
(the drawn blocks' product is) and is not part of the blocks' footprint (checks/data_reuse.footprint_reuse)."""
from .writes import GID_MASK, LAUNCH_SHIFT

AXES = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
MAX_BLOCKS = 1 << 22  # a grid with more blocks is not searched (one block per element of C at the timed size)


class Cover:
    """The cover of one sampled run: the needed elements, each launch's budget, and the blocks run for each."""

    def __init__(self, job, log, rec, np):
        self.np, self.log, self.rec = np, log, rec
        cover = job.get("cover") or {}
        M, N = log.shape
        rows = [np.arange(r0, r1)[:, None] * N + np.arange(c0, c1)[None, :] for r0, r1, c0, c1 in cover.get("parts", ())
                if 0 <= r0 < r1 <= M and 0 <= c0 < c1 <= N]
        self.needed = np.unique(np.concatenate([r.ravel() for r in rows])) if rows else np.zeros(0, np.int64)
        self.budget = [float(v) for v in cover.get("steps", ())]
        self.run = {}     # plan index -> {block: True} run for the cover (its probes included)
        self.notes = []   # {"launch", "kernel", "blocks", "why"}: each cheap launch that needed a cover

    def work(self):
        """(global loads, shared-memory accesses) so far: a block that adds to either is not cheap."""
        return sum(self.rec.gloads.values()), self.rec.accesses

    def launch(self, i, name, grid, block, run_block, drawn, first, before):
        """After the `drawn` blocks of launch i (plan index; `first`: the log's launch number before it, `before`:
        work() before it) ran: where they were cheap and left needed elements unwritten, run the blocks that write
        them (run_block(b) runs block b). Notes the blocks run and, where it could not run them all, why."""
        if not self.needed.size or self.work() != before or self.log.launch <= first:
            return   # nothing needed, a launch that loads or shares (a product), or one that touched no C
        todo = self.needed[(self.stamps()[self.needed] >> LAUNCH_SHIFT) <= first]
        if not todo.size or int(self.np.prod(grid)) <= len(drawn):
            return   # its drawn blocks hold the parts (a 2-D launch laid over C as the product is), or are all of it
        note = {"launch": i, "kernel": name, "blocks": 0, "why": ""}
        self.run[i] = {}
        note["why"] = self.add_blocks(i, todo, grid, block, run_block, {**dict.fromkeys(drawn, True)}, note)
        note["blocks"] = len(self.run[i])
        if note["blocks"] or note["why"]:
            self.notes.append(note)

    def add_blocks(self, i, todo, grid, block, run_block, done, note):
        """Run the probes, then the blocks that write `todo`; '' or why they could not all run."""
        np = self.np
        threads = int(np.prod(block))
        if int(np.prod(grid)) > MAX_BLOCKS:
            return f"its grid of {int(np.prod(grid))} blocks is too large to search"
        probes = [(0, 0, 0)] + [a for a, g in zip(AXES, grid) if g > 1]
        for b in probes:
            if not self.cheap_block(i, b, done, run_block, note):
                return note["why"]
        sets = [self.written(self.log.launch, b, grid, threads) for b in probes]
        budget = self.budget[i] if i < len(self.budget) else 0.0
        cost = max(threads, 32) / 256 + max(len(w) for w in sets) / 1024   # block-steps of one of its blocks
        room = int(budget / cost) - len(probes)
        models = self.layouts(sets, probes)
        found, _ = max((self.holding(m, todo, grid, max(1, room) + len(done)) for m in models), key=lambda fit: fit[1],
                       default=([], 0))
        found = [b for b in found if b not in done]
        if len(found) > room:
            return (f"{len(found)} or more of its blocks write that part, more than the {budget:g} block-steps the "
                    f"sample allows a cheap launch of {threads}-thread blocks")
        for b in found:
            if not self.cheap_block(i, b, done, run_block, note):
                return note["why"]
        missing = int(((self.stamps()[todo] >> LAUNCH_SHIFT) != self.log.launch).sum())
        if missing and (found or not models):
            return (f"{missing} of them stayed unwritten: its blocks do not each write one pattern of C shifted by "
                    "the block's index (as a 1-D or 2-D grid does, row- or column-major, grid-stride or not), so the "
                    "sampled run could not tell which of its blocks write that part")
        return ""

    def cheap_block(self, i, b, done, run_block, note):
        """Run block b of launch i for the cover unless it ran (`done`); False (and why, in `note`) where it read A, B
        or shared memory."""
        if b in done:
            return True
        before = self.work()
        done[b] = self.run[i][b] = True
        run_block(b)
        if self.work() != before:
            note["why"] = (f"its block {b} read A, B or shared memory, so it is no cheap launch: the sampled run adds "
                           "no blocks to a launch that does work")
            return False
        return True

    def stamps(self):
        """The stamp of the last write of each element of C (writes.WriteLog), flat."""
        return self.log.last_stamps()

    def written(self, n, b, grid, threads):
        """Flat indices of the elements of C that block b of the log's launch `n` wrote last."""
        np = self.np
        last = self.stamps()
        mine = np.nonzero((last >> LAUNCH_SHIFT) == n)[0]
        lin = b[0] + grid[0] * (b[1] + grid[1] * b[2])
        return mine[((last[mine] & GID_MASK) - 1) // threads == lin]

    def order(self, flat, col):
        """Row-major flat indices in row-major order, or as column-major ones (`col`)."""
        M, N = self.log.shape
        return flat if not col else (flat % N) * M + flat // N

    def layouts(self, sets, probes):
        """The (column-major?, block 0's sorted indices, shift per axis) in which each probe block wrote block 0's
        pattern shifted, of C's two orders (both, where the probes cannot tell them apart)."""
        np = self.np
        if not sets[0].size:
            return []
        fits = []
        for col in (False, True):
            base = np.sort(self.order(sets[0], col))
            shifts = [0, 0, 0]
            for s, b in zip(sets[1:], probes[1:]):
                got = np.sort(self.order(s, col))
                if not got.size or not np.isin(got - (got[0] - base[0]), base).all():
                    break
                shifts[b.index(1)] = int(got[0] - base[0])
            else:
                fits.append((col, base, shifts))
        return fits

    def holding(self, model, todo, grid, most):
        """([blocks whose shifted pattern holds an element of `todo`, sorted; past `most`, some of them], how many
        elements of `todo` they hold)."""
        np = self.np
        col, base, (sx, sy, sz) = model
        gx, gy, gz = (int(g) for g in grid)
        shift = ((np.arange(gx) * sx)[:, None, None] + (np.arange(gy) * sy)[None, :, None]
                 + (np.arange(gz) * sz)[None, None, :]).ravel()
        keys = np.argsort(shift, kind="stable")
        shift = shift[keys]
        want = self.order(todo, col)
        hits, held = set(), 0
        chunk = max(1, (1 << 22) // len(base))
        for start in range(0, len(want), chunk):
            part = want[start:start + chunk]
            cand = (part[:, None] - base[None, :]).ravel()
            lo, hi = np.searchsorted(shift, cand, "left"), np.searchsorted(shift, cand, "right")
            held += int(np.count_nonzero((hi > lo).reshape(len(part), -1).any(axis=1)))
            for a, z in zip(lo[hi > lo].tolist(), hi[hi > lo].tolist()):
                hits.update(range(a, min(z, a + most + 1)))
            if len(hits) > most:
                break
        found = np.unravel_index(keys[sorted(hits)], (gx, gy, gz))
        return [tuple(int(v) for v in b) for b in zip(*found)], held

    def left(self):
        """Where the cover blocks wrote C last (a bool array of C's shape): not judged, not part of the footprint."""
        np = self.np
        log, last = self.log, self.stamps()
        out = np.zeros(last.size, np.bool_)
        for n in range(1, len(log.plan_of)):
            blocks = self.run.get(log.plan_of[n])
            if not blocks:
                continue
            grid, _, threads = log.dims[n]
            lin = np.array([b[0] + grid[0] * (b[1] + grid[1] * b[2]) for b in blocks], np.int64)
            mine = np.nonzero((last >> LAUNCH_SHIFT) == n)[0]
            out[mine[np.isin(((last[mine] & GID_MASK) - 1) // threads, lin)]] = True
        return out.reshape(log.shape)
