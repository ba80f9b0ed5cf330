#include "wire/certs.h"

#include "base/err.h"
#include "base/k8sname.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define CERTS_DEFAULT_NAME "rdma-webhook"
#define CERTS_DEFAULT_DAYS 365
#define CERTS_MAX_DAYS     36500
#define CERTS_CA_CN        "rdma-webhook-ca"
#define CERTS_SKEW_SECONDS (5 * 60)
#define CERTS_SERIAL_BITS  159 /* 20 DER bytes with the sign bit clear: RFC 5280's maximum */
#define CERTS_CN_MAX       64  /* ub-common-name */
#define CERTS_REGEN_HINT   "regenerate both with 'rdma-webhook gen-certs'"
/* One OpenSSL reason string: the size ERR_error_string() asks of its buffer. */
#define CERTS_REASON_LEN 256

/* Order of the renames too: each key lands before its certificate, so a
 * watcher woken by the certificate's change finds the matching key. */
enum { CERTS_F_CA_KEY, CERTS_F_CA_CRT, CERTS_F_TLS_KEY, CERTS_F_TLS_CRT, CERTS_F_COUNT };

struct certs_params {
    const char *dir;
    const char *service;
    const char *ns;
    int days;
    long long secs; /* the validity, of days or of certs_make_leaf_pem's seconds */
};

struct certs_staged {
    char *path;
    char *tmp;
    int created; /* tmp exists on disk and must be renamed or unlinked */
};

/* Bounded text for log fields: always terminated, marked "..." when cut. */
struct certs_text {
    char *p;
    size_t cap;
    size_t len;
    int cut;
};

/* The reason of OpenSSL's last error into buf, and its code: ERR_NOMEM when
 * OpenSSL says it ran out of memory, else ERR_FAIL. Also empties the queue,
 * so the failure cannot resurface in later TLS code. */
static int certs_ssl_reason(char *buf, size_t len)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
    int code = e != 0 && ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE ? ERR_NOMEM : ERR_FAIL;

    if (r != NULL)
        snprintf(buf, len, "%s", r);
    else if (e != 0)
        ERR_error_string_n(e, buf, len);
    else
        snprintf(buf, len, "unknown OpenSSL error");
    ERR_clear_error();
    return code;
}

static int certs_ssl_err(char *err, size_t errlen, const char *what)
{
    char reason[CERTS_REASON_LEN];
    int code = certs_ssl_reason(reason, sizeof reason);

    return err_set(err, errlen, code, "cannot %s (%s): check the OpenSSL installation and retry",
                   what, reason);
}

static int certs_resolve_opts(const struct certs_gen_opts *o, struct certs_params *p, char *err,
                              size_t errlen)
{
    if (o == NULL || o->out_dir == NULL || o->out_dir[0] == '\0')
        return err_set(err, errlen, ERR_FAIL, "no output directory: pass --out-dir DIR");
    p->dir = o->out_dir;
    p->service = o->service != NULL ? o->service : CERTS_DEFAULT_NAME;
    p->ns = o->namespace_ != NULL ? o->namespace_ : CERTS_DEFAULT_NAME;
    p->days = o->days != 0 ? o->days : CERTS_DEFAULT_DAYS;
    p->secs = (long long)p->days * 86400;
    if (!k8sname_label(p->service) || !k8sname_label(p->ns))
        return err_set(err, errlen, ERR_FAIL,
                       "invalid service '%s' or namespace '%s': use lowercase "
                       "letters, digits and '-', at most 63 characters",
                       p->service, p->ns);
    if (p->days < 1 || p->days > CERTS_MAX_DAYS)
        return err_set(err, errlen, ERR_FAIL, "invalid --days %d: use a value from 1 to %d",
                       p->days, CERTS_MAX_DAYS);
    return ERR_OK;
}

static int certs_make_key(EVP_PKEY **key, char *err, size_t errlen)
{
    *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    return *key != NULL ? ERR_OK : certs_ssl_err(err, errlen, "generate an ECDSA P-256 key");
}

static int certs_set_random_serial(X509 *x)
{
    BIGNUM *bn = BN_new();
    /* Top bit forced: exactly 159 bits, so never zero and never negative. */
    int ok = bn != NULL && BN_rand(bn, CERTS_SERIAL_BITS, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) &&
             BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;

    BN_free(bn);
    return ok;
}

static int certs_add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, ctx, nid, value);
    int ok = ext != NULL && X509_add_ext(x, ext, -1);

    X509_EXTENSION_free(ext);
    return ok;
}

