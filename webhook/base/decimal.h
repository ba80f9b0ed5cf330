/* decimal: integers as ASCII digits, for lines built on every request, and
 * read back as Kubernetes reads them.
 *
 * snprintf parses its format string on each call; a log line's timestamp
 * alone took about 4,000 instructions that way. These write digits only,
 * and no NUL.
 */
#ifndef RDMA_WEBHOOK_DECIMAL_H
#define RDMA_WEBHOOK_DECIMAL_H

#include <stddef.h>

/* Enough for any long long: "-9223372036854775808". */
#define DECIMAL_MAX 20

/* Returns the number of bytes written. */
size_t decimal_ll(char *out, long long v);

/* v zero-padded to exactly width digits (v below 10^width). */
void decimal_pad(char *out, unsigned v, unsigned width);

/* Reads s as Go's strconv.ParseInt(s, 10, 64) does (Kubernetes' Gt and Lt):
 * an optional '+' or '-', then one or more ASCII digits and nothing else,
 * within the range of a long long (64 bits). Returns ERR_OK with *out set, or
 * ERR_FAIL (no message: the caller names the field) leaving *out alone.
 * strtoll() is looser: it skips leading whitespace and reads "" as 0. */
int decimal_parse_ll(const char *s, long long *out);

#endif
