#include "store.h"

#include "dynbuf.h"
#include "profiles.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

#define STORE_ERRORS_MAX 8192

int store_init(struct store *s, struct log *log)
{
    memset(s, 0, sizeof(*s));
    s->log = log;
    return pthread_mutex_init(&s->mu, NULL) ? -1 : 0;
}

void store_stop(struct store *s)
{
    store_release(s->cur);
    s->cur = NULL;
    pthread_mutex_destroy(&s->mu);
}

void store_release(struct store_snapshot *snap)
{
    if (!snap || atomic_fetch_sub(&snap->refs, 1) != 1)
        return;
    profiles_free(snap->ps);
    free(snap);
}

struct store_snapshot *store_acquire(struct store *s)
{
    struct store_snapshot *snap;

    pthread_mutex_lock(&s->mu);
    snap = s->cur;
    if (snap)
        atomic_fetch_add(&snap->refs, 1);
    pthread_mutex_unlock(&s->mu);
    return snap;
}

int store_ready(struct store *s)
{
    int ready;

    pthread_mutex_lock(&s->mu);
    ready = s->cur != NULL;
    pthread_mutex_unlock(&s->mu);
    return ready;
}

unsigned long store_loaded(struct store *s)
{
    unsigned long n;

    pthread_mutex_lock(&s->mu);
    n = s->generation;
    pthread_mutex_unlock(&s->mu);
    return n;
}

unsigned long store_rejected(struct store *s)
{
    unsigned long n;

    pthread_mutex_lock(&s->mu);
    n = s->rejected;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* One log line per problem, so each is readable in a log viewer. A long
 * problem (it quotes the admin's text) is cut between two characters: the
 * log line must stay UTF-8. */
static void store_log_rejected(struct store *s, const char *origin, const struct dynbuf *errors)
{
    const char *line = dynbuf_ptr(errors);
    char one[512];

    log_msg(s->log, LOG_ERROR, "profiles rejected; the previous version keeps serving", "source",
            origin);
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

void store_reject(struct store *s, const char *origin, const char *problem)
{
    struct dynbuf errors;

    dynbuf_init(&errors, STORE_ERRORS_MAX);
    dynbuf_printf(&errors, "%s\n", problem);
    store_log_rejected(s, origin, &errors);
    dynbuf_free(&errors);
    pthread_mutex_lock(&s->mu);
    s->rejected++;
    pthread_mutex_unlock(&s->mu);
}

/* The log line's figures are read under the lock: once it is dropped, a
 * concurrent publish may replace and free next. */
static void store_swap(struct store *s, struct store_snapshot *next, const char *origin)
{
    struct store_snapshot *old;
    struct log_line l;
    unsigned long generation;
    size_t n_profiles;

    pthread_mutex_lock(&s->mu);
    old = s->cur;
    generation = next->generation = ++s->generation;
    n_profiles = next->ps->n;
    s->cur = next;
    pthread_mutex_unlock(&s->mu);
    store_release(old);
    log_begin(&l, s->log, LOG_INFO, "profiles loaded");
    log_str(&l, "source", origin);
    log_int(&l, "generation", (long long)generation);
    log_int(&l, "profiles", (long long)n_profiles);
    log_end(&l);
}

int store_publish(struct store *s, const char *text, size_t len, const char *origin)
{
    struct dynbuf errors;
    struct store_snapshot *next = NULL;
    struct profiles *ps;
    int rc = -1;

    dynbuf_init(&errors, STORE_ERRORS_MAX);
    ps = profiles_parse(text, len, &errors);
    if (!ps) {
        store_log_rejected(s, origin, &errors);
        pthread_mutex_lock(&s->mu);
        s->rejected++;
        pthread_mutex_unlock(&s->mu);
        goto out;
    }
    next = calloc(1, sizeof(*next));
    if (!next) {
        log_msg(s->log, LOG_ERROR, "out of memory loading profiles", "source", origin);
        profiles_free(ps);
        goto out;
    }
    next->ps = ps;
    atomic_init(&next->refs, 1);
    store_swap(s, next, origin);
    rc = 0;
out:
    dynbuf_free(&errors);
    return rc;
}
