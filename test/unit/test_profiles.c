/*
 * Unit tests for webhook/admission/profiles.c: the shipped manifests/profiles.json
 * loads as CONTRACT.md describes it, defaults merge into profiles, and each
 * validation error (docs/profiles.md, validation) names the profile and the field. Run from the
 * repository root (make unit does).
 */
#include "unit.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "admission/profiles.h"

static struct dynbuf errors;

static int setup(void **state __attribute__((unused)))
{
    dynbuf_init(&errors, 1 << 16);
    return 0;
}

static int teardown(void **state __attribute__((unused)))
{
    dynbuf_free(&errors);
    return 0;
}

/* The line of errors that contains needle (to check both parts on one line). */
static const char *line_with(const char *text, const char *needle, char *out, size_t outlen)
{
    const char *hit = strstr(text, needle), *start, *end;

    if (!hit)
        fail_msg("expected \"%s\" in \"%s\"", needle, text);
    for (start = hit; start > text && start[-1] != '\n'; start--)
        ;
    end = strchr(hit, '\n');
    if (!end)
        end = hit + strlen(hit);
    assert_true((size_t)(end - start) < outlen);
    memcpy(out, start, (size_t)(end - start));
    out[end - start] = '\0';
    return out;
}

/* The shipped profiles, or a failed test (load_shipped_profiles says why). */
static struct profiles *load_shipped(void)
{
    struct profiles *ps = load_shipped_profiles();

    if (!ps)
        fail_msg("%s did not load", SHIPPED_PROFILES);
    return ps;
}

static void assert_env(const struct profiles_entry *p, const char *name, const char *want)
{
    const char *got = profiles_kv_get(&p->env, name);

    if (!got)
        fail_msg("profile %s: env %s missing", p->name, name);
    assert_string_equal(got, want);
}

/* ---- the shipped profiles ---- */

TEST(test_shipped_has_two_profiles)
{
    struct profiles *ps = load_shipped();

    assert_int_equal(ps->n, 2);
    assert_non_null(profiles_find(ps, "roce-8card"));
    assert_non_null(profiles_find(ps, "roce-4card"));
    assert_null(profiles_find(ps, "roce-2card"));
    assert_false(ps->p[0].is_default);
    assert_false(ps->p[1].is_default);
    profiles_free(ps);
}

