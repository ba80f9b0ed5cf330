#include "cmd/cmd.h"
#include "cmd/cmd_mutjobs.h"

#include "host/docs.h"
#include "host/fsutil.h"
#include "base/k8sname.h"
#include "admission/mutate.h"
#include "admission/podjson.h"
#include "admission/target.h"
#include "host/podsecconf.h"
#include "admission/profiles.h"
#include "admission/report.h"
#include "admission/review.h"
#include "base/strmap.h"
#include "base/trace.h"
#include "base/utf8.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD_MUTATE_INPUT_MAX (64u << 20)
/* One printed document: the input's largest, as YAML, with its patches. */
#define CMD_MUTATE_OUTPUT_MAX (256u << 20)
/* Labels one --node-labels or --namespace-labels may give. */
#define CMD_MUTATE_LABELS_MAX 64
/* Where --node-labels puts a pod that names no node: any name will do, the
 * hook answers for every node. */
#define CMD_MUTATE_OFFLINE_NODE "rdma-webhook-offline-node"
/* What --explain prints of one pod or template at most: a pod with many
 * containers says the rest in "... N more lines". */
#define CMD_MUTATE_EXPLAIN_LINES 2000
#define CMD_MUTATE_EXPLAIN_BYTES (256u << 10)

/* A ConfigMap of the input: its namespace (as kubectl would create it),
 * name and data; key is "ns/name", its index's key. A data of more than
 * CMD_MUTATE_SCAN_MAX keys gets an index of its own (keys) at the first
 * lookup, so that a pod of many containers and envFrom sources costs a hash
 * for each lookup, not a scan of the ConfigMap. */
struct cmd_mutate_configmap {
    const char *ns, *name;
    const cJSON *data;
    char *key;
    struct strmap keys;
    int indexed;
};

/* Up to this many keys a scan is as cheap as an index. */
#define CMD_MUTATE_SCAN_MAX 16
/* The input is the user's own: any fixed seed will do. */
#define CMD_MUTATE_SEED 0x726d776562686b31ull

/* The run: what every object is mutated with, and where it is printed. */
struct cmd_mutate_ctx {
    const struct profiles *ps;
    struct mutate_options opts; /* --detect-image, --mode, --pod-security-config, --ipc-lock */
    int patched;
    int explain;             /* --explain: the decisions, in words, instead */
    enum docs_format format; /* what is printed */
    cJSON *node_labels;      /* --node-labels, or NULL */
    cJSON *namespace_labels; /* --namespace-labels, or NULL */
    const char *namespace_;  /* --namespace, or NULL */
    const struct docs *docs; /* the whole input: a TrainJob's runtime is among them */
    /* The ConfigMaps of the input, which answer the pods' envFrom as the
     * API would (points into the documents; n_configmaps of them). */
    struct cmd_mutate_configmap *configmaps;
    size_t n_configmaps;
    struct strmap configmap_index; /* "ns/name" -> the first such ConfigMap */
    struct mutate_hooks hooks;
    size_t objects;  /* in the whole input: above one, messages say which */
    size_t printed;  /* documents printed so far */
    char where[256]; /* "document 2 (Pod ns/name): ", or "" */
    char which[256]; /* " [document 2, Pod ns/name]", or "" */
    char title[256]; /* --explain: "document 2: Pod ns/name", or "Pod ns/name" */
};

static void cmd_mutate_usage(FILE *f)
{
    fprintf(f,
            "Usage: rdma-webhook mutate [--profiles FILE] [--patched] [-o json|yaml] [--explain]\n"
            "                           [--node-labels K=V,...] [--namespace-labels K=V,...]\n"
            "                           [--namespace NAME] [--detect-image IMAGE]\n"
            "                           [--mode enforce|report] [--pod-security-config FILE]\n"
            "                           [--ipc-lock auto|never] [FILE|-]\n"
            "\n"
            "Runs the webhook offline on AdmissionReviews, Pods and the pod templates of\n"
            "PyTorchJobs, MPIJobs, Volcano Jobs and JobSets (as their targets.* in the\n"
            "profiles allow), and of TrainJobs given with their ClusterTrainingRuntime or\n"
            "TrainingRuntime (printed as a List of the PodTemplates their JobSet would\n"
            "make): JSON, or YAML (one document or several, separated by ---), Lists of\n"
            "them too (kind: List, PodList, ...); stdin when FILE is - or absent. E.g.\n"
            "  kubectl get pod P -o yaml | rdma-webhook mutate --patched\n"
            "  (kubectl get trainjob T -o yaml; echo ---; kubectl get clustertrainingruntime\n"
            "   R -o yaml) | rdma-webhook mutate --explain\n"
            "ConfigMaps in the input answer the pods' envFrom, as the API answers serve.\n"
            "\n"
            "  --profiles FILE           profiles JSON (default %s)\n"
            "  --patched                 print each object mutated instead of the\n"
            "                            AdmissionReview response (always so for a job)\n"
            "  -o, --output json|yaml    what to print (default: the input's format with\n"
            "                            --patched, else JSON)\n"
            "  --explain                 print, for each pod and job template, what was decided\n"
            "                            and why, as text, instead of the objects: targeting,\n"
            "                            each profile's fate at each rule, each addition or\n"
            "                            skip, the warnings (not with --patched or -o)\n"
            "  --node-labels K=V,...     take each pod to run on a node with these labels: they\n"
            "                            choose the profile as a bound pod's Node does\n"
            "                            (selected-by: node), and nothing is pinned\n"
            "  --namespace-labels K=V,...\n"
            "                            the labels of the pods' namespace, for profiles\n"
            "                            whose match.namespaces is a selector (plus\n"
            "                            kubernetes.io/metadata.name, as the apiserver sets it),\n"
            "                            Pod Security, rdma-webhook.io/mode=report|enforce\n"
            "                            and rdma-webhook.io/ipc-lock=false\n"
            "  -n, --namespace NAME      the namespace of objects that name none (default\n"
            "                            \"default\"); one that names another is an error\n"
            "  --detect-image IMAGE      the image of the init container rdma-webhook-detect,\n"
            "                            as serve --detect-image (without it: no run-time\n"
            "                            detection)\n"
            "  --mode enforce|report     as serve --mode: report gives each pod only the\n"
            "                            annotation rdma-webhook.io/report (default enforce)\n"
            "  --ipc-lock auto|never     as serve --ipc-lock: never adds IPC_LOCK to no\n"
            "                            container (default auto)\n"
            "  --pod-security-config FILE\n"
            "                            as serve --pod-security-config: the cluster's\n"
            "                            PodSecurity defaults and exemptions (a user exemption\n"
            "                            applies to an AdmissionReview's userInfo)\n"
            "  -h, --help                show this help\n"
            "\n"
            "Warnings go to stderr as kubectl would print them (with --explain, to stdout in\n"
            "the explanation). Exit status: 0 when every\n"
            "object was processed, 1 when one could not be (the others are still printed),\n"
            "2 for a usage error.\n",
            CMD_DEFAULT_PROFILES);
}

