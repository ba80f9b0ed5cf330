/*
 * Unit tests for profiles limited to namespaces (match.namespaces, issue
 * 16): how profiles.c reads and refuses them (lists, Kubernetes label
 * selectors, pairs that would tie in some namespace, the "can never win"
 * checks that must let a team copy of a cluster-wide profile through), how
 * select.c prefers them at each rule, and what mutate.c warns when the
 * annotation names another team's profile or the Namespace's labels cannot
 * be read.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/err.h"
#include "admission/mutate.h"
#include "admission/podjson.h"
#include "admission/profiles.h"
#include "admission/select.h"

static struct profiles *cur_ps;
static cJSON *cur_meta, *cur_spec;

static void accepted(const char *text)
{
    profiles_free(support_profiles(text));
}

/* The whole error text must be exactly want (one line, with its newline). */
static void assert_refused_with(const char *text, const char *want)
{
    assert_string_equal(support_profiles_rejected(text), want);
}

static int setup(void **state __attribute__((unused)))
{
    return 0;
}

static int teardown(void **state __attribute__((unused)))
{
    profiles_free(cur_ps);
    cJSON_Delete(cur_meta);
    cJSON_Delete(cur_spec);
    cur_ps = NULL;
    cur_meta = cur_spec = NULL;
    return 0;
}

#define DOC(profiles) "{'profiles':[" profiles "]}"
#define ONE(match)    DOC("{'name':'t','match':" match "}")

/* ---- parsing ---- */

TEST(test_list_is_read)
{
    struct profiles *ps = support_profiles(ONE("{'gpus':8,'namespaces':['team-a','team-b']}"));

    assert_non_null(ps);
    assert_int_equal(ps->p[0].namespaces.n_names, 2);
    assert_string_equal(ps->p[0].namespaces.names[1], "team-b");
    assert_true(profiles_ns_limited(&ps->p[0]));
    assert_false(profiles_ns_needs_labels(&ps->p[0]));
    assert_int_equal(profiles_in_namespace(&ps->p[0], "team-b", NULL), 1);
    assert_int_equal(profiles_in_namespace(&ps->p[0], "team-c", NULL), 0);
    profiles_free(ps);
}

TEST(test_selector_is_read_as_requirements)
{
    struct profiles *ps = support_profiles(
        ONE("{'gpus':8,'namespaces':{'matchLabels':{'team':'a'},'matchExpressions':["
            "{'key':'tier','operator':'NotIn','values':['dev','test']},"
            "{'key':'gpu','operator':'Exists'}]}}"));
    const struct profiles_namespaces *ns;

    assert_non_null(ps);
    ns = &ps->p[0].namespaces;
    assert_true(ns->selector);
    assert_int_equal(ns->sel.n_reqs, 3);
    assert_string_equal(ns->sel.reqs[0].key, "team");
    assert_int_equal(ns->sel.reqs[0].op, LABELSEL_IN);
    assert_string_equal(ns->sel.reqs[0].values[0], "a");
    assert_int_equal(ns->sel.reqs[1].op, LABELSEL_NOT_IN);
    assert_int_equal(ns->sel.reqs[1].n_values, 2);
    assert_int_equal(ns->sel.reqs[2].op, LABELSEL_EXISTS);
    assert_int_equal(ns->sel.reqs[2].n_values, 0);
    assert_true(profiles_ns_needs_labels(&ps->p[0]));
    profiles_free(ps);
}

TEST(test_cluster_wide_is_in_every_namespace)
{
    struct profiles *ps = support_profiles(ONE("{'gpus':8}"));

    assert_non_null(ps);
    assert_false(profiles_ns_limited(&ps->p[0]));
    assert_int_equal(profiles_in_namespace(&ps->p[0], "anything", NULL), 1);
    profiles_free(ps);
}

/* ---- refusals of one profile ---- */

TEST(test_refuses_empty_list)
{
    assert_refused_with(ONE("{'gpus':8,'namespaces':[]}"),
                        "profile \"t\": match.namespaces: must list 1 to 64 namespace names "
                        "(leave it out for a cluster-wide profile)\n");
}

