"""Where a student's files sit in submitted/ and what the class run says of it: notebooks beside the assignment's
folder, no such folder, a folder that is a link (never followed)."""
import os


def misplaced_files(student_dir, assignment, limit=10):
    """Notebooks and .py files of a student that the class run does not grade, relative to submitted/<student>/:
    those beside the assignment's folder, in a folder inside it (matmul/sub/) or in a folder of another name
    (Matmul/, "matmul (1)/"). At most `limit` named, then how many more; three folders deep at most."""
    found = []
    for folder, dirs, files in os.walk(student_dir):
        rel = os.path.relpath(folder, student_dir)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if rel.count(os.sep) < 2 else []
        if rel == assignment:
            continue  # the graded folder's own files
        found += [os.path.normpath(os.path.join(rel, n)) for n in sorted(files)
                  if n.endswith((".py", ".ipynb")) and not n.startswith(".")]
    return found[:limit] + ([f"{len(found) - limit} more"] if len(found) > limit else [])


def misplaced_note(student, assignment, files):
    """The class run's note on a student's files outside submitted/<student>/<assignment>/."""
    return (f"not graded: {', '.join(files)} in submitted/{student}/, outside {assignment}/ (the class run grades "
            f"only the files directly in submitted/{student}/{assignment}/: move them there)")


def layout_notes(coursedir, assignment, students=None):
    """[(student, note)] of the files the class run does not grade: those outside submitted/<student>/<assignment>/
    of a student who has that folder, and every notebook of a student who has none (a folder Matmul/, files beside
    it): named in the run's output, never skipped without a word. `students`: only these."""
    root = os.path.join(coursedir.root, coursedir.submitted_directory)
    notes = []
    for student in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        base = os.path.join(root, student)
        if student.startswith(".") or not os.path.isdir(base) or (students and student not in students):
            continue
        files = misplaced_files(base, assignment)
        if not files:
            continue
        if os.path.isdir(os.path.join(base, assignment)):
            notes.append((student, misplaced_note(student, assignment, files)))
        else:
            notes.append((student, no_folder_note(student, assignment, files)))
    return notes


def linked_folder_note(folder):
    """Why a submission folder is never read ("" when it is fine): it, or submitted/<student>/, is a symbolic link,
    or lies outside submitted/ by a link on its way; such a folder may be the course's solutions or a classmate's."""
    student_dir = os.path.dirname(folder)
    root = os.path.dirname(student_dir)
    student, assignment = os.path.basename(student_dir), os.path.basename(folder)
    for path, rel in ((student_dir, f"submitted/{student}"), (folder, f"submitted/{student}/{assignment}")):
        if os.path.islink(path):
            return (f"not graded at all: {rel} is a symbolic link, never followed (put the files themselves there): "
                    "every stage counts 0")
    real, top = os.path.realpath(folder), os.path.realpath(root)
    if os.path.lexists(folder) and not real.startswith(top.rstrip(os.sep) + os.sep):
        return f"not graded at all: submitted/{student}/{assignment} lies outside submitted/: every stage counts 0"
    return ""


def no_folder_note(student, assignment, files):
    """The note of a student whose submitted/<student>/ has no <assignment>/ folder, but notebooks elsewhere."""
    return (f"not graded at all: submitted/{student}/ has no {assignment}/ folder, but holds {', '.join(files)} "
            f"(move them into submitted/{student}/{assignment}/): every stage counts 0")
