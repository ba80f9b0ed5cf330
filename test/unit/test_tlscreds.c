/*
 * Unit tests for webhook/wire/tlscreds.c, on pairs made by certs_generate(): a
 * load of the bytes already serving loads nothing, a new pair does, a bad
 * one leaves the current pair, and a pair taken by a user outlives its
 * replacement until released (ASan and valgrind see a use after free or a
 * pair that is never freed); each pair carries the generation it was made
 * current with; stop undoes init, also twice.
 */
#include "unit.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wire/certs.h"
#include "base/err.h"
#include "wire/tlscreds.h"

struct fixture {
    char root[64];
    char a_crt[112], a_key[112], b_crt[112], b_key[112], live_crt[112], live_key[112];
    struct tlscreds *c;
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);

    assert_non_null(fx);
    support_two_cert_sets(fx->root, sizeof fx->root, "test_tlscreds");
    snprintf(fx->a_crt, sizeof fx->a_crt, "%s/a/tls.crt", fx->root);
    snprintf(fx->a_key, sizeof fx->a_key, "%s/a/tls.key", fx->root);
    snprintf(fx->b_crt, sizeof fx->b_crt, "%s/b/tls.crt", fx->root);
    snprintf(fx->b_key, sizeof fx->b_key, "%s/b/tls.key", fx->root);
    snprintf(fx->live_crt, sizeof fx->live_crt, "%s/live.crt", fx->root);
    snprintf(fx->live_key, sizeof fx->live_key, "%s/live.key", fx->root);
    support_copy_file(fx->a_crt, fx->live_crt);
    support_copy_file(fx->a_key, fx->live_key);
    assert_int_equal(tlscreds_init(&fx->c, NULL, 0), ERR_OK);
    assert_non_null(fx->c);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    tlscreds_stop(&fx->c);
    assert_null(fx->c);
    tlscreds_stop(&fx->c); /* a no-op the second time */
    support_remove_tree(fx->root);
    free(fx);
    return 0;
}

enum load_outcome { LOADED, UNCHANGED, FAILED };

/* Loads the live files and tells what happened, checking that the result
 * and the changed flag agree. */
static enum load_outcome load_live(struct fixture *fx, char *err, size_t errlen)
{
    int changed = -1;
    int rc = tlscreds_load(fx->c, fx->live_crt, fx->live_key, &changed, err, errlen);

    if (rc != ERR_OK) {
        assert_true(rc < 0);
        assert_int_equal(changed, 0);
        return FAILED;
    }
    assert_true(changed == 0 || changed == 1);
    return changed ? LOADED : UNCHANGED;
}

static void test_nothing_before_the_first_load(void **state)
{
    struct fixture *fx = *state;

    assert_null(tlscreds_acquire(fx->c));
    assert_int_equal(tlscreds_generation(fx->c), 0);
    tlscreds_release(NULL);
}

static void test_same_bytes_load_nothing(void **state)
{
    struct fixture *fx = *state;
    const struct tlscreds_pair *first, *again;
    char err[ERR_LEN] = "";

    assert_int_equal(load_live(fx, err, sizeof err), LOADED);
    assert_int_equal(tlscreds_generation(fx->c), 1);
    first = tlscreds_acquire(fx->c);
    assert_non_null(first);
    assert_true(first->serial[0] != '\0');
    for (int i = 0; i < 100; i++)
        assert_int_equal(load_live(fx, err, sizeof err), UNCHANGED);
    /* Rewritten with the same bytes: still the same pair. */
    support_copy_file(fx->a_crt, fx->live_crt);
    assert_int_equal(load_live(fx, err, sizeof err), UNCHANGED);
    assert_int_equal(tlscreds_generation(fx->c), 1);
    again = tlscreds_acquire(fx->c);
    assert_ptr_equal(again, first);
    tlscreds_release(again);
    tlscreds_release(first);
}

/* The pair a user holds stays whole after it is replaced; a new user gets
 * the new pair. */
