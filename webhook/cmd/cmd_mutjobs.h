/* cmd_mutjobs: the job documents `mutate` takes, read as the pods their
 * controllers would create. For a PyTorchJob, an MPIJob, a Volcano Job and a
 * JobSet: where each pod template is (a JSON Pointer into the document), the
 * job and role its pods belong to (struct mutate_job, as the controller's
 * labels would say it; a JobSet a TrainJob controls is the TrainJob's), and
 * whether it is a target by definition. For a
 * TrainJob: its runtime found among the input's objects, and the two
 * expanded into a List of v1 PodTemplates, one per replicated job, with the
 * TrainJob's overrides applied as Trainer v2.3 applies them
 * (docs/reference.md "mutate" lists which and which not).
 *
 * It reads and builds documents and mutates nothing: cmd_mutate runs the
 * admission on each template this module names. Every walk is bounded
 * (CMD_MUTJOBS_TEMPLATES_MAX templates, CMD_MUTJOBS_ENV_MAX overrides), and
 * a name too long for its buffer is an error, never cut.
 */
#ifndef RDMA_WEBHOOK_CMD_MUTJOBS_H
#define RDMA_WEBHOOK_CMD_MUTJOBS_H

#include "admission/mutate.h"

#include <stddef.h>

struct cJSON;

/* Templates of one job: replica specs, tasks, replicated jobs. A job with
 * more is an error (no controller's real job comes near). */
#define CMD_MUTJOBS_TEMPLATES_MAX 64
/* Entries of spec.trainer.env, and of a resources map, a TrainJob may give. */
#define CMD_MUTJOBS_ENV_MAX 1024

enum cmd_mutjobs_layout {
    CMD_MUTJOBS_REPLICAS, /* spec.FIELD: {Type: {template}} (PyTorchJob, MPIJob) */
    CMD_MUTJOBS_TASKS,    /* spec.tasks: [{name, template}] (Volcano Job) */
    CMD_MUTJOBS_RJOBS,    /* spec.replicatedJobs: [{name, template.spec.template}] (JobSet) */
    CMD_MUTJOBS_TRAINJOB, /* expanded with its runtime into PodTemplates */
};

/* A job kind `mutate` takes, and the targets bit without which its pods are
 * no targets (0: always, a PyTorchJob). */
struct cmd_mutjobs_kind {
    const char *kind;
    const char *group; /* apiVersion's start; NULL: any */
    const char *field; /* under spec */
    enum cmd_mutjobs_layout layout;
    enum mutate_job_kind job;
    unsigned target_bit;
    const char *target_name; /* "targets.mpijob" */
};

/* The kind doc (of kind, its own or its List's) is, or NULL. */
const struct cmd_mutjobs_kind *cmd_mutjobs_kind_of(const struct cJSON *doc, const char *kind);

/* "replica Worker (spec.mpiReplicaSpecs.Worker.template)", in a title. */
#define CMD_MUTJOBS_WHAT_MAX 192

/* One pod template of a job, as the admission is to read it. */
struct cmd_mutjobs_template {
    const struct cJSON *tmpl;
    char base[256];                  /* its JSON Pointer in the document */
    char what[CMD_MUTJOBS_WHAT_MAX]; /* for --explain's title */
    char role[64];                   /* job.role points here or into the document */
    struct mutate_job job;           /* strings borrowed from the documents */
    int implicit;                    /* a target by definition (mutate_input.implicit_target) */
    /* The pod's labels its controller writes that the template lacks and
     * the target rule reads (an MPIJob's launcher): NULL-terminated pairs. */
    const char *labels[8];
};

/* Called for each template; a non-zero return stops the walk. */
typedef int (*cmd_mutjobs_fn)(void *ctx, struct cmd_mutjobs_template *t);

/* Calls fn for each pod template of doc, of kind k. For a TrainJob, doc is
 * the List cmd_mutjobs_trainjob() made and owner the TrainJob (names come
 * from it); owner is unused otherwise. Returns fn's first non-zero result,
 * 0, or -1 with what is wrong in err (no templates where k has them, too
 * many, a name that does not fit). */
int cmd_mutjobs_each(const struct cJSON *doc, const struct cmd_mutjobs_kind *k,
                     const struct cJSON *owner, cmd_mutjobs_fn fn, void *ctx, char *err,
                     size_t errlen);

/* Adds t->labels to the copy of t->tmpl the admission reads, its own values
 * kept: ERR_OK, or ERR_NOMEM. */
int cmd_mutjobs_label_copy(struct cJSON *copy, const struct cmd_mutjobs_template *t);

/* 1 when o (kind, or list_kind for an item that names none) is the runtime
 * trainjob's spec.runtimeRef names (kind ClusterTrainingRuntime by default,
 * or TrainingRuntime in ns, the TrainJob's namespace; default_ns is the one
 * of an object that names none). */
int cmd_mutjobs_is_runtime(const struct cJSON *o, const char *list_kind,
                           const struct cJSON *trainjob, const char *ns, const char *default_ns);

/* "ClusterTrainingRuntime torch-distributed", for the error of a TrainJob
 * whose runtime the input lacks: into out, which it returns. */
const char *cmd_mutjobs_runtime_named(const struct cJSON *trainjob, char *out, size_t outlen);

/* The TrainJob (in namespace ns) with its runtime as a List of PodTemplates
 * TRAINJOB-RJOB in *list (the caller's): ERR_OK, or ERR_FAIL / ERR_NOMEM
 * with why in err. Sets *notes to a static line about what of the TrainJob
 * is not applied offline (runtimePatches, a torchtune command), or NULL. */
int cmd_mutjobs_trainjob(const struct cJSON *trainjob, const struct cJSON *runtime, const char *ns,
                         struct cJSON **list, const char **notes, char *err, size_t errlen);

#endif
