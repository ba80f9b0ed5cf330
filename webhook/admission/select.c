#include "admission/select.h"

#include "base/decimal.h"
#include "base/err.h"
#include "admission/podjson.h"
#include "admission/profiles.h"
#include "admission/target.h"

#include <cjson/cJSON.h>
#include <string.h>

static int select_in_values(struct podjson *r, const cJSON *expr, const char *value)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, podjson_arr(r, expr, "values"))
    {
        if (cJSON_IsString(v) && strcmp(v->valuestring, value) == 0)
            return 1;
    }
    return 0;
}

/* Gt and Lt compare the label as an integer against the value, as
 * Kubernetes does: exactly one value, and both sides read with
 * strconv.ParseInt(v, 10, 64); anything else matches nothing. */
static int select_compare(struct podjson *r, const cJSON *expr, const char *value, int gt)
{
    const cJSON *values = podjson_arr(r, expr, "values");
    const cJSON *only = cJSON_GetArrayItem(values, 0);
    long long have, want;

    if (cJSON_GetArraySize(values) != 1 || !cJSON_IsString(only) ||
        decimal_parse_ll(value, &have) || decimal_parse_ll(only->valuestring, &want))
        return 0;
    return gt ? have > want : have < want;
}

/* Evaluates one node selector requirement against a label value (NULL: the
 * node would not have the label). */
static int select_requirement(struct podjson *r, const cJSON *expr, const char *value)
{
    const char *op = podjson_str(r, expr, "operator");

    if (!op)
        return 0;
    if (strcmp(op, "Exists") == 0)
        return value != NULL;
    if (strcmp(op, "DoesNotExist") == 0)
        return value == NULL;
    if (strcmp(op, "NotIn") == 0)
        return !value || !select_in_values(r, expr, value);
    if (!value)
        return 0;
    if (strcmp(op, "In") == 0)
        return select_in_values(r, expr, value);
    if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0)
        return select_compare(r, expr, value, op[0] == 'G');
    return 0;
}

/* In, Exists, Gt and Lt require the key to be on the node; NotIn and
 * DoesNotExist also hold on a node without it, so they name nothing. */
static int select_positive(struct podjson *r, const cJSON *expr)
{
    const char *op = podjson_str(r, expr, "operator");

    return op && (strcmp(op, "In") == 0 || strcmp(op, "Exists") == 0 || strcmp(op, "Gt") == 0 ||
                  strcmp(op, "Lt") == 0);
}

/* What the pod says about its node, read once per admission, and its
 * namespace with the Namespace's labels, asked for at most once. */
struct select_ctx {
    struct podjson *r;
    const cJSON *selector; /* spec.nodeSelector */
    const cJSON *terms;    /* required nodeSelectorTerms (ORed) */
    /* The labels of the pod's Nodes, when known: spec.nodeName's, or those
     * a hostname constraint names that its other constraints admit. */
    const cJSON *nodes[SELECT_HOSTS_MAX];
    size_t n_nodes;
    int known;
    const char *ns;          /* the pod's namespace; NULL: unknown */
    unsigned job_kind;       /* enum mutate_job_kind (match.jobKinds) */
    const char *job_runtime; /* a TrainJob's runtime (match.runtimes); NULL: none */
    const struct select_hooks *hooks;
    cJSON *ns_labels; /* the caller frees them */
    int ns_asked;     /* the hook was called (ns_labels NULL: it failed) */
    int ns_unknown;   /* a rule met a profile whose namespaces could not be told */
};

/* A term with neither matchExpressions nor matchFields matches no node. */
static int select_term_empty(struct select_ctx *x, const cJSON *term)
{
    return cJSON_GetArraySize(podjson_arr(x->r, term, "matchExpressions")) == 0 &&
           cJSON_GetArraySize(podjson_arr(x->r, term, "matchFields")) == 0;
}

/* Whether a node with p's labels could meet every requirement of the term
 * (ANDed) on a key p names; requirements on other keys could hold. */
