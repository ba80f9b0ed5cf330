/* mutate: what the webhook adds to a target pod (docs/profiles.md, step 4) and what it tells
 * the user (docs/operations.md "Warnings").
 *
 * mutate_object() reads a pod, or the pod template of a job, and writes a JSON
 * Patch that adds, for the selected profile, only what is missing: the NCCL
 * environment, IPC_LOCK, a memory-backed /dev/shm, the scheduler, the RDMA
 * resource, the rdma-webhook.io/injected and rdma-webhook.io/selected-by
 * annotations, and for a profile with "pin" chosen by GPU count or as the
 * default, its nodeLabels in spec.nodeSelector. Every pod that got a warning,
 * mutated or not, gets MUTATE_ANNOTATION_WARNINGS (only grows: see
 * mutannot_warnings_value), so a skipped pod may still be MUTATE_PATCHED. Values the user declared
 * are never changed. A container whose NCCL_IB_DISABLE NCCL reads as non-zero (the user chose TCP)
 * gets none of the profile's NCCL_IB_* variables, no IPC_LOCK and no RDMA device; it keeps /dev/shm
 * and the scheduler. IPC_LOCK also depends on the namespace's Pod Security levels (podsec.h), read
 * through hooks->select.namespace_labels at most once per call: it is not added where the enforce
 * level forbids it, nor where the labels cannot be read (a pod Pod Security would reject is worse
 * than one without IPC_LOCK), and is added with a warning where warn or audit will report it;
 * without the hook it is added as ever. One the user declared is never touched.
 * Three switches of the admins leave IPC_LOCK out, for clusters whose other
 * policies (Kyverno, Gatekeeper, a ValidatingAdmissionPolicy) refuse pods that
 * add capabilities: the cluster's (mutate_options.ipc_lock, --ipc-lock=never),
 * the namespace's (the label MUTATE_LABEL_IPC_LOCK=false, read with the same
 * one lookup) and the profile's (ipcLock: false). Each leaves it out without a
 * warning: an admin chose it, and the trace says which switch did. Where the
 * hook exists and the labels cannot be read, the label may be what decides, so
 * IPC_LOCK is left out with Pod Security's warning for unread labels.
 * Applying the patch and calling again yields no operations. The function never
 * fails the admission: a pod it cannot read is reported as MUTATE_ERROR with no patch and a
 * warning.
 *
 * Run-time detection, for a profile with "detect" and a detect_image in the
 * options: each regular target container with InfiniBand on gets the
 * memory-backed volume MUTATE_DETECT_VOLUME mounted read-only at
 * MUTATE_DETECT_DIR, NCCL_CONF_FILE=MUTATE_DETECT_FILE (NCCL 2.23+), and when
 * it runs as root a read-only subPath mount of the file at
 * MUTATE_DETECT_ROOT_CONF (~/.nccl.conf, older NCCL), each unless present;
 * and the profile's NCCL_IB_HCA and NCCL_IB_GID_INDEX are left out of its
 * env (NCCL fills in from the file only what the environment lacks). The pod
 * gets the volume and, after its own init containers, the init container
 * MUTATE_DETECT_CONTAINER, which runs `rdma-webhook nccl-detect` to write the
 * file. Nothing of the user's is ever replaced: a container that names its
 * own NCCL_CONF_FILE or mounts something else at MUTATE_DETECT_DIR keeps the
 * static env in full, and a pod with its own container or volume of those
 * names is not detected at all; each with a warning. So is a pod whose
 * profile has detect while detect_image is NULL.
 *
 * Report mode (report.h): once the patch is made, the mode is decided (the
 * namespace's labels read once, through hooks->select.namespace_labels);
 * in report mode the pod gets, instead of the patch, only the annotation
 * REPORT_ANNOTATION that summarises it, when it would have got anything
 * (changes, or the warnings annotation alone). A pod that would have been
 * mutated is MUTATE_R_REPORTED; one that carries the same summary already
 * gets no operation and is MUTATE_R_NOTHING_MISSING, as a mutated pod is
 * the second time.
 */
#ifndef RDMA_WEBHOOK_MUTATE_H
#define RDMA_WEBHOOK_MUTATE_H

#include "admission/patch.h"
#include "admission/report.h"
#include "admission/select.h"

#include <stddef.h>

struct cJSON;
struct podsec_config;
struct profiles_entry;
struct profiles;
struct trace;

/* What run-time detection adds. The binary is where the Dockerfile puts it,
 * the user the Dockerfile's USER. */
