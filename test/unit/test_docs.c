/*
 * Unit tests for webhook/host/docs.c: YAML scalars and keys become the JSON that
 * kubectl (sigs.k8s.io/yaml, go-yaml v2) makes of them; streams of several
 * documents and Lists; what is refused, with its line and column (syntax,
 * garbage after JSON, NaN, bad tags, duplicate and odd keys, merge keys,
 * aliases that name nothing); the depth, value, alias and byte caps, a
 * "billion laughs" document and aliases of a large scalar among them; what
 * kubectl refuses (!!timestamp that is none, directives, "--- x") refused;
 * numbers written back exactly; and YAML written back reads as the same
 * JSON, strings that look like something else quoted.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/docs.h"

static struct docs d;
static char err[ERR_LEN];

static int setup(void **state __attribute__((unused)))
{
    docs_init(&d);
    err[0] = '\0';
    return 0;
}

static int teardown(void **state __attribute__((unused)))
{
    docs_free(&d);
    return 0;
}

static int read_with(const char *text, const struct docs_limits *lim)
{
    docs_free(&d);
    err[0] = '\0';
    return docs_read(&d, text, strlen(text), lim, err, sizeof(err));
}

static int read_text(const char *text)
{
    return read_with(text, NULL);
}

/* The JSON text of document i, compact; the caller frees it. */
static char *doc_json(size_t i)
{
    char *s;

    assert_true(i < d.n);
    s = cJSON_PrintUnformatted(d.v[i]);
    assert_non_null(s);
    return s;
}

static void assert_doc(size_t i, const char *want)
{
    char *got = doc_json(i);

    if (strcmp(got, want) != 0) {
        char msg[512];

        snprintf(msg, sizeof(msg), "document %zu: expected %s, got %s", i, want, got);
        free(got);
        fail_msg("%s", msg);
    }
    free(got);
}

static void assert_refused(const char *text, int code, const char *needle)
{
    int rc = read_text(text);

    if (rc != code)
        fail_msg("%s: expected %d, got %d (%s)", text, code, rc, err);
    assert_contains(err, needle);
    assert_int_equal(d.n, 0);
}

/* Each line is kubectl's reading of the same YAML (`kubectl patch --local
 * -f - -o json` on a document with these values). */
TEST(test_scalars_as_kubectl_reads_them)
{
    static const struct {
        const char *yaml, *json;
    } cases[] = {
        {"yes", "true"},
        {"\"yes\"", "\"yes\""},
        {"'true'", "\"true\""},
        {"y", "true"},
        {"Off", "false"},
        {"n", "false"},
        {"TRUE", "true"},
        {"tRUE", "\"tRUE\""},
        {"~", "null"},
        {"NULL", "null"},
        {"", "null"},
        {"0x10", "16"},
        {"0777", "511"},
        {"09", "9"},
        {"1_000", "1000"},
        {"0x_1F", "31"},
        {"+12", "12"},
        {"-0", "0"},
        {"0o17", "15"},
        {"0b101", "5"},
        {"-0b11", "-3"},
        {"0x", "\"0x\""},
        {".5", "0.5"},
        {"1e3", "1000"},
        {"1.0", "1"},
        {"0.", "0"},
        {"-.5e-3", "-0.0005"},
        {"+.5", "0.5"},
        {"1e400", "\"1e400\""},
        {"2024-01-01", "\"2024-01-01\""},
        {"1:20", "\"1:20\""},
        {"12345678901234567890", "1.2345678901234567e+19"},
        {"99999999999999999999", "1e+20"},
        {"-x", "\"-x\""},
        {"abc", "\"abc\""},
        {"!!str 5", "\"5\""},
        {"!!int \"5\"", "5"},
        {"!!float 3", "3"},
        {"!!bool \"yes\"", "true"},
        {"!!null \"\"", "null"},
        {"!foo x", "\"x\""},
        {"! 5", "\"5\""},
        {"\"a\\tb\"", "\"a\\tb\""},
        {"|\n  a\n  b\n", "\"a\\nb\\n\""},
        {">-\n  a\n  b\n", "\"a b\""},
    };
    char text[128], want[160];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(text, sizeof(text), "v: %s\n", cases[i].yaml);
        if (read_text(text) != ERR_OK)
            fail_msg("%s: %s", cases[i].yaml, err);
        snprintf(want, sizeof(want), "{\"v\":%s}", cases[i].json);
        assert_int_equal(d.format, DOCS_YAML);
        assert_doc(0, want);
    }
}

