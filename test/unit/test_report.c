/*
 * Unit tests for report-only mode: webhook/report.c (the precedence of the
 * three levels, the summary and its cap) and what mutate_object() does with
 * it (the one annotation, reinvocation, the label lookup, the warnings).
 * Run from the repository root (make unit does): it reads manifests/.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "err.h"
#include "mutate.h"
#include "patch.h"
#include "profiles.h"
#include "report.h"
#include "review.h"

#define NAME63 "a23456789012345678901234567890123456789012345678901234567890123"

/* An 8-GPU PyTorchJob pod (the training-operator's label); its namespace
 * is "ns". */
#define POD_JSON(meta)                                                                             \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"w-0\",\"namespace\":\"ns\"," \
    "\"labels\":{\"training.kubeflow.org/operator-name\":\"pytorchjob-controller\"}" meta "},"     \
    "\"spec\":{\"containers\":[{\"name\":\"pytorch\",\"image\":\"i\",\"resources\":{\"limits\":"   \
    "{\"nvidia.com/gpu\":\"8\"}}}]}}"
/* The same pod with its own IPC_LOCK: Pod Security has nothing to decide,
 * so an unread Namespace is report mode's alone to warn about. */
#define POD_JSON_IPC                                                                               \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"w-0\",\"namespace\":\"ns\"," \
    "\"labels\":{\"training.kubeflow.org/operator-name\":\"pytorchjob-controller\"}},"             \
    "\"spec\":{\"containers\":[{\"name\":\"pytorch\",\"image\":\"i\",\"resources\":{\"limits\":"   \
    "{\"nvidia.com/"                                                                               \
    "gpu\":\"8\"}},\"securityContext\":{\"capabilities\":{\"add\":[\"IPC_LOCK\"]}}}]}}"

static struct profiles *shipped;

/* ---- report_decide: the precedence ---- */

