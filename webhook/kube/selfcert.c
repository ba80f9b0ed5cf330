#include "kube/selfcert.h"

#include "base/base64.h"
#include "base/err.h"
#include "host/fsutil.h"
#include "host/monotime.h"
#include "kube/lastgood.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SELFCERT_MAGIC        0x73636572u /* "scer" */
#define SELFCERT_ATTEMPTS     4
#define SELFCERT_PEM_BEGIN    "-----BEGIN CERTIFICATE-----"
#define SELFCERT_PEM_END      "-----END CERTIFICATE-----"
#define SELFCERT_MWC_PATH     "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
#define SELFCERT_VWC_PATH     "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
#define SELFCERT_DEFAULT_LEAF 365u
#define SELFCERT_DEFAULT_CA   3650u

struct selfcert {
    unsigned magic;
    struct log *log;
    struct selfcert_config cfg;
    char secret_path[512];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int stop;
    pthread_t thread;
    int locks, started;
    unsigned long generation; /* CA names apart: rdma-webhook-ca-<unix seconds> */
};

/* ---- the decision ---- */

int selfcert_due(long long not_before, long long not_after, long long now)
{
    long long life = not_after - not_before;

    return life <= 0 || not_after - now < life / 3;
}

static enum selfcert_action selfcert_plan_ca(const struct selfcert_view *v, long long now,
                                             long long overlap_s)
{
    long long since = v->bundle_at < 0 ? overlap_s : now - v->bundle_at;

    if (v->has_next)
        return since >= overlap_s && v->configs_in_sync ? SELFCERT_SWITCH_CA : SELFCERT_KEEP;
    if (v->bundle_count > 1)
        return since >= overlap_s ? SELFCERT_DROP_OLD_CA : SELFCERT_KEEP;
    if (v->rotate == 2 || selfcert_due(v->ca_not_before, v->ca_not_after, now))
        return SELFCERT_ADD_CA;
    return SELFCERT_KEEP;
}

/* A Secret with a serving pair but no CA key of ours (made by gen-certs or
 * cert-manager before this mode): adopted without a moment of distrust, by
 * the CA rotation's steps: a new CA joins the bundle that trusts the pair
 * serving now, then signs. */
static enum selfcert_action selfcert_plan_adopt(const struct selfcert_view *v, long long now,
                                                long long overlap_s)
{
    long long since = v->bundle_at < 0 ? overlap_s : now - v->bundle_at;

    if (!v->leaf_usable || v->bundle_count < 1)
        return SELFCERT_CREATE;
    if (!v->has_next)
        return SELFCERT_ADD_CA;
    return since >= overlap_s && v->configs_in_sync ? SELFCERT_SWITCH_CA : SELFCERT_KEEP;
}

enum selfcert_action selfcert_plan(const struct selfcert_view *v, long long now,
                                   long long overlap_s)
{
    enum selfcert_action a;

    if (!v->exists)
        return SELFCERT_CREATE;
    if (!v->signer_ok)
        return selfcert_plan_adopt(v, now, overlap_s);
    /* A serving pair that cannot serve is fixed first, under the CA that
     * signs now: the bundle already holds it. */
    if (!v->leaf_ok)
        return SELFCERT_RENEW_LEAF;
    a = selfcert_plan_ca(v, now, overlap_s);
    if (a != SELFCERT_KEEP)
        return a;
    if (v->rotate == 1 || selfcert_due(v->leaf_not_before, v->leaf_not_after, now))
        return SELFCERT_RENEW_LEAF;
    return SELFCERT_KEEP;
}

