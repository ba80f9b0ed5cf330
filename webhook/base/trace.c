#include "base/trace.h"

#include "base/utf8.h"

#include <stdio.h>
#include <string.h>

/* What trace_finish() needs after the last kept line: "... N more lines". */
#define TRACE_TAIL 48

void trace_init(struct trace *t, size_t max_lines, size_t max_bytes)
{
    memset(t, 0, sizeof(*t));
    dynbuf_init(&t->text, max_bytes + TRACE_TAIL);
    t->max_lines = max_lines;
}

void trace_free(struct trace *t)
{
    dynbuf_free(&t->text);
}

void trace_add(struct trace *t, const char *fmt, ...)
{
    char line[TRACE_LINE_MAX], cut[TRACE_LINE_MAX];
    size_t pad = (size_t)t->indent * TRACE_INDENT, len;
    va_list ap;

    if (t->finished || t->lines >= t->max_lines) {
        t->more++;
        return;
    }
    if (pad > 32)
        pad = 32;
    memset(line, ' ', pad);
    va_start(ap, fmt);
    vsnprintf(line + pad, sizeof(line) - pad, fmt, ap);
    va_end(ap);
    /* vsnprintf cuts anywhere; the line is cut again between characters,
     * with room for the newline. */
    utf8_shorten(line, sizeof(cut) - 2, cut, sizeof(cut) - 1);
    /* Control characters, which would break the one line into several or
     * move the terminal's cursor, become '?'. */
    utf8_fold(cut);
    len = strlen(cut);
    cut[len++] = '\n';
    /* Room is kept for the tail, whatever the lines took. */
    if (dynbuf_len(&t->text) + len + TRACE_TAIL > t->text.cap ||
        dynbuf_add(&t->text, cut, len) != ERR_OK) {
        t->more++;
        return;
    }
    t->lines++;
}

const char *trace_finish(struct trace *t)
{
    if (!t->finished && t->more)
        dynbuf_printf(&t->text, "... %zu more line%s\n", t->more, t->more == 1 ? "" : "s");
    t->finished = 1;
    return dynbuf_ptr(&t->text);
}
