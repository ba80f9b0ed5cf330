#include "admission/mutchoose.h"

#include "admission/mutate_ctx.h"
#include "admission/explain.h"
#include "admission/podjson.h"
#include "admission/select.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

/* "a, b, c and 2 more": the names of a tie, whole in full, shortened to
 * fit out. */
static void mutchoose_tie_text(const struct select_tie *t, char *out, size_t len, char *full,
                               size_t full_len)
{
    char buf[SELECT_TIE_LISTED * 72 + 32];
    size_t at = 0, listed = t->n < SELECT_TIE_LISTED ? t->n : SELECT_TIE_LISTED;

    buf[0] = '\0';
    for (size_t i = 0; i < listed && at < sizeof(buf); i++)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s", i ? ", " : "", t->p[i]->name);
    if (t->n > listed && at < sizeof(buf))
        snprintf(buf + at, sizeof(buf) - at, " and %zu more", t->n - listed);
    mutwarn_short(buf, out, len);
    mutwarn_short(buf, full, full_len);
}

/* Says which rules found several profiles and chose none of them. The node
 * constraints' tie only when no profile came after it either: one the GPU
 * count or the default then chose (and pinned) was chosen, and "none
 * chosen" beside "pinned to profile ..." would contradict it. */
static void mutchoose_warn_ties(struct mutate_ctx *m, const struct select_result *sel)
{
    char names[34], full[SELECT_TIE_LISTED * 72 + 32];

    if (sel->tie_labels.n >= 2 && !sel->profile) {
        /* This text is longer than the GPU count's by more than its number. */
        mutchoose_tie_text(&sel->tie_labels, names, sizeof(names) - 4, full, sizeof(full));
        MUTATE_WARN(m, MUTATE_W_AMBIGUOUS,
                    "set " SELECT_ANNOTATION_PROFILE ": ambiguous node constraints fit %s; "
                    "none chosen",
                    m->warn_full ? full : names);
    }
    if (sel->tie_gpus.n >= 2) {
        mutchoose_tie_text(&sel->tie_gpus, names, sizeof(names), full, sizeof(full));
        MUTATE_WARN(m, MUTATE_W_AMBIGUOUS,
                    "set " SELECT_ANNOTATION_PROFILE ": ambiguous GPU count %lld fits %s; none "
                    "chosen",
                    sel->gpus, m->warn_full ? full : names);
    }
}

/* "a, b, c": the profiles' names in out, as many as fit budget bytes, with
 * ", ..." (or "...") in place of those that do not. */
static void mutchoose_profile_names(const struct profiles *ps, size_t budget, char *out,
                                    size_t outlen)
{
    size_t at = 0;

    if (budget > outlen - 1)
        budget = outlen - 1;
    out[0] = '\0';
    for (size_t i = 0; i < ps->n; i++) {
        const char *name = ps->p[i].name;
        size_t need = (i ? 2 : 0) + strlen(name), more = i + 1 < ps->n ? 5 : 0;

        if (at + need + more > budget) {
            if (at + 5 <= budget)
                memcpy(out + at, i ? ", ..." : "...", (i ? 5 : 3) + 1);
            return;
        }
        at += (size_t)snprintf(out + at, outlen - at, "%s%s", i ? ", " : "", name);
    }
}

/* The unknown name and the valid ones: for the user as many as fit, in the
 * log's text as many as MUTATE_WARNING_FULL_MAX holds. */
static void mutchoose_warn_unknown(struct mutate_ctx *m, const char *unknown)
{
#define MUTCHOOSE_UNKNOWN_FMT "set " SELECT_ANNOTATION_PROFILE " to one of %s (\"%s\" is unknown)"
    /* What the text takes besides the names: the lead and the format's. */
    const size_t fixed = strlen(MUTATE_WARNING_LEAD) + strlen(MUTCHOOSE_UNKNOWN_FMT) - 4;
    char names[MUTATE_WARNING_FULL_MAX];
    const char *shown;
    size_t used, room;

    for (int pass = 1; pass >= 0; pass--) {
        m->warn_full = pass;
        shown = mutwarn_s(m, unknown, MUTATE_SHOWN_NAME); /* whole in the log: any length */
        used = fixed + strlen(shown) + 1;
        room = pass ? sizeof(names) : MUTATE_WARNING_MAX;
        mutchoose_profile_names(m->ps, used < room ? room - used : 0, names, sizeof(names));
        mutwarn_text(m, MUTCHOOSE_UNKNOWN_FMT, names, shown);
    }
    mutwarn_add(m, MUTATE_W_UNKNOWN_PROFILE);
#undef MUTCHOOSE_UNKNOWN_FMT
}

/* The Nodes the pod's hostname names could not be told, and the GPU count
 * or the default chose a profile they might not carry: say so, and that it
 * is not pinned. (A profile the constraints name is right whatever the
 * hosts, and none chosen has nothing to warn about here.) */