/* ---- labels ---- */

/* Adds "k=v,k2=v2" to *labels (made when NULL): keys are label keys
 * (qualified names), values label values, each key once. */
static int cmd_mutate_parse_labels(const char *flag, const char *arg, cJSON **labels, char *err,
                                   size_t errlen)
{
    char *copy = strdup(arg), *save = NULL, *kv;
    int rc = ERR_OK;

    if (!copy || (!*labels && !(*labels = cJSON_CreateObject()))) {
        free(copy);
        return err_set(err, errlen, ERR_NOMEM, "out of memory");
    }
    for (kv = strtok_r(copy, ",", &save); kv && rc == ERR_OK; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');

        if (!eq) {
            rc = err_set(err, errlen, ERR_FAIL, "--%s: \"%s\" is not KEY=VALUE", flag, kv);
            break;
        }
        *eq = '\0';
        if (!k8sname_qualified(kv))
            rc = err_set(err, errlen, ERR_FAIL,
                         "--%s: \"%s\" is not a label key ([prefix/]name, e.g. "
                         "nvidia.com/gpu.product)",
                         flag, kv);
        else if (!k8sname_label_value(eq + 1))
            rc = err_set(err, errlen, ERR_FAIL,
                         "--%s: \"%s\" is not a label value (at most 63 letters, digits, "
                         "'-', '_' or '.', alphanumeric at both ends)",
                         flag, eq + 1);
        else if (cJSON_GetObjectItemCaseSensitive(*labels, kv))
            rc = err_set(err, errlen, ERR_FAIL, "--%s: the key \"%s\" is given twice", flag, kv);
        else if (cJSON_GetArraySize(*labels) >= CMD_MUTATE_LABELS_MAX)
            rc = err_set(err, errlen, ERR_FAIL, "--%s: more than %d labels", flag,
                         CMD_MUTATE_LABELS_MAX);
        else if (!cJSON_AddStringToObject(*labels, kv, eq + 1))
            rc = err_set(err, errlen, ERR_NOMEM, "out of memory");
    }
    free(copy);
    return rc;
}

/* The hooks answer every node, or namespace, with the flag's labels. */
static int cmd_mutate_node_labels(void *ctx, const char *name, cJSON **labels)
{
    const struct cmd_mutate_ctx *c = ctx;

    (void)name;
    return (*labels = cJSON_Duplicate(c->node_labels, 1)) ? ERR_OK : ERR_NOMEM;
}

/* The apiserver labels every Namespace with its name: so does this. */
static int cmd_mutate_namespace_labels(void *ctx, const char *name, cJSON **labels)
{
    const struct cmd_mutate_ctx *c = ctx;

    if (!(*labels = cJSON_Duplicate(c->namespace_labels, 1)))
        return ERR_NOMEM;
    if (!cJSON_GetObjectItemCaseSensitive(*labels, PROFILES_NS_NAME_LABEL) &&
        !cJSON_AddStringToObject(*labels, PROFILES_NS_NAME_LABEL, name)) {
        cJSON_Delete(*labels);
        return *labels = NULL, ERR_NOMEM;
    }
    return ERR_OK;
}

/* A name of the input as a message or a title shows it: at most outlen-1
 * bytes, cut between characters ("..." at the end), control characters
 * folded (a pod named "evil\e[31m\nfake: line" forges no line). Returns
 * out. */
static const char *cmd_mutate_shown(const char *s, char *out, size_t outlen)
{
    utf8_shorten(s, outlen - 1, out, outlen);
    return utf8_fold(out);
}

/* ---- ConfigMaps of the input, for envFrom ---- */

static struct cmd_mutate_configmap *cmd_mutate_configmap_find(struct cmd_mutate_ctx *c,
                                                              const char *ns, const char *name)
{
    char key[512]; /* a Namespace's and a ConfigMap's name (63 + 1 + 253 bytes) fit */
    int n = snprintf(key, sizeof(key), "%s/%s", ns, name);

    if (n < 0 || (size_t)n >= sizeof(key))
        return NULL; /* a name the apiserver refuses in a pod: unknown, as without the API */
    return strmap_get(&c->configmap_index, key, (size_t)n);
}

/* The member key of cm's data: a scan for a small data, else its index,
 * made at the first lookup. An index that cannot be made (out of memory)
 * leaves the scan, which answers the same. */
static const cJSON *cmd_mutate_configmap_member(struct cmd_mutate_configmap *cm, const char *key)
{
    const cJSON *it;

    if (!cm->indexed) {
        cm->indexed = 1;
        strmap_init(&cm->keys, (size_t)-1, CMD_MUTATE_SEED);
        if (cJSON_GetArraySize(cm->data) > CMD_MUTATE_SCAN_MAX)
            cJSON_ArrayForEach(it, cm->data)
            {
                int rc = it->string
                             ? strmap_put(&cm->keys, it->string, strlen(it->string), (void *)it)
                             : ERR_OK;

                if (rc != ERR_OK && rc != ERR_FAIL) { /* ERR_FAIL: a duplicate, first wins */
                    strmap_free(&cm->keys);
                    break;
                }
            }
    }
    if (cm->keys.n)
        return strmap_get(&cm->keys, key, strlen(key));
    return cJSON_GetObjectItemCaseSensitive(cm->data, key);
}

/* A ConfigMap the input holds answers as the API would; one it does not
 * hold may exist in the cluster: unknown, as without the API. */
