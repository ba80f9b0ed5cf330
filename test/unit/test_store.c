/*
 * Unit tests for webhook/host/store.c, with fake sources behind store_reload():
 * a valid version is published with the next generation; an invalid one is
 * logged one problem a line (a long problem cut between two UTF-8
 * characters), counted, and the previous version keeps serving; a source
 * that cannot be read is logged and not counted; a replaced snapshot lives
 * until its last reader releases it (ASan sees a use after free, LSan one
 * never freed); reloads racing on two threads publish in the order they
 * read, so the newest version read is the one left serving; and concurrent
 * publishes log each generation once, in order (store_swap used to read the
 * new snapshot for its log line after another publish could free it).
 * Staleness: a refused version (invalid, without its key, unreadable) while
 * one serves, a source gone, and a fallback make the store stale; the next
 * version from the source clears it; a fallback keeps its own loaded_at.
 */
#include "unit.h"
#include "support.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "host/log.h"
#include "admission/profiles.h"
#include "host/store.h"
#include "base/utf8.h"

/* A store whose log goes to a temporary file, read back by logged(). */
struct fixture {
    struct log lg;
    struct store *s;
    char path[64];
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));

    if (!fx)
        return -1;
    snprintf(fx->path, sizeof(fx->path), "/tmp/test_store.XXXXXX");
    fx->lg.fd = mkstemp(fx->path);
    fx->lg.min = LOG_DEBUG;
    if (fx->lg.fd < 0 || store_init(&fx->s, &fx->lg, NULL, 0) != ERR_OK)
        return -1;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    store_stop(&fx->s);
    store_stop(&fx->s); /* a no-op the second time */
    close(fx->lg.fd);
    unlink(fx->path);
    free(fx);
    return 0;
}

/* Everything logged so far. */
static const char *logged(struct fixture *fx)
{
    return support_fd_text(fx->lg.fd);
}

static int publish(struct fixture *fx, const char *text)
{
    return store_publish(fx->s, text, strlen(text), "test");
}

/* Profiles with one profile named name. */
static void one_profile(char *out, size_t outlen, const char *name)
{
    snprintf(out, outlen, "{\"profiles\":[{\"name\":\"%s\"}]}", name);
}

static const char *current_name(struct fixture *fx)
{
    static char name[64];
    struct store_snapshot *snap = store_acquire(fx->s);

    assert_non_null(snap);
    snprintf(name, sizeof(name), "%s", snap->ps->p[0].name);
    store_release(snap);
    return name;
}

TEST(test_nothing_before_the_first_version)
{
    struct fixture *fx = *state;

    assert_null(store_acquire(fx->s));
    assert_false(store_ready(fx->s));
    assert_int_equal(store_loaded(fx->s), 0);
    store_release(NULL);
}

TEST(test_valid_version_bumps_the_generation)
{
    struct fixture *fx = *state;
    struct store_snapshot *snap;
    char text[128];

    one_profile(text, sizeof(text), "a");
    assert_int_equal(publish(fx, text), ERR_OK);
    assert_true(store_ready(fx->s));
    assert_int_equal(store_loaded(fx->s), 1);
    one_profile(text, sizeof(text), "b");
    assert_int_equal(publish(fx, text), ERR_OK);
    assert_int_equal(store_loaded(fx->s), 2);
    snap = store_acquire(fx->s);
    assert_int_equal(snap->generation, 2);
    assert_string_equal(snap->ps->p[0].name, "b");
    store_release(snap);
    assert_contains(logged(fx), "\"msg\":\"profiles loaded\",\"source\":\"test\",\"generation\":2");
    assert_int_equal(store_rejected(fx->s), 0);
}

