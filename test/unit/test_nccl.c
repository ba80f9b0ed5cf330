/*
 * Unit tests for webhook/admission/nccl.c. Expectations come from how NCCL reads its
 * environment: integers through strtoll(value, NULL, 0) (so "022" is octal 18
 * and "0x16" is 22), NCCL_IB_TIMEOUT valid in 1..31, NCCL_IB_RETRY_CNT in
 * 0..7 (InfiniBand's 3-bit retry count), NCCL_IB_HCA parsed as net_ib does
 * (an optional '^', then an optional '=', then "name[:port]" entries; each a
 * prefix without the '=', flagged only when it really takes another device),
 * NCCL_IB_DISABLE non-zero as ncclLoadParam reads it, and
 * NCCL_DEBUG compared case-insensitively to VERSION/WARN/INFO/TRACE/ABORT.
 */
#include "unit.h"

#include <stdio.h>
#include <string.h>

#include "admission/nccl.h"
#include "base/utf8.h"

static char msg[256];

static enum nccl_verdict check(const char *name, const char *value)
{
    memset(msg, 0, sizeof(msg));
    return nccl_check(name, value, msg, sizeof(msg));
}

TEST(test_timeout_022_is_octal_18)
{
    assert_int_equal(check("NCCL_IB_TIMEOUT", "022"), NCCL_VALUE_NOT_DECIMAL);
    /* NCCL reads 18: the fix is what the message has room for. */
    assert_string_equal(msg, "NCCL_IB_TIMEOUT=022: drop the leading 0");
}

TEST(test_timeout_empty_is_empty)
{
    assert_int_equal(check("NCCL_IB_TIMEOUT", ""), NCCL_VALUE_EMPTY);
    assert_int_equal(strncmp(msg, "NCCL_IB_TIMEOUT", 15), 0);
    assert_contains(msg, "empty");
}

TEST(test_timeout_trailing_garbage_is_flagged)
{
    assert_int_not_equal(check("NCCL_IB_TIMEOUT", "22s"), NCCL_VALUE_OK);
    assert_int_not_equal(check("NCCL_IB_TIMEOUT", "2 2"), NCCL_VALUE_OK);
}

TEST(test_timeout_overflowing_number_is_flagged)
{
    assert_int_not_equal(check("NCCL_IB_TIMEOUT", "99999999999999999999999"), NCCL_VALUE_OK);
}

TEST(test_retry_cnt_0_to_7_is_ok)
{
    const char *ok[] = {"0", "1", "2", "3", "4", "5", "6", "7"};

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_int_equal(check("NCCL_IB_RETRY_CNT", ok[i]), NCCL_VALUE_OK);
}

/* The kernel's device names for the cases below: the cloud guide's 8-card node has
 * mlx5_0..mlx5_8, a 16-NIC node goes up to mlx5_16. */
#define KNOWN_8  "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8"
#define KNOWN_16 KNOWN_8 ",mlx5_9,mlx5_10,mlx5_11,mlx5_12,mlx5_13,mlx5_14,mlx5_15,mlx5_16"

static enum nccl_verdict check_hca(const char *value, const char *known)
{
    memset(msg, 0, sizeof(msg));
    return nccl_check_hca(value, known, msg, sizeof(msg));
}

TEST(test_hca_prefix_list_without_collision_is_ok)
{
    /* mlx5_1 is a prefix, but of nothing the node has: NCCL takes what was
     * meant. */
    assert_int_equal(check("NCCL_IB_HCA", "mlx5_1,mlx5_2"), NCCL_VALUE_OK);
    assert_int_equal(check_hca("mlx5_1,mlx5_2", KNOWN_8), NCCL_VALUE_OK);
}

TEST(test_hca_prefix_colliding_with_a_known_device)
{
    assert_int_equal(check_hca("mlx5_1,mlx5_2", KNOWN_16), NCCL_VALUE_HCA_PREFIX);
    assert_string_equal(msg, "NCCL_IB_HCA: write = first (mlx5_1 also takes mlx5_10)");
}