TEST(test_refuses_invalid_names)
{
    const char *want = "profile \"t\": match.namespaces: each entry must be a namespace name (a "
                       "DNS-1123 label: a-z, 0-9, '-', at most 63)\n";

    assert_refused_with(ONE("{'gpus':8,'namespaces':['Team_A']}"), want);
    assert_refused_with(ONE("{'gpus':8,'namespaces':['']}"), want);
    assert_refused_with(ONE("{'gpus':8,'namespaces':[7]}"), want);
    assert_refused_with(ONE("{'gpus':8,'namespaces':['a.b']}"), want);
}

TEST(test_refuses_name_listed_twice)
{
    assert_refused_with(ONE("{'gpus':8,'namespaces':['team-a','team-a']}"),
                        "profile \"t\": match.namespaces: \"team-a\" is listed twice\n");
}

TEST(test_refuses_other_types)
{
    assert_refused_with(ONE("{'gpus':8,'namespaces':'team-a'}"),
                        "profile \"t\": match.namespaces: must be a list of names ([\"team-a\"]) "
                        "or a label selector ({\"matchLabels\": {...}})\n");
}

TEST(test_refuses_selector_operators_kubernetes_refuses)
{
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchExpressions':"
                            "[{'key':'n','operator':'Gt','values':['3']}]}}"),
                        "profile \"t\": match.namespaces.matchExpressions[0].operator: must be "
                        "In, NotIn, Exists or DoesNotExist (Gt and Lt are for nodes)\n");
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchExpressions':"
                            "[{'key':'n','operator':'in','values':['3']}]}}"),
                        "profile \"t\": match.namespaces.matchExpressions[0].operator: must be "
                        "In, NotIn, Exists or DoesNotExist (Gt and Lt are for nodes)\n");
}

TEST(test_refuses_selector_values_kubernetes_refuses)
{
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchExpressions':"
                            "[{'key':'team','operator':'In','values':[]}]}}"),
                        "profile \"t\": match.namespaces.matchExpressions[0].values: In takes 1 "
                        "to 16 values\n");
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchExpressions':"
                            "[{'key':'team','operator':'NotIn'}]}}"),
                        "profile \"t\": match.namespaces.matchExpressions[0].values: NotIn takes "
                        "1 to 16 values\n");
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchExpressions':"
                            "[{'key':'team','operator':'Exists','values':['a']}]}}"),
                        "profile \"t\": match.namespaces.matchExpressions[0].values: must be "
                        "empty with Exists\n");
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchExpressions':"
                            "[{'key':'team','operator':'In','values':['not valid']}]}}"),
                        "profile \"t\": match.namespaces.matchExpressions[0].values: each must "
                        "be a label value (a string of at most 63 letters, digits, '-', '_' or "
                        "'.')\n");
    /* Exists with an empty list is what Kubernetes takes too. */
    accepted(ONE("{'gpus':8,'namespaces':{'matchExpressions':"
                 "[{'key':'team','operator':'Exists','values':[]}]}}"));
}

TEST(test_refuses_selector_keys_and_fields)
{
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchExpressions':"
                            "[{'key':'bad key','operator':'Exists'}]}}"),
                        "profile \"t\": match.namespaces.matchExpressions[0].key: must be a "
                        "label key ([prefix/]name)\n");
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchLabels':{'team':'a b'}}}"),
                        "profile \"t\": match.namespaces.matchLabels.team: must be a label value "
                        "(a string of at most 63 letters, digits, '-', '_' or '.')\n");
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchLabel':{'team':'a'}}}"),
                        "profile \"t\": match.namespaces: unknown field \"matchLabel\"\n");
}

TEST(test_refuses_selector_of_every_namespace)
{
    const char *want = "profile \"t\": match.namespaces: this selector matches every namespace; "
                       "leave namespaces out for a cluster-wide profile\n";

    assert_refused_with(ONE("{'gpus':8,'namespaces':{}}"), want);
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchLabels':{},'matchExpressions':[]}}"),
                        want);
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchExpressions':"
                            "[{'key':'kubernetes.io/metadata.name','operator':'Exists'}]}}"),
                        want);
}

