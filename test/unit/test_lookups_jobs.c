/*
 * Unit tests for the jobset_owner hook (issue 24): webhook/kube/jobref.c's
 * reading of a JobSet and a TrainJob, and lookups.c's JobSet and TrainJob
 * caches behind it, with a fake API and a fake clock. A JobSet controlled
 * by a TrainJob is that TrainJob's (its name, apiVersion, uid, and its
 * runtime from a second GET); any other JobSet is its own; a "launcher"
 * replicated job means ssh ranks. A JobSet's 404 is NONE, cached; any other
 * failure is UNKNOWN, counted and logged with a hint, and leaves *job as it
 * was; bad bodies, oversized fields and a buffer too small are UNKNOWN,
 * never an overflow. Answers are cached for job_ttl_s. Through
 * review_handle, the Event's regarding of a TrainJob's pod is the TrainJob.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/profiles.h"
#include "admission/review.h"
#include "base/dynbuf.h"
#include "base/err.h"
#include "host/log.h"
#include "host/monotime.h"
#include "kube/jobref.h"
#include "kube/kubeapi.h"
#include "kube/lookups.h"

#define JS_PATH "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/"
#define TJ_PATH "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/"
#define TJ_UID  "8e7d3c0a-1111-4a4a-9b9b-000000000001"
#define JS_UID  "8e7d3c0a-2222-4a4a-9b9b-000000000002"

/* A JobSet "tj" as Kubeflow Trainer makes it for TrainJob "tj". */
#define JOBSET_OF_TRAINJOB(replicated)                                                             \
    "{'apiVersion':'jobset.x-k8s.io/v1alpha2','kind':'JobSet','metadata':{'name':'tj',"            \
    "'namespace':'ns','uid':'" JS_UID "','ownerReferences':[{'apiVersion':"                        \
    "'trainer.kubeflow.org/v1alpha1','kind':'TrainJob','name':'tj','uid':'" TJ_UID "',"            \
    "'controller':true,'blockOwnerDeletion':true}]},'spec':{'replicatedJobs':[" replicated "]}}"
#define NODE_RJ     "{'name':'node','replicas':1}"
#define LAUNCHER_RJ "{'name':'launcher','replicas':1}"
#define TRAINJOB                                                                                   \
    "{'apiVersion':'trainer.kubeflow.org/v1alpha1','kind':'TrainJob','metadata':{'name':'tj',"     \
    "'namespace':'ns','uid':'" TJ_UID "'},'spec':{'runtimeRef':{'name':'torch-distributed'}}}"
#define PLAIN_JOBSET                                                                               \
    "{'apiVersion':'jobset.x-k8s.io/v1alpha2','kind':'JobSet','metadata':{'name':'js',"            \
    "'namespace':'ns','uid':'" JS_UID "'},'spec':{'replicatedJobs':[" NODE_RJ "]}}"

/* The fake API: a GET of path answers status and body (' for "), or, for
 * a path it does not know, 404. */
#define FAKE_MAX 8
static struct {
    struct {
        const char *path;
        long status;
        const char *body;
    } obj[FAKE_MAX];
    int n;
    atomic_int calls;
} fake;

static void fake_serve(const char *path, long status, const char *body)
{
    assert_true(fake.n < FAKE_MAX);
    fake.obj[fake.n].path = path;
    fake.obj[fake.n].status = status;
    fake.obj[fake.n].body = body;
    fake.n++;
}

static int fake_call(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp,
                     long *status, char *err, size_t errlen)
{
    (void)ctx;
    atomic_fetch_add(&fake.calls, 1);
    if (strcmp(req->method, "GET") != 0)
        return err_set(err, errlen, ERR_FAIL, "lookups sent %s", req->method);
    for (int i = 0; i < fake.n; i++) {
        if (strcmp(fake.obj[i].path, req->path) != 0)
            continue;
        if (fake.obj[i].status == 0)
            return err_set(err, errlen, ERR_FAIL, "GET %s: Couldn't connect to server", req->path);
        *status = fake.obj[i].status;
        for (const char *p = fake.obj[i].body; *p; p++)
            if (dynbuf_addc(resp, *p == '\'' ? '"' : *p) != ERR_OK)
                return ERR_TOO_BIG;
        return ERR_OK;
    }
    *status = 404;
    return dynbuf_addstr(resp, "{\"kind\":\"Status\",\"code\":404,\"message\":\"not found\"}");
}

