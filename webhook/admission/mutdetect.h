/* mutdetect: run-time detection (mutate.h says what a pod gets): the init
 * container MUTATE_DETECT_CONTAINER running `rdma-webhook nccl-detect`, the
 * memory-backed volume it writes the file to, and each reading container's
 * mounts and NCCL_CONF_FILE.
 *
 * The plan is made once per pod (mutdetect_plan): off unless the profile
 * asks for detect and the webhook has a detect image, and off when the pod
 * has its own container or volume of a name detection adds. Each regular
 * target container with InfiniBand on reads the file unless it names its own
 * NCCL_CONF_FILE or mounts something else at MUTATE_DETECT_DIR
 * (mutdetect_container, a warning for each); once the containers are done,
 * mutdetect_pod adds the volume and the init container when one reads it,
 * and says why not otherwise. The init container is made to pass Pod
 * Security restricted (non-root, read-only, every capability dropped).
 */
#ifndef RDMA_WEBHOOK_MUTDETECT_H
#define RDMA_WEBHOOK_MUTDETECT_H

#include "admission/mutate_ctx.h"

/* Decides m->detect once per pod, before the containers: the profile asks,
 * the webhook has an image, and the pod has no object of a name it adds. */
void mutdetect_plan(struct mutate_ctx *m);

/* Whether a target container with InfiniBand on reads the detected file:
 * not when it names its own NCCL_CONF_FILE (in env, or in an envFrom
 * ConfigMap known to have it: NCCL 2.23+ reads that file instead, so the
 * container keeps the profile's static values), nor when it mounts
 * something else at MUTATE_DETECT_DIR. Each says so in a warning. An
 * NCCL_CONF_FILE and a mount that are the ones detection adds are no
 * obstacle (a second call). */
int mutdetect_container(struct mutate_ctx *m, const struct cJSON *c, const char *cname);

/* The detected file's mounts in a container that reads it, each unless its
 * path is a mount already: the directory, read through NCCL_CONF_FILE; and
 * in a root container the file at ~/.nccl.conf, where NCCL before 2.23 looks
 * (not under a mount of /root, where the mount point would be made on the
 * user's volume). */
void mutdetect_mounts(struct mutate_ctx *m, const struct cJSON *c, const char *cpath, int *mounts);

/* Once the containers are done: the volume and the init container when a
 * container reads the file; else, when one could have, why not. */
void mutdetect_pod(struct mutate_ctx *m);

#endif
