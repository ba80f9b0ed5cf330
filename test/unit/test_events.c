/*
 * Unit tests for webhook/kube/events.c, with a fake API behind the queue and a
 * fake clock for the window and the patch gap (events_config's edges): the
 * Event's JSON (regarding the owner or the Namespace, the note naming the
 * pod and its replica, the API's required fields and limits); a reported
 * pod's Normal RDMAReport Event, with warnings or without; dry runs,
 * admissions without warnings and second calls for a mutated pod report
 * nothing; a full queue drops and counts
 * without blocking; reports within the window are one Event whose series is
 * patched no more often than the patch gap, a burst queued before the first
 * request is created with its series, and a report after the window makes a
 * new Event; a 404 to a patch creates the Event again; a failure is counted,
 * logged once at warn, and tried again only with a new report; stop sends
 * what is queued, or, against an API that does not answer, gives up within
 * its bound and counts what it dropped.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "kube/events.h"
#include "host/log.h"
#include "host/monotime.h"

#define WAIT_MS   5000 /* the most a test waits for the sender to get somewhere */
#define PATCH_MS  2000 /* on the fake clock */
#define WINDOW_MS 60000
#define MAX_CALLS (EVENTS_SERIES_MAX + 64)

struct call {
    char method[8];
    char content_type[48];
    char path[640];
    char body[4096];
    long timeout_ms;
};

/* The fake API: records every request; answers status_post / status_patch;
 * a held API blocks each request until released, its timeout passes or it
 * is told to stop (as libcurl does). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct call calls[MAX_CALLS];
    int n;
    int entered; /* requests that began */
    int hold;
    long status_post, status_patch;
} api = {.mu = PTHREAD_MUTEX_INITIALIZER}; /* cv waits on CLOCK_MONOTONIC: made in main */

/* The fake clock: stands still unless a test moves it. */
#define FAKE_START (1000 * MONOTIME_NS_PER_S)
static atomic_llong fake_now;

static long long fake_clock(void)
{
    return atomic_load(&fake_now);
}

/* 2024-05-01T12:00:00.123456Z when a test starts, moving with the fake clock. */
static long long fake_wall(void)
{
    return 1714564800LL * MONOTIME_NS_PER_S + 123456000LL + atomic_load(&fake_now) - FAKE_START;
}

static void advance_ms(long long ms)
{
    atomic_fetch_add(&fake_now, ms * MONOTIME_NS_PER_MS);
}

static int fake_send(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp,
                     long *status, char *err, size_t errlen)
{
    const char *method = req->method, *path = req->path;
    long timeout_ms = req->timeout_ms;
    const atomic_int *stop = req->stop;
    long long until = monotime_now() + timeout_ms * MONOTIME_NS_PER_MS;
    struct call *c;

    (void)ctx;
    pthread_mutex_lock(&api.mu);
    api.entered++;
    pthread_cond_broadcast(&api.cv);
    while (api.hold && !atomic_load(stop) && monotime_now() < until) {
        struct timespec tick = monotime_at(monotime_now() + 5 * MONOTIME_NS_PER_MS);

        pthread_cond_timedwait(&api.cv, &api.mu, &tick);
    }
    if (api.hold) {
        pthread_mutex_unlock(&api.mu);
        return err_set(err, errlen, ERR_FAIL, "%s %s: Timeout was reached", method, path);
    }
    assert_true(api.n < MAX_CALLS);
    c = &api.calls[api.n];
    snprintf(c->method, sizeof(c->method), "%s", method);
    snprintf(c->content_type, sizeof(c->content_type), "%s",
             req->content_type ? req->content_type : "");
    snprintf(c->path, sizeof(c->path), "%s", path);
    assert_true(req->body && req->len < sizeof(c->body));
    memcpy(c->body, req->body, req->len);
    c->body[req->len] = '\0';
    c->timeout_ms = timeout_ms;
    api.n++;
    *status = strcmp(method, "POST") == 0 ? api.status_post : api.status_patch;
    if (*status == 403)
        dynbuf_addstr(resp, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                            "\"message\":\"events.events.k8s.io is forbidden: User cannot "
                            "create\",\"reason\":\"Forbidden\",\"code\":403}");
    pthread_cond_broadcast(&api.cv);
    pthread_mutex_unlock(&api.mu);
    return ERR_OK;
}

