/*
 * check_chunk.c - chunks, block groups, device items and device extents agree:
 * every chunk has its block group and one device extent per stripe, every
 * device extent and block group has its chunk, device extents do not overlap
 * and stay inside their device, each device's bytes_used adds up.
 */
#include "ref/check/check.h"

#include <errno.h>
#include <stdlib.h>

struct devext {
	uint64_t devid, physical, length, chunk;
};

struct dev {
	uint64_t devid, total_bytes, bytes_used, extents;
};

static int cmp_devext(const void *a, const void *b)
{
	const struct devext *x = a, *y = b;
	if (x->devid != y->devid)
		return x->devid < y->devid ? -1 : 1;
	return x->physical < y->physical ? -1 : x->physical > y->physical;
}

/* Iterates every item of a tree; fn returns non-zero to stop. */
typedef int (*item_fn)(void *ctx, const struct ref_key *k, const uint8_t *data, uint32_t size);
static int for_each_item(struct check *ck, uint64_t tree, item_fn fn, void *ctx)
{
	struct ref_root root;
	if (ref_find_root(ck->fs, tree, &root)) {
		check_error(ck, "tree %llu: %s", (unsigned long long)tree, ref_error(ck->fs));
		return 0;
	}
	struct ref_path path;
	struct ref_key key = { 0, 0, 0 };
	int r = ref_search(ck->fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if ((r = fn(ctx, &k, data, size)))
			break;
		r = ref_next(ck->fs, &path);
	}
	ref_path_release(ck->fs, &path);
	if (r < 0 && r != -ENOMEM) {
		check_error(ck, "tree %llu: %s", (unsigned long long)tree, ref_error(ck->fs));
		return 0;
	}
	return r < 0 ? r : 0;
}

struct cctx {
	struct check *ck;
	struct devext *dx;
	size_t ndx, dx_cap;
	struct dev *devs;
	size_t ndevs, devs_cap;
	uint64_t chunk_items;
	bool *bg_seen; /* per chunk */
};

static int chunk_tree_item(void *ctx, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	struct cctx *c = ctx;
	char kb[64];
	if (k->type == BTRFS_CHUNK_ITEM_KEY) {
		c->chunk_items++;
		return 0;
	}
	if (k->type != BTRFS_DEV_ITEM_KEY)
		return 0;
	if (size < sizeof(struct btrfs_dev_item)) {
		check_error(c->ck, "chunk tree key %s: dev item is %u bytes",
			    check_key_str(k, kb, sizeof(kb)), size);
		return 0;
	}
	const struct btrfs_dev_item *di = (const void *)data;
	if (GROW(c->devs, c->ndevs, c->devs_cap))
		return -ENOMEM;
	c->devs[c->ndevs++] = (struct dev){ LE64(di->devid), LE64(di->total_bytes),
					    LE64(di->bytes_used), 0 };
	if (LE64(di->devid) != k->offset)
		check_error(c->ck, "chunk tree key %s: dev item for devid %llu",
			    check_key_str(k, kb, sizeof(kb)), (unsigned long long)LE64(di->devid));
	return 0;
}

static int dev_tree_item(void *ctx, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	struct cctx *c = ctx;
	char kb[64];
	if (k->type != BTRFS_DEV_EXTENT_KEY)
		return 0;
	if (size < sizeof(struct btrfs_dev_extent)) {
		check_error(c->ck, "dev tree key %s: dev extent is %u bytes",
			    check_key_str(k, kb, sizeof(kb)), size);
		return 0;
	}
	const struct btrfs_dev_extent *de = (const void *)data;
	if (GROW(c->dx, c->ndx, c->dx_cap))
		return -ENOMEM;
	c->dx[c->ndx++] = (struct devext){ k->objectid, k->offset, LE64(de->length),
					   LE64(de->chunk_offset) };
	return 0;
}

static int block_group_item(void *ctx, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	struct cctx *c = ctx;
	char kb[64];
	if (k->type != BTRFS_BLOCK_GROUP_ITEM_KEY)
		return 0;
	ref_fs *fs = c->ck->fs;
	const struct ref_chunk *ch = chunk_find(fs, k->objectid);
	if (!ch || ch->logical != k->objectid || ch->length != k->offset) {
		check_error(c->ck, "block group %s has no chunk of that start and length",
			    check_key_str(k, kb, sizeof(kb)));
		return 0;
	}
	c->bg_seen[ch - fs->chunks] = true;
	if (size < sizeof(struct btrfs_block_group_item)) {
		check_error(c->ck, "block group %s: item is %u bytes", check_key_str(k, kb, sizeof(kb)),
			    size);
		return 0;
	}
	const struct btrfs_block_group_item *bg = (const void *)data;
	if (LE64(bg->flags) != ch->type)
		check_error(c->ck, "block group %s: flags %#llx, its chunk's type %#llx",
			    check_key_str(k, kb, sizeof(kb)), (unsigned long long)LE64(bg->flags),
			    (unsigned long long)ch->type);
	if (LE64(bg->used) > k->offset)
		check_error(c->ck, "block group %s: used %llu exceeds its length",
			    check_key_str(k, kb, sizeof(kb)), (unsigned long long)LE64(bg->used));
	return 0;
}

static struct dev *dev_find(struct cctx *c, uint64_t devid)
{
	for (size_t i = 0; i < c->ndevs; i++)
		if (c->devs[i].devid == devid)
			return &c->devs[i];
	return NULL;
}

