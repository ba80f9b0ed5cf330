/* err: the one error convention of the code base.
 *
 * A function that can fail returns ERR_OK (0) or one of the negative codes
 * below, and nothing else; the codes tell out-of-memory and too-large apart
 * from every other failure, because callers answer them differently (500 and
 * 413, "out of memory" and "raise --max-...-bytes"). A function that can say
 * more takes `char *err, size_t errlen` last and fills it through err_set():
 * one line, naming the file, flag or object at fault and, where one exists,
 * what to do next. err may be NULL (the caller only wants the code).
 *
 * Not errors, and so outside this convention: predicates (1 or 0), HTTP
 * statuses as results (framing_check, review_handle), verdicts (nccl_check),
 * values with -1 for "none" (jsonraw_member), exit statuses, and sticky first
 * errors read once at the end: jsonw_error() reports these codes, and
 * podjson, which allocates nothing, a reason (podjson_failed() is a
 * predicate). webhook/README.md "Errors" lists every shape and why.
 */
#ifndef RDMA_WEBHOOK_ERR_H
#define RDMA_WEBHOOK_ERR_H

#include <stdarg.h>
#include <stddef.h>

#define ERR_OK      0
#define ERR_FAIL    (-1) /* anything not below: the message says what */
#define ERR_NOMEM   (-2) /* an allocation failed */
#define ERR_TOO_BIG (-3) /* a cap or limit would be exceeded */
#define ERR_BUSY    (-4) /* a shared budget is spent for now; retry later */

/* The size an err buffer should have: room for a path and a remedy. */
#define ERR_LEN 512

/* Writes the message (printf-style) into err, folding any newline or other
 * control character into a space so that it stays one log line, and returns
 * code, so a failure is one statement: `return err_set(err, errlen,
 * ERR_FAIL, "cannot read %s: %s", path, strerror(errno));`. */
int err_set(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* err_set() for a caller that is itself printf-like (podjson_fail). */
int err_vset(char *err, size_t errlen, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* "out of memory", "too large", ... for a code; "failed" for ERR_FAIL or any
 * other value. */
const char *err_name(int code);

#endif
