/*
 * Unit tests for webhook/admission/select.c (docs/profiles.md "How a profile is chosen"):
 * annotation > node labels (nodeSelector, required node affinity, and the Node's labels for
 * spec.nodeName, through a fake hook) > GPU count > default; node affinity
 * operators and terms (terms are ORed, expressions within a term ANDed, as in
 * Kubernetes); no guessing: constraints consistent with several profiles are
 * a tie, and the GPU count and default skip the profiles they exclude (the
 * issue's mixed H100/A100 cluster); GPU count summed over regular containers
 * from limits (requests where no limit).
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "admission/podjson.h"
#include "admission/profiles.h"
#include "admission/select.h"

#define GPU8 "{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'8'}}}"
#define GPU4 "{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'4'}}}"
#define GPU2 "{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'2'}}}"

/* Two node types told apart by two labels, a GPU count each, and a default. */
static const char *const LABELLED =
    "{'gpuResources':['nvidia.com/gpu','example.com/gpu'],"
    "'profiles':["
    "{'name':'big','match':{'gpus':8,'nodeLabels':{'type':'big','count':'8'}}},"
    "{'name':'small','match':{'gpus':4,'nodeLabels':{'type':'small','count':'4'}}},"
    "{'name':'fallback','default':true}]}";

/* Same without a default. */
static const char *const NO_DEFAULT =
    "{'gpuResources':['nvidia.com/gpu','example.com/gpu'],"
    "'profiles':["
    "{'name':'big','match':{'gpus':8,'nodeLabels':{'type':'big','count':'8'}}},"
    "{'name':'small','match':{'gpus':4,'nodeLabels':{'type':'small','count':'4'}}}]}";

/* What the last run used; kept alive so the result's pointers stay valid. */
static struct profiles *cur_ps;
static cJSON *cur_meta, *cur_spec;

static void release(void)
{
    profiles_free(cur_ps);
    cJSON_Delete(cur_meta);
    cJSON_Delete(cur_spec);
    cur_ps = NULL;
    cur_meta = cur_spec = NULL;
}

static int teardown(void **state __attribute__((unused)))
{
    release();
    return 0;
}

/* Runs selection on a pod given as metadata and spec JSON (' for "). */
static void run(const char *profiles_text, const char *metadata, const char *spec,
                const struct select_hooks *hooks, struct select_result *out)
{
    struct podjson r;

    release();
    cur_ps = support_profiles(profiles_text);
    cur_meta = support_json_parse(metadata);
    assert_non_null(cur_meta);
    cur_spec = support_json_parse(spec);
    if (!cur_spec)
        fail_msg("test spec does not parse: %s", spec);
    podjson_init(&r);
    select_profile(&r, cur_meta, cur_spec, "default", cur_ps, hooks, out);
    assert_false(podjson_failed(&r));
}

static void assert_selects_none(const struct select_result *r)
{
    if (r->profile)
        fail_msg("selected %s by %s, want none", r->profile->name, select_rule_name(r->rule));
}

/* A spec whose required node affinity is the given nodeSelectorTerms array. */
#define AFFINITY(terms)                                                                            \
    "{'containers':[{'name':'pytorch'}],'affinity':{'nodeAffinity':"                               \
    "{'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':" terms "}}}}"

/* ---- order of the rules ---- */

TEST(test_node_selector_beats_gpu_count)
{
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'nodeSelector':{'count':'4'},'containers':[" GPU8 "]}", NULL, &r);
    support_assert_selects(&r, "small", SELECT_BY_NODE_LABELS);
    assert_int_equal(r.gpus, 8);
}

TEST(test_none_without_default)
{
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'containers':[" GPU2 "]}", NULL, &r);
    assert_selects_none(&r);
    assert_int_equal(r.rule, SELECT_NONE);
    assert_int_equal(r.gpus, 2);
}

TEST(test_zero_gpus_does_not_match_by_count)
{
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'containers':[{'name':'pytorch'}]}", NULL, &r);
    assert_selects_none(&r);
    assert_int_equal(r.gpus, 0);
}

/* ---- annotation ---- */

TEST(test_unknown_annotation_name_selects_nothing)
{
    struct select_result r;

    run(LABELLED, "{'annotations':{'rdma-webhook.io/profile':'nope'}}", "{'containers':[" GPU8 "]}",
        NULL, &r);
    assert_selects_none(&r);
    assert_int_equal(r.rule, SELECT_UNKNOWN_NAME);
    assert_non_null(r.unknown_name);
    assert_string_equal(r.unknown_name, "nope");
}

/* ---- nodeSelector ---- */

TEST(test_node_selector_contradicting_a_profile_label)
{
    struct select_result r;

    /* type says big, count says 4: each profile has one label contradicted. */
    run(NO_DEFAULT, "{}",
        "{'nodeSelector':{'type':'big','count':'4'},'containers':[{'name':'pytorch'}]}", NULL, &r);
    assert_selects_none(&r);
}

/* count 16 excludes both profiles, so the 8-GPU count cannot pick big. */
TEST(test_node_selector_excluding_every_profile_leaves_gpus_nothing)
{
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'nodeSelector':{'count':'16'},'containers':[" GPU8 "]}", NULL, &r);
    assert_selects_none(&r);
    assert_int_equal(r.gpus, 8);
    assert_int_equal(r.tie_labels.n, 0);
}

TEST(test_node_selector_on_unrelated_labels_is_no_demand)
{
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'nodeSelector':{'zone':'a'},'containers':[{'name':'pytorch'}]}", NULL,
        &r);
    assert_selects_none(&r);
}

/* ---- required node affinity ---- */

TEST(test_affinity_in_with_no_matching_value)
{
    struct select_result r;

    run(NO_DEFAULT, "{}",
        AFFINITY("[{'matchExpressions':[{'key':'count','operator':'In','values':['2','16']}]}]"),
        NULL, &r);
    assert_selects_none(&r);
}

/* NotIn also holds on a node without the label at all: it excludes big but
 * does not name small, so only the GPU count can choose small. */
