#include "mutate.h"

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

#define MUTATE_SHM_VOLUME "rdma-webhook-shm"
/* Names the volume may take: MUTATE_SHM_VOLUME, then -1 .. -(this - 1). */
#define MUTATE_SHM_NAMES 1000
#define MUTATE_ENV_MAX   (2 * PROFILES_MAX_ENV)
/* envFrom sources checked per container: each can cost an API call (within
 * the admission's budget) and a warning. Sources past them are not checked
 * (their keys lose to the profile's, as an unreadable source's do), and one
 * warning per container says so. */
#define MUTATE_ENVFROM_MAX 64
#define MUTATE_CONF_FILE   "NCCL_CONF_FILE"
/* Room for the shortened names of one warning (mutate_s). */
#define MUTATE_SHOWN_SLOTS 6
#define MUTATE_SHOWN_LEN   48
/* How long the names in a short warning may be: a 63-byte container name
 * still leaves room for the fix. */
#define MUTATE_SHOWN_NAME  20
#define MUTATE_SHOWN_VAR   24
#define MUTATE_SHOWN_VALUE 16

/* Whether IPC_LOCK may be added, from the namespace's Pod Security levels
 * (mutate.h, podsec.h). */
enum mutate_podsec {
    MUTATE_PODSEC_UNPLANNED,
    MUTATE_PODSEC_ADD,       /* allowed by every mode, or no namespace hook */
    MUTATE_PODSEC_ADD_NOTED, /* added; the warn or audit level reports it */
    MUTATE_PODSEC_FORBIDDEN, /* the enforce level would reject the pod: not added */
    MUTATE_PODSEC_UNKNOWN,   /* the labels could not be read: not added */
    MUTATE_PODSEC_OFF_LABEL, /* the namespace's MUTATE_LABEL_IPC_LOCK is "false": not added */
};

/* Whether the pod gets run-time detection (mutate.h). */
enum mutate_detect {
    MUTATE_DETECT_OFF,      /* the profile does not ask for it */
    MUTATE_DETECT_NO_IMAGE, /* it does, but there is no detect_image */
    MUTATE_DETECT_TAKEN,    /* it does, but the pod has its own object of a name it adds */
    MUTATE_DETECT_ON,
};

struct mutate_ctx {
    const struct mutate_input *in;
    const struct profiles *ps;
    const struct profiles_entry *p;
    const struct mutate_hooks *hooks;
    /* hooks->select as select and this file see it: the Namespace's labels
     * asked for once per call (mutate_ns_labels). */
    struct select_hooks select;
    int ns_asked, ns_rc;
    cJSON *ns_labels;
    enum mutate_podsec podsec;
    const char *podsec_exempt; /* what exempts the pod from Pod Security, or NULL */
    struct podsec_policy policy;
    struct mutate_result *res;
    struct podjson r;
    const cJSON *metadata;
    const cJSON *spec;
    int host_network;
    enum select_rule rule; /* how m->p was chosen */
    int hosts_unknown;     /* the Nodes a hostname names could not be told: never pin */
    char shm_volume[64];   /* "" until the volume is added */
    int shm_no_name;       /* every name the volume may take is the pod's */
    int volumes;           /* spec.volumes exists, in the pod or made by the patch */
    int dropped_ifname;    /* hostNetwork: the profile's NCCL_SOCKET_IFNAME left out */
    enum mutate_detect detect;
    const char *detect_taken; /* MUTATE_DETECT_TAKEN: what of the pod's has the name */
    int detect_used;          /* some container reads the detected file */
    int ib_on;                /* some regular target container has InfiniBand on */
    /* The profile's variables as this pod gets them (hostNetwork overrides applied). */
    struct profiles_kv env[MUTATE_ENV_MAX];
    size_t n_env;
    /* The warning being made (MUTATE_WARN). */
    int warn_full;
    char warn_full_text[MUTATE_WARNING_FULL_MAX];
    char warn_short_text[MUTATE_WARNING_MAX];
    char shown[MUTATE_SHOWN_SLOTS][MUTATE_SHOWN_LEN];
    unsigned shown_at;
};

/* A line of `mutate --explain` (mutate_input.trace); nothing, with its
 * arguments unevaluated, without a trace. */
#define MUTATE_TRACE(m, ...) TRACE_LINE((m)->in->trace, __VA_ARGS__)

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

/* Every warning is made twice from the same arguments (MUTATE_WARN): first
 * with names and values whole (mutate_s returns them as they are), for the
 * admission log; then with them shortened, for the user. The short text is
 * cut at MUTATE_WARNING_MAX-1 bytes only as a last resort: the unit tests
 * check that each fits with 63-byte names. */
#define MUTATE_WARN(m, kind, ...)                                                                  \
    do {                                                                                           \
        (m)->warn_full = 1;                                                                        \
        mutate_warn_text((m), __VA_ARGS__);                                                        \
        (m)->warn_full = 0;                                                                        \
        mutate_warn_text((m), __VA_ARGS__);                                                        \
        mutate_warn_add((m), (kind));                                                              \
    } while (0)

/* s as the warning being made shows it: whole in the full text, else cut to
 * at most max bytes (MUTATE_SHOWN_LEN-1 at most), "..." included. */
static const char *mutate_s(struct mutate_ctx *m, const char *s, size_t max)
{
    char *out;

    if (!s)
        s = "?";
    if (m->warn_full)
        return s;
    if (max >= MUTATE_SHOWN_LEN)
        max = MUTATE_SHOWN_LEN - 1;
    out = m->shown[m->shown_at++ % MUTATE_SHOWN_SLOTS];
    utf8_shorten(s, max, out, max + 1);
    return out;
}

__attribute__((format(printf, 2, 3))) static void mutate_warn_text(struct mutate_ctx *m,
                                                                   const char *fmt, ...)
{
    char buf[MUTATE_WARNING_FULL_MAX];
    va_list ap;
    int len = snprintf(buf, sizeof(buf), "%s", MUTATE_WARNING_LEAD);

    va_start(ap, fmt);
    vsnprintf(buf + len, sizeof(buf) - (size_t)len, fmt, ap);
    va_end(ap);
    /* A user's text (an annotation, a container's name) goes into the
     * log, the Event and kubectl's terminal: one line, no escape sequence. */
    if (m->warn_full)
        utf8_shorten(buf, sizeof(m->warn_full_text) - 1, m->warn_full_text,
                     sizeof(m->warn_full_text));
    else
        utf8_shorten(buf, sizeof(m->warn_short_text) - 1, m->warn_short_text,
                     sizeof(m->warn_short_text));
    utf8_fold(m->warn_full ? m->warn_full_text : m->warn_short_text);
}

/* Keeps the warning just made, once: the same short text twice is one. */
static void mutate_warn_add(struct mutate_ctx *m, enum mutate_warning_kind kind)
{
    struct mutate_warnings *w = &m->res->warnings;

    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->text[i], m->warn_short_text) == 0)
            return;
    if (w->n < MUTATE_MAX_WARNINGS) {
        w->kind[w->n] = kind;
        memcpy(w->full[w->n], m->warn_full_text, strlen(m->warn_full_text) + 1);
        memcpy(w->text[w->n++], m->warn_short_text, strlen(m->warn_short_text) + 1);
    }
}

/* A user value as quoted in a warning: at most outlen-4 bytes and "...". */
static const char *mutate_short(const char *s, char *out, size_t outlen)
{
    utf8_shorten(s, outlen - 1, out, outlen);
    return out;
}

/* out = prefix + a + b (b may be NULL); ERR_OK, or ERR_TOO_BIG when it does
 * not fit: that fails the pod rather than patching the wrong place. out may
 * be prefix. */
static int mutate_join(struct mutate_ctx *m, char *out, const char *prefix, const char *a,
                       const char *b)
{
    size_t pl = strlen(prefix), al = strlen(a), bl = b ? strlen(b) : 0;

    if (pl + al + bl >= PATCH_PATH_MAX) {
        podjson_fail(&m->r, "a JSON Pointer is too long");
        out[0] = '\0';
        return ERR_TOO_BIG;
    }
    memmove(out, prefix, pl);
    memcpy(out + pl, a, al);
    if (b)
        memcpy(out + pl + al, b, bl);
    out[pl + al + bl] = '\0';
    return ERR_OK;
}

static const char *mutate_name(struct mutate_ctx *m, const cJSON *container)
{
    const char *name = podjson_str(&m->r, container, "name");

    return name ? name : "?";
}

/* base + suffix (+ tail, may be NULL), as mutate_join(). */
static int mutate_path(struct mutate_ctx *m, char *out, const char *suffix, const char *tail)
{
    return mutate_join(m, out, m->in->base, suffix, tail);
}

/* base + "/spec/" + list + "/" + idx: a container's path. */
static int mutate_item_path(struct mutate_ctx *m, char *out, const char *list, int idx)
{
    char tail[DECIMAL_MAX + 2] = "/";

    tail[1 + decimal_ll(tail + 1, idx)] = '\0';
    return mutate_path(m, out, "/spec/", list) || mutate_join(m, out, out, tail, NULL) ? ERR_TOO_BIG
                                                                                       : ERR_OK;
}

/* hostNetwork pods see the node's interfaces, where eth0 may be the wrong
 * NIC: there the profile's hostNetworkEnv replaces values, and without an
 * override NCCL_SOCKET_IFNAME is better left to NCCL than guessed. */
static void mutate_effective_env(struct mutate_ctx *m)
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

/* The pod's value of one of the profile's variables; NULL when it has none. */
static const char *mutate_env_value(struct mutate_ctx *m, const char *name)
{
    const struct profiles_kvs kvs = {.v = m->env, .n = m->n_env};

    return profiles_kv_get(&kvs, name);
}

/* Said once the containers are done: detection, when a container uses it,
 * finds the interface on the node instead. */
static void mutate_warn_host_network(struct mutate_ctx *m)
{
    if (m->dropped_ifname && !m->detect_used)
        MUTATE_WARN(m, MUTATE_W_HOST_NETWORK,
                    "hostNetwork pod: set NCCL_SOCKET_IFNAME to the NIC, or hostNetworkEnv in "
                    "profile \"%s\"",
                    mutate_s(m, m->p->name, MUTATE_SHOWN_NAME));
}

#define MUTATE_IB_DISABLE "NCCL_IB_DISABLE"

