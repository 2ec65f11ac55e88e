#!/usr/bin/env bash
# The grading command of every CI job (plain GitHub Actions, GitLab CI, the legacy GitHub Classroom workflow)
# and of the tests:
#
#   GRADER/classroom/grade.sh STUDENT_DIR OUT_DIR gpu|sim
#
# STUDENT_DIR is the student's repository (the template plus their work), GRADER the
# instructor's grader checkout this script lives in. OUT_DIR receives results.json,
# classroom.json, summary.md and feedback.html (python -m classroom.grade says what each is).
# Under GitHub Actions it also sets the step output `result` (GitHub Classroom's points)
# and writes the job summary.
#
# Environment:
#   GRADER_PYTHON  the Python of a venv holding GRADER/requirements.txt; default
#                  GRADER/.venv/bin/python, made with `make -C GRADER venv` when missing
#   STAGES         grade only these stages (names, space separated); default: all
set -euo pipefail
if [ $# -ne 3 ]; then
    echo "usage: $0 STUDENT_DIR OUT_DIR gpu|sim" >&2
    exit 2
fi
grader="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${GRADER_PYTHON:-}"
if [ -z "$python" ]; then
    [ -x "$grader/.venv/bin/python" ] || make -C "$grader" venv
    python="$grader/.venv/bin/python"
fi
student="$(cd "$1" && pwd)"
# A committed `grading` link (or a link anywhere in a relative OUT_DIR) would take every write below wherever it
# points, the mkdir first: each part is checked before anything is made (classroom.grade checks again).
part=""
IFS=/ read -ra parts <<< "$2"
for name in "${parts[@]}"; do
    part="${part:+$part/}$name"
    [[ "$2" == /* || -z "$name" ]] && continue
    if [ -L "$part" ] || { [ -e "$part" ] && [ ! -d "$part" ]; }; then
        echo "error: $part is a symbolic link or a file, not a folder: the grader writes its results only into a real folder; delete it from the repository" >&2
        exit 2
    fi
done
mkdir -p "$2"
out="$(cd "$2" && pwd)"
# The grading process never imports from the student's checkout: it runs from the grader's folder, and -P keeps
# the working directory off sys.path (an argparse.py or numpy/ in the checkout is a file, never a module).
cd "$grader"
export PYTHONPATH="$grader${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" -P -m classroom.grade "$student" --out "$out" --device "$3" ${STAGES:+--stages "$STAGES"}
