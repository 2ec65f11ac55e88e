"""The grade of record: grade every student's repository as it stood at the deadline (``make grade-repos``).

    python -m course.grade_repos --roster students.csv --deadline 2026-12-01T23:59:00Z
                                 [--assignment matmul] [--course DIR] [--org ORG --classroom NAME | --repo-url TEMPLATE]
                                 [--ref branch|submit-tag] [--device auto|gpu|sim] [--force] [--dry-run]
                                 [-- ARGS for course.grade_class]

A student owns their repository and its workflow, so the points CI shows them are
feedback. This command makes the grade from the same repositories, on the
instructor's machine, with the grader the instructor holds:

1. Reads the roster in Classroom 50's format (``CLASSROOM/roster.csv`` of the
   classroom50 repository: ``username,first_name,last_name,email,section`` and
   optionally ``github_id``, ``role``, ``repository``).
2. Fetches each student's repository into ``COURSE/repos/<username>.git`` (a bare
   copy, every branch and tag; later runs fetch again). The address is
   ``--repo-url`` with ``{org}``, ``{classroom}``, ``{assignment}`` and ``{username}``
   filled in, by default Classroom 50's ``https://github.com/{org}/{classroom}-{assignment}-{username}.git``;
   a ``repository`` column in the roster overrides it per student.
3. Picks the graded commit: the newest commit of the default branch's first-parent
   history committed at or before the deadline (``--ref branch``), or the newest
   ``submit/*`` tag at or before it (``--ref submit-tag``; the later of the time in
   Classroom 50's tag name ``submit/<UTC time>-<sha>`` and the commit's date). Later
   commits are ignored and counted.
4. Flags what a student should not have done (``flags`` below): a changed workflow
   or grader file, rewritten history, dates that run backwards.
5. Lays each graded commit out as ``COURSE/submitted/<username>/ASSIGNMENT/`` (the
   file each stage is graded from, picked as in every other way of grading, and
   ``timestamp.txt``) and grades the class with course.grade_class (``make grade``:
   gradebook, grades.csv, feedback pages; its options after ``--``).
6. Records every graded commit and flag in ``COURSE/repos.csv`` and
   ``COURSE/repos.json``, and writes ``COURSE/grades-of-record.csv``.

Commit dates are written by the student's own git and can be set by hand. The
``submit/*`` tags Classroom 50's runner makes on each graded push, and the record of
earlier fetches (run this command once right after the deadline, and again later),
are the witnesses this command checks them against.
"""
import argparse
import csv
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

from autograder.engine.report import write_json_atomic, write_text_atomic

from . import ASSIGNMENT, ROOT

# Classroom 50's roster.csv: username,first_name,last_name,email,section,github_id,role; `gh teacher roster
# import` takes the first five (github_id and role are filled in by Classroom 50), and so does this.
ROSTER_COLUMNS = ("username", "first_name", "last_name", "email", "section")
DEFAULT_REPO_URL = "https://github.com/{org}/{classroom}-{assignment}-{username}.git"
LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
SUBMIT_TAG_TIME = re.compile(r"^submit/(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})Z-")
WATCHED = (".github", ".gitlab-ci.yml", ".classroom50.yaml")        # the course's workflow and grading files
GRADER_NAMES = {"autograder", "classroom", "course", "sitecustomize.py", "usercustomize.py", "conftest.py",
                "result.json", "release-body.md", "results.json"}   # files that belong to the grader, not a student
CONFIG_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nbgrader_config.py")


class RepoError(ValueError):
    """Bad input (roster, deadline, options); the message names the file or option and what to do."""


# ----------------------------------------------------------------------------
# Input


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


def iso(when):
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ----------------------------------------------------------------------------
# git