TEST(test_invalid_version_keeps_the_previous_and_is_counted)
{
    struct fixture *fx = *state;
    char text[128];

    one_profile(text, sizeof(text), "a");
    assert_int_equal(publish(fx, text), ERR_OK);
    assert_int_equal(publish(fx, "{\"profiles\": [{\"name\": "), ERR_FAIL);
    assert_int_equal(publish(fx, "{\"zz\":1,\"profiles\":[{\"name\":\"p\"}]}"), ERR_FAIL);
    assert_int_equal(store_rejected(fx->s), 2);
    assert_int_equal(store_loaded(fx->s), 1);
    assert_true(store_ready(fx->s));
    assert_string_equal(current_name(fx), "a");
    assert_int_equal(support_count(logged(fx), "\"profiles rejected; the previous version keeps"),
                     2);
    store_reject(fx->s, "configmap ns/cm", "the ConfigMap has no key \"profiles.json\"");
    assert_int_equal(store_rejected(fx->s), 3);
    assert_contains(logged(fx), "no key \\\"profiles.json\\\"");
}

/* A key of 'a' then 300 'é' makes an "unknown field" problem longer than the
 * 511 bytes a log line keeps, with the cut at an odd offset inside an 'é'. */
TEST(test_long_problem_is_cut_between_characters)
{
    struct fixture *fx = *state;
    char text[1024];
    size_t n = 0;
    const char *log, *problem;

    n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"a");
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "\xc3\xa9");
    snprintf(text + n, sizeof(text) - n, "\":1,\"profiles\":[{\"name\":\"p\"}]}");
    assert_int_equal(publish(fx, text), ERR_FAIL);
    log = logged(fx);
    if (!utf8_valid(log, strlen(log)))
        fail_msg("the log is not valid UTF-8:\n%s", log);
    problem = strstr(log, "unknown field");
    assert_non_null(problem);
    /* Cut, not dropped: most of the key is there. */
    assert_true(strlen(problem) > 400);
}

TEST(test_short_problem_is_whole)
{
    struct fixture *fx = *state;

    assert_int_equal(publish(fx, "{\"zz\":1,\"profiles\":[{\"name\":\"p\"}]}"), ERR_FAIL);
    assert_contains(logged(fx), "unknown field \\\"zz\\\"\"");
}

static int read_fails(void *ctx, struct dynbuf *text, char *err, size_t errlen)
{
    (void)ctx, (void)text;
    return err_set(err, errlen, ERR_FAIL, "cannot open fake: gone");
}

/* A source that cannot be read is no version: logged, not counted. */
TEST(test_unreadable_source_is_logged_not_counted)
{
    struct fixture *fx = *state;
    struct store_source src = {.origin = "fake", .read = read_fails};
    char text[128];

    one_profile(text, sizeof(text), "a");
    assert_int_equal(publish(fx, text), ERR_OK);
    assert_int_equal(store_reload(fx->s, &src), ERR_FAIL);
    assert_int_equal(store_rejected(fx->s), 0);
    assert_string_equal(current_name(fx), "a");
    assert_contains(logged(fx), "\"cannot read profiles; the previous version keeps serving\","
                                "\"source\":\"fake\",\"error\":\"cannot open fake: gone\"");
}

/* Before the first valid version nothing serves, and the log does not
 * claim that something does. */
TEST(test_rejected_first_version_says_none_serves)
{
    struct fixture *fx = *state;
    struct store_source src = {.origin = "fake", .read = read_fails};

    assert_int_equal(publish(fx, "{\"profiles\": [{\"name\": "), ERR_FAIL);
    assert_int_equal(store_reload(fx->s, &src), ERR_FAIL);
    store_reject(fx->s, "configmap ns/cm", "the ConfigMap has no key \"profiles.json\"");
    assert_false(store_ready(fx->s));
    assert_int_equal(support_count(logged(fx), "keeps serving"), 0);
    assert_int_equal(support_count(logged(fx), "\"profiles rejected; " STORE_NONE_YET "\""), 2);
    assert_int_equal(support_count(logged(fx), "\"cannot read profiles; " STORE_NONE_YET "\""), 1);
}

/* A source that tries a last good copy next: its refusal before any version
 * serves is a warning that says so, not the error that /mutate answers 503
 * (which the fallback logs, if it finds no copy); once a version serves,
 * as ever. */
