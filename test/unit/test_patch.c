/*
 * Unit tests for webhook/admission/patch.c: the builder writes valid RFC 6902 JSON
 * (checked by parsing it with cJSON), tokens are escaped per RFC 6901, and
 * patch_apply follows RFC 6902 as evanphx/json-patch (the apiserver's
 * library) does: "add" needs an existing parent, "replace"/"remove"/"test"
 * need an existing target, array indexes have no leading zeros, "-" appends.
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "admission/patch.h"

/* JSON with ' for " so test documents stay readable. */
static cJSON *J(const char *text)
{
    char buf[2048];
    size_t n = strlen(text);
    cJSON *j;

    assert_true(n < sizeof(buf));
    for (size_t i = 0; i <= n; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i];
    j = cJSON_Parse(buf);
    if (!j)
        fail_msg("test JSON does not parse: %s", buf);
    return j;
}

/* What a test holds; freed by teardown, also when an assertion fails. */
static cJSON *doc_, *want_, *ops_;
static char *text_;

static int teardown(void **state __attribute__((unused)))
{
    cJSON_Delete(doc_);
    cJSON_Delete(want_);
    cJSON_Delete(ops_);
    free(text_);
    doc_ = want_ = ops_ = NULL;
    text_ = NULL;
    return 0;
}

/* Applies ops to doc; returns patch_apply's result, err gets the reason. */
static int apply(cJSON **doc, const char *ops, char *err, size_t errlen)
{
    cJSON_Delete(ops_);
    ops_ = J(ops);
    err[0] = '\0';
    return patch_apply(doc, ops_, err, errlen);
}

/* Applies ops to before and checks the result equals after. */
static void assert_patch_gives(const char *before, const char *ops, const char *after)
{
    char err[ERR_LEN];

    teardown(NULL);
    doc_ = J(before);
    want_ = J(after);
    if (apply(&doc_, ops, err, sizeof(err)) != 0)
        fail_msg("patch %s failed: %s", ops, err);
    if (!cJSON_Compare(doc_, want_, 1)) {
        text_ = cJSON_PrintUnformatted(doc_);
        fail_msg("patch %s gave %s, want %s", ops, text_, after);
    }
}

/* Checks the patch fails with a reason and does not crash. */
static void assert_patch_fails(const char *before, const char *ops)
{
    char err[ERR_LEN];

    teardown(NULL);
    doc_ = J(before);
    if (apply(&doc_, ops, err, sizeof(err)) == 0)
        fail_msg("patch %s should have failed on %s", ops, before);
    assert_true(err[0] != '\0');
    assert_null(strchr(err, '\n'));
}

/* ---- builder ---- */

TEST(test_empty_patch_is_empty_array)
{
    struct patch p;
    cJSON *j;

    patch_init(&p, 1024);
    assert_int_equal(patch_finish(&p), 0);
    assert_int_equal(p.n_ops, 0);
    j = cJSON_Parse(dynbuf_ptr(&p.out));
    assert_true(cJSON_IsArray(j));
    assert_int_equal(cJSON_GetArraySize(j), 0);
    cJSON_Delete(j);
    patch_free(&p);
}