/* The variables NCCL's InfiniBand/RoCE transport reads. */
static int mutate_is_ib_var(const char *name)
{
    return strncmp(name, "NCCL_IB_", 8) == 0;
}

/* A user's NCCL_IB_HCA prefix collides only with devices that exist: those
 * the profile names are the ones known. Returns 1 with msg on a problem. */
static int mutate_check_nccl(struct mutate_ctx *m, const char *name, const char *value, char *msg,
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
static void mutate_scan_user_env(struct mutate_ctx *m, const cJSON *env, const char *cname,
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
            !(ib_off && mutate_is_ib_var(name) && strcmp(name, MUTATE_IB_DISABLE) != 0) &&
            mutate_check_nccl(m, name, value, msg, sizeof(msg)))
            MUTATE_WARN(m, MUTATE_W_NCCL_VALUE, "%s (container \"%s\")", msg,
                        mutate_s(m, cname, MUTATE_SHOWN_NAME));
        for (size_t i = 0; i < m->n_env; i++)
            if (!decl[i] && strcmp(name, m->env[i].name) == 0)
                decl[i] = e;
    }
}

static void mutate_trace_declared(struct mutate_ctx *m, const struct profiles_kv *kv,
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
static void mutate_env_declared(struct mutate_ctx *m, const cJSON *e, const struct profiles_kv *kv,
                                const char *cname)
{
    const char *value = podjson_str(&m->r, e, "value");

    if (m->in->trace)
        mutate_trace_declared(m, kv, value, podjson_obj(&m->r, e, "valueFrom") != NULL);
    if (!value && podjson_obj(&m->r, e, "valueFrom"))
        MUTATE_WARN(m, MUTATE_W_OVERRIDE,
                    "drop %s (valueFrom) in container \"%s\" to get the profile's value",
                    mutate_s(m, kv->name, MUTATE_SHOWN_VAR), mutate_s(m, cname, MUTATE_SHOWN_NAME));
    else if (strcmp(value ? value : "", kv->value) != 0)
        MUTATE_WARN(m, MUTATE_W_OVERRIDE, "drop %s in container \"%s\" to get the profile's %s",
                    mutate_s(m, kv->name, MUTATE_SHOWN_VAR), mutate_s(m, cname, MUTATE_SHOWN_NAME),
                    mutate_s(m, kv->value, MUTATE_SHOWN_VALUE));
}

/* The key an envFrom source would give variable name, or NULL when its
 * prefix rules it out. */
static const char *mutate_envfrom_key(struct mutate_ctx *m, const cJSON *src, const char *name)
{
    const char *prefix = podjson_str(&m->r, src, "prefix");
    size_t n = prefix ? strlen(prefix) : 0;

    if (n && strncmp(name, prefix, n) != 0)
        return NULL;
    return name + n;
}

/* Which envFrom warnings a container has had: one per source, and one for
 * the sources past MUTATE_ENVFROM_MAX. */
struct mutate_envfrom_warned {
    unsigned long long source; /* bit i: source i */
    int past_max;
};
_Static_assert(MUTATE_ENVFROM_MAX <= 64, "one bit of mutate_envfrom_warned.source per source");

static void mutate_envfrom_warn(struct mutate_ctx *m, const char *cname, const cJSON *cm,
                                const char *ref_name)
{
    MUTATE_WARN(m, MUTATE_W_ENVFROM,
                "move NCCL_* of %s \"%s\" to container \"%s\"'s env (profile wins)",
                cm ? "ConfigMap" : "Secret", mutate_s(m, ref_name, MUTATE_SHOWN_NAME),
                mutate_s(m, cname, MUTATE_SHOWN_NAME));
}

/* 1 when an envFrom ConfigMap of the container is known to declare name. An
 * unreadable source (every Secret, and ConfigMaps while the lookup is not
 * available) declares nothing but earns one warning, since the profile's
 * value, being in env, would silently win over it; so do the sources past
 * MUTATE_ENVFROM_MAX, which are not checked at all. */
static int mutate_envfrom_declares(struct mutate_ctx *m, const cJSON *envfrom, const char *name,
                                   const char *cname, struct mutate_envfrom_warned *warned)
{
    const cJSON *src;
    size_t i = 0;

    cJSON_ArrayForEach(src, envfrom)
    {
        const cJSON *cm = podjson_obj(&m->r, src, "configMapRef");
        const cJSON *sec = podjson_obj(&m->r, src, "secretRef");
        const cJSON *ref = cm ? cm : sec;
        const char *key = mutate_envfrom_key(m, src, name);
        const char *ref_name = podjson_str(&m->r, ref, "name");
        enum mutate_envfrom answer = MUTATE_ENVFROM_UNKNOWN;
        size_t at = i++;

        if (!ref || !key)
            continue;
        if (at >= MUTATE_ENVFROM_MAX) {
            if (!warned->past_max)
                MUTATE_WARN(m, MUTATE_W_ENVFROM,
                            "container \"%s\": move NCCL_* to env; envFrom past the %dth source "
                            "is unchecked",
                            mutate_s(m, cname, MUTATE_SHOWN_NAME), MUTATE_ENVFROM_MAX);
            warned->past_max = 1;
            return 0;
        }
        if (cm && m->hooks && m->hooks->configmap_has_key && ref_name)
            answer = m->hooks->configmap_has_key(m->hooks->ctx, m->in->namespace_, ref_name, key);
        if (answer == MUTATE_ENVFROM_HAS)
            return 1;
        if (answer == MUTATE_ENVFROM_UNKNOWN && !(warned->source & 1ull << at)) {
            warned->source |= 1ull << at;
            mutate_envfrom_warn(m, cname, cm, ref_name);
        }
    }
    return 0;
}

/* NCCL_IB_DISABLE from envFrom as the kubelet resolves it, the last source
 * that has the key winning: 1 with its value in out when a readable
 * ConfigMap gives it and no later source might, 0 otherwise. */
static int mutate_envfrom_value(struct mutate_ctx *m, const cJSON *envfrom, char *out, size_t len)
{
    const cJSON *src;
    int known = 0;
    size_t i = 0;

    cJSON_ArrayForEach(src, envfrom)
    {
        const cJSON *cm = podjson_obj(&m->r, src, "configMapRef");
        const cJSON *ref = cm ? cm : podjson_obj(&m->r, src, "secretRef");
        const char *key = mutate_envfrom_key(m, src, MUTATE_IB_DISABLE);
        const char *ref_name = podjson_str(&m->r, ref, "name");
        enum mutate_envfrom answer = MUTATE_ENVFROM_UNKNOWN;

        if (!ref || !key)
            continue;
        if (i++ < MUTATE_ENVFROM_MAX && cm && ref_name && m->hooks && m->hooks->configmap_value)
            answer = m->hooks->configmap_value(m->hooks->ctx, m->in->namespace_, ref_name, key, out,
                                               len);
        if (answer != MUTATE_ENVFROM_LACKS)
            known = answer == MUTATE_ENVFROM_HAS;
    }
    return known;
}

/* 1 when the container turns InfiniBand off: NCCL reads its NCCL_IB_DISABLE
 * as non-zero. The last env entry wins, as in the kubelet, then envFrom; a
 * valueFrom or a source that cannot be read leaves it on. value gets the
 * user's text. */
static int mutate_ib_off(struct mutate_ctx *m, const cJSON *c, char *value, size_t len)
{
    const cJSON *e, *last = NULL;
    const char *v;

    cJSON_ArrayForEach(e, podjson_arr(&m->r, c, "env"))
    {
        const char *name = podjson_str(&m->r, e, "name");

        if (name && strcmp(name, MUTATE_IB_DISABLE) == 0)
            last = e;
    }
    if (last) {
        v = podjson_str(&m->r, last, "value");
        if (!v || podjson_obj(&m->r, last, "valueFrom"))
            return 0;
        snprintf(value, len, "%s", v);
        return nccl_reads_nonzero(v);
    }
    return mutate_envfrom_value(m, podjson_arr(&m->r, c, "envFrom"), value, len) &&
           nccl_reads_nonzero(value);
}

static void mutate_env_entry(struct mutate_ctx *m, const struct profiles_kv *kv)
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
static int mutate_is_detected_var(const char *name)
{
    return strcmp(name, "NCCL_IB_HCA") == 0 || strcmp(name, "NCCL_IB_GID_INDEX") == 0;
}

/* The last env entry named name (the one the kubelet uses), or NULL. */
static const cJSON *mutate_env_entry_named(struct mutate_ctx *m, const cJSON *env, const char *name)
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
static void mutate_trace_left_out(struct mutate_ctx *m, const struct profiles_kv *kv, int ib_off)
{
    if (ib_off && strcmp(kv->name, MUTATE_IB_DISABLE) == 0)
        trace_add(m->in->trace, "%s: kept the container's: it turns InfiniBand off", kv->name);
    else if (ib_off)
        trace_add(m->in->trace, "%s=\"%s\": left out: NCCL_IB_DISABLE turns InfiniBand off",
                  kv->name, kv->value);
    else
        trace_add(m->in->trace,
                  "%s=\"%s\": left out: run-time detection writes it to " MUTATE_DETECT_FILE,
                  kv->name, kv->value);
}

/* Appends the profile's variables the container does not declare; with
 * InfiniBand off (ib_off), none of its NCCL_IB_* variables; for a container
 * that reads the detected file (detected), none of the detected variables,
 * and NCCL_CONF_FILE unless it has it. */
static void mutate_env(struct mutate_ctx *m, const cJSON *c, const char *cpath, const char *cname,
                       int ib_off, int detected)
{
    static const struct profiles_kv conf_file = {MUTATE_CONF_FILE, MUTATE_DETECT_FILE};
    const cJSON *env = podjson_arr(&m->r, c, "env");
    const struct profiles_kv *adds[MUTATE_ENV_MAX + 1];
    const cJSON *decl[MUTATE_ENV_MAX], *envfrom = NULL;
    struct mutate_envfrom_warned warned = {0};
    size_t n = 0;
    int envfrom_read = 0;
    char path[PATCH_PATH_MAX];

    mutate_scan_user_env(m, env, cname, ib_off, decl);
    /* mutate_detect_container() made sure an entry there is this one. */
    if (detected && !mutate_env_entry_named(m, env, MUTATE_CONF_FILE))
        adds[n++] = &conf_file;
    else if (detected)
        MUTATE_TRACE(m, MUTATE_CONF_FILE ": kept: the container's names the detected file");
    for (size_t i = 0; i < m->n_env; i++) {
        if ((ib_off && mutate_is_ib_var(m->env[i].name)) ||
            (detected && mutate_is_detected_var(m->env[i].name))) {
            if (m->in->trace)
                mutate_trace_left_out(m, &m->env[i], ib_off);
            continue;
        }
        if (decl[i]) {
            mutate_env_declared(m, decl[i], &m->env[i], cname);
            continue;
        }
        /* Read once, and only when a variable is left to look for. */
        if (!envfrom_read++)
            envfrom = podjson_arr(&m->r, c, "envFrom");
        if (!mutate_envfrom_declares(m, envfrom, m->env[i].name, cname, &warned))
            adds[n++] = &m->env[i];
        else
            MUTATE_TRACE(m, "%s: kept: an envFrom ConfigMap of the container declares it",
                         m->env[i].name);
    }
    for (size_t i = 0; m->in->trace && i < n; i++)
        trace_add(m->in->trace, "%s=\"%s\": added%s", adds[i]->name, adds[i]->value,
                  adds[i] == &conf_file ? " (run-time detection: NCCL 2.23+ reads the file)" : "");
    if (n == 0)
        return;
    if (!env) {
        mutate_join(m, path, cpath, "/env", NULL);
        patch_op_begin(&m->res->patch, "add", path);
        for (size_t i = 0; i < n; i++) {
            jsonw_raw(&m->res->patch.w, i ? "," : "[");
            mutate_env_entry(m, adds[i]);
        }
        jsonw_raw(&m->res->patch.w, "]");
        patch_op_end(&m->res->patch);
        return;
    }
    mutate_join(m, path, cpath, "/env/-", NULL);
    for (size_t i = 0; i < n; i++) {
        patch_op_begin(&m->res->patch, "add", path);
        mutate_env_entry(m, adds[i]);
        patch_op_end(&m->res->patch);
    }
}

static int mutate_has_string(const cJSON *arr, const char *a, const char *b)
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

/* A non-zero runAsUser, else runAsNonRoot: true, the container's setting
 * over the pod's. runAsNonRoot alone counts: the kubelet refuses to start
 * such a container when its image's user is 0 (or not numeric), so it runs
 * as non-root or not at all. */
static int mutate_runs_as_non_root(struct mutate_ctx *m, const cJSON *sc)
{
    const cJSON *psc = podjson_obj(&m->r, m->spec, "securityContext");
    long long uid;

    if (podjson_int(&m->r, sc, "runAsUser", &uid) || podjson_int(&m->r, psc, "runAsUser", &uid))
        return uid != 0;
    if (podjson_member(sc, "runAsNonRoot"))
        return podjson_bool(&m->r, sc, "runAsNonRoot");
    return podjson_bool(&m->r, psc, "runAsNonRoot");
}

/* The labels of the pod's Namespace, asked of the hook once per call,
 * whoever asks first (select, or mutate_podsec_plan); ERR_OK, or ERR_FAIL
 * when they cannot be had. */
static int mutate_ns_labels(struct mutate_ctx *m, const cJSON **labels)
{
    const struct select_hooks *h = &m->hooks->select;

    if (!m->ns_asked) {
        m->ns_asked = 1;
        m->ns_rc =
            h->namespace_labels(h->ctx, m->in->namespace_ ? m->in->namespace_ : "", &m->ns_labels);
    }
    *labels = m->ns_labels;
    return m->ns_rc || !m->ns_labels ? ERR_FAIL : ERR_OK;
}

static int mutate_node_labels_through(void *ctx, const char *name, cJSON **labels)
{
    const struct mutate_ctx *m = ctx;

    return m->hooks->select.node_labels(m->hooks->select.ctx, name, labels);
}

/* The namespace_labels hook select gets: the pod's own Namespace through
 * mutate_ns_labels, any other straight through. */
static int mutate_namespace_labels_once(void *ctx, const char *name, cJSON **labels)
{
    struct mutate_ctx *m = ctx;
    const cJSON *have;

    if (strcmp(name, m->in->namespace_ ? m->in->namespace_ : "") != 0)
        return m->hooks->select.namespace_labels(m->hooks->select.ctx, name, labels);
    if (mutate_ns_labels(m, &have))
        return ERR_FAIL;
    *labels = cJSON_Duplicate(have, 1);
    return *labels ? ERR_OK : ERR_NOMEM;
}

static void mutate_select_hooks(struct mutate_ctx *m)
{
    if (!m->hooks)
        return;
    m->select.ctx = m;
    m->select.node_labels = m->hooks->select.node_labels ? mutate_node_labels_through : NULL;
    m->select.namespace_labels =
        m->hooks->select.namespace_labels ? mutate_namespace_labels_once : NULL;
}

/* The namespace's MUTATE_LABEL_IPC_LOCK: 1 for "false" (leave IPC_LOCK out),
 * else 0, warning once about a value that is neither "true" nor "false"
 * (ignored: the other levels decide, as without the label). */
static int mutate_ipc_lock_label_off(struct mutate_ctx *m, const cJSON *labels)
{
    const char *v = cJSON_GetStringValue(podjson_member(labels, MUTATE_LABEL_IPC_LOCK));

    if (!v || strcmp(v, "true") == 0)
        return 0;
    if (strcmp(v, "false") == 0)
        return 1;
    MUTATE_WARN(m, MUTATE_W_IPC_LOCK,
                "label namespace \"%s\" " MUTATE_LABEL_IPC_LOCK "=false|true (\"%s\" ignored)",
                mutate_s(m, m->in->namespace_ ? m->in->namespace_ : "", MUTATE_SHOWN_NAME),
                mutate_s(m, v, MUTATE_SHOWN_VALUE));
    return 0;
}

/* Decided once, when the first container would get IPC_LOCK. Without the
 * hook (no API) it is added as ever. With it, labels that cannot be read
 * leave IPC_LOCK out: if enforce were baseline or restricted, or the
 * namespace's MUTATE_LABEL_IPC_LOCK said false, the pod would be rejected
 * after this webhook (for a PyTorchJob: never created), while without
 * IPC_LOCK it runs, NCCL needing the node's memlock limit at worst. The
 * label is read before the exemptions: they are Pod Security's, while the
 * label stands for the namespace's other policies. */
static enum mutate_podsec mutate_podsec_plan(struct mutate_ctx *m)
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
    if (hook && mutate_ns_labels(m, &labels))
        return m->podsec = MUTATE_PODSEC_UNKNOWN;
    if (hook && mutate_ipc_lock_label_off(m, labels))
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
static int mutate_podsec_allows(struct mutate_ctx *m, const char *cname)
{
    enum mutate_podsec plan = mutate_podsec_plan(m);
    const char *invalid = m->policy.invalid[PODSEC_ENFORCE];

    switch (plan) {
    case MUTATE_PODSEC_FORBIDDEN:
        if (invalid)
            MUTATE_WARN(
                m, MUTATE_W_POD_SECURITY,
                "fix Pod Security enforce=\"%s\", read as restricted: no IPC_LOCK in \"%s\"",
                mutate_s(m, invalid, MUTATE_SHOWN_VALUE), mutate_s(m, cname, MUTATE_SHOWN_NAME));
        else
            MUTATE_WARN(m, MUTATE_W_POD_SECURITY,
                        "raise memlock on nodes for container \"%s\": no IPC_LOCK under Pod "
                        "Security %s",
                        mutate_s(m, cname, MUTATE_SHOWN_NAME),
                        podsec_level_name(m->policy.level[PODSEC_ENFORCE]));
        return 0;
    case MUTATE_PODSEC_UNKNOWN:
        /* An exempt pod is exempt from Pod Security, not from the label. */
        MUTATE_WARN(m, MUTATE_W_POD_SECURITY,
                    "check the webhook can read namespaces: %s unknown, no IPC_LOCK in \"%s\"",
                    m->podsec_exempt ? "ipc-lock label" : "Pod Security level",
                    mutate_s(m, cname, MUTATE_SHOWN_NAME));
        return 0;
    default: return 1;
    }
}

/* IPC_LOCK was added where the warn or audit level forbids it. */
static void mutate_podsec_note(struct mutate_ctx *m, const char *cname)
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
                mutate_s(m, cname, MUTATE_SHOWN_NAME));
}

