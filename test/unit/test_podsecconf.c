/*
 * Unit tests for webhook/host/podsecconf.c: the PodSecurity admission plugin's
 * configuration read as the kube-apiserver reads it
 * (k8s.io/pod-security-admission admission/api: v1 defaults, validation),
 * from a PodSecurityConfiguration or an AdmissionConfiguration, inline or
 * through "path"; and its exemptions.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "host/podsecconf.h"

static char dir[] = "/tmp/test_podsecconf.XXXXXX";

static int setup_group(void **state __attribute__((unused)))
{
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown_group(void **state __attribute__((unused)))
{
    char cmd[PATH_MAX + 16];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to DIR/name and returns the path (a static buffer per call
 * site is not needed: each test uses it at once). */
static const char *write_file(const char *name, const char *text)
{
    static char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    return path;
}

#define PSC_HEAD                                                                                   \
    "apiVersion: pod-security.admission.config.k8s.io/v1\n"                                        \
    "kind: PodSecurityConfiguration\n"

static const char full_config[] = PSC_HEAD "defaults:\n"
                                           "  enforce: baseline\n"
                                           "  enforce-version: latest\n"
                                           "  warn: restricted\n"
                                           "  warn-version: v1.30\n"
                                           "  audit: \"\"\n"
                                           "exemptions:\n"
                                           "  usernames: [\"system:serviceaccount:kubeflow:op\"]\n"
                                           "  runtimeClasses: [kata]\n"
                                           "  namespaces: [ml-exempt, kube-system]\n";

static void check_full(const struct podsecconf *c)
{
    assert_int_equal(c->cfg.defaults[PODSEC_ENFORCE], PODSEC_BASELINE);
    assert_int_equal(c->cfg.defaults[PODSEC_WARN], PODSEC_RESTRICTED);
    assert_int_equal(c->cfg.defaults[PODSEC_AUDIT], PODSEC_PRIVILEGED);
    assert_string_equal(podsec_exempt(&c->cfg, "ml-exempt", NULL, NULL), "namespace");
    assert_string_equal(podsec_exempt(&c->cfg, "kube-system", "x", "y"), "namespace");
    assert_string_equal(podsec_exempt(&c->cfg, "team", "system:serviceaccount:kubeflow:op", NULL),
                        "user");
    assert_string_equal(podsec_exempt(&c->cfg, "team", "alice", "kata"), "runtimeClass");
    assert_null(podsec_exempt(&c->cfg, "team", "alice", "gvisor"));
    assert_null(podsec_exempt(&c->cfg, NULL, NULL, NULL));
    /* Exact names: no prefix, no case folding. */
    assert_null(podsec_exempt(&c->cfg, "ml-exempt-2", "system:serviceaccount:kubeflow:o", "Kata"));
}

TEST(test_init_is_the_plugin_s_own_defaults)
{
    struct podsecconf c;

    podsecconf_init(&c);
    for (int m = 0; m < PODSEC_MODES; m++)
        assert_int_equal(c.cfg.defaults[m], PODSEC_PRIVILEGED);
    assert_null(podsec_exempt(&c.cfg, "kube-system", "admin", "kata"));
    assert_null(podsec_exempt(NULL, "kube-system", "admin", "kata"));
    podsecconf_free(&c);
    podsecconf_free(&c); /* free undoes init, and again */
}

TEST(test_pod_security_configuration)
{
    struct podsecconf c;
    char err[ERR_LEN] = "";

    podsecconf_init(&c);
    assert_int_equal(podsecconf_load(&c, write_file("psc.yaml", full_config), err, sizeof(err)),
                     ERR_OK);
    check_full(&c);
    podsecconf_free(&c);
}

TEST(test_json_and_older_versions)
{
    struct podsecconf c;
    char err[ERR_LEN] = "";

    podsecconf_init(&c);
    assert_int_equal(
        podsecconf_load(&c,
                        write_file("psc.json",
                                   "{\"apiVersion\":\"pod-security.admission.config.k8s.io/"
                                   "v1beta1\",\"kind\":\"PodSecurityConfiguration\","
                                   "\"defaults\":{\"enforce\":\"restricted\"}}"),
                        err, sizeof(err)),
        ERR_OK);
    assert_int_equal(c.cfg.defaults[PODSEC_ENFORCE], PODSEC_RESTRICTED);
    assert_int_equal(c.cfg.defaults[PODSEC_WARN], PODSEC_PRIVILEGED);
    assert_null(podsec_exempt(&c.cfg, "a", "b", "c"));
    podsecconf_free(&c);
}

