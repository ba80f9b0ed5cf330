/*
 * Unit tests for webhook/wire/certs.c.  Results are checked twice: with the
 * OpenSSL API and with the `openssl` command line, which is what an admin
 * (and the apiserver's view of the chain) would see. `make unit` builds it.
 */
#include "unit.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "wire/certs.h"
#include "base/dynbuf.h"
#include "base/err.h"

#define DAY     (24LL * 60 * 60)
#define LABEL63 "a23456789012345678901234567890123456789012345678901234567890123"

struct fixture {
    char root[64]; /* mkdtemp dir holding everything below */
    char a[128];   /* default gen-certs output */
    char b[128];   /* a second, independent run: for crossing pairs */
};

static char *path_in(const char *dir, const char *name, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    assert_true(n > 0 && (size_t)n < len);
    return buf;
}

#define assert_close(a, b, tol)                                                                    \
    do {                                                                                           \
        long long a_ = (a), b_ = (b);                                                              \
        if (llabs(a_ - b_) > (tol))                                                                \
            fail_msg("%lld and %lld differ by more than %lld", a_, b_, (long long)(tol));          \
    } while (0)

/* Runs a shell command, returns its exit status and (first part of) stdout+stderr. */
static int run(char *out, size_t outlen, const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    FILE *p;
    size_t n;
    int st;

    va_start(ap, fmt);
    assert_true((size_t)vsnprintf(cmd, sizeof cmd, fmt, ap) < sizeof cmd);
    va_end(ap);
    assert_true(strlen(cmd) + 6 < sizeof cmd);
    strcat(cmd, " 2>&1");
    p = popen(cmd, "r");
    assert_non_null(p);
    n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int gen(const char *dir, const char *svc, const char *ns, int days, char *err, size_t len)
{
    struct certs_gen_opts o = {.out_dir = dir, .service = svc, .namespace_ = ns, .days = days};
    return certs_generate(&o, err, len);
}

static int gen_force(const char *dir, char *err, size_t len)
{
    struct certs_gen_opts o = {.out_dir = dir, .force = 1};
    return certs_generate(&o, err, len);
}

/* dir/name opened for reading; a file that is not there fails the test. */
static FILE *open_in(const char *dir, const char *name)
{
    char p[256];
    FILE *f = fopen(path_in(dir, name, p, sizeof p), "r");

    assert_non_null(f);
    return f;
}

static X509 *load_cert(const char *dir, const char *name)
{
    FILE *f = open_in(dir, name);
    X509 *x = PEM_read_X509(f, NULL, NULL, NULL);

    fclose(f);
    assert_non_null(x);
    return x;
}

static EVP_PKEY *load_key(const char *dir, const char *name)
{
    FILE *f = open_in(dir, name);
    EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);

    fclose(f);
    assert_non_null(k);
    return k;
}

static long long unix_of(const ASN1_TIME *t)
{
    ASN1_TIME *epoch = ASN1_TIME_set(NULL, 0);
    int days = 0, secs = 0;

    assert_non_null(epoch);
    assert_int_equal(ASN1_TIME_diff(&days, &secs, epoch, t), 1);
    ASN1_TIME_free(epoch);
    return (long long)days * DAY + secs;
}

/* Howard Hinnant's days_from_civil: independent of OpenSSL's date code. */
static long long days_from_civil(long long y, int m, int d)
{
    long long era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    char err[ERR_LEN];

    assert_non_null(fx);
    umask(022);
    strcpy(fx->root, "/tmp/test_certs.XXXXXX");
    assert_non_null(mkdtemp(fx->root));
    path_in(fx->root, "a", fx->a, sizeof fx->a);
    path_in(fx->root, "b", fx->b, sizeof fx->b);
    if (gen(fx->a, NULL, NULL, 0, err, sizeof err) != 0 ||
        gen(fx->b, NULL, NULL, 0, err, sizeof err) != 0)
        fail_msg("certs_generate: %s", err);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    char out[256];

    chmod(fx->root, 0700);
    assert_int_equal(run(out, sizeof out, "chmod -R u+w '%s' && rm -rf '%s'", fx->root, fx->root),
                     0);
    free(fx);
    return 0;
}