/* Adds IPC_LOCK, creating securityContext, capabilities and add as needed,
 * since an "add" under a missing parent fails in the apiserver. Where it
 * would do nothing (a non-root container) or Pod Security forbids adding
 * it, the container keeps what it has; it may need the node's memlock limit
 * instead, which the warning says. */
static void mutate_ipc_lock(struct mutate_ctx *m, const cJSON *c, const char *cpath,
                            const char *cname)
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
    has = mutate_has_string(add, "IPC_LOCK", "CAP_IPC_LOCK");
    /* And the namespace's, read with the one lookup Pod Security uses. */
    if (!has && mutate_podsec_plan(m) == MUTATE_PODSEC_OFF_LABEL) {
        MUTATE_TRACE(m, "IPC_LOCK: not added: the namespace's label " MUTATE_LABEL_IPC_LOCK
                        "=false (the namespace's switch)");
        return;
    }
    /* Asked before Pod Security: a capability that cannot work needs no
     * level's permission, and would only trip the policies that forbid
     * adding any. */
    if (!has && mutate_runs_as_non_root(m, sc)) {
        MUTATE_WARN(m, MUTATE_W_NON_ROOT,
                    "raise memlock on nodes for container \"%s\": no IPC_LOCK, which does "
                    "nothing as non-root",
                    mutate_s(m, cname, MUTATE_SHOWN_NAME));
        MUTATE_TRACE(m, "IPC_LOCK: not added: the container runs as non-root (runAsUser not 0, "
                        "or runAsNonRoot), where an added capability is not effective; NCCL's "
                        "memory registration then needs the memlock ulimit of the node's "
                        "container runtime raised");
        return;
    }
    if (!has && !mutate_podsec_allows(m, cname)) {
        MUTATE_TRACE(m, "IPC_LOCK: not added: the namespace's Pod Security enforce level forbids "
                        "it, or cannot be read (the warning says which)");
        return;
    }
    if (has && mutate_runs_as_non_root(m, sc))
        MUTATE_WARN(m, MUTATE_W_NON_ROOT,
                    "raise the memlock ulimit for container \"%s\": non-root, so IPC_LOCK does "
                    "nothing",
                    mutate_s(m, cname, MUTATE_SHOWN_NAME));
    if (has) {
        MUTATE_TRACE(m, "IPC_LOCK: already in securityContext.capabilities.add");
        return;
    }
    mutate_podsec_note(m, cname);
    MUTATE_TRACE(m, "IPC_LOCK: added to securityContext.capabilities.add");
    if (!sc) {
        mutate_join(m, path, cpath, "/securityContext", NULL);
        patch_op_begin(p, "add", path);
        jsonw_raw(&p->w, "{\"capabilities\":{\"add\":[\"IPC_LOCK\"]}}");
    } else if (!caps) {
        mutate_join(m, path, cpath, "/securityContext/capabilities", NULL);
        patch_op_begin(p, "add", path);
        jsonw_raw(&p->w, "{\"add\":[\"IPC_LOCK\"]}");
    } else if (!add) {
        mutate_join(m, path, cpath, "/securityContext/capabilities/add", NULL);
        patch_op_begin(p, "add", path);
        jsonw_raw(&p->w, "[\"IPC_LOCK\"]");
    } else {
        mutate_join(m, path, cpath, "/securityContext/capabilities/add/-", NULL);
        patch_op_begin(p, "add", path);
        jsonw_str(&p->w, "IPC_LOCK");
    }
    patch_op_end(p);
}