TEST(test_keys_become_strings)
{
    assert_int_equal(read_text("1: one\nyes: x\n0x10: z\nn: 5\n\"2\": q\n!!str 3: r\n-7: s\n"),
                     ERR_OK);
    assert_doc(0, "{\"1\":\"one\",\"true\":\"x\",\"16\":\"z\",\"false\":5,\"2\":\"q\",\"3\":\"r\","
                  "\"-7\":\"s\"}");
}

TEST(test_refusals_name_the_place)
{
    assert_refused("a: 1\nb: .inf\n", ERR_FAIL, "line 2, column 4");
    assert_refused("a: -.Inf\n", ERR_FAIL, "JSON cannot hold");
    assert_refused("a: !!int abc\n", ERR_FAIL, "does not fit its tag");
    assert_refused("a: !!bool 1\n", ERR_FAIL, "does not fit its tag");
    assert_refused("a: !!binary aGVsbG8=\n", ERR_FAIL, "!!binary");
    assert_refused("~: x\n", ERR_FAIL, "a null key at line 1, column 1");
    assert_refused("1.5: x\n", ERR_FAIL, "a number key");
    assert_refused("a: 1\nb: 2\na: 3\n", ERR_FAIL, "key \"a\" twice in the mapping at line 1");
    assert_refused("m:\n  1: x\n  0x1: y\n", ERR_FAIL, "key \"1\" twice");
    assert_refused("base: &b {x: 1}\nm:\n  <<: *b\n", ERR_FAIL, "merge keys (<<)");
    assert_refused("? [a, b]\n: x\n", ERR_FAIL, "a sequence as a key");
    assert_refused("? {a: b}\n: x\n", ERR_FAIL, "a mapping as a key");
    assert_refused("a: \"x\\0y\"\n", ERR_FAIL, "NUL");
    assert_refused("a: *nothing\n", ERR_FAIL, "alias *nothing names no anchor");
    assert_refused("a: &x [1, *x]\n", ERR_FAIL, "alias *x is inside its own anchor");
    assert_refused("&k a: 1\n", ERR_FAIL, "an anchor on a key");
    assert_refused("{\"a\": \"x\\u0000y\"}", ERR_FAIL, "\\u0000 at line 1, column 9");
    assert_refused("{\"a\": 1, \"a\": 2}", ERR_FAIL, "key \"a\" twice in the object at the top");
    assert_refused("{\"s\": {\"c\": [{}, {\"r\": 1, \"v\": 2, \"r\": 3}]}}", ERR_FAIL,
                   "key \"r\" twice in the object at .s.c[1]");
    /* Beyond a double's range cJSON reads an infinity, which would come
     * back as null (found by fuzz_docs: [999993e400099990]). */
    assert_refused("[999993e400099990]", ERR_FAIL, "the number at [0] is out of range");
    assert_refused("{\"a\": {\"b\": [0, -1e309]}}", ERR_FAIL,
                   "the number at .a.b[1] is out of range");
}

/* Text after the value is an error, in either format, and names where. */
TEST(test_garbage_is_an_error)
{
    assert_refused("{\"kind\": \"Pod\"} x", ERR_FAIL,
                   "not valid JSON: more text after the value at line 1, column 17");
    assert_refused("{\"kind\": \"Pod\"}\n{\"kind\": \"Pod\"}", ERR_FAIL,
                   "not valid JSON: more text after the value at line 2, column 1");
    assert_refused("[1,\n 2,]", ERR_FAIL, "line 2, column 4");
    assert_refused("kind: Pod\nmetadata: {}\n}}}\n", ERR_FAIL, "not valid YAML at line 3");
    assert_refused("kind: Pod\nname\n", ERR_FAIL, "not valid YAML at line 3, column 1");
    assert_refused("a: [1, 2\n", ERR_FAIL, "not valid YAML");
    assert_refused("a: \xff\n", ERR_FAIL, "not valid YAML: invalid leading UTF-8 octet at line 1");
    /* A document that is a bare string is read; the caller decides. */
    assert_int_equal(read_text("just words\n"), ERR_OK);
    assert_doc(0, "\"just words\"");
}

