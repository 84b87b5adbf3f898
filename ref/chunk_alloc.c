/*
 * chunk_alloc.c - new chunks when the block groups of a kind are full: a
 * device range for each stripe, the chunk mapped at once, and the block
 * group usable at once; the items that record them (chunk item, device
 * extents, device item usage, block group item, free-space info) are written
 * at commit, as the kernel's pending block groups are.
 *
 * Profiles with one stripe per copy are allocated here: SINGLE, DUP, RAID1,
 * RAID1C3 and RAID1C4.  Striped profiles (RAID0, RAID10, RAID5/6) are not:
 * such a file system returns ENOSPC once its chunks are full.
 */
#include "faults/points.h"
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/* Used ranges of one device: its device extents, pending chunks, the first
 * MiB and the superblock copies. */
static int dev_used(ref_fs *fs, uint64_t devid, uint64_t total, struct rset *used)
{
	int r = rset_add(used, 0, MIB);
	for (int m = 0; !r && m < BTRFS_SUPER_MIRRORS; m++)
		if (btrfs_super_offset(m) < total)
			r = rset_add(used, btrfs_super_offset(m), BTRFS_SUPER_SIZE);
	struct rw_state *rw = fs->rw;
	for (size_t i = 0; !r && i < rw->npending; i++)
		for (int s = 0; s < rw->pending[i].nstripes && !r; s++)
			if (rw->pending[i].devid[s] == devid)
				r = rset_add(used, rw->pending[i].physical[s], rw->pending[i].length);
	if (r)
		return ref_fail(fs, ENOMEM, "out of memory");
	struct rw_tree *dt;
	if ((r = rw_tree_get(fs, BTRFS_DEV_TREE_OBJECTID, &dt)))
		return r;
	struct ref_path p;
	struct ref_key k = { devid, BTRFS_DEV_EXTENT_KEY, 0 };
	r = ref_search(fs, &dt->root, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid != devid || k.type != BTRFS_DEV_EXTENT_KEY) {
			ref_path_release(fs, &p);
			break;
		}
		if (size < sizeof(struct btrfs_dev_extent)) {
			ref_path_release(fs, &p);
			return ref_fail(fs, EUCLEAN, "device extent %llu too small",
					(unsigned long long)k.offset);
		}
		if ((r = rset_add(used, k.offset, le64(d + offsetof(struct btrfs_dev_extent, length))))) {
			ref_path_release(fs, &p);
			return ref_fail(fs, ENOMEM, "out of memory");
		}
		r = ref_next(fs, &p);
	}
	return r < 0 ? r : 0;
}

/* The largest hole (and the first one of at least `want`) below total. */
static void holes(const struct rset *used, uint64_t total, uint64_t want, uint64_t *best,
		  uint64_t *best_len, uint64_t *fit)
{
	*best_len = 0;
	*fit = UINT64_MAX;
	uint64_t at = 0;
	for (size_t i = 0; i <= used->n; i++) {
		uint64_t end = i < used->n ? used->r[i][0] : total;
		if (end > total)
			end = total;
		if (end > at) {
			uint64_t len = (end - at) / BTRFS_STRIPE_LEN_DEFAULT * BTRFS_STRIPE_LEN_DEFAULT;
			uint64_t a = (at + BTRFS_STRIPE_LEN_DEFAULT - 1) / BTRFS_STRIPE_LEN_DEFAULT *
				     BTRFS_STRIPE_LEN_DEFAULT;
			if (a < end)
				len = (end - a) / BTRFS_STRIPE_LEN_DEFAULT * BTRFS_STRIPE_LEN_DEFAULT;
			else
				len = 0;
			if (len > *best_len) {
				*best_len = len;
				*best = a;
			}
			if (len >= want && *fit == UINT64_MAX)
				*fit = a;
		}
		if (i < used->n && used->r[i][1] > at)
			at = used->r[i][1];
	}
}

static int copies_of(uint64_t profile)
{
	switch (profile) {
	case 0: return 1;
	case BTRFS_BLOCK_GROUP_DUP: return 2;
	case BTRFS_BLOCK_GROUP_RAID1: return 2;
	case BTRFS_BLOCK_GROUP_RAID1C3: return 3;
	case BTRFS_BLOCK_GROUP_RAID1C4: return 4;
	default: return 0;
	}
}