const char *selfcert_action_name(enum selfcert_action a)
{
    static const char *const names[] = {"keep",   "create",    "renew serving certificate",
                                        "add CA", "switch CA", "drop old CA"};

    return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

/* ---- the bundle ---- */

/* The i-th block's span [*b, *e) (e past the END line and its newline). */
static int selfcert_bundle_walk(const char *p, size_t len, int want, const char **b, const char **e)
{
    const char *end = p + len, *cur = p;
    int n = 0;

    for (;;) {
        const char *s =
            memmem(cur, (size_t)(end - cur), SELFCERT_PEM_BEGIN, sizeof(SELFCERT_PEM_BEGIN) - 1);
        const char *t;

        if (s == NULL)
            return n;
        t = memmem(s, (size_t)(end - s), SELFCERT_PEM_END, sizeof(SELFCERT_PEM_END) - 1);
        if (t == NULL)
            return -1;
        t += sizeof(SELFCERT_PEM_END) - 1;
        if (t < end && *t == '\n')
            t++;
        if (n == want) {
            *b = s;
            *e = t;
        }
        n++;
        cur = t;
    }
}

int selfcert_bundle_count(const char *bundle, size_t len)
{
    const char *b, *e;

    return selfcert_bundle_walk(bundle, len, -1, &b, &e);
}

int selfcert_bundle_item(const char *bundle, size_t len, int i, struct dynbuf *out)
{
    const char *b = NULL, *e = NULL;
    int n = selfcert_bundle_walk(bundle, len, i, &b, &e);

    if (n < 0 || i < 0 || i >= n)
        return ERR_FAIL;
    return dynbuf_add(out, b, (size_t)(e - b));
}

/* 1 when bundle holds a block byte for byte equal to pem's first. */
static int selfcert_bundle_has(const struct dynbuf *bundle, const struct dynbuf *pem)
{
    struct dynbuf one;
    int n = selfcert_bundle_count(dynbuf_ptr(bundle), bundle->len), found = 0;

    if (pem->len == 0)
        return 0;
    dynbuf_init(&one, SELFCERT_PEM_MAX);
    for (int i = 0; i < n && !found; i++) {
        dynbuf_reset(&one);
        found = selfcert_bundle_item(dynbuf_ptr(bundle), bundle->len, i, &one) == ERR_OK &&
                one.len <= pem->len && memcmp(one.mem, pem->mem, one.len) == 0;
    }
    dynbuf_free(&one);
    return found;
}

/* ---- the Secret ---- */

void selfcert_secret_init(struct selfcert_secret *s)
{
    memset(s, 0, sizeof(*s));
    dynbuf_init(&s->tls_crt, SELFCERT_PEM_MAX);
    dynbuf_init(&s->tls_key, SELFCERT_PEM_MAX);
    dynbuf_init(&s->ca_crt, SELFCERT_PEM_MAX);
    dynbuf_init(&s->ca_key, SELFCERT_PEM_MAX);
    dynbuf_init(&s->signer_crt, SELFCERT_PEM_MAX);
    dynbuf_init(&s->next_crt, SELFCERT_PEM_MAX);
    dynbuf_init(&s->next_key, SELFCERT_PEM_MAX);
    s->bundle_at = -1;
}

void selfcert_secret_free(struct selfcert_secret *s)
{
    dynbuf_free(&s->tls_crt);
    dynbuf_free(&s->tls_key);
    dynbuf_free(&s->ca_crt);
    dynbuf_free(&s->ca_key);
    dynbuf_free(&s->signer_crt);
    dynbuf_free(&s->next_crt);
    dynbuf_free(&s->next_key);
}

/* The Secret's keys and where each goes, in one table for parse and write. */
static struct dynbuf *selfcert_slot(struct selfcert_secret *s, int i, const char **key)
{
    static const char *const keys[] = {"tls.crt",    "tls.key",     "ca.crt",     "ca.key",
                                       "signer.crt", "next-ca.crt", "next-ca.key"};
    struct dynbuf *slots[] = {&s->tls_crt,    &s->tls_key,  &s->ca_crt,  &s->ca_key,
                              &s->signer_crt, &s->next_crt, &s->next_key};

    if (i < 0 || (size_t)i >= sizeof(keys) / sizeof(keys[0]))
        return NULL;
    *key = keys[i];
    return slots[i];
}

static int selfcert_parse_data(const cJSON *data, struct selfcert_secret *s, char *err,
                               size_t errlen)
{
    const char *key;
    struct dynbuf *slot;

    for (int i = 0; (slot = selfcert_slot(s, i, &key)) != NULL; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, key);
        int rc;

        if (v == NULL)
            continue;
        if (!cJSON_IsString(v))
            return err_set(err, errlen, ERR_FAIL, "data.%s is not a string", key);
        rc = base64_decode_append(slot, v->valuestring, strlen(v->valuestring));
        if (rc != ERR_OK)
            return err_set(err, errlen, ERR_FAIL, "data.%s is %s", key,
                           rc == ERR_FAIL ? "not base64" : "too large");
    }
    return ERR_OK;
}

static void selfcert_parse_annotations(const cJSON *ann, struct selfcert_secret *s)
{
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(ann, SELFCERT_ANN_BUNDLE_AT);
    const cJSON *rot = cJSON_GetObjectItemCaseSensitive(ann, SELFCERT_ANN_ROTATE);

    if (cJSON_IsString(at))
        s->bundle_at = lastgood_parse_time(at->valuestring);
    if (cJSON_IsString(rot))
        s->rotate = strcmp(rot->valuestring, "ca") == 0     ? 2
                    : strcmp(rot->valuestring, "leaf") == 0 ? 1
                                                            : 0;
}

