#include "lookups.h"

#include "arena.h"
#include "err.h"
#include "k8sname.h"
#include "monotime.h"
#include "podjson.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LOOKUPS_EMPTY, LOOKUPS_LOADING, LOOKUPS_READY, LOOKUPS_FAILED };

#define LOOKUPS_FAILED_TTL_NS MONOTIME_NS_PER_S
#define LOOKUPS_BODY_MAX      (4u << 20)
/* An admission with this much budget left or less makes no call. */
#define LOOKUPS_MIN_CALL_NS MONOTIME_NS_PER_MS

/* In every live struct lookups and nowhere else: a stopped or stray pointer
 * fails the assert instead of corrupting memory. */
#define LOOKUPS_MAGIC 0x6c6f6f6bu /* "look" */

struct lookups_entry {
    char key[512];
    int state; /* LOOKUPS_EMPTY, _LOADING, _READY, _FAILED */
    long long expires_ns;
    cJSON *value; /* labels, or the ConfigMap's keys; NULL: does not exist */
};

struct lookups_cache {
    pthread_mutex_t mu;
    pthread_cond_t done;
    long long ttl_ns;
    lookups_fetch_fn fetch;   /* the API call behind the cache */
    unsigned long long waits; /* under mu */
    struct lookups_entry e[LOOKUPS_CACHE_MAX];
};

struct lookups {
    unsigned magic;
    const struct kubeapi *api;
    long long budget_ns;
    long long (*now)(void);
    struct lookups_cache nodes;
    struct lookups_cache configmaps;
    struct lookups_cache namespaces;
};

static int lookups_fetch_node(const struct kubeapi *api, const char *name, long timeout_ms,
                              cJSON **value);
static int lookups_fetch_configmap(const struct kubeapi *api, const char *key, long timeout_ms,
                                   cJSON **value);
static int lookups_fetch_namespace(const struct kubeapi *api, const char *name, long timeout_ms,
                                   cJSON **value);

static int lookups_cache_init(struct lookups_cache *c, unsigned ttl_s, lookups_fetch_fn fetch)
{
    c->ttl_ns = (long long)ttl_s * MONOTIME_NS_PER_S;
    c->fetch = fetch;
    if (monotime_cond_init(&c->done))
        return ERR_FAIL;
    if (pthread_mutex_init(&c->mu, NULL)) {
        pthread_cond_destroy(&c->done);
        return ERR_FAIL;
    }
    return ERR_OK;
}

static void lookups_cache_free(struct lookups_cache *c)
{
    for (int i = 0; i < LOOKUPS_CACHE_MAX; i++)
        cJSON_Delete(c->e[i].value);
    pthread_cond_destroy(&c->done);
    pthread_mutex_destroy(&c->mu);
}

int lookups_init(struct lookups **out, const struct kubeapi *api, const struct lookups_config *cfg,
                 char *err, size_t errlen)
{
    struct lookups *lk = calloc(1, sizeof(*lk));

    *out = NULL;
    if (!lk)
        return err_set(err, errlen, ERR_NOMEM, "API lookups: out of memory for the caches");
    lk->api = api;
    lk->budget_ns = (long long)cfg->budget_ms * MONOTIME_NS_PER_MS;
    lk->now = cfg->now_ns ? cfg->now_ns : monotime_now;
    if (lookups_cache_init(&lk->nodes, cfg->node_ttl_s,
                           cfg->fetch_node ? cfg->fetch_node : lookups_fetch_node))
        goto no_lock;
    if (lookups_cache_init(&lk->configmaps, cfg->configmap_ttl_s,
                           cfg->fetch_configmap ? cfg->fetch_configmap : lookups_fetch_configmap)) {
        lookups_cache_free(&lk->nodes);
        goto no_lock;
    }
    if (lookups_cache_init(&lk->namespaces, cfg->namespace_ttl_s,
                           cfg->fetch_namespace ? cfg->fetch_namespace : lookups_fetch_namespace)) {
        lookups_cache_free(&lk->configmaps);
        lookups_cache_free(&lk->nodes);
        goto no_lock;
    }
    lk->magic = LOOKUPS_MAGIC;
    *out = lk;
    return ERR_OK;
no_lock:
    free(lk);
    return err_set(err, errlen, ERR_FAIL, "API lookups: cannot make the caches' locks");
}