struct dev_space {
	struct rw_dev *dev;
	uint64_t best, best_len, fit;
	struct rset used;
};

static void build_item(ref_fs *fs, struct rw_pending_chunk *pc)
{
	memset(pc->item, 0, sizeof(pc->item));
	struct btrfs_chunk *ci = (void *)pc->item;
	ci->length = htole64(pc->length);
	ci->owner = htole64(BTRFS_EXTENT_TREE_OBJECTID);
	ci->stripe_len = htole64(BTRFS_STRIPE_LEN_DEFAULT);
	ci->type = htole64(pc->type);
	ci->io_align = htole32(BTRFS_STRIPE_LEN_DEFAULT);
	ci->io_width = htole32(BTRFS_STRIPE_LEN_DEFAULT);
	ci->sector_size = htole32(fs->sectorsize);
	ci->num_stripes = htole16((uint16_t)pc->nstripes);
	ci->sub_stripes = htole16(1);
	for (int s = 0; s < pc->nstripes; s++) {
		struct btrfs_stripe *st = &ci->stripe + s;
		st->devid = htole64(pc->devid[s]);
		st->offset = htole64(pc->physical[s]);
		for (size_t d = 0; d < fs->ndevs; d++)
			if (fs->devs[d].devid == pc->devid[s])
				memcpy(st->dev_uuid, fs->devs[d].uuid, BTRFS_UUID_SIZE);
	}
	pc->item_size = (uint32_t)(sizeof(*ci) + (pc->nstripes - 1) * sizeof(struct btrfs_stripe));
}

static int cmp_space(const void *a, const void *b)
{
	const struct dev_space *x = a, *y = b;
	if (x->best_len != y->best_len)
		return x->best_len > y->best_len ? -1 : 1;
	return x->dev->devid < y->dev->devid ? -1 : x->dev->devid > y->dev->devid;
}

/* Places the stripes of a chunk of up to `want` bytes; 0 or -ENOSPC. */
static int place(ref_fs *fs, uint64_t profile, uint64_t want, struct rw_pending_chunk *pc)
{
	struct rw_state *rw = fs->rw;
	int copies = copies_of(profile), r = 0;
	struct dev_space *sp = calloc(rw->ndevs, sizeof(*sp));
	if (!sp)
		return ref_fail(fs, ENOMEM, "out of memory");
	for (size_t i = 0; i < rw->ndevs && !r; i++) {
		sp[i].dev = &rw->devs[i];
		r = dev_used(fs, rw->devs[i].devid, rw->devs[i].total_bytes, &sp[i].used);
		holes(&sp[i].used, rw->devs[i].total_bytes,
		      profile == BTRFS_BLOCK_GROUP_DUP ? 2 * want : want, &sp[i].best, &sp[i].best_len,
		      &sp[i].fit);
	}
	if (!r) {
		qsort(sp, rw->ndevs, sizeof(*sp), cmp_space);
		pc->nstripes = copies;
		if (profile == BTRFS_BLOCK_GROUP_DUP) { /* both copies in one hole of device 0 */
			uint64_t len = sp[0].fit != UINT64_MAX ? want : sp[0].best_len / 2;
			len = len / BTRFS_STRIPE_LEN_DEFAULT * BTRFS_STRIPE_LEN_DEFAULT;
			uint64_t at = sp[0].fit != UINT64_MAX ? sp[0].fit : sp[0].best;
			pc->length = len;
			for (int s = 0; s < 2; s++) {
				pc->devid[s] = sp[0].dev->devid;
				pc->physical[s] = at + (uint64_t)s * len;
			}
		} else if ((size_t)copies > rw->ndevs) {
			r = -ENOSPC;
		} else {
			uint64_t len = want;
			for (int s = 0; s < copies; s++) {
				uint64_t l = sp[s].fit != UINT64_MAX ? want : sp[s].best_len;
				if (l < len)
					len = l;
			}
			pc->length = len;
			for (int s = 0; s < copies; s++) {
				pc->devid[s] = sp[s].dev->devid;
				pc->physical[s] = sp[s].fit != UINT64_MAX && len == want ? sp[s].fit
											 : sp[s].best;
			}
		}
		if (!r && pc->length < MIB)
			r = -ENOSPC;
	}
	for (size_t i = 0; i < rw->ndevs; i++)
		rset_free(&sp[i].used);
	free(sp);
	return r;
}