/* What both certificates share; the caller adds issuer, extensions, signature. */
static X509 *certs_new_cert(EVP_PKEY *key, const char *cn, long long secs, time_t now)
{
    X509 *x = X509_new();
    int ok = 0;

    if (x == NULL)
        goto out;
    if (!X509_set_version(x, X509_VERSION_3) || !certs_set_random_serial(x))
        goto out;
    /* Backdated so that a node whose clock runs behind accepts it at once. */
    if (X509_time_adj_ex(X509_getm_notBefore(x), 0, -CERTS_SKEW_SECONDS, &now) == NULL ||
        X509_time_adj_ex(X509_getm_notAfter(x), (int)(secs / 86400), (long)(secs % 86400), &now) ==
            NULL)
        goto out;
    if (!X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                                    (const unsigned char *)cn, -1, -1, 0) ||
        !X509_set_pubkey(x, key))
        goto out;
    ok = 1;
out:
    if (!ok) {
        X509_free(x);
        x = NULL;
    }
    return x;
}

/* x signed by signer when built says it is complete; else, or when signing
 * fails, x is freed and the answer is NULL. */
static X509 *certs_signed(X509 *x, EVP_PKEY *signer, int built)
{
    if (built && X509_sign(x, signer, EVP_sha256()) > 0)
        return x;
    X509_free(x);
    return NULL;
}

static X509 *certs_make_ca(EVP_PKEY *key, const char *cn, long long secs, time_t now)
{
    X509V3_CTX ctx;
    X509 *x = certs_new_cert(key, cn, secs, now);
    int ok = 0;

    if (x == NULL || !X509_set_issuer_name(x, X509_get_subject_name(x)))
        goto out;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    if (!certs_add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
        !certs_add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") ||
        !certs_add_ext(x, &ctx, NID_subject_key_identifier, "hash"))
        goto out;
    ok = 1;
out:
    return certs_signed(x, key, ok);
}

/* Clients match the SANs; the CN is informational, but it is capped at 64
 * characters and a too-long one would make generation fail. */
static void certs_leaf_cn(const struct certs_params *p, char *cn, size_t len)
{
    int n = snprintf(cn, len, "%s.%s.svc", p->service, p->ns);

    if (n < 0 || (size_t)n > CERTS_CN_MAX)
        snprintf(cn, len, "%s", p->service);
}

static int certs_leaf_sans(const struct certs_params *p, char *san, size_t len)
{
    const char *s = p->service, *ns = p->ns;
    int n = snprintf(san, len,
                     "DNS:%s,DNS:%s.%s,DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local,"
                     "DNS:localhost,IP:127.0.0.1,IP:::1",
                     s, s, ns, s, ns, s, ns);

    return n >= 0 && (size_t)n < len;
}

static X509 *certs_make_leaf(EVP_PKEY *key, X509 *ca, EVP_PKEY *ca_key,
                             const struct certs_params *p, time_t now)
{
    char cn[2 * K8SNAME_LABEL_MAX + 8];
    char san[8 * K8SNAME_LABEL_MAX + 128];
    X509V3_CTX ctx;
    X509 *x = NULL;
    int ok = 0;

    certs_leaf_cn(p, cn, sizeof cn);
    if (!certs_leaf_sans(p, san, sizeof san))
        goto out;
    x = certs_new_cert(key, cn, p->secs, now);
    if (x == NULL || !X509_set_issuer_name(x, X509_get_subject_name(ca)))
        goto out;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
    if (!certs_add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") ||
        !certs_add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") ||
        !certs_add_ext(x, &ctx, NID_ext_key_usage, "serverAuth") ||
        !certs_add_ext(x, &ctx, NID_subject_key_identifier, "hash") ||
        !certs_add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") ||
        !certs_add_ext(x, &ctx, NID_subject_alt_name, san))
        goto out;
    ok = 1;
out:
    return certs_signed(x, ca_key, ok);
}

static int certs_mkdir_p(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    char *path = strdup(dir);
    int ret = ERR_OK;

    if (path == NULL)
        return err_set(err, errlen, ERR_NOMEM, "out of memory creating %s: free memory and retry",
                       dir);
    for (char *p = path + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            ret = err_set(err, errlen, ERR_FAIL,
                          "cannot create directory %s: %s: choose a writable --out-dir", path,
                          strerror(errno));
            goto out;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    /* EEXIST also covers a regular file of that name. */
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        ret =
            err_set(err, errlen, ERR_FAIL, "%s is not a directory: choose another --out-dir", dir);
out:
    free(path);
    return ret;
}

static char *certs_join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *s = malloc(n);

    if (s != NULL)
        snprintf(s, n, "%s/%s", dir, name);
    return s;
}