TEST(test_decide_precedence)
{
    static const struct {
        enum report_mode flag, profile;
        enum report_lookup lookup;
        const char *label;
        enum report_mode want;
        enum report_by by;
        int invalid;
    } cases[] = {
        /* nothing set: enforce, by the flag's default */
        {REPORT_MODE_UNSET, REPORT_MODE_UNSET, REPORT_LOOKUP_NONE, NULL, REPORT_MODE_ENFORCE,
         REPORT_BY_FLAG, 0},
        {REPORT_MODE_REPORT, REPORT_MODE_UNSET, REPORT_LOOKUP_NONE, NULL, REPORT_MODE_REPORT,
         REPORT_BY_FLAG, 0},
        {REPORT_MODE_REPORT, REPORT_MODE_UNSET, REPORT_LOOKUP_OK, NULL, REPORT_MODE_REPORT,
         REPORT_BY_FLAG, 0},
        /* the profile over the flag, both ways */
        {REPORT_MODE_REPORT, REPORT_MODE_ENFORCE, REPORT_LOOKUP_OK, NULL, REPORT_MODE_ENFORCE,
         REPORT_BY_PROFILE, 0},
        {REPORT_MODE_ENFORCE, REPORT_MODE_REPORT, REPORT_LOOKUP_NONE, NULL, REPORT_MODE_REPORT,
         REPORT_BY_PROFILE, 0},
        {REPORT_MODE_UNSET, REPORT_MODE_REPORT, REPORT_LOOKUP_OK, NULL, REPORT_MODE_REPORT,
         REPORT_BY_PROFILE, 0},
        /* the label over both, both ways */
        {REPORT_MODE_REPORT, REPORT_MODE_REPORT, REPORT_LOOKUP_OK, "enforce", REPORT_MODE_ENFORCE,
         REPORT_BY_NAMESPACE, 0},
        {REPORT_MODE_ENFORCE, REPORT_MODE_ENFORCE, REPORT_LOOKUP_OK, "report", REPORT_MODE_REPORT,
         REPORT_BY_NAMESPACE, 0},
        {REPORT_MODE_UNSET, REPORT_MODE_UNSET, REPORT_LOOKUP_OK, "report", REPORT_MODE_REPORT,
         REPORT_BY_NAMESPACE, 0},
        /* an invalid label is ignored: the next level decides */
        {REPORT_MODE_ENFORCE, REPORT_MODE_REPORT, REPORT_LOOKUP_OK, "audit", REPORT_MODE_REPORT,
         REPORT_BY_PROFILE, 1},
        {REPORT_MODE_REPORT, REPORT_MODE_UNSET, REPORT_LOOKUP_OK, "Report", REPORT_MODE_REPORT,
         REPORT_BY_FLAG, 1},
        {REPORT_MODE_UNSET, REPORT_MODE_UNSET, REPORT_LOOKUP_OK, "", REPORT_MODE_ENFORCE,
         REPORT_BY_FLAG, 1},
        /* unread labels: the profile and the flag decide, as without a label */
        {REPORT_MODE_ENFORCE, REPORT_MODE_UNSET, REPORT_LOOKUP_FAILED, NULL, REPORT_MODE_ENFORCE,
         REPORT_BY_FLAG, 0},
        {REPORT_MODE_UNSET, REPORT_MODE_UNSET, REPORT_LOOKUP_FAILED, NULL, REPORT_MODE_ENFORCE,
         REPORT_BY_FLAG, 0},
        {REPORT_MODE_REPORT, REPORT_MODE_UNSET, REPORT_LOOKUP_FAILED, NULL, REPORT_MODE_REPORT,
         REPORT_BY_FLAG, 0},
        {REPORT_MODE_ENFORCE, REPORT_MODE_REPORT, REPORT_LOOKUP_FAILED, NULL, REPORT_MODE_REPORT,
         REPORT_BY_PROFILE, 0},
        /* a label value without a successful lookup is no label */
        {REPORT_MODE_UNSET, REPORT_MODE_UNSET, REPORT_LOOKUP_NONE, "report", REPORT_MODE_ENFORCE,
         REPORT_BY_FLAG, 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct report_decision d;

        report_decide(cases[i].flag, cases[i].profile, cases[i].lookup, cases[i].label, &d);
        if (d.mode != cases[i].want || d.by != cases[i].by || d.label_invalid != cases[i].invalid)
            fail_msg("case %zu: got %s by %s (invalid %d), want %s by %s (invalid %d)", i,
                     report_mode_name(d.mode), report_by_name(d.by), d.label_invalid,
                     report_mode_name(cases[i].want), report_by_name(cases[i].by),
                     cases[i].invalid);
        assert_int_equal(d.lookup_failed, cases[i].lookup == REPORT_LOOKUP_FAILED);
    }
}

TEST(test_mode_parse_is_exact)
{
    assert_int_equal(report_mode_parse("report"), REPORT_MODE_REPORT);
    assert_int_equal(report_mode_parse("enforce"), REPORT_MODE_ENFORCE);
    assert_int_equal(report_mode_parse("REPORT"), REPORT_MODE_UNSET);
    assert_int_equal(report_mode_parse("report "), REPORT_MODE_UNSET);
    assert_int_equal(report_mode_parse(""), REPORT_MODE_UNSET);
    assert_int_equal(report_mode_parse(NULL), REPORT_MODE_UNSET);
}

/* ---- report_value: the summary ---- */

static cJSON *report_parse(struct dynbuf *out)
{
    cJSON *v = cJSON_Parse(dynbuf_ptr(out));

    if (!cJSON_IsObject(v))
        fail_msg("the report is not a JSON object: %s", dynbuf_ptr(out));
    return v;
}

TEST(test_value_lists_each_item_and_strips_base)
{
    const char *ops_text =
        "[{\"op\":\"add\",\"path\":\"/spec/t/template/spec/containers/0/env\",\"value\":"
        "[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}]},"
        "{\"op\":\"replace\",\"path\":\"/spec/t/template/spec/"
        "schedulerName\",\"value\":\"volcano\"},"
        "{\"op\":\"add\",\"path\":\"/spec/t/template/spec/containers/0/securityContext\","
        "\"value\":{\"capabilities\":{\"add\":[\"IPC_LOCK\"]}}}]";
    const char *warnings[] = {"w \"one\""};
    struct report_input in = {.result = "reported",
                              .by = "profile",
                              .profile = "p",
                              .selected_by = "gpus",
                              .warnings = warnings,
                              .n_warnings = 1,
                              .base = "/spec/t/template"};
    cJSON *ops = cJSON_Parse(ops_text), *v, *adds;
    struct dynbuf out;

    assert_non_null(ops);
    in.ops = ops;
    dynbuf_init(&out, REPORT_VALUE_MAX);
    assert_int_equal(report_value(&in, &out), ERR_OK);
    v = report_parse(&out);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v, "result")), "reported");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v, "by")), "profile");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v, "profile")), "p");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v, "selectedBy")), "gpus");
    assert_null(cJSON_GetObjectItem(v, "reason"));
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(v, "warnings"), 0)),
        "w \"one\"");
    adds = cJSON_GetObjectItem(v, "additions");
    assert_int_equal(cJSON_GetArraySize(adds), 4);
    assert_string_equal(cJSON_GetArrayItem(adds, 0)->valuestring, "add /spec/containers/0/env A=1");
    assert_string_equal(cJSON_GetArrayItem(adds, 1)->valuestring, "add /spec/containers/0/env B=2");
    assert_string_equal(cJSON_GetArrayItem(adds, 2)->valuestring,
                        "replace /spec/schedulerName volcano");
    assert_string_equal(cJSON_GetArrayItem(adds, 3)->valuestring,
                        "add /spec/containers/0/securityContext {capabilities:{add:[IPC_LOCK]}}");
    cJSON_Delete(v);
    cJSON_Delete(ops);
    dynbuf_free(&out);
}

