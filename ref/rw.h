/*
 * rw.h - the write path's internal state (ref/ only): the running
 * transaction, the trees it changes, block groups and their free space,
 * delayed extent references, and the B-tree operations with copy-on-write.
 *
 * The model is the kernel's.  A tree block that the last durable commit
 * references is never written again: the first change in a transaction copies
 * it to a newly allocated block (COW) and frees the old one.  Freed space is
 * pinned until the commit that frees it is durable.  Reference-count changes
 * are collected as delayed refs and applied to the extent tree at commit,
 * together with the free-space tree and block-group items, until nothing is
 * left to apply.
 */
#ifndef BTRSIM_REF_RW_H
#define BTRSIM_REF_RW_H

#include "ref/internal.h"
#include "ref/tree/u64map.h"
#include "ref/vfs.h"

#include <stdbool.h>

#define HDR_SIZE sizeof(struct btrfs_header_disk)
#define ITEM_SIZE sizeof(struct btrfs_item_disk)
#define PTR_SIZE sizeof(struct btrfs_key_ptr_disk)

/* ---- leaf.c: items inside one block (no I/O, no COW) ---- */

uint32_t blk_nritems(const uint8_t *d);
uint8_t blk_level(const uint8_t *d);
void blk_key(const uint8_t *d, int slot, struct ref_key *k);
void blk_set_key(uint8_t *d, int slot, const struct ref_key *k);
uint32_t leaf_space(uint32_t nodesize);
uint32_t leaf_free(const uint8_t *d, uint32_t nodesize);
uint32_t leaf_used(const uint8_t *d, uint32_t nodesize); /* item headers and data */
uint8_t *leaf_data(uint8_t *d, int slot);
uint32_t leaf_item_size(const uint8_t *d, int slot);
/* Makes room for an item of `size` bytes at slot (the caller checked the
 * space); its data is zeroed. */
void leaf_insert(uint8_t *d, uint32_t nodesize, int slot, const struct ref_key *k, uint32_t size);
void leaf_delete(uint8_t *d, uint32_t nodesize, int slot, int nr);
/* Grows or shrinks item `slot` at its end. */
void leaf_resize(uint8_t *d, uint32_t nodesize, int slot, uint32_t size);
/* Shrinks item `slot` by dropping bytes from its front. */
void leaf_chop_front(uint8_t *d, uint32_t nodesize, int slot, uint32_t drop);
/* Appends items [slot, slot+nr) of src at the end of dst (the caller checked the space). */
void leaf_append(uint8_t *dst, const uint8_t *src, uint32_t nodesize, int slot, int nr);
uint32_t node_max_ptrs(uint32_t nodesize);
uint64_t node_ptr(const uint8_t *d, int slot, uint64_t *gen);
void node_set_ptr(uint8_t *d, int slot, uint64_t bytenr, uint64_t gen);
void node_insert(uint8_t *d, int slot, const struct ref_key *k, uint64_t bytenr, uint64_t gen);
void node_delete(uint8_t *d, int slot, int nr);
void node_append(uint8_t *dst, const uint8_t *src, int slot, int nr);
/* Whether child `slot` of node d, in a deleted tree the cleaner has dropped
 * up to drop_key (its root item's drop_progress), is gone already: it is when
 * the next child's key is at most drop_key, at any level.  (The cleaner drops
 * keys in order: everything before drop_key is dropped, the nodes on the way
 * to drop_key are kept, and drop_level is only where drop_key was taken.) */
/* Whether a kernel's balance moved the block (BTRFS_HEADER_FLAG_RELOC): though newer
 * than its tree's last snapshot, it may be shared. */
bool blk_reloc(const uint8_t *d);
bool node_child_dropped(const uint8_t *d, int slot, const struct ref_key *drop_key);

/* ---- Ranges: a sorted set of disjoint [start, end) byte ranges ---- */

