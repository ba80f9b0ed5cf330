#include "tlscreds.h"

#include "certs.h"
#include "dynbuf.h"
#include "fsutil.h"

#include <gnutls/crypto.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TLSCREDS_PEM_MAX (1u << 20)

int tlscreds_init(struct tlscreds *c)
{
    c->current = NULL;
    atomic_init(&c->generation, 0);
    if (pthread_mutex_init(&c->mu, NULL))
        return -1;
    if (pthread_mutex_init(&c->load_mu, NULL)) {
        pthread_mutex_destroy(&c->mu);
        return -1;
    }
    return 0;
}

static void tlscreds_pair_free(struct tlscreds_pair *p)
{
    for (unsigned i = 0; i < p->chain_len; i++)
        gnutls_pcert_deinit(&p->chain[i]);
    if (p->key)
        gnutls_privkey_deinit(p->key);
    free(p);
}

void tlscreds_release(const struct tlscreds_pair *cp)
{
    struct tlscreds_pair *p = (struct tlscreds_pair *)cp;

    if (p && atomic_fetch_sub(&p->refs, 1) == 1)
        tlscreds_pair_free(p);
}

/* Under the lock, so that a load cannot drop the current pair's last
 * reference between reading the pointer and taking one. */
const struct tlscreds_pair *tlscreds_acquire(struct tlscreds *c)
{
    struct tlscreds_pair *p;

    pthread_mutex_lock(&c->mu);
    p = c->current;
    if (p)
        atomic_fetch_add(&p->refs, 1);
    pthread_mutex_unlock(&c->mu);
    return p;
}

void tlscreds_stop(struct tlscreds *c)
{
    tlscreds_release(c->current);
    c->current = NULL;
    pthread_mutex_destroy(&c->load_mu);
    pthread_mutex_destroy(&c->mu);
}

unsigned long tlscreds_generation(struct tlscreds *c)
{
    return atomic_load(&c->generation);
}

static int tlscreds_read(const char *path, struct dynbuf *b, char *err, size_t errlen)
{
    dynbuf_init(b, TLSCREDS_PEM_MAX);
    if (fsutil_read(path, b, err, errlen))
        return -1;
    if (b->len == 0) {
        snprintf(err, errlen, "%s is empty", path);
        return -1;
    }
    return 0;
}

/* SHA-256 over the certificate's length, the certificate and the key: the
 * length keeps bytes moved from one file to the other a different pair.
 * Only this digest of the key is kept, never a copy of it. */
static int tlscreds_digest(const struct certs_pem *pem, unsigned char out[32], char *err,
                           size_t errlen)
{
    uint64_t cert_len = pem->cert_len;
    gnutls_hash_hd_t h;

    if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) < 0) {
        snprintf(err, errlen, "cannot hash %s: out of memory", pem->cert_name);
        return -1;
    }
    gnutls_hash(h, &cert_len, sizeof(cert_len));
    gnutls_hash(h, pem->cert, pem->cert_len);
    gnutls_hash(h, pem->key, pem->key_len);
    gnutls_hash_deinit(h, out);
    return 0;
}

/* Imports the PEM bytes into a new pair; GnuTLS errors name the file. */
static struct tlscreds_pair *tlscreds_import(const struct certs_pem *pem, char *err, size_t errlen)
{
    struct tlscreds_pair *p = calloc(1, sizeof(*p));
    gnutls_datum_t d;
    int rc;

    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->chain_len = TLSCREDS_MAX_CHAIN;
    d = (gnutls_datum_t){(unsigned char *)pem->cert, (unsigned)pem->cert_len};
    rc = gnutls_pcert_list_import_x509_raw(p->chain, &p->chain_len, &d, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0) {
        p->chain_len = 0;
        snprintf(err, errlen, "%s: %s", pem->cert_name, gnutls_strerror(rc));
        goto fail;
    }
    d = (gnutls_datum_t){(unsigned char *)pem->key, (unsigned)pem->key_len};
    if ((rc = gnutls_privkey_init(&p->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(p->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(err, errlen, "%s: %s", pem->key_name, gnutls_strerror(rc));
        goto fail;
    }
    return p;
fail:
    tlscreds_pair_free(p);
    return NULL;
}

/* OpenSSL checks the bytes (the key matches the leaf, which is valid now)
 * before GnuTLS imports those same bytes: a rotation landing between two
 * reads cannot slip a mismatched pair in. */
static struct tlscreds_pair *tlscreds_make_pair(const struct certs_pem *pem,
                                                const unsigned char digest[32], char *err,
                                                size_t errlen)
{
    struct tlscreds_pair *p;
    struct certs_info info;

    if (certs_check_pem(pem, &info, err, errlen) || !(p = tlscreds_import(pem, err, errlen)))
        return NULL;
    snprintf(p->serial, sizeof(p->serial), "%s", info.serial_hex);
    p->not_after = info.not_after;
    memcpy(p->digest, digest, sizeof(p->digest));
    atomic_init(&p->refs, 1); /* being current */
    return p;
}

/* Makes p current; the old pair lives on while users still hold it. */
static void tlscreds_swap(struct tlscreds *c, struct tlscreds_pair *p)
{
    struct tlscreds_pair *old;

    pthread_mutex_lock(&c->mu);
    old = c->current;
    c->current = p;
    pthread_mutex_unlock(&c->mu);
    atomic_fetch_add(&c->generation, 1);
    tlscreds_release(old);
}

/* Under load_mu, the only place current changes: reading it needs no more. */
static int tlscreds_use(struct tlscreds *c, const struct certs_pem *pem, char *err, size_t errlen)
{
    unsigned char digest[32];
    struct tlscreds_pair *p;

    if (tlscreds_digest(pem, digest, err, errlen))
        return -1;
    if (c->current && memcmp(c->current->digest, digest, sizeof(digest)) == 0)
        return TLSCREDS_UNCHANGED;
    p = tlscreds_make_pair(pem, digest, err, errlen);
    if (!p)
        return -1;
    tlscreds_swap(c, p);
    return 0;
}

int tlscreds_load(struct tlscreds *c, const char *cert_file, const char *key_file, char *err,
                  size_t errlen)
{
    struct certs_pem pem = {.cert_name = cert_file, .key_name = key_file};
    struct dynbuf cert, key;
    int rc = -1;

    dynbuf_init(&cert, 0);
    dynbuf_init(&key, 0);
    pthread_mutex_lock(&c->load_mu);
    if (tlscreds_read(cert_file, &cert, err, errlen) || tlscreds_read(key_file, &key, err, errlen))
        goto out;
    pem.cert = cert.mem;
    pem.cert_len = cert.len;
    pem.key = key.mem;
    pem.key_len = key.len;
    rc = tlscreds_use(c, &pem, err, errlen);
out:
    pthread_mutex_unlock(&c->load_mu);
    if (key.mem)
        explicit_bzero(key.mem, key.alloc);
    dynbuf_free(&cert);
    dynbuf_free(&key);
    return rc;
}
