/*
 * alloc.c - space: block groups and their free space in memory (loaded from
 * the free-space tree), tree-block and data allocation, pinning of freed
 * space until the commit that frees it is durable, the metadata reserve, and
 * new chunks when block groups fill up.
 */
#include "faults/points.h"
#include "ref/log/log_write.h"
#include "ref/mutant.h"
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static int bg_add(ref_fs *fs, uint64_t start, uint64_t len, uint64_t flags, uint64_t used)
{
	struct rw_state *rw = fs->rw;
	if (rw->nbgs == rw->bgs_cap) {
		size_t cap = rw->bgs_cap ? rw->bgs_cap * 2 : 16;
		void *p = realloc(rw->bgs, cap * sizeof(*rw->bgs));
		if (!p)
			return ref_fail(fs, ENOMEM, "out of memory");
		rw->bgs = p;
		rw->bgs_cap = cap;
	}
	size_t i = rw->nbgs;
	while (i > 0 && rw->bgs[i - 1].start > start) {
		rw->bgs[i] = rw->bgs[i - 1];
		i--;
	}
	rw->bgs[i] = (struct rw_bg){ .start = start, .len = len, .flags = flags, .used = used,
				     .cursor = start };
	rw->nbgs++;
	return 0;
}

static int used_out(ref_fs *fs, void *bg, uint64_t start, uint64_t len)
{
	(void)fs;
	return rset_remove(&((struct rw_bg *)bg)->free, start, len) ? -ENOMEM : 0;
}

/* Without a free-space tree (converted right after: fst_convert.c), the
 * free space of a block group is what the extent tree does not use, as the
 * kernel's caching thread finds it. */
static int free_from_extents(ref_fs *fs, struct rw_bg *bg)
{
	if (rset_add(&bg->free, bg->start, bg->len))
		return ref_fail(fs, ENOMEM, "out of memory");
	int r = extent_used_each(fs, bg->start, bg->len, used_out, bg);
	return r == -ENOMEM ? ref_fail(fs, ENOMEM, "out of memory") : r;
}

/* The free space of one block group as its free-space tree items say. */
static int load_free_space(ref_fs *fs, struct rw_bg *bg)
{
	struct ref_root root;
	int r = ref_find_root(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, &root);
	if (r)
		return r;
	struct ref_path p;
	struct ref_key k = { bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->len };
	if ((r = ref_search(fs, &root, &k, &p)) < 0)
		return r;
	const uint8_t *d;
	uint32_t size;
	if (r == 0)
		ref_path_item(&p, &k, &d, &size);
	if (r || k.objectid != bg->start || k.type != BTRFS_FREE_SPACE_INFO_KEY || k.offset != bg->len) {
		if (r == 0)
			ref_path_release(fs, &p);
		return ref_fail(fs, EUCLEAN, "block group %llu has no free-space info item",
				(unsigned long long)bg->start);
	}
	while ((r = ref_next(fs, &p)) == 0) {
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid >= bg->start + bg->len)
			break;
		if (k.offset > bg->start + bg->len - k.objectid) {
			r = ref_fail(fs, EUCLEAN, "free-space item (%llu %u %llu) runs past its block group",
				     (unsigned long long)k.objectid, k.type, (unsigned long long)k.offset);
			break;
		}
		if (k.type == BTRFS_FREE_SPACE_EXTENT_KEY) {
			if ((r = rset_add(&bg->free, k.objectid, k.offset)))
				break;
		} else if (k.type == BTRFS_FREE_SPACE_BITMAP_KEY) {
			uint64_t bits = k.offset / fs->sectorsize;
			if (size < (bits + 7) / 8) {
				r = ref_fail(fs, EUCLEAN, "free-space bitmap %llu is too short",
					     (unsigned long long)k.objectid);
				break;
			}
			for (uint64_t i = 0; i < bits && !r; i++)
				if (d[i / 8] & (1u << (i % 8)))
					r = rset_add(&bg->free, k.objectid + i * fs->sectorsize,
						     fs->sectorsize);
			if (r)
				break;
		}
	}
	if (r == 0)
		ref_path_release(fs, &p);
	return r < 0 ? r : 0;
}

