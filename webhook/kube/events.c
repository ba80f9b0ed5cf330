#include "kube/events.h"

#include "base/err.h"
#include "base/jsonraw.h"
#include "base/jsonw.h"
#include "base/k8sname.h"
#include "host/monotime.h"
#include "base/utf8.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* In every live struct events, and nowhere else: a stopped or stray pointer
 * fails the assert instead of corrupting memory. */
#define EVENTS_MAGIC 0x65766e74u /* "evnt" */
/* While a series waits for its next patch, the sender looks at the clock at
 * least this often (the clock may be a test's). */
#define EVENTS_TICK_MS 100
/* An Event's JSON: the note escaped (at most 6 bytes for each of 1023) and
 * the rest, which is a few hundred bytes. */
#define EVENTS_BODY_MAX     (16u * 1024u)
#define EVENTS_RESPONSE_MAX (64u * 1024u)
#define EVENTS_PATH_MAX     640
/* A MicroTime, with room for any year gmtime_r gives. */
#define EVENTS_TIME_MAX 96
/* Between two warnings of one note. */
#define EVENTS_SEP " | "
/* After the warnings that fit in a note, the count of those that did not
 * ("%zu" and a plural "s"). */
#define EVENTS_LEFT_OUT_FMT " | and %zu more warning%s: see the webhook's log"
/* The note's room for the pod's name: the warnings take the rest. */
#define EVENTS_POD_ROOM 96
/* What every warning starts with; an Event's "From" says it already. */
#define EVENTS_WARNING_PREFIX "rdma-webhook: "
/* The longest base of an Event's name: the name is BASE.HEX, where HEX is
 * a unix time in nanoseconds (at most 16 digits), as client-go makes them. */
#define EVENTS_NAME_BASE_MAX (K8SNAME_SUBDOMAIN_MAX - 17)

/* One admission's report, as queued: what its Event says. */
struct events_item {
    char namespace_[64];
    struct review_owner owner;      /* kind "": the Event is about the Namespace */
    const char *type;               /* "Warning" or "Normal" (static text) */
    const char *reason;             /* static text */
    const char *action;             /* static text */
    char pod[352];                  /* "pod NAME (worker 0)": whom the note names */
    char warnings[EVENTS_NOTE_MAX]; /* joined: the part of the note that aggregates */
};

enum events_state { EVENTS_FREE, EVENTS_PENDING, EVENTS_CREATED };

/* One Event and the reports it counts; the sender's alone. */
struct events_series {
    enum events_state state; /* PENDING: not created yet (or gone from the API) */
    uint64_t hash;
    struct events_item first; /* the key, and the note of the Event */
    char name[K8SNAME_SUBDOMAIN_MAX + 1];
    unsigned long long count;        /* reports */
    unsigned long long sent;         /* reports the API's Event counts */
    long long first_wall, last_wall; /* unix ns: eventTime, series.lastObservedTime */
    long long last_seen, last_try;   /* now_ns */
    int tried;                       /* last_try is set */
    int failed;                      /* the last request failed and no report came since */
};

struct events {
    unsigned magic;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    /* Under mu: the queue, a ring of cap reports from head. */
    struct events_item *ring;
    unsigned cap, head, n;
    int stop;
    long long stop_deadline; /* monotime_now() at which events_stop gives up */
    /* Set when stop's bound is over: a request in flight ends. */
    atomic_int cancel;
    /* The sender's alone. */
    struct events_series *series;
    struct events_item scratch;
    struct dynbuf body, resp;
    int failing; /* the last request failed: the next failure logs at debug */
    /* Settings. */
    struct events_config cfg;
    long long window_ns, patch_ns;
    struct log *log;
    char instance[EVENTS_INSTANCE_MAX + 1];
    /* Counts. */
    atomic_ullong reported, dropped_full, aggregated, created, patched, failed, dropped_stop;
};

/* ---- what a report says ------------------------------------------------ */

static const char *events_reason(enum mutate_reason r)
{
    switch (mutate_reason_outcome(r)) {
    case MUTATE_PATCHED: return "MutatedWithWarnings";
    case MUTATE_SKIPPED: return "NotMutated";
    case MUTATE_REPORTED: return "ReportedWithWarnings";
    default: return "MutationError";
    }
}

