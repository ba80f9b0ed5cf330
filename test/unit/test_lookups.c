/*
 * Unit tests for webhook/kube/lookups.c, with a fake API and, where time matters,
 * a fake clock behind the caches (lookups_config's edges): an answer is
 * cached until its TTL runs out, and a real API failure for a second; N
 * concurrent misses for one key make one call, the others wait for it and
 * get its answer; a full cache evicts the key that expires first, never one
 * being loaded; a waiter whose budget runs out gives up as "unknown" and
 * caches nothing; an admission with no budget left does not touch the
 * cache, and every failed call is cached for a second, one cut short by
 * the admission's own budget included (issue 28: a hung API cost every
 * admission its whole budget, one after the other). A failed call is
 * counted by kind and reason and logged at warn with the object, the status
 * and a hint, one line per kind and reason an interval, the next one saying
 * how many were left out. After calls in a row that find the API unwell,
 * a kind's circuit opens: no call for a while, then one probe that nobody
 * waits for. A ConfigMap is kept as the keys the profiles may ask for, in a
 * byte budget for all of them, the first to expire making room.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/dynbuf.h"
#include "base/err.h"
#include "kube/kubeapi.h"
#include "host/log.h"
#include "kube/lookups.h"
#include "host/monotime.h"
#include "admission/profiles.h"

#define BUDGET_MS      1000 /* the configured budget; a test moves a request's deadline */
#define WAIT_MS        5000 /* the most a test waits for another thread to get somewhere */
#define LOG_INTERVAL_S 60   /* one failure line per kind and reason this often */

enum fake_mode {
    FAKE_OK,        /* answers at once */
    FAKE_FAIL,      /* fails at once: the API is down */
    FAKE_TIMES_OUT, /* fails after the whole timeout, as libcurl does */
    FAKE_FORBIDDEN, /* answers 403: the RBAC rule is missing */
    FAKE_NOT_FOUND, /* answers 404: a ConfigMap's is an answer, a Node's a failure */
};

/* The fake API. A call for gate_key blocks until the gate opens, then
 * answers like FAKE_OK; calls for other keys follow mode. */
static struct {
    enum fake_mode mode;
    atomic_int calls;
    atomic_long last_timeout_ms;
    const char *gate_key;
    int gate_fails; /* the gated call fails when the gate opens */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int gate_open;
} fake = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* The fake clock: stands still unless a test moves it. */
static atomic_llong fake_now;

static long long fake_clock(void)
{
    return atomic_load(&fake_now);
}

static void advance_ms(long long ms)
{
    atomic_fetch_add(&fake_now, ms * MONOTIME_NS_PER_MS);
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&t, NULL);
}

static void gate_open(void)
{
    pthread_mutex_lock(&fake.mu);
    fake.gate_open = 1;
    pthread_cond_broadcast(&fake.cv);
    pthread_mutex_unlock(&fake.mu);
}

static void gate_wait(void)
{
    pthread_mutex_lock(&fake.mu);
    while (!fake.gate_open)
        pthread_cond_wait(&fake.cv, &fake.mu);
    pthread_mutex_unlock(&fake.mu);
}

/* What a GET of an object answers: a status and a body, or a failure. */
typedef int (*fake_answer_fn)(const char *key, long timeout_ms, struct dynbuf *resp, long *status,
                              char *err, size_t errlen);

/* A failure as the API (and kubeapi) of mode answers the GET of path: a
 * Status with an error status, or no answer at all. */
static int fake_failure(const char *path, const char *key, struct dynbuf *resp, long *status,
                        char *err, size_t errlen)
{
    char msg[400];

    switch (fake.mode) {
    case FAKE_FAIL:
        return err_set(err, errlen, ERR_FAIL, "GET %s: Couldn't connect to server", path);
    case FAKE_TIMES_OUT: return err_set(err, errlen, ERR_FAIL, "GET %s: Timeout was reached", path);
    case FAKE_FORBIDDEN:
        *status = 403;
        snprintf(msg, sizeof(msg),
                 "{\"kind\":\"Status\",\"code\":403,\"message\":\"nodes \\\"%s\\\" is "
                 "forbidden: User \\\"system:serviceaccount:rdma-webhook:rdma-webhook\\\" "
                 "cannot get resource\"}",
                 key);
        return dynbuf_addstr(resp, msg);
    case FAKE_NOT_FOUND:
        *status = 404;
        return dynbuf_addstr(resp, "{\"kind\":\"Status\",\"code\":404,\"message\":\"not found\"}");
    default: return ERR_OK;
    }
}

/* Labels {"zone":"a"} for a Node, keys {"K":"a"} for a ConfigMap. */
static int fake_object(const char *path, const char *key, long timeout_ms, struct dynbuf *resp,
                       long *status, char *err, size_t errlen)
{
    int gated = fake.gate_key && strcmp(key, fake.gate_key) == 0;

    atomic_store(&fake.last_timeout_ms, timeout_ms);
    if (gated)
        gate_wait();
    if (gated && fake.gate_fails)
        return err_set(err, errlen, ERR_FAIL, "GET %s: Timeout was reached", path);
    if (!gated && fake.mode == FAKE_TIMES_OUT)
        sleep_ms(timeout_ms);
    if (!gated && fake.mode != FAKE_OK)
        return fake_failure(path, key, resp, status, err, errlen);
    *status = 200;
    return dynbuf_addstr(resp, strchr(key, '/') ? "{\"data\":{\"K\":\"a\"}}"
                                                : "{\"metadata\":{\"labels\":{\"zone\":\"a\"}}}");
}

/* Labels {"kind":"namespace"}, so that an answer from the wrong cache
 * shows; the mode and the call count are the fake's. */
static int fake_namespace(const char *path, const char *key, struct dynbuf *resp, long *status,
                          char *err, size_t errlen)
{
    if (fake.mode != FAKE_OK)
        return fake_failure(path, key, resp, status, err, errlen);
    *status = 200;
    return dynbuf_addstr(resp, "{\"metadata\":{\"labels\":{\"kind\":\"namespace\"}}}");
}

