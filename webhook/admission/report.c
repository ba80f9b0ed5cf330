#include "admission/report.h"

#include "base/decimal.h"
#include "base/utf8.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How deep a value is written out; deeper parts are "...". The webhook's
 * own values are three levels deep at most. */
#define REPORT_DEPTH_MAX 8
/* Room for the last line, "... and N more". */
#define REPORT_TAIL_ROOM 40
#define REPORT_MORE_FMT  "... and %zu more"

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

/* One line being made: what does not fit is dropped, between characters. */
struct report_line {
    char buf[REPORT_LINE_MAX + 1];
    size_t len;
};

static void report_put(struct report_line *l, const char *s)
{
    size_t n = strlen(s), room = sizeof(l->buf) - 1 - l->len;

    if (n > room)
        n = utf8_cut(s, room);
    memcpy(l->buf + l->len, s, n);
    l->len += n;
    l->buf[l->len] = '\0';
}

static void report_puts(struct report_line *l, const char *a, const char *b, const char *c)
{
    report_put(l, a);
    report_put(l, b ? b : "?");
    report_put(l, c);
}

/* A value the way a person reads it: a string as it is, the rest as JSON
 * without quotes ({medium: Memory}). */
static void report_compact(struct report_line *l, const cJSON *v, int depth)
{
    const cJSON *it;
    char num[DECIMAL_MAX + 1];

    if (depth > REPORT_DEPTH_MAX) {
        report_put(l, "...");
    } else if (cJSON_IsString(v)) {
        report_put(l, v->valuestring);
    } else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        report_put(l, cJSON_IsObject(v) ? "{" : "[");
        cJSON_ArrayForEach(it, v)
        {
            if (it != v->child)
                report_put(l, ", ");
            if (cJSON_IsObject(v))
                report_puts(l, "", it->string, ": ");
            report_compact(l, it, depth + 1);
        }
        report_put(l, cJSON_IsObject(v) ? "}" : "]");
    } else if (cJSON_IsNumber(v) && v->valuedouble > -1e15 && v->valuedouble < 1e15) {
        num[decimal_ll(num, (long long)v->valuedouble)] = '\0';
        report_put(l, num);
    } else if (cJSON_IsNumber(v)) {
        report_put(l, "(number)");
    } else {
        report_put(l, cJSON_IsTrue(v) ? "true" : cJSON_IsFalse(v) ? "false" : "null");
    }
}

static const char *report_str(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* The lines being written: whole lines while they fit under limit (the
 * text's cap less the room kept for later sections and the tail), the rest
 * counted in left. */
struct report_out {
    struct dynbuf *out;
    size_t limit;
    size_t left;
    int nomem;
};

/* Ends the line, folded to one line of text, and adds it when it fits. */
static void report_emit(struct report_out *o, struct report_line *l)
{
    size_t at = dynbuf_len(o->out);

    /* A C1 character folds from two bytes into one. */
    l->len = strlen(utf8_fold(l->buf));
    if (o->left || at + (at ? 1 : 0) + l->len > o->limit) {
        o->left++;
        return;
    }
    if ((at && dynbuf_addc(o->out, '\n')) || dynbuf_add(o->out, l->buf, l->len)) {
        dynbuf_truncate(o->out, at);
        o->nomem = 1;
        o->left++;
    }
    l->len = 0;
    l->buf[0] = '\0';
}

/* ---- a patch operation in words ---- */

/* One JSON Pointer token unescaped (~1 is /, ~0 is ~) into out. */
static void report_token(const char *tok, size_t n, char *out, size_t outlen)
{
    size_t j = 0;

    for (size_t i = 0; i < n && j + 1 < outlen; i++) {
        if (tok[i] == '~' && i + 1 < n && (tok[i + 1] == '0' || tok[i + 1] == '1'))
            out[j++] = tok[++i] == '1' ? '/' : '~';
        else
            out[j++] = tok[i];
    }
    out[j] = '\0';
}

/* What the operation is about: the container it is in (a line's subject)
 * and the path below it; or the pod's spec. */
struct report_place {
    char subject[REPORT_LINE_MAX / 2]; /* `container "pytorch": ` or "" */
    const char *rest;                  /* "/env/-", "/schedulerName", ... */
    const cJSON *value;
    int replace;
};

static const char *report_container_name(const cJSON *pod, const char *list, long idx)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(spec, list), (int)idx);

    return report_str(c, "name");
}

