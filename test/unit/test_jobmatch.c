/*
 * Unit tests for which job kinds' pods are targets and which profile they
 * get (issue 24): the profiles' targets (trainjob, mpijob, volcanojob on by
 * default, jobset off), match.jobKinds and match.runtimes read and refused
 * as profiles.c does, preferred over unlimited profiles as select.c does
 * (rule other-jobs for an annotation naming one for other jobs), and
 * mutate_object's verdict for each kind: TrainJob trainers and launchers
 * (never initializers), plain JobSets, MPIJob workers and launchers (a
 * GPU-less launcher is no target and gets no warning), Volcano pods, and a
 * JobSet pod whose owner cannot be read (job_lookup, unchanged).
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/dynbuf.h"
#include "admission/mutate.h"
#include "admission/profiles.h"
#include "admission/select.h"

/* ---- the jobset_owner hook ---- */

/* What the fake API answers for any JobSet. */
struct fake_owner {
    enum mutate_lookup answer;
    const char *runtime; /* for a TrainJob owner */
    int trainjob;        /* FOUND: a TrainJob controls it */
    int calls;
};

static enum mutate_lookup fake_jobset_owner(void *ctx, const char *ns, const char *name,
                                            struct mutate_job *job, char *buf, size_t len)
{
    struct fake_owner *f = ctx;

    (void)ns;
    (void)buf;
    (void)len;
    f->calls++;
    if (f->answer != MUTATE_LOOKUP_FOUND)
        return f->answer;
    job->kind = f->trainjob ? MUTATE_JOB_TRAINJOB : MUTATE_JOB_JOBSET;
    job->name = name;
    job->runtime = f->trainjob ? f->runtime : NULL;
    return MUTATE_LOOKUP_FOUND;
}

static cJSON *cur_pod;
static struct profiles *cur_ps;

static int teardown(void **state __attribute__((unused)))
{
    cJSON_Delete(cur_pod);
    profiles_free(cur_ps);
    cur_pod = NULL;
    cur_ps = NULL;
    return 0;
}

#define GPU8 "'resources':{'limits':{'nvidia.com/gpu':'8'}}"
#define PODOF(labels, containers)                                                                  \
    "{'metadata':{'name':'p','labels':{" labels "}},'spec':{'containers':[" containers "]}}"
#define TRAINER(role)                                                                              \
    "'jobset.sigs.k8s.io/jobset-name':'llama','jobset.sigs.k8s.io/replicatedjob-name':'" role "'"
#define MPI(role)                                                                                  \
    "'training.kubeflow.org/operator-name':'mpi-operator','training.kubeflow.org/job-name':'n',"   \
    "'training.kubeflow.org/job-role':'" role "'"
#define VOLCANO "'volcano.sh/job-name':'vc','volcano.sh/task-spec':'worker'"

#define PROFILE8    "{'name':'wide','match':{'gpus':8}}"
#define SHIPPEDLIKE "{'profiles':[" PROFILE8 "]}"

/* mutate_object on pod (JSON with ') under profiles, the JobSet owner
 * answered by f (NULL: no hook). */
static void run(const char *profiles, const char *pod, struct fake_owner *f,
                struct mutate_result *res)
{
    struct mutate_hooks hooks = {.jobset_owner = fake_jobset_owner, .ctx = f};
    struct mutate_input in = {.base = "", .namespace_ = "team-a"};

    teardown(NULL);
    cur_ps = support_profiles(profiles);
    assert_non_null(cur_pod = support_json_parse(pod));
    in.object = cur_pod;
    mutate_result_init(res, 1 << 20);
    mutate_object(&in, cur_ps, f ? &hooks : NULL, res);
}

/* ---- targets ---- */

TEST(test_kind_names_agree)
{
    for (unsigned k = 0; k < MUTATE_JOB_KINDS; k++)
        assert_string_equal(profiles_job_kind_name(k),
                            mutate_job_kind_name((enum mutate_job_kind)k));
    assert_int_equal(MUTATE_JOB_KINDS, PROFILES_JOB_KINDS);
    assert_string_equal(profiles_job_kind_name(PROFILES_JOB_KINDS), "");
}

