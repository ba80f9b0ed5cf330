#include "kube/cmwatch.h"

#include "base/err.h"
#include "base/k8sname.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMWATCH_BODY_MAX        (8u << 20)
#define CMWATCH_LIST_TIMEOUT_MS 10000L
#define CMWATCH_BACKOFF_MIN_MS  200
#define CMWATCH_BACKOFF_MAX_MS  10000

/* In every live watch and nowhere else: a stopped or stray pointer fails the
 * assert instead of corrupting memory. */
#define CMWATCH_MAGIC 0x636d7761u /* "cmwa" */

struct cmwatch {
    unsigned magic;
    kubeapi_call_fn call;
    void *call_ctx;
    struct store *store;
    struct lastgood *lastgood; /* NULL: no copy */
    struct log *log;
    char ns[254];
    char name[254];
    char key[254];
    unsigned watch_timeout_s;
    char origin[540]; /* "configmap NS/NAME" for log lines */
    char resource_version[64];
    char *last_text;     /* last published text, to skip republishing it */
    unsigned backoff_ms; /* the next wait after a failure */
    atomic_int stop;
    pthread_t thread;
    int started;
};

enum cmwatch_next { CMWATCH_WATCH, CMWATCH_RELIST, CMWATCH_BACKOFF };

/* The source has no valid version: the next valid one is published even
 * when it is the one serving (that clears the store's staleness), and with
 * nothing serving yet, the last good copy is tried. */
static void cmwatch_no_valid(struct cmwatch *w)
{
    free(w->last_text);
    w->last_text = NULL;
    if (w->lastgood && !store_ready(w->store))
        lastgood_fall_back(w->lastgood, &w->stop);
}

/* A version just published goes to the last good copy. */
static void cmwatch_offer(struct cmwatch *w, const cJSON *cm, const char *text)
{
    const char *rv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cm, "metadata"), "resourceVersion"));
    struct store_snapshot *snap;

    if (!w->lastgood || !(snap = store_acquire(w->store)))
        return;
    lastgood_offer(w->lastgood, text, strlen(text), rv, snap->loaded_at);
    store_release(snap);
}

/* Publishes the key's text unless it is what is serving already. */
static void cmwatch_publish(struct cmwatch *w, const cJSON *cm)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(cm, "data");
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, w->key));
    char problem[320];
    char *copy;

    if (!text) {
        snprintf(problem, sizeof(problem),
                 "the ConfigMap has no key \"%.200s\" (a string in data); check --profiles-key",
                 w->key);
        store_reject(w->store, w->origin, problem);
        cmwatch_no_valid(w);
        return;
    }
    if (w->last_text && strcmp(w->last_text, text) == 0)
        return;
    if (store_publish(w->store, text, strlen(text), w->origin) != ERR_OK) {
        cmwatch_no_valid(w);
        return;
    }
    cmwatch_offer(w, cm, text);
    copy = strdup(text);
    free(w->last_text);
    w->last_text = copy;
}

static void cmwatch_set_rv(struct cmwatch *w, const cJSON *obj)
{
    const char *rv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion"));

    if (rv && strlen(rv) < sizeof(w->resource_version))
        memcpy(w->resource_version, rv, strlen(rv) + 1);
}

static enum cmwatch_next cmwatch_list(struct cmwatch *w)
{
    char path[700], err[768];
    struct dynbuf body;
    cJSON *list = NULL;
    long status = 0;
    enum cmwatch_next next = CMWATCH_BACKOFF;

    snprintf(path, sizeof(path),
             "/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name%%3D%s", w->ns, w->name);
    dynbuf_init(&body, CMWATCH_BODY_MAX);
    if (w->call(w->call_ctx,
                &(struct kubeapi_request){.method = "GET",
                                          .path = path,
                                          .timeout_ms = CMWATCH_LIST_TIMEOUT_MS,
                                          .stop = &w->stop},
                &body, &status, err, sizeof(err))) {
        log_msg(w->log, LOG_ERROR, "cannot list the profiles ConfigMap; retrying", "error", err);
        goto out;
    }
    list = status == 200 ? cJSON_ParseWithLength(dynbuf_ptr(&body), dynbuf_len(&body)) : NULL;
    if (!list) {
        err_set(err, sizeof(err), ERR_FAIL, "HTTP %ld listing %s", status, w->origin);
        log_msg(w->log, LOG_ERROR, "cannot list the profiles ConfigMap; retrying (check RBAC)",
                "error", err);
        goto out;
    }
    cmwatch_set_rv(w, list);
    w->backoff_ms = CMWATCH_BACKOFF_MIN_MS;
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(list, "items")) == 0) {
        log_msg(w->log, LOG_ERROR, "profiles ConfigMap not found; waiting for it to be created",
                "source", w->origin);
        store_set_stale(w->store);
        cmwatch_no_valid(w);
    } else
        cmwatch_publish(w, cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(list, "items"), 0));
    next = CMWATCH_WATCH;
