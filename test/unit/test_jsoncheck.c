/*
 * Unit tests for webhook/base/jsoncheck.c: RFC 8259 texts are accepted and what
 * the RFC refuses is refused with the right problem and byte offset (raw
 * control characters in strings and between tokens, numbers outside the
 * grammar, bad escapes, lone surrogates, invalid UTF-8, a byte order mark,
 * nesting past the limit, trailing text); the 8-byte fast path inside
 * strings finds a special byte at every offset; the first \u0000 escape is
 * reported; and whatever the check accepts, cJSON parses.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsoncheck.h"

static struct jsoncheck_result r;

static int check(const char *s)
{
    return jsoncheck_text(s, strlen(s), &r);
}

TEST(test_rfc_texts_are_accepted)
{
    static const char *const good[] = {
        "{}",
        "[]",
        "0",
        "-0",
        "1",
        "-1.5e+10",
        "1E-2",
        "0.0",
        "123456789012345678901234567890",
        "\"\"",
        "\"a\\\"\\\\\\/\\b\\f\\n\\r\\tz\"",
        "\"\\u0041\\u00e9\\uFFFF\\ud83d\\ude00\"",
        "true",
        "false",
        "null",
        " \t\r\n{ \"a\" : [ 1 , 2 , { } , [ ] ] , \"b\" : null } \t\r\n",
        "{\"a\":{\"b\":{\"c\":[true,false,null,\"x\",-0.5]}}}",
        "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f\"",
    };

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (check(good[i]) != ERR_OK)
            fail_msg("refused %s: problem %d at %zu", good[i], r.problem, r.at);
}

TEST(test_problems_and_offsets)
{
    static const struct {
        const char *text;
        enum jsoncheck_problem problem;
        size_t at;
    } bad[] = {
        {"", JSONCHECK_EMPTY, 0},
        {" \r\n\t", JSONCHECK_EMPTY, 4},
        {"\xef\xbb\xbf{}", JSONCHECK_BOM, 0},
        {"{\"a\":1}x", JSONCHECK_TRAILING, 7},
        {"{}{}", JSONCHECK_TRAILING, 2},
        {"1 2", JSONCHECK_TRAILING, 2},
        {"{", JSONCHECK_END, 1},
        {"[1,", JSONCHECK_END, 3},
        {"\"abc", JSONCHECK_END, 4},
        {"\"ab\\", JSONCHECK_END, 4},
        {"\"\\u00", JSONCHECK_END, 1},
        {"tru", JSONCHECK_END, 3},
        {"trux", JSONCHECK_UNEXPECTED, 3},
        {"nul", JSONCHECK_END, 3},
        {"[1,]", JSONCHECK_UNEXPECTED, 3},
        {"{\"a\":1,}", JSONCHECK_UNEXPECTED, 7},
        {"{,}", JSONCHECK_UNEXPECTED, 1},
        {"{\"a\" 1}", JSONCHECK_UNEXPECTED, 5},
        {"{1:2}", JSONCHECK_UNEXPECTED, 1},
        {"[1 2]", JSONCHECK_UNEXPECTED, 3},
        {"{\"a\":1]", JSONCHECK_UNEXPECTED, 6},
        {"'a'", JSONCHECK_UNEXPECTED, 0},
        {"01", JSONCHECK_NUMBER, 1},
        {"-01", JSONCHECK_NUMBER, 2},
        {"1.", JSONCHECK_NUMBER, 2},
        {"1.e5", JSONCHECK_NUMBER, 2},
        {".5", JSONCHECK_UNEXPECTED, 0},
        {"-", JSONCHECK_NUMBER, 1},
        {"-x", JSONCHECK_NUMBER, 1},
        {"+1", JSONCHECK_UNEXPECTED, 0},
        {"1e", JSONCHECK_NUMBER, 2},
        {"1e+", JSONCHECK_NUMBER, 3},
        {"0x10", JSONCHECK_TRAILING, 1},
        {"Infinity", JSONCHECK_UNEXPECTED, 0},
        {"\"\\x\"", JSONCHECK_ESCAPE, 1},
        {"\"\\U0041\"", JSONCHECK_ESCAPE, 1},
        {"\"\\u00g0\"", JSONCHECK_ESCAPE, 1},
        {"\"\\ud800\"", JSONCHECK_SURROGATE, 1},
        {"\"\\ud800\\u0041\"", JSONCHECK_SURROGATE, 1},
        {"\"\\udc00\"", JSONCHECK_SURROGATE, 1},
        {"\"a\\ud83dx\"", JSONCHECK_SURROGATE, 2},
        {"\"\xff\"", JSONCHECK_UTF8, 1},
        {"\"\xc0\xaf\"", JSONCHECK_UTF8, 1},
        {"\"\xe2\x82\"", JSONCHECK_UTF8, 1},
        {"\"\xed\xa0\x80\"", JSONCHECK_UTF8, 1},
        {"\"\xf4\x90\x80\x80\"", JSONCHECK_UTF8, 1},
        {"\"\x80\"", JSONCHECK_UTF8, 1},
        {"[\xff]", JSONCHECK_UTF8, 1},
        {"[\xc3\xa9]", JSONCHECK_UNEXPECTED, 1},
        {"\"a\tb\"", JSONCHECK_CONTROL, 2},
        {"\"a\nb\"", JSONCHECK_CONTROL, 2},
        {"[1,\x0b"
         "2]",
         JSONCHECK_CONTROL, 3},
        {"\x0c{}", JSONCHECK_CONTROL, 0},
        {"{}\x1f", JSONCHECK_CONTROL, 2},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (check(bad[i].text) == ERR_OK)
            fail_msg("accepted \"%s\"", bad[i].text);
        if (r.problem != bad[i].problem || r.at != bad[i].at)
            fail_msg("\"%s\": problem %d at %zu, want %d at %zu", bad[i].text, r.problem, r.at,
                     bad[i].problem, bad[i].at);
    }
}

/* A raw NUL is a control character too, wherever it is (the length, not a
 * terminator, bounds the text). */
