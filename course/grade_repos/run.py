"""``make grade-repos``: fetch every roster student's repository, pick the commit of record, flag, lay out, grade.

Each student is one step that keeps its failure in that student's row: a fetch that fails, a tree that cannot be
read, a forge that does not answer. Nothing of a student's repository is extracted, imported or run here: the
files a grade needs are read as git blobs (files.py), and the grading is the class run's (course.grade_class).
"""
import argparse
import datetime
import os
import shutil
import subprocess
import sys

from .. import ASSIGNMENT, ROOT, printable
from . import deadline as witness
from . import files as tree_files
from . import record, tamper
from .forge import Forge, ForgeError
from .git import Git, fetch
from .inputs import DEFAULT_REPO_URL, RepoError, parse_deadline, read_roster, repo_url

CONFIG_TEMPLATE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nbgrader_config.py")
iso = witness.iso
submit_time = witness.submit_time


def history_flags(git, refs, before, tip):
    """A branch force-pushed or a submit/* tag deleted since the previous fetch; dates that run backwards on the
    graded branch (whose commit is `tip`)."""
    flags = []
    for ref, old in sorted(before.items()):
        new = refs.get(ref)
        if new and new != old and not git.is_ancestor(old, new):
            flags.append(f"history rewritten: {ref} was force-pushed from {old[:10]} to {new[:10]} "
                         "since the previous fetch")
        elif new is None and ref.startswith("refs/tags/submit/"):
            flags.append(f"history rewritten: {ref} was deleted since the previous fetch")
    commits = git.first_parent(tip)
    for (sha, t), (parent, pt) in zip(commits, commits[1:]):
        if t < pt:
            flags.append(f"dates run backwards: {sha[:10]} is dated before its parent {parent[:10]} "
                         "(commit dates can be set by hand)")
    return flags


def inspect(git, refs, before, branch, deadline, mode="branch", memory=None, now=None, pushes=None, url=None,
            forge="forge"):
    """What to grade in one fetched repository, and every flag; a dict (see repos.json). `branch` is
    deadline.graded_branch's, which has recorded this fetch in `memory`."""
    memory = memory if memory is not None else {}
    now = now or datetime.datetime.now(datetime.timezone.utc)
    info = {"branch": branch[len("refs/heads/"):] if branch else None, "commit": None, "ref": None,
            "submitted_at": None, "witness": None, "witnessed": False, "late_commits_ignored": 0, "flags": []}
    if branch is None:
        info["flags"].append("no branch: nothing was ever pushed")
        return info
    pin = memory.get("pin") or {}
    tip = refs.get(branch) or pin.get("refs", {}).get(branch)
    tip = tip if tip and git.has_commit(tip) else None
    flags = history_flags(git, refs, before, tip) if tip else []
    if mode == "submit-tag":
        picked = witness.submit_tags(git, refs, deadline, memory, now, pushes, forge)
    else:
        picked = witness.on_branch(git, refs, branch, deadline, memory, now, pushes, url, forge)
        picked["ref"] = info["branch"]
    flags += picked.pop("flags")
    info.update(picked)
    on_branch = {c for c, _ in git.first_parent(tip)} if tip else set()
    for ref, sha in sorted(refs.items()):
        if ref.startswith("refs/tags/submit/") and sha not in on_branch and submit_time(git, ref, sha)[0] <= deadline:
            flags.append(f"history rewritten: {ref[len('refs/tags/'):]} is no longer on {info['branch']}")
    if info["commit"] is None:
        flags.append(f"nothing {'submitted' if mode == 'submit-tag' else 'committed'} by the deadline")
    elif not info["witnessed"] and memory.get("missed") and pin:
        flags.append(f"the grader's fetch at {memory['missed']}, after the deadline, failed; the pin is of "
                     f"{pin['at']}: whatever was pushed in between is on time by its own date alone (give --forge "
                     "to read the pushes' times)")
    info["flags"] = flags
    return info


def check_tree(git, commit, manifest):
    """Flags of the graded commit's tree (workflow and grading files against the template, the grader's names) and
    of every fetched commit's workflow and grading files."""
    return (tamper.flags(git, commit, manifest) + tamper.history_flags(git, commit, manifest)
            + tree_files.grader_flags(tree_files.Tree(git, commit)))


def flagged(rec):
    return any(not f.startswith("nothing") for f in rec["flags"])


def blank_record(name, url, now, previous):
    """A student's row before anything is known, with the witnesses of the previous run (sightings, pin)."""
    return {"username": name, "repository": url, "fetched_at": iso(now), "commit": None, "ref": None,
            "submitted_at": None, "witness": None, "witnessed": False, "late_commits_ignored": 0, "flags": [],
            "memory": dict(previous.get(name, {}).get("memory", {}))}


