/* lookups: the API answers admission needs (a Node's labels, a Namespace's
 * labels, an envFrom ConfigMap's keys, a JobSet's owner and a TrainJob's
 * runtime), cached, shared and bounded in time.
 *
 * Answers are cached for a short TTL, so a burst of pods of one job costs one
 * API call: concurrent misses for the same key wait for the one request in
 * flight instead of sending their own. Each admission gets a deadline (the
 * budget): no lookup, and no wait for another's lookup, runs past it; what is
 * not known by then is "unknown" and the mutation falls back with a warning.
 * An admission with no time left (a millisecond or less) does not touch the
 * cache. Every failed call is cached for a second, a call cut short by the
 * budget included (an API that hangs would otherwise cost every admission
 * its whole budget, one after the other).
 *
 * A circuit for each kind: after circuit_failures calls in a row that found
 * the API unwell (timeout, transport, 5xx, 429, a body not JSON; not a 401,
 * 403 or 404, which are answers), no call of that kind is made for
 * circuit_open_s: its lookups answer "unknown" at once (counted:
 * lookups_skipped). Then one lookup probes; the others go without meanwhile,
 * without waiting for it; an answer closes the circuit, a failure opens it
 * again. Opening and closing are logged, once each.
 *
 * ConfigMaps: of each one's data only the keys that admissions may ask for
 * are kept (those that end a name of mutate_envfrom_names for the request's
 * profiles, lookups_use_profiles), with short values, in a hash index made
 * outside the lock; every ConfigMap's kept keys together stay within
 * configmap_bytes, the ones expiring first making room.
 *
 * A failed API call (not a ConfigMap's 404, which is an answer) is counted
 * by object kind and reason (lookups_failures: 403 forbidden, timeout, ...)
 * and logged at warn: the object, the HTTP status or the transport error,
 * and what to do. At most one line per kind and reason every log_interval_s;
 * the next line says how many were left out in between ("suppressed"), so a
 * missing RBAC rule is one line a minute, not one per pod.
 *
 * The edges are injectable: the API call behind the three caches (a
 * kubeapi_call_fn) and the clock they expire, budget and rate-limit by
 * (lookups_config), so the caches' rules can be tested with a fake API and
 * a fake clock.
 *
 * Lifecycle: lookups_init() makes the (opaque) caches, empty; lookups_stop()
 * undoes it.
 */
#ifndef RDMA_WEBHOOK_LOOKUPS_H
#define RDMA_WEBHOOK_LOOKUPS_H

#include "kube/kubeapi.h"
#include "host/log.h"
#include "admission/mutate.h"

#include <stddef.h>

/* Keys each cache holds at most; past that, a new key takes the slot of the
 * key that expires first. */
#define LOOKUPS_CACHE_MAX 512

struct cJSON;
struct profiles;

/* Opaque: the caches, their locks and the configuration. */
struct lookups;

/* The caches, as the metric's kind label names them. JobSets and TrainJobs
 * serve the jobset_owner hook (jobref.h): a JobSet's 404 is an answer
 * (NONE); a TrainJob's 404 leaves its runtime unknown (NULL), the JobSet
 * still a TrainJob's. */
enum lookups_kind {
    LOOKUPS_K_NODE,
    LOOKUPS_K_NAMESPACE,
    LOOKUPS_K_CONFIGMAP,
    LOOKUPS_K_JOBSET,
    LOOKUPS_K_TRAINJOB,
    LOOKUPS_KINDS
};

/* Why an API call failed: the metric's reason label and the log's "reason". */
enum lookups_reason {
    LOOKUPS_R_NOT_AUTHORIZED, /* 401: the token was not accepted */
    LOOKUPS_R_FORBIDDEN,      /* 403: the RBAC rule is missing */
    LOOKUPS_R_NOT_FOUND,    /* 404 of a Node or Namespace (a ConfigMap's, a job's, is an answer) */
    LOOKUPS_R_THROTTLED,    /* 429: API Priority and Fairness */
    LOOKUPS_R_SERVER_ERROR, /* 5xx */
    LOOKUPS_R_TIMEOUT,      /* no answer within the call's timeout */
    LOOKUPS_R_TRANSPORT,    /* no answer: connection refused, TLS, DNS, ... */
    LOOKUPS_R_BAD_BODY,     /* a 200 that is not the JSON object the API sends */
    LOOKUPS_R_TOO_BIG,      /* an answer over the 4 MiB a lookup reads */
    LOOKUPS_R_OTHER,        /* any other status; out of memory */
    LOOKUPS_REASONS
};