TEST(test_hca_prefix_colliding_within_the_list)
{
    assert_int_equal(check("NCCL_IB_HCA", "mlx5_1,mlx5_12"), NCCL_VALUE_HCA_PREFIX);
    assert_contains(msg, "mlx5_1 also takes mlx5_12");
    /* Order does not matter: mlx5_12 first, then the prefix that takes it. */
    assert_int_equal(check("NCCL_IB_HCA", "mlx5_12,mlx5_1"), NCCL_VALUE_HCA_PREFIX);
}

TEST(test_hca_exclusion_with_equals_is_ok)
{
    assert_int_equal(check("NCCL_IB_HCA", "^=mlx5_0"), NCCL_VALUE_OK);
    assert_int_equal(check_hca("^=mlx5_1", KNOWN_16), NCCL_VALUE_OK);
}

TEST(test_hca_exclusion_without_equals_collides_as_well)
{
    /* ^mlx5_1 also excludes mlx5_10..mlx5_16 on a 16-NIC node. */
    assert_int_equal(check_hca("^mlx5_1", KNOWN_16), NCCL_VALUE_HCA_PREFIX);
    assert_string_equal(msg, "NCCL_IB_HCA: write ^= first (mlx5_1 also takes mlx5_10)");
    assert_int_equal(check_hca("^mlx5_1", KNOWN_8), NCCL_VALUE_OK);
}

TEST(test_hca_exact_list_never_collides)
{
    assert_int_equal(check_hca("=mlx5_1,mlx5_2", KNOWN_16), NCCL_VALUE_OK);
    assert_int_equal(check("NCCL_IB_HCA", "=mlx5_1,mlx5_10"), NCCL_VALUE_OK);
}

TEST(test_hca_driver_prefix_mlx5_is_ok)
{
    /* NCCL's documentation: "NCCL_IB_HCA=mlx5: use all cards starting with
     * mlx5". The 5 belongs to the driver name, not to a device index like the
     * 1 of mlx5_1: the prefix is the intent, nothing collides. */
    assert_int_equal(check("NCCL_IB_HCA", "mlx5"), NCCL_VALUE_OK);
    assert_int_equal(check_hca("mlx5", KNOWN_16), NCCL_VALUE_OK);
    assert_int_equal(check_hca("mlx5_", KNOWN_16), NCCL_VALUE_OK);
    assert_int_equal(check("NCCL_IB_HCA", "mlx5_bond"), NCCL_VALUE_OK);
    assert_int_equal(check_hca("mlx5,mlx5_3", KNOWN_16), NCCL_VALUE_OK);
}

TEST(test_hca_port_suffix_names_the_device)
{
    /* mlx5_1:1 is device mlx5_1 (a prefix of mlx5_10) port 1. */
    assert_int_equal(check("NCCL_IB_HCA", "mlx5_1:1"), NCCL_VALUE_OK);
    assert_int_equal(check_hca("mlx5_1:1", KNOWN_16), NCCL_VALUE_HCA_PREFIX);
    assert_int_equal(check_hca("mlx5_1:1", "=mlx5_10:1"), NCCL_VALUE_HCA_PREFIX);
    assert_int_equal(check("NCCL_IB_HCA", "=mlx5_1:1,mlx5_2:2"), NCCL_VALUE_OK);
    assert_int_equal(check("NCCL_IB_HCA", "^=mlx5_0:1"), NCCL_VALUE_OK);
    assert_int_equal(check("NCCL_IB_HCA", "=mlx5_1:255"), NCCL_VALUE_OK);
}

TEST(test_hca_ports_nccl_cannot_use)
{
    /* atoi() reads these as port 0, which no device has (ports start at 1). */
    static const char *const bad[] = {"=mlx5_1:",    "=mlx5_1:x",  "=mlx5_1:0", "mlx5_1:256",
                                      "=mlx5_1:1:2", "=mlx5_1:-1", "=mlx5_1:1x"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (check("NCCL_IB_HCA", bad[i]) != NCCL_VALUE_HCA_SYNTAX)
            fail_msg("NCCL_IB_HCA=%s: expected a syntax verdict, got \"%s\"", bad[i], msg);
        assert_contains(msg, "port");
    }
}

