#include "admission/review.h"

#include "base/arena.h"
#include "base/base64.h"
#include "base/err.h"
#include "base/jsoncheck.h"
#include "base/jsonraw.h"
#include "base/jsonw.h"
#include "admission/podjson.h"
#include "admission/profiles.h"
#include "base/utf8.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
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

/* The uid is echoed as it came, NULs and all: the apiserver compares it
 * with its own byte for byte. */
static int review_write(struct dynbuf *out, const char *api_version, const char *uid,
                        size_t uid_len, const struct mutate_result *res)
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
    jsonw_strn(&w, uid, uid_len);
    jsonw_raw(&w, ",\"allowed\":true");
    /* A pod left alone may still be patched: the warnings annotation. */
    if (res && res->outcome == MUTATE_PATCHED) {
        jsonw_raw(&w, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
        if (!w.err &&
            (rc = base64_append(out, dynbuf_ptr(&res->patch.out), dynbuf_len(&res->patch.out))))
            w.err = rc;
        jsonw_raw(&w, "\"");
    }
    if (res && res->outcome == MUTATE_PATCHED && res->profile) {
        jsonw_raw(&w, ",\"auditAnnotations\":{\"profile\":");
        jsonw_str(&w, res->profile->name);
        jsonw_raw(&w, ",\"selected-by\":");
        jsonw_str(&w, select_rule_name(res->rule));
        if (res->reason == MUTATE_R_REPORTED)
            jsonw_raw(&w, ",\"mode\":\"report\"");
        jsonw_raw(&w, "}");
    }
    if (res)
        review_write_warnings(&w, &res->warnings);
    jsonw_raw(&w, "}}");
    return jsonw_error(&w);
}

int review_write_response(struct dynbuf *out, const char *api_version, const char *uid,
                          const struct mutate_result *res)
{
    return review_write(out, api_version, uid, strlen(uid), res);
}

int review_is_pod_create(const cJSON *req)
{
    const cJSON *kind = podjson_member(req, "kind");
    const char *op = cJSON_GetStringValue(podjson_member(req, "operation"));
    const char *k = cJSON_GetStringValue(podjson_member(kind, "kind"));
    const char *group = cJSON_GetStringValue(podjson_member(kind, "group"));
    const char *sub = cJSON_GetStringValue(podjson_member(req, "subResource"));

    return op && strcmp(op, "CREATE") == 0 && k && strcmp(k, "Pod") == 0 && (!group || !*group) &&
           (!sub || !*sub);
}

/* Copies s into dst (dstlen bytes) when it is non-empty and fits whole. */
static int review_copy_str(char *dst, size_t dstlen, const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n >= dstlen)
        return 0;
    memcpy(dst, s, n + 1);
    return 1;
}

/* A non-empty string that fits dst whole; 0 when there is none. */
static int review_copy_whole(char *dst, size_t dstlen, const cJSON *v)
{
    return review_copy_str(dst, dstlen, cJSON_GetStringValue(v));
}

/* The ownerReference with controller: true, whole, or none. */
static void review_summarize_owner(const cJSON *meta, struct review_owner *o)
{
    const cJSON *ref;

    cJSON_ArrayForEach(ref, podjson_member(meta, "ownerReferences"))
    {
        if (!cJSON_IsTrue(podjson_member(ref, "controller")))
            continue;
        if (!review_copy_whole(o->api_version, sizeof(o->api_version),
                               podjson_member(ref, "apiVersion")) ||
            !review_copy_whole(o->name, sizeof(o->name), podjson_member(ref, "name")) ||
            !review_copy_whole(o->uid, sizeof(o->uid), podjson_member(ref, "uid")) ||
            !review_copy_whole(o->kind, sizeof(o->kind), podjson_member(ref, "kind")))
            o->kind[0] = '\0';
        return;
    }
}

static void review_summarize_request(const cJSON *req, const cJSON *object,
                                     struct review_summary *sum)
{
    const cJSON *meta = podjson_member(object, "metadata");
    const cJSON *labels = podjson_member(meta, "labels");
    const char *name = cJSON_GetStringValue(podjson_member(req, "name"));

