#include "admission/mutdetect.h"

#include "admission/mutate_ctx.h"
#include "admission/mutpath.h"
#include "admission/mutcaps.h"
#include "admission/mutenv.h"
#include "admission/mutvol.h"
#include "base/jsonw.h"
#include "admission/nccl.h"
#include "admission/patch.h"
#include "admission/podjson.h"
#include "admission/profiles.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

/* The memory the detected file's volume may take: the file is three lines. */
#define MUTDETECT_SIZE_LIMIT "1Mi"

/* The init container this webhook adds: its name, running nccl-detect. */
static int mutdetect_is_own(struct mutate_ctx *m, const cJSON *c)
{
    const char *name = podjson_str(&m->r, c, "name");
    const cJSON *first = cJSON_GetArrayItem(podjson_arr(&m->r, c, "args"), 0);

    return name && strcmp(name, MUTATE_DETECT_CONTAINER) == 0 && cJSON_IsString(first) &&
           strcmp(first->valuestring, "nccl-detect") == 0;
}

static int mutdetect_named(struct mutate_ctx *m, const cJSON *item, const char *name)
{
    const char *n = podjson_str(&m->r, item, "name");

    return n && strcmp(n, name) == 0;
}

/* What of the pod's own has a name detection adds, as a warning names it;
 * NULL when nothing has. What an earlier call added is the pod's no more
 * than before: the init container that runs nccl-detect, an emptyDir. */
static const char *mutdetect_taken(struct mutate_ctx *m)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, podjson_arr(&m->r, m->spec, "initContainers"))
    {
        if (mutdetect_named(m, it, MUTATE_DETECT_CONTAINER) && !mutdetect_is_own(m, it))
            return "init container \"" MUTATE_DETECT_CONTAINER "\"";
    }
    /* Container names are unique across both lists. */
    cJSON_ArrayForEach(it, podjson_arr(&m->r, m->spec, "containers"))
    {
        if (mutdetect_named(m, it, MUTATE_DETECT_CONTAINER))
            return "container \"" MUTATE_DETECT_CONTAINER "\"";
    }
    cJSON_ArrayForEach(it, podjson_arr(&m->r, m->spec, "volumes"))
    {
        if (mutdetect_named(m, it, MUTATE_DETECT_VOLUME) && !podjson_obj(&m->r, it, "emptyDir"))
            return "volume \"" MUTATE_DETECT_VOLUME "\"";
    }
    return NULL;
}

void mutdetect_plan(struct mutate_ctx *m)
{
    const char *image = m->in->opts ? m->in->opts->detect_image : NULL;

    if (!m->p->detect.on)
        m->detect = MUTATE_DETECT_OFF;
    else if (!image || !*image)
        m->detect = MUTATE_DETECT_NO_IMAGE;
    else if ((m->detect_taken = mutdetect_taken(m)))
        m->detect = MUTATE_DETECT_TAKEN;
    else
        m->detect = MUTATE_DETECT_ON;
    MUTATE_TRACE(m, "detect: %s",
                 m->detect == MUTATE_DETECT_OFF        ? "off in the profile"
                 : m->detect == MUTATE_DETECT_NO_IMAGE ? "the profile asks for it, but there is no "
                                                         "--detect-image: static values"
                 : m->detect == MUTATE_DETECT_TAKEN
                     ? "the profile asks for it, but the pod has a name it needs: static values"
                     : "on: containers with InfiniBand on read " MUTATE_DETECT_FILE);
}

