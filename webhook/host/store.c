#include "host/store.h"

#include "base/err.h"
#include "host/fsutil.h"
#include "admission/profiles.h"
#include "base/utf8.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STORE_ERRORS_MAX 8192

/* In every live object of this module and nowhere else: a stopped or stray
 * pointer fails the assert instead of corrupting memory. */
#define STORE_MAGIC      0x73746f72u /* "stor" */
#define STORE_SNAP_MAGIC 0x736e6170u /* "snap" */

/* A snapshot and what only this module sees of it. */
struct store_held {
    struct store_snapshot pub;
    unsigned magic;
    atomic_int refs;
};

struct store {
    unsigned magic;
    /* One read-and-publish at a time, so the newest read is published
     * last; taken before mu, never while holding it. */
    pthread_mutex_t reload_mu;
    pthread_mutex_t mu;     /* cur, generation and rejected */
    struct store_held *cur; /* NULL until a valid version was published */
    unsigned long generation;
    unsigned long rejected; /* versions refused since start */
    atomic_int stale;       /* see store.h; written under mu, read without */
    atomic_int fallback;    /* store_set_fallback; 0 from calloc */
    struct log *log;
};

int store_init(struct store **out, struct log *log, char *err, size_t errlen)
{
    struct store *s = calloc(1, sizeof(*s));

    *out = NULL;
    if (!s)
        return err_set(err, errlen, ERR_NOMEM, "profiles store: out of memory");
    if (pthread_mutex_init(&s->mu, NULL))
        goto no_lock;
    if (pthread_mutex_init(&s->reload_mu, NULL)) {
        pthread_mutex_destroy(&s->mu);
        goto no_lock;
    }
    s->log = log;
    s->magic = STORE_MAGIC;
    *out = s;
    return ERR_OK;
no_lock:
    free(s);
    return err_set(err, errlen, ERR_FAIL, "profiles store: cannot make its locks");
}

static void store_drop(struct store_held *h)
{
    if (!h || atomic_fetch_sub(&h->refs, 1) != 1)
        return;
    profiles_free(h->pub.ps);
    h->magic = 0;
    free(h);
}

void store_stop(struct store **sp)
{
    struct store *s = *sp;

    if (!s)
        return;
    assert(s->magic == STORE_MAGIC);
    store_drop(s->cur);
    pthread_mutex_destroy(&s->reload_mu);
    pthread_mutex_destroy(&s->mu);
    s->magic = 0;
    free(s);
    *sp = NULL;
}

void store_release(struct store_snapshot *snap)
{
    struct store_held *h = (struct store_held *)snap; /* pub is its first member */

    if (!h)
        return;
    assert(h->magic == STORE_SNAP_MAGIC);
    store_drop(h);
}

struct store_snapshot *store_acquire(struct store *s)
{
    struct store_held *h;

    assert(s->magic == STORE_MAGIC);
    pthread_mutex_lock(&s->mu);
    h = s->cur;
    if (h)
        atomic_fetch_add(&h->refs, 1);
    pthread_mutex_unlock(&s->mu);
    return h ? &h->pub : NULL;
}

int store_ready(struct store *s)
{
    int ready;

    assert(s->magic == STORE_MAGIC);
    pthread_mutex_lock(&s->mu);
    ready = s->cur != NULL;
    pthread_mutex_unlock(&s->mu);
    return ready;
}

/* One of s's counters, read under the lock that its writer holds. */
static unsigned long store_counter(struct store *s, const unsigned long *counter)
{
    unsigned long n;

    assert(s->magic == STORE_MAGIC);
    pthread_mutex_lock(&s->mu);
    n = *counter;
    pthread_mutex_unlock(&s->mu);
    return n;
}

unsigned long store_loaded(struct store *s)
{
    return store_counter(s, &s->generation);
}

unsigned long store_rejected(struct store *s)
{
    return store_counter(s, &s->rejected);
}

/* One log line per problem, so each is readable in a log viewer. A long
 * problem (it quotes the admin's text) is cut between two characters: the
 * log line must stay UTF-8. */
