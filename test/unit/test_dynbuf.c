/*
 * Unit tests for webhook/base/dynbuf.c: the size cap (and that a refused call
 * leaves the buffer as it was), NUL termination, growth through printf,
 * steal/reset/truncate, the degenerate caps 0 and SIZE_MAX, and out of
 * memory told apart from over the cap.
 */
#include "unit.h"
#include "support.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/dynbuf.h"

/* The buffer holds exactly want (len bytes, no more) and is terminated. */
static void assert_holds(const struct dynbuf *b, const char *want, size_t len)
{
    assert_int_equal(dynbuf_len(b), len);
    assert_memory_equal(dynbuf_ptr(b), want, len);
    assert_int_equal(dynbuf_ptr(b)[len], '\0');
}

TEST(test_init_is_empty_and_allocates_nothing)
{
    struct dynbuf b;

    dynbuf_init(&b, 100);
    assert_null(b.mem);
    assert_int_equal(dynbuf_len(&b), 0);
    assert_string_equal(dynbuf_ptr(&b), "");
    assert_null(dynbuf_steal(&b));
    dynbuf_free(&b);
}

TEST(test_add_up_to_cap_succeeds)
{
    struct dynbuf b;

    dynbuf_init(&b, 8);
    assert_int_equal(dynbuf_add(&b, "1234", 4), 0);
    assert_int_equal(dynbuf_addstr(&b, "5678"), 0);
    assert_holds(&b, "12345678", 8);
    dynbuf_free(&b);
}

TEST(test_add_past_cap_is_too_big_and_keeps_contents)
{
    struct dynbuf b;

    dynbuf_init(&b, 8);
    assert_int_equal(dynbuf_addstr(&b, "12345678"), 0);
    assert_int_equal(dynbuf_addc(&b, '9'), ERR_TOO_BIG);
    assert_holds(&b, "12345678", 8);
    assert_int_equal(dynbuf_addstr(&b, "9"), ERR_TOO_BIG);
    assert_int_equal(dynbuf_add(&b, "9", 1), ERR_TOO_BIG);
    assert_holds(&b, "12345678", 8);
    dynbuf_free(&b);
}

TEST(test_partial_fit_is_refused_whole)
{
    struct dynbuf b;

    dynbuf_init(&b, 10);
    assert_int_equal(dynbuf_addstr(&b, "abcdef"), 0);
    /* 6 + 5 > 10: nothing of the 5 bytes may be appended. */
    assert_int_equal(dynbuf_addstr(&b, "ghijk"), ERR_TOO_BIG);
    assert_holds(&b, "abcdef", 6);
    /* What still fits is accepted afterwards. */
    assert_int_equal(dynbuf_addstr(&b, "ghij"), 0);
    assert_holds(&b, "abcdefghij", 10);
    dynbuf_free(&b);
}

TEST(test_first_add_bigger_than_cap_leaves_buffer_empty)
{
    struct dynbuf b;

    dynbuf_init(&b, 5);
    assert_int_equal(dynbuf_addstr(&b, "abcdef"), ERR_TOO_BIG);
    assert_int_equal(dynbuf_len(&b), 0);
    assert_string_equal(dynbuf_ptr(&b), "");
    dynbuf_free(&b);
}

TEST(test_huge_length_does_not_wrap_the_cap_check)
{
    struct dynbuf b;

    dynbuf_init(&b, 64);
    assert_int_equal(dynbuf_addstr(&b, "abc"), 0);
    /* len + SIZE_MAX would wrap around; it must still be refused. */
    assert_int_equal(dynbuf_add(&b, "x", SIZE_MAX), ERR_TOO_BIG);
    assert_int_equal(dynbuf_add(&b, "x", SIZE_MAX - 2), ERR_TOO_BIG);
    assert_holds(&b, "abc", 3);
    dynbuf_free(&b);
}

TEST(test_binary_data_with_nul_bytes_is_kept_and_terminated)
{
    struct dynbuf b;
    const char data[] = {'a', '\0', 'b', '\xff', '\0'};

    dynbuf_init(&b, 100);
    assert_int_equal(dynbuf_add(&b, data, sizeof(data)), 0);
    assert_holds(&b, data, sizeof(data));
    dynbuf_free(&b);
}

TEST(test_every_add_keeps_nul_termination)
{
    struct dynbuf b;
    char want[300];

    dynbuf_init(&b, 1000);
    for (int i = 0; i < 260; i++) {
        char c = (char)('a' + i % 26);

        assert_int_equal(dynbuf_addc(&b, c), 0);
        want[i] = c;
        /* The terminator sits right after the data at every size, across reallocations. */
        assert_holds(&b, want, (size_t)i + 1);
    }
    dynbuf_free(&b);
}

