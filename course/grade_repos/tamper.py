"""The tamper check: a student's workflow and grading files against the instructor's template, never against the
student's own history (a history that starts with an edited workflow, or one squashed commit, has no "before").
It reads the graded commit and every commit of every branch and tag fetched: CI runs the workflow of each push, so
one edited in a push and restored in the next, or edited on another branch, ran all the same. Refs deleted before
the grader's fetch are out of its sight.

The baseline is ``COURSE/template.json``: for each watched path, the git blob hashes the instructor accepts. It is
made from a template folder or checkout (``--template DIR``: the student template ``make release`` writes, or a
checkout of a repository you accepted yourself, which holds the workflow Classroom 50 adds); each ``--template``
adds its hashes, so the workflow of an earlier submission mode can stay accepted beside the current one.
"""
import hashlib
import json
import os

from autograder.engine.report import write_json_atomic
from autograder.reading.files import NotRead, read_bytes

from .git import REGULAR, TREE, bad_path

WATCHED = (".github", ".gitlab-ci.yml", ".classroom50.yaml")    # the course's workflow and grading files
MANIFEST = "template.json"
MAX_WATCHED_BYTES = 1 << 20
MAX_LOGGED = 20000      # commits that touch watched paths read from the history of every ref
MAX_HISTORY_FLAGS = 5


class TemplateMissing(ValueError):
    """No baseline to compare with: the message says how to give one."""


def blob_hash(data):
    """git's name for a blob of these bytes (git hash-object)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def watched(path):
    return path.split("/", 1)[0] in WATCHED


def template_hashes(folder):
    """{path: blob hash} of the watched files of a template folder (links and other non-files are not files)."""
    found = {}
    for top in WATCHED:
        start = os.path.join(folder, top)
        if os.path.islink(start):
            continue
        if os.path.isfile(start):
            paths = [start]
        else:
            paths = [os.path.join(d, n) for d, _, names in os.walk(start) for n in names]
        for path in paths:
            try:
                found[os.path.relpath(path, folder).replace(os.sep, "/")] = blob_hash(
                    read_bytes(path, MAX_WATCHED_BYTES))
            except NotRead:
                continue
    return found


def baseline(course, template=None):
    """{path: [accepted blob hashes]} from COURSE/template.json, with `template`'s files added (and saved)."""
    path = os.path.join(course, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = {k: list(v) for k, v in json.load(f)["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        manifest = None
    if template:
        if not os.path.isdir(template):
            raise TemplateMissing(f"--template {template}: not a folder (the student template `make release` "
                                  "writes in build/classroom50/template, or a checkout of an accepted repository)")
        manifest = manifest or {}
        for rel, sha in template_hashes(template).items():
            if sha not in manifest.setdefault(rel, []):
                manifest[rel].append(sha)
        write_json_atomic(path, {"files": manifest, "about": "the workflow and grading files a student's "
                                 "repository may hold (git blob hashes); course.grade_repos --template adds to it"})
    if manifest is None:
        raise TemplateMissing(f"no template to check workflows against: give --template DIR once (TEMPLATE=DIR with "
                              f"make: the student template, build/classroom50/template after `make release`, or a "
                              f"checkout of a repository you accepted yourself); it is kept as {path}")
    return manifest


def commit_files(git, commit):
    """({path: blob hash} of the watched paths in the commit, [notes on watched entries that are not files])."""
    files, notes = {}, []
    root, _ = git.entries(git.tree_of(commit))
    for mode, sha, _size, name in root:
        if name not in WATCHED:
            continue
        if mode == TREE:
            inner, cut = git.entries(sha, recursive=True)
            if cut:
                notes.append(f"{name}/ holds more than {len(inner)} entries")
            for m, s, _z, rel in inner:
                if m in REGULAR and not bad_path(rel):
                    files[f"{name}/{rel}"] = s
                else:
                    notes.append(f"{name}/{rel} (mode {m})")
        elif mode in REGULAR:
            files[name] = sha
        else:
            notes.append(f"{name} (mode {mode})")
    return files, notes


def flags(git, commit, manifest):
    """Every watched path of the commit that the template does not have, as it has it; and every one missing."""
    files, notes = commit_files(git, commit)
    found = []
    for path in sorted(set(files) | {p for p in manifest}):
        accepted = manifest.get(path)
        if path not in files:
            found.append(f"workflow or grading file changed (deleted): {path} is in the template, not in the "
                         "graded commit")
        elif accepted is None:
            found.append(f"workflow or grading file changed (added): {path} is not in the template")
        elif files[path] not in accepted:
            found.append(f"workflow or grading file changed (modified): {path} differs from the template's")
    found += [f"workflow or grading file changed (not a file): {n}" for n in notes]
    return [f + by(git, commit, f.split(": ", 1)[1].split(" ", 1)[0]) for f in found]


def by(git, commit, path):
    """" by <the commits that last touched path>", as the flag names them."""
    log = git.run("log", "-3", "--format=%h %s", commit, "--", path, check=False).stdout.strip().splitlines()
    return f" (by {'; '.join(log)})" if log else ""


def history_flags(git, commit, manifest):
    """Watched files that a commit of any fetched branch or tag held and the template does not, beyond those the
    graded commit holds itself (flags() names them): each with the first commit seen holding it."""
    graded, _ = commit_files(git, commit)
    # every option spelled out: the grading host's git configuration (log.diffMerges, log.showRoot) changes none
    log = git.run("-c", "core.quotePath=false", "log", "--all", "--full-history", "--diff-merges=separate", "--root",
                  "--raw", "--no-renames", "--no-abbrev", "--no-ext-diff", "--no-textconv", "--no-color",
                  f"--max-count={MAX_LOGGED}", "--format=commit %H %cI", "--", *WATCHED, check=False).stdout
    found, at, logged = {}, None, 0
    for line in log.splitlines():
        if line.startswith("commit "):
            at, logged = line.split()[1:3], logged + 1
        elif line.startswith(":") and "\t" in line and at:
            meta, path = line.split("\t", 1)
            _old_mode, mode, _old, blob, status = meta[1:].split()[:5]
            if status.startswith("D") or graded.get(path) == blob:
                continue
            if mode in REGULAR and blob in manifest.get(path, ()) and not path.startswith('"'):
                continue
            found.setdefault((path, blob, mode), at)
    flags = [f"workflow or grading file changed in history: {path} as commit {sha[:10]} ({when}) holds it "
             + (f"(mode {mode}) " if mode not in REGULAR else "")
             + ("is not in the template" if path not in manifest else "differs from the template's")
             + ": CI ran it on that push"
             for (path, _blob, mode), (sha, when) in sorted(found.items(), key=lambda x: x[1][1])]
    if len(flags) > MAX_HISTORY_FLAGS:
        flags = flags[:MAX_HISTORY_FLAGS] + [f"workflow or grading file changed in history: {len(flags) - MAX_HISTORY_FLAGS} "
                                             "more versions not named here"]
    if logged >= MAX_LOGGED:
        flags.append(f"workflow or grading file history: more than {MAX_LOGGED} commits touch them; only the newest "
                     f"{MAX_LOGGED} were read")
    return flags