/* "pod NAME (TYPE INDEX)": the pod (a generateName ends in '*'), and for a
 * training-operator pod its replica. */
static void events_pod_text(char *out, size_t outlen, const struct review_summary *sum)
{
    int n = snprintf(out, outlen, "pod %s%s", sum->name, sum->name_generated ? "*" : "");

    if (n > 0 && (size_t)n < outlen && sum->replica_type[0])
        snprintf(out + n, outlen - (size_t)n, " (%s%s%s)", sum->replica_type,
                 sum->replica_index[0] ? " " : "", sum->replica_index);
}

/* The warnings, whole and without their common prefix, joined: as many as
 * fit in outlen with EVENTS_LEFT_OUT_FMT after them, which counts the rest
 * (the pod's rdma-webhook.io/warnings and the log have them all). Only a
 * first warning too long for the note on its own is cut. */
static void events_join(char *out, size_t outlen, const struct mutate_warnings *ws)
{
    size_t len = 0, plen = strlen(EVENTS_WARNING_PREFIX), n = ws->n, i;
    char tail[80];

    if (n > MUTATE_MAX_WARNINGS)
        n = MUTATE_MAX_WARNINGS;
    out[0] = '\0';
    for (i = 0; i < n; i++) {
        const char *w = ws->full[i];
        size_t wl, room = outlen - 1 - len;

        if (strncmp(w, EVENTS_WARNING_PREFIX, plen) == 0)
            w += plen;
        wl = strlen(w) + (i ? strlen(EVENTS_SEP) : 0);
        /* The last one needs no room for the count after it. */
        if (i + 1 < n)
            room = room > sizeof(tail) ? room - sizeof(tail) : 0;
        if (wl > room)
            break;
        len += (size_t)snprintf(out + len, outlen - len, "%s%s", i ? EVENTS_SEP : "", w);
    }
    if (i == 0 && n > 0) {
        const char *w = ws->full[0];

        if (strncmp(w, EVENTS_WARNING_PREFIX, plen) == 0)
            w += plen;
        utf8_shorten(w, outlen - 1 - sizeof(tail), out, outlen - sizeof(tail));
        len = strlen(out);
        i = 1;
    }
    if (i < n) {
        snprintf(tail, sizeof(tail), EVENTS_LEFT_OUT_FMT, n - i, n - i == 1 ? "" : "s");
        snprintf(out + len, outlen - len, "%s", tail);
    }
}

_Static_assert(REPORT_NOTE_MAX <= EVENTS_NOTE_MAX - EVENTS_POD_ROOM,
               "the report's note leaves the pod's name its room");

static void events_item_fill(struct events_item *it, const struct review_summary *sum)
{
    memcpy(it->namespace_, sum->namespace_, sizeof(it->namespace_));
    it->owner = sum->owner;
    it->type = "Warning";
    it->reason = events_reason(sum->reason);
    it->action = EVENTS_ACTION;
    events_pod_text(it->pod, sizeof(it->pod), sum);
    events_join(it->warnings, sizeof(it->warnings) - EVENTS_POD_ROOM, &sum->warning_texts);
}

/* The report of a pod in report mode, for its author, who otherwise sees
 * nothing of it: a Normal Event, warnings or not. Reports alike (a job's
 * replicas) count in one series as warnings do. */
static void events_report_fill(struct events_item *it, const struct review_summary *sum)
{
    memcpy(it->namespace_, sum->namespace_, sizeof(it->namespace_));
    it->owner = sum->owner;
    it->type = "Normal";
    it->reason = EVENTS_REASON_REPORT;
    it->action = EVENTS_ACTION;
    events_pod_text(it->pod, sizeof(it->pod), sum);
    memcpy(it->warnings, sum->report_note, sizeof(sum->report_note));
}

/* FNV-1a over the fields that make two reports one Event. */
static uint64_t events_hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (h ^ 0xffu) * 1099511628211ull;
}

static uint64_t events_hash(const struct events_item *it)
{
    uint64_t h = 14695981039346656037ull;

    h = events_hash_str(h, it->namespace_);
    h = events_hash_str(h, it->owner.api_version);
    h = events_hash_str(h, it->owner.kind);
    h = events_hash_str(h, it->owner.name);
    h = events_hash_str(h, it->owner.uid);
    h = events_hash_str(h, it->type);
    h = events_hash_str(h, it->reason);
    h = events_hash_str(h, it->action);
    return events_hash_str(h, it->warnings);
}

