#include "admission/profiles.h"

#include "base/err.h"
#include "base/jsoncheck.h"
#include "base/k8sname.h"
#include "admission/labelsel.h"
#include "admission/nccl.h"
#include "base/quantity.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROFILES_MAX_ERRORS 50
/* NCCL reads at most 32 entries of NCCL_IB_HCA (MAX_IB_DEVS). */
#define PROFILES_MAX_HCA 32

/* Parse state: the snapshot being built and where problems are reported. */
struct profiles_ctx {
    struct profiles *ps;
    struct dynbuf *errors;
    int n_errors;
    int nomem;
    const char *where; /* prefix for messages: "defaults" or "profile \"x\"" */
    char where_buf[160];
};

/* Adds one line to the problem list (at most PROFILES_MAX_ERRORS are kept, all
 * are counted). ctx is the profiles_ctx: this is also labelsel's sink. */
__attribute__((format(printf, 2, 0))) static void profiles_vproblem(void *ctx, const char *fmt,
                                                                    va_list ap)
{
    struct profiles_ctx *c = ctx;

    c->n_errors++;
    if (!c->errors || c->n_errors > PROFILES_MAX_ERRORS)
        return;
    if (c->where)
        dynbuf_printf(c->errors, "%s: ", c->where);
    dynbuf_vprintf(c->errors, fmt, ap);
    dynbuf_addc(c->errors, '\n');
}

__attribute__((format(printf, 2, 3))) static void profiles_problem(struct profiles_ctx *c,
                                                                   const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    profiles_vproblem(c, fmt, ap);
    va_end(ap);
}

static char *profiles_owned(struct profiles_ctx *c, char *s)
{
    char **grown;

    if (!s) {
        c->nomem = 1;
        return NULL;
    }
    grown = realloc(c->ps->owned, (c->ps->n_owned + 1) * sizeof(*grown));
    if (!grown) {
        free(s);
        c->nomem = 1;
        return NULL;
    }
    c->ps->owned = grown;
    grown[c->ps->n_owned++] = s;
    return s;
}

static void *profiles_calloc(struct profiles_ctx *c, size_t n, size_t size)
{
    return profiles_owned(c, calloc(n ? n : 1, size));
}

/* Rejects keys outside known (a NULL-terminated list): a typo in a profile
 * must not silently turn a setting off. */
static void profiles_check_keys(struct profiles_ctx *c, const cJSON *obj, const char *field,
                                const char *const *known)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, obj) if (!labelsel_known_key(known, it->string))
        profiles_problem(c, "%s%sunknown field \"%s\"", field, *field ? ": " : "", it->string);
}

static const cJSON *profiles_get(struct profiles_ctx *c, const cJSON *obj, const char *key,
                                 int type, const char *type_name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!it)
        return NULL;
    if (!(it->type & type)) {
        profiles_problem(c, "%s: must be %s", key, type_name);
        return NULL;
    }
    return it;
}

static int profiles_get_bool(struct profiles_ctx *c, const cJSON *obj, const char *key, int dflt)
{
    const cJSON *it = profiles_get(c, obj, key, cJSON_True | cJSON_False, "true or false");

    return it ? cJSON_IsTrue(it) : dflt;
}

static const char *profiles_get_str(struct profiles_ctx *c, const cJSON *obj, const char *key,
                                    const char *dflt)
{
    const cJSON *it = profiles_get(c, obj, key, cJSON_String, "a string");

    return it ? it->valuestring : dflt;
}

/* A value of env (and the like) that is not a string: say what to write
 * instead, for what an admin most likely meant. */
static void profiles_kv_type_error(struct profiles_ctx *c, const char *field, const cJSON *it)
{
    if (cJSON_IsObject(it) && cJSON_GetObjectItemCaseSensitive(it, "valueFrom"))
        profiles_problem(
            c,
            "%s.%s: valueFrom is not supported in a profile (its values are literal strings); "
            "set the variable in the pod's env instead, or write its value",
            field, it->string);
    else if (cJSON_IsObject(it) && cJSON_GetObjectItemCaseSensitive(it, "value"))
        profiles_problem(
            c, "%s.%s: write the value itself (\"%s\": \"...\"), not an object with value", field,
            it->string, it->string);
    else if (cJSON_IsNumber(it) || cJSON_IsBool(it))
        profiles_problem(c, "%s.%s: must be a string (quote numbers and booleans: \"8\")", field,
                         it->string);
    else
        profiles_problem(c, "%s.%s: must be a string", field, it->string);
}

/* Reads an object of string values into kvs, in document order. */
static void profiles_read_kvs(struct profiles_ctx *c, const cJSON *obj, const char *field,
                              struct profiles_kvs *kvs)
{
    const cJSON *it;
    size_t n = (size_t)cJSON_GetArraySize(obj);

    kvs->v = profiles_calloc(c, n, sizeof(*kvs->v));
    kvs->n = 0;
    if (!kvs->v)
        return;
    cJSON_ArrayForEach(it, obj)
    {
        if (!cJSON_IsString(it)) {
            profiles_kv_type_error(c, field, it);
            continue;
        }
        kvs->v[kvs->n].name = it->string;
        kvs->v[kvs->n].value = it->valuestring;
        kvs->n++;
    }
}

static void profiles_check_env(struct profiles_ctx *c, const struct profiles_kvs *env,
                               const char *field)
{
    char msg[NCCL_MSG_LEN];

    for (size_t i = 0; i < env->n; i++) {
        if (!nccl_is_c_identifier(env->v[i].name)) {
            profiles_problem(
                c,
                "%s: \"%s\" is not a valid variable name (letters, digits, _; no leading "
                "digit)",
                field, env->v[i].name);
            continue;
        }
        if (nccl_check(env->v[i].name, env->v[i].value, msg, sizeof(msg)) != NCCL_VALUE_OK)
            profiles_problem(c, "%s: %s", field, msg);
    }
}

/* Overlays src on dst: same names take src's value in place, new names are
 * appended. dst must have room for dst->n + src->n entries. */
static void profiles_merge_kvs(struct profiles_kvs *dst, const struct profiles_kvs *src)
{
    for (size_t i = 0; i < src->n; i++) {
        size_t j;

        for (j = 0; j < dst->n && strcmp(dst->v[j].name, src->v[i].name) != 0; j++)
            ;
        dst->v[j] = src->v[i];
        if (j == dst->n)
            dst->n++;
    }
}

/* The settings a profile inherits from "defaults" and may override. */
struct profiles_common {
    struct profiles_kvs env;
    struct profiles_kvs host_network_env;
    const char *scheduler_name;
    int ipc_lock;
    int shm;
    const char *shm_size_limit;
    int init_containers;
    struct profiles_detect detect;
    enum profiles_nccl_conf nccl_conf;
};

