/* store: the profiles snapshot that requests share, and its atomic swap.
 *
 * Readers take a reference (store_acquire), use the snapshot for one request
 * and drop it (store_release); a new version is validated before it is
 * published, and the old snapshot is freed by whichever reader drops the last
 * reference. A version that fails validation is logged and dropped, and the
 * previous one keeps serving (the log line says so only when there is one).
 *
 * Every source (the profiles file on a change or a SIGHUP, the ConfigMap
 * watch) publishes through store_reload(): the read of a version and its
 * publication happen under one lock for the whole store, so of two reloads
 * racing, the one that read later publishes later, and the newest version
 * read is always the one left serving. All sources validate alike.
 *
 * Problems are logged here, not returned as text: a rejected version has one
 * log line per problem (each naming the profile and field), which no single
 * err message could hold. The functions still return ERR_* codes, for a
 * caller that acts on the outcome.
 *
 * Stale: the store is stale while the version serving is not the source's
 * current one, as far as the store knows: a version read from the source was
 * refused (store_reload, store_publish, store_reject) while an older one
 * serves, the source is gone (store_set_stale), or the version serving came
 * from elsewhere (store_publish_fallback: the last good copy, at a start
 * where the source's version was invalid). The next version published from
 * the source clears it. The server tells every admission and the metrics;
 * lastgood repeats an error line while it lasts.
 *
 * Lifecycle: store_init() makes the (opaque) store, empty; store_stop()
 * undoes it.
 */
#ifndef RDMA_WEBHOOK_STORE_H
#define RDMA_WEBHOOK_STORE_H

#include "base/dynbuf.h"
#include "host/log.h"

#include <stddef.h>

/* The most bytes a version of the profiles may have. */
#define STORE_TEXT_MAX (1u << 20)

/* What a log line says instead of "the previous version keeps serving"
 * when there is none: before the first valid version. */
#define STORE_NONE_YET "none loaded yet: /mutate answers 503 until a valid version loads"
/* What it says instead, at warn level, where a copy is tried next
 * (store_set_fallback): the 503 is not known yet. */
#define STORE_FALLBACK_NEXT "none loaded yet: trying the last good copy"

struct profiles;

/* Opaque: the current snapshot, the counts and the locks. */
struct store;

/* One published version, as readers see it. (Its reference count is kept
 * around it, in store.c.) */
struct store_snapshot {
    struct profiles *ps;
    unsigned long generation; /* 1 for the first version published */
    /* Unix seconds: when this version was first loaded, here or (for a
     * fallback) by the replica that saved the copy. */
    long long loaded_at;
};

/* Where store_reload() reads a version. read() puts the version's text into
 * text (capped at STORE_TEXT_MAX) and returns ERR_OK; or returns ERR_* with
 * a one-line message in err, and the previous version keeps serving. origin
 * names the source in log lines (a path, "configmap NS/NAME"). A test's
 * fake is a read function of its own. */
struct store_source {
    const char *origin;
    int (*read)(void *ctx, struct dynbuf *text, char *err, size_t errlen);
    void *ctx;
};

/* The source that reads the file at path (which must outlive the source);
 * origin is the path. */
struct store_source store_source_file(const char *path);

/* ERR_OK with *out set, or ERR_* with a message in err and *out NULL; log
 * must outlive the store. */
int store_init(struct store **out, struct log *log, char *err, size_t errlen);
/* Drops the current snapshot (one a reader still holds lives until
 * released) and frees the store; sets *s to NULL. A no-op on NULL. */
void store_stop(struct store **s);

/* Reads a version from src and, when it is valid, makes it the current
 * snapshot, serialised with every other reload and publish. Returns ERR_OK
 * (published, and logged); the read's code when it failed (logged as
 * "cannot read profiles"); ERR_FAIL for an invalid version (logged with
 * every problem, and counted as rejected); ERR_NOMEM (logged). */
int store_reload(struct store *s, const struct store_source *src);

/* store_reload() of a text already in memory (a watch event's). */
int store_publish(struct store *s, const char *text, size_t len, const char *origin);

/* Records a version refused before it could be parsed (a ConfigMap without
 * the profiles key): logged and counted like a rejected one. */
void store_reject(struct store *s, const char *origin, const char *problem);

/* on: the source tries a last good copy when a version of its is refused
 * before any serves (cmwatch with an enabled lastgood), so the store logs
 * that refusal at warn level with STORE_FALLBACK_NEXT, and the fallback
 * logs what came of it: serving the copy, or, with no valid copy, the
 * error that /mutate answers 503. Off (as made), at error level with
 * STORE_NONE_YET. Each problem line stays at error level either way. */
void store_set_fallback(struct store *s, int on);

/* Publishes a version that is not the source's current one (the last good
 * copy): validated like any other; when published, the store is stale and
 * the snapshot's loaded_at is the one given. Returns as store_publish(). */
int store_publish_fallback(struct store *s, const char *text, size_t len, const char *origin,
                           long long loaded_at);

/* The source has no version any more (a deleted ConfigMap): stale when a
 * version serves. */
void store_set_stale(struct store *s);

/* 1 while stale (see the top); lock-free, for every admission. */
int store_stale(struct store *s);

/* The current snapshot with a reference taken, or NULL before the first
 * valid version. */
struct store_snapshot *store_acquire(struct store *s);
/* Drops a reference from store_acquire(); NULL is ignored. */
void store_release(struct store_snapshot *snap);

int store_ready(struct store *s);
/* Versions published and refused since start, for metrics. */
unsigned long store_loaded(struct store *s);
unsigned long store_rejected(struct store *s);

#endif
