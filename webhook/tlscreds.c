#include "tlscreds.h"

#include "dynbuf.h"
#include "fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/x509.h>

#define TLSCREDS_PEM_MAX (1u << 20)

int tlscreds_init(struct tlscreds *c)
{
    atomic_init(&c->current, NULL);
    c->generation = 0;
    return pthread_mutex_init(&c->load_mu, NULL) ? -1 : 0;
}

static void tlscreds_pair_free(struct tlscreds_pair *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->chain_len; i++)
        gnutls_pcert_deinit(&p->chain[i]);
    if (p->key)
        gnutls_privkey_deinit(p->key);
    free(p);
}

void tlscreds_free(struct tlscreds *c)
{
    struct tlscreds_pair *p = atomic_exchange(&c->current, NULL);

    while (p) {
        struct tlscreds_pair *older = p->older;

        tlscreds_pair_free(p);
        p = older;
    }
    pthread_mutex_destroy(&c->load_mu);
}

const struct tlscreds_pair *tlscreds_current(struct tlscreds *c)
{
    return atomic_load(&c->current);
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

/* Imports the PEM files into a new pair; GnuTLS errors are reported with the
 * file they came from. */
static struct tlscreds_pair *tlscreds_import(const char *cert_file, const char *key_file, char *err,
                                             size_t errlen)
{
    struct tlscreds_pair *p = calloc(1, sizeof(*p));
    struct dynbuf cert, key;
    gnutls_datum_t d;
    int rc;

    dynbuf_init(&cert, 0);
    dynbuf_init(&key, 0);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (tlscreds_read(cert_file, &cert, err, errlen) || tlscreds_read(key_file, &key, err, errlen))
        goto fail;
    p->chain_len = TLSCREDS_MAX_CHAIN;
    d = (gnutls_datum_t){(unsigned char *)cert.mem, (unsigned)cert.len};
    rc = gnutls_pcert_list_import_x509_raw(p->chain, &p->chain_len, &d, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0) {
        p->chain_len = 0;
        snprintf(err, errlen, "%s: %s", cert_file, gnutls_strerror(rc));
        goto fail;
    }
    d = (gnutls_datum_t){(unsigned char *)key.mem, (unsigned)key.len};
    if ((rc = gnutls_privkey_init(&p->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(p->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(err, errlen, "%s: %s", key_file, gnutls_strerror(rc));
        goto fail;
    }
    dynbuf_free(&cert);
    dynbuf_free(&key);
    return p;
fail:
    dynbuf_free(&cert);
    dynbuf_free(&key);
    tlscreds_pair_free(p);
    return NULL;
}

/* 0 when the key is the one the leaf certificate was issued for. */
static int tlscreds_key_matches(const struct tlscreds_pair *p)
{
    gnutls_pubkey_t pub = NULL;
    gnutls_datum_t a = {NULL, 0}, b = {NULL, 0};
    int rc = -1;

    if (gnutls_pubkey_init(&pub) < 0 || gnutls_pubkey_import_privkey(pub, p->key, 0, 0) < 0 ||
        gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &a) < 0 ||
        gnutls_pubkey_export2(p->chain[0].pubkey, GNUTLS_X509_FMT_DER, &b) < 0)
        goto out;
    rc = a.size == b.size && memcmp(a.data, b.data, a.size) == 0 ? 0 : -1;
out:
    gnutls_free(a.data);
    gnutls_free(b.data);
    if (pub)
        gnutls_pubkey_deinit(pub);
    return rc;
}

/* Fills serial and expiry from the leaf, and checks it is valid now. */
static int tlscreds_describe(struct tlscreds_pair *p, const char *cert_file, char *err,
                             size_t errlen)
{
    gnutls_x509_crt_t crt = NULL;
    unsigned char serial[40];
    size_t n = sizeof(serial);
    time_t now = time(NULL);
    int rc = -1;

    if (gnutls_x509_crt_init(&crt) < 0 ||
        gnutls_x509_crt_import(crt, &p->chain[0].cert, GNUTLS_X509_FMT_DER) < 0 ||
        gnutls_x509_crt_get_serial(crt, serial, &n) < 0) {
        snprintf(err, errlen, "%s: cannot read the certificate", cert_file);
        goto out;
    }
    for (size_t i = 0; i < n && 2 * i + 2 < sizeof(p->serial); i++)
        snprintf(p->serial + 2 * i, 3, "%02X", serial[i]);
    p->not_after = (long long)gnutls_x509_crt_get_expiration_time(crt);
    if (gnutls_x509_crt_get_activation_time(crt) > now || p->not_after < (long long)now) {
        snprintf(err, errlen, "%s is not valid now (expired or not yet valid); renew it",
                 cert_file);
        goto out;
    }
    rc = 0;
out:
    if (crt)
        gnutls_x509_crt_deinit(crt);
    return rc;
}

int tlscreds_load(struct tlscreds *c, const char *cert_file, const char *key_file, char *err,
                  size_t errlen)
{
    struct tlscreds_pair *p;
    int rc = -1;

    /* Each file is read once: the pair checked is the pair served, even when
     * the files change while this runs. */
    pthread_mutex_lock(&c->load_mu);
    p = tlscreds_import(cert_file, key_file, err, errlen);
    if (!p)
        goto out;
    if (tlscreds_key_matches(p) != 0) {
        snprintf(err, errlen, "%s does not match %s: regenerate both with 'rdma-webhook gen-certs'",
                 key_file, cert_file);
        goto out;
    }
    if (tlscreds_describe(p, cert_file, err, errlen))
        goto out;
    p->older = atomic_load(&c->current);
    atomic_store(&c->current, p);
    p = NULL;
    c->generation++;
    rc = 0;
out:
    tlscreds_pair_free(p);
    pthread_mutex_unlock(&c->load_mu);
    return rc;
}