TEST(test_refuses_selector_of_no_namespace)
{
    const char *want = "profile \"t\": match.namespaces: no namespace can match this selector "
                       "(its requirements contradict each other)\n";

    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchLabels':{'team':'a'},"
                            "'matchExpressions':[{'key':'team','operator':'NotIn','values':['a']}]"
                            "}}"),
                        want);
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchExpressions':["
                            "{'key':'team','operator':'Exists'},"
                            "{'key':'team','operator':'DoesNotExist'}]}}"),
                        want);
    assert_refused_with(ONE("{'gpus':8,'namespaces':{'matchExpressions':[{'key':'kubernetes.io/"
                            "metadata.name','operator':'DoesNotExist'}]}}"),
                        want);
}

/* ---- pairs ---- */

#define P8(name, ns) "{'name':'" name "','match':{'gpus':8,'nodeLabels':{'count':'8'}" ns "}}"

TEST(test_team_copy_of_cluster_wide_profile_is_allowed)
{
    /* The main use case: the same rules, other values, for one team. */
    accepted(DOC(P8("roce", "") "," P8("team-a", ",'namespaces':['team-a']") "," P8(
        "nccl218", ",'namespaces':{'matchLabels':{'nccl':'2.18'},"
                   "'matchExpressions':[{'key':'kubernetes.io/metadata.name',"
                   "'operator':'NotIn','values':['team-a']}]}")));
}

TEST(test_refuses_two_lists_sharing_a_name_with_the_same_rules)
{
    assert_refused_with(
        DOC(P8("a", ",'namespaces':['x','team-a']") "," P8("b", ",'namespaces':['team-a','y']")),
        "profiles \"a\" and \"b\" have the same match rules, so neither can ever "
        "be chosen by them; change or remove one; both apply in namespace "
        "\"team-a\"\n");
    accepted(DOC(P8("a", ",'namespaces':['x']") "," P8("b", ",'namespaces':['y']")));
}

TEST(test_selectors_that_cannot_overlap_are_allowed)
{
    accepted(DOC(P8("a", ",'namespaces':{'matchLabels':{'team':'a'}}") "," P8(
        "b", ",'namespaces':{'matchLabels':{'team':'b'}}")));
    accepted(DOC(P8("a", ",'namespaces':{'matchLabels':{'team':'a'}}") "," P8(
        "b", ",'namespaces':{'matchExpressions':[{'key':'team','operator':'NotIn','values':['a']}]"
             "}")));
    accepted(DOC(
        P8("a", ",'namespaces':{'matchExpressions':[{'key':'gpu','operator':'Exists'}]}") "," P8(
            "b", ",'namespaces':{'matchExpressions':[{'key':'gpu','operator':"
                 "'DoesNotExist'}]}")));
}

TEST(test_refuses_selectors_that_can_overlap_with_the_same_rules)
{
    const char *want = "profiles \"a\" and \"b\" have the same match rules, so neither can ever "
                       "be chosen by them; change or remove one; both apply in a namespace whose "
                       "labels match both selectors\n";

    assert_refused_with(DOC(P8("a", ",'namespaces':{'matchLabels':{'team':'a'}}") "," P8(
                            "b", ",'namespaces':{'matchLabels':{'gpu':'x'}}")),
                        want);
    assert_refused_with(
        DOC(P8("a", ",'namespaces':{'matchExpressions':[{'key':'team','operator':'In','values':"
                    "['a','b']}]}") "," P8("b", ",'namespaces':{'matchExpressions':[{'key':'team',"
                                                "'operator':'NotIn','values':['a']}]}")),
        want);
}

TEST(test_list_against_selector_uses_the_name_label)
{
    assert_refused_with(DOC(P8("a", ",'namespaces':['team-a']") "," P8(
                            "b", ",'namespaces':{'matchLabels':{'team':'a'}}")),
                        "profiles \"a\" and \"b\" have the same match rules, so neither can ever "
                        "be chosen by them; change or remove one; both apply in namespace "
                        "\"team-a\" if its labels match\n");
    accepted(DOC(P8("a", ",'namespaces':['team-a']") "," P8(
        "b", ",'namespaces':{'matchLabels':{'team':'a','kubernetes.io/metadata.name':'team-b'}}")));
}

