/*
 * Unit tests for webhook/admission/mutate.c, rule by rule (docs/profiles.md; docs/operations.md
 * "Warnings").
 *
 * Every test builds a small pod, calls mutate_object() with the shipped
 * profiles (or a small profiles document of its own), applies the patch with
 * patch_apply() and asserts on the result. The harness also checks, for every
 * pod, what the contract promises for all of them:
 *   - the patch is a JSON array of n_ops operations that applies cleanly;
 *   - every field the pod had keeps its value, arrays only grow at the end
 *     (schedulerName: default-scheduler excepted);
 *   - a second call on the patched pod is MUTATE_SKIPPED with 0 operations;
 *   - every warning starts with "rdma-webhook: ", is under 120 bytes and is
 *     valid UTF-8.
 * Run from the repository root (make unit does): it reads manifests/.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/err.h"
#include "admission/mutate.h"
#include "admission/patch.h"
#include "admission/podsec.h"
#include "base/trace.h"
#include "admission/profiles.h"
#include "base/utf8.h"

#define WARN_PREFIX "rdma-webhook: "
#define NAME63      "a23456789012345678901234567890123456789012345678901234567890123"

/* A pod the training-operator created (label), with the given spec. */
#define POD(spec)                                                                                  \
    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'w-0','namespace':'ns',"                   \
    "'labels':{'training.kubeflow.org/operator-name':'pytorchjob-controller'}},"                   \
    "'spec':" spec "}"
/* Same with extra metadata members (a leading comma included). */
#define POD_META(meta, spec)                                                                       \
    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'w-0','namespace':'ns',"                   \
    "'labels':{'training.kubeflow.org/operator-name':'pytorchjob-controller'}" meta "},"           \
    "'spec':" spec "}"
/* The training container asking for 8 GPUs, with extra members. */
#define C8(extra)                                                                                  \
    "{'name':'pytorch','image':'i','resources':{'limits':{'nvidia.com/gpu':'8'}}" extra "}"
#define C8N(name, extra)                                                                           \
    "{'name':'" name "','image':'i','resources':{'limits':{'nvidia.com/gpu':'8'}}" extra "}"
#define SIDECAR       "{'name':'log-shipper','image':'fluent-bit'}"
#define PROFILE_8CARD ",'annotations':{'rdma-webhook.io/profile':'roce-8card'}"

static struct profiles *shipped;
static struct profiles *custom; /* a test's own profiles, freed in teardown */

/* The test's run: input, patched result, mutation result. */
static struct {
    cJSON *doc;
    cJSON *patched;
    struct mutate_result res;
    int have_res;
    /* Scratch that a failing assertion would otherwise leak. */
    cJSON *ops, *want;
    char *text;
    struct mutate_result again;
    int have_again;
    const struct mutate_options *opts; /* for both calls; NULL: none */
    const char *user;                  /* mutate_input.user; NULL: unknown */
} T;

/* ---- JSON helpers ---- */

static cJSON *J(const char *text)
{
    cJSON *j = support_json_parse(text);

    if (!j)
        fail_msg("test JSON does not parse: %s", text);
    return j;
}

/* RFC 6901 lookup, for assertions. */
static const cJSON *at(const cJSON *doc, const char *ptr)
{
    char tok[512];

    while (doc && *ptr == '/') {
        size_t o = 0;

        for (ptr++; *ptr && *ptr != '/'; ptr++) {
            char c = *ptr;

            if (c == '~') {
                ptr++;
                c = *ptr == '0' ? '~' : '/';
            }
            assert_true(o + 1 < sizeof(tok));
            tok[o++] = c;
        }
        tok[o] = '\0';
        doc = cJSON_IsArray(doc) ? cJSON_GetArrayItem(doc, atoi(tok))
                                 : cJSON_GetObjectItemCaseSensitive(doc, tok);
    }
    return doc;
}

static void assert_json_at(const cJSON *doc, const char *ptr, const char *want)
{
    const cJSON *got = at(doc, ptr);

    cJSON_Delete(T.want);
    T.want = J(want);
    if (!got)
        fail_msg("%s is missing, want %s", ptr, want);
    if (!cJSON_Compare(got, T.want, 1)) {
        free(T.text);
        T.text = cJSON_PrintUnformatted(got);
        fail_msg("%s is %s, want %s", ptr, T.text, want);
    }
}

static void assert_absent(const cJSON *doc, const char *ptr)
{
    const cJSON *got = at(doc, ptr);

    if (got) {
        free(T.text);
        T.text = cJSON_PrintUnformatted(got);
        fail_msg("%s should be absent, is %s", ptr, T.text);
    }
}

/* Container i of the patched pod. */
static const cJSON *C(int i)
{
    const cJSON *c = cJSON_GetArrayItem(at(T.patched, "/spec/containers"), i);

    assert_non_null(c);
    return c;
}

static int env_count(const cJSON *c, const char *name)
{
    const cJSON *e;
    int n = 0;

    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c, "env"))
    {
        const char *en = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));

        n += en && strcmp(en, name) == 0;
    }
    return n;
}

/* The value of env name in container c (NULL when absent); fails on duplicates. */
static const char *env_of(const cJSON *c, const char *name)
{
    const cJSON *e;

    if (env_count(c, name) > 1)
        fail_msg("env %s appears %d times", name, env_count(c, name));
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c, "env"))
    {
        const char *en = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));

        if (en && strcmp(en, name) == 0) {
            const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "value"));

            return v ? v : "";
        }
    }
    return NULL;
}

static void assert_env(const cJSON *c, const char *name, const char *want)
{
    const char *got = env_of(c, name);

    if (!got)
        fail_msg("env %s missing, want %s", name, want);
    assert_string_equal(got, want);
}

static int env_len(const cJSON *c)
{
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(c, "env"));
}

/* The shipped roce-8card variables, all present with the profile's values. */
static void assert_profile_env_8card(const cJSON *c)
{
    assert_env(c, "NCCL_IB_DISABLE", "0");
    assert_env(c, "NCCL_SOCKET_IFNAME", "eth0");
    assert_env(c, "NCCL_IB_TIMEOUT", "22");
    assert_env(c, "NCCL_IB_QPS_PER_CONNECTION", "8");
    assert_env(c, "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
}

/* ---- warnings ---- */

static void check_warnings(const struct mutate_result *res)
{
    for (size_t i = 0; i < res->warnings.n; i++) {
        const char *w = res->warnings.text[i];

        if (strncmp(w, WARN_PREFIX, strlen(WARN_PREFIX)) != 0)
            fail_msg("warning without prefix: %s", w);
        if (strlen(w) >= 120)
            fail_msg("warning of %zu bytes: %s", strlen(w), w);
        if (!utf8_valid(w, strlen(w)))
            fail_msg("warning is not valid UTF-8: %s", w);
    }
}

static int warned(const char *phrase)
{
    int n = 0;

    for (size_t i = 0; i < T.res.warnings.n; i++)
        n += strstr(T.res.warnings.text[i], phrase) != NULL;
    return n;
}

static void print_warnings(void)
{
    for (size_t i = 0; i < T.res.warnings.n; i++)
        print_message("  warning: %s\n", T.res.warnings.text[i]);
}

#define assert_warned(phrase)                                                                      \
    do {                                                                                           \
        if (!warned(phrase)) {                                                                     \
            print_warnings();                                                                      \
            fail_msg("no warning contains \"%s\"", (phrase));                                      \
        }                                                                                          \
    } while (0)

#define assert_not_warned(phrase)                                                                  \
    do {                                                                                           \
        if (warned(phrase)) {                                                                      \
            print_warnings();                                                                      \
            fail_msg("unexpected warning with \"%s\"", (phrase));                                  \
        }                                                                                          \
    } while (0)

/* When phrase is not NULL, the warning with it names container name. */
#define assert_warned_container_named(name, phrase)                                                \
    do {                                                                                           \
        for (size_t i_ = 0; (phrase) && i_ < T.res.warnings.n; i_++)                               \
            if (strstr(T.res.warnings.text[i_], (phrase)) &&                                       \
                !strstr(T.res.warnings.text[i_], "\"" name "\""))                                  \
                fail_msg("warning does not name \"%s\": %s", name, T.res.warnings.text[i_]);       \
    } while (0)

/* ---- the harness ---- */

/* Every value of before is in after; arrays may only have grown at the end. */
static void assert_preserved(const cJSON *before, const cJSON *after, const char *path)
{
    char sub[1024];
    const cJSON *it;
    int i = 0;

    if (strcmp(path, "/spec/schedulerName") == 0 && cJSON_IsString(before) &&
        strcmp(before->valuestring, "default-scheduler") == 0)
        return;
    if (!after)
        fail_msg("%s was removed", path);
    if (cJSON_IsObject(before)) {
        if (!cJSON_IsObject(after))
            fail_msg("%s changed type", path);
        cJSON_ArrayForEach(it, before)
        {
            snprintf(sub, sizeof(sub), "%s/%s", path, it->string);
            assert_preserved(it, cJSON_GetObjectItemCaseSensitive(after, it->string), sub);
        }
        return;
    }
    if (cJSON_IsArray(before)) {
        if (!cJSON_IsArray(after) || cJSON_GetArraySize(after) < cJSON_GetArraySize(before))
            fail_msg("%s shrank or changed type", path);
        cJSON_ArrayForEach(it, before)
        {
            snprintf(sub, sizeof(sub), "%s/%d", path, i);
            assert_preserved(it, cJSON_GetArrayItem(after, i), sub);
            i++;
        }
        return;
    }
    /* The one value the webhook owns: it may grow (mutannot_warnings_value). */
    if (strstr(path, "/metadata/annotations/" MUTATE_ANNOTATION_WARNINGS))
        return;
    if (!cJSON_Compare(before, after, 1))
        fail_msg("%s changed value", path);
}

static void mutate_once(const cJSON *doc, const char *base, int implicit, const struct profiles *ps,
                        const struct mutate_hooks *hooks, struct mutate_result *res)
{
    struct mutate_input in = {.object = at(doc, base),
                              .base = base,
                              .namespace_ = "ns",
                              .implicit_target = implicit,
                              .user = T.user,
                              .opts = T.opts};

    assert_non_null(in.object);
    mutate_result_init(res, 1 << 20);
    mutate_object(&in, ps, hooks, res);
    check_warnings(res);
}

/* The pod's rdma-webhook.io/warnings has every warning of res, whole (the log's text), without the
 * lead, each once. */
static void assert_warnings_annotation(const cJSON *pod, const struct mutate_result *res)
{
    const cJSON *ann = cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "annotations");
    const char *value = cJSON_GetStringValue(cJSON_GetObjectItem(ann, MUTATE_ANNOTATION_WARNINGS));
    cJSON *list;

    if (res->warnings.n == 0)
        return;
    if (!value)
        fail_msg("warnings but no " MUTATE_ANNOTATION_WARNINGS " annotation");
    list = cJSON_Parse(value);
    if (!cJSON_IsArray(list))
        fail_msg(MUTATE_ANNOTATION_WARNINGS " is not a JSON array: %s", value);
    for (size_t i = 0; i < res->warnings.n; i++) {
        const char *want = res->warnings.full[i] + strlen(MUTATE_WARNING_LEAD);
        int found = 0;
        const cJSON *it;

        cJSON_ArrayForEach(it, list)
        {
            found += cJSON_IsString(it) && strcmp(it->valuestring, want) == 0;
        }
        if (found != 1)
            fail_msg("warning \"%s\" is %d times in %s", want, found, value);
    }
    cJSON_Delete(list);
}

static void run_at(const char *json, const char *base, int implicit, const struct profiles *ps,
                   const struct mutate_hooks *hooks)
{
    char err[ERR_LEN];

    T.doc = J(json);
    mutate_once(T.doc, base, implicit, ps, hooks, &T.res);
    T.have_res = 1;
    T.patched = cJSON_Duplicate(T.doc, 1);
    if (T.res.outcome != MUTATE_PATCHED) {
        assert_int_equal(T.res.patch.n_ops, 0);
        return;
    }
    /* Without a profile the patch is the warnings annotation alone. */
    if (!T.res.profile)
        assert_int_equal(T.res.patch.n_ops, 1);
    T.ops = cJSON_Parse(dynbuf_ptr(&T.res.patch.out));
    if (!T.ops || !cJSON_IsArray(T.ops))
        fail_msg("patch is not a JSON array: %s", dynbuf_ptr(&T.res.patch.out));
    assert_int_equal(cJSON_GetArraySize(T.ops), T.res.patch.n_ops);
    if (patch_apply(&T.patched, T.ops, err, sizeof(err)))
        fail_msg("patch does not apply: %s\npatch: %s", err, dynbuf_ptr(&T.res.patch.out));
    assert_preserved(T.doc, T.patched, "");
    assert_warnings_annotation(at(T.patched, base), &T.res);
    mutate_once(T.patched, base, implicit, ps, hooks, &T.again);
    T.have_again = 1;
    if (T.again.outcome != MUTATE_SKIPPED || T.again.patch.n_ops != 0)
        fail_msg("second call is not empty (outcome %d): %s", T.again.outcome,
                 dynbuf_ptr(&T.again.patch.out));
}

static void run_with(const char *json, const struct profiles *ps, const struct mutate_hooks *hooks)
{
    run_at(json, "", 0, ps, hooks);
}

static void run(const char *json)
{
    run_with(json, shipped, NULL);
}

static const struct profiles *profiles_from(const char *text)
{
    custom = support_profiles(text);
    return custom;
}

static void assert_outcome(enum mutate_outcome want)
{
    if (T.res.outcome != want) {
        print_warnings();
        fail_msg("outcome %d (reason %s), want %d", T.res.outcome, mutate_reason_name(T.res.reason),
                 want);
    }
}

/* support.c loads the profiles; shipped is this file's short name for them. */
static int setup_group(void **state)
{
    int rc = support_shipped_setup(state);

    shipped = support_shipped;
    return rc;
}

static int teardown(void **state __attribute__((unused)))
{
    cJSON_Delete(T.doc);
    cJSON_Delete(T.patched);
    if (T.have_res)
        mutate_result_free(&T.res);
    if (T.have_again)
        mutate_result_free(&T.again);
    cJSON_Delete(T.ops);
    cJSON_Delete(T.want);
    free(T.text);
    memset(&T, 0, sizeof(T));
    profiles_free(custom);
    custom = NULL;
    return 0;
}

/* ================= NCCL environment ================= */

TEST(test_env_created_when_absent)
{
    run(POD("{'containers':[" C8("") "]}"));
    assert_outcome(MUTATE_PATCHED);
    assert_string_equal(T.res.profile->name, "roce-8card");
    assert_profile_env_8card(C(0));
    assert_int_equal(env_len(C(0)), 5);
    assert_null(env_of(C(0), "NCCL_IB_GID_INDEX"));
}

TEST(test_env_appended_after_user_env)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'FOO','value':'bar'}]") "]}"));
    assert_json_at(T.patched, "/spec/containers/0/env/0", "{'name':'FOO','value':'bar'}");
    assert_profile_env_8card(C(0));
    assert_int_equal(env_len(C(0)), 6);
}

TEST(test_empty_env_array_gets_appended)
{
    run(POD("{'containers':[" C8(",'env':[]") "]}"));
    assert_profile_env_8card(C(0));
    assert_int_equal(env_len(C(0)), 5);
}

TEST(test_user_value_wins_with_warning)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_TIMEOUT','value':'20'}]") "]}"));
    assert_env(C(0), "NCCL_IB_TIMEOUT", "20");
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
    assert_warned("to get the profile's");
    assert_warned("NCCL_IB_TIMEOUT");
}

TEST(test_user_value_equal_to_profile_no_warning)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_TIMEOUT','value':'22'}]") "]}"));
    assert_env(C(0), "NCCL_IB_TIMEOUT", "22");
    assert_int_equal(T.res.warnings.n, 0);
}

TEST(test_user_value_from_wins_with_warning)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_SOCKET_IFNAME','valueFrom':"
                                 "{'fieldRef':{'fieldPath':'metadata.name'}}}]") "]}"));
    assert_int_equal(env_count(C(0), "NCCL_SOCKET_IFNAME"), 1);
    assert_json_at(T.patched, "/spec/containers/0/env/0/valueFrom/fieldRef/fieldPath",
                   "'metadata.name'");
    assert_warned("to get the profile's");
    assert_warned("valueFrom"); /* not "your NCCL_SOCKET_IFNAME=" (an empty value) */
}

TEST(test_user_octal_timeout_warns)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_TIMEOUT','value':'022'}]") "]}"));
    assert_env(C(0), "NCCL_IB_TIMEOUT", "022");
    assert_warned("drop the leading 0");
}

TEST(test_user_retry_cnt_outside_warns)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_RETRY_CNT','value':'9'}]") "]}"));
    assert_env(C(0), "NCCL_IB_RETRY_CNT", "9");
    assert_warned(": use 0..7");
}

TEST(test_user_hca_prefix_warns)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_HCA','value':'mlx5_1,mlx5_12'}]") "]}"));
    assert_env(C(0), "NCCL_IB_HCA", "mlx5_1,mlx5_12");
    assert_warned("mlx5_1 also takes mlx5_12");
}

/* roce-8card's nodes have mlx5_1..mlx5_8: no mlx5_1x for mlx5_1 to take. */
TEST(test_user_hca_prefix_of_nothing_the_profile_knows)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_HCA','value':'mlx5_1,mlx5_2'}]") "]}"));
    assert_env(C(0), "NCCL_IB_HCA", "mlx5_1,mlx5_2");
    assert_not_warned("prefix");
    assert_warned("to get the profile's");
}

/* A 16-NIC profile knows mlx5_10..mlx5_16: there mlx5_1 really collides. */
TEST(test_user_hca_prefix_of_a_device_the_profile_knows)
{
    run_with(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_HCA','value':'^mlx5_1'}]") "]}"),
             profiles_from("{'profiles':[{'name':'n16','default':true,'hca':['mlx5_1','mlx5_2',"
                           "'mlx5_3','mlx5_4','mlx5_5','mlx5_6','mlx5_7','mlx5_8','mlx5_9',"
                           "'mlx5_10','mlx5_11','mlx5_12','mlx5_13','mlx5_14','mlx5_15',"
                           "'mlx5_16']}]}"),
             NULL);
    assert_warned("write ^= first (mlx5_1 also takes mlx5_10)");
}

TEST(test_user_hca_syntax_nccl_misreads)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_HCA','value':'=^mlx5_0'}]") "]}"));
    assert_warned("NCCL_IB_HCA==^mlx5_0: write ^= (NCCL reads ^ only before =)");
}

TEST(test_user_nccl_debug_info_no_warning)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_DEBUG','value':'INFO'}]") "]}"));
    assert_env(C(0), "NCCL_DEBUG", "INFO");
    assert_int_equal(T.res.warnings.n, 0);
}

/* ================= envFrom ================= */

TEST(test_envfrom_secret_warns_and_skips_nothing)
{
    run(POD("{'containers':[" C8(",'envFrom':[{'secretRef':{'name':'nccl-secret'}}]") "]}"));
    assert_profile_env_8card(C(0));
    assert_warned("of Secret");
    assert_warned("nccl-secret");
    assert_int_equal(warned("of Secret"), 1); /* one warning per source, not per variable */
}

TEST(test_envfrom_configmap_without_lookup_warns)
{
    run(POD("{'containers':[" C8(",'envFrom':[{'configMapRef':{'name':'nccl-cm'}}]") "]}"));
    assert_profile_env_8card(C(0));
    assert_warned("of ConfigMap");
    assert_warned("nccl-cm");
}

TEST(test_envfrom_prefix_without_nccl_names_no_warning)
{
    run(POD("{'containers':[" C8(",'envFrom':[{'prefix':'APP_','configMapRef':{'name':'cm'}},"
                                 "{'prefix':'X_','secretRef':{'name':'s'}}]") "]}"));
    assert_profile_env_8card(C(0));
    assert_not_warned("envFrom");
}

TEST(test_envfrom_prefix_nccl_still_warns)
{
    run(POD("{'containers':[" C8(",'envFrom':[{'prefix':'NCCL_','secretRef':{'name':'s'}}]") "]}"));
    assert_warned("of Secret");
}

struct fake_cm {
    const char *has_key; /* the one key the ConfigMap has */
    char ns[32], name[64], keys[512];
    int calls;
};

static enum mutate_envfrom fake_has_key(void *ctx, const char *ns, const char *name,
                                        const char *key)
{
    struct fake_cm *f = ctx;

    f->calls++;
    snprintf(f->ns, sizeof(f->ns), "%s", ns ? ns : "(null)");
    snprintf(f->name, sizeof(f->name), "%s", name);
    strncat(f->keys, key, sizeof(f->keys) - strlen(f->keys) - 2);
    strcat(f->keys, ",");
    return strcmp(key, f->has_key) == 0 ? MUTATE_ENVFROM_HAS : MUTATE_ENVFROM_LACKS;
}

TEST(test_configmap_hook_has_key_skips_variable)
{
    struct fake_cm f = {.has_key = "NCCL_IB_TIMEOUT"};
    struct mutate_hooks h = {.configmap_has_key = fake_has_key, .ctx = &f};

    run_with(POD("{'containers':[" C8(",'envFrom':[{'configMapRef':{'name':'nccl-cm'}}]") "]}"),
             shipped, &h);
    assert_null(env_of(C(0), "NCCL_IB_TIMEOUT"));
    assert_env(C(0), "NCCL_IB_DISABLE", "0");
    assert_env(C(0), "NCCL_SOCKET_IFNAME", "eth0");
    assert_int_equal(env_len(C(0)), 4);
    assert_not_warned("envFrom");
    assert_string_equal(f.ns, "ns");
    assert_string_equal(f.name, "nccl-cm");
}

