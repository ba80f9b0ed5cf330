/*
 * Unit tests for webhook/admission/mutconf.c: /etc/nccl.conf for the ranks
 * mpirun starts over ssh (docs/profiles.md "NCCL settings for ranks started
 * over ssh").
 *
 * Each test mutates a small pod with a small profiles document, applies the
 * patch with patch_apply() and asserts on the patched pod: the annotation's
 * text, the downwardAPI volume, the container's mount. Every run also
 * mutates the patched pod again and asserts that the second call adds
 * nothing (the apiserver's reinvocation).
 */
#include "unit.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/mutate.h"
#include "admission/patch.h"
#include "admission/profiles.h"
#include "admission/report.h"
#include "base/dynbuf.h"
#include "base/err.h"
#include "base/trace.h"

#define CONF_KEY "rdma-webhook.io/nccl-conf"
#define CONF_VOL "rdma-webhook-nccl-conf"
#define NAME63   "a23456789012345678901234567890123456789012345678901234567890123"

/* An MPIJob's worker (mpi-operator v0.7's owner reference). */
#define MPI_POD(meta, spec)                                                                        \
    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'w-0','namespace':'ns',"                   \
    "'ownerReferences':[{'apiVersion':'kubeflow.org/v2beta1','kind':'MPIJob','name':'j',"          \
    "'uid':'u1','controller':true}]" meta "},'spec':" spec "}"
/* A PyTorchJob's pod: its ranks are started by torchrun, not over ssh. */
#define PT_POD(spec)                                                                               \
    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'w-0','namespace':'ns',"                   \
    "'labels':{'training.kubeflow.org/operator-name':'pytorchjob-controller'}},'spec':" spec "}"
#define GPU(name, extra)                                                                           \
    "{'name':'" name "','image':'i','resources':{'limits':{'nvidia.com/gpu':'8'}}" extra "}"
/* One profile; conf is its ncclConf member, or "". */
#define PROFILES(conf)                                                                             \
    "{'targets':{'mpijob':true},'defaults':{'env':{'NCCL_IB_TIMEOUT':'22',"                        \
    "'NCCL_SOCKET_IFNAME':'eth0'}},'profiles':[{'name':'p','default':true,"                        \
    "'hca':['mlx5_1','mlx5_2']" conf "}]}"
/* The profile's variables as the file writes them, in its order. */
#define PROFILE_LINES "NCCL_IB_TIMEOUT=22\nNCCL_SOCKET_IFNAME=eth0\nNCCL_IB_HCA==mlx5_1,mlx5_2\n"

static struct {
    struct profiles *ps;
    cJSON *doc, *patched, *ops;
    struct mutate_result res, again;
    int have_res, have_again;
    struct trace trace;
    int have_trace;
    struct mutate_options opts;
} T;

static int teardown(void **state __attribute__((unused)))
{
    cJSON_Delete(T.doc);
    cJSON_Delete(T.patched);
    cJSON_Delete(T.ops);
    if (T.have_res)
        mutate_result_free(&T.res);
    if (T.have_again)
        mutate_result_free(&T.again);
    if (T.have_trace)
        trace_free(&T.trace);
    profiles_free(T.ps);
    memset(&T, 0, sizeof(T));
    return 0;
}

static void mutate_doc(const cJSON *doc, struct mutate_result *res, struct trace *trace)
{
    struct mutate_input in = {
        .object = doc, .base = "", .namespace_ = "ns", .opts = &T.opts, .trace = trace};

    mutate_result_init(res, 1 << 20);
    mutate_object(&in, T.ps, NULL, res);
    /* What kubectl prints: the lead, and under its 120 bytes. */
    for (size_t i = 0; i < res->warnings.n; i++) {
        assert_true(strncmp(res->warnings.text[i], "rdma-webhook: ", 14) == 0);
        assert_true(strlen(res->warnings.text[i]) < MUTATE_WARNING_MAX);
    }
}

/* Mutates pod under profiles, applies the patch, and mutates the result
 * again, which must add nothing. */
