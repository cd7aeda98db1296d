# gluon_suite: set-up, demo and tests. `make demo` and `make test` set everything up first.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
WHEELS := .cache/wheels
HOROVOD := horovod==0.28.1
STAMP := $(VENV)/.setup-done
# Horovod built with MXNet over Gloo, CPU only, no MPI
HOROVOD_ENV := HOROVOD_WITH_MXNET=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_PYTORCH=1 \
	HOROVOD_WITHOUT_MPI=1 HOROVOD_WITH_GLOO=1 HOROVOD_CPU_OPERATIONS=gloo MAKEFLAGS=-j2
# two workers share the machine's cores: one compute thread each
WORKER_ENV := OMP_NUM_THREADS=1 MXNET_CPU_WORKER_NTHREADS=1
PYTEST_ARGS ?=

.PHONY: setup demo quickstart test test-long bench clean distclean

setup: $(STAMP)

$(STAMP): setup.py constraints.txt Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c constraints.txt wheel "setuptools<70" cython
	$(PIP) install -q -c constraints.txt mxnet numpy
	$(PIP) install -q -c constraints.txt gluoncv gluonnlp scikit-learn networkx requests tqdm \
		matplotlib pyyaml filelock pytest pytest-timeout cloudpickle psutil packaging mlxtend gensim
	@# Horovod is compiled against the installed MXNet once per machine; the wheel is cached
	@if ! ls $(WHEELS)/horovod-0.28.1-*.whl >/dev/null 2>&1; then \
		echo "building Horovod 0.28.1 with MXNet + Gloo (about 2 minutes, once per machine)"; \
		mkdir -p $(WHEELS) && $(HOROVOD_ENV) $(PIP) wheel -q --no-build-isolation --no-deps \
			--no-cache-dir -w $(WHEELS) $(HOROVOD); fi
	$(PIP) install -q --no-deps --force-reinstall --no-index --find-links $(WHEELS) $(HOROVOD)
	$(PIP) install -q --no-deps --no-build-isolation -e .
	$(VENV)/bin/gluon-suite info
	@touch $(STAMP)

# the showcase: 2 Horovod workers train ResNeSt-14 on digits with CSER + GRBS (ratio 32), publish the
# best checkpoint into a local zoo store, serve it on loopback and load it back through the zoo
DEMO := runs/demo
demo: setup
	rm -rf $(DEMO)
	$(WORKER_ENV) GLUON_SUITE_HOME=$(DEMO)/home $(VENV)/bin/horovodrun -np 2 -H localhost:2 --gloo \
		$(PY) scripts/cv/train_classification.py --config configs/cv/digits_resnest14_cser.yaml \
		--out $(DEMO) --publish $(DEMO)/store
	GLUON_SUITE_HOME=$(DEMO)/home GLUON_SUITE_QUIET=1 $(PY) scripts/cv/evaluate.py \
		--model resnest14_digits --image-size 16 --serve $(DEMO)/store

quickstart: setup
	$(WORKER_ENV) $(VENV)/bin/horovodrun -np 2 -H localhost:2 --gloo \
		$(PY) scripts/cv/train_digits.py --epochs 8 --out runs/quickstart \
		--algorithm cser --compressor grbs --ratio 32 --period 4

test: setup
	$(WORKER_ENV) $(PY) -m pytest -q -m "not long" $(PYTEST_ARGS) tests

test-long: setup
	$(WORKER_ENV) $(PY) -m pytest -q -m long $(PYTEST_ARGS) tests

clean:
	rm -rf runs .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) .cache *.egg-info
