/* mutcaps: IPC_LOCK for a target container (docs/profiles.md), as the
 * cluster lets it be added.
 *
 * Added to securityContext.capabilities.add unless the user has it, or the
 * container's InfiniBand is off; left out, with no warning, by any of the
 * admins' three switches (--ipc-lock=never, the namespace label
 * MUTATE_LABEL_IPC_LOCK=false, the profile's ipcLock: false); left out with
 * a warning where the namespace's Pod Security enforce level forbids it or
 * its labels cannot be read, and added with one where warn or audit will
 * report it (podsec.h), the pod's exemptions (podsec_config) honoured. A
 * container that runs as non-root is warned that the capability may not be
 * enough. The plan is made once per pod (mutcaps_podsec_plan), the Namespace
 * read at most once (mutns_labels).
 */
#ifndef RDMA_WEBHOOK_MUTCAPS_H
#define RDMA_WEBHOOK_MUTCAPS_H

#include "admission/mutate_ctx.h"

/* Adds IPC_LOCK, creating securityContext, capabilities and add as needed,
 * since an "add" under a missing parent fails in the apiserver. Where it
 * would do nothing (a non-root container) or Pod Security forbids adding
 * it, the container keeps what it has; it may need the node's memlock limit
 * instead, which the warning says. */
void mutcaps_ipc_lock(struct mutate_ctx *m, const struct cJSON *c, const char *cpath,
                      const char *cname);

/* Decided once, when the first container would get IPC_LOCK. Without the
 * hook (no API) it is added as ever. With it, labels that cannot be read
 * leave IPC_LOCK out: if enforce were baseline or restricted, or the
 * namespace's MUTATE_LABEL_IPC_LOCK said false, the pod would be rejected
 * after this webhook (for a PyTorchJob: never created), while without
 * IPC_LOCK it runs, NCCL needing the node's memlock limit at worst. The
 * label is read before the exemptions: they are Pod Security's, while the
 * label stands for the namespace's other policies. */
enum mutate_podsec mutcaps_podsec_plan(struct mutate_ctx *m);

/* A non-zero runAsUser, else runAsNonRoot: true, the container's setting
 * over the pod's. runAsNonRoot alone counts: the kubelet refuses to start
 * such a container when its image's user is 0 (or not numeric), so it runs
 * as non-root or not at all. */
int mutcaps_runs_as_non_root(struct mutate_ctx *m, const struct cJSON *sc);

#endif
