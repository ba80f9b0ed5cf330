/*
 * Unit tests for webhook/base/jsonraw.c: members are found by their exact,
 * unescaped name (a NUL in a name is part of it; the first of duplicates
 * wins) at the index cJSON gives the same child; values of every kind are
 * skipped whole; strings unescape exactly, NULs and surrogate pairs
 * included, and a short buffer gets a prefix and the whole length.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonraw.h"

static struct jsonraw doc(const char *text)
{
    return jsonraw_root(text, strlen(text));
}

/* The value of member key of text's root, as text. */
static const char *member(const char *text, const char *key, size_t keylen, char *out,
                          size_t outlen, long *index)
{
    struct jsonraw v;

    *index = jsonraw_member(doc(text), key, keylen, &v);
    if (*index < 0)
        return NULL;
    assert_true(v.n < outlen);
    memcpy(out, v.p, v.n);
    out[v.n] = '\0';
    return out;
}

TEST(test_root_drops_whitespace)
{
    struct jsonraw r = doc(" \t\r\n{\"a\":1} \n");

    assert_int_equal(r.n, 7);
    assert_memory_equal(r.p, "{\"a\":1}", 7);
}

TEST(test_member_values_of_every_kind)
{
    static const char text[] =
        "{ \"s\" : \"x,}]\\\"y\" , \"n\":-1.5e3,\"t\":true,\"z\":null,"
        "\"o\":{\"a\":[1,{\"b\":\"}\"}],\"c\":\"]\"},\"a\":[[],{},\"[\"] , \"last\":0 }";
    static const struct {
        const char *key, *value;
        long index;
    } want[] = {
        {"s", "\"x,}]\\\"y\"", 0},
        {"n", "-1.5e3", 1},
        {"t", "true", 2},
        {"z", "null", 3},
        {"o", "{\"a\":[1,{\"b\":\"}\"}],\"c\":\"]\"}", 4},
        {"a", "[[],{},\"[\"]", 5},
        {"last", "0", 6},
    };
    char out[128];
    long index;
    cJSON *j = cJSON_Parse(text);

    assert_non_null(j);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (!member(text, want[i].key, strlen(want[i].key), out, sizeof(out), &index))
            fail_msg("no member %s", want[i].key);
        assert_string_equal(out, want[i].value);
        assert_int_equal(index, want[i].index);
        /* The same child in cJSON's tree. */
        assert_string_equal(cJSON_GetArrayItem(j, (int)index)->string, want[i].key);
    }
    assert_null(member(text, "missing", 7, out, sizeof(out), &index));
    assert_int_equal(index, -1);
    cJSON_Delete(j);
}

TEST(test_names_match_exactly)
{
    static const char text[] = "{\"uid\\u0000\":\"evil\",\"u\\u0069d\":\"real\",\"uid\":\"third\"}";
    char out[64];
    long index;

    /* "uid\u0000" is a name of four bytes; "u\u0069d" is "uid". */
    assert_non_null(member(text, "uid", 3, out, sizeof(out), &index));
    assert_string_equal(out, "\"real\"");
    assert_int_equal(index, 1);
    assert_non_null(member(text, "uid\0", 4, out, sizeof(out), &index));
    assert_string_equal(out, "\"evil\"");
    assert_int_equal(index, 0);
    assert_null(member(text, "ui", 2, out, sizeof(out), &index));
}

TEST(test_member_of_a_non_object)
{
    struct jsonraw v;

    assert_int_equal(jsonraw_member(doc("[\"uid\"]"), "uid", 3, &v), -1);
    assert_int_equal(jsonraw_member(doc("\"uid\""), "uid", 3, &v), -1);
    assert_int_equal(jsonraw_member(doc("{}"), "uid", 3, &v), -1);
    assert_int_equal(jsonraw_member(doc(""), "uid", 3, &v), -1);
}

TEST(test_string_unescapes_exactly)
{
    static const char tok[] =
        "\"a\\u0000b\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00z\"";
    static const char want[] = "a\0b\"\\/\b\f\n\r\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";
    char out[64];
    size_t n = jsonraw_string(doc(tok), out, sizeof(out));

    assert_int_equal(n, sizeof(want) - 1);
    assert_memory_equal(out, want, n);
}

TEST(test_string_into_a_short_buffer)
{
    char out[4] = "...";

    assert_int_equal(jsonraw_string(doc("\"abcdef\""), out, 3), 6);
    assert_memory_equal(out, "abc", 3);
    assert_int_equal(jsonraw_string(doc("\"\\u00e9\\u00e9\""), NULL, 0), 4);
    assert_int_equal(jsonraw_string(doc("\"\""), NULL, 0), 0);
}

TEST(test_string_of_a_non_string)
{
    assert_int_equal(jsonraw_string(doc("1"), NULL, 0), JSONRAW_NOT_STRING);
    assert_int_equal(jsonraw_string(doc("{}"), NULL, 0), JSONRAW_NOT_STRING);
    assert_int_equal(jsonraw_string(doc(""), NULL, 0), JSONRAW_NOT_STRING);
}

/* Text no check has seen (the contract asks for checked text, but nothing
 * may read past it): cut strings, escapes and objects. */
TEST(test_unchecked_text_stays_in_bounds)
{
    static const char *const texts[] = {
        "{\"a",     "{\"a\":",       "{\"a\":\"",         "{\"a\":\"\\",  "{\"a\":\"\\u12",
        "{\"a\":[", "{\"a\":{\"b\"", "\"\\ud83d",         "\"\\ud83d\\u", "\"\\",
        "\"abc",    "{\"a\" 1}",     "{\"a\":1 \"b\":2}",
    };
    char out[16];

    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct jsonraw v;
        size_t len = strlen(texts[i]);
        /* A copy of exactly len bytes, so ASan sees any read past it. */
        char *copy = malloc(len ? len : 1);

        assert_non_null(copy);
        memcpy(copy, texts[i], len);
        (void)jsonraw_member(jsonraw_root(copy, len), "b", 1, &v);
        (void)jsonraw_string(jsonraw_root(copy, len), out, sizeof(out));
        free(copy);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_root_drops_whitespace),
        cmocka_unit_test(test_member_values_of_every_kind),
        cmocka_unit_test(test_names_match_exactly),
        cmocka_unit_test(test_member_of_a_non_object),
        cmocka_unit_test(test_string_unescapes_exactly),
        cmocka_unit_test(test_string_into_a_short_buffer),
        cmocka_unit_test(test_string_of_a_non_string),
        cmocka_unit_test(test_unchecked_text_stays_in_bounds),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