    if (!name || !*name)
        name = cJSON_GetStringValue(podjson_member(meta, "name"));
    if (!name || !*name) {
        name = cJSON_GetStringValue(podjson_member(meta, "generateName"));
        sum->name_generated = name && *name;
    }
    review_copy(sum->name, sizeof(sum->name), name);
    review_copy(sum->namespace_, sizeof(sum->namespace_),
                cJSON_GetStringValue(podjson_member(req, "namespace")));
    sum->dry_run = cJSON_IsTrue(podjson_member(req, "dryRun"));
    sum->called_again =
        podjson_member(podjson_member(meta, "annotations"), MUTATE_ANNOTATION_INJECTED) != NULL;
    review_summarize_owner(meta, &sum->owner);
    review_copy(sum->replica_type, sizeof(sum->replica_type),
                cJSON_GetStringValue(podjson_member(labels, "training.kubeflow.org/replica-type")));
    review_copy(
        sum->replica_index, sizeof(sum->replica_index),
        cJSON_GetStringValue(podjson_member(labels, "training.kubeflow.org/replica-index")));
}

/* The job the author knows, when the Event should be on it rather than on
 * the pod's controlling owner: a TrainJob's pod is a Job's, whose author
 * never looks there; an MPIJob's launcher is a Job's too. Only a whole
 * reference replaces the owner (kubectl describe finds Events by uid). */
static void review_summarize_job(const struct mutate_job *job, struct review_owner *o)
{
    struct review_owner j;

    if (job->kind != MUTATE_JOB_TRAINJOB && job->kind != MUTATE_JOB_MPIJOB)
        return;
    memset(&j, 0, sizeof(j));
    if (review_copy_str(j.api_version, sizeof(j.api_version), job->api_version) &&
        review_copy_str(j.name, sizeof(j.name), job->name) &&
        review_copy_str(j.uid, sizeof(j.uid), job->uid) &&
        review_copy_str(j.kind, sizeof(j.kind), mutate_job_kind_name(job->kind)))
        *o = j;
}

static void review_summarize_result(const struct mutate_result *res, struct review_summary *sum)
{
    sum->ignored = 0;
    sum->reason = res->reason;
    review_copy(sum->profile, sizeof(sum->profile), res->profile ? res->profile->name : NULL);
    sum->selected_by = res->profile ? select_rule_name(res->rule) : NULL;
    sum->report_by = res->report_by;
    sum->report_note[0] = '\0';
    if (res->report_by && dynbuf_len(&res->report))
        report_note(dynbuf_ptr(&res->report), sum->report_note, sizeof(sum->report_note));
    /* A reported pod carries no rdma-webhook.io/injected: its report says
     * that an earlier call saw it. */
    if (res->report_seen)
        sum->called_again = 1;
    sum->ops = res->outcome == MUTATE_PATCHED ? res->patch.n_ops : 0;
    sum->warnings = res->warnings.n;
    sum->warning_texts = res->warnings;
    for (size_t i = 0; i < res->warnings.n; i++)
        sum->warning_kinds[res->warnings.kind[i]]++;
    review_copy(sum->error, sizeof(sum->error), res->error);
    review_summarize_job(&res->job, &sum->owner);
}

/* What the envelope holds, each string with its exact length. */
struct review_envelope {
    const char *kind, *api_version, *uid; /* NULL: absent, or not a string */
    size_t kind_len, api_version_len, uid_len;
    const cJSON *req;
    /* For the exact read: where kind and apiVersion are unescaped to (a
     * longer one is no match, whatever it says). */
    char kind_buf[32], api_version_buf[32];
};

/* Mutates the request's pod (if it is a Pod CREATE) and writes the response. */
static int review_answer(const struct review_envelope *env, const struct profiles *ps,
                         const struct mutate_hooks *hooks, const struct mutate_options *opts,
                         struct dynbuf *out, struct review_summary *sum)
{
    const cJSON *req = env->req;
    struct mutate_result res;
    struct mutate_input in = {.base = "", .opts = opts};
    int rc;

    mutate_result_init(&res, REVIEW_PATCH_MAX);
    if (review_is_pod_create(req)) {
        in.object = podjson_member(req, "object");
        review_summarize_request(req, in.object, sum);
        in.namespace_ = sum->namespace_;
        in.user = cJSON_GetStringValue(podjson_member(podjson_member(req, "userInfo"), "username"));
        mutate_object(&in, ps, hooks, &res);
        review_summarize_result(&res, sum);
    }
    rc = review_write(out, env->api_version, env->uid, env->uid_len, &res);
    mutate_result_free(&res);
    return rc;
}