/* "ncclConf": "auto", true or false; dflt when absent. */
static enum profiles_nccl_conf profiles_read_nccl_conf(struct profiles_ctx *c, const cJSON *obj,
                                                       enum profiles_nccl_conf dflt)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, "ncclConf");

    if (!it)
        return dflt;
    if (cJSON_IsBool(it))
        return cJSON_IsTrue(it) ? PROFILES_NCCL_CONF_ON : PROFILES_NCCL_CONF_OFF;
    if (cJSON_IsString(it) && strcmp(it->valuestring, "auto") == 0)
        return PROFILES_NCCL_CONF_AUTO;
    profiles_problem(c, "ncclConf: must be \"auto\", true or false");
    return dflt;
}

static void profiles_read_shm(struct profiles_ctx *c, const cJSON *shm, struct profiles_common *out)
{
    static const char *const keys[] = {"enabled", "sizeLimit", NULL};
    const char *size;

    if (cJSON_IsFalse(shm)) {
        out->shm = 0;
        return;
    }
    if (!cJSON_IsObject(shm)) {
        profiles_problem(c, "shm: must be an object ({\"sizeLimit\": \"64Gi\"}) or false");
        return;
    }
    profiles_check_keys(c, shm, "shm", keys);
    out->shm = profiles_get_bool(c, shm, "enabled", 1);
    size = profiles_get_str(c, shm, "sizeLimit", out->shm_size_limit);
    if (size && *size == '\0')
        size = NULL;
    if (size && !quantity_valid(size))
        profiles_problem(c, "shm.sizeLimit: \"%s\" is not a Kubernetes quantity (e.g. \"64Gi\")",
                         size);
    out->shm_size_limit = size;
}

/* A whole number (at most 15 digits) and one of the suffixes, times that
 * suffix's factor: the plain forms of cpu ("100m", "1") and memory ("32Mi")
 * an admin writes. -1 for anything else, and for a product past 2^62. */
static long long profiles_scaled(const char *s, const char *const *suffix, const long long *factor)
{
    long long v = 0;
    size_t n = 0;

    while (s[n] >= '0' && s[n] <= '9' && n < 16)
        v = v * 10 + (s[n++] - '0');
    if (n == 0 || n > 15 || !quantity_valid(s))
        return -1;
    for (size_t i = 0; suffix[i]; i++)
        if (strcmp(s + n, suffix[i]) == 0)
            return v > (1ll << 62) / factor[i] ? -1 : v * factor[i];
    return -1;
}

/* detect.cpu in millicores, 10m..1: the init container runs for
 * milliseconds, and a large request would raise the pod's own (the largest
 * init container's counts when it is more than the containers' sum). */
static void profiles_check_detect_cpu(struct profiles_ctx *c, const char *cpu)
{
    static const char *const suffix[] = {"m", "", NULL};
    static const long long factor[] = {1, 1000};
    long long v = profiles_scaled(cpu, suffix, factor);

    if (v < 10 || v > 1000)
        profiles_problem(
            c, "detect.cpu: \"%s\": write millicores or whole cores from 10m to 1 (\"100m\")", cpu);
}

/* detect.memory in bytes, 16Mi..1Gi: nccl-detect needs about 9 MiB, and a
 * limit it exceeds would kill it again at every try, keeping the pod from
 * starting. */
static void profiles_check_detect_memory(struct profiles_ctx *c, const char *mem)
{
    static const char *const suffix[] = {"", "k", "M", "G", "Ki", "Mi", "Gi", NULL};
    static const long long factor[] = {1, 1000, 1000000, 1000000000, 1 << 10, 1 << 20, 1 << 30};
    long long v = profiles_scaled(mem, suffix, factor);

    if (v < 16ll << 20 || v > 1ll << 30)
        profiles_problem(
            c,
            "detect.memory: \"%s\": write a whole number with Mi or Gi from 16Mi to 1Gi "
            "(\"32Mi\")",
            mem);
}