/* A long value is cut with "...", an operation's text too. */
TEST(test_value_cuts_long_values)
{
    char long_value[400], ops_text[600];
    struct report_input in = {.result = "reported", .base = ""};
    cJSON *ops, *v;
    const char *a;
    struct dynbuf out;

    memset(long_value, 'x', sizeof(long_value) - 1);
    long_value[sizeof(long_value) - 1] = '\0';
    snprintf(ops_text, sizeof(ops_text), "[{\"op\":\"add\",\"path\":\"/spec/x\",\"value\":\"%s\"}]",
             long_value);
    assert_non_null(ops = cJSON_Parse(ops_text));
    in.ops = ops;
    dynbuf_init(&out, REPORT_VALUE_MAX);
    assert_int_equal(report_value(&in, &out), ERR_OK);
    v = report_parse(&out);
    a = cJSON_GetArrayItem(cJSON_GetObjectItem(v, "additions"), 0)->valuestring;
    assert_true(strlen(a) <= strlen("add /spec/x ") + REPORT_VALUE_CUT);
    assert_true(strlen(a) > strlen("add /spec/x ") + REPORT_VALUE_CUT - 4);
    assert_string_equal(a + strlen(a) - 3, "...");
    cJSON_Delete(v);
    cJSON_Delete(ops);
    dynbuf_free(&out);
}

/* Thousands of operations: the value stays under its cap, every entry kept
 * is whole, and the last says how many were left out. */
TEST(test_value_is_capped_with_a_count)
{
    const size_t total = 3000;
    cJSON *ops = cJSON_CreateArray(), *v, *adds, *last;
    struct report_input in = {.result = "reported", .by = "flag", .base = ""};
    struct dynbuf out;
    size_t n, left;
    char path[64], more[64];

    assert_non_null(ops);
    for (size_t i = 0; i < total; i++) {
        cJSON *op = cJSON_CreateObject();

        snprintf(path, sizeof(path), "/spec/containers/%zu/env/-", i);
        assert_non_null(op);
        cJSON_AddStringToObject(op, "op", "add");
        cJSON_AddStringToObject(op, "path", path);
        cJSON_AddStringToObject(op, "value", "NCCL_SOMETHING_LONG_ENOUGH=1234567890");
        cJSON_AddItemToArray(ops, op);
    }
    in.ops = ops;
    dynbuf_init(&out, REPORT_VALUE_MAX);
    assert_int_equal(report_value(&in, &out), ERR_OK);
    assert_true(dynbuf_len(&out) <= REPORT_VALUE_MAX);
    assert_true(dynbuf_len(&out) > REPORT_VALUE_MAX - 200); /* filled, not cut early */
    v = report_parse(&out);
    adds = cJSON_GetObjectItem(v, "additions");
    n = (size_t)cJSON_GetArraySize(adds) - 1;
    assert_true(n > 10 && n < total);
    last = cJSON_GetArrayItem(adds, (int)n);
    left = total - n;
    snprintf(more, sizeof(more), "... %zu more", left);
    assert_string_equal(last->valuestring, more);
    snprintf(path, sizeof(path), "add /spec/containers/%zu/env/- NCCL_SOMETHING", n - 1);
    assert_contains(cJSON_GetArrayItem(adds, (int)n - 1)->valuestring, path);
    cJSON_Delete(v);
    cJSON_Delete(ops);
    dynbuf_free(&out);
}

/* ---- mutate_object in report mode ---- */

/* The namespace lookup as a test sets it: answers with labels (a JSON
 * text), or fails; counts its calls. */
static struct {
    const char *labels;
    int fail;
    int calls;
    char name[64]; /* the namespace asked for */
} NS;

static int ns_labels(void *ctx, const char *name, cJSON **labels)
{
    (void)ctx;
    snprintf(NS.name, sizeof(NS.name), "%s", name);
    NS.calls++;
    if (NS.fail)
        return ERR_FAIL;
    *labels = cJSON_Parse(NS.labels ? NS.labels : "{}");
    return *labels ? ERR_OK : ERR_FAIL;
}

