#include "wire/connguard.h"

#include "base/err.h"
#include "host/monotime.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

enum connguard_phase { CONNGUARD_WAITING, CONNGUARD_BODY, CONNGUARD_SERVING };

#define CONNGUARD_MAGIC 0x47524431u /* "GRD1": set by init, cleared by stop */

struct connguard_list {
    pthread_mutex_t mu;
    struct connguard_conn *head;
    unsigned live;  /* open and not cut */
    unsigned limit; /* most live connections */
    struct connguard *guard;
};

struct connguard {
    unsigned magic;
    struct connguard_limits lim;
    atomic_ullong cuts[CONNGUARD_REASONS];
    atomic_ullong refused; /* at the limit with nothing to displace */
    struct connguard_list lists[CONNGUARD_MAX_LISTS];
    unsigned n_lists;
    pthread_mutex_t mu; /* stop, cv */
    pthread_cond_t cv;
    int stop;
    int started;
    pthread_t thread;
};

int connguard_init(struct connguard **out, const struct connguard_limits *lim)
{
    struct connguard *g = calloc(1, sizeof(*g));

    *out = NULL;
    if (!g)
        return ERR_NOMEM;
    g->lim = *lim;
    if (g->lim.tick_ms == 0)
        g->lim.tick_ms = 100;
    if (monotime_cond_init(&g->cv))
        goto fail_guard;
    if (pthread_mutex_init(&g->mu, NULL))
        goto fail_cv;
    g->magic = CONNGUARD_MAGIC;
    *out = g;
    return ERR_OK;
fail_cv:
    pthread_cond_destroy(&g->cv);
fail_guard:
    free(g);
    return ERR_NOMEM;
}

struct connguard_list *connguard_add_list(struct connguard *g, unsigned limit)
{
    struct connguard_list *l;

    assert(g->magic == CONNGUARD_MAGIC);
    if (g->n_lists == CONNGUARD_MAX_LISTS || g->started)
        return NULL;
    l = &g->lists[g->n_lists];
    if (pthread_mutex_init(&l->mu, NULL))
        return NULL;
    l->head = NULL;
    l->live = 0;
    l->limit = limit ? limit : 1;
    l->guard = g;
    g->n_lists++;
    return l;
}

/* Under l's lock: ends c now. The descriptor stays open for libmicrohttpd,
 * which closes it after it has seen the end. */
static void connguard_cut(struct connguard_list *l, struct connguard_conn *c,
                          enum connguard_reason why)
{
    shutdown(c->fd, SHUT_RDWR);
    c->cut = 1;
    l->live--;
    atomic_fetch_add(&l->guard->cuts[why], 1);
}

static void connguard_sweep_list(struct connguard_list *l, long long now)
{
    pthread_mutex_lock(&l->mu);
    for (struct connguard_conn *c = l->head; c; c = c->next) {
        long long deadline = atomic_load(&c->deadline_ns);

        if (c->cut || deadline == 0 || now < deadline)
            continue;
        connguard_cut(l, c,
                      atomic_load(&c->phase) == CONNGUARD_BODY ? CONNGUARD_BODY_TIMEOUT
                                                               : CONNGUARD_HEADER_TIMEOUT);
    }
    pthread_mutex_unlock(&l->mu);
}

