#include "admission/mutcaps.h"

#include "admission/mutate_ctx.h"
#include "admission/mutns.h"
#include "admission/mutpath.h"
#include "base/jsonw.h"
#include "admission/patch.h"
#include "admission/podjson.h"
#include "admission/podsec.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static int mutcaps_has_string(const cJSON *arr, const char *a, const char *b)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, arr)
    {
        if (cJSON_IsString(it) &&
            (strcmp(it->valuestring, a) == 0 || (b && strcmp(it->valuestring, b) == 0)))
            return 1;
    }
    return 0;
}

int mutcaps_runs_as_non_root(struct mutate_ctx *m, const cJSON *sc)
{
    const cJSON *psc = podjson_obj(&m->r, m->spec, "securityContext");
    long long uid;

    if (podjson_int(&m->r, sc, "runAsUser", &uid) || podjson_int(&m->r, psc, "runAsUser", &uid))
        return uid != 0;
    if (podjson_member(sc, "runAsNonRoot"))
        return podjson_bool(&m->r, sc, "runAsNonRoot");
    return podjson_bool(&m->r, psc, "runAsNonRoot");
}

/* The namespace's MUTATE_LABEL_IPC_LOCK: 1 for "false" (leave IPC_LOCK out),
 * else 0, warning once about a value that is neither "true" nor "false"
 * (ignored: the other levels decide, as without the label). */
static int mutcaps_ipc_lock_label_off(struct mutate_ctx *m, const cJSON *labels)
{
    const char *v = cJSON_GetStringValue(podjson_member(labels, MUTATE_LABEL_IPC_LOCK));

    if (!v || strcmp(v, "true") == 0)
        return 0;
    if (strcmp(v, "false") == 0)
        return 1;
    MUTATE_WARN(m, MUTATE_W_IPC_LOCK,
                "label namespace \"%s\" " MUTATE_LABEL_IPC_LOCK "=false|true (\"%s\" ignored)",
                mutwarn_s(m, m->in->namespace_ ? m->in->namespace_ : "", MUTATE_SHOWN_NAME),
                mutwarn_s(m, v, MUTATE_SHOWN_VALUE));
    return 0;
}

enum mutate_podsec mutcaps_podsec_plan(struct mutate_ctx *m)
{
    const cJSON *labels;
    const struct podsec_config *conf = m->in->opts ? m->in->opts->podsec : NULL;
    const char *exempt;
    int hook = m->hooks && m->hooks->select.namespace_labels;

    if (m->podsec != MUTATE_PODSEC_UNPLANNED)
        return m->podsec;
    m->podsec = MUTATE_PODSEC_ADD;
    m->podsec_exempt = exempt = podsec_exempt(conf, m->in->namespace_, m->in->user,
                                              podjson_str(&m->r, m->spec, "runtimeClassName"));
    if (hook && mutns_labels(m, &labels))
        return m->podsec = MUTATE_PODSEC_UNKNOWN;
    if (hook && mutcaps_ipc_lock_label_off(m, labels))
        return m->podsec = MUTATE_PODSEC_OFF_LABEL;
    if (exempt) {
        MUTATE_TRACE(m,
                     "Pod Security: the pod is exempt by its %s (--pod-security-config): "
                     "IPC_LOCK may be added",
                     exempt);
        return m->podsec;
    }
    if (!hook)
        return m->podsec;
    podsec_read(labels, conf ? conf->defaults : NULL, &m->policy);
    if (!podsec_allows_add(m->policy.level[PODSEC_ENFORCE], "IPC_LOCK"))
        m->podsec = MUTATE_PODSEC_FORBIDDEN;
    else if (!podsec_allows_add(m->policy.level[PODSEC_WARN], "IPC_LOCK") ||
             !podsec_allows_add(m->policy.level[PODSEC_AUDIT], "IPC_LOCK"))
        m->podsec = MUTATE_PODSEC_ADD_NOTED;
    return m->podsec;
}

