/*
 * Unit tests for webhook/host/fsutil.c: a whole-file read, a file over the cap
 * (ERR_TOO_BIG, "larger than" the cap), and a read that runs out of memory,
 * which must say so (ERR_NOMEM, "out of memory") rather than blame the
 * file's size: the caller answers the two differently; the small reads of
 * kernel files, which refuse what is not a regular file (a FIFO would
 * block); and the whole-file replacement.
 */
#include "unit.h"
#include "support.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "base/err.h"
#include "host/fsutil.h"

static char path[] = "/tmp/test_fsutil.XXXXXX";

static int setup(void **state __attribute__((unused)))
{
    int fd = mkstemp(path);
    static const char text[] = "0123456789abcdef";

    if (fd < 0)
        return -1;
    if (write(fd, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1)) {
        close(fd);
        return -1;
    }
    return close(fd);
}

static int teardown(void **state __attribute__((unused)))
{
    return unlink(path);
}

TEST(test_read_whole_file)
{
    struct dynbuf b;
    char err[ERR_LEN] = "";

    dynbuf_init(&b, 16);
    assert_int_equal(fsutil_read(path, &b, err, sizeof(err)), ERR_OK);
    assert_string_equal(dynbuf_ptr(&b), "0123456789abcdef");
    dynbuf_free(&b);
}

TEST(test_read_over_the_cap_names_the_size)
{
    struct dynbuf b;
    char err[ERR_LEN] = "";

    dynbuf_init(&b, 15);
    assert_int_equal(fsutil_read(path, &b, err, sizeof(err)), ERR_TOO_BIG);
    assert_contains(err, "larger than 15 bytes");
    assert_contains(err, path);
    dynbuf_free(&b);
}

TEST(test_read_missing_file)
{
    struct dynbuf b;
    char err[ERR_LEN] = "";

    dynbuf_init(&b, 16);
    assert_int_equal(fsutil_read("/nonexistent/test_fsutil", &b, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "cannot open /nonexistent/test_fsutil");
    dynbuf_free(&b);
}

TEST(test_a_directory_cannot_be_read)
{
    struct dynbuf b;
    char err[ERR_LEN] = "";

    dynbuf_init(&b, 16);
    assert_int_equal(fsutil_read("/", &b, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "cannot read /");
    dynbuf_free(&b);
}

static char starved_err[ERR_LEN];

/* 0: ERR_NOMEM saying "out of memory"; 1: ERR_TOO_BIG or blamed the size;
 * 2: ERR_NOMEM with another message; 3: anything else. */
static int read_starved(void *arg)
{
    struct dynbuf b;
    int rc;

    (void)arg;
    dynbuf_init(&b, 1 << 20);
    rc = fsutil_read(path, &b, starved_err, sizeof(starved_err));
    if (rc == ERR_TOO_BIG || strstr(starved_err, "larger"))
        return 1;
    if (rc == ERR_NOMEM)
        return strstr(starved_err, "out of memory") ? 0 : 2;
    return 3;
}

TEST(test_read_out_of_memory_says_so)
{
    static const char *const why[] = {"reported as too large",
                                      "ERR_NOMEM without \"out of memory\"", "not ERR_NOMEM", NULL};

    support_assert_starved(read_starved, NULL, "reading without memory", why);
}

TEST(test_read_small_fits_and_exact)
{
    char buf[17], err[ERR_LEN] = "";
    size_t len = 99;

    assert_int_equal(fsutil_read_small(path, buf, sizeof(buf), &len, err, sizeof(err)), ERR_OK);
    assert_string_equal(buf, "0123456789abcdef");
    assert_int_equal(len, 16);
}

TEST(test_read_small_over_the_cap)
{
    char buf[16], err[ERR_LEN] = "";
    size_t len;

    assert_int_equal(fsutil_read_small(path, buf, sizeof(buf), &len, err, sizeof(err)),
                     ERR_TOO_BIG);
    assert_string_equal(buf, "0123456789abcde"); /* the first size - 1 bytes */
    assert_int_equal(len, 15);
    assert_contains(err, "is larger than 15 bytes");
    assert_contains(err, path);
}

TEST(test_read_small_refuses_fifo_and_directory)
{
    char dir[] = "/tmp/test_fsutil_dir.XXXXXX", fifo[PATH_MAX], buf[16], err[ERR_LEN] = "";
    size_t len;

    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* No writer: a blocking open would wait forever. */
    assert_int_equal(fsutil_read_small(fifo, buf, sizeof(buf), &len, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "not a regular file");
    assert_int_equal(fsutil_read_small(dir, buf, sizeof(buf), &len, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "not a regular file");
    assert_int_equal(fsutil_read_small("/nonexistent/x", buf, sizeof(buf), &len, err, sizeof(err)),
                     ERR_FAIL);
    assert_contains(err, "cannot open /nonexistent/x");
    assert_int_equal(unlink(fifo), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* serve's files: a FIFO in place of one is refused at once (a blocking open
 * waited for a writer for ever), a regular file is read whole. */
TEST(test_read_regular_refuses_fifo)
{
    char dir[] = "/tmp/test_fsutil_dir.XXXXXX", fifo[PATH_MAX], err[ERR_LEN] = "";
    struct dynbuf b;

    dynbuf_init(&b, 64);
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(fsutil_read_regular(fifo, &b, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, fifo);
    assert_contains(err, "not a regular file");
    assert_int_equal(fsutil_read_regular(dir, &b, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "not a regular file");
    assert_int_equal(fsutil_read_regular(path, &b, err, sizeof(err)), ERR_OK);
    assert_string_equal(dynbuf_ptr(&b), "0123456789abcdef");
    dynbuf_free(&b);
    assert_int_equal(unlink(fifo), 0);
    assert_int_equal(rmdir(dir), 0);
}

TEST(test_write_replace)
{
    char dir[] = "/tmp/test_fsutil_dir.XXXXXX", file[PATH_MAX], bad[PATH_MAX], buf[64];
    char err[ERR_LEN] = "";
    struct stat st;
    size_t len;

    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/out.conf", dir);
    assert_int_equal(fsutil_write_replace(file, "A=1\n", 4, 0644, err, sizeof(err)), ERR_OK);
    assert_int_equal(fsutil_write_replace(file, "B=2\n", 4, 0644, err, sizeof(err)), ERR_OK);
    assert_int_equal(fsutil_read_small(file, buf, sizeof(buf), &len, err, sizeof(err)), ERR_OK);
    assert_string_equal(buf, "B=2\n");
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    snprintf(bad, sizeof(bad), "%s/missing/out.conf", dir);
    assert_int_equal(fsutil_write_replace(bad, "A=1\n", 4, 0644, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "cannot create a file beside");
    assert_int_equal(unlink(file), 0);
    assert_int_equal(rmdir(dir), 0); /* no temporary file left behind */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_whole_file),
        cmocka_unit_test(test_read_over_the_cap_names_the_size),
        cmocka_unit_test(test_read_missing_file),
        cmocka_unit_test(test_a_directory_cannot_be_read),
        cmocka_unit_test(test_read_out_of_memory_says_so),
        cmocka_unit_test(test_read_small_fits_and_exact),
        cmocka_unit_test(test_read_small_over_the_cap),
        cmocka_unit_test(test_read_small_refuses_fifo_and_directory),
        cmocka_unit_test(test_read_regular_refuses_fifo),
        cmocka_unit_test(test_write_replace),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
