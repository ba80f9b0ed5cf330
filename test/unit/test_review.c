/*
 * Unit tests for webhook/admission/review.c (docs/reference.md "HTTP statuses"; CONTRACT.md
 * "Response"): the 400s for bodies that are not an AdmissionReview, the 200 response shape (uid
 * echoed, allowed true, patchType iff patch, auditAnnotations.profile, apiVersion as asked), and
 * the patch decoded with OpenSSL's base64 and applied. Run from the repository root (make unit
 * does): it reads manifests/.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/err.h"
#include "admission/patch.h"
#include "admission/profiles.h"
#include "admission/review.h"
#include "base/utf8.h"

#define V1               "admission.k8s.io/v1"
#define V1BETA1          "admission.k8s.io/v1beta1"
#define REVIEW(api, req) "{'apiVersion':'" api "','kind':'AdmissionReview','request':" req "}"
#define REQ(op, kind, object)                                                                      \
    "{'uid':'705ab4f5-6393-11e8-b7cc-42010a800002','kind':{'group':'','version':'v1',"             \
    "'kind':'" kind "'},'resource':{'group':'','version':'v1','resource':'pods'},"                 \
    "'namespace':'ns','operation':'" op "','object':" object "}"
#define UID "705ab4f5-6393-11e8-b7cc-42010a800002"
#define GPU_POD(gpus)                                                                              \
    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'w-0','namespace':'ns','labels':"          \
    "{'training.kubeflow.org/operator-name':'pytorchjob-controller'}},'spec':{'containers':"       \
    "[{'name':'pytorch','image':'i','resources':{'limits':{'nvidia.com/gpu':'" gpus "'}}}]}}"
#define PLAIN_POD "{'metadata':{'name':'web'},'spec':{'containers':[{'name':'c'}]}}"

static struct {
    struct dynbuf out;
    struct review_summary sum;
    cJSON *resp; /* the parsed 200 body */
    int status;
} R;

static int teardown(void **state __attribute__((unused)))
{
    dynbuf_free(&R.out);
    cJSON_Delete(R.resp);
    memset(&R, 0, sizeof(R));
    return 0;
}

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* JSON written with ' for ". */
static cJSON *J(const char *text)
{
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    cJSON *j;

    assert_non_null(buf);
    for (size_t i = 0; i <= n; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i];
    j = cJSON_Parse(buf);
    free(buf);
    return j;
}

static const cJSON *response(void)
{
    return get(R.resp, "response");
}

/* Handles a body of len bytes; for 200 parses the answer and checks the
 * invariants every response must meet. */
static int handle_raw(const char *body, size_t len)
{
    const cJSON *resp, *it;
    static const char *const allowed_keys[] = {"uid",      "allowed",          "patchType", "patch",
                                               "warnings", "auditAnnotations", NULL};

    dynbuf_init(&R.out, 1 << 22);
    R.status = review_handle(body, len, support_shipped, NULL, NULL, &R.out, &R.sum);
    if (R.status != 200)
        return R.status;
    R.resp = cJSON_Parse(dynbuf_ptr(&R.out));
    if (!R.resp)
        fail_msg("200 body is not JSON: %s", dynbuf_ptr(&R.out));
    assert_string_equal(cJSON_GetStringValue(get(R.resp, "kind")), "AdmissionReview");
    resp = response();
    assert_true(cJSON_IsObject(resp));
    assert_true(cJSON_IsTrue(get(resp, "allowed")));
    /* The apiserver rejects a patch without patchType and the reverse. */
    assert_int_equal(get(resp, "patch") != NULL, get(resp, "patchType") != NULL);
    cJSON_ArrayForEach(it, resp)
    {
        size_t i;

        for (i = 0; allowed_keys[i] && strcmp(allowed_keys[i], it->string) != 0; i++)
            ;
        if (!allowed_keys[i])
            fail_msg("unexpected response field \"%s\"", it->string);
    }
    return R.status;
}

/* Same for a body written with ' for ". */
static int handle(const char *text)
{
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    int status;

    assert_non_null(buf);
    for (size_t i = 0; i <= n; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i];
    status = handle_raw(buf, n);
    free(buf);
    return status;
}