class Git:
    """git on one bare repository."""

    def __init__(self, path):
        self.path = path

    def run(self, *args, check=True):
        p = subprocess.run(["git", "--git-dir", self.path, *args], capture_output=True, text=True)
        if check and p.returncode != 0:
            # git's whole message: its last line alone ("and the repository exists.") says nothing
            raise RuntimeError(" ".join(ln.strip() for ln in p.stderr.splitlines() if ln.strip())
                               or f"git {args[0]} failed (exit status {p.returncode})")
        return p

    def out(self, *args):
        return self.run(*args).stdout.strip()

    def refs(self):
        text = self.out("for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags")
        found = {}
        for line in text.splitlines():
            sha, ref = line.split(" ", 1)
            found[ref] = self.out("rev-parse", f"{sha}^{{commit}}") if ref.startswith("refs/tags/") else sha
        return found

    def is_ancestor(self, old, new):
        return self.run("merge-base", "--is-ancestor", old, new, check=False).returncode == 0

    def commit_time(self, sha):
        return datetime.datetime.fromtimestamp(int(self.out("show", "-s", "--format=%ct", sha)), datetime.timezone.utc)


def fetch(url, mirror):
    """Fetch every branch and tag of `url` into the bare repository `mirror`; (refs before, refs after, HEAD branch)."""
    if not os.path.isdir(mirror):
        subprocess.run(["git", "init", "--quiet", "--bare", mirror], check=True, capture_output=True)
    git = Git(mirror)
    before = git.refs()
    git.run("fetch", "--quiet", "--prune", "--force", url, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
    head = subprocess.run(["git", "ls-remote", "--symref", url, "HEAD"], capture_output=True, text=True)
    branch = None
    for line in head.stdout.splitlines():
        if line.startswith("ref: ") and line.endswith("\tHEAD"):
            branch = line[5:].split("\t")[0]
    return before, git.refs(), branch


# ----------------------------------------------------------------------------
# One repository: the graded commit and the flags


def submit_time(git, tag, sha):
    """(submission time, named time) of a submit/* tag. The named time is the UTC time in Classroom 50's
    tag name (None for other names); the submission time is the later of it and the commit's date, since
    nothing is submitted before it is committed."""
    committed = git.commit_time(sha)
    m = SUBMIT_TAG_TIME.match(tag[len("refs/tags/"):])
    named = datetime.datetime.fromisoformat(f"{m[1]}T{m[2]}:{m[3]}:{m[4]}+00:00") if m else None
    return max(committed, named or committed), named


def baseline(git, head):
    """The student's starting point: the commit that added .classroom50.yaml (Classroom 50's accept), else the root."""
    added = git.out("log", "--reverse", "--first-parent", "--diff-filter=A", "--format=%H", head, "--",
                    ".classroom50.yaml").split()
    if added:
        return added[0]
    return git.out("rev-list", "--first-parent", "--max-parents=0", head).split()[-1]


def inspect(git, refs, before, branch, deadline, mode="branch", memory=None):
    """What to grade in one fetched repository, and every flag; a dict (see repos.json)."""
    memory = memory or {}
    flags = []
    branches = {r: s for r, s in refs.items() if r.startswith("refs/heads/")}
    if branch not in branches:
        branch = next((b for b in ("refs/heads/main", "refs/heads/master") if b in branches),
                      next(iter(sorted(branches)), None))
    info = {"branch": branch[len("refs/heads/"):] if branch else None, "commit": None, "ref": None,
            "submitted_at": None, "late_commits_ignored": 0, "flags": flags}
    for ref, old in sorted(before.items()):
        new = refs.get(ref)
        if new and new != old and not git.is_ancestor(old, new):
            flags.append(f"history rewritten: {ref} was force-pushed from {old[:10]} to {new[:10]} "
                         "since the previous fetch")
        elif new is None and ref.startswith("refs/tags/submit/"):
            flags.append(f"history rewritten: {ref} was deleted since the previous fetch")
    if branch is None:
        flags.append("no branch: nothing was ever pushed")
        return info
    head = branches[branch]
    history = git.out("rev-list", "--first-parent", "--format=%ct", head).splitlines()
    commits = [(history[i].split()[1], int(history[i + 1])) for i in range(0, len(history) - 1, 2)
               if history[i].startswith("commit ")]
    limit = deadline.timestamp()
    for (sha, t), (parent, pt) in zip(commits, commits[1:]):
        if t < pt:
            flags.append(f"dates run backwards: {sha[:10]} is dated before its parent {parent[:10]} "
                         "(commit dates can be set by hand)")
    submits = []
    for ref, sha in refs.items():
        if ref.startswith("refs/tags/submit/"):
            when, named = submit_time(git, ref, sha)
            if named and when - named > datetime.timedelta(minutes=5):
                flags.append(f"{ref[len('refs/tags/'):]} is named {iso(named)} but its commit is dated "
                             f"{iso(when)}: a tag made by hand")
            submits.append((when, ref, sha))
    submits.sort(key=lambda x: (x[0], x[1]))
    on_branch = set(c for c, _ in commits)
    for when, ref, sha in submits:
        if when.timestamp() <= limit and sha not in on_branch:
            flags.append(f"history rewritten: {ref[len('refs/tags/'):]} (submitted {iso(when)}) is no longer on "
                         f"{info['branch']}")
    if mode == "submit-tag":
        timely = [x for x in submits if x[0].timestamp() <= limit]
        info["late_commits_ignored"] = sum(1 for x in submits if x[0].timestamp() > limit)
        if timely:
            when, ref, sha = timely[-1]
            info.update(commit=sha, ref=ref[len("refs/tags/"):], submitted_at=iso(when))
    else:
        timely = [(sha, t) for sha, t in commits if t <= limit]
        info["late_commits_ignored"] = next((i for i, (_, t) in enumerate(commits) if t <= limit), len(commits))
        if timely:
            sha, t = timely[0]
            info.update(commit=sha, ref=info["branch"],
                        submitted_at=iso(datetime.datetime.fromtimestamp(t, datetime.timezone.utc)))
    if info["commit"] is None:
        flags.append(f"nothing {'submitted' if mode == 'submit-tag' else 'committed'} by the deadline")
        return info
    first = memory.get("after_deadline_commit")
    if first and first != info["commit"]:
        flags.append(f"the graded commit changed since the fetch of {memory.get('after_deadline_fetch')}: "
                     f"{first[:10]} then, {info['commit'][:10]} now (a commit dated before the deadline was pushed "
                     "after it, or history was rewritten)")
    base = baseline(git, head)
    info["baseline"] = base
    changed = git.out("diff", "--name-status", "--no-renames", base, info["commit"], "--", *WATCHED)
    for line in changed.splitlines():
        status, path = line.split("\t", 1)
        by = git.out("log", "--format=%h %s", f"{base}..{info['commit']}", "--", path).splitlines()
        how = {"M": "modified", "A": "added", "D": "deleted"}.get(status, status)
        flags.append(f"workflow or grading file changed ({how}): {path}"
                     + (f" by {'; '.join(by[:3])}" + (f" and {len(by) - 3} more" if len(by) > 3 else "") if by else ""))
    tree = git.out("ls-tree", "-r", "--name-only", info["commit"]).splitlines()
    for path in tree:
        top = path.split("/", 1)[0]
        if top in GRADER_NAMES or path.endswith(".pth"):
            flags.append(f"grader file in the repository: {path}")
    return info


# ----------------------------------------------------------------------------
# The course folder


def lay_out(git, commit, folder, submitted_at):
    """COURSE/submitted/<student>/ASSIGNMENT/: the file graded for each stage (autograder/repository.py picks it)."""
    from autograder.repository import pick_files
    from autograder.stages import STAGES
    with tempfile.TemporaryDirectory(prefix="grade-repos-") as tree:
        archive = subprocess.run(["git", "--git-dir", git.path, "archive", "--format=tar", commit],
                                 capture_output=True, check=True).stdout
        skipped = []

        def only_data(member, dest):
            """tarfile's "data" filter, skipping (not failing on) what it refuses: a link to an absolute path or
            out of the tree is not a file the grader needs."""
            try:
                return tarfile.data_filter(member, dest)
            except tarfile.FilterError as exc:
                skipped.append(f"{member.name} ({type(exc).__name__})")
                return None
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tree, filter=only_data)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.makedirs(folder)
        picked = []
        for stage, path, rel, note in pick_files(tree, STAGES):
            shutil.copyfile(path, os.path.join(folder, stage.module + os.path.splitext(path)[1]))
            picked.append({"stage": stage.name, "file": rel or None, "note": note})
        if skipped:
            picked.append({"stage": None, "file": None, "note": "not copied: " + ", ".join(skipped)})
    when = datetime.datetime.strptime(submitted_at, "%Y-%m-%dT%H:%M:%SZ")
    with open(os.path.join(folder, "timestamp.txt"), "w", encoding="utf-8") as f:
        f.write(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC") + "\n")
    return picked


def _write_csv(path, header, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    write_text_atomic(path, buf.getvalue())


def repo_url(template, student, org, classroom, assignment):
    if student.get("repository"):
        return student["repository"]
    try:
        return template.format(org=org, classroom=classroom, assignment=assignment, username=student["username"])
    except KeyError as exc:
        raise RepoError(f"--repo-url {template!r} names {{{exc.args[0]}}}: only {{org}}, {{classroom}}, "
                        "{assignment} and {username} are filled in") from None


def run(roster, deadline, course, assignment=ASSIGNMENT, url_template=None, org=None, classroom=None,
        mode="branch", device="auto", force=False, dry_run=False, grade_args=(), out=sys.stdout):
    """Fetch, inspect, lay out and grade the class; return the records (list of dicts)."""
    say = lambda text: print(text, file=out, flush=True)  # noqa: E731
    students = read_roster(roster)
    deadline = parse_deadline(deadline) if isinstance(deadline, str) else deadline
    if mode not in ("branch", "submit-tag"):
        raise RepoError(f"--ref {mode!r}: use branch or submit-tag")
    template = url_template or DEFAULT_REPO_URL
    if url_template is None and not (org and classroom) and not all(s.get("repository") for s in students):
        raise RepoError("say where the repositories are: --org ORG --classroom NAME (Classroom 50's "
                        "ORG/CLASSROOM-ASSIGNMENT-USERNAME), or --repo-url with {username} in it")
    course = os.path.abspath(course)
    os.makedirs(os.path.join(course, "repos"), exist_ok=True)
    if not os.path.isfile(os.path.join(course, "nbgrader_config.py")):
        shutil.copyfile(CONFIG_TEMPLATE, os.path.join(course, "nbgrader_config.py"))
    record_path = os.path.join(course, "repos.json")
    try:
        with open(record_path, encoding="utf-8") as f:
            previous = {r["username"]: r for r in json.load(f)["students"]}
    except (OSError, ValueError, KeyError, TypeError):
        previous = {}
    now = datetime.datetime.now(datetime.timezone.utc)
    say(f"{len(students)} students on {roster}; deadline {iso(deadline)}; grading the "
        f"{'newest submit/* tag' if mode == 'submit-tag' else 'newest commit'} at or before it")
    records, graded = [], []
    for student in students:
        name = student["username"]
        url = repo_url(template, student, org, classroom, assignment)
        rec = {"username": name, "repository": url, "fetched_at": iso(now), "commit": None, "ref": None,
               "submitted_at": None, "late_commits_ignored": 0, "flags": [], "graded": False}
        memory = dict(previous.get(name, {}).get("memory", {}))
        mirror = os.path.join(course, "repos", name + ".git")
        try:
            before, refs, branch = fetch(url, mirror)
            rec.update(inspect(Git(mirror), refs, before, branch, deadline, mode, memory))
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            rec["flags"].append(f"fetch failed: {exc}")
        if rec["commit"] and now > deadline and "after_deadline_commit" not in memory:
            memory.update(after_deadline_commit=rec["commit"], after_deadline_fetch=iso(now))
        rec["memory"] = memory
        if rec["commit"]:
            folder = os.path.join(course, "submitted", name, assignment)
            try:
                rec["files"] = lay_out(Git(mirror), rec["commit"], folder, rec["submitted_at"])
                graded.append(name)
            except Exception as exc:  # one repository's trouble does not stop the others
                rec["flags"].append(f"could not lay out the commit for grading: {type(exc).__name__}: {exc}")
        mark = "FLAGGED " if any(not f.startswith("nothing") for f in rec["flags"]) else ""
        say(f"  {mark}{name}: " + (f"{rec['ref']} at {rec['commit'][:10]} ({rec['submitted_at']})"
                                    if rec["commit"] else "not graded")
            + (f", {rec['late_commits_ignored']} later commit(s) ignored" if rec["late_commits_ignored"] else "")
            + "".join(f"\n      - {f}" for f in rec["flags"]))
        records.append(rec)
        _record(course, records, deadline, mode)  # after each student: what was fetched is never lost
    if dry_run or not graded:
        say("dry run: nothing graded" if dry_run else "no repository had anything to grade")
        return records
    from . import grade_class
    argv = [course, "--assignment", assignment, "--device", device] + (["--force"] if force else [])
    for name in graded:
        argv += ["--student", name]
    grade_args = list(grade_args)
    if "--slurm" in grade_args and "--wait" not in grade_args:
        grade_args.append("--wait")  # the grades of record are written below: the array must have finished
    status = grade_class.main(argv + grade_args)
    if status != 0:
        raise RepoError(f"grading the class failed (course.grade_class exit status {status})")
    for rec in records:
        rec["graded"] = rec["username"] in graded
    name_students(course, students)
    _record(course, records, deadline, mode)
    _grades_of_record(course, students, records)
    flagged = [r["username"] for r in records if any(not f.startswith("nothing") for f in r["flags"])]
    say(f"graded {len(graded)} of {len(students)} repositories; wrote {os.path.relpath(course)}/grades-of-record.csv "
        f"and repos.csv" + (f"; FLAGGED (check before publishing): {', '.join(flagged)}" if flagged else ""))
    return records


def name_students(course, students):
    """Every roster student in the gradebook under the roster's names (formgrader shows "None, None" without
    them), graded or not: nbgrader export then has a row for each."""
    from . import gradebook as gb_mod
    with gb_mod.open_gradebook(gb_mod.course_directory(course)) as gb:
        for s in students:
            gb.update_or_create_student(s["username"], first_name=s.get("first_name") or None,
                                        last_name=s.get("last_name") or None, email=s.get("email") or None)


def _record(course, records, deadline, mode):
    write_json_atomic(os.path.join(course, "repos.json"), {"deadline": iso(deadline), "ref": mode, "students": records})
    _write_csv(os.path.join(course, "repos.csv"),
               ["username", "repository", "ref", "commit", "submitted_at", "late_commits_ignored", "fetched_at",
                "flags"],
               [[r["username"], r["repository"], r["ref"] or "", r["commit"] or "", r["submitted_at"] or "",
                 r["late_commits_ignored"], r["fetched_at"], " | ".join(r["flags"])] for r in records])


def _grades_of_record(course, students, records):
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
                     " | ".join(r["flags"])])
    _write_csv(os.path.join(course, "grades-of-record.csv"),
               ["username", "first_name", "last_name", "section", "score", "max_score", "provisional", "commit",
                "submitted_at", "flags"], rows)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(prog="python -m course.grade_repos", description=__doc__.splitlines()[0])
    p.add_argument("--roster", required=True, help="Classroom 50 roster CSV (username,first_name,last_name,email,section[,...])")
    p.add_argument("--deadline", required=True, help="ISO 8601 with a time zone, e.g. 2026-12-01T23:59:00Z")
    p.add_argument("--assignment", default=ASSIGNMENT, help="assignment slug (default: %(default)s)")
    p.add_argument("--course", help="course folder for the clones, gradebook and grades (default: build/ASSIGNMENT-of-record)")
    p.add_argument("--org", help="GitHub organisation of the repositories")
    p.add_argument("--classroom", help="Classroom 50 classroom short name (the repositories' name prefix)")
    p.add_argument("--repo-url", help=f"repository address with {{username}} (default: {DEFAULT_REPO_URL})")
    p.add_argument("--ref", choices=["branch", "submit-tag"], default="branch",
                   help="grade the newest commit (branch) or the newest submit/* tag at or before the deadline")
    p.add_argument("--device", choices=["auto", "gpu", "sim"], default="auto")
    p.add_argument("--force", action="store_true", help="grade every repository again, changed or not")
    p.add_argument("--dry-run", action="store_true", help="fetch, pick and flag; grade nothing")
    args = p.parse_args(argv)
    course = args.course or os.path.join(ROOT, "build", f"{args.assignment}-of-record")
    try:
        run(args.roster, args.deadline, course, args.assignment, args.repo_url, args.org, args.classroom, args.ref,
            args.device, args.force, args.dry_run, extra)
    except RepoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