/* The stripe units (64 KiB) that hold a superblock copy are never allocated;
 * the kernel excludes the same ranges (exclude_super_stripes), though the
 * free-space tree lists them as free. */
static int exclude_one(void *bg, uint64_t start, uint64_t len)
{
	return rset_remove(&((struct rw_bg *)bg)->free, start, len) ? -ENOMEM : 0;
}

/* The stripe units that hold a superblock copy are never allocated. */
static int exclude_supers(ref_fs *fs, const struct ref_chunk *c, struct rw_bg *bg)
{
	return chunk_super_units(c, exclude_one, bg) ? ref_fail(fs, ENOMEM, "out of memory") : 0;
}

static int load_devs(ref_fs *fs)
{
	struct rw_state *rw = fs->rw;
	struct ref_root root = rw_tree_find(fs, BTRFS_CHUNK_TREE_OBJECTID)->root;
	struct ref_path p;
	struct ref_key k = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, 0 };
	int r = ref_search(fs, &root, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid != BTRFS_DEV_ITEMS_OBJECTID || k.type != BTRFS_DEV_ITEM_KEY) {
			ref_path_release(fs, &p);
			break;
		}
		if (size < sizeof(struct btrfs_dev_item)) {
			ref_path_release(fs, &p);
			return ref_fail(fs, EUCLEAN, "device item %llu too small",
					(unsigned long long)k.offset);
		}
		void *np = realloc(rw->devs, (rw->ndevs + 1) * sizeof(*rw->devs));
		if (!np) {
			ref_path_release(fs, &p);
			return ref_fail(fs, ENOMEM, "out of memory");
		}
		rw->devs = np;
		const struct btrfs_dev_item *di = (const void *)d;
		/* Each commit copies the item into the device's superblocks. */
		if (memcmp(di->fsid, fs->meta_fsid, BTRFS_FSID_BYTES)) {
			ref_path_release(fs, &p);
			return ref_fail(fs, EROFS,
					"device item %llu names another file system (a seed device); "
					"seed devices are not supported for writing",
					(unsigned long long)k.offset);
		}
		struct rw_dev *dev = &rw->devs[rw->ndevs++];
		*dev = (struct rw_dev){ LE64(di->devid), LE64(di->total_bytes), LE64(di->bytes_used),
					false, *di, true };
		for (size_t i = 0; i < fs->ndevs; i++)
			if (fs->devs[i].devid == dev->devid)
				dev->missing = false;
		r = ref_next(fs, &p);
	}
	if (r < 0)
		return r;
	/* Chunks are placed on the devices of these items, and each commit
	 * writes a device's item into its superblocks: every device needs one. */
	for (size_t d = 0; d < fs->ndevs; d++) {
		bool found = false;
		for (size_t i = 0; i < rw->ndevs && !found; i++)
			found = rw->devs[i].devid == fs->devs[d].devid;
		if (!found)
			return ref_fail(fs, EUCLEAN, "device %llu (disk %d) has no device item in the chunk tree",
					(unsigned long long)fs->devs[d].devid, fs->devs[d].disk);
	}
	return 0;
}