static void test_files_modes_and_no_leftovers(void **state)
{
    struct fixture *fx = *state;
    const char *names[] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
    const mode_t modes[] = {0644, 0600, 0644, 0600};
    struct stat st;
    char p[256];

    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(stat(path_in(fx->a, names[i], p, sizeof p), &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, modes[i]);
        assert_true(st.st_size > 100);
    }
    assert_int_equal(count_entries(fx->a), 4);
    assert_int_equal(stat(fx->a, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
}

static void test_mkdir_p_nested(void **state)
{
    struct fixture *fx = *state;
    char dir[256], err[ERR_LEN];
    struct stat st;

    path_in(fx->root, "x/y//z/", dir, sizeof dir);
    if (gen(dir, NULL, NULL, 0, err, sizeof err) != 0)
        fail_msg("certs_generate: %s", err);
    assert_int_equal(count_entries(dir), 4);
    path_in(fx->root, "x/y", dir, sizeof dir);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
}

static void test_chain_verifies_api(void **state)
{
    struct fixture *fx = *state;
    const char *hosts[] = {"rdma-webhook", "rdma-webhook.rdma-webhook",
                           "rdma-webhook.rdma-webhook.svc",
                           "rdma-webhook.rdma-webhook.svc.cluster.local", "localhost"};
    X509 *ca = load_cert(fx->a, "ca.crt"), *leaf = load_cert(fx->a, "tls.crt");
    X509 *other_ca = load_cert(fx->b, "ca.crt");
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();

    assert_non_null(store);
    assert_non_null(ctx);
    assert_int_equal(X509_STORE_add_cert(store, ca), 1);
    assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
    assert_int_equal(X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER), 1);
    if (X509_verify_cert(ctx) != 1)
        fail_msg("verify: %s", X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
    assert_int_equal(X509_verify(leaf, X509_get0_pubkey(other_ca)), 0);
    ERR_clear_error();

    for (size_t i = 0; i < sizeof hosts / sizeof *hosts; i++)
        assert_int_equal(X509_check_host(leaf, hosts[i], 0, X509_CHECK_FLAG_NO_WILDCARDS, NULL), 1);
    assert_int_equal(X509_check_host(leaf, "evil.rdma-webhook.svc", 0, 0, NULL), 0);
    assert_int_equal(X509_check_ip_asc(leaf, "127.0.0.1", 0), 1);
    assert_int_equal(X509_check_ip_asc(leaf, "::1", 0), 1);
    assert_int_equal(X509_check_ip_asc(leaf, "10.0.0.1", 0), 0);

    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    X509_free(other_ca);
    X509_free(leaf);
    X509_free(ca);
}

static void test_chain_verifies_cli(void **state)
{
    struct fixture *fx = *state;
    char out[1024], expect[300];

    assert_int_equal(run(out, sizeof out,
                         "openssl verify -purpose sslserver -CAfile '%s/ca.crt' '%s/tls.crt'",
                         fx->a, fx->a),
                     0);
    snprintf(expect, sizeof expect, "%s/tls.crt: OK\n", fx->a);
    assert_string_equal(out, expect);
    /* Crossed: another run's CA must not vouch for this certificate. */
    assert_int_not_equal(
        run(out, sizeof out, "openssl verify -CAfile '%s/ca.crt' '%s/tls.crt'", fx->b, fx->a), 0);
}

static void test_sans_exact_cli(void **state)
{
    struct fixture *fx = *state;
    char out[1024];

    assert_int_equal(
        run(out, sizeof out, "openssl x509 -noout -ext subjectAltName -in '%s/tls.crt'", fx->a), 0);
    assert_string_equal(
        out,
        "X509v3 Subject Alternative Name: \n"
        "    DNS:rdma-webhook, DNS:rdma-webhook.rdma-webhook, DNS:rdma-webhook.rdma-webhook.svc, "
        "DNS:rdma-webhook.rdma-webhook.svc.cluster.local, DNS:localhost, "
        "IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1\n");
    assert_int_equal(
        run(out, sizeof out, "openssl x509 -noout -ext subjectAltName -in '%s/ca.crt'", fx->a), 0);
    /* The CA names no hosts; the CLI's wording for "none" varies by version. */
    assert_null(strstr(out, "Subject Alternative Name"));
}

static void test_sans_exact_api(void **state)
{
    struct fixture *fx = *state;
    const char *dns[] = {"rdma-webhook", "rdma-webhook.rdma-webhook",
                         "rdma-webhook.rdma-webhook.svc",
                         "rdma-webhook.rdma-webhook.svc.cluster.local", "localhost"};
    const unsigned char v4[4] = {127, 0, 0, 1};
    const unsigned char v6[16] = {[15] = 1};
    X509 *leaf = load_cert(fx->a, "tls.crt");
    GENERAL_NAMES *names = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
    GENERAL_NAME *gn;

    assert_non_null(names);
    assert_int_equal(sk_GENERAL_NAME_num(names), 7);
    for (int i = 0; i < 5; i++) {
        gn = sk_GENERAL_NAME_value(names, i);
        assert_int_equal(gn->type, GEN_DNS);
        assert_int_equal(ASN1_STRING_length(gn->d.dNSName), (int)strlen(dns[i]));
        assert_memory_equal(ASN1_STRING_get0_data(gn->d.dNSName), dns[i], strlen(dns[i]));
    }
    gn = sk_GENERAL_NAME_value(names, 5);
    assert_int_equal(gn->type, GEN_IPADD);
    assert_int_equal(ASN1_STRING_length(gn->d.iPAddress), 4);
    assert_memory_equal(ASN1_STRING_get0_data(gn->d.iPAddress), v4, 4);
    gn = sk_GENERAL_NAME_value(names, 6);
    assert_int_equal(gn->type, GEN_IPADD);
    assert_int_equal(ASN1_STRING_length(gn->d.iPAddress), 16);
    assert_memory_equal(ASN1_STRING_get0_data(gn->d.iPAddress), v6, 16);
    GENERAL_NAMES_free(names);
    X509_free(leaf);
}

static void assert_p256(EVP_PKEY *k)
{
    char group[64];
    size_t len = 0;

    assert_non_null(k);
    assert_true(EVP_PKEY_is_a(k, "EC"));
    assert_int_equal(EVP_PKEY_get_bits(k), 256);
    assert_int_equal(EVP_PKEY_get_group_name(k, group, sizeof group, &len), 1);
    assert_string_equal(group, "prime256v1");
}

static void test_keys_are_ec_p256(void **state)
{
    struct fixture *fx = *state;
    const char *keys[] = {"ca.key", "tls.key"}, *certs[] = {"ca.crt", "tls.crt"};
    char out[512];

    for (int i = 0; i < 2; i++) {
        EVP_PKEY *k = load_key(fx->a, keys[i]);
        X509 *x = load_cert(fx->a, certs[i]);
        assert_p256(k);
        assert_p256(X509_get0_pubkey(x));
        assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
        EVP_PKEY_free(k);
        X509_free(x);
    }
    /* Unencrypted PKCS#8, which GnuTLS (libmicrohttpd) and Go both read. */
    assert_int_equal(run(out, sizeof out, "head -1 '%s/tls.key'", fx->a), 0);
    assert_string_equal(out, "-----BEGIN PRIVATE KEY-----\n");
}

static void assert_ext_critical(X509 *x, int nid, int critical)
{
    int idx = X509_get_ext_by_NID(x, nid, -1);

    assert_true(idx >= 0);
    assert_int_equal(X509_EXTENSION_get_critical(X509_get_ext(x, idx)), critical);
}

static void test_extensions(void **state)
{
    struct fixture *fx = *state;
    X509 *ca = load_cert(fx->a, "ca.crt"), *leaf = load_cert(fx->a, "tls.crt");
    const ASN1_OCTET_STRING *ca_skid, *leaf_akid;
    char cn[128];

    assert_int_equal(X509_check_ca(ca), 1);
    assert_ext_critical(ca, NID_basic_constraints, 1);
    assert_int_equal(X509_get_pathlen(ca), 0);
    assert_ext_critical(ca, NID_key_usage, 1);
    assert_int_equal(X509_get_key_usage(ca), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
    assert_int_equal(X509_NAME_cmp(X509_get_subject_name(ca), X509_get_issuer_name(ca)), 0);
    assert_true(
        X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_commonName, cn, sizeof cn) > 0);
    assert_string_equal(cn, "rdma-webhook-ca");
    ca_skid = X509_get0_subject_key_id(ca);
    assert_non_null(ca_skid);

    assert_int_equal(X509_check_ca(leaf), 0);
    assert_ext_critical(leaf, NID_basic_constraints, 1);
    assert_ext_critical(leaf, NID_key_usage, 1);
    assert_int_equal(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE);
    assert_ext_critical(leaf, NID_ext_key_usage, 0);
    assert_int_equal(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER);
    leaf_akid = X509_get0_authority_key_id(leaf);
    assert_non_null(leaf_akid);
    assert_int_equal(ASN1_OCTET_STRING_cmp(ca_skid, leaf_akid), 0);
    assert_int_equal(X509_NAME_cmp(X509_get_subject_name(ca), X509_get_issuer_name(leaf)), 0);
    assert_true(
        X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn, sizeof cn) > 0);
    assert_string_equal(cn, "rdma-webhook.rdma-webhook.svc");
    assert_int_equal(X509_get_version(leaf), X509_VERSION_3);
    X509_free(leaf);
    X509_free(ca);
}

static BIGNUM *serial_of(X509 *x)
{
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);

    assert_non_null(bn);
    assert_false(BN_is_negative(bn));
    assert_false(BN_is_zero(bn));
    assert_int_equal(BN_num_bits(bn), 159);
    return bn;
}