/* /spec/containers/N/... and /spec/initContainers/N/...: the subject names
 * the container (from the pod; by its index when the pod does not say). */
static int report_in_container(const char *rel, const cJSON *pod, struct report_place *pl)
{
    static const char *const lists[] = {"containers", "initContainers"};

    if (strncmp(rel, "/spec/", 6) != 0)
        return 0;
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(lists[i]);
        const char *p, *name;
        char *end;
        long idx;

        if (strncmp(rel + 6, lists[i], n) != 0 || rel[6 + n] != '/')
            continue;
        p = rel + 6 + n + 1;
        if (*p < '0' || *p > '9')
            return 0;
        idx = strtol(p, &end, 10);
        if (*end != '/' && *end != '\0')
            return 0;
        name = report_container_name(pod, lists[i], idx);
        if (name)
            snprintf(pl->subject, sizeof(pl->subject), "%scontainer \"%s\": ", i ? "init " : "",
                     name);
        else
            snprintf(pl->subject, sizeof(pl->subject), "%scontainer %ld: ", i ? "init " : "", idx);
        pl->rest = end;
        return 1;
    }
    return 0;
}

/* Each item of a list the operation adds to (the value itself for "/-"). */
#define REPORT_EACH(it, pl, list)                                                                  \
    for (const cJSON *it = report_first(pl, list); it; it = report_next(pl, list, it))

static int report_is(const char *rest, const char *list)
{
    size_t n = strlen(list);

    return strncmp(rest, list, n) == 0 && (rest[n] == '\0' || strcmp(rest + n, "/-") == 0);
}

static const cJSON *report_first(const struct report_place *pl, const char *list)
{
    size_t n = strlen(list);

    return pl->rest[n] == '\0' && cJSON_IsArray(pl->value) ? pl->value->child : pl->value;
}

static const cJSON *report_next(const struct report_place *pl, const char *list, const cJSON *it)
{
    size_t n = strlen(list);

    return pl->rest[n] == '\0' && cJSON_IsArray(pl->value) ? it->next : NULL;
}

static void report_env(struct report_out *o, const struct report_place *pl)
{
    REPORT_EACH(e, pl, "/env")
    {
        struct report_line l = {.len = 0};
        const cJSON *from = cJSON_GetObjectItemCaseSensitive(e, "valueFrom");

        report_puts(&l, pl->subject, "env ", report_str(e, "name"));
        if (from) {
            report_put(&l, " from ");
            report_compact(&l, from, 0);
        } else {
            report_puts(&l, "=", report_str(e, "value"), "");
        }
        report_emit(o, &l);
    }
}

static void report_mounts(struct report_out *o, const struct report_place *pl)
{
    REPORT_EACH(v, pl, "/volumeMounts")
    {
        struct report_line l = {.len = 0};

        report_puts(&l, pl->subject, "mount ", report_str(v, "name"));
        report_puts(&l, " at ", report_str(v, "mountPath"), "");
        if (report_str(v, "subPath"))
            report_puts(&l, " (file ", report_str(v, "subPath"), ")");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "readOnly")))
            report_put(&l, ", read-only");
        report_emit(o, &l);
    }
}

/* Every string in v: the capabilities of a securityContext, whichever
 * level of it the operation makes. */
static void report_capabilities(struct report_out *o, const struct report_place *pl, const cJSON *v)
{
    const cJSON *it;

    if (cJSON_IsString(v)) {
        struct report_line l = {.len = 0};

        report_puts(&l, pl->subject, "capability ", v->valuestring);
        report_emit(o, &l);
    }
    cJSON_ArrayForEach(it, v)
    {
        report_capabilities(o, pl, it);
    }
}

