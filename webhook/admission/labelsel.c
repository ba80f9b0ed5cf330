#include "admission/labelsel.h"

#include "base/err.h"
#include "base/k8sname.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

/* One parse: the sink, the field named in problems, and what went wrong. */
struct labelsel_ctx {
    const struct labelsel_sink *sink;
    const char *field;
    int problems;
    int nomem;
};

static const char *const labelsel_op_names[] = {"In", "NotIn", "Exists", "DoesNotExist"};

/* A value on one key that no requirement names: every In fails on it,
 * every NotIn and Exists holds. Compared by address. */
static const char labelsel_other[] = "";

__attribute__((format(printf, 2, 3))) static void labelsel_problem(struct labelsel_ctx *c,
                                                                   const char *fmt, ...)
{
    va_list ap;

    c->problems++;
    va_start(ap, fmt);
    c->sink->problem(c->sink->ctx, fmt, ap);
    va_end(ap);
}

static void *labelsel_calloc(struct labelsel_ctx *c, size_t n, size_t size)
{
    void *p = c->sink->calloc(c->sink->ctx, n, size);

    if (!p)
        c->nomem = 1;
    return p;
}

/* Rejects members outside known (NULL-terminated): a typo in a selector
 * must not silently widen it. */
static void labelsel_check_keys(struct labelsel_ctx *c, const cJSON *obj, const char *field,
                                const char *const *known)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, obj) if (!labelsel_known_key(known, it->string))
        labelsel_problem(c, "%s: unknown field \"%s\"", field, it->string);
}

int labelsel_known_key(const char *const *known, const char *name)
{
    size_t i;

    for (i = 0; known[i] && strcmp(known[i], name) != 0; i++)
        ;
    return known[i] != NULL;
}

/* Adds one requirement with room for n_values values. */
static struct labelsel_req *labelsel_add(struct labelsel_ctx *c, struct labelsel *s,
                                         const char *key, enum labelsel_op op, size_t n_values)
{
    struct labelsel_req *r;

    if (s->n_reqs >= LABELSEL_MAX_REQS) {
        labelsel_problem(c, "%s: at most %d requirements in a selector", c->field,
                         LABELSEL_MAX_REQS);
        return NULL;
    }
    r = &s->reqs[s->n_reqs];
    r->values = labelsel_calloc(c, n_values, sizeof(*r->values));
    if (!r->values)
        return NULL;
    r->key = key;
    r->op = op;
    s->n_reqs++;
    return r;
}

static void labelsel_match_labels(struct labelsel_ctx *c, const cJSON *ml, struct labelsel *s)
{
    const cJSON *it;
    struct labelsel_req *r;

    if (!cJSON_IsObject(ml)) {
        labelsel_problem(c, "%s.matchLabels: must be an object of strings", c->field);
        return;
    }
    cJSON_ArrayForEach(it, ml)
    {
        if (!k8sname_qualified(it->string))
            labelsel_problem(c, "%s.matchLabels: \"%s\" is not a label key ([prefix/]name)",
                             c->field, it->string);
        else if (!cJSON_IsString(it) || !k8sname_label_value(it->valuestring))
            labelsel_problem(c,
                             "%s.matchLabels.%s: must be a label value (a string of at most "
                             "63 letters, digits, '-', '_' or '.')",
                             c->field, it->string);
        else if ((r = labelsel_add(c, s, it->string, LABELSEL_IN, 1)))
            r->values[r->n_values++] = it->valuestring;
    }
}

static int labelsel_op_parse(const char *str, enum labelsel_op *op)
{
    for (size_t i = 0; i < sizeof(labelsel_op_names) / sizeof(*labelsel_op_names); i++)
        if (strcmp(str, labelsel_op_names[i]) == 0)
            return *op = (enum labelsel_op)i, ERR_OK;
    return ERR_FAIL;
}

/* The values of one expression, each checked as a label value. */
static void labelsel_values(struct labelsel_ctx *c, const cJSON *values, const char *field,
                            struct labelsel_req *r)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, values)
    {
        if (!cJSON_IsString(v) || !k8sname_label_value(v->valuestring))
            labelsel_problem(c,
                             "%s.values: each must be a label value (a string of at most 63 "
                             "letters, digits, '-', '_' or '.')",
                             field);
        else
            r->values[r->n_values++] = v->valuestring;
    }
}

/* One matchExpressions entry, checked as Kubernetes checks a
 * LabelSelectorRequirement. */
static void labelsel_expression(struct labelsel_ctx *c, const cJSON *e, size_t i,
                                struct labelsel *s)
{
    static const char *const keys[] = {"key", "operator", "values", NULL};
    const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "key"));
    const char *ops = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "operator"));
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(e, "values");
    int n = cJSON_GetArraySize(values), positive;
    enum labelsel_op op;
    struct labelsel_req *r;
    char field[128];

    snprintf(field, sizeof(field), "%s.matchExpressions[%zu]", c->field, i);
    if (!cJSON_IsObject(e)) {
        labelsel_problem(c, "%s: must be an object {\"key\", \"operator\", \"values\"}", field);
        return;
    }
    labelsel_check_keys(c, e, field, keys);
    if (!key || !k8sname_qualified(key)) {
        labelsel_problem(c, "%s.key: must be a label key ([prefix/]name)", field);
        return;
    }
    if (!ops || labelsel_op_parse(ops, &op)) {
        labelsel_problem(
            c, "%s.operator: must be In, NotIn, Exists or DoesNotExist (Gt and Lt are for nodes)",
            field);
        return;
    }
    if (values && !cJSON_IsArray(values)) {
        labelsel_problem(c, "%s.values: must be an array of label values", field);
        return;
    }
    positive = op == LABELSEL_IN || op == LABELSEL_NOT_IN;
    if (positive && (n < 1 || n > LABELSEL_MAX_VALUES)) {
        labelsel_problem(c, "%s.values: %s takes 1 to %d values", field, ops, LABELSEL_MAX_VALUES);
        return;
    }
    if (!positive && n > 0) {
        labelsel_problem(c, "%s.values: must be empty with %s", field, ops);
        return;
    }
    if ((r = labelsel_add(c, s, key, op, (size_t)n)))
        labelsel_values(c, values, field, r);
}

