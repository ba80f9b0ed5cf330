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
 *
 * Lifecycle: tlscreds_init() makes the (opaque) credentials, empty;
 * tlscreds_stop() undoes it, whatever happened in between.
 */
#ifndef RDMA_WEBHOOK_TLSCREDS_H
#define RDMA_WEBHOOK_TLSCREDS_H

#include <gnutls/abstract.h>
#include <stddef.h>

#define TLSCREDS_MAX_CHAIN 8

/* Opaque: the current pair, its locks and the count of pairs loaded. */
struct tlscreds;

/* One loaded pair, as its users read it; nothing in it changes once it is
 * current. (Its reference count and digest are kept around it, in
 * tlscreds.c.) */
struct tlscreds_pair {
    gnutls_pcert_st chain[TLSCREDS_MAX_CHAIN];
    unsigned chain_len;
    gnutls_privkey_t key;
    char serial[80];
    long long not_after;      /* unix seconds */
    unsigned long generation; /* 1 for the first pair loaded, then one more each */
};

/* ERR_OK with *out set, or ERR_NOMEM / ERR_FAIL with a message in err and
 * *out NULL. */
int tlscreds_init(struct tlscreds **out, char *err, size_t errlen);
/* Drops the current pair (a pair a user still holds lives until released)
 * and frees the rest; sets *c to NULL. A no-op on NULL. */
void tlscreds_stop(struct tlscreds **c);

/* Reads cert_file and key_file and, when they differ from the current pair,
 * makes them current. ERR_OK, with *changed (may be NULL) set to 1 when a
 * new pair became current and to 0 when the files held the current pair;
 * or ERR_* with a one-line message in err (the previous pair, if any, stays
 * current). */
int tlscreds_load(struct tlscreds *c, const char *cert_file, const char *key_file, int *changed,
                  char *err, size_t errlen);

/* The current pair with a reference taken, or NULL before the first load. */
const struct tlscreds_pair *tlscreds_acquire(struct tlscreds *c);
/* Drops a reference from tlscreds_acquire(); NULL is ignored. */
void tlscreds_release(const struct tlscreds_pair *p);

/* Pairs loaded since init; 0 before the first. Any thread: read
 * atomically, so a request thread needs no lock. */
unsigned long tlscreds_generation(struct tlscreds *c);

#endif
