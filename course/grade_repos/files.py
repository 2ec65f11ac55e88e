"""The files a grade needs, read out of the graded commit as git blobs: never a tree extracted, never a link followed.

The stage files are picked by the one rule of every grader that starts from a repository
(autograder/repository.py): this module writes the candidates it may pick (regular files of the folders it
searches, within the reader's caps) into a scratch folder it makes itself, so nothing the student named can be a
link, a folder of the same name or a path out of it.
"""
import functools
import os
import shutil
import sys
import tempfile

from autograder.reading.files import MAX_FILES, cap_for

from .git import REGULAR, TREE, bad_path

SEARCHED = ("", "exercises", "notebooks")          # the folders autograder/repository.py searches
GRADER_PACKAGES = ("autograder", "classroom", "course", "sitecustomize", "usercustomize", "conftest")
GRADER_FILES = ("result.json", "release-body.md", "results.json", "grading")   # what the CI graders write in a checkout
MODULE_SUFFIXES = (".py", ".pyc", ".pyd", ".so")


def describe(mode):
    return {"120000": "a symbolic link", "160000": "a submodule (gitlink)", TREE: "a folder"}.get(mode, f"mode {mode}")


class Tree:
    """The parts of a commit's tree the grade reads: the top level, exercises/ and notebooks/, by object."""

    def __init__(self, git, commit):
        self.git, self.notes = git, []
        self.root = self._listing(git.tree_of(commit), "")
        self.folders = {"": self.root}
        for folder in SEARCHED[1:]:
            entry = self.root.get(folder)
            if entry and entry[0] == TREE:
                self.folders[folder] = self._listing(entry[1], folder + "/")
            elif entry:
                self.notes.append(f"{folder} ({describe(entry[0])}, not a folder: never followed)")

    def _listing(self, tree, prefix):
        """{name: (mode, sha, size)} of one folder; names used twice or refused are left out, with a note."""
        entries, cut = self.git.entries(tree)
        if cut:
            self.notes.append(f"{prefix or 'the top level'}: more than {len(entries)} entries, the rest not read")
        seen, twice = {}, set()
        for mode, sha, size, name in entries:
            if name in seen:
                twice.add(name)
            seen[name] = (mode, sha, size)
        for name in sorted(twice):
            del seen[name]
            self.notes.append(f"{prefix}{name} (named twice in one folder of the tree: neither is read)")
        for name in [n for n in seen if bad_path(n)]:
            self.notes.append(f"{prefix}{name!r} ({bad_path(name)})")
            del seen[name]
        return seen

    def top_level(self):
        return sorted(self.root)


def lay_out(git, commit, folder, submitted_at):
    """COURSE/submitted/<student>/ASSIGNMENT/: the file graded for each stage and timestamp.txt; [{stage, file,
    note}] with a last row naming what was not read (links, gitlinks, files over the caps)."""
    import datetime

    from autograder.repository import pick_files
    from autograder.stages import STAGES
    tree = Tree(git, commit)
    skipped = list(tree.notes)
    with tempfile.TemporaryDirectory(prefix="grade-repos-") as scratch:
        count = 0
        for sub, listing in tree.folders.items():
            os.makedirs(os.path.join(scratch, sub), exist_ok=True)
            for name, (mode, sha, size) in sorted(listing.items()):
                if name.startswith(".") or not name.endswith((".py", ".ipynb")):
                    continue
                rel = f"{sub}/{name}" if sub else name
                if mode not in REGULAR:
                    skipped.append(f"{rel} ({describe(mode)}, never followed: commit the file itself)")
                    continue
                if count >= MAX_FILES:
                    skipped.append(f"{rel} (more than {MAX_FILES} .py and .ipynb files: the rest not read)")
                    continue
                data = git.blob(sha, size, cap_for(name))
                if data is None:
                    skipped.append(f"{rel} ({size:,} bytes, over the {cap_for(name):,} the grader reads)")
                    continue
                with open(os.path.join(scratch, sub, name), "xb") as f:
                    f.write(data)
                count += 1
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.makedirs(folder)
        picked = []
        for stage, path, rel, note in pick_files(scratch, STAGES):
            shutil.copyfile(path, os.path.join(folder, stage.module + os.path.splitext(path)[1]))
            picked.append({"stage": stage.name, "file": rel or None, "note": note})
    if skipped:
        picked.append({"stage": None, "file": None, "note": "not read: " + ", ".join(skipped)})
    when = datetime.datetime.strptime(submitted_at, "%Y-%m-%dT%H:%M:%SZ")
    with open(os.path.join(folder, "timestamp.txt"), "w", encoding="utf-8") as f:
        f.write(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC") + "\n")
    return picked


@functools.lru_cache(maxsize=1)
def imported_names():
    """Top-level module names a grading process may import: the standard library, every installed distribution's
    modules (numpy, numba, llvmlite, nbgrader...) and the grader's own packages."""
    from importlib import metadata
    names = set(sys.stdlib_module_names) | set(GRADER_PACKAGES)
    try:
        names |= {n for n in metadata.packages_distributions() if n.isidentifier()}
    except Exception:  # a broken distribution's metadata: the standard library and the grader still count
        pass
    return names


def module_name(name, mode):
    """The module a top-level entry would be imported as, or None."""
    if mode == TREE:
        return name if name.isidentifier() else None
    for suffix in MODULE_SUFFIXES:
        if name.endswith(suffix):
            base = name[:-len(suffix)].split(".")[0]
            return base if base.isidentifier() else None
    return None


def grader_flags(tree):
    """Flags for top-level entries that belong to the grader or shadow a module it imports: a CI grader that put
    the checkout on sys.path would run them as the grader."""
    flags, names = [], imported_names()
    for name in tree.top_level():
        mode = tree.root[name][0]
        module = module_name(name, mode)
        if name in GRADER_FILES or name.endswith(".pth"):
            flags.append(f"grader file in the repository: {name}")
        elif module in GRADER_PACKAGES:
            flags.append(f"grader file in the repository: {name}")
        elif module and module in names:
            flags.append(f"shadows a module the grader imports: {name} (would be imported as `{module}` by a "
                         "grading process that puts the checkout on sys.path)")
    return flags