static atomic_llong fake_now;

static long long fake_clock(void)
{
    return atomic_load(&fake_now);
}

static struct log test_log;
static FILE *log_file;
static struct lookups *lk;

static int setup(void **state __attribute__((unused)))
{
    struct lookups_config cfg = {
        .budget_ms = 1000, .job_ttl_s = 10, .call = fake_call, .now_ns = fake_clock};
    char err[ERR_LEN];

    memset(&fake, 0, sizeof(fake));
    atomic_store(&fake_now, 1000 * MONOTIME_NS_PER_S);
    log_file = tmpfile();
    if (!log_file)
        return -1;
    test_log = (struct log){.fd = fileno(log_file), .min = LOG_DEBUG};
    if (lookups_init(&lk, &test_log, &cfg, err, sizeof(err)) != ERR_OK)
        return -1;
    return 0;
}

static int teardown(void **state __attribute__((unused)))
{
    lookups_stop(&lk);
    fclose(log_file);
    return 0;
}

/* JSON written with ' for ". */
static cJSON *J(const char *text)
{
    char *s = support_unquote(text);
    cJSON *j = cJSON_Parse(s);

    free(s);
    assert_non_null(j);
    return j;
}

/* The hook, as one admission asks it, into job and buf (len bytes). */
static enum mutate_lookup owner_of(const char *name, struct mutate_job *job, char *buf, size_t len)
{
    struct lookups_request req;
    struct mutate_hooks hooks = {0};

    lookups_begin(lk, &req, &hooks);
    assert_non_null(hooks.jobset_owner);
    return hooks.jobset_owner(hooks.ctx, "ns", name, job, buf, len);
}

static const char *str(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* ---- jobref: the JSON read ---------------------------------------------- */

TEST(test_jobref_trainjob_owner)
{
    cJSON *js = J(JOBSET_OF_TRAINJOB(NODE_RJ)), *s = NULL;
    char err[ERR_LEN] = "";

    assert_int_equal(jobref_jobset(js, &s, err, sizeof(err)), ERR_OK);
    assert_string_equal(str(s, "kind"), "TrainJob");
    assert_string_equal(str(s, "name"), "tj");
    assert_string_equal(str(s, "apiVersion"), "trainer.kubeflow.org/v1alpha1");
    assert_string_equal(str(s, "uid"), TJ_UID);
    assert_null(cJSON_GetObjectItem(s, "sshRanks"));
    cJSON_Delete(s);
    cJSON_Delete(js);
    js = J(JOBSET_OF_TRAINJOB(NODE_RJ "," LAUNCHER_RJ));
    assert_int_equal(jobref_jobset(js, &s, err, sizeof(err)), ERR_OK);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(s, "sshRanks")));
    cJSON_Delete(s);
    cJSON_Delete(js);
}

/* A JobSet no TrainJob controls is its own, a TrainJob that only owns it
 * (no controller: true) included. */