/* 1 when container cname may get IPC_LOCK; else 0, having said why. */
static int mutcaps_podsec_allows(struct mutate_ctx *m, const char *cname)
{
    enum mutate_podsec plan = mutcaps_podsec_plan(m);
    const char *invalid = m->policy.invalid[PODSEC_ENFORCE];

    switch (plan) {
    case MUTATE_PODSEC_FORBIDDEN:
        if (invalid)
            MUTATE_WARN(
                m, MUTATE_W_POD_SECURITY,
                "fix Pod Security enforce=\"%s\", read as restricted: no IPC_LOCK in \"%s\"",
                mutwarn_s(m, invalid, MUTATE_SHOWN_VALUE), mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
        else
            MUTATE_WARN(m, MUTATE_W_POD_SECURITY,
                        "raise memlock on nodes for container \"%s\": no IPC_LOCK under Pod "
                        "Security %s",
                        mutwarn_s(m, cname, MUTATE_SHOWN_NAME),
                        podsec_level_name(m->policy.level[PODSEC_ENFORCE]));
        return 0;
    case MUTATE_PODSEC_UNKNOWN:
        /* An exempt pod is exempt from Pod Security, not from the label. */
        MUTATE_WARN(m, MUTATE_W_POD_SECURITY,
                    "check the webhook can read namespaces: %s unknown, no IPC_LOCK in \"%s\"",
                    m->podsec_exempt ? "ipc-lock label" : "Pod Security level",
                    mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
        return 0;
    default: return 1;
    }
}

/* IPC_LOCK was added where the warn or audit level forbids it. */
static void mutcaps_podsec_note(struct mutate_ctx *m, const char *cname)
{
    int warn = !podsec_allows_add(m->policy.level[PODSEC_WARN], "IPC_LOCK");
    int audit = !podsec_allows_add(m->policy.level[PODSEC_AUDIT], "IPC_LOCK");
    char what[32];

    if (m->podsec != MUTATE_PODSEC_ADD_NOTED)
        return;
    if (warn && audit)
        snprintf(what, sizeof(what), "warning and audit");
    else
        snprintf(what, sizeof(what), "%s %s",
                 podsec_level_name(m->policy.level[warn ? PODSEC_WARN : PODSEC_AUDIT]),
                 warn ? "warning" : "audit");
    MUTATE_WARN(m, MUTATE_W_POD_SECURITY,
                "ignore Pod Security %s on IPC_LOCK in container \"%s\" (added for RDMA)", what,
                mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
}

void mutcaps_ipc_lock(struct mutate_ctx *m, const cJSON *c, const char *cpath, const char *cname)
{
    const cJSON *sc = podjson_obj(&m->r, c, "securityContext");
    const cJSON *caps = podjson_obj(&m->r, sc, "capabilities");
    const cJSON *add = podjson_arr(&m->r, caps, "add");
    struct patch *p = &m->res->patch;
    char path[PATCH_PATH_MAX];
    int has;

    /* The admins' switches first, the cluster's and the profile's: they
     * chose it, so no warning, whatever else would have been said. */
    if (m->in->opts && m->in->opts->ipc_lock == MUTATE_IPC_LOCK_NEVER) {
        MUTATE_TRACE(m, "IPC_LOCK: not added: --ipc-lock=never (the cluster's switch)");
        return;
    }
    if (!m->p->ipc_lock || podjson_bool(&m->r, sc, "privileged")) {
        MUTATE_TRACE(m, "IPC_LOCK: not added: %s",
                     m->p->ipc_lock ? "the container is privileged (it has every capability)"
                                    : "the profile's ipcLock is false (the profile's switch)");
        return;
    }
    has = mutcaps_has_string(add, "IPC_LOCK", "CAP_IPC_LOCK");
    /* And the namespace's, read with the one lookup Pod Security uses. */
    if (!has && mutcaps_podsec_plan(m) == MUTATE_PODSEC_OFF_LABEL) {
        MUTATE_TRACE(m, "IPC_LOCK: not added: the namespace's label " MUTATE_LABEL_IPC_LOCK
                        "=false (the namespace's switch)");
        return;
    }
    /* Asked before Pod Security: a capability that cannot work needs no
     * level's permission, and would only trip the policies that forbid
     * adding any. */
    if (!has && mutcaps_runs_as_non_root(m, sc)) {
        MUTATE_WARN(m, MUTATE_W_NON_ROOT,
                    "raise memlock on nodes for container \"%s\": no IPC_LOCK, which does "
                    "nothing as non-root",
                    mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
        MUTATE_TRACE(m, "IPC_LOCK: not added: the container runs as non-root (runAsUser not 0, "
                        "or runAsNonRoot), where an added capability is not effective; NCCL's "
                        "memory registration then needs the memlock ulimit of the node's "
                        "container runtime raised");
        return;
    }
    if (!has && !mutcaps_podsec_allows(m, cname)) {
        MUTATE_TRACE(m, "IPC_LOCK: not added: the namespace's Pod Security enforce level forbids "
                        "it, or cannot be read (the warning says which)");
        return;
    }
    if (has && mutcaps_runs_as_non_root(m, sc))
        MUTATE_WARN(m, MUTATE_W_NON_ROOT,
                    "raise the memlock ulimit for container \"%s\": non-root, so IPC_LOCK does "
                    "nothing",
                    mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
    if (has) {
        MUTATE_TRACE(m, "IPC_LOCK: already in securityContext.capabilities.add");
        return;
    }
    mutcaps_podsec_note(m, cname);
    MUTATE_TRACE(m, "IPC_LOCK: added to securityContext.capabilities.add");
    if (!sc) {
        mutpath_join(m, path, cpath, "/securityContext", NULL);
        patch_op_begin(p, "add", path);
        jsonw_raw(&p->w, "{\"capabilities\":{\"add\":[\"IPC_LOCK\"]}}");
    } else if (!caps) {
        mutpath_join(m, path, cpath, "/securityContext/capabilities", NULL);
        patch_op_begin(p, "add", path);
        jsonw_raw(&p->w, "{\"add\":[\"IPC_LOCK\"]}");
    } else if (!add) {
        mutpath_join(m, path, cpath, "/securityContext/capabilities/add", NULL);
        patch_op_begin(p, "add", path);
        jsonw_raw(&p->w, "[\"IPC_LOCK\"]");
    } else {
        mutpath_join(m, path, cpath, "/securityContext/capabilities/add/-", NULL);
        patch_op_begin(p, "add", path);
        jsonw_str(&p->w, "IPC_LOCK");
    }
    patch_op_end(p);
}
