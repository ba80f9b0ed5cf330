#include "admission/explain.h"

#include "admission/podjson.h"
#include "admission/profiles.h"
#include "admission/select.h"
#include "admission/target.h"
#include "base/trace.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* One line being put together: cut, never overrun, at the trace's bound. */
struct explain_line {
    char buf[TRACE_LINE_MAX];
    size_t at;
};

__attribute__((format(printf, 2, 3))) static void explain_cat(struct explain_line *l,
                                                              const char *fmt, ...)
{
    va_list ap;
    int n;

    if (l->at >= sizeof(l->buf) - 1)
        return;
    va_start(ap, fmt);
    n = vsnprintf(l->buf + l->at, sizeof(l->buf) - l->at, fmt, ap);
    va_end(ap);
    if (n > 0)
        l->at += (size_t)n < sizeof(l->buf) - l->at ? (size_t)n : sizeof(l->buf) - 1 - l->at;
}

/* "k=v, k2=v2" */
static void explain_kvs(struct explain_line *l, const struct profiles_kvs *kvs)
{
    for (size_t i = 0; i < kvs->n; i++)
        explain_cat(l, "%s%s=%s", i ? ", " : "", kvs->v[i].name, kvs->v[i].value);
}

/* "k=v, k2=v2" of a JSON object of strings. */
static void explain_labels(struct explain_line *l, const cJSON *labels)
{
    const cJSON *it;
    int first = 1;

    for (it = labels ? labels->child : NULL; it; it = it->next) {
        explain_cat(l, "%s%s=%s", first ? "" : ", ", it->string ? it->string : "?",
                    cJSON_IsString(it) ? it->valuestring : "(not a string)");
        first = 0;
    }
}

/* "[1, 2, 4]" */
static void explain_gpus(struct explain_line *l, const struct profiles_entry *p)
{
    explain_cat(l, "[");
    for (size_t i = 0; i < p->n_gpus; i++)
        explain_cat(l, "%s%lld", i ? ", " : "", p->gpus[i]);
    explain_cat(l, "]");
}

/* A node selector requirement as written: "key In [a, b]". */
static void explain_expr(struct explain_line *l, struct podjson *r, const cJSON *expr)
{
    const char *key = podjson_str(r, expr, "key"), *op = podjson_str(r, expr, "operator");
    const cJSON *values = podjson_arr(r, expr, "values"), *v;
    int i = 0;

    explain_cat(l, "%s %s", key ? key : "?", op ? op : "(no operator)");
    if (!values)
        return;
    explain_cat(l, " [");
    cJSON_ArrayForEach(v, values)
    {
        explain_cat(l, "%s%s", i++ ? ", " : "", cJSON_IsString(v) ? v->valuestring : "?");
    }
    explain_cat(l, "]");
}

/* ---- containers ---- */

void explain_containers(struct trace *t, const cJSON *spec, const struct profiles *ps,
                        const char *fallback)
{
    struct podjson r;
    const cJSON *containers, *c;
    size_t with_devices = 0;
    int fallback_taken = 0;

    podjson_init(&r);
    containers = podjson_arr(&r, spec, "containers");
    cJSON_ArrayForEach(c, containers)
    {
        with_devices += target_container_device(&r, c, ps) != NULL;
    }
    /* target_each_container(): those with devices; failing those, the first
     * one named as the job kind's training container (fallback). */
    cJSON_ArrayForEach(c, containers)
    {
        const char *name = podjson_str(&r, c, "name");
        const char *dev = target_container_device(&r, c, ps);
        int named = name && fallback && strcmp(name, fallback) == 0;

        if (dev)
            trace_add(t, "container \"%s\": a target: asks for %s", name ? name : "?", dev);
        else if (with_devices)
            trace_add(t, "container \"%s\": not a target: asks for no GPU or RDMA device",
                      name ? name : "?");
        else if (named && !fallback_taken++)
            trace_add(t,
                      "container \"%s\": a target: no container asks for a GPU or RDMA device, "
                      "and it is the first named \"%s\"",
                      name, fallback);
        else if (fallback)
            trace_add(t,
                      "container \"%s\": not a target: asks for no GPU or RDMA device, and is "
                      "not the first named \"%s\"",
                      name ? name : "?", fallback);
        else
            trace_add(t,
                      "container \"%s\": not a target: asks for no GPU or RDMA device (this "
                      "job kind has no training container by name)",
                      name ? name : "?");
    }
    if (!cJSON_GetArraySize(containers))
        trace_add(t, "no containers");
}

