/* filewatch: calls back when a file's content may have changed.
 *
 * A thread waits on inotify for the file's directory (which sees in-place
 * writes, renames over the file, and the kubelet's atomic "..data" symlink
 * swap for ConfigMap and Secret volumes) and, as a safety net for file
 * systems without inotify events, also wakes every interval. Each time it
 * compares the file's identity (following symlinks) with the last one seen and
 * calls changed() only when one differs, so the callback runs once per version,
 * on the watcher's thread.
 *
 * A version counts as seen from the moment its identity is recorded, so a
 * caller must record first and load after: filewatch_load_and_start() does
 * both in that order. Loading first and then calling filewatch_start() misses
 * a version written in between until the next change.
 *
 * A zeroed struct filewatch is a watch that never started: filewatch_stop()
 * on it does nothing.
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
    int armed; /* start set the descriptors below (to -1 or open ones) */
    int inotify_fd;
    int stop_pipe[2];
    struct fsutil_identity last[FILEWATCH_MAX_PATHS];
};

/* Records the files' current identities and starts the thread; changed()
 * runs once for a change that touches several of the paths at once (a
 * certificate and its key). A caller that loads the files itself loads them
 * after this returns (changed() may then run at the same time). Returns 0,
 * or -1 with a message in err; on error w is safe to stop. */
int filewatch_start(struct filewatch *w, const char *const *paths, size_t n_paths, int interval_ms,
                    void (*changed)(void *ctx), void *ctx, char *err, size_t errlen);
/* Records the identities, calls changed() once on the caller's thread (the
 * first load), then starts the thread: a version written from the recording
 * on, even while that first load reads, is loaded again by the thread. */
int filewatch_load_and_start(struct filewatch *w, const char *const *paths, size_t n_paths,
                             int interval_ms, void (*changed)(void *ctx), void *ctx, char *err,
                             size_t errlen);
/* Stops and joins the thread and closes what start opened; safe on a zeroed
 * watch, one whose start failed, and one already stopped. */
void filewatch_stop(struct filewatch *w);

#endif
