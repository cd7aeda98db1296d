# gluon_suite: set-up, demo and tests. `make demo` and `make test` set everything up first.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
HOROVOD := horovod==0.28.1
# GPU machines: `make setup CUDA=117` installs MXNet's CUDA 11.7 build (mxnet-cu117==1.9.1) instead of
# the CPU one and compiles Horovod with NCCL GPU operations when NCCL is installed (Gloo otherwise).
# The choice sticks: later `make test`/`make demo` keep the variant set up last; `CUDA=` goes back to CPU.
CUDA ?= $(patsubst $(VENV)/.setup-done-cu%,%,$(firstword $(wildcard $(VENV)/.setup-done-cu*)))
VARIANT := $(if $(CUDA),cu$(CUDA),cpu)
MXNET_NAME := $(if $(CUDA),mxnet-cu$(CUDA),mxnet)
WHEELS := .cache/wheels/$(VARIANT)
STAMP := $(VENV)/.setup-done-$(VARIANT)
# MXNet 1.9.1's CUDA builds on the registry; a CUDA set-up needs the NVIDIA driver (libcuda.so)
CUDA_BUILDS := 101 102 110 112 113 114 115 116 117
DRIVER_FOUND = $(shell (command -v nvidia-smi || ldconfig -p | grep -E 'libcuda\.so') >/dev/null 2>&1 && echo 1)
NCCL_FOUND = $(shell (ls /usr/include/nccl.h /usr/local/cuda/include/nccl.h || ldconfig -p | grep libnccl) >/dev/null 2>&1 && echo 1)
# Horovod built with MXNet over Gloo (no MPI); NCCL for GPU tensors on a CUDA set-up with NCCL
HOROVOD_ENV := HOROVOD_WITH_MXNET=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_PYTORCH=1 \
	HOROVOD_WITHOUT_MPI=1 HOROVOD_WITH_GLOO=1 HOROVOD_CPU_OPERATIONS=gloo MAKEFLAGS=-j2 \
	$(if $(CUDA),$(if $(NCCL_FOUND),HOROVOD_GPU_OPERATIONS=NCCL))
# two workers share the machine's cores: one compute thread each
WORKER_ENV := OMP_NUM_THREADS=1 MXNET_CPU_WORKER_NTHREADS=1
PYTEST_ARGS ?=

.PHONY: setup kernels demo quickstart test test-unit test-long test-bench bench clean distclean

setup: $(STAMP)
	@$(MAKE) --no-print-directory kernels

$(STAMP): setup.py constraints.txt Makefile
	@# a CUDA set-up stops before touching the venv when this machine cannot run it
	@$(if $(CUDA),$(if $(filter $(CUDA),$(CUDA_BUILDS)),,echo "make setup CUDA=$(CUDA): MXNet 1.9.1 has no CUDA $(CUDA) build; use one of CUDA=$(CUDA_BUILDS) (or CUDA= for the CPU build)" >&2; exit 2))
	@$(if $(CUDA),$(if $(DRIVER_FOUND),,echo "make setup CUDA=$(CUDA): no NVIDIA driver on this machine (no nvidia-smi, no libcuda.so); install the NVIDIA driver and CUDA $(CUDA), or run 'make setup CUDA=' for the CPU build" >&2; exit 2))
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c constraints.txt wheel "setuptools<70" cython
	@# one MXNet variant at a time: the CPU wheel and the CUDA wheels install the same package
	@for p in $$($(PIP) list --format=freeze 2>/dev/null | grep -oE '^mxnet(-cu[0-9]+)?=' | tr -d =); do \
		[ "$$p" = "$(MXNET_NAME)" ] || $(PIP) uninstall -y -q $$p; done
	$(PIP) install -q -c constraints.txt "$(MXNET_NAME)==1.9.1" numpy
	$(PIP) install -q -c constraints.txt gluoncv gluonnlp scikit-learn networkx requests tqdm \
		matplotlib pyyaml filelock pytest pytest-timeout cloudpickle psutil packaging mlxtend gensim \
		pycocotools mxboard
	@# Horovod is compiled against the installed MXNet once per machine; the wheel is cached
	@if ! ls $(WHEELS)/horovod-0.28.1-*.whl >/dev/null 2>&1; then \
		echo "building Horovod 0.28.1 with MXNet + Gloo$(if $(findstring NCCL,$(HOROVOD_ENV)), + NCCL) for $(VARIANT) (about 2 minutes, once per machine)"; \
		mkdir -p $(WHEELS) && $(HOROVOD_ENV) $(PIP) wheel -q --no-build-isolation --no-deps \
			--no-cache-dir -w $(WHEELS) $(HOROVOD); fi
	$(PIP) install -q --no-deps --force-reinstall --no-index --find-links $(WHEELS) $(HOROVOD)
	$(PIP) install -q --no-deps --no-build-isolation -e .
	$(VENV)/bin/gluon-suite info
	@rm -f $(VENV)/.setup-done*
	@touch $(STAMP)

