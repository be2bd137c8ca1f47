# jit-unwind: `make demo` shows plain GDB's backtrace of a toy JIT, then the same stop's with
# the plugin; `make test` runs the tests (after `make lint`).
# Each installs only what it needs on a fresh Debian machine (demo: apt; test: apt and a
# Python 3.11 venv).

SHELL := /bin/bash
VENV := .venv
BUILD := build
PYTHON311 ?= $(shell command -v python3.11 || echo /usr/bin/python3)
APT_PACKAGES := gdb gcc make python3 python3-venv python3-pyelftools python3-tabulate \
                lldb-19 python3-lldb-19 gjs ruby luajit openjdk-17-jdk-headless nodejs \
                qemu-user gdb-multiarch gcc-aarch64-linux-gnu libc6-arm64-cross g++ libc6-dbg \
                valgrind
# What `make demo` runs: Debian's GDB (13, with its own Python), gcc for the toy JIT, and
# tabulate for `info jit-regions`' table (the plugin needs no pyelftools for the demo).
DEMO_APT_PACKAGES := gdb gcc libc6-dev make python3-tabulate
FIXTURE_CFLAGS := -O0 -g -fno-omit-frame-pointer -Wall -Wextra
PYTEST_ARGS ?=

.PHONY: demo demo-deps test lint test-cpython-gdb test-gdb-suite fuzz apt-deps venv fixtures cpython-fixtures \
        clean aarch64-fixtures container-fixtures

DEMO_GDB := gdb -q -nx -batch -iex 'set debuginfod enabled off' -iex 'set pagination off'
DEMO_PROGRAM := $(BUILD)/toyjit mixed 2 sigtrap
demo: demo-deps $(BUILD)/toyjit
	@echo "== toy JIT: C -> JIT (frame pointer) -> C -> JIT (frameless, via trampoline) -> C, stopped by SIGTRAP"
	@echo "== plain GDB (gdb -nx, no plugin): bt"
	@$(DEMO_GDB) -ex run -ex bt --args $(DEMO_PROGRAM)
	@echo
	@echo "== the same stop with the plugin (-x gdb_init.py, show-method on): bt, info jit-regions"
	@$(DEMO_GDB) -x gdb_init.py -ex 'set jit-unwind show-method on' -ex run -ex bt \
	    -ex 'info jit-regions' --args $(DEMO_PROGRAM)

# lint runs before the fixtures are built: a warning fails `make test` within seconds.
test: apt-deps venv lint fixtures
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS) tests

# ruff, then mypy over the core (not the adapters gdb/ and lldb/ nor the loaders, which
# import the debuggers' own modules), each with its configuration in pyproject.toml
# ([tool.ruff], [tool.mypy]); no warning and no type error is allowed.
LINT_PATHS := plugin tests bench gdb_init.py lldb_init.py
lint: venv
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/mypy

# CPython 3.14.6's own Lib/test/test_gdb (from its source package) without and with
# jit-unwind loaded into every GDB it starts, the JIT off and on, under each GDB below
# (tests/cpython_gdb/run.sh; logs in build/cpython-gdb/).  About 5 minutes per GDB.
CPYTHON_GDB_DEBUGGERS ?= /usr/bin/gdb $(VENV)/bin/gdb
test-cpython-gdb: apt-deps venv fixtures
	status=0; for gdb in $(CPYTHON_GDB_DEBUGGERS); do \
	    tests/cpython_gdb/run.sh $$gdb || status=1; done; exit $$status

# GDB 13.1's own testsuite (tests/gdb_testsuite/run.sh) plain and with the plugin sourced
# into every GDB; prints every result that differs, fails on a worse one.  GDB_SUITE=ci:
# the stack-touching part of ci.list; GDB_SUITE=all: gdb.base and gdb.python (an hour).
# dejagnu runs it, valgrind's gdbserver serves the valgrind tests.
GDB_SUITE ?= ci
GDB_SUITE_APT_PACKAGES := dejagnu valgrind curl xz-utils
test-gdb-suite: apt-deps venv
	$(call apt_install,$(GDB_SUITE_APT_PACKAGES))
	RUN_NAME=$(GDB_SUITE) tests/gdb_testsuite/run.sh $(if $(filter all,$(GDB_SUITE)),--all)

# The core-level fuzz run (docs/robustness.md): FUZZ_SEED, FUZZ_COUNT, FUZZ_SUBJECTS
# (comma-separated, see tests/fuzz/cores.py), FUZZ_CORES (keep the recorded cores there),
# FUZZ_E2E (random corrupted cores through GDB 18 and LLDB 23 afterwards; 0 skips them).
FUZZ_SEED ?= 1
FUZZ_COUNT ?= 10000
FUZZ_E2E ?= 60
fuzz: apt-deps venv fixtures
	FUZZ_SEED=$(FUZZ_SEED) FUZZ_COUNT=$(FUZZ_COUNT) $(VENV)/bin/python -m tests.fuzz.run
	if [ "$(FUZZ_E2E)" != 0 ]; then FUZZ_E2E_CASES=$(FUZZ_E2E) FUZZ_SEED=$(FUZZ_SEED) \
	    $(VENV)/bin/python -m pytest -q tests/e2e/test_random_corrupted_cores.py; fi

# apt-get runs only when a package is missing: repeated runs stay fast.
define apt_install
	@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "installing:" $$missing; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
endef

demo-deps:
	$(call apt_install,$(DEMO_APT_PACKAGES))

apt-deps:
	$(call apt_install,$(APT_PACKAGES))

venv: $(VENV)/.installed

$(VENV)/.installed: requirements-test.txt setup.cfg
	test -x $(VENV)/bin/python || $(PYTHON311) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -r requirements-test.txt
	$(VENV)/bin/python -m pip install -q -e .
	touch $@