TEST(test_jobref_plain_jobset)
{
    cJSON *js = J(PLAIN_JOBSET), *s = NULL;
    char err[ERR_LEN] = "";

    assert_int_equal(jobref_jobset(js, &s, err, sizeof(err)), ERR_OK);
    assert_string_equal(str(s, "kind"), "JobSet");
    assert_string_equal(str(s, "name"), "js");
    assert_string_equal(str(s, "apiVersion"), "jobset.x-k8s.io/v1alpha2");
    assert_string_equal(str(s, "uid"), JS_UID);
    cJSON_Delete(s);
    cJSON_Delete(js);
    js = J("{'apiVersion':'jobset.x-k8s.io/v1alpha2','metadata':{'name':'js','uid':'u',"
           "'ownerReferences':[{'apiVersion':'trainer.kubeflow.org/v1alpha1','kind':'TrainJob',"
           "'name':'tj','uid':'t'}]}}");
    assert_int_equal(jobref_jobset(js, &s, err, sizeof(err)), ERR_OK);
    assert_string_equal(str(s, "kind"), "JobSet");
    cJSON_Delete(s);
    cJSON_Delete(js);
    /* Controlled by another group's TrainJob: not Kubeflow's. */
    js = J("{'metadata':{'name':'js','uid':'u','ownerReferences':[{'apiVersion':"
           "'example.com/v1','kind':'TrainJob','name':'tj','uid':'t','controller':true}]}}");
    assert_int_equal(jobref_jobset(js, &s, err, sizeof(err)), ERR_OK);
    assert_string_equal(str(s, "kind"), "JobSet");
    cJSON_Delete(s);
    cJSON_Delete(js);
}

TEST(test_jobref_bad_objects)
{
    static const char *const bad[] = {
        "{}",
        "{'metadata':{'uid':'u'}}",
        "{'metadata':{'name':'js'}}",
        "{'metadata':{'name':7,'uid':'u'}}",
        /* A TrainJob owner without its uid: no Event could be on it. */
        "{'metadata':{'name':'js','uid':'u','ownerReferences':[{'apiVersion':"
        "'trainer.kubeflow.org/v1alpha1','kind':'TrainJob','name':'tj','controller':true}]}}",
    };
    char err[ERR_LEN], big[JOBREF_STR_MAX + 64], text[JOBREF_STR_MAX + 128];
    cJSON *js, *s = NULL;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        js = J(bad[i]);
        assert_int_equal(jobref_jobset(js, &s, err, sizeof(err)), ERR_FAIL);
        assert_null(s);
        cJSON_Delete(js);
    }
    memset(big, 'a', JOBREF_STR_MAX + 1);
    big[JOBREF_STR_MAX + 1] = '\0';
    snprintf(text, sizeof(text), "{'metadata':{'name':'%s','uid':'u'}}", big);
    js = J(text);
    assert_int_equal(jobref_jobset(js, &s, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "name is over");
    assert_null(s);
    cJSON_Delete(js);
    js = J("{'spec':{'runtimeRef':{'name':'r'}}}");
    assert_int_equal(jobref_trainjob(js, &s, err, sizeof(err)), ERR_FAIL);
    cJSON_Delete(js);
}

/* What does not fit the caller's buffer is UNKNOWN, *job untouched. */
TEST(test_jobref_fill_is_bounded)
{
    cJSON *js = J(JOBSET_OF_TRAINJOB(NODE_RJ)), *s = NULL;
    struct mutate_job job = {.kind = MUTATE_JOB_JOBSET, .name = "tj", .role = "node"};
    char buf[128], err[ERR_LEN];
    size_t used = 99, need = 3 + sizeof("trainer.kubeflow.org/v1alpha1") + sizeof(TJ_UID);

    assert_int_equal(jobref_jobset(js, &s, err, sizeof(err)), ERR_OK);
    for (size_t len = 0; len < need; len++) {
        assert_int_equal(jobref_fill_jobset(s, &job, buf, len, &used), MUTATE_LOOKUP_UNKNOWN);
        assert_int_equal(job.kind, MUTATE_JOB_JOBSET);
        assert_null(job.uid);
        assert_int_equal(used, 99);
    }
    assert_int_equal(jobref_fill_jobset(s, &job, buf, need, &used), MUTATE_LOOKUP_FOUND);
    assert_int_equal(used, need);
    assert_int_equal(job.kind, MUTATE_JOB_TRAINJOB);
    assert_string_equal(job.uid, TJ_UID);
    assert_string_equal(job.role, "node");
    cJSON_Delete(s);
    cJSON_Delete(js);
    js = J(TRAINJOB);
    assert_int_equal(jobref_trainjob(js, &s, err, sizeof(err)), ERR_OK);
    assert_int_equal(jobref_fill_runtime(s, &job, buf, 5), MUTATE_LOOKUP_UNKNOWN);
    assert_null(job.runtime);
    assert_int_equal(jobref_fill_runtime(s, &job, buf, sizeof(buf)), MUTATE_LOOKUP_FOUND);
    assert_string_equal(job.runtime, "torch-distributed");
    /* A TrainJob of that name made again (another uid) is not the
     * JobSet's: its runtime is not this job's. */
    job.uid = "another-uid";
    assert_int_equal(jobref_fill_runtime(s, &job, buf, sizeof(buf)), MUTATE_LOOKUP_FOUND);
    assert_null(job.runtime);
    cJSON_Delete(s);
    cJSON_Delete(js);
}

