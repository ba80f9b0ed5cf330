/*
 * Unit tests for webhook/wire/bodybuf.c: memory follows the bytes received (a
 * declared size only caps it), the pool counts what the buffers hold, a body
 * grows only while as much again stays free, too large wins over no room,
 * and every refusal leaves the body and the pool as they were.
 */
#include "unit.h"
#include "support.h"

#include <stdlib.h>
#include <string.h>

#include "wire/bodybuf.h"

static char bytes[1 << 16];

TEST(test_memory_follows_the_bytes_not_the_cap)
{
    struct bodybuf_pool p;
    struct bodybuf b;

    bodybuf_pool_init(&p, 64 << 20);
    bodybuf_init(&b, 8 << 20);
    assert_int_equal(bodybuf_add(&b, &p, "{\"a\":1}", 7), 0);
    assert_int_equal(bodybuf_len(&b), 7);
    assert_string_equal(bodybuf_ptr(&b), "{\"a\":1}");
    assert_true(bodybuf_pool_used(&p) <= 64);
    assert_true(bodybuf_pool_used(&p) >= 7);
    bodybuf_free(&b, &p);
    assert_int_equal(bodybuf_pool_used(&p), 0);
}

TEST(test_pool_counts_what_the_buffer_can_hold)
{
    struct bodybuf_pool p;
    struct bodybuf b;

    bodybuf_pool_init(&p, 64 << 20);
    bodybuf_init(&b, 1 << 20);
    for (size_t sent = 0; sent < 100000; sent += 1000) {
        assert_int_equal(bodybuf_add(&b, &p, bytes, 1000), 0);
        assert_int_equal(bodybuf_pool_used(&p), b.buf.alloc - 1);
    }
    bodybuf_free(&b, &p);
    assert_int_equal(bodybuf_pool_used(&p), 0);
}

/* A declared length is the cap: the last doubling stops at it. */
TEST(test_declared_length_caps_the_last_growth)
{
    struct bodybuf_pool p;
    struct bodybuf b;

    bodybuf_pool_init(&p, 64 << 20);
    bodybuf_init(&b, 5000);
    for (int i = 0; i < 5; i++)
        assert_int_equal(bodybuf_add(&b, &p, bytes, 1000), 0);
    assert_int_equal(bodybuf_pool_used(&p), 5000);
    assert_int_equal(bodybuf_add(&b, &p, "x", 1), ERR_TOO_BIG);
    assert_int_equal(bodybuf_len(&b), 5000);
    bodybuf_free(&b, &p);
}

/* Over the cap is 413 whatever the budget: too big is checked first. */
TEST(test_too_big_wins_over_no_room)
{
    struct bodybuf_pool p;
    struct bodybuf b;

    bodybuf_pool_init(&p, 100);
    bodybuf_init(&b, 1000);
    assert_int_equal(bodybuf_add(&b, &p, bytes, 1001), ERR_TOO_BIG);
    assert_int_equal(atomic_load(&p.refused), 0);
    assert_int_equal(bodybuf_add(&b, &p, bytes, 1000), ERR_BUSY);
    assert_int_equal(atomic_load(&p.refused), 1);
    assert_int_equal(bodybuf_len(&b), 0);
    assert_int_equal(bodybuf_pool_used(&p), 0);
    bodybuf_free(&b, &p);
}

/* Growing to s is refused once the others hold more than limit - 2s; a
 * smaller body still fits beside them. */
TEST(test_a_body_grows_only_while_as_much_again_stays_free)
{
    struct bodybuf_pool p;
    struct bodybuf big1, big2, small;

    bodybuf_pool_init(&p, 10000);
    bodybuf_init(&big1, 3000);
    bodybuf_init(&big2, 3000);
    bodybuf_init(&small, 1000);
    assert_int_equal(bodybuf_add(&big1, &p, bytes, 3000), 0); /* 0 + 2 * 3000 <= 10000 */
    assert_int_equal(bodybuf_pool_used(&p), 3000);
    assert_int_equal(bodybuf_add(&big2, &p, bytes, 1000), 0); /* 3000 + 2 * 1023 */
    /* to 3000: 3000 + 2 * 3000 = 9000 <= 10000 */
    assert_int_equal(bodybuf_add(&big2, &p, bytes, 2000), 0);
    assert_int_equal(bodybuf_pool_used(&p), 6000);
    /* to 1000: 6000 + 2000 <= 10000 */
    assert_int_equal(bodybuf_add(&small, &p, bytes, 1000), 0);
    assert_int_equal(bodybuf_pool_used(&p), 7000);
    bodybuf_free(&small, &p);
    bodybuf_free(&big2, &p);
    bodybuf_free(&big1, &p);
    assert_int_equal(bodybuf_pool_used(&p), 0);
    assert_int_equal(atomic_load(&p.refused), 0);
}

