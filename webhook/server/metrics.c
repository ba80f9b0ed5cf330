#include "server/metrics.h"

#include "wire/clientauth.h"
#include "kube/lookups.h"
#include "kube/metricsauth.h"
#include "admission/mutate.h"

#include <stdarg.h>
#include <string.h>

_Static_assert(MUTATE_REASONS <= METRICS_REASONS_MAX, "raise METRICS_REASONS_MAX");
_Static_assert(MUTATE_W_KINDS <= METRICS_WARNING_KINDS_MAX, "raise METRICS_WARNING_KINDS_MAX");
_Static_assert(LOOKUPS_KINDS <= METRICS_LOOKUP_KINDS_MAX, "raise METRICS_LOOKUP_KINDS_MAX");
_Static_assert(LOOKUPS_REASONS <= METRICS_LOOKUP_REASONS_MAX, "raise METRICS_LOOKUP_REASONS_MAX");
_Static_assert(CLIENTAUTH_VERDICTS <= METRICS_CLIENT_AUTH_MAX, "raise METRICS_CLIENT_AUTH_MAX");
_Static_assert(METRICSAUTH_VERDICTS <= METRICS_METRICS_AUTH_MAX, "raise METRICS_METRICS_AUTH_MAX");

static const unsigned metrics_http_codes[METRICS_HTTP_CODES] = {400, 401, 403, 404, 405,
                                                                413, 415, 503, 500};

/* Upper bounds in nanoseconds: an admission is expected in well under a
 * millisecond, and the apiserver gives up at the webhook's timeout. */
static const unsigned long long metrics_bounds_ns[METRICS_LATENCY_BUCKETS] = {
    50000,   100000,   250000,   500000,    1000000,   2500000,
    5000000, 10000000, 25000000, 100000000, 500000000, 1000000000};

void metrics_init(struct metrics *m)
{
    memset(m, 0, sizeof(*m));
    /* A static initializer: nothing to destroy, as the rest needs no stop. */
    m->profiles_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}

void metrics_admission_profile(struct metrics *m, const char *profile)
{
    size_t i;

    if (!profile || !*profile || strlen(profile) >= METRICS_PROFILE_NAME_MAX) {
        atomic_fetch_add(&m->profiles_other, 1);
        return;
    }
    pthread_mutex_lock(&m->profiles_lock);
    for (i = 0; i < m->n_profiles && strcmp(m->profiles[i].name, profile) != 0; i++)
        ;
    if (i == m->n_profiles && i < METRICS_PROFILES_MAX)
        memcpy(m->profiles[m->n_profiles++].name, profile, strlen(profile) + 1);
    if (i < m->n_profiles)
        atomic_fetch_add(&m->profiles[i].admissions, 1);
    else
        atomic_fetch_add(&m->profiles_other, 1);
    pthread_mutex_unlock(&m->profiles_lock);
}

void metrics_admission(struct metrics *m, int ignored, int reason, long long ns, size_t ops,
                       const unsigned *warning_kinds)
{
    int b = 0;

    /* The slot after the reasons counts the ignored (metrics_render). */
    atomic_fetch_add(
        &m->admissions[ignored || reason < 0 || reason >= MUTATE_REASONS ? METRICS_REASONS_MAX
                                                                         : reason],
        1);
    atomic_fetch_add(&m->patch_ops, ops);
    for (int k = 0; k < MUTATE_W_KINDS && warning_kinds; k++)
        if (warning_kinds[k])
            atomic_fetch_add(&m->warnings[k], warning_kinds[k]);
    /* mutate says it pinned a pod with exactly one such warning; a reported
     * pod was warned so, and not pinned. */
    if (warning_kinds && warning_kinds[MUTATE_W_PINNED] && !ignored && reason == MUTATE_R_MUTATED)
        atomic_fetch_add(&m->pinned, 1);
    if (ns < 0)
        ns = 0;
    while (b < METRICS_LATENCY_BUCKETS && (unsigned long long)ns > metrics_bounds_ns[b])
        b++;
    if (b < METRICS_LATENCY_BUCKETS)
        atomic_fetch_add(&m->latency_bucket[b], 1);
    atomic_fetch_add(&m->latency_count, 1);
    atomic_fetch_add(&m->latency_sum_ns, (unsigned long long)ns);
}

