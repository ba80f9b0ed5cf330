/*
 * Unit tests for webhook/wire/connguard.c, on socket pairs: the guard holds one
 * end as libmicrohttpd would, the test watches the other for the end of
 * file a cut sends. At the limit the connection waiting longest gives way
 * (never one being served); each phase's deadline cuts the connection,
 * and each cut is counted by its reason.
 */
#include "unit.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wire/connguard.h"
#include "base/err.h"

struct pair {
    int ours, peer; /* ours is what the guard holds */
    struct connguard_conn c;
};

static void pair_open(struct pair *p, struct connguard_list *l)
{
    int sv[2];

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    p->ours = sv[0];
    p->peer = sv[1];
    connguard_open(l, &p->c, p->ours);
}

static void pair_close(struct pair *p)
{
    connguard_close(&p->c);
    close(p->ours);
    close(p->peer);
}

/* Whether the peer sees the connection end within ms. */
static int pair_cut_within(struct pair *p, int ms)
{
    struct pollfd pfd = {.fd = p->peer, .events = POLLIN};
    char c;

    if (poll(&pfd, 1, ms) != 1)
        return 0;
    return recv(p->peer, &c, 1, MSG_DONTWAIT) == 0;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static const struct connguard_limits no_deadlines = {0, 0, 0, 10};

TEST(test_admit_below_the_limit_cuts_nothing)
{
    struct connguard *g;
    struct connguard_list *l;
    struct pair a;

    assert_int_equal(connguard_init(&g, &no_deadlines), 0);
    l = connguard_add_list(g, 2);
    assert_non_null(l);
    pair_open(&a, l);
    assert_int_equal(connguard_admit(l), 1);
    assert_false(pair_cut_within(&a, 0));
    assert_int_equal(connguard_open_count(g), 1);
    pair_close(&a);
    assert_int_equal(connguard_open_count(g), 0);
    connguard_stop(&g);
}

TEST(test_at_the_limit_the_longest_waiting_gives_way)
{
    struct connguard *g;
    struct connguard_list *l;
    struct pair a, b, c;

    assert_int_equal(connguard_init(&g, &no_deadlines), 0);
    l = connguard_add_list(g, 2);
    pair_open(&a, l);
    pause_ms(2);
    pair_open(&b, l);
    assert_int_equal(connguard_admit(l), 1);
    assert_true(pair_cut_within(&a, 0));
    assert_false(pair_cut_within(&b, 0));
    assert_int_equal(connguard_cuts(g, CONNGUARD_DISPLACED), 1);
    assert_int_equal(connguard_open_count(g), 1);
    /* The cut one is not counted again when libmicrohttpd closes it. */
    pair_close(&a);
    assert_int_equal(connguard_open_count(g), 1);
    pair_open(&c, l);
    assert_int_equal(connguard_open_count(g), 2);
    pair_close(&b);
    pair_close(&c);
    connguard_stop(&g);
}

/* A response resets the wait: the connection idle since longest goes. */
TEST(test_waiting_counts_from_the_phase_start)
{
    struct connguard *g;
    struct connguard_list *l;
    struct pair a, b;

    assert_int_equal(connguard_init(&g, &no_deadlines), 0);
    l = connguard_add_list(g, 2);
    pair_open(&a, l);
    pause_ms(2);
    pair_open(&b, l);
    pause_ms(2);
    connguard_headers_in(&a.c);
    connguard_request_in(&a.c);
    connguard_response_out(&a.c); /* a waits again, from now */
    assert_int_equal(connguard_admit(l), 1);
    assert_true(pair_cut_within(&b, 0));
    assert_false(pair_cut_within(&a, 0));
    pair_close(&a);
    pair_close(&b);
    connguard_stop(&g);
}

TEST(test_connections_being_served_never_give_way)
{
    struct connguard *g;
    struct connguard_list *l;
    struct pair a, b;

    assert_int_equal(connguard_init(&g, &no_deadlines), 0);
    l = connguard_add_list(g, 2);
    pair_open(&a, l);
    pair_open(&b, l);
    connguard_headers_in(&a.c);
    connguard_request_in(&a.c);
    connguard_headers_in(&b.c);
    connguard_request_in(&b.c);
    assert_int_equal(connguard_admit(l), 0);
    assert_int_equal(connguard_refused(g), 1);
    assert_false(pair_cut_within(&a, 0));
    assert_false(pair_cut_within(&b, 0));
    /* One receiving its body may give way. */
    connguard_response_out(&b.c);
    connguard_headers_in(&b.c);
    assert_int_equal(connguard_admit(l), 1);
    assert_true(pair_cut_within(&b, 0));
    pair_close(&a);
    pair_close(&b);
    connguard_stop(&g);
}

/* Lists are apart: a full list displaces only its own connections. */
TEST(test_each_list_has_its_own_limit)
{
    struct connguard *g;
    struct connguard_list *l1, *l2;
    struct pair a, b;

    assert_int_equal(connguard_init(&g, &no_deadlines), 0);
    l1 = connguard_add_list(g, 1);
    l2 = connguard_add_list(g, 1);
    pair_open(&a, l1);
    pair_open(&b, l2);
    assert_int_equal(connguard_admit(l2), 1);
    assert_true(pair_cut_within(&b, 0));
    assert_false(pair_cut_within(&a, 0));
    pair_close(&a);
    pair_close(&b);
    connguard_stop(&g);
}

TEST(test_lists_run_out)
{
    struct connguard *g;

    assert_int_equal(connguard_init(&g, &no_deadlines), 0);
    for (int i = 0; i < CONNGUARD_MAX_LISTS; i++)
        assert_non_null(connguard_add_list(g, 1));
    assert_null(connguard_add_list(g, 1));
    connguard_stop(&g);
}

/* Each phase's deadline, checked every 10 ms: the headers (from the open),
 * the body (from the headers), the next request (from the response). A
 * connection being served is left alone. Wide margins: a loaded machine
 * may hold a thread up for tens of milliseconds. */
TEST(test_deadlines_cut_each_phase)
{
    const struct connguard_limits lim = {
        .header_ms = 300, .body_ms = 450, .idle_ms = 600, .tick_ms = 10};
    struct connguard *g;
    struct connguard_list *l;
    struct pair headers, body, idle, served;

    assert_int_equal(connguard_init(&g, &lim), 0);
    l = connguard_add_list(g, 8);
    assert_int_equal(connguard_start(g), 0);
    pair_open(&headers, l);
    pair_open(&body, l);
    pair_open(&idle, l);
    pair_open(&served, l);
    connguard_headers_in(&body.c);
    connguard_headers_in(&idle.c);
    connguard_request_in(&idle.c);
    connguard_response_out(&idle.c);
    connguard_headers_in(&served.c);
    connguard_request_in(&served.c);
    assert_false(pair_cut_within(&headers, 150));
    assert_true(pair_cut_within(&headers, 2000));
    assert_false(pair_cut_within(&idle, 0));
    assert_true(pair_cut_within(&body, 2000));
    assert_true(pair_cut_within(&idle, 2000));
    assert_false(pair_cut_within(&served, 300));
    assert_int_equal(connguard_cuts(g, CONNGUARD_HEADER_TIMEOUT), 2);
    assert_int_equal(connguard_cuts(g, CONNGUARD_BODY_TIMEOUT), 1);
    assert_int_equal(connguard_open_count(g), 1);
    pair_close(&headers);
    pair_close(&body);
    pair_close(&idle);
    pair_close(&served);
    connguard_stop(&g);
}

/* NULL is a connection that is not tracked (no memory for it). */
TEST(test_phase_changes_take_null)
{
    connguard_headers_in(NULL);
    connguard_request_in(NULL);
    connguard_response_out(NULL);
}

/* The lifecycle convention: stop undoes init whatever happened between, is
 * a no-op on NULL, and leaves NULL behind, so a second stop is harmless. */
TEST(test_stop_is_safe_after_init_without_start_and_twice)
{
    const struct connguard_limits lim = {0};
    struct connguard *g = NULL;

    connguard_stop(&g);
    assert_null(g);
    assert_int_equal(connguard_init(&g, &lim), ERR_OK);
    assert_non_null(g);
    assert_non_null(connguard_add_list(g, 1));
    connguard_stop(&g);
    assert_null(g);
    connguard_stop(&g);
    assert_int_equal(connguard_init(&g, &lim), ERR_OK);
    assert_int_equal(connguard_start(g), ERR_OK);
    connguard_stop(&g);
    assert_null(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admit_below_the_limit_cuts_nothing),
        cmocka_unit_test(test_at_the_limit_the_longest_waiting_gives_way),
        cmocka_unit_test(test_waiting_counts_from_the_phase_start),
        cmocka_unit_test(test_connections_being_served_never_give_way),
        cmocka_unit_test(test_each_list_has_its_own_limit),
        cmocka_unit_test(test_lists_run_out),
        cmocka_unit_test(test_deadlines_cut_each_phase),
        cmocka_unit_test(test_phase_changes_take_null),
        cmocka_unit_test(test_stop_is_safe_after_init_without_start_and_twice),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