static int api_calls(void)
{
    int n;

    pthread_mutex_lock(&api.mu);
    n = api.n;
    pthread_mutex_unlock(&api.mu);
    return n;
}

/* Waits until the fake has recorded n requests; fails the test after WAIT_MS. */
static void wait_calls(int n)
{
    long long until = monotime_now() + WAIT_MS * MONOTIME_NS_PER_MS;

    while (api_calls() < n) {
        if (monotime_now() > until)
            fail_msg("waited %d ms for %d requests, the fake API has %d", WAIT_MS, n, api_calls());
        usleep(1000);
    }
}

static void wait_entered(int n)
{
    struct timespec until = monotime_at(monotime_now() + WAIT_MS * MONOTIME_NS_PER_MS);

    pthread_mutex_lock(&api.mu);
    while (api.entered < n)
        if (pthread_cond_timedwait(&api.cv, &api.mu, &until) != 0)
            fail_msg("the sender did not begin request %d within %d ms", n, WAIT_MS);
    pthread_mutex_unlock(&api.mu);
}

static void api_hold(int on)
{
    pthread_mutex_lock(&api.mu);
    api.hold = on;
    pthread_cond_broadcast(&api.cv);
    pthread_mutex_unlock(&api.mu);
}

static struct events_stats stats_of(struct events *ev)
{
    struct events_stats st;

    events_get_stats(ev, &st);
    return st;
}

/* Waits until the sender has taken in reported reports (aggregated or not). */
static void wait_aggregated(struct events *ev, unsigned long long n)
{
    long long until = monotime_now() + WAIT_MS * MONOTIME_NS_PER_MS;

    while (stats_of(ev).aggregated < n) {
        if (monotime_now() > until)
            fail_msg("waited %d ms for %llu aggregated reports, got %llu", WAIT_MS, n,
                     stats_of(ev).aggregated);
        usleep(1000);
    }
}

static struct log test_log;
static FILE *log_file;

static int setup(void **state __attribute__((unused)))
{
    pthread_mutex_lock(&api.mu);
    api.n = api.entered = api.hold = 0;
    api.status_post = 201;
    api.status_patch = 200;
    pthread_mutex_unlock(&api.mu);
    atomic_store(&fake_now, FAKE_START);
    log_file = tmpfile();
    if (!log_file)
        return -1;
    test_log = (struct log){.fd = fileno(log_file), .min = LOG_DEBUG};
    return 0;
}

static int teardown(void **state __attribute__((unused)))
{
    fclose(log_file);
    return 0;
}

static struct events *start(unsigned queue_max)
{
    struct events_config cfg = {.queue_max = queue_max,
                                .window_ms = WINDOW_MS,
                                .patch_ms = PATCH_MS,
                                .instance = "rdma-webhook-7c9f-x2v",
                                .call = fake_send,
                                .now_ns = fake_clock,
                                .wall_ns = fake_wall};
    struct events *ev;
    char err[ERR_LEN] = "";

    assert_int_equal(events_init(&ev, &test_log, &cfg, err, sizeof(err)), ERR_OK);
    return ev;
}

/* A worker pod of PyTorchJob "bert" with one warning. */
static struct review_summary job_pod(int index, const char *warning)
{
    struct review_summary s;

