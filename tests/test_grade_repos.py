"""The grade of record (course/grade_repos.py, ``make grade-repos``) on local bare git repositories.

Each test builds the students' repositories itself: a template commit, Classroom 50's accept
commit (.classroom50.yaml and the autograde workflow), work with set commit dates, submit/* tags,
a late commit, a tampered workflow and a force-push that rewrites history. No network.
"""
import csv
import datetime
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, SOLUTIONS
from course import grade_repos
from course.grade_repos import RepoError

DEADLINE = "2026-03-02T00:00:00Z"
BEFORE = "2026-03-01T12:00:00+00:00"       # on time
EARLY = "2026-02-20T12:00:00+00:00"
LATE = "2026-03-03T09:00:00+00:00"         # after the deadline
HEADER = "username,first_name,last_name,email,section,github_id,role\n"   # Classroom 50's roster.csv


def git(cwd, *args, when=None):
    env = dict(os.environ, GIT_AUTHOR_NAME="Student", GIT_AUTHOR_EMAIL="s@example.org",
               GIT_COMMITTER_NAME="Student", GIT_COMMITTER_EMAIL="s@example.org")
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    p = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def commit(work, message, when, files=None):
    for path, text in (files or {}).items():
        os.makedirs(os.path.dirname(os.path.join(work, path)) or work, exist_ok=True)
        with open(os.path.join(work, path), "w", encoding="utf-8") as f:
            f.write(text)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", message, when=when)
    return git(work, "rev-parse", "HEAD")


def submit_tag(work, sha, when):
    """The tag Classroom 50's runner makes for a graded push: submit/<UTC time>-<short sha>."""
    stamp = datetime.datetime.fromisoformat(when).strftime("%Y-%m-%dT%H-%M-%SZ")
    name = f"submit/{stamp}-{sha[:7]}"
    git(work, "tag", name, sha)
    return name


def solution(module):
    with open(os.path.join(SOLUTIONS, module + ".py"), encoding="utf-8") as f:
        return f.read()


ACCEPT = {".classroom50.yaml": "classroom: gpu101\nassignment: matmul\n",
          ".github/workflows/autograde.yaml": "name: autograde\n"}


def template_dir(base):
    """The instructor's copy of an accepted repository: the tamper check's baseline (--template)."""
    folder = base / "template"
    if not folder.exists():
        for path, text in ACCEPT.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text, encoding="utf-8")
    return str(folder)


def student_repo(base, name):
    """A working copy and its bare 'GitHub' repository: template commit, accept commit, pushed."""
    remote, work = base / "remote" / f"{name}.git", base / "work" / name
    git(base, "init", "-q", "--bare", "-b", "main", str(remote))
    work.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    stubs = {f"exercises/{n}": open(os.path.join(ROOT, "exercises", n), encoding="utf-8").read()
             for n in sorted(os.listdir(os.path.join(ROOT, "exercises"))) if n.endswith(".py")}
    commit(work, "Initial commit (template)", EARLY, dict(stubs, **{"README.md": "# matmul\n"}))
    commit(work, "Accept assignment", EARLY, dict(ACCEPT))
    template_dir(base)
    git(work, "remote", "add", "origin", str(remote))
    git(work, "push", "-q", "origin", "main")
    return work


