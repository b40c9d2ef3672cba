# podsim build.  `make` builds ./podsim and $(BUILD)/libpodsim.a (everything but the CLI).
# Layers are separate archives so a test links only its layer and the ones below it
# (base < sim < models < strategies < compile < plots < scenarios), mirroring docs/architecture.md.

CC       ?= cc
BUILD    ?= build
OPT      ?= -O2
# BLAS=podsim: GEMM through models/gemm.c (gslcblas's bits, fast); gsl or openblas: through that
# library's cblas_sgemm (docs/architecture.md). gslcblas is linked in every build (GSL needs a CBLAS).
BLAS     ?= podsim
SAN      ?=
# PIC=-fPIC: position-independent objects, for libpodsim.so (make python builds them in build-pic).
PIC      ?=
DEPS_PKGS = libgsl-dev libcsv-dev libcairo2-dev libcmocka-dev libyaml-dev libjansson-dev libxxhash-dev pkg-config

PKGS      = gsl cairo yaml-0.1 jansson libxxhash
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) cmocka 2>/dev/null)
ifeq ($(BLAS),openblas)
  BLAS_LIBS = -lgsl -lopenblas
  DEPS_PKGS += libopenblas-dev
else
  BLAS_LIBS = -lgsl -lgslcblas
endif
ifeq ($(filter $(BLAS),podsim gsl openblas),)
  $(error BLAS=$(BLAS): expected podsim, gsl or openblas)
endif
GEMM_CFLAGS = $(if $(filter podsim,$(BLAS)),,-DMD_GEMM_DEFAULT=MD_GEMM_CBLAS)
# MPI=auto: `podsim plan` spreads a sweep over `mpirun -n N` ranks when OpenMPI's pkg-config file is
# there (Debian: libopenmpi-dev), else it runs forked processes on one host only; MPI=no builds without.
MPI      ?= auto
MPI_PC   := $(if $(filter auto,$(MPI)),$(shell pkg-config --exists ompi-c 2>/dev/null && echo ompi-c))
MPI_CFLAGS = $(if $(MPI_PC),-DPODSIM_MPI $(shell pkg-config --cflags $(MPI_PC)))
LIBS      = $(BLAS_LIBS) -lcsv $(shell pkg-config --libs cairo yaml-0.1 jansson libxxhash $(MPI_PC) 2>/dev/null) -lm

# -ffp-contract=off and no fast-math: the same scenario gives the same bits at -O0 and -O2.
CFLAGS   = -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -ffp-contract=off -fno-fast-math \
           $(OPT) $(SAN) $(PIC) -I. $(PKG_CFLAGS) -MMD -MP
LDFLAGS  = $(SAN)

LAYERS   = base sim models strategies compile plots scenarios
CLI_SRC  = scenarios/main.c
layer_src = $(filter-out $(CLI_SRC),$(wildcard $(1)/*.c $(1)/*/*.c))
layer_lib = $(BUILD)/lib$(1).a
# A layer's archive and every archive below it, highest first (static link order).
below_base       = $(call layer_lib,base)
below_sim        = $(call layer_lib,sim) $(below_base)
below_models     = $(call layer_lib,models) $(below_sim)
below_strategies = $(call layer_lib,strategies) $(below_models)
below_compile    = $(call layer_lib,compile) $(below_strategies)
below_plots      = $(call layer_lib,plots) $(below_compile)
below_scenarios  = $(call layer_lib,scenarios) $(below_plots)
# The same archives under another build directory (the fuzz build's).
below_scenarios_in = $(foreach l,scenarios plots compile strategies models sim base,$(1)/lib$(l).a)

