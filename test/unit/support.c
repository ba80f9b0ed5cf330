#include "unit.h"
#include "support.h"

#include <stdio.h>

#include "cmd.h"
#include "dynbuf.h"
#include "fsutil.h"
#include "profiles.h"

#define DOMAIN_LEN 253 /* DNS-1123 subdomain */
#define NAME_LEN   63  /* the part after the '/' */

struct profiles *load_shipped_profiles(void)
{
    struct dynbuf text, errors;
    struct profiles *ps = NULL;
    char err[512];

    /* The binary's own limit and reader: a cut file would fail with a
     * misleading parse error, and a test would read what serve does not. */
    dynbuf_init(&text, RDMA_WEBHOOK_PROFILES_MAX);
    dynbuf_init(&errors, 1 << 16);
    if (fsutil_read(SHIPPED_PROFILES, &text, err, sizeof(err))) {
        fprintf(stderr, "%s (run the tests from the repository root)\n", err);
        goto out;
    }
    ps = profiles_parse(dynbuf_ptr(&text), dynbuf_len(&text), &errors);
    if (!ps) /* errors ends with a newline: one line per problem */
        fprintf(stderr, "%s rejected:\n%s", SHIPPED_PROFILES, dynbuf_ptr(&errors));
out:
    dynbuf_free(&text);
    dynbuf_free(&errors);
    return ps;
}

char *longest_resource_name(char *out, size_t outlen)
{
    assert_true(outlen > DOMAIN_LEN + 1 + NAME_LEN);
    memset(out, 'd', DOMAIN_LEN);
    out[DOMAIN_LEN] = '/';
    memset(out + DOMAIN_LEN + 1, 'n', NAME_LEN);
    out[DOMAIN_LEN + 1 + NAME_LEN] = '\0';
    return out;
}