static int mutate_volume_exists(struct mutate_ctx *m, const char *name)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, podjson_arr(&m->r, m->spec, "volumes"))
    {
        const char *n = podjson_str(&m->r, v, "name");

        if (n && strcmp(n, name) == 0)
            return 1;
    }
    return 0;
}

/* Begins an "add" of one item to the array parent + member (member starts
 * with '/'): appended ("/-") when the array exists, in the pod or made by an
 * earlier operation of this patch (*exists), else the array made with this
 * item, since an add of a whole array over one would replace it. The caller
 * writes the item and ends with mutate_append_end(m, the return value). */
static int mutate_append_begin(struct mutate_ctx *m, const char *parent, const char *member,
                               int *exists)
{
    char path[PATCH_PATH_MAX];
    int make = !*exists;

    mutate_join(m, path, parent, member, make ? NULL : "/-");
    patch_op_begin(&m->res->patch, "add", path);
    if (make)
        jsonw_raw(&m->res->patch.w, "[");
    *exists = 1;
    return make;
}

static void mutate_append_end(struct mutate_ctx *m, int made)
{
    if (made)
        jsonw_raw(&m->res->patch.w, "]");
    patch_op_end(&m->res->patch);
}

/* spec.volumes, for mutate_append_begin(). */
static int mutate_volume_begin(struct mutate_ctx *m)
{
    char spec[PATCH_PATH_MAX];

    mutate_path(m, spec, "/spec", NULL);
    return mutate_append_begin(m, spec, "/volumes", &m->volumes);
}

/* Which of the names the volume may take name is: 0 for MUTATE_SHM_VOLUME,
 * i for MUTATE_SHM_VOLUME-i (as written: no leading zero), -1 for none. */
static int mutate_shm_index(const char *name)
{
    size_t plen = sizeof(MUTATE_SHM_VOLUME) - 1;
    int i = 0;

    if (strncmp(name, MUTATE_SHM_VOLUME, plen) != 0)
        return -1;
    name += plen;
    if (!*name)
        return 0;
    if (*name++ != '-' || *name < '1' || *name > '9')
        return -1;
    for (; *name >= '0' && *name <= '9' && i < MUTATE_SHM_NAMES; name++)
        i = i * 10 + (*name - '0');
    return *name || i >= MUTATE_SHM_NAMES ? -1 : i;
}

/* The first name the volume may take that no volume of the pod has, from
 * one pass over them: ERR_OK, or ERR_FAIL when the pod has them all. */
static int mutate_shm_free_name(struct mutate_ctx *m)
{
    unsigned char taken[MUTATE_SHM_NAMES] = {0};
    const cJSON *v;
    int i;

    cJSON_ArrayForEach(v, podjson_arr(&m->r, m->spec, "volumes"))
    {
        const char *n = podjson_str(&m->r, v, "name");

        if (n && (i = mutate_shm_index(n)) >= 0)
            taken[i] = 1;
    }
    for (i = 0; i < MUTATE_SHM_NAMES && taken[i]; i++)
        ;
    if (i == MUTATE_SHM_NAMES)
        return ERR_FAIL;
    if (i == 0)
        snprintf(m->shm_volume, sizeof(m->shm_volume), "%s", MUTATE_SHM_VOLUME);
    else
        snprintf(m->shm_volume, sizeof(m->shm_volume), "%s-%d", MUTATE_SHM_VOLUME, i);
    return ERR_OK;
}

/* Adds the pod's memory-backed volume once, under a name no volume has:
 * ERR_OK, or ERR_FAIL when there is none, and then no volume and one
 * warning. */
static int mutate_shm_volume(struct mutate_ctx *m)
{
    struct patch *p = &m->res->patch;
    int made;

    if (m->shm_volume[0])
        return ERR_OK;
    if (m->shm_no_name)
        return ERR_FAIL;
    if (mutate_shm_free_name(m)) {
        m->shm_no_name = 1;
        MUTATE_WARN(m, MUTATE_W_SHM,
                    "free a name for /dev/shm: the pod's volumes take %s to %s-%d; none added",
                    MUTATE_SHM_VOLUME, MUTATE_SHM_VOLUME, MUTATE_SHM_NAMES - 1);
        return ERR_FAIL;
    }
    made = mutate_volume_begin(m);
    jsonw_raw(&p->w, "{\"name\":");
    jsonw_str(&p->w, m->shm_volume);
    jsonw_raw(&p->w, ",\"emptyDir\":{\"medium\":\"Memory\"");
    if (m->p->shm_size_limit) {
        jsonw_raw(&p->w, ",\"sizeLimit\":");
        jsonw_str(&p->w, m->p->shm_size_limit);
    }
    jsonw_raw(&p->w, "}}");
    mutate_append_end(m, made);
    return ERR_OK;
}

/* a and b name the same directory: equal, or one of them with a '/' more. */
static int mutate_same_path(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);

    la -= la > 1 && a[la - 1] == '/';
    lb -= lb > 1 && b[lb - 1] == '/';
    return la == lb && memcmp(a, b, la) == 0;
}

/* The container's mount at mount_path, or NULL. */
static const cJSON *mutate_mount_at(struct mutate_ctx *m, const cJSON *c, const char *mount_path)
{
    const cJSON *mnt;

    cJSON_ArrayForEach(mnt, podjson_arr(&m->r, c, "volumeMounts"))
    {
        const char *mp = podjson_str(&m->r, mnt, "mountPath");

        if (mp && mutate_same_path(mp, mount_path))
            return mnt;
    }
    return NULL;
}

/* Appends {name, mountPath[, subPath][, readOnly]} to the container's mounts. */
static void mutate_add_mount(struct mutate_ctx *m, const char *cpath, int *mounts,
                             const char *volume, const char *mount_path, const char *sub_path,
                             int read_only)
{
    struct patch *p = &m->res->patch;
    int made = mutate_append_begin(m, cpath, "/volumeMounts", mounts);

    jsonw_raw(&p->w, "{\"name\":");
    jsonw_str(&p->w, volume);
    jsonw_raw(&p->w, ",\"mountPath\":");
    jsonw_str(&p->w, mount_path);
    if (sub_path) {
        jsonw_raw(&p->w, ",\"subPath\":");
        jsonw_str(&p->w, sub_path);
    }
    if (read_only)
        jsonw_raw(&p->w, ",\"readOnly\":true");
    jsonw_raw(&p->w, "}");
    mutate_append_end(m, made);
}

/* mounts: whether the container's volumeMounts exists (mutate_append_begin). */
static void mutate_shm(struct mutate_ctx *m, const cJSON *c, const char *cpath, int *mounts)
{
    if (!m->p->shm || mutate_mount_at(m, c, "/dev/shm")) {
        MUTATE_TRACE(m, "/dev/shm: not added: %s",
                     m->p->shm ? "the container mounts a volume there already"
                               : "the profile has no shm");
        return;
    }
    if (mutate_shm_volume(m)) {
        MUTATE_TRACE(m, "/dev/shm: not added: the pod's volumes take every name it may have");
        return;
    }
    mutate_add_mount(m, cpath, mounts, m->shm_volume, "/dev/shm", NULL, 0);
    MUTATE_TRACE(m, "/dev/shm: added, a mount of volume \"%s\" (emptyDir, medium Memory%s%s)",
                 m->shm_volume, m->p->shm_size_limit ? ", sizeLimit " : "",
                 m->p->shm_size_limit ? m->p->shm_size_limit : "");
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

    if (mutate_join(m, list, rpath, "/", which))
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
        if (mutate_join(m, path, list, "/", tok))
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
                  adds[i]->name, adds[i]->value, mutate_name(m, c));
    if (n == 0)
        return;
    mutate_join(m, path, cpath, "/resources", NULL);
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
                    mutate_s(m, have, MUTATE_SHOWN_NAME), mutate_s(m, want, MUTATE_SHOWN_NAME));
        return;
    }
    mutate_path(m, path, "/spec/schedulerName", NULL);
    patch_op_str(&m->res->patch, have ? "replace" : "add", path, want);
    MUTATE_TRACE(m, "schedulerName: %s%s", want, have ? ": replaces default-scheduler" : ": added");
}

/* The annotations the patch sets: rdma-webhook.io/injected and
 * .../selected-by when the profile was applied, .../warnings when warnings
 * (a JSON array text) is not NULL. */
static void mutate_annotation_pairs(struct mutate_ctx *m, int applied, const char *warnings)
{
    struct patch *p = &m->res->patch;

    if (applied) {
        jsonw_key(&p->w, MUTATE_ANNOTATION_INJECTED);
        jsonw_str(&p->w, m->p->name);
        jsonw_raw(&p->w, ",");
        jsonw_key(&p->w, MUTATE_ANNOTATION_SELECTED_BY);
        jsonw_str(&p->w, select_rule_name(m->rule));
    }
    if (warnings) {
        if (applied)
            jsonw_raw(&p->w, ",");
        jsonw_key(&p->w, MUTATE_ANNOTATION_WARNINGS);
        jsonw_str(&p->w, warnings);
    }
}