TEST(test_shipped_8card_env_merged_from_defaults)
{
    struct profiles *ps = load_shipped();
    const struct profiles_entry *p = profiles_find(ps, "roce-8card");

    assert_env(p, "NCCL_IB_DISABLE", "0");
    assert_env(p, "NCCL_SOCKET_IFNAME", "eth0");
    assert_env(p, "NCCL_IB_TIMEOUT", "22");
    assert_env(p, "NCCL_IB_QPS_PER_CONNECTION", "8");
    assert_env(p, "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
    assert_null(profiles_kv_get(&p->env, "NCCL_IB_GID_INDEX"));
    assert_int_equal(p->env.n, 5);
    profiles_free(ps);
}

TEST(test_shipped_4card_hca)
{
    struct profiles *ps = load_shipped();
    const struct profiles_entry *p = profiles_find(ps, "roce-4card");

    assert_env(p, "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4");
    assert_env(p, "NCCL_IB_TIMEOUT", "22");
    profiles_free(ps);
}

TEST(test_shipped_match_and_resources)
{
    struct profiles *ps = load_shipped();
    const struct profiles_entry *p8 = profiles_find(ps, "roce-8card");
    const struct profiles_entry *p4 = profiles_find(ps, "roce-4card");

    assert_int_equal(p8->n_gpus, 1);
    assert_int_equal(p8->gpus[0], 8);
    assert_int_equal(p4->n_gpus, 1);
    assert_int_equal(p4->gpus[0], 4);
    assert_false(p8->pin);
    assert_string_equal(profiles_kv_get(&p8->node_labels, "nvidia.com/gpu.count"), "8");
    assert_string_equal(profiles_kv_get(&p4->node_labels, "nvidia.com/gpu.count"), "4");
    assert_string_equal(profiles_kv_get(&p8->resources, "rdma/hca"), "1");
    assert_string_equal(profiles_kv_get(&p4->resources, "rdma/hca"), "1");
    profiles_free(ps);
}

TEST(test_shipped_common_settings)
{
    struct profiles *ps = load_shipped();
    const struct profiles_entry *p = profiles_find(ps, "roce-8card");

    assert_string_equal(p->scheduler_name, "volcano");
    assert_true(p->ipc_lock);
    assert_true(p->shm);
    assert_null(p->shm_size_limit);
    assert_false(p->init_containers);
    assert_int_equal(p->host_network_env.n, 0);
    profiles_free(ps);
}

TEST(test_shipped_gpu_resources_prefix_targets)
{
    struct profiles *ps = load_shipped();

    assert_int_equal(ps->n_gpu_resources, 3);
    assert_string_equal(ps->gpu_resources[0], "nvidia.com/gpu");
    assert_string_equal(ps->gpu_resources[1], "baidu.com/a100_80g_cgpu");
    assert_string_equal(ps->gpu_resources[2], "baidu.com/a800_80g_cgpu");
    assert_string_equal(ps->rdma_prefix, "rdma/");
    assert_int_equal(ps->targets, 0);
    profiles_free(ps);
}

/* ---- built-in defaults ---- */

TEST(test_minimal_document_uses_builtin_defaults)
{
    struct profiles *ps = support_profiles("{'profiles':[{'name':'p'}]}");

    assert_int_equal(ps->n_gpu_resources, 1);
    assert_string_equal(ps->gpu_resources[0], "nvidia.com/gpu");
    assert_string_equal(ps->rdma_prefix, "rdma/");
    assert_string_equal(ps->p[0].scheduler_name, "volcano");
    assert_true(ps->p[0].ipc_lock);
    assert_true(ps->p[0].shm);
    assert_int_equal(ps->p[0].n_gpus, 0);
    assert_false(ps->p[0].pin);
    profiles_free(ps);
}

TEST(test_targets_bits)
{
    struct profiles *ps =
        support_profiles("{'targets':{'mpijob':true,'volcanojob':true},'profiles':[{'name':'p'}]}");

    assert_int_equal(ps->targets,
                     PROFILES_TARGET_MPIJOB | PROFILES_TARGET_VOLCANOJOB | PROFILES_TARGET_TRAINJOB);
    profiles_free(ps);
}

/* TrainJob pods are targets by default and the file may turn them off; a
 * plain JobSet's only when the file says so. */
TEST(test_targets_trainjob_jobset)
{
    struct profiles *ps = support_profiles("{'profiles':[{'name':'p'}]}");

    assert_int_equal(ps->targets, PROFILES_TARGET_TRAINJOB);
    profiles_free(ps);
    ps = support_profiles("{'targets':{'trainjob':false,'jobset':true},'profiles':[{'name':'p'}]}");
    assert_int_equal(ps->targets, PROFILES_TARGET_JOBSET);
    profiles_free(ps);
}

/* ---- overrides and merging ---- */

TEST(test_profile_env_overrides_default_in_place)
{
    struct profiles *ps = support_profiles(
        "{'defaults':{'env':{'NCCL_IB_TIMEOUT':'22','NCCL_IB_DISABLE':'0'}},"
        "'profiles':[{'name':'p','env':{'NCCL_IB_TIMEOUT':'20','X':'y'}},{'name':'q'}]}");

    assert_env(&ps->p[0], "NCCL_IB_TIMEOUT", "20");
    assert_env(&ps->p[0], "NCCL_IB_DISABLE", "0");
    assert_env(&ps->p[0], "X", "y");
    assert_int_equal(ps->p[0].env.n, 3);
    assert_env(&ps->p[1], "NCCL_IB_TIMEOUT", "22"); /* the other profile is unaffected */
    assert_int_equal(ps->p[1].env.n, 2);
    profiles_free(ps);
}

TEST(test_profile_overrides_scheduler_ipclock_shm_init)
{
    struct profiles *ps = support_profiles(
        "{'defaults':{'schedulerName':'volcano','ipcLock':true,'shm':{'sizeLimit':'1Gi'}},"
        "'profiles':[{'name':'p','schedulerName':'','ipcLock':false,'shm':false,"
        "'initContainers':true},{'name':'q'}]}");
    const struct profiles_entry *p = profiles_find(ps, "p"), *q = profiles_find(ps, "q");

    assert_string_equal(p->scheduler_name, "");
    assert_false(p->ipc_lock);
    assert_false(p->shm);
    assert_true(p->init_containers);
    assert_string_equal(q->scheduler_name, "volcano");
    assert_true(q->ipc_lock);
    assert_true(q->shm);
    assert_string_equal(q->shm_size_limit, "1Gi");
    assert_false(q->init_containers);
    profiles_free(ps);
}

TEST(test_shm_enabled_false_and_size_limit)
{
    struct profiles *ps =
        support_profiles("{'profiles':[{'name':'a','shm':{'enabled':false}},{'name':'b','"
                         "shm':{'sizeLimit':'64Gi'}}]}");

    assert_false(profiles_find(ps, "a")->shm);
    assert_true(profiles_find(ps, "b")->shm);
    assert_string_equal(profiles_find(ps, "b")->shm_size_limit, "64Gi");
    profiles_free(ps);
}

TEST(test_host_network_env_merges_defaults_and_profile)
{
    struct profiles *ps = support_profiles(
        "{'defaults':{'hostNetworkEnv':{'NCCL_SOCKET_IFNAME':'bond0','A':'1'}},"
        "'profiles':[{'name':'p','hostNetworkEnv':{'A':'2','B':'3'}},{'name':'q'}]}");
    const struct profiles_entry *p = profiles_find(ps, "p"), *q = profiles_find(ps, "q");

    assert_int_equal(p->host_network_env.n, 3);
    assert_string_equal(profiles_kv_get(&p->host_network_env, "NCCL_SOCKET_IFNAME"), "bond0");
    assert_string_equal(profiles_kv_get(&p->host_network_env, "A"), "2");
    assert_string_equal(profiles_kv_get(&p->host_network_env, "B"), "3");
    assert_int_equal(q->host_network_env.n, 2);
    assert_string_equal(profiles_kv_get(&q->host_network_env, "A"), "1");
    profiles_free(ps);
}

TEST(test_env_nccl_ib_hca_with_equals_is_accepted)
{
    struct profiles *ps =
        support_profiles("{'profiles':[{'name':'p','env':{'NCCL_IB_HCA':'=mlx5_1'}}]}");

    assert_env(&ps->p[0], "NCCL_IB_HCA", "=mlx5_1");
    profiles_free(ps);
}

TEST(test_default_profile_flag)
{
    struct profiles *ps =
        support_profiles("{'profiles':[{'name':'a'},{'name':'b','default':true}]}");

    assert_false(profiles_find(ps, "a")->is_default);
    assert_true(profiles_find(ps, "b")->is_default);
    profiles_free(ps);
}

/* ---- validation errors name the profile and the field ---- */

/* An env valueFrom, as a pod would write it, is not a number to quote. */
TEST(test_env_value_from_in_defaults_says_value_from)
{
    char line[512];
    const char *e =
        support_profiles_rejected("{'defaults':{'env':{'NCCL_SOCKET_IFNAME':{'valueFrom':"
                                  "{'configMapKeyRef':{'name':'n','key':'k'}}}}},"
                                  "'profiles':[{'name':'p'}]}");

    line_with(e, "NCCL_SOCKET_IFNAME", line, sizeof(line));
    assert_contains(line, "defaults: env.NCCL_SOCKET_IFNAME: valueFrom is not supported");
    assert_contains(line, "set the variable in the pod's env instead");
    assert_null(strstr(line, "quote"));
}

/* Without '=' the entries are prefixes: refused where one takes another
 * listed device, accepted where nothing collides. */
TEST(test_env_nccl_ib_hca_without_equals)
{
    char line[512];
    const char *e = support_profiles_rejected(
        "{'profiles':[{'name':'p','env':{'NCCL_IB_HCA':'mlx5_1,mlx5_10'}}]}");
    struct profiles *ps;

    line_with(e, "NCCL_IB_HCA", line, sizeof(line));
    assert_contains(line, "profile \"p\"");
    assert_contains(line, "write = first (mlx5_1 also takes mlx5_10)");
    ps = support_profiles("{'profiles':[{'name':'p','env':{'NCCL_IB_HCA':'mlx5_1,mlx5_2'}}]}");
    profiles_free(ps);
}

TEST(test_env_nccl_ib_hca_syntax)
{
    static const char *const bad[] = {"=^mlx5_0", "=mlx5_1:0", "^", "=mlx5_1, mlx5_2"};
    char doc[256], line[512];
    struct profiles *ps;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(doc, sizeof(doc), "{'profiles':[{'name':'p','env':{'NCCL_IB_HCA':'%s'}}]}",
                 bad[i]);
        line_with(support_profiles_rejected(doc), "NCCL_IB_HCA", line, sizeof(line));
        assert_contains(line, "profile \"p\"");
    }
    ps = support_profiles("{'profiles':[{'name':'p','env':{'NCCL_IB_HCA':'^=mlx5_0:1'}}]}");
    profiles_free(ps);
}