    memset(&s, 0, sizeof(s));
    snprintf(s.namespace_, sizeof(s.namespace_), "team-a");
    snprintf(s.name, sizeof(s.name), "bert-worker-%d", index);
    snprintf(s.owner.api_version, sizeof(s.owner.api_version), "kubeflow.org/v1");
    snprintf(s.owner.kind, sizeof(s.owner.kind), "PyTorchJob");
    snprintf(s.owner.name, sizeof(s.owner.name), "bert");
    snprintf(s.owner.uid, sizeof(s.owner.uid), "8f5b1c2e-3a4d-4e5f-9a6b-7c8d9e0f1a2b");
    snprintf(s.replica_type, sizeof(s.replica_type), "worker");
    snprintf(s.replica_index, sizeof(s.replica_index), "%d", index);
    s.reason = MUTATE_R_MUTATED;
    s.warnings = s.warning_texts.n = 1;
    snprintf(s.warning_texts.text[0], sizeof(s.warning_texts.text[0]), "rdma-webhook: %s", warning);
    snprintf(s.warning_texts.full[0], sizeof(s.warning_texts.full[0]), "rdma-webhook: %s", warning);
    return s;
}

#define W_OCTAL "container \"pytorch\": NCCL_IB_TIMEOUT=022 is octal to NCCL (18)"

static cJSON *body_of(int i)
{
    cJSON *j = cJSON_Parse(api.calls[i].body);

    if (!j)
        fail_msg("request %d: body is not JSON: %s", i, api.calls[i].body);
    return j;
}

static const char *str_at(const cJSON *j, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, a);

    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : "(absent)";
}

static double num_at(const cJSON *j, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, a), b);

    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

TEST(test_event_on_the_controlling_owner)
{
    struct events *ev;
    struct review_summary s = job_pod(3, W_OCTAL);
    cJSON *j;

    ev = start(0);
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(1);
    assert_string_equal(api.calls[0].method, "POST");
    assert_string_equal(api.calls[0].path, "/apis/events.k8s.io/v1/namespaces/team-a/events");
    j = body_of(0);
    assert_string_equal(str_at(j, "apiVersion", NULL), "events.k8s.io/v1");
    assert_string_equal(str_at(j, "kind", NULL), "Event");
    /* client-go's names: the regarding object's, a dot, the time in hex. */
    assert_string_equal(str_at(j, "metadata", "name"), "bert.17cb5b99ffbf4a00");
    assert_string_equal(str_at(j, "metadata", "namespace"), "team-a");
    assert_string_equal(str_at(j, "eventTime", NULL), "2024-05-01T12:00:00.123456Z");
    assert_string_equal(str_at(j, "reportingController", NULL), EVENTS_CONTROLLER);
    assert_string_equal(str_at(j, "reportingInstance", NULL), "rdma-webhook-7c9f-x2v");
    assert_string_equal(str_at(j, "action", NULL), "Admit");
    assert_string_equal(str_at(j, "reason", NULL), "MutatedWithWarnings");
    assert_string_equal(str_at(j, "type", NULL), "Warning");
    assert_string_equal(str_at(j, "regarding", "apiVersion"), "kubeflow.org/v1");
    assert_string_equal(str_at(j, "regarding", "kind"), "PyTorchJob");
    assert_string_equal(str_at(j, "regarding", "name"), "bert");
    assert_string_equal(str_at(j, "regarding", "namespace"), "team-a");
    assert_string_equal(str_at(j, "regarding", "uid"), "8f5b1c2e-3a4d-4e5f-9a6b-7c8d9e0f1a2b");
    /* The pod and its replica, then the warning without its prefix. */
    assert_string_equal(str_at(j, "note", NULL), "pod bert-worker-3 (worker 3): " W_OCTAL);
    assert_null(cJSON_GetObjectItemCaseSensitive(j, "series"));
    cJSON_Delete(j);
    events_stop(&ev, 1000, NULL);
    assert_null(ev);
}

