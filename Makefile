# fabench: `make` builds $(BUILD)/fabench; `make test` builds and runs the tests;
# `make sanitize` runs tests under ASan+UBSan, `make valgrind` a smoke run under memcheck,
# `make fuzz` the parsers' fuzzers, `make test-long` all three and every wgmma compile case
# (CI runs it); `make plots` draws results/<gpu>/plots/; `make summary` writes README.md's
# summary of the results; `make clean`.
CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -g
CFLAGS  += $(OPT) -std=c11 -Wall -Wextra -Wshadow -Wno-unused-parameter -D_POSIX_C_SOURCE=200809L \
           $(INCLUDES) -MMD -MP
LDLIBS  += -lcsv -ldl -lm -lpthread

# bench/: cmd/ (the commands, main.c), core/ (shapes, configurations, running, timing and
# verifying the kernel, the results' files), tune/ (the tuner, its search, the fallback),
# metrics/ (code metrics of compiled kernels), rt/ (the GPU runtimes); docs/architecture.md
BENCH_DIRS := bench/cmd bench/core bench/tune bench/metrics bench/rt
INCLUDES   := $(BENCH_DIRS:%=-I%) -Ivendors
SRC     := $(wildcard $(BENCH_DIRS:%=%/*.c) vendors/*/*.c)
OBJ     := $(SRC:%.c=$(BUILD)/obj/%.o)
LIBOBJ  := $(filter-out $(BUILD)/obj/bench/cmd/main.o,$(OBJ))
TESTSRC := $(wildcard tests/test_*.c)
TESTS   := $(TESTSRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all test test-long clean plots summary sanitize valgrind
all: $(BUILD)/fabench

$(BUILD)/fabench: $(OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/%.c $(LIBOBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(LIBOBJ) $(LDLIBS) -lcmocka

# test_telemetry loads a fake NVML built beside it
$(BUILD)/tests/libfake_nvml.so: tests/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(OPT) -std=c11 -Wall -Wextra -D_POSIX_C_SOURCE=200809L -shared -fPIC -o $@ $<
$(BUILD)/tests/test_telemetry: | $(BUILD)/tests/libfake_nvml.so

# Every tests/test_*.c is one cmocka program, tests/cli.sh checks the command line; all
# of them run, so one failure hides no other; the last line counts their tests: passed,
# failed and skipped (each skip listed above it with its reason).
test: $(BUILD)/fabench $(TESTS)
	@bash tests/run-all.sh $(TESTS) tests/cli.sh tests/timing.sh tests/bandwidth.sh tests/adapter.sh tests/tools.sh tests/faults.sh tests/cudnn.sh tests/metrics.sh tests/slurm.sh tests/tune_multi.sh

# What `make test` leaves out for time: every wgmma compile case of test_nvrtc (the quick
# run compiles every fourth), the sanitizer build, valgrind and the fuzzers
test-long: $(BUILD)/tests/test_nvrtc
	FABENCH_TEST_LONG=1 bash tests/run-all.sh $(BUILD)/tests/test_nvrtc
	$(MAKE) sanitize
	$(MAKE) valgrind
	$(MAKE) fuzz

# PNG and SVG figures for every results/<gpu>/ with a perf.csv (needs gnuplot, python3)
plots:
	@bash plots/render.sh

# README.md's "The answer so far" block, from the results' perf.csv files (fabench versus --markdown)
summary: $(BUILD)/fabench
	@FABENCH=$(BUILD)/fabench bash tools/readme-summary.sh

# The unit tests, a slice of the end-to-end tests and a smoke run, built with AddressSanitizer
# and UndefinedBehaviorSanitizer into build/asan (PoCL's own leaks are suppressed by name).
# LeakSanitizer does not scan thread-local storage (use_tls=0): PoCL's dlopen'd kernels leave
# dynamic-TLS records its tracer crashes on at exit for some kernel sources ("Tracer caught
# signal 11"; seen in test_tune's --merge runs at stop 27).
SAN_TESTS := test_csvio test_rt_shared test_shapes test_stats test_refcheck test_refdev test_search test_torch_proto test_tune test_fallback test_telemetry test_e2e
sanitize:
	$(MAKE) BUILD=build/asan OPT='-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all' \
	    LDFLAGS='-fsanitize=address,undefined' build/asan/fabench $(SAN_TESTS:%=build/asan/tests/%)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 LSAN_OPTIONS=suppressions=tests/lsan.supp:print_suppressions=0:use_tls=0 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 FABENCH_BIN=build/asan/fabench \
	    FABENCH_TEST_FILTER='test_gqa*' bash tests/run-all.sh $(SAN_TESTS:%=build/asan/tests/%) tests/sanitize-smoke.sh

# memcheck on a smoke run (glibc's loader false positives suppressed by name)
valgrind: $(BUILD)/fabench
	@bash tests/valgrind.sh $(BUILD)/fabench

clean:
	rm -rf build

-include $(OBJ:.o=.d) $(TESTS:=.d)

# ---- fuzzing -------------------------------------------------------------------------
# `make fuzz` builds one libFuzzer target per parser (tests/fuzz/fuzz_*.c) with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer (the library objects separately, under
# build/fuzz/obj/), then runs each for FUZZ_SECONDS on a copy of its seed corpus
# (tests/fuzz/corpus/NAME/ is never written) and fails on any crash, naming the input.
# FUZZ_TARGETS="csv config" runs only those. Needs clang and libFuzzer (ensure-deps fuzz).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  := -O1 -g -fno-omit-frame-pointer -std=c11 -D_POSIX_C_SOURCE=200809L \
                $(INCLUDES) -MMD -MP
FUZZ_OBJ     := $(patsubst %.c,build/fuzz/obj/%.o,$(filter-out bench/cmd/main.c,$(SRC)))
FUZZ_ALL     := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_BINS    := $(FUZZ_ALL:%=build/fuzz/fuzz_%)

.PHONY: fuzz fuzz-build
fuzz:
	@CC=$(FUZZ_CC) bash tools/ensure-deps.sh fuzz
	@$(MAKE) --no-print-directory fuzz-build
	@bash tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_BINS)

build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -c -o $@ $<

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Itests/fuzz -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< $(FUZZ_OBJ) $(LDLIBS)

-include $(FUZZ_OBJ:.o=.d) $(FUZZ_BINS:=.d)
