/* mutannot: the annotations mutate writes on a target pod, last, once every
 * warning is made: rdma-webhook.io/injected and .../selected-by when the
 * profile was applied, and .../warnings (mutate.h) when the pod got a warning
 * its value does not hold yet. The warnings value only grows, the pod's texts
 * first, so that the apiserver's reinvocation neither drops nor flaps it; it
 * stays under MUTATE_ANNOTATION_WARNINGS_MAX, a text that would not fit left
 * out whole (the log has it). metadata.annotations (and metadata) are made
 * when neither the pod nor an earlier operation (mutconf's) has them.
 */
#ifndef RDMA_WEBHOOK_MUTANNOT_H
#define RDMA_WEBHOOK_MUTANNOT_H

struct mutate_ctx;

/* Sets the annotation key=value of a pod that has metadata.annotations. */
void mutannot_one(struct mutate_ctx *m, const char *key, const char *value);

/* Sets the annotation key=value, making metadata.annotations (and metadata)
 * with it when neither the pod nor an earlier operation has
 * (mutate_ctx.annotations_made, which it sets). */
void mutannot_set(struct mutate_ctx *m, const char *key, const char *value);

/* The annotations, applied: whether the profile was applied. A pod left
 * alone but warned gets the warnings annotation only. */
void mutannot_finish(struct mutate_ctx *m, int applied);

#endif
