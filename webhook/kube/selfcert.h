/* selfcert: certificates that look after themselves (serve --cert-secret).
 *
 * With no cert-manager and nothing run beforehand, the webhook keeps its CA
 * and serving pair in one Secret, NS/NAME, type kubernetes.io/tls: tls.crt,
 * tls.key (the serving pair), ca.crt (the bundle callers trust: one CA, two
 * while rotating), ca.key and signer.crt (the CA that signs serving
 * certificates, one of ca.crt's), and while a new CA waits to sign,
 * next-ca.crt and next-ca.key. Every replica runs the same loop, and the
 * Secret's resourceVersion makes them agree: a create (POST) that meets 409
 * AlreadyExists, or an update (PUT) that meets 409 Conflict, lost to another
 * replica, which re-reads and uses what won. So there are never two CAs
 * made for one Secret.
 *
 * Each round (at start, then every sync_s): GET the Secret, write the
 * bundle into every webhook's clientConfig.caBundle of the named
 * MutatingWebhookConfiguration and ValidatingWebhookConfiguration when it
 * differs (GET and PUT with their resourceVersion: someone may apply the
 * manifests again and blank it), decide (selfcert_plan), write the Secret
 * when the plan says so, and write the serving pair to cert_file and
 * key_file when they hold another (the server's watch loads them: one path
 * for every mode).
 *
 * The plan never leaves a moment when a caller's caBundle and the served
 * certificate disagree: a serving certificate is renewed under the same CA
 * (the bundle does not change); a CA is renewed by adding the new CA to the
 * bundle first (SELFCERT_ADD_CA), switching the serving certificate to it
 * only after overlap_s and only when this round found the configurations
 * holding that bundle (SELFCERT_SWITCH_CA), and dropping the old CA another
 * overlap_s later (SELFCERT_DROP_OLD_CA), when every replica has long
 * loaded the new serving pair. A serving certificate is due when a third of
 * its life is left, a CA the same; the annotation SELFCERT_ANN_ROTATE on the
 * Secret ("leaf" or "ca") asks for one now, and the write that acts on it
 * removes it. A Secret made before this mode (gen-certs, cert-manager: a
 * serving pair and ca.crt, no ca.key) is adopted the same way: a new CA
 * joins the bundle that trusts the pair serving now, and signs later.
 *
 * The certificate making is wire's (certs.h), injected (selfcert_pki): kube
 * does not include wire. The API call is injectable too (kubeapi_call_fn).
 * Responses are read into capped buffers (SELFCERT_SECRET_MAX,
 * SELFCERT_CONFIG_MAX).
 *
 * Errors (err.h): _init's, with a message. Lifecycle: selfcert_init() runs
 * the first round in the caller's thread until the pair is on disk (tried
 * for start_ms: the server cannot start without it), then starts the
 * thread; selfcert_stop() stops and joins it.
 */
#ifndef RDMA_WEBHOOK_SELFCERT_H
#define RDMA_WEBHOOK_SELFCERT_H

#include "base/dynbuf.h"
#include "host/log.h"
#include "kube/kubeapi.h"

#include <stddef.h>

#define SELFCERT_ANN_ROTATE    "rdma-webhook.io/rotate"
#define SELFCERT_ANN_BUNDLE_AT "rdma-webhook.io/ca-bundle-changed-at"
#define SELFCERT_SECRET_MAX    (256u << 10)
#define SELFCERT_CONFIG_MAX    (2u << 20)
#define SELFCERT_PEM_MAX       (64u << 10)

enum selfcert_action {
    SELFCERT_KEEP,
    SELFCERT_CREATE,     /* no usable CA: a new CA and serving pair */
    SELFCERT_RENEW_LEAF, /* a new serving pair from the signing CA */
    SELFCERT_ADD_CA,     /* a new CA into the bundle, not signing yet */
    SELFCERT_SWITCH_CA,  /* the new CA signs a new serving pair */
    SELFCERT_DROP_OLD_CA /* the bundle keeps only the signing CA */
};

