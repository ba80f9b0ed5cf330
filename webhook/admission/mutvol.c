#include "admission/mutvol.h"

#include "admission/mutate_ctx.h"
#include "admission/mutpath.h"
#include "base/err.h"
#include "base/jsonw.h"
#include "admission/patch.h"
#include "admission/podjson.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#define MUTVOL_SHM_VOLUME "rdma-webhook-shm"
/* Names the volume may take: MUTVOL_SHM_VOLUME, then -1 .. -(this - 1). */
#define MUTVOL_SHM_NAMES 1000

int mutvol_exists(struct mutate_ctx *m, const char *name)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, podjson_arr(&m->r, m->spec, "volumes"))
    {
        const char *n = podjson_str(&m->r, v, "name");

        if (n && strcmp(n, name) == 0)
            return 1;
    }
    return 0;
}

int mutvol_begin(struct mutate_ctx *m)
{
    char spec[PATCH_PATH_MAX];

    mutpath_pod(m, spec, "/spec", NULL);
    return mutpath_append_begin(m, spec, "/volumes", &m->volumes);
}

/* Which of the names the volume may take name is: 0 for MUTVOL_SHM_VOLUME,
 * i for MUTVOL_SHM_VOLUME-i (as written: no leading zero), -1 for none. */
static int mutvol_shm_index(const char *name)
{
    size_t plen = sizeof(MUTVOL_SHM_VOLUME) - 1;
    int i = 0;

    if (strncmp(name, MUTVOL_SHM_VOLUME, plen) != 0)
        return -1;
    name += plen;
    if (!*name)
        return 0;
    if (*name++ != '-' || *name < '1' || *name > '9')
        return -1;
    for (; *name >= '0' && *name <= '9' && i < MUTVOL_SHM_NAMES; name++)
        i = i * 10 + (*name - '0');
    return *name || i >= MUTVOL_SHM_NAMES ? -1 : i;
}

/* The first name the volume may take that no volume of the pod has, from
 * one pass over them: ERR_OK, or ERR_FAIL when the pod has them all. */
static int mutvol_shm_free_name(struct mutate_ctx *m)
{
    unsigned char taken[MUTVOL_SHM_NAMES] = {0};
    const cJSON *v;
    int i;

    cJSON_ArrayForEach(v, podjson_arr(&m->r, m->spec, "volumes"))
    {
        const char *n = podjson_str(&m->r, v, "name");

        if (n && (i = mutvol_shm_index(n)) >= 0)
            taken[i] = 1;
    }
    for (i = 0; i < MUTVOL_SHM_NAMES && taken[i]; i++)
        ;
    if (i == MUTVOL_SHM_NAMES)
        return ERR_FAIL;
    if (i == 0)
        snprintf(m->shm_volume, sizeof(m->shm_volume), "%s", MUTVOL_SHM_VOLUME);
    else
        snprintf(m->shm_volume, sizeof(m->shm_volume), "%s-%d", MUTVOL_SHM_VOLUME, i);
    return ERR_OK;
}

/* Adds the pod's memory-backed volume once, under a name no volume has:
 * ERR_OK, or ERR_FAIL when there is none, and then no volume and one
 * warning. */
static int mutvol_shm_volume(struct mutate_ctx *m)
{
    struct patch *p = &m->res->patch;
    int made;

    if (m->shm_volume[0])
        return ERR_OK;
    if (m->shm_no_name)
        return ERR_FAIL;
    if (mutvol_shm_free_name(m)) {
        m->shm_no_name = 1;
        MUTATE_WARN(m, MUTATE_W_SHM,
                    "free a name for /dev/shm: the pod's volumes take %s to %s-%d; none added",
                    MUTVOL_SHM_VOLUME, MUTVOL_SHM_VOLUME, MUTVOL_SHM_NAMES - 1);
        return ERR_FAIL;
    }
    made = mutvol_begin(m);
    jsonw_raw(&p->w, "{\"name\":");
    jsonw_str(&p->w, m->shm_volume);
    jsonw_raw(&p->w, ",\"emptyDir\":{\"medium\":\"Memory\"");
    if (m->p->shm_size_limit) {
        jsonw_raw(&p->w, ",\"sizeLimit\":");
        jsonw_str(&p->w, m->p->shm_size_limit);
    }
    jsonw_raw(&p->w, "}}");
    mutpath_append_end(m, made);
    return ERR_OK;
}

/* a and b name the same directory: equal, or one of them with a '/' more. */
static int mutvol_same_path(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);

    la -= la > 1 && a[la - 1] == '/';
    lb -= lb > 1 && b[lb - 1] == '/';
    return la == lb && memcmp(a, b, la) == 0;
}

const cJSON *mutvol_mount_at(struct mutate_ctx *m, const cJSON *c, const char *mount_path)
{
    const cJSON *mnt;

    cJSON_ArrayForEach(mnt, podjson_arr(&m->r, c, "volumeMounts"))
    {
        const char *mp = podjson_str(&m->r, mnt, "mountPath");

        if (mp && mutvol_same_path(mp, mount_path))
            return mnt;
    }
    return NULL;
}

void mutvol_add_mount(struct mutate_ctx *m, const char *cpath, int *mounts, const char *volume,
                      const char *mount_path, const char *sub_path, int read_only)
{
    struct patch *p = &m->res->patch;
    int made = mutpath_append_begin(m, cpath, "/volumeMounts", mounts);

    jsonw_raw(&p->w, "{\"name\":");
    jsonw_str(&p->w, volume);
    jsonw_raw(&p->w, ",\"mountPath\":");
    jsonw_str(&p->w, mount_path);
    if (sub_path) {
        jsonw_raw(&p->w, ",\"subPath\":");
        jsonw_str(&p->w, sub_path);
    }
    if (read_only)
        jsonw_raw(&p->w, ",\"readOnly\":true");
    jsonw_raw(&p->w, "}");
    mutpath_append_end(m, made);
}

void mutvol_shm(struct mutate_ctx *m, const cJSON *c, const char *cpath, int *mounts)
{
    if (!m->p->shm || mutvol_mount_at(m, c, "/dev/shm")) {
        MUTATE_TRACE(m, "/dev/shm: not added: %s",
                     m->p->shm ? "the container mounts a volume there already"
                               : "the profile has no shm");
        return;
    }
    if (mutvol_shm_volume(m)) {
        MUTATE_TRACE(m, "/dev/shm: not added: the pod's volumes take every name it may have");
        return;
    }
    mutvol_add_mount(m, cpath, mounts, m->shm_volume, "/dev/shm", NULL, 0);
    MUTATE_TRACE(m, "/dev/shm: added, a mount of volume \"%s\" (emptyDir, medium Memory%s%s)",
                 m->shm_volume, m->p->shm_size_limit ? ", sizeLimit " : "",
                 m->p->shm_size_limit ? m->p->shm_size_limit : "");
}