/* A 400 answer: one line of plain text; the server adds the newline. */
static void assert_bad_request(const char *reason_part)
{
    const char *body = dynbuf_ptr(&R.out);

    assert_int_equal(R.status, 400);
    assert_null(strchr(body, '\n'));
    assert_true(body[0] != '\0');
    if (reason_part)
        assert_contains(body, reason_part);
}

/* Decodes the response's patch (standard base64, OpenSSL's decoder). */
static cJSON *decoded_patch(void)
{
    const char *b64 = cJSON_GetStringValue(get(response(), "patch"));
    size_t n = strlen(b64);
    unsigned char *raw = malloc(n + 1);
    int len;
    cJSON *ops;

    assert_non_null(raw);
    assert_int_equal(n % 4, 0);
    len = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
    assert_true(len >= 0);
    len -= (n > 0 && b64[n - 1] == '=') + (n > 1 && b64[n - 2] == '=');
    raw[len] = '\0';
    ops = cJSON_Parse((char *)raw);
    if (!cJSON_IsArray(ops))
        fail_msg("decoded patch is not a JSON array: %s", raw);
    free(raw);
    return ops;
}

/* ---- 400s ---- */

TEST(test_not_json_is_400)
{
    handle("hello");
    assert_bad_request("JSON");
}

TEST(test_empty_body_is_400)
{
    handle_raw("", 0);
    assert_bad_request(NULL);
}

TEST(test_trailing_garbage_is_400)
{
    handle(REVIEW(V1, REQ("CREATE", "Pod", GPU_POD("8"))) " x");
    assert_bad_request(NULL);
}

TEST(test_second_document_is_400)
{
    handle(REVIEW(V1, REQ("CREATE", "Pod", GPU_POD("8"))) "{}");
    assert_bad_request(NULL);
}

TEST(test_trailing_whitespace_is_fine)
{
    assert_int_equal(handle(REVIEW(V1, REQ("CREATE", "Pod", GPU_POD("8"))) " \r\n\t"), 200);
}

TEST(test_invalid_utf8_is_400)
{
    handle(REVIEW(
        V1, REQ("CREATE", "Pod", "{'metadata':{'name':'bad\xff\xfe'},'spec':{'containers':[]}}")));
    assert_bad_request("UTF-8");
}

TEST(test_overlong_utf8_is_400)
{
    /* "\xc0\xaf" is an overlong '/', the classic filter bypass. */
    handle(REVIEW(V1, REQ("CREATE", "Pod", "{'metadata':{'name':'a\xc0\xaf'}}")));
    assert_bad_request("UTF-8");
}

TEST(test_json_array_is_400)
{
    handle("[]");
    assert_bad_request(NULL);
}

TEST(test_not_an_admission_review_is_400)
{
    handle(GPU_POD("8"));
    assert_bad_request("AdmissionReview");
}

TEST(test_wrong_api_version_is_400)
{
    handle(REVIEW("admission.k8s.io/v2", REQ("CREATE", "Pod", GPU_POD("8"))));
    assert_bad_request(NULL);
}

TEST(test_missing_api_version_is_400)
{
    handle("{'kind':'AdmissionReview','request':" REQ("CREATE", "Pod", GPU_POD("8")) "}");
    assert_bad_request(NULL);
}

TEST(test_missing_kind_is_400)
{
    handle("{'apiVersion':'" V1 "','request':" REQ("CREATE", "Pod", GPU_POD("8")) "}");
    assert_bad_request(NULL);
}

TEST(test_missing_request_is_400)
{
    handle("{'apiVersion':'" V1 "','kind':'AdmissionReview'}");
    assert_bad_request("request");
}

TEST(test_request_not_an_object_is_400)
{
    handle("{'apiVersion':'" V1 "','kind':'AdmissionReview','request':[]}");
    assert_bad_request("request");
}

TEST(test_missing_uid_is_400)
{
    handle(REVIEW(V1, "{'operation':'CREATE','kind':{'kind':'Pod'},'object':" GPU_POD("8") "}"));
    assert_bad_request("uid");
}

