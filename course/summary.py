"""What a class run prints at the end: the class table, the scores TAs set by hand, the median time per submission,
the histogram (also ``COURSE/grades-histogram.png``), what to upload and the nbgrader commands to run next.

It reads the stored rows (course/records.py's ClassRecords.rows) of the grader it is given and writes only the
histogram's picture; grades.csv and lms_upload.csv are written by the grader before it is called.
"""
import os
import shlex
import sys
import time

from . import feedback, shown_path
from .records import read_results


def say_summary(grader, rows):
    """Print the summary of the class run `grader` (course.grade_class.ClassGrader) for its stored `rows`."""
    if not rows:
        grader.say("no graded submissions yet")
        return
    max_score = max(r["max_score"] for r in rows)
    short = lambda note: note if len(note) <= 72 else note[:69] + "..."  # noqa: E731 (grades.csv has it whole)
    grader.say("\n" + feedback.summary_table([dict(r, note=short(r["note"])) for r in rows]))
    say_overrides(grader)
    provisional = sum(1 for r in rows if r["provisional"])
    if provisional:
        grader.say(f"{provisional} of {len(rows)} graded in the simulator tier: provisional (speed not timed; "
                   "the GPU tier's grade is the grade of record)")
    timing = feedback.timing_summary(rows) if getattr(grader, "graded_now", 0) else ""
    if timing:
        grader.say("\n" + timing)
    grader.say(f"\nHistogram of totals (of {max_score:g} points graded on "
               f"{'the GPU' if rows[0]['device'] == 'gpu' else 'the simulator'}; "
               f"{rows[0]['gradebook_total']:g} in the GPU tier):")
    grader.say(feedback.histogram_text([r["score"] for r in rows], max_score))
    png = os.path.join(grader.course, "grades-histogram.png")
    feedback.histogram_png(png, [r["score"] for r in rows], max_score)
    if any(r["provisional"] for r in rows):
        grader.say("Provisional: speed and GPU-tool checks need a GPU and counted neither way.")
    rel = shown_path(grader.course)
    grader.say(f"For the LMS: {rel}/lms_upload.csv (student_id, percent of the grade of record, tier, provisional; "
               "README: What to upload).")
    grader.say(f"Wrote {rel}/grades.csv, {rel}/grades-histogram.png, {rel}/{grader.coursedir.feedback_directory}/"
               f"<student>/{grader.assignment}/index.html and results.json; scores are in the gradebook.")
    grader.say("\n".join(["Run from here:"] + [f"  {line}" for line in
                                               nbgrader_commands(grader.course, grader.assignment)]))
    if grader.started is not None and "grading" in grader.phases:
        phases = grader.phases
        total = time.perf_counter() - grader.started
        grader.say(f"This run took {total:.1f} s: {phases['set-up']:.1f} s before the first student (the "
                   f"gradebook; workers start meanwhile), {phases['grading']:.1f} s grading, "
                   f"{total - phases['set-up'] - phases['grading']:.1f} s for this summary.")


def say_overrides(grader):
    """Every score a TA set by hand in formgrader, with make grade's beside it; a re-grade that changed make
    grade's score under one is said with both scores. The hand score stands (nbgrader counts a manual_score
    instead of the auto_score) until the TA changes or clears it."""
    found = []
    for r in grader.rows():
        data = read_results(grader.results_path(r["student"]))
        for stage, o in ((data or {}).get("extra_data", {}).get("course", {}).get("overrides") or {}).items():
            found.append((r["student"], stage, o))
    if not found:
        return
    grader.say(f"\n{len(found)} scores set by hand in formgrader stand over make grade's (the gradebook, the "
               "export, the table, grades.csv and the feedback pages count them):")
    for student, stage, o in found:
        line = f"  {student}: {stage} {o['manual']:g} by hand; make grade's score {o['auto']:g}"
        if o.get("regraded"):
            line += (". It was graded again (a changed submission, config or grader): make grade's score went "
                     f"from {o['regraded'][0]:g} to {o['regraded'][1]:g}, and the hand score {o['manual']:g} "
                     "still stands: keep it, or clear it in formgrader (empty the score box) to use make grade's")
        grader.say(line)


def nbgrader_commands(course, assignment):
    """The nbgrader commands the summary prints, as they run from the current folder: `cd` into the course, then
    this interpreter's nbgrader by its path from there (outside the venv a bare `nbgrader` is not found)."""
    rel = shown_path(course)
    tool = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "nbgrader")
    tool = shown_path(tool, course)
    cd = f"cd {shlex.quote(rel)} && {shlex.quote(tool)}"
    return [f"{cd} export                      # gradebook-export.csv, with each student's tier",
            f"{cd} generate_feedback {assignment}   # nbgrader's page of each notebook, beside index.html"]
