#include "admission/mutpath.h"

#include "admission/mutate_ctx.h"
#include "base/decimal.h"
#include "base/err.h"
#include "base/jsonw.h"
#include "admission/patch.h"
#include "admission/podjson.h"

#include <cjson/cJSON.h>
#include <string.h>

/* out = prefix + a + b (b may be NULL); ERR_OK, or ERR_TOO_BIG when it does
 * not fit: that fails the pod rather than patching the wrong place. out may
 * be prefix. */
int mutpath_join(struct mutate_ctx *m, char *out, const char *prefix, const char *a, const char *b)
{
    size_t pl = strlen(prefix), al = strlen(a), bl = b ? strlen(b) : 0;

    if (pl + al + bl >= PATCH_PATH_MAX) {
        podjson_fail(&m->r, "a JSON Pointer is too long");
        out[0] = '\0';
        return ERR_TOO_BIG;
    }
    memmove(out, prefix, pl);
    memcpy(out + pl, a, al);
    if (b)
        memcpy(out + pl + al, b, bl);
    out[pl + al + bl] = '\0';
    return ERR_OK;
}

const char *mutpath_name(struct mutate_ctx *m, const cJSON *container)
{
    const char *name = podjson_str(&m->r, container, "name");

    return name ? name : "?";
}

/* base + suffix (+ tail, may be NULL), as mutpath_join(). */
int mutpath_pod(struct mutate_ctx *m, char *out, const char *suffix, const char *tail)
{
    return mutpath_join(m, out, m->in->base, suffix, tail);
}

/* base + "/spec/" + list + "/" + idx: a container's path. */
int mutpath_item(struct mutate_ctx *m, char *out, const char *list, int idx)
{
    char tail[DECIMAL_MAX + 2] = "/";

    tail[1 + decimal_ll(tail + 1, idx)] = '\0';
    return mutpath_pod(m, out, "/spec/", list) || mutpath_join(m, out, out, tail, NULL)
               ? ERR_TOO_BIG
               : ERR_OK;
}

/* Begins an "add" of one item to the array parent + member (member starts
 * with '/'): appended ("/-") when the array exists, in the pod or made by an
 * earlier operation of this patch (*exists), else the array made with this
 * item, since an add of a whole array over one would replace it. The caller
 * writes the item and ends with mutpath_append_end(m, the return value). */
int mutpath_append_begin(struct mutate_ctx *m, const char *parent, const char *member, int *exists)
{
    char path[PATCH_PATH_MAX];
    int make = !*exists;

    mutpath_join(m, path, parent, member, make ? NULL : "/-");
    patch_op_begin(&m->res->patch, "add", path);
    if (make)
        jsonw_raw(&m->res->patch.w, "[");
    *exists = 1;
    return make;
}

void mutpath_append_end(struct mutate_ctx *m, int made)
{
    if (made)
        jsonw_raw(&m->res->patch.w, "]");
    patch_op_end(&m->res->patch);
}