static void run(const char *profiles, const char *pod)
{
    char err[ERR_LEN];

    T.ps = support_profiles(profiles);
    T.doc = support_json_parse(pod);
    assert_non_null(T.doc);
    trace_init(&T.trace, 1000, 1 << 20);
    T.have_trace = 1;
    mutate_doc(T.doc, &T.res, &T.trace);
    T.have_res = 1;
    T.patched = cJSON_Duplicate(T.doc, 1);
    if (T.res.patch.n_ops == 0)
        return;
    T.ops = cJSON_Parse(dynbuf_ptr(&T.res.patch.out));
    assert_non_null(T.ops);
    if (patch_apply(&T.patched, T.ops, err, sizeof(err)))
        fail_msg("patch does not apply: %s: %s", err, dynbuf_ptr(&T.res.patch.out));
    mutate_doc(T.patched, &T.again, NULL);
    T.have_again = 1;
    if (T.again.patch.n_ops != 0)
        fail_msg("the second call adds: %s", dynbuf_ptr(&T.again.patch.out));
}

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *annotation(const char *key)
{
    return cJSON_GetStringValue(get(get(get(T.patched, "metadata"), "annotations"), key));
}

static const cJSON *container(int i)
{
    return cJSON_GetArrayItem(get(get(T.patched, "spec"), "containers"), i);
}

static const cJSON *volume(const char *name)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, get(get(T.patched, "spec"), "volumes"))
    {
        if (strcmp(cJSON_GetStringValue(get(v, "name")), name) == 0)
            return v;
    }
    return NULL;
}

/* Container i's mount at /etc/nccl.conf, or NULL. */
static const cJSON *conf_mount(int i)
{
    const cJSON *mnt;

    cJSON_ArrayForEach(mnt, get(container(i), "volumeMounts"))
    {
        if (strcmp(cJSON_GetStringValue(get(mnt, "mountPath")), "/etc/nccl.conf") == 0)
            return mnt;
    }
    return NULL;
}

static int mounts_at(int i, const char *path)
{
    const cJSON *mnt;
    int n = 0;

    cJSON_ArrayForEach(mnt, get(container(i), "volumeMounts"))
    {
        n += strcmp(cJSON_GetStringValue(get(mnt, "mountPath")), path) == 0;
    }
    return n;
}

static void assert_mounted(int i, const char *sub_path)
{
    const cJSON *mnt = conf_mount(i);

    assert_non_null(mnt);
    assert_string_equal(cJSON_GetStringValue(get(mnt, "name")), CONF_VOL);
    assert_string_equal(cJSON_GetStringValue(get(mnt, "subPath")), sub_path);
    assert_true(cJSON_IsTrue(get(mnt, "readOnly")));
}

static void assert_no_file(void)
{
    assert_null(annotation(CONF_KEY));
    assert_null(conf_mount(0));
}

static int warned(const char *phrase)
{
    for (size_t i = 0; i < T.res.warnings.n; i++)
        if (strstr(T.res.warnings.full[i], phrase))
            return 1;
    return 0;
}

/* ---- when ---- */

TEST(test_auto_on_for_mpijob_content_equals_env)
{
    const cJSON *items;
    const cJSON *env;
    char want[512] = "";

    run(PROFILES(""), MPI_POD("", "{'containers':[" GPU("w", "") "]}"));
    assert_int_equal(T.res.outcome, MUTATE_PATCHED);
    /* The file is the container's NCCL env, line for line. */
    env = get(container(0), "env");
    for (const cJSON *e = env ? env->child : NULL; e; e = e->next)
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s=%s\n",
                 cJSON_GetStringValue(get(e, "name")), cJSON_GetStringValue(get(e, "value")));
    assert_string_equal(annotation(CONF_KEY), PROFILE_LINES);
    assert_string_equal(annotation(CONF_KEY), want);
    assert_mounted(0, "nccl.conf");
    items = get(get(volume(CONF_VOL), "downwardAPI"), "items");
    assert_int_equal(cJSON_GetArraySize(items), 1);
    assert_string_equal(cJSON_GetStringValue(get(cJSON_GetArrayItem(items, 0), "path")),
                        "nccl.conf");
    assert_string_equal(
        cJSON_GetStringValue(get(get(cJSON_GetArrayItem(items, 0), "fieldRef"), "fieldPath")),
        "metadata.annotations['" CONF_KEY "']");
    /* The annotations object was made by the first add; the others are per key. */
    assert_string_equal(annotation("rdma-webhook.io/injected"), "p");
    assert_string_equal(annotation("rdma-webhook.io/selected-by"), "default");
}