TEST(test_trainjob_node_and_launcher_are_targets)
{
    struct fake_owner f = {.answer = MUTATE_LOOKUP_FOUND, .trainjob = 1, .runtime = "torch"};
    struct mutate_result res;

    run(SHIPPEDLIKE, PODOF(TRAINER("node"), "{'name':'node'," GPU8 "}"), &f, &res);
    assert_int_equal(res.outcome, MUTATE_PATCHED);
    assert_int_equal(res.job.kind, MUTATE_JOB_TRAINJOB);
    assert_int_equal(f.calls, 1);
    mutate_result_free(&res);
    run(SHIPPEDLIKE, PODOF(TRAINER("launcher"), "{'name':'node'," GPU8 "}"), &f, &res);
    assert_int_equal(res.outcome, MUTATE_PATCHED);
    mutate_result_free(&res);
    /* an MPI runtime's launcher that asks for no device only starts
     * mpirun: no target, and silent, as an MPIJob's */
    run(SHIPPEDLIKE, PODOF(TRAINER("launcher"), "{'name':'node'}"), &f, &res);
    assert_int_equal(res.outcome, MUTATE_SKIPPED);
    assert_int_equal(res.reason, MUTATE_R_NOT_TARGET);
    assert_int_equal(res.warnings.n, 0);
    mutate_result_free(&res);
}

TEST(test_trainjob_initializer_never)
{
    struct fake_owner f = {.answer = MUTATE_LOOKUP_FOUND, .trainjob = 1};
    struct mutate_result res;

    run("{'targets':{'jobset':true},'profiles':[" PROFILE8 "]}",
        PODOF(TRAINER("model-initializer"), "{'name':'model-initializer'," GPU8 "}"), &f, &res);
    assert_int_equal(res.outcome, MUTATE_SKIPPED);
    assert_int_equal(res.reason, MUTATE_R_NOT_TARGET);
    assert_int_equal(res.warnings.n, 0);
    mutate_result_free(&res);
}

TEST(test_trainjob_off)
{
    struct fake_owner f = {.answer = MUTATE_LOOKUP_FOUND, .trainjob = 1};
    struct mutate_result res;

    run("{'targets':{'trainjob':false},'profiles':[" PROFILE8 "]}",
        PODOF(TRAINER("node"), "{'name':'node'," GPU8 "}"), &f, &res);
    assert_int_equal(res.reason, MUTATE_R_NOT_TARGET);
    assert_int_equal(f.calls, 0); /* neither bit on: no lookup at all */
    mutate_result_free(&res);
}

/* The fallback container of a TrainJob's pod is "node". */
TEST(test_trainjob_fallback_container_node)
{
    struct fake_owner f = {.answer = MUTATE_LOOKUP_FOUND, .trainjob = 1};
    struct mutate_result res;

    run("{'profiles':[{'name':'d','default':true}]}",
        PODOF(TRAINER("node"), "{'name':'pytorch'},{'name':'node'}"), &f, &res);
    assert_int_equal(res.outcome, MUTATE_PATCHED);
    assert_non_null(strstr(dynbuf_ptr(&res.patch.out), "/spec/containers/1/"));
    assert_null(strstr(dynbuf_ptr(&res.patch.out), "/spec/containers/0/"));
    mutate_result_free(&res);
}

TEST(test_plain_jobset_by_targets_jobset)
{
    struct fake_owner f = {.answer = MUTATE_LOOKUP_FOUND, .trainjob = 0};
    struct mutate_result res;

    run(SHIPPEDLIKE, PODOF(TRAINER("node"), "{'name':'node'," GPU8 "}"), &f, &res);
    assert_int_equal(res.reason, MUTATE_R_NOT_TARGET);
    assert_int_equal(res.warnings.n, 0);
    mutate_result_free(&res);
    run("{'targets':{'jobset':true},'profiles':[" PROFILE8 "]}",
        PODOF(TRAINER("workers"), "{'name':'w'," GPU8 "}"), &f, &res);
    assert_int_equal(res.outcome, MUTATE_PATCHED);
    assert_int_equal(res.job.kind, MUTATE_JOB_JOBSET);
    mutate_result_free(&res);
}

/* The owner unread: a guess either way could be wrong, so unchanged and
 * job_lookup; when both readings agree there is nothing to guess. */
