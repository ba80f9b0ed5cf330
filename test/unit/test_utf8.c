/*
 * Unit tests for webhook/base/utf8.c: utf8_valid on the classic malformed
 * sequences, and cuts that never split a character.
 */
#include "unit.h"

#include <string.h>

#include "base/utf8.h"

static int valid(const char *s)
{
    return utf8_valid(s, strlen(s));
}

TEST(test_utf8_ascii_and_empty)
{
    assert_true(valid(""));
    assert_true(valid("hello {\"json\": 1}"));
    assert_true(utf8_valid("a\0b", 3)); /* NUL is a valid character */
}

TEST(test_utf8_two_three_four_byte)
{
    assert_true(valid("\xc3\xa9"));         /* U+00E9 */
    assert_true(valid("\xc2\x80"));         /* U+0080, smallest 2-byte */
    assert_true(valid("\xe6\x97\xa5"));     /* U+65E5 */
    assert_true(valid("\xef\xbf\xbf"));     /* U+FFFF */
    assert_true(valid("\xf0\x9f\x8e\x89")); /* U+1F389 */
    assert_true(valid("\xf4\x8f\xbf\xbf")); /* U+10FFFF, the last code point */
}

TEST(test_utf8_overlong_forms)
{
    assert_false(valid("\xc0\xaf")); /* '/' in 2 bytes */
    assert_false(valid("\xc1\xbf"));
    assert_false(valid("\xe0\x80\xaf"));     /* '/' in 3 bytes */
    assert_false(valid("\xe0\x9f\xbf"));     /* U+07FF in 3 bytes */
    assert_false(valid("\xf0\x80\x80\xaf")); /* '/' in 4 bytes */
    assert_false(valid("\xf0\x8f\xbf\xbf")); /* U+FFFF in 4 bytes */
}

TEST(test_utf8_surrogates)
{
    assert_false(valid("\xed\xa0\x80")); /* U+D800 */
    assert_false(valid("\xed\xbf\xbf")); /* U+DFFF */
    assert_true(valid("\xed\x9f\xbf"));  /* U+D7FF, just below */
    assert_true(valid("\xee\x80\x80"));  /* U+E000, just above */
}

TEST(test_utf8_above_last_code_point)
{
    assert_false(valid("\xf4\x90\x80\x80")); /* U+110000 */
    assert_false(valid("\xf5\x80\x80\x80"));
    assert_false(valid("\xf8\x88\x80\x80\x80"));
    assert_false(valid("\xff"));
}

TEST(test_utf8_truncated_sequences)
{
    assert_false(valid("\xc3"));
    assert_false(valid("\xe6\x97"));
    assert_false(valid("\xf0\x9f\x8e"));
    assert_false(valid("ok\xe6"));
    /* A length that cuts a valid sequence short. */
    assert_false(utf8_valid("\xe6\x97\xa5", 2));
}

TEST(test_utf8_bad_continuation)
{
    assert_false(valid("\x80"));
    assert_false(valid("a\xbf"));
    assert_false(valid("\xc3\x41"));
    assert_false(valid("\xe6\x97\x41"));
    assert_false(valid("\xf0\x9f\x8e\x41"));
    assert_false(valid("\xc3\xc3\xa9"));
}

/* ---- utf8_cut ---- */

TEST(test_cut_moves_back_to_a_character_start)
{
    const char *s = "ab\xe6\x97\xa5"
                    "cd"; /* "ab" U+65E5 "cd" */

    assert_int_equal(utf8_cut(s, 0), 0);
    assert_int_equal(utf8_cut(s, 2), 2);
    assert_int_equal(utf8_cut(s, 3), 2);
    assert_int_equal(utf8_cut(s, 4), 2);
    assert_int_equal(utf8_cut(s, 5), 5);
    assert_int_equal(utf8_cut(s, 6), 6);
}

TEST(test_cut_every_prefix_stays_valid)
{
    const char *s = "x\xc3\xa9\xe6\x97\xa5\xf0\x9f\x8e\x89"
                    "y";
    size_t len = strlen(s);

    for (size_t n = 0; n < len; n++) {
        size_t m = utf8_cut(s, n);

        assert_true(m <= n);
        assert_true(n - m < 4);
        assert_true(utf8_valid(s, m));
    }
}

/* ---- utf8_shorten ---- */

TEST(test_shorten_keeps_what_fits)
{
    char out[16];

    utf8_shorten("short", 8, out, sizeof(out));
    assert_string_equal(out, "short");
    utf8_shorten("exactly8", 8, out, sizeof(out));
    assert_string_equal(out, "exactly8");
    utf8_shorten("", 0, out, sizeof(out));
    assert_string_equal(out, "");
}

TEST(test_shorten_cuts_at_max_and_marks_it)
{
    char out[16];

    utf8_shorten("123456789", 8, out, sizeof(out));
    assert_string_equal(out, "12345678...");
}

TEST(test_shorten_bounded_by_the_buffer)
{
    char out[8];

    utf8_shorten("a long user value", 100, out, sizeof(out));
    assert_string_equal(out, "a lo...");
}

TEST(test_shorten_never_splits_a_character)
{
    char out[16];

    /* U+65E5 occupies bytes 2..4: a cut at 3 or 4 moves back to 2. */
    utf8_shorten("ab\xe6\x97\xa5\xe6\x97\xa5", 4, out, sizeof(out));
    assert_string_equal(out, "ab...");
    assert_true(utf8_valid(out, strlen(out)));
    utf8_shorten("ab\xe6\x97\xa5\xe6\x97\xa5", 5, out, sizeof(out));
    assert_string_equal(out, "ab\xe6\x97\xa5...");
}

TEST(test_fold_control_characters)
{
    char s[] = "a\nb\r\x1b[31m\a\x7f\xc2\x9b"
               "1m\xc2\xa0\xc3\xa9\t";

    /* C0, DEL and C1 (U+009B here) become '?'; U+00A0 and U+00E9 stay. */
    assert_string_equal(utf8_fold(s), "a?b??[31m???1m\xc2\xa0\xc3\xa9?");
    assert_true(utf8_valid(s, strlen(s)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_ascii_and_empty),
        cmocka_unit_test(test_utf8_two_three_four_byte),
        cmocka_unit_test(test_utf8_overlong_forms),
        cmocka_unit_test(test_utf8_surrogates),
        cmocka_unit_test(test_utf8_above_last_code_point),
        cmocka_unit_test(test_utf8_truncated_sequences),
        cmocka_unit_test(test_utf8_bad_continuation),
        cmocka_unit_test(test_cut_moves_back_to_a_character_start),
        cmocka_unit_test(test_cut_every_prefix_stays_valid),
        cmocka_unit_test(test_shorten_keeps_what_fits),
        cmocka_unit_test(test_shorten_cuts_at_max_and_marks_it),
        cmocka_unit_test(test_shorten_bounded_by_the_buffer),
        cmocka_unit_test(test_shorten_never_splits_a_character),
        cmocka_unit_test(test_fold_control_characters),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
