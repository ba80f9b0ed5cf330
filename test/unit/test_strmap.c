/*
 * Unit tests for webhook/base/strmap.c: keys found and not found, the first put
 * of a key winning, the cap, deletion that keeps every other key findable
 * (backward shift), and the work of a get counted in key comparisons: about
 * one per get among 30,000 keys, however they were named, where a scan would
 * compare thousands.
 */
#include "unit.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"

#define MANY 30000

static char (*many_keys(void))[32]
{
    char(*k)[32] = calloc(MANY, sizeof(*k));

    assert_non_null(k);
    for (int i = 0; i < MANY; i++)
        snprintf(k[i], sizeof(k[i]), "jobs/cm-%d", i);
    return k;
}

TEST(test_put_get)
{
    struct strmap m;
    int a = 1, b = 2;

    strmap_init(&m, 16, 42);
    assert_null(strmap_get(&m, "x", 1));
    assert_int_equal(strmap_put(&m, "ns/a", 4, &a), ERR_OK);
    assert_int_equal(strmap_put(&m, "ns/b", 4, &b), ERR_OK);
    assert_ptr_equal(strmap_get(&m, "ns/a", 4), &a);
    assert_ptr_equal(strmap_get(&m, "ns/b", 4), &b);
    assert_null(strmap_get(&m, "ns/c", 4));
    assert_null(strmap_get(&m, "ns/a", 3)); /* a prefix is another key */
    /* The first put wins, as the first of duplicate members in a scan. */
    assert_int_equal(strmap_put(&m, "ns/a", 4, &b), ERR_FAIL);
    assert_ptr_equal(strmap_get(&m, "ns/a", 4), &a);
    assert_int_equal(m.n, 2);
    strmap_free(&m);
    strmap_free(&m);
}

TEST(test_cap)
{
    struct strmap m;
    static const char *keys[] = {"a", "b", "c"};

    strmap_init(&m, 2, 0);
    assert_int_equal(strmap_put(&m, keys[0], 1, (void *)keys[0]), ERR_OK);
    assert_int_equal(strmap_put(&m, keys[1], 1, (void *)keys[1]), ERR_OK);
    assert_int_equal(strmap_put(&m, keys[2], 1, (void *)keys[2]), ERR_TOO_BIG);
    assert_null(strmap_get(&m, "c", 1));
    assert_int_equal(m.n, 2);
    strmap_free(&m);
}

/* Every other key stays findable after each deletion, among keys that
 * collide into runs (a map grown from a small one, half full). */
TEST(test_delete_keeps_the_others)
{
    char(*k)[32] = many_keys();
    struct strmap m;
    const int n = 2000;

    strmap_init(&m, n, 7);
    for (int i = 0; i < n; i++)
        assert_int_equal(strmap_put(&m, k[i], strlen(k[i]), k[i]), ERR_OK);
    for (int i = 0; i < n; i += 3)
        assert_int_equal(strmap_del(&m, k[i], strlen(k[i])), 1);
    assert_int_equal(strmap_del(&m, k[0], strlen(k[0])), 0);
    for (int i = 0; i < n; i++) {
        void *v = strmap_get(&m, k[i], strlen(k[i]));

        if (i % 3 == 0)
            assert_null(v);
        else
            assert_ptr_equal(v, k[i]);
    }
    assert_int_equal(m.n, n - (n + 2) / 3);
    /* The freed places take keys again. */
    for (int i = 0; i < n; i += 3)
        assert_int_equal(strmap_put(&m, k[i], strlen(k[i]), k[i]), ERR_OK);
    for (int i = 0; i < n; i++)
        assert_ptr_equal(strmap_get(&m, k[i], strlen(k[i])), k[i]);
    strmap_free(&m);
    free(k);
}

/* 30,000 keys, each looked up 10 times: the comparisons stay near one per
 * get (a scan compares 15,000 on average). */
TEST(test_gets_compare_about_one_key)
{
    char(*k)[32] = many_keys();
    struct strmap m;
    unsigned long long before;

    strmap_init(&m, MANY, 12345);
    for (int i = 0; i < MANY; i++)
        assert_int_equal(strmap_put(&m, k[i], strlen(k[i]), k[i]), ERR_OK);
    before = m.compares;
    for (int round = 0; round < 10; round++)
        for (int i = 0; i < MANY; i++)
            assert_ptr_equal(strmap_get(&m, k[i], strlen(k[i])), k[i]);
    assert_true(m.compares - before <= 10ull * MANY * 11 / 10);
    before = m.compares;
    for (int i = 0; i < MANY; i++)
        assert_null(strmap_get(&m, "jobs/none", 9));
    assert_true(m.compares - before <= MANY / 10);
    assert_true(strmap_bytes(&m) <= 4 * MANY * sizeof(struct strmap_slot));
    strmap_free(&m);
    free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_delete_keeps_the_others),
        cmocka_unit_test(test_gets_compare_about_one_key),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