#define MUTATE_DETECT_CONTAINER "rdma-webhook-detect"
#define MUTATE_DETECT_VOLUME    "rdma-webhook-nccl"
#define MUTATE_DETECT_DIR       "/run/rdma-webhook"
#define MUTATE_DETECT_FILE      MUTATE_DETECT_DIR "/nccl.conf"
#define MUTATE_DETECT_ROOT_CONF "/root/.nccl.conf"
#define MUTATE_DETECT_BINARY    "/usr/local/bin/rdma-webhook"
#define MUTATE_DETECT_UID       65532

/* A Namespace label: "false" leaves IPC_LOCK out of the namespace's pods
 * (mutate.h above); "true", or none, leaves the decision to the rest. */
#define MUTATE_LABEL_IPC_LOCK "rdma-webhook.io/ipc-lock"

#define MUTATE_ANNOTATION_INJECTED    "rdma-webhook.io/injected"
#define MUTATE_ANNOTATION_SELECTED_BY "rdma-webhook.io/selected-by"
/* The warnings of the admission as a JSON array of strings, whole (the
 * texts of mutate_warnings.full: the names and values the 120-byte form cuts
 * are what the reader needs), so that `kubectl describe pod` shows them after
 * the fact. */
#define MUTATE_ANNOTATION_WARNINGS "rdma-webhook.io/warnings"
#define MUTATE_MAX_WARNINGS        16
/* The longest value of that annotation: the 32 texts it holds at most, each
 * whole (MUTATE_WARNING_FULL_MAX), fit unescaped, and it stays a small part of
 * the 256 KiB the apiserver allows all of a pod's annotations together. A
 * text past it is left out whole, never cut. */
#define MUTATE_ANNOTATION_WARNINGS_MAX (24u * 1024u)
/* kubectl prints each warning on one line as "Warning: TEXT", without the
 * webhook's name: TEXT starts with "rdma-webhook: " so the user knows where
 * it came from. Kubernetes asks for 120 characters at most (the apiserver may
 * cut one over 256). Each leads with what to do and names the container,
 * with names shortened so the fix always fits. */
#define MUTATE_WARNING_MAX  120
#define MUTATE_WARNING_LEAD "rdma-webhook: "
/* The same warning with every name and value whole, for the admission log. */
#define MUTATE_WARNING_FULL_MAX 512

enum mutate_envfrom {
    MUTATE_ENVFROM_UNKNOWN, /* could not be read: skip nothing, warn */
    MUTATE_ENVFROM_HAS,
    MUTATE_ENVFROM_LACKS,
};

/* The job kinds whose pods the webhook knows; target.h says which of them
 * are targets (the profiles' "targets"). */
enum mutate_job_kind {
    MUTATE_JOB_NONE, /* no job the webhook knows (a pod that opts in, a Deployment's) */
    MUTATE_JOB_PYTORCHJOB,
    MUTATE_JOB_TRAINJOB, /* Kubeflow Trainer v2: Pod -> Job -> JobSet -> TrainJob */
    MUTATE_JOB_JOBSET,   /* a JobSet that no TrainJob controls */
    MUTATE_JOB_MPIJOB,
    MUTATE_JOB_VOLCANOJOB,
    MUTATE_JOB_KINDS
};

/* "PyTorchJob", "TrainJob", "JobSet", "MPIJob", "VolcanoJob" as the
 * profiles (match.jobKinds) and the docs write them; "" for NONE. */
const char *mutate_job_kind_name(enum mutate_job_kind kind);

/* The job a pod belongs to, as far as it is known. Strings are borrowed
 * (from the pod, or from the buffer the hook filled); NULL: unknown. */
struct mutate_job {
    enum mutate_job_kind kind;
    const char *name;        /* the job's name (the TrainJob's, the MPIJob's) */
    const char *api_version; /* its apiVersion, for an Event about it */
    const char *uid;         /* its uid, for an Event about it */
    const char *runtime;     /* a TrainJob's spec.runtimeRef.name */
    const char *role;        /* the replica: replica type ("Worker", "Launcher"),
                              * replicated job ("node", "launcher"), task name */
    /* Its ranks may be started over ssh by mpirun, which passes no container
     * environment on: an MPIJob, or a TrainJob whose JobSet has a replicated
     * job "launcher" (an MPI runtime). */
    int ssh_ranks;
};

/* Room for the strings jobset_owner copies. */
#define MUTATE_JOB_BUF 768

enum mutate_lookup {
    MUTATE_LOOKUP_UNKNOWN, /* could not be read: the caller falls back, with a warning */
    MUTATE_LOOKUP_FOUND,
    MUTATE_LOOKUP_NONE, /* no such object */
};