static void test_serials_and_validity(void **state)
{
    struct fixture *fx = *state;
    X509 *ca = load_cert(fx->a, "ca.crt"), *leaf = load_cert(fx->a, "tls.crt");
    X509 *leaf_b = load_cert(fx->b, "tls.crt");
    BIGNUM *s1 = serial_of(ca), *s2 = serial_of(leaf), *s3 = serial_of(leaf_b);
    long long now = (long long)time(NULL);

    assert_int_not_equal(BN_cmp(s1, s2), 0);
    assert_int_not_equal(BN_cmp(s2, s3), 0);
    /* Generated during setup, so allow a generous minute of slack. */
    assert_close(unix_of(X509_get0_notBefore(leaf)), now - 300, 60);
    assert_close(unix_of(X509_get0_notAfter(leaf)), now + 365 * DAY, 60);
    assert_close(unix_of(X509_get0_notBefore(ca)), now - 300, 60);
    assert_close(unix_of(X509_get0_notAfter(ca)), now + 365 * DAY, 60);
    BN_free(s3);
    BN_free(s2);
    BN_free(s1);
    X509_free(leaf_b);
    X509_free(leaf);
    X509_free(ca);
}

/* `openssl x509 -serial -enddate` as (serial, unix seconds). */
static long long openssl_serial_enddate(const char *cert, char *serial, size_t len)
{
    char out[512];
    int y, mo, d, h, mi, s;
    const char *p;
    size_t n;

    assert_int_equal(run(out, sizeof out,
                         "openssl x509 -noout -serial -enddate -dateopt iso_8601 -in '%s'", cert),
                     0);
    assert_non_null(p = strstr(out, "serial="));
    p += strlen("serial=");
    n = strcspn(p, "\n");
    assert_true(n > 0 && n < len);
    memcpy(serial, p, n);
    serial[n] = '\0';
    assert_non_null(p = strstr(out, "notAfter="));
    assert_int_equal(sscanf(p, "notAfter=%d-%d-%d %d:%d:%dZ", &y, &mo, &d, &h, &mi, &s), 6);
    return days_from_civil(y, mo, d) * DAY + h * 3600LL + mi * 60LL + s;
}

