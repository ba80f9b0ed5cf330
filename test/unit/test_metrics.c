/*
 * Unit tests for webhook/server/metrics.c: every admission reason lands under its
 * own {result, reason} label pair, ignored requests under their own, and the
 * histogram and counters add up; failed API lookups by kind and reason; the
 * server's connections, bodies, Events and client refusals from the gauges.
 */
#include "unit.h"
#include "support.h"

#include <stdio.h>
#include <string.h>

#include "wire/clientauth.h"
#include "base/dynbuf.h"
#include "kube/lookups.h"
#include "server/metrics.h"
#include "admission/mutate.h"

static const struct metrics_gauges gauges = {.version = "test"};

/* The exposition's value for one exact series name with labels. */
static unsigned long long value_of(const char *text, const char *series)
{
    char want[256];
    const char *hit;
    unsigned long long v;

    snprintf(want, sizeof(want), "\n%s ", series);
    hit = strstr(text, want);
    if (!hit)
        fail_msg("no series %s in:\n%s", series, text);
    assert_int_equal(sscanf(hit + strlen(want), "%llu", &v), 1);
    return v;
}

static void render(struct metrics *m, struct dynbuf *out)
{
    dynbuf_init(out, 1 << 16);
    assert_int_equal(metrics_render(m, &gauges, out), 0);
}

TEST(test_each_reason_has_its_own_labels)
{
    static const struct {
        enum mutate_reason reason;
        const char *series;
    } cases[] = {
        {MUTATE_R_MUTATED, "rdma_webhook_admissions_total{result=\"mutated\",reason=\"\"}"},
        {MUTATE_R_REPORTED, "rdma_webhook_admissions_total{result=\"reported\",reason=\"\"}"},
        {MUTATE_R_NOT_TARGET,
         "rdma_webhook_admissions_total{result=\"skipped\",reason=\"not-target\"}"},
        {MUTATE_R_OPTED_OUT,
         "rdma_webhook_admissions_total{result=\"skipped\",reason=\"opted-out\"}"},
        {MUTATE_R_NO_PROFILE,
         "rdma_webhook_admissions_total{result=\"skipped\",reason=\"no-profile\"}"},
        {MUTATE_R_UNKNOWN_PROFILE,
         "rdma_webhook_admissions_total{result=\"skipped\",reason=\"unknown-profile\"}"},
        {MUTATE_R_NO_CONTAINER,
         "rdma_webhook_admissions_total{result=\"skipped\",reason=\"no-container\"}"},
        {MUTATE_R_NOTHING_MISSING,
         "rdma_webhook_admissions_total{result=\"skipped\",reason=\"nothing-missing\"}"},
        {MUTATE_R_ERROR, "rdma_webhook_admissions_total{result=\"error\",reason=\"\"}"},
    };
    struct metrics m;
    struct dynbuf out;

    assert_int_equal(sizeof(cases) / sizeof(cases[0]), MUTATE_REASONS);
    metrics_init(&m);
    for (size_t i = 0; i < MUTATE_REASONS; i++)
        for (size_t k = 0; k <= i; k++) /* reason i counted i+1 times */
            metrics_admission(&m, 0, cases[i].reason, 1000, 0, NULL);
    metrics_admission(&m, 1, MUTATE_R_MUTATED, 1000, 0, NULL);
    render(&m, &out);
    for (size_t i = 0; i < MUTATE_REASONS; i++)
        assert_int_equal(value_of(dynbuf_ptr(&out), cases[i].series), i + 1);
    assert_int_equal(
        value_of(dynbuf_ptr(&out), "rdma_webhook_admissions_total{result=\"ignored\",reason=\"\"}"),
        1);
    assert_int_equal(value_of(dynbuf_ptr(&out), "rdma_webhook_admission_duration_seconds_count"),
                     MUTATE_REASONS * (MUTATE_REASONS + 1) / 2 + 1);
    dynbuf_free(&out);
}

