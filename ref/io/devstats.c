/*
 * devstats.c - per-device error counters, as the kernel keeps them: write,
 * read and flush errors of requests, corruption (a checksum or a tree block
 * that is not what its pointer promised) and generation errors, per present
 * device.  They are read from the dev tree's persistent items
 * (BTRFS_DEV_STATS_OBJECTID, PERSISTENT_ITEM, devid) at open and written
 * back by the first commit after they change (the kernel's
 * btrfs_run_dev_stats), so they survive a remount.
 */
#include "ref/rw.h"
#include "ref/vfs.h"

#include <errno.h>

static struct ref_dev *dev_of_disk(ref_fs *fs, int disk)
{
	for (size_t i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].disk == disk)
			return &fs->devs[i];
	return NULL;
}

void devstats_inc(ref_fs *fs, int disk, int which)
{
	struct ref_dev *d = disk >= 0 ? dev_of_disk(fs, disk) : NULL;
	if (!d || which < 0 || which >= BTRFS_DEV_STAT_VALUES_MAX)
		return;
	d->stats[which]++;
	d->stats_dirty = true;
	if (fs->rw && !fs->rw->failed)
		fs->rw->in_txn = true; /* the next commit writes the counter */
}

void devstats_load(ref_fs *fs)
{
	struct ref_root root;
	if (ref_find_root(fs, BTRFS_DEV_TREE_OBJECTID, &root))
		return;
	for (size_t i = 0; i < fs->ndevs; i++) {
		struct ref_path p;
		struct ref_key k = { BTRFS_DEV_STATS_OBJECTID, BTRFS_PERSISTENT_ITEM_KEY, fs->devs[i].devid };
		int r = ref_search(fs, &root, &k, &p);
		if (r < 0) {
			ref_log(fs, "device stats of devid %llu unreadable: %s",
				(unsigned long long)fs->devs[i].devid, fs->err);
			continue;
		}
		if (r)
			continue;
		struct ref_key got;
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &got, &d, &size);
		/* A shorter item (an older kernel's) holds the first counters. */
		if (!ref_key_cmp(&got, &k))
			for (size_t v = 0; v < BTRFS_DEV_STAT_VALUES_MAX && (v + 1) * 8 <= size; v++)
				fs->devs[i].stats[v] = le64(d + v * 8);
		ref_path_release(fs, &p);
	}
}

int devstats_settle(ref_fs *fs, bool *work)
{
	struct rw_tree *dt = NULL;
	for (size_t i = 0; i < fs->ndevs; i++) {
		struct ref_dev *d = &fs->devs[i];
		if (!d->stats_dirty)
			continue;
		int r = dt ? 0 : rw_tree_get(fs, BTRFS_DEV_TREE_OBJECTID, &dt);
		if (r)
			return r;
		struct btrfs_dev_stats_item item;
		for (size_t v = 0; v < BTRFS_DEV_STAT_VALUES_MAX; v++)
			item.values[v] = htole64(d->stats[v]);
		struct ref_key k = { BTRFS_DEV_STATS_OBJECTID, BTRFS_PERSISTENT_ITEM_KEY, d->devid };
		/* Replaced whole, whatever its old size (as update_dev_stat_item). */
		r = bt_delete_key(fs, dt, &k);
		if (r && r != -ENOENT)
			return r;
		if ((r = bt_insert_data(fs, dt, &k, &item, sizeof(item))))
			return r;
		d->stats_dirty = false;
		*work = true;
	}
	return 0;
}

int ref_dev_stats(ref_fs *fs, struct ref_dev_stats *out, size_t max, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < fs->ndevs && *n < max; i++) {
		out[*n].devid = fs->devs[i].devid;
		out[*n].disk = fs->devs[i].disk;
		memcpy(out[*n].values, fs->devs[i].stats, sizeof(out[*n].values));
		(*n)++;
	}
	return 0;
}

int ref_dev_stats_reset(ref_fs *fs)
{
	int r = rw_check_writable(fs);
	if (r)
		return r;
	for (size_t i = 0; i < fs->ndevs; i++) {
		memset(fs->devs[i].stats, 0, sizeof(fs->devs[i].stats));
		fs->devs[i].stats_dirty = true;
	}
	fs->rw->in_txn = true;
	return rw_commit(fs);
}
