#include "base/jsoncheck.h"

#include "base/err.h"
#include "base/utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define JSONCHECK_STACK_WORDS ((JSONCHECK_MAX_DEPTH + 63) / 64)
#define JSONCHECK_STR(x)      #x
#define JSONCHECK_XSTR(x)     JSONCHECK_STR(x)

/* The walk's state. The position is not in here: each step takes it and
 * returns the next one (NULL after a problem, recorded in r), so it stays
 * in a register on the request path. object tells whether the innermost
 * container is an object (else an array), all a comma or a closing bracket
 * needs to know; bit d of in_object keeps it for the container at depth d
 * while a deeper one is open. */
struct jsoncheck {
    const unsigned char *start, *end;
    struct jsoncheck_result *r;
    unsigned depth;
    int object;
    uint64_t in_object[JSONCHECK_STACK_WORDS];
};

typedef const unsigned char *jsoncheck_pos;

static jsoncheck_pos jsoncheck_fail(struct jsoncheck *c, jsoncheck_pos at,
                                    enum jsoncheck_problem problem)
{
    c->r->problem = problem;
    c->r->at = (size_t)(at - c->start);
    c->r->byte = at < c->end ? *at : 0;
    return NULL;
}

/* The problem with the byte at where the grammar wants something else:
 * named for what it is, so the message points at the real fault. */
static jsoncheck_pos jsoncheck_unexpected(struct jsoncheck *c, jsoncheck_pos at)
{
    if (at >= c->end)
        return jsoncheck_fail(c, at, JSONCHECK_END);
    if (*at < 0x20)
        return jsoncheck_fail(c, at, JSONCHECK_CONTROL);
    if (*at >= 0x80 && utf8_char_len((const char *)at, (size_t)(c->end - at)) == 0)
        return jsoncheck_fail(c, at, JSONCHECK_UTF8);
    return jsoncheck_fail(c, at, JSONCHECK_UNEXPECTED);
}

/* RFC 8259's whitespace: nothing else below 0x21. Compact JSON, what the
 * apiserver sends, has none: one comparison says so. */
static inline jsoncheck_pos jsoncheck_ws(jsoncheck_pos p, jsoncheck_pos end)
{
    while (p < end && *p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* The top bit of each byte of v that needs a closer look inside a string:
 * below 0x20, '"', '\\' or not ASCII. The zero-byte tests (x - 0x01..) &
 * ~x & 0x80.. can also flag bytes above a matching one (the borrow runs
 * upwards) but never below it, so the lowest flag is exact; a non-ASCII
 * byte is flagged by v itself. */
static inline uint64_t jsoncheck_word_special(uint64_t v)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t quote = v ^ (ones * '"'), slash = v ^ (ones * '\\');

    return (v | ((v - ones * 0x20) & ~v) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash)) &
           highs;
}

/* Eight bytes read at any address. Not memcpy() into a local: taking a
 * local's address makes -fstack-protector-strong guard the function, which
 * on every string cost more than the check itself. */
typedef uint64_t jsoncheck_word __attribute__((may_alias, aligned(1)));

/* Past the plain ASCII at p (no byte jsoncheck_word_special() flags), eight
 * bytes a step. */
static inline jsoncheck_pos jsoncheck_plain(jsoncheck_pos p, jsoncheck_pos end)
{
#ifdef __SSE2__
    /* Sixteen bytes a step where SSE2 is there (every x86-64): a signed
     * compare with 0x20 takes the control and the non-ASCII bytes at once. */
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'),
                  space = _mm_set1_epi8(0x20);

    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned special = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)),
                         _mm_cmplt_epi8(v, space)));

        if (special)
            return p + __builtin_ctz(special);
        p += 16;
    }
#endif
    while (end - p >= 8) {
        uint64_t special = jsoncheck_word_special(*(const jsoncheck_word *)p);

        if (special) {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return p + __builtin_ctzll(special) / 8; /* byte 0 is the lowest */
#else
            break;
#endif
        }
        p += 8;
    }
    while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
        p++;
    return p;
}

static int jsoncheck_hex(unsigned char h)
{
    if (h >= '0' && h <= '9')
        return h - '0';
    h |= 0x20;
    return h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
}

