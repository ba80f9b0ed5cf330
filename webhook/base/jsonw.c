#include "base/jsonw.h"

#include "base/decimal.h"

#include <stdint.h>
#include <string.h>

void jsonw_init(struct jsonw *w, struct dynbuf *out)
{
    w->out = out;
    w->err = ERR_OK;
}

void jsonw_rawn(struct jsonw *w, const char *s, size_t n)
{
    if (!w->err)
        w->err = dynbuf_add(w->out, s, n);
}

void jsonw_raw(struct jsonw *w, const char *s)
{
    jsonw_rawn(w, s, strlen(s));
}

/* The two-character escapes JSON defines; other control bytes become \u00XX. */
static const char *jsonw_short_escape(unsigned char c)
{
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return NULL;
    }
}

/* 1 when byte c cannot appear as it is inside a JSON string. */
static int jsonw_needs_escape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\';
}

size_t jsonw_escape_byte(unsigned char c, char out[JSONW_ESCAPE_MAX])
{
    static const char hex[] = "0123456789abcdef";
    const char *esc;

    if (!jsonw_needs_escape(c))
        return 0;
    if ((esc = jsonw_short_escape(c))) {
        memcpy(out, esc, 2);
        return 2;
    }
    memcpy(out, "\\u00", 4);
    out[4] = hex[c >> 4];
    out[5] = hex[c & 15];
    return 6;
}

/* Nonzero when any of the eight bytes of v is below 0x20, '"' or '\\'. The
 * "has a zero byte" tests (x - 0x01..) & ~x & 0x80.. are exact for whether
 * any byte matches, which is all this needs. */
static uint64_t jsonw_word_needs_escape(uint64_t v)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t quote = v ^ (ones * '"'), slash = v ^ (ones * '\\');

    return (((v - ones * 0x20) & ~v) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash)) &
           highs;
}

size_t jsonw_plain_prefix(const char *s, size_t n)
{
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t v;

        memcpy(&v, s + i, 8);
        if (jsonw_word_needs_escape(v))
            break;
    }
    while (i < n && !jsonw_needs_escape((unsigned char)s[i]))
        i++;
    return i;
}

/* s[0..run) needs no escape (run < n): plain runs and escapes in turn. */
static void jsonw_escaped(struct jsonw *w, const char *s, size_t n, size_t run)
{
    char esc[JSONW_ESCAPE_MAX];

    jsonw_rawn(w, "\"", 1);
    while (run < n) {
        jsonw_rawn(w, s, run);
        jsonw_rawn(w, esc, jsonw_escape_byte((unsigned char)s[run], esc));
        s += run + 1;
        n -= run + 1;
        run = jsonw_plain_prefix(s, n);
    }
    jsonw_rawn(w, s, n);
    jsonw_rawn(w, "\"", 1);
}

void jsonw_strn(struct jsonw *w, const char *s, size_t n)
{
    size_t at, run;

    if (w->err)
        return;
    /* Most strings (names, values, paths) need no escape: one append. */
    run = jsonw_plain_prefix(s, n);
    if (run != n) {
        jsonw_escaped(w, s, n, run);
        return;
    }
    at = dynbuf_len(w->out);
    w->err = dynbuf_grow(w->out, n + 2);
    if (w->err)
        return;
    w->out->mem[at] = '"';
    memcpy(w->out->mem + at + 1, s, n);
    w->out->mem[at + n + 1] = '"';
}

void jsonw_str(struct jsonw *w, const char *s)
{
    jsonw_strn(w, s, strlen(s));
}

void jsonw_key(struct jsonw *w, const char *k)
{
    jsonw_str(w, k);
    jsonw_rawn(w, ":", 1);
}

void jsonw_int(struct jsonw *w, long long v)
{
    char num[DECIMAL_MAX];

    jsonw_rawn(w, num, decimal_ll(num, v));
}

void jsonw_bool(struct jsonw *w, int v)
{
    jsonw_raw(w, v ? "true" : "false");
}