static void mutate_annotate_one(struct mutate_ctx *m, const char *key, const char *value)
{
    char path[PATCH_PATH_MAX], tok[64];

    patch_escape_token(key, tok, sizeof(tok));
    mutate_path(m, path, "/metadata/annotations/", tok);
    /* "add" of an object member replaces it when present (RFC 6902 4.1). */
    patch_op_str(&m->res->patch, "add", path, value);
}

static void mutate_annotate(struct mutate_ctx *m, const cJSON *annotations, int applied,
                            const char *warnings)
{
    struct patch *p = &m->res->patch;
    char path[PATCH_PATH_MAX];

    if (annotations) {
        if (applied) {
            mutate_annotate_one(m, MUTATE_ANNOTATION_INJECTED, m->p->name);
            mutate_annotate_one(m, MUTATE_ANNOTATION_SELECTED_BY, select_rule_name(m->rule));
        }
        if (warnings)
            mutate_annotate_one(m, MUTATE_ANNOTATION_WARNINGS, warnings);
        return;
    }
    mutate_path(m, path, m->metadata ? "/metadata/annotations" : "/metadata", NULL);
    patch_op_begin(p, "add", path);
    jsonw_raw(&p->w, m->metadata ? "{" : "{\"annotations\":{");
    mutate_annotation_pairs(m, applied, warnings);
    jsonw_raw(&p->w, m->metadata ? "}" : "}}");
    patch_op_end(p);
}

/* The warnings annotation holds at most this many texts. */
#define MUTATE_ANNOTATED_MAX (2 * MUTATE_MAX_WARNINGS)

static int mutate_listed(const char *const *list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0)
            return 1;
    return 0;
}

/* The rdma-webhook.io/warnings value the pod gets, written to out; 0 when
 * it gets none: no warnings, or the pod's value already has every one of
 * them. The value only grows, the pod's texts first: a second call (the
 * apiserver's reinvocation, after our patch) often warns less (nothing to
 * pin any more) and must neither drop what the first said nor flap. A value
 * that is not a JSON array of strings is the webhook's to replace. The texts
 * are the whole ones (mutate_warnings.full), without MUTATE_WARNING_LEAD:
 * the annotation's name says it; one that would take the value past
 * MUTATE_ANNOTATION_WARNINGS_MAX is left out whole (the log has it). */
static int mutate_warnings_value(struct mutate_ctx *m, const cJSON *annotations, struct dynbuf *out)
{
    const struct mutate_warnings *ws = &m->res->warnings;
    const char *have = ws->n ? podjson_str(&m->r, annotations, MUTATE_ANNOTATION_WARNINGS) : NULL;
    cJSON *old = have ? cJSON_Parse(have) : NULL;
    const cJSON *items = cJSON_IsArray(old) ? old : NULL;
    const char *list[MUTATE_ANNOTATED_MAX];
    const cJSON *it;
    size_t n = 0, n_old, written = 0;
    struct jsonw w;

    cJSON_ArrayForEach(it, items)
    {
        if (n < MUTATE_ANNOTATED_MAX && cJSON_IsString(it) &&
            strlen(it->valuestring) < MUTATE_WARNING_FULL_MAX &&
            !mutate_listed(list, n, it->valuestring))
            list[n++] = it->valuestring;
    }
    n_old = n;
    for (size_t i = 0; i < ws->n && n < MUTATE_ANNOTATED_MAX; i++)
        if (!mutate_listed(list, n, ws->full[i] + strlen(MUTATE_WARNING_LEAD)))
            list[n++] = ws->full[i] + strlen(MUTATE_WARNING_LEAD);
    if (n > n_old) {
        jsonw_init(&w, out);
        jsonw_raw(&w, "[");
        for (size_t i = 0; i < n && !jsonw_error(&w); i++, written++) {
            size_t at = dynbuf_len(out);

            if (i)
                jsonw_raw(&w, ",");
            jsonw_str(&w, list[i]);
            /* Room left for "]" and the NUL. */
            if (!jsonw_error(&w) && dynbuf_len(out) + 2 > MUTATE_ANNOTATION_WARNINGS_MAX) {
                dynbuf_truncate(out, at);
                break;
            }
        }
        jsonw_raw(&w, "]");
        if (jsonw_error(&w) || dynbuf_addc(out, '\0'))
            podjson_fail(&m->r, "out of memory for the warnings annotation");
    }
    cJSON_Delete(old);
    return written > n_old && !podjson_failed(&m->r);
}

static void mutate_trace_annotations(struct mutate_ctx *m, int applied, int warned)
{
    if (applied) {
        trace_add(m->in->trace, "annotation " MUTATE_ANNOTATION_INJECTED ": %s", m->p->name);
        trace_add(m->in->trace, "annotation " MUTATE_ANNOTATION_SELECTED_BY ": %s",
                  select_rule_name(m->rule));
    }
    if (warned)
        trace_add(m->in->trace,
                  "annotation " MUTATE_ANNOTATION_WARNINGS ": the %zu warning%s below",
                  m->res->warnings.n, m->res->warnings.n == 1 ? "" : "s");
    else if (m->res->warnings.n)
        trace_add(m->in->trace, "annotation " MUTATE_ANNOTATION_WARNINGS ": the pod's has every "
                                "warning below already");
}

/* Last: the annotations, once every warning is made. A pod left alone but
 * warned (no profile for its GPUs, an unknown profile name) gets a patch of
 * the warnings annotation only: an annotation never breaks a pod, and it is
 * where `kubectl describe pod` shows why nothing was added. */
static void mutate_finish_annotations(struct mutate_ctx *m, int applied)
{
    const cJSON *annotations = podjson_obj(&m->r, m->metadata, "annotations");
    struct dynbuf value;
    int warned;

    /* One text escaped past the bound, before it is taken back. */
    dynbuf_init(&value,
                MUTATE_ANNOTATION_WARNINGS_MAX + MUTATE_WARNING_FULL_MAX * JSONW_ESCAPE_MAX);
    warned = mutate_warnings_value(m, annotations, &value);
    if (applied || warned)
        mutate_annotate(m, annotations, applied, warned ? dynbuf_ptr(&value) : NULL);
    if (m->in->trace)
        mutate_trace_annotations(m, applied, warned);
    dynbuf_free(&value);
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
    mutate_short(buf, out, len);
    mutate_short(buf, full, full_len);
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
        mutate_path(m, path, "/spec/nodeSelector", NULL);
        patch_op_begin(p, "add", path);
        mutate_resource_map(p, adds, n);
        patch_op_end(p);
    }
    for (size_t i = 0; selector && i < n; i++) {
        if (patch_escape_token(adds[i]->name, tok, sizeof(tok)) ||
            mutate_path(m, path, "/spec/nodeSelector/", tok)) {
            podjson_fail(&m->r, "a JSON Pointer is too long");
            return;
        }
        patch_op_str(p, "add", path, adds[i]->value);
    }
    m->res->pinned = 1;
    mutate_labels_text(adds, n, shown, sizeof(shown), full, sizeof(full));
    MUTATE_TRACE(m, "pin: pinned: the nodeSelector gets %s (the profile's nodeLabels)", full);
    MUTATE_WARN(m, MUTATE_W_PINNED, "pinned to profile \"%s\" nodes: nodeSelector %s",
                mutate_s(m, m->p->name, MUTATE_SHOWN_NAME), m->warn_full ? full : shown);
}

/* ---- run-time detection (mutate.h) ---- */

/* The memory the detected file's volume may take: the file is three lines. */
#define MUTATE_DETECT_SIZE_LIMIT "1Mi"

/* The init container this webhook adds: its name, running nccl-detect. */
static int mutate_is_detect_container(struct mutate_ctx *m, const cJSON *c)
{
    const char *name = podjson_str(&m->r, c, "name");
    const cJSON *first = cJSON_GetArrayItem(podjson_arr(&m->r, c, "args"), 0);

    return name && strcmp(name, MUTATE_DETECT_CONTAINER) == 0 && cJSON_IsString(first) &&
           strcmp(first->valuestring, "nccl-detect") == 0;
}

static int mutate_named(struct mutate_ctx *m, const cJSON *item, const char *name)
{
    const char *n = podjson_str(&m->r, item, "name");

    return n && strcmp(n, name) == 0;
}

/* What of the pod's own has a name detection adds, as a warning names it;
 * NULL when nothing has. What an earlier call added is the pod's no more
 * than before: the init container that runs nccl-detect, an emptyDir. */
static const char *mutate_detect_taken(struct mutate_ctx *m)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, podjson_arr(&m->r, m->spec, "initContainers"))
    {
        if (mutate_named(m, it, MUTATE_DETECT_CONTAINER) && !mutate_is_detect_container(m, it))
            return "init container \"" MUTATE_DETECT_CONTAINER "\"";
    }
    /* Container names are unique across both lists. */
    cJSON_ArrayForEach(it, podjson_arr(&m->r, m->spec, "containers"))
    {
        if (mutate_named(m, it, MUTATE_DETECT_CONTAINER))
            return "container \"" MUTATE_DETECT_CONTAINER "\"";
    }
    cJSON_ArrayForEach(it, podjson_arr(&m->r, m->spec, "volumes"))
    {
        if (mutate_named(m, it, MUTATE_DETECT_VOLUME) && !podjson_obj(&m->r, it, "emptyDir"))
            return "volume \"" MUTATE_DETECT_VOLUME "\"";
    }
    return NULL;
}

static void mutate_detect_plan(struct mutate_ctx *m)
{
    const char *image = m->in->opts ? m->in->opts->detect_image : NULL;

    if (!m->p->detect.on)
        m->detect = MUTATE_DETECT_OFF;
    else if (!image || !*image)
        m->detect = MUTATE_DETECT_NO_IMAGE;
    else if ((m->detect_taken = mutate_detect_taken(m)))
        m->detect = MUTATE_DETECT_TAKEN;
    else
        m->detect = MUTATE_DETECT_ON;
    MUTATE_TRACE(m, "detect: %s",
                 m->detect == MUTATE_DETECT_OFF        ? "off in the profile"
                 : m->detect == MUTATE_DETECT_NO_IMAGE ? "the profile asks for it, but there is no "
                                                         "--detect-image: static values"
                 : m->detect == MUTATE_DETECT_TAKEN
                     ? "the profile asks for it, but the pod has a name it needs: static values"
                     : "on: containers with InfiniBand on read " MUTATE_DETECT_FILE);
}