static int certs_write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return ERR_FAIL;
        }
        data += n;
        len -= (size_t)n;
    }
    return ERR_OK;
}

/* In memory first so the file is written with write(2) and can be fsync'd;
 * keys go to a secure-memory BIO, which is wiped when freed. */
static BIO *certs_pem_of(X509 *cert, EVP_PKEY *key)
{
    BIO *b = BIO_new(cert != NULL ? BIO_s_mem() : BIO_s_secmem());
    int ok =
        b != NULL && (cert != NULL ? PEM_write_bio_X509(b, cert)
                                   : PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL));

    if (!ok) {
        BIO_free(b);
        b = NULL;
    }
    return b;
}

/* Always closes fd; on failure errno says why. */
static int certs_fill_and_close(int fd, mode_t mode, const char *data, size_t len)
{
    int rc = fchmod(fd, mode) == 0 && certs_write_all(fd, data, len) == 0 && fsync(fd) == 0
                 ? ERR_OK
                 : ERR_FAIL;
    int saved = errno;

    if (close(fd) != 0 && rc == ERR_OK)
        return ERR_FAIL;
    errno = saved;
    return rc;
}

/* A temporary file in the target directory, so that rename() is atomic. */
static int certs_stage_file(const char *dir, const char *name, mode_t mode, BIO *pem,
                            struct certs_staged *s, char *err, size_t errlen)
{
    char tmpl[64];
    char *data = NULL;
    long len = BIO_get_mem_data(pem, &data);
    int fd;

    snprintf(tmpl, sizeof tmpl, ".%s.XXXXXX", name);
    s->path = certs_join_path(dir, name);
    s->tmp = certs_join_path(dir, tmpl);
    if (s->path == NULL || s->tmp == NULL || len < 0)
        return err_set(err, errlen, ERR_NOMEM, "out of memory writing %s: free memory and retry",
                       name);
    if ((fd = mkstemp(s->tmp)) < 0)
        return err_set(err, errlen, ERR_FAIL,
                       "cannot create a file in %s: %s: choose a writable --out-dir", dir,
                       strerror(errno));
    s->created = 1;
    if (certs_fill_and_close(fd, mode, data, (size_t)len) != 0)
        return err_set(err, errlen, ERR_FAIL,
                       "cannot write %s: %s: check free space and permissions of %s", s->tmp,
                       strerror(errno), dir);
    return ERR_OK;
}

static int certs_stage_all(const char *dir, X509 *ca, EVP_PKEY *ca_key, X509 *tls,
                           EVP_PKEY *tls_key, struct certs_staged *files, char *err, size_t errlen)
{
    const struct {
        const char *name;
        mode_t mode;
        X509 *cert;
        EVP_PKEY *key;
    } spec[CERTS_F_COUNT] = {
        [CERTS_F_CA_KEY] = {"ca.key", 0600, NULL, ca_key},
        [CERTS_F_CA_CRT] = {"ca.crt", 0644, ca, NULL},
        [CERTS_F_TLS_KEY] = {"tls.key", 0600, NULL, tls_key},
        [CERTS_F_TLS_CRT] = {"tls.crt", 0644, tls, NULL},
    };

    for (int i = 0; i < CERTS_F_COUNT; i++) {
        BIO *pem = certs_pem_of(spec[i].cert, spec[i].key);
        int rc;

        if (pem == NULL)
            return certs_ssl_err(err, errlen, "encode the certificates as PEM");
        rc = certs_stage_file(dir, spec[i].name, spec[i].mode, pem, &files[i], err, errlen);
        BIO_free(pem);
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

/* The renames are durable only once the directory entry is on disk too. */
static int certs_fsync_dir(const char *dir, char *err, size_t errlen)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    int ret = ERR_OK;

    /* EINVAL: file systems that cannot sync a directory; nothing more to do. */
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        ret = err_set(err, errlen, ERR_FAIL,
                      "cannot sync directory %s: %s: check the file system, then "
                      "rerun 'rdma-webhook gen-certs'",
                      dir, strerror(errno));
    if (fd >= 0)
        close(fd);
    return ret;
}

static int certs_commit_all(const char *dir, struct certs_staged *files, char *err, size_t errlen)
{
    for (int i = 0; i < CERTS_F_COUNT; i++) {
        if (rename(files[i].tmp, files[i].path) != 0)
            return err_set(err, errlen, ERR_FAIL,
                           "cannot replace %s: %s: check permissions of %s, then "
                           "rerun 'rdma-webhook gen-certs'",
                           files[i].path, strerror(errno), dir);
        files[i].created = 0;
    }
    return certs_fsync_dir(dir, err, errlen);
}

/* Without force none of the four files may exist yet: replacing the CA
 * unasked would break every webhook configuration that trusts it. Checked
 * before anything is made; a file that appears meanwhile is still replaced
 * (rename), which only a concurrent gen-certs into the same directory does. */
static int certs_refuse_existing(const char *dir, char *err, size_t errlen)
{
    static const char *const names[] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
    char found[64] = "";
    struct stat st;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char *path = certs_join_path(dir, names[i]);

        if (path == NULL)
            return err_set(err, errlen, ERR_NOMEM, "out of memory: free memory and retry");
        if (lstat(path, &st) == 0)
            snprintf(found + strlen(found), sizeof(found) - strlen(found), "%s%s",
                     found[0] ? ", " : "", names[i]);
        free(path);
    }
    if (found[0])
        return err_set(err, errlen, ERR_FAIL,
                       "%s already holds %s: pass --force to replace them (a new CA: install "
                       "its ca.crt as the caBundle again), or choose another --out-dir",
                       dir, found);
    return ERR_OK;
}