TEST(test_auto_off_for_pytorchjob)
{
    run(PROFILES(""), PT_POD("{'containers':[" GPU("pytorch", "") "]}"));
    assert_int_equal(T.res.outcome, MUTATE_PATCHED);
    assert_no_file();
    assert_null(volume(CONF_VOL));
    assert_null(strstr(trace_finish(&T.trace), "/etc/nccl.conf"));
}

TEST(test_true_on_for_pytorchjob)
{
    run(PROFILES(",'ncclConf':true"), PT_POD("{'containers':[" GPU("pytorch", "") "]}"));
    assert_string_equal(annotation(CONF_KEY), PROFILE_LINES);
    assert_mounted(0, "nccl.conf");
}

TEST(test_false_off_for_mpijob)
{
    run(PROFILES(",'ncclConf':false"), MPI_POD("", "{'containers':[" GPU("w", "") "]}"));
    assert_int_equal(T.res.outcome, MUTATE_PATCHED);
    assert_no_file();
    assert_contains(trace_finish(&T.trace), "/etc/nccl.conf: off (ncclConf false)");
    assert_null(volume(CONF_VOL));
}

TEST(test_defaults_setting_inherited)
{
    run("{'targets':{'mpijob':true},'defaults':{'ncclConf':false},'profiles':[{'name':'p',"
        "'default':true,'hca':['mlx5_1']}]}",
        MPI_POD("", "{'containers':[" GPU("w", "") "]}"));
    assert_no_file();
}

TEST(test_ib_off_container_gets_no_file)
{
    run(PROFILES(""),
        MPI_POD("", "{'containers':[" GPU("w",
                                          ",'env':[{'name':'NCCL_IB_DISABLE','value':'1'}]") "]}"));
    assert_no_file();
    assert_null(volume(CONF_VOL));
}

/* ---- what ---- */

TEST(test_user_values_win_and_are_written)
{
    run(PROFILES(""), MPI_POD("", "{'containers':[" GPU("w", ",'env':[{'name':'NCCL_IB_TIMEOUT',"
                                                             "'value':'20'},{'name':'NCCL_DEBUG',"
                                                             "'value':'INFO'},{'name':'OTHER',"
                                                             "'value':'x'}]") "]}"));
    assert_string_equal(annotation(CONF_KEY), "NCCL_IB_TIMEOUT=20\nNCCL_DEBUG=INFO\n"
                                              "NCCL_SOCKET_IFNAME=eth0\nNCCL_IB_HCA==mlx5_1,"
                                              "mlx5_2\n");
}

TEST(test_last_entry_of_a_name_wins)
{
    run(PROFILES(""),
        MPI_POD("", "{'containers':[" GPU("w", ",'env':[{'name':'NCCL_DEBUG','value':'WARN'},"
                                               "{'name':'NCCL_DEBUG','value':'INFO'}]") "]}"));
    assert_string_equal(annotation(CONF_KEY), "NCCL_DEBUG=INFO\n" PROFILE_LINES);
}

TEST(test_value_from_left_out)
{
    run(PROFILES(""),
        MPI_POD("", "{'containers':[" GPU(
                        "w", ",'env':[{'name':'NCCL_IB_TIMEOUT','valueFrom':{'fieldRef':{"
                             "'fieldPath':'metadata.name'}}}]") "]}"));
    assert_string_equal(annotation(CONF_KEY), "NCCL_SOCKET_IFNAME=eth0\nNCCL_IB_HCA==mlx5_1,"
                                              "mlx5_2\n");
    assert_contains(trace_finish(&T.trace), "NCCL_IB_TIMEOUT left out: set through valueFrom");
}

TEST(test_newline_and_expansion_left_out)
{
    run(PROFILES(""),
        MPI_POD("", "{'containers':[" GPU("w",
                                          ",'env':[{'name':'NCCL_DEBUG','value':'IN\\nFO'},"
                                          "{'name':'NCCL_DEBUG_FILE','value':'/x/$(POD)'}]") "]}"));
    assert_string_equal(annotation(CONF_KEY), PROFILE_LINES);
    assert_contains(trace_finish(&T.trace), "NCCL_DEBUG left out: its value has a newline");
    assert_contains(trace_finish(&T.trace), "NCCL_DEBUG_FILE left out: the kubelet expands");
}

