"""The Makefile front door: every target is phony and has a rule, so make never calls one up to date."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def makefile():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        return f.read()


def test_every_target_is_phony_and_every_phony_target_has_a_rule():
    text = makefile()
    phony = set(re.search(r"^\.PHONY:(.*)$", text, re.M).group(1).split())
    targets = set(re.findall(r"^([a-z][a-z-]*):", text, re.M))
    assert targets - phony == set(), "targets missing from .PHONY (make may call them up to date)"
    assert phony - targets == set(), "phony targets without a rule"


def test_make_notebooks_runs_although_a_notebooks_folder_exists():
    assert os.path.isdir(os.path.join(ROOT, "notebooks"))
    out = subprocess.run(["make", "-n", "-o", ".venv/.installed", "notebooks"], cwd=ROOT, capture_output=True,
                         text=True).stdout
    assert "course.notebooks" in out, out  # not "make: 'notebooks' is up to date."
