/*
 * Unit tests for webhook/base/err.c: err_set returns the code it is given, writes
 * one terminated line (control characters folded into spaces, a message too
 * long for the buffer cut), and writes nothing when there is no buffer;
 * err_name names every code.
 */
#include "unit.h"

#include <stdarg.h>
#include <string.h>

#include "base/err.h"

TEST(test_returns_the_code_it_is_given)
{
    char err[ERR_LEN];
    const int codes[] = {ERR_OK, ERR_FAIL, ERR_NOMEM, ERR_TOO_BIG, ERR_BUSY, 7};

    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        assert_int_equal(err_set(err, sizeof(err), codes[i], "code %d", codes[i]), codes[i]);
        assert_int_equal(err_set(NULL, 0, codes[i], "code %d", codes[i]), codes[i]);
    }
}

TEST(test_codes_are_distinct_and_negative)
{
    const int codes[] = {ERR_FAIL, ERR_NOMEM, ERR_TOO_BIG, ERR_BUSY};

    assert_int_equal(ERR_OK, 0);
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        assert_true(codes[i] < 0);
        for (size_t j = 0; j < i; j++)
            assert_int_not_equal(codes[i], codes[j]);
    }
}

TEST(test_formats_the_message)
{
    char err[ERR_LEN];

    assert_int_equal(err_set(err, sizeof(err), ERR_FAIL, "cannot read %s: %s", "/etc/x", "gone"),
                     ERR_FAIL);
    assert_string_equal(err, "cannot read /etc/x: gone");
}

/* A path or a peer's text may carry a newline or an escape sequence: the
 * message stays one log line with nothing a terminal would act on. */
TEST(test_control_characters_become_spaces)
{
    char err[ERR_LEN];

    err_set(err, sizeof(err), ERR_FAIL, "a%sb%sc%sd%se%sf", "\n", "\r", "\t", "\x1b[31m", "\x7f");
    assert_string_equal(err, "a b c d [31me f");
    err_set(err, sizeof(err), ERR_FAIL, "%s", "\x01\x1f");
    assert_string_equal(err, "  ");
}

/* UTF-8 is not a control character: names in other scripts stay readable. */
TEST(test_bytes_above_ascii_are_kept)
{
    char err[ERR_LEN];

    err_set(err, sizeof(err), ERR_FAIL, "%s", "caf\xc3\xa9");
    assert_string_equal(err, "caf\xc3\xa9");
}

TEST(test_a_long_message_is_cut_and_terminated)
{
    char err[8];

    memset(err, 'X', sizeof(err));
    assert_int_equal(
        err_set(err, sizeof(err), ERR_TOO_BIG, "%s is larger than %d bytes", "/some/long/path", 16),
        ERR_TOO_BIG);
    assert_string_equal(err, "/some/l");
    err_set(err, 1, ERR_FAIL, "anything");
    assert_string_equal(err, "");
}

/* errlen 0 (or a NULL err) means "the caller only wants the code": not one
 * byte is written. */
TEST(test_no_buffer_writes_nothing)
{
    char err[4] = "abc";

    assert_int_equal(err_set(err, 0, ERR_NOMEM, "out of memory"), ERR_NOMEM);
    assert_string_equal(err, "abc");
    assert_int_equal(err_set(NULL, sizeof(err), ERR_NOMEM, "out of memory"), ERR_NOMEM);
}

__attribute__((format(printf, 4, 5))) static int vset(char *err, size_t errlen, int code,
                                                      const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = err_vset(err, errlen, code, fmt, ap);
    va_end(ap);
    return rc;
}

TEST(test_vset_behaves_as_set)
{
    char err[ERR_LEN];

    assert_int_equal(vset(err, sizeof(err), ERR_BUSY, "%s\n%d", "busy", 3), ERR_BUSY);
    assert_string_equal(err, "busy 3");
    assert_int_equal(vset(NULL, 0, ERR_FAIL, "%s", "x"), ERR_FAIL);
}

TEST(test_names)
{
    assert_string_equal(err_name(ERR_OK), "ok");
    assert_string_equal(err_name(ERR_FAIL), "failed");
    assert_string_equal(err_name(ERR_NOMEM), "out of memory");
    assert_string_equal(err_name(ERR_TOO_BIG), "too large");
    assert_string_equal(err_name(ERR_BUSY), "busy");
    assert_string_equal(err_name(-99), "failed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_returns_the_code_it_is_given),
        cmocka_unit_test(test_codes_are_distinct_and_negative),
        cmocka_unit_test(test_formats_the_message),
        cmocka_unit_test(test_control_characters_become_spaces),
        cmocka_unit_test(test_bytes_above_ascii_are_kept),
        cmocka_unit_test(test_a_long_message_is_cut_and_terminated),
        cmocka_unit_test(test_no_buffer_writes_nothing),
        cmocka_unit_test(test_vset_behaves_as_set),
        cmocka_unit_test(test_names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
