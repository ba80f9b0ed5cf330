/* cmd_serve_flags: the flags of `rdma-webhook serve`, their defaults and
 * their checks, kept apart from running the server (cmd_serve.c).
 *
 * Every flag here is in the --help text and in docs/reference.md's table; a value
 * out of range or a combination that cannot work is a usage error, reported
 * on stderr with what to do instead, before anything starts.
 */
#ifndef RDMA_WEBHOOK_CMD_SERVE_FLAGS_H
#define RDMA_WEBHOOK_CMD_SERVE_FLAGS_H

#include "host/log.h"
#include "server/server.h"

/* --metrics-auth: unset (kubernetes when the process has an API client, else
 * none), kubernetes, none. */
enum cmd_serve_metrics_auth {
    CMD_SERVE_METRICS_AUTH_DEFAULT,
    CMD_SERVE_METRICS_AUTH_KUBERNETES,
    CMD_SERVE_METRICS_AUTH_NONE
};

struct cmd_serve_flags {
    struct server_config cfg;
    const char *profiles;
    int profiles_set;
    const char *profiles_configmap;
    const char *profiles_key;
    /* --profiles-last-good NAME: the copy's name; NULL: NAME-last-good of
     * --profiles-configmap; "": no copy. */
    const char *profiles_last_good;
    unsigned stale_log_s; /* --stale-log-seconds */
    const char *kube_api, *kube_ca, *kube_token_file;
    int no_kube_api;
    unsigned api_budget_ms, node_cache_s, configmap_cache_s, namespace_cache_s, watch_timeout_s;
    unsigned job_cache_s; /* --job-cache-seconds: a JobSet's owner, a TrainJob's runtime */
    const char *log_level;
    unsigned reload_interval_ms;
    unsigned grace_s;
    /* --detect-image-from-deployment NS/NAME: cfg.detect_image is read from
     * that Deployment at start (cmd_serve.c). */
    const char *detect_deployment;
    const char *pod_security_config; /* --pod-security-config FILE; NULL: none */
    enum cmd_serve_metrics_auth metrics_auth;
    /* --cert-secret NS/NAME (kube/selfcert.h); NULL: the files are made
     * elsewhere (gen-certs, cert-manager). */
    const char *cert_secret;
    const char *webhook_configs; /* --webhook-configs MWC,VWC */
    const char *cert_service;    /* --cert-service */
    unsigned cert_days, ca_days, cert_sync_s, ca_overlap_s;
};

/* Fills *o from the defaults and argv, and *level from --log-level. Returns 0
 * to serve, 1 when --help was printed (exit 0), 2 on a usage error (already
 * printed; exit 2). */
int cmd_serve_flags_parse(int argc, char **argv, struct cmd_serve_flags *o, enum log_level *level);

#endif
