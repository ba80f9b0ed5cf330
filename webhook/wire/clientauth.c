#include "wire/clientauth.h"

#include "base/dynbuf.h"
#include "base/err.h"
#include "host/fsutil.h"

#include <assert.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLIENTAUTH_PEM_MAX (1u << 20)
/* In every live object of this module and nowhere else. */
#define CLIENTAUTH_MAGIC 0x636c6175u /* "clau" */

/* One version of the CA file, as a trust list. */
struct clientauth_cas {
    gnutls_x509_trust_list_t list;
    unsigned count;
    unsigned char digest[32]; /* SHA-256 of the file's bytes */
    atomic_uint refs;
};

struct clientauth {
    unsigned magic;
    char *ca_file;
    char names[CLIENTAUTH_MAX_NAMES][CLIENTAUTH_NAME_MAX + 1];
    unsigned n_names;
    pthread_mutex_t mu; /* current, and taking references to it */
    struct clientauth_cas *current;
    pthread_mutex_t load_mu; /* one load at a time */
    atomic_ullong refused[CLIENTAUTH_VERDICTS];
};

const char *clientauth_verdict_name(enum clientauth_verdict v)
{
    switch (v) {
    case CLIENTAUTH_NO_CERT: return "no-certificate";
    case CLIENTAUTH_UNTRUSTED: return "untrusted";
    case CLIENTAUTH_NAME: return "name";
    default: return "ok";
    }
}

static void clientauth_drop(struct clientauth_cas *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    gnutls_x509_trust_list_deinit(c->list, 1);
    free(c);
}

static struct clientauth_cas *clientauth_acquire(struct clientauth *a)
{
    struct clientauth_cas *c;

    pthread_mutex_lock(&a->mu);
    if ((c = a->current))
        atomic_fetch_add(&c->refs, 1);
    pthread_mutex_unlock(&a->mu);
    return c;
}

/* "a,b,c" into a->names; empty entries are a mistake worth saying. */
static int clientauth_parse_names(struct clientauth *a, const char *names, char *err, size_t errlen)
{
    const char *p = names, *comma;
    size_t len;

    while (p && *p) {
        comma = strchr(p, ',');
        len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len > CLIENTAUTH_NAME_MAX)
            return err_set(err, errlen, ERR_FAIL,
                           "--client-names: each name is 1 to %d bytes, separated by commas",
                           CLIENTAUTH_NAME_MAX);
        if (a->n_names == CLIENTAUTH_MAX_NAMES)
            return err_set(err, errlen, ERR_FAIL, "--client-names: at most %d names",
                           CLIENTAUTH_MAX_NAMES);
        memcpy(a->names[a->n_names], p, len);
        a->names[a->n_names++][len] = '\0';
        p = comma ? comma + 1 : NULL;
        if (p && !*p)
            return err_set(err, errlen, ERR_FAIL, "--client-names: a name after the last comma");
    }
    return ERR_OK;
}

static int clientauth_digest(const struct dynbuf *b, unsigned char out[32])
{
    return gnutls_hash_fast(GNUTLS_DIG_SHA256, b->mem, b->len, out) < 0 ? ERR_NOMEM : ERR_OK;
}

/* The file's certificates as a new trust list; the list owns them. */
static int clientauth_parse(const char *file, const struct dynbuf *b, struct clientauth_cas **out,
                            char *err, size_t errlen)
{
    gnutls_datum_t d = {(unsigned char *)b->mem, (unsigned)b->len};
    gnutls_x509_crt_t *crts = NULL;
    struct clientauth_cas *c;
    unsigned n = 0;
    int rc;

    *out = NULL;
    rc = gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0 || n == 0)
        return err_set(err, errlen, ERR_FAIL, "%s: %s; it must hold PEM CA certificates", file,
                       rc < 0 ? gnutls_strerror(rc) : "no certificate");
    if (!(c = calloc(1, sizeof(*c))) || gnutls_x509_trust_list_init(&c->list, 0) < 0)
        goto nomem;
    if (gnutls_x509_trust_list_add_cas(c->list, crts, n, 0) < 0) {
        gnutls_x509_trust_list_deinit(c->list, 0);
        goto nomem;
    }
    gnutls_free(crts);
    c->count = n;
    atomic_init(&c->refs, 1); /* being current */
    *out = c;
    return ERR_OK;
