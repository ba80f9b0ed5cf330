#include "wire/tlscreds.h"

#include "wire/certs.h"
#include "base/dynbuf.h"
#include "base/err.h"
#include "host/fsutil.h"

#include <assert.h>
#include <gnutls/crypto.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TLSCREDS_PEM_MAX (1u << 20)

/* In every live object of this module and nowhere else: a stopped or stray
 * pointer fails the assert instead of corrupting memory. */
#define TLSCREDS_MAGIC      0x746c7363u /* "tlsc" */
#define TLSCREDS_PAIR_MAGIC 0x74706169u /* "tpai" */

/* A pair and what only this module sees of it. */
struct tlscreds_pair_held {
    struct tlscreds_pair pub;
    unsigned magic;
    unsigned char digest[32]; /* SHA-256 of both files' bytes */
    atomic_uint refs;
};

struct tlscreds {
    unsigned magic;
    pthread_mutex_t mu; /* current, its generation, and taking references to it */
    struct tlscreds_pair_held *current;
    pthread_mutex_t load_mu; /* one load at a time */
    atomic_ulong generation; /* pairs made current since init; written under mu */
};

static struct tlscreds_pair_held *tlscreds_held(const struct tlscreds_pair *p)
{
    struct tlscreds_pair_held *h =
        (struct tlscreds_pair_held *)((char *)p - offsetof(struct tlscreds_pair_held, pub));

    assert(h->magic == TLSCREDS_PAIR_MAGIC);
    return h;
}

int tlscreds_init(struct tlscreds **out, char *err, size_t errlen)
{
    struct tlscreds *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (!c)
        return err_set(err, errlen, ERR_NOMEM, "TLS credentials: out of memory");
    atomic_init(&c->generation, 0);
    if (pthread_mutex_init(&c->mu, NULL))
        goto no_lock;
    if (pthread_mutex_init(&c->load_mu, NULL)) {
        pthread_mutex_destroy(&c->mu);
        goto no_lock;
    }
    c->magic = TLSCREDS_MAGIC;
    *out = c;
    return ERR_OK;
no_lock:
    free(c);
    return err_set(err, errlen, ERR_FAIL, "TLS credentials: cannot make their locks");
}

static void tlscreds_pair_free(struct tlscreds_pair_held *h)
{
    for (unsigned i = 0; i < h->pub.chain_len; i++)
        gnutls_pcert_deinit(&h->pub.chain[i]);
    if (h->pub.key)
        gnutls_privkey_deinit(h->pub.key);
    h->magic = 0;
    free(h);
}

static void tlscreds_drop(struct tlscreds_pair_held *h)
{
    if (h && atomic_fetch_sub(&h->refs, 1) == 1)
        tlscreds_pair_free(h);
}

void tlscreds_release(const struct tlscreds_pair *p)
{
    if (p)
        tlscreds_drop(tlscreds_held(p));
}

/* Under the lock, so that a load cannot drop the current pair's last
 * reference between reading the pointer and taking one. */
const struct tlscreds_pair *tlscreds_acquire(struct tlscreds *c)
{
    struct tlscreds_pair_held *h;

    assert(c->magic == TLSCREDS_MAGIC);
    pthread_mutex_lock(&c->mu);
    h = c->current;
    if (h)
        atomic_fetch_add(&h->refs, 1);
    pthread_mutex_unlock(&c->mu);
    return h ? &h->pub : NULL;
}

void tlscreds_stop(struct tlscreds **cp)
{
    struct tlscreds *c = *cp;

    if (!c)
        return;
    assert(c->magic == TLSCREDS_MAGIC);
    tlscreds_drop(c->current);
    pthread_mutex_destroy(&c->load_mu);
    pthread_mutex_destroy(&c->mu);
    c->magic = 0;
    free(c);
    *cp = NULL;
}

unsigned long tlscreds_generation(struct tlscreds *c)
{
    assert(c->magic == TLSCREDS_MAGIC);
    return atomic_load(&c->generation);
}

static int tlscreds_read(const char *path, struct dynbuf *b, char *err, size_t errlen)
{
    int rc;

    dynbuf_init(b, TLSCREDS_PEM_MAX);
    if ((rc = fsutil_read_regular(path, b, err, errlen)) != 0)
        return rc < 0 ? rc : ERR_FAIL;
    if (b->len == 0)
        return err_set(err, errlen, ERR_FAIL, "%s is empty; write the PEM file there", path);
    return ERR_OK;
}

/* SHA-256 over the certificate's length, the certificate and the key: the
 * length keeps bytes moved from one file to the other a different pair.
 * Only this digest of the key is kept, never a copy of it. */
static int tlscreds_digest(const struct certs_pem *pem, unsigned char out[32], char *err,
                           size_t errlen)
{
    uint64_t cert_len = pem->cert_len;
    gnutls_hash_hd_t h;

    if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) < 0)
        return err_set(err, errlen, ERR_NOMEM, "cannot hash %s: out of memory", pem->cert_name);
    gnutls_hash(h, &cert_len, sizeof(cert_len));
    gnutls_hash(h, pem->cert, pem->cert_len);
    gnutls_hash(h, pem->key, pem->key_len);
    gnutls_hash_deinit(h, out);
    return ERR_OK;
}