TEST(test_event_on_the_namespace_without_an_owner)
{
    struct events *ev = start(0);
    struct review_summary s = job_pod(0, W_OCTAL);
    cJSON *j;

    memset(&s.owner, 0, sizeof(s.owner));
    s.replica_type[0] = s.replica_index[0] = '\0';
    snprintf(s.name, sizeof(s.name), "web-7d9f-");
    s.name_generated = 1;
    s.reason = MUTATE_R_UNKNOWN_PROFILE;
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(1);
    j = body_of(0);
    assert_string_equal(str_at(j, "regarding", "apiVersion"), "v1");
    assert_string_equal(str_at(j, "regarding", "kind"), "Namespace");
    assert_string_equal(str_at(j, "regarding", "name"), "team-a");
    /* Without it the API keeps the Event only in default or kube-system. */
    assert_string_equal(str_at(j, "regarding", "namespace"), "team-a");
    assert_string_equal(str_at(j, "regarding", "uid"), "(absent)");
    assert_string_equal(str_at(j, "reason", NULL), "NotMutated");
    assert_string_equal(str_at(j, "note", NULL), "pod web-7d9f-*: " W_OCTAL);
    assert_contains(str_at(j, "metadata", "name"), "team-a.");
    cJSON_Delete(j);
    events_stop(&ev, 1000, NULL);
}

/* The note carries the whole text (the log's), not the 120-byte form the
 * AdmissionReview gets: the cut removes the value the reader needs. */
TEST(test_note_has_the_whole_warning_not_the_short_one)
{
    struct events *ev = start(0);
    struct review_summary s = job_pod(1, "x");
    const char *whole = "pinned to profile \"h100\" nodes: nodeSelector "
                        "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3, "
                        "topology.kubernetes.io/zone=eu-west-1a";
    cJSON *j;

    snprintf(s.warning_texts.full[0], MUTATE_WARNING_FULL_MAX, "rdma-webhook: %s", whole);
    snprintf(s.warning_texts.text[0], MUTATE_WARNING_MAX,
             "rdma-webhook: pinned to profile \"h100\" nodes: nodeSelector "
             "nvidia.com/gpu.product=NVIDIA-H100-80...");
    assert_true(strlen(whole) > MUTATE_WARNING_MAX);
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(1);
    j = body_of(0);
    assert_string_equal(str_at(j, "note", NULL), "pod bert-worker-1 (worker 1): "
                                                 "pinned to profile \"h100\" nodes: nodeSelector "
                                                 "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3, "
                                                 "topology.kubernetes.io/zone=eu-west-1a");
    cJSON_Delete(j);
    events_stop(&ev, 1000, NULL);
}

/* Warnings that do not all fit in the API's 1024 bytes: as many as fit,
 * each whole, and then how many were left out; never one cut. */
TEST(test_note_keeps_whole_warnings_and_counts_those_left_out)
{
    struct events *ev = start(0);
    struct review_summary s = job_pod(1, "x");
    const char *note, *at;
    char want[64];
    int shown = 0;
    cJSON *j;

    /* 16 warnings of 300 bytes, each with two-byte characters. */
    s.warnings = s.warning_texts.n = MUTATE_MAX_WARNINGS;
    for (int i = 0; i < MUTATE_MAX_WARNINGS; i++) {
        char *t = s.warning_texts.full[i];
        size_t n = (size_t)snprintf(t, MUTATE_WARNING_FULL_MAX, "rdma-webhook: w%02d ", i);

        while (n + 2 < 300) {
            memcpy(t + n, "\xc3\xa9", 2); /* é */
            n += 2;
        }
        memcpy(t + n, "!", 2);
        snprintf(s.warning_texts.text[i], MUTATE_WARNING_MAX, "rdma-webhook: w%02d short", i);
    }
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(1);
    j = body_of(0);
    note = str_at(j, "note", NULL);
    assert_true(strlen(note) <= EVENTS_NOTE_MAX - 1);
    assert_contains(note, "pod bert-worker-1 (worker 1): w00 ");
    assert_null(strstr(note, "rdma-webhook:"));
    assert_null(strstr(note, "short"));
    assert_null(strstr(note, "..."));
    /* Every warning shown is whole: it ends in its "!". */
    for (at = note; (at = strstr(at, "!")) != NULL; at++)
        shown++;
    assert_true(shown >= 2);
    snprintf(want, sizeof(want), " | and %d more warnings: see the webhook's log",
             MUTATE_MAX_WARNINGS - shown);
    assert_string_equal(note + strlen(note) - strlen(want), want);
    cJSON_Delete(j);
    events_stop(&ev, 1000, NULL);
}

