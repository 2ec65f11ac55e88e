# nbgrader configuration of the demo course (`make grade` grades it; `nbgrader export`
# and formgrader run in this folder). The gradebook is nbgrader's default: ./gradebook.db.
c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)
c.CourseDirectory.course_id = "matmul-demo"

# `nbgrader export` writes here unless given --to: grades.csv is `make grade`'s own table.
c.ExportPlugin.to = "gradebook-export.csv"

# This course is graded by `make grade` (every check in a sandboxed child; scores written into this gradebook),
# not by nbgrader's autograde, which would run the notebooks in a kernel and first delete the graded copy in
# autograded/<student>/ (formgrader's "Autograde" button, `nbgrader autograde`). Both refuse, saying what to run.
try:
    from nbgrader.converters import Autograde as _Autograde

    def _graded_by_make_grade(self):
        student = getattr(self.coursedir, "student_id", "") or "STUDENT"
        raise RuntimeError(
            "this course is graded by `make grade`, not by nbgrader's autograde (which would run the notebooks in a "
            "kernel and delete the graded copy). Grade this student again with: "
            f"make grade COURSE=<this folder> STUDENT={student if student != '*' else '<id>'} FORCE=1")
    _Autograde.start = _graded_by_make_grade
except ImportError:  # not loaded by nbgrader
    pass
