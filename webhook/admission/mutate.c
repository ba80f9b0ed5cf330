#include "admission/mutate.h"

#include "admission/mutate_ctx.h"
#include "admission/mutannot.h"
#include "admission/mutcaps.h"
#include "admission/mutchoose.h"
#include "admission/mutconf.h"
#include "admission/mutdetect.h"
#include "admission/mutenv.h"
#include "admission/mutns.h"
#include "admission/mutpath.h"
#include "admission/mutplace.h"
#include "admission/mutreport.h"
#include "admission/mutjob.h"
#include "admission/muttarget.h"
#include "admission/mutvol.h"

#include "base/err.h"
#include "admission/explain.h"
#include "admission/patch.h"
#include "admission/podjson.h"
#include "admission/profiles.h"
#include "admission/target.h"
#include "base/trace.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

const char *mutate_warning_kind_name(enum mutate_warning_kind kind)
{
    static const char *const names[MUTATE_W_KINDS] = {"no_profile",
                                                      "unknown_profile",
                                                      "override",
                                                      "nccl_value",
                                                      "non_root",
                                                      "envfrom",
                                                      "scheduler",
                                                      "host_network",
                                                      "no_container",
                                                      "node_lookup",
                                                      "ambiguous",
                                                      "pinned",
                                                      "ib_disabled",
                                                      "detect",
                                                      "namespace_lookup",
                                                      "pod_security",
                                                      "mode",
                                                      "ipc_lock",
                                                      "shm",
                                                      "inject",
                                                      "nccl_conf",
                                                      "job_lookup",
                                                      "error"};

    return kind < MUTATE_W_KINDS ? names[kind] : "other";
}

int mutate_ipc_lock_parse(const char *s, enum mutate_ipc_lock *out)
{
    if (s && strcmp(s, "auto") == 0)
        *out = MUTATE_IPC_LOCK_AUTO;
    else if (s && strcmp(s, "never") == 0)
        *out = MUTATE_IPC_LOCK_NEVER;
    else
        return ERR_FAIL;
    return ERR_OK;
}

const char *mutate_outcome_name(enum mutate_outcome outcome)
{
    static const char *const names[] = {"mutated", "skipped", "error", "reported"};

    return outcome <= MUTATE_REPORTED ? names[outcome] : "error";
}

enum mutate_outcome mutate_reason_outcome(enum mutate_reason reason)
{
    return reason == MUTATE_R_MUTATED    ? MUTATE_PATCHED
           : reason == MUTATE_R_REPORTED ? MUTATE_REPORTED
           : reason == MUTATE_R_ERROR    ? MUTATE_ERROR
                                         : MUTATE_SKIPPED;
}

const char *mutate_reason_name(enum mutate_reason reason)
{
    static const char *const names[MUTATE_REASONS] = {
        "mutated",         "reported",     "not-target",      "opted-out", "no-profile",
        "unknown-profile", "no-container", "nothing-missing", "error"};

    return reason < MUTATE_REASONS ? names[reason] : "error";
}

void mutate_result_init(struct mutate_result *res, size_t patch_cap)
{
    memset(res, 0, sizeof(*res));
    res->outcome = MUTATE_SKIPPED;
    res->reason = MUTATE_R_NOT_TARGET;
    patch_init(&res->patch, patch_cap);
    dynbuf_init(&res->report, REPORT_VALUE_MAX);
}

void mutate_result_free(struct mutate_result *res)
{
    patch_free(&res->patch);
    dynbuf_free(&res->report);
}

