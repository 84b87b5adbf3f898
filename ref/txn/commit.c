/*
 * commit.c - committing a transaction.  First everything the transaction's
 * changes imply is brought into the trees, round after round until a round
 * changes nothing: new chunks' items, delayed references into the extent
 * tree (with the free-space tree and checksums following), block-group and
 * device usage, and the root items of the trees that moved.  Then every
 * dirty block is written, every disk flushed, and only then the superblocks
 * (new generation, root pointers, a backup-root slot) go out with FUA.  A
 * crash before the superblocks leaves the previous commit; after, this one.
 */
#include "faults/points.h"
#include "ref/log/log_write.h"
#include "ref/mutant.h"
#include "ref/qgroup/qgroup.h"
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>

#define MAX_ROUNDS 1000

static int insert_pending_chunk(ref_fs *fs, const struct rw_pending_chunk *pc)
{
	struct rw_tree *ct, *dt, *bt;
	int r;
	if ((r = rw_tree_get(fs, BTRFS_CHUNK_TREE_OBJECTID, &ct)) ||
	    (r = rw_tree_get(fs, BTRFS_DEV_TREE_OBJECTID, &dt)) ||
	    (r = rw_tree_get(fs, fs->rw->bg_tree, &bt)))
		return r;
	struct ref_key k = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, pc->logical };
	if ((r = bt_insert_data(fs, ct, &k, pc->item, pc->item_size)))
		return r;
	for (int s = 0; s < pc->nstripes; s++) {
		struct btrfs_dev_extent de = {
			.chunk_tree = htole64(BTRFS_CHUNK_TREE_OBJECTID),
			.chunk_objectid = htole64(BTRFS_FIRST_CHUNK_TREE_OBJECTID),
			.chunk_offset = htole64(pc->logical),
			.length = htole64(pc->stripe_size),
		};
		memcpy(de.chunk_tree_uuid, fs->rw->chunk_tree_uuid, BTRFS_UUID_SIZE);
		struct ref_key dk = { pc->devid[s], BTRFS_DEV_EXTENT_KEY, pc->physical[s] };
		if ((r = bt_insert_data(fs, dt, &dk, &de, sizeof(de))))
			return r;
	}
	if (pc->type & BTRFS_BLOCK_GROUP_SYSTEM) {
		uint32_t at = LE32(fs->sb.sys_chunk_array_size);
		struct btrfs_disk_key dk = { htole64(k.objectid), k.type, htole64(k.offset) };
		memcpy(fs->sb.sys_chunk_array + at, &dk, sizeof(dk));
		memcpy(fs->sb.sys_chunk_array + at + sizeof(dk), pc->item, pc->item_size);
		fs->sb.sys_chunk_array_size = htole32(at + (uint32_t)sizeof(dk) + pc->item_size);
	}
	struct rw_bg *bg = rw_bg_find(fs, pc->logical);
	struct btrfs_block_group_item bi = { htole64(bg->used),
					     htole64(BTRFS_FIRST_CHUNK_TREE_OBJECTID),
					     htole64(bg->flags) };
	struct ref_key bk = { bg->start, BTRFS_BLOCK_GROUP_ITEM_KEY, bg->len };
	if ((r = bt_insert_data(fs, bt, &bk, &bi, sizeof(bi))))
		return r;
	bg->new_bg = false;
	bg->dirty = true;
	return fst_add_bg(fs, bg);
}

static int update_bg(ref_fs *fs, struct rw_bg *bg)
{
	struct rw_tree *bt;
	int r = rw_tree_get(fs, fs->rw->bg_tree, &bt);
	if (r)
		return r;
	struct ref_key k = { bg->start, BTRFS_BLOCK_GROUP_ITEM_KEY, bg->len };
	struct ref_path p;
	if ((r = bt_lookup_cow(fs, bt, &k, &p)))
		return r == -ENOENT ? ref_fail(fs, EUCLEAN, "block group item %llu is gone",
					       (unsigned long long)bg->start)
				    : r;
	uint64_t used = htole64(bg->used);
	memcpy(bt_item(&p, NULL), &used, 8);
	ref_path_release(fs, &p);
	bg->dirty = false;
	return 0;
}

