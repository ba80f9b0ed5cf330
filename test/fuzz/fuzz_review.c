/* libFuzzer target: request body bytes to response bytes, through the same
 * review_handle() the server calls, in two set-ups: the shipped profiles with
 * no API, and profiles that use every rule the API feeds (match.namespaces by
 * name and selector, detect with an image, pin, a profile in report mode)
 * with a Namespace lookup whose answer the input's length picks: none (it
 * fails), Pod Security baseline, rdma-webhook.io/mode=report, a team label.
 *
 * Besides memory safety (ASan+UBSan), it checks the properties the webhook
 * promises for every input: a 200 response is JSON whose uid is the request's
 * uid byte for byte (what the apiserver compares), and whenever it carries a
 * patch, that patch applies to the request's object and mutating the result
 * again yields no patch (docs/profiles.md, step 4: reinvocation is a no-op). */
#include "base/dynbuf.h"
#include "base/jsonraw.h"
#include "admission/mutate.h"
#include "admission/patch.h"
#include "admission/profiles.h"
#include "admission/report.h"
#include "admission/review.h"

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

/* Every rule an API answer feeds, and the options serve can set. */
static const char fuzz_rich_text[] =
    "{\"profiles\":["
    "{\"name\":\"wide-8\",\"match\":{\"gpus\":8,\"nodeLabels\":{\"t\":\"a\"}},"
    "\"pin\":true,\"hca\":[\"mlx5_1\",\"mlx5_2\"],\"detect\":true},"
    "{\"name\":\"team-8\",\"match\":{\"gpus\":8,\"nodeLabels\":{\"t\":\"a\"},"
    "\"namespaces\":{\"matchExpressions\":[{\"key\":\"team\",\"operator\":\"In\","
    "\"values\":[\"x\"]}]}},\"hca\":[\"mlx5_1\"],\"env\":{\"NCCL_IB_GID_INDEX\":\"3\"}},"
    "{\"name\":\"wide-4\",\"match\":{\"gpus\":4},\"hca\":[\"mlx5_1\"],\"mode\":\"report\"},"
    "{\"name\":\"fuzz-ns\",\"default\":true,\"match\":{\"namespaces\":[\"fuzz\"]},"
    "\"hca\":[\"mlx5_0\"]}]}";

static struct profiles *fuzz_rich_profiles(void)
{
    static struct profiles *ps;

    if (!ps && !(ps = profiles_parse(fuzz_rich_text, strlen(fuzz_rich_text), NULL)))
        abort();
    return ps;
}

/* The Namespace's labels: which answer is the input's (its length mod 4),
 * so that each seed meets a different one as it grows. */
static const char *const fuzz_ns_answers[] = {
    NULL, /* the lookup fails */
    "{\"pod-security.kubernetes.io/enforce\":\"baseline\"}",
    "{\"rdma-webhook.io/mode\":\"report\",\"team\":\"x\"}",
    "{\"team\":\"x\",\"pod-security.kubernetes.io/warn\":\"restricted\"}",
};

static int fuzz_ns_labels(void *ctx, const char *name, cJSON **labels)
{
    const char *text = *(const char *const *)ctx;

    (void)name;
    *labels = text ? cJSON_Parse(text) : NULL;
    return *labels ? 0 : -1;
}

/* A Node lookup that knows no Node, as for a pod bound to one that is gone. */
static int fuzz_node_labels(void *ctx, const char *name, cJSON **labels)
{
    (void)ctx;
    (void)name;
    *labels = NULL;
    return -1;
}

struct fuzz_setup {
    struct profiles *ps;
    const struct mutate_hooks *hooks; /* NULL: no API */
    const struct mutate_options *opts;
};

/* Applies the response's patch to the request object and requires that a
 * second mutation adds nothing. */
static void fuzz_check_idempotent(const uint8_t *data, size_t size, const char *resp,
                                  const struct fuzz_setup *set)
{
    cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
    cJSON *r = cJSON_Parse(resp);
    cJSON *req = cJSON_GetObjectItemCaseSensitive(doc, "request");
    const char *b64 = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "response"), "patch"));
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
                                         .namespace_ = "fuzz",
                                         .opts = set->opts},
                  set->ps, set->hooks, &res);
    if (res.outcome == MUTATE_PATCHED) {
        cJSON *ops = cJSON_Parse(dynbuf_ptr(&res.patch.out));

        if (!ops || patch_apply(&doc, ops, err, sizeof(err)) != 0) {
            fprintf(stderr, "patch does not apply: %s\n", err);
            abort();
        }
        cJSON_Delete(ops);
        mutate_result_init(&again, REVIEW_PATCH_MAX);
        mutate_object(
            &(struct mutate_input){.object = cJSON_GetObjectItemCaseSensitive(
                                       cJSON_GetObjectItemCaseSensitive(doc, "request"), "object"),
                                   .base = "/request/object",
                                   .namespace_ = "fuzz",
                                   .opts = set->opts},
            set->ps, set->hooks, &again);
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

static void fuzz_one(const uint8_t *data, size_t size, const struct fuzz_setup *set)
{
    struct review_summary sum;
    struct dynbuf out;
    int status;

    dynbuf_init(&out, 16u << 20);
    status = review_handle((const char *)data, size, set->ps, set->hooks, set->opts, &out, &sum);
    if (status != 200 && status != 400)
        abort();
    if (status == 200) {
        fuzz_check_uid(data, size, &out);
        fuzz_check_idempotent(data, size, dynbuf_ptr(&out), set);
    }
    dynbuf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *answer = fuzz_ns_answers[size % 4];
    const struct mutate_hooks hooks = {
        .select = {.node_labels = fuzz_node_labels,
                   .namespace_labels = fuzz_ns_labels,
                   .ctx = (void *)&answer},
    };
    const struct mutate_options opts = {.detect_image = "registry.example/rdma-webhook:fuzz",
                                        .mode =
                                            size % 8 < 4 ? REPORT_MODE_UNSET : REPORT_MODE_ENFORCE};
    const struct fuzz_setup plain = {.ps = fuzz_profiles()};
    const struct fuzz_setup rich = {.ps = fuzz_rich_profiles(), .hooks = &hooks, .opts = &opts};

    fuzz_one(data, size, &plain);
    fuzz_one(data, size, &rich);
    return 0;
}
