/* mutchoose: which profile a target pod gets, through select (select.h
 * says how), and what the user is told about the choice: no profile, an
 * unknown or another team's name in the annotation (with the valid names, as
 * many as fit), a tie between profiles, Nodes a hostname names that could
 * not be told, the Namespace's labels that could not be read.
 *
 * The selection's hooks are mutate's (the Node's labels through
 * mutate_hooks, the Namespace's asked once: mutns_labels); with a trace,
 * explain tells the selection in words. The pod's reason is set when no
 * profile applies.
 */
#ifndef RDMA_WEBHOOK_MUTCHOOSE_H
#define RDMA_WEBHOOK_MUTCHOOSE_H

#include "admission/mutate_ctx.h"

/* Picks the profile: 1 when there is one to apply, 0 when none applies
 * (with the reason set, and the warning that says why). */
int mutchoose_profile(struct mutate_ctx *m);

#endif
