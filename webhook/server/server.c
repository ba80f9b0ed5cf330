#include "server/server.h"

#include "base/arena.h"
#include "wire/bodybuf.h"
#include "wire/clientauth.h"
#include "wire/connguard.h"
#include "base/err.h"
#include "kube/events.h"
#include "kube/lastgood.h"
#include "host/filewatch.h"
#include "wire/framing.h"
#include "host/log.h"
#include "host/logq.h"
#include "kube/lookups.h"
#include "kube/metricsauth.h"
#include "server/metrics.h"
#include "host/monotime.h"
#include "admission/review.h"
#include "host/store.h"
#include "wire/tlscreds.h"
#include "base/version.h"

#include <arpa/inet.h>
#include <assert.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SERVER_DISCARD_MAX ((size_t)256 << 20)
/* The response carries the patch base64-encoded plus warnings and envelope. */
#define SERVER_RESPONSE_MAX (REVIEW_PATCH_MAX / 3 * 4 + 65536)
/* libmicrohttpd's limit for a daemon is this far above connguard's, which
 * is the one that counts: a connection cut to make room, or past its
 * deadline, still counts in libmicrohttpd's until its thread has closed it
 * (an event loop or two later; it accepts 10 connections in a row), and a
 * new connection must not be refused meanwhile. */
#define SERVER_LIMIT_SLACK 64u
/* How often connection deadlines are checked: they hold to within this. */
#define SERVER_DEADLINE_TICK_MS 100u
/* When a request refused for the body budget may try again. */
#define SERVER_RETRY_AFTER_S "1"
/* A refused TLS client is logged at most once a minute for each verdict: a
 * pod that retries in a loop must not flood the log (the metric counts all). */
#define SERVER_REFUSED_LOG_NS (60LL * 1000000000LL)
/* The largest /validate-profiles body: a ConfigMap review carries object
 * and oldObject, each with at most 1 MiB of data (the apiserver's limit),
 * JSON-escaped. Anything larger is no edit the apiserver can store. */
#define SERVER_PROFILES_BODY_MAX ((size_t)4 << 20)
/* With --metrics-auth the metrics port runs a thread per connection: a
 * check waiting for the API (at most METRICSAUTH_CONCURRENT_MAX at once)
 * holds only its own connection's thread, and the kubelet's probes and
 * cached scrapes go on (one event loop would make them wait behind it, and
 * a pool's thread accepts connections in bursts, some of which would wait
 * behind the check too). The threads are bounded by this many connections
 * (at the limit the one waiting longest gives way, connguard.h): scrapers
 * and probes keep a handful open. */
#define SERVER_METRICS_AUTH_CONNS 64u
/* A /metrics the API could not authorize (503) is logged at most this often:
 * Prometheus retries every scrape, and the line says all there is to say. */
#define SERVER_METRICS_AUTH_LOG_NS (60LL * 1000000000LL)

/* Set by server_init, cleared by server_stop: a use of a stopped or foreign
 * pointer fails an assert instead of corrupting memory. */
#define SERVER_MAGIC 0x53525652u /* "SRVR" */

/* One libmicrohttpd daemon and the connections it holds. */
struct server_listener {
    struct MHD_Daemon *daemon;
    struct server *s;
    struct connguard_list *conns;
    int webhook; /* the admission port (--listen); else the metrics port */
    int tls;     /* speaks TLS: the admission port, and the metrics port with --metrics-auth */
};

struct server {
    unsigned magic;
    struct server_config cfg;
    struct log *log;
    struct store *store;
    struct lookups *lookups; /* NULL: no Kubernetes API, lookups answer "unknown" */
    struct events *events;   /* NULL: no Kubernetes API, no Events */
    struct metrics metrics;
    atomic_int draining; /* readiness goes false first when shutting down */
    int started;         /* server_start ran: server_running may point here */
    struct tlscreds *creds;
    struct clientauth *clientauth; /* NULL: any TLS client is served (no --client-ca) */
    atomic_llong refused_logged_ns[CLIENTAUTH_VERDICTS]; /* monotime of each verdict's last line */
    atomic_llong metrics_auth_logged_ns; /* monotime of the last "cannot authorize" line */
    struct server_listener https[SERVER_MAX_THREADS];
    unsigned n_https;
    struct server_listener plain;
    struct filewatch *cert_watch;
    struct connguard *guard;
    struct bodybuf_pool bodies;
    struct mutate_options mutate_opts; /* from cfg, the same for every admission */
    /* A /validate-profiles check is running: one at a time, so that such
     * requests never hold more than one thread, whatever a client sends. */
    atomic_int profiles_checking;
};

enum server_route {
    ROUTE_NONE,
    ROUTE_MUTATE,
    ROUTE_VALIDATE_PROFILES,
    ROUTE_HEALTHZ,
    ROUTE_READYZ,
    ROUTE_METRICS
};

/* Per-connection state, from the accept to the close: its deadlines, and
 * the certificate pair its TLS handshake was given (held until the close). */
struct server_conn {
    struct connguard_conn guard;
    const struct tlscreds_pair *pair;
    int client_ok; /* with --client-ca: the handshake's client certificate passed */
};

/* Per-request state, from the first call of the access handler to completion. */
struct server_request {
    enum server_route route;
    struct bodybuf body;
    struct connguard_conn *guard; /* NULL: the connection is not tracked */
    unsigned early_status;        /* set when the body cannot be kept */
    size_t discarded;             /* bytes dropped since then */
    long long start_ns;           /* monotime */
};

/* One more header of a response: Allow of a 405, Retry-After of a 503. */
struct server_header {
    const char *name, *value;
};

/* Queues a response. body is either taken over (must_free: libmicrohttpd
 * frees it) or static. */
