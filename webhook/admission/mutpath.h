/* mutpath: where mutate's patch writes: the JSON Pointers into the pod
 * (its base path, a container's, any joined under PATCH_PATH_MAX), a
 * container's name as paths and warnings give it, and the "add" of an item
 * to an array that the pod or an earlier operation may already have.
 *
 * A pointer that does not fit fails the pod (podjson_fail) rather than
 * patching the wrong place; nothing allocates.
 */
#ifndef RDMA_WEBHOOK_MUTPATH_H
#define RDMA_WEBHOOK_MUTPATH_H

struct cJSON;
struct mutate_ctx;

/* out = prefix + a + b (b may be NULL), at most PATCH_PATH_MAX; ERR_OK, or
 * ERR_TOO_BIG (and the pod fails) when it does not fit. out may be prefix. */
int mutpath_join(struct mutate_ctx *m, char *out, const char *prefix, const char *a, const char *b);
/* A container's name, or "?". */
const char *mutpath_name(struct mutate_ctx *m, const struct cJSON *container);
/* The pod's base path + suffix (+ tail, may be NULL), as mutpath_join(). */
int mutpath_pod(struct mutate_ctx *m, char *out, const char *suffix, const char *tail);
/* base + "/spec/" + list + "/" + idx: a container's path. */
int mutpath_item(struct mutate_ctx *m, char *out, const char *list, int idx);
/* Begins an "add" of one item to the array parent + member, appended when
 * *exists, else made with this item (*exists then set); the caller writes
 * the item and ends with mutpath_append_end(m, the return value). */
int mutpath_append_begin(struct mutate_ctx *m, const char *parent, const char *member, int *exists);
void mutpath_append_end(struct mutate_ctx *m, int made);

#endif
