# fabench: `make` builds build/fabench; `make test` builds and runs the tests;
# `make plots` draws results/<gpu>/plots/ from each perf.csv; `make clean`.
CC      ?= cc
OPT     ?= -O2 -g
CFLAGS  += $(OPT) -std=c11 -Wall -Wextra -Wshadow -Wno-unused-parameter -D_POSIX_C_SOURCE=200809L \
           -Ibench -Ibench/rt -Ivendors -MMD -MP
LDLIBS  += -lcsv -ldl -lm -lpthread

SRC     := $(wildcard bench/*.c bench/rt/*.c vendors/*/*.c)
OBJ     := $(SRC:%.c=build/obj/%.o)
LIBOBJ  := $(filter-out build/obj/bench/main.o,$(OBJ))
TESTSRC := $(wildcard tests/test_*.c)
TESTS   := $(TESTSRC:tests/%.c=build/tests/%)

.PHONY: all test clean plots
all: build/fabench

build/fabench: $(OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

build/tests/%: tests/%.c $(LIBOBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(LIBOBJ) $(LDLIBS) -lcmocka

# Every tests/test_*.c is one cmocka program, tests/cli.sh checks the command line; all
# of them run, and the summary line counts programs, so one failure hides no other.
test: build/fabench $(TESTS)
	@bash tests/run-all.sh $(TESTS) tests/cli.sh tests/adapter.sh tests/tools.sh

# PNG and SVG figures for every results/<gpu>/ with a perf.csv (needs gnuplot, python3)
plots:
	@bash plots/render.sh

clean:
	rm -rf build

-include $(OBJ:.o=.d) $(TESTS:=.d)