struct rset {
	uint64_t (*r)[2];
	size_t n, cap;
	uint64_t bytes;
};
int rset_add(struct rset *s, uint64_t start, uint64_t len);    /* merges neighbours */
int rset_remove(struct rset *s, uint64_t start, uint64_t len); /* splits; the range may be partly absent */
bool rset_contains(const struct rset *s, uint64_t start, uint64_t len);
void rset_free(struct rset *s);

/* ---- Block groups and allocation (alloc.c) ---- */

struct rw_bg {
	uint64_t start, len, flags;
	uint64_t used;    /* as the extent tree says, updated when delayed refs run */
	bool dirty;       /* its BLOCK_GROUP_ITEM needs writing */
	bool new_bg;      /* created in this transaction: item and free-space info to insert */
	struct rset free; /* allocatable now: not used, not allocated or pinned in this transaction */
	uint64_t cursor;  /* next-fit allocation point */
	bool ro;          /* being emptied by a balance: nothing new goes there */
};

/* A chunk allocated in this transaction: mapped at once, its items (chunk,
 * device extents, block group, free-space info) written at commit. */
/* An inode open in a process of a FUSE mount, and how often (held.c). */
struct rw_held {
	struct ref_ino ino;
	uint32_t count;
	bool orphaned; /* its last name went while it was held */
};

struct rw_pending_chunk {
	uint64_t logical, length, type;
	uint64_t stripe_size; /* bytes on each device (the device extents' length) */
	int nstripes;
	uint64_t devid[SIM_MAX_DISKS], physical[SIM_MAX_DISKS];
	uint32_t item_size;
	uint8_t item[sizeof(struct btrfs_chunk) + (SIM_MAX_DISKS - 1) * sizeof(struct btrfs_stripe)];
};

struct rw_dev {
	uint64_t devid, total_bytes, bytes_used;
	bool dirty; /* its DEV_ITEM needs writing */
	struct btrfs_dev_item item; /* as in the chunk tree (bytes_used kept current) */
	bool missing; /* mounted degraded without it: no new chunk goes there */
	bool leaving; /* being removed: no new chunk goes there either */
};

/* A version-4 uuid drawn from the file system's state (fsid, `id`, the
 * transaction, the clock), so that a run is reproducible (new subvolumes,
 * added devices). */
void rw_new_uuid(ref_fs *fs, uint64_t id, uint8_t out[BTRFS_UUID_SIZE]);

/* device_remove.c: zeroes every superblock copy of sim disk `disk`, which
 * becomes a spare (a disk no longer the device it was). */
void rw_wipe_supers(ref_fs *fs, int disk);
/* chunk_alloc.c: the fewest devices a profile's chunks are made on. */
int chunk_profile_devs_min(uint64_t profile);
/* The devices new chunks may go to: present, and not being removed. */
size_t chunk_alloc_devices(ref_fs *fs);

/* devstats.c: changed counters into the dev tree (a commit's settle round). */
int devstats_settle(ref_fs *fs, bool *work);

/* ---- Delayed references (delayed.c) ---- */

/* One back reference and the change of its count.  Keyed (implicit) refs
 * name the tree: TREE_BLOCK_REF (root) or EXTENT_DATA_REF (root, ino,
 * offset); shared (full) refs name the parent block: SHARED_BLOCK_REF or
 * SHARED_DATA_REF (parent != 0). */
struct dref_ref {
	uint64_t root, ino, offset;
	uint64_t parent;
	int64_t delta;
};

struct dref {
	uint64_t bytenr, num_bytes;
	bool tree;            /* a tree block (METADATA_ITEM) or a data extent */
	bool is_new;          /* allocated in this transaction: no extent item yet */
	uint8_t level;        /* tree blocks */
	uint64_t set_flags;   /* extent flags to add (FULL_BACKREF) */
	uint64_t gen;         /* a new extent item's generation (0: the transaction's) */
	int64_t total;        /* the sum of the changes: the extent item's refs move by it */
	struct dref_ref *refs; /* changes per back reference */
	size_t nrefs, refs_cap;
};

/* ---- Trees changed in this transaction ---- */

