#include "cmd/cmd.h"

#include "base/arena.h"
#include "cmd/cmd_serve_flags.h"
#include "kube/cmwatch.h"
#include "kube/events.h"
#include "host/filewatch.h"
#include "kube/kubeapi.h"
#include "kube/lastgood.h"
#include "host/logq.h"
#include "kube/lookups.h"
#include "kube/metricsauth.h"
#include "kube/selfcert.h"
#include "wire/certs.h"
#include "host/podsecconf.h"
#include "host/reloader.h"
#include "server/server.h"
#include "host/stopguard.h"
#include "host/store.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* 256 KiB per buffer holds about 800 admission lines, some 20 ms of a
 * full load; lines wait 100 ms at most when the server is quiet. */
#define CMD_SERVE_LOGQ_CAP      (256u * 1024u)
#define CMD_SERVE_LOGQ_FLUSH_MS 100u
/* How long an exit waits for a stalled stderr reader. */
#define CMD_SERVE_LOGQ_STOP_MS 2000u
/* --detect-image-from-deployment: how long the start may try, each GET's
 * timeout, and the most of the Deployment read. */
#define CMD_SERVE_DETECT_TRY_MS  10000L
#define CMD_SERVE_DETECT_GET_MS  3000L
#define CMD_SERVE_DEPLOYMENT_MAX (4u << 20)
/* How long an exit sends the Events still queued: within the Deployment's
 * terminationGracePeriodSeconds after preStop and --shutdown-grace. */
#define CMD_SERVE_EVENTS_STOP_MS 2000u
/* How long the stop after the drain may take: the Events' bound and the
 * threads' joins, well within terminationGracePeriodSeconds' margin. A step
 * still running then is stuck where no stop reaches (a hung file system):
 * it is logged and the process ends without it. */
#define CMD_SERVE_STOP_MS 10000u

/* The serve command's whole state: the log and the profiles store that
 * everything shares, the server, and the profiles' source. */
struct cmd_serve_app {
    struct log log;
    struct store *store;
    struct server *srv;
    struct filewatch *watch;   /* profiles from a file, or */
    struct cmwatch *cmwatch;   /* from a ConfigMap */
    struct lastgood *lastgood; /* the last good copy and the stale signal; NULL: none */
    char cm_ns[64], cm_name[254], copy_name[254 + sizeof(LASTGOOD_SUFFIX)];
    char fix[600];       /* what the stale signal tells the admin to fix */
    struct kubeapi *api; /* NULL: no API */
    struct lookups *lookups;
    struct metricsauth *metrics_auth;     /* --metrics-auth kubernetes; NULL: /metrics is open */
    struct events *events;                /* NULL: no API, or the queue could not be made */
    struct reloader *reloader;            /* SIGHUP's reloads; NULL: on the main thread */
    const char *profiles_path;            /* NULL with a ConfigMap */
    struct store_source profiles_src;     /* the file at profiles_path */
    char detect_image[CMD_IMAGE_MAX + 1]; /* read by --detect-image-from-deployment */
    struct podsecconf podsec;             /* --pod-security-config */
    struct selfcert *selfcert;            /* --cert-secret; NULL: files made elsewhere */
    char cert_ns[64], cert_name[254], mwc[254], vwc[254];
};

/* Reads the profiles file and publishes it; the old snapshot stays on error.
 * SIGHUP (main thread) and the watcher both call this: the store serialises
 * them, so the newest read is published last. */
static void cmd_serve_reload_profiles(void *arg)
{
    struct cmd_serve_app *app = arg;

    store_reload(app->store, &app->profiles_src);
}

/* SIGHUP's reload, on the reloader's thread: the main thread stays free for
 * SIGTERM even when a read hangs. */
static void cmd_serve_reload_all(void *arg)
{
    struct cmd_serve_app *app = arg;

    if (app->profiles_path)
        cmd_serve_reload_profiles(app);
    server_reload_certs(app->srv);
}