TEST(test_rejected_first_version_with_a_fallback_does_not_say_503)
{
    struct fixture *fx = *state;
    char text[256];

    store_set_fallback(fx->s, 1);
    assert_int_equal(publish(fx, "{\"profiles\": [{\"name\": "), ERR_FAIL);
    store_reject(fx->s, "configmap ns/cm", "the ConfigMap has no key \"profiles.json\"");
    assert_int_equal(support_count(logged(fx), "503"), 0);
    assert_int_equal(
        support_count(logged(fx),
                      "\"level\":\"warn\",\"msg\":\"profiles rejected; " STORE_FALLBACK_NEXT "\""),
        2);
    assert_int_equal(support_count(logged(fx), "\"level\":\"error\",\"msg\":\"profiles problem\""),
                     2);
    one_profile(text, sizeof(text), "a");
    assert_int_equal(publish(fx, text), ERR_OK);
    assert_int_equal(publish(fx, "{\"profiles\": [{\"name\": "), ERR_FAIL);
    assert_int_equal(support_count(logged(fx),
                                   "\"level\":\"error\",\"msg\":\"profiles rejected; the "
                                   "previous version keeps serving\""),
                     1);
    store_set_fallback(fx->s, 0);
}

TEST(test_file_source)
{
    struct fixture *fx = *state;
    char path[96], text[128];
    struct store_source src;
    FILE *f;

    snprintf(path, sizeof(path), "%s.json", fx->path);
    src = store_source_file(path);
    assert_string_equal(src.origin, path);
    assert_int_equal(store_reload(fx->s, &src), ERR_FAIL); /* no such file yet */
    assert_contains(logged(fx), "cannot read profiles");
    one_profile(text, sizeof(text), "from-file");
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(store_reload(fx->s, &src), ERR_OK);
    assert_string_equal(current_name(fx), "from-file");
    unlink(path);
}

/* The reader's snapshot stays whole after two newer ones are published
 * (ASan: a use after free if freed early), and is freed at its release
 * (LSan: a leak if never). */
TEST(test_replaced_snapshot_lives_until_its_last_release)
{
    struct fixture *fx = *state;
    struct store_snapshot *old, *again;
    char text[128];

    one_profile(text, sizeof(text), "old");
    assert_int_equal(publish(fx, text), ERR_OK);
    old = store_acquire(fx->s);
    again = store_acquire(fx->s);
    assert_ptr_equal(old, again);
    one_profile(text, sizeof(text), "new");
    assert_int_equal(publish(fx, text), ERR_OK);
    one_profile(text, sizeof(text), "newer");
    assert_int_equal(publish(fx, text), ERR_OK);
    store_release(again);
    assert_string_equal(old->ps->p[0].name, "old");
    assert_int_equal(old->generation, 1);
    store_release(old); /* the last reference: freed here */
    assert_string_equal(current_name(fx), "newer");
}

/* A source whose every read is a newer version: profile "vN" for the Nth
 * read. The pause between taking the number and returning the text is
 * where an unserialised reload lets another read, and publish, overtake. */
struct versions {
    struct fixture *fx;
    atomic_uint next;
    atomic_int stop;
    atomic_int out_of_order; /* snapshots whose generation is not their version */
    int reloads_each;
};

static int read_next_version(void *ctx, struct dynbuf *text, char *err, size_t errlen)
{
    struct versions *v = ctx;
    unsigned n = atomic_fetch_add(&v->next, 1) + 1;
    struct timespec pause = {0, 20 * 1000}; /* widens the window; asserts nothing */

    nanosleep(&pause, NULL);
    if (dynbuf_printf(text, "{\"profiles\":[{\"name\":\"v%u\"}]}", n) != ERR_OK)
        return err_set(err, errlen, ERR_NOMEM, "out of memory");
    return ERR_OK;
}