/* The ConfigMaps' answer when a test sets one (fake_configmap_big). */
static fake_answer_fn fake_configmap;

/* The fake API behind lookups_config.call: the object and its key (a
 * ConfigMap's "ns/name") from the path, as lookups asks for them. */
static int fake_call(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp,
                     long *status, char *err, size_t errlen)
{
    const char *p = req->path, *ns = "/api/v1/namespaces/", *cms;
    char key[600];

    (void)ctx;
    atomic_fetch_add(&fake.calls, 1);
    *status = 0;
    if (strcmp(req->method, "GET") != 0 || req->body || req->on_line)
        return err_set(err, errlen, ERR_FAIL, "lookups sent %s %s, not a GET", req->method, p);
    if (strncmp(p, "/api/v1/nodes/", 14) == 0)
        return fake_object(p, p + 14, req->timeout_ms, resp, status, err, errlen);
    if (strncmp(p, ns, strlen(ns)) != 0)
        return err_set(err, errlen, ERR_FAIL, "no such path %s", p);
    cms = strstr(p, "/configmaps/");
    if (!cms)
        return fake_namespace(p, p + strlen(ns), resp, status, err, errlen);
    snprintf(key, sizeof(key), "%.*s/%s", (int)(cms - p - strlen(ns)), p + strlen(ns), cms + 12);
    if (fake_configmap)
        return fake_configmap(key, req->timeout_ms, resp, status, err, errlen);
    return fake_object(p, key, req->timeout_ms, resp, status, err, errlen);
}

static struct log test_log;
static FILE *log_file;

#define FAILED_MSG "\"msg\":\"API lookup failed; admissions go on without its answer\""

static struct lookups *lk;
/* The circuit and the ConfigMaps' budget for make_lookups; setup sets a
 * circuit that does not open, for the tests of other rules. */
static struct lookups_config tweak;
static int big_keys; /* fake_configmap_big's count */

/* now_ns NULL: the real clock. Namespaces are cached for twice ttl_s. */
static void make_lookups(unsigned ttl_s, long long (*now_ns)(void))
{
    struct lookups_config cfg = {.budget_ms = BUDGET_MS,
                                 .node_ttl_s = ttl_s,
                                 .configmap_ttl_s = ttl_s,
                                 .namespace_ttl_s = 2 * ttl_s,
                                 .log_interval_s = LOG_INTERVAL_S,
                                 .call = fake_call,
                                 .circuit_failures = tweak.circuit_failures,
                                 .circuit_open_s = tweak.circuit_open_s,
                                 .configmap_bytes = tweak.configmap_bytes,
                                 .now_ns = now_ns};
    char err[ERR_LEN];

    lookups_stop(&lk);
    if (lookups_init(&lk, &test_log, &cfg, err, sizeof(err)) != ERR_OK)
        fail_msg("lookups_init: %s", err);
}

static int setup(void **state __attribute__((unused)))
{
    fake.mode = FAKE_OK;
    atomic_store(&fake.calls, 0);
    atomic_store(&fake.last_timeout_ms, 0);
    fake.gate_key = NULL;
    fake.gate_fails = 0;
    fake.gate_open = 0;
    atomic_store(&fake_now, 1000 * MONOTIME_NS_PER_S);
    tweak = (struct lookups_config){.circuit_failures = 1000000};
    fake_configmap = NULL;
    big_keys = 90000;
    log_file = tmpfile();
    if (!log_file)
        return -1;
    test_log = (struct log){.fd = fileno(log_file), .min = LOG_DEBUG};
    make_lookups(60, NULL);
    return 0;
}

static int teardown(void **state __attribute__((unused)))
{
    gate_open(); /* after a failed test, no thread stays blocked in the fake */
    lookups_stop(&lk);
    lookups_stop(&lk); /* a no-op the second time */
    fclose(log_file);
    return 0;
}

/* Node name's labels with budget_ms of budget (0: none left at all):
 * 0 with the fake's labels, 1 with other labels, -1 unknown. No cmocka
 * asserts, so that other threads can call it. */
static int node_lookup(const char *name, long budget_ms)
{
    struct lookups_request req;
    struct mutate_hooks hooks = {0};
    cJSON *labels = NULL;
    int rc;

    lookups_begin(lk, &req, &hooks);
    req.deadline_ns += (budget_ms - BUDGET_MS) * MONOTIME_NS_PER_MS;
    rc = hooks.select.node_labels(hooks.select.ctx, name, &labels);
    if (rc == 0 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(labels, "zone")), "a") != 0)
        rc = 1;
    cJSON_Delete(labels);
    return rc;
}

static int node_labels(const char *name, long budget_ms)
{
    int rc = node_lookup(name, budget_ms);

    assert_true(rc == 0 || rc == -1);
    return rc;
}

static enum mutate_envfrom configmap_has(const char *key, long budget_ms)
{
    struct lookups_request req;
    struct mutate_hooks hooks = {0};

    lookups_begin(lk, &req, &hooks);
    req.deadline_ns += (budget_ms - BUDGET_MS) * MONOTIME_NS_PER_MS;
    return hooks.configmap_has_key(hooks.ctx, "ns", "cm", key);
}

/* A node lookup on a thread of its own. */
struct worker {
    pthread_t thread;
    const char *name;
    long budget_ms;
    int rc;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    w->rc = node_lookup(w->name, w->budget_ms);
    return NULL;
}

static void worker_start(struct worker *w, const char *name, long budget_ms)
{
    w->name = name;
    w->budget_ms = budget_ms;
    w->rc = 99;
    assert_int_equal(pthread_create(&w->thread, NULL, worker_main, w), 0);
}

static int worker_join(struct worker *w)
{
    assert_int_equal(pthread_join(w->thread, NULL), 0);
    return w->rc;
}

/* Wait until the fake API has had want calls, or lookups_waits() reaches
 * want; at most WAIT_MS, else the test fails. */
