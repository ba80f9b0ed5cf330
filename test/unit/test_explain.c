/*
 * Unit tests for `mutate --explain`'s text (webhook/admission/explain.c and the trace
 * lines of mutate.c), on the mixed H100/A100 cluster and small
 * profiles of their own: which rule chose which profile; for every other
 * profile why not (excluded by the nodeSelector, the Node or the required
 * affinity, tied at node-labels or gpus, match.gpus against the count, not
 * the default, the annotation); each container's targeting; each variable
 * added, kept or left out; IPC_LOCK, /dev/shm, the scheduler, the resource,
 * the pin, the annotations and the result. Every run is made twice, with
 * and without a trace, and must give the same patch and warnings: the
 * explanation never changes the admission. Also select_fit_profile().
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "admission/mutate.h"
#include "admission/podjson.h"
#include "admission/profiles.h"
#include "admission/select.h"
#include "base/trace.h"

/* The mixed cluster, in the file's words (manifests/examples/profiles-mixed.json,
 * shortened). */
static const char *const MIXED =
    "{'defaults':{'schedulerName':'volcano','ipcLock':true,'shm':{},"
    "'env':{'NCCL_IB_DISABLE':'0','NCCL_SOCKET_IFNAME':'eth0','NCCL_IB_TIMEOUT':'22'}},"
    "'profiles':["
    "{'name':'h100','pin':true,'match':{'gpus':8,'nodeLabels':{'gpu.product':'H100',"
    "'pool':'train'}},'hca':['mlx5_1','mlx5_2'],'resources':{'rdma/hca':'1'}},"
    "{'name':'a100','pin':true,'match':{'gpus':[1,2,4],'nodeLabels':{'gpu.product':'A100',"
    "'pool':'train'}},'hca':['mlx5_1'],'resources':{'rdma/hca':'1'}}]}";

#define META      "'labels':{'training.kubeflow.org/operator-name':'pytorchjob-controller'}"
#define POD(spec) "{'kind':'Pod','metadata':{'name':'w','namespace':'ns'," META "},'spec':" spec "}"
#define POD_ANN(ann, spec)                                                                         \
    "{'kind':'Pod','metadata':{'name':'w','namespace':'ns'," META ",'annotations':" ann "},"       \
    "'spec':" spec "}"
#define GPUS(n) "{'name':'pytorch','image':'i','resources':{'limits':{'nvidia.com/gpu':'" n "'}}}"
#define GPUS_ENV(n, env)                                                                           \
    "{'name':'pytorch','image':'i','env':" env ",'resources':{'limits':{'nvidia.com/gpu':'" n "'}" \
    "}}"
#define IN_TERM(key, op, values)                                                                   \
    "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"                \
    "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'" key "','operator':'" op "',"             \
    "'values':" values "}]}]}}}"

static struct {
    struct profiles *ps;
    cJSON *pod;
    struct trace t;
    int have_trace;
    char line[TRACE_LINE_MAX];
} T;

static int teardown(void **state __attribute__((unused)))
{
    profiles_free(T.ps);
    cJSON_Delete(T.pod);
    if (T.have_trace)
        trace_free(&T.t);
    memset(&T, 0, sizeof(T));
    return 0;
}

static void assert_same_result(const struct mutate_result *a, const struct mutate_result *b)
{
    assert_int_equal(a->outcome, b->outcome);
    assert_int_equal(a->reason, b->reason);
    assert_int_equal(a->rule, b->rule);
    assert_int_equal(a->pinned, b->pinned);
    assert_string_equal(dynbuf_ptr(&a->patch.out), dynbuf_ptr(&b->patch.out));
    assert_int_equal(a->warnings.n, b->warnings.n);
    for (size_t i = 0; i < a->warnings.n; i++)
        assert_string_equal(a->warnings.full[i], b->warnings.full[i]);
}