@pytest.fixture
def repos(tmp_path):
    """ada: on time with stage 1, then a late commit solving stage 2 (ignored).
    mal: stage 1 plus a rewritten workflow, and the submitted commit later rewritten by a force-push.
    The roster also names nobody, whose repository does not exist."""
    ada = student_repo(tmp_path, "ada")
    sha = commit(ada, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    submit_tag(ada, sha, BEFORE)
    commit(ada, "stage 2, after the deadline", LATE, {"exercises/s2_tiled.py": solution("s2_tiled")})
    git(ada, "push", "-q", "origin", "main", "--tags")

    mal = student_repo(tmp_path, "mal")
    sha = commit(mal, "stage 1 and a better workflow", BEFORE,
                 {"exercises/s1_naive.py": solution("s1_naive"),
                  ".github/workflows/autograde.yaml": "name: autograde\njobs: {}\n"})
    submit_tag(mal, sha, BEFORE)
    git(mal, "push", "-q", "origin", "main", "--tags")
    git(mal, "commit", "-q", "--amend", "-m", "stage 1, reworded", when=BEFORE)   # rewrites the submitted commit
    git(mal, "push", "-q", "-f", "origin", "main")

    roster = tmp_path / "roster.csv"
    roster.write_text(HEADER + "ada,Ada,L,,A,1,student\nmal,Mal,R,,A,2,student\nnobody,No,Body,,B,3,\n", encoding="utf-8")
    return tmp_path, roster, str(tmp_path / "remote" / "{username}.git")


def by_name(records):
    return {r["username"]: r for r in records}


# ----------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("text, wanted", [
    ("username,first_name,last_name,email\nada,A,L,\n", ["line 1", "section", "roster.csv"]),
    (HEADER + "ada,A,L,,1,1\nada,A,L,,1,1\n", ["line 3", "already on line 2"]),
    (HEADER + "ada,A,L,,1,1\nnot a login,B,C,,1,2\n", ["line 3", "not a GitHub login"]),
    (HEADER, ["no students"]),
])
def test_a_bad_roster_is_refused_naming_the_line(tmp_path, text, wanted):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RepoError) as err:
        grade_repos.read_roster(str(path))
    for word in wanted:
        assert word in str(err.value)


@pytest.mark.parametrize("text, wanted", [("2026-03-02 23:59", "no time zone"), ("next friday", "not a date"),
                                          ("", "no deadline")])
def test_a_bad_deadline_is_refused_saying_how_to_write_it(text, wanted):
    with pytest.raises(RepoError) as err:
        grade_repos.parse_deadline(text)
    assert wanted in str(err.value) and "2026-12-01T23:59:00Z" in str(err.value)


