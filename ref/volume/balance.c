/*
 * balance.c - `btrfs balance`: block groups chosen by filters emptied one by
 * one (reloc.c), their contents going to other groups, or to new chunks of
 * a conversion's target profile.
 *
 * As the kernel: chunks are visited from the highest logical address down
 * (new chunks, made above, are not visited again); the filters are
 * btrfs_balance_args's (profiles, usage, devid, drange, vrange, limit,
 * stripes, convert with soft); reducing metadata redundancy needs FORCE; the
 * arguments are kept in the root tree's balance item (BALANCE_OBJECTID,
 * TEMPORARY_ITEM, 0) from start to end, so that a balance a crash
 * interrupted is resumed (the kernel resumes it at mount; `btrsim balance
 * resume`, or cancel).  A resumed conversion skips the chunks already
 * converted, as `soft` would: relocating them again moves nothing anywhere
 * new.
 */
#include "ref/rw.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdlib.h>

#define REDUNDANT                                                                                  \
	(BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_RAID1C3 |             \
	 BTRFS_BLOCK_GROUP_RAID1C4 | BTRFS_BLOCK_GROUP_RAID10 | BTRFS_BLOCK_GROUP_RAID5 |          \
	 BTRFS_BLOCK_GROUP_RAID6)

static const struct ref_key balance_key = { BTRFS_BALANCE_OBJECTID, BTRFS_TEMPORARY_ITEM_KEY, 0 };

/* ---- The balance item ---- */

static void args_to_disk(const struct btrfs_balance_args *a, struct btrfs_disk_balance_args *d)
{
	memset(d, 0, sizeof(*d));
	d->profiles = htole64(a->profiles);
	if (a->flags & BTRFS_BALANCE_ARGS_USAGE_RANGE) {
		d->usage_min = htole32(a->usage_min);
		d->usage_max = htole32(a->usage_max);
	} else {
		d->usage = htole64(a->usage);
	}
	d->devid = htole64(a->devid);
	d->pstart = htole64(a->pstart);
	d->pend = htole64(a->pend);
	d->vstart = htole64(a->vstart);
	d->vend = htole64(a->vend);
	d->target = htole64(a->target);
	d->flags = htole64(a->flags);
	if (a->flags & BTRFS_BALANCE_ARGS_LIMIT_RANGE) {
		d->limit_min = htole32(a->limit_min);
		d->limit_max = htole32(a->limit_max);
	} else {
		d->limit = htole64(a->limit);
	}
	d->stripes_min = htole32(a->stripes_min);
	d->stripes_max = htole32(a->stripes_max);
}

static void args_from_disk(const struct btrfs_disk_balance_args *d, struct btrfs_balance_args *a)
{
	memset(a, 0, sizeof(*a));
	a->profiles = LE64(d->profiles);
	a->flags = LE64(d->flags);
	if (a->flags & BTRFS_BALANCE_ARGS_USAGE_RANGE) {
		a->usage_min = LE32(d->usage_min);
		a->usage_max = LE32(d->usage_max);
	} else {
		a->usage = LE64(d->usage);
	}
	a->devid = LE64(d->devid);
	a->pstart = LE64(d->pstart);
	a->pend = LE64(d->pend);
	a->vstart = LE64(d->vstart);
	a->vend = LE64(d->vend);
	a->target = LE64(d->target);
	if (a->flags & BTRFS_BALANCE_ARGS_LIMIT_RANGE) {
		a->limit_min = LE32(d->limit_min);
		a->limit_max = LE32(d->limit_max);
	} else {
		a->limit = LE64(d->limit);
	}
	a->stripes_min = LE32(d->stripes_min);
	a->stripes_max = LE32(d->stripes_max);
}

int ref_balance_get(ref_fs *fs, struct ref_balance *out)
{
	struct ref_root rt = fs->rw ? rw_tree_find(fs, BTRFS_ROOT_TREE_OBJECTID)->root : fs->tree_root;
	struct ref_path p;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	int r = ref_find_first(fs, &rt, BTRFS_BALANCE_OBJECTID, BTRFS_TEMPORARY_ITEM_KEY, &p, &k, &d,
			       &size);
	if (r == -ENOENT)
		return 1;
	if (r)
		return r;
	struct btrfs_balance_item bi;
	bool ok = size >= sizeof(bi);
	if (ok)
		memcpy(&bi, d, sizeof(bi));
	ref_path_release(fs, &p);
	if (!ok)
		return ref_fail(fs, EUCLEAN, "the balance item holds %u bytes, not %zu", size, sizeof(bi));
	out->flags = LE64(bi.flags);
	args_from_disk(&bi.data, &out->data);
	args_from_disk(&bi.meta, &out->meta);
	args_from_disk(&bi.sys, &out->sys);
	return 0;
}