static void report_resource_map(struct report_out *o, const struct report_place *pl,
                                const char *which, const cJSON *map)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, map)
    {
        struct report_line l = {.len = 0};

        report_puts(&l, pl->subject, which, " ");
        report_puts(&l, "", it->string, ": ");
        report_compact(&l, it, 0);
        report_emit(o, &l);
    }
}

/* "/resources", "/resources/limits", "/resources/limits/rdma~1hca". */
static void report_resources(struct report_out *o, const struct report_place *pl)
{
    const char *p = pl->rest + strlen("/resources");
    char key[REPORT_LINE_MAX / 2];

    if (*p == '\0') {
        report_resource_map(o, pl, "limits", cJSON_GetObjectItemCaseSensitive(pl->value, "limits"));
        report_resource_map(o, pl, "requests",
                            cJSON_GetObjectItemCaseSensitive(pl->value, "requests"));
        return;
    }
    for (int i = 0; i < 2; i++) {
        const char *which = i ? "/requests" : "/limits";
        size_t n = strlen(which);
        struct report_line l = {.len = 0};

        if (strncmp(p, which, n) != 0)
            continue;
        if (p[n] == '\0') {
            report_resource_map(o, pl, which + 1, pl->value);
            return;
        }
        report_token(p + n + 1, strlen(p + n + 1), key, sizeof(key));
        report_puts(&l, pl->subject, which + 1, " ");
        report_puts(&l, "", key, ": ");
        report_compact(&l, pl->value, 0);
        report_emit(o, &l);
        return;
    }
}

static void report_volumes(struct report_out *o, const struct report_place *pl)
{
    REPORT_EACH(v, pl, "/volumes")
    {
        struct report_line l = {.len = 0};
        const cJSON *it;

        report_puts(&l, "volume ", report_str(v, "name"), ":");
        cJSON_ArrayForEach(it, v)
        {
            if (it->string && strcmp(it->string, "name") == 0)
                continue;
            report_puts(&l, " ", it->string, " ");
            report_compact(&l, it, 0);
        }
        report_emit(o, &l);
    }
}

static void report_init_containers(struct report_out *o, const struct report_place *pl)
{
    REPORT_EACH(c, pl, "/initContainers")
    {
        struct report_line l = {.len = 0};

        report_puts(&l, "init container \"", report_str(c, "name"), "\": added, image ");
        report_put(&l, report_str(c, "image") ? report_str(c, "image") : "?");
        report_emit(o, &l);
    }
}

/* "/nodeSelector" (a map) or "/nodeSelector/KEY". */
static void report_node_selector(struct report_out *o, const struct report_place *pl)
{
    const char *p = pl->rest + strlen("/nodeSelector");
    char key[REPORT_LINE_MAX / 2];
    const cJSON *it;

    if (*p == '/') {
        struct report_line l = {.len = 0};

        report_token(p + 1, strlen(p + 1), key, sizeof(key));
        report_puts(&l, "nodeSelector ", key, "=");
        report_compact(&l, pl->value, 0);
        report_emit(o, &l);
        return;
    }
    cJSON_ArrayForEach(it, pl->value)
    {
        struct report_line l = {.len = 0};

        report_puts(&l, "nodeSelector ", it->string, "=");
        report_compact(&l, it, 0);
        report_emit(o, &l);
    }
}

/* Anything else: the field, its path in dots, and the value. */
static void report_other(struct report_out *o, const struct report_place *pl, const char *op)
{
    struct report_line l = {.len = 0};
    char tok[REPORT_LINE_MAX / 2];
    const char *p = pl->rest;

    report_put(&l, pl->subject);
    report_puts(&l, "", op, " ");
    while (*p == '/') {
        size_t n = strcspn(p + 1, "/");

        report_token(p + 1, n, tok, sizeof(tok));
        if (strcmp(tok, "-") != 0) {
            report_put(&l, p == pl->rest ? "" : ".");
            report_put(&l, tok);
        }
        p += 1 + n;
    }
    if (pl->value) {
        report_put(&l, " ");
        report_compact(&l, pl->value, 0);
    }
    report_emit(o, &l);
}

/* One annotation: a value of several lines (rdma-webhook.io/nccl-conf's, a
 * file) by their count, for the report's one line per change. */
