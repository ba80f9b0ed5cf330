/* unregister: deletes the webhook's Mutating and Validating
 * WebhookConfigurations, so that an uninstall (the chart's pre-delete hook)
 * removes them before the Service and the Deployment behind them: no moment
 * where the apiserver calls a webhook that is gone. A 404 is success (already
 * gone: the hook may run twice). One line per object on stdout; an error on
 * stderr says what to fix (the verb and resource for a 403). */
#include "cmd/cmd.h"

#include "base/dynbuf.h"
#include "kube/kubeapi.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* A 200 answers with the deleted object, caBundles and all: etcd keeps none
 * over 1.5 MiB, so 2 MiB never refuses the answer of a deletion that took
 * place (which would report a failure). */
#define CMD_UNREG_RESP_MAX (2 * 1024 * 1024)
/* Each DELETE: long enough for a loaded apiserver, short enough that a
 * hook Job with a small activeDeadlineSeconds reports why it failed. */
#define CMD_UNREG_TIMEOUT_MS 15000L
/* A name of --webhook-configs: 253 bytes of DNS-1123 subdomain and a NUL. */
#define CMD_UNREG_NAME_MAX 254

struct cmd_unreg_flags {
    const char *configs, *kube_api, *kube_ca, *kube_token_file;
};

static void cmd_unreg_usage(FILE *f)
{
    fprintf(f, "Usage: rdma-webhook unregister [--webhook-configs MWC,VWC] [--kube-api URL\n"
               "                               --kube-ca FILE --kube-token-file FILE]\n"
               "\n"
               "Deletes the webhook's MutatingWebhookConfiguration MWC and\n"
               "ValidatingWebhookConfiguration VWC, so that the apiserver stops calling the\n"
               "webhook before it goes (the Helm chart's pre-delete hook). One already gone\n"
               "counts as deleted. Exits 0 when both are gone, 1 otherwise.\n"
               "\n"
               "  --webhook-configs MWC,VWC   the two names; an empty one is skipped\n"
               "                              (default rdma-webhook,rdma-webhook)\n"
               "  --kube-api URL              API server, e.g. https://127.0.0.1:6443 (default:\n"
               "                              in cluster, from KUBERNETES_SERVICE_HOST/PORT)\n"
               "  --kube-ca FILE              CA of the API server (with --kube-api)\n"
               "  --kube-token-file FILE      bearer token (with --kube-api)\n"
               "  -h, --help                  show this help\n");
}

/* 0 to go on, 1 for --help, 2 for a usage error (printed). */
static int cmd_unreg_parse(int argc, char **argv, struct cmd_unreg_flags *o)
{
    static const struct option opts[] = {{"webhook-configs", required_argument, NULL, 'w'},
                                         {"kube-api", required_argument, NULL, 'a'},
                                         {"kube-ca", required_argument, NULL, 'c'},
                                         {"kube-token-file", required_argument, NULL, 't'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *why = NULL, *comma;
    int c;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'w': o->configs = optarg; break;
        case 'a': o->kube_api = optarg; break;
        case 'c': o->kube_ca = optarg; break;
        case 't': o->kube_token_file = optarg; break;
        case 'h': cmd_unreg_usage(stdout); return 1;
        default: cmd_unreg_usage(stderr); return 2;
        }
    }
    comma = strchr(o->configs, ',');
    if (optind < argc)
        why = "unexpected argument; see --help";
    else if (!comma || strchr(comma + 1, ',') ||
             (size_t)(comma - o->configs) >= CMD_UNREG_NAME_MAX ||
             strlen(comma + 1) >= CMD_UNREG_NAME_MAX)
        why = "--webhook-configs takes MUTATING,VALIDATING (either may be empty)";
    else if (o->kube_api && (!o->kube_ca || !o->kube_token_file))
        why = "--kube-api needs --kube-ca and --kube-token-file";
    if (!why)
        return 0;
    fprintf(stderr, "rdma-webhook unregister: %s\n", why);
    return 2;
}