static enum MHD_Result server_reply(struct server *s, struct MHD_Connection *conn, unsigned status,
                                    const char *type, char *body, size_t len, int must_free,
                                    const struct server_header *extra)
{
    struct MHD_Response *resp;
    enum MHD_Result rc;

    if (status >= 400)
        metrics_http_error(&s->metrics, status);
    resp = MHD_create_response_from_buffer(
        len, body ? body : "", body && must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        if (must_free)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (extra)
        MHD_add_response_header(resp, extra->name, extra->value);
    rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result server_reply_buf(struct server *s, struct MHD_Connection *conn,
                                        unsigned status, const char *type, char *body, size_t len)
{
    return server_reply(s, conn, status, type, body, len, 1, NULL);
}

static enum MHD_Result server_reply_text(struct server *s, struct MHD_Connection *conn,
                                         unsigned status, const char *text)
{
    return server_reply(s, conn, status, "text/plain; charset=utf-8", (char *)text, strlen(text), 0,
                        NULL);
}

static enum MHD_Result server_reply_405(struct server *s, struct MHD_Connection *conn,
                                        const char *text, const char *allow)
{
    struct server_header h = {MHD_HTTP_HEADER_ALLOW, allow};

    return server_reply(s, conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
                        (char *)text, strlen(text), 0, &h);
}

/* The body budget is used up for now: 503, and when to try again. */
static enum MHD_Result server_reply_busy(struct server *s, struct MHD_Connection *conn)
{
    static const char text[] = "request bodies being received use up --body-budget-bytes; "
                               "retry shortly\n";
    struct server_header h = {MHD_HTTP_HEADER_RETRY_AFTER, SERVER_RETRY_AFTER_S};

    return server_reply(s, conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
                        (char *)text, sizeof(text) - 1, 0, &h);
}

/* The most a body of this route may hold. */
static size_t server_body_cap(const struct server *s, enum server_route route)
{
    if (route == ROUTE_VALIDATE_PROFILES && s->cfg.max_body > SERVER_PROFILES_BODY_MAX)
        return SERVER_PROFILES_BODY_MAX;
    return s->cfg.max_body;
}

static enum MHD_Result server_reply_too_large(struct server *s, struct MHD_Connection *conn,
                                              enum server_route route)
{
    return server_reply_text(s, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                             server_body_cap(s, route) < s->cfg.max_body
                                 ? "body exceeds 4 MiB, the most a review of a profiles "
                                   "ConfigMap takes\n"
                                 : "body exceeds --max-body-bytes\n");
}

/* A body that could not be kept is answered once it has been read. */
static enum MHD_Result server_reply_early(struct server *s, struct MHD_Connection *conn,
                                          unsigned status, enum server_route route)
{
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        return server_reply_busy(s, conn);
    if (status == MHD_HTTP_CONTENT_TOO_LARGE)
        return server_reply_too_large(s, conn, route);
    return server_reply_text(s, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                             "out of memory while reading the body\n");
}

static enum server_route server_route_of(const char *url, int webhook)
{
    if (webhook && strcmp(url, "/mutate") == 0)
        return ROUTE_MUTATE;
    if (webhook && strcmp(url, "/validate-profiles") == 0)
        return ROUTE_VALIDATE_PROFILES;
    if (strcmp(url, "/healthz") == 0)
        return ROUTE_HEALTHZ;
    if (strcmp(url, "/readyz") == 0)
        return ROUTE_READYZ;
    if (!webhook && strcmp(url, "/metrics") == 0)
        return ROUTE_METRICS;
    return ROUTE_NONE;
}

/* application/json, with or without parameters such as charset. */
static int server_is_json(const char *type)
{
    size_t n = strlen("application/json");

    return type && strncasecmp(type, "application/json", n) == 0 &&
           (type[n] == '\0' || type[n] == ';' || type[n] == ' ');
}

/* What metrics_render shows of the server's own parts: connections, bodies,
 * Events and client certificates. */
static void server_gauges(struct server *s, struct metrics_gauges *g)
{
    struct events_stats st = {0};

    g->connections_open = connguard_open_count(s->guard);
    g->connections_closed_header_timeout = connguard_cuts(s->guard, CONNGUARD_HEADER_TIMEOUT);
    g->connections_closed_body_timeout = connguard_cuts(s->guard, CONNGUARD_BODY_TIMEOUT);
    g->connections_closed_displaced = connguard_cuts(s->guard, CONNGUARD_DISPLACED);
    g->connections_refused = connguard_refused(s->guard);
    g->body_bytes = bodybuf_pool_used(&s->bodies);
    g->body_refused = atomic_load(&s->bodies.refused);
    if (s->events)
        events_get_stats(s->events, &st);
    g->events.reported = st.reported;
    g->events.dropped = st.dropped_full;
    g->events.aggregated = st.aggregated;
    g->events.created = st.created;
    g->events.updated = st.patched;
    g->events.failed = st.failed;
    for (int v = CLIENTAUTH_NO_CERT; s->clientauth && v < CLIENTAUTH_VERDICTS; v++)
        g->client_auth_refused[v] = clientauth_refused(s->clientauth, (enum clientauth_verdict)v);
    for (int v = 0; s->cfg.metrics_auth && v < METRICSAUTH_VERDICTS; v++)
        g->metrics_auth[v] = metricsauth_count(s->cfg.metrics_auth, (enum metricsauth_verdict)v);
}

static enum MHD_Result server_metrics(struct server *s, struct MHD_Connection *conn)
{
    const struct tlscreds_pair *cert = tlscreds_acquire(s->creds);
    /* Every loaded version serves until the next: the generation is the count. */
    struct metrics_gauges g = {
        .profiles_loaded = store_loaded(s->store),
        .profiles_rejected = store_rejected(s->store),
        .profiles_stale = store_stale(s->store),
        .cert_not_after = cert ? cert->not_after : 0,
        .cert_generation = tlscreds_generation(s->creds),
        .log_dropped = s->log->queue ? logq_dropped(s->log->queue) : 0,
        .version = RDMA_WEBHOOK_VERSION,
    };
    struct store_snapshot *snap;
    struct dynbuf b;
    size_t len;
    int rc;

    tlscreds_release(cert);
    if ((snap = store_acquire(s->store))) {
        g.profiles_loaded_at = snap->loaded_at;
        store_release(snap);
    }
    if (s->cfg.lastgood)
        lastgood_counts(s->cfg.lastgood, g.last_good);
    for (int k = 0; s->lookups && k < LOOKUPS_KINDS; k++)
        for (int r = 0; r < LOOKUPS_REASONS; r++)
            g.lookup_failures[k][r] =
                lookups_failures(s->lookups, (enum lookups_kind)k, (enum lookups_reason)r);
    for (int k = 0; s->lookups && k < LOOKUPS_KINDS; k++) {
        g.lookup_skipped[k] = lookups_skipped(s->lookups, (enum lookups_kind)k);
        g.lookup_circuit_open[k] = lookups_circuit_open(s->lookups, (enum lookups_kind)k);
    }
    if (s->lookups)
        g.lookup_configmap_bytes = lookups_configmap_bytes(s->lookups);
    server_gauges(s, &g);
    dynbuf_init(&b, 65536);
    rc = metrics_render(&s->metrics, &g, &b);
    if (rc != ERR_OK) {
        dynbuf_free(&b);
        /* 500 either way: a GET has no content to be too large (413), the
         * exposition outgrew its buffer. */
        return server_reply_text(s, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                 rc == ERR_NOMEM     ? "out of memory\n"
                                 : rc == ERR_TOO_BIG ? "metrics exposition too large\n"
                                                     : "cannot render the metrics\n");
    }
    len = b.len;
    return server_reply_buf(s, conn, MHD_HTTP_OK, "text/plain; version=0.0.4", dynbuf_steal(&b),
                            len);
}

/* The API could not say who may read /metrics: one line a minute. */
static void server_log_metrics_auth(struct server *s, const char *why)
{
    long long now = monotime_now(), last = atomic_load(&s->metrics_auth_logged_ns);

    if ((last && now - last < SERVER_METRICS_AUTH_LOG_NS) ||
        !atomic_compare_exchange_strong(&s->metrics_auth_logged_ns, &last, now))
        return;
    log_msg(s->log, LOG_WARN, "cannot authorize a /metrics request through the API: 503", "reason",
            why ? why : "unknown");
}

/* With --metrics-auth kubernetes: the caller's token, judged by the API
 * (metricsauth.h). 401 says how to authenticate (RFC 6750). */
static enum MHD_Result server_metrics_authorized(struct server *s, struct MHD_Connection *conn)
{
    const char *why = NULL;
    enum metricsauth_verdict v = metricsauth_check(
        s->cfg.metrics_auth,
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), &why);
    struct server_header bearer = {MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer"};
    static const char no_token[] = "/metrics needs Authorization: Bearer TOKEN, a token the "
                                   "apiserver authenticates (--metrics-auth kubernetes)\n";
    static const char bad_token[] = "the apiserver did not authenticate this token\n";

    switch (v) {
    case METRICSAUTH_ALLOWED: return server_metrics(s, conn);
    case METRICSAUTH_NO_TOKEN:
    case METRICSAUTH_BAD_TOKEN:
        return server_reply(
            s, conn, MHD_HTTP_UNAUTHORIZED, "text/plain; charset=utf-8",
            (char *)(v == METRICSAUTH_NO_TOKEN ? no_token : bad_token),
            v == METRICSAUTH_NO_TOKEN ? sizeof(no_token) - 1 : sizeof(bad_token) - 1, 0, &bearer);
    case METRICSAUTH_FORBIDDEN:
        return server_reply_text(s, conn, MHD_HTTP_FORBIDDEN,
                                 "forbidden: bind the ClusterRole rdma-webhook-metrics-reader "
                                 "(get on the non-resource URL /metrics)\n");
    default:
        server_log_metrics_auth(s, why);
        return server_reply_text(s, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                                 "cannot authorize through the API now; retry shortly\n");
    }
}

static enum MHD_Result server_simple_route(struct server *s, struct MHD_Connection *conn,
                                           enum server_route route, const char *method)
{
    int ready;

    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return server_reply_405(s, conn, "use GET\n", "GET, HEAD");
    if (route == ROUTE_METRICS)
        return s->cfg.metrics_auth ? server_metrics_authorized(s, conn) : server_metrics(s, conn);
    if (route == ROUTE_HEALTHZ)
        return server_reply_text(s, conn, MHD_HTTP_OK, "ok\n");
    ready = store_ready(s->store) && !atomic_load(&s->draining);
    if (ready)
        return server_reply_text(s, conn, MHD_HTTP_OK, "ok\n");
    return server_reply_text(s, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                             atomic_load(&s->draining) ? "shutting down\n"
                                                       : "no valid profiles loaded yet\n");
}

static void server_log_admission(struct server *s, const struct review_summary *sum, long long us)
{
    const char *texts[MUTATE_MAX_WARNINGS];
    struct log_line l;

    log_begin(&l, s->log, sum->error[0] ? LOG_ERROR : LOG_INFO, "admission");
    log_str(&l, "uid", sum->uid);
    log_str(&l, "namespace", sum->namespace_);
    log_str(&l, "pod", sum->name);
    log_str(&l, "result", mutate_outcome_name(mutate_reason_outcome(sum->reason)));
    log_str(&l, "reason", mutate_reason_name(sum->reason));
    if (sum->profile[0])
        log_str(&l, "profile", sum->profile);
    if (sum->selected_by)
        log_str(&l, "selected_by", sum->selected_by);
    if (sum->report_by)
        log_str(&l, "report_by", sum->report_by);
    log_int(&l, "ops", (long long)sum->ops);
    log_int(&l, "warnings", (long long)sum->warnings);
    for (size_t i = 0; i < sum->warnings && i < MUTATE_MAX_WARNINGS; i++)
        texts[i] = sum->warning_texts.full[i];
    if (sum->warnings)
        log_strs(&l, "warning_text", texts, sum->warnings);
    if (sum->error[0])
        log_str(&l, "error", sum->error);
    log_int(&l, "us", us);
    log_end(&l);
}

static void server_count(struct server *s, const struct review_summary *sum, long long ns)
{
    metrics_admission(&s->metrics, sum->ignored, sum->reason, ns, sum->ops, sum->warning_kinds);
    if (!sum->ignored && sum->profile[0])
        metrics_admission_profile(&s->metrics, sum->profile);
}

/* The whole body is in: answer the review with the current profiles. */
/* Sends a review's answer: the JSON for 200; otherwise the reason, logged
 * with what, as one line of text. out is taken over. */
static enum MHD_Result server_reply_review(struct server *s, struct MHD_Connection *conn,
                                           int status, struct dynbuf *out, const char *what)
{
    size_t len;

    if (status != MHD_HTTP_OK) {
        log_msg(s->log, LOG_WARN, what, "reason", dynbuf_ptr(out));
        dynbuf_addc(out, '\n');
    }
    len = out->len;
    return server_reply_buf(s, conn, (unsigned)status,
                            status == MHD_HTTP_OK ? "application/json"
                                                  : "text/plain; charset=utf-8",
                            dynbuf_steal(out), len);
}

static enum MHD_Result server_admit(struct server *s, struct MHD_Connection *conn,
                                    struct server_request *req)
{
    struct store_snapshot *snap = store_acquire(s->store);
    struct mutate_options opts = s->mutate_opts;
    struct mutate_hooks hooks = {0};
    struct lookups_request lookups;
    struct arena arena;
    struct review_summary sum;
    struct dynbuf out;
    int status;

    if (!snap)
        return server_reply_text(s, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                                 "no valid profiles loaded yet; check the profiles source\n");
    /* The echoed uid is as long as the request's at most: any uid the body
     * limit admits fits. */
    dynbuf_init(&out, SERVER_RESPONSE_MAX + bodybuf_len(&req->body));
    if (s->lookups) {
        lookups_begin(s->lookups, &lookups, &hooks);
        lookups_use_profiles(&lookups, snap->ps, snap->generation);
    }
    arena_begin(&arena);
    status = review_handle(bodybuf_ptr(&req->body), bodybuf_len(&req->body), snap->ps, &hooks,
                           &opts, &out, &sum);
    arena_end(&arena);
    store_release(snap);
    /* Parsed: its share of the budget is free for the next body. */
    bodybuf_free(&req->body, &s->bodies);
    if (status == MHD_HTTP_OK) {
        long long ns = monotime_now() - req->start_ns;

        server_count(s, &sum, ns);
        if (!sum.ignored)
            server_log_admission(s, &sum, ns / 1000);
        /* Queued, never waited for; a dry run or no warning reports nothing. */
        if (s->events)
            (void)events_report(s->events, &sum);
    }
    return server_reply_review(s, conn, status, &out, "bad admission request");
}

static void server_log_verdict(struct server *s, const struct review_verdict *v)
{
    struct log_line l;

    log_begin(&l, s->log, v->allowed ? LOG_INFO : LOG_WARN,
              v->allowed ? "profiles edit allowed" : "profiles edit refused");
    log_str(&l, "uid", v->uid);
    log_str(&l, "namespace", v->namespace_);
    log_str(&l, "configmap", v->name);
    if (!v->allowed)
        log_str(&l, "problems", v->problems);
    log_end(&l);
}

/* /validate-profiles: the ValidatingWebhook on the profiles ConfigMap, so
 * that `kubectl apply` or `edit` of a bad version fails with check-profiles'
 * messages instead of being refused later by the loader. */
static enum MHD_Result server_validate_profiles(struct server *s, struct MHD_Connection *conn,
                                                struct server_request *req)
{
    static const char busy[] = "another profiles review is being checked; retry shortly\n";
    struct server_header retry = {MHD_HTTP_HEADER_RETRY_AFTER, SERVER_RETRY_AFTER_S};
    struct review_verdict v;
    struct dynbuf out;
    struct arena arena;
    int status;

    if (atomic_exchange(&s->profiles_checking, 1)) {
        bodybuf_free(&req->body, &s->bodies);
        return server_reply(s, conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
                            (char *)busy, sizeof(busy) - 1, 0, &retry);
    }
    dynbuf_init(&out, SERVER_RESPONSE_MAX + bodybuf_len(&req->body));
    arena_begin(&arena);
    status = review_handle_profiles(bodybuf_ptr(&req->body), bodybuf_len(&req->body),
                                    s->cfg.profiles_key, &out, &v);
    arena_end(&arena);
    atomic_store(&s->profiles_checking, 0);
    bodybuf_free(&req->body, &s->bodies);
    if (status == MHD_HTTP_OK) {
        atomic_fetch_add(&s->metrics.profile_reviews[v.allowed ? 0 : 1], 1);
        server_log_verdict(s, &v);
    }
    return server_reply_review(s, conn, status, &out, "bad profiles review request");
}

/* The request's Transfer-Encoding fields, as framing_check() takes them. */
struct server_te {
    const char *values[FRAMING_MAX_FIELDS];
    size_t n;
};

static enum MHD_Result server_te_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                       const char *value)
{
    struct server_te *te = cls;

    (void)kind;
    if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        if (te->n < FRAMING_MAX_FIELDS)
            te->values[te->n] = value ? value : "";
        te->n++;
    }
    return MHD_YES;
}