TEST(test_refuses_team_profile_a_cluster_wide_one_always_ties)
{
    /* The cluster-wide profile's labels are a subset of the team's: every
     * pod that fits the team's fits it too, and the team's does not cover
     * it (its labels are not within the cluster-wide one's). */
    assert_refused_with(DOC("{'name':'pool','match':{'nodeLabels':{'pool':'a'}}},"
                            "{'name':'team','match':{'nodeLabels':{'pool':'a','count':'8'},"
                            "'namespaces':['team-a']}}"),
                        "profile \"team\": match.nodeLabels can never win: its nodes also have "
                        "all labels of profile \"pool\"; add a label to \"pool\" that these nodes "
                        "lack\n");
    assert_refused_with(DOC("{'name':'any8','match':{'gpus':8}},"
                            "{'name':'team','match':{'gpus':8,'nodeLabels':{'count':'8'},"
                            "'namespaces':['team-a']}}"),
                        "profile \"team\": match.gpus 8 can never win: profile \"any8\" takes 8 "
                        "GPUs too and fits every pod that \"team\" fits\n");
}

TEST(test_cluster_wide_profile_is_never_refused_for_a_team_one)
{
    /* The team's labels within the cluster-wide one's: it covers it in
     * team-a; elsewhere the cluster-wide one is alone. */
    accepted(DOC("{'name':'h100','match':{'gpus':8,'nodeLabels':{'pool':'a','gpu':'h100'}}},"
                 "{'name':'team','match':{'gpus':8,'nodeLabels':{'pool':'a'},"
                 "'namespaces':['team-a']}}"));
    accepted(DOC("{'name':'h100','match':{'gpus':8,'nodeLabels':{'gpu':'h100'}}},"
                 "{'name':'team','match':{'gpus':8,'namespaces':['team-a']}}"));
}

TEST(test_two_cluster_wide_profiles_are_checked_as_before)
{
    assert_refused_with(DOC(P8("a", "") "," P8("b", "")),
                        "profiles \"a\" and \"b\" have the same match rules, so neither can ever "
                        "be chosen by them; change or remove one\n");
}

TEST(test_defaults_one_per_namespace)
{
    accepted(DOC("{'name':'all','default':true},"
                 "{'name':'a','default':true,'match':{'namespaces':['team-a']}},"
                 "{'name':'b','default':true,'match':{'namespaces':['team-b']}}"));
    assert_refused_with(DOC("{'name':'a','default':true,'match':{'namespaces':['team-a']}},"
                            "{'name':'b','default':true,'match':{'namespaces':['team-b',"
                            "'team-a']}}"),
                        "profile \"b\": default: \"a\" is already the default there; mark at most "
                        "one per namespace; both apply in namespace \"team-a\"\n");
    assert_refused_with(DOC("{'name':'a','default':true},{'name':'b','default':true}"),
                        "profile \"b\": default: \"a\" is already the default; mark at most one\n");
}

/* ---- selection ---- */

struct fake_ns {
    const char *labels; /* JSON with ' for "; NULL: the lookup fails */
    int calls;
};

static int fake_namespace_labels(void *ctx, const char *name, cJSON **labels)
{
    struct fake_ns *f = ctx;

    (void)name;
    f->calls++;
    if (!f->labels)
        return ERR_FAIL;
    *labels = support_json_parse(f->labels);
    return *labels ? ERR_OK : ERR_FAIL;
}

static void run(const char *profiles_text, const char *metadata, const char *spec, const char *ns,
                struct fake_ns *f, struct select_result *out)
{
    struct select_hooks h = {.namespace_labels = fake_namespace_labels, .ctx = f};
    struct podjson r;

    teardown(NULL);
    cur_ps = support_profiles(profiles_text);
    assert_non_null(cur_meta = support_json_parse(metadata));
    assert_non_null(cur_spec = support_json_parse(spec));
    podjson_init(&r);
    select_profile(&r, cur_meta, cur_spec, ns, cur_ps, f ? &h : NULL, out);
    assert_false(podjson_failed(&r));
}

#define GPU(n)                                                                                     \
    "{'containers':[{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'" n "'}}}]"
#define POD8      GPU("8") "}"
#define NODESEL8  GPU("2") ",'nodeSelector':{'count':'8'}}"
#define SEL(expr) ",'namespaces':{'matchExpressions':[" expr "]}"

