/*
 * internal.h - the state behind ref.h, for the files of ref/ only.
 */
#ifndef BTRSIM_REF_INTERNAL_H
#define BTRSIM_REF_INTERNAL_H

#include "ref/csum.h"
#include "ref/ref.h"

#include <stdarg.h>

struct ref_dev {
	uint64_t devid;
	int disk; /* sim disk index, -1 when missing */
	uint8_t uuid[BTRFS_UUID_SIZE];
	uint64_t stats[BTRFS_DEV_STAT_VALUES_MAX]; /* devstats.c */
	bool stats_dirty;                          /* changed since the last commit */
};

struct ref_stripe {
	uint64_t devid;
	uint64_t physical;
	int disk; /* -1: the device is missing */
};

struct ref_chunk {
	uint64_t logical;
	uint64_t length;
	uint64_t stripe_len;
	uint64_t type;
	uint16_t num_stripes;
	uint16_t sub_stripes;
	struct ref_stripe *stripes;
};

/* Tree blocks are cached once validated; a path holds references. */
struct ref_block {
	uint64_t bytenr;
	uint64_t gen;
	uint64_t owner;
	uint32_t refs;
	uint8_t level;
	bool dirty; /* changed in the running transaction, not yet written (never evicted) */
	bool dead;  /* freed before it was ever written: not to be written */
	size_t dirty_slot; /* its index in the transaction's dirty list */
	struct ref_block *hnext;
	uint8_t data[];
};

#define REF_CACHE_BUCKETS 4096
#define REF_CACHE_MAX_BLOCKS 8192

struct ref_fs {
	sim_volume *vol;
	struct ref_open_opts opts;
	struct btrfs_super_disk sb;
	int sb_mirror;
	uint64_t fsid_change; /* BTRFS_SUPER_FLAG_CHANGING_FSID(_V2) on any valid copy */
	bool items_unjudged;  /* leaves read without the tree-checker's item rules */
	uint32_t nodesize, sectorsize;
	unsigned csum_type, csum_size;
	uint8_t meta_fsid[BTRFS_FSID_BYTES]; /* the fsid tree blocks carry */
	uint64_t generation;
	struct ref_dev *devs;
	size_t ndevs;
	uint64_t spare_disks; /* disks left out as spares (ref_open_opts.spares) */
	struct ref_chunk *chunks; /* sorted by logical */
	size_t nchunks, chunks_cap;
	struct ref_root tree_root, chunk_root;
	struct ref_block *cache[REF_CACHE_BUCKETS];
	size_t ncached;
	uint64_t repaired, csum_errors;
	uint64_t rewritten; /* sectors of bad copies written over with good bytes (read repair) */
	struct ref_root roots[16]; /* recently found subvolume roots */
	size_t nroots, roots_next;
	char err[256];
	struct rw_state *rw; /* the write path's state; NULL when mounted read-only */
	struct ref_log_outcome log; /* what the open did with a log tree (log_replay.c) */
	/* Where relative paths start (ref_chdir); at_set false: they are refused. */
	struct ref_ino at;
	bool at_set;
};

