/* report: report-only mode. Which mode an admission runs in, and the one
 * annotation a reported pod gets instead of the changes.
 *
 * Three levels set the mode, the most specific winning: the namespace label
 * REPORT_LABEL, then the profile's "mode", then serve's (or mutate's)
 * --mode; none of them set is enforce. A label value that is neither
 * "report" nor "enforce" is ignored (the caller warns). Labels that cannot
 * be read are ignored the same way (report_decide sets lookup_failed and the
 * caller warns): the profile and the flag decide, as for every other lookup
 * that fails (a fallback and a warning). So an API problem, or a missing
 * RBAC rule, never turns the webhook off where no namespace uses the label,
 * and an admin who wants "report when in doubt" gets it by running with
 * --mode report and labelling the namespaces to mutate enforce.
 *
 * In report mode the pod gets nothing but REPORT_ANNOTATION, plain text that
 * says in words what enforce would have written (report_value), one line
 * each, as `kubectl describe pod` shows an annotation of several lines:
 * first what was decided (nothing changed; the level that chose report; the
 * profile and its rule, or why enforce would change nothing either), then
 * one line per change (`container "pytorch": env NCCL_IB_HCA==mlx5_1,...`,
 * one per item of an operation that makes a list), then one per warning.
 * Every name and value comes from the pod and the profiles, so each line is
 * folded to one line of text and cut between characters at REPORT_LINE_MAX
 * bytes; the whole is bounded by REPORT_VALUE_MAX, the lines that do not fit
 * counted in a line "... and N more" where they end. The summary is a
 * function of the would-be changes only, so a second call on the reported
 * pod writes the same text, which the caller leaves alone.
 *
 * report_note() makes of that text an Event's note (the caller's RDMAReport
 * Event, which every reported pod gets): the lines joined by
 * REPORT_NOTE_SEP while they fit, the rest counted.
 */
#ifndef RDMA_WEBHOOK_REPORT_H
#define RDMA_WEBHOOK_REPORT_H

#include "base/dynbuf.h"

#include <stddef.h>

struct cJSON;

#define REPORT_LABEL      "rdma-webhook.io/mode"
#define REPORT_ANNOTATION "rdma-webhook.io/report"
/* The annotation's value at most, in bytes; Kubernetes allows 256 KiB for
 * all of a pod's annotations together. */
#define REPORT_VALUE_MAX 8192
/* One line at most, in bytes. */
#define REPORT_LINE_MAX 512
/* Between two lines of the text in a note. */
#define REPORT_NOTE_SEP " | "
/* The RDMAReport Event's note at most: an Event's note holds 1024 bytes, and
 * the Event puts the pod's name before this (events.h checks the sum). */
#define REPORT_NOTE_MAX 928

enum report_mode { REPORT_MODE_UNSET, REPORT_MODE_ENFORCE, REPORT_MODE_REPORT };

/* Which level decided. */
enum report_by {
    REPORT_BY_FLAG,      /* --mode, or the default: enforce */
    REPORT_BY_PROFILE,   /* the profile's "mode" */
    REPORT_BY_NAMESPACE, /* the namespace label */
};

/* "report" and "enforce"; UNSET for anything else (NULL included). */
enum report_mode report_mode_parse(const char *s);
/* "report", "enforce" (also for UNSET). */
const char *report_mode_name(enum report_mode mode);
/* "flag", "profile", "namespace-label". */
const char *report_by_name(enum report_by by);

/* How the namespace's labels came out of the lookup. */
enum report_lookup {
    REPORT_LOOKUP_NONE,   /* no lookup there (no API): the level does not apply */
    REPORT_LOOKUP_OK,     /* read: label is the value of REPORT_LABEL, or NULL */
    REPORT_LOOKUP_FAILED, /* asked and not answered */
};

struct report_decision {
    enum report_mode mode; /* ENFORCE or REPORT */
    enum report_by by;
    int label_invalid; /* the label was there with another value: ignored */
    int lookup_failed; /* REPORT_LOOKUP_FAILED: the label is not known; the rest decides */
};

/* The precedence above. flag and profile may be UNSET. */
void report_decide(enum report_mode flag, enum report_mode profile, enum report_lookup lookup,
                   const char *label, struct report_decision *out);

/* What the summary says, besides the operations. */
struct report_input {
    const char *result;      /* "reported", or "skipped" for a pod enforce would only warn */
    const char *reason;      /* why skipped; NULL for reported */
    const char *by;          /* report_by_name() */
    const char *profile;     /* NULL: none */
    const char *selected_by; /* with profile */
    const char *const *warnings;
    size_t n_warnings;
    const struct cJSON *ops; /* the would-be JSON Patch (an array), or NULL */
    const char *base;        /* taken off each path: the pod's place in the patched document */
    const struct cJSON *pod; /* the object at base, whose containers the lines name; or NULL */
};

/* Writes the annotation's value (lines of text joined by '\n', no newline
 * at the end, NUL-terminated, at most REPORT_VALUE_MAX bytes) to out, whose
 * cap must be REPORT_VALUE_MAX or more. The warnings take at most half of
 * it (the rest counted, as the changes are). ERR_OK or ERR_NOMEM. */
int report_value(const struct report_input *in, struct dynbuf *out);

/* The lines of text (report_value's) joined by REPORT_NOTE_SEP into out
 * (outlen bytes, NUL-terminated): whole lines while they fit, then
 * "... and N more" counting the rest (a count of the text's own included).
 * outlen must leave room for the first line and the count. */
void report_note(const char *text, char *out, size_t outlen);

#endif