/* The cluster's two node types, and a team copy of the 8-card one. */
#define CLUSTER                                                                                    \
    "{'name':'roce-8card','match':{'gpus':8,'nodeLabels':{'count':'8'}}},"                         \
    "{'name':'roce-4card','match':{'gpus':4,'nodeLabels':{'count':'4'}}},"

TEST(test_list_member_gets_the_team_copy_by_gpus)
{
    struct select_result r;
    struct fake_ns f = {.labels = "{}"};

    run(DOC(CLUSTER P8("team-a", ",'namespaces':['team-a']")), "{}", POD8, "team-a", &f, &r);
    support_assert_selects(&r, "team-a", SELECT_BY_GPUS);
    run(DOC(CLUSTER P8("team-a", ",'namespaces':['team-a']")), "{}", POD8, "team-b", &f, &r);
    support_assert_selects(&r, "roce-8card", SELECT_BY_GPUS);
    /* No selector anywhere: the Namespace is never asked for. */
    assert_int_equal(f.calls, 0);
}

TEST(test_preferred_at_the_node_labels_rule)
{
    struct select_result r;

    run(DOC(CLUSTER P8("team-a", ",'namespaces':['team-a']")), "{}", NODESEL8, "team-a", NULL, &r);
    support_assert_selects(&r, "team-a", SELECT_BY_NODE_LABELS);
    run(DOC(CLUSTER P8("team-a", ",'namespaces':['team-a']")), "{}", NODESEL8, "other", NULL, &r);
    support_assert_selects(&r, "roce-8card", SELECT_BY_NODE_LABELS);
}

TEST(test_preferred_at_the_default_rule)
{
    struct select_result r;
    const char *doc = DOC(CLUSTER "{'name':'all','default':true},"
                                  "{'name':'team','default':true,'match':{'namespaces':['t']}}");

    run(doc, "{}", GPU("1") "}", "t", NULL, &r);
    support_assert_selects(&r, "team", SELECT_BY_DEFAULT);
    run(doc, "{}", GPU("1") "}", "u", NULL, &r);
    support_assert_selects(&r, "all", SELECT_BY_DEFAULT);
    /* A stronger rule still wins over the team's default. */
    run(doc, "{}", POD8, "t", NULL, &r);
    support_assert_selects(&r, "roce-8card", SELECT_BY_GPUS);
}

TEST(test_team_default_excluded_falls_back_to_cluster_default)
{
    struct select_result r;

    run(DOC("{'name':'all','default':true},"
            "{'name':'team','default':true,'match':{'nodeLabels':{'count':'8'},"
            "'namespaces':['t']}}"),
        "{}", GPU("1") ",'nodeSelector':{'count':'4'}}", "t", NULL, &r);
    support_assert_selects(&r, "all", SELECT_BY_DEFAULT);
}

TEST(test_team_profile_never_settles_a_cluster_tie)
{
    struct select_result r;

    /* The pod may land on 8- or 4-card nodes; the team only has 8-card. */
    run(DOC(CLUSTER P8("team-a", ",'namespaces':['team-a']")), "{}",
        GPU("8") ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
                 "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'count','operator':'In',"
                 "'values':['8','4']}]}]}}}}",
        "team-a", NULL, &r);
    assert_int_equal(r.tie_labels.n, 2);
    assert_string_equal(r.tie_labels.p[0]->name, "roce-4card");
    assert_string_equal(r.tie_labels.p[1]->name, "team-a");
    /* The pod allows both node types itself (count In [8, 4]): nothing
     * decides after the tie, as without the team's profile. */
    assert_true(r.tie_spans_types);
    assert_null(r.profile);
    assert_int_equal(r.rule, SELECT_NONE);
    assert_true(r.tie_gpus.n < 2);
}

TEST(test_team_profile_with_fewer_labels_takes_the_named_place)
{
    struct select_result r;

    /* The pod names the cluster's h100 nodes, which all carry pool=a: the
     * team's profile for pool=a covers them. */
    run(DOC("{'name':'h100','match':{'nodeLabels':{'pool':'a','gpu':'h100'}}},"
            "{'name':'team','match':{'nodeLabels':{'pool':'a'},'namespaces':['t']}}"),
        "{}", GPU("8") ",'nodeSelector':{'gpu':'h100'}}", "t", NULL, &r);
    support_assert_selects(&r, "team", SELECT_BY_NODE_LABELS);
}

