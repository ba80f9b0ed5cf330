/*
 * Unit tests for webhook/base/quantity.c against the quantity grammar documented
 * in k8s.io/apimachinery/pkg/api/resource (quantity.go):
 *   <quantity>        ::= <signedNumber><suffix>
 *   <signedNumber>    ::= <number> | <sign><number>
 *   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
 *   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
 *   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
 *   <decimalSI>       ::= m | "" | k | M | G | T | P | E   (plus n and u)
 *   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>
 * Where that comment and Go's parser differ (the parser takes only digits
 * after "e"; it is laxer about a missing number, as in "Gi"), the stricter
 * answer is expected: a quantity the webhook accepts in a profile must be one
 * the apiserver accepts in the patched pod, the converse does not matter.
 */
#include "unit.h"

#include "base/err.h"
#include "base/quantity.h"

static void assert_valid(const char *s)
{
    if (!quantity_valid(s))
        fail_msg("\"%s\" should be a valid quantity", s);
}

static void assert_invalid(const char *s)
{
    if (quantity_valid(s))
        fail_msg("\"%s\" should not be a valid quantity", s);
}

TEST(test_plain_integers)
{
    assert_valid("1");
    assert_valid("0");
    assert_valid("8");
    assert_valid("1000000");
}

TEST(test_decimal_si_suffixes)
{
    assert_valid("500m");
    assert_valid("1k");
    assert_valid("2M");
    assert_valid("3G");
    assert_valid("4T");
    assert_valid("5P");
    assert_valid("6E");
    assert_valid("7n");
    assert_valid("8u");
}

TEST(test_binary_si_suffixes)
{
    assert_valid("1Ki");
    assert_valid("64Gi");
    assert_valid("2Mi");
    assert_valid("1Ti");
    assert_valid("1Pi");
    assert_valid("1Ei");
}

TEST(test_decimal_exponent)
{
    assert_valid("1e3");
    assert_valid("1E3");
    assert_valid("1e-3");
    assert_valid("1e+3");
    assert_valid("1.5e2");
}

TEST(test_fractions)
{
    assert_valid("1.5");
    assert_valid(".5");
    assert_valid("1.");
    assert_valid("0.25Gi");
}

TEST(test_signs)
{
    assert_valid("+1");
    assert_valid("-1");
    assert_valid("-1.5Gi");
}

TEST(test_invalid_words_and_units)
{
    assert_invalid("abc");
    assert_invalid("1KB");
    assert_invalid("1K"); /* kilo is lower-case k; K only in Ki */
    assert_invalid("1gi");
    assert_invalid("1Gib");
    assert_invalid("1mi");
}

TEST(test_invalid_empty)
{
    assert_invalid("");
}

TEST(test_invalid_number_shapes)
{
    assert_invalid("1.2.3");
    assert_invalid(".");
    assert_invalid("+");
    assert_invalid("-");
    assert_invalid("--1");
    assert_invalid("+-1");
}

TEST(test_invalid_suffix_without_number)
{
    assert_invalid("Gi");
    assert_invalid("e3");
    assert_invalid("m");
}

TEST(test_invalid_exponent_shapes)
{
    assert_invalid("1e");
    assert_invalid("1e+");
    assert_invalid("1ee3");
    assert_invalid("1e3Gi");
    assert_invalid("1e1.5");
}

TEST(test_invalid_whitespace)
{
    assert_invalid(" 1");
    assert_invalid("1 ");
    assert_invalid("1 Gi");
}

TEST(test_whole_reads_plain_numbers)
{
    long long v = -1;

    assert_int_equal(quantity_whole("8", &v), ERR_OK);
    assert_int_equal(v, 8);
    assert_int_equal(quantity_whole("0", &v), ERR_OK);
    assert_int_equal(v, 0);
    assert_int_equal(quantity_whole("1024", &v), ERR_OK);
    assert_int_equal(v, 1024);
}

TEST(test_whole_rejects_non_plain_forms)
{
    long long v = 77;

    assert_int_equal(quantity_whole("", &v), ERR_FAIL);
    assert_int_equal(quantity_whole("1.5", &v), ERR_FAIL);
    assert_int_equal(quantity_whole("-1", &v), ERR_FAIL);
    assert_int_equal(quantity_whole("+1", &v), ERR_FAIL);
    assert_int_equal(quantity_whole("1k", &v), ERR_FAIL);
    assert_int_equal(quantity_whole("1e3", &v), ERR_FAIL);
    assert_int_equal(quantity_whole("500m", &v), ERR_FAIL);
    assert_int_equal(quantity_whole("abc", &v), ERR_FAIL);
    assert_int_equal(v, 77); /* untouched on failure */
}

TEST(test_whole_rejects_overflowing_numbers)
{
    long long v = 77;

    assert_int_equal(quantity_whole("99999999999999999999999999", &v), ERR_FAIL);
    assert_int_equal(v, 77);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_integers),
        cmocka_unit_test(test_decimal_si_suffixes),
        cmocka_unit_test(test_binary_si_suffixes),
        cmocka_unit_test(test_decimal_exponent),
        cmocka_unit_test(test_fractions),
        cmocka_unit_test(test_signs),
        cmocka_unit_test(test_invalid_words_and_units),
        cmocka_unit_test(test_invalid_empty),
        cmocka_unit_test(test_invalid_number_shapes),
        cmocka_unit_test(test_invalid_suffix_without_number),
        cmocka_unit_test(test_invalid_exponent_shapes),
        cmocka_unit_test(test_invalid_whitespace),
        cmocka_unit_test(test_whole_reads_plain_numbers),
        cmocka_unit_test(test_whole_rejects_non_plain_forms),
        cmocka_unit_test(test_whole_rejects_overflowing_numbers),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
