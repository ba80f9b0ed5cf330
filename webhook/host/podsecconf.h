/* podsecconf: the cluster's own configuration of the PodSecurity admission
 * plugin, as the kube-apiserver reads it from --admission-control-config-file,
 * so that the webhook decides about IPC_LOCK with the same defaults and
 * exemptions Pod Security will apply after it.
 *
 * The file (JSON or YAML, docs.h) is either
 *   - a PodSecurityConfiguration (pod-security.admission.config.k8s.io v1,
 *     v1beta1 or v1alpha1), or
 *   - an AdmissionConfiguration (apiserver.config.k8s.io/v1) whose plugin
 *     named PodSecurity has that object inline in "configuration", or in a
 *     file named by "path" (relative to the AdmissionConfiguration's
 *     directory, as the apiserver resolves it).
 * Read as k8s.io/pod-security-admission v0.37 reads it (admission/api/v1 and
 * validation): defaults.enforce, .warn and .audit are levels ("" or absent:
 * privileged); the *-version fields are "latest" or "v1.N" (checked, then
 * not used: podsec.h says why); exemptions.namespaces are namespace names,
 * .runtimeClasses DNS subdomains, .usernames non-empty strings, none twice.
 * A file the apiserver would refuse is refused, with the field at fault.
 * Unknown fields are ignored, as the apiserver's decoder ignores them.
 *
 * What it reads is a podsec_config (podsec.h, which decides with it); this
 * module owns the document its lists point into. Lifecycle:
 * podsecconf_init() gives the plugin's own defaults (privileged everywhere,
 * no exemptions), which podsecconf_free() can always undo;
 * podsecconf_load() replaces them only when the whole file is valid.
 */
#ifndef RDMA_WEBHOOK_PODSECCONF_H
#define RDMA_WEBHOOK_PODSECCONF_H

#include "admission/podsec.h"

#include <stddef.h>

struct cJSON;

/* The largest file read (an admission configuration is a few KiB), and the
 * most entries of one exemptions list (each is checked against those before
 * it for duplicates). */
#define PODSECCONF_MAX_BYTES   (1u << 20)
#define PODSECCONF_MAX_ENTRIES 4096

struct podsecconf {
    struct podsec_config cfg; /* its lists point into doc or inner */
    struct cJSON *doc;        /* the document read */
    struct cJSON *inner;      /* the file "path" named, when it did */
};

void podsecconf_init(struct podsecconf *c);
void podsecconf_free(struct podsecconf *c);

/* Reads path into c. ERR_OK; ERR_FAIL, ERR_TOO_BIG or ERR_NOMEM with the
 * file and field at fault in err, c unchanged. */
int podsecconf_load(struct podsecconf *c, const char *path, char *err, size_t errlen);

#endif