/* Each stripe of each chunk against the device extents (sorted). */
static void match_stripes(struct cctx *c)
{
	ref_fs *fs = c->ck->fs;
	for (size_t i = 0; i < fs->nchunks; i++) {
		const struct ref_chunk *ch = &fs->chunks[i];
		uint64_t per = chunk_stripe_bytes(ch->type, ch->length, ch->num_stripes);
		if (!c->bg_seen[i])
			check_error(c->ck, "chunk %llu (%s) has no block group item",
				    (unsigned long long)ch->logical, ref_profile_name(ch->type));
		for (unsigned s = 0; s < ch->num_stripes; s++) {
			struct devext want = { ch->stripes[s].devid, ch->stripes[s].physical, 0, 0 };
			struct devext *d = c->ndx ? bsearch(&want, c->dx, c->ndx, sizeof(*c->dx), cmp_devext) : NULL;
			if (!d)
				check_error(c->ck, "chunk %llu stripe %u: no device extent at devid %llu offset %llu",
					    (unsigned long long)ch->logical, s,
					    (unsigned long long)want.devid,
					    (unsigned long long)want.physical);
			else if (d->chunk != ch->logical)
				check_error(c->ck, "chunk %llu stripe %u: the device extent there belongs to chunk %llu",
					    (unsigned long long)ch->logical, s, (unsigned long long)d->chunk);
			else if (d->length != per)
				check_error(c->ck, "chunk %llu stripe %u: device extent of %llu bytes, the stripe has %llu",
					    (unsigned long long)ch->logical, s, (unsigned long long)d->length,
					    (unsigned long long)per);
		}
	}
}

/* Each device extent belongs to a chunk, none overlap, all inside the device. */
static void check_devexts(struct cctx *c)
{
	ref_fs *fs = c->ck->fs;
	for (size_t i = 0; i < c->ndx; i++) {
		const struct devext *d = &c->dx[i];
		const struct ref_chunk *ch = chunk_find(fs, d->chunk);
		bool found = false;
		for (unsigned s = 0; ch && s < ch->num_stripes; s++)
			found |= ch->stripes[s].devid == d->devid && ch->stripes[s].physical == d->physical;
		if (!found || !ch || ch->logical != d->chunk)
			check_error(c->ck, "device extent devid %llu offset %llu: chunk %llu has no such stripe",
				    (unsigned long long)d->devid, (unsigned long long)d->physical,
				    (unsigned long long)d->chunk);
		if (i && c->dx[i - 1].devid == d->devid &&
		    c->dx[i - 1].physical + c->dx[i - 1].length > d->physical)
			check_error(c->ck, "device extents devid %llu offsets %llu and %llu overlap",
				    (unsigned long long)d->devid, (unsigned long long)c->dx[i - 1].physical,
				    (unsigned long long)d->physical);
		struct dev *dev = dev_find(c, d->devid);
		if (!dev) {
			check_error(c->ck, "device extent devid %llu offset %llu: no such device",
				    (unsigned long long)d->devid, (unsigned long long)d->physical);
			continue;
		}
		dev->extents += d->length;
		if (d->physical + d->length > dev->total_bytes)
			check_error(c->ck, "device extent devid %llu offset %llu runs past the device (%llu bytes)",
				    (unsigned long long)d->devid, (unsigned long long)d->physical,
				    (unsigned long long)dev->total_bytes);
	}
	for (size_t i = 0; i < c->ndevs; i++)
		if (c->devs[i].extents != c->devs[i].bytes_used)
			check_error(c->ck, "device %llu: bytes_used %llu, its device extents add up to %llu",
				    (unsigned long long)c->devs[i].devid,
				    (unsigned long long)c->devs[i].bytes_used,
				    (unsigned long long)c->devs[i].extents);
	uint64_t total = 0;
	/* (A device smaller than its item says does not open at all: chunk.c.) */
	for (size_t i = 0; i < c->ndevs; i++)
		total += c->devs[i].total_bytes;
	if (total != LE64(fs->sb.total_bytes))
		check_error(c->ck, "superblock total_bytes %llu, the devices add up to %llu",
			    (unsigned long long)LE64(fs->sb.total_bytes), (unsigned long long)total);
	if (c->ndevs != LE64(fs->sb.num_devices))
		check_error(c->ck, "superblock num_devices %llu, the chunk tree has %zu device items",
			    (unsigned long long)LE64(fs->sb.num_devices), c->ndevs);
	if (c->chunk_items != fs->nchunks)
		check_error(c->ck, "the chunk tree has %llu chunk items, the chunk map %zu (sys_chunk_array and tree disagree)",
			    (unsigned long long)c->chunk_items, fs->nchunks);
}

int check_chunks(struct check *ck)
{
	ref_fs *fs = ck->fs;
	struct cctx c = { .ck = ck };
	c.bg_seen = calloc(fs->nchunks + 1, sizeof(*c.bg_seen));
	if (!c.bg_seen)
		return -ENOMEM;
	bool bgt = LE64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE;
	int r = for_each_item(ck, BTRFS_CHUNK_TREE_OBJECTID, chunk_tree_item, &c);
	if (!r)
		r = for_each_item(ck, BTRFS_DEV_TREE_OBJECTID, dev_tree_item, &c);
	if (!r)
		r = for_each_item(ck, bgt ? BTRFS_BLOCK_GROUP_TREE_OBJECTID : BTRFS_EXTENT_TREE_OBJECTID,
				  block_group_item, &c);
	if (!r) {
		if (c.ndx)
			qsort(c.dx, c.ndx, sizeof(*c.dx), cmp_devext);
		match_stripes(&c);
		check_devexts(&c);
	}
	free(c.bg_seen);
	free(c.dx);
	free(c.devs);
	return r;
}