/* A body the server cannot find the end of is refused before it is read
 * (see framing.h): 400 or 501 with the reason in why, or 0 to go on. */
static unsigned server_framing(struct MHD_Connection *conn, const char **why)
{
    struct server_te te = {.n = 0};
    int has_length =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH) != NULL;

    MHD_get_connection_values(conn, MHD_HEADER_KIND, server_te_field, &te);
    return framing_check(te.values, te.n, has_length, why);
}

/* The state of a /mutate request whose body is to be read: capped at the
 * declared length, or at --max-body-bytes when it comes in chunks. */
static struct server_request *server_new_request(struct server *s, enum server_route route,
                                                 const char *clen, unsigned long long declared)
{
    struct server_request *req = calloc(1, sizeof(*req));

    if (!req)
        return NULL;
    req->route = route;
    bodybuf_init(&req->body, clen ? (size_t)declared : server_body_cap(s, route));
    req->start_ns = monotime_now();
    return req;
}

/* First call for a request: route it and refuse what can be refused before
 * reading the body (framing, path, method, content type, declared size,
 * no room in the body budget). */
static enum MHD_Result server_begin(struct server *s, struct MHD_Connection *conn, const char *url,
                                    const char *method, int webhook, void **req_cls)
{
    enum server_route route = server_route_of(url, webhook);
    const char *type, *clen, *why = NULL;
    unsigned long long declared;
    struct server_request *req;
    unsigned refused = server_framing(conn, &why);

    if (refused)
        return server_reply_text(s, conn, refused, why);
    if (route == ROUTE_NONE)
        return server_reply_text(s, conn, MHD_HTTP_NOT_FOUND,
                                 webhook ? "not found; the webhook paths are /mutate and "
                                           "/validate-profiles\n"
                                         : "not found; try /metrics, /healthz or /readyz\n");
    if (route != ROUTE_MUTATE && route != ROUTE_VALIDATE_PROFILES)
        return server_simple_route(s, conn, route, method);
    if (strcmp(method, "POST") != 0)
        return server_reply_405(s, conn, "this path takes POST with an AdmissionReview\n", "POST");
    type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!server_is_json(type))
        return server_reply_text(s, conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                                 "send the AdmissionReview as Content-Type: application/json\n");
    clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    declared = clen ? strtoull(clen, NULL, 10) : 0;
    if (declared > server_body_cap(s, route))
        return server_reply_too_large(s, conn, route);
    if (bodybuf_admit(&s->bodies, (size_t)declared))
        return server_reply_busy(s, conn);
    req = server_new_request(s, route, clen, declared);
    if (!req)
        return MHD_NO;
    *req_cls = req;
    atomic_fetch_add(&s->metrics.in_flight, 1);
    return MHD_YES;
}