/* Whether a target container with InfiniBand on reads the detected file:
 * not when it names its own NCCL_CONF_FILE (in env, or in an envFrom
 * ConfigMap known to have it: NCCL 2.23+ reads that file instead, so the
 * container keeps the profile's static values), nor when it mounts
 * something else at MUTATE_DETECT_DIR. Each says so in a warning. An
 * NCCL_CONF_FILE and a mount that are the ones detection adds are no
 * obstacle (a second call). */
static int mutate_detect_container(struct mutate_ctx *m, const cJSON *c, const char *cname)
{
    const cJSON *own = mutate_env_entry_named(m, podjson_arr(&m->r, c, "env"), MUTATE_CONF_FILE);
    const cJSON *mnt = mutate_mount_at(m, c, MUTATE_DETECT_DIR);
    const char *value = podjson_str(&m->r, own, "value");
    struct mutate_envfrom_warned warned = {0};
    int user_file;

    if (own)
        user_file = !value || podjson_obj(&m->r, own, "valueFrom") ||
                    strcmp(value, MUTATE_DETECT_FILE) != 0;
    else
        user_file = mutate_envfrom_declares(m, podjson_arr(&m->r, c, "envFrom"), MUTATE_CONF_FILE,
                                            cname, &warned);
    if (user_file) {
        MUTATE_TRACE(m, "detect: not for this container: it names its own " MUTATE_CONF_FILE);
        MUTATE_WARN(m, MUTATE_W_DETECT,
                    "drop container \"%s\"'s own " MUTATE_CONF_FILE
                    " to detect at run time; it keeps static values",
                    mutate_s(m, cname, MUTATE_SHOWN_NAME));
        return 0;
    }
    if (mnt && !mutate_named(m, mnt, MUTATE_DETECT_VOLUME)) {
        MUTATE_TRACE(
            m, "detect: not for this container: it mounts something else at " MUTATE_DETECT_DIR);
        MUTATE_WARN(m, MUTATE_W_DETECT,
                    "move container \"%s\"'s mount off " MUTATE_DETECT_DIR " to detect at run time",
                    mutate_s(m, cname, MUTATE_SHOWN_NAME));
        return 0;
    }
    return 1;
}

/* The detected file's mounts in a container that reads it, each unless its
 * path is a mount already: the directory, read through NCCL_CONF_FILE; and
 * in a root container the file at ~/.nccl.conf, where NCCL before 2.23 looks
 * (not under a mount of /root, where the mount point would be made on the
 * user's volume). */
static void mutate_detect_mounts(struct mutate_ctx *m, const cJSON *c, const char *cpath,
                                 int *mounts)
{
    int root = !mutate_runs_as_non_root(m, podjson_obj(&m->r, c, "securityContext"));

    if (!mutate_mount_at(m, c, MUTATE_DETECT_DIR)) {
        mutate_add_mount(m, cpath, mounts, MUTATE_DETECT_VOLUME, MUTATE_DETECT_DIR, NULL, 1);
        MUTATE_TRACE(m, "detect: mount of " MUTATE_DETECT_DIR " added (read-only)");
    } else {
        MUTATE_TRACE(m, "detect: " MUTATE_DETECT_DIR " is mounted already");
    }
    if (root && !mutate_mount_at(m, c, MUTATE_DETECT_ROOT_CONF) &&
        !mutate_mount_at(m, c, "/root")) {
        mutate_add_mount(m, cpath, mounts, MUTATE_DETECT_VOLUME, MUTATE_DETECT_ROOT_CONF,
                         "nccl.conf", 1);
        MUTATE_TRACE(m, "detect: mount of " MUTATE_DETECT_ROOT_CONF " added (NCCL before 2.23)");
    } else {
        MUTATE_TRACE(m, "detect: no mount at " MUTATE_DETECT_ROOT_CONF ": %s",
                     !root ? "the container runs as non-root" : "a mount there or at /root");
    }
}

/* The volume the init container writes to and the targets read, unless the
 * pod has it (an earlier call's: another one made detection TAKEN). */
static void mutate_detect_volume(struct mutate_ctx *m)
{
    struct patch *p = &m->res->patch;
    int made;

    if (mutate_volume_exists(m, MUTATE_DETECT_VOLUME)) {
        MUTATE_TRACE(m, "detect: volume \"" MUTATE_DETECT_VOLUME "\": the pod has it");
        return;
    }
    MUTATE_TRACE(m, "detect: volume \"" MUTATE_DETECT_VOLUME "\" added (emptyDir, medium Memory, "
                    "sizeLimit " MUTATE_DETECT_SIZE_LIMIT ")");
    made = mutate_volume_begin(m);
    jsonw_raw(&p->w, "{\"name\":\"" MUTATE_DETECT_VOLUME "\",\"emptyDir\":{\"medium\":\"Memory\","
                     "\"sizeLimit\":\"" MUTATE_DETECT_SIZE_LIMIT "\"}}");
    mutate_append_end(m, made);
}

/* One argument of the init container. The kubelet expands $(VAR) in args
 * and reads $$ as $, so each '$' is doubled: NCCL_SOCKET_IFNAME may hold one
 * (at most PROFILES_DETECT_IFNAME_MAX bytes with detect on); device names,
 * the only other values, cannot. */
static void mutate_detect_arg(struct mutate_ctx *m, const char *arg)
{
    char buf[2 * PROFILES_DETECT_IFNAME_MAX + 1];
    size_t o = 0;

    jsonw_raw(&m->res->patch.w, ",");
    if (!strchr(arg, '$')) {
        jsonw_str(&m->res->patch.w, arg);
        return;
    }
    if (strlen(arg) > PROFILES_DETECT_IFNAME_MAX) {
        podjson_fail(&m->r, "an argument of the detection is too long");
        return;
    }
    for (; *arg; arg++) {
        if (*arg == '$')
            buf[o++] = '$';
        buf[o++] = *arg;
    }
    buf[o] = '\0';
    jsonw_str(&m->res->patch.w, buf);
}

/* requests and limits alike, so that a Guaranteed pod stays Guaranteed. */
static void mutate_detect_resources(struct mutate_ctx *m)
{
    struct patch *p = &m->res->patch;

    for (int i = 0; i < 2; i++) {
        jsonw_raw(&p->w, i ? ",\"limits\":{\"cpu\":" : "{\"requests\":{\"cpu\":");
        jsonw_str(&p->w, m->p->detect.cpu);
        jsonw_raw(&p->w, ",\"memory\":");
        jsonw_str(&p->w, m->p->detect.memory);
        jsonw_raw(&p->w, "}");
    }
    jsonw_raw(&p->w, "}");
}

/* Pod Security "restricted" asks each of these of every container. */
#define MUTATE_DETECT_SECURITY                                                                     \
    "{\"runAsNonRoot\":true,\"runAsUser\":65532,\"runAsGroup\":65532,"                             \
    "\"allowPrivilegeEscalation\":false,\"readOnlyRootFilesystem\":true,"                          \
    "\"capabilities\":{\"drop\":[\"ALL\"]},\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}"
_Static_assert(MUTATE_DETECT_UID == 65532, "MUTATE_DETECT_SECURITY spells the uid out");

/* The init container, after the pod's own: those may set up what it is to
 * see (the network, say), and NCCL only runs in the regular containers.
 * Unless the pod has it (an earlier call's). Its arguments hand nccl-detect
 * the profile's NCCL_IB_HCA (to choose among those devices) and
 * NCCL_SOCKET_IFNAME (to write instead of the default route's). */
static void mutate_detect_init_container(struct mutate_ctx *m)
{
    const cJSON *inits = podjson_arr(&m->r, m->spec, "initContainers"), *it;
    const char *hca = mutate_env_value(m, "NCCL_IB_HCA");
    const char *ifname = mutate_env_value(m, "NCCL_SOCKET_IFNAME");
    struct patch *p = &m->res->patch;
    char spec[PATCH_PATH_MAX];
    int exists = inits != NULL, made;

    cJSON_ArrayForEach(it, inits)
    {
        if (mutate_is_detect_container(m, it)) {
            MUTATE_TRACE(m, "detect: init container \"" MUTATE_DETECT_CONTAINER "\": the pod has "
                            "it");
            return;
        }
    }
    MUTATE_TRACE(m,
                 "detect: init container \"" MUTATE_DETECT_CONTAINER "\" added (image %s, "
                 "after the pod's own)",
                 m->in->opts->detect_image);
    mutate_path(m, spec, "/spec", NULL);
    made = mutate_append_begin(m, spec, "/initContainers", &exists);
    jsonw_raw(&p->w, "{\"name\":\"" MUTATE_DETECT_CONTAINER "\",\"image\":");
    jsonw_str(&p->w, m->in->opts->detect_image);
    jsonw_raw(&p->w, ",\"command\":[\"" MUTATE_DETECT_BINARY "\"],\"args\":[\"nccl-detect\","
                     "\"--out\",\"" MUTATE_DETECT_FILE "\"");
    if (hca) {
        mutate_detect_arg(m, "--hca");
        mutate_detect_arg(m, hca);
    }
    if (ifname) {
        mutate_detect_arg(m, "--socket-ifname");
        mutate_detect_arg(m, ifname);
    }
    jsonw_raw(&p->w, "],\"resources\":");
    mutate_detect_resources(m);
    jsonw_raw(&p->w, ",\"securityContext\":" MUTATE_DETECT_SECURITY
                     ",\"volumeMounts\":[{\"name\":\"" MUTATE_DETECT_VOLUME
                     "\",\"mountPath\":\"" MUTATE_DETECT_DIR "\"}]}");
    mutate_append_end(m, made);
}

/* Once the containers are done: the volume and the init container when a
 * container reads the file; else, when one could have, why not. */
static void mutate_detect_pod(struct mutate_ctx *m)
{
    if (m->detect_used) {
        mutate_detect_volume(m);
        mutate_detect_init_container(m);
        return;
    }
    if (m->detect != MUTATE_DETECT_OFF)
        MUTATE_TRACE(m, "detect: no init container or volume added: %s",
                     m->ib_on ? "no container reads the detected file"
                              : "no regular target container has InfiniBand on");
    if (!m->ib_on)
        return;
    if (m->detect == MUTATE_DETECT_NO_IMAGE)
        MUTATE_WARN(m, MUTATE_W_DETECT,
                    "give the webhook --detect-image: profile \"%s\" asks for detect; static "
                    "values used",
                    mutate_s(m, m->p->name, MUTATE_SHOWN_NAME));
    else if (m->detect == MUTATE_DETECT_TAKEN)
        MUTATE_WARN(m, MUTATE_W_DETECT,
                    "rename the pod's %s to detect at run time; static values used",
                    m->detect_taken);
}

