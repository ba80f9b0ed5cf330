/*
 * Unit tests for webhook/base/jsonw.c: string escaping as RFC 8259 requires it
 * (quote, backslash, every control character below 0x20), UTF-8 passed
 * through untouched, numbers, and the sticky first error. Output is checked
 * against the expected text and, where useful, by parsing it back with cJSON.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/dynbuf.h"
#include "base/jsonw.h"

/* The JSON text jsonw_strn gives for s[0..n). */
static void str_text(const char *s, size_t n, char *out, size_t outlen)
{
    struct dynbuf b;
    struct jsonw w;

    dynbuf_init(&b, 1 << 16);
    jsonw_init(&w, &b);
    jsonw_strn(&w, s, n);
    assert_int_equal(jsonw_error(&w), 0);
    assert_true(dynbuf_len(&b) < outlen);
    memcpy(out, dynbuf_ptr(&b), dynbuf_len(&b) + 1);
    dynbuf_free(&b);
}

static void assert_str_gives(const char *s, const char *want)
{
    char got[1024];

    str_text(s, strlen(s), got, sizeof(got));
    assert_string_equal(got, want);
}

/* Parses text as JSON and checks it is the string want. */
static void assert_parses_back(const char *text, const char *want)
{
    cJSON *j = cJSON_Parse(text);

    assert_non_null(j);
    assert_true(cJSON_IsString(j));
    assert_string_equal(j->valuestring, want);
    cJSON_Delete(j);
}

TEST(test_plain_string_is_quoted)
{
    assert_str_gives("abc", "\"abc\"");
    assert_str_gives("", "\"\"");
}

TEST(test_quote_is_escaped)
{
    assert_str_gives("a\"b", "\"a\\\"b\"");
}

TEST(test_backslash_is_escaped)
{
    assert_str_gives("a\\b", "\"a\\\\b\"");
    assert_str_gives("\\", "\"\\\\\"");
}

TEST(test_slash_needs_no_escape_but_stays_valid)
{
    char got[64];

    str_text("a/b", 3, got, sizeof(got));
    assert_parses_back(got, "a/b");
}

TEST(test_short_control_escapes)
{
    assert_str_gives("\n", "\"\\n\"");
    assert_str_gives("\t", "\"\\t\"");
    assert_str_gives("\r", "\"\\r\"");
    assert_str_gives("\b", "\"\\b\"");
    assert_str_gives("\f", "\"\\f\"");
}

TEST(test_other_control_chars_become_u00xx)
{
    char got[64];

    str_text("\x01", 1, got, sizeof(got));
    assert_int_equal(strcasecmp(got, "\"\\u0001\""), 0);
    str_text("\x1f", 1, got, sizeof(got));
    assert_int_equal(strcasecmp(got, "\"\\u001F\""), 0);
    str_text("a\x0b"
             "b",
             3, got, sizeof(got));
    assert_int_equal(strcasecmp(got, "\"a\\u000Bb\""), 0);
}

TEST(test_nul_inside_strn_is_escaped)
{
    char got[64];

    str_text("a\0b", 3, got, sizeof(got));
    assert_int_equal(strcasecmp(got, "\"a\\u0000b\""), 0);
}

TEST(test_no_raw_control_byte_in_output)
{
    char in[32], got[512];

    for (int i = 0; i < 32; i++)
        in[i] = (char)i;
    str_text(in, sizeof(in), got, sizeof(got));
    for (const char *p = got; *p; p++)
        assert_true((unsigned char)*p >= 0x20);
}

/* Long strings are checked eight bytes at a time: every byte value at every
 * offset of a 19-byte string (two words and a tail) must come out as the
 * byte-by-byte escape says. */
TEST(test_every_byte_at_every_offset_of_a_long_string)
{
    char in[19], got[256], want[256];

    for (int c = 0; c < 256; c++) {
        for (size_t pos = 0; pos < sizeof(in); pos++) {
            size_t w = 0;

            memset(in, 'a', sizeof(in));
            in[pos] = (char)c;
            want[w++] = '"';
            for (size_t i = 0; i < sizeof(in); i++) {
                char esc[JSONW_ESCAPE_MAX];
                size_t len = jsonw_escape_byte((unsigned char)in[i], esc);

                if (len)
                    memcpy(want + w, esc, len);
                else
                    want[w] = in[i];
                w += len ? len : 1;
            }
            want[w++] = '"';
            want[w] = '\0';
            {
                char esc[JSONW_ESCAPE_MAX];

                assert_int_equal(jsonw_plain_prefix(in, sizeof(in)),
                                 jsonw_escape_byte((unsigned char)c, esc) ? pos : sizeof(in));
            }
            str_text(in, sizeof(in), got, sizeof(got));
            if (strcmp(got, want) != 0)
                fail_msg("byte 0x%02x at %zu: got %s, want %s", c, pos, got, want);
        }
    }
}

