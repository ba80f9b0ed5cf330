#include "base/utf8.h"

#include <stdint.h>
#include <string.h>

#define UTF8_ELLIPSIS "..."

static int utf8_is_continuation(unsigned char c)
{
    return (c & 0xc0) == 0x80;
}

/* 0 when the sequence is malformed, overlong, a surrogate or past
 * U+10FFFF. */
size_t utf8_char_len(const char *str, size_t left)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned c, cp;
    size_t n;

    if (left == 0)
        return 0;
    c = s[0];
    if (c < 0x80)
        return 1;
    n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    cp = c & (0x7fu >> n);
    if (c < 0xc2 || c > 0xf4 || n > left)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if (!utf8_is_continuation(s[i]))
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

int utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        size_t n;

        /* ASCII, the bulk of any review, eight bytes at a time. */
        if (len - i >= 8) {
            uint64_t w;

            memcpy(&w, p + i, 8);
            if ((w & 0x8080808080808080ull) == 0) {
                i += 8;
                continue;
            }
        }
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        n = utf8_char_len(s + i, len - i);
        if (n == 0)
            return 0;
        i += n;
    }
    return 1;
}

size_t utf8_cut(const char *s, size_t n)
{
    while (n > 0 && utf8_is_continuation((unsigned char)s[n]))
        n--;
    return n;
}

char *utf8_fold(char *s)
{
    char *to = s;

    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
            p++, *to++ = '?';
        else
            *to++ = *p < 0x20 || *p == 0x7f ? '?' : (char)*p;
    }
    *to = '\0';
    return s;
}

void utf8_shorten(const char *s, size_t max, char *out, size_t outlen)
{
    size_t n = strlen(s);
    size_t keep = outlen - sizeof(UTF8_ELLIPSIS);

    if (n <= max && n < outlen) {
        memcpy(out, s, n + 1);
        return;
    }
    if (max < keep)
        keep = max;
    keep = utf8_cut(s, keep);
    memcpy(out, s, keep);
    memcpy(out + keep, UTF8_ELLIPSIS, sizeof(UTF8_ELLIPSIS));
}