static void mutchoose_warn_hosts(struct mutate_ctx *m, const struct select_hosts *h)
{
    const char *pin = m->p->pin ? ", not pinned" : "";
    const char *name = h->unknown ? h->unknown : "";

    m->hosts_unknown = 1;
    if (m->rule != SELECT_BY_GPUS && m->rule != SELECT_BY_DEFAULT)
        return;
    if (h->why == SELECT_HOSTS_UNREAD)
        MUTATE_WARN(m, MUTATE_W_NODE_LOOKUP,
                    "check the webhook can read nodes: hostname \"%s\" unread, profile chosen "
                    "from the pod%s",
                    mutwarn_s(m, name, MUTATE_SHOWN_NAME), pin);
    else if (h->why == SELECT_HOSTS_OTHER_HOSTNAME)
        MUTATE_WARN(m, MUTATE_W_NODE_LOOKUP,
                    "node \"%s\" has another hostname label: profile chosen from the pod%s",
                    mutwarn_s(m, name, MUTATE_SHOWN_NAME), pin);
    else if (h->why == SELECT_HOSTS_TOO_MANY)
        MUTATE_WARN(m, MUTATE_W_NODE_LOOKUP,
                    "over %d hostnames, their nodes unread: profile chosen from the pod%s",
                    SELECT_HOSTS_MAX, pin);
    else
        MUTATE_WARN(
            m, MUTATE_W_NODE_LOOKUP,
            "nodes of the pod's hostnames %s: profile chosen from the pod%s",
            h->why == SELECT_HOSTS_NO_API ? "unknown offline" : "unread (not in every term)", pin);
}

int mutchoose_profile(struct mutate_ctx *m)
{
    struct select_result sel;
    struct select_job job = {
        .kind = m->res->job.kind,
        .runtime = m->res->job.kind == MUTATE_JOB_TRAINJOB ? m->res->job.runtime : NULL};

    select_profile_job(&m->r, m->metadata, m->spec, m->in->namespace_, &job, m->ps,
                       m->hooks ? &m->select : NULL, &sel);
    if (m->in->trace)
        explain_selection(m->in->trace, m->spec, m->in->namespace_, &job, m->ps,
                          m->hooks ? &m->select : NULL, &sel);
    m->p = sel.profile;
    m->rule = m->res->rule = sel.rule;
    mutchoose_warn_ties(m, &sel);
    if (sel.node_lookup_failed)
        MUTATE_WARN(m, MUTATE_W_NODE_LOOKUP,
                    "check the webhook can read nodes: node \"%s\" unread, profile chosen from "
                    "the pod",
                    mutwarn_s(m, podjson_str(&m->r, m->spec, "nodeName"), MUTATE_SHOWN_NAME));
    if (sel.namespace_lookup_failed)
        MUTATE_WARN(m, MUTATE_W_NAMESPACE_LOOKUP,
                    "check the webhook can read namespaces: labels of \"%s\" unread, no profile "
                    "chosen",
                    mutwarn_s(m, m->in->namespace_ ? m->in->namespace_ : "", MUTATE_SHOWN_NAME));
    if (sel.rule == SELECT_OTHER_NAMESPACES) {
        MUTATE_WARN(m, MUTATE_W_UNKNOWN_PROFILE,
                    "change " SELECT_ANNOTATION_PROFILE ": \"%s\" is limited to other namespaces; "
                    "nothing added",
                    mutwarn_s(m, sel.other_namespaces->name, MUTATE_SHOWN_NAME));
        m->res->reason = MUTATE_R_UNKNOWN_PROFILE;
        return 0;
    }
    if (sel.rule == SELECT_OTHER_JOBS) {
        MUTATE_WARN(m, MUTATE_W_UNKNOWN_PROFILE,
                    "change " SELECT_ANNOTATION_PROFILE ": \"%s\" is limited to other job kinds "
                    "or runtimes; nothing added",
                    mutwarn_s(m, sel.other_namespaces->name, MUTATE_SHOWN_NAME));
        m->res->reason = MUTATE_R_UNKNOWN_PROFILE;
        return 0;
    }
    if (sel.rule == SELECT_UNKNOWN_NAME) {
        mutchoose_warn_unknown(m, sel.unknown_name);
        m->res->reason = MUTATE_R_UNKNOWN_PROFILE;
        return 0;
    }
    if (!m->p) {
        /* A pod that chose several node types itself has the ambiguity's
         * warning alone: no profile is missing for it. */
        if (sel.gpus > 0 && !sel.namespace_lookup_failed && !sel.tie_spans_types)
            MUTATE_WARN(
                m, MUTATE_W_NO_PROFILE,
                "add a profile for %lld GPUs on these nodes, or set " SELECT_ANNOTATION_PROFILE
                "; no NCCL settings added",
                sel.gpus);
        m->res->reason = MUTATE_R_NO_PROFILE;
        return 0;
    }
    if (sel.hosts.state == SELECT_HOSTS_UNKNOWN)
        mutchoose_warn_hosts(m, &sel.hosts);
    return 1;
}
