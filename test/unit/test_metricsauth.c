/*
 * Unit tests for webhook/kube/metricsauth.c, with a fake API and a fake
 * clock: the Bearer header's grammar and bounds; a TokenReview's answer read
 * strictly (types, bounds of the user) into the SubjectAccessReview sent
 * for that user; the SAR's answer; the verdicts and their statuses; a
 * decision cached by the token's hash for the TTL, not past it, an API
 * failure never cached; a full cache evicting the entry that expires first.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/err.h"
#include "host/monotime.h"
#include "kube/kubeapi.h"
#include "kube/metricsauth.h"

/* ---- the fake API and clock ---------------------------------------------- */

struct fake {
    int tokenreviews, sars;
    long tr_status, sar_status; /* what each answers; 0: a transport error */
    const char *tr_body;        /* NULL: authenticated as the token's user below */
    const char *sar_body;       /* NULL: allowed when the user is "reader" */
    char last_sar[4096];
};

static struct fake fake;
static long long fake_now_ns;
/* For the concurrency bound: a TokenReview of a "nest-" token checks the
 * next one from inside the call, as another thread would meanwhile. */
static struct metricsauth *nest_ma;
static enum metricsauth_verdict nest_verdicts[4];
static const char *nest_why;
static int nest_depth;

static long long fake_clock(void)
{
    return fake_now_ns;
}

/* TokenReview: the token "reader-T" (any T) is user "reader", "other-T"
 * user "other", anything else not authenticated. */
static int fake_tokenreview(const struct kubeapi_request *req, struct dynbuf *resp)
{
    cJSON *doc = cJSON_ParseWithLength(req->body, req->len);
    const char *tok =
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "spec"), "token"));
    char body[512];

    assert_non_null(tok);
    if (strncmp(tok, "nest-", 5) == 0 && nest_depth < 3) {
        char next[32];

        snprintf(next, sizeof(next), "Bearer nest-%d", nest_depth + 1);
        nest_depth++;
        nest_verdicts[nest_depth] = metricsauth_check(nest_ma, next, &nest_why);
    }
    if (fake.tr_body)
        snprintf(body, sizeof(body), "%s", fake.tr_body);
    else if (strncmp(tok, "reader-", 7) == 0 || strncmp(tok, "other-", 6) == 0 ||
             strncmp(tok, "nest-", 5) == 0)
        snprintf(body, sizeof(body),
                 "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"%s\",\"uid\":\"u1\","
                 "\"groups\":[\"g1\",\"g\\\"2\"],\"extra\":{\"scopes\":[\"a\",\"b\"]}}}}",
                 tok[0] == 'o' ? "other" : "reader");
    else
        snprintf(body, sizeof(body), "{\"status\":{\"error\":\"invalid token\"}}");
    cJSON_Delete(doc);
    return dynbuf_addstr(resp, body);
}

static int fake_sar(const struct kubeapi_request *req, struct dynbuf *resp)
{
    snprintf(fake.last_sar, sizeof(fake.last_sar), "%.*s", (int)req->len, req->body);
    if (fake.sar_body)
        return dynbuf_addstr(resp, fake.sar_body);
    return dynbuf_addstr(resp, strstr(fake.last_sar, "\"user\":\"reader\"")
                                   ? "{\"status\":{\"allowed\":true}}"
                                   : "{\"status\":{\"allowed\":false}}");
}

static int fake_call(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp,
                     long *status, char *err, size_t errlen)
{
    int tr = strstr(req->path, "tokenreviews") != NULL;
    long st = tr ? fake.tr_status : fake.sar_status;

    (void)ctx;
    assert_string_equal(req->method, "POST");
    if (tr)
        fake.tokenreviews++;
    else
        fake.sars++;
    if (st == 0)
        return err_set(err, errlen, ERR_FAIL, "connection refused");
    *status = st;
    return tr ? fake_tokenreview(req, resp) : fake_sar(req, resp);
}

static struct metricsauth *new_auth(long long ttl_ms)
{
    struct metricsauth_config cfg = {.call = fake_call, .ttl_ms = ttl_ms, .now_ns = fake_clock};
    struct metricsauth *ma = NULL;
    char err[ERR_LEN];

    memset(&fake, 0, sizeof(fake));
    fake.tr_status = fake.sar_status = 201;
    fake_now_ns = 1000 * MONOTIME_NS_PER_MS;
    assert_int_equal(metricsauth_init(&ma, &cfg, err, sizeof(err)), ERR_OK);
    return ma;
}