void metrics_http_error(struct metrics *m, unsigned status)
{
    int i;

    for (i = 0; i < METRICS_HTTP_CODES - 1 && metrics_http_codes[i] != status; i++)
        ;
    atomic_fetch_add(&m->http_errors[i], 1);
}

/* The exposition being written: the first dynbuf error is kept and every
 * later write skipped, so the result is that error, not a guess. */
struct metrics_out {
    struct dynbuf *b;
    int err;
};

__attribute__((format(printf, 2, 3))) static void metrics_put(struct metrics_out *o,
                                                              const char *fmt, ...)
{
    va_list ap;

    if (o->err)
        return;
    va_start(ap, fmt);
    o->err = dynbuf_vprintf(o->b, fmt, ap);
    va_end(ap);
}

static void metrics_puts(struct metrics_out *o, const char *s)
{
    if (!o->err)
        o->err = dynbuf_addstr(o->b, s);
}

static void metrics_render_admissions(struct metrics *m, struct metrics_out *out)
{
    metrics_puts(out, "# HELP rdma_webhook_admissions_total Pod admissions by result.\n"
                      "# TYPE rdma_webhook_admissions_total counter\n");
    for (int i = 0; i < MUTATE_REASONS; i++) {
        enum mutate_reason r = (enum mutate_reason)i;
        enum mutate_outcome o = mutate_reason_outcome(r);

        /* For a skip the reason says why; the other results need none. */
        metrics_put(out, "rdma_webhook_admissions_total{result=\"%s\",reason=\"%s\"} %llu\n",
                    mutate_outcome_name(o), o == MUTATE_SKIPPED ? mutate_reason_name(r) : "",
                    atomic_load(&m->admissions[i]));
    }
    metrics_put(out, "rdma_webhook_admissions_total{result=\"ignored\",reason=\"\"} %llu\n",
                atomic_load(&m->admissions[METRICS_REASONS_MAX]));
    metrics_puts(out, "# HELP rdma_webhook_http_errors_total Requests answered with an error "
                      "status.\n# TYPE rdma_webhook_http_errors_total counter\n");
    for (int i = 0; i < METRICS_HTTP_CODES; i++)
        metrics_put(out, "rdma_webhook_http_errors_total{code=\"%u\"} %llu\n",
                    metrics_http_codes[i], atomic_load(&m->http_errors[i]));
    metrics_puts(out, "# HELP rdma_webhook_warnings_total Warnings returned to users, by kind.\n"
                      "# TYPE rdma_webhook_warnings_total counter\n");
    for (int k = 0; k < MUTATE_W_KINDS; k++)
        metrics_put(out, "rdma_webhook_warnings_total{kind=\"%s\"} %llu\n",
                    mutate_warning_kind_name((enum mutate_warning_kind)k),
                    atomic_load(&m->warnings[k]));
    metrics_put(out,
                "# HELP rdma_webhook_patch_operations_total JSON Patch operations returned.\n"
                "# TYPE rdma_webhook_patch_operations_total counter\n"
                "rdma_webhook_patch_operations_total %llu\n",
                atomic_load(&m->patch_ops));
    metrics_put(out,
                "# HELP rdma_webhook_pinned_pods_total Pods given their profile's nodeLabels as "
                "nodeSelector (pin).\n"
                "# TYPE rdma_webhook_pinned_pods_total counter\n"
                "rdma_webhook_pinned_pods_total %llu\n",
                atomic_load(&m->pinned));
    metrics_put(out,
                "# HELP rdma_webhook_profile_reviews_total Edits of the profiles ConfigMap "
                "checked at /validate-profiles, by result.\n"
                "# TYPE rdma_webhook_profile_reviews_total counter\n"
                "rdma_webhook_profile_reviews_total{result=\"allowed\"} %llu\n"
                "rdma_webhook_profile_reviews_total{result=\"refused\"} %llu\n",
                atomic_load(&m->profile_reviews[0]), atomic_load(&m->profile_reviews[1]));
}

