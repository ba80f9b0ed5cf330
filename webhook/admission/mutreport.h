/* mutreport: report mode on one pod (report.h, docs/operations.md): the
 * pod's mode by the three levels (the flag, the profile, the namespace's
 * REPORT_LABEL from the one lookup of its labels), the warnings about a label
 * ignored or unread, and, in report mode, the patch turned into the
 * REPORT_ANNOTATION that summarises it (unless the pod has that one already).
 *
 * Runs after the pod is mutated and warned, before the annotations; a summary
 * that cannot be made fails the pod (podjson_fail), never blocks it.
 */
#ifndef RDMA_WEBHOOK_MUTREPORT_H
#define RDMA_WEBHOOK_MUTREPORT_H

struct mutate_ctx;

/* Report mode, when the pod would get anything. Returns 1 when the pod is
 * reported (the annotations are done), 0 in enforce mode. */
int mutreport_apply(struct mutate_ctx *m);

#endif