int selfcert_secret_parse(const char *json, size_t len, struct selfcert_secret *s, char *err,
                          size_t errlen)
{
    cJSON *doc = cJSON_ParseWithLength(json, len);
    const cJSON *meta, *rv;
    int rc = ERR_OK;

    meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
    rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");
    if (!cJSON_IsObject(doc) || !cJSON_IsObject(meta)) {
        rc = err_set(err, errlen, ERR_FAIL, "not a Secret (no metadata)");
        goto out;
    }
    if (cJSON_IsString(rv))
        snprintf(s->resource_version, sizeof(s->resource_version), "%s", rv->valuestring);
    selfcert_parse_annotations(cJSON_GetObjectItemCaseSensitive(meta, "annotations"), s);
    rc = selfcert_parse_data(cJSON_GetObjectItemCaseSensitive(doc, "data"), s, err, errlen);
    s->exists = rc == ERR_OK;
out:
    cJSON_Delete(doc);
    return rc;
}

/* ---- the view ---- */

static int selfcert_facts_of(const struct selfcert_pki *pki, const struct dynbuf *crt,
                             const struct dynbuf *issuer, const struct dynbuf *key,
                             struct selfcert_facts *f)
{
    char err[ERR_LEN];

    memset(f, 0, sizeof(*f));
    if (crt->len == 0)
        return ERR_FAIL;
    return pki->facts(crt->mem, crt->len, issuer ? dynbuf_ptr(issuer) : NULL,
                      issuer ? issuer->len : 0, key ? dynbuf_ptr(key) : NULL, key ? key->len : 0, f,
                      err, sizeof(err));
}

static int selfcert_valid_now(const struct selfcert_facts *f, long long now)
{
    return f->not_before <= now && now < f->not_after;
}

void selfcert_view_of(const struct selfcert_pki *pki, const struct selfcert_secret *s,
                      long long now, struct selfcert_view *v)
{
    struct selfcert_facts ca, leaf, next;

    memset(v, 0, sizeof(*v));
    v->exists = s->exists;
    v->bundle_at = s->bundle_at;
    v->rotate = s->rotate;
    v->bundle_count = selfcert_bundle_count(dynbuf_ptr(&s->ca_crt), s->ca_crt.len);
    if (!s->exists)
        return;
    v->leaf_usable = s->tls_key.len > 0 &&
                     selfcert_facts_of(pki, &s->tls_crt, NULL, &s->tls_key, &leaf) == ERR_OK &&
                     leaf.key_ok && selfcert_valid_now(&leaf, now);
    v->has_next = s->next_key.len > 0 &&
                  selfcert_facts_of(pki, &s->next_crt, NULL, &s->next_key, &next) == ERR_OK &&
                  next.key_ok && selfcert_valid_now(&next, now) &&
                  selfcert_bundle_has(&s->ca_crt, &s->next_crt);
    v->signer_ok =
        s->ca_key.len > 0 &&
        selfcert_facts_of(pki, &s->signer_crt, &s->signer_crt, &s->ca_key, &ca) == ERR_OK &&
        ca.key_ok && selfcert_valid_now(&ca, now) &&
        selfcert_bundle_has(&s->ca_crt, &s->signer_crt);
    if (!v->signer_ok)
        return;
    v->ca_not_before = ca.not_before;
    v->ca_not_after = ca.not_after;
    v->leaf_ok =
        s->tls_key.len > 0 &&
        selfcert_facts_of(pki, &s->tls_crt, &s->signer_crt, &s->tls_key, &leaf) == ERR_OK &&
        leaf.key_ok && leaf.signed_by && selfcert_valid_now(&leaf, now);
    v->leaf_not_before = leaf.not_before;
    v->leaf_not_after = leaf.not_after;
}

/* ---- acting on a plan ---- */

static void selfcert_ca_cn(struct selfcert *sc, char *cn, size_t len)
{
    snprintf(cn, len, "rdma-webhook-ca-%lld-%lu", (long long)time(NULL), ++sc->generation);
}

static int selfcert_new_leaf(struct selfcert *sc, struct selfcert_secret *s, char *err,
                             size_t errlen)
{
    dynbuf_reset(&s->tls_crt);
    dynbuf_reset(&s->tls_key);
    return sc->cfg.pki.make_leaf(s->signer_crt.mem, s->signer_crt.len, s->ca_key.mem, s->ca_key.len,
                                 sc->cfg.service, sc->cfg.service_ns,
                                 (long long)sc->cfg.leaf_days * 86400, &s->tls_crt, &s->tls_key,
                                 err, errlen);
}

