"""GitHub Classroom and Gradescope: the student template and the grading entry points.

- ``python -m classroom.template``  the student template repository from the release (``make template``)
- ``classroom/grade.sh``            the workflow's grading command (calls ``python -m classroom.grade``)
- ``python -m classroom.grade``     pick the graded files, run the grading engine, write every output
- ``classroom.report``              results.json as GitHub Classroom points, a job summary, a feedback page
- ``classroom/gradescope/``         ``setup.sh`` and ``run_autograder`` for Gradescope (simulator tier)

The template (``classroom/template/``: workflow, actionlint config, student README)
holds no grader: the workflow checks the grader out of the instructor's repository
at grading time. docs/CLASSROOM.md is the instructor's guide.
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE_SOURCE = os.path.join(HERE, "template")
BUILD_TEMPLATE = os.path.join(ROOT, "build", "template")