/* The status a body gets when bodybuf cannot keep it. */
static unsigned server_body_status(int rc)
{
    if (rc == ERR_TOO_BIG)
        return MHD_HTTP_CONTENT_TOO_LARGE;
    if (rc == ERR_BUSY)
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    return MHD_HTTP_INTERNAL_SERVER_ERROR;
}

/* A piece of the body. libmicrohttpd cannot answer in the middle of a body:
 * once it cannot be kept, the rest is read and dropped, and the status goes
 * out at its end (the body deadline bounds how long that takes). A client
 * that keeps sending far beyond that is cut off. */
static enum MHD_Result server_body(struct server *s, struct server_request *req, const char *data,
                                   size_t *size)
{
    int rc;

    if (req->early_status) {
        req->discarded += *size;
        *size = 0;
        return req->discarded > SERVER_DISCARD_MAX ? MHD_NO : MHD_YES;
    }
    rc = bodybuf_add(&req->body, &s->bodies, data, *size);
    if (rc) {
        req->early_status = server_body_status(rc);
        bodybuf_free(&req->body, &s->bodies);
    }
    *size = 0;
    return MHD_YES;
}

/* The connection's deadlines, from what the notify callback attached. */
static struct server_conn *server_conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return i ? i->socket_context : NULL;
}

