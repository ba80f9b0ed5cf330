/* utf8: checking and cutting UTF-8 text the webhook echoes back.
 *
 * Pod fields, profile values and error texts end up in warnings, log lines
 * and patches. The apiserver's JSON decoder and kubectl's terminal both need
 * them to stay well-formed, so every cut goes through here and lands between
 * two characters, never inside one.
 */
#ifndef RDMA_WEBHOOK_UTF8_H
#define RDMA_WEBHOOK_UTF8_H

#include <stddef.h>

/* 1 when s[0..len) is well-formed UTF-8 (no overlongs, no surrogates, nothing
 * past U+10FFFF); NUL counts as a character. */
int utf8_valid(const char *s, size_t len);

/* The length (1 to 4) of the well-formed character that starts s, of the
 * left bytes available, or 0 when none does (a bad or cut sequence). */
size_t utf8_char_len(const char *s, size_t left);

/* The largest m <= n at which s can be cut without splitting a sequence:
 * s[m] is not a continuation byte. s must have at least n+1 readable bytes
 * (the byte at n is the first one left out). */
size_t utf8_cut(const char *s, size_t n);

/* Copies s into out when it is at most max bytes and fits; otherwise copies
 * a prefix cut by utf8_cut() to at most max bytes (and outlen-4) followed by
 * "...". outlen must be at least 4. */
void utf8_shorten(const char *s, size_t max, char *out, size_t outlen);

/* Folds, in place, each control character of s into '?': C0 (newline, CR,
 * ESC, BEL, ...), DEL, and C1 (U+0080..U+009F, two bytes each, which some
 * terminals obey as escape sequences). The one fold for a user's text in a
 * warning, a log line or a title: it stays one line and moves no cursor.
 * Returns s. */
char *utf8_fold(char *s);

#endif