static const struct mutate_hooks ns_hooks = {.select = {.namespace_labels = ns_labels}};

/* The run: the pod, its result, the patched pod and the report. */
static struct {
    cJSON *pod, *ops, *patched, *report;
    struct mutate_result res;
    int have_res;
} R;

static int teardown(void **state)
{
    (void)state;
    cJSON_Delete(R.pod);
    cJSON_Delete(R.ops);
    cJSON_Delete(R.patched);
    cJSON_Delete(R.report);
    if (R.have_res)
        mutate_result_free(&R.res);
    memset(&R, 0, sizeof(R));
    memset(&NS, 0, sizeof(NS));
    return 0;
}

/* Mutates text (a pod, at base "") with the shipped profiles (or ps) and
 * applies the patch into R.patched; R.report is the report annotation's
 * value parsed, when the patched pod has one. */
static void run_with(const struct profiles *ps, const char *text, const struct mutate_options *opts,
                     const struct mutate_hooks *hooks)
{
    struct mutate_input in = {.base = "", .namespace_ = "ns", .opts = opts};
    char err[ERR_LEN];
    const char *value;

    cJSON_Delete(R.pod);
    cJSON_Delete(R.ops);
    cJSON_Delete(R.patched);
    cJSON_Delete(R.report);
    R.ops = R.patched = R.report = NULL;
    if (R.have_res)
        mutate_result_free(&R.res);
    assert_non_null(R.pod = cJSON_Parse(text));
    in.object = R.pod;
    mutate_result_init(&R.res, 1 << 20);
    R.have_res = 1;
    mutate_object(&in, ps ? ps : shipped, hooks, &R.res);
    assert_non_null(R.patched = cJSON_Duplicate(R.pod, 1));
    if (R.res.outcome != MUTATE_PATCHED)
        return;
    assert_non_null(R.ops = cJSON_Parse(dynbuf_ptr(&R.res.patch.out)));
    assert_int_equal(cJSON_GetArraySize(R.ops), (int)R.res.patch.n_ops);
    if (patch_apply(&R.patched, R.ops, err, sizeof(err)))
        fail_msg("the patch does not apply: %s", err);
    value = cJSON_GetStringValue(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(R.patched, "metadata"), "annotations"),
        REPORT_ANNOTATION));
    if (value && !(R.report = cJSON_Parse(value)))
        fail_msg("the report is not JSON: %s", value);
}

static void run(const char *text, const struct mutate_options *opts,
                const struct mutate_hooks *hooks)
{
    run_with(NULL, text, opts, hooks);
}

static const char *report_str(const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItem(R.report, key));
}

/* 1 when some addition of the report is exactly s. */
static int report_adds(const char *s)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, cJSON_GetObjectItem(R.report, "additions"))
    {
        if (cJSON_IsString(it) && strcmp(it->valuestring, s) == 0)
            return 1;
    }
    return 0;
}

static int warned_kind(enum mutate_warning_kind kind)
{
    for (size_t i = 0; i < R.res.warnings.n; i++)
        if (R.res.warnings.kind[i] == kind)
            return 1;
    return 0;
}

/* The patched pod is the pod with only the report annotation more. */
static void assert_only_the_report(void)
{
    cJSON *want = cJSON_Duplicate(R.pod, 1), *meta, *ann;
    cJSON *got_value;

    assert_non_null(want);
    meta = cJSON_GetObjectItem(want, "metadata");
    ann = cJSON_GetObjectItem(meta, "annotations");
    if (!ann)
        ann = cJSON_AddObjectToObject(meta, "annotations");
    got_value = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(R.patched, "metadata"), "annotations"),
        REPORT_ANNOTATION);
    assert_non_null(got_value);
    cJSON_DeleteItemFromObject(ann, REPORT_ANNOTATION);
    cJSON_AddItemToObject(ann, REPORT_ANNOTATION, cJSON_Duplicate(got_value, 1));
    if (!cJSON_Compare(want, R.patched, 1)) {
        char *w = cJSON_PrintUnformatted(want), *g = cJSON_PrintUnformatted(R.patched);

        fprintf(stderr, "want %s\ngot  %s\n", w, g);
        free(w);
        free(g);
        cJSON_Delete(want);
        fail_msg("the reported pod changed beyond its report annotation");
    }
    cJSON_Delete(want);
}