static int update_dev(ref_fs *fs, struct rw_dev *dev)
{
	struct rw_tree *ct;
	int r = rw_tree_get(fs, BTRFS_CHUNK_TREE_OBJECTID, &ct);
	if (r)
		return r;
	struct ref_key k = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, dev->devid };
	struct ref_path p;
	if ((r = bt_lookup_cow(fs, ct, &k, &p)))
		return r;
	dev->item.bytes_used = htole64(dev->bytes_used);
	memcpy(bt_item(&p, NULL), &dev->item, sizeof(dev->item));
	ref_path_release(fs, &p);
	dev->dirty = false;
	return 0;
}

static int update_root_item(ref_fs *fs, struct rw_tree *t)
{
	struct rw_tree *rt;
	int r = rw_tree_get(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);
	if (r)
		return r;
	struct ref_path p;
	struct ref_key k = { t->root.id, BTRFS_ROOT_ITEM_KEY, 0 }, got;
	/* A snapshot's root item has its creation transid as offset. */
	if ((r = bt_peek(fs, &rt->root, &k, false, &got, NULL)) < 0)
		return r;
	if (r == 0 && got.objectid == k.objectid && got.type == k.type)
		k = got;
	if ((r = bt_lookup_cow(fs, rt, &k, &p)))
		return r == -ENOENT ? ref_fail(fs, EUCLEAN, "tree %llu has no root item",
					       (unsigned long long)t->root.id)
				    : r;
	uint32_t size;
	uint8_t *d = bt_item(&p, &size);
	struct btrfs_root_item ri;
	memset(&ri, 0, sizeof(ri));
	memcpy(&ri, d, size < sizeof(ri) ? size : sizeof(ri));
	ri.bytenr = htole64(t->root.bytenr);
	ri.generation = htole64(fs->rw->transid);
	ri.level = t->root.level;
	if (size >= offsetof(struct btrfs_root_item, generation_v2) + 8)
		ri.generation_v2 = htole64(fs->rw->transid);
	memcpy(d, &ri, size < sizeof(ri) ? size : sizeof(ri));
	ref_path_release(fs, &p);
	t->dirty = false;
	return 0;
}

/* One round of bringing implied changes into the trees; *work tells
 * whether it found anything to do. */
static int settle_round(ref_fs *fs, bool *work)
{
	struct rw_state *rw = fs->rw;
	int r = FP_FAIL(FP_REF_COMMIT_SETTLE);
	*work = false;
	if (r)
		return ref_fail(fs, r, "commit: bringing changes into the trees (fault point %s)",
				FP_REF_COMMIT_SETTLE);
	while (rw->npending && !r) {
		struct rw_pending_chunk pc = rw->pending[0];
		memmove(rw->pending, rw->pending + 1, (rw->npending - 1) * sizeof(pc));
		rw->npending--;
		r = insert_pending_chunk(fs, &pc);
		*work = true;
	}
	if (r)
		return r;
	if (rw->ndrefs) {
		long n = dref_run(fs);
		if (n < 0)
			return (int)n;
		*work = true;
	}
	for (size_t i = 0; i < rw->nbgs && !r; i++)
		if (rw->bgs[i].dirty && !rw->bgs[i].new_bg) {
			r = update_bg(fs, &rw->bgs[i]);
			*work = true;
		}
	for (size_t i = 0; i < rw->ndevs && !r; i++)
		if (rw->devs[i].dirty) {
			r = update_dev(fs, &rw->devs[i]);
			*work = true;
		}
	for (size_t i = 0; i < rw->ntrees && !r; i++) {
		struct rw_tree *t = rw->trees[i];
		if (t->dirty && t->root.id != BTRFS_ROOT_TREE_OBJECTID &&
		    t->root.id != BTRFS_CHUNK_TREE_OBJECTID) {
			r = update_root_item(fs, t);
			*work = true;
		}
	}
	if (!r)
		r = devstats_settle(fs, work);
	/* Quota groups last: they count the extents whose references the
	 * round's delayed refs changed (qgroup.h). */
	return r ? r : qg_settle(fs, work);
}

