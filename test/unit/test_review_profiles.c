/*
 * Unit tests for review_handle_profiles() (webhook/admission/review.c), the
 * ValidatingWebhook on the profiles ConfigMap: a valid version is allowed;
 * an invalid one, or one without the key, is refused with the very lines
 * check-profiles prints; a DELETE is allowed; a body that is not an
 * AdmissionReview is a 400 as on /mutate.
 * Run from the repository root (make unit does): it reads manifests/.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "host/fsutil.h"
#include "admission/profiles.h"
#include "admission/review.h"
#include "host/store.h"

#define UID "9f0c2b1e-0000-4000-8000-000000000001"
#define KEY "profiles.json"

static struct {
    struct dynbuf out;
    struct review_verdict v;
    cJSON *resp;
    int status;
    int unlabelled; /* the ConfigMap comes without the selecting label */
} R;

static int teardown(void **state __attribute__((unused)))
{
    dynbuf_free(&R.out);
    cJSON_Delete(R.resp);
    memset(&R, 0, sizeof(R));
    return 0;
}

static char *read_shipped(void)
{
    struct dynbuf text;
    char err[ERR_LEN];

    dynbuf_init(&text, STORE_TEXT_MAX);
    if (fsutil_read("manifests/profiles.json", &text, err, sizeof(err)))
        fail_msg("%s", err);
    return dynbuf_steal(&text);
}

/* An AdmissionReview of operation op on ConfigMap rdma-webhook/profiles
 * whose data holds key: text (no data key when text is NULL). */
static char *configmap_review(const char *op, const char *key, const char *text)
{
    cJSON *root = cJSON_CreateObject(), *req, *obj, *data;
    char *body;

    cJSON_AddStringToObject(root, "apiVersion", "admission.k8s.io/v1");
    cJSON_AddStringToObject(root, "kind", "AdmissionReview");
    req = cJSON_AddObjectToObject(root, "request");
    cJSON_AddStringToObject(req, "uid", UID);
    cJSON_AddStringToObject(req, "operation", op);
    cJSON_AddStringToObject(req, "namespace", "rdma-webhook");
    cJSON_AddStringToObject(req, "name", "profiles");
    obj = cJSON_AddObjectToObject(req, "object");
    cJSON_AddStringToObject(obj, "kind", "ConfigMap");
    if (!R.unlabelled)
        cJSON_AddStringToObject(
            cJSON_AddObjectToObject(cJSON_AddObjectToObject(obj, "metadata"), "labels"),
            "rdma-webhook.io/profiles", "true");
    data = cJSON_AddObjectToObject(obj, "data");
    if (text)
        cJSON_AddStringToObject(data, key, text);
    body = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    assert_non_null(body);
    return body;
}

static const cJSON *field(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* Validates body; for 200, parses the answer and checks the envelope. */
static void validate(char *body)
{
    dynbuf_init(&R.out, 1 << 20);
    R.status = review_handle_profiles(body, strlen(body), KEY, &R.out, &R.v);
    free(body);
    if (R.status != 200)
        return;
    R.resp = cJSON_Parse(dynbuf_ptr(&R.out));
    assert_non_null(R.resp);
    assert_string_equal(cJSON_GetStringValue(field(R.resp, "apiVersion")), "admission.k8s.io/v1");
    assert_string_equal(cJSON_GetStringValue(field(field(R.resp, "response"), "uid")), UID);
}

static int allowed(void)
{
    return cJSON_IsTrue(field(field(R.resp, "response"), "allowed"));
}

static const char *message(void)
{
    return cJSON_GetStringValue(field(field(field(R.resp, "response"), "status"), "message"));
}

TEST(test_shipped_profiles_are_allowed)
{
    char *text = read_shipped();

    validate(configmap_review("UPDATE", KEY, text));
    free(text);
    assert_int_equal(R.status, 200);
    assert_true(allowed());
    assert_true(R.v.allowed);
    assert_null(field(field(R.resp, "response"), "status"));
    assert_string_equal(R.v.name, "profiles");
}

/* The message is what check-profiles prints after its first line: the
 * same profiles_parse() problems, one per line. */
TEST(test_invalid_version_is_refused_with_the_problems)
{
    char *text = read_shipped(), *bad;
    const char *from = "\"NCCL_IB_TIMEOUT\": \"22\"";
    char *at = strstr(text, from);
    struct dynbuf problems;
    struct profiles *ps;

    assert_non_null(at);
    memcpy(at + strlen("\"NCCL_IB_TIMEOUT\": \""), "40", 2);
    bad = strdup(text);
    free(text);
    dynbuf_init(&problems, 1 << 16);
    ps = profiles_parse(bad, strlen(bad), &problems);
    assert_null(ps);
    validate(configmap_review("CREATE", KEY, bad));
    free(bad);
    assert_int_equal(R.status, 200);
    assert_false(allowed());
    assert_false(R.v.allowed);
    assert_int_equal(
        cJSON_GetNumberValue(field(field(field(R.resp, "response"), "status"), "code")), 422);
    assert_non_null(message());
    assert_true(strncmp(message(), KEY " is not valid:\n", strlen(KEY " is not valid:\n")) == 0);
    /* Every problem line, whole (the trailing newline is dropped). */
    dynbuf_truncate(&problems, dynbuf_len(&problems) - 1);
    assert_string_equal(message() + strlen(KEY " is not valid:\n"), dynbuf_ptr(&problems));
    assert_contains(message(), "NCCL_IB_TIMEOUT");
    assert_contains(R.v.problems, "NCCL_IB_TIMEOUT");
    dynbuf_free(&problems);
}

TEST(test_missing_key_is_refused)
{
    validate(configmap_review("UPDATE", "other.json", "{}"));
    assert_int_equal(R.status, 200);
    assert_false(allowed());
    assert_contains(message(), "no data key \"profiles.json\"");
}

/* An update that drops the label would leave later edits unchecked. */
TEST(test_dropping_the_label_is_refused)
{
    char *text = read_shipped();

    R.unlabelled = 1;
    validate(configmap_review("UPDATE", KEY, text));
    free(text);
    assert_int_equal(R.status, 200);
    assert_false(allowed());
    assert_contains(message(), "keep the label rdma-webhook.io/profiles");
}

TEST(test_delete_is_allowed)
{
    validate(configmap_review("DELETE", KEY, NULL));
    assert_int_equal(R.status, 200);
    assert_true(allowed());
}

TEST(test_not_a_review_is_400)
{
    validate(strdup("{\"kind\":\"ConfigMap\"}"));
    assert_int_equal(R.status, 400);
    assert_contains(dynbuf_ptr(&R.out), "not an AdmissionReview");
}

int main(void)
{
#define T_(name) cmocka_unit_test_teardown(name, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_shipped_profiles_are_allowed),
        T_(test_invalid_version_is_refused_with_the_problems),
        T_(test_missing_key_is_refused),
        T_(test_dropping_the_label_is_refused),
        T_(test_delete_is_allowed),
        T_(test_not_a_review_is_400),
    };
#undef T_

    return cmocka_run_group_tests(tests, NULL, NULL);
}
