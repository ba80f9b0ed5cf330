#include "host/podsecconf.h"

#include "host/docs.h"
#include "base/dynbuf.h"
#include "host/fsutil.h"
#include "base/k8sname.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define PODSECCONF_GROUP "pod-security.admission.config.k8s.io/"

static const char *const podsecconf_level_fields[PODSEC_MODES] = {"enforce", "warn", "audit"};

void podsecconf_init(struct podsecconf *c)
{
    memset(c, 0, sizeof(*c));
    for (int mode = 0; mode < PODSEC_MODES; mode++)
        c->cfg.defaults[mode] = PODSEC_PRIVILEGED;
}

void podsecconf_free(struct podsecconf *c)
{
    cJSON_Delete(c->doc);
    cJSON_Delete(c->inner);
    podsecconf_init(c);
}

/* Reads the one document of path into *doc. */
static int podsecconf_read_doc(const char *path, cJSON **doc, char *err, size_t errlen)
{
    struct dynbuf text;
    struct docs d;
    char why[ERR_LEN];
    int rc;

    *doc = NULL;
    dynbuf_init(&text, PODSECCONF_MAX_BYTES);
    docs_init(&d);
    rc = fsutil_read_regular(path, &text, err, errlen);
    if (rc)
        goto out;
    rc = docs_read(&d, dynbuf_ptr(&text), dynbuf_len(&text), NULL, why, sizeof(why));
    if (rc) {
        rc = err_set(err, errlen, rc, "%s: %s", path, why);
        goto out;
    }
    if (d.n != 1 || !cJSON_IsObject(d.v[0])) {
        rc = err_set(err, errlen, ERR_FAIL,
                     "%s: expected one object, a PodSecurityConfiguration or "
                     "an AdmissionConfiguration",
                     path);
        goto out;
    }
    *doc = d.v[0];
    d.v[0] = NULL;
out:
    docs_free(&d);
    dynbuf_free(&text);
    return rc;
}

static int podsecconf_is(const cJSON *doc, const char *kind, const char *api_prefix)
{
    const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "kind"));
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "apiVersion"));

    return k && v && strcmp(k, kind) == 0 && strncmp(v, api_prefix, strlen(api_prefix)) == 0;
}

/* The PodSecurity plugin's entry of an AdmissionConfiguration, or NULL. */
static const cJSON *podsecconf_plugin(const cJSON *admission)
{
    const cJSON *p;

    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(admission, "plugins"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "name"));

        if (name && strcmp(name, "PodSecurity") == 0)
            return p;
    }
    return NULL;
}

/* "v1.N" with N a decimal that fits an int, or "latest" (api.ParseVersion). */
static int podsecconf_version_ok(const char *s)
{
    long long n = 0;

    if (strcmp(s, "latest") == 0)
        return 1;
    if (strncmp(s, "v1.", 3) != 0 || !s[3])
        return 0;
    for (s += 3; *s; s++) {
        if (*s < '0' || *s > '9' || (n = n * 10 + (*s - '0')) > INT_MAX)
            return 0;
    }
    return 1;
}

/* defaults: the three levels, and their versions checked. */
static int podsecconf_defaults(const cJSON *defaults, enum podsec_level *out, const char *file,
                               char *err, size_t errlen)
{
    char vfield[32];

    if (defaults && !cJSON_IsObject(defaults))
        return err_set(err, errlen, ERR_FAIL, "%s: defaults must be an object", file);
    for (int mode = 0; mode < PODSEC_MODES; mode++) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(defaults, podsecconf_level_fields[mode]);
        const cJSON *v;

        out[mode] = PODSEC_PRIVILEGED;
        if (l && !cJSON_IsNull(l) &&
            (!cJSON_IsString(l) ||
             (*l->valuestring && podsec_level_parse(l->valuestring, &out[mode]))))
            return err_set(err, errlen, ERR_FAIL,
                           "%s: defaults.%s must be one of privileged, baseline, restricted", file,
                           podsecconf_level_fields[mode]);
        snprintf(vfield, sizeof(vfield), "%s-version", podsecconf_level_fields[mode]);
        v = cJSON_GetObjectItemCaseSensitive(defaults, vfield);
        if (v && !cJSON_IsNull(v) &&
            (!cJSON_IsString(v) || (*v->valuestring && !podsecconf_version_ok(v->valuestring))))
            return err_set(err, errlen, ERR_FAIL, "%s: defaults.%s must be \"latest\" or \"v1.x\"",
                           file, vfield);
    }
    return ERR_OK;
}

/* One exemptions list: strings, each valid by kind, none twice. *out is the
 * array, or NULL when absent, null or empty. */
