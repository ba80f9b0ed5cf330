#include "kube/jobref.h"

#include "base/err.h"

#include <cjson/cJSON.h>
#include <string.h>

static const cJSON *jobref_get(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* obj's string member key, or NULL when it is absent or not a string. */
static const char *jobref_str(const cJSON *obj, const char *key)
{
    return cJSON_GetStringValue(jobref_get(obj, key));
}

/* The TrainJob's controlling ownerReference of JobSet metadata md, or NULL.
 * Only the controller counts: the JobSet controller's owner is the one that
 * made it, and others may own it too (a garbage-collection parent). */
static const cJSON *jobref_trainjob_owner(const cJSON *md)
{
    const cJSON *ref;

    cJSON_ArrayForEach(ref, jobref_get(md, "ownerReferences"))
    {
        const char *api = jobref_str(ref, "apiVersion");
        const char *kind = jobref_str(ref, "kind");

        if (!cJSON_IsTrue(jobref_get(ref, "controller")))
            continue;
        if (api && kind && strncmp(api, "trainer.kubeflow.org/", 21) == 0 &&
            strcmp(kind, "TrainJob") == 0)
            return ref;
        return NULL; /* controlled by something else */
    }
    return NULL;
}

/* Whether spec.replicatedJobs names one "launcher" (an MPI runtime). */
static int jobref_has_launcher(const cJSON *jobset)
{
    const cJSON *rj;

    cJSON_ArrayForEach(rj, jobref_get(jobref_get(jobset, "spec"), "replicatedJobs"))
    {
        const char *name = jobref_str(rj, "name");

        if (name && strcmp(name, "launcher") == 0)
            return 1;
    }
    return 0;
}

/* Adds string key = value to out unless value is NULL. ERR_OK, ERR_FAIL
 * (value over JOBREF_STR_MAX, required and absent) or ERR_NOMEM. */
static int jobref_put(cJSON *out, const char *key, const char *value, int required, char *err,
                      size_t errlen)
{
    if (!value)
        return required ? err_set(err, errlen, ERR_FAIL, "no %s", key) : ERR_OK;
    if (strlen(value) > JOBREF_STR_MAX)
        return err_set(err, errlen, ERR_FAIL, "its %s is over %d bytes", key, JOBREF_STR_MAX);
    return cJSON_AddStringToObject(out, key, value)
               ? ERR_OK
               : err_set(err, errlen, ERR_NOMEM, "out of memory");
}

int jobref_jobset(const cJSON *jobset, cJSON **out, char *err, size_t errlen)
{
    const cJSON *md = jobref_get(jobset, "metadata");
    const cJSON *owner = jobref_trainjob_owner(md);
    const cJSON *from = owner ? owner : md;
    cJSON *s = cJSON_CreateObject();
    int rc;

    *out = NULL;
    if (!s)
        return err_set(err, errlen, ERR_NOMEM, "out of memory");
    rc = jobref_put(s, "kind", owner ? "TrainJob" : "JobSet", 1, err, errlen);
    if (rc == ERR_OK)
        rc = jobref_put(s, "name", jobref_str(from, "name"), 1, err, errlen);
    if (rc == ERR_OK)
        rc = jobref_put(s, "apiVersion",
                        owner ? jobref_str(owner, "apiVersion") : jobref_str(jobset, "apiVersion"),
                        0, err, errlen);
    if (rc == ERR_OK)
        rc = jobref_put(s, "uid", jobref_str(from, "uid"), 1, err, errlen);
    if (rc == ERR_OK && jobref_has_launcher(jobset) && !cJSON_AddTrueToObject(s, "sshRanks"))
        rc = err_set(err, errlen, ERR_NOMEM, "out of memory");
    if (rc != ERR_OK) {
        cJSON_Delete(s);
        return rc;
    }
    *out = s;
    return ERR_OK;
}

int jobref_trainjob(const cJSON *trainjob, cJSON **out, char *err, size_t errlen)
{
    const cJSON *ref = jobref_get(jobref_get(trainjob, "spec"), "runtimeRef");
    cJSON *s = cJSON_CreateObject();
    int rc;

    *out = NULL;
    if (!s)
        return err_set(err, errlen, ERR_NOMEM, "out of memory");
    if (!jobref_str(jobref_get(trainjob, "metadata"), "name"))
        rc = err_set(err, errlen, ERR_FAIL, "no metadata.name");
    else
        rc = jobref_put(s, "uid", jobref_str(jobref_get(trainjob, "metadata"), "uid"), 0, err,
                        errlen);
    if (rc == ERR_OK)
        rc = jobref_put(s, "runtime", jobref_str(ref, "name"), 0, err, errlen);
    if (rc != ERR_OK) {
        cJSON_Delete(s);
        return rc;
    }
    *out = s;
    return ERR_OK;
}

/* Copies s into buf at *at (of len) and points *dst at it; s NULL leaves
 * *dst NULL. 0, or -1 when it does not fit. */
static int jobref_copy(const char *s, const char **dst, char *buf, size_t len, size_t *at)
{
    size_t n;

    *dst = NULL;
    if (!s)
        return 0;
    n = strlen(s) + 1;
    if (n > len - *at)
        return -1;
    memcpy(buf + *at, s, n);
    *dst = buf + *at;
    *at += n;
    return 0;
}

enum mutate_lookup jobref_fill_jobset(const cJSON *summary, struct mutate_job *job, char *buf,
                                      size_t len, size_t *used)
{
    const char *kind = jobref_str(summary, "kind");
    struct mutate_job j = *job;
    size_t at = 0;

    if (!kind || !buf)
        return MUTATE_LOOKUP_UNKNOWN;
    j.kind = strcmp(kind, "TrainJob") == 0 ? MUTATE_JOB_TRAINJOB : MUTATE_JOB_JOBSET;
    if (jobref_copy(jobref_str(summary, "name"), &j.name, buf, len, &at) ||
        jobref_copy(jobref_str(summary, "apiVersion"), &j.api_version, buf, len, &at) ||
        jobref_copy(jobref_str(summary, "uid"), &j.uid, buf, len, &at) || !j.name)
        return MUTATE_LOOKUP_UNKNOWN;
    j.ssh_ranks = cJSON_IsTrue(jobref_get(summary, "sshRanks"));
    *job = j;
    *used = at;
    return MUTATE_LOOKUP_FOUND;
}

enum mutate_lookup jobref_fill_runtime(const cJSON *summary, struct mutate_job *job, char *buf,
                                       size_t len)
{
    const char *uid = jobref_str(summary, "uid");
    size_t at = 0;
    const char *runtime;

    /* Another TrainJob of the same name (the JobSet's was deleted and made
     * again): not this JobSet's, so its runtime says nothing. */
    if (uid && job->uid && strcmp(uid, job->uid) != 0) {
        job->runtime = NULL;
        return MUTATE_LOOKUP_FOUND;
    }
    if (!buf || jobref_copy(jobref_str(summary, "runtime"), &runtime, buf, len, &at))
        return MUTATE_LOOKUP_UNKNOWN;
    job->runtime = runtime;
    return MUTATE_LOOKUP_FOUND;
}
