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
 * A version counts as seen from the moment its identity is recorded, so the
 * identities are recorded first and the files loaded after: filewatch_init()
 * records them (the thread does not run yet), the caller loads the files,
 * and filewatch_start() starts the thread, which first compares the
 * identities again. A version written while the caller loaded is so loaded
 * again at once, never missed until the next change.
 *
 *   filewatch_init(&w, paths, n, interval_ms, changed, ctx, err, errlen);
 *   changed(ctx);                  (the first load, on the caller's thread)
 *   filewatch_start(w, err, errlen);
 *   ...
 *   filewatch_stop(&w);            (after a failure anywhere above too)
 */
#ifndef RDMA_WEBHOOK_FILEWATCH_H
#define RDMA_WEBHOOK_FILEWATCH_H

#include <stddef.h>

#define FILEWATCH_MAX_PATHS 4

/* Opaque: the paths (copied), their last identities, the descriptors and
 * the thread. */
struct filewatch;

/* Records the files' current identities and opens what the watch needs,
 * without starting the thread; changed() will run once for a change that
 * touches several of the paths at once (a certificate and its key). ERR_OK
 * with *out set; or ERR_* with a message in err and *out NULL. */
int filewatch_init(struct filewatch **out, const char *const *paths, size_t n_paths,
                   int interval_ms, void (*changed)(void *ctx), void *ctx, char *err,
                   size_t errlen);
/* Starts the thread (once per watch): it compares the identities with those
 * recorded at init first, then waits for changes. ERR_OK, or ERR_FAIL with a
 * message in err (the watch can still be stopped). */
int filewatch_start(struct filewatch *w, char *err, size_t errlen);
/* Stops and joins the thread if it started, closes what init opened, frees
 * the watch and sets *w to NULL. A no-op on NULL. */
void filewatch_stop(struct filewatch **w);

#endif
