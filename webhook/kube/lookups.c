#include "kube/lookups.h"

#include "kube/jobref.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/k8sname.h"
#include "host/monotime.h"
#include "admission/profiles.h"
#include "base/strmap.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LOOKUPS_EMPTY, LOOKUPS_LOADING, LOOKUPS_READY, LOOKUPS_FAILED };
/* The circuit of one kind: closed (calls are made), open (none until
 * until_ns), probing (one call, the probe, is in flight; no other). */
enum { LOOKUPS_CLOSED, LOOKUPS_OPEN, LOOKUPS_PROBING };

#define LOOKUPS_FAILED_TTL_NS MONOTIME_NS_PER_S
#define LOOKUPS_BODY_MAX      (4u << 20)
/* An admission with this much budget left or less makes no call. */
#define LOOKUPS_MIN_CALL_NS MONOTIME_NS_PER_MS

/* In every live struct lookups and nowhere else: a stopped or stray pointer
 * fails the assert instead of corrupting memory. */
#define LOOKUPS_MAGIC 0x6c6f6f6bu /* "look" */

/* A ConfigMap as the cache keeps it: the keys that admissions may ask for
 * (those that end a name of mutate_envfrom_names), each with its value
 * when it is short (else lookups_unkept), in one allocation, indexed. */
struct lookups_cm {
    struct strmap keys; /* key -> value, into text */
    size_t bytes;       /* all it holds, counted in the cache's budget */
    char text[];        /* the keys and values kept, each NUL-terminated */
};

/* The value of a key whose value was too long to keep. */
static const char lookups_unkept[] = "";

struct lookups_entry {
    char key[512];
    int state; /* LOOKUPS_EMPTY, _LOADING, _READY, _FAILED */
    long long expires_ns;
    cJSON *value; /* a Node's or Namespace's labels; a job's summary (jobref.h), NULL: none */
    struct lookups_cm *cm; /* a ConfigMap's keys; NULL: it does not exist */
    /* A ConfigMap's: the profiles generation (lookups_request) whose names
     * chose the keys kept; another generation asks again. */
    unsigned long generation;
};

struct lookups_circuit {
    int state;                  /* LOOKUPS_CLOSED, _OPEN, _PROBING */
    unsigned failures;          /* calls in a row that found the API unwell */
    long long until_ns;         /* open: no call before this */
    unsigned long long skipped; /* lookups answered unknown without a call */
};

struct lookups;

/* Asks the API for key (a Node's or Namespace's name, or "namespace/name" of
 * a ConfigMap) in at most timeout_ms. Returns ERR_OK with *value (NULL: the
 * ConfigMap does not exist; a Node or Namespace that does not exist fails);
 * the value must not come from a request's arena. Else ERR_FAIL, ERR_TOO_BIG
 * or ERR_NOMEM with *status the HTTP status of the answer (0: none came: the
 * transport failed or timed out) and a message in err: the API's Status
 * message, or the transport's error. */
typedef int (*lookups_fetch_fn)(const struct lookups *lk, const char *key, long timeout_ms,
                                cJSON **value, long *status, char *err, size_t errlen);

struct lookups_cache {
    pthread_mutex_t mu;
    pthread_cond_t done;
    enum lookups_kind kind;
    long long ttl_ns;
    lookups_fetch_fn fetch;   /* the request behind the cache, on lookups' call */
    unsigned long long waits; /* under mu, as all below */
    struct lookups_circuit circuit;
    struct strmap index; /* key -> its entry, for every entry not EMPTY */
    size_t bytes;        /* held by the entries' cm */
    struct lookups_entry e[LOOKUPS_CACHE_MAX];
};

/* The failure lines of one kind and reason: at most one every interval. */
struct lookups_limit {
    long long next_ns;             /* no line before this, on the configured clock */
    unsigned long long suppressed; /* lines left out since the last one written */
};

struct lookups {
    unsigned magic;
    kubeapi_call_fn call;
    void *call_ctx;
    struct log *log;
    long long budget_ns;
    long long log_interval_ns;
    unsigned circuit_failures; /* unwell calls in a row that open a circuit */
    long long circuit_open_ns; /* how long it stays open */
    size_t configmap_bytes;    /* the most the ConfigMaps' keys may hold */
    long long (*now)(void);
    struct lookups_cache nodes;
    struct lookups_cache configmaps;
    struct lookups_cache namespaces;
    struct lookups_cache jobsets;
    struct lookups_cache trainjobs;
    atomic_ullong failures[LOOKUPS_KINDS][LOOKUPS_REASONS];
    pthread_mutex_t limits_mu; /* guards limits */
    struct lookups_limit limits[LOOKUPS_KINDS][LOOKUPS_REASONS];
};

static const char *const lookups_kind_names[LOOKUPS_KINDS] = {"node", "namespace", "configmap",
                                                              "jobset", "trainjob"};
/* The kind as the API and the log name it, its resource for RBAC (as
 * kubectl writes resource.group), and the flag of its cache's TTL. */
static const char *const lookups_kind_titles[LOOKUPS_KINDS] = {"Node", "Namespace", "ConfigMap",
                                                               "JobSet", "TrainJob"};
static const char *const lookups_kind_resources[LOOKUPS_KINDS] = {
    "nodes", "namespaces", "configmaps", "jobsets.jobset.x-k8s.io",
    "trainjobs.trainer.kubeflow.org"};
static const char *const lookups_kind_ttl_flags[LOOKUPS_KINDS] = {"node", "namespace", "configmap",
                                                                  "job", "job"};
static const char *const lookups_reason_names[LOOKUPS_REASONS] = {
    "not_authorized", "forbidden", "not_found", "throttled", "server_error",
    "timeout",        "transport", "bad_body",  "too_big",   "other"};

const char *lookups_kind_name(enum lookups_kind k)
{
    return (unsigned)k < LOOKUPS_KINDS ? lookups_kind_names[k] : "other";
}

const char *lookups_reason_name(enum lookups_reason r)
{
    return (unsigned)r < LOOKUPS_REASONS ? lookups_reason_names[r] : "other";
}