static int selfcert_copy(struct dynbuf *to, const struct dynbuf *from)
{
    dynbuf_reset(to);
    return dynbuf_add(to, dynbuf_ptr(from), from->len);
}

/* The new state of s for action a, in place; bundle_at is set when the
 * bundle changes. */
static int selfcert_apply(struct selfcert *sc, enum selfcert_action a, struct selfcert_secret *s,
                          long long now, char *err, size_t errlen)
{
    long long ca_secs = (long long)sc->cfg.ca_days * 86400;
    char cn[64];
    int rc = ERR_OK;

    switch (a) {
    case SELFCERT_CREATE:
        selfcert_ca_cn(sc, cn, sizeof(cn));
        dynbuf_reset(&s->signer_crt);
        dynbuf_reset(&s->ca_key);
        dynbuf_reset(&s->next_crt);
        dynbuf_reset(&s->next_key);
        if ((rc = sc->cfg.pki.make_ca(cn, ca_secs, &s->signer_crt, &s->ca_key, err, errlen)) ||
            (rc = selfcert_copy(&s->ca_crt, &s->signer_crt)))
            break;
        s->bundle_at = now;
        rc = selfcert_new_leaf(sc, s, err, errlen);
        break;
    case SELFCERT_RENEW_LEAF: rc = selfcert_new_leaf(sc, s, err, errlen); break;
    case SELFCERT_ADD_CA:
        selfcert_ca_cn(sc, cn, sizeof(cn));
        dynbuf_reset(&s->next_crt);
        dynbuf_reset(&s->next_key);
        /* A bundle from elsewhere may lack its last newline. */
        if (s->ca_crt.len > 0 && s->ca_crt.mem[s->ca_crt.len - 1] != '\n' &&
            (rc = dynbuf_addc(&s->ca_crt, '\n')))
            break;
        if ((rc = sc->cfg.pki.make_ca(cn, ca_secs, &s->next_crt, &s->next_key, err, errlen)) ||
            (rc = dynbuf_add(&s->ca_crt, s->next_crt.mem, s->next_crt.len)))
            break;
        s->bundle_at = now;
        break;
    case SELFCERT_SWITCH_CA:
        if ((rc = selfcert_copy(&s->signer_crt, &s->next_crt)) ||
            (rc = selfcert_copy(&s->ca_key, &s->next_key)))
            break;
        dynbuf_reset(&s->next_crt);
        dynbuf_reset(&s->next_key);
        /* The bundle does not change; the old CA stays for another overlap
         * while the replicas load the new pair. */
        s->bundle_at = now;
        rc = selfcert_new_leaf(sc, s, err, errlen);
        break;
    case SELFCERT_DROP_OLD_CA:
        rc = selfcert_copy(&s->ca_crt, &s->signer_crt);
        s->bundle_at = now;
        break;
    case SELFCERT_KEEP: break;
    }
    if (rc != ERR_OK && err[0] == '\0')
        err_set(err, errlen, rc, "cannot build the new Secret");
    s->rotate = 0;
    return rc;
}

/* ---- the Secret's JSON ---- */

static int selfcert_set_string(cJSON *obj, const char *key, const char *val)
{
    cJSON *v = cJSON_CreateString(val);

    if (v == NULL)
        return ERR_NOMEM;
    if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL)
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v) ? ERR_OK : ERR_NOMEM;
    return cJSON_AddItemToObject(obj, key, v) ? ERR_OK : ERR_NOMEM;
}

static cJSON *selfcert_child(cJSON *obj, const char *key)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (cJSON_IsObject(c))
        return c;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    return cJSON_AddObjectToObject(obj, key);
}

static int selfcert_put_data(cJSON *data, struct selfcert_secret *s)
{
    struct dynbuf b64;
    const char *key;
    struct dynbuf *slot;
    int rc = ERR_OK;

    dynbuf_init(&b64, 2 * SELFCERT_PEM_MAX);
    for (int i = 0; rc == ERR_OK && (slot = selfcert_slot(s, i, &key)) != NULL; i++) {
        cJSON_DeleteItemFromObjectCaseSensitive(data, key);
        if (slot->len == 0)
            continue;
        dynbuf_reset(&b64);
        rc = base64_append(&b64, slot->mem, slot->len);
        if (rc == ERR_OK)
            rc = selfcert_set_string(data, key, dynbuf_ptr(&b64));
    }
    dynbuf_free(&b64);
    return rc;
}

