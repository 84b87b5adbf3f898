/*
 * blockmap.h - a copy-on-write radix tree from sector number to a refcounted,
 * immutable sector-sized block.  Cloning a map is O(1): both maps share every
 * node and block and copy a node only when one of them changes it (as
 * LittleFS's emulated block device and Btrfs's own shadowing do).
 *
 * A NULL slot reads as zeros.  SIM_BLOCK_ZERO is a distinct "known zeros"
 * value, used by caches to hold a discard.
 */
#ifndef BTRSIM_SIM_BLOCKMAP_H
#define BTRSIM_SIM_BLOCKMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim_block {
	uint32_t refs;
	uint32_t size;    /* bytes of data */
	uint64_t hashed;  /* hash holds XXH3-128 of data (computed when a digest
			   * first needs it: blocks never change) */
	uint64_t hash[2]; /* (the header keeps data 16-byte aligned) */
	uint8_t data[];
};

extern struct sim_block sim_block_zero_sentinel;
#define SIM_BLOCK_ZERO (&sim_block_zero_sentinel)

/* A new block with one reference, holding `size` bytes copied from src.
 * Blocks of 512 and 4096 bytes come from per-thread pools carved out of large
 * slabs: a simulator allocates and frees millions of them, and malloc plus
 * first-touch page faults would otherwise dominate its time.  Pool memory is
 * kept for reuse, not returned to the system. */
struct sim_block *sim_block_new(const void *src, size_t size);
static inline struct sim_block *sim_block_get(struct sim_block *b)
{
	if (b && b != SIM_BLOCK_ZERO)
		b->refs++;
	return b;
}
void sim_block_put(struct sim_block *b);

struct bm_node;

struct blockmap {
	struct bm_node *root;
	unsigned depth;    /* levels of nodes; capacity is 2^(BM_SHIFT*depth) */
	uint64_t nslots;
	uint64_t nset;     /* slots holding a block (SIM_BLOCK_ZERO included) */
	/* With `digested` (bm_digest_start), a digest of the content: over
	 * every slot holding bytes (not SIM_BLOCK_ZERO), a pseudo-random
	 * function of its number and its bytes' hash, summed (in each 64-bit
	 * half), so that bm_set keeps it in two steps, whatever the map's
	 * size.  Maps with equal bytes have equal digests, and maps whose
	 * digests are equal hold equal bytes, but for a chance near 2^-128 (an
	 * empty slot and a slot holding zeros count as different). */
	bool digested;
	uint64_t digest[2];
};

int bm_init(struct blockmap *bm, uint64_t nslots);
void bm_free(struct blockmap *bm);
/* Drop every entry, keep the geometry. */
void bm_reset(struct blockmap *bm);
/* dst becomes an O(1) copy-on-write clone of src. */
void bm_clone(struct blockmap *dst, const struct blockmap *src);
struct sim_block *bm_get(const struct blockmap *bm, uint64_t idx);
/* Stores b (the map takes over one reference the caller holds; NULL clears).
 * Returns 0 or -ENOMEM, in which case the caller keeps its reference. */
int bm_set(struct blockmap *bm, uint64_t idx, struct sim_block *b);
/* Starts keeping bm's digest (a walk of every slot, hashing the blocks
 * whose hash is not known yet); clones inherit it. */
void bm_digest_start(struct blockmap *bm);
/* The first set slot at or after idx, or UINT64_MAX. */
uint64_t bm_next(const struct blockmap *bm, uint64_t idx);

/* Calls fn for each run of consecutive set slots, in order (a run never crosses
 * a leaf of 512 slots).  Stops at and returns the first non-zero result. */
typedef int (*bm_run_fn)(void *ctx, uint64_t first, struct sim_block *const *blk, uint32_t n);
int bm_foreach_run(const struct blockmap *bm, bm_run_fn fn, void *ctx);

#endif