static void test_inspect_matches_openssl(void **state)
{
    struct fixture *fx = *state;
    struct certs_info info;
    char p[256], serial[80], err[ERR_LEN];

    memset(&info, 0x55, sizeof info);
    if (certs_inspect_file(path_in(fx->a, "tls.crt", p, sizeof p), &info, err, sizeof err) != 0)
        fail_msg("inspect: %s", err);
    assert_int_equal(info.not_after, openssl_serial_enddate(p, serial, sizeof serial));
    assert_string_equal(info.serial_hex, serial);
    assert_int_equal(strlen(info.serial_hex), 40);
    assert_string_equal(info.subject, "CN=rdma-webhook.rdma-webhook.svc");
    assert_string_equal(
        info.sans,
        "DNS:rdma-webhook, DNS:rdma-webhook.rdma-webhook, DNS:rdma-webhook.rdma-webhook.svc, "
        "DNS:rdma-webhook.rdma-webhook.svc.cluster.local, DNS:localhost, IP:127.0.0.1, IP:::1");
    assert_close(info.not_after, (long long)time(NULL) + 365 * DAY, 60);

    assert_int_equal(
        certs_inspect_file(path_in(fx->a, "ca.crt", p, sizeof p), &info, err, sizeof err), 0);
    assert_int_equal(info.not_after, openssl_serial_enddate(p, serial, sizeof serial));
    assert_string_equal(info.serial_hex, serial);
    assert_string_equal(info.subject, "CN=rdma-webhook-ca");
    assert_string_equal(info.sans, "");
}

static void test_inspect_reads_first_of_chain(void **state)
{
    struct fixture *fx = *state;
    struct certs_info info;
    char out[64], p[256], serial[80], err[ERR_LEN];

    path_in(fx->root, "chain.crt", p, sizeof p);
    assert_int_equal(run(out, sizeof out, "cat '%s/tls.crt' '%s/ca.crt' > '%s'", fx->a, fx->a, p),
                     0);
    assert_int_equal(certs_inspect_file(p, &info, err, sizeof err), 0);
    openssl_serial_enddate(p, serial, sizeof serial);
    assert_string_equal(info.serial_hex, serial);
    assert_string_equal(info.subject, "CN=rdma-webhook.rdma-webhook.svc");
}

static void test_inspect_errors(void **state)
{
    struct fixture *fx = *state;
    struct certs_info info;
    char out[64], p[256], err[ERR_LEN];

    memset(&info, 0x55, sizeof info);
    path_in(fx->root, "missing.crt", p, sizeof p);
    assert_int_equal(certs_inspect_file(p, &info, err, sizeof err), ERR_FAIL);
    assert_contains(err, p);
    assert_contains(err, "No such file or directory");
    assert_contains(err, "gen-certs");
    assert_int_equal(info.serial_hex[0], '\0');
    assert_int_equal(info.not_after, 0);

    /* A key where a certificate belongs: a typical flag mix-up. */
    assert_int_equal(
        certs_inspect_file(path_in(fx->a, "tls.key", p, sizeof p), &info, err, sizeof err),
        ERR_FAIL);
    assert_contains(err, "no PEM certificate");
    assert_int_equal(ERR_peek_error(), 0);

    path_in(fx->root, "empty.crt", p, sizeof p);
    assert_int_equal(run(out, sizeof out, ": > '%s'", p), 0);
    assert_int_equal(certs_inspect_file(p, &info, err, sizeof err), ERR_FAIL);
    assert_contains(err, "no PEM certificate");
    assert_int_equal(certs_inspect_file(p, &info, NULL, 0), ERR_FAIL);
    assert_int_equal(certs_inspect_file(p, NULL, err, sizeof err), ERR_FAIL);
    assert_int_equal(certs_inspect_file(NULL, &info, err, sizeof err), ERR_FAIL);
}