out:
    cJSON_Delete(list);
    dynbuf_free(&body);
    return next;
}

struct cmwatch_events {
    struct cmwatch *w;
    enum cmwatch_next next;
};

static int cmwatch_is_gone(const cJSON *status)
{
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(status, "code");

    return cJSON_IsNumber(code) && code->valueint == 410;
}

/* One watch event. Returns non-zero to end the stream (a 410 ERROR). */
static int cmwatch_event(void *arg, const char *line, size_t len)
{
    struct cmwatch_events *ev = arg;
    struct cmwatch *w = ev->w;
    cJSON *e = cJSON_ParseWithLength(line, len);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "type"));
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(e, "object");
    int end = 0;

    if (!type) {
        log_msg(w->log, LOG_WARN, "ignoring a malformed watch event", "source", w->origin);
    } else if (strcmp(type, "ERROR") == 0) {
        ev->next = cmwatch_is_gone(obj) ? CMWATCH_RELIST : CMWATCH_BACKOFF;
        end = 1;
    } else if (strcmp(type, "DELETED") == 0) {
        cmwatch_set_rv(w, obj);
        log_msg(w->log, LOG_ERROR,
                store_ready(w->store)
                    ? "profiles ConfigMap deleted; the previous version keeps serving"
                    : "profiles ConfigMap deleted; " STORE_NONE_YET,
                "source", w->origin);
        store_set_stale(w->store);
        free(w->last_text);
        w->last_text = NULL;
    } else {
        cmwatch_set_rv(w, obj);
        if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)
            cmwatch_publish(w, obj);
    }
    cJSON_Delete(e);
    return end;
}

static enum cmwatch_next cmwatch_watch(struct cmwatch *w)
{
    struct cmwatch_events ev = {.w = w, .next = CMWATCH_WATCH};
    char path[900], err[768];
    struct dynbuf body;
    cJSON *st;
    long status = 0;
    int rc;

    snprintf(path, sizeof(path),
             "/api/v1/namespaces/%s/configmaps?watch=1&fieldSelector=metadata.name%%3D%s"
             "&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%u",
             w->ns, w->name, w->resource_version, w->watch_timeout_s);
    dynbuf_init(&body, 65536);
    /* The server ends the watch after timeoutSeconds; the call's own bound
     * is past that, for an API that stops answering without closing. */
    rc = w->call(w->call_ctx,
                 &(struct kubeapi_request){.method = "GET",
                                           .path = path,
                                           .timeout_ms = (long)(w->watch_timeout_s + 30) * 1000,
                                           .stop = &w->stop,
                                           .on_line = cmwatch_event,
                                           .line_ctx = &ev,
                                           .max_line = CMWATCH_BODY_MAX},
                 &body, &status, err, sizeof(err));
    if (rc == 0 && status == 200)
        w->backoff_ms = CMWATCH_BACKOFF_MIN_MS;
    if (rc == 0 && status != 200) {
        st = cJSON_ParseWithLength(dynbuf_ptr(&body), dynbuf_len(&body));
        ev.next = status == 410 || cmwatch_is_gone(st) ? CMWATCH_RELIST : CMWATCH_BACKOFF;
        cJSON_Delete(st);
        if (ev.next == CMWATCH_BACKOFF)
            err_set(err, sizeof(err), ERR_FAIL, "HTTP %ld watching %s", status, w->origin);
    } else if (rc != 0 && ev.next == CMWATCH_WATCH) {
        ev.next = CMWATCH_BACKOFF;
    }
    if (ev.next == CMWATCH_BACKOFF && !atomic_load(&w->stop))
        log_msg(w->log, LOG_WARN, "profiles watch ended; reconnecting", "error", err);
    dynbuf_free(&body);
    return ev.next;
}

/* Sleeps ms, waking early when stopped. */
static void cmwatch_sleep(struct cmwatch *w, unsigned ms)
{
    struct timespec tick = {0, 50 * 1000000L};

    for (unsigned slept = 0; slept < ms && !atomic_load(&w->stop); slept += 50)
        nanosleep(&tick, NULL);
}

/* Capped exponential backoff with +-20% jitter, so replicas that lost the
 * API together do not come back in step. */
static unsigned cmwatch_backoff(struct cmwatch *w, unsigned *seed)
{
    unsigned base = w->backoff_ms, jitter = base / 5;
    unsigned d = base - jitter + (jitter ? (unsigned)rand_r(seed) % (2 * jitter + 1) : 0);

    w->backoff_ms = base * 2 > CMWATCH_BACKOFF_MAX_MS ? CMWATCH_BACKOFF_MAX_MS : base * 2;
    return d;
}

/* The backoff grows with every failure in a row and starts over only after
 * a list or a watch the server accepted. */