/* Imports the PEM bytes into h; GnuTLS errors name the file. On error h
 * holds what was imported, for tlscreds_pair_free(). */
static int tlscreds_import(struct tlscreds_pair_held *h, const struct certs_pem *pem, char *err,
                           size_t errlen)
{
    struct tlscreds_pair *p = &h->pub;
    gnutls_datum_t d;
    int rc;

    p->chain_len = TLSCREDS_MAX_CHAIN;
    d = (gnutls_datum_t){(unsigned char *)pem->cert, (unsigned)pem->cert_len};
    rc = gnutls_pcert_list_import_x509_raw(p->chain, &p->chain_len, &d, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0) {
        p->chain_len = 0;
        return err_set(err, errlen, ERR_FAIL, "%s: %s", pem->cert_name, gnutls_strerror(rc));
    }
    d = (gnutls_datum_t){(unsigned char *)pem->key, (unsigned)pem->key_len};
    if ((rc = gnutls_privkey_init(&p->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(p->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0)
        return err_set(err, errlen, ERR_FAIL, "%s: %s", pem->key_name, gnutls_strerror(rc));
    return ERR_OK;
}

/* OpenSSL checks the bytes (the key matches the leaf, which is valid now)
 * before GnuTLS imports those same bytes: a rotation landing between two
 * reads cannot slip a mismatched pair in. */
static int tlscreds_make_pair(const struct certs_pem *pem, const unsigned char digest[32],
                              struct tlscreds_pair_held **out, char *err, size_t errlen)
{
    struct tlscreds_pair_held *h;
    struct certs_info info;
    int rc;

    *out = NULL;
    if ((rc = certs_check_pem(pem, &info, err, errlen)) != 0)
        return rc < 0 ? rc : ERR_FAIL;
    if (!(h = calloc(1, sizeof(*h))))
        return err_set(err, errlen, ERR_NOMEM, "loading %s: out of memory", pem->cert_name);
    h->magic = TLSCREDS_PAIR_MAGIC;
    if ((rc = tlscreds_import(h, pem, err, errlen)) != ERR_OK) {
        tlscreds_pair_free(h);
        return rc;
    }
    snprintf(h->pub.serial, sizeof(h->pub.serial), "%s", info.serial_hex);
    h->pub.not_after = info.not_after;
    memcpy(h->digest, digest, sizeof(h->digest));
    atomic_init(&h->refs, 1); /* being current */
    *out = h;
    return ERR_OK;
}

/* Makes h current, its generation with it; the old pair lives on while
 * users still hold it. */
static void tlscreds_swap(struct tlscreds *c, struct tlscreds_pair_held *h)
{
    struct tlscreds_pair_held *old;

    pthread_mutex_lock(&c->mu);
    old = c->current;
    h->pub.generation = atomic_load(&c->generation) + 1;
    atomic_store(&c->generation, h->pub.generation);
    c->current = h;
    pthread_mutex_unlock(&c->mu);
    tlscreds_drop(old);
}

/* Under load_mu, the only place current changes: reading it needs no more. */
static int tlscreds_use(struct tlscreds *c, const struct certs_pem *pem, int *changed, char *err,
                        size_t errlen)
{
    unsigned char digest[32];
    struct tlscreds_pair_held *h;
    int rc;

    if ((rc = tlscreds_digest(pem, digest, err, errlen)) != ERR_OK)
        return rc;
    if (c->current && memcmp(c->current->digest, digest, sizeof(digest)) == 0)
        return ERR_OK;
    if ((rc = tlscreds_make_pair(pem, digest, &h, err, errlen)) != ERR_OK)
        return rc;
    tlscreds_swap(c, h);
    *changed = 1;
    return ERR_OK;
}

int tlscreds_load(struct tlscreds *c, const char *cert_file, const char *key_file, int *changed,
                  char *err, size_t errlen)
{
    struct certs_pem pem = {.cert_name = cert_file, .key_name = key_file};
    struct dynbuf cert, key;
    int rc, ignored;

    assert(c->magic == TLSCREDS_MAGIC);
    changed = changed ? changed : &ignored;
    *changed = 0;
    dynbuf_init(&cert, 0);
    dynbuf_init(&key, 0);
    pthread_mutex_lock(&c->load_mu);
    if ((rc = tlscreds_read(cert_file, &cert, err, errlen)) != ERR_OK ||
        (rc = tlscreds_read(key_file, &key, err, errlen)) != ERR_OK)
        goto out;
    pem.cert = cert.mem;
    pem.cert_len = cert.len;
    pem.key = key.mem;
    pem.key_len = key.len;
    rc = tlscreds_use(c, &pem, changed, err, errlen);
out:
    pthread_mutex_unlock(&c->load_mu);
    if (key.mem)
        explicit_bzero(key.mem, key.alloc);
    dynbuf_free(&cert);
    dynbuf_free(&key);
    return rc;
}
