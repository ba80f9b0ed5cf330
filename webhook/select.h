/* select: which profile applies to a pod (SPEC 1.3), first rule that hits:
 *   1. the annotation rdma-webhook.io/profile (an unknown name selects nothing);
 *   2. node labels the pod demands (spec.nodeSelector and required node
 *      affinity) against each profile's match.nodeLabels; for a pod that
 *      already has spec.nodeName, that Node's labels (through a hook);
 *   3. the pod's GPU count against each profile's match.gpus;
 *   4. the profile marked default.
 * Profiles are tried in file order within a rule.
 */
#ifndef RDMA_WEBHOOK_SELECT_H
#define RDMA_WEBHOOK_SELECT_H

struct cJSON;
struct podjson;
struct profile;
struct profiles;

#define SELECT_ANNOTATION_PROFILE "rdma-webhook.io/profile"

/* Where the API lookups plug in. A NULL function means "not available". */
struct select_hooks {
    /* Gives the labels of Node name as a new cJSON object (the caller frees
     * it) and returns 0, or returns -1 when they cannot be had. */
    int (*node_labels)(void *ctx, const char *name, struct cJSON **labels);
    void *ctx;
};

enum select_rule {
    SELECT_BY_ANNOTATION,
    SELECT_BY_NODE_SELECTOR,
    SELECT_BY_NODE,
    SELECT_BY_GPUS,
    SELECT_BY_DEFAULT,
    SELECT_NONE,
    SELECT_UNKNOWN_NAME, /* the annotation names no profile */
};

struct select_result {
    const struct profile *profile; /* NULL for SELECT_NONE and SELECT_UNKNOWN_NAME */
    enum select_rule rule;
    long long gpus;           /* the pod's GPU count */
    const char *unknown_name; /* the annotation's value, for SELECT_UNKNOWN_NAME */
    int node_lookup_failed;   /* spec.nodeName was set but its labels could not be read */
};

void select_profile(struct podjson *r, const struct cJSON *metadata, const struct cJSON *spec,
                    const struct profiles *ps, const struct select_hooks *hooks,
                    struct select_result *out);

const char *select_rule_name(enum select_rule rule);

#endif