static enum mutate_envfrom cmd_mutate_configmap_value(void *ctx, const char *ns, const char *name,
                                                      const char *key, char *value, size_t len)
{
    struct cmd_mutate_configmap *cm = cmd_mutate_configmap_find(ctx, ns, name);
    const char *v;

    if (!cm)
        return MUTATE_ENVFROM_UNKNOWN;
    v = cJSON_GetStringValue(cmd_mutate_configmap_member(cm, key));
    if (!v)
        return MUTATE_ENVFROM_LACKS;
    if (value && snprintf(value, len, "%s", v) >= (int)len)
        return MUTATE_ENVFROM_UNKNOWN;
    return MUTATE_ENVFROM_HAS;
}

static enum mutate_envfrom cmd_mutate_configmap_has_key(void *ctx, const char *ns, const char *name,
                                                        const char *key)
{
    return cmd_mutate_configmap_value(ctx, ns, name, key, NULL, 0);
}

/* The namespace of an object that says ns (NULL: none): --namespace or
 * "default", as kubectl applies it; NULL when ns and --namespace differ. */
static const char *cmd_mutate_ns(struct cmd_mutate_ctx *c, const char *ns)
{
    if (ns && *ns && c->namespace_ && strcmp(ns, c->namespace_) != 0) {
        char shown[64];

        fprintf(stderr,
                "rdma-webhook: %sits namespace \"%s\" is not --namespace \"%s\"; drop one\n",
                c->where, cmd_mutate_shown(ns, shown, sizeof(shown)), c->namespace_);
        return NULL;
    }
    return ns && *ns ? ns : c->namespace_ ? c->namespace_ : "default";
}

/* With --node-labels, the pod (or template) the admission reads names a
 * node, so that its labels choose the profile as for a bound pod; a name it
 * has is kept. Changes object in place: ERR_OK, or ERR_NOMEM. */
static int cmd_mutate_bind(const struct cmd_mutate_ctx *c, cJSON *object)
{
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(object, "spec");
    cJSON *node = cJSON_GetObjectItemCaseSensitive(spec, "nodeName");
    cJSON *name;

    if (!c->node_labels || !cJSON_IsObject(spec) ||
        (node && !cJSON_IsNull(node) && !(cJSON_IsString(node) && !*node->valuestring)))
        return ERR_OK; /* no flag; a spec mutate will refuse; a node named, or a non-string */
    if (!(name = cJSON_CreateString(CMD_MUTATE_OFFLINE_NODE)))
        return ERR_NOMEM;
    if (node ? cJSON_ReplaceItemViaPointer(spec, node, name)
             : cJSON_AddItemToObject(spec, "nodeName", name))
        return ERR_OK;
    cJSON_Delete(name);
    return ERR_NOMEM;
}

/* ---- output ---- */

static void cmd_mutate_print_warnings(const struct cmd_mutate_ctx *c,
                                      const struct mutate_warnings *w)
{
    for (size_t i = 0; i < w->n; i++) {
        fprintf(stderr, "Warning: %s%s\n", w->text[i], c->which);
        /* Offline there is no API to read: the fix is a flag. */
        if (w->kind[i] == MUTATE_W_NAMESPACE_LOOKUP && !c->namespace_labels)
            fprintf(stderr, "rdma-webhook: a profile's match.namespaces is a selector: pass "
                            "--namespace-labels K=V,... (the namespace's labels)\n");
        /* No jobset_owner hook offline: the pod alone cannot say whether a
         * TrainJob owns its JobSet. */
        if (w->kind[i] == MUTATE_W_JOB_LOOKUP)
            fprintf(stderr, "rdma-webhook: offline no JobSet is read: label the pod "
                            "rdma-webhook.io/inject=true (or false) to decide\n");
        if (w->kind[i] == MUTATE_W_NODE_LOOKUP && !c->node_labels)
            fprintf(stderr, "rdma-webhook: the pod's kubernetes.io/hostname names nodes: pass "
                            "--node-labels K=V,... (the labels of the node it names)\n");
    }
}

static int cmd_mutate_fail(const struct cmd_mutate_ctx *c, const char *what)
{
    fprintf(stderr, "rdma-webhook: %s%s\n", c->where, what);
    return 1;
}

/* Prints v as the next document: YAML ones separated by "---". */
static int cmd_mutate_print(struct cmd_mutate_ctx *c, const cJSON *v)
{
    struct dynbuf out;
    char err[ERR_LEN] = "";
    int rc = ERR_OK;

    dynbuf_init(&out, CMD_MUTATE_OUTPUT_MAX);
    if (c->format == DOCS_YAML && c->printed)
        rc = dynbuf_addstr(&out, "---\n");
    if (rc == ERR_OK)
        rc = docs_write(&out, v, c->format, err, sizeof(err));
    if (rc == ERR_OK) {
        fwrite(dynbuf_ptr(&out), 1, dynbuf_len(&out), stdout);
        c->printed++;
    }
    dynbuf_free(&out);
    return rc == ERR_OK ? 0 : cmd_mutate_fail(c, err[0] ? err : err_name(rc));
}

/* A response's JSON text: printed as it is, or as YAML. */
static int cmd_mutate_print_text(struct cmd_mutate_ctx *c, const char *json)
{
    cJSON *v;
    int rc;

    if (c->format == DOCS_JSON) {
        puts(json);
        c->printed++;
        return 0;
    }
    if (!(v = cJSON_Parse(json)))
        return cmd_mutate_fail(c, "out of memory");
    rc = cmd_mutate_print(c, v);
    cJSON_Delete(v);
    return rc;
}

/* ---- one object ---- */

static int cmd_mutate_replaces_root(const cJSON *ops)
{
    const cJSON *op;

    cJSON_ArrayForEach(op, ops)
    {
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "path"));

        if (!path || !*path)
            return 1;
    }
    return 0;
}

/* A job's template as mutate reads it: the template with the job's labels
 * the rule reads (an MPIJob launcher's), bound with --node-labels; NULL
 * when the template itself will do. *copy_failed on out of memory. */
static cJSON *cmd_mutate_copy(const struct cmd_mutate_ctx *c, const cJSON *object,
                              const struct cmd_mutjobs_template *t, int *copy_failed)
{
    cJSON *copy;

    *copy_failed = 0;
    if (!c->node_labels && !(t && t->labels[0]))
        return NULL;
    if (!(copy = cJSON_Duplicate(object, 1)) || cmd_mutate_bind(c, copy) ||
        (t && cmd_mutjobs_label_copy(copy, t))) {
        cJSON_Delete(copy);
        *copy_failed = 1;
        return NULL;
    }
    return copy;
}