static int events_same(const struct events_item *a, const struct events_item *b)
{
    return strcmp(a->namespace_, b->namespace_) == 0 &&
           strcmp(a->owner.api_version, b->owner.api_version) == 0 &&
           strcmp(a->owner.kind, b->owner.kind) == 0 && strcmp(a->owner.name, b->owner.name) == 0 &&
           strcmp(a->owner.uid, b->owner.uid) == 0 && strcmp(a->type, b->type) == 0 &&
           strcmp(a->reason, b->reason) == 0 && strcmp(a->action, b->action) == 0 &&
           strcmp(a->warnings, b->warnings) == 0;
}

/* ---- the requests ------------------------------------------------------ */

static long long events_wall_default(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * MONOTIME_NS_PER_S + ts.tv_nsec;
}

/* A MicroTime: RFC 3339 in UTC with microseconds. */
static const char *events_micro(long long wall_ns, char out[EVENTS_TIME_MAX])
{
    time_t sec = (time_t)(wall_ns / MONOTIME_NS_PER_S);
    struct tm tm;

    gmtime_r(&sec, &tm);
    snprintf(out, EVENTS_TIME_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (long)(wall_ns % MONOTIME_NS_PER_S / 1000));
    return out;
}

/* BASE.HEX: the regarding object's name (cut, and never ending in '-' or
 * '.'), or a fixed base where that is not a DNS subdomain. */
static void events_name(char *out, size_t outlen, const struct events_item *it, long long wall_ns)
{
    char base[EVENTS_NAME_BASE_MAX + 1];
    const char *from = it->owner.kind[0] ? it->owner.name : it->namespace_;
    size_t n = strnlen(from, EVENTS_NAME_BASE_MAX);

    memcpy(base, from, n);
    base[n] = '\0';
    while (n > 0 && (base[n - 1] == '-' || base[n - 1] == '.'))
        base[--n] = '\0';
    if (!k8sname_subdomain(base))
        snprintf(base, sizeof(base), "rdma-webhook");
    snprintf(out, outlen, "%s.%llx", base, (unsigned long long)wall_ns);
}

/* How long the next request may take: its timeout, cut to what is left of
 * stop's bound; 0 when nothing is. */
static long events_timeout(struct events *ev)
{
    long long left;
    int stopping;

    if (atomic_load(&ev->cancel))
        return 0;
    pthread_mutex_lock(&ev->mu);
    stopping = ev->stop;
    left = ev->stop_deadline - monotime_now();
    pthread_mutex_unlock(&ev->mu);
    if (!stopping || left >= (long long)ev->cfg.request_ms * MONOTIME_NS_PER_MS)
        return (long)ev->cfg.request_ms;
    return left >= MONOTIME_NS_PER_MS ? (long)(left / MONOTIME_NS_PER_MS) : 0;
}

static void events_regarding(struct jsonw *w, const struct events_item *it)
{
    const struct review_owner *o = &it->owner;

    jsonw_raw(w, ",\"regarding\":{\"apiVersion\":");
    jsonw_str(w, o->kind[0] ? o->api_version : "v1");
    jsonw_raw(w, ",\"kind\":");
    jsonw_str(w, o->kind[0] ? o->kind : "Namespace");
    jsonw_raw(w, ",\"name\":");
    jsonw_str(w, o->kind[0] ? o->name : it->namespace_);
    /* Also for the Namespace, which has none: the API keeps an Event about
     * an object without a namespace only in default or kube-system, where
     * the pod's owner would not look. */
    jsonw_raw(w, ",\"namespace\":");
    jsonw_str(w, it->namespace_);
    if (o->kind[0] && o->uid[0]) {
        jsonw_raw(w, ",\"uid\":");
        jsonw_str(w, o->uid);
    }
    jsonw_raw(w, "}");
}

static void events_series_json(struct jsonw *w, const struct events_series *s)
{
    char t[EVENTS_TIME_MAX];

    jsonw_raw(w, "\"series\":{\"count\":");
    jsonw_int(w, (long long)s->count);
    jsonw_raw(w, ",\"lastObservedTime\":");
    jsonw_str(w, events_micro(s->last_wall, t));
    jsonw_raw(w, "}");
}