struct rw_tree {
	struct ref_root root;
	bool dirty; /* the root moved: its ROOT_ITEM (or the superblock) needs updating */
	uint64_t last_snapshot; /* blocks this old may be shared with a snapshot */
	bool rdonly;            /* a read-only snapshot: every change is EROFS */
	uint64_t next_ino;      /* the next free inode number (0: not known yet) */
	/* Directory inode -> its next DIR_INDEX, as the kernel's in-memory
	 * index_cnt: an index freed by a removal is not given again while
	 * mounted (a log of this transaction may name the old entry by it). */
	struct u64map dir_index;
};

struct rw_state {
	uint64_t transid; /* the running transaction (last commit + 1) */
	bool in_txn;      /* something has changed since the last commit */
	struct ref_block **dirty; /* blocks to write at commit */
	size_t ndirty, dirty_cap;
	struct rw_tree **trees;
	size_t ntrees, trees_cap;
	struct rw_bg *bgs; /* sorted by start */
	size_t nbgs, bgs_cap;
	struct dref *drefs; /* unsorted; idx maps bytenr to index+1 */
	size_t ndrefs, drefs_cap;
	struct u64map dref_idx;
	struct rset pinned; /* freed in this transaction: reusable once it is durable */
	bool fst_converted; /* this mount built the free-space tree (fst_convert.c) */
	uint64_t orphans_cleaned; /* orphan items this mount removed (orphan.c) */
	uint64_t relocs_dropped;  /* relocation trees this mount dropped (reloc_recover.c) */
	bool orphans_done;        /* orphan.c ran (at the first change of the mount) */
	uint32_t umask;     /* applied to new inodes' modes (ref_umask) */
	uint32_t uid, gid;  /* new inodes' owner (ref_creds) */
	struct rw_pending_chunk *pending;
	size_t npending, pending_cap;
	struct rw_dev *devs;
	size_t ndevs;
	uint64_t bg_tree;   /* the tree holding BLOCK_GROUP_ITEMs */
	uint64_t meta_reserve; /* the global reserve: metadata only deletions may use */
	uint64_t dirty_limit;  /* dirty metadata bytes that force a commit */
	uint64_t time_ns;      /* the clock for timestamps */
	bool realtime;         /* ref_mount_opts.realtime: time_ns follows the host's clock */
	uint64_t commits;
	struct ref_block **zombies; /* replaced cache entries still referenced by a path */
	size_t nzombies, zombies_cap;
	bool failed; /* a commit or an operation failed half-way: read-only now */
	bool orphans_pending; /* the root tree may hold an ORPHAN_ITEM: the cleaner looks */
	struct rw_held *held; /* inodes open in a process (held.c: ref_hold) */
	size_t nheld, held_cap;
	uint64_t next_subvol_id; /* ids handed out in this mount are not reused (0: none yet) */
	uint64_t mods;     /* tree changes so far (an operation that fails after one aborts) */
	uint64_t op_mark;  /* mods when the running operation began */
	uint8_t chunk_tree_uuid[BTRFS_UUID_SIZE]; /* every tree block header carries it */
	struct qg_state *qg; /* quota groups (qgroup.h); NULL when quotas are off */
	/* A balance converting: the profile new chunks of each kind take
	 * (data, metadata, system; 0: none, else the profile bits with
	 * BTRFS_AVAIL_ALLOC_BIT_SINGLE as the mark), as the kernel's restripe
	 * target. */
	uint64_t convert[3];
	bool treelog;              /* fsync logs (not ref_mount_opts.notreelog) */
	/* The mount's compress= / compress-force= (ref/compress/): algorithm
	 * (0: none), level (0: default), force. */
	uint8_t compress;
	int8_t compress_level;
	bool compress_force;
	/* A defragmentation under way (its rewrites are not kept from
	 * compression by the inode's PREALLOC flag, as should_nocow), with -c
	 * or --nocomp (defrag_compress of the kernel's inode): the algorithm and
	 * level its writes use, or none at all (REF_DEFRAG_NOCOMP); 0: neither. */
	bool defragging;
	uint8_t defrag_compress;
	int8_t defrag_level;
	struct log_state *log;     /* this transaction's fsync log (log_write.h); NULL: none */
	/* A name change the log cannot follow (log_names.c), or no memory to
	 * note one: the next fsync commits instead, counted under the reason. */
	bool log_must_commit;
	enum ref_log_full log_must_commit_why;
	struct ref_log_stats log_stats;
};

