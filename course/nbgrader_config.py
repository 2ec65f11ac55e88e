# nbgrader configuration of a matmul course folder. `make release` copies this file
# into the course folder (build/course/ by default) when the folder has none.
# nbgrader reads it from the folder it runs in (nbgrader generate_assignment, export,
# formgrader); `make grade` writes into the gradebook named by CourseDirectory.db_url.
c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

# The course's name in nbgrader (exchange folders, formgrader titles).
c.CourseDirectory.course_id = "matmul"

# The gradebook is nbgrader's default, COURSE/gradebook.db; `make grade` writes the grading
# engine's scores into the gradebook that CourseDirectory.db_url names (set it here to move it).

# What a solution region (### BEGIN SOLUTION ... ### END SOLUTION) becomes in the
# student's notebook: the course's one stub shape, the same as in exercises/.
c.ClearSolutions.code_stub = {
    "python": '# TODO: implement this part.\nraise NotImplementedError("not implemented yet")',
}

# Never release the grader's own files or generated output next to the notebooks.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "results.json"]

# `nbgrader export` writes here unless given --to: grades.csv is `make grade`'s own table.
c.ExportPlugin.to = "gradebook-export.csv"

# ---- course hooks (the same in every course folder: demo_course/nbgrader_config.py is checked against this) ----

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

# `nbgrader export` adds each student's grading tier to nbgrader's columns. The gradebook's max_score is the GPU
# tier's; a simulator-tier grade (no timing) has a lower ceiling and is provisional: tier, tier_max_score and
# provisional say so, from feedback/<student>/<assignment>/results.json (upload a GPU-tier export as the grade).
try:
    import csv as _csv
    import json as _json
    import os as _os
    from nbgrader.plugins import CsvExportPlugin as _CsvExportPlugin

    class TieredCsvExport(_CsvExportPlugin):
        def export(self, gradebook):
            super().export(gradebook)
            dest = self.to or "grades.csv"
            with open(dest, newline="", encoding="utf-8") as f:
                rows = list(_csv.DictReader(f))
            for row in rows:
                path = _os.path.join("feedback", row["student_id"], row["assignment"], "results.json")
                try:
                    with open(path, encoding="utf-8") as f:
                        data = _json.load(f)
                    tier = data["extra_data"]["device"]
                    row.update(tier=tier, tier_max_score=data["max_score"],
                               provisional=str(bool(data["extra_data"].get("provisional", tier != "gpu"))))
                except (OSError, ValueError, KeyError, TypeError):
                    row.update(tier="", tier_max_score="", provisional="")
            if rows:
                with open(dest, "w", newline="", encoding="utf-8") as f:
                    writer = _csv.DictWriter(f, list(rows[0]))
                    writer.writeheader()
                    writer.writerows(rows)
    c.ExportApp.plugin_class = TieredCsvExport
except ImportError:  # not loaded by nbgrader
    pass
