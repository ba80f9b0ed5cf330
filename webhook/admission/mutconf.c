#include "admission/mutconf.h"

#include "admission/mutate_ctx.h"
#include "admission/mutannot.h"
#include "admission/mutenv.h"
#include "admission/mutpath.h"
#include "admission/mutvol.h"
#include "admission/nccl.h"
#include "admission/patch.h"
#include "admission/podjson.h"
#include "admission/profiles.h"
#include "base/decimal.h"
#include "base/dynbuf.h"
#include "base/err.h"
#include "base/jsonw.h"
#include "base/trace.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

/* The downward API's path of the annotations this module writes, all but
 * the closing "']": what tells its volume from a user's. */
#define MUTCONF_FIELD_PREFIX "metadata.annotations['" MUTCONF_ANNOTATION
/* "rdma-webhook.io/nccl-conf-7", "nccl-7.conf" */
#define MUTCONF_NAME_MAX 64

/* File idx's annotation key and the volume item's path. */
static void mutconf_names(int idx, char *key, char *path)
{
    if (idx == 0) {
        snprintf(key, MUTCONF_NAME_MAX, "%s", MUTCONF_ANNOTATION);
        snprintf(path, MUTCONF_NAME_MAX, "nccl.conf");
        return;
    }
    snprintf(key, MUTCONF_NAME_MAX, "%s-%d", MUTCONF_ANNOTATION, idx);
    snprintf(path, MUTCONF_NAME_MAX, "nccl-%d.conf", idx);
}

/* A volume this module made: downwardAPI, every item one of its
 * annotations. */
static int mutconf_is_own(struct mutate_ctx *m, const cJSON *v)
{
    const cJSON *items = podjson_arr(&m->r, podjson_obj(&m->r, v, "downwardAPI"), "items");
    const cJSON *it;

    if (!items || cJSON_GetArraySize(items) == 0)
        return 0;
    cJSON_ArrayForEach(it, items)
    {
        const char *fp = podjson_str(&m->r, podjson_obj(&m->r, it, "fieldRef"), "fieldPath");

        if (!fp || strncmp(fp, MUTCONF_FIELD_PREFIX, strlen(MUTCONF_FIELD_PREFIX)) != 0)
            return 0;
    }
    return 1;
}

/* The pod's volume named MUTCONF_VOLUME, or NULL. */
static const cJSON *mutconf_volume(struct mutate_ctx *m)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, podjson_arr(&m->r, m->spec, "volumes"))
    {
        const char *n = podjson_str(&m->r, v, "name");

        if (n && strcmp(n, MUTCONF_VOLUME) == 0)
            return v;
    }
    return NULL;
}

static const char *mutconf_setting(const struct mutate_ctx *m)
{
    return m->p->nccl_conf == PROFILES_NCCL_CONF_ON    ? "true"
           : m->p->nccl_conf == PROFILES_NCCL_CONF_OFF ? "false"
                                                       : "\"auto\"";
}

void mutconf_plan(struct mutate_ctx *m)
{
    enum profiles_nccl_conf s = m->p->nccl_conf;
    const cJSON *vol;

    m->conf_on =
        s == PROFILES_NCCL_CONF_ON || (s == PROFILES_NCCL_CONF_AUTO && m->res->job.ssh_ranks);
    m->conf_off = NULL;
    /* Said only where ranks would need it: every other pod is quiet. */
    if (!m->conf_on) {
        if (m->res->job.ssh_ranks)
            MUTATE_TRACE(m, MUTCONF_FILE ": off (ncclConf false): ranks mpirun starts over ssh "
                                         "see none of the NCCL variables added to the env");
        return;
    }
    vol = mutconf_volume(m);
    if (vol && !mutconf_is_own(m, vol)) {
        m->conf_on = 0;
        m->conf_off = "the pod has a volume named " MUTCONF_VOLUME;
        MUTATE_TRACE(m, MUTCONF_FILE ": not added: %s", m->conf_off);
        return;
    }
    if (vol)
        m->conf_off = "the pod has the volume from an earlier admission";
    MUTATE_TRACE(m, MUTCONF_FILE ": on (ncclConf %s%s)%s", mutconf_setting(m),
                 s == PROFILES_NCCL_CONF_AUTO ? ": mpirun may start this job's ranks over ssh" : "",
                 vol ? "; the pod has its volume already" : "");
}

/* Why NCCL would not read name=value from its file as the process has it
 * in the environment, or NULL when it would. */
