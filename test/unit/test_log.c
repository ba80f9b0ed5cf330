/*
 * Unit tests for webhook/host/log.c: each line is one JSON object (checked by
 * parsing it with cJSON) with ts, level and msg first; strings are escaped;
 * a value too long for LOG_LINE_MAX is cut without splitting a UTF-8
 * sequence or an escape, and the line says "truncated"; filtered levels
 * write nothing; after a failed write the next line starts on a new line.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "host/log.h"

struct sink {
    int fds[2];
    struct log lg;
    char out[4 * LOG_LINE_MAX];
    size_t len;
};

static void sink_open(struct sink *s, enum log_level min)
{
    memset(s, 0, sizeof(*s));
    assert_int_equal(pipe(s->fds), 0);
    s->lg.fd = s->fds[1];
    s->lg.min = min;
}

/* Closes the write end and reads everything that was logged. */
static const char *sink_read(struct sink *s)
{
    ssize_t r;

    close(s->fds[1]);
    while (s->len < sizeof(s->out) - 1 &&
           (r = read(s->fds[0], s->out + s->len, sizeof(s->out) - 1 - s->len)) > 0)
        s->len += (size_t)r;
    s->out[s->len] = '\0';
    close(s->fds[0]);
    return s->out;
}

/* The only line written, parsed; fails unless it is one JSON object and a
 * newline. */
static cJSON *only_line(struct sink *s)
{
    const char *out = sink_read(s);
    const char *nl = strchr(out, '\n');
    cJSON *j;

    assert_non_null(nl);
    assert_int_equal((size_t)(nl - out) + 1, s->len);
    j = cJSON_ParseWithLength(out, (size_t)(nl - out));
    assert_non_null(j);
    assert_true(cJSON_IsObject(j));
    return j;
}

static const char *str_of(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

TEST(test_line_has_ts_level_msg_and_fields)
{
    struct sink s;
    struct log_line l;
    cJSON *j;
    struct tm tm;
    time_t now = time(NULL), ts;

    sink_open(&s, LOG_INFO);
    log_begin(&l, &s.lg, LOG_WARN, "profiles rejected");
    log_str(&l, "error", "line 3: bad");
    log_int(&l, "generation", -42);
    log_int(&l, "big", 9223372036854775807LL);
    log_end(&l);
    j = only_line(&s);
    assert_string_equal(str_of(j, "level"), "warn");
    assert_string_equal(str_of(j, "msg"), "profiles rejected");
    assert_string_equal(str_of(j, "error"), "line 3: bad");
    assert_true(cJSON_GetObjectItem(j, "generation")->valuedouble == -42.0);
    assert_non_null(strstr(s.out, "\"big\":"));
    assert_string_equal(strstr(s.out, "\"big\":"), "\"big\":9223372036854775807}\n");
    /* ts: RFC 3339 UTC with milliseconds, within a few seconds of now. */
    memset(&tm, 0, sizeof(tm));
    assert_non_null(strptime(str_of(j, "ts"), "%Y-%m-%dT%H:%M:%S", &tm));
    assert_int_equal(strlen(str_of(j, "ts")), strlen("2026-11-30T06:50:00.123Z"));
    assert_int_equal(str_of(j, "ts")[23], 'Z');
    ts = timegm(&tm);
    assert_true(ts >= now - 5 && ts <= now + 5);
    assert_memory_equal(s.out, "{\"ts\":", 6);
    cJSON_Delete(j);
}

TEST(test_strings_are_escaped)
{
    struct sink s;
    cJSON *j;
    const char *nasty = "q\"b\\n\nt\tc\x01\x1f utf8 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 end";

    sink_open(&s, LOG_DEBUG);
    log_msg(&s.lg, LOG_DEBUG, "m\"sg", "k\"ey", nasty);
    j = only_line(&s);
    assert_string_equal(str_of(j, "msg"), "m\"sg");
    assert_string_equal(str_of(j, "k\"ey"), nasty);
    assert_non_null(strstr(s.out, "\\u0001"));
    assert_non_null(strstr(s.out, "\\u001f"));
    cJSON_Delete(j);
}

TEST(test_filtered_level_writes_nothing)
{
    struct sink s;

    sink_open(&s, LOG_WARN);
    log_msg(&s.lg, LOG_INFO, "quiet", "k", "v");
    log_msg(&s.lg, LOG_DEBUG, "quieter", NULL, NULL);
    assert_string_equal(sink_read(&s), "");
}

/* A value of n copies of unit (a UTF-8 sequence or a char to escape). */
static char *repeat(const char *unit, size_t n)
{
    size_t u = strlen(unit);
    char *v = malloc(u * n + 1);

    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        memcpy(v + i * u, unit, u);
    v[u * n] = '\0';
    return v;
}

/* width: the bytes one unit takes in the line once escaped. */
static void check_truncated(const char *unit, size_t width)
{
    struct sink s;
    struct log_line l;
    char *v = repeat(unit, LOG_LINE_MAX);
    cJSON *j;
    const char *got;

    sink_open(&s, LOG_INFO);
    log_begin(&l, &s.lg, LOG_INFO, "admission");
    log_str(&l, "uid", "u-1");
    log_str(&l, "value", v);
    log_str(&l, "after", "dropped: no room");
    log_int(&l, "us", 5);
    log_end(&l);
    j = only_line(&s);
    assert_true(s.len <= LOG_LINE_MAX);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "truncated")));
    assert_string_equal(str_of(j, "uid"), "u-1");
    got = str_of(j, "value");
    /* A prefix of the value made of whole units, and most of the room. */
    assert_true(strlen(got) / strlen(unit) * width > LOG_LINE_MAX * 3 / 4);
    assert_int_equal(strlen(got) % strlen(unit), 0);
    assert_memory_equal(got, v, strlen(got));
    assert_null(cJSON_GetObjectItem(j, "after"));
    cJSON_Delete(j);
    free(v);
}

