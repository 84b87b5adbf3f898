/*
 * test_blockmap.c - the copy-on-write radix tree behind every disk: get/set,
 * counts, next-set-slot search, runs, O(1) clones and block reference counts.
 */
#include "sim/blockmap.h"
#include "sim/rng.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* A block of `size` bytes all equal to v. */
static struct sim_block *blk(uint8_t v, size_t size)
{
	uint8_t buf[4096];
	cr_assert(size <= sizeof(buf));
	memset(buf, v, size);
	struct sim_block *b = sim_block_new(buf, size);
	cr_assert_not_null(b);
	cr_assert_eq(b->refs, 1);
	return b;
}

static uint8_t val(const struct blockmap *bm, uint64_t idx)
{
	struct sim_block *b = bm_get(bm, idx);
	cr_assert(b && b != SIM_BLOCK_ZERO, "slot %llu is empty", (unsigned long long)idx);
	return b->data[0];
}

static void t_empty_map(void)
{
	struct blockmap bm;
	cr_assert_eq(bm_init(&bm, UINT64_C(1) << 30), 0);
	cr_assert_eq(bm.nset, 0);
	cr_assert_null(bm_get(&bm, 0));
	cr_assert_null(bm_get(&bm, (UINT64_C(1) << 30) - 1));
	cr_assert_eq(bm_next(&bm, 0), UINT64_MAX);
	cr_assert_eq(bm_set(&bm, 5, NULL), 0, "clearing an empty slot is fine");
	cr_assert_eq(bm.nset, 0);
	cr_assert_null(bm.root, "and allocates nothing");
	bm_free(&bm);
}

static void t_depth_covers_the_slots(void)
{
	const struct {
		uint64_t nslots;
		unsigned depth;
	} c[] = {
		{ 1, 1 },
		{ 512, 1 },
		{ 513, 2 },
		{ UINT64_C(1) << 18, 2 },
		{ (UINT64_C(1) << 18) + 1, 3 },
		{ UINT64_C(1) << 38, 5 }, /* 1 PiB of 4 KiB sectors */
		{ UINT64_C(1) << 41, 5 }, /* 1 PiB of 512-byte sectors */
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct blockmap bm;
		bm_init(&bm, c[i].nslots);
		cr_assert_eq(bm.depth, c[i].depth, "%llu slots", (unsigned long long)c[i].nslots);
		/* The last slot works and does not alias the first. */
		cr_assert_eq(bm_set(&bm, c[i].nslots - 1, blk(7, 16)), 0);
		if (c[i].nslots > 1)
			cr_assert_null(bm_get(&bm, 0));
		cr_assert_eq(val(&bm, c[i].nslots - 1), 7);
		cr_assert_eq(bm_next(&bm, 0), c[i].nslots - 1);
		bm_free(&bm);
	}
}

Test(blockmap, set_get_replace_clear)
{
	struct blockmap bm;
	bm_init(&bm, 100000);
	struct sim_block *a = blk(1, 512), *b = blk(2, 512);
	sim_block_get(a); /* keep one reference of our own */
	cr_assert_eq(bm_set(&bm, 70000, a), 0);
	cr_assert_eq(a->refs, 2);
	cr_assert_eq(bm.nset, 1);
	cr_assert_eq(bm_get(&bm, 70000), a);
	cr_assert_null(bm_get(&bm, 69999));
	cr_assert_null(bm_get(&bm, 70001));
	cr_assert_eq(bm_set(&bm, 70000, b), 0);
	cr_assert_eq(a->refs, 1, "the replaced block lost the map's reference");
	cr_assert_eq(bm.nset, 1);
	cr_assert_eq(val(&bm, 70000), 2);
	cr_assert_eq(bm_set(&bm, 3, SIM_BLOCK_ZERO), 0);
	cr_assert_eq(bm.nset, 2, "a known-zero slot counts as set");
	cr_assert_eq(bm_get(&bm, 3), SIM_BLOCK_ZERO);
	cr_assert_eq(bm_next(&bm, 0), 3);
	cr_assert_eq(bm_set(&bm, 70000, NULL), 0);
	cr_assert_eq(bm.nset, 1);
	cr_assert_null(bm_get(&bm, 70000));
	cr_assert_eq(bm_next(&bm, 4), UINT64_MAX);
	bm_reset(&bm);
	cr_assert_eq(bm.nset, 0);
	cr_assert_eq(bm.nslots, 100000, "reset keeps the geometry");
	cr_assert_null(bm_get(&bm, 3));
	cr_assert_eq(bm_set(&bm, 99999, sim_block_get(a)), 0);
	cr_assert_eq(a->refs, 2);
	bm_free(&bm);
	cr_assert_eq(a->refs, 1, "freeing the map drops its references");
	sim_block_put(a);
}

