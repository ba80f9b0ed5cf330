#include "kube/kubeapi.h"

#include "host/fsutil.h"
#include "base/version.h"

#include <assert.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KUBEAPI_TOKEN_MAX 16384
#define KUBEAPI_CA_MAX    (1u << 20)

static int kubeapi_copy(char *dst, size_t dstlen, const char *src, const char *what, char *err,
                        size_t errlen)
{
    if (!src || !*src)
        return err_set(err, errlen, ERR_FAIL, "%s is missing", what);
    if (strlen(src) >= dstlen)
        return err_set(err, errlen, ERR_TOO_BIG, "%s is longer than %zu bytes", what, dstlen - 1);
    memcpy(dst, src, strlen(src) + 1);
    return ERR_OK;
}

/* In every live client and nowhere else: a stopped or stray pointer fails
 * the assert instead of corrupting memory. */
#define KUBEAPI_MAGIC 0x6b617069u /* "kapi" */

struct kubeapi {
    unsigned magic;
    char base_url[256];
    char ca_file[512];
    char token_file[512];
    char user_agent[64];
};

static int kubeapi_settings(struct kubeapi *k, const char *url, const char *ca_file,
                            const char *token_file, char *err, size_t errlen)
{
    int rc;

    snprintf(k->user_agent, sizeof(k->user_agent), "rdma-webhook/%s", RDMA_WEBHOOK_VERSION);
    if ((rc = kubeapi_copy(k->base_url, sizeof(k->base_url), url, "--kube-api", err, errlen)) ||
        (rc = kubeapi_copy(k->ca_file, sizeof(k->ca_file), ca_file, "--kube-ca", err, errlen)) ||
        (rc = kubeapi_copy(k->token_file, sizeof(k->token_file), token_file, "--kube-token-file",
                           err, errlen)))
        return rc;
    if (strncmp(url, "https://", 8) != 0)
        return err_set(err, errlen, ERR_FAIL, "--kube-api must be an https:// URL");
    k->base_url[strcspn(k->base_url, "?#")] = '\0';
    if (k->base_url[strlen(k->base_url) - 1] == '/')
        k->base_url[strlen(k->base_url) - 1] = '\0';
    return ERR_OK;
}

int kubeapi_init(struct kubeapi **out, const char *url, const char *ca_file, const char *token_file,
                 char *err, size_t errlen)
{
    struct kubeapi *k = calloc(1, sizeof(*k));
    int rc;

    *out = NULL;
    if (!k)
        return err_set(err, errlen, ERR_NOMEM, "out of memory for the API client");
    k->magic = KUBEAPI_MAGIC;
    rc = kubeapi_settings(k, url, ca_file, token_file, err, errlen);
    if (rc != ERR_OK) {
        kubeapi_stop(&k);
        return rc;
    }
    *out = k;
    return ERR_OK;
}

