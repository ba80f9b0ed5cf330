#include "decimal.h"

size_t decimal_ll(char *out, long long v)
{
    char tmp[DECIMAL_MAX];
    /* In unsigned arithmetic, so LLONG_MIN has a magnitude too. */
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    size_t n = 0, len = 0;

    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        out[len++] = '-';
    while (n)
        out[len++] = tmp[--n];
    return len;
}

void decimal_pad(char *out, unsigned v, unsigned width)
{
    while (width--) {
        out[width] = (char)('0' + v % 10);
        v /= 10;
    }
}
