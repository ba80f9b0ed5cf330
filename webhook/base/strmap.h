/* strmap: a hash index from byte strings to pointers, with a mandatory cap.
 *
 * Lookups by a key that a peer chose (a ConfigMap's keys, "namespace/name"
 * of objects in an input) must not cost a scan of everything held: a get is
 * one hash and, on average, about one key comparison. Open addressing with
 * linear probing, at most half full; the hash is seeded by the caller, so
 * that a caller facing chosen keys can pick a seed they cannot know.
 *
 * The map does not copy keys: each key (and value) must outlive its entry.
 * Every key compared on a get or a put is counted (strmap.compares), so a
 * test can check the work done, not the time taken.
 *
 * Errors (err.h): strmap_put returns ERR_OK, ERR_FAIL when the key is there
 * already (its value is left as it was: the first one put wins), ERR_TOO_BIG
 * past max keys, or ERR_NOMEM. The map is left as it was after an error.
 */
#ifndef RDMA_WEBHOOK_STRMAP_H
#define RDMA_WEBHOOK_STRMAP_H

#include "base/err.h"

#include <stddef.h>

struct strmap_slot {
    const char *key; /* NULL: a free slot */
    size_t len;
    unsigned long long hash;
    void *value;
};

struct strmap {
    struct strmap_slot *slots;
    size_t cap; /* slots: 0 or a power of two */
    size_t n;   /* keys held */
    size_t max; /* the most keys it may hold */
    unsigned long long seed;
    unsigned long long compares; /* keys compared by gets and puts, since init */
};

/* Starts empty, for at most max keys; nothing is allocated until a put. */
void strmap_init(struct strmap *m, size_t max, unsigned long long seed);
void strmap_free(struct strmap *m);

int strmap_put(struct strmap *m, const char *key, size_t len, void *value);
/* The value of key, or NULL when the map lacks it. */
void *strmap_get(struct strmap *m, const char *key, size_t len);
/* Removes key: 1 when it was there, 0 when not. */
int strmap_del(struct strmap *m, const char *key, size_t len);
/* Bytes the map has allocated (for a caller that budgets its memory). */
size_t strmap_bytes(const struct strmap *m);

#endif
