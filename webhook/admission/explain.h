/* explain: what the admission chose, told in words, for `rdma-webhook
 * mutate --explain` (trace.h): which containers are targets and why, the
 * pod's node constraints and GPU count, and how each profile fared at each
 * rule of select.h: chosen, or why not ("excluded by the pod's node
 * constraints: ...", "tied with ... at node-labels", "match.gpus [8] vs the
 * pod's 4 GPUs", "not the default", "the annotation names another profile").
 *
 * mutate.c calls these only with a trace, never on serve's path. They read
 * the pod through a podjson of their own, so they never change the
 * admission's result, and call no hook but the Node lookup the selection
 * made (once more, for the node's labels).
 */
#ifndef RDMA_WEBHOOK_EXPLAIN_H
#define RDMA_WEBHOOK_EXPLAIN_H

struct cJSON;
struct profiles;
struct select_hooks;
struct select_job;
struct select_result;
struct trace;

/* The regular containers: each one a target or not, and why (docs/profiles.md, step 2);
 * fallback is target_each_container()'s. */
void explain_containers(struct trace *t, const struct cJSON *spec, const struct profiles *ps,
                        const char *fallback);

/* The init containers, once the profile is known: mutated only with its
 * initContainers on (on), and then those that ask for devices. */
void explain_init_containers(struct trace *t, const struct cJSON *spec, const struct profiles *ps,
                             int on);

/* The selection sel that select_profile() made of this pod in namespace ns:
 * the constraints it read, the rule and profile, and a line for every
 * profile (one limited to other namespaces says so and nothing more). */
void explain_selection(struct trace *t, const struct cJSON *spec, const char *ns,
                       const struct select_job *job, const struct profiles *ps,
                       const struct select_hooks *hooks, const struct select_result *sel);

#endif