TEST(test_builder_output_is_valid_json_with_all_fields)
{
    struct patch p;
    cJSON *j, *op;

    patch_init(&p, 4096);
    patch_op_begin(&p, "add", "/spec/containers/0/env/-");
    jsonw_raw(&p.w, "{\"name\":\"A\",\"value\":\"1\"}");
    patch_op_end(&p);
    patch_op_str(&p, "replace", "/spec/schedulerName", "vol\"cano\\\n");
    patch_op_begin(&p, "remove", "/metadata/labels/x");
    patch_op_end(&p);
    assert_int_equal(patch_finish(&p), 0);
    assert_int_equal(p.n_ops, 3);
    j = cJSON_Parse(dynbuf_ptr(&p.out));
    assert_non_null(j);
    assert_int_equal(cJSON_GetArraySize(j), 3);
    op = cJSON_GetArrayItem(j, 0);
    assert_string_equal(cJSON_GetObjectItem(op, "op")->valuestring, "add");
    assert_string_equal(cJSON_GetObjectItem(op, "path")->valuestring, "/spec/containers/0/env/-");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(op, "value"), "name")->valuestring,
                        "A");
    op = cJSON_GetArrayItem(j, 1);
    assert_string_equal(cJSON_GetObjectItem(op, "value")->valuestring, "vol\"cano\\\n");
    op = cJSON_GetArrayItem(j, 2);
    assert_string_equal(cJSON_GetObjectItem(op, "op")->valuestring, "remove");
    assert_null(cJSON_GetObjectItem(op, "value")); /* remove takes no value */
    cJSON_Delete(j);
    patch_free(&p);
}

TEST(test_builder_path_with_quote_is_escaped_json)
{
    struct patch p;
    cJSON *j;

    patch_init(&p, 1024);
    patch_op_str(&p, "add", "/metadata/annotations/a\"b", "v");
    assert_int_equal(patch_finish(&p), 0);
    j = cJSON_Parse(dynbuf_ptr(&p.out));
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "path")->valuestring,
                        "/metadata/annotations/a\"b");
    cJSON_Delete(j);
    patch_free(&p);
}

TEST(test_builder_over_cap_reports_error)
{
    struct patch p;

    patch_init(&p, 40);
    patch_op_str(&p, "add", "/a/very/long/path/that/does/not/fit", "value");
    assert_int_equal(patch_finish(&p), ERR_TOO_BIG);
    patch_free(&p);
}

TEST(test_built_patch_applies)
{
    struct patch p;
    cJSON *doc = J("{'metadata':{'annotations':{}},'spec':{'containers':[{'name':'c'}]}}");
    cJSON *ops, *want;
    char tok[64], path[PATCH_PATH_MAX], err[ERR_LEN];

    patch_init(&p, 4096);
    assert_int_equal(patch_escape_token("rdma-webhook.io/injected", tok, sizeof(tok)), 0);
    strcpy(path, "/metadata/annotations/");
    strcat(path, tok);
    patch_op_str(&p, "add", path, "roce-8card");
    patch_op_begin(&p, "add", "/spec/containers/0/env");
    jsonw_raw(&p.w, "[{\"name\":\"NCCL_IB_HCA\",\"value\":\"=mlx5_1\"}]");
    patch_op_end(&p);
    assert_int_equal(patch_finish(&p), 0);
    ops = cJSON_Parse(dynbuf_ptr(&p.out));
    assert_non_null(ops);
    assert_int_equal(patch_apply(&doc, ops, err, sizeof(err)), 0);
    want =
        J("{'metadata':{'annotations':{'rdma-webhook.io/injected':'roce-8card'}},"
          "'spec':{'containers':[{'name':'c','env':[{'name':'NCCL_IB_HCA','value':'=mlx5_1'}]}]}}");
    assert_true(cJSON_Compare(doc, want, 1));
    cJSON_Delete(want);
    cJSON_Delete(ops);
    cJSON_Delete(doc);
    patch_free(&p);
}

/* ---- patch_escape_token ---- */

TEST(test_escape_slash_and_tilde)
{
    char out[32];

    assert_int_equal(patch_escape_token("a/b~c", out, sizeof(out)), 0);
    assert_string_equal(out, "a~1b~0c");
}

TEST(test_escape_order_is_tilde_first)
{
    char out[32];

    /* "~1" as data must come out as "~01", not be read back as "/". */
    assert_int_equal(patch_escape_token("~1", out, sizeof(out)), 0);
    assert_string_equal(out, "~01");
}