nomem:
    free(c);
    for (unsigned i = 0; i < n; i++)
        gnutls_x509_crt_deinit(crts[i]);
    gnutls_free(crts);
    return err_set(err, errlen, ERR_NOMEM, "loading %s: out of memory", file);
}

int clientauth_load(struct clientauth *a, int *changed, unsigned *count, char *err, size_t errlen)
{
    struct clientauth_cas *c = NULL, *old;
    unsigned char digest[32];
    struct dynbuf b;
    int rc, ignored;

    assert(a->magic == CLIENTAUTH_MAGIC);
    changed = changed ? changed : &ignored;
    *changed = 0;
    dynbuf_init(&b, CLIENTAUTH_PEM_MAX);
    pthread_mutex_lock(&a->load_mu);
    if ((rc = fsutil_read_regular(a->ca_file, &b, err, errlen)) != ERR_OK)
        goto out;
    if ((rc = clientauth_digest(&b, digest)) != ERR_OK) {
        err_set(err, errlen, rc, "cannot hash %s: out of memory", a->ca_file);
        goto out;
    }
    if (a->current && memcmp(a->current->digest, digest, sizeof(digest)) == 0)
        goto out;
    if ((rc = clientauth_parse(a->ca_file, &b, &c, err, errlen)) != ERR_OK)
        goto out;
    memcpy(c->digest, digest, sizeof(digest));
    pthread_mutex_lock(&a->mu);
    old = a->current;
    a->current = c;
    pthread_mutex_unlock(&a->mu);
    clientauth_drop(old);
    *changed = 1;
out:
    /* Under load_mu, the only place current changes. */
    if (count)
        *count = a->current ? a->current->count : 0;
    pthread_mutex_unlock(&a->load_mu);
    dynbuf_free(&b);
    return rc;
}

int clientauth_init(struct clientauth **out, const char *ca_file, const char *names, char *err,
                    size_t errlen)
{
    struct clientauth *a = calloc(1, sizeof(*a));
    int rc = ERR_NOMEM;

    *out = NULL;
    if (!a || !(a->ca_file = strdup(ca_file))) {
        free(a);
        return err_set(err, errlen, ERR_NOMEM, "client CA: out of memory");
    }
    if (pthread_mutex_init(&a->mu, NULL) == 0) {
        if (pthread_mutex_init(&a->load_mu, NULL) == 0) {
            a->magic = CLIENTAUTH_MAGIC;
            if ((rc = clientauth_parse_names(a, names, err, errlen)) == ERR_OK &&
                (rc = clientauth_load(a, NULL, NULL, err, errlen)) == ERR_OK) {
                *out = a;
                return ERR_OK;
            }
            clientauth_stop(&a);
            return rc;
        }
        pthread_mutex_destroy(&a->mu);
    }
    free(a->ca_file);
    free(a);
    return err_set(err, errlen, ERR_FAIL, "client CA: cannot make its locks");
}

void clientauth_stop(struct clientauth **ap)
{
    struct clientauth *a = *ap;

    if (!a)
        return;
    assert(a->magic == CLIENTAUTH_MAGIC);
    clientauth_drop(a->current);
    pthread_mutex_destroy(&a->load_mu);
    pthread_mutex_destroy(&a->mu);
    free(a->ca_file);
    a->magic = 0;
    free(a);
    *ap = NULL;
}

unsigned long long clientauth_refused(struct clientauth *a, enum clientauth_verdict v)
{
    assert(a->magic == CLIENTAUTH_MAGIC);
    return (unsigned)v < CLIENTAUTH_VERDICTS ? atomic_load(&a->refused[v]) : 0;
}

/* 1 when value (len bytes, not NUL-terminated: a certificate may hold any
 * byte) is one of the names. */
