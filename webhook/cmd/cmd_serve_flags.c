#include "cmd/cmd_serve_flags.h"

#include "cmd/cmd.h"
#include "base/k8sname.h"
#include "admission/mutate.h"
#include "admission/report.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void cmd_serve_flags_usage(FILE *f)
{
    fprintf(
        f,
        "Usage: rdma-webhook serve [flags]\n"
        "\n"
        "Serves the mutating admission webhook over HTTPS.\n"
        "\n"
        "Flags:\n"
        "  --listen ADDR:PORT            HTTPS address for /mutate, /healthz, /readyz "
        "(default :8443)\n"
        "  --metrics-listen ADDR:PORT    address for /metrics, /healthz, /readyz; \"\" turns\n"
        "                                it off (default :9090)\n"
        "  --metrics-auth MODE           kubernetes: the metrics port speaks HTTPS with the\n"
        "                                serving certificate and /metrics needs a bearer\n"
        "                                token allowed get on the URL /metrics (TokenReview,\n"
        "                                SubjectAccessReview); none: plain HTTP, open\n"
        "                                (default: kubernetes when the API is used, else none)\n"
        "  --tls-cert-file FILE          serving certificate, PEM (default %s)\n"
        "  --tls-private-key-file FILE   its private key, PEM (default %s)\n"
        "  --client-ca FILE              require a TLS client certificate signed by a CA of\n"
        "                                FILE (PEM) on the HTTPS port: the apiserver's, from\n"
        "                                its AdmissionConfiguration; other clients are\n"
        "                                refused at the handshake. Watched and reloaded like\n"
        "                                the certificate (default: any client)\n"
        "  --client-names NAME,...       with --client-ca: the client certificate must also\n"
        "                                name one of these, as its CN or a DNS SAN (default:\n"
        "                                any name)\n"
        "  --profiles FILE               profiles JSON, reloaded when it changes (default %s)\n"
        "  --profiles-configmap NS/NAME  instead of --profiles: list and watch the profiles\n"
        "                                in ConfigMap NS/NAME through the Kubernetes API\n"
        "  --profiles-key KEY            the ConfigMap key holding them (default profiles.json)\n"
        "  --profiles-last-good NAME     with --profiles-configmap: the ConfigMap, in the same\n"
        "                                namespace, where the webhook keeps the last valid\n"
        "                                version, served after a restart while the current one\n"
        "                                is invalid (default: NAME-last-good; \"\" turns it off)\n"
        "  --stale-log-seconds N         while an old version serves, log an error this often\n"
        "                                (default 60)\n"
        "  --kube-api URL                API server, e.g. https://127.0.0.1:6443 (default: in\n"
        "                                cluster, from KUBERNETES_SERVICE_HOST/PORT)\n"
        "  --kube-ca FILE                CA of the API server (default: the service account's)\n"
        "  --kube-token-file FILE        bearer token, re-read before every request (default:\n"
        "                                the service account's)\n"
        "  --no-kube-api                 do not use the API even in a cluster (no Node,\n"
        "                                Namespace, envFrom or JobSet lookups)\n"
        "  --api-budget-ms N             most time the API lookups of one admission may take\n"
        "                                (default 2000)\n"
        "  --node-cache-seconds N        how long a Node's labels are reused (default 30)\n"
        "  --configmap-cache-seconds N   how long an envFrom ConfigMap's keys are reused\n"
        "                                (default 10)\n"
        "  --namespace-cache-seconds N   how long a Namespace's labels are reused, so how\n"
        "                                soon a label change applies (default 10)\n"
        "  --job-cache-seconds N         how long a JobSet's owner and a TrainJob's runtime\n"
        "                                are reused (default 10)\n"
        "  --watch-timeout-seconds N     timeoutSeconds of each profiles watch (default 300)\n"
        "  --max-body-bytes N            largest AdmissionReview accepted (default 8388608)\n"
        "  --body-budget-bytes N         memory for request bodies being received, all\n"
        "                                connections together; a body that does not fit\n"
        "                                gets 503. At least twice --max-body-bytes\n"
        "                                (default: that or 33554432, whichever is more)\n"
        "  --threads N                   TLS worker threads, each with its own listening\n"
        "                                socket on the port (default: CPUs, at most 8)\n"
        "  --connection-timeout SECONDS  idle connections are closed after this, and a kept-\n"
        "                                alive one that has not sent its next request's\n"
        "                                headers by then (default 30)\n"
        "  --header-timeout SECONDS      a new connection must finish its TLS handshake and\n"
        "                                its request's headers within this (default 10)\n"
        "  --body-timeout SECONDS        and the request's body within this after the\n"
        "                                headers (default 10)\n"
        "  --max-connections N           concurrent connections (default 4096); at the limit\n"
        "                                a new one displaces the one waiting longest for its\n"
        "                                request\n"
        "  --shutdown-grace SECONDS      on SIGTERM, wait this long for requests in flight "
        "(default 10)\n"
        "  --reload-interval-ms N        also re-check the profiles and certificate files\n"
        "                                this often, for file systems without inotify\n"
        "                                (default 1000)\n"
        "  --log-level LEVEL             debug, info, warn or error (default info); debug\n"
        "                                adds libmicrohttpd's per-connection messages\n"
        "  --detect-image IMAGE          the image of the init container rdma-webhook-detect\n"
        "                                that profiles with \"detect\" add: this webhook's own\n"
        "                                (the manifests set it from the Deployment's image);\n"
        "                                without it such profiles get no detection, and a\n"
        "                                warning\n"
        "  --detect-image-from-deployment NS/NAME\n"
        "                                instead of --detect-image: at start, the image of\n"
        "                                the first container of Deployment NS/NAME, read\n"
        "                                through the API (the manifests name their own)\n"
        "  --mode enforce|report         report: pods get only the annotation\n"
        "                                rdma-webhook.io/report, what enforce would add;\n"
        "                                a profile's \"mode\" and the namespace label\n"
        "                                rdma-webhook.io/mode win over it (default enforce)\n"
        "  --ipc-lock auto|never         never: add IPC_LOCK to no container, for clusters\n"
        "                                whose policies (Kyverno, Gatekeeper, a\n"
        "                                ValidatingAdmissionPolicy) refuse added\n"
        "                                capabilities; the namespace label\n"
        "                                rdma-webhook.io/ipc-lock=false and a profile's\n"
        "                                \"ipcLock\": false do it for fewer pods (default auto)\n"
        "  --pod-security-config FILE    the cluster's PodSecurity defaults and exemptions:\n"
        "                                the apiserver's --admission-control-config-file or\n"
        "                                the PodSecurityConfiguration it names, read at start\n"
        "                                (default: PodSecurity's own, privileged, no\n"
        "                                exemptions)\n"
        "  --cert-secret NS/NAME         certificates that look after themselves: keep the CA\n"
        "                                and serving pair in Secret NS/NAME (made when\n"
        "                                missing), write the CA bundle into the webhook\n"
        "                                configurations, renew both before they expire, and\n"
        "                                serve the Secret's pair (written to --tls-cert-file\n"
        "                                and --tls-private-key-file, which must be writable)\n"
        "  --webhook-configs MWC,VWC     with --cert-secret: the Mutating and Validating\n"
        "                                WebhookConfigurations whose caBundle it writes; an\n"
        "                                empty name skips one (default rdma-webhook,rdma-webhook)\n"
        "  --cert-service NAME           with --cert-secret: the Service the certificate names,\n"
        "                                in the Secret's namespace (default rdma-webhook)\n"
        "  --cert-days N                 with --cert-secret: serving certificate validity,\n"
        "                                renewed with a third left (default 365)\n"
        "  --ca-days N                   with --cert-secret: CA validity, renewed with a third\n"
        "                                left (default 3650)\n"
        "  --cert-sync-seconds N         with --cert-secret: how often the Secret and the\n"
        "                                caBundles are checked (default 60)\n"
        "  --ca-overlap-seconds N        with --cert-secret: how long a new CA sits in the\n"
        "                                bundle before it signs, and the old one after\n"
        "                                (default 3600)\n"
        "  -h, --help                    show this help\n"
        "\n"
        "The certificate and key files are watched too and swapped without a restart.\n"
        "Signals: SIGTERM/SIGINT drain and exit 0; SIGHUP reloads profiles and certificate.\n",
        CMD_DEFAULT_CERT, CMD_DEFAULT_KEY, CMD_DEFAULT_PROFILES);
}

