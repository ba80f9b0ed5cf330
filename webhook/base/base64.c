#include "base/base64.h"

#include <stdint.h>
#include <string.h>

/* The character of 6-bit value x, as an integer constant expression so the
 * pair table below is built by the compiler. */
#define BASE64_CHAR(x)                                                                             \
    ((x) < 26    ? 'A' + (x)                                                                       \
     : (x) < 52  ? 'a' + (x)-26                                                                    \
     : (x) < 62  ? '0' + (x)-52                                                                    \
     : (x) == 62 ? '+'                                                                             \
                 : '/')
#define BASE64_PAIR(i)                                                                             \
    {                                                                                              \
        BASE64_CHAR((i) >> 6), BASE64_CHAR((i)&63)                                                 \
    }
#define BASE64_PAIR4(i)                                                                            \
    BASE64_PAIR(i), BASE64_PAIR((i) + 1), BASE64_PAIR((i) + 2), BASE64_PAIR((i) + 3)
#define BASE64_PAIR16(i)                                                                           \
    BASE64_PAIR4(i), BASE64_PAIR4((i) + 4), BASE64_PAIR4((i) + 8), BASE64_PAIR4((i) + 12)
#define BASE64_PAIR64(i)                                                                           \
    BASE64_PAIR16(i), BASE64_PAIR16((i) + 16), BASE64_PAIR16((i) + 32), BASE64_PAIR16((i) + 48)
#define BASE64_PAIR256(i)                                                                          \
    BASE64_PAIR64(i), BASE64_PAIR64((i) + 64), BASE64_PAIR64((i) + 128), BASE64_PAIR64((i) + 192)
#define BASE64_PAIR1024(i)                                                                         \
    BASE64_PAIR256(i), BASE64_PAIR256((i) + 256), BASE64_PAIR256((i) + 512),                       \
        BASE64_PAIR256((i) + 768)

/* Two output characters per 12 input bits: half the lookups and stores of
 * one character at a time, on the patch of every admission. 8 KiB. */
static const char base64_pairs[4096][2] = {BASE64_PAIR1024(0), BASE64_PAIR1024(1024),
                                           BASE64_PAIR1024(2048), BASE64_PAIR1024(3072)};

int base64_append(struct dynbuf *out, const void *data, size_t len)
{
    const unsigned char *in = data;
    size_t start = out->len, n = (len + 2) / 3 * 4, i;
    char *o;
    int rc;

    /* Room for the whole encoding at once, then written in place. */
    if (len > (SIZE_MAX - 2) / 4 * 3)
        return ERR_TOO_BIG;
    rc = dynbuf_grow(out, n);
    if (rc)
        return rc;
    o = out->mem + start;
    for (i = 0; i + 3 <= len; i += 3, o += 4) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];

        memcpy(o, base64_pairs[v >> 12], 2);
        memcpy(o + 2, base64_pairs[v & 4095], 2);
    }
    if (i < len) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);

        memcpy(o, base64_pairs[v >> 12], 2);
        o[2] = i + 1 < len ? base64_pairs[v & 4095][0] : '=';
        o[3] = '=';
    }
    return ERR_OK;
}