Test(blockmap, next_matches_a_brute_force_search)
{
	const uint64_t nslots = UINT64_C(1) << 36;
	struct blockmap bm;
	bm_init(&bm, nslots);
	struct sim_rng r;
	sim_rng_seed(&r, 1);
	enum { N = 600 };
	uint64_t *idx = malloc(N * sizeof(*idx));
	size_t n = 0;
	/* Clusters and strays, the first and the last slot. */
	idx[n++] = 0;
	idx[n++] = nslots - 1;
	while (n < N) {
		uint64_t base = sim_rng_below(&r, nslots - 2000);
		unsigned run = 1 + (unsigned)sim_rng_below(&r, 8);
		for (unsigned j = 0; j < run && n < N; j++)
			idx[n++] = base + j * (1 + sim_rng_below(&r, 3));
	}
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(bm_set(&bm, idx[i], blk((uint8_t)i, 16)), 0);
	/* Brute force: sort and dedupe the indices. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
			uint64_t t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (!m || idx[m - 1] != idx[i])
			idx[m++] = idx[i];
	cr_assert_eq(bm.nset, m);
	/* Walk every set slot with bm_next. */
	uint64_t s = bm_next(&bm, 0);
	for (size_t i = 0; i < m; i++) {
		cr_assert_eq(s, idx[i], "set slot %zu", i);
		s = bm_next(&bm, s + 1);
	}
	cr_assert_eq(s, UINT64_MAX);
	/* Random queries, and queries just around each set slot. */
	for (int q = 0; q < 3000; q++) {
		uint64_t at = sim_rng_below(&r, nslots);
		if (q % 4) { /* one before, at, one after a set slot */
			at = idx[sim_rng_below(&r, m)] + (uint64_t)(q % 4) - 2;
			if (at >= nslots) /* 0 - 1 wrapped, or past the end */
				at = q % 4 == 1 ? 0 : nslots - 1;
		}
		uint64_t want = UINT64_MAX;
		for (size_t i = 0; i < m; i++)
			if (idx[i] >= at) {
				want = idx[i];
				break;
			}
		cr_assert_eq(bm_next(&bm, at), want, "next from %llu", (unsigned long long)at);
	}
	cr_assert_eq(bm_next(&bm, nslots), UINT64_MAX);
	cr_assert_eq(bm_next(&bm, UINT64_MAX), UINT64_MAX);
	free(idx);
	bm_free(&bm);
}

struct runs {
	uint64_t first[64];
	uint32_t n[64];
	uint8_t v0[64];
	size_t count;
	size_t stop_after;
};

static int collect(void *ctx, uint64_t first, struct sim_block *const *b, uint32_t n)
{
	struct runs *r = ctx;
	cr_assert(r->count < 64);
	r->first[r->count] = first;
	r->n[r->count] = n;
	r->v0[r->count] = b[0] == SIM_BLOCK_ZERO ? 0 : b[0]->data[0];
	for (uint32_t i = 0; i < n; i++)
		cr_assert_not_null(b[i]);
	r->count++;
	return r->stop_after && r->count == r->stop_after ? 42 : 0;
}

Test(blockmap, foreach_run_visits_runs_in_order)
{
	struct blockmap bm;
	bm_init(&bm, UINT64_C(1) << 20);
	for (uint64_t i = 10; i < 15; i++)
		bm_set(&bm, i, blk((uint8_t)i, 16));
	bm_set(&bm, 20, SIM_BLOCK_ZERO);
	for (uint64_t i = 510; i < 515; i++) /* crosses a leaf boundary at 512 */
		bm_set(&bm, i, blk((uint8_t)i, 16));
	bm_set(&bm, 900000, blk(9, 16));
	struct runs r = { .count = 0 };
	cr_assert_eq(bm_foreach_run(&bm, collect, &r), 0);
	cr_assert_eq(r.count, 5);
	const uint64_t first[] = { 10, 20, 510, 512, 900000 };
	const uint32_t n[] = { 5, 1, 2, 3, 1 };
	const uint8_t v0[] = { 10, 0, (uint8_t)510, (uint8_t)512, 9 };
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(r.first[i], first[i], "run %zu", i);
		cr_assert_eq(r.n[i], n[i], "run %zu", i);
		cr_assert_eq(r.v0[i], v0[i], "run %zu", i);
	}
	struct runs stop = { .stop_after = 2 };
	cr_assert_eq(bm_foreach_run(&bm, collect, &stop), 42, "stops at the first non-zero");
	cr_assert_eq(stop.count, 2);
	struct blockmap empty;
	bm_init(&empty, 10);
	struct runs none = { .count = 0 };
	cr_assert_eq(bm_foreach_run(&empty, collect, &none), 0);
	cr_assert_eq(none.count, 0);
	bm_free(&bm);
}