def grade_one(student, url, course, assignment, deadline, mode, manifest, previous, now, forge=None, repin=False):
    """Fetch, inspect and lay out one student's repository; the record (its failures in it, never raised)."""
    name = student["username"]
    rec = blank_record(name, url, now, previous)
    memory = rec["memory"]
    mirror = os.path.join(course, "repos", name + ".git")
    try:
        before, refs, head = fetch(url, mirror)
    except Exception as exc:  # noqa: BLE001 (whatever a repository does to git, its row says so and the class goes on)
        witness.remember_failed_fetch(memory, now, deadline)
        plain = isinstance(exc, (RuntimeError, OSError, subprocess.CalledProcessError))
        rec["flags"].append(f"fetch failed: {exc}" if plain else f"fetch failed: {type(exc).__name__}: {exc}")
        return rec
    git, pushes = Git(mirror), None
    branch = witness.graded_branch(refs, head, memory, now, deadline, repin)
    try:
        git.keep(memory.get("pin", {}).get("refs", {}))
    except (RuntimeError, OSError) as exc:   # the pin's commits stay in the mirror until git collects them
        rec["flags"].append(f"the pinned commits could not be held in the mirror: {exc}")
    if forge is not None:
        try:
            pushes = forge.pushes(forge.project(name, url), branch if mode == "branch" else None)
        except ForgeError as exc:
            rec["flags"].append(f"the forge's record of pushes could not be read ({exc}): the grader's own "
                                "fetches decide")
    try:
        early = rec["flags"]   # the forge's trouble: kept beside inspect's flags
        rec.update(inspect(git, refs, before, branch, deadline, mode, memory, now, pushes, url,
                           forge.kind if forge else "forge"))
        rec["flags"] = early + rec["flags"]
        if head in refs and head.startswith("refs/heads/") and branch and head != branch and memory.get("pin"):
            rec["flags"].append(f"the default branch is now {head[len('refs/heads/'):]}: graded {rec['branch']}, the "
                                f"branch at the pin of {memory['pin']['at']} (--repin grades the default branch)")
        if rec["commit"]:
            rec["flags"] += check_tree(git, rec["commit"], manifest)
            folder = os.path.join(course, "submitted", name, assignment)
            rec["files"] = tree_files.lay_out(git, rec["commit"], folder, rec["submitted_at"])
    except Exception as exc:  # one repository's trouble does not stop the others
        rec["flags"].append(f"could not read the commit for grading: {type(exc).__name__}: {exc}")
        rec["commit"] = rec["commit"] if rec.get("files") else None
    return rec


