/*
 * Unit tests for target_each_container() (webhook/target.c): which regular
 * containers the webhook mutates (SPEC 1.2). Every container that asks for
 * a GPU or an RDMA device, in order with its index; failing those, only the
 * first container named "pytorch"; otherwise none. Without a callback it
 * only counts, which is how the webhook decides "no-container".
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "dynbuf.h"
#include "podjson.h"
#include "profiles.h"
#include "target.h"

static const char PROFILES[] =
    "{\"gpuResources\":[\"nvidia.com/gpu\"],\"rdmaResourcePrefix\":\"rdma/\","
    "\"profiles\":[{\"name\":\"p\",\"default\":true}]}";

struct seen {
    int idx[8];
    char name[8][16];
    size_t n;
};

static void record(void *ctx, const cJSON *c, int idx)
{
    struct seen *s = ctx;

    assert_true(s->n < 8);
    s->idx[s->n] = idx;
    snprintf(s->name[s->n++], sizeof(s->name[0]), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name")));
}

/* Runs target_each_container on a containers array (JSON text); checks the
 * count matches the calls and that nothing was flagged unreadable. */
static size_t pick(const char *containers, struct seen *s)
{
    struct dynbuf err;
    struct profiles *ps;
    struct podjson r;
    cJSON *arr = cJSON_Parse(containers);
    size_t n, counted;

    assert_non_null(arr);
    dynbuf_init(&err, 4096);
    ps = profiles_parse(PROFILES, strlen(PROFILES), &err);
    if (!ps)
        fail_msg("test profiles rejected: %s", dynbuf_ptr(&err));
    dynbuf_free(&err);
    podjson_init(&r);
    memset(s, 0, sizeof(*s));
    n = target_each_container(&r, arr, ps, record, s);
    counted = target_each_container(&r, arr, ps, NULL, NULL);
    assert_false(podjson_failed(&r));
    assert_int_equal(n, s->n);
    assert_int_equal(counted, n);
    profiles_free(ps);
    cJSON_Delete(arr);
    return n;
}

TEST(test_every_device_container_in_order)
{
    struct seen s;

    assert_int_equal(pick("[{\"name\":\"sidecar\"},"
                          "{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\"}}},"
                          "{\"name\":\"pytorch\"},"
                          "{\"name\":\"b\",\"resources\":{\"requests\":{\"rdma/hca\":\"1\"}}}]",
                          &s),
                     2);
    assert_int_equal(s.idx[0], 1);
    assert_string_equal(s.name[0], "a");
    assert_int_equal(s.idx[1], 3);
    assert_string_equal(s.name[1], "b");
}

TEST(test_without_devices_only_the_first_pytorch)
{
    struct seen s;

    assert_int_equal(pick("[{\"name\":\"init-like\"},{\"name\":\"pytorch\"},"
                          "{\"name\":\"pytorch\"}]",
                          &s),
                     1);
    assert_int_equal(s.idx[0], 1);
    assert_string_equal(s.name[0], "pytorch");
}

TEST(test_none_when_no_device_and_no_pytorch)
{
    struct seen s;

    assert_int_equal(pick("[{\"name\":\"web\"},{\"name\":\"PyTorch\"},"
                          "{\"name\":\"x\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]",
                          &s),
                     0);
    assert_int_equal(pick("[]", &s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_device_container_in_order),
        cmocka_unit_test(test_without_devices_only_the_first_pytorch),
        cmocka_unit_test(test_none_when_no_device_and_no_pytorch),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
