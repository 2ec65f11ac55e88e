"""A student's folder and file names reach the instructor's terminal (the class table, the progress line, the Slurm
task logs) only as text: an escape sequence or a carriage return in a name cannot erase a row or print a fake one."""
import io

from course import feedback, grade_class, printable, progress

FORGED = "\r\x1b[2K\x1b[1;32mALL STUDENTS GRADED OK\x1b[0m\nzed      8      8\u202e.py"


def test_a_name_with_terminal_control_is_written_as_its_escapes():
    shown = printable(FORGED)
    assert "\x1b" not in shown and "\r" not in shown and "\u202e" not in shown
    assert "\\x1b[2K" in shown and "\\r" in shown and "\\u202e" in shown and "\n" in shown
    assert "\n" not in printable(FORGED, lines=False) and "\\n" in printable(FORGED, lines=False)
    assert printable("ann-é 中 1\t2\n") == "ann-é 中 1\t2\n"  # letters of any script, tabs and newlines as they are


def test_the_class_table_keeps_one_line_a_student_whatever_the_note():
    rows = [{"student": "mal\x1b[8m", "stages": {}, "score": 0, "max_score": 67, "note": "a file named " + FORGED},
            {"student": "ann", "stages": {}, "score": 67, "max_score": 67, "note": ""}]
    lines = feedback.summary_table(rows).splitlines()
    assert len(lines) == 4 and lines[2].startswith("mal\\x1b[8m") and lines[3].startswith("ann")
    assert not any(c in feedback.summary_table(rows) for c in "\x1b\r\u202e")


def test_what_the_class_run_says_and_its_progress_line_hold_no_terminal_control():
    out = io.StringIO()
    grader = grade_class.ClassGrader.__new__(grade_class.ClassGrader)
    grader.out = out
    grader.say("graded " + FORGED)
    bar = progress.progress_bar(1, file=out)  # not a terminal: one plain line a student
    bar.set_postfix_str(FORGED)
    bar.update(1)
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue(), repr(out.getvalue())
    assert out.getvalue().count("\n") == 3  # the said text's own line break, and the progress line's one line