/* The Secret to write, into body: the one read (doc; NULL for a create)
 * with its data and annotations replaced, so an admin's labels stay. */
static int selfcert_secret_body(struct selfcert *sc, cJSON *doc, struct selfcert_secret *s,
                                struct dynbuf *body)
{
    cJSON *own = doc ? NULL : cJSON_CreateObject(), *root = doc ? doc : own, *meta, *ann, *data;
    char at[32];
    char *text = NULL;
    int rc = ERR_NOMEM;

    if (root == NULL)
        return ERR_NOMEM;
    if (own && (selfcert_set_string(own, "apiVersion", "v1") ||
                selfcert_set_string(own, "kind", "Secret") ||
                selfcert_set_string(own, "type", "kubernetes.io/tls")))
        goto out;
    if ((meta = selfcert_child(root, "metadata")) == NULL ||
        selfcert_set_string(meta, "name", sc->cfg.name) ||
        selfcert_set_string(meta, "namespace", sc->cfg.ns) ||
        (ann = selfcert_child(meta, "annotations")) == NULL ||
        (data = selfcert_child(root, "data")) == NULL)
        goto out;
    cJSON_DeleteItemFromObjectCaseSensitive(ann, SELFCERT_ANN_ROTATE);
    lastgood_format_time(s->bundle_at, at, sizeof(at));
    if (selfcert_set_string(ann, SELFCERT_ANN_BUNDLE_AT, at) || selfcert_put_data(data, s))
        goto out;
    text = cJSON_PrintUnformatted(root);
    rc = text ? dynbuf_addstr(body, text) : ERR_NOMEM;
out:
    free(text);
    cJSON_Delete(own);
    return rc;
}

/* ---- the API ---- */

static int selfcert_call(struct selfcert *sc, const char *method, const char *path,
                         const struct dynbuf *body, struct dynbuf *resp, long *status, char *err,
                         size_t errlen)
{
    struct kubeapi_request req = {.method = method,
                                  .path = path,
                                  .body = body ? dynbuf_ptr(body) : NULL,
                                  .len = body ? body->len : 0,
                                  .timeout_ms = sc->cfg.request_ms,
                                  .stop = &sc->stop};

    dynbuf_reset(resp);
    return sc->cfg.call(sc->cfg.call_ctx, &req, resp, status, err, errlen);
}

static int selfcert_status_err(const char *what, const char *name, long status, char *err,
                               size_t errlen)
{
    return err_set(err, errlen, ERR_FAIL, "%s %s: HTTP %ld%s", what, name, status,
                   status == 403 ? " (the service account needs get, create and update on it: "
                                   "see docs/install.md)"
                                 : "");
}

/* GET the Secret into *s (exists 0 on 404) and its document into *doc. */
static int selfcert_get(struct selfcert *sc, struct selfcert_secret *s, cJSON **doc,
                        struct dynbuf *resp, char *err, size_t errlen)
{
    long status = 0;
    int rc = selfcert_call(sc, "GET", sc->secret_path, NULL, resp, &status, err, errlen);

    *doc = NULL;
    if (rc != ERR_OK)
        return rc;
    if (status == 404)
        return ERR_OK;
    if (status != 200)
        return selfcert_status_err("GET secret", sc->cfg.name, status, err, errlen);
    if ((rc = selfcert_secret_parse(resp->mem, resp->len, s, err, errlen)) != ERR_OK)
        return rc;
    *doc = cJSON_ParseWithLength(resp->mem, resp->len);
    return *doc ? ERR_OK : err_set(err, errlen, ERR_NOMEM, "out of memory reading the Secret");
}

/* One webhook configuration's caBundle: ERR_OK when it holds b64 (after a
 * PUT when it did not), ERR_BUSY on a conflict, else a failure. */
