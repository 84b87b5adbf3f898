/*
 * chunk_alloc.c - new chunks when the block groups of a kind are full: a
 * device range for each stripe, the chunk mapped at once, and the block
 * group usable at once; the items that record them (chunk item, device
 * extents, device item usage, block group item, free-space info) are written
 * at commit, as the kernel's pending block groups are.
 *
 * Every profile, with the kernel's rules (btrfs_raid_array): SINGLE, DUP
 * (both copies on one device), RAID1, RAID1C3 and RAID1C4 (one device per
 * copy), and the striped ones - RAID0, RAID10 (mirrored pairs), RAID5 and
 * RAID6 - over every device with room, the stripe as long as the smallest of
 * their holes allows.
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
				r = rset_add(used, rw->pending[i].physical[s], rw->pending[i].stripe_size);
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

/* A profile's rules, as the kernel's btrfs_raid_array has them. */
struct prof_rule {
	uint64_t prof;
	int devs_min, devs_max; /* devs_max 0: as many as have room */
	int increment;          /* the device count is a multiple of it */
	int ncopies, nparity;
};

static const struct prof_rule rules[] = {
	{ 0, 1, 1, 1, 1, 0 },
	{ BTRFS_BLOCK_GROUP_DUP, 1, 1, 1, 2, 0 },
	{ BTRFS_BLOCK_GROUP_RAID1, 2, 2, 2, 2, 0 },
	{ BTRFS_BLOCK_GROUP_RAID1C3, 3, 3, 3, 3, 0 },
	{ BTRFS_BLOCK_GROUP_RAID1C4, 4, 4, 4, 4, 0 },
	{ BTRFS_BLOCK_GROUP_RAID0, 1, 0, 1, 1, 0 },
	{ BTRFS_BLOCK_GROUP_RAID10, 2, 0, 2, 2, 0 },
	{ BTRFS_BLOCK_GROUP_RAID5, 2, 0, 1, 1, 1 },
	{ BTRFS_BLOCK_GROUP_RAID6, 3, 0, 1, 1, 2 },
};

static const struct prof_rule *rule_of(uint64_t profile)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (rules[i].prof == profile)
			return &rules[i];
	return NULL;
}

int chunk_profile_devs_min(uint64_t profile)
{
	const struct prof_rule *ru = rule_of(profile & BTRFS_BLOCK_GROUP_PROFILE_MASK);
	return ru ? ru->devs_min : 1;
}