static void certs_unstage_all(struct certs_staged *files)
{
    for (int i = 0; i < CERTS_F_COUNT; i++) {
        if (files[i].created)
            unlink(files[i].tmp);
        free(files[i].tmp);
        free(files[i].path);
    }
}

int certs_generate(const struct certs_gen_opts *o, char *err, size_t errlen)
{
    struct certs_params p = {0};
    struct certs_staged files[CERTS_F_COUNT];
    EVP_PKEY *ca_key = NULL, *tls_key = NULL;
    X509 *ca = NULL, *tls = NULL;
    time_t now = time(NULL);
    int ret;

    memset(files, 0, sizeof files);
    if ((ret = certs_resolve_opts(o, &p, err, errlen)) != ERR_OK ||
        (!o->force && (ret = certs_refuse_existing(p.dir, err, errlen)) != ERR_OK) ||
        (ret = certs_make_key(&ca_key, err, errlen)) != ERR_OK ||
        (ret = certs_make_key(&tls_key, err, errlen)) != ERR_OK)
        goto out;
    if ((ca = certs_make_ca(ca_key, CERTS_CA_CN, p.secs, now)) == NULL ||
        (tls = certs_make_leaf(tls_key, ca, ca_key, &p, now)) == NULL) {
        ret = certs_ssl_err(err, errlen, "build the certificates");
        goto out;
    }
    if ((ret = certs_mkdir_p(p.dir, err, errlen)) != ERR_OK ||
        (ret = certs_stage_all(p.dir, ca, ca_key, tls, tls_key, files, err, errlen)) != ERR_OK)
        goto out;
    ret = certs_commit_all(p.dir, files, err, errlen);
out:
    certs_unstage_all(files);
    X509_free(tls);
    X509_free(ca);
    EVP_PKEY_free(tls_key);
    EVP_PKEY_free(ca_key);
    ERR_clear_error();
    return ret;
}

/* A server must never stop to prompt for a passphrase on a terminal. The
 * pem_password_cb contract: a negative length refuses to give one. */
static int certs_no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

/* Certificates and keys come from files (the CLI) or from bytes already read
 * (the server, which must check exactly what it serves): one BIO either way. */
static int certs_file_bio(const char *path, BIO **b, char *err, size_t errlen)
{
    *b = BIO_new_file(path, "r");
    if (*b == NULL)
        return err_set(err, errlen, errno == ENOMEM ? ERR_NOMEM : ERR_FAIL,
                       "cannot read %s: %s: fix the path or create it with "
                       "'rdma-webhook gen-certs'",
                       path, strerror(errno));
    return ERR_OK;
}

static int certs_mem_bio(const char *pem, size_t len, const char *name, BIO **b, char *err,
                         size_t errlen)
{
    *b = NULL;
    if (len > INT_MAX)
        return err_set(err, errlen, ERR_TOO_BIG, "%s is larger than %d bytes", name, INT_MAX);
    *b = BIO_new_mem_buf(pem, (int)len);
    if (*b == NULL)
        return err_set(err, errlen, ERR_NOMEM, "out of memory reading %s", name);
    return ERR_OK;
}

/* The end of a PEM read from b, which it frees: ERR_OK when the object was
 * found, else the OpenSSL reason in a message that says what name should
 * have held and how to mend it. */