TEST(test_ops_warnings_and_latency_buckets)
{
    unsigned kinds[MUTATE_W_KINDS] = {0};
    struct metrics m;
    struct dynbuf out;

    kinds[MUTATE_W_OVERRIDE] = 2;
    metrics_init(&m);
    metrics_admission(&m, 0, MUTATE_R_MUTATED, 40000, 7, kinds);       /* 40 us */
    metrics_admission(&m, 0, MUTATE_R_MUTATED, 2000000000LL, 5, NULL); /* past the last bound */
    render(&m, &out);
    assert_int_equal(value_of(dynbuf_ptr(&out), "rdma_webhook_patch_operations_total"), 12);
    assert_int_equal(value_of(dynbuf_ptr(&out), "rdma_webhook_warnings_total{kind=\"override\"}"),
                     2);
    assert_int_equal(
        value_of(dynbuf_ptr(&out), "rdma_webhook_admission_duration_seconds_bucket{le=\"5e-05\"}"),
        1);
    assert_int_equal(
        value_of(dynbuf_ptr(&out), "rdma_webhook_admission_duration_seconds_bucket{le=\"1\"}"), 1);
    assert_int_equal(
        value_of(dynbuf_ptr(&out), "rdma_webhook_admission_duration_seconds_bucket{le=\"+Inf\"}"),
        2);
    dynbuf_free(&out);
}

/* A pinned pod comes with one MUTATE_W_PINNED warning; the pod is counted
 * once, whatever else it was warned about. */
TEST(test_pinned_counts_mutated_pods_only)
{
    unsigned kinds[MUTATE_W_KINDS] = {0};
    struct metrics m;
    struct dynbuf out;

    kinds[MUTATE_W_PINNED] = 1;
    kinds[MUTATE_W_OVERRIDE] = 3;
    metrics_init(&m);
    metrics_admission(&m, 0, MUTATE_R_MUTATED, 1000, 3, kinds);
    /* Report mode warns as enforce would, but pins nothing: not a pinned pod. */
    metrics_admission(&m, 0, MUTATE_R_REPORTED, 1000, 1, kinds);
    metrics_admission(&m, 0, MUTATE_R_NOTHING_MISSING, 1000, 0, kinds);
    render(&m, &out);
    assert_int_equal(value_of(dynbuf_ptr(&out), "rdma_webhook_pinned_pods_total"), 1);
    assert_int_equal(value_of(dynbuf_ptr(&out), "rdma_webhook_warnings_total{kind=\"pinned\"}"), 3);
    assert_int_equal(value_of(dynbuf_ptr(&out),
                              "rdma_webhook_admissions_total{result=\"reported\",reason=\"\"}"),
                     1);
    dynbuf_free(&out);
}

/* Profile names are the admin's: the first METRICS_PROFILES_MAX get their
 * own series, later ones share "_other", so the label set stays bounded. */
TEST(test_admissions_by_profile_bounded)
{
    struct metrics m;
    struct dynbuf out;
    char name[32];

    metrics_init(&m);
    metrics_admission_profile(&m, "roce-8card");
    metrics_admission_profile(&m, "roce-8card");
    metrics_admission_profile(&m, "ib-4card");
    for (int i = 0; i < METRICS_PROFILES_MAX + 5; i++) {
        snprintf(name, sizeof(name), "p-%d", i);
        metrics_admission_profile(&m, name);
    }
    render(&m, &out);
    assert_int_equal(
        value_of(dynbuf_ptr(&out), "rdma_webhook_profile_admissions_total{profile=\"roce-8card\"}"),
        2);
    assert_int_equal(
        value_of(dynbuf_ptr(&out), "rdma_webhook_profile_admissions_total{profile=\"ib-4card\"}"),
        1);
    assert_int_equal(
        value_of(dynbuf_ptr(&out), "rdma_webhook_profile_admissions_total{profile=\"p-0\"}"), 1);
    /* 2 slots taken before: p-126 is the last with its own series. */
    assert_int_equal(
        value_of(dynbuf_ptr(&out), "rdma_webhook_profile_admissions_total{profile=\"p-125\"}"), 1);
    assert_null(strstr(dynbuf_ptr(&out), "profile=\"p-126\""));
    assert_int_equal(
        value_of(dynbuf_ptr(&out), "rdma_webhook_profile_admissions_total{profile=\"_other\"}"), 7);
    dynbuf_free(&out);
}

