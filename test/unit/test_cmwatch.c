/*
 * Unit tests for webhook/kube/cmwatch.c through a fake API (cmwatch_config.call):
 * the list publishes the ConfigMap's key and the watch starts from the
 * list's resourceVersion; a MODIFIED event publishes the new text; a 410
 * Gone, as a status or as an ERROR event, is answered by a fresh list; a
 * stream cut in the middle resumes watching from the last complete event,
 * not from a list; a 401 (a token the API no longer takes: a rotation the
 * webhook has not read yet) is retried, the next call made anew, and serving
 * goes on. The fake plays a script of answers, one per call, and then holds
 * the next call until the watch is stopped, as a quiet API does.
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

#include "kube/cmwatch.h"
#include "base/dynbuf.h"
#include "base/err.h"
#include "kube/kubeapi.h"
#include "host/log.h"
#include "host/monotime.h"
#include "admission/profiles.h"
#include "host/store.h"

#define WAIT_MS   10000 /* the most a test waits for the watch to get somewhere */
#define MAX_STEPS 8
#define MAX_LINES 4
#define KEY       "profiles.json"
#define ONE       "{\"profiles\":[{\"name\":\"a\"}]}"
#define TWO       "{\"profiles\":[{\"name\":\"b\"}]}"

/* How a scripted answer ends. */
enum step_end {
    END_OK,  /* the exchange happened: status and body (a list, an error status) */
    END_CUT, /* a watch's lines, then the connection breaks: no status */
};

struct step {
    int watch; /* the call must be a watch (on_line set), else a list */
    long status;
    char *body;             /* a list's or an error's body; owned */
    char *lines[MAX_LINES]; /* a watch's events; owned */
    enum step_end end;
};

/* The fake API, called on the watch's thread: no cmocka asserts there; a
 * call that is not the one the script expects is recorded in wrong. */
static struct {
    pthread_mutex_t mu;
    struct step steps[MAX_STEPS];
    int n_steps;
    int calls;
    char paths[MAX_STEPS + 1][700];
    char wrong[256];
} fake = {.mu = PTHREAD_MUTEX_INITIALIZER};

static struct log test_log;
static FILE *log_file;
static struct store *store;
static struct cmwatch *w;

/* A ConfigMap ns/cm at resourceVersion rv whose key holds text. */
static cJSON *configmap(const char *rv, const char *text)
{
    cJSON *cm = cJSON_CreateObject(), *meta, *data;

    assert_non_null(cm);
    assert_non_null(meta = cJSON_AddObjectToObject(cm, "metadata"));
    assert_non_null(cJSON_AddStringToObject(meta, "namespace", "ns"));
    assert_non_null(cJSON_AddStringToObject(meta, "name", "cm"));
    assert_non_null(cJSON_AddStringToObject(meta, "resourceVersion", rv));
    assert_non_null(data = cJSON_AddObjectToObject(cm, "data"));
    assert_non_null(cJSON_AddStringToObject(data, KEY, text));
    return cm;
}

static char *printed(cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);

    assert_non_null(s);
    cJSON_Delete(j);
    return s;
}

static struct step *next_step(void)
{
    assert_true(fake.n_steps < MAX_STEPS);
    return &fake.steps[fake.n_steps++];
}

/* A list answering 200 with the ConfigMap (text NULL: no items) at rv. */
static void script_list(const char *rv, const char *text)
{
    struct step *s = next_step();
    cJSON *l = cJSON_CreateObject(), *items, *meta;

    assert_non_null(l);
    assert_non_null(meta = cJSON_AddObjectToObject(l, "metadata"));
    assert_non_null(cJSON_AddStringToObject(meta, "resourceVersion", rv));
    assert_non_null(items = cJSON_AddArrayToObject(l, "items"));
    if (text)
        assert_true(cJSON_AddItemToArray(items, configmap(rv, text)));
    *s = (struct step){.status = 200, .body = printed(l)};
}

/* A call (a watch when watch is set) answered with an error status and a
 * Status body of that code. */
static void script_status(int watch, long status)
{
    struct step *s = next_step();
    char body[160];

    snprintf(body, sizeof(body), "{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":%ld}",
             status);
    *s = (struct step){.watch = watch, .status = status, .body = strdup(body)};
    assert_non_null(s->body);
}

/* A watch of 200 that sends the events (each "TYPE:rv:text", text the
 * ConfigMap's key; an ERROR's "ERROR:410") and then ends as end says. */
