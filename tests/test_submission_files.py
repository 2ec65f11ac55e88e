"""The files of a submission folder as the grader reads them: one file it cannot read (an empty or cut-off notebook,
a folder named like a file, text that is not UTF-8) costs no other file's stage; the report names each file it
graded. Nothing here runs a child: the stages it grades are stubs or unreadable."""
import json
import os
import shutil

import pytest

from autograder import config, engine
from autograder.engine import report as report_mod
from autograder.grammar import violations
from autograder.submission import collect, read_source
from conftest import ROOT

DEMO = os.path.join(ROOT, "demo_course", "submitted", "ada", "matmul")


def ada(folder, skip=()):
    """ada's five notebooks (every stage written) copied into `folder`, less `skip`."""
    for name in os.listdir(DEMO):
        if name.endswith(".ipynb") and name not in skip:
            shutil.copy(os.path.join(DEMO, name), folder / name)


def demo_text(name):
    with open(os.path.join(DEMO, name), encoding="utf-8") as f:
        return f.read()


def test_unreadable_extra_files_are_named_and_cost_no_stage(tmp_path):
    """An empty Untitled.ipynb, a notebook that is not JSON, a folder named backup.py and a Latin-1 notes.py used to
    zero the whole submission; now each is named, with why, and every stage is graded from its own file."""
    ada(tmp_path)
    (tmp_path / "Untitled.ipynb").write_bytes(b"")
    (tmp_path / "Untitled1.ipynb").write_text("<html>not a notebook</html>", encoding="utf-8")
    (tmp_path / "backup.py").mkdir()
    (tmp_path / "notes.py").write_bytes("# caf\u00e9 notes\n".encode("latin-1"))
    sources = collect(str(tmp_path))
    assert [s.file for s in sources] == ["s1_naive.ipynb", "s2_tiled.ipynb", "s3_tiled_general.ipynb",
                                         "s4_tiled_transposed.ipynb", "s5_fast.ipynb"]
    assert not any(s.unreadable or s.note for s in sources)
    notes = "\n".join(sources.notes)
    assert "Untitled.ipynb: skipped, not read (not a readable notebook: the file is empty (0 bytes))" in notes
    assert "Untitled1.ipynb: skipped, not read (not a readable notebook: not JSON" in notes
    assert "backup.py: skipped, not read (a folder, not a file)" in notes
    assert "notes.py: skipped, not read (not UTF-8 text (byte 0xe9 at offset 5))" in notes


def test_a_stage_whose_only_file_is_unreadable_fails_naming_it_and_a_copy_beside_it_is_graded(tmp_path, cfg):
    """s3's notebook is empty (its only file): stage 3 fails, every check saying which file and why, and no child
    runs for it; s2's notebook is empty but a Jupyter copy of it is whole: the copy is graded, the note names the
    empty one. The other stages are untouched."""
    ada(tmp_path, skip=("s2_tiled.ipynb",))
    (tmp_path / "s3_tiled_general.ipynb").write_bytes(b"")
    (tmp_path / "s2_tiled.ipynb").write_bytes(b"")
    shutil.copy(os.path.join(DEMO, "s2_tiled.ipynb"), tmp_path / "s2_tiled-Copy1.ipynb")
    by_name = {s.stage.name: s for s in collect(str(tmp_path))}
    assert len(by_name) == 5 and by_name["naive"].source and not by_name["naive"].unreadable
    tiled = by_name["tiled"]
    assert tiled.file == "s2_tiled-Copy1.ipynb" and not tiled.unreadable and "def matmul_tiled_kernel" in tiled.source
    assert "s2_tiled.ipynb was not read for stage tiled (not a readable notebook: the file is empty (0 bytes)); " \
           "the file graded is s2_tiled-Copy1.ipynb" in tiled.note
    general = by_name["tiled_general"]
    assert general.source == "" and general.unreadable.startswith(
        "s3_tiled_general.ipynb could not be read, so stage tiled_general was not graded: not a readable notebook: "
        "the file is empty (0 bytes). Submit the stage's file again")
    for device in ("sim", "gpu"):
        (tmp_path / device).mkdir()
        grader = engine.StageGrader(general, device, cfg, None, str(tmp_path / device))
        assert grader.start_compile(pool=None) == {}  # no child
        checks = grader.judge({})
        assert checks and all(c.score == 0 for c in checks)
        failed = [c for c in checks if c.status == "failed"]
        assert len(failed) >= 4 and all(c.output == general.unreadable for c in failed), device


