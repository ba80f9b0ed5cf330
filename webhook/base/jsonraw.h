/* jsonraw: exact reads from the text of a JSON document.
 *
 * cJSON hands out every string as a C string, so one with a \u0000 escape
 * ends there: "a\u0000b" reads as "a", and a member named "uid\u0000" is
 * found as "uid". Where the exact bytes matter (the uid the apiserver
 * compares byte for byte with its own, and the envelope members that lead
 * to it), they are read from the text instead. This is the slow path for the
 * rare text that holds a \u0000 (jsoncheck.h reports it); the common one
 * stays with cJSON.
 *
 * Nothing is allocated, and no read goes past the text whatever it holds;
 * the answers are only meaningful for a text jsoncheck_text() accepted.
 */
#ifndef RDMA_WEBHOOK_JSONRAW_H
#define RDMA_WEBHOOK_JSONRAW_H

#include <stddef.h>

/* Longest member name jsonraw_member() looks for. */
#define JSONRAW_KEY_MAX 64

/* One value as it stands in the text: p[0..n). */
struct jsonraw {
    const char *p;
    size_t n;
};

/* The document's value: the text without the whitespace around it. */
struct jsonraw jsonraw_root(const char *text, size_t len);

/* Finds the first member of object v whose name, unescaped, is exactly
 * key[0..keylen) (keylen at most JSONRAW_KEY_MAX). Returns its position among
 * v's members (0 for the first: the same as the child's index in cJSON's
 * tree of the same text) and sets *value, or returns -1 when v is not an
 * object or has no such member. */
long jsonraw_member(struct jsonraw v, const char *key, size_t keylen, struct jsonraw *value);

/* Unescapes string v into out[0..outlen) (out may be NULL when outlen is 0)
 * and returns its whole length, which may exceed outlen: then only the first
 * outlen bytes were written. Returns JSONRAW_NOT_STRING when v is not a
 * string. */
#define JSONRAW_NOT_STRING ((size_t)-1)
size_t jsonraw_string(struct jsonraw v, char *out, size_t outlen);

#endif
