/*
 * Unit tests for target_each_container() (webhook/admission/target.c): which regular
 * containers the webhook mutates (docs/profiles.md, step 2). Every container that asks for
 * a GPU or an RDMA device, in order with its index; failing those, only the
 * first container named "pytorch"; otherwise none. Without a callback it
 * only counts, which is how the webhook decides "no-container". Also what
 * `mutate --explain` reads: target_pod_why()'s reason for each verdict, and
 * the resource target_container_device() names.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/dynbuf.h"
#include "admission/mutate.h"
#include "admission/podjson.h"
#include "admission/profiles.h"
#include "admission/target.h"

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
static size_t pick_named(const char *containers, const char *fallback, struct seen *s)
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
    n = target_each_container(&r, arr, ps, fallback, record, s);
    counted = target_each_container(&r, arr, ps, fallback, NULL, NULL);
    assert_false(podjson_failed(&r));
    assert_int_equal(n, s->n);
    assert_int_equal(counted, n);
    profiles_free(ps);
    cJSON_Delete(arr);
    return n;
}

static size_t pick(const char *containers, struct seen *s)
{
    return pick_named(containers, "pytorch", s);
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

/* The training container by name is the job kind's: "node" for a
 * TrainJob's or JobSet's, "pytorch" for a PyTorchJob's or a pod of no job,
 * none for an MPIJob's or Volcano Job's. */
TEST(test_fallback_container_by_kind)
{
    static const char containers[] = "[{\"name\":\"pytorch\"},{\"name\":\"node\"}]";
    struct mutate_job job = {.kind = MUTATE_JOB_TRAINJOB};
    struct seen s;

    assert_string_equal(target_fallback_container(&job), "node");
    assert_int_equal(pick_named(containers, target_fallback_container(&job), &s), 1);
    assert_string_equal(s.name[0], "node");
    job.kind = MUTATE_JOB_JOBSET;
    assert_string_equal(target_fallback_container(&job), "node");
    job.kind = MUTATE_JOB_PYTORCHJOB;
    assert_string_equal(target_fallback_container(&job), "pytorch");
    job.kind = MUTATE_JOB_NONE;
    assert_string_equal(target_fallback_container(&job), "pytorch");
    assert_string_equal(target_fallback_container(NULL), "pytorch");
    job.kind = MUTATE_JOB_MPIJOB;
    assert_null(target_fallback_container(&job));
    assert_int_equal(pick_named(containers, NULL, &s), 0);
    job.kind = MUTATE_JOB_VOLCANOJOB;
    assert_null(target_fallback_container(&job));
}

static struct profiles *with_targets(void)
{
    static const char text[] = "{\"targets\":{\"volcanojob\":false},\"profiles\":[{\"name\":"
                               "\"p\",\"default\":true}]}";
    return support_profiles(text);
}

/* The verdict and the reason target_pod() gives for metadata (JSON) of a
 * pod of job kind with role, as mutjob would have found them. */
static void assert_why_job(const char *metadata, enum mutate_job_kind kind, const char *role,
                           enum target_verdict want, const char *why_want)
{
    struct profiles *ps = with_targets();
    cJSON *meta = cJSON_Parse(metadata);
    struct mutate_job job = {.kind = kind, .role = role};
    struct podjson r;
    const char *why = NULL;
    enum target_verdict v;

    assert_non_null(meta);
    podjson_init(&r);
    v = target_pod(&r, meta, NULL, ps, &job, 0, &why);
    assert_int_equal(v, want);
    assert_int_equal(target_pod(&r, meta, NULL, ps, &job, 0, NULL), v);
    assert_non_null(why);
    assert_string_equal(why, why_want);
    cJSON_Delete(meta);
    profiles_free(ps);
}

/* The job a pod's metadata names, by its owner or its operator label, as
 * mutjob finds it for these cases. */
static enum mutate_job_kind kind_of(const char *metadata)
{
    if (strstr(metadata, "PyTorchJob") || strstr(metadata, "pytorchjob-controller"))
        return MUTATE_JOB_PYTORCHJOB;
    if (strstr(metadata, "mpi-operator"))
        return MUTATE_JOB_MPIJOB;
    if (strstr(metadata, "volcano.sh/job-name"))
        return MUTATE_JOB_VOLCANOJOB;
    return MUTATE_JOB_NONE;
}

static void assert_why(const char *metadata, enum target_verdict want, const char *why_want)
{
    assert_why_job(metadata, kind_of(metadata), NULL, want, why_want);
}

