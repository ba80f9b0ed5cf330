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

/* A term is consistent with a profile when every requirement on a key the
 * profile names holds for the profile's value; *mentions tells whether the
 * term said anything about the profile's keys at all. */
static int select_term(struct podjson *r, const cJSON *term, const struct profile *p, int *mentions)
{
    const cJSON *expr;

    *mentions = 0;
    cJSON_ArrayForEach(expr, podjson_arr(r, term, "matchExpressions"))
    {
        const char *key = podjson_str(r, expr, "key");
        const char *value = key ? profiles_kv_get(&p->node_labels, key) : NULL;

        if (!value)
            continue;
        *mentions = 1;
        if (!select_requirement(r, expr, value))
            return 0;
    }
    return 1;
}

static const cJSON *select_required_terms(struct podjson *r, const cJSON *spec)
{
    const cJSON *aff = podjson_obj(r, podjson_obj(r, spec, "affinity"), "nodeAffinity");
    const cJSON *req = podjson_obj(r, aff, "requiredDuringSchedulingIgnoredDuringExecution");

    return podjson_arr(r, req, "nodeSelectorTerms");
}

/* The pod demands the profile's node type when its nodeSelector and required
 * affinity name at least one of the profile's labels and contradict none. */
static int select_demands(struct podjson *r, const cJSON *spec, const struct profile *p)
{
    const cJSON *selector = podjson_obj(r, spec, "nodeSelector");
    const cJSON *terms = select_required_terms(r, spec);
    const cJSON *term;
    int mentioned = 0, any_term_ok = 0;

    for (size_t i = 0; i < p->node_labels.n; i++) {
        const char *want = podjson_str(r, selector, p->node_labels.v[i].name);

        if (want && strcmp(want, p->node_labels.v[i].value) != 0)
            return 0;
        mentioned |= want != NULL;
    }
    cJSON_ArrayForEach(term, terms)
    {
        int mentions;

        if (select_term(r, term, p, &mentions)) {
            any_term_ok = 1;
            mentioned |= mentions;
        }
    }
    return mentioned && (any_term_ok || cJSON_GetArraySize(terms) == 0);
}

static int select_node_has(const cJSON *labels, const struct profile *p)
{
    for (size_t i = 0; i < p->node_labels.n; i++) {
        const char *v = cJSON_GetStringValue(podjson_member(labels, p->node_labels.v[i].name));

        if (!v || strcmp(v, p->node_labels.v[i].value) != 0)
            return 0;
    }
    return p->node_labels.n > 0;
}

static const struct profile *select_by_node(struct podjson *r, const cJSON *spec,
                                            const struct profiles *ps,
                                            const struct select_hooks *hooks, int *failed)
{
    const char *node = podjson_str(r, spec, "nodeName");
    const struct profile *found = NULL;
    cJSON *labels = NULL;

    if (!node || !*node)
        return NULL;
    if (!hooks || !hooks->node_labels || hooks->node_labels(hooks->ctx, node, &labels)) {
        *failed = hooks && hooks->node_labels;
        return NULL;
    }
    for (size_t i = 0; i < ps->n && !found; i++)
        if (select_node_has(labels, &ps->p[i]))
            found = &ps->p[i];
    cJSON_Delete(labels);
    return found;
}

static int select_from_labels(struct podjson *r, const cJSON *spec, const struct profiles *ps,
                              const struct select_hooks *hooks, struct select_result *out)
{
    for (size_t i = 0; i < ps->n; i++) {
        if (ps->p[i].node_labels.n && select_demands(r, spec, &ps->p[i])) {
            out->profile = &ps->p[i];
            out->rule = SELECT_BY_NODE_SELECTOR;
            return 1;
        }
    }
    out->profile = select_by_node(r, spec, ps, hooks, &out->node_lookup_failed);
    out->rule = SELECT_BY_NODE;
    return out->profile != NULL;
}

static const struct profile *select_by_gpus(const struct profiles *ps, long long gpus)
{
    for (size_t i = 0; i < ps->n && gpus > 0; i++)
        if (ps->p[i].match_gpus == gpus)
            return &ps->p[i];
    return NULL;
}

static const struct profile *select_default(const struct profiles *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        if (ps->p[i].is_default)
            return &ps->p[i];
    return NULL;
}

void select_profile(struct podjson *r, const cJSON *metadata, const cJSON *spec,
                    const struct profiles *ps, const struct select_hooks *hooks,
                    struct select_result *out)
{
    const char *named =
        podjson_str(r, podjson_obj(r, metadata, "annotations"), SELECT_ANNOTATION_PROFILE);

    memset(out, 0, sizeof(*out));
    out->gpus = target_pod_gpus(r, spec, ps);
    if (named) {
        out->profile = profiles_find(ps, named);
        out->rule = out->profile ? SELECT_BY_ANNOTATION : SELECT_UNKNOWN_NAME;
        out->unknown_name = named;
        return;
    }
    if (select_from_labels(r, spec, ps, hooks, out))
        return;
    out->rule = SELECT_BY_GPUS;
    out->profile = select_by_gpus(ps, out->gpus);
    if (out->profile)
        return;
    out->rule = SELECT_BY_DEFAULT;
    out->profile = select_default(ps);
    if (!out->profile)
        out->rule = SELECT_NONE;
}

const char *select_rule_name(enum select_rule rule)
{
    static const char *const names[] = {"annotation", "node-selector", "node",        "gpus",
                                        "default",    "none",          "unknown-name"};

    return names[rule];
}
