"""The demo course: five students' submissions, made from the release notebooks.

``python -m course.demo`` releases the assignment (course.release) into a
scratch folder, then writes each demo student's notebooks to
``demo_course/submitted/<student>/matmul/`` in nbgrader's layout: the released
notebook with the student's code put into it, as a student would. A test
rebuilds them and fails when the stored ones are stale.

Each student is a list of edits per stage; a stage without edits is left as
released (the stub). ``solve`` fills a stage's solution cells with the
reference solution; ``(old, new)`` then replaces text that must occur exactly
once in the notebook's code. ``expected`` is the score each stage must get in
the simulator tier (checked by tests/test_course.py).
"""
import argparse
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field

import nbformat

from . import ASSIGNMENT, DEMO_COURSE, ROOT
from . import notebooks

SOLVE = "solve"
TIMESTAMP = "2026-11-20 17:00:00.000000 UTC"


@dataclass(frozen=True)
class DemoStudent:
    name: str
    story: str
    edits: dict                       # stage module -> [SOLVE | (old, new), ...]
    expected: dict = field(default_factory=dict)   # stage name -> simulator-tier score

    @property
    def expected_total(self):
        return sum(self.expected.values())


FULL = {"naive": 8, "tiled": 13, "tiled_general": 13, "tiled_transposed": 13, "fast": 7}
NO_SECOND_BARRIER = ("            acc += sA[ty, k] * sB[k, tx]\n        cuda.syncthreads()\n",
                     "            acc += sA[ty, k] * sB[k, tx]\n")
HOST_MATMUL = [
    ('    # TODO: implement this part.\n    raise NotImplementedError("not implemented yet")', "    pass"),
    ("    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)",
     "    C.copy_to_device(A.copy_to_host() @ B.copy_to_host())  # the product, computed on the host\n"
     "    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)"),
]
HANGS_WHEN_K_IS_1 = ("        for k in range(K):\n            acc += A[row, k] * B[k, col]\n",
                     "        k = 0\n"
                     "        while k < K:  # two terms per step\n"
                     "            acc += A[row, k] * B[k, col]\n"
                     "            if k + 1 < K:\n"
                     "                acc += A[row, k + 1] * B[k + 1, col]\n"
                     "            k += min(2, K - 1)  # steps by 0 when K == 1: the loop never ends\n")
STORES_PAST_C = ("    C[row, col] = acc", "    C[row + C.shape[0], col] = acc  # one tile too far down")
MISSING_COLON = ("    if row < M and col < N:\n        C[row, col] = acc", "    if row < M and col < N\n        C[row, col] = acc")

STUDENTS = [
    DemoStudent("ada", "full marks: every stage solved as in solutions/",
                {m: [SOLVE] for m in ("s1_naive", "s2_tiled", "s3_tiled_general", "s4_tiled_transposed", "s5_fast")},
                dict(FULL)),
    DemoStudent("bob", "partial: stage 1 right; stage 3 drops the last partial tile along K (wrong results on "
                       "every size that is not a multiple of the tile, the instrumented run's included, so its race "
                       "and load counters are not credited); stages 2, 4 and 5 not started",
                {"s1_naive": [SOLVE],
                 "s3_tiled_general": [SOLVE, ("range((K + TILE - 1) // TILE)", "range(K // TILE)")]},
                {"naive": 8, "tiled": 0, "tiled_general": 3, "tiled_transposed": 0, "fast": 0}),
    DemoStudent("cy", "racy: stage 2 lacks the barrier after the inner loop. One tile is still right; with two, "
                      "the simulator runs the threads one after another, so a thread's next-tile store lands before "
                      "the others have read the current tile. The race detector names the hazard, the barrier "
                      "count misses one",
                {"s1_naive": [SOLVE], "s2_tiled": [SOLVE, NO_SECOND_BARRIER]},
                {"naive": 8, "tiled": 6, "tiled_general": 0, "tiled_transposed": 0, "fast": 0}),
    DemoStudent("dee", "cheating: stage 1 multiplies on the host (copy_to_host and @), which zeroes the stage; "
                       "stage 2 is honest and scores",
                {"s1_naive": HOST_MATMUL, "s2_tiled": [SOLVE]},
                {"naive": 0, "tiled": 13, "tiled_general": 0, "tiled_transposed": 0, "fast": 0}),
    DemoStudent("eve", "crashing: stage 1's loop never ends when K = 1 (that check is stopped at the time limit); "
                       "stage 2's kernel stores past the end of C (an IndexError in the simulator, a CUDA error on a GPU); "
                       "stage 3 has a syntax error",
                {"s1_naive": [SOLVE, HANGS_WHEN_K_IS_1], "s2_tiled": [SOLVE, STORES_PAST_C],
                 "s3_tiled_general": [SOLVE, MISSING_COLON]},
                {"naive": 6, "tiled": 3, "tiled_general": 0, "tiled_transposed": 0, "fast": 0}),
]
BY_NAME = {s.name: s for s in STUDENTS}


def _solutions(module):
    """{grade_id: solved code} of a stage's solution cells: the stored notebook's cells, markers removed."""
    from autograder.stages import BY_MODULE
    nb = notebooks.read_ipynb(BY_MODULE[module])
    solved = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            lines = [ln for ln in cell.source.splitlines() if ln.strip() not in (notebooks.BEGIN, notebooks.END)]
            solved[meta["grade_id"]] = "\n".join(lines)
    return solved


def apply_edits(nb, module, edits):
    """Put a demo student's code into a released notebook (nbformat), in place."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    for edit in edits:
        if edit == SOLVE:
            solved = _solutions(module)
            for cell in code:
                grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
                if grade_id in solved:
                    cell.source = solved[grade_id]
            continue
        old, new = edit
        hits = [c for c in code if old in c.source]
        if len(hits) != 1 or hits[0].source.count(old) != 1:
            raise ValueError(f"{module}: demo edit target must occur exactly once, found {len(hits)}: {old!r}")
        hits[0].source = hits[0].source.replace(old, new)
    return nb


def write_demo(release_dir, course=DEMO_COURSE):
    """Write every demo student's submission into COURSE/submitted/; return the student folders."""
    folders = []
    for student in STUDENTS:
        folder = os.path.join(course, "submitted", student.name, ASSIGNMENT)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.makedirs(folder)
        for name in sorted(os.listdir(release_dir)):
            if not name.endswith(".ipynb"):
                continue
            module = name[: -len(".ipynb")]
            nb = nbformat.read(os.path.join(release_dir, name), as_version=4)
            apply_edits(nb, module, student.edits.get(module, []))
            nbformat.write(nb, os.path.join(folder, name))
        with open(os.path.join(folder, "timestamp.txt"), "w", encoding="utf-8") as f:
            f.write(TIMESTAMP + "\n")
        folders.append(folder)
    return folders


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m course.demo", description=__doc__.splitlines()[0])
    p.add_argument("--course", default=DEMO_COURSE, help="where to write submitted/ (default: demo_course)")
    args = p.parse_args(argv)
    from .release import release
    with tempfile.TemporaryDirectory(prefix="demo-release-") as scratch:
        release_dir = release(scratch, quiet=True)
        for folder in write_demo(release_dir, args.course):
            print("wrote", os.path.relpath(folder, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
