#include "admission/patch.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

void patch_init(struct patch *p, size_t cap)
{
    dynbuf_init(&p->out, cap);
    /* One allocation for a typical patch (the 8-GPU pod's is 1.3 KB)
     * instead of five doublings from dynbuf's minimum; a failure here
     * leaves the buffer to grow as usual. */
    (void)dynbuf_reserve(&p->out, PATCH_TYPICAL);
    jsonw_init(&p->w, &p->out);
    p->n_ops = 0;
    jsonw_raw(&p->w, "[");
}

void patch_free(struct patch *p)
{
    dynbuf_free(&p->out);
}

void patch_op_begin(struct patch *p, const char *op, const char *path)
{
    jsonw_raw(&p->w, p->n_ops ? ",{\"op\":" : "{\"op\":");
    jsonw_str(&p->w, op);
    jsonw_raw(&p->w, ",\"path\":");
    jsonw_str(&p->w, path);
    if (strcmp(op, "remove") != 0)
        jsonw_raw(&p->w, ",\"value\":");
    p->n_ops++;
}

void patch_op_end(struct patch *p)
{
    jsonw_raw(&p->w, "}");
}

void patch_op_str(struct patch *p, const char *op, const char *path, const char *value)
{
    patch_op_begin(p, op, path);
    jsonw_str(&p->w, value);
    patch_op_end(p);
}

int patch_finish(struct patch *p)
{
    jsonw_raw(&p->w, "]");
    return jsonw_error(&p->w);
}

int patch_escape_token(const char *token, char *out, size_t outlen)
{
    size_t o = 0;

    for (; *token; token++) {
        const char *rep = *token == '~' ? "~0" : *token == '/' ? "~1" : NULL;
        size_t n = rep ? 2 : 1;

        if (o + n >= outlen) {
            out[o] = '\0';
            return ERR_TOO_BIG;
        }
        if (rep)
            memcpy(out + o, rep, 2);
        else
            out[o] = *token;
        o += n;
    }
    out[o] = '\0';
    return ERR_OK;
}

/* Splits off the next token of a pointer into tok (unescaped). Returns the
 * rest of the pointer (starting with '/' or empty), or NULL on a bad escape
 * or an overlong token. */
static const char *patch_next_token(const char *ptr, char *tok, size_t toklen)
{
    size_t o = 0;

    for (ptr++; *ptr && *ptr != '/'; ptr++) {
        char c = *ptr;

        if (c == '~') {
            ptr++;
            if (*ptr != '0' && *ptr != '1')
                return NULL;
            c = *ptr == '0' ? '~' : '/';
        }
        if (o + 1 >= toklen)
            return NULL;
        tok[o++] = c;
    }
    tok[o] = '\0';
    return ptr;
}

/* Array index as RFC 6901 allows it: digits, no leading zero; -1 otherwise. */
static long patch_index(const char *tok)
{
    long v = 0;

    if (!*tok || (tok[0] == '0' && tok[1]) || strlen(tok) > 9)
        return -1;
    for (; *tok; tok++) {
        if (*tok < '0' || *tok > '9')
            return -1;
        v = v * 10 + (*tok - '0');
    }
    return v;
}

static cJSON *patch_child(cJSON *node, const char *tok)
{
    if (cJSON_IsObject(node))
        return cJSON_GetObjectItemCaseSensitive(node, tok);
    if (cJSON_IsArray(node)) {
        long i = patch_index(tok);

        return i < 0 ? NULL : cJSON_GetArrayItem(node, (int)i);
    }
    return NULL;
}

/* Finds the parent of the location path names; the last token goes to last. */
static cJSON *patch_parent(cJSON *doc, const char *path, char *last, size_t lastlen)
{
    cJSON *node = doc;
    const char *rest = path;

    if (*rest != '/')
        return NULL;
    for (;;) {
        rest = patch_next_token(rest, last, lastlen);
        if (!rest)
            return NULL;
        if (!*rest)
            return node;
        node = patch_child(node, last);
        if (!node)
            return NULL;
    }
}

/* Links val in before item. Debian 12's cJSON_InsertItemInArray refuses
 * every index past 0, so the list is relinked here; cJSON keeps the last
 * element in child->prev. */
static void patch_insert_before(cJSON *array, cJSON *item, cJSON *val)
{
    val->next = item;
    val->prev = item->prev;
    if (item == array->child)
        array->child = val;
    else
        item->prev->next = val;
    item->prev = val;
}