/* "POD: WARNINGS", or WARNINGS alone for a report without a pod; the pod's
 * name is what gives way when both do not fit, never the warnings or their
 * count. */
static void events_note(char *out, size_t outlen, const struct events_item *it)
{
    size_t wl = strlen(it->warnings), room, pl;
    char pod[sizeof(it->pod)];

    if (!it->pod[0] || wl + 3 > outlen) {
        utf8_shorten(it->warnings, outlen - 1, out, outlen);
        return;
    }
    room = outlen - 1 - wl - 2; /* at least 1 */
    if (room < 4)
        room = 4;
    utf8_shorten(it->pod, room - 1, pod, room < sizeof(pod) ? room : sizeof(pod));
    pl = strlen(pod);
    if (pl + 2 + wl >= outlen) /* cannot happen: room is what is left */
        pl = 0;
    memcpy(out, pod, pl);
    memcpy(out + pl, ": ", 2);
    memcpy(out + pl + 2, it->warnings, wl + 1);
}

static int events_create_body(struct events *ev, const struct events_series *s, const char *name)
{
    char t[EVENTS_TIME_MAX], note[EVENTS_NOTE_MAX];
    struct jsonw w;

    events_note(note, sizeof(note), &s->first);
    dynbuf_reset(&ev->body);
    jsonw_init(&w, &ev->body);
    jsonw_raw(&w,
              "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":");
    jsonw_str(&w, name);
    jsonw_raw(&w, ",\"namespace\":");
    jsonw_str(&w, s->first.namespace_);
    jsonw_raw(&w, "},\"eventTime\":");
    jsonw_str(&w, events_micro(s->first_wall, t));
    /* A burst queued before the first request is sent counts at once. */
    if (s->count >= 2) {
        jsonw_raw(&w, ",");
        events_series_json(&w, s);
    }
    jsonw_raw(&w, ",\"reportingController\":\"" EVENTS_CONTROLLER "\",\"reportingInstance\":");
    jsonw_str(&w, ev->instance);
    jsonw_raw(&w, ",\"action\":");
    jsonw_str(&w, s->first.action);
    jsonw_raw(&w, ",\"reason\":");
    jsonw_str(&w, s->first.reason);
    jsonw_raw(&w, ",\"type\":");
    jsonw_str(&w, s->first.type);
    events_regarding(&w, &s->first);
    jsonw_raw(&w, ",\"note\":");
    jsonw_str(&w, note);
    jsonw_raw(&w, "}");
    return jsonw_error(&w);
}

/* The message of the Status in the response, or "". */
static const char *events_status_message(const struct dynbuf *resp, char *out, size_t outlen)
{
    struct jsonraw msg;
    size_t n;

    out[0] = '\0';
    if (jsonraw_member(jsonraw_root(dynbuf_ptr(resp), dynbuf_len(resp)), "message", 7, &msg) < 0 ||
        (n = jsonraw_string(msg, out, outlen)) == JSONRAW_NOT_STRING) {
        out[0] = '\0';
        return out;
    }
    out[n < outlen ? n : utf8_cut(out, outlen - 1)] = '\0';
    return out;
}

static const char *events_hint(const char *method, long status)
{
    if (status == 403)
        return "grant create and patch on events.k8s.io events to the webhook's ServiceAccount "
               "(manifests/rbac.yaml)";
    if (status == 404 && strcmp(method, "POST") == 0)
        return "this API has no events.k8s.io/v1 (Kubernetes 1.19 and later have it)";
    return NULL;
}

static void events_log_failure(struct events *ev, const struct events_series *s, const char *method,
                               long status, const char *why)
{
    const struct events_item *it = &s->first;
    const char *hint = events_hint(method, status);
    struct log_line l;

    log_begin(&l, ev->log, ev->failing ? LOG_DEBUG : LOG_WARN,
              "Event not sent; admissions are not affected");
    log_str(&l, "request", method);
    log_str(&l, "namespace", it->namespace_);
    log_str(&l, "regarding", it->owner.kind[0] ? it->owner.kind : "Namespace");
    log_str(&l, "name", it->owner.kind[0] ? it->owner.name : it->namespace_);
    if (status)
        log_int(&l, "status", status);
    log_str(&l, "error", why);
    if (hint)
        log_str(&l, "hint", hint);
    log_end(&l);
    ev->failing = 1;
    atomic_fetch_add(&ev->failed, 1);
}

static void events_log_recovered(struct events *ev)
{
    if (ev->failing)
        log_msg(ev->log, LOG_INFO, "Events are sent again", NULL, NULL);
    ev->failing = 0;
}

/* One request; ERR_OK with *status, or a failure already logged and counted. */
static int events_send(struct events *ev, struct events_series *s, const char *method,
                       const char *path, long *status)
{
    long timeout = events_timeout(ev);
    /* A POST creates an Event, a PATCH merges into its series. */
    const struct kubeapi_request req = {.method = method,
                                        .path = path,
                                        .body = dynbuf_ptr(&ev->body),
                                        .len = dynbuf_len(&ev->body),
                                        .content_type = strcmp(method, "PATCH") == 0
                                                            ? "application/merge-patch+json"
                                                            : "application/json",
                                        .timeout_ms = timeout,
                                        .stop = &ev->cancel};
    char err[ERR_LEN] = "", msg[256];
    int rc;

    *status = 0;
    s->tried = 1;
    s->last_try = ev->cfg.now_ns();
    if (timeout <= 0)
        return ERR_FAIL;
    dynbuf_reset(&ev->resp);
    rc = ev->cfg.call(ev->cfg.call_ctx, &req, &ev->resp, status, err, sizeof(err));
    if (rc != ERR_OK) {
        s->failed = 1;
        events_log_failure(ev, s, method, 0, err);
        return rc;
    }
    if (*status / 100 != 2 && !(*status == 404 && strcmp(method, "PATCH") == 0)) {
        s->failed = 1;
        events_log_failure(ev, s, method, *status,
                           events_status_message(&ev->resp, msg, sizeof(msg)));
        return ERR_FAIL;
    }
    return ERR_OK;
}

static void events_create(struct events *ev, struct events_series *s)
{
    char path[EVENTS_PATH_MAX];
    long status;

    events_name(s->name, sizeof(s->name), &s->first, ev->cfg.wall_ns());
    snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events",
             s->first.namespace_);
    if (!k8sname_label(s->first.namespace_) || events_create_body(ev, s, s->name) != ERR_OK) {
        s->failed = s->tried = 1;
        events_log_failure(ev, s, "POST", 0, "the namespace or the Event cannot be written");
        return;
    }
    if (events_send(ev, s, "POST", path, &status) != ERR_OK)
        return;
    s->state = EVENTS_CREATED;
    s->sent = s->count;
    atomic_fetch_add(&ev->created, 1);
    events_log_recovered(ev);
}