/* Nor does a second call for a pod the webhook mutated already. */
TEST(test_dry_run_and_no_warnings_report_nothing)
{
    struct events *ev = start(0);
    struct review_summary dry = job_pod(0, W_OCTAL), quiet = job_pod(1, W_OCTAL),
                          other = job_pod(2, W_OCTAL), again = job_pod(3, W_OCTAL);
    struct events_stats st;

    dry.dry_run = 1;
    quiet.warnings = quiet.warning_texts.n = 0;
    other.ignored = 1;
    again.called_again = 1;
    assert_int_equal(events_report(ev, &dry), ERR_OK);
    assert_int_equal(events_report(ev, &quiet), ERR_OK);
    assert_int_equal(events_report(ev, &other), ERR_OK);
    assert_int_equal(events_report(ev, &again), ERR_OK);
    events_stop(&ev, 1000, &st);
    assert_int_equal(st.reported, 0);
    assert_int_equal(api_calls(), 0);
}

/* A reported pod (report mode), without warnings: a Normal Event,
 * RDMAReport, whose note is its report's lines; the replicas of a job with
 * the same report are one Event. With warnings, the Warning Event too. */
#define REPORT_NOTE                                                                                \
    "report mode (--mode): nothing changed; enforce mode would apply "                             \
    "profile \"roce-8card\" (chosen by gpus) | container \"pytorch\": env "                        \
    "NCCL_IB_DISABLE=0"

static struct review_summary reported_pod(int index, const char *warning)
{
    struct review_summary s = job_pod(index, warning ? warning : "");

    s.reason = MUTATE_R_REPORTED;
    s.report_by = "flag";
    if (!warning)
        s.warnings = s.warning_texts.n = 0;
    snprintf(s.report_note, sizeof(s.report_note), "%s", REPORT_NOTE);
    return s;
}

TEST(test_reported_pod_gets_a_normal_report_event)
{
    struct events *ev = start(0);
    struct review_summary a = reported_pod(0, NULL), b = reported_pod(1, NULL);
    struct review_summary dry = reported_pod(2, NULL), again = reported_pod(3, NULL);
    cJSON *j;

    dry.dry_run = 1;
    again.called_again = 1;
    assert_int_equal(events_report(ev, &dry), ERR_OK);
    assert_int_equal(events_report(ev, &again), ERR_OK);
    assert_int_equal(events_report(ev, &a), ERR_OK);
    wait_calls(1);
    j = body_of(0);
    assert_string_equal(str_at(j, "type", NULL), "Normal");
    assert_string_equal(str_at(j, "reason", NULL), EVENTS_REASON_REPORT);
    assert_string_equal(str_at(j, "reason", NULL), "RDMAReport");
    assert_string_equal(str_at(j, "regarding", "kind"), "PyTorchJob");
    assert_string_equal(str_at(j, "note", NULL), "pod bert-worker-0 (worker 0): " REPORT_NOTE);
    cJSON_Delete(j);
    assert_int_equal(events_report(ev, &b), ERR_OK);
    wait_aggregated(ev, 1);
    events_stop(&ev, 1000, NULL);
    assert_int_equal(api_calls(), 2); /* the Event, then its series */
    assert_string_equal(api.calls[1].method, "PATCH");
}

TEST(test_reported_pod_with_warnings_gets_both_events)
{
    struct events *ev = start(0);
    struct review_summary s = reported_pod(0, W_OCTAL);
    cJSON *w, *r;

    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(2);
    w = body_of(0);
    r = body_of(1);
    assert_string_equal(str_at(w, "type", NULL), "Warning");
    assert_string_equal(str_at(w, "reason", NULL), "ReportedWithWarnings");
    assert_string_equal(str_at(w, "note", NULL), "pod bert-worker-0 (worker 0): " W_OCTAL);
    assert_string_equal(str_at(r, "type", NULL), "Normal");
    assert_string_equal(str_at(r, "reason", NULL), "RDMAReport");
    cJSON_Delete(w);
    cJSON_Delete(r);
    events_stop(&ev, 1000, NULL);
}

