/*
 * Unit tests for webhook/kube/lastgood.c, with a fake API behind
 * lastgood_config.call that keeps one ConfigMap (the copy) as the apiserver
 * does: a GET answers it or 404, a POST creates it (409 when it exists), a
 * PUT replaces it when its resourceVersion is the stored one (409 when
 * not, 404 when there is none). Checked: the copy's body (names, the
 * resourceVersion only for an update, the annotations, no label that sends
 * it to /validate-profiles, the text escaped and whole); an offer is created,
 * a different one updated with the copy's resourceVersion, the same one not
 * written; a lost race (409) reads again and finds the version there; a
 * failed write is counted and tried again until it works; a fallback
 * publishes a valid copy as stale with the copy's time, and leaves the store
 * alone for a missing or invalid one; the error line repeats while stale and
 * stops once a version from the source serves.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "kube/lastgood.h"
#include "host/log.h"
#include "admission/profiles.h"
#include "host/store.h"

#define T_PATH "/api/v1/namespaces/ns/configmaps/cm-last-good"
#define T_COLL "/api/v1/namespaces/ns/configmaps"

struct fake {
    pthread_mutex_t mu;
    char *copy; /* the stored ConfigMap's JSON; NULL: none */
    long rv;
    int fail_writes; /* answer writes with this status */
    int race;        /* the next write loses to the same body written first */
    int gets, posts, puts;
    char last_put_rv[32];
};

struct fixture {
    struct log lg;
    struct store *s;
    struct lastgood *lg_;
    struct fake api;
    char path[64];
};

/* The stored object: the body with a fresh resourceVersion. */
static void fake_store(struct fake *f, const char *body)
{
    cJSON *o = cJSON_Parse(body);
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    char rv[32];

    snprintf(rv, sizeof(rv), "%ld", ++f->rv);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    cJSON_AddStringToObject(meta, "resourceVersion", rv);
    free(f->copy);
    f->copy = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
}

static long fake_write(struct fake *f, const char *method, const char *path, const char *body)
{
    cJSON *o = cJSON_Parse(body);
    const char *rv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "metadata"), "resourceVersion"));
    int post = strcmp(method, "POST") == 0;
    char have[32];
    long st;

    assert_non_null(o);
    assert_string_equal(path, post ? T_COLL : T_PATH);
    if (post)
        f->posts++;
    else
        f->puts++;
    if (!post)
        snprintf(f->last_put_rv, sizeof(f->last_put_rv), "%s", rv ? rv : "");
    if (f->race) {
        f->race--;
        fake_store(f, body);
    }
    snprintf(have, sizeof(have), "%ld", f->rv);
    if (f->fail_writes)
        st = f->fail_writes;
    else if (post && rv)
        st = 400;
    else if (post && f->copy)
        st = 409;
    else if (!post && !f->copy)
        st = 404;
    else if (!post && (!rv || strcmp(rv, have) != 0))
        st = 409;
    else {
        fake_store(f, body);
        st = post ? 201 : 200;
    }
    cJSON_Delete(o);
    return st;
}

static int fake_send(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp,
                     long *status, char *err, size_t errlen)
{
    struct fake *f = ctx;
    const char *method = req->method, *path = req->path, *body = req->body;

    (void)err, (void)errlen;
    pthread_mutex_lock(&f->mu);
    if (strcmp(method, "GET") == 0) {
        assert_string_equal(path, T_PATH);
        f->gets++;
        *status = f->copy ? 200 : 404;
        dynbuf_addstr(resp, f->copy ? f->copy : "{\"kind\":\"Status\",\"code\":404}");
    } else {
        *status = fake_write(f, method, path, body);
        dynbuf_addstr(resp, "{}");
    }
    pthread_mutex_unlock(&f->mu);
    return ERR_OK;
}

static int start(struct fixture *fx, unsigned interval_ms)
{
    struct lastgood_config c = {.fix = "ConfigMap ns/cm",
                                .ns = "ns",
                                .name = "cm",
                                .key = "profiles.json",
                                .copy = "cm-last-good",
                                .interval_ms = interval_ms,
                                .retry_max_ms = 40,
                                .call = fake_send,
                                .call_ctx = &fx->api};

    return lastgood_init(&fx->lg_, fx->s, &fx->lg, &c, NULL, 0);
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));

    if (!fx)
        return -1;
    pthread_mutex_init(&fx->api.mu, NULL);
    fx->api.rv = 100;
    snprintf(fx->path, sizeof(fx->path), "/tmp/test_lastgood.XXXXXX");
    fx->lg.fd = mkstemp(fx->path);
    fx->lg.min = LOG_DEBUG;
    if (fx->lg.fd < 0 || store_init(&fx->s, &fx->lg, NULL, 0) != ERR_OK ||
        start(fx, 60000) != ERR_OK)
        return -1;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    lastgood_stop(&fx->lg_);
    lastgood_stop(&fx->lg_); /* a no-op the second time */
    store_stop(&fx->s);
    close(fx->lg.fd);
    unlink(fx->path);
    free(fx->api.copy);
    pthread_mutex_destroy(&fx->api.mu);
    free(fx);
    return 0;
}