/* What enforce adds, but as the summary: the flag alone sets report. */
TEST(test_flag_report_pod_gets_only_the_annotation)
{
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};

    run(POD_JSON(""), &report, NULL);
    assert_int_equal(R.res.outcome, MUTATE_PATCHED);
    assert_int_equal(R.res.reason, MUTATE_R_REPORTED);
    assert_string_equal(mutate_outcome_name(mutate_reason_outcome(R.res.reason)), "reported");
    assert_int_equal(R.res.patch.n_ops, 1);
    assert_only_the_report();
    assert_non_null(R.report);
    assert_string_equal(report_str("result"), "reported");
    assert_string_equal(report_str("by"), "flag");
    assert_string_equal(report_str("profile"), "roce-8card");
    assert_string_equal(report_str("selectedBy"), "gpus");
    assert_string_equal(R.res.report_by, "flag");
    assert_true(report_adds("add /spec/containers/0/env NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4,"
                            "mlx5_5,mlx5_6,mlx5_7,mlx5_8"));
    assert_true(report_adds("add /spec/containers/0/env NCCL_IB_DISABLE=0"));
    assert_true(report_adds("add /spec/schedulerName volcano"));
    assert_true(
        report_adds("add /spec/containers/0/securityContext {capabilities:{add:[IPC_LOCK]}}"));
    /* the webhook's own annotations are not additions, nor written */
    assert_null(strstr(dynbuf_ptr(&R.res.patch.out), MUTATE_ANNOTATION_INJECTED));
    assert_null(strstr(dynbuf_ptr(&R.res.patch.out), "selected-by\\\":"));
}

/* The summary lists exactly what enforce's patch changes: one entry per
 * item of an operation that makes a list, the annotations left out. */
TEST(test_report_lists_what_enforce_adds)
{
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};
    int enforce_entries = 0, n_report;
    cJSON *op;

    run(POD_JSON(""), NULL, NULL);
    assert_int_equal(R.res.reason, MUTATE_R_MUTATED);
    cJSON_ArrayForEach(op, R.ops)
    {
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(op, "path"));
        const cJSON *value = cJSON_GetObjectItem(op, "value");

        if (strncmp(path, "/metadata", 9) == 0)
            continue;
        enforce_entries += cJSON_IsArray(value) ? cJSON_GetArraySize(value) : 1;
    }
    run(POD_JSON(""), &report, NULL);
    n_report = cJSON_GetArraySize(cJSON_GetObjectItem(R.report, "additions"));
    assert_true(enforce_entries > 5);
    assert_int_equal(n_report, enforce_entries);
}

/* Called again on the reported pod (the apiserver's reinvocation): no
 * operation, nothing-missing as a mutated pod's second call, and seen. */
TEST(test_reported_pod_called_again_gets_nothing)
{
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};
    char *once;

    run(POD_JSON(""), &report, NULL);
    assert_int_equal(R.res.reason, MUTATE_R_REPORTED);
    assert_int_equal(R.res.report_seen, 0);
    assert_non_null(once = cJSON_PrintUnformatted(R.patched));
    run(once, &report, NULL);
    free(once);
    assert_int_equal(R.res.outcome, MUTATE_SKIPPED);
    assert_int_equal(R.res.patch.n_ops, 0);
    assert_int_equal(R.res.reason, MUTATE_R_NOTHING_MISSING);
    assert_int_equal(R.res.report_seen, 1);
}

/* A stale report (another webhook changed the pod since) is replaced, and
 * the summary never describes itself. */
TEST(test_stale_report_is_replaced)
{
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};

    run(POD_JSON(",\"annotations\":{\"" REPORT_ANNOTATION "\":\"{}\"}"), &report, NULL);
    assert_int_equal(R.res.reason, MUTATE_R_REPORTED);
    assert_int_equal(R.res.patch.n_ops, 1);
    assert_int_equal(R.res.report_seen, 1);
    assert_only_the_report();
    for (const cJSON *it = cJSON_GetObjectItem(R.report, "additions")->child; it; it = it->next)
        assert_null(strstr(it->valuestring, "report"));
}

/* The namespace label over the profile over the flag, through the hook;
 * the labels read once per admission. */
TEST(test_namespace_label_wins_and_is_read_once)
{
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};
    const struct mutate_options enforce = {.mode = REPORT_MODE_ENFORCE};

    NS.labels = "{\"" REPORT_LABEL "\":\"enforce\"}";
    run(POD_JSON(""), &report, &ns_hooks);
    assert_int_equal(NS.calls, 1);
    assert_string_equal(NS.name, "ns");
    assert_int_equal(R.res.reason, MUTATE_R_MUTATED);
    assert_null(R.res.report_by);
    assert_null(R.report);

    NS.calls = 0;
    NS.labels = "{\"" REPORT_LABEL "\":\"report\",\"team\":\"a\"}";
    run(POD_JSON(""), &enforce, &ns_hooks);
    assert_int_equal(NS.calls, 1);
    assert_int_equal(R.res.reason, MUTATE_R_REPORTED);
    assert_string_equal(report_str("by"), "namespace-label");
    assert_only_the_report();
}

