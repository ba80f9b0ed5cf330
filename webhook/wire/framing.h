/* framing: whether the server can tell where a request's body ends.
 *
 * libmicrohttpd reads a body by Content-Length, or in chunks when the one
 * Transfer-Encoding field is exactly "chunked". Any other Transfer-Encoding
 * it reads as a body that ends when the client closes: the request hangs
 * until the connection timeout and gets no status at all. framing decides,
 * from the header fields alone, before any of the body is read, what such a
 * request gets instead (RFC 9112 section 6):
 *
 *   400  a coding list that does not parse; chunked not the last coding, or
 *        more than once (the body's length cannot be known); both
 *        Transfer-Encoding and Content-Length (a request-smuggling pattern);
 *   501  a well-formed list with a coding other than chunked (gzip,
 *        chunked), parameters, or in any form but one plain field.
 */
#ifndef RDMA_WEBHOOK_FRAMING_H
#define RDMA_WEBHOOK_FRAMING_H

#include <stddef.h>

/* Transfer-Encoding fields looked at; a request with more gets 400. */
#define FRAMING_MAX_FIELDS 8

/* te: the request's Transfer-Encoding field values in order (n may exceed
 * FRAMING_MAX_FIELDS; only that many are read); has_length: whether it has
 * a Content-Length. Returns 0 when the body can be read, else 400 or 501
 * with a one-line reason (static, ends in '\n') in *why. */
unsigned framing_check(const char *const *te, size_t n, int has_length, const char **why);

#endif