int kubeapi_init_in_cluster(struct kubeapi **out, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    char url[300];

    *out = NULL;
    if (!host || !*host || !port || !*port)
        return err_set(err, errlen, ERR_FAIL,
                       "not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); "
                       "pass --kube-api, --kube-ca and --kube-token-file");
    snprintf(url, sizeof(url), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    return kubeapi_init(out, url, KUBEAPI_SA_DIR "/ca.crt", KUBEAPI_SA_DIR "/token", err, errlen);
}

void kubeapi_stop(struct kubeapi **kp)
{
    struct kubeapi *k = *kp;

    if (!k)
        return;
    assert(k->magic == KUBEAPI_MAGIC);
    k->magic = 0;
    free(k);
    *kp = NULL;
}

const char *kubeapi_base_url(const struct kubeapi *k)
{
    assert(k->magic == KUBEAPI_MAGIC);
    return k->base_url;
}

/* A body's headers after the others: its type, and no "Expect:
 * 100-continue" (curl's default past 1 KiB), which costs a round trip for a
 * body the apiserver reads at once. NULL when out of memory (list stays
 * whole, for the caller to free). */
static struct curl_slist *kubeapi_body_headers(struct curl_slist *list, const char *content_type)
{
    char hdr[96];

    snprintf(hdr, sizeof(hdr), "Content-Type: %s", content_type);
    return curl_slist_append(list, hdr) && curl_slist_append(list, "Expect:") ? list : NULL;
}

/* The Authorization header, from the token file as it is now, into *out,
 * and for a request with a body its Content-Type (NULL: none). */
static int kubeapi_headers(const struct kubeapi *k, const char *content_type,
                           struct curl_slist **out, char *err, size_t errlen)
{
    struct dynbuf tok, hdr;
    struct curl_slist *list = NULL, *more = NULL;
    int rc;

    *out = NULL;
    dynbuf_init(&tok, KUBEAPI_TOKEN_MAX);
    dynbuf_init(&hdr, KUBEAPI_TOKEN_MAX + 64);
    rc = fsutil_read_regular(k->token_file, &tok, err, errlen);
    if (rc)
        goto out;
    while (tok.len && strchr(" \t\r\n", tok.mem[tok.len - 1]))
        dynbuf_truncate(&tok, tok.len - 1);
    /* hdr has room for any token tok can hold: only memory can fail. */
    if (dynbuf_printf(&hdr, "Authorization: Bearer %s", dynbuf_ptr(&tok)) != 0 ||
        !(list = curl_slist_append(NULL, dynbuf_ptr(&hdr))) ||
        !(more = curl_slist_append(list, "Accept: application/json")) ||
        (content_type && !kubeapi_body_headers(more, content_type))) {
        curl_slist_free_all(list);
        rc = err_set(err, errlen, ERR_NOMEM, "out of memory building the API request");
        goto out;
    }
    *out = more;
out:
    /* The token must not linger in freed memory. */
    if (tok.mem)
        explicit_bzero(tok.mem, tok.alloc);
    if (hdr.mem)
        explicit_bzero(hdr.mem, hdr.alloc);
    dynbuf_free(&tok);
    dynbuf_free(&hdr);
    return rc;
}

/* The CA as the file holds it now, for c. Read here rather than by curl,
 * whose TLS library opens the file with a blocking open(): a FIFO there
 * would hold the call for ever, past every timeout. */
static int kubeapi_ca(const struct kubeapi *k, CURL *c, char *err, size_t errlen)
{
    struct dynbuf ca;
    struct curl_blob blob;
    int rc;

    dynbuf_init(&ca, KUBEAPI_CA_MAX);
    rc = fsutil_read_regular(k->ca_file, &ca, err, errlen);
    if (rc == ERR_OK) {
        blob = (struct curl_blob){.data = ca.mem, .len = ca.len, .flags = CURL_BLOB_COPY};
        /* This CA only, not the system's bundle. */
        curl_easy_setopt(c, CURLOPT_CAINFO, NULL);
        curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
        if (curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob) != CURLE_OK)
            rc = err_set(err, errlen, ERR_NOMEM, "out of memory starting an API request");
    }
    dynbuf_free(&ca);
    return rc;
}

/* An easy handle for one request to path with the client's TLS settings. */
static int kubeapi_easy(const struct kubeapi *k, const char *path, long timeout_ms,
                        struct curl_slist *headers, CURL **out, char *err, size_t errlen)
{
    char url[1024];
    CURL *c;
    int rc;

    *out = NULL;
    if ((size_t)snprintf(url, sizeof(url), "%s%s", k->base_url, path) >= sizeof(url))
        /* The path is long here (the base URL is at most 255 bytes): its
         * start names it, and the limit must not be cut off. */
        return err_set(err, errlen, ERR_TOO_BIG, "the API URL is longer than %zu bytes: %.64s...",
                       sizeof(url) - 1, path);
    c = curl_easy_init();
    if (!c)
        return err_set(err, errlen, ERR_NOMEM, "out of memory starting an API request");
    if ((rc = kubeapi_ca(k, c, err, errlen)) != ERR_OK) {
        curl_easy_cleanup(c);
        return rc;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_USERAGENT, k->user_agent);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 1L);
    /* Threads: no signals for timeouts. */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    *out = c;
    return ERR_OK;
}