TEST(test_string_array)
{
    struct sink s;
    struct log_line l;
    const char *vals[] = {"one", "t\"wo"};
    const cJSON *arr;
    cJSON *j;

    sink_open(&s, LOG_INFO);
    log_begin(&l, &s.lg, LOG_INFO, "admission");
    log_strs(&l, "warning_text", vals, 2);
    log_int(&l, "us", 3);
    log_end(&l);
    j = only_line(&s);
    arr = cJSON_GetObjectItemCaseSensitive(j, "warning_text");
    assert_true(cJSON_IsArray(arr));
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    assert_string_equal(cJSON_GetArrayItem(arr, 1)->valuestring, "t\"wo");
    cJSON_Delete(j);
}

/* An array past the line's cap is cut, closed and flagged: still JSON. */
TEST(test_string_array_cut_stays_json)
{
    static char big[1000];
    const char *vals[16];
    struct sink s;
    struct log_line l;
    cJSON *j;

    memset(big, 'w', sizeof(big) - 1);
    for (size_t i = 0; i < 16; i++)
        vals[i] = big;
    sink_open(&s, LOG_INFO);
    log_begin(&l, &s.lg, LOG_INFO, "admission");
    log_strs(&l, "warning_text", vals, 16);
    log_end(&l);
    j = only_line(&s);
    assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "warning_text")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "truncated")));
    cJSON_Delete(j);
}

TEST(test_long_ascii_value_is_cut_and_flagged)
{
    check_truncated("a", 1);
}

TEST(test_cut_never_splits_a_utf8_sequence)
{
    check_truncated("\xe2\x82\xac", 3);
    check_truncated("\xf0\x9f\x98\x80", 4);
    check_truncated("\xc3\xa9", 2);
}

TEST(test_cut_never_splits_an_escape)
{
    check_truncated("\"", 2);
    check_truncated("\x02", 6);
}

/* A value that fills the room to the byte puts its closing quote into the
 * reserved tail; what comes after must be dropped, not written past it. */
TEST(test_value_filling_the_room_exactly_leaves_no_overflow)
{
    struct sink s;
    struct log_line l;
    char *v, *after = repeat("b", 300);
    size_t n;
    cJSON *j;

    sink_open(&s, LOG_INFO);
    log_begin(&l, &s.lg, LOG_INFO, "admission");
    /* ,"value":" is 10 bytes; the room ends LOG_TAIL (32) bytes short. */
    n = LOG_LINE_MAX - 32 - l.len - 10;
    v = repeat("a", n);
    log_str(&l, "value", v);
    assert_int_equal(l.truncated, 0);
    log_str(&l, "after", after);
    log_int(&l, "us", 5);
    log_end(&l);
    j = only_line(&s);
    assert_true(s.len <= LOG_LINE_MAX);
    assert_string_equal(str_of(j, "value"), v);
    assert_null(cJSON_GetObjectItem(j, "after"));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "truncated")));
    cJSON_Delete(j);
    free(v);
    free(after);
}

TEST(test_line_after_a_failed_write_starts_on_its_own_line)
{
    struct sink s;
    int full = open("/dev/full", O_WRONLY);
    cJSON *j;

    assert_true(full >= 0);
    sink_open(&s, LOG_INFO);
    s.lg.fd = full;
    log_msg(&s.lg, LOG_INFO, "lost", "k", "v");
    assert_int_equal(atomic_load(&s.lg.broken), 1);
    close(full);
    s.lg.fd = s.fds[1];
    log_msg(&s.lg, LOG_INFO, "next", NULL, NULL);
    sink_read(&s);
    assert_int_equal(s.out[0], '\n');
    j = cJSON_Parse(s.out + 1);
    assert_non_null(j);
    assert_string_equal(str_of(j, "msg"), "next");
    assert_int_equal(atomic_load(&s.lg.broken), 0);
    cJSON_Delete(j);
}

TEST(test_level_names_parse)
{
    enum log_level lvl;

    assert_int_equal(log_level_parse("debug", &lvl), ERR_OK);
    assert_int_equal(lvl, LOG_DEBUG);
    assert_int_equal(log_level_parse("error", &lvl), ERR_OK);
    assert_int_equal(lvl, LOG_ERROR);
    assert_int_equal(log_level_parse("ERROR", &lvl), ERR_FAIL);
    assert_int_equal(log_level_parse("", &lvl), ERR_FAIL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_has_ts_level_msg_and_fields),
        cmocka_unit_test(test_strings_are_escaped),
        cmocka_unit_test(test_filtered_level_writes_nothing),
        cmocka_unit_test(test_string_array),
        cmocka_unit_test(test_string_array_cut_stays_json),
        cmocka_unit_test(test_long_ascii_value_is_cut_and_flagged),
        cmocka_unit_test(test_cut_never_splits_a_utf8_sequence),
        cmocka_unit_test(test_cut_never_splits_an_escape),
        cmocka_unit_test(test_value_filling_the_room_exactly_leaves_no_overflow),
        cmocka_unit_test(test_line_after_a_failed_write_starts_on_its_own_line),
        cmocka_unit_test(test_level_names_parse),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
