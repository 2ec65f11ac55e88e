"""git on a student's bare mirror: fetch with every object checked, list trees by object, read blobs within caps.

Nothing here extracts a tree or follows a path on disk: a student's repository is read as git objects, and every
path and mode is checked here before anything is written (a hand-built tree can hold links, a link and a folder of
one name, `..` or a name used twice; tarfile's filters have let such trees write outside their folder).
"""
import datetime
import subprocess

REGULAR = ("100644", "100755")      # the only modes read: a link (120000) or a gitlink (160000) is refused
TREE = "040000"
MAX_ENTRIES = 5000                  # entries listed of one folder of a student's tree (a few dozen are expected)
MAX_HISTORY = 20000                 # first-parent commits looked at on one branch
TEXT = {"encoding": "utf-8", "errors": "surrogateescape"}


class Git:
    """git on one bare repository."""

    def __init__(self, path):
        self.path = path
        self._first_parent = {}   # a commit's history never changes: each head is listed once per run

    def run(self, *args, check=True, text=True, input=None):
        """git's output as text keeps a name that is not UTF-8 (a branch or file a student named with any bytes) as
        the same bytes, never an error."""
        p = subprocess.run(["git", "--git-dir", self.path, *args], capture_output=True, input=input,
                           **(TEXT if text else {}))
        if check and p.returncode != 0:
            err = p.stderr if text else p.stderr.decode("utf-8", "replace")
            # git's whole message: its last line alone ("and the repository exists.") says nothing
            raise RuntimeError(" ".join(ln.strip() for ln in err.splitlines() if ln.strip())
                               or f"git {args[0]} failed (exit status {p.returncode})")
        return p

    def out(self, *args):
        return self.run(*args).stdout.strip()

    def refs(self):
        """{ref: commit} of every branch and tag (an annotated tag by the commit it names)."""
        text = self.out("for-each-ref", "--format=%(objectname) %(*objectname) %(objecttype) %(refname)",
                        "refs/heads", "refs/tags")
        found = {}
        for line in text.splitlines():
            sha, peeled, kind, ref = line.split(" ", 3)
            if kind == "commit":
                found[ref] = sha
            elif kind == "tag" and peeled and self.kind(peeled) == "commit":
                found[ref] = peeled
        return found

    def kind(self, sha):
        p = self.run("cat-file", "-t", sha, check=False)
        return p.stdout.strip() if p.returncode == 0 else None

    def has_commit(self, sha):
        return self.kind(sha) == "commit"

    def is_ancestor(self, old, new):
        return self.run("merge-base", "--is-ancestor", old, new, check=False).returncode == 0

    def commit_time(self, sha):
        return datetime.datetime.fromtimestamp(int(self.out("show", "-s", "--format=%ct", sha)), datetime.timezone.utc)

    def first_parent(self, head):
        """[(sha, committer time as a Unix time)] of commit `head`'s first-parent history, newest first (the list is
        shared between callers: read it, never change it)."""
        if head in self._first_parent:
            return self._first_parent[head]
        text = self.out("rev-list", "--first-parent", f"--max-count={MAX_HISTORY}", "--format=%ct", head)
        lines = text.splitlines()
        self._first_parent[head] = [(lines[i].split()[1], int(lines[i + 1])) for i in range(0, len(lines) - 1, 2)
                                    if lines[i].startswith("commit ")]
        return self._first_parent[head]

    def keep(self, refs, namespace="refs/grader/pin/"):
        """Hold `refs`' commits under `namespace` (which no fetch prunes), so a pinned commit outlives a force-push and
        git's garbage collection; a commit the mirror lacks is skipped, and what an earlier pin held is let go. True
        when every commit is held (a ref name the namespace cannot take is left out, never an error)."""
        names = sorted(set(refs.values()))
        found = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)", check=False,
                         input="\n".join(names) + "\n").stdout.split("\n") if names else []
        commits = {line.split()[0] for line in found if line.endswith(" commit")}
        wanted = {f"{namespace}{ref[len('refs/'):]}": sha for ref, sha in refs.items() if sha in commits}
        held = self.run("for-each-ref", "--format=%(refname) %(objectname)", namespace, check=False).stdout.split("\n")
        held = dict(line.split(" ", 1) for line in held if " " in line)
        stale = "".join(f"delete {ref}\n" for ref in sorted(held) if ref not in wanted)
        if stale:
            self.run("update-ref", "--stdin", input=stale, check=False)
        todo = sorted((ref, sha) for ref, sha in wanted.items() if held.get(ref) != sha)
        ok = not todo or self.run("update-ref", "--stdin", check=False,
                                  input="".join(f"update {ref} {sha}\n" for ref, sha in todo)).returncode == 0
        if not ok:   # the transaction is all or nothing: one at a time, a name the namespace cannot take fails alone
            ok = all([self.run("update-ref", ref, sha, check=False).returncode == 0 for ref, sha in todo])
        return ok and len(wanted) == len(refs)

    def tree_of(self, commit):
        return self.out("rev-parse", f"{commit}^{{tree}}")

    def entries(self, tree, recursive=False, limit=MAX_ENTRIES):
        """([(mode, sha, size or None, name)], cut): the entries of tree object `tree` as git lists them, at most
        `limit` (cut says the listing stopped there). Sizes come from the object store, before anything is read."""
        args = ["git", "--git-dir", self.path, "ls-tree", "-z", "-l"] + (["-r"] if recursive else []) + [tree]
        found, cut = [], False
        with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as p:
            buf = b""
            while True:
                chunk = p.stdout.read(65536)
                if not chunk:
                    break
                buf += chunk
                *records, buf = buf.split(b"\0")
                for record in records:
                    head, _, name = record.partition(b"\t")
                    mode, _kind, sha, size = head.decode("ascii", "replace").split()
                    found.append((mode, sha, int(size) if size.isdigit() else None,
                                  name.decode("utf-8", "surrogateescape")))
                    if len(found) >= limit:
                        cut = True
                        break
                if cut:
                    p.kill()
                    break
        return found, cut

    def blob(self, sha, size, cap):
        """The bytes of blob `sha` when its size (from the listing) is within `cap`; None otherwise."""
        if size is None or size > cap:
            return None
        data = self.run("cat-file", "blob", sha, text=False).stdout
        return data if len(data) == size else None