Test(blockmap, clones_share_until_written)
{
	struct blockmap a, b;
	bm_init(&a, UINT64_C(1) << 24);
	struct sim_block *x = blk(1, 4096), *y = blk(2, 4096);
	sim_block_get(x);
	sim_block_get(y);
	bm_set(&a, 100, x);
	bm_set(&a, 101, y);
	bm_clone(&b, &a);
	cr_assert_eq(b.root, a.root, "a clone shares the tree");
	cr_assert_eq(b.nset, 2);
	cr_assert_eq(x->refs, 2, "sharing the tree does not touch the blocks");

	/* Writing the clone copies its path; the blocks of the copied leaf gain a ref. */
	bm_set(&b, 100, blk(3, 4096));
	cr_assert_neq(b.root, a.root);
	cr_assert_eq(val(&a, 100), 1);
	cr_assert_eq(val(&b, 100), 3);
	cr_assert_eq(bm_get(&b, 101), y, "untouched slots still share the block");
	cr_assert_eq(y->refs, 3);
	cr_assert_eq(x->refs, 2);

	/* Writing the origin leaves the clone. */
	bm_set(&a, 101, blk(4, 4096));
	bm_set(&a, 5000000, blk(5, 4096));
	cr_assert_eq(bm_get(&b, 101), y);
	cr_assert_null(bm_get(&b, 5000000));
	cr_assert_eq(bm_next(&b, 102), UINT64_MAX);
	cr_assert_eq(bm_next(&a, 102), 5000000);
	cr_assert_eq(a.nset, 3);
	cr_assert_eq(b.nset, 2);
	cr_assert_eq(y->refs, 2);

	/* Clearing in a clone does not clear the origin. */
	struct blockmap c;
	bm_clone(&c, &a);
	bm_set(&c, 100, NULL);
	cr_assert_eq(val(&a, 100), 1);
	cr_assert_null(bm_get(&c, 100));
	bm_reset(&c);
	cr_assert_eq(val(&a, 5000000), 5, "resetting a clone leaves the origin");

	/* Free the origin first: the clone stands alone. */
	bm_free(&a);
	cr_assert_eq(val(&b, 100), 3);
	cr_assert_eq(bm_get(&b, 101), y);
	cr_assert_eq(x->refs, 1);
	bm_free(&b);
	bm_free(&c);
	cr_assert_eq(y->refs, 1);
	sim_block_put(x);
	sim_block_put(y);
}

Test(blockmap, many_clones_of_a_big_map)
{
	struct blockmap base;
	bm_init(&base, UINT64_C(1) << 28);
	for (uint64_t i = 0; i < 4096; i++)
		bm_set(&base, i * 4099, blk((uint8_t)i, 512));
	struct blockmap c[100];
	for (int k = 0; k < 100; k++) {
		bm_clone(&c[k], &base);
		bm_set(&c[k], (uint64_t)k * 4099, blk((uint8_t)(200 + k), 512));
	}
	for (int k = 0; k < 100; k++) {
		cr_assert_eq(val(&c[k], (uint64_t)k * 4099), (uint8_t)(200 + k));
		cr_assert_eq(val(&c[k], (uint64_t)(k + 1) * 4099), (uint8_t)(k + 1));
		cr_assert_eq(val(&base, (uint64_t)k * 4099), (uint8_t)k);
		cr_assert_eq(c[k].nset, 4096);
	}
	for (int k = 0; k < 100; k++)
		bm_free(&c[k]);
	for (uint64_t i = 0; i < 4096; i++)
		cr_assert_eq(val(&base, i * 4099), (uint8_t)i);
	bm_free(&base);
}