/* ---- the header ------------------------------------------------------------ */

TEST(test_bearer_grammar)
{
    const char *tok;
    size_t len;
    char *big = malloc(METRICSAUTH_TOKEN_MAX + 16);

    assert_int_equal(metricsauth_bearer("Bearer abc.def", &tok, &len), ERR_OK);
    assert_int_equal(len, 7);
    assert_memory_equal(tok, "abc.def", 7);
    assert_int_equal(metricsauth_bearer("bearer   xyz  ", &tok, &len), ERR_OK);
    assert_int_equal(len, 3);
    assert_int_equal(metricsauth_bearer(NULL, &tok, &len), ERR_FAIL);
    assert_int_equal(metricsauth_bearer("", &tok, &len), ERR_FAIL);
    assert_int_equal(metricsauth_bearer("Bearer", &tok, &len), ERR_FAIL);
    assert_int_equal(metricsauth_bearer("Bearer    ", &tok, &len), ERR_FAIL);
    assert_int_equal(metricsauth_bearer("Basic dXNlcjpwYXNz", &tok, &len), ERR_FAIL);
    assert_int_equal(metricsauth_bearer("Bearerabc", &tok, &len), ERR_FAIL);
    assert_int_equal(metricsauth_bearer("Bearer a b", &tok, &len), ERR_FAIL);
    assert_int_equal(metricsauth_bearer("Bearer a\x01", &tok, &len), ERR_FAIL);
    assert_non_null(big);
    memcpy(big, "Bearer ", 7);
    memset(big + 7, 'x', METRICSAUTH_TOKEN_MAX);
    big[7 + METRICSAUTH_TOKEN_MAX] = '\0';
    assert_int_equal(metricsauth_bearer(big, &tok, &len), ERR_OK);
    big[7 + METRICSAUTH_TOKEN_MAX] = 'x';
    big[8 + METRICSAUTH_TOKEN_MAX] = '\0';
    assert_int_equal(metricsauth_bearer(big, &tok, &len), ERR_FAIL);
    free(big);
}

/* ---- the answers ----------------------------------------------------------- */

static enum metricsauth_verdict read_tr(const char *body, struct dynbuf *out)
{
    dynbuf_reset(out);
    return metricsauth_read_tokenreview(body, strlen(body), "/metrics", out);
}

TEST(test_tokenreview_to_sar)
{
    struct dynbuf out;
    cJSON *sar, *spec;

    dynbuf_init(&out, METRICSAUTH_REQUEST_MAX);
    assert_int_equal(
        read_tr("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\\\"x\","
                "\"uid\":\"1\",\"groups\":[\"a\",\"b\"],\"extra\":{\"k\":[\"v\"]}}}}",
                &out),
        METRICSAUTH_ALLOWED);
    sar = cJSON_Parse(dynbuf_ptr(&out));
    assert_non_null(sar);
    spec = cJSON_GetObjectItem(sar, "spec");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(sar, "kind")),
                        "SubjectAccessReview");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(spec, "user")), "u\"x");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(spec, "uid")), "1");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "groups")), 2);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(
                            cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "extra"), "k"), 0)),
                        "v");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(
                            cJSON_GetObjectItem(spec, "nonResourceAttributes"), "path")),
                        "/metrics");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(
                            cJSON_GetObjectItem(spec, "nonResourceAttributes"), "verb")),
                        "get");
    cJSON_Delete(sar);
    /* Only a username is needed. */
    assert_int_equal(
        read_tr("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\"}}}", &out),
        METRICSAUTH_ALLOWED);
    assert_null(strstr(dynbuf_ptr(&out), "groups"));
    dynbuf_free(&out);
}