TEST(test_configmap_hook_gets_key_without_prefix)
{
    struct fake_cm f = {.has_key = "IB_TIMEOUT"};
    struct mutate_hooks h = {.configmap_has_key = fake_has_key, .ctx = &f};

    run_with(POD("{'containers':[" C8(",'envFrom':[{'prefix':'NCCL_','configMapRef':"
                                      "{'name':'cm','optional':true}}]") "]}"),
             shipped, &h);
    assert_null(env_of(C(0), "NCCL_IB_TIMEOUT"));
    assert_contains(f.keys, "IB_TIMEOUT,");
    assert_null(strstr(f.keys, "NCCL_"));
}

TEST(test_configmap_hook_lacks_key_adds_all_without_warning)
{
    struct fake_cm f = {.has_key = "NOT_THERE"};
    struct mutate_hooks h = {.configmap_has_key = fake_has_key, .ctx = &f};

    run_with(POD("{'containers':[" C8(",'envFrom':[{'configMapRef':{'name':'cm'}}]") "]}"), shipped,
             &h);
    assert_profile_env_8card(C(0));
    assert_int_equal(T.res.warnings.n, 0);
    assert_true(f.calls >= 5);
}

TEST(test_configmap_hook_not_asked_about_secrets)
{
    struct fake_cm f = {.has_key = "NCCL_IB_TIMEOUT"};
    struct mutate_hooks h = {.configmap_has_key = fake_has_key, .ctx = &f};

    run_with(POD("{'containers':[" C8(",'envFrom':[{'secretRef':{'name':'s'}}]") "]}"), shipped,
             &h);
    assert_int_equal(f.calls, 0);
    assert_env(C(0), "NCCL_IB_TIMEOUT", "22");
    assert_warned("of Secret");
}

/* A target pod whose training container has n envFrom sources, each head,
 * its index (0..n-1) and rest, then the text tail (T.text holds it, so a
 * failed assertion frees it). */
static const char *pod_with_envfrom(int n, const char *head, const char *rest, const char *tail)
{
    const char *pod = POD("{'containers':[" C8(",'envFrom':[@]") "]}");
    const char *mark = strchr(pod, '@');
    struct dynbuf b;

    dynbuf_init(&b, 1 << 20);
    dynbuf_add(&b, pod, (size_t)(mark - pod));
    for (int i = 0; i < n; i++) {
        if (i)
            dynbuf_addc(&b, ',');
        dynbuf_printf(&b, "%s%d%s", head, i, rest);
    }
    dynbuf_addstr(&b, tail);
    assert_int_equal(dynbuf_addstr(&b, mark + 1), 0);
    T.text = dynbuf_steal(&b);
    return T.text;
}

struct fake_many {
    int calls, max_index;
    int has_index; /* the source that has every key; -1: none */
};

static enum mutate_envfrom fake_many_has_key(void *ctx, const char *ns __attribute__((unused)),
                                             const char *name, const char *key)
{
    struct fake_many *f = ctx;
    int i = atoi(name + strlen("cm-"));

    (void)key;
    f->calls++;
    if (i > f->max_index)
        f->max_index = i;
    return i == f->has_index ? MUTATE_ENVFROM_HAS : MUTATE_ENVFROM_LACKS;
}

/* Sources past the 64th are not asked about (each could be an API call);
 * one warning says so, and the profile's values are added. */
TEST(test_envfrom_past_64_not_checked_one_warning)
{
    struct fake_many f = {.has_index = 66};
    struct mutate_hooks h = {.configmap_has_key = fake_many_has_key, .ctx = &f};

    run_with(pod_with_envfrom(70, "{'configMapRef':{'name':'cm-", "'}}", ""), shipped, &h);
    assert_profile_env_8card(C(0)); /* cm-66 would have had every key */
    assert_true(f.calls > 0);
    assert_int_equal(f.max_index, 63);
    assert_int_equal(warned("envFrom"), 1);
    assert_warned("past the 64th");
    assert_int_equal(T.res.warnings.n, 1);
}

/* 64 sources are all checked, without a warning. */
TEST(test_envfrom_64_all_checked)
{
    struct fake_many f = {.has_index = 63};
    struct mutate_hooks h = {.configmap_has_key = fake_many_has_key, .ctx = &f};

    run_with(pod_with_envfrom(64, "{'configMapRef':{'name':'cm-", "'}}", ""), shipped, &h);
    assert_null(env_of(C(0), "NCCL_IB_TIMEOUT")); /* cm-63 has it */
    assert_int_equal(f.max_index, 63);
    assert_not_warned("envFrom");
}

/* Sources past the 64th used to earn a warning for every variable (up to the
 * cap): 64 sources that cannot declare NCCL_* (their prefix rules it out),
 * then six Secrets. */
TEST(test_envfrom_past_64_warned_once)
{
    run(pod_with_envfrom(64, "{'prefix':'APP_','configMapRef':{'name':'cm-", "'}}",
                         ",{'secretRef':{'name':'s1'}},{'secretRef':{'name':'s2'}},"
                         "{'secretRef':{'name':'s3'}},{'secretRef':{'name':'s4'}},"
                         "{'secretRef':{'name':'s5'}},{'secretRef':{'name':'s6'}}"));
    assert_profile_env_8card(C(0));
    assert_int_equal(warned("envFrom"), 1);
    assert_warned("past the 64th");
}

/* Past the 64th, a source whose prefix rules out NCCL_* needs no warning. */
TEST(test_envfrom_past_64_with_other_prefix_no_warning)
{
    run(pod_with_envfrom(70, "{'prefix':'APP_','secretRef':{'name':'s", "'}}", ""));
    assert_profile_env_8card(C(0));
    assert_not_warned("envFrom");
}

/* ================= IPC_LOCK ================= */

TEST(test_ipc_lock_creates_security_context)
{
    run(POD("{'containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/spec/containers/0/securityContext",
                   "{'capabilities':{'add':['IPC_LOCK']}}");
}

TEST(test_ipc_lock_creates_capabilities)
{
    run(POD("{'containers':[" C8(",'securityContext':{'runAsUser':0}") "]}"));
    assert_json_at(T.patched, "/spec/containers/0/securityContext",
                   "{'runAsUser':0,'capabilities':{'add':['IPC_LOCK']}}");
}

TEST(test_ipc_lock_creates_add)
{
    run(POD("{'containers':[" C8(",'securityContext':{'capabilities':{'drop':['NET_RAW']}}") "]}"));
    assert_json_at(T.patched, "/spec/containers/0/securityContext/capabilities",
                   "{'drop':['NET_RAW'],'add':['IPC_LOCK']}");
}

TEST(test_ipc_lock_appended_to_existing_add)
{
    run(POD(
        "{'containers':[" C8(",'securityContext':{'capabilities':{'add':['SYS_PTRACE']}}") "]}"));
    assert_json_at(T.patched, "/spec/containers/0/securityContext/capabilities/add",
                   "['SYS_PTRACE','IPC_LOCK']");
}

TEST(test_ipc_lock_already_present_not_repeated)
{
    run(POD("{'containers':[" C8(",'securityContext':{'capabilities':{'add':['IPC_LOCK']}}") "]}"));
    assert_json_at(T.patched, "/spec/containers/0/securityContext/capabilities/add",
                   "['IPC_LOCK']");
}

TEST(test_cap_ipc_lock_counts_as_present)
{
    run(POD(
        "{'containers':[" C8(",'securityContext':{'capabilities':{'add':['CAP_IPC_LOCK']}}") "]}"));
    assert_json_at(T.patched, "/spec/containers/0/securityContext/capabilities/add",
                   "['CAP_IPC_LOCK']");
}

TEST(test_privileged_container_gets_no_capability)
{
    run(POD("{'containers':[" C8(",'securityContext':{'privileged':true}") "]}"));
    assert_json_at(T.patched, "/spec/containers/0/securityContext", "{'privileged':true}");
    assert_profile_env_8card(C(0)); /* the rest still applies */
}

TEST(test_ipc_lock_off_in_profile)
{
    run_with(POD("{'containers':[" C8("") "]}"),
             profiles_from("{'profiles':[{'name':'p','match':{'gpus':8},'ipcLock':false}]}"), NULL);
    assert_outcome(MUTATE_PATCHED);
    assert_absent(T.patched, "/spec/containers/0/securityContext");
}

static size_t warned_kind(enum mutate_warning_kind kind);

/* A non-root container gets no IPC_LOCK (an added capability is not
 * effective for a non-root process, and it trips policies that forbid
 * adding any), and one warning that says to raise memlock instead. */
#define NON_ROOT_WARNING                                                                           \
    WARN_PREFIX "raise memlock on nodes for container \"pytorch\": no IPC_LOCK, which does "       \
                "nothing as non-root"

TEST(test_non_root_container_run_as_user_gets_no_ipc_lock)
{
    run(POD("{'containers':[" C8(",'securityContext':{'runAsUser':1000}") "]}"));
    assert_warned(NON_ROOT_WARNING);
    assert_int_equal(warned_kind(MUTATE_W_NON_ROOT), 1);
    assert_json_at(T.patched, "/spec/containers/0/securityContext", "{'runAsUser':1000}");
    /* The rest of the mutation is there. */
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
    assert_json_at(T.patched, "/spec/schedulerName", "'volcano'");
}

/* runAsNonRoot alone: the kubelet starts the container only as non-root. */
TEST(test_non_root_container_run_as_non_root_gets_no_ipc_lock)
{
    run(POD("{'containers':[" C8(",'securityContext':{'runAsNonRoot':true}") "]}"));
    assert_warned(NON_ROOT_WARNING);
    assert_json_at(T.patched, "/spec/containers/0/securityContext", "{'runAsNonRoot':true}");
}

TEST(test_non_root_pod_level_gets_no_ipc_lock)
{
    run(POD("{'securityContext':{'runAsNonRoot':true},'containers':[" C8("") "]}"));
    assert_warned(NON_ROOT_WARNING);
    assert_absent(T.patched, "/spec/containers/0/securityContext");
}

TEST(test_non_root_pod_run_as_user_gets_no_ipc_lock)
{
    run(POD("{'securityContext':{'runAsUser':1000},'containers':[" C8("") "]}"));
    assert_warned(NON_ROOT_WARNING);
    assert_absent(T.patched, "/spec/containers/0/securityContext");
}

TEST(test_container_root_overrides_pod_non_root)
{
    run(POD("{'securityContext':{'runAsUser':1000},'containers':[" C8(
        ",'securityContext':{'runAsUser':0}") "]}"));
    assert_not_warned("non-root");
    assert_json_at(T.patched, "/spec/containers/0/securityContext/capabilities/add",
                   "['IPC_LOCK']");
}

/* runAsNonRoot false: the image's user decides, which may be root. */
TEST(test_container_run_as_non_root_false_overrides_pod)
{
    run(POD("{'securityContext':{'runAsNonRoot':true},'containers':[" C8(
        ",'securityContext':{'runAsNonRoot':false}") "]}"));
    assert_not_warned("non-root");
    assert_json_at(T.patched, "/spec/containers/0/securityContext/capabilities/add",
                   "['IPC_LOCK']");
}

/* The user's own IPC_LOCK stays; the warning says it does nothing. */
TEST(test_non_root_keeps_the_users_ipc_lock_and_warns)
{
    run(POD("{'containers':[" C8(",'securityContext':{'runAsUser':1000,'capabilities':{'add':["
                                 "'IPC_LOCK']}}") "]}"));
    assert_warned("raise the memlock ulimit for container \"pytorch\": non-root, so IPC_LOCK "
                  "does nothing");
    assert_int_equal(warned_kind(MUTATE_W_NON_ROOT), 1);
    assert_json_at(T.patched, "/spec/containers/0/securityContext/capabilities/add",
                   "['IPC_LOCK']");
}

TEST(test_root_by_default_no_warning)
{
    run(POD("{'securityContext':{'runAsUser':0},'containers':[" C8("") "]}"));
    assert_int_equal(T.res.warnings.n, 0);
}

TEST(test_privileged_non_root_no_warning)
{
    run(POD("{'containers':[" C8(",'securityContext':{'privileged':true,'runAsUser':1000}") "]}"));
    assert_not_warned("non-root");
}

/* ================= IPC_LOCK and Pod Security ================= */

#define PSA_ENFORCE "pod-security.kubernetes.io/enforce"
#define PSA_WARN    "pod-security.kubernetes.io/warn"
#define PSA_AUDIT   "pod-security.kubernetes.io/audit"

/* The namespace_labels hook: labels (test JSON) or a failure, counted. */
static struct {
    const char *labels; /* NULL: the lookup fails */
    int calls;
    char name[64];
} ns_hook;

static int fake_namespace_labels(void *ctx __attribute__((unused)), const char *name,
                                 cJSON **labels)
{
    ns_hook.calls++;
    snprintf(ns_hook.name, sizeof(ns_hook.name), "%s", name);
    if (!ns_hook.labels)
        return ERR_FAIL;
    *labels = J(ns_hook.labels);
    return ERR_OK;
}

static const struct mutate_hooks ns_hooks = {.select = {.namespace_labels = fake_namespace_labels}};

/* How many times one call of mutate_object() on pod asks for the
 * namespace's labels (the harness calls it twice, the second time on the
 * patched pod). */
static int ns_asks_of_one_call(const char *labels, const char *pod, const struct profiles *ps)
{
    struct mutate_result res;
    cJSON *doc = J(pod);
    int calls;

    memset(&ns_hook, 0, sizeof(ns_hook));
    ns_hook.labels = labels;
    mutate_once(doc, "", 0, ps, &ns_hooks, &res);
    calls = ns_hook.calls;
    mutate_result_free(&res);
    cJSON_Delete(doc);
    return calls;
}

/* Runs pod in a namespace with these labels (NULL: unreadable) and returns
 * whether container 0 came out with IPC_LOCK; ns_hook.calls is then the
 * asks of the first call. */
static int run_in_ns(const char *labels, const char *pod)
{
    const cJSON *add;
    int calls = ns_asks_of_one_call(labels, pod, shipped);

    memset(&ns_hook, 0, sizeof(ns_hook));
    ns_hook.labels = labels;
    run_with(pod, shipped, &ns_hooks);
    ns_hook.calls = calls;
    assert_outcome(MUTATE_PATCHED);
    add = at(T.patched, "/spec/containers/0/securityContext/capabilities/add");
    for (int i = 0; i < cJSON_GetArraySize(add); i++)
        if (strcmp(cJSON_GetArrayItem(add, i)->valuestring, "IPC_LOCK") == 0)
            return 1;
    return 0;
}

static size_t warned_kind(enum mutate_warning_kind kind)
{
    size_t n = 0;

    for (size_t i = 0; i < T.res.warnings.n; i++)
        n += T.res.warnings.kind[i] == kind;
    return n;
}

/* The rule, mode by mode and level by level, for a pod that declares no
 * IPC_LOCK and for one that does. */
TEST(test_pod_security_levels_and_modes)
{
    static const struct {
        const char *labels;
        int added;       /* the webhook adds IPC_LOCK */
        const char *say; /* in the pod_security warning; NULL: none */
    } cases[] = {
        {"{}", 1, NULL},
        {"{'" PSA_ENFORCE "':'privileged'}", 1, NULL},
        {"{'" PSA_ENFORCE "':'baseline'}", 0, "no IPC_LOCK under Pod Security baseline"},
        {"{'" PSA_ENFORCE "':'restricted'}", 0, "no IPC_LOCK under Pod Security restricted"},
        {"{'" PSA_ENFORCE "':'Baseline'}", 0, "enforce=\"Baseline\", read as restricted"},
        {"{'" PSA_ENFORCE "':''}", 0, "enforce=\"\", read as restricted"},
        {"{'" PSA_ENFORCE "':'baseline','" PSA_ENFORCE "-version':'v1.21'}", 0,
         "under Pod Security baseline"},
        {"{'" PSA_ENFORCE "':'restricted','" PSA_WARN "':'privileged'}", 0,
         "under Pod Security restricted"},
        {"{'" PSA_WARN "':'privileged','" PSA_AUDIT "':'privileged'}", 1, NULL},
        {"{'" PSA_WARN "':'baseline'}", 1, "ignore Pod Security baseline warning on IPC_LOCK"},
        {"{'" PSA_WARN "':'restricted'}", 1, "ignore Pod Security restricted warning"},
        {"{'" PSA_AUDIT "':'baseline'}", 1, "ignore Pod Security baseline audit on IPC_LOCK"},
        {"{'" PSA_AUDIT "':'restricted'}", 1, "restricted audit"},
        {"{'" PSA_WARN "':'restricted','" PSA_AUDIT "':'baseline'}", 1,
         "ignore Pod Security warning and audit on IPC_LOCK"},
        /* warn and audit fail open on a value that is not a level */
        {"{'" PSA_WARN "':'strict','" PSA_AUDIT "':'Restricted'}", 1, NULL},
        {"{'" PSA_ENFORCE "':'privileged','" PSA_WARN "':'baseline'}", 1, "baseline warning"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = run_in_ns(cases[i].labels, POD("{'containers':[" C8("") "]}"));

        print_message("%s: IPC_LOCK %s\n", cases[i].labels, got ? "added" : "not added");
        if (got != cases[i].added)
            fail_msg("%s: IPC_LOCK added %d, want %d", cases[i].labels, got, cases[i].added);
        assert_int_equal(ns_hook.calls, 1);
        assert_string_equal(ns_hook.name, "ns");
        assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), cases[i].say ? 1 : 0);
        if (cases[i].say)
            assert_warned(cases[i].say);
        assert_warned_container_named("pytorch", cases[i].say);
        /* Everything else is added, whatever the level. */
        assert_profile_env_8card(C(0));
        assert_json_at(T.patched, "/spec/containers/0/volumeMounts/0/mountPath", "'/dev/shm'");
        assert_json_at(T.patched, "/spec/schedulerName", "'volcano'");
        assert_json_at(T.patched, "/spec/containers/0/resources/limits/rdma~1hca", "'1'");
        teardown(NULL);

        /* A user's own IPC_LOCK is kept, whatever the level. The one
         * lookup left is report mode's (rdma-webhook.io/mode). */
        assert_int_equal(run_in_ns(cases[i].labels,
                                   POD("{'containers':[" C8(",'securityContext':{'capabilities':"
                                                            "{'add':['IPC_LOCK']}}") "]}")),
                         1);
        assert_int_equal(ns_hook.calls, 1);
        assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), 0);
        teardown(NULL);
    }
}

TEST(test_pod_security_lookup_failure_leaves_ipc_lock_out)
{
    assert_false(run_in_ns(NULL, POD("{'containers':[" C8("") "]}")));
    assert_warned("check the webhook can read namespaces: Pod Security level unknown, no IPC_LOCK "
                  "in \"pytorch\"");
    assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), 1);
    assert_profile_env_8card(C(0));
    assert_json_at(T.patched, "/spec/containers/0/volumeMounts/0/mountPath", "'/dev/shm'");
}

TEST(test_pod_security_lookup_failure_keeps_the_user_s_ipc_lock)
{
    assert_true(
        run_in_ns(NULL, POD("{'containers':[" C8(
                            ",'securityContext':{'capabilities':{'add':['IPC_LOCK']}}") "]}")));
    assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), 0);
}

/* --pod-security-config: the cluster's defaults and exemptions, as a
 * podsecconf_load() would leave them (podsec.h). */
struct psconf_case {
    struct podsec_config conf;
    cJSON *lists; /* owns conf's */
    struct mutate_options opts;
};

static void psconf_setup(struct psconf_case *c, enum podsec_level enforce, enum podsec_level warn,
                         const char *namespaces, const char *usernames, const char *classes)
{
    memset(c, 0, sizeof(*c));
    c->conf.defaults[PODSEC_ENFORCE] = enforce;
    c->conf.defaults[PODSEC_WARN] = warn;
    c->conf.defaults[PODSEC_AUDIT] = PODSEC_PRIVILEGED;
    c->lists = cJSON_CreateObject();
    assert_non_null(c->lists);
    if (namespaces)
        cJSON_AddItemToObject(c->lists, "n", J(namespaces));
    if (usernames)
        cJSON_AddItemToObject(c->lists, "u", J(usernames));
    if (classes)
        cJSON_AddItemToObject(c->lists, "r", J(classes));
    c->conf.namespaces = cJSON_GetObjectItemCaseSensitive(c->lists, "n");
    c->conf.usernames = cJSON_GetObjectItemCaseSensitive(c->lists, "u");
    c->conf.runtime_classes = cJSON_GetObjectItemCaseSensitive(c->lists, "r");
    c->opts.podsec = &c->conf;
    T.opts = &c->opts;
}

/* A namespace without the enforce label has the cluster's default level:
 * under a default of baseline no IPC_LOCK, as for the label; a label still
 * wins over the default, and the default warn level only warns. */
TEST(test_pod_security_config_defaults)
{
    struct psconf_case c;
    const char *pod = POD("{'containers':[" C8("") "]}");

    psconf_setup(&c, PODSEC_BASELINE, PODSEC_PRIVILEGED, NULL, NULL, NULL);
    assert_false(run_in_ns("{}", pod));
    assert_warned("no IPC_LOCK under Pod Security baseline");
    assert_profile_env_8card(C(0));
    teardown(NULL);
    T.opts = &c.opts;
    assert_true(run_in_ns("{'" PSA_ENFORCE "':'privileged'}", pod));
    assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), 0);
    teardown(NULL);
    cJSON_Delete(c.lists);

    psconf_setup(&c, PODSEC_PRIVILEGED, PODSEC_RESTRICTED, NULL, NULL, NULL);
    assert_true(run_in_ns("{}", pod));
    assert_warned("ignore Pod Security restricted warning on IPC_LOCK");
    teardown(NULL);
    /* A warn label that is not a level fails open, default or not. */
    T.opts = &c.opts;
    assert_true(run_in_ns("{'" PSA_WARN "':'strict'}", pod));
    assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), 0);
    teardown(NULL);
    cJSON_Delete(c.lists);
}

