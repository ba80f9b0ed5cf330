#include "unit.h"
#include "support.h"

#include <stdio.h>

#include "dynbuf.h"
#include "profiles.h"

#define DOMAIN_LEN 253 /* DNS-1123 subdomain */
#define NAME_LEN   63  /* the part after the '/' */

struct profiles *load_shipped_profiles(void)
{
    FILE *f = fopen(SHIPPED_PROFILES, "rb");
    struct dynbuf text, errors;
    struct profiles *ps = NULL;
    char chunk[4096];
    size_t n;

    if (!f) {
        fprintf(stderr, "cannot open %s (run from the repository root)\n", SHIPPED_PROFILES);
        return NULL;
    }
    /* Read whole (up to 16 MiB, then an error): a silently cut file would
     * fail with a misleading parse error. */
    dynbuf_init(&text, 1 << 24);
    dynbuf_init(&errors, 1 << 16);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (dynbuf_add(&text, chunk, n) != 0) {
            fprintf(stderr, "%s: too large to read\n", SHIPPED_PROFILES);
            goto out;
        }
    }
    if (ferror(f)) {
        fprintf(stderr, "%s: read error\n", SHIPPED_PROFILES);
        goto out;
    }
    ps = profiles_parse(dynbuf_ptr(&text), dynbuf_len(&text), &errors);
    if (!ps) /* errors ends with a newline: one line per problem */
        fprintf(stderr, "%s rejected:\n%s", SHIPPED_PROFILES, dynbuf_ptr(&errors));
out:
    fclose(f);
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