/* Everything logged so far. */
static const char *logged(struct fixture *fx)
{
    return support_fd_text(fx->lg.fd);
}

static void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Waits up to 3 s for counts[which] to reach n. */
static void wait_count(struct fixture *fx, enum lastgood_count which, unsigned long long n)
{
    unsigned long long c[LASTGOOD_COUNTS];

    for (int i = 0; i < 300; i++) {
        lastgood_counts(fx->lg_, c);
        if (c[which] >= n)
            return;
        nap(10);
    }
    fail_msg("count %d did not reach %llu (%llu)", which, n, c[which]);
}

/* The copy's data["profiles.json"], as stored by the fake. */
static char *copy_text(struct fixture *fx)
{
    cJSON *o;
    char *t;

    pthread_mutex_lock(&fx->api.mu);
    o = cJSON_Parse(fx->api.copy ? fx->api.copy : "{}");
    pthread_mutex_unlock(&fx->api.mu);
    t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "data"), "profiles.json"));
    t = t ? strdup(t) : NULL;
    cJSON_Delete(o);
    return t;
}

#define ONE "{\"profiles\":[{\"name\":\"a\"}]}"
#define TWO "{\"profiles\":[{\"name\":\"b\"}]}"

TEST(test_body_is_the_copy)
{
    struct dynbuf b;
    const char text[] = "{\"x\": \"a\\\"b\"\n}";
    cJSON *o, *meta, *ann, *labels;

    dynbuf_init(&b, 1 << 16);
    assert_int_equal(lastgood_body(&b, "ns", "cm-last-good", "ns/cm", "profiles.json", text,
                                   strlen(text), "42", 1764618848, NULL),
                     ERR_OK);
    o = cJSON_Parse(dynbuf_ptr(&b));
    assert_non_null(o);
    meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
    labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "kind")),
                        "ConfigMap");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name")),
                        "cm-last-good");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "namespace")),
                        "ns");
    assert_null(cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
    assert_null(cJSON_GetObjectItemCaseSensitive(labels, "rdma-webhook.io/profiles"));
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, LASTGOOD_ANN_SOURCE)), "ns/cm");
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, LASTGOOD_ANN_SOURCE_RV)), "42");
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, LASTGOOD_ANN_LOADED_AT)),
        "2025-12-01T19:54:08Z");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(o, "data"), "profiles.json")),
                        text);
    cJSON_Delete(o);
    dynbuf_reset(&b);
    assert_int_equal(lastgood_body(&b, "ns", "c", "ns/cm", "k", "t", 1, NULL, 0, "77"), ERR_OK);
    assert_contains(dynbuf_ptr(&b), "\"resourceVersion\":\"77\"");
    dynbuf_free(&b);
}

TEST(test_time_round_trip)
{
    char out[32];

    lastgood_format_time(1764618848, out, sizeof(out));
    assert_string_equal(out, "2025-12-01T19:54:08Z");
    assert_int_equal(lastgood_parse_time(out), 1764618848);
    assert_int_equal(lastgood_parse_time("2025-12-01T19:54:08"), -1);
    assert_int_equal(lastgood_parse_time("2025-12-01T19:54:08Zx"), -1);
    assert_int_equal(lastgood_parse_time(NULL), -1);
}

TEST(test_created_then_updated_then_unchanged)
{
    struct fixture *fx = *state;
    char *t;

    lastgood_offer(fx->lg_, ONE, strlen(ONE), "5", 1000);
    wait_count(fx, LASTGOOD_WRITTEN, 1);
    assert_int_equal(fx->api.posts, 1);
    t = copy_text(fx);
    assert_string_equal(t, ONE);
    free(t);
    lastgood_offer(fx->lg_, TWO, strlen(TWO), "6", 2000);
    wait_count(fx, LASTGOOD_WRITTEN, 2);
    assert_int_equal(fx->api.puts, 1);
    assert_string_equal(fx->api.last_put_rv, "101"); /* the copy's, from its GET */
    t = copy_text(fx);
    assert_string_equal(t, TWO);
    free(t);
    lastgood_offer(fx->lg_, TWO, strlen(TWO), "7", 3000);
    wait_count(fx, LASTGOOD_UNCHANGED, 1);
    assert_int_equal(fx->api.posts + fx->api.puts, 2);
}

TEST(test_lost_races_read_again)
{
    struct fixture *fx = *state;
    unsigned long long c[LASTGOOD_COUNTS];

    fx->api.race = 1; /* the create */
    lastgood_offer(fx->lg_, ONE, strlen(ONE), "5", 1000);
    wait_count(fx, LASTGOOD_UNCHANGED, 1);
    fx->api.race = 1; /* the update */
    lastgood_offer(fx->lg_, TWO, strlen(TWO), "6", 1000);
    wait_count(fx, LASTGOOD_UNCHANGED, 2);
    lastgood_counts(fx->lg_, c);
    assert_int_equal(c[LASTGOOD_WRITTEN], 0);
    assert_int_equal(c[LASTGOOD_FAILED], 0);
    assert_int_equal(fx->api.posts, 1);
    assert_int_equal(fx->api.puts, 1);
}