static int clientauth_named(const struct clientauth *a, const char *value, size_t len)
{
    for (unsigned i = 0; i < a->n_names; i++)
        if (strlen(a->names[i]) == len && memcmp(a->names[i], value, len) == 0)
            return 1;
    return 0;
}

/* The subject's CNs, then the DNS subjectAltNames. */
static int clientauth_names_match(const struct clientauth *a, gnutls_x509_crt_t crt)
{
    char buf[CLIENTAUTH_NAME_MAX + 1];
    size_t size;
    unsigned critical;
    int type;

    for (unsigned i = 0;; i++) {
        size = sizeof(buf);
        type = gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, i, 0, buf, &size);
        if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (type >= 0 && clientauth_named(a, buf, size))
            return 1;
    }
    for (unsigned i = 0;; i++) {
        size = sizeof(buf);
        type = gnutls_x509_crt_get_subject_alt_name(crt, i, buf, &size, &critical);
        if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (type == GNUTLS_SAN_DNSNAME && clientauth_named(a, buf, size))
            return 1;
    }
    return 0;
}

static void clientauth_subject(gnutls_x509_crt_t crt, char *subject, size_t subjlen)
{
    gnutls_datum_t dn = {NULL, 0};

    if (!subject || !subjlen)
        return;
    if (gnutls_x509_crt_get_dn3(crt, &dn, 0) < 0) {
        snprintf(subject, subjlen, "(unreadable)");
        return;
    }
    snprintf(subject, subjlen, "%.*s", (int)dn.size, (const char *)dn.data);
    gnutls_free(dn.data);
}

/* The chain against the current CAs, for client authentication, now. */
static enum clientauth_verdict clientauth_judge(struct clientauth *a, gnutls_x509_crt_t *crts,
                                                unsigned n)
{
    gnutls_typed_vdata_st purpose = {GNUTLS_DT_KEY_PURPOSE_OID, (void *)GNUTLS_KP_TLS_WWW_CLIENT,
                                     0};
    struct clientauth_cas *cas = clientauth_acquire(a);
    unsigned status = 1;
    int rc = -1;

    if (cas)
        rc = gnutls_x509_trust_list_verify_crt2(cas->list, crts, n, &purpose, 1, 0, &status, NULL);
    clientauth_drop(cas);
    if (rc < 0 || status != 0)
        return CLIENTAUTH_UNTRUSTED;
    if (a->n_names && !clientauth_names_match(a, crts[0]))
        return CLIENTAUTH_NAME;
    return CLIENTAUTH_OK;
}

enum clientauth_verdict clientauth_check(struct clientauth *a, gnutls_session_t session,
                                         char *subject, size_t subjlen)
{
    gnutls_x509_crt_t crts[CLIENTAUTH_MAX_CHAIN];
    enum clientauth_verdict v = CLIENTAUTH_UNTRUSTED;
    const gnutls_datum_t *peers;
    unsigned n = 0, got = 0;

    assert(a->magic == CLIENTAUTH_MAGIC);
    if (subject && subjlen)
        subject[0] = '\0';
    peers = gnutls_certificate_get_peers(session, &n);
    if (!peers || n == 0) {
        v = CLIENTAUTH_NO_CERT;
        goto out;
    }
    if (n > CLIENTAUTH_MAX_CHAIN)
        goto out;
    for (; got < n; got++) {
        if (gnutls_x509_crt_init(&crts[got]) < 0)
            goto out;
        if (gnutls_x509_crt_import(crts[got], &peers[got], GNUTLS_X509_FMT_DER) < 0) {
            got++; /* freed below */
            goto out;
        }
    }
    clientauth_subject(crts[0], subject, subjlen);
    v = clientauth_judge(a, crts, n);
out:
    for (unsigned i = 0; i < got; i++)
        gnutls_x509_crt_deinit(crts[i]);
    if (v != CLIENTAUTH_OK)
        atomic_fetch_add(&a->refused[v], 1);
    return v;
}