/* Waits for requests in flight to finish, at most grace_s seconds. */
static void cmd_serve_drain(struct cmd_serve_app *app, unsigned grace_s)
{
    struct timespec tick = {0, 50 * 1000000L};
    long waited_ms = 0;

    server_quiesce(app->srv);
    while (server_in_flight(app->srv) > 0 && waited_ms < (long)grace_s * 1000) {
        nanosleep(&tick, NULL);
        waited_ms += 50;
    }
    if (server_in_flight(app->srv) > 0)
        log_msg(&app->log, LOG_WARN, "grace period over; closing requests still in flight", NULL,
                NULL);
}

/* The main thread only handles signals; libmicrohttpd's threads serve. */
static void cmd_serve_wait_signals(struct cmd_serve_app *app, const sigset_t *set, unsigned grace_s)
{
    for (;;) {
        int sig = 0;

        if (sigwait(set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            log_msg(&app->log, LOG_INFO, "SIGHUP: reloading profiles and certificate", NULL, NULL);
            if (app->reloader)
                reloader_kick(app->reloader);
            else
                cmd_serve_reload_all(app);
            continue;
        }
        log_msg(&app->log, LOG_INFO, "shutting down", "signal", strsignal(sig));
        cmd_serve_drain(app, grace_s);
        return;
    }
}

/* Events are an extra: without them the webhook serves as before. */
static void cmd_serve_start_events(struct cmd_serve_app *app)
{
    struct events_config ec = {.call = kubeapi_call, .call_ctx = app->api};
    char err[ERR_LEN] = "";

    if (events_init(&app->events, &app->log, &ec, err, sizeof(err)) != ERR_OK)
        log_msg(&app->log, LOG_WARN, "no Events for warnings", "error", err);
}

/* The API client, when there is an API: flags, or the pod's service account.
 * ERR_OK, or ERR_FAIL with why in err. */
static int cmd_serve_start_api(struct cmd_serve_app *app, const struct cmd_serve_flags *o,
                               char *err, size_t errlen)
{
    int in_cluster = getenv("KUBERNETES_SERVICE_HOST") != NULL;
    struct lookups_config lc = {.budget_ms = o->api_budget_ms,
                                .node_ttl_s = o->node_cache_s,
                                .configmap_ttl_s = o->configmap_cache_s,
                                .namespace_ttl_s = o->namespace_cache_s,
                                .job_ttl_s = o->job_cache_s,
                                .call = kubeapi_call};

    if (o->no_kube_api || (!o->kube_api && !in_cluster && !o->profiles_configmap &&
                           !o->detect_deployment && !o->cert_secret)) {
        log_msg(&app->log, LOG_INFO,
                "no Kubernetes API: no Events for warnings (pass --kube-api, or run in a cluster)",
                NULL, NULL);
        return ERR_OK;
    }
    if (o->kube_api
            ? kubeapi_init(&app->api, o->kube_api, o->kube_ca, o->kube_token_file, err, errlen)
            : kubeapi_init_in_cluster(&app->api, err, errlen))
        return ERR_FAIL;
    lc.call_ctx = app->api;
    if (lookups_init(&app->lookups, &app->log, &lc, err, errlen) != ERR_OK)
        return ERR_FAIL;
    cmd_serve_start_events(app);
    return ERR_OK;
}

/* --metrics-auth: kubernetes by default when there is an API to ask, and an
 * error when asked for without one. ERR_OK, or ERR_FAIL with why in err. */
static int cmd_serve_start_metrics_auth(struct cmd_serve_app *app, const struct cmd_serve_flags *o,
                                        struct server_config *cfg, char *err, size_t errlen)
{
    struct metricsauth_config mc = {
        .call = kubeapi_call, .call_ctx = app->api, .ttl_ms = METRICSAUTH_DEFAULT_TTL_MS};

    if (o->metrics_auth == CMD_SERVE_METRICS_AUTH_NONE || !o->cfg.metrics_listen ||
        !*o->cfg.metrics_listen || (o->metrics_auth == CMD_SERVE_METRICS_AUTH_DEFAULT && !app->api))
        return ERR_OK;
    if (!app->api)
        return err_set(err, errlen, ERR_FAIL,
                       "--metrics-auth kubernetes needs the API: pass --kube-api (or run in a "
                       "cluster), or --metrics-auth none");
    if (metricsauth_init(&app->metrics_auth, &mc, err, errlen) != ERR_OK)
        return ERR_FAIL;
    cfg->metrics_auth = app->metrics_auth;
    return ERR_OK;
}

/* One GET of Deployment ref ("NS/NAME", checked by the flags) and the image
 * of its first container into out: ERR_OK, or ERR_FAIL with why in err;
 * *final when trying again cannot help (404: no such Deployment). */
static int cmd_serve_deployment_image(struct kubeapi *api, const char *ref, char *out,
                                      size_t outlen, int *final, char *err, size_t errlen)
{
    const char *slash = strchr(ref, '/');
    const cJSON *c, *image;
    struct dynbuf body;
    cJSON *doc = NULL;
    char path[512];
    long status = 0;
    int rc;

    snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%.*s/deployments/%s", (int)(slash - ref),
             ref, slash + 1);
    dynbuf_init(&body, CMD_SERVE_DEPLOYMENT_MAX);
    rc = kubeapi_call(api,
                      &(struct kubeapi_request){
                          .method = "GET", .path = path, .timeout_ms = CMD_SERVE_DETECT_GET_MS},
                      &body, &status, err, errlen);
    *final = rc == ERR_OK && (status == 200 || status == 404);
    if (rc == ERR_OK && status != 200)
        rc = err_set(err, errlen, ERR_FAIL, "GET deployment %s: HTTP %ld (%s)", ref, status,
                     status == 403 ? "the service account needs get on deployments there"
                                   : "check the name");
    if (rc == ERR_OK) {
        doc = cJSON_ParseWithLength(dynbuf_ptr(&body), dynbuf_len(&body));
        c = cJSON_GetArrayItem(
            cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "spec"),
                                                     "template"),
                    "spec"),
                "containers"),
            0);
        image = cJSON_GetObjectItemCaseSensitive(c, "image");
        if (!cJSON_IsString(image))
            rc = err_set(err, errlen, ERR_FAIL, "deployment %s has no image in its first container",
                         ref);
        else if ((rc = cmd_check_image(image->valuestring, err, errlen)) == ERR_OK)
            snprintf(out, outlen, "%s", image->valuestring);
    }
    cJSON_Delete(doc);
    dynbuf_free(&body);
    return rc;
}

