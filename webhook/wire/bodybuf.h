/* bodybuf: request bodies in memory, under one budget for the whole server.
 *
 * A body's buffer grows with the bytes that arrive; a declared
 * Content-Length only caps it (and keeps the last doubling from overshooting
 * it), so a client that declares 8 MiB and sends a few bytes holds a few
 * bytes. Every growth is charged to the pool first, and a body may grow only
 * if, after it grows, the pool still has at least the body's new size free:
 * growing to s bytes is refused once the other bodies hold more than
 * limit - 2s. So no body holds more than half the budget, and large bodies
 * held open cannot take the room of small ones: a review of a few KiB still
 * fits beside them.
 *
 * The pool counts buffer capacity, not bytes received, so what it reports is
 * what the buffers take (the one terminator byte of each buffer aside).
 *
 * Return values (err.h): ERR_OK, ERR_TOO_BIG (over the body's cap: 413),
 * ERR_NOMEM (malloc failed: 500), ERR_BUSY (the pool has no room now: 503,
 * try later). After an error the body is as it was.
 */
#ifndef RDMA_WEBHOOK_BODYBUF_H
#define RDMA_WEBHOOK_BODYBUF_H

#include "base/dynbuf.h"
#include "base/err.h"

#include <stdatomic.h>
#include <stddef.h>

struct bodybuf_pool {
    size_t limit;
    atomic_size_t used;
    atomic_ullong refused; /* bodies refused for want of room */
};

struct bodybuf {
    struct dynbuf buf;
    size_t charged; /* what this body holds of its pool */
};

void bodybuf_pool_init(struct bodybuf_pool *p, size_t limit);

/* Before a body is read: whether one of size bytes would fit now (ERR_OK or
 * ERR_BUSY, counted as refused). Nothing is reserved. */
int bodybuf_admit(struct bodybuf_pool *p, size_t size);

/* An empty body that may grow to cap bytes; nothing is allocated yet. */
void bodybuf_init(struct bodybuf *b, size_t cap);
int bodybuf_add(struct bodybuf *b, struct bodybuf_pool *p, const void *data, size_t len);
/* Frees the buffer and gives its share back to p. */
void bodybuf_free(struct bodybuf *b, struct bodybuf_pool *p);

static inline const char *bodybuf_ptr(const struct bodybuf *b)
{
    return dynbuf_ptr(&b->buf);
}
static inline size_t bodybuf_len(const struct bodybuf *b)
{
    return dynbuf_len(&b->buf);
}
static inline size_t bodybuf_pool_used(struct bodybuf_pool *p)
{
    return atomic_load(&p->used);
}

#endif
