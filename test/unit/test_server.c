/*
 * Unit tests for webhook/server/server.c's request path through the API seam: a
 * server on port 0 (read back with server_https_port) with lookups and
 * Events on a fake API call, and a real HTTPS request (libcurl, the
 * certificate's CA) to /mutate. A pod on a named node gets the profile its
 * Node's labels choose, asked of the fake API once; its warning becomes an
 * Event POSTed through the same fake. When the API refuses (403), the pod
 * is still admitted, with the warning that the Node could not be read. And
 * server_parse_listen answers ERR_* with a message naming the address.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/arena.h"
#include "wire/certs.h"
#include "base/dynbuf.h"
#include "base/err.h"
#include "kube/events.h"
#include "kube/kubeapi.h"
#include "host/log.h"
#include "kube/lookups.h"
#include "server/server.h"
#include "host/store.h"

#define NODE_PATH   "/api/v1/nodes/gpu-node-1"
#define EVENTS_PATH "/apis/events.k8s.io/v1/namespaces/default/events"
#define MAX_CALLS   32

/* The fake API, called on the server's and the Events' threads: it records
 * each call and answers a Node's and a Namespace's GET (403 when refuse is
 * set) and an Event's POST. */
static struct {
    pthread_mutex_t mu;
    int refuse;
    int n;
    char calls[MAX_CALLS][160]; /* "METHOD path" */
} fake = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int fake_call(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp,
                     long *status, char *err, size_t errlen)
{
    int refuse;

    (void)ctx, (void)err, (void)errlen;
    pthread_mutex_lock(&fake.mu);
    if (fake.n < MAX_CALLS)
        snprintf(fake.calls[fake.n++], sizeof(fake.calls[0]), "%s %s", req->method, req->path);
    refuse = fake.refuse;
    pthread_mutex_unlock(&fake.mu);
    if (strcmp(req->method, "POST") == 0) {
        *status = 201;
        return dynbuf_addstr(resp, "{}");
    }
    if (refuse) {
        *status = 403;
        return dynbuf_addstr(resp, "{\"kind\":\"Status\",\"code\":403,\"message\":\"forbidden\"}");
    }
    *status = 200;
    if (strcmp(req->path, NODE_PATH) == 0)
        return dynbuf_addstr(resp, "{\"metadata\":{\"labels\":{\"nvidia.com/gpu.count\":\"8\"}}}");
    return dynbuf_addstr(resp, "{\"metadata\":{\"labels\":{}}}");
}

/* How many recorded calls are call ("METHOD path"). */
static int calls_of(const char *call)
{
    int n = 0;

    pthread_mutex_lock(&fake.mu);
    for (int i = 0; i < fake.n; i++)
        n += strcmp(fake.calls[i], call) == 0;
    pthread_mutex_unlock(&fake.mu);
    return n;
}

/* A training pod on node gpu-node-1 with one GPU (no profile takes it by
 * count) and an octal NCCL_IB_TIMEOUT (a warning, so an Event). */
static const char review[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"namespace\":\"default\",\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\","
    "\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"default\",\"labels\":{"
    "\"training.kubeflow.org/operator-name\":\"pytorchjob-controller\"}},\"spec\":{"
    "\"nodeName\":\"gpu-node-1\",\"containers\":[{\"name\":\"pytorch\",\"image\":\"i\","
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}},"
    "\"env\":[{\"name\":\"NCCL_IB_TIMEOUT\",\"value\":\"022\"}]}]}}}}";

static char dir[] = "/tmp/test_server.XXXXXX";
static char cert[64], key[64], ca[64];
static struct log test_log;
static FILE *log_file;

struct fixture {
    struct store *store;
    struct lookups *lookups;
    struct events *events;
    struct server *srv;
};

