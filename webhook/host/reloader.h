/* reloader: one thread that runs a reload when asked, so that the asker
 * never waits for it.
 *
 * serve's main thread only waits for signals: a SIGHUP's reload of the
 * profiles and the certificate runs here, and a reload stuck in a read (a
 * hung file system) cannot keep the main thread from taking SIGTERM.
 * reloader_kick() asks for one run of reload(ctx); kicks that come while a
 * run is going are folded into one more run after it (the files are read as
 * they are then). reloader_stop() waits for the run in progress, if any,
 * and drops those asked for and not begun.
 *
 * Object shape (webhook/README.md, Lifecycle): reloader_init starts the
 * thread, reloader_stop joins it.
 */
#ifndef RDMA_WEBHOOK_RELOADER_H
#define RDMA_WEBHOOK_RELOADER_H

#include <stddef.h>

struct reloader;

/* ERR_OK with *out set, or ERR_NOMEM/ERR_FAIL with a message in err and
 * *out NULL. */
int reloader_init(struct reloader **out, void (*reload)(void *ctx), void *ctx, char *err,
                  size_t errlen);
/* Asks for a run; never waits. */
void reloader_kick(struct reloader *r);
/* Joins the thread (after the run in progress), frees r, sets *r to NULL.
 * A no-op on NULL. */
void reloader_stop(struct reloader **r);

#endif
