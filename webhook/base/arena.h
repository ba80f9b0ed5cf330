/* arena: one bump allocator per admission for cJSON's many small objects.
 *
 * Parsing a review and building its answer makes a few hundred tiny cJSON
 * allocations that all die together when the request ends; through the
 * arena they cost one block instead of one malloc and free each (malloc was
 * a quarter of the instructions per admission). cJSON's allocation hooks are
 * process-wide, so the arena is found through a thread-local pointer, set
 * only while a request thread is inside arena_begin()..arena_end(); every
 * other allocation, and every free of memory the arena did not hand out,
 * goes to malloc and free as usual. Anything that must outlive the request
 * (e.g. a cached API answer) is built between arena_suspend() and
 * arena_resume(). Under AddressSanitizer the arena is on too, with manual
 * poisoning (see arena.c): every allocation is unpoisoned to exactly its
 * size with a poisoned redzone after it, and the blocks go back to malloc
 * at arena_end(), so overflows and uses after the end are still reported.
 */
#ifndef RDMA_WEBHOOK_ARENA_H
#define RDMA_WEBHOOK_ARENA_H

#include <stddef.h>

struct cJSON;

#define ARENA_BLOCK      (64u * 1024u)
#define ARENA_MAX_BLOCKS 64

struct arena {
    char *block[ARENA_MAX_BLOCKS];
    size_t size[ARENA_MAX_BLOCKS];
    size_t n;   /* blocks in use */
    char *next; /* free space of the last block: next..end */
    char *end;
    size_t spilled; /* allocations that went to malloc: the arena was full */
};

/* Points cJSON at the arena-aware allocator; call once before any thread
 * uses cJSON. */
void arena_install_cjson_hooks(void);

void arena_begin(struct arena *a);
/* Frees every block; nothing the arena handed out may be used after. */
void arena_end(struct arena *a);

/* cJSON_Delete(item), except when everything cJSON allocated on this thread
 * since arena_begin() is in the arena: then arena_end() frees it all at once,
 * and walking the tree to free each node would be wasted work. */
void arena_json_delete(struct cJSON *item);

/* Lets the current thread allocate from malloc for a while. */
struct arena *arena_suspend(void);
void arena_resume(struct arena *a);

#endif
