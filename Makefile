# btrsim - the only build entry.  `make help` lists the targets.
#
# Builds live in build/<mode>/ (release, debug, coverage, afl, afl-asan); `make` leaves
# the command at ./btrsim as btrfs-progs leaves ./btrfs.

# Every target uses the machine's cores unless the command line gives -j or
# --jobs (make 4.3 shows no -j in MAKEFLAGS while it reads the makefile, so
# the command line is read from /proc; sub-makes share the jobserver).
ifeq ($(MAKELEVEL),0)
ifeq ($(filter -j% --jobs%,$(MAKEFLAGS) $(shell tr '\0' ' ' </proc/$$PPID/cmdline 2>/dev/null)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
endif

MODE ?= release
B := build/$(MODE)
# V=1 shows the full commands.
Q := $(if $(V),,@)

CC_release  := cc
CC_debug    := cc
CC_coverage := cc
CC_afl      := afl-clang-fast
CC_afl-asan := afl-clang-fast
CC := $(CC_$(MODE))

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-missing-field-initializers
# FIU_ENABLE: libfiu's fault points (faults/points.h) are compiled in every mode;
# they cost a load and a branch each while no fault plan is armed.
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -DFIU_ENABLE=1 -g $(WARN) -I. -MMD -MP
MODE_CFLAGS_release  := -O2
MODE_CFLAGS_debug    := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all
MODE_CFLAGS_coverage := -O0 --coverage -DBTRSIM_COVERAGE_BUILD=1
MODE_CFLAGS_afl      := -O2 -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
MODE_CFLAGS_afl-asan := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
MODE_LDFLAGS_debug   := -fsanitize=address,undefined
MODE_LDFLAGS_afl-asan := -fsanitize=address,undefined
MODE_LDFLAGS_coverage := --coverage
CFLAGS  := $(BASE_CFLAGS) $(MODE_CFLAGS_$(MODE)) $(EXTRA_CFLAGS)
LDFLAGS := $(MODE_LDFLAGS_$(MODE)) $(EXTRA_LDFLAGS)
# libfuse3: the kernel target's FUSE-served disks (traces/kernel_disks.c) and the FUSE mount of ref (traces/fmount*.c).
FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null || echo -I/usr/include/fuse3)
LIBS := -lisal -lz -llzo2 -lzstd -lsodium -lcrypto -lxxhash -lsqlite3 -lfiu -lfuse3 -lpthread -lm
$(B)/traces/kernel_disks.o $(patsubst %.c,$(B)/%.o,$(wildcard traces/fmount*.c)): CFLAGS += $(FUSE_CFLAGS)

# faults/gate.c (the fault points' switch) goes into the sim library, the bottom
# of the link order, so that every program linking sim or ref has it.
SIM_SRC  := $(wildcard sim/*.c) faults/gate.c
FAULTS_SRC := $(filter-out faults/gate.c,$(wildcard faults/*.c))
REF_SRC  := $(wildcard ref/*.c ref/*/*.c)
TRACES_SRC := $(wildcard traces/*.c)
CLI_SRC  := $(wildcard cli/*.c)
UNIT_SRC := $(wildcard tests/unit/*.c)
BENCH_SRC := bench/bench_sim.c
BENCH_FS_SRC := bench/bench_fs.c bench/benchutil.c
BENCH_SNAP_SRC := bench/bench_snapshot.c bench/benchutil.c
BENCH_RAID_SRC := bench/bench_raid.c bench/benchutil.c
BENCH_LOG_SRC := bench/bench_log.c bench/benchutil.c
BENCH_COMPRESS_SRC := bench/bench_compress.c bench/benchutil.c
BENCH_NULLFS_SRC := bench/bench_nullfs.c
BENCH_META_SRC := bench/bench_meta.c
SWEEP_SRC := $(wildcard tests/sweep/*.c)
# fuzz/: the harness code (a library, also linked into btrsim for `findings
# --replay`), the harness programs' main (fuzz/driver.c, once per harness) and
# fuzz-mkseed.
FUZZ_SRC := $(filter-out fuzz/driver.c fuzz/mkseed.c,$(wildcard fuzz/*.c))
FUZZ_HARNESSES := image workload parse stream

obj = $(patsubst %.c,$(B)/%.o,$(1))

SIM_LIB := $(B)/libbtrsim-sim.a
REF_LIB := $(B)/libbtrsim-ref.a
TRACES_LIB := $(B)/libbtrsim-traces.a
FAULTS_LIB := $(B)/libbtrsim-faults.a
FUZZ_LIB := $(B)/libbtrsim-fuzz.a
BTRSIM  := $(B)/btrsim
UNIT    := $(B)/tests/unit-tests
BENCH   := $(B)/bench/bench-sim
BENCH_FS := $(B)/bench/bench-fs
BENCH_SNAP := $(B)/bench/bench-snapshot
BENCH_RAID := $(B)/bench/bench-raid
BENCH_LOG := $(B)/bench/bench-log
BENCH_COMPRESS := $(B)/bench/bench-compress
BENCH_NULLFS := $(B)/bench/bench-nullfs
BENCH_META := $(B)/bench/bench-meta
SWEEP   := $(B)/tests/corrupt-sweep
FUZZ_BINS := $(patsubst %,$(B)/fuzz/fuzz-%,$(FUZZ_HARNESSES))
FUZZ_MKSEED := $(B)/fuzz/fuzz-mkseed

VERSION := $(shell cat VERSION)
GIT_ID  := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

.PHONY: all cmd build deps test run bench asan coverage clean help difftest mutants cluster-test FORCE \
	kernel-campaign \
	fuzz fuzz-bins fuzz-seeds fuzz-run
.DEFAULT_GOAL := all

# ---- Top-level targets ----------------------------------------------------

all:
	@$(MAKE) --no-print-directory MODE=release cmd
	@cp -f build/release/btrsim ./btrsim

help:
	@echo "make [all]       build (release) and leave ./btrsim"
	@echo "make deps        install the Debian packages btrsim needs (idempotent)"
	@echo "make run         deps, build, the default campaign into traces/btrsim.db; reports in reports/"
	@echo "make test        deps, build with ASan+UBSan, run the whole test suite"
	@echo "make asan        the debug build with ASan+UBSan (build/debug/)"
	@echo "make coverage    gcov build, test suite, lcov HTML in reports/coverage/"
	@echo "                 CORPUS=DIR: a fuzz corpus too (seeds, AFL++ queue or output; HARNESS=NAME or NAME:DIR)"
	@echo "                 COVERAGE_TESTS=0: the corpus alone, without the test suite"
	@echo "make bench       benchmarks (release build), ratios against memcpy"
	@echo "make cluster-test a one-node Slurm cluster: campaign and AFL++ arrays, merged"
	@echo "make difftest    long differential campaign against the kernel [SEEDS=50 OPS=5000]"
	@echo "make kernel-campaign  the seq-N campaign on the running kernel's btrfs (root, FUSE,"
	@echo "                 loop devices) [KERNEL_SEQ=1 KERNEL_LIMIT= KERNEL_DB=traces/btrsim.db]"
	@echo "make mutants     deliberately broken builds of ref (ref/mutant.h) in build/mutants/"
	@echo "make fuzz        AFL++ harnesses, plain and ASan+UBSan (build/afl/fuzz/, build/afl-asan/fuzz/)"
	@echo "make fuzz-seeds  seed corpora in fuzz/seeds/ (mkfs.btrfs, btrsim, workloads, plans, send"
	@echo "                 streams; afl-cmin); HARNESS=NAME: only that corpus"
	@echo "make fuzz-run    a bounded AFL++ campaign: HARNESS=image SECONDS=600 [JOBS=N] [FUZZ_DB=...]"
	@echo "make clean       remove build/ and ./btrsim"

deps:
	@sh mk/deps.sh

cmd: $(BTRSIM)
build: $(BTRSIM) $(UNIT) $(SWEEP) $(BENCH) $(BENCH_FS) $(BENCH_SNAP) $(BENCH_RAID) $(BENCH_LOG) $(BENCH_COMPRESS) $(BENCH_NULLFS) $(BENCH_META) $(FUZZ_BINS) $(FUZZ_MKSEED)
fuzz-bins: $(FUZZ_BINS) $(FUZZ_MKSEED)

asan:
	@$(MAKE) --no-print-directory MODE=debug build

test: deps
	@$(MAKE) --no-print-directory MODE=debug build
	@$(MAKE) --no-print-directory mutants
	@sh tests/run.sh build/debug

BENCH_READ_MIB ?= 1024
BENCH_MOUNT_MIB ?= 1024
BENCH_MOUNT_FILES ?= 100000
BENCH_WRITE_MIB ?= 1024
BENCH_COMPRESS_MIB ?= 128
BENCH_DEFRAG_MIB ?= 256
BENCH_DEDUPE_MIB ?= 1024
SEED ?=
run: deps
	@$(MAKE) --no-print-directory all
	@sh mk/run.sh ./btrsim $(SEED)

# The crash harness on the running kernel's btrfs (traces/README.md, "The
# kernel as the target"): every seq-N workload, a progress line on a terminal.
KERNEL_SEQ ?= 1
KERNEL_LIMIT ?=
KERNEL_DB ?= traces/btrsim.db
kernel-campaign: deps
	@$(MAKE) --no-print-directory all
	@mkdir -p reports
	@./btrsim campaign --target kernel --seq $(KERNEL_SEQ) $(if $(KERNEL_LIMIT),--limit $(KERNEL_LIMIT)) \
		--db $(KERNEL_DB) --report reports/kernel-campaign.md

bench: deps
	@$(MAKE) --no-print-directory MODE=release build
	@build/release/bench/bench-sim
	@sh bench/bench_read.sh build/release/btrsim $(BENCH_READ_MIB)
	@sh bench/bench_fs.sh build/release/bench/bench-fs $(BENCH_WRITE_MIB)
	@build/release/bench/bench-snapshot create
	@build/release/bench/bench-snapshot cow
	@build/release/bench/bench-snapshot quota
	@build/release/bench/bench-raid profiles
	@build/release/bench/bench-raid rebuild
	@build/release/bench/bench-raid balance
	@sh bench/bench_log.sh build/release/bench/bench-log
	@build/release/bench/bench-compress write $(BENCH_COMPRESS_MIB)
	@sh bench/bench_compress.sh build/release/btrsim build/release/bench/bench-compress
	@sh bench/bench_defrag.sh build/release/btrsim $(BENCH_DEFRAG_MIB)
	@sh bench/bench_send.sh build/release/btrsim
	@sh bench/bench_dedupe.sh build/release/btrsim $(BENCH_DEDUPE_MIB)
	@sh bench/bench_explore.sh build/release/btrsim
	@sh bench/bench_mount.sh build/release $(BENCH_MOUNT_MIB) $(BENCH_MOUNT_FILES)
	@sh bench/bench_merge.sh build/release/btrsim
	@sh bench/bench_kernel.sh build/release/btrsim
	@$(MAKE) --no-print-directory MODE=afl B=$(FUZZ_B) fuzz-bins && sh bench/bench_fuzz.sh $(FUZZ_B)

# Deliberately broken builds of ref (ref/mutant.h), each the release build
# with one bug switched on: build/mutants/btrsim-NAME.  Only ref's files that
# include mutant.h are compiled again per mutant (in build/mutants/NAME/);
# everything else is the release build's objects, so the sixteen take about a
# minute, in parallel under -j.  The explorer's tests run every one and must
# catch it; `btrsim --version` and the runs a mutant records name it.
MUTANTS := skip-flush:1 cow-in-place:2 super-first:3 drop-dirty:4 early-reuse:5 snap-rw:6 \
	snap-no-commit:7 qgroup-no-inherit:8 log-super-first:9 log-no-csum:10 log-no-names:11 \
	log-no-holes:12 log-no-dir-ranges:13 log-no-unlink:14 receive-early:15 \
	dedupe-no-compare:16
MUTANT_NAMES := $(foreach m,$(MUTANTS),$(firstword $(subst :, ,$(m))))
mutant_num = $(lastword $(subst :, ,$(filter $(1):%,$(MUTANTS))))
MUTANT_SRC := $(shell grep -l '"ref/mutant.h"' $(REF_SRC))
# The release build the mutants share.
MB := build/release
MUTANT_BINS := $(patsubst %,build/mutants/btrsim-%,$(MUTANT_NAMES))

mutants:
	@$(MAKE) --no-print-directory MODE=release cmd
	@$(MAKE) --no-print-directory $(MUTANT_BINS)

$(MUTANT_BINS): build/mutants/btrsim-%: FORCE
	@$(MAKE) --no-print-directory MODE=release B=build/mutants/$* \
		EXTRA_CFLAGS=-DBTRSIM_MUTANT=$(call mutant_num,$*) cmd
	@cp -f build/mutants/$*/btrsim $@

# The random differential test at campaign size: each seed's workload on the
# kernel (loop mount) and on ref, every errno and the final view compared.
SEEDS ?= 50
OPS ?= 5000
difftest: deps
	@$(MAKE) --no-print-directory all
	@BTRSIM=build/release/btrsim DIFF_SEEDS="$$(seq 1 $(SEEDS))" DIFF_OPS=$(OPS) \
		sh tests/interop/test_write.sh

# A one-node Slurm cluster (mk/cluster.sh) running a 4-task campaign array and
# a 2-task AFL++ array, merged (tests/interop/test_cluster.sh; make test runs it too).
cluster-test: deps
	@$(MAKE) --no-print-directory MODE=debug build
	@$(MAKE) --no-print-directory MODE=afl B=build/afl fuzz-bins
	@BTRSIM=build/debug/btrsim sh tests/interop/test_cluster.sh

# ---- Fuzzing (fuzz/README.md) -----------------------------------------------
# The AFL++ builds go to FUZZ_B (plain) and FUZZ_ASAN_B (ASan+UBSan); crashes
# are replayed for triage with the plain ASan harnesses of FUZZ_DBG_B (the
# debug build); findings go to FUZZ_DB.
FUZZ_B ?= build/afl
FUZZ_ASAN_B ?= build/afl-asan
FUZZ_DBG_B ?= build/debug
FUZZ_DB ?= traces/btrsim.db
HARNESS ?= image
SECONDS ?= 600
JOBS ?= 1

fuzz: deps
	@$(MAKE) --no-print-directory MODE=afl B=$(FUZZ_B) fuzz-bins
	@$(MAKE) --no-print-directory MODE=afl-asan B=$(FUZZ_ASAN_B) fuzz-bins

fuzz-seeds: fuzz
	@$(MAKE) --no-print-directory MODE=debug B=$(FUZZ_DBG_B) cmd fuzz-bins
	@sh mk/fuzz-seeds.sh $(FUZZ_DBG_B) $(FUZZ_B) \
		$(if $(filter command line environment,$(origin HARNESS)),$(HARNESS))

fuzz-run: deps
	@$(MAKE) --no-print-directory MODE=afl B=$(FUZZ_B) fuzz-bins
	@$(if $(filter 1,$(FUZZ_ASAN)),$(MAKE) --no-print-directory MODE=afl-asan B=$(FUZZ_ASAN_B) fuzz-bins)
	@$(MAKE) --no-print-directory MODE=debug B=$(FUZZ_DBG_B) cmd fuzz-bins
	@sh mk/fuzz-run.sh $(HARNESS) $(SECONDS) $(JOBS) $(FUZZ_DB) $(FUZZ_B) $(FUZZ_ASAN_B) \
		$(FUZZ_DBG_B)

# make coverage [CORPUS="[HARNESS:]PATH..."] [HARNESS=NAME] [COVERAGE_TESTS=0]: the
# gcov build (build/coverage; B=DIR on the command line for another), the test
# suite (unless COVERAGE_TESTS=0), every input of CORPUS through the build's
# plain harnesses (mk/coverage.sh --corpus; the harness from HARNESS= or the
# path), then the report in COVERAGE_REPORT.
COV_B := $(if $(filter command line,$(origin B)),$(B),build/coverage)
COVERAGE_REPORT ?= reports/coverage
COVERAGE_TESTS ?= 1
CORPUS ?=
# HARNESS names the corpus's harness only when given (its default is fuzz-run's).
COV_HARNESS := $(if $(filter command line environment,$(origin HARNESS)),$(HARNESS))

coverage: deps
	@$(if $(filter 0,$(COVERAGE_TESTS)),$(if $(strip $(CORPUS)),,echo "make coverage: COVERAGE_TESTS=0 needs CORPUS=..." >&2; exit 2))
	@rm -rf $(COV_B)/*.info $(COV_B)/corpus-failures.txt $(COVERAGE_REPORT)
	@find $(COV_B) -name '*.gcda' -delete 2>/dev/null || true
	@$(MAKE) --no-print-directory MODE=coverage B=$(COV_B) build
	@$(if $(filter 0,$(COVERAGE_TESTS)),echo "coverage: COVERAGE_TESTS=0: the test suite is not run",sh tests/run.sh $(COV_B))
	@$(if $(strip $(CORPUS)),HARNESS='$(COV_HARNESS)' sh mk/coverage.sh --corpus $(COV_B) $(CORPUS))
	@sh mk/coverage.sh $(COV_B) $(COVERAGE_REPORT)

clean:
	rm -rf build btrsim

# ---- One mode's build ------------------------------------------------------

$(B)/version.h: FORCE
	@mkdir -p $(@D)
	@printf '#define BTRSIM_VERSION "%s"\n#define BTRSIM_BUILD_ID "%s"\n#define BTRSIM_BUILD_MODE "%s"\n' \
		'$(VERSION)' '$(GIT_ID)' '$(MODE)' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@

$(call obj,$(CLI_SRC)): $(B)/version.h
$(call obj,$(CLI_SRC)): CFLAGS += -I$(B)

$(B)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $(MODE) $<")
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

define archive
	@rm -f $@
	@$(if $(Q),echo "  AR      $(MODE) $(@F)")
	$(Q)ar rcs $@ $^
endef

$(SIM_LIB): $(call obj,$(SIM_SRC))
	$(call archive)

$(REF_LIB): $(call obj,$(REF_SRC))
	$(call archive)

$(TRACES_LIB): $(call obj,$(TRACES_SRC))
	$(call archive)

$(FAULTS_LIB): $(call obj,$(FAULTS_SRC))
	$(call archive)

$(FUZZ_LIB): $(call obj,$(FUZZ_SRC))
	$(call archive)

define link
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $(MODE) $(@F)")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) $(1)
endef

ifeq ($(filter build/mutants/%,$(B)),)
$(BTRSIM): $(call obj,$(CLI_SRC)) $(FUZZ_LIB) $(TRACES_LIB) $(FAULTS_LIB) $(REF_LIB) $(SIM_LIB)
	$(call link)
else
# A mutant's command: the release objects with ref's mutant files replaced.
$(BTRSIM): $(patsubst %.c,$(MB)/%.o,$(CLI_SRC)) $(MB)/libbtrsim-fuzz.a $(MB)/libbtrsim-traces.a \
	$(MB)/libbtrsim-faults.a $(call obj,$(MUTANT_SRC)) \
	$(patsubst %.c,$(MB)/%.o,$(filter-out $(MUTANT_SRC),$(REF_SRC))) $(MB)/libbtrsim-sim.a
	$(call link)
endif

# One main per harness: fuzz/driver.c with the harness's name (a static
# pattern: a plain one would also match the .d files make tries to remake).
FUZZ_DRIVERS := $(patsubst %,$(B)/fuzz/driver-%.o,$(FUZZ_HARNESSES))
$(FUZZ_DRIVERS): $(B)/fuzz/driver-%.o: fuzz/driver.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $(MODE) $< ($*)")
	$(Q)$(CC) $(CFLAGS) -DFUZZ_HARNESS_NAME='"$*"' -c -o $@ $<

$(FUZZ_BINS): $(B)/fuzz/fuzz-%: $(B)/fuzz/driver-%.o $(FUZZ_LIB) $(TRACES_LIB) $(FAULTS_LIB) \
		$(REF_LIB) $(SIM_LIB)
	$(call link)

$(FUZZ_MKSEED): $(B)/fuzz/mkseed.o $(FUZZ_LIB) $(TRACES_LIB) $(FAULTS_LIB) $(REF_LIB) $(SIM_LIB)
	$(call link)

$(UNIT): $(call obj,$(UNIT_SRC)) $(TRACES_LIB) $(FAULTS_LIB) $(REF_LIB) $(SIM_LIB)
	$(call link,-lcriterion)

$(SWEEP): $(call obj,$(SWEEP_SRC)) $(REF_LIB) $(SIM_LIB)
	$(call link)

$(BENCH): $(call obj,$(BENCH_SRC)) $(SIM_LIB)
	$(call link)

$(BENCH_FS): $(call obj,$(BENCH_FS_SRC)) $(REF_LIB) $(SIM_LIB)
	$(call link)

$(BENCH_SNAP): $(call obj,$(BENCH_SNAP_SRC)) $(REF_LIB) $(SIM_LIB)
	$(call link)

$(BENCH_RAID): $(call obj,$(BENCH_RAID_SRC)) $(REF_LIB) $(SIM_LIB)
	$(call link)

$(BENCH_LOG): $(call obj,$(BENCH_LOG_SRC)) $(REF_LIB) $(SIM_LIB)
	$(call link)

$(BENCH_COMPRESS): $(call obj,$(BENCH_COMPRESS_SRC)) $(REF_LIB) $(SIM_LIB)
	$(call link)

$(B)/bench/bench_nullfs.o: CFLAGS += $(FUSE_CFLAGS)
$(BENCH_NULLFS): $(call obj,$(BENCH_NULLFS_SRC))
	$(call link)

$(BENCH_META): $(call obj,$(BENCH_META_SRC))
	$(call link)

-include $(shell find $(B) -name '*.d' 2>/dev/null)