void lookups_stop(struct lookups **lkp)
{
    struct lookups *lk = *lkp;

    if (!lk)
        return;
    assert(lk->magic == LOOKUPS_MAGIC);
    lookups_cache_free(&lk->nodes);
    lookups_cache_free(&lk->configmaps);
    lookups_cache_free(&lk->namespaces);
    lk->magic = 0;
    free(lk);
    *lkp = NULL;
}

static unsigned long long lookups_cache_waits(struct lookups_cache *c)
{
    unsigned long long n;

    pthread_mutex_lock(&c->mu);
    n = c->waits;
    pthread_mutex_unlock(&c->mu);
    return n;
}

unsigned long long lookups_waits(struct lookups *lk)
{
    assert(lk->magic == LOOKUPS_MAGIC);
    return lookups_cache_waits(&lk->nodes) + lookups_cache_waits(&lk->configmaps) +
           lookups_cache_waits(&lk->namespaces);
}

static struct lookups_entry *lookups_find(struct lookups_cache *c, const char *key)
{
    for (int i = 0; i < LOOKUPS_CACHE_MAX; i++)
        if (c->e[i].state != LOOKUPS_EMPTY && strcmp(c->e[i].key, key) == 0)
            return &c->e[i];
    return NULL;
}

/* A slot for a new key: empty, else the one expiring first; never one that
 * another thread is loading. */
static struct lookups_entry *lookups_slot(struct lookups_cache *c)
{
    struct lookups_entry *best = NULL;

    for (int i = 0; i < LOOKUPS_CACHE_MAX; i++) {
        struct lookups_entry *e = &c->e[i];

        if (e->state == LOOKUPS_EMPTY)
            return e;
        if (e->state != LOOKUPS_LOADING && (!best || e->expires_ns < best->expires_ns))
            best = e;
    }
    return best;
}

/* Waits, with c->mu held, for a call in flight to end, until deadline_ns on
 * lk's clock: the time left on that clock is waited on CLOCK_MONOTONIC, so a
 * fake clock stands still while the wait still ends. Non-zero once the
 * deadline has passed. */
static int lookups_wait(struct lookups_cache *c, const struct lookups *lk, long long deadline_ns)
{
    long long left = deadline_ns - lk->now();
    struct timespec until;

    if (left <= 0)
        return ETIMEDOUT;
    until = monotime_at(monotime_now() + left);
    return pthread_cond_timedwait(&c->done, &c->mu, &until);
}

/* Loads key into its slot, which is not LOADING, with timeout_ms to do it
 * (the lock is released around the API call). A call that failed at the end
 * of the request's budget was cut short by it: that says nothing about the
 * API, so the slot is emptied rather than marked failed. "At the end" is
 * within two LOOKUPS_MIN_CALL_NS: the timeout is the budget rounded down to
 * a millisecond, and libcurl's timer may fire a little early. */
static struct lookups_entry *lookups_load(struct lookups_cache *c, struct lookups_entry *e,
                                          const struct lookups_request *req, const char *key,
                                          long timeout_ms)
{
    const struct lookups *lk = req->lk;
    struct arena *a;
    cJSON *value = NULL;
    int rc, cut_short;

    cJSON_Delete(e->value);
    e->value = NULL;
    snprintf(e->key, sizeof(e->key), "%s", key);
    e->state = LOOKUPS_LOADING;
    pthread_mutex_unlock(&c->mu);
    /* The answer outlives this request: it must not come from its arena. */
    a = arena_suspend();
    rc = c->fetch(lk->api, key, timeout_ms, &value);
    arena_resume(a);
    cut_short = rc != 0 && req->deadline_ns - lk->now() < 2 * LOOKUPS_MIN_CALL_NS;
    pthread_mutex_lock(&c->mu);
    e->state = rc == 0 ? LOOKUPS_READY : cut_short ? LOOKUPS_EMPTY : LOOKUPS_FAILED;
    e->value = value;
    e->expires_ns = lk->now() + (rc == 0 ? c->ttl_ns : LOOKUPS_FAILED_TTL_NS);
    pthread_cond_broadcast(&c->done);
    return rc == 0 ? e : NULL;
}

