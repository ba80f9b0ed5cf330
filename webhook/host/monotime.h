/* monotime: the one monotonic clock the server measures and waits on.
 *
 * Durations, cache lifetimes and request budgets are nanoseconds on
 * CLOCK_MONOTONIC, which a wall-clock step (NTP, an admin's `date`) cannot
 * move. A condition variable made with monotime_cond_init() waits on the
 * same clock, so a deadline from monotime_at() is never cut short or
 * stretched by such a step.
 */
#ifndef RDMA_WEBHOOK_MONOTIME_H
#define RDMA_WEBHOOK_MONOTIME_H

#include <pthread.h>
#include <time.h>

#define MONOTIME_NS_PER_S  1000000000LL
#define MONOTIME_NS_PER_MS 1000000LL

/* Nanoseconds on CLOCK_MONOTONIC. */
long long monotime_now(void);

/* The timespec of a monotime_now() value, for pthread_cond_timedwait(). */
struct timespec monotime_at(long long ns);

/* pthread_cond_init() on this clock: ERR_OK, or ERR_FAIL with nothing to
 * destroy. No message, as pthread_mutex_init() has none: the one failure is
 * that there is no condition variable, and only the caller knows what it
 * was for. */
int monotime_cond_init(pthread_cond_t *cv);

#endif
