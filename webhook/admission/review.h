/* review: AdmissionReview in, AdmissionReview response out (docs/reference.md "HTTP statuses").
 *
 * review_handle() takes the raw request body and gives either an HTTP status
 * other than 200 with a one-line plain-text reason, or 200 with the JSON
 * response: the same uid, allowed: true, and for a mutated pod the base64
 * JSON Patch with patchType, the warnings and the auditAnnotations (profile,
 * selected-by). It
 * answers in the apiVersion it was asked in (v1 or v1beta1).
 */
#ifndef RDMA_WEBHOOK_REVIEW_H
#define RDMA_WEBHOOK_REVIEW_H

#include "base/dynbuf.h"
#include "admission/mutate.h"

#include <stddef.h>

struct profiles;

/* A pod's controlling owner (the ownerReference with controller: true),
 * exactly as the pod names it; kind is "" when there is none, or when a
 * field is missing or longer than its buffer (no cut reference is kept). */
struct review_owner {
    char api_version[320]; /* group/version: 253 + 1 + 63 bytes at most */
    char kind[64];
    char name[254];
    char uid[64];
};

/* What the caller logs, counts and reports (Events) for one review. */
struct review_summary {
    char uid[80];
    char namespace_[64];
    char name[256];
    int name_generated; /* name is metadata.generateName: the pod's own is not known yet */
    int dry_run;        /* request.dryRun: nothing may be written for it */
    /* The pod carries rdma-webhook.io/injected already: an earlier call for
     * this admission mutated it (a reinvocation, or the second webhook
     * entry), and that call reported its warnings. */
    int called_again;
    int ignored;               /* not a Pod CREATE: only uid is filled */
    enum mutate_reason reason; /* the outcome is mutate_reason_outcome(reason) */
    char profile[64];          /* "" when none; a copy, so it outlives the snapshot */
    const char *selected_by;   /* the rule that chose profile (static text); NULL when none */
    /* Report mode: the level that chose it (report_by_name, static text);
     * NULL in enforce mode. */
    const char *report_by;
    /* Report mode: the pod's report as an Event's note (report_note), for
     * its RDMAReport Event; "" when the pod got no report. */
    char report_note[REPORT_NOTE_MAX];
    size_t ops;
    size_t warnings;
    unsigned warning_kinds[MUTATE_W_KINDS];
    /* The warnings themselves: .text as kubectl shows them (the response),
     * .full whole (the log line and the Events). */
    struct mutate_warnings warning_texts;
    struct review_owner owner;
    /* The training-operator's labels (training.kubeflow.org/replica-type,
     * replica-index), cut to fit; "" when absent. */
    char replica_type[64];
    char replica_index[16];
    char error[160];
};

/* Limits the patch a single pod can produce. */
#define REVIEW_PATCH_MAX (4u << 20)

/* Returns the HTTP status and fills out with the body to send: JSON for 200,
 * otherwise the reason, one line without its newline. out's cap bounds the
 * response. hooks and opts may be NULL (mutate.h). */
int review_handle(const char *body, size_t len, const struct profiles *ps,
                  const struct mutate_hooks *hooks, const struct mutate_options *opts,
                  struct dynbuf *out, struct review_summary *sum);

/* What the caller logs and counts for one validation of the profiles
 * ConfigMap (/validate-profiles). */
struct review_verdict {
    char uid[80];
    char namespace_[64];
    char name[256];
    int allowed;
    char problems[480]; /* the start of the message of a refusal */
};

/* The label that selects the profiles ConfigMap for /validate-profiles
 * (manifests/validatingwebhookconfiguration.yaml). */
#define REVIEW_PROFILES_LABEL "rdma-webhook.io/profiles"

/* The most text of problems a refusal carries: every line check-profiles
 * would print for a bad version, within what kubectl shows. */
#define REVIEW_PROBLEMS_MAX (64u << 10)

/* A ValidatingWebhook's review of the profiles ConfigMap: a CREATE or UPDATE
 * whose data[key] profiles_parse() refuses (or that lacks the key) is
 * refused, with check-profiles' lines as the message, and so is one that
 * drops the REVIEW_PROFILES_LABEL that selects it; anything else is allowed. Statuses and out as
 * review_handle(). */
int review_handle_profiles(const char *body, size_t len, const char *key, struct dynbuf *out,
                           struct review_verdict *v);

/* 1 when the review's request (its "request" member) is a Pod CREATE, the
 * only request the webhook mutates: everything else is allowed untouched. */
int review_is_pod_create(const struct cJSON *req);

/* Writes the response for a decoded request and a mutation result; used by
 * review_handle() and by the offline `mutate` command. ERR_OK, or the
 * writer's first error: ERR_TOO_BIG (out's cap) or ERR_NOMEM. */
int review_write_response(struct dynbuf *out, const char *api_version, const char *uid,
                          const struct mutate_result *res);

#endif