def test_a_repository_address_with_an_unknown_placeholder_is_refused(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(HEADER + "ada,A,L,,1,1,\n", encoding="utf-8")
    with pytest.raises(RepoError) as err:
        grade_repos.run(str(roster), DEADLINE, str(tmp_path / "c"), url_template="/srv/{user}.git", dry_run=True)
    assert "{user}" in str(err.value) and "{username}" in str(err.value)


def test_deadline_with_an_offset_is_converted_to_utc():
    assert grade_repos.iso(grade_repos.parse_deadline("2026-03-01T19:00:00-05:00")) == DEADLINE


def test_the_command_line_says_what_is_wrong(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("username\nada\n", encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "course.grade_repos", "--roster", str(roster), "--deadline", DEADLINE,
                        "--course", str(tmp_path / "c"), "--org", "o", "--classroom", "c"],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2 and "line 1" in p.stderr and "first_name" in p.stderr
    roster.write_text(HEADER + "ada,A,L,,1,1\n", encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "course.grade_repos", "--roster", str(roster), "--deadline", DEADLINE,
                        "--course", str(tmp_path / "c")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2 and "--org" in p.stderr and "--repo-url" in p.stderr
    p = subprocess.run(["make", "--no-print-directory", "grade-repos", f"COURSE={tmp_path / 'c'}"], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode != 0 and "no roster given: ROSTER=" in p.stderr


# ----------------------------------------------------------------------------
# Picking the commit and flagging (no grading: --dry-run)


def test_late_commits_are_ignored_and_tampering_is_flagged(repos):
    base, roster, url = repos
    records = by_name(grade_repos.run(str(roster), DEADLINE, str(base / "course"), url_template=url, template=template_dir(base), dry_run=True))
    ada, mal, nobody = records["ada"], records["mal"], records["nobody"]
    work = base / "work"
    assert ada["commit"] == git(work / "ada", "rev-parse", "HEAD~1")          # stage 1, not the late stage 2
    assert ada["late_commits_ignored"] == 1 and ada["flags"] == []
    assert ada["submitted_at"] == "2026-03-01T12:00:00Z"
    laid = base / "course" / "submitted" / "ada" / "matmul"
    assert (laid / "s1_naive.py").read_text() == solution("s1_naive")
    assert "NotImplementedError" in (laid / "s2_tiled.py").read_text()      # the late solution is not graded
    assert (laid / "timestamp.txt").read_text().startswith("2026-03-01 12:00:00")

    flags = "\n".join(mal["flags"])
    assert "workflow or grading file changed (modified): .github/workflows/autograde.yaml differs from the " \
           "template's (by " in flags
    assert "stage 1, reworded" in flags                                        # the commit that changed it
    assert "history rewritten: submit/2026-03-01T12-00-00Z-" in flags and "no longer on main" in flags
    assert mal["commit"] == git(work / "mal", "rev-parse", "HEAD")           # the rewritten one is what exists
    assert nobody["commit"] is None and any(f.startswith("fetch failed") for f in nobody["flags"])
    failed = next(f for f in nobody["flags"] if f.startswith("fetch failed"))  # git's whole error, not its last line
    assert "does not appear to be a git repository" in failed or "not found" in failed, failed
    assert not failed.startswith("fetch failed: and the repository exists"), failed
    assert not (base / "course" / "submitted" / "nobody").exists()

    with open(base / "course" / "repos.csv", encoding="utf-8") as f:
        rows = {r["username"]: r for r in csv.DictReader(f)}
    assert rows["ada"]["commit"] == ada["commit"] and rows["ada"]["flags"] == ""
    assert "autograde.yaml" in rows["mal"]["flags"]


def test_a_commit_pushed_after_the_pin_is_flagged_and_not_graded(repos):
    """The first fetch after the deadline pins what existed then. A commit dated before the deadline but pushed
    after the pin (the late work, backdated, after a force-push) is flagged and the pinned commit stays graded;
    --repin decides again from today's refs."""
    base, roster, url = repos
    course = str(base / "course")
    first = by_name(grade_repos.run(str(roster), DEADLINE, course, url_template=url, template=template_dir(base), dry_run=True))
    ada = base / "work" / "ada"
    git(ada, "reset", "-q", "--hard", "HEAD~1")
    backdated = commit(ada, "stage 2, backdated", BEFORE.replace("12:00", "18:00"),
                       {"exercises/s2_tiled.py": solution("s2_tiled")})
    git(ada, "push", "-q", "-f", "origin", "main")
    second = by_name(grade_repos.run(str(roster), DEADLINE, course, url_template=url, template=template_dir(base), dry_run=True))
    flags = "\n".join(second["ada"]["flags"])
    assert second["ada"]["commit"] == first["ada"]["commit"] != backdated
    assert "refs/heads/main was force-pushed" in flags
    assert "changed after the pin of" in flags and f"now {backdated[:10]} (pushed after the pin" in flags
    laid = base / "course" / "submitted" / "ada" / "matmul"
    assert "NotImplementedError" in (laid / "s2_tiled.py").read_text()
    memory = json.loads((base / "course" / "repos.json").read_text())["students"][0]["memory"]
    assert memory["pin"]["refs"]["refs/heads/main"] not in (backdated, None)      # the refs of the first fetch
    third = by_name(grade_repos.run(str(roster), DEADLINE, course, url_template=url, template=template_dir(base),
                                    dry_run=True, repin=["ada"]))
    assert third["ada"]["commit"] == backdated and third["ada"]["witness"].startswith("unwitnessed")


def test_dates_that_run_backwards_are_flagged(tmp_path):
    work = student_repo(tmp_path, "bea")
    commit(work, "late work", LATE, {"exercises/s1_naive.py": solution("s1_naive")})
    commit(work, "claims to be on time", BEFORE, {"notes.txt": "done\n"})
    git(work, "push", "-q", "origin", "main")
    roster = tmp_path / "roster.csv"
    roster.write_text(HEADER + "bea,B,A,,1,1\n", encoding="utf-8")
    rec = grade_repos.run(str(roster), DEADLINE, str(tmp_path / "course"),
                          url_template=str(tmp_path / "remote" / "{username}.git"), template=template_dir(tmp_path), dry_run=True)[0]
    assert any(f.startswith("dates run backwards") for f in rec["flags"])


def test_submit_tag_mode_grades_the_newest_tag_before_the_deadline(repos):
    base, roster, url = repos
    ada = base / "work" / "ada"
    late = submit_tag(ada, git(ada, "rev-parse", "HEAD"), LATE)
    git(ada, "push", "-q", "origin", late)
    rec = by_name(grade_repos.run(str(roster), DEADLINE, str(base / "course"), url_template=url, template=template_dir(base), mode="submit-tag",
                                  dry_run=True))["ada"]
    assert rec["ref"].startswith("submit/2026-03-01T12-00-00Z-") and rec["late_commits_ignored"] == 1
    assert rec["commit"] == git(ada, "rev-parse", "HEAD~1") and rec["flags"] == []


def test_a_hand_made_tag_named_before_its_commit_is_flagged_and_not_graded(repos):
    """A submit/* tag named with an on-time stamp on the late commit: its commit's date counts, and it is flagged."""
    base, roster, url = repos
    ada = base / "work" / "ada"
    forged = submit_tag(ada, git(ada, "rev-parse", "HEAD"), "2026-03-01T20:00:00+00:00")
    git(ada, "push", "-q", "origin", forged)
    rec = by_name(grade_repos.run(str(roster), DEADLINE, str(base / "course"), url_template=url, template=template_dir(base), mode="submit-tag",
                                  dry_run=True))["ada"]
    assert rec["commit"] == git(ada, "rev-parse", "HEAD~1") and rec["ref"] != forged
    assert any(f.startswith(forged) and "a tag made by hand" in f for f in rec["flags"])


# ----------------------------------------------------------------------------
# End to end: make grade-repos grades through the class pipeline


@pytest.mark.slow
def test_make_grade_repos_grades_the_commit_of_record(repos):
    base, roster, url = repos
    course = base / "course"
    p = subprocess.run(["make", "--no-print-directory", "grade-repos", f"ROSTER={roster}", f"DEADLINE={DEADLINE}",
                        f"COURSE={course}", f"REPO_URL={url}", f"TEMPLATE={template_dir(base)}", "ARGS=--device sim"],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "FLAGGED (check before publishing): mal, nobody" in p.stdout
    with open(course / "grades.csv", encoding="utf-8") as f:
        grades = {r["student"]: r for r in csv.DictReader(f)}
    assert set(grades) == {"ada", "mal", "nobody"}                            # a failed fetch is a row of 0
    assert grades["nobody"]["score"] == "0"
    with open(course / "lms_upload.csv", encoding="utf-8") as f:
        assert {r["student_id"] for r in csv.DictReader(f)} == {"ada", "mal", "nobody"}
    assert grades["ada"]["naive"] == "8" and grades["ada"]["tiled"] == "0"    # the late stage 2 is not counted
    assert grades["ada"]["score"] == "8" and grades["ada"]["device"] == "sim"
    with open(course / "grades-of-record.csv", encoding="utf-8") as f:
        record = {r["username"]: r for r in csv.DictReader(f)}
    assert record["ada"]["score"] == "8" and record["ada"]["commit"] and record["ada"]["flags"] == ""
    assert "autograde.yaml" in record["mal"]["flags"] and record["nobody"]["score"] == "0"
    assert "fetch failed" in record["nobody"]["flags"]
    assert (course / "feedback" / "ada" / "matmul" / "index.html").is_file()
    assert (course / "gradebook.db").is_file()
    results = json.loads((course / "feedback" / "ada" / "matmul" / "results.json").read_text())
    assert results["extra_data"]["course"]["timestamp"].startswith("2026-03-01 12:00:00")
    shutil.rmtree(course / "repos")


def test_grading_through_slurm_waits_for_the_array(repos, monkeypatch):
    """The grades of record are written after grading: with --slurm the class grader must wait for the array."""
    from course import grade_class
    base, roster, url = repos
    calls = []
    monkeypatch.setattr(grade_class, "main", lambda argv: calls.append(list(argv)) or 0)
    grade_repos.run(str(roster), DEADLINE, str(base / "course"), url_template=url, template=template_dir(base), grade_args=["--slurm"],
                    out=open(os.devnull, "w"))
    assert calls and "--slurm" in calls[0] and "--wait" in calls[0]


def test_a_roster_that_is_not_utf8_is_refused_naming_the_line(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_bytes(HEADER.encode() + "zoë,Zoë,B,,A,1,student\n".encode("latin-1"))
    with pytest.raises(grade_repos.RepoError, match="line 2: not UTF-8 text"):
        grade_repos.read_roster(str(roster))


def test_a_link_to_an_absolute_path_is_skipped_and_the_others_are_still_fetched(tmp_path, monkeypatch):
    """A symbolic link to /etc/hostname in one repository raised AbsoluteLinkError outside the per-student try:
    the run died, later students were never fetched and repos.json was never written."""
    lin = student_repo(tmp_path, "lin")
    os.symlink("/etc/hostname", lin / "s2_tiled.py")
    commit(lin, "stage 1 and notes", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    git(lin, "push", "-q", "origin", "main")
    ada = student_repo(tmp_path, "ada")
    commit(ada, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    git(ada, "push", "-q", "origin", "main")
    roster = tmp_path / "roster.csv"
    roster.write_text(HEADER + "lin,L,I,,A,1,student\nada,A,L,,A,2,student\n", encoding="utf-8")
    records = by_name(grade_repos.run(str(roster), DEADLINE, str(tmp_path / "course"),
                                      url_template=str(tmp_path / "remote" / "{username}.git"), template=template_dir(tmp_path), dry_run=True))
    assert records["lin"]["commit"] and records["ada"]["commit"]
    laid = tmp_path / "course" / "submitted" / "lin" / "matmul"
    assert (laid / "s1_naive.py").read_text() == solution("s1_naive")
    assert any("s2_tiled.py (a symbolic link, never followed" in (f["note"] or "") for f in records["lin"]["files"])
    assert "NotImplementedError" in (laid / "s2_tiled.py").read_text()
    with open(tmp_path / "course" / "repos.json", encoding="utf-8") as f:
        assert [s["username"] for s in json.load(f)["students"]] == ["lin", "ada"]


@pytest.mark.filterwarnings("ignore::Warning")  # nbgrader 0.9 trips SQLAlchemy 2's autoflush warnings
def test_the_rosters_names_are_put_in_the_gradebook(repos, monkeypatch):
    """formgrader shows each student by the gradebook's names: `make grade-repos` writes the roster's first and last
    names there for every student on it (graded or not), not "None, None"."""
    from nbgrader.api import Gradebook
    from course import grade_class, use_venv_tools
    base, roster, url = repos
    monkeypatch.setattr(grade_class, "main", lambda argv: 0)  # the grading itself is another test's
    course = base / "course"
    grade_repos.run(str(roster), DEADLINE, str(course), url_template=url, template=template_dir(base), out=open(os.devnull, "w"))
    use_venv_tools()
    with Gradebook(f"sqlite:///{course}/gradebook.db") as gb:
        names = {s.id: (s.first_name, s.last_name) for s in gb.students}
    assert names == {"ada": ("Ada", "L"), "mal": ("Mal", "R"), "nobody": ("No", "Body")}