Test(blockmap, pooled_blocks_are_reused_and_hold_their_data)
{
	/* Blocks of 512 and 4096 bytes come from pools; others from malloc. */
	for (int round = 0; round < 3; round++) {
		struct sim_block *b[600];
		for (int i = 0; i < 600; i++) {
			size_t size = i % 3 == 0 ? 512 : i % 3 == 1 ? 4096 : 100;
			b[i] = blk((uint8_t)(i + round), size);
			cr_assert_eq(b[i]->size, size);
			cr_assert_eq((uintptr_t)b[i]->data % 16, 0, "data is 16-byte aligned");
		}
		for (int i = 0; i < 600; i++) {
			size_t size = i % 3 == 0 ? 512 : i % 3 == 1 ? 4096 : 100;
			for (size_t j = 0; j < size; j++)
				cr_assert_eq(b[i]->data[j], (uint8_t)(i + round));
		}
		for (int i = 0; i < 600; i++)
			sim_block_put(b[i]);
	}
	/* The zero sentinel is never freed. */
	sim_block_put(SIM_BLOCK_ZERO);
	cr_assert_eq(sim_block_get(SIM_BLOCK_ZERO), SIM_BLOCK_ZERO);
	cr_assert_null(sim_block_get(NULL));
	sim_block_put(NULL);
}

Test(blockmap, empty_map_and_depth)
{
	t_empty_map();
	t_depth_covers_the_slots();
}

/* The digest kept by bm_set through clones equals one taken afresh, and
 * follows the bytes: equal bytes in other blocks, equal digest. */
static void digest_of(struct blockmap *bm, uint64_t out[2])
{
	struct blockmap fresh;
	bm_clone(&fresh, bm);
	fresh.digested = false;
	bm_digest_start(&fresh);
	out[0] = fresh.digest[0];
	out[1] = fresh.digest[1];
	bm_free(&fresh);
}

Test(blockmap, digest_follows_the_bytes)
{
	struct blockmap a, b;
	bm_init(&a, UINT64_C(1) << 20);
	bm_init(&b, UINT64_C(1) << 20);
	bm_digest_start(&a);
	bm_digest_start(&b);
	cr_assert(!a.digest[0] && !a.digest[1], "an empty map digests to zero");
	struct sim_rng r;
	sim_rng_seed(&r, 7);
	/* a random history on a, then its clone c changed and changed back */
	for (int i = 0; i < 3000; i++) {
		uint64_t idx = sim_rng_next(&r) % 70000;
		uint64_t v = sim_rng_next(&r) % 5;
		bm_set(&a, idx, v == 0 ? NULL : v == 1 ? SIM_BLOCK_ZERO : blk((uint8_t)v, 512));
	}
	uint64_t d[2];
	digest_of(&a, d);
	cr_assert(d[0] == a.digest[0] && d[1] == a.digest[1], "kept equals afresh");
	struct blockmap c;
	bm_clone(&c, &a);
	bm_set(&c, 12345, blk(9, 512));
	cr_assert(c.digest[0] != a.digest[0] || c.digest[1] != a.digest[1]);
	struct sim_block *old = bm_get(&a, 12345);
	bm_set(&c, 12345, old && old != SIM_BLOCK_ZERO ? blk(old->data[0], 512) : sim_block_get(old));
	cr_assert(c.digest[0] == a.digest[0] && c.digest[1] == a.digest[1],
		  "the same bytes back in a new block: the same digest");
	/* b gets a's slots in reverse order, each as a new block */
	for (uint64_t idx = 70000; idx-- > 0;) {
		struct sim_block *x = bm_get(&a, idx);
		if (x)
			bm_set(&b, idx, x == SIM_BLOCK_ZERO ? x : blk(x->data[0], 512));
	}
	cr_assert(b.digest[0] == a.digest[0] && b.digest[1] == a.digest[1]);
	/* one slot moved: different */
	bm_set(&b, 70001, blk(1, 512));
	cr_assert(b.digest[0] != a.digest[0] || b.digest[1] != a.digest[1]);
	bm_set(&b, 70001, NULL);
	cr_assert(b.digest[0] == a.digest[0] && b.digest[1] == a.digest[1]);
	bm_reset(&c);
	cr_assert(!c.digest[0] && !c.digest[1]);
	bm_free(&a);
	bm_free(&b);
	bm_free(&c);
}
