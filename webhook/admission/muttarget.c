#include "admission/muttarget.h"

#include "admission/mutate_ctx.h"
#include "admission/mutns.h"
#include "admission/explain.h"
#include "admission/podjson.h"
#include "admission/target.h"
#include "base/trace.h"

#include <cjson/cJSON.h>
#include <stddef.h>

int muttarget_containers(struct mutate_ctx *m)
{
    const char *fallback = target_fallback_container(&m->res->job);

    if (m->in->trace)
        explain_containers(m->in->trace, m->spec, m->ps, fallback);
    if (target_each_container(&m->r, podjson_arr(&m->r, m->spec, "containers"), m->ps, fallback,
                              NULL, NULL))
        return 1;
    m->res->reason = MUTATE_R_NO_CONTAINER;
    MUTATE_TRACE(m, "no target container: nothing is added");
    if (fallback)
        MUTATE_WARN(m, MUTATE_W_NO_CONTAINER,
                    "request a GPU or RDMA device, or name the training container \"%s\"; "
                    "nothing added",
                    fallback);
    else
        MUTATE_WARN(m, MUTATE_W_NO_CONTAINER,
                    "request a GPU or RDMA device in the %s's training container; nothing added",
                    mutate_job_kind_name(m->res->job.kind));
    return 0;
}

/* The pod's own TARGET_ANNOTATION_INJECT that does nothing: said in the
 * trace for any pod, and warned about on a target (one that is not is never
 * written to; an opted-out one is left alone, warnings included). */
static void muttarget_inject_ignored(struct mutate_ctx *m, enum target_verdict v)
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
                    where, mutwarn_s(m, bad, MUTATE_SHOWN_VALUE));
}

/* A JobSet's pod that is a target as a TrainJob's and not as a plain
 * JobSet's, or the other way round, and the JobSet's owner could not be
 * read: guessing either way would mutate the wrong pods or miss the right
 * ones, so the pod goes in unchanged and the admin learns why. */
static void muttarget_job_unknown(struct mutate_ctx *m)
{
    MUTATE_TRACE(m, "pod: JobSet \"%s\" could not be read: nothing is added",
                 m->res->job.name ? m->res->job.name : "?");
    MUTATE_WARN(m, MUTATE_W_JOB_LOOKUP,
                "check the webhook may get jobsets and trainjobs: JobSet \"%s\" unread, "
                "nothing added",
                mutwarn_s(m, m->res->job.name ? m->res->job.name : "?", MUTATE_SHOWN_NAME));
}

int muttarget_pod(struct mutate_ctx *m)
{
    enum target_verdict v;
    const char *why;

    if (m->in->implicit_target) {
        MUTATE_TRACE(m, "pod: a target: a job's replica template");
        return 1;
    }
    v = target_pod(&m->r, m->metadata, m->spec, m->ps, &m->res->job, m->job_unknown, &why);
    m->res->reason = v == TARGET_OPTED_OUT ? MUTATE_R_OPTED_OUT : MUTATE_R_NOT_TARGET;
    MUTATE_TRACE(m, "pod: %s: %s",
                 v == TARGET_YES           ? "a target"
                 : v == TARGET_OPTED_OUT   ? "opted out"
                 : v == TARGET_JOB_UNKNOWN ? "left unchanged"
                                           : "not a target",
                 why);
    if (v == TARGET_JOB_UNKNOWN)
        muttarget_job_unknown(m);
    muttarget_inject_ignored(m, v);
    return v == TARGET_YES;
}

/* The namespace's TARGET_ANNOTATION_INJECT, where its labels are read for
 * this pod anyway (never a lookup of its own): a value that is no word of
 * the vocabulary does nothing, whichever webhook configuration is
 * installed (served either way, or under the opt-in component never). */
void muttarget_ns_inject(struct mutate_ctx *m)
{
    const cJSON *labels;
    const char *v;

    if (!m->hooks || !m->hooks->select.namespace_labels || mutns_labels(m, &labels))
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
                mutwarn_s(m, m->in->namespace_ ? m->in->namespace_ : "", MUTATE_SHOWN_NAME),
                mutwarn_s(m, v, MUTATE_SHOWN_VALUE));
}
