/*
 * Unit tests for webhook/wire/framing.c: which Transfer-Encoding fields the
 * server can read a body by (exactly one plain "chunked", in any case),
 * which are malformed or leave the body's end unknown (400, RFC 9112 6.3),
 * and which name a coding it does not implement (501).
 */
#include "unit.h"

#include <stddef.h>

#include "wire/framing.h"

struct framing_case {
    const char *fields[FRAMING_MAX_FIELDS + 2];
    int has_length;
    unsigned status;
    const char *phrase;
};

static size_t count_fields(const char *const *fields)
{
    size_t n = 0;

    while (fields[n])
        n++;
    return n;
}

static void check_cases(const struct framing_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *why = NULL;
        unsigned got = framing_check(cases[i].fields, count_fields(cases[i].fields),
                                     cases[i].has_length, &why);

        if (got != cases[i].status)
            fail_msg("case %zu (\"%s\"%s): expected %u, got %u", i,
                     cases[i].fields[0] ? cases[i].fields[0] : "(none)",
                     cases[i].fields[1] ? ", ..." : "", cases[i].status, got);
        if (got && (!why || why[strlen(why) - 1] != '\n'))
            fail_msg("case %zu: the reason must be one line ending in a newline", i);
        if (got && cases[i].phrase)
            assert_contains(why, cases[i].phrase);
    }
}

TEST(test_no_transfer_encoding_is_read_by_length)
{
    const char *none[] = {NULL};
    const char *why = "untouched";

    assert_int_equal(framing_check(none, 0, 1, &why), 0);
    assert_int_equal(framing_check(none, 0, 0, &why), 0);
    assert_string_equal(why, "untouched");
}

TEST(test_plain_chunked_is_read)
{
    const struct framing_case cases[] = {
        {{"chunked", NULL}, 0, 0, NULL},
        {{"Chunked", NULL}, 0, 0, NULL},
        {{"CHUNKED", NULL}, 0, 0, NULL},
    };

    check_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

/* The body's end cannot be known, or the field does not parse: 400. */
TEST(test_unreadable_framing_is_400)
{
    const struct framing_case cases[] = {
        {{"identity", NULL}, 0, 400, "must end in chunked"},
        {{"gzip", NULL}, 0, 400, "must end in chunked"},
        {{"chunked, gzip", NULL}, 0, 400, "must end in chunked"},
        {{"chunked, chunked", NULL}, 0, 400, "must end in chunked"},
        {{"chunked", "chunked", NULL}, 0, 400, "must end in chunked"},
        {{"chunked", "gzip", NULL}, 0, 400, "must end in chunked"},
        {{"", NULL}, 0, 400, "malformed"},
        {{" , ", NULL}, 0, 400, "malformed"},
        {{"chu\"nked", NULL}, 0, 400, "malformed"},
        {{"chunked gzip", NULL}, 0, 400, "malformed"},
        {{"chunked;", NULL}, 0, 400, "malformed"},
        {{"gzip", "", NULL}, 0, 400, "malformed"},
        {{"chunked", NULL}, 1, 400, "not both"},
        {{"gzip, chunked", NULL}, 1, 400, "not both"},
        {{"a", "b", "c", "d", "e", "f", "g", "h", "chunked", NULL}, 0, 400, "too many"},
    };

    check_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

/* Well-formed, ends in chunked, but not the one form libmicrohttpd reads:
 * 501. */
TEST(test_unsupported_coding_is_501)
{
    const struct framing_case cases[] = {
        {{"gzip, chunked", NULL}, 0, 501, "only Transfer-Encoding: chunked"},
        {{"gzip,chunked", NULL}, 0, 501, NULL},
        {{"x-custom, chunked", NULL}, 0, 501, NULL},
        {{"gzip;q=1, chunked", NULL}, 0, 501, NULL},
        {{"chunked;ext=1", NULL}, 0, 501, NULL},
        {{"chunked ; ext=1", NULL}, 0, 501, NULL},
        {{"gzip", "chunked", NULL}, 0, 501, NULL},
        {{"chunked ", NULL}, 0, 501, NULL}, /* valid, but not as libmicrohttpd compares */
        {{"chunked,", NULL}, 0, 501, NULL}, /* an empty element is allowed and skipped */
        {{", chunked", NULL}, 0, 501, NULL},
    };

    check_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_transfer_encoding_is_read_by_length),
        cmocka_unit_test(test_plain_chunked_is_read),
        cmocka_unit_test(test_unreadable_framing_is_400),
        cmocka_unit_test(test_unsupported_coding_is_501),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
