#include "kube/metricsauth.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/jsonw.h"
#include "host/monotime.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define METRICSAUTH_MAGIC            0x4d415554u /* "MAUT" */
#define METRICSAUTH_HASH             32          /* SHA-256 */
#define METRICSAUTH_TOKENREVIEW_PATH "/apis/authentication.k8s.io/v1/tokenreviews"
#define METRICSAUTH_SAR_PATH         "/apis/authorization.k8s.io/v1/subjectaccessreviews"

struct metricsauth_entry {
    unsigned char hash[METRICSAUTH_HASH];
    enum metricsauth_verdict verdict;
    long long expires_ns; /* 0: an empty slot */
};

struct metricsauth {
    unsigned magic;
    struct metricsauth_config cfg;
    pthread_mutex_t mu; /* the cache */
    struct metricsauth_entry cache[METRICSAUTH_CACHE_MAX];
    atomic_ullong counts[METRICSAUTH_VERDICTS];
    atomic_ullong api_calls;
    atomic_int asking; /* checks waiting for the API now */
};

static long long metricsauth_now(const struct metricsauth *ma)
{
    return ma->cfg.now_ns ? ma->cfg.now_ns() : monotime_now();
}

int metricsauth_bearer(const char *authorization, const char **tok, size_t *len)
{
    const char *p = authorization, *end;

    if (!p || strncasecmp(p, "Bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
        return ERR_FAIL;
    for (p += 6; *p == ' ' || *p == '\t'; p++)
        ;
    for (end = p; *end && *end != ' ' && *end != '\t'; end++)
        if ((unsigned char)*end < 0x21 || (unsigned char)*end == 0x7f)
            return ERR_FAIL;
    for (const char *q = end; *q; q++)
        if (*q != ' ' && *q != '\t')
            return ERR_FAIL;
    if (end == p || (size_t)(end - p) > METRICSAUTH_TOKEN_MAX)
        return ERR_FAIL;
    *tok = p;
    *len = (size_t)(end - p);
    return ERR_OK;
}

/* ---- the answers ------------------------------------------------------- */

/* A JSON array of at most max strings, or absent; the count in *n. */
static int metricsauth_strings(const cJSON *a, size_t max, size_t *n)
{
    const cJSON *it;

    if (!a)
        return ERR_OK;
    if (!cJSON_IsArray(a))
        return ERR_FAIL;
    cJSON_ArrayForEach(it, a)
    {
        if (!cJSON_IsString(it) || ++*n > max)
            return ERR_FAIL;
    }
    return ERR_OK;
}

static void metricsauth_write_strings(struct jsonw *w, const cJSON *a)
{
    const cJSON *it;
    int first = 1;

    jsonw_raw(w, "[");
    cJSON_ArrayForEach(it, a)
    {
        if (!first)
            jsonw_raw(w, ",");
        jsonw_str(w, it->valuestring);
        first = 0;
    }
    jsonw_raw(w, "]");
}

/* status.user's types and bounds: username a non-empty string, uid a string
 * or absent, groups strings, extra an object of string arrays. */
static int metricsauth_user_ok(const cJSON *user)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(user, "username");
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(user, "uid");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(user, "extra"), *it;
    size_t groups = 0, values = 0;

    if (!cJSON_IsString(name) || !*name->valuestring || (uid && !cJSON_IsString(uid)) ||
        metricsauth_strings(cJSON_GetObjectItemCaseSensitive(user, "groups"),
                            METRICSAUTH_GROUPS_MAX, &groups) != ERR_OK ||
        (extra && !cJSON_IsObject(extra)))
        return ERR_FAIL;
    cJSON_ArrayForEach(it, extra)
    {
        if (!it->string || metricsauth_strings(it, METRICSAUTH_EXTRA_MAX, &values) != ERR_OK)
            return ERR_FAIL;
    }
    return ERR_OK;
}

/* The SubjectAccessReview for a user the TokenReview vouched for. */
static int metricsauth_write_sar(const cJSON *user, const char *path, struct dynbuf *out)
{
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(user, "uid");
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(user, "groups");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(user, "extra"), *it;
    struct jsonw w;
    int first = 1;

    jsonw_init(&w, out);
    jsonw_raw(&w, "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
                  "\"spec\":{\"user\":");
    jsonw_str(&w, cJSON_GetObjectItemCaseSensitive(user, "username")->valuestring);
    if (uid) {
        jsonw_raw(&w, ",\"uid\":");
        jsonw_str(&w, uid->valuestring);
    }
    if (groups) {
        jsonw_raw(&w, ",\"groups\":");
        metricsauth_write_strings(&w, groups);
    }
    if (extra) {
        jsonw_raw(&w, ",\"extra\":{");
        cJSON_ArrayForEach(it, extra)
        {
            if (!first)
                jsonw_raw(&w, ",");
            jsonw_key(&w, it->string);
            metricsauth_write_strings(&w, it);
            first = 0;
        }
        jsonw_raw(&w, "}");
    }
    jsonw_raw(&w, ",\"nonResourceAttributes\":{\"path\":");
    jsonw_str(&w, path);
    jsonw_raw(&w, ",\"verb\":\"get\"}}}");
    return jsonw_error(&w);
}

/* cJSON outside any admission's arena: these trees are freed here. */
static cJSON *metricsauth_parse(const char *body, size_t len, struct arena **a)
{
    *a = arena_suspend();
    return cJSON_ParseWithLength(body, len);
}

static void metricsauth_unparse(cJSON *doc, struct arena *a)
{
    cJSON_Delete(doc);
    arena_resume(a);
}

enum metricsauth_verdict metricsauth_read_tokenreview(const char *body, size_t len,
                                                      const char *path, struct dynbuf *out)
{
    struct arena *a;
    cJSON *doc = metricsauth_parse(body, len, &a);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "status");
    const cJSON *authn = cJSON_GetObjectItemCaseSensitive(st, "authenticated");
    const cJSON *user = cJSON_GetObjectItemCaseSensitive(st, "user");
    enum metricsauth_verdict v = METRICSAUTH_UNAVAILABLE;

    /* An unauthenticated answer may leave authenticated out (omitempty). */
    if (!cJSON_IsObject(st) || (authn && !cJSON_IsBool(authn)))
        goto out;
    if (!cJSON_IsTrue(authn)) {
        v = METRICSAUTH_BAD_TOKEN;
        goto out;
    }
    if (!cJSON_IsObject(user) || metricsauth_user_ok(user) != ERR_OK)
        goto out;
    if (metricsauth_write_sar(user, path, out) == ERR_OK)
        v = METRICSAUTH_ALLOWED;
out:
    metricsauth_unparse(doc, a);
    return v;
}