/* Mutates one pod or template inside doc (at base; t: a job's, else NULL)
 * and applies the patch to doc. The admission may read a copy
 * (cmd_mutate_copy); the patch never touches spec.nodeName nor the labels,
 * so it applies to doc as it is, once the template has the metadata the
 * copy had. */
static int cmd_mutate_apply_into(struct cmd_mutate_ctx *c, cJSON **doc, const cJSON *object,
                                 const char *base, const char *ns,
                                 const struct cmd_mutjobs_template *t)
{
    int copy_failed;
    cJSON *copy = cmd_mutate_copy(c, object, t, &copy_failed);
    struct mutate_input in = {.object = copy ? copy : object,
                              .base = base,
                              .namespace_ = ns,
                              .implicit_target = t ? t->implicit : 0,
                              .job = t ? &t->job : NULL,
                              .opts = &c->opts};
    struct mutate_result res;
    cJSON *ops = NULL;
    char err[ERR_LEN];
    int rc = 0;

    if (copy_failed)
        return cmd_mutate_fail(c, "out of memory");
    mutate_result_init(&res, REVIEW_PATCH_MAX);
    mutate_object(&in, c->ps, &c->hooks, &res);
    cmd_mutate_print_warnings(c, &res.warnings);
    if (res.outcome == MUTATE_PATCHED && copy &&
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(object, "metadata")) &&
        cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(copy, "metadata")) &&
        !cJSON_AddObjectToObject((cJSON *)object, "metadata"))
        rc = cmd_mutate_fail(c, "out of memory");
    if (res.outcome == MUTATE_PATCHED && !rc) {
        /* cJSON_Parse says NULL both out of memory and on text it cannot
         * read, which a patch the webhook wrote would be a bug. So would an
         * operation on the whole document: patch_apply() would free *doc,
         * which may be an item of a List. */
        ops = cJSON_Parse(dynbuf_ptr(&res.patch.out));
        rc = !ops || cmd_mutate_replaces_root(ops) || patch_apply(doc, ops, err, sizeof(err));
        if (rc)
            fprintf(stderr, "rdma-webhook: %scannot apply the patch: %s\n", c->where,
                    !ops ? "out of memory, or unparsable (an internal error)"
                    : cmd_mutate_replaces_root(ops)
                        ? "it replaces the whole object (an internal error)"
                        : err);
    }
    cJSON_Delete(ops);
    cJSON_Delete(copy);
    mutate_result_free(&res);
    return rc;
}

/* ---- --explain ---- */

/* The lines that say what the flags made of the pod. */
static void cmd_mutate_explain_flags(const struct cmd_mutate_ctx *c, struct trace *t,
                                     const cJSON *object, const char *ns)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(object, "spec");
    const char *node = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "nodeName"));
    const cJSON *it;
    struct dynbuf l;

    dynbuf_init(&l, TRACE_LINE_MAX);
    if (c->node_labels && (!node || !*node))
        trace_add(t,
                  "--node-labels: no spec.nodeName, so taken to run on a node \"%s\" that has "
                  "them",
                  CMD_MUTATE_OFFLINE_NODE);
    if (c->namespace_labels) {
        cJSON_ArrayForEach(it, c->namespace_labels)
        {
            dynbuf_printf(&l, "%s%s=%s", dynbuf_len(&l) ? ", " : "", it->string, it->valuestring);
        }
        trace_add(t,
                  "--namespace-labels: namespace \"%s\" has %s (and "
                  "kubernetes.io/metadata.name=%s), for match.namespaces selectors",
                  ns, dynbuf_ptr(&l), ns);
    }
    dynbuf_free(&l);
}

/* The job a template's pods belong to, as the admission is told it. */
static void cmd_mutate_explain_job(struct trace *tr, const struct cmd_mutjobs_template *t)
{
    const struct mutate_job *j = &t->job;

    trace_add(tr, "job: %s %s%s%s%s, role %s%s%s", mutate_job_kind_name(j->kind),
              j->name ? j->name : "(no name)", j->runtime ? " (runtime " : "",
              j->runtime ? j->runtime : "", j->runtime ? ")" : "", j->role ? j->role : "(none)",
              j->ssh_ranks ? "; its ranks may be started over ssh (mpirun)" : "",
              t->implicit ? "" : "; the target rule decides for this role");
}

/* One pod or template (at base; t: a job's, else NULL) explained: a title
 * line, then what mutate_object() decided and why, and its warnings. The
 * admission reads the copy it reads without --explain. */
static int cmd_mutate_explain_one(struct cmd_mutate_ctx *c, const cJSON *object, const char *base,
                                  const char *ns, const struct cmd_mutjobs_template *t,
                                  const char *title)
{
    int copy_failed;
    cJSON *copy = cmd_mutate_copy(c, object, t, &copy_failed);
    struct trace tr;
    struct mutate_input in = {.object = copy ? copy : object,
                              .base = base,
                              .namespace_ = ns,
                              .implicit_target = t ? t->implicit : 0,
                              .job = t ? &t->job : NULL,
                              .opts = &c->opts,
                              .trace = &tr};
    struct mutate_result res;

    if (copy_failed)
        return cmd_mutate_fail(c, "out of memory");
    trace_init(&tr, CMD_MUTATE_EXPLAIN_LINES, CMD_MUTATE_EXPLAIN_BYTES);
    tr.indent = 1;
    cmd_mutate_explain_flags(c, &tr, object, ns);
    if (t)
        cmd_mutate_explain_job(&tr, t);
    mutate_result_init(&res, REVIEW_PATCH_MAX);
    mutate_object(&in, c->ps, &c->hooks, &res);
    printf("%s%s:\n%s", c->printed++ ? "\n" : "", title, trace_finish(&tr));
    mutate_result_free(&res);
    trace_free(&tr);
    cJSON_Delete(copy);
    return 0;
}

/* A review explained: as the server would answer it, so a review it
 * refuses fails here too (exit 1), and one it ignores says so. */
