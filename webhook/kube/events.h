/* events: a Kubernetes Event (events.k8s.io/v1) for each admission with
 * warnings, sent off the request path.
 *
 * The engineer who submitted a PyTorchJob never sees the warnings of its
 * pods' admissions: the training-operator made the pods and got them. An
 * Event on the pod's controlling owner (the ownerReference with controller:
 * true; `regarding` carries its apiVersion, kind, name, namespace and uid) is
 * what `kubectl describe pytorchjob J` shows. A pod without one gets its
 * Event on its Namespace, in the pod's namespace.
 *
 * events_report() copies what the admission said into a bounded queue and
 * returns; it never waits for the API. One sender thread makes the Events.
 * A full queue drops the report and counts it. A pod in report mode that got
 * its report (rdma-webhook.io/report) also gets a Normal Event, reason
 * EVENTS_REASON_REPORT, whose note is the report's lines (report_note),
 * with warnings or without: its author sees what enforce would do where
 * they look. Admissions without warnings or a report,
 * requests that were not a Pod CREATE, and dryRun requests report nothing:
 * a dry run must have no side effects (the webhook configuration says
 * sideEffects: NoneOnDryRun). Nor does a call for a pod the webhook has
 * mutated already (a reinvocation, or its second webhook entry): the first
 * call reported, and one pod counts once.
 *
 * Aggregation: reports with the same regarding object, reason and warnings
 * (the note without the pod's name) are one Event while each comes within
 * window_ms of the previous one. The first report creates it, and its note
 * names that pod; later ones count in its series {count, lastObservedTime},
 * merge-patched at most every patch_ms, so a job of 512 pods makes one Event
 * per distinct set of warnings and a few requests. The note has the
 * warnings whole (mutate_warnings.full, not kubectl's 120-byte form): as
 * many as fit in EVENTS_NOTE_MAX, then how many were left out. An Event the API no longer
 * has (404 to the patch: the apiserver's event TTL) is created anew.
 *
 * Failures never reach an admission: a missing API, a 403 (the RBAC of
 * manifests/rbac.yaml not applied), a timeout are counted and logged, at warn
 * for the first after a success and at debug after that. A failed request is
 * tried again only when a new report for the same Event comes, so a denied
 * API costs one request per burst, not one per pod.
 *
 * Lifecycle: events_init() makes the queue and starts the sender (the one
 * shape of webhook/README.md); events_stop() sends what is queued and what
 * is due within its bound, drops the rest (counted), joins and frees.
 * The edges are injectable (events_config): the API call (kubeapi_call_fn) and both clocks,
 * so the queue's rules can be tested without a network.
 */
#ifndef RDMA_WEBHOOK_EVENTS_H
#define RDMA_WEBHOOK_EVENTS_H

#include "base/dynbuf.h"
#include "kube/kubeapi.h"
#include "host/log.h"
#include "admission/review.h"

#include <stdatomic.h>
#include <stddef.h>

/* The API's limits: a note of at most 1024 bytes, a reportingInstance of 128. */
#define EVENTS_NOTE_MAX     1024
#define EVENTS_INSTANCE_MAX 128
/* reportingController, the "From" of kubectl describe: a qualified name. */
#define EVENTS_CONTROLLER "rdma-webhook.io/webhook"
#define EVENTS_ACTION     "Admit"
/* The reason of a reported pod's Normal Event. */
#define EVENTS_REASON_REPORT "RDMAReport"

/* Defaults for a zero in events_config. */
#define EVENTS_QUEUE_DEFAULT      256u
#define EVENTS_WINDOW_DEFAULT_MS  (10u * 60u * 1000u)
#define EVENTS_PATCH_DEFAULT_MS   2000u
#define EVENTS_REQUEST_DEFAULT_MS 5000u
/* Events whose series are followed at once: a new one past this ends the
 * series of the one seen longest ago (its count is sent first). */
#define EVENTS_SERIES_MAX 256

struct events_config {
    unsigned queue_max;  /* reports waiting for the sender */
    unsigned window_ms;  /* the longest gap between reports of one Event */
    unsigned patch_ms;   /* the shortest gap between two requests for one Event */
    unsigned request_ms; /* each request's timeout */
    /* reportingInstance; NULL: $POD_NAME (the Deployment's downward API),
     * else the hostname. Cut to EVENTS_INSTANCE_MAX bytes. */
    const char *instance;
    /* The API (required): kubeapi_call with its client, or a test's fake. Its
     * requests are a POST of a new Event (application/json) or a PATCH of
     * its series (application/merge-patch+json) to
     * /apis/events.k8s.io/v1/namespaces/..., cut to what is left of
     * events_stop's bound and stopped there. */
    kubeapi_call_fn call;
    void *call_ctx;
    /* The clocks; NULL: CLOCK_MONOTONIC (monotime_now) for the window and
     * patch gaps, CLOCK_REALTIME in unix nanoseconds for eventTime, the
     * series' lastObservedTime and the Events' names. events_stop's bound is
     * always on CLOCK_MONOTONIC. */
    long long (*now_ns)(void);
    long long (*wall_ns)(void);
};

/* Counts since events_init(). */
struct events_stats {
    unsigned long long reported;     /* reports queued */
    unsigned long long dropped_full; /* reports dropped: the queue was full */
    unsigned long long aggregated;   /* reports counted in an Event of an earlier one */
    unsigned long long created;      /* Events the API created */
    unsigned long long patched;      /* series updates the API took */
    unsigned long long failed;       /* requests that failed: an error status, or no answer */
    unsigned long long dropped_stop; /* reports no Event counted when events_stop ended */
};

/* Opaque; made by events_init(), undone by events_stop(). */
struct events;

/* Makes the queue and starts the sender. log and cfg->call_ctx are the
 * caller's and must outlive it. ERR_OK with *out set; or ERR_NOMEM or
 * ERR_FAIL (no cfg->call, no thread) with a message in err and *out NULL. */
int events_init(struct events **out, struct log *log, const struct events_config *cfg, char *err,
                size_t errlen);

/* Queues the admission's report: ERR_OK (also when there is nothing to
 * report), or ERR_BUSY when the queue is full (dropped and counted). Never
 * blocks on the API. */
int events_report(struct events *ev, const struct review_summary *sum);

/* An object of the webhook's own: the Event's regarding (apiVersion, kind,
 * name, in namespace_; uid NULL or "": none). */
struct events_object {
    const char *namespace_, *api_version, *kind, *name, *uid;
};

/* Queues an Event about o that no admission makes: the admin's, such as the
 * profiles ConfigMap whose current version is refused (lastgood.h). reason
 * and action are static text; note is cut to EVENTS_NOTE_MAX. Aggregated
 * like an admission's (the same o, reason, action and note count in one
 * series); ERR_OK or ERR_BUSY as events_report(). */
int events_report_object(struct events *ev, const struct events_object *o, const char *reason,
                         const char *action, const char *note);

void events_get_stats(struct events *ev, struct events_stats *out);

/* Stops taking reports, then, for at most timeout_ms (every request's
 * timeout is cut to what is left, and one still running then is told to
 * stop), sends the queued reports and the series updates not yet sent; what
 * is left is dropped, counted and logged. Joins
 * the sender, leaves the final counts in *last (when not NULL), frees
 * everything and sets *ev to NULL; a no-op on NULL (*last untouched). No
 * events_report may be running or follow. */
void events_stop(struct events **ev, unsigned timeout_ms, struct events_stats *last);

#endif
