#include "base/arena.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Under AddressSanitizer the arena runs as in production, with manual
 * poisoning: a block is poisoned when it is made, each allocation is
 * unpoisoned to exactly its size and followed by a poisoned redzone, so an
 * overflow or a read of space not yet handed out is a use-after-poison; at
 * arena_end() the blocks are unpoisoned and given back to malloc, whose
 * quarantine then reports any use after the end as a heap-use-after-free. */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#ifndef ARENA_ASAN
#define ARENA_ASAN 0
#endif

#if ARENA_ASAN
#include <sanitizer/asan_interface.h>
/* Poisoned bytes after each allocation (at least; rounding adds more). */
#define ARENA_REDZONE 16u
#endif

/* The request this thread is serving, if any: the only way cJSON's
 * argument-less hooks can find it. */
static _Thread_local struct arena *arena_current;

static int arena_owns(const struct arena *a, const void *p)
{
    const char *c = p;

    for (size_t i = 0; i < a->n; i++)
        if (c >= a->block[i] && c < a->block[i] + a->size[i])
            return 1;
    return 0;
}

/* A new block for at least need bytes; NULL when out of blocks or memory. */
static char *arena_new_block(struct arena *a, size_t need)
{
    size_t size = need > ARENA_BLOCK ? need : ARENA_BLOCK;
    char *b;

    if (a->n == ARENA_MAX_BLOCKS || !(b = malloc(size)))
        return NULL;
#if ARENA_ASAN
    ASAN_POISON_MEMORY_REGION(b, size);
#endif
    a->block[a->n] = b;
    a->size[a->n++] = size;
    a->next = b + need;
    a->end = b + size;
    return b;
}

/* Out of line, so that the common path saves no registers: cJSON calls the
 * allocator a few hundred times per review and nearly always fits. */
__attribute__((noinline, cold)) static void *arena_malloc_slow(struct arena *a, size_t size,
                                                               size_t need)
{
    char *p;

    if (size && need >= size && (p = arena_new_block(a, need))) {
#if ARENA_ASAN
        ASAN_UNPOISON_MEMORY_REGION(p, size);
#endif
        return p;
    }
    a->spilled++;
    return malloc(size);
}

static void *arena_malloc(size_t size)
{
    struct arena *a = arena_current;
#if ARENA_ASAN
    /* Room for the redzone; a size near SIZE_MAX wraps to need < size. */
    size_t need = (size + ARENA_REDZONE + 15) & ~(size_t)15;
#else
    size_t need = (size + 15) & ~(size_t)15;
#endif
    char *p;

    if (!a)
        return malloc(size);
    if (need <= (uintptr_t)a->end - (uintptr_t)a->next && size && need >= size) {
        p = a->next;
        a->next += need;
#if ARENA_ASAN
        ASAN_UNPOISON_MEMORY_REGION(p, size);
#endif
        return p;
    }
    return arena_malloc_slow(a, size, need);
}

static void arena_free(void *p)
{
    struct arena *a = arena_current;

    if (p && !(a && arena_owns(a, p)))
        free(p);
}

void arena_install_cjson_hooks(void)
{
    cJSON_Hooks hooks = {arena_malloc, arena_free};

    cJSON_InitHooks(&hooks);
}

void arena_begin(struct arena *a)
{
    /* block[] and size[] are read only below n: no need to clear 1 KiB a
     * request. */
    a->n = 0;
    a->spilled = 0;
    a->next = a->end = NULL;
    arena_current = a;
}

void arena_end(struct arena *a)
{
    if (arena_current == a)
        arena_current = NULL;
    for (size_t i = 0; i < a->n; i++) {
#if ARENA_ASAN
        /* malloc's own memory again; then its quarantine catches late
         * uses. */
        ASAN_UNPOISON_MEMORY_REGION(a->block[i], a->size[i]);
#endif
        free(a->block[i]);
    }
    a->n = 0;
    /* An arena resumed by mistake after its end must not hand out the
     * freed blocks: with no free span, it starts a new one. */
    a->next = a->end = NULL;
}

void arena_json_delete(cJSON *item)
{
    struct arena *a = arena_current;

    if (!a || a->spilled)
        cJSON_Delete(item);
}

struct arena *arena_suspend(void)
{
    struct arena *a = arena_current;

    arena_current = NULL;
    return a;
}

void arena_resume(struct arena *a)
{
    arena_current = a;
}
