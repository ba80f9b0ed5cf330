/* err: the one error convention of the code base (see err.h). */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>

int err_vset(char *err, size_t errlen, int code, const char *fmt, va_list ap)
{
    if (err == NULL || errlen == 0)
        return code;
    /* A failed vsnprintf leaves err undefined; the caller still prints it. */
    if (vsnprintf(err, errlen, fmt, ap) < 0)
        err[0] = '\0';
    /* The caller logs this as one line, and a path or a peer's text may carry
     * a newline or an escape sequence. */
    for (char *p = err; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    return code;
}

int err_set(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    code = err_vset(err, errlen, code, fmt, ap);
    va_end(ap);
    return code;
}

const char *err_name(int code)
{
    switch (code) {
    case ERR_OK: return "ok";
    case ERR_NOMEM: return "out of memory";
    case ERR_TOO_BIG: return "too large";
    case ERR_BUSY: return "busy";
    default: return "failed";
    }
}
