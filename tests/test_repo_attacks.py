"""A hostile student's repository against the grade of record (``make grade-repos``): each attack is built here as
a local bare repository, and each must leave the instructor's machine, the course's files and the deadline alone.

- a hand-built tree (a link and a folder of one name) that writes through tarfile where its filter is open;
- links that make the course's own solutions look like the student's files;
- a commit or a submit/* tag dated before the deadline but pushed after it; a laptop clock that runs fast;
- an edited workflow hidden in a history that starts with it;
- a large file that would fill the grader's memory.
"""
import datetime
import json
import os
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import ROOT
from course import grade_repos
from course.grade_repos.run import flagged
from test_grade_repos import (ACCEPT, BEFORE, DEADLINE, EARLY, HEADER, LATE, by_name, commit, git, solution,
                              student_repo, submit_tag, template_dir)

URL = lambda base: str(base / "remote" / "{username}.git")  # noqa: E731


def roster(base, *names):
    path = base / "roster.csv"
    path.write_text(HEADER + "".join(f"{n},{n.title()},X,,A,{i},student\n" for i, n in enumerate(names, 1)),
                    encoding="utf-8")
    return str(path)


def grade(base, *names, now=None, **kw):
    kw.setdefault("dry_run", True)
    return by_name(grade_repos.run(roster(base, *names), DEADLINE, str(base / "course"), url_template=URL(base),
                                   template=template_dir(base), now=now, out=open(os.devnull, "w"), **kw))


def at(text):
    return datetime.datetime.fromisoformat(text).astimezone(datetime.timezone.utc)


# ----------------------------------------------------------------------------
# Files: nothing written outside, nothing read through a link


def test_a_hand_built_tree_writes_nothing_outside_even_where_tarfile_is_open(tmp_path, monkeypatch):
    """A tree with a link `zz` to a folder outside and a folder `zz/` holding a file: an extraction writes the file
    through the link. tarfile's data filter stops this only on a Python with the CVE-2025-4517/4138 fixes; this test
    opens the filter (as on such a Python) and needs the grade to write nothing anywhere but its own folders."""
    monkeypatch.setattr(tarfile, "data_filter", tarfile.fully_trusted_filter)
    outside = tmp_path / "outside"
    outside.mkdir()
    work = student_repo(tmp_path, "eve")
    blob = lambda data: subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=work, input=data,  # noqa: E731
                                       capture_output=True, check=True).stdout.decode().strip()
    mktree = lambda text: subprocess.run(["git", "mktree"], cwd=work, input=text.encode(),  # noqa: E731
                                         capture_output=True, check=True).stdout.decode().strip()
    inner = mktree(f"100644 blob {blob(b'written by a student')}\tpwned.txt\n")
    base_tree = git(work, "rev-parse", "HEAD^{tree}")
    top = [line for line in git(work, "ls-tree", base_tree).splitlines()]
    top += [f"120000 blob {blob(str(outside).encode())}\tzz", f"040000 tree {inner}\tzz"]
    tree = mktree("\n".join(top) + "\n")
    evil = git(work, "commit-tree", tree, "-p", "HEAD", "-m", "stage 1", when=BEFORE)
    git(work, "push", "-q", "origin", f"{evil}:refs/heads/main")
    rec = grade(tmp_path, "eve")["eve"]
    assert not (outside / "pwned.txt").exists()
    assert rec["commit"] is None and any(f.startswith("fetch failed") and "duplicate" in f for f in rec["flags"])
    for dirpath, dirnames, filenames in os.walk(tmp_path / "course" / "submitted"):
        assert not any(os.path.islink(os.path.join(dirpath, n)) for n in dirnames + filenames)


def links_to_the_solutions(base, name):
    """`exercises -> zz/../../../../proc/self/cwd/solutions` and `zz -> .`: no code, only links that resolve to
    the grader's own solutions/ once both exist."""
    work = student_repo(base, name)
    git(work, "rm", "-q", "-r", "exercises")
    os.symlink("zz/" + "../" * 12 + "proc/self/cwd/solutions", work / "exercises")
    os.symlink(".", work / "zz")
    commit(work, "stage 1 to 5", BEFORE)
    git(work, "push", "-q", "origin", "main")