/* --detect-image-from-deployment: the image, tried for CMD_SERVE_DETECT_TRY_MS
 * (the API may not answer yet as the pod starts). Without it the webhook
 * still serves, only without run-time detection: each pod whose profile asks
 * for it is told so. */
static void cmd_serve_detect_image(struct cmd_serve_app *app, const struct cmd_serve_flags *o,
                                   struct server_config *cfg)
{
    char err[ERR_LEN] = "";
    long waited = 0, pause = 200;
    int final = 0;

    if (!o->detect_deployment)
        return;
    while (cmd_serve_deployment_image(app->api, o->detect_deployment, app->detect_image,
                                      sizeof(app->detect_image), &final, err,
                                      sizeof(err)) != ERR_OK) {
        struct timespec ts = {pause / 1000, (pause % 1000) * 1000000L};

        if (final || waited >= CMD_SERVE_DETECT_TRY_MS) {
            log_msg(&app->log, LOG_ERROR,
                    "no detect image: profiles with detect get no init container", "error", err);
            return;
        }
        nanosleep(&ts, NULL);
        waited += pause;
        pause = pause * 2 > 2000 ? 2000 : pause * 2;
    }
    cfg->detect_image = app->detect_image;
    log_msg(&app->log, LOG_INFO, "detect image", "image", app->detect_image);
}

/* certs_pem_facts as kube/selfcert.h takes it (kube does not include wire). */
static int cmd_serve_cert_facts(const char *pem, size_t len, const char *issuer, size_t issuer_len,
                                const char *key, size_t key_len, struct selfcert_facts *f,
                                char *err, size_t errlen)
{
    struct certs_facts cf;
    int rc = certs_pem_facts(pem, len, issuer, issuer_len, key, key_len, &cf, err, errlen);

    *f = (struct selfcert_facts){cf.not_before, cf.not_after, cf.signed_by, cf.key_ok};
    return rc;
}