TEST(test_escape_plain_and_empty)
{
    char out[32];

    assert_int_equal(patch_escape_token("plain.name-1", out, sizeof(out)), 0);
    assert_string_equal(out, "plain.name-1");
    assert_int_equal(patch_escape_token("", out, sizeof(out)), 0);
    assert_string_equal(out, "");
}

TEST(test_escape_exact_fit)
{
    char out[8];

    assert_int_equal(patch_escape_token("a/b~c", out, sizeof(out)), 0); /* 7 + NUL */
    assert_string_equal(out, "a~1b~0c");
}

TEST(test_escape_overflow_is_too_big_and_terminated)
{
    char out[8];

    for (size_t len = 1; len < 8; len++) {
        memset(out, 'X', sizeof(out));
        assert_int_equal(patch_escape_token("a/b~c", out, len), ERR_TOO_BIG);
        assert_true(memchr(out, '\0', len) != NULL);
        /* A truncated token is a prefix of the full one and never splits "~1". */
        assert_int_equal(strncmp(out, "a~1b~0c", strlen(out)), 0);
        assert_true(strlen(out) == 0 || out[strlen(out) - 1] != '~');
    }
}

/* ---- patch_apply: add ---- */

TEST(test_add_to_object)
{
    assert_patch_gives("{'a':1}", "[{'op':'add','path':'/b','value':2}]", "{'a':1,'b':2}");
}

TEST(test_add_existing_member_replaces_it)
{
    assert_patch_gives("{'a':1}", "[{'op':'add','path':'/a','value':[3]}]", "{'a':[3]}");
}

TEST(test_add_nested_object_value)
{
    assert_patch_gives("{'s':{}}", "[{'op':'add','path':'/s/c','value':{'add':['IPC_LOCK']}}]",
                       "{'s':{'c':{'add':['IPC_LOCK']}}}");
}

TEST(test_add_at_array_index_inserts)
{
    assert_patch_gives("{'x':[1,2]}", "[{'op':'add','path':'/x/1','value':9}]", "{'x':[1,9,2]}");
    assert_patch_gives("{'x':[1,2]}", "[{'op':'add','path':'/x/0','value':9}]", "{'x':[9,1,2]}");
}

TEST(test_add_at_array_length_appends)
{
    assert_patch_gives("{'x':[1,2]}", "[{'op':'add','path':'/x/2','value':9}]", "{'x':[1,2,9]}");
    assert_patch_gives("{'x':[]}", "[{'op':'add','path':'/x/0','value':9}]", "{'x':[9]}");
}

TEST(test_add_dash_appends)
{
    assert_patch_gives("{'x':[1,2]}", "[{'op':'add','path':'/x/-','value':{'k':'v'}}]",
                       "{'x':[1,2,{'k':'v'}]}");
}

TEST(test_add_past_array_end_fails)
{
    assert_patch_fails("{'x':[1,2]}", "[{'op':'add','path':'/x/3','value':9}]");
}

TEST(test_add_under_missing_parent_fails)
{
    assert_patch_fails("{'a':{}}", "[{'op':'add','path':'/b/c','value':1}]");
    assert_patch_fails("{'a':{}}", "[{'op':'add','path':'/a/b/c','value':1}]");
    assert_patch_fails("{'spec':{'containers':[{}]}}",
                       "[{'op':'add','path':'/spec/containers/0/env/-','value':{}}]");
}

TEST(test_add_under_scalar_parent_fails)
{
    assert_patch_fails("{'a':1}", "[{'op':'add','path':'/a/b','value':1}]");
}

TEST(test_add_without_value_fails)
{
    assert_patch_fails("{'a':1}", "[{'op':'add','path':'/b'}]");
}

TEST(test_add_whole_document)
{
    assert_patch_gives("{'a':1}", "[{'op':'add','path':'','value':{'b':2}}]", "{'b':2}");
}

TEST(test_add_dash_on_object_is_a_member_name)
{
    assert_patch_gives("{'o':{}}", "[{'op':'add','path':'/o/-','value':1}]", "{'o':{'-':1}}");
}

