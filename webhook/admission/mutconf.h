/* mutconf: /etc/nccl.conf for the ranks mpirun starts over ssh
 * (docs/profiles.md "NCCL settings for ranks started over ssh").
 *
 * sshd passes no container environment on, so the NCCL variables mutenv
 * adds never reach a rank mpirun starts on a worker; NCCL also reads
 * /etc/nccl.conf, after the environment and NCCL_CONF_FILE (or
 * ~/.nccl.conf), each line applied without overwriting. With the profile's
 * ncclConf on (true, or "auto" for a pod whose ranks may be started over
 * ssh: mutate_job.ssh_ranks) each regular target container that keeps
 * InfiniBand on gets its final NCCL environment as NAME=VALUE lines: the
 * user's literal NCCL_* values and the variables mutenv added. Left out, and
 * said in the trace: valueFrom and envFrom variables (their values are not
 * the webhook's to know), NCCL_CONF_FILE (NCCL reads it from the environment
 * only), and values that the file cannot carry as the environment does (a
 * newline, a $(VAR) the kubelet expands, more than the MUTCONF_VALUE_MAX
 * bytes NCCL keeps).
 *
 * Each distinct content is one pod annotation (MUTCONF_ANNOTATION, then
 * MUTCONF_ANNOTATION-1, ...), one item of the downwardAPI volume
 * MUTCONF_VOLUME that projects it (nccl.conf, nccl-1.conf, ...), and the
 * container mounts its item read-only with subPath at MUTCONF_FILE. A
 * container that mounts something at MUTCONF_FILE or /etc, or a pod with a
 * volume of that name that is not this module's, gets no file and a warning;
 * so does a container past the bounds below, or a pod past MUTCONF_FILES_MAX.
 * A second admission adds nothing: a container with the mount, or a pod with
 * the volume, is left as it is.
 */
#ifndef RDMA_WEBHOOK_MUTCONF_H
#define RDMA_WEBHOOK_MUTCONF_H

#include "admission/mutate_ctx.h"

#define MUTCONF_ANNOTATION "rdma-webhook.io/nccl-conf"
#define MUTCONF_VOLUME     "rdma-webhook-nccl-conf"
#define MUTCONF_FILE       "/etc/nccl.conf"
/* What NCCL keeps of a value read from its file (setEnvFile's buffer less
 * the NUL): a longer one would be cut, so it is left out. */
#define MUTCONF_VALUE_MAX 1023
/* One file's bytes, and the distinct files of a pod: the annotations share
 * the apiserver's 256 KiB with the pod's others. */
#define MUTCONF_TEXT_MAX  (16u * 1024u)
#define MUTCONF_FILES_MAX 8
/* The container's own NCCL_* env entries read (NCCL has fewer variables). */
#define MUTCONF_VARS_MAX 256

/* Once per pod, before the containers: whether the file is on (the
 * profile's ncclConf, the job), and whether the pod's volumes allow it. */
void mutconf_plan(struct mutate_ctx *m);

/* A regular target container that keeps InfiniBand on, after
 * mutenv_container(): its content, and the mount of its item. mounts: as
 * mutvol_add_mount() takes it. */
void mutconf_container(struct mutate_ctx *m, const struct cJSON *c, const char *cpath,
                       const char *cname, int *mounts);

/* Once the containers are done: the annotations and the volume, when a
 * container got a file; the warning when the pod's volume is in the way. */
void mutconf_pod(struct mutate_ctx *m);

#endif