ALL_SRC  = $(foreach l,$(LAYERS),$(call layer_src,$(l)))
OBJ      = $(patsubst %.c,$(BUILD)/%.o,$(ALL_SRC))
TEST_SRC = $(foreach l,$(LAYERS),$(wildcard tests/$(l)/test_*.c))
TEST_BIN = $(patsubst %.c,$(BUILD)/%,$(TEST_SRC))
BENCH_SRC = $(wildcard bench/*.c)
BENCH_BIN = $(patsubst %.c,$(BUILD)/%,$(BENCH_SRC))

PODSIM   = podsim
ifneq ($(BUILD),build)
  PODSIM = $(BUILD)/podsim
endif

.PHONY: all deps python venv test-python run test test-fast test-asan test-determinism test-install test-mpi bench fuzz valgrind clean install uninstall
all: $(PODSIM) $(BUILD)/libpodsim.a

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The built-in price table, compiled into prices.o as a C string literal (scenarios/config/prices.c).
$(BUILD)/prices_csv.h: scenarios/config/prices.csv
	@mkdir -p $(BUILD)
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@
$(BUILD)/scenarios/config/prices.o: $(BUILD)/prices_csv.h
$(BUILD)/scenarios/config/prices.o: CFLAGS += -I$(BUILD)
# plan.o is the one object that calls MPI; a stamp per choice rebuilds it when MPI comes or goes.
$(BUILD)/scenarios/programs/plan.o: CFLAGS += $(MPI_CFLAGS)
$(BUILD)/scenarios/programs/plan.o: $(BUILD)/mpi-$(if $(MPI_PC),yes,no).stamp
$(BUILD)/mpi-%.stamp:
	@mkdir -p $(BUILD) && rm -f $(BUILD)/mpi-*.stamp && touch $@

# md_gemm's default kernel follows BLAS: a stamp per choice rebuilds gemm.o when it changes.
$(BUILD)/models/gemm.o: CFLAGS += $(GEMM_CFLAGS)
$(BUILD)/models/gemm.o: $(BUILD)/blas-$(BLAS).stamp
$(BUILD)/blas-$(BLAS).stamp:
	@mkdir -p $(BUILD) && rm -f $(BUILD)/blas-*.stamp && touch $@

define layer_rules
$(call layer_lib,$(1)): $(patsubst %.c,$(BUILD)/%.o,$(call layer_src,$(1)))
	@mkdir -p $$(dir $$@)
	rm -f $$@ && ar rcs $$@ $$^
$(BUILD)/tests/$(1)/%: tests/$(1)/%.c $$(below_$(1))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -DPODSIM_SOURCE_DIR=\"$$(CURDIR)\" $$< -o $$@ $$(below_$(1)) $$(LIBS) -lcmocka $$(LDFLAGS)
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rules,$(l))))

$(BUILD)/libpodsim.a: $(OBJ)
	rm -f $@ && ar rcs $@ $^

$(PODSIM): $(BUILD)/scenarios/main.o $(below_scenarios)
	$(CC) $(CFLAGS) $< -o $@ $(below_scenarios) $(LIBS) $(LDFLAGS)

# libpodsim.so: every layer (whole archives, so C programs can link it too), for the Python
# package's ctypes calls (scenarios/api.h). Build it from -fPIC objects: make python does.
$(BUILD)/libpodsim.so: $(below_scenarios)
	$(CC) -shared -o $@ -Wl,--whole-archive $(below_scenarios) -Wl,--no-whole-archive $(LIBS) $(LDFLAGS)

# make python: libpodsim.so from a -fPIC build of the layers in build-pic/ (the default build's
# objects stay as they are; no MPI: a Python process is no mpirun rank), copied into python/podsim/ so that `pip install ./python` carries it.
PIC_BUILD = build-pic
python:
	$(MAKE) BUILD=$(PIC_BUILD) PIC=-fPIC MPI=no $(PIC_BUILD)/libpodsim.so
	cp $(PIC_BUILD)/libpodsim.so python/podsim/libpodsim.so

$(BUILD)/bench/%: bench/%.c $(below_scenarios)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPODSIM_SOURCE_DIR=\"$(CURDIR)\" $< -o $@ $(below_scenarios) $(LIBS) $(LDFLAGS)

# make install [PREFIX=/usr/local] [DESTDIR=]: the CLI, libpodsim.a with its public headers (every
# layer's .h but the *Int.h internals and the headers that include them) under include/podsim/,
# podsim.pc, the man page, bash completion, the examples, the scenario schema and the docs (share/doc/podsim);
# make uninstall removes those files.
PREFIX   ?= /usr/local
VERSION  := $(shell sed -n 's/^\#define PODSIM_VERSION "\(.*\)"/\1/p' $(CLI_SRC))
PUBLIC_H := $(shell grep -L '^\#include ".*Int\.h"' $(filter-out %Int.h,$(foreach l,$(LAYERS),$(wildcard $(l)/*.h $(l)/*/*.h))))
EXAMPLES := $(shell cd scenarios/examples && find . -type f | sed 's,^\./,,' | sort)
INST_BIN  = $(DESTDIR)$(PREFIX)/bin
INST_LIB  = $(DESTDIR)$(PREFIX)/lib
INST_INC  = $(DESTDIR)$(PREFIX)/include/podsim
INST_MAN  = $(DESTDIR)$(PREFIX)/share/man/man1
INST_SHARE = $(DESTDIR)$(PREFIX)/share/podsim
INST_COMPL = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
INST_DOC  = $(DESTDIR)$(PREFIX)/share/doc/podsim

