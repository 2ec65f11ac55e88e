"""Every grading check catches a known-bad submission, with a message that says why."""
import os

import pytest

from conftest import BAD, by_key, failed, mutate


def read(name):
    with open(os.path.join(BAD, name), encoding="utf-8") as f:
        return f.read()


def test_guard_compares_row_with_column_count(grade_text):
    r = grade_text("naive", mutate("naive", ("if row < M and col < N:", "if row < N and col < N:")))
    out = failed(r, "correct")
    assert "compares the row with the column count" in out
    assert "C[6, 0]" in out  # first wrong element of the 40 x 6 output


def test_transposed_b_index(grade_text):
    r = grade_text("naive", mutate("naive", ("B[k, col]", "B[col, k]")))
    assert "B is indexed transposed" in failed(r, "correct")


def test_dropped_partial_k_tile(grade_text):
    r = grade_text("tiled_general", mutate("tiled_general", ("range((K + TILE - 1) // TILE)", "range(K // TILE)")))
    assert "last partial tile along K is ignored" in failed(r, "correct")


def test_unguarded_store(grade_text):
    r = grade_text("tiled_general", mutate("tiled_general", ("    if row < M and col < N:\n        C[row, col] = acc",
                                                             "    C[row, col] = acc")))
    out = failed(r, "correct")
    assert "outside an array" in out and "IndexError" in out


def test_unpadded_transposed_tile_fails_structure(grade_text):
    r = grade_text("tiled_transposed", mutate("tiled_transposed", ("TILE_PAD = TILE + 1", "TILE_PAD = TILE")))
    assert "TILE x (TILE + 1)" in failed(r, "shared_memory")


def test_padding_with_runtime_shape_fails_ptx_compile(grade_text):
    r = grade_text("tiled_transposed", mutate("tiled_transposed", ("(TILE, TILE_PAD)", "(TILE, TILE + 1)")))
    # the simulator runs it, the GPU compiler does not
    assert all(c.status == "passed" for c in by_key(r, "correct"))
    assert "GPU compiler rejected" in failed(r, "compiles")


def test_missing_barriers_fail_structure(grade_text):
    text = mutate("tiled", ("        cuda.syncthreads()\n    C[row, col]", "    C[row, col]"))
    assert "barrier" in failed(grade_text("tiled", text), "shared_memory")


def test_host_side_matmul(grade_text):
    r = grade_text("naive", read("host_matmul.py"))
    out = [c for c in r.checks if c.key == "shortcuts"][0]
    assert out.status == "failed" and "copy_to_host" in out.output and "@ operator" in out.output
    assert r.score == 0


@pytest.mark.parametrize("device", ["sim", "gpu"])
def test_stage_zeroed_by_the_scan_runs_no_child_and_shows_every_check_failed(grade_text, monkeypatch, device):
    """A zeroed stage spends no time in children (a closure's constant array once compiled for 275 s on a GPU),
    and no check reads PASS 0/N: each says it was not run, and why."""
    from autograder import sandbox

    def no_child(*args, **kwargs):
        raise AssertionError("a child was started for a stage the static scan zeroed")
    monkeypatch.setattr(sandbox, "run_child", no_child)
    r = grade_text("naive", read("host_matmul.py"), device=device)
    assert r.score == 0 and r.max_score > 0
    others = [c for c in r.checks if c.key != "shortcuts" and c.status != "skipped"]
    assert {c.key for c in others} >= {"compiles", "correct"}
    for c in others:
        assert c.status == "failed" and "static scan found host-side shortcuts" in c.output, (c.name, c.output)


def test_numpy_product_in_launcher(grade_text):
    text = mutate("naive", ("    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)",
                            "    import numpy as np\n    np.matmul(1, 2)\n    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)"))
    r = grade_text("naive", text)
    assert "np.matmul" in [c for c in r.checks if c.key == "shortcuts"][0].output
    assert r.score == 0


def test_syntax_error(grade_text):
    r = grade_text("naive", read("syntax_error.py"))
    assert "syntax error at line 6" in failed(r, "compiles")
    assert r.score == 0


@pytest.mark.parametrize("name", ["exit_at_import.py", "os_exit_in_launcher.py"])
def test_exits_fail_the_check_not_the_grader(grade_text, name):
    r = grade_text("naive", read(name))
    assert "exited" in failed(r, "correct")
    assert r.score == 0


def test_sys_exit_in_launcher(grade_text):
    text = mutate("naive", ("    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)",
                            "    import sys\n    sys.exit(3)"))
    assert "exited (status 3)" in failed(grade_text("naive", text), "correct")


def test_os_exit_at_import(grade_text):
    text = mutate("naive", ("BLOCK = 16", "import os\nos._exit(0)\nBLOCK = 16"))
    assert "exited (status 0)" in failed(grade_text("naive", text), "correct")


def test_kernel_that_never_ends_is_stopped(grade_text):
    r = grade_text("naive", read("kernel_never_ends.py"), check_timeout_s=15)
    assert "did not finish within 15 s" in failed(r, "correct")


def test_launcher_that_skips_the_kernel(grade_text):
    text = mutate("naive", ("    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)", "    pass"))
    assert "never launched matmul_naive_kernel" in failed(grade_text("naive", text), "correct")


def test_missing_second_barrier_caught_by_race_detector(grade_text):
    text = mutate("tiled", ("            acc += sA[ty, k] * sB[k, tx]\n        cuda.syncthreads()\n",
                            "            acc += sA[ty, k] * sB[k, tx]\n"))
    out = failed(grade_text("tiled", text), "races")
    assert "write-after-read" in out and "syncthreads" in out


def test_unpadded_stage4_caught_by_bank_counter(grade_text):
    r = grade_text("tiled_transposed", mutate("tiled_transposed", ("TILE_PAD = TILE + 1", "TILE_PAD = TILE")))
    out = failed(r, "bank_conflicts")
    assert "32-way" in out and "TILE_PAD = TILE + 1" in out


def test_fake_tiling_caught_by_load_counter(grade_text):
    text = mutate("tiled", ("            acc += sA[ty, k] * sB[k, tx]",
                            "            acc += A[row, t * TILE + k] * B[t * TILE + k, col]"))
    out = failed(grade_text("tiled", text), "data_reuse")
    assert "global memory instead of the shared tiles" in out