TEST(test_selector_operators)
{
    struct select_result r;
    struct fake_ns f = {.labels = "{'team':'a','tier':'prod','kubernetes.io/metadata.name':'ns'}"};
    const char *cases[][2] = {
        {SEL("{'key':'team','operator':'In','values':['b','a']}"), "team"},
        {SEL("{'key':'team','operator':'In','values':['b']}"), "roce-8card"},
        {SEL("{'key':'tier','operator':'NotIn','values':['dev']}"), "team"},
        {SEL("{'key':'tier','operator':'NotIn','values':['prod']}"), "roce-8card"},
        {SEL("{'key':'nope','operator':'NotIn','values':['x']}"), "team"},
        {SEL("{'key':'team','operator':'Exists'}"), "team"},
        {SEL("{'key':'nope','operator':'Exists'}"), "roce-8card"},
        {SEL("{'key':'nope','operator':'DoesNotExist'}"), "team"},
        {SEL("{'key':'team','operator':'DoesNotExist'}"), "roce-8card"},
        {",'namespaces':{'matchLabels':{'team':'a','tier':'prod'}}", "team"},
        {",'namespaces':{'matchLabels':{'team':'a','tier':'dev'}}", "roce-8card"},
        {SEL("{'key':'kubernetes.io/metadata.name','operator':'In','values':['ns']}"), "team"},
    };
    char doc[2048];

    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        snprintf(doc, sizeof(doc),
                 "{'profiles':[%s,{'name':'team','match':{'gpus':8,"
                 "'nodeLabels':{'count':'8'}%s}}]}",
                 P8("roce-8card", ""), cases[i][0]);
        f.calls = 0;
        run(doc, "{}", POD8, "ns", &f, &r);
        if (!r.profile || strcmp(r.profile->name, cases[i][1]) != 0)
            fail_msg("case %zu (%s): got %s, want %s", i, cases[i][0],
                     r.profile ? r.profile->name : "none", cases[i][1]);
        assert_int_equal(f.calls, 1);
    }
}

TEST(test_annotation_to_another_teams_profile)
{
    struct select_result r;

    run(DOC(CLUSTER P8("team-a", ",'namespaces':['team-a']")),
        "{'annotations':{'rdma-webhook.io/profile':'team-a'}}", POD8, "team-b", NULL, &r);
    assert_null(r.profile);
    assert_int_equal(r.rule, SELECT_OTHER_NAMESPACES);
    assert_string_equal(r.other_namespaces->name, "team-a");
    assert_string_equal(select_rule_name(r.rule), "other-namespaces");
    run(DOC(CLUSTER P8("team-a", ",'namespaces':['team-a']")),
        "{'annotations':{'rdma-webhook.io/profile':'team-a'}}", POD8, "team-a", NULL, &r);
    support_assert_selects(&r, "team-a", SELECT_BY_ANNOTATION);
}

TEST(test_lookup_failure_selects_nothing_when_a_selector_could_win)
{
    struct select_result r;
    struct fake_ns f = {.labels = NULL};

    run(DOC(CLUSTER P8("team", SEL("{'key':'team','operator':'Exists'}"))), "{}", POD8, "ns", &f,
        &r);
    assert_null(r.profile);
    assert_int_equal(r.rule, SELECT_NONE);
    assert_true(r.namespace_lookup_failed);
    assert_int_equal(f.calls, 1);
    /* No hook at all is the same: the labels are unknown. */
    run(DOC(CLUSTER P8("team", SEL("{'key':'team','operator':'Exists'}"))), "{}", POD8, "ns", NULL,
        &r);
    assert_null(r.profile);
    assert_true(r.namespace_lookup_failed);
    /* The annotation naming it. */
    run(DOC(CLUSTER P8("team", SEL("{'key':'team','operator':'Exists'}"))),
        "{'annotations':{'rdma-webhook.io/profile':'team'}}", POD8, "ns", &f, &r);
    assert_null(r.profile);
    assert_true(r.namespace_lookup_failed);
}