int alloc_load(ref_fs *fs)
{
	struct rw_state *rw = fs->rw;
	int r = load_devs(fs);
	if (r)
		return r;
	struct ref_root bgroot;
	if ((r = ref_find_root(fs, rw->bg_tree, &bgroot)))
		return r;
	for (size_t i = 0; i < fs->nchunks; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		struct ref_path p;
		struct ref_key k;
		const uint8_t *d;
		uint32_t size;
		r = ref_find_first(fs, &bgroot, c->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, &p, &k, &d, &size);
		if (r == -ENOENT || (!r && (k.offset != c->length || size < 24))) {
			if (!r)
				ref_path_release(fs, &p);
			return ref_fail(fs, EUCLEAN, "chunk %llu has no matching block group item",
					(unsigned long long)c->logical);
		}
		if (r)
			return r;
		uint64_t used = le64(d);
		ref_path_release(fs, &p);
		if ((r = bg_add(fs, c->logical, c->length, c->type, used)))
			return r;
		struct rw_bg *bg = rw_bg_find(fs, c->logical);
		bool fst = LE64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE;
		if ((r = fst ? load_free_space(fs, bg) : free_from_extents(fs, bg)) ||
		    (r = exclude_supers(fs, c, bg)))
			return r;
	}
	/* The global reserve: what a commit and a deletion may need when
	 * everything else is full (the kernel sizes it from the trees' sizes;
	 * a fixed share of the metadata space is enough here). */
	uint64_t meta = 0;
	for (size_t i = 0; i < rw->nbgs; i++)
		if (rw->bgs[i].flags & BTRFS_BLOCK_GROUP_METADATA)
			meta += rw->bgs[i].len;
	uint64_t floor = (uint64_t)fs->nodesize * BTRFS_MAX_TREE_LEVEL * 16;
	rw->meta_reserve = meta / 16 > floor ? meta / 16 : floor;
	if (rw->meta_reserve > 512 * MIB)
		rw->meta_reserve = 512 * MIB;
	rw->dirty_limit = 64 * MIB;
	return 0;
}

int alloc_bg_new(ref_fs *fs, uint64_t start, uint64_t len, uint64_t flags)
{
	int r = bg_add(fs, start, len, flags, 0);
	if (r)
		return r;
	struct rw_bg *bg = rw_bg_find(fs, start);
	bg->new_bg = bg->dirty = true;
	if (rset_add(&bg->free, start, len))
		return ref_fail(fs, ENOMEM, "out of memory");
	return exclude_supers(fs, chunk_find(fs, start), bg);
}

static uint64_t space_type(uint64_t flags)
{
	return flags & (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM);
}

