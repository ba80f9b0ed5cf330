#include "report.h"

#include "decimal.h"
#include "jsonw.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <string.h>

/* How deep a value is written out; deeper parts are "...". The webhook's
 * own values are three levels deep at most. */
#define REPORT_DEPTH_MAX 8
/* Room for the closing of the document and the "... N more" entry. */
#define REPORT_TAIL_ROOM 64

enum report_mode report_mode_parse(const char *s)
{
    if (s && strcmp(s, "report") == 0)
        return REPORT_MODE_REPORT;
    if (s && strcmp(s, "enforce") == 0)
        return REPORT_MODE_ENFORCE;
    return REPORT_MODE_UNSET;
}

const char *report_mode_name(enum report_mode mode)
{
    return mode == REPORT_MODE_REPORT ? "report" : "enforce";
}

const char *report_by_name(enum report_by by)
{
    static const char *const names[] = {"flag", "profile", "namespace-label"};

    return by <= REPORT_BY_NAMESPACE ? names[by] : "flag";
}

void report_decide(enum report_mode flag, enum report_mode profile, enum report_lookup lookup,
                   const char *label, struct report_decision *out)
{
    enum report_mode from_label = REPORT_MODE_UNSET;

    memset(out, 0, sizeof(*out));
    if (lookup == REPORT_LOOKUP_OK && label) {
        from_label = report_mode_parse(label);
        out->label_invalid = from_label == REPORT_MODE_UNSET;
    }
    out->lookup_failed = lookup == REPORT_LOOKUP_FAILED;
    if (from_label != REPORT_MODE_UNSET) {
        out->mode = from_label;
        out->by = REPORT_BY_NAMESPACE;
    } else if (profile != REPORT_MODE_UNSET) {
        out->mode = profile;
        out->by = REPORT_BY_PROFILE;
    } else {
        out->mode = flag == REPORT_MODE_REPORT ? REPORT_MODE_REPORT : REPORT_MODE_ENFORCE;
        out->by = REPORT_BY_FLAG;
    }
}

/* A bounded text: what does not fit is dropped, and cut says so. */
struct report_text {
    char buf[2 * REPORT_OP_MAX];
    size_t len;
};

static void report_put(struct report_text *t, const char *s)
{
    size_t n = strlen(s), room = sizeof(t->buf) - 1 - t->len;

    if (n > room)
        n = utf8_cut(s, room);
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

/* A value the way a person reads it: a string as it is, an env entry as
 * NAME=VALUE, the rest as JSON without quotes ({medium:Memory}). */
static void report_compact(struct report_text *t, const cJSON *v, int depth)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(v, "value");
    const cJSON *it;
    char num[DECIMAL_MAX + 1];

    if (depth > REPORT_DEPTH_MAX) {
        report_put(t, "...");
    } else if (cJSON_IsString(v)) {
        report_put(t, v->valuestring);
    } else if (cJSON_IsObject(v) && cJSON_GetArraySize(v) == 2 && cJSON_IsString(name) &&
               cJSON_IsString(value)) {
        report_put(t, name->valuestring);
        report_put(t, "=");
        report_put(t, value->valuestring);
    } else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        report_put(t, cJSON_IsObject(v) ? "{" : "[");
        cJSON_ArrayForEach(it, v)
        {
            if (it != v->child)
                report_put(t, ",");
            if (cJSON_IsObject(v)) {
                report_put(t, it->string ? it->string : "");
                report_put(t, ":");
            }
            report_compact(t, it, depth + 1);
        }
        report_put(t, cJSON_IsObject(v) ? "}" : "]");
    } else if (cJSON_IsNumber(v) && v->valuedouble > -1e15 && v->valuedouble < 1e15) {
        num[decimal_ll(num, (long long)v->valuedouble)] = '\0';
        report_put(t, num);
    } else if (cJSON_IsNumber(v)) {
        report_put(t, "(number)");
    } else {
        report_put(t, cJSON_IsTrue(v) ? "true" : cJSON_IsFalse(v) ? "false" : "null");
    }
}

/* "op path value", the path relative to the pod, the value cut to
 * REPORT_VALUE_CUT and the whole to REPORT_OP_MAX bytes. */
static void report_op_text(const cJSON *op, const cJSON *value, const char *base, char *out,
                           size_t outlen)
{
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "op"));
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "path"));
    size_t base_len = strlen(base);
    struct report_text all = {.len = 0}, v = {.len = 0};
    char shown[REPORT_VALUE_CUT + 1];

    if (path && base_len && strncmp(path, base, base_len) == 0)
        path += base_len;
    report_put(&all, name ? name : "?");
    report_put(&all, " ");
    report_put(&all, path ? path : "?");
    if (value) {
        report_compact(&v, value, 0);
        utf8_shorten(v.buf, REPORT_VALUE_CUT, shown, sizeof(shown));
        report_put(&all, " ");
        report_put(&all, shown);
    }
    utf8_shorten(all.buf, outlen - 1, out, outlen);
}

