/* select: which profile applies to a pod (SPEC 1.3). The rules, first hit
 * wins; none of them guesses between profiles:
 *   1. the annotation rdma-webhook.io/profile (an unknown name selects nothing);
 *   2. node labels. The pod's node constraints are its spec.nodeSelector, its
 *      required node affinity and, for a pod with spec.nodeName, that Node's
 *      labels (through a hook). They are consistent with a profile that has
 *      match.nodeLabels when a node carrying those labels could meet them
 *      (labels the profile does not name could be anything), and they name it
 *      when they require one of its keys: nodeSelector sets it, or every
 *      required term has In, Exists, Gt or Lt on it, or the Node is known.
 *      The rule chooses the one profile with nodeLabels that the constraints
 *      are consistent with, when they name it. Consistent with several (In
 *      [H100, A100], or a label they share), one of them named: ambiguous,
 *      nothing from this rule, and the tie lists them;
 *   3. the pod's GPU count, against match.gpus of the profiles the
 *      constraints do not exclude (a profile with nodeLabels they are not
 *      consistent with; one without nodeLabels is never excluded). More than
 *      one: ambiguous, nothing from this rule;
 *   4. the profile marked default, unless the constraints exclude it.
 * profiles_parse() refuses match rules that could never win here.
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

/* Where the API lookups plug in. A NULL function means "not available". */
struct select_hooks {
    /* Gives the labels of Node name as a new cJSON object (the caller frees
     * it) and returns 0, or returns -1 when they cannot be had. */
    int (*node_labels)(void *ctx, const char *name, struct cJSON **labels);
    /* The same for the labels of Namespace name: serve asks the API
     * (cached), the offline `mutate` answers with --namespace-labels. */
    int (*namespace_labels)(void *ctx, const char *name, struct cJSON **labels);
    void *ctx;
};

enum select_rule {
    SELECT_BY_ANNOTATION,
    SELECT_BY_NODE_LABELS, /* the pod's nodeSelector and required affinity */
    SELECT_BY_NODE,        /* the labels of the Node in spec.nodeName */
    SELECT_BY_GPUS,
    SELECT_BY_DEFAULT,
    SELECT_NONE,
    SELECT_UNKNOWN_NAME, /* the annotation names no profile */
};

/* The profiles one rule found and could not choose between. */
struct select_tie {
    const struct profiles_entry *p[SELECT_TIE_LISTED]; /* the first ones, in file order */
    size_t n;                                          /* how many; 2 or more is a tie */
};

struct select_result {
    const struct profiles_entry *profile; /* NULL for SELECT_NONE and SELECT_UNKNOWN_NAME */
    enum select_rule rule;
    long long gpus;               /* the pod's GPU count */
    const char *unknown_name;     /* the annotation's value, for SELECT_UNKNOWN_NAME */
    int node_lookup_failed;       /* spec.nodeName was set but its labels could not be read */
    struct select_tie tie_labels; /* rule 2 was ambiguous when n >= 2 */
    struct select_tie tie_gpus;   /* rule 3 was ambiguous when n >= 2 */
};

void select_profile(struct podjson *r, const struct cJSON *metadata, const struct cJSON *spec,
                    const struct profiles *ps, const struct select_hooks *hooks,
                    struct select_result *out);

/* "annotation", "node-labels", "node", "gpus", "default", "none",
 * "unknown-name": the values of the rdma-webhook.io/selected-by annotation
 * (the first five) and of the log line's selected_by. */
const char *select_rule_name(enum select_rule rule);

/* ---- for `mutate --explain` (explain.h), never on serve's path ---- */

/* What makes the pod's node constraints inconsistent with a profile, in the
 * order select_profile() checks them. */
enum select_clash {
    SELECT_CLASH_NONE,
    SELECT_CLASH_NODE,     /* the Node's labels lack one of p's, or differ */
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

/* Judges p against spec's nodeSelector and required node affinity and
 * node_labels (the Node of spec.nodeName as the hook gave them; NULL:
 * unknown), without calling any hook. Reads through r, which records a
 * field of the wrong type as select_profile() would. */
void select_fit_profile(struct podjson *r, const struct cJSON *spec,
                        const struct cJSON *node_labels, const struct profiles_entry *p,
                        struct select_fit *out);

#endif