TEST(test_pinned_pods_counted)
{
    unsigned kinds[MUTATE_W_KINDS] = {0};
    struct metrics m;
    struct dynbuf out;

    metrics_init(&m);
    metrics_admission(&m, 0, MUTATE_R_MUTATED, 1000, 3, kinds);
    kinds[MUTATE_W_PINNED] = 1;
    kinds[MUTATE_W_AMBIGUOUS] = 2;
    metrics_admission(&m, 0, MUTATE_R_MUTATED, 1000, 4, kinds);
    render(&m, &out);
    assert_int_equal(value_of(dynbuf_ptr(&out), "rdma_webhook_pinned_pods_total"), 1);
    assert_int_equal(value_of(dynbuf_ptr(&out), "rdma_webhook_warnings_total{kind=\"pinned\"}"), 1);
    assert_int_equal(value_of(dynbuf_ptr(&out), "rdma_webhook_warnings_total{kind=\"ambiguous\"}"),
                     2);
    dynbuf_free(&out);
}

/* Every kind and reason of a failed lookup is a series, 0 until counted,
 * under one HELP and TYPE. */
TEST(test_lookup_failures_by_kind_and_reason)
{
    struct metrics_gauges g = {.version = "test"};
    struct metrics m;
    struct dynbuf out;
    const char *text;

    metrics_init(&m);
    g.lookup_failures[LOOKUPS_K_NODE][LOOKUPS_R_FORBIDDEN] = 3;
    g.lookup_failures[LOOKUPS_K_CONFIGMAP][LOOKUPS_R_TIMEOUT] = 2;
    dynbuf_init(&out, 1 << 16);
    assert_int_equal(metrics_render(&m, &g, &out), 0);
    text = dynbuf_ptr(&out);
    assert_contains(text, "# HELP rdma_webhook_lookup_failures_total API lookups (Node and "
                          "Namespace labels, envFrom ConfigMaps) that failed, by kind and reason; "
                          "the admission went on without the answer.\n"
                          "# TYPE rdma_webhook_lookup_failures_total counter\n");
    assert_int_equal(
        value_of(text, "rdma_webhook_lookup_failures_total{kind=\"node\",reason=\"forbidden\"}"),
        3);
    assert_int_equal(
        value_of(text, "rdma_webhook_lookup_failures_total{kind=\"configmap\",reason=\"timeout\"}"),
        2);
    assert_int_equal(
        value_of(text, "rdma_webhook_lookup_failures_total{kind=\"namespace\",reason=\"other\"}"),
        0);
    for (int k = 0; k < LOOKUPS_KINDS; k++)
        for (int r = 0; r < LOOKUPS_REASONS; r++) {
            char series[160];

            snprintf(series, sizeof(series),
                     "rdma_webhook_lookup_failures_total{kind=\"%s\",reason=\"%s\"}",
                     lookups_kind_name((enum lookups_kind)k),
                     lookups_reason_name((enum lookups_reason)r));
            value_of(text, series);
        }
    dynbuf_free(&out);
}

/* The server's parts come in as gauges: each value lands under its series,
 * client refusals under clientauth's names, and nothing for CLIENTAUTH_OK. */
