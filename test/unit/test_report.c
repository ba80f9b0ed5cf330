/*
 * Unit tests for report-only mode: webhook/admission/report.c (the precedence of the
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

#include "base/dynbuf.h"
#include "base/err.h"
#include "admission/mutate.h"
#include "admission/patch.h"
#include "admission/profiles.h"
#include "admission/report.h"
#include "admission/review.h"
#include "base/utf8.h"

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

/* ---- report_value: the summary in words ---- */

/* The text's lines, split at '\n' into a NULL-terminated array (freed by
 * the caller with free()); each checked to be UTF-8 of one line. */
static char **lines_of(const char *text, size_t *n)
{
    size_t count = 1, i = 0;
    char *copy, **out, *p;

    for (const char *q = text; *q; q++)
        count += *q == '\n';
    out = calloc(count + 1, sizeof(*out) + 0);
    copy = strdup(text);
    assert_non_null(out);
    assert_non_null(copy);
    for (p = strtok(copy, "\n"); p; p = strtok(NULL, "\n")) {
        assert_true(utf8_valid(p, strlen(p)));
        assert_true(strlen(p) <= REPORT_LINE_MAX);
        out[i++] = strdup(p);
    }
    free(copy);
    assert_int_equal(i, count); /* no empty line */
    *n = i;
    return out;
}

static void lines_free(char **lines)
{
    for (size_t i = 0; lines && lines[i]; i++)
        free(lines[i]);
    free(lines);
}

static int has_line(char **lines, const char *want)
{
    for (size_t i = 0; lines[i]; i++)
        if (strcmp(lines[i], want) == 0)
            return 1;
    return 0;
}

#define assert_line(lines, want)                                                                   \
    do {                                                                                           \
        if (!has_line((lines), (want))) {                                                          \
            for (size_t i_ = 0; (lines)[i_]; i_++)                                                 \
                fprintf(stderr, "  line: %s\n", (lines)[i_]);                                      \
            fail_msg("no line \"%s\"", (want));                                                    \
        }                                                                                          \
    } while (0)

/* report_value on ops (JSON text) at base, naming the containers of pod. */
static char *value_of(struct report_input *in, const char *ops_text, const char *pod_text)
{
    cJSON *ops = ops_text ? cJSON_Parse(ops_text) : NULL, *pod = cJSON_Parse(pod_text);
    struct dynbuf out;
    char *text;

    if (ops_text)
        assert_non_null(ops);
    assert_non_null(pod);
    in->ops = ops;
    in->pod = pod;
    dynbuf_init(&out, REPORT_VALUE_MAX);
    assert_int_equal(report_value(in, &out), ERR_OK);
    assert_true(dynbuf_len(&out) <= REPORT_VALUE_MAX);
    text = strdup(dynbuf_ptr(&out));
    dynbuf_free(&out);
    cJSON_Delete(ops);
    cJSON_Delete(pod);
    return text;
}

#define PYTORCH_POD "{\"spec\":{\"containers\":[{\"name\":\"pytorch\"}]}}"

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
    char *text = value_of(&in, ops_text, PYTORCH_POD), **lines;
    size_t n;

    lines = lines_of(text, &n);
    assert_int_equal(n, 6);
    assert_string_equal(lines[0], "report mode (the profile's mode): nothing changed; enforce "
                                  "mode would apply profile \"p\" (chosen by gpus)");
    assert_string_equal(lines[1], "container \"pytorch\": env A=1");
    assert_string_equal(lines[2], "container \"pytorch\": env B=2");
    assert_string_equal(lines[3], "schedulerName volcano (in place of default-scheduler)");
    assert_string_equal(lines[4], "container \"pytorch\": capability IPC_LOCK");
    assert_string_equal(lines[5], "warning: w \"one\"");
    assert_null(strchr(text, '{'));
    lines_free(lines);
    free(text);
}

/* Every operation the webhook makes, in words: no JSON Pointer, no
 * escape (rdma~1hca), the container by its name (by its index when the
 * pod does not name it). */
