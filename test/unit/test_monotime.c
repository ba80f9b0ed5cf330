/*
 * Unit tests for webhook/host/monotime.c: nanoseconds split into a timespec, and
 * a condition variable whose timed wait runs on the same clock as
 * monotime_now(), so a deadline taken from it is honoured.
 */
#include "unit.h"

#include <errno.h>
#include <pthread.h>

#include "base/err.h"
#include "host/monotime.h"

TEST(test_monotime_at_splits_seconds)
{
    struct timespec ts = monotime_at(3 * MONOTIME_NS_PER_S + 250 * MONOTIME_NS_PER_MS);

    assert_int_equal(ts.tv_sec, 3);
    assert_int_equal(ts.tv_nsec, 250000000L);
    ts = monotime_at(999999999LL);
    assert_int_equal(ts.tv_sec, 0);
    assert_int_equal(ts.tv_nsec, 999999999L);
}

TEST(test_monotime_now_does_not_go_back)
{
    long long a = monotime_now(), b = monotime_now();

    assert_true(a > 0);
    assert_true(b >= a);
}

/* Were the condition variable on CLOCK_REALTIME, a monotonic deadline (the
 * time since boot) would lie decades in the past and the wait would end at
 * once; were the deadline in the wrong unit, it would never end. */
TEST(test_monotime_cond_waits_until_the_deadline)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv;
    long long start = monotime_now(), deadline = start + 30 * MONOTIME_NS_PER_MS;
    struct timespec until = monotime_at(deadline);
    int rc = 0;

    assert_int_equal(monotime_cond_init(&cv), ERR_OK);
    pthread_mutex_lock(&mu);
    while (rc == 0)
        rc = pthread_cond_timedwait(&cv, &mu, &until);
    pthread_mutex_unlock(&mu);
    assert_int_equal(rc, ETIMEDOUT);
    assert_true(monotime_now() >= deadline);
    assert_true(monotime_now() - start < 10 * MONOTIME_NS_PER_S);
    pthread_cond_destroy(&cv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monotime_at_splits_seconds),
        cmocka_unit_test(test_monotime_now_does_not_go_back),
        cmocka_unit_test(test_monotime_cond_waits_until_the_deadline),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