TEST(test_server_gauges_rendered)
{
    struct metrics_gauges g = {.version = "test"};
    struct metrics m;
    struct dynbuf out;
    const char *text;

    metrics_init(&m);
    g.connections_open = 7;
    g.connections_closed_header_timeout = 1;
    g.connections_closed_body_timeout = 2;
    g.connections_closed_displaced = 3;
    g.connections_refused = 4;
    g.body_bytes = 4096;
    g.body_refused = 5;
    g.events = (struct metrics_events){11, 12, 13, 14, 15, 16};
    g.client_auth_refused[CLIENTAUTH_OK] = 99;
    g.client_auth_refused[CLIENTAUTH_NO_CERT] = 21;
    g.client_auth_refused[CLIENTAUTH_NAME] = 23;
    dynbuf_init(&out, 1 << 16);
    assert_int_equal(metrics_render(&m, &g, &out), 0);
    text = dynbuf_ptr(&out);
    assert_int_equal(value_of(text, "rdma_webhook_connections_open"), 7);
    assert_int_equal(
        value_of(text, "rdma_webhook_connections_closed_total{reason=\"header-timeout\"}"), 1);
    assert_int_equal(
        value_of(text, "rdma_webhook_connections_closed_total{reason=\"body-timeout\"}"), 2);
    assert_int_equal(value_of(text, "rdma_webhook_connections_closed_total{reason=\"displaced\"}"),
                     3);
    assert_int_equal(value_of(text, "rdma_webhook_connections_refused_total"), 4);
    assert_int_equal(value_of(text, "rdma_webhook_request_body_bytes"), 4096);
    assert_int_equal(value_of(text, "rdma_webhook_request_body_refused_total"), 5);
    assert_int_equal(value_of(text, "rdma_webhook_event_reports_total"), 11);
    assert_int_equal(value_of(text, "rdma_webhook_event_reports_dropped_total"), 12);
    assert_int_equal(value_of(text, "rdma_webhook_event_reports_aggregated_total"), 13);
    assert_int_equal(value_of(text, "rdma_webhook_event_requests_total{result=\"created\"}"), 14);
    assert_int_equal(value_of(text, "rdma_webhook_event_requests_total{result=\"updated\"}"), 15);
    assert_int_equal(value_of(text, "rdma_webhook_event_requests_total{result=\"failed\"}"), 16);
    for (int v = CLIENTAUTH_NO_CERT; v < CLIENTAUTH_VERDICTS; v++) {
        char series[160];

        snprintf(series, sizeof(series), "rdma_webhook_client_auth_refused_total{reason=\"%s\"}",
                 clientauth_verdict_name((enum clientauth_verdict)v));
        assert_int_equal(value_of(text, series), g.client_auth_refused[v]);
    }
    assert_null(strstr(text, "99"));
    dynbuf_free(&out);
}

/* A cap too small for the exposition: too big, and out as it was. */
TEST(test_render_too_big_leaves_out_as_it_was)
{
    struct metrics m;
    struct dynbuf out;
    size_t full;

    metrics_init(&m);
    render(&m, &out);
    full = dynbuf_len(&out);
    dynbuf_free(&out);
    for (size_t cap = 0; cap < full; cap += full / 7 + 1) {
        dynbuf_init(&out, cap);
        assert_int_equal(dynbuf_addstr(&out, "x"), cap ? 0 : ERR_TOO_BIG);
        assert_int_equal(metrics_render(&m, &gauges, &out), ERR_TOO_BIG);
        assert_int_equal(dynbuf_len(&out), cap ? 1 : 0);
        dynbuf_free(&out);
    }
}

static int render_starved(void *arg)
{
    struct metrics *m = arg;
    struct dynbuf out;
    int rc;

    dynbuf_init(&out, 1 << 16);
    rc = metrics_render(m, &gauges, &out);
    return rc == ERR_NOMEM ? 0 : rc == ERR_TOO_BIG ? 1 : rc == 0 ? 2 : 3;
}

/* Out of memory is out of memory, not "too big" (the result used to be
 * guessed from the output's shape). */
TEST(test_render_out_of_memory_says_so)
{
    static const char *const why[] = {"ERR_TOO_BIG", "success", "unexpected result", NULL};
    struct metrics m;

    metrics_init(&m);
    support_assert_starved(render_starved, &m, "rendering without memory", why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_reason_has_its_own_labels),
        cmocka_unit_test(test_ops_warnings_and_latency_buckets),
        cmocka_unit_test(test_pinned_counts_mutated_pods_only),
        cmocka_unit_test(test_admissions_by_profile_bounded),
        cmocka_unit_test(test_pinned_pods_counted),
        cmocka_unit_test(test_lookup_failures_by_kind_and_reason),
        cmocka_unit_test(test_server_gauges_rendered),
        cmocka_unit_test(test_render_too_big_leaves_out_as_it_was),
        cmocka_unit_test(test_render_out_of_memory_says_so),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