static int cmd_mutate_explain_review(struct cmd_mutate_ctx *c, const cJSON *doc)
{
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(doc, "request");
    const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "namespace"));
    struct review_summary sum;
    struct dynbuf out;
    char *text = cJSON_PrintUnformatted(doc);
    int status;

    if (!text)
        return cmd_mutate_fail(c, "out of memory");
    dynbuf_init(&out, CMD_MUTATE_INPUT_MAX);
    status = review_handle(text, strlen(text), c->ps, NULL, &c->opts, &out, &sum);
    free(text);
    if (status != 200)
        fprintf(stderr, "rdma-webhook: %sHTTP %d: %s\n", c->where, status, dynbuf_ptr(&out));
    dynbuf_free(&out);
    if (status != 200)
        return 1;
    if (review_is_pod_create(req))
        return (ns = cmd_mutate_ns(c, ns)) == NULL
                   ? 1
                   : cmd_mutate_explain_one(c, cJSON_GetObjectItemCaseSensitive(req, "object"),
                                            "/request/object", ns, NULL, c->title);
    printf("%s%s:\n  ignored: the webhook mutates only a Pod CREATE (request.kind Pod, operation "
           "CREATE, no subResource)\n",
           c->printed++ ? "\n" : "", c->title);
    return 0;
}

/* An object printed as it came (with --patched) or not at all: why, on
 * stderr after which object it is, and in the explanation. Returns 0. */
static int cmd_mutate_left(struct cmd_mutate_ctx *c, const char *why)
{
    fprintf(stderr, "rdma-webhook: %sleft as it is: %s\n", c->where, why);
    if (c->explain)
        printf("%s%s:\n  left as it is: %s\n", c->printed++ ? "\n" : "", c->title, why);
    return 0;
}

/* The input's runtime a TrainJob names, or NULL. */
static const cJSON *cmd_mutate_find_runtime(const struct cmd_mutate_ctx *c, const cJSON *trainjob,
                                            const char *ns)
{
    const char *default_ns = c->namespace_ ? c->namespace_ : "default";

    for (size_t i = 0; i < c->docs->n; i++) {
        char kind[64];
        const cJSON *items = docs_list_items(c->docs->v[i], kind, sizeof(kind)), *it;

        if (!items) {
            if (cmd_mutjobs_is_runtime(c->docs->v[i], NULL, trainjob, ns, default_ns))
                return c->docs->v[i];
            continue;
        }
        cJSON_ArrayForEach(it, items)
        {
            if (cmd_mutjobs_is_runtime(it, kind, trainjob, ns, default_ns))
                return it;
        }
    }
    return NULL;
}

/* What each template of a job is mutated in. */
struct cmd_mutate_jobrun {
    struct cmd_mutate_ctx *c;
    cJSON **doc;
    const char *ns;
};

/* One template of the job, at t->base, titled for --explain by t->what. */
static int cmd_mutate_job_template(void *ctx, struct cmd_mutjobs_template *t)
{
    const struct cmd_mutate_jobrun *r = ctx;
    struct cmd_mutate_ctx *c = r->c;
    char title[sizeof(c->title) + CMD_MUTJOBS_WHAT_MAX + 2];

    if (!c->explain)
        return cmd_mutate_apply_into(c, r->doc, t->tmpl, t->base, r->ns, t);
    snprintf(title, sizeof(title), "%s, %s", c->title, t->what);
    return cmd_mutate_explain_one(c, t->tmpl, t->base, r->ns, t, title);
}

/* Each template of doc (owner: the TrainJob of a List of PodTemplates)
 * mutated as a pod the job would create. */
static int cmd_mutate_job_walk(struct cmd_mutate_ctx *c, cJSON **doc,
                               const struct cmd_mutjobs_kind *k, const cJSON *owner, const char *ns)
{
    struct cmd_mutate_jobrun r = {c, doc, ns};
    char err[ERR_LEN];
    int rc = cmd_mutjobs_each(*doc, k, owner, cmd_mutate_job_template, &r, err, sizeof(err));

    return rc < 0 ? cmd_mutate_fail(c, err) : rc;
}

/* Whether the profiles make k's pods targets; says so when not. */
static int cmd_mutate_job_on(struct cmd_mutate_ctx *c, const struct cmd_mutjobs_kind *k,
                             const char *then)
{
    char why[192];

    if (!k->target_bit || (c->ps->targets & k->target_bit))
        return 1;
    snprintf(why, sizeof(why), "a %s's pods are targets only with %s true in the profiles%s",
             k->kind, k->target_name, then);
    cmd_mutate_left(c, why);
    return 0;
}

/* A TrainJob with its runtime: a List of the PodTemplates its JobSet would
 * stamp out, each mutated, in the TrainJob's place (the caller frees it). */
static int cmd_mutate_trainjob(struct cmd_mutate_ctx *c, cJSON **doc,
                               const struct cmd_mutjobs_kind *k, const char *ns)
{
    const cJSON *runtime = cmd_mutate_find_runtime(c, *doc, ns);
    const char *notes;
    char err[ERR_LEN], named[96];
    cJSON *list;
    int rc = 0;

    if (!runtime) {
        cmd_mutjobs_runtime_named(*doc, named, sizeof(named));
        snprintf(
            err, sizeof(err),
            "its runtime (%s) is not in the input: pass it too, e.g. kubectl get "
            "clustertrainingruntime NAME -o yaml (or trainingruntime -n NS) into the same file "
            "or stream",
            named);
        return cmd_mutate_fail(c, err);
    }
    if (cmd_mutjobs_trainjob(*doc, runtime, ns, &list, &notes, err, sizeof(err)))
        return cmd_mutate_fail(c, err);
    if (notes)
        fprintf(stderr, "rdma-webhook: %snote: %s\n", c->where, notes);
    if (cmd_mutate_job_on(c, k, ": its PodTemplates come out unmutated"))
        rc = cmd_mutate_job_walk(c, &list, k, *doc, ns);
    if (rc) {
        cJSON_Delete(list);
        return rc;
    }
    *doc = list;
    return c->patched || c->explain ? 0 : cmd_mutate_print(c, *doc);
}

/* Each template of the job is mutated as a pod the job would create, when
 * the profiles make that kind's pods targets. */
static int cmd_mutate_job(struct cmd_mutate_ctx *c, cJSON **doc, const struct cmd_mutjobs_kind *k)
{
    const char *ns =
        cmd_mutate_ns(c, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(*doc, "metadata"), "namespace")));

    if (!ns)
        return 1;
    if (k->layout == CMD_MUTJOBS_TRAINJOB)
        return cmd_mutate_trainjob(c, doc, k, ns);
    if (!cmd_mutate_job_on(c, k, ""))
        return 0;
    if (cmd_mutate_job_walk(c, doc, k, NULL, ns))
        return 1;
    return c->patched || c->explain ? 0 : cmd_mutate_print(c, *doc);
}

