/* server: the HTTPS admission endpoint and the health and metrics port, on
 * libmicrohttpd.
 *
 * HTTPS (TLS 1.2 and 1.3 only, through libmicrohttpd's GnuTLS build) serves
 * POST /mutate, GET /healthz and GET /readyz; the metrics port serves
 * /healthz, /readyz and /metrics. With cfg.metrics_auth (--metrics-auth
 * kubernetes) the metrics port speaks TLS too, with the same serving pair
 * (reloaded with it, never asking for a client certificate), and /metrics
 * answers only a caller the API authorizes (metricsauth.h: 401 without or
 * with a bad token, 403 without get on the non-resource URL /metrics, 503
 * when the API cannot say); /healthz and /readyz stay open there, for the
 * kubelet's probes. The port then runs a thread per connection (at most 64
 * connections), so a check that waits for the API (at most two at once)
 * holds only its own, and the probes are answered while the API is slow.
 * Without it the port is plain HTTP and open, on one thread.
 *
 * HTTPS runs one epoll thread per configured thread, each a libmicrohttpd
 * daemon with its own listening socket on the same port (SO_REUSEPORT), so
 * the kernel spreads new connections over the threads. Both use keep-alive and a connection
 * timeout. Request bodies grow with the bytes received, capped at max_body
 * and charged to one budget for the server (bodybuf); the profiles snapshot
 * is acquired once per admission. Nothing a client sends is fatal: every bad
 * request gets a status and a one-line reason.
 *
 * Slow clients: every connection has a deadline for its TLS handshake and
 * headers, for its body, and for its next request after a response
 * (connguard), whatever trickle of bytes it sends; at the connection limit a
 * new connection displaces the one that has waited longest.
 *
 * The serving certificate is watched like the profiles (including the
 * kubelet's ..data swap of a Secret volume) and swapped without a restart:
 * connections already open keep their session, new handshakes get the new
 * certificate.
 *
 * With cfg.client_ca_file (--client-ca), every HTTPS handshake asks for the
 * client's certificate and clientauth.h judges it: a client without one of
 * that CA (or naming none of cfg.client_names) is refused at the handshake
 * with a fatal alert, counted and logged (one line a minute for each
 * reason), before any HTTP is read. The CA file is watched and reloaded
 * with the serving pair; the plain port is not affected.
 *
 * After an admission with warnings (not a dry run) the summary goes to the
 * Events queue (events.h), which the request never waits for.
 *
 * While the store is stale (store.h: an old version of the profiles
 * serves), /metrics says rdma_webhook_profiles_stale 1 (with the last good
 * copy's write counts, cfg.lastgood); the admissions say nothing of it: the
 * job's author cannot fix the profiles (lastgood.h tells the admin).
 * Readiness is only "a version serves".
 *
 * struct server is opaque: server_init() allocates it and the owner sees only
 * the functions below. The log, the profiles store, the lookups and the
 * Events are the caller's, shared by pointer, and outlive the server.
 */
#ifndef RDMA_WEBHOOK_SERVER_H
#define RDMA_WEBHOOK_SERVER_H

#include <stddef.h>
#include <unistd.h>

struct events;
struct lastgood;
struct log;
struct lookups;
struct metricsauth;
struct podsec_config;
struct server;
struct store;

/* Most HTTPS threads (--threads). */
#define SERVER_MAX_THREADS 64
/* serve's defaults for --connection-timeout and --max-connections; like the
 * settings below, bench/mhd_responder.c uses them too. */
#define SERVER_DEFAULT_CONN_TIMEOUT_S 30u
#define SERVER_DEFAULT_CONN_LIMIT     4096u
/* serve's defaults for --header-timeout and --body-timeout. An apiserver
 * sends a review in one go, in milliseconds, and gives up on the webhook
 * after its timeoutSeconds (at most 30); a client that takes longer than
 * this is not an apiserver. */
#define SERVER_DEFAULT_HEADER_TIMEOUT_S 10u
#define SERVER_DEFAULT_BODY_TIMEOUT_S   10u
/* serve's smallest default --body-budget-bytes (the default is twice
 * --max-body-bytes when that is more): three bodies of the default 8 MiB
 * limit at once, or thousands of real reviews (a few KiB to a few hundred).
 * The idle 9 MiB, 4096 connections of ~50 KiB (manifests/deployment.yaml)
 * and this stay under the Deployment's 256 Mi. */
#define SERVER_DEFAULT_BODY_BUDGET (32u << 20)

/* serve's default --body-budget-bytes for a --max-body-bytes: a body may
 * take at most half the budget (bodybuf.h). */
static inline unsigned server_default_body_budget(unsigned max_body)
{
    return max_body > SERVER_DEFAULT_BODY_BUDGET / 2 ? 2 * max_body : SERVER_DEFAULT_BODY_BUDGET;
}

/* serve's default --threads: one per CPU, at most 8. */
static inline unsigned server_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1u : n > 8 ? 8u : (unsigned)n;
}

