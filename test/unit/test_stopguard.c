/*
 * Unit tests for webhook/stopguard.c: a step still running at the bound is
 * named to the callback, once; a stop over within the bound calls nothing;
 * the step before any is named is "stop"; stop is a no-op on NULL.
 */
#include "unit.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "stopguard.h"

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

/* A step that blocks until the guard's callback lets it go, as a join of a
 * thread stuck in a read would block for ever. */
static void stuck_step(int fd)
{
    char c;

    assert_int_equal(read(fd, &c, 1), 1);
}

TEST(test_the_stuck_step_is_named)
{
    struct stuck_seen s = {PTHREAD_MUTEX_INITIALIZER, 0, "", -1};
    struct stopguard *g = NULL;
    char err[ERR_LEN] = "";
    int p[2];

    assert_int_equal(pipe(p), 0);
    s.release = p[1];
    assert_int_equal(stopguard_init(&g, 100, on_stuck, &s, err, sizeof(err)), ERR_OK);
    stopguard_step(g, "server");
    stopguard_step(g, "cmwatch");
    stuck_step(p[0]);
    stopguard_step(g, "lastgood");
    stopguard_stop(&g);
    assert_null(g);
    assert_int_equal(s.calls, 1);
    assert_string_equal(s.step, "cmwatch");
    close(p[0]);
    close(p[1]);
}

TEST(test_the_first_step_is_stop)
{
    struct stuck_seen s = {PTHREAD_MUTEX_INITIALIZER, 0, "", -1};
    struct stopguard *g = NULL;
    int p[2];

    assert_int_equal(pipe(p), 0);
    s.release = p[1];
    assert_int_equal(stopguard_init(&g, 10, on_stuck, &s, NULL, 0), ERR_OK);
    stuck_step(p[0]);
    stopguard_stop(&g);
    assert_int_equal(s.calls, 1);
    assert_string_equal(s.step, "stop");
    close(p[0]);
    close(p[1]);
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