#define ONE_PROFILE(mode)                                                                          \
    "{\"profiles\":[{\"name\":\"p\",\"default\":true" mode                                         \
    ",\"env\":{\"NCCL_IB_TIMEOUT\":\"22\"}}]}"

TEST(test_profile_mode_over_the_flag_under_the_label)
{
    struct profiles *ps = support_profiles(ONE_PROFILE(",\"mode\":\"report\""));
    struct profiles *pe = support_profiles(ONE_PROFILE(",\"mode\":\"enforce\""));
    const struct mutate_options enforce = {.mode = REPORT_MODE_ENFORCE};
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};

    assert_int_equal(ps->p[0].mode, REPORT_MODE_REPORT);
    run_with(ps, POD_JSON(""), &enforce, &ns_hooks); /* no label */
    assert_int_equal(R.res.reason, MUTATE_R_REPORTED);
    assert_string_equal(report_str("by"), "profile");
    assert_string_equal(report_str("profile"), "p");
    assert_string_equal(report_str("selectedBy"), "default");

    run_with(pe, POD_JSON(""), &report, NULL);
    assert_int_equal(R.res.reason, MUTATE_R_MUTATED);

    NS.labels = "{\"" REPORT_LABEL "\":\"enforce\"}";
    run_with(ps, POD_JSON(""), &report, &ns_hooks);
    assert_int_equal(R.res.reason, MUTATE_R_MUTATED);
    profiles_free(ps);
    profiles_free(pe);
}

/* An invalid label: ignored, with a warning, the next level deciding. */
TEST(test_invalid_label_is_ignored_with_a_warning)
{
    NS.labels = "{\"" REPORT_LABEL "\":\"audit\"}";
    run(POD_JSON(""), NULL, &ns_hooks);
    assert_int_equal(R.res.reason, MUTATE_R_MUTATED);
    assert_true(warned_kind(MUTATE_W_MODE));
    assert_contains(R.res.warnings.full[0], "(\"audit\" ignored)");
    /* the enforced pod keeps the warning, as any other */
    assert_contains(dynbuf_ptr(&R.res.patch.out), "audit");
}

/* Labels that cannot be read: a warning, and the flag decides, either way
 * (an admin who wants "report when in doubt" runs with --mode report). */
TEST(test_unread_labels_warn_and_the_flag_decides)
{
    const struct mutate_options enforce = {.mode = REPORT_MODE_ENFORCE};
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};

    NS.fail = 1;
    run(POD_JSON_IPC, &enforce, &ns_hooks);
    assert_int_equal(NS.calls, 1);
    assert_int_equal(R.res.reason, MUTATE_R_MUTATED);
    assert_null(R.res.report_by);
    assert_true(warned_kind(MUTATE_W_MODE));
    assert_contains(dynbuf_ptr(&R.res.patch.out), "check the webhook can read namespaces");

    run(POD_JSON_IPC, &report, &ns_hooks);
    assert_int_equal(R.res.reason, MUTATE_R_REPORTED);
    assert_string_equal(R.res.report_by, "flag");
    assert_only_the_report();
    assert_contains(cJSON_GetArrayItem(cJSON_GetObjectItem(R.report, "warnings"), 0)->valuestring,
                    "check the webhook can read namespaces");
}

/* One cause, one warning: when Pod Security already says the Namespace
 * could not be read, report mode does not say it again. */
TEST(test_unread_labels_warned_once)
{
    NS.fail = 1;
    run(POD_JSON(""), NULL, &ns_hooks);
    assert_int_equal(NS.calls, 1);
    assert_true(warned_kind(MUTATE_W_POD_SECURITY));
    assert_false(warned_kind(MUTATE_W_MODE));
    assert_int_equal(R.res.warnings.n, 1);
}

/* Warnings name the namespace and the value whole in the log, and fit 120
 * bytes for the user, with their fix, for the longest of both. */
