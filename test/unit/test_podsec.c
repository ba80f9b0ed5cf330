/*
 * Unit tests for webhook/admission/podsec.c: the namespace labels as
 * k8s.io/pod-security-admission reads them (api.PolicyToEvaluate,
 * api.ParseLevel), and which capabilities each level lets a container add
 * (policy/check_capabilities_baseline.go, check_capabilities_restricted.go).
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "base/err.h"
#include "admission/podsec.h"

static struct podsec_policy read_labels(const char *json)
{
    cJSON *labels = json ? cJSON_Parse(json) : NULL;
    struct podsec_policy p;

    if (json && !labels)
        fail_msg("test JSON does not parse: %s", json);
    podsec_read(labels, NULL, &p);
    /* p.invalid points into labels: compare before freeing. */
    cJSON_Delete(labels);
    return p;
}

TEST(test_no_labels_is_privileged)
{
    struct podsec_policy p = read_labels(NULL);

    for (int m = 0; m < PODSEC_MODES; m++) {
        assert_int_equal(p.level[m], PODSEC_PRIVILEGED);
        assert_null(p.invalid[m]);
    }
    p = read_labels("{\"team\":\"ml\"}");
    assert_int_equal(p.level[PODSEC_ENFORCE], PODSEC_PRIVILEGED);
}

TEST(test_each_mode_reads_its_own_label)
{
    struct podsec_policy p =
        read_labels("{\"pod-security.kubernetes.io/enforce\":\"baseline\","
                    "\"pod-security.kubernetes.io/warn\":\"restricted\","
                    "\"pod-security.kubernetes.io/audit\":\"privileged\","
                    "\"pod-security.kubernetes.io/enforce-version\":\"v1.20\"}");

    assert_int_equal(p.level[PODSEC_ENFORCE], PODSEC_BASELINE);
    assert_int_equal(p.level[PODSEC_WARN], PODSEC_RESTRICTED);
    assert_int_equal(p.level[PODSEC_AUDIT], PODSEC_PRIVILEGED);
    for (int m = 0; m < PODSEC_MODES; m++)
        assert_null(p.invalid[m]);
}

/* ParseLevel fails on anything else, case included: enforce then reads
 * restricted, warn and audit privileged ("fail open"). */
TEST(test_a_value_that_is_not_a_level)
{
    static const char *const bad[] = {"Baseline", "basline", "", " restricted", "RESTRICTED"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[256];
        cJSON *labels;
        struct podsec_policy p;

        snprintf(json, sizeof(json),
                 "{\"pod-security.kubernetes.io/enforce\":\"%s\","
                 "\"pod-security.kubernetes.io/warn\":\"%s\","
                 "\"pod-security.kubernetes.io/audit\":\"%s\"}",
                 bad[i], bad[i], bad[i]);
        labels = cJSON_Parse(json);
        assert_non_null(labels);
        podsec_read(labels, NULL, &p);
        assert_int_equal(p.level[PODSEC_ENFORCE], PODSEC_RESTRICTED);
        assert_int_equal(p.level[PODSEC_WARN], PODSEC_PRIVILEGED);
        assert_int_equal(p.level[PODSEC_AUDIT], PODSEC_PRIVILEGED);
        for (int m = 0; m < PODSEC_MODES; m++) {
            assert_non_null(p.invalid[m]);
            assert_string_equal(p.invalid[m], bad[i]);
        }
        cJSON_Delete(labels);
    }
}

TEST(test_a_label_that_is_not_a_string_is_not_a_level)
{
    struct podsec_policy p = read_labels("{\"pod-security.kubernetes.io/enforce\":7}");

    assert_int_equal(p.level[PODSEC_ENFORCE], PODSEC_RESTRICTED);
    assert_non_null(p.invalid[PODSEC_ENFORCE]);
}

TEST(test_ipc_lock_only_under_privileged)
{
    assert_true(podsec_allows_add(PODSEC_PRIVILEGED, "IPC_LOCK"));
    assert_false(podsec_allows_add(PODSEC_BASELINE, "IPC_LOCK"));
    assert_false(podsec_allows_add(PODSEC_RESTRICTED, "IPC_LOCK"));
    assert_false(podsec_allows_add(PODSEC_BASELINE, "CAP_IPC_LOCK"));
}