enum metricsauth_verdict metricsauth_read_sar(const char *body, size_t len)
{
    struct arena *a;
    cJSON *doc = metricsauth_parse(body, len, &a);
    const cJSON *allowed = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "status"), "allowed");
    enum metricsauth_verdict v = !cJSON_IsBool(allowed)  ? METRICSAUTH_UNAVAILABLE
                                 : cJSON_IsTrue(allowed) ? METRICSAUTH_ALLOWED
                                                         : METRICSAUTH_FORBIDDEN;

    metricsauth_unparse(doc, a);
    return v;
}

/* ---- the API ----------------------------------------------------------- */

/* What to tell the admin when a review's POST fails: refused (401, 403: the
 * webhook's own token or RBAC) or failed (anything else). */
struct metricsauth_reasons {
    const char *refused, *failed;
};

static const struct metricsauth_reasons metricsauth_tokenreview_reasons = {
    "TokenReview refused (401/403): the webhook's ClusterRole needs create on "
    "authentication.k8s.io tokenreviews (manifests/rbac.yaml)",
    "TokenReview failed: the API did not answer (timeout, transport, or a 5xx)"};
static const struct metricsauth_reasons metricsauth_sar_reasons = {
    "SubjectAccessReview refused (401/403): the webhook's ClusterRole needs create on "
    "authorization.k8s.io subjectaccessreviews (manifests/rbac.yaml)",
    "SubjectAccessReview failed: the API did not answer (timeout, transport, or a 5xx)"};

/* One POST; ERR_OK with the answer in resp when the API created the review
 * (201, or 200). */
static int metricsauth_post(struct metricsauth *ma, const char *path, const struct dynbuf *body,
                            struct dynbuf *resp, const char **why,
                            const struct metricsauth_reasons *reasons)
{
    const struct kubeapi_request req = {.method = "POST",
                                        .path = path,
                                        .body = dynbuf_ptr(body),
                                        .len = dynbuf_len(body),
                                        .timeout_ms = ma->cfg.timeout_ms};
    char err[ERR_LEN];
    long status = 0;

    atomic_fetch_add(&ma->api_calls, 1);
    dynbuf_reset(resp);
    if (ma->cfg.call(ma->cfg.call_ctx, &req, resp, &status, err, sizeof(err)) != ERR_OK)
        status = 0;
    if (status == 200 || status == 201)
        return ERR_OK;
    *why = status == 401 || status == 403 ? reasons->refused : reasons->failed;
    return ERR_FAIL;
}