def test_a_byte_order_mark_is_read_as_utf8(tmp_path):
    """A .py file or notebook that starts with a UTF-8 byte-order mark (Windows Notepad writes one) is read as
    UTF-8: the mark is not part of the source (it zeroed the stage: the grammar cannot parse U+FEFF)."""
    solution = open(os.path.join(ROOT, "solutions", "s1_naive.py"), encoding="utf-8").read()
    (tmp_path / "s1_naive.py").write_bytes(b"\xef\xbb\xbf" + solution.encode("utf-8"))
    (tmp_path / "s2_tiled.ipynb").write_bytes(b"\xef\xbb\xbf" + demo_text("s2_tiled.ipynb").encode("utf-8"))
    sources = collect(str(tmp_path))
    assert [(s.stage.name, s.unreadable) for s in sources] == [("naive", ""), ("tiled", "")]
    assert sources[0].source == solution and violations(sources[0].source) == []
    assert read_source(str(tmp_path / "s1_naive.py")) == solution
    assert "def matmul_tiled_kernel" in sources[1].source and not sources[1].source.startswith("\ufeff")


def cut(name, marker, after=0):
    """The text of ada's notebook `name` cut off `after` characters past `marker` (a save cut short)."""
    text = demo_text(name)
    return text[: text.index(marker) + after]


def test_a_truncated_notebook_zeroes_only_the_stages_it_breaks(tmp_path):
    """s1 breaks off inside the kernel's cell: stage 1 fails, saying the file is truncated and in which cell; s2
    breaks off in its self-check cell, after every graded cell: stage 2 is graded from the whole cells, with a note;
    s3 is cut before any cell: stage 3 fails (its name says which stage it held). Stages 4 and 5 are untouched."""
    ada(tmp_path)
    (tmp_path / "s1_naive.ipynb").write_text(cut("s1_naive.ipynb", "def matmul_naive_kernel", 30), encoding="utf-8")
    (tmp_path / "s2_tiled.ipynb").write_text(cut("s2_tiled.ipynb", 'check(\\"tiled', 3), encoding="utf-8")
    (tmp_path / "s3_tiled_general.ipynb").write_text(demo_text("s3_tiled_general.ipynb")[:200], encoding="utf-8")
    with pytest.raises(Exception):
        json.loads((tmp_path / "s2_tiled.ipynb").read_text(encoding="utf-8"))
    sources = collect(str(tmp_path))
    by_name = {s.stage.name: s for s in sources}
    assert list(by_name) == ["naive", "tiled", "tiled_general", "tiled_transposed", "fast"]
    assert by_name["naive"].unreadable.startswith(
        "s1_naive.ipynb could not be read, so stage naive was not graded: the notebook breaks off part-way through "
        "cell 7 (the file is truncated")
    assert "part-way through cell 1 (the file is truncated" in by_name["tiled_general"].unreadable
    tiled = by_name["tiled"]
    assert not tiled.unreadable and "def matmul_tiled_kernel" in tiled.source and "def matmul_tiled(" in tiled.source
    assert tiled.cells and tiled.cite("line 2") != "line 2"  # its cells still number the lines as the student sees
    assert any(n.startswith("s2_tiled.ipynb: the notebook breaks off part-way through cell") and
               n.endswith("graded from its whole cells, before the break") for n in sources.notes), sources.notes
    assert not by_name["tiled_transposed"].unreadable and not by_name["fast"].unreadable


def test_the_report_and_the_feedback_name_each_file_graded(tmp_path):
    """An LMS-renamed file (jdoe_12345_s1_naive.py, a stub here: no child runs) and an unreadable notebook: the
    report's summary, results.json and the feedback page name the file graded for each stage, and the notes name
    the file read for no stage."""
    from course import feedback
    shutil.copy(os.path.join(ROOT, "exercises", "s1_naive.py"), tmp_path / "jdoe_12345_s1_naive.py")
    (tmp_path / "s3_tiled_general.ipynb").write_bytes(b"")
    (tmp_path / "Untitled.ipynb").write_text("{", encoding="utf-8")
    report = engine.grade(str(tmp_path), device="sim", seed=1, cfg=config.load())
    assert report.files == {"naive": "jdoe_12345_s1_naive.py", "tiled_general": "s3_tiled_general.ipynb"}
    assert report.score == 0 and {c.stage for c in report.checks} == {"naive", "tiled_general"}
    text = report_mod.summary(report)
    assert "Files graded: stage naive: jdoe_12345_s1_naive.py, stage tiled_general: s3_tiled_general.ipynb" in text
    assert "Note: Untitled.ipynb: skipped, not read" in text
    results = report_mod.to_gradescope(report)
    assert results["extra_data"]["files"] == report.files and "jdoe_12345_s1_naive.py" in results["output"]
    results["extra_data"]["course"] = feedback.course_record("jdoe", "matmul", config.load(), {}, "0" * 64, [])
    page = feedback.page("jdoe", "matmul", results)
    assert "File graded: <code>jdoe_12345_s1_naive.py</code>" in page
    assert "File graded: <code>s3_tiled_general.ipynb</code>" in page and "Untitled.ipynb: skipped" in page