static int certs_pem_read(BIO *b, int found, const char *name, const char *what, const char *hint,
                          char *err, size_t errlen)
{
    char reason[CERTS_REASON_LEN];
    int rc = ERR_OK;

    if (!found) {
        rc = certs_ssl_reason(reason, sizeof reason);
        err_set(err, errlen, rc, "%s holds no %s (%s): %s", name, what, reason, hint);
    }
    BIO_free(b);
    return rc;
}

/* Both take over b. */
static int certs_cert_from_bio(BIO *b, const char *name, X509 **x, char *err, size_t errlen)
{
    *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    return certs_pem_read(b, *x != NULL, name, "PEM certificate",
                          "point to a PEM file such as tls.crt, not a key or DER file", err,
                          errlen);
}

static int certs_key_from_bio(BIO *b, const char *name, EVP_PKEY **key, char *err, size_t errlen)
{
    *key = PEM_read_bio_PrivateKey(b, NULL, certs_no_passphrase, NULL);
    return certs_pem_read(b, *key != NULL, name, "usable private key",
                          "it must be an unencrypted PEM key such as tls.key", err, errlen);
}

static int certs_read_cert(const char *path, X509 **x, char *err, size_t errlen)
{
    BIO *b;
    int rc = certs_file_bio(path, &b, err, errlen);

    *x = NULL;
    return rc != ERR_OK ? rc : certs_cert_from_bio(b, path, x, err, errlen);
}

static int certs_read_key(const char *path, EVP_PKEY **key, char *err, size_t errlen)
{
    BIO *b;
    int rc = certs_file_bio(path, &b, err, errlen);

    *key = NULL;
    return rc != ERR_OK ? rc : certs_key_from_bio(b, path, key, err, errlen);
}

static void certs_time_str(const ASN1_TIME *t, char *buf, size_t len)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL;
    long n = 0;

    snprintf(buf, len, "an unreadable date");
    if (b != NULL && ASN1_TIME_print_ex(b, t, ASN1_DTFLGS_ISO8601) == 1)
        n = BIO_get_mem_data(b, &data);
    if (n > 0)
        snprintf(buf, len, "%.*s", (int)n, data);
    BIO_free(b);
}

static int certs_check_validity(const X509 *x, const char *path, char *err, size_t errlen)
{
    const ASN1_TIME *nb = X509_get0_notBefore(x), *na = X509_get0_notAfter(x);
    char when[64];

    /* X509_cmp_current_time: -1 earlier than now, 1 later, 0 unparsable. */
    if (X509_cmp_current_time(nb) != -1) {
        certs_time_str(nb, when, sizeof when);
        return err_set(err, errlen, ERR_FAIL,
                       "%s is not valid before %s: check this node's clock or reissue it", path,
                       when);
    }
    if (X509_cmp_current_time(na) != 1) {
        certs_time_str(na, when, sizeof when);
        return err_set(err, errlen, ERR_FAIL,
                       "%s expired at %s: renew it with 'rdma-webhook gen-certs' or "
                       "cert-manager",
                       path, when);
    }
    return ERR_OK;
}

/* The check both entry points share: the key belongs to the certificate,
 * which is valid now. */
static int certs_check_objects(X509 *x, EVP_PKEY *key, const char *cert_name, const char *key_name,
                               char *err, size_t errlen)
{
    if (X509_check_private_key(x, key) != 1)
        return err_set(err, errlen, ERR_FAIL, "%s does not match %s: " CERTS_REGEN_HINT, key_name,
                       cert_name);
    return certs_check_validity(x, cert_name, err, errlen);
}

int certs_check_pair(const char *cert_path, const char *key_path, char *err, size_t errlen)
{
    X509 *x = NULL;
    EVP_PKEY *key = NULL;
    int ret;

    if (cert_path == NULL || key_path == NULL) {
        ret = err_set(err, errlen, ERR_FAIL,
                      "no certificate or key file: pass --tls-cert-file and "
                      "--tls-private-key-file");
        goto out;
    }
    if ((ret = certs_read_cert(cert_path, &x, err, errlen)) != ERR_OK ||
        (ret = certs_read_key(key_path, &key, err, errlen)) != ERR_OK)
        goto out;
    ret = certs_check_objects(x, key, cert_path, key_path, err, errlen);
out:
    EVP_PKEY_free(key);
    X509_free(x);
    ERR_clear_error();
    return ret;
}

static void certs_text_init(struct certs_text *t, char *p, size_t cap)
{
    t->p = p;
    t->cap = cap;
    t->len = 0;
    t->cut = 0;
    p[0] = '\0';
}

