#include "kube/lastgood.h"

#include "base/err.h"
#include "base/jsonw.h"
#include "host/monotime.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The copy holds at most STORE_TEXT_MAX bytes of text; escaped, each byte
 * may take 6 (\u00XX), plus the envelope. */
#define LASTGOOD_BODY_MAX       (6u * STORE_TEXT_MAX + 8192u)
#define LASTGOOD_RESP_MAX       (8u << 20)
#define LASTGOOD_RETRY_MIN_MS   1000u
#define LASTGOOD_POLL_MS        1000u
#define LASTGOOD_DEFAULT_INT_MS 60000u
#define LASTGOOD_DEFAULT_REQ_MS 5000u
#define LASTGOOD_DEFAULT_MAX_MS 60000u

/* In every live object and nowhere else: a stopped or stray pointer fails
 * the assert instead of corrupting memory. */
#define LASTGOOD_MAGIC 0x6c676f64u /* "lgod" */

/* A version waiting to be written. */
struct lastgood_offer {
    char *text; /* NULL: none */
    size_t len;
    char rv[64];
    long long loaded_at;
};

struct lastgood {
    unsigned magic;
    struct store *store;
    struct log *log;
    struct lastgood_config cfg;
    char fix[600];
    char source[320];   /* "NS/NAME" */
    char path[700];     /* the copy's object path */
    char coll[400];     /* the namespace's configmaps, for a POST */
    char origin[340];   /* "configmap NS/COPY" for log lines */
    pthread_mutex_t mu; /* pending, counts */
    pthread_cond_t cv;
    struct lastgood_offer pending;
    int fresh; /* pending is a new offer: no backoff left from an older one */
    unsigned long long counts[LASTGOOD_COUNTS];
    atomic_int stop;
    pthread_t thread;
    int started, locks;
};

void lastgood_format_time(long long t, char *out, size_t outlen)
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (!gmtime_r(&tt, &tm) || !strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, outlen, "1970-01-01T00:00:00Z");
}

long long lastgood_parse_time(const char *s)
{
    struct tm tm = {0};
    const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;

    if (!end || *end)
        return -1;
    return (long long)timegm(&tm);
}

int lastgood_body(struct dynbuf *out, const char *ns, const char *copy, const char *source,
                  const char *key, const char *text, size_t len, const char *source_rv,
                  long long loaded_at, const char *resource_version)
{
    char when[32];
    struct jsonw w;

    lastgood_format_time(loaded_at, when, sizeof(when));
    jsonw_init(&w, out);
    jsonw_raw(&w, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":");
    jsonw_str(&w, copy);
    jsonw_raw(&w, ",\"namespace\":");
    jsonw_str(&w, ns);
    if (resource_version) {
        jsonw_raw(&w, ",\"resourceVersion\":");
        jsonw_str(&w, resource_version);
    }
    /* Not the label of /validate-profiles (see the header). */
    jsonw_raw(&w, ",\"labels\":{\"app.kubernetes.io/name\":\"rdma-webhook\","
                  "\"app.kubernetes.io/component\":\"profiles-last-good\"}"
                  ",\"annotations\":{\"" LASTGOOD_ANN_SOURCE "\":");
    jsonw_str(&w, source);
    jsonw_raw(&w, ",\"" LASTGOOD_ANN_SOURCE_RV "\":");
    jsonw_str(&w, source_rv ? source_rv : "");
    jsonw_raw(&w, ",\"" LASTGOOD_ANN_LOADED_AT "\":");
    jsonw_str(&w, when);
    jsonw_raw(&w, "}},\"data\":{");
    jsonw_str(&w, key);
    jsonw_raw(&w, ":");
    jsonw_strn(&w, text, len);
    jsonw_raw(&w, "}}");
    return jsonw_error(&w);
}

int lastgood_enabled(const struct lastgood *lg)
{
    /* lastgood_names sets the path only when every name is there. */
    return lg && lg->cfg.call && lg->path[0];
}

static void lastgood_count(struct lastgood *lg, enum lastgood_count c)
{
    pthread_mutex_lock(&lg->mu);
    lg->counts[c]++;
    pthread_mutex_unlock(&lg->mu);
}

