/* clientauth: which TLS clients may use the HTTPS port (serve --client-ca,
 * --client-names): those whose certificate chains to a CA of the file and,
 * with names, whose certificate names one of them (its subject's CN or a DNS
 * subjectAltName, compared exactly).
 *
 * The server asks for the client's certificate on every HTTPS handshake and
 * judges it with clientauth_check() from GnuTLS's verification callback,
 * before any byte of HTTP is read: a refused client gets its handshake
 * failed, never a request served. The CA file is loaded as a whole and made
 * current only when it parses, so a half-written rotation keeps the old CAs;
 * a file whose bytes are those of the current CAs loads nothing. Trust lists
 * are reference-counted like tlscreds' pairs: a check holds the list it
 * started with.
 *
 * Each refusal is counted by verdict (clientauth_refused): an admin sees
 * clients knocking without reading the log.
 *
 * Lifecycle: clientauth_init() makes the object and loads the file once;
 * clientauth_stop() undoes it.
 */
#ifndef RDMA_WEBHOOK_CLIENTAUTH_H
#define RDMA_WEBHOOK_CLIENTAUTH_H

#include <gnutls/gnutls.h>
#include <stddef.h>

/* Certificates a client may send (leaf and intermediates); more is untrusted. */
#define CLIENTAUTH_MAX_CHAIN 8
/* Names of --client-names, and the bytes of each. */
#define CLIENTAUTH_MAX_NAMES 16
#define CLIENTAUTH_NAME_MAX  253

enum clientauth_verdict {
    CLIENTAUTH_OK,
    CLIENTAUTH_NO_CERT,   /* the client sent no certificate */
    CLIENTAUTH_UNTRUSTED, /* not signed by a CA of the file, expired, or not for client auth */
    CLIENTAUTH_NAME,      /* trusted, but naming none of --client-names */
    CLIENTAUTH_VERDICTS
};

struct clientauth;

/* The metric's label of a verdict: "no-certificate", "untrusted", "name". */
const char *clientauth_verdict_name(enum clientauth_verdict v);

/* Parses names (NULL or "": any name; else a comma-separated list) and loads
 * ca_file. ERR_OK with *out set; ERR_FAIL (a bad list, a file that is not
 * PEM certificates) or ERR_NOMEM with a message in err and *out NULL. */
int clientauth_init(struct clientauth **out, const char *ca_file, const char *names, char *err,
                    size_t errlen);
/* A no-op on NULL; sets *a to NULL. */
void clientauth_stop(struct clientauth **a);

/* Reads the CA file again and makes it current when its bytes changed.
 * ERR_OK with *changed (may be NULL) 1 when new CAs became current, 0 when
 * the file held the current ones; ERR_* with a message in err (the current
 * CAs stay). *count (may be NULL) gets the number of CAs now current. */
int clientauth_load(struct clientauth *a, int *changed, unsigned *count, char *err, size_t errlen);

/* Judges the peer of session, counting a refusal. subject (may be NULL) gets
 * the leaf's subject DN, for the log line of a refusal ("" without a
 * certificate). Any thread. */
enum clientauth_verdict clientauth_check(struct clientauth *a, gnutls_session_t session,
                                         char *subject, size_t subjlen);

/* Refusals with verdict v since init; any thread. */
unsigned long long clientauth_refused(struct clientauth *a, enum clientauth_verdict v);

#endif