TEST(test_hca_markers_in_the_wrong_order)
{
    /* NCCL takes ^ first, then =: "=^mlx5_0" is the exact name "^mlx5_0". */
    assert_int_equal(check("NCCL_IB_HCA", "=^mlx5_0"), NCCL_VALUE_HCA_SYNTAX);
    assert_contains(msg, "write ^=");
}

TEST(test_hca_lists_that_name_no_device)
{
    /* "^" alone excludes every device, "=" alone takes all of them. */
    static const char *const none[] = {"^", "=", "^=", ",", "=,,", ":1", "=:1"};

    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
        if (check("NCCL_IB_HCA", none[i]) != NCCL_VALUE_HCA_SYNTAX)
            fail_msg("NCCL_IB_HCA=%s: expected a syntax verdict, got \"%s\"", none[i], msg);
}

TEST(test_hca_entry_without_a_name)
{
    assert_int_equal(check("NCCL_IB_HCA", "=mlx5_1,:1"), NCCL_VALUE_HCA_SYNTAX);
    assert_contains(msg, "name a device before each :port");
}

TEST(test_hca_spaces_are_part_of_the_name)
{
    assert_int_equal(check("NCCL_IB_HCA", "=mlx5_1, mlx5_2"), NCCL_VALUE_HCA_SYNTAX);
    assert_contains(msg, "spaces");
}

TEST(test_hca_more_entries_than_nccl_reads)
{
    char value[512] = "=";

    for (int i = 0; i < 33; i++)
        snprintf(value + strlen(value), sizeof(value) - strlen(value), "%smlx5_%d", i ? "," : "",
                 i);
    assert_int_equal(check("NCCL_IB_HCA", value), NCCL_VALUE_HCA_SYNTAX);
    assert_contains(msg, "list at most 32 devices");
    *strrchr(value, ',') = '\0'; /* 32 entries */
    assert_int_equal(check("NCCL_IB_HCA", value), NCCL_VALUE_OK);
}

TEST(test_hca_entry_form_of_a_profile)
{
    assert_true(nccl_is_hca_entry("mlx5_1"));
    assert_true(nccl_is_hca_entry("mlx5_1:1"));
    assert_true(nccl_is_hca_entry("rocep1s0f0"));
    assert_true(nccl_is_hca_entry("mlx5_bond_0:255"));
    assert_false(nccl_is_hca_entry(""));
    assert_false(nccl_is_hca_entry(":1"));
    assert_false(nccl_is_hca_entry("mlx5_1:"));
    assert_false(nccl_is_hca_entry("mlx5_1:0"));
    assert_false(nccl_is_hca_entry("mlx5_1:1:1"));
    assert_false(nccl_is_hca_entry("=mlx5_1"));
    assert_false(nccl_is_hca_entry("mlx5_1,mlx5_2"));
    assert_false(nccl_is_hca_entry("mlx5 1"));
}

TEST(test_reads_nonzero_as_nccl_does)
{
    static const char *const on[] = {"1", "2", "-1", "0x1", "01", " 1", "+1", "1abc", "1.5"};
    static const char *const off[] = {
        "0", "", "true", "yes", "00", "0x0", "-0", " ", "99999999999999999999"};

    for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
        if (!nccl_reads_nonzero(on[i]))
            fail_msg("\"%s\": NCCL reads it as non-zero", on[i]);
    for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
        if (nccl_reads_nonzero(off[i]))
            fail_msg("\"%s\": NCCL reads it as 0 (or falls back to its default 0)", off[i]);
}

TEST(test_debug_known_words_any_case)
{
    const char *ok[] = {"VERSION", "WARN", "INFO", "TRACE", "ABORT", "info", "Warn"};

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_int_equal(check("NCCL_DEBUG", ok[i]), NCCL_VALUE_OK);
}