fixtures: $(BUILD)/toyjit $(BUILD)/deepstack $(BUILD)/jitdump_jit $(BUILD)/manyjit $(BUILD)/nocfi \
          $(BUILD)/remapped_entry $(BUILD)/runtimes/Hot.class cpython-fixtures aarch64-fixtures \
          container-fixtures \
          $(BUILD)/cxx_args_size $(BUILD)/stop_loop $(BUILD)/jit_reader_host $(BUILD)/jit_reader.so

# The CPython test interpreters of tests/jit_python.py, once per machine into
# ~/.cache/jit-unwind: unpacked from ../shared/cpython when it has them (seconds), else
# built from Debian's sources (10-20 min each on 2 cores); then the script returns at once.
CPYTHON_MINORS := 3.13 3.14 3.15 3.13t 3.14t 3.15-jit 3.14-tailcall
# Cross-built for aarch64 with the JIT, run through qemu-user (7-13 min on 2 cores).
CPYTHON_AARCH64 := 3.14
cpython-fixtures:
	for minor in $(CPYTHON_MINORS); do tests/fixtures/build_cpython.sh $$minor || exit 1; done
	for minor in $(CPYTHON_AARCH64); do tests/fixtures/build_cpython_aarch64.sh $$minor || exit 1; done

$(BUILD)/%: tests/fixtures/%.c
	@mkdir -p $(BUILD)
	gcc $(FIXTURE_CFLAGS) -o $@ $<

# A JIT describing its code through GDB's JIT reader API, and its reader (a shared object
# GDB loads with jit-reader-load; Debian's gdb ships the API's header, gdb/jit-reader.h).
$(BUILD)/jit_reader_host: tests/fixtures/jit_reader_host.c tests/fixtures/jit_reader_symfile.h
	@mkdir -p $(BUILD)
	gcc $(FIXTURE_CFLAGS) -o $@ $<

$(BUILD)/jit_reader.so: tests/fixtures/jit_reader.c tests/fixtures/jit_reader_symfile.h
	@mkdir -p $(BUILD)
	gcc $(FIXTURE_CFLAGS) -Wno-unused-parameter -shared -fPIC -o $@ $<

# C calling code without call frame information: hand-written assembly (no .cfi
# directives, so no FDE) and C compiled without unwind tables or -g (no .debug_frame).
NOCFI_SOURCES := tests/fixtures/nocfi.c tests/fixtures/nocfi_asm.S tests/fixtures/nocfi_c.c
$(BUILD)/nocfi: $(NOCFI_SOURCES)
	@mkdir -p $(BUILD)
	gcc -g -c -o $(BUILD)/nocfi_asm.o tests/fixtures/nocfi_asm.S
	gcc -O1 -fno-asynchronous-unwind-tables -fno-unwind-tables -fomit-frame-pointer \
	    -c -o $(BUILD)/nocfi_c.o tests/fixtures/nocfi_c.c
	gcc $(FIXTURE_CFLAGS) -o $@ tests/fixtures/nocfi.c $(BUILD)/nocfi_asm.o $(BUILD)/nocfi_c.o

# Entry code (V8's JSEntry layout, no CFI) run from a second, file-backed mapping of the
# program's own code, as V8 remaps node's builtins.
$(BUILD)/remapped_entry: tests/fixtures/remapped_entry.c tests/fixtures/remapped_entry_asm.S
	@mkdir -p $(BUILD)
	gcc $(FIXTURE_CFLAGS) -o $@ $^

# C++ whose CFI holds DW_CFA_GNU_args_size (g++ writes it with -fexceptions at calls that
# push stack arguments and may throw), between JIT frames (tests/e2e/test_cfi_args_size.py).
$(BUILD)/cxx_args_size: tests/fixtures/cxx_args_size.cc
	@mkdir -p $(BUILD)
	g++ -O2 -g -fexceptions -Wall -Wextra -o $@ $<

# The HotSpot program of tests/e2e/test_jit_runtimes.py (the other runtimes' are scripts).
$(BUILD)/runtimes/Hot.class: tests/fixtures/runtimes/Hot.java
	@mkdir -p $(BUILD)/runtimes
	javac -d $(BUILD)/runtimes $<

# aarch64 under qemu-user (tests/aarch64.py): Debian's arm64 libc and python3.11 as a
# sysroot and a qemu 10 in ~/.cache/jit-unwind (seconds, once per machine), and the toy
# JIT for aarch64, non-PIE (qemu's cores leave out file-backed code, so a PIE is never
# relocated in them) and PIE.
AARCH64_CC := aarch64-linux-gnu-gcc
# A container's core: Debian 13's python3.13 run in a root of its own, dumped at a SIGTRAP
# (tests/e2e/test_container_core.py); once per machine into ~/.cache/jit-unwind.
container-fixtures:
	tests/fixtures/debian13_core.sh

aarch64-fixtures: $(BUILD)/aarch64/toyjit $(BUILD)/aarch64/toyjit-pie
	tests/fixtures/aarch64/setup.sh

$(BUILD)/aarch64/toyjit: tests/fixtures/toyjit_aarch64.c
	@mkdir -p $(BUILD)/aarch64
	$(AARCH64_CC) $(FIXTURE_CFLAGS) -no-pie -o $@ $<

$(BUILD)/aarch64/toyjit-pie: tests/fixtures/toyjit_aarch64.c
	@mkdir -p $(BUILD)/aarch64
	$(AARCH64_CC) $(FIXTURE_CFLAGS) -fPIE -pie -o $@ $<

clean:
	rm -rf $(BUILD) $(VENV)
