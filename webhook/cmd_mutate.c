#include "cmd.h"

#include "fsutil.h"
#include "mutate.h"
#include "profiles.h"
#include "review.h"
#include "store.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MUTATE_INPUT_MAX (64u << 20)

static void cmd_mutate_usage(FILE *f)
{
    fprintf(f,
            "Usage: rdma-webhook mutate [--profiles FILE] [--detect-image IMAGE] [--patched] "
            "[FILE|-]\n"
            "\n"
            "Runs the webhook offline on an AdmissionReview, a Pod or a PyTorchJob (JSON; stdin\n"
            "when FILE is - or absent), e.g. kubectl get pod P -o json | rdma-webhook mutate "
            "--patched\n"
            "\n"
            "  --profiles FILE   profiles JSON (default %s)\n"
            "  --detect-image IMAGE\n"
            "                    the image of the init container rdma-webhook-detect, as\n"
            "                    serve --detect-image (without it: no run-time detection)\n"
            "  --patched         print the mutated object instead of the AdmissionReview "
            "response\n"
            "                    (always so for a PyTorchJob)\n"
            "  -h, --help        show this help\n"
            "\n"
            "Warnings go to stderr as kubectl would print them.\n",
            CMD_DEFAULT_PROFILES);
}

static struct profiles *cmd_mutate_load_profiles(const char *path)
{
    struct dynbuf text, errors;
    struct profiles *ps = NULL;
    char err[ERR_LEN] = "";

    dynbuf_init(&text, STORE_TEXT_MAX);
    dynbuf_init(&errors, 65536);
    if (fsutil_read(path, &text, err, sizeof(err))) {
        fprintf(stderr, "rdma-webhook: %s; pass --profiles FILE\n", err);
        goto out;
    }
    ps = profiles_parse(dynbuf_ptr(&text), dynbuf_len(&text), &errors);
    if (!ps)
        fprintf(stderr, "rdma-webhook: %s is not valid:\n%s", path, dynbuf_ptr(&errors));
out:
    dynbuf_free(&text);
    dynbuf_free(&errors);
    return ps;
}

static void cmd_mutate_print_warnings(const struct mutate_warnings *w)
{
    for (size_t i = 0; i < w->n; i++)
        fprintf(stderr, "Warning: %s\n", w->text[i]);
}

/* Mutates one pod or template inside doc and applies the patch to doc. */
static int cmd_mutate_apply_into(cJSON **doc, const cJSON *object, const char *base, const char *ns,
                                 int implicit, const struct profiles *ps,
                                 const struct mutate_options *opts)
{
    struct mutate_input in = {.object = object,
                              .base = base,
                              .namespace_ = ns,
                              .implicit_target = implicit,
                              .opts = opts};
    struct mutate_result res;
    cJSON *ops = NULL;
    char err[ERR_LEN];
    int rc = 0;

    mutate_result_init(&res, REVIEW_PATCH_MAX);
    mutate_object(&in, ps, NULL, &res);
    cmd_mutate_print_warnings(&res.warnings);
    if (res.outcome == MUTATE_PATCHED) {
        /* cJSON_Parse says NULL both out of memory and on text it cannot
         * read, which a patch the webhook wrote would be a bug. */
        ops = cJSON_Parse(dynbuf_ptr(&res.patch.out));
        rc = !ops || patch_apply(doc, ops, err, sizeof(err));
        if (rc)
            fprintf(stderr, "rdma-webhook: cannot apply the patch: %s\n",
                    ops ? err : "out of memory, or unparsable (an internal error)");
    }
    cJSON_Delete(ops);
    mutate_result_free(&res);
    return rc;
}

/* Each replica type's template is mutated as a pod the job would create. */
static int cmd_mutate_pytorchjob(cJSON **doc, const struct profiles *ps,
                                 const struct mutate_options *opts)
{
    const cJSON *specs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(*doc, "spec"), "pytorchReplicaSpecs");
    const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(*doc, "metadata"), "namespace"));
    const cJSON *rs;
    char base[PATCH_PATH_MAX / 2], tok[128];

    if (!cJSON_IsObject(specs)) {
        fprintf(stderr, "rdma-webhook: PyTorchJob has no spec.pytorchReplicaSpecs\n");
        return 1;
    }
    cJSON_ArrayForEach(rs, specs)
    {
        const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(rs, "template");

        if (!cJSON_IsObject(tmpl) || patch_escape_token(rs->string, tok, sizeof(tok)))
            continue;
        snprintf(base, sizeof(base), "/spec/pytorchReplicaSpecs/%s/template", tok);
        if (cmd_mutate_apply_into(doc, tmpl, base, ns ? ns : "default", 1, ps, opts))
            return 1;
    }
    return 0;
}

static int cmd_mutate_print_doc(const cJSON *doc)
{
    char *text = cJSON_Print(doc);

    if (!text)
        return 1;
    puts(text);
    free(text);
    return 0;
}

/* A review: the response the server would send, or with --patched the
 * review's object with the patch applied. */