/* Mutates one target container; returns 1 when it has InfiniBand off. */
static int mutate_container(struct mutate_ctx *m, const cJSON *c, const char *list, int idx)
{
    const char *cname = mutpath_name(m, c);
    char cpath[PATCH_PATH_MAX], value[64];
    int ib_off, detected = 0, mounts = podjson_arr(&m->r, c, "volumeMounts") != NULL;

    if (mutpath_item(m, cpath, list, idx))
        return 0;
    MUTATE_TRACE(
        m, "%s \"%s\" (%s[%d]):", strcmp(list, "containers") == 0 ? "container" : "init container",
        cname, list, idx);
    if (m->in->trace)
        m->in->trace->indent++;
    ib_off = mutenv_ib_off(m, c, value, sizeof(value));
    if (ib_off)
        MUTATE_TRACE(m,
                     "InfiniBand off: NCCL reads its NCCL_IB_DISABLE=%s as non-zero (TCP): "
                     "no NCCL_IB_* variable, no IPC_LOCK, no RDMA device",
                     value);
    if (ib_off)
        MUTATE_WARN(m, MUTATE_W_IB_DISABLED,
                    "drop NCCL_IB_DISABLE=%s in container \"%s\" for RDMA; it has TCP, no RDMA "
                    "device",
                    mutwarn_s(m, value, 10), mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
    /* Init containers run before the detecting one: they keep the static env. */
    if (!ib_off && strcmp(list, "containers") == 0) {
        m->ib_on = 1;
        detected = m->detect == MUTATE_DETECT_ON && mutdetect_container(m, c, cname);
    }
    mutenv_container(m, c, cpath, cname, ib_off, detected);
    /* Ranks mpirun starts over ssh see none of that env: the file. */
    if (!ib_off && strcmp(list, "containers") == 0)
        mutconf_container(m, c, cpath, cname, &mounts);
    if (!ib_off)
        mutcaps_ipc_lock(m, c, cpath, cname);
    else
        MUTATE_TRACE(m, "IPC_LOCK: not added: InfiniBand is off");
    mutvol_shm(m, c, cpath, &mounts);
    if (detected) {
        mutdetect_mounts(m, c, cpath, &mounts);
        m->detect_used = 1;
    }
    if (m->in->trace)
        m->in->trace->indent--;
    return ib_off;
}

struct mutate_regular {
    struct mutate_ctx *m;
    const cJSON *first; /* the first target container that has InfiniBand on */
    int first_idx;
};

static void mutate_regular_container(void *ctx, const cJSON *c, int idx)
{
    struct mutate_regular *reg = ctx;

    if (!mutate_container(reg->m, c, "containers", idx) && !reg->first) {
        reg->first = c;
        reg->first_idx = idx;
    }
}

/* Mutates the regular containers target_each_container() picks and returns
 * the first of them that has InfiniBand on (NULL: none has). */
static struct mutate_regular mutate_regular_containers(struct mutate_ctx *m)
{
    struct mutate_regular reg = {.m = m};

    target_each_container(&m->r, podjson_arr(&m->r, m->spec, "containers"), m->ps,
                          target_fallback_container(&m->res->job), mutate_regular_container, &reg);
    return reg;
}

static void mutate_init_containers(struct mutate_ctx *m)
{
    const cJSON *c;
    int idx = 0;

    cJSON_ArrayForEach(c, podjson_arr(&m->r, m->spec, "initContainers"))
    {
        if (target_container_wants_devices(&m->r, c, m->ps))
            mutate_container(m, c, "initContainers", idx);
        idx++;
    }
}

static void mutate_pod(struct mutate_ctx *m)
{
    char path[PATCH_PATH_MAX];
    struct mutate_regular first;

    m->host_network = podjson_bool(&m->r, m->spec, "hostNetwork");
    m->volumes = podjson_arr(&m->r, m->spec, "volumes") != NULL;
    mutplace_pin(m);
    mutenv_effective(m);
    mutdetect_plan(m);
    mutconf_plan(m);
    first = mutate_regular_containers(m);
    if (m->in->trace)
        explain_init_containers(m->in->trace, m->spec, m->ps, m->p->init_containers);
    if (m->p->init_containers)
        mutate_init_containers(m);
    mutdetect_pod(m);
    mutconf_pod(m);
    mutenv_warn_host_network(m);
    if (first.first && mutpath_item(m, path, "containers", first.first_idx) == 0)
        mutplace_resources(m, first.first, path);
    else
        MUTATE_TRACE(m, "resources: none added: %s",
                     m->p->resources.n ? "every target container has InfiniBand off"
                                       : "the profile has none");
    mutplace_scheduler(m);
    m->res->reason = m->res->patch.n_ops ? MUTATE_R_MUTATED : MUTATE_R_NOTHING_MISSING;
}

/* A pod the webhook cannot read is admitted unchanged: blocking it would
 * block training even under failurePolicy: Ignore. */
static void mutate_fail(struct mutate_ctx *m, const char *why)
{
    struct mutate_result *res = m->res;

    patch_free(&res->patch);
    patch_init(&res->patch, res->patch.out.cap);
    m->annotations_made = 0;
    res->outcome = MUTATE_ERROR;
    res->reason = MUTATE_R_ERROR;
    res->profile = NULL;
    res->pinned = 0;
    res->report_by = NULL;
    res->report_seen = 0;
    dynbuf_reset(&res->report);
    snprintf(res->error, sizeof(res->error), "%s", why);
    res->warnings.n = 0;
    MUTATE_TRACE(m, "error: %s; the pod is admitted unchanged (nothing above is applied)", why);
    MUTATE_WARN(m, MUTATE_W_ERROR, "see the webhook's log: pod not mutated, %s",
                mutwarn_s(m, why, MUTATE_SHOWN_LEN - 1));
}

/* The outcome in the log line's words, what the patch holds, and every
 * warning. */
static void mutate_trace_result(struct mutate_ctx *m)
{
    const struct mutate_result *res = m->res;

    if (res->reason == MUTATE_R_MUTATED)
        trace_add(m->in->trace, "result: mutated, %zu patch operation%s", res->patch.n_ops,
                  res->patch.n_ops == 1 ? "" : "s");
    else if (res->reason == MUTATE_R_ERROR)
        trace_add(m->in->trace, "result: error, no patch");
    else if (res->report_by)
        trace_add(m->in->trace, "result: %s, in report mode (from the %s)%s",
                  mutate_reason_name(res->reason), res->report_by,
                  res->patch.n_ops ? ": the patch sets only " REPORT_ANNOTATION
                                     ", which lists what enforce mode would do"
                                   : "; the pod has this report already");
    else
        trace_add(m->in->trace, "result: skipped (%s)%s", mutate_reason_name(res->reason),
                  res->patch.n_ops ? "; the patch sets only " MUTATE_ANNOTATION_WARNINGS : "");
    /* Whole, as the log has them, and as the user gets them when shorter. */
    for (size_t i = 0; i < res->warnings.n; i++) {
        trace_add(m->in->trace, "warning: %s", res->warnings.full[i]);
        if (strcmp(res->warnings.full[i], res->warnings.text[i]) != 0)
            trace_add(m->in->trace, "  the user sees: %s", res->warnings.text[i]);
    }
}

void mutate_object(const struct mutate_input *in, const struct profiles *ps,
                   const struct mutate_hooks *hooks, struct mutate_result *res)
{
    struct mutate_ctx m = {.in = in, .ps = ps, .hooks = hooks, .res = res};
    int target = 0;

    podjson_init(&m.r);
    mutns_select_hooks(&m);
    res->outcome = MUTATE_SKIPPED;
    m.metadata = podjson_obj(&m.r, in->object, "metadata");
    m.spec = podjson_obj(&m.r, in->object, "spec");
    if (!m.spec)
        podjson_fail(&m.r, "spec is missing");
    if (!podjson_failed(&m.r))
        mutjob_identify(&m);
    if (!podjson_failed(&m.r) && (target = muttarget_pod(&m)) && muttarget_containers(&m) &&
        mutchoose_profile(&m)) {
        res->profile = m.p;
        mutate_pod(&m);
    }
    /* Only where the pod is written to anyway (its labels are read then). */
    if (!podjson_failed(&m.r) && target && (res->reason == MUTATE_R_MUTATED || res->warnings.n))
        muttarget_ns_inject(&m);
    /* A pod that is not a target is never changed, warned or not. */
    if (!podjson_failed(&m.r) && target && !mutreport_apply(&m))
        mutannot_finish(&m, res->reason == MUTATE_R_MUTATED);
    if (podjson_failed(&m.r))
        mutate_fail(&m, m.r.bad_field);
    else if (patch_finish(&res->patch))
        mutate_fail(&m, "the patch would exceed its size limit");
    else if (res->patch.n_ops)
        res->outcome = MUTATE_PATCHED;
    if (m.in->trace)
        mutate_trace_result(&m);
    cJSON_Delete(m.ns_labels);
    cJSON_Delete(m.conf_texts);
}

void mutate_envfrom_names(const struct profiles *ps, void (*fn)(void *ctx, const char *name),
                          void *ctx)
{
    fn(ctx, MUTENV_IB_DISABLE);
    fn(ctx, MUTATE_CONF_FILE);
    for (size_t i = 0; i < ps->n; i++) {
        const struct profiles_entry *p = &ps->p[i];

        for (size_t j = 0; j < p->env.n; j++)
            fn(ctx, p->env.v[j].name);
        for (size_t j = 0; j < p->host_network_env.n; j++)
            fn(ctx, p->host_network_env.v[j].name);
    }
}
