"""The grade of record: grade every student's repository as it stood at the deadline (``make grade-repos``).

    python -m course.grade_repos --roster students.csv --deadline 2026-12-01T23:59:00Z
                                 [--assignment matmul] [--course DIR] [--org ORG --classroom NAME | --repo-url TEMPLATE]
                                 [--template DIR] [--forge github|gitlab [--forge-api URL] [--forge-repo OWNER/{username}]]
                                 [--ref branch|submit-tag] [--repin USERNAME] [--device auto|gpu|sim] [--force]
                                 [--dry-run] [-- ARGS for course.grade_class]

A student owns their repository and its workflow, so the points CI shows them are feedback. The grade is made
here, from the same repositories, on the instructor's machine, with the grader the instructor holds. One step a
room, each keeping a student's failure in that student's row:

- ``inputs.py``    the roster (Classroom 50's roster.csv), the deadline, the repository addresses;
- ``git.py``       fetch into ``COURSE/repos/<username>.git`` with every object checked; trees and blobs by object;
- ``forge.py``     the forge's record of each push (GitHub's activity API, GitLab's push events);
- ``deadline.py``  which commit is graded, by the strongest witness there is (the forge, the grader's own fetches,
                   and only then the student's dates, saying so);
- ``tamper.py``    workflow and grading files against the instructor's template (``COURSE/template.json``);
- ``files.py``     the stage files as blobs into ``COURSE/submitted/<username>/ASSIGNMENT/`` (no tree extracted,
                   no link followed) and the top-level names that belong to the grader or shadow what it imports;
- ``record.py``    ``repos.json``, ``repos.csv``, ``grades-of-record.csv``, the roster's names in the gradebook;
- ``run.py``       the steps in order, then the class run (course.grade_class) on what was laid out.
"""
from .deadline import iso  # noqa: F401
from .inputs import RepoError, parse_deadline, read_roster  # noqa: F401
from .run import inspect, main, run  # noqa: F401
