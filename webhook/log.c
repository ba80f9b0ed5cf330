#include "log.h"

#include "logq.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const log_level_names[] = {"debug", "info", "warn", "error"};

int log_level_parse(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < sizeof(log_level_names) / sizeof(log_level_names[0]); i++) {
        if (strcmp(s, log_level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

/* Keeps LOG_TAIL bytes free so a string's closing quote, the truncation flag,
 * the closing brace and the newline always fit. */
#define LOG_TAIL 32

/* Appends all n bytes or none: a cut inside an escape or a UTF-8 sequence
 * would make the line invalid JSON. */
static int log_put(struct log_line *l, const char *s, size_t n)
{
    if (l->truncated || n > sizeof(l->buf) - LOG_TAIL - l->len) {
        l->truncated = 1;
        return -1;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
    return 0;
}

static size_t log_utf8_seq_len(unsigned char c)
{
    if (c >= 0xf0)
        return 4;
    if (c >= 0xe0)
        return 3;
    if (c >= 0xc0)
        return 2;
    return 1;
}

static void log_put_escaped(struct log_line *l, const char *s)
{
    char esc[8];
    size_t n;

    if (log_put(l, "\"", 1))
        return;
    for (; *s && !l->truncated; s += n) {
        unsigned char c = (unsigned char)*s;

        n = 1;
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            log_put(l, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", c);
            log_put(l, esc, 6);
        } else {
            n = strnlen(s, log_utf8_seq_len(c));
            log_put(l, s, n);
        }
    }
    /* The closing quote goes into the reserved tail even when truncated. */
    l->buf[l->len++] = '"';
}

void log_begin(struct log_line *l, struct logger *lg, enum log_level lvl, const char *msg)
{
    struct timespec ts;
    struct tm tm;
    char head[96];
    int n;

    l->len = 0;
    l->truncated = 0;
    l->lg = lg;
    l->level = lvl;
    l->active = lg && lvl >= lg->min;
    if (!l->active)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(head, sizeof(head),
                 "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\",\"msg\":",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ts.tv_nsec / 1000000, log_level_names[lvl]);
    log_put(l, head, (size_t)n);
    log_put_escaped(l, msg);
}

/* Writes ,"key": and returns 0, or rolls the line back to before the comma
 * when even that does not fit, so no key is left without a value. */
static int log_put_key(struct log_line *l, const char *key)
{
    size_t mark = l->len;

    log_put(l, ",", 1);
    log_put_escaped(l, key);
    log_put(l, ":", 1);
    if (l->truncated)
        l->len = mark;
    return l->truncated ? -1 : 0;
}

void log_str(struct log_line *l, const char *key, const char *val)
{
    if (l->active && log_put_key(l, key) == 0)
        log_put_escaped(l, val ? val : "");
}

void log_int(struct log_line *l, const char *key, long long val)
{
    char num[24];
    size_t mark = l->len;
    int n;

    if (!l->active || log_put_key(l, key))
        return;
    n = snprintf(num, sizeof(num), "%lld", val);
    if (log_put(l, num, (size_t)n))
        l->len = mark;
}

/* Returns 0 when all of buf went out. */
static int log_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Closes the line in its buffer; LOG_TAIL was kept free for these bytes. */
static void log_finish(struct log_line *l)
{
    static const char trunc[] = ",\"truncated\":true";

    if (l->truncated) {
        memcpy(l->buf + l->len, trunc, sizeof(trunc) - 1);
        l->len += sizeof(trunc) - 1;
    }
    memcpy(l->buf + l->len, "}\n", 2);
    l->len += 2;
    l->active = 0;
}

/* Writes whole lines to the fd. A full disk or a closed stderr must not stop
 * the server: what does not go out is dropped, and the next write first ends
 * the cut line, so every later line is valid JSON. */
static void log_emit(struct logger *lg, const char *buf, size_t len)
{
    if (atomic_exchange(&lg->broken, 0) && log_write_all(lg->fd, "\n", 1))
        atomic_store(&lg->broken, 1);
    if (log_write_all(lg->fd, buf, len))
        atomic_store(&lg->broken, 1);
}

void log_end(struct log_line *l)
{
    if (!l->active)
        return;
    log_finish(l);
    if (l->lg->queue)
        logq_push(l->lg->queue, l->buf, l->len, l->level >= LOG_WARN);
    else
        log_emit(l->lg, l->buf, l->len);
}

void log_queue_sink(void *logger, const char *buf, size_t len, unsigned long long dropped)
{
    struct logger *lg = logger;
    struct log_line l;

    if (len)
        log_emit(lg, buf, len);
    if (!dropped)
        return;
    log_begin(&l, lg, LOG_WARN, "log lines dropped: stderr is not read fast enough");
    log_int(&l, "dropped", (long long)dropped);
    if (l.active) {
        log_finish(&l);
        log_emit(lg, l.buf, l.len);
    }
}

void log_msg(struct logger *lg, enum log_level lvl, const char *msg, const char *key,
             const char *val)
{
    struct log_line l;

    log_begin(&l, lg, lvl, msg);
    if (key)
        log_str(&l, key, val);
    log_end(&l);
}