/* An exempt pod is never evaluated by Pod Security: IPC_LOCK is added
 * whatever the namespace's level, with no warning, even when the labels
 * cannot be read. Exempt by namespace, by the requesting user, or by its
 * runtimeClassName; anything else is evaluated as ever. */
TEST(test_pod_security_config_exemptions)
{
    static const struct {
        const char *namespaces, *usernames, *classes, *user, *runtime_class;
        int exempt;
    } cases[] = {
        {"['other','ns']", NULL, NULL, NULL, NULL, 1},
        {"['other']", NULL, NULL, NULL, NULL, 0},
        {NULL, "['system:serviceaccount:kubeflow:training-operator']", NULL,
         "system:serviceaccount:kubeflow:training-operator", NULL, 1},
        {NULL, "['system:serviceaccount:kubeflow:training-operator']", NULL, "alice", NULL, 0},
        {NULL, "['alice']", NULL, NULL, NULL, 0},
        {NULL, NULL, "['kata']", NULL, "kata", 1},
        {NULL, NULL, "['kata']", NULL, "gvisor", 0},
        {NULL, NULL, "['kata']", NULL, NULL, 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct psconf_case c;
        char pod[1024];
        const char *labels[] = {"{'" PSA_ENFORCE "':'restricted'}", NULL};

        snprintf(pod, sizeof(pod), "%s",
                 cases[i].runtime_class
                     ? (strcmp(cases[i].runtime_class, "kata") == 0
                            ? POD("{'runtimeClassName':'kata','containers':[" C8("") "]}")
                            : POD("{'runtimeClassName':'gvisor','containers':[" C8("") "]}"))
                     : POD("{'containers':[" C8("") "]}"));
        for (size_t l = 0; l < 2; l++) {
            psconf_setup(&c, PODSEC_PRIVILEGED, PODSEC_PRIVILEGED, cases[i].namespaces,
                         cases[i].usernames, cases[i].classes);
            T.user = cases[i].user;
            print_message("case %zu, labels %s\n", i, labels[l] ? labels[l] : "(unread)");
            /* Unread labels leave IPC_LOCK out of an exempt pod too: the
             * exemption is Pod Security's, and the label rdma-webhook.io/ipc-lock
             * stands for the namespace's other policies. */
            int added = cases[i].exempt && labels[l];

            assert_int_equal(run_in_ns(labels[l], pod), added);
            assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), added ? 0 : 1);
            if (cases[i].exempt && !labels[l])
                assert_warned("ipc-lock label unknown, no IPC_LOCK in \"pytorch\"");
            assert_profile_env_8card(C(0));
            teardown(NULL);
            cJSON_Delete(c.lists);
        }
    }
}

TEST(test_pod_security_without_the_hook_adds_as_ever)
{
    struct mutate_hooks h = {0}; /* hooks, but no namespace_labels: no API */

    run_with(POD("{'containers':[" C8("") "]}"), shipped, &h);
    assert_json_at(T.patched, "/spec/containers/0/securityContext/capabilities/add",
                   "['IPC_LOCK']");
    assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), 0);
}

/* Two target containers and a target init container: one lookup, one
 * warning for each container, none of them gets IPC_LOCK. */
TEST(test_pod_security_asks_once_and_names_each_container)
{
    const char *pod = POD(
        "{'initContainers':[" C8N("warm", "") "],'containers':[" C8("") "," C8N("second", "") "]}");
    const struct profiles *ps =
        profiles_from("{'profiles':[{'name':'p','default':true,'initContainers':true}]}");

    assert_int_equal(ns_asks_of_one_call("{'" PSA_ENFORCE "':'baseline'}", pod, ps), 1);
    ns_hook.labels = "{'" PSA_ENFORCE "':'baseline'}";
    run_with(pod, ps, &ns_hooks);
    assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), 3);
    assert_warned("container \"pytorch\"");
    assert_warned("container \"second\"");
    assert_warned("container \"warm\"");
    assert_absent(T.patched, "/spec/containers/0/securityContext");
    assert_absent(T.patched, "/spec/containers/1/securityContext");
    assert_absent(T.patched, "/spec/initContainers/0/securityContext");
}

/* Nothing would get IPC_LOCK: Pod Security says nothing, and the namespace
 * is asked about once only, for report mode's label. */
TEST(test_pod_security_not_asked_when_nothing_would_be_added)
{
    static const char *const pods[] = {
        POD("{'containers':[" C8(",'securityContext':{'privileged':true}") "]}"),
        POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_DISABLE','value':'1'}]") "]}"),
        POD("{'containers':[" C8(
            ",'securityContext':{'capabilities':{'add':['CAP_IPC_LOCK']}}") "]}"),
    };

    for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
        memset(&ns_hook, 0, sizeof(ns_hook));
        ns_hook.labels = "{'" PSA_ENFORCE "':'baseline'}";
        run_with(pods[i], shipped, &ns_hooks);
        /* The mode label, once per call with something to write: the
         * reinvocation still warns about NCCL_IB_DISABLE (pod 1). */
        assert_int_equal(ns_hook.calls, i == 1 ? 2 : 1);
        assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), 0);
        teardown(NULL);
    }
    memset(&ns_hook, 0, sizeof(ns_hook));
    run_with(POD("{'containers':[" C8("") "]}"),
             profiles_from("{'profiles':[{'name':'p','match':{'gpus':8},'ipcLock':false}]}"),
             &ns_hooks);
    assert_int_equal(ns_hook.calls, 1); /* the mode label */
    assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), 0);
}

/* The admins' switches of IPC_LOCK (mutate.h): the cluster's --ipc-lock=never and the
 * namespace's label rdma-webhook.io/ipc-lock=false leave it out, the rest of the mutation
 * stays, and nobody is warned: an admin chose it. --explain says which switch. */
static const struct mutate_options ipc_lock_never = {.ipc_lock = MUTATE_IPC_LOCK_NEVER};

TEST(test_ipc_lock_flag_never)
{
    static const char *const pods[] = {
        POD("{'containers':[" C8("") "]}"),
        /* non-root: no non-root warning either */
        POD("{'containers':[" C8(",'securityContext':{'runAsUser':1000}") "]}"),
    };

    enum mutate_ipc_lock lock = MUTATE_IPC_LOCK_NEVER;

    assert_int_equal(mutate_ipc_lock_parse("auto", &lock), ERR_OK);
    assert_int_equal(lock, MUTATE_IPC_LOCK_AUTO);
    assert_int_equal(mutate_ipc_lock_parse("never", &lock), ERR_OK);
    assert_int_equal(lock, MUTATE_IPC_LOCK_NEVER);
    assert_int_equal(mutate_ipc_lock_parse("false", &lock), ERR_FAIL);
    assert_int_equal(mutate_ipc_lock_parse(NULL, &lock), ERR_FAIL);
    assert_int_equal(lock, MUTATE_IPC_LOCK_NEVER); /* untouched on failure */
    for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
        /* with the namespace hook (serve) and without it (no API) */
        for (int h = 0; h < 2; h++) {
            T.opts = &ipc_lock_never;
            memset(&ns_hook, 0, sizeof(ns_hook));
            ns_hook.labels = "{}";
            run_with(pods[i], shipped, h ? &ns_hooks : NULL);
            assert_outcome(MUTATE_PATCHED);
            assert_absent(T.patched, "/spec/containers/0/securityContext/capabilities");
            assert_profile_env_8card(C(0));
            assert_json_at(T.patched, "/spec/containers/0/volumeMounts/0/mountPath", "'/dev/shm'");
            assert_int_equal(T.res.warnings.n, 0);
            teardown(NULL);
        }
    }
    /* An unreadable namespace does not matter when the flag decides: no warning. */
    T.opts = &ipc_lock_never;
    memset(&ns_hook, 0, sizeof(ns_hook));
    assert_false(run_in_ns(NULL, POD("{'containers':[" C8("") "]}")));
    assert_int_equal(warned_kind(MUTATE_W_POD_SECURITY), 0);
    teardown(NULL);
    /* The user's own IPC_LOCK is theirs. */
    T.opts = &ipc_lock_never;
    assert_true(
        run_in_ns("{}", POD("{'containers':[" C8(
                            ",'securityContext':{'capabilities':{'add':['IPC_LOCK']}}") "]}")));
}