TEST(test_hca_entries_with_ports)
{
    struct profiles *ps =
        support_profiles("{'profiles':[{'name':'p','hca':['mlx5_1:1','mlx5_2:2']}]}");
    char line[512];

    assert_string_equal(profiles_kv_get(&ps->p[0].env, "NCCL_IB_HCA"), "=mlx5_1:1,mlx5_2:2");
    profiles_free(ps);
    line_with(support_profiles_rejected("{'profiles':[{'name':'p','hca':['mlx5_1:0']}]}"), "hca",
              line, sizeof(line));
    assert_contains(line, "port");
    support_profiles_rejected("{'profiles':[{'name':'p','hca':[':1']}]}");
    support_profiles_rejected("{'profiles':[{'name':'p','hca':['mlx5_1:']}]}");
    support_profiles_rejected("{'profiles':[{'name':'p','hca':['=mlx5_1']}]}");
}

TEST(test_hca_at_most_what_nccl_reads)
{
    char doc[1024] = "{'profiles':[{'name':'p','hca':[";

    for (int i = 0; i < 33; i++)
        snprintf(doc + strlen(doc), sizeof(doc) - strlen(doc), "%s'mlx5_%d'", i ? "," : "", i);
    strcat(doc, "]}]}");
    assert_contains(support_profiles_rejected(doc), "1 to 32");
}

/* Resource names become JSON Pointer tokens and must be what the apiserver
 * accepts; a long or odd one is refused when the profiles load. The name rules
 * themselves are test_k8sname's (test_qualified); here, one bad name in the
 * name part and one in the domain show that loading applies them and that the
 * error names the profile and the field. */
TEST(test_resource_name_not_qualified)
{
    static const char *const bad[] = {"rdma/h~a", "RDMA.io/hca"};
    char doc[512], line[512], field[64];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(doc, sizeof(doc), "{'profiles':[{'name':'p','resources':{'%s':'1'}}]}", bad[i]);
        line_with(support_profiles_rejected(doc), "not an extended resource name", line,
                  sizeof(line));
        assert_contains(line, bad[i]);
        snprintf(field, sizeof(field), "resources.%s", bad[i]);
        assert_contains(line, field);
        assert_contains(line, "profile \"p\"");
    }
}

TEST(test_resource_name_too_long)
{
    char name[400], doc[600], line[600];
    struct profiles *ps;

    memset(name, 'a', 254);
    memcpy(name + 254, "/hca", 5);
    snprintf(doc, sizeof(doc), "{'profiles':[{'name':'p','resources':{'%s':'1'}}]}", name);
    line_with(support_profiles_rejected(doc), "not an extended resource name", line, sizeof(line));
    /* At the limits, it loads. */
    longest_resource_name(name, sizeof(name));
    snprintf(doc, sizeof(doc), "{'profiles':[{'name':'p','resources':{'%s':'1'}}]}", name);
    ps = support_profiles(doc);
    assert_string_equal(ps->p[0].resources.v[0].name, name);
    profiles_free(ps);
}

TEST(test_gpus_list)
{
    struct profiles *ps = support_profiles("{'profiles':[{'name':'p','match':{'gpus':[1,2,4]}}]}");

    assert_int_equal(ps->p[0].n_gpus, 3);
    assert_true(profiles_matches_gpus(&ps->p[0], 1));
    assert_true(profiles_matches_gpus(&ps->p[0], 2));
    assert_true(profiles_matches_gpus(&ps->p[0], 4));
    assert_false(profiles_matches_gpus(&ps->p[0], 3));
    assert_false(profiles_matches_gpus(&ps->p[0], 8));
    profiles_free(ps);
}

TEST(test_gpus_list_refusals)
{
    static const char *const bad[] = {"[]",    "[4,4]", "[4,'8']", "[0]",
                                      "[2.5]", "[[4]]", "{'n':4}", "true"};
    char doc[256], line[512];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(doc, sizeof(doc), "{'profiles':[{'name':'p','match':{'gpus':%s}}]}", bad[i]);
        line_with(support_profiles_rejected(doc), "match.gpus", line, sizeof(line));
        assert_contains(line, "profile \"p\"");
    }
    assert_contains(support_profiles_rejected("{'profiles':[{'name':'p','match':{'gpus':[4,4]}}]}"),
                    "4 is listed twice");
}

TEST(test_gpus_list_at_most_32)
{
    char doc[1024] = "{'profiles':[{'name':'p','match':{'gpus':[";
    struct profiles *ps;

    for (int i = 1; i <= 32; i++)
        snprintf(doc + strlen(doc), sizeof(doc) - strlen(doc), "%s%d", i > 1 ? "," : "", i);
    ps = support_profiles(strcat(doc, "]}}]}"));
    assert_int_equal(ps->p[0].n_gpus, 32);
    profiles_free(ps);
    strcpy(strstr(doc, ",32]"), ",32,33]}}]}");
    assert_contains(support_profiles_rejected(doc), "1 to 32");
}

TEST(test_gpus_zero_and_string)
{
    char line[512];
    const char *e = support_profiles_rejected("{'profiles':[{'name':'p','match':{'gpus':0}}]}");

    line_with(e, "gpus", line, sizeof(line));
    assert_contains(line, "profile \"p\"");
    e = support_profiles_rejected("{'profiles':[{'name':'p','match':{'gpus':'8'}}]}");
    line_with(e, "gpus", line, sizeof(line));
    assert_contains(line, "profile \"p\"");
}

/* ---- match rules that can never win ---- */

