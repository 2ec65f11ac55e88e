"""Classroom 50 autograder of the matrix multiplication assignment.

Classroom 50's runner runs this file once per submission, as
``python autograder.py`` with the student's checkout as working directory
(docs/CLASSROOM.md, section 1). It needs only the standard library: it finds the
grader and a Python that has the grader's requirements, then runs
``python -P -m classroom.c50 grade --checkout CHECKOUT`` from the grader's folder (the checkout is never on
``sys.path``: a module there named like one the grader imports stays a file), which grades the checkout and
writes ``./result.json`` and ``./release-body.md``.

- The grader: ``$MATMUL_GRADER`` (a grader checkout), else ``grader/`` beside this
  file (``make release`` packs it into the bundle).
- Its Python: ``$GRADER_PYTHON`` (on a GPU runner, set in the runner's ``.env``),
  else ``GRADER/.venv/bin/python``, else a venv made now in ``$RUNNER_TEMP`` from
  ``GRADER/requirements.txt`` (hosted runners; a few minutes).
- The tier: ``$MATMUL_DEVICE`` (gpu or sim), else ``gpu`` on a self-hosted runner and
  ``sim`` (provisional) on a GitHub-hosted one.

Exit status 0 when result.json was written, whatever the score; non-zero only when
grading could not run at all (Classroom 50 then records an error).
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def say(text):
    print(f"matmul autograder: {text}", flush=True)


def fail(text):
    print(f"::error::matmul autograder: {text}", flush=True)
    return 1


def find_grader():
    named = os.environ.get("MATMUL_GRADER", "").strip()
    for path in ([Path(named)] if named else []) + [HERE / "grader"]:
        if (path / "classroom" / "c50.py").is_file() and (path / "autograder").is_dir():
            return path.resolve()
    return None


def make_venv(grader):
    """A venv with the grader's requirements, made once per job in $RUNNER_TEMP."""
    if sys.version_info < (3, 11):
        raise RuntimeError(f"the grader needs Python 3.11 or newer, this runner has {sys.version.split()[0]}: "
                           "set \"python\" in the assignment's runtime block")
    base = Path(os.environ.get("RUNNER_TEMP") or tempfile.gettempdir())
    venv = base / "matmul-grader-venv"
    python = venv / "bin" / "python"
    if not python.is_file():
        say(f"installing the grader's requirements into {venv} (set GRADER_PYTHON to skip this)")
        # -P and a working directory of the grader's: a venv.py or pip/ in the student's checkout stays a file
        subprocess.run([sys.executable, "-P", "-m", "venv", str(venv)], check=True, cwd=str(grader))
        subprocess.run([str(python), "-P", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "-r", str(grader / "requirements.txt")], check=True, cwd=str(grader))
    return python


def allow_sandbox():
    """Hosted Ubuntu 24.04 runners keep unprivileged user namespaces from bubblewrap; allow them (sudo works there)."""
    if os.environ.get("RUNNER_ENVIRONMENT") == "github-hosted":
        try:
            subprocess.run(["sudo", "-n", "sysctl", "-q", "-w", "kernel.apparmor_restrict_unprivileged_userns=0"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=30)
        except (OSError, subprocess.SubprocessError):
            say("could not allow user namespaces; the sandbox falls back and says so")


def main():
    grader = find_grader()
    if grader is None:
        return fail(f"no grader: set MATMUL_GRADER, or publish the bundle `make release` writes (grader/ beside {HERE})")
    python = os.environ.get("GRADER_PYTHON", "").strip()
    if not python and (grader / ".venv" / "bin" / "python").is_file():
        python = str(grader / ".venv" / "bin" / "python")
    try:
        if not python:
            python = str(make_venv(grader))
        allow_sandbox()
    except (OSError, RuntimeError, subprocess.CalledProcessError) as exc:
        return fail(f"cannot prepare the grader's Python: {exc}")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(grader) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    say(f"grader {grader}, Python {python}")
    try:
        return subprocess.run([python, "-P", "-m", "classroom.c50", "grade", "--checkout", os.getcwd()], env=env,
                              cwd=str(grader), check=False).returncode
    except OSError as exc:
        return fail(f"cannot run {python}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