int labelsel_parse(struct labelsel *out, const cJSON *sel, const char *field,
                   const struct labelsel_sink *sink)
{
    static const char *const keys[] = {"matchLabels", "matchExpressions", NULL};
    struct labelsel_ctx c = {.sink = sink, .field = field};
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(sel, "matchLabels");
    const cJSON *me = cJSON_GetObjectItemCaseSensitive(sel, "matchExpressions"), *e;
    size_t i = 0;

    *out = (struct labelsel){0};
    labelsel_check_keys(&c, sel, field, keys);
    out->reqs = labelsel_calloc(&c, LABELSEL_MAX_REQS, sizeof(*out->reqs));
    if (!out->reqs)
        return ERR_NOMEM;
    if (ml)
        labelsel_match_labels(&c, ml, out);
    if (me && !cJSON_IsArray(me))
        labelsel_problem(&c, "%s.matchExpressions: must be an array of requirements", field);
    else
        cJSON_ArrayForEach(e, me) labelsel_expression(&c, e, i++, out);
    if (c.nomem)
        return ERR_NOMEM;
    return c.problems ? ERR_FAIL : ERR_OK;
}

const char *labelsel_op_name(enum labelsel_op op)
{
    return (size_t)op < sizeof(labelsel_op_names) / sizeof(*labelsel_op_names)
               ? labelsel_op_names[op]
               : "?";
}

int labelsel_req_holds(const struct labelsel_req *r, const char *v)
{
    int listed = 0;

    for (size_t i = 0; v && v != labelsel_other && i < r->n_values; i++)
        listed |= strcmp(r->values[i], v) == 0;
    switch (r->op) {
    case LABELSEL_IN: return v && listed;
    case LABELSEL_NOT_IN: return !v || !listed;
    case LABELSEL_EXISTS: return v != NULL;
    case LABELSEL_DOES_NOT_EXIST: return v == NULL;
    }
    return 0;
}

int labelsel_matches(const struct labelsel *s, const cJSON *labels)
{
    for (size_t i = 0; i < s->n_reqs; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(labels, s->reqs[i].key);

        if (!labelsel_req_holds(&s->reqs[i], cJSON_IsString(v) ? v->valuestring : NULL))
            return 0;
    }
    return 1;
}

int labelsel_matches_all(const struct labelsel *s, const char *name_key)
{
    for (size_t i = 0; i < s->n_reqs; i++)
        if (s->reqs[i].op != LABELSEL_EXISTS || !name_key || strcmp(s->reqs[i].key, name_key) != 0)
            return 0;
    return 1;
}

/* Whether some state of label key (absent, or a value) satisfies every
 * requirement on it in a and b (b may be NULL). fixed: the value the key
 * must have, or NULL. A value no requirement names stands for all such. */
static int labelsel_key_ok(const struct labelsel *a, const struct labelsel *b, const char *key,
                           const char *fixed, const char *name_key)
{
    const struct labelsel *both[2] = {a, b};
    const char *cand[LABELSEL_MAX_VALUES + 2];
    const struct labelsel_req *in = NULL;
    size_t n = 0;

    for (size_t s = 0; s < 2 && !in; s++)
        for (size_t i = 0; both[s] && i < both[s]->n_reqs && !in; i++)
            if (both[s]->reqs[i].op == LABELSEL_IN && strcmp(both[s]->reqs[i].key, key) == 0)
                in = &both[s]->reqs[i];
    if (fixed) {
        cand[n++] = fixed;
    } else if (in) {
        for (size_t i = 0; i < in->n_values; i++)
            cand[n++] = in->values[i];
    } else {
        /* Every object has the name label: never absent. */
        if (!name_key || strcmp(key, name_key) != 0)
            cand[n++] = NULL;
        cand[n++] = labelsel_other;
    }
    for (size_t k = 0; k < n; k++) {
        int ok = 1;

        for (size_t s = 0; s < 2; s++)
            for (size_t i = 0; both[s] && i < both[s]->n_reqs; i++)
                if (strcmp(both[s]->reqs[i].key, key) == 0)
                    ok &= labelsel_req_holds(&both[s]->reqs[i], cand[k]);
        if (ok)
            return 1;
    }
    return 0;
}

int labelsel_satisfiable(const struct labelsel *a, const struct labelsel *b, const char *name_key,
                         const char *name)
{
    const struct labelsel *both[2] = {a, b};

    if (name && name_key && !labelsel_key_ok(a, b, name_key, name, name_key))
        return 0;
    for (size_t s = 0; s < 2; s++)
        for (size_t i = 0; both[s] && i < both[s]->n_reqs; i++) {
            const char *key = both[s]->reqs[i].key;
            int named = name && name_key && strcmp(key, name_key) == 0;

            if (!labelsel_key_ok(a, b, key, named ? name : NULL, name_key))
                return 0;
        }
    return 1;
}
