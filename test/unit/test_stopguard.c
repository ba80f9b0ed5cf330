/*
 * Unit tests for webhook/host/stopguard.c: a step still running at the bound is
 * named to the callback, once; a stop over within the bound calls nothing;
 * the step before any is named is "stop"; stop is a no-op on NULL.
 */
#include "unit.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "host/stopguard.h"

struct stuck_seen {
    pthread_mutex_t mu;
    int calls;
    char step[64];
    int release; /* the write end of a pipe the stuck step waits on; -1: none */
};

static void on_stuck(void *ctx, const char *step)
{
    struct stuck_seen *s = ctx;

    pthread_mutex_lock(&s->mu);
    s->calls++;
    snprintf(s->step, sizeof(s->step), "%s", step);
    pthread_mutex_unlock(&s->mu);
    if (s->release >= 0)
        assert_int_equal(write(s->release, "x", 1), 1);
}

/* Runs a stop with the guard at bound_ms: names the steps, then blocks in
 * the last one until the guard's callback lets it go (as a join of a thread
 * stuck in a read would block for ever), then stops the guard. */
static void stop_stuck_in(struct stuck_seen *s, unsigned bound_ms, const char *const *steps,
                          size_t n)
{
    struct stopguard *g = NULL;
    char err[ERR_LEN] = "", c;
    int p[2];

    assert_int_equal(pipe(p), 0);
    s->release = p[1];
    assert_int_equal(stopguard_init(&g, bound_ms, on_stuck, s, err, sizeof(err)), ERR_OK);
    for (size_t i = 0; i < n; i++)
        stopguard_step(g, steps[i]);
    assert_int_equal(read(p[0], &c, 1), 1);
    stopguard_step(g, "after");
    stopguard_stop(&g);
    assert_null(g);
    close(p[0]);
    close(p[1]);
}

TEST(test_the_stuck_step_is_named)
{
    static const char *const steps[] = {"server", "cmwatch"};
    struct stuck_seen s = {PTHREAD_MUTEX_INITIALIZER, 0, "", -1};

    stop_stuck_in(&s, 100, steps, 2);
    assert_int_equal(s.calls, 1);
    assert_string_equal(s.step, "cmwatch");
}

TEST(test_the_first_step_is_stop)
{
    struct stuck_seen s = {PTHREAD_MUTEX_INITIALIZER, 0, "", -1};

    stop_stuck_in(&s, 10, NULL, 0);
    assert_int_equal(s.calls, 1);
    assert_string_equal(s.step, "stop");
}

/* A stop within the bound (a minute: far more than these steps take)
 * calls nothing, and stop does not wait for the bound. */
TEST(test_a_stop_in_time_calls_nothing)
{
    struct stuck_seen s = {PTHREAD_MUTEX_INITIALIZER, 0, "", -1};
    struct stopguard *g = NULL;

    assert_int_equal(stopguard_init(&g, 60000, on_stuck, &s, NULL, 0), ERR_OK);
    stopguard_step(g, "server");
    stopguard_step(g, "events");
    stopguard_stop(&g);
    assert_null(g);
    assert_int_equal(s.calls, 0);
    stopguard_stop(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_stuck_step_is_named),
        cmocka_unit_test(test_the_first_step_is_stop),
        cmocka_unit_test(test_a_stop_in_time_calls_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