/* ---- the hook: lookups' caches ------------------------------------------ */

TEST(test_trainjob_found_and_cached)
{
    struct mutate_job job = {.kind = MUTATE_JOB_JOBSET, .name = "tj", .role = "node"};
    char buf[MUTATE_JOB_BUF];

    fake_serve(JS_PATH "tj", 200, JOBSET_OF_TRAINJOB(NODE_RJ "," LAUNCHER_RJ));
    fake_serve(TJ_PATH "tj", 200, TRAINJOB);
    assert_int_equal(owner_of("tj", &job, buf, sizeof(buf)), MUTATE_LOOKUP_FOUND);
    assert_int_equal(job.kind, MUTATE_JOB_TRAINJOB);
    assert_string_equal(job.name, "tj");
    assert_string_equal(job.api_version, "trainer.kubeflow.org/v1alpha1");
    assert_string_equal(job.uid, TJ_UID);
    assert_string_equal(job.runtime, "torch-distributed");
    assert_string_equal(job.role, "node");
    assert_true(job.ssh_ranks);
    assert_int_equal(atomic_load(&fake.calls), 2);
    /* The next pods of the job cost no call, until the TTL runs out. */
    for (int i = 0; i < 5; i++) {
        memset(&job, 0, sizeof(job));
        memset(buf, 0, sizeof(buf));
        assert_int_equal(owner_of("tj", &job, buf, sizeof(buf)), MUTATE_LOOKUP_FOUND);
        assert_string_equal(job.runtime, "torch-distributed");
    }
    assert_int_equal(atomic_load(&fake.calls), 2);
    atomic_fetch_add(&fake_now, 10 * MONOTIME_NS_PER_S);
    assert_int_equal(owner_of("tj", &job, buf, sizeof(buf)), MUTATE_LOOKUP_FOUND);
    assert_int_equal(atomic_load(&fake.calls), 4);
}

TEST(test_plain_jobset_and_none)
{
    struct mutate_job job = {.kind = MUTATE_JOB_JOBSET, .name = "js"};
    char buf[MUTATE_JOB_BUF];

    fake_serve(JS_PATH "js", 200, PLAIN_JOBSET);
    assert_int_equal(owner_of("js", &job, buf, sizeof(buf)), MUTATE_LOOKUP_FOUND);
    assert_int_equal(job.kind, MUTATE_JOB_JOBSET);
    assert_string_equal(job.uid, JS_UID);
    assert_null(job.runtime);
    assert_false(job.ssh_ranks);
    assert_int_equal(atomic_load(&fake.calls), 1); /* no TrainJob asked for */
    /* A 404 is an answer, cached: no failure counted, no line. */
    assert_int_equal(owner_of("gone", &job, buf, sizeof(buf)), MUTATE_LOOKUP_NONE);
    assert_int_equal(owner_of("gone", &job, buf, sizeof(buf)), MUTATE_LOOKUP_NONE);
    assert_int_equal(atomic_load(&fake.calls), 2);
    assert_int_equal(lookups_failures(lk, LOOKUPS_K_JOBSET, LOOKUPS_R_NOT_FOUND), 0);
    assert_null(strstr(support_log_text(log_file), "API lookup failed"));
}

