#include "admission/target.h"

#include "admission/mutate.h"
#include "admission/podjson.h"
#include "admission/profiles.h"

#include <cjson/cJSON.h>
#include <string.h>
#include <strings.h>

#define TARGET_LABEL_OPERATOR "training.kubeflow.org/operator-name"

static int target_has_prefix(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* 1 when the controlling owner reference has an apiVersion in group (given as
 * "kubeflow.org/") and the kind. */
static int target_owned_by(struct podjson *r, const cJSON *metadata, const char *group,
                           const char *kind)
{
    const cJSON *refs = podjson_arr(r, metadata, "ownerReferences");
    const cJSON *ref;

    cJSON_ArrayForEach(ref, refs)
    {
        const char *api = podjson_str(r, ref, "apiVersion");
        const char *k = podjson_str(r, ref, "kind");

        if (podjson_bool(r, ref, "controller") && target_has_prefix(api, group) && k &&
            strcmp(k, kind) == 0)
            return 1;
    }
    return 0;
}

/* 1 for "true", 0 for "false", -1 for any other value or none. */
static int target_inject_word(const char *v)
{
    if (v && strcmp(v, "true") == 0)
        return 1;
    if (v && strcmp(v, "false") == 0)
        return 0;
    return -1;
}

const char *target_inject_ignored(struct podjson *r, const cJSON *metadata, const char **where)
{
    const char *a =
        podjson_str(r, podjson_obj(r, metadata, "annotations"), TARGET_ANNOTATION_INJECT);
    const char *l = podjson_str(r, podjson_obj(r, metadata, "labels"), TARGET_ANNOTATION_INJECT);

    *where = a && target_inject_word(a) < 0 ? "annotation" : "label";
    if (a && target_inject_word(a) < 0)
        return a;
    return l && target_inject_word(l) < 0 ? l : NULL;
}

int target_namespace_inject_known(const char *value)
{
    return !value || target_inject_word(value) >= 0 || strcmp(value, "enabled") == 0;
}

/* 1 when one of the regular containers asks for a GPU or RDMA device. */
static int target_any_wants_devices(struct podjson *r, const cJSON *spec, const struct profiles *ps)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, podjson_arr(r, spec, "containers"))
    {
        if (target_container_wants_devices(r, c, ps))
            return 1;
    }
    return 0;
}

static int target_role_is(const struct mutate_job *job, const char *role)
{
    return job->role && strcasecmp(job->role, role) == 0;
}

/* A TrainJob's pod: its trainer nodes (and an MPI runtime's launcher), never
 * its initializers (dataset-initializer, model-initializer), which only
 * download. */
static int target_trainer(const struct mutate_job *job)
{
    return job->role && (strcmp(job->role, "node") == 0 || strcmp(job->role, "launcher") == 0);
}

/* A JobSet's pod: a TrainJob's, or a plain JobSet's, and which of them
 * could not be told when unknown. Both readings agreeing decide; otherwise
 * no guess: TARGET_JOB_UNKNOWN. */
static enum target_verdict target_jobset(const struct profiles *ps, const struct mutate_job *job,
                                         int unknown, const char **why)
{
    int as_trainjob = (ps->targets & PROFILES_TARGET_TRAINJOB) && target_trainer(job);
    int as_jobset = !!(ps->targets & PROFILES_TARGET_JOBSET);

    if (unknown && as_trainjob != as_jobset) {
        *why = "a JobSet's pod, and whether a TrainJob owns the JobSet could not be read";
        return TARGET_JOB_UNKNOWN;
    }
    if (unknown) {
        *why = as_jobset ? "a JobSet's pod, a target as a TrainJob's and as a plain JobSet's"
                         : "a JobSet's pod, a target neither as a TrainJob's nor as a plain "
                           "JobSet's";
        return as_jobset ? TARGET_YES : TARGET_NO;
    }
    *why = as_jobset ? "a JobSet's pod (no TrainJob owns it), and targets.jobset is on"
                     : "a JobSet's pod (no TrainJob owns it), and targets.jobset is off";
    return as_jobset ? TARGET_YES : TARGET_NO;
}

/* A launcher (an MPIJob's, an MPI runtime's replicated job "launcher") that
 * asks for no device itself: it only starts mpirun, so no RDMA resource is
 * wasted on it and it is no target, without a warning. */
static int target_idle_launcher(struct podjson *r, const cJSON *spec, const struct profiles *ps,
                                const struct mutate_job *job)
{
    return target_role_is(job, "launcher") && !target_any_wants_devices(r, spec, ps);
}