/* Runs the admission on pod with and without a trace and returns the text. */
static const char *explain_with(const char *profiles, const char *pod,
                                const struct mutate_hooks *hooks, const char *detect_image)
{
    struct mutate_options opts = {.detect_image = detect_image};
    struct mutate_input in = {.base = "", .namespace_ = "ns", .opts = &opts};
    struct mutate_result plain, traced;

    teardown(NULL);
    T.ps = support_profiles(profiles);
    T.pod = support_json_parse(pod);
    if (!T.pod)
        fail_msg("test pod does not parse: %s", pod);
    in.object = T.pod;
    mutate_result_init(&plain, 1 << 20);
    mutate_object(&in, T.ps, hooks, &plain);
    trace_init(&T.t, 500, 1 << 16);
    T.have_trace = 1;
    in.trace = &T.t;
    mutate_result_init(&traced, 1 << 20);
    mutate_object(&in, T.ps, hooks, &traced);
    assert_same_result(&plain, &traced);
    mutate_result_free(&plain);
    mutate_result_free(&traced);
    return trace_finish(&T.t);
}

static const char *explain(const char *pod)
{
    return explain_with(MIXED, pod, NULL, NULL);
}

/* The first line that starts with prefix (after its indent), whole. */
static const char *line_of(const char *text, const char *prefix)
{
    for (const char *l = text; *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);

        while (*l == ' ' && len)
            l++, len--;
        if (strncmp(l, prefix, strlen(prefix)) == 0) {
            assert_true(len < sizeof(T.line));
            memcpy(T.line, l, len);
            T.line[len] = '\0';
            return T.line;
        }
        l += len + (end ? 1 : 0);
    }
    fail_msg("no line starting with \"%s\" in:\n%s", prefix, text);
    return "";
}

/* ---- selection ---- */

TEST(test_four_gpus_chosen_by_gpus_and_pinned)
{
    const char *t = explain(POD("{'containers':[" GPUS("4") "]}"));

    assert_string_equal(line_of(t, "profile \"a100\": chosen by rule"),
                        "profile \"a100\": chosen by rule gpus");
    assert_string_equal(line_of(t, "profile \"h100\": node-labels"),
                        "profile \"h100\": node-labels: the pod has no node constraints; gpus: "
                        "match.gpus [8] vs the pod's 4 GPUs");
    assert_string_equal(line_of(t, "profile \"a100\": node-labels"),
                        "profile \"a100\": node-labels: the pod has no node constraints; chosen "
                        "by gpus: match.gpus [1, 2, 4] has the pod's 4 GPUs");
    assert_string_equal(line_of(t, "pin:"), "pin: pinned: the nodeSelector gets "
                                            "gpu.product=A100, pool=train (the profile's "
                                            "nodeLabels)");
    assert_string_equal(line_of(t, "GPUs:"), "GPUs: 4 (the regular containers' limits, else "
                                             "requests, of gpuResources)");
    assert_string_equal(line_of(t, "result:"), "result: mutated, 9 patch operations");
}

/* The pod chose both types itself: neither the GPU count nor pinning
 * overrides that, and the trace stops at the tie. */
TEST(test_in_both_types_is_a_tie_at_node_labels)
{
    const char *t = explain(
        POD("{" IN_TERM("gpu.product", "In", "['H100','A100']") ",'containers':[" GPUS("8") "]}"));

    assert_string_equal(line_of(t, "node constraints:"),
                        "node constraints: nodeSelector none; required node affinity term 1: "
                        "gpu.product In [H100, A100]");
    assert_string_equal(line_of(t, "profile \"a100\": node-labels"),
                        "profile \"a100\": node-labels: tied with h100 at node-labels (the "
                        "constraints allow several node types, which they tell apart by a "
                        "label; none chosen, and no later rule chooses for them)");
    assert_string_equal(line_of(t, "profile \"h100\": node-labels"),
                        "profile \"h100\": node-labels: tied with a100 at node-labels (the "
                        "constraints allow several node types, which they tell apart by a "
                        "label; none chosen, and no later rule chooses for them)");
    assert_string_equal(line_of(t, "no profile:"),
                        "no profile: the pod's node constraints allow several node types, and "
                        "the GPU count or a default does not choose one for it (rule none; "
                        "nothing is added)");
    assert_contains(t, "warning: rdma-webhook: set rdma-webhook.io/profile: ambiguous node "
                       "constraints fit h100, a100; none chosen\n");
    assert_null(strstr(t, "pinned"));
    assert_null(strstr(t, "add a profile"));
}

/* A label both profiles share says nothing about the type: the GPU count
 * chooses and pins, with no ambiguity warning beside the pin's. */