/* A 403 is UNKNOWN, one warn line naming the JobSet and the RBAC rule. */
TEST(test_jobset_forbidden)
{
    struct mutate_job job = {.kind = MUTATE_JOB_JOBSET, .name = "tj"};
    char buf[MUTATE_JOB_BUF];
    const char *log;

    fake_serve(JS_PATH "tj", 403, "{'kind':'Status','code':403,'message':'jobsets is forbidden'}");
    assert_int_equal(owner_of("tj", &job, buf, sizeof(buf)), MUTATE_LOOKUP_UNKNOWN);
    assert_int_equal(job.kind, MUTATE_JOB_JOBSET);
    assert_null(job.uid);
    assert_int_equal(lookups_failures(lk, LOOKUPS_K_JOBSET, LOOKUPS_R_FORBIDDEN), 1);
    log = support_log_text(log_file);
    assert_contains(log, "\"kind\":\"JobSet\",\"namespace\":\"ns\",\"name\":\"tj\",\"status\":403");
    assert_contains(log, "needs get on jobsets.jobset.x-k8s.io (ClusterRole rdma-webhook");
    /* Cached for a second, like every failure. */
    assert_int_equal(owner_of("tj", &job, buf, sizeof(buf)), MUTATE_LOOKUP_UNKNOWN);
    assert_int_equal(atomic_load(&fake.calls), 1);
}

/* The TrainJob read fails: UNKNOWN, and *job as it was (not half a
 * TrainJob). Gone (404): still the TrainJob's, its runtime unknown. */
TEST(test_trainjob_failures)
{
    struct mutate_job job = {.kind = MUTATE_JOB_JOBSET, .name = "tj"};
    char buf[MUTATE_JOB_BUF];

    fake_serve(JS_PATH "tj", 200, JOBSET_OF_TRAINJOB(NODE_RJ));
    fake_serve(TJ_PATH "tj", 403, "{'message':'trainjobs is forbidden'}");
    assert_int_equal(owner_of("tj", &job, buf, sizeof(buf)), MUTATE_LOOKUP_UNKNOWN);
    assert_int_equal(job.kind, MUTATE_JOB_JOBSET);
    assert_null(job.uid);
    assert_int_equal(lookups_failures(lk, LOOKUPS_K_TRAINJOB, LOOKUPS_R_FORBIDDEN), 1);
    assert_contains(support_log_text(log_file), "get on trainjobs.trainer.kubeflow.org");
    fake.n = 1; /* the TrainJob gone: 404 */
    atomic_fetch_add(&fake_now, 2 * MONOTIME_NS_PER_S);
    assert_int_equal(owner_of("tj", &job, buf, sizeof(buf)), MUTATE_LOOKUP_FOUND);
    assert_int_equal(job.kind, MUTATE_JOB_TRAINJOB);
    assert_string_equal(job.uid, TJ_UID);
    assert_null(job.runtime);
}

/* A body that is not JSON, or not a JobSet this reads (a field over
 * JOBREF_STR_MAX), is a bad body: UNKNOWN, never a cut string. */