static const char *mutconf_unfit(const char *name, const char *value)
{
    if (strcmp(name, MUTATE_CONF_FILE) == 0)
        return "NCCL reads it from the environment only";
    if (strchr(value, '\n'))
        return "its value has a newline";
    if (strstr(value, "$("))
        return "the kubelet expands its $(...) in the environment only";
    if (strlen(value) > MUTCONF_VALUE_MAX || strlen(name) > MUTCONF_VALUE_MAX)
        return "longer than the 1023 bytes NCCL reads of a line's name or value";
    return NULL;
}

/* Appends name=value as a line unless it does not fit the file (traced);
 * ERR_OK, or the dynbuf's error. */
static int mutconf_line(struct mutate_ctx *m, struct dynbuf *out, const char *name,
                        const char *value)
{
    const char *why = mutconf_unfit(name, value);

    if (why) {
        MUTATE_TRACE(m, MUTCONF_FILE ": %s left out: %s", name, why);
        return ERR_OK;
    }
    return dynbuf_printf(out, "%s=%s\n", name, value);
}

/* The user's NCCL_* entries of env as the kubelet resolves them: the last
 * of a name wins, so only that one is written. At most MUTCONF_VARS_MAX of
 * them (ERR_TOO_BIG past that), so that finding the last of each name stays
 * a small square however long the pod's env is. */
static int mutconf_user_lines(struct mutate_ctx *m, const cJSON *env, struct dynbuf *out)
{
    const cJSON *e, *vars[MUTCONF_VARS_MAX];
    const char *names[MUTCONF_VARS_MAX];
    size_t n = 0;
    int rc = ERR_OK;

    cJSON_ArrayForEach(e, env)
    {
        const char *name = podjson_str(&m->r, e, "name");

        if (!name || !nccl_is_nccl_var(name))
            continue;
        if (n == MUTCONF_VARS_MAX)
            return ERR_TOO_BIG;
        names[n] = name;
        vars[n++] = e;
    }
    for (size_t i = 0; i < n && rc == ERR_OK; i++) {
        const char *value = podjson_str(&m->r, vars[i], "value");
        size_t j = i + 1;

        while (j < n && strcmp(names[j], names[i]) != 0)
            j++;
        if (j < n)
            continue;
        if (!value || podjson_obj(&m->r, vars[i], "valueFrom"))
            MUTATE_TRACE(m, MUTCONF_FILE ": %s left out: set through valueFrom", names[i]);
        else
            rc = mutconf_line(m, out, names[i], value);
    }
    return rc;
}

/* The container's final NCCL environment as NCCL reads a file: its own
 * literal values, then what mutenv added to it. */
static int mutconf_content(struct mutate_ctx *m, const cJSON *c, struct dynbuf *out)
{
    int rc = mutconf_user_lines(m, podjson_arr(&m->r, c, "env"), out);

    for (size_t i = 0; rc == ERR_OK && i < m->n_env_added; i++)
        if (nccl_is_nccl_var(m->env_added[i]->name))
            rc = mutconf_line(m, out, m->env_added[i]->name, m->env_added[i]->value);
    if (rc == ERR_OK && podjson_arr(&m->r, c, "envFrom"))
        MUTATE_TRACE(m, MUTCONF_FILE ": the container's envFrom variables left out: their values "
                                     "are not known here");
    return rc;
}

/* The index of text among the pod's files, added when new; -1 when there
 * is no room (MUTCONF_FILES_MAX) or memory. */
static int mutconf_index(struct mutate_ctx *m, const char *text)
{
    const cJSON *it;
    cJSON *s;
    int i = 0;

    if (!m->conf_texts && !(m->conf_texts = cJSON_CreateArray())) {
        podjson_fail(&m->r, "out of memory for " MUTCONF_FILE);
        return -1;
    }
    cJSON_ArrayForEach(it, m->conf_texts)
    {
        if (strcmp(it->valuestring, text) == 0)
            return i;
        i++;
    }
    if (i == MUTCONF_FILES_MAX)
        return -1;
    if (!(s = cJSON_CreateString(text)) || !cJSON_AddItemToArray(m->conf_texts, s)) {
        cJSON_Delete(s);
        podjson_fail(&m->r, "out of memory for " MUTCONF_FILE);
        return -1;
    }
    return i;
}

/* The container's mounts say whether it may get the file: 0 when not (the
 * reason traced, and a warning for the user's mount). */