/* Sets request.namespace when the review has none (or an empty one): ERR_OK,
 * or ERR_NOMEM. */
static int cmd_mutate_review_ns(cJSON *req, const char *ns)
{
    const cJSON *have = cJSON_GetObjectItemCaseSensitive(req, "namespace");

    if (!cJSON_IsObject(req) || (cJSON_IsString(have) && *have->valuestring))
        return ERR_OK;
    cJSON_DeleteItemFromObjectCaseSensitive(req, "namespace");
    return cJSON_AddStringToObject(req, "namespace", ns) ? ERR_OK : ERR_NOMEM;
}

/* A review: the response the server would send, or with --patched the
 * review's object with the patch applied (which then replaces *doc). */
static int cmd_mutate_review(struct cmd_mutate_ctx *c, cJSON **doc)
{
    cJSON *req = cJSON_GetObjectItemCaseSensitive(*doc, "request");
    cJSON *object = cJSON_GetObjectItemCaseSensitive(req, "object");
    const char *ns =
        cmd_mutate_ns(c, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "namespace")));
    struct review_summary sum;
    struct dynbuf out;
    char *text;
    int status;

    if (!ns)
        return 1;
    if (c->patched) {
        if (!cJSON_IsObject(object))
            return cmd_mutate_fail(c, "the AdmissionReview has no request.object to patch");
        if (cmd_mutate_apply_into(c, doc, object, "/request/object", ns, NULL))
            return 1;
        *doc = cJSON_DetachItemFromObjectCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(*doc, "request"), "object");
        return 0;
    }
    /* The review is not printed: binding its pod in place, and giving it
     * the namespace it lacks, is safe. */
    if (cmd_mutate_bind(c, object) || cmd_mutate_review_ns(req, ns) ||
        !(text = cJSON_PrintUnformatted(*doc)))
        return cmd_mutate_fail(c, "out of memory");
    dynbuf_init(&out, CMD_MUTATE_INPUT_MAX);
    status = review_handle(text, strlen(text), c->ps, &c->hooks, &c->opts, &out, &sum);
    free(text);
    if (status == 200)
        status = cmd_mutate_print_text(c, dynbuf_ptr(&out)) ? 500 : 200;
    else
        fprintf(stderr, "rdma-webhook: %sHTTP %d: %s\n", c->where, status, dynbuf_ptr(&out));
    dynbuf_free(&out);
    return status != 200;
}

/* A bare Pod: the response a review of it would get, or the patched Pod. */
static int cmd_mutate_pod(struct cmd_mutate_ctx *c, cJSON **doc)
{
    const char *ns =
        cmd_mutate_ns(c, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(*doc, "metadata"), "namespace")));
    struct mutate_input in = {.base = "", .namespace_ = ns, .opts = &c->opts};
    struct mutate_result res;
    struct dynbuf out;
    int rc = 1;

    if (!ns)
        return 1;
    if (c->patched)
        return cmd_mutate_apply_into(c, doc, *doc, "", in.namespace_, NULL);
    if (cmd_mutate_bind(c, *doc))
        return cmd_mutate_fail(c, "out of memory");
    in.object = *doc;
    mutate_result_init(&res, REVIEW_PATCH_MAX);
    dynbuf_init(&out, CMD_MUTATE_INPUT_MAX);
    mutate_object(&in, c->ps, &c->hooks, &res);
    cmd_mutate_print_warnings(c, &res.warnings);
    if (review_write_response(&out, "admission.k8s.io/v1", "offline", &res) == 0)
        rc = cmd_mutate_print_text(c, dynbuf_ptr(&out));
    else
        cmd_mutate_fail(c, "the response does not fit");
    dynbuf_free(&out);
    mutate_result_free(&res);
    return rc;
}

/* Which object this is, for messages, when the input holds several. */
static void cmd_mutate_where(struct cmd_mutate_ctx *c, size_t doc, size_t item, int in_list,
                             const char *kind, const cJSON *o)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name"));
    const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "namespace"));
    char at[48] = "", num[60], k[41], n[64], s[64];

    c->where[0] = c->which[0] = '\0';
    cmd_mutate_shown(kind && *kind ? kind : "no kind", k, sizeof(k));
    cmd_mutate_shown(name ? name : "", n, sizeof(n));
    cmd_mutate_shown(ns ? ns : "", s, sizeof(s));
    if (in_list)
        snprintf(at, sizeof(at), ", item %zu", item + 1);
    /* --explain's title: the document's number only when there are several. */
    num[0] = '\0';
    if (c->objects >= 2)
        snprintf(num, sizeof(num), "document %zu%s: ", doc + 1, at);
    snprintf(c->title, sizeof(c->title), "%s%s%s%s%s%s", num, k, ns || name ? " " : "", s,
             ns ? "/" : "", n);
    if (c->objects < 2)
        return;
    snprintf(c->where, sizeof(c->where), "document %zu%s (%s %s%s%s): ", doc + 1, at, k, s,
             ns ? "/" : "", n);
    /* Warnings keep their own words first, as kubectl prints them. */
    snprintf(c->which, sizeof(c->which), " [document %zu%s, %s %s%s%s]", doc + 1, at, k, s,
             ns ? "/" : "", n);
}

/* One object, by its kind (or the kind its List gives). With --patched,
 * *obj becomes the mutated object (a new one for a review: the caller frees
 * the old); otherwise what it gives is printed here. An object of another
 * kind (a ConfigMap next to the job) is left as it is, as the webhook,
 * which only sees Pods, would leave it. 0, or 1 when it could not be
 * processed (*obj is then as it was). */