TEST(test_ipc_lock_namespace_label)
{
    static const struct {
        const char *labels;
        int added;
        const char *warning; /* NULL: none */
    } cases[] = {
        {"{'" MUTATE_LABEL_IPC_LOCK "':'false'}", 0, NULL},
        {"{'" MUTATE_LABEL_IPC_LOCK "':'true'}", 1, NULL},
        {"{}", 1, NULL},
        {"{'" MUTATE_LABEL_IPC_LOCK "':'no'}", 1,
         "rdma-webhook.io/ipc-lock=false|true (\"no\" ignored)"},
        /* the label wins over a Pod Security level that would only warn */
        {"{'" MUTATE_LABEL_IPC_LOCK "':'false','" PSA_WARN "':'restricted'}", 0, NULL},
        /* and says nothing where Pod Security enforce forbids it anyway */
        {"{'" MUTATE_LABEL_IPC_LOCK "':'false','" PSA_ENFORCE "':'baseline'}", 0, NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        print_message("case %zu: %s\n", i, cases[i].labels);
        assert_int_equal(run_in_ns(cases[i].labels, POD("{'containers':[" C8("") "]}")),
                         cases[i].added);
        assert_int_equal(ns_hook.calls, 1); /* the one lookup, shared with report mode */
        assert_profile_env_8card(C(0));
        assert_json_at(T.patched, "/spec/containers/0/volumeMounts/0/mountPath", "'/dev/shm'");
        if (cases[i].warning) {
            assert_warned(cases[i].warning);
            assert_int_equal(warned_kind(MUTATE_W_IPC_LOCK), 1);
        } else {
            assert_int_equal(T.res.warnings.n, 0);
        }
        teardown(NULL);
    }
    /* A non-root container in such a namespace: no non-root warning either. */
    assert_false(
        run_in_ns("{'" MUTATE_LABEL_IPC_LOCK "':'false'}",
                  POD("{'containers':[" C8(",'securityContext':{'runAsUser':1000}") "]}")));
    assert_int_equal(T.res.warnings.n, 0);
    teardown(NULL);
    /* Unread labels: the label may be what decides, so Pod Security's warning for unread
     * labels and no IPC_LOCK, as before; the rest of the pod is mutated. */
    assert_false(run_in_ns(NULL, POD("{'containers':[" C8("") "]}")));
    assert_warned("check the webhook can read namespaces: Pod Security level unknown");
    assert_profile_env_8card(C(0));
}

/* --explain names the switch that left IPC_LOCK out. */
TEST(test_ipc_lock_switches_explained)
{
    static const struct {
        const char *labels;
        int never;
        const char *profiles; /* NULL: shipped */
        const char *says;
    } cases[] = {
        {"{}", 1, NULL, "IPC_LOCK: not added: --ipc-lock=never (the cluster's switch)"},
        {"{'" MUTATE_LABEL_IPC_LOCK "':'false'}", 0, NULL,
         "IPC_LOCK: not added: the namespace's label rdma-webhook.io/ipc-lock=false (the "
         "namespace's switch)"},
        {"{}", 0, "{'profiles':[{'name':'p','default':true,'ipcLock':false}]}",
         "IPC_LOCK: not added: the profile's ipcLock is false (the profile's switch)"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct trace tr;
        struct mutate_result res;
        cJSON *doc = J(POD("{'containers':[" C8("") "]}"));
        const struct profiles *ps = cases[i].profiles ? profiles_from(cases[i].profiles) : shipped;
        struct mutate_input in = {.object = doc,
                                  .base = "",
                                  .namespace_ = "ns",
                                  .opts = cases[i].never ? &ipc_lock_never : NULL,
                                  .trace = &tr};

        trace_init(&tr, 200, 1 << 16);
        memset(&ns_hook, 0, sizeof(ns_hook));
        ns_hook.labels = cases[i].labels;
        mutate_result_init(&res, 1 << 20);
        mutate_object(&in, ps, &ns_hooks, &res);
        if (!strstr(trace_finish(&tr), cases[i].says))
            fail_msg("case %zu: no \"%s\" in:\n%s", i, cases[i].says, trace_finish(&tr));
        assert_int_equal(res.warnings.n, 0);
        mutate_result_free(&res);
        trace_free(&tr);
        cJSON_Delete(doc);
    }
}

/* mutate_object() puts its memo in front of the select hooks: the
 * caller's ctx still reaches the Node hook, and the Namespace hook too. */
static int ctx_marker;
static int ctx_seen;

static int ctx_node_labels(void *ctx, const char *name __attribute__((unused)), cJSON **labels)
{
    ctx_seen += ctx == &ctx_marker;
    *labels = J("{'nvidia.com/gpu.count':'4'}");
    return 0;
}

static int ctx_namespace_labels(void *ctx, const char *name, cJSON **labels)
{
    ctx_seen += ctx == &ctx_marker;
    return fake_namespace_labels(ctx, name, labels);
}

TEST(test_pod_security_hooks_keep_the_caller_s_ctx)
{
    struct mutate_hooks h = {.select = {.node_labels = ctx_node_labels,
                                        .namespace_labels = ctx_namespace_labels,
                                        .ctx = &ctx_marker}};

    memset(&ns_hook, 0, sizeof(ns_hook));
    ns_hook.labels = "{'" PSA_ENFORCE "':'baseline'}";
    ctx_seen = 0;
    run_with(POD("{'nodeName':'n','containers':[" C8("") "]}"), shipped, &h);
    assert_string_equal(T.res.profile->name, "roce-4card"); /* chosen by the Node's labels */
    assert_absent(T.patched, "/spec/containers/0/securityContext");
    assert_int_equal(ctx_seen, 2 * 2); /* each hook once in each of the harness's two calls */
}

/* A non-root container gets no IPC_LOCK whatever the levels, so Pod
 * Security has nothing to say about it: the non-root warning alone says to
 * raise memlock. */
TEST(test_pod_security_non_root_one_warning)
{
    assert_false(
        run_in_ns("{'" PSA_ENFORCE "':'restricted'}",
                  POD("{'securityContext':{'runAsNonRoot':true},'containers':[" C8("") "]}")));
    assert_warned("non-root");
    assert_int_equal(T.res.warnings.n, 1);
    teardown(NULL);
    assert_false(
        run_in_ns("{'" PSA_WARN "':'restricted'}",
                  POD("{'securityContext':{'runAsNonRoot':true},'containers':[" C8("") "]}")));
    assert_warned("non-root");
    assert_not_warned("restricted warning");
    assert_int_equal(T.res.warnings.n, 1);
}

/* ================= /dev/shm ================= */

TEST(test_shm_volume_and_mount_created)
{
    run(POD("{'containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/spec/volumes",
                   "[{'name':'rdma-webhook-shm','emptyDir':{'medium':'Memory'}}]");
    assert_json_at(T.patched, "/spec/containers/0/volumeMounts",
                   "[{'name':'rdma-webhook-shm','mountPath':'/dev/shm'}]");
}

TEST(test_shm_appended_to_existing_volumes_and_mounts)
{
    run(POD("{'volumes':[{'name':'data','emptyDir':{}}],'containers':[" C8(
        ",'volumeMounts':[{'name':'data','mountPath':'/data'}]") "]}"));
    assert_json_at(T.patched, "/spec/volumes/1",
                   "{'name':'rdma-webhook-shm','emptyDir':{'medium':'Memory'}}");
    assert_json_at(T.patched, "/spec/containers/0/volumeMounts/1",
                   "{'name':'rdma-webhook-shm','mountPath':'/dev/shm'}");
}

TEST(test_shm_volume_name_collision_gets_suffix)
{
    run(POD("{'volumes':[{'name':'rdma-webhook-shm','configMap':{'name':'x'}}],'containers':[" C8(
        "") "]}"));
    assert_json_at(T.patched, "/spec/volumes/1",
                   "{'name':'rdma-webhook-shm-1','emptyDir':{'medium':'Memory'}}");
    assert_json_at(T.patched, "/spec/containers/0/volumeMounts",
                   "[{'name':'rdma-webhook-shm-1','mountPath':'/dev/shm'}]");
}

TEST(test_shm_volume_name_double_collision)
{
    run(POD("{'volumes':[{'name':'rdma-webhook-shm-1','emptyDir':{}},"
            "{'name':'rdma-webhook-shm','emptyDir':{}}],'containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/spec/volumes/2/name", "'rdma-webhook-shm-2'");
}

/* A pod whose volumes are rdma-webhook-shm, -1 .. -(n-1), but for skip
 * (-1: none skipped). */
static void run_with_shm_names(int n, int skip)
{
    struct dynbuf pod;

    dynbuf_init(&pod, 1 << 20);
    dynbuf_addstr(&pod, "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'w-0','namespace':'ns',"
                        "'labels':{'training.kubeflow.org/operator-name':'pytorchjob-controller'}},"
                        "'spec':{'volumes':[{'name':'data','emptyDir':{}}");
    for (int i = 0; i < n; i++)
        if (i != skip)
            dynbuf_printf(&pod,
                          i ? ",{'name':'rdma-webhook-shm-%d','emptyDir':{}}"
                            : ",{'name':'rdma-webhook-shm','emptyDir':{}}",
                          i);
    dynbuf_addstr(&pod, "],'containers':[" C8("") "]}}");
    run(dynbuf_ptr(&pod));
    dynbuf_free(&pod);
}

/* Every name the volume may take is the pod's: no volume, no mount, a
 * warning, never a second volume of one name (the apiserver refuses it). */
TEST(test_shm_no_free_name)
{
    run_with_shm_names(1000, -1);
    assert_int_equal(cJSON_GetArraySize(at(T.patched, "/spec/volumes")), 1001);
    assert_absent(T.patched, "/spec/containers/0/volumeMounts");
    assert_warned("free a name for /dev/shm: the pod's volumes take rdma-webhook-shm to "
                  "rdma-webhook-shm-999; none added");
    assert_json_at(T.patched, "/spec/containers/0/securityContext/capabilities/add",
                   "['IPC_LOCK']");
}

/* The one name left, found in one pass; names that only look alike
 * (-01, -1000) do not count. */
TEST(test_shm_last_free_name)
{
    run_with_shm_names(1000, 998);
    assert_json_at(T.patched, "/spec/volumes/1000",
                   "{'name':'rdma-webhook-shm-998','emptyDir':{'medium':'Memory'}}");
    assert_json_at(T.patched, "/spec/containers/0/volumeMounts",
                   "[{'name':'rdma-webhook-shm-998','mountPath':'/dev/shm'}]");
    teardown(NULL);
    run(POD("{'volumes':[{'name':'rdma-webhook-shm','emptyDir':{}},{'name':'rdma-webhook-shm-01',"
            "'emptyDir':{}},{'name':'rdma-webhook-shm-1000','emptyDir':{}}],'containers':[" C8(
                "") "]}"));
    assert_json_at(T.patched, "/spec/volumes/3/name", "'rdma-webhook-shm-1'");
}

TEST(test_existing_dev_shm_mount_is_kept)
{
    run(POD("{'volumes':[{'name':'cache','emptyDir':{'medium':'Memory'}}],'containers':[" C8(
        ",'volumeMounts':[{'name':'cache','mountPath':'/dev/shm'}]") "]}"));
    assert_int_equal(cJSON_GetArraySize(at(T.patched, "/spec/volumes")), 1);
    assert_int_equal(cJSON_GetArraySize(at(T.patched, "/spec/containers/0/volumeMounts")), 1);
}

TEST(test_existing_dev_shm_mount_with_trailing_slash)
{
    run(POD("{'volumes':[{'name':'cache','emptyDir':{'medium':'Memory'}}],'containers':[" C8(
        ",'volumeMounts':[{'name':'cache','mountPath':'/dev/shm/'}]") "]}"));
    assert_int_equal(cJSON_GetArraySize(at(T.patched, "/spec/volumes")), 1);
}

TEST(test_shm_size_limit_from_profile)
{
    run_with(POD("{'containers':[" C8("") "]}"),
             profiles_from("{'profiles':[{'name':'p','match':{'gpus':8},"
                           "'shm':{'sizeLimit':'64Gi'}}]}"),
             NULL);
    assert_json_at(T.patched, "/spec/volumes/0/emptyDir", "{'medium':'Memory','sizeLimit':'64Gi'}");
}

TEST(test_shm_off_in_profile)
{
    run_with(POD("{'containers':[" C8("") "]}"),
             profiles_from("{'profiles':[{'name':'p','match':{'gpus':8},'shm':false}]}"), NULL);
    assert_outcome(MUTATE_PATCHED);
    assert_absent(T.patched, "/spec/volumes");
    assert_absent(T.patched, "/spec/containers/0/volumeMounts");
}

TEST(test_two_gpu_containers_share_one_volume_sidecar_untouched)
{
    run(POD("{'containers':["
            "{'name':'a','resources':{'limits':{'nvidia.com/gpu':'4'}}}," SIDECAR ","
            "{'name':'b','resources':{'limits':{'nvidia.com/gpu':'4'}}}]}"));
    assert_string_equal(T.res.profile->name, "roce-8card");
    assert_int_equal(cJSON_GetArraySize(at(T.patched, "/spec/volumes")), 1);
    assert_json_at(T.patched, "/spec/containers/0/volumeMounts/0/mountPath", "'/dev/shm'");
    assert_json_at(T.patched, "/spec/containers/2/volumeMounts/0/mountPath", "'/dev/shm'");
    assert_json_at(T.patched, "/spec/containers/1", SIDECAR);
    assert_profile_env_8card(C(0));
    assert_profile_env_8card(C(2));
}

/* ================= schedulerName ================= */

TEST(test_scheduler_set_when_absent)
{
    run(POD("{'containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/spec/schedulerName", "'volcano'");
}

TEST(test_default_scheduler_replaced)
{
    run(POD("{'schedulerName':'default-scheduler','containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/spec/schedulerName", "'volcano'");
    assert_not_warned("scheduler");
}

TEST(test_other_scheduler_kept_with_warning)
{
    run(POD("{'schedulerName':'my-scheduler','containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/spec/schedulerName", "'my-scheduler'");
    assert_warned("scheduler");
    assert_warned("my-scheduler");
}

TEST(test_volcano_already_set_no_warning)
{
    run(POD("{'schedulerName':'volcano','containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/spec/schedulerName", "'volcano'");
    assert_int_equal(T.res.warnings.n, 0);
}

TEST(test_profile_without_scheduler_leaves_it)
{
    run_with(POD("{'containers':[" C8("") "]}"),
             profiles_from("{'profiles':[{'name':'p','match':{'gpus':8},'schedulerName':''}]}"),
             NULL);
    assert_absent(T.patched, "/spec/schedulerName");
}

/* ================= RDMA resource ================= */

TEST(test_rdma_resource_creates_resources)
{
    run(POD_META(PROFILE_8CARD, "{'containers':[{'name':'pytorch','image':'i'}]}"));
    assert_outcome(MUTATE_PATCHED);
    assert_json_at(T.patched, "/spec/containers/0/resources",
                   "{'limits':{'rdma/hca':'1'},'requests':{'rdma/hca':'1'}}");
}

TEST(test_rdma_resource_added_to_limits_creates_requests)
{
    run(POD("{'containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/spec/containers/0/resources",
                   "{'limits':{'nvidia.com/gpu':'8','rdma/hca':'1'},'requests':{'rdma/hca':'1'}}");
}

TEST(test_rdma_resource_added_to_requests_creates_limits)
{
    run(POD("{'containers':[{'name':'pytorch','resources':{'requests':{'nvidia.com/gpu':'8'}}}]}"));
    assert_json_at(T.patched, "/spec/containers/0/resources",
                   "{'requests':{'nvidia.com/gpu':'8','rdma/hca':'1'},'limits':{'rdma/hca':'1'}}");
}

TEST(test_rdma_resource_added_to_both_lists)
{
    run(POD("{'containers':[{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'8'},"
            "'requests':{'nvidia.com/gpu':'8','cpu':'4'}}}]}"));
    assert_json_at(T.patched, "/spec/containers/0/resources",
                   "{'limits':{'nvidia.com/gpu':'8','rdma/hca':'1'},"
                   "'requests':{'nvidia.com/gpu':'8','cpu':'4','rdma/hca':'1'}}");
}

TEST(test_rdma_resource_with_empty_resources_object)
{
    run(POD_META(PROFILE_8CARD, "{'containers':[{'name':'pytorch','resources':{}}]}"));
    assert_json_at(T.patched, "/spec/containers/0/resources",
                   "{'limits':{'rdma/hca':'1'},'requests':{'rdma/hca':'1'}}");
}

TEST(test_rdma_resource_skipped_when_another_container_asks_rdma)
{
    run(POD("{'containers':[" C8(
        "") ","
            "{'name':'helper','resources':{'limits':{'rdma/hca_shared_devices_all':'1'}}}]}"));
    assert_json_at(T.patched, "/spec/containers/0/resources", "{'limits':{'nvidia.com/gpu':'8'}}");
    assert_json_at(T.patched, "/spec/containers/1/resources/limits",
                   "{'rdma/hca_shared_devices_all':'1'}");
}

TEST(test_rdma_resource_skipped_when_container_asks_other_rdma_resource)
{
    run(POD("{'containers':[{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'8',"
            "'rdma/hca_shared_devices_all':'1'}}}]}"));
    assert_json_at(T.patched, "/spec/containers/0/resources/limits",
                   "{'nvidia.com/gpu':'8','rdma/hca_shared_devices_all':'1'}");
    assert_absent(T.patched, "/spec/containers/0/resources/requests");
}

TEST(test_rdma_resource_skipped_when_init_container_asks_rdma)
{
    run(POD("{'initContainers':[{'name':'init','resources':{'requests':{'rdma/hca':'1'}}}],"
            "'containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/spec/containers/0/resources", "{'limits':{'nvidia.com/gpu':'8'}}");
}

TEST(test_rdma_resource_goes_to_first_target_container)
{
    run(POD("{'containers':[" SIDECAR "," C8("") "]}"));
    assert_json_at(T.patched, "/spec/containers/0", SIDECAR);
    assert_json_at(T.patched, "/spec/containers/1/resources/limits/rdma~1hca", "'1'");
}

/* The longest resource name the profiles accept (a 253-byte domain and a
 * 63-byte name) lands whole in the patch, its '/' escaped. */
TEST(test_longest_resource_name_is_patched_whole)
{
    char name[400], doc[600], ptr[600];

    longest_resource_name(name, sizeof(name));
    snprintf(doc, sizeof(doc),
             "{'profiles':[{'name':'p','match':{'gpus':8},'resources':{'%s':'2'}}]}", name);
    run_with(POD("{'containers':[" C8("") "]}"), profiles_from(doc), NULL);
    assert_outcome(MUTATE_PATCHED);
    name[253] = '\0';
    snprintf(ptr, sizeof(ptr), "/spec/containers/0/resources/limits/%s~1%s", name, name + 254);
    assert_json_at(T.patched, ptr, "'2'");
}

/* ================= hostNetwork ================= */

static const char *const HOSTNET_PROFILES =
    "{'defaults':{'env':{'NCCL_IB_DISABLE':'0','NCCL_SOCKET_IFNAME':'eth0'},"
    "'hostNetworkEnv':{'NCCL_SOCKET_IFNAME':'bond0','NCCL_IB_GID_INDEX':'3'}},"
    "'profiles':[{'name':'p','match':{'gpus':8},'hca':['mlx5_1']}]}";

TEST(test_host_network_without_override_drops_ifname_and_warns)
{
    run(POD("{'hostNetwork':true,'containers':[" C8("") "]}"));
    assert_null(env_of(C(0), "NCCL_SOCKET_IFNAME"));
    assert_env(C(0), "NCCL_IB_TIMEOUT", "22");
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
    assert_int_equal(env_len(C(0)), 4);
    assert_warned("hostNetwork");
}

TEST(test_host_network_with_override_uses_it)
{
    run_with(POD("{'hostNetwork':true,'containers':[" C8("") "]}"), profiles_from(HOSTNET_PROFILES),
             NULL);
    assert_env(C(0), "NCCL_SOCKET_IFNAME", "bond0");
    assert_env(C(0), "NCCL_IB_GID_INDEX", "3");
    assert_env(C(0), "NCCL_IB_DISABLE", "0");
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1");
    assert_not_warned("hostNetwork");
}

TEST(test_host_network_env_ignored_without_host_network)
{
    run_with(POD("{'containers':[" C8("") "]}"), profiles_from(HOSTNET_PROFILES), NULL);
    assert_env(C(0), "NCCL_SOCKET_IFNAME", "eth0");
    assert_null(env_of(C(0), "NCCL_IB_GID_INDEX"));
}

/* ================= annotation ================= */

TEST(test_annotation_created_with_annotations)
{
    run(POD("{'containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/metadata/annotations",
                   "{'rdma-webhook.io/injected':'roce-8card',"
                   "'rdma-webhook.io/selected-by':'gpus'}");
}

TEST(test_annotation_added_to_existing_annotations)
{
    run(POD_META(",'annotations':{'team':'ml'}", "{'containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/metadata/annotations",
                   "{'team':'ml','rdma-webhook.io/injected':'roce-8card',"
                   "'rdma-webhook.io/selected-by':'gpus'}");
    assert_contains(dynbuf_ptr(&T.res.patch.out), "rdma-webhook.io~1injected");
    assert_contains(dynbuf_ptr(&T.res.patch.out), "rdma-webhook.io~1selected-by");
}

TEST(test_annotation_names_the_chosen_profile)
{
    run(POD("{'containers':[{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'4'}}}]}"));
    assert_json_at(T.patched, "/metadata/annotations/rdma-webhook.io~1injected", "'roce-4card'");
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4");
}

/* ================= a mixed cluster: selection, pinning ================= */

/* The issue's cluster: 8-GPU H100 nodes (mlx5_1..mlx5_8) and 4-GPU A100 nodes
 * (mlx5_1..mlx5_4), all in pool train; the A100 profile also takes 1- and
 * 2-GPU pods. PIN is "true" or "false". */
#define MIXED(pin)                                                                                 \
    "{'profiles':["                                                                                \
    "{'name':'h100','pin':" pin ",'match':{'gpus':8,'nodeLabels':"                                 \
    "{'nvidia.com/gpu.product':'H100','pool':'train'}},"                                           \
    "'hca':['mlx5_1','mlx5_2','mlx5_3','mlx5_4','mlx5_5','mlx5_6','mlx5_7','mlx5_8'],"             \
    "'resources':{'rdma/hca':'1'}},"                                                               \
    "{'name':'a100','pin':" pin ",'match':{'gpus':[1,2,4],'nodeLabels':"                           \
    "{'nvidia.com/gpu.product':'A100','pool':'train'}},"                                           \
    "'hca':['mlx5_1','mlx5_2','mlx5_3','mlx5_4'],'resources':{'rdma/hca':'1'}}]}"
#define GPUS(n)  "{'name':'pytorch','image':'i','resources':{'limits':{'nvidia.com/gpu':'" n "'}}}"
#define A100_HCA "=mlx5_1,mlx5_2,mlx5_3,mlx5_4"
#define PRODUCT_IN(values)                                                                         \
    "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"                \
    "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'nvidia.com/gpu.product',"                  \
    "'operator':'In','values':" values "}]}]}}}"

TEST(test_mixed_4gpu_pod_without_constraints_is_pinned)
{
    run_with(POD("{'containers':[" GPUS("4") "]}"), profiles_from(MIXED("true")), NULL);
    assert_string_equal(T.res.profile->name, "a100");
    assert_int_equal(T.res.rule, SELECT_BY_GPUS);
    assert_env(C(0), "NCCL_IB_HCA", A100_HCA);
    assert_json_at(T.patched, "/spec/nodeSelector",
                   "{'nvidia.com/gpu.product':'A100','pool':'train'}");
    assert_json_at(T.patched, "/metadata/annotations/rdma-webhook.io~1selected-by", "'gpus'");
    assert_true(T.res.pinned);
    assert_int_equal(warned("pinned to profile \"a100\" nodes: nodeSelector "
                            "nvidia.com/gpu.product=A100, pool=train"),
                     1);
    /* Sent again, the pod demands the A100 nodes itself: node labels choose. */
    assert_int_equal(T.again.rule, SELECT_BY_NODE_LABELS);
    assert_false(T.again.pinned);
}

TEST(test_mixed_4gpu_pod_without_pin_gets_no_node_selector)
{
    run_with(POD("{'containers':[" GPUS("4") "]}"), profiles_from(MIXED("false")), NULL);
    assert_string_equal(T.res.profile->name, "a100");
    assert_absent(T.patched, "/spec/nodeSelector");
    assert_false(T.res.pinned);
    assert_not_warned("pinned");
}

/* The pod allows both types itself: no profile, so no pin over its choice,
 * and one warning, which says what to do (not "pinned" beside "none
 * chosen", nor "add a profile"). */
TEST(test_mixed_in_h100_a100_is_ambiguous_and_not_pinned)
{
    const char *const counts[] = {"4", "8"};

    for (size_t i = 0; i < 2; i++) {
        char pod[1024];

        snprintf(pod, sizeof(pod),
                 POD("{" PRODUCT_IN("['H100','A100']") ",'containers':[{'name':'pytorch','image':"
                                                       "'i','resources':{'limits':{'nvidia.com/"
                                                       "gpu':'%s'}}}]}"),
                 counts[i]);
        run_with(pod, profiles_from(MIXED("true")), NULL);
        assert_int_equal(T.res.warnings.n, 1);
        assert_warned("set rdma-webhook.io/profile: ambiguous node constraints fit h100, a100; "
                      "none chosen");
        assert_int_equal(T.res.reason, MUTATE_R_NO_PROFILE);
        assert_false(T.res.pinned);
        assert_absent(T.patched, "/spec/nodeSelector");
        teardown(NULL);
    }
}

TEST(test_mixed_shared_pool_label_pins_only_the_missing_key)
{
    run_with(POD("{'nodeSelector':{'pool':'train'},'containers':[" GPUS("4") "]}"),
             profiles_from(MIXED("true")), NULL);
    /* The GPU count chose: the node-label tie before it is no warning. */
    assert_not_warned("ambiguous");
    assert_string_equal(T.res.profile->name, "a100");
    assert_json_at(T.patched, "/spec/nodeSelector",
                   "{'pool':'train','nvidia.com/gpu.product':'A100'}");
    assert_contains(dynbuf_ptr(&T.res.patch.out), "/spec/nodeSelector/nvidia.com~1gpu.product");
    assert_null(strstr(dynbuf_ptr(&T.res.patch.out), "/spec/nodeSelector/pool"));
    assert_warned("nodeSelector nvidia.com/gpu.product=A100");
}

TEST(test_mixed_1_and_2_gpu_pods_take_the_gpus_list)
{
    const char *const counts[] = {POD("{'containers':[" GPUS("1") "]}"),
                                  POD("{'containers':[" GPUS("2") "]}")};

    for (size_t i = 0; i < 2; i++) {
        run_with(counts[i], profiles_from(MIXED("false")), NULL);
        assert_string_equal(T.res.profile->name, "a100");
        assert_int_equal(T.res.rule, SELECT_BY_GPUS);
        teardown(NULL);
    }
}

TEST(test_mixed_pod_demanding_a100_never_gets_h100_by_gpu_count)
{
    run_with(POD("{'nodeSelector':{'nvidia.com/gpu.product':'A100'},'containers':[" GPUS("8") "]}"),
             profiles_from(MIXED("true")), NULL);
    assert_string_equal(T.res.profile->name, "a100");
    assert_int_equal(T.res.rule, SELECT_BY_NODE_LABELS);
    assert_json_at(T.patched, "/metadata/annotations/rdma-webhook.io~1selected-by",
                   "'node-labels'");
    assert_json_at(T.patched, "/spec/nodeSelector", "{'nvidia.com/gpu.product':'A100'}");
    assert_not_warned("ambiguous");
}

TEST(test_mixed_pod_excluding_both_gets_no_profile)
{
    run_with(POD("{'nodeSelector':{'nvidia.com/gpu.product':'L40'},'containers':[" GPUS("8") "]}"),
             profiles_from(MIXED("true")), NULL);
    assert_outcome(MUTATE_PATCHED); /* the warnings annotation only */
    assert_int_equal(T.res.reason, MUTATE_R_NO_PROFILE);
    assert_warned("add a profile for 8 GPUs");
}

TEST(test_mixed_pin_keeps_the_pod_s_other_selector_keys)
{
    run_with(POD("{'nodeSelector':{'zone':'a'},'containers':[" GPUS("8") "]}"),
             profiles_from(MIXED("true")), NULL);
    assert_string_equal(T.res.profile->name, "h100");
    assert_json_at(T.patched, "/spec/nodeSelector",
                   "{'zone':'a','nvidia.com/gpu.product':'H100','pool':'train'}");
}

TEST(test_mixed_bound_pod_is_not_pinned)
{
    run_with(POD("{'nodeName':'gpu-node-3','containers':[" GPUS("4") "]}"),
             profiles_from(MIXED("true")), NULL);
    assert_string_equal(T.res.profile->name, "a100");
    assert_absent(T.patched, "/spec/nodeSelector");
    assert_false(T.res.pinned);
}

/* A pod whose kubernetes.io/hostname names nodes (issue 22 item 1), with
 * the admin's profiles: H100 the default, pinned, for 8 GPUs; A100 by its
 * label. The hook knows an A100 and an H100 node by name. */
#define ADMIN_PIN                                                                                  \
    "{'profiles':["                                                                                \
    "{'name':'h100','default':true,'pin':true,'match':{'gpus':8,'nodeLabels':"                     \
    "{'nvidia.com/gpu.product':'H100'}},"                                                          \
    "'hca':['mlx5_1','mlx5_2','mlx5_3','mlx5_4','mlx5_5','mlx5_6','mlx5_7','mlx5_8']},"            \
    "{'name':'a100','match':{'nodeLabels':{'nvidia.com/gpu.product':'A100'}},"                     \
    "'hca':['mlx5_1','mlx5_2','mlx5_3','mlx5_4']}]}"
#define HOSTNAME_IN(values)                                                                        \
    "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"                \
    "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'kubernetes.io/hostname',"                  \
    "'operator':'In','values':" values "}]}]}}}"

static int host_node_labels(void *ctx __attribute__((unused)), const char *name, cJSON **labels)
{
    if (strcmp(name, "a100-node-1") == 0)
        *labels = J("{'nvidia.com/gpu.product':'A100','kubernetes.io/hostname':'a100-node-1'}");
    else if (strcmp(name, "h100-node-1") == 0)
        *labels = J("{'nvidia.com/gpu.product':'H100','kubernetes.io/hostname':'h100-node-1'}");
    else
        return -1;
    return 0;
}

TEST(test_hostname_of_an_a100_node_gets_a100_not_the_h100_pin)
{
    struct mutate_hooks h = {.select = {.node_labels = host_node_labels}};

    run_with(POD("{'nodeSelector':{'kubernetes.io/hostname':'a100-node-1'},'containers':[" GPUS(
                 "8") "]}"),
             profiles_from(ADMIN_PIN), &h);
    assert_string_equal(T.res.profile->name, "a100");
    assert_int_equal(T.res.rule, SELECT_BY_NODE);
    assert_env(C(0), "NCCL_IB_HCA", A100_HCA);
    assert_json_at(T.patched, "/spec/nodeSelector", "{'kubernetes.io/hostname':'a100-node-1'}");
    assert_false(T.res.pinned);
    assert_int_equal(T.res.warnings.n, 0);
}

TEST(test_hostnames_of_two_types_are_not_pinned)
{
    struct mutate_hooks h = {.select = {.node_labels = host_node_labels}};

    run_with(POD("{" HOSTNAME_IN("['h100-node-1','a100-node-1']") ",'containers':[" GPUS("8") "]}"),
             profiles_from(ADMIN_PIN), &h);
    assert_int_equal(T.res.reason, MUTATE_R_NO_PROFILE);
    assert_false(T.res.pinned);
    assert_absent(T.patched, "/spec/nodeSelector");
    assert_int_equal(T.res.warnings.n, 1);
    assert_warned("ambiguous node constraints fit h100, a100; none chosen");
}

/* The Node cannot be told: the profile from the pod, but never the pin,
 * which the node might contradict. */
TEST(test_hostname_unknown_is_not_pinned)
{
    struct mutate_hooks h = {.select = {.node_labels = host_node_labels}};

    run_with(POD("{'nodeSelector':{'kubernetes.io/hostname':'gone'},'containers':[" GPUS("8") "]}"),
             profiles_from(ADMIN_PIN), &h);
    assert_string_equal(T.res.profile->name, "h100");
    assert_false(T.res.pinned);
    assert_json_at(T.patched, "/spec/nodeSelector", "{'kubernetes.io/hostname':'gone'}");
    assert_warned("check the webhook can read nodes: hostname \"gone\" unread, profile chosen "
                  "from the pod, not pinned");
    assert_not_warned("pinned to");
    teardown(NULL);
    run_with(POD("{" HOSTNAME_IN("['a100-node-1']") ",'containers':[" GPUS("8") "]}"),
             profiles_from(ADMIN_PIN), NULL);
    assert_string_equal(T.res.profile->name, "h100");
    assert_false(T.res.pinned);
    assert_absent(T.patched, "/spec/nodeSelector");
    assert_warned("nodes of the pod's hostnames unknown offline: profile chosen from the pod, "
                  "not pinned");
}

TEST(test_pinned_default_profile)
{
    run_with(POD("{'containers':[" GPUS("3") "]}"),
             profiles_from("{'profiles':[{'name':'big','match':{'gpus':8,'nodeLabels':"
                           "{'t':'big'}}},"
                           "{'name':'std','default':true,'pin':true,'match':{'nodeLabels':"
                           "{'t':'std'}}}]}"),
             NULL);
    assert_string_equal(T.res.profile->name, "std");
    assert_int_equal(T.res.rule, SELECT_BY_DEFAULT);
    assert_json_at(T.patched, "/spec/nodeSelector", "{'t':'std'}");
    assert_json_at(T.patched, "/metadata/annotations/rdma-webhook.io~1selected-by", "'default'");
    assert_warned("pinned to profile \"std\" nodes: nodeSelector t=std");
}

TEST(test_ambiguous_gpu_count_is_said_and_falls_to_the_default)
{
    run_with(POD("{'containers':[" GPUS("8") "]}"),
             profiles_from("{'profiles':[{'name':'x','match':{'gpus':8,'nodeLabels':{'t':'x'}}},"
                           "{'name':'y','match':{'gpus':[4,8],'nodeLabels':{'t':'y'}}},"
                           "{'name':'any','default':true}]}"),
             NULL);
    assert_warned("ambiguous GPU count 8 fits x, y");
    assert_string_equal(T.res.profile->name, "any");
    assert_int_equal(T.res.rule, SELECT_BY_DEFAULT);
}

TEST(test_selected_by_each_rule)
{
    static const struct {
        const char *pod, *rule;
    } cases[] = {
        {POD_META(",'annotations':{'rdma-webhook.io/profile':'roce-4card'}",
                  "{'containers':[" C8("") "]}"),
         "annotation"},
        {POD("{'nodeSelector':{'nvidia.com/gpu.count':'4'},'containers':[" C8("") "]}"),
         "node-labels"},
        {POD("{'containers':[" C8("") "]}"), "gpus"},
    };
    char want[32];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run(cases[i].pod);
        snprintf(want, sizeof(want), "'%s'", cases[i].rule);
        assert_json_at(T.patched, "/metadata/annotations/rdma-webhook.io~1selected-by", want);
        assert_string_equal(select_rule_name(T.res.rule), cases[i].rule);
        teardown(NULL);
    }
}

/* ================= NCCL_IB_DISABLE: the user chose TCP ================= */

#define IB_OFF(value) ",'env':[{'name':'NCCL_IB_DISABLE','value':'" value "'}]"

static void assert_ib_left_out(const cJSON *c)
{
    assert_null(env_of(c, "NCCL_IB_HCA"));
    assert_null(env_of(c, "NCCL_IB_TIMEOUT"));
    assert_null(env_of(c, "NCCL_IB_QPS_PER_CONNECTION"));
    assert_env(c, "NCCL_SOCKET_IFNAME", "eth0");
    assert_absent(c, "/securityContext");
    assert_absent(c, "/resources/limits/rdma~1hca");
    assert_absent(c, "/resources/requests/rdma~1hca");
}

TEST(test_ib_disable_1_is_respected)
{
    run(POD("{'containers':[" C8(IB_OFF("1")) "]}"));
    assert_outcome(MUTATE_PATCHED);
    assert_ib_left_out(C(0));
    assert_env(C(0), "NCCL_IB_DISABLE", "1");
    assert_json_at(T.patched, "/spec/volumes/0/emptyDir", "{'medium':'Memory'}");
    assert_json_at(C(0), "/volumeMounts/0/mountPath", "'/dev/shm'");
    assert_json_at(T.patched, "/spec/schedulerName", "'volcano'");
    assert_int_equal(warned("NCCL_IB_DISABLE=1"), 1);
    assert_int_equal(T.res.warnings.n, 1); /* one warning, no "to get the profile's" */
    assert_int_equal(T.res.warnings.kind[0], MUTATE_W_IB_DISABLED);
}

/* With InfiniBand off NCCL reads no other NCCL_IB_* value: no warnings
 * about them, and none about overriding the profile's. */
TEST(test_ib_disable_silences_other_ib_values)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_DISABLE','value':'1'},"
                                 "{'name':'NCCL_IB_TIMEOUT','value':'40'},"
                                 "{'name':'NCCL_IB_HCA','value':'mlx5_1,mlx5_10'}]") "]}"));
    assert_int_equal(T.res.warnings.n, 1);
    assert_warned("NCCL_IB_DISABLE=1");
    assert_env(C(0), "NCCL_IB_TIMEOUT", "40");
}

TEST(test_ib_disable_values_nccl_reads_as_non_zero)
{
    static const char *const on[] = {
        POD("{'containers':[" C8(IB_OFF("0x1")) "]}"), POD("{'containers':[" C8(IB_OFF(" 1")) "]}"),
        POD("{'containers':[" C8(IB_OFF("2")) "]}"), POD("{'containers':[" C8(IB_OFF("01")) "]}")};

    for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
        run(on[i]);
        assert_ib_left_out(C(0));
        teardown(NULL);
    }
}

TEST(test_ib_disable_true_is_0_to_nccl)
{
    /* strtoll("true") is 0: InfiniBand stays on, and the value is flagged. */
    run(POD("{'containers':[" C8(IB_OFF("true")) "]}"));
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
    assert_json_at(C(0), "/securityContext", "{'capabilities':{'add':['IPC_LOCK']}}");
    assert_warned("NCCL_IB_DISABLE=true: write a whole number");
    assert_not_warned("for RDMA; it has TCP");
}

TEST(test_ib_disable_from_value_from_is_unknown)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_DISABLE','valueFrom':{'configMapKeyRef':"
                                 "{'name':'c','key':'k'}}}]") "]}"));
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
    assert_not_warned("for RDMA; it has TCP");
}

TEST(test_ib_disable_last_env_entry_wins)
{
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_DISABLE','value':'1'},"
                                 "{'name':'NCCL_IB_DISABLE','value':'0'}]") "]}"));
    assert_json_at(C(0), "/securityContext", "{'capabilities':{'add':['IPC_LOCK']}}");
    teardown(NULL);
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_DISABLE','value':'0'},"
                                 "{'name':'NCCL_IB_DISABLE','value':'1'}]") "]}"));
    assert_absent(C(0), "/securityContext");
}

