#include "lookups.h"

#include "arena.h"
#include "k8sname.h"
#include "monotime.h"
#include "podjson.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { LOOKUPS_EMPTY, LOOKUPS_LOADING, LOOKUPS_READY, LOOKUPS_FAILED };

#define LOOKUPS_FAILED_TTL_NS MONOTIME_NS_PER_S
#define LOOKUPS_BODY_MAX      (4u << 20)
/* An admission with this much budget left or less makes no call. */
#define LOOKUPS_MIN_CALL_NS MONOTIME_NS_PER_MS

static int lookups_fetch_node(const struct kubeapi *api, const char *name, long timeout_ms,
                              cJSON **value);
static int lookups_fetch_configmap(const struct kubeapi *api, const char *key, long timeout_ms,
                                   cJSON **value);

static int lookups_cache_init(struct lookups_cache *c, unsigned ttl_s, lookups_fetch_fn fetch)
{
    memset(c->e, 0, sizeof(c->e));
    c->ttl_ns = (long long)ttl_s * MONOTIME_NS_PER_S;
    c->fetch = fetch;
    if (monotime_cond_init(&c->done))
        return -1;
    if (pthread_mutex_init(&c->mu, NULL)) {
        pthread_cond_destroy(&c->done);
        return -1;
    }
    return 0;
}

static void lookups_cache_free(struct lookups_cache *c)
{
    for (int i = 0; i < LOOKUPS_CACHE_MAX; i++)
        cJSON_Delete(c->e[i].value);
    pthread_cond_destroy(&c->done);
    pthread_mutex_destroy(&c->mu);
}

int lookups_init(struct lookups *lk, const struct kubeapi *api, unsigned budget_ms,
                 unsigned node_ttl_s, unsigned configmap_ttl_s)
{
    lk->api = api;
    lk->budget_ns = (long long)budget_ms * MONOTIME_NS_PER_MS;
    if (lookups_cache_init(&lk->nodes, node_ttl_s, lookups_fetch_node))
        return -1;
    if (lookups_cache_init(&lk->configmaps, configmap_ttl_s, lookups_fetch_configmap)) {
        lookups_cache_free(&lk->nodes);
        return -1;
    }
    return 0;
}

void lookups_stop(struct lookups *lk)
{
    lookups_cache_free(&lk->nodes);
    lookups_cache_free(&lk->configmaps);
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
    rc = c->fetch(req->lk->api, key, timeout_ms, &value);
    arena_resume(a);
    cut_short = rc != 0 && req->deadline_ns - monotime_now() < 2 * LOOKUPS_MIN_CALL_NS;
    pthread_mutex_lock(&c->mu);
    e->state = rc == 0 ? LOOKUPS_READY : cut_short ? LOOKUPS_EMPTY : LOOKUPS_FAILED;
    e->value = value;
    e->expires_ns = monotime_now() + (rc == 0 ? c->ttl_ns : LOOKUPS_FAILED_TTL_NS);
    pthread_cond_broadcast(&c->done);
    return rc == 0 ? e : NULL;
}

/* Returns the ready entry for key with the cache locked, or NULL (unlocked)
 * when the answer cannot be had within the request's budget. */
static struct lookups_entry *lookups_acquire(struct lookups_cache *c,
                                             const struct lookups_request *req, const char *key)
{
    struct timespec until = monotime_at(req->deadline_ns);
    struct lookups_entry *e;
    long long left;

    pthread_mutex_lock(&c->mu);
    for (;;) {
        e = lookups_find(c, key);
        if (e && e->state == LOOKUPS_LOADING) {
            if (pthread_cond_timedwait(&c->done, &c->mu, &until) != 0)
                break;
            continue;
        }
        if (e && monotime_now() < e->expires_ns)
            break;
        /* No time for a call: leave what is cached (even if stale) as it
         * is, for a request that has the time. */
        left = req->deadline_ns - monotime_now();
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

/* A Node's labels; a Node that does not exist is a failed lookup. */
static int lookups_fetch_node(const struct kubeapi *api, const char *name, long timeout_ms,
                              cJSON **value)
{
    char path[400];
    cJSON *node = NULL, *labels;
    int found;

    if (!k8sname_subdomain(name))
        return -1;
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", name);
    if (lookups_get_json(api, path, timeout_ms, &node, &found) || !found)
        return -1;
    labels = cJSON_DetachItemFromObjectCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(node, "metadata"), "labels");
    cJSON_Delete(node);
    *value = labels ? labels : cJSON_CreateObject();
    return *value ? 0 : -1;
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

static int lookups_node_labels(void *ctx, const char *name, cJSON **labels)
{
    struct lookups_request *req = ctx;
    struct lookups_entry *e = lookups_acquire(&req->lk->nodes, req, name);

    if (!e)
        return -1;
    *labels = cJSON_Duplicate(e->value, 1);
    pthread_mutex_unlock(&req->lk->nodes.mu);
    return *labels ? 0 : -1;
}

static enum mutate_envfrom lookups_configmap_has_key(void *ctx, const char *ns, const char *name,
                                                     const char *key)
{
    struct lookups_request *req = ctx;
    struct lookups_entry *e;
    enum mutate_envfrom answer;
    char ck[512];

    if ((size_t)snprintf(ck, sizeof(ck), "%s/%s", ns, name) >= sizeof(ck))
        return MUTATE_ENVFROM_UNKNOWN;
    e = lookups_acquire(&req->lk->configmaps, req, ck);
    if (!e)
        return MUTATE_ENVFROM_UNKNOWN;
    answer = e->value && podjson_member(e->value, key) ? MUTATE_ENVFROM_HAS : MUTATE_ENVFROM_LACKS;
    pthread_mutex_unlock(&req->lk->configmaps.mu);
    return answer;
}

static enum mutate_envfrom lookups_configmap_value(void *ctx, const char *ns, const char *name,
                                                   const char *key, char *value, size_t len)
{
    struct lookups_request *req = ctx;
    struct lookups_entry *e;
    enum mutate_envfrom answer = MUTATE_ENVFROM_UNKNOWN;
    const char *v;
    char ck[512];

    if ((size_t)snprintf(ck, sizeof(ck), "%s/%s", ns, name) >= sizeof(ck))
        return MUTATE_ENVFROM_UNKNOWN;
    e = lookups_acquire(&req->lk->configmaps, req, ck);
    if (!e)
        return MUTATE_ENVFROM_UNKNOWN;
    if (!e->value || !podjson_member(e->value, key))
        answer = MUTATE_ENVFROM_LACKS;
    else if ((v = cJSON_GetStringValue(podjson_member(e->value, key))) && strlen(v) < len) {
        memcpy(value, v, strlen(v) + 1);
        answer = MUTATE_ENVFROM_HAS;
    }
    pthread_mutex_unlock(&req->lk->configmaps.mu);
    return answer;
}

void lookups_begin(struct lookups *lk, struct lookups_request *req, struct mutate_hooks *hooks)
{
    req->lk = lk;
    req->deadline_ns = monotime_now() + lk->budget_ns;
    hooks->select.node_labels = lookups_node_labels;
    hooks->select.ctx = req;
    hooks->configmap_has_key = lookups_configmap_has_key;
    hooks->configmap_value = lookups_configmap_value;
    hooks->ctx = req;
}
