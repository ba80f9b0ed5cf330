#include "cmd.h"

#include "filewatch.h"
#include "fsutil.h"
#include "server.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct serve_opts {
    struct server_config cfg;
    const char *profiles;
    const char *profiles_configmap;
    const char *log_level;
    unsigned reload_interval_ms;
    unsigned grace_s;
};

static void serve_usage(FILE *f)
{
    fprintf(f,
            "Usage: rdma-webhook serve [flags]\n"
            "\n"
            "Serves the mutating admission webhook over HTTPS.\n"
            "\n"
            "Flags:\n"
            "  --listen ADDR:PORT            HTTPS address for /mutate, /healthz, /readyz "
            "(default :8443)\n"
            "  --metrics-listen ADDR:PORT    plain-HTTP address for /metrics, /healthz, /readyz;\n"
            "                                \"\" turns it off (default :9090)\n"
            "  --tls-cert-file FILE          serving certificate, PEM (default %s)\n"
            "  --tls-private-key-file FILE   its private key, PEM (default %s)\n"
            "  --profiles FILE               profiles JSON, reloaded when it changes (default %s)\n"
            "  --profiles-configmap NS/NAME  read profiles from a ConfigMap through the API\n"
            "                                (not available in this build; use --profiles)\n"
            "  --max-body-bytes N            largest AdmissionReview accepted (default 8388608)\n"
            "  --threads N                   TLS worker threads (default: CPUs, at most 8)\n"
            "  --connection-timeout SECONDS  idle connections are closed after this (default 30)\n"
            "  --max-connections N           concurrent connections (default 4096)\n"
            "  --shutdown-grace SECONDS      on SIGTERM, wait this long for requests in flight "
            "(default 10)\n"
            "  --reload-interval-ms N        also re-check the profiles and certificate files\n"
            "                                this often, for file systems without inotify\n"
            "                                (default 1000)\n"
            "  --log-level LEVEL             debug, info, warn or error (default info); debug\n"
            "                                adds libmicrohttpd's per-connection messages\n"
            "  -h, --help                    show this help\n"
            "\n"
            "The certificate and key files are watched too and swapped without a restart.\n"
            "Signals: SIGTERM/SIGINT drain and exit 0; SIGHUP reloads profiles and certificate.\n",
            RDMA_WEBHOOK_DEFAULT_CERT, RDMA_WEBHOOK_DEFAULT_KEY, RDMA_WEBHOOK_DEFAULT_PROFILES);
}

static unsigned serve_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1u : n > 8 ? 8u : (unsigned)n;
}

enum serve_flag {
    FLAG_LISTEN = 256,
    FLAG_METRICS_LISTEN,
    FLAG_CERT,
    FLAG_KEY,
    FLAG_PROFILES,
    FLAG_PROFILES_CM,
    FLAG_MAX_BODY,
    FLAG_THREADS,
    FLAG_CONN_TIMEOUT,
    FLAG_MAX_CONN,
    FLAG_GRACE,
    FLAG_RELOAD,
    FLAG_LOG_LEVEL,
};