TEST(test_identical_match_rules_refused)
{
    char line[512];
    const char *e = support_profiles_rejected(
        "{'profiles':[{'name':'a','match':{'gpus':8,'nodeLabels':{'t':'x'}}},"
        "{'name':'b','match':{'gpus':[8],'nodeLabels':{'t':'x'}}}]}");

    line_with(e, "same match rules", line, sizeof(line));
    assert_contains(line, "\"a\"");
    assert_contains(line, "\"b\"");
    /* One line for the pair, not one per rule. */
    assert_null(strstr(e, "can never choose either"));
    assert_null(strchr(strchr(e, '\n') + 1, '\n'));
    e = support_profiles_rejected("{'profiles':[{'name':'a','match':{'gpus':[4,8]}},"
                                  "{'name':'b','match':{'gpus':[8,4]}}]}");
    assert_contains(e, "same match rules");
}

TEST(test_profiles_without_match_rules_are_not_identical)
{
    /* Annotation-only profiles: nothing to tell apart. */
    struct profiles *ps = support_profiles(
        "{'profiles':[{'name':'a'},{'name':'b','match':{}},{'name':'c','default':true}]}");

    assert_int_equal(ps->n, 3);
    profiles_free(ps);
}

/* Every node with {pool: train, gpu.product: H100} also has {pool: train}:
 * a pod that fits h100 fits train too, so node labels never find h100 alone. */
TEST(test_node_labels_subset_of_another_refused)
{
    char line[512];
    const char *e = support_profiles_rejected(
        "{'profiles':[{'name':'train','match':{'nodeLabels':{'pool':'train'}}},"
        "{'name':'h100','match':{'nodeLabels':{'pool':'train','gpu.product':'H100'}}}]}");

    line_with(e, "profile \"h100\": match.nodeLabels can never win", line, sizeof(line));
    assert_contains(line, "profile \"train\"");
    assert_null(strstr(e, "profile \"train\": match.nodeLabels"));
}

TEST(test_shared_label_with_distinct_ones_accepted)
{
    struct profiles *ps = support_profiles(
        "{'profiles':[{'name':'h100','match':{'gpus':8,'nodeLabels':{'p':'H100','pool':'t'}}},"
        "{'name':'a100','match':{'gpus':[1,2,4],'nodeLabels':{'p':'A100','pool':'t'}}}]}");

    profiles_free(ps);
}

/* A profile without nodeLabels is never excluded, so a labelled profile's
 * count that it also takes is never found alone. */
TEST(test_gpus_count_shadowed_by_a_label_less_profile_refused)
{
    char line[512];
    const char *e = support_profiles_rejected(
        "{'profiles':[{'name':'any8','match':{'gpus':8}},"
        "{'name':'h100','match':{'gpus':[4,8],'nodeLabels':{'p':'H100'}}}]}");

    line_with(e, "profile \"h100\": match.gpus 8 can never win", line, sizeof(line));
    assert_contains(line, "\"any8\"");
    assert_null(strstr(e, "match.gpus 4"));
    assert_null(strstr(e, "profile \"any8\": match.gpus"));
}

TEST(test_gpus_count_overlap_with_distinct_labels_accepted)
{
    /* An 8-GPU pod without constraints is a tie (a warning), but each can
     * win: a pod excluding the other's label. */
    struct profiles *ps =
        support_profiles("{'profiles':[{'name':'x','match':{'gpus':8,'nodeLabels':{'t':'x'}}},"
                         "{'name':'y','match':{'gpus':[4,8],'nodeLabels':{'t':'y'}}}]}");

    profiles_free(ps);
}

/* n profiles, each with labels nodeLabels l0..l(labels-2) shared and one
 * of its own, in a document too long for parse(). */
static struct profiles *parse_labelled(int n, int labels)
{
    struct dynbuf doc;
    struct profiles *ps;

    dynbuf_init(&doc, 1 << 20);
    dynbuf_addstr(&doc, "{\"profiles\":[");
    for (int i = 0; i < n; i++) {
        dynbuf_printf(&doc, "%s{\"name\":\"p%d\",\"match\":{\"nodeLabels\":{", i ? "," : "", i);
        for (int k = 0; k < labels - 1; k++)
            dynbuf_printf(&doc, "\"l%d\":\"v\",", k);
        dynbuf_printf(&doc, "\"own\":\"p%d\"}}}", i);
    }
    dynbuf_addstr(&doc, "]}");
    dynbuf_reset(&errors);
    ps = profiles_parse(dynbuf_ptr(&doc), dynbuf_len(&doc), &errors);
    dynbuf_free(&doc);
    return ps;
}

/* 64 nodeLabels per profile load; one more is refused with the bound, not
 * compared pair by pair (64 profiles of 1,584 took 20 s of CPU). */
TEST(test_node_labels_bound)
{
    struct profiles *ps = parse_labelled(64, PROFILES_MAX_NODE_LABELS);

    assert_non_null(ps);
    assert_int_equal(ps->p[63].node_labels.n, PROFILES_MAX_NODE_LABELS);
    profiles_free(ps);
    assert_null(parse_labelled(2, PROFILES_MAX_NODE_LABELS + 1));
    assert_contains(dynbuf_ptr(&errors),
                    "profile \"p0\": match.nodeLabels: lists 65 labels, more than 64: keep the "
                    "few that tell this profile's nodes apart");
}

/* The sorted comparison finds a subset in any order, and a name listed
 * twice counts with its first value, as profiles_kv_get reads it. */
TEST(test_labels_within_any_order_and_twice)
{
    char line[512];
    const char *e = support_profiles_rejected(
        "{'profiles':[{'name':'a','match':{'nodeLabels':{'z':'1','b':'2','m':'3'}}},"
        "{'name':'b','match':{'nodeLabels':{'m':'3','z':'1','q':'4','b':'2'}}}]}");
    struct profiles *ps;

    line_with(e, "profile \"b\": match.nodeLabels can never win", line, sizeof(line));
    assert_contains(line, "profile \"a\"");
    /* e's t is 2 (its first): f's t: 1 is not within it, nor e within f. */
    ps = support_profiles("{'profiles':[{'name':'e','match':{'nodeLabels':{'t':'2','t':'1'}}},"
                          "{'name':'f','match':{'nodeLabels':{'t':'1'}}}]}");
    profiles_free(ps);
}

TEST(test_pin)
{
    struct profiles *ps = support_profiles(
        "{'profiles':[{'name':'a','pin':true,'match':{'gpus':4,'nodeLabels':{'t':'a'}}},"
        "{'name':'d','default':true,'pin':true,'match':{'nodeLabels':{'t':'d'}}}]}");

    assert_true(ps->p[0].pin);
    assert_true(ps->p[1].pin);
    profiles_free(ps);
}

