/*
 * Unit tests for labelsel: a label selector read as the apiserver reads one
 * (each problem named, the caps), each operator matched against labels, and
 * the satisfiability the profiles' overlap checks rest on.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "admission/labelsel.h"

#define NS_NAME "kubernetes.io/metadata.name"

/* A sink that keeps every problem line and every allocation, and can be
 * told to fail the next allocation. */
struct sink_state {
    char lines[4096];
    size_t len;
    int problems;
    void *blocks[64];
    size_t n_blocks;
    int fail_alloc;
};

static struct sink_state st;
static struct labelsel sel;
/* The parsed documents, kept until teardown: a selector points into its own. */
static cJSON *docs[8];
static size_t n_docs;

__attribute__((format(printf, 2, 0))) static void sink_problem(void *ctx, const char *fmt,
                                                               va_list ap)
{
    struct sink_state *s = ctx;
    int n = vsnprintf(s->lines + s->len, sizeof(s->lines) - s->len, fmt, ap);

    assert_true(n >= 0 && (size_t)n + 1 < sizeof(s->lines) - s->len);
    s->len += (size_t)n;
    s->lines[s->len++] = '\n';
    s->lines[s->len] = '\0';
    s->problems++;
}

static void *sink_calloc(void *ctx, size_t n, size_t size)
{
    struct sink_state *s = ctx;
    void *p;

    if (s->fail_alloc)
        return NULL;
    assert_true(s->n_blocks < sizeof(s->blocks) / sizeof(*s->blocks));
    p = calloc(n ? n : 1, size);
    s->blocks[s->n_blocks++] = p;
    return p;
}

static const struct labelsel_sink sink = {&st, sink_problem, sink_calloc};

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < st.n_blocks; i++)
        free(st.blocks[i]);
    memset(&st, 0, sizeof(st));
    for (size_t i = 0; i < n_docs; i++)
        cJSON_Delete(docs[i]);
    n_docs = 0;
    return 0;
}

/* Parses text (single quotes for double) as a selector into *out; the
 * document is kept in docs[] until teardown, since *out points into it. */
static int parse_into(struct labelsel *out, const char *text)
{
    char buf[4096];
    size_t n = strlen(text);

    assert_true(n < sizeof(buf) && n_docs < sizeof(docs) / sizeof(*docs));
    for (size_t i = 0; i <= n; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i];
    docs[n_docs] = cJSON_Parse(buf);
    assert_non_null(docs[n_docs]);
    return labelsel_parse(out, docs[n_docs++], "match.namespaces", &sink);
}

static int parse(const char *text)
{
    return parse_into(&sel, text);
}

static cJSON *labels_doc;

static int matches(const char *labels)
{
    char buf[1024];
    size_t n = strlen(labels);
    int r;

    assert_true(n < sizeof(buf));
    for (size_t i = 0; i <= n; i++)
        buf[i] = labels[i] == '\'' ? '"' : labels[i];
    labels_doc = cJSON_Parse(buf);
    assert_non_null(labels_doc);
    r = labelsel_matches(&sel, labels_doc);
    cJSON_Delete(labels_doc);
    return r;
}

TEST(test_match_labels_is_in)
{
    assert_int_equal(parse("{'matchLabels':{'team':'a','tier':'prod'}}"), ERR_OK);
    assert_int_equal(st.problems, 0);
    assert_int_equal(sel.n_reqs, 2);
    assert_int_equal(sel.reqs[0].op, LABELSEL_IN);
    assert_string_equal(sel.reqs[0].key, "team");
    assert_int_equal(sel.reqs[0].n_values, 1);
    assert_true(matches("{'team':'a','tier':'prod','x':'y'}"));
    assert_false(matches("{'team':'b','tier':'prod'}"));
    assert_false(matches("{'team':'a'}"));
    /* A label that is not a string counts as absent. */
    assert_false(matches("{'team':'a','tier':1}"));
}

TEST(test_each_operator)
{
    assert_int_equal(parse("{'matchExpressions':["
                           "{'key':'team','operator':'In','values':['a','b']},"
                           "{'key':'tier','operator':'NotIn','values':['dev']},"
                           "{'key':'gpu','operator':'Exists'},"
                           "{'key':'legacy','operator':'DoesNotExist','values':[]}]}"),
                     ERR_OK);
    assert_int_equal(sel.n_reqs, 4);
    assert_string_equal(labelsel_op_name(sel.reqs[1].op), "NotIn");
    assert_string_equal(labelsel_op_name(sel.reqs[3].op), "DoesNotExist");
    assert_true(matches("{'team':'b','gpu':'','tier':'prod'}"));
    assert_true(matches("{'team':'a','gpu':'x'}"));  /* NotIn holds on an absent label */
    assert_false(matches("{'team':'c','gpu':'x'}")); /* In */
    assert_false(matches("{'team':'a','gpu':'x','tier':'dev'}")); /* NotIn */
    assert_false(matches("{'team':'a'}"));                        /* Exists */
    assert_false(matches("{'team':'a','gpu':'x','legacy':'1'}")); /* DoesNotExist */
}