static int lookups_fetch_node(const struct lookups *lk, const char *name, long timeout_ms,
                              cJSON **value, long *status, char *err, size_t errlen);
static int lookups_fetch_configmap(const struct lookups *lk, const char *key, long timeout_ms,
                                   cJSON **value, long *status, char *err, size_t errlen);
static int lookups_fetch_namespace(const struct lookups *lk, const char *name, long timeout_ms,
                                   cJSON **value, long *status, char *err, size_t errlen);
static int lookups_fetch_jobset(const struct lookups *lk, const char *key, long timeout_ms,
                                cJSON **value, long *status, char *err, size_t errlen);
static int lookups_fetch_trainjob(const struct lookups *lk, const char *key, long timeout_ms,
                                  cJSON **value, long *status, char *err, size_t errlen);

static int lookups_cache_init(struct lookups_cache *c, enum lookups_kind kind, unsigned ttl_s,
                              lookups_fetch_fn fetch)
{
    c->kind = kind;
    c->ttl_ns = (long long)ttl_s * MONOTIME_NS_PER_S;
    c->fetch = fetch;
    /* Seeded per process: the keys are names tenants choose. */
    strmap_init(&c->index, LOOKUPS_CACHE_MAX,
                (unsigned long long)monotime_now() ^ (unsigned long long)(uintptr_t)c);
    if (monotime_cond_init(&c->done))
        return ERR_FAIL;
    if (pthread_mutex_init(&c->mu, NULL)) {
        pthread_cond_destroy(&c->done);
        return ERR_FAIL;
    }
    return ERR_OK;
}

static void lookups_cm_free(struct lookups_cm *cm)
{
    if (cm)
        strmap_free(&cm->keys);
    free(cm);
}

static void lookups_cache_free(struct lookups_cache *c)
{
    for (int i = 0; i < LOOKUPS_CACHE_MAX; i++) {
        cJSON_Delete(c->e[i].value);
        lookups_cm_free(c->e[i].cm);
    }
    strmap_free(&c->index);
    pthread_cond_destroy(&c->done);
    pthread_mutex_destroy(&c->mu);
}

int lookups_init(struct lookups **out, struct log *log, const struct lookups_config *cfg, char *err,
                 size_t errlen)
{
    struct lookups *lk;
    unsigned interval_s =
        cfg->log_interval_s ? cfg->log_interval_s : LOOKUPS_LOG_INTERVAL_DEFAULT_S;

    *out = NULL;
    if (!cfg->call)
        return err_set(err, errlen, ERR_FAIL, "API lookups: no API to ask");
    lk = calloc(1, sizeof(*lk));
    if (!lk)
        return err_set(err, errlen, ERR_NOMEM, "API lookups: out of memory for the caches");
    lk->call = cfg->call;
    lk->call_ctx = cfg->call_ctx;
    lk->log = log;
    lk->budget_ns = (long long)cfg->budget_ms * MONOTIME_NS_PER_MS;
    lk->log_interval_ns = (long long)interval_s * MONOTIME_NS_PER_S;
    lk->circuit_failures =
        cfg->circuit_failures ? cfg->circuit_failures : LOOKUPS_CIRCUIT_FAILURES_DEFAULT;
    lk->circuit_open_ns =
        (long long)(cfg->circuit_open_s ? cfg->circuit_open_s : LOOKUPS_CIRCUIT_OPEN_DEFAULT_S) *
        MONOTIME_NS_PER_S;
    lk->configmap_bytes =
        cfg->configmap_bytes ? cfg->configmap_bytes : LOOKUPS_CONFIGMAP_BYTES_DEFAULT;
    lk->now = cfg->now_ns ? cfg->now_ns : monotime_now;
    if (pthread_mutex_init(&lk->limits_mu, NULL))
        goto no_lock;
    if (lookups_cache_init(&lk->nodes, LOOKUPS_K_NODE, cfg->node_ttl_s, lookups_fetch_node))
        goto no_nodes;
    if (lookups_cache_init(&lk->configmaps, LOOKUPS_K_CONFIGMAP, cfg->configmap_ttl_s,
                           lookups_fetch_configmap))
        goto no_configmaps;
    if (lookups_cache_init(&lk->namespaces, LOOKUPS_K_NAMESPACE, cfg->namespace_ttl_s,
                           lookups_fetch_namespace))
        goto no_namespaces;
    if (lookups_cache_init(&lk->jobsets, LOOKUPS_K_JOBSET, cfg->job_ttl_s, lookups_fetch_jobset))
        goto no_jobsets;
    if (lookups_cache_init(&lk->trainjobs, LOOKUPS_K_TRAINJOB, cfg->job_ttl_s,
                           lookups_fetch_trainjob))
        goto no_trainjobs;
    lk->magic = LOOKUPS_MAGIC;
    *out = lk;
    return ERR_OK;
no_trainjobs:
    lookups_cache_free(&lk->jobsets);
no_jobsets:
    lookups_cache_free(&lk->namespaces);
no_namespaces:
    lookups_cache_free(&lk->configmaps);
no_configmaps:
    lookups_cache_free(&lk->nodes);
no_nodes:
    pthread_mutex_destroy(&lk->limits_mu);
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
    lookups_cache_free(&lk->jobsets);
    lookups_cache_free(&lk->trainjobs);
    pthread_mutex_destroy(&lk->limits_mu);
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
           lookups_cache_waits(&lk->namespaces) + lookups_cache_waits(&lk->jobsets) +
           lookups_cache_waits(&lk->trainjobs);
}

unsigned long long lookups_failures(struct lookups *lk, enum lookups_kind k, enum lookups_reason r)
{
    assert(lk->magic == LOOKUPS_MAGIC);
    if ((unsigned)k >= LOOKUPS_KINDS || (unsigned)r >= LOOKUPS_REASONS)
        return 0;
    return atomic_load(&lk->failures[k][r]);
}