/* The series update; an Event the API no longer has is made again, with
 * the reports it did not count. */
static void events_patch(struct events *ev, struct events_series *s)
{
    char path[EVENTS_PATH_MAX];
    struct jsonw w;
    long status;

    snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events/%s",
             s->first.namespace_, s->name);
    dynbuf_reset(&ev->body);
    jsonw_init(&w, &ev->body);
    jsonw_raw(&w, "{");
    events_series_json(&w, s);
    jsonw_raw(&w, "}");
    if (jsonw_error(&w) != ERR_OK || events_send(ev, s, "PATCH", path, &status) != ERR_OK)
        return;
    if (status == 404) {
        s->count -= s->sent;
        s->sent = 0;
        s->first_wall = s->last_wall;
        s->state = EVENTS_PENDING;
        events_create(ev, s);
        return;
    }
    s->sent = s->count;
    atomic_fetch_add(&ev->patched, 1);
    events_log_recovered(ev);
}

/* ---- the series table -------------------------------------------------- */

static int events_unsent(const struct events_series *s)
{
    return s->state == EVENTS_PENDING || s->count > s->sent;
}

/* A request is due: never tried, or patch_ms after the last one, and not
 * waiting for a new report after a failure. */
static int events_due(const struct events *ev, const struct events_series *s, long long now)
{
    return s->state != EVENTS_FREE && events_unsent(s) && !s->failed &&
           (!s->tried || now - s->last_try >= ev->patch_ns);
}