TEST(test_ib_disable_per_container_device_goes_to_the_other)
{
    /* Two containers of 4 GPUs each: 8 in all, roce-8card. */
    run(POD("{'containers':[{'name':'a','resources':{'limits':{'nvidia.com/gpu':'4'}}" IB_OFF(
        "1") "},{'name':'b','resources':{'limits':{'nvidia.com/gpu':'4'}}}]}"));
    assert_ib_left_out(C(0));
    assert_json_at(C(1), "/resources/limits/rdma~1hca", "'1'");
    assert_json_at(C(1), "/securityContext", "{'capabilities':{'add':['IPC_LOCK']}}");
    assert_env(C(1), "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
    assert_int_equal(warned("NCCL_IB_DISABLE"), 1);
}

/* A ConfigMap whose one key has a value. */
struct fake_cm_value {
    const char *key, *value;
    int calls;
};

static enum mutate_envfrom fake_value(void *ctx, const char *ns, const char *name, const char *key,
                                      char *value, size_t len)
{
    struct fake_cm_value *f = ctx;

    (void)ns;
    (void)name;
    f->calls++;
    if (strcmp(key, f->key) != 0)
        return MUTATE_ENVFROM_LACKS;
    snprintf(value, len, "%s", f->value);
    return MUTATE_ENVFROM_HAS;
}

static enum mutate_envfrom fake_value_has_key(void *ctx, const char *ns, const char *name,
                                              const char *key)
{
    struct fake_cm_value *f = ctx;

    (void)ns;
    (void)name;
    return strcmp(key, f->key) == 0 ? MUTATE_ENVFROM_HAS : MUTATE_ENVFROM_LACKS;
}

TEST(test_ib_disable_from_a_readable_configmap)
{
    struct fake_cm_value f = {.key = "IB_DISABLE", .value = "1"};
    struct mutate_hooks h = {
        .configmap_has_key = fake_value_has_key, .configmap_value = fake_value, .ctx = &f};

    run_with(POD("{'containers':[" C8(",'envFrom':[{'prefix':'NCCL_','configMapRef':"
                                      "{'name':'tcp'}}]") "]}"),
             shipped, &h);
    assert_ib_left_out(C(0));
    assert_null(env_of(C(0), "NCCL_IB_DISABLE")); /* the ConfigMap's value stays in charge */
    assert_true(f.calls > 0);
    assert_int_equal(warned("NCCL_IB_DISABLE=1"), 1);
}

TEST(test_ib_disable_configmap_then_unreadable_secret_is_unknown)
{
    struct fake_cm_value f = {.key = "NCCL_IB_DISABLE", .value = "1"};
    struct mutate_hooks h = {
        .configmap_has_key = fake_value_has_key, .configmap_value = fake_value, .ctx = &f};

    /* The Secret, later in envFrom, might set it again: not known to be off. */
    run_with(POD("{'containers':[" C8(",'envFrom':[{'configMapRef':{'name':'tcp'}},"
                                      "{'secretRef':{'name':'s'}}]") "]}"),
             shipped, &h);
    assert_json_at(C(0), "/securityContext", "{'capabilities':{'add':['IPC_LOCK']}}");
    assert_not_warned("for RDMA; it has TCP");
}

TEST(test_ib_disable_configmap_0_leaves_ib_on)
{
    struct fake_cm_value f = {.key = "NCCL_IB_DISABLE", .value = "0"};
    struct mutate_hooks h = {
        .configmap_has_key = fake_value_has_key, .configmap_value = fake_value, .ctx = &f};

    run_with(POD("{'containers':[" C8(",'envFrom':[{'configMapRef':{'name':'c'}}]") "]}"), shipped,
             &h);
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
}

/* ================= nothing missing ================= */

TEST(test_second_call_on_patched_pod_is_empty)
{
    char *text;

    run(POD_META(
        ",'annotations':{'a':'b'}",
        "{'schedulerName':'default-scheduler','volumes':[{'name':'d','emptyDir':{}}],"
        "'containers':[" C8(",'env':[{'name':'X','value':'1'}],"
                            "'securityContext':{'capabilities':{'add':['NET_ADMIN']}}") "]}"));
    assert_outcome(MUTATE_PATCHED);
    text = cJSON_PrintUnformatted(T.patched);
    cJSON_Delete(T.doc);
    T.doc = cJSON_Parse(text);
    free(text);
    if (T.have_again)
        mutate_result_free(&T.again);
    mutate_once(T.doc, "", 0, shipped, NULL, &T.again);
    T.have_again = 1;
    assert_int_equal(T.again.outcome, MUTATE_SKIPPED);
    assert_int_equal(T.again.patch.n_ops, 0);
}

TEST(test_pod_that_has_everything_gets_no_patch)
{
    run(POD(
        "{'schedulerName':'volcano','volumes':[{'name':'shm','emptyDir':{'medium':'Memory'}}],"
        "'containers':[{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'8','rdma/"
        "hca':'1'}},"
        "'securityContext':{'capabilities':{'add':['IPC_LOCK']}},"
        "'volumeMounts':[{'name':'shm','mountPath':'/dev/shm'}],"
        "'env':[{'name':'NCCL_IB_DISABLE','value':'0'},{'name':'NCCL_SOCKET_IFNAME','value':'eth0'}"
        ","
        "{'name':'NCCL_IB_TIMEOUT','value':'22'},{'name':'NCCL_IB_QPS_PER_CONNECTION','value':'8'},"
        "{'name':'NCCL_IB_HCA','value':'=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8'}]"
        "}]}"));
    assert_outcome(MUTATE_SKIPPED);
    assert_int_equal(T.res.patch.n_ops, 0);
    assert_int_equal(T.res.warnings.n, 0);
}

/* ================= targets ================= */

TEST(test_not_a_target_pod_untouched)
{
    run("{'metadata':{'name':'web'},'spec':{'containers':[" C8("") "]}}");
    assert_outcome(MUTATE_SKIPPED);
    assert_int_equal(T.res.warnings.n, 0);
}

TEST(test_opted_out_pod_untouched)
{
    run(POD_META(",'annotations':{'rdma-webhook.io/inject':'false'}",
                 "{'containers':[" C8("") "]}"));
    assert_outcome(MUTATE_SKIPPED);
    assert_int_equal(T.res.warnings.n, 0);
}

TEST(test_inject_true_annotation_targets_plain_pod)
{
    run("{'metadata':{'name':'p','annotations':{'rdma-webhook.io/inject':'true'}},"
        "'spec':{'containers':[" C8("") "]}}");
    assert_outcome(MUTATE_PATCHED);
}

/* One vocabulary: a value of rdma-webhook.io/inject other than true/false
 * does nothing; a target is warned about it, naming the value and what to
 * write, and the label decides where the annotation says nothing. */
TEST(test_inject_value_that_does_nothing_warns)
{
    run(POD_META(",'annotations':{'rdma-webhook.io/inject':'yes'}", "{'containers':[" C8("") "]}"));
    assert_outcome(MUTATE_PATCHED);
    assert_int_equal(T.res.reason, MUTATE_R_MUTATED);
    assert_int_equal(warned_kind(MUTATE_W_INJECT), 1);
    assert_warned("set pod annotation rdma-webhook.io/inject=true|false (\"yes\" does nothing)");
}

TEST(test_inject_label_decides_over_an_ignored_annotation)
{
    /* "True" is not "true": a PyTorchJob's pod is a target anyway, warned */
    run(POD_META(",'annotations':{'rdma-webhook.io/inject':'True'}",
                 "{'containers':[" C8("") "]}"));
    assert_outcome(MUTATE_PATCHED);
    assert_warned("(\"True\" does nothing)");
    teardown(NULL);
    /* and where the label says "false", that opts it out, quietly */
    run("{'metadata':{'name':'p','annotations':{'rdma-webhook.io/inject':'True'},"
        "'labels':{'rdma-webhook.io/inject':'false','training.kubeflow.org/operator-name':"
        "'pytorchjob-controller'}},'spec':{'containers':[" C8("") "]}}");
    assert_outcome(MUTATE_SKIPPED);
    assert_int_equal(T.res.reason, MUTATE_R_OPTED_OUT);
    assert_int_equal(T.res.warnings.n, 0);
    teardown(NULL);
    /* a plain pod the label brought: the label's true decides, the
     * annotation's word is warned about */
    run("{'metadata':{'name':'p','annotations':{'rdma-webhook.io/inject':'enabled'},"
        "'labels':{'rdma-webhook.io/inject':'true'}},'spec':{'containers':[" C8("") "]}}");
    assert_int_equal(T.res.reason, MUTATE_R_MUTATED);
    assert_warned("set pod annotation rdma-webhook.io/inject=true|false (\"enabled\" does");
    teardown(NULL);
    run("{'metadata':{'name':'p','labels':{'rdma-webhook.io/inject':'yes'}},"
        "'spec':{'containers':[" C8("") "]}}");
    assert_outcome(MUTATE_SKIPPED);
    assert_int_equal(T.res.reason, MUTATE_R_NOT_TARGET);
    assert_int_equal(T.res.warnings.n, 0); /* not a target: never written to */
}

/* The namespace's label, read with the one lookup the pod makes anyway:
 * true, false and enabled mean something; anything else is warned about. */
TEST(test_namespace_inject_value_that_does_nothing_warns)
{
    static const struct {
        const char *labels;
        int warns;
    } cases[] = {
        {"{}", 0},
        {"{'rdma-webhook.io/inject':'true'}", 0},
        {"{'rdma-webhook.io/inject':'enabled'}", 0},
        {"{'rdma-webhook.io/inject':'yes'}", 1},
        {"{'rdma-webhook.io/inject':'disabled'}", 1},
        {"{'rdma-webhook.io/inject':'True'}", 1},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(&ns_hook, 0, sizeof(ns_hook));
        ns_hook.labels = cases[i].labels;
        run_with(POD("{'containers':[" C8("") "]}"), shipped, &ns_hooks);
        assert_int_equal(T.res.reason, MUTATE_R_MUTATED);
        if (warned_kind(MUTATE_W_INJECT) != (size_t)cases[i].warns)
            fail_msg("labels %s: %zu inject warnings, want %d", cases[i].labels,
                     warned_kind(MUTATE_W_INJECT), cases[i].warns);
        if (cases[i].warns)
            assert_warned("label namespace \"ns\" rdma-webhook.io/inject=true|false (\"");
        teardown(NULL);
        /* the labels the pod reads anyway: no lookup of its own */
        assert_int_equal(
            ns_asks_of_one_call(cases[i].labels, POD("{'containers':[" C8("") "]}"), shipped), 1);
    }
}

TEST(test_controlling_pytorchjob_owner_targets_pod)
{
    run("{'metadata':{'name':'p','ownerReferences':[{'apiVersion':'kubeflow.org/v1',"
        "'kind':'PyTorchJob','name':'j','uid':'u','controller':true}]},"
        "'spec':{'containers':[" C8("") "]}}");
    assert_outcome(MUTATE_PATCHED);
}

TEST(test_non_controlling_owner_is_not_a_target)
{
    run("{'metadata':{'name':'p','ownerReferences':[{'apiVersion':'kubeflow.org/v1',"
        "'kind':'PyTorchJob','name':'j','uid':'u'}]},"
        "'spec':{'containers':[" C8("") "]}}");
    assert_outcome(MUTATE_SKIPPED);
}

TEST(test_target_without_target_container_warns)
{
    run(POD("{'containers':[{'name':'main','image':'i'}]}"));
    assert_outcome(MUTATE_PATCHED); /* the warnings annotation only */
    assert_int_equal(T.res.reason, MUTATE_R_NO_CONTAINER);
    assert_warned("name the training container");
}

TEST(test_gpu_pod_without_profile_warns)
{
    run(POD("{'containers':[{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'2'}}}]}"));
    assert_outcome(MUTATE_PATCHED); /* the warnings annotation only */
    assert_int_equal(T.res.reason, MUTATE_R_NO_PROFILE);
    assert_warned("add a profile for");
}

TEST(test_unknown_profile_annotation_warns)
{
    run(POD_META(",'annotations':{'rdma-webhook.io/profile':'roce-16card'}",
                 "{'containers':[" C8("") "]}"));
    assert_outcome(MUTATE_PATCHED); /* the warnings annotation only */
    assert_int_equal(T.res.reason, MUTATE_R_UNKNOWN_PROFILE);
    assert_warned("is unknown");
    assert_int_equal(warned(WARN_PREFIX "set rdma-webhook.io/profile to one of roce-8card, "
                                        "roce-4card (\"roce-16card\" is unknown)"),
                     1);
}

/* The annotation's ESC and newline reach neither the user's warning nor the
 * log's and the Event's text: folded into '?', as is a C1 CSI. */
TEST(test_warnings_fold_control_characters)
{
    run(POD_META(",'annotations':{'rdma-webhook.io/profile':'x\\u001b[2J\\nfake\\u009b1m'}",
                 "{'containers':[" C8("") "]}"));
    assert_int_equal(T.res.warnings.n, 1);
    assert_contains(T.res.warnings.text[0], "(\"x?[2J?fake?1m\" is unknown)");
    assert_contains(T.res.warnings.full[0], "(\"x?[2J?fake?1m\" is unknown)");
}

/* The valid names fill what is left of 120 bytes; ", ..." says there are
 * more, and the log's text has them. */
TEST(test_unknown_profile_lists_as_many_as_fit)
{
    run_with(POD_META(",'annotations':{'rdma-webhook.io/profile':'nope'}",
                      "{'containers':[" C8("") "]}"),
             profiles_from("{'profiles':[{'name':'alpha-0001'},{'name':'bravo-0002'},"
                           "{'name':'charlie-03'},{'name':'delta-0004'},{'name':'echo-00005'},"
                           "{'name':'foxtrot-06'}]}"),
             NULL);
    assert_int_equal(T.res.warnings.n, 1);
    assert_string_equal(T.res.warnings.text[0],
                        WARN_PREFIX "set rdma-webhook.io/profile to one of alpha-0001, bravo-0002, "
                                    "charlie-03, ... (\"nope\" is unknown)");
    assert_true(strlen(T.res.warnings.text[0]) < MUTATE_WARNING_MAX);
    assert_contains(T.res.warnings.full[0], "delta-0004, echo-00005, foxtrot-06 (");
}

TEST(test_init_container_with_gpu_untouched_by_default)
{
    run(POD(
        "{'initContainers':[{'name':'preflight','resources':{'limits':{'nvidia.com/gpu':'8'}}}],"
        "'containers':[" C8("") "]}"));
    assert_json_at(T.patched, "/spec/initContainers/0",
                   "{'name':'preflight','resources':{'limits':{'nvidia.com/gpu':'8'}}}");
    assert_profile_env_8card(C(0));
}

TEST(test_init_containers_mutated_when_profile_says_so)
{
    run_with(POD("{'initContainers':[{'name':'pre','resources':{'limits':{'nvidia.com/gpu':'8'}}},"
                 "{'name':'plain'}],'containers':[" C8("") "]}"),
             profiles_from("{'defaults':{'env':{'NCCL_IB_DISABLE':'0'}},"
                           "'profiles':[{'name':'p','match':{'gpus':8},'initContainers':true}]}"),
             NULL);
    assert_json_at(T.patched, "/spec/initContainers/0/env",
                   "[{'name':'NCCL_IB_DISABLE','value':'0'}]");
    assert_json_at(T.patched, "/spec/initContainers/0/volumeMounts/0/mountPath", "'/dev/shm'");
    assert_json_at(T.patched, "/spec/initContainers/1", "{'name':'plain'}");
}

TEST(test_node_name_without_hook_no_warning)
{
    struct mutate_hooks h = {0};

    h.select.node_labels = NULL;
    run_with(POD("{'nodeName':'node-7','containers':[" C8("") "]}"), shipped, &h);
    assert_not_warned("node-7"); /* no hook: nothing failed */
}

static int failing_node_labels(void *ctx __attribute__((unused)),
                               const char *name __attribute__((unused)),
                               cJSON **labels __attribute__((unused)))
{
    return -1;
}

TEST(test_node_lookup_failure_with_hook_warns)
{
    struct mutate_hooks h = {.select = {.node_labels = failing_node_labels}};

    run_with(POD("{'nodeName':'node-7','containers':[" C8("") "]}"), shipped, &h);
    assert_warned("node-7");
    assert_string_equal(T.res.profile->name, "roce-8card"); /* still chosen by GPUs */
}

/* ================= implicit target with a base ================= */

#define PYTORCHJOB(template)                                                                       \
    "{'apiVersion':'kubeflow.org/"                                                                 \
    "v1','kind':'PyTorchJob','metadata':{'name':'j','namespace':'ns'},"                            \
    "'spec':{'pytorchReplicaSpecs':{'Worker':{'replicas':2,'restartPolicy':'OnFailure',"           \
    "'template':" template "}}}}"
#define WORKER_BASE "/spec/pytorchReplicaSpecs/Worker/template"

TEST(test_implicit_target_template_without_metadata)
{
    run_at(PYTORCHJOB("{'spec':{'containers':[" C8("") "]}}"), WORKER_BASE, 1, shipped, NULL);
    assert_outcome(MUTATE_PATCHED);
    assert_json_at(T.patched, WORKER_BASE "/metadata",
                   "{'annotations':{'rdma-webhook.io/injected':'roce-8card',"
                   "'rdma-webhook.io/selected-by':'gpus'}}");
    assert_json_at(T.patched, WORKER_BASE "/spec/schedulerName", "'volcano'");
    assert_json_at(T.patched, WORKER_BASE "/spec/containers/0/securityContext",
                   "{'capabilities':{'add':['IPC_LOCK']}}");
    assert_json_at(T.patched, "/spec/pytorchReplicaSpecs/Worker/replicas", "2");
    assert_absent(T.patched, "/metadata/annotations");
    assert_absent(T.patched, "/spec/containers");
}

TEST(test_implicit_target_template_with_metadata)
{
    run_at(PYTORCHJOB("{'metadata':{'labels':{'app':'x'}},'spec':{'containers':[" C8("") "]}}"),
           WORKER_BASE, 1, shipped, NULL);
    assert_json_at(T.patched, WORKER_BASE "/metadata",
                   "{'labels':{'app':'x'},'annotations':{'rdma-webhook.io/injected':'roce-8card',"
                   "'rdma-webhook.io/selected-by':'gpus'}}");
}

TEST(test_template_without_implicit_target_is_not_a_target)
{
    run_at(PYTORCHJOB("{'spec':{'containers':[" C8("") "]}}"), WORKER_BASE, 0, shipped, NULL);
    assert_outcome(MUTATE_SKIPPED);
}

/* ================= wrong JSON types ================= */

static void assert_error_with_one_warning(const char *field)
{
    assert_outcome(MUTATE_ERROR);
    assert_int_equal(T.res.patch.n_ops, 0);
    assert_int_equal(T.res.warnings.n, 1);
    assert_contains(T.res.error, field);
}

TEST(test_containers_not_an_array_is_error)
{
    run(POD("{'containers':" C8("") "}"));
    assert_error_with_one_warning("containers");
}

TEST(test_env_an_object_is_error)
{
    run(POD("{'containers':[" C8(",'env':{'NCCL_IB_TIMEOUT':'20'}") "]}"));
    assert_error_with_one_warning("env");
}

TEST(test_security_context_a_string_is_error)
{
    run(POD("{'containers':[" C8(",'securityContext':'root'") "]}"));
    assert_error_with_one_warning("securityContext");
}

TEST(test_volumes_an_object_is_error)
{
    run(POD("{'volumes':{'name':'x'},'containers':[" C8("") "]}"));
    assert_error_with_one_warning("volumes");
}

TEST(test_annotations_a_string_is_error)
{
    run(POD_META(",'annotations':'x'", "{'containers':[" C8("") "]}"));
    assert_error_with_one_warning("annotations");
}

TEST(test_error_discards_earlier_warnings)
{
    /* The octal warning comes before the bad field; only the error remains. */
    run(POD("{'containers':[" C8(",'env':[{'name':'NCCL_IB_TIMEOUT','value':'022'}],"
                                 "'volumeMounts':{}") "]}"));
    assert_error_with_one_warning("volumeMounts");
}

TEST(test_spec_missing_is_error)
{
    run("{'metadata':{'name':'p','labels':{'training.kubeflow.org/"
        "operator-name':'pytorchjob-controller'}}}");
    assert_outcome(MUTATE_ERROR);
    assert_int_equal(T.res.warnings.n, 1);
}

/* ================= warning text ================= */

TEST(test_warnings_bounded_with_63_char_names_and_long_values)
{
    run(POD(
        "{'hostNetwork':true,'schedulerName':'"
        "\xe8\xb0\x83\xe5\xba\xa6\xe5\x99\xa8\xe8\xb0\x83\xe5\xba\xa6\xe5\x99\xa8\xe8\xb0\x83"
        "\xe5\xba\xa6\xe5\x99\xa8\xe8\xb0\x83\xe5\xba\xa6\xe5\x99\xa8\xe8\xb0\x83\xe5\xba\xa6"
        "\xe5\x99\xa8\xe8\xb0\x83\xe5\xba\xa6\xe5\x99\xa8',"
        "'securityContext':{'runAsUser':1000},'containers':[" C8N(
            NAME63, ",'env':[{'name':'NCCL_SOCKET_IFNAME','value':'"
                    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9'},"
                    "{'name':'NCCL_IB_TIMEOUT','value':'"
                    "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5"
                    "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5'}],"
                    "'envFrom':[{'secretRef':{'name':'" NAME63 NAME63 "'}}]") "]}"));
    /* override x2, not-an-integer, envFrom, non-root, scheduler, hostNetwork */
    assert_true(T.res.warnings.n >= 6);
}

TEST(test_warning_cut_inside_multibyte_value_stays_utf8)
{
    /* Shift the 3-byte characters across the 120-byte cut, one byte at a time. */
    static const char *const names[] = {NAME63,     NAME63 + 1, NAME63 + 2, NAME63 + 3,
                                        NAME63 + 4, NAME63 + 5, NAME63 + 6};
    char json[2048];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(json, sizeof(json),
                 POD("{'containers':[{'name':'%s','resources':{'limits':{'nvidia.com/gpu':'8'}},"
                     "'env':[{'name':'NCCL_SOCKET_IFNAME','value':'%s'}]}]}"),
                 names[i],
                 "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5");
        run(json); /* the harness checks every warning is valid UTF-8 and short */
        assert_warned(WARN_PREFIX "drop NCCL_SOCKET_IFNAME in container");
        teardown(NULL);
    }
}