struct mutate_hooks {
    struct select_hooks select;
    /* Whether ConfigMap ns/name has key. NULL (no API: --no-kube-api, or
     * `rdma-webhook mutate`): every answer is UNKNOWN. A ConfigMap that does not exist
     * LACKS the key, optional or not: either way it declares nothing. */
    enum mutate_envfrom (*configmap_has_key)(void *ctx, const char *ns, const char *name,
                                             const char *key);
    /* Like configmap_has_key, and for HAS the key's value, copied into
     * value (len bytes, NUL-terminated). UNKNOWN also when the value was not
     * kept or does not fit. NULL: no value can be read (every answer
     * UNKNOWN). Asked only for NCCL_IB_DISABLE. */
    enum mutate_envfrom (*configmap_value)(void *ctx, const char *ns, const char *name,
                                           const char *key, char *value, size_t len);
    /* The JobSet ns/name, for a pod that carries its jobset-name label:
     * FOUND with *job filled (kind TRAINJOB, with the TrainJob's name,
     * apiVersion, uid and spec.runtimeRef.name, when a TrainJob is its
     * controlling owner; JOBSET otherwise; ssh_ranks when it has a
     * replicated job named "launcher"; role left as it is), the strings
     * copied into buf (len bytes); NONE: no such JobSet; UNKNOWN: not read.
     * NULL (no API): every answer UNKNOWN. */
    enum mutate_lookup (*jobset_owner)(void *ctx, const char *ns, const char *name,
                                       struct mutate_job *job, char *buf, size_t len);
    void *ctx;
};

/* What the webhook's operator configures for every admission (the flags of
 * serve and mutate). */
/* --ipc-lock: whether IPC_LOCK may be added at all. */
enum mutate_ipc_lock {
    MUTATE_IPC_LOCK_AUTO,  /* as the profile, the namespace and Pod Security allow (default) */
    MUTATE_IPC_LOCK_NEVER, /* never added (the cluster's policies refuse added capabilities) */
};

/* "auto" and "never" into *out: ERR_OK, or ERR_FAIL for anything else (NULL
 * included; no message: the caller names the flag). */
int mutate_ipc_lock_parse(const char *s, enum mutate_ipc_lock *out);

struct mutate_options {
    /* The image of the init container MUTATE_DETECT_CONTAINER, the webhook's
     * own (--detect-image). NULL: no run-time detection, and a profile that
     * asks for it gets a warning instead. */
    const char *detect_image;
    /* --mode: the mode of a pod whose profile and namespace label say none
     * (report.h); UNSET is enforce. */
    enum report_mode mode;
    /* --pod-security-config: the cluster's PodSecurity defaults and
     * exemptions (podsec.h). NULL: the plugin's own (privileged, none). */
    const struct podsec_config *podsec;
    /* --ipc-lock; AUTO (0) when unset. */
    enum mutate_ipc_lock ipc_lock;
};

struct mutate_input {
    const struct cJSON *object; /* a Pod, or a pod template: metadata and spec */
    const char *base;           /* JSON Pointer of object in the patched document */
    const char *namespace_;     /* for envFrom and Namespace lookups */
    /* request.userInfo.username: who creates the pod, for Pod Security's
     * exemptions by user (podsec.h). NULL: unknown, exempt by no user. */
    const char *user;
    int implicit_target; /* a job's template: a target by definition */
    /* The job the object belongs to when the caller knows it (`mutate` on
     * a job's document); NULL: mutate works it out from the pod's owner
     * references and labels, and the jobset_owner hook (mutjob.h). */
    const struct mutate_job *job;
    const struct mutate_options *opts; /* NULL: every option unset */
    /* `mutate --explain`: each decision and its reason, a line each
     * (trace.h, explain.h). NULL, as serve passes it: nothing is said. */
    struct trace *trace;
};

/* MUTATE_REPORTED is never a mutate_result's outcome (a reported pod's is
 * MUTATE_PATCHED: its patch is the report annotation), only what
 * mutate_reason_outcome() makes of MUTATE_R_REPORTED, for the log line and
 * the metrics. */
enum mutate_outcome { MUTATE_PATCHED, MUTATE_SKIPPED, MUTATE_ERROR, MUTATE_REPORTED };

/* Why a pod came out as it did. MUTATE_R_MUTATED goes with MUTATE_PATCHED,
 * MUTATE_R_REPORTED with MUTATE_REPORTED (report mode: it would have been
 * mutated), MUTATE_R_ERROR with MUTATE_ERROR, the rest with MUTATE_SKIPPED
 * (mutate_reason_outcome), though such a pod's result is MUTATE_PATCHED when
 * the patch adds only the warnings (or report) annotation. */
enum mutate_reason {
    MUTATE_R_MUTATED,
    MUTATE_R_REPORTED,
    MUTATE_R_NOT_TARGET,
    MUTATE_R_OPTED_OUT,
    MUTATE_R_NO_PROFILE,
    MUTATE_R_UNKNOWN_PROFILE,
    MUTATE_R_NO_CONTAINER,
    MUTATE_R_NOTHING_MISSING,
    MUTATE_R_ERROR,
    MUTATE_REASONS
};