static enum target_verdict target_trainjob(struct podjson *r, const cJSON *spec,
                                           const struct profiles *ps, const struct mutate_job *job,
                                           const char **why)
{
    if (!(ps->targets & PROFILES_TARGET_TRAINJOB)) {
        *why = "a TrainJob's pod, and targets.trainjob is off";
        return TARGET_NO;
    }
    if (!target_trainer(job)) {
        *why = "a TrainJob's pod, but not of its replicated job \"node\" or \"launcher\" (an "
               "initializer): never a target";
        return TARGET_NO;
    }
    if (target_idle_launcher(r, spec, ps, job)) {
        *why = "a TrainJob's launcher that asks for no GPU or RDMA device (it only starts mpirun)";
        return TARGET_NO;
    }
    *why = strcmp(job->role, "node") == 0
               ? "a TrainJob's trainer pod (replicated job \"node\"), and targets.trainjob is on"
               : "a TrainJob's launcher pod (replicated job \"launcher\") that asks for a GPU or "
                 "RDMA device, and targets.trainjob is on";
    return TARGET_YES;
}

/* An MPIJob's pod: its workers; its launcher only when it asks for a device
 * itself (mpirun alone needs no RDMA resource, and none is wasted on it). */
static enum target_verdict target_mpijob(struct podjson *r, const cJSON *spec,
                                         const struct profiles *ps, const struct mutate_job *job,
                                         const char **why)
{
    if (!(ps->targets & PROFILES_TARGET_MPIJOB)) {
        *why = "an MPIJob's pod, and targets.mpijob is off";
        return TARGET_NO;
    }
    if (!target_role_is(job, "launcher")) {
        *why = "an MPIJob's pod, and targets.mpijob is on";
        return TARGET_YES;
    }
    if (!target_idle_launcher(r, spec, ps, job)) {
        *why = "an MPIJob's launcher that asks for a GPU or RDMA device, and targets.mpijob is on";
        return TARGET_YES;
    }
    *why = "an MPIJob's launcher that asks for no GPU or RDMA device (it only starts mpirun)";
    return TARGET_NO;
}

/* The job kind decides, as the profiles' targets say. */
static enum target_verdict target_by_job(struct podjson *r, const cJSON *metadata,
                                         const cJSON *spec, const struct profiles *ps,
                                         const struct mutate_job *job, int job_unknown,
                                         const char **why)
{
    switch (job->kind) {
    case MUTATE_JOB_PYTORCHJOB:
        *why = target_owned_by(r, metadata, "kubeflow.org/", "PyTorchJob")
                   ? "its controlling owner is a PyTorchJob"
                   : "label " TARGET_LABEL_OPERATOR ": pytorchjob-controller";
        return TARGET_YES;
    case MUTATE_JOB_TRAINJOB: return target_trainjob(r, spec, ps, job, why);
    case MUTATE_JOB_JOBSET: return target_jobset(ps, job, job_unknown, why);
    case MUTATE_JOB_MPIJOB: return target_mpijob(r, spec, ps, job, why);
    case MUTATE_JOB_VOLCANOJOB:
        *why = ps->targets & PROFILES_TARGET_VOLCANOJOB
                   ? "a Volcano Job's pod, and targets.volcanojob is on"
                   : "a Volcano Job's pod, and targets.volcanojob is off";
        return ps->targets & PROFILES_TARGET_VOLCANOJOB ? TARGET_YES : TARGET_NO;
    default:
        *why = "no PyTorchJob, TrainJob, JobSet, MPIJob or Volcano Job owns it, "
               "no " TARGET_ANNOTATION_INJECT ": \"true\"";
        return TARGET_NO;
    }
}

enum target_verdict target_pod(struct podjson *r, const cJSON *metadata, const cJSON *spec,
                               const struct profiles *ps, const struct mutate_job *job,
                               int job_unknown, const char **why)
{
    const cJSON *annotations = podjson_obj(r, metadata, "annotations");
    const cJSON *labels = podjson_obj(r, metadata, "labels");
    /* The label form exists because a webhook's objectSelector can match
     * labels but not annotations: it is how opted-in pods reach us at all.
     * An annotation that is no word of the vocabulary is no annotation: the
     * label that brought the pod here decides. */
    int a = target_inject_word(podjson_str(r, annotations, TARGET_ANNOTATION_INJECT));
    int by_label = a < 0;
    int inject =
        by_label ? target_inject_word(podjson_str(r, labels, TARGET_ANNOTATION_INJECT)) : a;
    const char *unused;

    if (!why)
        why = &unused;
    if (inject == 0) {
        *why = by_label ? "label " TARGET_ANNOTATION_INJECT ": \"false\""
                        : "annotation " TARGET_ANNOTATION_INJECT ": \"false\"";
        return TARGET_OPTED_OUT;
    }
    if (inject == 1) {
        *why = by_label ? "label " TARGET_ANNOTATION_INJECT ": \"true\""
                        : "annotation " TARGET_ANNOTATION_INJECT ": \"true\"";
        return TARGET_YES;
    }
    return target_by_job(r, metadata, spec, ps, job, job_unknown, why);
}