int ref_fail(ref_fs *fs, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void ref_log(ref_fs *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The clock of timestamps when nobody gives one: 2025-01-01 00:00:00 UTC. */
#define REF_DEFAULT_CLOCK_NS (UINT64_C(1735689600) * UINT64_C(1000000000))

/* log_replay.c: replays the log tree the superblock names (the open's last
 * step, as the kernel's mount), committing the result. */
int log_replay(ref_fs *fs);

/* super.c: the superblock field checks beyond magic, position and checksum. */
const char *ref_super_fields_invalid(const struct btrfs_super_disk *sb);

/* chunk.c */
int chunk_add(ref_fs *fs, uint64_t logical, const struct btrfs_chunk *c, uint32_t item_size);
const struct ref_chunk *chunk_find(const ref_fs *fs, uint64_t logical);
/* Drops the chunk at `logical` from the map (a removed block group). */
void chunk_remove(ref_fs *fs, uint64_t logical);
uint64_t chunk_stripe_bytes(uint64_t type, uint64_t len, unsigned n);
/* Calls fn with each logical range of chunk c that holds a superblock copy
 * on some stripe (one stripe unit, 64 KiB, clipped to the chunk): what the
 * kernel's exclude_super_stripes keeps out of the allocator and the v1 space
 * cache (the free-space tree lists them as free).  Returns fn's first
 * non-zero result, or 0. */
int chunk_super_units(const struct ref_chunk *c, int (*fn)(void *ctx, uint64_t start, uint64_t len),
		      void *ctx);
/* How many stripes a chunk of this type may lose and still be written (the
 * kernel's btrfs_raid_array tolerated_failures). */
unsigned chunk_tolerated_failures(uint64_t type);

#define REF_MAX_COPIES 4
#define REF_COPY_REBUILT (-2) /* a RAID5/6 copy rebuilt from parity */
struct ref_copy {
	int disk; /* -1: missing device; REF_COPY_REBUILT */
	uint64_t devid;
	uint64_t physical;
};
int chunk_map(const struct ref_chunk *c, uint64_t logical, uint64_t len, struct ref_copy *copies,
	      uint64_t *run);
int chunk_load_sys_array(ref_fs *fs);
int chunk_load_tree(ref_fs *fs);
void chunk_free_all(ref_fs *fs);
/* Validates a chunk item as the kernel's btrfs_check_chunk_valid does; returns
 * NULL or a reason. */
const char *chunk_item_invalid(const ref_fs *fs, uint64_t logical, const struct btrfs_chunk *c,
			       uint32_t item_size);

/* io.c: writes len bytes at a logical address to every copy (the write
 * path's; reads are ref_read_logical in ref.h). */
int ref_write_logical(ref_fs *fs, uint64_t logical, const void *buf, size_t len);
/* Read repair: writes good bytes over copy `mirror` of [logical, +len) (for
 * RAID5/6, over the data column), when mounted for writing and not failed;
 * a failed repair write is logged, not returned (the read succeeded). */
int io_rewrite_copy(ref_fs *fs, uint64_t logical, const void *buf, size_t len, int mirror);

/* devstats.c: counts an error (BTRFS_DEV_STAT_*) on the device of a sim
 * disk (nothing for a disk that is no device); loads the counters from the
 * dev tree (errors there logged, not returned). */
void devstats_inc(ref_fs *fs, int disk, int which);
void devstats_load(ref_fs *fs);
/* io.c: the sim disk of copy `mirror` of logical, -1 when it is missing or
 * rebuilt from parity. */
int io_copy_disk(ref_fs *fs, uint64_t logical, int mirror);
/* Reads copy `mirror` of [logical, +len) (inside one stripe unit) straight
 * off its disk, counting and logging nothing: 0 or -errno (a probe). */
int io_probe_copy(ref_fs *fs, uint64_t logical, void *buf, size_t len, int mirror);

/* extent_scan.c: the allocated extents of chunk c in order, from the extent
 * tree (free *out); and the verdict on one copy of [at, at+len) of extent e
 * into verdict[] (a sector each; those already marked stay so): EXT_OK, or
 * for a tree block EXT_BAD_VERIFY on all its sectors (checksum, header, the
 * extent item's generation), for data EXT_BAD_CSUM per sector whose csum
 * (csums/have: the extent's, from data_csums) fails. */
struct ref_extent {
	uint64_t start, len, gen;
	bool tree;
};
enum { EXT_OK = 0, EXT_BAD_READ, EXT_BAD_CSUM, EXT_BAD_VERIFY };
int chunk_extents(ref_fs *fs, const struct ref_chunk *c, struct ref_extent **out, size_t *n);
/* The rows of RAID5/6 chunk c that the extents ex[0..nex) (in order) touch,
 * each once, in order (free *rows): 0 or -ENOMEM. */
int chunk_rows(ref_fs *fs, const struct ref_chunk *c, const struct ref_extent *ex, size_t nex,
	       uint64_t **rows, size_t *nrows);
void extent_verify(ref_fs *fs, const struct ref_extent *e, uint64_t at, const uint8_t *buf,
		   size_t len, const uint8_t *csums, const bool *have, uint8_t *verdict);
/* Reads len bytes of one copy straight off sim disk `disk`; a failing read
 * is retried sector by sector so that only the unreadable sectors get
 * EXT_BAD_READ in verdict[]. */
void extent_read_copy(ref_fs *fs, int disk, uint64_t physical, uint8_t *buf, size_t len,
		      uint8_t *verdict);

/* data.c: reads of data extents with checksum verification and repair. */
int data_read(ref_fs *fs, uint64_t logical, void *buf, size_t len, bool nodatasum);
/* Fills csums (n * csum_size bytes) for the n sectors from `logical`; have[i]
 * tells whether sector i has a checksum in the csum tree. */
int data_csums(ref_fs *fs, uint64_t logical, size_t n, uint8_t *csums, bool *have);
/* Whether a sector's bytes have checksum `want`. */
bool data_sector_ok(ref_fs *fs, const uint8_t *p, const uint8_t *want);

/* raid56.c: copy `mirror` (1: from P, 2: from Q) of a RAID5/6 data range
 * that stays inside one stripe unit, rebuilt from the rest of its row. */
int raid56_rebuild(ref_fs *fs, const struct ref_chunk *c, uint64_t logical, uint8_t *out,
		   uint64_t len, int mirror);
/* Solves for the data columns marked unknown (of k) from the known ones and
 * P and/or Q (len bytes each): 0, -EIO when they do not suffice. */
int raid56_solve(int k, const bool *data_unknown, bool p_known, bool q_known, uint8_t **data,
		 uint8_t *p, uint8_t *q, int len);
/* Column j of row `row` of RAID5/6 chunk c (data 0..k-1, then P, then Q),
 * in the kernel's rotation (raid56.c). */
static inline const struct ref_stripe *raid56_col(const struct ref_chunk *c, uint64_t row, int j)
{
	return &c->stripes[(row + (uint64_t)j) % c->num_stripes];
}

/* raid56_write.c: writes len bytes at logical, inside RAID5/6 chunk c (whose
 * stripes name the disks), and the parity of every row touched, recomputed
 * from the row's data (the rest of each column read from disk).  sim_write
 * flags for every request.  0, or -errno with the reason in err.  (mkfs uses
 * it too, with a chunk of its own making.) */
/* verify (may be NULL) judges bytes a read-modify-write read back from a
 * data column: bad[i] set for each sector of [logical, +len) that is not what
 * the file system holds there (a data sector whose checksum fails).  Such a
 * column is rebuilt from the row's parity before the new parity is made, as
 * Linux 6.2+ verifies data during RMW: a stale or rotten column is never
 * folded into the parity, where it could no longer be mended. */
typedef void (*raid56_verify_fn)(void *ctx, uint64_t logical, const uint8_t *buf, size_t len,
				 bool *bad);
int raid56_write(sim_volume *vol, const struct ref_chunk *c, uint64_t logical, const void *buf,
		 uint64_t len, unsigned flags, raid56_verify_fn verify, void *ctx, char *err,
		 size_t errlen);
/* P (and Q for raid6) of k data columns of len bytes: cols[0..k-1] the data,
 * cols[k] P, cols[k+1] Q, each 32-byte aligned, len a multiple of 32; 0 or
 * ISA-L's failure. */
int raid56_parity(int k, bool raid6, size_t len, uint8_t **cols);

/* tree.c */
void cache_free_all(ref_fs *fs);
/* Takes the block at bytenr out of the cache (NULL when not cached). */
struct ref_block *cache_unlink(ref_fs *fs, uint64_t bytenr);
/* The cached block at bytenr, or NULL; nothing is read and no reference taken. */
const struct ref_block *cache_peek(const ref_fs *fs, uint64_t bytenr);
void cache_insert(ref_fs *fs, struct ref_block *b);
/* ref_read_block with the first key the parent's key pointer records for the
 * child (NULL: not checked; nor on a block with no items).  Generation, level
 * and first key are checked copy by copy: a copy that fails is skipped for the
 * next, and only a copy that passes is cached. */
int ref_read_child(ref_fs *fs, uint64_t bytenr, uint64_t gen, int level,
		   const struct ref_key *first_key, struct ref_block **out);
/* Validates a tree block image (checksum aside): header and item layout. */
const char *block_invalid(const ref_fs *fs, const uint8_t *data, uint64_t bytenr);
/* tree_check.c: the first item of a leaf the kernel's tree-checker rejects,
 * as a reason; NULL when it takes them all. */
const char *leaf_items_invalid(const ref_fs *fs, const uint8_t *data);
bool block_csum_ok(const ref_fs *fs, const uint8_t *data);

#endif