/* The value of the four hex digits after u (the 'u' of an escape), or -1. */
static long jsoncheck_u4(const struct jsoncheck *c, jsoncheck_pos u)
{
    long v = 0;

    if (c->end - u < 5)
        return -1;
    for (int i = 1; i <= 4; i++) {
        int h = jsoncheck_hex(u[i]);

        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

/* The \uXXXX escape at bs (its backslash). A high surrogate must have its
 * low half right after it, as the apiserver's encoder always writes it. */
static jsoncheck_pos jsoncheck_unicode(struct jsoncheck *c, jsoncheck_pos bs)
{
    long u = jsoncheck_u4(c, bs + 1), lo;
    jsoncheck_pos p = bs + 6;

    if (u < 0)
        return jsoncheck_fail(c, bs, c->end - bs < 6 ? JSONCHECK_END : JSONCHECK_ESCAPE);
    if (u == 0 && c->r->first_nul == JSONCHECK_NONE)
        c->r->first_nul = (size_t)(bs - c->start);
    if (u >= 0xdc00 && u <= 0xdfff)
        return jsoncheck_fail(c, bs, JSONCHECK_SURROGATE);
    if (u < 0xd800 || u > 0xdbff)
        return p;
    if (c->end - p < 6 || p[0] != '\\' || p[1] != 'u')
        return jsoncheck_fail(c, bs, JSONCHECK_SURROGATE);
    lo = jsoncheck_u4(c, p + 1);
    if (lo < 0xdc00 || lo > 0xdfff)
        return jsoncheck_fail(c, bs, JSONCHECK_SURROGATE);
    return p + 6;
}

/* The escape at bs (a backslash). */
static jsoncheck_pos jsoncheck_escape(struct jsoncheck *c, jsoncheck_pos bs)
{
    if (c->end - bs < 2)
        return jsoncheck_fail(c, bs + 1, JSONCHECK_END);
    switch (bs[1]) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't': return bs + 2;
    case 'u': return jsoncheck_unicode(c, bs);
    default: return jsoncheck_fail(c, bs, JSONCHECK_ESCAPE);
    }
}

/* The rest of a string from p, a byte that is not plain ASCII: escapes,
 * UTF-8, and what is refused. Kept out of line, so that the common string
 * (jsoncheck_string()) costs a handful of instructions around its scan. */
__attribute__((noinline)) static jsoncheck_pos jsoncheck_string_rest(struct jsoncheck *c,
                                                                     jsoncheck_pos p)
{
    jsoncheck_pos end = c->end;

    for (;;) {
        size_t n;

        if (p >= end)
            return jsoncheck_fail(c, p, JSONCHECK_END);
        if (*p == '"')
            return p + 1;
        if (*p == '\\') {
            if (!(p = jsoncheck_escape(c, p)))
                return NULL;
        } else if (*p < 0x20) {
            return jsoncheck_fail(c, p, JSONCHECK_CONTROL);
        } else {
            n = utf8_char_len((const char *)p, (size_t)(end - p));
            if (n == 0)
                return jsoncheck_fail(c, p, JSONCHECK_UTF8);
            p += n;
        }
        p = jsoncheck_plain(p, end);
    }
}

/* The string at p (its opening quote). Plain ASCII, almost all of any
 * review, goes eight bytes a step. */
static inline jsoncheck_pos jsoncheck_string(struct jsoncheck *c, jsoncheck_pos p)
{
    p = jsoncheck_plain(p + 1, c->end);
    if (p < c->end && *p == '"')
        return p + 1;
    return jsoncheck_string_rest(c, p);
}

static int jsoncheck_digit(const struct jsoncheck *c, jsoncheck_pos p)
{
    return p < c->end && *p >= '0' && *p <= '9';
}

static jsoncheck_pos jsoncheck_digits(const struct jsoncheck *c, jsoncheck_pos p)
{
    while (jsoncheck_digit(c, p))
        p++;
    return p;
}

/* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static jsoncheck_pos jsoncheck_number(struct jsoncheck *c, jsoncheck_pos p)
{
    if (*p == '-')
        p++;
    if (!jsoncheck_digit(c, p))
        return jsoncheck_fail(c, p, JSONCHECK_NUMBER);
    if (*p == '0') {
        if (jsoncheck_digit(c, ++p))
            return jsoncheck_fail(c, p, JSONCHECK_NUMBER); /* a leading zero */
    } else {
        p = jsoncheck_digits(c, p);
    }
    if (p < c->end && *p == '.') {
        if (!jsoncheck_digit(c, ++p))
            return jsoncheck_fail(c, p, JSONCHECK_NUMBER);
        p = jsoncheck_digits(c, p);
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) {
        if (++p < c->end && (*p == '+' || *p == '-'))
            p++;
        if (!jsoncheck_digit(c, p))
            return jsoncheck_fail(c, p, JSONCHECK_NUMBER);
        p = jsoncheck_digits(c, p);
    }
    return p;
}