static void test_check_pair_ok(void **state)
{
    struct fixture *fx = *state;
    char c[256], k[256], err[ERR_LEN];

    if (certs_check_pair(path_in(fx->a, "tls.crt", c, sizeof c),
                         path_in(fx->a, "tls.key", k, sizeof k), err, sizeof err) != 0)
        fail_msg("check_pair: %s", err);
    assert_int_equal(certs_check_pair(path_in(fx->b, "ca.crt", c, sizeof c),
                                      path_in(fx->b, "ca.key", k, sizeof k), err, sizeof err),
                     0);
}

static void test_check_pair_mismatch(void **state)
{
    struct fixture *fx = *state;
    char c[256], k[256], err[ERR_LEN];

    path_in(fx->a, "tls.crt", c, sizeof c);
    path_in(fx->b, "tls.key", k, sizeof k);
    assert_int_equal(certs_check_pair(c, k, err, sizeof err), ERR_FAIL);
    assert_contains(err, "does not match");
    assert_contains(err, c);
    assert_contains(err, k);
    assert_contains(err, "rdma-webhook gen-certs");
    assert_null(strchr(err, '\n'));
    assert_int_equal(ERR_peek_error(), 0);
    /* Same run, wrong key: the CA key does not serve tls.crt either. */
    assert_int_equal(certs_check_pair(c, path_in(fx->a, "ca.key", k, sizeof k), err, sizeof err),
                     ERR_FAIL);
    assert_contains(err, "does not match");
}

static void test_check_pair_missing_and_bad_files(void **state)
{
    struct fixture *fx = *state;
    char c[256], k[256], missing[256], err[ERR_LEN];

    path_in(fx->a, "tls.crt", c, sizeof c);
    path_in(fx->a, "tls.key", k, sizeof k);
    path_in(fx->root, "nope/tls.crt", missing, sizeof missing);

    assert_int_equal(certs_check_pair(missing, k, err, sizeof err), ERR_FAIL);
    assert_contains(err, missing);
    assert_contains(err, "No such file or directory");
    assert_contains(err, "gen-certs");
    assert_int_equal(certs_check_pair(c, missing, err, sizeof err), ERR_FAIL);
    assert_contains(err, missing);
    assert_contains(err, "No such file or directory");

    /* Swapped flags: the certificate given as the key. */
    assert_int_equal(certs_check_pair(c, c, err, sizeof err), ERR_FAIL);
    assert_contains(err, "no usable private key");
    assert_int_equal(certs_check_pair(k, k, err, sizeof err), ERR_FAIL);
    assert_contains(err, "no PEM certificate");

    assert_int_equal(certs_check_pair(missing, k, NULL, 0), ERR_FAIL);
    assert_int_equal(certs_check_pair(NULL, k, err, sizeof err), ERR_FAIL);
    assert_contains(err, "--tls-cert-file");
    assert_int_equal(ERR_peek_error(), 0);
}

static void test_check_pair_encrypted_key_never_prompts(void **state)
{
    struct fixture *fx = *state;
    char out[512], c[256], k[256], err[ERR_LEN];

    path_in(fx->root, "enc.key", k, sizeof k);
    assert_int_equal(run(out, sizeof out,
                         "openssl pkey -in '%s/tls.key' -aes256 -passout pass:secret -out '%s'",
                         fx->a, k),
                     0);
    assert_int_equal(certs_check_pair(path_in(fx->a, "tls.crt", c, sizeof c), k, err, sizeof err),
                     ERR_FAIL);
    assert_contains(err, k);
    assert_contains(err, "unencrypted");
}

/* tls.crt re-signed by its CA with other dates: same key, so only time differs. */
static void write_redated(const char *dir, const char *out, long nb_off, long na_off)
{
    X509 *leaf = load_cert(dir, "tls.crt");
    EVP_PKEY *ca_key = load_key(dir, "ca.key");
    FILE *f;

    assert_non_null(X509_gmtime_adj(X509_getm_notBefore(leaf), nb_off));
    assert_non_null(X509_gmtime_adj(X509_getm_notAfter(leaf), na_off));
    assert_true(X509_sign(leaf, ca_key, EVP_sha256()) > 0);
    assert_non_null(f = fopen(out, "w"));
    assert_int_equal(PEM_write_X509(f, leaf), 1);
    assert_int_equal(fclose(f), 0);
    EVP_PKEY_free(ca_key);
    X509_free(leaf);
}

static void test_check_pair_time_window(void **state)
{
    struct fixture *fx = *state;
    char c[256], k[256], err[ERR_LEN];

    path_in(fx->a, "tls.key", k, sizeof k);
    path_in(fx->root, "expired.crt", c, sizeof c);
    write_redated(fx->a, c, -2 * DAY, -DAY);
    assert_int_equal(certs_check_pair(c, k, err, sizeof err), ERR_FAIL);
    assert_contains(err, "expired at");
    assert_contains(err, c);
    assert_contains(err, "Z:"); /* an ISO 8601 date in the message */

    path_in(fx->root, "future.crt", c, sizeof c);
    write_redated(fx->a, c, DAY, 2 * DAY);
    assert_int_equal(certs_check_pair(c, k, err, sizeof err), ERR_FAIL);
    assert_contains(err, "not valid before");
    assert_contains(err, "clock");
}