/* A member of detect that must be a string; NULL when absent or not one. */
static const char *profiles_detect_str(struct profiles_ctx *c, const cJSON *d, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(d, key);

    if (it && !cJSON_IsString(it))
        profiles_problem(c, "detect.%s: must be a string", key);
    return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* "detect": true, false, or {"enabled", "cpu", "memory", "requireHca"} (on
 * unless enabled is false, the fields it lacks taken from base). */
static void profiles_read_detect(struct profiles_ctx *c, const cJSON *d,
                                 struct profiles_common *out)
{
    static const char *const keys[] = {"enabled", "cpu", "memory", "requireHca", NULL};
    const cJSON *enabled, *require;
    const char *v;

    if (cJSON_IsBool(d)) {
        out->detect.on = cJSON_IsTrue(d);
        return;
    }
    if (!cJSON_IsObject(d)) {
        profiles_problem(c, "detect: must be true, false or an object ({\"memory\": \"64Mi\"})");
        return;
    }
    profiles_check_keys(c, d, "detect", keys);
    enabled = cJSON_GetObjectItemCaseSensitive(d, "enabled");
    if (enabled && !cJSON_IsBool(enabled))
        profiles_problem(c, "detect.enabled: must be true or false");
    out->detect.on = !cJSON_IsFalse(enabled);
    require = cJSON_GetObjectItemCaseSensitive(d, "requireHca");
    if (require && !cJSON_IsBool(require))
        profiles_problem(c, "detect.requireHca: must be true or false");
    else if (require)
        out->detect.require_hca = cJSON_IsTrue(require);
    /* Only the object's own values: inherited ones were checked in defaults. */
    if ((v = profiles_detect_str(c, d, "cpu")))
        profiles_check_detect_cpu(c, out->detect.cpu = v);
    if ((v = profiles_detect_str(c, d, "memory")))
        profiles_check_detect_memory(c, out->detect.memory = v);
}

/* Reads the overridable settings of obj on top of base (the defaults). */
static void profiles_read_common(struct profiles_ctx *c, const cJSON *obj,
                                 const struct profiles_common *base, struct profiles_common *out)
{
    const cJSON *env = profiles_get(c, obj, "env", cJSON_Object, "an object of strings");
    const cJSON *hn = profiles_get(c, obj, "hostNetworkEnv", cJSON_Object, "an object of strings");
    const cJSON *shm = cJSON_GetObjectItemCaseSensitive(obj, "shm");
    const cJSON *detect = cJSON_GetObjectItemCaseSensitive(obj, "detect");
    struct profiles_kvs own = {0}, own_hn = {0};

    *out = *base;
    out->scheduler_name = profiles_get_str(c, obj, "schedulerName", base->scheduler_name);
    out->ipc_lock = profiles_get_bool(c, obj, "ipcLock", base->ipc_lock);
    out->init_containers = profiles_get_bool(c, obj, "initContainers", base->init_containers);
    out->nccl_conf = profiles_read_nccl_conf(c, obj, base->nccl_conf);
    if (shm)
        profiles_read_shm(c, shm, out);
    if (detect)
        profiles_read_detect(c, detect, out);
    if (env)
        profiles_read_kvs(c, env, "env", &own);
    if (hn)
        profiles_read_kvs(c, hn, "hostNetworkEnv", &own_hn);
    /* Over the bound, nothing is merged: the merge compares every pair. */
    if (own.n + base->env.n >= PROFILES_MAX_ENV ||
        own_hn.n + base->host_network_env.n >= PROFILES_MAX_ENV) {
        profiles_problem(c, "env: at most %d variables per profile", PROFILES_MAX_ENV - 1);
        out->env = out->host_network_env = (struct profiles_kvs){0};
        return;
    }
    profiles_check_env(c, &own, "env");
    profiles_check_env(c, &own_hn, "hostNetworkEnv");
    out->env.v = profiles_calloc(c, base->env.n + own.n + 1, sizeof(*out->env.v));
    out->host_network_env.v =
        profiles_calloc(c, base->host_network_env.n + own_hn.n, sizeof(*out->host_network_env.v));
    if (!out->env.v || !out->host_network_env.v)
        return;
    out->env.n = out->host_network_env.n = 0;
    profiles_merge_kvs(&out->env, &base->env);
    profiles_merge_kvs(&out->env, &own);
    profiles_merge_kvs(&out->host_network_env, &base->host_network_env);
    profiles_merge_kvs(&out->host_network_env, &own_hn);
}

/* Builds NCCL_IB_HCA in NCCL's exact-match form "=mlx5_1,mlx5_2" from "hca". */
static void profiles_read_hca(struct profiles_ctx *c, const cJSON *hca, struct profiles_kvs *env)
{
    struct dynbuf b;
    const cJSON *it;

    if (profiles_kv_get(env, "NCCL_IB_HCA")) {
        profiles_problem(c, "hca: NCCL_IB_HCA is also set in env; keep one of them");
        return;
    }
    if (cJSON_GetArraySize(hca) < 1 || cJSON_GetArraySize(hca) > PROFILES_MAX_HCA) {
        profiles_problem(c, "hca: must list 1 to %d device names", PROFILES_MAX_HCA);
        return;
    }
    dynbuf_init(&b, 4096);
    dynbuf_addc(&b, '=');
    cJSON_ArrayForEach(it, hca)
    {
        if (!cJSON_IsString(it) || !nccl_is_hca_entry(it->valuestring)) {
            profiles_problem(
                c, "hca: each entry must be a device name like \"mlx5_1\", optionally with "
                   "a port from 1 to 255 (\"mlx5_1:1\")");
            continue;
        }
        if (b.len > 1)
            dynbuf_addc(&b, ',');
        dynbuf_addstr(&b, it->valuestring);
    }
    if (b.len < 2) {
        dynbuf_free(&b);
        return;
    }
    env->v[env->n].name = "NCCL_IB_HCA";
    env->v[env->n].value = profiles_owned(c, dynbuf_steal(&b));
    env->n++;
}

/* A GPU count, 1 to 1024, into *out: ERR_OK, or ERR_FAIL (the caller says
 * which field). */
static int profiles_gpu_count(const cJSON *n, long long *out)
{
    if (!cJSON_IsNumber(n) || n->valuedouble < 1 || n->valuedouble > 1024 ||
        n->valuedouble != (double)(long long)n->valuedouble)
        return ERR_FAIL;
    *out = (long long)n->valuedouble;
    return ERR_OK;
}

/* match.gpus: one count, or a list of distinct counts. */
static void profiles_read_gpus(struct profiles_ctx *c, const cJSON *gpus, struct profiles_entry *p)
{
    const cJSON *it;
    long long g;

    if (cJSON_IsNumber(gpus)) {
        if (profiles_gpu_count(gpus, &p->gpus[0]))
            profiles_problem(
                c, "match.gpus: must be a whole number from 1 to 1024, or a list of them");
        else
            p->n_gpus = 1;
        return;
    }
    if (!cJSON_IsArray(gpus) || cJSON_GetArraySize(gpus) < 1 ||
        cJSON_GetArraySize(gpus) > PROFILES_MAX_GPUS) {
        profiles_problem(
            c, "match.gpus: must be a whole number from 1 to 1024, or a list of 1 to %d of them",
            PROFILES_MAX_GPUS);
        return;
    }
    cJSON_ArrayForEach(it, gpus)
    {
        if (profiles_gpu_count(it, &g)) {
            profiles_problem(c, "match.gpus: each entry must be a whole number from 1 to 1024");
            continue;
        }
        if (profiles_matches_gpus(p, g)) {
            profiles_problem(c, "match.gpus: %lld is listed twice", g);
            continue;
        }
        p->gpus[p->n_gpus++] = g;
    }
}

/* ---- match.namespaces ---- */

/* labelsel's sink's allocator: the selector's memory is the snapshot's. */
static void *profiles_ns_calloc(void *ctx, size_t n, size_t size)
{
    return profiles_calloc(ctx, n, size);
}

static void profiles_ns_selector(struct profiles_ctx *c, const cJSON *sel, struct profiles_entry *p)
{
    const struct labelsel_sink sink = {c, profiles_vproblem, profiles_ns_calloc};

    p->namespaces.selector = 1;
    if (labelsel_parse(&p->namespaces.sel, sel, "match.namespaces", &sink) != ERR_OK)
        return;
    if (labelsel_matches_all(&p->namespaces.sel, PROFILES_NS_NAME_LABEL))
        profiles_problem(
            c, "match.namespaces: this selector matches every namespace; leave namespaces out "
               "for a cluster-wide profile");
    else if (!labelsel_satisfiable(&p->namespaces.sel, NULL, PROFILES_NS_NAME_LABEL, NULL))
        profiles_problem(c,
                         "match.namespaces: no namespace can match this selector (its requirements "
                         "contradict each other)");
}

static int profiles_cmp_name(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* A list of namespace names: 1 to PROFILES_MAX_NAMESPACES DNS-1123 labels. */
static void profiles_ns_list(struct profiles_ctx *c, const cJSON *list, struct profiles_entry *p)
{
    const cJSON *it;
    int n = cJSON_GetArraySize(list);

    if (n < 1 || n > PROFILES_MAX_NAMESPACES) {
        profiles_problem(c,
                         "match.namespaces: must list 1 to %d namespace names (leave it out for a "
                         "cluster-wide profile)",
                         PROFILES_MAX_NAMESPACES);
        return;
    }
    p->namespaces.names = profiles_calloc(c, (size_t)n, sizeof(*p->namespaces.names));
    if (!p->namespaces.names)
        return;
    cJSON_ArrayForEach(it, list)
    {
        size_t j;

        if (!cJSON_IsString(it) || !k8sname_label(it->valuestring)) {
            profiles_problem(
                c, "match.namespaces: each entry must be a namespace name (a DNS-1123 label: "
                   "a-z, 0-9, '-', at most 63)");
            continue;
        }
        for (j = 0; j < p->namespaces.n_names && strcmp(p->namespaces.names[j], it->valuestring);
             j++)
            ;
        if (j < p->namespaces.n_names)
            profiles_problem(c, "match.namespaces: \"%s\" is listed twice", it->valuestring);
        else
            p->namespaces.names[p->namespaces.n_names++] = it->valuestring;
    }
    p->namespaces.names_sorted = profiles_calloc(c, (size_t)n, sizeof(char *));
    if (!p->namespaces.names_sorted)
        return;
    memcpy(p->namespaces.names_sorted, p->namespaces.names, p->namespaces.n_names * sizeof(char *));
    qsort(p->namespaces.names_sorted, p->namespaces.n_names, sizeof(char *), profiles_cmp_name);
}

static void profiles_read_namespaces(struct profiles_ctx *c, const cJSON *ns,
                                     struct profiles_entry *p)
{
    if (cJSON_IsArray(ns))
        profiles_ns_list(c, ns, p);
    else if (cJSON_IsObject(ns))
        profiles_ns_selector(c, ns, p);
    else
        profiles_problem(
            c, "match.namespaces: must be a list of names ([\"team-a\"]) or a label selector "
               "({\"matchLabels\": {...}})");
}

int profiles_ns_limited(const struct profiles_entry *p)
{
    return p->namespaces.names || p->namespaces.selector;
}

/* Whether some namespace could be one of both p's and q's (both limited),
 * and where, for messages: "; both apply in namespace \"x\"". */
static int profiles_ns_overlap(const struct profiles_entry *p, const struct profiles_entry *q,
                               char *where, size_t len)
{
    const struct profiles_namespaces *a = &p->namespaces, *b = &q->namespaces, *t;

    if (!a->selector && b->selector)
        t = a, a = b, b = t; /* a selector first */
    if (!a->selector) {
        for (size_t i = 0; i < a->n_names; i++)
            if (b->names_sorted && bsearch(&a->names[i], b->names_sorted, b->n_names,
                                           sizeof(char *), profiles_cmp_name))
                return snprintf(where, len, "; both apply in namespace \"%s\"", a->names[i]), 1;
        return 0;
    }
    if (!b->selector) {
        for (size_t j = 0; j < b->n_names; j++)
            if (labelsel_satisfiable(&a->sel, NULL, PROFILES_NS_NAME_LABEL, b->names[j]))
                return snprintf(where, len, "; both apply in namespace \"%s\" if its labels match",
                                b->names[j]),
                       1;
        return 0;
    }
    if (!labelsel_satisfiable(&a->sel, &b->sel, PROFILES_NS_NAME_LABEL, NULL))
        return 0;
    snprintf(where, len, "; both apply in a namespace whose labels match both selectors");
    return 1;
}

int profiles_in_namespace(const struct profiles_entry *p, const char *ns, const cJSON *labels)
{
    const struct profiles_namespaces *n = &p->namespaces;

    if (!profiles_ns_limited(p))
        return 1;
    if (!n->selector) {
        for (size_t i = 0; i < n->n_names; i++)
            if (ns && strcmp(n->names[i], ns) == 0)
                return 1;
        return 0;
    }
    if (!cJSON_IsObject(labels)) {
        /* The name label is the namespace's name, known without them. */
        for (size_t i = 0; ns && i < n->sel.n_reqs; i++)
            if (strcmp(n->sel.reqs[i].key, PROFILES_NS_NAME_LABEL) == 0 &&
                !labelsel_req_holds(&n->sel.reqs[i], ns))
                return 0;
        return -1;
    }
    return labelsel_matches(&n->sel, labels);
}

int profiles_ns_needs_labels(const struct profiles_entry *p)
{
    return p->namespaces.selector;
}

/* Equal names keep document order (the kvs array's): the first is the one
 * profiles_kv_get finds. */
static int profiles_cmp_label(const void *x, const void *y)
{
    const struct profiles_kv *a = *(const struct profiles_kv *const *)x;
    const struct profiles_kv *b = *(const struct profiles_kv *const *)y;
    int d = strcmp(a->name, b->name);

    return d ? d : (a > b) - (a < b);
}

/* match.nodeLabels: at most PROFILES_MAX_NODE_LABELS, sorted once by name. */
static void profiles_read_node_labels(struct profiles_ctx *c, const cJSON *labels,
                                      struct profiles_entry *p)
{
    int n = cJSON_GetArraySize(labels);

    if (n > PROFILES_MAX_NODE_LABELS) {
        profiles_problem(
            c,
            "match.nodeLabels: lists %d labels, more than %d: keep the few that tell this "
            "profile's nodes apart",
            n, PROFILES_MAX_NODE_LABELS);
        return;
    }
    profiles_read_kvs(c, labels, "match.nodeLabels", &p->node_labels);
    p->node_labels_by_name = profiles_calloc(c, p->node_labels.n, sizeof(*p->node_labels_by_name));
    if (!p->node_labels_by_name) {
        p->node_labels.n = 0;
        return;
    }
    for (size_t i = 0; i < p->node_labels.n; i++)
        p->node_labels_by_name[i] = &p->node_labels.v[i];
    qsort(p->node_labels_by_name, p->node_labels.n, sizeof(*p->node_labels_by_name),
          profiles_cmp_label);
}

/* ---- match.jobKinds, match.runtimes ---- */

const char *profiles_job_kind_name(unsigned kind)
{
    /* enum mutate_job_kind's order; test_jobmatch checks it against
     * mutate_job_kind_name(), which mutate.h's users call. */
    static const char *const names[PROFILES_JOB_KINDS] = {
        "", "PyTorchJob", "TrainJob", "JobSet", "MPIJob", "VolcanoJob",
    };

    return kind < PROFILES_JOB_KINDS ? names[kind] : "";
}

static unsigned profiles_job_kind_bit(const char *name)
{
    for (unsigned k = 1; k < PROFILES_JOB_KINDS; k++)
        if (strcmp(name, profiles_job_kind_name(k)) == 0)
            return 1u << k;
    return 0;
}

static void profiles_read_job_kinds(struct profiles_ctx *c, const cJSON *list,
                                    struct profiles_entry *p)
{
    static const char allowed[] = "PyTorchJob, TrainJob, JobSet, MPIJob, VolcanoJob";
    const cJSON *it;
    int n = cJSON_GetArraySize(list);

    if (!cJSON_IsArray(list) || n < 1) {
        profiles_problem(c,
                         "match.jobKinds: must list 1 or more of %s (leave it out for every "
                         "kind)",
                         allowed);
        return;
    }
    cJSON_ArrayForEach(it, list)
    {
        unsigned bit = cJSON_IsString(it) ? profiles_job_kind_bit(it->valuestring) : 0;

        if (!bit)
            profiles_problem(c, "match.jobKinds: \"%s\" is no job kind: use %s",
                             cJSON_IsString(it) ? it->valuestring : "(not a string)", allowed);
        else if (p->job_kinds & bit)
            profiles_problem(c, "match.jobKinds: \"%s\" is listed twice", it->valuestring);
        p->job_kinds |= bit;
    }
}

/* TrainJob runtimes: names of ClusterTrainingRuntimes or TrainingRuntimes,
 * DNS-1123 subdomains as their metadata.name is. */
static void profiles_read_runtimes(struct profiles_ctx *c, const cJSON *list,
                                   struct profiles_entry *p)
{
    const cJSON *it;
    int n = cJSON_GetArraySize(list);

    if (!cJSON_IsArray(list) || n < 1 || n > PROFILES_MAX_NAMESPACES) {
        profiles_problem(c,
                         "match.runtimes: must list 1 to %d TrainJob runtime names (leave it out "
                         "for any runtime)",
                         PROFILES_MAX_NAMESPACES);
        return;
    }
    p->runtimes = profiles_calloc(c, (size_t)n, sizeof(*p->runtimes));
    if (!p->runtimes)
        return;
    cJSON_ArrayForEach(it, list)
    {
        size_t j;

        if (!cJSON_IsString(it) || !k8sname_subdomain(it->valuestring)) {
            profiles_problem(c, "match.runtimes: each entry must be a runtime's name (a "
                                "DNS-1123 name: a-z, 0-9, '-', '.')");
            continue;
        }
        for (j = 0; j < p->n_runtimes && strcmp(p->runtimes[j], it->valuestring); j++)
            ;
        if (j < p->n_runtimes)
            profiles_problem(c, "match.runtimes: \"%s\" is listed twice", it->valuestring);
        else
            p->runtimes[p->n_runtimes++] = it->valuestring;
    }
}

int profiles_job_limited(const struct profiles_entry *p)
{
    return p->job_kinds || p->runtimes;
}

int profiles_limited(const struct profiles_entry *p)
{
    return profiles_ns_limited(p) || profiles_job_limited(p);
}

int profiles_for_job(const struct profiles_entry *p, unsigned kind, const char *runtime)
{
    if (p->job_kinds && (kind >= PROFILES_JOB_KINDS || !(p->job_kinds & (1u << kind))))
        return 0;
    if (!p->runtimes)
        return 1;
    for (size_t i = 0; runtime && i < p->n_runtimes; i++)
        if (strcmp(p->runtimes[i], runtime) == 0)
            return 1;
    return 0;
}

static void profiles_read_match(struct profiles_ctx *c, const cJSON *match,
                                struct profiles_entry *p)
{
    static const char *const keys[] = {"gpus",     "nodeLabels", "namespaces",
                                       "jobKinds", "runtimes",   NULL};
    const cJSON *gpus, *labels, *ns;

    if (!cJSON_IsObject(match)) {
        profiles_problem(c, "match: must be an object ({\"gpus\": 8, \"nodeLabels\": {...}})");
        return;
    }
    profiles_check_keys(c, match, "match", keys);
    gpus = cJSON_GetObjectItemCaseSensitive(match, "gpus");
    labels = profiles_get(c, match, "nodeLabels", cJSON_Object, "an object of strings");
    if (gpus)
        profiles_read_gpus(c, gpus, p);
    if (labels)
        profiles_read_node_labels(c, labels, p);
    if ((ns = cJSON_GetObjectItemCaseSensitive(match, "namespaces")))
        profiles_read_namespaces(c, ns, p);
    if ((ns = cJSON_GetObjectItemCaseSensitive(match, "jobKinds")))
        profiles_read_job_kinds(c, ns, p);
    if ((ns = cJSON_GetObjectItemCaseSensitive(match, "runtimes")))
        profiles_read_runtimes(c, ns, p);
}

static void profiles_read_resources(struct profiles_ctx *c, const cJSON *res,
                                    struct profiles_entry *p)
{
    long long whole;

    profiles_read_kvs(c, res, "resources", &p->resources);
    for (size_t i = 0; i < p->resources.n; i++) {
        const struct profiles_kv *r = &p->resources.v[i];

        if (!strchr(r->name, '/') || !k8sname_qualified(r->name))
            profiles_problem(
                c,
                "resources.%s: not an extended resource name; write DOMAIN/NAME, as in "
                "\"rdma/hca\"",
                r->name);
        else if (!quantity_valid(r->value))
            profiles_problem(c, "resources.%s: \"%s\" is not a Kubernetes quantity", r->name,
                             r->value);
        else if (quantity_whole(r->value, &whole) || whole < 1)
            profiles_problem(c, "resources.%s: \"%s\": extended resources take a whole number >= 1",
                             r->name, r->value);
    }
}

static int profiles_name_valid(const char *s)
{
    size_t n = strlen(s);

    if (n < 1 || n > 63)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.'))
            return 0;
    return 1;
}

/* 1 when nccl-detect's --hca takes an NCCL_IB_HCA value: after the optional
 * ^ and =, entries (empty ones skipped, as NCCL does) that are each a device
 * name as a profile's "hca" list has them, not starting with a dot. */
static int profiles_hca_detectable(const char *v)
{
    char entry[80];
    size_t n;

    v += *v == '^';
    v += *v == '=';
    for (; *v; v += n + (v[n] == ',')) {
        n = strcspn(v, ",");
        if (n == 0)
            continue;
        if (n >= sizeof(entry))
            return 0;
        memcpy(entry, v, n);
        entry[n] = '\0';
        if (entry[0] == '.' || !nccl_is_hca_entry(entry))
            return 0;
    }
    return 1;
}

/* 1 when v fits on the command line of nccl-detect --socket-ifname: 1 to
 * PROFILES_DETECT_IFNAME_MAX bytes, no control character. */
static int profiles_ifname_detectable(const char *v)
{
    size_t n = strlen(v);

    if (n == 0 || n > PROFILES_DETECT_IFNAME_MAX)
        return 0;
    for (; *v; v++)
        if ((unsigned char)*v < 0x20 || *v == 0x7f)
            return 0;
    return 1;
}

/* With detect on, the values nccl-detect is given must be ones it takes:
 * a usage error there writes no file, and the pod would run without the
 * NCCL_IB_HCA that detection left out of its env. */
static void profiles_check_detect(struct profiles_ctx *c, const struct profiles_entry *p)
{
    const struct profiles_kvs *lists[] = {&p->env, &p->host_network_env};
    const char *field[] = {"env", "hostNetworkEnv"};
    const char *v;

    if (!p->detect.on)
        return;
    v = profiles_kv_get(&p->env, "NCCL_IB_HCA");
    if (p->detect.require_hca && (!v || v[0] != '='))
        profiles_problem(c, "detect.requireHca: needs the list the job expects: give the profile "
                            "\"hca\" (or env NCCL_IB_HCA of '=' and device names)");
    for (size_t i = 0; i < 2; i++) {
        if ((v = profiles_kv_get(lists[i], "NCCL_IB_HCA")) && !profiles_hca_detectable(v))
            profiles_problem(
                c,
                "detect: %s.NCCL_IB_HCA \"%s\" must list plain device names (letters, digits, "
                "_ - .) for nccl-detect --hca",
                field[i], v);
        if ((v = profiles_kv_get(lists[i], "NCCL_SOCKET_IFNAME")) && !profiles_ifname_detectable(v))
            profiles_problem(c,
                             "detect: %s.NCCL_SOCKET_IFNAME must be 1 to %d bytes without control "
                             "characters for nccl-detect --socket-ifname",
                             field[i], PROFILES_DETECT_IFNAME_MAX);
    }
}

/* "mode": the profile's pods are reported, or enforced, unless their
 * namespace's label says otherwise (report.h). */
static void profiles_read_mode(struct profiles_ctx *c, const cJSON *obj, struct profiles_entry *p)
{
    const char *mode = profiles_get_str(c, obj, "mode", NULL);

    if (mode && (p->mode = report_mode_parse(mode)) == REPORT_MODE_UNSET)
        profiles_problem(c, "mode: must be \"report\" or \"enforce\", not \"%s\"", mode);
}

static void profiles_read_profile(struct profiles_ctx *c, const cJSON *obj, size_t idx,
                                  const struct profiles_common *defaults, struct profiles_entry *p)
{
    static const char *const keys[] = {
        "name",   "default",   "match",    "pin", "env",           "hostNetworkEnv",
        "hca",    "resources", "ipcLock",  "shm", "schedulerName", "initContainers",
        "detect", "mode",      "ncclConf", NULL};
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    const cJSON *it;
    struct profiles_common common;

    snprintf(c->where_buf, sizeof(c->where_buf), "profiles[%zu]", idx);
    if (cJSON_IsString(name) && profiles_name_valid(name->valuestring))
        snprintf(c->where_buf, sizeof(c->where_buf), "profile \"%s\"", name->valuestring);
    c->where = c->where_buf;
    if (!cJSON_IsString(name) || !profiles_name_valid(name->valuestring)) {
        profiles_problem(c, "name: must be 1-63 lower-case letters, digits, '-' or '.'");
        return;
    }
    p->name = name->valuestring;
    profiles_check_keys(c, obj, "", keys);
    p->is_default = profiles_get_bool(c, obj, "default", 0);
    p->pin = profiles_get_bool(c, obj, "pin", 0);
    profiles_read_common(c, obj, defaults, &common);
    p->env = common.env;
    p->host_network_env = common.host_network_env;
    p->scheduler_name = common.scheduler_name;
    p->ipc_lock = common.ipc_lock;
    p->shm = common.shm;
    p->shm_size_limit = common.shm_size_limit;
    p->init_containers = common.init_containers;
    p->detect = common.detect;
    p->nccl_conf = common.nccl_conf;
    profiles_read_mode(c, obj, p);
    if ((it = profiles_get(c, obj, "hca", cJSON_Array, "an array of device names")) && p->env.v)
        profiles_read_hca(c, it, &p->env);
    profiles_check_detect(c, p);
    if ((it = cJSON_GetObjectItemCaseSensitive(obj, "match")))
        profiles_read_match(c, it, p);
    if ((it = profiles_get(c, obj, "resources", cJSON_Object, "an object of quantities")))
        profiles_read_resources(c, it, p);
    if (p->pin && p->node_labels.n == 0)
        profiles_problem(c, "pin: there is nothing to pin without match.nodeLabels");
    else if (p->pin && p->n_gpus == 0 && !p->is_default)
        profiles_problem(
            c, "pin: only a profile chosen by GPU count or as the default is pinned; give it "
               "match.gpus or default: true");
}

static void profiles_read_gpu_resources(struct profiles_ctx *c, const cJSON *root)
{
    static const char *const fallback = "nvidia.com/gpu";
    const cJSON *arr =
        profiles_get(c, root, "gpuResources", cJSON_Array, "an array of resource names");
    const cJSON *it;
    size_t n = arr ? (size_t)cJSON_GetArraySize(arr) : 0;

    c->ps->gpu_resources = profiles_calloc(c, n ? n : 1, sizeof(char *));
    if (!c->ps->gpu_resources)
        return;
    if (!arr) {
        c->ps->gpu_resources[0] = fallback;
        c->ps->n_gpu_resources = 1;
        return;
    }
    cJSON_ArrayForEach(it, arr)
    {
        if (!cJSON_IsString(it) || !strchr(it->valuestring, '/'))
            profiles_problem(
                c, "gpuResources: each entry must be a resource name like \"nvidia.com/gpu\"");
        else
            c->ps->gpu_resources[c->ps->n_gpu_resources++] = it->valuestring;
    }
    if (n == 0)
        profiles_problem(c, "gpuResources: must name at least one resource");
}

static void profiles_read_targets(struct profiles_ctx *c, const cJSON *root)
{
    static const char *const keys[] = {"mpijob", "trainjob", "jobset", "volcanojob", NULL};
    const cJSON *t = profiles_get(c, root, "targets", cJSON_Object, "an object of booleans");

    /* TrainJob, MPIJob and Volcano Job pods are targets unless the file
     * says otherwise: each is a training job whose pods want what a
     * PyTorchJob's get (issue 24). A plain JobSet's pods are not, since a
     * JobSet runs anything (its component turns them on). */
    c->ps->targets |=
        PROFILES_TARGET_TRAINJOB | PROFILES_TARGET_MPIJOB | PROFILES_TARGET_VOLCANOJOB;
    if (!t)
        return;
    profiles_check_keys(c, t, "targets", keys);
    if (!profiles_get_bool(c, t, "mpijob", 1))
        c->ps->targets &= ~(unsigned)PROFILES_TARGET_MPIJOB;
    if (!profiles_get_bool(c, t, "trainjob", 1))
        c->ps->targets &= ~(unsigned)PROFILES_TARGET_TRAINJOB;
    if (profiles_get_bool(c, t, "jobset", 0))
        c->ps->targets |= PROFILES_TARGET_JOBSET;
    if (!profiles_get_bool(c, t, "volcanojob", 1))
        c->ps->targets &= ~(unsigned)PROFILES_TARGET_VOLCANOJOB;
}

static void profiles_read_defaults(struct profiles_ctx *c, const cJSON *root,
                                   struct profiles_common *d)
{
    static const char *const keys[] = {"env", "hostNetworkEnv", "schedulerName", "ipcLock",
                                       "shm", "initContainers", "detect",        "ncclConf",
                                       NULL};
    const struct profiles_common builtin = {.scheduler_name = "volcano",
                                            .ipc_lock = 1,
                                            .shm = 1,
                                            .detect = {.on = 0, .cpu = "100m", .memory = "32Mi"}};
    const cJSON *obj = profiles_get(c, root, "defaults", cJSON_Object, "an object");

    *d = builtin;
    if (!obj)
        return;
    c->where = "defaults";
    profiles_check_keys(c, obj, "", keys);
    profiles_read_common(c, obj, &builtin, d);
    c->where = NULL;
}

/* Whether a pod could be one both p and q are for, by match.jobKinds and
 * match.runtimes (either without them: yes). */
static int profiles_job_overlap(const struct profiles_entry *p, const struct profiles_entry *q)
{
    if (p->job_kinds && q->job_kinds && !(p->job_kinds & q->job_kinds))
        return 0;
    if (!p->runtimes || !q->runtimes)
        return 1;
    for (size_t i = 0; i < p->n_runtimes; i++)
        for (size_t j = 0; j < q->n_runtimes; j++)
            if (strcmp(p->runtimes[i], q->runtimes[j]) == 0)
                return 1;
    return 0;
}

/* Whether both limited p and q could apply to one pod, by all their limits. */
static int profiles_limits_overlap(const struct profiles_entry *p, const struct profiles_entry *q,
                                   char *where, size_t len)
{
    if (!profiles_job_overlap(p, q))
        return 0;
    if (profiles_ns_limited(p) && profiles_ns_limited(q))
        return profiles_ns_overlap(p, q, where, len);
    return 1;
}

int profiles_limits_cover(const struct profiles_entry *p, const struct profiles_entry *q)
{
    int pn = profiles_ns_limited(p), qn = profiles_ns_limited(q);
    int pj = profiles_job_limited(p), qj = profiles_job_limited(q);

    return pn >= qn && pj >= qj && (pn != qn || pj != qj);
}

/* Two defaults where both could be candidates: cluster-wide, or limited to
 * namespaces that could overlap. A limited one may sit beside a cluster-wide
 * one: it is the default of its namespaces. */
static void profiles_check_defaults(struct profiles_ctx *c, const struct profiles_entry *p,
                                    size_t idx)
{
    char where[128];

    for (size_t j = 0; j < idx; j++) {
        const struct profiles_entry *q = &c->ps->p[j];

        if (!q->name || !q->is_default || profiles_ns_limited(p) != profiles_ns_limited(q) ||
            profiles_job_limited(p) != profiles_job_limited(q) || !profiles_job_overlap(p, q))
            continue;
        if (!profiles_ns_limited(p)) {
            profiles_problem(
                c, "profile \"%s\": default: \"%s\" is already the default; mark at most one",
                p->name, q->name);
            return;
        }
        if (profiles_ns_overlap(p, q, where, sizeof(where))) {
            profiles_problem(
                c,
                "profile \"%s\": default: \"%s\" is already the default there; mark at most "
                "one per namespace%s",
                p->name, q->name, where);
            return;
        }
    }
}

static void profiles_check_names(struct profiles_ctx *c)
{
    c->where = NULL;
    for (size_t i = 0; i < c->ps->n; i++) {
        const struct profiles_entry *p = &c->ps->p[i];

        if (!p->name)
            continue;
        for (size_t j = 0; j < i; j++)
            if (c->ps->p[j].name && strcmp(p->name, c->ps->p[j].name) == 0)
                profiles_problem(c, "profile \"%s\": name is used by more than one profile",
                                 p->name);
        if (p->is_default)
            profiles_check_defaults(c, p, i);
    }
}

/* One merge of the two sorted lists: b's cursor stops at the first of
 * each name, which is b's value for it (profiles_kv_get's). */
int profiles_labels_within(const struct profiles_entry *a, const struct profiles_entry *b)
{
    size_t j = 0;

    for (size_t i = 0; i < a->node_labels.n; i++) {
        const struct profiles_kv *x = a->node_labels_by_name[i];
        int d = 1;

        while (j < b->node_labels.n && (d = strcmp(b->node_labels_by_name[j]->name, x->name)) < 0)
            j++;
        if (j == b->node_labels.n || d != 0 || strcmp(b->node_labels_by_name[j]->value, x->value))
            return 0;
    }
    return 1;
}

static int profiles_same_gpus(const struct profiles_entry *p, const struct profiles_entry *q)
{
    if (p->n_gpus != q->n_gpus)
        return 0;
    for (size_t i = 0; i < p->n_gpus; i++)
        if (!profiles_matches_gpus(q, p->gpus[i]))
            return 0;
    return 1;
}

/* The first count of p that q also lists, or 0. */
static long long profiles_shared_gpus(const struct profiles_entry *p,
                                      const struct profiles_entry *q)
{
    for (size_t i = 0; i < p->n_gpus; i++)
        if (profiles_matches_gpus(q, p->gpus[i]))
            return p->gpus[i];
    return 0;
}

/* p's rules against q's (q any other profile); a pair with the same labels
 * is reported once, from the later of the two. where ends each message:
 * "" or where both apply. */
static void profiles_check_pair(struct profiles_ctx *c, const struct profiles_entry *p,
                                const struct profiles_entry *q, int p_is_later, const char *where)
{
    int q_within_p = profiles_labels_within(q, p);
    int same_labels = q_within_p && profiles_labels_within(p, q);
    long long g = profiles_shared_gpus(p, q);

    if (same_labels && !p_is_later)
        return;
    if (same_labels && profiles_same_gpus(p, q) && (p->n_gpus || p->node_labels.n)) {
        profiles_problem(
            c,
            "profiles \"%s\" and \"%s\" have the same match rules, so neither can ever be "
            "chosen by them; change or remove one%s",
            q->name, p->name, where);
        return;
    }
    if (same_labels && p->node_labels.n)
        profiles_problem(
            c,
            "profiles \"%s\" and \"%s\": the same match.nodeLabels can never choose either; "
            "add a label that tells their nodes apart%s",
            q->name, p->name, where);
    else if (q_within_p && q->node_labels.n)
        profiles_problem(
            c,
            "profile \"%s\": match.nodeLabels can never win: its nodes also have all labels "
            "of profile \"%s\"; add a label to \"%s\" that these nodes lack%s",
            p->name, q->name, q->name, where);
    if (g && same_labels)
        profiles_problem(
            c,
            "profiles \"%s\" and \"%s\": match.gpus %lld can never choose either: their "
            "nodeLabels do not tell them apart%s",
            q->name, p->name, g, where);
    else if (g && q_within_p)
        profiles_problem(
            c,
            "profile \"%s\": match.gpus %lld can never win: profile \"%s\" takes %lld GPUs "
            "too and fits every pod that \"%s\" fits%s",
            p->name, g, q->name, g, p->name, where);
}

/* Which pairs compete (profiles.h): two cluster-wide profiles everywhere,
 * two limited ones where both apply. A limited p beside a cluster-wide q
 * only competes when it does not cover q (its nodeLabels within q's): one
 * that covers q takes q's place in its namespaces (select.h), and q keeps
 * the other namespaces, so a cluster-wide q is never refused for p. */
static void profiles_check_rules(struct profiles_ctx *c)
{
    char where[128];

    c->where = NULL;
    for (size_t i = 0; i < c->ps->n; i++)
        for (size_t j = 0; j < c->ps->n; j++) {
            const struct profiles_entry *p = &c->ps->p[i], *q = &c->ps->p[j];
            int lp = profiles_limited(p), lq = profiles_limited(q);
            int p_covers = profiles_limits_cover(p, q);

            if (i == j || !p->name || !q->name)
                continue;
            where[0] = '\0';
            if (lp && lq && !profiles_limits_overlap(p, q, where, sizeof(where)))
                continue;
            if (profiles_limits_cover(q, p))
                continue;
            if (p_covers && profiles_labels_within(p, q))
                continue;
            profiles_check_pair(c, p, q, i > j || p_covers, where);
        }
}

static void profiles_read_profiles(struct profiles_ctx *c, const cJSON *root)
{
    const cJSON *arr = profiles_get(c, root, "profiles", cJSON_Array, "an array of profiles");
    const cJSON *it;
    struct profiles_common defaults;
    size_t i = 0;

    profiles_read_defaults(c, root, &defaults);
    if (!arr || cJSON_GetArraySize(arr) == 0) {
        profiles_problem(c, "profiles: must list at least one profile");
        return;
    }
    if (cJSON_GetArraySize(arr) > PROFILES_MAX_PROFILES) {
        profiles_problem(
            c, "profiles: lists %d profiles, more than %d: merge some (match.gpus takes a list)",
            cJSON_GetArraySize(arr), PROFILES_MAX_PROFILES);
        return;
    }
    c->ps->p = profiles_calloc(c, (size_t)cJSON_GetArraySize(arr), sizeof(*c->ps->p));
    if (!c->ps->p)
        return;
    cJSON_ArrayForEach(it, arr)
    {
        if (cJSON_IsObject(it))
            profiles_read_profile(c, it, i, &defaults, &c->ps->p[c->ps->n++]);
        else
            profiles_problem(c, "profiles[%zu]: must be an object", i);
        c->where = NULL;
        i++;
    }
    profiles_check_names(c);
    if (!c->n_errors)
        profiles_check_rules(c);
}

static void profiles_read_root(struct profiles_ctx *c, const cJSON *root)
{
    static const char *const keys[] = {"gpuResources", "rdmaResourcePrefix", "targets",
                                       "defaults",     "profiles",           NULL};
    const char *prefix;

    profiles_check_keys(c, root, "", keys);
    profiles_read_gpu_resources(c, root);
    prefix = profiles_get_str(c, root, "rdmaResourcePrefix", "rdma/");
    if (!*prefix || prefix[strlen(prefix) - 1] != '/')
        profiles_problem(c, "rdmaResourcePrefix: must end with '/' (e.g. \"rdma/\")");
    c->ps->rdma_prefix = prefix;
    profiles_read_targets(c, root);
    profiles_read_profiles(c, root);
}

/* Whether a text that is not JSON looks like YAML, so the message can say
 * so: its first line that is neither blank nor a comment is a document
 * marker or a directive, or a plain "key:". */
static int profiles_looks_like_yaml(const char *text, size_t len)
{
    const char *p = text, *end = text + len, *eol;

    while (p < end) {
        eol = memchr(p, '\n', (size_t)(end - p));
        eol = eol ? eol : end;
        while (p < eol && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        if (p < eol && *p != '#')
            break;
        p = eol + (eol < end);
    }
    if (p >= end || *p == '{' || *p == '[' || *p == '"')
        return 0;
    if ((end - p >= 3 && memcmp(p, "---", 3) == 0) || *p == '%')
        return 1;
    for (const char *q = p; q < eol; q++)
        if (*q == ':' && (q + 1 == eol || q[1] == ' ' || q[1] == '\t' || q[1] == '\r'))
            return 1;
    return 0;
}

/* The text must be strict JSON (RFC 8259) and valid UTF-8, which cJSON does
 * not check; and hold no \u0000, at which cJSON would end the string: a
 * value would load shorter than the admin wrote it. Returns ERR_OK, or
 * ERR_FAIL with the problem added to the list. The place is a line and
 * column: the admin edits the file in an editor. */
static int profiles_check_text(struct profiles_ctx *c, const char *text, size_t len)
{
    struct jsoncheck_result chk;
    char why[JSONCHECK_WHY_LEN];

    if (jsoncheck_text(text, len, &chk)) {
        jsoncheck_describe_text(&chk, text, len, why, sizeof(why));
        if (profiles_looks_like_yaml(text, len))
            profiles_problem(c,
                             "not valid JSON: %s; it looks like YAML, and profiles are JSON only: "
                             "convert it (e.g. yq -o json), see README \"Profiles\"",
                             why);
        else
            profiles_problem(c, "not valid JSON: %s", why);
        return ERR_FAIL;
    }
    if (chk.first_nul != JSONCHECK_NONE) {
        profiles_problem(c, "a string holds \\u0000 (byte %zu): profile values cannot contain NUL",
                         chk.first_nul);
        return ERR_FAIL;
    }
    return ERR_OK;
}

struct profiles *profiles_parse(const char *text, size_t len, struct dynbuf *errors)
{
    struct profiles_ctx c = {.errors = errors};
    const char *end = NULL;

    c.ps = calloc(1, sizeof(*c.ps));
    if (!c.ps)
        goto nomem;
    if (profiles_check_text(&c, text, len))
        goto fail;
    c.ps->root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!c.ps->root) {
        /* Strict JSON cJSON cannot read: out of memory, or a number longer
         * than the 63 characters cJSON 1.7.15 reads. */
        profiles_problem(&c, "JSON the parser cannot read near byte %zu (a number too long?)",
                         end ? (size_t)(end - text) : (size_t)0);
        goto fail;
    }
    if (!cJSON_IsObject(c.ps->root)) {
        profiles_problem(&c, "the document must be a JSON object");
        goto fail;
    }
    profiles_read_root(&c, c.ps->root);
    if (c.nomem)
        goto nomem;
    if (c.n_errors)
        goto fail;
    return c.ps;

nomem:
    c.where = NULL;
    profiles_problem(&c, "out of memory while loading profiles");
fail:
    if (c.n_errors > PROFILES_MAX_ERRORS && errors)
        dynbuf_printf(errors, "(%d more problems not shown)\n", c.n_errors - PROFILES_MAX_ERRORS);
    profiles_free(c.ps);
    return NULL;
}

void profiles_free(struct profiles *ps)
{
    if (!ps)
        return;
    for (size_t i = 0; i < ps->n_owned; i++)
        free(ps->owned[i]);
    free(ps->owned);
    cJSON_Delete(ps->root);
    free(ps);
}

const struct profiles_entry *profiles_find(const struct profiles *ps, const char *name)
{
    for (size_t i = 0; i < ps->n; i++)
        if (ps->p[i].name && strcmp(ps->p[i].name, name) == 0)
            return &ps->p[i];
    return NULL;
}

int profiles_matches_gpus(const struct profiles_entry *p, long long gpus)
{
    for (size_t i = 0; i < p->n_gpus; i++)
        if (p->gpus[i] == gpus)
            return 1;
    return 0;
}

const char *profiles_kv_get(const struct profiles_kvs *kvs, const char *name)
{
    for (size_t i = 0; i < kvs->n; i++)
        if (strcmp(kvs->v[i].name, name) == 0)
            return kvs->v[i].value;
    return NULL;
}
