/* select: which profile applies to a pod (docs/profiles.md "How a profile is chosen"). First hit
 * wins; none of them guesses between profiles:
 *   1. the annotation rdma-webhook.io/profile (an unknown name selects nothing);
 *   2. node labels. The pod's node constraints are its spec.nodeSelector, its
 *      required node affinity and, for a pod with spec.nodeName, that Node's
 *      labels (through a hook). They are consistent with a profile that has
 *      match.nodeLabels when a node carrying those labels could meet them
 *      (labels the profile does not name could be anything), and they name it
 *      when they require one of its keys: nodeSelector sets it, or every
 *      required term has In, Exists, Gt or Lt on it, or the Node is known.
 *      Without spec.nodeName, a kubernetes.io/hostname constraint (the
 *      nodeSelector's, or In in every required term) names Nodes: their
 *      labels are read the same way (struct select_hosts), and the pod's
 *      nodes are those of them its constraints admit. Consistent with p then
 *      means one of those carries p's labels. When the hosts cannot be told
 *      (a lookup fails, the Node of that name has another hostname label,
 *      more than SELECT_HOSTS_MAX names, hostnames in only some terms) the
 *      profile is chosen from the pod alone and hosts.state says so: mutate
 *      never pins then, as the hosts might be of another type.
 *      The rule chooses the one profile with nodeLabels that the constraints
 *      are consistent with, when they name it. Consistent with several (In
 *      [H100, A100], or a label they share), one of them named: ambiguous,
 *      nothing from this rule, and the tie lists them. When the pod's
 *      required affinity demands a label that two of them set to
 *      different values, and allows both (In [H100, A100], Exists), the
 *      pod has chosen several node types itself: nothing from rules 3 and
 *      4 either (tie_spans_types), so nothing is pinned over its choice.
 *      So too when the Nodes it names by hostname are of several types
 *      (one carries a found profile's labels, another does not);
 *   3. the pod's GPU count, against match.gpus of the profiles the
 *      constraints do not exclude (a profile with nodeLabels they are not
 *      consistent with; one without nodeLabels is never excluded). More than
 *      one: ambiguous, nothing from this rule;
 *   4. the profile marked default, unless the constraints exclude it.
 * profiles_parse() refuses match rules that could never win here.
 *
 * Profiles limited to job kinds or TrainJob runtimes (match.jobKinds,
 * match.runtimes) are limited the same way, by the pod's job (struct
 * select_job): no candidate for a pod of another job, the annotation naming
 * one selects nothing (SELECT_OTHER_JOBS), and at rules 2 and 3 one covers
 * a candidate with fewer kinds of limits (profiles_limits_cover) whose
 * nodeLabels include its own; at rule 4 a limited default comes first.
 *
 * Profiles limited to namespaces (match.namespaces, profiles.h): one the
 * pod's namespace is not in is no candidate for any rule, and the
 * annotation naming it selects nothing (SELECT_OTHER_NAMESPACES). At rules
 * 2 and 3 the candidates limited to the pod's namespace are preferred: one
 * covers each cluster-wide candidate of the same rule whose nodeLabels
 * include all of its own (the same nodes, or some of them), which then
 * drops out, and a pod that names the covered one names it. Cluster-wide
 * candidates of other nodes stay, so a team profile never settles what the
 * cluster-wide ones leave ambiguous. At rule 4 the default limited to the
 * namespace comes first, then the cluster-wide one. The preference is per
 * rule, not a pass over the limited profiles first: a limited profile only
 * takes the place of one the same rule would choose, so a team's default
 * never beats the cluster's node-label match (which carries its nodes'
 * HCAs). The Namespace's labels, for selectors, come from the hook, asked
 * at most once and only for a profile with a selector that a rule meets.
 * When they cannot be had, the first rule such a profile could change
 * (rule 2: it fits the constraints, and it or another found there is
 * named; rule 3: it has the count and is not excluded; rule 4: it is a
 * default not excluded), and every rule after it, decides nothing, and
 * namespace_lookup_failed is set.
 */
#ifndef RDMA_WEBHOOK_SELECT_H
#define RDMA_WEBHOOK_SELECT_H