TEST(test_add_numeric_member_name_on_object)
{
    assert_patch_gives("{'o':{}}", "[{'op':'add','path':'/o/01','value':1}]", "{'o':{'01':1}}");
}

/* ---- replace / remove / test ---- */

TEST(test_replace_existing)
{
    assert_patch_gives("{'s':'default-scheduler'}",
                       "[{'op':'replace','path':'/s','value':'volcano'}]", "{'s':'volcano'}");
    assert_patch_gives("{'x':[1,2]}", "[{'op':'replace','path':'/x/1','value':5}]", "{'x':[1,5]}");
}

TEST(test_replace_missing_fails)
{
    assert_patch_fails("{'a':1}", "[{'op':'replace','path':'/b','value':2}]");
    assert_patch_fails("{'x':[1]}", "[{'op':'replace','path':'/x/1','value':2}]");
    assert_patch_fails("{'x':[1]}", "[{'op':'replace','path':'/x/-','value':2}]");
}

TEST(test_remove_member)
{
    assert_patch_gives("{'a':1,'b':2}", "[{'op':'remove','path':'/a'}]", "{'b':2}");
}

TEST(test_remove_array_element_shifts)
{
    assert_patch_gives("{'x':[1,2,3]}", "[{'op':'remove','path':'/x/0'}]", "{'x':[2,3]}");
}

TEST(test_remove_missing_fails)
{
    assert_patch_fails("{'a':1}", "[{'op':'remove','path':'/b'}]");
    assert_patch_fails("{'x':[]}", "[{'op':'remove','path':'/x/0'}]");
}

TEST(test_test_equal_passes)
{
    assert_patch_gives("{'a':{'b':[1,'x']}}", "[{'op':'test','path':'/a','value':{'b':[1,'x']}}]",
                       "{'a':{'b':[1,'x']}}");
}

TEST(test_test_different_fails)
{
    assert_patch_fails("{'a':1}", "[{'op':'test','path':'/a','value':2}]");
    assert_patch_fails("{'a':'1'}", "[{'op':'test','path':'/a','value':1}]");
}

TEST(test_test_missing_fails)
{
    assert_patch_fails("{'a':1}", "[{'op':'test','path':'/b','value':1}]");
}

/* ---- pointers ---- */

TEST(test_escaped_tokens_resolve)
{
    assert_patch_gives("{'a/b':1,'m~n':2}",
                       "[{'op':'test','path':'/a~1b','value':1},"
                       "{'op':'test','path':'/m~0n','value':2},"
                       "{'op':'add','path':'/c~1d','value':3}]",
                       "{'a/b':1,'m~n':2,'c/d':3}");
}

TEST(test_tilde_01_is_tilde_then_1)
{
    assert_patch_gives("{}", "[{'op':'add','path':'/~01','value':1}]", "{'~1':1}");
}

TEST(test_bad_escape_fails)
{
    assert_patch_fails("{'a~2':1}", "[{'op':'test','path':'/a~2','value':1}]");
    assert_patch_fails("{}", "[{'op':'add','path':'/a~','value':1}]");
    assert_patch_fails("{}", "[{'op':'add','path':'/a~x','value':1}]");
}

TEST(test_leading_zero_index_fails)
{
    assert_patch_fails("{'x':[1,2]}", "[{'op':'replace','path':'/x/01','value':5}]");
    assert_patch_fails("{'x':[1,2]}", "[{'op':'add','path':'/x/01','value':5}]");
    assert_patch_fails("{'x':[1,2]}", "[{'op':'remove','path':'/x/00'}]");
}

TEST(test_zero_index_is_fine)
{
    assert_patch_gives("{'x':[1,2]}", "[{'op':'replace','path':'/x/0','value':5}]", "{'x':[5,2]}");
}

