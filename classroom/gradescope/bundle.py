"""Pack the Gradescope autograder zip: ``python -m classroom.gradescope.bundle [ZIP]``.

The zip's root holds Gradescope's two files, ``setup.sh`` and ``run_autograder``
(from classroom/gradescope/), beside the grader they run: the Makefile,
requirements.txt, pyproject.toml and the packages autograder/, classroom/,
course/ and exercises/ (the stubs graded when a stage's file is missing).
Solutions, tests, notebooks and course data stay out. ZIP defaults to
build/gradescope-autograder.zip.
"""
import argparse
import os
import stat
import sys
import zipfile

from .. import HERE, ROOT

ROOT_FILES = ("Makefile", "requirements.txt", "pyproject.toml")
PACKAGES = ("autograder", "classroom", "course", "exercises")
ENTRY = ("setup.sh", "run_autograder")
DEFAULT_ZIP = os.path.join(ROOT, "build", "gradescope-autograder.zip")


def members():
    """[(path on disk, name in the zip)] of everything the zip holds."""
    found = [(os.path.join(HERE, "gradescope", name), name) for name in ENTRY]
    found += [(os.path.join(ROOT, name), name) for name in ROOT_FILES]
    for package in PACKAGES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, package)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            for name in sorted(filenames):
                if not name.endswith((".pyc", ".pyo")):
                    path = os.path.join(dirpath, name)
                    found.append((path, os.path.relpath(path, ROOT)))
    return found


def build(dest=DEFAULT_ZIP):
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for path, name in members():
            info = zipfile.ZipInfo.from_file(path, name)
            info.compress_type = zipfile.ZIP_DEFLATED
            mode = os.stat(path).st_mode
            info.external_attr = ((0o755 if mode & stat.S_IXUSR else 0o644) | stat.S_IFREG) << 16
            with open(path, "rb") as f:
                z.writestr(info, f.read())
    return dest


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m classroom.gradescope.bundle", description=__doc__.splitlines()[0])
    p.add_argument("zip", nargs="?", default=DEFAULT_ZIP, help="where the zip goes (default: %(default)s)")
    args = p.parse_args(argv)
    dest = build(args.zip)
    print(f"wrote {os.path.relpath(dest)}: upload it as the Gradescope autograder (docs/CLASSROOM.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