static int metricsauth_tokenreview_body(const char *tok, size_t len, struct dynbuf *out)
{
    struct jsonw w;

    jsonw_init(&w, out);
    jsonw_raw(&w, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
                  "\"spec\":{\"token\":");
    jsonw_strn(&w, tok, len);
    jsonw_raw(&w, "}}");
    return jsonw_error(&w);
}

/* The two reviews, uncached. */
static enum metricsauth_verdict metricsauth_ask(struct metricsauth *ma, const char *tok, size_t len,
                                                const char **why)
{
    struct dynbuf body, resp;
    enum metricsauth_verdict v = METRICSAUTH_UNAVAILABLE;

    dynbuf_init(&body, METRICSAUTH_REQUEST_MAX);
    dynbuf_init(&resp, METRICSAUTH_RESPONSE_MAX);
    *why = "out of memory";
    if (metricsauth_tokenreview_body(tok, len, &body) != ERR_OK ||
        metricsauth_post(ma, METRICSAUTH_TOKENREVIEW_PATH, &body, &resp, why,
                         &metricsauth_tokenreview_reasons) != ERR_OK)
        goto cleanup;
    dynbuf_reset(&body);
    v = metricsauth_read_tokenreview(dynbuf_ptr(&resp), dynbuf_len(&resp), ma->cfg.path, &body);
    if (v == METRICSAUTH_UNAVAILABLE)
        *why = "TokenReview's answer unreadable or over the bounds";
    if (v != METRICSAUTH_ALLOWED)
        goto cleanup;
    v = METRICSAUTH_UNAVAILABLE;
    if (metricsauth_post(ma, METRICSAUTH_SAR_PATH, &body, &resp, why, &metricsauth_sar_reasons) !=
        ERR_OK)
        goto cleanup;
    v = metricsauth_read_sar(dynbuf_ptr(&resp), dynbuf_len(&resp));
    if (v == METRICSAUTH_UNAVAILABLE)
        *why = "SubjectAccessReview's answer unreadable";
cleanup:
    dynbuf_free(&body);
    dynbuf_free(&resp);
    return v;
}

/* ---- the cache --------------------------------------------------------- */

static int metricsauth_hash(const char *tok, size_t len, unsigned char out[METRICSAUTH_HASH])
{
    unsigned n = 0;

    return EVP_Digest(tok, len, out, &n, EVP_sha256(), NULL) == 1 && n == METRICSAUTH_HASH
               ? ERR_OK
               : ERR_FAIL;
}

/* The cached verdict for hash, or METRICSAUTH_VERDICTS for none. */
static enum metricsauth_verdict metricsauth_cached(struct metricsauth *ma,
                                                   const unsigned char *hash, long long now)
{
    enum metricsauth_verdict v = METRICSAUTH_VERDICTS;

    pthread_mutex_lock(&ma->mu);
    for (size_t i = 0; i < METRICSAUTH_CACHE_MAX; i++) {
        const struct metricsauth_entry *e = &ma->cache[i];

        if (e->expires_ns > now && memcmp(e->hash, hash, METRICSAUTH_HASH) == 0) {
            v = e->verdict;
            break;
        }
    }
    pthread_mutex_unlock(&ma->mu);
    return v;
}

/* Into the slot of the same token, or the one that expires first. */
static void metricsauth_keep(struct metricsauth *ma, const unsigned char *hash,
                             enum metricsauth_verdict v, long long now)
{
    struct metricsauth_entry *slot = &ma->cache[0];

    pthread_mutex_lock(&ma->mu);
    for (size_t i = 0; i < METRICSAUTH_CACHE_MAX; i++) {
        struct metricsauth_entry *e = &ma->cache[i];

        if (e->expires_ns && memcmp(e->hash, hash, METRICSAUTH_HASH) == 0) {
            slot = e;
            break;
        }
        if (e->expires_ns < slot->expires_ns)
            slot = e;
    }
    memcpy(slot->hash, hash, METRICSAUTH_HASH);
    slot->verdict = v;
    slot->expires_ns = now + ma->cfg.ttl_ms * MONOTIME_NS_PER_MS;
    pthread_mutex_unlock(&ma->mu);
}