TEST(test_negative_or_non_numeric_index_fails)
{
    assert_patch_fails("{'x':[1,2]}", "[{'op':'replace','path':'/x/-1','value':5}]");
    assert_patch_fails("{'x':[1,2]}", "[{'op':'replace','path':'/x/a','value':5}]");
    assert_patch_fails("{'x':[1,2]}", "[{'op':'replace','path':'/x/1a','value':5}]");
    assert_patch_fails("{'x':[1,2]}", "[{'op':'add','path':'/x/99999999999','value':5}]");
}

TEST(test_path_without_leading_slash_fails)
{
    assert_patch_fails("{'a':1}", "[{'op':'replace','path':'a','value':5}]");
}

TEST(test_empty_token_is_empty_member_name)
{
    assert_patch_gives("{'':{'x':1}}", "[{'op':'test','path':'/','value':{'x':1}}]",
                       "{'':{'x':1}}");
}

/* ---- the patch as a whole ---- */

TEST(test_ops_apply_in_order)
{
    assert_patch_gives("{}",
                       "[{'op':'add','path':'/a','value':[]},"
                       "{'op':'add','path':'/a/-','value':1},"
                       "{'op':'add','path':'/a/0','value':0}]",
                       "{'a':[0,1]}");
}

TEST(test_failure_stops_at_the_bad_op)
{
    cJSON *doc = J("{}");
    char err[ERR_LEN];

    assert_int_equal(apply(&doc,
                           "[{'op':'add','path':'/a','value':1},"
                           "{'op':'add','path':'/x/y','value':2},"
                           "{'op':'add','path':'/c','value':3}]",
                           err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "/x/y"));
    assert_null(cJSON_GetObjectItem(doc, "c"));
    cJSON_Delete(doc);
}

TEST(test_patch_not_an_array_fails)
{
    assert_patch_fails("{}", "{'op':'add','path':'/a','value':1}");
}

TEST(test_op_without_op_or_path_fails)
{
    assert_patch_fails("{}", "[{'path':'/a','value':1}]");
    assert_patch_fails("{}", "[{'op':'add','value':1}]");
}

TEST(test_unsupported_op_fails)
{
    assert_patch_fails("{'a':1}", "[{'op':'frobnicate','path':'/a','value':1}]");
}

TEST(test_small_err_buffer_is_not_overrun)
{
    cJSON *doc = J("{}");
    cJSON *ops = J("[{'op':'replace','path':'/a/very/long/path/indeed','value':1}]");
    char err[8];

    memset(err, 'X', sizeof(err));
    assert_int_equal(patch_apply(&doc, ops, err, sizeof(err)), ERR_FAIL);
    assert_true(memchr(err, '\0', sizeof(err)) != NULL);
    cJSON_Delete(ops);
    cJSON_Delete(doc);
}

/* More than a starved heap has left. */
static char big[1 << 18];

/* In the starved child: 0 when copying the value failed as ERR_NOMEM and said
 * "out of memory", 1 when it failed otherwise, 2 when it succeeded. */
static int apply_starved(void *arg)
{
    char err[ERR_LEN] = "";
    int rc = patch_apply(&doc_, arg, err, sizeof(err));

    if (rc == ERR_OK)
        return 2;
    return rc == ERR_NOMEM && strstr(err, "out of memory") ? 0 : 1;
}

