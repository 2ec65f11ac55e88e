"""Trusted parent side: the file graded for each stage in a student's repository (read, never run).

The one picking rule of every grader that starts from a repository: classroom/grade.py (CI, Classroom 50,
Gradescope) and course/grade_repos/ (the grade of record, on blobs it writes itself) both lay out the files it picks.
"""
import os

from .submission import SubmissionError, choose, read_source, skipped_note, stages_in

EXERCISES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "exercises")
SEARCH = ("exercises", "", "notebooks")       # student folders searched for a stage's file, in this order


def _source(path):
    try:
        return read_source(path)
    except SubmissionError:
        return None


def inside(path, root):
    """Whether `path`, every link on its way resolved, lies within the folder `root`: a link anywhere in a path
    (``exercises -> zz/../../solutions``, ``zz -> .``) may lead out of the student's folder, to the course's
    solutions or a classmate's work."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _regular(path, root):
    """A regular file, not itself a link, whose real path lies within `root` (autograder/reading)."""
    return os.path.isfile(path) and not os.path.islink(path) and inside(path, root)


def _candidates(student_dir, stage):
    """The student's files that may hold `stage`, most likely first."""
    named = [os.path.join(student_dir, "exercises", stage.module + ".py"),
             os.path.join(student_dir, stage.module + ".py"),
             os.path.join(student_dir, "notebooks", stage.module + ".ipynb"),
             os.path.join(student_dir, stage.module + ".ipynb")]
    found = [p for p in named if _regular(p, student_dir)]
    for folder in SEARCH:
        folder = os.path.join(student_dir, folder)
        if not os.path.isdir(folder) or os.path.islink(folder) or not inside(folder, student_dir):
            continue
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if path in found or name.startswith(".") or not name.endswith((".py", ".ipynb")) \
                    or not _regular(path, student_dir):
                continue
            source = _source(path)
            if source is not None and stages_in(source, path) == [stage]:
                found.append(path)
    return found


def pick_files(student_dir, stages, stubs_dir=None):
    """[(stage, path, rel, note)]: the file graded for each stage, its path in the student's
    repository ("" for the released stub) and a note for the summary ("" or why).

    Among the candidates, `make grade`'s rule (autograder.submission.choose): the released name first, then
    a file whose TODOs are filled in; with no candidate at all, the released stub from ``stubs_dir`` (the
    grader's exercises/), so the stage still shows its points."""
    stubs_dir = stubs_dir or EXERCISES
    picked = []
    for stage in stages:
        found = _candidates(student_dir, stage)
        note = ""
        if found:
            path, others = choose(stage, found, _source)
            rel = os.path.relpath(path, student_dir)
            if others:
                note = skipped_note(stage, path, others, student_dir)
        else:
            path, rel = os.path.join(stubs_dir, stage.filename), ""
            note = f"no file of this stage found: graded the released stub {stage.filename}"
            links = [os.path.relpath(p, student_dir) for p in [os.path.join(student_dir, f) for f in SEARCH if f]
                     + [os.path.join(student_dir, f, stage.module + x) for f in SEARCH for x in (".py", ".ipynb")]
                     if os.path.islink(p) or (os.path.lexists(p) and not inside(p, student_dir))]
            if links:
                note += (f" ({', '.join(dict.fromkeys(links))}: a symbolic link or a path through one, never "
                         "followed; commit the files themselves)")
        picked.append((stage, path, rel, note))
    return picked