TEST(test_raw_nul_is_refused)
{
    static const char in_string[] = "[\"a\0b\"]", between[] = "[1,\0 2]";

    assert_int_equal(jsoncheck_text(in_string, sizeof(in_string) - 1, &r), ERR_FAIL);
    assert_int_equal(r.problem, JSONCHECK_CONTROL);
    assert_int_equal(r.at, 3);
    assert_int_equal(r.byte, 0);
    assert_int_equal(jsoncheck_text(between, sizeof(between) - 1, &r), ERR_FAIL);
    assert_int_equal(r.problem, JSONCHECK_CONTROL);
    assert_int_equal(r.at, 3);
}

/* Each byte value inside a long string, at every offset from the start of
 * an 8-byte step, is classified alike. */
TEST(test_every_byte_at_every_offset)
{
    char buf[64];

    for (int b = 0; b < 256; b++) {
        for (size_t off = 0; off < 24; off++) {
            size_t n = 0;
            int rc;

            buf[n++] = '"';
            memset(buf + n, 'x', 30);
            buf[n + off] = (char)b;
            n += 30;
            buf[n++] = '"';
            rc = jsoncheck_text(buf, n, &r);
            if (b >= 0x20 && b < 0x80 && b != '"' && b != '\\') {
                if (rc != ERR_OK)
                    fail_msg("byte 0x%02x at %zu refused", b, off);
            } else if (b == '"') {
                assert_int_equal(r.problem, JSONCHECK_TRAILING);
            } else if (b == '\\') {
                assert_int_equal(r.problem, JSONCHECK_ESCAPE);
            } else {
                if (rc == 0 || r.at != 1 + off ||
                    r.problem != (b < 0x20 ? JSONCHECK_CONTROL : JSONCHECK_UTF8))
                    fail_msg("byte 0x%02x at %zu: rc %d, problem %d at %zu", b, off, rc, r.problem,
                             r.at);
            }
        }
    }
}

TEST(test_first_nul_escape_is_reported)
{
    assert_int_equal(check("{\"a\":\"x\",\"b\":[\"y\\u0000z\",\"\\u0000\"]}"), ERR_OK);
    assert_int_equal(r.first_nul, 16);
    assert_int_equal(check("{\"a\\u0000\":1}"), ERR_OK);
    assert_int_equal(r.first_nul, 3);
    assert_int_equal(check("[\"\\u0001\\\\u0000\"]"), ERR_OK);
    assert_int_equal(r.first_nul, JSONCHECK_NONE); /* an escaped backslash, then text */
}

static void nested(char *buf, size_t depth, int objects)
{
    size_t n = 0;

    for (size_t i = 0; i < depth; i++) {
        if (objects) {
            memcpy(buf + n, "{\"a\":", 5);
            n += 5;
        } else {
            buf[n++] = '[';
        }
    }
    buf[n++] = '1';
    for (size_t i = 0; i < depth; i++)
        buf[n++] = objects ? '}' : ']';
    buf[n] = '\0';
}