enum cmd_serve_flags_flag {
    CMD_SERVE_FLAGS_LISTEN = 256,
    CMD_SERVE_FLAGS_METRICS_LISTEN,
    CMD_SERVE_FLAGS_CERT,
    CMD_SERVE_FLAGS_KEY,
    CMD_SERVE_FLAGS_PROFILES,
    CMD_SERVE_FLAGS_PROFILES_CM,
    CMD_SERVE_FLAGS_MAX_BODY,
    CMD_SERVE_FLAGS_THREADS,
    CMD_SERVE_FLAGS_CONN_TIMEOUT,
    CMD_SERVE_FLAGS_MAX_CONN,
    CMD_SERVE_FLAGS_GRACE,
    CMD_SERVE_FLAGS_RELOAD,
    CMD_SERVE_FLAGS_LOG_LEVEL,
    CMD_SERVE_FLAGS_PROFILES_KEY,
    CMD_SERVE_FLAGS_KUBE_API,
    CMD_SERVE_FLAGS_KUBE_CA,
    CMD_SERVE_FLAGS_KUBE_TOKEN,
    CMD_SERVE_FLAGS_NO_KUBE_API,
    CMD_SERVE_FLAGS_API_BUDGET,
    CMD_SERVE_FLAGS_NODE_CACHE,
    CMD_SERVE_FLAGS_CM_CACHE,
    CMD_SERVE_FLAGS_NS_CACHE,
    CMD_SERVE_FLAGS_JOB_CACHE,
    CMD_SERVE_FLAGS_WATCH_TIMEOUT,
    CMD_SERVE_FLAGS_HEADER_TIMEOUT,
    CMD_SERVE_FLAGS_BODY_TIMEOUT,
    CMD_SERVE_FLAGS_BODY_BUDGET,
    CMD_SERVE_FLAGS_DETECT_IMAGE,
    CMD_SERVE_FLAGS_DETECT_DEPLOYMENT,
    CMD_SERVE_FLAGS_LAST_GOOD,
    CMD_SERVE_FLAGS_STALE_LOG,
    CMD_SERVE_FLAGS_MODE,
    CMD_SERVE_FLAGS_POD_SECURITY_CONFIG,
    CMD_SERVE_FLAGS_IPC_LOCK,
    CMD_SERVE_FLAGS_CLIENT_CA,
    CMD_SERVE_FLAGS_CLIENT_NAMES,
    CMD_SERVE_FLAGS_METRICS_AUTH,
    CMD_SERVE_FLAGS_CERT_SECRET,
    CMD_SERVE_FLAGS_WEBHOOK_CONFIGS,
    CMD_SERVE_FLAGS_CERT_SERVICE,
    CMD_SERVE_FLAGS_CERT_DAYS,
    CMD_SERVE_FLAGS_CA_DAYS,
    CMD_SERVE_FLAGS_CERT_SYNC,
    CMD_SERVE_FLAGS_CA_OVERLAP,
};

