#include "tlscreds.h"

#include "certs.h"
#include "dynbuf.h"
#include "fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Each file is read once and OpenSSL checks those very bytes (the key
 * matches the leaf, which is valid now) before GnuTLS imports them: a
 * rotation landing between two reads cannot slip a mismatched pair in. */
static struct tlscreds_pair *tlscreds_read_pair(const char *cert_file, const char *key_file,
                                                char *err, size_t errlen)
{
    struct tlscreds_pair *p = NULL;
    struct certs_info info;
    struct certs_pem pem = {.cert_name = cert_file, .key_name = key_file};
    struct dynbuf cert, key;

    dynbuf_init(&cert, 0);
    dynbuf_init(&key, 0);
    if (tlscreds_read(cert_file, &cert, err, errlen) || tlscreds_read(key_file, &key, err, errlen))
        goto out;
    pem.cert = cert.mem;
    pem.cert_len = cert.len;
    pem.key = key.mem;
    pem.key_len = key.len;
    if (certs_check_pem(&pem, &info, err, errlen) || !(p = tlscreds_import(&pem, err, errlen)))
        goto out;
    snprintf(p->serial, sizeof(p->serial), "%s", info.serial_hex);
    p->not_after = info.not_after;
out:
    if (key.mem)
        explicit_bzero(key.mem, key.alloc);
    dynbuf_free(&cert);
    dynbuf_free(&key);
    return p;
}

int tlscreds_load(struct tlscreds *c, const char *cert_file, const char *key_file, char *err,
                  size_t errlen)
{
    struct tlscreds_pair *p;
    int rc = -1;

    pthread_mutex_lock(&c->load_mu);
    p = tlscreds_read_pair(cert_file, key_file, err, errlen);
    if (p) {
        p->older = atomic_load(&c->current);
        atomic_store(&c->current, p);
        c->generation++;
        rc = 0;
    }
    pthread_mutex_unlock(&c->load_mu);
    return rc;
}
