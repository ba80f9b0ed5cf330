#include "admission/mutplace.h"

#include "admission/mutate_ctx.h"
#include "admission/mutpath.h"
#include "base/jsonw.h"
#include "admission/patch.h"
#include "admission/podjson.h"
#include "admission/profiles.h"
#include "admission/select.h"
#include "admission/target.h"
#include "base/trace.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static int mutplace_any_asks(struct mutate_ctx *m, const char *prefix, size_t len)
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

static void mutplace_map(struct patch *p, const struct profiles_kv **adds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        jsonw_raw(&p->w, i ? "," : "{");
        jsonw_key(&p->w, adds[i]->name);
        jsonw_str(&p->w, adds[i]->value);
    }
    jsonw_raw(&p->w, "}");
}

/* Adds the entries to one of limits/requests (which), creating it if absent. */
static void mutplace_list(struct mutate_ctx *m, const cJSON *res, const char *rpath,
                          const char *which, const struct profiles_kv **adds, size_t n)
{
    struct patch *p = &m->res->patch;
    char list[PATCH_PATH_MAX], path[PATCH_PATH_MAX], tok[PATCH_PATH_MAX];

    if (mutpath_join(m, list, rpath, "/", which))
        return;
    if (!podjson_obj(&m->r, res, which)) {
        patch_op_begin(p, "add", list);
        mutplace_map(p, adds, n);
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
void mutplace_resources(struct mutate_ctx *m, const cJSON *c, const char *cpath)
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

        if (!mutplace_any_asks(m, name, plen))
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
        mutplace_map(p, adds, n);
        jsonw_raw(&p->w, ",\"requests\":");
        mutplace_map(p, adds, n);
        jsonw_raw(&p->w, "}");
        patch_op_end(p);
        return;
    }
    mutplace_list(m, res, path, "limits", adds, n);
    mutplace_list(m, res, path, "requests", adds, n);
}

void mutplace_scheduler(struct mutate_ctx *m)
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
static void mutplace_labels_text(const struct profiles_kv **kv, size_t n, char *out, size_t len,
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
void mutplace_pin(struct mutate_ctx *m)
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
        mutplace_map(p, adds, n);
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
    mutplace_labels_text(adds, n, shown, sizeof(shown), full, sizeof(full));
    MUTATE_TRACE(m, "pin: pinned: the nodeSelector gets %s (the profile's nodeLabels)", full);
    MUTATE_WARN(m, MUTATE_W_PINNED, "pinned to profile \"%s\" nodes: nodeSelector %s",
                mutwarn_s(m, m->p->name, MUTATE_SHOWN_NAME), m->warn_full ? full : shown);
}
