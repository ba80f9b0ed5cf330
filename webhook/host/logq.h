/* logq: a bounded queue of finished log lines and the one thread that
 * writes them.
 *
 * One write(2) per admission to a pipe costs a syscall and a wake-up of the
 * reader (the container runtime) on every request, and a reader that stops
 * reading would block every request thread inside write(2). With the queue,
 * request threads only copy their line into memory; the writer thread sends
 * what has gathered in one write, when a batch is LOGQ_BATCH bytes, when a
 * line is urgent (warnings and errors), or flush_ms after the first line,
 * whichever comes first. When the reader is slower than the producers and
 * the queue is full, lines are dropped and counted, never waited for.
 *
 * Two buffers of `cap` bytes each: producers fill one while the writer sends
 * the other. Lines are whole: a line longer than `cap` is dropped.
 */
#ifndef RDMA_WEBHOOK_LOGQ_H
#define RDMA_WEBHOOK_LOGQ_H

#include <stddef.h>

#define LOGQ_BATCH (32u * 1024u)

/* Opaque; made by logq_init(), undone by logq_stop(). */
struct logq;

/* Receives a batch of whole lines, and how many lines were dropped since the
 * previous batch; called on the writer thread only. */
typedef void (*logq_sink)(void *ctx, const char *buf, size_t len, unsigned long long dropped);

/* Makes the queue and starts its writer thread (a queue is of no use
 * without it, so there is no separate start). ERR_OK with *out set; or
 * ERR_NOMEM or ERR_FAIL with a message in err and *out NULL. */
int logq_init(struct logq **out, size_t cap, unsigned flush_ms, logq_sink sink, void *ctx,
              char *err, size_t errlen);

/* Copies the line into the queue: ERR_OK; or, when it was dropped (and
 * counted), ERR_TOO_BIG for a line longer than cap and ERR_BUSY for a queue
 * too full for it now. Never blocks on the writer's I/O. */
int logq_push(struct logq *q, const char *line, size_t len, int urgent);

/* Lines dropped since the start. */
unsigned long long logq_dropped(struct logq *q);

/* Sends everything queued, joins the writer, frees the queue and sets *q to
 * NULL: ERR_OK, also when *q is NULL already. The one stop that can fail:
 * when the writer is still blocked in the sink after timeout_ms (a reader
 * that stopped reading), returns ERR_BUSY and leaves *q, the writer and the
 * queue as they are, for a process that is about to exit, or for a later
 * call to try again. No push may be running or follow. */
int logq_stop(struct logq **q, unsigned timeout_ms);

#endif