static struct lookups_cache *lookups_cache_of(struct lookups *lk, enum lookups_kind k)
{
    switch (k) {
    case LOOKUPS_K_NODE: return &lk->nodes;
    case LOOKUPS_K_NAMESPACE: return &lk->namespaces;
    case LOOKUPS_K_JOBSET: return &lk->jobsets;
    case LOOKUPS_K_TRAINJOB: return &lk->trainjobs;
    default: return &lk->configmaps;
    }
}

unsigned long long lookups_skipped(struct lookups *lk, enum lookups_kind k)
{
    struct lookups_cache *c;
    unsigned long long n;

    assert(lk->magic == LOOKUPS_MAGIC);
    if ((unsigned)k >= LOOKUPS_KINDS)
        return 0;
    c = lookups_cache_of(lk, k);
    pthread_mutex_lock(&c->mu);
    n = c->circuit.skipped;
    pthread_mutex_unlock(&c->mu);
    return n;
}

int lookups_circuit_open(struct lookups *lk, enum lookups_kind k)
{
    struct lookups_cache *c;
    int open;

    assert(lk->magic == LOOKUPS_MAGIC);
    if ((unsigned)k >= LOOKUPS_KINDS)
        return 0;
    c = lookups_cache_of(lk, k);
    pthread_mutex_lock(&c->mu);
    open = c->circuit.state != LOOKUPS_CLOSED;
    pthread_mutex_unlock(&c->mu);
    return open;
}

size_t lookups_configmap_bytes(struct lookups *lk)
{
    size_t n;

    assert(lk->magic == LOOKUPS_MAGIC);
    pthread_mutex_lock(&lk->configmaps.mu);
    n = lk->configmaps.bytes;
    pthread_mutex_unlock(&lk->configmaps.mu);
    return n;
}

/* ---- failures: the reason, the metric, the rate-limited line ----------- */

/* A call that failed after (nearly) its whole timeout timed out; one that
 * failed sooner without an answer could not connect. kubeapi says only
 * "failed" (ERR_FAIL) for both, with curl's text. */
static enum lookups_reason lookups_reason_of(int rc, long status, long long elapsed_ns,
                                             long timeout_ms)
{
    if (status == 401)
        return LOOKUPS_R_NOT_AUTHORIZED;
    if (status == 403)
        return LOOKUPS_R_FORBIDDEN;
    if (status == 404)
        return LOOKUPS_R_NOT_FOUND;
    if (status == 429)
        return LOOKUPS_R_THROTTLED;
    if (status >= 500 && status <= 599)
        return LOOKUPS_R_SERVER_ERROR;
    if (rc == ERR_TOO_BIG)
        return LOOKUPS_R_TOO_BIG;
    if (rc == ERR_NOMEM)
        return LOOKUPS_R_OTHER;
    if (status == 200)
        return LOOKUPS_R_BAD_BODY;
    if (status)
        return LOOKUPS_R_OTHER;
    return elapsed_ns + LOOKUPS_MIN_CALL_NS >= (long long)timeout_ms * MONOTIME_NS_PER_MS
               ? LOOKUPS_R_TIMEOUT
               : LOOKUPS_R_TRANSPORT;
}

static const char *lookups_status_phrase(long status)
{
    switch (status) {
    case 401: return " Unauthorized";
    case 403: return " Forbidden";
    case 404: return " Not Found";
    case 429: return " Too Many Requests";
    case 500: return " Internal Server Error";
    case 502: return " Bad Gateway";
    case 503: return " Service Unavailable";
    case 504: return " Gateway Timeout";
    }
    return "";
}

/* What to do next, for reason r of kind k; NULL: the error says it all. */
static const char *lookups_hint(enum lookups_kind k, enum lookups_reason r, char *buf, size_t len)
{
    switch (r) {
    case LOOKUPS_R_NOT_AUTHORIZED:
        return "the API did not accept the webhook's token: check its ServiceAccount and the "
               "token mounted (or --kube-token-file)";
    case LOOKUPS_R_FORBIDDEN:
        snprintf(buf, len,
                 "check the webhook's RBAC: its ServiceAccount needs get on %s "
                 "(ClusterRole rdma-webhook in manifests/rbac.yaml)",
                 lookups_kind_resources[k]);
        return buf;
    case LOOKUPS_R_NOT_FOUND:
        return k == LOOKUPS_K_NODE
                   ? "no such Node: the pod's spec.nodeName, or its kubernetes.io/hostname "
                     "(looked up as a Node's name), names a node the API does not have"
                   : "no such Namespace: is --kube-api the API of the cluster that calls the "
                     "webhook?";
    case LOOKUPS_R_THROTTLED:
        snprintf(buf, len,
                 "the apiserver throttles the webhook (API Priority and Fairness): give its "
                 "ServiceAccount a FlowSchema with more shares, or raise --%s-cache-seconds",
                 lookups_kind_ttl_flags[k]);
        return buf;
    case LOOKUPS_R_SERVER_ERROR:
        return "the apiserver failed to answer: see its logs and its /readyz";
    case LOOKUPS_R_TIMEOUT:
        return "no answer within the admission's time for lookups: check the apiserver's load "
               "and the network to it, or raise --api-budget-ms";
    case LOOKUPS_R_TRANSPORT:
        return "the API cannot be reached: check --kube-api (in a cluster, "
               "KUBERNETES_SERVICE_HOST), NetworkPolicies, and the API's CA (--kube-ca)";
    case LOOKUPS_R_BAD_BODY:
        return "the answer is not the JSON object the API sends: is --kube-api a Kubernetes "
               "API, and not a proxy's page?";
    case LOOKUPS_R_TOO_BIG:
        return "the object is larger than the 4 MiB a lookup reads, or the keys of a ConfigMap "
               "that admissions may ask for than the cache";
    default: return NULL;
    }
}

/* Whether a line for lim may be written at now; if so, *suppressed is the
 * count of lines left out since the previous one (and starts again). */
