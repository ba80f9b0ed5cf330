/*
 * Unit tests for webhook/kube/selfcert.c: the plan (when to renew, the CA's
 * three steps), the bundle's blocks, a Secret's JSON with bad input, the
 * view of a real Secret made with wire/certs.c, and whole rounds against a
 * fake API (created, used, a lost race, a forced CA rotation).
 */
#include "unit.h"

#include "base/base64.h"
#include "base/dynbuf.h"
#include "host/log.h"
#include "kube/selfcert.h"
#include "wire/certs.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOW     1000000000LL
#define OVERLAP 3600LL

/* A healthy view: a CA of 10 years and a leaf of a year, both young. */
static struct selfcert_view healthy(void)
{
    return (struct selfcert_view){.exists = 1,
                                  .signer_ok = 1,
                                  .ca_not_before = NOW - 86400,
                                  .ca_not_after = NOW + 3650 * 86400LL,
                                  .leaf_ok = 1,
                                  .leaf_usable = 1,
                                  .leaf_not_before = NOW - 86400,
                                  .leaf_not_after = NOW + 364 * 86400LL,
                                  .bundle_count = 1,
                                  .bundle_at = NOW - 86400,
                                  .configs_in_sync = 1};
}

TEST(test_due_at_a_third)
{
    assert_false(selfcert_due(0, 300, 199));
    assert_true(selfcert_due(0, 300, 201));
    assert_true(selfcert_due(10, 10, 0)); /* no life at all */
}

TEST(test_plan_keeps_a_healthy_secret)
{
    struct selfcert_view v = healthy();

    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_KEEP);
}

TEST(test_plan_creates_without_a_usable_ca)
{
    struct selfcert_view v = healthy();

    v.exists = 0;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_CREATE);
    v = healthy();
    v.signer_ok = 0;
    v.leaf_usable = 0;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_CREATE);
}

TEST(test_plan_renews_the_leaf)
{
    struct selfcert_view v = healthy();

    v.leaf_not_before = NOW - 265 * 86400LL;
    v.leaf_not_after = NOW + 100 * 86400LL; /* 100 of 365 days left: under a third */
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_RENEW_LEAF);
    v = healthy();
    v.leaf_ok = 0;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_RENEW_LEAF);
    v = healthy();
    v.rotate = 1;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_RENEW_LEAF);
}

/* The CA's rotation in its three steps, and the waits between them. */
TEST(test_plan_rotates_the_ca_in_steps)
{
    struct selfcert_view v = healthy();

    v.ca_not_before = NOW - 2650 * 86400LL;
    v.ca_not_after = NOW + 1000 * 86400LL; /* 1000 of 3650 days left: under a third */
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_ADD_CA);
    v = healthy();
    v.rotate = 2;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_ADD_CA);
    /* Added: the new CA waits in the bundle. */
    v = healthy();
    v.has_next = 1;
    v.bundle_count = 2;
    v.bundle_at = NOW - 10;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_KEEP);
    v.bundle_at = NOW - OVERLAP;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_SWITCH_CA);
    /* Never while a caller may not trust the new CA yet. */
    v.configs_in_sync = 0;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_KEEP);
    /* Switched: the old CA stays another overlap. */
    v = healthy();
    v.bundle_count = 2;
    v.bundle_at = NOW - 10;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_KEEP);
    v.bundle_at = NOW - OVERLAP;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_DROP_OLD_CA);
}

/* A leaf due while a new CA waits is renewed under the CA that signs. */
TEST(test_plan_adopts_a_pair_without_our_ca)
{
    struct selfcert_view v = healthy();

    v.signer_ok = 0;
    v.leaf_usable = 1;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_ADD_CA);
    v.has_next = 1;
    v.bundle_count = 2;
    v.bundle_at = NOW - 10;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_KEEP);
    v.bundle_at = NOW - OVERLAP;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_SWITCH_CA);
    v.leaf_usable = 0; /* nothing serves: nothing to keep trusted */
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_CREATE);
}