TEST(test_empty_uid_is_400)
{
    handle(REVIEW(
        V1, "{'uid':'','operation':'CREATE','kind':{'kind':'Pod'},'object':" GPU_POD("8") "}"));
    assert_bad_request("uid");
}

TEST(test_uid_not_a_string_is_400)
{
    handle(REVIEW(
        V1, "{'uid':42,'operation':'CREATE','kind':{'kind':'Pod'},'object':" GPU_POD("8") "}"));
    assert_bad_request("uid");
}

/* ---- 200 without a patch ---- */

static void assert_no_patch(void)
{
    assert_null(get(response(), "patch"));
    assert_null(get(response(), "patchType"));
    assert_null(get(response(), "auditAnnotations"));
}

TEST(test_update_is_allowed_untouched)
{
    assert_int_equal(handle(REVIEW(V1, REQ("UPDATE", "Pod", GPU_POD("8")))), 200);
    assert_string_equal(cJSON_GetStringValue(get(response(), "uid")), UID);
    assert_no_patch();
    assert_true(R.sum.ignored);
}

TEST(test_configmap_create_is_allowed_untouched)
{
    assert_int_equal(handle(REVIEW(V1, REQ("CREATE", "ConfigMap",
                                           "{'metadata':{'name':'cm'},'data':{'a':'b'}}"))),
                     200);
    assert_no_patch();
}

TEST(test_delete_is_allowed_untouched)
{
    assert_int_equal(
        handle(REVIEW(V1, "{'uid':'" UID "','kind':{'group':'','version':'v1','kind':'Pod'},"
                          "'operation':'DELETE','object':null,'oldObject':" GPU_POD("8") "}")),
        200);
    assert_string_equal(cJSON_GetStringValue(get(response(), "uid")), UID);
    assert_no_patch();
}

TEST(test_pod_in_other_group_is_untouched)
{
    assert_int_equal(handle(REVIEW(V1, "{'uid':'" UID "','kind':{'group':'example.com',"
                                       "'version':'v1','kind':'Pod'},'operation':'CREATE',"
                                       "'object':" GPU_POD("8") "}")),
                     200);
    assert_no_patch();
}

TEST(test_non_target_pod_create_has_no_patch)
{
    assert_int_equal(handle(REVIEW(V1, REQ("CREATE", "Pod", PLAIN_POD))), 200);
    assert_no_patch();
    assert_null(get(response(), "warnings"));
}

/* ---- 200 with a patch ---- */

TEST(test_pod_create_response_shape)
{
    assert_int_equal(handle(REVIEW(V1, REQ("CREATE", "Pod", GPU_POD("8")))), 200);
    assert_string_equal(cJSON_GetStringValue(get(R.resp, "apiVersion")), V1);
    assert_string_equal(cJSON_GetStringValue(get(response(), "uid")), UID);
    assert_string_equal(cJSON_GetStringValue(get(response(), "patchType")), "JSONPatch");
    assert_true(cJSON_IsString(get(response(), "patch")));
    assert_string_equal(cJSON_GetStringValue(get(get(response(), "auditAnnotations"), "profile")),
                        "roce-8card");
    assert_string_equal(
        cJSON_GetStringValue(get(get(response(), "auditAnnotations"), "selected-by")), "gpus");
}

TEST(test_pod_create_patch_decodes_and_applies)
{
    cJSON *doc, *ops;
    char err[ERR_LEN];
    const cJSON *ann;

    assert_int_equal(handle(REVIEW(V1, REQ("CREATE", "Pod", GPU_POD("8")))), 200);
    ops = decoded_patch();
    doc = J(GPU_POD("8"));
    assert_non_null(doc);
    if (patch_apply(&doc, ops, err, sizeof(err)))
        fail_msg("response patch does not apply: %s", err);
    ann = get(get(get(doc, "metadata"), "annotations"), "rdma-webhook.io/injected");
    assert_string_equal(cJSON_GetStringValue(ann), "roce-8card");
    assert_string_equal(cJSON_GetStringValue(get(get(doc, "spec"), "schedulerName")), "volcano");
    cJSON_Delete(ops);
    cJSON_Delete(doc);
}