static int lookups_limit_pass(struct lookups *lk, struct lookups_limit *lim, long long now,
                              unsigned long long *suppressed)
{
    int pass;

    pthread_mutex_lock(&lk->limits_mu);
    pass = now >= lim->next_ns;
    if (pass) {
        *suppressed = lim->suppressed;
        lim->suppressed = 0;
        lim->next_ns = now + lk->log_interval_ns;
    } else {
        lim->suppressed++;
    }
    pthread_mutex_unlock(&lk->limits_mu);
    return pass;
}

/* Counts a failed call of cache kind k for key and logs it, at most once
 * an interval for each kind and reason; returns the reason. Called without
 * a cache's lock. */
static enum lookups_reason lookups_failed(struct lookups *lk, enum lookups_kind k, const char *key,
                                          int rc, long status, long long elapsed_ns,
                                          long timeout_ms, const char *why)
{
    enum lookups_reason r = lookups_reason_of(rc, status, elapsed_ns, timeout_ms);
    const char *slash = k != LOOKUPS_K_NODE && k != LOOKUPS_K_NAMESPACE ? strchr(key, '/') : NULL;
    char error[ERR_LEN + 64], hint_buf[256], ns[254];
    unsigned long long suppressed = 0;
    const char *hint;
    struct log_line l;

    atomic_fetch_add(&lk->failures[k][r], 1);
    if (!lk->log || !lookups_limit_pass(lk, &lk->limits[k][r], lk->now(), &suppressed))
        return r;
    if (status)
        snprintf(error, sizeof(error), "%ld%s%s%s", status, lookups_status_phrase(status),
                 *why ? ": " : "", why);
    else
        snprintf(error, sizeof(error), "%s", *why ? why : err_name(rc));
    hint = lookups_hint(k, r, hint_buf, sizeof(hint_buf));
    log_begin(&l, lk->log, LOG_WARN, "API lookup failed; admissions go on without its answer");
    log_str(&l, "kind", lookups_kind_titles[k]);
    if (slash && (size_t)(slash - key) < sizeof(ns)) {
        memcpy(ns, key, (size_t)(slash - key));
        ns[slash - key] = '\0';
        log_str(&l, "namespace", ns);
        log_str(&l, "name", slash + 1);
    } else {
        log_str(&l, "name", key);
    }
    if (status)
        log_int(&l, "status", status);
    log_str(&l, "reason", lookups_reason_name(r));
    log_str(&l, "error", error);
    if (r == LOOKUPS_R_TIMEOUT)
        log_int(&l, "timeout_ms", timeout_ms);
    if (hint)
        log_str(&l, "hint", hint);
    if (suppressed)
        log_int(&l, "suppressed", (long long)suppressed);
    log_end(&l);
    return r;
}

static struct lookups_entry *lookups_find(struct lookups_cache *c, const char *key)
{
    return strmap_get(&c->index, key, strlen(key));
}

/* Empties e: its answer freed, its key out of the index. */
static void lookups_clear(struct lookups_cache *c, struct lookups_entry *e)
{
    if (e->state == LOOKUPS_EMPTY)
        return;
    strmap_del(&c->index, e->key, strlen(e->key));
    cJSON_Delete(e->value);
    e->value = NULL;
    if (e->cm)
        c->bytes -= e->cm->bytes;
    lookups_cm_free(e->cm);
    e->cm = NULL;
    e->state = LOOKUPS_EMPTY;
}

/* A slot for a new key: empty, else the one expiring first; never one that
 * another thread is loading. Every expired entry is freed on the way, so
 * that no answer outlives its TTL in memory. */
static struct lookups_entry *lookups_slot(struct lookups_cache *c, long long now)
{
    struct lookups_entry *best = NULL, *empty = NULL;

    for (int i = 0; i < LOOKUPS_CACHE_MAX; i++) {
        struct lookups_entry *e = &c->e[i];

        if (e->state != LOOKUPS_EMPTY && e->state != LOOKUPS_LOADING && now >= e->expires_ns)
            lookups_clear(c, e);
        if (e->state == LOOKUPS_EMPTY)
            empty = empty ? empty : e;
        else if (e->state != LOOKUPS_LOADING && (!best || e->expires_ns < best->expires_ns))
            best = e;
    }
    return empty ? empty : best;
}

/* Makes room for bytes more of ConfigMap keys within the cache's budget,
 * freeing the entries that expire first, never keep nor one being loaded. */
