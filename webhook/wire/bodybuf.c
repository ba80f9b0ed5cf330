#include "wire/bodybuf.h"

#include <stdint.h>

/* dynbuf's first allocation; see bodybuf_next(). */
#define BODYBUF_MIN_ALLOC 64

void bodybuf_pool_init(struct bodybuf_pool *p, size_t limit)
{
    p->limit = limit;
    atomic_init(&p->used, 0);
    atomic_init(&p->refused, 0);
}

/* Takes grow more bytes for a body that will then hold size, if the pool
 * keeps size free after that: others + 2 * size <= limit. */
static int bodybuf_take(struct bodybuf_pool *p, size_t grow, size_t size)
{
    size_t used = atomic_load(&p->used);

    do {
        if (used + grow > p->limit || size > (p->limit - used - grow)) {
            atomic_fetch_add(&p->refused, 1);
            return ERR_BUSY;
        }
    } while (!atomic_compare_exchange_weak(&p->used, &used, used + grow));
    return ERR_OK;
}

int bodybuf_admit(struct bodybuf_pool *p, size_t size)
{
    size_t used = atomic_load(&p->used);

    if (size <= p->limit / 2 && used <= p->limit - 2 * size)
        return ERR_OK;
    atomic_fetch_add(&p->refused, 1);
    return ERR_BUSY;
}

void bodybuf_init(struct bodybuf *b, size_t cap)
{
    dynbuf_init(&b->buf, cap);
    b->charged = 0;
}

/* What the buffer can hold without the terminator. */
static size_t bodybuf_capacity(const struct dynbuf *d)
{
    return d->alloc ? d->alloc - 1 : 0;
}

/* What the buffer will be able to hold once it holds need bytes: as
 * dynbuf_reserve() grows it, doubling the allocation (from 64 bytes) until
 * need and the terminator fit, never past the cap. Should dynbuf ever grow
 * otherwise, the charge is still settled to the real size afterwards. */
static size_t bodybuf_next(const struct dynbuf *d, size_t need)
{
    size_t a = d->alloc ? d->alloc : BODYBUF_MIN_ALLOC;

    while (a < need + 1)
        a = a > SIZE_MAX / 2 ? need + 1 : a * 2;
    if (a > d->cap + 1)
        a = d->cap + 1;
    return a - 1;
}

/* The buffer now holds what it holds: charge or give back the difference. */
static void bodybuf_settle(struct bodybuf *b, struct bodybuf_pool *p)
{
    size_t now = bodybuf_capacity(&b->buf);

    if (now > b->charged)
        atomic_fetch_add(&p->used, now - b->charged);
    else
        atomic_fetch_sub(&p->used, b->charged - now);
    b->charged = now;
}

int bodybuf_add(struct bodybuf *b, struct bodybuf_pool *p, const void *data, size_t len)
{
    struct dynbuf *d = &b->buf;
    size_t next;
    int rc;

    if (len > d->cap - d->len)
        return ERR_TOO_BIG;
    if (d->len + len > bodybuf_capacity(d)) {
        next = bodybuf_next(d, d->len + len);
        if (bodybuf_take(p, next - b->charged, next))
            return ERR_BUSY;
        b->charged = next;
    }
    rc = dynbuf_add(d, data, len);
    bodybuf_settle(b, p);
    return rc;
}

void bodybuf_free(struct bodybuf *b, struct bodybuf_pool *p)
{
    dynbuf_free(&b->buf);
    bodybuf_settle(b, p);
}