TEST(test_affinity_not_in_excludes_but_names_nothing)
{
    struct select_result r;

    run(NO_DEFAULT, "{}",
        AFFINITY("[{'matchExpressions':[{'key':'type','operator':'NotIn','values':['big']}]}]"),
        NULL, &r);
    assert_selects_none(&r);
    assert_int_equal(r.tie_labels.n, 0);
    run(NO_DEFAULT, "{}",
        "{'containers':[" GPU8 "],'affinity':{'nodeAffinity':{'requiredDuringScheduling"
        "IgnoredDuringExecution':{'nodeSelectorTerms':[{'matchExpressions':[{'key':'type',"
        "'operator':'NotIn','values':['big']}]}]}}}}",
        NULL, &r);
    assert_selects_none(&r); /* big is excluded, small does not take 8 */
}

TEST(test_affinity_does_not_exist_contradicts)
{
    struct select_result r;

    run(NO_DEFAULT, "{}",
        AFFINITY("[{'matchExpressions':[{'key':'count','operator':'DoesNotExist'}]}]"), NULL, &r);
    assert_selects_none(&r);
}

TEST(test_affinity_gt_is_strict)
{
    struct select_result r;

    /* count Gt 8: the 8-card node's label 8 is not greater than 8. */
    run(NO_DEFAULT, "{}",
        AFFINITY("[{'matchExpressions':[{'key':'count','operator':'Gt','values':['8']}]}]"), NULL,
        &r);
    assert_selects_none(&r);
}

TEST(test_affinity_gt_is_numeric_not_textual)
{
    struct select_result r;

    /* "8" > "10" as text, 8 < 10 as numbers: nothing has more than 10. */
    run(NO_DEFAULT, "{}",
        AFFINITY("[{'matchExpressions':[{'key':'count','operator':'Gt','values':['10']}]}]"), NULL,
        &r);
    assert_selects_none(&r);
}

/* Gt and Lt read both sides as Kubernetes does, strconv.ParseInt(v, 10, 64):
 * an optional sign, then digits only, within int64; and exactly one value.
 * strtoll took "" (as 0) and leading spaces. */
TEST(test_affinity_gt_lt_parse_as_kubernetes)
{
    static const struct {
        const char *op, *values, *want; /* NULL: nothing fits; "tie": both fit */
    } cases[] = {
        {"Gt", "['6']", "big"},
        {"Gt", "['+6']", "big"},
        {"Gt", "['006']", "big"},
        {"Lt", "['-0']", NULL},
        {"Gt", "['-9223372036854775808']", "tie"},
        {"Lt", "['9223372036854775807']", "tie"},
        {"Gt", "['']", NULL},
        {"Lt", "[' 6']", NULL},
        {"Lt", "['\\t6']", NULL},
        {"Lt", "['6 ']", NULL},
        {"Gt", "['+']", NULL},
        {"Gt", "['-']", NULL},
        {"Gt", "['+-6']", NULL},
        {"Gt", "['0x6']", NULL},
        {"Gt", "['6.0']", NULL},
        {"Gt", "['1e0']", NULL},
        {"Gt", "['1_0']", NULL},
        {"Lt", "['9223372036854775808']", NULL},
        {"Gt", "['-9223372036854775809']", NULL},
        {"Gt", "['6','100']", NULL},
        {"Gt", "[]", NULL},
        {"Gt", "[6]", NULL},
    };
    char spec[512];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct select_result r;

        snprintf(spec, sizeof(spec),
                 "{'containers':[],'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnored"
                 "DuringExecution':{'nodeSelectorTerms':[{'matchExpressions':[{'key':'count',"
                 "'operator':'%s','values':%s}]}]}}}}",
                 cases[i].op, cases[i].values);
        run(NO_DEFAULT, "{}", spec, NULL, &r);
        if (cases[i].want && strcmp(cases[i].want, "tie") == 0 ? r.tie_labels.n != 2
            : cases[i].want ? !r.profile || strcmp(r.profile->name, cases[i].want) != 0
                            : r.profile != NULL || r.tie_labels.n != 0)
            fail_msg("count %s %s: expected %s, got %s (tie of %zu)", cases[i].op, cases[i].values,
                     cases[i].want ? cases[i].want : "none", r.profile ? r.profile->name : "none",
                     r.tie_labels.n);
        release();
    }
}

/* The profile's side is read the same way: a label " 8" is no number. */
TEST(test_affinity_gt_profile_label_must_be_an_integer)
{
    static const char *const labels =
        "{'profiles':[{'name':'spaced','match':{'nodeLabels':{'count':' 8'}}},"
        "{'name':'plus','match':{'nodeLabels':{'count':'+8'}}}]}";
    struct select_result r;

    run(labels, "{}",
        AFFINITY("[{'matchExpressions':[{'key':'count','operator':'Gt','values':['6']}]}]"), NULL,
        &r);
    support_assert_selects(&r, "plus", SELECT_BY_NODE_LABELS);
}

TEST(test_affinity_expressions_in_a_term_are_anded)
{
    struct select_result r;

    run(NO_DEFAULT, "{}",
        AFFINITY("[{'matchExpressions':[{'key':'type','operator':'In','values':['big']},"
                 "{'key':'count','operator':'In','values':['4']}]}]"),
        NULL, &r);
    assert_selects_none(&r);
}

TEST(test_node_selector_and_affinity_must_both_hold)
{
    struct select_result r;

    run(NO_DEFAULT, "{}",
        "{'nodeSelector':{'type':'small'},'containers':[],'affinity':{'nodeAffinity':"
        "{'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':"
        "[{'matchExpressions':[{'key':'count','operator':'In','values':['8']}]}]}}}}",
        NULL, &r);
    assert_selects_none(&r);
}

TEST(test_preferred_affinity_is_not_a_demand)
{
    struct select_result r;

    run(NO_DEFAULT, "{}",
        "{'containers':[],'affinity':{'nodeAffinity':{'"
        "preferredDuringSchedulingIgnoredDuringExecution':"
        "[{'weight':1,'preference':{'matchExpressions':[{'key':'count','operator':'In','values':['"
        "4']}]}}]}}}",
        NULL, &r);
    assert_selects_none(&r);
}