void lastgood_counts(struct lastgood *lg, unsigned long long out[LASTGOOD_COUNTS])
{
    assert(lg->magic == LASTGOOD_MAGIC);
    pthread_mutex_lock(&lg->mu);
    memcpy(out, lg->counts, sizeof(lg->counts));
    pthread_mutex_unlock(&lg->mu);
}

/* What a GET of the copy found. */
struct lastgood_found {
    long status;
    cJSON *doc;          /* the ConfigMap, for a 200 */
    const char *text;    /* data[key]; NULL: none */
    const char *rv;      /* metadata.resourceVersion */
    long long loaded_at; /* LASTGOOD_ANN_LOADED_AT, else creationTimestamp; 0: neither */
};

static int lastgood_get(struct lastgood *lg, const atomic_int *stop, struct lastgood_found *f,
                        char *err, size_t errlen)
{
    const cJSON *meta, *ann;
    struct dynbuf resp;
    int rc;

    memset(f, 0, sizeof(*f));
    dynbuf_init(&resp, LASTGOOD_RESP_MAX);
    rc = lg->cfg.call(lg->cfg.call_ctx,
                      &(struct kubeapi_request){.method = "GET",
                                                .path = lg->path,
                                                .timeout_ms = (long)lg->cfg.request_ms,
                                                .stop = stop},
                      &resp, &f->status, err, errlen);
    if (rc == ERR_OK && f->status == 200) {
        f->doc = cJSON_ParseWithLength(dynbuf_ptr(&resp), dynbuf_len(&resp));
        meta = cJSON_GetObjectItemCaseSensitive(f->doc, "metadata");
        ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
        f->text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(f->doc, "data"), lg->cfg.key));
        f->rv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
        f->loaded_at = lastgood_parse_time(
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, LASTGOOD_ANN_LOADED_AT)));
        if (f->loaded_at < 0)
            f->loaded_at = lastgood_parse_time(
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "creationTimestamp")));
        if (f->loaded_at < 0)
            f->loaded_at = 0;
        if (!f->doc)
            rc = err_set(err, errlen, ERR_FAIL, "GET %s: the answer is not JSON", lg->path);
    } else if (rc == ERR_OK && f->status != 404) {
        rc = err_set(err, errlen, ERR_FAIL, "GET %s: HTTP %ld%s", lg->path, f->status,
                     f->status == 403 ? " (RBAC: the Role needs get on this ConfigMap)" : "");
    }
    dynbuf_free(&resp);
    return rc;
}

/* One POST (rv NULL) or PUT of the offer. Returns ERR_OK with *status. */
static int lastgood_put(struct lastgood *lg, const struct lastgood_offer *o, const char *rv,
                        long *status, char *err, size_t errlen)
{
    struct dynbuf body, resp;
    int rc;

    dynbuf_init(&body, LASTGOOD_BODY_MAX);
    dynbuf_init(&resp, LASTGOOD_RESP_MAX);
    rc = lastgood_body(&body, lg->cfg.ns, lg->cfg.copy, lg->source, lg->cfg.key, o->text, o->len,
                       o->rv[0] ? o->rv : NULL, o->loaded_at, rv);
    if (rc != ERR_OK)
        rc = err_set(err, errlen, rc, "%s: %s building the copy", lg->origin,
                     rc == ERR_NOMEM ? "out of memory" : "too large");
    else
        /* A PUT carries the copy's resourceVersion: optimistic concurrency. */
        rc = lg->cfg.call(lg->cfg.call_ctx,
                          &(struct kubeapi_request){.method = rv ? "PUT" : "POST",
                                                    .path = rv ? lg->path : lg->coll,
                                                    .body = dynbuf_ptr(&body),
                                                    .len = dynbuf_len(&body),
                                                    .content_type = "application/json",
                                                    .timeout_ms = (long)lg->cfg.request_ms,
                                                    .stop = &lg->stop},
                          &resp, status, err, errlen);
    dynbuf_free(&body);
    dynbuf_free(&resp);
    return rc;
}

/* Writes the offer unless the copy holds it: ERR_OK with *which written or
 * unchanged, or ERR_FAIL (and the others) with the reason in err. */
static int lastgood_write(struct lastgood *lg, const struct lastgood_offer *o,
                          enum lastgood_count *which, char *err, size_t errlen)
{
    struct lastgood_found f;
    long status = 0;
    int rc = ERR_OK;