static void lookups_make_room(struct lookups_cache *c, const struct lookups *lk,
                              const struct lookups_entry *keep, size_t bytes)
{
    while (c->bytes + bytes > lk->configmap_bytes) {
        struct lookups_entry *oldest = NULL;

        for (int i = 0; i < LOOKUPS_CACHE_MAX; i++) {
            struct lookups_entry *e = &c->e[i];

            if (e != keep && e->cm && e->state != LOOKUPS_LOADING &&
                (!oldest || e->expires_ns < oldest->expires_ns))
                oldest = e;
        }
        if (!oldest)
            return;
        lookups_clear(c, oldest);
    }
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

/* ---- the circuit of each kind ------------------------------------------ */

/* Whether a failure for reason r says the API is unwell (no answer, or one
 * from a server that fails as a whole) rather than answering about the
 * object: a 401, 403 or 404 is an answer, and closes the circuit. */
static int lookups_unwell(enum lookups_reason r)
{
    return r == LOOKUPS_R_TIMEOUT || r == LOOKUPS_R_TRANSPORT || r == LOOKUPS_R_SERVER_ERROR ||
           r == LOOKUPS_R_THROTTLED || r == LOOKUPS_R_BAD_BODY;
}

/* Whether a lookup of c that needs a call must go without: the circuit is
 * open, or its probe is in flight. The first lookup after the pause is the
 * probe. With c->mu held. */
static int lookups_circuit_skip(struct lookups_cache *c, long long now)
{
    struct lookups_circuit *cc = &c->circuit;

    if (cc->state == LOOKUPS_OPEN && now >= cc->until_ns)
        cc->state = LOOKUPS_PROBING; /* this lookup probes */
    else if (cc->state != LOOKUPS_CLOSED)
        return cc->skipped++, 1;
    return 0;
}

/* The circuit after a call: an answer closes it; an unwell call opens it
 * when it was the probe, or the circuit_failures-th in a row. With c->mu
 * held; the two lines it may write come once a pause at most. */
static void lookups_circuit_after(struct lookups_cache *c, struct lookups *lk, int unwell,
                                  long long now)
{
    struct lookups_circuit *cc = &c->circuit;
    struct log_line l;

    if (!unwell) {
        if (cc->state != LOOKUPS_CLOSED && lk->log) {
            log_begin(&l, lk->log, LOG_INFO, "API lookups resumed: the API answered");
            log_str(&l, "kind", lookups_kind_titles[c->kind]);
            log_end(&l);
        }
        cc->state = LOOKUPS_CLOSED;
        cc->failures = 0;
        return;
    }
    cc->failures++;
    if (cc->state == LOOKUPS_CLOSED && cc->failures < lk->circuit_failures)
        return;
    if (cc->state == LOOKUPS_CLOSED && lk->log) {
        log_begin(&l, lk->log, LOG_WARN,
                  "API lookups paused: the API failed calls in a row; admissions go on without "
                  "these answers, with a warning");
        log_str(&l, "kind", lookups_kind_titles[c->kind]);
        log_int(&l, "failures", cc->failures);
        log_int(&l, "pause_s", lk->circuit_open_ns / MONOTIME_NS_PER_S);
        log_str(&l, "hint", "see the lines \"API lookup failed\" before this one for why");
        log_end(&l);
    }
    cc->state = LOOKUPS_OPEN;
    cc->until_ns = now + lk->circuit_open_ns;
}

/* ---- a ConfigMap's keys ------------------------------------------------ */

/* The keys are kept, and the values of LOOKUPS_VALUE_MAX bytes or less:
 * admission reads a value only to see whether NCCL_IB_DISABLE is on, and
 * values can be large. Only data counts: the kubelet builds envFrom
 * variables from data alone, never from binaryData. */
#define LOOKUPS_VALUE_MAX 64
/* The most name ends (suffixes) a profiles snapshot may give; past it,
 * every key is kept (the byte budget still holds). */
#define LOOKUPS_NAMES_MAX (1u << 16)

/* The ends of every name admissions may ask a ConfigMap for: a key that is
 * none of them is never asked for. */
struct lookups_names {
    struct strmap ends;
    int overflow; /* more than LOOKUPS_NAMES_MAX, or out of memory: keep all */
};

static void lookups_add_name(void *ctx, const char *name)
{
    struct lookups_names *w = ctx;
    size_t len = strlen(name);

    for (size_t i = 0; i < len && !w->overflow; i++) {
        int rc = strmap_put(&w->ends, name + i, len - i, (void *)name);

        w->overflow = rc != ERR_OK && rc != ERR_FAIL;
    }
}

/* Whether data's member it is kept, with its text's size in *bytes. */
static int lookups_cm_keeps(const cJSON *it, struct lookups_names *w, size_t *bytes)
{
    const char *v = cJSON_GetStringValue(it);
    size_t klen;

    if (!it->string)
        return 0;
    klen = strlen(it->string);
    if (w && !strmap_get(&w->ends, it->string, klen))
        return 0;
    *bytes = klen + 1 + (v && strlen(v) <= LOOKUPS_VALUE_MAX ? strlen(v) + 1 : 0);
    return 1;
}

/* The keys of data that w names (w NULL: all) in one lookups_cm. ERR_OK,
 * or ERR_NOMEM. Called without a lock: a tenant's ConfigMap may have
 * 100,000 keys. */
static int lookups_cm_build(const cJSON *data, struct lookups_names *w, struct lookups_cm **out)
{
    size_t n = 0, text = 0, b, at = 0;
    struct lookups_cm *cm;
    const cJSON *it;

    *out = NULL;
    cJSON_ArrayForEach(it, data)
    {
        if (lookups_cm_keeps(it, w, &b))
            n++, text += b;
    }
    if (!(cm = malloc(sizeof(*cm) + text + 1)))
        return ERR_NOMEM;
    strmap_init(&cm->keys, n, (unsigned long long)(uintptr_t)cm ^ (unsigned long long)text);
    cJSON_ArrayForEach(it, data)
    {
        const char *v = cJSON_GetStringValue(it), *value = lookups_unkept;
        char *key = cm->text + at;
        size_t klen;
        int rc;

        if (!lookups_cm_keeps(it, w, &b))
            continue;
        klen = strlen(it->string);
        memcpy(key, it->string, klen + 1);
        if (b > klen + 1) {
            memcpy(key + klen + 1, v, b - klen - 1);
            value = key + klen + 1;
        }
        at += b;
        /* ERR_FAIL: a duplicate, the first kept as a scan finds it. */
        if ((rc = strmap_put(&cm->keys, key, klen, (void *)value)) != ERR_OK && rc != ERR_FAIL) {
            lookups_cm_free(cm);
            return ERR_NOMEM;
        }
    }
    cm->bytes = sizeof(*cm) + text + 1 + strmap_bytes(&cm->keys);
    *out = cm;
    return ERR_OK;
}

/* A fetched ConfigMap's data as the cache keeps it, for the request's
 * profiles (every key without them); consumes *value. ERR_OK with *cm
 * (NULL: no such ConfigMap), ERR_NOMEM, or ERR_TOO_BIG when what is kept
 * exceeds the whole cache's budget. */
static int lookups_cm_of(const struct lookups_request *req, cJSON **value, struct lookups_cm **cm,
                         char *err, size_t errlen)
{
    struct lookups_names w = {.overflow = !req->ps};
    int rc = ERR_OK;

    *cm = NULL;
    if (!*value)
        return ERR_OK;
    strmap_init(&w.ends, LOOKUPS_NAMES_MAX, (unsigned long long)(uintptr_t)&w);
    if (req->ps)
        mutate_envfrom_names(req->ps, lookups_add_name, &w);
    if (lookups_cm_build(*value, w.overflow ? NULL : &w, cm) != ERR_OK)
        rc = err_set(err, errlen, ERR_NOMEM, "out of memory keeping the keys");
    else if ((*cm)->bytes > req->lk->configmap_bytes) {
        rc = err_set(err, errlen, ERR_TOO_BIG,
                     "its %zu keys kept take %zu bytes, over the %zu bytes of the cache",
                     (*cm)->keys.n, (*cm)->bytes, req->lk->configmap_bytes);
        lookups_cm_free(*cm);
        *cm = NULL;
    }
    strmap_free(&w.ends);
    cJSON_Delete(*value);
    *value = NULL;
    return rc;
}

/* ---- the caches' one rule: a call per key, answers and failures kept --- */

/* Loads key into its slot, which is not LOADING, with timeout_ms to do it
 * (the lock is released around the API call, and around making a
 * ConfigMap's keys). Every failure is kept for LOOKUPS_FAILED_TTL_NS, a
 * call cut short by the budget included: an API that does not answer
 * within the budget would otherwise cost each admission its whole budget,
 * one after the other. */
static struct lookups_entry *lookups_load(struct lookups_cache *c, struct lookups_entry *e,
                                          const struct lookups_request *req, const char *key,
                                          long timeout_ms)
{
    struct lookups *lk = req->lk;
    struct lookups_cm *cm = NULL;
    struct arena *a;
    cJSON *value = NULL;
    char err[ERR_LEN] = "";
    long status = 0;
    long long started, ended;
    int rc, unwell = 0;

    if (e->state != LOOKUPS_EMPTY && strcmp(e->key, key) != 0)
        lookups_clear(c, e);
    if (e->state == LOOKUPS_EMPTY) {
        snprintf(e->key, sizeof(e->key), "%s", key);
        if (strmap_put(&c->index, e->key, strlen(e->key), e) != ERR_OK) {
            /* Out of memory for the index: unknown, and no probe made. */
            if (c->circuit.state == LOOKUPS_PROBING)
                c->circuit.state = LOOKUPS_OPEN;
            return NULL;
        }
    }
    cJSON_Delete(e->value);
    e->value = NULL;
    e->state = LOOKUPS_LOADING;
    pthread_mutex_unlock(&c->mu);
    /* The answer outlives this request: it must not come from its arena. */
    a = arena_suspend();
    started = lk->now();
    rc = c->fetch(lk, key, timeout_ms, &value, &status, err, sizeof(err));
    ended = lk->now();
    if (rc == ERR_OK && c->kind == LOOKUPS_K_CONFIGMAP)
        rc = lookups_cm_of(req, &value, &cm, err, sizeof(err));
    arena_resume(a);
    if (rc != ERR_OK)
        unwell = lookups_unwell(
            lookups_failed(lk, c->kind, key, rc, status, ended - started, timeout_ms, err));
    pthread_mutex_lock(&c->mu);
    lookups_circuit_after(c, lk, unwell, lk->now());
    if (e->cm)
        c->bytes -= e->cm->bytes;
    lookups_cm_free(e->cm);
    e->cm = NULL;
    if (cm)
        lookups_make_room(c, lk, e, cm->bytes);
    e->state = rc == ERR_OK ? LOOKUPS_READY : LOOKUPS_FAILED;
    e->value = value;
    e->cm = cm;
    c->bytes += cm ? cm->bytes : 0;
    e->generation = req->generation;
    e->expires_ns = lk->now() + (rc == ERR_OK ? c->ttl_ns : LOOKUPS_FAILED_TTL_NS);
    pthread_cond_broadcast(&c->done);
    return rc == ERR_OK ? e : NULL;
}

/* Whether e, not being loaded, still answers req: within its TTL, and for
 * a ConfigMap's keys, kept for the request's profiles. */
static int lookups_fresh(const struct lookups_cache *c, const struct lookups_entry *e,
                         const struct lookups_request *req, long long now)
{
    return now < e->expires_ns && (c->kind != LOOKUPS_K_CONFIGMAP || e->state != LOOKUPS_READY ||
                                   e->generation == req->generation);
}

/* Returns the ready entry for key with the cache locked, or NULL (unlocked)
 * when the answer cannot be had within the request's budget, or the kind's
 * circuit is open. */
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
            /* A probe may hang as long as the API: it is one admission's
             * wait, not every one's. */
            if (c->circuit.state != LOOKUPS_CLOSED) {
                c->circuit.skipped++;
                e = NULL;
                break;
            }
            c->waits += !waited;
            waited = 1;
            if (lookups_wait(c, lk, req->deadline_ns) == 0)
                continue;
            /* Out of time. The call may have ended just now, and the slot
             * may even hold another key since: look the key up once more. */
            e = lookups_find(c, key);
            if (e && (e->state != LOOKUPS_READY || !lookups_fresh(c, e, req, lk->now())))
                e = NULL;
            break;
        }
        if (e && lookups_fresh(c, e, req, lk->now()))
            break;
        /* No time for a call: leave what is cached (even if stale) as it
         * is, for a request that has the time. */
        left = req->deadline_ns - lk->now();
        if (left <= LOOKUPS_MIN_CALL_NS) {
            e = NULL;
            break;
        }
        e = e ? e : lookups_slot(c, lk->now());
        if (e && !lookups_circuit_skip(c, lk->now()))
            e = lookups_load(c, e, req, key, (long)(left / MONOTIME_NS_PER_MS));
        else
            e = NULL;
        break;
    }
    if (e && e->state == LOOKUPS_READY)
        return e;
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* The message of the Status in an error answer into err ("" when it has
 * none); returns ERR_FAIL. */