static void wait_calls(int want)
{
    for (int waited = 0; atomic_load(&fake.calls) < want; waited++) {
        if (waited >= WAIT_MS)
            fail_msg("the fake API got %d calls, expected %d", atomic_load(&fake.calls), want);
        sleep_ms(1);
    }
}

static void wait_waits(unsigned long long want)
{
    for (int waited = 0; lookups_waits(lk) < want; waited++) {
        if (waited >= WAIT_MS)
            fail_msg("%llu lookups waited for another's call, expected %llu", lookups_waits(lk),
                     want);
        sleep_ms(1);
    }
}

TEST(test_answer_is_cached)
{
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 1);
    assert_true(atomic_load(&fake.last_timeout_ms) > 900 &&
                atomic_load(&fake.last_timeout_ms) <= 1000);
}

TEST(test_api_failure_is_cached_for_a_second)
{
    fake.mode = FAKE_FAIL;
    assert_int_equal(node_labels("n1", 1000), -1);
    fake.mode = FAKE_OK;
    assert_int_equal(node_labels("n1", 1000), -1); /* not asked again */
    assert_int_equal(atomic_load(&fake.calls), 1);
}

/* On the fake clock: an answer lives exactly its TTL, and a failure one
 * second; then the API is asked again. */
TEST(test_ttl_expiry)
{
    make_lookups(2, fake_clock);
    assert_int_equal(node_labels("n1", 1000), 0);
    advance_ms(1999);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 1);
    advance_ms(1);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 2);

    fake.mode = FAKE_FAIL;
    assert_int_equal(node_labels("n2", 1000), -1);
    fake.mode = FAKE_OK;
    advance_ms(999);
    assert_int_equal(node_labels("n2", 1000), -1);
    assert_int_equal(atomic_load(&fake.calls), 3);
    advance_ms(1);
    assert_int_equal(node_labels("n2", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 4);
}

/* N admissions miss the same key at once: one call, and every one of them
 * gets its answer. */
TEST(test_one_call_per_key)
{
    enum { N = 8 };
    struct worker w[N];

    fake.gate_key = "n1";
    worker_start(&w[0], "n1", 5000);
    wait_calls(1); /* w[0] is in the call */
    for (int i = 1; i < N; i++)
        worker_start(&w[i], "n1", 5000);
    wait_waits(N - 1); /* the others wait for it */
    assert_int_equal(atomic_load(&fake.calls), 1);
    gate_open();
    for (int i = 0; i < N; i++)
        assert_int_equal(worker_join(&w[i]), 0);
    assert_int_equal(atomic_load(&fake.calls), 1);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 1);
}

/* A waiter whose budget runs out first answers "unknown" and leaves the
 * call in flight alone: a later admission waits for that same call, and
 * its answer is cached. */
TEST(test_waiter_out_of_budget_caches_nothing)
{
    struct worker loader, later;

    fake.gate_key = "n1";
    worker_start(&loader, "n1", 5000);
    wait_calls(1);
    assert_int_equal(node_labels("n1", 30), -1); /* gave up after 30 ms */
    assert_int_equal(lookups_waits(lk), 1);
    worker_start(&later, "n1", 5000);
    wait_waits(2); /* no failure cached, no call of its own: it waits */
    assert_int_equal(atomic_load(&fake.calls), 1);
    gate_open();
    assert_int_equal(worker_join(&loader), 0);
    assert_int_equal(worker_join(&later), 0);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 1);
}

static void key_name(char *out, size_t outlen, int i)
{
    snprintf(out, outlen, "n%d", i);
}

/* Fills every slot but the last with n0..n(MAX-2), one fake millisecond
 * apart, so n0 expires first. */
static void fill_cache_but_one(void)
{
    char name[32];

    for (int i = 0; i < LOOKUPS_CACHE_MAX - 1; i++) {
        key_name(name, sizeof(name), i);
        assert_int_equal(node_labels(name, 1000), 0);
        advance_ms(1);
    }
    assert_int_equal(atomic_load(&fake.calls), LOOKUPS_CACHE_MAX - 1);
}

/* A full cache makes room by evicting the key that expires first. */
TEST(test_full_cache_evicts_the_first_to_expire)
{
    char last[32];
    int calls;

    make_lookups(60, fake_clock);
    fill_cache_but_one();
    key_name(last, sizeof(last), LOOKUPS_CACHE_MAX - 1);
    assert_int_equal(node_labels(last, 1000), 0); /* the last free slot */
    advance_ms(1);
    assert_int_equal(node_labels("new", 1000), 0); /* evicts n0 */
    calls = atomic_load(&fake.calls);
    assert_int_equal(calls, LOOKUPS_CACHE_MAX + 1);
    assert_int_equal(node_labels("new", 1000), 0);
    assert_int_equal(node_labels(last, 1000), 0);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), calls); /* all still cached */
    assert_int_equal(node_labels("n0", 1000), 0);      /* evicted: asked again */
    assert_int_equal(atomic_load(&fake.calls), calls + 1);
}

/* The slot being loaded (a fresh slot, so its expiry is the smallest of all)
 * is not taken for a new key: the load ends in its own slot. */
TEST(test_full_cache_never_evicts_a_load_in_flight)
{
    struct worker slow;

    make_lookups(60, fake_clock);
    fill_cache_but_one();
    fake.gate_key = "slow";
    worker_start(&slow, "slow", 5000); /* takes the last free slot */
    wait_calls(LOOKUPS_CACHE_MAX);
    assert_int_equal(node_labels("new", 1000), 0); /* evicts n0, not "slow" */
    gate_open();
    assert_int_equal(worker_join(&slow), 0);
    assert_int_equal(atomic_load(&fake.calls), LOOKUPS_CACHE_MAX + 1);
    assert_int_equal(node_labels("slow", 1000), 0);
    assert_int_equal(node_labels("new", 1000), 0);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), LOOKUPS_CACHE_MAX + 1);
    assert_int_equal(node_labels("n0", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), LOOKUPS_CACHE_MAX + 2);
}

