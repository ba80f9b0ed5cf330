/* stopguard: a bound on a process's stop.
 *
 * A stop joins threads, and a thread stuck where no stop flag reaches it (a
 * read of a hung file system, a lock such a thread holds) would keep the
 * process alive for ever after SIGTERM. The owner names each step of its
 * stop before running it (stopguard_step); a thread of the guard's own
 * watches the clock, and when bound_ms pass from stopguard_init before
 * stopguard_stop, it calls stuck() with the name of the step still running.
 * serve's stuck() logs it and ends the process.
 *
 *   stopguard_init(&g, 10000, stuck, ctx, err, errlen);
 *   stopguard_step(g, "server");  server_stop(&srv);
 *   stopguard_step(g, "events");  events_stop(&ev, ...);
 *   stopguard_stop(&g);
 *
 * stuck() runs on the guard's thread, at most once; when it returns (a
 * test's does), that thread ends and stopguard_stop still joins it. Step
 * names are the caller's (string literals: they must outlive the guard).
 */
#ifndef RDMA_WEBHOOK_STOPGUARD_H
#define RDMA_WEBHOOK_STOPGUARD_H

#include <stddef.h>

struct stopguard;

typedef void (*stopguard_stuck_fn)(void *ctx, const char *step);

/* Starts the guard's thread; the first step is "stop" until one is named.
 * ERR_OK with *out set, or ERR_NOMEM/ERR_FAIL with a message in err and
 * *out NULL. */
int stopguard_init(struct stopguard **out, unsigned bound_ms, stopguard_stuck_fn stuck, void *ctx,
                   char *err, size_t errlen);
/* The step about to run. */
void stopguard_step(struct stopguard *g, const char *step);
/* The stop is over: wakes and joins the guard's thread, which then calls
 * nothing, frees the guard, sets *g to NULL. A no-op on NULL. */
void stopguard_stop(struct stopguard **g);

#endif