/* ---- spec.nodeName through the hook ---- */

struct fake_node {
    const char *labels; /* JSON, or NULL to fail */
    char asked[64];
    int calls;
};

static int fake_node_labels(void *ctx, const char *name, cJSON **labels)
{
    struct fake_node *f = ctx;

    f->calls++;
    snprintf(f->asked, sizeof(f->asked), "%s", name);
    if (!f->labels)
        return ERR_FAIL;
    *labels = support_json_parse(f->labels);
    return ERR_OK;
}

TEST(test_node_name_uses_node_labels)
{
    struct fake_node f = {.labels = "{'type':'small','count':'4','zone':'a'}"};
    struct select_hooks h = {.node_labels = fake_node_labels, .ctx = &f};
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'nodeName':'node-7','containers':[" GPU8 "]}", &h, &r);
    support_assert_selects(&r, "small", SELECT_BY_NODE);
    assert_int_equal(f.calls, 1);
    assert_string_equal(f.asked, "node-7");
    assert_false(r.node_lookup_failed);
}

TEST(test_node_needs_all_profile_labels)
{
    struct fake_node f = {.labels = "{'type':'small'}"};
    struct select_hooks h = {.node_labels = fake_node_labels, .ctx = &f};
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'nodeName':'n','containers':[{'name':'pytorch'}]}", &h, &r);
    assert_selects_none(&r);
}

TEST(test_failing_hook_sets_node_lookup_failed_and_falls_back)
{
    struct fake_node f = {.labels = NULL};
    struct select_hooks h = {.node_labels = fake_node_labels, .ctx = &f};
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'nodeName':'n','containers':[" GPU8 "]}", &h, &r);
    assert_true(r.node_lookup_failed);
    support_assert_selects(&r, "big", SELECT_BY_GPUS);
}

TEST(test_no_hook_is_not_a_failure)
{
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'nodeName':'n','containers':[" GPU4 "]}", NULL, &r);
    assert_false(r.node_lookup_failed);
    support_assert_selects(&r, "small", SELECT_BY_GPUS);
}

TEST(test_hook_not_called_without_node_name)
{
    struct fake_node f = {.labels = "{'type':'small','count':'4'}"};
    struct select_hooks h = {.node_labels = fake_node_labels, .ctx = &f};
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'containers':[" GPU8 "]}", &h, &r);
    assert_int_equal(f.calls, 0);
    support_assert_selects(&r, "big", SELECT_BY_GPUS);
}

/* The Node's labels and the pod's own constraints must both hold: a pod
 * bound to a small node that demands big fits neither (the kubelet will
 * refuse it anyway). */
TEST(test_node_name_and_node_selector_must_agree)
{
    struct fake_node f = {.labels = "{'type':'small','count':'4'}"};
    struct select_hooks h = {.node_labels = fake_node_labels, .ctx = &f};
    struct select_result r;

    run(NO_DEFAULT, "{}", "{'nodeName':'n','nodeSelector':{'type':'big'},'containers':[]}", &h, &r);
    assert_selects_none(&r);
    run(NO_DEFAULT, "{}", "{'nodeName':'n','nodeSelector':{'type':'small'},'containers':[]}", &h,
        &r);
    support_assert_selects(&r, "small", SELECT_BY_NODE);
}

/* ---- the mixed cluster ---- */

/* 8-GPU H100 nodes with mlx5_1..mlx5_8 and 4-GPU A100 nodes with
 * mlx5_1..mlx5_4, both in pool train; A100 also takes 1- and 2-GPU pods. */
static const char *const MIXED =
    "{'profiles':["
    "{'name':'h100','match':{'gpus':8,'nodeLabels':{'gpu.product':'H100','pool':'train'}},"
    "'hca':['mlx5_1','mlx5_2','mlx5_3','mlx5_4','mlx5_5','mlx5_6','mlx5_7','mlx5_8']},"
    "{'name':'a100','match':{'gpus':[1,2,4],'nodeLabels':{'gpu.product':'A100','pool':'train'}},"
    "'hca':['mlx5_1','mlx5_2','mlx5_3','mlx5_4']}]}";

#define GPU1 "{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'1'}}}"
#define GPU3 "{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'3'}}}"
/* A spec with one required term of the given expressions and containers. */
#define TERM(exprs, containers)                                                                    \
    "{'containers':[" containers "],'affinity':{'nodeAffinity':"                                   \
    "{'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':"                      \
    "[{'matchExpressions':[" exprs "]}]}}}}"

static void assert_tie(const struct select_tie *t, const char *a, const char *b)
{
    if (t->n != 2)
        fail_msg("tie of %zu profiles, want 2 (%s, %s)", t->n, a, b);
    assert_string_equal(t->p[0]->name, a);
    assert_string_equal(t->p[1]->name, b);
}

TEST(test_mixed_4gpu_pod_without_constraints_by_gpu_count)
{
    struct select_result r;

    run(MIXED, "{}", "{'containers':[" GPU4 "]}", NULL, &r);
    support_assert_selects(&r, "a100", SELECT_BY_GPUS);
    assert_int_equal(r.tie_labels.n, 0); /* no constraint at all: nothing ambiguous */
    assert_int_equal(r.tie_gpus.n, 1);
}

/* The pod chose both node types itself: the GPU count does not choose one
 * for it (which pinning would then impose), whatever the count. */
TEST(test_mixed_in_h100_a100_is_ambiguous)
{
    struct select_result r;

    run(MIXED, "{}", TERM("{'key':'gpu.product','operator':'In','values':['H100','A100']}", GPU4),
        NULL, &r);
    assert_tie(&r.tie_labels, "h100", "a100");
    assert_true(r.tie_spans_types);
    assert_selects_none(&r);
    run(MIXED, "{}", TERM("{'key':'gpu.product','operator':'In','values':['H100','A100']}", GPU8),
        NULL, &r);
    assert_tie(&r.tie_labels, "h100", "a100");
    assert_true(r.tie_spans_types);
    assert_selects_none(&r);
    assert_int_equal(r.tie_gpus.n, 0); /* rule 3 was not tried */
}