static struct connguard_conn *server_guard_of(struct MHD_Connection *conn)
{
    struct server_conn *sc = server_conn_of(conn);

    return sc ? &sc->guard : NULL;
}

/* The headers are in: the body deadline starts, unless the request is
 * answered from its headers alone. */
static enum MHD_Result server_first(struct server *s, struct MHD_Connection *conn, const char *url,
                                    const char *method, int webhook, void **req_cls)
{
    struct connguard_conn *guard = server_guard_of(conn);
    struct server_conn *sc = server_conn_of(conn);
    enum MHD_Result rc;

    /* The handshake refused every client --client-ca does not admit; this
     * only closes a path where GnuTLS would skip its verification (a resumed
     * session: libmicrohttpd issues no session tickets). */
    if (webhook && s->clientauth && !(sc && sc->client_ok))
        return MHD_NO;
    connguard_headers_in(guard);
    rc = server_begin(s, conn, url, method, webhook, req_cls);
    if (*req_cls)
        ((struct server_request *)*req_cls)->guard = guard;
    else
        connguard_request_in(guard);
    return rc;
}

static enum MHD_Result server_handle(void *cls, struct MHD_Connection *conn, const char *url,
                                     const char *method, int webhook, const char *upload_data,
                                     size_t *upload_size, void **req_cls)
{
    struct server *s = cls;
    struct server_request *req = *req_cls;

    if (!req)
        return server_first(s, conn, url, method, webhook, req_cls);
    if (*upload_size)
        return server_body(s, req, upload_data, upload_size);
    connguard_request_in(req->guard);
    if (req->early_status)
        return server_reply_early(s, conn, req->early_status, req->route);
    if (req->route == ROUTE_VALIDATE_PROFILES)
        return server_validate_profiles(s, conn, req);
    return server_admit(s, conn, req);
}

static enum MHD_Result server_handle_webhook(void *cls, struct MHD_Connection *conn,
                                             const char *url, const char *method,
                                             const char *version, const char *upload_data,
                                             size_t *upload_size, void **req_cls)
{
    (void)version;
    return server_handle(cls, conn, url, method, 1, upload_data, upload_size, req_cls);
}

static enum MHD_Result server_handle_metrics_port(void *cls, struct MHD_Connection *conn,
                                                  const char *url, const char *method,
                                                  const char *version, const char *upload_data,
                                                  size_t *upload_size, void **req_cls)
{
    (void)version;
    return server_handle(cls, conn, url, method, 0, upload_data, upload_size, req_cls);
}

/* The response is out (or the request broke off): the connection waits for
 * its next request. */
static void server_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                             enum MHD_RequestTerminationCode code)
{
    struct server *s = cls;
    struct server_request *req = *req_cls;

    (void)code;
    connguard_response_out(server_guard_of(conn));
    if (!req)
        return;
    atomic_fetch_sub(&s->metrics.in_flight, 1);
    bodybuf_free(&req->body, &s->bodies);
    free(req);
    *req_cls = NULL;
}

static int server_verify_client(gnutls_session_t session);

/* With --client-ca, the handshake asks for the client's certificate (without
 * naming acceptable CAs: the apiserver sends the one its kubeconfig names)
 * and judges it in server_verify_client. 0, or -1 when the session cannot be
 * read. */
static int server_ask_client_cert(struct server_listener *ls, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *tls;

    if (!ls->webhook || !ls->s->clientauth)
        return 0;
    tls = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!tls || !tls->tls_session)
        return -1;
    gnutls_certificate_server_set_request(tls->tls_session, GNUTLS_CERT_REQUEST);
    gnutls_session_set_verify_function(tls->tls_session, server_verify_client);
    return 0;
}

/* Accept to close: a connection joins its listener's list, or, when there
 * is no memory to track it, is ended at once (its handshake is refused). */
static void server_notify_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
                               enum MHD_ConnectionNotificationCode code)
{
    struct server_listener *ls = cls;
    struct server_conn *sc = *socket_context;
    const union MHD_ConnectionInfo *fd;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        sc = fd && server_ask_client_cert(ls, conn) == 0 ? calloc(1, sizeof(*sc)) : NULL;
        if (!sc) {
            if (fd)
                shutdown(fd->connect_fd, SHUT_RDWR);
            return;
        }
        connguard_open(ls->conns, &sc->guard, fd->connect_fd);
        *socket_context = sc;
        return;
    }
    if (!sc)
        return;
    connguard_close(&sc->guard);
    tlscreds_release(sc->pair);
    free(sc);
    *socket_context = NULL;
}

int server_parse_listen(const char *spec, void *storage, unsigned *len, char *err, size_t errlen)
{
    const char *colon = strrchr(spec, ':');
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    char host[256];
    size_t hlen;
    int rc;

    if (!colon || !colon[1]) {
        return err_set(err, errlen, ERR_FAIL,
                       "listen address \"%s\" needs a port, e.g. 127.0.0.1:8443 or :8443", spec);
    }
    hlen = (size_t)(colon - spec);
    if (hlen >= 2 && spec[0] == '[' && spec[hlen - 1] == ']') {
        spec++;
        hlen -= 2;
    }
    if (hlen >= sizeof(host)) {
        return err_set(err, errlen, ERR_FAIL, "listen host is too long");
    }
    memcpy(host, spec, hlen);
    host[hlen] = '\0';
    rc = getaddrinfo(hlen ? host : NULL, colon + 1, &hints, &ai);
    if (rc != 0 || !ai) {
        return err_set(err, errlen, ERR_FAIL, "cannot use listen address \"%s\": %s", spec,
                       gai_strerror(rc));
    }
    memcpy(storage, ai->ai_addr, ai->ai_addrlen);
    *len = (unsigned)ai->ai_addrlen;
    freeaddrinfo(ai);
    return ERR_OK;
}

