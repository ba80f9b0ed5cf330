/* kubeapi: a minimal Kubernetes API client on libcurl.
 *
 * GET, watch, and the writes the webhook makes: POST (an Event, the last
 * good copy of the profiles), merge-PATCH (an Event's series) and PUT (the
 * copy's update, carrying its resourceVersion). Credentials come from the pod's service account
 * (KUBERNETES_SERVICE_HOST and _PORT, the mounted CA and token) or, for development, from a URL, a
 * CA file and a token file. The token file is read again before every request, because bound
 * service-account tokens rotate, and so is the CA file; the token is never logged. Both must be
 * regular files, opened without blocking: a FIFO in their place fails the request at once.
 *
 * Errors (err.h): ERR_OK means that an HTTP exchange happened (the status is
 * in *status, which may be an error status). Otherwise a negative code with
 * a one-line message in err: ERR_TOO_BIG for a response, event or setting
 * over its limit (the message names it), ERR_NOMEM, or ERR_FAIL (connection,
 * TLS, timeout, stop, a bad setting).
 * Call curl_global_init() before any thread uses this module.
 */
#ifndef RDMA_WEBHOOK_KUBEAPI_H
#define RDMA_WEBHOOK_KUBEAPI_H

#include "dynbuf.h"
#include "err.h"

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

/* GETs path (starting with /api) into body, taking at most timeout_ms, or
 * until *stop is set (stop may be NULL). A response over body's cap is
 * ERR_TOO_BIG. */
int kubeapi_get(const struct kubeapi *k, const char *path, long timeout_ms, const atomic_int *stop,
                struct dynbuf *body, long *status, char *err, size_t errlen);

/* POSTs body (len bytes of JSON) to path; PATCHes path with body as a JSON
 * merge patch (RFC 7386, application/merge-patch+json). Each takes at most
 * timeout_ms, or until *stop is set (stop may be NULL). The response (the
 * object, or a Status for an error status) goes into resp; one over resp's
 * cap is ERR_TOO_BIG. */
int kubeapi_post(const struct kubeapi *k, const char *path, const char *body, size_t len,
                 long timeout_ms, const atomic_int *stop, struct dynbuf *resp, long *status,
                 char *err, size_t errlen);
int kubeapi_merge_patch(const struct kubeapi *k, const char *path, const char *body, size_t len,
                        long timeout_ms, const atomic_int *stop, struct dynbuf *resp, long *status,
                        char *err, size_t errlen);
/* PUTs body (the whole object, application/json) to path: an update, which
 * the apiserver answers 409 when the body's metadata.resourceVersion is not
 * the object's. */
int kubeapi_put(const struct kubeapi *k, const char *path, const char *body, size_t len,
                long timeout_ms, const atomic_int *stop, struct dynbuf *resp, long *status,
                char *err, size_t errlen);

/* Streams a watch: calls on_line for every complete line of the response
 * (lines may arrive split across chunks), until the server ends it (ERR_OK),
 * a line is longer than max_line (ERR_TOO_BIG), on_line returns non-zero, *stop
 * is set (checked at least once a second) or timeout_ms passes (ERR_FAIL). A
 * non-200 response's body is left in err_body (ERR_TOO_BIG past its cap) for
 * the caller to read a Status. */
int kubeapi_watch(const struct kubeapi *k, const char *path, long timeout_ms, size_t max_line,
                  int (*on_line)(void *ctx, const char *line, size_t len), void *ctx,
                  const atomic_int *stop, struct dynbuf *err_body, long *status, char *err,
                  size_t errlen);

#endif