    for (int attempt = 0; attempt < LASTGOOD_ATTEMPTS && !atomic_load(&lg->stop); attempt++) {
        if ((rc = lastgood_get(lg, &lg->stop, &f, err, errlen)) != ERR_OK) {
            cJSON_Delete(f.doc);
            return rc;
        }
        if (f.status == 200 && f.text && strlen(f.text) == o->len &&
            memcmp(f.text, o->text, o->len) == 0) {
            cJSON_Delete(f.doc);
            *which = LASTGOOD_UNCHANGED;
            return ERR_OK;
        }
        if (f.status == 200 && !f.rv) {
            cJSON_Delete(f.doc);
            return err_set(err, errlen, ERR_FAIL, "GET %s: no metadata.resourceVersion", lg->path);
        }
        rc = lastgood_put(lg, o, f.status == 200 ? f.rv : NULL, &status, err, errlen);
        cJSON_Delete(f.doc);
        if (rc != ERR_OK)
            return rc;
        if (status == 200 || status == 201) {
            *which = LASTGOOD_WRITTEN;
            return ERR_OK;
        }
        /* 409: written or created meanwhile; 404: deleted meanwhile. */
        if (status != 409 && status != 404)
            return err_set(err, errlen, ERR_FAIL, "%s %s: HTTP %ld%s",
                           f.status == 200 ? "PUT" : "POST", lg->path, status,
                           status == 403 ? " (RBAC: the Role needs create on configmaps and "
                                           "update on this one)"
                                         : "");
    }
    return err_set(err, errlen, ERR_FAIL, "%s: still in conflict after %d attempts", lg->origin,
                   LASTGOOD_ATTEMPTS);
}