/* The one server context: GnuTLS's certificate callback takes no argument. */
static struct server *server_running;

/* The session keeps pointers into the pair it is given, so the connection
 * holds a reference until it closes (libmicrohttpd sets each session's
 * pointer to its connection). */
static int server_cert_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn,
                                int nreqs, const gnutls_pk_algorithm_t *pk_algos,
                                int pk_algos_length, gnutls_pcert_st **pcert,
                                unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
    struct server *s = server_running;
    struct server_conn *sc = server_conn_of(gnutls_session_get_ptr(session));
    const struct tlscreds_pair *p = s && sc ? tlscreds_acquire(s->creds) : NULL;

    (void)req_ca_rdn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
    if (!p)
        return -1;
    /* A second handshake on one connection replaces the first's pair. */
    tlscreds_release(sc->pair);
    sc->pair = p;
    *pcert = (gnutls_pcert_st *)p->chain;
    *pcert_length = p->chain_len;
    *privkey = p->key;
    return 0;
}

/* What to do about a refused client, for its log line. */
static const char *server_refused_hint(enum clientauth_verdict v)
{
    switch (v) {
    case CLIENTAUTH_NO_CERT:
        return "only the apiserver may call the webhook: give it a client certificate through "
               "its AdmissionConfiguration (docs/install.md)";
    case CLIENTAUTH_UNTRUSTED:
        return "the certificate is not signed by a CA of --client-ca, has expired, or is not "
               "for client authentication";
    default: return "the certificate names none of --client-names (its CN or a DNS SAN)";
    }
}

/* One line a minute for each verdict, with the count so far: a client
 * retrying in a loop is one line, not thousands. */
static void server_log_refused(struct server *s, struct MHD_Connection *conn,
                               enum clientauth_verdict v, const char *subject)
{
    long long now = monotime_now(), last = atomic_load(&s->refused_logged_ns[v]);
    const union MHD_ConnectionInfo *ci =
        conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
    char addr[INET6_ADDRSTRLEN] = "";
    struct log_line l;

    if ((last && now - last < SERVER_REFUSED_LOG_NS) ||
        !atomic_compare_exchange_strong(&s->refused_logged_ns[v], &last, now))
        return;
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, addr,
                  sizeof(addr));
    else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr, addr,
                  sizeof(addr));
    log_begin(&l, s->log, LOG_WARN,
              "TLS client refused: --client-ca requires a client certificate");
    log_str(&l, "reason", clientauth_verdict_name(v));
    log_str(&l, "client", addr);
    if (*subject)
        log_str(&l, "subject", subject);
    log_int(&l, "refused_total", (long long)clientauth_refused(s->clientauth, v));
    log_str(&l, "hint", server_refused_hint(v));
    log_end(&l);
}

/* GnuTLS's verification of the client, during the handshake (after the
 * client's Certificate message; CertificateVerify, its proof of the key, is
 * checked by GnuTLS after). Non-zero fails the handshake before any HTTP. */
static int server_verify_client(gnutls_session_t session)
{
    struct server *s = server_running;
    struct MHD_Connection *conn = gnutls_session_get_ptr(session);
    struct server_conn *sc = conn ? server_conn_of(conn) : NULL;
    enum clientauth_verdict v;
    char subject[256];

    if (!s || !s->clientauth || !sc)
        return -1;
    v = clientauth_check(s->clientauth, session, subject, sizeof(subject));
    sc->client_ok = v == CLIENTAUTH_OK;
    if (v == CLIENTAUTH_OK)
        return 0;
    server_log_refused(s, conn, v, subject);
    /* The alert tells the client why (Go: "remote error: tls: certificate
     * required", "bad certificate", "access denied"); GnuTLS sends none of
     * its own when a callback fails the handshake. Best effort: the
     * connection closes either way. */
    gnutls_alert_send(session, GNUTLS_AL_FATAL,
                      v == CLIENTAUTH_NO_CERT     ? GNUTLS_A_CERTIFICATE_REQUIRED
                      : v == CLIENTAUTH_UNTRUSTED ? GNUTLS_A_BAD_CERTIFICATE
                                                  : GNUTLS_A_ACCESS_DENIED);
    return -1;
}

/* unchanged: the files held the pair already serving, nothing was loaded
 * (the line still confirms what serves, e.g. after a refused version). */
static void server_log_cert(struct server *s, int unchanged)
{
    const struct tlscreds_pair *p = tlscreds_acquire(s->creds);
    long long days_left = (p->not_after - (long long)time(NULL)) / 86400;
    struct log_line l;

    log_begin(&l, s->log, LOG_INFO, "serving certificate loaded");
    log_str(&l, "serial", p->serial);
    log_int(&l, "not_after", p->not_after);
    log_int(&l, "days_left", days_left);
    log_int(&l, "generation", (long long)p->generation);
    if (unchanged)
        log_str(&l, "unchanged", "true");
    log_end(&l);
    if (days_left < (long long)s->cfg.cert_expiry_warn_days) {
        log_begin(&l, s->log, LOG_WARN, "serving certificate expires soon; rotate it");
        log_str(&l, "serial", p->serial);
        log_int(&l, "days_left", days_left);
        log_end(&l);
    }
    tlscreds_release(p);
}

/* The --client-ca file, with the serving pair (the watch and SIGHUP). */
static int server_reload_client_ca(struct server *s, char *err, size_t errlen)
{
    unsigned count = 0;
    struct log_line l;
    int changed = 0;

    if (!s->clientauth)
        return ERR_OK;
    if (clientauth_load(s->clientauth, &changed, &count, err, errlen) != ERR_OK) {
        log_msg(s->log, LOG_ERROR, "new client CA file rejected; the previous CAs stay", "error",
                err);
        return ERR_FAIL;
    }
    log_begin(&l, s->log, LOG_INFO, "client CA loaded");
    log_str(&l, "file", s->cfg.client_ca_file);
    log_int(&l, "certificates", count);
    if (!changed)
        log_str(&l, "unchanged", "true");
    log_end(&l);
    return ERR_OK;
}

/* A rotation that writes the two files one after the other can be caught
 * between them; a failed load is retried briefly before it is reported. */
