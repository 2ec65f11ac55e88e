"""Write the grading engine's scores into nbgrader's gradebook.

Each stage notebook has one nbgrader task cell (``<module>-score``, see
course.notebooks) whose points are the stage's total in autograder/config.toml.
A stage's engine score goes into that cell's ``auto_score``; ``manual_score`` is
left alone, so an instructor's override in formgrader wins and survives
re-grading (nbgrader's rule: a grade's score is its manual_score where one is set).
``nbgrader export`` then lists the engine's totals, with the overrides. `record`
returns the overrides it met, and `overrides` lists them all, so that `make grade`
reports each one and its table, grades.csv and feedback pages show both numbers.
"""
import os
import types
import warnings

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from . import ASSIGNMENT, use_venv_tools
from .notebooks import score_cell_id
from autograder.config import stage_max


def course_directory(course):
    """nbgrader's CourseDirectory of a course folder, configured by its nbgrader_config.py."""
    from nbgrader.coursedir import CourseDirectory
    course = os.path.abspath(course)
    cfg = Config()
    if os.path.isfile(os.path.join(course, "nbgrader_config.py")):
        cfg = PyFileConfigLoader("nbgrader_config.py", path=course).load_config()
    return CourseDirectory(config=cfg, root=course)


COURSE_FOLDERS = ("root", "submitted_directory", "source_directory", "autograded_directory", "feedback_directory",
                  "db_url", "course_id")


def plain_course_directory(coursedir):
    """A CourseDirectory's folders as plain data: what a class run's worker reads of it, handed over without the
    worker importing nbgrader (seconds a process: its server extensions come with it)."""
    return types.SimpleNamespace(**{name: getattr(coursedir, name) for name in COURSE_FOLDERS})


def open_gradebook(coursedir):
    from nbgrader.api import Gradebook
    use_venv_tools()
    read_alembic_head_in_process()
    return Gradebook(coursedir.db_url, coursedir.course_id or "default_course")


def read_alembic_head_in_process():
    """A new gradebook is stamped with the newest revision of nbgrader's database migrations: nbgrader runs the
    `alembic heads` command for it, a Python start-up of about 6 s on a 2-core machine. The same revision is read
    here from the migration scripts, in this process, in a fraction of a second (once per process)."""
    from nbgrader import api
    if getattr(api.get_alembic_version, "in_process", False):
        return

    def get_alembic_version():
        if not hasattr(get_alembic_version, "head"):
            from alembic.config import Config as AlembicConfig
            from alembic.script import ScriptDirectory
            from nbgrader.dbutil import ALEMBIC_DIR
            cfg = AlembicConfig()
            cfg.set_main_option("script_location", ALEMBIC_DIR)
            get_alembic_version.head = ScriptDirectory.from_config(cfg).get_current_head()
        return get_alembic_version.head
    get_alembic_version.in_process = True
    api.get_alembic_version = get_alembic_version


def sync_assignment(gb, cfg, assignment=ASSIGNMENT):
    """Make sure the assignment, its stage notebooks and their score cells exist with the config's points.

    `nbgrader generate_assignment` records the same cells when the course folder was released; this
    makes a course graded without a release (the demo) complete too."""
    from autograder.stages import STAGES
    gb.update_or_create_assignment(assignment)
    for stage in STAGES:
        gb.update_or_create_notebook(stage.module, assignment)
        total = stage_max(cfg)[stage.name]
        gb.update_or_create_task_cell(score_cell_id(stage), stage.module, assignment, max_score=total,
                                      cell_type="markdown")
    drop_duplicate_score_cells(gb, assignment)


def drop_duplicate_score_cells(gb, assignment=ASSIGNMENT):
    """Remove a grade cell that repeats a stage's score cell, with its grades; returns how many were removed.

    A score cell is a task cell alone. Notebooks released while it was marked as a grade cell too made
    `nbgrader generate_assignment` record it twice, as a grade cell and a task cell of one name: every stage counted
    twice (134 points instead of 67) and formgrader showed the copy's empty score as needing manual grading.
    A score recorded against the copy (where `make grade` wrote it then) moves to the task cell's empty grade."""
    from nbgrader.api import Assignment, Comment, Grade, GradeCell, Notebook, TaskCell
    from autograder.stages import STAGES
    names = [score_cell_id(stage) for stage in STAGES]
    cells = (gb.db.query(GradeCell).join(Notebook, Notebook.id == GradeCell.notebook_id)
             .join(Assignment, Assignment.id == Notebook.assignment_id)
             .filter(Assignment.name == assignment, GradeCell.name.in_(names)).all())
    for cell in cells:
        task = (gb.db.query(TaskCell)
                .filter(TaskCell.name == cell.name, TaskCell.notebook_id == cell.notebook_id).first())
        olds = gb.db.query(Grade).filter(Grade.cell_id == cell.id).all()
        for old in olds:
            if task is None or (old.auto_score is None and old.manual_score is None):
                continue
            grade = gb.db.query(Grade).filter(Grade.cell_id == task.id, Grade.notebook_id == old.notebook_id).first()
            if grade is None:
                grade = Grade(cell_id=task.id, notebook_id=old.notebook_id)
                gb.db.add(grade)
            if grade.auto_score is None and grade.manual_score is None:
                grade.auto_score, grade.manual_score = old.auto_score, old.manual_score
                grade.extra_credit = old.extra_credit
                grade.needs_manual_grade = False
        for row in olds + gb.db.query(Comment).filter(Comment.cell_id == cell.id).all():
            gb.db.delete(row)
        gb.db.flush()
        gb.db.delete(cell)
    if cells:
        gb.db.commit()
        gb.db.expire_all()  # the notebooks' and submissions' cached scores and cell lists
    return len(cells)