/* rw.c (the mounted state) */
struct rw_tree *rw_tree_find(ref_fs *fs, uint64_t id); /* NULL when not loaded */
/* The tree, loaded from its root item when needed: 0 or -errno. */
int rw_tree_get(ref_fs *fs, uint64_t id, struct rw_tree **out);
/* Forgets a tree whose root item is gone (a deleted subvolume, cleaned). */
void rw_tree_forget(ref_fs *fs, uint64_t id);
/* Registers a tree new in this transaction (its root item is the caller's). */
int rw_tree_add(ref_fs *fs, const struct ref_root *root, uint64_t last_snapshot,
		struct rw_tree **out);
int rw_init(ref_fs *fs);
void rw_free(ref_fs *fs);
struct rw_bg *rw_bg_find(ref_fs *fs, uint64_t logical);
/* A new block in the cache, dirty, at bytenr (any stale entry replaced). */
struct ref_block *rw_block_new(ref_fs *fs, uint64_t bytenr);
/* A block freed in the transaction that made it: never written. */
void rw_block_kill(ref_fs *fs, struct ref_block *b);
int rw_check_writable(ref_fs *fs);

/* alloc.c */
int alloc_load(ref_fs *fs);
/* A tree block for tree `owner`; records the delayed ref. */
int alloc_tree_block(ref_fs *fs, uint64_t owner, uint8_t level, uint64_t *bytenr);
/* Frees a tree block whose last reference, from tree `root`, goes: the
 * delayed ref, and its space pinned (or back to free at once when it never
 * reached a commit). */
int free_tree_block(ref_fs *fs, struct ref_block *b, uint64_t root);
/* The same for a last reference through a parent with full back references
 * (parent != 0: a SHARED_BLOCK_REF). */
int free_tree_block_ref(ref_fs *fs, struct ref_block *b, uint64_t root, uint64_t parent);
/* Data space: up to `want` bytes contiguous, at least `min`. */
int alloc_data(ref_fs *fs, uint64_t want, uint64_t min, uint64_t *start, uint64_t *len);
/* Returns data space allocated in this transaction that never got a reference. */
void alloc_unreserve_data(ref_fs *fs, uint64_t start, uint64_t len);
void alloc_pin(ref_fs *fs, uint64_t start, uint64_t len);
void alloc_unpin_all(ref_fs *fs);
uint64_t alloc_free_bytes(ref_fs *fs, uint64_t type);
/* The kind of block group that serves allocations of type: DATA|METADATA
 * for either on a file system of mixed block groups, else type. */
uint64_t alloc_kind(const ref_fs *fs, uint64_t type);
/* Makes sure `bytes` of metadata can be allocated (and the global reserve
 * stays, unless use_reserve): new chunks, or a commit to unpin; -ENOSPC. */
int alloc_reserve_meta(ref_fs *fs, uint64_t bytes, bool use_reserve);
int alloc_reserve_data(ref_fs *fs, uint64_t bytes);
int alloc_chunk(ref_fs *fs, uint64_t type);
/* A block group created in this transaction (chunk_alloc.c). */
int alloc_bg_new(ref_fs *fs, uint64_t start, uint64_t len, uint64_t flags);

/* delayed.c */
/* A tree block's reference from tree `root` (parent 0) or from the block at
 * `parent` (a shared ref) changes by delta. */
int dref_tree(ref_fs *fs, uint64_t bytenr, uint8_t level, uint64_t root, uint64_t parent,
	      int delta, bool is_new);
/* Adds FULL_BACKREF (or other flags) to a tree block's extent item. */
int dref_tree_flags(ref_fs *fs, uint64_t bytenr, uint8_t level, uint64_t flags);
/* The generation a new tree block's extent item records (a block a balance
 * moved keeps its own). */