/* The same with each type in a term of its own, and with a default: the
 * default does not choose either. */
TEST(test_mixed_types_in_two_terms_and_a_default_choose_nothing)
{
    static const char *const with_default =
        "{'profiles':["
        "{'name':'h100','default':true,'pin':true,'match':{'gpus':8,'nodeLabels':"
        "{'gpu.product':'H100'}}},"
        "{'name':'a100','match':{'nodeLabels':{'gpu.product':'A100'}}}]}";
    struct select_result r;

    run(with_default, "{}",
        AFFINITY("[{'matchExpressions':[{'key':'gpu.product','operator':'In','values':['H100']}]},"
                 "{'matchExpressions':[{'key':'gpu.product','operator':'In','values':['A100']}]}]"),
        NULL, &r);
    assert_tie(&r.tie_labels, "h100", "a100");
    assert_true(r.tie_spans_types);
    assert_selects_none(&r);
    run(with_default, "{}",
        TERM("{'key':'gpu.product','operator':'In','values':['H100','A100']}", GPU8), NULL, &r);
    assert_true(r.tie_spans_types);
    assert_selects_none(&r);
}

TEST(test_mixed_shared_label_only_is_ambiguous)
{
    struct select_result r;

    run(MIXED, "{}", "{'nodeSelector':{'pool':'train'},'containers':[" GPU4 "]}", NULL, &r);
    assert_tie(&r.tie_labels, "h100", "a100");
    assert_false(r.tie_spans_types); /* the label says nothing about the type */
    support_assert_selects(&r, "a100", SELECT_BY_GPUS);
    run(MIXED, "{}", TERM("{'key':'pool','operator':'In','values':['train']}", ""), NULL, &r);
    assert_tie(&r.tie_labels, "h100", "a100");
    assert_selects_none(&r);
}

TEST(test_mixed_exists_on_a_shared_key_is_ambiguous)
{
    struct select_result r;

    run(MIXED, "{}", TERM("{'key':'gpu.product','operator':'Exists'}", GPU8), NULL, &r);
    assert_tie(&r.tie_labels, "h100", "a100");
    assert_true(r.tie_spans_types); /* any product: the pod allows both */
    assert_selects_none(&r);
}

TEST(test_mixed_one_distinct_label_chooses)
{
    struct select_result r;

    run(MIXED, "{}", "{'nodeSelector':{'gpu.product':'H100'},'containers':[" GPU4 "]}", NULL, &r);
    support_assert_selects(&r, "h100", SELECT_BY_NODE_LABELS);
    run(MIXED, "{}", TERM("{'key':'gpu.product','operator':'In','values':['A100','L40']}", GPU8),
        NULL, &r);
    support_assert_selects(&r, "a100", SELECT_BY_NODE_LABELS);
}

/* A pod that demands A100 nodes never gets H100 from its GPU count, and one
 * that demands neither gets nothing. */
TEST(test_mixed_gpu_count_skips_excluded_profiles)
{
    struct select_result r;

    run(MIXED, "{}", TERM("{'key':'gpu.product','operator':'NotIn','values':['H100']}", GPU8), NULL,
        &r);
    assert_selects_none(&r);
    run(MIXED, "{}", TERM("{'key':'gpu.product','operator':'NotIn','values':['H100']}", GPU4), NULL,
        &r);
    support_assert_selects(&r, "a100", SELECT_BY_GPUS);
    run(MIXED, "{}", "{'nodeSelector':{'gpu.product':'L40'},'containers':[" GPU8 "]}", NULL, &r);
    assert_selects_none(&r);
    run(MIXED, "{}", TERM("{'key':'pool','operator':'DoesNotExist'}", GPU4), NULL, &r);
    assert_selects_none(&r);
}

TEST(test_mixed_1_and_2_gpu_pods_by_gpus_list)
{
    struct select_result r;

    run(MIXED, "{}", "{'containers':[" GPU1 "]}", NULL, &r);
    support_assert_selects(&r, "a100", SELECT_BY_GPUS);
    run(MIXED, "{}", "{'containers':[" GPU2 "]}", NULL, &r);
    support_assert_selects(&r, "a100", SELECT_BY_GPUS);
    run(MIXED, "{}", "{'containers':[" GPU3 "]}", NULL, &r);
    assert_selects_none(&r);
    assert_int_equal(r.tie_gpus.n, 0);
}

TEST(test_mixed_bound_pod_uses_the_node)
{
    struct fake_node h100 = {.labels = "{'gpu.product':'H100','pool':'train','zone':'a'}"};
    struct fake_node l40 = {.labels = "{'gpu.product':'L40','pool':'train'}"};
    struct select_hooks h = {.node_labels = fake_node_labels, .ctx = &h100};
    struct select_result r;

    run(MIXED, "{}", "{'nodeName':'n1','containers':[" GPU4 "]}", &h, &r);
    support_assert_selects(&r, "h100", SELECT_BY_NODE);
    h.ctx = &l40;
    run(MIXED, "{}", "{'nodeName':'n2','containers':[" GPU4 "]}", &h, &r);
    assert_selects_none(&r); /* the node is neither type: the 4-GPU count cannot pick a100 */
}

TEST(test_mixed_node_with_both_types_labels_is_ambiguous)
{
    static const char *const overlapping =
        "{'profiles':[{'name':'a','match':{'nodeLabels':{'x':'1'}}},"
        "{'name':'b','match':{'nodeLabels':{'y':'1'}}}]}";
    struct fake_node f = {.labels = "{'x':'1','y':'1'}"};
    struct select_hooks h = {.node_labels = fake_node_labels, .ctx = &f};
    struct select_result r;

    run(overlapping, "{}", "{'nodeName':'n','containers':[]}", &h, &r);
    assert_tie(&r.tie_labels, "a", "b");
    assert_selects_none(&r);
}

/* ---- kubernetes.io/hostname names Nodes (issue 22 item 1) ---- */

/* The admin's profiles: H100 the default, pinned, for 8 GPUs; A100 by
 * its label alone. */
