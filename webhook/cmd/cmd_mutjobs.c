#include "cmd/cmd_mutjobs.h"

#include "admission/mutjob.h"
#include "admission/patch.h"
#include "admission/profiles.h"
#include "base/k8sname.h"
#include "base/quantity.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Trainer v2.3's names (pkg/constants): the label that marks a replicated
 * job's step, the trainer's value, its container and port. */
#define CMD_MUTJOBS_ANCESTOR     "trainer.kubeflow.org/trainjob-ancestor-step"
#define CMD_MUTJOBS_TRAINER      "trainer"
#define CMD_MUTJOBS_NODE         "node"
#define CMD_MUTJOBS_LAUNCHER     "launcher"
#define CMD_MUTJOBS_TRAINER_PORT 29500
#define CMD_MUTJOBS_RANK_FIELD   "metadata.annotations['batch.kubernetes.io/job-completion-index']"
#define CMD_MUTJOBS_GROUP        "trainer.kubeflow.org"

static const struct cmd_mutjobs_kind cmd_mutjobs_kinds[] = {
    {"PyTorchJob", NULL, "pytorchReplicaSpecs", CMD_MUTJOBS_REPLICAS, MUTATE_JOB_PYTORCHJOB, 0,
     NULL},
    {"MPIJob", "kubeflow.org/", "mpiReplicaSpecs", CMD_MUTJOBS_REPLICAS, MUTATE_JOB_MPIJOB,
     PROFILES_TARGET_MPIJOB, "targets.mpijob"},
    {"Job", "batch.volcano.sh/", "tasks", CMD_MUTJOBS_TASKS, MUTATE_JOB_VOLCANOJOB,
     PROFILES_TARGET_VOLCANOJOB, "targets.volcanojob"},
    {"JobSet", "jobset.x-k8s.io/", "replicatedJobs", CMD_MUTJOBS_RJOBS, MUTATE_JOB_JOBSET,
     PROFILES_TARGET_JOBSET, "targets.jobset"},
    {"TrainJob", "trainer.kubeflow.org/", "runtimeRef", CMD_MUTJOBS_TRAINJOB, MUTATE_JOB_TRAINJOB,
     PROFILES_TARGET_TRAINJOB, "targets.trainjob"},
};

/* The JobSet Trainer made for a TrainJob (its controlling owner): its pods
 * are the TrainJob's. */
static const struct cmd_mutjobs_kind cmd_mutjobs_trainjob_jobset = {
    "JobSet",          "jobset.x-k8s.io/",  "replicatedJobs",
    CMD_MUTJOBS_RJOBS, MUTATE_JOB_TRAINJOB, PROFILES_TARGET_TRAINJOB,
    "targets.trainjob"};