static void events_send_series(struct events *ev, struct events_series *s)
{
    if (s->state == EVENTS_PENDING)
        events_create(ev, s);
    else
        events_patch(ev, s);
}

static int events_expired(const struct events *ev, const struct events_series *s, long long now)
{
    return now - s->last_seen > ev->window_ns;
}

/* A slot for a new series: a free or expired one, else the one seen
 * longest ago, whose unsent count is sent first (one try). */
static struct events_series *events_slot(struct events *ev, long long now)
{
    struct events_series *oldest = NULL;

    for (int i = 0; i < EVENTS_SERIES_MAX; i++) {
        struct events_series *s = &ev->series[i];

        if (s->state == EVENTS_FREE || events_expired(ev, s, now))
            return s;
        if (!oldest || s->last_seen < oldest->last_seen)
            oldest = s;
    }
    if (events_unsent(oldest) && !oldest->failed)
        events_send_series(ev, oldest);
    return oldest;
}

static void events_absorb(struct events *ev, const struct events_item *it)
{
    long long now = ev->cfg.now_ns(), wall = ev->cfg.wall_ns();
    uint64_t h = events_hash(it);
    struct events_series *s;

    for (int i = 0; i < EVENTS_SERIES_MAX; i++) {
        s = &ev->series[i];
        if (s->state != EVENTS_FREE && s->hash == h && !events_expired(ev, s, now) &&
            events_same(&s->first, it)) {
            s->count++;
            s->last_seen = now;
            s->last_wall = wall;
            s->failed = 0;
            atomic_fetch_add(&ev->aggregated, 1);
            return;
        }
    }
    s = events_slot(ev, now);
    memset(s, 0, sizeof(*s));
    s->state = EVENTS_PENDING;
    s->hash = h;
    s->first = *it;
    s->count = 1;
    s->first_wall = s->last_wall = wall;
    s->last_seen = now;
}

/* Sends what is due; with final (stopping), everything not waiting for a
 * new report after a failure, while stop's bound lasts. */
static void events_work(struct events *ev, int final)
{
    for (int i = 0; i < EVENTS_SERIES_MAX; i++) {
        struct events_series *s = &ev->series[i];
        long long now = ev->cfg.now_ns();

        if (s->state == EVENTS_FREE)
            continue;
        if (final ? events_unsent(s) && !s->failed : events_due(ev, s, now))
            events_send_series(ev, s);
        else if (!final && !events_unsent(s) && events_expired(ev, s, now))
            s->state = EVENTS_FREE;
    }
}

/* ---- the sender -------------------------------------------------------- */

/* With mu held and nothing queued: until a report or a stop comes, or, when
 * a series waits for its next request, until that is due (on the
 * configured clock, looked at every EVENTS_TICK_MS). */
static void events_wait(struct events *ev)
{
    long long now = ev->cfg.now_ns(), wait = -1;
    struct timespec until;

    for (int i = 0; i < EVENTS_SERIES_MAX; i++) {
        const struct events_series *s = &ev->series[i];
        long long left;

        if (s->state == EVENTS_FREE || !events_unsent(s) || s->failed)
            continue;
        left = s->tried ? s->last_try + ev->patch_ns - now : 0;
        if (wait < 0 || left < wait)
            wait = left;
    }
    if (wait < 0) {
        pthread_cond_wait(&ev->cv, &ev->mu);
        return;
    }
    if (wait > EVENTS_TICK_MS * MONOTIME_NS_PER_MS)
        wait = EVENTS_TICK_MS * MONOTIME_NS_PER_MS;
    if (wait < MONOTIME_NS_PER_MS)
        wait = MONOTIME_NS_PER_MS;
    until = monotime_at(monotime_now() + wait);
    pthread_cond_timedwait(&ev->cv, &ev->mu, &until);
}

