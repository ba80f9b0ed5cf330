#include "base64.h"

#include <stdint.h>

static const char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_append(struct dynbuf *out, const void *data, size_t len)
{
    const unsigned char *in = data;
    size_t start = out->len, n = (len + 2) / 3 * 4, i;
    char *o;
    int rc;

    /* Room for the whole encoding at once, then written in place. */
    if (len > (SIZE_MAX - 2) / 4 * 3)
        return DYNBUF_TOO_BIG;
    rc = dynbuf_grow(out, n);
    if (rc)
        return rc;
    o = out->mem + start;
    for (i = 0; i + 3 <= len; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];

        *o++ = base64_alphabet[v >> 18];
        *o++ = base64_alphabet[(v >> 12) & 63];
        *o++ = base64_alphabet[(v >> 6) & 63];
        *o++ = base64_alphabet[v & 63];
    }
    if (i < len) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0);

        *o++ = base64_alphabet[v >> 18];
        *o++ = base64_alphabet[(v >> 12) & 63];
        *o++ = i + 1 < len ? base64_alphabet[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    return 0;
}