static const cJSON *cmd_mutjobs_at(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *cmd_mutjobs_str(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static int cmd_mutjobs_has_prefix(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The controlling owner reference of doc when it is a TrainJob, or NULL. */
static const cJSON *cmd_mutjobs_trainjob_owner(const cJSON *doc)
{
    const cJSON *ref;

    cJSON_ArrayForEach(ref, cmd_mutjobs_at(cmd_mutjobs_at(doc, "metadata"), "ownerReferences"))
    {
        const char *kind = cmd_mutjobs_str(ref, "kind");

        if (cJSON_IsTrue(cmd_mutjobs_at(ref, "controller")) && kind &&
            strcmp(kind, "TrainJob") == 0 &&
            cmd_mutjobs_has_prefix(cmd_mutjobs_str(ref, "apiVersion"), "trainer.kubeflow.org/"))
            return ref;
    }
    return NULL;
}

const struct cmd_mutjobs_kind *cmd_mutjobs_kind_of(const cJSON *doc, const char *kind)
{
    const char *api = cmd_mutjobs_str(doc, "apiVersion");

    for (size_t i = 0; i < sizeof(cmd_mutjobs_kinds) / sizeof(cmd_mutjobs_kinds[0]); i++) {
        const struct cmd_mutjobs_kind *k = &cmd_mutjobs_kinds[i];

        if (strcmp(kind, k->kind) != 0 || (k->group && !cmd_mutjobs_has_prefix(api, k->group)))
            continue;
        if (k->layout == CMD_MUTJOBS_RJOBS && cmd_mutjobs_trainjob_owner(doc))
            return &cmd_mutjobs_trainjob_jobset;
        return k;
    }
    return NULL;
}

/* ---- the templates of a job ---- */

/* The walk's state: the job, its owner (a TrainJob's), the callback. */
struct cmd_mutjobs_walk {
    const cJSON *doc, *owner;
    const struct cmd_mutjobs_kind *k;
    cmd_mutjobs_fn fn;
    void *ctx;
    int ssh_ranks;
};

/* Lower-cased, as the training-operator and mpi-operator write the replica
 * type into the pod's labels: ERR_OK, or ERR_FAIL when it does not fit. */
static int cmd_mutjobs_lower(const char *s, char *out, size_t outlen)
{
    size_t i;

    for (i = 0; s[i] && i + 1 < outlen; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
    return s[i] ? ERR_FAIL : ERR_OK;
}

/* Whether a list of named entries ([{name}]) has one named name. */
static int cmd_mutjobs_names(const cJSON *list, const char *name)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, list)
    {
        const char *n = cmd_mutjobs_str(it, "name");

        if (n && strcmp(n, name) == 0)
            return 1;
    }
    return 0;
}

/* A PyTorchJob's or an MPIJob's replica spec. mpi-operator v0.7 labels its
 * pods training.kubeflow.org/job-role launcher|worker (defaultLabels in
 * pkg/controller): the launcher is left to the target rule (it is a target
 * only when it asks for a device), so its copy gets those labels. */
static int cmd_mutjobs_replica(struct cmd_mutjobs_walk *w, const cJSON *rs,
                               struct cmd_mutjobs_template *t)
{
    char tok[128];

    if (patch_escape_token(rs->string, tok, sizeof(tok)) ||
        cmd_mutjobs_lower(rs->string, t->role, sizeof(t->role)))
        return 1; /* a replica type no controller knows; skipped, as before */
    snprintf(t->base, sizeof(t->base), "/spec/%s/%s/template", w->k->field, tok);
    snprintf(t->what, sizeof(t->what), "replica %.60s (spec.%s.%.60s.template)", rs->string,
             w->k->field, rs->string);
    if (w->k->job == MUTATE_JOB_MPIJOB) {
        t->job.ssh_ranks = 1;
        if (strcmp(t->role, CMD_MUTJOBS_LAUNCHER) == 0) {
            static const char *const labels[] = {MUTJOB_LABEL_OPERATOR, "mpi-operator",
                                                 MUTJOB_LABEL_JOB_ROLE, CMD_MUTJOBS_LAUNCHER, NULL};

            t->implicit = 0;
            memcpy(t->labels, labels, sizeof(labels));
        }
    }
    return 0;
}

/* A PodTemplate's replicated job, by the label JobSet writes, or NULL. */
static const char *cmd_mutjobs_template_role(const cJSON *item)
{
    const cJSON *meta = cmd_mutjobs_at(cmd_mutjobs_at(item, "template"), "metadata");

    return cmd_mutjobs_str(cmd_mutjobs_at(meta, "labels"), MUTJOB_LABEL_REPLICATED);
}

/* The template of entry i of the walk's list (tasks, replicated jobs, the
 * TrainJob's PodTemplates), or NULL. */
static const cJSON *cmd_mutjobs_entry(struct cmd_mutjobs_walk *w, const cJSON *e, int i,
                                      struct cmd_mutjobs_template *t)
{
    const char *name = cmd_mutjobs_str(e, "name");
    const cJSON *tmpl;

    switch (w->k->layout) {
    case CMD_MUTJOBS_TASKS:
        snprintf(t->base, sizeof(t->base), "/spec/tasks/%d/template", i);
        snprintf(t->what, sizeof(t->what), "task %.63s (spec.tasks[%d].template)",
                 name ? name : "?", i);
        tmpl = cmd_mutjobs_at(e, "template");
        break;
    case CMD_MUTJOBS_RJOBS:
        snprintf(t->base, sizeof(t->base), "/spec/replicatedJobs/%d/template/spec/template", i);
        snprintf(t->what, sizeof(t->what),
                 "replicated job %.63s (spec.replicatedJobs[%d].template.spec.template)",
                 name ? name : "?", i);
        tmpl = cmd_mutjobs_at(cmd_mutjobs_at(cmd_mutjobs_at(e, "template"), "spec"), "template");
        break;
    default: /* a PodTemplate of the TrainJob's List: the role is its label */
        tmpl = cmd_mutjobs_at(e, "template");
        name = cmd_mutjobs_template_role(e);
        snprintf(t->base, sizeof(t->base), "/items/%d/template", i);
        snprintf(t->what, sizeof(t->what), "replicated job %.63s (items[%d].template)",
                 name ? name : "?", i);
        t->job.runtime =
            cmd_mutjobs_str(cmd_mutjobs_at(cmd_mutjobs_at(w->owner, "spec"), "runtimeRef"), "name");
        /* Only the trainer's pods are targets by definition; an
         * initializer's are the target rule's to judge (never, today). */
        t->implicit = name && (strcmp(name, CMD_MUTJOBS_NODE) == 0 ||
                               strcmp(name, CMD_MUTJOBS_LAUNCHER) == 0);
    }
    t->job.role = name;
    return cJSON_IsObject(tmpl) ? tmpl : NULL;
}

static int cmd_mutjobs_one(struct cmd_mutjobs_walk *w, const cJSON *e, int i)
{
    const cJSON *meta = cmd_mutjobs_at(w->owner ? w->owner : w->doc, "metadata");
    struct cmd_mutjobs_template t;

    memset(&t, 0, sizeof(t));
    t.implicit = 1;
    t.job.kind = w->k->job;
    t.job.name = cmd_mutjobs_str(meta, "name");
    t.job.api_version = cmd_mutjobs_str(w->owner ? w->owner : w->doc, "apiVersion");
    t.job.uid = cmd_mutjobs_str(meta, "uid");
    t.job.ssh_ranks = w->ssh_ranks;
    if (w->k->layout == CMD_MUTJOBS_RJOBS && w->k->job == MUTATE_JOB_TRAINJOB) {
        /* A TrainJob's JobSet: the job is the TrainJob that owns it. */
        const cJSON *ref = cmd_mutjobs_trainjob_owner(w->doc);
        const char *rj = cmd_mutjobs_str(e, "name");

        t.job.name = cmd_mutjobs_str(ref, "name");
        t.job.api_version = cmd_mutjobs_str(ref, "apiVersion");
        t.job.uid = cmd_mutjobs_str(ref, "uid");
        t.implicit =
            rj && (strcmp(rj, CMD_MUTJOBS_NODE) == 0 || strcmp(rj, CMD_MUTJOBS_LAUNCHER) == 0);
    }
    if (w->k->layout == CMD_MUTJOBS_REPLICAS) {
        t.tmpl = cmd_mutjobs_at(e, "template");
        if (!cJSON_IsObject(t.tmpl) || cmd_mutjobs_replica(w, e, &t))
            return 0;
        t.job.role = t.role;
    } else if (!(t.tmpl = cmd_mutjobs_entry(w, e, i, &t))) {
        return 0;
    }
    return w->fn(w->ctx, &t);
}

/* Where doc's templates are: an object or an array, as k's layout says. */
static const cJSON *cmd_mutjobs_list(const cJSON *doc, const struct cmd_mutjobs_kind *k)
{
    const cJSON *l = k->layout == CMD_MUTJOBS_TRAINJOB
                         ? cmd_mutjobs_at(doc, "items")
                         : cmd_mutjobs_at(cmd_mutjobs_at(doc, "spec"), k->field);

    if (k->layout == CMD_MUTJOBS_REPLICAS ? cJSON_IsObject(l) : cJSON_IsArray(l))
        return l;
    return NULL;
}

int cmd_mutjobs_each(const cJSON *doc, const struct cmd_mutjobs_kind *k, const cJSON *owner,
                     cmd_mutjobs_fn fn, void *ctx, char *err, size_t errlen)
{
    struct cmd_mutjobs_walk w = {doc, k->layout == CMD_MUTJOBS_TRAINJOB ? owner : NULL, k, fn, ctx,
                                 0};
    const cJSON *l = cmd_mutjobs_list(doc, k), *e;
    int i = 0, rc;

    if (!l)
        return err_set(err, errlen, ERR_FAIL, "%s has no spec.%s", k->kind, k->field);
    if (cJSON_GetArraySize(l) > CMD_MUTJOBS_TEMPLATES_MAX)
        return err_set(err, errlen, ERR_FAIL, "%s has more than %d pod templates", k->kind,
                       CMD_MUTJOBS_TEMPLATES_MAX);
    /* A JobSet's or a TrainJob's ranks are started over ssh by mpirun when
     * a replicated job is its launcher (an MPI runtime). */
    if (k->layout == CMD_MUTJOBS_RJOBS)
        w.ssh_ranks = cmd_mutjobs_names(l, CMD_MUTJOBS_LAUNCHER);
    cJSON_ArrayForEach(e, l)
    {
        const char *role = cmd_mutjobs_template_role(e);

        if (k->layout == CMD_MUTJOBS_TRAINJOB && role && strcmp(role, CMD_MUTJOBS_LAUNCHER) == 0)
            w.ssh_ranks = 1;
    }
    cJSON_ArrayForEach(e, l)
    {
        if ((rc = cmd_mutjobs_one(&w, e, i++)) != 0)
            return rc;
    }
    return 0;
}

int cmd_mutjobs_label_copy(cJSON *copy, const struct cmd_mutjobs_template *t)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(copy, "metadata"), *labels;

    if (!t->labels[0])
        return ERR_OK;
    if (!cJSON_IsObject(meta)) {
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "metadata");
        if (!(meta = cJSON_AddObjectToObject(copy, "metadata")))
            return ERR_NOMEM;
    }
    labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    if (!cJSON_IsObject(labels)) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "labels");
        if (!(labels = cJSON_AddObjectToObject(meta, "labels")))
            return ERR_NOMEM;
    }
    for (size_t i = 0; t->labels[i] && t->labels[i + 1]; i += 2)
        if (!cJSON_GetObjectItemCaseSensitive(labels, t->labels[i]) &&
            !cJSON_AddStringToObject(labels, t->labels[i], t->labels[i + 1]))
            return ERR_NOMEM;
    return ERR_OK;
}