TEST(test_no_room_leaves_body_and_pool_as_they_were)
{
    struct bodybuf_pool p;
    struct bodybuf held, late;

    bodybuf_pool_init(&p, 10000);
    bodybuf_init(&held, 4000);
    bodybuf_init(&late, 4000);
    assert_int_equal(bodybuf_add(&held, &p, bytes, 4000), 0);
    assert_int_equal(bodybuf_add(&late, &p, "abc", 3), 0);
    /* to 4000: 4000 + 2 * 4000 > 10000 */
    assert_int_equal(bodybuf_add(&late, &p, bytes, 3997), ERR_BUSY);
    assert_int_equal(bodybuf_len(&late), 3);
    assert_string_equal(bodybuf_ptr(&late), "abc");
    assert_int_equal(bodybuf_pool_used(&p), 4000 + late.buf.alloc - 1);
    assert_int_equal(atomic_load(&p.refused), 1);
    bodybuf_free(&held, &p);
    /* The room is back. */
    assert_int_equal(bodybuf_add(&late, &p, bytes, 3997), 0);
    bodybuf_free(&late, &p);
    assert_int_equal(bodybuf_pool_used(&p), 0);
}

TEST(test_admit_checks_room_for_the_declared_size)
{
    struct bodybuf_pool p;
    struct bodybuf held;

    bodybuf_pool_init(&p, 10000);
    assert_int_equal(bodybuf_admit(&p, 5000), 0);
    assert_int_equal(bodybuf_admit(&p, 5001), ERR_BUSY);
    assert_int_equal(bodybuf_admit(&p, 0), 0);
    bodybuf_init(&held, 4000);
    assert_int_equal(bodybuf_add(&held, &p, bytes, 4000), 0);
    assert_int_equal(bodybuf_admit(&p, 3000), 0);
    assert_int_equal(bodybuf_admit(&p, 3001), ERR_BUSY);
    assert_int_equal(atomic_load(&p.refused), 2);
    assert_int_equal(bodybuf_pool_used(&p), 4000); /* admit reserves nothing */
    bodybuf_free(&held, &p);
}

TEST(test_free_of_an_empty_body_is_harmless)
{
    struct bodybuf_pool p;
    struct bodybuf b;

    bodybuf_pool_init(&p, 1000);
    bodybuf_init(&b, 0);
    bodybuf_free(&b, &p);
    bodybuf_free(&b, &p);
    assert_int_equal(bodybuf_pool_used(&p), 0);
    assert_string_equal(bodybuf_ptr(&b), "");
}

/* In the starved child: 0 when the add said out of memory and gave its
 * charge back, 1 when it said too big or busy, 2 when it succeeded. */
static int add_starved(void *arg)
{
    struct bodybuf_pool p;
    struct bodybuf b;
    int rc;

    (void)arg;
    bodybuf_pool_init(&p, (size_t)1 << 30);
    bodybuf_init(&b, 64 << 20);
    rc = bodybuf_add(&b, &p, bytes, sizeof(bytes));
    if (rc == 0)
        return 2;
    if (rc != ERR_NOMEM)
        return 1;
    return bodybuf_pool_used(&p) == 0 && bodybuf_len(&b) == 0 ? 0 : 3;
}

TEST(test_out_of_memory_is_not_too_big)
{
    static const char *const why[] = {"reported as too big or busy", "succeeded",
                                      "the charge was kept", NULL};

    support_assert_starved(add_starved, NULL, "adding without memory", why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_follows_the_bytes_not_the_cap),
        cmocka_unit_test(test_pool_counts_what_the_buffer_can_hold),
        cmocka_unit_test(test_declared_length_caps_the_last_growth),
        cmocka_unit_test(test_too_big_wins_over_no_room),
        cmocka_unit_test(test_a_body_grows_only_while_as_much_again_stays_free),
        cmocka_unit_test(test_no_room_leaves_body_and_pool_as_they_were),
        cmocka_unit_test(test_admit_checks_room_for_the_declared_size),
        cmocka_unit_test(test_free_of_an_empty_body_is_harmless),
        cmocka_unit_test(test_out_of_memory_is_not_too_big),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
