/* mutwarn: the texts of the warnings mutate makes (MUTATE_WARN, in
 * mutate_ctx.h): each is written twice from the same arguments, whole for
 * the admission log and shortened for the user, folded to one line, and kept
 * once in the result (mutate.h, struct mutate_warnings).
 *
 * The shortened names live in the context's MUTATE_SHOWN_SLOTS slots, so a
 * warning may quote that many values at once; nothing allocates.
 */
#ifndef RDMA_WEBHOOK_MUTWARN_H
#define RDMA_WEBHOOK_MUTWARN_H

#include "admission/mutate.h"

#include <stddef.h>

struct mutate_ctx;

/* s as the warning being made shows it: whole in the full text, else cut to
 * at most max bytes (MUTATE_SHOWN_LEN-1 at most), "..." included. */
const char *mutwarn_s(struct mutate_ctx *m, const char *s, size_t max);
/* One of MUTATE_WARN's two texts (m->warn_full says which). */
void mutwarn_text(struct mutate_ctx *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Keeps the warning just made, once: the same short text twice is one. */
void mutwarn_add(struct mutate_ctx *m, enum mutate_warning_kind kind);
/* A user value as quoted in a warning: at most outlen-4 bytes and "...". */
const char *mutwarn_short(const char *s, char *out, size_t outlen);

#endif