static void *cmwatch_main(void *arg)
{
    struct cmwatch *w = arg;
    enum cmwatch_next next = CMWATCH_RELIST;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)(size_t)w;

    w->backoff_ms = CMWATCH_BACKOFF_MIN_MS;
    while (!atomic_load(&w->stop)) {
        if (next == CMWATCH_RELIST) {
            next = cmwatch_list(w);
        } else if (next == CMWATCH_WATCH) {
            next = cmwatch_watch(w);
        } else {
            cmwatch_sleep(w, cmwatch_backoff(w, &seed));
            next = w->resource_version[0] ? CMWATCH_WATCH : CMWATCH_RELIST;
        }
    }
    return NULL;
}

int cmwatch_split_name(const char *ns_name, char ns[64], char name[254], char *err, size_t errlen)
{
    const char *slash = strchr(ns_name, '/');
    size_t nl = slash ? (size_t)(slash - ns_name) : 0;

    if (!slash || nl == 0 || nl >= 64 || strlen(slash + 1) >= 254)
        return err_set(err, errlen, ERR_FAIL, "--profiles-configmap takes NAMESPACE/NAME");
    memcpy(ns, ns_name, nl);
    ns[nl] = '\0';
    memcpy(name, slash + 1, strlen(slash + 1) + 1);
    if (!k8sname_label(ns) || !k8sname_subdomain(name))
        return err_set(err, errlen, ERR_FAIL,
                       "--profiles-configmap: \"%s\" is not NAMESPACE/NAME of valid names",
                       ns_name);
    return ERR_OK;
}

static int cmwatch_split(struct cmwatch *w, const char *ns_name, const char *key, char *err,
                         size_t errlen)
{
    const char *slash = strchr(ns_name, '/');
    size_t nl = slash ? (size_t)(slash - ns_name) : 0;

    if (!slash || nl == 0 || nl >= sizeof(w->ns) || strlen(slash + 1) >= sizeof(w->name))
        return err_set(err, errlen, ERR_FAIL, "--profiles-configmap takes NAMESPACE/NAME");
    if (!*key || strlen(key) >= sizeof(w->key))
        return err_set(err, errlen, ERR_FAIL,
                       "--profiles-key takes a ConfigMap key of 1 to %zu bytes",
                       sizeof(w->key) - 1);
    memcpy(w->ns, ns_name, nl);
    w->ns[nl] = '\0';
    memcpy(w->name, slash + 1, strlen(slash + 1) + 1);
    memcpy(w->key, key, strlen(key) + 1);
    if (!k8sname_label(w->ns) || !k8sname_subdomain(w->name))
        return err_set(err, errlen, ERR_FAIL,
                       "--profiles-configmap: \"%s\" is not NAMESPACE/NAME of valid names",
                       ns_name);
    return ERR_OK;
}

int cmwatch_init(struct cmwatch **out, const struct cmwatch_config *cfg, char *err, size_t errlen)
{
    struct cmwatch *w;
    int rc;

    *out = NULL;
    if (!cfg->call)
        return err_set(err, errlen, ERR_FAIL, "cannot watch ConfigMap %s: no API", cfg->ns_name);
    w = calloc(1, sizeof(*w));
    if (!w)
        return err_set(err, errlen, ERR_NOMEM, "cannot watch ConfigMap %s: out of memory",
                       cfg->ns_name);
    w->magic = CMWATCH_MAGIC;
    w->call = cfg->call;
    w->call_ctx = cfg->call_ctx;
    w->store = cfg->store;
    w->lastgood = cfg->lastgood;
    w->log = cfg->log;
    w->watch_timeout_s = cfg->watch_timeout_s;
    atomic_init(&w->stop, 0);
    if ((rc = cmwatch_split(w, cfg->ns_name, cfg->key, err, errlen)) != ERR_OK)
        goto fail;
    snprintf(w->origin, sizeof(w->origin), "configmap %s/%s", w->ns, w->name);
    /* cmwatch_no_valid tries the copy after each refusal before any
     * version serves: the store's line for that refusal must not say 503. */
    store_set_fallback(w->store, lastgood_enabled(w->lastgood));
    if (pthread_create(&w->thread, NULL, cmwatch_main, w) != 0) {
        store_set_fallback(w->store, 0);
        rc = err_set(err, errlen, ERR_FAIL, "cannot start the watch of %s", w->origin);
        goto fail;
    }
    w->started = 1;
    *out = w;
    return ERR_OK;
fail:
    cmwatch_stop(&w);
    return rc;
}

void cmwatch_stop(struct cmwatch **wp)
{
    struct cmwatch *w = *wp;

    if (!w)
        return;
    assert(w->magic == CMWATCH_MAGIC);
    if (w->started) {
        atomic_store(&w->stop, 1);
        pthread_join(w->thread, NULL);
    }
    free(w->last_text);
    w->magic = 0;
    free(w);
    *wp = NULL;
}