const char *target_fallback_container(const struct mutate_job *job)
{
    switch (job ? job->kind : MUTATE_JOB_NONE) {
    /* A pod that opts in, or a job's template `mutate` reads: as before
     * job kinds, the training-operator's default. */
    case MUTATE_JOB_NONE:
    case MUTATE_JOB_PYTORCHJOB: return "pytorch";
    /* Trainer v2's runtimes name the trainer's container "node". */
    case MUTATE_JOB_TRAINJOB:
    case MUTATE_JOB_JOBSET: return "node";
    default: return NULL;
    }
}

static int target_map_has_prefix(const cJSON *map, const char *prefix, size_t prefix_len)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, map)
    {
        if (it->string && strncmp(it->string, prefix, prefix_len) == 0)
            return 1;
    }
    return 0;
}

int target_container_asks_prefix(struct podjson *r, const cJSON *container, const char *prefix,
                                 size_t prefix_len)
{
    const cJSON *res = podjson_obj(r, container, "resources");

    return target_map_has_prefix(podjson_obj(r, res, "limits"), prefix, prefix_len) ||
           target_map_has_prefix(podjson_obj(r, res, "requests"), prefix, prefix_len);
}

int target_container_wants_devices(struct podjson *r, const cJSON *container,
                                   const struct profiles *ps)
{
    const cJSON *res = podjson_obj(r, container, "resources");
    const cJSON *limits = podjson_obj(r, res, "limits");
    const cJSON *requests = podjson_obj(r, res, "requests");

    for (size_t i = 0; i < ps->n_gpu_resources; i++) {
        if (podjson_member(limits, ps->gpu_resources[i]) ||
            podjson_member(requests, ps->gpu_resources[i]))
            return 1;
    }
    return target_map_has_prefix(limits, ps->rdma_prefix, strlen(ps->rdma_prefix)) ||
           target_map_has_prefix(requests, ps->rdma_prefix, strlen(ps->rdma_prefix));
}

/* The first key of map that starts with prefix, or NULL. */
static const char *target_map_prefixed(const cJSON *map, const char *prefix, size_t prefix_len)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, map)
    {
        if (it->string && strncmp(it->string, prefix, prefix_len) == 0)
            return it->string;
    }
    return NULL;
}

const char *target_container_device(struct podjson *r, const cJSON *container,
                                    const struct profiles *ps)
{
    const cJSON *res = podjson_obj(r, container, "resources");
    const cJSON *limits = podjson_obj(r, res, "limits");
    const cJSON *requests = podjson_obj(r, res, "requests");
    const char *rdma;

    for (size_t i = 0; i < ps->n_gpu_resources; i++) {
        if (podjson_member(limits, ps->gpu_resources[i]) ||
            podjson_member(requests, ps->gpu_resources[i]))
            return ps->gpu_resources[i];
    }
    rdma = target_map_prefixed(limits, ps->rdma_prefix, strlen(ps->rdma_prefix));
    return rdma ? rdma : target_map_prefixed(requests, ps->rdma_prefix, strlen(ps->rdma_prefix));
}

size_t target_each_container(struct podjson *r, const cJSON *containers, const struct profiles *ps,
                             const char *fallback, target_container_fn fn, void *ctx)
{
    const cJSON *c;
    size_t n = 0;
    int idx = 0;

    cJSON_ArrayForEach(c, containers)
    {
        if (target_container_wants_devices(r, c, ps)) {
            if (fn)
                fn(ctx, c, idx);
            n++;
        }
        idx++;
    }
    if (n || !fallback)
        return n;
    idx = 0;
    cJSON_ArrayForEach(c, containers)
    {
        const char *name = podjson_str(r, c, "name");

        if (name && strcmp(name, fallback) == 0) {
            if (fn)
                fn(ctx, c, idx);
            return 1;
        }
        idx++;
    }
    return 0;
}

static long long target_container_gpus(struct podjson *r, const cJSON *container,
                                       const struct profiles *ps)
{
    const cJSON *res = podjson_obj(r, container, "resources");
    const cJSON *limits = podjson_obj(r, res, "limits");
    const cJSON *requests = podjson_obj(r, res, "requests");
    long long sum = 0;

    for (size_t i = 0; i < ps->n_gpu_resources; i++) {
        const cJSON *q = podjson_member(limits, ps->gpu_resources[i]);
        long long v;

        if (!q)
            q = podjson_member(requests, ps->gpu_resources[i]);
        v = q ? podjson_whole_quantity(q) : -1;
        if (v > 0)
            sum += v;
    }
    return sum;
}

long long target_pod_gpus(struct podjson *r, const cJSON *spec, const struct profiles *ps)
{
    const cJSON *c;
    long long sum = 0;

    cJSON_ArrayForEach(c, podjson_arr(r, spec, "containers"))
    {
        if (sum < 1000000)
            sum += target_container_gpus(r, c, ps);
    }
    return sum;
}
