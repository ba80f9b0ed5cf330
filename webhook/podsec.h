/* podsec: what Pod Security admission will make of a capability the webhook
 * adds, read from the namespace's pod-security.kubernetes.io labels as
 * k8s.io/pod-security-admission reads them (api.PolicyToEvaluate):
 *   - each mode (enforce, warn, audit) has a level: privileged, baseline or
 *     restricted, compared case-sensitively;
 *   - a mode without its label is privileged (the PodSecurity admission
 *     configuration's default; a cluster that configures another default is
 *     not seen from here);
 *   - a value that is not a level reads as restricted for enforce, and as
 *     privileged for warn and audit ("fail open"), and is kept for the
 *     warning that says so. (PodSecurity refuses such a label on a namespace
 *     create or update, so it only lingers from before PodSecurity ran.)
 * The -version labels are not read: whether a level allows adding a
 * capability is the same at every version for the ones asked about here
 * (baseline's default set since v1.0, which restricted includes; restricted
 * allows only NET_BIND_SERVICE since v1.22), and podsec_allows_add answers
 * for the latest.
 */
#ifndef RDMA_WEBHOOK_PODSEC_H
#define RDMA_WEBHOOK_PODSEC_H

struct cJSON;

#define PODSEC_LABEL_ENFORCE "pod-security.kubernetes.io/enforce"
#define PODSEC_LABEL_WARN    "pod-security.kubernetes.io/warn"
#define PODSEC_LABEL_AUDIT   "pod-security.kubernetes.io/audit"

enum podsec_level { PODSEC_PRIVILEGED, PODSEC_BASELINE, PODSEC_RESTRICTED };

enum podsec_mode { PODSEC_ENFORCE, PODSEC_WARN, PODSEC_AUDIT, PODSEC_MODES };

struct podsec_policy {
    enum podsec_level level[PODSEC_MODES];
    /* The label's value when it is not a level (and level[] holds what
     * PodSecurity reads instead), else NULL. Points into the labels. */
    const char *invalid[PODSEC_MODES];
};

/* labels: the namespace's labels (an object of strings), or NULL for none. */
void podsec_read(const struct cJSON *labels, struct podsec_policy *out);

/* 1 when a pod with capability cap (as written in capabilities.add) added
 * to a container passes level's capability checks. */
int podsec_allows_add(enum podsec_level level, const char *cap);

/* "privileged", "baseline", "restricted". */
const char *podsec_level_name(enum podsec_level level);

#endif