void lastgood_offer(struct lastgood *lg, const char *text, size_t len, const char *resource_version,
                    long long loaded_at)
{
    char *copy;

    assert(lg->magic == LASTGOOD_MAGIC);
    if (!lastgood_enabled(lg))
        return;
    copy = malloc(len + 1);
    if (!copy) {
        log_msg(lg->log, LOG_ERROR, "out of memory keeping the last good profiles", "copy",
                lg->origin);
        lastgood_count(lg, LASTGOOD_FAILED);
        return;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    pthread_mutex_lock(&lg->mu);
    free(lg->pending.text);
    lg->pending.text = copy;
    lg->pending.len = len;
    lg->pending.loaded_at = loaded_at;
    lg->pending.rv[0] = '\0';
    if (resource_version && strlen(resource_version) < sizeof(lg->pending.rv))
        memcpy(lg->pending.rv, resource_version, strlen(resource_version) + 1);
    lg->fresh = 1;
    pthread_cond_signal(&lg->cv);
    pthread_mutex_unlock(&lg->mu);
}

static void lastgood_log_write(struct lastgood *lg, int rc, enum lastgood_count which,
                               const char *err, unsigned retry_ms)
{
    struct log_line l;

    if (rc == ERR_OK) {
        log_begin(&l, lg->log, LOG_INFO,
                  which == LASTGOOD_WRITTEN ? "last good profiles saved"
                                            : "last good profiles already saved");
        log_str(&l, "copy", lg->origin);
        log_end(&l);
        return;
    }
    log_begin(&l, lg->log, LOG_ERROR,
              "cannot save the last good profiles; serving is not affected, a restart with an "
              "invalid version would not be ready");
    log_str(&l, "copy", lg->origin);
    log_str(&l, "error", err);
    log_int(&l, "retry_ms", retry_ms);
    log_end(&l);
}

static void lastgood_log_stale(struct lastgood *lg)
{
    struct store_snapshot *snap = store_acquire(lg->store);
    char when[32] = "";
    struct log_line l;

    if (snap)
        lastgood_format_time(snap->loaded_at, when, sizeof(when));
    log_begin(&l, lg->log, LOG_ERROR,
              "serving old profiles: the source's current version is invalid or gone; fix it "
              "(its problems are logged when it is read)");
    log_str(&l, "fix", lg->fix);
    log_str(&l, "serving_loaded_at", when);
    log_int(&l, "generation", snap ? (long long)snap->generation : 0);
    log_end(&l);
    store_release(snap);
    if (lg->cfg.events && lg->cfg.ns && lg->cfg.name) {
        const struct events_object cm = {.namespace_ = lg->cfg.ns,
                                         .api_version = "v1",
                                         .kind = "ConfigMap",
                                         .name = lg->cfg.name};
        char note[EVENTS_NOTE_MAX];

        snprintf(note, sizeof(note),
                 "serving old profiles, loaded %s: this ConfigMap's current version is refused "
                 "or gone; the webhook's log has its problems (check-profiles prints them)",
                 when[0] ? when : "?");
        (void)events_report_object(lg->cfg.events, &cm, LASTGOOD_EVENT_REASON,
                                   LASTGOOD_EVENT_ACTION, note);
    }
}

/* With mu held: the offer to write now, taken from pending; or none. */
static int lastgood_take(struct lastgood *lg, long long now, long long retry_at,
                         struct lastgood_offer *o)
{
    if (!lg->pending.text || now < retry_at)
        return 0;
    *o = lg->pending;
    lg->pending.text = NULL;
    return 1;
}

/* A failed offer goes back, unless a newer one came meanwhile. */
static void lastgood_put_back(struct lastgood *lg, struct lastgood_offer *o)
{
    if (lg->pending.text) {
        free(o->text);
        return;
    }
    lg->pending = *o;
}

static void *lastgood_main(void *arg)
{
    struct lastgood *lg = arg;
    long long retry_at = 0, next_log = 0;
    const unsigned first =
        LASTGOOD_RETRY_MIN_MS < lg->cfg.retry_max_ms ? LASTGOOD_RETRY_MIN_MS : lg->cfg.retry_max_ms;
    unsigned backoff = first;

    pthread_mutex_lock(&lg->mu);
    while (!atomic_load(&lg->stop)) {
        long long now = monotime_now(), wake = now + LASTGOOD_POLL_MS * MONOTIME_NS_PER_MS;
        struct lastgood_offer o;

        if (lg->fresh) {
            lg->fresh = 0;
            retry_at = 0;
            backoff = first;
        }
        if (lastgood_take(lg, now, retry_at, &o)) {
            enum lastgood_count which = LASTGOOD_FAILED;
            char err[ERR_LEN] = "";
            int rc;

            pthread_mutex_unlock(&lg->mu);
            rc = lastgood_write(lg, &o, &which, err, sizeof(err));
            if (rc == ERR_OK)
                backoff = first;
            lastgood_log_write(lg, rc, which, err, backoff);
            pthread_mutex_lock(&lg->mu);
            lg->counts[rc == ERR_OK ? which : LASTGOOD_FAILED]++;
            if (rc == ERR_OK) {
                free(o.text);
            } else {
                retry_at = monotime_now() + (long long)backoff * MONOTIME_NS_PER_MS;
                backoff = backoff * 2 > lg->cfg.retry_max_ms ? lg->cfg.retry_max_ms : backoff * 2;
                lastgood_put_back(lg, &o);
            }
            continue;
        }
        if (!store_stale(lg->store)) {
            next_log = 0;
        } else if (now >= next_log) {
            pthread_mutex_unlock(&lg->mu);
            lastgood_log_stale(lg);
            pthread_mutex_lock(&lg->mu);
            next_log = now + (long long)lg->cfg.interval_ms * MONOTIME_NS_PER_MS;
        }
        if (lg->pending.text && retry_at > now && retry_at < wake)
            wake = retry_at;
        if (next_log > now && next_log < wake)
            wake = next_log;
        if (!atomic_load(&lg->stop) && !(lg->pending.text && retry_at <= now)) {
            struct timespec ts = monotime_at(wake);

            pthread_cond_timedwait(&lg->cv, &lg->mu, &ts);
        }
    }
    pthread_mutex_unlock(&lg->mu);
    return NULL;
}

int lastgood_fall_back(struct lastgood *lg, const atomic_int *stop)
{
    struct lastgood_found f;
    char err[ERR_LEN] = "", at[32];
    struct log_line l;
    int rc;

    assert(lg->magic == LASTGOOD_MAGIC);
    if (!lastgood_enabled(lg))
        return ERR_FAIL;
    rc = lastgood_get(lg, stop, &f, err, sizeof(err));
    if (rc == ERR_OK && (f.status != 200 || !f.text))
        rc = err_set(err, sizeof(err), ERR_FAIL, "%s %s", lg->origin,
                     f.status == 404 ? "does not exist (no valid version was ever saved)"
                                     : "has no profiles key");
    if (rc != ERR_OK) {
        log_msg(lg->log, LOG_ERROR,
                "no last good profiles to fall back to; /mutate answers 503 until a valid version "
                "loads",
                "error", err);
        cJSON_Delete(f.doc);
        return rc;
    }
    rc = store_publish_fallback(lg->store, f.text, strlen(f.text), lg->origin, f.loaded_at);
    lastgood_format_time(f.loaded_at, at, sizeof(at));
    log_begin(&l, lg->log, LOG_ERROR,
              rc == ERR_OK ? "serving the last good profiles: fix the source"
                           : "the last good profiles are not valid either; /mutate answers 503 "
                             "until a valid version loads");
    log_str(&l, "fix", lg->fix);
    log_str(&l, "copy", lg->origin);
    log_str(&l, "loaded_at", at);
    log_end(&l);
    cJSON_Delete(f.doc);
    return rc;
}

static int lastgood_names(struct lastgood *lg, char *err, size_t errlen)
{
    const struct lastgood_config *c = &lg->cfg;

    snprintf(lg->fix, sizeof(lg->fix), "%s", c->fix ? c->fix : "the profiles");
    if (!c->ns || !c->name || !c->key || !c->copy || !*c->copy)
        return ERR_OK;
    if (strlen(c->ns) > 63 || strlen(c->name) > 253 || strlen(c->copy) > 253)
        return err_set(err, errlen, ERR_FAIL, "--profiles-last-good: names too long");
    snprintf(lg->source, sizeof(lg->source), "%s/%s", c->ns, c->name);
    snprintf(lg->coll, sizeof(lg->coll), "/api/v1/namespaces/%s/configmaps", c->ns);
    snprintf(lg->path, sizeof(lg->path), "/api/v1/namespaces/%s/configmaps/%s", c->ns, c->copy);
    snprintf(lg->origin, sizeof(lg->origin), "configmap %s/%s", c->ns, c->copy);
    return ERR_OK;
}

int lastgood_init(struct lastgood **out, struct store *store, struct log *log,
                  const struct lastgood_config *cfg, char *err, size_t errlen)
{
    struct lastgood *lg = calloc(1, sizeof(*lg));
    int rc;

    *out = NULL;
    if (!lg)
        return err_set(err, errlen, ERR_NOMEM, "last good profiles: out of memory");
    lg->magic = LASTGOOD_MAGIC;
    lg->store = store;
    lg->log = log;
    lg->cfg = *cfg;
    if (!lg->cfg.interval_ms)
        lg->cfg.interval_ms = LASTGOOD_DEFAULT_INT_MS;
    if (!lg->cfg.request_ms)
        lg->cfg.request_ms = LASTGOOD_DEFAULT_REQ_MS;
    if (!lg->cfg.retry_max_ms)
        lg->cfg.retry_max_ms = LASTGOOD_DEFAULT_MAX_MS;
    atomic_init(&lg->stop, 0);
    if ((rc = lastgood_names(lg, err, errlen)) != ERR_OK)
        goto fail;
    if (pthread_mutex_init(&lg->mu, NULL) != 0)
        goto no_locks;
    if (monotime_cond_init(&lg->cv) != 0) {
        pthread_mutex_destroy(&lg->mu);
        goto no_locks;
    }
    lg->locks = 1;
    if (pthread_create(&lg->thread, NULL, lastgood_main, lg) != 0) {
        rc = err_set(err, errlen, ERR_FAIL, "last good profiles: cannot start its thread");
        goto fail;
    }
    lg->started = 1;
    *out = lg;
    return ERR_OK;
no_locks:
    rc = err_set(err, errlen, ERR_FAIL, "last good profiles: cannot make its locks");
fail:
    lastgood_stop(&lg);
    return rc;
}

void lastgood_stop(struct lastgood **lgp)
{
    struct lastgood *lg = *lgp;

    if (!lg)
        return;
    assert(lg->magic == LASTGOOD_MAGIC);
    if (lg->started) {
        pthread_mutex_lock(&lg->mu);
        atomic_store(&lg->stop, 1);
        pthread_cond_signal(&lg->cv);
        pthread_mutex_unlock(&lg->mu);
        pthread_join(lg->thread, NULL);
    }
    if (lg->locks) {
        pthread_cond_destroy(&lg->cv);
        pthread_mutex_destroy(&lg->mu);
    }
    free(lg->pending.text);
    lg->magic = 0;
    free(lg);
    *lgp = NULL;
}
