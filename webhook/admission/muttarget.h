/* muttarget: whether mutate works on a pod, said in the trace and warned
 * about: the pod a target, opted out or not (target.h), a job's replica
 * template always; its target containers (none: a warning, nothing added);
 * and the inject annotation or label that does nothing, on the pod or, where
 * its labels are read anyway, on its Namespace (never a lookup of its own).
 *
 * A pod that is not a target is never written to, warnings included.
 */
#ifndef RDMA_WEBHOOK_MUTTARGET_H
#define RDMA_WEBHOOK_MUTTARGET_H

struct mutate_ctx;

/* 1 when the pod is a target; else sets the result's reason (not a target,
 * opted out). */
int muttarget_pod(struct mutate_ctx *m);

/* 1 when the pod has a target container; else the reason and a warning. */
int muttarget_containers(struct mutate_ctx *m);

/* Warns about the Namespace's inject label that is no word of the
 * vocabulary, when the hooks can read its labels. */
void muttarget_ns_inject(struct mutate_ctx *m);

#endif