static int patch_do_add(cJSON *parent, const char *tok, cJSON *val)
{
    long i;

    if (cJSON_IsObject(parent)) {
        if (cJSON_GetObjectItemCaseSensitive(parent, tok))
            return cJSON_ReplaceItemInObjectCaseSensitive(parent, tok, val) ? ERR_OK : ERR_FAIL;
        return cJSON_AddItemToObject(parent, tok, val) ? ERR_OK : ERR_FAIL;
    }
    if (!cJSON_IsArray(parent))
        return ERR_FAIL;
    if (strcmp(tok, "-") == 0)
        return cJSON_AddItemToArray(parent, val) ? ERR_OK : ERR_FAIL;
    i = patch_index(tok);
    if (i < 0 || i > cJSON_GetArraySize(parent))
        return ERR_FAIL;
    if (i == cJSON_GetArraySize(parent))
        return cJSON_AddItemToArray(parent, val) ? ERR_OK : ERR_FAIL;
    patch_insert_before(parent, cJSON_GetArrayItem(parent, (int)i), val);
    return ERR_OK;
}

/* A replaced object member must keep its key: cJSON_ReplaceItemViaPointer
 * would leave the copy's own key ("value") in its place. */
static int patch_do_replace(cJSON *parent, const char *tok, cJSON *target, cJSON *val)
{
    if (cJSON_IsObject(parent))
        return cJSON_ReplaceItemInObjectCaseSensitive(parent, tok, val) ? ERR_OK : ERR_FAIL;
    return cJSON_ReplaceItemViaPointer(parent, target, val) ? ERR_OK : ERR_FAIL;
}

/* One decoded operation and where it points. */
struct patch_op {
    const char *name;
    const char *path;
    const cJSON *value;
    cJSON *parent;
    cJSON *target; /* NULL when nothing is there yet (add) */
    char tok[PATCH_PATH_MAX];
};

/* "add" and "replace": a copy of the value goes in; the document keeps no
 * pointer into the patch. */
static int patch_put(struct patch_op *o, int is_add, char *err, size_t errlen)
{
    cJSON *copy = cJSON_Duplicate(o->value, 1);

    if (!copy)
        return err_set(err, errlen, ERR_NOMEM, "%s %s: out of memory copying the value", o->name,
                       o->path);
    if (is_add ? patch_do_add(o->parent, o->tok, copy) == 0
               : patch_do_replace(o->parent, o->tok, o->target, copy) == 0)
        return ERR_OK;
    cJSON_Delete(copy);
    return err_set(err, errlen, ERR_FAIL, "%s %s: cannot insert there", o->name, o->path);
}

/* The whole document replaced: the pointer "" has no parent. */
static int patch_put_root(cJSON **doc, const cJSON *value, char *err, size_t errlen)
{
    cJSON *copy = cJSON_Duplicate(value, 1);

    if (!copy)
        return err_set(err, errlen, ERR_NOMEM, "out of memory copying the new document");
    cJSON_Delete(*doc);
    *doc = copy;
    return ERR_OK;
}

static int patch_apply_one(cJSON **doc, const cJSON *op, char *err, size_t errlen)
{
    struct patch_op o = {
        .name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "op")),
        .path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "path")),
        .value = cJSON_GetObjectItemCaseSensitive(op, "value"),
    };
    int is_add = o.name && strcmp(o.name, "add") == 0;
    int is_replace = o.name && strcmp(o.name, "replace") == 0;

    if (!o.name || !o.path)
        return err_set(err, errlen, ERR_FAIL, "operation without \"op\" or \"path\"");
    if (*o.path == '\0' && (is_add || is_replace) && o.value)
        return patch_put_root(doc, o.value, err, errlen);
    o.parent = patch_parent(*doc, o.path, o.tok, sizeof(o.tok));
    o.target = o.parent ? patch_child(o.parent, o.tok) : NULL;
    if (!o.parent || (!is_add && !o.target))
        return err_set(err, errlen, ERR_FAIL, "%s %s: path does not exist", o.name, o.path);
    if (strcmp(o.name, "remove") == 0) {
        cJSON_Delete(cJSON_DetachItemViaPointer(o.parent, o.target));
        return ERR_OK;
    }
    if (!o.value)
        return err_set(err, errlen, ERR_FAIL, "%s %s: no value", o.name, o.path);
    if (strcmp(o.name, "test") == 0) {
        if (cJSON_Compare(o.target, o.value, 1))
            return ERR_OK;
        return err_set(err, errlen, ERR_FAIL, "test %s: value differs", o.path);
    }
    if (is_add || is_replace)
        return patch_put(&o, is_add, err, errlen);
    return err_set(err, errlen, ERR_FAIL, "unsupported operation \"%s\"", o.name);
}

int patch_apply(cJSON **doc, const cJSON *ops, char *err, size_t errlen)
{
    const cJSON *op;
    int rc;

    if (!cJSON_IsArray(ops))
        return err_set(err, errlen, ERR_FAIL, "a JSON Patch must be an array");
    cJSON_ArrayForEach(op, ops)
    {
        rc = patch_apply_one(doc, op, err, errlen);
        if (rc)
            return rc;
    }
    return ERR_OK;
}
