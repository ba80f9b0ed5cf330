#include "host/log.h"

#include "base/decimal.h"
#include "base/err.h"
#include "base/jsonw.h"
#include "host/logq.h"
#include "base/utf8.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const log_level_names[] = {"debug", "info", "warn", "error"};

int log_level_parse(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < sizeof(log_level_names) / sizeof(log_level_names[0]); i++) {
        if (strcmp(s, log_level_names[i]) == 0) {
            *out = (enum log_level)i;
            return ERR_OK;
        }
    }
    return ERR_FAIL;
}

/* Keeps LOG_TAIL bytes free so a string's closing quote, an array's closing
 * bracket, the truncation flag, the closing brace and the newline always fit. */
#define LOG_TAIL 32

/* Bytes left before the tail. A string's closing quote may already stand in
 * the tail (len past the limit), so this must not wrap. */
static size_t log_room(const struct log_line *l)
{
    size_t limit = sizeof(l->buf) - LOG_TAIL;

    return l->len < limit ? limit - l->len : 0;
}

/* Appends all n bytes or none: a cut inside an escape or a UTF-8 sequence
 * would make the line invalid JSON. ERR_OK, or ERR_TOO_BIG (the line is now
 * marked truncated). */
static int log_put(struct log_line *l, const char *s, size_t n)
{
    if (l->truncated || n > log_room(l)) {
        l->truncated = 1;
        return ERR_TOO_BIG;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
    return ERR_OK;
}

/* Appends as much of s[0..n) as fits, never cutting a UTF-8 sequence. */
static void log_put_run(struct log_line *l, const char *s, size_t n)
{
    size_t room = log_room(l);

    if (l->truncated)
        return;
    if (n > room) {
        n = utf8_cut(s, room);
        l->truncated = 1;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void log_put_escaped(struct log_line *l, const char *s)
{
    char esc[JSONW_ESCAPE_MAX];
    size_t n = strlen(s), run;

    if (log_put(l, "\"", 1))
        return;
    while (n && !l->truncated) {
        run = jsonw_plain_prefix(s, n);
        log_put_run(l, s, run);
        s += run;
        n -= run;
        if (!n)
            break;
        log_put(l, esc, jsonw_escape_byte((unsigned char)*s, esc));
        s++;
        n--;
    }
    /* The closing quote goes into the reserved tail even when truncated. */
    l->buf[l->len++] = '"';
}

/* {"ts":"2026-11-30T06:50:00.123Z","level":"info","msg": */
static void log_put_head(struct log_line *l, enum log_level lvl)
{
    struct timespec ts;
    struct tm tm;
    char t[] = "{\"ts\":\"YYYY-MM-DDTHH:MM:SS.mmmZ\",\"level\":\"";

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    decimal_pad(t + 7, (unsigned)(tm.tm_year + 1900) % 10000, 4);
    decimal_pad(t + 12, (unsigned)tm.tm_mon + 1, 2);
    decimal_pad(t + 15, (unsigned)tm.tm_mday, 2);
    decimal_pad(t + 18, (unsigned)tm.tm_hour, 2);
    decimal_pad(t + 21, (unsigned)tm.tm_min, 2);
    decimal_pad(t + 24, (unsigned)tm.tm_sec, 2);
    decimal_pad(t + 27, (unsigned)(ts.tv_nsec / 1000000), 3);
    log_put(l, t, sizeof(t) - 1);
    log_put(l, log_level_names[lvl], strlen(log_level_names[lvl]));
    log_put(l, "\",\"msg\":", 8);
}

void log_begin(struct log_line *l, struct log *lg, enum log_level lvl, const char *msg)
{
    l->len = 0;
    l->truncated = 0;
    l->lg = lg;
    l->level = lvl;
    l->active = lg && lvl >= lg->min;
    if (!l->active)
        return;
    log_put_head(l, lvl);
    log_put_escaped(l, msg);
}

/* Writes ,"key": and returns ERR_OK, or rolls the line back to before the
 * comma when even that does not fit (ERR_TOO_BIG), so no key is left without
 * a value. */
static int log_put_key(struct log_line *l, const char *key)
{
    size_t mark = l->len;

    log_put(l, ",", 1);
    log_put_escaped(l, key);
    log_put(l, ":", 1);
    if (l->truncated)
        l->len = mark;
    return l->truncated ? ERR_TOO_BIG : ERR_OK;
}

void log_str(struct log_line *l, const char *key, const char *val)
{
    if (l->active && log_put_key(l, key) == 0)
        log_put_escaped(l, val ? val : "");
}

void log_strs(struct log_line *l, const char *key, const char *const *vals, size_t n)
{
    if (!l->active || log_put_key(l, key))
        return;
    log_put(l, "[", 1);
    for (size_t i = 0; i < n && !l->truncated; i++) {
        /* The comma and the opening quote go in together, or neither. */
        if (log_room(l) < 2) {
            l->truncated = 1;
            break;
        }
        if (i)
            log_put(l, ",", 1);
        log_put_escaped(l, vals[i]);
    }
    /* Like a string's closing quote, the bracket goes into the reserved
     * tail: a cut array still closes. */
    l->buf[l->len++] = ']';
}

void log_int(struct log_line *l, const char *key, long long val)
{
    char num[DECIMAL_MAX];
    size_t mark = l->len;

    if (!l->active || log_put_key(l, key))
        return;
    if (log_put(l, num, decimal_ll(num, val)))
        l->len = mark;
}

/* ERR_OK when all of buf went out, else ERR_FAIL: no message, as a log has
 * nowhere to say why (log_emit drops the rest and mends the line). */
static int log_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return ERR_FAIL;
        buf += w;
        len -= (size_t)w;
    }
    return ERR_OK;
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
static void log_emit(struct log *lg, const char *buf, size_t len)
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
    struct log *lg = logger;
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

void log_msg(struct log *lg, enum log_level lvl, const char *msg, const char *key, const char *val)
{
    struct log_line l;

    log_begin(&l, lg, lvl, msg);
    if (key)
        log_str(&l, key, val);
    log_end(&l);
}
