/* cmd: the helpers the subcommands share (cmd.h). */
#include "cmd/cmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cmd_parse_uint(const char *flag, const char *s, unsigned long long min, unsigned long long max,
                   unsigned long long *out, char *err, size_t errlen)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (!*s || *end || errno || s[0] == '-' || v < min || v > max)
        return err_set(err, errlen, ERR_FAIL,
                       "--%s takes a whole number from %llu to %llu, not \"%s\"", flag, min, max,
                       s);
    *out = v;
    return ERR_OK;
}

int cmd_check_image(const char *image, char *err, size_t errlen)
{
    size_t n = strlen(image);

    if (strchr(image, '$'))
        return err_set(err, errlen, ERR_FAIL,
                       "--detect-image \"%s\" holds a '$' (a $(VAR) left unexpanded?); give the "
                       "image itself, e.g. rdma-webhook:0.1.0",
                       image);
    if (n == 0 || n > CMD_IMAGE_MAX)
        return err_set(err, errlen, ERR_FAIL,
                       "--detect-image takes the webhook's image, 1 to %d bytes", CMD_IMAGE_MAX);
    for (const char *p = image; *p; p++)
        if (*p <= ' ' || *p > '~')
            return err_set(err, errlen, ERR_FAIL,
                           "--detect-image \"%s\": an image reference has no spaces or control "
                           "characters",
                           image);
    return ERR_OK;
}