#include <stddef.h>

struct cJSON;
struct podjson;
struct profiles_entry;
struct profiles;

#define SELECT_ANNOTATION_PROFILE "rdma-webhook.io/profile"
/* Profiles a tie keeps by name (it counts all of them). */
#define SELECT_TIE_LISTED 4

/* Where the API lookups plug in. A NULL function means "not available".
 * No message comes back from a hook: the admission only tells whether the
 * labels could be had (a warning on the pod says they could not), and the
 * hook's owner, which knows why, says so where it must (lookups logs and
 * counts each failed call). */
struct select_hooks {
    /* Gives the labels of Node name as a new cJSON object (the caller frees
     * it) and returns ERR_OK, or returns ERR_FAIL or ERR_NOMEM (err.h) when
     * they cannot be had. */
    int (*node_labels)(void *ctx, const char *name, struct cJSON **labels);
    /* The same for the labels of Namespace name: serve asks the API
     * (cached), the offline `mutate` answers with --namespace-labels. */
    int (*namespace_labels)(void *ctx, const char *name, struct cJSON **labels);
    void *ctx;
};

/* Names a hostname constraint may give that are looked up; past that, the
 * hosts are unknown (each lookup takes from the admission's API budget). */
#define SELECT_HOSTS_MAX 8

enum select_hosts_state {
    SELECT_HOSTS_NONE,    /* no hostname constraint, or spec.nodeName is set */
    SELECT_HOSTS_KNOWN,   /* every named Node read: their labels decided */
    SELECT_HOSTS_UNKNOWN, /* they could not be told: chosen from the pod alone, never pinned */
};

/* Why the hosts are unknown. */
enum select_hosts_why {
    SELECT_HOSTS_UNREAD,         /* a lookup failed, or no Node has that name */
    SELECT_HOSTS_NO_API,         /* no Node lookups here (offline `mutate`) */
    SELECT_HOSTS_OTHER_HOSTNAME, /* the Node of that name has another hostname label */
    SELECT_HOSTS_TOO_MANY,       /* more than SELECT_HOSTS_MAX names: none looked up */
    SELECT_HOSTS_SOME_TERMS,     /* a required term names no host: none looked up */
};

/* The Nodes a kubernetes.io/hostname constraint names. A Node's name is
 * normally its hostname label: each is looked up by name, and counts only
 * when its own kubernetes.io/hostname label is that name. */
struct select_hosts {
    enum select_hosts_state state;
    enum select_hosts_why why;          /* for SELECT_HOSTS_UNKNOWN */
    const char *name[SELECT_HOSTS_MAX]; /* distinct, in the pod's order (the pod's memory) */
    size_t n;                           /* names kept in name[] */
    const char *unknown;                /* UNREAD, OTHER_HOSTNAME: the first such name */
    unsigned kept; /* KNOWN: bit i, name[i]'s Node meets the pod's other constraints */
};

enum select_rule {
    SELECT_BY_ANNOTATION,
    SELECT_BY_NODE_LABELS, /* the pod's nodeSelector and required affinity */
    SELECT_BY_NODE,        /* the labels of the Node in spec.nodeName, or of hostnames' */
    SELECT_BY_GPUS,
    SELECT_BY_DEFAULT,
    SELECT_NONE,
    SELECT_UNKNOWN_NAME,     /* the annotation names no profile */
    SELECT_OTHER_NAMESPACES, /* the annotation names a profile of other namespaces */
    SELECT_OTHER_JOBS,       /* the annotation names a profile of other job kinds or runtimes */
};

/* The profiles one rule found and could not choose between. */
struct select_tie {
    const struct profiles_entry *p[SELECT_TIE_LISTED]; /* the first ones, in file order */
    size_t n;                                          /* how many; 2 or more is a tie */
};

