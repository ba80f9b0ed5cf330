#include "base/decimal.h"

#include "base/err.h"

#include <limits.h>

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

int decimal_parse_ll(const char *s, long long *out)
{
    int neg = *s == '-';
    unsigned long long v = 0;
    /* The magnitude's limit: 2^63 for a negative number, 2^63 - 1 else. */
    unsigned long long limit = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;

    if (*s == '-' || *s == '+')
        s++;
    if (!*s)
        return ERR_FAIL;
    for (; *s; s++) {
        unsigned d = (unsigned)(*s - '0');

        if (d > 9 || v > (limit - d) / 10)
            return ERR_FAIL;
        v = v * 10 + d;
    }
    /* -(v - 1) - 1 reaches LLONG_MIN without a conversion out of range. */
    *out = !neg ? (long long)v : v ? -(long long)(v - 1) - 1 : 0;
    return ERR_OK;
}
