/* tlscreds: the serving certificate and key as GnuTLS objects, replaceable
 * while the server runs.
 *
 * The TLS handshake asks for the certificate through a callback, which
 * takes the current pair with tlscreds_acquire(). A pair is loaded from the
 * files as a whole, checked (the key matches the certificate, which is valid
 * now) and only then made current, so a half-written rotation keeps the old
 * pair serving. Files whose bytes are those of the current pair load
 * nothing: a SIGHUP or a touch of the files costs two reads and a hash.
 *
 * Pairs are reference-counted: the current pair holds one reference, and
 * each user (a connection whose handshake it served, a metrics read) holds
 * one until it calls tlscreds_release(). A replaced pair is freed when its
 * last user lets go, so rotations do not accumulate pairs, and a connection
 * made before a rotation keeps the pair its session was set up with.
 */
#ifndef RDMA_WEBHOOK_TLSCREDS_H
#define RDMA_WEBHOOK_TLSCREDS_H

#include <gnutls/abstract.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define TLSCREDS_MAX_CHAIN 8
/* tlscreds_load(): the files hold the pair already current. */
#define TLSCREDS_UNCHANGED 1

struct tlscreds_pair {
    gnutls_pcert_st chain[TLSCREDS_MAX_CHAIN];
    unsigned chain_len;
    gnutls_privkey_t key;
    char serial[80];
    long long not_after; /* unix seconds */
    /* Private. */
    unsigned char digest[32]; /* SHA-256 of both files' bytes */
    atomic_uint refs;
};

struct tlscreds {
    /* Private. */
    pthread_mutex_t mu; /* current, and taking references to it */
    struct tlscreds_pair *current;
    pthread_mutex_t load_mu; /* one load at a time */
    atomic_ulong generation; /* pairs made current since init */
};

int tlscreds_init(struct tlscreds *c);
/* Frees the current pair; no other reference may be left. */
void tlscreds_stop(struct tlscreds *c);

/* Reads cert_file and key_file and, when they differ from the current pair,
 * makes them current. Returns 0 (loaded), TLSCREDS_UNCHANGED, or -1 with a
 * one-line message in err (the previous pair, if any, stays current). */
int tlscreds_load(struct tlscreds *c, const char *cert_file, const char *key_file, char *err,
                  size_t errlen);

/* The current pair with a reference taken, or NULL before the first load. */
const struct tlscreds_pair *tlscreds_acquire(struct tlscreds *c);
/* Drops a reference from tlscreds_acquire(); NULL is ignored. */
void tlscreds_release(const struct tlscreds_pair *p);

/* Pairs loaded since init; 0 before the first. Any thread. */
unsigned long tlscreds_generation(struct tlscreds *c);

#endif