/* ---- a TrainJob's runtime ---- */

/* spec.runtimeRef's kind, defaulted as the CRD defaults it. */
static const char *cmd_mutjobs_ref_kind(const cJSON *trainjob)
{
    const char *k =
        cmd_mutjobs_str(cmd_mutjobs_at(cmd_mutjobs_at(trainjob, "spec"), "runtimeRef"), "kind");

    return k && *k ? k : "ClusterTrainingRuntime";
}

int cmd_mutjobs_is_runtime(const cJSON *o, const char *list_kind, const cJSON *trainjob,
                           const char *ns, const char *default_ns)
{
    const cJSON *ref = cmd_mutjobs_at(cmd_mutjobs_at(trainjob, "spec"), "runtimeRef");
    const char *want = cmd_mutjobs_str(ref, "name"), *group = cmd_mutjobs_str(ref, "apiGroup");
    const char *kind = cmd_mutjobs_str(o, "kind"), *api = cmd_mutjobs_str(o, "apiVersion");
    const char *name = cmd_mutjobs_str(cmd_mutjobs_at(o, "metadata"), "name");
    const char *ons = cmd_mutjobs_str(cmd_mutjobs_at(o, "metadata"), "namespace");

    if (!kind || !*kind)
        kind = list_kind;
    if (!want || !name || !kind || strcmp(name, want) != 0 ||
        strcmp(kind, cmd_mutjobs_ref_kind(trainjob)) != 0)
        return 0;
    if (!cmd_mutjobs_has_prefix(api, group && *group ? group : CMD_MUTJOBS_GROUP))
        return 0;
    if (strcmp(kind, "TrainingRuntime") != 0)
        return 1; /* cluster-scoped: any namespace's TrainJob may use it */
    return strcmp(ons && *ons ? ons : default_ns, ns) == 0;
}

