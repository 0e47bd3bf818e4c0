# The two commands a new user runs: `make demo` and `make test`. Each sets up
# everything it needs from a fresh clone: a virtual environment, the build of
# the C++ extension, then the examples or the tests.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The CPU build of torch lies on disk on our machines; tests use it when present.
TORCH ?= torch==2.13.0

.PHONY: demo test install clean

$(VENV)/.ready: Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q numpy scipy pytest scikit-build-core nanobind cmake ninja
	$(PY) -m pip install -q $(TORCH) || echo "torch not installed: torch tests will be skipped"
	touch $@

install: $(VENV)/.ready
	$(PY) -m pip install -q --no-build-isolation .

demo: install
	$(PY) examples/run_all.py

test: install
	$(PY) -m pytest -q tests

clean:
	rm -rf build $(VENV)