static void *events_main(void *arg)
{
    struct events *ev = arg;
    unsigned long long left = 0;

    pthread_mutex_lock(&ev->mu);
    for (;;) {
        while (ev->n > 0) {
            ev->scratch = ev->ring[ev->head];
            ev->head = (ev->head + 1) % ev->cap;
            ev->n--;
            pthread_mutex_unlock(&ev->mu);
            events_absorb(ev, &ev->scratch);
            pthread_mutex_lock(&ev->mu);
        }
        if (ev->stop)
            break;
        pthread_mutex_unlock(&ev->mu);
        events_work(ev, 0);
        pthread_mutex_lock(&ev->mu);
        if (ev->n == 0 && !ev->stop)
            events_wait(ev);
    }
    pthread_mutex_unlock(&ev->mu);
    events_work(ev, 1);
    for (int i = 0; i < EVENTS_SERIES_MAX; i++)
        if (ev->series[i].state != EVENTS_FREE)
            left += ev->series[i].count - ev->series[i].sent;
    atomic_store(&ev->dropped_stop, left);
    return NULL;
}

/* ---- life cycle -------------------------------------------------------- */

/* reportingInstance: the setting, $POD_NAME, the hostname, whole
 * characters of at most EVENTS_INSTANCE_MAX bytes. */
static void events_instance(char *out, const char *set)
{
    char host[256] = "";
    const char *from = set && *set ? set : getenv("POD_NAME");
    size_t n;

    if (!from || !*from)
        from = gethostname(host, sizeof(host) - 1) == 0 && host[0] ? host : "rdma-webhook";
    n = strlen(from);
    if (n > EVENTS_INSTANCE_MAX)
        n = utf8_cut(from, EVENTS_INSTANCE_MAX);
    memcpy(out, from, n);
    out[n] = '\0';
}

static void events_config_fill(struct events *ev, const struct events_config *cfg)
{
    ev->cfg = *cfg;
    if (!ev->cfg.queue_max)
        ev->cfg.queue_max = EVENTS_QUEUE_DEFAULT;
    if (!ev->cfg.window_ms)
        ev->cfg.window_ms = EVENTS_WINDOW_DEFAULT_MS;
    if (!ev->cfg.patch_ms)
        ev->cfg.patch_ms = EVENTS_PATCH_DEFAULT_MS;
    if (!ev->cfg.request_ms)
        ev->cfg.request_ms = EVENTS_REQUEST_DEFAULT_MS;
    if (!ev->cfg.now_ns)
        ev->cfg.now_ns = monotime_now;
    if (!ev->cfg.wall_ns)
        ev->cfg.wall_ns = events_wall_default;
    ev->window_ns = (long long)ev->cfg.window_ms * MONOTIME_NS_PER_MS;
    ev->patch_ns = (long long)ev->cfg.patch_ms * MONOTIME_NS_PER_MS;
    ev->cap = ev->cfg.queue_max;
    ev->cfg.instance = NULL; /* copied below; the caller's text need not outlive init */
}

static void events_free(struct events *ev)
{
    dynbuf_free(&ev->body);
    dynbuf_free(&ev->resp);
    free(ev->ring);
    free(ev->series);
    free(ev);
}

int events_init(struct events **out, struct log *log, const struct events_config *cfg, char *err,
                size_t errlen)
{
    struct events *ev;

    *out = NULL;
    if (!cfg->call)
        return err_set(err, errlen, ERR_FAIL, "Events: no API to send them to");
    ev = calloc(1, sizeof(*ev));
    if (!ev)
        return err_set(err, errlen, ERR_NOMEM, "Events: out of memory");
    events_instance(ev->instance, cfg->instance);
    events_config_fill(ev, cfg);
    ev->log = log;
    dynbuf_init(&ev->body, EVENTS_BODY_MAX);
    dynbuf_init(&ev->resp, EVENTS_RESPONSE_MAX);
    ev->ring = calloc(ev->cap, sizeof(*ev->ring));
    ev->series = calloc(EVENTS_SERIES_MAX, sizeof(*ev->series));
    if (!ev->ring || !ev->series) {
        unsigned cap = ev->cap;

        events_free(ev);
        return err_set(err, errlen, ERR_NOMEM, "Events: out of memory for a queue of %u", cap);
    }
    if (monotime_cond_init(&ev->cv))
        goto no_sync;
    if (pthread_mutex_init(&ev->mu, NULL)) {
        pthread_cond_destroy(&ev->cv);
        goto no_sync;
    }
    if (pthread_create(&ev->thread, NULL, events_main, ev)) {
        pthread_cond_destroy(&ev->cv);
        pthread_mutex_destroy(&ev->mu);
        events_free(ev);
        return err_set(err, errlen, ERR_FAIL, "Events: cannot start the sender thread");
    }
    ev->magic = EVENTS_MAGIC;
    *out = ev;
    return ERR_OK;
no_sync:
    events_free(ev);
    return err_set(err, errlen, ERR_FAIL, "Events: cannot make the queue's lock");
}