/* The HTTPS daemon settings that decide its cost per connection. They are
 * here, not in server.c, so that bench/mhd_responder.c, the bare yardstick
 * the webhook is measured against, uses the same values and cannot drift
 * from them. */
/* TLS 1.2 and 1.3 only: the apiserver speaks both, and nothing older is safe. */
#define SERVER_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
/* libmicrohttpd's memory per connection, for the request line, the headers
 * and the read buffer. 8 KiB instead of the default 32 KiB: at 256 open
 * connections it is 2 MiB instead of 8; the apiserver's headers take a few
 * hundred bytes, and bodies pass through the read buffer piecewise (the
 * 135 KB pod is as fast as with 16 KiB). Headers over about 7 KiB get 431. */
#define SERVER_CONN_MEMORY 8192

struct server_config {
    const char *listen;         /* "ADDR:PORT"; an empty ADDR means every address */
    const char *metrics_listen; /* "" disables the metrics port */
    /* --metrics-auth kubernetes: TLS on the metrics port and /metrics for
     * callers this authorizes; NULL: plain HTTP, /metrics open. Outlives the
     * server. */
    struct metricsauth *metrics_auth;
    const char *cert_file;
    const char *key_file;
    /* --client-ca: PEM CAs a TLS client's certificate must chain to, watched
     * and reloaded with the serving pair; NULL: any client. --client-names:
     * comma-separated names the certificate must hold one of (its CN or a
     * DNS SAN); NULL: any name. */
    const char *client_ca_file;
    const char *client_names;
    unsigned max_body; /* bytes, at most 1 GiB (--max-body-bytes) */
    unsigned threads;  /* 1..SERVER_MAX_THREADS */
    unsigned conn_timeout_s;
    unsigned header_timeout_s; /* accept to the first request's headers */
    unsigned body_timeout_s;   /* headers to the end of the body */
    unsigned body_budget;      /* bytes of request bodies held at once, >= 2 * max_body */
    unsigned conn_limit;       /* at least 1 */
    unsigned cert_reload_interval_ms;
    const char *profiles_key; /* the ConfigMap key /validate-profiles checks (--profiles-key) */
    unsigned cert_expiry_warn_days;
    const char *detect_image; /* mutate_options.detect_image; NULL: none (outlives the server) */
    /* The last good copy's writer, for its counts in /metrics; NULL: none.
     * Outlives the server. */
    struct lastgood *lastgood;
    int mode;     /* mutate_options.mode, an enum report_mode: --mode */
    int ipc_lock; /* mutate_options.ipc_lock, an enum mutate_ipc_lock: --ipc-lock */
    /* mutate_options.podsec (--pod-security-config); NULL: PodSecurity's
     * own defaults. Outlives the server. */
    const struct podsec_config *podsec;
};

/* Allocates the server in its stopped state: counters, certificate slot,
 * connection deadlines and body budget, no thread and no socket yet. log and
 * store are required; lookups and events may be NULL (no Kubernetes API:
 * lookups answer "unknown", no Events). cfg is copied. Returns ERR_OK, or
 * ERR_NOMEM with *out NULL. */
int server_init(struct server **out, const struct server_config *cfg, struct log *log,
                struct store *store, struct lookups *lookups, struct events *events, char *err,
                size_t errlen);
/* Loads the certificate, starts both listeners, the certificate watch and
 * the deadline thread. Only one server may run per process: the TLS
 * handshake callback has no argument of its own, so it finds the credentials
 * through the one running server. Returns ERR_OK, or ERR_FAIL with a message
 * in err (server_stop() undoes what was started). */
int server_start(struct server *s, char *err, size_t errlen);
/* Reloads the certificate and key now (SIGHUP), and the --client-ca file;
 * the old pair (the old CAs) stays on error. */
void server_reload_certs(struct server *s);
/* Readiness goes false and new HTTPS connections are closed as soon as they
 * are accepted; open connections and requests in flight go on. */
void server_quiesce(struct server *s);
/* Requests being handled now: the drain waits for 0. */
int server_in_flight(struct server *s);
/* Stops whatever runs, frees the server and sets *s to NULL. A no-op on
 * NULL, so it is safe after a failed server_init() and twice. */
void server_stop(struct server **s);

/* The HTTPS port the server listens on, after server_start: the one the
 * listen address named, or the kernel's choice for port 0 (what a test
 * binds). 0 before server_start. */
unsigned server_https_port(const struct server *s);

/* The metrics port, as server_https_port() reads its own; 0
 * when there is none (--metrics-listen "") or before server_start. */
unsigned server_metrics_port(const struct server *s);

/* Parses "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" into a socket address.
 * Returns ERR_OK, or ERR_FAIL with a message in err naming the address. */
int server_parse_listen(const char *spec, void *sockaddr_storage, unsigned *len, char *err,
                        size_t errlen);

#endif