static int review_is(const char *s, size_t n, const char *want)
{
    return s && n == strlen(want) && memcmp(s, want, n) == 0;
}

/* The envelope as cJSON reads it: exact when no string holds a NUL. */
static void review_read_envelope(const cJSON *root, struct review_envelope *env)
{
    env->kind = cJSON_GetStringValue(podjson_member(root, "kind"));
    env->api_version = cJSON_GetStringValue(podjson_member(root, "apiVersion"));
    env->req = podjson_member(root, "request");
    env->uid = cJSON_GetStringValue(podjson_member(env->req, "uid"));
    env->kind_len = env->kind ? strlen(env->kind) : 0;
    env->api_version_len = env->api_version ? strlen(env->api_version) : 0;
    env->uid_len = env->uid ? strlen(env->uid) : 0;
}

/* A short string member of the document, unescaped into buf. */
static const char *review_read_exact_str(struct jsonraw top, const char *key, char *buf,
                                         size_t buflen, size_t *len)
{
    struct jsonraw v;

    if (jsonraw_member(top, key, strlen(key), &v) < 0 ||
        (*len = jsonraw_string(v, buf, buflen)) == JSONRAW_NOT_STRING)
        return NULL;
    return buf;
}

/* The envelope read from the text itself, for a body with a \u0000 in some
 * string: cJSON would end the uid there, and take a member named
 * "uid\u0000" for "uid". The request object is cJSON's child at the index
 * of the exact member. The uid is unescaped into uid_buf. Returns 0, or a
 * dynbuf error. */
static int review_read_envelope_exact(const char *body, size_t len, const cJSON *root,
                                      struct dynbuf *uid_buf, struct review_envelope *env)
{
    struct jsonraw top = jsonraw_root(body, len), req, uid;
    long index;
    size_t n;
    int rc;

    env->kind =
        review_read_exact_str(top, "kind", env->kind_buf, sizeof(env->kind_buf), &env->kind_len);
    env->api_version = review_read_exact_str(top, "apiVersion", env->api_version_buf,
                                             sizeof(env->api_version_buf), &env->api_version_len);
    index = jsonraw_member(top, "request", strlen("request"), &req);
    env->req = index < 0 || index > INT_MAX ? NULL : cJSON_GetArrayItem(root, (int)index);
    env->uid = NULL;
    env->uid_len = 0;
    if (!cJSON_IsObject(env->req) || jsonraw_member(req, "uid", strlen("uid"), &uid) < 0 ||
        (n = jsonraw_string(uid, NULL, 0)) == JSONRAW_NOT_STRING)
        return 0;
    if ((rc = dynbuf_grow(uid_buf, n)) != 0)
        return rc;
    jsonraw_string(uid, uid_buf->mem, n);
    env->uid = uid_buf->mem;
    env->uid_len = n;
    return 0;
}

/* Checks the envelope; returns NULL or the reason the body is refused. A
 * checked envelope's api_version is one of the two constants. */
static const char *review_check_envelope(struct review_envelope *env)
{
    if (!review_is(env->kind, env->kind_len, "AdmissionReview"))
        env->api_version = NULL;
    else if (review_is(env->api_version, env->api_version_len, REVIEW_V1))
        env->api_version = REVIEW_V1;
    else if (review_is(env->api_version, env->api_version_len, REVIEW_V1BETA1))
        env->api_version = REVIEW_V1BETA1;
    else
        env->api_version = NULL;
    if (!env->api_version)
        return "body is not an AdmissionReview (want apiVersion admission.k8s.io/v1 or v1beta1, "
               "kind AdmissionReview)";
    if (!cJSON_IsObject(env->req))
        return "AdmissionReview has no request object";
    /* Any string is a uid (the apiserver's are UUIDs): no length limit but
     * the body's. */
    if (!env->uid || env->uid_len == 0)
        return "AdmissionReview request has no uid";
    return NULL;
}

/* Refuses a body that is not strict JSON (RFC 8259), naming the byte. */
static int review_check_json(const char *body, size_t len, struct jsoncheck_result *chk,
                             struct dynbuf *out)
{
    char why[JSONCHECK_WHY_LEN];