size_t chunk_alloc_devices(ref_fs *fs)
{
	size_t n = 0;
	for (size_t i = 0; i < fs->rw->ndevs; i++)
		n += !fs->rw->devs[i].missing && !fs->rw->devs[i].leaving;
	return n;
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
	ci->sub_stripes = htole16((pc->type & BTRFS_BLOCK_GROUP_RAID10) ? 2 : 1);
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

/* Places the stripes of a chunk whose stripes are at most `stripe_cap` bytes
 * and whose data (the chunk's length) at most `chunk_cap`, on at most
 * `most` devices; 0 or -ENOSPC. */
static int place(ref_fs *fs, const struct prof_rule *ru, uint64_t stripe_cap, uint64_t chunk_cap,
		 size_t most, struct rw_pending_chunk *pc)
{
	struct rw_state *rw = fs->rw;
	bool dup = ru->prof == BTRFS_BLOCK_GROUP_DUP;
	int r = 0;
	struct dev_space *sp = calloc(rw->ndevs, sizeof(*sp));
	if (!sp)
		return ref_fail(fs, ENOMEM, "out of memory");
	for (size_t i = 0; i < rw->ndevs && !r; i++) {
		sp[i].dev = &rw->devs[i];
		if (rw->devs[i].missing || rw->devs[i].leaving)
			continue; /* no room on a device that is not there (or going) */
		r = dev_used(fs, rw->devs[i].devid, rw->devs[i].total_bytes, &sp[i].used);
		holes(&sp[i].used, rw->devs[i].total_bytes, dup ? 2 * stripe_cap : stripe_cap,
		      &sp[i].best, &sp[i].best_len, &sp[i].fit);
		if (dup)
			sp[i].best_len /= 2;
	}
	if (!r) {
		qsort(sp, rw->ndevs, sizeof(*sp), cmp_space);
		/* The devices that take a stripe: those with room, most room first. */
		size_t ndevs = 0;
		while (ndevs < rw->ndevs && sp[ndevs].best_len >= MIB)
			ndevs++;
		if (ru->devs_max && ndevs > (size_t)ru->devs_max)
			ndevs = (size_t)ru->devs_max;
		if (ndevs > most)
			ndevs = most;
		ndevs -= ndevs % (size_t)ru->increment;
		int nstripes = dup ? 2 : (int)ndevs;
		int data = dup ? 1 : ((int)ndevs - ru->nparity) / ru->ncopies;
		if (ndevs < (size_t)ru->devs_min || data < 1) {
			r = -ENOSPC;
		} else {
			uint64_t stripe = sp[ndevs - 1].best_len; /* the smallest of them */
			if (stripe > stripe_cap)
				stripe = stripe_cap;
			if (stripe * (uint64_t)data > chunk_cap)
				stripe = chunk_cap / (uint64_t)data;
			stripe = stripe / BTRFS_STRIPE_LEN_DEFAULT * BTRFS_STRIPE_LEN_DEFAULT;
			pc->nstripes = nstripes;
			pc->stripe_size = stripe;
			pc->length = stripe * (uint64_t)data;
			for (int s = 0; s < nstripes; s++) {
				struct dev_space *d = &sp[dup ? 0 : s];
				uint64_t best, best_len, fit;
				holes(&d->used, d->dev->total_bytes, dup ? 2 * stripe : stripe, &best,
				      &best_len, &fit);
				pc->devid[s] = d->dev->devid;
				pc->physical[s] = (fit != UINT64_MAX ? fit : best) + (dup ? (uint64_t)s * stripe : 0);
			}
			if (stripe < MIB)
				r = -ENOSPC;
		}
	}
	for (size_t i = 0; i < rw->ndevs; i++)
		rset_free(&sp[i].used);
	free(sp);
	return r;
}

/* The profile of new chunks of a kind (DATA, METADATA or SYSTEM), as the
 * kernel's btrfs_get_alloc_profile: a balance's conversion target, else the
 * most redundant profile among the kind's block groups (after an
 * interrupted conversion both are there); UINT64_MAX when it has none. */
static uint64_t alloc_profile(ref_fs *fs, uint64_t type)
{
	struct rw_state *rw = fs->rw;
	int kind = type == BTRFS_BLOCK_GROUP_DATA ? 0 : type & BTRFS_BLOCK_GROUP_METADATA ? 1 : 2;
	if (rw->convert[kind])
		return rw->convert[kind] & BTRFS_BLOCK_GROUP_PROFILE_MASK;
	uint64_t have = 0;
	bool any = false;
	for (size_t i = 0; i < rw->nbgs; i++)
		if ((rw->bgs[i].flags & (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA |
					 BTRFS_BLOCK_GROUP_SYSTEM)) == type) {
			have |= rw->bgs[i].flags & BTRFS_BLOCK_GROUP_PROFILE_MASK;
			any = true;
		}
	static const uint64_t order[] = { BTRFS_BLOCK_GROUP_RAID1C4, BTRFS_BLOCK_GROUP_RAID6,
					  BTRFS_BLOCK_GROUP_RAID1C3, BTRFS_BLOCK_GROUP_RAID5,
					  BTRFS_BLOCK_GROUP_RAID10,  BTRFS_BLOCK_GROUP_RAID1,
					  BTRFS_BLOCK_GROUP_DUP,     BTRFS_BLOCK_GROUP_RAID0 };
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (have & order[i])
			return order[i];
	return any ? 0 : UINT64_MAX;
}

int alloc_chunk(ref_fs *fs, uint64_t type)
{
	struct rw_state *rw = fs->rw;
	type = alloc_kind(fs, type); /* (mixed block groups hold both) */
	int e = FP_FAIL(FP_REF_ALLOC_CHUNK);
	if (e)
		return ref_fail(fs, e, "no new %s chunk (fault point %s)",
				type == BTRFS_BLOCK_GROUP_DATA     ? "data"
				: type == BTRFS_BLOCK_GROUP_SYSTEM ? "system"
								   : "metadata",
				FP_REF_ALLOC_CHUNK);
	uint64_t profile = alloc_profile(fs, type), total = 0;
	for (size_t i = 0; i < rw->ndevs; i++)
		total += rw->devs[i].total_bytes;
	const struct prof_rule *ru = profile == UINT64_MAX ? NULL : rule_of(profile);
	if (!ru)
		return ref_fail(fs, ENOSPC, "no space left, and allocating %s chunks is not implemented",
				profile == UINT64_MAX ? "new kinds of" : ref_profile_name(profile));
	/* Degraded with too few devices left for the profile: single chunks,
	 * as the kernel's btrfs_reduce_alloc_profile (counting the devices it
	 * can write) falls back to. */
	size_t present = chunk_alloc_devices(fs);
	if (present < (size_t)ru->devs_min) {
		ref_log(fs, "degraded: %zu device%s left, new %s chunks are single, not %s", present,
			present == 1 ? "" : "s", type == BTRFS_BLOCK_GROUP_DATA ? "data" : "metadata",
			ref_profile_name(profile));
		profile = 0;
		ru = rule_of(0);
	}
	/* The kernel's sizes: a stripe of at most 1 GiB of data, 32 MiB of
	 * system, 256 MiB of metadata (1 GiB past 50 GiB); a chunk of at most
	 * 10 GiB of data, two system stripes, one metadata stripe; and no chunk
	 * over a tenth of the devices' size. */
	bool data = type & BTRFS_BLOCK_GROUP_DATA, sys = type == BTRFS_BLOCK_GROUP_SYSTEM;
	uint64_t stripe_cap = data ? GIB : sys ? 32 * MIB : total > 50 * GIB ? GIB : 256 * MIB;
	uint64_t chunk_cap = data ? 10 * GIB : sys ? 64 * MIB : stripe_cap;
	uint64_t tenth = total / 10 / MIB * MIB;
	if (tenth < MIB)
		tenth = MIB;
	if (chunk_cap > tenth)
		chunk_cap = tenth;
	if (stripe_cap > chunk_cap)
		stripe_cap = chunk_cap;
	/* A system chunk's item must fit the superblock's array. */
	size_t most = sys ? (BTRFS_SYS_CHUNK_ARRAY_BYTES - 2 * sizeof(struct btrfs_disk_key) -
			     2 * sizeof(struct btrfs_chunk)) / sizeof(struct btrfs_stripe) + 1
			  : SIM_MAX_DISKS;
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
	int r = place(fs, ru, stripe_cap, chunk_cap, most, pc);
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
				rw->devs[d].bytes_used += pc->stripe_size;
				rw->devs[d].dirty = true;
			}
	uint64_t bgstart = pc->logical;
	if ((r = alloc_bg_new(fs, bgstart, pc->length, pc->type)))
		return r;
	rw->in_txn = true;
	return 0;
}
