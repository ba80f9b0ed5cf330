/* profiles: the admin's RoCE profiles, parsed and validated into an
 * immutable snapshot.
 *
 * A snapshot is built once per version of the profiles file (or ConfigMap)
 * and then only read, by any number of request threads at once; nothing in
 * it changes after profiles_parse() returns. Every profile is stored fully
 * resolved (defaults merged in, NCCL_IB_HCA built from "hca"), so the request
 * path never merges or allocates for profiles.
 *
 * The JSON format is documented in docs/profiles.md ("The profiles file").
 */
#ifndef RDMA_WEBHOOK_PROFILES_H
#define RDMA_WEBHOOK_PROFILES_H

#include "base/dynbuf.h"
#include "admission/labelsel.h"
#include "admission/report.h"

#include <stddef.h>

struct cJSON;

/* Bounds that keep the request path free of dynamic sizing. */
#define PROFILES_MAX_ENV 128
/* Profiles in one file: also what bounds the admissions-by-profile
 * metric's label set (metrics.h). */
#define PROFILES_MAX_PROFILES 64
/* Entries of match.gpus. */
#define PROFILES_MAX_GPUS 32
/* Labels of match.nodeLabels: a node type is told apart by a few labels;
 * the bound keeps the pairwise checks of the match rules, and the request
 * path's, small (the parse and /validate-profiles run them). */
#define PROFILES_MAX_NODE_LABELS 64
/* Bytes of NCCL_SOCKET_IFNAME in a profile with detect: what nccl-detect's
 * --socket-ifname takes. */
#define PROFILES_DETECT_IFNAME_MAX 255

/* match.namespaces: names in a list. A selector's bounds are labelsel's. */
#define PROFILES_MAX_NAMESPACES 64
/* The label the apiserver puts on every Namespace, its name as the value. */
#define PROFILES_NS_NAME_LABEL "kubernetes.io/metadata.name"

/* Job kinds beyond PyTorchJob whose pods are targets when enabled. */
enum profiles_target {
    PROFILES_TARGET_MPIJOB = 1u << 0,
    PROFILES_TARGET_VOLCANOJOB = 1u << 2,
    PROFILES_TARGET_TRAINJOB = 1u << 3, /* a TrainJob's trainer pods (not its initializers) */
    PROFILES_TARGET_JOBSET = 1u << 4,   /* a JobSet's pods that no TrainJob controls */
};

struct profiles_kv {
    const char *name;
    const char *value;
};

struct profiles_kvs {
    struct profiles_kv *v;
    size_t n;
};

/* "detect": the init container that reads the pod's RDMA set-up at run time
 * (nccl-detect). cpu and memory are its requests and its limits alike, so a
 * pod of Guaranteed QoS stays Guaranteed; both are whole numbers, cpu
 * 10m..1 (milli or whole cores), memory 16Mi..1Gi (k, M, G, Ki, Mi, Gi or
 * bytes). With on, the profile's NCCL_IB_HCA entries are plain device names
 * and NCCL_SOCKET_IFNAME (env and hostNetworkEnv) is 1 to
 * PROFILES_DETECT_IFNAME_MAX bytes without control characters: the values
 * go to nccl-detect's --hca and --socket-ifname, which must take them.
 * require_hca ("requireHca"): a node that cannot give the job's exact list
 * (the profile's "hca", or an NCCL_IB_HCA of "=" and names) whole makes
 * nccl-detect exit 1, so the pod restarts rather than trains on fewer
 * devices than the other ranks; it needs such a list. */
struct profiles_detect {
    int on;
    int require_hca;
    const char *cpu;
    const char *memory;
};

/* "ncclConf": whether target containers get /etc/nccl.conf (mutconf.h).
 * AUTO, the zero value and the default: on for pods whose ranks mpirun may
 * start over ssh (mutate_job.ssh_ranks). */
enum profiles_nccl_conf {
    PROFILES_NCCL_CONF_AUTO,
    PROFILES_NCCL_CONF_ON,
    PROFILES_NCCL_CONF_OFF,
};

/* match.namespaces. Neither names nor a selector: cluster-wide. A selector
 * is the AND of its requirements. */
struct profiles_namespaces {
    const char **names; /* a list of names; NULL: none given */
    size_t n_names;
    int selector;              /* a label selector on the Namespace: sel */
    struct labelsel sel;       /* keys and values point into the snapshot */
    const char **names_sorted; /* names in strcmp order, for a binary search */
};

struct profiles_entry {
    const char *name;
    int is_default;
    long long gpus[PROFILES_MAX_GPUS];     /* match.gpus: GPU counts that select it */
    size_t n_gpus;                         /* 0: not matched by GPU count */
    struct profiles_kvs node_labels;       /* match.nodeLabels: the labels of its nodes */
    struct profiles_namespaces namespaces; /* match.namespaces: where it is a candidate */
    /* match.jobKinds: bit k for enum mutate_job_kind k (mutate.h); 0: any
     * pod. match.runtimes: TrainJob runtimes (spec.runtimeRef.name); NULL:
     * any. Limits like namespaces (select.h). */
    unsigned job_kinds;
    const char **runtimes;
    size_t n_runtimes;
    int pin;                              /* chosen by GPU count or as default: pin */
    struct profiles_kvs env;              /* defaults merged, NCCL_IB_HCA included */
    struct profiles_kvs host_network_env; /* replaces env entries in hostNetwork pods */
    struct profiles_kvs resources;        /* added when no container asks for the prefix */
    const char *scheduler_name;           /* NULL or "": leave the scheduler alone */
    int ipc_lock;
    int shm;
    const char *shm_size_limit; /* NULL: no sizeLimit */
    int init_containers;        /* also mutate matching init containers */
    struct profiles_detect detect;
    enum profiles_nccl_conf nccl_conf; /* "ncclConf" */
    enum report_mode mode;             /* "mode": report or enforce; UNSET: the flag's (report.h) */
    /* node_labels by name, document order among equal names: what makes
     * profiles_labels_within one merge instead of a search per label. */
    const struct profiles_kv **node_labels_by_name;
};