static void *reloader(void *arg)
{
    struct versions *v = arg;
    struct store_source src = {.origin = "versions", .read = read_next_version, .ctx = v};

    for (int i = 0; i < v->reloads_each; i++)
        store_reload(v->fx->s, &src);
    return NULL;
}

/* Readers see generation N carry version N: every read was published, in
 * the order read. */
static void *checker(void *arg)
{
    struct versions *v = arg;
    char want[32];

    while (!atomic_load(&v->stop)) {
        struct store_snapshot *snap = store_acquire(v->fx->s);

        if (!snap)
            continue;
        snprintf(want, sizeof(want), "v%lu", snap->generation);
        if (strcmp(snap->ps->p[0].name, want) != 0)
            atomic_fetch_add(&v->out_of_order, 1);
        store_release(snap);
    }
    return NULL;
}

TEST(test_racing_reloads_leave_the_newest_serving)
{
    struct fixture *fx = *state;
    struct versions v = {.fx = fx, .reloads_each = 300};
    pthread_t t[3];
    char want[32];

    atomic_init(&v.next, 0);
    atomic_init(&v.stop, 0);
    atomic_init(&v.out_of_order, 0);
    assert_int_equal(pthread_create(&t[0], NULL, checker, &v), 0);
    assert_int_equal(pthread_create(&t[1], NULL, reloader, &v), 0);
    assert_int_equal(pthread_create(&t[2], NULL, reloader, &v), 0);
    assert_int_equal(pthread_join(t[1], NULL), 0);
    assert_int_equal(pthread_join(t[2], NULL), 0);
    atomic_store(&v.stop, 1);
    assert_int_equal(pthread_join(t[0], NULL), 0);
    assert_int_equal(atomic_load(&v.out_of_order), 0);
    assert_int_equal(store_loaded(fx->s), 2 * v.reloads_each);
    snprintf(want, sizeof(want), "v%u", atomic_load(&v.next));
    assert_string_equal(current_name(fx), want);
}

/* Two publishers and a reader at once, as SIGHUP and the file watcher were
 * when store_swap read the new snapshot for its log line after the lock:
 * under ASan a use after free; here, each generation is logged exactly
 * once, in order, with the right count of profiles. */
struct publisher {
    struct fixture *fx;
    int n;
    atomic_int stop;
};

static void *acquirer(void *arg)
{
    struct publisher *p = arg;

    while (!atomic_load(&p->stop))
        store_release(store_acquire(p->fx->s));
    return NULL;
}

static void *publisher_main(void *arg)
{
    static const char two[] = "{\"profiles\":[{\"name\":\"a\"},{\"name\":\"b\"}]}";
    struct publisher *p = arg;

    for (int i = 0; i < p->n; i++)
        store_publish(p->fx->s, two, sizeof(two) - 1, "race");
    return NULL;
}

TEST(test_concurrent_publishes_log_each_generation_once)
{
    struct fixture *fx = *state;
    struct publisher p = {.fx = fx, .n = 200};
    pthread_t t[3];
    const char *log, *at;
    char line[128];

    atomic_init(&p.stop, 0);
    assert_int_equal(pthread_create(&t[0], NULL, publisher_main, &p), 0);
    assert_int_equal(pthread_create(&t[1], NULL, publisher_main, &p), 0);
    assert_int_equal(pthread_create(&t[2], NULL, acquirer, &p), 0);
    assert_int_equal(pthread_join(t[0], NULL), 0);
    assert_int_equal(pthread_join(t[1], NULL), 0);
    atomic_store(&p.stop, 1);
    assert_int_equal(pthread_join(t[2], NULL), 0);
    assert_int_equal(store_loaded(fx->s), 2 * p.n);
    log = logged(fx);
    assert_int_equal(support_count(log, "\"profiles loaded\""), 2 * p.n);
    at = log;
    for (int g = 1; g <= 2 * p.n; g++) {
        snprintf(line, sizeof(line), "\"source\":\"race\",\"generation\":%d,\"profiles\":2}", g);
        at = strstr(at, line);
        if (!at)
            fail_msg("generation %d is not logged after generation %d", g, g - 1);
    }
}