TEST(test_v1beta1_is_answered_in_v1beta1)
{
    assert_int_equal(handle(REVIEW(V1BETA1, REQ("CREATE", "Pod", GPU_POD("8")))), 200);
    assert_string_equal(cJSON_GetStringValue(get(R.resp, "apiVersion")), V1BETA1);
    assert_string_equal(cJSON_GetStringValue(get(response(), "patchType")), "JSONPatch");
}

TEST(test_v1beta1_untouched_is_answered_in_v1beta1)
{
    assert_int_equal(handle(REVIEW(V1BETA1, REQ("UPDATE", "Pod", GPU_POD("8")))), 200);
    assert_string_equal(cJSON_GetStringValue(get(R.resp, "apiVersion")), V1BETA1);
}

TEST(test_dry_run_is_handled_like_any_request)
{
    assert_int_equal(handle(REVIEW(V1, "{'uid':'" UID "','kind':{'group':'','version':'v1',"
                                       "'kind':'Pod'},'operation':'CREATE','dryRun':true,"
                                       "'object':" GPU_POD("8") "}")),
                     200);
    assert_string_equal(cJSON_GetStringValue(get(response(), "patchType")), "JSONPatch");
    /* ...but the summary says so: nothing may be written for it (no Event). */
    assert_true(R.sum.dry_run);
}

/* What an Event needs: the controlling owner (not the other owners), the
 * replica labels, the warnings' text. */
#define OWNED_POD(refs)                                                                            \
    "{'metadata':{'name':'bert-worker-3','labels':{'training.kubeflow.org/replica-type':"          \
    "'worker','training.kubeflow.org/replica-index':'3'},'ownerReferences':" refs "},"             \
    "'spec':{'containers':[{'name':'pytorch','resources':{'limits':{'nvidia.com/gpu':'2'}}}]}}"
#define REF(kind, name, ctl)                                                                       \
    "{'apiVersion':'kubeflow.org/v1','kind':'" kind "','name':'" name "','uid':'u-" name "'" ctl "}"

TEST(test_summary_for_an_event)
{
    handle(REVIEW(V1, REQ("CREATE", "Pod",
                          OWNED_POD("[" REF("Other", "x", "") "," REF("PyTorchJob", "bert",
                                                                      ",'controller':true") "]"))));
    assert_false(R.sum.dry_run);
    assert_false(R.sum.name_generated);
    assert_false(R.sum.called_again);
    assert_string_equal(R.sum.owner.api_version, "kubeflow.org/v1");
    assert_string_equal(R.sum.owner.kind, "PyTorchJob");
    assert_string_equal(R.sum.owner.name, "bert");
    assert_string_equal(R.sum.owner.uid, "u-bert");
    assert_string_equal(R.sum.replica_type, "worker");
    assert_string_equal(R.sum.replica_index, "3");
    assert_int_equal(R.sum.warning_texts.n, R.sum.warnings);
    assert_int_equal(R.sum.warnings, 1);
    assert_contains(R.sum.warning_texts.text[0], "add a profile for 2 GPUs");
}

/* A pod that carries the webhook's annotation has been through it. */
TEST(test_summary_of_a_call_again)
{
    handle(REVIEW(V1, REQ("CREATE", "Pod",
                          "{'metadata':{'name':'p','annotations':{'rdma-webhook.io/injected':"
                          "'roce-8card'}},'spec':{'containers':[]}}")));
    assert_true(R.sum.called_again);
}

/* No controller, or one that lacks a field: no owner (never half of one). */
TEST(test_summary_without_a_usable_owner)
{
    handle(REVIEW(V1, REQ("CREATE", "Pod", OWNED_POD("[" REF("PyTorchJob", "bert", "") "]"))));
    assert_string_equal(R.sum.owner.kind, "");
    teardown(NULL);
    handle(REVIEW(V1, REQ("CREATE", "Pod",
                          OWNED_POD("[{'kind':'PyTorchJob','name':'b','controller':true}]"))));
    assert_string_equal(R.sum.owner.kind, "");
}

