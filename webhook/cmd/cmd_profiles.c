#include "cmd/cmd.h"

#include "host/docs.h"
#include "base/dynbuf.h"
#include "host/fsutil.h"
#include "admission/profiles.h"
#include "host/store.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD_PROFILES_USAGE "usage: rdma-webhook check-profiles [--show] FILE"

struct profiles *cmd_profiles_load(const char *path, const char *hint)
{
    struct dynbuf text, errors;
    struct profiles *ps = NULL;
    char err[ERR_LEN] = "";

    dynbuf_init(&text, STORE_TEXT_MAX);
    dynbuf_init(&errors, 65536);
    if (fsutil_read(path, &text, err, sizeof(err))) {
        fprintf(stderr, "rdma-webhook: %s; %s\n", err, hint);
        goto out;
    }
    ps = profiles_parse(dynbuf_ptr(&text), dynbuf_len(&text), &errors);
    if (!ps)
        fprintf(stderr, "rdma-webhook: %s is not valid:\n%s", path, dynbuf_ptr(&errors));
out:
    dynbuf_free(&text);
    dynbuf_free(&errors);
    return ps;
}

static void cmd_profiles_usage(FILE *f)
{
    fprintf(f, "Usage: rdma-webhook check-profiles [--show] FILE\n"
               "\n"
               "Validates a profiles file exactly as serve does; exits 1 with one line per "
               "problem.\n"
               "\n"
               "  --show      print the profiles as the webhook applies them, as JSON: the\n"
               "              defaults merged into each profile, NCCL_IB_HCA built from hca,\n"
               "              every setting spelled out (the output loads as a profiles file)\n"
               "  -h, --help  show this help\n");
}

/* Builds JSON with cJSON's calls, remembering whether one ran out of memory. */
struct cmd_profiles_json {
    int nomem;
};

static cJSON *cmd_profiles_add(struct cmd_profiles_json *j, cJSON *parent, const char *key,
                               cJSON *v)
{
    if (!v || !(key ? cJSON_AddItemToObject(parent, key, v) : cJSON_AddItemToArray(parent, v))) {
        cJSON_Delete(v);
        j->nomem = 1;
        return NULL;
    }
    return v;
}

static void cmd_profiles_kvs(struct cmd_profiles_json *j, cJSON *parent, const char *key,
                             const struct profiles_kvs *kvs)
{
    cJSON *o = cmd_profiles_add(j, parent, key, cJSON_CreateObject());

    for (size_t i = 0; o && i < kvs->n; i++)
        cmd_profiles_add(j, o, kvs->v[i].name, cJSON_CreateString(kvs->v[i].value));
}

static void cmd_profiles_detect(struct cmd_profiles_json *j, cJSON *o,
                                const struct profiles_detect *d)
{
    cJSON *detect = cmd_profiles_add(j, o, "detect", cJSON_CreateObject());

    if (!detect)
        return;
    cmd_profiles_add(j, detect, "enabled", cJSON_CreateBool(d->on));
    if (d->cpu)
        cmd_profiles_add(j, detect, "cpu", cJSON_CreateString(d->cpu));
    if (d->memory)
        cmd_profiles_add(j, detect, "memory", cJSON_CreateString(d->memory));
}

/* match.namespaces as applied: the names, or a selector's requirements with
 * matchLabels spelled as In. */