static int write_blocks(ref_fs *fs)
{
	struct rw_state *rw = fs->rw;
	for (size_t i = 0; i < rw->ndirty; i++) {
		struct ref_block *b = rw->dirty[i];
		if (MUTANT(DROP_DIRTY) && i == rw->ndirty / 2)
			continue;
		int e = FP_FAIL(FP_REF_COMMIT_WRITE_BLOCKS);
		if (e)
			return ref_fail(fs, e, "commit: writing tree block %llu (fault point %s)",
					(unsigned long long)b->bytenr, FP_REF_COMMIT_WRITE_BLOCKS);
		struct btrfs_header_disk *h = (void *)b->data;
		h->flags = htole64(LE64(h->flags) | BTRFS_HEADER_FLAG_WRITTEN);
		/* The kernel's write-time tree-checker: a leaf whose items its
		 * rules refuse (read unjudged, or carried over from a damaged
		 * image) is not written; the commit fails and the last one
		 * stays the file system, as the kernel aborts the transaction. */
		const char *why = h->level ? NULL : leaf_items_invalid(fs, b->data);
		if (why)
			return ref_fail(fs, EUCLEAN, "commit: write time tree block corruption detected: leaf %llu of tree %llu: %s",
					(unsigned long long)b->bytenr, (unsigned long long)LE64(h->owner), why);
		ref_csum(fs->csum_type, b->data + BTRFS_CSUM_BYTES, fs->nodesize - BTRFS_CSUM_BYTES,
			 h->csum);
		int r = ref_write_logical(fs, b->bytenr, b->data, fs->nodesize);
		if (r)
			return r;
	}
	return 0;
}

static void fill_backup(ref_fs *fs, struct btrfs_super_disk *sb)
{
	int slot = 0;
	for (int i = 0; i < BTRFS_BACKUP_ROOTS; i++)
		if (LE64(sb->super_roots[i].tree_root_gen) == fs->generation)
			slot = (i + 1) % BTRFS_BACKUP_ROOTS;
	struct btrfs_root_backup_disk *bk = &sb->super_roots[slot];
	memset(bk, 0, sizeof(*bk));
	struct ref_root r;
#define SET(name, id)                                                      \
	if (!ref_find_root(fs, id, &r)) {                                  \
		bk->name##_root = htole64(r.bytenr);                       \
		bk->name##_root_gen = htole64(r.gen);                      \
		bk->name##_root_level = r.level;                           \
	}
	SET(tree, BTRFS_ROOT_TREE_OBJECTID);
	SET(chunk, BTRFS_CHUNK_TREE_OBJECTID);
	SET(extent, BTRFS_EXTENT_TREE_OBJECTID);
	SET(fs, BTRFS_FS_TREE_OBJECTID);
	SET(dev, BTRFS_DEV_TREE_OBJECTID);
	SET(csum, BTRFS_CSUM_TREE_OBJECTID);
#undef SET
	bk->total_bytes = sb->total_bytes;
	bk->bytes_used = sb->bytes_used;
	bk->num_devices = sb->num_devices;
}

static int write_supers(ref_fs *fs)
{
	struct rw_state *rw = fs->rw;
	struct btrfs_super_disk *sb = &fs->sb;
	struct rw_tree *root = rw_tree_find(fs, BTRFS_ROOT_TREE_OBJECTID);
	struct rw_tree *chunk = rw_tree_find(fs, BTRFS_CHUNK_TREE_OBJECTID);
	uint64_t used = 0;
	for (size_t i = 0; i < rw->nbgs; i++)
		used += rw->bgs[i].used;
	bool uuid_valid = LE64(sb->uuid_tree_generation) == LE64(sb->generation);
	sb->generation = htole64(rw->transid);
	sb->root = htole64(root->root.bytenr);
	sb->root_level = root->root.level;
	sb->chunk_root = htole64(chunk->root.bytenr);
	sb->chunk_root_level = chunk->root.level;
	sb->chunk_root_generation = htole64(chunk->root.gen);
	sb->bytes_used = htole64(used);
	if (uuid_valid)
		sb->uuid_tree_generation = sb->generation;
	fill_backup(fs, sb);
	for (size_t d = 0; d < fs->ndevs; d++) {
		struct btrfs_super_disk copy = *sb;
		for (size_t i = 0; i < rw->ndevs; i++)
			if (rw->devs[i].devid == fs->devs[d].devid) {
				rw->devs[i].item.bytes_used = htole64(rw->devs[i].bytes_used);
				copy.dev_item = rw->devs[i].item;
			}
		unsigned disk = (unsigned)fs->devs[d].disk;
		for (int m = 0; m < BTRFS_SUPER_MIRRORS; m++) {
			uint64_t off = btrfs_super_offset(m);
			if (off + BTRFS_SUPER_SIZE > sim_disk_size(fs->vol, disk))
				break;
			int e = FP_FAIL(FP_REF_COMMIT_SUPER);
			if (e)
				return ref_fail(
					fs, e,
					"writing superblock %d of device %llu (fault point %s)", m,
					(unsigned long long)fs->devs[d].devid, FP_REF_COMMIT_SUPER);
			copy.bytenr = htole64(off);
			ref_csum(fs->csum_type, (uint8_t *)&copy + BTRFS_CSUM_BYTES,
				 BTRFS_SUPER_SIZE - BTRFS_CSUM_BYTES, copy.csum);
			int r = sim_write(fs->vol, disk, off, &copy, sizeof(copy), SIM_FUA);
			if (r)
				return ref_fail(fs, -r, "writing superblock %d of device %llu: %s", m,
						(unsigned long long)fs->devs[d].devid,
						sim_volume_error(fs->vol));
		}
	}
	return 0;
}