/* The apiserver's --admission-control-config-file, with the plugin's
 * configuration inline. */
TEST(test_admission_configuration_inline)
{
    struct podsecconf c;
    char err[ERR_LEN] = "";
    char text[2048];

    snprintf(text, sizeof(text),
             "apiVersion: apiserver.config.k8s.io/v1\n"
             "kind: AdmissionConfiguration\n"
             "plugins:\n"
             "- name: ResourceQuota\n"
             "  configuration: {}\n"
             "- name: PodSecurity\n"
             "  configuration:\n"
             "    apiVersion: pod-security.admission.config.k8s.io/v1\n"
             "    kind: PodSecurityConfiguration\n"
             "    defaults: {enforce: baseline, warn: restricted}\n"
             "    exemptions:\n"
             "      usernames: [\"system:serviceaccount:kubeflow:op\"]\n"
             "      runtimeClasses: [kata]\n"
             "      namespaces: [ml-exempt, kube-system]\n");
    podsecconf_init(&c);
    assert_int_equal(podsecconf_load(&c, write_file("admission.yaml", text), err, sizeof(err)),
                     ERR_OK);
    check_full(&c);
    podsecconf_free(&c);
}

/* "path" is relative to the AdmissionConfiguration's own directory. */
TEST(test_admission_configuration_path)
{
    struct podsecconf c;
    char err[ERR_LEN] = "", admission[PATH_MAX];

    write_file("podsecurity.yaml", full_config);
    snprintf(admission, sizeof(admission), "%s",
             write_file("admission-path.yaml", "apiVersion: apiserver.config.k8s.io/v1\n"
                                               "kind: AdmissionConfiguration\n"
                                               "plugins:\n"
                                               "- name: PodSecurity\n"
                                               "  path: podsecurity.yaml\n"));
    podsecconf_init(&c);
    assert_int_equal(podsecconf_load(&c, admission, err, sizeof(err)), ERR_OK);
    check_full(&c);
    podsecconf_free(&c);

    /* A path that is not there names the file it tried. */
    snprintf(admission, sizeof(admission), "%s",
             write_file("admission-missing.yaml", "apiVersion: apiserver.config.k8s.io/v1\n"
                                                  "kind: AdmissionConfiguration\n"
                                                  "plugins:\n"
                                                  "- name: PodSecurity\n"
                                                  "  path: nowhere.yaml\n"));
    podsecconf_init(&c);
    assert_int_equal(podsecconf_load(&c, admission, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "nowhere.yaml");
    assert_contains(err, dir);
    podsecconf_free(&c);
}

/* An AdmissionConfiguration that does not configure PodSecurity: the
 * plugin runs with its defaults. */
TEST(test_admission_configuration_without_pod_security)
{
    struct podsecconf c;
    char err[ERR_LEN] = "";

    podsecconf_init(&c);
    assert_int_equal(
        podsecconf_load(&c,
                        write_file("admission-none.yaml", "apiVersion: apiserver.config.k8s.io/v1\n"
                                                          "kind: AdmissionConfiguration\n"
                                                          "plugins:\n"
                                                          "- name: EventRateLimit\n"
                                                          "  path: eventconfig.yaml\n"),
                        err, sizeof(err)),
        ERR_OK);
    for (int m = 0; m < PODSEC_MODES; m++)
        assert_int_equal(c.cfg.defaults[m], PODSEC_PRIVILEGED);
    assert_null(podsec_exempt(&c.cfg, "kube-system", NULL, NULL));
    podsecconf_free(&c);
}

/* What ValidatePodSecurityConfiguration refuses, refused with the field;
 * and a refused file leaves the configuration loaded before as it was. */
TEST(test_invalid_files_are_refused_with_the_field)
{
    static const struct {
        const char *text, *say;
    } cases[] = {
        {PSC_HEAD "defaults: {enforce: Baseline}\n", "defaults.enforce must be one of"},
        {PSC_HEAD "defaults: {warn: strict}\n", "defaults.warn must be one of"},
        {PSC_HEAD "defaults: {audit: 1}\n", "defaults.audit must be one of"},
        {PSC_HEAD "defaults: {enforce-version: \"1.30\"}\n", "defaults.enforce-version must be"},
        {PSC_HEAD "defaults: {audit-version: v2.1}\n", "defaults.audit-version must be"},
        {PSC_HEAD "defaults: {warn-version: v1.}\n", "defaults.warn-version must be"},
        {PSC_HEAD "defaults: [enforce]\n", "defaults must be an object"},
        {PSC_HEAD "exemptions: {namespaces: [Team_A]}\n", "exemptions.namespaces[0] must be"},
        {PSC_HEAD "exemptions: {namespaces: [a, b, a]}\n", "exemptions.namespaces[2]: \"a\" is "
                                                           "there twice"},
        {PSC_HEAD "exemptions: {namespaces: a}\n", "exemptions.namespaces must be a list"},
        {PSC_HEAD "exemptions: {usernames: [\"\"]}\n", "exemptions.usernames[0] must be"},
        {PSC_HEAD "exemptions: {usernames: [x, x]}\n", "exemptions.usernames[1]"},
        {PSC_HEAD "exemptions: {runtimeClasses: [-kata]}\n", "exemptions.runtimeClasses[0]"},
        {PSC_HEAD "exemptions: [a]\n", "exemptions must be an object"},
        {"apiVersion: v1\nkind: ConfigMap\n", "expected kind PodSecurityConfiguration"},
        {"kind: PodSecurityConfiguration\n", "expected kind PodSecurityConfiguration"},
        {"[1, 2]\n", "expected one object"},
        {PSC_HEAD "---\n" PSC_HEAD, "expected one object"},
        {"defaults: {enforce: [\n", "psc-bad.yaml"},
    };
    struct podsecconf c;
    char err[ERR_LEN];

    podsecconf_init(&c);
    assert_int_equal(podsecconf_load(&c, write_file("psc.yaml", full_config), err, sizeof(err)),
                     ERR_OK);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        err[0] = '\0';
        print_message("%s", cases[i].text);
        assert_int_equal(
            podsecconf_load(&c, write_file("psc-bad.yaml", cases[i].text), err, sizeof(err)),
            ERR_FAIL);
        print_message("  -> %s\n", err);
        assert_contains(err, cases[i].say);
        assert_contains(err, "psc-bad.yaml");
        check_full(&c);
    }
    podsecconf_free(&c);
}