static int select_term_fits(struct select_ctx *x, const cJSON *term, const struct profiles_entry *p)
{
    const cJSON *expr;

    if (select_term_empty(x, term))
        return 0;
    cJSON_ArrayForEach(expr, podjson_arr(x->r, term, "matchExpressions"))
    {
        const char *key = podjson_str(x->r, expr, "key");
        const char *value = key ? profiles_kv_get(&p->node_labels, key) : NULL;

        if (value && !select_requirement(x->r, expr, value))
            return 0;
    }
    return 1;
}

/* Whether the term requires one of p's keys to be on the node. */
static int select_term_names(struct select_ctx *x, const cJSON *term,
                             const struct profiles_entry *p)
{
    const cJSON *expr;

    cJSON_ArrayForEach(expr, podjson_arr(x->r, term, "matchExpressions"))
    {
        const char *key = podjson_str(x->r, expr, "key");

        if (key && profiles_kv_get(&p->node_labels, key) && select_positive(x->r, expr))
            return 1;
    }
    return 0;
}

/* Required affinity: some term fits p (none given: no constraint), and
 * whether every term that can match a node names one of p's keys. */
static int select_affinity_fits(struct select_ctx *x, const struct profiles_entry *p, int *names)
{
    const cJSON *term;
    int any = 0, fits = 0, all_name = 1;

    cJSON_ArrayForEach(term, x->terms)
    {
        if (select_term_empty(x, term))
            continue;
        any = 1;
        fits |= select_term_fits(x, term, p);
        all_name &= select_term_names(x, term, p);
    }
    *names = any && all_name;
    return fits || cJSON_GetArraySize(x->terms) == 0;
}

static int select_node_has(const cJSON *labels, const struct profiles_entry *p)
{
    for (size_t i = 0; i < p->node_labels.n; i++) {
        const char *v = cJSON_GetStringValue(podjson_member(labels, p->node_labels.v[i].name));

        if (!v || strcmp(v, p->node_labels.v[i].value) != 0)
            return 0;
    }
    return 1;
}

/* Whether one of the pod's known Nodes has all of p's labels. */
static int select_nodes_have(struct select_ctx *x, const struct profiles_entry *p)
{
    for (size_t i = 0; i < x->n_nodes; i++)
        if (select_node_has(x->nodes[i], p))
            return 1;
    return 0;
}

/* Whether the pod's constraints are consistent with profile p, which has
 * nodeLabels, and (*names) whether they name it. */
static int select_fits(struct select_ctx *x, const struct profiles_entry *p, int *names)
{
    int affinity_names;

    *names = 0;
    if (x->known) {
        if (!select_nodes_have(x, p))
            return 0;
        *names = 1;
    }
    for (size_t i = 0; i < p->node_labels.n; i++) {
        const char *want = podjson_str(x->r, x->selector, p->node_labels.v[i].name);

        if (want && strcmp(want, p->node_labels.v[i].value) != 0)
            return 0;
        *names |= want != NULL;
    }
    if (!select_affinity_fits(x, p, &affinity_names))
        return 0;
    *names |= affinity_names;
    return 1;
}

/* Excluded: a profile with nodeLabels the constraints are not consistent with. */
static int select_excluded(struct select_ctx *x, const struct profiles_entry *p)
{
    int names;

    return p->node_labels.n > 0 && !select_fits(x, p, &names);
}

static void select_tie_add(struct select_tie *t, const struct profiles_entry *p)
{
    if (t->n < SELECT_TIE_LISTED)
        t->p[t->n] = p;
    t->n++;
}

/* Whether p is a candidate in the pod's namespace: 1, 0, or -1 when p has
 * a selector and the Namespace's labels cannot be had. */
static int select_member(struct select_ctx *x, const struct profiles_entry *p)
{
    /* Known from the pod alone: a profile for other jobs costs no lookup. */
    if (!profiles_for_job(p, x->job_kind, x->job_runtime))
        return 0;
    if (profiles_ns_needs_labels(p) && !x->ns_asked) {
        x->ns_asked = 1;
        if (x->ns && *x->ns && x->hooks && x->hooks->namespace_labels &&
            x->hooks->namespace_labels(x->hooks->ctx, x->ns, &x->ns_labels))
            x->ns_labels = NULL;
    }
    return profiles_in_namespace(p, x->ns, x->ns_labels);
}

