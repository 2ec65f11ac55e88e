# nbgrader configuration of the demo course (`make grade` grades it; `nbgrader export`
# and formgrader run in this folder). The gradebook is nbgrader's default: ./gradebook.db.
c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)
c.CourseDirectory.course_id = "matmul-demo"

# `nbgrader export` writes here unless given --to: grades.csv is `make grade`'s own table.
c.ExportPlugin.to = "gradebook-export.csv"