static void store_log_rejected(struct store *s, const char *origin, const struct dynbuf *errors)
{
    const char *line = dynbuf_ptr(errors);
    char one[512];

    int ready = store_ready(s), fallback = !ready && atomic_load(&s->fallback);

    /* Before any version serves, a source that falls back has not lost
     * yet: saying 503 here would be contradicted a moment later by
     * "serving the last good profiles". */
    log_msg(s->log, fallback ? LOG_WARN : LOG_ERROR,
            ready      ? "profiles rejected; the previous version keeps serving"
            : fallback ? "profiles rejected; " STORE_FALLBACK_NEXT
                       : "profiles rejected; " STORE_NONE_YET,
            "source", origin);
    while (*line) {
        size_t n = strcspn(line, "\n");
        size_t keep = n < sizeof(one) ? n : utf8_cut(line, sizeof(one) - 1);
        struct log_line l;

        memcpy(one, line, keep);
        one[keep] = '\0';
        log_begin(&l, s->log, LOG_ERROR, "profiles problem");
        log_str(&l, "source", origin);
        log_str(&l, "problem", one);
        log_end(&l);
        line += n + (line[n] == '\n');
    }
}

/* A version from the source was refused: counted, and whatever serves now
 * is older than the source's. */
static void store_refused(struct store *s)
{
    pthread_mutex_lock(&s->mu);
    s->rejected++;
    if (s->cur)
        atomic_store(&s->stale, 1);
    pthread_mutex_unlock(&s->mu);
}

/* A read that failed: nothing is counted, but the version serving may no
 * longer be the source's. */
static void store_unread(struct store *s)
{
    pthread_mutex_lock(&s->mu);
    if (s->cur)
        atomic_store(&s->stale, 1);
    pthread_mutex_unlock(&s->mu);
}

void store_reject(struct store *s, const char *origin, const char *problem)
{
    struct dynbuf errors;

    assert(s->magic == STORE_MAGIC);
    dynbuf_init(&errors, STORE_ERRORS_MAX);
    dynbuf_printf(&errors, "%s\n", problem);
    /* In order with the reloads, in the log as in the counts. */
    pthread_mutex_lock(&s->reload_mu);
    store_log_rejected(s, origin, &errors);
    store_refused(s);
    pthread_mutex_unlock(&s->reload_mu);
    dynbuf_free(&errors);
}

void store_set_fallback(struct store *s, int on)
{
    assert(s->magic == STORE_MAGIC);
    atomic_store(&s->fallback, on != 0);
}

int store_stale(struct store *s)
{
    assert(s->magic == STORE_MAGIC);
    return atomic_load(&s->stale);
}

void store_set_stale(struct store *s)
{
    assert(s->magic == STORE_MAGIC);
    pthread_mutex_lock(&s->mu);
    if (s->cur)
        atomic_store(&s->stale, 1);
    pthread_mutex_unlock(&s->mu);
}

/* The log line's figures are read under the lock: once it is dropped, a
 * concurrent publish may replace and free next. (Publishes are serialised by
 * reload_mu too; this keeps store_swap right on its own.) */
static void store_swap(struct store *s, struct store_held *next, const char *origin, int stale)
{
    struct store_held *old;
    struct log_line l;
    unsigned long generation;
    size_t n_profiles;

    pthread_mutex_lock(&s->mu);
    old = s->cur;
    generation = next->pub.generation = ++s->generation;
    n_profiles = next->pub.ps->n;
    s->cur = next;
    atomic_store(&s->stale, stale);
    pthread_mutex_unlock(&s->mu);
    store_drop(old);
    log_begin(&l, s->log, stale ? LOG_ERROR : LOG_INFO,
              stale ? "profiles loaded from the last good copy: not the source's current version"
                    : "profiles loaded");
    log_str(&l, "source", origin);
    log_int(&l, "generation", (long long)generation);
    log_int(&l, "profiles", (long long)n_profiles);
    log_end(&l);
}

/* How a version is published: from the source (loaded_at 0: now), or as a
 * fallback with its own loaded_at. */
struct store_how {
    int fallback;
    long long loaded_at;
};