TEST(test_plan_renews_the_leaf_while_a_ca_waits)
{
    struct selfcert_view v = healthy();

    v.has_next = 1;
    v.bundle_count = 2;
    v.bundle_at = NOW - 10;
    v.rotate = 1;
    assert_int_equal(selfcert_plan(&v, NOW, OVERLAP), SELFCERT_RENEW_LEAF);
}

#define PEM_A "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
#define PEM_B "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n"

TEST(test_bundle_blocks)
{
    const char *two = PEM_A PEM_B;
    struct dynbuf out;

    dynbuf_init(&out, 1024);
    assert_int_equal(selfcert_bundle_count("", 0), 0);
    assert_int_equal(selfcert_bundle_count(two, strlen(two)), 2);
    assert_int_equal(selfcert_bundle_item(two, strlen(two), 1, &out), ERR_OK);
    assert_string_equal(dynbuf_ptr(&out), PEM_B);
    assert_int_equal(selfcert_bundle_item(two, strlen(two), 2, &out), ERR_FAIL);
    assert_int_equal(selfcert_bundle_count(PEM_A "-----BEGIN CERTIFICATE-----\nxx",
                                           strlen(PEM_A "-----BEGIN CERTIFICATE-----\nxx")),
                     -1);
    dynbuf_free(&out);
}

TEST(test_base64_decode)
{
    struct dynbuf out;

    dynbuf_init(&out, 64);
    assert_int_equal(base64_decode_append(&out, "aGVsbG8=", 8), ERR_OK);
    assert_string_equal(dynbuf_ptr(&out), "hello");
    dynbuf_reset(&out);
    assert_int_equal(base64_decode_append(&out, "aGk=", 4), ERR_OK);
    assert_string_equal(dynbuf_ptr(&out), "hi");
    assert_int_equal(base64_decode_append(&out, "aGk", 3), ERR_FAIL);
    assert_int_equal(base64_decode_append(&out, "a=Gk", 4), ERR_FAIL);
    assert_int_equal(base64_decode_append(&out, "aG=kaGk=", 8), ERR_FAIL);
    assert_int_equal(base64_decode_append(&out, "a$Gk", 4), ERR_FAIL);
    assert_string_equal(dynbuf_ptr(&out), "hi"); /* as it was after each failure */
    dynbuf_free(&out);
}

TEST(test_secret_parse_bad_input)
{
    const char *bad[] = {
        "",
        "[]",
        "{\"kind\":\"Secret\"}",
        "{\"metadata\":{},\"data\":{\"tls.crt\":5}}",
        "{\"metadata\":{},\"data\":{\"tls.crt\":\"not base64!\"}}",
    };
    struct selfcert_secret s;
    char err[ERR_LEN];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        selfcert_secret_init(&s);
        err[0] = '\0';
        assert_int_equal(selfcert_secret_parse(bad[i], strlen(bad[i]), &s, err, sizeof(err)),
                         ERR_FAIL);
        assert_true(err[0] != '\0');
        assert_false(s.exists);
        selfcert_secret_free(&s);
    }
}

TEST(test_secret_parse_reads_annotations)
{
    const char *j = "{\"metadata\":{\"resourceVersion\":\"42\",\"annotations\":{"
                    "\"" SELFCERT_ANN_ROTATE "\":\"ca\",\"" SELFCERT_ANN_BUNDLE_AT
                    "\":\"2001-09-09T01:46:40Z\"}},\"data\":{\"ca.crt\":\"aGk=\"}}";
    struct selfcert_secret s;
    char err[ERR_LEN];

    selfcert_secret_init(&s);
    assert_int_equal(selfcert_secret_parse(j, strlen(j), &s, err, sizeof(err)), ERR_OK);
    assert_true(s.exists);
    assert_string_equal(s.resource_version, "42");
    assert_int_equal(s.rotate, 2);
    assert_int_equal(s.bundle_at, NOW);
    assert_string_equal(dynbuf_ptr(&s.ca_crt), "hi");
    assert_int_equal(s.tls_crt.len, 0);
    selfcert_secret_free(&s);
}