static int item_put(ref_fs *fs, const struct ref_balance *b)
{
	struct btrfs_balance_item bi;
	memset(&bi, 0, sizeof(bi));
	bi.flags = htole64(b->flags & ~(uint64_t)BTRFS_BALANCE_RESUME);
	args_to_disk(&b->data, &bi.data);
	args_to_disk(&b->meta, &bi.meta);
	args_to_disk(&b->sys, &bi.sys);
	struct rw_tree *rt;
	int r = rw_tree_get(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);
	return r ? r : bt_insert_data(fs, rt, &balance_key, &bi, sizeof(bi));
}

static int item_delete(ref_fs *fs)
{
	struct rw_tree *rt;
	int r = rw_tree_get(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);
	return r ? r : bt_delete_key(fs, rt, &balance_key);
}

/* ---- Filters (the kernel's should_balance_chunk) ---- */

static uint64_t profile_bit(uint64_t type)
{
	uint64_t p = type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
	return p ? p : BTRFS_AVAIL_ALLOC_BIT_SINGLE;
}

static const struct btrfs_balance_args *args_for(const struct ref_balance *b, uint64_t type)
{
	if (type & BTRFS_BLOCK_GROUP_SYSTEM)
		return b->flags & BTRFS_BALANCE_SYSTEM ? &b->sys : NULL;
	if (type & BTRFS_BLOCK_GROUP_METADATA)
		return b->flags & BTRFS_BALANCE_METADATA ? &b->meta : NULL;
	return b->flags & BTRFS_BALANCE_DATA ? &b->data : NULL;
}

static uint64_t percent(uint64_t len, uint64_t pct)
{
	return pct > 100 ? len : len / 100 * pct + len % 100 * pct / 100;
}

static bool usage_ok(const struct btrfs_balance_args *a, uint64_t used, uint64_t len)
{
	if (a->flags & BTRFS_BALANCE_ARGS_USAGE_RANGE) {
		uint64_t lo = a->usage_min ? percent(len, a->usage_min) : 0;
		uint64_t hi = a->usage_max ? percent(len, a->usage_max) : 1;
		return lo <= used && used < hi;
	}
	return used < (a->usage ? percent(len, a->usage) : 1);
}

/* Whether chunk c passes a's filters other than limit. */
static bool chunk_wanted(ref_fs *fs, const struct btrfs_balance_args *a, const struct ref_chunk *c,
			 bool resume)
{
	uint64_t f = a->flags;
	if (f & BTRFS_BALANCE_ARGS_PROFILES && !(a->profiles & profile_bit(c->type)))
		return false;
	if (f & (BTRFS_BALANCE_ARGS_USAGE | BTRFS_BALANCE_ARGS_USAGE_RANGE)) {
		struct rw_bg *bg = rw_bg_find(fs, c->logical);
		if (!bg || !usage_ok(a, bg->used, c->length))
			return false;
	}
	if (f & BTRFS_BALANCE_ARGS_DEVID) {
		bool on = false;
		uint64_t per = chunk_stripe_bytes(c->type, c->length, c->num_stripes);
		for (uint16_t s = 0; s < c->num_stripes; s++)
			if (c->stripes[s].devid == a->devid &&
			    (!(f & BTRFS_BALANCE_ARGS_DRANGE) ||
			     (c->stripes[s].physical < a->pend && c->stripes[s].physical + per > a->pstart)))
				on = true;
		if (!on)
			return false;
	}
	if (f & BTRFS_BALANCE_ARGS_VRANGE && !(c->logical < a->vend && c->logical + c->length > a->vstart))
		return false;
	if (f & BTRFS_BALANCE_ARGS_STRIPES_RANGE &&
	    (c->num_stripes < a->stripes_min || c->num_stripes > a->stripes_max))
		return false;
	if (f & BTRFS_BALANCE_ARGS_CONVERT && (f & BTRFS_BALANCE_ARGS_SOFT || resume) &&
	    profile_bit(c->type) == a->target)
		return false;
	return true;
}