static void script_watch(enum step_end end, const char *events[])
{
    struct step *s = next_step();

    *s = (struct step){.watch = 1, .status = 200, .end = end};
    for (int i = 0; events[i]; i++) {
        char type[16], rv[16];
        const char *text = NULL;
        cJSON *e = cJSON_CreateObject(), *st;

        assert_true(i < MAX_LINES);
        assert_int_equal(sscanf(events[i], "%15[^:]:%15[^:]", type, rv), 2);
        text = strchr(strchr(events[i], ':') + 1, ':');
        assert_non_null(e);
        assert_non_null(cJSON_AddStringToObject(e, "type", type));
        if (strcmp(type, "ERROR") == 0) {
            assert_non_null(st = cJSON_AddObjectToObject(e, "object"));
            assert_non_null(cJSON_AddStringToObject(st, "kind", "Status"));
            assert_non_null(cJSON_AddNumberToObject(st, "code", atoi(rv)));
        } else {
            assert_non_null(text);
            assert_true(cJSON_AddItemToObject(e, "object", configmap(rv, text + 1)));
        }
        s->lines[i] = printed(e);
    }
}

/* What the scripted step answers. */
static int fake_play(const struct step *s, const struct kubeapi_request *req, struct dynbuf *resp,
                     long *status, char *err, size_t errlen)
{
    if (s->watch && s->status == 200) {
        for (int i = 0; i < MAX_LINES && s->lines[i]; i++)
            if (req->on_line(req->line_ctx, s->lines[i], strlen(s->lines[i])))
                return err_set(err, errlen, ERR_FAIL, "watch: the event handler ended the stream");
        if (s->end == END_CUT)
            return err_set(err, errlen, ERR_FAIL,
                           "watch: transfer closed with outstanding read data remaining");
    } else if (s->body && dynbuf_addstr(resp, s->body) != ERR_OK) {
        return err_set(err, errlen, ERR_TOO_BIG, "the fake's body is over the cap");
    }
    *status = s->status;
    return ERR_OK;
}

/* Past the script: a quiet API, which holds the call until it is stopped. */
static int fake_hold(const struct kubeapi_request *req, char *err, size_t errlen)
{
    struct timespec tick = {0, 5 * 1000000L};

    while (!atomic_load(req->stop))
        nanosleep(&tick, NULL);
    return err_set(err, errlen, ERR_FAIL, "%s %s: stopped", req->method, req->path);
}

static int fake_call(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp,
                     long *status, char *err, size_t errlen)
{
    struct step s;
    int i;

    (void)ctx;
    pthread_mutex_lock(&fake.mu);
    i = fake.calls++;
    if (i <= MAX_STEPS)
        snprintf(fake.paths[i], sizeof(fake.paths[i]), "%s", req->path);
    if (strcmp(req->method, "GET") != 0 || !req->stop)
        snprintf(fake.wrong, sizeof(fake.wrong), "call %d: %s without a stop", i, req->method);
    if (i < fake.n_steps && !fake.steps[i].watch != !req->on_line)
        snprintf(fake.wrong, sizeof(fake.wrong), "call %d: a %s where the script has a %s", i,
                 req->on_line ? "watch" : "list", fake.steps[i].watch ? "watch" : "list");
    s = i < fake.n_steps ? fake.steps[i] : (struct step){0};
    pthread_mutex_unlock(&fake.mu);
    if (i >= fake.n_steps)
        return fake_hold(req, err, errlen);
    return fake_play(&s, req, resp, status, err, errlen);
}

static int calls(void)
{
    int n;

    pthread_mutex_lock(&fake.mu);
    n = fake.calls;
    pthread_mutex_unlock(&fake.mu);
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&t, NULL);
}

/* Waits until the fake has taken n calls (the last one held: the script is
 * played); fails the test after WAIT_MS. */
static void wait_calls(int n)
{
    long long until = monotime_now() + WAIT_MS * MONOTIME_NS_PER_MS;

    while (calls() < n) {
        if (monotime_now() > until)
            fail_msg("waited %d ms for %d calls, the fake API has %d", WAIT_MS, n, calls());
        sleep_ms(2);
    }
    assert_string_equal(fake.wrong, "");
}

/* 1 when profile name is in the version serving. */
static int serving(const char *name)
{
    struct store_snapshot *snap = store_acquire(store);
    int found = snap && profiles_find(snap->ps, name) != NULL;

    store_release(snap);
    return found;
}

static void start(void)
{
    struct cmwatch_config cfg = {.call = fake_call,
                                 .store = store,
                                 .log = &test_log,
                                 .ns_name = "ns/cm",
                                 .key = KEY,
                                 .watch_timeout_s = 300};
    char err[ERR_LEN] = "";

    assert_int_equal(cmwatch_init(&w, &cfg, err, sizeof(err)), ERR_OK);
}

static int setup(void **state __attribute__((unused)))
{
    memset(fake.steps, 0, sizeof(fake.steps));
    fake.n_steps = 0;
    fake.calls = 0;
    fake.wrong[0] = '\0';
    log_file = tmpfile();
    if (!log_file)
        return -1;
    test_log = (struct log){.fd = fileno(log_file), .min = LOG_DEBUG};
    return store_init(&store, &test_log, NULL, 0) == ERR_OK ? 0 : -1;
}

static int teardown(void **state __attribute__((unused)))
{
    cmwatch_stop(&w);
    cmwatch_stop(&w); /* a no-op the second time */
    store_stop(&store);
    for (int i = 0; i < MAX_STEPS; i++) {
        free(fake.steps[i].body);
        for (int j = 0; j < MAX_LINES; j++)
            free(fake.steps[i].lines[j]);
    }
    fclose(log_file);
    return 0;
}