static int facts(const char *pem, size_t len, const char *issuer, size_t issuer_len,
                 const char *key, size_t key_len, struct selfcert_facts *f, char *err,
                 size_t errlen)
{
    struct certs_facts cf;
    int rc = certs_pem_facts(pem, len, issuer, issuer_len, key, key_len, &cf, err, errlen);

    *f = (struct selfcert_facts){cf.not_before, cf.not_after, cf.signed_by, cf.key_ok};
    return rc;
}

static const struct selfcert_pki pki = {
    .make_ca = certs_make_ca_pem, .make_leaf = certs_make_leaf_pem, .facts = facts};

/* A real Secret: signer, leaf, and a leaf from another CA that the view
 * must refuse. */
TEST(test_view_of_real_certificates)
{
    struct selfcert_secret s;
    struct selfcert_view v;
    struct dynbuf other_crt, other_key;
    char err[ERR_LEN];
    long long now = (long long)time(NULL);

    selfcert_secret_init(&s);
    s.exists = 1;
    assert_int_equal(
        certs_make_ca_pem(NULL, 86400 * 30, &s.signer_crt, &s.ca_key, err, sizeof(err)), ERR_OK);
    assert_int_equal(dynbuf_add(&s.ca_crt, s.signer_crt.mem, s.signer_crt.len), ERR_OK);
    assert_int_equal(certs_make_leaf_pem(s.signer_crt.mem, s.signer_crt.len, s.ca_key.mem,
                                         s.ca_key.len, "svc", "ns", 86400, &s.tls_crt, &s.tls_key,
                                         err, sizeof(err)),
                     ERR_OK);
    selfcert_view_of(&pki, &s, now, &v);
    assert_true(v.signer_ok);
    assert_true(v.leaf_ok);
    assert_false(v.has_next);
    assert_int_equal(v.bundle_count, 1);
    assert_true(v.leaf_not_after - now <= 86400 && v.leaf_not_after - now > 86000);
    assert_int_equal(selfcert_plan(&v, now, OVERLAP), SELFCERT_KEEP);

    /* A leaf from another CA: not served. */
    dynbuf_init(&other_crt, SELFCERT_PEM_MAX);
    dynbuf_init(&other_key, SELFCERT_PEM_MAX);
    assert_int_equal(certs_make_ca_pem("other", 86400, &other_crt, &other_key, err, sizeof(err)),
                     ERR_OK);
    dynbuf_reset(&s.tls_crt);
    dynbuf_reset(&s.tls_key);
    assert_int_equal(certs_make_leaf_pem(other_crt.mem, other_crt.len, other_key.mem, other_key.len,
                                         "svc", "ns", 86400, &s.tls_crt, &s.tls_key, err,
                                         sizeof(err)),
                     ERR_OK);
    selfcert_view_of(&pki, &s, now, &v);
    assert_true(v.signer_ok);
    assert_false(v.leaf_ok);
    /* A signer missing from the bundle is no signer: the pair that serves
     * (trusted through the bundle) is adopted, not replaced at once. */
    dynbuf_reset(&s.ca_crt);
    dynbuf_add(&s.ca_crt, other_crt.mem, other_crt.len);
    selfcert_view_of(&pki, &s, now, &v);
    assert_false(v.signer_ok);
    assert_true(v.leaf_usable);
    assert_int_equal(selfcert_plan(&v, now, OVERLAP), SELFCERT_ADD_CA);
    dynbuf_reset(&s.tls_key); /* and without a usable pair, a new CA at once */
    selfcert_view_of(&pki, &s, now, &v);
    assert_int_equal(selfcert_plan(&v, now, OVERLAP), SELFCERT_CREATE);
    dynbuf_free(&other_crt);
    dynbuf_free(&other_key);
    selfcert_secret_free(&s);
}