/* Returns the ready entry for key with the cache locked, or NULL (unlocked)
 * when the answer cannot be had within the request's budget. */
static struct lookups_entry *lookups_acquire(struct lookups_cache *c,
                                             const struct lookups_request *req, const char *key)
{
    const struct lookups *lk = req->lk;
    struct lookups_entry *e;
    long long left;
    int waited = 0;

    pthread_mutex_lock(&c->mu);
    for (;;) {
        e = lookups_find(c, key);
        if (e && e->state == LOOKUPS_LOADING) {
            c->waits += !waited;
            waited = 1;
            if (lookups_wait(c, lk, req->deadline_ns) == 0)
                continue;
            /* Out of time. The call may have ended just now, and the slot
             * may even hold another key since: look the key up once more. */
            e = lookups_find(c, key);
            if (e && (e->state != LOOKUPS_READY || lk->now() >= e->expires_ns))
                e = NULL;
            break;
        }
        if (e && lk->now() < e->expires_ns)
            break;
        /* No time for a call: leave what is cached (even if stale) as it
         * is, for a request that has the time. */
        left = req->deadline_ns - lk->now();
        if (left <= LOOKUPS_MIN_CALL_NS) {
            e = NULL;
            break;
        }
        e = e ? e : lookups_slot(c);
        if (e)
            e = lookups_load(c, e, req, key, (long)(left / MONOTIME_NS_PER_MS));
        break;
    }
    if (e && e->state == LOOKUPS_READY)
        return e;
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* GETs path and parses a 200 body; a 404 gives *found = 0 and returns 0. */
static int lookups_get_json(const struct kubeapi *api, const char *path, long timeout_ms,
                            cJSON **doc, int *found)
{
    struct dynbuf body;
    char err[512];
    long status = 0;
    int rc = -1;

    *doc = NULL;
    *found = 0;
    dynbuf_init(&body, LOOKUPS_BODY_MAX);
    if (kubeapi_get(api, path, timeout_ms, NULL, &body, &status, err, sizeof(err)) == 0) {
        if (status == 200)
            *doc = cJSON_ParseWithLength(dynbuf_ptr(&body), dynbuf_len(&body));
        *found = *doc != NULL;
        rc = status == 404 || *found ? 0 : -1;
    }
    dynbuf_free(&body);
    return rc;
}

/* The labels of the object at path; one that does not exist is a failed
 * lookup. */
static int lookups_fetch_labels(const struct kubeapi *api, const char *path, long timeout_ms,
                                cJSON **value)
{
    cJSON *obj = NULL, *labels;
    int found;

    if (lookups_get_json(api, path, timeout_ms, &obj, &found) || !found)
        return -1;
    labels = cJSON_DetachItemFromObjectCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels");
    cJSON_Delete(obj);
    *value = labels ? labels : cJSON_CreateObject();
    return *value ? 0 : -1;
}

static int lookups_fetch_node(const struct kubeapi *api, const char *name, long timeout_ms,
                              cJSON **value)
{
    char path[400];

    if (!k8sname_subdomain(name))
        return -1;
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", name);
    return lookups_fetch_labels(api, path, timeout_ms, value);
}

static int lookups_fetch_namespace(const struct kubeapi *api, const char *name, long timeout_ms,
                                   cJSON **value)
{
    char path[400];

    if (!k8sname_label(name))
        return -1;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s", name);
    return lookups_fetch_labels(api, path, timeout_ms, value);
}

/* The keys are kept, and the values of LOOKUPS_VALUE_MAX bytes or less
 * (the rest as true): admission reads a value only to see whether
 * NCCL_IB_DISABLE is on, and values can be large. Only data counts: the
 * kubelet builds envFrom variables from data alone, never from binaryData. */
#define LOOKUPS_VALUE_MAX 64

static cJSON *lookups_keys_of(const cJSON *cm)
{
    cJSON *keys = cJSON_CreateObject();
    const cJSON *it;

    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(cm, "data"))
    {
        const char *v = cJSON_GetStringValue(it);
        int kept = v && strlen(v) <= LOOKUPS_VALUE_MAX;

        if (keys && it->string &&
            !(kept ? cJSON_AddStringToObject(keys, it->string, v)
                   : cJSON_AddTrueToObject(keys, it->string))) {
            cJSON_Delete(keys);
            keys = NULL;
        }
    }
    return keys;
}