TEST(test_summary_of_a_mutation)
{
    handle(REVIEW(V1, REQ("CREATE", "Pod", GPU_POD("4"))));
    assert_string_equal(R.sum.uid, UID);
    assert_string_equal(R.sum.namespace_, "ns");
    assert_string_equal(R.sum.name, "w-0");
    assert_false(R.sum.ignored);
    assert_int_equal(mutate_reason_outcome(R.sum.reason), MUTATE_PATCHED);
    assert_int_equal(R.sum.reason, MUTATE_R_MUTATED);
    assert_non_null(R.sum.profile);
    assert_string_equal(R.sum.profile, "roce-4card");
    assert_non_null(R.sum.selected_by);
    assert_string_equal(R.sum.selected_by, "gpus");
    assert_true(R.sum.ops > 0);
}

TEST(test_summary_name_from_generate_name)
{
    handle(REVIEW(V1, REQ("CREATE", "Pod",
                          "{'metadata':{'generateName':'job-worker-'},'spec':{'containers':[]}}")));
    assert_string_equal(R.sum.name, "job-worker-");
    assert_true(R.sum.name_generated);
}

/* The summary goes into log lines: a long name is cut between characters. */
TEST(test_summary_name_cut_keeps_utf8_whole)
{
    char name[300], body[1024];

    memset(name, 'a', 254);
    memcpy(name + 254, "\xc3\xa9z", 4); /* U+00E9 straddles the 255-byte limit */
    snprintf(body, sizeof(body),
             REVIEW(V1, REQ("CREATE", "Pod",
                            "{'metadata':{'name':'%s'},"
                            "'spec':{'containers':[]}}")),
             name);
    handle(body);
    assert_int_equal(strlen(R.sum.name), 254);
    assert_true(utf8_valid(R.sum.name, strlen(R.sum.name)));
}

TEST(test_warnings_reach_the_response)
{
    const cJSON *w;

    assert_int_equal(handle(REVIEW(V1, REQ("CREATE", "Pod", GPU_POD("2")))), 200);
    w = get(response(), "warnings");
    assert_true(cJSON_IsArray(w));
    assert_int_equal(cJSON_GetArraySize(w), 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(w, 0)),
                        "rdma-webhook: add a profile for 2 GPUs on these nodes, or set "
                        "rdma-webhook.io/profile; no NCCL settings added");
    /* The log gets the same text whole; the summary keeps it past the result. */
    assert_int_equal(R.sum.warnings, 1);
    assert_string_equal(R.sum.warning_texts.full[0],
                        cJSON_GetStringValue(cJSON_GetArrayItem(w, 0)));
}

/* A pod left alone but warned gets the warnings annotation and nothing
 * else: no profile, so no auditAnnotations either. */
TEST(test_warned_skipped_pod_gets_only_the_warnings_annotation)
{
    cJSON *ops;
    const cJSON *op;
    cJSON *list;

    assert_int_equal(handle(REVIEW(V1, REQ("CREATE", "Pod", GPU_POD("2")))), 200);
    assert_string_equal(cJSON_GetStringValue(get(response(), "patchType")), "JSONPatch");
    assert_null(get(response(), "auditAnnotations"));
    ops = decoded_patch();
    assert_int_equal(cJSON_GetArraySize(ops), 1);
    op = cJSON_GetArrayItem(ops, 0);
    assert_string_equal(cJSON_GetStringValue(get(op, "op")), "add");
    /* GPU_POD has no annotations: the op adds the map with the one key. */
    assert_string_equal(cJSON_GetStringValue(get(op, "path")), "/metadata/annotations");
    list = cJSON_Parse(
        cJSON_GetStringValue(cJSON_GetObjectItem(get(op, "value"), "rdma-webhook.io/warnings")));
    assert_true(cJSON_IsArray(list));
    assert_int_equal(cJSON_GetArraySize(list), 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(list, 0)),
                        "add a profile for 2 GPUs on these nodes, or set rdma-webhook.io/profile; "
                        "no NCCL settings added");
    assert_int_equal(R.sum.reason, MUTATE_R_NO_PROFILE);
    assert_int_equal(R.sum.ops, 1);
    cJSON_Delete(list);
    cJSON_Delete(ops);
}

