#include "select.h"

#include "decimal.h"
#include "podjson.h"
#include "profiles.h"
#include "target.h"

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

/* What the pod says about its node, read once per admission. */
struct select_ctx {
    struct podjson *r;
    const cJSON *selector; /* spec.nodeSelector */
    const cJSON *terms;    /* required nodeSelectorTerms (ORed) */
    const cJSON *node;     /* the labels of spec.nodeName's Node; NULL: unknown */
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

/* Whether the pod's constraints are consistent with profile p, which has
 * nodeLabels, and (*names) whether they name it. */
static int select_fits(struct select_ctx *x, const struct profiles_entry *p, int *names)
{
    int affinity_names;

    *names = 0;
    if (x->node) {
        if (!select_node_has(x->node, p))
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

/* Rule 2: the one profile with nodeLabels the constraints fit, if named. */
static const struct profiles_entry *
select_by_labels(struct select_ctx *x, const struct profiles *ps, struct select_tie *tie)
{
    const struct profiles_entry *only = NULL;
    int named_any = 0, only_named = 0;

    for (size_t i = 0; i < ps->n; i++) {
        int names;

        if (ps->p[i].node_labels.n == 0 || !select_fits(x, &ps->p[i], &names))
            continue;
        select_tie_add(tie, &ps->p[i]);
        only = &ps->p[i];
        only_named = names;
        named_any |= names;
    }
    if (tie->n == 1 && only_named)
        return only;
    if (tie->n < 2 || !named_any)
        tie->n = 0; /* constraints about other labels, or none: no tie to report */
    return NULL;
}

/* Rule 3: the one profile not excluded whose match.gpus has the count. */
static const struct profiles_entry *select_by_gpus(struct select_ctx *x, const struct profiles *ps,
                                                   long long gpus, struct select_tie *tie)
{
    for (size_t i = 0; i < ps->n && gpus > 0; i++)
        if (profiles_matches_gpus(&ps->p[i], gpus) && !select_excluded(x, &ps->p[i]))
            select_tie_add(tie, &ps->p[i]);
    return tie->n == 1 ? tie->p[0] : NULL;
}

static const struct profiles_entry *select_default(struct select_ctx *x, const struct profiles *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        if (ps->p[i].is_default)
            return select_excluded(x, &ps->p[i]) ? NULL : &ps->p[i];
    return NULL;
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

/* Rules 2 to 4, with the constraints read into x. */
static void select_by_constraints(struct select_ctx *x, const struct profiles *ps,
                                  struct select_result *out)
{
    out->rule = x->node ? SELECT_BY_NODE : SELECT_BY_NODE_LABELS;
    if ((out->profile = select_by_labels(x, ps, &out->tie_labels)))
        return;
    out->rule = SELECT_BY_GPUS;
    if ((out->profile = select_by_gpus(x, ps, out->gpus, &out->tie_gpus)))
        return;
    out->rule = SELECT_BY_DEFAULT;
    if (!(out->profile = select_default(x, ps)))
        out->rule = SELECT_NONE;
}

void select_profile(struct podjson *r, const cJSON *metadata, const cJSON *spec,
                    const struct profiles *ps, const struct select_hooks *hooks,
                    struct select_result *out)
{
    const char *named =
        podjson_str(r, podjson_obj(r, metadata, "annotations"), SELECT_ANNOTATION_PROFILE);
    struct select_ctx x = {.r = r};
    cJSON *node;

    memset(out, 0, sizeof(*out));
    out->gpus = target_pod_gpus(r, spec, ps);
    if (named) {
        out->profile = profiles_find(ps, named);
        out->rule = out->profile ? SELECT_BY_ANNOTATION : SELECT_UNKNOWN_NAME;
        out->unknown_name = named;
        return;
    }
    x.selector = podjson_obj(r, spec, "nodeSelector");
    x.terms = select_required_terms(r, spec);
    x.node = node = select_node_labels(r, spec, hooks, &out->node_lookup_failed);
    select_by_constraints(&x, ps, out);
    cJSON_Delete(node);
}

const char *select_rule_name(enum select_rule rule)
{
    static const char *const names[] = {"annotation", "node-labels", "node",        "gpus",
                                        "default",    "none",        "unknown-name"};

    return rule <= SELECT_UNKNOWN_NAME ? names[rule] : "none";
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

    for (size_t i = 0; x->node && i < p->node_labels.n; i++) {
        const struct profiles_kv *kv = &p->node_labels.v[i];
        const char *v = cJSON_GetStringValue(podjson_member(x->node, kv->name));

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

void select_fit_profile(struct podjson *r, const cJSON *spec, const cJSON *node_labels,
                        const struct profiles_entry *p, struct select_fit *out)
{
    struct select_ctx x = {.r = r, .node = node_labels};

    memset(out, 0, sizeof(*out));
    x.selector = podjson_obj(r, spec, "nodeSelector");
    x.terms = select_required_terms(r, spec);
    if (p->node_labels.n == 0) {
        out->fits = 1;
        return;
    }
    if (!(out->fits = select_fits(&x, p, &out->names)))
        select_clash_of(&x, p, out);
}