TEST(test_shared_label_tie_then_gpus)
{
    const char *t = explain(POD("{'nodeSelector':{'pool':'train'},'containers':[" GPUS("8") "]}"));

    assert_contains(line_of(t, "profile \"h100\": node-labels"),
                    "tied with a100 at node-labels (the constraints fit several; none chosen)");
    assert_contains(line_of(t, "profile \"h100\": node-labels"), "chosen by gpus");
    assert_null(strstr(t, "ambiguous"));
    assert_contains(t, "warning: rdma-webhook: pinned to profile \"h100\" nodes");
}

TEST(test_demanded_type_excludes_the_other)
{
    const char *t =
        explain(POD("{'nodeSelector':{'gpu.product':'A100'},'containers':[" GPUS("8") "]}"));

    assert_string_equal(line_of(t, "profile \"a100\": chosen by rule"),
                        "profile \"a100\": chosen by rule node-labels");
    assert_string_equal(line_of(t, "profile \"h100\":"),
                        "profile \"h100\": excluded by the pod's node constraints: nodeLabels "
                        "gpu.product=H100 inconsistent with the pod's nodeSelector "
                        "gpu.product=A100");
    assert_contains(line_of(t, "profile \"a100\": chosen by node-labels"),
                    "they require one of its keys");
    assert_string_equal(line_of(t, "pin:"), "pin: not pinned: only a profile chosen by gpus or "
                                            "as the default is pinned");
}

TEST(test_not_in_excludes_through_the_affinity)
{
    const char *t = explain(
        POD("{" IN_TERM("gpu.product", "NotIn", "['H100']") ",'containers':[" GPUS("8") "]}"));

    assert_string_equal(line_of(t, "no profile"),
                        "no profile: no rule chose one (rule none; nothing is added)");
    assert_string_equal(line_of(t, "profile \"h100\":"),
                        "profile \"h100\": excluded by the pod's node constraints: nodeLabels "
                        "gpu.product=H100 fails the required node affinity's term 1: "
                        "gpu.product NotIn [H100]");
    assert_string_equal(line_of(t, "profile \"a100\":"),
                        "profile \"a100\": node-labels: the constraints fit its nodeLabels "
                        "(gpu.product=A100, pool=train) but require none of its keys; gpus: "
                        "match.gpus [1, 2, 4] vs the pod's 8 GPUs; not the default");
    assert_string_equal(line_of(t, "result:"), "result: skipped (no-profile); the patch sets only "
                                               "rdma-webhook.io/warnings");
}

struct fake_node {
    const char *labels; /* JSON (' for "), or NULL to fail */
};

static int fake_node_labels(void *ctx, const char *name, cJSON **labels)
{
    const struct fake_node *f = ctx;

    (void)name;
    if (!f->labels)
        return ERR_FAIL;
    *labels = support_json_parse(f->labels);
    return *labels ? ERR_OK : ERR_FAIL;
}

TEST(test_bound_pod_by_the_node_and_the_other_excluded_by_it)
{
    struct fake_node f = {.labels = "{'gpu.product':'H100','pool':'train'}"};
    struct mutate_hooks h = {.select = {.node_labels = fake_node_labels, .ctx = &f}};
    const char *t =
        explain_with(MIXED, POD("{'nodeName':'n1','containers':[" GPUS("4") "]}"), &h, NULL);

    assert_string_equal(line_of(t, "node \"n1\""),
                        "node \"n1\" (spec.nodeName) has labels gpu.product=H100, pool=train");
    assert_string_equal(line_of(t, "profile \"h100\": chosen by rule"),
                        "profile \"h100\": chosen by rule node");
    assert_string_equal(line_of(t, "profile \"a100\":"),
                        "profile \"a100\": excluded by the pod's node constraints: nodeLabels "
                        "gpu.product=A100 inconsistent with node \"n1\"'s gpu.product=H100");
    assert_string_equal(line_of(t, "pin:"),
                        "pin: not pinned: only a profile chosen by gpus or as the default is "
                        "pinned");
}