void explain_init_containers(struct trace *t, const cJSON *spec, const struct profiles *ps, int on)
{
    struct podjson r;
    const cJSON *c;

    podjson_init(&r);
    cJSON_ArrayForEach(c, podjson_arr(&r, spec, "initContainers"))
    {
        const char *name = podjson_str(&r, c, "name");
        const char *dev = target_container_device(&r, c, ps);

        if (!on)
            trace_add(t,
                      "init container \"%s\": not a target: the profile's initContainers is "
                      "off",
                      name ? name : "?");
        else if (dev)
            trace_add(t, "init container \"%s\": a target: asks for %s (initContainers is on)",
                      name ? name : "?", dev);
        else
            trace_add(t, "init container \"%s\": not a target: asks for no GPU or RDMA device",
                      name ? name : "?");
    }
}

/* ---- selection ---- */

struct explain_ctx {
    struct trace *t;
    struct podjson r;
    const cJSON *spec;
    const char *node_name; /* spec.nodeName, or the one hostname kept; or NULL */
    const cJSON *node;     /* spec.nodeName's labels, or NULL: unknown */
    /* The pod's Nodes as select judged them: spec.nodeName's, or those of
     * its hostnames (select_hosts.kept); known 0: unknown. */
    const cJSON *nodes[SELECT_HOSTS_MAX];
    size_t n_nodes;
    int known;
    cJSON **hosts;                /* the labels of select_hosts.name[i], or NULL */
    int constrained;              /* a nodeSelector, required terms or a known Node */
    int terms;                    /* required node affinity terms */
    const char *ns;               /* the pod's namespace */
    const cJSON *ns_labels;       /* its labels, or NULL: unknown or not needed */
    const struct select_job *job; /* the pod's job, or NULL: none */
    const struct select_result *sel;
};

/* "\"a\", \"b\"": the names a hostname constraint gave. */
static void explain_host_names(struct explain_line *l, const struct select_hosts *h)
{
    for (size_t i = 0; i < h->n; i++)
        explain_cat(l, "%s\"%s\"", i ? ", " : "", h->name[i]);
    if (h->why == SELECT_HOSTS_TOO_MANY)
        explain_cat(l, " and more");
}

/* What select read of the Nodes the pod's hostnames name, and why it could
 * not when it could not. */
static void explain_hosts(struct explain_ctx *e)
{
    const struct select_hosts *h = &e->sel->hosts;
    struct explain_line l = {.at = 0};

    if (h->state == SELECT_HOSTS_NONE)
        return;
    for (size_t i = 0; h->state == SELECT_HOSTS_KNOWN && i < h->n; i++) {
        l.at = 0;
        l.buf[0] = '\0';
        explain_cat(&l, "node \"%s\" (kubernetes.io/hostname) has labels ", h->name[i]);
        explain_labels(&l, e->hosts[i]);
        if (!(h->kept & (1u << i)))
            explain_cat(&l, "; the pod's other node constraints rule it out");
        trace_add(e->t, "%s", l.buf);
    }
    if (h->state == SELECT_HOSTS_KNOWN)
        return;
    explain_cat(&l, "kubernetes.io/hostname names ");
    explain_host_names(&l, h);
    if (h->why == SELECT_HOSTS_NO_API)
        explain_cat(&l, ": no Node is read here (offline there is no API; --node-labels takes "
                        "the pod to a node with the labels given)");
    else if (h->why == SELECT_HOSTS_UNREAD)
        explain_cat(&l, ": the labels of node \"%s\" could not be read", h->unknown);
    else if (h->why == SELECT_HOSTS_OTHER_HOSTNAME)
        explain_cat(&l,
                    ": the Node named \"%s\" has another kubernetes.io/hostname label, so "
                    "the name may be another node's",
                    h->unknown);
    else if (h->why == SELECT_HOSTS_TOO_MANY)
        explain_cat(&l, ": more than %d names, none read", SELECT_HOSTS_MAX);
    else
        explain_cat(&l, " in only some required terms (the pod may land elsewhere too): none "
                        "read");
    explain_cat(&l, "; the profile is chosen from the pod alone, and never pinned");
    trace_add(e->t, "%s", l.buf);
}

