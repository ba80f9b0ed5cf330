/* lookups: the API answers admission needs (a Node's labels, a Namespace's
 * labels, an envFrom ConfigMap's keys), cached, shared and bounded in time.
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
 *
 * A failed API call (not a ConfigMap's 404, which is an answer) is counted
 * by object kind and reason (lookups_failures: 403 forbidden, timeout, ...)
 * and logged at warn: the object, the HTTP status or the transport error,
 * and what to do. At most one line per kind and reason every log_interval_s;
 * the next line says how many were left out in between ("suppressed"), so a
 * missing RBAC rule is one line a minute, not one per pod.
 *
 * The edges are injectable: the API calls behind the three caches and the
 * clock they expire, budget and rate-limit by (lookups_config), so the
 * caches' rules can be tested with a fake API and a fake clock.
 *
 * Lifecycle: lookups_init() makes the (opaque) caches, empty; lookups_stop()
 * undoes it.
 */
#ifndef RDMA_WEBHOOK_LOOKUPS_H
#define RDMA_WEBHOOK_LOOKUPS_H

#include "kubeapi.h"
#include "log.h"
#include "mutate.h"

#include <stddef.h>

/* Keys each cache holds at most; past that, a new key takes the slot of the
 * key that expires first. */
#define LOOKUPS_CACHE_MAX 512

struct cJSON;

/* Opaque: the three caches, their locks and the configuration. */
struct lookups;

/* The caches, as the metric's kind label names them. */
enum lookups_kind { LOOKUPS_K_NODE, LOOKUPS_K_NAMESPACE, LOOKUPS_K_CONFIGMAP, LOOKUPS_KINDS };

/* Why an API call failed: the metric's reason label and the log's "reason". */
enum lookups_reason {
    LOOKUPS_R_NOT_AUTHORIZED, /* 401: the token was not accepted */
    LOOKUPS_R_FORBIDDEN,      /* 403: the RBAC rule is missing */
    LOOKUPS_R_NOT_FOUND,      /* 404 of a Node or Namespace (a ConfigMap's is an answer) */
    LOOKUPS_R_THROTTLED,      /* 429: API Priority and Fairness */
    LOOKUPS_R_SERVER_ERROR,   /* 5xx */
    LOOKUPS_R_TIMEOUT,        /* no answer within the call's timeout */
    LOOKUPS_R_TRANSPORT,      /* no answer: connection refused, TLS, DNS, ... */
    LOOKUPS_R_BAD_BODY,       /* a 200 that is not the JSON object the API sends */
    LOOKUPS_R_TOO_BIG,        /* an answer over the 4 MiB a lookup reads */
    LOOKUPS_R_OTHER,          /* any other status; out of memory */
    LOOKUPS_REASONS
};

/* "node", "namespace", "configmap"; "forbidden", "timeout", ...: the label
 * values, snake_case. */
const char *lookups_kind_name(enum lookups_kind k);
const char *lookups_reason_name(enum lookups_reason r);

/* Asks the API for key (a Node's or Namespace's name, or "namespace/name" of
 * a ConfigMap) in at most timeout_ms. Returns ERR_OK with *value (NULL: the
 * ConfigMap does not exist; a Node or Namespace that does not exist fails);
 * the value must not come from a request's arena. Else ERR_FAIL, ERR_TOO_BIG
 * or ERR_NOMEM with *status the HTTP status of the answer (0: none came: the
 * transport failed or timed out) and a message in err: the API's Status
 * message, or the transport's error. */
typedef int (*lookups_fetch_fn)(const struct kubeapi *api, const char *key, long timeout_ms,
                                struct cJSON **value, long *status, char *err, size_t errlen);

/* Default of lookups_config.log_interval_s. */
#define LOOKUPS_LOG_INTERVAL_DEFAULT_S 60u

struct lookups_config {
    unsigned budget_ms;       /* each admission's time for all its lookups */
    unsigned node_ttl_s;      /* how long a Node's labels are cached */
    unsigned configmap_ttl_s; /* how long a ConfigMap's keys are cached */
    unsigned namespace_ttl_s; /* how long a Namespace's labels are cached */
    unsigned log_interval_s;  /* one failure line per kind and reason; 0: the default */
    /* The edges; NULL: the Kubernetes API, and CLOCK_MONOTONIC (monotime_now). */
    lookups_fetch_fn fetch_node;
    lookups_fetch_fn fetch_configmap;
    lookups_fetch_fn fetch_namespace; /* a Namespace that does not exist fails */
    long long (*now_ns)(void);
};

/* One admission's view: the shared caches and its own deadline. A value in
 * the caller's memory, set by lookups_begin(). */
struct lookups_request {
    struct lookups *lk;
    long long deadline_ns; /* on the configured clock; a test may move it */
};

/* api (may be NULL with fake fetches) and log (NULL: no lines) must outlive
 * the caches. ERR_OK with *out set, or ERR_* with a message in err and *out
 * NULL. */
int lookups_init(struct lookups **out, const struct kubeapi *api, struct log *log,
                 const struct lookups_config *cfg, char *err, size_t errlen);
/* Frees the caches and sets *lk to NULL; no lookup may be running. A no-op
 * on NULL. */
void lookups_stop(struct lookups **lk);

/* Starts an admission's budget and points hooks at this request. */
void lookups_begin(struct lookups *lk, struct lookups_request *req, struct mutate_hooks *hooks);

/* Lookups that waited for another admission's call to the API for the same
 * key instead of making their own, since init. */
unsigned long long lookups_waits(struct lookups *lk);

/* Failed API calls of kind k for reason r, since init. */
unsigned long long lookups_failures(struct lookups *lk, enum lookups_kind k, enum lookups_reason r);

#endif