TEST(test_large_adds_keep_every_byte)
{
    struct dynbuf b;
    static char big[5000], want[6000];

    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)('A' + i % 23);
    dynbuf_init(&b, sizeof(want));
    assert_int_equal(dynbuf_add(&b, big, 300), 0);
    assert_int_equal(dynbuf_add(&b, big, sizeof(big)), 0);
    memcpy(want, big, 300);
    memcpy(want + 300, big, sizeof(big));
    assert_holds(&b, want, 300 + sizeof(big));
    /* 700 more do not fit under the 6000 cap; the 5300 bytes stay. */
    assert_int_equal(dynbuf_add(&b, big, 701), ERR_TOO_BIG);
    assert_holds(&b, want, 300 + sizeof(big));
    assert_int_equal(dynbuf_add(&b, big, 700), 0);
    assert_int_equal(dynbuf_len(&b), 6000);
    dynbuf_free(&b);
}

TEST(test_printf_formats_and_appends)
{
    struct dynbuf b;

    dynbuf_init(&b, 100);
    assert_int_equal(dynbuf_addstr(&b, "x="), 0);
    assert_int_equal(dynbuf_printf(&b, "%d,%s,%05.1f", -42, "ab", 3.14159), 0);
    assert_string_equal(dynbuf_ptr(&b), "x=-42,ab,003.1");
    assert_int_equal(dynbuf_len(&b), strlen("x=-42,ab,003.1"));
    dynbuf_free(&b);
}

TEST(test_printf_grows_past_initial_allocation)
{
    struct dynbuf b;
    char want[20000];
    size_t wl = 0;

    dynbuf_init(&b, sizeof(want));
    for (int i = 0; i < 2000; i++) {
        assert_int_equal(dynbuf_printf(&b, "%d,", i), 0);
        wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "%d,", i);
    }
    assert_holds(&b, want, wl);
    dynbuf_free(&b);
}

TEST(test_printf_one_large_string)
{
    struct dynbuf b;
    char *big = malloc(5001);

    assert_non_null(big);
    memset(big, 'z', 5000);
    big[5000] = '\0';
    dynbuf_init(&b, 6000);
    assert_int_equal(dynbuf_printf(&b, "<%s>", big), 0);
    assert_int_equal(dynbuf_len(&b), 5002);
    assert_int_equal(dynbuf_ptr(&b)[0], '<');
    assert_int_equal(dynbuf_ptr(&b)[5001], '>');
    assert_int_equal(dynbuf_ptr(&b)[5002], '\0');
    dynbuf_free(&b);
    free(big);
}

TEST(test_printf_past_cap_is_too_big_and_keeps_contents)
{
    struct dynbuf b;

    dynbuf_init(&b, 10);
    assert_int_equal(dynbuf_printf(&b, "%s", "abc"), 0);
    assert_int_equal(dynbuf_printf(&b, "%s", "12345678"), ERR_TOO_BIG);
    assert_holds(&b, "abc", 3);
    /* Exactly filling the cap is allowed. */
    assert_int_equal(dynbuf_printf(&b, "%d", 1234567), 0);
    assert_holds(&b, "abc1234567", 10);
    assert_int_equal(dynbuf_printf(&b, "%s", ""), 0);
    assert_int_equal(dynbuf_printf(&b, "%c", 'x'), ERR_TOO_BIG);
    assert_holds(&b, "abc1234567", 10);
    dynbuf_free(&b);
}

TEST(test_steal_hands_over_contents_and_empties)
{
    struct dynbuf b;
    char *s;

    dynbuf_init(&b, 100);
    assert_int_equal(dynbuf_addstr(&b, "hello"), 0);
    s = dynbuf_steal(&b);
    assert_non_null(s);
    assert_string_equal(s, "hello");
    assert_int_equal(dynbuf_len(&b), 0);
    assert_string_equal(dynbuf_ptr(&b), "");
    /* The buffer is usable again and does not share memory with s. */
    assert_int_equal(dynbuf_addstr(&b, "world"), 0);
    assert_string_equal(s, "hello");
    assert_string_equal(dynbuf_ptr(&b), "world");
    free(s);
    dynbuf_free(&b);
}

TEST(test_steal_keeps_the_cap)
{
    struct dynbuf b;

    dynbuf_init(&b, 4);
    assert_int_equal(dynbuf_addstr(&b, "abcd"), 0);
    free(dynbuf_steal(&b));
    assert_int_equal(dynbuf_addstr(&b, "abcde"), ERR_TOO_BIG);
    assert_int_equal(dynbuf_addstr(&b, "abcd"), 0);
    dynbuf_free(&b);
}

