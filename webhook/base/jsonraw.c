#include "base/jsonraw.h"

#include <string.h>

/* What jsonraw_string() writes for an escape that is no character (a lone
 * surrogate, which jsoncheck refuses): U+FFFD, as Go's decoder does. */
#define JSONRAW_REPLACEMENT 0xfffdu

static const char *jsonraw_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* Past the string that starts at p (its opening quote). */
static const char *jsonraw_skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return end;
}

/* Past the value that starts at p. */
static const char *jsonraw_skip_value(const char *p, const char *end)
{
    size_t depth = 0;

    if (p < end && *p != '{' && *p != '[' && *p != '"') {
        while (p < end && !strchr(",]} \t\r\n", *p))
            p++;
        return p;
    }
    while (p < end) {
        if (*p == '"') {
            p = jsonraw_skip_string(p, end);
        } else {
            if (*p == '{' || *p == '[')
                depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        if (depth == 0)
            return p; /* a string on its own */
    }
    return end;
}

struct jsonraw jsonraw_root(const char *text, size_t len)
{
    const char *p = jsonraw_ws(text, text + len), *end = text + len;

    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        end--;
    return (struct jsonraw){p, (size_t)(end - p)};
}

static int jsonraw_hex4(const char *p, const char *end, unsigned *v)
{
    *v = 0;
    if (end - p < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        unsigned char h = (unsigned char)p[i];

        if (h >= '0' && h <= '9')
            *v = *v << 4 | (unsigned)(h - '0');
        else if ((h | 0x20) >= 'a' && (h | 0x20) <= 'f')
            *v = *v << 4 | (unsigned)((h | 0x20) - 'a' + 10);
        else
            return -1;
    }
    return 0;
}

/* Appends byte b to out[0..outlen) at *n, counting it even when full. */
static void jsonraw_put(char *out, size_t outlen, size_t *n, unsigned b)
{
    if (*n < outlen)
        out[*n] = (char)b;
    (*n)++;
}

static void jsonraw_put_utf8(char *out, size_t outlen, size_t *n, unsigned cp)
{
    if (cp < 0x80) {
        jsonraw_put(out, outlen, n, cp);
    } else if (cp < 0x800) {
        jsonraw_put(out, outlen, n, 0xc0 | cp >> 6);
        jsonraw_put(out, outlen, n, 0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        jsonraw_put(out, outlen, n, 0xe0 | cp >> 12);
        jsonraw_put(out, outlen, n, 0x80 | (cp >> 6 & 0x3f));
        jsonraw_put(out, outlen, n, 0x80 | (cp & 0x3f));
    } else {
        jsonraw_put(out, outlen, n, 0xf0 | cp >> 18);
        jsonraw_put(out, outlen, n, 0x80 | (cp >> 12 & 0x3f));
        jsonraw_put(out, outlen, n, 0x80 | (cp >> 6 & 0x3f));
        jsonraw_put(out, outlen, n, 0x80 | (cp & 0x3f));
    }
}

/* The code point of the \u escape at p (at the 'u'), pairing surrogates;
 * returns where the escape ends. */
static const char *jsonraw_unicode(const char *p, const char *end, unsigned *cp)
{
    unsigned lo;

    if (jsonraw_hex4(p + 1, end, cp)) {
        *cp = JSONRAW_REPLACEMENT;
        return end;
    }
    p += 5;
    if (*cp >= 0xdc00 && *cp <= 0xdfff)
        *cp = JSONRAW_REPLACEMENT;
    if (*cp < 0xd800 || *cp > 0xdbff)
        return p;
    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || jsonraw_hex4(p + 2, end, &lo) ||
        lo < 0xdc00 || lo > 0xdfff) {
        *cp = JSONRAW_REPLACEMENT;
        return p;
    }
    *cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
    return p + 6;
}

/* The byte a one-letter escape stands for ('u' is not one). */
static unsigned jsonraw_short_escape(char e)
{
    switch (e) {
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return (unsigned char)e; /* '"', '\\', '/' */
    }
}

size_t jsonraw_string(struct jsonraw v, char *out, size_t outlen)
{
    const char *p = v.p + 1, *end = v.p + v.n;
    size_t n = 0;

    if (v.n < 2 || v.p[0] != '"')
        return JSONRAW_NOT_STRING;
    while (p < end && *p != '"') {
        unsigned cp;

        if (*p != '\\') {
            jsonraw_put(out, outlen, &n, (unsigned char)*p++);
            continue;
        }
        if (++p >= end)
            break;
        if (*p != 'u') {
            jsonraw_put(out, outlen, &n, jsonraw_short_escape(*p++));
            continue;
        }
        p = jsonraw_unicode(p, end, &cp);
        jsonraw_put_utf8(out, outlen, &n, cp);
    }
    return n;
}

/* 1 when the name token tok[0..n) unescapes to exactly key[0..keylen). */
static int jsonraw_name_is(const char *tok, size_t n, const char *key, size_t keylen)
{
    char name[JSONRAW_KEY_MAX + 1];
    size_t len = jsonraw_string((struct jsonraw){tok, n}, name, sizeof(name));

    return len == keylen && memcmp(name, key, keylen) == 0;
}

long jsonraw_member(struct jsonraw v, const char *key, size_t keylen, struct jsonraw *value)
{
    const char *p = v.p, *end = v.p + v.n;
    long index = 0;

    if (v.n == 0 || *p != '{' || keylen > JSONRAW_KEY_MAX)
        return -1;
    for (p = jsonraw_ws(p + 1, end); p < end && *p == '"'; index++) {
        const char *name = p, *val;
        int hit;

        p = jsonraw_skip_string(p, end);
        hit = jsonraw_name_is(name, (size_t)(p - name), key, keylen);
        p = jsonraw_ws(p, end);
        if (p >= end || *p != ':')
            return -1;
        val = jsonraw_ws(p + 1, end);
        p = jsonraw_skip_value(val, end);
        if (hit) {
            *value = (struct jsonraw){val, (size_t)(p - val)};
            return index;
        }
        p = jsonraw_ws(p, end);
        if (p < end && *p == ',')
            p = jsonraw_ws(p + 1, end);
    }
    return -1;
}
