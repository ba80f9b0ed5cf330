/*
 * Unit tests for webhook/lookups.c, with a fake API behind the caches: an
 * answer is cached; a real API failure is cached for a second; but an
 * admission with no budget left does not touch the cache, and a call cut
 * short by the admission's own budget is not cached as a failure.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <string.h>
#include <time.h>

#include "lookups.h"
#include "monotime.h"

enum fake_mode {
    FAKE_OK,        /* answers at once */
    FAKE_FAIL,      /* fails at once: the API is down */
    FAKE_TIMES_OUT, /* fails after the whole timeout, as libcurl does */
};

static struct {
    enum fake_mode mode;
    int calls;
    long last_timeout_ms;
} fake;

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&t, NULL);
}

/* Labels {"zone":"a"} for a Node, keys {"K":true} for a ConfigMap. */
static int fake_fetch(const struct kubeapi *api, const char *key, long timeout_ms, cJSON **value)
{
    (void)api;
    (void)key;
    fake.calls++;
    fake.last_timeout_ms = timeout_ms;
    if (fake.mode == FAKE_TIMES_OUT)
        sleep_ms(timeout_ms);
    if (fake.mode != FAKE_OK)
        return -1;
    *value = cJSON_CreateObject();
    if (!*value || !cJSON_AddStringToObject(*value, strchr(key, '/') ? "K" : "zone", "a")) {
        cJSON_Delete(*value);
        return -1;
    }
    return 0;
}

static struct lookups lk;

static int setup(void **state __attribute__((unused)))
{
    memset(&fake, 0, sizeof(fake));
    if (lookups_init(&lk, NULL, 1000, 60, 60))
        return -1;
    lk.nodes.fetch = fake_fetch;
    lk.configmaps.fetch = fake_fetch;
    return 0;
}

static int teardown(void **state __attribute__((unused)))
{
    lookups_stop(&lk);
    return 0;
}

/* Node name's labels with budget_ms of budget (0: none left at all). */
static int node_labels(const char *name, long budget_ms)
{
    struct lookups_request req;
    struct mutate_hooks hooks = {0};
    cJSON *labels = NULL;
    int rc;

    lookups_begin(&lk, &req, &hooks);
    req.deadline_ns = monotime_now() + budget_ms * MONOTIME_NS_PER_MS;
    rc = hooks.select.node_labels(hooks.select.ctx, name, &labels);
    if (rc == 0) {
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(labels, "zone")), "a");
        cJSON_Delete(labels);
    }
    return rc;
}

static enum mutate_envfrom configmap_has(const char *key, long budget_ms)
{
    struct lookups_request req;
    struct mutate_hooks hooks = {0};

    lookups_begin(&lk, &req, &hooks);
    req.deadline_ns = monotime_now() + budget_ms * MONOTIME_NS_PER_MS;
    return hooks.configmap_has_key(hooks.ctx, "ns", "cm", key);
}

TEST(test_answer_is_cached)
{
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(fake.calls, 1);
    assert_true(fake.last_timeout_ms > 900 && fake.last_timeout_ms <= 1000);
}

TEST(test_api_failure_is_cached_for_a_second)
{
    fake.mode = FAKE_FAIL;
    assert_int_equal(node_labels("n1", 1000), -1);
    fake.mode = FAKE_OK;
    assert_int_equal(node_labels("n1", 1000), -1); /* not asked again */
    assert_int_equal(fake.calls, 1);
}

/* An admission with 1 ms or less left used to cache a failure for the key
 * without asking, and every admission of the next second lost the lookup. */
TEST(test_no_budget_leaves_the_cache_alone)
{
    assert_int_equal(node_labels("n1", 0), -1);
    assert_int_equal(node_labels("n1", 1), -1);
    assert_int_equal(fake.calls, 0);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(fake.calls, 1);
}

/* The same for a key cached before and expired since: its slot is not
 * replaced by a failure. */
TEST(test_no_budget_keeps_an_expired_answer_for_others)
{
    lookups_stop(&lk);
    assert_int_equal(lookups_init(&lk, NULL, 1000, 0, 0), 0); /* answers expire at once */
    lk.nodes.fetch = fake_fetch;
    lk.configmaps.fetch = fake_fetch;
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(node_labels("n1", 0), -1);
    assert_int_equal(fake.calls, 1);
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(fake.calls, 2);
}

/* A call that the admission's own small budget cut short is no news about
 * the API: the next admission, with time, asks again. */
TEST(test_call_cut_by_the_budget_is_not_cached)
{
    fake.mode = FAKE_TIMES_OUT;
    assert_int_equal(node_labels("n1", 30), -1);
    assert_int_equal(fake.calls, 1);
    assert_true(fake.last_timeout_ms <= 30);
    fake.mode = FAKE_OK;
    assert_int_equal(node_labels("n1", 1000), 0);
    assert_int_equal(fake.calls, 2);
}

TEST(test_configmap_call_cut_by_the_budget_is_not_cached)
{
    fake.mode = FAKE_TIMES_OUT;
    assert_int_equal(configmap_has("K", 30), MUTATE_ENVFROM_UNKNOWN);
    fake.mode = FAKE_OK;
    assert_int_equal(configmap_has("K", 1000), MUTATE_ENVFROM_HAS);
    assert_int_equal(configmap_has("L", 1000), MUTATE_ENVFROM_LACKS);
    assert_int_equal(fake.calls, 2);
}

TEST(test_configmap_api_failure_is_cached)
{
    fake.mode = FAKE_FAIL;
    assert_int_equal(configmap_has("K", 1000), MUTATE_ENVFROM_UNKNOWN);
    fake.mode = FAKE_OK;
    assert_int_equal(configmap_has("K", 1000), MUTATE_ENVFROM_UNKNOWN);
    assert_int_equal(fake.calls, 1);
}

static enum mutate_envfrom configmap_value(const char *key, char *value, size_t len)
{
    struct lookups_request req;
    struct mutate_hooks hooks = {0};

    lookups_begin(&lk, &req, &hooks);
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
    lookups_stop(&lk);
    assert_int_equal(lookups_init(&lk, NULL, 1000, 60, 60), 0);
    lk.configmaps.fetch = fake_fetch;
    assert_int_equal(configmap_value("K", value, sizeof(value)), MUTATE_ENVFROM_UNKNOWN);
}

int main(void)
{
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_answer_is_cached),
        T_(test_api_failure_is_cached_for_a_second),
        T_(test_no_budget_leaves_the_cache_alone),
        T_(test_no_budget_keeps_an_expired_answer_for_others),
        T_(test_call_cut_by_the_budget_is_not_cached),
        T_(test_configmap_call_cut_by_the_budget_is_not_cached),
        T_(test_configmap_api_failure_is_cached),
        T_(test_configmap_value),
    };
#undef T_

    return cmocka_run_group_tests(tests, NULL, NULL);
}