TEST(test_full_queue_drops_and_counts_without_blocking)
{
    struct events *ev = start(4);
    struct review_summary s;
    int busy = 0;
    struct events_stats st;

    api_hold(1);
    s = job_pod(0, "first");
    assert_int_equal(events_report(ev, &s), ERR_OK);
    /* The sender is inside its request for the first: 4 slots are free. */
    wait_entered(1);
    for (int i = 1; i <= 10; i++) {
        char w[32];
        int rc;

        snprintf(w, sizeof(w), "warning %d", i);
        s = job_pod(i, w);
        rc = events_report(ev, &s);
        if (rc != ERR_OK) {
            assert_int_equal(rc, ERR_BUSY);
            busy++;
        }
    }
    assert_int_equal(busy, 6);
    st = stats_of(ev);
    assert_int_equal(st.reported, 5);
    assert_int_equal(st.dropped_full, 6);
    api_hold(0);
    events_stop(&ev, 5000, &st);
    assert_int_equal(st.created, 5);
    assert_int_equal(st.failed, 0);
}

TEST(test_one_event_per_window_and_series_patched_at_the_gap)
{
    struct events *ev = start(0);
    struct review_summary s;
    struct events_stats st;
    char first_name[256];
    cJSON *j;

    s = job_pod(0, W_OCTAL);
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(1);
    j = body_of(0);
    snprintf(first_name, sizeof(first_name), "%s", str_at(j, "metadata", "name"));
    cJSON_Delete(j);
    /* Nine more pods of the job, within the window and the patch gap. */
    for (int i = 1; i <= 9; i++) {
        s = job_pod(i, W_OCTAL);
        advance_ms(10);
        assert_int_equal(events_report(ev, &s), ERR_OK);
    }
    wait_aggregated(ev, 9);
    assert_int_equal(api_calls(), 1);
    /* The gap passes: one patch counts all ten. */
    advance_ms(PATCH_MS);
    wait_calls(2);
    assert_string_equal(api.calls[0].content_type, "application/json");
    assert_string_equal(api.calls[1].method, "PATCH");
    assert_string_equal(api.calls[1].content_type, "application/merge-patch+json");
    assert_true(strstr(api.calls[1].path, first_name) != NULL);
    j = body_of(1);
    assert_int_equal((int)num_at(j, "series", "count"), 10);
    /* The last report's time, as a MicroTime; nothing else is sent. */
    assert_string_equal(str_at(j, "series", "lastObservedTime"), "2024-05-01T12:00:00.213456Z");
    assert_int_equal(cJSON_GetArraySize(j), 1);
    cJSON_Delete(j);
    /* Another warning, and another job: each its own Event. */
    s = job_pod(10, "container \"pytorch\": other");
    assert_int_equal(events_report(ev, &s), ERR_OK);
    s = job_pod(0, W_OCTAL);
    snprintf(s.owner.name, sizeof(s.owner.name), "gpt");
    snprintf(s.owner.uid, sizeof(s.owner.uid), "0f0e0d0c-0b0a-4908-8706-050403020100");
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(4);
    assert_string_equal(api.calls[2].method, "POST");
    assert_string_equal(api.calls[3].method, "POST");
    /* After the window, the same warning of the same job starts anew. */
    advance_ms(WINDOW_MS + 1);
    s = job_pod(11, W_OCTAL);
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(5);
    assert_string_equal(api.calls[4].method, "POST");
    j = body_of(4);
    assert_string_equal(str_at(j, "note", NULL), "pod bert-worker-11 (worker 11): " W_OCTAL);
    assert_string_not_equal(str_at(j, "metadata", "name"), first_name);
    cJSON_Delete(j);
    events_stop(&ev, 1000, &st);
    assert_int_equal(api_calls(), 5);
    assert_int_equal(st.reported, 13);
    assert_int_equal(st.aggregated, 9);
    assert_int_equal(st.created, 4);
    assert_int_equal(st.patched, 1);
    assert_int_equal(st.dropped_stop, 0);
}