TEST(test_bad_and_oversized_bodies)
{
    static char huge[JOBREF_STR_MAX + 128];
    struct mutate_job job = {.kind = MUTATE_JOB_JOBSET, .name = "x"};
    char buf[MUTATE_JOB_BUF], big[JOBREF_STR_MAX + 2];

    memset(big, 'u', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    snprintf(huge, sizeof(huge), "{'metadata':{'name':'big','uid':'%s'}}", big);
    fake_serve(JS_PATH "html", 200, "<html>proxy</html>");
    fake_serve(JS_PATH "big", 200, huge);
    fake_serve(JS_PATH "tj", 200, JOBSET_OF_TRAINJOB(NODE_RJ));
    fake_serve(TJ_PATH "tj", 200, TRAINJOB);
    /* The first is logged (the second of the kind and reason is counted
     * only, within the log interval). */
    assert_int_equal(owner_of("big", &job, buf, sizeof(buf)), MUTATE_LOOKUP_UNKNOWN);
    assert_int_equal(owner_of("html", &job, buf, sizeof(buf)), MUTATE_LOOKUP_UNKNOWN);
    assert_int_equal(lookups_failures(lk, LOOKUPS_K_JOBSET, LOOKUPS_R_BAD_BODY), 2);
    assert_contains(support_log_text(log_file), "uid is over");
    /* A buffer too small for the answer: UNKNOWN, nothing written past it. */
    memset(buf, 'Z', sizeof(buf));
    assert_int_equal(owner_of("tj", &job, buf, 40), MUTATE_LOOKUP_UNKNOWN);
    assert_int_equal(job.kind, MUTATE_JOB_JOBSET);
    for (size_t i = 40; i < sizeof(buf); i++)
        assert_int_equal(buf[i], 'Z');
    /* Room for the JobSet's strings but not the runtime: UNKNOWN too. */
    assert_int_equal(owner_of("tj", &job, buf, 3 + 30 + 37 + 5), MUTATE_LOOKUP_UNKNOWN);
    assert_null(job.uid);
    assert_int_equal(owner_of("tj", &job, buf, sizeof(buf)), MUTATE_LOOKUP_FOUND);
}

/* Names no object can have: UNKNOWN without a call or a failure. */
TEST(test_invalid_names)
{
    struct mutate_job job = {0};
    char buf[MUTATE_JOB_BUF], long_name[300];
    struct lookups_request req;
    struct mutate_hooks hooks = {0};

    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    assert_int_equal(owner_of("Not_A_Name", &job, buf, sizeof(buf)), MUTATE_LOOKUP_UNKNOWN);
    assert_int_equal(owner_of("a/b", &job, buf, sizeof(buf)), MUTATE_LOOKUP_UNKNOWN);
    assert_int_equal(owner_of(long_name, &job, buf, sizeof(buf)), MUTATE_LOOKUP_UNKNOWN);
    lookups_begin(lk, &req, &hooks);
    assert_int_equal(hooks.jobset_owner(hooks.ctx, "Bad NS", "tj", &job, buf, sizeof(buf)),
                     MUTATE_LOOKUP_UNKNOWN);
    assert_int_equal(atomic_load(&fake.calls), 0);
}

/* The JobSets' circuit opens after calls in a row that cannot reach the
 * API, and is its own: the TrainJobs' stays closed. */
TEST(test_jobset_circuit)
{
    struct mutate_job job = {0};
    char buf[MUTATE_JOB_BUF], name[16];

    fake_serve(JS_PATH "a0", 0, "");
    fake_serve(JS_PATH "a1", 0, "");
    fake_serve(JS_PATH "a2", 0, "");
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "a%d", i);
        assert_int_equal(owner_of(name, &job, buf, sizeof(buf)), MUTATE_LOOKUP_UNKNOWN);
    }
    assert_true(lookups_circuit_open(lk, LOOKUPS_K_JOBSET));
    assert_false(lookups_circuit_open(lk, LOOKUPS_K_TRAINJOB));
    assert_int_equal(owner_of("other", &job, buf, sizeof(buf)), MUTATE_LOOKUP_UNKNOWN);
    assert_int_equal(atomic_load(&fake.calls), 3);
    assert_int_equal(lookups_skipped(lk, LOOKUPS_K_JOBSET), 1);
    assert_int_equal(lookups_failures(lk, LOOKUPS_K_JOBSET, LOOKUPS_R_TRANSPORT), 3);
}

