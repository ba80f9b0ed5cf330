/* libFuzzer target: the profiles parser and validator, which reads what an
 * admin (or anyone who can edit the ConfigMap) writes. A document is either
 * accepted as a snapshot or rejected with at least one message. */
#include "base/dynbuf.h"
#include "admission/profiles.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dynbuf errors;
    struct profiles *ps;

    dynbuf_init(&errors, 1u << 16);
    ps = profiles_parse((const char *)data, size, &errors);
    if (!ps && errors.len == 0)
        abort();
    if (ps && ps->n == 0)
        abort();
    profiles_free(ps);
    dynbuf_free(&errors);
    return 0;
}