/* ---- whole rounds against a fake API ---- */

struct fake {
    char *secret; /* the Secret's JSON; NULL: none */
    long rv;
    char *mwc;    /* the webhook configuration's JSON */
    char *winner; /* another replica's Secret, created just before our POST */
    int posts, puts, config_puts;
};

static char *fake_with_rv(const char *body, long rv)
{
    cJSON *doc = cJSON_Parse(body), *meta = cJSON_GetObjectItem(doc, "metadata");
    char num[32], *out;

    snprintf(num, sizeof(num), "%ld", rv);
    cJSON_DeleteItemFromObject(meta, "resourceVersion");
    cJSON_AddStringToObject(meta, "resourceVersion", num);
    out = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return out;
}

static long fake_secret_write(struct fake *f, const char *method, const char *body)
{
    cJSON *doc = cJSON_Parse(body);
    const cJSON *rv = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "metadata"), "resourceVersion");
    long status = 200;

    if (f->winner && strcmp(method, "POST") == 0) {
        /* Another replica's create lands first. */
        f->secret = fake_with_rv(f->winner, ++f->rv);
        free(f->winner);
        f->winner = NULL;
        status = 409;
    } else if (strcmp(method, "POST") == 0) {
        status = f->secret ? 409 : 201;
        f->posts++;
    } else {
        status = f->secret && cJSON_IsString(rv) && atol(rv->valuestring) == f->rv ? 200 : 409;
        f->puts++;
    }
    if (status != 409) {
        free(f->secret);
        f->secret = fake_with_rv(body, ++f->rv);
    }
    cJSON_Delete(doc);
    return status;
}

static int fake_call(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp,
                     long *status, char *err, size_t errlen)
{
    struct fake *f = ctx;
    int secret = strstr(req->path, "/secrets") != NULL;

    (void)err;
    (void)errlen;
    if (strcmp(req->method, "GET") == 0) {
        const char *body = secret ? f->secret : strstr(req->path, "mutating") ? f->mwc : NULL;
        *status = body ? 200 : 404;
        return body ? dynbuf_addstr(resp, body) : ERR_OK;
    }
    if (secret) {
        *status = fake_secret_write(f, req->method, req->body);
        return ERR_OK;
    }
    free(f->mwc);
    f->mwc = strndup(req->body, req->len);
    f->config_puts++;
    *status = 200;
    return ERR_OK;
}

struct fixture {
    struct fake api;
    struct log lg;
    FILE *logf;
    char dir[64], crt[96], key[96];
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));

    if (!fx)
        return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/selfcert-XXXXXX");
    if (!mkdtemp(fx->dir))
        return -1;
    snprintf(fx->crt, sizeof(fx->crt), "%s/tls.crt", fx->dir);
    snprintf(fx->key, sizeof(fx->key), "%s/tls.key", fx->dir);
    fx->logf = tmpfile();
    fx->lg = (struct log){.fd = fileno(fx->logf), .min = LOG_DEBUG};
    fx->api.mwc = strdup("{\"metadata\":{\"name\":\"m\",\"resourceVersion\":\"1\"},"
                         "\"webhooks\":[{\"name\":\"a\",\"clientConfig\":{}},"
                         "{\"name\":\"b\",\"clientConfig\":{\"caBundle\":\"old\"}}]}");
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    unlink(fx->crt);
    unlink(fx->key);
    rmdir(fx->dir);
    fclose(fx->logf);
    free(fx->api.secret);
    free(fx->api.mwc);
    free(fx->api.winner);
    free(fx);
    return 0;
}