static int lookups_status_message(const struct dynbuf *body, char *err, size_t errlen)
{
    cJSON *st = cJSON_ParseWithLength(dynbuf_ptr(body), dynbuf_len(body));
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "message"));
    int rc = err_set(err, errlen, ERR_FAIL, "%s", msg ? msg : "");

    cJSON_Delete(st);
    return rc;
}

/* GETs path and parses a 200 body, which must be a JSON object: ERR_OK with
 * *doc and *found = 1, or for a 404 ERR_OK with *found = 0 (err holds the
 * Status message). Else an ERR_* code with *status (0: no answer) and err. */
static int lookups_get_json(const struct lookups *lk, const char *path, long timeout_ms,
                            cJSON **doc, int *found, long *status, char *err, size_t errlen)
{
    struct dynbuf body;
    int rc;

    *doc = NULL;
    *found = 0;
    *status = 0;
    dynbuf_init(&body, LOOKUPS_BODY_MAX);
    rc =
        lk->call(lk->call_ctx,
                 &(struct kubeapi_request){.method = "GET", .path = path, .timeout_ms = timeout_ms},
                 &body, status, err, errlen);
    if (rc != ERR_OK)
        goto cleanup;
    if (*status != 200) {
        rc = lookups_status_message(&body, err, errlen);
        if (*status == 404)
            rc = ERR_OK;
        goto cleanup;
    }
    *doc = cJSON_ParseWithLength(dynbuf_ptr(&body), dynbuf_len(&body));
    if (!cJSON_IsObject(*doc)) {
        cJSON_Delete(*doc);
        *doc = NULL;
        rc = err_set(err, errlen, ERR_FAIL, "GET %s: the answer is not a JSON object", path);
        goto cleanup;
    }
    *found = 1;
cleanup:
    dynbuf_free(&body);
    return rc;
}