static int cmd_mutate_object(struct cmd_mutate_ctx *c, cJSON **obj, const char *list_kind,
                             size_t doc, size_t item)
{
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(*obj, "kind"));
    const struct cmd_mutjobs_kind *job;
    char why[192], shown[65];

    if (!kind && list_kind && *list_kind)
        kind = list_kind;
    cmd_mutate_where(c, doc, item, list_kind != NULL, kind, *obj);
    if (!cJSON_IsObject(*obj))
        return cmd_mutate_fail(c, "not an object");
    if (kind && strcmp(kind, "AdmissionReview") == 0)
        return c->explain ? cmd_mutate_explain_review(c, *obj) : cmd_mutate_review(c, obj);
    if (kind && strcmp(kind, "Pod") == 0) {
        const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(*obj, "metadata"), "namespace"));

        if (!c->explain)
            return cmd_mutate_pod(c, obj);
        return (ns = cmd_mutate_ns(c, ns)) == NULL
                   ? 1
                   : cmd_mutate_explain_one(c, *obj, "", ns, NULL, c->title);
    }
    if (kind && (job = cmd_mutjobs_kind_of(*obj, kind)) != NULL)
        return cmd_mutate_job(c, obj, job);
    if (!kind || !*kind)
        return cmd_mutate_fail(c,
                               "no kind: an AdmissionReview, a Pod or a job (PyTorchJob, MPIJob, "
                               "Volcano Job, JobSet, TrainJob) says which it is in \"kind\"");
    /* A ConfigMap was read before any pod (cmd_mutate_keep_configmaps). */
    if (strcmp(kind, "ConfigMap") == 0)
        return cmd_mutate_left(c, "its data answers the envFrom of the input's pods, as the API "
                                  "would");
    if (strcmp(kind, "ClusterTrainingRuntime") == 0 || strcmp(kind, "TrainingRuntime") == 0)
        return cmd_mutate_left(c, "a runtime: its pod templates come out mutated as the "
                                  "PodTemplates of each TrainJob of the input that uses it");
    snprintf(why, sizeof(why),
             "the webhook mutates Pods (and, offline, the pod templates of PyTorchJobs, MPIJobs, "
             "Volcano Jobs, JobSets and TrainJobs), not a %s",
             cmd_mutate_shown(kind, shown, sizeof(shown)));
    return cmd_mutate_left(c, why);
}

/* A List's items one by one; a mutated item takes its place. */
static int cmd_mutate_list(struct cmd_mutate_ctx *c, cJSON *items, const char *kind, size_t doc)
{
    cJSON *it = items->child;
    size_t i = 0;
    int rc = 0;

    while (it) {
        cJSON *next = it->next, *cur = it;

        rc |= cmd_mutate_object(c, &cur, kind, doc, i++);
        if (cur != it && !cJSON_ReplaceItemViaPointer(items, it, cur))
            rc |= cmd_mutate_fail(c, "out of memory"); /* cannot happen: it is in items */
        it = next;
    }
    return rc;
}

static size_t cmd_mutate_count(const struct docs *d)
{
    size_t n = 0;
    char kind[64];

    for (size_t i = 0; i < d->n; i++) {
        cJSON *items = docs_list_items(d->v[i], kind, sizeof(kind));

        n += items ? (size_t)cJSON_GetArraySize(items) : 1;
    }
    return n;
}

/* Keeps o when it is a ConfigMap (a List item takes list_kind), indexed
 * by "ns/name": ERR_OK, or ERR_NOMEM. The first of two with one name is
 * the one found, as it was by a scan. */
static int cmd_mutate_keep_configmap(struct cmd_mutate_ctx *c, const cJSON *o,
                                     const char *list_kind)
{
    struct cmd_mutate_configmap *cm;
    size_t len;
    int rc;

    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "kind"));
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name"));
    const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "namespace"));

    if (!kind)
        kind = list_kind;
    if (!kind || strcmp(kind, "ConfigMap") != 0 || !name)
        return ERR_OK;
    if (!ns || !*ns)
        ns = c->namespace_ ? c->namespace_ : "default";
    cm = &c->configmaps[c->n_configmaps];
    *cm = (struct cmd_mutate_configmap){
        .ns = ns, .name = name, .data = cJSON_GetObjectItemCaseSensitive(o, "data")};
    len = strlen(ns) + 1 + strlen(name);
    if (!(cm->key = malloc(len + 1)))
        return ERR_NOMEM;
    snprintf(cm->key, len + 1, "%s/%s", ns, name);
    c->n_configmaps++;
    rc = strmap_put(&c->configmap_index, cm->key, len, cm);
    /* ERR_FAIL: a second one of that name, not kept (the first is found). */
    return rc == ERR_OK || rc == ERR_FAIL ? ERR_OK : ERR_NOMEM;
}

/* The ConfigMaps of the input, before any pod is mutated: a pod's envFrom
 * may name one that comes after it. ERR_OK, or ERR_NOMEM. */
static int cmd_mutate_keep_configmaps(struct cmd_mutate_ctx *c, const struct docs *d)
{
    c->configmaps = calloc(c->objects, sizeof(*c->configmaps));
    if (!c->configmaps)
        return ERR_NOMEM;
    strmap_init(&c->configmap_index, c->objects, CMD_MUTATE_SEED);
    for (size_t i = 0; i < d->n; i++) {
        char kind[64];
        const cJSON *items = docs_list_items(d->v[i], kind, sizeof(kind)), *it;

        if (!items) {
            if (cmd_mutate_keep_configmap(c, d->v[i], NULL))
                return ERR_NOMEM;
            continue;
        }
        cJSON_ArrayForEach(it, items)
        {
            if (cmd_mutate_keep_configmap(c, it, kind))
                return ERR_NOMEM;
        }
    }
    if (c->n_configmaps) {
        c->hooks.configmap_has_key = cmd_mutate_configmap_has_key;
        c->hooks.configmap_value = cmd_mutate_configmap_value;
        c->hooks.ctx = c;
    }
    return ERR_OK;
}

static void cmd_mutate_free_configmaps(struct cmd_mutate_ctx *c)
{
    for (size_t i = 0; i < c->n_configmaps; i++) {
        free(c->configmaps[i].key);
        strmap_free(&c->configmaps[i].keys);
    }
    strmap_free(&c->configmap_index);
    free(c->configmaps);
}

/* Every object of every document; with --patched, every document printed
 * (one that could not be processed as it was). */