TEST(test_baseline_allows_the_default_set_restricted_net_bind_service)
{
    static const char *const defaults[] = {"AUDIT_WRITE", "CHOWN",   "DAC_OVERRIDE", "FOWNER",
                                           "FSETID",      "KILL",    "MKNOD",        "SETFCAP",
                                           "SETGID",      "SETPCAP", "SETUID",       "SYS_CHROOT"};

    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
        assert_true(podsec_allows_add(PODSEC_BASELINE, defaults[i]));
        assert_false(podsec_allows_add(PODSEC_RESTRICTED, defaults[i]));
    }
    assert_true(podsec_allows_add(PODSEC_BASELINE, "NET_BIND_SERVICE"));
    assert_true(podsec_allows_add(PODSEC_RESTRICTED, "NET_BIND_SERVICE"));
    assert_false(podsec_allows_add(PODSEC_BASELINE, "NET_RAW"));
    assert_false(podsec_allows_add(PODSEC_BASELINE, "SYS_ADMIN"));
    assert_false(podsec_allows_add(PODSEC_BASELINE, "chown")); /* case matters */
}

TEST(test_level_names)
{
    assert_string_equal(podsec_level_name(PODSEC_PRIVILEGED), "privileged");
    assert_string_equal(podsec_level_name(PODSEC_BASELINE), "baseline");
    assert_string_equal(podsec_level_name(PODSEC_RESTRICTED), "restricted");
}

/* The cluster's defaults (PodSecurityConfiguration) fill the modes
 * without a label; a label wins; a value that is not a level still reads
 * as restricted for enforce and privileged for warn and audit, whatever the
 * default (api.PolicyToEvaluate starts from the defaults, then parses). */
TEST(test_defaults_fill_the_modes_without_a_label)
{
    static const enum podsec_level defaults[PODSEC_MODES] = {PODSEC_BASELINE, PODSEC_RESTRICTED,
                                                             PODSEC_BASELINE};
    cJSON *labels = cJSON_Parse("{\"pod-security.kubernetes.io/audit\":\"privileged\"}");
    struct podsec_policy p;

    assert_non_null(labels);
    podsec_read(NULL, defaults, &p);
    assert_int_equal(p.level[PODSEC_ENFORCE], PODSEC_BASELINE);
    assert_int_equal(p.level[PODSEC_WARN], PODSEC_RESTRICTED);
    assert_int_equal(p.level[PODSEC_AUDIT], PODSEC_BASELINE);
    podsec_read(labels, defaults, &p);
    assert_int_equal(p.level[PODSEC_ENFORCE], PODSEC_BASELINE);
    assert_int_equal(p.level[PODSEC_WARN], PODSEC_RESTRICTED);
    assert_int_equal(p.level[PODSEC_AUDIT], PODSEC_PRIVILEGED);
    cJSON_Delete(labels);
    labels = cJSON_Parse("{\"pod-security.kubernetes.io/enforce\":\"x\","
                         "\"pod-security.kubernetes.io/warn\":\"x\"}");
    assert_non_null(labels);
    podsec_read(labels, defaults, &p);
    assert_int_equal(p.level[PODSEC_ENFORCE], PODSEC_RESTRICTED);
    assert_int_equal(p.level[PODSEC_WARN], PODSEC_PRIVILEGED);
    assert_int_equal(p.level[PODSEC_AUDIT], PODSEC_BASELINE);
    cJSON_Delete(labels);
}

TEST(test_level_parse)
{
    enum podsec_level l = PODSEC_PRIVILEGED;

    assert_int_equal(podsec_level_parse("restricted", &l), ERR_OK);
    assert_int_equal(l, PODSEC_RESTRICTED);
    assert_int_equal(podsec_level_parse("baseline", &l), ERR_OK);
    assert_int_equal(l, PODSEC_BASELINE);
    assert_int_equal(podsec_level_parse("Privileged", &l), ERR_FAIL);
    assert_int_equal(podsec_level_parse("", &l), ERR_FAIL);
    assert_int_equal(l, PODSEC_BASELINE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_labels_is_privileged),
        cmocka_unit_test(test_each_mode_reads_its_own_label),
        cmocka_unit_test(test_a_value_that_is_not_a_level),
        cmocka_unit_test(test_a_label_that_is_not_a_string_is_not_a_level),
        cmocka_unit_test(test_ipc_lock_only_under_privileged),
        cmocka_unit_test(test_baseline_allows_the_default_set_restricted_net_bind_service),
        cmocka_unit_test(test_level_names),
        cmocka_unit_test(test_defaults_fill_the_modes_without_a_label),
        cmocka_unit_test(test_level_parse),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
