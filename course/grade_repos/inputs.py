"""The grade of record's input: the roster (Classroom 50's roster.csv), the deadline and the repository addresses."""
import csv
import datetime
import re

ROSTER_COLUMNS = ("username", "first_name", "last_name", "email", "section")
DEFAULT_REPO_URL = "https://github.com/{org}/{classroom}-{assignment}-{username}.git"
LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


class RepoError(ValueError):
    """Bad input (roster, deadline, options); the message names the file or option and what to do."""


def read_roster(path):
    """[{column: value}] of a Classroom 50 roster; RepoError naming the file and line of the first problem."""
    if not path:
        raise RepoError("no roster given: ROSTER=roster.csv (gh teacher roster list ORG CLASSROOM, or "
                        "CLASSROOM/roster.csv of your classroom50 repository)")
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            rows = list(csv.reader(f))
    except OSError as exc:
        raise RepoError(f"cannot read the roster {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        with open(path, "rb") as f:
            line = f.read()[:exc.start].count(b"\n") + 1
        raise RepoError(f"{path}, line {line}: not UTF-8 text (byte {exc.object[exc.start]:#04x}); save the roster "
                        "as UTF-8 CSV (Classroom 50 writes it so)") from exc
    if not rows:
        raise RepoError(f"{path}: empty file; a Classroom 50 roster starts with the header {','.join(ROSTER_COLUMNS)}")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in ROSTER_COLUMNS if c not in header]
    if missing:
        raise RepoError(f"{path}, line 1: the header lacks {', '.join(missing)}. Classroom 50's roster "
                        f"(CLASSROOM/roster.csv in your classroom50 repository) starts with the columns "
                        f"{','.join(ROSTER_COLUMNS)}; add the missing ones (all but username may be empty)")
    students, seen = [], {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < len(header):
            row = row + [""] * (len(header) - len(row))
        record = {h: row[i].strip() for i, h in enumerate(header) if h}
        name = record["username"]
        if not LOGIN.match(name):
            raise RepoError(f"{path}, line {number}: username {name!r} is not a GitHub login "
                            "(letters, digits and hyphens, 1-39 characters)")
        if name.lower() in seen:
            raise RepoError(f"{path}, line {number}: {name} is already on line {seen[name.lower()]}")
        seen[name.lower()] = number
        record["line"] = number
        students.append(record)
    if not students:
        raise RepoError(f"{path}: no students below the header")
    return students


def parse_deadline(text):
    """An aware UTC datetime; RepoError saying how to write it."""
    how = "write it as ISO 8601 with a time zone, e.g. DEADLINE=2026-12-01T23:59:00Z or 2026-12-01T23:59:00-05:00"
    if not text or not text.strip():
        raise RepoError(f"no deadline given: {how}")
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise RepoError(f"DEADLINE {text!r} is not a date and time: {how}") from None
    if when.tzinfo is None:
        raise RepoError(f"DEADLINE {text!r} has no time zone: {how}")
    return when.astimezone(datetime.timezone.utc)


def repo_url(template, student, org, classroom, assignment):
    if student.get("repository"):
        return student["repository"]
    try:
        return template.format(org=org, classroom=classroom, assignment=assignment, username=student["username"])
    except KeyError as exc:
        raise RepoError(f"--repo-url {template!r} names {{{exc.args[0]}}}: only {{org}}, {{classroom}}, "
                        "{assignment} and {username} are filled in") from None