/* "A,B" of --webhook-configs (checked by the flags) and "NS/NAME" of
 * --cert-secret into the app's buffers. */
static void cmd_serve_split(const char *s, char sep, char *a, size_t alen, char *b, size_t blen)
{
    const char *p = strchr(s, sep);

    snprintf(a, alen, "%.*s", (int)(p - s), s);
    snprintf(b, blen, "%s", p + 1);
}

/* --cert-secret: the Secret's pair on disk before the server reads it, and
 * the loop that keeps it (kube/selfcert.h). ERR_OK, or ERR_FAIL with why. */
static int cmd_serve_start_selfcert(struct cmd_serve_app *app, const struct cmd_serve_flags *o,
                                    char *err, size_t errlen)
{
    struct selfcert_config sc;

    if (!o->cert_secret)
        return ERR_OK;
    if (!app->api)
        return err_set(err, errlen, ERR_FAIL,
                       "--cert-secret needs the API: pass --kube-api or run in a cluster");
    cmd_serve_split(o->cert_secret, '/', app->cert_ns, sizeof(app->cert_ns), app->cert_name,
                    sizeof(app->cert_name));
    cmd_serve_split(o->webhook_configs, ',', app->mwc, sizeof(app->mwc), app->vwc,
                    sizeof(app->vwc));
    sc = (struct selfcert_config){
        .call = kubeapi_call,
        .call_ctx = app->api,
        .ns = app->cert_ns,
        .name = app->cert_name,
        .mutating = app->mwc,
        .validating = app->vwc,
        .service = o->cert_service,
        .service_ns = app->cert_ns,
        .cert_file = o->cfg.cert_file,
        .key_file = o->cfg.key_file,
        .leaf_days = o->cert_days,
        .ca_days = o->ca_days,
        .sync_s = o->cert_sync_s,
        .overlap_s = o->ca_overlap_s,
        .pki = {.make_ca = certs_make_ca_pem,
                .make_leaf = certs_make_leaf_pem,
                .facts = cmd_serve_cert_facts},
    };
    return selfcert_init(&app->selfcert, &app->log, &sc, err, errlen);
}

/* The last good copy (with a ConfigMap and a copy name) and the stale
 * signal (always). Without them serving goes on, only less loudly. */
static void cmd_serve_start_lastgood(struct cmd_serve_app *app, const struct cmd_serve_flags *o)
{
    struct lastgood_config lc = {
        .fix = app->fix, .interval_ms = o->stale_log_s * 1000u, .events = app->events};
    char err[ERR_LEN] = "";

    if (o->profiles_configmap) {
        if (o->profiles_last_good)
            snprintf(app->copy_name, sizeof(app->copy_name), "%s", o->profiles_last_good);
        else
            snprintf(app->copy_name, sizeof(app->copy_name), "%s" LASTGOOD_SUFFIX, app->cm_name);
        lc.call = app->api ? kubeapi_call : NULL; /* the flags ask for an API */
        lc.call_ctx = app->api;
        lc.ns = app->cm_ns;
        lc.name = app->cm_name;
        lc.key = o->profiles_key;
        lc.copy = app->copy_name;
    }
    if (lastgood_init(&app->lastgood, app->store, &app->log, &lc, err, sizeof(err)) != ERR_OK)
        log_msg(&app->log, LOG_WARN, "no last good copy, no repeated stale log line or Event",
                "error", err);
    else if (o->profiles_configmap && !app->copy_name[0])
        log_msg(&app->log, LOG_WARN,
                "no last good copy (--profiles-last-good \"\"): a restart while the ConfigMap "
                "is invalid is not ready",
                NULL, NULL);
}

/* Starts the profiles source: the ConfigMap watch, or the file (its identity
 * recorded, then loaded, then watched: a version written during the load is
 * loaded again, not missed). ERR_OK, or an ERR_* code with why in err. */
