"""Which commit is graded: decided by a time the student does not write, wherever there is one.

Witnesses, strongest first:
1. the forge's record of each push (``--forge github|gitlab``): the last push to the branch at or before the
   deadline decides, by the forge's clock;
2. the grader's own fetches: every fetch records the refs it saw (``sightings`` in repos.json). A commit a fetch
   saw at or before the deadline was pushed on time, whatever its date says. The first fetch at or after the
   deadline pins the refs and the graded branch: later runs grade from the pinned refs (``--repin`` decides
   again), so nothing pushed after the pin, whatever its date or branch, is graded. A fetch at or after the
   deadline that fails is remembered: a pin made later says so on every commit only its date placed on time;
3. the commit's own date (or a ``submit/*`` tag's name), written by the student's git: it decides only where
   nothing better does, and the row then says the time is unwitnessed. A commit dated in the future, or later than
   a fetch first saw it, is flagged.
"""
import datetime
import re

from .forge import ZERO
from .git import fetch_commit

SKEW = datetime.timedelta(minutes=5)     # clocks that disagree by less than this are not flagged
MAX_SIGHTINGS = 200
SUBMIT_TAG_TIME = re.compile(r"^submit/(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})Z-")
UNWITNESSED = "unwitnessed: the commit's date"


def iso(when):
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)


def remember(memory, now, refs, deadline, repin=False, branch=None):
    """Record this fetch's refs; pin them and the graded branch when this is the first fetch at or after the
    deadline (or --repin)."""
    seen = memory.setdefault("sightings", [])
    if (not seen or seen[-1]["refs"] != refs) and len(seen) < MAX_SIGHTINGS:
        seen.append({"at": iso(now), "refs": dict(refs)})
    if now >= deadline and (repin or "pin" not in memory):
        memory["pin"] = {"at": iso(now), "refs": dict(refs), "branch": branch}
    return memory


def remember_failed_fetch(memory, now, deadline):
    """A fetch at or after the deadline that failed, before any pin: the pin comes from a later fetch, and what was
    pushed in between is witnessed by nothing but its date."""
    if now >= deadline and "pin" not in memory:
        memory.setdefault("missed", iso(now))
    return memory


def graded_branch(refs, head, memory, now, deadline, repin=False):
    """The branch graded; records this fetch in `memory` (and pins it). Before the pin: the remote's default branch
    (HEAD), else main, master or the first. From the pin on: the pin's branch, so a default branch changed after
    the deadline decides nothing. None when the repository has no branch."""
    branches = sorted(r for r in refs if r.startswith("refs/heads/"))
    if head not in branches:
        head = next((b for b in ("refs/heads/main", "refs/heads/master") if b in branches),
                    branches[0] if branches else None)
    remember(memory, now, refs, deadline, repin, head)
    pin = memory.get("pin")
    return pin["branch"] if pin and pin.get("branch") else head


class Witness:
    """When the grader first saw each commit of a branch, and each (tag, commit), from the recorded sightings."""

    def __init__(self, git, memory):
        self.git = git
        self.sightings = sorted(((parse(s["at"]), s["refs"]) for s in memory.get("sightings", [])),
                                key=lambda x: x[0])

    def history(self, head):
        return self.git.first_parent(head) if self.git.has_commit(head) else []

    def commit_seen(self, branch):
        """{commit: first time a fetch saw it on `branch`'s first-parent history}."""
        first = {}
        for at, refs in self.sightings:
            head = refs.get(branch)
            for sha, _ in self.history(head) if head else ():
                first.setdefault(sha, at)
        return first

    def tag_seen(self, ref, sha):
        return next((at for at, refs in self.sightings if refs.get(ref) == sha), None)


def pick_on_branch(git, head, deadline, seen):
    """(commit, its time, witnessed?, index in head's history) of the newest commit on `head`'s first-parent
    history that is on time: seen by a fetch at or before the deadline, else dated at or before it."""
    for i, (sha, t) in enumerate(git.first_parent(head)):
        committed = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
        w = seen.get(sha)
        if w is not None and w <= deadline:
            return sha, min(committed, w), True, i
        if committed <= deadline:
            return sha, committed, False, i
    return None, None, False, None


def date_flags(git, head, seen, now):
    """A commit dated in the future, or after a fetch first saw it: a clock that runs fast, or a date set by hand."""
    flags = []
    for sha, t in git.first_parent(head):
        committed = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
        w = seen.get(sha)
        if committed > now + SKEW:
            flags.append(f"{sha[:10]} is dated {iso(committed)}, in the future (a clock that runs fast, or a date "
                         "set by hand): its date decides nothing")
        elif w is not None and committed > w + SKEW:
            flags.append(f"{sha[:10]} is dated {iso(committed)}, after the grader first saw it at {iso(w)} (a clock "
                         "that runs fast, or a date set by hand)")
    return flags[:5]