TEST(test_failed_write_is_counted_and_tried_again)
{
    struct fixture *fx = *state;
    char *t;

    pthread_mutex_lock(&fx->api.mu);
    fx->api.fail_writes = 403;
    pthread_mutex_unlock(&fx->api.mu);
    lastgood_offer(fx->lg_, ONE, strlen(ONE), "5", 1000);
    wait_count(fx, LASTGOOD_FAILED, 2);
    assert_contains(logged(fx), "cannot save the last good profiles");
    assert_contains(logged(fx), "RBAC");
    pthread_mutex_lock(&fx->api.mu);
    fx->api.fail_writes = 0;
    pthread_mutex_unlock(&fx->api.mu);
    wait_count(fx, LASTGOOD_WRITTEN, 1);
    t = copy_text(fx);
    assert_string_equal(t, ONE);
    free(t);
}

TEST(test_fall_back_to_a_valid_copy)
{
    struct fixture *fx = *state;
    struct store_snapshot *snap;
    struct dynbuf b;

    /* None: not ready. */
    assert_int_equal(lastgood_fall_back(fx->lg_, NULL), ERR_FAIL);
    assert_false(store_ready(fx->s));
    assert_contains(logged(fx), "no last good profiles to fall back to");
    /* Invalid (edited by hand): not ready. */
    dynbuf_init(&b, 1 << 16);
    assert_int_equal(lastgood_body(&b, "ns", "cm-last-good", "ns/cm", "profiles.json", "{", 1, "5",
                                   1764618848, NULL),
                     ERR_OK);
    fake_store(&fx->api, dynbuf_ptr(&b));
    assert_int_equal(lastgood_fall_back(fx->lg_, NULL), ERR_FAIL);
    assert_false(store_ready(fx->s));
    assert_contains(logged(fx), "not valid either");
    dynbuf_reset(&b);
    assert_int_equal(lastgood_body(&b, "ns", "cm-last-good", "ns/cm", "profiles.json", ONE,
                                   strlen(ONE), "5", 1764618848, NULL),
                     ERR_OK);
    fake_store(&fx->api, dynbuf_ptr(&b));
    dynbuf_free(&b);
    assert_int_equal(lastgood_fall_back(fx->lg_, NULL), ERR_OK);
    assert_true(store_ready(fx->s));
    assert_true(store_stale(fx->s));
    snap = store_acquire(fx->s);
    assert_int_equal(snap->loaded_at, 1764618848);
    assert_string_equal(snap->ps->p[0].name, "a");
    store_release(snap);
}

TEST(test_stale_line_repeats_until_fresh)
{
    struct fixture *fx = *state;
    size_t n;

    lastgood_stop(&fx->lg_);
    assert_int_equal(start(fx, 50), ERR_OK);
    assert_int_equal(store_publish(fx->s, ONE, strlen(ONE), "src"), ERR_OK);
    assert_int_equal(store_publish(fx->s, "{", 1, "src"), ERR_FAIL);
    for (int i = 0; i < 300 && support_count(logged(fx), "\"msg\":\"serving old profiles") < 3; i++)
        nap(10);
    assert_true(support_count(logged(fx), "\"msg\":\"serving old profiles") >= 3);
    assert_contains(logged(fx), "\"level\":\"error\",\"msg\":\"serving old profiles");
    assert_contains(logged(fx), "\"fix\":\"ConfigMap ns/cm\"");
    assert_int_equal(store_publish(fx->s, ONE, strlen(ONE), "src"), ERR_OK);
    nap(100); /* a line being written as the store cleared */
    n = support_count(logged(fx), "\"msg\":\"serving old profiles");
    nap(300); /* six intervals */
    assert_int_equal(support_count(logged(fx), "\"msg\":\"serving old profiles"), n);
}

TEST(test_no_copy_makes_no_requests)
{
    struct fixture *fx = *state;
    struct lastgood_config c = {.fix = "the profiles", .call = fake_send, .call_ctx = &fx->api};

    lastgood_stop(&fx->lg_);
    assert_int_equal(lastgood_init(&fx->lg_, fx->s, &fx->lg, &c, NULL, 0), ERR_OK);
    assert_false(lastgood_enabled(fx->lg_));
    lastgood_offer(fx->lg_, ONE, strlen(ONE), "5", 1000);
    assert_int_equal(lastgood_fall_back(fx->lg_, NULL), ERR_FAIL);
    nap(50);
    assert_int_equal(fx->api.gets + fx->api.posts + fx->api.puts, 0);
}

int main(void)
{
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_body_is_the_copy),
        T_(test_time_round_trip),
        T_(test_created_then_updated_then_unchanged),
        T_(test_lost_races_read_again),
        T_(test_failed_write_is_counted_and_tried_again),
        T_(test_fall_back_to_a_valid_copy),
        T_(test_stale_line_repeats_until_fresh),
        T_(test_no_copy_makes_no_requests),
    };
#undef T_

    return cmocka_run_group_tests(tests, NULL, NULL);
}