/* The list's version serves, and the watch starts from the list's
 * resourceVersion; a MODIFIED event serves its text at once. */
TEST(test_list_serves_and_the_watch_follows)
{
    script_list("10", ONE);
    script_watch(END_OK, (const char *[]){"MODIFIED:11:" TWO, NULL});
    start();
    wait_calls(3); /* list, watch, the watch again from 11, held */
    assert_true(serving("b"));
    assert_false(serving("a"));
    assert_int_equal(store_loaded(store), 2);
    assert_contains(fake.paths[0], "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name");
    assert_null(strstr(fake.paths[0], "watch=1"));
    assert_contains(fake.paths[1], "watch=1");
    assert_contains(fake.paths[1], "&resourceVersion=10&");
    assert_contains(fake.paths[2], "&resourceVersion=11&");
}

/* 410 Gone, as the watch's status and as an ERROR event in a 200 stream:
 * each is answered by a fresh list, whose resourceVersion the next watch
 * starts from. */
TEST(test_gone_relists)
{
    script_list("10", ONE);
    script_status(1, 410);
    script_list("20", ONE);
    script_watch(END_OK, (const char *[]){"ERROR:410", NULL});
    script_list("30", TWO);
    start();
    wait_calls(6);
    assert_contains(fake.paths[3], "&resourceVersion=20&");
    assert_contains(fake.paths[5], "&resourceVersion=30&");
    assert_true(serving("b"));
    /* The list of the same text did not publish it again. */
    assert_int_equal(store_loaded(store), 2);
}

/* A stream cut after an event: the event served, and the watch resumes
 * from it (a watch, not a list), after a pause logged as a reconnect. */
TEST(test_cut_stream_resumes_from_the_last_event)
{
    script_list("10", ONE);
    script_watch(END_CUT, (const char *[]){"MODIFIED:11:" TWO, NULL});
    start();
    wait_calls(3);
    assert_contains(fake.paths[2], "watch=1");
    assert_contains(fake.paths[2], "&resourceVersion=11&");
    assert_true(serving("b"));
    assert_contains(support_log_text(log_file), "profiles watch ended; reconnecting");
    assert_contains(support_log_text(log_file), "outstanding read data");
}

/* A 401 to the list and then to a watch (a rotated token the API no longer
 * takes from this process yet): logged, retried after a pause, each retry
 * a new call (where kubeapi reads the token file again); the version
 * listed keeps serving through the watch's 401. */
TEST(test_unauthorized_is_retried)
{
    script_status(0, 401);
    script_list("10", ONE);
    script_status(1, 401);
    script_watch(END_OK, (const char *[]){"MODIFIED:12:" TWO, NULL});
    start();
    wait_calls(5);
    assert_contains(support_log_text(log_file), "HTTP 401 listing configmap ns/cm");
    assert_contains(support_log_text(log_file), "HTTP 401 watching configmap ns/cm");
    /* After the watch's 401, the watch again from the list's version. */
    assert_contains(fake.paths[3], "watch=1");
    assert_contains(fake.paths[3], "&resourceVersion=10&");
    assert_true(serving("b"));
    assert_int_equal(store_loaded(store), 2);
}

/* A DELETED ConfigMap leaves the version serving, stale. */
TEST(test_deleted_keeps_serving_stale)
{
    script_list("10", ONE);
    script_watch(END_OK, (const char *[]){"DELETED:11:" ONE, NULL});
    start();
    wait_calls(3);
    assert_true(serving("a"));
    assert_true(store_stale(store));
    assert_contains(support_log_text(log_file), "profiles ConfigMap deleted");
}

/* No call, or a bad name: no thread, *out NULL, a message naming what. */
TEST(test_init_refuses_without_a_call_or_with_a_bad_name)
{
    struct cmwatch_config cfg = {
        .store = store, .log = &test_log, .ns_name = "ns/cm", .key = KEY, .watch_timeout_s = 1};
    char err[ERR_LEN] = "";

    w = (struct cmwatch *)&cfg;
    assert_int_equal(cmwatch_init(&w, &cfg, err, sizeof(err)), ERR_FAIL);
    assert_null(w);
    assert_contains(err, "no API");
    cfg.call = fake_call;
    cfg.ns_name = "cm";
    assert_int_equal(cmwatch_init(&w, &cfg, err, sizeof(err)), ERR_FAIL);
    assert_null(w);
    assert_contains(err, "--profiles-configmap takes NAMESPACE/NAME");
    assert_int_equal(calls(), 0);
}

int main(void)
{
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_list_serves_and_the_watch_follows),
        T_(test_gone_relists),
        T_(test_cut_stream_resumes_from_the_last_event),
        T_(test_unauthorized_is_retried),
        T_(test_deleted_keeps_serving_stale),
        T_(test_init_refuses_without_a_call_or_with_a_bad_name),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
