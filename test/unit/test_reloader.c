/*
 * Unit tests for webhook/host/reloader.c: a kick runs the reload on the
 * reloader's thread, never on the kicker's; kicks during a run fold into
 * one more run; a stop with nothing asked runs nothing.
 */
#include "unit.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "host/monotime.h"
#include "host/reloader.h"

struct runs {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int runs;
    int hold;   /* the first run waits until the test clears it */
    int inside; /* the first run has begun */
    pthread_t thread;
};

static void count_run(void *ctx)
{
    struct runs *r = ctx;

    pthread_mutex_lock(&r->mu);
    r->thread = pthread_self();
    r->inside = 1;
    pthread_cond_broadcast(&r->cv);
    while (r->hold)
        pthread_cond_wait(&r->cv, &r->mu);
    r->runs++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* Waits (10 s at most: a failure, not a measure) until *field reaches want. */
static void wait_for(struct runs *r, const int *field, int want)
{
    long long end = monotime_now() + 10 * MONOTIME_NS_PER_S;

    pthread_mutex_lock(&r->mu);
    while (*field < want && monotime_now() < end) {
        struct timespec at;

        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += 10 * 1000000L;
        if (at.tv_nsec >= 1000000000L) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&r->cv, &r->mu, &at);
    }
    pthread_mutex_unlock(&r->mu);
    assert_true(*field >= want);
}

#define RUNS_INIT                                                                                  \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0                            \
    }

TEST(test_a_kick_runs_on_the_reloaders_thread)
{
    struct runs r = RUNS_INIT;
    struct reloader *rl = NULL;
    char err[ERR_LEN] = "";

    assert_int_equal(reloader_init(&rl, count_run, &r, err, sizeof(err)), ERR_OK);
    reloader_kick(rl);
    wait_for(&r, &r.runs, 1);
    reloader_stop(&rl);
    assert_null(rl);
    assert_int_equal(r.runs, 1);
    assert_false(pthread_equal(r.thread, pthread_self()));
}

/* Five kicks while the first run is held: one more run after it, not five. */
TEST(test_kicks_during_a_run_fold_into_one)
{
    struct runs r = RUNS_INIT;
    struct reloader *rl = NULL;

    r.hold = 1;
    assert_int_equal(reloader_init(&rl, count_run, &r, NULL, 0), ERR_OK);
    reloader_kick(rl);
    wait_for(&r, &r.inside, 1);
    for (int i = 0; i < 5; i++)
        reloader_kick(rl);
    pthread_mutex_lock(&r.mu);
    r.hold = 0;
    pthread_cond_broadcast(&r.cv);
    pthread_mutex_unlock(&r.mu);
    wait_for(&r, &r.runs, 2);
    reloader_stop(&rl);
    assert_int_equal(r.runs, 2);
}

TEST(test_a_stop_without_a_kick_runs_nothing)
{
    struct runs r = RUNS_INIT;
    struct reloader *rl = NULL;

    assert_int_equal(reloader_init(&rl, count_run, &r, NULL, 0), ERR_OK);
    reloader_stop(&rl);
    assert_null(rl);
    assert_int_equal(r.runs, 0);
    reloader_stop(&rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_kick_runs_on_the_reloaders_thread),
        cmocka_unit_test(test_kicks_during_a_run_fold_into_one),
        cmocka_unit_test(test_a_stop_without_a_kick_runs_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