TEST(test_reset_empties_but_keeps_memory)
{
    struct dynbuf b;
    const char *before;
    size_t alloc;

    dynbuf_init(&b, 1000);
    assert_int_equal(dynbuf_addstr(&b, "some text that is here"), 0);
    before = b.mem;
    alloc = b.alloc;
    dynbuf_reset(&b);
    assert_int_equal(dynbuf_len(&b), 0);
    assert_string_equal(dynbuf_ptr(&b), "");
    assert_ptr_equal(b.mem, before);
    assert_int_equal(b.alloc, alloc);
    assert_int_equal(dynbuf_addstr(&b, "new"), 0);
    assert_holds(&b, "new", 3);
    dynbuf_free(&b);
}

TEST(test_reset_of_unallocated_buffer_is_harmless)
{
    struct dynbuf b;

    dynbuf_init(&b, 10);
    dynbuf_reset(&b);
    assert_int_equal(dynbuf_len(&b), 0);
    assert_string_equal(dynbuf_ptr(&b), "");
    dynbuf_free(&b);
}

TEST(test_reset_restores_full_cap)
{
    struct dynbuf b;

    dynbuf_init(&b, 6);
    assert_int_equal(dynbuf_addstr(&b, "abcdef"), 0);
    dynbuf_reset(&b);
    assert_int_equal(dynbuf_addstr(&b, "ghijkl"), 0);
    assert_holds(&b, "ghijkl", 6);
    dynbuf_free(&b);
}

TEST(test_truncate_shortens_and_terminates)
{
    struct dynbuf b;

    dynbuf_init(&b, 100);
    assert_int_equal(dynbuf_addstr(&b, "abcdef"), 0);
    dynbuf_truncate(&b, 3);
    assert_holds(&b, "abc", 3);
    assert_int_equal(dynbuf_addstr(&b, "XY"), 0);
    assert_holds(&b, "abcXY", 5);
    dynbuf_truncate(&b, 0);
    assert_holds(&b, "", 0);
    dynbuf_free(&b);
}

TEST(test_truncate_to_current_length_changes_nothing)
{
    struct dynbuf b;

    dynbuf_init(&b, 100);
    assert_int_equal(dynbuf_addstr(&b, "abc"), 0);
    dynbuf_truncate(&b, 3);
    assert_holds(&b, "abc", 3);
    dynbuf_free(&b);
}

TEST(test_truncate_frees_room_under_the_cap)
{
    struct dynbuf b;

    dynbuf_init(&b, 5);
    assert_int_equal(dynbuf_addstr(&b, "abcde"), 0);
    assert_int_equal(dynbuf_addc(&b, 'f'), ERR_TOO_BIG);
    dynbuf_truncate(&b, 2);
    assert_int_equal(dynbuf_addstr(&b, "xyz"), 0);
    assert_holds(&b, "abxyz", 5);
    dynbuf_free(&b);
}

TEST(test_cap_zero_accepts_only_nothing)
{
    struct dynbuf b;

    dynbuf_init(&b, 0);
    assert_int_equal(dynbuf_addc(&b, 'x'), ERR_TOO_BIG);
    assert_int_equal(dynbuf_addstr(&b, "x"), ERR_TOO_BIG);
    assert_int_equal(dynbuf_printf(&b, "%d", 1), ERR_TOO_BIG);
    assert_int_equal(dynbuf_len(&b), 0);
    assert_string_equal(dynbuf_ptr(&b), "");
    assert_int_equal(dynbuf_addstr(&b, ""), 0);
    assert_int_equal(dynbuf_printf(&b, "%s", ""), 0);
    assert_int_equal(dynbuf_len(&b), 0);
    assert_string_equal(dynbuf_ptr(&b), "");
    dynbuf_free(&b);
}

TEST(test_free_then_reuse)
{
    struct dynbuf b;

    dynbuf_init(&b, 10);
    assert_int_equal(dynbuf_addstr(&b, "abc"), 0);
    dynbuf_free(&b);
    assert_int_equal(dynbuf_len(&b), 0);
    assert_string_equal(dynbuf_ptr(&b), "");
    assert_int_equal(dynbuf_addstr(&b, "0123456789"), 0);
    assert_int_equal(dynbuf_addc(&b, 'x'), ERR_TOO_BIG);
    dynbuf_free(&b);
}

/* A cap of SIZE_MAX ("no real limit") must still work. Run in a child with an
 * alarm, so a hang in the growth loop fails the test instead of the suite. */