TEST(test_long_value_is_shortened_in_message)
{
    char value[200];

    memset(value, '9', sizeof(value) - 1);
    value[sizeof(value) - 1] = '\0';
    assert_int_not_equal(check("NCCL_IB_TIMEOUT", value), NCCL_VALUE_OK);
    assert_int_equal(strncmp(msg, "NCCL_IB_TIMEOUT=", 16), 0);
    assert_null(strstr(msg, value)); /* not quoted whole */
    assert_true(strlen(msg) < 120);
}

TEST(test_long_multibyte_value_is_cut_on_a_character_boundary)
{
    char value[300] = "";

    /* "é" is 2 bytes, "日" 3 bytes: both offsets of the cut get tried. */
    for (int i = 0; i < 40; i++)
        strcat(value, i % 2 ? "\xc3\xa9" : "\xe6\x97\xa5");
    assert_int_equal(check("NCCL_IB_TIMEOUT", value), NCCL_VALUE_NOT_INT);
    assert_true(utf8_valid(msg, strlen(msg)));
    assert_int_equal(check("NCCL_DEBUG", value + 3), NCCL_VALUE_BAD_WORD);
    assert_true(utf8_valid(msg, strlen(msg)));
    assert_int_equal(check("NCCL_IB_HCA", value + 1), NCCL_VALUE_OK); /* no trailing digit */
}

TEST(test_small_message_buffer_is_not_overrun)
{
    char small[16];

    memset(small, 'X', sizeof(small));
    assert_int_equal(nccl_check("NCCL_IB_TIMEOUT", "022", small, sizeof(small)),
                     NCCL_VALUE_NOT_DECIMAL);
    assert_true(memchr(small, '\0', sizeof(small)) != NULL);
}

TEST(test_is_nccl_var)
{
    assert_true(nccl_is_nccl_var("NCCL_IB_HCA"));
    assert_true(nccl_is_nccl_var("NCCL_"));
    assert_false(nccl_is_nccl_var("NCCL"));
    assert_false(nccl_is_nccl_var("nccl_ib_hca"));
    assert_false(nccl_is_nccl_var("MY_NCCL_X"));
}

TEST(test_c_identifier_accepts)
{
    assert_true(nccl_is_c_identifier("A"));
    assert_true(nccl_is_c_identifier("_"));
    assert_true(nccl_is_c_identifier("_x9"));
    assert_true(nccl_is_c_identifier("NCCL_IB_HCA"));
    assert_true(nccl_is_c_identifier("lower_case1"));
}

TEST(test_c_identifier_rejects)
{
    assert_false(nccl_is_c_identifier(""));
    assert_false(nccl_is_c_identifier("1BAD"));
    assert_false(nccl_is_c_identifier("A-B"));
    assert_false(nccl_is_c_identifier("A.B"));
    assert_false(nccl_is_c_identifier("A B"));
    assert_false(nccl_is_c_identifier("A="));
    assert_false(nccl_is_c_identifier("\xc3\xa9"));
}

/* NCCL's matching: prefixes unless '=', ports, '^', empty entries skipped,
 * only the first 32 entries. */
TEST(test_hca_matches_as_nccl_reads_it)
{
    char many[400] = "=";

    assert_true(nccl_hca_matches("=mlx5_1,mlx5_2", "mlx5_1", 1));
    assert_false(nccl_hca_matches("=mlx5_1,mlx5_2", "mlx5_10", 1));
    assert_true(nccl_hca_matches("mlx5_1", "mlx5_10", 1));
    assert_false(nccl_hca_matches("mlx5_1", "mlx5_2", 1));
    assert_true(nccl_hca_matches("mlx5", "mlx5_7", 1));
    assert_false(nccl_hca_matches("^=mlx5_0", "mlx5_0", 1));
    assert_true(nccl_hca_matches("^=mlx5_0", "mlx5_01", 1));
    assert_false(nccl_hca_matches("^mlx5_0", "mlx5_01", 1));
    assert_false(nccl_hca_matches("=mlx5_0:2,,mlx5_1", "mlx5_0", 1));
    assert_true(nccl_hca_matches("=mlx5_0:2,,mlx5_1", "mlx5_0", 2));
    assert_true(nccl_hca_matches("=mlx5_0:2,,mlx5_1", "mlx5_1", 7));
    assert_false(nccl_hca_matches("=:1", "mlx5_0", 1));
    for (int i = 0; i < 32; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "d%d,", i);
    snprintf(many + strlen(many), sizeof(many) - strlen(many), "mlx5_0");
    assert_true(nccl_hca_matches(many, "d31", 1));
    assert_false(nccl_hca_matches(many, "mlx5_0", 1)); /* the 33rd entry */
}

