"""The grade of record's outputs: repos.json and repos.csv (every fetch, pick and flag, written after each student
so nothing fetched is lost), grades-of-record.csv, and the roster's names in the gradebook."""
import csv
import io
import json
import os

from autograder.engine.report import write_json_atomic, write_text_atomic

from .deadline import iso


def read_previous(course):
    """{username: record} of the previous run's repos.json (its witnesses: sightings and pin); {} if none."""
    try:
        with open(os.path.join(course, "repos.json"), encoding="utf-8") as f:
            return {r["username"]: r for r in json.load(f)["students"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _write_csv(path, header, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    write_text_atomic(path, buf.getvalue())


def name_students(course, students):
    """Every roster student in the gradebook under the roster's names (formgrader shows "None, None" without
    them), graded or not: nbgrader export then has a row for each."""
    from .. import gradebook as gb_mod
    with gb_mod.open_gradebook(gb_mod.course_directory(course)) as gb:
        for s in students:
            gb.update_or_create_student(s["username"], first_name=s.get("first_name") or None,
                                        last_name=s.get("last_name") or None, email=s.get("email") or None)


def write_records(course, records, deadline, mode):
    write_json_atomic(os.path.join(course, "repos.json"), {"deadline": iso(deadline), "ref": mode, "students": records})
    _write_csv(os.path.join(course, "repos.csv"),
               ["username", "repository", "ref", "commit", "submitted_at", "witness", "late_commits_ignored",
                "fetched_at", "flags"],
               [[r["username"], r["repository"], r["ref"] or "", r["commit"] or "", r["submitted_at"] or "",
                 r.get("witness") or "", r["late_commits_ignored"], r["fetched_at"], " | ".join(r["flags"])]
                for r in records])


def write_grades_of_record(course, students, records):
    scores = {}
    path = os.path.join(course, "grades.csv")
    if os.path.isfile(path):
        with open(path, encoding="utf-8", newline="") as f:
            scores = {row["student"]: row for row in csv.DictReader(f)}
    by_name = {r["username"]: r for r in records}
    rows = []
    for s in students:
        r, g = by_name[s["username"]], scores.get(s["username"], {})
        rows.append([s["username"], s["first_name"], s["last_name"], s["section"], g.get("score", ""),
                     g.get("max_score", ""), g.get("provisional", ""), r["commit"] or "", r["submitted_at"] or "",
                     r.get("witness") or "", " | ".join(r["flags"])])
    _write_csv(os.path.join(course, "grades-of-record.csv"),
               ["username", "first_name", "last_name", "section", "score", "max_score", "provisional", "commit",
                "submitted_at", "witness", "flags"], rows)