TEST(test_value_past_1023_bytes_left_out)
{
    char pod[4096], value[1025];

    memset(value, 'a', 1024);
    value[1024] = '\0';
    snprintf(
        pod, sizeof(pod),
        MPI_POD("", "{'containers':[" GPU("w", ",'env':[{'name':'NCCL_DEBUG_SUBSYS','value':"
                                               "'%s'},{'name':'NCCL_ALGO','value':'%s'}]") "]}"),
        value, value + 1);
    run(PROFILES(""), pod);
    /* 1023 bytes NCCL reads whole; 1024 it would cut. */
    assert_non_null(strstr(annotation(CONF_KEY), "NCCL_ALGO="));
    assert_null(strstr(annotation(CONF_KEY), "NCCL_DEBUG_SUBSYS"));
}

TEST(test_envfrom_variables_left_out)
{
    run(PROFILES(""), MPI_POD("", "{'containers':[" GPU(
                                      "w", ",'envFrom':[{'configMapRef':{'name':'nccl'}}]") "]}"));
    /* No lookup: the ConfigMap's keys lose to the profile's, which are added. */
    assert_string_equal(annotation(CONF_KEY), PROFILE_LINES);
    assert_contains(trace_finish(&T.trace), "envFrom variables left out");
}

TEST(test_detected_container_file_lacks_the_detected)
{
    T.opts.detect_image = "img";
    run(PROFILES(",'detect':true"), MPI_POD("", "{'containers':[" GPU("w", "") "]}"));
    /* NCCL_IB_HCA is the detected file's (~/.nccl.conf for root, read first); the
     * environment's NCCL_CONF_FILE is not the file's to set. */
    assert_string_equal(annotation(CONF_KEY), "NCCL_IB_TIMEOUT=22\nNCCL_SOCKET_IFNAME=eth0\n");
    assert_mounted(0, "nccl.conf");
    assert_contains(trace_finish(&T.trace),
                    "NCCL_CONF_FILE left out: NCCL reads it from the environment only");
}

/* ---- how many ---- */

TEST(test_one_annotation_per_distinct_content)
{
    const cJSON *items;

    run(PROFILES(""), MPI_POD("", "{'containers':[" GPU("a", "") "," GPU("b", "") "," GPU(
                                      "c", ",'env':[{'name':'NCCL_DEBUG','value':'INFO'}]") "]}"));
    assert_string_equal(annotation(CONF_KEY), PROFILE_LINES);
    assert_string_equal(annotation(CONF_KEY "-1"), "NCCL_DEBUG=INFO\n" PROFILE_LINES);
    assert_null(annotation(CONF_KEY "-2"));
    assert_mounted(0, "nccl.conf");
    assert_mounted(1, "nccl.conf");
    assert_mounted(2, "nccl-1.conf");
    items = get(get(volume(CONF_VOL), "downwardAPI"), "items");
    assert_int_equal(cJSON_GetArraySize(items), 2);
    assert_string_equal(
        cJSON_GetStringValue(get(get(cJSON_GetArrayItem(items, 1), "fieldRef"), "fieldPath")),
        "metadata.annotations['" CONF_KEY "-1']");
}

/* Past the bounds: no file, a warning, and the pod otherwise mutated. */
TEST(test_past_the_bounds_no_file)
{
    static char pod[64 * 1024];
    struct dynbuf env;

    dynbuf_init(&env, sizeof(pod));
    for (int i = 0; i <= 256; i++)
        assert_int_equal(dynbuf_printf(&env, ",{'name':'NCCL_X%d','value':'1'}", i), ERR_OK);
    snprintf(pod, sizeof(pod), MPI_POD("", "{'containers':[" GPU("w", ",'env':[%s]") "]}"),
             dynbuf_ptr(&env) + 1);
    dynbuf_free(&env);
    run(PROFILES(""), pod);
    assert_no_file();
    assert_null(volume(CONF_VOL));
    assert_true(warned("too many NCCL_* for /etc/nccl.conf"));
    assert_string_equal(annotation("rdma-webhook.io/injected"), "p");
}

