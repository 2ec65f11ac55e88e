# nbgrader configuration of the demo course (`make grade` grades it; `nbgrader export`
# and formgrader run in this folder). The gradebook is nbgrader's default: ./gradebook.db.
c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)
c.CourseDirectory.course_id = "matmul-demo"

# `nbgrader export` writes here unless given --to: grades.csv is `make grade`'s own table.
c.ExportPlugin.to = "gradebook-export.csv"

# nbgrader's exchange (release_assignment, collect; formgrader's banner names it). This course does not need it:
# `make grade` reads COURSE/submitted/<student>/matmul/. This is nbgrader's default; to use the exchange, create the
# folder (mkdir -p -m 777 /usr/local/share/nbgrader/exchange) or name another one here.
c.Exchange.root = "/usr/local/share/nbgrader/exchange"

# ---- course hooks (the same in every course folder: demo_course/nbgrader_config.py is checked against this) ----

# formgrader and generate_feedback render students' notebooks as HTML for staff: escape any HTML that is left in
# them (`make grade` already writes formgrader's copy without the student's active content).
c.HTMLExporter.sanitize_html = True

# This course is graded by `make grade` (every check in a sandboxed child; scores written into this gradebook),
# not by nbgrader's autograde, which would run the notebooks in a kernel and first delete the graded copy in
# autograded/<student>/ (formgrader's "Autograde" button, `nbgrader autograde`). Both refuse, saying what to run.
# formgrader shows the message in a modal without wrapping it: short lines, the command on a line of its own.
try:
    import os

    from nbgrader.converters import Autograde as _Autograde

    def _graded_by_make_grade(self):
        student = getattr(self.coursedir, "student_id", "") or "*"
        message = ("\n"
                   "This course is graded by `make grade`, not by\n"
                   "nbgrader's autograde: that would run the notebooks\n"
                   "in a kernel and delete autograded/<student>/.\n"
                   "Nothing was changed. To grade the student again,\n"
                   "run in the course's repository:\n"
                   "\n"
                   f"  make grade STUDENT={student if student != '*' else '<id>'} FORCE=1 \\\n"
                   f"    COURSE={os.path.abspath(self.coursedir.root)}\n")
        self.log.error(message)
        raise RuntimeError(message)
    _Autograde.start = _graded_by_make_grade
except ImportError:  # not loaded by nbgrader
    pass

# formgrader's "Generate Feedback" (`nbgrader generate_feedback`) writes nbgrader's pages into
# feedback/<student>/<assignment>/ and first deletes that folder, with `make grade`'s feedback page and results in
# it (index.html, results.json): they are put back after nbgrader wrote its pages, which show each stage's score and
# why points were lost (the score cell's comment).
try:
    import os as _os
    import re as _re
    from nbgrader.converters import GenerateFeedback as _GenerateFeedback

    def _keeping_make_grade_files(convert):
        def convert_notebooks(self):
            kept = {}
            pattern = self._format_source("(?P<assignment_id>.*)", "(?P<student_id>.*)", escape=True)
            for source in self.assignments:
                found = _re.match(pattern, source)
                if found is None:
                    continue
                folder = self._format_dest(found.group("assignment_id"), found.group("student_id"))
                for name in ("index.html", "results.json"):
                    path = _os.path.join(folder, name)
                    if _os.path.isfile(path):
                        with open(path, "rb") as f:
                            kept[path] = f.read()
            try:
                convert(self)
            finally:
                for path, data in kept.items():
                    if not _os.path.isfile(path):
                        _os.makedirs(_os.path.dirname(path), exist_ok=True)
                        with open(path, "wb") as f:
                            f.write(data)
        convert_notebooks.keeps_make_grade_files = True
        return convert_notebooks
    if not getattr(_GenerateFeedback.convert_notebooks, "keeps_make_grade_files", False):  # once per process
        _GenerateFeedback.convert_notebooks = _keeping_make_grade_files(_GenerateFeedback.convert_notebooks)

    # Without --force nbgrader skips a student whose feedback folder exists, and `make grade` always makes one (its
    # index.html): the plain command made no page. A student is done here when each autograded notebook has its page,
    # newer than the notebook (`make grade` writes the notebooks again when it grades the student again).
    def _when_pages_are_missing_or_older(init_destination):
        def wrapped(self, assignment_id, student_id):
            excluded = student_id in (self.coursedir.student_id_exclude or "").split(",")
            dest = _os.path.normpath(self._format_dest(assignment_id, student_id))
            if not self.force and not excluded and self.coursedir.notebook_id == "*" and _os.path.isdir(dest):
                for notebook in self.notebooks:
                    page = _os.path.join(dest, _os.path.splitext(_os.path.basename(notebook))[0] + ".html")
                    if not _os.path.isfile(page) or _os.path.getmtime(page) < _os.path.getmtime(notebook):
                        return True
            return init_destination(self, assignment_id, student_id)
        wrapped.when_pages_are_missing = True
        return wrapped
    if not getattr(_GenerateFeedback.init_destination, "when_pages_are_missing", False):
        _GenerateFeedback.init_destination = _when_pages_are_missing_or_older(_GenerateFeedback.init_destination)
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
