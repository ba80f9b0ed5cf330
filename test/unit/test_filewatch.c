/*
 * Unit tests for webhook/host/filewatch.c: stop undoes init whatever happened in
 * between (a failed init, no start, a second stop), closing exactly what init
 * opened and never descriptor 0; a change to the file is seen; and a version
 * written after init recorded the identities but before start (while the
 * caller's first load runs) is called back at once, not missed until the
 * next change.
 */
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "host/filewatch.h"

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

/* Writes a new version in one step (a rename over the file), as the kubelet
 * does: an in-place rewrite may be seen twice, truncated and then whole. */
static void write_file(const char *text)
{
    char tmp[80];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.tmp", file);
    f = fopen(tmp, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, file), 0);
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

/* Descriptors open in this process. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    assert_non_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static void no_op(void *ctx)
{
    (void)ctx;
}

TEST(test_stop_on_null_is_a_no_op)
{
    struct filewatch *w = NULL;

    ensure_fd0();
    filewatch_stop(&w);
    assert_null(w);
    assert_fd0_open();
}

/* A failed init leaves nothing to stop, and opened nothing. */
TEST(test_failed_init_leaves_null_and_closes_nothing)
{
    struct filewatch *w = (struct filewatch *)&w; /* init must overwrite it */
    char err[ERR_LEN], long_path[PATH_MAX + 10];
    const char *paths[FILEWATCH_MAX_PATHS + 1] = {file, file, file, file, file};
    const char *longp[] = {long_path};
    int fds;

    ensure_fd0();
    fds = open_fds();
    assert_int_equal(filewatch_init(&w, paths, 0, 50, no_op, NULL, err, sizeof(err)), ERR_FAIL);
    assert_null(w);
    filewatch_stop(&w);
    assert_int_equal(
        filewatch_init(&w, paths, FILEWATCH_MAX_PATHS + 1, 50, no_op, NULL, err, sizeof(err)),
        ERR_FAIL);
    assert_contains(err, "cannot watch");
    assert_null(w);
    memset(long_path, 'a', sizeof(long_path) - 1);
    long_path[0] = '/';
    long_path[sizeof(long_path) - 1] = '\0';
    assert_int_equal(filewatch_init(&w, longp, 1, 50, no_op, NULL, err, sizeof(err)), ERR_TOO_BIG);
    assert_null(w);
    filewatch_stop(&w);
    assert_fd0_open();
    assert_int_equal(open_fds(), fds);
}

/* Init without a start, and a second stop: every descriptor init opened is
 * closed once, and nothing else. */
TEST(test_stop_undoes_init_without_start_and_twice)
{
    struct filewatch *w = NULL;
    char err[ERR_LEN];
    const char *paths[] = {file};
    int fds;

    write_file("one\n");
    ensure_fd0();
    fds = open_fds();
    assert_int_equal(filewatch_init(&w, paths, 1, 50, no_op, NULL, err, sizeof(err)), ERR_OK);
    assert_non_null(w);
    assert_true(open_fds() > fds);
    filewatch_stop(&w);
    assert_null(w);
    filewatch_stop(&w);
    assert_fd0_open();
    assert_int_equal(open_fds(), fds);
}

struct counter {
    atomic_int calls;
};

static void count(void *ctx)
{
    struct counter *c = ctx;

    atomic_fetch_add(&c->calls, 1);
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
    struct filewatch *w = NULL;
    struct counter c = {0};
    char err[ERR_LEN];
    const char *paths[] = {file};
    int fds = open_fds();

    write_file("one\n");
    assert_int_equal(filewatch_init(&w, paths, 1, 20, count, &c, err, sizeof(err)), ERR_OK);
    assert_int_equal(filewatch_start(w, err, sizeof(err)), ERR_OK);
    assert_int_equal(filewatch_start(w, err, sizeof(err)), ERR_FAIL); /* once only */
    write_file("two, and longer\n");
    assert_int_equal(wait_calls(&c, 1), 1);
    filewatch_stop(&w);
    assert_null(w);
    assert_int_equal(open_fds(), fds);
}

/* The paths are copied: the caller's strings may go away after init. */
TEST(test_paths_are_copied)
{
    struct filewatch *w = NULL;
    struct counter c = {0};
    char err[ERR_LEN], path[64];
    const char *paths[] = {path};

    write_file("one\n");
    snprintf(path, sizeof(path), "%s", file);
    assert_int_equal(filewatch_init(&w, paths, 1, 20, count, &c, err, sizeof(err)), ERR_OK);
    memset(path, 0, sizeof(path));
    assert_int_equal(filewatch_start(w, err, sizeof(err)), ERR_OK);
    write_file("two, and longer\n");
    assert_int_equal(wait_calls(&c, 1), 1);
    filewatch_stop(&w);
}

/* The watch used to record the identities when its thread started, after
 * the caller's first load: a version written during that load was taken for
 * the one loaded and never loaded. Now init records them, and the thread
 * compares first thing. */
TEST(test_a_change_between_init_and_start_is_called_back)
{
    struct filewatch *w = NULL;
    struct counter c = {0};
    char err[ERR_LEN];
    const char *paths[] = {file};

    write_file("one\n");
    assert_int_equal(filewatch_init(&w, paths, 1, 60000, count, &c, err, sizeof(err)), ERR_OK);
    /* The caller's first load reads "one"; meanwhile a new version lands. */
    write_file("version two, longer than the first\n");
    assert_int_equal(filewatch_start(w, err, sizeof(err)), ERR_OK);
    /* The interval is a minute: only the first comparison (or inotify) can
     * see it in time. */
    if (wait_calls(&c, 1) < 1)
        fail_msg("the version written before start was not called back within %d ms", WAIT_MS);
    filewatch_stop(&w);
}

/* Nothing changed since init: the thread does not call back for the
 * version the caller loaded itself. */
TEST(test_no_change_no_call)
{
    struct filewatch *w = NULL;
    struct counter c = {0};
    char err[ERR_LEN];
    const char *paths[] = {file};
    struct timespec settle = {0, 200 * 1000000L};

    write_file("one\n");
    assert_int_equal(filewatch_init(&w, paths, 1, 20, count, &c, err, sizeof(err)), ERR_OK);
    assert_int_equal(filewatch_start(w, err, sizeof(err)), ERR_OK);
    nanosleep(&settle, NULL); /* ten intervals */
    assert_int_equal(atomic_load(&c.calls), 0);
    filewatch_stop(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_on_null_is_a_no_op),
        cmocka_unit_test(test_failed_init_leaves_null_and_closes_nothing),
        cmocka_unit_test(test_stop_undoes_init_without_start_and_twice),
        cmocka_unit_test(test_a_change_is_seen),
        cmocka_unit_test(test_paths_are_copied),
        cmocka_unit_test(test_a_change_between_init_and_start_is_called_back),
        cmocka_unit_test(test_no_change_no_call),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
