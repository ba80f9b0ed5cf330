/* libFuzzer target: request body bytes to response bytes, through the same
 * review_handle() the server calls, with the shipped profiles.
 *
 * Besides memory safety (ASan+UBSan), it checks the properties the webhook
 * promises for every input: a 200 response is JSON whose uid is the request's
 * uid byte for byte (what the apiserver compares), and whenever it carries a
 * patch, that patch applies to the request's object and mutating the result
 * again yields no patch (SPEC 1.4: reinvocation is a no-op). */
#include "dynbuf.h"
#include "jsonraw.h"
#include "mutate.h"
#include "patch.h"
#include "profiles.h"
#include "review.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_PROFILES
#define FUZZ_PROFILES "manifests/profiles.json"
#endif

static struct profiles *fuzz_profiles(void)
{
    static struct profiles *ps;
    char buf[1 << 16];
    FILE *f;
    size_t n;

    if (ps)
        return ps;
    f = fopen(FUZZ_PROFILES, "rb");
    if (!f)
        abort();
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    ps = profiles_parse(buf, n, NULL);
    if (!ps)
        abort();
    return ps;
}

/* Applies the response's patch to the request object and requires that a
 * second mutation adds nothing. */
static void fuzz_check_idempotent(const uint8_t *data, size_t size, const char *resp)
{
    cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
    cJSON *r = cJSON_Parse(resp);
    cJSON *req = cJSON_GetObjectItemCaseSensitive(doc, "request");
    const char *b64 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r, "response"), "patch"));
    struct mutate_result res;
    struct mutate_result again;
    char err[256];

    if (!r)
        abort(); /* a 200 must be JSON */
    if (!b64 || !doc)
        goto out;
    mutate_result_init(&res, REVIEW_PATCH_MAX);
    mutate_object(&(struct mutate_input){.object = cJSON_GetObjectItemCaseSensitive(req, "object"),
                                          .base = "/request/object",
                                          .namespace_ = "fuzz"},
                  fuzz_profiles(), NULL, &res);
    if (res.outcome == MUTATE_PATCHED) {
        cJSON *ops = cJSON_Parse(dynbuf_ptr(&res.patch.out));

        if (!ops || patch_apply(&doc, ops, err, sizeof(err)) != 0) {
            fprintf(stderr, "patch does not apply: %s\n", err);
            abort();
        }
        cJSON_Delete(ops);
        mutate_result_init(&again, REVIEW_PATCH_MAX);
        mutate_object(&(struct mutate_input){
                          .object = cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(doc, "request"), "object"),
                          .base = "/request/object",
                          .namespace_ = "fuzz"},
                      fuzz_profiles(), NULL, &again);
        if (again.outcome == MUTATE_PATCHED) {
            fprintf(stderr, "second mutation not empty: %s\n", dynbuf_ptr(&again.patch.out));
            abort();
        }
        mutate_result_free(&again);
    }
    mutate_result_free(&res);
out:
    cJSON_Delete(doc);
    cJSON_Delete(r);
}

/* The string at root.outer.uid unescaped into a new buffer (*len bytes), or
 * NULL. The request's is read as review_handle() must read it: exactly. */
static char *fuzz_uid(const char *text, size_t len, const char *outer, size_t *len_out)
{
    struct jsonraw v;
    char *buf;

    if (jsonraw_member(jsonraw_root(text, len), outer, strlen(outer), &v) < 0 ||
        jsonraw_member(v, "uid", 3, &v) < 0 ||
        (*len_out = jsonraw_string(v, NULL, 0)) == JSONRAW_NOT_STRING)
        return NULL;
    buf = malloc(*len_out + 1);
    if (!buf)
        abort();
    jsonraw_string(v, buf, *len_out);
    return buf;
}

static void fuzz_check_uid(const uint8_t *data, size_t size, const struct dynbuf *out)
{
    size_t in_len = 0, out_len = 0;
    char *in = fuzz_uid((const char *)data, size, "request", &in_len);
    char *echoed = fuzz_uid(dynbuf_ptr(out), dynbuf_len(out), "response", &out_len);

    if (!in || !echoed || in_len != out_len || memcmp(in, echoed, in_len) != 0) {
        fprintf(stderr, "the response's uid is not the request's\n");
        abort();
    }
    free(in);
    free(echoed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct review_summary sum;
    struct dynbuf out;
    int status;

    dynbuf_init(&out, 16u << 20);
    status = review_handle((const char *)data, size, fuzz_profiles(), NULL, NULL, &out, &sum);
    if (status != 200 && status != 400)
        abort();
    if (status == 200) {
        fuzz_check_uid(data, size, &out);
        fuzz_check_idempotent(data, size, dynbuf_ptr(&out));
    }
    dynbuf_free(&out);
    return 0;
}