TEST(test_pin_refusals)
{
    char line[512];

    line_with(
        support_profiles_rejected("{'profiles':[{'name':'a','pin':true,'match':{'gpus':4}}]}"),
        "pin", line, sizeof(line));
    assert_contains(line, "profile \"a\"");
    assert_contains(line, "nodeLabels");
    line_with(support_profiles_rejected(
                  "{'profiles':[{'name':'a','pin':true,'match':{'nodeLabels':{'t':'a'}}}]}"),
              "pin", line, sizeof(line));
    assert_contains(line, "match.gpus or default");
    line_with(
        support_profiles_rejected("{'profiles':[{'name':'a','pin':'yes','match':{'gpus':4}}]}"),
        "pin", line, sizeof(line));
    assert_contains(line, "true or false");
}

/* A syntax error is placed by line and column, as the admin's editor shows
 * the file. */
TEST(test_syntax_error_line_and_column)
{
    const char *e = support_profiles_rejected("{\n  'profiles': [\n    {'name': 'a',}\n  ]\n}");

    assert_contains(e, "not valid JSON: unexpected character '}' at line 3, column 18 (byte 35)");
    assert_true(strstr(e, "YAML") == NULL);
}

/* YAML is recognised and refused with what to do; JSON that merely has an
 * error is not taken for YAML. */
TEST(test_yaml_is_recognised)
{
    static const char *const yaml[] = {
        "profiles:\n- name: a\n",
        "# the profiles\n\n---\nprofiles: []\n",
        "%YAML 1.2\n---\nprofiles: []\n",
        "  gpuResources: [nvidia.com/gpu]\n",
        "defaults:\n",
    };
    static const char *const not_yaml[] = {"{'profiles': [", "['a: b']", "'profiles: x'", "hello"};

    for (size_t i = 0; i < sizeof(yaml) / sizeof(yaml[0]); i++) {
        const char *e = support_profiles_rejected(yaml[i]);

        assert_contains(e, "; it looks like YAML, and profiles are JSON only: convert it");
        assert_contains(e, "yq -o json");
    }
    for (size_t i = 0; i < sizeof(not_yaml) / sizeof(not_yaml[0]); i++)
        if (strstr(support_profiles_rejected(not_yaml[i]), "YAML"))
            fail_msg("%s taken for YAML: %s", not_yaml[i], dynbuf_ptr(&errors));
}

TEST(test_not_an_object)
{
    support_profiles_rejected("[{'name':'p'}]");
}

TEST(test_each_error_line_names_its_own_profile)
{
    char line[512];
    const char *e =
        support_profiles_rejected("{'profiles':[{'name':'alpha','env':{'NCCL_IB_TIMEOUT':'40'}},"
                                  "{'name':'beta','resources':{'rdma/hca':'abc'}}]}");

    line_with(e, "NCCL_IB_TIMEOUT", line, sizeof(line));
    assert_contains(line, "profile \"alpha\"");
    line_with(e, "rdma/hca", line, sizeof(line));
    assert_contains(line, "profile \"beta\"");
}

TEST(test_null_errors_buffer_is_allowed)
{
    const char *bad = "{\"profiles\":[]}";

    assert_null(profiles_parse(bad, strlen(bad), NULL));
}

TEST(test_parse_respects_length)
{
    const char *text = "{\"profiles\":[{\"name\":\"p\"}]}GARBAGE";
    struct profiles *ps;

    dynbuf_reset(&errors);
    ps = profiles_parse(text, strlen(text) - strlen("GARBAGE"), &errors);
    if (!ps)
        fail_msg("rejected: %s", dynbuf_ptr(&errors));
    profiles_free(ps);
}

/* ---- strict JSON and UTF-8 ---- */

/* text with every '@' replaced by byte c; len bytes of it parsed. */
static struct profiles *parse_with_byte(const char *text, char c)
{
    char buf[4096];
    size_t n = strlen(text);

    assert_true(n < sizeof(buf));
    for (size_t i = 0; i <= n; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i] == '@' ? c : text[i];
    dynbuf_reset(&errors);
    return profiles_parse(buf, n, &errors);
}

/* Raw control characters, in a string or between tokens, are not JSON
 * (RFC 8259); cJSON took them, so an admin's stray byte went unnoticed. */
TEST(test_raw_control_characters_rejected)
{
    static const char *const where[] = {
        "{'profiles':[{'name':'p','env':{'NCCL_DEBUG':'IN@FO'}}]}",
        "{'profiles':[{'name':'p','env':{'NCCL_DEBUG':'INFO'}}]@}",
    };

    for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
        for (int c = 0; c < 0x20; c++) {
            struct profiles *ps;

            if (w == 1 && (c == '\t' || c == '\r' || c == '\n'))
                continue;
            ps = parse_with_byte(where[w], (char)c);
            if (ps) {
                profiles_free(ps);
                fail_msg("byte 0x%02x at place %zu accepted", c, w);
            }
            assert_contains(dynbuf_ptr(&errors), "control character");
            assert_contains(dynbuf_ptr(&errors), "byte");
        }
    }
}

TEST(test_invalid_utf8_rejected_with_offset)
{
    struct profiles *ps =
        parse_with_byte("{'profiles':[{'name':'p','env':{'NCCL_DEBUG':'@'}}]}", '\xff');

    assert_null(ps);
    assert_contains(dynbuf_ptr(&errors), "UTF-8");
    assert_contains(dynbuf_ptr(&errors), "byte 46");
    /* A key, and an overlong '/'. */
    assert_contains(support_profiles_rejected("{'profiles':[{'name':'p'}],'\xc0\xaf':1}"), "UTF-8");
}

TEST(test_trailing_text_rejected)
{
    assert_contains(support_profiles_rejected("{'profiles':[{'name':'p'}]} x"), "JSON");
    assert_contains(support_profiles_rejected("{'profiles':[{'name':'p'}]}{}"), "JSON");
}

TEST(test_whitespace_around_the_document_is_fine)
{
    profiles_free(support_profiles(" \t\r\n{'profiles':[{'name':'p'}]}\r\n \t"));
}

/* ---- detect ---- */