static void test_custom_service_namespace_days(void **state)
{
    struct fixture *fx = *state;
    struct certs_info info;
    char dir[256], p[256], out[1024], err[ERR_LEN];

    path_in(fx->root, "custom", dir, sizeof dir);
    if (gen(dir, "svc-a", "ns-b", 30, err, sizeof err) != 0)
        fail_msg("certs_generate: %s", err);
    assert_int_equal(
        run(out, sizeof out, "openssl x509 -noout -ext subjectAltName -in '%s/tls.crt'", dir), 0);
    assert_string_equal(
        out, "X509v3 Subject Alternative Name: \n"
             "    DNS:svc-a, DNS:svc-a.ns-b, DNS:svc-a.ns-b.svc, DNS:svc-a.ns-b.svc.cluster.local, "
             "DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1\n");
    assert_int_equal(
        certs_inspect_file(path_in(dir, "tls.crt", p, sizeof p), &info, err, sizeof err), 0);
    assert_string_equal(info.subject, "CN=svc-a.ns-b.svc");
    assert_close(info.not_after, (long long)time(NULL) + 30 * DAY, 10);
    assert_int_equal(
        certs_inspect_file(path_in(dir, "ca.crt", p, sizeof p), &info, err, sizeof err), 0);
    assert_close(info.not_after, (long long)time(NULL) + 30 * DAY, 10);
    assert_int_equal(
        run(out, sizeof out, "openssl verify -CAfile '%s/ca.crt' '%s/tls.crt'", dir, dir), 0);
}

static void test_long_names_fall_back_to_short_cn(void **state)
{
    struct fixture *fx = *state;
    struct certs_info info;
    char dir[256], p[256], out[1024], err[ERR_LEN];

    path_in(fx->root, "long", dir, sizeof dir);
    if (gen(dir, LABEL63, LABEL63, 0, err, sizeof err) != 0)
        fail_msg("certs_generate: %s", err);
    assert_int_equal(
        certs_inspect_file(path_in(dir, "tls.crt", p, sizeof p), &info, err, sizeof err), 0);
    assert_string_equal(info.subject, "CN=" LABEL63);
    assert_contains(info.sans, "DNS:" LABEL63 "." LABEL63 ".svc.cluster.local");
    assert_int_equal(
        run(out, sizeof out, "openssl verify -CAfile '%s/ca.crt' '%s/tls.crt'", dir, dir), 0);
}

static void test_regenerate_replaces_files(void **state)
{
    struct fixture *fx = *state;
    struct certs_info before, after;
    char dir[256], p[256], k[256], err[ERR_LEN];

    path_in(fx->root, "again", dir, sizeof dir);
    assert_int_equal(gen(dir, NULL, NULL, 0, err, sizeof err), 0);
    assert_int_equal(
        certs_inspect_file(path_in(dir, "tls.crt", p, sizeof p), &before, err, sizeof err), 0);
    assert_int_equal(gen_force(dir, err, sizeof err), 0);
    assert_int_equal(certs_inspect_file(p, &after, err, sizeof err), 0);
    assert_string_not_equal(before.serial_hex, after.serial_hex);
    assert_int_equal(count_entries(dir), 4);
    assert_int_equal(certs_check_pair(p, path_in(dir, "tls.key", k, sizeof k), err, sizeof err), 0);
}

/* Without force, one file already there is enough to write nothing. */
static void test_existing_files_need_force(void **state)
{
    struct fixture *fx = *state;
    char dir[256], p[256], out[64], err[ERR_LEN];

    path_in(fx->root, "keep", dir, sizeof dir);
    assert_int_equal(run(out, sizeof out, "mkdir -p '%s' && echo mine > '%s/ca.key'", dir, dir), 0);
    assert_int_equal(gen(dir, NULL, NULL, 0, err, sizeof err), ERR_FAIL);
    assert_contains(err, dir);
    assert_contains(err, "ca.key");
    assert_contains(err, "--force");
    assert_true(strstr(err, "tls.crt") == NULL);
    assert_int_equal(count_entries(dir), 1);
    assert_int_equal(run(out, sizeof out, "cat '%s'", path_in(dir, "ca.key", p, sizeof p)), 0);
    assert_string_equal(out, "mine\n");
    assert_int_equal(gen_force(dir, err, sizeof err), 0);
    assert_int_equal(count_entries(dir), 4);
}

