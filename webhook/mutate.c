#include "mutate.h"

#include "mutate_ctx.h"
#include "mutreport.h"
#include "mutannot.h"
#include "mutns.h"
#include "mutpath.h"
#include "mutchoose.h"
#include "mutdetect.h"
#include "mutvol.h"
#include "mutcaps.h"
#include "mutenv.h"

#include "decimal.h"
#include "err.h"
#include "explain.h"
#include "nccl.h"
#include "podjson.h"
#include "podsec.h"
#include "profiles.h"
#include "target.h"
#include "trace.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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

static int mutate_any_container_asks(struct mutate_ctx *m, const char *prefix, size_t len)
{
    static const char *const lists[] = {"containers", "initContainers"};
    const cJSON *c;

    for (size_t i = 0; i < 2; i++)
        cJSON_ArrayForEach(c, podjson_arr(&m->r, m->spec, lists[i]))
        {
            if (target_container_asks_prefix(&m->r, c, prefix, len))
                return 1;
        }
    return 0;
}

static void mutate_resource_map(struct patch *p, const struct profiles_kv **adds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        jsonw_raw(&p->w, i ? "," : "{");
        jsonw_key(&p->w, adds[i]->name);
        jsonw_str(&p->w, adds[i]->value);
    }
    jsonw_raw(&p->w, "}");
}

/* Adds the entries to one of limits/requests (which), creating it if absent. */
static void mutate_resource_list(struct mutate_ctx *m, const cJSON *res, const char *rpath,
                                 const char *which, const struct profiles_kv **adds, size_t n)
{
    struct patch *p = &m->res->patch;
    char list[PATCH_PATH_MAX], path[PATCH_PATH_MAX], tok[PATCH_PATH_MAX];

    if (mutpath_join(m, list, rpath, "/", which))
        return;
    if (!podjson_obj(&m->r, res, which)) {
        patch_op_begin(p, "add", list);
        mutate_resource_map(p, adds, n);
        patch_op_end(p);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (patch_escape_token(adds[i]->name, tok, sizeof(tok))) {
            podjson_fail(&m->r, "a JSON Pointer is too long");
            return;
        }
        if (mutpath_join(m, path, list, "/", tok))
            return;
        patch_op_str(p, "add", path, adds[i]->value);
    }
}

/* The RDMA device goes to the first target container, unless some container
 * already asks for anything under the same prefix (a pod asking for
 * rdma/hca_shared_devices_all keeps just that). */
static void mutate_resources(struct mutate_ctx *m, const cJSON *c, const char *cpath)
{
    const cJSON *res = podjson_obj(&m->r, c, "resources");
    const struct profiles_kv *adds[PROFILES_MAX_ENV];
    struct patch *p = &m->res->patch;
    char path[PATCH_PATH_MAX];
    size_t n = 0;

    if (m->p->resources.n == 0)
        MUTATE_TRACE(m, "resources: none added: the profile has none");
    for (size_t i = 0; i < m->p->resources.n && n < PROFILES_MAX_ENV; i++) {
        const char *name = m->p->resources.v[i].name;
        size_t plen = (size_t)(strchr(name, '/') - name) + 1;

        if (!mutate_any_container_asks(m, name, plen))
            adds[n++] = &m->p->resources.v[i];
        else
            MUTATE_TRACE(m, "resource %s: not added: a container asks for a resource under %.*s",
                         name, (int)plen, name);
    }
    for (size_t i = 0; m->in->trace && i < n; i++)
        trace_add(m->in->trace, "resource %s=%s: added to container \"%s\"'s limits and requests",
                  adds[i]->name, adds[i]->value, mutpath_name(m, c));
    if (n == 0)
        return;
    mutpath_join(m, path, cpath, "/resources", NULL);
    if (!res) {
        patch_op_begin(p, "add", path);
        jsonw_raw(&p->w, "{\"limits\":");
        mutate_resource_map(p, adds, n);
        jsonw_raw(&p->w, ",\"requests\":");
        mutate_resource_map(p, adds, n);
        jsonw_raw(&p->w, "}");
        patch_op_end(p);
        return;
    }
    mutate_resource_list(m, res, path, "limits", adds, n);
    mutate_resource_list(m, res, path, "requests", adds, n);
}

static void mutate_scheduler(struct mutate_ctx *m)
{
    const char *have = podjson_str(&m->r, m->spec, "schedulerName");
    const char *want = m->p->scheduler_name;
    char path[PATCH_PATH_MAX];

    if (!want || !*want || (have && strcmp(have, want) == 0)) {
        MUTATE_TRACE(m, "schedulerName: %s%s%s", want && *want ? "already " : "",
                     want && *want ? want : "the profile sets none",
                     want && *want ? ", nothing to add" : "");
        return;
    }
    if (have && strcmp(have, "default-scheduler") != 0) {
        MUTATE_TRACE(m, "schedulerName: kept the pod's \"%s\" over the profile's \"%s\"", have,
                     want);
        MUTATE_WARN(m, MUTATE_W_SCHEDULER,
                    "drop schedulerName \"%s\" to get the profile's \"%s\" (gang scheduling)",
                    mutwarn_s(m, have, MUTATE_SHOWN_NAME), mutwarn_s(m, want, MUTATE_SHOWN_NAME));
        return;
    }
    mutpath_pod(m, path, "/spec/schedulerName", NULL);
    patch_op_str(&m->res->patch, have ? "replace" : "add", path, want);
    MUTATE_TRACE(m, "schedulerName: %s%s", want, have ? ": replaces default-scheduler" : ": added");
}