$(BUILD)/podsim.pc: dist/podsim.pc.in $(CLI_SRC)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@LIBS@|$(LIBS)|' $< > $@

# The prefix is written into podsim.pc: rebuild it on every install so PREFIX is the one given.
install: all
	@rm -f $(BUILD)/podsim.pc && $(MAKE) --no-print-directory $(BUILD)/podsim.pc
	install -d $(INST_BIN) $(INST_LIB)/pkgconfig $(INST_MAN) $(INST_COMPL) $(INST_SHARE)/examples
	install -m 755 $(PODSIM) $(INST_BIN)/podsim
	install -m 644 $(BUILD)/libpodsim.a $(INST_LIB)/libpodsim.a
	install -m 644 $(BUILD)/podsim.pc $(INST_LIB)/pkgconfig/podsim.pc
	install -m 644 dist/podsim.1 $(INST_MAN)/podsim.1
	install -m 644 dist/podsim.bash $(INST_COMPL)/podsim
	for h in $(PUBLIC_H); do install -D -m 644 $$h $(INST_INC)/$$h || exit 1; done
	for f in $(EXAMPLES); do install -D -m 644 scenarios/examples/$$f $(INST_SHARE)/examples/$$f || exit 1; done
	install -D -m 644 docs/scenario.schema.json $(INST_SHARE)/scenario.schema.json
	for f in README.md $(wildcard docs/*.md) $(wildcard docs/img/*.png); do install -D -m 644 $$f $(INST_DOC)/$$f || exit 1; done

# Removes the files install wrote and the directories of podsim's own (include/podsim, share/podsim).
uninstall:
	rm -f $(INST_BIN)/podsim $(INST_LIB)/libpodsim.a $(INST_LIB)/pkgconfig/podsim.pc \
	      $(INST_MAN)/podsim.1 $(INST_COMPL)/podsim
	rm -rf $(INST_INC) $(INST_SHARE) $(INST_DOC)

# Installs the Debian packages the build needs, only those missing (sudo when not root).
deps:
	@missing=""; for p in $(DEPS_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

run: deps
	$(MAKE) all
	./$(PODSIM) run scenarios/examples/quickstart.yaml -o out/quickstart

# The whole suite: optimised build, then the same tests under ASan+UBSan, then the -O0/-O2
# run_hash check, then make install into a temporary prefix and a program built against it. Each suite adds its counts to TEST_TALLY; the last line totals them.
TEST_TALLY ?= $(CURDIR)/$(BUILD)/test-tally
export TEST_TALLY
# The suite also checks the scenario schema with python3's jsonschema (tests/schema.sh), podsim
# plan under mpirun (tests/mpi.sh, an OpenMPI build) and runs every fuzz harness briefly (clang's
# libFuzzer): their Debian packages, for the tests only.
test: DEPS_PKGS += python3-jsonschema python3-yaml libopenmpi-dev openmpi-bin clang libclang-rt-14-dev
test: deps
	@mkdir -p $(BUILD) && rm -f $(TEST_TALLY)
	$(MAKE) test-fast
	$(MAKE) test-asan
	$(MAKE) test-determinism
	$(MAKE) test-install
	$(MAKE) test-mpi
	$(MAKE) test-python
	$(MAKE) fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS)
	@awk '{p += $$1; f += $$2} END {printf "all suites: %d passed, %d failed\n", p, f}' $(TEST_TALLY)

test-fast: $(TEST_BIN) $(PODSIM)
	@tests/run_tests.sh $(TEST_BIN)
	@tests/cli.sh $(abspath $(PODSIM))
	@tests/schema.sh $(abspath $(PODSIM))

# Without MPI: OpenMPI's libraries are not part of what the sanitizers check (tests/mpi.sh runs the MPI build).
test-asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g" MPI=no \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" test-fast

test-determinism: $(PODSIM)
	$(MAKE) BUILD=build-O0 OPT=-O0 build-O0/podsim
	tests/determinism.sh ./$(PODSIM) build-O0/podsim

test-install: all
	tests/install.sh $(BUILD)

# A Python venv for the tests (build/venv, made once: its stamp follows tests/python/requirements.txt)
# with TensorFlow pinned (tensorflow-cpu, Keras 3, TensorBoard): the oracle of tests/python, and the
# podsim package over libpodsim.so (make python). No TensorFlow, no venv: the stage fails, it never
# skips.
VENV = build/venv
$(VENV)/.stamp: tests/python/requirements.txt
	rm -rf $(VENV) && python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r tests/python/requirements.txt
	touch $@
venv: $(VENV)/.stamp
test-python: venv python $(PODSIM)
	tests/python.sh $(VENV)/bin/python

# mpirun -n 1, 2, 3 podsim plan: the same files as the forked run (skipped without an MPI build).
test-mpi: $(PODSIM)
	tests/mpi.sh ./$(PODSIM)

# OpenBLAS's runtime library: bench_gemm loads it to print md_gemm's ratio to it (not a build need).
bench: DEPS_PKGS += libopenblas0
bench: deps $(BENCH_BIN) $(PODSIM)
	@for b in $(BENCH_BIN); do echo "== $$b"; $$b || exit 1; done
	@echo "== bench/simgrid_compare.sh"; bench/simgrid_compare.sh $(BUILD)

# libFuzzer harnesses of the readers (tests/fuzz/), built with clang, ASan and UBSan over a clang
# build of the libraries, each run FUZZ_SECONDS on a copy of its corpus (new finds land in
# build-fuzz/corpus/NAME; copy a crash into tests/fuzz/corpus/NAME/crash_* to keep it).
FUZZ_SECONDS ?= 60
# make test's bounded run of each harness (a crash fails the suite; longer runs: make fuzz).
TEST_FUZZ_SECONDS ?= 10
FUZZ_NAMES = scenario tf_config csv keras diff overrides
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
fuzz:
	$(MAKE) CC=clang BUILD=build-fuzz OPT="-O1 -g" SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" \
	  build-fuzz/libscenarios.a build-fuzz/libplots.a build-fuzz/libcompile.a build-fuzz/libstrategies.a build-fuzz/libmodels.a \
	  build-fuzz/libsim.a build-fuzz/libbase.a
	@for n in $(FUZZ_NAMES); do \
	  clang -std=c11 -D_DEFAULT_SOURCE -DPODSIM_LIBFUZZER -DPODSIM_SOURCE_DIR=\"$(CURDIR)\" -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer -I. $(PKG_CFLAGS) \
	    tests/fuzz/fuzz_$$n.c -o build-fuzz/fuzz_$$n $(call below_scenarios_in,build-fuzz) $(LIBS) || exit 1; \
	  mkdir -p build-fuzz/corpus/$$n && cp tests/fuzz/corpus/$$n/* build-fuzz/corpus/$$n/; \
	  echo "== fuzz_$$n for $(FUZZ_SECONDS) s"; \
	  build-fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 \
	    -artifact_prefix=build-fuzz/crash_$$n- build-fuzz/corpus/$$n > build-fuzz/fuzz_$$n.log 2>&1; \
	  status=$$?; tail -3 build-fuzz/fuzz_$$n.log; \
	  [ $$status -eq 0 ] || { echo "fuzz_$$n failed (exit $$status): build-fuzz/fuzz_$$n.log"; exit 1; }; \
	done

# valgrind memcheck on the quick examples, from a build of its own without sanitizers (they
# cannot share a process with valgrind); any error or leak fails. tests/valgrind.supp keeps out
# fontconfig's caches only, as plots/canvas.c's LeakSanitizer suppression does.
VALGRIND_EXAMPLES = quickstart one_device default_strategy
valgrind:
	$(MAKE) BUILD=build-valgrind OPT="-O1 -g" build-valgrind/podsim
	@for x in $(VALGRIND_EXAMPLES); do \
	  echo "== valgrind podsim run scenarios/examples/$$x.yaml"; \
	  valgrind -q --error-exitcode=1 --leak-check=full --suppressions=tests/valgrind.supp \
	    build-valgrind/podsim run scenarios/examples/$$x.yaml -o build-valgrind/out/$$x --quiet || exit 1; \
	done; echo "valgrind: $(words $(VALGRIND_EXAMPLES)) examples, no error and no leak"

clean:
	rm -rf build build-* podsim out python/podsim/libpodsim.so python/build python/*.egg-info

# A test or bench compiles and links in one step, so gcc names its dependency file after the
# binary (test_x.d): editing a test helper header rebuilds the tests that include it.
-include $(OBJ:.o=.d) $(BUILD)/scenarios/main.d $(TEST_BIN:=.d) $(BENCH_BIN:=.d)
