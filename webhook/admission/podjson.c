#include "admission/podjson.h"

#include "base/err.h"
#include "base/quantity.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <string.h>

void podjson_init(struct podjson *r)
{
    r->bad_field[0] = '\0';
}

void podjson_fail(struct podjson *r, const char *fmt, ...)
{
    va_list ap;

    if (podjson_failed(r))
        return;
    va_start(ap, fmt);
    err_vset(r->bad_field, sizeof(r->bad_field), ERR_FAIL, fmt, ap);
    va_end(ap);
}

const cJSON *podjson_member(const cJSON *obj, const char *key)
{
    const cJSON *it;

    if (!obj || !key)
        return NULL;
    for (it = obj->child; it; it = it->next)
        if (it->string && it->string[0] == key[0] && strcmp(it->string, key) == 0)
            return it;
    return NULL;
}

static const cJSON *podjson_get(struct podjson *r, const cJSON *parent, const char *key, int type,
                                const char *type_name)
{
    const cJSON *it;

    if (!cJSON_IsObject(parent))
        return NULL;
    it = podjson_member(parent, key);
    if (!it || cJSON_IsNull(it))
        return NULL;
    if (it->type & type)
        return it;
    podjson_fail(r, "%s is not %s", key, type_name);
    return NULL;
}

const cJSON *podjson_obj(struct podjson *r, const cJSON *parent, const char *key)
{
    return podjson_get(r, parent, key, cJSON_Object, "an object");
}

const cJSON *podjson_arr(struct podjson *r, const cJSON *parent, const char *key)
{
    return podjson_get(r, parent, key, cJSON_Array, "an array");
}

const char *podjson_str(struct podjson *r, const cJSON *parent, const char *key)
{
    const cJSON *it = podjson_get(r, parent, key, cJSON_String, "a string");

    return it ? it->valuestring : NULL;
}

int podjson_bool(struct podjson *r, const cJSON *parent, const char *key)
{
    const cJSON *it = podjson_get(r, parent, key, cJSON_True | cJSON_False, "a boolean");

    return it ? cJSON_IsTrue(it) : 0;
}

int podjson_int(struct podjson *r, const cJSON *parent, const char *key, long long *out)
{
    const cJSON *it = podjson_get(r, parent, key, cJSON_Number, "a number");

    if (!it)
        return 0;
    if (it->valuedouble < -9e15 || it->valuedouble > 9e15) {
        podjson_fail(r, "%s is out of range", key);
        return 0;
    }
    *out = (long long)it->valuedouble;
    return 1;
}

long long podjson_whole_quantity(const cJSON *q)
{
    long long v;

    if (cJSON_IsString(q))
        return quantity_whole(q->valuestring, &v) == 0 ? v : -1;
    if (cJSON_IsNumber(q) && q->valuedouble >= 0 && q->valuedouble <= 1e9 &&
        q->valuedouble == (double)(long long)q->valuedouble)
        return (long long)q->valuedouble;
    return -1;
}