static int cmd_mutate_review(cJSON **doc, const struct dynbuf *input, const struct profiles *ps,
                             const struct mutate_options *opts, int patched)
{
    cJSON *req = cJSON_GetObjectItemCaseSensitive(*doc, "request");
    const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "namespace"));
    struct review_summary sum;
    struct dynbuf out;
    int status;

    if (patched)
        return cmd_mutate_apply_into(doc, cJSON_GetObjectItemCaseSensitive(req, "object"),
                                     "/request/object", ns ? ns : "default", 0, ps, opts) ||
               cmd_mutate_print_doc(cJSON_GetObjectItemCaseSensitive(req, "object"));
    dynbuf_init(&out, MUTATE_INPUT_MAX);
    status = review_handle(dynbuf_ptr(input), dynbuf_len(input), ps, NULL, opts, &out, &sum);
    if (status == 200)
        puts(dynbuf_ptr(&out));
    else
        fprintf(stderr, "rdma-webhook: HTTP %d: %s\n", status, dynbuf_ptr(&out));
    dynbuf_free(&out);
    return status != 200;
}

/* A bare Pod: the response a review of it would get, or the patched Pod. */
static int cmd_mutate_pod(cJSON **doc, const struct profiles *ps, const struct mutate_options *opts,
                          int patched)
{
    const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(*doc, "metadata"), "namespace"));
    struct mutate_input in = {
        .object = *doc, .base = "", .namespace_ = ns ? ns : "default", .opts = opts};
    struct mutate_result res;
    struct dynbuf out;
    int rc = 1;

    if (patched)
        return cmd_mutate_apply_into(doc, *doc, "", in.namespace_, 0, ps, opts) ||
               cmd_mutate_print_doc(*doc);
    mutate_result_init(&res, REVIEW_PATCH_MAX);
    dynbuf_init(&out, MUTATE_INPUT_MAX);
    mutate_object(&in, ps, NULL, &res);
    cmd_mutate_print_warnings(&res.warnings);
    if (review_write_response(&out, "admission.k8s.io/v1", "offline", &res) == 0) {
        puts(dynbuf_ptr(&out));
        rc = 0;
    }
    dynbuf_free(&out);
    mutate_result_free(&res);
    return rc;
}

static int cmd_mutate_dispatch(const struct dynbuf *input, const struct profiles *ps,
                               const struct mutate_options *opts, int patched)
{
    cJSON *doc = cJSON_ParseWithLength(dynbuf_ptr(input), dynbuf_len(input));
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "kind"));
    int rc = 1;

    if (!doc)
        fprintf(stderr, "rdma-webhook: the input is not JSON (YAML: convert with "
                        "kubectl ... -o json)\n");
    else if (kind && strcmp(kind, "AdmissionReview") == 0)
        rc = cmd_mutate_review(&doc, input, ps, opts, patched);
    else if (kind && strcmp(kind, "Pod") == 0)
        rc = cmd_mutate_pod(&doc, ps, opts, patched);
    else if (kind && strcmp(kind, "PyTorchJob") == 0)
        rc = cmd_mutate_pytorchjob(&doc, ps, opts) || cmd_mutate_print_doc(doc);
    else
        fprintf(stderr,
                "rdma-webhook: input kind \"%s\" is not AdmissionReview, Pod or "
                "PyTorchJob\n",
                kind ? kind : "");
    cJSON_Delete(doc);
    return rc;
}

int cmd_mutate(int argc, char **argv)
{
    static const struct option opts[] = {{"profiles", required_argument, NULL, 'p'},
                                         {"patched", no_argument, NULL, 'P'},
                                         {"detect-image", required_argument, NULL, 'i'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *profiles = CMD_DEFAULT_PROFILES, *path = "-";
    struct mutate_options mopts = {0};
    struct profiles *ps = NULL;
    struct dynbuf input;
    char err[ERR_LEN] = "";
    int c, patched = 0, rc = 1;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'p')
            profiles = optarg;
        else if (c == 'P')
            patched = 1;
        else if (c == 'i')
            mopts.detect_image = optarg;
        else if (c == 'h')
            return cmd_mutate_usage(stdout), 0;
        else
            return cmd_mutate_usage(stderr), 2;
    }
    if (argc - optind > 1)
        return cmd_mutate_usage(stderr), 2;
    if (mopts.detect_image && cmd_check_image(mopts.detect_image, err, sizeof(err)) != ERR_OK) {
        fprintf(stderr, "rdma-webhook mutate: %s\n", err);
        return 2;
    }
    if (optind < argc)
        path = argv[optind];
    dynbuf_init(&input, MUTATE_INPUT_MAX);
    ps = cmd_mutate_load_profiles(profiles);
    if (!ps)
        goto out;
    if (fsutil_read(path, &input, err, sizeof(err))) {
        fprintf(stderr, "rdma-webhook: %s\n", err);
        goto out;
    }
    rc = cmd_mutate_dispatch(&input, ps, &mopts, patched);
out:
    profiles_free(ps);
    dynbuf_free(&input);
    return rc;
}

int cmd_check_profiles(int argc, char **argv)
{
    struct profiles *ps;

    if (argc != 2 || argv[1][0] == '-') {
        fprintf(argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr,
                "Usage: rdma-webhook check-profiles FILE\n\n"
                "Validates a profiles file exactly as serve does; exits 1 with one line per "
                "problem.\n");
        return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    ps = cmd_mutate_load_profiles(argv[1]);
    if (!ps)
        return 1;
    printf("%s: %zu profiles OK:", argv[1], ps->n);
    for (size_t i = 0; i < ps->n; i++)
        printf(" %s", ps->p[i].name);
    printf("\n");
    profiles_free(ps);
    return 0;
}