static const struct option serve_options[] = {
    {"listen", required_argument, NULL, FLAG_LISTEN},
    {"metrics-listen", required_argument, NULL, FLAG_METRICS_LISTEN},
    {"tls-cert-file", required_argument, NULL, FLAG_CERT},
    {"tls-private-key-file", required_argument, NULL, FLAG_KEY},
    {"profiles", required_argument, NULL, FLAG_PROFILES},
    {"profiles-configmap", required_argument, NULL, FLAG_PROFILES_CM},
    {"max-body-bytes", required_argument, NULL, FLAG_MAX_BODY},
    {"threads", required_argument, NULL, FLAG_THREADS},
    {"connection-timeout", required_argument, NULL, FLAG_CONN_TIMEOUT},
    {"max-connections", required_argument, NULL, FLAG_MAX_CONN},
    {"shutdown-grace", required_argument, NULL, FLAG_GRACE},
    {"reload-interval-ms", required_argument, NULL, FLAG_RELOAD},
    {"log-level", required_argument, NULL, FLAG_LOG_LEVEL},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Numeric flags: the option, its range, and where the value goes. */
static int serve_numeric(struct serve_opts *o, int flag)
{
    unsigned long long v;
    const struct option *opt = serve_options;
    int rc;

    while (opt->val != flag)
        opt++;
    switch (flag) {
    case FLAG_MAX_BODY:
        rc = cmd_parse_uint(opt->name, optarg, 1024, 1ull << 30, &v);
        o->cfg.max_body = (size_t)v;
        return rc;
    case FLAG_THREADS:
        rc = cmd_parse_uint(opt->name, optarg, 1, 64, &v);
        o->cfg.threads = (unsigned)v;
        return rc;
    case FLAG_CONN_TIMEOUT:
        rc = cmd_parse_uint(opt->name, optarg, 1, 3600, &v);
        o->cfg.conn_timeout_s = (unsigned)v;
        return rc;
    case FLAG_MAX_CONN:
        rc = cmd_parse_uint(opt->name, optarg, 1, 1000000, &v);
        o->cfg.conn_limit = (unsigned)v;
        return rc;
    case FLAG_GRACE:
        rc = cmd_parse_uint(opt->name, optarg, 0, 3600, &v);
        o->grace_s = (unsigned)v;
        return rc;
    default:
        rc = cmd_parse_uint(opt->name, optarg, 50, 3600000, &v);
        o->reload_interval_ms = (unsigned)v;
        return rc;
    }
}

static int serve_parse(int argc, char **argv, struct serve_opts *o)
{
    int c;

    while ((c = getopt_long(argc, argv, "h", serve_options, NULL)) != -1) {
        switch (c) {
        case FLAG_LISTEN: o->cfg.listen = optarg; break;
        case FLAG_METRICS_LISTEN: o->cfg.metrics_listen = optarg; break;
        case FLAG_CERT: o->cfg.cert_file = optarg; break;
        case FLAG_KEY: o->cfg.key_file = optarg; break;
        case FLAG_PROFILES: o->profiles = optarg; break;
        case FLAG_PROFILES_CM: o->profiles_configmap = optarg; break;
        case FLAG_LOG_LEVEL: o->log_level = optarg; break;
        case 'h': serve_usage(stdout); return 1;
        case '?': fprintf(stderr, "run 'rdma-webhook serve --help' for the flags\n"); return 2;
        default:
            if (serve_numeric(o, c))
                return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "rdma-webhook serve: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    return 0;
}

static void serve_defaults(struct serve_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->cfg.listen = ":8443";
    o->cfg.metrics_listen = ":9090";
    o->cfg.cert_file = RDMA_WEBHOOK_DEFAULT_CERT;
    o->cfg.key_file = RDMA_WEBHOOK_DEFAULT_KEY;
    o->cfg.max_body = 8u << 20;
    o->cfg.threads = serve_default_threads();
    o->cfg.conn_timeout_s = 30;
    o->cfg.conn_limit = 4096;
    o->cfg.cert_expiry_warn_days = 30;
    o->profiles = RDMA_WEBHOOK_DEFAULT_PROFILES;
    o->log_level = "info";
    o->reload_interval_ms = 1000;
    o->grace_s = 10;
}

/* The serve command's whole state: the server context and its profile source. */
struct serve_app {
    struct server srv;
    struct filewatch watch;
    const char *profiles_path;
};

/* Reads the profiles file and publishes it; the old snapshot stays on error. */
static void serve_reload_profiles(void *arg)
{
    struct serve_app *app = arg;
    struct dynbuf text;
    char err[512] = "";

    dynbuf_init(&text, RDMA_WEBHOOK_PROFILES_MAX);
    if (fsutil_read(app->profiles_path, &text, err, sizeof(err)) == 0)
        store_publish(&app->srv.store, dynbuf_ptr(&text), dynbuf_len(&text), app->profiles_path);
    else
        log_msg(&app->srv.log, LOG_ERROR,
                "cannot read profiles; the previous version keeps serving", "error", err);
    dynbuf_free(&text);
}

/* Waits for requests in flight to finish, at most grace_s seconds. */
static void serve_drain(struct serve_app *app, unsigned grace_s)
{
    struct timespec tick = {0, 50 * 1000000L};
    long waited_ms = 0;

    server_quiesce(&app->srv);
    while (atomic_load(&app->srv.metrics.in_flight) > 0 && waited_ms < (long)grace_s * 1000) {
        nanosleep(&tick, NULL);
        waited_ms += 50;
    }
    if (atomic_load(&app->srv.metrics.in_flight) > 0)
        log_msg(&app->srv.log, LOG_WARN, "grace period over; closing requests still in flight",
                NULL, NULL);
}

/* The main thread only handles signals; libmicrohttpd's threads serve. */
static void serve_wait_signals(struct serve_app *app, const sigset_t *set, unsigned grace_s)
{
    for (;;) {
        int sig = 0;

        if (sigwait(set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            log_msg(&app->srv.log, LOG_INFO, "SIGHUP: reloading profiles and certificate", NULL,
                    NULL);
            serve_reload_profiles(app);
            server_reload_certs(&app->srv);
            continue;
        }
        log_msg(&app->srv.log, LOG_INFO, "shutting down", "signal", strsignal(sig));
        serve_drain(app, grace_s);
        return;
    }
}

static int serve_run(struct serve_app *app, const struct serve_opts *o)
{
    sigset_t set;
    char err[512];
    int rc = 1;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    /* Blocked before any thread starts, so every thread inherits the mask. */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    app->profiles_path = o->profiles;
    app->srv.cfg.cert_reload_interval_ms = o->reload_interval_ms;
    serve_reload_profiles(app);
    if (filewatch_start(&app->watch, &o->profiles, 1, (int)o->reload_interval_ms,
                        serve_reload_profiles, app, err, sizeof(err)) ||
        server_start(&app->srv, err, sizeof(err))) {
        log_msg(&app->srv.log, LOG_ERROR, "cannot start", "error", err);
        goto out;
    }
    log_msg(&app->srv.log, LOG_INFO, "serving", "listen", o->cfg.listen);
    serve_wait_signals(app, &set, o->grace_s);
    rc = 0;
out:
    server_stop(&app->srv);
    filewatch_stop(&app->watch);
    return rc;
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o;
    struct serve_app *app;
    enum log_level level;
    int rc;

    serve_defaults(&o);
    rc = serve_parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (log_level_parse(o.log_level, &level)) {
        fprintf(stderr, "rdma-webhook serve: --log-level takes debug, info, warn or error\n");
        return 2;
    }
    if (o.profiles_configmap) {
        fprintf(stderr, "rdma-webhook serve: --profiles-configmap needs the Kubernetes API "
                        "client, which this build does not have yet; mount the ConfigMap and "
                        "use --profiles FILE\n");
        return 2;
    }
    app = calloc(1, sizeof(*app));
    if (!app || store_init(&app->srv.store, &app->srv.log)) {
        fprintf(stderr, "rdma-webhook serve: out of memory\n");
        free(app);
        return 1;
    }
    app->srv.cfg = o.cfg;
    metrics_init(&app->srv.metrics);
    app->srv.log = (struct logger){.fd = STDERR_FILENO, .min = level};
    rc = serve_run(app, &o);
    store_destroy(&app->srv.store);
    free(app);
    return rc;
}
