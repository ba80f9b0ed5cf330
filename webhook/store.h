/* store: the profiles snapshot that requests share, and its atomic swap.
 *
 * Readers take a reference (store_acquire), use the snapshot for one request
 * and drop it (store_release); a new version is validated before it is
 * published, and the old snapshot is freed by whichever reader drops the last
 * reference. A version that fails validation is logged and dropped, and the
 * previous one keeps serving. Every source (file watcher, and later the
 * Kubernetes API) publishes through store_publish(), so all of them validate
 * alike.
 */
#ifndef RDMA_WEBHOOK_STORE_H
#define RDMA_WEBHOOK_STORE_H

#include "log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

struct profiles;

struct store_snapshot {
    struct profiles *ps;
    unsigned long generation;
    atomic_int refs;
};

struct store {
    pthread_mutex_t mu;
    struct store_snapshot *cur; /* NULL until a valid version was published */
    unsigned long generation;
    unsigned long rejected; /* versions refused since start */
    struct log *log;
};

int store_init(struct store *s, struct log *log);
void store_stop(struct store *s);

/* Validates text and, when valid, makes it the current snapshot. Returns 0,
 * or -1 (invalid, logged with every problem; or out of memory). */
int store_publish(struct store *s, const char *text, size_t len, const char *origin);

/* Records a version refused before it could be parsed (e.g. a ConfigMap
 * without the profiles key): logged and counted like a rejected one. */
void store_reject(struct store *s, const char *origin, const char *problem);

/* The current snapshot with a reference taken, or NULL before the first
 * valid version. */
struct store_snapshot *store_acquire(struct store *s);
void store_release(struct store_snapshot *snap);

int store_ready(struct store *s);
/* Versions published and refused since start, for metrics. */
unsigned long store_loaded(struct store *s);
unsigned long store_rejected(struct store *s);

#endif