TEST(test_req_holds_on_absent)
{
    const char *v[] = {"a"};
    struct labelsel_req in = {"k", LABELSEL_IN, v, 1}, notin = {"k", LABELSEL_NOT_IN, v, 1};
    struct labelsel_req ex = {"k", LABELSEL_EXISTS, NULL, 0};
    struct labelsel_req dne = {"k", LABELSEL_DOES_NOT_EXIST, NULL, 0};

    assert_false(labelsel_req_holds(&in, NULL));
    assert_true(labelsel_req_holds(&notin, NULL));
    assert_false(labelsel_req_holds(&ex, NULL));
    assert_true(labelsel_req_holds(&dne, NULL));
    assert_true(labelsel_req_holds(&in, "a"));
    assert_false(labelsel_req_holds(&notin, "a"));
}

TEST(test_parse_problems_named)
{
    assert_int_equal(parse("{'matchLabels':{'bad key!':'a','ok':'not a value'},"
                           "'matchExpressions':[7,"
                           "{'key':'k','operator':'Gt','values':['1']},"
                           "{'key':'k','operator':'In'},"
                           "{'key':'k','operator':'Exists','values':['x']},"
                           "{'key':'k','operator':'In','values':['a'],'extra':1}],"
                           "'typo':1}"),
                     ERR_FAIL);
    assert_contains(st.lines, "match.namespaces: unknown field \"typo\"\n");
    assert_contains(st.lines, "match.namespaces.matchLabels: \"bad key!\" is not a label key");
    assert_contains(st.lines, "match.namespaces.matchLabels.ok: must be a label value");
    assert_contains(st.lines, "match.namespaces.matchExpressions[0]: must be an object");
    assert_contains(st.lines, "matchExpressions[1].operator: must be In, NotIn, Exists or "
                              "DoesNotExist (Gt and Lt are for nodes)");
    assert_contains(st.lines, "matchExpressions[2].values: In takes 1 to 16 values");
    assert_contains(st.lines, "matchExpressions[3].values: must be empty with Exists");
    assert_contains(st.lines, "matchExpressions[4]: unknown field \"extra\"");
    assert_int_equal(st.problems, 8);
}

TEST(test_parse_shapes_refused)
{
    assert_int_equal(parse("{'matchLabels':['a']}"), ERR_FAIL);
    assert_contains(st.lines, "match.namespaces.matchLabels: must be an object of strings");
    assert_int_equal(parse("{'matchExpressions':{}}"), ERR_FAIL);
    assert_contains(st.lines, "matchExpressions: must be an array of requirements");
    assert_int_equal(parse("{'matchExpressions':[{'operator':'Exists'}]}"), ERR_FAIL);
    assert_contains(st.lines, "matchExpressions[0].key: must be a label key");
    assert_int_equal(parse("{'matchExpressions':[{'key':'k','operator':'In','values':'a'}]}"),
                     ERR_FAIL);
    assert_contains(st.lines, "matchExpressions[0].values: must be an array of label values");
    assert_int_equal(parse("{'matchExpressions':[{'key':'k','operator':'In','values':[1]}]}"),
                     ERR_FAIL);
    assert_contains(st.lines, "matchExpressions[0].values: each must be a label value");
}