int mutdetect_container(struct mutate_ctx *m, const cJSON *c, const char *cname)
{
    const cJSON *own = mutenv_entry_named(m, podjson_arr(&m->r, c, "env"), MUTATE_CONF_FILE);
    const cJSON *mnt = mutvol_mount_at(m, c, MUTATE_DETECT_DIR);
    const char *value = podjson_str(&m->r, own, "value");
    struct mutenv_envfrom_warned warned = {0};
    int user_file;

    if (own)
        user_file = !value || podjson_obj(&m->r, own, "valueFrom") ||
                    strcmp(value, MUTATE_DETECT_FILE) != 0;
    else
        user_file = mutenv_envfrom_declares(m, podjson_arr(&m->r, c, "envFrom"), MUTATE_CONF_FILE,
                                            cname, &warned);
    if (user_file) {
        MUTATE_TRACE(m, "detect: not for this container: it names its own " MUTATE_CONF_FILE);
        MUTATE_WARN(m, MUTATE_W_DETECT,
                    "drop container \"%s\"'s own " MUTATE_CONF_FILE
                    " to detect at run time; it keeps static values",
                    mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
        return 0;
    }
    if (mnt && !mutdetect_named(m, mnt, MUTATE_DETECT_VOLUME)) {
        MUTATE_TRACE(
            m, "detect: not for this container: it mounts something else at " MUTATE_DETECT_DIR);
        MUTATE_WARN(m, MUTATE_W_DETECT,
                    "move container \"%s\"'s mount off " MUTATE_DETECT_DIR " to detect at run time",
                    mutwarn_s(m, cname, MUTATE_SHOWN_NAME));
        return 0;
    }
    return 1;
}

static int mutdetect_same_claim(struct mutate_ctx *m, const cJSON *a, const cJSON *b)
{
    const char *ra = podjson_str(&m->r, a, "request"), *rb = podjson_str(&m->r, b, "request");

    return strcmp(podjson_str(&m->r, a, "name"), podjson_str(&m->r, b, "name")) == 0 &&
           (ra && rb ? strcmp(ra, rb) == 0 : ra == rb);
}

/* c's resources.claims, kept for the init container (each once). */
static void mutdetect_keep_claims(struct mutate_ctx *m, const cJSON *c)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, podjson_arr(&m->r, podjson_obj(&m->r, c, "resources"), "claims"))
    {
        size_t i = 0;

        if (!podjson_str(&m->r, it, "name"))
            continue;
        while (i < m->n_detect_claims && !mutdetect_same_claim(m, m->detect_claims[i], it))
            i++;
        if (i < m->n_detect_claims)
            continue;
        if (m->n_detect_claims == MUTATE_DETECT_CLAIMS_MAX) {
            MUTATE_WARN(m, MUTATE_W_DETECT,
                        "the detect init container references the first %d resource claims "
                        "only; it may not see every device of the others",
                        MUTATE_DETECT_CLAIMS_MAX);
            return;
        }
        m->detect_claims[m->n_detect_claims++] = it;
    }
}

void mutdetect_mounts(struct mutate_ctx *m, const cJSON *c, const char *cpath, int *mounts)
{
    int root = !mutcaps_runs_as_non_root(m, podjson_obj(&m->r, c, "securityContext"));

    if (!mutvol_mount_at(m, c, MUTATE_DETECT_DIR)) {
        mutvol_add_mount(m, cpath, mounts, MUTATE_DETECT_VOLUME, MUTATE_DETECT_DIR, NULL, 1);
        MUTATE_TRACE(m, "detect: mount of " MUTATE_DETECT_DIR " added (read-only)");
    } else {
        MUTATE_TRACE(m, "detect: " MUTATE_DETECT_DIR " is mounted already");
    }
    if (root && !mutvol_mount_at(m, c, MUTATE_DETECT_ROOT_CONF) &&
        !mutvol_mount_at(m, c, "/root")) {
        mutvol_add_mount(m, cpath, mounts, MUTATE_DETECT_VOLUME, MUTATE_DETECT_ROOT_CONF,
                         "nccl.conf", 1);
        MUTATE_TRACE(m, "detect: mount of " MUTATE_DETECT_ROOT_CONF " added (NCCL before 2.23)");
    } else {
        MUTATE_TRACE(m, "detect: no mount at " MUTATE_DETECT_ROOT_CONF ": %s",
                     !root ? "the container runs as non-root" : "a mount there or at /root");
    }
    mutdetect_keep_claims(m, c);
}

/* The volume the init container writes to and the targets read, unless the
 * pod has it (an earlier call's: another one made detection TAKEN). */