/* An admission with 1 ms or less left used to cache a failure for the key
 * without asking, and every admission of the next second lost the lookup. */
TEST(test_no_budget_leaves_the_cache_alone)
{
    assert_int_equal(node_labels("n1", 0), -1);
    assert_int_equal(node_labels("n1", 1), -1);
    assert_int_equal(atomic_load(&fake.calls), 0);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 1);
}

/* The same for a key cached before and expired since: its slot is not
 * replaced by a failure. */
TEST(test_no_budget_keeps_an_expired_answer_for_others)
{
    make_lookups(0, NULL); /* answers expire at once */
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(node_labels("n1", 0), -1);
    assert_int_equal(atomic_load(&fake.calls), 1);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 2);
}

/* A call that the admission's budget cut short is a failure like any
 * other, cached for a second: an API that does not answer within the budget
 * would otherwise cost every admission its whole budget, one after the
 * other (issue 28). A second later the API is asked again. */
TEST(test_call_cut_by_the_budget_is_cached_for_a_second)
{
    make_lookups(60, fake_clock);
    fake.mode = FAKE_TIMES_OUT;
    assert_int_equal(node_labels("n1", 30), -1);
    assert_int_equal(atomic_load(&fake.calls), 1);
    assert_true(atomic_load(&fake.last_timeout_ms) <= 30);
    fake.mode = FAKE_OK;
    assert_int_equal(node_labels("n1", 1000), -1); /* the timeout is remembered */
    assert_int_equal(atomic_load(&fake.calls), 1);
    advance_ms(1000);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 2);
}

TEST(test_configmap_call_cut_by_the_budget_is_cached_for_a_second)
{
    make_lookups(60, fake_clock);
    fake.mode = FAKE_TIMES_OUT;
    assert_int_equal(configmap_has("K", 30), MUTATE_ENVFROM_UNKNOWN);
    fake.mode = FAKE_OK;
    assert_int_equal(configmap_has("K", 1000), MUTATE_ENVFROM_UNKNOWN);
    assert_int_equal(atomic_load(&fake.calls), 1);
    advance_ms(1000);
    assert_int_equal(configmap_has("K", 1000), MUTATE_ENVFROM_HAS);
    assert_int_equal(configmap_has("L", 1000), MUTATE_ENVFROM_LACKS);
    assert_int_equal(atomic_load(&fake.calls), 2);
}

/* The waiters of a call that fails get its failure when it ends, not at
 * their own deadlines, and the next admissions get it from the cache: one
 * call for the burst, however long the API took to fail. */
TEST(test_waiters_of_a_failed_call_get_its_failure)
{
    struct worker loader, waiter;
    long long started;

    fake.gate_key = "n1";
    fake.gate_fails = 1;
    worker_start(&loader, "n1", 5000);
    wait_calls(1);
    started = monotime_now();
    worker_start(&waiter, "n1", 5000);
    wait_waits(1);
    gate_open();
    assert_int_equal(worker_join(&loader), -1);
    assert_int_equal(worker_join(&waiter), -1);
    /* Woken by the failure, not by its 5 s deadline (a generous bound). */
    assert_true(monotime_now() - started < 4000 * MONOTIME_NS_PER_MS);
    assert_int_equal(node_labels("n1", 1000), -1);
    assert_int_equal(atomic_load(&fake.calls), 1);
}

TEST(test_configmap_api_failure_is_cached)
{
    fake.mode = FAKE_FAIL;
    assert_int_equal(configmap_has("K", 1000), MUTATE_ENVFROM_UNKNOWN);
    fake.mode = FAKE_OK;
    assert_int_equal(configmap_has("K", 1000), MUTATE_ENVFROM_UNKNOWN);
    assert_int_equal(atomic_load(&fake.calls), 1);
}

static enum mutate_envfrom configmap_value(const char *key, char *value, size_t len)
{
    struct lookups_request req;
    struct mutate_hooks hooks = {0};

    lookups_begin(lk, &req, &hooks);
    return hooks.configmap_value(hooks.ctx, "ns", "cm", key, value, len);
}

/* The same cached object answers both hooks; a value that does not fit
 * the caller's buffer is not known. */
TEST(test_configmap_value)
{
    char value[8] = "";

    assert_int_equal(configmap_value("K", value, sizeof(value)), MUTATE_ENVFROM_HAS);
    assert_string_equal(value, "a");
    assert_int_equal(configmap_value("L", value, sizeof(value)), MUTATE_ENVFROM_LACKS);
    assert_int_equal(configmap_value("K", value, 1), MUTATE_ENVFROM_UNKNOWN);
    assert_int_equal(configmap_has("K", 1000), MUTATE_ENVFROM_HAS);
    assert_int_equal(fake.calls, 1);
    fake.mode = FAKE_FAIL;
    make_lookups(60, NULL);
    assert_int_equal(configmap_value("K", value, sizeof(value)), MUTATE_ENVFROM_UNKNOWN);
}

/* Namespace name's "kind" label, or "?" when its labels are unknown. */
static const char *namespace_kind(const char *name, char *out, size_t len)
{
    struct lookups_request req;
    struct mutate_hooks hooks = {0};
    cJSON *labels = NULL;
    const char *v;

    lookups_begin(lk, &req, &hooks);
    snprintf(out, len, "?");
    if (hooks.select.namespace_labels(hooks.select.ctx, name, &labels) == 0 &&
        (v = cJSON_GetStringValue(cJSON_GetObjectItem(labels, "kind"))))
        snprintf(out, len, "%s", v);
    cJSON_Delete(labels);
    return out;
}

/* Namespaces have a cache of their own: the same name as a Node is another
 * key, answered by the namespace fetch, kept for the namespace TTL. */