    if (jsoncheck_text(body, len, chk) == ERR_OK)
        return ERR_OK;
    jsoncheck_describe(chk, why, sizeof(why));
    dynbuf_reset(out);
    dynbuf_printf(out, "body is not JSON: %s", why);
    return ERR_FAIL;
}

/* The status for a response that was written (rc 0) or could not be: 500,
 * with the reason in out instead. */
static int review_status_of_write(int rc, struct dynbuf *out)
{
    if (rc == ERR_OK)
        return 200;
    review_bad(out, rc == ERR_NOMEM ? "out of memory" : "response too large");
    return 500;
}

/* Reads and checks the envelope: 0 with *root and env set, or the HTTP
 * status (400, 500) with the reason in out. *root is the caller's to free,
 * either way. */
static int review_open(const char *body, size_t len, struct dynbuf *out, struct dynbuf *uid_buf,
                       cJSON **root, struct review_envelope *env)
{
    struct jsoncheck_result chk;
    const char *why, *end = NULL;

    *root = NULL;
    if (review_check_json(body, len, &chk, out))
        return 400;
    *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!*root) {
        /* Strict JSON cJSON cannot read: out of memory, or a number longer
         * than the 63 characters cJSON 1.7.15 reads. */
        dynbuf_reset(out);
        dynbuf_printf(out, "body is JSON the parser cannot read (near byte %zu)",
                      end ? (size_t)(end - body) : (size_t)0);
        return 400;
    }
    if (chk.first_nul == JSONCHECK_NONE)
        review_read_envelope(*root, env);
    else if (review_read_envelope_exact(body, len, *root, uid_buf, env)) {
        review_bad(out, "out of memory");
        return 500;
    }
    why = review_check_envelope(env);
    return why ? review_bad(out, why) : 0;
}

int review_handle(const char *body, size_t len, const struct profiles *ps,
                  const struct mutate_hooks *hooks, const struct mutate_options *opts,
                  struct dynbuf *out, struct review_summary *sum)
{
    struct review_envelope env;
    struct dynbuf uid_buf;
    cJSON *root = NULL;
    int status, rc;

    memset(sum, 0, sizeof(*sum));
    sum->ignored = 1;
    dynbuf_init(&uid_buf, len);
    status = review_open(body, len, out, &uid_buf, &root, &env);
    if (status)
        goto out;
    utf8_shorten(env.uid, sizeof(sum->uid) - 1, sum->uid, sizeof(sum->uid));
    rc = review_answer(&env, ps, hooks, opts, out, sum);
    status = review_status_of_write(rc, out);
out:
    arena_json_delete(root);
    dynbuf_free(&uid_buf);
    return status;
}

/* The validating answer: allowed, or refused with the problems as the
 * status message (kubectl prints it after "denied the request: "). */
static int review_write_verdict(struct dynbuf *out, const struct review_envelope *env,
                                const char *problems)
{
    struct jsonw w;

    jsonw_init(&w, out);
    jsonw_raw(&w, "{\"apiVersion\":");
    jsonw_str(&w, env->api_version);
    jsonw_raw(&w, ",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    jsonw_strn(&w, env->uid, env->uid_len);
    if (!problems) {
        jsonw_raw(&w, ",\"allowed\":true}}");
        return jsonw_error(&w);
    }
    jsonw_raw(&w, ",\"allowed\":false,\"status\":{\"code\":422,\"reason\":\"Invalid\","
                  "\"message\":");
    jsonw_str(&w, problems);
    jsonw_raw(&w, "}}}");
    return jsonw_error(&w);
}

/* The profiles text of the review's request.object.data[key] as it stands
 * in the body: cJSON ends a string at a \u0000, and check-profiles reads
 * a file's NUL and what follows. Into *out (malloc'd, the caller frees) when
 * it is longer than have bytes; NULL otherwise (or when it cannot say: out
 * of memory, a key longer than jsonraw looks for). */
static char *review_exact_text(const char *body, size_t len, const char *key, size_t have,
                               size_t *n)
{
    static const char *const path[] = {"request", "object", "data"};
    struct jsonraw v = jsonraw_root(body, len);
    char *out;

    for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++)
        if (jsonraw_member(v, path[i], strlen(path[i]), &v) < 0)
            return NULL;
    if (strlen(key) > JSONRAW_KEY_MAX || jsonraw_member(v, key, strlen(key), &v) < 0 ||
        (*n = jsonraw_string(v, NULL, 0)) == JSONRAW_NOT_STRING || *n <= have ||
        !(out = malloc(*n)))
        return NULL;
    jsonraw_string(v, out, *n);
    return out;
}