TEST(test_node_without_a_label_and_a_failed_lookup)
{
    struct fake_node f = {.labels = "{'gpu.product':'H100'}"};
    struct mutate_hooks h = {.select = {.node_labels = fake_node_labels, .ctx = &f}};
    const char *t =
        explain_with(MIXED, POD("{'nodeName':'n1','containers':[" GPUS("4") "]}"), &h, NULL);

    assert_string_equal(line_of(t, "profile \"h100\":"),
                        "profile \"h100\": excluded by the pod's node constraints: nodeLabels "
                        "pool=train, and node \"n1\" has no label pool");
    f.labels = NULL;
    t = explain_with(MIXED, POD("{'nodeName':'n1','containers':[" GPUS("4") "]}"), &h, NULL);
    assert_string_equal(line_of(t, "node \"n1\""),
                        "node \"n1\" (spec.nodeName): its labels could not be read; the profile "
                        "is chosen from the pod alone");
    assert_string_equal(line_of(t, "profile \"a100\": chosen by rule"),
                        "profile \"a100\": chosen by rule gpus");
}

/* The Nodes a kubernetes.io/hostname names: what was read of each, and
 * the profile they exclude; unknown ones (no API offline) are said, and the
 * pin is not made. */
static int host_labels(void *ctx, const char *name, cJSON **labels)
{
    (void)ctx;
    if (strcmp(name, "a1") == 0)
        *labels = cJSON_Parse("{\"gpu.product\":\"A100\",\"pool\":\"train\","
                              "\"kubernetes.io/hostname\":\"a1\"}");
    else if (strcmp(name, "h1") == 0)
        *labels = cJSON_Parse("{\"gpu.product\":\"H100\",\"pool\":\"train\","
                              "\"kubernetes.io/hostname\":\"h1\"}");
    else
        return ERR_FAIL;
    return *labels ? ERR_OK : ERR_FAIL;
}

#define HOST_SELECTOR(name)                                                                        \
    POD("{'nodeSelector':{'kubernetes.io/hostname':'" name "'},'containers':[" GPUS("8") "]}")
#define HOSTS_IN(names)                                                                            \
    POD("{" IN_TERM("kubernetes.io/hostname", "In", names) ",'containers':[" GPUS("8") "]}")

