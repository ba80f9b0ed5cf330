/* reloader: one thread that runs a reload when asked (see reloader.h). */
#include "host/reloader.h"

#include "base/err.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

/* In every live reloader and nowhere else: a stopped or stray pointer fails
 * the assert instead of corrupting memory. */
#define RELOADER_MAGIC 0x72656c64u /* "reld" */

struct reloader {
    unsigned magic;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int asked, stop;
    void (*reload)(void *ctx);
    void *ctx;
    pthread_t thread;
};

static void *reloader_main(void *arg)
{
    struct reloader *r = arg;

    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->asked && !r->stop)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->stop)
            break;
        r->asked = 0;
        pthread_mutex_unlock(&r->mu);
        r->reload(r->ctx);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int reloader_init(struct reloader **out, void (*reload)(void *ctx), void *ctx, char *err,
                  size_t errlen)
{
    struct reloader *r = calloc(1, sizeof(*r));

    *out = NULL;
    if (!r)
        return err_set(err, errlen, ERR_NOMEM, "cannot start the reloader: out of memory");
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->reload = reload;
    r->ctx = ctx;
    r->magic = RELOADER_MAGIC;
    if (pthread_create(&r->thread, NULL, reloader_main, r) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        free(r);
        return err_set(err, errlen, ERR_FAIL, "cannot start the reloader's thread");
    }
    *out = r;
    return ERR_OK;
}

void reloader_kick(struct reloader *r)
{
    assert(r->magic == RELOADER_MAGIC);
    pthread_mutex_lock(&r->mu);
    r->asked = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void reloader_stop(struct reloader **rp)
{
    struct reloader *r = *rp;

    if (!r)
        return;
    assert(r->magic == RELOADER_MAGIC);
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    r->magic = 0;
    free(r);
    *rp = NULL;
}
