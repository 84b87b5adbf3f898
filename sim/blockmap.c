/* blockmap.c - copy-on-write radix tree of refcounted sector blocks (see blockmap.h). */
#include "blockmap.h"
#include "rng.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xxhash.h>

#define BM_SHIFT 9
#define BM_FANOUT (1u << BM_SHIFT)
#define BM_MASK (BM_FANOUT - 1)

struct bm_node {
	uint32_t refs;
	void *slot[BM_FANOUT]; /* level 1: blocks; above: nodes */
};

struct sim_block sim_block_zero_sentinel = { .refs = 1 };

/* Blocks come from 4 MiB slabs aligned to 2 MiB and advised as huge pages:
 * filling a large memory disk then costs one host page fault per 2 MiB, not
 * one per 4 KiB (which dominated writing a GiB).  Slabs are never returned;
 * their blocks are reused through the free list. */
#define SLAB_BYTES (UINT64_C(4) << 20)
#define HUGE_ALIGN (UINT64_C(2) << 20)

struct block_pool {
	struct sim_block *free; /* linked through the first bytes of data */
};

/* One pool per sector size; a block freed by another thread joins that one's. */
static _Thread_local struct block_pool pools[2];

static struct block_pool *pool_for(size_t size)
{
	return size == 512 ? &pools[0] : size == 4096 ? &pools[1] : NULL;
}

static int pool_refill(struct block_pool *p, size_t size)
{
	size_t stride = sizeof(struct sim_block) + size;
	void *mem;
	if (posix_memalign(&mem, HUGE_ALIGN, SLAB_BYTES))
		return -ENOMEM;
	madvise(mem, SLAB_BYTES, MADV_HUGEPAGE); /* a hint: without THP, plain pages */
	uint8_t *slab = mem;
	for (size_t i = 0; i < SLAB_BYTES / stride; i++) {
		struct sim_block *b = (struct sim_block *)(slab + i * stride);
		b->size = (uint32_t)size;
		memcpy(b->data, &p->free, sizeof(p->free));
		p->free = b;
	}
	return 0;
}

struct sim_block *sim_block_new(const void *src, size_t size)
{
	struct block_pool *p = pool_for(size);
	struct sim_block *b;
	if (p) {
		if (!p->free && pool_refill(p, size))
			return NULL;
		b = p->free;
		memcpy(&p->free, b->data, sizeof(p->free));
	} else {
		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = (uint32_t)size;
	}
	b->refs = 1;
	b->hashed = 0;
	memcpy(b->data, src, size);
	return b;
}

void sim_block_put(struct sim_block *b)
{
	if (!b || b == SIM_BLOCK_ZERO || --b->refs)
		return;
	struct block_pool *p = pool_for(b->size);
	if (!p) {
		free(b);
		return;
	}
	memcpy(b->data, &p->free, sizeof(p->free));
	p->free = b;
}

static void node_put(struct bm_node *n, unsigned level)
{
	if (!n || --n->refs)
		return;
	for (unsigned i = 0; i < BM_FANOUT; i++) {
		if (!n->slot[i])
			continue;
		if (level > 1)
			node_put(n->slot[i], level - 1);
		else
			sim_block_put(n->slot[i]);
	}
	free(n);
}

/* ---- The digest ---- */

/* What slot idx holding b adds to the digest (nothing for no bytes). */
static void slot_term(uint64_t idx, struct sim_block *b, uint64_t t[2])
{
	t[0] = t[1] = 0;
	if (!b || b == SIM_BLOCK_ZERO)
		return;
	if (!b->hashed) {
		XXH128_hash_t h = XXH3_128bits(b->data, b->size);
		b->hash[0] = h.low64;
		b->hash[1] = h.high64;
		b->hashed = 1;
	}
	t[0] = sim_mix64(b->hash[0] ^ (idx * UINT64_C(0x9e3779b97f4a7c15)));
	t[1] = sim_mix64(b->hash[1] + (idx + 1) * UINT64_C(0xc2b2ae3d27d4eb4f));
}

static void digest_swap(struct blockmap *bm, uint64_t idx, struct sim_block *old,
			struct sim_block *b)
{
	uint64_t t[2];
	slot_term(idx, old, t);
	bm->digest[0] -= t[0];
	bm->digest[1] -= t[1];
	slot_term(idx, b, t);
	bm->digest[0] += t[0];
	bm->digest[1] += t[1];
}

static int add_run(void *ctx, uint64_t first, struct sim_block *const *blk, uint32_t n)
{
	struct blockmap *bm = ctx;
	for (uint32_t i = 0; i < n; i++)
		digest_swap(bm, first + i, NULL, blk[i]);
	return 0;
}

void bm_digest_start(struct blockmap *bm)
{
	if (bm->digested)
		return;
	bm->digest[0] = bm->digest[1] = 0;
	bm_foreach_run(bm, add_run, bm);
	bm->digested = true;
}