TEST(test_kind_names)
{
    assert_string_equal(lookups_kind_name(LOOKUPS_K_JOBSET), "jobset");
    assert_string_equal(lookups_kind_name(LOOKUPS_K_TRAINJOB), "trainjob");
}

/* ---- through review_handle: the Event's regarding ----------------------- */

#define POD_OF_JOBSET(js)                                                                          \
    "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview','request':{'uid':'u1',"          \
    "'kind':{'group':'','version':'v1','kind':'Pod'},'resource':{'group':'','version':'v1',"       \
    "'resource':'pods'},'namespace':'ns','operation':'CREATE','object':{'metadata':{'name':"       \
    "'" js "-node-0-0','namespace':'ns','labels':{'jobset.sigs.k8s.io/jobset-name':'" js "',"      \
    "'jobset.sigs.k8s.io/replicatedjob-name':'node'},'ownerReferences':[{'apiVersion':"            \
    "'batch/v1','kind':'Job','name':'" js "-node-0','uid':'job-uid','controller':true}]},"         \
    "'spec':{'containers':[{'name':'node','image':'i'}]}}}}"

/* The summary's owner (the Event's regarding) for a pod of JobSet js. */
static void review_owner_of(const char *body, struct review_summary *sum)
{
    struct profiles *ps = support_profiles("{'profiles':[{'name':'p'}]}");
    struct lookups_request req;
    struct mutate_hooks hooks = {0};
    char *text = support_unquote(body);
    struct dynbuf out;

    dynbuf_init(&out, 1 << 20);
    memset(sum, 0, sizeof(*sum));
    lookups_begin(lk, &req, &hooks);
    assert_int_equal(review_handle(text, strlen(text), ps, &hooks, NULL, &out, sum), 200);
    dynbuf_free(&out);
    free(text);
    profiles_free(ps);
}

TEST(test_review_regards_the_trainjob)
{
    struct review_summary sum;

    fake_serve(JS_PATH "tj", 200, JOBSET_OF_TRAINJOB(NODE_RJ));
    fake_serve(TJ_PATH "tj", 200, TRAINJOB);
    review_owner_of(POD_OF_JOBSET("tj"), &sum);
    assert_string_equal(sum.owner.kind, "TrainJob");
    assert_string_equal(sum.owner.api_version, "trainer.kubeflow.org/v1alpha1");
    assert_string_equal(sum.owner.name, "tj");
    assert_string_equal(sum.owner.uid, TJ_UID);
}

/* A plain JobSet's pod, or one whose JobSet is not known: as before, the
 * pod's controlling owner (its Job). */
TEST(test_review_keeps_the_owner_otherwise)
{
    struct review_summary sum;

    fake_serve(JS_PATH "js", 200, PLAIN_JOBSET);
    review_owner_of(POD_OF_JOBSET("js"), &sum);
    assert_string_equal(sum.owner.kind, "Job");
    assert_string_equal(sum.owner.uid, "job-uid");
    fake_serve(JS_PATH "down", 0, "");
    review_owner_of(POD_OF_JOBSET("down"), &sum);
    assert_string_equal(sum.owner.kind, "Job");
    assert_string_equal(sum.owner.name, "down-node-0");
}

int main(void)
{
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_jobref_trainjob_owner),
        T_(test_jobref_plain_jobset),
        T_(test_jobref_bad_objects),
        T_(test_jobref_fill_is_bounded),
        T_(test_trainjob_found_and_cached),
        T_(test_plain_jobset_and_none),
        T_(test_jobset_forbidden),
        T_(test_trainjob_failures),
        T_(test_bad_and_oversized_bodies),
        T_(test_invalid_names),
        T_(test_jobset_circuit),
        T_(test_kind_names),
        T_(test_review_regards_the_trainjob),
        T_(test_review_keeps_the_owner_otherwise),
    };
#undef T_

    return cmocka_run_group_tests(tests, NULL, NULL);
}
