#include "base/strmap.h"

#include <stdlib.h>
#include <string.h>

/* The first allocation: enough for the few keys most maps hold. */
#define STRMAP_MIN_CAP 8

void strmap_init(struct strmap *m, size_t max, unsigned long long seed)
{
    *m = (struct strmap){.max = max, .seed = seed};
}

void strmap_free(struct strmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

size_t strmap_bytes(const struct strmap *m)
{
    return m->cap * sizeof(*m->slots);
}

/* FNV-1a from the seed, then splitmix64's finaliser: FNV alone puts keys
 * that differ in their last bytes into neighbouring slots. */
static unsigned long long strmap_hash(const struct strmap *m, const char *key, size_t len)
{
    unsigned long long h = 0xcbf29ce484222325ull ^ m->seed;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 0x100000001b3ull;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

/* The slot holding key, or the free slot where it would go. */
static struct strmap_slot *strmap_probe(struct strmap *m, const char *key, size_t len,
                                        unsigned long long h)
{
    size_t mask = m->cap - 1;

    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct strmap_slot *s = &m->slots[i];

        if (!s->key)
            return s;
        if (s->hash == h && s->len == len) {
            m->compares++;
            if (memcmp(s->key, key, len) == 0)
                return s;
        }
    }
}

/* Doubles the slots (or makes the first ones); the old keys are placed
 * again without comparisons, all being different. */
static int strmap_grow(struct strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : STRMAP_MIN_CAP;
    struct strmap_slot *old = m->slots, *slots;
    size_t old_cap = m->cap;

    if (cap > (size_t)-1 / sizeof(*slots) || !(slots = calloc(cap, sizeof(*slots))))
        return ERR_NOMEM;
    m->slots = slots;
    m->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        size_t j = (size_t)old[i].hash & (cap - 1);

        if (!old[i].key)
            continue;
        while (slots[j].key)
            j = (j + 1) & (cap - 1);
        slots[j] = old[i];
    }
    free(old);
    return ERR_OK;
}

int strmap_put(struct strmap *m, const char *key, size_t len, void *value)
{
    unsigned long long h = strmap_hash(m, key, len);
    struct strmap_slot *s;

    if (m->cap) {
        s = strmap_probe(m, key, len, h);
        if (s->key)
            return ERR_FAIL;
    }
    if (m->n >= m->max)
        return ERR_TOO_BIG;
    if ((m->n + 1) * 2 > m->cap && strmap_grow(m) != ERR_OK)
        return ERR_NOMEM;
    s = strmap_probe(m, key, len, h);
    *s = (struct strmap_slot){.key = key, .len = len, .hash = h, .value = value};
    m->n++;
    return ERR_OK;
}

void *strmap_get(struct strmap *m, const char *key, size_t len)
{
    struct strmap_slot *s;

    if (!m->cap)
        return NULL;
    s = strmap_probe(m, key, len, strmap_hash(m, key, len));
    return s->key ? s->value : NULL;
}

/* Backward-shift deletion: the keys after the hole that would no longer be
 * found past it move into it, so no tombstones accumulate. */
int strmap_del(struct strmap *m, const char *key, size_t len)
{
    size_t mask = m->cap - 1, hole, i;
    struct strmap_slot *s;

    if (!m->cap)
        return 0;
    s = strmap_probe(m, key, len, strmap_hash(m, key, len));
    if (!s->key)
        return 0;
    hole = (size_t)(s - m->slots);
    for (i = (hole + 1) & mask; m->slots[i].key; i = (i + 1) & mask) {
        size_t home = (size_t)m->slots[i].hash & mask;

        /* The key at i may fill the hole when its home is not in (hole, i]. */
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole] = (struct strmap_slot){0};
    m->n--;
    return 1;
}
