# The course's commands. The two that matter:
#   make lab    create .venv, install the course, open JupyterLab on notebooks/
#   make test   create .venv, install the course and its test tools, run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of torch that this project's machines carry; `make lab TORCH_SPEC=torch` takes the newest.
TORCH_SPEC ?= torch==2.13.0
PORT ?= 8888
# JupyterLab refuses to run as root unless told; containers and CI run as root.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root,)
PYTEST_ARGS ?=
# nbgrader and jupyter find their helper programs (alembic, kernels) on PATH.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: lab test test-fast release check-release results workspace clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.torch: | $(BIN)/python
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	touch $@

$(VENV)/.lab: pyproject.toml $(VENV)/.torch
	$(BIN)/python -m pip install -q -e ".[lab]"
	touch $@

$(VENV)/.test: pyproject.toml $(VENV)/.torch
	bash tests/system-packages.sh
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $@

lab: $(VENV)/.lab
	$(BIN)/jupyter lab --notebook-dir=notebooks --port=$(PORT) $(LAB_ARGS)

test: $(VENV)/.test
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: $(VENV)/.test
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

release: $(VENV)/.test
	$(BIN)/python autograder/release.py

check-release: $(VENV)/.test
	$(BIN)/python autograder/release.py --check

results: $(VENV)/.test
	$(BIN)/python -m pytest tests/test_ch*.py tests/test_notebooks.py -q

workspace: $(VENV)/.lab
	$(BIN)/python autograder/workspace.py $(or $(DIR),$(HOME)/seqlab-grading)

clean:
	rm -rf $(VENV) build .pytest_cache
