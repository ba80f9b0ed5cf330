/* podjson: typed reads of a Kubernetes object held as cJSON.
 *
 * Requests come from the network, so every field the webhook reads may have
 * the wrong JSON type. Each getter returns NULL when the field is absent and
 * also when it has the wrong type; in the second case it records the first
 * such field in the reader, so the caller can refuse the object with a reason
 * that names the field instead of guessing.
 *
 * Errors: a sticky first reason, read once at the end. Nothing here
 * allocates, so there is no ERR_NOMEM or ERR_TOO_BIG to tell apart:
 * podjson_failed() is a predicate and bad_field the one-line reason (set
 * through err.h, so it never holds a control character).
 */
#ifndef RDMA_WEBHOOK_PODJSON_H
#define RDMA_WEBHOOK_PODJSON_H

#include <stddef.h>

struct cJSON;

struct podjson {
    char bad_field[128]; /* first field with a wrong type; "" when none */
};

void podjson_init(struct podjson *r);
static inline int podjson_failed(const struct podjson *r)
{
    return r->bad_field[0] != '\0';
}

/* obj's member key (the first, if repeated), or NULL; obj may be any item.
 * cJSON_GetObjectItemCaseSensitive's answer, but a key whose first byte
 * differs costs no strcmp call: the request path looks up about ninety
 * fields per admission, mostly past several others. */
const struct cJSON *podjson_member(const struct cJSON *obj, const char *key);

/* Records why the object cannot be handled, unless a reason is already
 * recorded: the first one is what the user gets to fix. */
void podjson_fail(struct podjson *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const struct cJSON *podjson_obj(struct podjson *r, const struct cJSON *parent, const char *key);
const struct cJSON *podjson_arr(struct podjson *r, const struct cJSON *parent, const char *key);
const char *podjson_str(struct podjson *r, const struct cJSON *parent, const char *key);
/* 1 for true, 0 for false or absent. */
int podjson_bool(struct podjson *r, const struct cJSON *parent, const char *key);
/* 1 and *out when the field is an integer; 0 when absent. */
int podjson_int(struct podjson *r, const struct cJSON *parent, const char *key, long long *out);

/* A quantity field (string, or a number from a hand-written review) as a
 * whole number; -1 when absent or not whole. */
long long podjson_whole_quantity(const struct cJSON *q);

#endif
