/* cmwatch: the profiles straight from a ConfigMap, through the API.
 *
 * A thread lists the ConfigMap (fieldSelector=metadata.name=NAME), publishes
 * the profiles key to the store, then watches from the list's
 * resourceVersion with bookmarks. Each ADDED or MODIFIED event publishes the
 * new text at once; a 410 Gone (HTTP status or ERROR event) is answered by a
 * fresh list; a DELETED ConfigMap keeps the last good profiles with an error
 * logged; any failure reconnects with capped exponential backoff and jitter.
 * Every version goes through store_publish(), validated like a file.
 */
#ifndef RDMA_WEBHOOK_CMWATCH_H
#define RDMA_WEBHOOK_CMWATCH_H

#include "kubeapi.h"
#include "log.h"
#include "store.h"

#include <pthread.h>
#include <stdatomic.h>

struct cmwatch {
    const struct kubeapi *api;
    struct store *store;
    struct log *log;
    char ns[254];
    char name[254];
    char key[254];
    unsigned watch_timeout_s;
    /* Private. */
    char origin[540]; /* "configmap NS/NAME" for log lines */
    char resource_version[64];
    char *last_text;     /* last published text, to skip republishing it */
    unsigned backoff_ms; /* the next wait after a failure */
    atomic_int stop;
    pthread_t thread;
    int started;
};

/* ns_name is "NS/NAME". Returns 0, or -1 with a message in err. */
int cmwatch_start(struct cmwatch *w, const struct kubeapi *api, struct store *store,
                  struct log *log, const char *ns_name, const char *key,
                  unsigned watch_timeout_s, char *err, size_t errlen);
void cmwatch_stop(struct cmwatch *w);

#endif