/* Out of memory is not a patch that does not apply. */
TEST(test_out_of_memory_is_not_a_bad_patch)
{
    static const char *const why[] = {"not ERR_NOMEM saying \"out of memory\"", "succeeded", NULL};
    cJSON *op;

    memset(big, 'v', sizeof(big) - 1);
    doc_ = J("{}");
    ops_ = J("[{'op':'add','path':'/a'}]");
    op = cJSON_GetArrayItem(ops_, 0);
    assert_non_null(cJSON_AddStringToObject(op, "value", big));
    support_assert_starved(apply_starved, ops_, "applying without memory", why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_empty_patch_is_empty_array, teardown),
        cmocka_unit_test_teardown(test_builder_output_is_valid_json_with_all_fields, teardown),
        cmocka_unit_test_teardown(test_builder_path_with_quote_is_escaped_json, teardown),
        cmocka_unit_test_teardown(test_builder_over_cap_reports_error, teardown),
        cmocka_unit_test_teardown(test_built_patch_applies, teardown),
        cmocka_unit_test_teardown(test_escape_slash_and_tilde, teardown),
        cmocka_unit_test_teardown(test_escape_order_is_tilde_first, teardown),
        cmocka_unit_test_teardown(test_escape_plain_and_empty, teardown),
        cmocka_unit_test_teardown(test_escape_exact_fit, teardown),
        cmocka_unit_test_teardown(test_escape_overflow_is_too_big_and_terminated, teardown),
        cmocka_unit_test_teardown(test_add_to_object, teardown),
        cmocka_unit_test_teardown(test_add_existing_member_replaces_it, teardown),
        cmocka_unit_test_teardown(test_add_nested_object_value, teardown),
        cmocka_unit_test_teardown(test_add_at_array_index_inserts, teardown),
        cmocka_unit_test_teardown(test_add_at_array_length_appends, teardown),
        cmocka_unit_test_teardown(test_add_dash_appends, teardown),
        cmocka_unit_test_teardown(test_add_past_array_end_fails, teardown),
        cmocka_unit_test_teardown(test_add_under_missing_parent_fails, teardown),
        cmocka_unit_test_teardown(test_add_under_scalar_parent_fails, teardown),
        cmocka_unit_test_teardown(test_add_without_value_fails, teardown),
        cmocka_unit_test_teardown(test_add_whole_document, teardown),
        cmocka_unit_test_teardown(test_add_dash_on_object_is_a_member_name, teardown),
        cmocka_unit_test_teardown(test_add_numeric_member_name_on_object, teardown),
        cmocka_unit_test_teardown(test_replace_existing, teardown),
        cmocka_unit_test_teardown(test_replace_missing_fails, teardown),
        cmocka_unit_test_teardown(test_remove_member, teardown),
        cmocka_unit_test_teardown(test_remove_array_element_shifts, teardown),
        cmocka_unit_test_teardown(test_remove_missing_fails, teardown),
        cmocka_unit_test_teardown(test_test_equal_passes, teardown),
        cmocka_unit_test_teardown(test_test_different_fails, teardown),
        cmocka_unit_test_teardown(test_test_missing_fails, teardown),
        cmocka_unit_test_teardown(test_escaped_tokens_resolve, teardown),
        cmocka_unit_test_teardown(test_tilde_01_is_tilde_then_1, teardown),
        cmocka_unit_test_teardown(test_bad_escape_fails, teardown),
        cmocka_unit_test_teardown(test_leading_zero_index_fails, teardown),
        cmocka_unit_test_teardown(test_zero_index_is_fine, teardown),
        cmocka_unit_test_teardown(test_negative_or_non_numeric_index_fails, teardown),
        cmocka_unit_test_teardown(test_path_without_leading_slash_fails, teardown),
        cmocka_unit_test_teardown(test_empty_token_is_empty_member_name, teardown),
        cmocka_unit_test_teardown(test_ops_apply_in_order, teardown),
        cmocka_unit_test_teardown(test_failure_stops_at_the_bad_op, teardown),
        cmocka_unit_test_teardown(test_patch_not_an_array_fails, teardown),
        cmocka_unit_test_teardown(test_op_without_op_or_path_fails, teardown),
        cmocka_unit_test_teardown(test_unsupported_op_fails, teardown),
        cmocka_unit_test_teardown(test_small_err_buffer_is_not_overrun, teardown),
        cmocka_unit_test_teardown(test_out_of_memory_is_not_a_bad_patch, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