/* The labels of the Nodes select read for the pod's hostnames, asked of the
 * same hook again (a cached answer in serve): into e->hosts, and those the
 * pod's constraints admit into e->nodes. */
static void explain_hosts_read(struct explain_ctx *e, const struct select_hooks *hooks)
{
    const struct select_hosts *h = &e->sel->hosts;

    if (h->state != SELECT_HOSTS_KNOWN || !hooks || !hooks->node_labels)
        return;
    e->known = 1;
    for (size_t i = 0; i < h->n && i < SELECT_HOSTS_MAX; i++) {
        if (hooks->node_labels(hooks->ctx, h->name[i], &e->hosts[i]))
            e->hosts[i] = NULL;
        if (e->hosts[i] && (h->kept & (1u << i))) {
            e->nodes[e->n_nodes++] = e->hosts[i];
            e->node_name = h->name[i];
        }
    }
    if (e->n_nodes != 1)
        e->node_name = NULL;
}

/* The pod's node constraints and GPU count, as select read them. */
static void explain_constraints(struct explain_ctx *e)
{
    const cJSON *selector = podjson_obj(&e->r, e->spec, "nodeSelector");
    const cJSON *aff = podjson_obj(&e->r, podjson_obj(&e->r, e->spec, "affinity"), "nodeAffinity");
    const cJSON *terms = podjson_arr(
        &e->r, podjson_obj(&e->r, aff, "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
    const cJSON *term, *expr;
    struct explain_line l = {.at = 0};
    int i = 0;

    e->terms = cJSON_GetArraySize(terms);
    e->constrained = cJSON_GetArraySize(selector) || e->terms || e->known;
    explain_cat(&l, "node constraints: nodeSelector ");
    if (cJSON_GetArraySize(selector))
        explain_labels(&l, selector);
    else
        explain_cat(&l, "none");
    explain_cat(&l, "; required node affinity ");
    if (!cJSON_GetArraySize(terms))
        explain_cat(&l, "none");
    cJSON_ArrayForEach(term, terms)
    {
        int j = 0;

        explain_cat(&l, "%sterm %d: ", i ? " OR " : "", i + 1);
        cJSON_ArrayForEach(expr, podjson_arr(&e->r, term, "matchExpressions"))
        {
            if (j++)
                explain_cat(&l, " AND ");
            explain_expr(&l, &e->r, expr);
        }
        if (!j)
            explain_cat(&l, "(no matchExpressions)");
        i++;
    }
    trace_add(e->t, "%s", l.buf);
    if (e->node) {
        l.at = 0;
        l.buf[0] = '\0';
        explain_cat(&l, "node \"%s\" (spec.nodeName) has labels ", e->node_name);
        explain_labels(&l, e->node);
        trace_add(e->t, "%s", l.buf);
    } else if (e->sel->node_lookup_failed) {
        trace_add(e->t,
                  "node \"%s\" (spec.nodeName): its labels could not be read; the profile "
                  "is chosen from the pod alone",
                  e->node_name);
    }
    explain_hosts(e);
    trace_add(e->t, "GPUs: %lld (the regular containers' limits, else requests, of gpuResources)",
              e->sel->gpus);
}

/* "a, b and 2 more": a tie's profiles other than p. */
static void explain_tie(struct explain_line *l, const struct select_tie *tie,
                        const struct profiles_entry *p)
{
    size_t listed = tie->n < SELECT_TIE_LISTED ? tie->n : SELECT_TIE_LISTED, shown = 0, more;

    for (size_t i = 0; i < listed; i++) {
        if (tie->p[i] == p)
            continue;
        explain_cat(l, "%s%s", shown++ ? ", " : "", tie->p[i]->name);
    }
    /* p is in the tie: the others are tie->n - 1. */
    more = tie->n - 1 - shown;
    if (more)
        explain_cat(l, " and %zu more", more);
}

/* Why the constraints are not consistent with p. */
static void explain_clash(struct explain_ctx *e, struct explain_line *l,
                          const struct profiles_entry *p, const struct select_fit *f)
{
    explain_cat(l, "excluded by the pod's node constraints: ");
    if (f->clash == SELECT_CLASH_SELECTOR)
        explain_cat(l, "nodeLabels %s=%s inconsistent with the pod's nodeSelector %s=%s", f->key,
                    f->want, f->key, f->have);
    else if (f->clash == SELECT_CLASH_NODE && !f->key) {
        explain_cat(l, "nodeLabels ");
        explain_kvs(l, &p->node_labels);
        explain_cat(l, ": no node the pod's kubernetes.io/hostname names, and its other "
                       "constraints admit, has them all");
    } else if (f->clash == SELECT_CLASH_NODE && f->have)
        explain_cat(l, "nodeLabels %s=%s inconsistent with node \"%s\"'s %s=%s", f->key, f->want,
                    e->node_name, f->key, f->have);
    else if (f->clash == SELECT_CLASH_NODE)
        explain_cat(l, "nodeLabels %s=%s, and node \"%s\" has no label %s", f->key, f->want,
                    e->node_name, f->key);
    else if (f->expr) {
        explain_cat(l, "nodeLabels %s=%s fails the required node affinity's term %d: ", f->key,
                    f->want, f->term + 1);
        explain_expr(l, &e->r, f->expr);
        if (e->terms > 1)
            explain_cat(l, " (and each of the other %d terms fails too)", e->terms - 1);
    } else
        explain_cat(l, "every term of the required node affinity is empty, which matches no "
                       "node");
}

/* Rule 2 for p; 1 when p's story ends here (chosen or excluded). */
static int explain_rule_labels(struct explain_ctx *e, struct explain_line *l,
                               const struct profiles_entry *p)
{
    const struct select_result *sel = e->sel;
    struct select_fit f;

    if (p->node_labels.n == 0) {
        explain_cat(l, "node-labels: no match.nodeLabels");
        return 0;
    }
    select_fit_profile(&e->r, e->spec, e->nodes, e->n_nodes, e->known, p, &f);
    if (!f.fits) {
        explain_clash(e, l, p, &f);
        return 1;
    }
    if (sel->profile == p && (sel->rule == SELECT_BY_NODE_LABELS || sel->rule == SELECT_BY_NODE)) {
        explain_cat(l, "chosen by %s: the only profile with nodeLabels (",
                    select_rule_name(sel->rule));
        explain_kvs(l, &p->node_labels);
        explain_cat(l, ") the constraints fit, and they require %s",
                    sel->hosts.state == SELECT_HOSTS_KNOWN
                        ? "the labels of the nodes its kubernetes.io/hostname names"
                    : sel->rule == SELECT_BY_NODE ? "the node's labels"
                                                  : "one of its keys");
        return 1;
    }
    if (sel->tie_labels.n >= 2) {
        explain_cat(l, "node-labels: tied with ");
        explain_tie(l, &sel->tie_labels, p);
        explain_cat(l, sel->tie_spans_types
                           ? " at node-labels (the constraints allow several node types, which "
                             "they tell apart by a label; none chosen, and no later rule "
                             "chooses for them)"
                           : " at node-labels (the constraints fit several; none chosen)");
    } else if (!e->constrained) {
        explain_cat(l, "node-labels: the pod has no node constraints");
    } else {
        explain_cat(l, "node-labels: the constraints fit its nodeLabels (");
        explain_kvs(l, &p->node_labels);
        explain_cat(l, ") but require none of its keys");
    }
    return 0;
}

/* Rule 3 for p; 1 when p's story ends here (chosen). */
static int explain_rule_gpus(struct explain_ctx *e, struct explain_line *l,
                             const struct profiles_entry *p)
{
    const struct select_result *sel = e->sel;

    explain_cat(l, "; ");
    if (p->n_gpus == 0) {
        explain_cat(l, "gpus: no match.gpus");
        return 0;
    }
    if (sel->gpus <= 0 || !profiles_matches_gpus(p, sel->gpus)) {
        explain_cat(l, "gpus: match.gpus ");
        explain_gpus(l, p);
        explain_cat(l, " vs the pod's %lld GPUs", sel->gpus);
        return 0;
    }
    if (sel->profile == p && sel->rule == SELECT_BY_GPUS) {
        explain_cat(l, "chosen by gpus: match.gpus ");
        explain_gpus(l, p);
        explain_cat(l, " has the pod's %lld GPUs", sel->gpus);
        return 1;
    }
    explain_cat(l, "gpus: match.gpus ");
    explain_gpus(l, p);
    if (sel->tie_gpus.n < 2) {
        /* Not a tie: the rule stopped because a profile with a selector
         * could have taken this one's place, and the labels are unknown. */
        explain_cat(l, " has the pod's %lld GPUs, but the rule chose nothing: %s", sel->gpus,
                    sel->namespace_lookup_failed ? "the namespace's labels are unknown"
                                                 : "another rule decided");
        return 0;
    }
    explain_cat(l, " has the pod's %lld GPUs, tied with ", sel->gpus);
    explain_tie(l, &sel->tie_gpus, p);
    explain_cat(l, " at gpus (none chosen)");
    return 0;
}

/* match.jobKinds and match.runtimes for p; 1 when p's story ends here. */
static int explain_jobs(struct explain_ctx *e, struct explain_line *l,
                        const struct profiles_entry *p)
{
    unsigned kind = e->job ? e->job->kind : 0;
    const char *runtime = e->job ? e->job->runtime : NULL;

    if (!profiles_job_limited(p))
        return 0;
    if (p->job_kinds && (kind >= PROFILES_JOB_KINDS || !(p->job_kinds & (1u << kind)))) {
        explain_cat(l, "limited by match.jobKinds to other job kinds than the pod's (%s)",
                    kind ? profiles_job_kind_name(kind) : "no job");
        return 1;
    }
    if (!profiles_for_job(p, kind, runtime)) {
        explain_cat(l, "limited by match.runtimes to other TrainJob runtimes than the pod's (%s)",
                    runtime ? runtime : "none known");
        return 1;
    }
    explain_cat(l, "limited to this job (preferred over profiles for every job); ");
    return 0;
}

/* match.namespaces for p; 1 when p's story ends here (no candidate). */
static int explain_namespaces(struct explain_ctx *e, struct explain_line *l,
                              const struct profiles_entry *p)
{
    const struct profiles_entry *chosen = e->sel->profile;
    int in;

    if (chosen && chosen != p && select_covers(chosen, p) &&
        (e->sel->rule == SELECT_BY_NODE_LABELS || e->sel->rule == SELECT_BY_NODE ||
         e->sel->rule == SELECT_BY_GPUS)) {
        explain_cat(l,
                    "covered by \"%s\", limited to this %s (its nodeLabels are within "
                    "this profile's)",
                    chosen->name, profiles_job_limited(chosen) ? "job" : "namespace");
        return 1;
    }
    if (explain_jobs(e, l, p))
        return 1;
    if (!profiles_ns_limited(p))
        return 0;
    in = profiles_in_namespace(p, e->ns, e->ns_labels);
    if (in == 0) {
        explain_cat(l, "limited by match.namespaces to other namespaces than \"%s\"", e->ns);
        return 1;
    }
    if (in < 0) {
        explain_cat(l,
                    "match.namespaces is a selector and the labels of \"%s\" are unknown "
                    "(no candidate)",
                    e->ns);
        return 1;
    }
    explain_cat(l, "limited to this namespace (preferred over cluster-wide profiles); ");
    return 0;
}

/* Rules 2 to 4 for p, as far as select went. */
static void explain_profile(struct explain_ctx *e, const struct profiles_entry *p)
{
    const struct select_result *sel = e->sel;
    struct explain_line l = {.at = 0};

    explain_cat(&l, "profile \"%s\": ", p->name);
    if (explain_namespaces(e, &l, p))
        goto done;
    if (explain_rule_labels(e, &l, p) || sel->rule == SELECT_BY_NODE_LABELS ||
        sel->rule == SELECT_BY_NODE || sel->tie_spans_types)
        goto done;
    if (explain_rule_gpus(e, &l, p) || sel->rule == SELECT_BY_GPUS)
        goto done;
    if (!p->is_default)
        explain_cat(&l, "; not the default");
    else if (sel->profile == p)
        explain_cat(&l, "; chosen as the default");
done:
    trace_add(e->t, "%s", l.buf);
}

/* The Namespace's labels, when a profile's selector needs them: the
 * admission asked the same hook (a cached answer in serve, the flag's
 * offline). NULL: unknown or not needed. */
static cJSON *explain_ns_labels(const char *ns, const struct profiles *ps,
                                const struct select_hooks *hooks)
{
    cJSON *labels = NULL;

    for (size_t i = 0; i < ps->n; i++)
        if (profiles_ns_needs_labels(&ps->p[i])) {
            if (ns && *ns && hooks && hooks->namespace_labels &&
                hooks->namespace_labels(hooks->ctx, ns, &labels) != 0)
                labels = NULL;
            break;
        }
    return labels;
}

void explain_selection(struct trace *t, const cJSON *spec, const char *ns,
                       const struct select_job *job, const struct profiles *ps,
                       const struct select_hooks *hooks, const struct select_result *sel)
{
    struct explain_ctx e = {.t = t, .spec = spec, .ns = ns ? ns : "", .job = job, .sel = sel};
    cJSON *node = NULL, *ns_labels = NULL, *hosts[SELECT_HOSTS_MAX] = {NULL};

    podjson_init(&e.r);
    if (sel->rule == SELECT_OTHER_JOBS) {
        trace_add(t,
                  "no profile: the annotation " SELECT_ANNOTATION_PROFILE " names \"%s\", "
                  "limited by match.jobKinds or match.runtimes to other jobs than the pod's "
                  "(rule other-jobs; nothing is added)",
                  sel->other_namespaces ? sel->other_namespaces->name : "?");
        return;
    }
    if (sel->rule == SELECT_OTHER_NAMESPACES) {
        trace_add(t,
                  "no profile: the annotation " SELECT_ANNOTATION_PROFILE " names \"%s\", "
                  "limited by match.namespaces to other namespaces than \"%s\" (rule "
                  "other-namespaces; nothing is added)",
                  sel->other_namespaces ? sel->other_namespaces->name : "?", e.ns);
        return;
    }
    if (sel->rule == SELECT_BY_ANNOTATION || sel->rule == SELECT_UNKNOWN_NAME) {
        if (sel->profile)
            trace_add(t, "profile \"%s\": chosen by annotation " SELECT_ANNOTATION_PROFILE,
                      sel->profile->name);
        else
            trace_add(t,
                      "no profile: the annotation " SELECT_ANNOTATION_PROFILE " names \"%s\", "
                      "which is no profile (rule unknown-name; nothing is added)",
                      sel->unknown_name);
        for (size_t i = 0; i < ps->n; i++)
            if (&ps->p[i] != sel->profile)
                trace_add(t, "profile \"%s\": the annotation names another profile", ps->p[i].name);
        return;
    }
    e.node_name = podjson_str(&e.r, spec, "nodeName");
    if (e.node_name && *e.node_name && hooks && hooks->node_labels && !sel->node_lookup_failed &&
        hooks->node_labels(hooks->ctx, e.node_name, &node) == 0 && node) {
        e.node = e.nodes[e.n_nodes++] = node;
        e.known = 1;
    }
    e.hosts = hosts;
    explain_hosts_read(&e, hooks);
    explain_constraints(&e);
    e.ns_labels = ns_labels = explain_ns_labels(e.ns, ps, hooks);
    if (sel->namespace_lookup_failed)
        trace_add(t,
                  "namespace \"%s\": its labels could not be read, and a profile's "
                  "match.namespaces selector needs them: no rule from where that profile "
                  "could have won",
                  e.ns);
    if (sel->profile)
        trace_add(t, "profile \"%s\": chosen by rule %s", sel->profile->name,
                  select_rule_name(sel->rule));
    else if (sel->tie_spans_types)
        trace_add(t, "no profile: the pod's node constraints allow several node types, and the "
                     "GPU count or a default does not choose one for it (rule none; nothing is "
                     "added)");
    else
        trace_add(t, "no profile: no rule chose one (rule none; nothing is added)");
    t->indent++;
    for (size_t i = 0; i < ps->n; i++)
        explain_profile(&e, &ps->p[i]);
    t->indent--;
    cJSON_Delete(node);
    for (size_t i = 0; i < SELECT_HOSTS_MAX; i++)
        cJSON_Delete(hosts[i]);
    cJSON_Delete(ns_labels);
}