/* One variable's value a row: what nccl_check() says of it, and the whole
 * message where a row gives one (NULL: the message is not checked). */
static const struct check_case {
    const char *var, *value;
    enum nccl_verdict want;
    const char *msg;
} check_cases[] = {
    /* timeout_in_range_is_ok */
    {"NCCL_IB_TIMEOUT", "1", NCCL_VALUE_OK, NULL},
    {"NCCL_IB_TIMEOUT", "22", NCCL_VALUE_OK, NULL},
    {"NCCL_IB_TIMEOUT", "31", NCCL_VALUE_OK, NULL},
    /* timeout_0_is_out_of_range */
    {"NCCL_IB_TIMEOUT", "0", NCCL_VALUE_RANGE, "NCCL_IB_TIMEOUT=0: use 1..31"},
    /* timeout_32_is_out_of_range */
    {"NCCL_IB_TIMEOUT", "32", NCCL_VALUE_RANGE, "NCCL_IB_TIMEOUT=32: use 1..31"},
    /* timeout_negative_is_out_of_range */
    {"NCCL_IB_TIMEOUT", "-1", NCCL_VALUE_RANGE, NULL},
    /* timeout_0x16_is_hex_22 */
    {"NCCL_IB_TIMEOUT", "0x16", NCCL_VALUE_NOT_DECIMAL,
     "NCCL_IB_TIMEOUT=0x16: write it in decimal"},
    /* timeout_abc_is_not_an_integer */
    {"NCCL_IB_TIMEOUT", "abc", NCCL_VALUE_NOT_INT, "NCCL_IB_TIMEOUT=abc: write a whole number"},
    /* retry_cnt_8_is_out_of_range */
    {"NCCL_IB_RETRY_CNT", "8", NCCL_VALUE_RANGE, "NCCL_IB_RETRY_CNT=8: use 0..7"},
    /* retry_cnt_07_is_octal_even_in_range */
    {"NCCL_IB_RETRY_CNT", "07", NCCL_VALUE_NOT_DECIMAL, "NCCL_IB_RETRY_CNT=07: drop the leading 0"},
    /* hca_with_equals_is_ok */
    {"NCCL_IB_HCA", "=mlx5_1,mlx5_2", NCCL_VALUE_OK, NULL},
    /* hca_empty_entries_are_skipped_as_nccl_does */
    {"NCCL_IB_HCA", "=mlx5_1,,mlx5_2,", NCCL_VALUE_OK, NULL},
    /* hca_empty_is_empty */
    {"NCCL_IB_HCA", "", NCCL_VALUE_EMPTY, NULL},
    /* debug_unknown_word */
    {"NCCL_DEBUG", "VERBOSE", NCCL_VALUE_BAD_WORD,
     "NCCL_DEBUG=VERBOSE: use VERSION|WARN|INFO|TRACE|ABORT"},
    /* debug_prefix_or_extension_of_a_word_is_not_a_word */
    {"NCCL_DEBUG", "INF", NCCL_VALUE_BAD_WORD, NULL},
    {"NCCL_DEBUG", "INFOX", NCCL_VALUE_BAD_WORD, NULL},
    {"NCCL_DEBUG", "WARN INFO", NCCL_VALUE_BAD_WORD, NULL},
    /* addr_family_words */
    {"NCCL_IB_ADDR_FAMILY", "AF_INET6", NCCL_VALUE_OK, NULL},
    {"NCCL_IB_ADDR_FAMILY", "AF_INET", NCCL_VALUE_OK, NULL},
    {"NCCL_IB_ADDR_FAMILY", "AF_INET4", NCCL_VALUE_BAD_WORD, NULL},
    /* gid_index_accepts_minus_one */
    {"NCCL_IB_GID_INDEX", "-1", NCCL_VALUE_OK, NULL},
    {"NCCL_IB_GID_INDEX", "3", NCCL_VALUE_OK, NULL},
    {"NCCL_IB_GID_INDEX", "-03", NCCL_VALUE_NOT_DECIMAL, NULL},
    /* unknown_nccl_variable_is_ok */
    {"NCCL_SOME_FUTURE_KNOB", "whatever 022 0x1", NCCL_VALUE_OK, NULL},
    {"NCCL_IB_TIMEOUTS", "99", NCCL_VALUE_OK, NULL},
    {"PATH", "/usr/bin", NCCL_VALUE_OK, NULL},
    /* socket_ifname_empty_is_flagged_value_is_free */
    {"NCCL_SOCKET_IFNAME", "eth0", NCCL_VALUE_OK, NULL},
    {"NCCL_SOCKET_IFNAME", "^docker,lo", NCCL_VALUE_OK, NULL},
    {"NCCL_SOCKET_IFNAME", "", NCCL_VALUE_EMPTY, NULL},
};