TEST(test_detect_off_by_default_with_builtin_resources)
{
    struct profiles *ps = support_profiles("{'profiles':[{'name':'p'}]}");

    assert_false(ps->p[0].detect.on);
    assert_string_equal(ps->p[0].detect.cpu, "100m");
    assert_string_equal(ps->p[0].detect.memory, "32Mi");
    profiles_free(ps);
}

/* true, false, an object (on unless enabled is false), inherited from
 * defaults field by field. */
TEST(test_detect_forms_and_inheritance)
{
    struct profiles *ps =
        support_profiles("{'defaults':{'detect':{'memory':'64Mi'}},'profiles':["
                         "{'name':'inherits'},{'name':'off','detect':false},"
                         "{'name':'disabled','detect':{'enabled':false}},"
                         "{'name':'cpu','detect':{'cpu':'1'}},{'name':'plain','detect':true}]}");
    const struct profiles_entry *in = profiles_find(ps, "inherits"),
                                *cpu = profiles_find(ps, "cpu");

    assert_true(in->detect.on);
    assert_string_equal(in->detect.memory, "64Mi");
    assert_string_equal(in->detect.cpu, "100m");
    assert_false(profiles_find(ps, "off")->detect.on);
    assert_false(profiles_find(ps, "disabled")->detect.on);
    assert_true(cpu->detect.on);
    assert_string_equal(cpu->detect.cpu, "1");
    assert_string_equal(cpu->detect.memory, "64Mi");
    assert_true(profiles_find(ps, "plain")->detect.on);
    profiles_free(ps);
}

TEST(test_detect_quantities_in_range_accepted)
{
    static const char *const ok[] = {
        "{'cpu':'10m','memory':'16Mi'}", "{'cpu':'1000m','memory':'1Gi'}",
        "{'cpu':'250m','memory':'32M'}", "{'memory':'20000Ki'}",
        "{'memory':'1073741824'}",
    };
    char doc[256];

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        snprintf(doc, sizeof(doc), "{'profiles':[{'name':'p','detect':%s}]}", ok[i]);
        profiles_free(support_profiles(doc));
    }
}

TEST(test_detect_refusals_name_profile_and_field)
{
    static const struct {
        const char *detect, *words;
    } bad[] = {
        {"'yes'", "detect: must be true, false or an object"},
        {"1", "detect: must be true, false or an object"},
        {"{'cpus':'1'}", "detect: unknown field \"cpus\""},
        {"{'enabled':'no'}", "detect.enabled: must be true or false"},
        {"{'cpu':100}", "detect.cpu: must be a string"},
        {"{'memory':64}", "detect.memory: must be a string"},
        {"{'cpu':'5m'}", "detect.cpu: \"5m\""},
        {"{'cpu':'2'}", "detect.cpu: \"2\""},
        {"{'cpu':'0.1'}", "detect.cpu: \"0.1\""},
        {"{'cpu':'100x'}", "detect.cpu: \"100x\""},
        {"{'cpu':''}", "detect.cpu: \"\""},
        {"{'memory':'8Mi'}", "detect.memory: \"8Mi\""},
        {"{'memory':'2Gi'}", "detect.memory: \"2Gi\""},
        {"{'memory':'1e9'}", "detect.memory: \"1e9\""},
        {"{'memory':'32MiB'}", "detect.memory: \"32MiB\""},
        {"{'memory':'9999999999Mi'}", "detect.memory: \"9999999999Mi\""},
        {"{'requireHca':'yes'}", "detect.requireHca: must be true or false"},
        {"{'requireHca':true}", "detect.requireHca: needs the list the job expects"},
    };
    char doc[256], line[512];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(doc, sizeof(doc), "{'profiles':[{'name':'p','detect':%s}]}", bad[i].detect);
        line_with(support_profiles_rejected(doc), bad[i].words, line, sizeof(line));
        assert_contains(line, "profile \"p\"");
    }
}

/* requireHca: with the job's exact list (hca, or an NCCL_IB_HCA of '='),
 * and not with a prefix. */
TEST(test_detect_require_hca)
{
    struct profiles *ps = support_profiles(
        "{'profiles':[{'name':'a','hca':['mlx5_1','mlx5_2'],'detect':{'requireHca':true}},"
        "{'name':'b','env':{'NCCL_IB_HCA':'=mlx5_1'},'detect':{'requireHca':true}},"
        "{'name':'c','hca':['mlx5_1'],'detect':true}]}");
    char line[512];

    assert_true(profiles_find(ps, "a")->detect.require_hca);
    assert_true(profiles_find(ps, "b")->detect.require_hca);
    assert_false(profiles_find(ps, "c")->detect.require_hca);
    profiles_free(ps);
    line_with(support_profiles_rejected("{'profiles':[{'name':'p','env':{'NCCL_IB_HCA':'mlx5'},"
                                        "'detect':{'requireHca':true}}]}"),
              "detect.requireHca", line, sizeof(line));
    assert_contains(line, "profile \"p\"");
}

TEST(test_detect_refused_in_defaults_names_defaults)
{
    char line[512];

    line_with(support_profiles_rejected(
                  "{'defaults':{'detect':{'memory':'1Mi'}},'profiles':[{'name':'p'}]}"),
              "detect.memory", line, sizeof(line));
    assert_contains(line, "defaults");
}

/* nccl-detect must take the values it is given: --hca device names, a
 * --socket-ifname of 1 to 255 bytes without control characters. */
TEST(test_detect_values_nccl_detect_takes)
{
    char line[512];

    profiles_free(support_profiles(
        "{'profiles':[{'name':'p','detect':true,"
        "'env':{'NCCL_IB_HCA':'^=mlx5_0,,mlx5_9:1','NCCL_SOCKET_IFNAME':'=eth0'}}]}"));
    line_with(support_profiles_rejected(
                  "{'profiles':[{'name':'p','detect':true,'env':{'NCCL_IB_HCA':'=mlx5@1'}}]}"),
              "env.NCCL_IB_HCA", line, sizeof(line));
    assert_contains(line, "nccl-detect --hca");
    line_with(support_profiles_rejected(
                  "{'profiles':[{'name':'p','detect':true,'env':{'NCCL_IB_HCA':'.hidden'}}]}"),
              "env.NCCL_IB_HCA", line, sizeof(line));
    line_with(
        support_profiles_rejected("{'profiles':[{'name':'p','detect':true,"
                                  "'hostNetworkEnv':{'NCCL_SOCKET_IFNAME':'bond0\\nNCCL_X=1'}}]}"),
        "hostNetworkEnv.NCCL_SOCKET_IFNAME", line, sizeof(line));
    assert_contains(line, "--socket-ifname");
    line_with(support_profiles_rejected(
                  "{'profiles':[{'name':'p','detect':true,'env':{'NCCL_SOCKET_IFNAME':''}}]}"),
              "NCCL_SOCKET_IFNAME", line, sizeof(line));
    /* The same values without detect are not nccl-detect's business. */
    profiles_free(support_profiles("{'profiles':[{'name':'p','env':{'NCCL_IB_HCA':'=mlx5@1'}}]}"));
}