/* Non-printables become '?' because these fields end up in log lines. */
static void certs_text_add(struct certs_text *t, const char *s, size_t n)
{
    for (size_t i = 0; i < n && !t->cut; i++) {
        unsigned char c = (unsigned char)s[i];
        if (t->len + 1 >= t->cap) {
            t->cut = 1;
            if (t->cap >= 4)
                memcpy(t->p + t->cap - 4, "...", 3);
            break;
        }
        t->p[t->len++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    t->p[t->len] = '\0';
}

static void certs_text_str(struct certs_text *t, const char *s)
{
    certs_text_add(t, s, strlen(s));
}

static void certs_text_asn1(struct certs_text *t, const ASN1_STRING *s)
{
    certs_text_add(t, (const char *)ASN1_STRING_get0_data(s), (size_t)ASN1_STRING_length(s));
}

/* Byte-wise like i2a_ASN1_INTEGER, so it equals `openssl x509 -serial`. */
static void certs_format_serial(const ASN1_INTEGER *serial, struct certs_text *t)
{
    const unsigned char *d = ASN1_STRING_get0_data(serial);
    int n = ASN1_STRING_length(serial);
    char hex[3];

    if (ASN1_STRING_type(serial) == V_ASN1_NEG_INTEGER)
        certs_text_str(t, "-");
    if (n == 0)
        certs_text_str(t, "00");
    for (int i = 0; i < n; i++) {
        snprintf(hex, sizeof hex, "%02X", d[i]);
        certs_text_str(t, hex);
    }
}

static int certs_format_subject(const X509_NAME *name, struct certs_text *t)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL;
    long len = 0;
    int ok = b != NULL && X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253) >= 0 &&
             (len = BIO_get_mem_data(b, &data)) >= 0;

    if (ok)
        certs_text_add(t, data, (size_t)len);
    BIO_free(b);
    return ok;
}

static void certs_format_ip(const ASN1_OCTET_STRING *ip, struct certs_text *t)
{
    char buf[64];
    int len = ASN1_STRING_length(ip);
    int af = len == 4 ? AF_INET : len == 16 ? AF_INET6 : -1;

    if (af != -1 && inet_ntop(af, ASN1_STRING_get0_data(ip), buf, sizeof buf) != NULL)
        certs_text_str(t, buf);
    else
        certs_text_str(t, "?");
}

static void certs_format_sans(const X509 *x, struct certs_text *t)
{
    GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);

    for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
        const GENERAL_NAME *gn = sk_GENERAL_NAME_value(names, i);
        if (i > 0)
            certs_text_str(t, ", ");
        if (gn->type == GEN_DNS) {
            certs_text_str(t, "DNS:");
            certs_text_asn1(t, gn->d.dNSName);
        } else if (gn->type == GEN_IPADD) {
            certs_text_str(t, "IP:");
            certs_format_ip(gn->d.iPAddress, t);
        } else if (gn->type == GEN_URI) {
            certs_text_str(t, "URI:");
            certs_text_asn1(t, gn->d.uniformResourceIdentifier);
        } else if (gn->type == GEN_EMAIL) {
            certs_text_str(t, "email:");
            certs_text_asn1(t, gn->d.rfc822Name);
        } else {
            certs_text_str(t, "other:?");
        }
    }
    GENERAL_NAMES_free(names);
}

/* ASN1_TIME_diff against the epoch: timegm() is not POSIX. */
static int certs_unix_time(const ASN1_TIME *t, long long *secs_out)
{
    ASN1_TIME *epoch = ASN1_TIME_set(NULL, 0);
    int days = 0, secs = 0;
    int ok = epoch != NULL && ASN1_TIME_diff(&days, &secs, epoch, t);

    if (ok)
        *secs_out = (long long)days * 86400 + secs;
    ASN1_TIME_free(epoch);
    return ok;
}

static int certs_describe(X509 *x, const char *name, struct certs_info *info, char *err,
                          size_t errlen)
{
    struct certs_text t;

    if (!certs_unix_time(X509_get0_notAfter(x), &info->not_after))
        return err_set(err, errlen, ERR_FAIL, "%s has an unreadable expiry date: " CERTS_REGEN_HINT,
                       name);
    certs_text_init(&t, info->subject, sizeof info->subject);
    if (!certs_format_subject(X509_get_subject_name(x), &t))
        return certs_ssl_err(err, errlen, "print the certificate subject");
    certs_text_init(&t, info->serial_hex, sizeof info->serial_hex);
    certs_format_serial(X509_get0_serialNumber(x), &t);
    certs_text_init(&t, info->sans, sizeof info->sans);
    certs_format_sans(x, &t);
    return ERR_OK;
}

