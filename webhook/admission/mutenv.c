#include "admission/mutenv.h"

#include "admission/mutate_ctx.h"
#include "admission/mutpath.h"
#include "base/jsonw.h"
#include "admission/nccl.h"
#include "admission/patch.h"
#include "admission/podjson.h"
#include "admission/profiles.h"
#include "base/trace.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

void mutenv_effective(struct mutate_ctx *m)
{
    const struct profiles_kvs *env = &m->p->env, *hn = &m->p->host_network_env;

    m->n_env = 0;
    for (size_t i = 0; i < env->n; i++) {
        const char *over = m->host_network ? profiles_kv_get(hn, env->v[i].name) : NULL;

        if (m->host_network && !over && strcmp(env->v[i].name, "NCCL_SOCKET_IFNAME") == 0) {
            m->dropped_ifname = 1;
            MUTATE_TRACE(m, "hostNetwork: the profile's NCCL_SOCKET_IFNAME is left out (no "
                            "hostNetworkEnv value): eth0 may be the wrong NIC on the node");
            continue;
        }
        if (over)
            MUTATE_TRACE(m, "hostNetwork: %s=%s from hostNetworkEnv in place of %s", env->v[i].name,
                         over, env->v[i].value);
        m->env[m->n_env].name = env->v[i].name;
        m->env[m->n_env++].value = over ? over : env->v[i].value;
    }
    for (size_t i = 0; m->host_network && i < hn->n; i++)
        if (!profiles_kv_get(env, hn->v[i].name)) {
            MUTATE_TRACE(m, "hostNetwork: %s=%s from hostNetworkEnv", hn->v[i].name,
                         hn->v[i].value);
            m->env[m->n_env++] = hn->v[i];
        }
}

const char *mutenv_value(struct mutate_ctx *m, const char *name)
{
    const struct profiles_kvs kvs = {.v = m->env, .n = m->n_env};

    return profiles_kv_get(&kvs, name);
}

void mutenv_warn_host_network(struct mutate_ctx *m)
{
    if (m->dropped_ifname && !m->detect_used)
        MUTATE_WARN(m, MUTATE_W_HOST_NETWORK,
                    "hostNetwork pod: set NCCL_SOCKET_IFNAME to the NIC, or hostNetworkEnv in "
                    "profile \"%s\"",
                    mutwarn_s(m, m->p->name, MUTATE_SHOWN_NAME));
}

/* The variables NCCL's InfiniBand/RoCE transport reads. */
static int mutenv_is_ib_var(const char *name)
{
    return strncmp(name, "NCCL_IB_", 8) == 0;
}

/* A user's NCCL_IB_HCA prefix collides only with devices that exist: those
 * the profile names are the ones known. Returns 1 with msg on a problem. */
static int mutenv_check_nccl(struct mutate_ctx *m, const char *name, const char *value, char *msg,
                             size_t msglen)
{
    if (strcmp(name, "NCCL_IB_HCA") == 0)
        return nccl_check_hca(value, profiles_kv_get(&m->p->env, "NCCL_IB_HCA"), msg, msglen) !=
               NCCL_VALUE_OK;
    return nccl_check(name, value, msg, msglen) != NCCL_VALUE_OK;
}

/* One pass over the container's env: warns about NCCL values the user wrote
 * that NCCL will read differently (with InfiniBand off, NCCL reads no other
 * NCCL_IB_* variable), and finds, for each of the profile's variables, the
 * first entry declaring it (decl[i], NULL when none). */