static jsoncheck_pos jsoncheck_literal(struct jsoncheck *c, jsoncheck_pos p, const char *word)
{
    for (size_t i = 0; word[i]; i++)
        if (p + i >= c->end || p[i] != (unsigned char)word[i])
            return jsoncheck_unexpected(c, p + i);
    return p + strlen(word);
}

/* Enters a container; the kind of the one it is in is kept in the stack. */
static int jsoncheck_push(struct jsoncheck *c, int object)
{
    unsigned d = c->depth;
    uint64_t bit = 1ull << (d % 64);

    if (d == JSONCHECK_MAX_DEPTH)
        return ERR_TOO_BIG;
    c->in_object[d / 64] = c->object ? c->in_object[d / 64] | bit : c->in_object[d / 64] & ~bit;
    c->object = object;
    c->depth = d + 1;
    return ERR_OK;
}

/* Leaves a container: the one it was in is current again. */
static void jsoncheck_pop(struct jsoncheck *c)
{
    unsigned d = --c->depth;

    c->object = (int)(c->in_object[d / 64] >> (d % 64) & 1);
}

/* A member's name and its colon at p; returns where its value starts. */
static jsoncheck_pos jsoncheck_name(struct jsoncheck *c, jsoncheck_pos p)
{
    if (p >= c->end || *p != '"')
        return jsoncheck_unexpected(c, p);
    if (!(p = jsoncheck_string(c, p)))
        return NULL;
    p = jsoncheck_ws(p, c->end);
    if (p >= c->end || *p != ':')
        return jsoncheck_unexpected(c, p);
    return jsoncheck_ws(p + 1, c->end);
}

/* What the walk reads next. */
enum jsoncheck_next { JSONCHECK_VALUE, JSONCHECK_NAME, JSONCHECK_AFTER, JSONCHECK_DONE };

/* Opens the container at p; returns where its first value (or its name)
 * starts, or where it ends when it is empty. */
static jsoncheck_pos jsoncheck_open(struct jsoncheck *c, jsoncheck_pos p, enum jsoncheck_next *next)
{
    unsigned char open = *p;

    if (jsoncheck_push(c, open == '{'))
        return jsoncheck_fail(c, p, JSONCHECK_DEPTH);
    p = jsoncheck_ws(p + 1, c->end);
    if (p < c->end && *p == open + 2) { /* '}' and ']' are two after their opening */
        jsoncheck_pop(c);
        *next = JSONCHECK_AFTER;
        return p + 1;
    }
    *next = open == '{' ? JSONCHECK_NAME : JSONCHECK_VALUE;
    return p;
}

/* The value at p: returns where it ends (*next is then JSONCHECK_AFTER), or
 * for a container that is not empty where its first value or name starts. */
static jsoncheck_pos jsoncheck_value(struct jsoncheck *c, jsoncheck_pos p,
                                     enum jsoncheck_next *next)
{
    *next = JSONCHECK_AFTER;
    if (p >= c->end)
        return jsoncheck_fail(c, p, JSONCHECK_END);
    switch (*p) {
    case '"': return jsoncheck_string(c, p);
    case '{':
    case '[': return jsoncheck_open(c, p, next);
    case 't': return jsoncheck_literal(c, p, "true");
    case 'f': return jsoncheck_literal(c, p, "false");
    case 'n': return jsoncheck_literal(c, p, "null");
    default:
        if (*p == '-' || (*p >= '0' && *p <= '9'))
            return jsoncheck_number(c, p);
        return jsoncheck_unexpected(c, p);
    }
}

/* After a whole value at p: the commas and closing brackets up to the next
 * value or name, or the end of the text (*next is then JSONCHECK_DONE). */
