/* mutjob: which job a pod belongs to (struct mutate_job, mutate.h), worked
 * out once per admission into mutate_result.job, before anything reads it.
 *
 * The caller's mutate_input.job wins (`mutate` on a job's document knows
 * it). Otherwise the pod says: its controlling owner reference (a
 * kubeflow.org PyTorchJob or MPIJob, a batch.volcano.sh Job), else its
 * labels (training.kubeflow.org/operator-name, volcano.sh/job-name,
 * jobset.sigs.k8s.io/jobset-name). A JobSet's pod is a TrainJob's only when
 * the jobset_owner hook finds a TrainJob controlling that JobSet; it is asked
 * only when the profiles' targets make TrainJob or JobSet pods targets, and
 * an unknown answer leaves the kind JOBSET with job_unknown set, so the
 * caller can refuse to guess.
 */
#ifndef RDMA_WEBHOOK_MUTJOB_H
#define RDMA_WEBHOOK_MUTJOB_H

struct mutate_ctx;

#define MUTJOB_LABEL_OPERATOR     "training.kubeflow.org/operator-name"
#define MUTJOB_LABEL_REPLICA_TYPE "training.kubeflow.org/replica-type"
#define MUTJOB_LABEL_JOB_ROLE     "training.kubeflow.org/job-role"
#define MUTJOB_LABEL_JOB_NAME     "training.kubeflow.org/job-name"
#define MUTJOB_LABEL_JOBSET       "jobset.sigs.k8s.io/jobset-name"
#define MUTJOB_LABEL_REPLICATED   "jobset.sigs.k8s.io/replicatedjob-name"
#define MUTJOB_LABEL_VOLCANO_JOB  "volcano.sh/job-name"
#define MUTJOB_LABEL_VOLCANO_TASK "volcano.sh/task-spec"

/* Fills m->res->job (and m->job_unknown: the JobSet's owner could not be
 * read). Never fails: what is not known stays NULL or NONE. */
void mutjob_identify(struct mutate_ctx *m);

#endif