int certs_inspect_file(const char *cert_path, struct certs_info *info, char *err, size_t errlen)
{
    X509 *x = NULL;
    int ret;

    if (info != NULL)
        memset(info, 0, sizeof *info);
    if (cert_path == NULL || info == NULL) {
        ret =
            err_set(err, errlen, ERR_FAIL, "no certificate file to inspect: pass --tls-cert-file");
        goto out;
    }
    if ((ret = certs_read_cert(cert_path, &x, err, errlen)) != ERR_OK)
        goto out;
    ret = certs_describe(x, cert_path, info, err, errlen);
out:
    if (ret != ERR_OK && info != NULL)
        memset(info, 0, sizeof *info);
    X509_free(x);
    ERR_clear_error();
    return ret;
}

int certs_check_pem(const struct certs_pem *pem, struct certs_info *info, char *err, size_t errlen)
{
    X509 *x = NULL;
    EVP_PKEY *key = NULL;
    BIO *b;
    int ret;

    memset(info, 0, sizeof *info);
    ret = certs_mem_bio(pem->cert, pem->cert_len, pem->cert_name, &b, err, errlen);
    if (ret == ERR_OK)
        ret = certs_cert_from_bio(b, pem->cert_name, &x, err, errlen);
    if (ret == ERR_OK)
        ret = certs_mem_bio(pem->key, pem->key_len, pem->key_name, &b, err, errlen);
    if (ret == ERR_OK)
        ret = certs_key_from_bio(b, pem->key_name, &key, err, errlen);
    if (ret == ERR_OK)
        ret = certs_check_objects(x, key, pem->cert_name, pem->key_name, err, errlen);
    if (ret != ERR_OK)
        goto out;
    ret = certs_describe(x, pem->cert_name, info, err, errlen);
    if (ret != ERR_OK)
        memset(info, 0, sizeof *info);
out:
    EVP_PKEY_free(key);
    X509_free(x);
    ERR_clear_error();
    return ret;
}

/* The PEM of cert or key appended to out: ERR_OK, dynbuf's code, or an
 * OpenSSL failure with a message. */
static int certs_append_pem(struct dynbuf *out, X509 *cert, EVP_PKEY *key, char *err, size_t errlen)
{
    BIO *pem = certs_pem_of(cert, key);
    char *data = NULL;
    long len;
    int rc;

    if (pem == NULL)
        return certs_ssl_err(err, errlen, "encode a certificate or key as PEM");
    len = BIO_get_mem_data(pem, &data);
    rc = len < 0 ? ERR_FAIL : dynbuf_add(out, data, (size_t)len);
    BIO_free(pem);
    if (rc != ERR_OK)
        return err_set(err, errlen, rc, "cannot hold the new certificate or key (%s)",
                       err_name(rc));
    return ERR_OK;
}

static int certs_check_secs(long long secs, char *err, size_t errlen)
{
    if (secs < 60 || secs > (long long)CERTS_MAX_DAYS * 86400)
        return err_set(err, errlen, ERR_FAIL,
                       "invalid validity of %lld seconds: use 60 seconds to %d days", secs,
                       CERTS_MAX_DAYS);
    return ERR_OK;
}

int certs_make_ca_pem(const char *cn, long long seconds, struct dynbuf *crt, struct dynbuf *key,
                      char *err, size_t errlen)
{
    EVP_PKEY *k = NULL;
    X509 *ca = NULL;
    int ret;

    if ((ret = certs_check_secs(seconds, err, errlen)) != ERR_OK ||
        (ret = certs_make_key(&k, err, errlen)) != ERR_OK)
        goto out;
    if ((ca = certs_make_ca(k, cn != NULL ? cn : CERTS_CA_CN, seconds, time(NULL))) == NULL) {
        ret = certs_ssl_err(err, errlen, "build the CA certificate");
        goto out;
    }
    if ((ret = certs_append_pem(crt, ca, NULL, err, errlen)) == ERR_OK)
        ret = certs_append_pem(key, NULL, k, err, errlen);
out:
    X509_free(ca);
    EVP_PKEY_free(k);
    ERR_clear_error();
    return ret;
}