TEST(test_plain_prefix_stops_at_the_first_byte_to_escape)
{
    static const char special[] = {'"', '\\', '\n', '\0', 0x1f};
    char in[19];

    memset(in, 'a', sizeof(in));
    assert_int_equal(jsonw_plain_prefix(in, sizeof(in)), sizeof(in));
    assert_int_equal(jsonw_plain_prefix(in, 0), 0);
    for (size_t k = 0; k < sizeof(special); k++) {
        for (size_t pos = 0; pos < sizeof(in); pos++) {
            memset(in, 0x7f, sizeof(in)); /* DEL and UTF-8 need no escape */
            in[sizeof(in) - 1] = (char)0xc3;
            in[pos] = special[k];
            assert_int_equal(jsonw_plain_prefix(in, sizeof(in)), pos);
            assert_int_equal(jsonw_plain_prefix(in, pos), pos);
        }
    }
}

TEST(test_all_ascii_round_trips_through_cjson)
{
    char in[128], got[1024];

    /* 1..127: cJSON strings end at NUL, so 0 is left out here. */
    for (int i = 1; i < 128; i++)
        in[i - 1] = (char)i;
    in[127] = '\0';
    str_text(in, 127, got, sizeof(got));
    assert_parses_back(got, in);
}

TEST(test_utf8_passes_through_unchanged)
{
    const char *s = "h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89";
    char want[128];

    snprintf(want, sizeof(want), "\"%s\"", s);
    assert_str_gives(s, want);
    assert_parses_back(want, s);
}

TEST(test_del_and_high_bytes_are_not_escaped)
{
    assert_str_gives("\x7f", "\"\x7f\"");
}

TEST(test_escapes_mixed_with_runs)
{
    assert_str_gives("ab\"cd\\ef\ngh", "\"ab\\\"cd\\\\ef\\ngh\"");
}

TEST(test_key_writes_quoted_name_and_colon)
{
    struct dynbuf b;
    struct jsonw w;

    dynbuf_init(&b, 100);
    jsonw_init(&w, &b);
    jsonw_raw(&w, "{");
    jsonw_key(&w, "rdma-webhook.io/\"x\"");
    jsonw_int(&w, 1);
    jsonw_raw(&w, "}");
    assert_int_equal(jsonw_error(&w), 0);
    assert_string_equal(dynbuf_ptr(&b), "{\"rdma-webhook.io/\\\"x\\\"\":1}");
    dynbuf_free(&b);
}

TEST(test_int_extremes)
{
    struct dynbuf b;
    struct jsonw w;

    dynbuf_init(&b, 200);
    jsonw_init(&w, &b);
    jsonw_int(&w, 0);
    jsonw_raw(&w, " ");
    jsonw_int(&w, -5);
    jsonw_raw(&w, " ");
    jsonw_int(&w, LLONG_MAX);
    jsonw_raw(&w, " ");
    jsonw_int(&w, LLONG_MIN);
    assert_int_equal(jsonw_error(&w), 0);
    assert_string_equal(dynbuf_ptr(&b), "0 -5 9223372036854775807 -9223372036854775808");
    dynbuf_free(&b);
}

TEST(test_bool)
{
    struct dynbuf b;
    struct jsonw w;

    dynbuf_init(&b, 100);
    jsonw_init(&w, &b);
    jsonw_bool(&w, 1);
    jsonw_raw(&w, ",");
    jsonw_bool(&w, 0);
    jsonw_raw(&w, ",");
    jsonw_bool(&w, 7);
    assert_string_equal(dynbuf_ptr(&b), "true,false,true");
    dynbuf_free(&b);
}

TEST(test_rawn_copies_exactly_n_bytes)
{
    struct dynbuf b;
    struct jsonw w;

    dynbuf_init(&b, 100);
    jsonw_init(&w, &b);
    jsonw_rawn(&w, "[1,2]garbage", 5);
    assert_string_equal(dynbuf_ptr(&b), "[1,2]");
    dynbuf_free(&b);
}