struct profiles {
    const char **gpu_resources;
    size_t n_gpu_resources;
    const char *rdma_prefix;
    unsigned targets; /* enum profiles_target bits */
    struct profiles_entry *p;
    size_t n;
    /* Private: what the const char pointers above point into. */
    struct cJSON *root;
    char **owned;
    size_t n_owned;
};

/* Parses and validates a whole profiles document. On success returns the
 * snapshot. On failure returns NULL and appends one line per problem to
 * errors, each naming the profile and field ("profile \"x\": env.NCCL_IB_TIMEOUT:
 * \"40\" is outside 1..31"). errors may be NULL.
 *
 * Besides each profile's own fields, the match rules are checked against each
 * other (select.h says how they are used), and a rule that can never choose
 * its profile is refused with both names:
 *   - two profiles with the same nodeLabels and the same gpus (not both empty);
 *   - match.nodeLabels of P when another profile Q has nonempty nodeLabels
 *     that are a subset of P's (or the same): every pod consistent with P is
 *     consistent with Q, so the node-labels rule never finds P alone;
 *   - a count in match.gpus of P that another profile Q also lists, when Q's
 *     nodeLabels are a subset of P's (none at all included): Q is never
 *     excluded where P is not, so the count never finds P alone;
 *   - pin without nodeLabels (nothing to pin) or on a profile that is neither
 *     matched by GPU count nor the default (pinning would never happen).
 * With match.namespaces (select.h says how a profile limited to namespaces
 * is preferred), these apply to two cluster-wide profiles as written; to
 * two limited ones when some namespace could be in both (a name both list;
 * a name one lists that the other's selector could match, its labels being
 * free but PROFILES_NS_NAME_LABEL its name; selectors some labels satisfy
 * together: decided exactly, key by key), and then two defaults are refused
 * too; to a limited P and a cluster-wide Q only where they refuse P and P
 * does not cover Q (P's nodeLabels a subset of Q's: P takes Q's place in
 * P's namespaces), so a team copy of a cluster-wide profile is allowed.
 * A cluster-wide profile is never refused for a limited one: it wins in the
 * other namespaces. match.jobKinds and match.runtimes limit the same way
 * (profiles_limits_cover): two limited profiles are checked where a pod
 * could be of both (kinds, runtimes and namespaces all overlapping). Also refused: an empty list, a
 * name that is not a DNS-1123 label or is listed twice, a selector Kubernetes would refuse
 * (operator, values), one that matches every namespace ({}) or none. */
struct profiles *profiles_parse(const char *text, size_t len, struct dynbuf *errors);
void profiles_free(struct profiles *ps);

const struct profiles_entry *profiles_find(const struct profiles *ps, const char *name);
/* 1 when gpus is one of the profile's match.gpus counts. */
int profiles_matches_gpus(const struct profiles_entry *p, long long gpus);
/* Whether namespace ns is one of p's: 1 or 0 (1 for a cluster-wide p).
 * labels are the Namespace's labels, read only for a selector; NULL there
 * (unknown): -1, unless a requirement on PROFILES_NS_NAME_LABEL already
 * fails for ns (0). */
int profiles_in_namespace(const struct profiles_entry *p, const char *ns,
                          const struct cJSON *labels);
/* 1 when p is limited to namespaces (match.namespaces). */
int profiles_ns_limited(const struct profiles_entry *p);
/* Names of match.jobKinds, indexed by enum mutate_job_kind (mutate.h): ""
 * for index 0 (no job) and past the last. */
const char *profiles_job_kind_name(unsigned kind);
#define PROFILES_JOB_KINDS 6
/* Whether a pod of job kind (enum mutate_job_kind) with TrainJob runtime
 * (NULL: none or unknown) is one p is for, by match.jobKinds and
 * match.runtimes: 1 or 0 (1 for a p without them). */
int profiles_for_job(const struct profiles_entry *p, unsigned kind, const char *runtime);
/* 1 when p is limited by match.jobKinds or match.runtimes. */
int profiles_job_limited(const struct profiles_entry *p);
/* 1 when p's limits are more than q's: each kind of limit q has (namespaces;
 * job kinds or runtimes), p has too, and p one more. Where both apply, p
 * takes q's place (select.h) when its nodeLabels are within q's. */
int profiles_limits_cover(const struct profiles_entry *p, const struct profiles_entry *q);
/* 1 when p is limited by anything: namespaces, job kinds, runtimes. */
int profiles_limited(const struct profiles_entry *p);
/* 1 when p is limited to namespaces by a selector, which needs the labels. */
int profiles_ns_needs_labels(const struct profiles_entry *p);
/* 1 when every label of a's match.nodeLabels is also in b's, with the same
 * value (b's first, for a name b lists twice). Linear in the labels. */
int profiles_labels_within(const struct profiles_entry *a, const struct profiles_entry *b);
/* Looks name up in a kv list; NULL when absent. */
const char *profiles_kv_get(const struct profiles_kvs *kvs, const char *name);

#endif