static int fail_read(void *ctx, struct dynbuf *text, char *err, size_t errlen)
{
    (void)ctx, (void)text;
    return err_set(err, errlen, ERR_FAIL, "no such file");
}

TEST(test_stale_after_a_refusal_until_the_next_version)
{
    struct fixture *fx = *state;
    struct store_source bad = {.origin = "gone", .read = fail_read};
    struct store_snapshot *snap;
    long long before = (long long)time(NULL);
    char text[128];

    /* Nothing serving: a refusal is not staleness. */
    assert_int_equal(publish(fx, "{"), ERR_FAIL);
    store_set_stale(fx->s);
    assert_false(store_stale(fx->s));
    one_profile(text, sizeof(text), "a");
    assert_int_equal(publish(fx, text), ERR_OK);
    snap = store_acquire(fx->s);
    assert_true(snap->loaded_at >= before && snap->loaded_at <= (long long)time(NULL));
    store_release(snap);
    assert_false(store_stale(fx->s));
    assert_int_equal(publish(fx, "{"), ERR_FAIL);
    assert_true(store_stale(fx->s));
    assert_int_equal(publish(fx, text), ERR_OK);
    assert_false(store_stale(fx->s));
    store_reject(fx->s, "cm", "no key");
    assert_true(store_stale(fx->s));
    assert_int_equal(publish(fx, text), ERR_OK);
    assert_int_equal(store_reload(fx->s, &bad), ERR_FAIL);
    assert_true(store_stale(fx->s));
    assert_int_equal(publish(fx, text), ERR_OK);
    store_set_stale(fx->s);
    assert_true(store_stale(fx->s));
    assert_int_equal(publish(fx, text), ERR_OK);
    assert_false(store_stale(fx->s));
}

TEST(test_fallback_serves_stale_with_its_own_time)
{
    struct fixture *fx = *state;
    struct store_snapshot *snap;
    char text[128];

    /* An invalid copy: refused, not ready, not stale. */
    assert_int_equal(store_publish_fallback(fx->s, "{", 1, "copy", 1000), ERR_FAIL);
    assert_false(store_ready(fx->s));
    assert_false(store_stale(fx->s));
    assert_int_equal(store_rejected(fx->s), 1);
    one_profile(text, sizeof(text), "old");
    assert_int_equal(store_publish_fallback(fx->s, text, strlen(text), "copy", 1764618848), ERR_OK);
    assert_true(store_ready(fx->s));
    assert_true(store_stale(fx->s));
    snap = store_acquire(fx->s);
    assert_int_equal(snap->loaded_at, 1764618848);
    assert_int_equal(snap->generation, 1);
    store_release(snap);
    assert_contains(logged(fx),
                    "\"level\":\"error\",\"msg\":\"profiles loaded from the last good copy");
    one_profile(text, sizeof(text), "new");
    assert_int_equal(publish(fx, text), ERR_OK);
    assert_false(store_stale(fx->s));
    assert_string_equal(current_name(fx), "new");
}

int main(void)
{
#define T_(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_nothing_before_the_first_version),
        T_(test_valid_version_bumps_the_generation),
        T_(test_invalid_version_keeps_the_previous_and_is_counted),
        T_(test_long_problem_is_cut_between_characters),
        T_(test_short_problem_is_whole),
        T_(test_unreadable_source_is_logged_not_counted),
        T_(test_rejected_first_version_says_none_serves),
        T_(test_rejected_first_version_with_a_fallback_does_not_say_503),
        T_(test_file_source),
        T_(test_replaced_snapshot_lives_until_its_last_release),
        T_(test_racing_reloads_leave_the_newest_serving),
        T_(test_concurrent_publishes_log_each_generation_once),
        T_(test_stale_after_a_refusal_until_the_next_version),
        T_(test_fallback_serves_stale_with_its_own_time),
    };
#undef T_

    return cmocka_run_group_tests(tests, NULL, NULL);
}