static int cmd_serve_start_profiles(struct cmd_serve_app *app, const struct cmd_serve_flags *o,
                                    char *err, size_t errlen)
{
    if (o->profiles_configmap) {
        if (cmwatch_split_name(o->profiles_configmap, app->cm_ns, app->cm_name, err, errlen))
            return ERR_FAIL;
        snprintf(app->fix, sizeof(app->fix), "ConfigMap %s/%s", app->cm_ns, app->cm_name);
        cmd_serve_start_lastgood(app, o);
        return cmwatch_init(&app->cmwatch,
                            &(struct cmwatch_config){.call = app->api ? kubeapi_call : NULL,
                                                     .call_ctx = app->api,
                                                     .store = app->store,
                                                     .lastgood = app->lastgood,
                                                     .log = &app->log,
                                                     .ns_name = o->profiles_configmap,
                                                     .key = o->profiles_key,
                                                     .watch_timeout_s = o->watch_timeout_s},
                            err, errlen);
    }
    snprintf(app->fix, sizeof(app->fix), "profiles file %s", o->profiles);
    cmd_serve_start_lastgood(app, o);
    app->profiles_path = o->profiles;
    app->profiles_src = store_source_file(o->profiles);
    if (filewatch_init(&app->watch, &o->profiles, 1, (int)o->reload_interval_ms,
                       cmd_serve_reload_profiles, app, err, errlen) != ERR_OK)
        return ERR_FAIL;
    cmd_serve_reload_profiles(app);
    return filewatch_start(app->watch, err, errlen);
}

void cmd_serve_block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    /* Blocked before any thread starts, so every thread inherits the mask. */
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* A stop step past CMD_SERVE_STOP_MS: said (the log queue's writer sends an
 * error at once; a direct write must not wait for a reader of stderr
 * either), and the process ends with status 1. */
static void cmd_serve_stuck(void *arg, const char *step)
{
    struct cmd_serve_app *app = arg;
    struct timespec flush = {0, 300 * 1000000L};

    if (!app->log.queue)
        fcntl(app->log.fd, F_SETFL, fcntl(app->log.fd, F_GETFL) | O_NONBLOCK);
    log_msg(&app->log, LOG_ERROR, "stop stuck; exiting without it", "step", step);
    nanosleep(&flush, NULL);
    _exit(1);
}

static void cmd_serve_step(struct stopguard *g, const char *step)
{
    if (g)
        stopguard_step(g, step);
}

/* Stops everything but the log queue, each step named for the guard. */
static void cmd_serve_stop(struct cmd_serve_app *app)
{
    struct stopguard *g = NULL;
    char err[ERR_LEN] = "";

    if (stopguard_init(&g, CMD_SERVE_STOP_MS, cmd_serve_stuck, app, err, sizeof(err)) != ERR_OK)
        log_msg(&app->log, LOG_WARN, "the stop has no time bound", "error", err);
    cmd_serve_step(g, "reload");
    reloader_stop(&app->reloader);
    cmd_serve_step(g, "server");
    server_stop(&app->srv);
    cmd_serve_step(g, "filewatch");
    filewatch_stop(&app->watch);
    cmd_serve_step(g, "cmwatch");
    cmwatch_stop(&app->cmwatch);
    cmd_serve_step(g, "lastgood");
    lastgood_stop(&app->lastgood);
    cmd_serve_step(g, "selfcert");
    selfcert_stop(&app->selfcert);
    /* No admission runs now, and no watcher (lastgood reports a stale copy
     * as an Event from its own thread): what they reported goes out, within
     * a bound, and only then are the events freed. */
    cmd_serve_step(g, "events");
    events_stop(&app->events, CMD_SERVE_EVENTS_STOP_MS, NULL);
    cmd_serve_step(g, "lookups");
    lookups_stop(&app->lookups);
    metricsauth_stop(&app->metrics_auth);
    /* The last of the API's users is gone: the client goes (a free, no step
     * of its own: nothing there can hang). */
    kubeapi_stop(&app->api);
    podsecconf_free(&app->podsec);
    stopguard_stop(&g);
}

/* Every other thread has stopped: what is queued goes out, and any later
 * line is written directly. */
static void cmd_serve_stop_log_queue(struct log *lg)
{
    struct logq *q = lg->queue;

    lg->queue = NULL;
    logq_stop(&q, CMD_SERVE_LOGQ_STOP_MS);
}