static const char *const ADMIN =
    "{'profiles':["
    "{'name':'h100','default':true,'pin':true,'match':{'gpus':8,'nodeLabels':"
    "{'gpu.product':'H100'}}},"
    "{'name':'a100','match':{'nodeLabels':{'gpu.product':'A100'}}}]}";

/* Nodes by name; a name not listed fails as a 404 would. */
struct fake_nodes {
    const char *name[4];
    const char *labels[4]; /* JSON (' for ") */
    int calls;
};

static int fake_nodes_labels(void *ctx, const char *name, cJSON **labels)
{
    struct fake_nodes *f = ctx;

    f->calls++;
    for (size_t i = 0; i < 4 && f->name[i]; i++)
        if (strcmp(f->name[i], name) == 0) {
            *labels = support_json_parse(f->labels[i]);
            return *labels ? ERR_OK : ERR_FAIL;
        }
    return ERR_FAIL;
}

#define HOST_IN(names, containers)                                                                 \
    TERM("{'key':'kubernetes.io/hostname','operator':'In','values':" names "}", containers)

static struct fake_nodes admin_nodes = {
    .name = {"a100-node-1", "a100-node-2", "h100-node-1", "renamed"},
    .labels = {"{'gpu.product':'A100','kubernetes.io/hostname':'a100-node-1'}",
               "{'gpu.product':'A100','kubernetes.io/hostname':'a100-node-2'}",
               "{'gpu.product':'H100','kubernetes.io/hostname':'h100-node-1'}",
               "{'gpu.product':'H100','kubernetes.io/hostname':'other-host'}"}};

/* What the fake knows, and how often it was asked since hosts_reset(). */
static struct fake_nodes hosts_fake;

static void hosts_reset(void)
{
    hosts_fake = admin_nodes;
}

/* ADMIN's selection for spec, with the Node hook answering from hosts_fake. */
static void run_hosts(const char *spec, struct select_result *r)
{
    static const struct select_hooks h = {.node_labels = fake_nodes_labels, .ctx = &hosts_fake};

    run(ADMIN, "{}", spec, &h, r);
}

/* The pod: its hostname names an A100 node, so the A100 profile,
 * not the default by the 8 GPUs (which mutate would pin: no node then). */
TEST(test_hostname_selector_reads_the_node)
{
    struct select_result r;

    hosts_reset();
    run_hosts("{'nodeSelector':{'kubernetes.io/hostname':'a100-node-1'},'containers':[" GPU8 "]}",
              &r);
    support_assert_selects(&r, "a100", SELECT_BY_NODE);
    assert_int_equal(r.hosts.state, SELECT_HOSTS_KNOWN);
    assert_int_equal(r.hosts.n, 1);
    assert_int_equal(r.hosts.kept, 1);
    assert_int_equal(hosts_fake.calls, 1);
    run_hosts(HOST_IN("['h100-node-1']", GPU8), &r);
    support_assert_selects(&r, "h100", SELECT_BY_NODE);
}

TEST(test_hostnames_of_one_type_choose_it)
{
    struct select_result r;

    hosts_reset();
    run_hosts(HOST_IN("['a100-node-1','a100-node-2','a100-node-1']", GPU8), &r);
    support_assert_selects(&r, "a100", SELECT_BY_NODE);
    assert_int_equal(r.hosts.n, 2); /* a name given twice is read once */
    assert_int_equal(hosts_fake.calls, 2);
    /* In two terms, each naming one. */
    run_hosts(AFFINITY("[{'matchExpressions':[{'key':'kubernetes.io/hostname','operator':'In',"
                       "'values':['a100-node-1']}]},{'matchExpressions':[{'key':'kubernetes.io/"
                       "hostname','operator':'In','values':['a100-node-2']}]}]"),
              &r);
    support_assert_selects(&r, "a100", SELECT_BY_NODE);
}

/* One H100 and one A100 node: the pod chose both types itself. No profile,
 * and rules 3 and 4 are not tried (the default would be pinned). */
TEST(test_hostnames_of_two_types_choose_none)
{
    struct select_result r;

    hosts_reset();
    run_hosts(HOST_IN("['h100-node-1','a100-node-1']", GPU8), &r);
    assert_selects_none(&r);
    assert_int_equal(r.hosts.state, SELECT_HOSTS_KNOWN);
    assert_tie(&r.tie_labels, "h100", "a100");
    assert_true(r.tie_spans_types);
    assert_int_equal(r.tie_gpus.n, 0);
}

/* A named Node the pod's other constraints rule out is not one of its
 * Nodes. */
TEST(test_hostname_node_ruled_out_by_other_constraints)
{
    struct select_result r;

    hosts_reset();
    run_hosts(TERM("{'key':'kubernetes.io/hostname','operator':'In','values':['h100-node-1',"
                   "'a100-node-1']},{'key':'gpu.product','operator':'NotIn','values':['H100']}",
                   GPU8),
              &r);
    support_assert_selects(&r, "a100", SELECT_BY_NODE);
    assert_int_equal(r.hosts.kept, 2); /* name[1], a100-node-1 */
    run_hosts("{'nodeSelector':{'kubernetes.io/hostname':'a100-node-1','gpu.product':'H100'},"
              "'containers':[" GPU8 "]}",
              &r);
    assert_selects_none(&r); /* no node at all: the default is excluded too */
    assert_int_equal(r.hosts.kept, 0);
}

/* The Nodes cannot be told: chosen from the pod alone (mutate does not
 * pin), saying why. */