/* Documents refused for one problem: the problem's line names what it is
 * about (key) and where it is (want); with no key, the words are looked for
 * in all the problems. One case a row, named on failure. */
static const struct rejected_case {
    const char *name, *doc, *key, *want[3];
} rejected_cases[] = {
    {"ib_timeout_40",
     "{'profiles':[{'name':'p','env':{'NCCL_IB_TIMEOUT':'40'}}]}",
     "NCCL_IB_TIMEOUT",
     {"profile \"p\"", "NCCL_IB_TIMEOUT=40: use 1..31"}},
    {"env_number_says_quote",
     "{'profiles':[{'name':'p','env':{'NCCL_IB_TIMEOUT':22}}]}",
     "NCCL_IB_TIMEOUT",
     {"quote numbers"}},
    {"retry_cnt_8",
     "{'profiles':[{'name':'p','env':{'NCCL_IB_RETRY_CNT':'8'}}]}",
     "NCCL_IB_RETRY_CNT",
     {"profile \"p\""}},
    {"debug_unknown_word",
     "{'profiles':[{'name':'p','env':{'NCCL_DEBUG':'LOUD'}}]}",
     "NCCL_DEBUG",
     {"profile \"p\""}},
    {"env_name_not_identifier",
     "{'profiles':[{'name':'p','env':{'1BAD':'x'}}]}",
     "1BAD",
     {"profile \"p\"", "env"}},
    {"host_network_env_name_not_identifier",
     "{'profiles':[{'name':'p','hostNetworkEnv':{'A-B':'x'}}]}",
     "A-B",
     {"profile \"p\"", "hostNetworkEnv"}},
    {"env_value_not_a_string",
     "{'profiles':[{'name':'p','env':{'NCCL_IB_TIMEOUT':22}}]}",
     "NCCL_IB_TIMEOUT",
     {"profile \"p\"", "string"}},
    {"hca_entry_not_a_device_name",
     "{'profiles':[{'name':'p','hca':['mlx5_1,mlx5_2']}]}",
     "hca",
     {"profile \"p\""}},
    {"hca_empty_list", "{'profiles':[{'name':'p','hca':[]}]}", "hca", {"profile \"p\""}},
    {"resource_quantity_abc",
     "{'profiles':[{'name':'p','resources':{'rdma/hca':'abc'}}]}",
     "rdma/hca",
     {"profile \"p\"", "resources", "abc"}},
    {"resource_quantity_zero",
     "{'profiles':[{'name':'p','resources':{'rdma/hca':'0'}}]}",
     "rdma/hca",
     {"profile \"p\"", "\"0\""}},
    {"resource_quantity_fraction",
     "{'profiles':[{'name':'p','resources':{'rdma/hca':'500m'}}]}",
     "rdma/hca",
     {"profile \"p\""}},
    {"resource_name_without_domain",
     "{'profiles':[{'name':'p','resources':{'hca':'1'}}]}",
     "resources",
     {"profile \"p\""}},
    {"shm_size_limit_x",
     "{'profiles':[{'name':'p','shm':{'sizeLimit':'x'}}]}",
     "sizeLimit",
     {"profile \"p\"", "shm", "\"x\""}},
    {"unknown_field_in_defaults",
     "{'defaults':{'evn':{}},'profiles':[{'name':'p'}]}",
     "\"evn\"",
     {"defaults"}},
    {"unknown_field_in_profile",
     "{'profiles':[{'name':'p','shedulerName':'volcano'}]}",
     "\"shedulerName\"",
     {"profile \"p\""}},
    {"unknown_field_in_match",
     "{'profiles':[{'name':'p','match':{'gpu':8}}]}",
     "\"gpu\"",
     {"profile \"p\"", "match"}},
    {"unknown_field_in_shm",
     "{'profiles':[{'name':'p','shm':{'size':'1Gi'}}]}",
     "\"size\"",
     {"profile \"p\""}},
    {"gpus_fraction",
     "{'profiles':[{'name':'p','match':{'gpus':2.5}}]}",
     "gpus",
     {"profile \"p\""}},
    {"bad_profile_name", "{'profiles':[{'name':'Bad_Name'}]}", "name", {"profiles[0]"}},
    {"env_value_object_in_profile_says_write_the_value",
     "{'profiles':[{'name':'p','env':{'NCCL_IB_TIMEOUT':{'value':'22'}}}]}",
     "NCCL_IB_TIMEOUT",
     {"write the value itself (\"NCCL_IB_TIMEOUT\": \"...\")"}},
    {"ib_timeout_octal_in_defaults",
     "{'defaults':{'env':{'NCCL_IB_TIMEOUT':'022'}},'profiles':[{'name':'p'}]}",
     "NCCL_IB_TIMEOUT",
     {"defaults", "drop the leading 0"}},
    {"hca_and_env_nccl_ib_hca_together",
     "{'profiles':[{'name':'p','hca':['mlx5_1'],'env':{'NCCL_IB_HCA':'=mlx5_1'}}]}",
     "hca",
     {"profile \"p\"", "NCCL_IB_HCA"}},
    {"same_node_labels_different_gpus_refused",
     "{'profiles':[{'name':'a','match':{'gpus':8,'nodeLabels':{'t':'x'}}},"
     "{'name':'b','match':{'gpus':4,'nodeLabels':{'t':'x'}}}]}",
     "same match.nodeLabels",
     {"\"a\" and \"b\""}},
    {"duplicate_names",
     "{'profiles':[{'name':'dup'},{'name':'dup'}]}",
     NULL,
     {"profile \"dup\"", "name"}},
    {"two_defaults_rejected",
     "{'profiles':[{'name':'first','default':true},{'name':'second','default':true}]}",
     NULL,
     {"default"}},
    {"two_defaults_name_the_profiles",
     "{'profiles':[{'name':'first','default':true},{'name':'other'},"
     "{'name':'second','default':true}]}",
     NULL,
     {"default", "first", "second"}},
    {"unknown_field_at_root",
     "{'profile':[],'profiles':[{'name':'p'}]}",
     NULL,
     {"\"profile\"", "unknown"}},
    {"same_gpus_without_labels_refused",
     "{'profiles':[{'name':'a','match':{'gpus':[2,4]}},"
     "{'name':'b','match':{'gpus':[4,8]}}]}",
     NULL,
     {"profiles \"a\" and \"b\": match.gpus 4 can never choose either"}},
    {"missing_profile_name", "{'profiles':[{'name':'ok'},{'env':{}}]}", NULL, {"profiles[1]"}},
    {"not_json", "{'profiles': [", NULL, {"JSON"}},
    {"empty_profiles", "{'profiles':[]}", NULL, {"profiles"}},
    {"missing_profiles", "{'defaults':{}}", NULL, {"profiles"}},
    {"rdma_prefix_without_slash",
     "{'rdmaResourcePrefix':'rdma','profiles':[{'name':'p'}]}",
     NULL,
     {"rdmaResourcePrefix"}},
    {"gpu_resources_entry_without_domain",
     "{'gpuResources':['gpu'],'profiles':[{'name':'p'}]}",
     NULL,
     {"gpuResources"}},
    /* cJSON ends a string at \u0000: "IN\u0000FO" would have loaded as "IN". */
    {"nul_escape_rejected",
     "{'profiles':[{'name':'p','env':{'NCCL_SOCKET_IFNAME':'eth0\\u0000x'}}]}",
     NULL,
     {"\\u0000", "byte"}},
};