TEST(test_streams_of_documents)
{
    assert_int_equal(
        read_text(
            "# c\na: 1\n---\nb: 2\n...\n---\n---\n# nothing\n--- # a comment\nnull\n---\nc: [3]\n"),
        ERR_OK);
    assert_int_equal(d.n, 3);
    assert_doc(0, "{\"a\":1}");
    assert_doc(1, "{\"b\":2}");
    assert_doc(2, "{\"c\":[3]}");
    assert_int_equal(d.line[0], 2);
    assert_int_equal(d.line[1], 4);
    assert_int_equal(d.line[2], 12);
    /* Anchors do not cross documents. */
    assert_refused("a: &x 1\n---\nb: *x\n", ERR_FAIL, "names no anchor");
    /* Empty input: no document at all. */
    assert_int_equal(read_text(""), ERR_OK);
    assert_int_equal(d.n, 0);
    assert_int_equal(read_text(" \n\n# only a comment\n"), ERR_OK);
    assert_int_equal(d.n, 0);
    /* JSON: one value, after whitespace; null is no document. */
    assert_int_equal(read_text("\n  {\"a\": [1, {\"b\": null}]}\n"), ERR_OK);
    assert_int_equal(d.format, DOCS_JSON);
    assert_doc(0, "{\"a\":[1,{\"b\":null}]}");
}

TEST(test_lists)
{
    char kind[32];

    assert_int_equal(
        read_text("kind: List\nitems:\n- kind: Pod\n- kind: Service\n---\n"
                  "apiVersion: v1\nkind: PodList\nitems: [{metadata: {name: a}}]\n---\n"
                  "kind: Pod\nitems: []\n---\nkind: List\nitems: {}\n"),
        ERR_OK);
    assert_int_equal(d.n, 4);
    assert_int_equal(cJSON_GetArraySize(docs_list_items(d.v[0], kind, sizeof(kind))), 2);
    assert_string_equal(kind, "");
    assert_int_equal(cJSON_GetArraySize(docs_list_items(d.v[1], kind, sizeof(kind))), 1);
    assert_string_equal(kind, "Pod");
    assert_null(docs_list_items(d.v[2], kind, sizeof(kind)));
    assert_null(docs_list_items(d.v[3], kind, sizeof(kind)));
}

TEST(test_aliases_are_copies)
{
    assert_int_equal(read_text("a: &x {k: [1, 2]}\nb: *x\nc: &s hello\nd: [*s, *x]\n*s : key\n"),
                     ERR_OK);
    assert_doc(
        0, "{\"a\":{\"k\":[1,2]},\"b\":{\"k\":[1,2]},\"c\":\"hello\",\"d\":[\"hello\",{\"k\":[1,"
           "2]}],\"hello\":\"key\"}");
    /* The latest definition of a name wins. */
    assert_int_equal(read_text("a: &x 1\nb: &x 2\nc: *x\n"), ERR_OK);
    assert_doc(0, "{\"a\":1,\"b\":2,\"c\":2}");
}

TEST(test_depth_cap)
{
    struct docs_limits lim = {.depth = 5, .nodes = 1000, .aliases = 10};

    assert_int_equal(read_with("a: [[[[1]]]]\n", &lim), ERR_OK);
    assert_int_equal(read_with("a: [[[[[1]]]]]\n", &lim), ERR_TOO_BIG);
    assert_contains(err, "nested deeper than 5 at line 1, column 8");
    assert_int_equal(read_with("a:\n b:\n  c:\n   d:\n    e:\n     f: 1\n", &lim), ERR_TOO_BIG);
    assert_int_equal(read_with("{\"a\":[[[[1]]]]}", &lim), ERR_OK);
    assert_int_equal(read_with("{\"a\":[[[[[1]]]]]}", &lim), ERR_TOO_BIG);
    assert_contains(err, "nested deeper than 5");
    /* An alias counts as deep as what it copies. */
    assert_int_equal(read_with("x: &d [[1]]\ny: [[*d]]\n", &lim), ERR_OK);
    assert_int_equal(read_with("x: &d [[1]]\ny: [[[*d]]]\n", &lim), ERR_TOO_BIG);
    /* The default: JSON's own limit, which a deep flow sequence reaches
     * without libyaml growing its stacks past it. */
    {
        size_t n = 5000;
        char *deep = malloc(2 * n + 8);

        assert_non_null(deep);
        memset(deep, '[', n);
        memset(deep + n, ']', n);
        deep[2 * n] = '\0';
        memcpy(deep, "a: ", 3);
        assert_int_equal(read_text(deep), ERR_TOO_BIG);
        assert_contains(err, "nested deeper than 1000");
        free(deep);
    }
}