static void test_unwritable_out_dir(void **state)
{
    struct fixture *fx = *state;
    char file[256], dir[256], out[64], err[ERR_LEN];

    /* A regular file where a parent directory should be. */
    path_in(fx->root, "plainfile", file, sizeof file);
    assert_int_equal(run(out, sizeof out, ": > '%s'", file), 0);
    path_in(file, "sub", dir, sizeof dir);
    assert_int_equal(gen(dir, NULL, NULL, 0, err, sizeof err), ERR_FAIL);
    assert_contains(err, "plainfile");
    assert_contains(err, "--out-dir");
    assert_int_equal(gen(file, NULL, NULL, 0, err, sizeof err), ERR_FAIL);
    assert_contains(err, "not a directory");

    /* Not writable even for root, which the CI container may be. */
    assert_int_equal(gen("/proc/rdma-webhook-certs-test", NULL, NULL, 0, err, sizeof err),
                     ERR_FAIL);
    assert_contains(err, "/proc/rdma-webhook-certs-test");
    assert_int_equal(gen("/proc", NULL, NULL, 0, err, sizeof err), ERR_FAIL);
    assert_contains(err, "cannot create a file in /proc");
    assert_contains(err, "writable --out-dir");
    assert_int_equal(gen("/proc", NULL, NULL, 0, NULL, 0), ERR_FAIL);
    assert_int_equal(ERR_peek_error(), 0);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = malloc(65536);

    assert_non_null(f);
    assert_non_null(buf);
    *len = fread(buf, 1, 65536, f);
    fclose(f);
    return buf;
}

/* certs_check_pem checks the bytes it is given: the matching pair passes with
 * the same serial inspect_file reports, a crossed pair is refused. */
static void test_check_pem_in_memory(void **state)
{
    struct fixture *fx = *state;
    char a[256], b[256], ca[256], ka[256], kb[256], err[ERR_LEN];
    struct certs_info mem, file;
    struct certs_pem pem = {.cert_name = "tls.crt", .key_name = "tls.key"};
    char *cert, *key_a, *key_b;
    size_t cert_len;

    path_in(fx->root, "pem-a", a, sizeof a);
    path_in(fx->root, "pem-b", b, sizeof b);
    assert_int_equal(gen(a, NULL, NULL, 0, err, sizeof err), 0);
    assert_int_equal(gen(b, NULL, NULL, 0, err, sizeof err), 0);
    path_in(a, "tls.crt", ca, sizeof ca);
    path_in(a, "tls.key", ka, sizeof ka);
    path_in(b, "tls.key", kb, sizeof kb);
    cert = slurp(ca, &pem.cert_len);
    key_a = slurp(ka, &pem.key_len);
    pem.cert = cert;
    pem.key = key_a;
    assert_int_equal(certs_check_pem(&pem, &mem, err, sizeof err), 0);
    assert_int_equal(certs_inspect_file(ca, &file, err, sizeof err), 0);
    assert_string_equal(mem.serial_hex, file.serial_hex);
    assert_true(mem.not_after == file.not_after);
    key_b = slurp(kb, &pem.key_len);
    pem.key = key_b;
    assert_int_equal(certs_check_pem(&pem, &mem, err, sizeof err), ERR_FAIL);
    assert_non_null(strstr(err, "does not match"));
    cert_len = pem.cert_len;
    pem.cert_len = 10;
    assert_int_equal(certs_check_pem(&pem, &mem, err, sizeof err), ERR_FAIL);
    assert_non_null(strstr(err, "no PEM certificate"));
    /* More than OpenSSL reads at once: refused for its size, nothing read. */
    pem.cert_len = (size_t)INT_MAX + 1;
    assert_int_equal(certs_check_pem(&pem, &mem, err, sizeof err), ERR_TOO_BIG);
    assert_contains(err, "tls.crt is larger than");
    pem.cert_len = cert_len;
    pem.key_len = (size_t)INT_MAX + 1;
    assert_int_equal(certs_check_pem(&pem, &mem, err, sizeof err), ERR_TOO_BIG);
    assert_contains(err, "tls.key is larger than");
    assert_int_equal(ERR_peek_error(), 0);
    free(cert);
    free(key_a);
    free(key_b);
}

static void test_invalid_options_write_nothing(void **state)
{
    struct fixture *fx = *state;
    const char *bad_labels[] = {"Upper", "a,b", "-lead", "trail-", "a.b", "", LABEL63 "4"};
    struct certs_gen_opts none = {0};
    char dir[256], err[ERR_LEN];
    struct stat st;

    path_in(fx->root, "never", dir, sizeof dir);
    assert_int_equal(certs_generate(NULL, err, sizeof err), ERR_FAIL);
    assert_contains(err, "--out-dir");
    assert_int_equal(certs_generate(&none, err, sizeof err), ERR_FAIL);
    assert_contains(err, "--out-dir");
    assert_int_equal(gen("", NULL, NULL, 0, err, sizeof err), ERR_FAIL);
    assert_int_equal(gen(dir, NULL, NULL, -1, err, sizeof err), ERR_FAIL);
    assert_contains(err, "--days -1");
    assert_int_equal(gen(dir, NULL, NULL, 36501, err, sizeof err), ERR_FAIL);
    for (size_t i = 0; i < sizeof bad_labels / sizeof *bad_labels; i++) {
        assert_int_equal(gen(dir, bad_labels[i], NULL, 0, err, sizeof err), ERR_FAIL);
        assert_contains(err, "lowercase");
        assert_int_equal(gen(dir, NULL, bad_labels[i], 0, err, sizeof err), ERR_FAIL);
        assert_contains(err, "namespace");
    }
    assert_int_equal(stat(dir, &st), -1);
}