TEST(test_unreadable_pod_is_allowed_with_warning)
{
    const cJSON *w;

    assert_int_equal(
        handle(
            REVIEW(V1, REQ("CREATE", "Pod",
                           "{'metadata':{'name':'p','labels':{'training.kubeflow.org/"
                           "operator-name':'pytorchjob-controller'}},'spec':{'containers':{}}}"))),
        200);
    assert_true(cJSON_IsTrue(get(response(), "allowed")));
    assert_no_patch();
    w = get(response(), "warnings");
    assert_int_equal(cJSON_GetArraySize(w), 1);
    assert_int_equal(mutate_reason_outcome(R.sum.reason), MUTATE_ERROR);
    assert_int_equal(R.sum.reason, MUTATE_R_ERROR);
}

TEST(test_uid_with_special_characters_is_echoed_exactly)
{
    assert_int_equal(handle("{'apiVersion':'" V1 "','kind':'AdmissionReview','request':{'uid':"
                            "'a\\'b\\\\c\\u00e9','operation':'UPDATE','kind':{'kind':'Pod'}}}"),
                     200);
    assert_string_equal(cJSON_GetStringValue(get(response(), "uid")), "a\"b\\c\xc3\xa9");
}

/* ---- strict JSON and the uid ---- */

/* The raw bytes of the response's "uid" string token, quotes included
 * (cJSON would end a decoded uid at its first NUL). */
static void assert_raw_uid(const char *want_token)
{
    const char *at = strstr(dynbuf_ptr(&R.out), "\"response\":{\"uid\":");

    assert_non_null(at);
    at += strlen("\"response\":{\"uid\":");
    if (strncmp(at, want_token, strlen(want_token)) != 0 || at[strlen(want_token)] != ',')
        fail_msg("uid token: expected %s, got %.80s", want_token, at);
}

/* A review whose request.uid is the JSON string token uid_token. */
static int handle_uid_token(const char *uid_token)
{
    struct dynbuf b;
    int status;

    dynbuf_init(&b, 1 << 20);
    assert_int_equal(dynbuf_printf(&b,
                                   "{\"apiVersion\":\"" V1 "\",\"kind\":\"AdmissionReview\","
                                   "\"request\":{\"uid\":%s,\"operation\":\"UPDATE\","
                                   "\"kind\":{\"kind\":\"Pod\"}}}",
                                   uid_token),
                     0);
    status = handle_raw(dynbuf_ptr(&b), dynbuf_len(&b));
    dynbuf_free(&b);
    return status;
}

/* Any string is a uid: 80 bytes and more were refused with 400. */
TEST(test_long_uid_is_echoed_exactly)
{
    static const size_t lens[] = {79, 80, 81, 255, 4096, 100000};

    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        char *tok = malloc(lens[i] + 3);

        assert_non_null(tok);
        tok[0] = '"';
        for (size_t k = 0; k < lens[i]; k++)
            tok[1 + k] = (char)('a' + k % 26);
        tok[lens[i] + 1] = '"';
        tok[lens[i] + 2] = '\0';
        if (handle_uid_token(tok) != 200)
            fail_msg("uid of %zu bytes: %d %s", lens[i], R.status, dynbuf_ptr(&R.out));
        assert_raw_uid(tok);
        /* The log's copy is cut, on a character, with "...". */
        assert_true(strlen(R.sum.uid) < sizeof(R.sum.uid));
        if (lens[i] >= sizeof(R.sum.uid))
            assert_contains(R.sum.uid, "...");
        free(tok);
        teardown(NULL);
    }
}

/* The apiserver compares the answer's uid with its own byte for byte: a
 * \u0000 inside it must come back, not end it. */
TEST(test_uid_with_nul_is_echoed_exactly)
{
    assert_int_equal(handle_uid_token("\"ab\\u0000cd\""), 200);
    assert_raw_uid("\"ab\\u0000cd\"");
    teardown(NULL);
    assert_int_equal(handle_uid_token("\"\\u0000\""), 200);
    assert_raw_uid("\"\\u0000\"");
}

/* Escapes in the uid come back as the same characters (the written form
 * may differ: \/ is /, \u00e9 is the raw UTF-8). */
