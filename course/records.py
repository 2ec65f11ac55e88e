"""What a class run stores per student, and reads back: the course's records of `make grade`.

For each graded student, in this order: the gradebook (committed), formgrader's copy of the notebooks
(COURSE/autograded/<student>/, each stage under its released name: course/autograded.py), the feedback page, then results.json, which marks the student done and records the
grading key (the submission's content hash, the grading config, the device tier and the grader's version). Workers
and Slurm tasks stage results in COURSE/.grading/<assignment>/graded/; only the collecting process (one at a time: a
lock) stores them.
The class table's rows, grades.csv and lms_upload.csv are read back from the results.json files, with the scores a TA
set by hand in formgrader (synced from the gradebook on each run) counted as the gradebook counts them.
"""
import contextlib
import csv
import fcntl
import functools
import hashlib
import io
import json
import os

from . import feedback, shown_path
from .layout import (layout_notes, linked_folder_note, misplaced_files, misplaced_note,  # noqa: F401
                     no_folder_note)
from .overrides import apply_overrides, capped, override_note, tier_maxima  # noqa: F401
from . import gradebook as gb_mod
from .settings import GRADING_DIR
from autograder.engine.report import read_results as read_results_json, write_text_atomic

GRADER_FAILED = "not gradable: the grader itself failed on this submission"
RETRY = "retry:"


def submissions(coursedir, assignment):
    """[(student, folder)] of every submission of `assignment`, sorted by student: each student with a folder
    submitted/<student>/<assignment>/, and each whose notebooks sit elsewhere in submitted/<student>/ (a folder
    Matmul/, files beside it). Those get a row of 0 with a note (grade_class names the files), not no row at all:
    an LMS upload would leave them out. Their `folder` does not exist."""
    root = os.path.join(coursedir.root, coursedir.submitted_directory)
    found = []
    if os.path.isdir(root):
        for student in sorted(os.listdir(root)):
            folder = os.path.join(root, student, assignment)
            if student.startswith(".") or not os.path.isdir(os.path.dirname(folder)):
                continue
            if os.path.isdir(folder) or misplaced_files(os.path.dirname(folder), assignment):
                found.append((student, folder))
    return found


def graded_files(folder):
    """The names the engine reads in a submission folder, as autograder.submission.collect lists them: every name
    ending .py or .ipynb, a folder or a file it cannot read included (those count for no stage, but they are read)."""
    return sorted(n for n in os.listdir(folder) if n.endswith((".py", ".ipynb")) and not n.startswith("."))


def submission_hash(folder):
    """The hash of what the engine reads in a submission folder: each file's name and bytes, and the name of each
    entry it could not read (a folder named like a file, a file it may not open) as such, so that fixing or removing
    one is a new submission."""
    from autograder.reading import files as reader
    h = hashlib.sha256()
    if linked_folder_note(folder):  # never read through the link: its note is the submission
        h.update(("linked\0" + linked_folder_note(folder)).encode())
        return h.hexdigest()
    if not os.path.isdir(folder):  # a student whose notebooks sit outside it: what is there, by name
        names = misplaced_files(os.path.dirname(folder), os.path.basename(folder), limit=1000)
        h.update(("no folder\0" + "\0".join(names)).encode())
        return h.hexdigest()
    for name in graded_files(folder) + (["timestamp.txt"] if os.path.lexists(os.path.join(folder, "timestamp.txt"))
                                        else []):
        try:  # as the engine reads it: regular files only, never through a link, never blocking on a FIFO
            data = reader.read_bytes(os.path.join(folder, name))
        except reader.NotRead as exc:
            h.update(f"{name}\0not read: {exc.why}\0".encode())
            continue
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


GRADER_FILES = (".py", ".toml", ".json", ".cfg", ".txt")  # the grader's code and config (not its caches)


