#include "admission/mutannot.h"

#include "admission/mutate_ctx.h"
#include "admission/mutpath.h"
#include "base/dynbuf.h"
#include "base/jsonw.h"
#include "admission/patch.h"
#include "admission/podjson.h"
#include "admission/select.h"
#include "base/trace.h"

#include <cjson/cJSON.h>
#include <string.h>

/* The annotations the patch sets: rdma-webhook.io/injected and
 * .../selected-by when the profile was applied, .../warnings when warnings
 * (a JSON array text) is not NULL. */
static void mutannot_pairs(struct mutate_ctx *m, int applied, const char *warnings)
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

void mutannot_one(struct mutate_ctx *m, const char *key, const char *value)
{
    char path[PATCH_PATH_MAX], tok[64];

    patch_escape_token(key, tok, sizeof(tok));
    mutpath_pod(m, path, "/metadata/annotations/", tok);
    /* "add" of an object member replaces it when present (RFC 6902 4.1). */
    patch_op_str(&m->res->patch, "add", path, value);
}

/* An add of the whole object over one an earlier operation made would
 * drop what that one set: after the first, one key at a time. */
void mutannot_set(struct mutate_ctx *m, const char *key, const char *value)
{
    struct patch *p = &m->res->patch;
    char path[PATCH_PATH_MAX];

    if (podjson_obj(&m->r, m->metadata, "annotations") || m->annotations_made) {
        mutannot_one(m, key, value);
        return;
    }
    mutpath_pod(m, path, m->metadata ? "/metadata/annotations" : "/metadata", NULL);
    patch_op_begin(p, "add", path);
    jsonw_raw(&p->w, m->metadata ? "{" : "{\"annotations\":{");
    jsonw_key(&p->w, key);
    jsonw_str(&p->w, value);
    jsonw_raw(&p->w, m->metadata ? "}" : "}}");
    patch_op_end(p);
    m->annotations_made = 1;
}

static void mutannot_write(struct mutate_ctx *m, const cJSON *annotations, int applied,
                           const char *warnings)
{
    struct patch *p = &m->res->patch;
    char path[PATCH_PATH_MAX];

    if (annotations || m->annotations_made) {
        if (applied) {
            mutannot_one(m, MUTATE_ANNOTATION_INJECTED, m->p->name);
            mutannot_one(m, MUTATE_ANNOTATION_SELECTED_BY, select_rule_name(m->rule));
        }
        if (warnings)
            mutannot_one(m, MUTATE_ANNOTATION_WARNINGS, warnings);
        return;
    }
    mutpath_pod(m, path, m->metadata ? "/metadata/annotations" : "/metadata", NULL);
    patch_op_begin(p, "add", path);
    jsonw_raw(&p->w, m->metadata ? "{" : "{\"annotations\":{");
    mutannot_pairs(m, applied, warnings);
    jsonw_raw(&p->w, m->metadata ? "}" : "}}");
    patch_op_end(p);
    m->annotations_made = 1;
}

/* The warnings annotation holds at most this many texts. */
#define MUTANNOT_WARNINGS_MAX (2 * MUTATE_MAX_WARNINGS)

static int mutannot_listed(const char *const *list, size_t n, const char *s)
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
static int mutannot_warnings_value(struct mutate_ctx *m, const cJSON *annotations,
                                   struct dynbuf *out)
{
    const struct mutate_warnings *ws = &m->res->warnings;
    const char *have = ws->n ? podjson_str(&m->r, annotations, MUTATE_ANNOTATION_WARNINGS) : NULL;
    cJSON *old = have ? cJSON_Parse(have) : NULL;
    const cJSON *items = cJSON_IsArray(old) ? old : NULL;
    const char *list[MUTANNOT_WARNINGS_MAX];
    const cJSON *it;
    size_t n = 0, n_old, written = 0;
    struct jsonw w;

    cJSON_ArrayForEach(it, items)
    {
        if (n < MUTANNOT_WARNINGS_MAX && cJSON_IsString(it) &&
            strlen(it->valuestring) < MUTATE_WARNING_FULL_MAX &&
            !mutannot_listed(list, n, it->valuestring))
            list[n++] = it->valuestring;
    }
    n_old = n;
    for (size_t i = 0; i < ws->n && n < MUTANNOT_WARNINGS_MAX; i++)
        if (!mutannot_listed(list, n, ws->full[i] + strlen(MUTATE_WARNING_LEAD)))
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

static void mutannot_trace(struct mutate_ctx *m, int applied, int warned)
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
void mutannot_finish(struct mutate_ctx *m, int applied)
{
    const cJSON *annotations = podjson_obj(&m->r, m->metadata, "annotations");
    struct dynbuf value;
    int warned;

    /* One text escaped past the bound, before it is taken back. */
    dynbuf_init(&value,
                MUTATE_ANNOTATION_WARNINGS_MAX + MUTATE_WARNING_FULL_MAX * JSONW_ESCAPE_MAX);
    warned = mutannot_warnings_value(m, annotations, &value);
    if (applied || warned)
        mutannot_write(m, annotations, applied, warned ? dynbuf_ptr(&value) : NULL);
    if (m->in->trace)
        mutannot_trace(m, applied, warned);
    dynbuf_free(&value);
}