TEST(test_hostnames_read_or_unknown)
{
    struct mutate_hooks h = {.select = {.node_labels = host_labels}};
    static const struct {
        const char *pod;
        int api; /* the Node hook; 0: offline */
        const char *prefix, *want;
    } cases[] = {
        {HOST_SELECTOR("a1"), 1, "node \"a1\"",
         "node \"a1\" (kubernetes.io/hostname) has labels gpu.product=A100, pool=train, "
         "kubernetes.io/hostname=a1"},
        {HOST_SELECTOR("a1"), 1, "profile \"a100\": chosen by rule",
         "profile \"a100\": chosen by rule node"},
        {HOST_SELECTOR("a1"), 1, "profile \"h100\":",
         "profile \"h100\": excluded by the pod's node constraints: nodeLabels gpu.product=H100 "
         "inconsistent with node \"a1\"'s gpu.product=A100"},
        {HOSTS_IN("['h1','a1']"), 1, "node \"h1\"",
         "node \"h1\" (kubernetes.io/hostname) has labels gpu.product=H100, pool=train, "
         "kubernetes.io/hostname=h1"},
        {HOSTS_IN("['h1','a1']"), 1, "no profile:",
         "no profile: the pod's node constraints allow several node types, and the GPU count or "
         "a default does not choose one for it (rule none; nothing is added)"},
        {HOST_SELECTOR("a1"), 0, "kubernetes.io/hostname names",
         "kubernetes.io/hostname names \"a1\": no Node is read here (offline there is no API; "
         "--node-labels takes the pod to a node with the labels given); the profile is chosen "
         "from the pod alone, and never pinned"},
        {HOST_SELECTOR("a1"), 0, "pin:",
         "pin: not pinned: its kubernetes.io/hostname names nodes whose labels are unknown, "
         "which the pin could contradict"},
        {HOSTS_IN("['a1','gone']"), 1, "kubernetes.io/hostname names",
         "kubernetes.io/hostname names \"a1\", \"gone\": the labels of node \"gone\" could not "
         "be read; the profile is chosen from the pod alone, and never pinned"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *t = explain_with(MIXED, cases[i].pod, cases[i].api ? &h : NULL, NULL);

        assert_string_equal(line_of(t, cases[i].prefix), cases[i].want);
    }
}

TEST(test_annotation_and_unknown_name)
{
    const char *t =
        explain(POD_ANN("{'rdma-webhook.io/profile':'h100'}", "{'containers':[" GPUS("4") "]}"));

    assert_string_equal(line_of(t, "profile \"h100\""),
                        "profile \"h100\": chosen by annotation rdma-webhook.io/profile");
    assert_string_equal(line_of(t, "profile \"a100\""),
                        "profile \"a100\": the annotation names another profile");
    assert_string_equal(line_of(t, "pin:"), "pin: not pinned: only a profile chosen by gpus or "
                                            "as the default is pinned");
    t = explain(POD_ANN("{'rdma-webhook.io/profile':'b200'}", "{'containers':[" GPUS("4") "]}"));
    assert_string_equal(line_of(t, "no profile"),
                        "no profile: the annotation rdma-webhook.io/profile names \"b200\", "
                        "which is no profile (rule unknown-name; nothing is added)");
    assert_string_equal(line_of(t, "profile \"h100\""),
                        "profile \"h100\": the annotation names another profile");
    assert_string_equal(line_of(t, "result:"),
                        "result: skipped (unknown-profile); the patch sets only "
                        "rdma-webhook.io/warnings");
    assert_contains(t, "warning: rdma-webhook: set rdma-webhook.io/profile to one of h100, a100 "
                       "(\"b200\" is unknown)\n");
}

TEST(test_default_and_a_tie_at_gpus)
{
    static const char *const profiles =
        "{'profiles':[{'name':'x','match':{'gpus':8,'nodeLabels':{'a':'1'}}},"
        "{'name':'y','match':{'gpus':8,'nodeLabels':{'b':'1'}}},"
        "{'name':'z','match':{'gpus':2},'default':true}]}";
    const char *t = explain_with(profiles, POD("{'containers':[" GPUS("8") "]}"), NULL, NULL);

    assert_string_equal(line_of(t, "profile \"z\": chosen by rule"),
                        "profile \"z\": chosen by rule default");
    assert_string_equal(line_of(t, "profile \"x\": node-labels"),
                        "profile \"x\": node-labels: the pod has no node constraints; gpus: "
                        "match.gpus [8] "
                        "has the pod's 8 GPUs, tied with y at gpus (none chosen); not the "
                        "default");
    assert_string_equal(line_of(t, "profile \"z\": node-labels"),
                        "profile \"z\": node-labels: no match.nodeLabels; gpus: match.gpus [2] "
                        "vs the pod's 8 GPUs; chosen as the default");
    assert_string_equal(line_of(t, "pin:"), "pin: not pinned: the profile has no pin");
}

/* ---- targeting ---- */

TEST(test_containers_and_the_pod_verdict)
{
    const char *t = explain(POD("{'containers':[{'name':'log','image':'f'}," GPUS(
        "4") "],'initContainers':[{'name':"
             "'prep','image':'i','resources':{'limits':{'rdma/hca':'1'}}}]}"));

    assert_string_equal(line_of(t, "pod:"), "pod: a target: label "
                                            "training.kubeflow.org/operator-name: "
                                            "pytorchjob-controller");
    assert_string_equal(line_of(t, "container \"log\""),
                        "container \"log\": not a target: asks for no GPU or RDMA device");
    assert_string_equal(line_of(t, "container \"pytorch\": "),
                        "container \"pytorch\": a target: asks for nvidia.com/gpu");
    assert_string_equal(line_of(t, "init container \"prep\""),
                        "init container \"prep\": not a target: the profile's initContainers is "
                        "off");
    t = explain(POD("{'containers':[{'name':'log','image':'f'},{'name':'pytorch','image':'i'}]}"));
    assert_string_equal(line_of(t, "container \"pytorch\": "),
                        "container \"pytorch\": a target: no container asks for a GPU or RDMA "
                        "device, and it is the first named \"pytorch\"");
    assert_string_equal(line_of(t, "container \"log\""),
                        "container \"log\": not a target: asks for no GPU or RDMA device, and is "
                        "not the first named \"pytorch\"");
    t = explain("{'kind':'Pod','metadata':{'name':'w','annotations':{'rdma-webhook.io/inject':"
                "'false'}},'spec':{'containers':[" GPUS("4") "]}}");
    assert_string_equal(line_of(t, "pod:"),
                        "pod: opted out: annotation rdma-webhook.io/inject: \"false\"");
    assert_string_equal(line_of(t, "result:"), "result: skipped (opted-out)");
    t = explain("{'kind':'Pod','metadata':{'name':'w'},'spec':{'containers':[" GPUS("4") "]}}");
    assert_contains(line_of(t, "pod:"), "pod: not a target: no PyTorchJob, TrainJob, JobSet");
    t = explain(POD("{'containers':[{'name':'log','image':'f'}]}"));
    assert_string_equal(line_of(t, "no target container"), "no target container: nothing is added");
}

/* ---- additions ---- */

TEST(test_ib_disable_leaves_out_the_ib_variables)
{
    const char *t = explain(
        POD("{'containers':[" GPUS_ENV("4", "[{'name':'NCCL_IB_DISABLE','value':'1'}]") "]}"));

    assert_contains(t, "InfiniBand off: NCCL reads its NCCL_IB_DISABLE=1 as non-zero (TCP)");
    assert_string_equal(line_of(t, "NCCL_IB_TIMEOUT"),
                        "NCCL_IB_TIMEOUT=\"22\": left out: NCCL_IB_DISABLE turns InfiniBand off");
    assert_string_equal(line_of(t, "NCCL_IB_HCA"),
                        "NCCL_IB_HCA=\"=mlx5_1\": left out: NCCL_IB_DISABLE turns InfiniBand off");
    assert_string_equal(line_of(t, "NCCL_IB_DISABLE:"),
                        "NCCL_IB_DISABLE: kept the container's: it turns InfiniBand off");
    assert_string_equal(line_of(t, "NCCL_SOCKET_IFNAME"), "NCCL_SOCKET_IFNAME=\"eth0\": added");
    assert_string_equal(line_of(t, "IPC_LOCK"), "IPC_LOCK: not added: InfiniBand is off");
    assert_string_equal(line_of(t, "resources:"),
                        "resources: none added: every target container has InfiniBand off");
    assert_string_equal(line_of(t, "pin:"), "pin: pinned: the nodeSelector gets "
                                            "gpu.product=A100, pool=train (the profile's "
                                            "nodeLabels)");
}

TEST(test_user_hca_kept_and_the_rest_added)
{
    const char *t = explain(POD("{'schedulerName':'default-scheduler','containers':[" GPUS_ENV(
        "4", "[{'name':'NCCL_IB_HCA','value':'=mlx5_3'},{'name':'NCCL_IB_TIMEOUT','value':"
             "'22'}]") "]}"));

    assert_string_equal(line_of(t, "NCCL_IB_HCA"),
                        "NCCL_IB_HCA: kept the container's \"=mlx5_3\" (env) over the profile's "
                        "\"=mlx5_1\"");
    assert_string_equal(line_of(t, "NCCL_IB_TIMEOUT"),
                        "NCCL_IB_TIMEOUT=\"22\": kept: the container's env has the same value");
    assert_string_equal(line_of(t, "IPC_LOCK"), "IPC_LOCK: added to "
                                                "securityContext.capabilities.add");
    assert_string_equal(line_of(t, "/dev/shm"), "/dev/shm: added, a mount of volume "
                                                "\"rdma-webhook-shm\" (emptyDir, medium Memory)");
    assert_string_equal(line_of(t, "resource "),
                        "resource rdma/hca=1: added to container \"pytorch\"'s limits and "
                        "requests");
    assert_string_equal(line_of(t, "schedulerName"),
                        "schedulerName: volcano: replaces default-scheduler");
    assert_string_equal(line_of(t, "annotation rdma-webhook.io/injected"),
                        "annotation rdma-webhook.io/injected: a100");
    assert_string_equal(line_of(t, "annotation rdma-webhook.io/selected-by"),
                        "annotation rdma-webhook.io/selected-by: gpus");
    assert_contains(t, "warning: rdma-webhook: drop NCCL_IB_HCA in container \"pytorch\" to get "
                       "the profile's =mlx5_1\n");
}

/* Not added to a non-root container: the trace says why and what to do. */
TEST(test_non_root_container_gets_no_ipc_lock)
{
    const char *t =
        explain(POD("{'securityContext':{'runAsUser':1000},'containers':[" GPUS("4") "]}"));

    assert_string_equal(line_of(t, "IPC_LOCK"),
                        "IPC_LOCK: not added: the container runs as non-root (runAsUser not 0, or "
                        "runAsNonRoot), where an added capability is not effective; NCCL's memory "
                        "registration then needs the memlock ulimit of the node's container "
                        "runtime raised");
    assert_contains(t, "warning: rdma-webhook: raise memlock on nodes for container \"pytorch\": "
                       "no IPC_LOCK, which does nothing as non-root\n");
}

static enum mutate_envfrom has_every_key(void *ctx, const char *ns, const char *name,
                                         const char *key)
{
    (void)ctx, (void)ns, (void)name;
    return strcmp(key, "NCCL_IB_TIMEOUT") == 0 ? MUTATE_ENVFROM_HAS : MUTATE_ENVFROM_LACKS;
}

TEST(test_envfrom_and_what_is_there_already)
{
    struct mutate_hooks h = {.configmap_has_key = has_every_key};
    const char *t = explain_with(
        MIXED,
        POD("{'schedulerName':'volcano','containers':[{'name':'pytorch','image':'i','envFrom':"
            "[{'configMapRef':{'name':'nccl'}}],'securityContext':{'capabilities':{'add':["
            "'IPC_LOCK']}},'volumeMounts':[{'name':'s','mountPath':'/dev/shm'}],'resources':{"
            "'limits':{'nvidia.com/gpu':'4','rdma/hca_shared':'1'}}}]}"),
        &h, NULL);

    assert_string_equal(line_of(t, "NCCL_IB_TIMEOUT"),
                        "NCCL_IB_TIMEOUT: kept: an envFrom ConfigMap of the container declares "
                        "it");
    assert_string_equal(line_of(t, "IPC_LOCK"),
                        "IPC_LOCK: already in securityContext.capabilities.add");
    assert_string_equal(line_of(t, "/dev/shm"),
                        "/dev/shm: not added: the container mounts a volume there already");
    assert_string_equal(line_of(t, "resource "),
                        "resource rdma/hca: not added: a container asks for a resource under "
                        "rdma/");
    assert_string_equal(line_of(t, "schedulerName"),
                        "schedulerName: already volcano, nothing to add");
}

TEST(test_detect_without_an_image_and_with_one)
{
    static const char *const profiles =
        "{'profiles':[{'name':'d','default':true,'detect':true,'hca':['mlx5_0'],"
        "'env':{'NCCL_SOCKET_IFNAME':'eth0'}}]}";
    const char *t = explain_with(profiles, POD("{'containers':[" GPUS("4") "]}"), NULL, NULL);

    assert_string_equal(line_of(t, "detect: the profile"),
                        "detect: the profile asks for it, but there is no --detect-image: static "
                        "values");
    assert_string_equal(line_of(t, "NCCL_IB_HCA"), "NCCL_IB_HCA=\"=mlx5_0\": added");
    assert_contains(t, "warning: rdma-webhook: give the webhook --detect-image: profile \"d\" "
                       "asks for detect; static values used\n");
    t = explain_with(profiles, POD("{'containers':[" GPUS("4") "]}"), NULL, "img:1");
    assert_string_equal(line_of(t, "NCCL_IB_HCA"),
                        "NCCL_IB_HCA=\"=mlx5_0\": left out: run-time detection writes it to "
                        "/run/rdma-webhook/nccl.conf");
    assert_string_equal(line_of(t, "NCCL_CONF_FILE"),
                        "NCCL_CONF_FILE=\"/run/rdma-webhook/nccl.conf\": added (run-time "
                        "detection: NCCL 2.23+ reads the file)");
    assert_string_equal(line_of(t, "detect: init container"),
                        "detect: init container \"rdma-webhook-detect\" added (image img:1, "
                        "after the pod's own)");
    assert_contains(t, "detect: volume \"rdma-webhook-nccl\" added");
}

TEST(test_unreadable_pod_says_nothing_is_applied)
{
    const char *t =
        explain(POD("{'containers':[{'name':'pytorch','env':'x','resources':{'limits':{'nvidia.com/"
                    "gpu':'4'}}}]}"));

    assert_contains(line_of(t, "error:"), "the pod is admitted unchanged (nothing above is "
                                          "applied)");
    assert_contains(line_of(t, "error:"), "env");
    assert_string_equal(line_of(t, "result:"), "result: error, no patch");
    assert_contains(line_of(t, "warning:"), "see the webhook's log: pod not mutated");
}

/* ---- select_fit_profile ---- */

TEST(test_fit_names_the_label_at_fault)
{
    static const char *const spec_text =
        "{'nodeSelector':{'pool':'train'}," IN_TERM("gpu.product", "In", "['L40']") "}";
    struct select_fit f;
    struct podjson r;
    cJSON *spec = support_json_parse(spec_text);

    explain(POD("{'containers':[]}")); /* loads T.ps */
    podjson_init(&r);
    select_fit_profile(&r, spec, NULL, 0, 0, &T.ps->p[0], &f);
    assert_false(f.fits);
    assert_int_equal(f.clash, SELECT_CLASH_AFFINITY);
    assert_string_equal(f.key, "gpu.product");
    assert_string_equal(f.want, "H100");
    assert_non_null(f.expr);
    assert_int_equal(f.term, 0);
    cJSON_Delete(spec);
    spec = support_json_parse("{'nodeSelector':{'pool':'test'}}");
    select_fit_profile(&r, spec, NULL, 0, 0, &T.ps->p[1], &f);
    assert_false(f.fits);
    assert_int_equal(f.clash, SELECT_CLASH_SELECTOR);
    assert_string_equal(f.key, "pool");
    assert_string_equal(f.want, "train");
    assert_string_equal(f.have, "test");
    cJSON_Delete(spec);
    assert_false(podjson_failed(&r));
}

TEST(test_trace_bound_holds_for_many_containers)
{
    char *pod = malloc(1 << 16);
    size_t at = 0;
    const char *t;

    assert_non_null(pod);
    at += (size_t)snprintf(pod + at, 1 << 16, "%s",
                           "{'kind':'Pod','metadata':{" META
                           ",'annotations':{'rdma-webhook.io/profile':'a100'}},"
                           "'spec':{'containers':[");
    for (int i = 0; i < 200; i++)
        at += (size_t)snprintf(pod + at, (1 << 16) - at,
                               "%s{'name':'c%d','resources':{'limits':{'nvidia.com/gpu':'1'}}}",
                               i ? "," : "", i);
    snprintf(pod + at, (1 << 16) - at, "]}}");
    t = explain(pod);
    free(pod);
    /* 200 containers of ten lines each: past one of the bounds. */
    assert_true(T.t.more > 0);
    assert_true(T.t.lines <= 500);
    assert_true(strlen(t) <= (1 << 16) + 48);
    assert_contains(t, " more lines\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_four_gpus_chosen_by_gpus_and_pinned, teardown),
        cmocka_unit_test_teardown(test_hostnames_read_or_unknown, teardown),
        cmocka_unit_test_teardown(test_in_both_types_is_a_tie_at_node_labels, teardown),
        cmocka_unit_test_teardown(test_shared_label_tie_then_gpus, teardown),
        cmocka_unit_test_teardown(test_demanded_type_excludes_the_other, teardown),
        cmocka_unit_test_teardown(test_not_in_excludes_through_the_affinity, teardown),
        cmocka_unit_test_teardown(test_bound_pod_by_the_node_and_the_other_excluded_by_it,
                                  teardown),
        cmocka_unit_test_teardown(test_node_without_a_label_and_a_failed_lookup, teardown),
        cmocka_unit_test_teardown(test_annotation_and_unknown_name, teardown),
        cmocka_unit_test_teardown(test_default_and_a_tie_at_gpus, teardown),
        cmocka_unit_test_teardown(test_containers_and_the_pod_verdict, teardown),
        cmocka_unit_test_teardown(test_ib_disable_leaves_out_the_ib_variables, teardown),
        cmocka_unit_test_teardown(test_user_hca_kept_and_the_rest_added, teardown),
        cmocka_unit_test_teardown(test_non_root_container_gets_no_ipc_lock, teardown),
        cmocka_unit_test_teardown(test_envfrom_and_what_is_there_already, teardown),
        cmocka_unit_test_teardown(test_detect_without_an_image_and_with_one, teardown),
        cmocka_unit_test_teardown(test_unreadable_pod_says_nothing_is_applied, teardown),
        cmocka_unit_test_teardown(test_fit_names_the_label_at_fault, teardown),
        cmocka_unit_test_teardown(test_trace_bound_holds_for_many_containers, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
