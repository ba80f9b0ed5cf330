/* mutenv: the NCCL variables a target container gets (docs/profiles.md).
 *
 * The profile's env as this pod gets it (hostNetworkEnv over env, and in a
 * hostNetwork pod without an override no NCCL_SOCKET_IFNAME), added to each
 * container in one operation per container, never over a value the user
 * declared: in env, or through an envFrom ConfigMap whose keys the lookups
 * could read (MUTENV_ENVFROM_MAX sources at most, each a warning when it
 * cannot be read). A container whose NCCL_IB_DISABLE NCCL reads as non-zero
 * gets none of the NCCL_IB_* variables; one that reads the detected file
 * (mutdetect) none of the detected ones. A user's value that NCCL would
 * misread is warned about, never changed.
 */
#ifndef RDMA_WEBHOOK_MUTENV_H
#define RDMA_WEBHOOK_MUTENV_H

#include "admission/mutate_ctx.h"

/* envFrom sources checked per container: each can cost an API call (within
 * the admission's budget) and a warning. Sources past them are not checked
 * (their keys lose to the profile's, as an unreadable source's do), and one
 * warning per container says so. */
#define MUTENV_ENVFROM_MAX 64

#define MUTENV_IB_DISABLE "NCCL_IB_DISABLE"

/* Which envFrom warnings a container has had: one per source, and one for
 * the sources past MUTENV_ENVFROM_MAX. */
struct mutenv_envfrom_warned {
    unsigned long long source; /* bit i: source i */
    int past_max;
};
_Static_assert(MUTENV_ENVFROM_MAX <= 64, "one bit of mutenv_envfrom_warned.source per source");

/* hostNetwork pods see the node's interfaces, where eth0 may be the wrong
 * NIC: there the profile's hostNetworkEnv replaces values, and without an
 * override NCCL_SOCKET_IFNAME is better left to NCCL than guessed. */
void mutenv_effective(struct mutate_ctx *m);

/* Appends the profile's variables the container does not declare; with
 * InfiniBand off (ib_off), none of its NCCL_IB_* variables; for a container
 * that reads the detected file (detected), none of the detected variables,
 * and NCCL_CONF_FILE unless it has it. */
void mutenv_container(struct mutate_ctx *m, const struct cJSON *c, const char *cpath,
                      const char *cname, int ib_off, int detected);

/* 1 when the container turns InfiniBand off: NCCL reads its NCCL_IB_DISABLE
 * as non-zero. The last env entry wins, as in the kubelet, then envFrom; a
 * valueFrom or a source that cannot be read leaves it on. value gets the
 * user's text. */
int mutenv_ib_off(struct mutate_ctx *m, const struct cJSON *c, char *value, size_t len);

/* Said once the containers are done: detection, when a container uses it,
 * finds the interface on the node instead. */
void mutenv_warn_host_network(struct mutate_ctx *m);

/* The last env entry named name (the one the kubelet uses), or NULL. */
const struct cJSON *mutenv_entry_named(struct mutate_ctx *m, const struct cJSON *env,
                                       const char *name);

/* The pod's value of one of the profile's variables; NULL when it has none. */
const char *mutenv_value(struct mutate_ctx *m, const char *name);

/* 1 when an envFrom ConfigMap of the container is known to declare name. An
 * unreadable source (every Secret, and ConfigMaps while the lookup is not
 * available) declares nothing but earns one warning, since the profile's
 * value, being in env, would silently win over it; so do the sources past
 * MUTENV_ENVFROM_MAX, which are not checked at all. */
int mutenv_envfrom_declares(struct mutate_ctx *m, const struct cJSON *envfrom, const char *name,
                            const char *cname, struct mutenv_envfrom_warned *warned);

#endif
