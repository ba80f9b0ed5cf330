/* metrics: the server's counters and their Prometheus text exposition.
 *
 * Every counter is a C11 atomic updated on the request path without locks;
 * the label sets are fixed at compile time, so the exposition is bounded and
 * no client input ever becomes a label value. The one label set that is not
 * fixed, admissions by profile, takes names from the admin's profiles (63
 * bytes of [a-z0-9.-] each, checked by profiles.c): the first
 * METRICS_PROFILES_MAX names seen since start, across reloads (a counter
 * never disappears), and "_other" for any after them, so at most
 * METRICS_PROFILES_MAX + 1 series.
 */
#ifndef RDMA_WEBHOOK_METRICS_H
#define RDMA_WEBHOOK_METRICS_H

#include "base/dynbuf.h"
#include "base/err.h"

#include <pthread.h>
#include <stdatomic.h>

enum metrics_http {
    METRICS_400,
    METRICS_401, /* /metrics without a token the API authenticates (--metrics-auth) */
    METRICS_403, /* /metrics for a user the API does not allow */
    METRICS_404,
    METRICS_405,
    METRICS_413,
    METRICS_415,
    METRICS_503,
    METRICS_5XX,
    METRICS_HTTP_CODES
};

#define METRICS_LATENCY_BUCKETS 12
/* Room for mutate's reasons and warning kinds, without including mutate.h
 * here: metrics.c checks at compile time that they fit. */
#define METRICS_REASONS_MAX       32
#define METRICS_WARNING_KINDS_MAX 32
/* Twice the profiles one file may have (PROFILES_MAX_PROFILES): room for a
 * full renaming by a reload. */
#define METRICS_PROFILES_MAX     128
#define METRICS_PROFILE_NAME_MAX 64
/* Room for lookups' kinds and reasons, which metrics.c checks the same way. */
#define METRICS_LOOKUP_KINDS_MAX   8
#define METRICS_LOOKUP_REASONS_MAX 16
/* Room for clientauth's verdicts, checked the same way. */
#define METRICS_CLIENT_AUTH_MAX 4
/* Room for metricsauth's verdicts (metrics.c checks). */
#define METRICS_METRICS_AUTH_MAX 8

struct metrics_profile {
    char name[METRICS_PROFILE_NAME_MAX];
    atomic_ullong admissions;
};

struct metrics {
    atomic_ullong admissions[METRICS_REASONS_MAX + 1]; /* the last: ignored, not a Pod CREATE */
    atomic_ullong http_errors[METRICS_HTTP_CODES];
    atomic_ullong latency_bucket[METRICS_LATENCY_BUCKETS]; /* cumulative on render */
    atomic_ullong latency_count;
    atomic_ullong latency_sum_ns;
    atomic_ullong patch_ops;
    atomic_ullong warnings[METRICS_WARNING_KINDS_MAX];
    atomic_ullong profile_reviews[2]; /* /validate-profiles: allowed, refused */
    atomic_ullong pinned; /* admissions whose patch pins the pod (a MUTATE_W_PINNED warning) */
    atomic_int in_flight;
    /* Admissions by profile: entries [0, n_profiles) are in use; lock guards
     * adding one (and reading n_profiles with the names). */
    pthread_mutex_t profiles_lock;
    struct metrics_profile profiles[METRICS_PROFILES_MAX];
    size_t n_profiles;
    atomic_ullong profiles_other;
};

/* The Events' counters (events_get_stats): reports queued, dropped at a full
 * queue, aggregated into an earlier Event's series; requests that created an
 * Event, updated a series, failed. */
struct metrics_events {
    unsigned long long reported, dropped, aggregated, created, updated, failed;
};

/* Values owned elsewhere that the exposition includes. */
struct metrics_gauges {
    unsigned long profiles_loaded; /* also the serving generation (0: none) */
    unsigned long profiles_rejected;
    int profiles_stale;           /* 1: the version serving is not the source's current one */
    long long profiles_loaded_at; /* unix seconds the version serving was first loaded; 0: none */
    unsigned long long last_good[3]; /* copy writes: written, unchanged, failed (lastgood) */
    /* Failed API lookups by enum lookups_kind and enum lookups_reason
     * (lookups_failures); all 0 without an API. */
    unsigned long long lookup_failures[METRICS_LOOKUP_KINDS_MAX][METRICS_LOOKUP_REASONS_MAX];
    /* By kind: lookups skipped, the circuit open (lookups_skipped,
     * lookups_circuit_open); the ConfigMaps' keys cached, in bytes. */
    unsigned long long lookup_skipped[METRICS_LOOKUP_KINDS_MAX];
    int lookup_circuit_open[METRICS_LOOKUP_KINDS_MAX];
    unsigned long long lookup_configmap_bytes;
    /* The server's connections (connguard) and request bodies (bodybuf). */
    unsigned connections_open;
    unsigned long long connections_closed_header_timeout;
    unsigned long long connections_closed_body_timeout;
    unsigned long long connections_closed_displaced;
    unsigned long long connections_refused; /* at --max-connections */
    size_t body_bytes;                      /* memory held for request bodies */
    unsigned long long body_refused;        /* 503s: --body-budget-bytes used up */
    /* The Events' counters (events_get_stats); all 0 without an API. */
    struct metrics_events events;
    /* TLS clients refused by enum clientauth_verdict (clientauth_refused);
     * all 0 without --client-ca. */
    unsigned long long client_auth_refused[METRICS_CLIENT_AUTH_MAX];
    /* /metrics requests by enum metricsauth_verdict (metricsauth_count);
     * all 0 without --metrics-auth kubernetes. */
    unsigned long long metrics_auth[METRICS_METRICS_AUTH_MAX];
    long long cert_not_after; /* unix seconds; 0 when no certificate */
    unsigned long cert_generation;
    unsigned long long log_dropped;
    const char *version;
};

void metrics_init(struct metrics *m);

/* Counts one admission; reason (an enum mutate_reason) does not apply when
 * ignored is set. warning_kinds: MUTATE_W_KINDS counts, or NULL. */
void metrics_admission(struct metrics *m, int ignored, int reason, long long ns, size_t ops,
                       const unsigned *warning_kinds);
void metrics_http_error(struct metrics *m, unsigned status);
/* Counts one admission whose pod got profile (mutated, or nothing missing). */
void metrics_admission_profile(struct metrics *m, const char *profile);

/* Appends the whole exposition and returns ERR_OK, or returns the first error
 * of a write, ERR_TOO_BIG (out's cap is too small) or ERR_NOMEM, with out
 * left as it was. */
int metrics_render(struct metrics *m, const struct metrics_gauges *g, struct dynbuf *out);

#endif
