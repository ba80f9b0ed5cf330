/* patch: builds an RFC 6902 JSON Patch as text, and applies one to a cJSON
 * document.
 *
 * Building: each operation is opened with the path, its value is written with
 * the jsonw in the patch, and the operation is closed:
 *
 *   patch_op_begin(&p, "add", "/spec/containers/0/env/-");
 *   jsonw_raw(&p.w, "{\"name\":\"A\",\"value\":\"1\"}");
 *   patch_op_end(&p);
 *
 * Paths are JSON Pointers (RFC 6901): a token that comes from data (a map key
 * such as "rdma-webhook.io/injected") must go through patch_escape_token() so
 * that '~' and '/' become "~0" and "~1".
 *
 * Applying (for `mutate --patched` and the tests): "add", "replace", "remove"
 * and "test" with the semantics of evanphx/json-patch, the library the
 * apiserver uses: an "add" whose parent does not exist fails.
 */
#ifndef RDMA_WEBHOOK_PATCH_H
#define RDMA_WEBHOOK_PATCH_H

#include "base/dynbuf.h"
#include "base/err.h"
#include "base/jsonw.h"

#include <stddef.h>

struct cJSON;

/* The longest path the webhook writes: base prefix plus a few tokens. */
#define PATCH_PATH_MAX 512
/* What a patch buffer starts with: room for most pods' patches (with the
 * terminator, one 2 KiB allocation). */
#define PATCH_TYPICAL 1536

struct patch {
    struct dynbuf out;
    struct jsonw w;
    size_t n_ops;
};

void patch_init(struct patch *p, size_t cap);
void patch_free(struct patch *p);
void patch_op_begin(struct patch *p, const char *op, const char *path);
void patch_op_end(struct patch *p);
/* An operation whose value is a string. */
void patch_op_str(struct patch *p, const char *op, const char *path, const char *value);
/* Closes the array. Returns the first error of the writer (err.h): ERR_OK,
 * ERR_TOO_BIG (the patch is over its cap) or ERR_NOMEM. */
int patch_finish(struct patch *p);

/* Escapes one reference token into out. Returns ERR_OK, or ERR_TOO_BIG when
 * out is too small (out then holds a truncated, still terminated, token). */
int patch_escape_token(const char *token, char *out, size_t outlen);

/* Applies the operations in ops (a cJSON array) to *doc, in order. Returns
 * ERR_OK, or ERR_NOMEM or ERR_FAIL with a one-line reason in err; *doc may
 * then be partly patched. */
int patch_apply(struct cJSON **doc, const struct cJSON *ops, char *err, size_t errlen);

#endif
