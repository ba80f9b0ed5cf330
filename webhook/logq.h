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

struct logq;

/* Receives a batch of whole lines, and how many lines were dropped since the
 * previous batch; called on the writer thread only. */
typedef void (*logq_sink)(void *ctx, const char *buf, size_t len, unsigned long long dropped);

/* Starts the writer thread; returns 0, or -1 (out of memory or threads). */
int logq_start(struct logq **out, size_t cap, unsigned flush_ms, logq_sink sink, void *ctx);

/* Copies the line into the queue: 0, or -1 when it was dropped. Never blocks
 * on the writer's I/O. */
int logq_push(struct logq *q, const char *line, size_t len, int urgent);

/* Lines dropped since the start. */
unsigned long long logq_dropped(struct logq *q);

/* Sends everything queued, joins the writer and frees the queue: 0. When the
 * writer is still blocked in the sink after timeout_ms (a reader that stopped
 * reading), returns -1 and leaves the writer and the queue as they are, for
 * a process that is about to exit, or for a later call to try again. No push
 * may be running or follow. */
int logq_stop(struct logq *q, unsigned timeout_ms);

#endif