TEST(test_cap_size_max_grows_like_any_cap)
{
    pid_t pid = fork();
    int status = 0;

    assert_true(pid >= 0);
    if (pid == 0) {
        struct dynbuf b;
        char chunk[100];
        int ok = 1;

        alarm(5);
        memset(chunk, 'q', sizeof(chunk));
        dynbuf_init(&b, SIZE_MAX);
        for (int i = 0; i < 10 && ok; i++)
            ok = dynbuf_add(&b, chunk, sizeof(chunk)) == 0;
        ok = ok && dynbuf_len(&b) == 1000 && dynbuf_ptr(&b)[1000] == '\0';
        dynbuf_free(&b);
        _exit(ok ? 0 : 1);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("dynbuf with cap SIZE_MAX: child killed by signal %d (%s) while adding 1000 "
                 "bytes",
                 WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? "hung in dynbuf_reserve" : "crashed");
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* More than a starved heap has left, well under the cap of the buffer. */
static char big[1 << 18];

/* In the starved child, on a buffer that holds "abc" and has room for 1 MiB:
 * each way to grow says ERR_NOMEM and keeps "abc"; going past the cap still
 * says ERR_TOO_BIG. Returns the bit of the first check that failed, or 0. */
static int grow_starved(void *arg)
{
    struct dynbuf *b = arg;

    if (dynbuf_add(b, big, sizeof(big)) != ERR_NOMEM)
        return 1;
    if (dynbuf_reserve(b, sizeof(big)) != ERR_NOMEM)
        return 2;
    if (dynbuf_grow(b, sizeof(big)) != ERR_NOMEM)
        return 4;
    if (dynbuf_printf(b, "%.*s", (int)sizeof(big), big) != ERR_NOMEM)
        return 8;
    if (dynbuf_len(b) != 3 || strcmp(dynbuf_ptr(b), "abc") != 0)
        return 16;
    if (dynbuf_grow(b, b->cap) != ERR_TOO_BIG)
        return 32;
    return 0;
}

/* Freed by the teardown, also when the test is skipped (under ASan). */
static struct dynbuf starved;

static int free_starved(void **state __attribute__((unused)))
{
    dynbuf_free(&starved);
    return 0;
}

TEST(test_out_of_memory_is_not_too_big)
{
    int rc;

    assert_int_not_equal(ERR_NOMEM, ERR_TOO_BIG);
    memset(big, 'z', sizeof(big));
    dynbuf_init(&starved, 1 << 20);
    assert_int_equal(dynbuf_addstr(&starved, "abc"), ERR_OK);
    rc = run_out_of_memory(grow_starved, &starved);
    if (rc != 0)
        fail_msg("growing without memory: check %d of the child failed", rc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_is_empty_and_allocates_nothing),
        cmocka_unit_test(test_add_up_to_cap_succeeds),
        cmocka_unit_test(test_add_past_cap_is_too_big_and_keeps_contents),
        cmocka_unit_test(test_partial_fit_is_refused_whole),
        cmocka_unit_test(test_first_add_bigger_than_cap_leaves_buffer_empty),
        cmocka_unit_test(test_huge_length_does_not_wrap_the_cap_check),
        cmocka_unit_test(test_binary_data_with_nul_bytes_is_kept_and_terminated),
        cmocka_unit_test(test_every_add_keeps_nul_termination),
        cmocka_unit_test(test_large_adds_keep_every_byte),
        cmocka_unit_test(test_printf_formats_and_appends),
        cmocka_unit_test(test_printf_grows_past_initial_allocation),
        cmocka_unit_test(test_printf_one_large_string),
        cmocka_unit_test(test_printf_past_cap_is_too_big_and_keeps_contents),
        cmocka_unit_test(test_steal_hands_over_contents_and_empties),
        cmocka_unit_test(test_steal_keeps_the_cap),
        cmocka_unit_test(test_reset_empties_but_keeps_memory),
        cmocka_unit_test(test_reset_of_unallocated_buffer_is_harmless),
        cmocka_unit_test(test_reset_restores_full_cap),
        cmocka_unit_test(test_truncate_shortens_and_terminates),
        cmocka_unit_test(test_truncate_to_current_length_changes_nothing),
        cmocka_unit_test(test_truncate_frees_room_under_the_cap),
        cmocka_unit_test(test_cap_zero_accepts_only_nothing),
        cmocka_unit_test(test_free_then_reuse),
        cmocka_unit_test(test_cap_size_max_grows_like_any_cap),
        cmocka_unit_test_teardown(test_out_of_memory_is_not_too_big, free_starved),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