TEST(test_uid_escapes_round_trip)
{
    assert_int_equal(handle_uid_token("\"a\\/b\\u00e9\\ud83d\\ude00\\t\\u0001\""), 200);
    assert_raw_uid("\"a/b\xc3\xa9\xf0\x9f\x98\x80\\t\\u0001\"");
}

/* A NUL in a key: "uid\u0000" is another key than "uid" to the apiserver. */
TEST(test_key_with_nul_is_not_the_uid)
{
    handle("{'apiVersion':'" V1 "','kind':'AdmissionReview','request':{'uid\\u0000':'evil',"
           "'uid':'real','operation':'UPDATE','kind':{'kind':'Pod'}}}");
    assert_int_equal(R.status, 200);
    assert_raw_uid("\"real\"");
    teardown(NULL);
    handle("{'apiVersion':'" V1 "','kind':'AdmissionReview','request\\u0000':{'uid':'evil'},"
           "'request':{'uid':'real','operation':'UPDATE','kind':{'kind':'Pod'}}}");
    assert_int_equal(R.status, 200);
    assert_raw_uid("\"real\"");
    teardown(NULL);
    handle("{'apiVersion':'" V1 "','kind':'AdmissionReview','request':{'uid\\u0000':'evil',"
           "'operation':'UPDATE'}}");
    assert_bad_request("uid");
}

/* "admission.k8s.io/v1\u0000" is not admission.k8s.io/v1. */
TEST(test_envelope_value_with_nul_is_400)
{
    handle("{'apiVersion':'" V1 "\\u0000','kind':'AdmissionReview','request':{'uid':'u'}}");
    assert_bad_request("AdmissionReview");
    teardown(NULL);
    handle("{'apiVersion':'" V1 "','kind':'AdmissionReview\\u0000x','request':{'uid':'u'}}");
    assert_bad_request("AdmissionReview");
}

/* A NUL in the pod is the pod's business: answered as before. */
TEST(test_nul_in_the_pod_is_answered)
{
    assert_int_equal(handle(REVIEW(V1, REQ("CREATE", "Pod",
                                           "{'metadata':{'name':'w\\u0000x','labels':{'training."
                                           "kubeflow.org/operator-name':'pytorchjob-controller'}},"
                                           "'spec':{'containers':[{'name':'pytorch','resources':{"
                                           "'limits':{'nvidia.com/gpu':'8'}}}]}}"))),
                     200);
    assert_raw_uid("\"" UID "\"");
    assert_non_null(get(response(), "patch"));
}

/* The good review with byte c put raw at the marker @ (in a string or
 * between tokens). */
static int handle_with_byte(const char *text, char c)
{
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    int status;

    assert_non_null(buf);
    for (size_t i = 0; i <= n; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i] == '@' ? c : text[i];
    status = handle_raw(buf, n);
    free(buf);
    return status;
}

/* RFC 8259: U+0000 to U+001F must be escaped in strings, and only space,
 * tab, CR and LF may stand between tokens. cJSON took all of them. */
TEST(test_raw_control_characters_are_400)
{
    static const char *const where[] = {
        REVIEW(V1, REQ("CREATE", "Pod", "{'metadata':{'name':'a@b'}}")),           /* in a value */
        REVIEW(V1, REQ("CREATE", "Pod", "{'metadata':{'na@me':'ab'}}")),           /* in a key */
        "{'apiVersion':'" V1 "','kind':'AdmissionReview','request':{'uid':'u@'}}", /* the uid */
        REVIEW(V1, REQ("CREATE", "Pod", "{'metadata':@{'name':'ab'}}")), /* between tokens */
        "@" REVIEW(V1, REQ("CREATE", "Pod", GPU_POD("8"))),              /* before */
        REVIEW(V1, REQ("CREATE", "Pod", GPU_POD("8"))) "@",              /* after */
    };

    for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
        for (int c = 0; c < 0x20; c++) {
            int ws = c == ' ' || c == '\t' || c == '\r' || c == '\n';
            int status = handle_with_byte(where[w], (char)c);

            if (ws && w >= 3) {
                assert_int_equal(status, 200); /* whitespace between tokens */
            } else {
                if (status != 400)
                    fail_msg("byte 0x%02x at place %zu: expected 400, got %d", c, w, status);
                assert_bad_request("control character");
            }
            teardown(NULL);
        }
    }
}

