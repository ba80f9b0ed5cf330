#include "admission/mutjob.h"

#include "admission/mutate_ctx.h"
#include "admission/podjson.h"
#include "admission/profiles.h"

#include <cjson/cJSON.h>
#include <string.h>

const char *mutate_job_kind_name(enum mutate_job_kind kind)
{
    static const char *const names[MUTATE_JOB_KINDS] = {
        "", "PyTorchJob", "TrainJob", "JobSet", "MPIJob", "VolcanoJob",
    };

    return (unsigned)kind < MUTATE_JOB_KINDS ? names[kind] : "";
}

static int mutjob_has_prefix(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The controlling owner reference, or NULL. */
static const cJSON *mutjob_controller(struct mutate_ctx *m)
{
    const cJSON *ref;

    cJSON_ArrayForEach(ref, podjson_arr(&m->r, m->metadata, "ownerReferences"))
    {
        if (podjson_bool(&m->r, ref, "controller"))
            return ref;
    }
    return NULL;
}

/* The kind a controlling owner names, or NONE. */
static enum mutate_job_kind mutjob_owner_kind(struct mutate_ctx *m, const cJSON *ref)
{
    const char *api = podjson_str(&m->r, ref, "apiVersion");
    const char *kind = podjson_str(&m->r, ref, "kind");

    if (!kind)
        return MUTATE_JOB_NONE;
    if (mutjob_has_prefix(api, "kubeflow.org/") && strcmp(kind, "PyTorchJob") == 0)
        return MUTATE_JOB_PYTORCHJOB;
    if (mutjob_has_prefix(api, "kubeflow.org/") && strcmp(kind, "MPIJob") == 0)
        return MUTATE_JOB_MPIJOB;
    if (mutjob_has_prefix(api, "batch.volcano.sh/") && strcmp(kind, "Job") == 0)
        return MUTATE_JOB_VOLCANOJOB;
    return MUTATE_JOB_NONE;
}

/* The kind the labels name, or NONE. */
static enum mutate_job_kind mutjob_label_kind(struct mutate_ctx *m, const cJSON *labels)
{
    const char *op = podjson_str(&m->r, labels, MUTJOB_LABEL_OPERATOR);

    if (op && strcmp(op, "pytorchjob-controller") == 0)
        return MUTATE_JOB_PYTORCHJOB;
    if (op && (strcmp(op, "mpi-operator") == 0 || strcmp(op, "mpijob-controller") == 0))
        return MUTATE_JOB_MPIJOB;
    if (podjson_str(&m->r, labels, MUTJOB_LABEL_VOLCANO_JOB))
        return MUTATE_JOB_VOLCANOJOB;
    if (podjson_str(&m->r, labels, MUTJOB_LABEL_JOBSET))
        return MUTATE_JOB_JOBSET;
    return MUTATE_JOB_NONE;
}

/* The replica the pod is of, by the label its controller writes. */
static const char *mutjob_role(struct mutate_ctx *m, const cJSON *labels, enum mutate_job_kind k)
{
    switch (k) {
    case MUTATE_JOB_PYTORCHJOB:
    case MUTATE_JOB_MPIJOB: {
        const char *role = podjson_str(&m->r, labels, MUTJOB_LABEL_JOB_ROLE);
        const char *type = podjson_str(&m->r, labels, MUTJOB_LABEL_REPLICA_TYPE);

        return k == MUTATE_JOB_MPIJOB && role ? role : type;
    }
    case MUTATE_JOB_TRAINJOB:
    case MUTATE_JOB_JOBSET: return podjson_str(&m->r, labels, MUTJOB_LABEL_REPLICATED);
    case MUTATE_JOB_VOLCANOJOB: return podjson_str(&m->r, labels, MUTJOB_LABEL_VOLCANO_TASK);
    default: return NULL;
    }
}

/* A JobSet's pod: whose the JobSet is, when the targets make it matter. */
static void mutjob_jobset(struct mutate_ctx *m, const cJSON *labels)
{
    struct mutate_job *job = &m->res->job;
    const char *name = podjson_str(&m->r, labels, MUTJOB_LABEL_JOBSET);
    enum mutate_lookup got = MUTATE_LOOKUP_UNKNOWN;

    job->name = name;
    if (!(m->ps->targets & (PROFILES_TARGET_TRAINJOB | PROFILES_TARGET_JOBSET)))
        return;
    if (m->hooks && m->hooks->jobset_owner && name && m->in->namespace_)
        got = m->hooks->jobset_owner(m->hooks->ctx, m->in->namespace_, name, job, m->res->job_buf,
                                     sizeof(m->res->job_buf));
    if (got == MUTATE_LOOKUP_UNKNOWN)
        m->job_unknown = 1;
    if (got != MUTATE_LOOKUP_FOUND)
        job->kind = MUTATE_JOB_JOBSET;
}

void mutjob_identify(struct mutate_ctx *m)
{
    struct mutate_job *job = &m->res->job;
    const cJSON *labels = podjson_obj(&m->r, m->metadata, "labels");
    const cJSON *owner;

    if (m->in->job) {
        *job = *m->in->job;
        return;
    }
    memset(job, 0, sizeof(*job));
    owner = mutjob_controller(m);
    job->kind = owner ? mutjob_owner_kind(m, owner) : MUTATE_JOB_NONE;
    if (job->kind != MUTATE_JOB_NONE) {
        job->name = podjson_str(&m->r, owner, "name");
        job->api_version = podjson_str(&m->r, owner, "apiVersion");
        job->uid = podjson_str(&m->r, owner, "uid");
    } else {
        job->kind = mutjob_label_kind(m, labels);
        if (job->kind == MUTATE_JOB_JOBSET)
            mutjob_jobset(m, labels);
        else if (job->kind != MUTATE_JOB_NONE)
            job->name = podjson_str(&m->r, labels,
                                    job->kind == MUTATE_JOB_VOLCANOJOB ? MUTJOB_LABEL_VOLCANO_JOB
                                                                       : MUTJOB_LABEL_JOB_NAME);
    }
    job->role = mutjob_role(m, labels, job->kind);
    job->ssh_ranks = job->ssh_ranks || job->kind == MUTATE_JOB_MPIJOB;
}