TEST(test_value_says_every_change_in_words)
{
    const char *ops_text =
        "[{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/limits/rdma~1hca\",\"value\":"
        "\"1\"},"
        "{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/requests\",\"value\":"
        "{\"rdma/hca\":\"1\"}},"
        "{\"op\":\"add\",\"path\":\"/spec/containers/1/resources\",\"value\":"
        "{\"limits\":{\"rdma/x\":\"2\"},\"requests\":{\"rdma/x\":\"2\"}}},"
        "{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":{\"name\":\"NCCL_IB_HCA\","
        "\"value\":\"=mlx5_1\"}},"
        "{\"op\":\"add\",\"path\":\"/spec/containers/0/securityContext/capabilities/add/-\","
        "\"value\":\"IPC_LOCK\"},"
        "{\"op\":\"add\",\"path\":\"/spec/volumes/-\",\"value\":{\"name\":\"rdma-webhook-shm\","
        "\"emptyDir\":{\"medium\":\"Memory\"}}},"
        "{\"op\":\"add\",\"path\":\"/spec/containers/0/volumeMounts\",\"value\":[{\"name\":"
        "\"rdma-webhook-nccl\",\"mountPath\":\"/root/.nccl.conf\",\"subPath\":\"nccl.conf\","
        "\"readOnly\":true}]},"
        "{\"op\":\"add\",\"path\":\"/spec/nodeSelector\",\"value\":{\"gpu\":\"a100\"}},"
        "{\"op\":\"add\",\"path\":\"/spec/nodeSelector/nvidia.com~1gpu.product\",\"value\":"
        "\"H100\"},"
        "{\"op\":\"add\",\"path\":\"/spec/initContainers\",\"value\":[{\"name\":"
        "\"rdma-webhook-detect\",\"image\":\"img:1\"}]},"
        "{\"op\":\"add\",\"path\":\"/spec/schedulerName\",\"value\":\"volcano\"},"
        "{\"op\":\"add\",\"path\":\"/spec/hostIPC~1x/-\",\"value\":{\"a\":[1,true]}}]";
    struct report_input in = {.result = "reported", .by = "namespace-label", .base = ""};
    char *text = value_of(&in, ops_text, PYTORCH_POD), **lines;
    size_t n;

    lines = lines_of(text, &n);
    assert_string_equal(lines[0],
                        "report mode (namespace label rdma-webhook.io/mode): nothing changed");
    assert_line(lines, "container \"pytorch\": limits rdma/hca: 1");
    assert_line(lines, "container \"pytorch\": requests rdma/hca: 1");
    assert_line(lines, "container 1: limits rdma/x: 2");
    assert_line(lines, "container 1: requests rdma/x: 2");
    assert_line(lines, "container \"pytorch\": env NCCL_IB_HCA==mlx5_1");
    assert_line(lines, "container \"pytorch\": capability IPC_LOCK");
    assert_line(lines, "volume rdma-webhook-shm: emptyDir {medium: Memory}");
    assert_line(lines, "container \"pytorch\": mount rdma-webhook-nccl at /root/.nccl.conf (file "
                       "nccl.conf), read-only");
    assert_line(lines, "nodeSelector gpu=a100");
    assert_line(lines, "nodeSelector nvidia.com/gpu.product=H100");
    assert_line(lines, "init container \"rdma-webhook-detect\": added, image img:1");
    assert_line(lines, "schedulerName volcano");
    assert_line(lines, "add hostIPC/x {a: [1, true]}");
    assert_int_equal(n, 14);
    assert_null(strstr(text, "~1"));
    assert_null(strstr(text, "/spec/"));
    lines_free(lines);
    free(text);
}

/* A value longer than a line is cut between characters; a name with a
 * newline (or a C1 control, two bytes) stays on its line. */
TEST(test_value_cuts_long_lines_between_characters)
{
    char value[2 * REPORT_LINE_MAX], ops_text[3 * REPORT_LINE_MAX];
    struct report_input in = {.result = "reported", .base = ""};
    char *text, **lines;
    size_t n, i;

    for (i = 0; i + 2 < sizeof(value); i += 2)
        memcpy(value + i, "\xc3\xa9", 2); /* é */
    value[i] = '\0';
    snprintf(ops_text, sizeof(ops_text),
             "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":{\"name\":\"X\","
             "\"value\":\"%s\"}}]",
             value);
    text = value_of(&in, ops_text, "{\"spec\":{\"containers\":[{\"name\":\"a\\nb\\u0085c\"}]}}");
    lines = lines_of(text, &n); /* checks UTF-8 and REPORT_LINE_MAX */
    assert_int_equal(n, 2);
    assert_int_equal(strncmp(lines[1], "container \"a?b?c\": env X=\xc3\xa9", 27), 0);
    assert_true(strlen(lines[1]) > REPORT_LINE_MAX - 4);
    lines_free(lines);
    free(text);
}

/* Thousands of changes: the text stays under its cap, every line kept is
 * whole, and the last says how many were left out. */
TEST(test_value_is_capped_with_a_count)
{
    const size_t total = 3000;
    cJSON *ops = cJSON_CreateArray(), *pod = cJSON_Parse(PYTORCH_POD);
    struct report_input in = {.result = "reported", .by = "flag", .base = ""};
    struct dynbuf out;
    size_t n;
    char path[64], more[64], **lines;

    assert_non_null(ops);
    for (size_t i = 0; i < total; i++) {
        cJSON *op = cJSON_CreateObject();

        snprintf(path, sizeof(path), "/spec/containers/0/env/-");
        assert_non_null(op);
        cJSON_AddStringToObject(op, "op", "add");
        cJSON_AddStringToObject(op, "path", path);
        cJSON *e = cJSON_AddObjectToObject(op, "value");
        snprintf(path, sizeof(path), "V%zu", i);
        cJSON_AddStringToObject(e, "name", path);
        cJSON_AddStringToObject(e, "value", "NCCL_SOMETHING_LONG_ENOUGH=1234567890");
        cJSON_AddItemToArray(ops, op);
    }
    in.ops = ops;
    in.pod = pod;
    dynbuf_init(&out, REPORT_VALUE_MAX);
    assert_int_equal(report_value(&in, &out), ERR_OK);
    assert_true(dynbuf_len(&out) <= REPORT_VALUE_MAX);
    assert_true(dynbuf_len(&out) > REPORT_VALUE_MAX - 200); /* filled, not cut early */
    lines = lines_of(dynbuf_ptr(&out), &n);
    assert_true(n > 10 && n < total);
    snprintf(more, sizeof(more), "... and %zu more", total - (n - 2));
    assert_string_equal(lines[n - 1], more);
    snprintf(path, sizeof(path),
             "container \"pytorch\": env V%zu=NCCL_SOMETHING_LONG_ENOUGH=", n - 3);
    assert_contains(lines[n - 2], path);
    lines_free(lines);
    cJSON_Delete(ops);
    cJSON_Delete(pod);
    dynbuf_free(&out);
}

/* Changes cut, warnings kept: the count stands where the changes end. */
TEST(test_value_counts_cut_changes_before_the_warnings)
{
    cJSON *ops = cJSON_CreateArray(), *pod = cJSON_Parse(PYTORCH_POD);
    const char *warnings[] = {"first warning", "second warning"};
    struct report_input in = {
        .result = "reported", .base = "", .warnings = warnings, .n_warnings = 2};
    struct dynbuf out;
    char **lines;
    size_t n;

    for (size_t i = 0; i < 1000; i++) {
        cJSON *op = cJSON_CreateObject(), *e;

        cJSON_AddStringToObject(op, "op", "add");
        cJSON_AddStringToObject(op, "path", "/spec/containers/0/env/-");
        e = cJSON_AddObjectToObject(op, "value");
        cJSON_AddStringToObject(e, "name", "NCCL_X");
        cJSON_AddStringToObject(e, "value", "a value of some length to fill the text");
        cJSON_AddItemToArray(ops, op);
    }
    in.ops = ops;
    in.pod = pod;
    dynbuf_init(&out, REPORT_VALUE_MAX);
    assert_int_equal(report_value(&in, &out), ERR_OK);
    lines = lines_of(dynbuf_ptr(&out), &n);
    assert_string_equal(lines[n - 1], "warning: second warning");
    assert_string_equal(lines[n - 2], "warning: first warning");
    assert_int_equal(strncmp(lines[n - 3], "... and ", 8), 0);
    lines_free(lines);
    cJSON_Delete(ops);
    cJSON_Delete(pod);
    dynbuf_free(&out);
}

/* The Event's note: the lines joined while they fit, the rest counted, a
 * count of the text's own included. */
TEST(test_note_joins_lines_and_counts_the_rest)
{
    char note[REPORT_NOTE_MAX], small[80];

    report_note("a\nb\nc", note, sizeof(note));
    assert_string_equal(note, "a | b | c");
    report_note("one\n... and 7 more", note, sizeof(note));
    assert_string_equal(note, "one | ... and 7 more");
    report_note("0123456789012345678901234567890\nsecond line that does not fit\nthird\n... and "
                "4 more",
                small, sizeof(small));
    assert_string_equal(small, "0123456789012345678901234567890 | ... and 6 more");
    report_note("", note, sizeof(note));
    assert_string_equal(note, "");
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
    cJSON *pod, *ops, *patched;
    char **report; /* the report annotation's lines */
    size_t n_report;
    struct mutate_result res;
    int have_res;
} R;

static int teardown(void **state)
{
    (void)state;
    cJSON_Delete(R.pod);
    cJSON_Delete(R.ops);
    cJSON_Delete(R.patched);
    lines_free(R.report);
    if (R.have_res)
        mutate_result_free(&R.res);
    memset(&R, 0, sizeof(R));
    memset(&NS, 0, sizeof(NS));
    return 0;
}

/* Mutates text (a pod, at base "") with the shipped profiles (or ps) and
 * applies the patch into R.patched; R.report is the report annotation's
 * lines, when the patched pod has one. */
static void run_with(const struct profiles *ps, const char *text, const struct mutate_options *opts,
                     const struct mutate_hooks *hooks)
{
    struct mutate_input in = {.base = "", .namespace_ = "ns", .opts = opts};
    char err[ERR_LEN];
    const char *value;

    cJSON_Delete(R.pod);
    cJSON_Delete(R.ops);
    cJSON_Delete(R.patched);
    lines_free(R.report);
    R.ops = R.patched = NULL;
    R.report = NULL;
    if (R.have_res)
        mutate_result_free(&R.res);
    assert_non_null(R.pod = cJSON_Parse(text));
    in.object = R.pod;
    mutate_result_init(&R.res, 1 << 20);
    R.have_res = 1;
    mutate_object(&in, ps ? ps : support_shipped, hooks, &R.res);
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
    if (value) {
        R.report = lines_of(value, &R.n_report);
        /* what the Event's note is made of */
        assert_string_equal(value, dynbuf_ptr(&R.res.report));
    }
}

static void run(const char *text, const struct mutate_options *opts,
                const struct mutate_hooks *hooks)
{
    run_with(NULL, text, opts, hooks);
}

/* The report's first line, what was decided. */
static const char *report_head(void)
{
    assert_non_null(R.report);
    return R.report[0];
}

/* 1 when some line of the report is exactly s. */
static int report_adds(const char *s)
{
    return R.report && has_line(R.report, s);
}

/* The first line of the report that contains s, or NULL. */
static const char *report_line_with(const char *s)
{
    for (size_t i = 0; R.report && R.report[i]; i++)
        if (strstr(R.report[i], s))
            return R.report[i];
    return NULL;
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
    assert_string_equal(report_head(), "report mode (--mode): nothing changed; enforce mode "
                                       "would apply profile \"roce-8card\" (chosen by gpus)");
    assert_string_equal(R.res.report_by, "flag");
    assert_true(report_adds("container \"pytorch\": env NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4,"
                            "mlx5_5,mlx5_6,mlx5_7,mlx5_8"));
    assert_true(report_adds("container \"pytorch\": env NCCL_IB_DISABLE=0"));
    assert_true(report_adds("schedulerName volcano"));
    assert_true(report_adds("container \"pytorch\": capability IPC_LOCK"));
    assert_true(report_adds("container \"pytorch\": requests rdma/hca: 1"));
    assert_true(report_adds("container \"pytorch\": mount rdma-webhook-shm at /dev/shm"));
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
    n_report = (int)R.n_report - 1; /* the first line says what was decided */
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
    assert_null(report_line_with(REPORT_ANNOTATION));
    assert_null(report_line_with("{}"));
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
    assert_contains(report_head(),
                    "report mode (namespace label " REPORT_LABEL "): nothing changed");
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
    assert_contains(report_head(), "report mode (the profile's mode): nothing changed");
    assert_contains(report_head(), "apply profile \"p\" (chosen by default)");

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
    assert_non_null(report_line_with("warning: check the webhook can read namespaces"));
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
        mutate_object(&in, support_shipped, &ns_hooks, &res);
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
    assert_string_equal(report_head(), "report mode (--mode): nothing changed; enforce mode "
                                       "would change nothing either (unknown-profile)");
    assert_int_equal(R.n_report, 2); /* no change, one warning */
    assert_int_equal(strncmp(R.report[1], "warning: ", 9), 0);
    assert_contains(R.report[1], "\"nope\" is unknown");
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
    assert_true(report_adds("nodeSelector gpu=a100"));
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
    cJSON *obj = cJSON_Parse(tmpl), *ops, *op;
    const char *report_v;
    struct mutate_result res;

    assert_non_null(obj);
    in.object = obj;
    mutate_result_init(&res, 1 << 20);
    mutate_object(&in, support_shipped, NULL, &res);
    assert_int_equal(res.reason, MUTATE_R_REPORTED);
    assert_int_equal(res.patch.n_ops, 1);
    assert_non_null(ops = cJSON_Parse(dynbuf_ptr(&res.patch.out)));
    op = cJSON_GetArrayItem(ops, 0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(op, "path")),
                        "/spec/pytorchReplicaSpecs/Master/template/metadata/annotations");
    report_v = cJSON_GetStringValue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(op, "value"), REPORT_ANNOTATION));
    assert_non_null(report_v);
    assert_contains(report_v, "\ncontainer \"pytorch\": env NCCL_IB_DISABLE=0\n");
    assert_null(strstr(report_v, "pytorchReplicaSpecs"));
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
        assert_int_equal(
            review_handle(body, strlen(body), support_shipped, NULL, &report, &out, &sum), 200);
        assert_int_equal(sum.called_again, again);
        assert_int_equal(sum.reason, again ? MUTATE_R_NOTHING_MISSING : MUTATE_R_REPORTED);
        assert_string_equal(sum.report_by, "flag");
        /* the RDMAReport Event's note: the report's lines joined */
        assert_contains(sum.report_note, "report mode (--mode): nothing changed; enforce mode "
                                         "would apply profile \"roce-8card\" (chosen by gpus) | "
                                         "container \"pytorch\": env NCCL_IB_DISABLE=0 | ");
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

int main(void)
{
#define T_(f) cmocka_unit_test_teardown(f, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_decide_precedence),
        T_(test_mode_parse_is_exact),
        T_(test_value_lists_each_item_and_strips_base),
        T_(test_value_says_every_change_in_words),
        T_(test_value_cuts_long_lines_between_characters),
        T_(test_value_is_capped_with_a_count),
        T_(test_value_counts_cut_changes_before_the_warnings),
        T_(test_note_joins_lines_and_counts_the_rest),
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

    return cmocka_run_group_tests(tests, support_shipped_setup, support_shipped_teardown);
}
