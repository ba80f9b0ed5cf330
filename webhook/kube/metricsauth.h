/* metricsauth: who may read /metrics, decided by the Kubernetes API, as
 * controller-runtime's secure metrics and kube-rbac-proxy decide it.
 *
 * A request's `Authorization: Bearer TOKEN` is sent in a TokenReview
 * (authentication.k8s.io/v1); the user, uid, groups and extra it returns go
 * in a SubjectAccessReview (authorization.k8s.io/v1) for the non-resource
 * URL cfg.path with verb get. The verdict: METRICSAUTH_NO_TOKEN (no or a
 * malformed header) and METRICSAUTH_BAD_TOKEN (not authenticated) are 401,
 * METRICSAUTH_FORBIDDEN 403, METRICSAUTH_ALLOWED 200, and
 * METRICSAUTH_UNAVAILABLE 503: the API could not be asked or its answer
 * read (never open when unsure).
 *
 * Decisions are cached by the token's SHA-256 (the token itself is never
 * kept nor logged) for cfg.ttl_ms, at most METRICSAUTH_CACHE_MAX of them
 * (a new one takes the slot that expires first), so a Prometheus scraping
 * every 15 s costs at most two API calls a scrape and none within the TTL.
 * An unavailable answer is not cached: the next scrape asks again. Every
 * buffer a peer grows is bounded: a token of at most METRICSAUTH_TOKEN_MAX
 * bytes, API answers of at most METRICSAUTH_RESPONSE_MAX, a user of at most
 * METRICSAUTH_GROUPS_MAX groups and METRICSAUTH_EXTRA_MAX extra values.
 *
 * The API call and the clock are injectable (metricsauth_config), so the
 * unit tests use a fake API and a fake clock. Checks may run on several
 * threads: the cache has a lock, held for no API call, and at most
 * METRICSAUTH_CONCURRENT_MAX checks ask the API at once (another is
 * METRICSAUTH_UNAVAILABLE, "busy", at once).
 *
 * Errors (err.h): metricsauth_init as an object's init; metricsauth_check
 * is a verdict. Lifecycle: an object (webhook/README.md).
 */
#ifndef RDMA_WEBHOOK_METRICSAUTH_H
#define RDMA_WEBHOOK_METRICSAUTH_H

#include "base/dynbuf.h"
#include "kube/kubeapi.h"

#include <stddef.h>

/* The longest token taken: ServiceAccount tokens are about 1 KiB, and the
 * server's 8 KiB of header memory (SERVER_CONN_MEMORY) holds no longer. */
#define METRICSAUTH_TOKEN_MAX 8192
/* The most bytes kept of a TokenReview's or SubjectAccessReview's answer. */
#define METRICSAUTH_RESPONSE_MAX (64u << 10)
/* The most bytes of a SubjectAccessReview sent. */
#define METRICSAUTH_REQUEST_MAX (64u << 10)
/* Decisions kept at once: Prometheus replicas and a few people. */
#define METRICSAUTH_CACHE_MAX 64
/* Groups, and extra values in all, a user may have for the review. */
#define METRICSAUTH_GROUPS_MAX 256
#define METRICSAUTH_EXTRA_MAX  256
/* Checks waiting for the API at once; one more is METRICSAUTH_UNAVAILABLE at
 * once: tokens no cache holds (a scraper misconfigured, or someone trying
 * tokens) must not take every thread of the port the probes use. */
#define METRICSAUTH_CONCURRENT_MAX 2
/* serve's defaults: each API call, and how long a decision is kept. */
#define METRICSAUTH_DEFAULT_TIMEOUT_MS 2000
#define METRICSAUTH_DEFAULT_TTL_MS     10000

enum metricsauth_verdict {
    METRICSAUTH_ALLOWED,
    METRICSAUTH_NO_TOKEN,
    METRICSAUTH_BAD_TOKEN,
    METRICSAUTH_FORBIDDEN,
    METRICSAUTH_UNAVAILABLE,
    METRICSAUTH_VERDICTS
};

struct metricsauth_config {
    kubeapi_call_fn call; /* required */
    void *call_ctx;
    const char *path;          /* the non-resource URL asked for; NULL: "/metrics" */
    long timeout_ms;           /* each API call; 0: METRICSAUTH_DEFAULT_TIMEOUT_MS */
    long long ttl_ms;          /* how long a decision is kept; 0: none is */
    long long (*now_ns)(void); /* NULL: monotime_now */
};

/* Opaque: the configuration, the cache and its lock, the counts. */
struct metricsauth;

int metricsauth_init(struct metricsauth **out, const struct metricsauth_config *cfg, char *err,
                     size_t errlen);
void metricsauth_stop(struct metricsauth **ma);

/* The verdict for an Authorization header's value (NULL: none). When the
 * API could not answer and why is not NULL, *why is a static reason for the
 * log ("TokenReview: HTTP 403", ...); otherwise it is left as it is. */
enum metricsauth_verdict metricsauth_check(struct metricsauth *ma, const char *authorization,
                                           const char **why);

/* The HTTP status of a verdict: 200, 401, 403 or 503. */
unsigned metricsauth_status(enum metricsauth_verdict v);
/* Its name in the metric and the log: "allowed", "no_token", ... */
const char *metricsauth_verdict_name(enum metricsauth_verdict v);

/* Checks so far with this verdict, and API calls made (TokenReviews and
 * SubjectAccessReviews together): what /metrics shows and the tests read. */
unsigned long long metricsauth_count(const struct metricsauth *ma, enum metricsauth_verdict v);
unsigned long long metricsauth_api_calls(const struct metricsauth *ma);

/* The token of an Authorization header's value: "Bearer" (any case), spaces,
 * then the token up to trailing spaces. Sets *tok and *len and returns
 * ERR_OK, or ERR_FAIL for none, another scheme, an empty or overlong token,
 * or one with a control character or a space inside. */
int metricsauth_bearer(const char *authorization, const char **tok, size_t *len);

/* Reads a TokenReview's answer (body) and, when it says authenticated,
 * writes the SubjectAccessReview for its user and path into out. Returns
 * METRICSAUTH_ALLOWED (out holds the review to send), METRICSAUTH_BAD_TOKEN
 * (not authenticated) or METRICSAUTH_UNAVAILABLE (not JSON, a wrong type, a
 * user over the bounds, out's cap). */
enum metricsauth_verdict metricsauth_read_tokenreview(const char *body, size_t len,
                                                      const char *path, struct dynbuf *out);
/* Reads a SubjectAccessReview's answer: METRICSAUTH_ALLOWED when
 * status.allowed is true, METRICSAUTH_FORBIDDEN when it is false, and
 * METRICSAUTH_UNAVAILABLE when the body is not JSON with a boolean there
 * (the apiserver always writes it). */
enum metricsauth_verdict metricsauth_read_sar(const char *body, size_t len);

#endif