TEST(test_namespace_labels_have_their_own_cache)
{
    char kind[32];

    make_lookups(10, fake_clock);
    assert_int_equal(node_labels("team-a", 1000), 0);
    assert_string_equal(namespace_kind("team-a", kind, sizeof(kind)), "namespace");
    assert_string_equal(namespace_kind("team-a", kind, sizeof(kind)), "namespace");
    assert_int_equal(atomic_load(&fake.calls), 2);
    advance_ms(15000); /* past the Node's TTL, not the Namespace's */
    assert_string_equal(namespace_kind("team-a", kind, sizeof(kind)), "namespace");
    assert_int_equal(atomic_load(&fake.calls), 2);
    advance_ms(6000);
    fake.mode = FAKE_FAIL;
    assert_string_equal(namespace_kind("team-a", kind, sizeof(kind)), "?");
    assert_int_equal(atomic_load(&fake.calls), 3);
}

static unsigned long long failures(enum lookups_kind k, enum lookups_reason r)
{
    return lookups_failures(lk, k, r);
}

/* Failures of every kind and reason, added up. */
static unsigned long long all_failures(void)
{
    unsigned long long n = 0;

    for (int k = 0; k < LOOKUPS_KINDS; k++)
        for (int r = 0; r < LOOKUPS_REASONS; r++)
            n += failures((enum lookups_kind)k, (enum lookups_reason)r);
    return n;
}

/* A 403 (issue 21: it used to look like nothing at all) is one warn line
 * with the object, the status, the API's message and the RBAC to fix, and
 * one count under kind node, reason forbidden. */
TEST(test_forbidden_is_logged_with_status_and_object)
{
    const char *log;

    make_lookups(60, fake_clock);
    fake.mode = FAKE_FORBIDDEN;
    assert_int_equal(node_labels("gpu-node-1", 1000), -1);
    log = support_log_text(log_file);
    assert_int_equal(support_count(log, FAILED_MSG), 1);
    assert_contains(log, "\"level\":\"warn\"," FAILED_MSG);
    assert_contains(log, FAILED_MSG ",\"kind\":\"Node\",\"name\":\"gpu-node-1\",\"status\":403,"
                                    "\"reason\":\"forbidden\",\"error\":\"403 Forbidden: nodes "
                                    "\\\"gpu-node-1\\\" is forbidden: User ");
    assert_contains(log, "\"hint\":\"check the webhook's RBAC: its ServiceAccount needs get on "
                         "nodes (ClusterRole rdma-webhook in manifests/rbac.yaml)\"}");
    assert_null(strstr(log, "suppressed"));
    assert_int_equal(failures(LOOKUPS_K_NODE, LOOKUPS_R_FORBIDDEN), 1);
    assert_int_equal(all_failures(), 1);
    /* The failure is cached for a second: no call, no count, no line. */
    assert_int_equal(node_labels("gpu-node-1", 1000), -1);
    assert_int_equal(atomic_load(&fake.calls), 1);
    assert_int_equal(all_failures(), 1);
    assert_int_equal(support_count(support_log_text(log_file), FAILED_MSG), 1);
}

/* Within the interval, more failures of the same kind and reason are
 * counted but not logged; another kind or reason has its own line; after the
 * interval a line comes again and says how many were left out. */
TEST(test_repeated_failures_are_suppressed_then_counted_in_the_next_line)
{
    char name[32], kind[32];
    const char *log, *last;

    make_lookups(60, fake_clock);
    fake.mode = FAKE_FORBIDDEN;
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        assert_int_equal(node_labels(name, 1000), -1);
        advance_ms(1000);
    }
    assert_int_equal(atomic_load(&fake.calls), 6);
    assert_int_equal(failures(LOOKUPS_K_NODE, LOOKUPS_R_FORBIDDEN), 6);
    log = support_log_text(log_file);
    assert_int_equal(support_count(log, FAILED_MSG), 1);
    assert_contains(log, "\"name\":\"n0\"");
    assert_null(strstr(log, "\"name\":\"n1\""));

    /* Its own line: the Namespace's RBAC is another rule to fix. */
    assert_string_equal(namespace_kind("team-a", kind, sizeof(kind)), "?");
    log = support_log_text(log_file);
    assert_int_equal(support_count(log, FAILED_MSG), 2);
    assert_contains(log, "\"kind\":\"Namespace\",\"name\":\"team-a\",\"status\":403");
    assert_contains(log, "needs get on namespaces");
    assert_int_equal(failures(LOOKUPS_K_NAMESPACE, LOOKUPS_R_FORBIDDEN), 1);

    /* 60 s after n0's line (6 s have passed): the next one is written. */
    advance_ms((LOG_INTERVAL_S - 6) * 1000 - 1);
    assert_int_equal(node_labels("n-early", 1000), -1);
    assert_int_equal(support_count(support_log_text(log_file), FAILED_MSG), 2);
    advance_ms(1);
    assert_int_equal(node_labels("n-late", 1000), -1);
    log = support_log_text(log_file);
    assert_int_equal(support_count(log, FAILED_MSG), 3);
    last = strstr(log, "\"name\":\"n-late\"");
    assert_non_null(last);
    assert_contains(last, "\"suppressed\":6}");
    assert_null(strstr(log, "\"name\":\"n-early\""));
    assert_int_equal(failures(LOOKUPS_K_NODE, LOOKUPS_R_FORBIDDEN), 8);

    /* The count started again with that line. */
    advance_ms(LOG_INTERVAL_S * 1000);
    assert_int_equal(node_labels("n-later", 1000), -1);
    last = strstr(support_log_text(log_file), "\"name\":\"n-later\"");
    assert_non_null(last);
    assert_null(strstr(last, "suppressed"));
}

/* A call that takes its whole timeout is a timeout, with the timeout in the
 * line; one that fails at once is a transport error: two reasons, two
 * lines. (The real clock: the fake fails after the time it was given.) */