const char *cmd_mutjobs_runtime_named(const cJSON *trainjob, char *out, size_t outlen)
{
    const char *name =
        cmd_mutjobs_str(cmd_mutjobs_at(cmd_mutjobs_at(trainjob, "spec"), "runtimeRef"), "name");

    snprintf(out, outlen, "%s %.63s", cmd_mutjobs_ref_kind(trainjob), name ? name : "(none)");
    return out;
}

/* ---- a TrainJob's PodTemplates ---- */

/* What the expansion reads once. */
struct cmd_mutjobs_tj {
    const cJSON *trainjob;
    const char *name;
    const cJSON *trainer;  /* spec.trainer, or NULL */
    const cJSON *mlpolicy; /* the runtime's spec.mlPolicy, or NULL */
    int torch;             /* mlPolicy.torch: the torch plugin's envs */
    int launcher_as_node;  /* mlPolicy.mpi.runLauncherAsNode */
};

/* The container named name of a pod spec, or NULL. */
static cJSON *cmd_mutjobs_container(cJSON *spec, const char *name)
{
    cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "containers"))
    {
        const char *n = cmd_mutjobs_str(c, "name");

        if (n && strcmp(n, name) == 0)
            return c;
    }
    return NULL;
}

/* o[key] = a copy of v (replacing what was there): ERR_OK, or ERR_NOMEM. */
static int cmd_mutjobs_set(cJSON *o, const char *key, const cJSON *v)
{
    cJSON *copy = cJSON_Duplicate(v, 1);

    if (!copy)
        return ERR_NOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    if (cJSON_AddItemToObject(o, key, copy))
        return ERR_OK;
    cJSON_Delete(copy);
    return ERR_NOMEM;
}

/* o[key] as an array or object (made when absent or of another type), or NULL. */
static cJSON *cmd_mutjobs_member(cJSON *o, const char *key, int array)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);

    if (array ? cJSON_IsArray(m) : cJSON_IsObject(m))
        return m;
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    return array ? cJSON_AddArrayToObject(o, key) : cJSON_AddObjectToObject(o, key);
}

/* Trainer's apply.UpsertEnvVars: each of env replaces the entry of its name
 * in the container's env, or is appended. */
static int cmd_mutjobs_upsert_env(cJSON *container, const cJSON *env)
{
    cJSON *list = cmd_mutjobs_member(container, "env", 1);
    const cJSON *e;

    if (!list)
        return ERR_NOMEM;
    cJSON_ArrayForEach(e, env)
    {
        const char *name = cmd_mutjobs_str(e, "name");
        cJSON *have, *copy;

        if (!name)
            continue; /* the apiserver refuses an env var without a name */
        cJSON_ArrayForEach(have, list)
        {
            const char *n = cmd_mutjobs_str(have, "name");

            if (n && strcmp(n, name) == 0)
                break;
        }
        if (!(copy = cJSON_Duplicate(e, 1)))
            return ERR_NOMEM;
        if (have ? !cJSON_ReplaceItemViaPointer(list, have, copy)
                 : !cJSON_AddItemToArray(list, copy)) {
            cJSON_Delete(copy);
            return ERR_NOMEM;
        }
    }
    return ERR_OK;
}

/* The container's resources merged with resourcesPerNode as Trainer's
 * strategic merge does it: limits and requests key by key, the TrainJob's
 * value winning. */
static int cmd_mutjobs_resources(cJSON *container, const cJSON *per_node)
{
    static const char *const maps[] = {"limits", "requests"};
    cJSON *res = cmd_mutjobs_member(container, "resources", 0);

    if (!res)
        return ERR_NOMEM;
    for (size_t i = 0; i < 2; i++) {
        const cJSON *want = cmd_mutjobs_at(per_node, maps[i]), *q;
        cJSON *have;

        if (!cJSON_IsObject(want))
            continue;
        if (!(have = cmd_mutjobs_member(res, maps[i], 0)))
            return ERR_NOMEM;
        cJSON_ArrayForEach(q, want)
        {
            if (q->string && cmd_mutjobs_set(have, q->string, q))
                return ERR_NOMEM;
        }
    }
    return ERR_OK;
}