/* The labels of the object at path; one that does not exist (404) is a
 * failed lookup. */
static int lookups_fetch_labels(const struct lookups *lk, const char *path, long timeout_ms,
                                cJSON **value, long *status, char *err, size_t errlen)
{
    cJSON *obj = NULL, *labels;
    int found, rc = lookups_get_json(lk, path, timeout_ms, &obj, &found, status, err, errlen);

    if (rc != ERR_OK)
        return rc;
    if (!found)
        return ERR_FAIL; /* *status 404, err the API's message */
    labels = cJSON_DetachItemFromObjectCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels");
    cJSON_Delete(obj);
    *value = labels ? labels : cJSON_CreateObject();
    return *value ? ERR_OK : err_set(err, errlen, ERR_NOMEM, "GET %s: out of memory", path);
}

/* The hooks check the names before a lookup; these checks only keep a path
 * from being built of anything else. */
static int lookups_fetch_node(const struct lookups *lk, const char *name, long timeout_ms,
                              cJSON **value, long *status, char *err, size_t errlen)
{
    char path[400];

    *status = 0;
    if (!k8sname_subdomain(name))
        return err_set(err, errlen, ERR_FAIL, "not a Node name");
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", name);
    return lookups_fetch_labels(lk, path, timeout_ms, value, status, err, errlen);
}

static int lookups_fetch_namespace(const struct lookups *lk, const char *name, long timeout_ms,
                                   cJSON **value, long *status, char *err, size_t errlen)
{
    char path[400];

    *status = 0;
    if (!k8sname_label(name))
        return err_set(err, errlen, ERR_FAIL, "not a Namespace name");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s", name);
    return lookups_fetch_labels(lk, path, timeout_ms, value, status, err, errlen);
}

/* Whether key is a namespaced object's "namespace/name" (a ConfigMap's, a
 * JobSet's, a TrainJob's), with ns (of nslen bytes) set to its namespace. */
static int lookups_namespaced_key(const char *key, char *ns, size_t nslen)
{
    const char *slash = strchr(key, '/');

    if (!slash || (size_t)(slash - key) >= nslen)
        return 0;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    return k8sname_label(ns) && k8sname_subdomain(slash + 1);
}

/* ConfigMap "ns/name"'s data, an object (empty when it has none), which
 * lookups_cm_of makes into the keys kept; NULL value for a ConfigMap that
 * does not exist. */
static int lookups_fetch_configmap(const struct lookups *lk, const char *key, long timeout_ms,
                                   cJSON **value, long *status, char *err, size_t errlen)
{
    char path[600], ns[254];
    cJSON *cm = NULL;
    int found, rc;

    *status = 0;
    if (!lookups_namespaced_key(key, ns, sizeof(ns)))
        return err_set(err, errlen, ERR_FAIL, "not a ConfigMap's namespace/name");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", ns, strchr(key, '/') + 1);
    rc = lookups_get_json(lk, path, timeout_ms, &cm, &found, status, err, errlen);
    if (rc != ERR_OK)
        return rc;
    if (found) {
        *value = cJSON_DetachItemFromObjectCaseSensitive(cm, "data");
        if (!cJSON_IsObject(*value)) {
            cJSON_Delete(*value);
            *value = cJSON_CreateObject();
        }
    }
    cJSON_Delete(cm);
    if (found && !*value)
        return err_set(err, errlen, ERR_NOMEM, "GET %s: out of memory", path);
    return ERR_OK;
}

/* The summary (jobref.h) of the object "ns/name" key names at
 * /apis/GROUP_VERSION/namespaces/NS/RESOURCE/NAME, made by summarize: ERR_OK
 * with *value, NULL for a 404 (an answer: no such object); a 200 that
 * summarize cannot read is ERR_FAIL with *status 200 (a bad body). */
static int lookups_fetch_summary(const struct lookups *lk, const char *key, const char *group,
                                 const char *resource, long timeout_ms, cJSON **value, long *status,
                                 int (*summarize)(const cJSON *, cJSON **, char *, size_t),
                                 char *err, size_t errlen)
{
    char path[700], ns[254], why[ERR_LEN];
    cJSON *obj = NULL;
    int found, rc;

    *status = 0;
    if (!lookups_namespaced_key(key, ns, sizeof(ns)))
        return err_set(err, errlen, ERR_FAIL, "not a namespace/name");
    snprintf(path, sizeof(path), "/apis/%s/namespaces/%s/%s/%s", group, ns, resource,
             strchr(key, '/') + 1);
    rc = lookups_get_json(lk, path, timeout_ms, &obj, &found, status, err, errlen);
    if (rc != ERR_OK || !found)
        return rc;
    rc = summarize(obj, value, why, sizeof(why));
    cJSON_Delete(obj);
    if (rc == ERR_FAIL)
        return err_set(err, errlen, ERR_FAIL, "GET %s: not an object this webhook reads: %s", path,
                       why);
    return rc == ERR_OK ? ERR_OK : err_set(err, errlen, rc, "GET %s: %s", path, why);
}