/* Mutates one target container; returns 1 when it has InfiniBand off. */
static int mutate_container(struct mutate_ctx *m, const cJSON *c, const char *list, int idx)
{
    const char *cname = mutate_name(m, c);
    char cpath[PATCH_PATH_MAX], value[64];
    int ib_off, detected = 0, mounts = podjson_arr(&m->r, c, "volumeMounts") != NULL;

    if (mutate_item_path(m, cpath, list, idx))
        return 0;
    MUTATE_TRACE(
        m, "%s \"%s\" (%s[%d]):", strcmp(list, "containers") == 0 ? "container" : "init container",
        cname, list, idx);
    if (m->in->trace)
        m->in->trace->indent++;
    ib_off = mutate_ib_off(m, c, value, sizeof(value));
    if (ib_off)
        MUTATE_TRACE(m,
                     "InfiniBand off: NCCL reads its NCCL_IB_DISABLE=%s as non-zero (TCP): "
                     "no NCCL_IB_* variable, no IPC_LOCK, no RDMA device",
                     value);
    if (ib_off)
        MUTATE_WARN(m, MUTATE_W_IB_DISABLED,
                    "drop NCCL_IB_DISABLE=%s in container \"%s\" for RDMA; it has TCP, no RDMA "
                    "device",
                    mutate_s(m, value, 10), mutate_s(m, cname, MUTATE_SHOWN_NAME));
    /* Init containers run before the detecting one: they keep the static env. */
    if (!ib_off && strcmp(list, "containers") == 0) {
        m->ib_on = 1;
        detected = m->detect == MUTATE_DETECT_ON && mutate_detect_container(m, c, cname);
    }
    mutate_env(m, c, cpath, cname, ib_off, detected);
    if (!ib_off)
        mutate_ipc_lock(m, c, cpath, cname);
    else
        MUTATE_TRACE(m, "IPC_LOCK: not added: InfiniBand is off");
    mutate_shm(m, c, cpath, &mounts);
    if (detected) {
        mutate_detect_mounts(m, c, cpath, &mounts);
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
    mutate_effective_env(m);
    mutate_detect_plan(m);
    first = mutate_regular_containers(m);
    if (m->in->trace)
        explain_init_containers(m->in->trace, m->spec, m->ps, m->p->init_containers);
    if (m->p->init_containers)
        mutate_init_containers(m);
    mutate_detect_pod(m);
    mutate_warn_host_network(m);
    if (first.first && mutate_item_path(m, path, "containers", first.first_idx) == 0)
        mutate_resources(m, first.first, path);
    else
        MUTATE_TRACE(m, "resources: none added: %s",
                     m->p->resources.n ? "every target container has InfiniBand off"
                                       : "the profile has none");
    mutate_scheduler(m);
    m->res->reason = m->res->patch.n_ops ? MUTATE_R_MUTATED : MUTATE_R_NOTHING_MISSING;
}

/* "a, b, c and 2 more": the names of a tie, whole in full, shortened to
 * fit out. */
static void mutate_tie_text(const struct select_tie *t, char *out, size_t len, char *full,
                            size_t full_len)
{
    char buf[SELECT_TIE_LISTED * 72 + 32];
    size_t at = 0, listed = t->n < SELECT_TIE_LISTED ? t->n : SELECT_TIE_LISTED;

    buf[0] = '\0';
    for (size_t i = 0; i < listed && at < sizeof(buf); i++)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s", i ? ", " : "", t->p[i]->name);
    if (t->n > listed && at < sizeof(buf))
        snprintf(buf + at, sizeof(buf) - at, " and %zu more", t->n - listed);
    mutate_short(buf, out, len);
    mutate_short(buf, full, full_len);
}

/* Says which rules found several profiles and chose none of them. The node
 * constraints' tie only when no profile came after it either: one the GPU
 * count or the default then chose (and pinned) was chosen, and "none
 * chosen" beside "pinned to profile ..." would contradict it. */
static void mutate_warn_ties(struct mutate_ctx *m, const struct select_result *sel)
{
    char names[34], full[SELECT_TIE_LISTED * 72 + 32];

    if (sel->tie_labels.n >= 2 && !sel->profile) {
        /* This text is longer than the GPU count's by more than its number. */
        mutate_tie_text(&sel->tie_labels, names, sizeof(names) - 4, full, sizeof(full));
        MUTATE_WARN(m, MUTATE_W_AMBIGUOUS,
                    "set " SELECT_ANNOTATION_PROFILE ": ambiguous node constraints fit %s; "
                    "none chosen",
                    m->warn_full ? full : names);
    }
    if (sel->tie_gpus.n >= 2) {
        mutate_tie_text(&sel->tie_gpus, names, sizeof(names), full, sizeof(full));
        MUTATE_WARN(m, MUTATE_W_AMBIGUOUS,
                    "set " SELECT_ANNOTATION_PROFILE ": ambiguous GPU count %lld fits %s; none "
                    "chosen",
                    sel->gpus, m->warn_full ? full : names);
    }
}

/* "a, b, c": the profiles' names in out, as many as fit budget bytes, with
 * ", ..." (or "...") in place of those that do not. */
static void mutate_profile_names(const struct profiles *ps, size_t budget, char *out, size_t outlen)
{
    size_t at = 0;

    if (budget > outlen - 1)
        budget = outlen - 1;
    out[0] = '\0';
    for (size_t i = 0; i < ps->n; i++) {
        const char *name = ps->p[i].name;
        size_t need = (i ? 2 : 0) + strlen(name), more = i + 1 < ps->n ? 5 : 0;

        if (at + need + more > budget) {
            if (at + 5 <= budget)
                memcpy(out + at, i ? ", ..." : "...", (i ? 5 : 3) + 1);
            return;
        }
        at += (size_t)snprintf(out + at, outlen - at, "%s%s", i ? ", " : "", name);
    }
}

/* The unknown name and the valid ones: for the user as many as fit, in the
 * log's text as many as MUTATE_WARNING_FULL_MAX holds. */
static void mutate_warn_unknown(struct mutate_ctx *m, const char *unknown)
{
#define MUTATE_UNKNOWN_FMT "set " SELECT_ANNOTATION_PROFILE " to one of %s (\"%s\" is unknown)"
    /* What the text takes besides the names: the lead and the format's. */
    const size_t fixed = strlen(MUTATE_WARNING_LEAD) + strlen(MUTATE_UNKNOWN_FMT) - 4;
    char names[MUTATE_WARNING_FULL_MAX];
    const char *shown;
    size_t used, room;

    for (int pass = 1; pass >= 0; pass--) {
        m->warn_full = pass;
        shown = mutate_s(m, unknown, MUTATE_SHOWN_NAME); /* whole in the log: any length */
        used = fixed + strlen(shown) + 1;
        room = pass ? sizeof(names) : MUTATE_WARNING_MAX;
        mutate_profile_names(m->ps, used < room ? room - used : 0, names, sizeof(names));
        mutate_warn_text(m, MUTATE_UNKNOWN_FMT, names, shown);
    }
    mutate_warn_add(m, MUTATE_W_UNKNOWN_PROFILE);
#undef MUTATE_UNKNOWN_FMT
}

/* The Nodes the pod's hostname names could not be told, and the GPU count
 * or the default chose a profile they might not carry: say so, and that it
 * is not pinned. (A profile the constraints name is right whatever the
 * hosts, and none chosen has nothing to warn about here.) */
static void mutate_warn_hosts(struct mutate_ctx *m, const struct select_hosts *h)
{
    const char *pin = m->p->pin ? ", not pinned" : "";
    const char *name = h->unknown ? h->unknown : "";

    m->hosts_unknown = 1;
    if (m->rule != SELECT_BY_GPUS && m->rule != SELECT_BY_DEFAULT)
        return;
    if (h->why == SELECT_HOSTS_UNREAD)
        MUTATE_WARN(m, MUTATE_W_NODE_LOOKUP,
                    "check the webhook can read nodes: hostname \"%s\" unread, profile chosen "
                    "from the pod%s",
                    mutate_s(m, name, MUTATE_SHOWN_NAME), pin);
    else if (h->why == SELECT_HOSTS_OTHER_HOSTNAME)
        MUTATE_WARN(m, MUTATE_W_NODE_LOOKUP,
                    "node \"%s\" has another hostname label: profile chosen from the pod%s",
                    mutate_s(m, name, MUTATE_SHOWN_NAME), pin);
    else if (h->why == SELECT_HOSTS_TOO_MANY)
        MUTATE_WARN(m, MUTATE_W_NODE_LOOKUP,
                    "over %d hostnames, their nodes unread: profile chosen from the pod%s",
                    SELECT_HOSTS_MAX, pin);
    else
        MUTATE_WARN(
            m, MUTATE_W_NODE_LOOKUP,
            "nodes of the pod's hostnames %s: profile chosen from the pod%s",
            h->why == SELECT_HOSTS_NO_API ? "unknown offline" : "unread (not in every term)", pin);
}

/* Picks the profile: 1 when there is one to apply, 0 when none applies
 * (with the reason set, and the warning that says why). */
static int mutate_choose(struct mutate_ctx *m)
{
    struct select_result sel;
    select_profile(&m->r, m->metadata, m->spec, m->in->namespace_, m->ps,
                   m->hooks ? &m->select : NULL, &sel);
    if (m->in->trace)
        explain_selection(m->in->trace, m->spec, m->in->namespace_, m->ps,
                          m->hooks ? &m->select : NULL, &sel);
    m->p = sel.profile;
    m->rule = m->res->rule = sel.rule;
    mutate_warn_ties(m, &sel);
    if (sel.node_lookup_failed)
        MUTATE_WARN(m, MUTATE_W_NODE_LOOKUP,
                    "check the webhook can read nodes: node \"%s\" unread, profile chosen from "
                    "the pod",
                    mutate_s(m, podjson_str(&m->r, m->spec, "nodeName"), MUTATE_SHOWN_NAME));
    if (sel.namespace_lookup_failed)
        MUTATE_WARN(m, MUTATE_W_NAMESPACE_LOOKUP,
                    "check the webhook can read namespaces: labels of \"%s\" unread, no profile "
                    "chosen",
                    mutate_s(m, m->in->namespace_ ? m->in->namespace_ : "", MUTATE_SHOWN_NAME));
    if (sel.rule == SELECT_OTHER_NAMESPACES) {
        MUTATE_WARN(m, MUTATE_W_UNKNOWN_PROFILE,
                    "change " SELECT_ANNOTATION_PROFILE ": \"%s\" is limited to other namespaces; "
                    "nothing added",
                    mutate_s(m, sel.other_namespaces->name, MUTATE_SHOWN_NAME));
        m->res->reason = MUTATE_R_UNKNOWN_PROFILE;
        return 0;
    }
    if (sel.rule == SELECT_UNKNOWN_NAME) {
        mutate_warn_unknown(m, sel.unknown_name);
        m->res->reason = MUTATE_R_UNKNOWN_PROFILE;
        return 0;
    }
    if (!m->p) {
        /* A pod that chose several node types itself has the ambiguity's
         * warning alone: no profile is missing for it. */
        if (sel.gpus > 0 && !sel.namespace_lookup_failed && !sel.tie_spans_types)
            MUTATE_WARN(
                m, MUTATE_W_NO_PROFILE,
                "add a profile for %lld GPUs on these nodes, or set " SELECT_ANNOTATION_PROFILE
                "; no NCCL settings added",
                sel.gpus);
        m->res->reason = MUTATE_R_NO_PROFILE;
        return 0;
    }
    if (sel.hosts.state == SELECT_HOSTS_UNKNOWN)
        mutate_warn_hosts(m, &sel.hosts);
    return 1;
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
                    where, mutate_s(m, bad, MUTATE_SHOWN_VALUE));
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

    if (!m->hooks || !m->hooks->select.namespace_labels || mutate_ns_labels(m, &labels))
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
                mutate_s(m, m->in->namespace_ ? m->in->namespace_ : "", MUTATE_SHOWN_NAME),
                mutate_s(m, v, MUTATE_SHOWN_VALUE));
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
                mutate_s(m, why, MUTATE_SHOWN_LEN - 1));
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