TEST(test_warning_with_multibyte_container_name_stays_utf8)
{
    run(POD(
        "{'containers':[" C8N("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                              "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                              "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                              "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
                              ",'securityContext':{'runAsUser':7},'env':[{'name':"
                              "'NCCL_IB_TIMEOUT','value':'40'}]") "]}"));
    assert_true(T.res.warnings.n >= 2);
}

/* The contract's key phrases must survive the 120-byte limit: a 63-character
 * container name (a valid DNS label) must not push them out of the warning. */

TEST(test_long_name_keeps_phrase_outside)
{
    run(POD(
        "{'containers':[" C8N(NAME63, ",'env':[{'name':'NCCL_IB_RETRY_CNT','value':'9'}]") "]}"));
    assert_warned(": use 0..7");
}

TEST(test_long_name_keeps_phrase_octal)
{
    run(POD(
        "{'containers':[" C8N(NAME63, ",'env':[{'name':'NCCL_IB_TIMEOUT','value':'022'}]") "]}"));
    assert_warned("drop the leading 0");
}

TEST(test_long_name_keeps_phrase_overrides)
{
    run(POD(
        "{'containers':[" C8N(NAME63, ",'env':[{'name':'NCCL_IB_TIMEOUT','value':'20'}]") "]}"));
    assert_warned("to get the profile's");
}

TEST(test_long_name_keeps_phrase_prefix)
{
    run(POD("{'containers':[" C8N(
        NAME63, ",'env':[{'name':'NCCL_IB_HCA','value':'mlx5_1,mlx5_10'}]") "]}"));
    assert_warned("also takes");
}

TEST(test_long_name_keeps_phrase_envfrom_secret)
{
    run(POD("{'containers':[" C8N(NAME63, ",'envFrom':[{'secretRef':{'name':'s'}}]") "]}"));
    assert_warned("of Secret");
}

TEST(test_long_name_keeps_phrase_non_root)
{
    run(POD("{'containers':[" C8N(NAME63, ",'securityContext':{'runAsNonRoot':true}") "]}"));
    assert_warned("non-root");
}

/* ================= run-time detection ================= */

static const struct mutate_options detect_opts = {.detect_image = "reg.example/rdma-webhook:1.0"};

/* One default profile with detect as given (true, false or an object). */
#define DETECT_PROFILES(detect, extra)                                                             \
    "{'defaults':{'env':{'NCCL_IB_DISABLE':'0','NCCL_SOCKET_IFNAME':'eth0',"                       \
    "'NCCL_IB_TIMEOUT':'22','NCCL_IB_GID_INDEX':'3'}},"                                            \
    "'profiles':[{'name':'roce','default':true,'detect':" detect ","                               \
    "'hca':['mlx5_1','mlx5_2'],'resources':{'rdma/hca':'1'}" extra "}]}"

#define DETECT_INIT                                                                                \
    "{'name':'rdma-webhook-detect','image':'reg.example/rdma-webhook:1.0',"                        \
    "'command':['/usr/local/bin/rdma-webhook'],"                                                   \
    "'args':['nccl-detect','--out','/run/rdma-webhook/nccl.conf','--hca','=mlx5_1,mlx5_2',"        \
    "'--socket-ifname','eth0'],"                                                                   \
    "'env':[{'name':'NODE_NAME','valueFrom':{'fieldRef':{'fieldPath':'spec.nodeName'}}}],"         \
    "'resources':{'requests':{'cpu':'100m','memory':'32Mi'},'limits':{'cpu':'100m','memory':'"     \
    "32Mi'}},"                                                                                     \
    "'securityContext':{'runAsNonRoot':true,'runAsUser':65532,'runAsGroup':65532,"                 \
    "'allowPrivilegeEscalation':false,'readOnlyRootFilesystem':true,"                              \
    "'capabilities':{'drop':['ALL']},'seccompProfile':{'type':'RuntimeDefault'}},"                 \
    "'volumeMounts':[{'name':'rdma-webhook-nccl','mountPath':'/run/rdma-webhook'}]}"
#define DETECT_VOLUME                                                                              \
    "{'name':'rdma-webhook-nccl','emptyDir':{'medium':'Memory','sizeLimit':'1Mi'}}"
#define DIR_MOUNT "{'name':'rdma-webhook-nccl','mountPath':'/run/rdma-webhook','readOnly':true}"
#define ROOT_MOUNT                                                                                 \
    "{'name':'rdma-webhook-nccl','mountPath':'/root/.nccl.conf','subPath':'nccl.conf',"            \
    "'readOnly':true}"

static void run_detect(const char *profiles, const char *pod, const struct mutate_options *opts)
{
    T.opts = opts;
    run_with(pod, profiles_from(profiles), NULL);
}

/* The mount of container c at mount_path, or NULL. */
static const cJSON *mount_at(const cJSON *c, const char *mount_path)
{
    const cJSON *m;

    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(c, "volumeMounts"))
    {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "mountPath"));

        if (p && strcmp(p, mount_path) == 0)
            return m;
    }
    return NULL;
}

static void assert_mount(const cJSON *c, const char *mount_path, const char *want)
{
    const cJSON *m = mount_at(c, mount_path);

    cJSON_Delete(T.want);
    T.want = J(want);
    if (!m)
        fail_msg("no mount at %s, want %s", mount_path, want);
    if (!cJSON_Compare(m, T.want, 1)) {
        free(T.text);
        T.text = cJSON_PrintUnformatted(m);
        fail_msg("mount at %s is %s, want %s", mount_path, T.text, want);
    }
}

/* c reads the detected file: NCCL_CONF_FILE, the directory, no HCA or GID
 * index of the profile; with root, ~/.nccl.conf too. */
static void assert_detected(const cJSON *c, int root)
{
    assert_env(c, "NCCL_CONF_FILE", "/run/rdma-webhook/nccl.conf");
    assert_null(env_of(c, "NCCL_IB_HCA"));
    assert_null(env_of(c, "NCCL_IB_GID_INDEX"));
    assert_env(c, "NCCL_SOCKET_IFNAME", "eth0");
    assert_env(c, "NCCL_IB_TIMEOUT", "22");
    assert_mount(c, "/run/rdma-webhook", DIR_MOUNT);
    if (root)
        assert_mount(c, "/root/.nccl.conf", ROOT_MOUNT);
    else
        assert_null(mount_at(c, "/root/.nccl.conf"));
}

/* c keeps the profile's static values and reads no file. */
static void assert_static(const cJSON *c)
{
    assert_env(c, "NCCL_IB_HCA", "=mlx5_1,mlx5_2");
    assert_env(c, "NCCL_IB_GID_INDEX", "3");
    assert_null(env_of(c, "NCCL_CONF_FILE"));
    assert_null(mount_at(c, "/run/rdma-webhook"));
    assert_null(mount_at(c, "/root/.nccl.conf"));
}

static void assert_no_detection(void)
{
    const cJSON *v;

    assert_absent(T.patched, "/spec/initContainers");
    cJSON_ArrayForEach(v, at(T.patched, "/spec/volumes"))
    {
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "name"));

        if (n && strcmp(n, "rdma-webhook-nccl") == 0 &&
            cJSON_GetObjectItemCaseSensitive(v, "emptyDir"))
            fail_msg("the detection volume was added");
    }
}

TEST(test_detect_adds_init_container_volume_mounts_env)
{
    run_detect(DETECT_PROFILES("true", ""), POD("{'containers':[" C8("") "]}"), &detect_opts);
    assert_outcome(MUTATE_PATCHED);
    assert_json_at(T.patched, "/spec/initContainers", "[" DETECT_INIT "]");
    assert_json_at(T.patched, "/spec/volumes/1", DETECT_VOLUME);
    assert_json_at(T.patched, "/spec/volumes/0/name", "'rdma-webhook-shm'");
    assert_detected(C(0), 1);
    /* The rest of the mutation is as without detect. */
    assert_json_at(C(0), "/securityContext/capabilities/add", "['IPC_LOCK']");
    assert_json_at(C(0), "/resources/limits/rdma~1hca", "'1'");
    assert_mount(C(0), "/dev/shm", "{'name':'rdma-webhook-shm','mountPath':'/dev/shm'}");
    assert_int_equal(T.res.warnings.n, 0);
}

/* DRA: the init container references the claims of the containers that
 * read the file, each once, and no others (the sidecar's stays its own);
 * detect.requireHca adds --require-hca. */
TEST(test_detect_claims_and_require_hca)
{
    run_detect(DETECT_PROFILES("{'requireHca':true}", ""),
               POD("{'resourceClaims':[{'name':'nic','resourceClaimName':'a'},"
                   "{'name':'gpu','resourceClaimName':'b'},{'name':'nic2','resourceClaimName':'c'},"
                   "{'name':'logs','resourceClaimName':'d'}],'containers':["
                   "{'name':'pytorch','image':'i','resources':{'limits':{'nvidia.com/gpu':'8'},"
                   "'claims':[{'name':'nic'},{'name':'nic'},{'name':'gpu','request':'r1'}]}},"
                   "{'name':'second','image':'i','resources':{'limits':{'nvidia.com/gpu':'8'},"
                   "'claims':[{'name':'gpu','request':'r1'},{'name':'nic2'}]}},"
                   "{'name':'log-shipper','image':'fluent-bit','resources':{'claims':[{'name':"
                   "'logs'}]}}]}"),
               &detect_opts);
    assert_outcome(MUTATE_PATCHED);
    assert_json_at(T.patched, "/spec/initContainers/0/resources/claims",
                   "[{'name':'nic'},{'name':'gpu','request':'r1'},{'name':'nic2'}]");
    assert_json_at(T.patched, "/spec/initContainers/0/args/7", "'--require-hca'");
    assert_json_at(T.patched, "/spec/initContainers/0/env",
                   "[{'name':'NODE_NAME','valueFrom':{'fieldRef':{'fieldPath':'spec.nodeName'}}}]");
    assert_int_equal(T.res.warnings.n, 0);
}

/* The claims the init container references are bounded: 40 claims of
 * the reader give it the first 32, and a warning says so. */
TEST(test_detect_claims_bounded)
{
    static char pod[8192];
    size_t o = 0;

    o += (size_t)snprintf(pod + o, sizeof(pod) - o, "%s",
                          "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'w-0','namespace':"
                          "'ns','labels':{'training.kubeflow.org/operator-name':"
                          "'pytorchjob-controller'}},'spec':{'resourceClaims':[");
    for (int i = 0; i < 40; i++)
        o += (size_t)snprintf(pod + o, sizeof(pod) - o,
                              "%s{'name':'c%d','resourceClaimName':'x%d'}", i ? "," : "", i, i);
    o += (size_t)snprintf(pod + o, sizeof(pod) - o, "%s",
                          "],'containers':[{'name':'pytorch','image':'i','resources':{'limits':"
                          "{'nvidia.com/gpu':'8'},'claims':[");
    for (int i = 0; i < 40; i++)
        o += (size_t)snprintf(pod + o, sizeof(pod) - o, "%s{'name':'c%d'}", i ? "," : "", i);
    snprintf(pod + o, sizeof(pod) - o, "%s", "]}}]}}");
    run_detect(DETECT_PROFILES("true", ""), pod, &detect_opts);
    assert_outcome(MUTATE_PATCHED);
    assert_int_equal(cJSON_GetArraySize(at(T.patched, "/spec/initContainers/0/resources/claims")),
                     32);
    assert_json_at(T.patched, "/spec/initContainers/0/resources/claims/31", "{'name':'c31'}");
    assert_warned("references the first 32 resource claims only");
}

/* Reinvocation: the pod as the first call left it gets nothing (the harness
 * checks that for every run); here also a pod whose init container came
 * from an older image keeps it. */
TEST(test_detect_present_init_container_is_kept)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'initContainers':[{'name':'rdma-webhook-detect','image':'old:0.9',"
                   "'args':['nccl-detect','--out','/run/rdma-webhook/nccl.conf']}],"
                   "'containers':[" C8("") "]}"),
               &detect_opts);
    assert_int_equal(cJSON_GetArraySize(at(T.patched, "/spec/initContainers")), 1);
    assert_json_at(T.patched, "/spec/initContainers/0/image", "'old:0.9'");
    assert_json_at(T.patched, "/spec/volumes/1", DETECT_VOLUME);
    assert_detected(C(0), 1);
    assert_int_equal(T.res.warnings.n, 0);
}

TEST(test_detect_off_keeps_static_env)
{
    run_detect(DETECT_PROFILES("false", ""), POD("{'containers':[" C8("") "]}"), &detect_opts);
    assert_no_detection();
    assert_static(C(0));
    assert_int_equal(T.res.warnings.n, 0);
}

TEST(test_detect_object_enabled_false_is_off)
{
    run_detect(DETECT_PROFILES("{'enabled':false}", ""), POD("{'containers':[" C8("") "]}"),
               &detect_opts);
    assert_no_detection();
    assert_static(C(0));
}

/* The shipped profiles have no detect: the image alone adds nothing. */
TEST(test_detect_shipped_profiles_unchanged_by_the_image)
{
    T.opts = &detect_opts;
    run(POD("{'containers':[" C8("") "]}"));
    assert_no_detection();
    assert_profile_env_8card(C(0));
    assert_int_equal(env_len(C(0)), 5);
}

/* Without the image: no init container, the static env, and one warning
 * however many containers there are. */
TEST(test_detect_without_image_warns_once)
{
    static const struct mutate_options no_image = {0};

    run_detect(DETECT_PROFILES("true", ""),
               POD("{'containers':[" C8N("a", "") "," C8N("b", "") "]}"), &no_image);
    assert_no_detection();
    assert_static(C(0));
    assert_static(C(1));
    assert_int_equal(warned("--detect-image"), 1);
    assert_int_equal(T.res.warnings.n, 1);
    assert_int_equal(T.res.warnings.kind[0], MUTATE_W_DETECT);
}

TEST(test_detect_without_options_warns)
{
    run_detect(DETECT_PROFILES("true", ""), POD("{'containers':[" C8("") "]}"), NULL);
    assert_no_detection();
    assert_static(C(0));
    assert_warned("give the webhook --detect-image");
}

TEST(test_detect_skips_ib_disabled_container)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'containers':[" C8N("tcp", IB_OFF("1")) "," C8N("rdma", "") "]}"),
               &detect_opts);
    assert_null(env_of(C(0), "NCCL_CONF_FILE"));
    assert_null(env_of(C(0), "NCCL_IB_HCA"));
    assert_null(mount_at(C(0), "/run/rdma-webhook"));
    assert_null(mount_at(C(0), "/root/.nccl.conf"));
    assert_detected(C(1), 1);
    assert_json_at(T.patched, "/spec/initContainers/0/name", "'rdma-webhook-detect'");
}

/* Every target with InfiniBand off: nothing to detect for, no warning
 * about it, even without the image. */
TEST(test_detect_all_ib_disabled_adds_nothing)
{
    run_detect(DETECT_PROFILES("true", ""), POD("{'containers':[" C8(IB_OFF("1")) "]}"),
               &detect_opts);
    assert_no_detection();
    assert_int_equal(warned("NCCL_IB_DISABLE=1"), 1);
    assert_int_equal(T.res.warnings.n, 1);
    teardown(NULL);
    run_detect(DETECT_PROFILES("true", ""), POD("{'containers':[" C8(IB_OFF("1")) "]}"), NULL);
    assert_not_warned("detect");
}

TEST(test_detect_non_root_container_no_root_conf_mount)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'containers':[" C8N("uid", ",'securityContext':{'runAsUser':1000}") "," C8N(
                   "root", ",'securityContext':{'runAsUser':0}") "]}"),
               &detect_opts);
    assert_detected(C(0), 0);
    assert_detected(C(1), 1);
}

TEST(test_detect_pod_run_as_non_root_no_root_conf_mount)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'securityContext':{'runAsNonRoot':true},'containers':[" C8("") "]}"),
               &detect_opts);
    assert_detected(C(0), 0);
}

/* A mount the container has at ~/.nccl.conf, or over /root, stays alone. */
TEST(test_detect_root_conf_mount_of_the_user_kept)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'volumes':[{'name':'home','emptyDir':{}}],'containers':[" C8N(
                   "a", ",'volumeMounts':[{'name':'home','mountPath':'/root/.nccl.conf',"
                        "'subPath':'mine'}]") "," C8N("b", ",'volumeMounts':[{'name':'home',"
                                                           "'mountPath':'/root'}]") "]}"),
               &detect_opts);
    assert_mount(C(0), "/root/.nccl.conf",
                 "{'name':'home','mountPath':'/root/.nccl.conf','subPath':'mine'}");
    assert_mount(C(0), "/run/rdma-webhook", DIR_MOUNT);
    assert_null(mount_at(C(1), "/root/.nccl.conf"));
    assert_mount(C(1), "/run/rdma-webhook", DIR_MOUNT);
    assert_json_at(T.patched, "/spec/volumes/2", DETECT_VOLUME);
}