def test_links_to_the_course_solutions_are_never_graded(tmp_path):
    links_to_the_solutions(tmp_path, "lex")
    course = tmp_path / "course"
    p = subprocess.run(["make", "--no-print-directory", "grade-repos", f"ROSTER={roster(tmp_path, 'lex')}",
                        f"DEADLINE={DEADLINE}", f"COURSE={course}", f"REPO_URL={URL(tmp_path)}",
                        f"TEMPLATE={template_dir(tmp_path)}", "DRY_RUN=1"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    laid = course / "submitted" / "lex" / "matmul"
    for name in os.listdir(laid):
        if name.endswith(".py"):
            assert "NotImplementedError" in (laid / name).read_text(), name     # the stubs, not solutions/
    rec = json.loads((course / "repos.json").read_text())["students"][0]
    assert any("exercises (a symbolic link, not a folder: never followed)" in (f["note"] or "") for f in rec["files"])


def test_a_folder_reached_through_a_link_is_refused_when_picking_files(tmp_path):
    """autograder/repository.py on a checkout (the CI graders): a link anywhere in a path that leads out of the
    student's folder is never followed, whatever part of the path it is."""
    from autograder.repository import pick_files
    from autograder.stages import STAGES
    student = tmp_path / "checkout"
    student.mkdir()
    os.symlink("zz/" + "../" * 12 + os.path.join(ROOT, "solutions").lstrip("/"), student / "exercises")
    os.symlink(".", student / "zz")
    picked = pick_files(str(student), STAGES)
    for stage, path, rel, note in picked:
        assert rel == "" and path.startswith(os.path.join(ROOT, "exercises")), (stage.name, path)
        assert "(exercises, exercises/s1_naive.py: a symbolic link or a path through one, never followed".replace(
            "s1_naive", stage.module) in note


# ----------------------------------------------------------------------------
# The deadline: a time the student does not write


class Forge(BaseHTTPRequestHandler):
    """GitHub's activity API and GitLab's push events, as documented, for the pushes a test gives."""
    pushes = []   # (ISO time, ref, before, after)
    asked = []    # the paths asked for

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.headers.get("Authorization") != "Bearer secret" and self.headers.get("PRIVATE-TOKEN") != "secret":
            self.send_error(401, "Bad credentials")
            return
        self.asked.append(self.path)
        page = 2 if "page=2" in self.path or "cursor=2" in self.path else 1
        rows = self.pushes[::-1]                       # newest first, as both forges answer
        half = rows[:1] if page == 1 else rows[1:]
        extra = {}
        if self.path.startswith("/repos/"):
            body = [{"id": i, "node_id": "x", "before": b, "after": a, "ref": ref, "timestamp": t,
                     "activity_type": "push", "actor": {"login": "student"}} for i, (t, ref, b, a) in enumerate(half)]
            if page == 1:
                extra["Link"] = f'<http://127.0.0.1:{self.server.server_port}{self.path}&cursor=2>; rel="next"'
        else:
            body = [{"action_name": "pushed to", "created_at": t, "push_data": {
                "commit_count": 1, "action": "pushed", "ref_type": "branch", "commit_from": b, "commit_to": a,
                "ref": ref.split("/", 2)[2], "commit_title": "work"}} for t, ref, b, a in half]
            extra["X-Next-Page"] = "2" if page == 1 else ""
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def forge_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Forge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_the_forges_push_record_decides_over_a_backdated_commit(tmp_path, monkeypatch, forge_server, kind):
    """Stage 1 pushed on time; stage 2 dated before the deadline but pushed a day after it. By commit dates stage 2
    is on time; the forge's push times grade stage 1."""
    work = student_repo(tmp_path, "ada")
    start = git(work, "rev-parse", "HEAD")
    on_time = commit(work, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    late = commit(work, "stage 2", BEFORE.replace("12:00", "13:00"), {"exercises/s2_tiled.py": solution("s2_tiled")})
    git(work, "push", "-q", "origin", "main")
    Forge.pushes = [("2026-02-20T12:00:05Z", "refs/heads/main", "0" * 40, start),
                    ("2026-03-01T12:00:10Z", "refs/heads/main", start, on_time),
                    ("2026-03-03T09:00:00Z", "refs/heads/main", on_time, late)]
    monkeypatch.setenv("GITHUB_TOKEN" if kind == "github" else "GITLAB_TOKEN", "secret")
    rec = grade(tmp_path, "ada", forge=kind, forge_api=forge_server, forge_repo="course-org/{username}")["ada"]
    assert rec["commit"] == on_time and rec["witness"] == f"{kind} push at 2026-03-01T12:00:10Z"
    assert rec["witnessed"] and rec["late_commits_ignored"] == 1
    laid = tmp_path / "course" / "submitted" / "ada" / "matmul"
    assert "NotImplementedError" in (laid / "s2_tiled.py").read_text()
    without = grade(tmp_path, "ada", repin=["ada"])["ada"]          # what commit dates alone would grade
    assert without["commit"] == late and without["witness"].startswith("unwitnessed")


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_a_forge_record_longer_than_the_grader_reads_is_flagged_never_trusted(tmp_path, monkeypatch, forge_server,
                                                                             kind):
    """Thousands of pushes to other refs after a late push to main would push main's record off the pages the
    grader reads: a record with more pages than it reads is no witness, and the row says so. GitHub is asked for
    the graded branch's pushes alone."""
    from course.grade_repos import forge as forge_mod
    monkeypatch.setattr(forge_mod, "MAX_PAGES", 1)
    work = student_repo(tmp_path, "jun")
    start = git(work, "rev-parse", "HEAD")
    late = commit(work, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    git(work, "push", "-q", "origin", "main")
    Forge.pushes = [("2026-03-03T09:00:00Z", "refs/heads/main", start, late)] + [
        (f"2026-03-03T10:00:0{i}Z", f"refs/heads/junk{i}", "0" * 40, start) for i in range(3)]
    Forge.asked = []
    monkeypatch.setenv("GITHUB_TOKEN" if kind == "github" else "GITLAB_TOKEN", "secret")
    rec = grade(tmp_path, "jun", forge=kind, forge_api=forge_server, forge_repo="course-org/{username}")["jun"]
    assert any("could not be read" in f and "more than 100 pushes" in f for f in rec["flags"]), rec["flags"]
    assert rec["witness"].startswith("unwitnessed") and flagged(rec)
    if kind == "github":
        assert all("ref=refs%2Fheads%2Fmain" in path for path in Forge.asked), Forge.asked


def test_a_forge_without_a_token_is_refused_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    student_repo(tmp_path, "ada")
    with pytest.raises(grade_repos.RepoError, match="GITHUB_TOKEN"):
        grade(tmp_path, "ada", forge="github")


def test_a_fetch_before_the_deadline_witnesses_work_from_a_fast_clock(tmp_path):
    """A laptop clock 3 hours fast dates on-time work after the deadline. A fetch before the deadline saw it: it is
    graded, witnessed, and its date is flagged. Without that fetch its date decides, and the row says so."""
    work = student_repo(tmp_path, "fay")
    fast = commit(work, "stage 1", "2026-03-02T02:00:00+00:00", {"exercises/s1_naive.py": solution("s1_naive")})
    git(work, "push", "-q", "origin", "main")
    alone = grade(tmp_path, "fay", now=at("2026-03-02T06:00:00+00:00"))["fay"]
    assert alone["commit"] != fast and alone["witness"].startswith("unwitnessed")
    assert alone["late_commits_ignored"] == 1
    (tmp_path / "course" / "repos.json").unlink()
    grade(tmp_path, "fay", now=at("2026-03-01T23:30:00+00:00"))              # the run scheduled at the deadline
    rec = grade(tmp_path, "fay", now=at("2026-03-02T06:00:00+00:00"))["fay"]
    assert rec["commit"] == fast and rec["witnessed"]
    assert rec["witness"] == "grader's fetch at 2026-03-01T23:30:00Z"
    assert any("after the grader first saw it at 2026-03-01T23:30:00Z" in f for f in rec["flags"])


def test_a_hand_made_tag_pushed_after_the_pin_is_not_graded(tmp_path):
    """A commit dated before the deadline, tagged submit/<on-time name>, pushed after the first run after the
    deadline: flagged and not graded. On a first fetch with no witness it decides, and the row says unwitnessed."""
    work = student_repo(tmp_path, "tom")
    sha = commit(work, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    submit_tag(work, sha, BEFORE)
    git(work, "push", "-q", "origin", "main", "--tags")
    first = grade(tmp_path, "tom", mode="submit-tag")["tom"]
    assert first["commit"] == sha and first["witness"].startswith("unwitnessed")
    forged = commit(work, "stage 2", BEFORE.replace("12:00", "20:00"), {"exercises/s2_tiled.py": solution("s2_tiled")})
    name = submit_tag(work, forged, BEFORE.replace("12:00", "20:00"))
    git(work, "push", "-q", "origin", "main", "--tags")
    rec = grade(tmp_path, "tom", mode="submit-tag")["tom"]
    assert rec["commit"] == sha
    assert any(f.startswith(f"{name} claims") and "first seen after the pin" in f for f in rec["flags"])


def test_a_default_branch_made_after_the_pin_decides_nothing(tmp_path):
    """After the pin, a new branch of backdated work made the default: the pin's branch is graded, and flagged. A
    pin recorded before branches were pinned grades nothing the pin did not see."""
    work = student_repo(tmp_path, "bea")
    on_time = commit(work, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    git(work, "push", "-q", "origin", "main")
    assert grade(tmp_path, "bea")["bea"]["commit"] == on_time          # the run at the deadline: the pin
    git(work, "checkout", "-q", "-b", "late")
    late = commit(work, "stage 2", BEFORE.replace("12:00", "20:00"), {"exercises/s2_tiled.py": solution("s2_tiled")})
    git(work, "push", "-q", "origin", "late")
    git(tmp_path / "remote" / "bea.git", "symbolic-ref", "HEAD", "refs/heads/late")
    rec = grade(tmp_path, "bea")["bea"]
    assert rec["commit"] == on_time and rec["branch"] == "main"
    assert any("the default branch is now late: graded main" in f for f in rec["flags"]), rec["flags"]
    saved = tmp_path / "course" / "repos.json"
    data = json.loads(saved.read_text())
    del data["students"][0]["memory"]["pin"]["branch"]
    saved.write_text(json.dumps(data))
    rec = grade(tmp_path, "bea")["bea"]
    assert rec["commit"] is None and rec["commit"] != late
    assert any("late was not on the remote at the pin" in f for f in rec["flags"]), rec["flags"]
    assert grade(tmp_path, "bea", repin=["bea"])["bea"]["commit"] == late      # --repin decides again


def test_a_fetch_that_failed_at_the_deadline_is_named_on_work_only_its_date_placed(tmp_path):
    """The run at the deadline could not fetch; the next one pins a day later. Work pushed in between and dated on
    time is graded by its date, and flagged: the witness the instructor meant to have is missing."""
    work = student_repo(tmp_path, "fin")
    commit(work, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    git(work, "push", "-q", "origin", "main")
    grade(tmp_path, "fin", now=at("2026-03-01T20:00:00+00:00"))
    remote = tmp_path / "remote" / "fin.git"
    os.rename(remote, tmp_path / "away")
    missed = grade(tmp_path, "fin", now=at("2026-03-02T00:05:00+00:00"))["fin"]
    assert any(f.startswith("fetch failed") for f in missed["flags"])
    os.rename(tmp_path / "away", remote)
    late = commit(work, "stage 2", BEFORE.replace("12:00", "22:00"), {"exercises/s2_tiled.py": solution("s2_tiled")})
    git(work, "push", "-q", "origin", "main")
    rec = grade(tmp_path, "fin", now=at("2026-03-03T10:00:00+00:00"))["fin"]
    assert rec["commit"] == late and rec["witness"].startswith("unwitnessed")
    assert any("fetch at 2026-03-02T00:05:00Z, after the deadline, failed" in f for f in rec["flags"]), rec["flags"]


def test_a_pinned_commit_outlives_a_force_push_and_garbage_collection(tmp_path):
    """After the pin, history is rewritten with backdated work and the mirror is garbage-collected: the pinned
    commit is still graded. Were it gone, nothing would be graded, never the rewritten history."""
    work = student_repo(tmp_path, "gus")
    on_time = commit(work, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    git(work, "push", "-q", "origin", "main")
    assert grade(tmp_path, "gus")["gus"]["commit"] == on_time
    git(work, "reset", "-q", "--hard", "HEAD~1")
    commit(work, "stage 1 and 2", BEFORE.replace("12:00", "21:00"),
           {"exercises/s1_naive.py": solution("s1_naive"), "exercises/s2_tiled.py": solution("s2_tiled")})
    git(work, "push", "-q", "-f", "origin", "main")
    mirror = tmp_path / "course" / "repos" / "gus.git"
    collect = lambda: (git(mirror, "fetch", "-q", "--prune", "--force", str(tmp_path / "remote" / "gus.git"),  # noqa: E731
                           "+refs/heads/*:refs/heads/*"), git(mirror, "gc", "-q", "--prune=now"))
    collect()
    rec = grade(tmp_path, "gus")["gus"]
    assert rec["commit"] == on_time
    assert any("changed after the pin" in f for f in rec["flags"]), rec["flags"]
    for ref in git(mirror, "for-each-ref", "--format=%(refname)", "refs/grader").split():
        git(mirror, "update-ref", "-d", ref)
    collect()
    git(tmp_path / "remote" / "gus.git", "gc", "-q", "--prune=now")    # nor can it be fetched by name any more
    rec = grade(tmp_path, "gus")["gus"]
    assert rec["commit"] is None
    assert any("is no longer in the repository: history was rewritten after the pin" in f for f in rec["flags"])


# ----------------------------------------------------------------------------
# The tamper check and the grader's names


def test_a_workflow_edited_and_restored_or_on_another_branch_is_flagged(tmp_path):
    """CI runs each push's workflow: one that printed full marks in one push and was restored in the next, and one
    on a side branch, ran all the same. A committed `grading` link (where the CI graders write) is named too."""
    work = student_repo(tmp_path, "wes")
    forged = commit(work, "full marks", BEFORE, {".github/workflows/autograde.yaml": "name: autograde\njobs: "
                    "{ok: {runs-on: x, steps: [{run: echo 67/67}]}}\n"})
    commit(work, "restore", BEFORE.replace("12:00", "13:00"),
           {".github/workflows/autograde.yaml": ACCEPT[".github/workflows/autograde.yaml"]})
    os.symlink("../victim", work / "grading")
    commit(work, "stage 1", BEFORE.replace("12:00", "14:00"), {"exercises/s1_naive.py": solution("s1_naive")})
    git(work, "push", "-q", "origin", "main")
    git(work, "checkout", "-q", "-b", "side")
    side = commit(work, "side", BEFORE.replace("12:00", "15:00"), {".github/workflows/other.yml": "name: x\n"})
    git(work, "push", "-q", "origin", "side")
    flags = grade(tmp_path, "wes")["wes"]["flags"]
    text = "\n".join(flags)
    assert (f"changed in history: .github/workflows/autograde.yaml as commit {forged[:10]}" in text
            and "differs from the template's" in text), text
    assert f"changed in history: .github/workflows/other.yml as commit {side[:10]}" in text, text
    assert "grader file in the repository: grading" in text
    assert not any(f.startswith("workflow or grading file changed (") for f in flags), text   # the graded commit's own


def test_an_edited_workflow_in_a_history_that_starts_with_it_is_flagged(tmp_path):
    """One squashed commit: the workflow prints full marks and .classroom50.yaml comes in the same commit."""
    template_dir(tmp_path)
    remote, work = tmp_path / "remote" / "sly.git", tmp_path / "work" / "sly"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    work.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    commit(work, "everything", BEFORE, dict(ACCEPT, **{
        ".github/workflows/autograde.yaml": "name: autograde\njobs: {ok: {runs-on: x, steps: [{run: echo 67/67}]}}\n",
        "exercises/s1_naive.py": solution("s1_naive"), "argparse.py": "import os\n", "numpy/__init__.py": ""}))
    git(work, "remote", "add", "origin", str(remote))
    git(work, "push", "-q", "origin", "main")
    flags = "\n".join(grade(tmp_path, "sly")["sly"]["flags"])
    assert "workflow or grading file changed (modified): .github/workflows/autograde.yaml" in flags
    assert "shadows a module the grader imports: argparse.py" in flags
    assert "shadows a module the grader imports: numpy" in flags


# ----------------------------------------------------------------------------
# Memory


def test_a_large_file_costs_the_grader_no_memory(tmp_path):
    """A 192 MiB file of zeros packs to a few hundred KiB; the grader reads no blob over the reader's caps."""
    work = student_repo(tmp_path, "zed")
    (work / "notebooks").mkdir(exist_ok=True)
    with open(work / "notebooks" / "s1_naive.ipynb", "wb") as f:
        f.truncate(192 << 20)
    commit(work, "a big notebook", BEFORE)
    git(work, "push", "-q", "origin", "main")
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec from the forked copy of this (large) test process
    code = ("import runpy, sys\nsys.argv = ['grade_repos'] + sys.argv[1:]\n"
            "try:\n    runpy.run_module('course.grade_repos', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('maxrss', [ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0])\n")
    p = subprocess.run([sys.executable, "-c", code, "--roster", roster(tmp_path, "zed"), "--deadline", DEADLINE,
                        "--course", str(tmp_path / "course"), "--repo-url", URL(tmp_path), "--template",
                        template_dir(tmp_path), "--dry-run"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "maxrss" in p.stdout, p.stdout + p.stderr
    kib = int(p.stdout.split("maxrss")[1].split()[0])
    assert kib < 160 * 1024, f"{kib / 1024:.0f} MiB"
    assert "notebooks/s1_naive.ipynb (201,326,592 bytes, over the" in p.stdout


@pytest.mark.filterwarnings("ignore::Warning")
def test_the_class_run_never_reads_a_submission_folder_through_a_link(tmp_path):
    """submitted/mal/matmul -> a folder outside submitted/ (the course's solutions, a classmate's work): mal's row is
    0 with a note, and formgrader's copy shows nothing of the linked folder."""
    from course import grade_class
    course = tmp_path / "course"
    (course / "submitted" / "mal").mkdir(parents=True)
    shutil_src = os.path.join(ROOT, "demo_course")
    for name in ("nbgrader_config.py", "autograder.toml"):
        (course / name).write_bytes(open(os.path.join(shutil_src, name), "rb").read())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "s1_naive.ipynb").write_bytes(
        open(os.path.join(shutil_src, "submitted", "ada", "matmul", "s1_naive.ipynb"), "rb").read())
    os.symlink(elsewhere, course / "submitted" / "mal" / "matmul")
    grader = grade_class.ClassGrader(str(course), device="sim", out=open(os.devnull, "w"))
    grader.run()
    results = json.loads((course / "feedback" / "mal" / "matmul" / "results.json").read_text())
    assert results["score"] == 0
    assert any("submitted/mal/matmul is a symbolic link, never followed" in n
               for n in results["extra_data"]["course"]["problems"]), results["extra_data"]["course"]
    copy = (course / "autograded" / "mal" / "matmul" / "s1_naive.ipynb").read_text()
    assert "cuda.grid" not in copy


def test_the_pins_commits_are_held_and_let_go_when_the_pin_changes(tmp_path):
    """Git.keep: a repin lets go of what the previous pin held, a name that clashes with a held one (`a` then `a/b`)
    is still held, and a commit the mirror lacks is skipped without an error."""
    from course.grade_repos.git import Git
    work = student_repo(tmp_path, "kim")
    sha = git(work, "rev-parse", "HEAD")
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(tmp_path / "remote" / "kim.git"), str(mirror))
    g = Git(str(mirror))
    held = lambda: git(mirror, "for-each-ref", "--format=%(refname)", "refs/grader").split()  # noqa: E731
    assert g.keep({"refs/heads/a": sha, "refs/tags/t": sha})
    assert held() == ["refs/grader/pin/heads/a", "refs/grader/pin/tags/t"]
    assert not g.keep({"refs/heads/a/b": sha, "refs/heads/gone": "f" * 40})
    assert held() == ["refs/grader/pin/heads/a/b"]


# ----------------------------------------------------------------------------
# A repository that would stop the class run


def test_names_that_are_not_utf8_stop_no_class_run_and_lose_no_classmates_witness(tmp_path):
    """mal pushes a branch named with a byte that is not UTF-8 and a workflow file named so. The class run grades
    everyone, says what mal's repository holds, and zoe (after mal on the roster) keeps her pin: her backdated
    commit pushed after it is not graded."""
    for name in ("ann", "mal", "zoe"):
        work = student_repo(tmp_path, name)
        commit(work, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
        git(work, "push", "-q", "origin", "main")
    zoe = git(tmp_path / "work" / "zoe", "rev-parse", "HEAD")
    mal = tmp_path / "work" / "mal"
    (mal / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
    with open(os.path.join(os.fsencode(mal / ".github" / "workflows"), b"x\xff.yml"), "w") as f:
        f.write("name: x\n")
    commit(mal, "a workflow", BEFORE.replace("12:00", "13:00"))
    git(mal, "push", "-q", "origin", "main", "main:refs/heads/caf\udce9")
    first = grade(tmp_path, "ann", "mal", "zoe")
    assert first["zoe"]["commit"] == zoe and first["ann"]["commit"]
    assert any("(added): .github/workflows/x\udcff.yml" in f for f in first["mal"]["flags"]), first["mal"]["flags"]
    late = commit(tmp_path / "work" / "zoe", "stage 2", BEFORE.replace("12:00", "20:00"),
                  {"exercises/s2_tiled.py": solution("s2_tiled")})
    git(tmp_path / "work" / "zoe", "push", "-q", "origin", "main")
    again = grade(tmp_path, "ann", "mal", "zoe")
    assert again["zoe"]["commit"] == zoe != late and any("changed after the pin" in f for f in again["zoe"]["flags"])
    assert "x\\" in (tmp_path / "course" / "repos.csv").read_text(encoding="utf-8")


def test_a_grader_fault_with_one_repository_keeps_every_witness(tmp_path, monkeypatch):
    """Something in the grader raises for mal alone: mal's row says so and keeps mal's pin, and zoe, after mal on
    the roster, keeps hers in repos.json while mal's row is written."""
    import importlib
    run_mod = importlib.import_module("course.grade_repos.run")
    for name in ("mal", "zoe"):
        work = student_repo(tmp_path, name)
        commit(work, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
        git(work, "push", "-q", "origin", "main")
    grade(tmp_path, "mal", "zoe")
    pins = {r["username"]: r["memory"]["pin"] for r in
            json.loads((tmp_path / "course" / "repos.json").read_text())["students"]}
    real, seen = run_mod.grade_one, []

    def failing(student, *args, **kwargs):
        if student["username"] == "mal":
            seen.append(json.loads((tmp_path / "course" / "repos.json").read_text()))
            raise KeyError("pin")
        return real(student, *args, **kwargs)
    monkeypatch.setattr(run_mod, "grade_one", failing)
    rows = grade(tmp_path, "mal", "zoe")
    assert any("could not be graded" in f and "KeyError" in f for f in rows["mal"]["flags"])
    saved = {r["username"]: r for r in json.loads((tmp_path / "course" / "repos.json").read_text())["students"]}
    assert saved["mal"]["memory"]["pin"] == pins["mal"] and saved["zoe"]["memory"]["pin"] == pins["zoe"]
    monkeypatch.setattr(run_mod, "grade_one", lambda student, *a, **k: (_ for _ in ()).throw(RuntimeError("x"))
                        if student["username"] == "mal" else (_ for _ in ()).throw(SystemExit("stop")))
    with pytest.raises(SystemExit):
        grade(tmp_path, "mal", "zoe")            # the run stops at zoe: her witnesses are still in repos.json
    saved = {r["username"]: r for r in json.loads((tmp_path / "course" / "repos.json").read_text())["students"]}
    assert saved["zoe"]["memory"]["pin"] == pins["zoe"]


def test_a_workflow_edit_merged_away_is_flagged_whatever_the_hosts_git_configuration(tmp_path, monkeypatch):
    """A side branch prints full marks in its workflow (CI ran it), is merged into main with `-s ours` and deleted.
    The instructor's git has log.diffMerges=combined, which hides such a merge's side from a plain `git log`."""
    config = tmp_path / "gitconfig"
    config.write_text("[log]\n\tdiffMerges = combined\n\tshowRoot = false\n")
    work = student_repo(tmp_path, "ola")
    git(work, "checkout", "-q", "-b", "side")
    forged = commit(work, "full marks", BEFORE, {".github/workflows/autograde.yaml": "name: autograde\njobs: "
                    "{ok: {runs-on: x, steps: [{run: echo 67/67}]}}\n"})
    git(work, "checkout", "-q", "main")
    git(work, "merge", "-q", "-s", "ours", "--no-edit", "side", when=BEFORE.replace("12:00", "13:00"))
    git(work, "branch", "-q", "-D", "side")
    git(work, "push", "-q", "origin", "main")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    flags = "\n".join(grade(tmp_path, "ola")["ola"]["flags"])
    assert f"changed in history: .github/workflows/autograde.yaml as commit {forged[:10]}" in flags, flags


def test_a_default_branch_that_is_a_tag_grades_main_and_breaks_nothing(tmp_path):
    work = student_repo(tmp_path, "tia")
    on_time = commit(work, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    git(work, "tag", "v1")
    git(work, "push", "-q", "origin", "main", "--tags")
    git(tmp_path / "remote" / "tia.git", "symbolic-ref", "HEAD", "refs/tags/v1")
    rec = grade(tmp_path, "tia", now=at("2026-03-01T20:00:00+00:00"))["tia"]   # before the deadline: no pin yet
    assert rec["commit"] == on_time and rec["branch"] == "main" and rec["flags"] == [], rec["flags"]
    rec = grade(tmp_path, "tia")["tia"]
    assert rec["commit"] == on_time and not any("default branch" in f for f in rec["flags"]), rec["flags"]


def test_a_forge_record_not_as_documented_is_flagged_and_the_class_goes_on(tmp_path, monkeypatch, forge_server):
    work = student_repo(tmp_path, "rex")
    on_time = commit(work, "stage 1", BEFORE, {"exercises/s1_naive.py": solution("s1_naive")})
    git(work, "push", "-q", "origin", "main")
    Forge.pushes = [("yesterday", "refs/heads/main", "0" * 40, on_time)] * 2
    monkeypatch.setenv("GITHUB_TOKEN", "secret")
    rec = grade(tmp_path, "rex", forge="github", forge_api=forge_server, forge_repo="o/{username}")["rex"]
    assert any("not as documented (ValueError" in f for f in rec["flags"]), rec["flags"]
    assert rec["commit"] == on_time and rec["witness"].startswith("unwitnessed")