/* The profiles one rule found, with whether the pod names each, and
 * whether it met profiles it could not tell were candidates. */
struct select_found {
    const struct profiles_entry *p[PROFILES_MAX_PROFILES];
    int named[PROFILES_MAX_PROFILES];
    size_t n;
    int unknown, unknown_named;
};

/* Adds p when it is a candidate here; one that cannot be told is left out
 * and remembered (select_by_constraints). */
static void select_found_add(struct select_ctx *x, struct select_found *f,
                             const struct profiles_entry *p, int named)
{
    int member = select_member(x, p);

    f->unknown |= member < 0;
    f->unknown_named |= member < 0 && named;
    if (member <= 0 || f->n >= PROFILES_MAX_PROFILES)
        return;
    f->p[f->n] = p;
    f->named[f->n++] = named;
}

/* The preference for profiles limited to namespaces: one found here covers
 * a cluster-wide one found here whose nodeLabels include all of its own
 * (the same nodes, or some of them), which drops out; a pod that names the
 * covered one names the one that covers it. Cluster-wide profiles of other
 * nodes stay, so a team profile never settles what the cluster's leave
 * ambiguous. Then the found ones go into tie, in file order. */
int select_covers(const struct profiles_entry *limited, const struct profiles_entry *wide)
{
    return profiles_limits_cover(limited, wide) && profiles_labels_within(limited, wide);
}

static void select_prefer_limited(struct select_found *f, struct select_tie *tie)
{
    int drop[PROFILES_MAX_PROFILES] = {0};
    size_t k = 0;

    for (size_t i = 0; i < f->n; i++)
        for (size_t j = 0; j < f->n; j++)
            if (select_covers(f->p[j], f->p[i])) {
                drop[i] = 1;
                f->named[j] |= f->named[i];
            }
    for (size_t i = 0; i < f->n; i++)
        if (!drop[i]) {
            f->p[k] = f->p[i];
            f->named[k++] = f->named[i];
        }
    f->n = k;
    for (size_t i = 0; i < f->n; i++)
        select_tie_add(tie, f->p[i]);
}

/* Whether every required term that can match a node demands key there
 * (In, Exists, Gt or Lt on it), and there is such a term. */
static int select_terms_require(struct select_ctx *x, const char *key)
{
    const cJSON *term, *expr;
    int any = 0;

    cJSON_ArrayForEach(term, x->terms)
    {
        int demands = 0;

        if (select_term_empty(x, term))
            continue;
        any = 1;
        cJSON_ArrayForEach(expr, podjson_arr(x->r, term, "matchExpressions"))
        {
            const char *k = podjson_str(x->r, expr, "key");

            demands |= k && strcmp(k, key) == 0 && select_positive(x->r, expr);
        }
        if (!demands)
            return 0;
    }
    return any;
}

/* Whether the tie is the pod's own choice of several node types: two of
 * the profiles found set one label to different values, and the pod's
 * required affinity demands that label while allowing both values (In
 * [H100, A100], Exists). Then the pod already limits itself, to several
 * types; the GPU count or the default choosing one of them, and pinning
 * the pod to it, would override what its author wrote. A tie on a label
 * they share (node-pool: train) says nothing about the type: the later
 * rules choose as for a pod without constraints. (nodeSelector sets one
 * value, so it never allows two; the Node of spec.nodeName is never
 * pinned.) */
static int select_tie_spans_types(struct select_ctx *x, const struct select_found *f)
{
    /* The Nodes its hostnames name are of several types: one lacks the
     * labels of a profile that another has. */
    for (size_t i = 0; x->known && i < f->n; i++)
        for (size_t j = 0; j < x->n_nodes; j++)
            if (!select_node_has(x->nodes[j], f->p[i]))
                return 1;
    for (size_t i = 0; i < f->n; i++)
        for (size_t j = i + 1; j < f->n; j++)
            for (size_t k = 0; k < f->p[i]->node_labels.n; k++) {
                const struct profiles_kv *kv = &f->p[i]->node_labels.v[k];
                const char *other = profiles_kv_get(&f->p[j]->node_labels, kv->name);

                if (other && strcmp(other, kv->value) != 0 && select_terms_require(x, kv->name))
                    return 1;
            }
    return 0;
}