TEST(test_timeout_is_a_reason_of_its_own)
{
    const char *log;

    fake.mode = FAKE_TIMES_OUT;
    assert_int_equal(node_labels("n1", 30), -1);
    assert_int_equal(failures(LOOKUPS_K_NODE, LOOKUPS_R_TIMEOUT), 1);
    assert_int_equal(failures(LOOKUPS_K_NODE, LOOKUPS_R_TRANSPORT), 0);
    log = support_log_text(log_file);
    assert_contains(log, "\"kind\":\"Node\",\"name\":\"n1\",\"reason\":\"timeout\","
                         "\"error\":\"GET /api/v1/nodes/n1: Timeout was reached\",\"timeout_ms\":");
    assert_contains(log, "raise --api-budget-ms");
    assert_null(strstr(log, "\"status\""));

    fake.mode = FAKE_FAIL;
    assert_int_equal(node_labels("n2", 1000), -1);
    assert_int_equal(failures(LOOKUPS_K_NODE, LOOKUPS_R_TRANSPORT), 1);
    assert_int_equal(failures(LOOKUPS_K_NODE, LOOKUPS_R_TIMEOUT), 1);
    log = support_log_text(log_file);
    assert_int_equal(support_count(log, FAILED_MSG), 2);
    assert_contains(log, "\"name\":\"n2\",\"reason\":\"transport\",\"error\":\"GET "
                         "/api/v1/nodes/n2: Couldn't connect to server\",\"hint\":\"the API cannot "
                         "be reached");
}

/* A ConfigMap's 404 is an answer (it declares nothing): no line, no count.
 * A Node's 404 fails the lookup, and says so. A ConfigMap's failure names
 * its namespace and name apart. */
TEST(test_not_found_and_configmap_failures)
{
    const char *log;

    fake.mode = FAKE_NOT_FOUND;
    assert_int_equal(configmap_has("K", 1000), MUTATE_ENVFROM_LACKS);
    assert_int_equal(all_failures(), 0);
    assert_int_equal(support_count(support_log_text(log_file), FAILED_MSG), 0);
    assert_int_equal(node_labels("gone", 1000), -1);
    assert_int_equal(failures(LOOKUPS_K_NODE, LOOKUPS_R_NOT_FOUND), 1);
    assert_contains(support_log_text(log_file),
                    "\"name\":\"gone\",\"status\":404,\"reason\":\"not_found\","
                    "\"error\":\"404 Not Found: not found\",\"hint\":\"no such Node");

    make_lookups(60, NULL);
    fake.mode = FAKE_FORBIDDEN;
    assert_int_equal(configmap_has("K", 1000), MUTATE_ENVFROM_UNKNOWN);
    assert_int_equal(failures(LOOKUPS_K_CONFIGMAP, LOOKUPS_R_FORBIDDEN), 1);
    log = support_log_text(log_file);
    assert_contains(log, "\"kind\":\"ConfigMap\",\"namespace\":\"ns\",\"name\":\"cm\","
                         "\"status\":403,\"reason\":\"forbidden\"");
    assert_contains(log, "needs get on configmaps");
}

/* A name no object can have asks no API: nothing is counted or cached. */
TEST(test_invalid_names_are_not_api_failures)
{
    char kind[32];

    fake.mode = FAKE_FORBIDDEN;
    assert_int_equal(node_labels("Not_A_Node", 1000), -1);
    assert_string_equal(namespace_kind("a/b", kind, sizeof(kind)), "?");
    assert_int_equal(atomic_load(&fake.calls), 0);
    assert_int_equal(all_failures(), 0);
    assert_int_equal(support_count(support_log_text(log_file), FAILED_MSG), 0);
}

/* The label values the metric and the log share. */
TEST(test_kind_and_reason_names)
{
    static const char *const reasons[LOOKUPS_REASONS] = {
        "not_authorized", "forbidden", "not_found", "throttled", "server_error",
        "timeout",        "transport", "bad_body",  "too_big",   "other"};

    assert_string_equal(lookups_kind_name(LOOKUPS_K_NODE), "node");
    assert_string_equal(lookups_kind_name(LOOKUPS_K_NAMESPACE), "namespace");
    assert_string_equal(lookups_kind_name(LOOKUPS_K_CONFIGMAP), "configmap");
    for (int r = 0; r < LOOKUPS_REASONS; r++)
        assert_string_equal(lookups_reason_name((enum lookups_reason)r), reasons[r]);
    assert_string_equal(lookups_reason_name(LOOKUPS_REASONS), "other");
}

/* ---- the circuit ------------------------------------------------------- */

static unsigned long long skipped(enum lookups_kind k)
{
    return lookups_skipped(lk, k);
}

/* Three calls in a row that cannot reach the API open the Node circuit:
 * no call for 10 s (the lookups are unknown at once, counted), one line
 * saying so. Then one probe: a failure opens it again, an answer closes it
 * (one line). Other kinds have circuits of their own. */