TEST(test_tokenreview_rejections)
{
    struct dynbuf out;

    dynbuf_init(&out, METRICSAUTH_REQUEST_MAX);
    assert_int_equal(read_tr("{\"status\":{}}", &out), METRICSAUTH_BAD_TOKEN);
    assert_int_equal(read_tr("{\"status\":{\"authenticated\":false,\"error\":\"x\"}}", &out),
                     METRICSAUTH_BAD_TOKEN);
    /* Not an answer: the API is unwell, not the caller. */
    assert_int_equal(read_tr("", &out), METRICSAUTH_UNAVAILABLE);
    assert_int_equal(read_tr("not json", &out), METRICSAUTH_UNAVAILABLE);
    assert_int_equal(read_tr("{}", &out), METRICSAUTH_UNAVAILABLE);
    assert_int_equal(read_tr("{\"status\":{\"authenticated\":\"yes\"}}", &out),
                     METRICSAUTH_UNAVAILABLE);
    assert_int_equal(read_tr("{\"status\":{\"authenticated\":true}}", &out),
                     METRICSAUTH_UNAVAILABLE);
    assert_int_equal(
        read_tr("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"\"}}}", &out),
        METRICSAUTH_UNAVAILABLE);
    assert_int_equal(
        read_tr(
            "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\",\"groups\":[1]}}}",
            &out),
        METRICSAUTH_UNAVAILABLE);
    assert_int_equal(
        read_tr("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\",\"uid\":7}}}",
                &out),
        METRICSAUTH_UNAVAILABLE);
    assert_int_equal(read_tr("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\","
                             "\"extra\":{\"k\":\"v\"}}}}",
                             &out),
                     METRICSAUTH_UNAVAILABLE);
    dynbuf_free(&out);
}

/* A user with more groups than METRICSAUTH_GROUPS_MAX, or a SAR over out's
 * cap, is no answer to act on. */
TEST(test_tokenreview_bounds)
{
    struct dynbuf body, out;

    dynbuf_init(&body, 1 << 20);
    dynbuf_init(&out, METRICSAUTH_REQUEST_MAX);
    assert_int_equal(dynbuf_addstr(&body, "{\"status\":{\"authenticated\":true,\"user\":{"
                                          "\"username\":\"u\",\"groups\":["),
                     ERR_OK);
    for (int i = 0; i <= METRICSAUTH_GROUPS_MAX; i++)
        assert_int_equal(dynbuf_printf(&body, "%s\"g%d\"", i ? "," : "", i), ERR_OK);
    assert_int_equal(dynbuf_addstr(&body, "]}}}"), ERR_OK);
    assert_int_equal(
        metricsauth_read_tokenreview(dynbuf_ptr(&body), dynbuf_len(&body), "/metrics", &out),
        METRICSAUTH_UNAVAILABLE);
    dynbuf_free(&out);
    /* 256 groups fit the count, not a 1 KiB cap. */
    dynbuf_init(&out, 1024);
    dynbuf_reset(&body);
    assert_int_equal(dynbuf_addstr(&body, "{\"status\":{\"authenticated\":true,\"user\":{"
                                          "\"username\":\"u\",\"groups\":["),
                     ERR_OK);
    for (int i = 0; i < METRICSAUTH_GROUPS_MAX; i++)
        assert_int_equal(dynbuf_printf(&body, "%s\"group-%d\"", i ? "," : "", i), ERR_OK);
    assert_int_equal(dynbuf_addstr(&body, "]}}}"), ERR_OK);
    assert_int_equal(
        metricsauth_read_tokenreview(dynbuf_ptr(&body), dynbuf_len(&body), "/metrics", &out),
        METRICSAUTH_UNAVAILABLE);
    dynbuf_free(&out);
    dynbuf_free(&body);
}

TEST(test_sar_answers)
{
#define SAR(s) metricsauth_read_sar((s), strlen(s))
    assert_int_equal(SAR("{\"status\":{\"allowed\":true}}"), METRICSAUTH_ALLOWED);
    assert_int_equal(SAR("{\"status\":{\"allowed\":false,\"reason\":\"no\"}}"),
                     METRICSAUTH_FORBIDDEN);
    assert_int_equal(SAR("{\"status\":{\"allowed\":\"true\"}}"), METRICSAUTH_UNAVAILABLE);
    assert_int_equal(SAR("{\"status\":{}}"), METRICSAUTH_UNAVAILABLE);
    assert_int_equal(SAR("{\"allowed\":true}"), METRICSAUTH_UNAVAILABLE);
    assert_int_equal(SAR("garbage"), METRICSAUTH_UNAVAILABLE);
#undef SAR
}