TEST(test_owner_unknown_no_guess)
{
    struct fake_owner f = {.answer = MUTATE_LOOKUP_UNKNOWN};
    struct mutate_result res;

    run(SHIPPEDLIKE, PODOF(TRAINER("node"), "{'name':'node'," GPU8 "}"), &f, &res);
    assert_int_equal(res.outcome, MUTATE_SKIPPED);
    assert_int_equal(res.patch.n_ops, 0);
    assert_int_equal(res.warnings.n, 1);
    assert_int_equal(res.warnings.kind[0], MUTATE_W_JOB_LOOKUP);
    assert_string_equal(mutate_warning_kind_name(MUTATE_W_JOB_LOOKUP), "job_lookup");
    assert_string_equal(res.warnings.text[0],
                        "rdma-webhook: check the webhook may get jobsets and trainjobs: JobSet "
                        "\"llama\" unread, nothing added");
    mutate_result_free(&res);
    /* no hook at all (offline): the same */
    run(SHIPPEDLIKE, PODOF(TRAINER("node"), "{'name':'node'," GPU8 "}"), NULL, &res);
    assert_int_equal(res.warnings.n, 1);
    assert_int_equal(res.warnings.kind[0], MUTATE_W_JOB_LOOKUP);
    mutate_result_free(&res);
    /* an initializer is no target either way: no warning */
    run(SHIPPEDLIKE, PODOF(TRAINER("dataset-initializer"), "{'name':'d'}"), &f, &res);
    assert_int_equal(res.warnings.n, 0);
    mutate_result_free(&res);
    /* both on, a node: a target either way */
    run("{'targets':{'jobset':true},'profiles':[" PROFILE8 "]}",
        PODOF(TRAINER("node"), "{'name':'node'," GPU8 "}"), &f, &res);
    assert_int_equal(res.outcome, MUTATE_PATCHED);
    mutate_result_free(&res);
    /* the inject label decides without the owner */
    run(SHIPPEDLIKE,
        PODOF(TRAINER("node") ",'rdma-webhook.io/inject':'true'", "{'name':'node'," GPU8 "}"), &f,
        &res);
    assert_int_equal(res.outcome, MUTATE_PATCHED);
    mutate_result_free(&res);
}

TEST(test_mpijob_worker_and_launchers)
{
    struct mutate_result res;

    run(SHIPPEDLIKE, PODOF(MPI("worker"), "{'name':'w'," GPU8 "}"), NULL, &res);
    assert_int_equal(res.outcome, MUTATE_PATCHED);
    mutate_result_free(&res);
    /* a launcher without a device: not a target, and silent */
    run(SHIPPEDLIKE, PODOF(MPI("launcher"), "{'name':'launcher'}"), NULL, &res);
    assert_int_equal(res.outcome, MUTATE_SKIPPED);
    assert_int_equal(res.reason, MUTATE_R_NOT_TARGET);
    assert_int_equal(res.warnings.n, 0);
    mutate_result_free(&res);
    run(SHIPPEDLIKE, PODOF(MPI("launcher"), "{'name':'launcher'," GPU8 "}"), NULL, &res);
    assert_int_equal(res.outcome, MUTATE_PATCHED);
    mutate_result_free(&res);
    run("{'targets':{'mpijob':false},'profiles':[" PROFILE8 "]}",
        PODOF(MPI("worker"), "{'name':'w'," GPU8 "}"), NULL, &res);
    assert_int_equal(res.reason, MUTATE_R_NOT_TARGET);
    mutate_result_free(&res);
}

/* An MPIJob's worker without a device has no container by name: the
 * warning says what to request, naming no container. */
TEST(test_mpijob_no_container_warning)
{
    struct mutate_result res;

    run(SHIPPEDLIKE, PODOF(MPI("worker"), "{'name':'pytorch'}"), NULL, &res);
    assert_int_equal(res.reason, MUTATE_R_NO_CONTAINER);
    assert_int_equal(res.warnings.n, 1);
    assert_string_equal(res.warnings.text[0],
                        "rdma-webhook: request a GPU or RDMA device in the MPIJob's training "
                        "container; nothing added");
    mutate_result_free(&res);
}

TEST(test_volcano)
{
    struct mutate_result res;

    run(SHIPPEDLIKE, PODOF(VOLCANO, "{'name':'w'," GPU8 "}"), NULL, &res);
    assert_int_equal(res.outcome, MUTATE_PATCHED);
    mutate_result_free(&res);
    run("{'targets':{'volcanojob':false},'profiles':[" PROFILE8 "]}",
        PODOF(VOLCANO, "{'name':'w'," GPU8 "}"), NULL, &res);
    assert_int_equal(res.reason, MUTATE_R_NOT_TARGET);
    mutate_result_free(&res);
}

