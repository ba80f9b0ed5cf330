/* lookups: the API answers admission needs (a Node's labels, an envFrom
 * ConfigMap's keys), cached, shared and bounded in time.
 *
 * Answers are cached for a short TTL, so a burst of pods of one job costs one
 * API call: concurrent misses for the same key wait for the one request in
 * flight instead of sending their own. Failures of the API are cached for a
 * second, so a dead API is not hammered. Each admission gets a deadline (the
 * budget): no lookup, and no wait for another's lookup, runs past it; what is
 * not known by then is "unknown" and the mutation falls back with a warning.
 * Running out of budget says nothing about the API: an admission with no
 * time left (a millisecond or less) does not touch the cache, and a call cut
 * short by its deadline is not cached as a failure.
 */
#ifndef RDMA_WEBHOOK_LOOKUPS_H
#define RDMA_WEBHOOK_LOOKUPS_H

#include "kubeapi.h"
#include "mutate.h"

#include <pthread.h>

#define LOOKUPS_CACHE_MAX 512

struct cJSON;

struct lookups_entry {
    char key[512];
    int state; /* LOOKUPS_EMPTY, _LOADING, _READY, _FAILED */
    long long expires_ns;
    struct cJSON *value; /* labels, or the ConfigMap's keys (short values kept); NULL: none */
};

/* Asks the API for key (a Node's name, or "namespace/name" of a ConfigMap)
 * in at most timeout_ms. Returns 0 with *value (NULL: the object does not
 * exist) or -1; the value must not come from a request's arena. */
typedef int (*lookups_fetch_fn)(const struct kubeapi *api, const char *key, long timeout_ms,
                                struct cJSON **value);

struct lookups_cache {
    pthread_mutex_t mu;
    pthread_cond_t done;
    long long ttl_ns;
    /* The API call behind the cache: set by lookups_init(), replaceable
     * before the first lookup (a test's fake API). */
    lookups_fetch_fn fetch;
    struct lookups_entry e[LOOKUPS_CACHE_MAX];
};

struct lookups {
    const struct kubeapi *api;
    long long budget_ns;
    struct lookups_cache nodes;
    struct lookups_cache configmaps;
};

/* One admission's view: the shared caches and its own deadline. */
struct lookups_request {
    struct lookups *lk;
    long long deadline_ns;
};

int lookups_init(struct lookups *lk, const struct kubeapi *api, unsigned budget_ms,
                 unsigned node_ttl_s, unsigned configmap_ttl_s);
void lookups_stop(struct lookups *lk);

/* Starts an admission's budget and points hooks at this request. */
void lookups_begin(struct lookups *lk, struct lookups_request *req, struct mutate_hooks *hooks);

#endif