/* "serving", with the ports the sockets are bound to: --listen :0 asks the
 * kernel for one, and whoever started us (a test, a script) reads it here. */
static void cmd_serve_log_serving(struct cmd_serve_app *app, const struct cmd_serve_flags *o)
{
    struct log_line l;

    log_begin(&l, &app->log, LOG_INFO, "serving");
    log_str(&l, "listen", o->cfg.listen);
    log_int(&l, "port", server_https_port(app->srv));
    if (o->cfg.metrics_listen && *o->cfg.metrics_listen) {
        log_int(&l, "metrics_port", server_metrics_port(app->srv));
        log_str(&l, "metrics_auth", app->metrics_auth ? "kubernetes" : "none");
    }
    log_end(&l);
}

static int cmd_serve_run(struct cmd_serve_app *app, const struct cmd_serve_flags *o)
{
    struct server_config cfg = o->cfg;
    sigset_t set;
    char err[ERR_LEN] = "";
    int rc = 1;

    cmd_serve_block_signals(&set);
    /* Without the queue every line is written directly: slower, still correct. */
    if (logq_init(&app->log.queue, CMD_SERVE_LOGQ_CAP, CMD_SERVE_LOGQ_FLUSH_MS, log_queue_sink,
                  &app->log, err, sizeof(err)) != ERR_OK)
        log_msg(&app->log, LOG_WARN, "log queue unavailable; writing each line directly", "error",
                err);
    cfg.cert_reload_interval_ms = o->reload_interval_ms;
    cfg.profiles_key = o->profiles_key;
    /* As the apiserver does, a configuration it would refuse stops the start. */
    if (o->pod_security_config) {
        if (podsecconf_load(&app->podsec, o->pod_security_config, err, sizeof(err)))
            goto cannot;
        log_msg(&app->log, LOG_INFO, "Pod Security configuration read", "file",
                o->pod_security_config);
    }
    cfg.podsec = &app->podsec.cfg;
    if (cmd_serve_start_api(app, o, err, sizeof(err)) ||
        cmd_serve_start_metrics_auth(app, o, &cfg, err, sizeof(err)) ||
        cmd_serve_start_selfcert(app, o, err, sizeof(err)))
        goto cannot;
    cmd_serve_detect_image(app, o, &cfg);
    if (cmd_serve_start_profiles(app, o, err, sizeof(err)))
        goto cannot;
    cfg.lastgood = app->lastgood;
    if (server_init(&app->srv, &cfg, &app->log, app->store, app->lookups, app->events, err,
                    sizeof(err)) ||
        server_start(app->srv, err, sizeof(err)))
        goto cannot;
    if (reloader_init(&app->reloader, cmd_serve_reload_all, app, err, sizeof(err)) != ERR_OK)
        log_msg(&app->log, LOG_WARN, "SIGHUP reloads on the main thread", "error", err);
    cmd_serve_log_serving(app, o);
    cmd_serve_wait_signals(app, &set, o->grace_s);
    rc = 0;
    goto out;
cannot:
    log_msg(&app->log, LOG_ERROR, "cannot start", "error", err);
out:
    cmd_serve_stop(app);
    cmd_serve_stop_log_queue(&app->log);
    return rc;
}

int cmd_serve(int argc, char **argv)
{
    struct cmd_serve_flags o;
    struct cmd_serve_app *app;
    enum log_level level;
    int rc;

    rc = cmd_serve_flags_parse(argc, argv, &o, &level);
    if (rc)
        return rc == 1 ? 0 : rc;
    app = calloc(1, sizeof(*app));
    if (!app)
        goto oom;
    app->log = (struct log){.fd = STDERR_FILENO, .min = level};
    podsecconf_init(&app->podsec);
    if (store_init(&app->store, &app->log, NULL, 0) != ERR_OK)
        goto oom_app;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    arena_install_cjson_hooks();
    rc = cmd_serve_run(app, &o);
    curl_global_cleanup();
    store_stop(&app->store);
    free(app);
    return rc;
oom_app:
    free(app);
oom:
    fprintf(stderr, "rdma-webhook serve: out of memory\n");
    return 1;
}