static void mutenv_scan_user_env(struct mutate_ctx *m, const cJSON *env, const char *cname,
                                 int ib_off, const cJSON **decl)
{
    const cJSON *e;
    char msg[NCCL_MSG_LEN];

    memset(decl, 0, m->n_env * sizeof(*decl));
    cJSON_ArrayForEach(e, env)
    {
        const char *name = podjson_str(&m->r, e, "name");
        const char *value = podjson_str(&m->r, e, "value");

        if (!name)
            continue;
        if (value && nccl_is_nccl_var(name) &&
            !(ib_off && mutenv_is_ib_var(name) && strcmp(name, MUTENV_IB_DISABLE) != 0) &&
            mutenv_check_nccl(m, name, value, msg, sizeof(msg)))
            MUTATE_WARN(m, MUTATE_W_NCCL_VALUE, "%s (container \"%s\")", msg,
                        mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
        for (size_t i = 0; i < m->n_env; i++)
            if (!decl[i] && strcmp(name, m->env[i].name) == 0)
                decl[i] = e;
    }
}

static void mutenv_trace_declared(struct mutate_ctx *m, const struct profiles_kv *kv,
                                  const char *value, int value_from)
{
    if (!value && value_from)
        trace_add(m->in->trace,
                  "%s: kept the container's valueFrom (env) over the profile's \"%s\"", kv->name,
                  kv->value);
    else if (strcmp(value ? value : "", kv->value) != 0)
        trace_add(m->in->trace, "%s: kept the container's \"%s\" (env) over the profile's \"%s\"",
                  kv->name, value ? value : "", kv->value);
    else
        trace_add(m->in->trace, "%s=\"%s\": kept: the container's env has the same value", kv->name,
                  kv->value);
}

/* The user's entry e declares the profile's variable kv: the user's value
 * wins, with a warning when it differs. */
static void mutenv_declared(struct mutate_ctx *m, const cJSON *e, const struct profiles_kv *kv,
                            const char *cname)
{
    const char *value = podjson_str(&m->r, e, "value");

    if (m->in->trace)
        mutenv_trace_declared(m, kv, value, podjson_obj(&m->r, e, "valueFrom") != NULL);
    if (!value && podjson_obj(&m->r, e, "valueFrom"))
        MUTATE_WARN(m, MUTATE_W_OVERRIDE,
                    "drop %s (valueFrom) in container \"%s\" to get the profile's value",
                    mutwarn_s(m, kv->name, MUTATE_SHOWN_VAR),
                    mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
    else if (strcmp(value ? value : "", kv->value) != 0)
        MUTATE_WARN(m, MUTATE_W_OVERRIDE, "drop %s in container \"%s\" to get the profile's %s",
                    mutwarn_s(m, kv->name, MUTATE_SHOWN_VAR),
                    mutwarn_s(m, cname, MUTATE_SHOWN_NAME),
                    mutwarn_s(m, kv->value, MUTATE_SHOWN_VALUE));
}

/* The key an envFrom source would give variable name, or NULL when its
 * prefix rules it out. */
static const char *mutenv_envfrom_key(struct mutate_ctx *m, const cJSON *src, const char *name)
{
    const char *prefix = podjson_str(&m->r, src, "prefix");
    size_t n = prefix ? strlen(prefix) : 0;

    if (n && strncmp(name, prefix, n) != 0)
        return NULL;
    return name + n;
}

static void mutenv_envfrom_warn(struct mutate_ctx *m, const char *cname, const cJSON *cm,
                                const char *ref_name)
{
    MUTATE_WARN(m, MUTATE_W_ENVFROM,
                "move NCCL_* of %s \"%s\" to container \"%s\"'s env (profile wins)",
                cm ? "ConfigMap" : "Secret", mutwarn_s(m, ref_name, MUTATE_SHOWN_NAME),
                mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
}

int mutenv_envfrom_declares(struct mutate_ctx *m, const cJSON *envfrom, const char *name,
                            const char *cname, struct mutenv_envfrom_warned *warned)
{
    const cJSON *src;
    size_t i = 0;

    cJSON_ArrayForEach(src, envfrom)
    {
        const cJSON *cm = podjson_obj(&m->r, src, "configMapRef");
        const cJSON *sec = podjson_obj(&m->r, src, "secretRef");
        const cJSON *ref = cm ? cm : sec;
        const char *key = mutenv_envfrom_key(m, src, name);
        const char *ref_name = podjson_str(&m->r, ref, "name");
        enum mutate_envfrom answer = MUTATE_ENVFROM_UNKNOWN;
        size_t at = i++;

        if (!ref || !key)
            continue;
        if (at >= MUTENV_ENVFROM_MAX) {
            if (!warned->past_max)
                MUTATE_WARN(m, MUTATE_W_ENVFROM,
                            "container \"%s\": move NCCL_* to env; envFrom past the %dth source "
                            "is unchecked",
                            mutwarn_s(m, cname, MUTATE_SHOWN_NAME), MUTENV_ENVFROM_MAX);
            warned->past_max = 1;
            return 0;
        }
        if (cm && m->hooks && m->hooks->configmap_has_key && ref_name)
            answer = m->hooks->configmap_has_key(m->hooks->ctx, m->in->namespace_, ref_name, key);
        if (answer == MUTATE_ENVFROM_HAS)
            return 1;
        if (answer == MUTATE_ENVFROM_UNKNOWN && !(warned->source & 1ull << at)) {
            warned->source |= 1ull << at;
            mutenv_envfrom_warn(m, cname, cm, ref_name);
        }
    }
    return 0;
}

/* NCCL_IB_DISABLE from envFrom as the kubelet resolves it, the last source
 * that has the key winning: 1 with its value in out when a readable
 * ConfigMap gives it and no later source might, 0 otherwise. */
static int mutenv_envfrom_value(struct mutate_ctx *m, const cJSON *envfrom, char *out, size_t len)
{
    const cJSON *src;
    int known = 0;
    size_t i = 0;

    cJSON_ArrayForEach(src, envfrom)
    {
        const cJSON *cm = podjson_obj(&m->r, src, "configMapRef");
        const cJSON *ref = cm ? cm : podjson_obj(&m->r, src, "secretRef");
        const char *key = mutenv_envfrom_key(m, src, MUTENV_IB_DISABLE);
        const char *ref_name = podjson_str(&m->r, ref, "name");
        enum mutate_envfrom answer = MUTATE_ENVFROM_UNKNOWN;

        if (!ref || !key)
            continue;
        if (i++ < MUTENV_ENVFROM_MAX && cm && ref_name && m->hooks && m->hooks->configmap_value)
            answer = m->hooks->configmap_value(m->hooks->ctx, m->in->namespace_, ref_name, key, out,
                                               len);
        if (answer != MUTATE_ENVFROM_LACKS)
            known = answer == MUTATE_ENVFROM_HAS;
    }
    return known;
}

int mutenv_ib_off(struct mutate_ctx *m, const cJSON *c, char *value, size_t len)
{
    const cJSON *e, *last = NULL;
    const char *v;

    cJSON_ArrayForEach(e, podjson_arr(&m->r, c, "env"))
    {
        const char *name = podjson_str(&m->r, e, "name");

        if (name && strcmp(name, MUTENV_IB_DISABLE) == 0)
            last = e;
    }
    if (last) {
        v = podjson_str(&m->r, last, "value");
        if (!v || podjson_obj(&m->r, last, "valueFrom"))
            return 0;
        snprintf(value, len, "%s", v);
        return nccl_reads_nonzero(v);
    }
    return mutenv_envfrom_value(m, podjson_arr(&m->r, c, "envFrom"), value, len) &&
           nccl_reads_nonzero(value);
}

static void mutenv_entry(struct mutate_ctx *m, const struct profiles_kv *kv)
{
    jsonw_raw(&m->res->patch.w, "{\"name\":");
    jsonw_str(&m->res->patch.w, kv->name);
    jsonw_raw(&m->res->patch.w, ",\"value\":");
    jsonw_str(&m->res->patch.w, kv->value);
    jsonw_raw(&m->res->patch.w, "}");
}

/* The variables the detected file sets in place of the profile's: NCCL
 * reads the file for what the environment lacks, so the env must lack them.
 * NCCL_SOCKET_IFNAME stays: a profile's value goes to nccl-detect as it is
 * (--socket-ifname), and without one the env has none either. */
static int mutenv_is_detected_var(const char *name)
{
    return strcmp(name, "NCCL_IB_HCA") == 0 || strcmp(name, "NCCL_IB_GID_INDEX") == 0;
}

const cJSON *mutenv_entry_named(struct mutate_ctx *m, const cJSON *env, const char *name)
{
    const cJSON *e, *last = NULL;

    cJSON_ArrayForEach(e, env)
    {
        const char *n = podjson_str(&m->r, e, "name");

        if (n && strcmp(n, name) == 0)
            last = e;
    }
    return last;
}

/* Why one of the profile's variables is not in the container's env. */
static void mutenv_trace_left_out(struct mutate_ctx *m, const struct profiles_kv *kv, int ib_off)
{
    if (ib_off && strcmp(kv->name, MUTENV_IB_DISABLE) == 0)
        trace_add(m->in->trace, "%s: kept the container's: it turns InfiniBand off", kv->name);
    else if (ib_off)
        trace_add(m->in->trace, "%s=\"%s\": left out: NCCL_IB_DISABLE turns InfiniBand off",
                  kv->name, kv->value);
    else
        trace_add(m->in->trace,
                  "%s=\"%s\": left out: run-time detection writes it to " MUTATE_DETECT_FILE,
                  kv->name, kv->value);
}

void mutenv_container(struct mutate_ctx *m, const cJSON *c, const char *cpath, const char *cname,
                      int ib_off, int detected)
{
    static const struct profiles_kv conf_file = {MUTATE_CONF_FILE, MUTATE_DETECT_FILE};
    const cJSON *env = podjson_arr(&m->r, c, "env");
    const struct profiles_kv *adds[MUTATE_ENV_MAX + 1];
    const cJSON *decl[MUTATE_ENV_MAX], *envfrom = NULL;
    struct mutenv_envfrom_warned warned = {0};
    size_t n = 0;
    int envfrom_read = 0;
    char path[PATCH_PATH_MAX];

    mutenv_scan_user_env(m, env, cname, ib_off, decl);
    /* mutdetect_container() made sure an entry there is this one. */
    if (detected && !mutenv_entry_named(m, env, MUTATE_CONF_FILE))
        adds[n++] = &conf_file;
    else if (detected)
        MUTATE_TRACE(m, MUTATE_CONF_FILE ": kept: the container's names the detected file");
    for (size_t i = 0; i < m->n_env; i++) {
        if ((ib_off && mutenv_is_ib_var(m->env[i].name)) ||
            (detected && mutenv_is_detected_var(m->env[i].name))) {
            if (m->in->trace)
                mutenv_trace_left_out(m, &m->env[i], ib_off);
            continue;
        }
        if (decl[i]) {
            mutenv_declared(m, decl[i], &m->env[i], cname);
            continue;
        }
        /* Read once, and only when a variable is left to look for. */
        if (!envfrom_read++)
            envfrom = podjson_arr(&m->r, c, "envFrom");
        if (!mutenv_envfrom_declares(m, envfrom, m->env[i].name, cname, &warned))
            adds[n++] = &m->env[i];
        else
            MUTATE_TRACE(m, "%s: kept: an envFrom ConfigMap of the container declares it",
                         m->env[i].name);
    }
    for (size_t i = 0; m->in->trace && i < n; i++)
        trace_add(m->in->trace, "%s=\"%s\": added%s", adds[i]->name, adds[i]->value,
                  adds[i] == &conf_file ? " (run-time detection: NCCL 2.23+ reads the file)" : "");
    memcpy(m->env_added, adds, n * sizeof(*adds));
    m->n_env_added = n;
    if (n == 0)
        return;
    if (!env) {
        mutpath_join(m, path, cpath, "/env", NULL);
        patch_op_begin(&m->res->patch, "add", path);
        for (size_t i = 0; i < n; i++) {
            jsonw_raw(&m->res->patch.w, i ? "," : "[");
            mutenv_entry(m, adds[i]);
        }
        jsonw_raw(&m->res->patch.w, "]");
        patch_op_end(&m->res->patch);
        return;
    }
    mutpath_join(m, path, cpath, "/env/-", NULL);
    for (size_t i = 0; i < n; i++) {
        patch_op_begin(&m->res->patch, "add", path);
        mutenv_entry(m, adds[i]);
        patch_op_end(&m->res->patch);
    }
}
