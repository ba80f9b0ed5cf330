/*
 * Unit tests for webhook/base/decimal.c, against snprintf over the edges of the
 * range and a sweep of values.
 */
#include "unit.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/decimal.h"

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

/* decimal_parse_ll() is Go's strconv.ParseInt(s, 10, 64), which Kubernetes
 * uses for Gt and Lt: a sign, digits, int64 range, nothing else. */
TEST(test_parse_ll_as_go_parse_int)
{
    static const struct {
        const char *s;
        int ok;
        long long v;
    } cases[] = {
        {"0", 1, 0},
        {"-0", 1, 0},
        {"+0", 1, 0},
        {"7", 1, 7},
        {"+7", 1, 7},
        {"-7", 1, -7},
        {"007", 1, 7},
        {"9223372036854775807", 1, LLONG_MAX},
        {"-9223372036854775808", 1, LLONG_MIN},
        {"00000000000000000000000009223372036854775807", 1, LLONG_MAX},
        {"9223372036854775808", 0, 0},
        {"-9223372036854775809", 0, 0},
        {"99999999999999999999999", 0, 0},
        {"", 0, 0},
        {"+", 0, 0},
        {"-", 0, 0},
        {"+-1", 0, 0},
        {"--1", 0, 0},
        {" 1", 0, 0},
        {"1 ", 0, 0},
        {"\t1", 0, 0},
        {"1\n", 0, 0},
        {"0x10", 0, 0},
        {"1_000", 0, 0},
        {"1e3", 0, 0},
        {"1.0", 0, 0},
        {"\xd9\xa3", 0, 0}, /* ARABIC-INDIC DIGIT THREE */
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long long v = 12345;
        int rc = decimal_parse_ll(cases[i].s, &v);

        if (cases[i].ok ? rc != ERR_OK || v != cases[i].v : rc != ERR_FAIL || v != 12345)
            fail_msg("\"%s\": rc %d, value %lld", cases[i].s, rc, v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ll_matches_printf_at_the_edges),
        cmocka_unit_test(test_ll_matches_printf_over_a_sweep),
        cmocka_unit_test(test_pad_writes_exactly_width_digits),
        cmocka_unit_test(test_parse_ll_as_go_parse_int),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