/* ---- report mode (report.h) ---- */

/* The namespace's REPORT_LABEL, from the one lookup of its labels: how it
 * went, and the value in buf (*label NULL when there is none). */
static enum report_lookup mutate_mode_label(struct mutate_ctx *m, char *buf, size_t len,
                                            const char **label)
{
    const cJSON *labels;
    const char *v;

    *label = NULL;
    if (!m->hooks || !m->hooks->select.namespace_labels)
        return REPORT_LOOKUP_NONE;
    if (mutate_ns_labels(m, &labels))
        return REPORT_LOOKUP_FAILED;
    if ((v = cJSON_GetStringValue(podjson_member(labels, REPORT_LABEL)))) {
        utf8_shorten(v, len - 1, buf, len);
        *label = buf;
    }
    return REPORT_LOOKUP_OK;
}

/* Whether a warning already says the Namespace could not be read (select's
 * or Pod Security's): one cause, one warning. */
static int mutate_ns_failure_warned(const struct mutate_ctx *m)
{
    const struct mutate_warnings *w = &m->res->warnings;

    for (size_t i = 0; i < w->n; i++)
        if (w->kind[i] == MUTATE_W_NAMESPACE_LOOKUP ||
            (w->kind[i] == MUTATE_W_POD_SECURITY && m->podsec == MUTATE_PODSEC_UNKNOWN))
            return 1;
    return 0;
}

/* The pod's mode, by the three levels; warns about a label it ignores, and
 * about labels it could not read (the profile and the flag decide then). */
static enum report_mode mutate_mode(struct mutate_ctx *m)
{
    enum report_mode flag = m->in->opts ? m->in->opts->mode : REPORT_MODE_UNSET;
    enum report_mode profile = m->res->profile ? m->res->profile->mode : REPORT_MODE_UNSET;
    const char *ns = m->in->namespace_ ? m->in->namespace_ : "";
    struct report_decision d;
    char value[64];
    const char *label;
    enum report_lookup lookup = mutate_mode_label(m, value, sizeof(value), &label);

    report_decide(flag, profile, lookup, label, &d);
    if (d.label_invalid)
        MUTATE_WARN(m, MUTATE_W_MODE,
                    "label namespace \"%s\" " REPORT_LABEL "=report|enforce (\"%s\" ignored)",
                    mutate_s(m, ns, MUTATE_SHOWN_NAME), mutate_s(m, label, MUTATE_SHOWN_VALUE));
    if (d.lookup_failed && !mutate_ns_failure_warned(m))
        MUTATE_WARN(m, MUTATE_W_MODE,
                    "check the webhook can read namespaces: \"%s\" unread, " REPORT_LABEL
                    " not applied",
                    mutate_s(m, ns, MUTATE_SHOWN_NAME));
    m->res->report_by = d.mode == REPORT_MODE_REPORT ? report_by_name(d.by) : NULL;
    return d.mode;
}

/* Writes REPORT_ANNOTATION=value, making metadata.annotations (and
 * metadata) when the pod has none. */
static void mutate_annotate_report(struct mutate_ctx *m, const cJSON *annotations,
                                   const char *value)
{
    struct patch *p = &m->res->patch;
    char path[PATCH_PATH_MAX];

    if (annotations) {
        mutate_annotate_one(m, REPORT_ANNOTATION, value);
        return;
    }
    mutate_path(m, path, m->metadata ? "/metadata/annotations" : "/metadata", NULL);
    patch_op_begin(p, "add", path);
    jsonw_raw(&p->w, m->metadata ? "{" : "{\"annotations\":{");
    jsonw_key(&p->w, REPORT_ANNOTATION);
    jsonw_str(&p->w, value);
    jsonw_raw(&p->w, m->metadata ? "}" : "}}");
    patch_op_end(p);
}

/* The summary of the patch made so far (the changes: the annotations come
 * after this) and of the warnings, into value: ERR_OK, or ERR_TOO_BIG or
 * ERR_NOMEM with the pod failed. */
static int mutate_report_value(struct mutate_ctx *m, struct dynbuf *value)
{
    struct mutate_result *res = m->res;
    const char *warnings[MUTATE_MAX_WARNINGS];
    struct report_input ri = {.by = res->report_by,
                              .warnings = warnings,
                              .n_warnings = res->warnings.n,
                              .base = m->in->base};
    cJSON *ops = NULL;
    int rc;

    if ((rc = patch_finish(&res->patch)) != ERR_OK) {
        podjson_fail(&m->r, "the patch would exceed its size limit");
        return rc;
    }
    if (res->patch.n_ops && !(ops = cJSON_Parse(dynbuf_ptr(&res->patch.out)))) {
        podjson_fail(&m->r, "out of memory for the report");
        return ERR_NOMEM;
    }
    /* Whole, as the log and the Event have them: the annotation has room. */
    for (size_t i = 0; i < res->warnings.n; i++)
        warnings[i] = res->warnings.full[i] + strlen(MUTATE_WARNING_LEAD);
    ri.result = res->reason == MUTATE_R_MUTATED ? "reported" : "skipped";
    ri.reason = res->reason == MUTATE_R_MUTATED ? NULL : mutate_reason_name(res->reason);
    ri.profile = res->profile ? res->profile->name : NULL;
    ri.selected_by = select_rule_name(m->rule);
    ri.ops = ops;
    ri.pod = m->in->object;
    rc = report_value(&ri, value);
    cJSON_Delete(ops);
    if (rc)
        podjson_fail(&m->r, "out of memory for the report");
    return rc;
}

/* Report mode, when the pod would get anything: the patch becomes the
 * annotation that summarises it, unless the pod has that one already.
 * Returns 1 when the pod is reported (the annotations are done), 0 in
 * enforce mode. */
static int mutate_report(struct mutate_ctx *m)
{
    struct mutate_result *res = m->res;
    const cJSON *annotations = podjson_obj(&m->r, m->metadata, "annotations");
    const char *have = podjson_str(&m->r, annotations, REPORT_ANNOTATION);
    struct dynbuf *value = &res->report;

    if ((res->reason != MUTATE_R_MUTATED && res->warnings.n == 0) ||
        mutate_mode(m) != REPORT_MODE_REPORT)
        return 0;
    if (mutate_report_value(m, value) == ERR_OK) {
        patch_free(&res->patch);
        patch_init(&res->patch, res->patch.out.cap);
        res->pinned = 0;
        res->report_seen = have != NULL;
        if (have && strcmp(have, dynbuf_ptr(value)) == 0)
            res->reason = res->reason == MUTATE_R_MUTATED ? MUTATE_R_NOTHING_MISSING : res->reason;
        else
            mutate_annotate_report(m, annotations, dynbuf_ptr(value));
        if (res->reason == MUTATE_R_MUTATED)
            res->reason = MUTATE_R_REPORTED;
    }
    return 1;
}

void mutate_object(const struct mutate_input *in, const struct profiles *ps,
                   const struct mutate_hooks *hooks, struct mutate_result *res)
{
    struct mutate_ctx m = {.in = in, .ps = ps, .hooks = hooks, .res = res};
    int target = 0;

    podjson_init(&m.r);
    mutate_select_hooks(&m);
    res->outcome = MUTATE_SKIPPED;
    m.metadata = podjson_obj(&m.r, in->object, "metadata");
    m.spec = podjson_obj(&m.r, in->object, "spec");
    if (!m.spec)
        podjson_fail(&m.r, "spec is missing");
    if (!podjson_failed(&m.r) && (target = mutate_is_target(&m)) &&
        mutate_has_target_container(&m) && mutate_choose(&m)) {
        res->profile = m.p;
        mutate_pod(&m);
    }
    /* Only where the pod is written to anyway (its labels are read then). */
    if (!podjson_failed(&m.r) && target && (res->reason == MUTATE_R_MUTATED || res->warnings.n))
        mutate_ns_inject(&m);
    /* A pod that is not a target is never changed, warned or not. */
    if (!podjson_failed(&m.r) && target && !mutate_report(&m))
        mutate_finish_annotations(&m, res->reason == MUTATE_R_MUTATED);
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
    fn(ctx, MUTATE_IB_DISABLE);
    fn(ctx, MUTATE_CONF_FILE);
    for (size_t i = 0; i < ps->n; i++) {
        const struct profiles_entry *p = &ps->p[i];

        for (size_t j = 0; j < p->env.n; j++)
            fn(ctx, p->env.v[j].name);
        for (size_t j = 0; j < p->host_network_env.n; j++)
            fn(ctx, p->host_network_env.v[j].name);
    }
}
