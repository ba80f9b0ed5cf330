/*
 * Unit tests for webhook/host/logq.c and the logger's use of it (webhook/host/log.c):
 * every queued line arrives whole and in order; stop flushes; an urgent line
 * and a quiet server's line go out without a stop; a full queue drops and
 * counts instead of blocking, and the sink hears the count; through a
 * logger, the batch reaches the fd and the drop warning is a JSON line.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "host/log.h"
#include "host/logq.h"

/* A sink that keeps what it is given; it can be held closed to fill the
 * queue, and tells how many batches it has seen. */
struct capture {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char buf[1 << 20];
    size_t len;
    unsigned batches;
    unsigned long long dropped;
    int hold;
    int entered; /* the writer is inside the sink */
};

static struct capture *capture_new(void)
{
    struct capture *c = calloc(1, sizeof(*c));

    assert_non_null(c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    return c;
}

static void capture_free(struct capture *c)
{
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static void capture_sink(void *ctx, const char *buf, size_t len, unsigned long long dropped)
{
    struct capture *c = ctx;

    pthread_mutex_lock(&c->mu);
    c->entered = 1;
    pthread_cond_broadcast(&c->cv);
    while (c->hold)
        pthread_cond_wait(&c->cv, &c->mu);
    assert_true(c->len + len <= sizeof(c->buf));
    memcpy(c->buf + c->len, buf, len);
    c->len += len;
    c->dropped += dropped;
    c->batches++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Waits up to `secs` for the captured bytes to reach len; returns the length. */
static size_t capture_wait_len(struct capture *c, size_t len, int secs)
{
    struct timespec until;
    size_t got;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += secs;
    pthread_mutex_lock(&c->mu);
    while (c->len < len && pthread_cond_timedwait(&c->cv, &c->mu, &until) == 0)
        ;
    got = c->len;
    pthread_mutex_unlock(&c->mu);
    return got;
}

static void capture_wait_entered(struct capture *c)
{
    pthread_mutex_lock(&c->mu);
    while (!c->entered)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

static void capture_hold(struct capture *c, int on)
{
    pthread_mutex_lock(&c->mu);
    c->hold = on;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

TEST(test_stop_flushes_every_line_in_order)
{
    struct capture *c = capture_new();
    struct logq *q;
    char want[64 * 1024], line[64];
    size_t wlen = 0;

    /* 2000 short lines fit in one buffer: nothing may be dropped. */
    assert_int_equal(logq_init(&q, sizeof(want), 60000, capture_sink, c, NULL, 0), ERR_OK);
    for (int i = 0; i < 2000; i++) {
        int n = snprintf(line, sizeof(line), "line %d\n", i);

        assert_int_equal(logq_push(q, line, (size_t)n, 0), 0);
        memcpy(want + wlen, line, (size_t)n);
        wlen += (size_t)n;
    }
    assert_int_equal(logq_stop(&q, 5000), ERR_OK);
    assert_int_equal(c->len, wlen);
    assert_memory_equal(c->buf, want, wlen);
    assert_int_equal(c->dropped, 0);
    capture_free(c);
}

TEST(test_urgent_line_goes_out_before_the_flush_interval)
{
    struct capture *c = capture_new();
    struct logq *q;

    assert_int_equal(logq_init(&q, 4096, 600000, capture_sink, c, NULL, 0), ERR_OK);
    assert_int_equal(logq_push(q, "quiet\n", 6, 0), 0);
    assert_int_equal(logq_push(q, "error\n", 6, 1), 0);
    /* The interval is ten minutes: only the urgent flag can send it now. */
    assert_int_equal(capture_wait_len(c, 12, 5), 12);
    assert_memory_equal(c->buf, "quiet\nerror\n", 12);
    assert_int_equal(logq_stop(&q, 5000), ERR_OK);
    capture_free(c);
}

TEST(test_quiet_line_goes_out_after_the_flush_interval)
{
    struct capture *c = capture_new();
    struct logq *q;

    assert_int_equal(logq_init(&q, 4096, 20, capture_sink, c, NULL, 0), ERR_OK);
    assert_int_equal(logq_push(q, "one\n", 4, 0), 0);
    assert_int_equal(capture_wait_len(c, 4, 5), 4);
    /* A second quiet line, after the writer went back to sleep. */
    assert_int_equal(logq_push(q, "two\n", 4, 0), 0);
    assert_int_equal(capture_wait_len(c, 8, 5), 8);
    assert_memory_equal(c->buf, "one\ntwo\n", 8);
    assert_int_equal(logq_stop(&q, 5000), ERR_OK);
    capture_free(c);
}

TEST(test_full_batch_goes_out_before_the_flush_interval)
{
    struct capture *c = capture_new();
    struct logq *q;
    char line[1024];
    size_t sent = 0;

    memset(line, 'x', sizeof(line) - 1);
    line[sizeof(line) - 1] = '\n';
    assert_int_equal(logq_init(&q, 4 * LOGQ_BATCH, 600000, capture_sink, c, NULL, 0), ERR_OK);
    while (sent < LOGQ_BATCH) {
        assert_int_equal(logq_push(q, line, sizeof(line), 0), 0);
        sent += sizeof(line);
    }
    assert_int_equal(capture_wait_len(c, sent, 5), sent);
    assert_int_equal(logq_stop(&q, 5000), ERR_OK);
    capture_free(c);
}

TEST(test_full_queue_drops_counts_and_does_not_block)
{
    struct capture *c = capture_new();
    struct logq *q;
    int queued = 0, dropped = 0;

    capture_hold(c, 1);
    assert_int_equal(logq_init(&q, 100, 600000, capture_sink, c, NULL, 0), ERR_OK);
    /* The first urgent line puts the writer inside the held sink with one
     * buffer; the other takes 10 lines of 10 bytes, and the rest is dropped. */
    assert_int_equal(logq_push(q, "123456789\n", 10, 1), 0);
    capture_wait_entered(c);
    for (int i = 0; i < 50; i++) {
        int rc = logq_push(q, "abcdefghi\n", 10, 0);

        if (rc == ERR_OK)
            queued++;
        else
            dropped++;
        if (rc != ERR_OK)
            assert_int_equal(rc, ERR_BUSY);
    }
    assert_int_equal(queued, 10);
    assert_int_equal(queued + dropped, 50);
    assert_int_equal(logq_dropped(q), (unsigned long long)dropped);
    /* A line longer than a buffer can never be queued. */
    char big[101];
    memset(big, 'y', sizeof(big));
    assert_int_equal(logq_push(q, big, sizeof(big), 0), ERR_TOO_BIG);
    dropped++;
    capture_hold(c, 0);
    assert_int_equal(logq_stop(&q, 5000), ERR_OK);
    assert_int_equal(c->len, 10 + (size_t)queued * 10);
    assert_int_equal(c->dropped, (unsigned long long)dropped);
    capture_free(c);
}

/* Reads everything a pipe holds (the write end closed first). */
static size_t drain_pipe(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    ssize_t r;

    while (len < cap - 1 && (r = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    return len;
}

TEST(test_logger_through_queue_writes_lines_and_a_drop_warning)
{
    int fds[2];
    struct log lg = {.min = LOG_INFO};
    char out[8192], *nl, *second;
    cJSON *j;

    assert_int_equal(pipe(fds), 0);
    lg.fd = fds[1];
    assert_int_equal(logq_init(&lg.queue, 4096, 600000, log_queue_sink, &lg, NULL, 0), ERR_OK);
    log_msg(&lg, LOG_INFO, "admission", "uid", "u-1");
    log_msg(&lg, LOG_DEBUG, "filtered out", NULL, NULL);
    assert_int_equal(logq_stop(&lg.queue, 5000), ERR_OK);
    assert_null(lg.queue);
    log_queue_sink(&lg, "", 0, 3);
    close(fds[1]);
    drain_pipe(fds[0], out, sizeof(out));
    close(fds[0]);
    nl = strchr(out, '\n');
    assert_non_null(nl);
    *nl = '\0';
    j = cJSON_Parse(out);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "uid")->valuestring, "u-1");
    cJSON_Delete(j);
    second = nl + 1;
    assert_non_null(strchr(second, '\n'));
    *strchr(second, '\n') = '\0';
    j = cJSON_Parse(second);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "level")->valuestring, "warn");
    assert_int_equal(cJSON_GetObjectItem(j, "dropped")->valueint, 3);
    cJSON_Delete(j);
    assert_null(strstr(out, "filtered out"));
}

TEST(test_stop_gives_up_on_a_writer_that_is_stuck)
{
    struct capture *c = capture_new();
    struct logq *q;

    capture_hold(c, 1);
    assert_int_equal(logq_init(&q, 4096, 600000, capture_sink, c, NULL, 0), ERR_OK);
    assert_int_equal(logq_push(q, "stuck\n", 6, 1), 0);
    capture_wait_entered(c);
    assert_int_equal(logq_stop(&q, 50), ERR_BUSY);
    /* Released, the writer finishes, and a second stop can free it all. */
    capture_hold(c, 0);
    assert_int_equal(capture_wait_len(c, 6, 5), 6);
    assert_int_equal(logq_stop(&q, 5000), ERR_OK);
    capture_free(c);
}

TEST(test_stop_of_null_queue_is_a_no_op)
{
    struct logq *q = NULL;

    assert_int_equal(logq_stop(&q, 0), ERR_OK);
    assert_null(q);
}

/* Stop sets the caller's pointer to NULL, so a second stop is a no-op. */
TEST(test_stop_twice_is_safe)
{
    struct capture *c = capture_new();
    struct logq *q;

    assert_int_equal(logq_init(&q, 4096, 600000, capture_sink, c, NULL, 0), ERR_OK);
    assert_non_null(q);
    assert_int_equal(logq_stop(&q, 5000), ERR_OK);
    assert_null(q);
    assert_int_equal(logq_stop(&q, 5000), ERR_OK);
    capture_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_flushes_every_line_in_order),
        cmocka_unit_test(test_urgent_line_goes_out_before_the_flush_interval),
        cmocka_unit_test(test_quiet_line_goes_out_after_the_flush_interval),
        cmocka_unit_test(test_full_batch_goes_out_before_the_flush_interval),
        cmocka_unit_test(test_full_queue_drops_counts_and_does_not_block),
        cmocka_unit_test(test_logger_through_queue_writes_lines_and_a_drop_warning),
        cmocka_unit_test(test_stop_gives_up_on_a_writer_that_is_stuck),
        cmocka_unit_test(test_stop_of_null_queue_is_a_no_op),
        cmocka_unit_test(test_stop_twice_is_safe),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
