#include "review.h"

#include "arena.h"
#include "base64.h"
#include "jsonw.h"
#include "podjson.h"
#include "profiles.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <string.h>

#define REVIEW_V1      "admission.k8s.io/v1"
#define REVIEW_V1BETA1 "admission.k8s.io/v1beta1"
/* The response's own fields around the patch (the base64 estimate below
 * is up to 4 bytes short, which this covers too). */
#define REVIEW_ENVELOPE_TYPICAL 256

/* Summary fields go into log lines, so a cut must not split a character. */
static void review_copy(char *dst, size_t dstlen, const char *src)
{
    size_t n = src ? strnlen(src, dstlen - 1) : 0;

    if (src && src[n])
        n = utf8_cut(src, n);
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

static int review_bad(struct dynbuf *out, const char *reason)
{
    dynbuf_reset(out);
    dynbuf_addstr(out, reason);
    return 400;
}

static void review_write_warnings(struct jsonw *w, const struct mutate_warnings *ws)
{
    if (ws->n == 0)
        return;
    jsonw_raw(w, ",\"warnings\":[");
    for (size_t i = 0; i < ws->n; i++) {
        if (i)
            jsonw_raw(w, ",");
        jsonw_str(w, ws->text[i]);
    }
    jsonw_raw(w, "]");
}

int review_write_response(struct dynbuf *out, const char *api_version, const char *uid,
                          const struct mutate_result *res)
{
    struct jsonw w;
    int rc;

    /* The answer is about the base64 of the patch: room for it at once. */
    if (res && res->outcome == MUTATE_PATCHED)
        (void)dynbuf_reserve(out, dynbuf_len(&res->patch.out) / 3 * 4 + REVIEW_ENVELOPE_TYPICAL);
    jsonw_init(&w, out);
    jsonw_raw(&w, "{\"apiVersion\":");
    jsonw_str(&w, api_version);
    jsonw_raw(&w, ",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    jsonw_str(&w, uid);
    jsonw_raw(&w, ",\"allowed\":true");
    if (res && res->outcome == MUTATE_PATCHED && res->profile) {
        jsonw_raw(&w, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
        if (!w.err &&
            (rc = base64_append(out, dynbuf_ptr(&res->patch.out), dynbuf_len(&res->patch.out))))
            w.err = rc;
        jsonw_raw(&w, "\",\"auditAnnotations\":{\"profile\":");
        jsonw_str(&w, res->profile->name);
        jsonw_raw(&w, "}");
    }
    if (res)
        review_write_warnings(&w, &res->warnings);
    jsonw_raw(&w, "}}");
    return jsonw_error(&w);
}

/* Only a Pod CREATE is mutated; everything else is allowed untouched. */
static int review_is_pod_create(const cJSON *req)
{
    const cJSON *kind = podjson_member(req, "kind");
    const char *op = cJSON_GetStringValue(podjson_member(req, "operation"));
    const char *k = cJSON_GetStringValue(podjson_member(kind, "kind"));
    const char *group = cJSON_GetStringValue(podjson_member(kind, "group"));
    const char *sub = cJSON_GetStringValue(podjson_member(req, "subResource"));

    return op && strcmp(op, "CREATE") == 0 && k && strcmp(k, "Pod") == 0 && (!group || !*group) &&
           (!sub || !*sub);
}

static void review_summarize_request(const cJSON *req, const cJSON *object,
                                     struct review_summary *sum)
{
    const cJSON *meta = podjson_member(object, "metadata");
    const char *name = cJSON_GetStringValue(podjson_member(req, "name"));

    if (!name || !*name)
        name = cJSON_GetStringValue(podjson_member(meta, "name"));
    if (!name || !*name)
        name = cJSON_GetStringValue(podjson_member(meta, "generateName"));
    review_copy(sum->name, sizeof(sum->name), name);
    review_copy(sum->namespace_, sizeof(sum->namespace_),
                cJSON_GetStringValue(podjson_member(req, "namespace")));
}

static void review_summarize_result(const struct mutate_result *res, struct review_summary *sum)
{
    sum->ignored = 0;
    sum->reason = res->reason;
    review_copy(sum->profile, sizeof(sum->profile), res->profile ? res->profile->name : NULL);
    sum->ops = res->outcome == MUTATE_PATCHED ? res->patch.n_ops : 0;
    sum->warnings = res->warnings.n;
    for (size_t i = 0; i < res->warnings.n; i++)
        sum->warning_kinds[res->warnings.kind[i]]++;
    review_copy(sum->error, sizeof(sum->error), res->error);
}

/* Mutates the request's pod (if it is a Pod CREATE) and writes the response. */
static int review_answer(const cJSON *req, const char *api_version, const char *uid,
                         const struct profiles *ps, const struct mutate_hooks *hooks,
                         struct dynbuf *out, struct review_summary *sum)
{
    struct mutate_result res;
    struct mutate_input in = {.base = ""};
    int rc;

    mutate_result_init(&res, REVIEW_PATCH_MAX);
    if (review_is_pod_create(req)) {
        in.object = podjson_member(req, "object");
        review_summarize_request(req, in.object, sum);
        in.namespace_ = sum->namespace_;
        mutate_object(&in, ps, hooks, &res);
        review_summarize_result(&res, sum);
    }
    rc = review_write_response(out, api_version, uid, &res);
    mutate_result_free(&res);
    return rc;
}

/* Checks the envelope; returns NULL or the reason the body is refused. */
static const char *review_envelope(const cJSON *root, const char **api_version, const cJSON **req,
                                   const char **uid)
{
    const char *kind = cJSON_GetStringValue(podjson_member(root, "kind"));

    *api_version = cJSON_GetStringValue(podjson_member(root, "apiVersion"));
    if (!kind || strcmp(kind, "AdmissionReview") != 0 || !*api_version ||
        (strcmp(*api_version, REVIEW_V1) != 0 && strcmp(*api_version, REVIEW_V1BETA1) != 0))
        return "body is not an AdmissionReview (want apiVersion admission.k8s.io/v1 or v1beta1, "
               "kind AdmissionReview)";
    *req = podjson_member(root, "request");
    if (!cJSON_IsObject(*req))
        return "AdmissionReview has no request object";
    *uid = cJSON_GetStringValue(podjson_member(*req, "uid"));
    if (!*uid || !**uid)
        return "AdmissionReview request has no uid";
    if (strlen(*uid) >= sizeof(((struct review_summary *)0)->uid))
        return "AdmissionReview request uid is too long";
    return NULL;
}

int review_handle(const char *body, size_t len, const struct profiles *ps,
                  const struct mutate_hooks *hooks, struct dynbuf *out, struct review_summary *sum)
{
    const char *api_version, *uid, *why, *end = NULL;
    const cJSON *req;
    cJSON *root = NULL;
    int status = 400;

    memset(sum, 0, sizeof(*sum));
    sum->ignored = 1;
    if (!utf8_valid(body, len))
        return review_bad(out, "body is not valid UTF-8");
    root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    while (root && end < body + len && memchr(" \t\r\n", *end, 4))
        end++;
    if (root && end != body + len) {
        arena_json_delete(root);
        root = NULL;
    }
    if (!root) {
        dynbuf_reset(out);
        dynbuf_printf(out, "body is not JSON (error near byte %zu)",
                      end ? (size_t)(end - body) : (size_t)0);
        goto out;
    }
    why = review_envelope(root, &api_version, &req, &uid);
    if (why) {
        review_bad(out, why);
        goto out;
    }
    review_copy(sum->uid, sizeof(sum->uid), uid);
    status = review_answer(req, api_version, uid, ps, hooks, out, sum) ? 500 : 200;
    if (status == 500)
        review_bad(out, "response too large");
out:
    arena_json_delete(root);
    return status;
}