/* The facts of a Secret a plan is made of. */
struct selfcert_view {
    int exists;
    int signer_ok; /* signer.crt and ca.key a pair, valid now, in ca.crt */
    long long ca_not_before, ca_not_after;
    int leaf_ok;     /* tls.crt and tls.key a pair signed by the signer, valid now */
    int leaf_usable; /* tls.crt and tls.key a pair valid now, whoever signed it */
    long long leaf_not_before, leaf_not_after;
    int has_next;        /* next-ca.crt and next-ca.key a pair, in ca.crt */
    int bundle_count;    /* certificates in ca.crt */
    long long bundle_at; /* SELFCERT_ANN_BUNDLE_AT, unix seconds; -1: unknown */
    int rotate;          /* SELFCERT_ANN_ROTATE: 0 none, 1 leaf, 2 ca */
    int configs_in_sync; /* this round found the configurations holding ca.crt */
};

/* The one decision, pure: what to write now. */
enum selfcert_action selfcert_plan(const struct selfcert_view *v, long long now,
                                   long long overlap_s);
const char *selfcert_action_name(enum selfcert_action a);

/* 1 when less than a third of [not_before, not_after] is left at now. */
int selfcert_due(long long not_before, long long not_after, long long now);

/* The PEM certificates of bundle (len bytes): their count, and with out
 * non-NULL the i-th one (0-based) appended to it. -1 for a malformed
 * block. */
int selfcert_bundle_count(const char *bundle, size_t len);
int selfcert_bundle_item(const char *bundle, size_t len, int i, struct dynbuf *out);

/* A Secret's data, decoded. */
struct selfcert_secret {
    int exists;
    char resource_version[64];
    struct dynbuf tls_crt, tls_key, ca_crt, ca_key, signer_crt, next_crt, next_key;
    long long bundle_at;
    int rotate;
};

void selfcert_secret_init(struct selfcert_secret *s);
void selfcert_secret_free(struct selfcert_secret *s);
/* A Secret's JSON (a GET's body) into *s: ERR_OK, or ERR_FAIL with why in
 * err (not JSON, not a Secret, a data value that is not base64 or over
 * SELFCERT_PEM_MAX). A missing key is left empty, for the plan to judge. */
int selfcert_secret_parse(const char *json, size_t len, struct selfcert_secret *s, char *err,
                          size_t errlen);

/* What wire's certs.h does, as kube takes it (cmd plugs certs in). */
struct selfcert_facts {
    long long not_before, not_after;
    int signed_by, key_ok;
};
struct selfcert_pki {
    int (*make_ca)(const char *cn, long long seconds, struct dynbuf *crt, struct dynbuf *key,
                   char *err, size_t errlen);
    int (*make_leaf)(const char *ca_crt, size_t ca_crt_len, const char *ca_key, size_t ca_key_len,
                     const char *service, const char *ns, long long seconds, struct dynbuf *crt,
                     struct dynbuf *key, char *err, size_t errlen);
    int (*facts)(const char *pem, size_t len, const char *issuer, size_t issuer_len,
                 const char *key, size_t key_len, struct selfcert_facts *f, char *err,
                 size_t errlen);
};

/* The view of a Secret at now, through pki. */
void selfcert_view_of(const struct selfcert_pki *pki, const struct selfcert_secret *s,
                      long long now, struct selfcert_view *v);

struct selfcert_config {
    kubeapi_call_fn call;
    void *call_ctx;
    const char *ns, *name;            /* the Secret */
    const char *mutating;             /* MutatingWebhookConfiguration; NULL or "": none */
    const char *validating;           /* ValidatingWebhookConfiguration; NULL or "": none */
    const char *service, *service_ns; /* the serving certificate's DNS names */
    const char *cert_file, *key_file; /* where the server reads the pair */
    unsigned leaf_days, ca_days;      /* 0: 365 and 3650 */
    unsigned sync_s;                  /* between rounds; 0: 60 */
    unsigned overlap_s;               /* a new CA in the bundle before it signs; 0: 3600 */
    unsigned start_ms;                /* the first round's tries; 0: 30000 */
    unsigned request_ms;              /* each request; 0: 5000 */
    struct selfcert_pki pki;
};

struct selfcert;

/* log and what cfg points to must outlive the object. */
int selfcert_init(struct selfcert **out, struct log *log, const struct selfcert_config *cfg,
                  char *err, size_t errlen);
void selfcert_stop(struct selfcert **sc);

#endif