static void mutdetect_volume(struct mutate_ctx *m)
{
    struct patch *p = &m->res->patch;
    int made;

    if (mutvol_exists(m, MUTATE_DETECT_VOLUME)) {
        MUTATE_TRACE(m, "detect: volume \"" MUTATE_DETECT_VOLUME "\": the pod has it");
        return;
    }
    MUTATE_TRACE(m, "detect: volume \"" MUTATE_DETECT_VOLUME "\" added (emptyDir, medium Memory, "
                    "sizeLimit " MUTDETECT_SIZE_LIMIT ")");
    made = mutvol_begin(m);
    jsonw_raw(&p->w, "{\"name\":\"" MUTATE_DETECT_VOLUME "\",\"emptyDir\":{\"medium\":\"Memory\","
                     "\"sizeLimit\":\"" MUTDETECT_SIZE_LIMIT "\"}}");
    mutpath_append_end(m, made);
}

/* One argument of the init container. The kubelet expands $(VAR) in args
 * and reads $$ as $, so each '$' is doubled: NCCL_SOCKET_IFNAME may hold one
 * (at most PROFILES_DETECT_IFNAME_MAX bytes with detect on); device names,
 * the only other values, cannot. */
static void mutdetect_arg(struct mutate_ctx *m, const char *arg)
{
    char buf[2 * PROFILES_DETECT_IFNAME_MAX + 1];
    size_t o = 0;

    jsonw_raw(&m->res->patch.w, ",");
    if (!strchr(arg, '$')) {
        jsonw_str(&m->res->patch.w, arg);
        return;
    }
    if (strlen(arg) > PROFILES_DETECT_IFNAME_MAX) {
        podjson_fail(&m->r, "an argument of the detection is too long");
        return;
    }
    for (; *arg; arg++) {
        if (*arg == '$')
            buf[o++] = '$';
        buf[o++] = *arg;
    }
    buf[o] = '\0';
    jsonw_str(&m->res->patch.w, buf);
}

/* The claims of the containers that read the file, as they name them. */
static void mutdetect_claims(struct mutate_ctx *m)
{
    struct patch *p = &m->res->patch;

    if (m->n_detect_claims == 0)
        return;
    MUTATE_TRACE(m, "detect: the init container references the readers' %zu resource claim%s",
                 m->n_detect_claims, m->n_detect_claims == 1 ? "" : "s");
    jsonw_raw(&p->w, ",\"claims\":[");
    for (size_t i = 0; i < m->n_detect_claims; i++) {
        const char *request = podjson_str(&m->r, m->detect_claims[i], "request");

        jsonw_raw(&p->w, i ? ",{\"name\":" : "{\"name\":");
        jsonw_str(&p->w, podjson_str(&m->r, m->detect_claims[i], "name"));
        if (request) {
            jsonw_raw(&p->w, ",\"request\":");
            jsonw_str(&p->w, request);
        }
        jsonw_raw(&p->w, "}");
    }
    jsonw_raw(&p->w, "]");
}

/* requests and limits alike, so that a Guaranteed pod stays Guaranteed;
 * and the claims, so that DRA gives the init container the devices the
 * readers get (dra-driver-sriov's CDI environment among them). */
static void mutdetect_resources(struct mutate_ctx *m)
{
    struct patch *p = &m->res->patch;

    for (int i = 0; i < 2; i++) {
        jsonw_raw(&p->w, i ? ",\"limits\":{\"cpu\":" : "{\"requests\":{\"cpu\":");
        jsonw_str(&p->w, m->p->detect.cpu);
        jsonw_raw(&p->w, ",\"memory\":");
        jsonw_str(&p->w, m->p->detect.memory);
        jsonw_raw(&p->w, "}");
    }
    mutdetect_claims(m);
    jsonw_raw(&p->w, "}");
}

/* Pod Security "restricted" asks each of these of every container. */
#define MUTDETECT_SECURITY                                                                         \
    "{\"runAsNonRoot\":true,\"runAsUser\":65532,\"runAsGroup\":65532,"                             \
    "\"allowPrivilegeEscalation\":false,\"readOnlyRootFilesystem\":true,"                          \
    "\"capabilities\":{\"drop\":[\"ALL\"]},\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}"