static void metrics_render_latency(struct metrics *m, struct metrics_out *out)
{
    unsigned long long cumulative = 0;

    metrics_puts(out, "# HELP rdma_webhook_admission_duration_seconds Time from the request's "
                      "first byte to the response.\n"
                      "# TYPE rdma_webhook_admission_duration_seconds histogram\n");
    for (int b = 0; b < METRICS_LATENCY_BUCKETS; b++) {
        cumulative += atomic_load(&m->latency_bucket[b]);
        metrics_put(out, "rdma_webhook_admission_duration_seconds_bucket{le=\"%g\"} %llu\n",
                    (double)metrics_bounds_ns[b] / 1e9, cumulative);
    }
    metrics_put(out,
                "rdma_webhook_admission_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
                "rdma_webhook_admission_duration_seconds_sum %.9f\n"
                "rdma_webhook_admission_duration_seconds_count %llu\n",
                atomic_load(&m->latency_count), (double)atomic_load(&m->latency_sum_ns) / 1e9,
                atomic_load(&m->latency_count));
}

static void metrics_render_gauges(struct metrics *m, const struct metrics_gauges *g,
                                  struct metrics_out *out)
{
    metrics_put(out,
                "# HELP rdma_webhook_in_flight_requests Admission requests being served.\n"
                "# TYPE rdma_webhook_in_flight_requests gauge\n"
                "rdma_webhook_in_flight_requests %d\n"
                "# HELP rdma_webhook_profiles_generation Profiles version serving (0: none).\n"
                "# TYPE rdma_webhook_profiles_generation gauge\n"
                "rdma_webhook_profiles_generation %lu\n"
                "# HELP rdma_webhook_profiles_stale 1 while the profiles serving are not the "
                "source's current version (it is invalid or gone): fix the source.\n"
                "# TYPE rdma_webhook_profiles_stale gauge\n"
                "rdma_webhook_profiles_stale %d\n"
                "# HELP rdma_webhook_profiles_loaded_timestamp_seconds When the profiles "
                "serving were first loaded (0: none).\n"
                "# TYPE rdma_webhook_profiles_loaded_timestamp_seconds gauge\n"
                "rdma_webhook_profiles_loaded_timestamp_seconds %lld\n"
                "# HELP rdma_webhook_profiles_last_good_writes_total Writes of the last good "
                "copy: written, unchanged (it held the version already), failed.\n"
                "# TYPE rdma_webhook_profiles_last_good_writes_total counter\n"
                "rdma_webhook_profiles_last_good_writes_total{result=\"written\"} %llu\n"
                "rdma_webhook_profiles_last_good_writes_total{result=\"unchanged\"} %llu\n"
                "rdma_webhook_profiles_last_good_writes_total{result=\"failed\"} %llu\n"
                "# HELP rdma_webhook_profile_reloads_total Profile versions by outcome.\n"
                "# TYPE rdma_webhook_profile_reloads_total counter\n"
                "rdma_webhook_profile_reloads_total{result=\"loaded\"} %lu\n"
                "rdma_webhook_profile_reloads_total{result=\"rejected\"} %lu\n"
                "# HELP rdma_webhook_certificate_expiry_timestamp_seconds notAfter of the "
                "serving certificate.\n"
                "# TYPE rdma_webhook_certificate_expiry_timestamp_seconds gauge\n"
                "rdma_webhook_certificate_expiry_timestamp_seconds %lld\n"
                "# HELP rdma_webhook_certificate_loads_total Serving certificates loaded.\n"
                "# TYPE rdma_webhook_certificate_loads_total counter\n"
                "rdma_webhook_certificate_loads_total %lu\n"
                "# HELP rdma_webhook_log_lines_dropped_total Log lines dropped because "
                "stderr was not read fast enough.\n"
                "# TYPE rdma_webhook_log_lines_dropped_total counter\n"
                "rdma_webhook_log_lines_dropped_total %llu\n"
                "# HELP rdma_webhook_build_info The running build.\n"
                "# TYPE rdma_webhook_build_info gauge\n"
                "rdma_webhook_build_info{version=\"%s\"} 1\n",
                atomic_load(&m->in_flight), g->profiles_loaded, g->profiles_stale,
                g->profiles_loaded_at, g->last_good[0], g->last_good[1], g->last_good[2],
                g->profiles_loaded, g->profiles_rejected, g->cert_not_after, g->cert_generation,
                g->log_dropped, g->version);
}

