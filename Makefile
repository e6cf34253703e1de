# Two commands on a fresh machine with Python 3.11+ and make:
#   make lab    build .venv (once), then open JupyterLab at the first notebook
#   make test   build .venv (once), then run every test
# The environment is rebuilt only when requirements.txt or pyproject.toml changes.

PYTHON      ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.built
COLAB_VENV  := .venv-colab
COLAB_STAMP := $(COLAB_VENV)/.built
FIRST_NB    := notebooks/00_what_layernorm_computes.ipynb

# JupyterLab: loopback only, token authentication always on (a random token unless
# JUPYTER_TOKEN is set). Root (containers, CI) needs --allow-root.
LAB_PORT    ?= 8888
LAB_FLAGS   ?=
ROOT_FLAG   := $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_CMD     := $(VENV)/bin/jupyter lab --ip=127.0.0.1 --port=$(LAB_PORT) \
               --ServerApp.open_browser=True $(ROOT_FLAG) $(LAB_FLAGS) $(FIRST_NB)

.PHONY: lab test test-fast lint colab-env bench experiments clean help

help:
	@echo "make lab    - open JupyterLab at $(FIRST_NB)"
	@echo "make test   - run every test (unit, property, notebooks, Colab versions, browser)"
	@echo "make bench  - dashboard redraw times, then speed and memory against torch's kernels (benchmarks/)"
	@echo "make experiments [ONLY=name] - rebuild the stored experiment results (helpers/evidence/results/)"

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11+ is required")'
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# A second environment with the versions Google Colab ships (tests/colab/), rebuilt only when
# requirements-colab.txt changes. It holds no `helpers`: tests/colab/ makes a fresh Colab-like
# Python on top of it, where the first notebook's first cell pip-installs the package from a snapshot of
# this checkout, as "Open in Colab" does; then every notebook runs there alone in an empty folder.
$(COLAB_STAMP): requirements-colab.txt
	rm -rf $(COLAB_VENV)
	$(PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(COLAB_VENV)/bin/python -m pip install --quiet -r requirements-colab.txt
	touch $(COLAB_STAMP)

colab-env: $(COLAB_STAMP)

# JupyterLab's settings for the environment `make lab` starts: no pop-up asking to fetch Jupyter's
# news, and no check for updates (both would contact a website). A settings file in the
# environment's share/jupyter/lab/settings/ overrides the defaults (JupyterLab's "overrides.json").
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
$(LAB_SETTINGS): $(STAMP) Makefile
	mkdir -p $(dir $(LAB_SETTINGS))
	printf '%s\n' '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $(LAB_SETTINGS)

lab: $(STAMP) $(LAB_SETTINGS)
	$(LAB_CMD)

lint: $(STAMP)
	$(VENV)/bin/ruff check helpers tests notebooks

# The second nbval pass: PyTorch's CPU kernels on their plain vectorisation path, the BLAS on
# its conditional-numerical-reproducibility path (as on another vendor's CPU) and one thread (another
# reduction order). Stored outputs that pass both are the same on other CPUs too.
PORTABLE_ENV := ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE OMP_NUM_THREADS=1

# Three pytest runs at once (settings in pyproject.toml), each ordered quick to slow by
# tests/conftest.py, each printing its stages' times and its slowest tests:
# - in front: unit, property and hygiene tests, then every notebook under strict nbval;
# - alongside, from the start: `make lab`'s server, every notebook in a fresh Colab, then every
#   notebook's widgets in headless Chromium (the tests marked slow or browser: much of their time
#   is spent waiting on servers, kernels and the browser, which leaves room on the cores);
# - alongside, from the start: strict nbval once more under PORTABLE_ENV, on one thread.
# Together they run every test once; the two background reports are printed when all are done.
test: $(STAMP) $(COLAB_STAMP)
	$(VENV)/bin/ruff check helpers tests notebooks
	@log=$$(mktemp); slog=$$(mktemp); start=$$(date +%s); \
	( $(PORTABLE_ENV) $(PY) -m pytest notebooks -p no:cacheprovider > $$log 2>&1; echo $$? >> $$log.rc; \
	  echo "make test: nbval under $(PORTABLE_ENV) took $$(( $$(date +%s) - start )) s" >> $$log ) & \
	( $(PY) -m pytest -m "slow or browser" -p no:cacheprovider > $$slog 2>&1; echo $$? >> $$slog.rc; \
	  echo "make test: servers, Colab and the browser took $$(( $$(date +%s) - start )) s" >> $$slog ) & \
	$(PY) -m pytest -m "not slow and not browser"; rc=$$?; \
	echo "make test: unit tests and nbval took $$(( $$(date +%s) - start )) s"; \
	wait; echo "--- servers, the Colab versions and the browser:"; cat $$slog; src=$$(cat $$slog.rc); \
	echo "--- strict nbval under $(PORTABLE_ENV):"; cat $$log; prc=$$(cat $$log.rc); \
	rm -f $$log $$log.rc $$slog $$slog.rc; \
	echo "make test: all done after $$(( $$(date +%s) - start )) s"; [ $$rc -eq 0 ] && [ $$src -eq 0 ] && [ $$prc -eq 0 ]

# Unit, property and hygiene tests only: no kernels, servers or browsers.
test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow and not browser and not notebook"

bench: $(STAMP)
	$(PY) benchmarks/run.py

# Rebuild the stored experiment results (helpers/evidence/results/, shipped with the package): all of them,
# or `make experiments ONLY="name other"`. Resumable: each finished unit is cached in
# .experiments-cache/, so a second run, or one after a kill, trains only what is missing.
# JOBS units train at a time, one per core by default, each on one thread (the stored results
# are the same for any JOBS). Nothing in `make test` runs this. `$(PY) -m helpers.evidence.runner --list`
# lists the experiments.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
experiments: $(STAMP)
	$(PY) -m helpers.evidence.runner --jobs $(JOBS) $(foreach name,$(ONLY),--only $(name))

clean:
	rm -rf $(VENV) $(COLAB_VENV) .pytest_cache .ruff_cache .hypothesis
# (.experiments-cache/ is kept: it holds hours of training; delete it by hand to start over)
