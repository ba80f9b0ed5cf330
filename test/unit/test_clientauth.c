/*
 * Unit tests for webhook/wire/clientauth.c without a TLS session (the e2e tests
 * judge real clients): the --client-names list and its mistakes, a CA file
 * that is missing or holds no certificate, the CAs counted, the same bytes
 * loading nothing, and a bad rewrite keeping the current CAs. Stop undoes
 * init, also twice; a refusal count starts at 0.
 */
#include "unit.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire/certs.h"
#include "wire/clientauth.h"
#include "base/err.h"

struct fixture {
    char root[64];
    char ca_a[112], ca_b[112], live[112];
};

/* Writes the files' bytes, one after the other, into to. */
static void write_concat(const char *to, const char *a, const char *b)
{
    const char *from[] = {a, b};
    FILE *out = fopen(to, "wb");
    char buf[8192];
    size_t n;

    assert_non_null(out);
    for (int i = 0; i < 2 && from[i]; i++) {
        FILE *in = fopen(from[i], "rb");

        assert_non_null(in);
        while ((n = fread(buf, 1, sizeof buf, in)) > 0)
            assert_int_equal(fwrite(buf, 1, n, out), n);
        fclose(in);
    }
    assert_int_equal(fclose(out), 0);
}

static void write_text(const char *to, const char *text)
{
    FILE *out = fopen(to, "wb");

    assert_non_null(out);
    fputs(text, out);
    assert_int_equal(fclose(out), 0);
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);

    assert_non_null(fx);
    support_two_cert_sets(fx->root, sizeof fx->root, "test_clientauth");
    snprintf(fx->ca_a, sizeof fx->ca_a, "%s/a/ca.crt", fx->root);
    snprintf(fx->ca_b, sizeof fx->ca_b, "%s/b/ca.crt", fx->root);
    snprintf(fx->live, sizeof fx->live, "%s/client-ca.crt", fx->root);
    write_concat(fx->live, fx->ca_a, NULL);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    support_remove_tree(fx->root);
    free(fx);
    return 0;
}

static void test_load_counts_and_reloads(void **state)
{
    struct fixture *fx = *state;
    struct clientauth *a = NULL;
    char err[ERR_LEN] = "";
    unsigned count = 0;
    int changed = -1;

    assert_int_equal(clientauth_init(&a, fx->live, NULL, err, sizeof err), ERR_OK);
    assert_non_null(a);
    assert_int_equal(clientauth_refused(a, CLIENTAUTH_NO_CERT), 0);
    /* The same bytes: nothing loaded. */
    assert_int_equal(clientauth_load(a, &changed, &count, err, sizeof err), ERR_OK);
    assert_int_equal(changed, 0);
    assert_int_equal(count, 1);
    /* Two CAs in one file, for a rotation. */
    write_concat(fx->live, fx->ca_a, fx->ca_b);
    assert_int_equal(clientauth_load(a, &changed, &count, err, sizeof err), ERR_OK);
    assert_int_equal(changed, 1);
    assert_int_equal(count, 2);
    /* A bad rewrite keeps them. */
    write_text(fx->live, "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
    assert_int_equal(clientauth_load(a, &changed, &count, err, sizeof err), ERR_FAIL);
    assert_int_equal(changed, 0);
    assert_int_equal(count, 2);
    assert_contains(err, "client-ca.crt");
    clientauth_stop(&a);
    assert_null(a);
    clientauth_stop(&a); /* a no-op the second time */
}

static void test_bad_files_fail_init(void **state)
{
    struct fixture *fx = *state;
    struct clientauth *a = NULL;
    char err[ERR_LEN] = "", path[160];

    snprintf(path, sizeof path, "%s/none.crt", fx->root);
    assert_int_equal(clientauth_init(&a, path, NULL, err, sizeof err), ERR_FAIL);
    assert_null(a);
    assert_contains(err, "none.crt");
    snprintf(path, sizeof path, "%s/empty.crt", fx->root);
    write_text(path, "no PEM here\n");
    assert_int_equal(clientauth_init(&a, path, NULL, err, sizeof err), ERR_FAIL);
    assert_null(a);
    assert_contains(err, "empty.crt");
    assert_contains(err, "PEM CA certificates");
}

static void test_names_list(void **state)
{
    struct fixture *fx = *state;
    const char *bad[] = {",a", "a,,b", "a,", ""};
    char err[ERR_LEN], many[40 * 3 + 1] = "", longest[CLIENTAUTH_NAME_MAX + 2];
    struct clientauth *a = NULL;

    assert_int_equal(clientauth_init(&a, fx->live, "kube-apiserver,x.svc", err, sizeof err),
                     ERR_OK);
    clientauth_stop(&a);
    for (size_t i = 0; i < 3; i++) {
        err[0] = '\0';
        assert_int_equal(clientauth_init(&a, fx->live, bad[i], err, sizeof err), ERR_FAIL);
        assert_null(a);
        assert_contains(err, "--client-names");
    }
    /* "" is no list at all: any name. */
    assert_int_equal(clientauth_init(&a, fx->live, bad[3], err, sizeof err), ERR_OK);
    clientauth_stop(&a);
    for (int i = 0; i <= CLIENTAUTH_MAX_NAMES; i++)
        strcat(many, i ? ",n" : "n");
    assert_int_equal(clientauth_init(&a, fx->live, many, err, sizeof err), ERR_FAIL);
    assert_contains(err, "at most");
    memset(longest, 'a', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    assert_int_equal(clientauth_init(&a, fx->live, longest, err, sizeof err), ERR_FAIL);
    longest[sizeof longest - 2] = '\0';
    assert_int_equal(clientauth_init(&a, fx->live, longest, err, sizeof err), ERR_OK);
    clientauth_stop(&a);
}

static void test_verdict_names(void **state)
{
    (void)state;
    assert_string_equal(clientauth_verdict_name(CLIENTAUTH_NO_CERT), "no-certificate");
    assert_string_equal(clientauth_verdict_name(CLIENTAUTH_UNTRUSTED), "untrusted");
    assert_string_equal(clientauth_verdict_name(CLIENTAUTH_NAME), "name");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_load_counts_and_reloads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_files_fail_init, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names_list, setup, teardown),
        cmocka_unit_test(test_verdict_names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
