#include "admission/target.h"

#include "admission/podjson.h"
#include "admission/profiles.h"

#include <cjson/cJSON.h>
#include <string.h>

#define TARGET_LABEL_OPERATOR "training.kubeflow.org/operator-name"

static int target_has_prefix(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* 1 when the controlling owner reference has an apiVersion in group (given as
 * "kubeflow.org/") and the kind. */
static int target_owned_by(struct podjson *r, const cJSON *metadata, const char *group,
                           const char *kind)
{
    const cJSON *refs = podjson_arr(r, metadata, "ownerReferences");
    const cJSON *ref;

    cJSON_ArrayForEach(ref, refs)
    {
        const char *api = podjson_str(r, ref, "apiVersion");
        const char *k = podjson_str(r, ref, "kind");

        if (podjson_bool(r, ref, "controller") && target_has_prefix(api, group) && k &&
            strcmp(k, kind) == 0)
            return 1;
    }
    return 0;
}

static int target_label_is(struct podjson *r, const cJSON *labels, const char *key,
                           const char *value)
{
    const char *v = podjson_str(r, labels, key);

    return v && (!value || strcmp(v, value) == 0);
}

/* Why the pod belongs to a job kind enabled in targets, or NULL. */
static const char *target_other_kinds(struct podjson *r, const cJSON *metadata, const cJSON *labels,
                                      unsigned bits)
{
    if ((bits & PROFILES_TARGET_MPIJOB) &&
        (target_owned_by(r, metadata, "kubeflow.org/", "MPIJob") ||
         target_label_is(r, labels, TARGET_LABEL_OPERATOR, "mpijob-controller") ||
         target_label_is(r, labels, TARGET_LABEL_OPERATOR, "mpi-operator")))
        return "an MPIJob's pod, and targets.mpijob is on";
    if ((bits & PROFILES_TARGET_VOLCANOJOB) &&
        (target_owned_by(r, metadata, "batch.volcano.sh/", "Job") ||
         target_label_is(r, labels, "volcano.sh/job-name", NULL)))
        return "a Volcano Job's pod, and targets.volcanojob is on";
    return NULL;
}

/* 1 for "true", 0 for "false", -1 for any other value or none. */
static int target_inject_word(const char *v)
{
    if (v && strcmp(v, "true") == 0)
        return 1;
    if (v && strcmp(v, "false") == 0)
        return 0;
    return -1;
}

const char *target_inject_ignored(struct podjson *r, const cJSON *metadata, const char **where)
{
    const char *a =
        podjson_str(r, podjson_obj(r, metadata, "annotations"), TARGET_ANNOTATION_INJECT);
    const char *l = podjson_str(r, podjson_obj(r, metadata, "labels"), TARGET_ANNOTATION_INJECT);

    *where = a && target_inject_word(a) < 0 ? "annotation" : "label";
    if (a && target_inject_word(a) < 0)
        return a;
    return l && target_inject_word(l) < 0 ? l : NULL;
}

int target_namespace_inject_known(const char *value)
{
    return !value || target_inject_word(value) >= 0 || strcmp(value, "enabled") == 0;
}

enum target_verdict target_pod_why(struct podjson *r, const cJSON *metadata, unsigned target_bits,
                                   const char **why)
{
    const cJSON *annotations = podjson_obj(r, metadata, "annotations");
    const cJSON *labels = podjson_obj(r, metadata, "labels");
    /* The label form exists because a webhook's objectSelector can match
     * labels but not annotations: it is how opted-in pods reach us at all.
     * An annotation that is no word of the vocabulary is no annotation: the
     * label that brought the pod here decides. */
    int a = target_inject_word(podjson_str(r, annotations, TARGET_ANNOTATION_INJECT));
    int by_label = a < 0;
    int inject =
        by_label ? target_inject_word(podjson_str(r, labels, TARGET_ANNOTATION_INJECT)) : a;

    if (inject == 0) {
        *why = by_label ? "label " TARGET_ANNOTATION_INJECT ": \"false\""
                        : "annotation " TARGET_ANNOTATION_INJECT ": \"false\"";
        return TARGET_OPTED_OUT;
    }
    if (inject == 1) {
        *why = by_label ? "label " TARGET_ANNOTATION_INJECT ": \"true\""
                        : "annotation " TARGET_ANNOTATION_INJECT ": \"true\"";
        return TARGET_YES;
    }
    *why = "its controlling owner is a PyTorchJob";
    if (target_owned_by(r, metadata, "kubeflow.org/", "PyTorchJob"))
        return TARGET_YES;
    *why = "label " TARGET_LABEL_OPERATOR ": pytorchjob-controller";
    if (target_label_is(r, labels, TARGET_LABEL_OPERATOR, "pytorchjob-controller"))
        return TARGET_YES;
    if ((*why = target_other_kinds(r, metadata, labels, target_bits)))
        return TARGET_YES;
    *why = "no PyTorchJob owner or operator label, no " TARGET_ANNOTATION_INJECT
           ": \"true\", no enabled job kind of targets";
    return TARGET_NO;
}

enum target_verdict target_pod(struct podjson *r, const cJSON *metadata, unsigned target_bits)
{
    const char *why;

    return target_pod_why(r, metadata, target_bits, &why);
}

static int target_map_has_prefix(const cJSON *map, const char *prefix, size_t prefix_len)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, map)
    {
        if (it->string && strncmp(it->string, prefix, prefix_len) == 0)
            return 1;
    }
    return 0;
}

