/* log: one JSON object per line on a file descriptor (stderr in practice).
 *
 * A line is built field by field and written with a single write(2), so lines
 * from different threads never interleave; a server hands whole lines to a
 * logq instead, whose thread writes them in batches. Lines are capped at LOG_LINE_MAX
 * bytes: a longer value is cut and the line gets "truncated": true, because a
 * log line must never grow with what a client sent. The logger is a value
 * owned by whoever configures it (the server context, a CLI command); there is
 * no global logger.
 *
 *   struct log_line l;
 *   log_begin(&l, lg, LOG_INFO, "admission");
 *   log_str(&l, "uid", uid);
 *   log_int(&l, "us", 120);
 *   log_end(&l);
 */
#ifndef RDMA_WEBHOOK_LOG_H
#define RDMA_WEBHOOK_LOG_H

#include <stdatomic.h>
#include <stddef.h>

struct logq;

#define LOG_LINE_MAX 4096

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

struct log {
    int fd;
    enum log_level min;
    /* Set when a line could not be written whole (a full disk): the next
     * line first ends the cut one, so every later line is valid JSON. */
    atomic_int broken;
    /* When set, log_end() queues the line instead of writing it. Set before
     * and cleared after every thread that logs. */
    struct logq *queue;
};

struct log_line {
    char buf[LOG_LINE_MAX];
    size_t len;
    int truncated;
    int active; /* 0 when the level is filtered out: every call is a no-op */
    enum log_level level;
    struct log *lg;
};

/* Parses "debug", "info", "warn" or "error" into *out: ERR_OK, or ERR_FAIL
 * for anything else (no message: the caller names the flag). */
int log_level_parse(const char *s, enum log_level *out);

void log_begin(struct log_line *l, struct log *lg, enum log_level lvl, const char *msg);
void log_str(struct log_line *l, const char *key, const char *val);
/* An array of n strings; values past what fits are left out (the line says
 * "truncated"). */
void log_strs(struct log_line *l, const char *key, const char *const *vals, size_t n);
void log_int(struct log_line *l, const char *key, long long val);
void log_end(struct log_line *l);

/* The logq sink for a logger (ctx): writes the batch to its fd, then a
 * warning with the count of lines the queue had to drop, if any. */
void log_queue_sink(void *logger, const char *buf, size_t len, unsigned long long dropped);

/* A line with just a message and one string field, for the common case. */
void log_msg(struct log *lg, enum log_level lvl, const char *msg, const char *key, const char *val);

#endif