TEST(test_burst_before_the_first_request_is_created_with_its_series)
{
    struct events *ev = start(0);
    struct review_summary s;
    cJSON *j;

    api_hold(1);
    s = job_pod(0, "unrelated");
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_entered(1);
    for (int i = 0; i < 5; i++) {
        s = job_pod(i, W_OCTAL);
        assert_int_equal(events_report(ev, &s), ERR_OK);
    }
    api_hold(0);
    /* After the held one, the five are one create. */
    wait_calls(2);
    j = body_of(1);
    assert_string_equal(str_at(j, "note", NULL), "pod bert-worker-0 (worker 0): " W_OCTAL);
    assert_int_equal((int)num_at(j, "series", "count"), 5);
    cJSON_Delete(j);
    events_stop(&ev, 1000, NULL);
    assert_int_equal(api_calls(), 2);
}

TEST(test_event_gone_from_the_api_is_created_again)
{
    struct events *ev = start(0);
    struct review_summary s = job_pod(0, W_OCTAL);
    cJSON *j;

    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(1);
    api.status_patch = 404;
    for (int i = 1; i <= 3; i++) {
        s = job_pod(i, W_OCTAL);
        assert_int_equal(events_report(ev, &s), ERR_OK);
    }
    wait_aggregated(ev, 3);
    advance_ms(PATCH_MS);
    wait_calls(3);
    assert_string_equal(api.calls[1].method, "PATCH");
    assert_string_equal(api.calls[2].method, "POST");
    /* The new Event counts the three the old one did not. */
    j = body_of(2);
    assert_int_equal((int)num_at(j, "series", "count"), 3);
    cJSON_Delete(j);
    events_stop(&ev, 1000, NULL);
}

TEST(test_failure_is_counted_logged_once_and_retried_with_a_new_report)
{
    struct events *ev = start(0);
    struct review_summary s = job_pod(0, W_OCTAL);
    struct events_stats st;
    const char *log, *warn = "\"level\":\"warn\",\"msg\":\"Event not sent";
    cJSON *j;

    api.status_post = 403;
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(1);
    /* No new report: the gap passing brings no retry. */
    advance_ms(3 * PATCH_MS);
    s = job_pod(0, "container \"pytorch\": another");
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(2);
    assert_true(strstr(api.calls[1].body, "another") != NULL);
    /* A new report of the first: tried again, and this time the API takes it. */
    api.status_post = 201;
    s = job_pod(1, W_OCTAL);
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(3);
    events_stop(&ev, 1000, &st);
    assert_int_equal(api_calls(), 3);
    assert_int_equal(st.failed, 2);
    assert_int_equal(st.created, 1);
    j = body_of(2);
    assert_int_equal((int)num_at(j, "series", "count"), 2);
    cJSON_Delete(j);
    /* The other one failed and got no new report: dropped at the stop. */
    assert_int_equal(st.dropped_stop, 1);
    log = support_log_text(log_file);
    /* The first failure at warn with the API's message and what to do, the
     * second at debug, then the recovery. */
    assert_contains(log, warn);
    assert_null(strstr(strstr(log, warn) + 1, warn));
    assert_contains(log, "events.events.k8s.io is forbidden");
    assert_contains(log, "manifests/rbac.yaml");
    assert_contains(log, "\"level\":\"debug\",\"msg\":\"Event not sent");
    assert_contains(log, "Events are sent again");
}