/* ---- match.jobKinds, match.runtimes: parsing ---- */

TEST(test_job_limits_read)
{
    struct profiles *ps = support_profiles(
        "{'profiles':[{'name':'t','match':{'gpus':8,'jobKinds':['TrainJob','MPIJob'],"
        "'runtimes':['torch-distributed','deepspeed.v1']}}]}");

    assert_int_equal(ps->p[0].job_kinds, (1u << MUTATE_JOB_TRAINJOB) | (1u << MUTATE_JOB_MPIJOB));
    assert_int_equal(ps->p[0].n_runtimes, 2);
    assert_string_equal(ps->p[0].runtimes[1], "deepspeed.v1");
    assert_true(profiles_job_limited(&ps->p[0]));
    assert_true(profiles_for_job(&ps->p[0], MUTATE_JOB_TRAINJOB, "torch-distributed"));
    assert_false(profiles_for_job(&ps->p[0], MUTATE_JOB_TRAINJOB, "other"));
    assert_false(profiles_for_job(&ps->p[0], MUTATE_JOB_TRAINJOB, NULL));
    assert_false(profiles_for_job(&ps->p[0], MUTATE_JOB_PYTORCHJOB, "torch-distributed"));
    profiles_free(ps);
}

TEST(test_job_limits_refused)
{
    assert_non_null(strstr(
        support_profiles_rejected("{'profiles':[{'name':'t','match':{'jobKinds':['TFJob']}}]}"),
        "match.jobKinds: \"TFJob\" is no job kind: use PyTorchJob, TrainJob, "
        "JobSet, MPIJob, VolcanoJob"));
    assert_non_null(
        strstr(support_profiles_rejected("{'profiles':[{'name':'t','match':{'jobKinds':[]}}]}"),
               "match.jobKinds: must list 1 or more"));
    assert_non_null(
        strstr(support_profiles_rejected(
                   "{'profiles':[{'name':'t','match':{'jobKinds':['MPIJob','MPIJob']}}]}"),
               "\"MPIJob\" is listed twice"));
    assert_non_null(strstr(
        support_profiles_rejected("{'profiles':[{'name':'t','match':{'runtimes':['Torch']}}]}"),
        "match.runtimes: each entry must be a runtime's name"));
    assert_non_null(strstr(
        support_profiles_rejected("{'profiles':[{'name':'t','match':{'runtimes':'torch'}}]}"),
        "match.runtimes: must list 1 to"));
}

/* A copy of a cluster-wide profile limited to a kind is allowed (it covers
 * the other for that kind's pods); two defaults for overlapping kinds are
 * not, for disjoint ones they are. */
TEST(test_job_limited_copy_and_defaults)
{
    profiles_free(support_profiles("{'profiles':[" PROFILE8 ",{'name':'mpi','match':{'gpus':8,"
                                   "'jobKinds':['MPIJob']}}]}"));
    profiles_free(support_profiles("{'profiles':[{'name':'a','default':true,'match':{'jobKinds':"
                                   "['MPIJob']}},{'name':'b','default':true,'match':{'jobKinds':"
                                   "['TrainJob']}}]}"));
    assert_non_null(strstr(
        support_profiles_rejected("{'profiles':[{'name':'a','default':true,'match':{'jobKinds':"
                                  "['MPIJob']}},{'name':'b','default':true,'match':{'jobKinds':"
                                  "['MPIJob','TrainJob']}}]}"),
        "is already the default"));
}

/* Two profiles with the same rules tie where both apply: for overlapping
 * kinds, or a namespace's and a kind's (neither covers the other); for
 * disjoint kinds they never meet. */
