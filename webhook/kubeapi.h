/* kubeapi: a minimal Kubernetes API client on libcurl.
 *
 * Credentials come from the pod's service account (KUBERNETES_SERVICE_HOST
 * and _PORT, the mounted CA and token) or, for development, from a URL, a CA
 * file and a token file. The token file is read again before every request,
 * because bound service-account tokens rotate; the token is never logged.
 *
 * Error convention: functions return 0 when an HTTP exchange happened (the
 * status is in *status, which may be an error status), and -1 with a
 * one-line message in err when none did (connection, TLS, timeout, stop).
 * Call curl_global_init() before any thread uses this module.
 */
#ifndef RDMA_WEBHOOK_KUBEAPI_H
#define RDMA_WEBHOOK_KUBEAPI_H

#include "dynbuf.h"

#include <stdatomic.h>
#include <stddef.h>

#define KUBEAPI_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kubeapi {
    char base_url[256];
    char ca_file[512];
    char token_file[512];
    char user_agent[64];
};

/* Out of cluster: url like https://127.0.0.1:6443. */
int kubeapi_init(struct kubeapi *k, const char *url, const char *ca_file, const char *token_file,
                 char *err, size_t errlen);
/* In cluster: from the environment and the service-account mount. */
int kubeapi_init_in_cluster(struct kubeapi *k, char *err, size_t errlen);

/* GETs path (starting with /api) into body (its cap bounds the size), taking
 * at most timeout_ms, or until *stop is set (stop may be NULL). */
int kubeapi_get(const struct kubeapi *k, const char *path, long timeout_ms, const atomic_int *stop,
                struct dynbuf *body, long *status, char *err, size_t errlen);

/* Streams a watch: calls on_line for every complete line of the response
 * (lines may arrive split across chunks; a line longer than max_line fails
 * the stream), until the server ends it, on_line returns non-zero, *stop is
 * set (checked at least once a second), or timeout_ms passes. A non-200
 * response's body is left in err_body for the caller to read a Status. */
int kubeapi_watch(const struct kubeapi *k, const char *path, long timeout_ms, size_t max_line,
                  int (*on_line)(void *ctx, const char *line, size_t len), void *ctx,
                  const atomic_int *stop, struct dynbuf *err_body, long *status, char *err,
                  size_t errlen);

#endif