/* The problems of a ConfigMap's profiles text under key, into problems (the
 * lines check-profiles prints); empty when it is valid. body is the
 * review's, for a text that holds a NUL. */
static void review_check_profiles(const cJSON *object, const char *key, const char *body,
                                  size_t len, struct dynbuf *problems)
{
    char *exact;
    size_t n;
    const cJSON *data = podjson_member(object, "data");
    const cJSON *text = podjson_member(data, key);
    const cJSON *labels = podjson_member(podjson_member(object, "metadata"), "labels");
    const char *label = cJSON_GetStringValue(podjson_member(labels, REVIEW_PROFILES_LABEL));
    struct profiles *ps;

    /* The webhook is called for an update that drops the label (the old
     * object still has it), and for none after: refusing it keeps every
     * later edit checked. A `kubectl apply` of a file without the label
     * would drop it. */
    if (!label || strcmp(label, "true") != 0) {
        dynbuf_printf(problems,
                      "keep the label %s: \"true\" on this ConfigMap: without it, later edits "
                      "are not checked when they are applied",
                      REVIEW_PROFILES_LABEL);
        return;
    }
    if (!text) {
        dynbuf_printf(problems,
                      "the ConfigMap has no data key \"%s\", where the webhook reads "
                      "its profiles (--profiles-key)",
                      key);
        return;
    }
    if (!cJSON_IsString(text)) {
        dynbuf_printf(problems, "data key \"%s\" is not a string", key);
        return;
    }
    dynbuf_printf(problems, "%s is not valid:\n", key);
    /* The whole text, NUL and all, as check-profiles reads the same file. */
    exact = review_exact_text(body, len, key, strlen(text->valuestring), &n);
    ps = exact ? profiles_parse(exact, n, problems)
               : profiles_parse(text->valuestring, strlen(text->valuestring), problems);
    free(exact);
    if (ps)
        dynbuf_reset(problems);
    else if (dynbuf_len(problems) && dynbuf_ptr(problems)[dynbuf_len(problems) - 1] == '\n')
        dynbuf_truncate(problems, dynbuf_len(problems) - 1);
    profiles_free(ps);
}

int review_handle_profiles(const char *body, size_t len, const char *key, struct dynbuf *out,
                           struct review_verdict *v)
{
    struct review_envelope env;
    struct dynbuf uid_buf, problems;
    const char *op;
    cJSON *root = NULL;
    int status, rc;

    memset(v, 0, sizeof(*v));
    v->allowed = 1;
    dynbuf_init(&uid_buf, len);
    dynbuf_init(&problems, REVIEW_PROBLEMS_MAX);
    status = review_open(body, len, out, &uid_buf, &root, &env);
    if (status)
        goto out;
    utf8_shorten(env.uid, sizeof(v->uid) - 1, v->uid, sizeof(v->uid));
    op = cJSON_GetStringValue(podjson_member(env.req, "operation"));
    review_copy(v->namespace_, sizeof(v->namespace_),
                cJSON_GetStringValue(podjson_member(env.req, "namespace")));
    review_copy(v->name, sizeof(v->name), cJSON_GetStringValue(podjson_member(env.req, "name")));
    /* A delete, or a dry run's object, needs no check beyond the operation. */
    if (op && (strcmp(op, "CREATE") == 0 || strcmp(op, "UPDATE") == 0))
        review_check_profiles(podjson_member(env.req, "object"), key, body, len, &problems);
    v->allowed = dynbuf_len(&problems) == 0;
    review_copy(v->problems, sizeof(v->problems), dynbuf_ptr(&problems));
    rc = review_write_verdict(out, &env, v->allowed ? NULL : dynbuf_ptr(&problems));
    status = review_status_of_write(rc, out);
out:
    arena_json_delete(root);
    dynbuf_free(&uid_buf);
    dynbuf_free(&problems);
    return status;
}
