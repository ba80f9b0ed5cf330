/*
 * Unit tests for webhook/kube/kubeapi.c, the failures that happen before any
 * connection: a missing or overlong setting, a token file that cannot be
 * read or is over its cap, a URL too long. Each has its own code (ERR_FAIL
 * or ERR_TOO_BIG) and a message naming what is at fault. The exchanges
 * themselves run against a fake API server in test/e2e.
 */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "kube/kubeapi.h"

static char token_path[] = "/tmp/test_kubeapi.XXXXXX";

/* A token file of n bytes of 't'. */
static void write_token(size_t n)
{
    FILE *f = fopen(token_path, "w");

    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(fputc('t', f), 't');
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state __attribute__((unused)))
{
    int fd = mkstemp(token_path);

    return fd < 0 ? -1 : close(fd);
}

static int teardown(void **state __attribute__((unused)))
{
    return unlink(token_path);
}

TEST(test_init_keeps_the_url_and_stop_is_safe)
{
    struct kubeapi *k = NULL;
    char err[ERR_LEN] = "";

    assert_int_equal(
        kubeapi_init(&k, "https://127.0.0.1:6443/?x", "/ca", token_path, err, sizeof(err)), ERR_OK);
    assert_non_null(k);
    assert_string_equal(kubeapi_base_url(k), "https://127.0.0.1:6443");
    kubeapi_stop(&k);
    assert_null(k);
    kubeapi_stop(&k); /* a no-op the second time */
}

/* A failed init leaves *out NULL, never half-made state. */
static void init_fails(const char *url, const char *ca, const char *token, int code,
                       const char *msg)
{
    struct kubeapi *k = (struct kubeapi *)&k; /* not NULL: init must clear it */
    char err[ERR_LEN] = "";

    assert_int_equal(kubeapi_init(&k, url, ca, token, err, sizeof(err)), code);
    assert_null(k);
    assert_contains(err, msg);
}

TEST(test_init_missing_setting_is_a_failure)
{
    init_fails("https://h", "", token_path, ERR_FAIL, "--kube-ca is missing");
    init_fails("https://h", "/ca", NULL, ERR_FAIL, "--kube-token-file is missing");
    init_fails("http://h", "/ca", token_path, ERR_FAIL, "https://");
}

TEST(test_init_overlong_setting_is_too_big)
{
    struct kubeapi *k = NULL;
    char err[ERR_LEN] = "", url[257];

    memcpy(url, "https://", 8);
    memset(url + 8, 'h', sizeof(url) - 9);
    url[sizeof(url) - 1] = '\0';
    init_fails(url, "/ca", token_path, ERR_TOO_BIG, "--kube-api is longer than 255 bytes");
    url[sizeof(url) - 2] = '\0';
    assert_int_equal(kubeapi_init(&k, url, "/ca", token_path, err, sizeof(err)), ERR_OK);
    kubeapi_stop(&k);
}

TEST(test_init_in_cluster_needs_the_environment)
{
    struct kubeapi *k = (struct kubeapi *)&k;
    char err[ERR_LEN] = "";

    assert_int_equal(unsetenv("KUBERNETES_SERVICE_HOST"), 0);
    assert_int_equal(kubeapi_init_in_cluster(&k, err, sizeof(err)), ERR_FAIL);
    assert_null(k);
    assert_contains(err, "pass --kube-api");
}

/* What a call of method to path gives before it would connect (a watch
 * when on_line is set). */
static int call(const char *token_file, const char *method, const char *path,
                int (*on_line)(void *, const char *, size_t), char *err, size_t errlen)
{
    struct kubeapi *k = NULL;
    struct dynbuf body;
    long status = 0;
    int rc;

    assert_int_equal(kubeapi_init(&k, "https://127.0.0.1:1", "/ca", token_file, err, errlen),
                     ERR_OK);
    dynbuf_init(&body, 1024);
    rc = kubeapi_call(k,
                      &(struct kubeapi_request){.method = method,
                                                .path = path,
                                                .body = strcmp(method, "GET") ? "{}" : NULL,
                                                .len = strcmp(method, "GET") ? 2 : 0,
                                                .timeout_ms = 1000,
                                                .on_line = on_line,
                                                .max_line = 1024},
                      &body, &status, err, errlen);
    assert_int_equal(status, 0);
    dynbuf_free(&body);
    kubeapi_stop(&k);
    return rc;
}

static int get(const char *token_file, const char *path, char *err, size_t errlen)
{
    return call(token_file, "GET", path, NULL, err, errlen);
}

static int ignore_line(void *ctx, const char *line, size_t len)
{
    (void)ctx, (void)line, (void)len;
    return 0;
}

TEST(test_get_without_a_token_file_fails)
{
    char err[ERR_LEN] = "";

    assert_int_equal(get("/nonexistent/test_kubeapi", "/api", err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "cannot open /nonexistent/test_kubeapi");
}

TEST(test_get_with_a_token_over_the_cap_is_too_big)
{
    char err[ERR_LEN] = "";

    write_token(16385);
    assert_int_equal(get(token_path, "/api", err, sizeof(err)), ERR_TOO_BIG);
    assert_contains(err, "larger than 16384 bytes");
    assert_contains(err, token_path);
}

TEST(test_get_with_a_url_too_long_is_too_big)
{
    char err[ERR_LEN] = "", path[1100];

    write_token(16);
    path[0] = '/';
    memset(path + 1, 'p', sizeof(path) - 2);
    path[sizeof(path) - 1] = '\0';
    assert_int_equal(get(token_path, path, err, sizeof(err)), ERR_TOO_BIG);
    assert_contains(err, "longer than 1023 bytes");
}

/* The writes and a watch read the token and build the URL as GET does,
 * before any connection (the exchanges run against the fake API in
 * test/e2e). */
TEST(test_writes_and_watch_fail_before_connecting_as_get_does)
{
    char err[ERR_LEN] = "", path[1100];

    assert_int_equal(call("/nonexistent/test_kubeapi", "POST", "/apis/x", NULL, err, sizeof(err)),
                     ERR_FAIL);
    assert_contains(err, "cannot open /nonexistent/test_kubeapi");
    assert_int_equal(
        call("/nonexistent/test_kubeapi", "GET", "/api", ignore_line, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "cannot open /nonexistent/test_kubeapi");
    write_token(16);
    path[0] = '/';
    memset(path + 1, 'p', sizeof(path) - 2);
    path[sizeof(path) - 1] = '\0';
    assert_int_equal(call(token_path, "PATCH", path, NULL, err, sizeof(err)), ERR_TOO_BIG);
    assert_contains(err, "longer than 1023 bytes");
    assert_int_equal(call(token_path, "PUT", path, NULL, err, sizeof(err)), ERR_TOO_BIG);
    assert_int_equal(call(token_path, "GET", path, ignore_line, err, sizeof(err)), ERR_TOO_BIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_keeps_the_url_and_stop_is_safe),
        cmocka_unit_test(test_init_missing_setting_is_a_failure),
        cmocka_unit_test(test_init_overlong_setting_is_too_big),
        cmocka_unit_test(test_init_in_cluster_needs_the_environment),
        cmocka_unit_test(test_get_without_a_token_file_fails),
        cmocka_unit_test(test_get_with_a_token_over_the_cap_is_too_big),
        cmocka_unit_test(test_get_with_a_url_too_long_is_too_big),
        cmocka_unit_test(test_writes_and_watch_fail_before_connecting_as_get_does),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