static void cmd_profiles_namespaces(struct cmd_profiles_json *j, cJSON *match,
                                    const struct profiles_namespaces *ns)
{
    cJSON *v, *exprs, *e;

    if (ns->names) {
        if ((v = cmd_profiles_add(j, match, "namespaces", cJSON_CreateArray())))
            for (size_t i = 0; i < ns->n_names; i++)
                cmd_profiles_add(j, v, NULL, cJSON_CreateString(ns->names[i]));
        return;
    }
    if (!ns->selector || !(v = cmd_profiles_add(j, match, "namespaces", cJSON_CreateObject())) ||
        !(exprs = cmd_profiles_add(j, v, "matchExpressions", cJSON_CreateArray())))
        return;
    for (size_t i = 0; i < ns->sel.n_reqs; i++) {
        const struct labelsel_req *r = &ns->sel.reqs[i];

        if (!(e = cmd_profiles_add(j, exprs, NULL, cJSON_CreateObject())))
            return;
        cmd_profiles_add(j, e, "key", cJSON_CreateString(r->key));
        cmd_profiles_add(j, e, "operator", cJSON_CreateString(labelsel_op_name(r->op)));
        if (r->n_values && (v = cmd_profiles_add(j, e, "values", cJSON_CreateArray())))
            for (size_t k = 0; k < r->n_values; k++)
                cmd_profiles_add(j, v, NULL, cJSON_CreateString(r->values[k]));
    }
}

/* match.jobKinds and match.runtimes as applied: the kinds in their order. */
static void cmd_profiles_jobs(struct cmd_profiles_json *j, cJSON *match,
                              const struct profiles_entry *p)
{
    cJSON *v;

    if (p->job_kinds && (v = cmd_profiles_add(j, match, "jobKinds", cJSON_CreateArray())))
        for (unsigned k = 1; k < PROFILES_JOB_KINDS; k++)
            if (p->job_kinds & (1u << k))
                cmd_profiles_add(j, v, NULL, cJSON_CreateString(profiles_job_kind_name(k)));
    if (p->runtimes && (v = cmd_profiles_add(j, match, "runtimes", cJSON_CreateArray())))
        for (size_t i = 0; i < p->n_runtimes; i++)
            cmd_profiles_add(j, v, NULL, cJSON_CreateString(p->runtimes[i]));
}

static void cmd_profiles_one(struct cmd_profiles_json *j, cJSON *list,
                             const struct profiles_entry *p)
{
    cJSON *o = cmd_profiles_add(j, list, NULL, cJSON_CreateObject());
    cJSON *match, *gpus, *shm;

    if (!o)
        return;
    cmd_profiles_add(j, o, "name", cJSON_CreateString(p->name));
    cmd_profiles_add(j, o, "default", cJSON_CreateBool(p->is_default));
    if ((match = cmd_profiles_add(j, o, "match", cJSON_CreateObject()))) {
        if (p->n_gpus && (gpus = cmd_profiles_add(j, match, "gpus", cJSON_CreateArray())))
            for (size_t i = 0; i < p->n_gpus; i++)
                cmd_profiles_add(j, gpus, NULL, cJSON_CreateNumber((double)p->gpus[i]));
        if (p->node_labels.n)
            cmd_profiles_kvs(j, match, "nodeLabels", &p->node_labels);
        cmd_profiles_namespaces(j, match, &p->namespaces);
        cmd_profiles_jobs(j, match, p);
    }
    cmd_profiles_add(j, o, "pin", cJSON_CreateBool(p->pin));
    cmd_profiles_kvs(j, o, "env", &p->env);
    cmd_profiles_kvs(j, o, "hostNetworkEnv", &p->host_network_env);
    cmd_profiles_kvs(j, o, "resources", &p->resources);
    cmd_profiles_add(j, o, "schedulerName",
                     cJSON_CreateString(p->scheduler_name ? p->scheduler_name : ""));
    cmd_profiles_add(j, o, "ipcLock", cJSON_CreateBool(p->ipc_lock));
    shm = cmd_profiles_add(j, o, "shm", p->shm ? cJSON_CreateObject() : cJSON_CreateFalse());
    if (p->shm && shm && p->shm_size_limit)
        cmd_profiles_add(j, shm, "sizeLimit", cJSON_CreateString(p->shm_size_limit));
    cmd_profiles_add(j, o, "initContainers", cJSON_CreateBool(p->init_containers));
    cmd_profiles_add(j, o, "ncclConf",
                     p->nccl_conf == PROFILES_NCCL_CONF_AUTO
                         ? cJSON_CreateString("auto")
                         : cJSON_CreateBool(p->nccl_conf == PROFILES_NCCL_CONF_ON));
    cmd_profiles_detect(j, o, &p->detect);
    /* Unset is serve's --mode, which a profiles file cannot spell out. */
    if (p->mode != REPORT_MODE_UNSET)
        cmd_profiles_add(j, o, "mode", cJSON_CreateString(report_mode_name(p->mode)));
}

