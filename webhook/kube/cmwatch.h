/* cmwatch: the profiles straight from a ConfigMap, through the API.
 *
 * A thread lists the ConfigMap (fieldSelector=metadata.name=NAME), publishes
 * the profiles key to the store, then watches from the list's
 * resourceVersion with bookmarks. Each ADDED or MODIFIED event publishes the
 * new text at once; a 410 Gone (HTTP status or ERROR event) is answered by a
 * fresh list; a DELETED ConfigMap keeps the last good profiles with an error
 * logged; any failure reconnects with capped exponential backoff and jitter.
 * Every version goes through store_publish(), validated like a file and
 * serialised with every other reload of the store.
 *
 * With a lastgood (the last good copy): each version published is offered
 * to it, with its resourceVersion, to be saved; a version refused (invalid,
 * or without the key) or a ConfigMap not found while no version serves yet
 * falls back to the copy (lastgood_fall_back). A version refused while one
 * serves, and a DELETED ConfigMap, leave the store stale; the next version
 * published clears it (a version equal to the one serving is published
 * again after a refusal, so a revert clears it too).
 *
 * The API call is injectable (cmwatch_config.call, a kubeapi_call_fn), so
 * the list, the watch and their failures can be tested without a network.
 *
 * Lifecycle: cmwatch_init() starts the thread (there is nothing to do
 * between making the watch and starting it); cmwatch_stop() undoes it.
 */
#ifndef RDMA_WEBHOOK_CMWATCH_H
#define RDMA_WEBHOOK_CMWATCH_H

#include "kube/kubeapi.h"
#include "kube/lastgood.h"
#include "host/log.h"
#include "host/store.h"

#include <stddef.h>

/* Opaque: the ConfigMap's names, the watch's position and the thread. */
struct cmwatch;

struct cmwatch_config {
    /* The API (required): kubeapi_call with its client, or a test's fake. Its
     * requests: a GET of the list, and a watch (on_line set) from the
     * list's resourceVersion. */
    kubeapi_call_fn call;
    void *call_ctx;
    struct store *store;
    struct lastgood *lastgood; /* NULL: none */
    struct log *log;
    const char *ns_name;      /* "NS/NAME" (--profiles-configmap) */
    const char *key;          /* the profiles' key in data (--profiles-key) */
    unsigned watch_timeout_s; /* each watch's timeoutSeconds */
};

/* call_ctx, store, log and lastgood must outlive the watch; the strings are
 * copied. ERR_OK with *out set and the thread running; or ERR_* with a
 * message in err and *out NULL. */
int cmwatch_init(struct cmwatch **out, const struct cmwatch_config *cfg, char *err, size_t errlen);

/* "NS/NAME" split and checked as cmwatch_init does: ERR_OK, or ERR_FAIL
 * with a message naming --profiles-configmap. ns and name have 64 and 254
 * bytes. */
int cmwatch_split_name(const char *ns_name, char ns[64], char name[254], char *err, size_t errlen);
/* Stops and joins the thread, frees the watch and sets *w to NULL. A no-op
 * on NULL. */
void cmwatch_stop(struct cmwatch **w);

#endif