static int lookups_fetch_jobset(const struct lookups *lk, const char *key, long timeout_ms,
                                cJSON **value, long *status, char *err, size_t errlen)
{
    return lookups_fetch_summary(lk, key, "jobset.x-k8s.io/v1alpha2", "jobsets", timeout_ms, value,
                                 status, jobref_jobset, err, errlen);
}

static int lookups_fetch_trainjob(const struct lookups *lk, const char *key, long timeout_ms,
                                  cJSON **value, long *status, char *err, size_t errlen)
{
    return lookups_fetch_summary(lk, key, "trainer.kubeflow.org/v1alpha1", "trainjobs", timeout_ms,
                                 value, status, jobref_trainjob, err, errlen);
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

/* A name that no object can have is unknown without a call, a slot or a
 * failure counted: no API was asked. */
static int lookups_node_labels(void *ctx, const char *name, cJSON **labels)
{
    struct lookups_request *req = ctx;

    if (!k8sname_subdomain(name))
        return -1;
    return lookups_labels(req, &req->lk->nodes, name, labels);
}

static int lookups_namespace_labels(void *ctx, const char *name, cJSON **labels)
{
    struct lookups_request *req = ctx;

    if (!k8sname_label(name))
        return -1;
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
    const char *v;
    char ck[512], nsbuf[254];

    if ((size_t)snprintf(ck, sizeof(ck), "%s/%s", ns, name) >= sizeof(ck) ||
        !lookups_namespaced_key(ck, nsbuf, sizeof(nsbuf)))
        return MUTATE_ENVFROM_UNKNOWN;
    e = lookups_acquire(&req->lk->configmaps, req, ck);
    if (!e)
        return MUTATE_ENVFROM_UNKNOWN;
    v = e->cm ? strmap_get(&e->cm->keys, key, strlen(key)) : NULL;
    if (!v)
        answer = MUTATE_ENVFROM_LACKS;
    else if (!value)
        answer = MUTATE_ENVFROM_HAS;
    else if (v != lookups_unkept && strlen(v) < len) {
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

/* "ns/name" into key (len bytes); 0 when it is no object's name: no call,
 * no slot, no failure counted. */
static int lookups_job_key(char *key, size_t len, const char *ns, const char *name)
{
    char nsbuf[254];

    return ns && name && (size_t)snprintf(key, len, "%s/%s", ns, name) < len &&
           lookups_namespaced_key(key, nsbuf, sizeof(nsbuf));
}

/* The TrainJob's runtime into j->runtime (buf, len). A TrainJob that is gone
 * (404) leaves it NULL: its JobSet still says whose it is. */
static enum mutate_lookup lookups_trainjob_runtime(struct lookups_request *req, const char *ns,
                                                   struct mutate_job *j, char *buf, size_t len)
{
    struct lookups_entry *e;
    enum mutate_lookup got;
    char key[512];

    if (!lookups_job_key(key, sizeof(key), ns, j->name))
        return MUTATE_LOOKUP_UNKNOWN;
    e = lookups_acquire(&req->lk->trainjobs, req, key);
    if (!e)
        return MUTATE_LOOKUP_UNKNOWN;
    got = e->value ? jobref_fill_runtime(e->value, j, buf, len) : MUTATE_LOOKUP_FOUND;
    pthread_mutex_unlock(&req->lk->trainjobs.mu);
    return got;
}

/* mutate_hooks.jobset_owner: the JobSet's summary, and for a TrainJob's its
 * runtime too; *job changes only when the whole answer is FOUND. */
static enum mutate_lookup lookups_jobset_owner(void *ctx, const char *ns, const char *name,
                                               struct mutate_job *job, char *buf, size_t len)
{
    struct lookups_request *req = ctx;
    struct mutate_job j = *job;
    struct lookups_entry *e;
    enum mutate_lookup got;
    size_t used = 0;
    char key[512];

    if (!lookups_job_key(key, sizeof(key), ns, name))
        return MUTATE_LOOKUP_UNKNOWN;
    e = lookups_acquire(&req->lk->jobsets, req, key);
    if (!e)
        return MUTATE_LOOKUP_UNKNOWN;
    got = e->value ? jobref_fill_jobset(e->value, &j, buf, len, &used) : MUTATE_LOOKUP_NONE;
    pthread_mutex_unlock(&req->lk->jobsets.mu);
    if (got == MUTATE_LOOKUP_FOUND && j.kind == MUTATE_JOB_TRAINJOB)
        got = lookups_trainjob_runtime(req, ns, &j, buf + used, len - used);
    if (got == MUTATE_LOOKUP_FOUND)
        *job = j;
    return got;
}

void lookups_begin(struct lookups *lk, struct lookups_request *req, struct mutate_hooks *hooks)
{
    assert(lk->magic == LOOKUPS_MAGIC);
    req->lk = lk;
    req->deadline_ns = lk->now() + lk->budget_ns;
    req->ps = NULL;
    req->generation = 0;
    hooks->select.node_labels = lookups_node_labels;
    hooks->select.namespace_labels = lookups_namespace_labels;
    hooks->select.ctx = req;
    hooks->configmap_has_key = lookups_configmap_has_key;
    hooks->configmap_value = lookups_configmap_value;
    hooks->jobset_owner = lookups_jobset_owner;
    hooks->ctx = req;
}

void lookups_use_profiles(struct lookups_request *req, const struct profiles *ps,
                          unsigned long generation)
{
    req->ps = ps;
    req->generation = ps ? generation : 0;
}
