/* mhd_responder: the bare libmicrohttpd yardstick of `make bench`.
 *
 * Same daemon settings as rdma-webhook's HTTPS listener (webhook/server/server.c):
 * one daemon with one EPOLL internal thread per CPU (at most 8), each with its
 * own listening socket on the port (SO_REUSEPORT) when more than one,
 * no TURBO (the webhook cannot use it: see server.c), the same 8 KiB
 * connection memory and the same GnuTLS priorities (SERVER_CONN_MEMORY and
 * SERVER_TLS_PRIORITIES, taken from server.h so the two cannot drift apart),
 * and the same certificate. Every POST body is read completely into memory,
 * then a fixed response (a file, e.g. the webhook's own answer to the same
 * review) is sent as application/json.
 *
 * With --parse, the body is also parsed with cJSON, in the webhook's own
 * per-request arena (webhook/base/arena.c), and a body that is not JSON gets 400:
 * the floor of any webhook on this stack that must read the review with the
 * project's JSON library, before it looks at a single field.
 *
 * Listens on 127.0.0.1:PORT.
 * Usage: mhd_responder PORT CERT KEY RESPONSE_FILE [--parse]
 */
#include "base/arena.h"
#include "server/server.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct body {
    char *mem;
    size_t len, cap;
};

static char *resp_mem;
static size_t resp_len;
static int parse_body;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;

    if (!f)
        return NULL;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            buf = realloc(buf, cap);
            if (!buf)
                exit(1);
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        if (r == 0)
            break;
        n += r;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* 1 when the body is JSON, parsed as the webhook parses a review. */
static int body_is_json(const struct body *b)
{
    struct arena a;
    cJSON *root;
    int ok;

    arena_begin(&a);
    root = cJSON_ParseWithLength(b->mem, b->len);
    ok = root != NULL;
    arena_json_delete(root);
    arena_end(&a);
    return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_size, void **req_cls)
{
    struct body *b = *req_cls;
    struct MHD_Response *r;
    enum MHD_Result rc;

    (void)cls, (void)url, (void)method, (void)version;
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b)
            return MHD_NO;
        *req_cls = b;
        return MHD_YES;
    }
    if (*upload_size) {
        if (b->len + *upload_size > b->cap) {
            size_t cap = b->cap ? b->cap : 4096;
            while (cap < b->len + *upload_size)
                cap *= 2;
            char *m = realloc(b->mem, cap);
            if (!m)
                return MHD_NO;
            b->mem = m;
            b->cap = cap;
        }
        memcpy(b->mem + b->len, upload_data, *upload_size);
        b->len += *upload_size;
        *upload_size = 0;
        return MHD_YES;
    }
    r = MHD_create_response_from_buffer(resp_len, resp_mem, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    rc = MHD_queue_response(
        conn, b->len && (!parse_body || body_is_json(b)) ? MHD_HTTP_OK : MHD_HTTP_BAD_REQUEST, r);
    MHD_destroy_response(r);
    return rc;
}

static void completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                      enum MHD_RequestTerminationCode code)
{
    struct body *b = *req_cls;

    (void)cls, (void)conn, (void)code;
    if (b) {
        free(b->mem);
        free(b);
        *req_cls = NULL;
    }
}

int main(int argc, char **argv)
{
    size_t cert_len, key_len;
    char *cert, *key;
    unsigned threads = server_default_threads();
    struct sockaddr_in addr = {.sin_family = AF_INET};
    struct MHD_Daemon *d[8];
    sigset_t set;
    int sig;

    if (argc != 5 && !(argc == 6 && strcmp(argv[5], "--parse") == 0)) {
        fprintf(stderr, "usage: %s PORT CERT KEY RESPONSE_FILE [--parse]\n", argv[0]);
        return 2;
    }
    parse_body = argc == 6;
    arena_install_cjson_hooks();
    cert = slurp(argv[2], &cert_len);
    key = slurp(argv[3], &key_len);
    resp_mem = slurp(argv[4], &resp_len);
    if (!cert || !key || !resp_mem) {
        fprintf(stderr, "mhd_responder: cannot read the certificate, key or response\n");
        return 1;
    }
    addr.sin_port = htons((unsigned short)atoi(argv[1]));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    for (unsigned i = 0; i < threads; i++) {
        d[i] = MHD_start_daemon(
            MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_USE_TLS, 0, NULL,
            NULL, handle, NULL, MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
            MHD_OPTION_HTTPS_PRIORITIES, SERVER_TLS_PRIORITIES, MHD_OPTION_CONNECTION_TIMEOUT, SERVER_DEFAULT_CONN_TIMEOUT_S,
            MHD_OPTION_CONNECTION_LIMIT, SERVER_DEFAULT_CONN_LIMIT / threads, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
            (size_t)SERVER_CONN_MEMORY, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
            MHD_OPTION_LISTENING_ADDRESS_REUSE, threads > 1 ? 1u : 0u, MHD_OPTION_SOCK_ADDR, &addr,
            MHD_OPTION_END);
        if (!d[i]) {
            fprintf(stderr, "mhd_responder: cannot start on port %s\n", argv[1]);
            return 1;
        }
    }
    sigwait(&set, &sig);
    for (unsigned i = 0; i < threads; i++)
        MHD_stop_daemon(d[i]);
    return 0;
}