TEST(test_check_cases)
{
    for (size_t i = 0; i < sizeof check_cases / sizeof check_cases[0]; i++) {
        const struct check_case *c = &check_cases[i];
        int got = check(c->var, c->value);

        if (got != (int)c->want)
            fail_msg("%s=%s: result %d, want %d (%s)", c->var, c->value, got, (int)c->want, msg);
        if (c->msg && strcmp(msg, c->msg) != 0)
            fail_msg("%s=%s: message \"%s\", want \"%s\"", c->var, c->value, msg, c->msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_cases),
        cmocka_unit_test(test_timeout_022_is_octal_18),
        cmocka_unit_test(test_timeout_empty_is_empty),
        cmocka_unit_test(test_timeout_trailing_garbage_is_flagged),
        cmocka_unit_test(test_timeout_overflowing_number_is_flagged),
        cmocka_unit_test(test_retry_cnt_0_to_7_is_ok),
        cmocka_unit_test(test_hca_matches_as_nccl_reads_it),
        cmocka_unit_test(test_hca_prefix_list_without_collision_is_ok),
        cmocka_unit_test(test_hca_prefix_colliding_with_a_known_device),
        cmocka_unit_test(test_hca_prefix_colliding_within_the_list),
        cmocka_unit_test(test_hca_exclusion_with_equals_is_ok),
        cmocka_unit_test(test_hca_exclusion_without_equals_collides_as_well),
        cmocka_unit_test(test_hca_exact_list_never_collides),
        cmocka_unit_test(test_hca_driver_prefix_mlx5_is_ok),
        cmocka_unit_test(test_hca_port_suffix_names_the_device),
        cmocka_unit_test(test_hca_ports_nccl_cannot_use),
        cmocka_unit_test(test_hca_markers_in_the_wrong_order),
        cmocka_unit_test(test_hca_lists_that_name_no_device),
        cmocka_unit_test(test_hca_entry_without_a_name),
        cmocka_unit_test(test_hca_spaces_are_part_of_the_name),
        cmocka_unit_test(test_hca_more_entries_than_nccl_reads),
        cmocka_unit_test(test_hca_entry_form_of_a_profile),
        cmocka_unit_test(test_reads_nonzero_as_nccl_does),
        cmocka_unit_test(test_debug_known_words_any_case),
        cmocka_unit_test(test_long_value_is_shortened_in_message),
        cmocka_unit_test(test_long_multibyte_value_is_cut_on_a_character_boundary),
        cmocka_unit_test(test_small_message_buffer_is_not_overrun),
        cmocka_unit_test(test_is_nccl_var),
        cmocka_unit_test(test_c_identifier_accepts),
        cmocka_unit_test(test_c_identifier_rejects),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
