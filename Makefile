# Front door of the course repository. `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JOBS ?= 2
# Course folder of `make release` and `make grade` (empty: build/course and demo_course).
COURSE ?=

.DEFAULT_GOAL := help
.PHONY: help venv exercises test notebooks grade release template gpu-check clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)  ## create .venv/ and install the pinned dependencies

exercises: $(STAMP)  ## regenerate exercises/ from solutions/
	$(PY) -m autograder.generate

test: $(STAMP)  ## run the project's own tests (CPU only: simulator and PTX compile)
	$(PY) -m pytest -n $(JOBS) -q

notebooks: $(STAMP)  ## regenerate notebooks/*.py from solutions/ + notebooks/prose/, and the demo course's submissions
	$(PY) -m course.notebooks
	$(PY) -m course.demo

release: $(STAMP)  ## nbgrader generate_assignment into COURSE (default build/course), then the Classroom template in build/template
	$(PY) -m course.release $(COURSE)
	$(PY) -m classroom.template --release $(or $(COURSE),build/course)/release/matmul

grade: $(STAMP)  ## grade every submission of COURSE (default demo_course) into its gradebook; FORCE=1 regrades all
	$(PY) -m course.grade_class $(COURSE) $(if $(FORCE),--force) $(ARGS)

template: $(STAMP)  ## only the GitHub Classroom student template in build/template (runs the release into COURSE first)
	$(PY) -m classroom.template $(if $(COURSE),--course $(COURSE))

gpu-check: $(STAMP)  ## on a GPU machine: hang, contention, timing exploits, 10 re-grades (PARTS="tests ladder ..." picks others)
	$(PY) -m tools.verify_gpu $(if $(PARTS),$(foreach p,$(PARTS),--part $(p)),)

clean:  ## remove generated build output (keeps .venv)
	rm -rf build .pytest_cache