static struct selfcert_config config(struct fixture *fx)
{
    return (struct selfcert_config){.call = fake_call,
                                    .call_ctx = &fx->api,
                                    .ns = "ns",
                                    .name = "tls",
                                    .mutating = "m",
                                    .validating = "",
                                    .service = "svc",
                                    .service_ns = "ns",
                                    .cert_file = fx->crt,
                                    .key_file = fx->key,
                                    .sync_s = 3600,
                                    .overlap_s = 1,
                                    .start_ms = 1000,
                                    .pki = pki};
}

/* The fake's Secret, parsed. */
static void stored(struct fixture *fx, struct selfcert_secret *s)
{
    char err[ERR_LEN];

    selfcert_secret_init(s);
    assert_non_null(fx->api.secret);
    assert_int_equal(
        selfcert_secret_parse(fx->api.secret, strlen(fx->api.secret), s, err, sizeof(err)), ERR_OK);
}

/* Every webhook's caBundle is ca.crt's base64. */
static void assert_bundles(struct fixture *fx, const struct selfcert_secret *s)
{
    struct dynbuf b64;
    cJSON *doc = cJSON_Parse(fx->api.mwc), *hook;

    dynbuf_init(&b64, 1 << 20);
    base64_append(&b64, s->ca_crt.mem, s->ca_crt.len);
    cJSON_ArrayForEach(hook, cJSON_GetObjectItem(doc, "webhooks"))
    {
        const cJSON *ca =
            cJSON_GetObjectItem(cJSON_GetObjectItem(hook, "clientConfig"), "caBundle");
        assert_true(cJSON_IsString(ca));
        assert_string_equal(ca->valuestring, dynbuf_ptr(&b64));
    }
    cJSON_Delete(doc);
    dynbuf_free(&b64);
}

static void assert_file_is(const char *path, const struct dynbuf *want)
{
    char buf[8192];
    FILE *f = fopen(path, "r");
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_int_equal(n, want->len);
    assert_memory_equal(buf, want->mem, n);
}

static void one_round(struct fixture *fx)
{
    struct selfcert_config c = config(fx);
    struct selfcert *sc = NULL;
    char err[ERR_LEN] = "";

    assert_int_equal(selfcert_init(&sc, &fx->lg, &c, err, sizeof(err)), ERR_OK);
    selfcert_stop(&sc);
}

TEST(test_no_secret_creates_one_and_serves_it)
{
    struct fixture *fx = *state;
    struct selfcert_config c = config(fx);
    struct selfcert *sc = NULL;
    struct selfcert_secret s;
    struct selfcert_view v;
    char err[ERR_LEN] = "";

    assert_int_equal(selfcert_init(&sc, &fx->lg, &c, err, sizeof(err)), ERR_OK);
    selfcert_stop(&sc);
    assert_int_equal(fx->api.posts, 1);
    stored(fx, &s);
    selfcert_view_of(&pki, &s, (long long)time(NULL), &v);
    assert_true(v.signer_ok && v.leaf_ok);
    assert_bundles(fx, &s);
    assert_file_is(fx->crt, &s.tls_crt);
    assert_file_is(fx->key, &s.tls_key);
    selfcert_secret_free(&s);

    /* A second start uses it: no write at all. */
    assert_int_equal(selfcert_init(&sc, &fx->lg, &c, err, sizeof(err)), ERR_OK);
    selfcert_stop(&sc);
    assert_int_equal(fx->api.posts, 1);
    assert_int_equal(fx->api.puts, 0);
}