/* Rule 2: the one profile with nodeLabels the constraints fit, if named;
 * *spans when its tie is the pod's choice of several node types. */
static const struct profiles_entry *select_by_labels(struct select_ctx *x,
                                                     const struct profiles *ps,
                                                     struct select_tie *tie, int *spans)
{
    struct select_found f = {.n = 0};
    int named_any = 0;

    for (size_t i = 0; i < ps->n; i++) {
        int names;

        if (ps->p[i].node_labels.n == 0 || !select_fits(x, &ps->p[i], &names))
            continue;
        select_found_add(x, &f, &ps->p[i], names);
    }
    for (size_t i = 0; i < f.n; i++)
        named_any |= f.named[i];
    /* One the pod does not name can only change the outcome when another
     * is named: a tie, or it covers that one. */
    x->ns_unknown |= f.unknown && (f.unknown_named || named_any);
    select_prefer_limited(&f, tie);
    if (tie->n == 1 && f.named[0])
        return f.p[0];
    if (tie->n < 2 || !named_any)
        tie->n = 0; /* constraints about other labels, or none: no tie to report */
    else
        *spans = select_tie_spans_types(x, &f);
    return NULL;
}

/* Rule 3: the one profile not excluded whose match.gpus has the count. */
static const struct profiles_entry *select_by_gpus(struct select_ctx *x, const struct profiles *ps,
                                                   long long gpus, struct select_tie *tie)
{
    struct select_found f = {.n = 0};

    for (size_t i = 0; i < ps->n && gpus > 0; i++)
        if (profiles_matches_gpus(&ps->p[i], gpus) && !select_excluded(x, &ps->p[i]))
            select_found_add(x, &f, &ps->p[i], 0);
    x->ns_unknown |= f.unknown;
    select_prefer_limited(&f, tie);
    return tie->n == 1 ? tie->p[0] : NULL;
}

/* Rule 4: the default of the pod's namespace or job (the first such in
 * file order), else the cluster-wide one; either unless the constraints
 * exclude it. */
static const struct profiles_entry *select_default(struct select_ctx *x, const struct profiles *ps)
{
    const struct profiles_entry *cluster = NULL;

    for (size_t i = 0; i < ps->n; i++) {
        const struct profiles_entry *p = &ps->p[i];
        int member;

        if (!p->is_default || select_excluded(x, p))
            continue;
        if (!profiles_limited(p)) {
            cluster = p;
            continue;
        }
        if ((member = select_member(x, p)) < 0)
            x->ns_unknown = 1;
        if (member > 0)
            return p;
    }
    return cluster;
}

static const cJSON *select_required_terms(struct podjson *r, const cJSON *spec)
{
    const cJSON *aff = podjson_obj(r, podjson_obj(r, spec, "affinity"), "nodeAffinity");
    const cJSON *req = podjson_obj(r, aff, "requiredDuringSchedulingIgnoredDuringExecution");

    return podjson_arr(r, req, "nodeSelectorTerms");
}

/* The labels of spec.nodeName's Node (the caller frees them), or NULL. */
static cJSON *select_node_labels(struct podjson *r, const cJSON *spec,
                                 const struct select_hooks *hooks, int *failed)
{
    const char *node = podjson_str(r, spec, "nodeName");
    cJSON *labels = NULL;

    if (!node || !*node || !hooks || !hooks->node_labels)
        return NULL;
    if (hooks->node_labels(hooks->ctx, node, &labels)) {
        *failed = 1;
        return NULL;
    }
    return labels;
}

/* ---- the Nodes a hostname constraint names (select.h, struct select_hosts) ---- */

#define SELECT_HOSTNAME "kubernetes.io/hostname"

