"""Untrusted side (runs in the grading child). Instruments for Numba's CUDA simulator: shared-memory races, bank conflicts, data reuse.

The simulator (NUMBA_ENABLE_CUDASIM=1) runs one Python thread per CUDA thread (here a greenlet: sim/green.py),
one block at a time, and cannot see what a GPU would punish: a tiled kernel
without its second ``cuda.syncthreads()`` is a race whether or not this run's
thread scheduling happens to corrupt C (on a GPU it usually does not), an
unpadded transposed tile gives the right answer 32 times slower, and a
"tiled" kernel that never reads its shared tiles is just the naive kernel. ``run_instrumented`` replays the recorded launches with the
simulator patched so that every shared-memory access and every element load of
A and B is logged, and turns the logs into facts; the ``judge_*`` functions
turn the facts into verdicts with messages for students.

Two halves, two processes:

* ``run_instrumented`` (sim/instrument.py) runs in the grading child (autograder/child/entry.py), which
  has set NUMBA_ENABLE_CUDASIM=1 before importing numba. It imports numba
  itself, only when called. All patches are made inside it with context
  managers and are undone when it returns or raises, so a later plain replay
  in the same process runs the unmodified simulator.
* The judges (autograder/checks/races.py, bank_conflicts.py, data_reuse.py)
  run in the parent. They are pure functions of the facts dict (plain JSON)
  and import neither numba nor numpy.

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
  ``cuda.atomic.*`` are marked atomic (see Races). A bulk read of a shared
  array by numpy (``la[:] = sA[ty, :]``) is logged as a read of every element.
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
  Loads through a slice count too (``a = A[row, :]`` then ``a[k]``; and
  ``la[:K] = A[row, :]``, which numpy is made to read element by element).
* ``BlockManager.run`` is wrapped: after each block has finished, its logs are
  analysed with NumPy and dropped, so memory is bounded by one block's log
  (and each thread stops logging shared accesses after
  ``BLOCK_ACCESS_CAP / threads`` entries; epochs after the first truncation in
  a block are then ignored and ``truncated`` is set).

Races
-----
Within one block, one shared array, one byte address and one epoch: if two
different threads touch it, not both through ``cuda.atomic.*``, and one of the
two writes (a plain write against any access of another thread, or an atomic
update against another thread's plain read), that (block, array, epoch,
address) is one race. Two atomics to one address never race with each other:
an atomic makes the update indivisible, but it orders nothing against plain
accesses, so reading a tile through ``cuda.atomic.add(sA, (ty, k), 0)`` still
needs both barriers. The
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
reaches TILE on sizes that are multiples of the tile, and
``2MN / (M * ceil(N / TILE) + N * ceil(M / TILE))`` on any size (partial
tiles at the edges load only the elements inside A and B).
``checks/data_reuse.judge_sim`` derives that figure from the run's shape and
passes when the kernel reaches ``reuse_fraction`` of it. Reuse above what a
correct product can reach fails (loads were skipped); the bound comes from the
blocks' footprint in C (a block writing R rows and S columns of C needs
K (R + S) loads), so a kernel computing several outputs per thread, whose
blocks cover more than TILE x TILE outputs, is not mistaken for one. The grader draws the
shape of the instrumented run from its secret generator
(``Stage.instrument_shape``) and checks the run's C too.

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
      "c_writes": {...},                  # stores to C per thread: lost updates, reads of what another thread
                                          # writes, mixed atomics, footprint (sim/writes.py)
      "sampled": {"blocks": [[[x, y, z]]], "outputs": int,   # a sampled run: the blocks of each launch drawn,
                  "cover": [{"launch": int, "kernel": str, "blocks": int, "why": str}]},  # and added (sim/cover.py)
      "seconds": float
    }
"""