static void metrics_render_lookups(const struct metrics_gauges *g, struct metrics_out *out)
{
    metrics_puts(out, "# HELP rdma_webhook_lookup_failures_total API lookups (Node and Namespace "
                      "labels, envFrom ConfigMaps) that failed, by kind and reason; the "
                      "admission went on without the answer.\n"
                      "# TYPE rdma_webhook_lookup_failures_total counter\n");
    for (int k = 0; k < LOOKUPS_KINDS; k++)
        for (int r = 0; r < LOOKUPS_REASONS; r++)
            metrics_put(out, "rdma_webhook_lookup_failures_total{kind=\"%s\",reason=\"%s\"} %llu\n",
                        lookups_kind_name((enum lookups_kind)k),
                        lookups_reason_name((enum lookups_reason)r), g->lookup_failures[k][r]);
    metrics_puts(out, "# HELP rdma_webhook_lookup_circuit_open 1 while the lookups of a kind "
                      "are paused after failures in a row (or one call probes the API).\n"
                      "# TYPE rdma_webhook_lookup_circuit_open gauge\n");
    for (int k = 0; k < LOOKUPS_KINDS; k++)
        metrics_put(out, "rdma_webhook_lookup_circuit_open{kind=\"%s\"} %d\n",
                    lookups_kind_name((enum lookups_kind)k), g->lookup_circuit_open[k]);
    metrics_puts(out, "# HELP rdma_webhook_lookup_skipped_total Lookups answered unknown "
                      "without a call while their kind was paused.\n"
                      "# TYPE rdma_webhook_lookup_skipped_total counter\n");
    for (int k = 0; k < LOOKUPS_KINDS; k++)
        metrics_put(out, "rdma_webhook_lookup_skipped_total{kind=\"%s\"} %llu\n",
                    lookups_kind_name((enum lookups_kind)k), g->lookup_skipped[k]);
    metrics_put(out,
                "# HELP rdma_webhook_lookup_configmap_cache_bytes Bytes the cached envFrom "
                "ConfigMaps' keys hold.\n"
                "# TYPE rdma_webhook_lookup_configmap_cache_bytes gauge\n"
                "rdma_webhook_lookup_configmap_cache_bytes %llu\n",
                g->lookup_configmap_bytes);
}

static void metrics_render_profiles(struct metrics *m, struct metrics_out *out)
{
    metrics_puts(out, "# HELP rdma_webhook_profile_admissions_total Pod admissions that got a "
                      "profile (mutated or nothing missing), by profile.\n"
                      "# TYPE rdma_webhook_profile_admissions_total counter\n");
    pthread_mutex_lock(&m->profiles_lock);
    for (size_t i = 0; i < m->n_profiles; i++)
        metrics_put(out, "rdma_webhook_profile_admissions_total{profile=\"%s\"} %llu\n",
                    m->profiles[i].name, atomic_load(&m->profiles[i].admissions));
    pthread_mutex_unlock(&m->profiles_lock);
    metrics_put(out, "rdma_webhook_profile_admissions_total{profile=\"_other\"} %llu\n",
                atomic_load(&m->profiles_other));
}

/* The connection deadlines and the body budget, after the lookups. */
static void metrics_render_limits(const struct metrics_gauges *g, struct metrics_out *out)
{
    metrics_put(out,
                "# HELP rdma_webhook_connections_open Connections open (HTTPS and plain port).\n"
                "# TYPE rdma_webhook_connections_open gauge\n"
                "rdma_webhook_connections_open %u\n"
                "# HELP rdma_webhook_connections_closed_total Connections the server cut: past a "
                "deadline, or displaced at --max-connections.\n"
                "# TYPE rdma_webhook_connections_closed_total counter\n"
                "rdma_webhook_connections_closed_total{reason=\"header-timeout\"} %llu\n"
                "rdma_webhook_connections_closed_total{reason=\"body-timeout\"} %llu\n"
                "rdma_webhook_connections_closed_total{reason=\"displaced\"} %llu\n"
                "# HELP rdma_webhook_connections_refused_total Connections refused at "
                "--max-connections, every open one being served.\n"
                "# TYPE rdma_webhook_connections_refused_total counter\n"
                "rdma_webhook_connections_refused_total %llu\n"
                "# HELP rdma_webhook_request_body_bytes Memory held for request bodies.\n"
                "# TYPE rdma_webhook_request_body_bytes gauge\n"
                "rdma_webhook_request_body_bytes %zu\n"
                "# HELP rdma_webhook_request_body_refused_total Requests answered 503 because "
                "--body-budget-bytes was used up.\n"
                "# TYPE rdma_webhook_request_body_refused_total counter\n"
                "rdma_webhook_request_body_refused_total %llu\n",
                g->connections_open, g->connections_closed_header_timeout,
                g->connections_closed_body_timeout, g->connections_closed_displaced,
                g->connections_refused, g->body_bytes, g->body_refused);
}