static int selfcert_sync_config(struct selfcert *sc, const char *prefix, const char *name,
                                const char *b64, char *err, size_t errlen)
{
    struct dynbuf resp, body;
    char path[512];
    cJSON *doc = NULL, *hook;
    long status = 0;
    int rc, changed = 0;
    char *text = NULL;

    snprintf(path, sizeof(path), "%s%s", prefix, name);
    dynbuf_init(&resp, SELFCERT_CONFIG_MAX);
    dynbuf_init(&body, SELFCERT_CONFIG_MAX);
    if ((rc = selfcert_call(sc, "GET", path, NULL, &resp, &status, err, errlen)) != ERR_OK)
        goto out;
    if (status == 404) {
        log_msg(sc->log, LOG_WARN, "no webhook configuration to write the caBundle to", "name",
                name);
        goto out; /* nothing trusts the old CA through it: in sync */
    }
    if (status != 200 || (doc = cJSON_ParseWithLength(resp.mem, resp.len)) == NULL) {
        rc = selfcert_status_err("GET webhook configuration", name, status, err, errlen);
        goto out;
    }
    cJSON_ArrayForEach(hook, cJSON_GetObjectItemCaseSensitive(doc, "webhooks"))
    {
        cJSON *cc = selfcert_child(hook, "clientConfig");
        const cJSON *cur = cJSON_GetObjectItemCaseSensitive(cc, "caBundle");

        if (cc == NULL) {
            rc = err_set(err, errlen, ERR_NOMEM, "out of memory");
            goto out;
        }
        if (cJSON_IsString(cur) && strcmp(cur->valuestring, b64) == 0)
            continue;
        if ((rc = selfcert_set_string(cc, "caBundle", b64)) != ERR_OK)
            goto out;
        changed = 1;
    }
    if (!changed)
        goto out;
    if ((text = cJSON_PrintUnformatted(doc)) == NULL ||
        (rc = dynbuf_addstr(&body, text)) != ERR_OK) {
        rc = err_set(err, errlen, ERR_NOMEM, "out of memory writing %s", name);
        goto out;
    }
    if ((rc = selfcert_call(sc, "PUT", path, &body, &resp, &status, err, errlen)) != ERR_OK)
        goto out;
    if (status == 409)
        rc = ERR_BUSY;
    else if (status != 200)
        rc = selfcert_status_err("PUT webhook configuration", name, status, err, errlen);
    else
        log_msg(sc->log, LOG_INFO, "caBundle written", "name", name);
out:
    free(text);
    cJSON_Delete(doc);
    dynbuf_free(&body);
    dynbuf_free(&resp);
    return rc;
}

/* Both configurations: 1 when both hold the bundle. */
static int selfcert_sync_configs(struct selfcert *sc, const struct dynbuf *bundle)
{
    const char *names[] = {sc->cfg.mutating, sc->cfg.validating};
    const char *prefixes[] = {SELFCERT_MWC_PATH, SELFCERT_VWC_PATH};
    struct dynbuf b64;
    char err[ERR_LEN];
    int in_sync = 1;

    dynbuf_init(&b64, 2 * SELFCERT_PEM_MAX);
    if (bundle->len == 0 || base64_append(&b64, bundle->mem, bundle->len) != ERR_OK)
        in_sync = 0;
    for (int i = 0; i < 2 && in_sync; i++) {
        if (names[i] == NULL || names[i][0] == '\0')
            continue;
        err[0] = '\0';
        if (selfcert_sync_config(sc, prefixes[i], names[i], dynbuf_ptr(&b64), err, sizeof(err)) !=
            ERR_OK) {
            if (err[0])
                log_msg(sc->log, LOG_WARN, "caBundle not written; tried again next round", "error",
                        err);
            in_sync = 0;
        }
    }
    dynbuf_free(&b64);
    return in_sync;
}

/* Creates or updates the Secret: ERR_OK, ERR_BUSY on 409, else a failure. */
static int selfcert_write(struct selfcert *sc, cJSON *doc, struct selfcert_secret *s, char *err,
                          size_t errlen)
{
    struct dynbuf body, resp;
    char path[600];
    long status = 0;
    int rc;

    dynbuf_init(&body, SELFCERT_SECRET_MAX);
    dynbuf_init(&resp, SELFCERT_SECRET_MAX);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets", sc->cfg.ns);
    if ((rc = selfcert_secret_body(sc, doc, s, &body)) != ERR_OK) {
        rc = err_set(err, errlen, rc, "cannot write the Secret's JSON (%s)", err_name(rc));
        goto out;
    }
    rc = selfcert_call(sc, doc ? "PUT" : "POST", doc ? sc->secret_path : path, &body, &resp,
                       &status, err, errlen);
    if (rc == ERR_OK && status == 409)
        rc = ERR_BUSY;
    else if (rc == ERR_OK && status != 200 && status != 201)
        rc = selfcert_status_err(doc ? "PUT secret" : "POST secret", sc->cfg.name, status, err,
                                 errlen);
out:
    dynbuf_free(&resp);
    dynbuf_free(&body);
    return rc;
}

/* A Secret mounted read-only where the pair goes is the likely cause. */
static void selfcert_write_hint(char *err, size_t errlen, int rc)
{
    char why[ERR_LEN];

    snprintf(why, sizeof(why), "%s", err);
    err_set(err, errlen, rc,
            "%.300s: --tls-cert-file and --tls-private-key-file must be in a writable directory "
            "with --cert-secret (an emptyDir: manifests/components/self-signed)",
            why);
}