TEST(test_detect_user_conf_file_wins)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'containers':[" C8N("own", ",'env':[{'name':'NCCL_CONF_FILE','value':'/etc/"
                                                "my.conf'}]") "]}"),
               &detect_opts);
    assert_env(C(0), "NCCL_CONF_FILE", "/etc/my.conf");
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2");
    assert_null(mount_at(C(0), "/run/rdma-webhook"));
    assert_no_detection();
    assert_int_equal(warned("drop container \"own\"'s own NCCL_CONF_FILE"), 1);
    assert_int_equal(T.res.warnings.kind[0], MUTATE_W_DETECT);
}

TEST(test_detect_user_conf_file_value_from_wins)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'containers':[" C8N(
                   "own", ",'env':[{'name':'NCCL_CONF_FILE','valueFrom':{"
                          "'configMapKeyRef':{'name':'c','key':'k'}}}]") "," C8N("plain", "") "]}"),
               &detect_opts);
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2");
    assert_int_equal(env_count(C(0), "NCCL_CONF_FILE"), 1);
    assert_null(mount_at(C(0), "/run/rdma-webhook"));
    assert_detected(C(1), 1);
    assert_warned("'s own NCCL_CONF_FILE");
}

TEST(test_detect_user_conf_file_from_envfrom_configmap_wins)
{
    struct fake_cm f = {.has_key = "NCCL_CONF_FILE"};
    struct mutate_hooks h = {.configmap_has_key = fake_has_key, .ctx = &f};

    T.opts = &detect_opts;
    run_with(POD("{'containers':[" C8(",'envFrom':[{'configMapRef':{'name':'nccl'}}]") "]}"),
             profiles_from(DETECT_PROFILES("true", "")), &h);
    assert_null(env_of(C(0), "NCCL_CONF_FILE"));
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2");
    assert_no_detection();
    assert_warned("'s own NCCL_CONF_FILE");
}

TEST(test_detect_name_clash_init_container)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'initContainers':[{'name':'rdma-webhook-detect','image':'mine'}],"
                   "'containers':[" C8("") "]}"),
               &detect_opts);
    assert_int_equal(cJSON_GetArraySize(at(T.patched, "/spec/initContainers")), 1);
    assert_static(C(0));
    assert_int_equal(warned("rename the pod's init container \"rdma-webhook-detect\""), 1);
}

TEST(test_detect_name_clash_container)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'containers':[" C8("") ",{'name':'rdma-webhook-detect','image':'x'}]}"),
               &detect_opts);
    assert_no_detection();
    assert_static(C(0));
    assert_warned("rename the pod's container \"rdma-webhook-detect\"");
}

TEST(test_detect_name_clash_volume)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'volumes':[{'name':'rdma-webhook-nccl','configMap':{'name':'x'}}],"
                   "'containers':[" C8("") "]}"),
               &detect_opts);
    assert_absent(T.patched, "/spec/initContainers");
    assert_json_at(T.patched, "/spec/volumes/0",
                   "{'name':'rdma-webhook-nccl','configMap':{'name':'x'}}");
    assert_static(C(0));
    assert_warned("rename the pod's volume \"rdma-webhook-nccl\"");
}

TEST(test_detect_mount_path_taken_skips_that_container)
{
    run_detect(
        DETECT_PROFILES("true", ""),
        POD("{'volumes':[{'name':'run','emptyDir':{}}],'containers':[" C8N(
            "taken",
            ",'volumeMounts':[{'name':'run','mountPath':'/run/rdma-webhook/'}]") "," C8N("free",
                                                                                         "") "]}"),
        &detect_opts);
    assert_env(C(0), "NCCL_IB_HCA", "=mlx5_1,mlx5_2");
    assert_null(env_of(C(0), "NCCL_CONF_FILE"));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(C(0), "volumeMounts")), 2);
    assert_detected(C(1), 1);
    assert_warned("move container \"taken\"'s mount off /run/rdma-webhook");
}

/* The user's init containers run first, and are left as they were; one
 * that asks for devices keeps the static env (it runs before detection). */
TEST(test_detect_after_the_user_s_init_containers)
{
    run_detect(DETECT_PROFILES("true", ",'initContainers':true"),
               POD("{'initContainers':[{'name':'wait','image':'busybox'},"
                   "{'name':'warmup','image':'i','resources':{'limits':{'nvidia.com/gpu':'8'}}}],"
                   "'containers':[" C8("") "]}"),
               &detect_opts);
    assert_json_at(T.patched, "/spec/initContainers/0", "{'name':'wait','image':'busybox'}");
    assert_json_at(T.patched, "/spec/initContainers/2/name", "'rdma-webhook-detect'");
    assert_int_equal(cJSON_GetArraySize(at(T.patched, "/spec/initContainers")), 3);
    assert_static(at(T.patched, "/spec/initContainers/1"));
    assert_detected(C(0), 1);
}

/* Volumes and mounts that exist get appended to; with /dev/shm off the
 * detection volume makes the list. */
TEST(test_detect_appends_to_existing_lists)
{
    run_detect(DETECT_PROFILES("true", ""),
               POD("{'volumes':[{'name':'data','emptyDir':{}}],'containers':[" C8(
                   ",'volumeMounts':[{'name':'data','mountPath':'/data'}]") "]}"),
               &detect_opts);
    assert_json_at(T.patched, "/spec/volumes/0/name", "'data'");
    assert_json_at(T.patched, "/spec/volumes/2", DETECT_VOLUME);
    assert_json_at(C(0), "/volumeMounts/0/mountPath", "'/data'");
    assert_detected(C(0), 1);
    teardown(NULL);
    run_detect(DETECT_PROFILES("true", ",'shm':false"), POD("{'containers':[" C8("") "]}"),
               &detect_opts);
    assert_json_at(T.patched, "/spec/volumes", "[" DETECT_VOLUME "]");
    assert_json_at(C(0), "/volumeMounts", "[" DIR_MOUNT "," ROOT_MOUNT "]");
}

TEST(test_detect_options_resources)
{
    run_detect(DETECT_PROFILES("{'cpu':'50m','memory':'64Mi'}", ""),
               POD("{'containers':[" C8("") "]}"), &detect_opts);
    assert_json_at(
        T.patched, "/spec/initContainers/0/resources",
        "{'requests':{'cpu':'50m','memory':'64Mi'},'limits':{'cpu':'50m','memory':'64Mi'}}");
}

/* hostNetwork without hostNetworkEnv: no NCCL_SOCKET_IFNAME to pass, and no
 * warning about it, since the detection finds the node's interface; with
 * hostNetworkEnv, its value is passed. */
TEST(test_detect_host_network)
{
    run_detect(DETECT_PROFILES("true", ""), POD("{'hostNetwork':true,'containers':[" C8("") "]}"),
               &detect_opts);
    assert_json_at(
        T.patched, "/spec/initContainers/0/args",
        "['nccl-detect','--out','/run/rdma-webhook/nccl.conf','--hca','=mlx5_1,mlx5_2']");
    assert_null(env_of(C(0), "NCCL_SOCKET_IFNAME"));
    assert_not_warned("hostNetwork");
    teardown(NULL);
    run_detect(DETECT_PROFILES("true", ",'hostNetworkEnv':{'NCCL_SOCKET_IFNAME':'bond0'}"),
               POD("{'hostNetwork':true,'containers':[" C8("") "]}"), &detect_opts);
    assert_json_at(T.patched, "/spec/initContainers/0/args/6", "'bond0'");
    assert_env(C(0), "NCCL_SOCKET_IFNAME", "bond0");
}

/* Without detection the hostNetwork warning stays. */
TEST(test_detect_host_network_without_image_still_warns)
{
    run_detect(DETECT_PROFILES("true", ""), POD("{'hostNetwork':true,'containers':[" C8("") "]}"),
               NULL);
    assert_warned("hostNetwork pod");
    assert_warned("--detect-image");
}

/* The kubelet expands $(VAR) in args: a '$' goes as "$$". */
TEST(test_detect_dollar_in_socket_ifname_is_escaped)
{
    run_detect("{'profiles':[{'name':'p','default':true,'detect':true,"
               "'env':{'NCCL_SOCKET_IFNAME':'$(IF)'}}]}",
               POD("{'containers':[" C8("") "]}"), &detect_opts);
    assert_json_at(
        T.patched, "/spec/initContainers/0/args",
        "['nccl-detect','--out','/run/rdma-webhook/nccl.conf','--socket-ifname','$$(IF)']");
}

/* NCCL_IB_HCA from env, a pattern, goes to --hca as written. */
TEST(test_detect_env_hca_pattern)
{
    run_detect("{'profiles':[{'name':'p','default':true,'detect':true,"
               "'env':{'NCCL_IB_HCA':'^=mlx5_0'}}]}",
               POD("{'containers':[" C8("") "]}"), &detect_opts);
    assert_json_at(T.patched, "/spec/initContainers/0/args/4", "'^=mlx5_0'");
    assert_null(env_of(C(0), "NCCL_IB_HCA"));
}

/* A PyTorchJob's template: the paths are under its base. */
TEST(test_detect_in_a_pytorchjob_template)
{
    T.opts = &detect_opts;
    run_at(PYTORCHJOB("{'spec':{'containers':[" C8("") "]}}"), WORKER_BASE, 1,
           profiles_from(DETECT_PROFILES("true", "")), NULL);
    assert_json_at(T.patched, WORKER_BASE "/spec/initContainers", "[" DETECT_INIT "]");
    assert_detected(at(T.patched, WORKER_BASE "/spec/containers/0"), 1);
}

TEST(test_detect_warnings_bounded_with_long_names)
{
    run_detect(
        DETECT_PROFILES("true", ""),
        POD("{'volumes':[{'name':'run','emptyDir':{}}],'containers':[" C8N(
            NAME63,
            ",'env':[{'name':'NCCL_CONF_FILE','value':'x'}]") "," C8N(NAME63 "b",
                                                                      ",'volumeMounts':[{'name':'"
                                                                      "run','mountPath':'/run/"
                                                                      "rdma-webhook'}]") "]}"),
        &detect_opts);
    assert_warned("'s own NCCL_CONF_FILE");
    assert_warned("'s mount off /run/rdma-webhook");
}

/* ================= the warnings annotation ================= */

static const char *patched_warnings(void)
{
    const cJSON *ann =
        cJSON_GetObjectItem(cJSON_GetObjectItem(T.patched, "metadata"), "annotations");

    return cJSON_GetStringValue(cJSON_GetObjectItem(ann, MUTATE_ANNOTATION_WARNINGS));
}

/* The first call pins and says so; the second (the apiserver's
 * reinvocation) has nothing to pin and no new warning: the annotation keeps
 * the first call's texts and the second call adds nothing (run_at checks
 * it is empty). */
TEST(test_warnings_annotation_survives_a_quieter_second_call)
{
    run_with(POD("{'containers':[" GPUS("4") "]}"), profiles_from(MIXED("true")), NULL);
    assert_int_equal(T.again.warnings.n < T.res.warnings.n, 1);
    assert_contains(patched_warnings(), "pinned to profile");
    assert_int_equal(T.again.patch.n_ops, 0);
}

/* What the pod had is kept, first; ours is added once. */
TEST(test_warnings_annotation_adds_to_what_the_pod_has)
{
    run(POD_META(",'annotations':{'rdma-webhook.io/warnings':'[\\\"older\\\"]'}",
                 "{'containers':[" C8(",'env':[{'name':'NCCL_IB_TIMEOUT','value':'20'}]") "]}"));
    assert_string_equal(patched_warnings(),
                        "[\"older\",\"drop NCCL_IB_TIMEOUT in container \\\"pytorch\\\" to get the "
                        "profile's 22\"]");
}

/* A value that is not ours to read is replaced. */
TEST(test_warnings_annotation_not_json_is_replaced)
{
    run(POD_META(",'annotations':{'rdma-webhook.io/warnings':'oops'}",
                 "{'containers':[" C8(",'env':[{'name':'NCCL_IB_TIMEOUT','value':'20'}]") "]}"));
    assert_string_equal(patched_warnings(),
                        "[\"drop NCCL_IB_TIMEOUT in container \\\"pytorch\\\" to get the profile's "
                        "22\"]");
}

/* The issue's pin: the 120-byte form for kubectl cuts the label's value
 * ("NVIDIA-H100-80..."); the annotation keeps it whole, as the log does. */
#define H100_PIN                                                                                   \
    "{'profiles':[{'name':'h100','default':true,'pin':true,'match':{'gpus':8,'nodeLabels':"        \
    "{'nvidia.com/gpu.product':'NVIDIA-H100-80GB-HBM3','topology.kubernetes.io/zone':"             \
    "'eu-west-1a'}},'hca':['mlx5_1','mlx5_2']}]}"
#define H100_PIN_LABELS                                                                            \
    "nodeSelector nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3, "                                  \
    "topology.kubernetes.io/zone=eu-west-1a"
#define H100_PIN_TEXT      "pinned to profile \"h100\" nodes: " H100_PIN_LABELS
#define H100_PIN_TEXT_JSON "pinned to profile \\\"h100\\\" nodes: " H100_PIN_LABELS

TEST(test_warnings_annotation_has_the_whole_text_not_the_short_one)
{
    const char *shown = NULL;

    run_with(POD("{'containers':[" GPUS("8") "]}"), profiles_from(H100_PIN), NULL);
    for (size_t i = 0; i < T.res.warnings.n; i++)
        if (strstr(T.res.warnings.text[i], "pinned to profile"))
            shown = T.res.warnings.text[i];
    assert_non_null(shown);
    /* The response's form is cut, with its marker... */
    assert_true(strlen(shown) < MUTATE_WARNING_MAX);
    assert_contains(shown, "...");
    assert_null(strstr(shown, "HBM3"));
    /* ...the pod's is whole. */
    assert_true(strlen(H100_PIN_TEXT) + strlen(MUTATE_WARNING_LEAD) > MUTATE_WARNING_MAX);
    assert_string_equal(patched_warnings(), "[\"" H100_PIN_TEXT_JSON "\"]");
}

/* A pod whose rdma-webhook.io/warnings holds n texts of len quotes each
 * (each escaped to two bytes in the value), and 8 GPUs. */
static char *pod_with_old_warnings(int n, size_t len)
{
    cJSON *list = cJSON_CreateArray(), *pod = J(POD("{'containers':[" GPUS("8") "]}"));
    cJSON *meta = cJSON_GetObjectItem(pod, "metadata"), *ann;
    char text[MUTATE_WARNING_FULL_MAX], *old, *out;

    for (int i = 0; i < n; i++) {
        snprintf(text, sizeof(text), "%02d", i);
        memset(text + 2, '"', len - 2);
        text[len] = '\0';
        cJSON_AddItemToArray(list, cJSON_CreateString(text));
    }
    old = cJSON_PrintUnformatted(list);
    ann = cJSON_GetObjectItem(meta, "annotations");
    if (!ann)
        ann = cJSON_AddObjectToObject(meta, "annotations");
    cJSON_AddStringToObject(ann, MUTATE_ANNOTATION_WARNINGS, old);
    out = cJSON_PrintUnformatted(pod);
    free(old);
    cJSON_Delete(list);
    cJSON_Delete(pod);
    return out;
}

/* Whole texts, and still a bounded value: a new text is added whole while
 * it fits under MUTATE_ANNOTATION_WARNINGS_MAX, and left out whole (the
 * value as it was) when it does not; never cut. */
TEST(test_warnings_annotation_is_bounded_and_never_cuts_a_text)
{
    char *pod = pod_with_old_warnings(20, 500);
    const char *value;

    run_with(pod, profiles_from(H100_PIN), NULL);
    free(pod);
    value = patched_warnings();
    assert_true(strlen(value) < MUTATE_ANNOTATION_WARNINGS_MAX);
    assert_contains(value, H100_PIN_TEXT_JSON "\"]");
}

TEST(test_warnings_annotation_full_leaves_a_new_text_out_whole)
{
    char *pod = pod_with_old_warnings(24, 510);
    cJSON *doc = J(pod);

    /* Not run_with: its check that the annotation has every warning is
     * what does not hold here. */
    mutate_once(doc, "", 0, profiles_from(H100_PIN), NULL, &T.res);
    T.have_res = 1;
    assert_int_equal(T.res.outcome, MUTATE_PATCHED);
    assert_true(T.res.warnings.n > 0);
    /* The pod's value stays as it was: the pin's text is neither added nor
     * cut in. */
    assert_null(strstr(dynbuf_ptr(&T.res.patch.out), MUTATE_ANNOTATION_WARNINGS));
    assert_null(strstr(dynbuf_ptr(&T.res.patch.out), "pinned"));
    cJSON_Delete(doc);
    free(pod);
}

/* No warning, no annotation. */
TEST(test_no_warnings_no_annotation)
{
    run(POD("{'containers':[" C8("") "]}"));
    assert_int_equal(T.res.warnings.n, 0);
    assert_null(patched_warnings());
}

/* ================= every warning: its text and its length ================= */

/* 63 bytes each: the longest names Kubernetes allows for a container, a
 * profile (profiles.c) or a label value. */
#define P63                    "p234567890234567890234567890234567890234567890234567890234-long"
#define Q63                    "q234567890234567890234567890234567890234567890234567890234-long"
#define S63                    "s234567890234567890234567890234567890234567890234567890234-long"
#define LONG_PROFILES(p1extra) LONG_PROFILES_Q(p1extra, "4")
#define LONG_PROFILES_Q(p1extra, qgpus)                                                            \
    "{'defaults':{'schedulerName':'" S63 "','env':{'NCCL_IB_DISABLE':'0',"                         \
    "'NCCL_SOCKET_IFNAME':'eth0','NCCL_IB_TIMEOUT':'22','NCCL_IB_QPS_PER_CONNECTION':'8'}},"       \
    "'profiles':[{'name':'" P63 "','match':{'gpus':8,'nodeLabels':{'nvidia.com/gpu.product':"      \
    "'NVIDIA-H100-80GB-HBM3-SXM5-with-a-long-name'}},'hca':['mlx5_1','mlx5_2']" p1extra "},"       \
    "{'name':'" Q63 "','match':{'gpus':" qgpus                                                     \
    ",'nodeLabels':{'nvidia.com/gpu.product':'A100'}}}]}"

struct warning_case {
    const char *what;
    const char *profiles; /* NULL: the shipped ones */
    const char *pod;
    const struct mutate_options *opts;
    int failing_nodes; /* a node lookup hook that fails */
    enum mutate_warning_kind kind;
    const char *text;   /* the whole short text */
    const char *in_log; /* what the full text has that the short one cut */
};

#define LC(extra) C8N(NAME63, extra)