# The graph package's compiled message-passing kernels: an MXNet operator library built with the
# system C++ compiler against the header and lib_api.cc inside the installed MXNet wheel, rebuilt
# when a source changes. A failed build never fails the set-up: the package then says so in one
# line at import and runs its Python kernels.
CXX ?= g++
KERNELS_DIR ?= build/graph_kernels
KERNELS_SO := $(KERNELS_DIR)/libgs_graph_kernels.so
KERNELS_SRC := $(wildcard gluon_suite/graph/csrc/*.cc gluon_suite/graph/csrc/*.h)
MXNET_PKG = $(firstword $(wildcard $(VENV)/lib/python3*/site-packages/mxnet))
# -Bsymbolic: the library calls its own copy of MXNet's extension API, never the one inside
# libmxnet.so, which Horovod makes global (a different C++ ABI: crashes in free())
KERNELS_FLAGS := -std=c++17 -O3 -fno-math-errno -fPIC -shared -fopenmp -Wl,-Bsymbolic -DNDEBUG -Wall -Wno-unused-function

# The distributed layer's compiled compression kernels (top-k, sign, float16, error feedback,
# bucket blocks): a second library built and loaded the same way; without it the compressors run
# their MXNet operators.
COMM_KERNELS_DIR ?= build/comm_kernels
COMM_KERNELS_SO := $(COMM_KERNELS_DIR)/libgs_comm_kernels.so
COMM_KERNELS_SRC := $(wildcard gluon_suite/distributed/csrc/*.cc)
COMM_KERNELS_DEPS := $(COMM_KERNELS_SRC) $(wildcard gluon_suite/distributed/csrc/*.h)

kernels: $(KERNELS_SO) $(COMM_KERNELS_SO)

$(KERNELS_SO): $(KERNELS_SRC) Makefile
	@mkdir -p $(@D)
	@echo "compiling the graph kernels ($(notdir $@))"
	@if [ -z "$(MXNET_PKG)" ]; then \
		echo "graph kernels not built: MXNet is not installed in $(VENV) (run make setup); the graph package uses its Python kernels"; \
	elif $(CXX) $(KERNELS_FLAGS) -I$(MXNET_PKG)/include $(KERNELS_SRC) $(MXNET_PKG)/src/lib_api.cc -o $@.tmp; then \
		mv -f $@.tmp $@; \
	else rm -f $@.tmp; \
		echo "graph kernels not built: $(CXX) failed (see above); the graph package uses its Python kernels"; fi

# The distributed layer's compiled compression kernels (COMM_KERNELS_*, above): built the same way.
$(COMM_KERNELS_SO): $(COMM_KERNELS_DEPS) Makefile
	@mkdir -p $(@D)
	@echo "compiling the compression kernels ($(notdir $@))"
	@if [ -z "$(MXNET_PKG)" ]; then \
		echo "compression kernels not built: MXNet is not installed in $(VENV) (run make setup); the compressors use MXNet's operators"; \
	elif $(CXX) $(KERNELS_FLAGS) -I$(MXNET_PKG)/include $(COMM_KERNELS_SRC) $(MXNET_PKG)/src/lib_api.cc -o $@.tmp; then \
		mv -f $@.tmp $@; \
	else rm -f $@.tmp; \
		echo "compression kernels not built: $(CXX) failed (see above); the compressors use MXNet's operators"; fi

# DGL and PyG for bench/graph.py's protocols (graph_models, graph_layers), each in its own virtual
# environment so the suite's pins stay untouched: DGL 2.1.0 loads its graphbolt library only with
# torch 2.0.0-2.2.1, and needs NumPy 1, setuptools < 70 and torchdata 0.7.1 (without its deps);
# PyG 2.8.1 on torch 2.13.0's CPU build. A few GB from the registry, a few minutes, once per machine.
DGL_VENV := .cache/dgl-venv
PYG_VENV := .cache/pyg-venv
.PHONY: bench-deps
bench-deps: $(DGL_VENV)/.done $(PYG_VENV)/.done

$(DGL_VENV)/.done:
	rm -rf $(DGL_VENV) && $(PYTHON) -m venv $(DGL_VENV)
	$(DGL_VENV)/bin/pip install -q --disable-pip-version-check torch==2.2.1 dgl==2.1.0 "numpy<2" "setuptools<70" \
		pandas pydantic pyyaml psutil
	$(DGL_VENV)/bin/pip install -q --disable-pip-version-check --no-deps torchdata==0.7.1
	$(DGL_VENV)/bin/python -c "import dgl, dgl.nn.pytorch, torch; print('dgl', dgl.__version__, 'torch', torch.__version__)"
	@touch $@

$(PYG_VENV)/.done:
	rm -rf $(PYG_VENV) && $(PYTHON) -m venv $(PYG_VENV)
	$(PYG_VENV)/bin/pip install -q --disable-pip-version-check "torch==2.13.0+cpu" torch_geometric==2.8.1 psutil
	$(PYG_VENV)/bin/python -c "import torch_geometric, torch; print('torch_geometric', torch_geometric.__version__, 'torch', torch.__version__)"
	@touch $@

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

# the quick tier, for before every commit: no worker processes and no training runs (which tests
# those are is read from their code by tests/unit_tier.py); about a minute of CPU, a test that hangs
# fails after 2 minutes
test-unit: setup
	$(WORKER_ENV) $(PY) -m pytest -q -p tests.unit_tier -m "not long and not horovod" --timeout=120 $(PYTEST_ARGS) tests

# the long checks CI runs after `make test`: card reproductions, the demo pipeline, SIGKILL mid-epoch,
# the documented commands, the dense recipes (about 26 minutes on 2 cores)
test-long: setup
	$(WORKER_ENV) $(PY) -m pytest -q -m "long and not bench" $(PYTEST_ARGS) tests

# every bench protocol's quick run from the checkout (about 18 minutes on 2 cores; not in CI)
test-bench: setup
	$(WORKER_ENV) $(PY) -m pytest -q -m bench $(PYTEST_ARGS) tests

# rerun one published claim from its protocol (bench/protocols/NAME.yaml) into a new result file under
# bench/results/NAME/ (docs/benchmarks.md): make bench NAME=cv_models [QUICK=1] [SEEDS=0,1]
bench: setup
	@test -n "$(NAME)" || { echo "make bench NAME=<protocol> [QUICK=1] [SEEDS=0,1]; the protocols:" >&2; \
		$(VENV)/bin/gluon-suite bench list >&2; exit 2; }
	$(VENV)/bin/gluon-suite bench run $(NAME) $(if $(QUICK),--quick) $(if $(SEEDS),--seeds $(SEEDS))

clean:
	rm -rf runs .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) .cache *.egg-info