TEST(test_circuit_opens_after_failures_in_a_row)
{
    char kind[32];
    const char *log;

    tweak.circuit_failures = 3;
    tweak.circuit_open_s = 10;
    make_lookups(60, fake_clock);
    fake.mode = FAKE_FAIL;
    assert_int_equal(node_labels("n1", 1000), -1);
    assert_int_equal(node_labels("n2", 1000), -1);
    assert_int_equal(lookups_circuit_open(lk, LOOKUPS_K_NODE), 0);
    assert_int_equal(node_labels("n3", 1000), -1);
    assert_int_equal(atomic_load(&fake.calls), 3);
    assert_int_equal(lookups_circuit_open(lk, LOOKUPS_K_NODE), 1);
    assert_int_equal(node_labels("n4", 1000), -1);
    assert_int_equal(atomic_load(&fake.calls), 3);
    assert_int_equal(skipped(LOOKUPS_K_NODE), 1);
    log = support_log_text(log_file);
    assert_int_equal(support_count(log, "API lookups paused"), 1);
    assert_contains(log, "\"kind\":\"Node\",\"failures\":3,\"pause_s\":10");
    /* The Namespace cache still asks. */
    assert_string_equal(namespace_kind("team-a", kind, sizeof(kind)), "?");
    assert_int_equal(atomic_load(&fake.calls), 4);
    assert_int_equal(lookups_circuit_open(lk, LOOKUPS_K_NAMESPACE), 0);

    advance_ms(9999);
    assert_int_equal(node_labels("n5", 1000), -1);
    assert_int_equal(atomic_load(&fake.calls), 4);
    advance_ms(1);
    assert_int_equal(node_labels("n5", 1000), -1); /* the probe, failed */
    assert_int_equal(atomic_load(&fake.calls), 5);
    assert_int_equal(node_labels("n6", 1000), -1); /* open again */
    assert_int_equal(atomic_load(&fake.calls), 5);
    assert_int_equal(skipped(LOOKUPS_K_NODE), 3);

    advance_ms(10000);
    fake.mode = FAKE_OK;
    assert_int_equal(node_labels("n7", 1000), 0); /* the probe, answered */
    assert_int_equal(lookups_circuit_open(lk, LOOKUPS_K_NODE), 0);
    assert_int_equal(node_labels("n8", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 7);
    log = support_log_text(log_file);
    assert_int_equal(support_count(log, "API lookups paused"), 1);
    assert_int_equal(support_count(log, "API lookups resumed"), 1);
}

/* A timeout counts: an API that hangs opens the circuit like one that is
 * down. */
TEST(test_timeouts_open_the_circuit)
{
    tweak.circuit_failures = 2;
    make_lookups(60, NULL);
    fake.mode = FAKE_TIMES_OUT;
    assert_int_equal(node_labels("n1", 20), -1);
    assert_int_equal(node_labels("n2", 20), -1);
    assert_int_equal(lookups_circuit_open(lk, LOOKUPS_K_NODE), 1);
    assert_int_equal(node_labels("n3", 1000), -1);
    assert_int_equal(atomic_load(&fake.calls), 2);
    assert_int_equal(failures(LOOKUPS_K_NODE, LOOKUPS_R_TIMEOUT), 2);
}

/* A 403 or a 404 is the API answering: it never opens the circuit, and it
 * ends a run of failures. */
TEST(test_answers_do_not_open_the_circuit)
{
    char name[32];

    tweak.circuit_failures = 3;
    make_lookups(60, fake_clock);
    fake.mode = FAKE_FORBIDDEN;
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        assert_int_equal(node_labels(name, 1000), -1);
    }
    assert_int_equal(atomic_load(&fake.calls), 5);
    fake.mode = FAKE_FAIL;
    assert_int_equal(node_labels("a1", 1000), -1);
    assert_int_equal(node_labels("a2", 1000), -1);
    fake.mode = FAKE_NOT_FOUND;
    assert_int_equal(node_labels("a3", 1000), -1);
    fake.mode = FAKE_FAIL;
    assert_int_equal(node_labels("a4", 1000), -1);
    assert_int_equal(node_labels("a5", 1000), -1);
    assert_int_equal(lookups_circuit_open(lk, LOOKUPS_K_NODE), 0);
    assert_int_equal(atomic_load(&fake.calls), 10);
    assert_int_equal(skipped(LOOKUPS_K_NODE), 0);
}

/* While the probe is in flight, nobody waits for it (it may hang as long
 * as the API): the same key and others are unknown at once. */
TEST(test_nobody_waits_for_the_probe)
{
    struct worker probe;

    tweak.circuit_failures = 1;
    tweak.circuit_open_s = 10;
    make_lookups(60, fake_clock);
    fake.mode = FAKE_FAIL;
    assert_int_equal(node_labels("n1", 1000), -1);
    assert_int_equal(lookups_circuit_open(lk, LOOKUPS_K_NODE), 1);
    advance_ms(10000);
    fake.mode = FAKE_OK;
    fake.gate_key = "n1";
    worker_start(&probe, "n1", 5000);
    wait_calls(2);
    assert_int_equal(node_labels("n1", 5000), -1);
    assert_int_equal(node_labels("n2", 5000), -1);
    assert_int_equal(lookups_waits(lk), 0);
    assert_int_equal(atomic_load(&fake.calls), 2);
    gate_open();
    assert_int_equal(worker_join(&probe), 0);
    assert_int_equal(lookups_circuit_open(lk, LOOKUPS_K_NODE), 0);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(atomic_load(&fake.calls), 2);
}

/* ---- ConfigMaps: the keys kept, the budget ----------------------------- */

/* A tenant's ConfigMap: big_keys keys JUNK000000.. and a few the shipped
 * profiles may ask for, one with a value too long to keep. */

static int fake_configmap_big(const char *key, long timeout_ms, struct dynbuf *resp, long *status,
                              char *err, size_t errlen)
{
    char long_value[101];

    (void)key, (void)timeout_ms, (void)err, (void)errlen;
    *status = 200;
    memset(long_value, '7', 100);
    long_value[100] = '\0';
    assert_int_equal(dynbuf_addstr(resp, "{\"data\":{"), ERR_OK);
    for (int i = 0; i < big_keys; i++)
        assert_int_equal(dynbuf_printf(resp, "\"JUNK%06d\":\"some value\",", i), ERR_OK);
    assert_int_equal(dynbuf_printf(resp,
                                   "\"NCCL_IB_HCA\":\"=mlx5_0\",\"IB_HCA\":\"=mlx5_1\","
                                   "\"NCCL_IB_DISABLE\":\"1\",\"NCCL_IB_TIMEOUT\":\"%s\"}}",
                                   long_value),
                     ERR_OK);
    return ERR_OK;
}

/* ConfigMap ns/name's answer for key under ps (NULL: none) of generation
 * gen; with value, its value. */
static enum mutate_envfrom cm_read(const char *name, const char *key, const struct profiles *ps,
                                   unsigned long gen, char *value, size_t len)
{
    struct lookups_request req;
    struct mutate_hooks hooks = {0};

    lookups_begin(lk, &req, &hooks);
    lookups_use_profiles(&req, ps, gen);
    return value ? hooks.configmap_value(hooks.ctx, "ns", name, key, value, len)
                 : hooks.configmap_has_key(hooks.ctx, "ns", name, key);
}