static enum metricsauth_verdict metricsauth_decide(struct metricsauth *ma,
                                                   const char *authorization, const char **why)
{
    unsigned char hash[METRICSAUTH_HASH];
    const char *tok, *reason = NULL;
    enum metricsauth_verdict v;
    long long now;
    size_t len;

    if (metricsauth_bearer(authorization, &tok, &len) != ERR_OK)
        return METRICSAUTH_NO_TOKEN;
    if (metricsauth_hash(tok, len, hash) != ERR_OK) {
        reason = "cannot hash the token";
        v = METRICSAUTH_UNAVAILABLE;
        goto out;
    }
    now = metricsauth_now(ma);
    v = ma->cfg.ttl_ms > 0 ? metricsauth_cached(ma, hash, now) : METRICSAUTH_VERDICTS;
    if (v != METRICSAUTH_VERDICTS)
        return v;
    if (atomic_fetch_add(&ma->asking, 1) >= METRICSAUTH_CONCURRENT_MAX) {
        atomic_fetch_sub(&ma->asking, 1);
        reason = "busy: two checks already wait for the API";
        v = METRICSAUTH_UNAVAILABLE;
        goto out;
    }
    v = metricsauth_ask(ma, tok, len, &reason);
    atomic_fetch_sub(&ma->asking, 1);
    /* An unavailable API is asked again next time: it may be back. */
    if (v != METRICSAUTH_UNAVAILABLE && ma->cfg.ttl_ms > 0)
        metricsauth_keep(ma, hash, v, now);
out:
    if (v == METRICSAUTH_UNAVAILABLE && why)
        *why = reason;
    return v;
}

enum metricsauth_verdict metricsauth_check(struct metricsauth *ma, const char *authorization,
                                           const char **why)
{
    enum metricsauth_verdict v;

    assert(ma->magic == METRICSAUTH_MAGIC);
    v = metricsauth_decide(ma, authorization, why);
    atomic_fetch_add(&ma->counts[v], 1);
    return v;
}

unsigned metricsauth_status(enum metricsauth_verdict v)
{
    switch (v) {
    case METRICSAUTH_ALLOWED: return 200;
    case METRICSAUTH_NO_TOKEN:
    case METRICSAUTH_BAD_TOKEN: return 401;
    case METRICSAUTH_FORBIDDEN: return 403;
    default: return 503;
    }
}

const char *metricsauth_verdict_name(enum metricsauth_verdict v)
{
    static const char *const names[METRICSAUTH_VERDICTS] = {"allowed", "no_token", "bad_token",
                                                            "forbidden", "unavailable"};

    return (unsigned)v < METRICSAUTH_VERDICTS ? names[v] : "unknown";
}

unsigned long long metricsauth_count(const struct metricsauth *ma, enum metricsauth_verdict v)
{
    assert(ma->magic == METRICSAUTH_MAGIC && (unsigned)v < METRICSAUTH_VERDICTS);
    return atomic_load(&ma->counts[v]);
}

unsigned long long metricsauth_api_calls(const struct metricsauth *ma)
{
    assert(ma->magic == METRICSAUTH_MAGIC);
    return atomic_load(&ma->api_calls);
}

int metricsauth_init(struct metricsauth **out, const struct metricsauth_config *cfg, char *err,
                     size_t errlen)
{
    struct metricsauth *ma;

    *out = NULL;
    if (!cfg->call)
        return err_set(err, errlen, ERR_FAIL, "--metrics-auth kubernetes needs the API");
    ma = calloc(1, sizeof(*ma));
    if (!ma || pthread_mutex_init(&ma->mu, NULL) != 0) {
        free(ma);
        return err_set(err, errlen, ERR_NOMEM, "out of memory setting up --metrics-auth");
    }
    ma->cfg = *cfg;
    if (!ma->cfg.path)
        ma->cfg.path = "/metrics";
    if (ma->cfg.timeout_ms <= 0)
        ma->cfg.timeout_ms = METRICSAUTH_DEFAULT_TIMEOUT_MS;
    ma->magic = METRICSAUTH_MAGIC;
    *out = ma;
    return ERR_OK;
}

void metricsauth_stop(struct metricsauth **pma)
{
    struct metricsauth *ma = *pma;

    if (!ma)
        return;
    assert(ma->magic == METRICSAUTH_MAGIC);
    pthread_mutex_destroy(&ma->mu);
    ma->magic = 0;
    free(ma);
    *pma = NULL;
}