/* The snapshot as a profiles document: what serve applies, with nothing
 * left to a default. NULL when out of memory. */
static cJSON *cmd_profiles_effective(const struct profiles *ps)
{
    struct cmd_profiles_json j = {0};
    cJSON *root = cJSON_CreateObject();
    cJSON *gpu, *targets, *list;

    if (!root)
        return NULL;
    if ((gpu = cmd_profiles_add(&j, root, "gpuResources", cJSON_CreateArray())))
        for (size_t i = 0; i < ps->n_gpu_resources; i++)
            cmd_profiles_add(&j, gpu, NULL, cJSON_CreateString(ps->gpu_resources[i]));
    cmd_profiles_add(&j, root, "rdmaResourcePrefix", cJSON_CreateString(ps->rdma_prefix));
    if ((targets = cmd_profiles_add(&j, root, "targets", cJSON_CreateObject()))) {
        cmd_profiles_add(&j, targets, "mpijob",
                         cJSON_CreateBool(!!(ps->targets & PROFILES_TARGET_MPIJOB)));
        cmd_profiles_add(&j, targets, "trainjob",
                         cJSON_CreateBool(!!(ps->targets & PROFILES_TARGET_TRAINJOB)));
        cmd_profiles_add(&j, targets, "jobset",
                         cJSON_CreateBool(!!(ps->targets & PROFILES_TARGET_JOBSET)));
        cmd_profiles_add(&j, targets, "volcanojob",
                         cJSON_CreateBool(!!(ps->targets & PROFILES_TARGET_VOLCANOJOB)));
    }
    if ((list = cmd_profiles_add(&j, root, "profiles", cJSON_CreateArray())))
        for (size_t i = 0; i < ps->n; i++)
            cmd_profiles_one(&j, list, &ps->p[i]);
    if (j.nomem) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static int cmd_profiles_show(const struct profiles *ps)
{
    cJSON *doc = cmd_profiles_effective(ps);
    struct dynbuf out;
    char err[ERR_LEN] = "out of memory";
    int rc = 1;

    dynbuf_init(&out, STORE_TEXT_MAX * 8);
    if (doc && docs_write(&out, doc, DOCS_JSON, err, sizeof(err)) == ERR_OK) {
        fwrite(dynbuf_ptr(&out), 1, dynbuf_len(&out), stdout);
        rc = 0;
    } else {
        fprintf(stderr, "rdma-webhook check-profiles: cannot print the profiles: %s\n", err);
    }
    dynbuf_free(&out);
    cJSON_Delete(doc);
    return rc;
}

int cmd_check_profiles(int argc, char **argv)
{
    static const struct option opts[] = {
        {"show", no_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    struct profiles *ps;
    int c, show = 0, rc;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 's')
            show = 1;
        else if (c == 'h')
            return cmd_profiles_usage(stdout), 0;
        else
            return cmd_profiles_usage(stderr), 2;
    }
    if (argc - optind != 1)
        return cmd_profiles_usage(stderr), 2;
    ps = cmd_profiles_load(argv[optind], CMD_PROFILES_USAGE);
    if (!ps)
        return 1;
    if (show) {
        rc = cmd_profiles_show(ps);
    } else {
        printf("%s: %zu profiles OK:", argv[optind], ps->n);
        for (size_t i = 0; i < ps->n; i++)
            printf(" %s", ps->p[i].name);
        printf("\n");
        rc = 0;
    }
    profiles_free(ps);
    return rc;
}