/* The pair on disk, key first: the server's reload retries a mismatch. */
static int selfcert_write_files(struct selfcert *sc, const struct selfcert_secret *s, char *err,
                                size_t errlen)
{
    struct dynbuf cur;
    int same, rc;

    dynbuf_init(&cur, SELFCERT_PEM_MAX);
    same = fsutil_read_regular(sc->cfg.cert_file, &cur, err, errlen) == ERR_OK &&
           cur.len == s->tls_crt.len && memcmp(cur.mem, s->tls_crt.mem, cur.len) == 0;
    dynbuf_reset(&cur);
    same = same && fsutil_read_regular(sc->cfg.key_file, &cur, err, errlen) == ERR_OK &&
           cur.len == s->tls_key.len && memcmp(cur.mem, s->tls_key.mem, cur.len) == 0;
    dynbuf_free(&cur);
    err[0] = '\0';
    if (same)
        return ERR_OK;
    rc = fsutil_write_replace(sc->cfg.key_file, s->tls_key.mem, s->tls_key.len, 0600, err, errlen);
    if (rc == ERR_OK)
        rc = fsutil_write_replace(sc->cfg.cert_file, s->tls_crt.mem, s->tls_crt.len, 0644, err,
                                  errlen);
    if (rc == ERR_OK)
        log_msg(sc->log, LOG_INFO, "serving pair written from the Secret", "file",
                sc->cfg.cert_file);
    else
        selfcert_write_hint(err, errlen, rc);
    return rc;
}

static void selfcert_log_action(struct selfcert *sc, enum selfcert_action a)
{
    struct log_line l;

    log_begin(&l, sc->log, LOG_INFO, "certificate Secret written");
    log_str(&l, "action", selfcert_action_name(a));
    log_str(&l, "secret", sc->secret_path);
    log_end(&l);
}

/* One attempt of a round: ERR_BUSY when another replica wrote first. */
static int selfcert_attempt(struct selfcert *sc, struct selfcert_secret *s, char *err,
                            size_t errlen)
{
    struct dynbuf resp;
    struct selfcert_view v;
    enum selfcert_action a;
    long long now = (long long)time(NULL);
    cJSON *doc = NULL;
    int rc;

    dynbuf_init(&resp, SELFCERT_SECRET_MAX);
    if ((rc = selfcert_get(sc, s, &doc, &resp, err, errlen)) != ERR_OK)
        goto out;
    selfcert_view_of(&sc->cfg.pki, s, now, &v);
    if (v.signer_ok || v.leaf_usable)
        v.configs_in_sync = selfcert_sync_configs(sc, &s->ca_crt);
    a = selfcert_plan(&v, now, sc->cfg.overlap_s);
    if (a == SELFCERT_KEEP)
        goto out;
    if ((rc = selfcert_apply(sc, a, s, now, err, errlen)) != ERR_OK ||
        (rc = selfcert_write(sc, doc, s, err, errlen)) != ERR_OK)
        goto out;
    selfcert_log_action(sc, a);
    selfcert_sync_configs(sc, &s->ca_crt);
out:
    cJSON_Delete(doc);
    dynbuf_free(&resp);
    return rc;
}

/* A round: read, decide, write, until the Secret is settled; then the
 * files. ERR_OK when the serving pair on disk is the Secret's. */
static int selfcert_round(struct selfcert *sc, char *err, size_t errlen)
{
    struct selfcert_secret s;
    int rc = ERR_BUSY;

    selfcert_secret_init(&s);
    for (int i = 0; i < SELFCERT_ATTEMPTS && rc == ERR_BUSY && !atomic_load(&sc->stop); i++) {
        if (i > 0) {
            selfcert_secret_free(&s);
            selfcert_secret_init(&s);
        }
        err[0] = '\0';
        rc = selfcert_attempt(sc, &s, err, errlen);
        if (rc == ERR_BUSY)
            log_msg(sc->log, LOG_INFO, "another replica wrote the Secret first; reading it",
                    "secret", sc->secret_path);
    }
    if (rc == ERR_BUSY)
        rc = err_set(err, errlen, ERR_FAIL, "the Secret kept changing; tried again next round");
    if (rc == ERR_OK && (s.tls_crt.len == 0 || s.tls_key.len == 0))
        rc = err_set(err, errlen, ERR_FAIL, "the Secret holds no serving pair");
    if (rc == ERR_OK)
        rc = selfcert_write_files(sc, &s, err, errlen);
    selfcert_secret_free(&s);
    return rc;
}

