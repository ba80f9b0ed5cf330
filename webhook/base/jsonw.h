/* jsonw: writes JSON text into a dynbuf.
 *
 * Building responses and patches as text avoids a tree of small allocations
 * per request. The writer keeps the first error and ignores every later call,
 * so a caller writes a whole document and checks jsonw_error() once at the
 * end: ERR_OK, ERR_TOO_BIG (out's cap was reached) or ERR_NOMEM (out could
 * not grow), the codes of err.h, so a caller can answer each as it should.
 * Punctuation between members is the caller's: jsonw_key() and jsonw_str()
 * do not add commas.
 */
#ifndef RDMA_WEBHOOK_JSONW_H
#define RDMA_WEBHOOK_JSONW_H

#include "base/dynbuf.h"
#include "base/err.h"

#include <stddef.h>

struct jsonw {
    struct dynbuf *out;
    int err;
};

void jsonw_init(struct jsonw *w, struct dynbuf *out);
static inline int jsonw_error(const struct jsonw *w)
{
    return w->err;
}

/* Raw text, copied as is (punctuation, or JSON already serialized). */
void jsonw_raw(struct jsonw *w, const char *s);
void jsonw_rawn(struct jsonw *w, const char *s, size_t n);
/* The longest escape of one byte: \u00XX. */
#define JSONW_ESCAPE_MAX 6

/* How many leading bytes of s[0..n) need no escape; n when none does.
 * Checks eight bytes a step: every name, value and path of the patch and
 * every log field passes through here. */
size_t jsonw_plain_prefix(const char *s, size_t n);

/* Writes the escape of byte c to out and returns its length, or returns 0
 * when c needs none. Shared with the logger, so both agree on JSON. */
size_t jsonw_escape_byte(unsigned char c, char out[JSONW_ESCAPE_MAX]);

/* A quoted string with every character JSON requires escaped. */
void jsonw_str(struct jsonw *w, const char *s);
void jsonw_strn(struct jsonw *w, const char *s, size_t n);
/* "key": */
void jsonw_key(struct jsonw *w, const char *k);
void jsonw_int(struct jsonw *w, long long v);
void jsonw_bool(struct jsonw *w, int v);

#endif