int rw_commit(ref_fs *fs)
{
	int r = rw_check_writable(fs);
	if (r)
		return r;
	struct rw_state *rw = fs->rw;
	/* The cleaner's share of this transaction: a part of a deleted subvolume. */
	if ((r = cleaner_step(fs)) < 0) {
		rw->failed = true;
		return r;
	}
	if (!rw->in_txn)
		return 0;
	bool work = true;
	int rounds = 0;
	while (work && !r && rounds++ < MAX_ROUNDS)
		r = settle_round(fs, &work);
	if (!r && work)
		r = ref_fail(fs, EUCLEAN, "commit: changes still pending after %d rounds", MAX_ROUNDS);
	if (!r && MUTANT(SUPER_FIRST))
		r = write_supers(fs);
	if (!r)
		r = write_blocks(fs);
	for (size_t d = 0; d < fs->ndevs && !r && !MUTANT(SKIP_FLUSH); d++) {
		int e = FP_FAIL(FP_REF_COMMIT_FLUSH);
		if (e) {
			r = ref_fail(fs, e, "flushing device %llu (fault point %s)",
				     (unsigned long long)fs->devs[d].devid, FP_REF_COMMIT_FLUSH);
			break;
		}
		e = sim_flush(fs->vol, (unsigned)fs->devs[d].disk);
		if (e)
			devstats_inc(fs, fs->devs[d].disk, BTRFS_DEV_STAT_FLUSH_ERRS);
		if (e)
			r = ref_fail(fs, -e, "flushing device %llu: %s",
				     (unsigned long long)fs->devs[d].devid, sim_volume_error(fs->vol));
	}
	if (!r && !MUTANT(SUPER_FIRST))
		r = write_supers(fs);
	if (r) {
		rw->failed = true; /* the trees in memory are ahead of any commit now */
		return r;
	}
	/* Durable: the new generation is the file system now. */
	for (size_t i = 0; i < rw->ndirty; i++)
		rw->dirty[i]->dirty = false;
	rw->ndirty = 0;
	fs->generation = rw->transid;
	fs->tree_root = rw_tree_find(fs, BTRFS_ROOT_TREE_OBJECTID)->root;
	fs->chunk_root = rw_tree_find(fs, BTRFS_CHUNK_TREE_OBJECTID)->root;
	rw->transid++;
	rw->in_txn = false;
	rw->commits++;
	rw->op_mark = rw->mods; /* a commit inside an operation's reservation changed nothing of it */
	for (size_t i = 0; i < rw->ntrees; i++)
		rw->trees[i]->dirty = false;
	alloc_unpin_all(fs);
	log_committed(fs);
	qg_committed(fs);
	return 0;
}

int rw_maybe_commit(ref_fs *fs)
{
	if ((uint64_t)fs->rw->ndirty * fs->nodesize >= fs->rw->dirty_limit)
		return rw_commit(fs);
	return 0;
}