static const struct option cmd_serve_flags_options[] = {
    {"listen", required_argument, NULL, CMD_SERVE_FLAGS_LISTEN},
    {"metrics-listen", required_argument, NULL, CMD_SERVE_FLAGS_METRICS_LISTEN},
    {"tls-cert-file", required_argument, NULL, CMD_SERVE_FLAGS_CERT},
    {"tls-private-key-file", required_argument, NULL, CMD_SERVE_FLAGS_KEY},
    {"profiles", required_argument, NULL, CMD_SERVE_FLAGS_PROFILES},
    {"profiles-configmap", required_argument, NULL, CMD_SERVE_FLAGS_PROFILES_CM},
    {"max-body-bytes", required_argument, NULL, CMD_SERVE_FLAGS_MAX_BODY},
    {"threads", required_argument, NULL, CMD_SERVE_FLAGS_THREADS},
    {"connection-timeout", required_argument, NULL, CMD_SERVE_FLAGS_CONN_TIMEOUT},
    {"max-connections", required_argument, NULL, CMD_SERVE_FLAGS_MAX_CONN},
    {"shutdown-grace", required_argument, NULL, CMD_SERVE_FLAGS_GRACE},
    {"reload-interval-ms", required_argument, NULL, CMD_SERVE_FLAGS_RELOAD},
    {"log-level", required_argument, NULL, CMD_SERVE_FLAGS_LOG_LEVEL},
    {"profiles-key", required_argument, NULL, CMD_SERVE_FLAGS_PROFILES_KEY},
    {"kube-api", required_argument, NULL, CMD_SERVE_FLAGS_KUBE_API},
    {"kube-ca", required_argument, NULL, CMD_SERVE_FLAGS_KUBE_CA},
    {"kube-token-file", required_argument, NULL, CMD_SERVE_FLAGS_KUBE_TOKEN},
    {"no-kube-api", no_argument, NULL, CMD_SERVE_FLAGS_NO_KUBE_API},
    {"api-budget-ms", required_argument, NULL, CMD_SERVE_FLAGS_API_BUDGET},
    {"node-cache-seconds", required_argument, NULL, CMD_SERVE_FLAGS_NODE_CACHE},
    {"configmap-cache-seconds", required_argument, NULL, CMD_SERVE_FLAGS_CM_CACHE},
    {"namespace-cache-seconds", required_argument, NULL, CMD_SERVE_FLAGS_NS_CACHE},
    {"job-cache-seconds", required_argument, NULL, CMD_SERVE_FLAGS_JOB_CACHE},
    {"watch-timeout-seconds", required_argument, NULL, CMD_SERVE_FLAGS_WATCH_TIMEOUT},
    {"header-timeout", required_argument, NULL, CMD_SERVE_FLAGS_HEADER_TIMEOUT},
    {"body-timeout", required_argument, NULL, CMD_SERVE_FLAGS_BODY_TIMEOUT},
    {"body-budget-bytes", required_argument, NULL, CMD_SERVE_FLAGS_BODY_BUDGET},
    {"detect-image", required_argument, NULL, CMD_SERVE_FLAGS_DETECT_IMAGE},
    {"detect-image-from-deployment", required_argument, NULL, CMD_SERVE_FLAGS_DETECT_DEPLOYMENT},
    {"profiles-last-good", required_argument, NULL, CMD_SERVE_FLAGS_LAST_GOOD},
    {"stale-log-seconds", required_argument, NULL, CMD_SERVE_FLAGS_STALE_LOG},
    {"mode", required_argument, NULL, CMD_SERVE_FLAGS_MODE},
    {"pod-security-config", required_argument, NULL, CMD_SERVE_FLAGS_POD_SECURITY_CONFIG},
    {"ipc-lock", required_argument, NULL, CMD_SERVE_FLAGS_IPC_LOCK},
    {"client-ca", required_argument, NULL, CMD_SERVE_FLAGS_CLIENT_CA},
    {"client-names", required_argument, NULL, CMD_SERVE_FLAGS_CLIENT_NAMES},
    {"metrics-auth", required_argument, NULL, CMD_SERVE_FLAGS_METRICS_AUTH},
    {"cert-secret", required_argument, NULL, CMD_SERVE_FLAGS_CERT_SECRET},
    {"webhook-configs", required_argument, NULL, CMD_SERVE_FLAGS_WEBHOOK_CONFIGS},
    {"cert-service", required_argument, NULL, CMD_SERVE_FLAGS_CERT_SERVICE},
    {"cert-days", required_argument, NULL, CMD_SERVE_FLAGS_CERT_DAYS},
    {"ca-days", required_argument, NULL, CMD_SERVE_FLAGS_CA_DAYS},
    {"cert-sync-seconds", required_argument, NULL, CMD_SERVE_FLAGS_CERT_SYNC},
    {"ca-overlap-seconds", required_argument, NULL, CMD_SERVE_FLAGS_CA_OVERLAP},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Numeric flags: the option, its range, and where the value goes. ERR_OK, or
 * ERR_FAIL with the flag and its range in err. */
static int cmd_serve_flags_numeric(struct cmd_serve_flags *o, int flag, char *err, size_t errlen)
{
    const struct {
        int flag;
        unsigned long long min, max;
        unsigned *dst;
    } nums[] = {
        {CMD_SERVE_FLAGS_MAX_BODY, 1024, 1u << 30, &o->cfg.max_body},
        {CMD_SERVE_FLAGS_THREADS, 1, SERVER_MAX_THREADS, &o->cfg.threads},
        {CMD_SERVE_FLAGS_CONN_TIMEOUT, 1, 3600, &o->cfg.conn_timeout_s},
        {CMD_SERVE_FLAGS_MAX_CONN, 1, 1000000, &o->cfg.conn_limit},
        {CMD_SERVE_FLAGS_GRACE, 0, 3600, &o->grace_s},
        {CMD_SERVE_FLAGS_RELOAD, 50, 3600000, &o->reload_interval_ms},
        {CMD_SERVE_FLAGS_API_BUDGET, 10, 60000, &o->api_budget_ms},
        {CMD_SERVE_FLAGS_NODE_CACHE, 0, 86400, &o->node_cache_s},
        {CMD_SERVE_FLAGS_CM_CACHE, 0, 86400, &o->configmap_cache_s},
        {CMD_SERVE_FLAGS_NS_CACHE, 0, 86400, &o->namespace_cache_s},
        {CMD_SERVE_FLAGS_JOB_CACHE, 0, 86400, &o->job_cache_s},
        {CMD_SERVE_FLAGS_WATCH_TIMEOUT, 10, 3600, &o->watch_timeout_s},
        {CMD_SERVE_FLAGS_HEADER_TIMEOUT, 1, 3600, &o->cfg.header_timeout_s},
        {CMD_SERVE_FLAGS_BODY_TIMEOUT, 1, 3600, &o->cfg.body_timeout_s},
        {CMD_SERVE_FLAGS_BODY_BUDGET, 65536, 0xffffffffu, &o->cfg.body_budget},
        {CMD_SERVE_FLAGS_STALE_LOG, 1, 86400, &o->stale_log_s},
        {CMD_SERVE_FLAGS_CERT_DAYS, 1, 36500, &o->cert_days},
        {CMD_SERVE_FLAGS_CA_DAYS, 1, 36500, &o->ca_days},
        {CMD_SERVE_FLAGS_CERT_SYNC, 1, 86400, &o->cert_sync_s},
        {CMD_SERVE_FLAGS_CA_OVERLAP, 1, 31536000, &o->ca_overlap_s},
    };
    const struct option *opt = cmd_serve_flags_options;
    unsigned long long v;

    while (opt->name && opt->val != flag)
        opt++;
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        if (nums[i].flag != flag)
            continue;
        if (cmd_parse_uint(opt->name, optarg, nums[i].min, nums[i].max, &v, err, errlen))
            return ERR_FAIL;
        *nums[i].dst = (unsigned)v;
        return ERR_OK;
    }
    return err_set(err, errlen, ERR_FAIL, "option %d has no handler", flag);
}