/* The Events' counters, after the limits. */
static void metrics_render_events(const struct metrics_gauges *g, struct metrics_out *out)
{
    metrics_put(
        out,
        "# HELP rdma_webhook_event_reports_total Admissions with warnings queued for an Event.\n"
        "# TYPE rdma_webhook_event_reports_total counter\n"
        "rdma_webhook_event_reports_total %llu\n"
        "# HELP rdma_webhook_event_reports_dropped_total Admissions with warnings that got no "
        "Event: the queue was full.\n"
        "# TYPE rdma_webhook_event_reports_dropped_total counter\n"
        "rdma_webhook_event_reports_dropped_total %llu\n"
        "# HELP rdma_webhook_event_reports_aggregated_total Reports counted in the series of an "
        "Event made for an earlier one.\n"
        "# TYPE rdma_webhook_event_reports_aggregated_total counter\n"
        "rdma_webhook_event_reports_aggregated_total %llu\n"
        "# HELP rdma_webhook_event_requests_total Requests to the events.k8s.io API: Events "
        "created, series updated, and requests that failed.\n"
        "# TYPE rdma_webhook_event_requests_total counter\n"
        "rdma_webhook_event_requests_total{result=\"created\"} %llu\n"
        "rdma_webhook_event_requests_total{result=\"updated\"} %llu\n"
        "rdma_webhook_event_requests_total{result=\"failed\"} %llu\n",
        g->events.reported, g->events.dropped, g->events.aggregated, g->events.created,
        g->events.updated, g->events.failed);
}

/* Clients the handshake refused, after the Events: one series a refusing
 * verdict (CLIENTAUTH_OK refuses nothing). */
static void metrics_render_client_auth(const struct metrics_gauges *g, struct metrics_out *out)
{
    metrics_puts(out,
                 "# HELP rdma_webhook_client_auth_refused_total TLS clients refused at the "
                 "handshake by --client-ca: no certificate, one not trusted, or naming none of "
                 "--client-names.\n"
                 "# TYPE rdma_webhook_client_auth_refused_total counter\n");
    for (int v = CLIENTAUTH_NO_CERT; v < CLIENTAUTH_VERDICTS; v++)
        metrics_put(out, "rdma_webhook_client_auth_refused_total{reason=\"%s\"} %llu\n",
                    clientauth_verdict_name((enum clientauth_verdict)v), g->client_auth_refused[v]);
}

/* Who asked for /metrics with --metrics-auth kubernetes, by verdict; this
 * request, being answered, is among the "allowed". */
static void metrics_render_metrics_auth(const struct metrics_gauges *g, struct metrics_out *out)
{
    metrics_puts(out, "# HELP rdma_webhook_metrics_auth_total Requests for /metrics by what the "
                      "API said of their bearer token (--metrics-auth kubernetes).\n"
                      "# TYPE rdma_webhook_metrics_auth_total counter\n");
    for (int v = 0; v < METRICSAUTH_VERDICTS; v++)
        metrics_put(out, "rdma_webhook_metrics_auth_total{result=\"%s\"} %llu\n",
                    metricsauth_verdict_name((enum metricsauth_verdict)v), g->metrics_auth[v]);
}

int metrics_render(struct metrics *m, const struct metrics_gauges *g, struct dynbuf *out)
{
    struct metrics_out o = {out, ERR_OK};
    size_t before = dynbuf_len(out);

    metrics_render_admissions(m, &o);
    metrics_render_profiles(m, &o);
    metrics_render_latency(m, &o);
    metrics_render_gauges(m, g, &o);
    metrics_render_lookups(g, &o);
    metrics_render_limits(g, &o);
    metrics_render_events(g, &o);
    metrics_render_client_auth(g, &o);
    metrics_render_metrics_auth(g, &o);
    /* Half an exposition would read as counters gone back to zero. */
    if (o.err)
        dynbuf_truncate(out, before);
    return o.err;
}
