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

# Three pytest runs at once (settings in pyproject.toml; tests/run_at_once.sh starts them and prints
# each one's time), each ordered quick to slow by tests/conftest.py, each printing its stages' times
# and its slowest tests. Together they run every test once (tests/test_make_test.py checks that the
# tests marked slow or browser are all in SERVER_TESTS and COLAB_TESTS):
# - in front: unit, property and hygiene tests;
# - every notebook under strict nbval, then `make lab`'s server, then every notebook's widgets in
#   headless Chromium (much of the browser's time is spent waiting on the server, the kernel and
#   the browser, which leaves room on the cores);
# - every notebook in a fresh Colab, then strict nbval once more under PORTABLE_ENV.
# Each run is given its folders or files, so that none collects (imports) what it does not run.
# OMP_WAIT_POLICY=PASSIVE: an OpenMP thread with no work sleeps at once instead of spinning for a
# while, so that the kernels' idle threads do not take the cores from the other runs (measured: 3
# nbval runs at once used 10% less CPU time). It changes only how idle threads wait, never which
# thread sums what: every result is the same.
# PYTHONDONTWRITEBYTECODE is unset, where a machine sets it: the 50-odd Pythons of a run (kernels,
# workers) then compile `helpers` once, not each, and pytest keeps its rewritten test modules.
SERVER_TESTS := tests/test_lab_server.py tests/browser
COLAB_TESTS  := tests/colab
PYTEST := $(PY) -m pytest -p no:cacheprovider
test: $(STAMP) $(COLAB_STAMP)
	$(VENV)/bin/ruff check helpers tests notebooks
	@env -u PYTHONDONTWRITEBYTECODE OMP_WAIT_POLICY=PASSIVE tests/run_at_once.sh \
	  "unit tests" '$(PY) -m pytest tests -m "not slow and not browser"' \
	  "nbval, the server, then the browser" '$(PYTEST) notebooks $(SERVER_TESTS)' \
	  "the Colab versions, then nbval under $(PORTABLE_ENV)" \
	  '$(PYTEST) $(COLAB_TESTS); colab=$$?; $(PORTABLE_ENV) $(PYTEST) notebooks && exit $$colab'

# Unit, property and hygiene tests only: no kernels, servers or browsers.
test-fast: $(STAMP)
	$(PY) -m pytest tests -m "not slow and not browser"

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