TEST(test_pod_reasons)
{
    assert_why("{\"annotations\":{\"rdma-webhook.io/inject\":\"false\"},\"ownerReferences\":[{"
               "\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\",\"controller\":true}]}",
               TARGET_OPTED_OUT, "annotation rdma-webhook.io/inject: \"false\"");
    assert_why("{\"labels\":{\"rdma-webhook.io/inject\":\"true\"}}", TARGET_YES,
               "label rdma-webhook.io/inject: \"true\"");
    assert_why("{\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":"
               "\"PyTorchJob\",\"controller\":true}]}",
               TARGET_YES, "its controlling owner is a PyTorchJob");
    assert_why("{\"labels\":{\"training.kubeflow.org/operator-name\":\"pytorchjob-controller\"}}",
               TARGET_YES, "label training.kubeflow.org/operator-name: pytorchjob-controller");
    assert_why("{\"labels\":{\"training.kubeflow.org/operator-name\":\"mpi-operator\"}}",
               TARGET_YES, "an MPIJob's pod, and targets.mpijob is on");
    /* a value that is no word of the vocabulary is no value: the label, then
     * the owner decide */
    assert_why("{\"annotations\":{\"rdma-webhook.io/inject\":\"yes\"},\"labels\":{"
               "\"rdma-webhook.io/inject\":\"false\"}}",
               TARGET_OPTED_OUT, "label rdma-webhook.io/inject: \"false\"");
    assert_why("{\"annotations\":{\"rdma-webhook.io/inject\":\"True\"},\"labels\":{"
               "\"rdma-webhook.io/inject\":\"true\"}}",
               TARGET_YES, "label rdma-webhook.io/inject: \"true\"");
    assert_why("{\"labels\":{\"rdma-webhook.io/inject\":\"enabled\"},\"ownerReferences\":[{"
               "\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\",\"controller\":true}]}",
               TARGET_YES, "its controlling owner is a PyTorchJob");
    assert_why("{\"labels\":{\"volcano.sh/job-name\":\"j\"}}", TARGET_NO,
               "a Volcano Job's pod, and targets.volcanojob is off");
    assert_why("{\"labels\":{\"app\":\"web\"}}", TARGET_NO,
               "no PyTorchJob, TrainJob, JobSet, MPIJob or Volcano Job owns it, no "
               "rdma-webhook.io/inject: \"true\"");
}

/* The value that does nothing, the annotation's first; a namespace's
 * vocabulary has "enabled" too. */
TEST(test_inject_ignored_values)
{
    static const struct {
        const char *metadata, *bad, *where;
    } cases[] = {
        {"{}", NULL, NULL},
        {"{\"annotations\":{\"rdma-webhook.io/inject\":\"true\"}}", NULL, NULL},
        {"{\"labels\":{\"rdma-webhook.io/inject\":\"false\"}}", NULL, NULL},
        {"{\"labels\":{\"rdma-webhook.io/inject\":\"enabled\"}}", "enabled", "label"},
        {"{\"annotations\":{\"rdma-webhook.io/inject\":\"yes\"},\"labels\":{"
         "\"rdma-webhook.io/inject\":\"1\"}}",
         "yes", "annotation"},
        {"{\"annotations\":{\"rdma-webhook.io/inject\":\"true\"},\"labels\":{"
         "\"rdma-webhook.io/inject\":\"\"}}",
         "", "label"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *meta = cJSON_Parse(cases[i].metadata);
        const char *where = NULL, *bad;
        struct podjson r;

        assert_non_null(meta);
        podjson_init(&r);
        bad = target_inject_ignored(&r, meta, &where);
        if (!cases[i].bad)
            assert_null(bad);
        else {
            assert_non_null(bad);
            assert_string_equal(bad, cases[i].bad);
            assert_string_equal(where, cases[i].where);
        }
        cJSON_Delete(meta);
    }
    assert_true(target_namespace_inject_known(NULL));
    assert_true(target_namespace_inject_known("true"));
    assert_true(target_namespace_inject_known("false"));
    assert_true(target_namespace_inject_known("enabled"));
    assert_false(target_namespace_inject_known("yes"));
    assert_false(target_namespace_inject_known("True"));
    assert_false(target_namespace_inject_known(""));
}

TEST(test_container_device_names_the_resource)
{
    struct dynbuf err;
    struct profiles *ps;
    struct podjson r;
    cJSON *c;

    dynbuf_init(&err, 4096);
    ps = profiles_parse(PROFILES, strlen(PROFILES), &err);
    dynbuf_free(&err);
    assert_non_null(ps);
    podjson_init(&r);
    c = cJSON_Parse("{\"resources\":{\"limits\":{\"cpu\":\"1\",\"rdma/hca\":\"1\"},"
                    "\"requests\":{\"nvidia.com/gpu\":\"1\"}}}");
    assert_string_equal(target_container_device(&r, c, ps), "nvidia.com/gpu");
    assert_int_equal(target_container_wants_devices(&r, c, ps), 1);
    cJSON_Delete(c);
    c = cJSON_Parse("{\"resources\":{\"requests\":{\"rdma/hca_shared\":\"1\"}}}");
    assert_string_equal(target_container_device(&r, c, ps), "rdma/hca_shared");
    cJSON_Delete(c);
    c = cJSON_Parse("{\"resources\":{\"limits\":{\"cpu\":\"1\"}}}");
    assert_null(target_container_device(&r, c, ps));
    assert_int_equal(target_container_wants_devices(&r, c, ps), 0);
    cJSON_Delete(c);
    profiles_free(ps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_device_container_in_order),
        cmocka_unit_test(test_without_devices_only_the_first_pytorch),
        cmocka_unit_test(test_none_when_no_device_and_no_pytorch),
        cmocka_unit_test(test_fallback_container_by_kind),
        cmocka_unit_test(test_pod_reasons),
        cmocka_unit_test(test_inject_ignored_values),
        cmocka_unit_test(test_container_device_names_the_resource),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