/* Another replica creates the Secret first: its pair is the one served. */
TEST(test_lost_create_uses_the_winner)
{
    struct fixture *fx = *state;
    struct selfcert_config c = config(fx);
    struct selfcert *sc = NULL;
    struct selfcert_secret s;
    char err[ERR_LEN] = "";

    /* The winner's Secret, made by a replica against its own API. */
    one_round(fx);
    fx->api.winner = fx->api.secret;
    fx->api.secret = NULL;
    fx->api.posts = 0;
    unlink(fx->crt);
    unlink(fx->key);
    assert_int_equal(selfcert_init(&sc, &fx->lg, &c, err, sizeof(err)), ERR_OK);
    selfcert_stop(&sc);
    assert_int_equal(fx->api.posts, 0); /* the one POST lost; the re-read found the winner's */
    assert_int_equal(fx->api.puts, 0);
    assert_null(fx->api.winner);
    stored(fx, &s);
    assert_file_is(fx->crt, &s.tls_crt);
    selfcert_secret_free(&s);
}

static void annotate_rotate(struct fixture *fx, const char *what)
{
    cJSON *doc = cJSON_Parse(fx->api.secret);
    cJSON *ann = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "metadata"), "annotations");

    cJSON_AddStringToObject(ann, SELFCERT_ANN_ROTATE, what);
    free(fx->api.secret);
    fx->api.secret = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
}

/* rotate=ca: the new CA joins the bundle and the old one still signs; after
 * the overlap the new one signs, the old one stays; then it goes. */
TEST(test_forced_ca_rotation_keeps_the_old_ca_meanwhile)
{
    struct fixture *fx = *state;
    struct selfcert_secret s0, s;
    struct timespec pause = {1, 100 * 1000000L};

    one_round(fx);
    stored(fx, &s0);
    annotate_rotate(fx, "ca");
    one_round(fx);
    stored(fx, &s);
    assert_int_equal(selfcert_bundle_count(s.ca_crt.mem, s.ca_crt.len), 2);
    assert_memory_equal(s.tls_crt.mem, s0.tls_crt.mem, s0.tls_crt.len); /* not switched yet */
    assert_true(s.next_key.len > 0);
    assert_null(strstr(fx->api.secret, SELFCERT_ANN_ROTATE));
    assert_bundles(fx, &s);
    selfcert_secret_free(&s);

    nanosleep(&pause, NULL); /* the overlap, 1 s */
    one_round(fx);
    stored(fx, &s);
    assert_int_equal(selfcert_bundle_count(s.ca_crt.mem, s.ca_crt.len), 2);
    assert_int_equal(s.next_key.len, 0);
    assert_false(s.tls_crt.len == s0.tls_crt.len &&
                 memcmp(s.tls_crt.mem, s0.tls_crt.mem, s.tls_crt.len) == 0);
    assert_false(s.signer_crt.len == s0.signer_crt.len &&
                 memcmp(s.signer_crt.mem, s0.signer_crt.mem, s.signer_crt.len) == 0);
    assert_file_is(fx->crt, &s.tls_crt);
    selfcert_secret_free(&s);

    nanosleep(&pause, NULL);
    one_round(fx);
    stored(fx, &s);
    assert_int_equal(selfcert_bundle_count(s.ca_crt.mem, s.ca_crt.len), 1);
    assert_memory_equal(s.ca_crt.mem, s.signer_crt.mem, s.signer_crt.len);
    assert_bundles(fx, &s);
    selfcert_secret_free(&s);
    selfcert_secret_free(&s0);
}

static void add_b64(struct dynbuf *j, const char *key, const struct dynbuf *v, int comma)
{
    dynbuf_printf(j, "%s\"%s\":\"", comma ? "," : "", key);
    base64_append(j, v->mem, v->len);
    dynbuf_addc(j, '"');
}

/* A Secret as gen-certs' install script makes it (a pair and ca.crt, no CA
 * key): adopted through the CA rotation's steps, the old pair serving until
 * the new CA is in the bundle. */