@functools.lru_cache(maxsize=None)
def grader_version(package=None):
    """The version of the grader that grades: a hash of every code and config file of the autograder/ package (its
    path in the package and its bytes; __pycache__ and hidden files left out), computed once per process.

    It is part of every grading key (grading_key), so any change to the grader (a fixed check, a new message, other
    points) grades every student again on the next run, without --force; the same code gives the same version on
    every node of a cluster."""
    if package is None:
        import autograder
        package = os.path.dirname(os.path.abspath(autograder.__file__))
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(GRADER_FILES) and not name.startswith("."):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    data = f.read()
                h.update(f"{os.path.relpath(path, package)}\0{len(data)}\0".encode())
                h.update(data)
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def course_version():
    """The version of the class run's own code (course/), as grader_version hashes autograder/: a fixed class run
    (how results are stored, read back, noted) grades again too."""
    return grader_version.__wrapped__(os.path.dirname(os.path.abspath(__file__)))


def grading_key(sub_hash, cfg, device):
    """What a stored result depends on: the submission (its content hash), the grading config (the course's
    overrides applied), the device tier and the grader's version (grader_version: a hash of the autograder/
    package's code and config) with the class run's own (course/). A run skips a student only while all of them are
    unchanged; the submission's hash covers its timestamp.txt (lateness) too."""
    settings = {k: v for k, v in cfg.items() if k not in ("path", "course_overrides")}
    blob = json.dumps({"submission": sub_hash, "config": settings, "device": device, "grader": grader_version(),
                       "course": course_version()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def read_results(path):  # noqa: F811 (the engine's reader, with this run's grading key required)
    data = read_results_json(path)
    try:
        data["extra_data"]["course"]["grading_key"]
        return data
    except (KeyError, TypeError):
        return None


def valid_timestamp(text):
    """True when nbgrader's gradebook can store `text` as a submission's time (nbgrader.utils.parse_utc reads it)."""
    from nbgrader.utils import parse_utc
    try:
        parse_utc(text)
        return True
    except (ValueError, TypeError, OverflowError):
        return False


def read_timestamp(folder):
    """(the time nbgrader's timestamp.txt of a submission gives, or None; a note where the file is there but gives
    no time). A file that is empty, binary or not a time never stops the class: the timestamp is unknown, and the
    note says so with the file's content, shortened."""
    from autograder.reading import files as reader
    path = os.path.join(folder, "timestamp.txt")
    if not os.path.lexists(path):
        return None, ""
    try:  # the bounded reader: a FIFO or a link named timestamp.txt is not read (it hung the class run)
        data = reader.read_bytes(path, reader.MAX_TIMESTAMP_BYTES)
    except reader.NotRead as exc:
        return None, f"timestamp.txt was not read ({exc.why}): the submission's time is unknown"
    text = data.decode("utf-8-sig", errors="replace").strip()
    if text and text.isprintable() and valid_timestamp(text):
        return text, ""
    shown = repr(text[:40] + ("..." if len(text) > 40 else "")) if text else "nothing"
    return None, f"timestamp.txt holds {shown}, not a time: the submission's time is unknown"


def add_missing_stages(report, cfg, student, assignment, note=True):
    """autograder.engine.missing.add_missing_stages for submitted/<student>/<assignment>/ (the class run's rule)."""
    from autograder.engine.missing import add_missing_stages as add
    return add(report, cfg, f"submitted/{student}/{assignment}/", note)


LMS_UPLOAD = "lms_upload.csv"


def lms_upload(rows):
    """The upload file an LMS gradebook takes: one row per student, the percent of the grade of record (the
    gradebook's: a TA's override counted) out of the points of the tier it was graded in, with that tier beside it.
    A simulator-tier percent is provisional (no speed checks; out of the simulator's points): the GPU tier's is the
    grade of record."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student_id", "percent", "tier", "provisional", "score", "max_score"])
    for r in rows:
        percent = 100.0 * r["score"] / r["max_score"] if r["max_score"] else 0.0
        w.writerow([r["student"], f"{percent:.2f}", r["device"], r["provisional"], f"{r['score']:g}",
                    f"{r['max_score']:g}"])
    return buf.getvalue()


def staging_dir(course, assignment):
    """Where workers and Slurm tasks leave graded results for the collecting process."""
    return os.path.join(course, GRADING_DIR, assignment, "graded")


class ClassRecords:
    """The stored results of one course and assignment (a ClassGrader is one: course, coursedir, assignment, cfg,
    device and say are its)."""

    def results_path(self, student):
        return os.path.join(self.course, self.coursedir.feedback_directory, student, self.assignment, "results.json")

    def staged_path(self, student):
        return os.path.join(staging_dir(self.course, self.assignment), f"{student}.json")

    def key_of(self, folder):
        sub_hash = submission_hash(folder)
        return grading_key(sub_hash, self.cfg, self.device), sub_hash

    def autograded_path(self, student):
        return os.path.join(self.course, self.coursedir.autograded_directory, student, self.assignment)

    def stored(self, student, key):
        """True when the student's stored result is for this submission and config and formgrader's copy of it
        is still there (nbgrader's own autograde, or a hand, may have removed it)."""
        old = read_results(self.results_path(student))
        return (old is not None and old["extra_data"]["course"]["grading_key"] == key
                and not old["extra_data"].get("regrade")  # checks the grader could not run: grade them again
                and os.path.isdir(self.autograded_path(student)))

    def store(self, gb, student, folder, data):
        """Gradebook (committed), formgrader copy, feedback page, then results.json: the 'done' mark."""
        course = data["extra_data"]["course"]
        stamp = course.get("timestamp")
        stamp = stamp if isinstance(stamp, str) and valid_timestamp(stamp) else None  # a result staged before checks
        course["overrides"] = gb_mod.record(gb, student, course["stage_scores"], stamp, self.assignment,
                                            comments=feedback.stage_comments(data))
        from autograder.config import stage_max
        from . import autograded
        shown = folder if not linked_folder_note(folder) else os.path.join(self.autograded_path(student), "-")
        autograded.write(self.autograded_path(student), shown, data["extra_data"].get("files") or {},
                         gb_mod.solution_cells(gb, self.assignment), stage_max(self.cfg), student, self.assignment)
        self.write_feedback(student, data)

    def write_feedback(self, student, data):
        """The feedback page, then results.json (the 'done' mark), both with the grade of record."""
        apply_overrides(data)
        path = self.results_path(student)
        write_text_atomic(os.path.join(os.path.dirname(path), "index.html"),
                          feedback.page(student, self.assignment, data))
        from autograder.engine.report import write_json_atomic
        write_json_atomic(path, data)

    def sync_overrides(self, gb):
        """Bring each stored result's record of the TA's scores (set in formgrader, perhaps since the last run) up to
        date with the gradebook, rewriting the feedback page where it changed; returns {student: overrides}.

        A re-grade's note ("regraded": make grade's old and new score under the override) stays until the TA
        changes or clears that score: the TA decides which stands."""
        found = gb_mod.overrides(gb, self.assignment)
        for student, _ in submissions(self.coursedir, self.assignment):
            data = read_results(self.results_path(student))
            if data is None:
                continue
            course = data["extra_data"]["course"]
            stored = course.get("overrides") or {}
            now, maxima = {}, tier_maxima(data)
            for stage, entry in found.get(student, {}).items():
                now[stage] = capped(entry, maxima.get(stage))
                old = stored.get(stage) or {}
                if old.get("regraded") and old.get("manual") == now[stage]["manual"] and old.get("auto") == entry["auto"]:
                    now[stage]["regraded"] = old["regraded"]
            if now != stored:
                course["overrides"] = now
                self.write_feedback(student, data)
        return found

    def collect_one(self, gb, student, folder, staged):
        """Store a staged result (gradebook, feedback, results.json), then remove the staged file.

        Returns False (and removes it) when the staged result is unreadable or for an older submission."""
        data = read_results(staged)
        key = data["extra_data"]["course"]["grading_key"].removeprefix(RETRY) if data is not None else None
        if key != self.key_of(folder)[0]:
            with contextlib.suppress(FileNotFoundError):
                os.remove(staged)
            return False
        self.store(gb, student, folder, data)
        with contextlib.suppress(FileNotFoundError):
            os.remove(staged)
        return True

    def collect_staged(self, gb, found):
        """Store every staged result of these students (graded by workers or Slurm tasks before now)."""
        folders = dict(found)
        names = []
        root = staging_dir(self.course, self.assignment)
        if os.path.isdir(root):
            names = sorted(n[:-5] for n in os.listdir(root) if n.endswith(".json") and not n.startswith("."))
        stored = 0
        for student in names:
            if student in folders and self.collect_one(gb, student, folders[student], self.staged_path(student)):
                stored += 1
        if stored:
            self.write_csv(self.rows())
        return stored

    @contextlib.contextmanager
    def collecting(self):
        """The gradebook, held by one process at a time (a lock file in COURSE/.grading/)."""
        folder = os.path.join(self.course, GRADING_DIR, self.assignment)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "collect.lock"), "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.say("waiting for another run that is writing this course's gradebook ...")
                fcntl.flock(lock, fcntl.LOCK_EX)
            source = os.path.join(self.course, self.coursedir.source_directory, self.assignment)
            if not os.path.isdir(source):  # formgrader lists an assignment only when its source folder exists
                from .notebooks import write_ipynbs
                write_ipynbs(source)
                self.say(f"wrote the assignment's source notebooks to {shown_path(source)} (formgrader needs them)")
            with gb_mod.open_gradebook(self.coursedir) as gb:
                gb_mod.sync_assignment(gb, self.cfg, self.assignment)
                yield gb
                self.sync_overrides(gb)  # a TA's scores set in formgrader since the last run, too

    def rows(self):
        rows = []
        cache = self.__dict__.setdefault("_results_cache", {})  # results.json read again only when it changed
        for student, _ in submissions(self.coursedir, self.assignment):
            path = self.results_path(student)
            try:
                st = os.stat(path)
                stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            except OSError:
                continue
            if cache.get(path, (None,))[0] != stamp:
                cache[path] = (stamp, read_results(path))
            data = cache[path][1]
            if data is None:
                continue
            course = data["extra_data"]["course"]
            regrade = data["extra_data"].get("regrade") or []
            note = feedback.needs_a_look(data, width=None)
            if regrade or any(p.startswith(GRADER_FAILED) for p in course["problems"]):
                note = f"RE-GRADE ({len(regrade) or 'all'} not run for the grader's trouble); " + note
            overrides = course.get("overrides") or {}
            if overrides:  # the grade of record is the gradebook's: the TA's score where one is set
                note = "; ".join([override_note(overrides)] + ([note] if note else []))
            stages = {**course["stage_scores"], **{k: v["manual"] for k, v in overrides.items()}}
            auto = course.get("auto_score", data["score"])
            score = round(auto + sum(v["manual"] - v["auto"] for v in overrides.values()), 4)
            timing = data["extra_data"].get("timing")
            rows.append({"student": student, "stages": stages, "score": score, "auto_score": auto,
                         "max_score": data["max_score"], "gradebook_total": course["gradebook_total"],
                         "device": data["extra_data"]["device"], "provisional": data["extra_data"]["provisional"],
                         "seconds": data["execution_time"], "graded_at": course["graded_at"], "note": note,
                         "timing": timing if isinstance(timing, dict) else {}})
        return rows

    def write_csv(self, rows):
        from autograder.stages import STAGES
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        names = [s.name for s in STAGES]
        w.writerow(["student", "assignment", "score", "auto_score", "max_score", "gradebook_max_score", "provisional",
                    "device"] + names + ["seconds", "graded_at", "note"])
        for r in rows:
            w.writerow([r["student"], self.assignment, f"{r['score']:g}", f"{r['auto_score']:g}", f"{r['max_score']:g}",
                        f"{r['gradebook_total']:g}", r["provisional"], r["device"]]
                       + [f"{r['stages'].get(n, 0):g}" for n in names] + [r["seconds"], r["graded_at"], r["note"]])
        write_text_atomic(os.path.join(self.course, "grades.csv"), buf.getvalue())
        write_text_atomic(os.path.join(self.course, LMS_UPLOAD), lms_upload(rows))
