/* test_skip.h: a cmocka test that skips says why, on a line "skipped: REASON" just before
 * cmocka's "[  SKIPPED ] NAME", where tests/run-all.sh finds it for its list of skips. */
#ifndef FABENCH_TEST_SKIP_H
#define FABENCH_TEST_SKIP_H

#define SKIP_BECAUSE(...)                      \
    do {                                       \
        print_message("skipped: " __VA_ARGS__); \
        print_message("\n");                   \
        skip();                                \
    } while (0)

#endif