TEST(test_statuses_and_names)
{
    assert_int_equal(metricsauth_status(METRICSAUTH_ALLOWED), 200);
    assert_int_equal(metricsauth_status(METRICSAUTH_NO_TOKEN), 401);
    assert_int_equal(metricsauth_status(METRICSAUTH_BAD_TOKEN), 401);
    assert_int_equal(metricsauth_status(METRICSAUTH_FORBIDDEN), 403);
    assert_int_equal(metricsauth_status(METRICSAUTH_UNAVAILABLE), 503);
    assert_string_equal(metricsauth_verdict_name(METRICSAUTH_FORBIDDEN), "forbidden");
    assert_string_equal(metricsauth_verdict_name(METRICSAUTH_VERDICTS), "unknown");
}

/* ---- the checks and the cache --------------------------------------------- */

TEST(test_check_verdicts)
{
    struct metricsauth *ma = new_auth(10000);
    const char *why = NULL;

    assert_int_equal(metricsauth_check(ma, NULL, &why), METRICSAUTH_NO_TOKEN);
    assert_int_equal(fake.tokenreviews, 0);
    assert_int_equal(metricsauth_check(ma, "Bearer nobody", &why), METRICSAUTH_BAD_TOKEN);
    assert_int_equal(fake.sars, 0);
    assert_int_equal(metricsauth_check(ma, "Bearer other-1", &why), METRICSAUTH_FORBIDDEN);
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", &why), METRICSAUTH_ALLOWED);
    assert_null(why);
    assert_contains(fake.last_sar, "\"groups\":[\"g1\",\"g\\\"2\"]");
    assert_contains(fake.last_sar, "\"extra\":{\"scopes\":[\"a\",\"b\"]}");
    assert_contains(fake.last_sar,
                    "\"nonResourceAttributes\":{\"path\":\"/metrics\",\"verb\":\"get\"}");
    assert_int_equal(metricsauth_count(ma, METRICSAUTH_ALLOWED), 1);
    assert_int_equal(metricsauth_count(ma, METRICSAUTH_NO_TOKEN), 1);
    assert_int_equal(metricsauth_api_calls(ma), 5);
    metricsauth_stop(&ma);
    assert_null(ma);
    metricsauth_stop(&ma);
}

TEST(test_api_failures_are_503_and_not_cached)
{
    struct metricsauth *ma = new_auth(10000);
    const char *why = NULL;

    fake.tr_status = 0;
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", &why), METRICSAUTH_UNAVAILABLE);
    assert_non_null(why);
    assert_contains(why, "TokenReview failed");
    fake.tr_status = 403;
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", &why), METRICSAUTH_UNAVAILABLE);
    assert_contains(why, "create on authentication.k8s.io tokenreviews");
    fake.tr_status = 201;
    fake.sar_status = 500;
    why = NULL;
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", &why), METRICSAUTH_UNAVAILABLE);
    assert_contains(why, "SubjectAccessReview failed");
    fake.sar_status = 403;
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", &why), METRICSAUTH_UNAVAILABLE);
    assert_contains(why, "create on authorization.k8s.io subjectaccessreviews");
    fake.sar_status = 201;
    fake.sar_body = "{\"status\":7}";
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", &why), METRICSAUTH_UNAVAILABLE);
    fake.sar_body = NULL;
    /* Nothing of the above was kept: the API is asked again, and answers. */
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", &why), METRICSAUTH_ALLOWED);
    assert_int_equal(fake.tokenreviews, 6);
    metricsauth_stop(&ma);
}

TEST(test_cache_holds_for_the_ttl)
{
    struct metricsauth *ma = new_auth(10000);

    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", NULL), METRICSAUTH_ALLOWED);
    assert_int_equal(metricsauth_check(ma, "Bearer other-1", NULL), METRICSAUTH_FORBIDDEN);
    assert_int_equal(metricsauth_check(ma, "Bearer nobody", NULL), METRICSAUTH_BAD_TOKEN);
    fake_now_ns += 9999 * MONOTIME_NS_PER_MS;
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", NULL), METRICSAUTH_ALLOWED);
    assert_int_equal(metricsauth_check(ma, "Bearer other-1", NULL), METRICSAUTH_FORBIDDEN);
    assert_int_equal(metricsauth_check(ma, "Bearer nobody", NULL), METRICSAUTH_BAD_TOKEN);
    assert_int_equal(fake.tokenreviews, 3);
    assert_int_equal(fake.sars, 2);
    /* A revoked binding shows once the TTL is over. */
    fake_now_ns += 1 * MONOTIME_NS_PER_MS;
    fake.sar_body = "{\"status\":{\"allowed\":false}}";
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", NULL), METRICSAUTH_FORBIDDEN);
    assert_int_equal(fake.tokenreviews, 4);
    metricsauth_stop(&ma);
}

