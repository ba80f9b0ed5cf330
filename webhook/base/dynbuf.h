/* dynbuf: a growing byte buffer with a mandatory size cap.
 *
 * Every buffer that holds data from the network or built for it is a dynbuf,
 * so no input can make the process allocate without bound. The contents are
 * always NUL-terminated (the terminator is not counted in len), so a dynbuf
 * can be handed to string functions and parsers directly.
 *
 * Errors (err.h): functions returning int give ERR_OK, ERR_TOO_BIG when the
 * cap would be exceeded, or ERR_NOMEM when malloc fails; dynbuf_printf also
 * gives ERR_FAIL when vsnprintf cannot convert a wide character. After an
 * error the buffer is left as it was before the call.
 */
#ifndef RDMA_WEBHOOK_DYNBUF_H
#define RDMA_WEBHOOK_DYNBUF_H

#include "base/err.h"

#include <stdarg.h>
#include <stddef.h>

struct dynbuf {
    char *mem;
    size_t len;   /* bytes used, not counting the terminator */
    size_t alloc; /* bytes allocated */
    size_t cap;   /* the most len may ever be */
};

/* Starts empty; nothing is allocated until the first add. */
void dynbuf_init(struct dynbuf *b, size_t cap);
void dynbuf_free(struct dynbuf *b);
/* Empties the buffer but keeps its memory for reuse. */
void dynbuf_reset(struct dynbuf *b);

int dynbuf_add(struct dynbuf *b, const void *data, size_t len);
/* Makes room for extra more bytes (so that adding them allocates nothing)
 * without adding any. */
int dynbuf_reserve(struct dynbuf *b, size_t extra);
/* Appends len bytes for the caller to fill in, at b->mem + the old length;
 * the terminating NUL after them is already written. */
int dynbuf_grow(struct dynbuf *b, size_t len);
int dynbuf_addstr(struct dynbuf *b, const char *s);
int dynbuf_addc(struct dynbuf *b, char c);
int dynbuf_printf(struct dynbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int dynbuf_vprintf(struct dynbuf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Drops everything from byte len on (len must not exceed the current length). */
void dynbuf_truncate(struct dynbuf *b, size_t len);

/* Gives the contents to the caller (free() them) and leaves b empty. Returns
 * NULL when the buffer is empty and nothing was ever allocated. */
char *dynbuf_steal(struct dynbuf *b);

static inline const char *dynbuf_ptr(const struct dynbuf *b)
{
    return b->mem ? b->mem : "";
}
static inline size_t dynbuf_len(const struct dynbuf *b)
{
    return b->len;
}

#endif