TEST(test_mode_warnings_fit_with_long_names)
{
    static const char *const ends[] = {"\" ignored)", "unread, rdma-webhook.io/mode not applied"};
    struct mutate_input in = {.base = "", .namespace_ = NAME63};
    char labels[128];
    struct mutate_result res;
    cJSON *pod;

    snprintf(labels, sizeof(labels), "{\"" REPORT_LABEL "\":\"%s\"}", NAME63);
    NS.labels = labels;
    for (int fail = 0; fail < 2; fail++) {
        size_t i;

        NS.fail = fail;
        assert_non_null(pod = cJSON_Parse(fail ? POD_JSON_IPC : POD_JSON("")));
        in.object = pod;
        mutate_result_init(&res, 1 << 20);
        mutate_object(&in, shipped, &ns_hooks, &res);
        for (i = 0; i < res.warnings.n && res.warnings.kind[i] != MUTATE_W_MODE; i++)
            ;
        assert_true(i < res.warnings.n);
        assert_true(strlen(res.warnings.text[i]) < MUTATE_WARNING_MAX);
        assert_int_equal(
            strncmp(res.warnings.text[i], MUTATE_WARNING_LEAD, strlen(MUTATE_WARNING_LEAD)), 0);
        assert_string_equal(
            res.warnings.text[i] + strlen(res.warnings.text[i]) - strlen(ends[fail]), ends[fail]);
        assert_contains(res.warnings.full[i], NAME63);
        assert_string_equal(NS.name, NAME63);
        mutate_result_free(&res);
        cJSON_Delete(pod);
    }
}

/* A pod enforce would only warn (no profile for its GPUs): its report says
 * skipped, and it gets no warnings annotation either. */
TEST(test_skipped_pod_with_warnings_reports_them)
{
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};

    run(POD_JSON(",\"annotations\":{\"rdma-webhook.io/profile\":\"nope\"}"), &report, NULL);
    assert_int_equal(R.res.reason, MUTATE_R_UNKNOWN_PROFILE);
    assert_int_equal(R.res.patch.n_ops, 1);
    assert_only_the_report();
    assert_string_equal(report_str("result"), "skipped");
    assert_string_equal(report_str("reason"), "unknown-profile");
    assert_null(cJSON_GetObjectItem(R.report, "additions"));
    assert_contains(cJSON_GetArrayItem(cJSON_GetObjectItem(R.report, "warnings"), 0)->valuestring,
                    "\"nope\" is unknown");
}

/* A pod with nothing to add or say: no lookup at all. */
TEST(test_nothing_to_write_reads_no_label)
{
    NS.labels = "{\"" REPORT_LABEL "\":\"report\"}";
    run("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"},\"spec\":"
        "{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
        NULL, &ns_hooks);
    assert_int_equal(R.res.reason, MUTATE_R_NOT_TARGET);
    assert_int_equal(NS.calls, 0);
}

/* Pinned in enforce mode; reported, nothing pinned and res.pinned 0. */
TEST(test_reported_pod_is_not_pinned)
{
    struct profiles *ps =
        support_profiles("{\"profiles\":[{\"name\":\"a100\",\"pin\":true,\"match\":{\"gpus\":8,"
                         "\"nodeLabels\":{\"gpu\":\"a100\"}}}]}");
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};

    run_with(ps, POD_JSON(""), NULL, NULL);
    assert_int_equal(R.res.pinned, 1);
    run_with(ps, POD_JSON(""), &report, NULL);
    assert_int_equal(R.res.reason, MUTATE_R_REPORTED);
    assert_int_equal(R.res.pinned, 0);
    assert_only_the_report();
    assert_true(report_adds("add /spec/nodeSelector {gpu:a100}"));
    profiles_free(ps);
}

/* A PyTorchJob's template (implicit target, deeper base): the annotation
 * goes on the template, the summary's paths are the pod's. */
TEST(test_job_template_is_reported_per_template)
{
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};
    const char *tmpl = "{\"metadata\":{},\"spec\":{\"containers\":[{\"name\":\"pytorch\","
                       "\"image\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]}}";
    struct mutate_input in = {.base = "/spec/pytorchReplicaSpecs/Master/template",
                              .namespace_ = "ns",
                              .implicit_target = 1,
                              .opts = &report};
    cJSON *obj = cJSON_Parse(tmpl), *ops, *op, *report_v;
    struct mutate_result res;

    assert_non_null(obj);
    in.object = obj;
    mutate_result_init(&res, 1 << 20);
    mutate_object(&in, shipped, NULL, &res);
    assert_int_equal(res.reason, MUTATE_R_REPORTED);
    assert_int_equal(res.patch.n_ops, 1);
    assert_non_null(ops = cJSON_Parse(dynbuf_ptr(&res.patch.out)));
    op = cJSON_GetArrayItem(ops, 0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(op, "path")),
                        "/spec/pytorchReplicaSpecs/Master/template/metadata/annotations");
    report_v = cJSON_Parse(cJSON_GetStringValue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(op, "value"), REPORT_ANNOTATION)));
    assert_non_null(report_v);
    assert_contains(cJSON_GetArrayItem(cJSON_GetObjectItem(report_v, "additions"), 0)->valuestring,
                    "add /spec/containers/0/");
    cJSON_Delete(report_v);
    cJSON_Delete(ops);
    cJSON_Delete(obj);
    mutate_result_free(&res);
}