TEST(test_lookup_failure_is_harmless_when_no_selector_could_win)
{
    struct select_result r;
    struct fake_ns f = {.labels = NULL};

    /* The selector profile is for 4-card nodes, which the pod excludes; the
     * 8-card profile wins by node labels before it matters. */
    run(DOC(CLUSTER "{'name':'team','match':{'gpus':4,'nodeLabels':{'count':'4'}" SEL(
            "{'key':'team','operator':'Exists'}") "}}"),
        "{}", NODESEL8, "ns", &f, &r);
    support_assert_selects(&r, "roce-8card", SELECT_BY_NODE_LABELS);
    assert_false(r.namespace_lookup_failed);
    assert_int_equal(f.calls, 0);
    /* It fits the unconstrained pod at rule 2, but nothing is named there,
     * and the 1-GPU pod is not its count: the default is safe. */
    run(DOC(CLUSTER P8("team", SEL("{'key':'team','operator':'Exists'}")) ","
                                                                          "{'name':'all','default':"
                                                                          "true}"),
        "{}", GPU("1") "}", "ns", &f, &r);
    support_assert_selects(&r, "all", SELECT_BY_DEFAULT);
    assert_false(r.namespace_lookup_failed);
    /* Named at rule 2, it could win there: nothing. */
    run(DOC(CLUSTER P8("team", SEL("{'key':'team','operator':'Exists'}")) ","
                                                                          "{'name':'all','default':"
                                                                          "true}"),
        "{}", NODESEL8, "ns", &f, &r);
    assert_null(r.profile);
    assert_true(r.namespace_lookup_failed);
    /* The annotation naming a cluster-wide profile needs no labels. */
    f.calls = 0;
    run(DOC(CLUSTER P8("team", SEL("{'key':'team','operator':'Exists'}"))),
        "{'annotations':{'rdma-webhook.io/profile':'roce-4card'}}", POD8, "ns", &f, &r);
    support_assert_selects(&r, "roce-4card", SELECT_BY_ANNOTATION);
    assert_int_equal(f.calls, 0);
}

TEST(test_name_label_is_known_without_the_lookup)
{
    struct select_result r;
    struct fake_ns f = {.labels = NULL};

    run(DOC(CLUSTER P8("team", SEL("{'key':'kubernetes.io/metadata.name','operator':'NotIn',"
                                   "'values':['ns']},{'key':'team','operator':'Exists'}"))),
        "{}", POD8, "ns", &f, &r);
    support_assert_selects(&r, "roce-8card", SELECT_BY_GPUS);
    assert_false(r.namespace_lookup_failed);
}

TEST(test_labels_asked_once_per_admission)
{
    struct select_result r;
    struct fake_ns f = {.labels = "{'team':'a'}"};

    run(DOC("{'name':'x','match':{'nodeLabels':{'count':'8'}" SEL(
            "{'key':'team','operator':'In','values':['b']}") "}},"
                                                             "{'name':'y','match':{'gpus':8" SEL(
                                                                 "{'key':'team','operator':'Exists'"
                                                                 "}") "}},"
                                                                      "{'name':'z','default':true"
                                                                      ",'match':{'namespaces':{'"
                                                                      "matchLabels':{'team':'c'}}}"
                                                                      "}"),
        "{}", POD8, "ns", &f, &r);
    support_assert_selects(&r, "y", SELECT_BY_GPUS);
    assert_int_equal(f.calls, 1);
}

/* ---- what the user is told ---- */

static void mutate_in(const char *profiles_text, const char *pod, const char *ns, struct fake_ns *f,
                      struct mutate_result *res)
{
    struct mutate_hooks hooks = {.select = {.namespace_labels = fake_namespace_labels, .ctx = f}};
    struct mutate_input in = {.base = "", .namespace_ = ns};

    teardown(NULL);
    cur_ps = support_profiles(profiles_text);
    assert_non_null(cur_meta = support_json_parse(pod));
    in.object = cur_meta;
    mutate_result_init(res, 1 << 20);
    mutate_object(&in, cur_ps, &hooks, res);
}

#define TARGET_POD "{'metadata':{'labels':{'rdma-webhook.io/inject':'true'}%s},'spec':" POD8 "}"