void server_reload_certs(struct server *s)
{
    struct timespec pause = {0, 100 * 1000000L};
    char err[ERR_LEN];
    int changed;

    for (int attempt = 0; attempt < 3; attempt++) {
        if (attempt)
            nanosleep(&pause, NULL);
        if (tlscreds_load(s->creds, s->cfg.cert_file, s->cfg.key_file, &changed, err,
                          sizeof(err)) == ERR_OK) {
            server_log_cert(s, !changed);
            goto client_ca;
        }
    }
    log_msg(s->log, LOG_ERROR, "new certificate rejected; the previous one keeps serving", "error",
            err);
client_ca:
    server_reload_client_ca(s, err, sizeof(err));
}

static void server_cert_changed(void *arg)
{
    server_reload_certs(arg);
}

/* libmicrohttpd's own messages (mostly clients that break off a handshake)
 * go through the JSON log like everything else, at debug level: they are
 * about one connection and a scanner would otherwise flood the log. */
__attribute__((format(printf, 2, 0))) static void server_mhd_log(void *cls, const char *fmt,
                                                                 va_list ap)
{
    struct server *s = cls;
    char msg[512];
    size_t n;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    log_msg(s->log, LOG_DEBUG, "libmicrohttpd", "detail", msg);
}

#define SERVER_MAX_OPTIONS 14

/* While draining, a new HTTPS connection is closed as soon as it is accepted:
 * the client learns at once that this replica is going away, instead of
 * waiting in the listen backlog. (libmicrohttpd 0.9.75's own
 * MHD_quiesce_daemon() races with its epoll worker threads and can abort the
 * process: both remove the listening socket from the same epoll set.)
 * Otherwise connguard decides, making room at the limit. */
static enum MHD_Result server_accept_policy(void *cls, const struct sockaddr *addr,
                                            socklen_t addrlen)
{
    struct server_listener *ls = cls;

    (void)addr, (void)addrlen;
    if (ls->webhook && atomic_load(&ls->s->draining))
        return MHD_NO;
    return connguard_admit(ls->conns) ? MHD_YES : MHD_NO;
}

/* The daemon's options; addr must outlive the MHD_start_daemon call. A
 * daemon that shares its port with others (reuse) holds conn_limit, its
 * share of the server's connection limit, which connguard enforces. */
static void server_options(struct server_listener *ls, int reuse, unsigned conn_limit,
                           struct sockaddr_storage *addr, struct MHD_OptionItem *opts)
{
    struct server *s = ls->s;
    size_t n = 0;

    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, addr};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)server_mhd_log, s};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                        (intptr_t)s->cfg.conn_timeout_s, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
                                        (intptr_t)(conn_limit + SERVER_LIMIT_SLACK), NULL};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)server_notify_conn, ls};
    /* Headers of a review are small and the body is streamed out of this
     * pool, which libmicrohttpd keeps, and zeroes on every request, for each
     * open connection: see SERVER_CONN_MEMORY. */
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, SERVER_CONN_MEMORY, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)server_completed, s};
    if (reuse)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL};
    if (ls->tls) {
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
                                            (void *)server_cert_callback};
        opts[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)SERVER_TLS_PRIORITIES};
    }
    opts[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
}