/* The keys of ConfigMap "ns/name" (its data) as an object;
 * NULL value for a ConfigMap that does not exist. */
static int lookups_fetch_configmap(const struct kubeapi *api, const char *key, long timeout_ms,
                                   cJSON **value)
{
    char path[600], ns[254];
    const char *slash = strchr(key, '/');
    cJSON *cm = NULL;
    int found;

    if (!slash || (size_t)(slash - key) >= sizeof(ns))
        return -1;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    if (!k8sname_label(ns) || !k8sname_subdomain(slash + 1))
        return -1;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", ns, slash + 1);
    if (lookups_get_json(api, path, timeout_ms, &cm, &found))
        return -1;
    *value = found ? lookups_keys_of(cm) : NULL;
    cJSON_Delete(cm);
    return found && !*value ? -1 : 0;
}

static int lookups_labels(struct lookups_request *req, struct lookups_cache *c, const char *name,
                          cJSON **labels)
{
    struct lookups_entry *e = lookups_acquire(c, req, name);

    if (!e)
        return -1;
    *labels = cJSON_Duplicate(e->value, 1);
    pthread_mutex_unlock(&c->mu);
    return *labels ? 0 : -1;
}

static int lookups_node_labels(void *ctx, const char *name, cJSON **labels)
{
    struct lookups_request *req = ctx;

    return lookups_labels(req, &req->lk->nodes, name, labels);
}

static int lookups_namespace_labels(void *ctx, const char *name, cJSON **labels)
{
    struct lookups_request *req = ctx;

    return lookups_labels(req, &req->lk->namespaces, name, labels);
}

/* Whether ConfigMap ns/name has key and, when value is not NULL, its value
 * (UNKNOWN when it is longer than len - 1 or was too long to be kept). */
static enum mutate_envfrom lookups_configmap_read(struct lookups_request *req, const char *ns,
                                                  const char *name, const char *key, char *value,
                                                  size_t len)
{
    struct lookups_entry *e;
    enum mutate_envfrom answer = MUTATE_ENVFROM_UNKNOWN;
    const cJSON *member;
    const char *v;
    char ck[512];

    if ((size_t)snprintf(ck, sizeof(ck), "%s/%s", ns, name) >= sizeof(ck))
        return MUTATE_ENVFROM_UNKNOWN;
    e = lookups_acquire(&req->lk->configmaps, req, ck);
    if (!e)
        return MUTATE_ENVFROM_UNKNOWN;
    member = e->value ? podjson_member(e->value, key) : NULL;
    if (!member)
        answer = MUTATE_ENVFROM_LACKS;
    else if (!value)
        answer = MUTATE_ENVFROM_HAS;
    else if ((v = cJSON_GetStringValue(member)) && strlen(v) < len) {
        memcpy(value, v, strlen(v) + 1);
        answer = MUTATE_ENVFROM_HAS;
    }
    pthread_mutex_unlock(&req->lk->configmaps.mu);
    return answer;
}

static enum mutate_envfrom lookups_configmap_has_key(void *ctx, const char *ns, const char *name,
                                                     const char *key)
{
    return lookups_configmap_read(ctx, ns, name, key, NULL, 0);
}

static enum mutate_envfrom lookups_configmap_value(void *ctx, const char *ns, const char *name,
                                                   const char *key, char *value, size_t len)
{
    return lookups_configmap_read(ctx, ns, name, key, value, len);
}

void lookups_begin(struct lookups *lk, struct lookups_request *req, struct mutate_hooks *hooks)
{
    assert(lk->magic == LOOKUPS_MAGIC);
    req->lk = lk;
    req->deadline_ns = lk->now() + lk->budget_ns;
    hooks->select.node_labels = lookups_node_labels;
    hooks->select.namespace_labels = lookups_namespace_labels;
    hooks->select.ctx = req;
    hooks->configmap_has_key = lookups_configmap_has_key;
    hooks->configmap_value = lookups_configmap_value;
    hooks->ctx = req;
}
