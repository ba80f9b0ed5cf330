/*
 * Unit tests for webhook/base/arena.c: cJSON's nodes come from the arena while a
 * request is open and from malloc otherwise (and while suspended); freeing
 * arena memory is a no-op; a full arena spills to malloc and says so, and
 * then arena_json_delete() really frees the tree. The allocator's own
 * rules: 16-byte alignment, no overlap, a block of its own for an oversized
 * request, and an arena used after its end never hands out the blocks it
 * freed. Under AddressSanitizer the arena is on as well, with manual
 * poisoning: an access one byte past an allocation, or to arena memory after
 * arena_end(), must kill the process with ASan's report (checked in a forked
 * child); in the normal build those tests only check that the memory up to
 * the allocation's size is usable.
 */
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/arena.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif
#if UNDER_ASAN
#include <sanitizer/asan_interface.h>
/* arena.c's redzone after each allocation, before rounding to 16. */
#define REDZONE 16u
#else
#define REDZONE 0u
#endif

/* The arena is on in every build. */
#define ARENA_ON 1

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
        assert_int_equal(a.size[1], (ARENA_BLOCK + 1 + REDZONE + 15) / 16 * 16);
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

/* Sizes that end mid-granule, on a granule, on 16 bytes, and one that gets
 * a block of its own (the slow path). */
static const size_t probe_sizes[] = {1, 13, 16, 24, 100, ARENA_BLOCK + 1};

#if UNDER_ASAN
/* Runs bad(arg) in a forked child with its stderr captured into out; returns
 * the child's wait status. The child must be killed by ASan: if bad()
 * returns, it exits 0. */
static int run_in_child(void (*bad)(size_t), size_t arg, char *out, size_t cap)
{
    int fds[2], status;
    size_t len = 0;
    ssize_t r;
    char sink[4096];
    pid_t pid;

    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        close(fds[1]);
        bad(arg);
        _exit(0);
    }
    close(fds[1]);
    while ((r = read(fds[0], len + 1 < cap ? out + len : sink,
                     len + 1 < cap ? cap - 1 - len : sizeof(sink))) > 0)
        if (len + 1 < cap)
            len += (size_t)r;
    out[len] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void assert_killed_by_asan(int status, const char *report, const char *kind)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        fail_msg("the bad access went unnoticed; child's stderr: \"%s\"", report);
    assert_contains(report, "ERROR: AddressSanitizer");
    assert_contains(report, kind);
}

static void write_one_past(size_t size)
{
    struct arena a;
    volatile char *p;

    arena_install_cjson_hooks();
    arena_begin(&a);
    p = cJSON_malloc(size);
    if (p) {
        memset((char *)p, 'x', size); /* all of it is ours: must not trip */
        p[size] = 'x';
    }
    arena_end(&a);
}

static void read_one_past(size_t size)
{
    struct arena a;
    volatile char *p;
    volatile char c;

    arena_install_cjson_hooks();
    arena_begin(&a);
    p = cJSON_malloc(size);
    if (p)
        c = p[size];
    (void)c;
    arena_end(&a);
}

static void write_after_end(size_t size)
{
    struct arena a;
    volatile char *p;

    arena_install_cjson_hooks();
    arena_begin(&a);
    p = cJSON_malloc(size);
    arena_end(&a);
    if (p)
        p[0] = 'x';
}

static void read_tree_after_end(size_t unused)
{
    struct arena a;
    cJSON *j;
    volatile char c;

    (void)unused;
    arena_install_cjson_hooks();
    arena_begin(&a);
    j = cJSON_Parse("{\"spec\":{\"containers\":[{\"name\":\"pytorch\"}]}}");
    arena_end(&a);
    if (j)
        c = j->child->string[0];
    (void)c;
}
#endif

TEST(test_overflow_past_an_allocation_is_caught)
{
    for (size_t i = 0; i < sizeof(probe_sizes) / sizeof(probe_sizes[0]); i++) {
        size_t size = probe_sizes[i];
        struct arena a;
        char *p, *q;

        arena_begin(&a);
        p = cJSON_malloc(size);
        q = cJSON_malloc(16);
        assert_non_null(p);
        assert_non_null(q);
        assert_int_equal(in_arena(&a, p), ARENA_ON);
        memset(p, 'p', size);
        memset(q, 'q', 16);
#if UNDER_ASAN
        /* Exactly size bytes usable, then a redzone before the next
         * allocation, and the unused rest of the block poisoned. */
        assert_null(__asan_region_is_poisoned(p, size));
        assert_true(__asan_address_is_poisoned(p + size));
        assert_true((size_t)(q - p) >= size + REDZONE || !in_arena(&a, q) || a.block[a.n - 1] == q);
        assert_ptr_equal(__asan_region_is_poisoned(p + size, REDZONE), p + size);
        assert_true(__asan_address_is_poisoned(q + 16));
        assert_true(__asan_address_is_poisoned(a.end - 1) || a.next == a.end);

        char report[16384];
        int status = run_in_child(write_one_past, size, report, sizeof(report));
        assert_killed_by_asan(status, report, "use-after-poison");
        assert_contains(report, "WRITE of size 1");
        status = run_in_child(read_one_past, size, report, sizeof(report));
        assert_killed_by_asan(status, report, "use-after-poison");
        assert_contains(report, "READ of size 1");
#endif
        for (size_t j = 0; j < size; j++)
            assert_int_equal(p[j], 'p');
        cJSON_free(p);
        cJSON_free(q);
        arena_end(&a);
    }
}

TEST(test_use_after_arena_end_is_caught)
{
#if UNDER_ASAN
    char report[16384];
    int status;

    for (size_t i = 0; i < sizeof(probe_sizes) / sizeof(probe_sizes[0]); i++) {
        status = run_in_child(write_after_end, probe_sizes[i], report, sizeof(report));
        assert_killed_by_asan(status, report, "heap-use-after-free");
    }
    status = run_in_child(read_tree_after_end, 0, report, sizeof(report));
    assert_killed_by_asan(status, report, "heap-use-after-free");
#else
    struct arena a;
    char *p;

    arena_begin(&a);
    p = cJSON_malloc(32);
    assert_non_null(p);
    memset(p, 'x', 32);
    assert_int_equal(a.n, 1);
    arena_end(&a);
    /* Everything was given back: nothing left to use. */
    assert_int_equal(a.n, 0);
    assert_null(a.next);
#endif
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
        cmocka_unit_test(test_overflow_past_an_allocation_is_caught),
        cmocka_unit_test(test_use_after_arena_end_is_caught),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