TEST(test_job_limited_pairs)
{
    assert_non_null(
        strstr(support_profiles_rejected(
                   "{'profiles':[{'name':'a','match':{'gpus':8,'jobKinds':['MPIJob']}},"
                   "{'name':'b','match':{'gpus':8,'jobKinds':['MPIJob','TrainJob']}}]}"),
               "have the same match rules"));
    assert_non_null(strstr(
        support_profiles_rejected("{'profiles':[{'name':'a','match':{'gpus':8,'namespaces':['x']}},"
                                  "{'name':'b','match':{'gpus':8,'jobKinds':['TrainJob']}}]}"),
        "have the same match rules"));
    profiles_free(support_profiles("{'profiles':[{'name':'a','match':{'gpus':8,'jobKinds':"
                                   "['MPIJob']}},{'name':'b','match':{'gpus':8,'jobKinds':"
                                   "['TrainJob']}}]}"));
    profiles_free(support_profiles("{'profiles':[{'name':'a','match':{'gpus':8,'jobKinds':"
                                   "['TrainJob'],'runtimes':['x']}},{'name':'b','match':{'gpus':8,"
                                   "'jobKinds':['TrainJob'],'runtimes':['y']}}]}"));
}

/* ---- selection ---- */

#define JOBS_DOC                                                                                   \
    "{'profiles':[" PROFILE8 ",{'name':'ds','match':{'gpus':8,'jobKinds':['TrainJob'],"            \
    "'runtimes':['deepspeed']}}]}"

TEST(test_limited_profile_preferred)
{
    struct fake_owner f = {.answer = MUTATE_LOOKUP_FOUND, .trainjob = 1, .runtime = "deepspeed"};
    struct mutate_result res;

    run(JOBS_DOC, PODOF(TRAINER("node"), "{'name':'node'," GPU8 "}"), &f, &res);
    assert_non_null(res.profile);
    assert_string_equal(res.profile->name, "ds");
    assert_int_equal(res.rule, SELECT_BY_GPUS);
    mutate_result_free(&res);
    /* another runtime, another kind: the cluster-wide one */
    f.runtime = "torch";
    run(JOBS_DOC, PODOF(TRAINER("node"), "{'name':'node'," GPU8 "}"), &f, &res);
    assert_string_equal(res.profile->name, "wide");
    mutate_result_free(&res);
    run(JOBS_DOC, PODOF(MPI("worker"), "{'name':'w'," GPU8 "}"), NULL, &res);
    assert_string_equal(res.profile->name, "wide");
    mutate_result_free(&res);
}

TEST(test_annotation_names_other_jobs_profile)
{
    struct mutate_result res;

    run(JOBS_DOC,
        "{'metadata':{'name':'p','labels':{" MPI(
            "worker") "},'annotations':{"
                      "'rdma-webhook.io/profile':'ds'}},'spec':{'containers':[{'name':'w'," GPU8
                      "}]}}",
        NULL, &res);
    assert_int_equal(res.reason, MUTATE_R_UNKNOWN_PROFILE);
    assert_int_equal(res.warnings.n, 1);
    assert_string_equal(res.warnings.text[0],
                        "rdma-webhook: change rdma-webhook.io/profile: \"ds\" is limited to other "
                        "job kinds or runtimes; nothing added");
    assert_string_equal(select_rule_name(SELECT_OTHER_JOBS), "other-jobs");
    mutate_result_free(&res);
}

/* A default limited to a kind comes before the cluster-wide default. */
TEST(test_limited_default_first)
{
    struct mutate_result res;
    const char *doc = "{'profiles':[{'name':'all','default':true},{'name':'vc','default':true,"
                      "'match':{'jobKinds':['VolcanoJob']}}]}";

    run(doc, PODOF(VOLCANO, "{'name':'w'," GPU8 "}"), NULL, &res);
    assert_string_equal(res.profile->name, "vc");
    assert_int_equal(res.rule, SELECT_BY_DEFAULT);
    mutate_result_free(&res);
    run(doc, PODOF(MPI("worker"), "{'name':'w'," GPU8 "}"), NULL, &res);
    assert_string_equal(res.profile->name, "all");
    mutate_result_free(&res);
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, teardown)
    const struct CMUnitTest tests[] = {
        T(test_kind_names_agree),
        T(test_trainjob_node_and_launcher_are_targets),
        T(test_trainjob_initializer_never),
        T(test_trainjob_off),
        T(test_trainjob_fallback_container_node),
        T(test_plain_jobset_by_targets_jobset),
        T(test_owner_unknown_no_guess),
        T(test_mpijob_worker_and_launchers),
        T(test_mpijob_no_container_warning),
        T(test_volcano),
        T(test_job_limits_read),
        T(test_job_limits_refused),
        T(test_job_limited_copy_and_defaults),
        T(test_job_limited_pairs),
        T(test_limited_profile_preferred),
        T(test_annotation_names_other_jobs_profile),
        T(test_limited_default_first),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