TEST(test_hostnames_unknown)
{
    struct select_result r;

    hosts_reset();
    run_hosts(HOST_IN("['a100-node-1','gone']", GPU8), &r);
    support_assert_selects(&r, "h100", SELECT_BY_GPUS);
    assert_int_equal(r.hosts.state, SELECT_HOSTS_UNKNOWN);
    assert_int_equal(r.hosts.why, SELECT_HOSTS_UNREAD);
    assert_string_equal(r.hosts.unknown, "gone");
    run_hosts(HOST_IN("['renamed']", GPU8), &r);
    assert_int_equal(r.hosts.state, SELECT_HOSTS_UNKNOWN);
    assert_int_equal(r.hosts.why, SELECT_HOSTS_OTHER_HOSTNAME);
    assert_string_equal(r.hosts.unknown, "renamed");
    run(ADMIN, "{}", HOST_IN("['a100-node-1']", GPU8), NULL, &r);
    assert_int_equal(r.hosts.state, SELECT_HOSTS_UNKNOWN);
    assert_int_equal(r.hosts.why, SELECT_HOSTS_NO_API);
    support_assert_selects(&r, "h100", SELECT_BY_GPUS);
    hosts_fake.calls = 0;
    run_hosts(HOST_IN("['n1','n2','n3','n4','n5','n6','n7','n8','n9']", GPU8), &r);
    assert_int_equal(r.hosts.state, SELECT_HOSTS_UNKNOWN);
    assert_int_equal(r.hosts.why, SELECT_HOSTS_TOO_MANY);
    assert_int_equal(r.hosts.n, SELECT_HOSTS_MAX);
    assert_int_equal(hosts_fake.calls, 0); /* none looked up */
    run_hosts(AFFINITY("[{'matchExpressions':[{'key':'kubernetes.io/hostname','operator':'In',"
                       "'values':['a100-node-1']}]},{'matchExpressions':[{'key':'zone','operator':"
                       "'In','values':['a']}]}]"),
              &r);
    assert_int_equal(r.hosts.state, SELECT_HOSTS_UNKNOWN);
    assert_int_equal(r.hosts.why, SELECT_HOSTS_SOME_TERMS);
    assert_int_equal(hosts_fake.calls, 0);
}

/* spec.nodeName decides; NotIn and Exists on the hostname name no Node. */
TEST(test_hostnames_not_read)
{
    struct select_result r;

    hosts_reset();
    run_hosts("{'nodeName':'h100-node-1','nodeSelector':{'kubernetes.io/hostname':'h100-node-1'},"
              "'containers':[" GPU8 "]}",
              &r);
    support_assert_selects(&r, "h100", SELECT_BY_NODE);
    assert_int_equal(r.hosts.state, SELECT_HOSTS_NONE);
    assert_int_equal(hosts_fake.calls, 1);
    run_hosts(
        TERM("{'key':'kubernetes.io/hostname','operator':'NotIn','values':['a100-node-1']}", GPU8),
        &r);
    assert_int_equal(r.hosts.state, SELECT_HOSTS_NONE);
    support_assert_selects(&r, "h100", SELECT_BY_GPUS);
    assert_int_equal(hosts_fake.calls, 1);
}

/* Terms are ORed: the pod may land where any of them holds, so a profile is
 * named only when every term requires one of its keys. */
TEST(test_every_term_must_name_the_profile)
{
    struct select_result r;

    run(MIXED, "{}",
        AFFINITY("[{'matchExpressions':[{'key':'gpu.product','operator':'In','values':['H100']}]},"
                 "{'matchExpressions':[{'key':'zone','operator':'In','values':['a']}]}]"),
        NULL, &r);
    assert_selects_none(&r); /* zone a: any node type, without a warning */
    assert_int_equal(r.tie_labels.n, 0);
}

TEST(test_empty_term_matches_no_node)
{
    struct select_result r;

    run(MIXED, "{}",
        "{'containers':[" GPU4 "],'affinity':{'nodeAffinity':{'requiredDuringScheduling"
        "IgnoredDuringExecution':{'nodeSelectorTerms':[{}]}}}}",
        NULL, &r);
    assert_selects_none(&r);
}

TEST(test_profile_without_node_labels_is_never_excluded)
{
    static const char *const plain =
        "{'profiles':[{'name':'big','match':{'gpus':8,'nodeLabels':{'t':'big'}}},"
        "{'name':'plain','match':{'gpus':4}}]}";
    struct select_result r;

    run(plain, "{}", "{'nodeSelector':{'t':'other'},'containers':[" GPU4 "]}", NULL, &r);
    support_assert_selects(&r, "plain", SELECT_BY_GPUS);
    run(plain, "{}", "{'nodeSelector':{'t':'other'},'containers':[" GPU8 "]}", NULL, &r);
    assert_selects_none(&r);
}

TEST(test_default_is_skipped_when_excluded)
{
    static const char *const with_default =
        "{'profiles':[{'name':'std','default':true,'match':{'nodeLabels':{'t':'std'}}}]}";
    struct select_result r;

    run(with_default, "{}", "{'nodeSelector':{'t':'big'},'containers':[" GPU4 "]}", NULL, &r);
    assert_selects_none(&r);
    run(with_default, "{}", "{'nodeSelector':{'zone':'a'},'containers':[" GPU4 "]}", NULL, &r);
    support_assert_selects(&r, "std", SELECT_BY_DEFAULT);
}

TEST(test_gpu_count_tie_chooses_none)
{
    static const char *const overlap =
        "{'profiles':[{'name':'x','match':{'gpus':8,'nodeLabels':{'t':'x'}}},"
        "{'name':'y','match':{'gpus':[4,8],'nodeLabels':{'t':'y'}}},"
        "{'name':'any','default':true}]}";
    struct select_result r;

    run(overlap, "{}", "{'containers':[" GPU8 "]}", NULL, &r);
    assert_tie(&r.tie_gpus, "x", "y");
    support_assert_selects(&r, "any", SELECT_BY_DEFAULT);
    run(overlap, "{}", "{'nodeSelector':{'t':'y'},'containers':[" GPU8 "]}", NULL, &r);
    support_assert_selects(&r, "y", SELECT_BY_NODE_LABELS);
}

TEST(test_tie_counts_past_what_it_lists)
{
    static const char *const five =
        "{'profiles':[{'name':'p1','match':{'nodeLabels':{'k':'1','all':'y'}}},"
        "{'name':'p2','match':{'nodeLabels':{'k':'2','all':'y'}}},"
        "{'name':'p3','match':{'nodeLabels':{'k':'3','all':'y'}}},"
        "{'name':'p4','match':{'nodeLabels':{'k':'4','all':'y'}}},"
        "{'name':'p5','match':{'nodeLabels':{'k':'5','all':'y'}}}]}";
    struct select_result r;

    run(five, "{}", "{'nodeSelector':{'all':'y'},'containers':[]}", NULL, &r);
    assert_int_equal(r.tie_labels.n, 5);
    assert_string_equal(r.tie_labels.p[SELECT_TIE_LISTED - 1]->name, "p4");
    assert_selects_none(&r);
}

