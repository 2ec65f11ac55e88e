# Front door of the course repository. `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JOBS ?= 2

.DEFAULT_GOAL := help
.PHONY: help venv exercises test grade grade-one release gpu-check clean

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

grade: $(STAMP)  ## grade the demo submissions (GPU if present, else the simulator)
	$(PY) -m autograder grade solutions --results build/solutions-results.json

gpu-check: $(STAMP)  ## on a GPU machine: grade solutions, stubs and known-bad kernels, write BENCHMARKS rows
	$(PY) -m autograder.gpu_check

clean:  ## remove generated build output (keeps .venv)
	rm -rf build .pytest_cache
