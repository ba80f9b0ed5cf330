/* tlscreds: the serving certificate and key as GnuTLS objects, replaceable
 * while the server runs.
 *
 * The TLS handshake asks for the certificate through a callback
 * (tlscreds_current), which returns the newest loaded pair. A pair is loaded
 * from the files as a whole, checked (the key matches the certificate, which
 * is valid now) and only then made current, so a half-written rotation keeps
 * the old pair serving. Replaced pairs are kept until tlscreds_free():
 * GnuTLS may still be using them in handshakes that started before the swap,
 * and rotations are rare enough (days apart) that keeping them costs little.
 */
#ifndef RDMA_WEBHOOK_TLSCREDS_H
#define RDMA_WEBHOOK_TLSCREDS_H

#include <gnutls/abstract.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define TLSCREDS_MAX_CHAIN 8

struct tlscreds_pair {
    gnutls_pcert_st chain[TLSCREDS_MAX_CHAIN];
    unsigned chain_len;
    gnutls_privkey_t key;
    char serial[80];
    long long not_after; /* unix seconds */
    struct tlscreds_pair *older;
};

struct tlscreds {
    _Atomic(struct tlscreds_pair *) current;
    pthread_mutex_t load_mu; /* one load at a time */
    unsigned long generation;
};

int tlscreds_init(struct tlscreds *c);
void tlscreds_free(struct tlscreds *c);

/* Loads cert_file and key_file and makes them current. Returns 0, or -1 with
 * a one-line message in err (the previous pair, if any, stays current). */
int tlscreds_load(struct tlscreds *c, const char *cert_file, const char *key_file, char *err,
                  size_t errlen);

/* The pair for a new handshake, or NULL before the first load. */
const struct tlscreds_pair *tlscreds_current(struct tlscreds *c);

#endif