def fetch(url, mirror):
    """Fetch every branch and tag of `url` into the bare repository `mirror`, checking every object received
    (fetch.fsckObjects: malformed trees, `.git` or `..` names, names used twice are refused); (refs before, refs
    after, HEAD branch)."""
    import os
    if not os.path.isdir(mirror):
        subprocess.run(["git", "init", "--quiet", "--bare", mirror], check=True, capture_output=True)
        for key, value in (("fetch.fsckObjects", "true"), ("transfer.fsckObjects", "true")):
            subprocess.run(["git", "--git-dir", mirror, "config", key, value], check=True, capture_output=True)
    git = Git(mirror)
    before = git.refs()
    git.run("-c", "fetch.fsckObjects=true", "-c", "transfer.fsckObjects=true", "fetch", "--quiet", "--prune",
            "--force", "--no-recurse-submodules", url, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
    head = subprocess.run(["git", "ls-remote", "--symref", url, "HEAD"], capture_output=True, **TEXT)
    branch = None
    for line in head.stdout.splitlines():
        if line.startswith("ref: ") and line.endswith("\tHEAD"):
            branch = line[5:].split("\t")[0]
    return before, git.refs(), branch


def fetch_commit(git, url, sha):
    """Fetch one commit by its name (a forge's record of a push whose commit no branch holds any more); True when
    the mirror has it afterwards."""
    if git.has_commit(sha):
        return True
    if not url:
        return False
    git.run("-c", "fetch.fsckObjects=true", "fetch", "--quiet", "--no-recurse-submodules", url, sha, check=False)
    return git.has_commit(sha)


def bad_path(name):
    """Why a path from a tree is refused ("" when it is fine): absolute, empty parts, `.`, `..`, `.git`."""
    if not name or name.startswith("/") or "\\" in name:
        return "not a plain relative path"
    for part in name.split("/"):
        if part in ("", ".", "..") or part.lower() == ".git":
            return f"a path with {part!r} in it"
    return ""