int target_container_asks_prefix(struct podjson *r, const cJSON *container, const char *prefix,
                                 size_t prefix_len)
{
    const cJSON *res = podjson_obj(r, container, "resources");

    return target_map_has_prefix(podjson_obj(r, res, "limits"), prefix, prefix_len) ||
           target_map_has_prefix(podjson_obj(r, res, "requests"), prefix, prefix_len);
}

int target_container_wants_devices(struct podjson *r, const cJSON *container,
                                   const struct profiles *ps)
{
    const cJSON *res = podjson_obj(r, container, "resources");
    const cJSON *limits = podjson_obj(r, res, "limits");
    const cJSON *requests = podjson_obj(r, res, "requests");

    for (size_t i = 0; i < ps->n_gpu_resources; i++) {
        if (podjson_member(limits, ps->gpu_resources[i]) ||
            podjson_member(requests, ps->gpu_resources[i]))
            return 1;
    }
    return target_map_has_prefix(limits, ps->rdma_prefix, strlen(ps->rdma_prefix)) ||
           target_map_has_prefix(requests, ps->rdma_prefix, strlen(ps->rdma_prefix));
}

/* The first key of map that starts with prefix, or NULL. */
static const char *target_map_prefixed(const cJSON *map, const char *prefix, size_t prefix_len)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, map)
    {
        if (it->string && strncmp(it->string, prefix, prefix_len) == 0)
            return it->string;
    }
    return NULL;
}

const char *target_container_device(struct podjson *r, const cJSON *container,
                                    const struct profiles *ps)
{
    const cJSON *res = podjson_obj(r, container, "resources");
    const cJSON *limits = podjson_obj(r, res, "limits");
    const cJSON *requests = podjson_obj(r, res, "requests");
    const char *rdma;

    for (size_t i = 0; i < ps->n_gpu_resources; i++) {
        if (podjson_member(limits, ps->gpu_resources[i]) ||
            podjson_member(requests, ps->gpu_resources[i]))
            return ps->gpu_resources[i];
    }
    rdma = target_map_prefixed(limits, ps->rdma_prefix, strlen(ps->rdma_prefix));
    return rdma ? rdma : target_map_prefixed(requests, ps->rdma_prefix, strlen(ps->rdma_prefix));
}

size_t target_each_container(struct podjson *r, const cJSON *containers, const struct profiles *ps,
                             target_container_fn fn, void *ctx)
{
    const cJSON *c;
    size_t n = 0;
    int idx = 0;

    cJSON_ArrayForEach(c, containers)
    {
        if (target_container_wants_devices(r, c, ps)) {
            if (fn)
                fn(ctx, c, idx);
            n++;
        }
        idx++;
    }
    if (n)
        return n;
    idx = 0;
    cJSON_ArrayForEach(c, containers)
    {
        const char *name = podjson_str(r, c, "name");

        if (name && strcmp(name, "pytorch") == 0) {
            if (fn)
                fn(ctx, c, idx);
            return 1;
        }
        idx++;
    }
    return 0;
}

static long long target_container_gpus(struct podjson *r, const cJSON *container,
                                       const struct profiles *ps)
{
    const cJSON *res = podjson_obj(r, container, "resources");
    const cJSON *limits = podjson_obj(r, res, "limits");
    const cJSON *requests = podjson_obj(r, res, "requests");
    long long sum = 0;

    for (size_t i = 0; i < ps->n_gpu_resources; i++) {
        const cJSON *q = podjson_member(limits, ps->gpu_resources[i]);
        long long v;

        if (!q)
            q = podjson_member(requests, ps->gpu_resources[i]);
        v = q ? podjson_whole_quantity(q) : -1;
        if (v > 0)
            sum += v;
    }
    return sum;
}

long long target_pod_gpus(struct podjson *r, const cJSON *spec, const struct profiles *ps)
{
    const cJSON *c;
    long long sum = 0;

    cJSON_ArrayForEach(c, podjson_arr(r, spec, "containers"))
    {
        if (sum < 1000000)
            sum += target_container_gpus(r, c, ps);
    }
    return sum;
}