TEST(test_stop_sends_what_is_queued_and_due)
{
    struct events *ev = start(64);
    struct review_summary s;
    struct events_stats st;

    for (int i = 0; i < 20; i++) {
        char w[32];

        snprintf(w, sizeof(w), "warning %d", i);
        s = job_pod(i, w);
        assert_int_equal(events_report(ev, &s), ERR_OK);
    }
    /* And a series update not yet due. */
    wait_calls(20);
    s = job_pod(20, "warning 0");
    assert_int_equal(events_report(ev, &s), ERR_OK);
    events_stop(&ev, 5000, &st);
    assert_int_equal(st.created, 20);
    assert_int_equal(st.patched, 1);
    assert_int_equal(st.dropped_stop, 0);
    assert_string_equal(api.calls[20].method, "PATCH");
}

TEST(test_stop_gives_up_within_its_bound_and_counts_the_dropped)
{
    struct events *ev = start(64);
    struct review_summary s;
    struct events_stats st;
    long long t0;

    api_hold(1);
    for (int i = 0; i < 10; i++) {
        char w[32];

        snprintf(w, sizeof(w), "warning %d", i);
        s = job_pod(i, w);
        assert_int_equal(events_report(ev, &s), ERR_OK);
    }
    /* The first request began before the stop, with the whole 5 s timeout. */
    wait_entered(1);
    t0 = monotime_now();
    events_stop(&ev, 300, &st);
    /* 300 ms, and the time it takes to be told to stop; not 10 x 5 s. */
    assert_true(monotime_now() - t0 < 2 * MONOTIME_NS_PER_S);
    assert_true(monotime_now() - t0 >= 290 * MONOTIME_NS_PER_MS);
    assert_int_equal(st.created, 0);
    assert_int_equal(st.dropped_stop, 10);
    assert_contains(support_log_text(log_file), "reports dropped at stop: no Event counts them");
    assert_null(ev);
    /* A second stop is a no-op. */
    events_stop(&ev, 300, NULL);
}

/* Past EVENTS_SERIES_MAX Events followed at once, a new one ends the series
 * of the one seen longest ago: that one's next report makes a new Event. */
TEST(test_a_full_table_ends_the_oldest_series)
{
    struct events *ev = start(EVENTS_SERIES_MAX + 8);
    struct review_summary s;
    struct events_stats st;
    char w[32];

    for (int i = 0; i <= EVENTS_SERIES_MAX; i++) {
        snprintf(w, sizeof(w), "warning %d", i);
        s = job_pod(i, w);
        advance_ms(1);
        assert_int_equal(events_report(ev, &s), ERR_OK);
    }
    wait_calls(EVENTS_SERIES_MAX + 1);
    /* "warning 0" made room for the last one: it is new again. */
    s = job_pod(0, "warning 0");
    assert_int_equal(events_report(ev, &s), ERR_OK);
    wait_calls(EVENTS_SERIES_MAX + 2);
    events_stop(&ev, 1000, &st);
    assert_int_equal(st.created, EVENTS_SERIES_MAX + 2);
    assert_int_equal(st.aggregated, 0);
    assert_int_equal(st.patched, 0);
    assert_string_equal(api.calls[EVENTS_SERIES_MAX + 1].method, "POST");
    assert_contains(api.calls[EVENTS_SERIES_MAX + 1].body, "warning 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_event_on_the_controlling_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_event_on_the_namespace_without_an_owner, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_note_has_the_whole_warning_not_the_short_one, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_note_keeps_whole_warnings_and_counts_those_left_out,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_dry_run_and_no_warnings_report_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reported_pod_gets_a_normal_report_event, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reported_pod_with_warnings_gets_both_events, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_full_queue_drops_and_counts_without_blocking, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_one_event_per_window_and_series_patched_at_the_gap,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_burst_before_the_first_request_is_created_with_its_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_event_gone_from_the_api_is_created_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_failure_is_counted_logged_once_and_retried_with_a_new_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_full_table_ends_the_oldest_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_sends_what_is_queued_and_due, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_gives_up_within_its_bound_and_counts_the_dropped,
                                        setup, teardown),
    };

    if (monotime_cond_init(&api.cv))
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
