/* mutns: the labels of the pod's Namespace, asked of the hook once per
 * admission whoever asks first (select, Pod Security, report mode, the inject
 * label), and the select hooks that route select's questions through that
 * one answer. The labels are the context's (mutate_ctx.ns_labels), freed by
 * mutate_object().
 */
#ifndef RDMA_WEBHOOK_MUTNS_H
#define RDMA_WEBHOOK_MUTNS_H

struct cJSON;
struct mutate_ctx;

/* The labels of the pod's Namespace, asked of the hook once per call; ERR_OK,
 * or ERR_FAIL when they cannot be had. */
int mutns_labels(struct mutate_ctx *m, const struct cJSON **labels);
/* Points m->select at m's hooks, the pod's Namespace asked once; nothing
 * without hooks. */
void mutns_select_hooks(struct mutate_ctx *m);

#endif