int dref_tree_gen(ref_fs *fs, uint64_t bytenr, uint8_t level, uint64_t gen);
int dref_data(ref_fs *fs, uint64_t bytenr, uint64_t num_bytes, uint64_t root, uint64_t ino,
	      uint64_t offset, int64_t delta, bool is_new);
int dref_data_shared(ref_fs *fs, uint64_t bytenr, uint64_t num_bytes, uint64_t parent,
		     int64_t delta);
/* The changes pending for an extent: the sum of reference changes, the flags
 * to add, and whether it was allocated in this transaction. */
void dref_pending(ref_fs *fs, uint64_t bytenr, int64_t *delta, uint64_t *flags, bool *is_new);
/* Applies every delayed ref to the extent tree; returns how many ran. */
long dref_run(ref_fs *fs);
void dref_free_all(ref_fs *fs);

/* fst.c: the free-space tree follows extent items as they come and go. */
int fst_add(ref_fs *fs, uint64_t start, uint64_t len);
int fst_remove(ref_fs *fs, uint64_t start, uint64_t len);
int fst_add_bg(ref_fs *fs, struct rw_bg *bg);

/* fst_convert.c: a file system without the free-space tree converted to
 * it, in a commit of its own at mount (as the kernel's space_cache=v2). */
int fst_convert(ref_fs *fs);
/* Calls fn for each extent item (data and tree blocks) that starts in
 * [start, start + len), from the extent tree as it stands. */
int extent_used_each(ref_fs *fs, uint64_t start, uint64_t len,
		     int (*fn)(ref_fs *fs, void *ctx, uint64_t start, uint64_t len), void *ctx);

/* ctree.c: B-tree changes with copy-on-write. */
/* Positions path at key (0: found) or where it would go (1), COWing the blocks
 * on the way when cow; ins_len > 0 makes room for that many bytes (item
 * header included) in the leaf. */
int bt_search(ref_fs *fs, struct rw_tree *t, const struct ref_key *key, struct ref_path *path,
	      int ins_len, bool cow);
/* Inserts an item (zeroed data); path left on it. -EEXIST when the key exists. */
int bt_insert(ref_fs *fs, struct rw_tree *t, const struct ref_key *key, uint32_t size,
	      struct ref_path *path);
int bt_insert_data(ref_fs *fs, struct rw_tree *t, const struct ref_key *key, const void *data,
		   uint32_t size);
/* Deletes nr items from the path's slot (path released). */
int bt_delete(ref_fs *fs, struct rw_tree *t, struct ref_path *path, int nr);
/* Finds key exactly and COWs its path: 0, or -ENOENT. */
int bt_lookup_cow(ref_fs *fs, struct rw_tree *t, const struct ref_key *key, struct ref_path *path);
int bt_delete_key(ref_fs *fs, struct rw_tree *t, const struct ref_key *key);
/* Resizes the item at key (at its end), path left on it. */
int bt_resize(ref_fs *fs, struct rw_tree *t, const struct ref_key *key, uint32_t size,
	      struct ref_path *path);
/* Changes the key of the item under a COWed path (order must hold). */
void bt_set_key(struct ref_path *path, const struct ref_key *k);
uint8_t *bt_item(struct ref_path *path, uint32_t *size);
/* Appends bytes to the item at key, creating it when absent; -EOVERFLOW,
 * with nothing changed, when it would outgrow a leaf. */
int bt_item_append(ref_fs *fs, struct rw_tree *t, const struct ref_key *k, const void *data,
		   uint32_t len);
/* Removes bytes [off, off+len) of the item at key (the item when nothing is left). */
int bt_item_cut(ref_fs *fs, struct rw_tree *t, const struct ref_key *k, uint32_t off, uint32_t len);
/* The key and size of the first item >= key (or with `le` the last <= key),
 * read-only: 0, 1 when there is none, or -errno. */