def on_branch(git, refs, branch, deadline, memory, now, pushes=None, url=None, forge="forge"):
    """The graded commit of `branch` (a dict: commit, submitted_at, witness, witnessed, late_commits_ignored,
    flags)."""
    info = {"commit": None, "submitted_at": None, "witness": None, "witnessed": False, "late_commits_ignored": 0,
            "flags": []}
    short = branch[len("refs/heads/"):]
    pin = memory.get("pin")
    pinned = pin["refs"].get(branch) if pin else None
    current = refs.get(branch) or pinned     # a branch deleted after the pin is graded from the pin
    moves = [p for p in pushes or () if p.ref == branch]
    if moves:
        timely = [p for p in moves if p.at <= deadline]
        if not timely or timely[-1].after == ZERO:
            return info
        push = timely[-1]
        if not fetch_commit(git, url, push.after):
            info["flags"].append(f"{forge} records {push.after[:10]} as {branch} at the deadline (pushed "
                                 f"{iso(push.at)}), but the repository no longer has it: history was rewritten")
            return info
        newest = next((i for i, (c, _) in enumerate(git.first_parent(current) if current else ())
                       if c == push.after), None)
        info.update(commit=push.after, submitted_at=iso(push.at), witness=f"{forge} push at {iso(push.at)}",
                    witnessed=True, late_commits_ignored=newest or 0)
        return info
    if pin and not pinned:
        info["flags"].append(f"{short} was not on the remote at the pin of {pin['at']}: what it holds was pushed "
                             "after the pin and is not graded (--repin grades it)")
        return info
    if pinned and not fetch_commit(git, url, pinned):
        info["flags"].append(f"the pinned {pinned[:10]} ({short} at the pin of {pin['at']}) is no longer in the "
                             "repository: history was rewritten after the pin; nothing graded (--repin grades what "
                             "is there now)")
        return info
    witness = Witness(git, memory)
    seen = witness.commit_seen(branch)
    head = pinned or current
    sha, when, witnessed, index = pick_on_branch(git, head, deadline, seen)
    info["flags"] += date_flags(git, head, seen, now)
    if sha is None:
        return info
    newest = next((i for i, (c, _) in enumerate(git.first_parent(current)) if c == sha), None)
    info.update(commit=sha, submitted_at=iso(when), witnessed=witnessed,
                late_commits_ignored=newest if newest is not None else index,
                witness=f"grader's fetch at {iso(seen[sha])}" if witnessed else UNWITNESSED)
    if pinned and refs.get(branch) not in (None, pinned):
        now_pick = pick_on_branch(git, refs[branch], deadline, seen)[0]
        if now_pick != sha:
            info["flags"].append(
                f"{short} changed after the pin of {pin['at']}: graded the pinned "
                f"{sha[:10]}; the newest commit dated by the deadline is now {(now_pick or 'none')[:10]} (pushed "
                "after the pin; --repin grades it)")
    return info


def submit_tags(git, refs, deadline, memory, now, pushes=None, forge="forge"):
    """The graded submit/* tag: its time from the forge's push of the tag, else a fetch that saw it by the
    deadline, else its name or its commit's date (unwitnessed). With a pin, only the tags the pin saw count."""
    info = {"commit": None, "ref": None, "submitted_at": None, "witness": None, "witnessed": False,
            "late_commits_ignored": 0, "flags": []}
    witness = Witness(git, memory)
    pin = memory.get("pin")
    pool = pin["refs"] if pin else refs
    candidates = []
    for ref, sha in sorted(refs.items()):
        if not ref.startswith("refs/tags/submit/"):
            continue
        claimed, named = submit_time(git, ref, sha)
        name = ref[len("refs/tags/"):]
        if named and claimed - named > SKEW:
            info["flags"].append(f"{name} is named {iso(named)} but its commit is dated {iso(claimed)}: a tag made "
                                 "by hand")
        push = next((p for p in pushes or () if p.ref == ref and p.after == sha), None)
        first = witness.tag_seen(ref, sha)
        if push:
            when, how, ok = push.at, f"{forge} push at {iso(push.at)}", True
        elif pool.get(ref) != sha:
            if claimed <= deadline:
                info["flags"].append(f"{name} claims {iso(claimed)} but was first seen after the pin of "
                                     f"{pin['at']}: not graded")
            info["late_commits_ignored"] += 1
            continue
        elif first is not None and first <= deadline:
            when, how, ok = min(claimed, first), f"grader's fetch at {iso(first)}", True
        else:
            when, how, ok = claimed, "unwitnessed: the tag's name or its commit's date", False
        candidates.append((when, ref, sha, how, ok))
    candidates.sort(key=lambda x: (x[0], x[1]))
    timely = [c for c in candidates if c[0] <= deadline]
    info["late_commits_ignored"] += len(candidates) - len(timely)
    if timely:
        when, ref, sha, how, ok = timely[-1]
        info.update(commit=sha, ref=ref[len("refs/tags/"):], submitted_at=iso(when), witness=how, witnessed=ok)
    return info


def submit_time(git, tag, sha):
    """(claimed time, named time) of a submit/* tag: the later of the UTC time in Classroom 50's tag name
    (``submit/<time>-<sha>``; None for other names) and the commit's date. Both are the student's to write."""
    committed = git.commit_time(sha)
    m = SUBMIT_TAG_TIME.match(tag[len("refs/tags/"):])
    named = datetime.datetime.fromisoformat(f"{m[1]}T{m[2]}:{m[3]}:{m[4]}+00:00") if m else None
    return max(committed, named or committed), named
