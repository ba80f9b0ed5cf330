/*
 * Unit tests for webhook/filewatch.c: stopping a watch that never started (a
 * zeroed struct, or one whose start failed) closes nothing, in particular
 * not descriptor 0; a change to the file is seen; and with
 * filewatch_load_and_start() a version written while the first load runs is
 * loaded again, not missed until the next change.
 */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "filewatch.h"

#define WAIT_MS 3000

static char dir[] = "/tmp/test_filewatch.XXXXXX";
static char file[64];

static int setup(void **state __attribute__((unused)))
{
    if (!mkdtemp(dir))
        return -1;
    snprintf(file, sizeof(file), "%s/f", dir);
    return 0;
}

static int teardown(void **state __attribute__((unused)))
{
    unlink(file);
    rmdir(dir);
    return 0;
}

static void write_file(const char *text)
{
    FILE *f = fopen(file, "w");

    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* Descriptor 0 stays open, whatever the test runner had there. */
static void ensure_fd0(void)
{
    if (fcntl(0, F_GETFD) == -1) {
        int fd = open("/dev/null", O_RDONLY);

        assert_true(fd >= 0);
        if (fd != 0) {
            assert_int_equal(dup2(fd, 0), 0);
            close(fd);
        }
    }
}

static void assert_fd0_open(void)
{
    if (fcntl(0, F_GETFD) == -1)
        fail_msg("descriptor 0 was closed (errno %d)", errno);
}

static void no_op(void *ctx)
{
    (void)ctx;
}

TEST(test_stop_on_a_zeroed_watch_closes_nothing)
{
    struct filewatch w;

    ensure_fd0();
    memset(&w, 0, sizeof(w));
    filewatch_stop(&w);
    assert_fd0_open();
    filewatch_stop(&w); /* and again */
    assert_fd0_open();
}

TEST(test_stop_after_a_failed_start_closes_nothing)
{
    struct filewatch w;
    char err[128];
    const char *paths[FILEWATCH_MAX_PATHS + 1] = {file, file, file, file, file};

    ensure_fd0();
    memset(&w, 0, sizeof(w));
    assert_int_equal(filewatch_start(&w, paths, 0, 50, no_op, NULL, err, sizeof(err)), -1);
    filewatch_stop(&w);
    assert_fd0_open();
    assert_int_equal(
        filewatch_start(&w, paths, FILEWATCH_MAX_PATHS + 1, 50, no_op, NULL, err, sizeof(err)), -1);
    assert_contains(err, "cannot watch");
    filewatch_stop(&w);
    assert_fd0_open();
}

struct counter {
    atomic_int calls;
    int rewrite_on_first; /* the first call writes a new version */
};

static void count(void *ctx)
{
    struct counter *c = ctx;

    /* A version lands just after the first load has read the file. */
    if (atomic_fetch_add(&c->calls, 1) == 0 && c->rewrite_on_first)
        write_file("version two, longer than the first\n");
}

/* Waits until c->calls reaches want, at most WAIT_MS; returns the count. */
static int wait_calls(struct counter *c, int want)
{
    struct timespec tick = {0, 10 * 1000000L};

    for (int waited = 0; atomic_load(&c->calls) < want && waited < WAIT_MS; waited += 10)
        nanosleep(&tick, NULL);
    return atomic_load(&c->calls);
}

TEST(test_a_change_is_seen)
{
    struct filewatch w;
    struct counter c = {0};
    char err[128];
    const char *paths[] = {file};

    write_file("one\n");
    memset(&w, 0, sizeof(w));
    assert_int_equal(filewatch_start(&w, paths, 1, 20, count, &c, err, sizeof(err)), 0);
    assert_int_equal(atomic_load(&c.calls), 0);
    write_file("two, and longer\n");
    assert_int_equal(wait_calls(&c, 1), 1);
    filewatch_stop(&w);
}

TEST(test_load_and_start_loads_once)
{
    struct filewatch w;
    struct counter c = {0};
    char err[128];
    const char *paths[] = {file};
    struct timespec settle = {0, 200 * 1000000L};

    write_file("one\n");
    memset(&w, 0, sizeof(w));
    assert_int_equal(filewatch_load_and_start(&w, paths, 1, 20, count, &c, err, sizeof(err)), 0);
    /* The first load ran on this thread, before the call returned. */
    assert_int_equal(atomic_load(&c.calls), 1);
    nanosleep(&settle, NULL);
    assert_int_equal(atomic_load(&c.calls), 1); /* nothing changed since */
    filewatch_stop(&w);
}

/* cmd_serve used to load, then start the watch: a version written between
 * the two was recorded as already seen and never loaded. */
TEST(test_a_change_during_the_first_load_is_loaded)
{
    struct filewatch w;
    struct counter c = {.rewrite_on_first = 1};
    char err[128];
    const char *paths[] = {file};

    write_file("one\n");
    memset(&w, 0, sizeof(w));
    assert_int_equal(filewatch_load_and_start(&w, paths, 1, 20, count, &c, err, sizeof(err)), 0);
    if (wait_calls(&c, 2) < 2)
        fail_msg("the version written during the first load was not loaded within %d ms", WAIT_MS);
    filewatch_stop(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_on_a_zeroed_watch_closes_nothing),
        cmocka_unit_test(test_stop_after_a_failed_start_closes_nothing),
        cmocka_unit_test(test_a_change_is_seen),
        cmocka_unit_test(test_load_and_start_loads_once),
        cmocka_unit_test(test_a_change_during_the_first_load_is_loaded),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