/* The Status' message of an error response, or "" (none, or not JSON). */
static void cmd_unreg_message(const struct dynbuf *resp, char *msg, size_t len)
{
    cJSON *st = resp->len ? cJSON_ParseWithLength(resp->mem, resp->len) : NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(st, "message");

    snprintf(msg, len, "%s", cJSON_IsString(m) ? m->valuestring : "");
    cJSON_Delete(st);
}

/* Prints what an answer other than 200/202/404 means, and what to do. */
static void cmd_unreg_explain(long status, const char *resource, const char *name,
                              const struct dynbuf *resp)
{
    char msg[300];

    cmd_unreg_message(resp, msg, sizeof(msg));
    if (status == 403)
        fprintf(stderr,
                "rdma-webhook unregister: forbidden to delete %s %s: grant its service account "
                "verb \"delete\" on admissionregistration.k8s.io %s, resourceNames [%s]%s%s\n",
                resource, name, resource, name, *msg ? ": " : "", msg);
    else if (status == 401)
        fprintf(stderr,
                "rdma-webhook unregister: the API refused the token (401) deleting %s %s: check "
                "the service account token%s%s\n",
                resource, name, *msg ? ": " : "", msg);
    else
        fprintf(stderr, "rdma-webhook unregister: deleting %s %s: HTTP %ld%s%s\n", resource, name,
                status, *msg ? ": " : "", msg);
}

/* DELETEs one configuration: 0 when it is gone (now or before), 1 not. */
static int cmd_unreg_delete(struct kubeapi *api, const char *resource, const char *name)
{
    char path[512], err[ERR_LEN];
    struct dynbuf resp;
    long status = 0;
    int rc = 1;
    struct kubeapi_request req = {
        .method = "DELETE", .path = path, .timeout_ms = CMD_UNREG_TIMEOUT_MS};

    dynbuf_init(&resp, CMD_UNREG_RESP_MAX);
    /* The names are at most 253 bytes (the flags' check), so this fits. */
    snprintf(path, sizeof(path), "/apis/admissionregistration.k8s.io/v1/%s/%s", resource, name);
    if (kubeapi_call(api, &req, &resp, &status, err, sizeof(err))) {
        fprintf(stderr, "rdma-webhook unregister: deleting %s %s: %s\n", resource, name, err);
        goto cleanup;
    }
    if (status == 200 || status == 202)
        printf("%s %s deleted\n", resource, name);
    else if (status == 404)
        printf("%s %s already gone\n", resource, name);
    else {
        cmd_unreg_explain(status, resource, name, &resp);
        goto cleanup;
    }
    rc = 0;
cleanup:
    dynbuf_free(&resp);
    return rc;
}

/* Both names, each tried even when the other failed (the more removed, the
 * fewer calls to a webhook that is going): 0 when both are gone, else 1. */
static int cmd_unreg_run(struct kubeapi *api, const char *configs)
{
    const char *comma = strchr(configs, ',');
    char mwc[CMD_UNREG_NAME_MAX];
    int rc = 0;

    snprintf(mwc, sizeof(mwc), "%.*s", (int)(comma - configs), configs);
    if (*mwc)
        rc |= cmd_unreg_delete(api, "mutatingwebhookconfigurations", mwc);
    if (comma[1])
        rc |= cmd_unreg_delete(api, "validatingwebhookconfigurations", comma + 1);
    return rc;
}

int cmd_unregister(int argc, char **argv)
{
    struct cmd_unreg_flags o = {.configs = "rdma-webhook,rdma-webhook"};
    struct kubeapi *api = NULL;
    char err[ERR_LEN];
    int rc = cmd_unreg_parse(argc, argv, &o);

    if (rc)
        return rc == 1 ? 0 : 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (o.kube_api ? kubeapi_init(&api, o.kube_api, o.kube_ca, o.kube_token_file, err, sizeof(err))
                   : kubeapi_init_in_cluster(&api, err, sizeof(err))) {
        fprintf(stderr, "rdma-webhook unregister: %s\n", err);
        rc = 1;
        goto cleanup;
    }
    rc = cmd_unreg_run(api, o.configs);
cleanup:
    kubeapi_stop(&api);
    curl_global_cleanup();
    return rc;
}