_Static_assert(MUTATE_DETECT_UID == 65532, "MUTDETECT_SECURITY spells the uid out");

/* The init container, after the pod's own: those may set up what it is to
 * see (the network, say), and NCCL only runs in the regular containers.
 * Unless the pod has it (an earlier call's). Its arguments hand nccl-detect
 * the profile's NCCL_IB_HCA (to choose among those devices, and the job's
 * list to compare with), NCCL_SOCKET_IFNAME (to write instead of the
 * default route's) and --require-hca when the profile asks (detect.requireHca);
 * NODE_NAME (downward API) names the node in its mismatch line. */
static void mutdetect_init_container(struct mutate_ctx *m)
{
    const cJSON *inits = podjson_arr(&m->r, m->spec, "initContainers"), *it;
    const char *hca = mutenv_value(m, "NCCL_IB_HCA");
    const char *ifname = mutenv_value(m, "NCCL_SOCKET_IFNAME");
    struct patch *p = &m->res->patch;
    char spec[PATCH_PATH_MAX];
    int exists = inits != NULL, made;

    cJSON_ArrayForEach(it, inits)
    {
        if (mutdetect_is_own(m, it)) {
            MUTATE_TRACE(m, "detect: init container \"" MUTATE_DETECT_CONTAINER "\": the pod has "
                            "it");
            return;
        }
    }
    MUTATE_TRACE(m,
                 "detect: init container \"" MUTATE_DETECT_CONTAINER "\" added (image %s, "
                 "after the pod's own)",
                 m->in->opts->detect_image);
    mutpath_pod(m, spec, "/spec", NULL);
    made = mutpath_append_begin(m, spec, "/initContainers", &exists);
    jsonw_raw(&p->w, "{\"name\":\"" MUTATE_DETECT_CONTAINER "\",\"image\":");
    jsonw_str(&p->w, m->in->opts->detect_image);
    jsonw_raw(&p->w, ",\"command\":[\"" MUTATE_DETECT_BINARY "\"],\"args\":[\"nccl-detect\","
                     "\"--out\",\"" MUTATE_DETECT_FILE "\"");
    if (hca) {
        mutdetect_arg(m, "--hca");
        mutdetect_arg(m, hca);
    }
    if (ifname) {
        mutdetect_arg(m, "--socket-ifname");
        mutdetect_arg(m, ifname);
    }
    if (hca && m->p->detect.require_hca)
        mutdetect_arg(m, "--require-hca");
    /* The node's name for nccl-detect's mismatch line. */
    jsonw_raw(&p->w, "],\"env\":[{\"name\":\"NODE_NAME\",\"valueFrom\":{\"fieldRef\":"
                     "{\"fieldPath\":\"spec.nodeName\"}}}],\"resources\":");
    mutdetect_resources(m);
    jsonw_raw(&p->w, ",\"securityContext\":" MUTDETECT_SECURITY
                     ",\"volumeMounts\":[{\"name\":\"" MUTATE_DETECT_VOLUME
                     "\",\"mountPath\":\"" MUTATE_DETECT_DIR "\"}]}");
    mutpath_append_end(m, made);
}

void mutdetect_pod(struct mutate_ctx *m)
{
    if (m->detect_used) {
        mutdetect_volume(m);
        mutdetect_init_container(m);
        return;
    }
    if (m->detect != MUTATE_DETECT_OFF)
        MUTATE_TRACE(m, "detect: no init container or volume added: %s",
                     m->ib_on ? "no container reads the detected file"
                              : "no regular target container has InfiniBand on");
    if (!m->ib_on)
        return;
    if (m->detect == MUTATE_DETECT_NO_IMAGE)
        MUTATE_WARN(m, MUTATE_W_DETECT,
                    "give the webhook --detect-image: profile \"%s\" asks for detect; static "
                    "values used",
                    mutwarn_s(m, m->p->name, MUTATE_SHOWN_NAME));
    else if (m->detect == MUTATE_DETECT_TAKEN)
        MUTATE_WARN(m, MUTATE_W_DETECT,
                    "rename the pod's %s to detect at run time; static values used",
                    m->detect_taken);
}
