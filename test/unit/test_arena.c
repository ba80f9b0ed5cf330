/*
 * Unit tests for webhook/arena.c: cJSON's nodes come from the arena while a
 * request is open and from malloc otherwise (and while suspended); freeing
 * arena memory is a no-op; a full arena spills to malloc and says so, and
 * then arena_json_delete() really frees the tree. The allocator's own
 * rules: 16-byte alignment, no overlap, a block of its own for an oversized
 * request, and an arena used after its end never hands out the blocks it
 * freed. Under AddressSanitizer the arena
 * is off, and every allocation must come from malloc.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ON 0
#else
#define ARENA_ON 1
#endif

static int in_arena(const struct arena *a, const void *p)
{
    for (size_t i = 0; i < a->n; i++)
        if ((const char *)p >= a->block[i] && (const char *)p < a->block[i] + a->size[i])
            return 1;
    return 0;
}

static int setup(void **state)
{
    (void)state;
    arena_install_cjson_hooks();
    return 0;
}

TEST(test_parsed_tree_lives_in_the_arena)
{
    struct arena a;
    cJSON *j;

    arena_begin(&a);
    j = cJSON_Parse("{\"spec\":{\"containers\":[{\"name\":\"pytorch\"}]}}");
    assert_non_null(j);
    assert_int_equal(in_arena(&a, j), ARENA_ON);
    assert_int_equal(in_arena(&a, j->child->string), ARENA_ON);
    assert_int_equal(a.spilled, 0);
    assert_int_equal(a.n > 0, ARENA_ON);
    arena_json_delete(j);
    arena_end(&a);
}

TEST(test_outside_a_request_cjson_uses_malloc)
{
    struct arena a;
    cJSON *outside = cJSON_CreateString("before");
    cJSON *inside, *suspended;
    struct arena *saved;

    arena_begin(&a);
    /* A block exists, so the checks below could find a pointer in it. */
    inside = cJSON_CreateString("in the request");
    assert_int_equal(in_arena(&a, inside), ARENA_ON);
    saved = arena_suspend();
    suspended = cJSON_CreateString("cached across requests");
    arena_resume(saved);
    assert_false(in_arena(&a, suspended));
    assert_false(in_arena(&a, outside));
    /* malloc'd items freed inside the request really go to free(). */
    cJSON_Delete(outside);
    arena_json_delete(inside);
    arena_end(&a);
    assert_string_equal(suspended->valuestring, "cached across requests");
    cJSON_Delete(suspended);
}

TEST(test_full_arena_spills_and_then_deletes_for_real)
{
    struct arena a;
    cJSON *arr;
    size_t items = 0;

    arena_begin(&a);
    arr = cJSON_CreateArray();
    assert_non_null(arr);
    /* Strings of 60 KiB: one per block, so 64 blocks run out quickly. */
    char *big = malloc(60 * 1024);
    assert_non_null(big);
    memset(big, 'x', 60 * 1024 - 1);
    big[60 * 1024 - 1] = '\0';
    while (a.spilled == 0 && items < 200) {
        assert_true(cJSON_AddItemToArray(arr, cJSON_CreateString(big)));
        items++;
    }
    free(big);
    if (ARENA_ON) {
        assert_int_equal(a.n, ARENA_MAX_BLOCKS);
        assert_true(a.spilled > 0);
    }
    assert_int_equal(cJSON_GetArraySize(arr), (int)items);
    /* Spilled items are malloc'd: this must free them (valgrind and the
     * sanitizers see a leak otherwise). */
    arena_json_delete(arr);
    arena_end(&a);
}

TEST(test_allocations_are_aligned_and_disjoint)
{
    struct arena a;
    unsigned char *p[64];
    size_t size[64];

    arena_begin(&a);
    for (size_t i = 0; i < 64; i++) {
        size[i] = 1 + i * 7 % 50;
        p[i] = cJSON_malloc(size[i]);
        assert_non_null(p[i]);
        assert_int_equal((uintptr_t)p[i] % 16, 0);
        assert_int_equal(in_arena(&a, p[i]), ARENA_ON);
        memset(p[i], (int)i, size[i]);
    }
    /* Had two allocations overlapped, the later fill would show in the
     * earlier one. */
    for (size_t i = 0; i < 64; i++)
        for (size_t j = 0; j < size[i]; j++)
            assert_int_equal(p[i][j], i);
    assert_int_equal(a.spilled, 0);
    for (size_t i = 0; i < 64; i++)
        cJSON_free(p[i]);
    arena_end(&a);
}

TEST(test_oversized_request_gets_a_block_of_its_own)
{
    struct arena a;
    char *small, *big, *after;

    arena_begin(&a);
    small = cJSON_malloc(32);
    big = cJSON_malloc(ARENA_BLOCK + 1);
    after = cJSON_malloc(32);
    assert_non_null(small);
    assert_non_null(big);
    assert_non_null(after);
    memset(big, 'b', ARENA_BLOCK + 1);
    if (ARENA_ON) {
        /* The big block is exactly its rounded size, so it has no room left
         * and the next small request starts a third block. */
        assert_int_equal(a.n, 3);
        assert_ptr_equal(a.block[1], big);
        assert_int_equal(a.size[1], (ARENA_BLOCK + 1 + 15) / 16 * 16);
        assert_ptr_equal(a.block[2], after);
    }
    assert_int_equal(a.spilled, 0);
    cJSON_free(small);
    cJSON_free(big);
    cJSON_free(after);
    arena_end(&a);
}

TEST(test_arena_used_after_its_end_gets_new_memory)
{
    struct arena a;
    char *before, *after;

    arena_begin(&a);
    before = cJSON_malloc(32);
    assert_non_null(before);
    cJSON_free(before);
    arena_end(&a);
    /* A mistake the arena must survive: it is resumed after its end. */
    arena_resume(&a);
    after = cJSON_malloc(32);
    assert_non_null(after);
    assert_int_equal(in_arena(&a, after), ARENA_ON);
    assert_int_equal(a.n, ARENA_ON ? 1 : 0);
    memset(after, 'a', 32); /* in freed memory, ASan and valgrind would say so */
    cJSON_free(after);
    arena_end(&a);
    assert_null(arena_suspend());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parsed_tree_lives_in_the_arena),
        cmocka_unit_test(test_outside_a_request_cjson_uses_malloc),
        cmocka_unit_test(test_full_arena_spills_and_then_deletes_for_real),
        cmocka_unit_test(test_allocations_are_aligned_and_disjoint),
        cmocka_unit_test(test_oversized_request_gets_a_block_of_its_own),
        cmocka_unit_test(test_arena_used_after_its_end_gets_new_memory),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