/* Of 90,000 keys only those the profiles may ask for are kept (a name of
 * theirs or its end, for a source with a prefix), in a few hundred bytes;
 * a key no profile sets is never asked for. Another generation of the
 * profiles asks again; without profiles every key is kept. */
TEST(test_configmap_keeps_the_keys_profiles_ask_for)
{
    struct profiles *ps = load_shipped_profiles();
    char value[16] = "";

    assert_non_null(ps);
    fake_configmap = fake_configmap_big;
    make_lookups(60, NULL);
    assert_int_equal(cm_read("cm", "NCCL_IB_HCA", ps, 1, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(cm_read("cm", "IB_HCA", ps, 1, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(cm_read("cm", "NCCL_IB_DISABLE", ps, 1, value, sizeof(value)),
                     MUTATE_ENVFROM_HAS);
    assert_string_equal(value, "1");
    assert_int_equal(cm_read("cm", "NCCL_IB_TIMEOUT", ps, 1, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(cm_read("cm", "NCCL_IB_TIMEOUT", ps, 1, value, sizeof(value)),
                     MUTATE_ENVFROM_UNKNOWN); /* too long to keep */
    assert_int_equal(cm_read("cm", "NCCL_SOCKET_IFNAME", ps, 1, NULL, 0), MUTATE_ENVFROM_LACKS);
    assert_int_equal(atomic_load(&fake.calls), 1);
    assert_true(lookups_configmap_bytes(lk) < 1024);

    assert_int_equal(cm_read("cm", "NCCL_IB_HCA", ps, 2, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(atomic_load(&fake.calls), 2);
    assert_int_equal(cm_read("cm", "JUNK000042", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(atomic_load(&fake.calls), 3);
    assert_true(lookups_configmap_bytes(lk) > 90000u * 10);
    profiles_free(ps);
}

/* The ConfigMaps' kept keys stay within the budget: a new one makes room by
 * freeing the one that expires first; one alone over the budget is not
 * kept, a failure of its own (too_big). */
TEST(test_configmap_budget_evicts_the_first_to_expire)
{
    size_t one;

    big_keys = 100;
    fake_configmap = fake_configmap_big;
    make_lookups(60, fake_clock);
    assert_int_equal(cm_read("a", "JUNK000001", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    one = lookups_configmap_bytes(lk);
    tweak.configmap_bytes = one * 5 / 2;
    make_lookups(60, fake_clock);
    assert_int_equal(cm_read("a", "JUNK000001", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    advance_ms(1);
    assert_int_equal(cm_read("b", "JUNK000001", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    advance_ms(1);
    assert_int_equal(cm_read("c", "JUNK000001", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(lookups_configmap_bytes(lk), 2 * one);
    assert_int_equal(atomic_load(&fake.calls), 4);
    assert_int_equal(cm_read("b", "JUNK000002", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(cm_read("c", "JUNK000002", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(atomic_load(&fake.calls), 4);
    assert_int_equal(cm_read("a", "JUNK000002", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(atomic_load(&fake.calls), 5); /* a was freed */

    tweak.configmap_bytes = one / 2;
    make_lookups(60, fake_clock);
    assert_int_equal(cm_read("a", "JUNK000001", NULL, 0, NULL, 0), MUTATE_ENVFROM_UNKNOWN);
    assert_int_equal(failures(LOOKUPS_K_CONFIGMAP, LOOKUPS_R_TOO_BIG), 1);
    assert_int_equal(lookups_configmap_bytes(lk), 0);
    assert_contains(support_log_text(log_file), "over the");
}

/* An expired ConfigMap is freed at the next miss, not when its slot is
 * taken again. */
TEST(test_expired_configmaps_are_freed)
{
    size_t one;

    big_keys = 100;
    fake_configmap = fake_configmap_big;
    make_lookups(2, fake_clock);
    assert_int_equal(cm_read("a", "JUNK000001", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    one = lookups_configmap_bytes(lk);
    assert_int_equal(cm_read("b", "JUNK000001", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(lookups_configmap_bytes(lk), 2 * one);
    advance_ms(2000);
    assert_int_equal(cm_read("c", "JUNK000001", NULL, 0, NULL, 0), MUTATE_ENVFROM_HAS);
    assert_int_equal(lookups_configmap_bytes(lk), one);
}

int main(void)
{
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_answer_is_cached),
        T_(test_api_failure_is_cached_for_a_second),
        T_(test_ttl_expiry),
        T_(test_one_call_per_key),
        T_(test_waiter_out_of_budget_caches_nothing),
        T_(test_full_cache_evicts_the_first_to_expire),
        T_(test_full_cache_never_evicts_a_load_in_flight),
        T_(test_no_budget_leaves_the_cache_alone),
        T_(test_no_budget_keeps_an_expired_answer_for_others),
        T_(test_call_cut_by_the_budget_is_cached_for_a_second),
        T_(test_configmap_call_cut_by_the_budget_is_cached_for_a_second),
        T_(test_waiters_of_a_failed_call_get_its_failure),
        T_(test_configmap_api_failure_is_cached),
        T_(test_configmap_value),
        T_(test_namespace_labels_have_their_own_cache),
        T_(test_forbidden_is_logged_with_status_and_object),
        T_(test_repeated_failures_are_suppressed_then_counted_in_the_next_line),
        T_(test_timeout_is_a_reason_of_its_own),
        T_(test_not_found_and_configmap_failures),
        T_(test_invalid_names_are_not_api_failures),
        T_(test_kind_and_reason_names),
        T_(test_circuit_opens_after_failures_in_a_row),
        T_(test_timeouts_open_the_circuit),
        T_(test_answers_do_not_open_the_circuit),
        T_(test_nobody_waits_for_the_probe),
        T_(test_configmap_keeps_the_keys_profiles_ask_for),
        T_(test_configmap_budget_evicts_the_first_to_expire),
        T_(test_expired_configmaps_are_freed),
    };
#undef T_

    return cmocka_run_group_tests(tests, NULL, NULL);
}
