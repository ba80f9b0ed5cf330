/* mutate_ctx: the state of one admission while mutate_object() works on it
 * (struct mutate_ctx), and the two macros every mut* module writes with:
 * MUTATE_WARN (a warning, made twice by mutwarn: whole and shortened) and
 * MUTATE_TRACE (a line of the trace). It declares no function: the helpers
 * the modules share are their owners' (mutwarn, mutpath, mutns).
 *
 * Only mutate.c and the modules it delegates to include it (webhook/README.md
 * lists them under mutate). Everyone else sees mutate.h. The context is
 * mutate_object()'s, on its stack; nothing here allocates, and every function
 * given it is called on the request path of one thread.
 */
#ifndef RDMA_WEBHOOK_MUTATE_CTX_H
#define RDMA_WEBHOOK_MUTATE_CTX_H

#include "admission/mutate.h"
#include "admission/mutwarn.h"
#include "admission/podjson.h"
#include "admission/podsec.h"
#include "admission/profiles.h"
#include "admission/select.h"
#include "base/trace.h"

#include <stddef.h>

struct cJSON;

#define MUTATE_ENV_MAX   (2 * PROFILES_MAX_ENV)
#define MUTATE_CONF_FILE "NCCL_CONF_FILE"
/* Room for the shortened names of one warning (mutwarn_s). */
#define MUTATE_SHOWN_SLOTS 6
#define MUTATE_SHOWN_LEN   48
/* How long the names in a short warning may be: a 63-byte container name
 * still leaves room for the fix. */
#define MUTATE_SHOWN_NAME  20
#define MUTATE_SHOWN_VAR   24
#define MUTATE_SHOWN_VALUE 16

/* Whether IPC_LOCK may be added, from the namespace's Pod Security levels
 * (mutate.h, podsec.h). */
enum mutate_podsec {
    MUTATE_PODSEC_UNPLANNED,
    MUTATE_PODSEC_ADD,       /* allowed by every mode, or no namespace hook */
    MUTATE_PODSEC_ADD_NOTED, /* added; the warn or audit level reports it */
    MUTATE_PODSEC_FORBIDDEN, /* the enforce level would reject the pod: not added */
    MUTATE_PODSEC_UNKNOWN,   /* the labels could not be read: not added */
    MUTATE_PODSEC_OFF_LABEL, /* the namespace's MUTATE_LABEL_IPC_LOCK is "false": not added */
};

/* Whether the pod gets run-time detection (mutate.h). */
enum mutate_detect {
    MUTATE_DETECT_OFF,      /* the profile does not ask for it */
    MUTATE_DETECT_NO_IMAGE, /* it does, but there is no detect_image */
    MUTATE_DETECT_TAKEN,    /* it does, but the pod has its own object of a name it adds */
    MUTATE_DETECT_ON,
};

/* Claims the detect init container references: the pod's own bound
 * (spec.resourceClaims) is far lower in practice. */
#define MUTATE_DETECT_CLAIMS_MAX 32

struct mutate_ctx {
    const struct mutate_input *in;
    const struct profiles *ps;
    const struct profiles_entry *p;
    const struct mutate_hooks *hooks;
    /* hooks->select as select and this file see it: the Namespace's labels
     * asked for once per call (mutns_labels). */
    struct select_hooks select;
    int ns_asked, ns_rc;
    struct cJSON *ns_labels;
    enum mutate_podsec podsec;
    const char *podsec_exempt; /* what exempts the pod from Pod Security, or NULL */
    struct podsec_policy policy;
    struct mutate_result *res;
    int job_unknown; /* the JobSet's owner could not be read (mutjob) */
    struct podjson r;
    const struct cJSON *metadata;
    const struct cJSON *spec;
    int host_network;
    enum select_rule rule; /* how m->p was chosen */
    int hosts_unknown;     /* the Nodes a hostname names could not be told: never pin */
    char shm_volume[64];   /* "" until the volume is added */
    int shm_no_name;       /* every name the volume may take is the pod's */
    int volumes;           /* spec.volumes exists, in the pod or made by the patch */
    int dropped_ifname;    /* hostNetwork: the profile's NCCL_SOCKET_IFNAME left out */
    enum mutate_detect detect;
    const char *detect_taken; /* MUTATE_DETECT_TAKEN: what of the pod's has the name */
    int detect_used;          /* some container reads the detected file */
    /* The resources.claims entries of the containers that read it, each
     * once: the init container references them too, so that DRA gives it
     * the same devices (mutdetect). At most MUTATE_DETECT_CLAIMS_MAX, a
     * warning past that. */
    const struct cJSON *detect_claims[MUTATE_DETECT_CLAIMS_MAX];
    size_t n_detect_claims;
    int ib_on; /* some regular target container has InfiniBand on */
    /* metadata.annotations was made by an earlier operation of this patch:
     * later annotations are added one key at a time (mutannot_set). */
    int annotations_made;
    /* The variables mutenv_container() added to the last container, for
     * mutconf: its file holds the container's final NCCL environment. */
    const struct profiles_kv *env_added[MUTATE_ENV_MAX + 1];
    size_t n_env_added;
    /* /etc/nccl.conf (mutconf): on for this pod, off with the reason why
     * not in conf_off (NULL: on); the distinct contents so far, each a
     * string of conf_texts (an annotation and an item of the volume). */
    int conf_on;
    const char *conf_off;
    struct cJSON *conf_texts;
    /* The profile's variables as this pod gets them (hostNetwork overrides applied). */
    struct profiles_kv env[MUTATE_ENV_MAX];
    size_t n_env;
    /* The warning being made (MUTATE_WARN). */
    int warn_full;
    char warn_full_text[MUTATE_WARNING_FULL_MAX];
    char warn_short_text[MUTATE_WARNING_MAX];
    char shown[MUTATE_SHOWN_SLOTS][MUTATE_SHOWN_LEN];
    unsigned shown_at;
};

/* A line of `mutate --explain` (mutate_input.trace); nothing, with its
 * arguments unevaluated, without a trace. */
#define MUTATE_TRACE(m, ...) TRACE_LINE((m)->in->trace, __VA_ARGS__)

/* Every warning is made twice from the same arguments (MUTATE_WARN): first
 * with names and values whole (mutwarn_s returns them as they are), for the
 * admission log; then with them shortened, for the user. The short text is
 * cut at MUTATE_WARNING_MAX-1 bytes only as a last resort: the unit tests
 * check that each fits with 63-byte names. */
#define MUTATE_WARN(m, kind, ...)                                                                  \
    do {                                                                                           \
        (m)->warn_full = 1;                                                                        \
        mutwarn_text((m), __VA_ARGS__);                                                            \
        (m)->warn_full = 0;                                                                        \
        mutwarn_text((m), __VA_ARGS__);                                                            \
        mutwarn_add((m), (kind));                                                                  \
    } while (0)

#endif
