#include "host/monotime.h"

#include "base/err.h"

long long monotime_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * MONOTIME_NS_PER_S + ts.tv_nsec;
}

struct timespec monotime_at(long long ns)
{
    return (struct timespec){(time_t)(ns / MONOTIME_NS_PER_S), (long)(ns % MONOTIME_NS_PER_S)};
}

int monotime_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t attr;
    int rc = ERR_FAIL;

    if (pthread_condattr_init(&attr))
        return ERR_FAIL;
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 && pthread_cond_init(cv, &attr) == 0)
        rc = ERR_OK;
    pthread_condattr_destroy(&attr);
    return rc;
}