TEST(test_no_ttl_caches_nothing)
{
    struct metricsauth *ma = new_auth(0);

    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", NULL), METRICSAUTH_ALLOWED);
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", NULL), METRICSAUTH_ALLOWED);
    assert_int_equal(fake.tokenreviews, 2);
    metricsauth_stop(&ma);
}

/* More tokens than slots: each new one takes the slot that expires first,
 * so the most recent METRICSAUTH_CACHE_MAX stay and the oldest goes. */
TEST(test_full_cache_evicts_the_oldest)
{
    struct metricsauth *ma = new_auth(10000);
    char hdr[64];

    for (int i = 0; i <= METRICSAUTH_CACHE_MAX; i++) {
        snprintf(hdr, sizeof(hdr), "Bearer reader-%d", i);
        fake_now_ns += MONOTIME_NS_PER_MS;
        assert_int_equal(metricsauth_check(ma, hdr, NULL), METRICSAUTH_ALLOWED);
    }
    assert_int_equal(fake.tokenreviews, METRICSAUTH_CACHE_MAX + 1);
    /* The newest is kept, */
    assert_int_equal(metricsauth_check(ma, hdr, NULL), METRICSAUTH_ALLOWED);
    assert_int_equal(fake.tokenreviews, METRICSAUTH_CACHE_MAX + 1);
    /* and so is the second; the first was evicted. */
    assert_int_equal(metricsauth_check(ma, "Bearer reader-1", NULL), METRICSAUTH_ALLOWED);
    assert_int_equal(fake.tokenreviews, METRICSAUTH_CACHE_MAX + 1);
    assert_int_equal(metricsauth_check(ma, "Bearer reader-0", NULL), METRICSAUTH_ALLOWED);
    assert_int_equal(fake.tokenreviews, METRICSAUTH_CACHE_MAX + 2);
    metricsauth_stop(&ma);
}

/* At most METRICSAUTH_CONCURRENT_MAX checks ask the API at once; one more
 * is 503 at once, without a call, and is not remembered. */
TEST(test_concurrent_checks_are_bounded)
{
    struct metricsauth *ma = new_auth(10000);

    nest_ma = ma;
    nest_depth = 0;
    nest_why = NULL;
    assert_int_equal(metricsauth_check(ma, "Bearer nest-0", NULL), METRICSAUTH_ALLOWED);
    /* nest-0 and nest-1 were asking; nest-2 was refused, so never called. */
    assert_int_equal(nest_verdicts[1], METRICSAUTH_ALLOWED);
    assert_int_equal(nest_verdicts[2], METRICSAUTH_UNAVAILABLE);
    assert_non_null(nest_why);
    assert_contains(nest_why, "busy");
    assert_int_equal(nest_depth, 2);
    assert_int_equal(fake.tokenreviews, 2);
    /* With nobody asking, nest-2 is asked. */
    nest_depth = 3;
    assert_int_equal(metricsauth_check(ma, "Bearer nest-2", NULL), METRICSAUTH_ALLOWED);
    assert_int_equal(fake.tokenreviews, 3);
    nest_ma = NULL;
    metricsauth_stop(&ma);
}

TEST(test_init_needs_a_call)
{
    struct metricsauth_config cfg = {0};
    struct metricsauth *ma = (struct metricsauth *)&cfg;
    char err[ERR_LEN] = "";

    assert_int_equal(metricsauth_init(&ma, &cfg, err, sizeof(err)), ERR_FAIL);
    assert_null(ma);
    assert_contains(err, "API");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bearer_grammar),
        cmocka_unit_test(test_tokenreview_to_sar),
        cmocka_unit_test(test_tokenreview_rejections),
        cmocka_unit_test(test_tokenreview_bounds),
        cmocka_unit_test(test_sar_answers),
        cmocka_unit_test(test_statuses_and_names),
        cmocka_unit_test(test_check_verdicts),
        cmocka_unit_test(test_api_failures_are_503_and_not_cached),
        cmocka_unit_test(test_cache_holds_for_the_ttl),
        cmocka_unit_test(test_no_ttl_caches_nothing),
        cmocka_unit_test(test_full_cache_evicts_the_oldest),
        cmocka_unit_test(test_concurrent_checks_are_bounded),
        cmocka_unit_test(test_init_needs_a_call),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