TEST(test_warning_for_another_teams_profile)
{
    struct mutate_result res;
    struct fake_ns f = {.labels = "{}"};
    char pod[512];

    snprintf(pod, sizeof(pod), TARGET_POD, ",'annotations':{'rdma-webhook.io/profile':'team-a'}");
    mutate_in(DOC(CLUSTER P8("team-a", ",'namespaces':['team-a']")), pod, "team-b", &f, &res);
    assert_int_equal(res.reason, MUTATE_R_UNKNOWN_PROFILE);
    assert_int_equal(res.warnings.n, 1);
    assert_int_equal(res.warnings.kind[0], MUTATE_W_UNKNOWN_PROFILE);
    assert_string_equal(res.warnings.text[0],
                        "rdma-webhook: change rdma-webhook.io/profile: \"team-a\" is limited to "
                        "other namespaces; nothing added");
    mutate_result_free(&res);
}

TEST(test_warning_when_namespace_labels_are_unread)
{
    struct mutate_result res;
    struct fake_ns f = {.labels = NULL};
    char pod[512];

    snprintf(pod, sizeof(pod), TARGET_POD, "");
    mutate_in(DOC(CLUSTER P8("team", SEL("{'key':'team','operator':'Exists'}"))), pod,
              "a-rather-long-namespace-name", &f, &res);
    assert_int_equal(res.reason, MUTATE_R_NO_PROFILE);
    assert_null(res.profile);
    assert_int_equal(res.warnings.n, 1);
    assert_int_equal(res.warnings.kind[0], MUTATE_W_NAMESPACE_LOOKUP);
    assert_string_equal(res.warnings.text[0],
                        "rdma-webhook: check the webhook can read namespaces: labels of "
                        "\"a-rather-long-nam...\" unread, no profile chosen");
    assert_true(strlen(res.warnings.text[0]) <= 120);
    assert_contains(res.warnings.full[0], "\"a-rather-long-namespace-name\"");
    assert_string_equal(mutate_warning_kind_name(MUTATE_W_NAMESPACE_LOOKUP), "namespace_lookup");
    mutate_result_free(&res);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_list_is_read),
        T(test_selector_is_read_as_requirements),
        T(test_cluster_wide_is_in_every_namespace),
        T(test_refuses_empty_list),
        T(test_refuses_invalid_names),
        T(test_refuses_name_listed_twice),
        T(test_refuses_other_types),
        T(test_refuses_selector_operators_kubernetes_refuses),
        T(test_refuses_selector_values_kubernetes_refuses),
        T(test_refuses_selector_keys_and_fields),
        T(test_refuses_selector_of_every_namespace),
        T(test_refuses_selector_of_no_namespace),
        T(test_team_copy_of_cluster_wide_profile_is_allowed),
        T(test_refuses_two_lists_sharing_a_name_with_the_same_rules),
        T(test_selectors_that_cannot_overlap_are_allowed),
        T(test_refuses_selectors_that_can_overlap_with_the_same_rules),
        T(test_list_against_selector_uses_the_name_label),
        T(test_refuses_team_profile_a_cluster_wide_one_always_ties),
        T(test_cluster_wide_profile_is_never_refused_for_a_team_one),
        T(test_two_cluster_wide_profiles_are_checked_as_before),
        T(test_defaults_one_per_namespace),
        T(test_list_member_gets_the_team_copy_by_gpus),
        T(test_preferred_at_the_node_labels_rule),
        T(test_preferred_at_the_default_rule),
        T(test_team_default_excluded_falls_back_to_cluster_default),
        T(test_team_profile_never_settles_a_cluster_tie),
        T(test_team_profile_with_fewer_labels_takes_the_named_place),
        T(test_selector_operators),
        T(test_annotation_to_another_teams_profile),
        T(test_lookup_failure_selects_nothing_when_a_selector_could_win),
        T(test_lookup_failure_is_harmless_when_no_selector_could_win),
        T(test_name_label_is_known_without_the_lookup),
        T(test_labels_asked_once_per_admission),
        T(test_warning_for_another_teams_profile),
        T(test_warning_when_namespace_labels_are_unread),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