static int podsecconf_list(const cJSON *exemptions, const char *field, int (*valid)(const char *),
                           const char *what, const cJSON **out, const char *file, char *err,
                           size_t errlen)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(exemptions, field);
    int i = 0;

    *out = NULL;
    if (!list || cJSON_IsNull(list))
        return ERR_OK;
    if (!cJSON_IsArray(list))
        return err_set(err, errlen, ERR_FAIL, "%s: exemptions.%s must be a list", file, field);
    for (const cJSON *e = list->child; e; e = e->next, i++) {
        if (i == PODSECCONF_MAX_ENTRIES)
            return err_set(err, errlen, ERR_TOO_BIG, "%s: exemptions.%s has more than %d entries",
                           file, field, PODSECCONF_MAX_ENTRIES);
        if (!cJSON_IsString(e) || !valid(e->valuestring))
            return err_set(err, errlen, ERR_FAIL, "%s: exemptions.%s[%d] must be %s", file, field,
                           i, what);
        for (const cJSON *b = list->child; b != e; b = b->next)
            if (strcmp(b->valuestring, e->valuestring) == 0)
                return err_set(err, errlen, ERR_FAIL,
                               "%s: exemptions.%s[%d]: \"%s\" is there twice", file, field, i,
                               e->valuestring);
    }
    *out = list->child ? list : NULL;
    return ERR_OK;
}

static int podsecconf_nonempty(const char *s)
{
    return *s != '\0';
}

/* The PodSecurityConfiguration conf into next (doc, inner are the caller's). */
static int podsecconf_parse(const cJSON *conf, struct podsecconf *next, const char *file, char *err,
                            size_t errlen)
{
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(conf, "exemptions");
    int rc;

    if (!podsecconf_is(conf, "PodSecurityConfiguration", PODSECCONF_GROUP))
        return err_set(err, errlen, ERR_FAIL,
                       "%s: expected kind PodSecurityConfiguration, apiVersion %sv1 (or an "
                       "AdmissionConfiguration with a PodSecurity plugin)",
                       file, PODSECCONF_GROUP);
    rc = podsecconf_defaults(cJSON_GetObjectItemCaseSensitive(conf, "defaults"), next->cfg.defaults,
                             file, err, errlen);
    if (rc)
        return rc;
    if (ex && !cJSON_IsNull(ex) && !cJSON_IsObject(ex))
        return err_set(err, errlen, ERR_FAIL, "%s: exemptions must be an object", file);
    rc = podsecconf_list(ex, "namespaces", k8sname_label, "a namespace name", &next->cfg.namespaces,
                         file, err, errlen);
    if (!rc)
        rc = podsecconf_list(ex, "runtimeClasses", k8sname_subdomain,
                             "a RuntimeClass name (a DNS subdomain)", &next->cfg.runtime_classes,
                             file, err, errlen);
    if (!rc)
        rc = podsecconf_list(ex, "usernames", podsecconf_nonempty, "a non-empty user name",
                             &next->cfg.usernames, file, err, errlen);
    return rc;
}

/* The file an AdmissionConfiguration's plugin names in "path", read into
 * *inner: relative to the AdmissionConfiguration's own directory. */
static int podsecconf_read_path(const char *admission_file, const char *path, cJSON **inner,
                                char *full, size_t fulllen, char *err, size_t errlen)
{
    const char *slash = strrchr(admission_file, '/');
    int n;

    if (path[0] == '/' || !slash)
        n = snprintf(full, fulllen, "%s", path);
    else
        n = snprintf(full, fulllen, "%.*s/%s", (int)(slash - admission_file), admission_file, path);
    if (n < 0 || (size_t)n >= fulllen)
        return err_set(err, errlen, ERR_TOO_BIG, "%s: the PodSecurity plugin's path is too long",
                       admission_file);
    return podsecconf_read_doc(full, inner, err, errlen);
}

int podsecconf_load(struct podsecconf *c, const char *path, char *err, size_t errlen)
{
    struct podsecconf next;
    const cJSON *conf, *plugin, *inline_conf;
    const char *inner_path;
    char full[PATH_MAX];
    const char *file = path;
    int rc;

    podsecconf_init(&next);
    rc = podsecconf_read_doc(path, &next.doc, err, errlen);
    if (rc)
        goto out;
    conf = next.doc;
    if (podsecconf_is(next.doc, "AdmissionConfiguration", "apiserver.config.k8s.io/")) {
        plugin = podsecconf_plugin(next.doc);
        inline_conf = cJSON_GetObjectItemCaseSensitive(plugin, "configuration");
        inner_path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(plugin, "path"));
        if (!plugin || (!inline_conf && !(inner_path && *inner_path))) {
            /* Not configured: the plugin runs with its defaults. */
            goto done;
        }
        if (inline_conf) {
            conf = inline_conf;
        } else if (inner_path && *inner_path) {
            rc = podsecconf_read_path(path, inner_path, &next.inner, full, sizeof(full), err,
                                      errlen);
            if (rc)
                goto out;
            conf = next.inner;
            file = full;
        }
    }
    rc = podsecconf_parse(conf, &next, file, err, errlen);
    if (rc)
        goto out;
done:
    podsecconf_free(c);
    *c = next;
    return ERR_OK;
out:
    podsecconf_free(&next);
    return rc;
}