/* One daemon with one epoll thread on addr, for ls. */
static int server_daemon(struct server *s, struct server_listener *ls,
                         struct sockaddr_storage *addr, int webhook, int tls, int reuse,
                         unsigned conn_limit)
{
    struct MHD_OptionItem opts[SERVER_MAX_OPTIONS];
    /* No MHD_USE_TURBO: with it, libmicrohttpd 0.9.75 never times out a
     * connection still in the TLS handshake, so clients that connect and
     * stay silent hold their slots for ever (found by the slowloris test). */
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;

    ls->s = s;
    ls->webhook = webhook;
    ls->tls = tls;
    ls->conns = connguard_add_list(s->guard, conn_limit);
    if (!ls->conns)
        return -1;
    if (!webhook && s->cfg.metrics_auth)
        flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
                MHD_USE_ERROR_LOG;
    if (addr->ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (tls)
        flags |= MHD_USE_TLS;
    server_options(ls, reuse, conn_limit, addr, opts);
    ls->daemon = MHD_start_daemon(flags, 0, server_accept_policy, ls,
                                  webhook ? server_handle_webhook : server_handle_metrics_port, s,
                                  MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    return ls->daemon ? 0 : -1;
}

unsigned server_https_port(const struct server *s)
{
    const union MHD_DaemonInfo *info;

    assert(s->magic == SERVER_MAGIC);
    if (!s->n_https)
        return 0;
    /* Every HTTPS daemon shares the first one's port (server_same_port). */
    info = MHD_get_daemon_info(s->https[0].daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

unsigned server_metrics_port(const struct server *s)
{
    const union MHD_DaemonInfo *info;

    assert(s->magic == SERVER_MAGIC);
    if (!s->plain.daemon)
        return 0;
    info = MHD_get_daemon_info(s->plain.daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/* Sockets that all set SO_REUSEPORT share a port silently, so a second
 * webhook started on the same port by mistake would take half the traffic
 * instead of failing. A plain bind first keeps "address in use" an error. */
static int server_port_free(const struct sockaddr_storage *addr, socklen_t addrlen)
{
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, ok;

    if (fd < 0)
        return 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (addr->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    ok = bind(fd, (const struct sockaddr *)addr, addrlen) == 0;
    close(fd);
    return ok;
}

/* Where the listen address asks for port 0 (any), the first daemon's port,
 * for the others to share; 0, or -1 when it cannot be read. */
static int server_same_port(struct MHD_Daemon *first, struct sockaddr_storage *addr)
{
    in_port_t *port = addr->ss_family == AF_INET6 ? &((struct sockaddr_in6 *)addr)->sin6_port
                                                  : &((struct sockaddr_in *)addr)->sin_port;
    const union MHD_DaemonInfo *info;

    if (*port != 0)
        return 0;
    info = MHD_get_daemon_info(first, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || info->port == 0)
        return -1;
    *port = htons(info->port);
    return 0;
}

/* One daemon per thread. A libmicrohttpd thread pool shares one listening
 * socket, and whichever thread wakes first accepts a burst of connections:
 * 16 connections opened at once all landed on one of two threads in about
 * half of the benchmark's runs, and throughput fell by a fifth. With a
 * socket each (SO_REUSEPORT), the kernel spreads them. */
static int server_start_https(struct server *s, char *err, size_t errlen)
{
    struct sockaddr_storage addr;
    unsigned addrlen, n = s->cfg.threads, limit = s->cfg.conn_limit;
    int reuse;

    if (server_parse_listen(s->cfg.listen, &addr, &addrlen, err, errlen))
        return -1;
    /* Each daemon needs a share of the connection limit. */
    if (n > limit)
        n = limit;
    if (n > SERVER_MAX_THREADS)
        n = SERVER_MAX_THREADS;
    reuse = n > 1;
    if (reuse && !server_port_free(&addr, addrlen))
        goto in_use;
    for (s->n_https = 0; s->n_https < n;) {
        unsigned share = limit / n + (s->n_https < limit % n);
        struct server_listener *ls = &s->https[s->n_https];

        if (server_daemon(s, ls, &addr, 1, 1, reuse, share))
            goto in_use;
        s->n_https++;
        if (reuse && s->n_https == 1 && server_same_port(ls->daemon, &addr))
            goto in_use;
    }
    return 0;
in_use:
    return err_set(err, errlen, ERR_FAIL,
                   "cannot listen on %s with TLS (in use, or no permission?)", s->cfg.listen);
}

static int server_start_plain(struct server *s, char *err, size_t errlen)
{
    struct sockaddr_storage addr;
    unsigned addrlen;
    unsigned limit = s->cfg.metrics_auth && s->cfg.conn_limit > SERVER_METRICS_AUTH_CONNS
                         ? SERVER_METRICS_AUTH_CONNS
                         : s->cfg.conn_limit;

    if (server_parse_listen(s->cfg.metrics_listen, &addr, &addrlen, err, errlen))
        return ERR_FAIL;
    /* With --metrics-auth, the metrics port speaks TLS with the serving
     * pair: a bearer token must not cross the network in the clear. */
    if (server_daemon(s, &s->plain, &addr, 0, s->cfg.metrics_auth != NULL, 0, limit))
        return err_set(err, errlen, ERR_FAIL, "cannot listen on %s (in use, or no permission?)",
                       s->cfg.metrics_listen);
    return ERR_OK;
}

/* The files' identities are recorded before the first load, and the watch
 * starts after it: a rotation during the load is loaded again, not missed. */
static int server_load_and_watch_certs(struct server *s, char *err, size_t errlen)
{
    const char *paths[] = {s->cfg.cert_file, s->cfg.key_file, s->cfg.client_ca_file};
    const char *ca = s->cfg.client_ca_file;

    if (filewatch_init(&s->cert_watch, paths, ca ? 3 : 2, (int)s->cfg.cert_reload_interval_ms,
                       server_cert_changed, s, err, errlen) != ERR_OK ||
        tlscreds_load(s->creds, s->cfg.cert_file, s->cfg.key_file, NULL, err, errlen) != ERR_OK)
        return ERR_FAIL;
    if (ca && (clientauth_init(&s->clientauth, ca, s->cfg.client_names, err, errlen) != ERR_OK ||
               server_reload_client_ca(s, err, errlen) != ERR_OK))
        return ERR_FAIL;
    return filewatch_start(s->cert_watch, err, errlen);
}

/* The deadlines and the body budget, before the first connection. */
static int server_init_limits(struct server *s)
{
    struct connguard_limits lim = {
        .header_ms = s->cfg.header_timeout_s * 1000u,
        .body_ms = s->cfg.body_timeout_s * 1000u,
        .idle_ms = s->cfg.conn_timeout_s * 1000u,
        .tick_ms = SERVER_DEADLINE_TICK_MS,
    };

    bodybuf_pool_init(&s->bodies, s->cfg.body_budget ? s->cfg.body_budget
                                                     : server_default_body_budget(s->cfg.max_body));
    return connguard_init(&s->guard, &lim);
}

int server_init(struct server **out, const struct server_config *cfg, struct log *log,
                struct store *store, struct lookups *lookups, struct events *events, char *err,
                size_t errlen)
{
    struct server *s = calloc(1, sizeof(*s));

    *out = NULL;
    if (!s)
        goto nomem;
    s->cfg = *cfg;
    s->mutate_opts.detect_image = cfg->detect_image;
    s->mutate_opts.mode = (enum report_mode)cfg->mode;
    s->mutate_opts.ipc_lock = (enum mutate_ipc_lock)cfg->ipc_lock;
    s->mutate_opts.podsec = cfg->podsec;
    s->log = log;
    s->store = store;
    s->lookups = lookups;
    s->events = events;
    metrics_init(&s->metrics);
    s->magic = SERVER_MAGIC;
    if (tlscreds_init(&s->creds, err, errlen) != ERR_OK || server_init_limits(s) != ERR_OK)
        goto fail;
    *out = s;
    return ERR_OK;
fail:
    server_stop(&s);
nomem:
    return err_set(err, errlen, ERR_NOMEM, "out of memory setting up the server");
}

int server_start(struct server *s, char *err, size_t errlen)
{
    assert(s->magic == SERVER_MAGIC);
    if (server_running)
        return err_set(err, errlen, ERR_FAIL, "a server is already running in this process");
    server_running = s;
    s->started = 1;
    if (server_load_and_watch_certs(s, err, errlen) != ERR_OK)
        return ERR_FAIL;
    if (server_start_https(s, err, errlen) ||
        (s->cfg.metrics_listen && *s->cfg.metrics_listen && server_start_plain(s, err, errlen)))
        return ERR_FAIL;
    if (connguard_start(s->guard))
        return err_set(err, errlen, ERR_FAIL, "cannot start the connection deadline thread");
    server_log_cert(s, 0);
    return ERR_OK;
}

void server_quiesce(struct server *s)
{
    assert(s->magic == SERVER_MAGIC);
    /* Readiness and server_accept_policy() read this. */
    atomic_store(&s->draining, 1);
}

int server_in_flight(struct server *s)
{
    assert(s->magic == SERVER_MAGIC);
    return atomic_load(&s->metrics.in_flight);
}

/* The daemons close their connections, which let go of their deadlines and
 * certificate pairs: only then can those go. */
static void server_stop_listeners(struct server *s)
{
    for (unsigned i = 0; i < s->n_https; i++)
        MHD_stop_daemon(s->https[i].daemon);
    s->n_https = 0;
    if (s->plain.daemon)
        MHD_stop_daemon(s->plain.daemon);
    s->plain.daemon = NULL;
}

void server_stop(struct server **ps)
{
    struct server *s = *ps;

    if (!s)
        return;
    assert(s->magic == SERVER_MAGIC);
    server_stop_listeners(s);
    filewatch_stop(&s->cert_watch);
    connguard_stop(&s->guard);
    tlscreds_stop(&s->creds);
    clientauth_stop(&s->clientauth);
    if (s->started && server_running == s)
        server_running = NULL;
    s->magic = 0;
    free(s);
    *ps = NULL;
}
