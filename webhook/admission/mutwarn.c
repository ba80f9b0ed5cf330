#include "admission/mutwarn.h"

#include "admission/mutate_ctx.h"
#include "base/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* s as the warning being made shows it: whole in the full text, else cut to
 * at most max bytes (MUTATE_SHOWN_LEN-1 at most), "..." included. */
const char *mutwarn_s(struct mutate_ctx *m, const char *s, size_t max)
{
    char *out;

    if (!s)
        s = "?";
    if (m->warn_full)
        return s;
    if (max >= MUTATE_SHOWN_LEN)
        max = MUTATE_SHOWN_LEN - 1;
    out = m->shown[m->shown_at++ % MUTATE_SHOWN_SLOTS];
    utf8_shorten(s, max, out, max + 1);
    return out;
}

__attribute__((format(printf, 2, 3))) void mutwarn_text(struct mutate_ctx *m, const char *fmt, ...)
{
    char buf[MUTATE_WARNING_FULL_MAX];
    va_list ap;
    int len = snprintf(buf, sizeof(buf), "%s", MUTATE_WARNING_LEAD);

    va_start(ap, fmt);
    vsnprintf(buf + len, sizeof(buf) - (size_t)len, fmt, ap);
    va_end(ap);
    /* A user's text (an annotation, a container's name) goes into the
     * log, the Event and kubectl's terminal: one line, no escape sequence. */
    if (m->warn_full)
        utf8_shorten(buf, sizeof(m->warn_full_text) - 1, m->warn_full_text,
                     sizeof(m->warn_full_text));
    else
        utf8_shorten(buf, sizeof(m->warn_short_text) - 1, m->warn_short_text,
                     sizeof(m->warn_short_text));
    utf8_fold(m->warn_full ? m->warn_full_text : m->warn_short_text);
}

/* Keeps the warning just made, once: the same short text twice is one. */
void mutwarn_add(struct mutate_ctx *m, enum mutate_warning_kind kind)
{
    struct mutate_warnings *w = &m->res->warnings;

    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->text[i], m->warn_short_text) == 0)
            return;
    if (w->n < MUTATE_MAX_WARNINGS) {
        w->kind[w->n] = kind;
        memcpy(w->full[w->n], m->warn_full_text, strlen(m->warn_full_text) + 1);
        memcpy(w->text[w->n++], m->warn_short_text, strlen(m->warn_short_text) + 1);
    }
}

/* A user value as quoted in a warning: at most outlen-4 bytes and "...". */
const char *mutwarn_short(const char *s, char *out, size_t outlen)
{
    utf8_shorten(s, outlen - 1, out, outlen);
    return out;
}