static void report_annotation(struct report_out *o, const char *key, const cJSON *v)
{
    struct report_line l = {.len = 0};
    const char *s = cJSON_GetStringValue(v);
    char num[DECIMAL_MAX + 1];
    long long lines = 0;

    report_puts(&l, "annotation ", key, "");
    for (const char *p = s; p && *p; p++)
        lines += *p == '\n' || p[1] == '\0';
    if (s && strchr(s, '\n')) {
        num[decimal_ll(num, lines)] = '\0';
        report_puts(&l, " (", num, " lines)");
    } else {
        report_put(&l, "=");
        report_compact(&l, v, 0);
    }
    report_emit(o, &l);
}

/* /metadata (with annotations), /metadata/annotations (the object) and
 * /metadata/annotations/KEY. */
static void report_annotations(struct report_out *o, const char *rest, const cJSON *v)
{
    char key[REPORT_LINE_MAX / 2];
    const cJSON *it;

    if (strcmp(rest, "/metadata") == 0)
        v = cJSON_GetObjectItemCaseSensitive(v, "annotations");
    if (strncmp(rest, "/metadata/annotations/", 22) == 0) {
        report_token(rest + 22, strlen(rest + 22), key, sizeof(key));
        report_annotation(o, key, v);
        return;
    }
    if (!cJSON_IsObject(v))
        return;
    cJSON_ArrayForEach(it, v)
    {
        report_annotation(o, it->string, it);
    }
}

static int report_is_annotations(const char *rel)
{
    return strcmp(rel, "/metadata") == 0 || report_is(rel, "/metadata/annotations") ||
           strncmp(rel, "/metadata/annotations/", 22) == 0;
}

static void report_op(struct report_out *o, const cJSON *op, const char *base, const cJSON *pod)
{
    const char *name = report_str(op, "op"), *path = report_str(op, "path");
    struct report_place pl = {.subject = "", .rest = "", .value = NULL};
    const char *rel = path ? path : "";
    size_t base_len = strlen(base);

    if (base_len && strncmp(rel, base, base_len) == 0)
        rel += base_len;
    pl.value = cJSON_GetObjectItemCaseSensitive(op, "value");
    pl.replace = name && strcmp(name, "replace") == 0;
    if (report_in_container(rel, pod, &pl)) {
        if (report_is(pl.rest, "/env"))
            report_env(o, &pl);
        else if (strncmp(pl.rest, "/securityContext", 16) == 0)
            report_capabilities(o, &pl, pl.value);
        else if (report_is(pl.rest, "/volumeMounts"))
            report_mounts(o, &pl);
        else if (strncmp(pl.rest, "/resources", 10) == 0)
            report_resources(o, &pl);
        else
            report_other(o, &pl, name ? name : "?");
        return;
    }
    pl.rest = strncmp(rel, "/spec", 5) == 0 ? rel + 5 : rel;
    if (report_is_annotations(rel)) {
        report_annotations(o, rel, pl.value);
    } else if (report_is(pl.rest, "/volumes")) {
        report_volumes(o, &pl);
    } else if (report_is(pl.rest, "/initContainers")) {
        report_init_containers(o, &pl);
    } else if (strncmp(pl.rest, "/nodeSelector", 13) == 0 &&
               (pl.rest[13] == '\0' || pl.rest[13] == '/')) {
        report_node_selector(o, &pl);
    } else if (strcmp(pl.rest, "/schedulerName") == 0) {
        struct report_line l = {.len = 0};

        report_put(&l, "schedulerName ");
        report_compact(&l, pl.value, 0);
        report_put(&l, pl.replace ? " (in place of default-scheduler)" : "");
        report_emit(o, &l);
    } else {
        report_other(o, &pl, name ? name : "?");
    }
}

/* ---- the whole text ---- */

static const char *report_by_words(const char *by)
{
    if (by && strcmp(by, "namespace-label") == 0)
        return "namespace label " REPORT_LABEL;
    if (by && strcmp(by, "profile") == 0)
        return "the profile's mode";
    return "--mode";
}