/* A quantity's whole value as resource.Quantity.Value() rounds it (up),
 * for the plain and milli forms; -1 for another. */
static long long cmd_mutjobs_quantity(const cJSON *q)
{
    const char *s = cJSON_GetStringValue(q);
    long long v;
    size_t n;

    if (cJSON_IsNumber(q))
        return q->valuedouble >= 0 && q->valuedouble < 1e15 ? (long long)q->valuedouble : -1;
    if (!s)
        return -1;
    if (quantity_whole(s, &v) == ERR_OK)
        return v;
    n = strlen(s);
    if (n >= 2 && n < 20 && s[n - 1] == 'm') {
        char digits[20];

        memcpy(digits, s, n - 1);
        digits[n - 1] = '\0';
        if (quantity_whole(digits, &v) == ERR_OK)
            return (v + 999) / 1000;
    }
    return -1;
}

/* runtime.GetNumGPUPerNode: the first resource whose name holds "gpu",
 * requests before limits. */
static long long cmd_mutjobs_gpus(const cJSON *res)
{
    static const char *const maps[] = {"requests", "limits"};

    for (size_t i = 0; i < 2; i++) {
        const cJSON *q;

        cJSON_ArrayForEach(q, cmd_mutjobs_at(res, maps[i]))
        {
            char lower[128];

            if (q->string && cmd_mutjobs_lower(q->string, lower, sizeof(lower)) == ERR_OK &&
                strstr(lower, "gpu") && cmd_mutjobs_quantity(q) > 0)
                return cmd_mutjobs_quantity(q);
        }
    }
    return 0;
}

/* PET_NPROC_PER_NODE as the torch plugin chooses it: numProcPerNode, else
 * "auto" with GPUs, else the CPUs (requests before limits, at least 1). */
static void cmd_mutjobs_nproc(const struct cmd_mutjobs_tj *tj, const cJSON *res, char *out,
                              size_t outlen)
{
    const cJSON *n = cmd_mutjobs_at(tj->trainer, "numProcPerNode");
    const cJSON *per_node = cmd_mutjobs_at(tj->trainer, "resourcesPerNode");
    long long cpu;

    if (cJSON_IsObject(per_node))
        res = per_node;
    if (cJSON_IsNumber(n)) {
        snprintf(out, outlen, "%d", n->valueint);
        return;
    }
    if (cmd_mutjobs_gpus(res) > 0) {
        snprintf(out, outlen, "auto");
        return;
    }
    cpu = cmd_mutjobs_quantity(cmd_mutjobs_at(cmd_mutjobs_at(res, "requests"), "cpu"));
    if (cpu <= 0)
        cpu = cmd_mutjobs_quantity(cmd_mutjobs_at(cmd_mutjobs_at(res, "limits"), "cpu"));
    snprintf(out, outlen, "%lld", cpu > 1 ? cpu : 1);
}

static int cmd_mutjobs_is(const cJSON *v, const char *s)
{
    const char *have = cJSON_GetStringValue(v);

    return have && strcmp(have, s) == 0;
}

/* Whether spec.trainer.command is torchtune's entrypoint ["tune", "run"]. */
static int cmd_mutjobs_torchtune(const cJSON *trainer)
{
    const cJSON *c = cmd_mutjobs_at(trainer, "command");

    return cJSON_GetArraySize(c) == 2 && cmd_mutjobs_is(cJSON_GetArrayItem(c, 0), "tune") &&
           cmd_mutjobs_is(cJSON_GetArrayItem(c, 1), "run");
}

/* Appends {name, value} to env (value NULL: valueFrom the completion
 * index): the entry, or NULL out of memory. */
static cJSON *cmd_mutjobs_env_add(cJSON *env, const char *name, const char *value)
{
    cJSON *e = cJSON_CreateObject(), *ref;

    if (!e || !cJSON_AddItemToArray(env, e)) {
        cJSON_Delete(e);
        return NULL;
    }
    if (!cJSON_AddStringToObject(e, "name", name))
        return NULL;
    if (value)
        return cJSON_AddStringToObject(e, "value", value) ? e : NULL;
    ref = cJSON_AddObjectToObject(cJSON_AddObjectToObject(e, "valueFrom"), "fieldRef");
    return ref && cJSON_AddStringToObject(ref, "fieldPath", CMD_MUTJOBS_RANK_FIELD) ? e : NULL;
}

/* apply.UpsertPort: the trainer's port, unless the container has it. */
static int cmd_mutjobs_port(cJSON *node)
{
    cJSON *ports = cmd_mutjobs_member(node, "ports", 1), *p;

    if (!ports)
        return ERR_NOMEM;
    cJSON_ArrayForEach(p, ports)
    {
        const cJSON *cp = cmd_mutjobs_at(p, "containerPort");

        if (cJSON_IsNumber(cp) && cp->valueint == CMD_MUTJOBS_TRAINER_PORT)
            return ERR_OK;
    }
    if (!(p = cJSON_CreateObject()) || !cJSON_AddItemToArray(ports, p)) {
        cJSON_Delete(p);
        return ERR_NOMEM;
    }
    return cJSON_AddNumberToObject(p, "containerPort", CMD_MUTJOBS_TRAINER_PORT) ? ERR_OK
                                                                                 : ERR_NOMEM;
}

