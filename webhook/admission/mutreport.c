#include "admission/mutreport.h"

#include "admission/mutate_ctx.h"
#include "admission/mutannot.h"
#include "admission/mutns.h"
#include "admission/mutpath.h"
#include "base/dynbuf.h"
#include "base/err.h"
#include "base/jsonw.h"
#include "admission/patch.h"
#include "admission/podjson.h"
#include "admission/report.h"
#include "admission/select.h"
#include "base/utf8.h"

#include <cjson/cJSON.h>
#include <string.h>

/* The namespace's REPORT_LABEL, from the one lookup of its labels: how it
 * went, and the value in buf (*label NULL when there is none). */
static enum report_lookup mutreport_label(struct mutate_ctx *m, char *buf, size_t len,
                                          const char **label)
{
    const cJSON *labels;
    const char *v;

    *label = NULL;
    if (!m->hooks || !m->hooks->select.namespace_labels)
        return REPORT_LOOKUP_NONE;
    if (mutns_labels(m, &labels))
        return REPORT_LOOKUP_FAILED;
    if ((v = cJSON_GetStringValue(podjson_member(labels, REPORT_LABEL)))) {
        utf8_shorten(v, len - 1, buf, len);
        *label = buf;
    }
    return REPORT_LOOKUP_OK;
}

/* Whether a warning already says the Namespace could not be read (select's
 * or Pod Security's): one cause, one warning. */
static int mutreport_ns_failure_warned(const struct mutate_ctx *m)
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
static enum report_mode mutreport_mode(struct mutate_ctx *m)
{
    enum report_mode flag = m->in->opts ? m->in->opts->mode : REPORT_MODE_UNSET;
    enum report_mode profile = m->res->profile ? m->res->profile->mode : REPORT_MODE_UNSET;
    const char *ns = m->in->namespace_ ? m->in->namespace_ : "";
    struct report_decision d;
    char value[64];
    const char *label;
    enum report_lookup lookup = mutreport_label(m, value, sizeof(value), &label);

    report_decide(flag, profile, lookup, label, &d);
    if (d.label_invalid)
        MUTATE_WARN(m, MUTATE_W_MODE,
                    "label namespace \"%s\" " REPORT_LABEL "=report|enforce (\"%s\" ignored)",
                    mutwarn_s(m, ns, MUTATE_SHOWN_NAME), mutwarn_s(m, label, MUTATE_SHOWN_VALUE));
    if (d.lookup_failed && !mutreport_ns_failure_warned(m))
        MUTATE_WARN(m, MUTATE_W_MODE,
                    "check the webhook can read namespaces: \"%s\" unread, " REPORT_LABEL
                    " not applied",
                    mutwarn_s(m, ns, MUTATE_SHOWN_NAME));
    m->res->report_by = d.mode == REPORT_MODE_REPORT ? report_by_name(d.by) : NULL;
    return d.mode;
}

/* The summary of the patch made so far (the changes: the annotations come
 * after this) and of the warnings, into value: ERR_OK, or ERR_TOO_BIG or
 * ERR_NOMEM with the pod failed. */
static int mutreport_value(struct mutate_ctx *m, struct dynbuf *value)
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
int mutreport_apply(struct mutate_ctx *m)
{
    struct mutate_result *res = m->res;
    const cJSON *annotations = podjson_obj(&m->r, m->metadata, "annotations");
    const char *have = podjson_str(&m->r, annotations, REPORT_ANNOTATION);
    struct dynbuf *value = &res->report;

    if ((res->reason != MUTATE_R_MUTATED && res->warnings.n == 0) ||
        mutreport_mode(m) != REPORT_MODE_REPORT)
        return 0;
    if (mutreport_value(m, value) == ERR_OK) {
        patch_free(&res->patch);
        patch_init(&res->patch, res->patch.out.cap);
        /* What the patch made went with it. */
        m->annotations_made = 0;
        res->pinned = 0;
        res->report_seen = have != NULL;
        if (have && strcmp(have, dynbuf_ptr(value)) == 0)
            res->reason = res->reason == MUTATE_R_MUTATED ? MUTATE_R_NOTHING_MISSING : res->reason;
        else
            mutannot_set(m, REPORT_ANNOTATION, dynbuf_ptr(value));
        if (res->reason == MUTATE_R_MUTATED)
            res->reason = MUTATE_R_REPORTED;
    }
    return 1;
}
