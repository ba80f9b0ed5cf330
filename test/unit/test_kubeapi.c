/*
 * Unit tests for webhook/kubeapi.c, the failures that happen before any
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

#include "dynbuf.h"
#include "kubeapi.h"

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

TEST(test_init_keeps_the_settings)
{
    struct kubeapi k;
    char err[ERR_LEN] = "";

    assert_int_equal(
        kubeapi_init(&k, "https://127.0.0.1:6443/?x", "/ca", token_path, err, sizeof(err)), ERR_OK);
    assert_string_equal(k.base_url, "https://127.0.0.1:6443");
    assert_string_equal(k.ca_file, "/ca");
    assert_string_equal(k.token_file, token_path);
}

TEST(test_init_missing_setting_is_a_failure)
{
    struct kubeapi k;
    char err[ERR_LEN] = "";

    assert_int_equal(kubeapi_init(&k, "https://h", "", token_path, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "--kube-ca is missing");
    assert_int_equal(kubeapi_init(&k, "https://h", "/ca", NULL, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "--kube-token-file is missing");
    assert_int_equal(kubeapi_init(&k, "http://h", "/ca", token_path, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "https://");
}

TEST(test_init_overlong_setting_is_too_big)
{
    struct kubeapi k;
    char err[ERR_LEN] = "", url[sizeof(k.base_url) + 1];

    memcpy(url, "https://", 8);
    memset(url + 8, 'h', sizeof(url) - 9);
    url[sizeof(url) - 1] = '\0';
    assert_int_equal(kubeapi_init(&k, url, "/ca", token_path, err, sizeof(err)), ERR_TOO_BIG);
    assert_contains(err, "--kube-api is longer than 255 bytes");
    url[sizeof(url) - 2] = '\0';
    assert_int_equal(kubeapi_init(&k, url, "/ca", token_path, err, sizeof(err)), ERR_OK);
}

TEST(test_init_in_cluster_needs_the_environment)
{
    struct kubeapi k;
    char err[ERR_LEN] = "";

    assert_int_equal(unsetenv("KUBERNETES_SERVICE_HOST"), 0);
    assert_int_equal(kubeapi_init_in_cluster(&k, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "pass --kube-api");
}

/* What kubeapi_get gives before it would connect. */
static int get(const char *token_file, const char *path, char *err, size_t errlen)
{
    struct kubeapi k;
    struct dynbuf body;
    long status = 0;
    int rc;

    assert_int_equal(kubeapi_init(&k, "https://127.0.0.1:1", "/ca", token_file, err, errlen),
                     ERR_OK);
    dynbuf_init(&body, 1024);
    rc = kubeapi_get(&k, path, 1000, NULL, &body, &status, err, errlen);
    assert_int_equal(status, 0);
    dynbuf_free(&body);
    return rc;
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

/* The writes read the token and build the URL as GET does, before any
 * connection (the exchanges run against the fake API in test/e2e). */
TEST(test_post_and_patch_fail_before_connecting_as_get_does)
{
    struct kubeapi k;
    struct dynbuf resp;
    char err[ERR_LEN] = "", path[1100];
    long status = 0;

    dynbuf_init(&resp, 4096);
    assert_int_equal(kubeapi_init(&k, "https://127.0.0.1:1", "/ca", "/nonexistent/test_kubeapi",
                                  err, sizeof(err)),
                     ERR_OK);
    assert_int_equal(
        kubeapi_post(&k, "/apis/x", "{}", 2, 1000, NULL, &resp, &status, err, sizeof(err)),
        ERR_FAIL);
    assert_contains(err, "cannot open /nonexistent/test_kubeapi");
    write_token(16);
    assert_int_equal(kubeapi_init(&k, "https://127.0.0.1:1", "/ca", token_path, err, sizeof(err)),
                     ERR_OK);
    path[0] = '/';
    memset(path + 1, 'p', sizeof(path) - 2);
    path[sizeof(path) - 1] = '\0';
    assert_int_equal(
        kubeapi_merge_patch(&k, path, "{}", 2, 1000, NULL, &resp, &status, err, sizeof(err)),
        ERR_TOO_BIG);
    assert_contains(err, "longer than 1023 bytes");
    assert_int_equal(status, 0);
    dynbuf_free(&resp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_keeps_the_settings),
        cmocka_unit_test(test_init_missing_setting_is_a_failure),
        cmocka_unit_test(test_init_overlong_setting_is_too_big),
        cmocka_unit_test(test_init_in_cluster_needs_the_environment),
        cmocka_unit_test(test_get_without_a_token_file_fails),
        cmocka_unit_test(test_get_with_a_token_over_the_cap_is_too_big),
        cmocka_unit_test(test_get_with_a_url_too_long_is_too_big),
        cmocka_unit_test(test_post_and_patch_fail_before_connecting_as_get_does),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
