#include "base/dynbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DYNBUF_MIN_ALLOC 64

void dynbuf_init(struct dynbuf *b, size_t cap)
{
    b->mem = NULL;
    b->len = 0;
    b->alloc = 0;
    b->cap = cap;
}

void dynbuf_free(struct dynbuf *b)
{
    free(b->mem);
    b->mem = NULL;
    b->len = 0;
    b->alloc = 0;
}

void dynbuf_reset(struct dynbuf *b)
{
    b->len = 0;
    if (b->mem)
        b->mem[0] = '\0';
}

/* Makes room for extra more bytes plus the terminator, doubling the
 * allocation (but never past what the cap can use). */
int dynbuf_reserve(struct dynbuf *b, size_t extra)
{
    size_t need, a;
    char *p;

    if (extra > b->cap - b->len || b->len + extra == SIZE_MAX)
        return ERR_TOO_BIG;
    need = b->len + extra + 1;
    if (need <= b->alloc)
        return 0;
    a = b->alloc ? b->alloc : DYNBUF_MIN_ALLOC;
    while (a < need)
        a = a > SIZE_MAX / 2 ? need : a * 2;
    if (b->cap < SIZE_MAX && a > b->cap + 1)
        a = b->cap + 1;
    p = realloc(b->mem, a);
    if (!p)
        return ERR_NOMEM;
    b->mem = p;
    b->alloc = a;
    return 0;
}

int dynbuf_grow(struct dynbuf *b, size_t len)
{
    int rc = dynbuf_reserve(b, len);

    if (rc)
        return rc;
    b->len += len;
    b->mem[b->len] = '\0';
    return 0;
}

int dynbuf_add(struct dynbuf *b, const void *data, size_t len)
{
    int rc = dynbuf_reserve(b, len);

    if (rc)
        return rc;
    if (len)
        memcpy(b->mem + b->len, data, len);
    b->len += len;
    b->mem[b->len] = '\0';
    return 0;
}

int dynbuf_addstr(struct dynbuf *b, const char *s)
{
    return dynbuf_add(b, s, strlen(s));
}

int dynbuf_addc(struct dynbuf *b, char c)
{
    return dynbuf_add(b, &c, 1);
}

int dynbuf_vprintf(struct dynbuf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    int rc;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    /* vsnprintf fails on a result past INT_MAX (EOVERFLOW), an allocation of
     * its own (ENOMEM) or a wide character it cannot convert (EILSEQ). */
    if (n < 0)
        return errno == EOVERFLOW ? ERR_TOO_BIG : errno == ENOMEM ? ERR_NOMEM : ERR_FAIL;
    rc = dynbuf_reserve(b, (size_t)n);
    if (rc)
        return rc;
    vsnprintf(b->mem + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int dynbuf_printf(struct dynbuf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = dynbuf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void dynbuf_truncate(struct dynbuf *b, size_t len)
{
    if (len >= b->len)
        return;
    b->len = len;
    b->mem[len] = '\0';
}

char *dynbuf_steal(struct dynbuf *b)
{
    char *p = b->mem;

    b->mem = NULL;
    b->len = 0;
    b->alloc = 0;
    return p;
}