/* The names the admission log and the metrics use: "mutated", "skipped",
 * "error", "reported"; "mutated", "reported", "not-target", "no-profile", ... */
const char *mutate_outcome_name(enum mutate_outcome outcome);
const char *mutate_reason_name(enum mutate_reason reason);
enum mutate_outcome mutate_reason_outcome(enum mutate_reason reason);

/* What a warning is about, for metrics (docs/operations.md "Warnings"). */
enum mutate_warning_kind {
    MUTATE_W_NO_PROFILE,
    MUTATE_W_UNKNOWN_PROFILE,
    MUTATE_W_OVERRIDE,
    MUTATE_W_NCCL_VALUE,
    MUTATE_W_NON_ROOT,
    MUTATE_W_ENVFROM,
    MUTATE_W_SCHEDULER,
    MUTATE_W_HOST_NETWORK,
    MUTATE_W_NO_CONTAINER,
    MUTATE_W_NODE_LOOKUP,
    MUTATE_W_AMBIGUOUS,   /* node constraints or GPU count fit several profiles */
    MUTATE_W_PINNED,      /* the profile's nodeLabels were added to the nodeSelector */
    MUTATE_W_IB_DISABLED, /* a container's NCCL_IB_DISABLE was respected */
    MUTATE_W_DETECT,      /* the profile's run-time detection was not added */
    /* A selector in match.namespaces could not be evaluated. */
    MUTATE_W_NAMESPACE_LOOKUP,
    MUTATE_W_POD_SECURITY, /* the namespace's Pod Security levels and IPC_LOCK */
    MUTATE_W_MODE,         /* the namespace's rdma-webhook.io/mode label: invalid, or unread */
    MUTATE_W_IPC_LOCK,     /* the namespace's rdma-webhook.io/ipc-lock label: invalid */
    MUTATE_W_SHM,          /* no name left for the /dev/shm volume */
    MUTATE_W_INJECT,       /* a value of rdma-webhook.io/inject that does nothing (target.h) */
    MUTATE_W_NCCL_CONF,    /* a container gets no /etc/nccl.conf (mutconf.h) */
    MUTATE_W_JOB_LOOKUP,   /* a JobSet's owner could not be read, and it decides (target.h) */
    MUTATE_W_ERROR,
    MUTATE_W_KINDS
};

/* The metric label of each kind. */
const char *mutate_warning_kind_name(enum mutate_warning_kind kind);

struct mutate_warnings {
    char text[MUTATE_MAX_WARNINGS][MUTATE_WARNING_MAX];      /* what the user sees */
    char full[MUTATE_MAX_WARNINGS][MUTATE_WARNING_FULL_MAX]; /* what the log says */
    enum mutate_warning_kind kind[MUTATE_MAX_WARNINGS];
    size_t n;
};

struct mutate_result {
    enum mutate_outcome outcome;
    enum mutate_reason reason;
    char error[160]; /* for MUTATE_ERROR: what could not be read */
    const struct profiles_entry *profile;
    enum select_rule rule; /* which rule chose profile (when not NULL) */
    int pinned;            /* the patch adds the profile's nodeLabels to the nodeSelector */
    /* The job the pod belongs to (mutjob.h), its strings in job_buf or the
     * request's memory: the Event about the admission is on it when its
     * uid is known (a TrainJob), on the pod's controlling owner otherwise. */
    struct mutate_job job;
    char job_buf[MUTATE_JOB_BUF];
    struct patch patch; /* valid JSON Patch text when outcome is MUTATE_PATCHED */
    struct mutate_warnings warnings;
    /* Report mode (report.h): which level chose it (report_by_name), NULL
     * in enforce mode; and whether the pod carried REPORT_ANNOTATION
     * already (a call again: that call reported it). */
    const char *report_by;
    int report_seen;
    /* The text of REPORT_ANNOTATION made for this pod (report_value), also
     * when the pod has it already; "" in enforce mode. */
    struct dynbuf report;
};

void mutate_result_init(struct mutate_result *res, size_t patch_cap);
void mutate_result_free(struct mutate_result *res);

void mutate_object(const struct mutate_input *in, const struct profiles *ps,
                   const struct mutate_hooks *hooks, struct mutate_result *res);

/* Calls fn for every variable name that mutate_object, under ps, may ask
 * an envFrom ConfigMap for (configmap_has_key, configmap_value), before a
 * source's prefix is taken off: each profile's env and hostNetworkEnv, and
 * the variables the webhook reads itself. A name may come more than once.
 * The key asked is always such a name or its end (the part after a prefix),
 * so a cache of ConfigMaps need keep only the keys that end one of them. */
void mutate_envfrom_names(const struct profiles *ps, void (*fn)(void *ctx, const char *name),
                          void *ctx);

#endif
