/*
 * Unit tests for webhook/base/trace.c: lines kept as given, indented; the bounds
 * on lines and bytes, with the "... N more lines" tail once; a line cut
 * between characters at TRACE_LINE_MAX; control characters folded, so one
 * entry is one line; TRACE_LINE does nothing, and evaluates nothing, without
 * a sink.
 */
#include "unit.h"

#include <stdlib.h>
#include <string.h>

#include "base/trace.h"

static size_t count_lines(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += *s == '\n';
    return n;
}

TEST(test_lines_in_order_with_indent)
{
    struct trace t;

    trace_init(&t, 10, 4096);
    trace_add(&t, "pod: %s", "a target");
    t.indent = 2;
    trace_add(&t, "x=%d", 1);
    assert_string_equal(trace_finish(&t), "pod: a target\n    x=1\n");
    assert_int_equal(t.lines, 2);
    trace_free(&t);
}

TEST(test_line_bound_ends_with_the_count_once)
{
    struct trace t;

    trace_init(&t, 3, 4096);
    for (int i = 0; i < 10; i++)
        trace_add(&t, "line %d", i);
    assert_string_equal(trace_finish(&t), "line 0\nline 1\nline 2\n... 7 more lines\n");
    /* Later adds are counted but never shown; the tail is written once. */
    trace_add(&t, "late");
    assert_string_equal(trace_finish(&t), "line 0\nline 1\nline 2\n... 7 more lines\n");
    trace_free(&t);
}

TEST(test_one_more_line_is_singular)
{
    struct trace t;

    trace_init(&t, 1, 4096);
    trace_add(&t, "a");
    trace_add(&t, "b");
    assert_string_equal(trace_finish(&t), "a\n... 1 more line\n");
    trace_free(&t);
}

TEST(test_byte_bound_keeps_room_for_the_tail)
{
    struct trace t;
    const char *text;

    trace_init(&t, 1000, 100);
    for (int i = 0; i < 50; i++)
        trace_add(&t, "0123456789");
    text = trace_finish(&t);
    assert_true(strlen(text) <= 100 + 48);
    assert_true(t.lines < 50);
    assert_true(t.more == 50 - t.lines);
    assert_contains(text, " more lines\n");
    assert_int_equal(count_lines(text), t.lines + 1);
    trace_free(&t);
}

TEST(test_no_tail_when_nothing_dropped)
{
    struct trace t;

    trace_init(&t, 2, 4096);
    trace_add(&t, "a");
    trace_add(&t, "b");
    assert_string_equal(trace_finish(&t), "a\nb\n");
    trace_free(&t);
}

TEST(test_control_characters_fold)
{
    struct trace t;

    trace_init(&t, 10, 4096);
    trace_add(&t, "value \"%s\"", "a\nb\tc\x1b[2J\x7f");
    assert_string_equal(trace_finish(&t), "value \"a?b?c?[2J?\"\n");
    trace_free(&t);
}

TEST(test_long_line_cut_between_characters)
{
    struct trace t;
    char *big = malloc(3 * TRACE_LINE_MAX);
    const char *text;
    size_t len;

    assert_non_null(big);
    /* "é" is two bytes: a cut at an odd place would split one. */
    for (size_t i = 0; i + 2 < 3 * TRACE_LINE_MAX; i += 2)
        memcpy(big + i, "\xc3\xa9", 2);
    big[3 * TRACE_LINE_MAX - 2] = '\0';
    trace_init(&t, 10, 1 << 16);
    trace_add(&t, "x%s", big);
    text = trace_finish(&t);
    len = strlen(text);
    assert_true(len <= TRACE_LINE_MAX);
    assert_int_equal(count_lines(text), 1);
    assert_string_equal(text + len - 4, "...\n");
    /* Only whole characters before the "...": 'x', then pairs. */
    assert_int_equal((len - 4 - 1) % 2, 0);
    trace_free(&t);
    free(big);
}

static int evaluated;

static const char *evaluate(void)
{
    evaluated++;
    return "x";
}

TEST(test_trace_line_without_sink_evaluates_nothing)
{
    struct trace *none = NULL, t, *some = &t;

    TRACE_LINE(none, "%s", evaluate());
    assert_int_equal(evaluated, 0);
    trace_init(&t, 10, 4096);
    TRACE_LINE(some, "%s", evaluate());
    assert_int_equal(evaluated, 1);
    assert_string_equal(trace_finish(&t), "x\n");
    trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_in_order_with_indent),
        cmocka_unit_test(test_line_bound_ends_with_the_count_once),
        cmocka_unit_test(test_one_more_line_is_singular),
        cmocka_unit_test(test_byte_bound_keeps_room_for_the_tail),
        cmocka_unit_test(test_no_tail_when_nothing_dropped),
        cmocka_unit_test(test_control_characters_fold),
        cmocka_unit_test(test_long_line_cut_between_characters),
        cmocka_unit_test(test_trace_line_without_sink_evaluates_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