/* The values of the term's first "kubernetes.io/hostname In", or NULL. */
static const cJSON *select_term_hostnames(struct select_ctx *x, const cJSON *term)
{
    const cJSON *expr;

    cJSON_ArrayForEach(expr, podjson_arr(x->r, term, "matchExpressions"))
    {
        const char *key = podjson_str(x->r, expr, "key");
        const char *op = podjson_str(x->r, expr, "operator");

        if (key && op && strcmp(key, SELECT_HOSTNAME) == 0 && strcmp(op, "In") == 0)
            return podjson_arr(x->r, expr, "values");
    }
    return NULL;
}

/* Adds name once: ERR_OK, or ERR_TOO_BIG when SELECT_HOSTS_MAX are there
 * already. */
static int select_hosts_add(struct select_hosts *h, const char *name)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->name[i], name) == 0)
            return ERR_OK;
    if (h->n >= SELECT_HOSTS_MAX)
        return ERR_TOO_BIG;
    h->name[h->n++] = name;
    return ERR_OK;
}

/* The names of the hostname constraint into h: the nodeSelector's one,
 * else the In values of the required terms that can match a node. 0 when
 * there is none; unknown when some term names none (the pod may land
 * elsewhere too) or there are too many. */
static int select_hosts_names(struct select_ctx *x, struct select_hosts *h)
{
    const char *one = podjson_str(x->r, x->selector, SELECT_HOSTNAME);
    const cJSON *term, *values, *v;
    int naming = 0, silent = 0, over = 0;

    if (one)
        return select_hosts_add(h, one), 1;
    cJSON_ArrayForEach(term, x->terms)
    {
        if (select_term_empty(x, term))
            continue;
        if (!(values = select_term_hostnames(x, term))) {
            silent = 1;
            continue;
        }
        naming = 1;
        cJSON_ArrayForEach(v, values)
        {
            over |= cJSON_IsString(v) && select_hosts_add(h, v->valuestring);
        }
    }
    if (naming && (silent || over)) {
        h->state = SELECT_HOSTS_UNKNOWN;
        h->why = silent ? SELECT_HOSTS_SOME_TERMS : SELECT_HOSTS_TOO_MANY;
    }
    return naming;
}

/* Whether a Node with these labels meets the pod's nodeSelector and one of
 * its required terms (matchFields are not judged: they could hold). */
static int select_node_admits(struct select_ctx *x, const cJSON *labels)
{
    const cJSON *it, *term, *expr;
    int any = cJSON_GetArraySize(x->terms) == 0;

    cJSON_ArrayForEach(it, x->selector)
    {
        const char *v = cJSON_GetStringValue(podjson_member(labels, it->string));

        if (!cJSON_IsString(it) || !v || strcmp(v, it->valuestring) != 0)
            return 0;
    }
    cJSON_ArrayForEach(term, x->terms)
    {
        int holds = !select_term_empty(x, term);

        cJSON_ArrayForEach(expr, podjson_arr(x->r, term, "matchExpressions"))
        {
            const char *key = podjson_str(x->r, expr, "key");

            holds &= key && select_requirement(x->r, expr,
                                               cJSON_GetStringValue(podjson_member(labels, key)));
        }
        any |= holds;
    }
    return any;
}

/* Why name's Node cannot be told, reading its labels into *labels (the
 * caller frees them); -1 when it can. */
static int select_host_read(const struct select_hooks *hooks, const char *name, cJSON **labels)
{
    const char *have;

    if (!hooks || !hooks->node_labels)
        return SELECT_HOSTS_NO_API;
    if (hooks->node_labels(hooks->ctx, name, labels) || !*labels) {
        *labels = NULL;
        return SELECT_HOSTS_UNREAD;
    }
    have = cJSON_GetStringValue(podjson_member(*labels, SELECT_HOSTNAME));
    return have && strcmp(have, name) == 0 ? -1 : SELECT_HOSTS_OTHER_HOSTNAME;
}

/* Reads the named Nodes (labels[i] for name[i], the caller frees them),
 * stopping at the first that cannot be told; when all can, those the pod's
 * constraints admit are its Nodes in x. */
