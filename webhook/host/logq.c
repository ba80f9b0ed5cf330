#include "host/logq.h"

#include "base/err.h"
#include "host/monotime.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct logq_buf {
    char *mem;
    size_t len;
};

/* In every live queue, and nowhere else: a stopped or stray pointer fails
 * the assert instead of corrupting memory. */
#define LOGQ_MAGIC 0x6c6f6771u /* "logq" */

struct logq {
    unsigned magic;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    struct logq_buf fill;  /* producers append here, under mu */
    struct logq_buf spare; /* the writer's, outside mu */
    size_t cap;
    unsigned flush_ms;
    int wake; /* a batch is due now (size reached, urgent line, stop) */
    int stop;
    unsigned long long dropped_unsent; /* under mu; handed to the sink */
    atomic_ullong dropped;
    logq_sink sink;
    void *ctx;
};

/* ms from now on CLOCK_REALTIME, which pthread_timedjoin_np() waits on. */
static struct timespec logq_realtime_in(unsigned ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* Waits, with mu held, until there is something to send; 0 when stopped
 * with nothing left. The first line of a batch starts the flush_ms clock,
 * so a quiet server's lines are late by flush_ms at most. */
static int logq_wait_batch(struct logq *q)
{
    struct timespec until;

    while (!q->stop && q->fill.len == 0 && q->dropped_unsent == 0)
        pthread_cond_wait(&q->cv, &q->mu);
    if (q->stop)
        return q->fill.len > 0 || q->dropped_unsent > 0;
    until = monotime_at(monotime_now() + (long long)q->flush_ms * MONOTIME_NS_PER_MS);
    while (!q->wake && !q->stop)
        if (pthread_cond_timedwait(&q->cv, &q->mu, &until) == ETIMEDOUT)
            break;
    return 1;
}

static void *logq_main(void *arg)
{
    struct logq *q = arg;
    struct logq_buf out;
    unsigned long long dropped;

    pthread_mutex_lock(&q->mu);
    while (logq_wait_batch(q)) {
        out = q->fill;
        q->fill = q->spare;
        q->spare = out;
        dropped = q->dropped_unsent;
        q->dropped_unsent = 0;
        q->wake = 0;
        pthread_mutex_unlock(&q->mu);
        q->sink(q->ctx, out.mem, out.len, dropped);
        pthread_mutex_lock(&q->mu);
        q->spare.len = 0;
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static int logq_init_sync(struct logq *q)
{
    if (monotime_cond_init(&q->cv))
        return ERR_FAIL;
    if (pthread_mutex_init(&q->mu, NULL)) {
        pthread_cond_destroy(&q->cv);
        return ERR_FAIL;
    }
    return ERR_OK;
}

static void logq_free(struct logq *q)
{
    free(q->fill.mem);
    free(q->spare.mem);
    free(q);
}

int logq_init(struct logq **out, size_t cap, unsigned flush_ms, logq_sink sink, void *ctx,
              char *err, size_t errlen)
{
    struct logq *q = calloc(1, sizeof(*q));

    *out = NULL;
    if (!q)
        return err_set(err, errlen, ERR_NOMEM, "log queue: out of memory");
    /* Buffers this large come from mmap: only the pages a burst touches
     * become resident. */
    q->fill.mem = malloc(cap);
    q->spare.mem = malloc(cap);
    if (!q->fill.mem || !q->spare.mem) {
        logq_free(q);
        return err_set(err, errlen, ERR_NOMEM, "log queue: out of memory for 2 x %zu bytes", cap);
    }
    if (logq_init_sync(q)) {
        logq_free(q);
        return err_set(err, errlen, ERR_FAIL, "log queue: cannot make its lock");
    }
    q->cap = cap;
    q->flush_ms = flush_ms;
    q->sink = sink;
    q->ctx = ctx;
    atomic_init(&q->dropped, 0);
    if (pthread_create(&q->thread, NULL, logq_main, q)) {
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
        logq_free(q);
        return err_set(err, errlen, ERR_FAIL, "log queue: cannot start its writer thread");
    }
    q->magic = LOGQ_MAGIC;
    *out = q;
    return ERR_OK;
}

int logq_push(struct logq *q, const char *line, size_t len, int urgent)
{
    int was_empty;

    assert(q->magic == LOGQ_MAGIC);
    pthread_mutex_lock(&q->mu);
    if (len > q->cap - q->fill.len) {
        q->dropped_unsent++;
        atomic_fetch_add_explicit(&q->dropped, 1, memory_order_relaxed);
        pthread_mutex_unlock(&q->mu);
        return len > q->cap ? ERR_TOO_BIG : ERR_BUSY;
    }
    was_empty = q->fill.len == 0;
    memcpy(q->fill.mem + q->fill.len, line, len);
    q->fill.len += len;
    /* Signals only at the edges: the first line (starts the clock), a full
     * batch, an urgent line. In between the writer sleeps undisturbed. */
    if (!q->wake && (urgent || q->fill.len >= LOGQ_BATCH)) {
        q->wake = 1;
        pthread_cond_signal(&q->cv);
    } else if (was_empty) {
        pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return ERR_OK;
}

unsigned long long logq_dropped(struct logq *q)
{
    assert(q->magic == LOGQ_MAGIC);
    return atomic_load_explicit(&q->dropped, memory_order_relaxed);
}

int logq_stop(struct logq **qp, unsigned timeout_ms)
{
    struct logq *q = *qp;
    struct timespec until;

    if (!q)
        return ERR_OK;
    assert(q->magic == LOGQ_MAGIC);
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    until = logq_realtime_in(timeout_ms);
    /* A reader that never reads again must not keep the process from
     * exiting: the writer is left blocked, and so is its memory. */
    if (pthread_timedjoin_np(q->thread, NULL, &until) != 0)
        return ERR_BUSY;
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    q->magic = 0;
    logq_free(q);
    *qp = NULL;
    return ERR_OK;
}
