"""Grading students' repositories: Classroom 50, plain CI, Gradescope, and the legacy GitHub Classroom template.

- ``classroom/classroom50/autograder.py``  the autograder Classroom 50's runner calls (``make release`` bundles it)
- ``python -m classroom.c50``       Classroom 50's result.json, its contract check, the config files (``make release``)
- ``classroom/ci/``                 a reusable GitHub Actions workflow and a GitLab CI template
- ``python -m classroom.template``  the student templates from the release (Classroom 50's and the legacy one)
- ``classroom/grade.sh``            every CI job's grading command (calls ``python -m classroom.grade``)
- ``python -m classroom.grade``     pick the graded files, run the grading engine, write every output
- ``classroom.report``              results.json as GitHub Classroom points, a job summary, a feedback page
- ``classroom/gradescope/``         ``setup.sh`` and ``run_autograder`` for Gradescope (simulator tier)

The templates (``classroom/template/``: student README, legacy workflow, actionlint
config) hold no grader: CI takes the grader from the instructor's repository or
Classroom 50's bundle at grading time. docs/CLASSROOM.md is the instructor's guide.
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE_SOURCE = os.path.join(HERE, "template")
BUILD_TEMPLATE = os.path.join(ROOT, "build", "template")