TEST(test_past_16_kib_no_file)
{
    static char pod[64 * 1024];
    char value[1001];
    struct dynbuf env;

    memset(value, 'v', 1000);
    value[1000] = '\0';
    dynbuf_init(&env, sizeof(pod));
    for (int i = 0; i < 17; i++)
        assert_int_equal(dynbuf_printf(&env, ",{'name':'NCCL_X%d','value':'%s'}", i, value),
                         ERR_OK);
    snprintf(pod, sizeof(pod), MPI_POD("", "{'containers':[" GPU("w", ",'env':[%s]") "]}"),
             dynbuf_ptr(&env) + 1);
    dynbuf_free(&env);
    run(PROFILES(""), pod);
    assert_no_file();
    assert_true(warned("too many NCCL_* for /etc/nccl.conf"));
}

TEST(test_ninth_distinct_content_no_file)
{
    char pod[8192], list[6144] = "";

    for (int i = 0; i < 9; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list),
                 "%s{'name':'c%d','image':'i','resources':{'limits':{'nvidia.com/gpu':'1'}},"
                 "'env':[{'name':'NCCL_DEBUG','value':'%d'}]}",
                 i ? "," : "", i, i);
    snprintf(pod, sizeof(pod), MPI_POD("", "{'containers':[%s]}"), list);
    run(PROFILES(""), pod);
    assert_non_null(annotation(CONF_KEY "-7"));
    assert_null(annotation(CONF_KEY "-8"));
    assert_mounted(7, "nccl-7.conf");
    assert_null(conf_mount(8));
    assert_true(warned("container \"c8\": more than 8 distinct NCCL settings"));
}

/* ---- in the way ---- */

TEST(test_user_mount_at_the_file_wins_with_warning)
{
    run(PROFILES(""),
        MPI_POD("", "{'volumes':[{'name':'cfg','configMap':{'name':'c'}}],'containers':[" GPU(
                        "w", ",'volumeMounts':[{'name':'cfg','mountPath':'/etc/nccl.conf',"
                             "'subPath':'nccl.conf'}]") "]}"));
    assert_null(annotation(CONF_KEY));
    assert_null(volume(CONF_VOL));
    assert_true(warned("mounts /etc/nccl.conf"));
}

TEST(test_user_mount_warning_fits_a_long_name)
{
    run(PROFILES(""),
        MPI_POD("",
                "{'volumes':[{'name':'cfg','configMap':{'name':'c'}}],'containers':[" GPU(
                    NAME63, ",'volumeMounts':[{'name':'cfg','mountPath':'/etc/nccl.conf'}]") "]}"));
    assert_int_equal(T.res.warnings.n, 1);
    assert_contains(T.res.warnings.full[0], NAME63);
    assert_contains(T.res.warnings.text[0], "mounts /etc/nccl.conf: put its NCCL_* there");
}

TEST(test_user_mount_at_etc_wins_with_warning)
{
    run(PROFILES(""),
        MPI_POD("", "{'volumes':[{'name':'etc','emptyDir':{}}],'containers':[" GPU(
                        "w", ",'volumeMounts':[{'name':'etc','mountPath':'/etc/'}]") "]}"));
    assert_null(annotation(CONF_KEY));
    assert_true(warned("mounts /etc:"));
}

TEST(test_user_volume_of_the_name_wins_with_warning)
{
    run(PROFILES(""), MPI_POD("", "{'volumes':[{'name':'" CONF_VOL "','emptyDir':{}}],"
                                  "'containers':[" GPU("w", "") "]}"));
    assert_null(annotation(CONF_KEY));
    assert_null(conf_mount(0));
    assert_true(warned("rename the pod's volume " CONF_VOL));
}

/* ---- again ---- */

TEST(test_second_admission_adds_nothing)
{
    run(PROFILES(""), MPI_POD(",'annotations':{'a':'b'}", "{'containers':[" GPU("w", "") "]}"));
    assert_string_equal(annotation(CONF_KEY), PROFILE_LINES);
    assert_string_equal(annotation("a"), "b");
    /* run() checked that the patched pod gets no operation; it has one mount of the file. */
    assert_int_equal(T.again.patch.n_ops, 0);
    assert_int_equal(mounts_at(0, "/etc/nccl.conf"), 1);
}