static void assert_rejected_case(const struct rejected_case *c)
{
    char line[512];
    const char *e = support_profiles_rejected(c->doc), *in = e;

    if (c->key) {
        if (!strstr(e, c->key))
            fail_msg("%s: expected \"%s\" in \"%s\"", c->name, c->key, e);
        in = line_with(e, c->key, line, sizeof(line));
    }
    for (size_t i = 0; i < sizeof c->want / sizeof c->want[0] && c->want[i]; i++)
        if (!strstr(in, c->want[i]))
            fail_msg("%s: expected \"%s\" in \"%s\"", c->name, c->want[i], in);
}

TEST(test_rejected_documents_name_the_problem)
{
    for (size_t i = 0; i < sizeof rejected_cases / sizeof rejected_cases[0]; i++)
        assert_rejected_case(&rejected_cases[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rejected_documents_name_the_problem),
        cmocka_unit_test(test_shipped_has_two_profiles),
        cmocka_unit_test(test_raw_control_characters_rejected),
        cmocka_unit_test(test_invalid_utf8_rejected_with_offset),
        cmocka_unit_test(test_trailing_text_rejected),
        cmocka_unit_test(test_whitespace_around_the_document_is_fine),
        cmocka_unit_test(test_shipped_8card_env_merged_from_defaults),
        cmocka_unit_test(test_shipped_4card_hca),
        cmocka_unit_test(test_shipped_match_and_resources),
        cmocka_unit_test(test_shipped_common_settings),
        cmocka_unit_test(test_shipped_gpu_resources_prefix_targets),
        cmocka_unit_test(test_minimal_document_uses_builtin_defaults),
        cmocka_unit_test(test_targets_bits),
        cmocka_unit_test(test_targets_trainjob_jobset),
        cmocka_unit_test(test_profile_env_overrides_default_in_place),
        cmocka_unit_test(test_profile_overrides_scheduler_ipclock_shm_init),
        cmocka_unit_test(test_shm_enabled_false_and_size_limit),
        cmocka_unit_test(test_host_network_env_merges_defaults_and_profile),
        cmocka_unit_test(test_env_nccl_ib_hca_with_equals_is_accepted),
        cmocka_unit_test(test_default_profile_flag),
        cmocka_unit_test(test_env_value_from_in_defaults_says_value_from),
        cmocka_unit_test(test_env_nccl_ib_hca_without_equals),
        cmocka_unit_test(test_env_nccl_ib_hca_syntax),
        cmocka_unit_test(test_hca_entries_with_ports),
        cmocka_unit_test(test_hca_at_most_what_nccl_reads),
        cmocka_unit_test(test_gpus_list),
        cmocka_unit_test(test_gpus_list_refusals),
        cmocka_unit_test(test_gpus_list_at_most_32),
        cmocka_unit_test(test_identical_match_rules_refused),
        cmocka_unit_test(test_profiles_without_match_rules_are_not_identical),
        cmocka_unit_test(test_node_labels_subset_of_another_refused),
        cmocka_unit_test(test_shared_label_with_distinct_ones_accepted),
        cmocka_unit_test(test_gpus_count_shadowed_by_a_label_less_profile_refused),
        cmocka_unit_test(test_gpus_count_overlap_with_distinct_labels_accepted),
        cmocka_unit_test(test_node_labels_bound),
        cmocka_unit_test(test_labels_within_any_order_and_twice),
        cmocka_unit_test(test_pin),
        cmocka_unit_test(test_pin_refusals),
        cmocka_unit_test(test_resource_name_not_qualified),
        cmocka_unit_test(test_resource_name_too_long),
        cmocka_unit_test(test_gpus_zero_and_string),
        cmocka_unit_test(test_syntax_error_line_and_column),
        cmocka_unit_test(test_yaml_is_recognised),
        cmocka_unit_test(test_not_an_object),
        cmocka_unit_test(test_each_error_line_names_its_own_profile),
        cmocka_unit_test(test_null_errors_buffer_is_allowed),
        cmocka_unit_test(test_parse_respects_length),
        cmocka_unit_test(test_detect_off_by_default_with_builtin_resources),
        cmocka_unit_test(test_detect_forms_and_inheritance),
        cmocka_unit_test(test_detect_quantities_in_range_accepted),
        cmocka_unit_test(test_detect_refusals_name_profile_and_field),
        cmocka_unit_test(test_detect_require_hca),
        cmocka_unit_test(test_detect_refused_in_defaults_names_defaults),
        cmocka_unit_test(test_detect_values_nccl_detect_takes),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