/* "node", "namespace", "configmap", "jobset", "trainjob"; "forbidden", "timeout", ...: the label
 * values, snake_case. */
const char *lookups_kind_name(enum lookups_kind k);
const char *lookups_reason_name(enum lookups_reason r);

/* Defaults of lookups_config's fields left 0. */
#define LOOKUPS_LOG_INTERVAL_DEFAULT_S   60u
#define LOOKUPS_CIRCUIT_FAILURES_DEFAULT 3u
#define LOOKUPS_CIRCUIT_OPEN_DEFAULT_S   10u
#define LOOKUPS_CONFIGMAP_BYTES_DEFAULT  (16u << 20)

struct lookups_config {
    unsigned budget_ms;        /* each admission's time for all its lookups */
    unsigned node_ttl_s;       /* how long a Node's labels are cached */
    unsigned configmap_ttl_s;  /* how long a ConfigMap's keys are cached */
    unsigned namespace_ttl_s;  /* how long a Namespace's labels are cached */
    unsigned job_ttl_s;        /* how long a JobSet's and a TrainJob's summaries are cached */
    unsigned log_interval_s;   /* one failure line per kind and reason; 0: the default */
    unsigned circuit_failures; /* unwell calls in a row that pause a kind; 0: the default */
    unsigned circuit_open_s;   /* how long it is paused; 0: the default */
    size_t configmap_bytes;    /* the ConfigMaps' kept keys, all together; 0: the default */
    /* The edges. call (required) is kubeapi_call with its client, or a
     * test's fake: a GET of /api/v1/nodes/NAME, /api/v1/namespaces/NAME,
     * /api/v1/namespaces/NS/configmaps/NAME,
     * /apis/jobset.x-k8s.io/v1alpha2/namespaces/NS/jobsets/NAME or
     * /apis/trainer.kubeflow.org/v1alpha1/namespaces/NS/trainjobs/NAME,
     * whose 404 is an answer but for a Node or Namespace. now_ns NULL:
     * CLOCK_MONOTONIC (monotime_now). */
    kubeapi_call_fn call;
    void *call_ctx;
    long long (*now_ns)(void);
};

/* One admission's view: the shared caches and its own deadline. A value in
 * the caller's memory, set by lookups_begin(). */
struct lookups_request {
    struct lookups *lk;
    long long deadline_ns;     /* on the configured clock; a test may move it */
    const struct profiles *ps; /* lookups_use_profiles; NULL: keep every key */
    unsigned long generation;  /* ps's store generation; 0 without */
};

/* cfg->call_ctx and log (NULL: no lines) must outlive the caches. ERR_OK
 * with *out set, or ERR_FAIL (no cfg->call, no lock) or ERR_NOMEM with a
 * message in err and *out NULL. */
int lookups_init(struct lookups **out, struct log *log, const struct lookups_config *cfg, char *err,
                 size_t errlen);
/* Frees the caches and sets *lk to NULL; no lookup may be running. A no-op
 * on NULL. */
void lookups_stop(struct lookups **lk);

/* Starts an admission's budget and points hooks at this request (every hook
 * of mutate_hooks, jobset_owner included). */
void lookups_begin(struct lookups *lk, struct lookups_request *req, struct mutate_hooks *hooks);
/* The profiles the admission runs under (after lookups_begin): a ConfigMap
 * is kept as the keys they may ask for, for that generation (another asks
 * again). ps must outlive the request. Without: every key is kept. */
void lookups_use_profiles(struct lookups_request *req, const struct profiles *ps,
                          unsigned long generation);

/* Lookups that waited for another admission's call to the API for the same
 * key instead of making their own, since init. */
unsigned long long lookups_waits(struct lookups *lk);

/* Failed API calls of kind k for reason r, since init. */
unsigned long long lookups_failures(struct lookups *lk, enum lookups_kind k, enum lookups_reason r);

/* Lookups of kind k answered unknown without a call, its circuit open,
 * since init; and whether the circuit is open now (or probing). */
unsigned long long lookups_skipped(struct lookups *lk, enum lookups_kind k);
int lookups_circuit_open(struct lookups *lk, enum lookups_kind k);

/* Bytes the ConfigMaps' kept keys hold now. */
size_t lookups_configmap_bytes(struct lookups *lk);

#endif
