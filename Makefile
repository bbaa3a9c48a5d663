# The course's commands. The two that matter:
#   make lab    create .venv, install the course, copy the notebooks into work/, open JupyterLab on work/
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
# The whole suite runs on every core; a chapter's tests that read its learner run stay on one worker.
PYTEST_PARALLEL ?= -n auto --dist loadgroup
# The versions `make test` installs the course's libraries and test tools at (torch comes from TORCH_SPEC);
# `make constraints` makes it anew from a fresh environment. The course itself keeps lower bounds only (Colab).
# One file per Python version (pip resolves differently for each); with none for this Python, no constraints.
PY_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
CONSTRAINTS ?= constraints/python$(PY_VERSION).txt
# nbgrader and jupyter find their helper programs (alembic, kernels) on PATH.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: lab work handout formgrader test test-fast test-numerics gpu-check constraints release check-release results workspace clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.torch: | $(BIN)/python
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	touch $@

$(VENV)/.lab: pyproject.toml $(VENV)/.torch
	$(BIN)/python -m pip install -q -e ".[lab]"
	touch $@

$(VENV)/.test: pyproject.toml $(wildcard $(CONSTRAINTS)) $(VENV)/.torch
	bash tests/system-packages.sh
	$(BIN)/python -m pip install -q $(if $(wildcard $(CONSTRAINTS)),-c $(CONSTRAINTS),) -e ".[test]"
	touch $@ $(VENV)/.lab  # the test extra holds the lab extra: `make lab` (which a test runs) has nothing to install

# A learner's work lives in work/ (git ignores it, `make release` never touches it): `make work` copies each
# chapter's notebook there the first time and never overwrites a copy; notebooks/ is the course's, regenerated.
work: $(VENV)/.lab
	$(BIN)/python -m seqlab.work notebooks$(if $(filter zh,$(EDITION)),/zh work/zh,) $(if $(filter zh,$(EDITION)),,work)

# A student's Lab on work/: nbgrader's Validate button, none of its instructor panels or menus
# (jupyter-config/student); `make workspace` opens the instructor's, with all of them. EDITION=zh puts
# jupyter-config/student-zh in front: the same Lab with its interface in Chinese (the lab extra's language pack).
STUDENT_CONFIG := $(if $(filter zh,$(EDITION)),$(CURDIR)/jupyter-config/student-zh:,)$(CURDIR)/jupyter-config/student
lab: work
	JUPYTER_CONFIG_PATH=$(STUDENT_CONFIG)$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH),) \
	  $(BIN)/jupyter lab --notebook-dir=work --port=$(PORT) $(LAB_ARGS)

test: $(VENV)/.test
	$(BIN)/python -m pytest -m "not serial" $(PYTEST_PARALLEL) --durations=30 $(PYTEST_ARGS)
	$(BIN)/python -m pytest -m serial -q $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-numerics CAPABILITIES=default

test-fast: $(VENV)/.test
	$(BIN)/python -m pytest -m "not slow and not serial" $(PYTEST_PARALLEL) $(PYTEST_ARGS)

# The tests whose figures come out of floating-point work (training, t-SNE, EM, kernels compared with torch's),
# again under each instruction set torch can pick its CPU kernels for: by default every one this CPU has.
CAPABILITIES ?= $(shell $(BIN)/python tests/capabilities.py 2>/dev/null || echo default)
test-numerics: $(VENV)/.test
	@for capability in $(CAPABILITIES); do \
	  echo "== ATEN_CPU_CAPABILITY=$$capability: pytest -m numerics"; \
	  ATEN_CPU_CAPABILITY=$$capability $(BIN)/python -m pytest -m numerics -q $(PYTEST_PARALLEL) $(PYTEST_ARGS) || exit 1; \
	done

# On a CUDA machine (with a CUDA build of torch in .venv): pytest -m gpu, then every solution notebook on the GPU
# and on the CPU, and a table of device, seconds, peak GPU memory and figures against the CPU's (tests/gpu_check.py).
# Without a GPU it says so and fails. GPU_CHECK_ARGS passes options, e.g. GPU_CHECK_ARGS="--skip-pytest 07".
GPU_CHECK_ARGS ?=
gpu-check: $(VENV)/.test
	$(BIN)/python tests/gpu_check.py $(GPU_CHECK_ARGS)

# Write this Python's constraints file anew: the newest versions the course's extras resolve to, in a fresh
# venv with TORCH_SPEC, under the upper bounds of constraints/pins.txt (each says why). Run it when a test tool
# or library should move on, then run `make test` and commit.
constraints:
	rm -rf build/constraints-venv
	$(PYTHON) -m venv build/constraints-venv
	build/constraints-venv/bin/python -m pip install -q "$(TORCH_SPEC)"
	build/constraints-venv/bin/python -m pip install -q -c constraints/pins.txt -e ".[test]"
	{ echo "# Made by \`make constraints\` on $$(date -u +%F) (Python $$(build/constraints-venv/bin/python -c 'import platform; print(platform.python_version())')); \`make test\` installs with it."; \
	  echo "# torch is left to TORCH_SPEC (its CPU build here); seqlab's own requirements keep lower bounds only."; \
	  build/constraints-venv/bin/python -m pip freeze --exclude-editable | grep -v -i -E '^(torch|nvidia-|triton|cuda-)'; } > build/constraints.txt
	mkdir -p $(dir $(CONSTRAINTS)) && mv build/constraints.txt $(CONSTRAINTS)
	rm -rf build/constraints-venv

release: $(VENV)/.test
	$(BIN)/python autograder/release.py

check-release: $(VENV)/.test
	$(BIN)/python autograder/release.py --check

results: $(VENV)/.test
	$(BIN)/python -m pytest tests/test_ch*.py tests/test_notebooks.py tests/test_nbconvert.py -q $(PYTEST_PARALLEL)

workspace: $(VENV)/.lab
	$(BIN)/python -c "import fastapi, uvicorn, httpx" 2>/dev/null || $(BIN)/python -m pip install -q -e ".[instructor]"
	$(BIN)/python autograder/workspace.py $(or $(DIR),$(HOME)/seqlab-grading)

# What students download: build/handout/<chapter>.zip of the released notebooks (CHAPTER=07-attention for one).
handout: $(VENV)/.lab
	$(BIN)/python autograder/release.py --handout build/handout $(foreach c,$(CHAPTER),--chapter $(c))

# The instructor's Jupyter in the grading workspace, opened on nbgrader's formgrader (all its menus and panels).
formgrader: workspace
	cd $(or $(DIR),$(HOME)/seqlab-grading) && JUPYTER_CONFIG_PATH= $(abspath $(BIN))/jupyter lab --port=$(PORT) \
	  --ServerApp.default_url=/formgrader $(LAB_ARGS)

clean:
	rm -rf $(VENV) build .pytest_cache