/* The headers and the handle of one request; *c is NULL after a failure. */
static int kubeapi_start(const struct kubeapi *k, const char *path, long timeout_ms,
                         const char *content_type, struct curl_slist **headers, CURL **c, char *err,
                         size_t errlen)
{
    int rc = kubeapi_headers(k, content_type, headers, err, errlen);

    *c = NULL;
    return rc ? rc : kubeapi_easy(k, path, timeout_ms, *headers, c, err, errlen);
}

/* A response body being kept: the first error of an add stops the transfer
 * and stays, so the outcome names it rather than curl's write error. */
struct kubeapi_sink {
    struct dynbuf *body;
    int rc;
};

static size_t kubeapi_collect(char *data, size_t size, size_t n, void *arg)
{
    struct kubeapi_sink *s = arg;

    /* A short count makes curl fail the transfer. */
    s->rc = dynbuf_add(s->body, data, size * n);
    return s->rc ? 0 : size * n;
}

/* A failed transfer in the module's convention: what the sink could not
 * keep (what is the response or the event it was reading), else curl's
 * reason. */
static int kubeapi_failed(const char *verb, const char *path, CURLcode cc, int sink_rc,
                          const char *what, size_t cap, char *err, size_t errlen)
{
    if (sink_rc == ERR_NOMEM)
        return err_set(err, errlen, ERR_NOMEM, "%s %s: out of memory reading %s", verb, path, what);
    if (sink_rc == ERR_TOO_BIG)
        return err_set(err, errlen, ERR_TOO_BIG, "%s %s: %s is larger than %zu bytes", verb, path,
                       what, cap);
    return err_set(err, errlen, ERR_FAIL, "%s %s: %s", verb, path, curl_easy_strerror(cc));
}

static int kubeapi_stop_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    const atomic_int *stop = arg;

    (void)a, (void)b, (void)c, (void)d;
    return atomic_load(stop) ? 1 : 0;
}

/* The transfer ends when *stop is set (stop may be NULL). */
static void kubeapi_stoppable(CURL *c, const atomic_int *stop)
{
    if (!stop)
        return;
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, kubeapi_stop_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)stop);
}

/* One request whose whole response goes into resp (its cap bounds it). */
static int kubeapi_request(const struct kubeapi *k, const struct kubeapi_request *req,
                           struct dynbuf *resp, long *status, char *err, size_t errlen)
{
    struct kubeapi_sink sink = {resp, ERR_OK};
    struct curl_slist *headers = NULL;
    CURL *c;
    CURLcode cc;
    int rc = kubeapi_start(k, req->path, req->timeout_ms,
                           req->body ? (req->content_type ? req->content_type : "application/json")
                                     : NULL,
                           &headers, &c, err, errlen);

    if (rc)
        goto out;
    if (req->body) {
        /* POSTFIELDS makes the request a POST; CUSTOMREQUEST only renames it. */
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len);
    }
    if (strcmp(req->method, req->body ? "POST" : "GET") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kubeapi_collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    kubeapi_stoppable(c, req->stop);
    cc = curl_easy_perform(c);
    if (cc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    else
        rc = kubeapi_failed(req->method, req->path, cc, sink.rc, "the response", resp->cap, err,
                            errlen);
out:
    curl_easy_cleanup(c);
    curl_slist_free_all(headers);
    return rc;
}

/* State of one watch stream: the partial line carried between chunks. */
struct kubeapi_stream {
    struct dynbuf line;
    struct kubeapi_sink err_body;
    CURL *curl;
    int (*on_line)(void *ctx, const char *line, size_t len);
    void *ctx;
    const atomic_int *stop;
    int line_rc; /* the line could not grow: ERR_TOO_BIG or ERR_NOMEM */
    int ended;   /* on_line asked to end the stream */
};

static int kubeapi_stream_ok(struct kubeapi_stream *st)
{
    long status = 0;

    curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &status);
    return status == 200;
}