TEST(test_adopts_a_secret_made_elsewhere)
{
    struct fixture *fx = *state;
    struct dynbuf ca, cak, crt, key, j;
    struct selfcert_secret s;
    struct timespec pause = {1, 100 * 1000000L};
    char err[ERR_LEN];

    dynbuf_init(&ca, SELFCERT_PEM_MAX);
    dynbuf_init(&cak, SELFCERT_PEM_MAX);
    dynbuf_init(&crt, SELFCERT_PEM_MAX);
    dynbuf_init(&key, SELFCERT_PEM_MAX);
    dynbuf_init(&j, 1 << 20);
    assert_int_equal(certs_make_ca_pem(NULL, 86400 * 30, &ca, &cak, err, sizeof(err)), ERR_OK);
    assert_int_equal(certs_make_leaf_pem(ca.mem, ca.len, cak.mem, cak.len, "svc", "ns", 86400, &crt,
                                         &key, err, sizeof(err)),
                     ERR_OK);
    dynbuf_addstr(&j, "{\"metadata\":{\"name\":\"tls\",\"resourceVersion\":\"7\"},"
                      "\"type\":\"kubernetes.io/tls\",\"data\":{");
    add_b64(&j, "tls.crt", &crt, 0);
    add_b64(&j, "tls.key", &key, 1);
    add_b64(&j, "ca.crt", &ca, 1);
    dynbuf_addstr(&j, "}}");
    fx->api.secret = dynbuf_steal(&j);
    fx->api.rv = 7;

    one_round(fx);
    stored(fx, &s);
    assert_int_equal(fx->api.posts, 0);
    assert_int_equal(selfcert_bundle_count(s.ca_crt.mem, s.ca_crt.len), 2);
    assert_memory_equal(s.ca_crt.mem, ca.mem, ca.len); /* the old CA first, still there */
    assert_memory_equal(s.tls_crt.mem, crt.mem, crt.len);
    assert_file_is(fx->crt, &crt);
    assert_bundles(fx, &s);
    selfcert_secret_free(&s);

    nanosleep(&pause, NULL);
    one_round(fx);
    stored(fx, &s);
    assert_true(s.ca_key.len > 0 && s.next_key.len == 0);
    assert_false(s.tls_crt.len == crt.len && memcmp(s.tls_crt.mem, crt.mem, crt.len) == 0);
    assert_int_equal(selfcert_bundle_count(s.ca_crt.mem, s.ca_crt.len), 2);
    selfcert_secret_free(&s);

    nanosleep(&pause, NULL);
    one_round(fx);
    stored(fx, &s);
    assert_int_equal(selfcert_bundle_count(s.ca_crt.mem, s.ca_crt.len), 1);
    assert_false(memcmp(s.ca_crt.mem, ca.mem, ca.len) == 0);
    assert_bundles(fx, &s);
    selfcert_secret_free(&s);
    dynbuf_free(&ca);
    dynbuf_free(&cak);
    dynbuf_free(&crt);
    dynbuf_free(&key);
}

int main(void)
{
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_due_at_a_third),
        cmocka_unit_test(test_plan_keeps_a_healthy_secret),
        cmocka_unit_test(test_plan_creates_without_a_usable_ca),
        cmocka_unit_test(test_plan_renews_the_leaf),
        cmocka_unit_test(test_plan_rotates_the_ca_in_steps),
        cmocka_unit_test(test_plan_adopts_a_pair_without_our_ca),
        cmocka_unit_test(test_plan_renews_the_leaf_while_a_ca_waits),
        cmocka_unit_test(test_bundle_blocks),
        cmocka_unit_test(test_base64_decode),
        cmocka_unit_test(test_secret_parse_bad_input),
        cmocka_unit_test(test_secret_parse_reads_annotations),
        cmocka_unit_test(test_view_of_real_certificates),
        T_(test_no_secret_creates_one_and_serves_it),
        T_(test_lost_create_uses_the_winner),
        T_(test_forced_ca_rotation_keeps_the_old_ca_meanwhile),
        T_(test_adopts_a_secret_made_elsewhere),
    };
#undef T_

    return cmocka_run_group_tests(tests, NULL, NULL);
}