/* Validates text and, when valid, makes it current; with reload_mu held. */
static int store_publish_locked(struct store *s, const char *text, size_t len, const char *origin,
                                const struct store_how *how)
{
    struct dynbuf errors;
    struct store_held *next = NULL;
    struct profiles *ps;
    int rc = ERR_FAIL;

    dynbuf_init(&errors, STORE_ERRORS_MAX);
    ps = profiles_parse(text, len, &errors);
    if (!ps) {
        store_log_rejected(s, origin, &errors);
        if (how->fallback) {
            pthread_mutex_lock(&s->mu);
            s->rejected++;
            pthread_mutex_unlock(&s->mu);
        } else {
            store_refused(s);
        }
        goto out;
    }
    next = calloc(1, sizeof(*next));
    if (!next) {
        log_msg(s->log, LOG_ERROR, "out of memory loading profiles", "source", origin);
        profiles_free(ps);
        rc = ERR_NOMEM;
        goto out;
    }
    next->pub.ps = ps;
    next->pub.loaded_at = how->fallback ? how->loaded_at : (long long)time(NULL);
    next->magic = STORE_SNAP_MAGIC;
    atomic_init(&next->refs, 1);
    store_swap(s, next, origin, how->fallback);
    rc = ERR_OK;
out:
    dynbuf_free(&errors);
    return rc;
}

static void store_log_unreadable(struct store *s, const char *origin, const char *err)
{
    struct log_line l;

    log_begin(&l, s->log, LOG_ERROR,
              store_ready(s) ? "cannot read profiles; the previous version keeps serving"
                             : "cannot read profiles; " STORE_NONE_YET);
    log_str(&l, "source", origin);
    log_str(&l, "error", err);
    log_end(&l);
}

static int store_reload_how(struct store *s, const struct store_source *src,
                            const struct store_how *how)
{
    struct dynbuf text;
    char err[ERR_LEN] = "";
    int rc;

    assert(s->magic == STORE_MAGIC);
    dynbuf_init(&text, STORE_TEXT_MAX);
    pthread_mutex_lock(&s->reload_mu);
    rc = src->read(src->ctx, &text, err, sizeof(err));
    if (rc == ERR_OK) {
        rc = store_publish_locked(s, dynbuf_ptr(&text), dynbuf_len(&text), src->origin, how);
    } else {
        rc = rc < 0 ? rc : ERR_FAIL;
        store_log_unreadable(s, src->origin, err[0] ? err : err_name(rc));
        if (!how->fallback)
            store_unread(s);
    }
    pthread_mutex_unlock(&s->reload_mu);
    dynbuf_free(&text);
    return rc;
}

int store_reload(struct store *s, const struct store_source *src)
{
    const struct store_how how = {0, 0};

    return store_reload_how(s, src, &how);
}

static int store_read_file(void *path, struct dynbuf *text, char *err, size_t errlen)
{
    int rc = fsutil_read_regular(path, text, err, errlen);

    return rc == 0 ? ERR_OK : rc < 0 ? rc : ERR_FAIL;
}

struct store_source store_source_file(const char *path)
{
    return (struct store_source){.origin = path, .read = store_read_file, .ctx = (void *)path};
}

struct store_text {
    const char *text;
    size_t len;
};

static int store_read_text(void *ctx, struct dynbuf *text, char *err, size_t errlen)
{
    const struct store_text *t = ctx;
    int rc = dynbuf_add(text, t->text, t->len);

    if (rc == ERR_TOO_BIG)
        return err_set(err, errlen, rc, "the profiles are %zu bytes, more than the %u allowed",
                       t->len, STORE_TEXT_MAX);
    if (rc != ERR_OK)
        return err_set(err, errlen, rc, "out of memory for %zu bytes of profiles", t->len);
    return ERR_OK;
}

int store_publish(struct store *s, const char *text, size_t len, const char *origin)
{
    struct store_text t = {text, len};
    struct store_source src = {.origin = origin, .read = store_read_text, .ctx = &t};

    return store_reload(s, &src);
}

int store_publish_fallback(struct store *s, const char *text, size_t len, const char *origin,
                           long long loaded_at)
{
    struct store_text t = {text, len};
    struct store_source src = {.origin = origin, .read = store_read_text, .ctx = &t};
    const struct store_how how = {1, loaded_at};

    return store_reload_how(s, &src, &how);
}