static const struct warning_case warning_cases[] = {
    {"no profile", NULL,
     POD("{'containers':[{'name':'" NAME63 "','resources':{'limits':"
         "{'nvidia.com/gpu':'3'}}}]}"),
     NULL, 0, MUTATE_W_NO_PROFILE,
     WARN_PREFIX "add a profile for 3 GPUs on these nodes, or set rdma-webhook.io/profile; no NCCL "
                 "settings added",
     "3 GPUs"},
    {"unknown profile", LONG_PROFILES(""),
     POD_META(",'annotations':{'rdma-webhook.io/profile':'" NAME63 "'}",
              "{'containers':[" LC("") "]}"),
     NULL, 0, MUTATE_W_UNKNOWN_PROFILE,
     WARN_PREFIX "set rdma-webhook.io/profile to one of ... (\"a2345678901234567...\" is unknown)",
     P63 ", " Q63},
    {"override", NULL,
     POD("{'containers':[" LC(",'env':[{'name':'NCCL_IB_TIMEOUT','value':'20'}]") "]}"), NULL, 0,
     MUTATE_W_OVERRIDE,
     WARN_PREFIX
     "drop NCCL_IB_TIMEOUT in container \"a2345678901234567...\" to get the profile's 22",
     NAME63},
    {"override valueFrom", NULL,
     POD("{'containers':[" LC(",'env':[{'name':'NCCL_SOCKET_IFNAME','valueFrom':{'fieldRef':"
                              "{'fieldPath':'metadata.name'}}}]") "]}"),
     NULL, 0, MUTATE_W_OVERRIDE,
     WARN_PREFIX "drop NCCL_SOCKET_IFNAME (valueFrom) in container \"a2345678901234567...\" to get "
                 "the profile's value",
     NAME63},
    {"nccl value, octal", NULL,
     POD("{'containers':[" LC(",'env':[{'name':'NCCL_IB_PCI_RELAXED_ORDERING','value':"
                              "'000000000000000000000000001'}]") "]}"),
     NULL, 0, MUTATE_W_NCCL_VALUE,
     WARN_PREFIX "NCCL_IB_PCI_RELAXED_ORDERING=0000000000000000...: drop the leading 0 (container "
                 "\"a2345678901234567...\")",
     NAME63},
    {"nccl value, word", NULL,
     POD("{'containers':[" LC(
         ",'env':[{'name':'NCCL_DEBUG','value':'VERBOSE-VERBOSE-VERBOSE'}]") "]}"),
     NULL, 0, MUTATE_W_NCCL_VALUE,
     WARN_PREFIX "NCCL_DEBUG=VERBOSE-VERBOSE-...: use VERSION|WARN|INFO|TRACE|ABORT (container "
                 "\"a2345678901234567...\")",
     NAME63},
    {"nccl value, hca prefix", NULL,
     POD("{'containers':[" LC(",'env':[{'name':'NCCL_IB_HCA','value':"
                              "'^mlx5_bond_long_1,mlx5_bond_long_12'}]") "]}"),
     NULL, 0, MUTATE_W_NCCL_VALUE,
     WARN_PREFIX "NCCL_IB_HCA: write ^= first (mlx5_bond... also takes mlx5_bond...) (container "
                 "\"a2345678901234567...\")",
     NAME63},
    {"non-root", NULL, POD("{'securityContext':{'runAsUser':1000},'containers':[" LC("") "]}"),
     NULL, 0, MUTATE_W_NON_ROOT,
     WARN_PREFIX "raise memlock on nodes for container \"a2345678901234567...\": no IPC_LOCK, "
                 "which does nothing as non-root",
     NAME63},
    {"envFrom secret", NULL,
     POD("{'containers':[" LC(",'envFrom':[{'secretRef':{'name':'" Q63 "'}}]") "]}"), NULL, 0,
     MUTATE_W_ENVFROM,
     WARN_PREFIX "move NCCL_* of Secret \"q2345678902345678...\" to container "
                 "\"a2345678901234567...\"'s env (profile wins)",
     Q63},
    {"scheduler", LONG_PROFILES(""),
     POD("{'schedulerName':'" NAME63 "','containers':[" LC("") "]}"), NULL, 0, MUTATE_W_SCHEDULER,
     WARN_PREFIX "drop schedulerName \"a2345678901234567...\" to get the profile's "
                 "\"s2345678902345678...\" (gang scheduling)",
     S63},
    {"hostNetwork", LONG_PROFILES(""),
     POD("{'hostNetwork':true,'nodeSelector':{'nvidia.com/gpu.product':"
         "'NVIDIA-H100-80GB-HBM3-SXM5-with-a-long-name'},'containers':[" LC("") "]}"),
     NULL, 0, MUTATE_W_HOST_NETWORK,
     WARN_PREFIX "hostNetwork pod: set NCCL_SOCKET_IFNAME to the NIC, or hostNetworkEnv in profile "
                 "\"p2345678902345678...\"",
     P63},
    {"no container", NULL, POD("{'containers':[{'name':'" NAME63 "'}]}"), NULL, 0,
     MUTATE_W_NO_CONTAINER,
     WARN_PREFIX
     "request a GPU or RDMA device, or name the training container \"pytorch\"; nothing added",
     "pytorch"},
    {"node lookup", NULL, POD("{'nodeName':'" NAME63 "','containers':[" LC("") "]}"), NULL, 1,
     MUTATE_W_NODE_LOOKUP,
     WARN_PREFIX "check the webhook can read nodes: node \"a2345678901234567...\" unread, profile "
                 "chosen from the pod",
     NAME63},
    {"ambiguous labels", LONG_PROFILES_Q("", "8"),
     POD("{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
         "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'nvidia.com/gpu.product',"
         "'operator':'Exists'}]}]}}},'containers':[" LC("") "]}"),
     NULL, 0, MUTATE_W_AMBIGUOUS,
     WARN_PREFIX "set rdma-webhook.io/profile: ambiguous node constraints fit "
                 "p2345678902345678902345678...; none chosen",
     P63 ", " Q63},
    {"ambiguous gpus", LONG_PROFILES_Q("", "8"), POD("{'containers':[" LC("") "]}"), NULL, 0,
     MUTATE_W_AMBIGUOUS,
     WARN_PREFIX "set rdma-webhook.io/profile: ambiguous GPU count 8 fits "
                 "p23456789023456789023456789023...; none chosen",
     P63 ", " Q63},
    {"pinned", LONG_PROFILES(",'pin':true,'default':true"), POD("{'containers':[" LC("") "]}"),
     NULL, 0, MUTATE_W_PINNED,
     WARN_PREFIX "pinned to profile \"p2345678902345678...\" nodes: nodeSelector "
                 "nvidia.com/gpu.product=NVIDIA-H100-80...",
     "NVIDIA-H100-80GB-HBM3-SXM5-with-a-long-name"},
    {"ib disabled", NULL,
     POD("{'containers':[" LC(",'env':[{'name':'NCCL_IB_DISABLE','value':'1'}]") "]}"), NULL, 0,
     MUTATE_W_IB_DISABLED,
     WARN_PREFIX "drop NCCL_IB_DISABLE=1 in container \"a2345678901234567...\" for RDMA; it has "
                 "TCP, no RDMA device",
     NAME63},
    {"detect, no image", LONG_PROFILES(",'detect':true,'default':true"),
     POD("{'containers':[" LC("") "]}"), NULL, 0, MUTATE_W_DETECT,
     WARN_PREFIX "give the webhook --detect-image: profile \"p2345678902345678...\" asks for "
                 "detect; static values used",
     P63},
    {"detect, own conf file", LONG_PROFILES(",'detect':true,'default':true"),
     POD("{'containers':[" LC(",'env':[{'name':'NCCL_CONF_FILE','value':'/x'}]") "]}"),
     &detect_opts, 0, MUTATE_W_DETECT,
     WARN_PREFIX "drop container \"a2345678901234567...\"'s own NCCL_CONF_FILE to detect at run "
                 "time; it keeps static values",
     NAME63},
    {"detect, mount taken", LONG_PROFILES(",'detect':true,'default':true"),
     POD("{'volumes':[{'name':'run','emptyDir':{}}],'containers':[" LC(
         ",'volumeMounts':[{'name':'run','mountPath':'/run/rdma-webhook'}]") "]}"),
     &detect_opts, 0, MUTATE_W_DETECT,
     WARN_PREFIX
     "move container \"a2345678901234567...\"'s mount off /run/rdma-webhook to detect at run time",
     NAME63},
    {"detect, name taken", LONG_PROFILES(",'detect':true,'default':true"),
     POD("{'volumes':[{'name':'rdma-webhook-nccl','hostPath':{'path':'/x'}}],'containers':[" LC(
         "") "]}"),
     &detect_opts, 0, MUTATE_W_DETECT,
     WARN_PREFIX
     "rename the pod's volume \"rdma-webhook-nccl\" to detect at run time; static values used",
     "volume"},
    {"error", NULL, POD("{'containers':[" LC(",'env':5") "]}"), NULL, 0, MUTATE_W_ERROR,
     WARN_PREFIX "see the webhook's log: pod not mutated, env is not an array", "env"},
};

/* The same for the Pod Security warnings, with the namespace's labels the
 * hook gives ("fail": the lookup fails). */
static const struct {
    struct warning_case w;
    const char *ns_labels;
} podsec_warning_cases[] = {
    {{"pod security enforce", NULL, POD("{'containers':[" LC("") "]}"), NULL, 0,
      MUTATE_W_POD_SECURITY,
      WARN_PREFIX
      "raise memlock on nodes for container \"a2345678901234567...\": no IPC_LOCK under "
      "Pod Security restricted",
      NAME63},
     "{'" PSA_ENFORCE "':'restricted'}"},
    {{"pod security invalid", NULL, POD("{'containers':[" LC("") "]}"), NULL, 0,
      MUTATE_W_POD_SECURITY,
      WARN_PREFIX
      "fix Pod Security enforce=\"restricted-re...\", read as restricted: no IPC_LOCK in "
      "\"a2345678901234567...\"",
      "restricted-restricted-restricted"},
     "{'" PSA_ENFORCE "':'restricted-restricted-restricted'}"},
    {{"pod security unread", NULL, POD("{'containers':[" LC("") "]}"), NULL, 0,
      MUTATE_W_POD_SECURITY,
      WARN_PREFIX "check the webhook can read namespaces: Pod Security level unknown, no IPC_LOCK "
                  "in \"a2345678901234567...\"",
      NAME63},
     "fail"},
    {{"pod security warn", NULL, POD("{'containers':[" LC("") "]}"), NULL, 0, MUTATE_W_POD_SECURITY,
      WARN_PREFIX "ignore Pod Security restricted warning on IPC_LOCK in container "
                  "\"a2345678901234567...\" (added for RDMA)",
      NAME63},
     "{'" PSA_WARN "':'restricted'}"},
    {{"pod security warn and audit", NULL, POD("{'containers':[" LC("") "]}"), NULL, 0,
      MUTATE_W_POD_SECURITY,
      WARN_PREFIX "ignore Pod Security warning and audit on IPC_LOCK in container "
                  "\"a2345678901234567...\" (added for RDMA)",
      NAME63},
     "{'" PSA_WARN "':'restricted','" PSA_AUDIT "':'restricted'}"},
};

static void check_warning_case(const struct warning_case *c, const char *ns_labels)
{
    struct mutate_hooks h = {.select = {.node_labels = failing_node_labels}};
    int found = 0, matched = 0;

    T.opts = c->opts;
    memset(&ns_hook, 0, sizeof(ns_hook));
    if (ns_labels) {
        h.select.namespace_labels = fake_namespace_labels;
        ns_hook.labels = strcmp(ns_labels, "fail") ? ns_labels : NULL;
    }
    run_with(c->pod, c->profiles ? profiles_from(c->profiles) : shipped,
             c->failing_nodes || ns_labels ? &h : NULL);
    for (size_t w = 0; w < T.res.warnings.n; w++) {
        if (T.res.warnings.kind[w] != c->kind)
            continue;
        found = 1;
        print_message("%s (%zu bytes): %s\n", c->what, strlen(T.res.warnings.text[w]),
                      T.res.warnings.text[w]);
        assert_true(strlen(T.res.warnings.text[w]) < MUTATE_WARNING_MAX);
        if (strcmp(T.res.warnings.text[w], c->text) != 0)
            continue; /* another of the kind (both ties, say) */
        matched = 1;
        if (!strstr(T.res.warnings.full[w], c->in_log))
            fail_msg("%s: the log's text lacks \"%s\": %s", c->what, c->in_log,
                     T.res.warnings.full[w]);
    }
    if (found && !matched) {
        print_warnings();
        fail_msg("%s: no warning is \"%s\"", c->what, c->text);
    }
    if (!found) {
        print_warnings();
        fail_msg("%s: no warning of kind %s", c->what, mutate_warning_kind_name(c->kind));
    }
    teardown(NULL);
}

/* Each kind of warning, with the longest names: the short text is exactly
 * as written here (so under 120 bytes, with its fix), and the full text, for
 * the log, has what the short one had to cut. */
TEST(test_every_warning_fits_with_long_names)
{
    for (size_t i = 0; i < sizeof(warning_cases) / sizeof(warning_cases[0]); i++)
        check_warning_case(&warning_cases[i], NULL);
    for (size_t i = 0; i < sizeof(podsec_warning_cases) / sizeof(podsec_warning_cases[0]); i++)
        check_warning_case(&podsec_warning_cases[i].w, podsec_warning_cases[i].ns_labels);
}

int main(void)
{
#define T_(name) cmocka_unit_test_teardown(name, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_every_warning_fits_with_long_names),
        T_(test_warnings_annotation_survives_a_quieter_second_call),
        T_(test_warnings_annotation_adds_to_what_the_pod_has),
        T_(test_warnings_annotation_not_json_is_replaced),
        T_(test_no_warnings_no_annotation),
        T_(test_warnings_annotation_has_the_whole_text_not_the_short_one),
        T_(test_warnings_annotation_is_bounded_and_never_cuts_a_text),
        T_(test_warnings_annotation_full_leaves_a_new_text_out_whole),
        T_(test_env_created_when_absent),
        T_(test_env_appended_after_user_env),
        T_(test_empty_env_array_gets_appended),
        T_(test_user_value_wins_with_warning),
        T_(test_user_value_equal_to_profile_no_warning),
        T_(test_user_value_from_wins_with_warning),
        T_(test_user_octal_timeout_warns),
        T_(test_user_retry_cnt_outside_warns),
        T_(test_user_hca_prefix_warns),
        T_(test_user_hca_prefix_of_nothing_the_profile_knows),
        T_(test_user_hca_prefix_of_a_device_the_profile_knows),
        T_(test_user_hca_syntax_nccl_misreads),
        T_(test_mixed_4gpu_pod_without_constraints_is_pinned),
        T_(test_mixed_4gpu_pod_without_pin_gets_no_node_selector),
        T_(test_mixed_in_h100_a100_is_ambiguous_and_not_pinned),
        T_(test_mixed_shared_pool_label_pins_only_the_missing_key),
        T_(test_mixed_1_and_2_gpu_pods_take_the_gpus_list),
        T_(test_mixed_pod_demanding_a100_never_gets_h100_by_gpu_count),
        T_(test_mixed_pod_excluding_both_gets_no_profile),
        T_(test_mixed_pin_keeps_the_pod_s_other_selector_keys),
        T_(test_mixed_bound_pod_is_not_pinned),
        T_(test_hostname_of_an_a100_node_gets_a100_not_the_h100_pin),
        T_(test_hostnames_of_two_types_are_not_pinned),
        T_(test_hostname_unknown_is_not_pinned),
        T_(test_pinned_default_profile),
        T_(test_ambiguous_gpu_count_is_said_and_falls_to_the_default),
        T_(test_selected_by_each_rule),
        T_(test_ib_disable_1_is_respected),
        T_(test_ib_disable_silences_other_ib_values),
        T_(test_ib_disable_values_nccl_reads_as_non_zero),
        T_(test_ib_disable_true_is_0_to_nccl),
        T_(test_ib_disable_from_value_from_is_unknown),
        T_(test_ib_disable_last_env_entry_wins),
        T_(test_ib_disable_per_container_device_goes_to_the_other),
        T_(test_ib_disable_from_a_readable_configmap),
        T_(test_ib_disable_configmap_then_unreadable_secret_is_unknown),
        T_(test_ib_disable_configmap_0_leaves_ib_on),
        T_(test_user_nccl_debug_info_no_warning),
        T_(test_envfrom_secret_warns_and_skips_nothing),
        T_(test_envfrom_configmap_without_lookup_warns),
        T_(test_envfrom_prefix_without_nccl_names_no_warning),
        T_(test_envfrom_prefix_nccl_still_warns),
        T_(test_configmap_hook_has_key_skips_variable),
        T_(test_configmap_hook_gets_key_without_prefix),
        T_(test_configmap_hook_lacks_key_adds_all_without_warning),
        T_(test_configmap_hook_not_asked_about_secrets),
        T_(test_envfrom_past_64_not_checked_one_warning),
        T_(test_envfrom_64_all_checked),
        T_(test_envfrom_past_64_warned_once),
        T_(test_envfrom_past_64_with_other_prefix_no_warning),
        T_(test_ipc_lock_creates_security_context),
        T_(test_pod_security_levels_and_modes),
        T_(test_pod_security_lookup_failure_leaves_ipc_lock_out),
        T_(test_pod_security_lookup_failure_keeps_the_user_s_ipc_lock),
        T_(test_pod_security_without_the_hook_adds_as_ever),
        T_(test_pod_security_config_defaults),
        T_(test_pod_security_config_exemptions),
        T_(test_pod_security_asks_once_and_names_each_container),
        T_(test_pod_security_not_asked_when_nothing_would_be_added),
        T_(test_pod_security_non_root_one_warning),
        T_(test_ipc_lock_flag_never),
        T_(test_ipc_lock_namespace_label),
        T_(test_ipc_lock_switches_explained),
        T_(test_pod_security_hooks_keep_the_caller_s_ctx),
        T_(test_ipc_lock_creates_capabilities),
        T_(test_ipc_lock_creates_add),
        T_(test_ipc_lock_appended_to_existing_add),
        T_(test_ipc_lock_already_present_not_repeated),
        T_(test_cap_ipc_lock_counts_as_present),
        T_(test_privileged_container_gets_no_capability),
        T_(test_ipc_lock_off_in_profile),
        T_(test_non_root_container_run_as_user_gets_no_ipc_lock),
        T_(test_non_root_container_run_as_non_root_gets_no_ipc_lock),
        T_(test_non_root_pod_level_gets_no_ipc_lock),
        T_(test_non_root_pod_run_as_user_gets_no_ipc_lock),
        T_(test_container_root_overrides_pod_non_root),
        T_(test_container_run_as_non_root_false_overrides_pod),
        T_(test_non_root_keeps_the_users_ipc_lock_and_warns),
        T_(test_root_by_default_no_warning),
        T_(test_privileged_non_root_no_warning),
        T_(test_shm_volume_and_mount_created),
        T_(test_shm_appended_to_existing_volumes_and_mounts),
        T_(test_shm_volume_name_collision_gets_suffix),
        T_(test_shm_volume_name_double_collision),
        T_(test_shm_no_free_name),
        T_(test_shm_last_free_name),
        T_(test_existing_dev_shm_mount_is_kept),
        T_(test_existing_dev_shm_mount_with_trailing_slash),
        T_(test_shm_size_limit_from_profile),
        T_(test_shm_off_in_profile),
        T_(test_two_gpu_containers_share_one_volume_sidecar_untouched),
        T_(test_scheduler_set_when_absent),
        T_(test_default_scheduler_replaced),
        T_(test_other_scheduler_kept_with_warning),
        T_(test_volcano_already_set_no_warning),
        T_(test_profile_without_scheduler_leaves_it),
        T_(test_rdma_resource_creates_resources),
        T_(test_rdma_resource_added_to_limits_creates_requests),
        T_(test_rdma_resource_added_to_requests_creates_limits),
        T_(test_rdma_resource_added_to_both_lists),
        T_(test_rdma_resource_with_empty_resources_object),
        T_(test_rdma_resource_skipped_when_another_container_asks_rdma),
        T_(test_rdma_resource_skipped_when_container_asks_other_rdma_resource),
        T_(test_rdma_resource_skipped_when_init_container_asks_rdma),
        T_(test_rdma_resource_goes_to_first_target_container),
        T_(test_longest_resource_name_is_patched_whole),
        T_(test_host_network_without_override_drops_ifname_and_warns),
        T_(test_host_network_with_override_uses_it),
        T_(test_host_network_env_ignored_without_host_network),
        T_(test_annotation_created_with_annotations),
        T_(test_annotation_added_to_existing_annotations),
        T_(test_annotation_names_the_chosen_profile),
        T_(test_second_call_on_patched_pod_is_empty),
        T_(test_pod_that_has_everything_gets_no_patch),
        T_(test_not_a_target_pod_untouched),
        T_(test_opted_out_pod_untouched),
        T_(test_inject_true_annotation_targets_plain_pod),
        T_(test_inject_value_that_does_nothing_warns),
        T_(test_inject_label_decides_over_an_ignored_annotation),
        T_(test_namespace_inject_value_that_does_nothing_warns),
        T_(test_controlling_pytorchjob_owner_targets_pod),
        T_(test_non_controlling_owner_is_not_a_target),
        T_(test_target_without_target_container_warns),
        T_(test_gpu_pod_without_profile_warns),
        T_(test_unknown_profile_annotation_warns),
        T_(test_warnings_fold_control_characters),
        T_(test_unknown_profile_lists_as_many_as_fit),
        T_(test_init_container_with_gpu_untouched_by_default),
        T_(test_init_containers_mutated_when_profile_says_so),
        T_(test_node_name_without_hook_no_warning),
        T_(test_node_lookup_failure_with_hook_warns),
        T_(test_implicit_target_template_without_metadata),
        T_(test_implicit_target_template_with_metadata),
        T_(test_template_without_implicit_target_is_not_a_target),
        T_(test_containers_not_an_array_is_error),
        T_(test_env_an_object_is_error),
        T_(test_security_context_a_string_is_error),
        T_(test_volumes_an_object_is_error),
        T_(test_annotations_a_string_is_error),
        T_(test_error_discards_earlier_warnings),
        T_(test_spec_missing_is_error),
        T_(test_warnings_bounded_with_63_char_names_and_long_values),
        T_(test_warning_cut_inside_multibyte_value_stays_utf8),
        T_(test_warning_with_multibyte_container_name_stays_utf8),
        T_(test_long_name_keeps_phrase_outside),
        T_(test_long_name_keeps_phrase_octal),
        T_(test_long_name_keeps_phrase_overrides),
        T_(test_long_name_keeps_phrase_prefix),
        T_(test_long_name_keeps_phrase_envfrom_secret),
        T_(test_long_name_keeps_phrase_non_root),
        T_(test_detect_adds_init_container_volume_mounts_env),
        T_(test_detect_claims_and_require_hca),
        T_(test_detect_claims_bounded),
        T_(test_detect_present_init_container_is_kept),
        T_(test_detect_off_keeps_static_env),
        T_(test_detect_object_enabled_false_is_off),
        T_(test_detect_shipped_profiles_unchanged_by_the_image),
        T_(test_detect_without_image_warns_once),
        T_(test_detect_without_options_warns),
        T_(test_detect_skips_ib_disabled_container),
        T_(test_detect_all_ib_disabled_adds_nothing),
        T_(test_detect_non_root_container_no_root_conf_mount),
        T_(test_detect_pod_run_as_non_root_no_root_conf_mount),
        T_(test_detect_root_conf_mount_of_the_user_kept),
        T_(test_detect_user_conf_file_wins),
        T_(test_detect_user_conf_file_value_from_wins),
        T_(test_detect_user_conf_file_from_envfrom_configmap_wins),
        T_(test_detect_name_clash_init_container),
        T_(test_detect_name_clash_container),
        T_(test_detect_name_clash_volume),
        T_(test_detect_mount_path_taken_skips_that_container),
        T_(test_detect_after_the_user_s_init_containers),
        T_(test_detect_appends_to_existing_lists),
        T_(test_detect_options_resources),
        T_(test_detect_host_network),
        T_(test_detect_host_network_without_image_still_warns),
        T_(test_detect_dollar_in_socket_ifname_is_escaped),
        T_(test_detect_env_hca_pattern),
        T_(test_detect_in_a_pytorchjob_template),
        T_(test_detect_warnings_bounded_with_long_names),
    };
#undef T_

    return cmocka_run_group_tests(tests, setup_group, support_shipped_teardown);
}