/* What else cJSON read that RFC 8259 does not allow. */
TEST(test_non_rfc_json_is_400)
{
    static const char *const bodies[] = {
        "{'apiVersion':'" V1 "','kind':'AdmissionReview','n':01,'request':{'uid':'u'}}",
        "{'apiVersion':'" V1 "','kind':'AdmissionReview','n':1.,'request':{'uid':'u'}}",
        "{'apiVersion':'" V1 "','kind':'AdmissionReview','n':-01,'request':{'uid':'u'}}",
        "\xef\xbb\xbf{'apiVersion':'" V1 "','kind':'AdmissionReview','request':{'uid':'u'}}",
        "{'apiVersion':'" V1 "','kind':'AdmissionReview','request':{'uid':'u\\ud800'}}",
    };

    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        if (handle(bodies[i]) != 400)
            fail_msg("expected 400 for %s, got %d", bodies[i], R.status);
        assert_bad_request("not JSON");
        teardown(NULL);
    }
}

/* The reason names the byte, so a sender can find the problem. */
TEST(test_bad_json_reason_names_the_byte)
{
    handle_with_byte("{'apiVersion':'@'}", '\x01');
    assert_bad_request("not JSON");
    assert_contains(dynbuf_ptr(&R.out), "U+0001");
    assert_contains(dynbuf_ptr(&R.out), "byte 15");
}

int main(void)
{
#define T_(name) cmocka_unit_test_teardown(name, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_not_json_is_400),
        T_(test_empty_body_is_400),
        T_(test_trailing_garbage_is_400),
        T_(test_second_document_is_400),
        T_(test_trailing_whitespace_is_fine),
        T_(test_invalid_utf8_is_400),
        T_(test_overlong_utf8_is_400),
        T_(test_json_array_is_400),
        T_(test_not_an_admission_review_is_400),
        T_(test_wrong_api_version_is_400),
        T_(test_missing_api_version_is_400),
        T_(test_missing_kind_is_400),
        T_(test_missing_request_is_400),
        T_(test_request_not_an_object_is_400),
        T_(test_missing_uid_is_400),
        T_(test_empty_uid_is_400),
        T_(test_uid_not_a_string_is_400),
        T_(test_update_is_allowed_untouched),
        T_(test_configmap_create_is_allowed_untouched),
        T_(test_delete_is_allowed_untouched),
        T_(test_pod_in_other_group_is_untouched),
        T_(test_non_target_pod_create_has_no_patch),
        T_(test_pod_create_response_shape),
        T_(test_pod_create_patch_decodes_and_applies),
        T_(test_v1beta1_is_answered_in_v1beta1),
        T_(test_v1beta1_untouched_is_answered_in_v1beta1),
        T_(test_dry_run_is_handled_like_any_request),
        T_(test_summary_for_an_event),
        T_(test_summary_without_a_usable_owner),
        T_(test_summary_of_a_call_again),
        T_(test_summary_of_a_mutation),
        T_(test_summary_name_from_generate_name),
        T_(test_summary_name_cut_keeps_utf8_whole),
        T_(test_warnings_reach_the_response),
        T_(test_warned_skipped_pod_gets_only_the_warnings_annotation),
        T_(test_unreadable_pod_is_allowed_with_warning),
        T_(test_uid_with_special_characters_is_echoed_exactly),
        T_(test_long_uid_is_echoed_exactly),
        T_(test_uid_with_nul_is_echoed_exactly),
        T_(test_uid_escapes_round_trip),
        T_(test_key_with_nul_is_not_the_uid),
        T_(test_envelope_value_with_nul_is_400),
        T_(test_nul_in_the_pod_is_answered),
        T_(test_raw_control_characters_are_400),
        T_(test_non_rfc_json_is_400),
        T_(test_bad_json_reason_names_the_byte),
    };
#undef T_

    return cmocka_run_group_tests(tests, support_shipped_setup, support_shipped_teardown);
}