TEST(test_pod_without_metadata_annotations_gets_all)
{
    run(PROFILES(""),
        "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'w-0','ownerReferences':[{"
        "'apiVersion':'kubeflow.org/v2beta1','kind':'MPIJob','name':'j','uid':'u',"
        "'controller':true}]},'spec':{'containers':[" GPU("w", "") "]}}");
    assert_non_null(annotation(CONF_KEY));
    assert_non_null(annotation("rdma-webhook.io/injected"));
}

/* ---- report mode ---- */

TEST(test_report_lists_the_annotation)
{
    T.opts.mode = REPORT_MODE_REPORT;
    run(PROFILES(""), MPI_POD("", "{'containers':[" GPU("w", "") "]}"));
    assert_null(annotation(CONF_KEY));
    assert_non_null(annotation(REPORT_ANNOTATION));
    assert_contains(annotation(REPORT_ANNOTATION), "annotation " CONF_KEY " (3 lines)");
    assert_contains(annotation(REPORT_ANNOTATION), "volume " CONF_VOL);
}

/* ---- the setting ---- */

TEST(test_setting_values)
{
    static const char *const bad[] = {"'on'", "1", "null", "'Auto'"};
    char text[256];

    T.ps = support_profiles(PROFILES(",'ncclConf':'auto'"));
    assert_int_equal(T.ps->p[0].nccl_conf, PROFILES_NCCL_CONF_AUTO);
    profiles_free(T.ps);
    T.ps = support_profiles(PROFILES(",'ncclConf':true"));
    assert_int_equal(T.ps->p[0].nccl_conf, PROFILES_NCCL_CONF_ON);
    profiles_free(T.ps);
    T.ps = support_profiles(
        "{'defaults':{'ncclConf':false},'profiles':[{'name':'p','default':true}]}");
    assert_int_equal(T.ps->p[0].nccl_conf, PROFILES_NCCL_CONF_OFF);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), "{'profiles':[{'name':'p','default':true,'ncclConf':%s}]}",
                 bad[i]);
        assert_contains(support_profiles_rejected(text),
                        "ncclConf: must be \"auto\", true or false");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_auto_on_for_mpijob_content_equals_env, teardown),
        cmocka_unit_test_teardown(test_auto_off_for_pytorchjob, teardown),
        cmocka_unit_test_teardown(test_true_on_for_pytorchjob, teardown),
        cmocka_unit_test_teardown(test_false_off_for_mpijob, teardown),
        cmocka_unit_test_teardown(test_defaults_setting_inherited, teardown),
        cmocka_unit_test_teardown(test_ib_off_container_gets_no_file, teardown),
        cmocka_unit_test_teardown(test_user_values_win_and_are_written, teardown),
        cmocka_unit_test_teardown(test_last_entry_of_a_name_wins, teardown),
        cmocka_unit_test_teardown(test_value_from_left_out, teardown),
        cmocka_unit_test_teardown(test_newline_and_expansion_left_out, teardown),
        cmocka_unit_test_teardown(test_value_past_1023_bytes_left_out, teardown),
        cmocka_unit_test_teardown(test_envfrom_variables_left_out, teardown),
        cmocka_unit_test_teardown(test_detected_container_file_lacks_the_detected, teardown),
        cmocka_unit_test_teardown(test_one_annotation_per_distinct_content, teardown),
        cmocka_unit_test_teardown(test_past_the_bounds_no_file, teardown),
        cmocka_unit_test_teardown(test_past_16_kib_no_file, teardown),
        cmocka_unit_test_teardown(test_ninth_distinct_content_no_file, teardown),
        cmocka_unit_test_teardown(test_user_mount_at_the_file_wins_with_warning, teardown),
        cmocka_unit_test_teardown(test_user_mount_warning_fits_a_long_name, teardown),
        cmocka_unit_test_teardown(test_user_mount_at_etc_wins_with_warning, teardown),
        cmocka_unit_test_teardown(test_user_volume_of_the_name_wins_with_warning, teardown),
        cmocka_unit_test_teardown(test_second_admission_adds_nothing, teardown),
        cmocka_unit_test_teardown(test_pod_without_metadata_annotations_gets_all, teardown),
        cmocka_unit_test_teardown(test_report_lists_the_annotation, teardown),
        cmocka_unit_test_teardown(test_setting_values, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
