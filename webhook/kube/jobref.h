/* jobref: what the jobset_owner hook (mutate.h) needs of a JobSet and of a
 * TrainJob, read from their JSON, and its answer written into the hook's
 * struct mutate_job and buffer.
 *
 * A JobSet is summed up as a small JSON object, the value the lookups'
 * cache keeps (a few hundred bytes, not the whole object with its pod
 * templates): {"kind":"TrainJob","name":..,"apiVersion":..,"uid":..,
 * "sshRanks":true}. "kind" is "TrainJob" when the JobSet's controlling
 * ownerReference is a TrainJob of trainer.kubeflow.org (any version), with
 * that TrainJob's name, apiVersion and uid; else "JobSet", with the
 * JobSet's own. "sshRanks" is there when a replicated job is named
 * "launcher": an MPI runtime, whose ranks mpirun starts over ssh. A
 * TrainJob is summed up as {"uid":..,"runtime":..} (spec.runtimeRef.name;
 * each absent when it has none).
 *
 * Every string is bounded: a summary keeps no string over JOBREF_STR_MAX
 * bytes (the JSON is the API's, but names are at most 253 bytes and uids
 * 36: a longer one is not an object this webhook should guess about), and
 * the fill functions copy into the caller's buffer only what fits, else
 * answer UNKNOWN with *job as it was. No I/O: the callers GET the objects.
 */
#ifndef RDMA_WEBHOOK_JOBREF_H
#define RDMA_WEBHOOK_JOBREF_H

#include "admission/mutate.h"

#include <stddef.h>

struct cJSON;

/* The longest string a summary keeps (a DNS subdomain's 253, and room for an
 * apiVersion's group/version). */
#define JOBREF_STR_MAX 320

/* The JobSet's summary into *out (the caller's, cJSON_Delete). ERR_OK;
 * ERR_FAIL with a reason in err when it is not a JobSet this can read (no
 * metadata.name or uid, a string over JOBREF_STR_MAX, a TrainJob owner
 * without name or uid); ERR_NOMEM. */
int jobref_jobset(const struct cJSON *jobset, struct cJSON **out, char *err, size_t errlen);

/* The TrainJob's summary into *out, like jobref_jobset. */
int jobref_trainjob(const struct cJSON *trainjob, struct cJSON **out, char *err, size_t errlen);

/* A JobSet's summary into *job (kind, name, apiVersion, uid, ssh_ranks;
 * role and runtime left as they are), its strings copied into buf (len
 * bytes); *used: the bytes taken. FOUND, or UNKNOWN (not a summary, or
 * its strings do not fit) with *job and *used unchanged. */
enum mutate_lookup jobref_fill_jobset(const struct cJSON *summary, struct mutate_job *job,
                                      char *buf, size_t len, size_t *used);

/* A TrainJob's summary: job->runtime, copied into buf (len bytes). FOUND
 * (runtime NULL when it names none, or when its uid is not job->uid: a
 * TrainJob of the same name made again is not the JobSet's), or UNKNOWN
 * when it does not fit. */
enum mutate_lookup jobref_fill_runtime(const struct cJSON *summary, struct mutate_job *job,
                                       char *buf, size_t len);

#endif