TEST(test_node_cap)
{
    struct docs_limits lim = {.depth = 10, .nodes = 6, .aliases = 10};

    /* The mapping and five values. */
    assert_int_equal(read_with("a: 1\nb: 2\nc: 3\nd: 4\ne: 5\n", &lim), ERR_OK);
    assert_int_equal(read_with("a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\n", &lim), ERR_TOO_BIG);
    assert_contains(err, "more than 6 values");
    /* Across documents of a stream. */
    assert_int_equal(read_with("a: 1\nb: 2\n---\nc: 3\nd: 4\ne: 5\n", &lim), ERR_TOO_BIG);
    /* Aliases count as the values they copy. */
    assert_int_equal(read_with("a: &x [1, 2]\nb: *x\n", &lim), ERR_TOO_BIG);
    assert_int_equal(read_with("[1, 2, 3, 4, 5, 6]", &lim), ERR_TOO_BIG);
}

/* Nine levels of nine aliases: 9^9 values if expanded. It stops at the
 * value cap, having copied little. */
TEST(test_billion_laughs_stops_at_the_cap)
{
    char text[2048];
    size_t n = 0;

    n += (size_t)snprintf(text + n, sizeof(text) - n,
                          "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (int i = 1; i < 9; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n,
                              "l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n",
                              i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    assert_true(n < sizeof(text) - 1);
    assert_int_equal(read_text(text), ERR_TOO_BIG);
    assert_contains(err, "values (aliases expanded)");
}

TEST(test_alias_cap)
{
    struct docs_limits lim = {.depth = 10, .nodes = 1000, .aliases = 3};

    assert_int_equal(read_with("a: &x 1\nb: [*x, *x, *x]\n", &lim), ERR_OK);
    assert_int_equal(read_with("a: &x 1\nb: [*x, *x, *x, *x]\n", &lim), ERR_TOO_BIG);
    assert_contains(err, "more than 3 aliases");
    assert_int_equal(read_with("a: &a 1\nb: &b 2\nc: &c 3\nd: &d 4\n", &lim), ERR_TOO_BIG);
    assert_contains(err, "more than 3 anchors");
}

/* Aliases are counted in bytes too: a few copies of a large value stop at
 * the byte cap, which is 4 times the input, at least 16 MiB. */
TEST(test_aliases_bounded_in_bytes)
{
    struct docs_limits lim = {.depth = 10, .nodes = 1000, .aliases = 100, .bytes = 64};
    size_t big = 1u << 20;
    char *text = malloc(big + 256);
    size_t n;

    /* 1 + 2 + 20 + 2 + 1 + 20 bytes; one more alias is 20 more. */
    assert_int_equal(read_with("a: &x abcdefghijklmnopqrs\nb: [*x]\n", &lim), ERR_OK);
    assert_int_equal(read_with("a: &x abcdefghijklmnopqrs\nb: [*x, *x]\n", &lim), ERR_TOO_BIG);
    assert_contains(err, "aliases expand the input to more than 64 bytes");
    assert_contains(err, "at line 2, column 9");
    /* An alias used as a key counts its name. */
    assert_int_equal(read_with("a: &x abcdefghijklmnopqrs\nb: {*x : 1, c: *x}\n", &lim),
                     ERR_TOO_BIG);
    /* The default, for a 1 MiB scalar: 16 MiB in all. */
    assert_non_null(text);
    n = (size_t)snprintf(text, 16, "s: &s ");
    memset(text + n, 'x', big);
    n += big;
    n += (size_t)snprintf(text + n, 64, "\nl: [*s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, ");
    n += (size_t)snprintf(text + n, 64, "*s, *s]\n");
    assert_int_equal(read_text(text), ERR_OK);
    n -= strlen("]\n");
    n += (size_t)snprintf(text + n, 64, ", *s, *s]\n");
    assert_int_equal(read_text(text), ERR_TOO_BIG);
    assert_contains(err, "more than 16777216 bytes (the limit: 4 times the input's size");
    /* The bomb of issue 28, smaller: an anchor of 400 aliases of a 64 KiB
     * scalar, aliased 590 times, is 15 GB; it stops before 16 MiB. */
    {
        struct dynbuf b;

        dynbuf_init(&b, 1u << 22);
        dynbuf_addstr(&b, "s: &s ");
        for (int i = 0; i < 65536; i++)
            dynbuf_addc(&b, 'y');
        dynbuf_addstr(&b, "\nm: &m [*s");
        for (int i = 1; i < 400; i++)
            dynbuf_addstr(&b, ", *s");
        dynbuf_addstr(&b, "]\nl: [*m");
        for (int i = 1; i < 590; i++)
            dynbuf_addstr(&b, ", *m");
        assert_int_equal(dynbuf_addstr(&b, "]\n"), ERR_OK);
        assert_int_equal(read_text(dynbuf_ptr(&b)), ERR_TOO_BIG);
        assert_contains(err, "aliases expand the input to more than 16777216 bytes");
        assert_contains(err, "at line 2");
        dynbuf_free(&b);
    }
    free(text);
}

/* The text of docs_write() for document 0 as format; the caller frees. */
static char *doc_written(enum docs_format format)
{
    struct dynbuf out;

    dynbuf_init(&out, 1 << 20);
    assert_int_equal(docs_write(&out, d.v[0], format, err, sizeof(err)), ERR_OK);
    return dynbuf_steal(&out);
}

/* Numbers come out as they were read: an integer of YAML exactly (kubectl
 * keeps int64 and uint64), a JSON number as its text, a double in the
 * fewest digits that read back as it (DBL_MAX is no infinity). */
TEST(test_numbers_written_exactly)
{
    char *json, *yaml;

    assert_int_equal(read_text("a: 9000000000000001\nb: 1.7976931348623157e308\n"
                               "c: 0x8000000000000000\nd: 18446744073709551615\n"
                               "e: -9223372036854775808\nf: 9007199254740993\ng: [0.1, 1e3, "
                               "1_0, -0]\n"),
                     ERR_OK);
    json = doc_written(DOCS_JSON);
    assert_string_equal(json, "{\n\t\"a\":\t9000000000000001,\n"
                              "\t\"b\":\t1.7976931348623157e+308,\n"
                              "\t\"c\":\t9223372036854775808,\n"
                              "\t\"d\":\t18446744073709551615,\n"
                              "\t\"e\":\t-9223372036854775808,\n"
                              "\t\"f\":\t9007199254740993,\n"
                              "\t\"g\":\t[0.1, 1000, 10, 0]\n}\n");
    yaml = doc_written(DOCS_YAML);
    assert_contains(yaml, "a: 9000000000000001\nb: 1.7976931348623157e+308\n"
                          "c: 9223372036854775808\nd: 18446744073709551615\n");
    /* Read back, the same text again. */
    assert_int_equal(read_text(json), ERR_OK);
    free(yaml);
    yaml = doc_written(DOCS_JSON);
    assert_string_equal(yaml, json);
    free(yaml);
    free(json);
    /* JSON keeps its own spelling where the double would read otherwise. */
    assert_int_equal(read_text("{\"a\": [9007199254740993, 1.0, 1E3, -0, 2.5, 1e-400, "
                               "123456789012345678901234567890], \"b\": \"1\"}"),
                     ERR_OK);
    json = doc_written(DOCS_JSON);
    assert_contains(json, "[9007199254740993, 1.0, 1E3, -0, 2.5, 1e-400, "
                          "123456789012345678901234567890]");
    yaml = doc_written(DOCS_YAML);
    assert_contains(yaml, "- 9007199254740993\n- 1.0\n- 1E3\n- -0\n- 2.5\n- 1e-400\n");
    free(yaml);
    free(json);
}

/* What kubectl refuses is refused here too, and what it reads is read the
 * same: !!timestamp must be one (go-yaml's formats), a shorthand tag right
 * before ',' is kubectl's tag, directives and "--- x" lines stop kubectl. */
TEST(test_as_kubectl_or_refused)
{
    static const char *const timestamps[] = {
        "2001-12-14",
        "2001-1-2",
        "2001-12-14t21:59:43.10-05:00",
        "2001-12-14T21:59:43Z",
        "2000-2-29 1:2:3",
        "2001-12-14 21:59:43.123456789012",
        "2001-12-14T1:2:3+24:60",
    };
    static const char *const not_timestamps[] = {
        "x",
        "2001-2-29",
        "2001-13-01",
        "2001-1-1T24:00:00Z",
        "2001-1-1t1:2:3+05",
        "01-1-1",
        "2001-1-1T1:2:3",
        "2001-1-1 1:2:3Z",
        "2001-1-1T1:2:60Z",
        "2001-1-1T1:2:3+25:00",
        "2001-001-1",
    };
    char text[128], want[128];

    for (size_t i = 0; i < sizeof(timestamps) / sizeof(timestamps[0]); i++) {
        snprintf(text, sizeof(text), "a: !!timestamp %s\n", timestamps[i]);
        if (read_text(text) != ERR_OK)
            fail_msg("%s: %s", text, err);
        snprintf(want, sizeof(want), "{\"a\":\"%s\"}", timestamps[i]);
        assert_doc(0, want);
    }
    for (size_t i = 0; i < sizeof(not_timestamps) / sizeof(not_timestamps[0]); i++) {
        snprintf(text, sizeof(text), "a: !!timestamp %s\n", not_timestamps[i]);
        assert_refused(text, ERR_FAIL, "tagged !!timestamp that is no timestamp");
    }
    assert_refused("a: [!!str, 0x8000000000000000]\n", ERR_FAIL, "a tag right before ','");
    assert_refused("a: {!foo, b: 1}\n", ERR_FAIL, "a tag right before ','");
    assert_refused("a: [!<tag:x>, 2]\n", ERR_FAIL, "a tag right before ','");
    /* libyaml's marks count characters: the check finds the ',' after é. */
    assert_refused("é: [é, !!str, 2]\n", ERR_FAIL, "a tag right before ','");
    assert_int_equal(read_text("a: [!!str , 1, !<tag:x> , 2]\n"), ERR_OK);
    assert_doc(0, "{\"a\":[\"\",1,\"\",2]}");
    /* go-yaml: !!float takes an int64, not a larger integer; a key beyond
     * int64 is one kubectl cannot make a string of. */
    assert_int_equal(read_text("a: !!float -9223372036854775808\n"), ERR_OK);
    assert_refused("a: !!float 9223372036854775808\n", ERR_FAIL, "does not fit its tag");
    assert_refused("0xffffffffffffffff: 1\n", ERR_FAIL, "a key beyond int64");
    assert_refused("a: 1\n---\n...\n---\nb: 1\n", ERR_FAIL, "line 3 is \"...\" right after");
    assert_refused("%YAML 1.1\n---\na: 1\n", ERR_FAIL, "a %YAML or %TAG directive");
    assert_refused("%YAML 1.2\n---\na: 1\n", ERR_FAIL, "a %YAML or %TAG directive");
    assert_refused("a: 1\n---\n%TAG !e! tag:e,2000:\n---\nb: 1\n", ERR_FAIL, "directive");
    assert_refused("a: 1\n--- b: 2\n", ERR_FAIL, "line 2 starts with \"---\" and goes on");
    assert_refused("--- null\n", ERR_FAIL, "line 1 starts with");
    assert_refused("a: 1\n----\n", ERR_FAIL, "line 2 starts with");
    assert_refused("a: 1\n---#c\n", ERR_FAIL, "line 2 starts with");
    assert_refused("a: |\n  x\n--- |\n  y\n", ERR_FAIL, "line 3 starts with");
    assert_int_equal(read_text("a: 1\n--- # c\nb: 2\n---\t\r\nc: 3\n"), ERR_OK);
    assert_int_equal(d.n, 3);
    assert_doc(2, "{\"c\":3}");
}

/* What YAML comes out as, and that it reads back as the same JSON. */
TEST(test_write_yaml_round_trips)
{
    static const char *const tricky[] = {
        "true",  "yes",   "y",      "Off",        "null",
        "~",     "",      "123",    "0x1F",       "1e3",
        ".5",    "1_0",   "1:20",   "2024-01-01", "2024-01-01T00:00:00Z",
        "<<",    "=",     "-",      "- a",        "a: b",
        "#c",    " lead", "trail ", "a\nb",       "a\nb\n",
        "\"q\"", "'s'",   "é ü",    "\t",         "@x",
        "%p",    "*a",    "&a",     "!t",         "|",
        ">",     "[x]",   "{x}",    "?",          "0",
        "-1",    "+1",    "0.5",    ".inf",       "NaN",
    };
    struct dynbuf out;
    cJSON *v = cJSON_CreateObject();
    cJSON *keys = cJSON_CreateObject();

    assert_non_null(v);
    for (size_t i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++) {
        char k[8];

        snprintf(k, sizeof(k), "s%zu", i);
        cJSON_AddStringToObject(v, k, tricky[i]);
        cJSON_AddNumberToObject(keys, tricky[i], (double)i);
    }
    cJSON_AddItemToObject(v, "keys", keys);
    cJSON_AddItemToObject(v, "n", cJSON_CreateNumber(-0.0005));
    cJSON_AddItemToObject(v, "big", cJSON_CreateNumber(1e20));
    cJSON_AddItemToObject(v, "t", cJSON_CreateTrue());
    cJSON_AddItemToObject(v, "z", cJSON_CreateNull());
    cJSON_AddItemToObject(v, "e", cJSON_CreateArray());
    cJSON_AddItemToObject(v, "o", cJSON_CreateObject());
    dynbuf_init(&out, 1 << 20);
    assert_int_equal(docs_write(&out, v, DOCS_YAML, err, sizeof(err)), ERR_OK);
    if (read_text(dynbuf_ptr(&out)) != ERR_OK)
        fail_msg("%s in:\n%s", err, dynbuf_ptr(&out));
    assert_int_equal(d.n, 1);
    if (!cJSON_Compare(v, d.v[0], 1)) {
        char *got = doc_json(0);

        fail_msg("read back differs:\n%s\nas %s", dynbuf_ptr(&out), got);
    }
    assert_contains(dynbuf_ptr(&out), "s0: \"true\"\n");
    assert_contains(dynbuf_ptr(&out), "s23: |-\n  a\n  b\ns24: |\n  a\n  b\n");
    assert_contains(dynbuf_ptr(&out), "e: []\no: {}\n");
    dynbuf_free(&out);
    cJSON_Delete(v);
}

TEST(test_write_layout)
{
    cJSON *v =
        cJSON_Parse("{\"a\":[{\"b\":1,\"c\":[\"x\"]}],\"d\":{\"e\":\"f\"},\"long\":\""
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                    "aaaa aaaaaaaaaaaaaaaaaa\"}");
    struct dynbuf out;

    assert_non_null(v);
    dynbuf_init(&out, 1 << 16);
    assert_int_equal(docs_write(&out, v, DOCS_YAML, err, sizeof(err)), ERR_OK);
    assert_string_equal(dynbuf_ptr(&out),
                        "a:\n- b: 1\n  c:\n  - x\nd:\n  e: f\nlong: "
                        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                        "aaaa aaaaaaaaaaaaaaaaaa\n");
    dynbuf_reset(&out);
    assert_int_equal(docs_write(&out, v, DOCS_JSON, err, sizeof(err)), ERR_OK);
    {
        char *want = cJSON_Print(v);

        assert_non_null(want);
        assert_int_equal(dynbuf_len(&out), strlen(want) + 1);
        assert_memory_equal(dynbuf_ptr(&out), want, strlen(want));
        assert_int_equal(dynbuf_ptr(&out)[strlen(want)], '\n');
        free(want);
    }
    /* Over the cap: nothing is left half-written. */
    dynbuf_free(&out);
    dynbuf_init(&out, 20);
    assert_int_equal(dynbuf_addstr(&out, "kept"), ERR_OK);
    assert_int_equal(docs_write(&out, v, DOCS_YAML, err, sizeof(err)), ERR_TOO_BIG);
    assert_string_equal(dynbuf_ptr(&out), "kept");
    assert_int_equal(docs_write(&out, v, DOCS_JSON, err, sizeof(err)), ERR_TOO_BIG);
    assert_string_equal(dynbuf_ptr(&out), "kept");
    dynbuf_free(&out);
    cJSON_Delete(v);
}

int main(void)
{
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_scalars_as_kubectl_reads_them),
        T_(test_keys_become_strings),
        T_(test_refusals_name_the_place),
        T_(test_garbage_is_an_error),
        T_(test_streams_of_documents),
        T_(test_lists),
        T_(test_aliases_are_copies),
        T_(test_depth_cap),
        T_(test_node_cap),
        T_(test_billion_laughs_stops_at_the_cap),
        T_(test_alias_cap),
        T_(test_aliases_bounded_in_bytes),
        T_(test_numbers_written_exactly),
        T_(test_as_kubectl_or_refused),
        T_(test_write_yaml_round_trips),
        T_(test_write_layout),
    };
#undef T_

    return cmocka_run_group_tests(tests, NULL, NULL);
}