int bm_init(struct blockmap *bm, uint64_t nslots)
{
	unsigned depth = 1;
	while (depth * BM_SHIFT < 64 && (UINT64_C(1) << (depth * BM_SHIFT)) < nslots)
		depth++;
	bm->root = NULL;
	bm->depth = depth;
	bm->nslots = nslots;
	bm->nset = 0;
	bm->digested = false;
	bm->digest[0] = bm->digest[1] = 0;
	return 0;
}

void bm_free(struct blockmap *bm)
{
	node_put(bm->root, bm->depth);
	bm->root = NULL;
	bm->nset = 0;
	bm->digest[0] = bm->digest[1] = 0;
}

void bm_reset(struct blockmap *bm)
{
	bm_free(bm);
}

void bm_clone(struct blockmap *dst, const struct blockmap *src)
{
	*dst = *src;
	if (dst->root)
		dst->root->refs++;
}

static inline unsigned slot_index(uint64_t idx, unsigned level)
{
	return (unsigned)(idx >> (BM_SHIFT * (level - 1))) & BM_MASK;
}

struct sim_block *bm_get(const struct blockmap *bm, uint64_t idx)
{
	const struct bm_node *n = bm->root;
	for (unsigned level = bm->depth; n; level--) {
		void *s = n->slot[slot_index(idx, level)];
		if (level == 1)
			return s;
		n = s;
	}
	return NULL;
}

/* A private copy of a shared node: every child gains a reference. */
static struct bm_node *node_unshare(struct bm_node *n, unsigned level)
{
	struct bm_node *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	memcpy(c->slot, n->slot, sizeof(c->slot));
	c->refs = 1;
	for (unsigned i = 0; i < BM_FANOUT; i++) {
		if (!c->slot[i])
			continue;
		if (level > 1)
			((struct bm_node *)c->slot[i])->refs++;
		else
			sim_block_get(c->slot[i]);
	}
	n->refs--;
	return c;
}

int bm_set(struct blockmap *bm, uint64_t idx, struct sim_block *b)
{
	struct bm_node **where = &bm->root;
	for (unsigned level = bm->depth;; level--) {
		struct bm_node *n = *where;
		if (!n) {
			if (!b)
				return 0; /* clearing what was never set */
			n = calloc(1, sizeof(*n));
			if (!n)
				return -ENOMEM;
			n->refs = 1;
			*where = n;
		} else if (n->refs > 1) {
			n = node_unshare(n, level);
			if (!n)
				return -ENOMEM;
			*where = n;
		}
		unsigned i = slot_index(idx, level);
		if (level == 1) {
			struct sim_block *old = n->slot[i];
			if (bm->digested)
				digest_swap(bm, idx, old, b);
			n->slot[i] = b;
			bm->nset += (b != NULL) - (old != NULL);
			sim_block_put(old);
			return 0;
		}
		where = (struct bm_node **)&n->slot[i];
	}
}

static uint64_t node_next(const struct bm_node *n, unsigned level, uint64_t base, uint64_t idx)
{
	uint64_t span = UINT64_C(1) << (BM_SHIFT * (level - 1));
	unsigned first = idx > base ? (unsigned)((idx - base) / span) : 0;
	for (unsigned i = first; i < BM_FANOUT; i++) {
		if (!n->slot[i])
			continue;
		uint64_t child_base = base + i * span;
		if (level == 1)
			return child_base;
		uint64_t r = node_next(n->slot[i], level - 1, child_base, idx);
		if (r != UINT64_MAX)
			return r;
	}
	return UINT64_MAX;
}

uint64_t bm_next(const struct blockmap *bm, uint64_t idx)
{
	if (!bm->root || idx >= bm->nslots)
		return UINT64_MAX;
	uint64_t r = node_next(bm->root, bm->depth, 0, idx);
	return r < bm->nslots ? r : UINT64_MAX;
}

static int node_foreach_run(const struct bm_node *n, unsigned level, uint64_t base,
			    bm_run_fn fn, void *ctx)
{
	uint64_t span = UINT64_C(1) << (BM_SHIFT * (level - 1));
	for (unsigned i = 0; i < BM_FANOUT; i++) {
		if (!n->slot[i])
			continue;
		if (level > 1) {
			int r = node_foreach_run(n->slot[i], level - 1, base + i * span, fn, ctx);
			if (r)
				return r;
			continue;
		}
		unsigned j = i;
		while (j < BM_FANOUT && n->slot[j])
			j++;
		int r = fn(ctx, base + i, (struct sim_block *const *)&n->slot[i], j - i);
		if (r)
			return r;
		i = j;
	}
	return 0;
}

int bm_foreach_run(const struct blockmap *bm, bm_run_fn fn, void *ctx)
{
	return bm->root ? node_foreach_run(bm->root, bm->depth, 0, fn, ctx) : 0;
}