static int mutconf_mount_free(struct mutate_ctx *m, const cJSON *c, const char *cname)
{
    const cJSON *mnt = mutvol_mount_at(m, c, MUTCONF_FILE);
    const char *vol = podjson_str(&m->r, mnt, "name");
    const char *at = mnt ? MUTCONF_FILE : "/etc";

    if (vol && strcmp(vol, MUTCONF_VOLUME) == 0) {
        MUTATE_TRACE(m, MUTCONF_FILE ": mounted already (an earlier admission)");
        return 0;
    }
    if (mnt || mutvol_mount_at(m, c, "/etc")) {
        MUTATE_TRACE(m, MUTCONF_FILE ": not added: the container mounts a volume at %s", at);
        MUTATE_WARN(m, MUTATE_W_NCCL_CONF,
                    "container \"%s\" mounts %s: put its NCCL_* there for ranks started over ssh",
                    mutwarn_s(m, cname, MUTATE_SHOWN_NAME), at);
        return 0;
    }
    if (m->conf_off) {
        MUTATE_TRACE(m, MUTCONF_FILE ": not added: %s", m->conf_off);
        return 0;
    }
    return 1;
}

void mutconf_container(struct mutate_ctx *m, const cJSON *c, const char *cpath, const char *cname,
                       int *mounts)
{
    char key[MUTCONF_NAME_MAX], path[MUTCONF_NAME_MAX];
    struct dynbuf text;
    int rc, idx = -1;

    if (!m->conf_on || !mutconf_mount_free(m, c, cname))
        return;
    dynbuf_init(&text, MUTCONF_TEXT_MAX);
    rc = mutconf_content(m, c, &text);
    if (rc == ERR_NOMEM) {
        podjson_fail(&m->r, "out of memory for " MUTCONF_FILE);
        goto cleanup;
    }
    if (rc != ERR_OK || dynbuf_len(&text) == 0) {
        MUTATE_TRACE(m, MUTCONF_FILE ": not added: %s",
                     rc ? "its NCCL variables exceed the file's bounds"
                        : "no NCCL variable to write");
        if (rc)
            MUTATE_WARN(m, MUTATE_W_NCCL_CONF,
                        "container \"%s\": too many NCCL_* for " MUTCONF_FILE
                        "; ranks started over ssh miss them",
                        mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
        goto cleanup;
    }
    if ((idx = mutconf_index(m, dynbuf_ptr(&text))) < 0) {
        if (!podjson_failed(&m->r))
            MUTATE_WARN(m, MUTATE_W_NCCL_CONF,
                        "container \"%s\": more than %d distinct NCCL settings in the pod; "
                        "no " MUTCONF_FILE,
                        mutwarn_s(m, cname, MUTATE_SHOWN_NAME), MUTCONF_FILES_MAX);
        goto cleanup;
    }
    mutconf_names(idx, key, path);
    mutvol_add_mount(m, cpath, mounts, MUTCONF_VOLUME, MUTCONF_FILE, path, 1);
    MUTATE_TRACE(m,
                 MUTCONF_FILE ": added (read-only, from annotation %s), for ranks started "
                              "over ssh",
                 key);
cleanup:
    dynbuf_free(&text);
}

/* The volume projecting each annotation into its file. */
static void mutconf_volume_add(struct mutate_ctx *m)
{
    struct patch *p = &m->res->patch;
    char key[MUTCONF_NAME_MAX], path[MUTCONF_NAME_MAX];
    int made = mutvol_begin(m);

    jsonw_raw(&p->w, "{\"name\":\"" MUTCONF_VOLUME "\",\"downwardAPI\":{\"items\":[");
    for (int i = 0; i < cJSON_GetArraySize(m->conf_texts); i++) {
        mutconf_names(i, key, path);
        jsonw_raw(&p->w, i ? ",{\"path\":" : "{\"path\":");
        jsonw_str(&p->w, path);
        jsonw_raw(&p->w, ",\"fieldRef\":{\"fieldPath\":\"metadata.annotations['");
        jsonw_raw(&p->w, key);
        jsonw_raw(&p->w, "']\"}}");
    }
    jsonw_raw(&p->w, "]}}");
    mutpath_append_end(m, made);
}

void mutconf_pod(struct mutate_ctx *m)
{
    char key[MUTCONF_NAME_MAX], path[MUTCONF_NAME_MAX];
    const cJSON *it;
    int i = 0;

    if (!m->conf_on && m->conf_off && m->ib_on)
        MUTATE_WARN(m, MUTATE_W_NCCL_CONF,
                    "rename the pod's volume " MUTCONF_VOLUME
                    " to give ranks started over ssh " MUTCONF_FILE);
    if (!m->conf_texts || podjson_failed(&m->r))
        return;
    cJSON_ArrayForEach(it, m->conf_texts)
    {
        mutconf_names(i++, key, path);
        mutannot_set(m, key, it->valuestring);
        MUTATE_TRACE(m, "annotation %s: the NCCL settings of %s", key, path);
    }
    mutconf_volume_add(m);
    MUTATE_TRACE(m, "volume \"" MUTCONF_VOLUME "\" added (downwardAPI, %d file%s)", i,
                 i == 1 ? "" : "s");
}