TEST(test_first_error_sticks_and_later_writes_are_ignored)
{
    struct dynbuf b;
    struct jsonw w;

    dynbuf_init(&b, 10);
    jsonw_init(&w, &b);
    jsonw_raw(&w, "12345678");
    assert_int_equal(jsonw_error(&w), 0);
    jsonw_str(&w, "abc"); /* 5 bytes: does not fit */
    assert_int_equal(jsonw_error(&w), ERR_TOO_BIG);
    jsonw_raw(&w, "9"); /* would fit, but the writer has failed */
    jsonw_int(&w, 1);
    assert_int_equal(jsonw_error(&w), ERR_TOO_BIG);
    /* Part of the failed string may be there (the document is void anyway),
     * but nothing written after the error: no "9", no "1". */
    assert_memory_equal(dynbuf_ptr(&b), "12345678", 8);
    assert_null(strpbrk(dynbuf_ptr(&b) + 8, "91abc"));
    dynbuf_free(&b);
}

/* Larger than what a starved heap has left, smaller than the cap below. */
static char big[1 << 18];

/* In the starved child: 0 when the sticky error is ERR_NOMEM and stays so,
 * 1 when it is ERR_TOO_BIG, 2 when the write succeeded, 3 otherwise. */
static int write_starved(void *arg)
{
    struct dynbuf b;
    struct jsonw w;
    int rc;

    (void)arg;
    dynbuf_init(&b, 1 << 20);
    jsonw_init(&w, &b);
    jsonw_strn(&w, big, sizeof(big));
    rc = jsonw_error(&w);
    jsonw_raw(&w, "1");
    if (rc == ERR_NOMEM)
        return jsonw_error(&w) == ERR_NOMEM && dynbuf_len(&b) == 0 ? 0 : 3;
    return rc == ERR_TOO_BIG ? 1 : rc == 0 ? 2 : 3;
}

/* Out of memory and over the cap are different answers (500 and 413 at the
 * server): the sticky error keeps which one it was. */
TEST(test_out_of_memory_sticks_as_out_of_memory)
{
    static const char *const why[] = {"ERR_TOO_BIG", "succeeded", "not ERR_NOMEM, or not sticky",
                                      NULL};

    memset(big, 'a', sizeof(big));
    support_assert_starved(write_starved, NULL, "writing without memory", why);
}

TEST(test_document_of_escaped_members_parses)
{
    struct dynbuf b;
    struct jsonw w;
    cJSON *j;

    dynbuf_init(&b, 1000);
    jsonw_init(&w, &b);
    jsonw_raw(&w, "{");
    jsonw_key(&w, "k\n1");
    jsonw_str(&w, "v\"1\\\x02");
    jsonw_raw(&w, ",");
    jsonw_key(&w, "n");
    jsonw_int(&w, -12);
    jsonw_raw(&w, "}");
    assert_int_equal(jsonw_error(&w), 0);
    j = cJSON_Parse(dynbuf_ptr(&b));
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "k\n1")->valuestring, "v\"1\\\x02");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "n")->valuedouble, -12);
    cJSON_Delete(j);
    dynbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_string_is_quoted),
        cmocka_unit_test(test_quote_is_escaped),
        cmocka_unit_test(test_backslash_is_escaped),
        cmocka_unit_test(test_slash_needs_no_escape_but_stays_valid),
        cmocka_unit_test(test_short_control_escapes),
        cmocka_unit_test(test_other_control_chars_become_u00xx),
        cmocka_unit_test(test_nul_inside_strn_is_escaped),
        cmocka_unit_test(test_no_raw_control_byte_in_output),
        cmocka_unit_test(test_every_byte_at_every_offset_of_a_long_string),
        cmocka_unit_test(test_plain_prefix_stops_at_the_first_byte_to_escape),
        cmocka_unit_test(test_all_ascii_round_trips_through_cjson),
        cmocka_unit_test(test_utf8_passes_through_unchanged),
        cmocka_unit_test(test_del_and_high_bytes_are_not_escaped),
        cmocka_unit_test(test_escapes_mixed_with_runs),
        cmocka_unit_test(test_key_writes_quoted_name_and_colon),
        cmocka_unit_test(test_int_extremes),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_rawn_copies_exactly_n_bytes),
        cmocka_unit_test(test_first_error_sticks_and_later_writes_are_ignored),
        cmocka_unit_test(test_out_of_memory_sticks_as_out_of_memory),
        cmocka_unit_test(test_document_of_escaped_members_parses),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