/* ---- GPU count ---- */

TEST(test_gpus_summed_over_containers)
{
    struct select_result r;

    run(NO_DEFAULT, "{}",
        "{'containers':[{'name':'a','resources':{'limits':{'nvidia.com/gpu':'4'}}},"
        "{'name':'b','resources':{'limits':{'nvidia.com/gpu':'4'}}}]}",
        NULL, &r);
    assert_int_equal(r.gpus, 8);
    support_assert_selects(&r, "big", SELECT_BY_GPUS);
}

TEST(test_init_containers_not_counted)
{
    struct select_result r;

    run(NO_DEFAULT, "{}",
        "{'initContainers':[{'name':'i','resources':{'limits':{'nvidia.com/gpu':'4'}}}],"
        "'containers':[" GPU4 "]}",
        NULL, &r);
    assert_int_equal(r.gpus, 4);
    support_assert_selects(&r, "small", SELECT_BY_GPUS);
}

TEST(test_rule_names)
{
    assert_string_equal(select_rule_name(SELECT_BY_ANNOTATION), "annotation");
    assert_string_equal(select_rule_name(SELECT_BY_NODE_LABELS), "node-labels");
    assert_string_equal(select_rule_name(SELECT_BY_NODE), "node");
    assert_string_equal(select_rule_name(SELECT_BY_GPUS), "gpus");
    assert_string_equal(select_rule_name(SELECT_BY_DEFAULT), "default");
    assert_string_equal(select_rule_name(SELECT_NONE), "none");
    assert_string_equal(select_rule_name(SELECT_UNKNOWN_NAME), "unknown-name");
}

/* Pods that one rule chooses a profile for, without hooks: one a row, in
 * the order of the sections above; the row's name is printed before its
 * check, so a failure's output says which. */
static const struct selects_case {
    const char *name, *profiles, *metadata, *spec, *want;
    enum select_rule rule;
} selects_cases[] = {
    {"annotation_beats_node_selector_and_gpus", NO_DEFAULT,
     "{'annotations':{'rdma-webhook.io/profile':'small'}}",
     "{'nodeSelector':{'count':'8'},'containers':[" GPU8 "]}", "small", SELECT_BY_ANNOTATION},
    {"gpu_count_beats_default", LABELLED, "{}", "{'containers':[" GPU4 "]}", "small",
     SELECT_BY_GPUS},
    {"default_when_nothing_else_matches", LABELLED, "{}", "{'containers':[" GPU2 "]}", "fallback",
     SELECT_BY_DEFAULT},
    {"annotation_selects_profile_without_match", LABELLED,
     "{'annotations':{'rdma-webhook.io/profile':'fallback'}}", "{'containers':[" GPU8 "]}",
     "fallback", SELECT_BY_ANNOTATION},
    {"node_selector_with_one_of_two_labels", NO_DEFAULT, "{}",
     "{'nodeSelector':{'type':'small'},'containers':[" GPU8 "]}", "small", SELECT_BY_NODE_LABELS},
    {"shipped_style_gpu_count_label",
     "{'profiles':[{'name':'roce-8card','match':{'nodeLabels':{'nvidia.com/gpu.count':'8'}}},"
     "{'name':'roce-4card','match':{'nodeLabels':{'nvidia.com/gpu.count':'4'}}}]}",
     "{}", "{'nodeSelector':{'nvidia.com/gpu.count':'4'},'containers':[]}", "roce-4card",
     SELECT_BY_NODE_LABELS},
    {"affinity_in", NO_DEFAULT, "{}",
     AFFINITY("[{'matchExpressions':[{'key':'count','operator':'In','values':['4']}]}]"), "small",
     SELECT_BY_NODE_LABELS},
    {"affinity_exists_with_in", NO_DEFAULT, "{}",
     AFFINITY("[{'matchExpressions':[{'key':'count','operator':'Exists'},"
              "{'key':'type','operator':'In','values':['small']}]}]"),
     "small", SELECT_BY_NODE_LABELS},
    {"affinity_gt", NO_DEFAULT, "{}",
     AFFINITY("[{'matchExpressions':[{'key':'count','operator':'Gt','values':['6']}]}]"), "big",
     SELECT_BY_NODE_LABELS},
    {"affinity_lt", NO_DEFAULT, "{}",
     AFFINITY("[{'matchExpressions':[{'key':'count','operator':'Lt','values':['6']}]}]"), "small",
     SELECT_BY_NODE_LABELS},
    {"affinity_terms_are_ored", NO_DEFAULT, "{}",
     AFFINITY("[{'matchExpressions':[{'key':'count','operator':'In','values':['16']}]},"
              "{'matchExpressions':[{'key':'count','operator':'In','values':['4']}]}]"),
     "small", SELECT_BY_NODE_LABELS},
    {"match_fields_term_constrains_no_label", MIXED, "{}",
     "{'containers':[" GPU4 "],'affinity':{'nodeAffinity':{'requiredDuringScheduling"
     "IgnoredDuringExecution':{'nodeSelectorTerms':[{'matchFields':[{'key':'metadata.name',"
     "'operator':'In','values':['n1']}]}]}}}}",
     "a100", SELECT_BY_GPUS},
};

TEST(test_rule_chooses)
{
    for (size_t i = 0; i < sizeof selects_cases / sizeof selects_cases[0]; i++) {
        const struct selects_case *c = &selects_cases[i];
        struct select_result r;

        print_message("%s\n", c->name);
        run(c->profiles, c->metadata, c->spec, NULL, &r);
        support_assert_selects(&r, c->want, c->rule);
    }
}