int alloc_chunk(ref_fs *fs, uint64_t type)
{
	struct rw_state *rw = fs->rw;
	int e = FP_FAIL(FP_REF_ALLOC_CHUNK);
	if (e)
		return ref_fail(fs, e, "no new %s chunk (fault point %s)",
				type == BTRFS_BLOCK_GROUP_DATA     ? "data"
				: type == BTRFS_BLOCK_GROUP_SYSTEM ? "system"
								   : "metadata",
				FP_REF_ALLOC_CHUNK);
	uint64_t profile = UINT64_MAX, total = 0;
	for (size_t i = 0; i < rw->nbgs; i++)
		if ((rw->bgs[i].flags & (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA |
					 BTRFS_BLOCK_GROUP_SYSTEM)) == type)
			profile = rw->bgs[i].flags & BTRFS_BLOCK_GROUP_PROFILE_MASK;
	for (size_t i = 0; i < rw->ndevs; i++)
		total += rw->devs[i].total_bytes;
	if (profile == UINT64_MAX || !copies_of(profile))
		return ref_fail(fs, ENOSPC, "no space left, and allocating %s chunks is not implemented",
				profile == UINT64_MAX ? "new kinds of" : ref_profile_name(profile));
	uint64_t cap = type == BTRFS_BLOCK_GROUP_DATA	  ? GIB
		       : type == BTRFS_BLOCK_GROUP_SYSTEM ? 32 * MIB
		       : total > 50 * GIB		  ? GIB
							  : 256 * MIB;
	uint64_t tenth = total / 10 / MIB * MIB;
	if (cap > tenth)
		cap = tenth > MIB ? tenth : MIB;
	if (rw->npending == rw->pending_cap) {
		size_t c = rw->pending_cap ? rw->pending_cap * 2 : 4;
		void *p = realloc(rw->pending, c * sizeof(*rw->pending));
		if (!p)
			return ref_fail(fs, ENOMEM, "out of memory");
		rw->pending = p;
		rw->pending_cap = c;
	}
	struct rw_pending_chunk *pc = &rw->pending[rw->npending];
	memset(pc, 0, sizeof(*pc));
	int r = place(fs, profile, cap, pc);
	if (r == -ENOSPC)
		return ref_fail(fs, ENOSPC, "no space left on the devices for a new %s chunk",
				type == BTRFS_BLOCK_GROUP_DATA ? "data"
				: type == BTRFS_BLOCK_GROUP_SYSTEM ? "system" : "metadata");
	if (r)
		return r;
	const struct ref_chunk *last = &fs->chunks[fs->nchunks - 1];
	pc->logical = last->logical + last->length;
	pc->type = type | profile;
	build_item(fs, pc);
	if (type == BTRFS_BLOCK_GROUP_SYSTEM &&
	    LE32(fs->sb.sys_chunk_array_size) + sizeof(struct btrfs_disk_key) + pc->item_size >
		    BTRFS_SYS_CHUNK_ARRAY_BYTES)
		return ref_fail(fs, ENOSPC, "the superblock's system chunk array is full");
	if ((r = chunk_add(fs, pc->logical, (const struct btrfs_chunk *)pc->item, pc->item_size)))
		return r;
	rw->npending++;
	for (int s = 0; s < pc->nstripes; s++)
		for (size_t d = 0; d < rw->ndevs; d++)
			if (rw->devs[d].devid == pc->devid[s]) {
				rw->devs[d].bytes_used += pc->length;
				rw->devs[d].dirty = true;
			}
	uint64_t bgstart = pc->logical;
	if ((r = alloc_bg_new(fs, bgstart, pc->length, pc->type)))
		return r;
	rw->in_txn = true;
	return 0;
}