int bt_peek(ref_fs *fs, const struct ref_root *root, const struct ref_key *key, bool le,
	    struct ref_key *got, uint32_t *size);
/* The largest item a leaf holds. */
uint32_t bt_max_item(const ref_fs *fs);
/* A new tree `id`: one empty leaf (its root item is the caller's). */
int bt_new_tree(ref_fs *fs, uint64_t id, struct rw_tree **out);
/* The same with its ROOT_ITEM in the root tree, as btrfs_create_tree makes
 * one for a tree of the file system (quota, free-space). */
int bt_new_tree_rooted(ref_fs *fs, uint64_t id, struct rw_tree **out);
/* A snapshot of src as tree `id`: src's root is COWed, copied as id's root
 * (a new block), and everything below gains a reference from id. */
int bt_snapshot_root(ref_fs *fs, struct rw_tree *src, uint64_t id, struct rw_tree **out);

/* share.c: tree blocks shared between a subvolume and its snapshots. */
/* The references and extent flags of a tree block, pending changes included. */
int share_info(ref_fs *fs, uint64_t bytenr, uint8_t level, uint64_t *refs, uint64_t *flags);
/* The same, the count as it stands, zero or less without complaint (a block
 * a balance moved, all of whose references went to its copy). */
int share_refs(ref_fs *fs, uint64_t bytenr, uint8_t level, int64_t *refs, uint64_t *flags);
/* Changes by delta the references block b holds on its children (tree
 * blocks in a node, data extents in a leaf): shared refs from b when full,
 * else keyed refs of b's owner (the kernel's btrfs_inc_ref/btrfs_dec_ref). */
/* The same for one slot of b (a child pointer, or a file extent item). */
int share_slot(ref_fs *fs, const struct ref_block *b, int slot, bool full, int delta);
int share_children(ref_fs *fs, const struct ref_block *b, bool full, int delta);
/* Switches b to full back references: its children referenced by b itself
 * rather than by its owner, its extent flagged FULL_BACKREF (the kernel's
 * btrfs_inc_ref(full), btrfs_dec_ref(keyed), set_disk_extent_flags). */
int share_make_full(ref_fs *fs, const struct ref_block *b);
/* The reference bookkeeping of copying block b of tree t to cow (the
 * kernel's update_ref_for_cow); *last tells whether t held b's last
 * reference, so that b is to be freed rather than just dropped by t. */
int share_cow(ref_fs *fs, struct rw_tree *t, struct ref_block *b, struct ref_block *cow,
	      bool *last);

/* cleaner.c: deleted subvolumes freed a step at a time. */
/* 1 when a deleted subvolume waits for the cleaner, 0 when none, or -errno. */
int cleaner_pending(ref_fs *fs);
/* Frees one more part of the first deleted subvolume (all of it when small). */
int cleaner_step(ref_fs *fs);
/* Frees the whole relocation tree (TREE_RELOC) of subvolume `subvol` that an
 * interrupted balance left, with its root item (none: nothing to do). */
int cleaner_drop_reloc(ref_fs *fs, uint64_t subvol);

/* reloc.c: empties block group `start` (balance, device remove): its data
 * and tree blocks moved to other groups (committed), then the group removed
 * (bg_remove); what moved is added to *st (relocated counts the group).  0,
 * or -errno with the group left partly emptied. */
struct ref_balance_stats;
int reloc_block_group(ref_fs *fs, uint64_t start, struct ref_balance_stats *st);
/* The chunks' logical addresses, highest first, as the kernel visits them
 * (free *at): 0 or -ENOMEM. */
int reloc_chunk_order(ref_fs *fs, uint64_t **at, size_t *n);
/* bg_remove.c: removes an empty block group and its chunk (block group
 * item, free-space info, chunk item, device extents, the superblock's
 * system array) and commits. */
int bg_remove(ref_fs *fs, uint64_t start);

/* commit.c */
int rw_commit(ref_fs *fs);
/* Commits when the dirty metadata passed its limit. */
int rw_maybe_commit(ref_fs *fs);

#endif