/* The torch plugin's PET_* envs and the trainer's port (torch.go
 * EnforceMLPolicy), on the node container. */
static int cmd_mutjobs_torch(const struct cmd_mutjobs_tj *tj, cJSON *node, long long nodes)
{
    char nnodes[24], nproc[24], addr[160], port[16];
    cJSON *env = cJSON_CreateArray();
    int rc = ERR_NOMEM;

    cmd_mutjobs_nproc(tj, cmd_mutjobs_at(node, "resources"), nproc, sizeof(nproc));
    snprintf(nnodes, sizeof(nnodes), "%lld", nodes);
    snprintf(addr, sizeof(addr), "%s-%s-0-0.%s", tj->name, CMD_MUTJOBS_NODE, tj->name);
    snprintf(port, sizeof(port), "%d", CMD_MUTJOBS_TRAINER_PORT);
    if (!env || !cmd_mutjobs_env_add(env, "PET_NNODES", nnodes) ||
        !cmd_mutjobs_env_add(env, "PET_NPROC_PER_NODE", nproc) ||
        !cmd_mutjobs_env_add(env, "PET_NODE_RANK", NULL))
        goto cleanup;
    /* torchtune passes its rendezvous on the command line instead. */
    if (!cmd_mutjobs_torchtune(tj->trainer) &&
        (!cmd_mutjobs_env_add(env, "PET_MASTER_ADDR", addr) ||
         !cmd_mutjobs_env_add(env, "PET_MASTER_PORT", port)))
        goto cleanup;
    if (cmd_mutjobs_upsert_env(node, env) == ERR_OK)
        rc = cmd_mutjobs_port(node);
cleanup:
    cJSON_Delete(env);
    return rc;
}

/* The trainer's overrides on replicated job rjob's node container (the
 * jobset plugin's Builder.Trainer, the runtime's resourcesPerNode merge,
 * and the torch plugin). */
static int cmd_mutjobs_trainer(const struct cmd_mutjobs_tj *tj, const char *rjob,
                               const char *ancestor, cJSON *spec, long long nodes)
{
    static const char *const fields[] = {"image", "command", "args"};
    int trainer = ancestor && strcmp(ancestor, CMD_MUTJOBS_TRAINER) == 0;
    int as_node = tj->launcher_as_node && strcmp(rjob, CMD_MUTJOBS_NODE) == 0;
    cJSON *node = cmd_mutjobs_container(spec, CMD_MUTJOBS_NODE);
    const cJSON *per_node = cmd_mutjobs_at(tj->trainer, "resourcesPerNode");

    if (!node || !tj->trainer || (!trainer && !as_node))
        return ERR_OK;
    for (size_t i = 0; trainer && i < 3; i++) {
        const cJSON *v = cmd_mutjobs_at(tj->trainer, fields[i]);

        if (v && !cJSON_IsNull(v) && cmd_mutjobs_set(node, fields[i], v))
            return ERR_NOMEM;
    }
    if (cmd_mutjobs_upsert_env(node, cmd_mutjobs_at(tj->trainer, "env")))
        return ERR_NOMEM;
    if (cJSON_IsObject(per_node) && (trainer ? tj->mlpolicy != NULL : 1) &&
        cmd_mutjobs_resources(node, per_node))
        return ERR_NOMEM;
    return trainer && tj->torch ? cmd_mutjobs_torch(tj, node, nodes) : ERR_OK;
}

/* Builder.Initializer: the TrainJob's spec.initializer.dataset (or
 * .model) on the container of the initializer's name, in the replicated
 * job whose step label names it: STORAGE_URI, env, envFrom the secret. */
static int cmd_mutjobs_initializer(const cJSON *trainjob, const char *ancestor, cJSON *spec)
{
    const cJSON *init = cmd_mutjobs_at(cmd_mutjobs_at(trainjob, "spec"), "initializer");
    const char *which = !ancestor                                      ? NULL
                        : strcmp(ancestor, "dataset-initializer") == 0 ? "dataset"
                        : strcmp(ancestor, "model-initializer") == 0   ? "model"
                                                                       : NULL;
    const cJSON *want = which ? cmd_mutjobs_at(init, which) : NULL;
    const char *uri = cmd_mutjobs_str(want, "storageUri");
    const char *secret = cmd_mutjobs_str(cmd_mutjobs_at(want, "secretRef"), "name");
    cJSON *c = ancestor ? cmd_mutjobs_container(spec, ancestor) : NULL, *env, *e, *from;

    if (!c || !cJSON_IsObject(want))
        return ERR_OK;
    if (cJSON_GetArraySize(cmd_mutjobs_at(want, "env")) > CMD_MUTJOBS_ENV_MAX)
        return ERR_FAIL;
    if (uri) {
        int rc = (env = cJSON_CreateArray()) && cmd_mutjobs_env_add(env, "STORAGE_URI", uri)
                     ? cmd_mutjobs_upsert_env(c, env)
                     : ERR_NOMEM;

        cJSON_Delete(env);
        if (rc)
            return rc;
    }
    if (cmd_mutjobs_upsert_env(c, cmd_mutjobs_at(want, "env")))
        return ERR_NOMEM;
    if (secret &&
        (!(from = cmd_mutjobs_member(c, "envFrom", 1)) || !(e = cJSON_CreateObject()) ||
         !cJSON_AddItemToArray(from, e) ||
         !cJSON_AddStringToObject(cJSON_AddObjectToObject(e, "secretRef"), "name", secret)))
        return ERR_NOMEM;
    return ERR_OK;
}