/* Up to the limit is fine, one more is not; and what passes, cJSON (whose
 * own limit it is) parses. */
TEST(test_depth_limit)
{
    static char buf[6 * (JSONCHECK_MAX_DEPTH + 2) + 2];

    for (int objects = 0; objects <= 1; objects++) {
        cJSON *j;

        nested(buf, JSONCHECK_MAX_DEPTH, objects);
        assert_int_equal(check(buf), ERR_OK);
        j = cJSON_Parse(buf);
        assert_non_null(j);
        cJSON_Delete(j);
        nested(buf, JSONCHECK_MAX_DEPTH + 1, objects);
        assert_int_equal(check(buf), ERR_FAIL);
        assert_int_equal(r.problem, JSONCHECK_DEPTH);
        assert_int_equal(r.at, (size_t)JSONCHECK_MAX_DEPTH * (objects ? 5 : 1));
    }
    /* Mixed, with the closings checked against the right kind. */
    assert_int_equal(check("[{\"a\":[{}]}]"), ERR_OK);
    assert_int_equal(check("[{\"a\":[{}]]]"), ERR_FAIL);
    assert_int_equal(r.problem, JSONCHECK_UNEXPECTED);
    assert_int_equal(r.at, 10);
}

TEST(test_describe)
{
    char msg[96];

    check("[\"a\x01\"]");
    jsoncheck_describe(&r, msg, sizeof(msg));
    assert_string_equal(msg, "raw control character U+0001 at byte 3");
    check("[1}");
    jsoncheck_describe(&r, msg, sizeof(msg));
    assert_string_equal(msg, "unexpected character '}' at byte 2");
    check("\"\xff\"");
    jsoncheck_describe(&r, msg, sizeof(msg));
    assert_string_equal(msg, "invalid UTF-8 at byte 1");
}

/* For files: line and column from 1, the column in characters. */
TEST(test_describe_text_by_line_and_column)
{
    static const char text[] = "{\n  \"a\": 1,\n  \"\xc3\xa9\": 2 x\n}";
    size_t line, column;
    char msg[96];

    assert_int_equal(jsoncheck_text(text, strlen(text), &r), ERR_FAIL);
    jsoncheck_describe_text(&r, text, strlen(text), msg, sizeof(msg));
    assert_string_equal(msg, "unexpected character 'x' at line 3, column 10 (byte 22)");
    jsoncheck_line_column(text, strlen(text), 0, &line, &column);
    assert_int_equal(line, 1);
    assert_int_equal(column, 1);
    jsoncheck_line_column(text, strlen(text), 2, &line, &column);
    assert_int_equal(line, 2);
    assert_int_equal(column, 1);
    /* Past the end: the end of the text. */
    jsoncheck_line_column("a\nbc", 4, 99, &line, &column);
    assert_int_equal(line, 2);
    assert_int_equal(column, 3);
}

/* Random texts over JSON's own characters: whatever passes, cJSON parses
 * to the end (cJSON is looser, so the converse does not hold). */
TEST(test_accepted_texts_parse_with_cjson)
{
    static const char alphabet[] = "{}[]:,\"\\ 0123456789-+.eEtrufalsn\tu\x01";
    unsigned seed = 12345;
    char buf[24];
    int accepted = 0;

    for (int iter = 0; iter < 400000; iter++) {
        size_t n = 1 + (seed >> 16) % (sizeof(buf) - 1);

        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            buf[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
        }
        if (jsoncheck_text(buf, n, &r) == ERR_OK) {
            const char *end = NULL;
            cJSON *j = cJSON_ParseWithLengthOpts(buf, n, &end, 0);

            if (!j)
                fail_msg("accepted but cJSON refuses: %.*s", (int)n, buf);
            cJSON_Delete(j);
            accepted++;
        }
        seed = seed * 1103515245u + 12345u;
    }
    assert_true(accepted > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc_texts_are_accepted),
        cmocka_unit_test(test_problems_and_offsets),
        cmocka_unit_test(test_raw_nul_is_refused),
        cmocka_unit_test(test_every_byte_at_every_offset),
        cmocka_unit_test(test_first_nul_escape_is_reported),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_describe_text_by_line_and_column),
        cmocka_unit_test(test_accepted_texts_parse_with_cjson),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