static void *connguard_main(void *arg)
{
    struct connguard *g = arg;

    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec until =
            monotime_at(monotime_now() + (long long)g->lim.tick_ms * MONOTIME_NS_PER_MS);

        pthread_cond_timedwait(&g->cv, &g->mu, &until);
        if (g->stop)
            break;
        pthread_mutex_unlock(&g->mu);
        for (unsigned i = 0; i < g->n_lists; i++)
            connguard_sweep_list(&g->lists[i], monotime_now());
        pthread_mutex_lock(&g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int connguard_start(struct connguard *g)
{
    assert(g->magic == CONNGUARD_MAGIC);
    if (pthread_create(&g->thread, NULL, connguard_main, g))
        return ERR_FAIL;
    g->started = 1;
    return ERR_OK;
}

void connguard_stop(struct connguard **pg)
{
    struct connguard *g = *pg;

    if (!g)
        return;
    assert(g->magic == CONNGUARD_MAGIC);
    if (g->started) {
        pthread_mutex_lock(&g->mu);
        g->stop = 1;
        pthread_cond_signal(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL);
        g->started = 0;
    }
    for (unsigned i = 0; i < g->n_lists; i++)
        pthread_mutex_destroy(&g->lists[i].mu);
    g->n_lists = 0;
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    g->magic = 0;
    free(g);
    *pg = NULL;
}

/* Under l's lock: the connection that has waited longest, not being served. */
static struct connguard_conn *connguard_longest_waiting(struct connguard_list *l)
{
    struct connguard_conn *oldest = NULL;
    long long oldest_since = 0;

    for (struct connguard_conn *c = l->head; c; c = c->next) {
        long long since = atomic_load(&c->since_ns);

        if (c->cut || atomic_load(&c->phase) == CONNGUARD_SERVING)
            continue;
        if (!oldest || since < oldest_since) {
            oldest = c;
            oldest_since = since;
        }
    }
    return oldest;
}

int connguard_admit(struct connguard_list *l)
{
    struct connguard_conn *victim;
    int ok = 1;

    pthread_mutex_lock(&l->mu);
    if (l->live >= l->limit) {
        victim = connguard_longest_waiting(l);
        if (victim)
            connguard_cut(l, victim, CONNGUARD_DISPLACED);
        else
            ok = 0;
    }
    pthread_mutex_unlock(&l->mu);
    if (!ok)
        atomic_fetch_add(&l->guard->refused, 1);
    return ok;
}

/* since first, then the deadline: the sweep never sees a new deadline with
 * the previous phase's start. */
static void connguard_enter(struct connguard_conn *c, int phase, unsigned limit_ms)
{
    long long now = monotime_now();

    atomic_store(&c->deadline_ns, 0);
    atomic_store(&c->phase, phase);
    atomic_store(&c->since_ns, now);
    if (limit_ms)
        atomic_store(&c->deadline_ns, now + (long long)limit_ms * MONOTIME_NS_PER_MS);
}

void connguard_open(struct connguard_list *l, struct connguard_conn *c, int fd)
{
    c->list = l;
    c->fd = fd;
    c->cut = 0;
    c->prev = NULL;
    connguard_enter(c, CONNGUARD_WAITING, l->guard->lim.header_ms);
    pthread_mutex_lock(&l->mu);
    c->next = l->head;
    if (l->head)
        l->head->prev = c;
    l->head = c;
    l->live++;
    pthread_mutex_unlock(&l->mu);
}

void connguard_close(struct connguard_conn *c)
{
    struct connguard_list *l = c->list;

    pthread_mutex_lock(&l->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (!c->cut)
        l->live--;
    pthread_mutex_unlock(&l->mu);
    c->list = NULL;
}

void connguard_headers_in(struct connguard_conn *c)
{
    if (c)
        connguard_enter(c, CONNGUARD_BODY, c->list->guard->lim.body_ms);
}

void connguard_request_in(struct connguard_conn *c)
{
    if (c)
        connguard_enter(c, CONNGUARD_SERVING, 0);
}

void connguard_response_out(struct connguard_conn *c)
{
    if (c)
        connguard_enter(c, CONNGUARD_WAITING, c->list->guard->lim.idle_ms);
}

unsigned connguard_open_count(struct connguard *g)
{
    unsigned n = 0;

    for (unsigned i = 0; i < g->n_lists; i++) {
        pthread_mutex_lock(&g->lists[i].mu);
        n += g->lists[i].live;
        pthread_mutex_unlock(&g->lists[i].mu);
    }
    return n;
}

unsigned long long connguard_cuts(const struct connguard *g, enum connguard_reason why)
{
    return atomic_load(&g->cuts[why]);
}

unsigned long long connguard_refused(const struct connguard *g)
{
    return atomic_load(&g->refused);
}