static int cmd_mutate_docs(struct cmd_mutate_ctx *c, struct docs *d)
{
    int rc = 0;

    c->docs = d;
    c->objects = cmd_mutate_count(d);
    if (c->objects == 0) {
        fprintf(stderr, "rdma-webhook: no object in the input\n");
        return 1;
    }
    if (cmd_mutate_keep_configmaps(c, d)) {
        fprintf(stderr, "rdma-webhook: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < d->n; i++) {
        char kind[64];
        cJSON *items = docs_list_items(d->v[i], kind, sizeof(kind));
        cJSON *cur = d->v[i];

        if (items)
            rc |= cmd_mutate_list(c, items, kind, i);
        else
            rc |= cmd_mutate_object(c, &cur, NULL, i, 0);
        if (cur != d->v[i]) {
            cJSON_Delete(d->v[i]);
            d->v[i] = cur;
        }
        if (c->patched)
            rc |= cmd_mutate_print(c, d->v[i]);
    }
    return rc;
}

/* -o json|yaml into *format: ERR_OK, or ERR_FAIL with what it takes in err. */
static int cmd_mutate_format(const char *arg, int *format, char *err, size_t errlen)
{
    if (strcmp(arg, "json") == 0)
        *format = DOCS_JSON;
    else if (strcmp(arg, "yaml") == 0)
        *format = DOCS_YAML;
    else
        return err_set(err, errlen, ERR_FAIL, "-o takes json or yaml, not \"%s\"", arg);
    return ERR_OK;
}

int cmd_mutate(int argc, char **argv)
{
    static const struct option opts[] = {{"profiles", required_argument, NULL, 'p'},
                                         {"patched", no_argument, NULL, 'P'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"node-labels", required_argument, NULL, 'N'},
                                         {"namespace-labels", required_argument, NULL, 'S'},
                                         {"namespace", required_argument, NULL, 'n'},
                                         {"detect-image", required_argument, NULL, 'i'},
                                         {"explain", no_argument, NULL, 'E'},
                                         {"mode", required_argument, NULL, 'm'},
                                         {"pod-security-config", required_argument, NULL, 'C'},
                                         {"ipc-lock", required_argument, NULL, 'L'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *profiles = CMD_DEFAULT_PROFILES, *path = "-", *podsec_path = NULL;
    struct cmd_mutate_ctx ctx = {0};
    struct podsecconf podsec;
    struct profiles *ps = NULL;
    struct dynbuf input;
    struct docs d;
    char err[ERR_LEN] = "";
    int c, format = -1, rc = 2;

    docs_init(&d);
    dynbuf_init(&input, CMD_MUTATE_INPUT_MAX);
    podsecconf_init(&podsec);
    while ((c = getopt_long(argc, argv, "ho:n:", opts, NULL)) != -1) {
        if (c == 'p') {
            profiles = optarg;
        } else if (c == 'n') {
            if (!k8sname_label(optarg)) {
                fprintf(stderr,
                        "rdma-webhook mutate: --namespace: \"%s\" is not a namespace name (a "
                        "DNS-1123 label)\n",
                        optarg);
                goto out;
            }
            ctx.namespace_ = optarg;
        } else if (c == 'P') {
            ctx.patched = 1;
        } else if (c == 'E') {
            ctx.explain = 1;
        } else if (c == 'o') {
            if (cmd_mutate_format(optarg, &format, err, sizeof(err))) {
                fprintf(stderr, "rdma-webhook mutate: %s\n", err);
                goto out;
            }
        } else if (c == 'N' || c == 'S') {
            if (cmd_mutate_parse_labels(c == 'N' ? "node-labels" : "namespace-labels", optarg,
                                        c == 'N' ? &ctx.node_labels : &ctx.namespace_labels, err,
                                        sizeof(err))) {
                fprintf(stderr, "rdma-webhook mutate: %s\n", err);
                goto out;
            }
        } else if (c == 'i') {
            if (cmd_check_image(optarg, err, sizeof(err)) != ERR_OK) {
                fprintf(stderr, "rdma-webhook mutate: %s\n", err);
                goto out;
            }
            ctx.opts.detect_image = optarg;
        } else if (c == 'm') {
            if ((ctx.opts.mode = report_mode_parse(optarg)) == REPORT_MODE_UNSET) {
                fprintf(stderr, "rdma-webhook mutate: --mode takes enforce or report, not \"%s\"\n",
                        optarg);
                goto out;
            }
        } else if (c == 'L') {
            if (mutate_ipc_lock_parse(optarg, &ctx.opts.ipc_lock) != ERR_OK) {
                fprintf(stderr, "rdma-webhook mutate: --ipc-lock takes auto or never, not \"%s\"\n",
                        optarg);
                goto out;
            }
        } else if (c == 'C') {
            podsec_path = optarg;
        } else if (c == 'h') {
            cmd_mutate_usage(stdout);
            rc = 0;
            goto out;
        } else {
            cmd_mutate_usage(stderr);
            goto out;
        }
    }
    if (argc - optind > 1) {
        cmd_mutate_usage(stderr);
        goto out;
    }
    /* The explanation is text: there is no object for -o to format, nor a
     * patched one to print. */
    if (ctx.explain && (ctx.patched || format >= 0)) {
        fprintf(stderr,
                "rdma-webhook mutate: --explain prints text, not objects: leave out %s (run "
                "without --explain for the objects)\n",
                ctx.patched ? "--patched" : "-o");
        goto out;
    }
    if (optind < argc)
        path = argv[optind];
    rc = 1;
    if (!(ps = cmd_profiles_load(profiles, "pass --profiles FILE")))
        goto out;
    if (podsec_path && podsecconf_load(&podsec, podsec_path, err, sizeof(err))) {
        fprintf(stderr, "rdma-webhook mutate: --pod-security-config: %s\n", err);
        goto out;
    }
    ctx.opts.podsec = &podsec.cfg;
    if (fsutil_read(path, &input, err, sizeof(err)) ||
        docs_read(&d, dynbuf_ptr(&input), dynbuf_len(&input), NULL, err, sizeof(err))) {
        fprintf(stderr, "rdma-webhook: %s: %s\n", strcmp(path, "-") ? path : "stdin", err);
        goto out;
    }
    ctx.ps = ps;
    ctx.format = format >= 0 ? (enum docs_format)format : ctx.patched ? d.format : DOCS_JSON;
    ctx.hooks.select.node_labels = ctx.node_labels ? cmd_mutate_node_labels : NULL;
    ctx.hooks.select.namespace_labels = ctx.namespace_labels ? cmd_mutate_namespace_labels : NULL;
    ctx.hooks.select.ctx = &ctx;
    rc = cmd_mutate_docs(&ctx, &d);
out:
    docs_free(&d);
    profiles_free(ps);
    dynbuf_free(&input);
    cJSON_Delete(ctx.node_labels);
    cJSON_Delete(ctx.namespace_labels);
    cmd_mutate_free_configmaps(&ctx);
    podsecconf_free(&podsec);
    return rc;
}
