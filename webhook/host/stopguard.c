/* stopguard: a bound on a process's stop (see stopguard.h). */
#include "host/stopguard.h"

#include "base/err.h"
#include "host/monotime.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* In every live guard and nowhere else: a stopped or stray pointer fails
 * the assert instead of corrupting memory. */
#define STOPGUARD_MAGIC 0x73746f70u /* "stop" */

struct stopguard {
    unsigned magic;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long long deadline; /* monotime_now() when the stop is over its bound */
    const char *step;
    int done;
    stopguard_stuck_fn stuck;
    void *ctx;
    pthread_t thread;
};

static void *stopguard_main(void *arg)
{
    struct stopguard *g = arg;
    const char *step = NULL;

    pthread_mutex_lock(&g->mu);
    while (!g->done && monotime_now() < g->deadline) {
        struct timespec at = monotime_at(g->deadline);

        pthread_cond_timedwait(&g->cv, &g->mu, &at);
    }
    if (!g->done)
        step = g->step;
    pthread_mutex_unlock(&g->mu);
    /* Outside the lock: stuck() may block in its own write, and the stop
     * must not wait for it in stopguard_step. */
    if (step)
        g->stuck(g->ctx, step);
    return NULL;
}

int stopguard_init(struct stopguard **out, unsigned bound_ms, stopguard_stuck_fn stuck, void *ctx,
                   char *err, size_t errlen)
{
    struct stopguard *g = calloc(1, sizeof(*g));

    *out = NULL;
    if (!g)
        return err_set(err, errlen, ERR_NOMEM, "no bound on the stop: out of memory");
    if (monotime_cond_init(&g->cv) != 0) {
        free(g);
        return err_set(err, errlen, ERR_FAIL, "no bound on the stop: no condition variable");
    }
    pthread_mutex_init(&g->mu, NULL);
    g->deadline = monotime_now() + (long long)bound_ms * MONOTIME_NS_PER_MS;
    g->step = "stop";
    g->stuck = stuck;
    g->ctx = ctx;
    g->magic = STOPGUARD_MAGIC;
    if (pthread_create(&g->thread, NULL, stopguard_main, g) != 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return err_set(err, errlen, ERR_FAIL, "no bound on the stop: cannot start its thread");
    }
    *out = g;
    return ERR_OK;
}

void stopguard_step(struct stopguard *g, const char *step)
{
    assert(g->magic == STOPGUARD_MAGIC);
    pthread_mutex_lock(&g->mu);
    g->step = step;
    pthread_mutex_unlock(&g->mu);
}

void stopguard_stop(struct stopguard **gp)
{
    struct stopguard *g = *gp;

    if (!g)
        return;
    assert(g->magic == STOPGUARD_MAGIC);
    pthread_mutex_lock(&g->mu);
    g->done = 1;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    g->magic = 0;
    free(g);
    *gp = NULL;
}
