/* kubeapi: a minimal Kubernetes API client on libcurl.
 *
 * One call, kubeapi_call, for every request: GET, watch, and the writes the
 * webhook makes: POST (an Event, the last good copy of the profiles),
 * merge-PATCH (an Event's series) and PUT (the copy's update, carrying its
 * resourceVersion). Its type, kubeapi_call_fn, is the seam every client of
 * the API takes, so that a test hands them a fake instead. Credentials come from the pod's service
 * account (KUBERNETES_SERVICE_HOST and _PORT, the mounted CA and token) or, for development, from a
 * URL, a CA file and a token file. The token file is read again before every request, because bound
 * service-account tokens rotate, and so is the CA file; the token is never logged. Both must be
 * regular files, opened without blocking: a FIFO in their place fails the request at once.
 *
 * Errors (err.h): as kubeapi_call_fn says below.
 * Lifecycle: an object (webhook/README.md): kubeapi_init, kubeapi_stop.
 * Call curl_global_init() before any thread uses this module.
 */
#ifndef RDMA_WEBHOOK_KUBEAPI_H
#define RDMA_WEBHOOK_KUBEAPI_H

#include "base/dynbuf.h"
#include "base/err.h"

#include <stdatomic.h>
#include <stddef.h>

#define KUBEAPI_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Opaque: the base URL, the CA and token files, the user agent. */
struct kubeapi;

/* One request, the whole of what a caller asks of the API. */
struct kubeapi_request {
    const char *method; /* "GET", "POST", "PUT", "PATCH" or "DELETE" (unregister) */
    const char *path;   /* starting with /api, query included */
    const char *body;   /* len bytes; NULL: none (a GET, a watch) */
    size_t len;
    /* Of the body: "application/json" (also when NULL) or
     * "application/merge-patch+json". */
    const char *content_type;
    long timeout_ms;        /* the whole exchange, connection included */
    const atomic_int *stop; /* the exchange ends soon after *stop is set; NULL: never */
    /* A watch (a GET): each complete line of a 200 response goes to on_line
     * (lines may arrive split across chunks), at most max_line bytes; a
     * non-zero return ends the stream (ERR_FAIL). resp then holds only the
     * body of a non-200 response, for the caller to read a Status. NULL: the
     * whole response goes into resp. */
    int (*on_line)(void *line_ctx, const char *line, size_t len);
    void *line_ctx;
    size_t max_line;
};

/* The one way to call the API, which events, lastgood, lookups and cmwatch
 * take with its ctx, so that each can be given a fake. ERR_OK when an HTTP
 * exchange happened (its status in *status, which may be an error status;
 * a watch the server ended); otherwise an ERR_* code with a message in err
 * and *status untouched: ERR_TOO_BIG for a response (resp's cap), a line
 * (max_line) or a setting over its limit, ERR_NOMEM, or ERR_FAIL
 * (connection, TLS, timeout, stop, on_line's end, a bad setting). Returns
 * within timeout_ms, and soon after *stop is set (checked at least once a
 * second). */
typedef int (*kubeapi_call_fn)(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp,
                               long *status, char *err, size_t errlen);

/* Out of cluster: url like https://127.0.0.1:6443. ERR_OK with *out set, or
 * ERR_FAIL (a missing or bad setting), ERR_TOO_BIG (an overlong one) or
 * ERR_NOMEM with a message naming the flag, and *out NULL. */
int kubeapi_init(struct kubeapi **out, const char *url, const char *ca_file, const char *token_file,
                 char *err, size_t errlen);
/* In cluster: from the environment and the service-account mount; the same
 * results. */
int kubeapi_init_in_cluster(struct kubeapi **out, char *err, size_t errlen);
/* Frees the client and sets *k to NULL; a no-op on NULL. No call may be
 * running. */
void kubeapi_stop(struct kubeapi **k);

/* The base URL, as kubeapi_init kept it (no query, no trailing slash). */
const char *kubeapi_base_url(const struct kubeapi *k);

/* kubeapi_call_fn on the real API: ctx is a struct kubeapi. */
int kubeapi_call(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp, long *status,
                 char *err, size_t errlen);

#endif
