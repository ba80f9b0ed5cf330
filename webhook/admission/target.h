/* target: which pods, and which of their containers, the webhook mutates
 * (docs/profiles.md "What the webhook does to a pod", steps 1 and 2).
 *
 * A pod is a target when it belongs to a PyTorchJob (controlling owner
 * reference, or the training-operator's label), when it opts in with the
 * annotation (or label) rdma-webhook.io/inject: "true", or when it belongs to
 * another job kind enabled in the profiles' "targets". The value "false"
 * always wins; the annotation wins over the label.
 *
 * One vocabulary, on pods and on namespaces alike: "true" and "false" (and
 * on a namespace "enabled", the older spelling of "true" under the opt-in
 * component). Any other value does nothing: the pod's is ignored (the label
 * decides where the annotation's is not a word of it), and
 * target_inject_ignored() names it so that the caller can say so.
 */
#ifndef RDMA_WEBHOOK_TARGET_H
#define RDMA_WEBHOOK_TARGET_H

#include <stddef.h>

struct cJSON;
struct podjson;
struct profiles;

#define TARGET_ANNOTATION_INJECT "rdma-webhook.io/inject"

enum target_verdict {
    TARGET_NO,        /* not a training pod */
    TARGET_OPTED_OUT, /* rdma-webhook.io/inject: "false" */
    TARGET_YES,
};

/* Judges a pod (or pod template) by its metadata. */
enum target_verdict target_pod(struct podjson *r, const struct cJSON *metadata,
                               unsigned target_bits);

/* target_pod(), and in *why a static phrase saying what decided it
 * ("its controlling owner is a PyTorchJob"), for `mutate --explain`. */
enum target_verdict target_pod_why(struct podjson *r, const struct cJSON *metadata,
                                   unsigned target_bits, const char **why);

/* 1 when the container asks (limits or requests) for a GPU resource or any
 * resource under the RDMA prefix. */
int target_container_wants_devices(struct podjson *r, const struct cJSON *container,
                                   const struct profiles *ps);

/* The resource that makes the container want devices, as
 * target_container_wants_devices() finds it (the first GPU resource, else the
 * first under the RDMA prefix), or NULL; for `mutate --explain`. */
const char *target_container_device(struct podjson *r, const struct cJSON *container,
                                    const struct profiles *ps);

/* Called for each container to mutate, with its index in the list. */
typedef void (*target_container_fn)(void *ctx, const struct cJSON *container, int idx);

/* The regular containers the webhook mutates (docs/profiles.md, step 2): those that ask for
 * a GPU or RDMA device; failing those, the first one named "pytorch" (the
 * training-operator's default). Calls fn (when not NULL) for each, in order,
 * and returns how many there are. */
size_t target_each_container(struct podjson *r, const struct cJSON *containers,
                             const struct profiles *ps, target_container_fn fn, void *ctx);

/* The pod's value of TARGET_ANNOTATION_INJECT that does nothing (neither
 * "true" nor "false"), the annotation's first, or NULL; *where is
 * "annotation" or "label". */
const char *target_inject_ignored(struct podjson *r, const struct cJSON *metadata,
                                  const char **where);

/* 1 when a Namespace's TARGET_ANNOTATION_INJECT label value means something
 * ("true", "false", "enabled"), 0 for any other (NULL: no label, 1). */
int target_namespace_inject_known(const char *value);

/* 1 when the container asks for any resource whose name starts with prefix. */
int target_container_asks_prefix(struct podjson *r, const struct cJSON *container,
                                 const char *prefix, size_t prefix_len);

/* Sum of the GPU limits (requests where no limit) of the regular containers. */
long long target_pod_gpus(struct podjson *r, const struct cJSON *spec, const struct profiles *ps);

#endif