/* The CA of certs_make_leaf_pem from memory. */
static int certs_read_ca_pem(const char *crt, size_t crt_len, const char *key, size_t key_len,
                             X509 **ca, EVP_PKEY **ca_key, char *err, size_t errlen)
{
    BIO *b;
    int rc = certs_mem_bio(crt, crt_len, "the CA certificate", &b, err, errlen);

    if (rc == ERR_OK)
        rc = certs_cert_from_bio(b, "the CA certificate", ca, err, errlen);
    if (rc == ERR_OK)
        rc = certs_mem_bio(key, key_len, "the CA key", &b, err, errlen);
    if (rc == ERR_OK)
        rc = certs_key_from_bio(b, "the CA key", ca_key, err, errlen);
    if (rc == ERR_OK && X509_check_private_key(*ca, *ca_key) != 1)
        rc = err_set(err, errlen, ERR_FAIL, "the CA key does not match the CA certificate");
    return rc;
}

int certs_make_leaf_pem(const char *ca_crt, size_t ca_crt_len, const char *ca_key,
                        size_t ca_key_len, const char *service, const char *namespace_,
                        long long seconds, struct dynbuf *crt, struct dynbuf *key, char *err,
                        size_t errlen)
{
    struct certs_params p = {.dir = "", .service = service, .ns = namespace_, .secs = seconds};
    EVP_PKEY *ck = NULL, *k = NULL;
    X509 *ca = NULL, *leaf = NULL;
    int ret;

    if (service == NULL || namespace_ == NULL || !k8sname_label(service) ||
        !k8sname_label(namespace_)) {
        ret = err_set(err, errlen, ERR_FAIL,
                      "invalid service or namespace: use DNS labels (--service, --namespace)");
        goto out;
    }
    if ((ret = certs_check_secs(seconds, err, errlen)) != ERR_OK ||
        (ret = certs_read_ca_pem(ca_crt, ca_crt_len, ca_key, ca_key_len, &ca, &ck, err, errlen)) !=
            ERR_OK ||
        (ret = certs_make_key(&k, err, errlen)) != ERR_OK)
        goto out;
    if ((leaf = certs_make_leaf(k, ca, ck, &p, time(NULL))) == NULL) {
        ret = certs_ssl_err(err, errlen, "build the serving certificate");
        goto out;
    }
    if ((ret = certs_append_pem(crt, leaf, NULL, err, errlen)) == ERR_OK)
        ret = certs_append_pem(key, NULL, k, err, errlen);
out:
    X509_free(leaf);
    X509_free(ca);
    EVP_PKEY_free(k);
    EVP_PKEY_free(ck);
    ERR_clear_error();
    return ret;
}

/* The optional comparisons of certs_pem_facts. */
static int certs_facts_relations(X509 *x, const char *issuer_pem, size_t issuer_len,
                                 const char *key_pem, size_t key_len, struct certs_facts *f,
                                 char *err, size_t errlen)
{
    X509 *issuer = NULL;
    EVP_PKEY *key = NULL, *ipub;
    BIO *b;
    int rc = ERR_OK;

    if (issuer_pem != NULL &&
        (rc = certs_mem_bio(issuer_pem, issuer_len, "the issuer", &b, err, errlen)) == ERR_OK &&
        (rc = certs_cert_from_bio(b, "the issuer", &issuer, err, errlen)) == ERR_OK) {
        ipub = X509_get0_pubkey(issuer);
        f->signed_by = ipub != NULL && X509_verify(x, ipub) == 1;
    }
    if (rc == ERR_OK && key_pem != NULL &&
        (rc = certs_mem_bio(key_pem, key_len, "the key", &b, err, errlen)) == ERR_OK &&
        (rc = certs_key_from_bio(b, "the key", &key, err, errlen)) == ERR_OK)
        f->key_ok = X509_check_private_key(x, key) == 1;
    X509_free(issuer);
    EVP_PKEY_free(key);
    return rc;
}

int certs_pem_facts(const char *pem, size_t len, const char *issuer_pem, size_t issuer_len,
                    const char *key_pem, size_t key_len, struct certs_facts *facts, char *err,
                    size_t errlen)
{
    X509 *x = NULL;
    BIO *b;
    int ret;

    memset(facts, 0, sizeof *facts);
    if ((ret = certs_mem_bio(pem, len, "the certificate", &b, err, errlen)) != ERR_OK ||
        (ret = certs_cert_from_bio(b, "the certificate", &x, err, errlen)) != ERR_OK)
        goto out;
    if (!certs_unix_time(X509_get0_notBefore(x), &facts->not_before) ||
        !certs_unix_time(X509_get0_notAfter(x), &facts->not_after)) {
        ret = err_set(err, errlen, ERR_FAIL, "the certificate has an unreadable validity");
        goto out;
    }
    ret = certs_facts_relations(x, issuer_pem, issuer_len, key_pem, key_len, facts, err, errlen);
out:
    X509_free(x);
    ERR_clear_error();
    return ret;
}
