#include "admission/podsec.h"

#include "base/err.h"

#include <cjson/cJSON.h>
#include <string.h>

/* Baseline's "default set" (policy/check_capabilities_baseline.go), the
 * capabilities a container runtime grants anyway. */
static const char *const podsec_default_set[] = {
    "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT"};

static const char *const podsec_labels[PODSEC_MODES] = {PODSEC_LABEL_ENFORCE, PODSEC_LABEL_WARN,
                                                        PODSEC_LABEL_AUDIT};

const char *podsec_level_name(enum podsec_level level)
{
    static const char *const names[] = {"privileged", "baseline", "restricted"};

    return level <= PODSEC_RESTRICTED ? names[level] : "restricted";
}

int podsec_level_parse(const char *s, enum podsec_level *level)
{
    for (int l = PODSEC_PRIVILEGED; l <= PODSEC_RESTRICTED; l++)
        if (strcmp(s, podsec_level_name((enum podsec_level)l)) == 0) {
            *level = (enum podsec_level)l;
            return ERR_OK;
        }
    return ERR_FAIL;
}

void podsec_read(const cJSON *labels, const enum podsec_level *defaults, struct podsec_policy *out)
{
    for (int mode = 0; mode < PODSEC_MODES; mode++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(labels, podsec_labels[mode]);
        const char *s = cJSON_GetStringValue(v);

        out->level[mode] = defaults ? defaults[mode] : PODSEC_PRIVILEGED;
        out->invalid[mode] = NULL;
        if (!v)
            continue;
        if (s && podsec_level_parse(s, &out->level[mode]) == 0)
            continue;
        /* Not a level: enforce fails closed, warn and audit fail open. */
        out->invalid[mode] = s ? s : "?";
        out->level[mode] = mode == PODSEC_ENFORCE ? PODSEC_RESTRICTED : PODSEC_PRIVILEGED;
    }
}

int podsec_allows_add(enum podsec_level level, const char *cap)
{
    if (level == PODSEC_PRIVILEGED)
        return 1;
    if (level == PODSEC_RESTRICTED)
        return strcmp(cap, "NET_BIND_SERVICE") == 0;
    for (size_t i = 0; i < sizeof(podsec_default_set) / sizeof(podsec_default_set[0]); i++)
        if (strcmp(cap, podsec_default_set[i]) == 0)
            return 1;
    return 0;
}

static int podsec_listed(const cJSON *list, const char *s)
{
    const cJSON *e;

    if (!s)
        return 0;
    cJSON_ArrayForEach(e, list)
    {
        if (cJSON_IsString(e) && strcmp(e->valuestring, s) == 0)
            return 1;
    }
    return 0;
}

const char *podsec_exempt(const struct podsec_config *c, const char *ns, const char *user,
                          const char *runtime_class)
{
    if (!c)
        return NULL;
    if (podsec_listed(c->namespaces, ns))
        return "namespace";
    if (podsec_listed(c->usernames, user))
        return "user";
    if (podsec_listed(c->runtime_classes, runtime_class))
        return "runtimeClass";
    return NULL;
}