static int events_enqueue(struct events *ev, const struct events_item *it)
{
    pthread_mutex_lock(&ev->mu);
    if (ev->n == ev->cap || ev->stop) {
        pthread_mutex_unlock(&ev->mu);
        atomic_fetch_add(&ev->dropped_full, 1);
        return ERR_BUSY;
    }
    ev->ring[(ev->head + ev->n) % ev->cap] = *it;
    if (ev->n++ == 0)
        pthread_cond_signal(&ev->cv);
    pthread_mutex_unlock(&ev->mu);
    atomic_fetch_add(&ev->reported, 1);
    return ERR_OK;
}

int events_report(struct events *ev, const struct review_summary *sum)
{
    struct events_item it;

    int rc = ERR_OK;

    assert(ev->magic == EVENTS_MAGIC);
    if (sum->ignored || sum->dry_run || sum->called_again)
        return ERR_OK;
    if (sum->warning_texts.n) {
        events_item_fill(&it, sum);
        rc = events_enqueue(ev, &it);
    }
    if (sum->report_note[0]) {
        events_report_fill(&it, sum);
        if (events_enqueue(ev, &it) != ERR_OK)
            rc = ERR_BUSY;
    }
    return rc;
}

int events_report_object(struct events *ev, const struct events_object *o, const char *reason,
                         const char *action, const char *note)
{
    struct events_item it;

    assert(ev->magic == EVENTS_MAGIC);
    memset(&it, 0, sizeof(it));
    snprintf(it.namespace_, sizeof(it.namespace_), "%s", o->namespace_);
    snprintf(it.owner.api_version, sizeof(it.owner.api_version), "%s", o->api_version);
    snprintf(it.owner.kind, sizeof(it.owner.kind), "%s", o->kind);
    snprintf(it.owner.name, sizeof(it.owner.name), "%s", o->name);
    snprintf(it.owner.uid, sizeof(it.owner.uid), "%s", o->uid ? o->uid : "");
    it.type = "Warning";
    it.reason = reason;
    it.action = action;
    utf8_shorten(note, sizeof(it.warnings) - 1, it.warnings, sizeof(it.warnings));
    return events_enqueue(ev, &it);
}

void events_get_stats(struct events *ev, struct events_stats *out)
{
    assert(ev->magic == EVENTS_MAGIC);
    out->reported = atomic_load(&ev->reported);
    out->dropped_full = atomic_load(&ev->dropped_full);
    out->aggregated = atomic_load(&ev->aggregated);
    out->created = atomic_load(&ev->created);
    out->patched = atomic_load(&ev->patched);
    out->failed = atomic_load(&ev->failed);
    out->dropped_stop = atomic_load(&ev->dropped_stop);
}

void events_stop(struct events **evp, unsigned timeout_ms, struct events_stats *last)
{
    struct events *ev = *evp;
    struct timespec until;
    struct events_stats st;
    char n[24];

    if (!ev)
        return;
    assert(ev->magic == EVENTS_MAGIC);
    pthread_mutex_lock(&ev->mu);
    ev->stop = 1;
    ev->stop_deadline = monotime_now() + (long long)timeout_ms * MONOTIME_NS_PER_MS;
    pthread_cond_signal(&ev->cv);
    pthread_mutex_unlock(&ev->mu);
    /* A request that began before the stop has its own, longer timeout:
     * at the bound it is told to end (curl looks at least once a second). */
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(ev->thread, NULL, &until) != 0) {
        atomic_store(&ev->cancel, 1);
        pthread_join(ev->thread, NULL);
    }
    events_get_stats(ev, &st);
    if (st.dropped_stop) {
        snprintf(n, sizeof(n), "%llu", st.dropped_stop);
        log_msg(ev->log, LOG_WARN, "reports dropped at stop: no Event counts them", "reports", n);
    }
    if (last)
        *last = st;
    pthread_cond_destroy(&ev->cv);
    pthread_mutex_destroy(&ev->mu);
    ev->magic = 0;
    events_free(ev);
    *evp = NULL;
}