def run(roster, deadline, course, assignment=ASSIGNMENT, url_template=None, org=None, classroom=None,
        mode="branch", device="auto", force=False, dry_run=False, grade_args=(), out=sys.stdout, template=None,
        forge=None, forge_api=None, forge_repo=None, repin=(), now=None):
    """Fetch, inspect, lay out and grade the class; return the records (list of dicts)."""
    say = lambda text: print(printable(text), file=out, flush=True)  # noqa: E731 (a student's names: no control)
    students = read_roster(roster)
    deadline = parse_deadline(deadline) if isinstance(deadline, str) else deadline
    if mode not in ("branch", "submit-tag"):
        raise RepoError(f"--ref {mode!r}: use branch or submit-tag")
    url_template = url_template or (DEFAULT_REPO_URL if org and classroom else None)
    if url_template is None and not all(s.get("repository") for s in students):
        raise RepoError("say where the repositories are: --org ORG --classroom NAME (Classroom 50's "
                        "ORG/CLASSROOM-ASSIGNMENT-USERNAME), or --repo-url with {username} in it")
    urls = {s["username"]: repo_url(url_template or "", s, org, classroom, assignment) for s in students}
    course = os.path.abspath(course)
    os.makedirs(os.path.join(course, "repos"), exist_ok=True)
    try:
        manifest = tamper.baseline(course, template)
        client = Forge(forge, forge_api, repo=forge_repo) if forge else None
    except (tamper.TemplateMissing, ForgeError) as exc:
        raise RepoError(str(exc)) from None
    if not os.path.isfile(os.path.join(course, "nbgrader_config.py")):
        shutil.copyfile(CONFIG_TEMPLATE, os.path.join(course, "nbgrader_config.py"))
    previous = record.read_previous(course)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    repin = set(repin or ())
    say(f"{len(students)} students on {roster}; deadline {iso(deadline)}; grading the "
        f"{'newest submit/* tag' if mode == 'submit-tag' else 'newest commit'} at or before it, by "
        + (f"{forge}'s record of each push" if client else "the grader's fetches where they saw it, else its date"))
    records, graded = [], []
    for i, student in enumerate(students):
        name = student["username"]
        try:
            rec = grade_one(student, urls[name], course, assignment, deadline, mode, manifest, previous, now, client,
                            "*" in repin or name in repin)
        except Exception as exc:  # noqa: BLE001 (the grader's own fault with one repository: its row, not the class)
            rec = blank_record(name, urls[name], now, previous)
            rec["flags"].append(f"could not be graded (a fault of the grader's, reported as it is): "
                                f"{type(exc).__name__}: {exc}")
        if rec["commit"] and rec.get("files"):
            graded.append(name)
        mark = "FLAGGED " if flagged(rec) else ""
        say(f"  {mark}{name}: " + (f"{rec['ref']} at {rec['commit'][:10]} ({rec['submitted_at']}, {rec['witness']})"
                                    if rec["commit"] else "not graded")
            + (f", {rec['late_commits_ignored']} later commit(s) ignored" if rec["late_commits_ignored"] else "")
            + "".join(f"\n      - {f}" for f in rec["flags"])
            + "".join(f"\n      - {f['note']}" for f in rec.get("files", ()) if f["stage"] is None))
        records.append(rec)
        # after each student, what was fetched is never lost; the students still to come keep their witnesses
        waiting = [previous[s["username"]] for s in students[i + 1:] if s["username"] in previous]
        record.write_records(course, records + waiting, deadline, mode)
    unwitnessed = [r["username"] for r in records if r["commit"] and not r["witnessed"]]
    if unwitnessed:
        say(f"UNWITNESSED (the commit's own date decided: run make grade-repos at the deadline, or give --forge): "
            f"{', '.join(unwitnessed)}")
    if dry_run or not graded:
        say("dry run: nothing graded" if dry_run else "no repository had anything to grade")
        return records
    for rec in records:  # a student with nothing to grade still gets a row of 0 in grades.csv and lms_upload.csv
        if rec["username"] not in graded:
            os.makedirs(os.path.join(course, "submitted", rec["username"], assignment), exist_ok=True)
    from .. import grade_class
    argv = [course, "--assignment", assignment, "--device", device] + (["--force"] if force else [])
    for rec in records:
        argv += ["--student", rec["username"]]
    grade_args = list(grade_args)
    if "--slurm" in grade_args and "--wait" not in grade_args:
        grade_args.append("--wait")  # the grades of record are written below: the array must have finished
    status = grade_class.main(argv + grade_args)
    if status != 0:
        raise RepoError(f"grading the class failed (course.grade_class exit status {status})")
    for rec in records:
        rec["graded"] = rec["username"] in graded
    record.name_students(course, students)
    record.write_records(course, records, deadline, mode)
    record.write_grades_of_record(course, students, records)
    names = [r["username"] for r in records if flagged(r)]
    say(f"graded {len(graded)} of {len(students)} repositories; wrote {course}/grades-of-record.csv "
        f"and repos.csv" + (f"; FLAGGED (check before publishing): {', '.join(names)}" if names else ""))
    return records


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
    p.add_argument("--template", help="the student template (folder or checkout) whose workflow and grading files "
                   "are the baseline of the tamper check; kept in COURSE/template.json (give it once)")
    p.add_argument("--forge", choices=["github", "gitlab"], help="read each push's time from the forge "
                   "(GITHUB_TOKEN or GITLAB_TOKEN): the witnessed deadline")
    p.add_argument("--forge-api", help="the forge's API address (default: https://api.github.com, "
                   "https://gitlab.com/api/v4)")
    p.add_argument("--forge-repo", help="OWNER/NAME of each repository on the forge, with {username} (default: "
                   "from the repository address)")
    p.add_argument("--repin", action="append", default=[], metavar="USERNAME",
                   help="decide this student's commit again from the refs of now, not the pin of the first run "
                   "after the deadline ('*' for everyone)")
    p.add_argument("--device", choices=["auto", "gpu", "sim"], default="auto")
    p.add_argument("--force", action="store_true", help="grade every repository again, changed or not")
    p.add_argument("--dry-run", action="store_true", help="fetch, pick and flag; grade nothing")
    args = p.parse_args(argv)
    course = args.course or os.path.join(ROOT, "build", f"{args.assignment}-of-record")
    try:
        run(args.roster, args.deadline, course, args.assignment, args.repo_url, args.org, args.classroom, args.ref,
            args.device, args.force, args.dry_run, extra, template=args.template, forge=args.forge,
            forge_api=args.forge_api, forge_repo=args.forge_repo, repin=args.repin)
    except RepoError as exc:
        print(printable(f"error: {exc}"), file=sys.stderr)
        return 2
    return 0
