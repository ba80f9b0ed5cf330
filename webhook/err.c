/* err: the one error convention of the code base (see err.h). */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

int err_set(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return code;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    /* The caller logs this as one line, and a path or a peer's text may carry
     * a newline or an escape sequence. */
    for (char *p = err; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
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