static size_t kubeapi_stream_data(char *data, size_t size, size_t n, void *arg)
{
    struct kubeapi_stream *st = arg;
    size_t len = size * n, start = 0;

    if (!kubeapi_stream_ok(st))
        return kubeapi_collect(data, size, n, &st->err_body);
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '\n')
            continue;
        if ((st->line_rc = dynbuf_add(&st->line, data + start, i - start)))
            return 0;
        if (st->line.len && st->on_line(st->ctx, dynbuf_ptr(&st->line), st->line.len)) {
            st->ended = 1;
            return 0;
        }
        dynbuf_reset(&st->line);
        start = i + 1;
    }
    st->line_rc = dynbuf_add(&st->line, data + start, len - start);
    return st->line_rc ? 0 : len;
}

static int kubeapi_stream_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
                                   curl_off_t d)
{
    struct kubeapi_stream *st = arg;

    (void)a, (void)b, (void)c, (void)d;
    return st->stop && atomic_load(st->stop) ? 1 : 0;
}

/* A watch that did not end with the server: which of its parts gave way. */
static int kubeapi_stream_failed(struct kubeapi_stream *st, const char *path, CURLcode cc,
                                 char *err, size_t errlen)
{
    /* A stream cut in the middle of an event leaves a partial line: dropped,
     * the caller resumes from the last complete event. */
    if (st->line_rc)
        return kubeapi_failed("watch", path, cc, st->line_rc, "an event", st->line.cap, err,
                              errlen);
    if (st->err_body.rc)
        return kubeapi_failed("watch", path, cc, st->err_body.rc, "the error response",
                              st->err_body.body->cap, err, errlen);
    if (st->ended)
        return err_set(err, errlen, ERR_FAIL, "watch %s: the event handler ended the stream", path);
    return kubeapi_failed("watch", path, cc, ERR_OK, NULL, 0, err, errlen);
}

static int kubeapi_watch(const struct kubeapi *k, const struct kubeapi_request *req,
                         struct dynbuf *err_body, long *status, char *err, size_t errlen)
{
    struct kubeapi_stream st = {.err_body = {err_body, ERR_OK},
                                .on_line = req->on_line,
                                .ctx = req->line_ctx,
                                .stop = req->stop};
    struct curl_slist *headers = NULL;
    CURLcode cc;
    int rc;

    dynbuf_init(&st.line, req->max_line);
    rc = kubeapi_start(k, req->path, req->timeout_ms, NULL, &headers, &st.curl, err, errlen);
    if (rc)
        goto out;
    curl_easy_setopt(st.curl, CURLOPT_WRITEFUNCTION, kubeapi_stream_data);
    curl_easy_setopt(st.curl, CURLOPT_WRITEDATA, &st);
    curl_easy_setopt(st.curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(st.curl, CURLOPT_XFERINFOFUNCTION, kubeapi_stream_progress);
    curl_easy_setopt(st.curl, CURLOPT_XFERINFODATA, &st);
    cc = curl_easy_perform(st.curl);
    if (cc == CURLE_OK)
        curl_easy_getinfo(st.curl, CURLINFO_RESPONSE_CODE, status);
    else
        rc = kubeapi_stream_failed(&st, req->path, cc, err, errlen);
out:
    dynbuf_free(&st.line);
    curl_easy_cleanup(st.curl);
    curl_slist_free_all(headers);
    return rc;
}

int kubeapi_call(void *ctx, const struct kubeapi_request *req, struct dynbuf *resp, long *status,
                 char *err, size_t errlen)
{
    const struct kubeapi *k = ctx;

    assert(k->magic == KUBEAPI_MAGIC);
    if (!req->method || !req->path)
        return err_set(err, errlen, ERR_FAIL, "an API request without a method or a path");
    if (req->on_line)
        return kubeapi_watch(k, req, resp, status, err, errlen);
    return kubeapi_request(k, req, resp, status, err, errlen);
}
