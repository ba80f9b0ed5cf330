/*
 * Unit tests for webhook/store.c: a rejected version is logged one problem a
 * line, and a problem line too long for the log is cut between two UTF-8
 * characters, never inside one (the log must stay valid UTF-8 JSON).
 */
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "store.h"
#include "utf8.h"

/* Publishes text through a store whose log goes to a pipe; returns what was
 * logged in out (NUL-terminated) and the publish's result. */
static int publish_logged(const char *text, char *out, size_t outlen)
{
    struct log lg = {.min = LOG_DEBUG};
    struct store s;
    int fds[2], rc;
    ssize_t n;

    assert_int_equal(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    lg.fd = fds[1];
    assert_int_equal(store_init(&s, &lg), 0);
    rc = store_publish(&s, text, strlen(text), "test");
    store_stop(&s);
    close(fds[1]);
    n = read(fds[0], out, outlen - 1);
    close(fds[0]);
    assert_true(n > 0);
    out[n] = '\0';
    return rc;
}

/* A key of 'a' then 300 'é' makes an "unknown field" problem longer than the
 * 511 bytes a log line keeps, with the cut at an odd offset inside an 'é'. */
TEST(test_long_problem_is_cut_between_characters)
{
    char text[1024], logged[16384];
    size_t n = 0;
    const char *problem;

    n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"a");
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "\xc3\xa9");
    snprintf(text + n, sizeof(text) - n, "\":1,\"profiles\":[{\"name\":\"p\"}]}");
    assert_int_equal(publish_logged(text, logged, sizeof(logged)), -1);
    if (!utf8_valid(logged, strlen(logged)))
        fail_msg("the log is not valid UTF-8:\n%s", logged);
    problem = strstr(logged, "unknown field");
    assert_non_null(problem);
    /* Cut, not dropped: most of the key is there. */
    assert_true(strlen(problem) > 400);
}

/* A short problem is logged whole. */
TEST(test_short_problem_is_whole)
{
    char logged[16384];

    assert_int_equal(
        publish_logged("{\"zz\":1,\"profiles\":[{\"name\":\"p\"}]}", logged, sizeof(logged)), -1);
    assert_contains(logged, "unknown field \\\"zz\\\"\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_problem_is_cut_between_characters),
        cmocka_unit_test(test_short_problem_is_whole),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
