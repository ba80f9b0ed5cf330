/* filewatch: calls back when a file's content may have changed.
 *
 * A thread waits on inotify for the file's directory (which sees in-place
 * writes, renames over the file, and the kubelet's atomic "..data" symlink
 * swap for ConfigMap and Secret volumes) and, as a safety net for file
 * systems without inotify events, also wakes every interval. Each time it
 * compares the file's identity (following symlinks) with the last one seen and
 * calls changed() only when one differs, so the callback runs once per version,
 * on the watcher's thread.
 */
#ifndef RDMA_WEBHOOK_FILEWATCH_H
#define RDMA_WEBHOOK_FILEWATCH_H

#include "fsutil.h"

#include <pthread.h>
#include <stddef.h>

#define FILEWATCH_MAX_PATHS 4

struct filewatch {
    const char *paths[FILEWATCH_MAX_PATHS];
    size_t n_paths;
    int interval_ms;
    void (*changed)(void *ctx);
    void *ctx;
    /* Private. */
    pthread_t thread;
    int started;
    int inotify_fd;
    int stop_pipe[2];
    struct fsutil_identity last[FILEWATCH_MAX_PATHS];
};

/* Records the files' current identities (the caller has just loaded them)
 * and starts the thread; changed() runs once for a change that touches
 * several of the paths at once (a certificate and its key). Returns 0, or -1
 * with a message in err. */
int filewatch_start(struct filewatch *w, const char *const *paths, size_t n_paths, int interval_ms,
                    void (*changed)(void *ctx), void *ctx, char *err, size_t errlen);
/* Stops and joins the thread; safe on a watch that never started. */
void filewatch_stop(struct filewatch *w);

#endif