static int group_setup(void **state __attribute__((unused)))
{
    struct certs_gen_opts o = {0};
    char err[ERR_LEN] = "";

    if (!mkdtemp(dir))
        return -1;
    o.out_dir = dir;
    if (certs_generate(&o, err, sizeof(err)) != ERR_OK) {
        fprintf(stderr, "certs_generate: %s\n", err);
        return -1;
    }
    snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
    log_file = tmpfile();
    if (!log_file)
        return -1;
    test_log = (struct log){.fd = fileno(log_file), .min = LOG_DEBUG};
    /* As serve does: a request's parse lives in its arena, freed at its end. */
    arena_install_cjson_hooks();
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int group_teardown(void **state __attribute__((unused)))
{
    static const char *const files[] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
    char path[96];

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    fclose(log_file);
    curl_global_cleanup();
    return 0;
}

/* The shipped profiles, lookups and Events on the fake, a server on
 * 127.0.0.1:0 with no plain port. */
static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    struct store_source src = store_source_file(SHIPPED_PROFILES);
    struct lookups_config lc = {
        .budget_ms = 5000, .node_ttl_s = 60, .namespace_ttl_s = 60, .call = fake_call};
    struct events_config ec = {.call = fake_call, .instance = "test"};
    struct server_config sc = {.listen = "127.0.0.1:0",
                               .metrics_listen = "",
                               .cert_file = cert,
                               .key_file = key,
                               .max_body = 1u << 20,
                               .threads = 1,
                               .conn_timeout_s = SERVER_DEFAULT_CONN_TIMEOUT_S,
                               .header_timeout_s = SERVER_DEFAULT_HEADER_TIMEOUT_S,
                               .body_timeout_s = SERVER_DEFAULT_BODY_TIMEOUT_S,
                               .body_budget = 4u << 20,
                               .conn_limit = 16,
                               .cert_reload_interval_ms = 1000,
                               .profiles_key = "profiles.json"};
    char err[ERR_LEN] = "";

    pthread_mutex_lock(&fake.mu);
    fake.n = 0;
    fake.refuse = 0;
    pthread_mutex_unlock(&fake.mu);
    *state = fx;
    if (!fx || store_init(&fx->store, &test_log, err, sizeof(err)) != ERR_OK ||
        store_reload(fx->store, &src) != ERR_OK ||
        lookups_init(&fx->lookups, &test_log, &lc, err, sizeof(err)) != ERR_OK ||
        events_init(&fx->events, &test_log, &ec, err, sizeof(err)) != ERR_OK ||
        server_init(&fx->srv, &sc, &test_log, fx->store, fx->lookups, fx->events, err,
                    sizeof(err)) != ERR_OK) {
        fprintf(stderr, "setup: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    if (!fx)
        return 0;
    server_stop(&fx->srv);
    events_stop(&fx->events, 1000, NULL);
    lookups_stop(&fx->lookups);
    store_stop(&fx->store);
    free(fx);
    return 0;
}

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
    return dynbuf_add(arg, data, size * n) == ERR_OK ? size * n : 0;
}

/* POSTs the review to https://127.0.0.1:port/mutate, trusting the test's CA
 * only; the response's "response" object, or a failed test. */
static cJSON *post_review(unsigned port, cJSON **doc)
{
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    struct dynbuf body;
    char url[64];
    long status = 0;
    CURL *c = curl_easy_init();
    CURLcode cc;

    assert_non_null(c);
    assert_non_null(headers);
    dynbuf_init(&body, 1u << 20);
    snprintf(url, sizeof(url), "https://127.0.0.1:%u/mutate", port);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, review);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L); /* a loaded machine */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(headers);
    if (cc != CURLE_OK)
        fail_msg("POST %s: %s", url, curl_easy_strerror(cc));
    assert_int_equal(status, 200);
    *doc = cJSON_ParseWithLength(dynbuf_ptr(&body), dynbuf_len(&body));
    dynbuf_free(&body);
    assert_non_null(*doc);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(*doc, "response"));
    return cJSON_GetObjectItemCaseSensitive(*doc, "response");
}

static const char *audit(const cJSON *resp, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(resp, "auditAnnotations"), name));
}

/* The first warning containing phrase, or NULL. */
static const char *warning(const cJSON *resp, const char *phrase)
{
    const cJSON *wv;

    cJSON_ArrayForEach(wv, cJSON_GetObjectItemCaseSensitive(resp, "warnings"))
    {
        if (cJSON_IsString(wv) && strstr(wv->valuestring, phrase))
            return wv->valuestring;
    }
    return NULL;
}

static unsigned start(struct fixture *fx)
{
    char err[ERR_LEN] = "";
    unsigned port;

    assert_int_equal(server_https_port(fx->srv), 0);
    if (server_start(fx->srv, err, sizeof(err)) != ERR_OK)
        fail_msg("server_start: %s", err);
    port = server_https_port(fx->srv);
    assert_true(port > 0 && port < 65536);
    return port;
}

/* The Node's labels, asked of the fake once, choose the profile; the
 * warning's Event goes out through the same fake. */
TEST(test_mutate_asks_the_api_through_the_seam)
{
    struct fixture *fx = *state;
    unsigned port = start(fx);
    cJSON *doc, *resp = post_review(port, &doc);

    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp, "allowed")));
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(resp, "uid")), "u-1");
    assert_non_null(audit(resp, "profile"));
    assert_string_equal(audit(resp, "profile"), "roce-8card");
    assert_string_equal(audit(resp, "selected-by"), "node");
    assert_non_null(warning(resp, "NCCL_IB_TIMEOUT=022"));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(resp, "patch"));
    cJSON_Delete(doc);
    assert_int_equal(calls_of("GET " NODE_PATH), 1);
    /* Stopping the server first, then the Events: what was queued is sent. */
    server_stop(&fx->srv);
    events_stop(&fx->events, 5000, NULL);
    assert_int_equal(calls_of("POST " EVENTS_PATH), 1);
}

/* A refusing API: the pod is admitted all the same, without a profile and
 * with a warning; the Node was asked. */
TEST(test_mutate_admits_when_the_api_refuses)
{
    struct fixture *fx = *state;
    unsigned port;
    cJSON *doc, *resp;

    pthread_mutex_lock(&fake.mu);
    fake.refuse = 1;
    pthread_mutex_unlock(&fake.mu);
    port = start(fx);
    resp = post_review(port, &doc);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp, "allowed")));
    assert_null(audit(resp, "profile"));
    assert_non_null(warning(resp, "check the webhook can read nodes"));
    cJSON_Delete(doc);
    assert_int_equal(calls_of("GET " NODE_PATH), 1);
    assert_contains(support_log_text(log_file), "\"status\":403");
}

TEST(test_parse_listen_answers_err_codes)
{
    struct sockaddr_storage ss;
    unsigned len = 0;
    char err[ERR_LEN] = "";

    assert_int_equal(server_parse_listen("127.0.0.1:0", &ss, &len, err, sizeof(err)), ERR_OK);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(len, sizeof(struct sockaddr_in));
    assert_int_equal(server_parse_listen("[::1]:8443", &ss, &len, err, sizeof(err)), ERR_OK);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(server_parse_listen("127.0.0.1", &ss, &len, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "\"127.0.0.1\" needs a port");
    assert_int_equal(server_parse_listen("127.0.0.1:no-such-service", &ss, &len, err, sizeof(err)),
                     ERR_FAIL);
    assert_contains(err, "cannot use listen address");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mutate_asks_the_api_through_the_seam, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutate_admits_when_the_api_refuses, setup, teardown),
        cmocka_unit_test(test_parse_listen_answers_err_codes),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