/* Waits ms or until stopped: 1 when stopped. */
static int selfcert_wait(struct selfcert *sc, long long ms)
{
    struct timespec ts = monotime_at(monotime_now() + ms * MONOTIME_NS_PER_MS);

    pthread_mutex_lock(&sc->mu);
    if (!atomic_load(&sc->stop))
        pthread_cond_timedwait(&sc->cv, &sc->mu, &ts);
    pthread_mutex_unlock(&sc->mu);
    return atomic_load(&sc->stop);
}

static void *selfcert_main(void *arg)
{
    struct selfcert *sc = arg;
    char err[ERR_LEN];

    while (!selfcert_wait(sc, (long long)sc->cfg.sync_s * 1000)) {
        if (selfcert_round(sc, err, sizeof(err)) != ERR_OK)
            log_msg(sc->log, LOG_ERROR, "certificate round failed; the current pair serves",
                    "error", err);
    }
    return NULL;
}

/* The first round, in the caller's thread, tried for start_ms. */
static int selfcert_first(struct selfcert *sc, char *err, size_t errlen)
{
    long long until = monotime_now() + (long long)sc->cfg.start_ms * MONOTIME_NS_PER_MS;
    long long pause = 200;
    int rc;

    while ((rc = selfcert_round(sc, err, errlen)) != ERR_OK && monotime_now() < until) {
        log_msg(sc->log, LOG_WARN, "no serving pair yet; trying again", "error", err);
        if (selfcert_wait(sc, pause))
            break;
        pause = pause * 2 > 2000 ? 2000 : pause * 2;
    }
    return rc;
}

static void selfcert_defaults(struct selfcert_config *c)
{
    c->leaf_days = c->leaf_days ? c->leaf_days : SELFCERT_DEFAULT_LEAF;
    c->ca_days = c->ca_days ? c->ca_days : SELFCERT_DEFAULT_CA;
    c->sync_s = c->sync_s ? c->sync_s : 60;
    c->overlap_s = c->overlap_s ? c->overlap_s : 3600;
    c->start_ms = c->start_ms ? c->start_ms : 30000;
    c->request_ms = c->request_ms ? c->request_ms : 5000;
}

int selfcert_init(struct selfcert **out, struct log *log, const struct selfcert_config *cfg,
                  char *err, size_t errlen)
{
    struct selfcert *sc = calloc(1, sizeof(*sc));
    int rc;

    *out = NULL;
    if (!sc)
        return err_set(err, errlen, ERR_NOMEM, "certificate Secret: out of memory");
    sc->magic = SELFCERT_MAGIC;
    sc->log = log;
    sc->cfg = *cfg;
    selfcert_defaults(&sc->cfg);
    atomic_init(&sc->stop, 0);
    snprintf(sc->secret_path, sizeof(sc->secret_path), "/api/v1/namespaces/%s/secrets/%s", cfg->ns,
             cfg->name);
    if (pthread_mutex_init(&sc->mu, NULL) != 0)
        goto no_locks;
    if (monotime_cond_init(&sc->cv) != 0) {
        pthread_mutex_destroy(&sc->mu);
        goto no_locks;
    }
    sc->locks = 1;
    if ((rc = selfcert_first(sc, err, errlen)) != ERR_OK)
        goto fail;
    if (pthread_create(&sc->thread, NULL, selfcert_main, sc) != 0) {
        rc = err_set(err, errlen, ERR_FAIL, "certificate Secret: cannot start its thread");
        goto fail;
    }
    sc->started = 1;
    *out = sc;
    return ERR_OK;
no_locks:
    rc = err_set(err, errlen, ERR_FAIL, "certificate Secret: cannot make its locks");
fail:
    selfcert_stop(&sc);
    return rc;
}

void selfcert_stop(struct selfcert **scp)
{
    struct selfcert *sc = *scp;

    if (!sc)
        return;
    assert(sc->magic == SELFCERT_MAGIC);
    if (sc->started) {
        pthread_mutex_lock(&sc->mu);
        atomic_store(&sc->stop, 1);
        pthread_cond_signal(&sc->cv);
        pthread_mutex_unlock(&sc->mu);
        pthread_join(sc->thread, NULL);
    }
    if (sc->locks) {
        pthread_cond_destroy(&sc->cv);
        pthread_mutex_destroy(&sc->mu);
    }
    sc->magic = 0;
    free(sc);
    *scp = NULL;
}