static void test_small_error_buffer(void **state)
{
    struct fixture *fx = *state;
    char c[256], k[256], err[8];

    memset(err, 'x', sizeof err);
    assert_int_equal(certs_check_pair(path_in(fx->a, "tls.crt", c, sizeof c),
                                      path_in(fx->b, "tls.key", k, sizeof k), err, sizeof err),
                     ERR_FAIL);
    assert_int_equal(strlen(err), sizeof err - 1);
    assert_int_equal(certs_check_pair(c, k, err, 1), ERR_FAIL);
    assert_string_equal(err, "");
}

/* The in-memory PKI of serve --cert-secret: a CA and a leaf it signed, the
 * facts of each, and the bounds and bad input refused with a message. */
TEST(test_pem_pki_in_memory)
{
    struct dynbuf ca, cak, crt, key, ca2, cak2;
    struct certs_facts f;
    char err[ERR_LEN] = "";
    long long now = (long long)time(NULL);

    dynbuf_init(&ca, 1 << 16);
    dynbuf_init(&cak, 1 << 16);
    dynbuf_init(&crt, 1 << 16);
    dynbuf_init(&key, 1 << 16);
    dynbuf_init(&ca2, 1 << 16);
    dynbuf_init(&cak2, 1 << 16);
    assert_int_equal(certs_make_ca_pem("ca-one", 3600, &ca, &cak, err, sizeof(err)), ERR_OK);
    assert_int_equal(certs_make_ca_pem(NULL, 3600, &ca2, &cak2, err, sizeof(err)), ERR_OK);
    assert_int_equal(certs_make_leaf_pem(ca.mem, ca.len, cak.mem, cak.len, "svc", "ns", 600, &crt,
                                         &key, err, sizeof(err)),
                     ERR_OK);
    assert_int_equal(
        certs_pem_facts(crt.mem, crt.len, ca.mem, ca.len, key.mem, key.len, &f, err, sizeof(err)),
        ERR_OK);
    assert_true(f.signed_by && f.key_ok);
    assert_true(f.not_after - now > 590 && f.not_after - now <= 600);
    assert_true(now - f.not_before >= 5 * 60 - 2); /* backdated for skew */
    assert_int_equal(
        certs_pem_facts(crt.mem, crt.len, ca2.mem, ca2.len, cak.mem, cak.len, &f, err, sizeof(err)),
        ERR_OK);
    assert_false(f.signed_by); /* another CA */
    assert_false(f.key_ok);    /* the CA's key is not the leaf's */

    err[0] = '\0';
    assert_int_equal(certs_make_ca_pem(NULL, 59, &ca2, &cak2, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "60 seconds");
    assert_int_equal(certs_make_leaf_pem(ca.mem, ca.len, cak2.mem, cak2.len, "svc", "ns", 600, &crt,
                                         &key, err, sizeof(err)),
                     ERR_FAIL);
    assert_contains(err, "does not match");
    assert_int_equal(certs_make_leaf_pem(ca.mem, ca.len, cak.mem, cak.len, "Bad_Name", "ns", 600,
                                         &crt, &key, err, sizeof(err)),
                     ERR_FAIL);
    assert_int_equal(certs_pem_facts("junk", 4, NULL, 0, NULL, 0, &f, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "PEM certificate");
    assert_int_equal(ERR_peek_error(), 0);
    dynbuf_free(&ca);
    dynbuf_free(&cak);
    dynbuf_free(&crt);
    dynbuf_free(&key);
    dynbuf_free(&ca2);
    dynbuf_free(&cak2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_modes_and_no_leftovers),
        cmocka_unit_test(test_mkdir_p_nested),
        cmocka_unit_test(test_chain_verifies_api),
        cmocka_unit_test(test_chain_verifies_cli),
        cmocka_unit_test(test_sans_exact_cli),
        cmocka_unit_test(test_sans_exact_api),
        cmocka_unit_test(test_keys_are_ec_p256),
        cmocka_unit_test(test_extensions),
        cmocka_unit_test(test_serials_and_validity),
        cmocka_unit_test(test_inspect_matches_openssl),
        cmocka_unit_test(test_inspect_reads_first_of_chain),
        cmocka_unit_test(test_inspect_errors),
        cmocka_unit_test(test_check_pair_ok),
        cmocka_unit_test(test_check_pair_mismatch),
        cmocka_unit_test(test_check_pair_missing_and_bad_files),
        cmocka_unit_test(test_check_pair_encrypted_key_never_prompts),
        cmocka_unit_test(test_check_pair_time_window),
        cmocka_unit_test(test_custom_service_namespace_days),
        cmocka_unit_test(test_long_names_fall_back_to_short_cn),
        cmocka_unit_test(test_regenerate_replaces_files),
        cmocka_unit_test(test_existing_files_need_force),
        cmocka_unit_test(test_unwritable_out_dir),
        cmocka_unit_test(test_pem_pki_in_memory),
        cmocka_unit_test(test_check_pem_in_memory),
        cmocka_unit_test(test_invalid_options_write_nothing),
        cmocka_unit_test(test_small_error_buffer),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