uint64_t alloc_kind(const ref_fs *fs, uint64_t type)
{
	if (LE64(fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS &&
	    type & (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA))
		return BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA;
	return type;
}

uint64_t alloc_free_bytes(ref_fs *fs, uint64_t type)
{
	type = alloc_kind(fs, type);
	uint64_t sum = 0;
	for (size_t i = 0; i < fs->rw->nbgs; i++)
		if (space_type(fs->rw->bgs[i].flags) == type && !fs->rw->bgs[i].ro)
			sum += fs->rw->bgs[i].free.bytes;
	return sum;
}

/* The first free range of at least min bytes (aligned) from the cursor on,
 * wrapping around once; up to want bytes of it. */
static bool bg_take(struct rw_bg *bg, uint64_t align, uint64_t want, uint64_t min, uint64_t *start,
		    uint64_t *len)
{
	for (int pass = 0; pass < 2; pass++) {
		uint64_t from = pass ? bg->start : bg->cursor;
		for (size_t i = 0; i < bg->free.n; i++) {
			uint64_t a = bg->free.r[i][0], b = bg->free.r[i][1];
			if (b <= from)
				continue;
			if (a < from)
				a = from;
			a = (a + align - 1) / align * align;
			if (a >= b || b - a < min)
				continue;
			uint64_t l = b - a < want ? (b - a) / min * min : want;
			*start = a;
			*len = l;
			rset_remove(&bg->free, a, l); /* shrinks a range: no allocation */
			bg->cursor = a + l;
			return true;
		}
	}
	return false;
}

static bool take(ref_fs *fs, uint64_t type, uint64_t align, uint64_t want, uint64_t min,
		 uint64_t *start, uint64_t *len)
{
	type = alloc_kind(fs, type);
	for (size_t i = 0; i < fs->rw->nbgs; i++) {
		struct rw_bg *bg = &fs->rw->bgs[i];
		if (space_type(bg->flags) == type && !bg->ro && bg->free.bytes >= min &&
		    bg_take(bg, align, want, min, start, len))
			return true;
	}
	return false;
}

int alloc_tree_block(ref_fs *fs, uint64_t owner, uint8_t level, uint64_t *bytenr)
{
	uint64_t type = owner == BTRFS_CHUNK_TREE_OBJECTID ? BTRFS_BLOCK_GROUP_SYSTEM
							  : BTRFS_BLOCK_GROUP_METADATA;
	uint64_t len;
	int e = FP_FAIL(FP_REF_ALLOC_TREE_BLOCK);
	if (e)
		return ref_fail(fs, e, "no tree block for tree %llu (fault point %s)",
				(unsigned long long)owner, FP_REF_ALLOC_TREE_BLOCK);
	/* nodesize-aligned, so that no tree block crosses a stripe boundary */
	if (!take(fs, type, fs->nodesize, fs->nodesize, fs->nodesize, bytenr, &len)) {
		int r = alloc_chunk(fs, type);
		if (r)
			return r;
		if (!take(fs, type, fs->nodesize, fs->nodesize, fs->nodesize, bytenr, &len))
			return ref_fail(fs, ENOSPC, "no space left for a tree block");
	}
	fs->rw->in_txn = true;
	return dref_tree(fs, *bytenr, level, owner, 0, +1, true);
}

int free_tree_block(ref_fs *fs, struct ref_block *b, uint64_t root)
{
	return free_tree_block_ref(fs, b, root, 0);
}

int free_tree_block_ref(ref_fs *fs, struct ref_block *b, uint64_t root, uint64_t parent)
{
	int r = dref_tree(fs, b->bytenr, b->level, root, parent, -1, false);
	if (r)
		return r;
	if (b->dirty) { /* never written: its space is free again at once */
		struct rw_bg *bg = rw_bg_find(fs, b->bytenr);
		if (bg && rset_add(&bg->free, b->bytenr, fs->nodesize))
			return ref_fail(fs, ENOMEM, "out of memory");
		rw_block_kill(fs, b);
		return 0;
	}
	if (MUTANT(EARLY_REUSE)) { /* broken on purpose: reusable before the commit is durable */
		struct rw_bg *bg = rw_bg_find(fs, b->bytenr);
		if (bg) { /* and handed out next, as a LIFO allocator would */
			rset_add(&bg->free, b->bytenr, fs->nodesize);
			bg->cursor = b->bytenr;
		}
		return 0;
	}
	alloc_pin(fs, b->bytenr, fs->nodesize);
	return 0;
}

/* Data space as btrfs_reserve_extent finds it: the whole size contiguous
 * where there is such a range, else half of it (down to min) and so on, so
 * that a large write or a defragmentation gets one extent wherever free
 * space allows, not the first gap's worth. */
static bool take_data(ref_fs *fs, uint64_t want, uint64_t min, uint64_t *start, uint64_t *len)
{
	uint64_t ss = fs->sectorsize;
	for (uint64_t n = want;; n = n / 2 / ss * ss < min ? min : n / 2 / ss * ss) {
		if (take(fs, BTRFS_BLOCK_GROUP_DATA, ss, n, n, start, len))
			return true;
		if (n <= min)
			return false;
	}
}

int alloc_data(ref_fs *fs, uint64_t want, uint64_t min, uint64_t *start, uint64_t *len)
{
	int e = FP_FAIL(FP_REF_ALLOC_DATA);
	if (e)
		return ref_fail(fs, e, "no data extent of %llu bytes (fault point %s)",
				(unsigned long long)want, FP_REF_ALLOC_DATA);
	if (take_data(fs, want, min, start, len))
		return 0;
	int r = alloc_chunk(fs, BTRFS_BLOCK_GROUP_DATA);
	if (r)
		return r;
	if (take_data(fs, want, min, start, len))
		return 0;
	return ref_fail(fs, ENOSPC, "no data space left");
}

int alloc_log_block(ref_fs *fs, uint64_t *bytenr)
{
	uint64_t len;
	/* The global reserve stays for deletions, and a log never makes a chunk. */
	if (alloc_free_bytes(fs, BTRFS_BLOCK_GROUP_METADATA) < fs->rw->meta_reserve + fs->nodesize ||
	    !take(fs, BTRFS_BLOCK_GROUP_METADATA, fs->nodesize, fs->nodesize, fs->nodesize, bytenr,
		  &len))
		return -ENOSPC;
	return 0;
}

void alloc_log_release(ref_fs *fs, uint64_t bytenr)
{
	alloc_unreserve_data(fs, bytenr, fs->nodesize); /* (the same return of space, any type) */
}

void alloc_unreserve_data(ref_fs *fs, uint64_t start, uint64_t len)
{
	struct rw_bg *bg = rw_bg_find(fs, start);
	if (bg)
		rset_add(&bg->free, start, len);
}

void alloc_pin(ref_fs *fs, uint64_t start, uint64_t len)
{
	/* Out of memory here only delays reuse: the space stays unallocatable. */
	rset_add(&fs->rw->pinned, start, len);
}

void alloc_unpin_all(ref_fs *fs)
{
	struct rw_state *rw = fs->rw;
	for (size_t i = 0; i < rw->pinned.n; i++) {
		uint64_t a = rw->pinned.r[i][0], b = rw->pinned.r[i][1];
		while (a < b) {
			struct rw_bg *bg = rw_bg_find(fs, a);
			if (!bg)
				break;
			uint64_t end = bg->start + bg->len < b ? bg->start + bg->len : b;
			rset_add(&bg->free, a, end - a);
			a = end;
		}
	}
	rset_free(&rw->pinned);
}

static uint64_t pinned_bytes(ref_fs *fs, uint64_t type)
{
	type = alloc_kind(fs, type);
	uint64_t sum = 0;
	for (size_t i = 0; i < fs->rw->pinned.n; i++) {
		struct rw_bg *bg = rw_bg_find(fs, fs->rw->pinned.r[i][0]);
		if (bg && space_type(bg->flags) == type)
			sum += fs->rw->pinned.r[i][1] - fs->rw->pinned.r[i][0];
	}
	return sum;
}

/* Frees pinned space by committing, when that would help. */
static int reclaim(ref_fs *fs, uint64_t type, bool *tried)
{
	if (*tried || !fs->rw->in_txn || pinned_bytes(fs, type) == 0)
		return -ENOSPC;
	*tried = true;
	return rw_commit(fs);
}

/* Makes `need` bytes of a kind allocatable: new chunks first, then a commit
 * that releases pinned space. */
static int reserve(ref_fs *fs, uint64_t type, uint64_t need, const char *what, const char *point)
{
	int e = FP_FAIL(point);
	if (e)
		return ref_fail(fs, e, "reserving %llu bytes of %s space (fault point %s)",
				(unsigned long long)need, what, point);
	bool committed = false;
	while (alloc_free_bytes(fs, type) < need) {
		int r = alloc_chunk(fs, type);
		if (r == -ENOSPC) {
			char why[sizeof(fs->err)]; /* the chunk allocator's reason */
			snprintf(why, sizeof(why), "%s", fs->err);
			r = reclaim(fs, type, &committed);
			if (r == -ENOSPC)
				return ref_fail(fs, ENOSPC, "no %s space left: %s", what, why);
		}
		if (r)
			return r;
	}
	return 0;
}

int alloc_reserve_meta(ref_fs *fs, uint64_t bytes, bool use_reserve)
{
	return reserve(fs, BTRFS_BLOCK_GROUP_METADATA,
		       bytes + (use_reserve ? 0 : fs->rw->meta_reserve), "metadata",
		       FP_REF_ALLOC_RESERVE_META);
}

int alloc_reserve_data(ref_fs *fs, uint64_t bytes)
{
	return reserve(fs, BTRFS_BLOCK_GROUP_DATA, bytes, "data", FP_REF_ALLOC_RESERVE_DATA);
}