static jsoncheck_pos jsoncheck_after(struct jsoncheck *c, jsoncheck_pos p,
                                     enum jsoncheck_next *next)
{
    for (;;) {
        p = jsoncheck_ws(p, c->end);
        if (c->depth == 0) {
            *next = JSONCHECK_DONE;
            if (p == c->end)
                return p;
            return jsoncheck_fail(c, p, *p < 0x20 ? JSONCHECK_CONTROL : JSONCHECK_TRAILING);
        }
        if (p >= c->end)
            return jsoncheck_fail(c, p, JSONCHECK_END);
        if (*p == ',') {
            *next = c->object ? JSONCHECK_NAME : JSONCHECK_VALUE;
            return jsoncheck_ws(p + 1, c->end);
        }
        if (*p != (c->object ? '}' : ']'))
            return jsoncheck_unexpected(c, p);
        p++;
        jsoncheck_pop(c);
    }
}

int jsoncheck_text(const char *s, size_t len, struct jsoncheck_result *r)
{
    struct jsoncheck c = {.start = (jsoncheck_pos)s, .end = (jsoncheck_pos)s + len, .r = r};
    jsoncheck_pos p = c.start;
    enum jsoncheck_next next = JSONCHECK_VALUE;

    memset(r, 0, sizeof(*r));
    r->first_nul = JSONCHECK_NONE;
    /* RFC 8259 lets a parser skip one; the apiserver never sends one. */
    if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
        p = jsoncheck_fail(&c, p, JSONCHECK_BOM);
    else if ((p = jsoncheck_ws(p, c.end)) == c.end)
        p = jsoncheck_fail(&c, p, JSONCHECK_EMPTY);
    /* Each step once in the loop, so the compiler can inline all three. */
    while (p && next != JSONCHECK_DONE) {
        if (next == JSONCHECK_NAME) {
            p = jsoncheck_name(&c, p);
            next = JSONCHECK_VALUE;
        } else if (next == JSONCHECK_VALUE) {
            p = jsoncheck_value(&c, p, &next);
        } else {
            p = jsoncheck_after(&c, p, &next);
        }
    }
    return p ? ERR_OK : ERR_FAIL;
}

/* The problem's words, and where it is ("byte 17", "line 2, column 5"). */
static void jsoncheck_describe_at(const struct jsoncheck_result *r, const char *where, char *out,
                                  size_t outlen)
{
    static const char *const what[] = {
        [JSONCHECK_OK] = "no problem",
        [JSONCHECK_EMPTY] = "no JSON value",
        [JSONCHECK_CONTROL] = "raw control character",
        [JSONCHECK_UTF8] = "invalid UTF-8",
        [JSONCHECK_BOM] = "a byte order mark",
        [JSONCHECK_UNEXPECTED] = "unexpected character",
        [JSONCHECK_END] = "the text ends inside a value",
        [JSONCHECK_TRAILING] = "more text after the value",
        [JSONCHECK_ESCAPE] = "an invalid escape",
        [JSONCHECK_SURROGATE] = "a lone UTF-16 surrogate escape",
        [JSONCHECK_NUMBER] = "a number outside JSON's grammar",
        [JSONCHECK_DEPTH] = ("nesting deeper than " JSONCHECK_XSTR(JSONCHECK_MAX_DEPTH)),
    };
    const char *w = r->problem <= JSONCHECK_DEPTH ? what[r->problem] : "a problem";

    if (r->problem == JSONCHECK_CONTROL)
        snprintf(out, outlen, "%s U+%04X at %s", w, r->byte, where);
    else if (r->problem == JSONCHECK_UNEXPECTED && r->byte >= 0x21 && r->byte < 0x7f)
        snprintf(out, outlen, "%s '%c' at %s", w, r->byte, where);
    else
        snprintf(out, outlen, "%s at %s", w, where);
}

void jsoncheck_describe(const struct jsoncheck_result *r, char *out, size_t outlen)
{
    char where[32];

    snprintf(where, sizeof(where), "byte %zu", r->at);
    jsoncheck_describe_at(r, where, out, outlen);
}

void jsoncheck_line_column(const char *s, size_t len, size_t at, size_t *line, size_t *column)
{
    size_t l = 1, c = 1;

    for (size_t i = 0; i < at && i < len; i++) {
        if (s[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)s[i] & 0xc0) != 0x80) {
            c++; /* a continuation byte is part of the character before it */
        }
    }
    *line = l;
    *column = c;
}

void jsoncheck_describe_text(const struct jsoncheck_result *r, const char *s, size_t len, char *out,
                             size_t outlen)
{
    char where[64];
    size_t line, column;

    jsoncheck_line_column(s, len, r->at, &line, &column);
    snprintf(where, sizeof(where), "line %zu, column %zu (byte %zu)", line, column, r->at);
    jsoncheck_describe_at(r, where, out, outlen);
}