static void test_replaced_pair_lives_while_held(void **state)
{
    struct fixture *fx = *state;
    const struct tlscreds_pair *old, *now;
    char err[ERR_LEN] = "", serial[80];

    assert_int_equal(load_live(fx, err, sizeof err), LOADED);
    old = tlscreds_acquire(fx->c);
    snprintf(serial, sizeof serial, "%s", old->serial);
    support_copy_file(fx->b_crt, fx->live_crt);
    support_copy_file(fx->b_key, fx->live_key);
    assert_int_equal(load_live(fx, err, sizeof err), LOADED);
    assert_int_equal(tlscreds_generation(fx->c), 2);
    now = tlscreds_acquire(fx->c);
    assert_ptr_not_equal(now, old);
    assert_string_not_equal(now->serial, serial);
    assert_string_equal(old->serial, serial); /* a use after free under ASan if freed */
    assert_true(old->chain_len >= 1 && old->key != NULL);
    tlscreds_release(old); /* the last reference: freed here */
    /* Back to the first files: new bytes for the current pair, so a load. */
    support_copy_file(fx->a_crt, fx->live_crt);
    support_copy_file(fx->a_key, fx->live_key);
    assert_int_equal(load_live(fx, err, sizeof err), LOADED);
    assert_int_equal(tlscreds_generation(fx->c), 3);
    tlscreds_release(now);
}

static void test_rejected_pair_keeps_the_current(void **state)
{
    struct fixture *fx = *state;
    const struct tlscreds_pair *before, *after;
    char err[ERR_LEN] = "";

    assert_int_equal(load_live(fx, err, sizeof err), LOADED);
    before = tlscreds_acquire(fx->c);
    support_copy_file(fx->b_crt, fx->live_crt); /* with a's key: a mismatch */
    assert_int_equal(load_live(fx, err, sizeof err), FAILED);
    assert_true(err[0] != '\0');
    assert_int_equal(tlscreds_generation(fx->c), 1);
    after = tlscreds_acquire(fx->c);
    assert_ptr_equal(after, before);
    /* The files back as they were: unchanged, nothing loaded. */
    support_copy_file(fx->a_crt, fx->live_crt);
    assert_int_equal(load_live(fx, err, sizeof err), UNCHANGED);
    tlscreds_release(after);
    tlscreds_release(before);
}

/* Bytes moved from one file to the other are another pair. */
static void test_digest_keeps_the_files_apart(void **state)
{
    struct fixture *fx = *state;
    char err[ERR_LEN] = "";

    assert_int_equal(load_live(fx, err, sizeof err), LOADED);
    support_copy_file(fx->a_key, fx->live_crt);
    support_copy_file(fx->a_crt, fx->live_key);
    assert_int_equal(load_live(fx, err, sizeof err), FAILED);
    assert_int_equal(tlscreds_generation(fx->c), 1);
}

/* The generation a pair carries is the count when it was made current, so
 * a log line about a pair cannot name a later load's number. */
static void test_pair_carries_its_generation(void **state)
{
    struct fixture *fx = *state;
    const struct tlscreds_pair *first, *second;
    char err[ERR_LEN] = "";

    assert_int_equal(load_live(fx, err, sizeof err), LOADED);
    first = tlscreds_acquire(fx->c);
    assert_int_equal(first->generation, 1);
    support_copy_file(fx->b_crt, fx->live_crt);
    support_copy_file(fx->b_key, fx->live_key);
    assert_int_equal(load_live(fx, err, sizeof err), LOADED);
    second = tlscreds_acquire(fx->c);
    assert_int_equal(second->generation, 2);
    assert_int_equal(tlscreds_generation(fx->c), 2);
    assert_int_equal(first->generation, 1);
    tlscreds_release(first);
    tlscreds_release(second);
}

static void test_missing_file_is_an_error(void **state)
{
    struct fixture *fx = *state;
    char err[ERR_LEN] = "", missing[160];

    snprintf(missing, sizeof missing, "%s/none.crt", fx->root);
    assert_int_equal(tlscreds_load(fx->c, missing, fx->live_key, NULL, err, sizeof err), ERR_FAIL);
    assert_contains(err, "none.crt");
    assert_null(tlscreds_acquire(fx->c));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nothing_before_the_first_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_bytes_load_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replaced_pair_lives_while_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejected_pair_keeps_the_current, setup, teardown),
        cmocka_unit_test_setup_teardown(test_digest_keeps_the_files_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pair_carries_its_generation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file_is_an_error, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