/* Short enough for `kubectl describe`, which cuts a line of an annotation
 * at 138 bytes, with a profile name of 20. */
static void report_head(struct report_out *o, const struct report_input *in)
{
    struct report_line l = {.len = 0};

    report_puts(&l, "report mode (", report_by_words(in->by), "): nothing changed");
    if (in->reason) {
        report_puts(&l, "; enforce mode would change nothing either (", in->reason, ")");
    } else if (in->profile) {
        report_puts(&l, "; enforce mode would apply profile \"", in->profile, "\"");
        report_puts(&l, " (chosen by ", in->selected_by, ")");
    }
    report_emit(o, &l);
}

/* "... and N more" where lines were left out, in the room kept for it. */
static void report_more(struct report_out *o)
{
    char more[64];
    int n;

    if (!o->left)
        return;
    n = snprintf(more, sizeof(more), REPORT_MORE_FMT, o->left);
    if (dynbuf_len(o->out) && dynbuf_addc(o->out, '\n'))
        o->nomem = 1;
    if (n > 0 && dynbuf_add(o->out, more, (size_t)n))
        o->nomem = 1;
    o->left = 0;
}

/* The warnings' share: what they need, at most half of the text. */
static size_t report_warnings_room(const struct report_input *in)
{
    size_t need = 0;

    for (size_t i = 0; i < in->n_warnings; i++)
        need += strlen("warning: ") + strlen(in->warnings[i]) + 1;
    return need < REPORT_VALUE_MAX / 2 ? need : REPORT_VALUE_MAX / 2;
}

int report_value(const struct report_input *in, struct dynbuf *out)
{
    struct report_out o = {.out = out};
    size_t warnings_room = report_warnings_room(in);
    const cJSON *op;

    dynbuf_reset(out);
    /* Room kept for the warnings, and for two counts: the changes' own
     * (their "... and N more" comes before the warnings) and the last. */
    o.limit = REPORT_VALUE_MAX - 2 * REPORT_TAIL_ROOM - warnings_room;
    report_head(&o, in);
    cJSON_ArrayForEach(op, in->ops)
    {
        report_op(&o, op, in->base ? in->base : "", in->pod);
    }
    /* The changes left out are counted where they end, so that the
     * warnings after them do not read as the end of a whole list. */
    report_more(&o);
    o.limit = REPORT_VALUE_MAX - REPORT_TAIL_ROOM;
    for (size_t i = 0; i < in->n_warnings; i++) {
        struct report_line l = {.len = 0};

        report_puts(&l, "warning: ", in->warnings[i], "");
        report_emit(&o, &l);
    }
    report_more(&o);
    return o.nomem ? ERR_NOMEM : ERR_OK;
}

/* N of a line "... and N more", else 0. */
static size_t report_more_of(const char *line, size_t len)
{
    char buf[64];
    size_t n = 0;
    char tail;

    if (len >= sizeof(buf))
        return 0;
    memcpy(buf, line, len);
    buf[len] = '\0';
    return sscanf(buf, REPORT_MORE_FMT "%c", &n, &tail) == 1 ? n : 0;
}

void report_note(const char *text, char *out, size_t outlen)
{
    size_t len = 0, left = 0, room = outlen > REPORT_TAIL_ROOM ? outlen - REPORT_TAIL_ROOM : 0;
    const char *p = text;

    out[0] = '\0';
    while (*p) {
        size_t n = strcspn(p, "\n"), more = report_more_of(p, n);
        size_t add = n + (len ? strlen(REPORT_NOTE_SEP) : 0);

        /* Once one line is left out, so is every later one: the count
         * stands for a tail, not for holes. A count of the text's own
         * stands for its lines. */
        if (left || len + add + 1 > room)
            left += more ? more : 1;
        else
            len += (size_t)snprintf(out + len, outlen - len, "%s%.*s", len ? REPORT_NOTE_SEP : "",
                                    (int)n, p);
        p += n + (p[n] == '\n');
    }
    if (left && outlen > len)
        snprintf(out + len, outlen - len, "%s" REPORT_MORE_FMT, len ? REPORT_NOTE_SEP : "", left);
}
