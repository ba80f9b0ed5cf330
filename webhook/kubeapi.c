#include "kubeapi.h"

#include "fsutil.h"
#include "version.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KUBEAPI_TOKEN_MAX 16384

static int kubeapi_copy(char *dst, size_t dstlen, const char *src, const char *what, char *err,
                        size_t errlen)
{
    if (!src || !*src || strlen(src) >= dstlen) {
        snprintf(err, errlen, "%s is missing or too long", what);
        return -1;
    }
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

int kubeapi_init(struct kubeapi *k, const char *url, const char *ca_file, const char *token_file,
                 char *err, size_t errlen)
{
    memset(k, 0, sizeof(*k));
    snprintf(k->user_agent, sizeof(k->user_agent), "rdma-webhook/%s", RDMA_WEBHOOK_VERSION);
    if (kubeapi_copy(k->base_url, sizeof(k->base_url), url, "--kube-api", err, errlen) ||
        kubeapi_copy(k->ca_file, sizeof(k->ca_file), ca_file, "--kube-ca", err, errlen) ||
        kubeapi_copy(k->token_file, sizeof(k->token_file), token_file, "--kube-token-file", err,
                     errlen))
        return -1;
    if (strncmp(url, "https://", 8) != 0) {
        snprintf(err, errlen, "--kube-api must be an https:// URL");
        return -1;
    }
    k->base_url[strcspn(k->base_url, "?#")] = '\0';
    if (k->base_url[strlen(k->base_url) - 1] == '/')
        k->base_url[strlen(k->base_url) - 1] = '\0';
    return 0;
}

int kubeapi_init_in_cluster(struct kubeapi *k, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    char url[300];

    if (!host || !*host || !port || !*port) {
        snprintf(err, errlen,
                 "not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); "
                 "pass --kube-api, --kube-ca and --kube-token-file");
        return -1;
    }
    snprintf(url, sizeof(url), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    return kubeapi_init(k, url, KUBEAPI_SA_DIR "/ca.crt", KUBEAPI_SA_DIR "/token", err, errlen);
}

/* The Authorization header, from the token file as it is now. */
static struct curl_slist *kubeapi_headers(const struct kubeapi *k, char *err, size_t errlen)
{
    struct dynbuf tok, hdr;
    struct curl_slist *list = NULL;

    dynbuf_init(&tok, KUBEAPI_TOKEN_MAX);
    dynbuf_init(&hdr, KUBEAPI_TOKEN_MAX + 64);
    if (fsutil_read(k->token_file, &tok, err, errlen))
        goto out;
    while (tok.len && strchr(" \t\r\n", tok.mem[tok.len - 1]))
        dynbuf_truncate(&tok, tok.len - 1);
    if (dynbuf_printf(&hdr, "Authorization: Bearer %s", dynbuf_ptr(&tok)) == 0)
        list = curl_slist_append(NULL, dynbuf_ptr(&hdr));
    if (list) {
        struct curl_slist *more = curl_slist_append(list, "Accept: application/json");

        if (!more)
            curl_slist_free_all(list);
        list = more;
    }
    if (!list)
        snprintf(err, errlen, "out of memory building the API request");
out:
    /* The token must not linger in freed memory. */
    if (tok.mem)
        explicit_bzero(tok.mem, tok.alloc);
    if (hdr.mem)
        explicit_bzero(hdr.mem, hdr.alloc);
    dynbuf_free(&tok);
    dynbuf_free(&hdr);
    return list;
}

/* An easy handle for one request to path with the client's TLS settings. */
static CURL *kubeapi_easy(const struct kubeapi *k, const char *path, long timeout_ms,
                          struct curl_slist *headers, char *err, size_t errlen)
{
    char url[1024];
    CURL *c;

    if ((size_t)snprintf(url, sizeof(url), "%s%s", k->base_url, path) >= sizeof(url)) {
        snprintf(err, errlen, "API URL too long");
        return NULL;
    }
    c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "out of memory starting an API request");
        return NULL;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_CAINFO, k->ca_file);
    curl_easy_setopt(c, CURLOPT_USERAGENT, k->user_agent);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 1L);
    /* Threads: no signals for timeouts. */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    return c;
}