/* ---- Checks before starting (the kernel's btrfs_balance) ---- */

static int check_target(ref_fs *fs, const struct btrfs_balance_args *a, const char *kind)
{
	if (!(a->flags & BTRFS_BALANCE_ARGS_CONVERT))
		return 0;
	uint64_t t = a->target;
	bool one = t && !(t & (t - 1));
	char name[16];
	if (!one || !(t & (BTRFS_BLOCK_GROUP_PROFILE_MASK | BTRFS_AVAIL_ALLOC_BIT_SINGLE)) ||
	    chunk_alloc_devices(fs) < (size_t)chunk_profile_devs_min(t))
		return ref_fail(fs, EINVAL, "balance: invalid convert %s profile %s", kind,
				ref_profile_lower(t, name));
	return 0;
}

/* The profiles the kind's block groups have now. */
static uint64_t kind_profiles(ref_fs *fs, uint64_t kind)
{
	uint64_t have = 0;
	for (size_t i = 0; i < fs->rw->nbgs; i++)
		if (fs->rw->bgs[i].flags & kind)
			have |= profile_bit(fs->rw->bgs[i].flags);
	return have;
}

static int check_args(ref_fs *fs, const struct ref_balance *b)
{
	if (!(b->flags & BTRFS_BALANCE_TYPE_MASK))
		return ref_fail(fs, EINVAL, "balance: no block group kind chosen (data, metadata, system)");
	/* Mixed block groups are data and metadata at once: both chosen, with
	 * the same filters (btrfs_balance). */
	uint64_t dm = BTRFS_BALANCE_DATA | BTRFS_BALANCE_METADATA;
	if (LE64(fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS && b->flags & dm &&
	    ((b->flags & dm) != dm || memcmp(&b->data, &b->meta, sizeof(b->data))))
		return ref_fail(fs, EINVAL, "balance: mixed groups data and metadata options must be the same");
	const struct btrfs_balance_args *a[3] = { &b->data, &b->meta, &b->sys };
	static const char *const kind[3] = { "data", "metadata", "system" };
	for (int i = 0; i < 3; i++) {
		int r = check_target(fs, a[i], kind[i]);
		if (r)
			return r;
		if ((a[i]->flags & BTRFS_BALANCE_ARGS_DRANGE) && !(a[i]->flags & BTRFS_BALANCE_ARGS_DEVID))
			return ref_fail(fs, EINVAL, "balance: %s filter drange needs devid", kind[i]);
	}
	/* Lower metadata or system redundancy only with force. */
	bool force = b->flags & BTRFS_BALANCE_FORCE;
	for (int i = 1; i < 3 && !force; i++) {
		uint64_t k = i == 1 ? BTRFS_BLOCK_GROUP_METADATA : BTRFS_BLOCK_GROUP_SYSTEM;
		if ((b->flags & (i == 1 ? BTRFS_BALANCE_METADATA : BTRFS_BALANCE_SYSTEM)) &&
		    a[i]->flags & BTRFS_BALANCE_ARGS_CONVERT && kind_profiles(fs, k) & REDUNDANT &&
		    !(a[i]->target & REDUNDANT))
			return ref_fail(fs, EINVAL,
					"balance: reduces metadata redundancy, use --force if you want this");
	}
	return 0;
}

/* ---- Running ---- */

static void set_targets(ref_fs *fs, const struct ref_balance *b)
{
	const struct btrfs_balance_args *a[3] = { &b->data, &b->meta, &b->sys };
	static const uint64_t kinds[3] = { BTRFS_BALANCE_DATA, BTRFS_BALANCE_METADATA,
					   BTRFS_BALANCE_SYSTEM };
	for (int i = 0; i < 3; i++) {
		bool on = b->flags & kinds[i] && a[i]->flags & BTRFS_BALANCE_ARGS_CONVERT;
		fs->rw->convert[i] = on ? (a[i]->target & BTRFS_BLOCK_GROUP_PROFILE_MASK) |
						  BTRFS_AVAIL_ALLOC_BIT_SINGLE
					: 0;
		uint64_t t = a[i]->target;
		if (on && t & (BTRFS_BLOCK_GROUP_RAID5 | BTRFS_BLOCK_GROUP_RAID6))
			fs->sb.incompat_flags |= htole64(BTRFS_FEATURE_INCOMPAT_RAID56);
		if (on && t & (BTRFS_BLOCK_GROUP_RAID1C3 | BTRFS_BLOCK_GROUP_RAID1C4))
			fs->sb.incompat_flags |= htole64(BTRFS_FEATURE_INCOMPAT_RAID1C34);
	}
}

/* How many chunks of each kind pass the filters (for limit). */
static void count_wanted(ref_fs *fs, const struct ref_balance *b, bool resume, uint64_t n[3])
{
	n[0] = n[1] = n[2] = 0;
	for (size_t i = 0; i < fs->nchunks; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		const struct btrfs_balance_args *a = args_for(b, c->type);
		if (a && chunk_wanted(fs, a, c, resume))
			n[a == &b->data ? 0 : a == &b->meta ? 1 : 2]++;
	}
}

static uint64_t limit_of(const struct btrfs_balance_args *a, uint64_t wanted)
{
	if (a->flags & BTRFS_BALANCE_ARGS_LIMIT)
		return a->limit;
	if (a->flags & BTRFS_BALANCE_ARGS_LIMIT_RANGE)
		return wanted < a->limit_min ? 0 : a->limit_max;
	return UINT64_MAX;
}

static int run(ref_fs *fs, const struct ref_balance *b, bool resume, struct ref_balance_stats *st)
{
	size_t n;
	uint64_t *at, wanted[3], done[3] = { 0, 0, 0 };
	int r = reloc_chunk_order(fs, &at, &n);
	count_wanted(fs, b, resume, wanted);
	set_targets(fs, b);
	for (size_t i = 0; i < n && !r; i++) {
		const struct ref_chunk *c = chunk_find(fs, at[i]);
		if (!c || c->logical != at[i])
			continue;
		st->considered++;
		const struct btrfs_balance_args *a = args_for(b, c->type);
		if (!a || !chunk_wanted(fs, a, c, resume))
			continue;
		int k = a == &b->data ? 0 : a == &b->meta ? 1 : 2;
		if (done[k] >= limit_of(a, wanted[k]))
			continue;
		if (!(r = reloc_block_group(fs, at[i], st)))
			done[k]++;
	}
	memset(fs->rw->convert, 0, sizeof(fs->rw->convert));
	free(at);
	return r;
}

static int finish(ref_fs *fs, const struct ref_balance *b, bool resume, struct ref_balance_stats *st)
{
	int r = run(fs, b, resume, st);
	if (r)
		return r; /* the item stays: resume or cancel */
	if ((r = item_delete(fs)) || (r = rw_commit(fs)))
		return r;
	uint64_t meta = kind_profiles(fs, BTRFS_BLOCK_GROUP_METADATA);
	uint64_t data = kind_profiles(fs, BTRFS_BLOCK_GROUP_DATA);
	if (!(meta & REDUNDANT) && data & REDUNDANT)
		ref_log(fs, "balance: metadata profile has lower redundancy than data profile");
	return 0;
}

int ref_balance(ref_fs *fs, const struct ref_balance *b, struct ref_balance_stats *st)
{
	memset(st, 0, sizeof(*st));
	int r = rw_check_writable(fs);
	if (r)
		return r;
	struct ref_balance old;
	if ((r = ref_balance_get(fs, &old)) <= 0)
		return r ? r
			 : ref_fail(fs, EINPROGRESS,
				    "balance: a balance was interrupted; resume or cancel it first");
	if ((r = check_args(fs, b)) || (r = item_put(fs, b)) ||
	    (r = rw_commit(fs)))
		return r;
	return finish(fs, b, false, st);
}

int ref_balance_resume(ref_fs *fs, struct ref_balance_stats *st)
{
	memset(st, 0, sizeof(*st));
	int r = rw_check_writable(fs);
	if (r)
		return r;
	struct ref_balance b;
	if ((r = ref_balance_get(fs, &b)) == 1)
		return ref_fail(fs, ENOTCONN, "balance: no balance to resume");
	if (r || (r = check_args(fs, &b)))
		return r;
	b.flags |= BTRFS_BALANCE_RESUME;
	return finish(fs, &b, true, st);
}

int ref_balance_cancel(ref_fs *fs)
{
	int r = rw_check_writable(fs);
	if (r)
		return r;
	struct ref_balance b;
	if ((r = ref_balance_get(fs, &b)) == 1)
		return ref_fail(fs, ENOTCONN, "balance: no balance to cancel");
	if (r || (r = item_delete(fs)))
		return r;
	return rw_commit(fs);
}
