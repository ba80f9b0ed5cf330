/* trace: a bounded account, line by line, of what one admission decided and
 * why (`rdma-webhook mutate --explain`).
 *
 * The admission logic appends one line per decision to an optional sink:
 * every entry point takes a `struct trace *` that may be NULL, and then does
 * nothing, so `serve`, which never passes one, pays one pointer test per
 * call site and allocates nothing. Callers test the pointer themselves
 * (TRACE_LINE) so that what a line would say is not even computed.
 *
 * The sink is bounded twice: at most max_lines lines and max_bytes bytes of
 * text; what comes after is counted, not kept, and trace_finish() ends the
 * text with "... N more lines". A line is cut at TRACE_LINE_MAX bytes, and
 * control characters in it (a newline in a pod's value) become '?'
 * (utf8_fold), so one
 * entry is always one line. A failed allocation counts the line as dropped;
 * nothing here fails as a whole.
 *
 * A plain value: trace_init(), then trace_free().
 */
#ifndef RDMA_WEBHOOK_TRACE_H
#define RDMA_WEBHOOK_TRACE_H

#include "base/dynbuf.h"

#include <stddef.h>

/* The longest line kept, newline included: a longer one ends in "...". */
#define TRACE_LINE_MAX 1024

struct trace {
    struct dynbuf text; /* the lines, each ending in '\n' */
    size_t lines;       /* kept */
    size_t max_lines;
    size_t more;     /* lines past a bound (or out of memory), not kept */
    int finished;    /* trace_finish() has run */
    unsigned indent; /* spaces before each line: TRACE_INDENT levels */
};

#define TRACE_INDENT 2

void trace_init(struct trace *t, size_t max_lines, size_t max_bytes);
void trace_free(struct trace *t);

/* Appends one line (no newline in fmt), indented by t->indent levels. */
void trace_add(struct trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends the line only when there is a sink: the arguments are evaluated
 * only then. */
#define TRACE_LINE(t, ...)                                                                         \
    do {                                                                                           \
        if (t)                                                                                     \
            trace_add((t), __VA_ARGS__);                                                           \
    } while (0)

/* Ends the text with "... N more lines" when some were dropped (once), and
 * returns it. Later adds are counted as more but never shown. */
const char *trace_finish(struct trace *t);

#endif
