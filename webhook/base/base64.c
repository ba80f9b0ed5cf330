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

/* The 6-bit value of c, or -1 outside the standard alphabet. */
static int base64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* One group of four characters into up to three bytes; *n the count, 0 when
 * the group is not valid (padding only at the end: last says it may be). */
static void base64_group(const char *g, int last, unsigned char out[3], int *n)
{
    int v[4], pad = 0;

    *n = 0;
    for (int i = 0; i < 4; i++) {
        v[i] = base64_value((unsigned char)g[i]);
        if (g[i] == '=' && last && i >= 2 && (i == 3 || g[3] == '=')) {
            v[i] = 0;
            pad++;
        } else if (v[i] < 0) {
            return;
        }
    }
    out[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
    out[1] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
    out[2] = (unsigned char)((v[2] & 3) << 6 | v[3]);
    *n = 3 - pad;
}

int base64_decode_append(struct dynbuf *out, const char *text, size_t len)
{
    size_t start = out->len;
    unsigned char b[3];
    int n, rc;

    if (len % 4 != 0)
        return ERR_FAIL;
    for (size_t i = 0; i < len; i += 4) {
        base64_group(text + i, i + 4 == len, b, &n);
        rc = n == 0 ? ERR_FAIL : dynbuf_add(out, b, (size_t)n);
        if (rc != ERR_OK) {
            dynbuf_truncate(out, start);
            return rc;
        }
    }
    return ERR_OK;
}