/* The GPUs a pod asks for, one pod spec a row; a failure names the row. */
static const struct gpus_case {
    const char *name, *spec;
    int gpus;
} gpus_cases[] = {
    {"gpus_summed_over_gpu_resource_names",
     "{'containers':[{'name':'a','resources':{'limits':{'nvidia.com/gpu':'2',"
     "'example.com/gpu':'2'}}}]}",
     4},
    {"gpus_from_requests_when_no_limit",
     "{'containers':[{'name':'a','resources':{'requests':{'nvidia.com/gpu':'4'}}}]}", 4},
    {"gpus_limit_wins_over_request",
     "{'containers':[{'name':'a','resources':{'limits':{'nvidia.com/gpu':'4'},"
     "'requests':{'nvidia.com/gpu':'8'}}}]}",
     4},
    {"non_gpu_resources_not_counted",
     "{'containers':[{'name':'a','resources':{'limits':{'cpu':'8','rdma/hca':'4',"
     "'other.com/gpu':'8'}}}]}",
     0},
    {"gpus_as_json_number",
     "{'containers':[{'name':'a','resources':{'limits':{'nvidia.com/gpu':8}}}]}", 8},
};

TEST(test_gpus_counted)
{
    for (size_t i = 0; i < sizeof gpus_cases / sizeof gpus_cases[0]; i++) {
        const struct gpus_case *c = &gpus_cases[i];
        struct select_result r;

        run(NO_DEFAULT, "{}", c->spec, NULL, &r);
        if (r.gpus != c->gpus)
            fail_msg("%s: %d GPUs, want %d", c->name, r.gpus, c->gpus);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_gpus_counted, teardown),
        cmocka_unit_test_teardown(test_rule_chooses, teardown),
        cmocka_unit_test_teardown(test_node_selector_beats_gpu_count, teardown),
        cmocka_unit_test_teardown(test_none_without_default, teardown),
        cmocka_unit_test_teardown(test_zero_gpus_does_not_match_by_count, teardown),
        cmocka_unit_test_teardown(test_unknown_annotation_name_selects_nothing, teardown),
        cmocka_unit_test_teardown(test_node_selector_contradicting_a_profile_label, teardown),
        cmocka_unit_test_teardown(test_node_selector_excluding_every_profile_leaves_gpus_nothing,
                                  teardown),
        cmocka_unit_test_teardown(test_node_selector_on_unrelated_labels_is_no_demand, teardown),
        cmocka_unit_test_teardown(test_affinity_in_with_no_matching_value, teardown),
        cmocka_unit_test_teardown(test_affinity_not_in_excludes_but_names_nothing, teardown),
        cmocka_unit_test_teardown(test_affinity_does_not_exist_contradicts, teardown),
        cmocka_unit_test_teardown(test_affinity_gt_is_strict, teardown),
        cmocka_unit_test_teardown(test_affinity_gt_is_numeric_not_textual, teardown),
        cmocka_unit_test_teardown(test_affinity_expressions_in_a_term_are_anded, teardown),
        cmocka_unit_test_teardown(test_node_selector_and_affinity_must_both_hold, teardown),
        cmocka_unit_test_teardown(test_preferred_affinity_is_not_a_demand, teardown),
        cmocka_unit_test_teardown(test_node_name_uses_node_labels, teardown),
        cmocka_unit_test_teardown(test_node_needs_all_profile_labels, teardown),
        cmocka_unit_test_teardown(test_failing_hook_sets_node_lookup_failed_and_falls_back,
                                  teardown),
        cmocka_unit_test_teardown(test_no_hook_is_not_a_failure, teardown),
        cmocka_unit_test_teardown(test_hook_not_called_without_node_name, teardown),
        cmocka_unit_test_teardown(test_node_name_and_node_selector_must_agree, teardown),
        cmocka_unit_test_teardown(test_mixed_4gpu_pod_without_constraints_by_gpu_count, teardown),
        cmocka_unit_test_teardown(test_mixed_in_h100_a100_is_ambiguous, teardown),
        cmocka_unit_test_teardown(test_mixed_types_in_two_terms_and_a_default_choose_nothing,
                                  teardown),
        cmocka_unit_test_teardown(test_mixed_shared_label_only_is_ambiguous, teardown),
        cmocka_unit_test_teardown(test_mixed_exists_on_a_shared_key_is_ambiguous, teardown),
        cmocka_unit_test_teardown(test_mixed_one_distinct_label_chooses, teardown),
        cmocka_unit_test_teardown(test_mixed_gpu_count_skips_excluded_profiles, teardown),
        cmocka_unit_test_teardown(test_mixed_1_and_2_gpu_pods_by_gpus_list, teardown),
        cmocka_unit_test_teardown(test_mixed_bound_pod_uses_the_node, teardown),
        cmocka_unit_test_teardown(test_mixed_node_with_both_types_labels_is_ambiguous, teardown),
        cmocka_unit_test_teardown(test_hostname_selector_reads_the_node, teardown),
        cmocka_unit_test_teardown(test_hostnames_of_one_type_choose_it, teardown),
        cmocka_unit_test_teardown(test_hostnames_of_two_types_choose_none, teardown),
        cmocka_unit_test_teardown(test_hostname_node_ruled_out_by_other_constraints, teardown),
        cmocka_unit_test_teardown(test_hostnames_unknown, teardown),
        cmocka_unit_test_teardown(test_hostnames_not_read, teardown),
        cmocka_unit_test_teardown(test_every_term_must_name_the_profile, teardown),
        cmocka_unit_test_teardown(test_empty_term_matches_no_node, teardown),
        cmocka_unit_test_teardown(test_profile_without_node_labels_is_never_excluded, teardown),
        cmocka_unit_test_teardown(test_default_is_skipped_when_excluded, teardown),
        cmocka_unit_test_teardown(test_gpu_count_tie_chooses_none, teardown),
        cmocka_unit_test_teardown(test_tie_counts_past_what_it_lists, teardown),
        cmocka_unit_test_teardown(test_gpus_summed_over_containers, teardown),
        cmocka_unit_test_teardown(test_init_containers_not_counted, teardown),
        cmocka_unit_test_teardown(test_rule_names, teardown),
        cmocka_unit_test_teardown(test_affinity_gt_lt_parse_as_kubernetes, teardown),
        cmocka_unit_test_teardown(test_affinity_gt_profile_label_must_be_an_integer, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
