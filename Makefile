# Front door of the course repository. `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JOBS ?= 2
# Course folder of `make release` and `make grade` (empty: build/course and demo_course).
COURSE ?=
# `make grade`: GPUS (how many, or which: 0,1), WORKERS (simulator tier), CLUSTER=slurm (docs/CLUSTER.md).
GPUS ?=
WORKERS ?=
CLUSTER ?=
# Classroom 50: the classroom's short name, the folder `make release` writes under build/classroom50/config/.
CLASSROOM ?= CLASSROOM
CLASSROOM50_OUT ?= build/classroom50
# `make grade-repos`: the roster (Classroom 50's roster.csv format), the assignment and the deadline.
ROSTER ?=
ASSIGNMENT ?= matmul
DEADLINE ?=
# `make grade-repos`: the template the tamper check compares with (kept in COURSE/template.json: give it once),
# the forge whose push times decide the deadline (GITHUB_TOKEN or GITLAB_TOKEN), students to decide again.
TEMPLATE ?=
FORGE ?=
REPIN ?=

.DEFAULT_GOAL := help
.PHONY: help venv exercises test test-checks notebooks grade grade-repos release selfcheck-package template gpu-check clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-17s %s\n", $$1, $$2}'

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)  ## create .venv/ and install the pinned dependencies

exercises: $(STAMP)  ## regenerate exercises/ from solutions/
	$(PY) -m autograder.generate

test: $(STAMP)  ## run the project's own tests (CPU only: simulator and PTX compile)
	$(PY) -m pytest -n $(JOBS) -q --durations=20

test-checks: $(STAMP)  ## the fast layer: every check judged on plain facts, no simulator run (seconds)
	$(PY) -m pytest -q -m "not slow" tests/checks

notebooks: $(STAMP)  ## regenerate notebooks/*.py from solutions/ + notebooks/prose/, and the demo course's submissions
	$(PY) -m course.notebooks
	$(PY) -m course.demo

release: $(STAMP)  ## nbgrader release into COURSE (default build/course), the Classroom 50 files in build/classroom50, the legacy template
	$(PY) -m course.release $(COURSE)
	$(PY) -m classroom.c50 build --release $(or $(COURSE),build/course)/release/matmul --classroom $(CLASSROOM) \
		--out $(CLASSROOM50_OUT)
	$(PY) -m classroom.template --release $(or $(COURSE),build/course)/release/matmul

grade: $(STAMP)  ## grade every submission of COURSE (default demo_course) into its gradebook; STUDENT="ann bob", FORCE=1, GPUS=2, WORKERS=4, CLUSTER=slurm
	$(if $(filter-out slurm,$(CLUSTER)),$(error CLUSTER=$(CLUSTER): the one cluster grading knows is CLUSTER=slurm))
	$(PY) -m course.grade_class $(COURSE) $(if $(FORCE),--force) $(if $(GPUS),--gpus $(GPUS)) \
		$(if $(WORKERS),--workers $(WORKERS)) $(if $(CLUSTER),--slurm) $(foreach s,$(STUDENT),--student $(s)) $(ARGS)

grade-repos: $(STAMP)  ## grade of record: ROSTER=roster.csv DEADLINE=... ORG=... CLASSROOM=... (or REPO_URL=...) TEMPLATE=DIR [FORGE=github] [REF=submit-tag] [DRY_RUN=1]
	$(PY) -m course.grade_repos --roster "$(ROSTER)" --assignment "$(ASSIGNMENT)" --deadline "$(DEADLINE)" \
		--course "$(or $(COURSE),build/$(ASSIGNMENT)-of-record)" $(if $(REPO_URL),--repo-url "$(REPO_URL)") \
		$(if $(TEMPLATE),--template "$(TEMPLATE)") $(if $(FORGE),--forge $(FORGE)) $(foreach s,$(REPIN),--repin $(s)) \
		$(if $(ORG),--org "$(ORG)" --classroom "$(CLASSROOM)") $(if $(REF),--ref $(REF)) $(if $(FORCE),--force) \
		$(if $(DRY_RUN),--dry-run) $(if $(ARGS),-- $(ARGS))

selfcheck-package: $(STAMP)  ## the wheel students install to self-check released notebooks anywhere (build/dist/)
	$(PY) -m course.selfcheck_package

template: $(STAMP)  ## only the legacy GitHub Classroom student template in build/template (runs the release into COURSE first)
	$(PY) -m classroom.template $(if $(COURSE),--course $(COURSE))

gpu-check: $(STAMP)  ## on a GPU machine: hang, contention, timing exploits, 10 re-grades (PARTS="tests ladder ..." picks others)
	$(PY) -m tools.verify_gpu $(if $(PARTS),$(foreach p,$(PARTS),--part $(p)),)

clean:  ## remove generated build output (keeps .venv)
	rm -rf build .pytest_cache
