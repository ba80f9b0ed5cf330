/* jsoncheck: whether a text is JSON by RFC 8259, in one pass.
 *
 * cJSON, which reads the reviews and the profiles, is lenient where the RFC
 * is not: between tokens it skips every byte up to 0x20 (NUL and the other
 * control characters too), inside strings it keeps raw control characters,
 * it reads numbers with strtod() ("01", "1.", "-01"), skips a leading byte
 * order mark, and takes any bytes as string content. The apiserver's decoder
 * takes none of that, so every text is checked here before cJSON sees it:
 * whitespace is space, tab, CR and LF only; U+0000..U+001F appear in strings
 * only escaped; numbers, literals and escapes follow the RFC's grammar; a
 * \u escape is not a lone UTF-16 surrogate; strings are well-formed UTF-8
 * (utf8.h's rules); there is exactly one value, nested at most
 * JSONCHECK_MAX_DEPTH deep (cJSON's own limit, so a text that passes is
 * never too deep for it).
 *
 * The check reads each byte once (strings eight bytes a step), allocates
 * nothing and keeps its nesting in a bit stack of fixed size. It also
 * reports where the first \u0000 escape is, since cJSON ends a string there:
 * a caller that echoes a string must then read it exactly (jsonraw.h).
 */
#ifndef RDMA_WEBHOOK_JSONCHECK_H
#define RDMA_WEBHOOK_JSONCHECK_H

#include <stddef.h>

#define JSONCHECK_MAX_DEPTH 1000
#define JSONCHECK_NONE      ((size_t)-1)

enum jsoncheck_problem {
    JSONCHECK_OK,
    JSONCHECK_EMPTY,      /* no value at all */
    JSONCHECK_CONTROL,    /* a raw U+0000..U+001F (byte says which) */
    JSONCHECK_UTF8,       /* a byte that does not start a well-formed UTF-8 character */
    JSONCHECK_BOM,        /* a byte order mark before the value */
    JSONCHECK_UNEXPECTED, /* a character where the grammar wants another */
    JSONCHECK_END,        /* the text ends inside a value */
    JSONCHECK_TRAILING,   /* more after the value */
    JSONCHECK_ESCAPE,     /* a backslash escape the RFC does not define */
    JSONCHECK_SURROGATE,  /* a \u escape of a lone UTF-16 surrogate */
    JSONCHECK_NUMBER,     /* a number outside the grammar ("01", "1.", "-") */
    JSONCHECK_DEPTH,      /* nested deeper than JSONCHECK_MAX_DEPTH */
};

struct jsoncheck_result {
    enum jsoncheck_problem problem;
    size_t at;          /* byte offset of the problem */
    unsigned char byte; /* the byte at that offset (0 at the end) */
    size_t first_nul;   /* byte offset of the first \u0000 escape, or JSONCHECK_NONE */
};

/* Returns ERR_OK when s[0..len) is one JSON value with optional whitespace
 * around it, or ERR_FAIL; r is filled either way. The problem is a struct,
 * not a message: the caller places it by byte (a request body) or by line
 * and column (a file an admin edits) with jsoncheck_describe*(), and the
 * check stays free of allocation and formatting on every request. */
int jsoncheck_text(const char *s, size_t len, struct jsoncheck_result *r);

/* Room for either description below, with the largest offsets. */
#define JSONCHECK_WHY_LEN 128

/* One line for a problem: "raw control character U+0001 at byte 17". */
void jsoncheck_describe(const struct jsoncheck_result *r, char *out, size_t outlen);

/* The same for a text people edit (a file), placed by line and column too:
 * "unexpected character 'x' at line 3, column 7 (byte 27)". */
void jsoncheck_describe_text(const struct jsoncheck_result *r, const char *s, size_t len, char *out,
                             size_t outlen);

/* The line and column of byte offset at in s[0..len), both counted from 1;
 * the column counts characters (a UTF-8 sequence is one), as editors do. */
void jsoncheck_line_column(const char *s, size_t len, size_t at, size_t *line, size_t *column);

#endif
