/* mutvol: the pod's volumes and its containers' mounts: the memory-backed
 * /dev/shm a target container gets (docs/profiles.md), and the volume and
 * mount helpers that run-time detection (mutdetect) adds its own with.
 *
 * /dev/shm: one emptyDir (medium Memory, the profile's sizeLimit) named
 * MUTVOL_SHM_VOLUME, or MUTVOL_SHM_VOLUME-i for the first i the pod does not
 * use, added once per pod and mounted in each target container that mounts
 * nothing at /dev/shm already (paths compared as the kubelet cleans them). A
 * pod that uses every name gets none, with a warning. The volumes array is
 * made by the first add and appended to after (mutpath_append_begin).
 */
#ifndef RDMA_WEBHOOK_MUTVOL_H
#define RDMA_WEBHOOK_MUTVOL_H

#include "admission/mutate_ctx.h"

/* 1 when the pod has a volume of that name. */
int mutvol_exists(struct mutate_ctx *m, const char *name);

/* spec.volumes, for mutpath_append_begin(). */
int mutvol_begin(struct mutate_ctx *m);

/* The container's mount at mount_path, or NULL. */
const struct cJSON *mutvol_mount_at(struct mutate_ctx *m, const struct cJSON *c,
                                    const char *mount_path);

/* Appends {name, mountPath[, subPath][, readOnly]} to the container's mounts. */
void mutvol_add_mount(struct mutate_ctx *m, const char *cpath, int *mounts, const char *volume,
                      const char *mount_path, const char *sub_path, int read_only);

/* Mounts /dev/shm in a target container (the volume added first, once per
 * pod). mounts: whether the container's volumeMounts exists
 * (mutpath_append_begin). */
void mutvol_shm(struct mutate_ctx *m, const struct cJSON *c, const char *cpath, int *mounts);

#endif
