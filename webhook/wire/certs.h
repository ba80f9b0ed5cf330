/*
 * certs: the webhook's own PKI, small enough to need no cert-manager.
 *
 * `rdma-webhook gen-certs` uses certs_generate() to make a CA and a serving
 * certificate for the Service; `serve` uses certs_check_pem() on the bytes
 * of a (possibly rotated) certificate and key before it serves them.
 * certs_check_pair() and certs_inspect_file() do the same for files.
 *
 * Errors (err.h), shared by every function here: ERR_OK on success; on
 * failure ERR_NOMEM (out of memory, also when OpenSSL says so), ERR_TOO_BIG
 * (bytes over what OpenSSL can read at once) or ERR_FAIL, and, when err is
 * non-NULL, a one-line message that names the file or setting at fault and
 * says what to do next; nothing is printed.  On success err is left
 * untouched.  The OpenSSL error queue is empty on return, so a failure here
 * cannot surface later as a stale error in TLS code.
 *
 * The functions keep no state of their own and may run concurrently.
 */
#ifndef RDMA_WEBHOOK_CERTS_H
#define RDMA_WEBHOOK_CERTS_H

#include "base/dynbuf.h"
#include "base/err.h"

#include <stddef.h>

struct certs_gen_opts {
    const char *out_dir;    /* required; created like `mkdir -p`, mode 0755 */
    const char *service;    /* NULL: "rdma-webhook" */
    const char *namespace_; /* NULL: "rdma-webhook" */
    int days;               /* 0: 365; validity of both certificates */
    int force;              /* replace files out_dir already holds */
};

/*
 * Writes out_dir/ca.crt, ca.key, tls.crt and tls.key (PEM; keys unencrypted
 * PKCS#8, mode 0600; certificates 0644).
 *
 * Keys are ECDSA P-256, signatures ECDSA-SHA256, serials random, positive and
 * 159 bits long, validity from 5 minutes ago (clock skew between nodes) to
 * `days` days from now.
 *  - ca.crt: CN "rdma-webhook-ca", basicConstraints critical CA:TRUE
 *    pathlen:0, keyUsage critical keyCertSign+cRLSign, subjectKeyIdentifier.
 *  - tls.crt: issued by ca.crt, CN "<service>.<namespace>.svc" (just
 *    "<service>" when that exceeds X.509's 64-character limit; clients check
 *    the SANs, not the CN), basicConstraints critical CA:FALSE, keyUsage
 *    critical digitalSignature, extendedKeyUsage serverAuth,
 *    authorityKeyIdentifier, subjectKeyIdentifier and subjectAltName
 *    DNS:<service>, DNS:<service>.<namespace>, DNS:<service>.<namespace>.svc,
 *    DNS:<service>.<namespace>.svc.cluster.local, DNS:localhost,
 *    IP:127.0.0.1, IP:::1.
 *
 * service and namespace_ must be DNS-1123 labels (lowercase letters, digits
 * and '-', at most 63 characters, alphanumeric at both ends); days must be in
 * 1..36500.  Invalid options are rejected before anything is written.
 *
 * Unless force is set, it refuses (ERR_FAIL, naming the files and --force)
 * when out_dir already holds any of the four, before writing anything.
 *
 * Each file is replaced atomically (temporary file in out_dir, fsync,
 * rename), and all four are staged before the first rename, so a failure
 * leaves the previous files in place.  The renames themselves are not one
 * transaction: a watcher may briefly see the new tls.key with the old
 * tls.crt, which the checks report as a mismatch worth retrying.
 */
int certs_generate(const struct certs_gen_opts *o, char *err, size_t errlen);

struct certs_info {
    char serial_hex[80]; /* as `openssl x509 -serial`: uppercase, 2 digits a byte */
    char subject[256];   /* RFC 2253, e.g. "CN=rdma-webhook.rdma-webhook.svc" */
    long long not_after; /* unix seconds */
    char sans[512];      /* "DNS:a, DNS:b, IP:127.0.0.1, IP:::1" */
};

/*
 * Reads the first PEM certificate of cert_path (a chain file is fine) into
 * *info.  Text fields are always NUL-terminated; a field longer than its
 * buffer is cut and ends in "...", and non-printable bytes become '?', so
 * the result is safe to put in a log line.  On failure *info is zeroed.
 */
int certs_inspect_file(const char *cert_path, struct certs_info *info, char *err, size_t errlen);

/*
 * Succeeds when the first certificate of cert_path is valid now and the
 * unencrypted private key in key_path belongs to it.  Fails, with a message,
 * on an unreadable or non-PEM file, an encrypted key (never prompts for a
 * passphrase), a key that does not match, or a certificate that is expired
 * or not yet valid.
 */
int certs_check_pair(const char *cert_path, const char *key_path, char *err, size_t errlen);

/*
 * A certificate and key already read into memory, with the names to use in
 * messages (their file paths).
 */
struct certs_pem {
    const char *cert;
    size_t cert_len;
    const char *key;
    size_t key_len;
    const char *cert_name;
    const char *key_name;
};

/*
 * certs_check_pair() and certs_inspect_file() over bytes in memory: succeeds
 * when the key belongs to the first certificate and that certificate is
 * valid now, and fills info from it. The server checks the very bytes it
 * then serves this way, so a rotation that lands between two reads cannot
 * slip a mismatched pair past the check.
 */
int certs_check_pem(const struct certs_pem *pem, struct certs_info *info, char *err, size_t errlen);

/*
 * The same PKI made in memory, for `serve --cert-secret` (kube/selfcert.h
 * takes these through its config: kube does not include wire). PEM text is
 * appended to the caller's dynbufs (their caps bound it); keys are PKCS#8.
 * Validity is from 5 minutes ago to `seconds` from now (60..36500 days).
 *  - certs_make_ca_pem: a CA as certs_generate's ca.crt, CN cn (NULL:
 *    "rdma-webhook-ca"; a rotation names its CA apart from the old one).
 *  - certs_make_leaf_pem: a serving certificate as certs_generate's tls.crt,
 *    signed by the CA ca_crt/ca_key (PEM in memory).
 */
int certs_make_ca_pem(const char *cn, long long seconds, struct dynbuf *crt, struct dynbuf *key,
                      char *err, size_t errlen);
int certs_make_leaf_pem(const char *ca_crt, size_t ca_crt_len, const char *ca_key,
                        size_t ca_key_len, const char *service, const char *namespace_,
                        long long seconds, struct dynbuf *crt, struct dynbuf *key, char *err,
                        size_t errlen);

/* What kube/selfcert.h decides on, of the first certificate of pem (len
 * bytes): its validity in unix seconds. With issuer_pem non-NULL, *signed_by
 * is 1 when issuer_pem's first certificate signed it; with key_pem non-NULL,
 * *key_ok is 1 when key_pem's private key belongs to it. */
struct certs_facts {
    long long not_before, not_after;
    int signed_by, key_ok;
};
int certs_pem_facts(const char *pem, size_t len, const char *issuer_pem, size_t issuer_len,
                    const char *key_pem, size_t key_len, struct certs_facts *facts, char *err,
                    size_t errlen);

#endif