static void report_member(struct jsonw *w, const char *key, const char *value)
{
    if (!value)
        return;
    jsonw_raw(w, ",");
    jsonw_key(w, key);
    jsonw_str(w, value);
}

/* Appends s as the next item of a list being written, unless out would
 * then be longer than limit: then out is as it was, and 0. */
static int report_item(struct jsonw *w, struct dynbuf *out, const char *s, int first, size_t limit)
{
    size_t before = dynbuf_len(out);

    if (!first)
        jsonw_raw(w, ",");
    jsonw_str(w, s);
    if (jsonw_error(w) == ERR_NOMEM)
        return 0;
    if (jsonw_error(w) || dynbuf_len(out) > limit) {
        dynbuf_truncate(out, before);
        w->err = ERR_OK; /* only out's cap was reached: what is written stands */
        return 0;
    }
    return 1;
}

/* "... N more": what a list left out. */
static void report_more(struct jsonw *w, size_t n, size_t total)
{
    char more[DECIMAL_MAX + 16] = "... ";

    if (n == total)
        return;
    more[4 + decimal_ll(more + 4, (long long)(total - n))] = '\0';
    memcpy(more + strlen(more), " more", sizeof(" more"));
    if (n)
        jsonw_raw(w, ",");
    jsonw_str(w, more);
}

static void report_warnings(struct jsonw *w, struct dynbuf *out, const struct report_input *in)
{
    size_t n = 0;

    jsonw_raw(w, ",\"warnings\":[");
    while (n < in->n_warnings && report_item(w, out, in->warnings[n], n == 0, REPORT_VALUE_MAX / 2))
        n++;
    report_more(w, n, in->n_warnings);
    jsonw_raw(w, "]");
}

/* One entry: for an operation that makes a list (env, volumes), one per
 * item, so that each variable shows whole. 0 once the list is full. */
static int report_op(struct jsonw *w, struct dynbuf *out, const cJSON *op, const char *base,
                     size_t *n)
{
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(op, "value"), *it;
    char text[REPORT_OP_MAX + 1];

    if (!cJSON_IsArray(value) || cJSON_GetArraySize(value) == 0) {
        report_op_text(op, value, base, text, sizeof(text));
        if (!report_item(w, out, text, *n == 0, REPORT_VALUE_MAX - REPORT_TAIL_ROOM))
            return 0;
        ++*n;
        return 1;
    }
    cJSON_ArrayForEach(it, value)
    {
        report_op_text(op, it, base, text, sizeof(text));
        if (!report_item(w, out, text, *n == 0, REPORT_VALUE_MAX - REPORT_TAIL_ROOM))
            return 0;
        ++*n;
    }
    return 1;
}

/* How many entries the operations make (report_op). */
static size_t report_entries(const cJSON *ops)
{
    const cJSON *op, *value;
    size_t total = 0;

    cJSON_ArrayForEach(op, ops)
    {
        value = cJSON_GetObjectItemCaseSensitive(op, "value");
        total += cJSON_IsArray(value) && cJSON_GetArraySize(value) > 0
                     ? (size_t)cJSON_GetArraySize(value)
                     : 1;
    }
    return total;
}

/* The operations while they fit, then "... N more". */
static void report_ops(struct jsonw *w, struct dynbuf *out, const cJSON *ops, const char *base)
{
    const cJSON *op;
    size_t n = 0;

    jsonw_raw(w, ",\"additions\":[");
    cJSON_ArrayForEach(op, ops)
    {
        if (!report_op(w, out, op, base ? base : "", &n))
            break;
    }
    report_more(w, n, report_entries(ops));
    jsonw_raw(w, "]");
}

int report_value(const struct report_input *in, struct dynbuf *out)
{
    struct jsonw w;

    dynbuf_reset(out);
    jsonw_init(&w, out);
    jsonw_raw(&w, "{\"result\":");
    jsonw_str(&w, in->result ? in->result : "reported");
    report_member(&w, "reason", in->reason);
    report_member(&w, "by", in->by);
    report_member(&w, "profile", in->profile);
    report_member(&w, "selectedBy", in->profile ? in->selected_by : NULL);
    if (in->n_warnings)
        report_warnings(&w, out, in);
    if (cJSON_GetArraySize(in->ops) > 0)
        report_ops(&w, out, in->ops, in->base);
    jsonw_raw(&w, "}");
    return jsonw_error(&w);
}