def solution_cells(gb, assignment=ASSIGNMENT):
    """{notebook name: names of its solution cells} as the gradebook records them (`nbgrader generate_assignment`
    records them; a course graded without a release has none)."""
    from nbgrader.api import Assignment, Notebook, SolutionCell
    rows = (gb.db.query(Notebook.name, SolutionCell.name).join(SolutionCell, SolutionCell.notebook_id == Notebook.id)
            .join(Assignment, Assignment.id == Notebook.assignment_id).filter(Assignment.name == assignment).all())
    found = {}
    for notebook, cell in rows:
        found.setdefault(notebook, []).append(cell)
    return found


def record(gb, student, stage_scores, timestamp=None, assignment=ASSIGNMENT, comments=None):
    """Store one student's engine scores ({stage name: points}) and commit.

    `comments` ({stage name: text}) becomes the score cell's ``auto_comment``: formgrader shows it beside the
    score and nbgrader's feedback prints it, so the reason for a lost point is where the point is.

    Returns {stage name: {"manual": the TA's score, "auto": the new auto_score, "regraded": [old, new]}} of the
    stages a TA's score stands on; "regraded" only where this grade changed the auto_score under it."""
    with warnings.catch_warnings():
        # nbgrader 0.9's add_submission trips SQLAlchemy 2's autoflush warnings; the rows are stored all the same
        warnings.simplefilter("ignore", category=Warning)
        return _record(gb, student, stage_scores, timestamp, assignment, comments or {})


def hand_score(grade, auto=None):
    """The score nbgrader counts for a grade a TA touched in formgrader (its manual_score, else the auto_score, plus
    any extra credit), or None where the TA set neither."""
    extra = float(grade.extra_credit or 0.0)
    if grade.manual_score is None and not extra:
        return None
    base = grade.manual_score if grade.manual_score is not None else (grade.auto_score if auto is None else auto)
    return float(base or 0.0) + extra


def overrides(gb, assignment=ASSIGNMENT):
    """{student: {stage name: {"manual": score, "auto": score}}}: every score cell of the assignment whose score a
    TA set by hand in formgrader (a manual_score, or extra credit): nbgrader counts it instead of the auto_score."""
    from nbgrader.api import Assignment, Grade, Notebook, SubmittedAssignment, SubmittedNotebook, TaskCell
    from autograder.stages import STAGES
    by_cell = {score_cell_id(stage): stage.name for stage in STAGES}
    rows = (gb.db.query(Grade, TaskCell.name, SubmittedAssignment.student_id)
            .join(TaskCell, TaskCell.id == Grade.cell_id)
            .join(SubmittedNotebook, SubmittedNotebook.id == Grade.notebook_id)
            .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
            .join(Notebook, Notebook.id == TaskCell.notebook_id)
            .join(Assignment, Assignment.id == Notebook.assignment_id)
            .filter(Assignment.name == assignment,
                    Grade.manual_score.isnot(None) | (Grade.extra_credit.isnot(None) & (Grade.extra_credit != 0)))
            .all())
    found = {}
    for grade, cell, student in rows:
        if cell in by_cell:
            found.setdefault(student, {})[by_cell[cell]] = {"manual": hand_score(grade),
                                                            "auto": float(grade.auto_score or 0.0)}
    return found


def _record(gb, student, stage_scores, timestamp, assignment, comments):
    from nbgrader.api import Comment, Grade, MissingEntry, SubmittedNotebook
    from nbgrader.utils import parse_utc
    from autograder.stages import STAGES
    gb.update_or_create_student(student)
    try:
        submission = gb.find_submission(assignment, student)
    except MissingEntry:
        submission = gb.add_submission(assignment, student)
    if timestamp:
        submission.timestamp = parse_utc(timestamp)
    kept = {}
    for stage in STAGES:
        cell = gb.find_task_cell(score_cell_id(stage), stage.module, assignment)
        try:
            grade = gb.find_grade(cell.name, stage.module, assignment, student)
        except MissingEntry:  # the submission predates this notebook or cell: add the missing rows
            try:
                notebook = gb.find_submission_notebook(stage.module, assignment, student)
            except MissingEntry:
                notebook = SubmittedNotebook(notebook=gb.find_notebook(stage.module, assignment),
                                             assignment=submission)
                gb.db.add(notebook)
            grade = Grade(cell_id=cell.id, notebook=notebook)
            gb.db.add(grade)
        new = float(stage_scores.get(stage.name, 0.0))
        if hand_score(grade, new) is not None:  # the TA's score stands; say so, with the auto_score it stands over
            kept[stage.name] = {"manual": hand_score(grade, new), "auto": new}
            if grade.auto_score is not None and float(grade.auto_score) != new:
                kept[stage.name]["regraded"] = [float(grade.auto_score), new]
        grade.auto_score = new
        grade.needs_manual_grade = False
        gb.db.flush()  # a notebook or grade row added just above gets its id
        comment = gb.db.query(Comment).filter(Comment.cell_id == cell.id, Comment.notebook_id == grade.notebook.id).first()
        if comment is None:  # nbgrader's find_comment looks among solution cells only; a task cell's row is made here
            comment = Comment(cell_id=cell.id, notebook=grade.notebook)
            gb.db.add(comment)
        comment.auto_comment = comments.get(stage.name) or None
        for solution in grade.notebook.notebook.solution_cells:  # nbgrader's feedback reads a comment of each
            if not gb.db.query(Comment).filter(Comment.cell_id == solution.id,
                                               Comment.notebook_id == grade.notebook.id).first():
                gb.db.add(Comment(cell_id=solution.id, notebook=grade.notebook))
    gb.db.commit()
    return kept