/* Through review_handle: a reported pod counts once; the review of the
 * reported pod is a call again (no second Event), nothing-missing. */
TEST(test_review_of_the_reported_pod_is_a_call_again)
{
    const struct mutate_options report = {.mode = REPORT_MODE_REPORT};
    char body[4096];
    struct review_summary sum;
    struct dynbuf out;
    char *pod;

    run(POD_JSON(""), &report, NULL);
    assert_non_null(pod = cJSON_PrintUnformatted(R.patched));
    for (int again = 0; again < 2; again++) {
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                 "\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
                 "\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"namespace\":\"ns\","
                 "\"object\":%s}}",
                 again ? pod : POD_JSON(""));
        dynbuf_init(&out, 1 << 20);
        assert_int_equal(review_handle(body, strlen(body), shipped, NULL, &report, &out, &sum),
                         200);
        assert_int_equal(sum.called_again, again);
        assert_int_equal(sum.reason, again ? MUTATE_R_NOTHING_MISSING : MUTATE_R_REPORTED);
        assert_string_equal(sum.report_by, "flag");
        if (!again)
            assert_contains(dynbuf_ptr(&out), "\"mode\":\"report\"");
        else
            assert_null(strstr(dynbuf_ptr(&out), "\"patch\""));
        dynbuf_free(&out);
    }
    free(pod);
}

/* ---- the profile field ---- */

TEST(test_profile_mode_invalid_is_refused)
{
    static const char *const bad[] = {ONE_PROFILE(",\"mode\":\"audit\""),
                                      ONE_PROFILE(",\"mode\":true"), ONE_PROFILE(",\"mode\":\"\"")};
    static const char *const msg[] = {"profile \"p\": mode: must be \"report\" or \"enforce\", "
                                      "not \"audit\"",
                                      "profile \"p\": mode: must be a string",
                                      "profile \"p\": mode: must be \"report\" or \"enforce\""};

    for (size_t i = 0; i < 3; i++) {
        struct dynbuf errors;
        struct profiles *ps;

        dynbuf_init(&errors, 4096);
        ps = profiles_parse(bad[i], strlen(bad[i]), &errors);
        assert_null(ps);
        assert_contains(dynbuf_ptr(&errors), msg[i]);
        dynbuf_free(&errors);
    }
    /* and in defaults it is not a field */
    {
        const char *d = "{\"defaults\":{\"mode\":\"report\"},\"profiles\":[{\"name\":\"p\"}]}";
        struct dynbuf errors;

        dynbuf_init(&errors, 4096);
        assert_null(profiles_parse(d, strlen(d), &errors));
        assert_contains(dynbuf_ptr(&errors), "unknown field \"mode\"");
        dynbuf_free(&errors);
    }
}

static int setup_group(void **state)
{
    (void)state;
    shipped = load_shipped_profiles();
    return shipped ? 0 : -1;
}

static int teardown_group(void **state)
{
    (void)state;
    profiles_free(shipped);
    return 0;
}

int main(void)
{
#define T_(f) cmocka_unit_test_teardown(f, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_decide_precedence),
        T_(test_mode_parse_is_exact),
        T_(test_value_lists_each_item_and_strips_base),
        T_(test_value_cuts_long_values),
        T_(test_value_is_capped_with_a_count),
        T_(test_flag_report_pod_gets_only_the_annotation),
        T_(test_report_lists_what_enforce_adds),
        T_(test_reported_pod_called_again_gets_nothing),
        T_(test_stale_report_is_replaced),
        T_(test_namespace_label_wins_and_is_read_once),
        T_(test_profile_mode_over_the_flag_under_the_label),
        T_(test_invalid_label_is_ignored_with_a_warning),
        T_(test_unread_labels_warn_and_the_flag_decides),
        T_(test_unread_labels_warned_once),
        T_(test_mode_warnings_fit_with_long_names),
        T_(test_skipped_pod_with_warnings_reports_them),
        T_(test_nothing_to_write_reads_no_label),
        T_(test_reported_pod_is_not_pinned),
        T_(test_job_template_is_reported_per_template),
        T_(test_review_of_the_reported_pod_is_a_call_again),
        T_(test_profile_mode_invalid_is_refused),
    };
#undef T_

    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