struct select_result {
    const struct profiles_entry *profile; /* NULL for SELECT_NONE and SELECT_UNKNOWN_NAME */
    enum select_rule rule;
    long long gpus;           /* the pod's GPU count */
    const char *unknown_name; /* the annotation's value, for SELECT_UNKNOWN_NAME */
    int node_lookup_failed;   /* spec.nodeName was set but its labels could not be read */
    /* The Namespace's labels could not be read and a profile with a
     * selector could have won: no profile. */
    int namespace_lookup_failed;
    /* For SELECT_OTHER_NAMESPACES and SELECT_OTHER_JOBS: the profile the
     * annotation names. */
    const struct profiles_entry *other_namespaces;
    struct select_tie tie_labels; /* rule 2 was ambiguous when n >= 2 */
    /* Rule 2's tie is the pod's own choice of several node types (In
     * [H100, A100]): rules 3 and 4 were not tried. */
    int tie_spans_types;
    struct select_tie tie_gpus; /* rule 3 was ambiguous when n >= 2 */
    struct select_hosts hosts;  /* what a hostname constraint named, and was read */
};

/* The pod's job as match.jobKinds and match.runtimes read it. */
struct select_job {
    unsigned kind;       /* enum mutate_job_kind (mutate.h); 0: no job */
    const char *runtime; /* a TrainJob's spec.runtimeRef.name; NULL: none or unknown */
};

/* ns: the pod's namespace (the AdmissionReview's request.namespace). job:
 * the job it belongs to; NULL: none (select_profile), so a profile limited
 * by match.jobKinds or match.runtimes is never a candidate. */
void select_profile_job(struct podjson *r, const struct cJSON *metadata, const struct cJSON *spec,
                        const char *ns, const struct select_job *job, const struct profiles *ps,
                        const struct select_hooks *hooks, struct select_result *out);
void select_profile(struct podjson *r, const struct cJSON *metadata, const struct cJSON *spec,
                    const char *ns, const struct profiles *ps, const struct select_hooks *hooks,
                    struct select_result *out);

/* 1 when limited, a profile limited to namespaces, takes the place of the
 * cluster-wide wide wherever a rule finds both: wide's nodeLabels include
 * all of limited's (the preference above). */
int select_covers(const struct profiles_entry *limited, const struct profiles_entry *wide);

/* "annotation", "node-labels", "node", "gpus", "default", "none",
 * "unknown-name", "other-namespaces": the values of the rdma-webhook.io/selected-by annotation
 * (the first five) and of the log line's selected_by. */
const char *select_rule_name(enum select_rule rule);

/* ---- for `mutate --explain` (explain.h), never on serve's path ---- */

/* What makes the pod's node constraints inconsistent with a profile, in the
 * order select_profile() checks them. */
enum select_clash {
    SELECT_CLASH_NONE,
    SELECT_CLASH_NODE,     /* the Node's labels lack one of p's, or differ (key NULL: the
                            * hostnames' several Nodes, none of which has all of them) */
    SELECT_CLASH_SELECTOR, /* spec.nodeSelector sets one of p's keys otherwise */
    SELECT_CLASH_AFFINITY, /* no required node affinity term fits p */
};

/* How one profile stands against the pod's node constraints, as rules 2 to
 * 4 judge it (select_profile() is left as it is). */
struct select_fit {
    int fits;  /* consistent; always for a profile without nodeLabels */
    int names; /* and the constraints name it */
    enum select_clash clash;
    const char *key;  /* the profile's label at fault (NODE, SELECTOR, AFFINITY) */
    const char *want; /* its value in the profile */
    const char *have; /* the Node's or nodeSelector's value; NULL: the Node lacks it */
    /* AFFINITY: the failing requirement of the first term that can match a
     * node, and that term's index; NULL when no term can (all are empty). */
    const struct cJSON *expr;
    int term;
};

/* Judges p against spec's nodeSelector and required node affinity and the
 * labels of the pod's Nodes as the hook gave them (n of them: spec.nodeName's,
 * or the hostnames' that select_hosts.kept keeps; known 0: unknown), without
 * calling any hook. Reads through r, which records a field of the wrong type
 * as select_profile() would. */
void select_fit_profile(struct podjson *r, const struct cJSON *spec,
                        const struct cJSON *const *nodes, size_t n, int known,
                        const struct profiles_entry *p, struct select_fit *out);

#endif
