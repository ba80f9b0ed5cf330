#include "unit.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire/certs.h"
#include "cmd/cmd.h"
#include "base/dynbuf.h"
#include "base/err.h"
#include "host/fsutil.h"
#include "admission/profiles.h"
#include "admission/select.h"
#include "host/store.h"

#define DOMAIN_LEN 253 /* DNS-1123 subdomain */
#define NAME_LEN   63  /* the part after the '/' */

#if defined(__SANITIZE_ADDRESS__)
#define SUPPORT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SUPPORT_ASAN 1
#endif
#endif

/* Room left for the child's stack and libc between the limit and the use. */
#define SUPPORT_OOM_SLACK (256u << 10)

struct profiles *load_shipped_profiles(void)
{
    struct dynbuf text, errors;
    struct profiles *ps = NULL;
    char err[ERR_LEN];

    /* The binary's own limit and reader: a cut file would fail with a
     * misleading parse error, and a test would read what serve does not. */
    dynbuf_init(&text, STORE_TEXT_MAX);
    dynbuf_init(&errors, 1 << 16);
    if (fsutil_read(SHIPPED_PROFILES, &text, err, sizeof(err))) {
        fprintf(stderr, "%s (run the tests from the repository root)\n", err);
        goto out;
    }
    ps = profiles_parse(dynbuf_ptr(&text), dynbuf_len(&text), &errors);
    if (!ps) /* errors ends with a newline: one line per problem */
        fprintf(stderr, "%s rejected:\n%s", SHIPPED_PROFILES, dynbuf_ptr(&errors));
out:
    dynbuf_free(&text);
    dynbuf_free(&errors);
    return ps;
}

struct profiles *support_shipped;

int support_shipped_setup(void **state)
{
    (void)state;
    support_shipped = load_shipped_profiles();
    return support_shipped ? 0 : -1;
}

int support_shipped_teardown(void **state)
{
    (void)state;
    profiles_free(support_shipped);
    support_shipped = NULL;
    return 0;
}

char *longest_resource_name(char *out, size_t outlen)
{
    assert_true(outlen > DOMAIN_LEN + 1 + NAME_LEN);
    memset(out, 'd', DOMAIN_LEN);
    out[DOMAIN_LEN] = '/';
    memset(out + DOMAIN_LEN + 1, 'n', NAME_LEN);
    out[DOMAIN_LEN + 1 + NAME_LEN] = '\0';
    return out;
}

/* Bytes of address space the process maps now (the first field of statm). */
static size_t support_mapped(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;

    if (f) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Takes every block malloc will still give, largest sizes first. The blocks
 * are chained through their first word, so the compiler cannot drop the
 * calls, and never freed (the child exits). Bounded: the limit leaves little
 * room. */
static void support_fill_heap(void)
{
    static const size_t sizes[] = {1u << 16, 1u << 12, 1u << 8, 16};
    void *volatile chain = NULL;

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (int n = 0; n < (1 << 20); n++) {
            void **p = malloc(sizes[i]);

            if (!p)
                break;
            *p = chain;
            chain = p;
        }
    }
}

int run_out_of_memory(int (*fn)(void *arg), void *arg)
{
    pid_t pid;
    int status;

#ifdef SUPPORT_ASAN
    (void)fn;
    (void)arg;
    skip();
#endif
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit lim;

        lim.rlim_cur = lim.rlim_max = support_mapped() + SUPPORT_OOM_SLACK;
        if (setrlimit(RLIMIT_AS, &lim) != 0)
            _exit(254);
        support_fill_heap();
        _exit(fn(arg) & 0xff);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void support_assert_starved(int (*fn)(void *arg), void *arg, const char *doing,
                            const char *const *why)
{
    int rc = run_out_of_memory(fn, arg), n = 0;

    if (rc == 0)
        return;
    while (why[n])
        n++;
    if (rc > 0 && rc <= n)
        fail_msg("%s: %s", doing, why[rc - 1]);
    fail_msg("%s: the child's result %d", doing, rc);
}

char *support_log_text(FILE *f)
{
    static char buf[65536];
    size_t n;

    fflush(f);
    rewind(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fseek(f, 0, SEEK_END);
    return buf;
}

char *support_unquote(const char *in)
{
    size_t n = strlen(in);
    char *out = malloc(n + 1);

    assert_non_null(out);
    for (size_t i = 0; i <= n; i++)
        out[i] = in[i] == '\'' ? '"' : in[i];
    return out;
}

cJSON *support_json_parse(const char *text)
{
    char *json = support_unquote(text);
    cJSON *j = cJSON_Parse(json);

    free(json);
    return j;
}

struct profiles *support_profiles_parse(const char *text, struct dynbuf *errors)
{
    char *json = support_unquote(text);
    struct profiles *ps = profiles_parse(json, strlen(json), errors);

    free(json);
    return ps;
}

struct profiles *support_profiles(const char *text)
{
    struct dynbuf errors;
    struct profiles *ps;

    dynbuf_init(&errors, 1 << 16);
    ps = support_profiles_parse(text, &errors);
    if (!ps)
        fail_msg("test profiles rejected: %s", dynbuf_ptr(&errors));
    dynbuf_free(&errors);
    return ps;
}

const char *support_profiles_rejected(const char *text)
{
    static struct dynbuf errors; /* kept: the result points into it */
    static int ready;
    struct profiles *ps;

    if (!ready) {
        dynbuf_init(&errors, 1 << 16);
        ready = 1;
    }
    dynbuf_reset(&errors);
    ps = support_profiles_parse(text, &errors);
    if (ps) {
        profiles_free(ps);
        fail_msg("profiles should have been rejected: %s", text);
    }
    assert_true(dynbuf_len(&errors) > 0);
    return dynbuf_ptr(&errors);
}

void support_assert_selects(const struct select_result *r, const char *name, enum select_rule rule)
{
    if (!r->profile)
        fail_msg("no profile selected (rule %s), want %s", select_rule_name(r->rule), name);
    assert_string_equal(r->profile->name, name);
    if (r->rule != rule)
        fail_msg("selected %s by rule %s, want rule %s", name, select_rule_name(r->rule),
                 select_rule_name(rule));
}

const char *support_fd_text(int fd)
{
    static char buf[1 << 20];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

    assert_true(n >= 0);
    buf[n] = '\0';
    return buf;
}

size_t support_count(const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

void support_gen_certs(const char *dir)
{
    struct certs_gen_opts o = {.out_dir = dir};
    char err[ERR_LEN];

    if (certs_generate(&o, err, sizeof err) != 0)
        fail_msg("certs_generate: %s", err);
}

void support_two_cert_sets(char *root, size_t rootlen, const char *name)
{
    char dir[128];

    assert_true(rootlen >= 64);
    assert_true((size_t)snprintf(root, rootlen, "/tmp/%s.XXXXXX", name) < rootlen);
    assert_non_null(mkdtemp(root));
    assert_true((size_t)snprintf(dir, sizeof dir, "%s/a", root) < sizeof dir);
    support_gen_certs(dir);
    snprintf(dir, sizeof dir, "%s/b", root);
    support_gen_certs(dir);
}

void support_remove_tree(const char *dir)
{
    char cmd[4200];

    assert_true((size_t)snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) < sizeof cmd);
    assert_int_equal(system(cmd), 0);
}

void support_copy_file(const char *from, const char *to)
{
    char buf[8192];
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    size_t n;

    assert_non_null(in);
    assert_non_null(out);
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}