static void select_hosts_read(struct select_ctx *x, const struct select_hooks *hooks,
                              struct select_hosts *h, cJSON **labels)
{
    for (size_t i = 0; i < h->n; i++) {
        int why = select_host_read(hooks, h->name[i], &labels[i]);

        if (why >= 0) {
            h->state = SELECT_HOSTS_UNKNOWN;
            h->why = (enum select_hosts_why)why;
            h->unknown = why == SELECT_HOSTS_NO_API ? NULL : h->name[i];
            return;
        }
    }
    h->state = SELECT_HOSTS_KNOWN;
    x->known = 1;
    for (size_t i = 0; i < h->n; i++)
        if (select_node_admits(x, labels[i])) {
            h->kept |= 1u << i;
            x->nodes[x->n_nodes++] = labels[i];
        }
}

/* Rules 2 to 4, with the constraints read into x. A rule that met a
 * profile whose namespaces could not be told decides nothing, and neither
 * do the rules after it: that profile could have changed the outcome. */
static void select_by_constraints(struct select_ctx *x, const struct profiles *ps,
                                  struct select_result *out)
{
    out->rule = x->known ? SELECT_BY_NODE : SELECT_BY_NODE_LABELS;
    out->profile = select_by_labels(x, ps, &out->tie_labels, &out->tie_spans_types);
    if (out->profile || x->ns_unknown || out->tie_spans_types)
        goto done;
    out->rule = SELECT_BY_GPUS;
    if ((out->profile = select_by_gpus(x, ps, out->gpus, &out->tie_gpus)) || x->ns_unknown)
        goto done;
    out->rule = SELECT_BY_DEFAULT;
    out->profile = select_default(x, ps);
done:
    if (x->ns_unknown) {
        out->profile = NULL;
        out->namespace_lookup_failed = 1;
    }
    if (!out->profile)
        out->rule = SELECT_NONE;
}

/* Rule 1: the profile the annotation names, if it applies here. */
static void select_by_annotation(struct select_ctx *x, const struct profiles *ps, const char *named,
                                 struct select_result *out)
{
    int member;

    out->profile = profiles_find(ps, named);
    out->rule = out->profile ? SELECT_BY_ANNOTATION : SELECT_UNKNOWN_NAME;
    out->unknown_name = named;
    if (!out->profile || (member = select_member(x, out->profile)) == 1)
        return;
    out->other_namespaces = member == 0 ? out->profile : NULL;
    out->namespace_lookup_failed = member < 0;
    out->rule = member < 0 ? SELECT_NONE
                : !profiles_for_job(out->profile, x->job_kind, x->job_runtime)
                    ? SELECT_OTHER_JOBS
                    : SELECT_OTHER_NAMESPACES;
    out->profile = NULL;
}

void select_profile(struct podjson *r, const cJSON *metadata, const cJSON *spec, const char *ns,
                    const struct profiles *ps, const struct select_hooks *hooks,
                    struct select_result *out)
{
    select_profile_job(r, metadata, spec, ns, NULL, ps, hooks, out);
}

void select_profile_job(struct podjson *r, const cJSON *metadata, const cJSON *spec, const char *ns,
                        const struct select_job *job, const struct profiles *ps,
                        const struct select_hooks *hooks, struct select_result *out)
{
    const char *named =
        podjson_str(r, podjson_obj(r, metadata, "annotations"), SELECT_ANNOTATION_PROFILE);
    struct select_ctx x = {.r = r,
                           .ns = ns,
                           .job_kind = job ? job->kind : 0,
                           .job_runtime = job ? job->runtime : NULL,
                           .hooks = hooks};
    const char *bound = podjson_str(r, spec, "nodeName");
    cJSON *node, *hosts[SELECT_HOSTS_MAX] = {NULL};

    memset(out, 0, sizeof(*out));
    out->gpus = target_pod_gpus(r, spec, ps);
    if (named) {
        select_by_annotation(&x, ps, named, out);
        cJSON_Delete(x.ns_labels);
        return;
    }
    x.selector = podjson_obj(r, spec, "nodeSelector");
    x.terms = select_required_terms(r, spec);
    if ((node = select_node_labels(r, spec, hooks, &out->node_lookup_failed))) {
        x.nodes[x.n_nodes++] = node;
        x.known = 1;
    }
    /* A bound pod's Node decides, or is unknown: its hostnames add nothing. */
    if ((!bound || !*bound) && select_hosts_names(&x, &out->hosts) &&
        out->hosts.state != SELECT_HOSTS_UNKNOWN)
        select_hosts_read(&x, hooks, &out->hosts, hosts);
    select_by_constraints(&x, ps, out);
    cJSON_Delete(node);
    for (size_t i = 0; i < SELECT_HOSTS_MAX; i++)
        cJSON_Delete(hosts[i]);
    cJSON_Delete(x.ns_labels);
}