TEST(test_missing_and_oversized_files)
{
    struct podsecconf c;
    char err[ERR_LEN] = "", path[PATH_MAX];
    FILE *f;

    podsecconf_init(&c);
    snprintf(path, sizeof(path), "%s/none.yaml", dir);
    assert_int_equal(podsecconf_load(&c, path, err, sizeof(err)), ERR_FAIL);
    assert_contains(err, "none.yaml");
    snprintf(path, sizeof(path), "%s/big.yaml", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(PSC_HEAD "x: \"", f);
    for (size_t i = 0; i < PODSECCONF_MAX_BYTES; i++)
        fputc('a', f);
    fputs("\"\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(podsecconf_load(&c, path, err, sizeof(err)), ERR_TOO_BIG);
    assert_contains(err, "big.yaml");
    podsecconf_free(&c);
}

/* A list longer than PODSECCONF_MAX_ENTRIES is refused, naming the cap. */
TEST(test_too_many_exemptions)
{
    struct podsecconf c;
    char err[ERR_LEN] = "", path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof(path), "%s/many.yaml", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(PSC_HEAD "exemptions:\n  usernames:\n", f);
    for (int i = 0; i <= PODSECCONF_MAX_ENTRIES; i++)
        fprintf(f, "  - user-%d\n", i);
    assert_int_equal(fclose(f), 0);
    podsecconf_init(&c);
    assert_int_equal(podsecconf_load(&c, path, err, sizeof(err)), ERR_TOO_BIG);
    assert_contains(err, "exemptions.usernames has more than 4096 entries");
    podsecconf_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_is_the_plugin_s_own_defaults),
        cmocka_unit_test(test_pod_security_configuration),
        cmocka_unit_test(test_json_and_older_versions),
        cmocka_unit_test(test_admission_configuration_inline),
        cmocka_unit_test(test_admission_configuration_path),
        cmocka_unit_test(test_admission_configuration_without_pod_security),
        cmocka_unit_test(test_invalid_files_are_refused_with_the_field),
        cmocka_unit_test(test_missing_and_oversized_files),
        cmocka_unit_test(test_too_many_exemptions),
    };

    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
