/* podsec: what Pod Security admission will make of a capability the webhook
 * adds, read from the namespace's pod-security.kubernetes.io labels as
 * k8s.io/pod-security-admission reads them (api.PolicyToEvaluate):
 *   - each mode (enforce, warn, audit) has a level: privileged, baseline or
 *     restricted, compared case-sensitively;
 *   - a mode without its label has the cluster's default level: privileged,
 *     unless the PodSecurity admission configuration says otherwise
 *     (serve --pod-security-config, podsecconf.h);
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

/* labels: the namespace's labels (an object of strings), or NULL for none.
 * defaults: the level of each mode without its label (podsec_config's), or
 * NULL for privileged. */
void podsec_read(const struct cJSON *labels, const enum podsec_level *defaults,
                 struct podsec_policy *out);

/* ERR_OK with *level for "privileged", "baseline" or "restricted" (compared
 * case-sensitively, as api.ParseLevel does), ERR_FAIL for anything else (no
 * message: the caller names the field). */
int podsec_level_parse(const char *s, enum podsec_level *level);

/* 1 when a pod with capability cap (as written in capabilities.add) added
 * to a container passes level's capability checks. */
int podsec_allows_add(enum podsec_level level, const char *cap);

/* What the cluster's PodSecurity admission plugin is configured with
 * (PodSecurityConfiguration; podsecconf.h reads it from a file): the level of
 * each mode whose label is absent, and who is never evaluated. */
struct podsec_config {
    enum podsec_level defaults[PODSEC_MODES];
    /* Arrays of strings, or NULL for none; owned by whoever filled them. */
    const struct cJSON *namespaces, *usernames, *runtime_classes;
};

/* Why Pod Security does not evaluate a pod at all, or NULL when it does:
 * "namespace", "user" or "runtimeClass" (the exemption that applies; the
 * apiserver checks them in that order). c NULL: no exemptions. Any other
 * argument may be NULL (unknown: not exempt by it). */
const char *podsec_exempt(const struct podsec_config *c, const char *ns, const char *user,
                          const char *runtime_class);

/* "privileged", "baseline", "restricted". */
const char *podsec_level_name(enum podsec_level level);

#endif