static int cmd_serve_flags_getopt(int argc, char **argv, struct cmd_serve_flags *o)
{
    enum mutate_ipc_lock lock;
    char err[ERR_LEN];
    int c;

    while ((c = getopt_long(argc, argv, "h", cmd_serve_flags_options, NULL)) != -1) {
        switch (c) {
        case CMD_SERVE_FLAGS_LISTEN: o->cfg.listen = optarg; break;
        case CMD_SERVE_FLAGS_METRICS_LISTEN: o->cfg.metrics_listen = optarg; break;
        case CMD_SERVE_FLAGS_CERT: o->cfg.cert_file = optarg; break;
        case CMD_SERVE_FLAGS_KEY: o->cfg.key_file = optarg; break;
        case CMD_SERVE_FLAGS_PROFILES:
            o->profiles = optarg;
            o->profiles_set = 1;
            break;
        case CMD_SERVE_FLAGS_PROFILES_KEY: o->profiles_key = optarg; break;
        case CMD_SERVE_FLAGS_KUBE_API: o->kube_api = optarg; break;
        case CMD_SERVE_FLAGS_KUBE_CA: o->kube_ca = optarg; break;
        case CMD_SERVE_FLAGS_KUBE_TOKEN: o->kube_token_file = optarg; break;
        case CMD_SERVE_FLAGS_NO_KUBE_API: o->no_kube_api = 1; break;
        case CMD_SERVE_FLAGS_PROFILES_CM: o->profiles_configmap = optarg; break;
        case CMD_SERVE_FLAGS_LOG_LEVEL: o->log_level = optarg; break;
        case CMD_SERVE_FLAGS_DETECT_IMAGE: o->cfg.detect_image = optarg; break;
        case CMD_SERVE_FLAGS_DETECT_DEPLOYMENT: o->detect_deployment = optarg; break;
        case CMD_SERVE_FLAGS_LAST_GOOD: o->profiles_last_good = optarg; break;
        case CMD_SERVE_FLAGS_POD_SECURITY_CONFIG: o->pod_security_config = optarg; break;
        case CMD_SERVE_FLAGS_CLIENT_CA: o->cfg.client_ca_file = optarg; break;
        case CMD_SERVE_FLAGS_CLIENT_NAMES: o->cfg.client_names = optarg; break;
        case CMD_SERVE_FLAGS_CERT_SECRET: o->cert_secret = optarg; break;
        case CMD_SERVE_FLAGS_WEBHOOK_CONFIGS: o->webhook_configs = optarg; break;
        case CMD_SERVE_FLAGS_CERT_SERVICE: o->cert_service = optarg; break;
        case CMD_SERVE_FLAGS_METRICS_AUTH:
            o->metrics_auth = strcmp(optarg, "kubernetes") == 0 ? CMD_SERVE_METRICS_AUTH_KUBERNETES
                              : strcmp(optarg, "none") == 0     ? CMD_SERVE_METRICS_AUTH_NONE
                                                                : CMD_SERVE_METRICS_AUTH_DEFAULT;
            if (o->metrics_auth == CMD_SERVE_METRICS_AUTH_DEFAULT) {
                fprintf(stderr,
                        "rdma-webhook serve: --metrics-auth takes kubernetes or none, not \"%s\"\n",
                        optarg);
                return 2;
            }
            break;
        case CMD_SERVE_FLAGS_MODE:
            if ((o->cfg.mode = report_mode_parse(optarg)) == REPORT_MODE_UNSET) {
                fprintf(stderr, "rdma-webhook serve: --mode takes enforce or report, not \"%s\"\n",
                        optarg);
                return 2;
            }
            break;
        case CMD_SERVE_FLAGS_IPC_LOCK:
            if (mutate_ipc_lock_parse(optarg, &lock) != ERR_OK) {
                fprintf(stderr, "rdma-webhook serve: --ipc-lock takes auto or never, not \"%s\"\n",
                        optarg);
                return 2;
            }
            o->cfg.ipc_lock = (int)lock;
            break;
        case 'h': cmd_serve_flags_usage(stdout); return 1;
        case '?': fprintf(stderr, "run 'rdma-webhook serve --help' for the flags\n"); return 2;
        default:
            if (cmd_serve_flags_numeric(o, c, err, sizeof(err))) {
                fprintf(stderr, "rdma-webhook serve: %s\n", err);
                return 2;
            }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "rdma-webhook serve: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    return 0;
}

static void cmd_serve_flags_defaults(struct cmd_serve_flags *o)
{
    memset(o, 0, sizeof(*o));
    o->cfg.listen = ":8443";
    o->cfg.metrics_listen = ":9090";
    o->cfg.cert_file = CMD_DEFAULT_CERT;
    o->cfg.key_file = CMD_DEFAULT_KEY;
    o->cfg.max_body = 8u << 20;
    o->profiles_key = "profiles.json";
    o->api_budget_ms = 2000;
    o->node_cache_s = 30;
    o->configmap_cache_s = 10;
    o->namespace_cache_s = 10;
    o->job_cache_s = 10;
    o->watch_timeout_s = 300;
    o->stale_log_s = 60;
    o->cfg.threads = server_default_threads();
    o->cfg.conn_timeout_s = SERVER_DEFAULT_CONN_TIMEOUT_S;
    o->cfg.header_timeout_s = SERVER_DEFAULT_HEADER_TIMEOUT_S;
    o->cfg.body_timeout_s = SERVER_DEFAULT_BODY_TIMEOUT_S;
    o->cfg.body_budget = 0; /* from --max-body-bytes, once it is known */
    o->cfg.conn_limit = SERVER_DEFAULT_CONN_LIMIT;
    o->cfg.cert_expiry_warn_days = 30;
    o->profiles = CMD_DEFAULT_PROFILES;
    o->log_level = "info";
    o->reload_interval_ms = 1000;
    o->grace_s = 10;
    o->webhook_configs = "rdma-webhook,rdma-webhook";
    o->cert_service = "rdma-webhook";
    o->cert_days = 365;
    o->ca_days = 3650;
    o->cert_sync_s = 60;
    o->ca_overlap_s = 3600;
}

/* 1 when s is NAMESPACE/NAME: a DNS label and a DNS subdomain. */
static int cmd_serve_flags_ns_name(const char *s)
{
    const char *slash = strchr(s, '/');
    char ns[64];

    if (!slash || (size_t)(slash - s) >= sizeof(ns))
        return 0;
    memcpy(ns, s, (size_t)(slash - s));
    ns[slash - s] = '\0';
    return k8sname_label(ns) && k8sname_subdomain(slash + 1);
}

/* Combinations of flags that cannot work, caught before anything starts:
 * ERR_OK, or ERR_FAIL with what to do instead in err. */
static int cmd_serve_flags_check(const struct cmd_serve_flags *o, char *err, size_t errlen)
{
    const char *why = NULL;

    if (o->cfg.detect_image && cmd_check_image(o->cfg.detect_image, err, errlen) != ERR_OK)
        return ERR_FAIL;
    if (o->detect_deployment && !cmd_serve_flags_ns_name(o->detect_deployment))
        why = "--detect-image-from-deployment takes NAMESPACE/NAME, e.g. rdma-webhook/rdma-webhook";
    else if (o->detect_deployment && o->cfg.detect_image)
        why = "--detect-image and --detect-image-from-deployment exclude each other; pick one";
    else if (o->detect_deployment && o->no_kube_api)
        why = "--detect-image-from-deployment needs the API; drop --no-kube-api";
    else if (o->profiles_configmap && o->profiles_set)
        why = "--profiles and --profiles-configmap exclude each other; pick one source";
    else if (o->profiles_configmap && o->no_kube_api)
        why = "--profiles-configmap needs the API; drop --no-kube-api";
    else if (o->profiles_last_good && !o->profiles_configmap)
        why = "--profiles-last-good goes with --profiles-configmap (a file source keeps no copy)";
    else if (o->profiles_last_good && *o->profiles_last_good &&
             !k8sname_subdomain(o->profiles_last_good))
        why = "--profiles-last-good takes a ConfigMap name (a DNS subdomain), or \"\" for none";
    else if (o->profiles_configmap && !o->profiles_last_good &&
             cmd_serve_flags_ns_name(o->profiles_configmap) &&
             strlen(strchr(o->profiles_configmap, '/') + 1) + strlen("-last-good") > 253)
        why = "--profiles-configmap: NAME-last-good would be longer than 253 bytes; name the "
              "copy with --profiles-last-good";
    else if (o->cfg.client_names && !o->cfg.client_ca_file)
        why = "--client-names goes with --client-ca (names are checked in a verified "
              "certificate)";
    else if (o->cfg.client_ca_file && !*o->cfg.client_ca_file)
        why = "--client-ca takes a file of PEM CA certificates";
    else if (o->metrics_auth == CMD_SERVE_METRICS_AUTH_KUBERNETES && o->no_kube_api)
        why = "--metrics-auth kubernetes asks the API who may read /metrics; drop --no-kube-api "
              "or pass --metrics-auth none";
    else if (o->cert_secret && !cmd_serve_flags_ns_name(o->cert_secret))
        why = "--cert-secret takes NAMESPACE/NAME, e.g. rdma-webhook/rdma-webhook-tls";
    else if (o->cert_secret && o->no_kube_api)
        why = "--cert-secret needs the API; drop --no-kube-api";
    else if (o->cert_secret && !k8sname_label(o->cert_service))
        why = "--cert-service takes a Service name (a DNS label)";
    else if (o->cert_secret &&
             (!strchr(o->webhook_configs, ',') ||
              strchr(strchr(o->webhook_configs, ',') + 1, ',') || strlen(o->webhook_configs) > 507))
        why = "--webhook-configs takes MUTATING,VALIDATING (either may be empty)";
    else if (o->cert_secret && o->ca_days <= o->cert_days)
        why = "--ca-days must be more than --cert-days (a CA outlives what it signs)";
    else if (o->kube_api && (!o->kube_ca || !o->kube_token_file))
        why = "--kube-api needs --kube-ca and --kube-token-file";
    else if (o->cfg.body_budget && o->cfg.body_budget / 2 < o->cfg.max_body)
        why = "--body-budget-bytes must be at least twice --max-body-bytes (a body may take "
              "half the budget at most)";
    return why ? err_set(err, errlen, ERR_FAIL, "%s", why) : ERR_OK;
}

int cmd_serve_flags_parse(int argc, char **argv, struct cmd_serve_flags *o, enum log_level *level)
{
    char err[ERR_LEN];
    int rc;

    cmd_serve_flags_defaults(o);
    rc = cmd_serve_flags_getopt(argc, argv, o);
    if (rc)
        return rc;
    if (log_level_parse(o->log_level, level)) {
        fprintf(stderr, "rdma-webhook serve: --log-level takes debug, info, warn or error\n");
        return 2;
    }
    if (cmd_serve_flags_check(o, err, sizeof(err))) {
        fprintf(stderr, "rdma-webhook serve: %s\n", err);
        return 2;
    }
    if (!o->cfg.body_budget)
        o->cfg.body_budget = server_default_body_budget(o->cfg.max_body);
    return 0;
}