const char *select_rule_name(enum select_rule rule)
{
    static const char *const names[] = {"annotation",   "node-labels",      "node",
                                        "gpus",         "default",          "none",
                                        "unknown-name", "other-namespaces", "other-jobs"};

    return rule <= SELECT_OTHER_JOBS ? names[rule] : "none";
}

/* ---- select_fit_profile (select.h) ---- */

/* The first requirement of term on one of p's keys that p's value fails. */
static const cJSON *select_failing_expr(struct select_ctx *x, const cJSON *term,
                                        const struct profiles_entry *p)
{
    const cJSON *expr;

    cJSON_ArrayForEach(expr, podjson_arr(x->r, term, "matchExpressions"))
    {
        const char *key = podjson_str(x->r, expr, "key");
        const char *value = key ? profiles_kv_get(&p->node_labels, key) : NULL;

        if (value && !select_requirement(x->r, expr, value))
            return expr;
    }
    return NULL;
}

/* Why select_fits() said no, checked in its order. */
static void select_clash_of(struct select_ctx *x, const struct profiles_entry *p,
                            struct select_fit *out)
{
    const cJSON *term;
    int idx = 0;

    if (x->known && x->n_nodes != 1 && !select_nodes_have(x, p)) {
        *out = (struct select_fit){.clash = SELECT_CLASH_NODE};
        return;
    }
    for (size_t i = 0; x->known && x->n_nodes == 1 && i < p->node_labels.n; i++) {
        const struct profiles_kv *kv = &p->node_labels.v[i];
        const char *v = cJSON_GetStringValue(podjson_member(x->nodes[0], kv->name));

        if (!v || strcmp(v, kv->value) != 0) {
            *out = (struct select_fit){
                .clash = SELECT_CLASH_NODE, .key = kv->name, .want = kv->value, .have = v};
            return;
        }
    }
    for (size_t i = 0; i < p->node_labels.n; i++) {
        const struct profiles_kv *kv = &p->node_labels.v[i];
        const char *v = podjson_str(x->r, x->selector, kv->name);

        if (v && strcmp(v, kv->value) != 0) {
            *out = (struct select_fit){
                .clash = SELECT_CLASH_SELECTOR, .key = kv->name, .want = kv->value, .have = v};
            return;
        }
    }
    out->clash = SELECT_CLASH_AFFINITY;
    cJSON_ArrayForEach(term, x->terms)
    {
        if (!select_term_empty(x, term) && (out->expr = select_failing_expr(x, term, p))) {
            out->key = podjson_str(x->r, out->expr, "key");
            out->want = profiles_kv_get(&p->node_labels, out->key);
            out->term = idx;
            return;
        }
        idx++;
    }
}

void select_fit_profile(struct podjson *r, const cJSON *spec, const cJSON *const *nodes, size_t n,
                        int known, const struct profiles_entry *p, struct select_fit *out)
{
    struct select_ctx x = {.r = r, .known = known};

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; known && i < n && i < SELECT_HOSTS_MAX; i++)
        x.nodes[x.n_nodes++] = nodes[i];
    x.selector = podjson_obj(r, spec, "nodeSelector");
    x.terms = select_required_terms(r, spec);
    if (p->node_labels.n == 0) {
        out->fits = 1;
        return;
    }
    if (!(out->fits = select_fits(&x, p, &out->names)))
        select_clash_of(&x, p, out);
}