/* "k=v, k2=v2" of the labels, whole in full (as far as it fits), shortened
 * to fit out. */
static void mutate_labels_text(const struct profiles_kv **kv, size_t n, char *out, size_t len,
                               char *full, size_t full_len)
{
    char buf[256];
    size_t at = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n && at < sizeof(buf); i++)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s=%s", i ? ", " : "", kv[i]->name,
                               kv[i]->value);
    mutwarn_short(buf, out, len);
    mutwarn_short(buf, full, full_len);
}

/* A profile with "pin" chosen by GPU count or as the default: its
 * nodeLabels go into spec.nodeSelector, so the pod lands where the profile
 * is right. select made sure the pod's constraints do not exclude the
 * profile; a key the pod sets is kept (and, being consistent, has the same
 * value). A pod bound to a node (spec.nodeName) is left as it is: the
 * kubelet would only reject it. So is one whose hostname constraint names
 * Nodes whose labels could not be told: they may lack the profile's labels,
 * and the pin would leave the pod no node. */
static void mutate_pin(struct mutate_ctx *m)
{
    const cJSON *selector = podjson_obj(&m->r, m->spec, "nodeSelector");
    const struct profiles_kv *adds[PROFILES_MAX_ENV];
    const char *node = podjson_str(&m->r, m->spec, "nodeName");
    struct patch *p = &m->res->patch;
    char path[PATCH_PATH_MAX], tok[PATCH_PATH_MAX], shown[41], full[256];
    size_t n = 0;

    if (!m->p->pin || (m->rule != SELECT_BY_GPUS && m->rule != SELECT_BY_DEFAULT) ||
        (node && *node) || m->hosts_unknown) {
        MUTATE_TRACE(m, "pin: not pinned: %s",
                     !m->p->pin ? "the profile has no pin"
                     : (m->rule != SELECT_BY_GPUS && m->rule != SELECT_BY_DEFAULT)
                         ? "only a profile chosen by gpus or as the default is pinned"
                     : (node && *node) ? "the pod is bound to a node (spec.nodeName)"
                                       : "its kubernetes.io/hostname names nodes whose labels "
                                         "are unknown, which the pin could contradict");
        return;
    }
    for (size_t i = 0; i < m->p->node_labels.n && n < PROFILES_MAX_ENV; i++) {
        const struct profiles_kv *kv = &m->p->node_labels.v[i];
        const char *have = podjson_str(&m->r, selector, kv->name);

        if (have && strcmp(have, kv->value) != 0)
            return; /* cannot happen: select would have excluded the profile */
        if (!have)
            adds[n++] = kv;
    }
    if (n == 0) {
        MUTATE_TRACE(m, "pin: not needed: the nodeSelector has every label of the profile's");
        return;
    }
    if (!selector) {
        mutpath_pod(m, path, "/spec/nodeSelector", NULL);
        patch_op_begin(p, "add", path);
        mutate_resource_map(p, adds, n);
        patch_op_end(p);
    }
    for (size_t i = 0; selector && i < n; i++) {
        if (patch_escape_token(adds[i]->name, tok, sizeof(tok)) ||
            mutpath_pod(m, path, "/spec/nodeSelector/", tok)) {
            podjson_fail(&m->r, "a JSON Pointer is too long");
            return;
        }
        patch_op_str(p, "add", path, adds[i]->value);
    }
    m->res->pinned = 1;
    mutate_labels_text(adds, n, shown, sizeof(shown), full, sizeof(full));
    MUTATE_TRACE(m, "pin: pinned: the nodeSelector gets %s (the profile's nodeLabels)", full);
    MUTATE_WARN(m, MUTATE_W_PINNED, "pinned to profile \"%s\" nodes: nodeSelector %s",
                mutwarn_s(m, m->p->name, MUTATE_SHOWN_NAME), m->warn_full ? full : shown);
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
                          mutate_regular_container, &reg);
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

static int mutate_has_target_container(struct mutate_ctx *m)
{
    if (m->in->trace)
        explain_containers(m->in->trace, m->spec, m->ps);
    if (target_each_container(&m->r, podjson_arr(&m->r, m->spec, "containers"), m->ps, NULL, NULL))
        return 1;
    m->res->reason = MUTATE_R_NO_CONTAINER;
    MUTATE_TRACE(m, "no target container: nothing is added");
    MUTATE_WARN(m, MUTATE_W_NO_CONTAINER,
                "request a GPU or RDMA device, or name the training container \"pytorch\"; "
                "nothing added");
    return 0;
}

