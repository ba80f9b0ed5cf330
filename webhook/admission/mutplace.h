/* mutplace: where a target pod runs and what it asks of its node: the
 * profile's RDMA resources on the first target container with InfiniBand on
 * (unless a container asks for a resource under the same prefix already),
 * the profile's schedulerName (the pod's own, other than default-scheduler,
 * kept with a warning), and the pin: a profile chosen by GPU count or as the
 * default puts its nodeLabels in spec.nodeSelector, with a warning that says
 * so. A pod bound to a node, or whose hostname names Nodes of unknown
 * labels, is never pinned.
 */
#ifndef RDMA_WEBHOOK_MUTPLACE_H
#define RDMA_WEBHOOK_MUTPLACE_H

struct cJSON;
struct mutate_ctx;

/* The RDMA device for container c, at cpath. */
void mutplace_resources(struct mutate_ctx *m, const struct cJSON *c, const char *cpath);

/* spec.schedulerName, as the profile asks. */
void mutplace_scheduler(struct mutate_ctx *m);

/* spec.nodeSelector, as the profile's pin asks; sets the result's pinned. */
void mutplace_pin(struct mutate_ctx *m);

#endif