/* The labels JobSet puts on every pod of the replicated job. */
static int cmd_mutjobs_pod_labels(cJSON *tmpl, const char *jobset, const char *rjob)
{
    cJSON *meta = cmd_mutjobs_member(tmpl, "metadata", 0);
    cJSON *labels = meta ? cmd_mutjobs_member(meta, "labels", 0) : NULL;
    cJSON *a = cJSON_CreateString(jobset), *b = cJSON_CreateString(rjob);

    if (!labels || !a || !b) {
        cJSON_Delete(a);
        cJSON_Delete(b);
        return ERR_NOMEM;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(labels, MUTJOB_LABEL_JOBSET);
    cJSON_DeleteItemFromObjectCaseSensitive(labels, MUTJOB_LABEL_REPLICATED);
    cJSON_AddItemToObject(labels, MUTJOB_LABEL_JOBSET, a);
    cJSON_AddItemToObject(labels, MUTJOB_LABEL_REPLICATED, b);
    return ERR_OK;
}

/* numNodes: the TrainJob's, else the runtime's mlPolicy's, else 1. */
static long long cmd_mutjobs_nodes(const struct cmd_mutjobs_tj *tj)
{
    const cJSON *n = cmd_mutjobs_at(tj->trainer, "numNodes");

    if (!cJSON_IsNumber(n))
        n = cmd_mutjobs_at(tj->mlpolicy, "numNodes");
    return cJSON_IsNumber(n) && n->valuedouble >= 1 && n->valuedouble < 1e9
               ? (long long)n->valuedouble
               : 1;
}

/* A copy of the pod template with its metadata first, as the apiserver
 * writes it back (the labels are added there), or NULL. */
static cJSON *cmd_mutjobs_metadata_first(const cJSON *pod)
{
    cJSON *out = cJSON_CreateObject(), *copy;
    const cJSON *it;

    if (!out || !cmd_mutjobs_member(out, "metadata", 0))
        goto fail;
    cJSON_ArrayForEach(it, pod)
    {
        int meta = it->string && strcmp(it->string, "metadata") == 0;

        if (!it->string || (meta && !cJSON_IsObject(it)))
            continue;
        if (!(copy = cJSON_Duplicate(it, 1)))
            goto fail;
        if (meta ? !cJSON_ReplaceItemInObjectCaseSensitive(out, "metadata", copy)
                 : !cJSON_AddItemToObject(out, it->string, copy)) {
            cJSON_Delete(copy);
            goto fail;
        }
    }
    return out;
fail:
    cJSON_Delete(out);
    return NULL;
}

/* One replicated job of the runtime as a PodTemplate into *out (NULL on
 * failure). */
static int cmd_mutjobs_podtemplate_make(const struct cmd_mutjobs_tj *tj, const cJSON *rj,
                                        const char *ns, cJSON **out, char *err, size_t errlen)
{
    const char *rjob = cmd_mutjobs_str(rj, "name");
    const cJSON *job = cmd_mutjobs_at(rj, "template");
    const char *ancestor = cmd_mutjobs_str(
        cmd_mutjobs_at(cmd_mutjobs_at(job, "metadata"), "labels"), CMD_MUTJOBS_ANCESTOR);
    const cJSON *pod = cmd_mutjobs_at(cmd_mutjobs_at(job, "spec"), "template");
    cJSON *tmpl, *meta, *spec;
    char name[300];
    int rc = ERR_NOMEM;

    if (!rjob || !k8sname_label(rjob) || !cJSON_IsObject(pod))
        return err_set(err, errlen, ERR_FAIL,
                       "the runtime's replicated job %.63s has no name (a DNS-1123 label) or no "
                       "template.spec.template",
                       rjob ? rjob : "?");
    snprintf(name, sizeof(name), "%s-%s", tj->name, rjob);
    if (!k8sname_subdomain(name))
        return err_set(err, errlen, ERR_FAIL, "the PodTemplate name %.80s is no DNS-1123 subdomain",
                       name);
    if (!(*out = cJSON_CreateObject()) || !cJSON_AddStringToObject(*out, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(*out, "kind", "PodTemplate") ||
        !(meta = cJSON_AddObjectToObject(*out, "metadata")) ||
        !cJSON_AddStringToObject(meta, "name", name) ||
        !cJSON_AddStringToObject(meta, "namespace", ns) ||
        !(tmpl = cmd_mutjobs_metadata_first(pod)) ||
        !cJSON_AddItemToObject(*out, "template", tmpl) ||
        cmd_mutjobs_pod_labels(tmpl, tj->name, rjob) ||
        !(spec = cmd_mutjobs_member(tmpl, "spec", 0)) ||
        cmd_mutjobs_trainer(tj, rjob, ancestor, spec, cmd_mutjobs_nodes(tj)))
        goto cleanup;
    rc = cmd_mutjobs_initializer(tj->trainjob, ancestor, spec);
    if (rc == ERR_OK)
        return ERR_OK;
cleanup:
    cJSON_Delete(*out);
    *out = NULL;
    return rc == ERR_FAIL ? err_set(err, errlen, rc,
                                    "its spec.initializer has more than %d env "
                                    "entries",
                                    CMD_MUTJOBS_ENV_MAX)
                          : err_set(err, errlen, rc, "out of memory");
}

/* One replicated job of the runtime as a PodTemplate, added to items. */
static int cmd_mutjobs_podtemplate(const struct cmd_mutjobs_tj *tj, const cJSON *rj, const char *ns,
                                   cJSON *items, char *err, size_t errlen)
{
    cJSON *item = NULL;
    int rc = cmd_mutjobs_podtemplate_make(tj, rj, ns, &item, err, errlen);

    if (rc == ERR_OK && !cJSON_AddItemToArray(items, item)) {
        cJSON_Delete(item);
        return err_set(err, errlen, ERR_NOMEM, "out of memory");
    }
    return rc;
}

/* Whether the TrainJob asks for what is not applied offline. */
static const char *cmd_mutjobs_notes(const cJSON *trainjob, const struct cmd_mutjobs_tj *tj)
{
    const cJSON *spec = cmd_mutjobs_at(trainjob, "spec");

    if (cJSON_GetArraySize(cmd_mutjobs_at(spec, "runtimePatches")) > 0)
        return "its spec.runtimePatches are not applied offline: the PodTemplates are the "
               "runtime's with spec.trainer's overrides only";
    if (cmd_mutjobs_torchtune(tj->trainer))
        return "torchtune's command additions (recipe, config, rendezvous) are not applied "
               "offline";
    return NULL;
}

int cmd_mutjobs_trainjob(const cJSON *trainjob, const cJSON *runtime, const char *ns, cJSON **list,
                         const char **notes, char *err, size_t errlen)
{
    const cJSON *spec = cmd_mutjobs_at(runtime, "spec");
    const cJSON *rjobs =
        cmd_mutjobs_at(cmd_mutjobs_at(cmd_mutjobs_at(spec, "template"), "spec"), "replicatedJobs");
    const cJSON *mpi, *rj, *t;
    struct cmd_mutjobs_tj tj = {0};
    cJSON *items;
    int rc;

    *list = NULL;
    tj.trainjob = trainjob;
    tj.name = cmd_mutjobs_str(cmd_mutjobs_at(trainjob, "metadata"), "name");
    tj.trainer = cmd_mutjobs_at(cmd_mutjobs_at(trainjob, "spec"), "trainer");
    tj.trainer = cJSON_IsObject(tj.trainer) ? tj.trainer : NULL;
    tj.mlpolicy =
        cJSON_IsObject(cmd_mutjobs_at(spec, "mlPolicy")) ? cmd_mutjobs_at(spec, "mlPolicy") : NULL;
    tj.torch = cJSON_IsObject(cmd_mutjobs_at(tj.mlpolicy, "torch"));
    mpi = cmd_mutjobs_at(tj.mlpolicy, "mpi");
    tj.launcher_as_node = cJSON_IsTrue(cmd_mutjobs_at(mpi, "runLauncherAsNode"));
    *notes = cmd_mutjobs_notes(trainjob, &tj);
    if (!tj.name || !k8sname_label(tj.name))
        return err_set(err, errlen, ERR_FAIL,
                       "the TrainJob has no metadata.name (a DNS-1123 "
                       "label)");
    if (!cJSON_IsArray(rjobs) || cJSON_GetArraySize(rjobs) == 0)
        return err_set(err, errlen, ERR_FAIL,
                       "its runtime has no spec.template.spec.replicatedJobs");
    if (cJSON_GetArraySize(rjobs) > CMD_MUTJOBS_TEMPLATES_MAX)
        return err_set(err, errlen, ERR_FAIL, "its runtime has more than %d replicated jobs",
                       CMD_MUTJOBS_TEMPLATES_MAX);
    t = cmd_mutjobs_at(tj.trainer, "env");
    if (cJSON_GetArraySize(t) > CMD_MUTJOBS_ENV_MAX)
        return err_set(err, errlen, ERR_FAIL, "its spec.trainer.env has more than %d entries",
                       CMD_MUTJOBS_ENV_MAX);
    if (!(*list = cJSON_CreateObject()) || !cJSON_AddStringToObject(*list, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(*list, "kind", "List") ||
        !(items = cJSON_AddArrayToObject(*list, "items"))) {
        rc = err_set(err, errlen, ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    cJSON_ArrayForEach(rj, rjobs)
    {
        if ((rc = cmd_mutjobs_podtemplate(&tj, rj, ns, items, err, errlen)) != ERR_OK)
            goto cleanup;
    }
    return ERR_OK;
cleanup:
    cJSON_Delete(*list);
    *list = NULL;
    return rc;
}
