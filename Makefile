# policyscheduler: the two everyday commands are `make demo` and `make test`.
# Python dependencies go into a virtualenv ($(VENV), default .venv in the checkout).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: help venv controlplane test test-fast lint demo simulate up clean

help:
	@echo "make demo          the live demo: a local control plane, policyscheduler run, the demo cluster"
	@echo "make simulate      the offline mode: simulate the embedded demo cluster (no control plane)"
	@echo "make test          run every test (builds the control plane on first use)"
	@echo "make test-fast     run the tests that need no control plane (pytest -m 'not e2e')"
	@echo "make lint          ruff, mypy --strict, fmt --check of the policies, docs --check (CI runs it too)"
	@echo "make controlplane  build (or reuse) etcd, kube-apiserver, kube-scheduler, kube-controller-manager"
	@echo "make up            start a local control plane and print KUBECONFIG=..."

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,lint]'
	@touch $@

venv: $(VENV)/.installed

controlplane:
	bash tests/controlplane/build.sh

test: venv controlplane
	$(PY) -m pytest

test-fast: venv
	$(PY) -m pytest -m "not e2e"

lint: venv
	$(VENV)/bin/ruff check policyscheduler tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/policyscheduler fmt --check policies/ examples/policies/ tests/gen/policies/
	$(VENV)/bin/policyscheduler docs --check

# The live demo (examples/demo/live.py): builds or reuses the control plane, starts policyscheduler run,
# creates the bundled demo cluster and prints each placement; DEMO_ARGS=--keep leaves it up for kubectl.
DEMO_ARGS ?=
demo: venv controlplane
	$(PY) examples/demo/live.py $(DEMO_ARGS)

simulate: venv
	$(VENV)/bin/policyscheduler simulate

up: venv controlplane
	$(PY) -m tests.controlplane up

clean:
	rm -rf $(VENV) .pytest_cache
