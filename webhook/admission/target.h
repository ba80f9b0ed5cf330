/* target: which pods, and which of their containers, the webhook mutates
 * (docs/profiles.md "What the webhook does to a pod", steps 1 and 2).
 *
 * A pod opts in or out with the annotation (or label) rdma-webhook.io/inject:
 * "true" or "false"; "false" always wins; the annotation wins over the label.
 * Otherwise the job it belongs to decides (struct mutate_job, which mutjob
 * worked out first): a PyTorchJob's pods always; a TrainJob's trainer pods
 * (replicated job "node", or "launcher" in an MPI runtime; its initializers
 * never) with targets.trainjob; a plain JobSet's with targets.jobset; an
 * MPIJob's workers, and its launcher only when a container of it asks for a
 * GPU or RDMA device, with targets.mpijob; a Volcano Job's with
 * targets.volcanojob. A JobSet's pod whose owner could not be read is
 * TARGET_JOB_UNKNOWN when it would be a target as only one of a TrainJob's
 * and a plain JobSet's: no guess (the caller warns, and leaves it).
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

struct mutate_job;

enum target_verdict {
    TARGET_NO,        /* not a training pod, or not one targets enable */
    TARGET_OPTED_OUT, /* rdma-webhook.io/inject: "false" */
    TARGET_YES,
    TARGET_JOB_UNKNOWN, /* a JobSet's pod whose owner could not be read, and it matters */
};

/* Judges a pod (or pod template) by its metadata and job (job_unknown: the
 * JobSet's owner could not be read, mutate_ctx.job_unknown), reading spec's
 * containers for an MPIJob's launcher. *why (why may be NULL) is a static
 * phrase saying what decided it ("its controlling owner is a PyTorchJob"),
 * for `mutate --explain`. */
enum target_verdict target_pod(struct podjson *r, const struct cJSON *metadata,
                               const struct cJSON *spec, const struct profiles *ps,
                               const struct mutate_job *job, int job_unknown, const char **why);

/* The container a job kind names its training container, the target when no
 * container asks for a device: "pytorch" for a PyTorchJob's pods (and for
 * a pod of no job: one that opts in, a job's template), "node" for a
 * TrainJob's and a JobSet's; NULL for the others (none by name). */
const char *target_fallback_container(const struct mutate_job *job);

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
 * a GPU or RDMA device; failing those, the first one named fallback
 * (target_fallback_container(); NULL: none). Calls fn (when not NULL) for
 * each, in order, and returns how many there are. */
size_t target_each_container(struct podjson *r, const struct cJSON *containers,
                             const struct profiles *ps, const char *fallback,
                             target_container_fn fn, void *ctx);

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
