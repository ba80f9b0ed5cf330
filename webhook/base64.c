#include "base64.h"

static const char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_append(struct dynbuf *out, const void *data, size_t len)
{
    const unsigned char *in = data;
    char quad[4];
    size_t i;
    int rc = 0;

    for (i = 0; i + 3 <= len && !rc; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];

        quad[0] = base64_alphabet[v >> 18];
        quad[1] = base64_alphabet[(v >> 12) & 63];
        quad[2] = base64_alphabet[(v >> 6) & 63];
        quad[3] = base64_alphabet[v & 63];
        rc = dynbuf_add(out, quad, 4);
    }
    if (rc || i == len)
        return rc;
    {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0);

        quad[0] = base64_alphabet[v >> 18];
        quad[1] = base64_alphabet[(v >> 12) & 63];
        quad[2] = i + 1 < len ? base64_alphabet[(v >> 6) & 63] : '=';
        quad[3] = '=';
        return dynbuf_add(out, quad, 4);
    }
}