static size_t kubeapi_collect(char *data, size_t size, size_t n, void *arg)
{
    struct dynbuf *body = arg;

    /* A short count makes curl fail the transfer: the body was over its cap. */
    return dynbuf_add(body, data, size * n) == 0 ? size * n : 0;
}

/* Performs c and reports the outcome in the module's convention. */
static int kubeapi_perform(CURL *c, const char *path, long *status, char *err, size_t errlen)
{
    CURLcode rc = curl_easy_perform(c);

    if (rc != CURLE_OK) {
        snprintf(err, errlen, "GET %s: %s", path, curl_easy_strerror(rc));
        return -1;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    return 0;
}

static int kubeapi_stop_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    const atomic_int *stop = arg;

    (void)a, (void)b, (void)c, (void)d;
    return atomic_load(stop) ? 1 : 0;
}

int kubeapi_get(const struct kubeapi *k, const char *path, long timeout_ms, const atomic_int *stop,
                struct dynbuf *body, long *status, char *err, size_t errlen)
{
    struct curl_slist *headers = kubeapi_headers(k, err, errlen);
    CURL *c = headers ? kubeapi_easy(k, path, timeout_ms, headers, err, errlen) : NULL;
    int rc = -1;

    if (!c)
        goto out;
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kubeapi_collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    if (stop) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, kubeapi_stop_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)stop);
    }
    rc = kubeapi_perform(c, path, status, err, errlen);
out:
    curl_easy_cleanup(c);
    curl_slist_free_all(headers);
    return rc;
}

/* State of one watch stream: the partial line carried between chunks. */
struct kubeapi_stream {
    struct dynbuf line;
    struct dynbuf *err_body;
    CURL *curl;
    int (*on_line)(void *ctx, const char *line, size_t len);
    void *ctx;
    const atomic_int *stop;
    int stopped;
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
        return kubeapi_collect(data, size, n, st->err_body);
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '\n')
            continue;
        if (dynbuf_add(&st->line, data + start, i - start) ||
            (st->line.len && st->on_line(st->ctx, dynbuf_ptr(&st->line), st->line.len))) {
            st->stopped = 1;
            return 0;
        }
        dynbuf_reset(&st->line);
        start = i + 1;
    }
    return dynbuf_add(&st->line, data + start, len - start) == 0 ? len : 0;
}

static int kubeapi_stream_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
                                   curl_off_t d)
{
    struct kubeapi_stream *st = arg;

    (void)a, (void)b, (void)c, (void)d;
    if (st->stop && atomic_load(st->stop)) {
        st->stopped = 1;
        return 1;
    }
    return 0;
}

int kubeapi_watch(const struct kubeapi *k, const char *path, long timeout_ms, size_t max_line,
                  int (*on_line)(void *ctx, const char *line, size_t len), void *ctx,
                  const atomic_int *stop, struct dynbuf *err_body, long *status, char *err,
                  size_t errlen)
{
    struct curl_slist *headers = kubeapi_headers(k, err, errlen);
    struct kubeapi_stream st = {.err_body = err_body, .on_line = on_line, .ctx = ctx, .stop = stop};
    int rc = -1;

    dynbuf_init(&st.line, max_line);
    st.curl = headers ? kubeapi_easy(k, path, timeout_ms, headers, err, errlen) : NULL;
    if (!st.curl)
        goto out;
    curl_easy_setopt(st.curl, CURLOPT_WRITEFUNCTION, kubeapi_stream_data);
    curl_easy_setopt(st.curl, CURLOPT_WRITEDATA, &st);
    curl_easy_setopt(st.curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(st.curl, CURLOPT_XFERINFOFUNCTION, kubeapi_stream_progress);
    curl_easy_setopt(st.curl, CURLOPT_XFERINFODATA, &st);
    rc = kubeapi_perform(st.curl, path, status, err, errlen);
    /* A stream cut in the middle of an event leaves a partial line: dropped,
     * the caller resumes from the last complete event. */
    if (rc && st.stopped && (!stop || !atomic_load(stop)))
        snprintf(err, errlen, "watch %s: an event was too large or stopped the stream", path);
out:
    dynbuf_free(&st.line);
    curl_easy_cleanup(st.curl);
    curl_slist_free_all(headers);
    return rc;
}
