/*
 * Unit tests for webhook/decimal.c, against snprintf over the edges of the
 * range and a sweep of values.
 */
#include "unit.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "decimal.h"

static void check_ll(long long v)
{
    char want[32], got[DECIMAL_MAX + 1];
    int n = snprintf(want, sizeof(want), "%lld", v);
    size_t len = decimal_ll(got, v);

    assert_true(len <= DECIMAL_MAX);
    got[len] = '\0';
    assert_int_equal(len, (size_t)n);
    assert_string_equal(got, want);
}

TEST(test_ll_matches_printf_at_the_edges)
{
    const long long edges[] = {
        0,       1,       -1,          9, 10, -10, 99, 100, LLONG_MAX, LLONG_MIN, LLONG_MIN + 1,
        INT_MAX, INT_MIN, 1000000007LL};

    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
        check_ll(edges[i]);
}

TEST(test_ll_matches_printf_over_a_sweep)
{
    for (long long v = 1; v < LLONG_MAX / 3; v = v * 3 + 1) {
        check_ll(v);
        check_ll(-v);
    }
}

TEST(test_pad_writes_exactly_width_digits)
{
    char buf[8];

    memset(buf, 'x', sizeof(buf));
    decimal_pad(buf, 7, 3);
    assert_memory_equal(buf, "007x", 4);
    decimal_pad(buf, 2026, 4);
    assert_memory_equal(buf, "2026", 4);
    decimal_pad(buf, 0, 2);
    assert_memory_equal(buf, "00", 2);
    memset(buf, 'x', sizeof(buf));
    decimal_pad(buf, 59, 2);
    assert_memory_equal(buf, "59x", 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ll_matches_printf_at_the_edges),
        cmocka_unit_test(test_ll_matches_printf_over_a_sweep),
        cmocka_unit_test(test_pad_writes_exactly_width_digits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