static void mutate_pod(struct mutate_ctx *m)
{
    char path[PATCH_PATH_MAX];
    struct mutate_regular first;

    m->host_network = podjson_bool(&m->r, m->spec, "hostNetwork");
    m->volumes = podjson_arr(&m->r, m->spec, "volumes") != NULL;
    mutate_pin(m);
    mutenv_effective(m);
    mutdetect_plan(m);
    first = mutate_regular_containers(m);
    if (m->in->trace)
        explain_init_containers(m->in->trace, m->spec, m->ps, m->p->init_containers);
    if (m->p->init_containers)
        mutate_init_containers(m);
    mutdetect_pod(m);
    mutenv_warn_host_network(m);
    if (first.first && mutpath_item(m, path, "containers", first.first_idx) == 0)
        mutate_resources(m, first.first, path);
    else
        MUTATE_TRACE(m, "resources: none added: %s",
                     m->p->resources.n ? "every target container has InfiniBand off"
                                       : "the profile has none");
    mutate_scheduler(m);
    m->res->reason = m->res->patch.n_ops ? MUTATE_R_MUTATED : MUTATE_R_NOTHING_MISSING;
}

/* The pod's own TARGET_ANNOTATION_INJECT that does nothing: said in the
 * trace for any pod, and warned about on a target (one that is not is never
 * written to; an opted-out one is left alone, warnings included). */
static void mutate_inject_ignored(struct mutate_ctx *m, enum target_verdict v)
{
    const char *where, *bad = target_inject_ignored(&m->r, m->metadata, &where);

    if (!bad)
        return;
    MUTATE_TRACE(m,
                 "pod: %s " TARGET_ANNOTATION_INJECT "=\"%s\" does nothing: only \"true\" "
                 "and \"false\" do",
                 where, bad);
    if (v == TARGET_YES)
        MUTATE_WARN(m, MUTATE_W_INJECT,
                    "set pod %s " TARGET_ANNOTATION_INJECT "=true|false (\"%s\" does nothing)",
                    where, mutwarn_s(m, bad, MUTATE_SHOWN_VALUE));
}

static int mutate_is_target(struct mutate_ctx *m)
{
    enum target_verdict v;
    const char *why;

    if (m->in->implicit_target) {
        MUTATE_TRACE(m, "pod: a target: a job's replica template");
        return 1;
    }
    v = target_pod_why(&m->r, m->metadata, m->ps->targets, &why);
    m->res->reason = v == TARGET_OPTED_OUT ? MUTATE_R_OPTED_OUT : MUTATE_R_NOT_TARGET;
    MUTATE_TRACE(m, "pod: %s: %s",
                 v == TARGET_YES         ? "a target"
                 : v == TARGET_OPTED_OUT ? "opted out"
                                         : "not a target",
                 why);
    mutate_inject_ignored(m, v);
    return v == TARGET_YES;
}

/* The namespace's TARGET_ANNOTATION_INJECT, where its labels are read for
 * this pod anyway (never a lookup of its own): a value that is no word of
 * the vocabulary does nothing, whichever webhook configuration is
 * installed (served either way, or under the opt-in component never). */
static void mutate_ns_inject(struct mutate_ctx *m)
{
    const cJSON *labels;
    const char *v;

    if (!m->hooks || !m->hooks->select.namespace_labels || mutns_labels(m, &labels))
        return;
    v = cJSON_GetStringValue(podjson_member(labels, TARGET_ANNOTATION_INJECT));
    if (target_namespace_inject_known(v))
        return;
    MUTATE_TRACE(m,
                 "namespace: label " TARGET_ANNOTATION_INJECT "=\"%s\" does nothing: "
                 "\"false\" opts the namespace out, \"true\" in (under the opt-in component)",
                 v);
    MUTATE_WARN(m, MUTATE_W_INJECT,
                "label namespace \"%s\" " TARGET_ANNOTATION_INJECT "=true|false (\"%s\" does "
                "nothing)",
                mutwarn_s(m, m->in->namespace_ ? m->in->namespace_ : "", MUTATE_SHOWN_NAME),
                mutwarn_s(m, v, MUTATE_SHOWN_VALUE));
}

/* A pod the webhook cannot read is admitted unchanged: blocking it would
 * block training even under failurePolicy: Ignore. */
static void mutate_fail(struct mutate_ctx *m, const char *why)
{
    struct mutate_result *res = m->res;

    patch_free(&res->patch);
    patch_init(&res->patch, res->patch.out.cap);
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
    if (!podjson_failed(&m.r) && (target = mutate_is_target(&m)) &&
        mutate_has_target_container(&m) && mutchoose_profile(&m)) {
        res->profile = m.p;
        mutate_pod(&m);
    }
    /* Only where the pod is written to anyway (its labels are read then). */
    if (!podjson_failed(&m.r) && target && (res->reason == MUTATE_R_MUTATED || res->warnings.n))
        mutate_ns_inject(&m);
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