/* The caps: LABELSEL_MAX_VALUES values, LABELSEL_MAX_REQS requirements. */
TEST(test_caps)
{
    char text[2048];
    size_t n = 0;

    n += (size_t)snprintf(text + n, sizeof(text) - n,
                          "{'matchExpressions':[{'key':'k','operator':'In','values':[");
    for (int i = 0; i < LABELSEL_MAX_VALUES; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s'v%d'", i ? "," : "", i);
    snprintf(text + n, sizeof(text) - n, "]}]}");
    assert_int_equal(parse(text), ERR_OK);
    assert_int_equal(sel.reqs[0].n_values, LABELSEL_MAX_VALUES);
    snprintf(text + n, sizeof(text) - n, ",'one-more']}]}");
    assert_int_equal(parse(text), ERR_FAIL);
    assert_contains(st.lines, "In takes 1 to 16 values");

    n = (size_t)snprintf(text, sizeof(text), "{'matchLabels':{");
    for (int i = 0; i < LABELSEL_MAX_REQS; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s'k%d':'v'", i ? "," : "", i);
    snprintf(text + n, sizeof(text) - n, "}}");
    assert_int_equal(parse(text), ERR_OK);
    assert_int_equal(sel.n_reqs, LABELSEL_MAX_REQS);
    snprintf(text + n, sizeof(text) - n, ",'last':'v'}}");
    assert_int_equal(parse(text), ERR_FAIL);
    assert_contains(st.lines, "match.namespaces: at most 16 requirements in a selector");
    assert_int_equal(sel.n_reqs, LABELSEL_MAX_REQS);
}

TEST(test_out_of_memory)
{
    st.fail_alloc = 1;
    assert_int_equal(parse("{'matchLabels':{'team':'a'}}"), ERR_NOMEM);
    assert_int_equal(st.problems, 0);
}

TEST(test_matches_all)
{
    assert_int_equal(parse("{}"), ERR_OK);
    assert_true(labelsel_matches_all(&sel, NS_NAME));
    assert_int_equal(parse("{'matchExpressions':[{'key':'" NS_NAME "','operator':'Exists'}]}"),
                     ERR_OK);
    assert_true(labelsel_matches_all(&sel, NS_NAME));
    /* Without a label every object has, Exists narrows. */
    assert_false(labelsel_matches_all(&sel, NULL));
    assert_int_equal(parse("{'matchExpressions':[{'key':'gpu','operator':'Exists'}]}"), ERR_OK);
    assert_false(labelsel_matches_all(&sel, NS_NAME));
}

TEST(test_satisfiable_alone)
{
    assert_int_equal(parse("{'matchExpressions':[{'key':'t','operator':'In','values':['a']},"
                           "{'key':'t','operator':'NotIn','values':['a']}]}"),
                     ERR_OK);
    assert_false(labelsel_satisfiable(&sel, NULL, NS_NAME, NULL));
    assert_int_equal(parse("{'matchExpressions':[{'key':'t','operator':'In','values':['a','b']},"
                           "{'key':'t','operator':'NotIn','values':['a']}]}"),
                     ERR_OK);
    assert_true(labelsel_satisfiable(&sel, NULL, NS_NAME, NULL));
    /* The name label is never absent, so DoesNotExist on it contradicts. */
    assert_int_equal(
        parse("{'matchExpressions':[{'key':'" NS_NAME "','operator':'DoesNotExist'}]}"), ERR_OK);
    assert_false(labelsel_satisfiable(&sel, NULL, NS_NAME, NULL));
    assert_true(labelsel_satisfiable(&sel, NULL, NULL, NULL));
}

TEST(test_satisfiable_named_and_pair)
{
    struct labelsel a;

    assert_int_equal(
        parse("{'matchExpressions':[{'key':'" NS_NAME "','operator':'In','values':['team-a']}]}"),
        ERR_OK);
    assert_true(labelsel_satisfiable(&sel, NULL, NS_NAME, "team-a"));
    assert_false(labelsel_satisfiable(&sel, NULL, NS_NAME, "team-b"));
    a = sel;
    assert_int_equal(parse("{'matchLabels':{'tier':'prod'}}"), ERR_OK);
    assert_true(labelsel_satisfiable(&a, &sel, NS_NAME, NULL));
    assert_int_equal(parse("{'matchExpressions':[{'key':'" NS_NAME
                           "','operator':'NotIn','values':['team-a']}]}"),
                     ERR_OK);
    assert_false(labelsel_satisfiable(&a, &sel, NS_NAME, NULL));
}

/* The member check profiles.c shares: exact names only, none for an empty
 * list. */
TEST(test_known_key)
{
    static const char *const keys[] = {"matchLabels", "matchExpressions", NULL};
    static const char *const none[] = {NULL};

    assert_true(labelsel_known_key(keys, "matchLabels"));
    assert_true(labelsel_known_key(keys, "matchExpressions"));
    assert_false(labelsel_known_key(keys, "matchlabels"));
    assert_false(labelsel_known_key(keys, "match"));
    assert_false(labelsel_known_key(keys, ""));
    assert_false(labelsel_known_key(none, "matchLabels"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_match_labels_is_in, teardown),
        cmocka_unit_test_teardown(test_known_key, teardown),
        cmocka_unit_test_teardown(test_each_operator, teardown),
        cmocka_unit_test_teardown(test_req_holds_on_absent, teardown),
        cmocka_unit_test_teardown(test_parse_problems_named, teardown),
        cmocka_unit_test_teardown(test_parse_shapes_refused, teardown),
        cmocka_unit_test_teardown(test_caps, teardown),
        cmocka_unit_test_teardown(test_out_of_memory, teardown),
        cmocka_unit_test_teardown(test_matches_all, teardown),
        cmocka_unit_test_teardown(test_satisfiable_alone, teardown),
        cmocka_unit_test_teardown(test_satisfiable_named_and_pair, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
