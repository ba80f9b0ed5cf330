/* lastgood: the last good profiles, kept where a restart finds them, and the
 * loud signal while an old version serves.
 *
 * The copy is a second ConfigMap, NS/COPY (serve --profiles-last-good; by
 * default NAME-last-good next to the source NS/NAME), that the webhook writes
 * itself: the source's key with the text of the newest valid version a
 * replica loaded, and the annotations LASTGOOD_ANN_SOURCE (NS/NAME),
 * LASTGOOD_ANN_SOURCE_RV (the source's resourceVersion of that version) and
 * LASTGOOD_ANN_LOADED_AT (RFC 3339, UTC: when a replica first loaded it). It
 * does not carry the label that sends the profiles ConfigMap to
 * /validate-profiles: every text written was valid, and a copy edited by
 * hand is validated by the loader before it serves, like any version.
 *
 * Writes, off the request path: lastgood_offer() hands a version just
 * published from the source to this module's thread (a newer offer replaces
 * one not yet written) and returns at once. The thread GETs the copy; when it
 * holds the same text, nothing is written ("unchanged"); when it does not
 * exist, it is created (POST); otherwise updated (PUT) with the copy's
 * resourceVersion, so a replica never overwrites a write it has not seen. A
 * 409 (another replica wrote or created it first) starts over from the GET,
 * up to LASTGOOD_ATTEMPTS times. A failure is logged and counted, and tried
 * again with backoff (1 s doubling to retry_max_ms) until it succeeds or a
 * newer version is offered; admission and readiness never wait for it.
 *
 * Reads: lastgood_fall_back(), in the caller's thread (cmwatch's, when the
 * source's version is refused before any version serves), GETs the copy and
 * publishes its text with store_publish_fallback(): validated by the same
 * loader, and the store is stale from then on. A copy that is missing, cannot
 * be read or is not valid leaves the store as it was (not ready), logged.
 *
 * The signal, the admin's alone: while store_stale(), the thread logs an
 * error line every interval_ms, the first within a second of the store
 * going stale, and with cfg.events and a source ConfigMap reports a Warning
 * Event LASTGOOD_EVENT_REASON on that ConfigMap as often (one Event, its
 * series counting); the server exposes the gauge (server.c). Admissions say
 * nothing of it: the job's author cannot fix the profiles.
 *
 * The API call is injectable (lastgood_config.call, a kubeapi_call_fn), so the protocol can be
 * tested without a network. Lifecycle: lastgood_init() starts the thread;
 * lastgood_stop() stops and joins it (an unwritten offer is dropped).
 */
#ifndef RDMA_WEBHOOK_LASTGOOD_H
#define RDMA_WEBHOOK_LASTGOOD_H

#include "base/dynbuf.h"
#include "kube/events.h"
#include "kube/kubeapi.h"
#include "host/log.h"
#include "host/store.h"

#include <stdatomic.h>
#include <stddef.h>

#define LASTGOOD_ANN_SOURCE    "rdma-webhook.io/last-good-source"
#define LASTGOOD_ANN_SOURCE_RV "rdma-webhook.io/last-good-source-resource-version"
#define LASTGOOD_ANN_LOADED_AT "rdma-webhook.io/last-good-loaded-at"
#define LASTGOOD_SUFFIX        "-last-good"
#define LASTGOOD_ATTEMPTS      4
/* The Event on the source ConfigMap while an old version serves. */
#define LASTGOOD_EVENT_REASON "ServingOldProfiles"
#define LASTGOOD_EVENT_ACTION "LoadProfiles"

/* The counts of lastgood_counts(), in this order. */
enum lastgood_count { LASTGOOD_WRITTEN, LASTGOOD_UNCHANGED, LASTGOOD_FAILED, LASTGOOD_COUNTS };

struct lastgood_config {
    const char *fix; /* what the admin must fix, for the log: "ConfigMap NS/NAME" */
    /* The copy; any NULL (or copy ""): no copy, only the signal. call is
     * kubeapi_call with its client, or a test's fake: a GET of the copy, a
     * POST (create) or a PUT (update) of it, application/json. */
    kubeapi_call_fn call;
    void *call_ctx;
    const char *ns, *name, *key; /* the source ConfigMap and its key */
    const char *copy;            /* the copy's name, in ns */
    unsigned interval_ms;        /* the error line while stale; 0: 60000 */
    unsigned request_ms;         /* each request's timeout; 0: 5000 */
    unsigned retry_max_ms;       /* the longest wait between tries; 0: 60000 */
    struct events *events;       /* the stale Event on NS/NAME; NULL: none */
};

struct lastgood;

/* store and log, and what cfg points to, must outlive the object. ERR_OK
 * with *out set and the thread running, or ERR_* with a message and *out
 * NULL. */
int lastgood_init(struct lastgood **out, struct store *store, struct log *log,
                  const struct lastgood_config *cfg, char *err, size_t errlen);
void lastgood_stop(struct lastgood **lg);

/* 1 when there is a copy to write and read. */
int lastgood_enabled(const struct lastgood *lg);

/* A version published from the source: text (len bytes), the source's
 * resourceVersion of it (NULL: unknown), and the snapshot's loaded_at. A
 * no-op without a copy; out of memory drops it (logged, counted failed). */
void lastgood_offer(struct lastgood *lg, const char *text, size_t len, const char *resource_version,
                    long long loaded_at);

/* Reads the copy and publishes it as a fallback. ERR_OK when it serves;
 * otherwise the reason is logged and the store is left as it was. stop may
 * be NULL. */
int lastgood_fall_back(struct lastgood *lg, const atomic_int *stop);

/* written, unchanged, failed (enum lastgood_count) since start. */
void lastgood_counts(struct lastgood *lg, unsigned long long out[LASTGOOD_COUNTS]);

/* The copy as ConfigMap JSON into out: for a PUT, resource_version is the
 * copy's (NULL: a POST). Exposed for the tests. ERR_OK or dynbuf's code. */
int lastgood_body(struct dynbuf *out, const char *ns, const char *copy, const char *source,
                  const char *key, const char *text, size_t len, const char *source_rv,
                  long long loaded_at, const char *resource_version);

/* "2026-12-01T19:54:08Z" of unix seconds t into out (at least 21 bytes);
 * and back: -1 when s is not that form. */
void lastgood_format_time(long long t, char *out, size_t outlen);
long long lastgood_parse_time(const char *s);

#endif
